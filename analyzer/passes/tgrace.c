/* Threadgroup races over the IR (see tgrace.h). */
#include "analyzer/passes/tgrace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/passes/loopexit.h"
#include "analyzer/passes/ranges.h"

/* Open accesses kept per path: enough to find a race; more only costs. Conditions an access
 * keeps: the innermost. Derived coordinates per function. Values visited to say how a stored
 * value varies (past them it is taken to vary). */
enum {
  KL_TG_OPEN = 128,
  KL_TG_DER = 256,
  KL_TG_DEPTH = 24,
  KL_TG_TWICE = 8,
  KL_TG_SUBS = 8,
  KL_TG_STEPS = 64
};

struct kl_tg_open {
  uint32_t acc;   /* index into accs */
  uint32_t cross; /* the LOOP whose back edge it came round, 0 */
  uint32_t leave; /* the LOOP whose test for its next trip fails on the way here, 0 */
  uint32_t fence;
  bool simd;
};

struct kl_tg_set {
  struct kl_tg_open *e;
  uint32_t n, cap;
};

struct kl_tg_acc {
  uint32_t ins;
  uint32_t key; /* the array: its ALLOC or ARG, with the struct fields on the way hashed in */
  uint8_t scope; /* a store: how alike the threads' values are (enum kl_scope; a compound
                    store's THREAD, as it reads the element first) */
  bool matrix;   /* a SIMD-group matrix load or store, which the lanes of a group make at once */
  struct kl_race_side side;
  /* The bytes one unit of a flat index is (0: not known), and how many units the access
   * covers: 1 but through a pointer cast (`*(threadgroup float4*)&tg[4 * lid]`: 4 floats). */
  uint32_t unit, width;
  uint32_t index; /* a ranged access's index value */
};

struct kl_tg_frame {
  uint32_t loop;
  bool region;
  struct kl_tg_set brk, cont;
};

struct kl_tg {
  struct kl_arena *a;
  const struct kl_ir_fn *f;
  const struct kl_scev *s;
  const char *buf;
  struct kl_tgrace_budget *b;
  int64_t tg[3], max_total;
  /* The structure: each LOOP's interval in a preorder numbering of loops (nested loops inside),
   * its depth and parent; per value the innermost loop holding it and the innermost loop it
   * varies in (reads a header PHI of, or memory within). */
  uint32_t *lo, *hi, *depth, *loop_of, *varies;
  uint32_t tick, naccess;
  /* Per LOOP: 0 when it holds no threadgroup access (one pass says all), else 1 + the most of
   * its nested loops that do, one inside another (its height in the nest), at most 255. */
  uint8_t *has_access;
  uint8_t below; /* while a loop is shaped: the greatest height among its nested loops so far */
  /* Per LOOP: a threadgroup access in its own body, not only in its nested loops (a helper's
   * one-pass region counts as the loop around it). */
  uint8_t *direct;
  int twice; /* loops around the walk that it walks twice */
  /* Forms, memoised per value. */
  struct kl_race_form *form;
  uint8_t *formed;
  uint16_t *sym_of; /* symbol index + 1 per value */
  struct kl_race_sym *syms;
  uint32_t *sym_val; /* per symbol, the value it names */
  size_t nsyms, cap_syms, cap_sym_val;
  bool lanes_only; /* the function names no thread coordinate but the SIMD (and quad) lane */
  struct kl_race_derived der[KL_TG_DER];
  size_t nder;
  /* The walk. */
  struct kl_race_cons *cons;
  size_t ncons, cap_cons;
  struct kl_tg_acc *accs;
  size_t naccs, cap_accs;
  int32_t *acc_of; /* per value: index into accs + 1, -1 none */
  struct kl_tg_set cur;
  struct kl_tg_frame *frames;
  size_t nframes, cap_frames;
  uint64_t *seen; /* (first, second) pairs decided, open addressing */
  size_t nseen, cap_seen;
  struct kl_tgrace_pair *out;
  size_t nout, cap_out;
  /* Ways out taken before the walk's point that no condition on the stack accounts for: a
   * return (exits), a break or continue of a loop still open (leaves). An access past one is
   * not made by every thread its conditions name. */
  uint32_t exits, leaves;
  struct kl_ranges *rg; /* value ranges, made when a ranged index first needs them */
  bool rg_tried;
  uint32_t *table; /* per threadgroup ALLOC: its one store + 1, UINT32_MAX for none (or more) */
};

#define KL_TG_PUSH(t, v, n, cap)                                                                   \
  do {                                                                                             \
    if ((n) == (cap)) {                                                                            \
      size_t nc_ = (cap) ? (cap) * 2 : 16;                                                         \
      void *p_ = kl_arena_alloc((t)->a, nc_ * sizeof *(v));                                        \
      if ((n)) memcpy(p_, (v), (n) * sizeof *(v));                                                 \
      (v) = p_;                                                                                    \
      (cap) = nc_;                                                                                 \
    }                                                                                              \
  } while (0)

/* ---- Structure ------------------------------------------------------------------------------ */

/* A SIMD-group matrix load or store of threadgroup memory (`simdgroup_load(m, tile + off, 16)`):
 * 1 for a load, 2 for a store, 0 for anything else. */
static int kl_tg_matrix_op(const struct kl_ir_fn *f, uint32_t v) {
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op != KL_IR_CALL || in->nops < 2) return 0;
  const char *nm = in->fn ? in->fn->name : in->name;
  int op = !nm ? 0 : !strcmp(nm, "simdgroup_load") ? 1 : !strcmp(nm, "simdgroup_store") ? 2 : 0;
  uint32_t ad = in->ops[1];
  for (int d = 0; op && d < 16 && ad && ad < f->nins; d++) {
    const struct kl_ir_ins *x = &f->ins[ad];
    if (x->op == KL_IR_ALLOC) return x->as == KL_AS_THREADGROUP ? op : 0;
    if (x->op == KL_IR_ARG) return x->var && x->var->as == KL_AS_THREADGROUP ? op : 0;
    if ((x->op != KL_IR_INDEX && x->op != KL_IR_MEMBER) || !x->nops) return 0;
    ad = x->ops[0];
  }
  return 0;
}

/* Whether v is an access the race analysis describes: a load or store of threadgroup memory,
 * or a SIMD-group matrix load or store of it. */
static bool kl_tg_is_access(const struct kl_ir_fn *f, uint32_t v) {
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_LOAD || in->op == KL_IR_STORE) return in->as == KL_AS_THREADGROUP;
  return kl_tg_matrix_op(f, v) != 0;
}

static uint32_t kl_tg_deeper(const struct kl_tg *t, uint32_t x, uint32_t y) {
  if (!x) return y;
  if (!y) return x;
  return t->depth[x] >= t->depth[y] ? x : y;
}

/* Whether loop in is loop out or nested in it. */
static bool kl_tg_inside(const struct kl_tg *t, uint32_t in, uint32_t out) {
  return in && out && t->lo[in] >= t->lo[out] && t->hi[in] <= t->hi[out];
}

static void kl_tg_shape(struct kl_tg *t, uint32_t b, uint32_t loop, int depth) {
  const struct kl_ir_fn *f = t->f;
  if (!b || b >= f->nblocks || depth > 64) return;
  const struct kl_ir_block *bl = &f->blocks[b];
  for (uint32_t i = 0; i < bl->n; i++) {
    uint32_t v = bl->ins[i];
    const struct kl_ir_ins *in = &f->ins[v];
    t->loop_of[v] = loop;
    uint32_t var = 0;
    if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_HEAD) {
      var = in->ref_ins;
    } else {
      for (uint32_t k = 0; k < in->nops; k++)
        if (in->ops[k] < f->nins) var = kl_tg_deeper(t, var, t->varies[in->ops[k]]);
      if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_EXIT)
        while (var && kl_tg_inside(t, var, in->ref_ins)) var = t->loop_of[var];
      if (in->op == KL_IR_LOAD || in->op == KL_IR_ATOMIC || in->op == KL_IR_CALL ||
          in->op == KL_IR_SIMD || in->op == KL_IR_OPAQUE || in->op == KL_IR_UNDEF)
        var = kl_tg_deeper(t, var, loop);
    }
    t->varies[v] = var;
    if (kl_tg_is_access(f, v)) {
      t->naccess++;
      if (loop) t->direct[loop] = 1;
    }
    if (in->op == KL_IR_IF) {
      kl_tg_shape(t, in->blk[0], loop, depth + 1);
      kl_tg_shape(t, in->blk[1], loop, depth + 1);
    } else if (in->op == KL_IR_LOOP) {
      t->lo[v] = ++t->tick;
      t->depth[v] = loop ? t->depth[loop] + 1 : 1;
      uint32_t n0 = t->naccess;
      uint8_t outer = t->below;
      t->below = 0;
      /* Header PHIs vary in the loop before their operands are seen. */
      for (int k = 0; k < 3; k++) kl_tg_shape(t, in->blk[k], v, depth + 1);
      t->hi[v] = ++t->tick;
      uint8_t h = t->naccess == n0 ? 0 : t->below < 255 ? (uint8_t)(t->below + 1) : 255;
      t->has_access[v] = h;
      t->below = outer > h ? outer : h;
    }
  }
}

/* ---- Forms ---------------------------------------------------------------------------------- */

static uint32_t kl_tg_strip(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; d < 8 && v && v < f->nins && f->ins[v].op == KL_IR_CAST; d++)
    v = f->ins[v].ops[0];
  return v;
}

static bool kl_tg_const(const struct kl_ir_fn *f, uint32_t v, int64_t *c) {
  return kl_ir_const(f, kl_tg_strip(f, v), c);
}

