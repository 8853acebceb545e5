/* Value ranges with facts split at every comparison (see ranges.h). */
#include "analyzer/passes/ranges.h"

#include "analyzer/passes/ranges_int.h"

#include <string.h>

/* Rounds over a loop before its changing header PHIs widen to their type. */
#define KL_RANGES_ROUNDS 3
/* Threads in a threadgroup on every Apple GPU at most. */
#define KL_RANGES_MAX_TG 1024

enum { KL_K_THEN = 0, KL_K_ELSE, KL_K_AFTER, KL_K_EXIT, KL_K_NKINDS };

static const struct kl_range kl_full = {KL_RANGE_NEG_INF, KL_RANGE_POS_INF};

static struct kl_range kl_rg(int64_t lo, int64_t hi) {
  return (struct kl_range){lo, hi};
}

static int64_t kl_min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

static int64_t kl_max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

static struct kl_range kl_meet(struct kl_range a, struct kl_range b) {
  return kl_rg(kl_max64(a.lo, b.lo), kl_min64(a.hi, b.hi));
}

static bool kl_empty(struct kl_range a) {
  return a.lo > a.hi;
}

static struct kl_range kl_join(struct kl_range a, struct kl_range b) {
  if (kl_empty(a)) return b;
  if (kl_empty(b)) return a;
  return kl_rg(kl_min64(a.lo, b.lo), kl_max64(a.hi, b.hi));
}

/* Saturating arithmetic where the extremes stand for the unbounded ends. */
static int64_t kl_sadd(int64_t x, int64_t y) {
  if (x == KL_RANGE_POS_INF || y == KL_RANGE_POS_INF) return KL_RANGE_POS_INF;
  if (x == KL_RANGE_NEG_INF || y == KL_RANGE_NEG_INF) return KL_RANGE_NEG_INF;
  int64_t r;
  if (__builtin_add_overflow(x, y, &r)) return y > 0 ? KL_RANGE_POS_INF : KL_RANGE_NEG_INF;
  return r;
}

static int64_t kl_sneg(int64_t x) {
  return x == KL_RANGE_NEG_INF ? KL_RANGE_POS_INF : x == KL_RANGE_POS_INF ? KL_RANGE_NEG_INF : -x;
}

static int64_t kl_smul(int64_t x, int64_t y) {
  if (!x || !y) return 0;
  bool neg = (x < 0) != (y < 0);
  bool inf = x == KL_RANGE_POS_INF || x == KL_RANGE_NEG_INF || y == KL_RANGE_POS_INF ||
             y == KL_RANGE_NEG_INF;
  int64_t r;
  if (inf || __builtin_mul_overflow(x, y, &r)) return neg ? KL_RANGE_NEG_INF : KL_RANGE_POS_INF;
  return r;
}

/* x / y (y != 0) with C's truncation, an unbounded x staying unbounded. */
static int64_t kl_sdiv(int64_t x, int64_t y) {
  if (x == KL_RANGE_POS_INF || x == KL_RANGE_NEG_INF)
    return (x < 0) != (y < 0) ? KL_RANGE_NEG_INF : KL_RANGE_POS_INF;
  if (y == KL_RANGE_POS_INF || y == KL_RANGE_NEG_INF) return 0;
  if (x == INT64_MIN && y == -1) return KL_RANGE_POS_INF;
  return x / y;
}

static struct kl_range kl_shift(struct kl_range a, int64_t k) {
  if (kl_empty(a)) return a;
  return kl_rg(kl_sadd(a.lo, k), kl_sadd(a.hi, k));
}

static struct kl_range kl_corners(int64_t (*op)(int64_t, int64_t), struct kl_range a,
                                  struct kl_range b) {
  int64_t c[4] = {op(a.lo, b.lo), op(a.lo, b.hi), op(a.hi, b.lo), op(a.hi, b.hi)};
  struct kl_range r = kl_rg(c[0], c[0]);
  for (int i = 1; i < 4; i++) r = kl_join(r, kl_rg(c[i], c[i]));
  return r;
}

/* The range of an integer type as written ("uint", "ushort2"); unsigned alone: [0, inf). */
static struct kl_range kl_type_range(const char *t, uint8_t flags) {
  static const struct {
    const char *name;
    int64_t lo, hi;
  } types[] = {
      {"bool", 0, 1},
      {"char", INT8_MIN, INT8_MAX},
      {"uchar", 0, UINT8_MAX},
      {"int8_t", INT8_MIN, INT8_MAX},
      {"uint8_t", 0, UINT8_MAX},
      {"short", INT16_MIN, INT16_MAX},
      {"ushort", 0, UINT16_MAX},
      {"int16_t", INT16_MIN, INT16_MAX},
      {"uint16_t", 0, UINT16_MAX},
      {"int", INT32_MIN, INT32_MAX},
      {"uint", 0, UINT32_MAX},
      {"unsigned", 0, UINT32_MAX},
      {"unsigned int", 0, UINT32_MAX},
      {"int32_t", INT32_MIN, INT32_MAX},
      {"uint32_t", 0, UINT32_MAX},
      {"long", KL_RANGE_NEG_INF, KL_RANGE_POS_INF},
      {"int64_t", KL_RANGE_NEG_INF, KL_RANGE_POS_INF},
      {"ulong", 0, KL_RANGE_POS_INF},
      {"uint64_t", 0, KL_RANGE_POS_INF},
      {"size_t", 0, KL_RANGE_POS_INF},
  };
  if (t) {
    if (!strncmp(t, "metal::", 7)) t += 7;
    size_t n = strlen(t);
    /* A vector's components: drop the lane count. */
    while (n && t[n - 1] >= '2' && t[n - 1] <= '4' && n > 1 && (t[n - 2] < '0' || t[n - 2] > '9'))
      n--;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
      if (!strncmp(types[i].name, t, n) && !types[i].name[n])
        return kl_rg(types[i].lo, types[i].hi);
  }
  return flags & KL_IR_F_UNSIGNED ? kl_rg(0, KL_RANGE_POS_INF) : kl_full;
}

/* kl_type_range of in's type, remembered by the type text's address (a pass's types live as
 * long as its function). */
static struct kl_range kl_tyr(struct kl_ranges *rs, const struct kl_ir_ins *in) {
  uintptr_t h = ((uintptr_t)in->type >> 3) ^ in->flags;
  struct kl_ranges_tyslot *s = &rs->tyslot[(h ^ (h >> 6)) & 63];
  if (!s->type || s->type != in->type || s->flags != in->flags) {
    s->type = in->type;
    s->flags = in->flags;
    s->range = kl_type_range(in->type, in->flags);
  }
  return s->range;
}

/* r held to v's type: a result outside it has wrapped (unsigned) or overflowed, and may be
 * anything of the type. */
static struct kl_range kl_fit(struct kl_ranges *rs, const struct kl_ir_ins *in, struct kl_range r) {
  struct kl_range t = kl_tyr(rs, in);
  if (kl_empty(r)) return r;
  if (r.lo < t.lo || r.hi > t.hi) return t;
  return r;
}

static bool kl_float_type(const char *t) {
  return t && (!strncmp(t, "float", 5) || !strncmp(t, "half", 4) || !strncmp(t, "bfloat", 6) ||
               !strncmp(t, "double", 6));
}

/* ---- Facts. */

/* v without added constants and casts: its base value, and what was added in *off. */
static uint32_t kl_strip_walk(const struct kl_ranges *r, uint32_t v, int64_t *off) {
  const struct kl_ir_fn *f = r->f;
  *off = 0;
  for (int d = 0; d < 16 && v; d++) {
    const struct kl_ir_ins *in = &f->ins[v];
    int64_t c;
    if (in->op == KL_IR_CAST && in->nops && !kl_float_type(in->type)) {
      v = in->ops[0];
    } else if (in->op == KL_IR_BINOP && in->nops == 2 && in->sub == KL_IR_ADD &&
               (kl_ir_const(f, in->ops[1], &c) || kl_ir_const(f, in->ops[0], &c))) {
      int64_t o;
      if (__builtin_add_overflow(*off, c, &o)) break;
      *off = o;
      v = f->ins[in->ops[1]].op == KL_IR_CONST ? in->ops[0] : in->ops[1];
    } else if (in->op == KL_IR_BINOP && in->nops == 2 && in->sub == KL_IR_SUB &&
               kl_ir_const(f, in->ops[1], &c)) {
      int64_t o;
      if (__builtin_sub_overflow(*off, c, &o)) break;
      *off = o;
      v = in->ops[0];
    } else if (in->op == KL_IR_PHI && (in->sub == KL_IR_PHI_EXIT || in->sub == KL_IR_PHI_IF)) {
      /* A join with one incoming value is that value. */
      uint32_t one = 0, n = 0;
      for (uint32_t i = 0; i < in->nops; i++)
        if (in->ops[i]) {
          one = in->ops[i];
          n++;
        }
      if (n != 1) break;
      v = one;
    } else {
      break;
    }
  }
  /* Loads of one read-only address are one value. */
  return r->scev ? kl_scev_leader(r->scev, v) : v;
}

