/* The lowering's driver and core: each kernel once per specialisation, its names bound through
 * lexical scopes (a symbol per declaration), scalar locals promoted to SSA with an undo log, and
 * the PHIs of structured control.
 *
 * SSA construction. cur[s] is the value symbol s has at the point being lowered and defd[s] the
 * loop depth it was defined at. An assignment logs the old pair. An IF lowers its then block,
 * reads off the symbols the log gained, rolls the log back, does the same for the else block, and
 * emits a PHI_IF for each symbol whose values differ. A read of a symbol defined outside the
 * loops around the point makes (once per loop and symbol) a header PHI in each such loop, whose
 * back edge is filled in when the loop closes; a loop also gets a header PHI for every symbol
 * its log kept. A header PHI whose back edge is itself (or absent) is trivial: it is replaced by
 * its entry value in one rewrite at the end. Breaks, continues and the returns of an inlined
 * helper snapshot the symbols assigned since their loop began, which the LATCH and EXIT PHIs
 * join. Each step is linear in what it lowers (plus the log of an enclosing construct). */
#include "analyzer/ir/lower.h"

#include <stdlib.h>
#include <string.h>

#include "grammar/lex.h"

#include "analyzer/ir/lower_int.h"
#include "analyzer/core/node.h"
#include "grammar/consteval.h"
#include "grammar/dialect.h"

static uint32_t kl_lw_hash(const char *s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h;
}

const char *kl_lw_text(struct kl_lower *L, TSNode n) {
  if (kl_node_null(n)) return "";
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  const char *src = kl_lw_src(L, n);
  if (e < s || (src == L->buf && e > L->u->len)) return "";
  return kl_lex_collapse(L->a, src, s, e);
}

static void kl_lw_sym_room(struct kl_lower *L) {
  uint32_t need = L->f->nsyms + 1;
  if (need <= L->cap_syms) return;
  uint32_t cap = L->cap_syms ? L->cap_syms : 64;
  while (cap < need) cap *= 2;
  L->cur = kl_arena_grow(L->a, L->cur, L->cap_syms, cap, sizeof *L->cur);
  L->defd = kl_arena_grow(L->a, L->defd, L->cap_syms, cap, sizeof *L->defd);
  L->seen = kl_arena_grow(L->a, L->seen, L->cap_syms, cap, sizeof *L->seen);
  L->cap_syms = cap;
}

uint32_t kl_lw_emit(struct kl_lower *L, enum kl_ir_op op, TSNode n, const uint32_t *ops,
                    uint32_t nops) {
  if (L->f->nins >= L->max_ins) {
    L->stop = true;
    L->f->truncated = true;
    L->f->cut_other = true;
    return KL_IR_NONE;
  }
  uint32_t v = kl_ir_emit(L->f, L->blk, op, ops, nops);
  struct kl_ir_ins *i = &L->f->ins[v];
  i->node = kl_lw_at(L, n);
  i->site = L->nframes ? L->frames[L->nframes - 1].site : 0;
  return v;
}

uint32_t kl_lw_const(struct kl_lower *L, TSNode n, int64_t k) {
  uint32_t v = kl_lw_emit(L, KL_IR_CONST, n, NULL, 0);
  if (v) L->f->ins[v].imm = k;
  return v;
}

uint32_t kl_lw_opaque(struct kl_lower *L, TSNode n, const uint32_t *ops, uint32_t nops) {
  uint32_t buf[16], k = 0;
  /* NONE operands (a statement, a failed part) say nothing. */
  for (uint32_t i = 0; i < nops && k < 16; i++)
    if (ops[i]) buf[k++] = ops[i];
  return kl_lw_emit(L, KL_IR_OPAQUE, n, buf, k);
}

/* ---- Names ----------------------------------------------------------------------------------- */

static uint32_t kl_lw_name_slot(struct kl_lower *L, const char *name, uint32_t len) {
  if (2 * (L->nnames + 1) > L->cap_names) {
    uint32_t cap = L->cap_names ? 2 * L->cap_names : 256;
    __typeof__(L->names) t = kl_arena_alloc(L->a, cap * sizeof *t);
    for (uint32_t i = 0; i < L->cap_names; i++) {
      if (!L->names[i].name) continue;
      uint32_t h = kl_lw_hash(L->names[i].name, L->names[i].len) & (cap - 1);
      while (t[h].name) h = (h + 1) & (cap - 1);
      t[h] = L->names[i];
      if (t[h].top >= 0) L->binds[t[h].top].slot = h;
    }
    /* Bindings below the top keep slots of the old table: re-point them all. */
    for (uint32_t b = 0; b < L->nbinds; b++) {
      uint32_t h = kl_lw_hash(L->binds[b].name, L->binds[b].len) & (cap - 1);
      while (t[h].len != L->binds[b].len || memcmp(t[h].name, L->binds[b].name, t[h].len))
        h = (h + 1) & (cap - 1);
      L->binds[b].slot = h;
    }
    L->names = t;
    L->cap_names = cap;
  }
  uint32_t h = kl_lw_hash(name, len) & (L->cap_names - 1);
  while (L->names[h].name) {
    if (L->names[h].len == len && !memcmp(L->names[h].name, name, len)) return h;
    h = (h + 1) & (L->cap_names - 1);
  }
  L->names[h].name = kl_arena_strndup(L->a, name, len);
  L->names[h].len = len;
  L->names[h].top = -1;
  L->nnames++;
  return h;
}

int32_t kl_lw_lookup(struct kl_lower *L, const char *name, uint32_t len) {
  if (!L->cap_names) return -1;
  uint32_t h = kl_lw_hash(name, len) & (L->cap_names - 1);
  while (L->names[h].name) {
    if (L->names[h].len == len && !memcmp(L->names[h].name, name, len)) {
      int32_t b = L->names[h].top;
      /* A promoted field's hidden name (kl_lw_promote_fields) is the object's, in every frame. */
      if (name[0] == '\x01') return b;
      /* A helper sees its own names only: a caller's binding ends the search. A lambda's body
       * sees its parameters, then the names of the frame it is written in (where a helper it
       * was handed to runs it, not the helper's). */
      uint32_t fr = L->nframes - 1;
      for (uint32_t guard = 0; guard <= L->nframes; guard++) {
        while (b >= 0 && L->binds[b].frame > fr) b = L->binds[b].prev;
        if (b >= 0 && L->binds[b].frame == fr) return b;
        if (!fr || !L->frames[fr].lambda || L->frames[fr].home >= fr) return -1;
        fr = L->frames[fr].home;
      }
      return -1;
    }
    h = (h + 1) & (L->cap_names - 1);
  }
  return -1;
}

