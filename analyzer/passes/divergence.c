/* Explaining divergent control over the IR (see divergence.h). */
#include "analyzer/passes/divergence.h"

#include <ctype.h>
#include <string.h>

/* Constructs around an instruction, at most this deep, and candidates kept. */
enum { KL_DIV_MAX_NEST = 64, KL_DIV_MAX_CANDS = 2 * KL_DIV_MAX_NEST + 2 };

struct kl_div_cand {
  enum kl_divergence_kind kind;
  enum kl_scope scope;
  bool back_edge;
  uint32_t branch, cond_at;
};

static uint32_t kl_div_parent(const struct kl_ir_fn *f, uint32_t v) {
  return f->blocks[f->ins[v].block].parent;
}

/* The loop an exit of v's leaves: the innermost enclosing LOOP, or 0 when that is an inlined
 * helper's region (a break or continue never leaves a helper, so an exit whose innermost LOOP is
 * a region is the BREAK that ends the helper's body, which leaves no loop of the caller's). */
static uint32_t kl_div_loop_of(const struct kl_ir_fn *f, uint32_t v) {
  for (uint32_t p = kl_div_parent(f, v), guard = 0; p && guard < f->nins; guard++) {
    if (f->ins[p].op == KL_IR_LOOP) return f->ins[p].flags & KL_IR_F_REGION ? 0 : p;
    p = kl_div_parent(f, p);
  }
  return 0;
}

/* Position of instruction x in its block. */
static uint32_t kl_div_pos(const struct kl_ir_fn *f, uint32_t x) {
  const struct kl_ir_block *b = &f->blocks[f->ins[x].block];
  for (uint32_t i = 0; i < b->n; i++)
    if (b->ins[i] == x) return i;
  return UINT32_MAX;
}

/* The ancestor of v (v itself, or the IF or LOOP around it) that sits in block b, or 0. */
static uint32_t kl_div_anc(const struct kl_ir_fn *f, uint32_t v, uint32_t b) {
  for (uint32_t u = v, guard = 0; u && guard < f->nins; guard++) {
    if (f->ins[u].block == b) return u;
    u = kl_div_parent(f, u);
  }
  return 0;
}

/* Whether a thread that leaves at exit e would otherwise go on to reach ins within the same pass
 * over the code around both: e comes first in the innermost block holding both, or both sit in
 * two blocks of one LOOP in order (body, then latch). Two branches of one IF never reach each
 * other. */
static bool kl_div_reaches(const struct kl_ir_fn *f, uint32_t e, uint32_t ins) {
  for (uint32_t u = e, guard = 0; u && guard < f->nins; guard++) {
    uint32_t b = f->ins[u].block, other = kl_div_anc(f, ins, b);
    if (other) {
      if (other != u) return kl_div_pos(f, u) < kl_div_pos(f, other);
      return f->ins[u].op == KL_IR_LOOP && e < ins;
    }
    u = kl_div_parent(f, u);
  }
  return false;
}

/* The innermost IF around exit e, inside its own loop (or anywhere for a return), whose
 * condition is wider than allowed: the condition the exit depends on. */
static uint32_t kl_div_if_around(const struct kl_uniformity *u, uint32_t e, uint32_t stop,
                                 enum kl_scope allowed) {
  const struct kl_ir_fn *f = u->fn;
  for (uint32_t p = kl_div_parent(f, e), guard = 0; p && p != stop && guard < f->nins; guard++) {
    const struct kl_ir_ins *pi = &f->ins[p];
    if (pi->op == KL_IR_IF && pi->nops && kl_uniformity_value(u, pi->ops[0]) > allowed) return p;
    p = kl_div_parent(f, p);
  }
  return 0;
}

/* Whether name occurs as a whole word in buf[s, e). */
static bool kl_div_in_text(const char *buf, uint32_t s, uint32_t e, const char *name) {
  size_t n = strlen(name);
  if (!buf || !n) return false;
  for (uint32_t k = s; k + n <= e; k++) {
    if (memcmp(buf + k, name, n)) continue;
    unsigned char b = k > s ? (unsigned char)buf[k - 1] : ' ';
    unsigned char a = k + n < e ? (unsigned char)buf[k + n] : ' ';
    if (!isalnum(b) && b != '_' && !isalnum(a) && a != '_') return true;
  }
  return false;
}

/* Where a condition's text is, to name values by what it says. */
struct kl_div_text {
  const char *buf;
  uint32_t s, e;
};