/* kl_strip_walk, remembered per value (the IR and scev's leaders do not change while the pass
 * lives). */
static uint32_t kl_strip(const struct kl_ranges *r, uint32_t v, int64_t *off) {
  if (v >= r->nstrip) return kl_strip_walk(r, v, off);
  if (!r->strip_of[v]) r->strip_of[v] = kl_strip_walk(r, v, &r->strip_off[v]) + 1;
  *off = r->strip_off[v];
  return r->strip_of[v] - 1;
}

static uint8_t kl_mirror(uint8_t op) {
  switch (op) {
  case KL_IR_LT:
    return KL_IR_GT;
  case KL_IR_LE:
    return KL_IR_GE;
  case KL_IR_GT:
    return KL_IR_LT;
  case KL_IR_GE:
    return KL_IR_LE;
  default:
    return op;
  }
}

static uint8_t kl_negate(uint8_t op) {
  switch (op) {
  case KL_IR_LT:
    return KL_IR_GE;
  case KL_IR_LE:
    return KL_IR_GT;
  case KL_IR_GT:
    return KL_IR_LE;
  case KL_IR_GE:
    return KL_IR_LT;
  case KL_IR_EQ:
    return KL_IR_NE;
  case KL_IR_NE:
    return KL_IR_EQ;
  default:
    return 0;
  }
}

static void kl_add_fact(struct kl_ranges *r, uint32_t v, uint8_t op, uint32_t w, int64_t k,
                        uint32_t by) {
  /* <= and >= are < and > by one more. */
  if (op == KL_IR_LE) {
    if (k == INT64_MAX) return;
    op = KL_IR_LT;
    k++;
  } else if (op == KL_IR_GE) {
    if (k == INT64_MIN) return;
    op = KL_IR_GT;
    k--;
  }
  KL_VEC_PUSH(r->arena, r->facts, r->nfacts, r->cap_facts);
  r->facts[r->nfacts++] = (struct kl_ranges_fact){v, w, by, op, k};
  if (v < r->f->nins) r->named[v] = 1;
}

/* The facts of x op y, both sides. */
static void kl_compare(struct kl_ranges *r, uint32_t x, uint8_t op, uint32_t y, uint32_t by,
                       bool is_unsigned) {
  const struct kl_ir_fn *f = r->f;
  int64_t cx, cy, c;
  uint32_t bx = kl_strip(r, x, &cx), byv = kl_strip(r, y, &cy);
  if (kl_ir_const(f, bx, &c)) {
    if (__builtin_add_overflow(cx, c, &cx)) return;
    bx = 0;
  }
  if (kl_ir_const(f, byv, &c)) {
    if (__builtin_add_overflow(cy, c, &cy)) return;
    byv = 0;
  }
  if (is_unsigned) {
    /* Both sides are unsigned: each is at least 0. */
    if (bx && cx > INT64_MIN) kl_add_fact(r, bx, KL_IR_GE, 0, -cx, by);
    if (byv && cy > INT64_MIN) kl_add_fact(r, byv, KL_IR_GE, 0, -cy, by);
  }
  int64_t k;
  if (bx && !__builtin_sub_overflow(cy, cx, &k)) kl_add_fact(r, bx, op, byv, k, by);
  if (byv && !__builtin_sub_overflow(cx, cy, &k)) kl_add_fact(r, byv, kl_mirror(op), bx, k, by);
}

/* The facts that cond being truth gives. */
static void kl_decompose(struct kl_ranges *r, uint32_t cond, bool truth, int depth) {
  const struct kl_ir_fn *f = r->f;
  if (!cond || depth <= 0) return;
  const struct kl_ir_ins *in = &f->ins[cond];
  int64_t c;
  switch (in->op) {
  case KL_IR_CONST:
    return;
  case KL_IR_CAST:
    if (in->nops) kl_decompose(r, in->ops[0], truth, depth - 1);
    return;
  case KL_IR_UNOP:
    if (in->sub == KL_IR_NOT && in->nops) kl_decompose(r, in->ops[0], !truth, depth - 1);
    return;
  case KL_IR_SELECT:
    if (in->nops < 3) return;
    /* a && b is a ? b : false; a || b is a ? true : b. */
    if (truth && kl_ir_const(f, in->ops[2], &c) && !c) {
      kl_decompose(r, in->ops[0], true, depth - 1);
      kl_decompose(r, in->ops[1], true, depth - 1);
    } else if (!truth && kl_ir_const(f, in->ops[1], &c) && c) {
      kl_decompose(r, in->ops[0], false, depth - 1);
      kl_decompose(r, in->ops[2], false, depth - 1);
    }
    return;
  case KL_IR_PHI:
    /* `a && b` lowered as an IF and a PHI (an operand with effects, a load): the PHI's truth
     * says which arm ran when the other arm's value is a constant that contradicts it. */
    if (in->sub == KL_IR_PHI_IF && in->nops == 2 && in->ref_ins &&
        f->ins[in->ref_ins].op == KL_IR_IF && f->ins[in->ref_ins].nops) {
      for (int k = 0; k < 2; k++) {
        uint32_t other = in->ops[1 - k];
        if (!in->ops[k] || (other && !(kl_ir_const(f, other, &c) && (c != 0) != truth))) continue;
        kl_decompose(r, f->ins[in->ref_ins].ops[0], k == 0, depth - 1);
        kl_decompose(r, in->ops[k], truth, depth - 1);
        return;
      }
    }
    break;
  case KL_IR_BINOP:
    if (in->nops < 2) return;
    switch (in->sub) {
    case KL_IR_LAND:
      if (truth) {
        kl_decompose(r, in->ops[0], true, depth - 1);
        kl_decompose(r, in->ops[1], true, depth - 1);
      }
      /* `!(N > 1 && i + N > n)` in a specialisation where N > 1 holds: `!(i + N > n)`. */
      for (int k = 0; !truth && k < 2; k++)
        if (kl_ir_const(f, in->ops[k], &c) && c) kl_decompose(r, in->ops[1 - k], false, depth - 1);
      return;
    case KL_IR_LOR:
      if (!truth) {
        kl_decompose(r, in->ops[0], false, depth - 1);
        kl_decompose(r, in->ops[1], false, depth - 1);
      }
      for (int k = 0; truth && k < 2; k++)
        if (kl_ir_const(f, in->ops[k], &c) && !c) kl_decompose(r, in->ops[1 - k], true, depth - 1);
      return;
    case KL_IR_LT:
    case KL_IR_LE:
    case KL_IR_GT:
    case KL_IR_GE:
    case KL_IR_EQ:
    case KL_IR_NE:
      kl_compare(r, in->ops[0], truth ? in->sub : kl_negate(in->sub), in->ops[1], cond,
                 in->flags & KL_IR_F_UNSIGNED);
      return;
    default:
      break;
    }
    break;
  default:
    break;
  }
  /* Any other value tested for truth. */
  kl_add_fact(r, cond, truth ? KL_IR_NE : KL_IR_EQ, 0, 0, cond);
}

/* Value v's bit in a chain node's masks. */
static uint64_t kl_bit(uint32_t v) {
  return (uint64_t)1 << ((v * 0x9E3779B1u) >> 26);
}

/* The chain node for branch kind of instruction from taken under parent: cond is truth. */
static uint32_t kl_push(struct kl_ranges *r, uint32_t parent, uint32_t from, int kind,
                        uint32_t cond, bool truth) {
  uint32_t *slot = &r->cache[(size_t)from * KL_K_NKINDS + kind];
  if (*slot && r->nodes[*slot].parent == parent) return *slot;
  uint32_t first = r->nfacts;
  kl_decompose(r, cond, truth, 8);
  if (r->nfacts == first) return parent;
  uint64_t own = 0;
  for (uint32_t i = first; i < r->nfacts; i++) own |= kl_bit(r->facts[i].v);
  KL_VEC_PUSH(r->arena, r->nodes, r->nnodes, r->cap_nodes);
  r->nodes[r->nnodes] = (struct kl_ranges_node){
      parent, first, r->nfacts - first, from, (uint8_t)kind, own, own | r->nodes[parent].all};
  *slot = r->nnodes;
  return r->nnodes++;
}