int32_t kl_lw_bind(struct kl_lower *L, const char *name, uint32_t len, uint8_t kind,
                   const struct kl_var *var) {
  uint32_t slot = kl_lw_name_slot(L, name, len);
  KL_VEC_PUSH(L->a, L->binds, L->nbinds, L->cap_binds);
  struct kl_lbind *b = &L->binds[L->nbinds];
  memset(b, 0, sizeof *b);
  b->name = L->names[slot].name;
  b->len = len;
  b->kind = kind;
  b->frame = L->nframes - 1;
  b->prev = L->names[slot].top;
  b->slot = slot;
  b->var = var;
  uint32_t site = L->frames[L->nframes - 1].site;
  b->sym = kl_ir_sym_new(L->f, b->name, var, site);
  kl_lw_sym_room(L);
  L->cur[b->sym] = KL_IR_NONE;
  L->defd[b->sym] = L->nloops;
  L->seen[b->sym] = 0;
  L->names[slot].top = (int32_t)L->nbinds;
  return (int32_t)L->nbinds++;
}

uint32_t kl_lw_temp(struct kl_lower *L, const char *name) {
  uint32_t sym = kl_ir_sym_new(L->f, name, NULL, L->frames[L->nframes - 1].site);
  kl_lw_sym_room(L);
  L->cur[sym] = KL_IR_NONE;
  L->defd[sym] = L->nloops;
  L->seen[sym] = 0;
  return sym;
}

void kl_lw_scope_pop(struct kl_lower *L, uint32_t nb) {
  while (L->nbinds > nb) {
    struct kl_lbind *b = &L->binds[--L->nbinds];
    L->names[b->slot].top = b->prev;
  }
}

/* ---- SSA ------------------------------------------------------------------------------------- */

static uint32_t kl_lw_repl(struct kl_lower *L, uint32_t v) {
  while (v && v < L->cap_repl && L->repl[v]) v = L->repl[v];
  return v;
}

/* The slot a (loop, symbol) pair hashes to: the product's high bits, since the low bits of
 * loop * odd depend on loop's low bits alone and the pairs of one loop clustered. */
static uint32_t kl_lw_hphi_hash(uint32_t loop, uint32_t sym) {
  return (uint32_t)(((uint64_t)(loop ^ sym * 0x9E3779B1u) * 0x9E3779B97F4A7C15ull) >> 32);
}

static uint32_t *kl_lw_hphi_slot(struct kl_lower *L, uint32_t loop, uint32_t sym, bool add) {
  if (add && 2 * (L->nhphi + 1) > L->cap_hphi) {
    uint32_t cap = L->cap_hphi ? 2 * L->cap_hphi : 256;
    __typeof__(L->hphi) t = kl_arena_alloc(L->a, cap * sizeof *t);
    for (uint32_t i = 0; i < L->cap_hphi; i++) {
      if (!L->hphi[i].loop) continue;
      uint32_t h = kl_lw_hphi_hash(L->hphi[i].loop, L->hphi[i].sym) & (cap - 1);
      while (t[h].loop) h = (h + 1) & (cap - 1);
      t[h] = L->hphi[i];
    }
    L->hphi = t;
    L->cap_hphi = cap;
  }
  if (!L->cap_hphi) return NULL;
  uint32_t h = kl_lw_hphi_hash(loop, sym) & (L->cap_hphi - 1);
  while (L->hphi[h].loop) {
    if (L->hphi[h].loop == loop && L->hphi[h].sym == sym) return &L->hphi[h].phi;
    h = (h + 1) & (L->cap_hphi - 1);
  }
  if (!add) return NULL;
  L->hphi[h].loop = loop;
  L->hphi[h].sym = sym;
  L->hphi[h].phi = 0;
  L->nhphi++;
  return &L->hphi[h].phi;
}

/* The header PHI of symbol sym in loop level k (0-based), made with entry value v if new. */
static uint32_t kl_lw_hphi(struct kl_lower *L, uint32_t k, uint32_t sym, uint32_t v) {
  struct kl_lloop *lp = &L->loops[k];
  uint32_t *slot = kl_lw_hphi_slot(L, lp->ins, sym, true);
  if (*slot) return *slot;
  uint32_t saved = L->blk;
  L->blk = lp->hdr;
  uint32_t ops[2] = {v, KL_IR_NONE};
  uint32_t p = kl_lw_emit(L, KL_IR_PHI, L->f->ins[lp->ins].node, ops, 2);
  L->blk = saved;
  if (!p) return v;
  struct kl_ir_ins *pi = &L->f->ins[p];
  pi->sub = KL_IR_PHI_HEAD;
  pi->ref_ins = lp->ins;
  pi->sym = sym;
  pi->site = L->f->syms[sym].site;
  *kl_lw_hphi_slot(L, lp->ins, sym, true) = p;
  return p;
}

/* The value of sym defined as v at loop depth d, read at loop depth upto. */
static uint32_t kl_lw_read_from(struct kl_lower *L, uint32_t sym, uint32_t v, uint32_t d,
                                uint32_t upto, TSNode n) {
  if (!v) {
    v = kl_lw_emit(L, KL_IR_UNDEF, n, NULL, 0);
    if (v) L->f->ins[v].sym = sym;
    /* A later read of the same point sees the same undefined value. */
    if (d == L->nloops) {
      L->cur[sym] = v;
    }
  }
  for (uint32_t k = d; k < upto; k++) {
    if (L->loops[k].kind != KL_LOOP_REAL || sym >= L->loops[k].nsyms0) continue;
    v = kl_lw_hphi(L, k, sym, v);
  }
  return v;
}

uint32_t kl_lw_read(struct kl_lower *L, uint32_t sym, TSNode n) {
  return kl_lw_read_from(L, sym, L->cur[sym], L->defd[sym], L->nloops, n);
}

void kl_lw_assign(struct kl_lower *L, uint32_t sym, uint32_t v) {
  KL_VEC_PUSH(L->a, L->log, L->nlog, L->cap_log);
  L->log[L->nlog++] = (struct kl_undo_e){sym, L->cur[sym], L->defd[sym]};
  L->cur[sym] = v;
  L->defd[sym] = L->nloops;
  if (v) {
    struct kl_ir_ins *i = &L->f->ins[v];
    if (!i->sym && i->op != KL_IR_ARG && i->op != KL_IR_COORD) {
      i->sym = sym;
    } else if (i->sym != sym && L->f->nalias < 4096) {
      struct kl_ir_fn *f = L->f;
      if (f->nalias == f->cap_alias) {
        uint32_t cap = f->cap_alias ? 2 * f->cap_alias : 16;
        f->alias_val = kl_arena_grow(L->a, f->alias_val, f->cap_alias, cap, sizeof *f->alias_val);
        f->alias_sym = kl_arena_grow(L->a, f->alias_sym, f->cap_alias, cap, sizeof *f->alias_sym);
        f->alias_at = kl_arena_grow(L->a, f->alias_at, f->cap_alias, cap, sizeof *f->alias_at);
        f->cap_alias = cap;
      }
      f->alias_at[f->nalias] = L->assign_at;
      f->alias_val[f->nalias] = v;
      f->alias_sym[f->nalias++] = sym;
    }
  }
}

static void kl_lw_undo(struct kl_lower *L, uint32_t mark) {
  while (L->nlog > mark) {
    struct kl_undo_e *e = &L->log[--L->nlog];
    L->cur[e->sym] = e->old;
    L->defd[e->sym] = e->old_depth;
  }
}