/* The name a message gives for value v: one the condition's text says, among the parameter it
 * is, its symbol and the names it was copied into (`const uint row = gid.z;`); failing that, the
 * first of them, a coordinate MLX declares (named by its attribute) last. *order ranks names by
 * declaration (parameters first). */
static const char *kl_div_name(const struct kl_ir_fn *f, uint32_t v, const struct kl_div_text *t,
                               uint32_t *order) {
  const struct kl_ir_ins *in = &f->ins[v];
  const char *names[8];
  uint32_t orders[8];
  size_t n = 0;
  bool implicit = in->op == KL_IR_COORD && in->coord && in->var && in->var->name &&
                  !strcmp(in->var->name, in->coord->name);
  if ((in->op == KL_IR_COORD || in->op == KL_IR_ARG) && in->var && in->var->name && !implicit)
    names[n] = in->var->name, orders[n++] = 0;
  if (in->sym && in->sym < f->nsyms && f->syms[in->sym].name)
    names[n] = f->syms[in->sym].name, orders[n++] = in->sym;
  for (uint32_t i = 0; i < f->nalias && n < 7; i++) {
    uint32_t s = f->alias_sym[i];
    if (f->alias_val[i] == v && s < f->nsyms && f->syms[s].name)
      names[n] = f->syms[s].name, orders[n++] = s;
  }
  if (implicit && n < 8) names[n] = in->var->name, orders[n++] = 0;
  /* A field of a local struct: `p.a`. */
  uint32_t m = in->op == KL_IR_LOAD && in->nops ? in->ops[0] : 0;
  if (!n && m && f->ins[m].op == KL_IR_MEMBER && f->ins[m].name && f->ins[m].nops) {
    const struct kl_ir_ins *r = &f->ins[f->ins[m].ops[0]];
    const char *base = r->op == KL_IR_ALLOC && r->sym && r->sym < f->nsyms ? f->syms[r->sym].name
                                                                           : NULL;
    if (base) {
      names[n] = kl_arena_printf(f->arena, "%s.%s", base, f->ins[m].name);
      orders[n++] = r->sym;
    }
  }
  if (!n) return NULL;
  for (size_t i = 0; t && i < n; i++)
    if (kl_div_in_text(t->buf, t->s, t->e, names[i])) {
      *order = orders[i];
      return names[i];
    }
  *order = orders[0] + (t ? 0x40000000u : 0); /* a name the text does not say ranks last */
  return names[0];
}

/* The earliest-declared named value in v's operands, not looking past a named one, whose scope
 * is above allowed; failing that, a coordinate. Depth-limited: conditions are small. */
static void kl_div_var_walk(const struct kl_uniformity *u, uint32_t v, enum kl_scope allowed,
                            const struct kl_div_text *t, int depth, const char **best,
                            uint32_t *best_order, const char **coord) {
  const struct kl_ir_fn *f = u->fn;
  if (!v || v >= f->nins || depth > 8) return;
  uint32_t order;
  const char *name = depth ? kl_div_name(f, v, t, &order) : NULL;
  if (name) {
    if (kl_uniformity_value(u, v) > allowed && (!*best || order < *best_order)) {
      *best = name;
      *best_order = order;
    }
    if (f->ins[v].op == KL_IR_COORD && !*coord) *coord = name;
    return;
  }
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_PHI) return;
  for (uint32_t k = 0; k < in->nops; k++)
    kl_div_var_walk(u, in->ops[k], allowed, t, depth + 1, best, best_order, coord);
}

static const char *kl_div_var(const struct kl_uniformity *u, uint32_t cond, TSNode at,
                              const char *buf, enum kl_scope allowed) {
  bool have = buf && !ts_node_is_null(at);
  struct kl_div_text text = {buf, have ? ts_node_start_byte(at) : 0,
                             have ? ts_node_end_byte(at) : 0};
  const struct kl_div_text *t = have ? &text : NULL;
  uint32_t o;
  /* A condition that is itself a named value (`if (ok)`). */
  const char *self = kl_div_name(u->fn, cond, t, &o);
  if (self && kl_uniformity_value(u, cond) > allowed) return self;
  const char *best = NULL, *coord = NULL;
  uint32_t order = UINT32_MAX;
  kl_div_var_walk(u, cond, allowed, t, 0, &best, &order, &coord);
  return best ? best : coord;
}

/* The exits of loop l that make it diverge (a break, or a return, under control wider than
 * allowed): the widest, for a loop whose own condition is uniform. */