/* ---- Evaluation. */

static struct kl_range kl_eval(struct kl_ranges *r, uint32_t v, uint32_t ctx, int depth);

/* What v op w + k allows of v (w's range wr, [0, 0] for none). */
static struct kl_range kl_allow(uint8_t op, struct kl_range wr, int64_t k) {
  struct kl_range b = kl_shift(wr, k);
  switch (op) {
  case KL_IR_LT:
    return kl_rg(KL_RANGE_NEG_INF, b.hi == KL_RANGE_POS_INF ? b.hi : kl_sadd(b.hi, -1));
  case KL_IR_GT:
    return kl_rg(b.lo == KL_RANGE_NEG_INF ? b.lo : kl_sadd(b.lo, 1), KL_RANGE_POS_INF);
  case KL_IR_EQ:
    return b;
  default:
    return kl_full;
  }
}

/* a narrowed by the facts on v in chain ctx. */
static struct kl_range kl_facts(struct kl_ranges *r, uint32_t v, struct kl_range a, uint32_t ctx,
                                int depth) {
  /* No chain, no facts: the walk below would not start. */
  if (!ctx || !r->nodes[ctx].all) return a;
  int64_t off;
  uint32_t b = kl_strip(r, v, &off);
  if (b < r->f->nins && !r->named[b]) return a;
  uint64_t bit = kl_bit(b);
  for (uint32_t id = ctx; id && (r->nodes[id].all & bit); id = r->nodes[id].parent) {
    const struct kl_ranges_node *nd = &r->nodes[id];
    if (!(nd->own & bit)) continue;
    for (uint32_t i = nd->first; i < nd->first + nd->n; i++) {
      const struct kl_ranges_fact *fa = &r->facts[i];
      if (fa->v != b) continue;
      struct kl_range wr = !fa->w      ? kl_rg(0, 0)
                           : depth > 0 ? kl_eval(r, fa->w, ctx, depth - 1)
                                       : r->base[fa->w];
      if (fa->op == KL_IR_NE) {
        if (fa->w || off) continue;
        if (a.lo == fa->k && a.lo < KL_RANGE_POS_INF) a.lo++;
        if (a.hi == fa->k && a.hi > KL_RANGE_NEG_INF) a.hi--;
        continue;
      }
      a = kl_meet(a, kl_shift(kl_allow(fa->op, wr, fa->k), off));
    }
  }
  return a;
}

static struct kl_range kl_coord_range(const struct kl_ranges *r, const char *n, int c) {
  const struct kl_ranges_launch *l = &r->launch;
  int64_t tmax = l->max_total_threads > 0 ? l->max_total_threads : KL_RANGES_MAX_TG;
  int64_t t = l->tg[0] > 0 && l->tg[1] > 0 && l->tg[2] > 0 ? l->tg[0] * l->tg[1] * l->tg[2] : 0;
  int64_t tg = l->tg[c], g = l->grid[c];
  struct kl_range tsize = t ? kl_rg(t, t) : kl_rg(1, tmax);
  struct kl_range inf = kl_rg(0, UINT32_MAX);
  if (!strcmp(n, "thread_position_in_threadgroup")) return kl_rg(0, (tg > 0 ? tg : tmax) - 1);
  if (!strcmp(n, "thread_index_in_threadgroup")) return kl_rg(0, tsize.hi - 1);
  if (!strcmp(n, "thread_index_in_simdgroup")) return kl_rg(0, 31);
  if (!strcmp(n, "thread_index_in_quadgroup")) return kl_rg(0, 3);
  if (!strcmp(n, "simdgroup_index_in_threadgroup")) return kl_rg(0, (tsize.hi + 31) / 32 - 1);
  if (!strcmp(n, "quadgroup_index_in_threadgroup")) return kl_rg(0, (tsize.hi + 3) / 4 - 1);
  if (!strcmp(n, "threads_per_simdgroup") || !strcmp(n, "thread_execution_width"))
    return kl_rg(32, 32);
  if (!strcmp(n, "threads_per_threadgroup") || !strcmp(n, "dispatch_threads_per_threadgroup"))
    return tg > 0 ? kl_rg(tg, tg) : kl_rg(1, tmax);
  if (!strcmp(n, "simdgroups_per_threadgroup") || !strcmp(n, "dispatch_simdgroups_per_threadgroup"))
    return kl_rg((tsize.lo + 31) / 32, (tsize.hi + 31) / 32);
  if (!strcmp(n, "quadgroups_per_threadgroup") || !strcmp(n, "dispatch_quadgroups_per_threadgroup"))
    return kl_rg((tsize.lo + 3) / 4, (tsize.hi + 3) / 4);
  if (!strcmp(n, "thread_position_in_grid")) return g > 0 ? kl_rg(0, g - 1) : inf;
  if (!strcmp(n, "threads_per_grid") || !strcmp(n, "grid_size"))
    return g > 0 ? kl_rg(g, g) : kl_rg(1, UINT32_MAX);
  if (!strcmp(n, "threadgroup_position_in_grid"))
    return g > 0 && tg > 0 ? kl_rg(0, (g + tg - 1) / tg - 1) : inf;
  if (!strcmp(n, "threadgroups_per_grid"))
    return g > 0 && tg > 0 ? kl_rg((g + tg - 1) / tg, (g + tg - 1) / tg) : kl_rg(1, UINT32_MAX);
  return inf; /* every coordinate is at least 0 */
}

static struct kl_range kl_binop(uint8_t op, struct kl_range a, struct kl_range b) {
  if (kl_empty(a) || kl_empty(b)) return kl_rg(1, 0);
  switch (op) {
  case KL_IR_ADD:
    return kl_rg(kl_sadd(a.lo, b.lo), kl_sadd(a.hi, b.hi));
  case KL_IR_SUB:
    return kl_rg(kl_sadd(a.lo, kl_sneg(b.hi)), kl_sadd(a.hi, kl_sneg(b.lo)));
  case KL_IR_MUL:
    return kl_corners(kl_smul, a, b);
  case KL_IR_DIV:
    if (b.lo > 0 || b.hi < 0) return kl_corners(kl_sdiv, a, b);
    return kl_full;
  case KL_IR_REM:
    if (b.lo > 0) {
      int64_t m = b.hi == KL_RANGE_POS_INF ? b.hi : b.hi - 1;
      if (a.lo >= 0) return kl_rg(0, kl_min64(a.hi, m));
      return kl_meet(kl_rg(kl_sneg(m), m), kl_rg(kl_min64(a.lo, 0), kl_max64(a.hi, 0)));
    }
    return kl_full;
  case KL_IR_AND:
    if (a.lo >= 0 && b.lo >= 0) return kl_rg(0, kl_min64(a.hi, b.hi));
    if (a.lo >= 0) return kl_rg(0, a.hi);
    if (b.lo >= 0) return kl_rg(0, b.hi);
    return kl_full;
  case KL_IR_OR:
  case KL_IR_XOR:
    if (a.lo >= 0 && b.lo >= 0) {
      int64_t m = kl_max64(a.hi, b.hi);
      if (m == KL_RANGE_POS_INF || m >= ((int64_t)1 << 62)) return kl_rg(0, KL_RANGE_POS_INF);
      int64_t p = 1;
      while (p <= m) p <<= 1;
      return kl_rg(op == KL_IR_OR ? kl_max64(a.lo, b.lo) : 0, p - 1);
    }
    return kl_full;
  case KL_IR_SHL:
    if (b.lo == b.hi && b.lo >= 0 && b.lo < 62) {
      int64_t m = (int64_t)1 << b.lo;
      return kl_rg(kl_smul(a.lo, m), kl_smul(a.hi, m));
    }
    return kl_full;
  case KL_IR_SHR:
    if (a.lo >= 0 && b.lo >= 0 && b.hi <= 63)
      return kl_rg(a.lo >> b.hi, a.hi == KL_RANGE_POS_INF ? a.hi : a.hi >> b.lo);
    if (a.lo >= 0) return kl_rg(0, a.hi);
    return kl_full;
  case KL_IR_MIN:
    return kl_rg(kl_min64(a.lo, b.lo), kl_min64(a.hi, b.hi));
  case KL_IR_MAX:
    return kl_rg(kl_max64(a.lo, b.lo), kl_max64(a.hi, b.hi));
  case KL_IR_LT:
    if (a.hi < b.lo) return kl_rg(1, 1);
    if (a.lo >= b.hi) return kl_rg(0, 0);
    return kl_rg(0, 1);
  case KL_IR_LE:
    if (a.hi <= b.lo) return kl_rg(1, 1);
    if (a.lo > b.hi) return kl_rg(0, 0);
    return kl_rg(0, 1);
  case KL_IR_GT:
    if (a.lo > b.hi) return kl_rg(1, 1);
    if (a.hi <= b.lo) return kl_rg(0, 0);
    return kl_rg(0, 1);
  case KL_IR_GE:
    if (a.lo >= b.hi) return kl_rg(1, 1);
    if (a.hi < b.lo) return kl_rg(0, 0);
    return kl_rg(0, 1);
  case KL_IR_EQ:
  case KL_IR_NE: {
    bool same = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
    bool apart = a.hi < b.lo || b.hi < a.lo;
    if (same || apart) return kl_rg((op == KL_IR_EQ) == same, (op == KL_IR_EQ) == same);
    return kl_rg(0, 1);
  }
  case KL_IR_LAND:
  case KL_IR_LOR:
    return kl_rg(0, 1);
  default:
    return kl_full;
  }
}