/* The distinct symbols (declared before nsyms0) the log gained since mark, in order. */
static uint32_t *kl_lw_log_syms(struct kl_lower *L, uint32_t mark, uint32_t nsyms0, uint32_t *n) {
  uint32_t st = ++L->stamp, k = 0;
  uint32_t *out = kl_arena_alloc(L->a, (L->nlog - mark + 1) * sizeof *out);
  for (uint32_t i = mark; i < L->nlog; i++) {
    uint32_t s = L->log[i].sym;
    if (s >= nsyms0 || L->seen[s] == st) continue;
    L->seen[s] = st;
    out[k++] = s;
  }
  *n = k;
  return out;
}

struct kl_snap kl_lw_snapshot(struct kl_lower *L, uint32_t mark, uint32_t nsyms0) {
  struct kl_snap sn = {0};
  sn.syms = kl_lw_log_syms(L, mark, nsyms0, &sn.n);
  sn.vals = kl_arena_alloc(L->a, (sn.n + 1) * sizeof *sn.vals);
  for (uint32_t i = 0; i < sn.n; i++) sn.vals[i] = kl_lw_read(L, sn.syms[i], (TSNode){{0}, 0, 0});
  return sn;
}

static bool kl_lw_snap_get(const struct kl_snap *sn, uint32_t sym, uint32_t *v) {
  for (uint32_t i = 0; i < sn->n; i++)
    if (sn->syms[i] == sym) {
      *v = sn->vals[i];
      return true;
    }
  return false;
}

/* ---- IF ------------------------------------------------------------------------------------- */

void kl_lw_if_begin(struct kl_lower *L, struct kl_lif *st, TSNode n, uint32_t c) {
  memset(st, 0, sizeof *st);
  st->outer = L->blk;
  st->ins = kl_lw_emit(L, KL_IR_IF, n, &c, 1);
  st->mark = L->nlog;
  st->nsyms0 = L->f->nsyms;
  st->live0 = L->live;
  if (!st->ins) return;
  uint32_t b = kl_ir_block_new(L->f, st->ins);
  L->f->ins[st->ins].blk[0] = b;
  L->blk = b;
}

void kl_lw_if_else(struct kl_lower *L, struct kl_lif *st) {
  st->live_t = L->live;
  st->tsyms = kl_lw_log_syms(L, st->mark, st->nsyms0, &st->nt);
  st->tvals = kl_arena_alloc(L->a, (st->nt + 1) * sizeof *st->tvals);
  for (uint32_t i = 0; i < st->nt; i++)
    st->tvals[i] = kl_lw_read(L, st->tsyms[i], (TSNode){{0}, 0, 0});
  kl_lw_undo(L, st->mark);
  L->live = st->live0;
  st->has_else = true;
  if (!st->ins) return;
  uint32_t b = kl_ir_block_new(L->f, st->ins);
  L->f->ins[st->ins].blk[1] = b;
  L->blk = b;
}

void kl_lw_if_end(struct kl_lower *L, struct kl_lif *st) {
  if (!st->has_else) {
    kl_lw_if_else(L, st);
    /* No else: its block stays empty (KL_IR_NONE). */
    if (st->ins) {
      L->f->ins[st->ins].blk[1] = KL_IR_NONE;
      L->f->nblocks--;
    }
  }
  bool live_e = L->live;
  uint32_t ne;
  uint32_t *esyms = kl_lw_log_syms(L, st->mark, st->nsyms0, &ne);
  uint32_t *evals = kl_arena_alloc(L->a, (ne + 1) * sizeof *evals);
  for (uint32_t i = 0; i < ne; i++) evals[i] = kl_lw_read(L, esyms[i], (TSNode){{0}, 0, 0});
  kl_lw_undo(L, st->mark);
  L->blk = st->outer;
  L->live = st->live_t || live_e;
  if (!L->live || !st->ins) return;
  /* Symbols a live branch assigned, in then order, then the else block's new ones. */
  if (!st->live_t) st->nt = 0;
  if (!live_e) ne = 0;
  uint32_t total = st->nt + ne, k = 0;
  uint32_t *all = kl_arena_alloc(L->a, (total + 1) * sizeof *all);
  uint32_t stp = ++L->stamp;
  for (uint32_t i = 0; i < st->nt; i++) L->seen[st->tsyms[i]] = stp, all[k++] = st->tsyms[i];
  for (uint32_t i = 0; i < ne; i++)
    if (L->seen[esyms[i]] != stp) all[k++] = esyms[i];
  for (uint32_t i = 0; i < k; i++) {
    uint32_t s = all[i], pre = 0, vt = 0, ve = 0;
    bool tin = false, ein = false;
    for (uint32_t j = 0; j < st->nt; j++)
      if (st->tsyms[j] == s) vt = st->tvals[j], tin = true;
    for (uint32_t j = 0; j < ne; j++)
      if (esyms[j] == s) ve = evals[j], ein = true;
    /* The value before the IF, read (made, if it is undefined) only when a branch keeps it. */
    if ((st->live_t && !tin) || (live_e && !ein)) pre = kl_lw_read(L, s, (TSNode){{0}, 0, 0});
    if (st->live_t && !tin) vt = pre;
    if (live_e && !ein) ve = pre;
    if (!st->live_t) vt = KL_IR_NONE;
    if (!live_e) ve = KL_IR_NONE;
    if (vt && ve && vt == ve) {
      if (vt != L->cur[s]) kl_lw_assign(L, s, vt);
      continue;
    }
    if ((!vt || !ve) && (vt ? vt : ve) == L->cur[s]) continue;
    uint32_t ops[2] = {vt, ve};
    uint32_t p = kl_lw_emit(L, KL_IR_PHI, L->f->ins[st->ins].node, ops, 2);
    if (!p) return;
    L->f->ins[p].sub = KL_IR_PHI_IF;
    L->f->ins[p].ref_ins = st->ins;
    L->f->ins[p].sym = s;
    kl_lw_assign(L, s, p);
  }
}

/* ---- Loops ----------------------------------------------------------------------------------- */

uint32_t kl_lw_loop_begin(struct kl_lower *L, uint8_t kind, TSNode n, uint8_t flags) {
  uint32_t none = KL_IR_NONE;
  uint32_t li = kl_lw_emit(L, KL_IR_LOOP, n, &none, 1);
  KL_VEC_PUSH(L->a, L->loops, L->nloops, L->cap_loops);
  struct kl_lloop *lp = &L->loops[L->nloops];
  memset(lp, 0, sizeof *lp);
  lp->kind = kind;
  lp->ins = li;
  lp->mark = L->nlog;
  lp->nsyms0 = L->f->nsyms;
  lp->depth = L->nloops + 1;
  lp->frame = L->nframes - 1;
  lp->outer = L->blk;
  L->nloops++;
  if (!li) return 0;
  L->f->ins[li].flags |= flags;
  for (int k = 0; k < 3; k++) L->f->ins[li].blk[k] = kl_ir_block_new(L->f, li);
  lp->hdr = L->f->ins[li].blk[0];
  L->blk = lp->hdr;
  return li;
}

