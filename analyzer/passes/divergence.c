/* Explaining divergent control over the IR (see divergence.h). */
#include "analyzer/passes/divergence.h"

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

/* Whether site s is anc or is called, at any depth, from within anc. */
static bool kl_div_site_within(const struct kl_ir_fn *f, uint32_t s, uint32_t anc) {
  for (uint32_t depth = 0; depth <= f->nsites; depth++) {
    if (s == anc) return true;
    if (s == 0 || s >= f->nsites) return false;
    s = f->sites[s].parent;
  }
  return false;
}

/* The loop an exit of v's leaves: the innermost enclosing LOOP that is not an inlined helper's
 * region, or 0. */
static uint32_t kl_div_loop_of(const struct kl_ir_fn *f, uint32_t v) {
  for (uint32_t p = kl_div_parent(f, v), guard = 0; p && guard < f->nins; guard++) {
    if (f->ins[p].op == KL_IR_LOOP && !(f->ins[p].flags & KL_IR_F_REGION)) return p;
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

/* The name a message gives for value v: its symbol's, or a parameter's. */
static const char *kl_div_name(const struct kl_ir_fn *f, uint32_t v, uint32_t *order) {
  const struct kl_ir_ins *in = &f->ins[v];
  /* A coordinate MLX declares (named by its attribute) is better named by the local the
   * source copies it into. */
  bool implicit = in->op == KL_IR_COORD && in->coord && in->var && in->var->name &&
                  !strcmp(in->var->name, in->coord->name);
  if ((in->op == KL_IR_COORD || in->op == KL_IR_ARG) && in->var && in->var->name && !implicit) {
    *order = 0;
    return in->var->name;
  }
  if (in->sym && in->sym < f->nsyms && f->syms[in->sym].name) {
    *order = in->sym;
    return f->syms[in->sym].name;
  }
  for (uint32_t i = 0; i < f->nalias; i++) {
    uint32_t s = f->alias_sym[i];
    if (f->alias_val[i] == v && s < f->nsyms && f->syms[s].name) {
      *order = s;
      return f->syms[s].name;
    }
  }
  if (implicit) {
    *order = 0;
    return in->var->name;
  }
  return NULL;
}

/* The earliest-declared named value in v's operands, not looking past a named one, whose scope
 * is above allowed (coordinates first: they are the kernel's parameters); failing that, a
 * coordinate. Depth-limited: conditions are small. */
static void kl_div_var_walk(const struct kl_uniformity *u, uint32_t v, enum kl_scope allowed,
                            int depth, const char **best, uint32_t *best_order,
                            const char **coord) {
  const struct kl_ir_fn *f = u->fn;
  if (!v || v >= f->nins || depth > 8) return;
  uint32_t order;
  const char *name = depth ? kl_div_name(f, v, &order) : NULL;
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
    kl_div_var_walk(u, in->ops[k], allowed, depth + 1, best, best_order, coord);
}

static const char *kl_div_var(const struct kl_uniformity *u, uint32_t cond,
                              enum kl_scope allowed) {
  uint32_t o;
  /* A condition that is itself a named value (`if (ok)`). */
  const char *self = kl_div_name(u->fn, cond, &o);
  if (self && kl_uniformity_value(u, cond) > allowed) return self;
  const char *best = NULL, *coord = NULL;
  uint32_t order = UINT32_MAX;
  kl_div_var_walk(u, cond, allowed, 0, &best, &order, &coord);
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

void kl_divergence_explain(const struct kl_uniformity *u, uint32_t ins, enum kl_scope allowed,
                           struct kl_divergence *out) {
  memset(out, 0, sizeof *out);
  const struct kl_ir_fn *f = u->fn;
  if (!ins || ins >= f->nins) return;
  enum kl_scope ctrl = kl_uniformity_control(u, ins);
  if (ctrl <= allowed) return;
  struct kl_div_cand c[KL_DIV_MAX_CANDS];
  size_t n = 0;
  /* The enclosing constructs, innermost first, then reversed. */
  uint32_t chain[KL_DIV_MAX_NEST];
  size_t nchain = 0;
  for (uint32_t p = kl_div_parent(f, ins), guard = 0;
       p && guard < f->nins && nchain < KL_DIV_MAX_NEST; guard++) {
    chain[nchain++] = p;
    p = kl_div_parent(f, p);
  }
  for (size_t i = nchain; i-- > 0;) {
    uint32_t p = chain[i];
    const struct kl_ir_ins *pi = &f->ins[p];
    uint32_t cond = pi->nops ? pi->ops[0] : 0;
    if (pi->op == KL_IR_IF) {
      enum kl_scope s = cond ? kl_uniformity_value(u, cond) : KL_SCOPE_UNIFORM;
      if (s > allowed) c[n++] = (struct kl_div_cand){KL_DIV_BRANCH, s, false, p, p};
      continue;
    }
    if (pi->op != KL_IR_LOOP || (pi->flags & KL_IR_F_REGION)) continue;
    enum kl_scope s = cond ? kl_uniformity_value(u, cond) : KL_SCOPE_UNIFORM;
    if (s > allowed) {
      c[n++] = (struct kl_div_cand){KL_DIV_LOOP, s, false, p, p};
    } else {
      uint32_t body = pi->blk[1];
      enum kl_scope raised = body ? (enum kl_scope)u->block_ctl[body] : KL_SCOPE_UNIFORM;
      if (raised > allowed && raised > kl_uniformity_control(u, p)) {
        uint32_t e = kl_div_loop_exit(u, p, allowed);
        if (e)
          c[n++] = (struct kl_div_cand){KL_DIV_LOOP, raised, true, e,
                                        kl_div_if_around(u, e, p, allowed)};
      }
    }
    /* A break or continue earlier in this iteration ranks just inside its loop. */
    uint32_t best = 0;
    enum kl_scope bs = allowed;
    for (uint32_t e = p + 1; e < ins; e++) {
      uint8_t op = f->ins[e].op;
      if ((op != KL_IR_BREAK && op != KL_IR_CONTINUE) || kl_div_loop_of(f, e) != p) continue;
      enum kl_scope es = kl_uniformity_control(u, e);
      if (es > bs && kl_div_reaches(f, e, ins)) bs = es, best = e;
    }
    if (best)
      c[n++] = (struct kl_div_cand){KL_DIV_EXIT, bs, false, best,
                                    kl_div_if_around(u, best, p, allowed)};
  }
  /* The widest earlier return that reaches ins: one of the kernel's, or of a helper ins is in. */
  uint32_t ret = 0;
  enum kl_scope rs = allowed;
  for (uint32_t r = 1; r < ins; r++) {
    if (f->ins[r].op != KL_IR_RETURN || !kl_div_site_within(f, f->ins[ins].site, f->ins[r].site))
      continue;
    enum kl_scope s = kl_uniformity_control(u, r);
    if (s > rs && kl_div_reaches(f, r, ins)) rs = s, ret = r;
  }
  enum kl_scope want = ctrl;
  bool any = ret && rs >= want;
  for (size_t i = 0; i < n && !any; i++) any = c[i].scope >= want;
  if (!any) want = (enum kl_scope)(allowed + 1);
  const struct kl_div_cand *pick = NULL;
  struct kl_div_cand rc;
  if (ret && rs >= want) {
    rc = (struct kl_div_cand){KL_DIV_RETURN, rs, false, ret, kl_div_if_around(u, ret, 0, allowed)};
    pick = &rc;
  }
  for (size_t i = 0; i < n && !pick; i++)
    if (c[i].scope >= want) pick = &c[i];
  if (!pick) return;
  out->kind = pick->kind;
  out->back_edge = pick->back_edge;
  out->branch = pick->branch;
  out->cond_at = pick->cond_at;
  if (pick->cond_at && f->ins[pick->cond_at].nops)
    out->var = kl_div_var(u, f->ins[pick->cond_at].ops[0], allowed);
}