static const char *kl_callee(const struct kl_ir_ins *in) {
  const char *n = in->fn ? in->fn->name : in->name;
  return n ? kl_msl_unprefix(n) : "";
}

/* v's range from its operands' at ctx (depth for each operand's evaluation). */
static struct kl_range kl_compute(struct kl_ranges *r, uint32_t v, uint32_t ctx, int depth) {
  const struct kl_ir_fn *f = r->f;
  const struct kl_ir_ins *in = &f->ins[v];
  struct kl_range x, y, z;
  switch (in->op) {
  case KL_IR_CONST:
    return kl_rg(in->imm, in->imm);
  case KL_IR_COORD:
  case KL_IR_ARG: {
    /* A uniform coordinate (threads_per_threadgroup) is a parameter, the others COORDs. */
    const struct kl_msl_coord *co = in->op == KL_IR_COORD ? in->coord
                                    : in->var             ? in->var->coord
                                                          : NULL;
    if (!co) break;
    const struct kl_msl_type *t = kl_msl_type(in->op == KL_IR_ARG ? in->var->type : in->type);
    if ((in->flags & KL_IR_F_VECTOR) || (in->op == KL_IR_ARG && t && t->kind == KL_TYPE_VECTOR))
      return kl_join(kl_join(kl_coord_range(r, co->name, 0), kl_coord_range(r, co->name, 1)),
                     kl_coord_range(r, co->name, 2));
    return kl_coord_range(r, co->name, in->imm >= 0 && in->imm < 3 ? (int)in->imm : 0);
  }
  case KL_IR_UNOP:
    if (!in->nops) break;
    x = kl_eval(r, in->ops[0], ctx, depth);
    if (kl_empty(x)) return x;
    if (in->sub == KL_IR_NEG) return kl_fit(r, in, kl_rg(kl_sneg(x.hi), kl_sneg(x.lo)));
    if (in->sub == KL_IR_NOT) return kl_rg(0, 1);
    if (in->sub == KL_IR_BITNOT)
      return kl_fit(r, in, kl_rg(kl_sadd(kl_sneg(x.hi), -1), kl_sadd(kl_sneg(x.lo), -1)));
    break;
  case KL_IR_BINOP:
    if (in->nops < 2) break;
    x = kl_eval(r, in->ops[0], ctx, depth);
    y = kl_eval(r, in->ops[1], ctx, depth);
    return kl_fit(r, in, kl_binop(in->sub, x, y));
  case KL_IR_SELECT: {
    if (in->nops < 3) break;
    uint32_t c = in->ops[0];
    uint32_t tctx = kl_push(r, ctx, v, KL_K_THEN, c, true);
    uint32_t ectx = kl_push(r, ctx, v, KL_K_ELSE, c, false);
    x = kl_eval(r, in->ops[1], tctx, depth);
    y = kl_eval(r, in->ops[2], ectx, depth);
    struct kl_range cr = kl_eval(r, c, ctx, depth);
    if (cr.lo > 0 || cr.hi < 0) return x;
    if (cr.lo == 0 && cr.hi == 0) return y;
    return kl_join(x, y);
  }
  case KL_IR_CAST:
    if (!in->nops || kl_float_type(in->type)) break;
    return kl_fit(r, in, kl_eval(r, in->ops[0], ctx, depth));
  case KL_IR_CALL: {
    const char *n = kl_callee(in);
    if (!strcmp(n, "clamp") && in->nops == 3) {
      x = kl_eval(r, in->ops[0], ctx, depth);
      y = kl_eval(r, in->ops[1], ctx, depth);
      z = kl_eval(r, in->ops[2], ctx, depth);
      return kl_fit(r, in, kl_binop(KL_IR_MIN, kl_binop(KL_IR_MAX, x, y), z));
    }
    if ((!strcmp(n, "min") || !strcmp(n, "max")) && in->nops == 2) {
      x = kl_eval(r, in->ops[0], ctx, depth);
      y = kl_eval(r, in->ops[1], ctx, depth);
      return kl_fit(r, in, kl_binop(n[1] == 'i' ? KL_IR_MIN : KL_IR_MAX, x, y));
    }
    if (!strcmp(n, "abs") && in->nops == 1) {
      x = kl_eval(r, in->ops[0], ctx, depth);
      if (kl_empty(x)) return x;
      return kl_fit(r, in, kl_rg(x.lo > 0   ? x.lo
                              : x.hi < 0 ? kl_sneg(x.hi)
                                         : 0,
                              kl_max64(kl_sneg(x.lo), x.hi)));
    }
    break;
  }
  case KL_IR_PHI:
    if (in->sub == KL_IR_PHI_HEAD) return r->base[v];
    {
      struct kl_range j = kl_rg(1, 0);
      uint32_t n = 0;
      for (uint32_t i = 0; i < in->nops; i++)
        if (in->ops[i]) n++;
      const struct kl_ir_ins *ref = in->ref_ins ? &f->ins[in->ref_ins] : NULL;
      for (uint32_t i = 0; i < in->nops; i++) {
        uint32_t o = in->ops[i], octx = ctx;
        if (!o) continue;
        /* The branch an incoming value came through adds its condition (several: no fact). */
        if (n > 1 && ref && ref->nops && in->sub == KL_IR_PHI_IF && i < 2)
          octx = kl_push(r, ctx, in->ref_ins, i ? KL_K_ELSE : KL_K_THEN, ref->ops[0], i == 0);
        else if (ref && ref->nops && ref->ops[0] && in->sub == KL_IR_PHI_EXIT && i == 0)
          octx = kl_push(r, ctx, in->ref_ins, KL_K_EXIT, ref->ops[0], false);
        j = kl_join(j, kl_eval(r, o, octx, depth));
      }
      return n ? j : kl_full;
    }
  default:
    break;
  }
  return kl_tyr(r, in);
}

static struct kl_range kl_eval(struct kl_ranges *r, uint32_t v, uint32_t ctx, int depth) {
  if (!v) return kl_full;
  struct kl_range a = r->base[v];
  if (depth > 0) a = kl_meet(a, kl_compute(r, v, ctx, depth - 1));
  return kl_facts(r, v, a, ctx, depth);
}

/* ---- The walk. */

/* Whether block never falls through to what follows it; *site is how far that holds: the
 * inlined helper (site) a return leaves, whose caller goes on after it; 0 for everything after
 * (a break, a continue, a return from the kernel). */
static bool kl_exits(const struct kl_ir_fn *f, uint32_t block, uint32_t *site) {
  const struct kl_ir_block *b = &f->blocks[block];
  *site = 0;
  if (!b->n) return false;
  const struct kl_ir_ins *in = &f->ins[b->ins[b->n - 1]];
  if (in->op == KL_IR_RETURN) {
    *site = in->site;
    return true;
  }
  if (in->op == KL_IR_BREAK || in->op == KL_IR_CONTINUE) return true;
  uint32_t s0, s1;
  if (in->op == KL_IR_IF && in->blk[0] && in->blk[1] && kl_exits(f, in->blk[0], &s0) &&
      kl_exits(f, in->blk[1], &s1)) {
    *site = s0 ? s0 : s1;
    return true;
  }
  return false;
}

/* Whether a break in block (not in a loop nested in it) leaves the loop, or a return leaves the
 * inlined helper site the loop is in (its caller goes on after the loop). */