void kl_lw_loop_body(struct kl_lower *L) {
  struct kl_lloop *lp = &L->loops[L->nloops - 1];
  lp->body_mark = L->nlog;
  if (lp->ins) L->blk = L->f->ins[lp->ins].blk[1];
}

/* The value sym had on entry to loop level k: the first entry the log gained since. */
static uint32_t kl_lw_entry(struct kl_lower *L, uint32_t k, uint32_t sym) {
  struct kl_lloop *lp = &L->loops[k];
  for (uint32_t i = lp->mark; i < L->nlog; i++)
    if (L->log[i].sym == sym)
      return kl_lw_read_from(L, sym, L->log[i].old, L->log[i].old_depth, k, (TSNode){{0}, 0, 0});
  return kl_lw_read_from(L, sym, L->cur[sym], L->defd[sym] < k ? L->defd[sym] : k, k,
                         (TSNode){{0}, 0, 0});
}

/* The header value of sym in the innermost loop: its header PHI (made now if need be). */
static uint32_t kl_lw_head_value(struct kl_lower *L, uint32_t sym) {
  uint32_t k = L->nloops - 1;
  uint32_t *p = kl_lw_hphi_slot(L, L->loops[k].ins, sym, false);
  if (p && *p) return *p;
  return kl_lw_hphi(L, k, sym, kl_lw_entry(L, k, sym));
}

/* A header PHI for every symbol the innermost loop's log holds, in one pass over it (the first
 * entry of each symbol holds its value on entry). */
static void kl_lw_heads_all(struct kl_lower *L) {
  uint32_t k = L->nloops - 1;
  struct kl_lloop *lp = &L->loops[k];
  if (lp->kind != KL_LOOP_REAL || !lp->ins) return;
  uint32_t st = ++L->stamp;
  for (uint32_t i = lp->mark; i < L->nlog; i++) {
    uint32_t s = L->log[i].sym;
    if (s >= lp->nsyms0 || L->seen[s] == st) continue;
    L->seen[s] = st;
    uint32_t *p = kl_lw_hphi_slot(L, lp->ins, s, false);
    if (p && *p) continue;
    uint32_t e = kl_lw_read_from(L, s, L->log[i].old, L->log[i].old_depth, k, (TSNode){{0}, 0, 0});
    kl_lw_hphi(L, k, s, e);
  }
}

void kl_lw_loop_latch(struct kl_lower *L) {
  kl_lw_heads_all(L);
  struct kl_lloop *lp = &L->loops[L->nloops - 1];
  if (lp->ins) L->blk = L->f->ins[lp->ins].blk[2];
  if (!lp->nconts || !lp->ins) {
    L->live = L->live || lp->nconts;
    return;
  }
  bool live_b = L->live;
  uint32_t nb;
  uint32_t *bs = kl_lw_log_syms(L, lp->body_mark, lp->nsyms0, &nb);
  uint32_t stp = ++L->stamp, k = 0;
  uint32_t total = nb;
  for (uint32_t c = 0; c < lp->nconts; c++) total += lp->conts[c].n;
  uint32_t *all = kl_arena_alloc(L->a, (total + 1) * sizeof *all);
  for (uint32_t i = 0; i < nb; i++) L->seen[bs[i]] = stp, all[k++] = bs[i];
  for (uint32_t c = 0; c < lp->nconts; c++)
    for (uint32_t i = 0; i < lp->conts[c].n; i++) {
      uint32_t s = lp->conts[c].syms[i];
      if (L->seen[s] != stp) L->seen[s] = stp, all[k++] = s;
    }
  uint32_t *ops = kl_arena_alloc(L->a, (lp->nconts + 2) * sizeof *ops);
  for (uint32_t i = 0; i < k; i++) {
    uint32_t s = all[i], head = 0;
    ops[0] = live_b ? kl_lw_read(L, s, (TSNode){{0}, 0, 0}) : KL_IR_NONE;
    bool same = true;
    for (uint32_t c = 0; c < lp->nconts; c++) {
      uint32_t v;
      if (!kl_lw_snap_get(&lp->conts[c], s, &v)) {
        if (!head) head = kl_lw_head_value(L, s);
        v = head;
      }
      ops[c + 1] = v;
    }
    uint32_t first = 0;
    for (uint32_t c = 0; c <= lp->nconts; c++) {
      if (!ops[c]) continue;
      if (!first)
        first = ops[c];
      else if (ops[c] != first)
        same = false;
    }
    if (same) {
      if (first && first != kl_lw_read(L, s, (TSNode){{0}, 0, 0})) kl_lw_assign(L, s, first);
      continue;
    }
    uint32_t p = kl_lw_emit(L, KL_IR_PHI, L->f->ins[lp->ins].node, ops, lp->nconts + 1);
    if (!p) break;
    L->f->ins[p].sub = KL_IR_PHI_LATCH;
    L->f->ins[p].ref_ins = lp->ins;
    L->f->ins[p].sym = s;
    kl_lw_assign(L, s, p);
  }
  L->live = true;
}