/* How the header PHI v of loop l steps, starts and is bounded. */
static void kl_tg_rec(const struct kl_tg *t, uint32_t v, struct kl_race_sym *s) {
  const struct kl_ir_fn *f = t->f;
  const struct kl_ir_ins *phi = &f->ins[v];
  if (phi->nops < 2) return;
  s->init_known = kl_tg_const(f, phi->ops[0], &s->init);
  uint32_t u = kl_tg_strip(f, phi->ops[1]);
  const struct kl_ir_ins *up = u < f->nins ? &f->ins[u] : NULL;
  int64_t by;
  if (up && up->op == KL_IR_BINOP && up->nops == 2 && kl_tg_strip(f, up->ops[0]) == v &&
      kl_tg_const(f, up->ops[1], &by)) {
    static const struct { uint8_t op; char c; } map[] = {
        {KL_IR_ADD, '+'}, {KL_IR_SUB, '-'}, {KL_IR_MUL, '*'},
        {KL_IR_DIV, '/'}, {KL_IR_SHL, '<'}, {KL_IR_SHR, '>'}};
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
      if (map[i].op == up->sub) s->step = map[i].c, s->by = by;
  } else if (up && up->op == KL_IR_BINOP && up->sub == KL_IR_ADD && up->nops == 2 &&
             kl_tg_strip(f, up->ops[1]) == v && kl_tg_const(f, up->ops[0], &by)) {
    s->step = '+', s->by = by;
  }
  const struct kl_ir_ins *lp = &f->ins[phi->ref_ins];
  if ((lp->flags & KL_IR_F_DO_WHILE) || !lp->nops) return;
  uint32_t c = kl_tg_strip(f, lp->ops[0]);
  const struct kl_ir_ins *ci = c && c < f->nins ? &f->ins[c] : NULL;
  if (!ci || ci->op != KL_IR_BINOP || ci->nops != 2) return;
  int o = ci->sub;
  int64_t bound;
  bool flip = false;
  if (kl_tg_strip(f, ci->ops[0]) == v && kl_tg_const(f, ci->ops[1], &bound)) {
  } else if (kl_tg_strip(f, ci->ops[1]) == v && kl_tg_const(f, ci->ops[0], &bound)) {
    /* b op v is v op' b. */
    o = o == KL_IR_LT ? KL_IR_GT : o == KL_IR_GT ? KL_IR_LT : o == KL_IR_LE ? KL_IR_GE
        : o == KL_IR_GE ? KL_IR_LE : o;
  } else {
    return;
  }
  s->bound = bound;
  s->bound_known = true;
  switch (o) {
  case KL_IR_LT: s->bound_op = KL_RACE_LT; break;
  case KL_IR_LE: s->bound_op = KL_RACE_LE; break;
  case KL_IR_NE: s->bound_op = KL_RACE_NE; break;
  case KL_IR_GT: s->bound_op = KL_RACE_LT, flip = true; break;
  case KL_IR_GE: s->bound_op = KL_RACE_LE, flip = true; break;
  default: s->bound_known = false;
  }
  s->bound_flip = flip;
}

/* The symbol of the value v, the same for the threadgroup. */
static struct kl_race_form kl_tg_sym(struct kl_tg *t, uint32_t v) {
  v = kl_scev_leader(t->s, v);
  if (!t->sym_of[v]) {
    if (t->nsyms >= KL_RACE_DERIVED - KL_RACE_NATOMS - 1) return (struct kl_race_form){0};
    KL_TG_PUSH(t, t->syms, t->nsyms, t->cap_syms);
    KL_TG_PUSH(t, t->sym_val, t->nsyms, t->cap_sym_val);
    t->sym_val[t->nsyms] = v;
    struct kl_race_sym *s = &t->syms[t->nsyms];
    memset(s, 0, sizeof *s);
    uint32_t l = t->varies[v];
    if (l) {
      /* Set within loop l: the same within one iteration only, and a header PHI of l steps. */
      s->loop = true;
      s->lo = t->lo[l];
      s->hi = t->hi[l];
      const struct kl_ir_ins *in = &t->f->ins[v];
      if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_HEAD && in->ref_ins == l) kl_tg_rec(t, v, s);
    }
    t->sym_of[v] = (uint16_t)++t->nsyms;
  }
  return kl_race_var((uint16_t)(KL_RACE_NATOMS + t->sym_of[v] - 1));
}

static bool kl_tg_same_form(const struct kl_race_form *a, const struct kl_race_form *b) {
  if (a->known != b->known || a->n != b->n || a->c != b->c) return false;
  for (uint8_t i = 0; i < a->n; i++)
    if (a->t[i].var != b->t[i].var || a->t[i].k != b->t[i].k) return false;
  return true;
}

static struct kl_race_form kl_tg_derive(struct kl_tg *t, struct kl_race_form base, char op,
                                        int64_t c) {
  for (size_t j = 0; j < t->nder; j++)
    if (t->der[j].op == op && t->der[j].c == c && kl_tg_same_form(&t->der[j].base, &base))
      return kl_race_var((uint16_t)(KL_RACE_DERIVED + j));
  if (t->nder >= KL_TG_DER) return (struct kl_race_form){0};
  struct kl_race_derived *d = &t->der[t->nder];
  memset(d, 0, sizeof *d);
  d->base = base;
  d->op = op;
  d->c = c;
  return kl_race_var((uint16_t)(KL_RACE_DERIVED + t->nder++));
}

static bool kl_tg_uniform(const struct kl_tg *t, uint32_t v) {
  return kl_scev_scope(t->s, v) <= KL_SCOPE_THREADGROUP;
}

static struct kl_race_form kl_tg_form(struct kl_tg *t, uint32_t v, int depth);

static struct kl_race_form kl_tg_binop(struct kl_tg *t, const struct kl_ir_ins *in, int depth) {
  struct kl_race_form unk = {0};
  struct kl_race_form l = kl_tg_form(t, in->ops[0], depth + 1);
  struct kl_race_form r = kl_tg_form(t, in->ops[1], depth + 1);
  int64_t lc = 0, rc = 0;
  bool lk = kl_race_is_const(l, &lc), rk = kl_race_is_const(r, &rc);
  switch (in->sub) {
  case KL_IR_ADD: return kl_race_add(l, r, 1);
  case KL_IR_SUB: return kl_race_add(l, r, -1);
  case KL_IR_MUL: return rk ? kl_race_scale(l, rc) : lk ? kl_race_scale(r, lc) : unk;
  case KL_IR_SHL: return rk && rc >= 0 && rc < 20 ? kl_race_scale(l, (int64_t)1 << rc) : unk;
  case KL_IR_DIV:
  case KL_IR_REM:
  case KL_IR_SHR:
  case KL_IR_AND: break;
  default: return unk;
  }
  if (lk && rk) {
    if (in->sub == KL_IR_SHR) return rc >= 0 && rc < 63 ? kl_race_const(lc >> rc) : unk;
    if (in->sub == KL_IR_AND) return kl_race_const(lc & rc);
    return rc ? kl_race_const(in->sub == KL_IR_DIV ? lc / rc : lc % rc) : unk;
  }
  if (!rk) return unk;
  bool div = in->sub == KL_IR_DIV;
  /* The linear index split into SIMD (or quad) group and lane. */
  if ((div || in->sub == KL_IR_REM) && (rc == 32 || rc == 4) && l.known && l.n == 1 && !l.c &&
      l.t[0].k == 1 && l.t[0].var == KL_RACE_LINEAR)
    return kl_race_var(rc == 32 ? (div ? KL_RACE_SIMD : KL_RACE_LANE)
                                : (div ? KL_RACE_QUAD : KL_RACE_QLANE));
  char dop = 0;
  int64_t dc = 0;
  if ((div || in->sub == KL_IR_REM) && rc > 0) dop = div ? '/' : '%', dc = rc;
  if (in->sub == KL_IR_SHR && rc >= 0 && rc < 30) dop = '/', dc = (int64_t)1 << rc;
  if (in->sub == KL_IR_AND && rc > 0 && !(rc & (rc + 1))) dop = '%', dc = rc + 1;
  if (!dop || !l.known || !l.n) return unk;
  for (uint8_t i = 0; i < l.n; i++)
    if (l.t[i].var >= KL_RACE_NATOMS) return unk;
  return kl_tg_derive(t, l, dop, dc);
}

/* Whether a barrier orders threadgroup memory: it says so, or its flags cannot be read and do
 * not name mem_none (presumed right). */
static bool kl_tg_orders(const struct kl_tg *t, const struct kl_ir_ins *in) {
  if (in->imm & KL_IR_MEM_THREADGROUP) return true;
  if (in->imm & (KL_IR_MEM_DEVICE | KL_IR_MEM_TEXTURE)) return false;
  if (t->buf) {
    uint32_t s = ts_node_start_byte(in->node), e = ts_node_end_byte(in->node);
    for (uint32_t i = s; i + 8 <= e; i++)
      if (!memcmp(t->buf + i, "mem_none", 8)) return false;
  }
  return true;
}

/* The base of an address that is one subscript of a threadgroup array (`slot[i]`): the array's
 * ALLOC, and the subscript in *i; 0 for any other address. */
static uint32_t kl_tg_tg_elem(const struct kl_ir_fn *f, uint32_t ad, uint32_t *i) {
  if (!ad || ad >= f->nins || f->ins[ad].op != KL_IR_INDEX || f->ins[ad].nops != 2) return 0;
  uint32_t b = f->ins[ad].ops[0];
  if (!b || b >= f->nins || f->ins[b].op != KL_IR_ALLOC || f->ins[b].as != KL_AS_THREADGROUP)
    return 0;
  *i = f->ins[ad].ops[1];
  return b;
}

/* The one store to the threadgroup array arr in the function, 0 when it has none or more, or
 * when the array is used other than as a subscript's base (a pointer to it kept or handed on,
 * whose stores may go where this does not look). Memoised per array. */