static bool kl_has_break(const struct kl_ir_fn *f, uint32_t block, uint32_t site, bool nested) {
  const struct kl_ir_block *b = &f->blocks[block];
  for (uint32_t i = 0; i < b->n; i++) {
    const struct kl_ir_ins *in = &f->ins[b->ins[i]];
    if (in->op == KL_IR_BREAK && !nested) return true;
    if (in->op == KL_IR_RETURN && site && in->site == site) return true;
    if (in->op == KL_IR_IF || in->op == KL_IR_LOOP)
      for (int k = 0; k < 3; k++)
        if (in->blk[k] && kl_has_break(f, in->blk[k], site, nested || in->op == KL_IR_LOOP))
          return true;
  }
  return false;
}

/* Whether site is inner (or equal) to site outer. */
static bool kl_site_within(const struct kl_ir_fn *f, uint32_t site, uint32_t outer) {
  for (int d = 0; d < 256 && site; d++) {
    if (site == outer) return true;
    site = f->sites[site].parent;
  }
  return site == outer;
}

static uint32_t kl_walk(struct kl_ranges *r, uint32_t block, uint32_t ctx);

/* A recurrence's range from its start, step and the loop's condition in body (the chain node of
 * the body, whose own facts are the condition's). */
static struct kl_range kl_rec_range(struct kl_ranges *r, uint32_t phi,
                                    const struct kl_scev_atom *at, uint32_t body, uint32_t outer) {
  struct kl_range st = at->start ? r->base[at->start] : kl_full;
  struct kl_range s = kl_full;
  if (at->step.known && !at->step.c0_symbolic && !at->step.n)
    s = kl_rg(at->step.c0, at->step.c0);
  else if (at->step_value)
    s = r->base[at->step_value];
  if (kl_empty(st) || kl_empty(s)) return kl_full;
  int64_t bhi = KL_RANGE_POS_INF, blo = KL_RANGE_NEG_INF;
  if (body != outer) {
    const struct kl_ranges_node *nd = &r->nodes[body];
    for (uint32_t i = nd->first; i < nd->first + nd->n; i++) {
      const struct kl_ranges_fact *fa = &r->facts[i];
      if (fa->v != phi) continue;
      struct kl_range a = kl_allow(fa->op, fa->w ? r->base[fa->w] : kl_rg(0, 0), fa->k);
      bhi = kl_min64(bhi, a.hi);
      blo = kl_max64(blo, a.lo);
    }
  }
  if (s.lo > 0)
    return kl_rg(st.lo, bhi == KL_RANGE_POS_INF ? bhi : kl_max64(st.hi, kl_sadd(bhi, s.hi)));
  if (s.hi < 0)
    return kl_rg(blo == KL_RANGE_NEG_INF ? blo : kl_min64(st.lo, kl_sadd(blo, s.lo)), st.hi);
  if (s.lo == 0 && s.hi == 0) return st;
  return kl_full;
}

static uint32_t kl_loop(struct kl_ranges *r, uint32_t loop, uint32_t ctx) {
  const struct kl_ir_fn *f = r->f;
  const struct kl_ir_ins *l = &f->ins[loop];
  uint32_t cond = l->nops ? l->ops[0] : 0;
  bool dowhile = l->flags & KL_IR_F_DO_WHILE;
  uint32_t body = cond && !dowhile ? kl_push(r, ctx, loop, KL_K_THEN, cond, true) : ctx;
  const struct kl_ir_block *hdr = &f->blocks[l->blk[0]];
  uint32_t nphis = 0;
  for (uint32_t i = 0; i < hdr->n; i++) {
    const struct kl_ir_ins *p = &f->ins[hdr->ins[i]];
    if (p->op == KL_IR_PHI && p->sub == KL_IR_PHI_HEAD) nphis++;
  }
  uint32_t *phis = kl_arena_alloc(r->arena, (nphis + 1) * sizeof *phis);
  nphis = 0;
  for (uint32_t i = 0; i < hdr->n; i++) {
    const struct kl_ir_ins *p = &f->ins[hdr->ins[i]];
    if (p->op == KL_IR_PHI && p->sub == KL_IR_PHI_HEAD) phis[nphis++] = hdr->ins[i];
  }
  /* Out of budget (loops nested deep, each needing rounds): one walk, with every PHI but a
   * recurrence anything of its type, so the cost stays linear in the nesting. */
  bool cheap = r->budget <= 0;
  /* First estimates: a recurrence's closed range, any other PHI its entry value. */
  for (uint32_t i = 0; i < nphis; i++) {
    uint32_t p = phis[i];
    const struct kl_ir_ins *pi = &f->ins[p];
    const struct kl_scev_atom *at = r->scev ? kl_scev_rec(r->scev, p) : NULL;
    r->ctx[p] = ctx;
    r->base[p] = at                       ? kl_fit(r, pi, kl_rec_range(r, p, at, body, ctx))
                 : cheap                  ? kl_tyr(r, pi)
                 : pi->nops && pi->ops[0] ? r->base[pi->ops[0]]
                                          : kl_full;
  }
  for (int round = 0;; round++) {
    kl_walk(r, l->blk[0], ctx);
    if (l->blk[1]) kl_walk(r, l->blk[1], body);
    if (l->blk[2]) kl_walk(r, l->blk[2], body);
    if (cheap || round > KL_RANGES_ROUNDS) break; /* after widening, the walk that settles */
    bool changed = false;
    for (uint32_t i = 0; i < nphis; i++) {
      uint32_t p = phis[i];
      const struct kl_ir_ins *pi = &f->ins[p];
      const struct kl_scev_atom *at = r->scev ? kl_scev_rec(r->scev, p) : NULL;
      struct kl_range old = r->base[p], nw;
      if (at) {
        nw = kl_fit(r, pi, kl_rec_range(r, p, at, body, ctx));
      } else {
        nw = pi->nops && pi->ops[0] ? r->base[pi->ops[0]] : kl_full;
        if (pi->nops > 1 && pi->ops[1]) nw = kl_join(nw, r->base[pi->ops[1]]);
        nw = kl_join(nw, old);
        /* Widen what still grows after the first round. */
        if (round > 0 && nw.lo < old.lo) nw.lo = KL_RANGE_NEG_INF;
        if (round > 0 && nw.hi > old.hi) nw.hi = KL_RANGE_POS_INF;
        nw = kl_fit(r, pi, nw);
      }
      if (nw.lo != old.lo || nw.hi != old.hi) {
        changed = true;
        /* Still moving after the last round: anything of its type. */
        r->base[p] = round == KL_RANGES_ROUNDS ? kl_tyr(r, pi) : nw;
      }
    }
    if (!changed) break;
    if (round == KL_RANGES_ROUNDS) round++;
  }
  /* After a loop that only its condition leaves, the condition is false. */
  if (cond && !r->has_brk[loop])
    r->has_brk[loop] = (l->blk[1] && kl_has_break(f, l->blk[1], l->site, false)) ||
                               (l->blk[2] && kl_has_break(f, l->blk[2], l->site, false))
                           ? 2
                           : 1;
  if (cond && r->has_brk[loop] == 1) return kl_push(r, ctx, loop, KL_K_AFTER, cond, false);
  return ctx;
}

static uint32_t kl_walk(struct kl_ranges *r, uint32_t block, uint32_t ctx) {
  const struct kl_ir_fn *f = r->f;
  const struct kl_ir_block *b = &f->blocks[block];
  /* Facts after an early return from an inlined helper hold for the rest of the helper only:
   * the chain to go back to when the walk leaves it. */
  struct kl_ranges_scoped {
    uint32_t site, ctx;
  } scoped[16];
  int nscoped = 0;
  for (uint32_t i = 0; i < b->n; i++) {
    uint32_t v = b->ins[i];
    const struct kl_ir_ins *in = &f->ins[v];
    while (nscoped && !kl_site_within(f, in->site, scoped[nscoped - 1].site))
      ctx = scoped[--nscoped].ctx;
    if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_HEAD) continue; /* its loop sets it */
    r->ctx[v] = ctx;
    r->budget--;
    if (in->op == KL_IR_IF) {
      uint32_t cond = in->nops ? in->ops[0] : 0;
      if (in->blk[0]) kl_walk(r, in->blk[0], kl_push(r, ctx, v, KL_K_THEN, cond, true));
      if (in->blk[1]) kl_walk(r, in->blk[1], kl_push(r, ctx, v, KL_K_ELSE, cond, false));
      uint32_t st = 0, se = 0;
      bool t = in->blk[0] && kl_exits(f, in->blk[0], &st);
      bool e = in->blk[1] && kl_exits(f, in->blk[1], &se);
      uint32_t site = t ? st : se;
      if (t != e && (!site || nscoped < 16)) {
        if (site) scoped[nscoped++] = (struct kl_ranges_scoped){site, ctx};
        ctx = kl_push(r, ctx, v, KL_K_AFTER, cond, e);
      }
      continue;
    }
    if (in->op == KL_IR_LOOP) {
      ctx = kl_loop(r, v, ctx);
      continue;
    }
    r->base[v] = kl_full;
    struct kl_range a = kl_meet(kl_compute(r, v, ctx, 1), kl_tyr(r, in));
    r->base[v] = kl_facts(r, v, a, ctx, 1);
  }
  return ctx;
}

