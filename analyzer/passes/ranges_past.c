/* Value ranges, the questions of an index past its bound (see ranges.h: kl_ranges_past_bound,
 * kl_ranges_past_by, kl_ranges_const_walk, kl_ranges_ceil_tiles), apart from ranges.c for its
 * size; what they need of the pass is in ranges_int.h. */
#include "analyzer/passes/ranges.h"

#include "analyzer/passes/ranges_int.h"
#include "analyzer/passes/valnum.h"

/* The parts of sum v (through ADD, a constant subtracted and casts), at most KL_RANGES_TERMS,
 * into t[n..); the constants added into *off. Uniform parts are kept where keep_uniform, else
 * left out. Returns the new count, or -1 when there are too many or a constant overflows. */
#define KL_RANGES_TERMS 6
static int kl_terms(const struct kl_ranges *r, uint32_t v, uint32_t *t, int n, int64_t *off,
                    int depth, bool keep_uniform) {
  const struct kl_ir_fn *f = r->f;
  const struct kl_ir_ins *in = &f->ins[v];
  int64_t c;
  if (n < 0) return n;
  if (kl_ir_const(f, v, &c)) return __builtin_add_overflow(*off, c, off) ? -1 : n;
  bool uniform = r->scev && kl_scev_scope(r->scev, v) == KL_SCOPE_UNIFORM;
  if (uniform && !keep_uniform) return n;
  if (depth > 0 && in->op == KL_IR_CAST && in->nops && !kl_ranges_is_float(in->type))
    return kl_terms(r, in->ops[0], t, n, off, depth - 1, keep_uniform);
  if (depth > 0 && in->op == KL_IR_BINOP && in->nops == 2 && in->sub == KL_IR_ADD)
    return kl_terms(r, in->ops[1], t,
                    kl_terms(r, in->ops[0], t, n, off, depth - 1, keep_uniform), off, depth - 1,
                    keep_uniform);
  if (depth > 0 && in->op == KL_IR_BINOP && in->nops == 2 && in->sub == KL_IR_SUB &&
      kl_ir_const(f, in->ops[1], &c))
    return __builtin_sub_overflow(*off, c, off)
               ? -1
               : kl_terms(r, in->ops[0], t, n, off, depth - 1, keep_uniform);
  if (n == KL_RANGES_TERMS) return -1;
  t[n] = v;
  return n + 1;
}

/* Whether term v is scaled by a factor (`row * ld`, `i << 2`): the start of a row or block,
 * whose bound says nothing of the offset added to it. */
static bool kl_scaled_term(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; d < 8 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; d++) v = f->ins[v].ops[0];
  const struct kl_ir_ins *in = &f->ins[v];
  return in->op == KL_IR_BINOP && (in->sub == KL_IR_MUL || in->sub == KL_IR_SHL);
}

/* Whether v is computed from t (through arithmetic and casts, a few levels deep). */
static bool kl_from(const struct kl_ir_fn *f, uint32_t v, uint32_t t, int depth) {
  if (v == t) return true;
  const struct kl_ir_ins *in = &f->ins[v];
  if (depth <= 0 || (in->op != KL_IR_BINOP && in->op != KL_IR_UNOP && in->op != KL_IR_CAST))
    return false;
  for (uint32_t i = 0; i < in->nops; i++)
    if (in->ops[i] && kl_from(f, in->ops[i], t, depth - 1)) return true;
  return false;
}

/* Whether a fact in ctx compares a value computed from t other than t itself (`t + 1 < L` for
 * `t = tid % L`): the offset may be checked through it. */
static bool kl_checked_through(const struct kl_ranges *r, uint32_t t, uint32_t ctx) {
  for (uint32_t id = ctx; id; id = r->nodes[id].parent) {
    const struct kl_ranges_node *nd = &r->nodes[id];
    for (uint32_t i = nd->first; i < nd->first + nd->n; i++) {
      const struct kl_ranges_fact *fa = &r->facts[i];
      if (fa->v != t && fa->v < r->f->nins && kl_from(r->f, fa->v, t, 6)) return true;
    }
  }
  return false;
}