static uint32_t kl_tg_table_store(struct kl_tg *t, uint32_t arr) {
  const struct kl_ir_fn *f = t->f;
  if (!t->table) t->table = kl_arena_alloc(t->a, (f->nins + 1) * sizeof *t->table); /* cleared */
  if (t->table[arr]) return t->table[arr] == UINT32_MAX ? 0 : t->table[arr] - 1;
  uint32_t st = 0;
  for (uint32_t u = 1; u < f->nins && st != UINT32_MAX; u++) {
    const struct kl_ir_ins *x = &f->ins[u];
    for (uint32_t k = 0; k < x->nops; k++)
      if (x->ops[k] == arr && (x->op != KL_IR_INDEX || k)) st = UINT32_MAX;
    if (st == UINT32_MAX) break;
    if (x->op != KL_IR_STORE && x->op != KL_IR_CALL && x->op != KL_IR_ATOMIC) continue;
    bool hits = false;
    for (uint32_t k = 0; k < x->nops && !hits; k++) {
      uint32_t ad = x->ops[k];
      for (int d = 0; d < 16 && ad && ad < f->nins; d++) {
        const struct kl_ir_ins *y = &f->ins[ad];
        if (ad == arr) hits = true;
        if ((y->op != KL_IR_INDEX && y->op != KL_IR_CAST && y->op != KL_IR_MEMBER) || !y->nops)
          break;
        ad = y->ops[0];
      }
    }
    if (hits) st = st || x->op != KL_IR_STORE || x->sub || x->nops < 2 ? UINT32_MAX : u;
  }
  t->table[arr] = st && st != UINT32_MAX ? st + 1 : UINT32_MAX;
  return st == UINT32_MAX ? 0 : st;
}

/* The value a load of a threadgroup table reads where that is known: the table's one store in
 * the function is in the load's block before it, a barrier ordering threadgroup memory between
 * them, at the same index, each thread's own element (`slot[lid] = lid / 2; barrier; ...
 * slot[lid]`): every element a thread reads there it stored itself, and no one stored since.
 * Returns the stored value, 0 when not known. */
static uint32_t kl_tg_table(struct kl_tg *t, uint32_t v) {
  const struct kl_ir_fn *f = t->f;
  const struct kl_ir_ins *ld = &f->ins[v];
  uint32_t li = 0, si = 0;
  uint32_t arr = ld->nops ? kl_tg_tg_elem(f, ld->ops[0], &li) : 0;
  uint32_t st = arr ? kl_tg_table_store(t, arr) : 0;
  if (!st || f->ins[st].block != ld->block || kl_tg_tg_elem(f, f->ins[st].ops[0], &si) != arr)
    return 0;
  const struct kl_ir_block *bl = &f->blocks[ld->block];
  bool after = false, barrier = false;
  for (uint32_t k = 0; k < bl->n && bl->ins[k] != v; k++) {
    const struct kl_ir_ins *x = &f->ins[bl->ins[k]];
    if (bl->ins[k] == st) after = true;
    else if (after && x->op == KL_IR_BARRIER && x->fn &&
             x->fn->barrier_scope == KL_SCOPE_THREADGROUP && kl_tg_orders(t, x))
      barrier = true;
  }
  if (!after || !barrier) return 0;
  struct kl_race_form a = kl_tg_form(t, li, 0), b = kl_tg_form(t, si, 0);
  if (!a.known || !kl_tg_same_form(&a, &b)) return 0;
  /* Each thread's own element: no two threads store to one. */
  struct kl_race_side sd;
  memset(&sd, 0, sizeof sd);
  sd.idx[0] = a;
  sd.ndims = 1;
  sd.store = true;
  struct kl_race_order ord = {false, 0, 0, false, {t->tg[0], t->tg[1], t->tg[2]}, t->max_total};
  if (kl_race_meet(&sd, &sd, &ord, t->syms, t->nsyms, t->der, t->nder, NULL)) return 0;
  return f->ins[st].ops[1];
}

static struct kl_race_form kl_tg_compute(struct kl_tg *t, uint32_t v, int depth) {
  struct kl_race_form unk = {0};
  const struct kl_ir_ins *in = &t->f->ins[v];
  switch (in->op) {
  case KL_IR_CONST: return kl_race_const(in->imm);
  case KL_IR_COORD: {
    int atom = kl_race_coord_atom(in->coord ? in->coord->name : NULL, in->imm);
    if (atom >= 0) return kl_race_var((uint16_t)atom);
    return in->coord && in->coord->scope <= KL_SCOPE_THREADGROUP ? kl_tg_sym(t, v) : unk;
  }
  case KL_IR_CAST: return in->nops ? kl_tg_form(t, in->ops[0], depth + 1) : unk;
  case KL_IR_LOAD: {
    uint32_t w = kl_tg_table(t, v);
    if (w) return kl_tg_form(t, w, depth + 1);
    break;
  }
  case KL_IR_UNOP:
    if (in->sub == KL_IR_NEG && in->nops)
      return kl_race_scale(kl_tg_form(t, in->ops[0], depth + 1), -1);
    break;
  case KL_IR_BINOP:
    if (in->nops == 2) {
      struct kl_race_form r = kl_tg_binop(t, in, depth);
      if (r.known) return r;
    }
    break;
  case KL_IR_PHI:
    if (in->sub == KL_IR_PHI_IF && in->nops == 2 && in->ops[0] && in->ops[1]) {
      struct kl_race_form x = kl_tg_form(t, in->ops[0], depth + 1);
      struct kl_race_form y = kl_tg_form(t, in->ops[1], depth + 1);
      if (x.known && kl_tg_same_form(&x, &y)) return x;
    }
    break;
  default: break;
  }
  if (in->op == KL_IR_FCONST || in->op == KL_IR_ALLOC || in->op == KL_IR_INDEX ||
      in->op == KL_IR_MEMBER)
    return unk;
  if (kl_tg_uniform(t, v)) return kl_tg_sym(t, v);
  return unk;
}

static struct kl_race_form kl_tg_form(struct kl_tg *t, uint32_t v, int depth) {
  struct kl_race_form unk = {0};
  if (!v || v >= t->f->nins || depth > KL_TG_DEPTH) return unk;
  if (t->formed[v]) return t->form[v];
  struct kl_race_form r = kl_tg_compute(t, v, depth);
  t->formed[v] = 1;
  t->form[v] = r;
  return r;
}

/* ---- Conditions ----------------------------------------------------------------------------- */

/* A condition, or with e unknown a mark that some condition here was not read (the accesses
 * under it are made by threads kernlint cannot name: no ranged access there is certain). */
static void kl_tg_push_cons(struct kl_tg *t, struct kl_race_form e, enum kl_race_op op,
                            int64_t mod, int64_t off) {
  KL_TG_PUSH(t, t->cons, t->ncons, t->cap_cons);
  t->cons[t->ncons++] = (struct kl_race_cons){e, op, mod, off};
}

/* `x & 3` or `x % 4`: the form of x and the modulus. */
static bool kl_tg_modulo(struct kl_tg *t, uint32_t v, struct kl_race_form *x, int64_t *mod) {
  v = kl_tg_strip(t->f, v);
  const struct kl_ir_ins *in = v && v < t->f->nins ? &t->f->ins[v] : NULL;
  int64_t k;
  if (!in || in->op != KL_IR_BINOP || in->nops != 2 ||
      (in->sub != KL_IR_AND && in->sub != KL_IR_REM) || !kl_tg_const(t->f, in->ops[1], &k) ||
      k <= 0)
    return false;
  if (in->sub == KL_IR_AND && (k & (k + 1))) return false;
  *mod = in->sub == KL_IR_AND ? k + 1 : k;
  *x = kl_tg_form(t, in->ops[0], 0);
  return x->known;
}

/* The conditions a branch on v runs under (taken: v holds), as far as forms say. */
static void kl_tg_unread(struct kl_tg *t) {
  kl_tg_push_cons(t, (struct kl_race_form){0}, KL_RACE_EQ, 0, 0);
}