static uint32_t kl_div_loop_exit(const struct kl_uniformity *u, uint32_t l, enum kl_scope allowed) {
  const struct kl_ir_fn *f = u->fn;
  uint32_t best = 0;
  enum kl_scope bs = allowed;
  for (uint32_t e = l + 1; e < f->nins; e++) {
    uint8_t op = f->ins[e].op;
    if (op != KL_IR_BREAK && op != KL_IR_RETURN) continue;
    if (!kl_ir_within(f, e, f->ins[l].blk[1]) && !kl_ir_within(f, e, f->ins[l].blk[2])) continue;
    if (op == KL_IR_BREAK && kl_div_loop_of(f, e) != l) continue;
    enum kl_scope s = kl_uniformity_control(u, e);
    if (s > bs) bs = s, best = e;
  }
  return best;
}

/* Whether v sits in a branch no thread takes in this lowering: under an IF whose condition is a
 * constant that rules its block out, or in the body of a LOOP whose condition is constant false
 * (a specialisation's `if (needs_reduction)` with needs_reduction = false). */
bool kl_divergence_dead(const struct kl_ir_fn *f, uint32_t v) {
  for (uint32_t u = v, guard = 0; u && guard < f->nins; guard++) {
    uint32_t b = f->ins[u].block, p = f->blocks[b].parent;
    if (!p) return false;
    const struct kl_ir_ins *pi = &f->ins[p];
    int64_t c;
    if (pi->op == KL_IR_IF && pi->nops && kl_ir_const(f, pi->ops[0], &c) &&
        ((c && pi->blk[1] == b) || (!c && pi->blk[0] == b)))
      return true;
    if (pi->op == KL_IR_LOOP && !(pi->flags & (KL_IR_F_REGION | KL_IR_F_DO_WHILE)) && pi->nops &&
        pi->blk[0] != b && kl_ir_const(f, pi->ops[0], &c) && !c)
      return true;
    u = p;
  }
  return false;
}

/* The candidates of one frame: the code of inlined call `site` (0: the kernel) around ins. */
struct kl_div_frame {
  struct kl_div_cand ret;          /* its widest earlier return reaching ins (kind NONE: none) */
  struct kl_div_cand c[KL_DIV_MAX_CANDS]; /* its constructs around ins, outermost first */
  size_t n;
  enum kl_scope top;               /* the widest of them all */
};

static void kl_div_frame(const struct kl_uniformity *u, uint32_t ins, uint32_t site,
                         enum kl_scope allowed, const uint32_t *chain, size_t nchain,
                         const uint32_t *exits, size_t nexits, struct kl_div_frame *fr) {
  const struct kl_ir_fn *f = u->fn;
  /* c[] is read only up to n: clearing the whole array (130 entries) per frame cost more than
   * the search. */
  fr->ret = (struct kl_div_cand){0};
  fr->n = 0;
  fr->top = KL_SCOPE_UNIFORM;
  for (size_t i = nchain; i-- > 0 && fr->n + 2 <= KL_DIV_MAX_CANDS;) {
    uint32_t p = chain[i];
    const struct kl_ir_ins *pi = &f->ins[p];
    if (pi->site != site) continue;
    uint32_t cond = pi->nops ? pi->ops[0] : 0;
    if (pi->op == KL_IR_IF) {
      enum kl_scope s = cond ? kl_uniformity_value(u, cond) : KL_SCOPE_UNIFORM;
      if (s > allowed) fr->c[fr->n++] = (struct kl_div_cand){KL_DIV_BRANCH, s, false, p, p};
      continue;
    }
    if (pi->op != KL_IR_LOOP || (pi->flags & KL_IR_F_REGION)) continue;
    /* A break or continue earlier in this iteration ranks just inside its loop. */
    uint32_t best = 0;
    enum kl_scope bs = allowed;
    for (size_t x = 0; x < nexits; x++) {
      uint32_t e = exits[x];
      uint8_t op = f->ins[e].op;
      if (e <= p || (op != KL_IR_BREAK && op != KL_IR_CONTINUE) || kl_div_loop_of(f, e) != p)
        continue;
      enum kl_scope es = kl_uniformity_control(u, e);
      if (es > bs && kl_div_reaches(f, e, ins)) bs = es, best = e;
    }
    enum kl_scope s = cond ? kl_uniformity_value(u, cond) : KL_SCOPE_UNIFORM;
    if (s > allowed) {
      fr->c[fr->n++] = (struct kl_div_cand){KL_DIV_LOOP, s, false, p, p};
    } else {
      uint32_t body = pi->blk[1];
      enum kl_scope raised = body ? (enum kl_scope)u->block_ctl[body] : KL_SCOPE_UNIFORM;
      if (raised > allowed && raised > kl_uniformity_control(u, p)) {
        uint32_t e = kl_div_loop_exit(u, p, allowed);
        /* A return in the loop leaves for good: the message says so. A break that already
         * comes before ins in this iteration explains it there (below). */
        bool ret = e && f->ins[e].op == KL_IR_RETURN;
        if (e && e != best)
          fr->c[fr->n++] =
              (struct kl_div_cand){ret ? KL_DIV_RETURN : KL_DIV_LOOP, raised, !ret, e,
                                   kl_div_if_around(u, e, ret ? 0 : p, allowed)};
      }
    }
    if (best)
      fr->c[fr->n++] = (struct kl_div_cand){KL_DIV_EXIT, bs, false, best,
                                            kl_div_if_around(u, best, p, allowed)};
  }
  /* Its widest earlier return that reaches ins (the first of equals). */
  enum kl_scope rs = allowed;
  for (size_t x = 0; x < nexits; x++) {
    uint32_t r = exits[x];
    if (f->ins[r].op != KL_IR_RETURN || f->ins[r].site != site || kl_divergence_dead(f, r))
      continue;
    enum kl_scope s = kl_uniformity_control(u, r);
    if (s > rs && kl_div_reaches(f, r, ins)) {
      rs = s;
      fr->ret = (struct kl_div_cand){KL_DIV_RETURN, s, false, r,
                                     kl_div_if_around(u, r, 0, allowed)};
    }
  }
  fr->top = fr->ret.kind ? fr->ret.scope : KL_SCOPE_UNIFORM;
  for (size_t i = 0; i < fr->n; i++)
    if (fr->c[i].scope > fr->top) fr->top = fr->c[i].scope;
}