bool kl_ranges_past_by(struct kl_ranges *r, uint32_t v, uint32_t p, struct kl_ranges_bound *out,
                       uint32_t *added) {
  if (!v || v >= r->f->nins || p >= r->f->nins || !r->scev) return false;
  uint32_t t[KL_RANGES_TERMS], term = 0;
  int64_t off = 0;
  int n = kl_terms(r, v, t, 0, &off, 8, true);
  if (n <= 0) return false;
  uint32_t ctx = p ? r->ctx[p] : 0;
  struct kl_ranges_bound b = {0, 0, 0}, whole;
  /* The one unscaled part bounded by a uniform size (a row start's bound says nothing of what
   * is added to it), one that varies across threads first: two such parts, and the bound of
   * their sum is not one's. */
  for (int pass = 0; pass < 2 && !term; pass++) {
    for (int i = 0; i < n; i++) {
      struct kl_ranges_bound c;
      if ((kl_scev_scope(r->scev, t[i]) == KL_SCOPE_UNIFORM) != (pass == 1) ||
          kl_scaled_term(r->f, t[i]) || !kl_ranges_upper_in(r, t[i], ctx, &c) || !c.w ||
          c.k > 0 || kl_scev_scope(r->scev, c.w) != KL_SCOPE_UNIFORM)
        continue;
      if (term) return false;
      term = t[i], b = c;
    }
  }
  if (!term) return false;
  bool varies = kl_scev_scope(r->scev, term) != KL_SCOPE_UNIFORM, sure = true;
  /* What the other unscaled parts add at most, past the constants: a part that varies across
   * threads over a small range of its own (`i0 + lid` under `i0 < n`: the thread's place in a
   * tile) its most. A uniform part adds what nothing here can say (the old rule: nothing, as
   * long as the constant alone takes the index past), and a varying one compared anywhere on
   * the path may be checked through that. */
  int64_t add = off;
  uint32_t by = 0;
  for (int i = 0; i < n; i++) {
    if (t[i] == term || kl_scaled_term(r->f, t[i])) continue;
    struct kl_range rt = kl_ranges_at(r, t[i], p);
    if (kl_scev_scope(r->scev, t[i]) == KL_SCOPE_UNIFORM) {
      sure = false;
      continue;
    }
    struct kl_ranges_bound tb;
    if (rt.lo < 0 || rt.hi < 1 || rt.hi >= KL_RANGES_SMALL ||
        (kl_ranges_upper_in(r, t[i], ctx, &tb) && tb.w) || kl_checked_through(r, t[i], ctx))
      return false;
    add = kl_ranges_sadd(add, rt.hi), by = by ? by : t[i], varies = true;
  }
  /* A part every thread has alike (`k + 1` of a loop all run) is not this rule's. */
  if (!varies || kl_ranges_sadd(b.k, add) <= 0) return false;
  /* A uniform part beside the thread's place: only the constant alone is sure to take it
   * past. */
  if (!sure && kl_ranges_sadd(b.k, off) <= 0) return false;
  if (kl_ranges_sadd(b.k, off) > 0) by = 0;
  /* The index itself checked below the same bound (`if (c + 1 < cols)` on a sum). */
  if (kl_ranges_upper_in(r, v, ctx, &whole) && whole.w == b.w && whole.k <= 0) return false;
  if (kl_checked_through(r, term, ctx)) return false;
  if (out) *out = (struct kl_ranges_bound){b.w, kl_ranges_sadd(b.k, add), b.by};
  if (added) *added = by;
  return true;
}

bool kl_ranges_past_bound(struct kl_ranges *r, uint32_t v, uint32_t p,
                          struct kl_ranges_bound *out) {
  return kl_ranges_past_by(r, v, p, out, NULL);
}

bool kl_ranges_const_walk(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *part,
                          struct kl_ranges_bound *out) {
  if (!v || v >= r->f->nins || p >= r->f->nins || !r->scev) return false;
  uint32_t t[KL_RANGES_TERMS], term = 0;
  int64_t off = 0;
  int n = kl_terms(r, v, t, 0, &off, 8, false);
  if (n <= 0) return false;
  for (int i = 0; i < n; i++) {
    if (kl_scaled_term(r->f, t[i])) continue;
    if (term) return false;
    term = t[i];
  }
  uint32_t ctx = p ? r->ctx[p] : 0;
  int64_t toff;
  uint32_t w = kl_ranges_strip(r, term ? term : 0, &toff);
  struct kl_ranges_bound b, whole;
  /* A walk of the thread's own (a recurrence that varies), bounded by a constant alone: a
   * bound by a value would be preferred (kl_ranges_upper), so none is on the path. */
  if (!term || !kl_scev_rec(r->scev, w) || !kl_ranges_upper_in(r, term, ctx, &b) ||
      b.w || kl_ranges_sadd(b.k, off) <= 1)
    return false;
  if (kl_ranges_upper_in(r, v, ctx, &whole) && whole.w) return false;
  if (kl_checked_through(r, term, ctx)) return false;
  *part = term;
  if (out) *out = (struct kl_ranges_bound){0, kl_ranges_sadd(b.k, off), b.by};
  return true;
}