static void kl_tg_cond(struct kl_tg *t, uint32_t v, bool taken, int depth) {
  const struct kl_ir_fn *f = t->f;
  v = kl_tg_strip(f, v);
  if (!v || v >= f->nins || depth > 8) {
    kl_tg_unread(t);
    return;
  }
  const struct kl_ir_ins *in = &f->ins[v];
  int64_t c;
  if (in->op == KL_IR_UNOP && in->sub == KL_IR_NOT && in->nops) {
    kl_tg_cond(t, in->ops[0], !taken, depth + 1);
    return;
  }
  if (in->op == KL_IR_SELECT && in->nops == 3) {
    /* a && b is a ? b : false; a || b is a ? true : b. */
    if (taken && kl_tg_const(f, in->ops[2], &c) && !c) {
      kl_tg_cond(t, in->ops[0], true, depth + 1);
      kl_tg_cond(t, in->ops[1], true, depth + 1);
    } else if (!taken && kl_tg_const(f, in->ops[1], &c) && c) {
      kl_tg_cond(t, in->ops[0], false, depth + 1);
      kl_tg_cond(t, in->ops[2], false, depth + 1);
    } else {
      kl_tg_unread(t);
    }
    return;
  }
  bool test = in->op == KL_IR_BINOP && in->nops == 2 &&
              ((in->sub >= KL_IR_LT && in->sub <= KL_IR_NE) || in->sub == KL_IR_LAND ||
               in->sub == KL_IR_LOR);
  if (!test) {
    /* A value tested for being non-zero (`if (!lid)`, `if (lane & 1)`); simd_is_first() is
     * one lane of each SIMD group, counted as the first. */
    enum kl_race_op op = taken ? KL_RACE_NE : KL_RACE_EQ;
    struct kl_race_form m;
    int64_t mod;
    if (in->op == KL_IR_SIMD && in->fn && !strcmp(in->fn->name, "simd_is_first"))
      kl_tg_push_cons(t, kl_race_var(KL_RACE_LANE), taken ? KL_RACE_EQ : KL_RACE_NE, 0, 0);
    else if (kl_tg_modulo(t, v, &m, &mod))
      kl_tg_push_cons(t, m, op, mod, 0);
    else if (in->op != KL_IR_BINOP || in->sub != KL_IR_AND)
      kl_tg_push_cons(t, kl_tg_form(t, v, 0), op, 0, 0);
    else
      kl_tg_unread(t);
    return;
  }
  if ((in->sub == KL_IR_LAND && taken) || (in->sub == KL_IR_LOR && !taken)) {
    kl_tg_cond(t, in->ops[0], taken, depth + 1);
    kl_tg_cond(t, in->ops[1], taken, depth + 1);
    return;
  }
  static const uint8_t ops[] = {KL_IR_EQ, KL_IR_NE, KL_IR_LT, KL_IR_LE, KL_IR_GT, KL_IR_GE};
  int o = -1;
  for (int i = 0; i < 6; i++)
    if (in->sub == ops[i]) o = i;
  if (o < 0) {
    kl_tg_unread(t);
    return;
  }
  if (!taken) o = (int[]){1, 0, 5, 4, 3, 2}[o];
  struct kl_race_form m;
  int64_t mod, d;
  for (int side = 0; side < 2; side++) {
    uint32_t x = in->ops[side], y = in->ops[!side];
    if (!kl_tg_modulo(t, x, &m, &mod) || !kl_tg_const(f, y, &d)) continue;
    int q = side ? (int[]){0, 1, 4, 5, 2, 3}[o] : o;
    static const enum kl_race_op as[] = {KL_RACE_EQ, KL_RACE_NE, KL_RACE_LT, KL_RACE_LE};
    if (q < 4)
      kl_tg_push_cons(t, m, as[q], mod, d);
    else
      kl_tg_unread(t);
    return;
  }
  struct kl_race_form a = kl_tg_form(t, in->ops[0], 0), b = kl_tg_form(t, in->ops[1], 0);
  if (!a.known || !b.known) {
    kl_tg_unread(t);
    return;
  }
  switch (o) {
  case 0: kl_tg_push_cons(t, kl_race_add(a, b, -1), KL_RACE_EQ, 0, 0); break;
  case 1: kl_tg_push_cons(t, kl_race_add(a, b, -1), KL_RACE_NE, 0, 0); break;
  case 2: kl_tg_push_cons(t, kl_race_add(a, b, -1), KL_RACE_LT, 0, 0); break;
  case 3: kl_tg_push_cons(t, kl_race_add(a, b, -1), KL_RACE_LE, 0, 0); break;
  case 4: kl_tg_push_cons(t, kl_race_add(b, a, -1), KL_RACE_LT, 0, 0); break;
  case 5: kl_tg_push_cons(t, kl_race_add(b, a, -1), KL_RACE_LE, 0, 0); break;
  }
}

/* ---- Accesses ------------------------------------------------------------------------------- */

TSNode kl_tgrace_node(const struct kl_ir_fn *f, uint32_t access) {
  const struct kl_ir_ins *in = &f->ins[access];
  uint32_t ad = in->nops ? in->ops[0] : 0;
  for (int d = 0; d < 8 && ad && ad < f->nins; d++) {
    const struct kl_ir_ins *x = &f->ins[ad];
    if (x->op == KL_IR_INDEX) return x->node;
    if (x->op != KL_IR_MEMBER || !x->nops) break;
    ad = x->ops[0];
  }
  /* A variable of one element: the name assigned or updated, not the whole expression. */
  TSNode n = in->node;
  const char *ty = ts_node_is_null(n) ? "" : ts_node_type(n);
  TSNode target = !strcmp(ty, "assignment_expression") ? ts_node_child_by_field_name(n, "left", 4)
                  : !strcmp(ty, "update_expression")
                      ? ts_node_child_by_field_name(n, "argument", 8)
                      : (TSNode){0};
  return ts_node_is_null(target) ? n : target;
}

/* Whether a call computes its value from its arguments alone: an MSL built-in, or a vector or
 * scalar constructor (`ushort2(a, b)`, `float4(x)`). */
static bool kl_tg_pure_call(const struct kl_ir_ins *in) {
  return in->fn || (in->name && kl_msl_type(in->name));
}

/* How alike the value v is across the threads of a threadgroup (enum kl_scope): the scalar
 * evolution's scope, or the widest of its operands' for arithmetic on a value every thread
 * reads from one element of threadgroup memory (`float m = tg[0];`: a write of that element in
 * the same barrier interval is a race of its own). */
static enum kl_scope kl_tg_value_scope(struct kl_tg *t, uint32_t v, int *steps) {
  const struct kl_ir_fn *f = t->f;
  if (!v || v >= f->nins) return KL_SCOPE_THREAD;
  enum kl_scope sc = kl_scev_scope(t->s, v);
  if (sc <= KL_SCOPE_SIMDGROUP || --*steps < 0) return sc;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_SIMD && in->fn && in->fn->result_scope == KL_SCOPE_SIMDGROUP)
    return KL_SCOPE_SIMDGROUP; /* one value for the lanes that run it, whatever they hand in */
  if (in->op == KL_IR_CALL && !in->fn && in->nops == 1 && in->name && in->ops[0] < f->nins &&
      f->ins[in->ops[0]].op == KL_IR_SIMD && f->ins[in->ops[0]].fn &&
      f->ins[in->ops[0]].fn->result_scope == KL_SCOPE_SIMDGROUP) {
    /* A vote's answer (`simd_ballot(c).all()`, `.any()`) is the vote's, one per SIMD group. */
    size_t n = strlen(in->name);
    if (n > 4 && (!strcmp(in->name + n - 4, ".all") || !strcmp(in->name + n - 4, ".any")))
      return KL_SCOPE_SIMDGROUP;
  }
  if (in->op == KL_IR_LOAD && in->as == KL_AS_THREADGROUP && in->nops) {
    uint32_t ad = in->ops[0];
    for (int d = 0; d < 16 && ad && ad < f->nins; d++) {
      const struct kl_ir_ins *x = &f->ins[ad];
      if (x->op == KL_IR_ALLOC || x->op == KL_IR_ARG) return KL_SCOPE_THREADGROUP;
      if (x->op == KL_IR_INDEX && x->nops == 2) {
        struct kl_race_form e = kl_tg_form(t, x->ops[1], 0);
        if (!e.known) return KL_SCOPE_THREAD;
        for (uint8_t i = 0; i < e.n; i++)
          if (e.t[i].var < KL_RACE_NATOMS || e.t[i].var >= KL_RACE_DERIVED) return KL_SCOPE_THREAD;
      } else if (x->op != KL_IR_MEMBER || !x->nops) {
        return KL_SCOPE_THREAD;
      }
      ad = x->ops[0];
    }
    return KL_SCOPE_THREAD;
  }
  bool pure = in->op == KL_IR_BINOP || in->op == KL_IR_UNOP || in->op == KL_IR_CAST ||
              in->op == KL_IR_SELECT || (in->op == KL_IR_CALL && kl_tg_pure_call(in));
  if (!pure || !in->nops) return KL_SCOPE_THREAD;
  enum kl_scope w = KL_SCOPE_UNIFORM;
  for (uint32_t k = 0; k < in->nops && w < KL_SCOPE_THREAD; k++) {
    enum kl_scope o = kl_tg_value_scope(t, in->ops[k], steps);
    if (o > w) w = o;
  }
  return w;
}

/* The element a lane makes of a SIMD-group matrix load or store, added to acc's index (the
 * matrix's first element): an 8 x 8 matrix `elements_per_row` apart (8 when not given), from
 * its origin, transposed or not, the lanes of a SIMD group two elements of a row each (lane l at
 * row l / 4, column 2 * (l % 4); the other element of the pair is left out, as is the second
 * element of a wider chunk elsewhere). False when the sizes are not constants. */
static bool kl_tg_matrix_lanes(struct kl_tg *t, const struct kl_ir_ins *in,
                               struct kl_tg_acc *acc) {
  const struct kl_ir_fn *f = t->f;
  int64_t epr = 8, ox = 0, oy = 0, tr = 0;
  if (acc->side.ndims != 1 || (in->nops > 2 && !kl_tg_const(f, in->ops[2], &epr)) ||
      (in->nops > 4 && !kl_tg_const(f, in->ops[4], &tr)))
    return false;
  if (in->nops > 3 && !kl_tg_const(f, in->ops[3], &ox)) {
    /* ulong2(x, y): column x, row y. */
    const struct kl_ir_ins *o = &f->ins[kl_tg_strip(f, in->ops[3])];
    if (o->op != KL_IR_CALL || o->nops != 2 || !kl_tg_const(f, o->ops[0], &ox) ||
        !kl_tg_const(f, o->ops[1], &oy))
      return false;
  }
  struct kl_race_form row = kl_tg_derive(t, kl_race_var(KL_RACE_LANE), '/', 4);
  struct kl_race_form col = kl_race_scale(kl_race_var(KL_RACE_QLANE), 2);
  if (tr) {
    struct kl_race_form x = row;
    row = col, col = x;
  }
  struct kl_race_form e = kl_race_add(kl_race_scale(row, epr), col, 1);
  e = kl_race_add(e, kl_race_const(oy * epr + ox), 1);
  acc->side.idx[0] = kl_race_add(acc->side.idx[0], e, 1);
  return acc->side.idx[0].known;
}

/* The flat index of an access through a pointer cast: its subscripts (idx, size, n of them,
 * innermost first) summed in bytes, in units of their common divisor with the access's size
 * (top when the cast is the innermost step, else the innermost subscript's). */