/* Pick the cause for ins as seen from frame `at` of the chain of frames (frames[0] is ins's own,
 * each next one its caller): the frame's own return; else what its caller's code around the
 * call explains (one entry, outermost, as wide as everything above); else the frame's own
 * constructs, outermost first. NULL when nothing here is as wide as want. */
static const struct kl_div_cand *kl_div_pick(const struct kl_div_frame *frames, size_t nframes,
                                             size_t at, enum kl_scope want) {
  const struct kl_div_frame *fr = &frames[at];
  if (fr->ret.kind && fr->ret.scope >= want) return &fr->ret;
  if (at + 1 < nframes) {
    enum kl_scope above = KL_SCOPE_UNIFORM;
    for (size_t k = at + 1; k < nframes; k++)
      if (frames[k].top > above) above = frames[k].top;
    if (above >= want) {
      const struct kl_div_cand *c = kl_div_pick(frames, nframes, at + 1, above);
      if (c) return c;
    }
  }
  for (size_t i = 0; i < fr->n; i++)
    if (fr->c[i].scope >= want) return &fr->c[i];
  return NULL;
}

/* The scope v would have with value `skip` uniform: through arithmetic only. */
static enum kl_scope kl_div_scope_without(const struct kl_uniformity *u, uint32_t v, uint32_t skip,
                                          int depth) {
  const struct kl_ir_fn *f = u->fn;
  if (!v || v == skip) return KL_SCOPE_UNIFORM;
  const struct kl_ir_ins *in = &f->ins[v];
  bool arith = in->op == KL_IR_BINOP || in->op == KL_IR_UNOP || in->op == KL_IR_CAST ||
               in->op == KL_IR_SELECT;
  if (!arith || depth > 8) return kl_uniformity_value(u, v);
  enum kl_scope s = KL_SCOPE_UNIFORM;
  for (uint32_t k = 0; k < in->nops; k++) {
    enum kl_scope o = kl_div_scope_without(u, in->ops[k], skip, depth + 1);
    if (o > s) s = o;
  }
  return s;
}

/* In a loop's condition, the value carried from the previous iteration that alone makes it
 * diverge: a header PHI of loop l on the condition's operands whose entry value is uniform over
 * allowed and whose back-edge value is not. */
static uint32_t kl_div_carried(const struct kl_uniformity *u, uint32_t v, uint32_t l,
                               enum kl_scope allowed, int depth) {
  const struct kl_ir_fn *f = u->fn;
  if (!v || v >= f->nins || depth > 8) return 0;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_PHI) {
    if (in->sub != KL_IR_PHI_HEAD || in->ref_ins != l || in->nops < 2) return 0;
    if (kl_uniformity_value(u, in->ops[0]) <= allowed &&
        kl_uniformity_value(u, in->ops[1]) > allowed)
      return in->ops[1];
    return 0;
  }
  for (uint32_t k = 0; k < in->nops; k++) {
    uint32_t c = kl_div_carried(u, in->ops[k], l, allowed, depth + 1);
    if (c) return c;
  }
  return 0;
}