void kl_lw_loop_end(struct kl_lower *L, uint32_t cond, bool has_cond) {
  struct kl_lloop *lp = &L->loops[L->nloops - 1];
  bool latch_live = L->live;
  bool dw = lp->ins && (L->f->ins[lp->ins].flags & KL_IR_F_DO_WHILE);
  if (lp->ins) kl_ir_set_ops(L->f, lp->ins, &cond, 1);
  /* Every symbol the loop kept an assignment of gets a header PHI. */
  kl_lw_heads_all(L);
  /* Back edges, and the trivial header PHIs. */
  uint32_t nh = 0;
  uint32_t *hs = NULL, *hp = NULL, *latch_end = NULL;
  if (lp->ins && lp->kind == KL_LOOP_REAL) {
    struct kl_ir_block *hb = &L->f->blocks[lp->hdr];
    hs = kl_arena_alloc(L->a, (hb->n + 1) * sizeof *hs);
    hp = kl_arena_alloc(L->a, (hb->n + 1) * sizeof *hp);
    latch_end = kl_arena_alloc(L->a, (hb->n + 1) * sizeof *latch_end);
    for (uint32_t i = 0; i < hb->n; i++) {
      uint32_t p = hb->ins[i];
      struct kl_ir_ins *pi = &L->f->ins[p];
      if (pi->op != KL_IR_PHI || pi->sub != KL_IR_PHI_HEAD || pi->ref_ins != lp->ins) continue;
      uint32_t back = latch_live ? kl_lw_read(L, pi->sym, (TSNode){{0}, 0, 0}) : KL_IR_NONE;
      pi = &L->f->ins[p];
      uint32_t ops[2] = {pi->ops[0], back};
      kl_ir_set_ops(L->f, p, ops, 2);
      hs[nh] = pi->sym;
      hp[nh] = p;
      latch_end[nh++] = back;
    }
    /* PHIs first in the header (some were made after the condition); trivial ones leave. */
    uint32_t w = 0;
    uint32_t *rest = kl_arena_alloc(L->a, (hb->n + 1) * sizeof *rest);
    uint32_t nr = 0;
    for (uint32_t i = 0; i < hb->n; i++) {
      uint32_t p = hb->ins[i];
      struct kl_ir_ins *pi = &L->f->ins[p];
      bool head = pi->op == KL_IR_PHI && pi->sub == KL_IR_PHI_HEAD && pi->ref_ins == lp->ins;
      if (!head) {
        rest[nr++] = p;
        continue;
      }
      uint32_t back = kl_lw_repl(L, pi->ops[1]);
      if (!back || back == p) {
        if (p >= L->cap_repl) {
          uint32_t cap = L->cap_repl ? L->cap_repl : 1024;
          while (cap <= p) cap *= 2;
          L->repl = kl_arena_grow(L->a, L->repl, L->cap_repl, cap, sizeof *L->repl);
          L->cap_repl = cap;
        }
        L->repl[p] = pi->ops[0] != p ? pi->ops[0] : KL_IR_NONE;
        pi->op = KL_IR_NOP;
        continue;
      }
      hb->ins[w++] = p;
    }
    for (uint32_t i = 0; i < nr; i++) hb->ins[w++] = rest[i];
    hb->n = w;
  }
  /* Exits. */
  kl_lw_undo(L, lp->mark);
  L->nloops--;
  L->blk = lp->outer;
  bool cond_exit = has_cond && (!dw || latch_live);
  L->live = cond_exit || lp->nbreaks > 0;
  if (!L->live || !lp->ins) return;
  uint32_t stp = ++L->stamp, n = 0, total = nh;
  for (uint32_t b = 0; b < lp->nbreaks; b++) total += lp->breaks[b].n;
  uint32_t *all = kl_arena_alloc(L->a, (total + 1) * sizeof *all);
  for (uint32_t i = 0; i < nh; i++)
    if (L->seen[hs[i]] != stp) L->seen[hs[i]] = stp, all[n++] = hs[i];
  for (uint32_t b = 0; b < lp->nbreaks; b++)
    for (uint32_t i = 0; i < lp->breaks[b].n; i++) {
      uint32_t s = lp->breaks[b].syms[i];
      if (L->seen[s] != stp) L->seen[s] = stp, all[n++] = s;
    }
  uint32_t *ops = kl_arena_alloc(L->a, (lp->nbreaks + 2) * sizeof *ops);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t s = all[i], head = 0, lend = 0;
    for (uint32_t j = 0; j < nh; j++)
      if (hs[j] == s) head = kl_lw_repl(L, hp[j]), lend = latch_end[j];
    bool need = (cond_exit && ((dw && !lend) || (!dw && !head)));
    for (uint32_t b = 0; b < lp->nbreaks && !need; b++)
      need = !head && !kl_lw_snap_get(&lp->breaks[b], s, &ops[0]);
    /* The value before the loop, read only where an exit keeps it. */
    uint32_t pre = need ? kl_lw_read(L, s, (TSNode){{0}, 0, 0}) : L->cur[s];
    if (!head) head = pre;
    if (!lend) lend = pre;
    ops[0] = !cond_exit ? KL_IR_NONE : dw ? lend : head;
    for (uint32_t b = 0; b < lp->nbreaks; b++) {
      uint32_t v;
      ops[b + 1] = kl_lw_snap_get(&lp->breaks[b], s, &v) ? v : head;
    }
    uint32_t first = 0;
    bool same = true;
    for (uint32_t b = 0; b <= lp->nbreaks; b++) {
      uint32_t v = kl_lw_repl(L, ops[b]);
      if (!v) continue;
      if (!first)
        first = v;
      else if (v != first)
        same = false;
    }
    if (same) {
      if (first && first != L->cur[s]) kl_lw_assign(L, s, first);
      continue;
    }
    uint32_t p = kl_lw_emit(L, KL_IR_PHI, L->f->ins[lp->ins].node, ops, lp->nbreaks + 1);
    if (!p) return;
    L->f->ins[p].sub = KL_IR_PHI_EXIT;
    L->f->ins[p].ref_ins = lp->ins;
    L->f->ins[p].sym = s;
    kl_lw_assign(L, s, p);
  }
}

/* The innermost loop of the kind (a real one for break/continue, a region for return), or -1. */
static int32_t kl_lw_loop_of(struct kl_lower *L, uint8_t kind) {
  for (uint32_t k = L->nloops; k-- > 0;) {
    if (L->loops[k].kind == kind) return (int32_t)k;
    /* A helper's loops and its caller's are apart. */
    if (L->loops[k].kind == KL_LOOP_REGION) return -1;
  }
  return -1;
}

bool kl_lw_jump(struct kl_lower *L, TSNode n, enum kl_ir_op op) {
  int32_t k = kl_lw_loop_of(L, op == KL_IR_RETURN ? KL_LOOP_REGION : KL_LOOP_REAL);
  if (k < 0) return false;
  struct kl_lloop *lp = &L->loops[k];
  struct kl_snap sn = kl_lw_snapshot(L, lp->mark, lp->nsyms0);
  if (op == KL_IR_CONTINUE) {
    KL_VEC_PUSH(L->a, lp->conts, lp->nconts, lp->cap_conts);
    lp->conts[lp->nconts++] = sn;
  } else {
    KL_VEC_PUSH(L->a, lp->breaks, lp->nbreaks, lp->cap_breaks);
    lp->breaks[lp->nbreaks++] = sn;
  }
  (void)n;
  return true;
}

/* ---- Constants ------------------------------------------------------------------------------ */

static const char *kl_lw_member_text(struct kl_lower *L, const struct kl_function *fn,
                                     const char *name, size_t len) {
  if (!fn || !fn->owner || kl_node_null(fn->owner_body)) return NULL;
  TSNode mc = kl_model_member_const(L->m, fn, name, len);
  return kl_node_null(mc) ? NULL : kl_lw_text(L, mc);
}

/* The value specialisation sp gives name[0, len), or NULL. */
static const char *kl_lw_spec_text(const struct kl_spec *sp, const char *name, size_t len) {
  for (size_t i = 0; i < sp->n; i++)
    if (strlen(sp->b[i].name) == len && !memcmp(sp->b[i].name, name, len)) return sp->b[i].text;
  return NULL;
}

/* Note that the lowering asked its specialisation for name[0, len) and got v: the lowering of
 * another specialisation that answers every name asked alike takes the same course. */
static void kl_lw_asked(struct kl_lower *L, const char *name, size_t len, const char *v) {
  if (!L->ask_a) return;
  for (uint32_t i = 0; i < L->nask; i++)
    if (!strncmp(L->ask[i].name, name, len) && !L->ask[i].name[len]) return;
  KL_VEC_PUSH(L->ask_a, L->ask, L->nask, L->cap_ask);
  L->ask[L->nask++] = (struct kl_spec_bind){kl_arena_strndup(L->ask_a, name, len), v};
}

/* What a name stands for outside the function: the frame's macros and template arguments, the
 * specialisation, its struct's constants, the file's constants. */