static bool kl_tg_describe_bytes(struct kl_tg *t, struct kl_tg_acc *acc, const uint32_t *idx,
                                 const int64_t *size, int n, uint32_t top) {
  int64_t w = top ? top : n ? size[0] : 0, u = w;
  for (int d = 0; d < n; d++) {
    if (size[d] <= 0) return false;
    u = kl_affine_gcd(u, size[d]);
  }
  if (w <= 0 || u <= 0) return false;
  struct kl_race_form e = kl_race_const(0);
  for (int d = 0; d < n; d++)
    e = kl_race_add(e, kl_race_scale(idx[d] ? kl_tg_form(t, idx[d], 0) : kl_race_const(0),
                                      size[d] / u), 1);
  if (!e.known) return false;
  /* A value set in a loop that is no recurrence kernlint can step (`j * TF`) is sampled freely
   * in two iterations, small steps included; through a cast, where row strides are of another
   * unit, that is not trusted. */
  for (uint8_t i = 0; i < e.n; i++) {
    uint16_t x = e.t[i].var;
    if (x >= KL_RACE_NATOMS && x < KL_RACE_DERIVED && t->syms[x - KL_RACE_NATOMS].loop &&
        !t->syms[x - KL_RACE_NATOMS].step)
      return false;
  }
  acc->side.idx[0] = e;
  acc->side.ndims = 1;
  acc->unit = (uint32_t)u;
  acc->width = (uint32_t)(w / u);
  return true;
}

/* Whether two accesses whose units or widths differ overlap from two threads: both in the
 * smaller unit, a's index shifted over every offset at which the two spans share a unit. */
static bool kl_tg_meet_wide(struct kl_tg *t, const struct kl_tg_acc *a, const struct kl_tg_acc *b,
                            const struct kl_race_order *ord) {
  uint32_t u = a->unit < b->unit ? a->unit : b->unit;
  if (a->side.ranged || b->side.ranged) return false;
  if (!u || a->unit % u || b->unit % u || a->side.ndims != 1 || b->side.ndims != 1) return false;
  struct kl_race_side sa = a->side, sb = b->side;
  sa.idx[0] = kl_race_scale(sa.idx[0], a->unit / u);
  sb.idx[0] = kl_race_scale(sb.idx[0], b->unit / u);
  int64_t wa = (int64_t)a->width * (a->unit / u), wb = (int64_t)b->width * (b->unit / u);
  if (wa > 64 || wb > 64 || !sa.idx[0].known || !sb.idx[0].known) return false;
  struct kl_race_form x = sa.idx[0];
  for (int64_t d = 1 - wb; d < wa; d++) {
    sa.idx[0] = kl_race_add(x, kl_race_const(d), 1);
    if (kl_race_meet_memo(&sa, &sb, ord, t->syms, t->nsyms, t->der, t->nder,
                          t->b ? &t->b->valuations : NULL, t->b ? t->b->memo : NULL))
      return true;
  }
  return false;
}

/* An index with no form described by its range at access v (a value loaded from memory and
 * masked, reduced or clamped, or of a narrow type; a table's load by the value stored): *acc
 * ranged over it. False when the range is not known or too wide to decide anything by. */
static bool kl_tg_ranged(struct kl_tg *t, uint32_t i, uint32_t v, struct kl_tg_acc *acc) {
  if (!i || t->f->truncated) return false;
  if (!t->rg_tried) {
    t->rg_tried = true;
    struct kl_ranges_launch rl = {{t->tg[0], t->tg[1], t->tg[2]}, {0, 0, 0}, 0};
    t->rg = kl_ranges_run(t->a, t->f, t->s, &rl);
  }
  if (!t->rg) return false;
  struct kl_range r = kl_ranges_at(t->rg, i, v);
  uint32_t l = kl_tg_strip(t->f, i), w;
  if (t->f->ins[l].op == KL_IR_LOAD && (w = kl_tg_table(t, l))) {
    struct kl_range q = kl_ranges_at(t->rg, w, w);
    if (q.lo > r.lo) r.lo = q.lo;
    if (q.hi < r.hi) r.hi = q.hi;
  }
  if (r.lo == KL_RANGE_NEG_INF || r.hi == KL_RANGE_POS_INF || r.lo > r.hi ||
      r.hi - r.lo >= 4096)
    return false;
  acc->side.ranged = true;
  acc->side.lo = r.lo;
  acc->side.hi = r.hi;
  acc->side.idx[0] = kl_race_const(0);
  acc->index = i;
  return true;
}

/* The description of access v, or false when it takes no part. */
static bool kl_tg_describe(struct kl_tg *t, uint32_t v, struct kl_tg_acc *acc) {
  const struct kl_ir_fn *f = t->f;
  const struct kl_ir_ins *in = &f->ins[v];
  memset(acc, 0, sizeof *acc);
  acc->ins = v;
  /* Subscripts: up to KL_TG_SUBS, flattened into one index (an array of more dimensions than
   * KL_RACE_MAX_DIMS must be of sized rows). */
  uint32_t idx[KL_TG_SUBS];
  int64_t size[KL_TG_SUBS];
  int n = 0;
  /* A SIMD-group matrix load or store: its pointer, the matrix's first element. */
  int matrix = kl_tg_matrix_op(f, v);
  uint32_t key = 0, fields = 0, ad = matrix ? in->ops[1] : in->nops ? in->ops[0] : 0, top = 0;
  bool cast = false;
  for (int d = 0; d < 16; d++) {
    if (!ad || ad >= f->nins) return false;
    const struct kl_ir_ins *x = &f->ins[ad];
    if (x->op == KL_IR_CAST && x->nops) {
      /* A pointer cast to another element type (`(threadgroup float4*)&tg[4 * lid]`): the
       * index is summed in bytes; the access is as wide as what the cast points to. */
      if (!n && !cast) top = kl_msl_pointee_size(x->type);
      cast = true;
      ad = x->ops[0];
      continue;
    }
    if (x->op == KL_IR_INDEX && x->nops == 2) {
      if (n == KL_TG_SUBS) return false;
      idx[n] = x->ops[1];
      size[n++] = x->imm;
    } else if (x->op == KL_IR_MEMBER && x->nops) {
      /* A struct's field below a subscript is an array of its own; a component above all of
       * them is part of the element, unless there is no subscript at all (`threadgroup S s;`:
       * each field of the one variable is a variable of its own). */
      for (const char *p = x->name; p && *p; p++) {
        if (n) key = (key ^ (uint8_t)*p) * 16777619u;
        fields = (fields ^ (uint8_t)*p) * 16777619u;
      }
    } else {
      break;
    }
    ad = x->ops[0];
  }
  const struct kl_ir_ins *base = &f->ins[ad];
  if (base->op != KL_IR_ALLOC && base->op != KL_IR_ARG) return false;
  if (base->var && base->var->type && strstr(base->var->type, "atomic")) return false;
  if (!n && matrix) {
    /* The array itself: its first element, in the array's own elements (a subscript of the
     * same array elsewhere steps by them). */
    const char *ty = base->var && base->var->type ? base->var->type : base->type;
    const struct kl_msl_type *et = ty && !strchr(ty, '*') ? kl_msl_type(ty) : NULL;
    int64_t es = et ? (int64_t)et->size : (int64_t)kl_msl_pointee_size(ty);
    if (es <= 0) return false;
    idx[0] = 0;
    size[n++] = es;
  }
  if (!n) {
    /* A threadgroup variable of one element (`threadgroup uint count;`): its index is 0. Not
     * an array stored whole, nor the initializer of a declaration, which MSL does not run as
     * a store of every thread. */
    if (base->op != KL_IR_ALLOC || base->as != KL_AS_THREADGROUP ||
        (base->var && base->var->array_dims) || (base->type && strchr(base->type, '[')) ||
        (!ts_node_is_null(in->node) && !strcmp(ts_node_type(in->node), "init_declarator")))
      return false;
    key = fields;
    idx[0] = 0;
    size[n++] = 1;
  }
  if (n > KL_RACE_MAX_DIMS && size[0] <= 0) return false;
  acc->key = ad ^ (key << 16);
  acc->width = 1;
  acc->unit = (uint32_t)(size[0] > 0 ? size[0] : 0);
  /* One index over the whole array: each subscript's byte step in the outermost's elements. */
  bool flat = size[0] > 0, unsized = !size[0];
  for (int d = 1; d < n; d++) {
    flat = flat && size[d] > 0 && size[d] % size[0] == 0;
    unsized = unsized && !size[d];
  }
  if (cast) {
    /* A matrix's lanes are placed in elements, not in the cast's units. */
    if (matrix || !kl_tg_describe_bytes(t, acc, idx, size, n, top)) return false;
  } else if (!flat && !unsized) {
    return false;
  } else if (flat) {
    struct kl_race_form e = kl_race_const(0);
    for (int d = 0; d < n; d++)
      e = kl_race_add(e, kl_race_scale(idx[d] ? kl_tg_form(t, idx[d], 0) : kl_race_const(0),
                                        size[d] / size[0]), 1);
    if (!e.known && (n != 1 || matrix || !kl_tg_ranged(t, idx[0], v, acc))) return false;
    if (e.known) acc->side.idx[0] = e;
    acc->side.ndims = 1;
  } else {
    for (int d = 0; d < n; d++) {
      acc->side.idx[d] = kl_tg_form(t, idx[n - 1 - d], 0);
      if (!acc->side.idx[d].known) return false;
    }
    acc->side.ndims = (uint8_t)n;
  }
  /* The conditions that say which threads make the access: those naming a coordinate, and
   * those whose symbols the index or those name too; a condition on uniform values alone (a
   * loop's `i < n`) holds for every thread alike, and would only spend the pair's symbols. */
  uint16_t named[4 * KL_RACE_MAX_TERMS];
  size_t nnamed = 0;
  acc->side.certain = !t->exits && !t->leaves;
  for (int pass = 0; pass < 2; pass++)
    for (size_t c = t->ncons; c-- > 0;) {
      const struct kl_race_form *e = &t->cons[c].e;
      if (!e->known) {
        acc->side.certain = false;
        continue;
      }
      if (acc->side.ncons == KL_RACE_MAX_CONS) {
        acc->side.certain = false;
        break;
      }
      bool coord = false, known = true;
      for (uint8_t i = 0; i < e->n; i++) {
        uint16_t x = e->t[i].var;
        if (x < KL_RACE_NATOMS || x >= KL_RACE_DERIVED) {
          coord = true;
          continue;
        }
        bool hit = false;
        for (uint8_t d = 0; d < acc->side.ndims && !hit; d++)
          for (uint8_t k = 0; k < acc->side.idx[d].n && !hit; k++)
            hit = acc->side.idx[d].t[k].var == x;
        for (size_t k = 0; k < nnamed && !hit; k++) hit = named[k] == x;
        known = known && hit;
      }
      if (pass == 0 && coord) {
        acc->side.cons[acc->side.ncons++] = t->cons[c];
        for (uint8_t i = 0; i < e->n && nnamed < sizeof named / sizeof *named; i++)
          if (e->t[i].var >= KL_RACE_NATOMS && e->t[i].var < KL_RACE_DERIVED)
            named[nnamed++] = e->t[i].var;
      } else if (pass == 1 && !coord && known) {
        acc->side.cons[acc->side.ncons++] = t->cons[c];
      }
    }
  if (matrix && !kl_tg_matrix_lanes(t, in, acc)) return false;
  acc->side.store = in->op == KL_IR_STORE || matrix == 2;
  int steps = KL_TG_STEPS;
  acc->scope = matrix ? KL_SCOPE_SIMDGROUP
               : acc->side.store && !in->sub && in->nops > 1
                   ? kl_tg_value_scope(t, in->ops[1], &steps)
                   : KL_SCOPE_THREAD;
  acc->matrix = matrix != 0;
  if (acc->side.store && !matrix && !in->sub && in->nops > 1) {
    /* A value every thread stores alike: such stores do not race with each other. */
    uint32_t x = kl_tg_strip(f, in->ops[1]);
    const struct kl_ir_ins *xi = &f->ins[x];
    if (xi->op == KL_IR_CONST)
      acc->side.same_value = kl_arena_printf(t->a, "i%lld", (long long)xi->imm);
    else if (xi->op == KL_IR_FCONST)
      acc->side.same_value = kl_arena_printf(t->a, "f%.17g", xi->fimm);
    else if (kl_tg_uniform(t, x))
      acc->side.same_value = kl_arena_printf(t->a, "v%u", kl_scev_leader(t->s, x));
  }
  return true;
}