/* Whether scale x is the scale s (a value, or the constant sc when s is 0). */
static bool kl_same_scale(const struct kl_ranges *r, uint32_t x, uint32_t s, int64_t sc) {
  int64_t c;
  if (!s) return kl_ir_const(r->f, x, &c) && c == sc;
  return kl_valnum_equal(r->f, r->scev, x, s);
}

/* Whether v is the count of tiles of s that cover w, rounded up: (w + s - 1) / s, a constant
 * added anywhere in the sum ((w + 31) / 32, (w + s - 1) / s); w in *w. */
static bool kl_ceil_of(const struct kl_ranges *r, uint32_t v, uint32_t s, int64_t sc,
                       uint32_t *w) {
  const struct kl_ir_fn *f = r->f;
  const struct kl_ir_ins *in = &f->ins[kl_ranges_uncast(f, v)];
  if (in->op != KL_IR_BINOP || in->sub != KL_IR_DIV || in->nops != 2 ||
      !kl_same_scale(r, in->ops[1], s, sc))
    return false;
  int64_t off;
  uint32_t b = kl_ranges_strip(r, in->ops[0], &off);
  if (!s) {
    if (off < sc - 1 || !b) return false;
    *w = b;
    return true;
  }
  const struct kl_ir_ins *a = &f->ins[kl_ranges_uncast(f, b)];
  if (off < -1 || a->op != KL_IR_BINOP || a->sub != KL_IR_ADD || a->nops != 2) return false;
  for (int k = 0; k < 2; k++)
    if (kl_same_scale(r, a->ops[k], s, 0)) {
      *w = a->ops[1 - k];
      return true;
    }
  return false;
}

bool kl_ranges_ceil_tiles(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *added,
                          struct kl_ranges_bound *out) {
  if (!v || v >= r->f->nins || p >= r->f->nins || !r->scev) return false;
  const struct kl_ir_fn *f = r->f;
  uint32_t t[KL_RANGES_TERMS], tile = 0, w = 0;
  int64_t off = 0;
  int n = kl_terms(r, v, t, 0, &off, 8, true);
  uint32_t ctx = p ? r->ctx[p] : 0;
  struct kl_ranges_bound b = {0, 0, 0}, whole;
  if (n <= 0 || off < 0) return false;
  /* The tile's start: a uniform counter below the rounded-up count times the tile. */
  for (int i = 0; i < n && !tile; i++) {
    const struct kl_ir_ins *in = &f->ins[kl_ranges_uncast(f, t[i])];
    if (kl_scev_scope(r->scev, t[i]) != KL_SCOPE_UNIFORM || in->op != KL_IR_BINOP ||
        in->sub != KL_IR_MUL || in->nops != 2)
      continue;
    for (int k = 0; k < 2 && !tile; k++) {
      uint32_t u = in->ops[k], sv = in->ops[1 - k];
      int64_t sc = 0;
      if (kl_ir_const(f, sv, &sc)) sv = 0;
      if ((!sv && sc < 2) || !kl_ranges_upper_in(r, u, ctx, &b) || !b.w || b.k > 0 ||
          !kl_ceil_of(r, b.w, sv, sc, &w))
        continue;
      tile = t[i];
    }
  }
  if (!tile || kl_scev_scope(r->scev, w) != KL_SCOPE_UNIFORM) return false;
  /* The thread's place in the tile, as for kl_ranges_past_by; nothing else unscaled. */
  uint32_t by = 0;
  for (int i = 0; i < n; i++) {
    if (t[i] == tile || kl_scaled_term(f, t[i])) continue;
    if (kl_scev_scope(r->scev, t[i]) == KL_SCOPE_UNIFORM) return false;
    struct kl_range rt = kl_ranges_at(r, t[i], p);
    struct kl_ranges_bound tb;
    if (rt.lo < 0 || rt.hi < 1 || rt.hi >= KL_RANGES_SMALL ||
        (kl_ranges_upper_in(r, t[i], ctx, &tb) && tb.w) || kl_checked_through(r, t[i], ctx))
      return false;
    by = by ? by : t[i];
  }
  if (!by) return false;
  if (kl_ranges_upper_in(r, v, ctx, &whole) && whole.w) return false;
  *added = by;
  if (out) *out = (struct kl_ranges_bound){w, 1, b.by};
  return true;
}