const char *kl_lw_lookup_text(void *ctx, const char *name, size_t len) {
  struct kl_lower *L = ctx;
  const struct kl_lframe *fr = &L->frames[L->nframes - 1];
  for (size_t i = fr->nmacros; i-- > 0;)
    if (strlen(fr->macros[i].name) == len && !memcmp(fr->macros[i].name, name, len))
      return fr->macros[i].text;
  for (size_t i = 0; i < fr->ntb; i++)
    if (fr->tb[i].name && strlen(fr->tb[i].name) == len && !memcmp(fr->tb[i].name, name, len))
      return fr->tb[i].text;
  if (L->spec) {
    const char *v = kl_lw_spec_text(L->spec, name, len);
    kl_lw_asked(L, name, len, v);
    if (v) return v;
  }
  const char *t = kl_lw_member_text(L, fr->fn, name, len);
  if (t) return t;
  return kl_model_const(L->m, name, len);
}

bool kl_lw_file_name(struct kl_lower *L, const char *name, size_t len) {
  const struct kl_lframe *fr = &L->frames[L->nframes - 1];
  if (fr->self.v || kl_lw_lookup(L, name, (uint32_t)len) >= 0) return false;
  for (size_t i = 0; i < fr->nmacros; i++)
    if (strlen(fr->macros[i].name) == len && !memcmp(fr->macros[i].name, name, len)) return false;
  for (size_t i = 0; i < fr->ntb; i++)
    if (fr->tb[i].name && strlen(fr->tb[i].name) == len && !memcmp(fr->tb[i].name, name, len))
      return false;
  return !kl_lw_member_text(L, fr->fn, name, len);
}

bool kl_lw_fold_text(struct kl_lower *L, const char *text, size_t len, int64_t *v) {
  struct kl_consteval_env env = {kl_lw_lookup_text, NULL, NULL, L, false};
  return kl_consteval_eval(text, len, &env, v);
}

/* A name at file scope: the file's constants only. */
static const char *kl_lw_lookup_file(void *ctx, const char *name, size_t len) {
  struct kl_lower *L = ctx;
  return kl_model_const(L->m, name, len);
}

bool kl_lw_fold_file_text(struct kl_lower *L, const char *text, size_t len, int64_t *v) {
  struct kl_consteval_env env = {kl_lw_lookup_file, NULL, NULL, L, false};
  return kl_consteval_eval(text, len, &env, v);
}

bool kl_lw_fold_name(struct kl_lower *L, const char *name, size_t len, int64_t *v) {
  const char *t = kl_lw_lookup_text(L, name, len);
  if (!t) return false;
  return kl_lw_fold_text(L, name, len, v);
}

uint32_t kl_lw_type_size(const char *type) {
  const struct kl_msl_type *t = kl_msl_type(type);
  if (t) return t->size;
  static const struct {
    const char *n;
    uint32_t s;
  } extra[] = {{"int32_t", 4},      {"uint32_t", 4}, {"int16_t", 2},      {"uint16_t", 2},
               {"int8_t", 1},       {"uint8_t", 1},  {"int64_t", 8},      {"uint64_t", 8},
               {"size_t", 8},       {"unsigned", 4}, {"unsigned int", 4}, {"signed char", 1},
               {"unsigned char", 1}};
  for (size_t i = 0; type && i < sizeof extra / sizeof extra[0]; i++)
    if (!strcmp(type, extra[i].n)) return extra[i].s;
  return 0;
}

/* ---- Names in memory --------------------------------------------------------------------------
 */

static void kl_lw_mem_add(struct kl_lower *L, const char *name, uint32_t len) {
  if (kl_lw_is_mem_name(L, name, len)) return;
  KL_VEC_PUSH(L->a, L->memnames, L->nmem, L->cap_mem);
  L->memnames[L->nmem].name = name;
  L->memnames[L->nmem++].len = len;
}

bool kl_lw_is_mem_name(struct kl_lower *L, const char *name, uint32_t len) {
  for (uint32_t i = 0; i < L->nmem; i++)
    if (L->memnames[i].len == len && !memcmp(L->memnames[i].name, name, len)) return true;
  return false;
}

static void kl_lw_use_name(struct kl_lower *L, const char *name, uint32_t len) {
  for (uint32_t i = 0; i < L->nused; i++)
    if (L->used[i].len == len && !memcmp(L->used[i].name, name, len)) return;
  KL_VEC_PUSH(L->a, L->used, L->nused, L->cap_used);
  L->used[L->nused].name = name;
  L->used[L->nused++].len = len;
}

bool kl_lw_is_used_as_object(struct kl_lower *L, const char *name, uint32_t len) {
  for (uint32_t i = 0; i < L->nused; i++)
    if (L->used[i].len == len && !memcmp(L->used[i].name, name, len)) return true;
  return false;
}

/* One function's scan: the names it met, in the order met, each marked used (`x[i]`, `x.f`) or
 * in memory (`&x`). */
struct kl_lw_scanned {
  struct kl_lw_name {
    const char *name;
    uint32_t len;
    bool mem;
  } * names;
  uint32_t n, cap;
};

/* What lasts over a unit's lowerings: its arena, the scans by function, the early returns. */
struct kl_lw_keep {
  struct kl_arena *a;
  struct kl_node_map scans; /* (body, function) -> struct kl_lw_scanned */
  struct kl_node_map early; /* (body, function) -> the answer, as keep (yes) or NULL (no) */
  struct kl_lw_mcache mc;   /* the macro bodies parsed */
  struct kl_lw_protos protos; /* the unit's prototypes: its top level is read once */
};

struct kl_lw_protos *kl_lw_protos_of(struct kl_lower *L, struct kl_arena **a) {
  *a = L->keep ? L->keep->a : L->a;
  return L->keep ? &L->keep->protos : &L->own_protos;
}

bool kl_lw_early_kept(struct kl_lower *L, const struct kl_function *fn, bool *early) {
  const void *v;
  if (!L->keep || !kl_node_map_get(&L->keep->early, fn->body, fn, &v)) return false;
  *early = v == L->keep;
  return true;
}

void kl_lw_early_keep(struct kl_lower *L, const struct kl_function *fn, bool early) {
  if (L->keep) kl_node_map_put(L->keep->a, &L->keep->early, fn->body, fn, early ? L->keep : NULL);
}

/* The names fn's body takes the address of (`&x`), indexes or reads fields of (`x[i]`, `x.f`: an
 * object of a type the lowering does not know is in memory), in preorder (a cursor walk). */
static void kl_lw_scan_body(struct kl_lower *L, const struct kl_function *fn,
                            struct kl_lw_scanned *out) {
  TSTreeCursor c = ts_tree_cursor_new(fn->body);
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&c);
    struct kl_lw_name got = {NULL, 0, false};
    if (kl_node_is_kind(n, KL_KIND_SUBSCRIPT_EXPRESSION) ||
        kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION)) {
      TSNode arg = kl_lw_unparen(kl_node_field(n, "argument"));
      if (kl_node_is_kind(arg, KL_KIND_IDENTIFIER)) {
        uint32_t s = ts_node_start_byte(arg), e = ts_node_end_byte(arg);
        got = (struct kl_lw_name){L->buf + s, e - s, false};
      }
    } else if (kl_node_is_kind(n, KL_KIND_POINTER_EXPRESSION)) {
      TSNode op = ts_node_child(n, 0);
      TSNode arg = kl_lw_unparen(kl_node_field(n, "argument"));
      if (!kl_node_null(op) && ts_node_end_byte(op) - ts_node_start_byte(op) == 1 &&
          L->buf[ts_node_start_byte(op)] == '&' && kl_node_is_kind(arg, KL_KIND_IDENTIFIER)) {
        uint32_t s = ts_node_start_byte(arg), e = ts_node_end_byte(arg);
        got = (struct kl_lw_name){L->buf + s, e - s, true};
      }
    }
    if (got.name) {
      KL_VEC_PUSH(L->keep ? L->keep->a : L->a, out->names, out->n, out->cap);
      out->names[out->n++] = got;
    }
    if (ts_tree_cursor_goto_first_child(&c)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&c))
      if (!ts_tree_cursor_goto_parent(&c)) goto done;
  }