/* ---- Open sets ------------------------------------------------------------------------------ */

static void kl_tg_add(struct kl_tg *t, struct kl_tg_set *s, struct kl_tg_open e) {
  for (uint32_t i = 0; i < s->n; i++) {
    const struct kl_tg_open *o = &s->e[i];
    if (o->acc == e.acc && o->cross == e.cross && o->simd == e.simd && !o->fence == !e.fence &&
        o->leave == e.leave)
      return;
  }
  if (s->n >= KL_TG_OPEN) return;
  KL_TG_PUSH(t, s->e, s->n, s->cap);
  s->e[s->n++] = e;
}

static void kl_tg_merge(struct kl_tg *t, struct kl_tg_set *into, const struct kl_tg_set *from) {
  for (uint32_t i = 0; i < from->n; i++) kl_tg_add(t, into, from->e[i]);
}

static struct kl_tg_set kl_tg_copy(struct kl_tg *t, const struct kl_tg_set *s) {
  struct kl_tg_set c = {NULL, 0, 0};
  if (s->n) {
    c.e = kl_arena_alloc(t->a, s->n * sizeof *c.e);
    memcpy(c.e, s->e, s->n * sizeof *c.e);
    c.n = c.cap = s->n;
  }
  return c;
}

static uint64_t kl_tg_mix(uint64_t k) { return (k + 1) * 0x9E3779B97F4A7C15u; }

static bool kl_tg_seen(struct kl_tg *t, uint32_t a, uint32_t b, bool mark) {
  uint64_t k = ((uint64_t)a << 32 | b) + 1;
  if (mark && (t->nseen + 1) * 2 > t->cap_seen) {
    size_t cap = t->cap_seen ? t->cap_seen * 2 : 64;
    uint64_t *n = kl_arena_alloc(t->a, cap * sizeof *n);
    memset(n, 0, cap * sizeof *n);
    for (size_t i = 0; i < t->cap_seen; i++) {
      if (!t->seen[i]) continue;
      size_t j = (size_t)(kl_tg_mix(t->seen[i]) >> 40) & (cap - 1);
      while (n[j]) j = (j + 1) & (cap - 1);
      n[j] = t->seen[i];
    }
    t->seen = n;
    t->cap_seen = cap;
  }
  if (!t->cap_seen) return false;
  size_t i = (size_t)(kl_tg_mix(k) >> 40) & (t->cap_seen - 1);
  while (t->seen[i] && t->seen[i] != k) i = (i + 1) & (t->cap_seen - 1);
  if (t->seen[i]) return true;
  if (mark) t->seen[i] = k, t->nseen++;
  return false;
}

/* Whether the value v, taken as the same for the threadgroup, is one kernlint can vouch for:
 * nothing on the way is a call of a function the unit does not define (which may hand each
 * thread its own value: a slot claimed through an atomic) or code the lowering does not model. */
static bool kl_tg_vouched(const struct kl_tg *t, uint32_t v, int *steps) {
  const struct kl_ir_fn *f = t->f;
  if (!v || v >= f->nins) return true;
  if (--*steps < 0) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  if ((in->op == KL_IR_CALL && !in->fn) || in->op == KL_IR_OPAQUE || in->op == KL_IR_ATOMIC ||
      in->op == KL_IR_UNDEF)
    return false;
  if (in->op == KL_IR_PHI) return in->sub == KL_IR_PHI_HEAD;
  for (uint32_t k = 0; k < in->nops; k++)
    if (!kl_tg_vouched(t, in->ops[k], steps)) return false;
  return true;
}

static bool kl_tg_form_vouched(const struct kl_tg *t, const struct kl_race_form *e) {
  for (uint8_t i = 0; i < e->n; i++) {
    uint16_t x = e->t[i].var;
    int steps = KL_TG_STEPS;
    if (x >= KL_RACE_NATOMS && x < KL_RACE_DERIVED &&
        !kl_tg_vouched(t, t->sym_val[x - KL_RACE_NATOMS], &steps))
      return false;
  }
  return true;
}

/* The thread coordinates (bits of KL_RACE_* atoms) the value v is computed from; all bits for
 * a value read from memory other than a device buffer, or not followed. */
static uint32_t kl_tg_value_atoms(const struct kl_tg *t, uint32_t v, int *steps) {
  const struct kl_ir_fn *f = t->f;
  if (!v || v >= f->nins) return 0;
  if (--*steps < 0) return ~0u;
  const struct kl_ir_ins *in = &f->ins[v];
  if (kl_scev_scope(t->s, v) <= KL_SCOPE_THREADGROUP) return 0;
  switch (in->op) {
  case KL_IR_COORD: {
    int atom = kl_race_coord_atom(in->coord ? in->coord->name : NULL, in->imm);
    return atom >= 0 ? 1u << atom : ~0u;
  }
  case KL_IR_LOAD: {
    if ((in->as != KL_AS_DEVICE && in->as != KL_AS_CONSTANT) || !in->nops) return ~0u;
    /* What is read depends on the subscripts alone: the buffer or table at the chain's root is
     * the same for every thread (`kv[lane % 16]` is computed from the lane). */
    uint32_t m = 0;
    for (uint32_t ad = in->ops[0]; m != ~0u;) {
      if (!ad || ad >= f->nins || --*steps < 0) return ~0u;
      const struct kl_ir_ins *x = &f->ins[ad];
      if (x->op == KL_IR_ALLOC || x->op == KL_IR_ARG) return m;
      if (x->op == KL_IR_INDEX && x->nops == 2)
        m |= kl_tg_value_atoms(t, x->ops[1], steps);
      else if ((x->op != KL_IR_MEMBER && x->op != KL_IR_CAST) || !x->nops)
        return m | kl_tg_value_atoms(t, ad, steps);
      ad = x->ops[0];
    }
    return m;
  }
  case KL_IR_BINOP:
  case KL_IR_UNOP:
  case KL_IR_CAST:
  case KL_IR_SELECT:
  case KL_IR_INDEX:
  case KL_IR_MEMBER: break;
  case KL_IR_CALL:
    if (!kl_tg_pure_call(in)) return ~0u;
    break;
  case KL_IR_OPAQUE:
    /* An element of a program-scope table (MSL's file-scope variables are all `constant`):
     * `kvalues[lane % 16]`, which the lowering leaves a subscript of the name. */
    if (in->nops < 2 || in->ops[0] >= f->nins || f->ins[in->ops[0]].op != KL_IR_SYMBOL ||
        ts_node_is_null(in->node) || strcmp(ts_node_type(in->node), "subscript_expression"))
      return ~0u;
    break;
  case KL_IR_SYMBOL: return 0;
  default: return ~0u;
  }
  uint32_t m = 0;
  for (uint32_t k = 0; k < in->nops && m != ~0u; k++)
    m |= kl_tg_value_atoms(t, in->ops[k], steps);
  return m;
}

/* Whether the store b writes one value wherever it writes one element: its index is one thread
 * coordinate (`row[lane]`, plus uniform terms) and its value is computed from that coordinate
 * alone (`row[lane] = float(lane)` by two SIMD groups). */
static bool kl_tg_value_of_index(const struct kl_tg *t, const struct kl_tg_acc *b) {
  const struct kl_ir_ins *in = &t->f->ins[b->ins];
  if (in->sub || in->nops < 2 || b->side.ndims != 1) return false;
  int atom = -1;
  const struct kl_race_form *e = &b->side.idx[0];
  for (uint8_t i = 0; i < e->n; i++) {
    uint16_t x = e->t[i].var;
    if (x >= KL_RACE_DERIVED) return false;
    if (x >= KL_RACE_NATOMS) continue;
    if (atom >= 0) return false;
    atom = x;
  }
  int steps = KL_TG_STEPS;
  return atom >= 0 && !(kl_tg_value_atoms(t, in->ops[1], &steps) & ~(1u << atom));
}