void kl_divergence_explain(const struct kl_uniformity *u, uint32_t ins, enum kl_scope allowed,
                           const char *buf, struct kl_divergence *out) {
  memset(out, 0, sizeof *out);
  const struct kl_ir_fn *f = u->fn;
  if (!ins || ins >= f->nins || kl_divergence_dead(f, ins)) return;
  enum kl_scope ctrl = kl_uniformity_control(u, ins);
  if (ctrl <= allowed) return;
  uint32_t chain[KL_DIV_MAX_NEST];
  size_t nchain = 0;
  for (uint32_t p = kl_div_parent(f, ins), guard = 0;
       p && guard < f->nins && nchain < KL_DIV_MAX_NEST; guard++) {
    chain[nchain++] = p;
    p = kl_div_parent(f, p);
  }
  /* The exits before ins (uniformity lists them in order). */
  const uint32_t *exits = u->exits;
  size_t nexits = 0;
  while (nexits < u->nexits && exits[nexits] < ins) nexits++;
  /* Frames from ins's own inlined call out to the kernel. */
  enum { KL_DIV_MAX_FRAMES = 16 };
  /* As many frames as calls around ins, not cleared: kl_div_frame sets what is read of one. */
  size_t want_frames = 0;
  uint32_t site = f->ins[ins].site;
  for (uint32_t depth = 0; want_frames < KL_DIV_MAX_FRAMES && depth <= f->nsites; depth++) {
    want_frames++;
    if (!site || site >= f->nsites) break;
    site = f->sites[site].parent;
  }
  struct kl_div_frame *frames = kl_arena_alloc_raw(f->arena, want_frames * sizeof *frames);
  size_t nframes = 0;
  site = f->ins[ins].site;
  for (uint32_t depth = 0; nframes < KL_DIV_MAX_FRAMES && depth <= f->nsites; depth++) {
    kl_div_frame(u, ins, site, allowed, chain, nchain, exits, nexits, &frames[nframes++]);
    if (!site || site >= f->nsites) break;
    site = f->sites[site].parent;
  }
  enum kl_scope top = KL_SCOPE_UNIFORM;
  for (size_t k = 0; k < nframes; k++)
    if (frames[k].top > top) top = frames[k].top;
  enum kl_scope want = top >= ctrl ? ctrl : (enum kl_scope)(allowed + 1);
  const struct kl_div_cand *pick = kl_div_pick(frames, nframes, 0, want);
  if (!pick) return;
  out->kind = pick->kind;
  out->back_edge = pick->back_edge;
  out->branch = pick->branch;
  out->cond_at = pick->cond_at;
  if (pick->kind == KL_DIV_LOOP && !pick->back_edge && f->ins[pick->branch].nops) {
    uint32_t cond = f->ins[pick->branch].ops[0];
    uint32_t c = kl_div_carried(u, cond, pick->branch, allowed, 0);
    /* Only when nothing else in the condition diverges. */
    if (c) {
      uint32_t phi = 0;
      for (uint32_t v = pick->branch + 1; v < f->nins && !phi; v++)
        if (f->ins[v].op == KL_IR_PHI && f->ins[v].sub == KL_IR_PHI_HEAD &&
            f->ins[v].ref_ins == pick->branch && f->ins[v].nops >= 2 && f->ins[v].ops[1] == c)
          phi = v;
      if (phi && kl_div_scope_without(u, cond, phi, 0) <= allowed) {
        out->carried = c;
        out->carried_at = f->ins[c].node;
        /* Defined under another name (`end`) and assigned to the condition's (`n = end;`). */
        uint32_t sym = f->ins[phi].sym;
        for (uint32_t i = 0; sym && f->ins[c].sym != sym && i < f->nalias; i++)
          if (f->alias_val[i] == c && f->alias_sym[i] == sym && f->alias_at &&
              !ts_node_is_null(f->alias_at[i]))
            out->carried_at = f->alias_at[i];
      }
    }
  }
  if (pick->cond_at && f->ins[pick->cond_at].nops) {
    TSNode at = f->ins[pick->cond_at].node;
    TSNode c = ts_node_is_null(at) ? at : ts_node_child_by_field_name(at, "condition", 9);
    out->var = kl_div_var(u, f->ins[pick->cond_at].ops[0], ts_node_is_null(c) ? at : c, buf,
                          allowed);
  }
}