struct kl_ranges *kl_ranges_run(struct kl_arena *a, const struct kl_ir_fn *f,
                                const struct kl_scev *s, const struct kl_ranges_launch *launch) {
  struct kl_ranges *r = kl_arena_alloc(a, sizeof *r);
  r->f = f;
  r->scev = s;
  r->arena = a;
  if (launch) r->launch = *launch;
  size_t n = f->nins ? f->nins : 1;
  /* Enough for every loop's rounds in ordinary kernels; past it, loops walk once. */
  r->budget = 64 * (int64_t)n + 4096;
  r->base = kl_arena_alloc_raw(a, n * sizeof *r->base);
  for (size_t i = 0; i < n; i++) r->base[i] = kl_full;
  r->ctx = kl_arena_alloc(a, n * sizeof *r->ctx);
  r->named = kl_arena_alloc(a, n);
  r->strip_of = kl_arena_alloc(a, n * sizeof *r->strip_of);
  r->strip_off = kl_arena_alloc_raw(a, n * sizeof *r->strip_off);
  r->nstrip = n;
  r->has_brk = kl_arena_alloc(a, n);
  r->cache = kl_arena_alloc(a, n * KL_K_NKINDS * sizeof *r->cache);
  /* Node 0 is "no facts". */
  KL_VEC_PUSH(a, r->nodes, r->nnodes, r->cap_nodes);
  memset(&r->nodes[r->nnodes++], 0, sizeof *r->nodes);
  if (f->body) kl_walk(r, f->body, 0);
  return r;
}

void kl_ranges_set_counts(struct kl_ranges *r, const struct kl_ranges_count count[3]) {
  memcpy(r->count, count, sizeof r->count);
}

struct kl_range kl_ranges_of(const struct kl_ranges *r, uint32_t v) {
  if (!v || v >= r->f->nins) return kl_full;
  return r->base[v];
}

struct kl_range kl_ranges_at(struct kl_ranges *r, uint32_t v, uint32_t p) {
  if (!v || v >= r->f->nins || p >= r->f->nins) return kl_full;
  return kl_eval(r, v, p ? r->ctx[p] : 0, KL_RANGES_QDEPTH);
}

/* ---- Upper bounds. */

/* Whether bound a is better than b: a value's bound before a constant's, then the tighter. */
static bool kl_better(const struct kl_ranges_bound *a, const struct kl_ranges_bound *b, bool have) {
  if (!have) return true;
  if (!!a->w != !!b->w) return a->w != 0;
  return a->w == b->w && a->k < b->k;
}

static bool kl_upper(struct kl_ranges *r, uint32_t v, uint32_t ctx, int depth,
                     struct kl_ranges_bound *out);

/* The bound of v's base b (off added to v) found in ctx's facts. */
static bool kl_upper_facts(struct kl_ranges *r, uint32_t b, int64_t off, uint32_t ctx,
                           struct kl_ranges_bound *out) {
  bool have = false;
  uint64_t bit = kl_bit(b);
  for (uint32_t id = ctx; id && (r->nodes[id].all & bit); id = r->nodes[id].parent) {
    const struct kl_ranges_node *nd = &r->nodes[id];
    if (!(nd->own & bit)) continue;
    for (uint32_t i = nd->first; i < nd->first + nd->n; i++) {
      const struct kl_ranges_fact *fa = &r->facts[i];
      if (fa->v != b || (fa->op != KL_IR_LT && fa->op != KL_IR_EQ)) continue;
      struct kl_ranges_bound c = {fa->w, kl_sadd(fa->k, off), fa->by};
      if (fa->op == KL_IR_EQ) c.k = kl_sadd(c.k, 1);
      if (kl_better(&c, out, have)) {
        *out = c;
        have = true;
      }
    }
  }
  return have;
}

/* v <= w + c as a bound v < w + c + 1 (a constant w is folded into k). */
static struct kl_ranges_bound kl_le_bound(const struct kl_ranges *r, uint32_t w, int64_t add,
                                          uint32_t by) {
  int64_t off, c;
  uint32_t b = kl_strip(r, w, &off);
  struct kl_ranges_bound o = {b, kl_sadd(kl_sadd(off, add), 1), by};
  if (kl_ir_const(r->f, b, &c)) {
    o.w = 0;
    o.k = kl_sadd(o.k, c);
  }
  return o;
}

/* min(a, n - 1) <= n - 1: the bound by the operand that is a constant or the same for every
 * thread (the clamp), else by the second. */
static struct kl_ranges_bound kl_min_bound(const struct kl_ranges *r, const struct kl_ir_ins *in,
                                           int64_t off, uint32_t by) {
  struct kl_ranges_bound x = kl_le_bound(r, in->ops[1], off, by);
  struct kl_ranges_bound y = kl_le_bound(r, in->ops[0], off, by);
  bool ux = !x.w || (r->scev && kl_scev_scope(r->scev, x.w) == KL_SCOPE_UNIFORM);
  bool uy = !y.w || (r->scev && kl_scev_scope(r->scev, y.w) == KL_SCOPE_UNIFORM);
  return uy && !ux ? y : x;
}

static bool kl_upper_op(struct kl_ranges *r, uint32_t b, int64_t off, uint32_t ctx, int depth,
                        struct kl_ranges_bound *out) {
  const struct kl_ir_fn *f = r->f;
  const struct kl_ir_ins *in = &f->ins[b];
  struct kl_ranges_bound x = {0, 0, 0}, y = {0, 0, 0};
  bool hx, hy;
  if (depth <= 0) return false;
  switch (in->op) {
  case KL_IR_BINOP:
    if (in->nops < 2) return false;
    switch (in->sub) {
    case KL_IR_MIN:
      *out = kl_min_bound(r, in, off, b);
      return true;
    case KL_IR_REM: {
      struct kl_range d = kl_eval(r, in->ops[1], ctx, 1), a = kl_eval(r, in->ops[0], ctx, 1);
      if (d.lo <= 0 || a.lo < 0) return false;
      *out = kl_le_bound(r, in->ops[1], kl_sadd(off, -1), b);
      return true;
    }
    case KL_IR_AND: {
      int64_t c;
      if ((kl_ir_const(f, in->ops[1], &c) || kl_ir_const(f, in->ops[0], &c)) && c >= 0) {
        *out = (struct kl_ranges_bound){0, kl_sadd(kl_sadd(c, off), 1), b};
        return true;
      }
      return false;
    }
    case KL_IR_ADD: {
      /* a + b with b's range small: a's bound plus b's most (`i + j`, j < 4). A type's range
       * is no bound worth naming. */
      struct kl_range ra = kl_eval(r, in->ops[0], ctx, 1), rb = kl_eval(r, in->ops[1], ctx, 1);
      hx = rb.hi < KL_RANGES_SMALL && kl_upper(r, in->ops[0], ctx, depth - 1, &x);
      hy = ra.hi < KL_RANGES_SMALL && kl_upper(r, in->ops[1], ctx, depth - 1, &y);
      if (hx) x.k = kl_sadd(kl_sadd(x.k, rb.hi), off);
      if (hy) y.k = kl_sadd(kl_sadd(y.k, ra.hi), off);
      if (hx && (!hy || kl_better(&x, &y, true)))
        *out = x;
      else if (hy)
        *out = y;
      return hx || hy;
    }
    default:
      return false;
    }
  case KL_IR_CALL:
    if (!strcmp(kl_callee(in), "min") && in->nops == 2) {
      *out = kl_min_bound(r, in, off, b);
      return true;
    }
    if (!strcmp(kl_callee(in), "clamp") && in->nops == 3) {
      *out = kl_le_bound(r, in->ops[2], off, b);
      return true;
    }
    return false;
  case KL_IR_SELECT:
    if (in->nops < 3) return false;
    hx = kl_upper(r, in->ops[1], kl_push(r, ctx, b, KL_K_THEN, in->ops[0], true), depth - 1, &x);
    hy = kl_upper(r, in->ops[2], kl_push(r, ctx, b, KL_K_ELSE, in->ops[0], false), depth - 1, &y);
    break;
  case KL_IR_PHI:
    if (in->sub != KL_IR_PHI_IF || in->nops != 2 || !in->ref_ins) return false;
    {
      const struct kl_ir_ins *ifi = &f->ins[in->ref_ins];
      uint32_t c = ifi->nops ? ifi->ops[0] : 0;
      hx = kl_upper(r, in->ops[0], kl_push(r, ctx, in->ref_ins, KL_K_THEN, c, true), depth - 1, &x);
      hy =
          kl_upper(r, in->ops[1], kl_push(r, ctx, in->ref_ins, KL_K_ELSE, c, false), depth - 1, &y);
    }
    break;
  default:
    return false;
  }
  /* Both arms of a choice bounded by the same value (or both by constants); an arm that is that
   * value plus a constant bounds itself (`idx < n ? idx : n - 1`). */
  uint32_t a0 = in->op == KL_IR_SELECT ? in->ops[1] : in->ops[0];
  uint32_t a1 = in->op == KL_IR_SELECT ? in->ops[2] : in->ops[1];
  struct kl_ranges_bound c0[2] = {x, kl_le_bound(r, a0, 0, b)};
  struct kl_ranges_bound c1[2] = {y, kl_le_bound(r, a1, 0, b)};
  bool have = false, best_uni = false;
  for (int i = hx ? 0 : 1; i < 2; i++)
    for (int j = hy ? 0 : 1; j < 2; j++) {
      if ((i && j) || c0[i].w != c1[j].w) continue;
      struct kl_ranges_bound m = c0[i].k >= c1[j].k ? c0[i] : c1[j];
      m.by = i ? c1[j].by : c0[i].by; /* name the comparison, not the choice */
      bool uni = !m.w || (r->scev && kl_scev_scope(r->scev, m.w) == KL_SCOPE_UNIFORM);
      if (!have || (uni && !best_uni) || (uni == best_uni && m.k < out->k)) {
        *out = m;
        best_uni = uni;
        have = true;
      }
    }
  if (!have) return false;
  out->k = kl_sadd(out->k, off);
  return true;
}