/* Whether the value v is computed from the value i alone (and from values alike in every thread):
 * a ranged store's `hist[k] = k`, or `s[k] = lut[k]`, stores one value wherever it writes one
 * element. */
static bool kl_tg_value_from(const struct kl_tg *t, uint32_t v, uint32_t i, int *steps) {
  const struct kl_ir_fn *f = t->f;
  v = kl_tg_strip(f, v);
  if (!v || v >= f->nins || v == i) return v == i;
  if (--*steps < 0) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  if (kl_scev_scope(t->s, v) <= KL_SCOPE_THREADGROUP) return true;
  switch (in->op) {
  case KL_IR_LOAD:
    /* A buffer or table read at subscripts computed from i. */
    if ((in->as != KL_AS_DEVICE && in->as != KL_AS_CONSTANT) || !in->nops) return false;
    for (uint32_t ad = in->ops[0];;) {
      if (!ad || ad >= f->nins || --*steps < 0) return false;
      const struct kl_ir_ins *x = &f->ins[ad];
      if (x->op == KL_IR_ALLOC || x->op == KL_IR_ARG) return true;
      if (x->op == KL_IR_INDEX && x->nops == 2) {
        if (!kl_tg_value_from(t, x->ops[1], i, steps)) return false;
      } else if ((x->op != KL_IR_MEMBER && x->op != KL_IR_CAST) || !x->nops) {
        return false;
      }
      ad = x->ops[0];
    }
  case KL_IR_BINOP:
  case KL_IR_UNOP:
  case KL_IR_SELECT: break;
  case KL_IR_CALL:
    if (!kl_tg_pure_call(in)) return false;
    break;
  default: return false;
  }
  for (uint32_t k = 0; k < in->nops; k++)
    if (!kl_tg_value_from(t, in->ops[k], i, steps)) return false;
  return true;
}

/* A function that tells its threads apart by the SIMD lane alone is written for a threadgroup
 * of one SIMD group (any other SIMD group would redo the same work at the same addresses): the
 * sample threadgroup is one SIMD group. */
static void kl_tg_lanes_tg(const struct kl_tg *t, struct kl_race_order *ord) {
  if (t->lanes_only && !(ord->tg[0] > 0 && ord->tg[0] <= 32 && ord->tg[1] <= 1 && ord->tg[2] <= 1))
    ord->tg[0] = 32, ord->tg[1] = ord->tg[2] = 1;
}

/* A store racing with itself: two threads that store to one element different values (a value
 * that varies between them, or a compound store such as `count[0]++`, which reads the element
 * first). A value alike within each SIMD group (a simd_sum) races only between two groups. */
static void kl_tg_self(struct kl_tg *t, uint32_t ai) {
  const struct kl_tg_acc *b = &t->accs[ai];
  if (!b->side.store || b->scope <= KL_SCOPE_THREADGROUP || kl_tg_seen(t, b->ins, b->ins, false))
    return;
  for (uint8_t d = 0; d < b->side.ndims; d++)
    if (!kl_tg_form_vouched(t, &b->side.idx[d])) return;
  if (kl_tg_value_of_index(t, b)) return;
  int steps = KL_TG_STEPS;
  const struct kl_ir_ins *in = &t->f->ins[b->ins];
  if (b->side.ranged && !in->sub && in->nops > 1 &&
      kl_tg_value_from(t, in->ops[1], kl_tg_strip(t->f, b->index), &steps))
    return;
  if (t->b) {
    if (!t->b->pairs) return;
    t->b->pairs--;
  }
  struct kl_race_side side = b->side;
  side.same_value = NULL;
  struct kl_race_order ord = {false, 0, 0, b->scope == KL_SCOPE_SIMDGROUP,
                              {t->tg[0], t->tg[1], t->tg[2]}, t->max_total};
  kl_tg_lanes_tg(t, &ord);
  if (!kl_race_meet_memo(&side, &side, &ord, t->syms, t->nsyms, t->der, t->nder,
                         t->b ? &t->b->valuations : NULL, t->b ? t->b->memo : NULL))
    return;
  kl_tg_seen(t, b->ins, b->ins, true);
  KL_TG_PUSH(t, t->out, t->nout, t->cap_out);
  t->out[t->nout++] =
      (struct kl_tgrace_pair){b->ins, b->ins, true, true, false, KL_IR_NONE, 0, false};
}

static void kl_tg_access(struct kl_tg *t, uint32_t v) {
  if (!t->acc_of[v]) {
    struct kl_tg_acc acc;
    if (!kl_tg_describe(t, v, &acc)) {
      t->acc_of[v] = -1;
      return;
    }
    KL_TG_PUSH(t, t->accs, t->naccs, t->cap_accs);
    t->accs[t->naccs++] = acc;
    t->acc_of[v] = (int32_t)t->naccs;
  }
  if (t->acc_of[v] < 0) return;
  uint32_t ai = (uint32_t)t->acc_of[v] - 1;
  for (uint32_t i = 0; i < t->cur.n; i++) {
    struct kl_tg_open o = t->cur.e[i];
    const struct kl_tg_acc *a = &t->accs[o.acc], *b = &t->accs[ai];
    if (a->key != b->key || (!a->side.store && !b->side.store)) continue;
    if (kl_tg_seen(t, a->ins, b->ins, false)) continue;
    if (t->b) {
      if (!t->b->pairs) break;
      t->b->pairs--;
    }
    struct kl_race_order ord = {o.cross != 0,
                                o.cross ? t->lo[o.cross] : 0,
                                o.cross ? t->hi[o.cross] : 0,
                                o.simd || a->matrix || b->matrix,
                                {t->tg[0], t->tg[1], t->tg[2]}, t->max_total};
    /* Round a back edge, a ranged side is certain only in a loop no thread leaves early. */
    if (o.cross && (a->side.ranged || b->side.ranged) && kl_loopexit_leaves(t->f, o.cross))
      continue;
    kl_tg_lanes_tg(t, &ord);
    bool wide = a->unit != b->unit || a->width != 1 || b->width != 1;
    if (wide ? !kl_tg_meet_wide(t, a, b, &ord)
             : !kl_race_meet_memo(&a->side, &b->side, &ord, t->syms, t->nsyms, t->der, t->nder,
                                  t->b ? &t->b->valuations : NULL, t->b ? t->b->memo : NULL))
      continue;
    /* Whether threads of two SIMD groups meet there too, or only lanes of one. */
    struct kl_race_order two = ord;
    two.simd_ordered = true;
    bool one_sg = !ord.simd_ordered &&
                  !(wide ? kl_tg_meet_wide(t, a, b, &two)
                         : kl_race_meet_memo(&a->side, &b->side, &two, t->syms, t->nsyms, t->der,
                                             t->nder, t->b ? &t->b->valuations : NULL,
                                             t->b ? t->b->memo : NULL));
    kl_tg_seen(t, a->ins, b->ins, true);
    KL_TG_PUSH(t, t->out, t->nout, t->cap_out);
    t->out[t->nout++] = (struct kl_tgrace_pair){
        a->ins, b->ins, a->side.store, b->side.store, o.cross != 0, o.cross, o.fence, one_sg};
  }
  kl_tg_self(t, ai);
  kl_tg_add(t, &t->cur, (struct kl_tg_open){ai, 0, 0, 0, false});
}

/* A barrier: one ordering threadgroup memory ends every open access; one that does not is noted
 * on them (the message says so); a simdgroup_barrier orders the threads of one SIMD group. */
static void kl_tg_barrier(struct kl_tg *t, uint32_t v) {
  const struct kl_ir_ins *in = &t->f->ins[v];
  bool orders = in->imm & KL_IR_MEM_THREADGROUP;
  bool weak = !orders && (in->imm & (KL_IR_MEM_DEVICE | KL_IR_MEM_TEXTURE));
  if (!orders && !weak && t->buf) {
    uint32_t s = ts_node_start_byte(in->node), e = ts_node_end_byte(in->node);
    for (uint32_t i = s; i + 8 <= e && !weak; i++) weak = !memcmp(t->buf + i, "mem_none", 8);
  }
  if (!orders && !weak) orders = true; /* flags kernlint cannot read: presumed right */
  if (in->fn && in->fn->barrier_scope == KL_SCOPE_THREADGROUP) {
    if (orders) {
      t->cur.n = 0;
      return;
    }
    for (uint32_t i = 0; i < t->cur.n; i++)
      if (!t->cur.e[i].fence) t->cur.e[i].fence = v;
    return;
  }
  if (orders)
    for (uint32_t i = 0; i < t->cur.n; i++) t->cur.e[i].simd = true;
}

/* ---- The walk ------------------------------------------------------------------------------- */

static bool kl_tg_block(struct kl_tg *t, uint32_t b, int depth);

/* *ax, *al: the exits an early exit's condition accounts for, which its block counts again. */
static bool kl_tg_if(struct kl_tg *t, uint32_t v, int depth, uint32_t *ax, uint32_t *al) {
  const struct kl_ir_ins *in = &t->f->ins[v];
  size_t c0 = t->ncons;
  uint32_t x0 = t->exits, l0 = t->leaves;
  struct kl_tg_set s0 = kl_tg_copy(t, &t->cur), s1 = {NULL, 0, 0};
  kl_tg_cond(t, in->ops[0], true, 0);
  bool live1 = !in->blk[0] || kl_tg_block(t, in->blk[0], depth + 1);
  t->ncons = c0;
  if (live1) s1 = t->cur;
  t->cur = s0;
  kl_tg_cond(t, in->ops[0], false, 0);
  bool live2 = !in->blk[1] || kl_tg_block(t, in->blk[1], depth + 1);
  t->ncons = c0;
  if (!live2) t->cur.n = 0;
  /* Where the condition is the loop's test for its next trip, computed again (`if (base < n)
   * barrier;` after `base += 64` in `while (base < n)`), the path on which it fails leaves the
   * loop at that test: what is open on it goes out, not round the back edge (kl_tg_cross). */
  for (size_t k = t->nframes; k-- > 0;)
    if (!t->frames[k].region) {
      if (kl_loopexit_next_test(t->f, t->frames[k].loop, in->ops[0]))
        for (uint32_t i = 0; i < t->cur.n; i++) t->cur.e[i].leave = t->frames[k].loop;
      break;
    }
  kl_tg_merge(t, &t->cur, &s1);
  /* `if (lid >= n) return;`: what follows runs where the condition does not hold. */
  if (!live1 && !in->blk[1]) {
    kl_tg_cond(t, in->ops[0], false, 0);
    *ax += t->exits - x0, *al += t->leaves - l0;
    t->exits = x0, t->leaves = l0; /* the condition says who is left */
  }
  return live1 || live2;
}