done:
  ts_tree_cursor_delete(&c);
}

/* Names whose address the body takes, and names used as objects, once per function and
 * lowering; the body is walked once per unit where the lowering keeps its scans. */
void kl_lw_scan_mem(struct kl_lower *L, const struct kl_function *fn) {
  for (uint32_t i = 0; i < L->nscanned; i++)
    if (L->scanned[i] == fn) return;
  KL_VEC_PUSH(L->a, L->scanned, L->nscanned, L->cap_scanned);
  L->scanned[L->nscanned++] = fn;
  if (kl_node_null(fn->body)) return;
  const void *v = NULL;
  const struct kl_lw_scanned *sc;
  if (L->keep && kl_node_map_get(&L->keep->scans, fn->body, fn, &v)) {
    sc = v;
  } else {
    struct kl_lw_scanned *fresh = kl_arena_alloc(L->keep ? L->keep->a : L->a, sizeof *fresh);
    memset(fresh, 0, sizeof *fresh);
    kl_lw_scan_body(L, fn, fresh);
    if (L->keep) kl_node_map_put(L->keep->a, &L->keep->scans, fn->body, fn, fresh);
    sc = fresh;
  }
  for (uint32_t i = 0; i < sc->n; i++) {
    if (sc->names[i].mem)
      kl_lw_mem_add(L, sc->names[i].name, sc->names[i].len);
    else
      kl_lw_use_name(L, sc->names[i].name, sc->names[i].len);
  }
}

/* ---- The driver ------------------------------------------------------------------------------ */

/* Replace the trivial PHIs' uses, and drop PHIs that became trivial by it. */
static void kl_lw_rewrite(struct kl_lower *L) {
  struct kl_ir_fn *f = L->f;
  if (!L->cap_repl) return;
  for (uint32_t v = 1; v < f->nins; v++) {
    struct kl_ir_ins *i = &f->ins[v];
    for (uint32_t k = 0; k < i->nops; k++) i->ops[k] = kl_lw_repl(L, i->ops[k]);
  }
}

static void kl_lw_params(struct kl_lower *L, const struct kl_function *fn) {
  for (size_t i = 0; i < fn->nparams; i++) {
    const struct kl_var *p = &fn->params[i];
    if (!p->name) continue;
    TSNode n = p->node;
    uint32_t len = (uint32_t)strlen(p->name);
    if (p->coord) {
      const struct kl_msl_type *t = kl_msl_type(p->type);
      bool vec = t && t->kind == KL_TYPE_VECTOR;
      int32_t b = kl_lw_bind(L, p->name, len, vec ? KL_LB_COORD : KL_LB_VALUE, p);
      for (unsigned k = 0; k < (vec ? 3u : 1u); k++) {
        uint32_t c = kl_lw_emit(L, KL_IR_COORD, n, NULL, 0);
        if (!c) return;
        L->f->ins[c].coord = p->coord;
        L->f->ins[c].imm = k;
        L->f->ins[c].type = vec ? t->scalar : p->type;
        if (vec) L->f->ins[c].name = k == 0 ? "x" : k == 1 ? "y" : "z";
        L->binds[b].comp[k] = c;
        if (!vec) {
          L->f->ins[c].sym = L->binds[b].sym;
          kl_lw_assign(L, L->binds[b].sym, c);
        }
      }
      continue;
    }
    uint32_t a = kl_lw_emit(L, KL_IR_ARG, n, NULL, 0);
    if (!a) return;
    struct kl_ir_ins *ai = &L->f->ins[a];
    ai->var = p;
    ai->type = p->type;
    ai->as = (uint8_t)(p->as ? p->as : (p->is_pointer || p->array_dims ? KL_AS_DEVICE : 0));
    const struct kl_msl_type *t = kl_msl_type(p->type);
    bool scalar = t && t->kind == KL_TYPE_SCALAR;
    if (p->is_pointer || p->array_dims) {
      int32_t b = kl_lw_bind(L, p->name, len, KL_LB_VALUE, p);
      struct kl_lbind *bb = &L->binds[b];
      bb->mem = (struct kl_rv){
          .v = a, .ptr = true, .as = ai->as, .esize = kl_lw_type_size(p->type), .etype = p->type};
      ai->sym = bb->sym;
      kl_lw_assign(L, bb->sym, a);
    } else if (p->is_reference && !scalar) {
      /* `constant Params &p`: a struct in memory, read through its fields. */
      int32_t b = kl_lw_bind(L, p->name, len, KL_LB_MEM, p);
      L->binds[b].mem = (struct kl_rv){
          .v = a, .ptr = true, .as = ai->as ? ai->as : KL_AS_CONSTANT, .etype = p->type};
      ai->sym = L->binds[b].sym;
    } else {
      int32_t b = kl_lw_bind(L, p->name, len, KL_LB_VALUE, p);
      L->binds[b].mem.etype = p->type;
      ai->sym = L->binds[b].sym;
      kl_lw_assign(L, L->binds[b].sym, a);
    }
  }
}

static struct kl_ir_fn *kl_lw_kernel(struct kl_lower *L, const struct kl_function *fn,
                                     const struct kl_spec *sp) {
  L->spec = sp;
  L->f = kl_ir_fn_new(L->a, fn, sp ? sp->label : NULL);
  if (sp) L->f->hosts = sp->hosts, L->f->nhosts = sp->nhosts;
  uint64_t left = L->unit_ins < KL_LOWER_UNIT_INS ? KL_LOWER_UNIT_INS - L->unit_ins : 0;
  L->max_ins = left < KL_LOWER_MAX_INS ? (uint32_t)left + 1 : KL_LOWER_MAX_INS;
  L->blk = L->f->body;
  L->live = true;
  L->stop = false;
  L->nest = 0;
  L->nbinds = 0;
  L->nnames = 0;
  L->cap_names = 0;
  L->names = NULL;
  L->cap_syms = 0;
  L->nlog = 0;
  L->nloops = 0;
  L->cap_hphi = L->nhphi = 0;
  L->hphi = NULL;
  L->cap_repl = 0;
  L->repl = NULL;
  L->nframes = 0;
  L->ntgdecls = 0;
  L->npromoted = 0;
  L->nobjtb = 0;
  L->assign_at = (TSNode){{0}, NULL, NULL};
  /* What the scans found is the same for every specialisation of one kernel. */
  if (L->scanned_for != fn) {
    L->nmem = 0;
    L->nused = 0;
    L->nscanned = 0;
    L->scanned_for = fn;
  }
  kl_lw_sym_room(L);
  KL_VEC_PUSH(L->a, L->frames, L->nframes, L->cap_frames);
  memset(&L->frames[0], 0, sizeof L->frames[0]);
  L->frames[0].fn = fn;
  L->nframes = 1;
  kl_lw_scan_mem(L, fn);
  kl_lw_params(L, fn);
  L->entry_n = L->f->blocks[L->f->body].n;
  struct kl_lw_mcache own = {L->a, NULL, 0, 0, NULL};
  L->mc = L->keep ? &L->keep->mc : &own;
  L->nmx = 0;
  kl_lw_stmt(L, fn->body);
  kl_lw_rewrite(L);
  kl_ir_fn_fit(L->f);
  if (L->mc == &own) kl_lw_macro_free(&own);
  L->mc = NULL;
  L->unit_ins += L->f->nins;
  return L->f;
}