static bool kl_upper(struct kl_ranges *r, uint32_t v, uint32_t ctx, int depth,
                     struct kl_ranges_bound *out) {
  if (!v) return false;
  int64_t off;
  uint32_t b = kl_strip(r, v, &off);
  struct kl_ranges_bound fb, ob;
  bool hf = kl_upper_facts(r, b, off, ctx, &fb);
  bool ho = kl_upper_op(r, b, off, ctx, depth, &ob);
  if (hf && (!ho || kl_better(&fb, &ob, true) || (fb.w == ob.w && fb.k == ob.k)))
    *out = fb;
  else if (ho)
    *out = ob;
  return hf || ho;
}

bool kl_ranges_upper(struct kl_ranges *r, uint32_t v, uint32_t p, struct kl_ranges_bound *out) {
  if (!v || v >= r->f->nins || p >= r->f->nins) return false;
  struct kl_ranges_bound b = {0, 0, 0};
  bool ok = kl_upper(r, v, p ? r->ctx[p] : 0, KL_RANGES_QDEPTH, &b);
  if (ok && out) *out = b;
  return ok;
}

bool kl_ranges_bounded_above(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *by_ins) {
  struct kl_ranges_bound b;
  if (!kl_ranges_upper(r, v, p, &b)) return false;
  if (by_ins) *by_ins = b.by;
  return true;
}

enum { KL_PART_NO = 0, KL_PART_BOUNDED, KL_PART_UNIFORM };

/* v through integer casts. */
static uint32_t kl_uncast(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; d < 8 && v && f->ins[v].op == KL_IR_CAST && f->ins[v].nops &&
                  !kl_float_type(f->ins[v].type);
       d++)
    v = f->ins[v].ops[0];
  return v;
}

/* Whether v is x times a positive constant (`x * 4`, `4 * x`, `x << 2`): *x and *s. */
static bool kl_scaled(const struct kl_ir_fn *f, uint32_t v, uint32_t *x, int64_t *s) {
  const struct kl_ir_ins *in = &f->ins[kl_uncast(f, v)];
  int64_t c;
  if (in->op != KL_IR_BINOP || in->nops != 2) return false;
  if (in->sub == KL_IR_MUL && kl_ir_const(f, in->ops[1], &c) && c > 0)
    *x = in->ops[0];
  else if (in->sub == KL_IR_MUL && kl_ir_const(f, in->ops[0], &c) && c > 0)
    *x = in->ops[1];
  else if (in->sub == KL_IR_SHL && kl_ir_const(f, in->ops[1], &c) && c >= 0 && c < 31)
    *x = in->ops[0], c = (int64_t)1 << c;
  else
    return false;
  *s = c;
  return true;
}

/* The launch count whose coordinate v is div times (through casts), or NULL. */
static const struct kl_ranges_count *kl_counted_start(const struct kl_ranges *r, uint32_t v) {
  const struct kl_ir_fn *f = r->f;
  uint32_t x = kl_uncast(f, v);
  int64_t s = 1;
  if (!kl_scaled(f, x, &x, &s)) s = 1;
  x = kl_uncast(f, x);
  const struct kl_ir_ins *in = &f->ins[x];
  if (!x || in->op != KL_IR_COORD || !in->coord || (in->flags & KL_IR_F_VECTOR) || in->imm < 0 ||
      in->imm > 2)
    return NULL;
  const struct kl_ranges_count *c = &r->count[in->imm];
  const char *want = c->groups ? "threadgroup_position_in_grid" : "thread_position_in_grid";
  if (!c->n || c->div != s || strcmp(in->coord->name, want)) return NULL;
  return c;
}

/* Part v against the launch's counts (kl_ranges_address_covered): KL_PART_BOUNDED below its
 * count, KL_PART_NO when it may pass it, -1 when v is no counted start plus a part. */
static int kl_counted(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *by) {
  const struct kl_ir_fn *f = r->f;
  int64_t off;
  uint32_t b = kl_strip(r, v, &off);
  if (!b || off < 0) return -1;
  const struct kl_ranges_count *c = kl_counted_start(r, b);
  int64_t t = 0;
  uint32_t start = b;
  if (!c) {
    const struct kl_ir_ins *in = &f->ins[kl_uncast(f, b)];
    if (in->op != KL_IR_BINOP || in->sub != KL_IR_ADD || in->nops != 2) return -1;
    for (int side = 0; side < 2 && !c; side++) {
      c = kl_counted_start(r, in->ops[side]);
      if (!c) continue;
      start = in->ops[side];
      struct kl_range rt = kl_ranges_at(r, in->ops[1 - side], p);
      if (rt.lo < 0) return KL_PART_NO;
      t = rt.hi;
    }
    if (!c) return -1;
  }
  /* coord <= floor((n + add) / div) - 1, so div * coord <= n + add - div. */
  int64_t k = kl_sadd(kl_sadd(kl_sadd(c->add, -c->div), 1), kl_sadd(off, t));
  if (k > 0) return KL_PART_NO;
  *by = start;
  return KL_PART_BOUNDED;
}

static int kl_parts(struct kl_ranges *r, uint32_t v, uint32_t p, int depth, bool cover,
                    uint32_t *by);

/* Whether x + t is below s times g's bound: x is s * g with g bounded, t in [0, s - 1] at p. */
static bool kl_within_stride(struct kl_ranges *r, uint32_t x, uint32_t t, uint32_t p, int depth,
                             uint32_t *by) {
  uint32_t g;
  int64_t s;
  if (!kl_scaled(r->f, x, &g, &s) || s < 2) return false;
  struct kl_range rt = kl_ranges_at(r, t, p);
  if (rt.lo < 0 || rt.hi > s - 1) return false;
  return kl_parts(r, g, p, depth, true, by) == KL_PART_BOUNDED;
}