/* Take set s round loop's back edge; what leaves at the loop's test goes to out instead. */
static void kl_tg_cross(struct kl_tg *t, struct kl_tg_set *s, uint32_t loop,
                        struct kl_tg_set *out) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < s->n; i++) {
    struct kl_tg_open e = s->e[i];
    e.leave = e.leave == loop ? 0 : e.leave;
    if (e.leave != s->e[i].leave) {
      kl_tg_add(t, out, e);
      continue;
    }
    /* An outer loop's mark stays: its iterations hold this loop's whole run. */
    if (!e.cross || !kl_tg_inside(t, loop, e.cross)) e.cross = loop;
    s->e[n++] = e;
  }
  s->n = n;
}

static void kl_tg_loop(struct kl_tg *t, uint32_t v, int depth) {
  const struct kl_ir_ins *in = &t->f->ins[v];
  KL_TG_PUSH(t, t->frames, t->nframes, t->cap_frames);
  size_t fi = t->nframes++;
  memset(&t->frames[fi], 0, sizeof t->frames[fi]);
  t->frames[fi].loop = v;
  t->frames[fi].region = in->flags & KL_IR_F_REGION;
  size_t c0 = t->ncons;
  uint32_t l0 = t->leaves; /* those that leave this loop are back past it */
  if (in->flags & KL_IR_F_REGION) {
    bool live = true;
    for (int k = 0; k < 3 && live; k++)
      if (in->blk[k]) live = kl_tg_block(t, in->blk[k], depth + 1);
    if (!live) t->cur.n = 0;
    kl_tg_merge(t, &t->cur, &t->frames[fi].brk);
    kl_tg_merge(t, &t->cur, &t->frames[fi].cont);
    t->ncons = c0;
    t->leaves = l0;
    t->nframes--;
    return;
  }
  bool dowhile = in->flags & KL_IR_F_DO_WHILE;
  struct kl_tg_set pre = kl_tg_copy(t, &t->cur), exit = {NULL, 0, 0};
  /* A second pass meets the previous iteration's accesses: only a loop that makes some needs
   * one. At most KL_TG_TWICE loops around one another are walked twice, so that a deep nest
   * costs no more than twice per level of those: a loop with an access of its own, outermost
   * first, and one whose accesses are all in its nested loops only among the innermost
   * KL_TG_TWICE of the nest (a loop that only repeats its inner loops keeps no back edge they
   * do not). */
  uint8_t h = t->has_access[v];
  int passes =
      h && t->twice < KL_TG_TWICE && (t->direct[v] || h <= KL_TG_TWICE) ? 2 : 1;
  t->twice += passes == 2;
  for (int pass = 0; pass < passes; pass++) {
    bool live = !in->blk[0] || kl_tg_block(t, in->blk[0], depth + 1);
    if (!live) t->cur.n = 0;
    if (!dowhile) {
      kl_tg_merge(t, &exit, &t->cur);
      if (in->nops) kl_tg_cond(t, in->ops[0], true, 0);
    }
    live = !in->blk[1] || kl_tg_block(t, in->blk[1], depth + 1);
    if (!live) t->cur.n = 0;
    kl_tg_merge(t, &t->cur, &t->frames[fi].cont);
    t->frames[fi].cont.n = 0;
    live = !in->blk[2] || kl_tg_block(t, in->blk[2], depth + 1);
    if (!live) t->cur.n = 0;
    t->ncons = c0;
    if (dowhile) kl_tg_merge(t, &exit, &t->cur);
    /* Round the back edge into the next iteration, which also starts from the entry. */
    struct kl_tg_set end = kl_tg_copy(t, &t->cur);
    kl_tg_cross(t, &end, v, &exit);
    t->cur = kl_tg_copy(t, &pre);
    kl_tg_merge(t, &t->cur, &end);
  }
  t->twice -= passes == 2;
  kl_tg_merge(t, &exit, &t->frames[fi].brk);
  for (uint32_t i = 0; i < exit.n; i++) {
    if (exit.e[i].cross == v) exit.e[i].cross = 0;
    if (exit.e[i].leave == v) exit.e[i].leave = 0;
  }
  t->cur = exit;
  t->leaves = l0;
  t->nframes--;
}

static bool kl_tg_block(struct kl_tg *t, uint32_t b, int depth) {
  const struct kl_ir_fn *f = t->f;
  if (!b || b >= f->nblocks || depth > 64) return true;
  size_t c0 = t->ncons;
  uint32_t ax = 0, al = 0;
  bool live = true;
  const struct kl_ir_block *bl = &f->blocks[b];
  for (uint32_t i = 0; i < bl->n && live; i++) {
    uint32_t v = bl->ins[i];
    const struct kl_ir_ins *in = &f->ins[v];
    switch (in->op) {
    case KL_IR_LOAD:
    case KL_IR_STORE:
    case KL_IR_CALL:
      if (kl_tg_is_access(f, v)) kl_tg_access(t, v);
      break;
    case KL_IR_BARRIER: kl_tg_barrier(t, v); break;
    case KL_IR_IF: live = kl_tg_if(t, v, depth, &ax, &al); break;
    case KL_IR_LOOP: kl_tg_loop(t, v, depth); break;
    case KL_IR_BREAK:
    case KL_IR_CONTINUE:
      t->leaves++;
      if (t->nframes) {
        struct kl_tg_frame *fr = &t->frames[t->nframes - 1];
        kl_tg_merge(t, in->op == KL_IR_BREAK ? &fr->brk : &fr->cont, &t->cur);
      }
      t->cur.n = 0;
      live = false;
      break;
    case KL_IR_RETURN: {
      /* In a helper with an early return: to the end of its region; in the kernel: done. */
      size_t k = t->nframes;
      while (in->site && k > 0 && !t->frames[k - 1].region) k--;
      if (in->site && !k) break; /* a helper's last return: it falls through */
      t->exits++;
      if (in->site) kl_tg_merge(t, &t->frames[k - 1].brk, &t->cur);
      t->cur.n = 0;
      live = false;
      break;
    }
    default: break;
    }
  }
  /* The conditions of early exits go with the block: past it, the threads that left are
   * unaccounted for again. */
  t->ncons = c0;
  t->exits += ax, t->leaves += al;
  return live;
}

size_t kl_tgrace_run(struct kl_arena *a, const struct kl_ir_fn *f, const struct kl_scev *s,
                     const char *buf, const int64_t tg[3], int64_t max_total,
                     struct kl_tgrace_budget *b, struct kl_tgrace_pair **out) {
  *out = NULL;
  bool any = false;
  for (uint32_t v = 1; v < f->nins && !any; v++)
    any = kl_tg_is_access(f, v);
  if (!any) return 0;
  struct kl_tg *t = kl_arena_alloc(a, sizeof *t); /* cleared, as every array below */
  t->a = a;
  t->f = f;
  t->s = s;
  t->buf = buf;
  t->b = b;
  for (int c = 0; tg && c < 3; c++) t->tg[c] = tg[c];
  t->max_total = max_total;
  size_t n = f->nins + 1;
  t->lo = kl_arena_alloc(a, n * sizeof *t->lo);
  t->hi = kl_arena_alloc(a, n * sizeof *t->hi);
  t->depth = kl_arena_alloc(a, n * sizeof *t->depth);
  t->loop_of = kl_arena_alloc(a, n * sizeof *t->loop_of);
  t->varies = kl_arena_alloc(a, n * sizeof *t->varies);
  t->form = kl_arena_alloc(a, n * sizeof *t->form);
  t->formed = kl_arena_alloc(a, n * sizeof *t->formed);
  t->sym_of = kl_arena_alloc(a, n * sizeof *t->sym_of);
  t->acc_of = kl_arena_alloc(a, n * sizeof *t->acc_of);
  t->has_access = kl_arena_alloc(a, n * sizeof *t->has_access);
  t->direct = kl_arena_alloc(a, n);
  kl_tg_shape(t, f->body, 0, 0);
  t->lanes_only = true;
  for (uint32_t v = 1; v < f->nins && t->lanes_only; v++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if (in->op != KL_IR_COORD || !in->coord) continue;
    int atom = kl_race_coord_atom(in->coord ? in->coord->name : NULL, in->imm);
    t->lanes_only = atom == KL_RACE_LANE || atom == KL_RACE_QLANE ||
                    (atom < 0 && in->coord->scope <= KL_SCOPE_THREADGROUP);
  }
  /* An access in a helper's region is the enclosing loop's own. */
  for (uint32_t v = 1; v < f->nins; v++) {
    if (f->ins[v].op != KL_IR_LOOP || !(f->ins[v].flags & KL_IR_F_REGION) || !t->direct[v])
      continue;
    uint32_t u = t->loop_of[v];
    while (u && (f->ins[u].flags & KL_IR_F_REGION)) u = t->loop_of[u];
    if (u) t->direct[u] = 1;
  }
  kl_tg_block(t, f->body, 0);
  *out = t->out;
  return t->nout;
}