void kl_ir_lower(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                 size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                 const struct kl_settings *s, struct kl_ir_module *out) {
  memset(out, 0, sizeof *out);
  struct kl_lower *L = kl_arena_alloc(a, sizeof *L);
  L->a = a;
  L->m = m;
  L->u = m->unit;
  L->buf = m->unit->buf;
  L->s = s;
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *fn = &m->functions[i];
    if (!fn->is_kernel || kl_node_null(fn->body)) continue;
    struct kl_spec *sp = NULL;
    size_t n = kl_spec_enumerate(a, m, fn, calls, ncalls, xinsts, nxinsts, &sp);
    for (size_t k = 0; k < n; k++) {
      struct kl_ir_fn *f = kl_lw_kernel(L, fn, sp[k].label ? &sp[k] : NULL);
      KL_VEC_PUSH(a, out->fns, out->nfns, out->cap_fns);
      out->fns[out->nfns++] = f;
    }
  }
}

void kl_ir_lower_each(const struct kl_model *m, const struct kl_dispatch *calls, size_t ncalls,
                      const struct kl_inst *xinsts, size_t nxinsts,
                      const struct kl_settings *s, kl_ir_lower_fn each, void *ctx) {
  kl_ir_lower_some(m, calls, ncalls, xinsts, nxinsts, s, NULL, each, NULL, ctx);
}

/* A lowering of one specialisation of the kernel being lowered: what it asked of it, its
 * instructions, whether a cap cut it. */
struct kl_lw_done {
  const struct kl_spec_bind *ask;
  uint32_t nask, nins;
  bool cut;
};

/* The earlier lowering of the kernel, done[0, n), that specialisation sp would repeat with
 * room for max_ins instructions: every name it asked sp answers alike; its place from 1, or
 * 0 for none. */
static uint32_t kl_lw_repeats(const struct kl_lw_done *done, size_t n, const struct kl_spec *sp,
                              uint32_t max_ins) {
  for (size_t k = 0; k < n; k++) {
    const struct kl_lw_done *d = &done[k];
    if (d->cut || d->nins > max_ins) continue;
    bool same = true;
    for (uint32_t i = 0; i < d->nask && same; i++) {
      const char *v = kl_lw_spec_text(sp, d->ask[i].name, strlen(d->ask[i].name));
      same = v && d->ask[i].text ? !strcmp(v, d->ask[i].text) : v == d->ask[i].text;
    }
    if (same) return (uint32_t)k + 1;
  }
  return 0;
}

bool kl_ir_lower_full_room(uint64_t unit_ins) {
  return unit_ins <= KL_LOWER_UNIT_INS && KL_LOWER_UNIT_INS - unit_ins >= KL_LOWER_MAX_INS;
}

uint64_t kl_ir_lower_some(const struct kl_model *m, const struct kl_dispatch *calls,
                          size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                          const struct kl_settings *s, kl_ir_lower_skip skip, kl_ir_lower_fn each,
                          kl_ir_lower_again_fn again, void *ctx) {
  uint64_t unit_ins = 0;
  struct kl_arena *ka = kl_arena_new();
  struct kl_lw_keep *keep = kl_arena_alloc(ka, sizeof *keep);
  memset(keep, 0, sizeof *keep);
  keep->a = ka;
  keep->mc.a = ka;
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *fn = &m->functions[i];
    if (!fn->is_kernel || kl_node_null(fn->body)) continue;
    uint64_t skipped = 0;
    if (skip && skip(ctx, fn, unit_ins, &skipped)) {
      unit_ins += skipped;
      continue;
    }
    struct kl_arena *specs = kl_arena_new();
    struct kl_spec *sp = NULL;
    size_t n = kl_spec_enumerate(specs, m, fn, calls, ncalls, xinsts, nxinsts, &sp);
    /* The lowering is the same function of what it asks of the specialisation: one that
     * would answer an earlier lowering's every question alike is offered as a repeat. */
    struct kl_lw_done *done = again && n > 1 ? kl_arena_alloc(specs, n * sizeof *done) : NULL;
    for (size_t k = 0; k < n; k++) {
      /* Each specialisation in an arena of its own, freed once it has been handed over: a
       * unit's IR never lives whole, so memory is that of its largest specialisation. */
      struct kl_arena *scratch = kl_arena_new();
      const struct kl_spec *spk = sp[k].label ? &sp[k] : NULL;
      uint64_t left = unit_ins < KL_LOWER_UNIT_INS ? KL_LOWER_UNIT_INS - unit_ins : 0;
      uint32_t room = left < KL_LOWER_MAX_INS ? (uint32_t)left + 1 : KL_LOWER_MAX_INS;
      uint32_t of = done && spk ? kl_lw_repeats(done, k, spk, room) : 0;
      if (of) {
        struct kl_ir_fn *f = kl_ir_fn_new(scratch, fn, spk->label);
        f->hosts = spk->hosts, f->nhosts = spk->nhosts;
        if (again(ctx, f, of)) {
          unit_ins += done[of - 1].nins;
          done[k] = (struct kl_lw_done){NULL, 0, 0, true};
          kl_arena_delete(scratch);
          continue;
        }
      }
      struct kl_lower *L = kl_arena_alloc(scratch, sizeof *L);
      L->a = scratch;
      L->m = m;
      L->u = m->unit;
      L->buf = m->unit->buf;
      L->s = s;
      L->unit_ins = unit_ins;
      L->keep = keep;
      L->ask_a = done ? specs : NULL;
      struct kl_ir_fn *f = kl_lw_kernel(L, fn, spk);
      if (done) done[k] = (struct kl_lw_done){L->ask, L->nask, f->nins, f->truncated || !spk};
      each(ctx, f);
      unit_ins = L->unit_ins;
      kl_arena_delete(scratch);
    }
    kl_arena_delete(specs);
  }
  kl_node_map_free(&keep->scans);
  kl_node_map_free(&keep->early);
  kl_lw_macro_free(&keep->mc);
  kl_arena_delete(ka);
  return unit_ins;
}