static int kl_parts(struct kl_ranges *r, uint32_t v, uint32_t p, int depth, bool cover,
                    uint32_t *by) {
  const struct kl_ir_fn *f = r->f;
  if (r->scev && kl_scev_scope(r->scev, v) == KL_SCOPE_UNIFORM) return KL_PART_UNIFORM;
  if (kl_ranges_bounded_above(r, v, p, by)) return KL_PART_BOUNDED;
  if (cover) {
    int c = kl_counted(r, v, p, by);
    if (c >= 0) return c;
  }
  if (depth <= 0) return KL_PART_NO;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_CAST && in->nops) return kl_parts(r, in->ops[0], p, depth - 1, cover, by);
  if (in->op != KL_IR_BINOP || in->nops < 2) return KL_PART_NO;
  uint32_t bx = 0, byy = 0;
  int a = kl_parts(r, in->ops[0], p, depth - 1, cover, &bx);
  int b = KL_PART_NO;
  switch (in->sub) {
  case KL_IR_ADD:
    b = kl_parts(r, in->ops[1], p, depth - 1, cover, &byy);
    /* A part the launch or the code holds within the stride of a bounded one. */
    if (cover && kl_within_stride(r, in->ops[1], in->ops[0], p, depth - 1, by))
      return KL_PART_BOUNDED;
    if (cover && kl_within_stride(r, in->ops[0], in->ops[1], p, depth - 1, by))
      return KL_PART_BOUNDED;
    /* Kept in bounds, not only compared: a bounded part plus anything that may be positive can
     * pass its bound (`row * 256 + pos.x + 1`). */
    if (cover && (a == KL_PART_UNIFORM || b == KL_PART_UNIFORM)) {
      struct kl_range ru = kl_ranges_at(r, in->ops[a == KL_PART_UNIFORM ? 0 : 1], p);
      if (ru.hi > 0) return KL_PART_NO;
    }
    break;
  case KL_IR_SUB: {
    /* x - y is below x's bound when y is not negative. */
    struct kl_range ry = kl_ranges_at(r, in->ops[1], p);
    b = r->scev && kl_scev_scope(r->scev, in->ops[1]) == KL_SCOPE_UNIFORM ? KL_PART_UNIFORM
        : ry.lo >= 0                                                      ? KL_PART_BOUNDED
                                                                          : KL_PART_NO;
    break;
  }
  case KL_IR_MUL:
  case KL_IR_SHL:
  case KL_IR_DIV:
    b = kl_parts(r, in->ops[1], p, depth - 1, cover, &byy);
    /* Kept in bounds, not only compared: a bounded part scaled up can pass its bound
     * (`first_row * 2` under a grid counted for first_row). The launch's shapes are read by
     * kl_counted and kl_within_stride, and a DIV or SHR only shrinks. */
    if (cover && in->sub != KL_IR_DIV && !(a == KL_PART_UNIFORM && b == KL_PART_UNIFORM))
      return KL_PART_NO;
    /* A product is bounded by bounding its varying factor; the other must be uniform. */
    if (a == KL_PART_BOUNDED && b == KL_PART_UNIFORM)
      b = KL_PART_BOUNDED;
    else if (in->sub == KL_IR_MUL && b == KL_PART_BOUNDED && a == KL_PART_UNIFORM)
      a = b;
    else if (a != KL_PART_UNIFORM || b != KL_PART_UNIFORM)
      return KL_PART_NO;
    break;
  default:
    return KL_PART_NO;
  }
  if (a == KL_PART_NO || b == KL_PART_NO) return KL_PART_NO;
  if (a == KL_PART_UNIFORM && b == KL_PART_UNIFORM) return KL_PART_UNIFORM;
  *by = a == KL_PART_BOUNDED ? bx : byy;
  /* `63 - lid`: below the uniform value it subtracts from; the subtraction shows it. */
  if (!*by) *by = v;
  return KL_PART_BOUNDED;
}

static bool kl_parts_bounded(struct kl_ranges *r, uint32_t v, uint32_t p, bool cover,
                             uint32_t *by_ins) {
  if (!v || v >= r->f->nins || p >= r->f->nins) return false;
  uint32_t by = 0;
  if (kl_parts(r, v, p, 6, cover, &by) != KL_PART_BOUNDED) return false;
  if (by_ins) *by_ins = by;
  return true;
}

bool kl_ranges_parts_bounded(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *by_ins) {
  return kl_parts_bounded(r, v, p, false, by_ins);
}

static bool kl_address(struct kl_ranges *r, uint32_t addr, uint32_t p, bool cover,
                       uint32_t *by_ins) {
  const struct kl_ir_fn *f = r->f;
  bool varies = false;
  uint32_t first = 0;
  for (int d = 0; d < 32 && addr && addr < f->nins; d++) {
    const struct kl_ir_ins *in = &f->ins[addr];
    if (in->op != KL_IR_INDEX && in->op != KL_IR_MEMBER && in->op != KL_IR_CAST) break;
    if (!in->nops) break;
    if (in->op == KL_IR_INDEX && in->nops > 1 &&
        !(r->scev && kl_scev_scope(r->scev, in->ops[1]) == KL_SCOPE_UNIFORM)) {
      uint32_t by = 0;
      if (!kl_parts_bounded(r, in->ops[1], p, cover, &by)) return false;
      varies = true;
      if (!first) first = by;
    }
    addr = in->ops[0];
  }
  if (varies && by_ins) *by_ins = first;
  return varies;
}

bool kl_ranges_address_bounded(struct kl_ranges *r, uint32_t addr, uint32_t p, uint32_t *by_ins) {
  return kl_address(r, addr, p, false, by_ins);
}

bool kl_ranges_address_covered(struct kl_ranges *r, uint32_t addr, uint32_t p, uint32_t *by_ins) {
  return kl_address(r, addr, p, true, by_ins);
}

/* ---- What ranges_past.c asks (analyzer/passes/ranges_int.h). */

int64_t kl_ranges_sadd(int64_t x, int64_t y) {
  return kl_sadd(x, y);
}

bool kl_ranges_is_float(const char *t) {
  return kl_float_type(t);
}

uint32_t kl_ranges_strip(const struct kl_ranges *r, uint32_t v, int64_t *off) {
  return kl_strip(r, v, off);
}

uint32_t kl_ranges_uncast(const struct kl_ir_fn *f, uint32_t v) {
  return kl_uncast(f, v);
}

bool kl_ranges_upper_in(struct kl_ranges *r, uint32_t v, uint32_t ctx,
                        struct kl_ranges_bound *out) {
  return kl_upper(r, v, ctx, KL_RANGES_QDEPTH, out);
}

uint32_t kl_ranges_facts_at(struct kl_ranges *r, uint32_t p, const struct kl_ranges_fact **out) {
  uint32_t n = 0;
  uint32_t ctx = p && p < r->f->nins ? r->ctx[p] : 0;
  for (uint32_t id = ctx; id; id = r->nodes[id].parent) n += r->nodes[id].n;
  /* Copied once per node: bounds-guard asks at every access, and a copy per question of a
   * kernel nested deep in conditions took megabytes. Nodes never change once made. */
  if (ctx >= r->cap_chain) {
    uint32_t cap = r->nnodes > ctx ? r->nnodes : ctx + 1;
    r->chain = kl_arena_grow(r->arena, r->chain, r->cap_chain, cap, sizeof *r->chain);
    r->cap_chain = cap;
  }
  if (r->chain[ctx]) {
    *out = r->chain[ctx];
    return n;
  }
  struct kl_ranges_fact *a = kl_arena_alloc(r->arena, (n + 1) * sizeof *a);
  uint32_t k = 0;
  for (uint32_t id = ctx; id; id = r->nodes[id].parent)
    for (uint32_t i = 0; i < r->nodes[id].n; i++) a[k++] = r->facts[r->nodes[id].first + i];
  r->chain[ctx] = a;
  *out = a;
  return n;
}

void kl_ranges_dump(const struct kl_ranges *r, FILE *out) {
  for (uint32_t v = 1; v < r->f->nins; v++) {
    struct kl_range a = r->base[v];
    fprintf(out, "v%u %s: [", v, kl_ir_op_name((enum kl_ir_op)r->f->ins[v].op));
    if (a.lo == KL_RANGE_NEG_INF)
      fputs("-inf", out);
    else
      fprintf(out, "%lld", (long long)a.lo);
    if (a.hi == KL_RANGE_POS_INF)
      fputs(", inf]", out);
    else
      fprintf(out, ", %lld]", (long long)a.hi);
    uint32_t n = 0;
    for (uint32_t id = r->ctx[v]; id; id = r->nodes[id].parent) n += r->nodes[id].n;
    fprintf(out, " (%u facts)\n", n);
  }
  for (uint32_t i = 0; i < r->nfacts; i++) {
    static const char *const ops[] = {
        [KL_IR_LT] = "<", [KL_IR_GT] = ">", [KL_IR_EQ] = "==", [KL_IR_NE] = "!="};
    const struct kl_ranges_fact *fa = &r->facts[i];
    fprintf(out, "fact %u: v%u %s v%u + %lld (by v%u)\n", i, fa->v,
            fa->op < sizeof ops / sizeof ops[0] && ops[fa->op] ? ops[fa->op] : "?", fa->w,
            (long long)fa->k, fa->by);
  }
}
