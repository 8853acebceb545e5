#include "analyzer/input/dispatch.h"

#include <string.h>

#include "grammar/consteval.h"

/* Expressions are built from source text, so their depth is bounded by the nesting limit; the
 * recognisers still stop here rather than trust that. */
#define KL_DX_MAX_DEPTH 64
/* Terms of one sum looked at when recognising (n + d - 1) / d. */
#define KL_DX_MAX_TERMS 16
/* Messages quote at most this much of an expression. */
#define KL_DISPATCH_MAX_QUOTE 60
/* The largest threadgroup, so the largest granule that can matter for one. */
#define KL_DISPATCH_MAX_TG_GRANULE 1024

void kl_dispatch_list_init(struct kl_dispatch_list *l, struct kl_arena *a) {
  memset(l, 0, sizeof *l);
  l->arena = a;
}

struct kl_dispatch *kl_dispatch_add(struct kl_dispatch_list *l) {
  KL_VEC_PUSH(l->arena, l->items, l->n, l->cap);
  struct kl_dispatch *d = &l->items[l->n++];
  memset(d, 0, sizeof *d);
  return d;
}

struct kl_dx *kl_dx_int(struct kl_arena *a, int64_t v) {
  struct kl_dx *e = kl_arena_alloc(a, sizeof *e);
  e->op = KL_DX_INT;
  e->known = true;
  e->v = v;
  return e;
}

struct kl_dx *kl_dx_leaf(struct kl_arena *a, const char *text) {
  struct kl_dx *e = kl_arena_alloc(a, sizeof *e);
  e->op = KL_DX_LEAF;
  e->text = text;
  return e;
}

/* Fold a node whose operands are known; leaves it unknown on overflow or a bad operand. The
 * arithmetic is the shared evaluator's, with Python's rounding for // and %. */
static void kl_dx_fold(struct kl_dx *e) {
  const struct kl_dx *x = e->a, *y = e->b;
  bool bin = e->op != KL_DX_NEG && e->op != KL_DX_CEIL;
  if (!x || !x->known || (bin && (!y || !y->known))) return;
  enum kl_cop op = KL_COP_ADD; /* every case below sets it or returns */
  switch (e->op) {
  case KL_DX_ADD:
    op = KL_COP_ADD;
    break;
  case KL_DX_SUB:
    op = KL_COP_SUB;
    break;
  case KL_DX_MUL:
    op = KL_COP_MUL;
    break;
  case KL_DX_DIV:
    op = KL_COP_FLOORDIV;
    break;
  case KL_DX_TDIV: /* only an exact quotient is an integer */
    op = KL_COP_EXACTDIV;
    break;
  case KL_DX_MOD:
    op = KL_COP_FLOORMOD;
    break;
  case KL_DX_SHL:
    op = KL_COP_SHL;
    break;
  case KL_DX_SHR:
    op = KL_COP_SHR;
    break;
  case KL_DX_NEG:
    op = KL_COP_NEG;
    break;
  case KL_DX_MIN:
    op = KL_COP_MIN;
    break;
  case KL_DX_MAX:
    op = KL_COP_MAX;
    break;
  case KL_DX_CEILDIV:
    op = KL_COP_CEILDIV;
    break;
  case KL_DX_ROUNDUP:
    op = KL_COP_ROUNDUP;
    break;
  case KL_DX_CEIL:
    e->known = true;
    e->v = x->v;
    return;
  case KL_DX_INT:
  case KL_DX_LEAF:
    return;
  }
  int64_t r;
  if (!kl_consteval_apply(op, x->v, bin ? y->v : 0, &r)) return;
  e->known = true;
  e->v = r;
}

struct kl_dx *kl_dx_op(struct kl_arena *a, enum kl_dx_op op, struct kl_dx *x, struct kl_dx *y) {
  bool unary = op == KL_DX_NEG || op == KL_DX_CEIL;
  if (!x || (!unary && !y)) return NULL;
  struct kl_dx *e = kl_arena_alloc(a, sizeof *e);
  e->op = op;
  e->a = x;
  e->b = unary ? NULL : y;
  /* A true division inside ceil() is a ceiling division: ceil(1000 / 256) is 4. */
  if (op == KL_DX_CEIL && x->op == KL_DX_TDIV && !x->known && x->a && x->b && x->a->known &&
      x->b->known && x->b->v > 0 && x->a->v >= 0 && x->a->v <= INT64_MAX - x->b->v) {
    e->known = true;
    e->v = (x->a->v + x->b->v - 1) / x->b->v;
    return e;
  }
  kl_dx_fold(e);
  return e;
}

bool kl_dx_value(const struct kl_dx *e, int64_t *v) {
  if (!e || !e->known) return false;
  *v = e->v;
  return true;
}

static bool kl_dx_equal_at(const struct kl_dx *x, const struct kl_dx *y, int depth) {
  if (!x || !y || depth > KL_DX_MAX_DEPTH) return false;
  if (x->known && y->known) return x->v == y->v;
  if (x->known != y->known || x->op != y->op) return false;
  if (x->op == KL_DX_LEAF) return x->text && y->text && !strcmp(x->text, y->text);
  if (!kl_dx_equal_at(x->a, y->a, depth + 1)) return false;
  return (!x->b && !y->b) || kl_dx_equal_at(x->b, y->b, depth + 1);
}

bool kl_dx_equal(const struct kl_dx *x, const struct kl_dx *y) {
  return kl_dx_equal_at(x, y, 0);
}

struct kl_dx_terms {
  const struct kl_dx *t[KL_DX_MAX_TERMS];
  int sign[KL_DX_MAX_TERMS];
  int n;
  bool overflow;
};

/* Flatten a sum into signed terms: (n + d) - 1 gives +n, +d, -1. */
static void kl_dx_flatten(const struct kl_dx *e, int sign, struct kl_dx_terms *ts, int depth) {
  if (!e || depth > KL_DX_MAX_DEPTH) {
    ts->overflow = true;
    return;
  }
  if (e->op == KL_DX_ADD || e->op == KL_DX_SUB) {
    kl_dx_flatten(e->a, sign, ts, depth + 1);
    kl_dx_flatten(e->b, e->op == KL_DX_ADD ? sign : -sign, ts, depth + 1);
    return;
  }
  if (e->op == KL_DX_NEG) {
    kl_dx_flatten(e->a, -sign, ts, depth + 1);
    return;
  }
  if (ts->n == KL_DX_MAX_TERMS) {
    ts->overflow = true;
    return;
  }
  ts->t[ts->n] = e;
  ts->sign[ts->n++] = sign;
}

/* Remove the first term with this sign that matches want (by value when want_value). */
static bool kl_dx_take(struct kl_dx_terms *ts, int sign, const struct kl_dx *want, bool want_value,
                       int64_t value) {
  for (int i = 0; i < ts->n; i++) {
    if (ts->sign[i] != sign) continue;
    bool hit = want_value ? (ts->t[i]->known && ts->t[i]->v == value) : kl_dx_equal(ts->t[i], want);
    if (!hit) continue;
    ts->t[i] = ts->t[ts->n - 1];
    ts->sign[i] = ts->sign[ts->n - 1];
    ts->n--;
    return true;
  }
  return false;
}

/* Whether num is n + d - 1 (or n + (k - 1) for a known divisor k), with n what is left. */
static bool kl_dx_plus_d_minus_1(const struct kl_dx *num, const struct kl_dx *d) {
  struct kl_dx_terms ts = {0};
  kl_dx_flatten(num, 1, &ts, 0);
  if (ts.overflow) return false;
  struct kl_dx_terms t1 = ts;
  if (kl_dx_take(&t1, 1, d, false, 0) && kl_dx_take(&t1, -1, NULL, true, 1) && t1.n > 0)
    return true;
  int64_t k;
  if (kl_dx_value(d, &k) && k > 1) {
    struct kl_dx_terms t2 = ts;
    if (kl_dx_take(&t2, 1, NULL, true, k - 1) && t2.n > 0) return true;
  }
  return false;
}

bool kl_dx_is_ceil_div(const struct kl_dx *e, const struct kl_dx **div) {
  if (!e) return false;
  switch (e->op) {
  case KL_DX_CEILDIV:
    *div = e->b;
    return true;
  case KL_DX_CEIL:
    if (e->a && (e->a->op == KL_DX_TDIV || e->a->op == KL_DX_DIV)) {
      *div = e->a->b;
      return true;
    }
    return false;
  case KL_DX_NEG: /* -(-n // d) */
    if (e->a && e->a->op == KL_DX_DIV && e->a->a && e->a->a->op == KL_DX_NEG) {
      *div = e->a->b;
      return true;
    }
    return false;
  case KL_DX_DIV:
  case KL_DX_TDIV:
    if (kl_dx_plus_d_minus_1(e->a, e->b)) {
      *div = e->b;
      return true;
    }
    return false;
  case KL_DX_ADD: /* (n - 1) / d + 1 */
    for (int s = 0; s < 2; s++) {
      const struct kl_dx *q = s ? e->b : e->a, *one = s ? e->a : e->b;
      if (!one || !one->known || one->v != 1 || !q || q->op != KL_DX_DIV) continue;
      struct kl_dx_terms ts = {0};
      kl_dx_flatten(q->a, 1, &ts, 0);
      if (!ts.overflow && kl_dx_take(&ts, -1, NULL, true, 1) && ts.n > 0) {
        *div = q->b;
        return true;
      }
    }
    return false;
  default:
    return false;
  }
}

/* v + a with a a known constant >= 0 (sums and differences of constants), v a plain name. */
static bool kl_dx_name_plus(const struct kl_dx *e, const char **name, int64_t *add, int depth) {
  if (!e || depth > 8) return false;
  if (e->op == KL_DX_LEAF && !e->known && e->text && *e->text) {
    for (const char *c = e->text; *c; c++)
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
            (c > e->text && *c >= '0' && *c <= '9')))
        return false;
    *name = e->text;
    *add = 0;
    return true;
  }
  if ((e->op != KL_DX_ADD && e->op != KL_DX_SUB) || !e->a || !e->b) return false;
  int64_t k;
  const struct kl_dx *rest = NULL;
  if (e->b->known) {
    rest = e->a;
    k = e->op == KL_DX_ADD ? e->b->v : -e->b->v;
  } else if (e->op == KL_DX_ADD && e->a->known) {
    rest = e->b;
    k = e->a->v;
  } else {
    return false;
  }
  if (!kl_dx_name_plus(rest, name, add, depth + 1) || __builtin_add_overflow(*add, k, add))
    return false;
  return true;
}

bool kl_dx_count(const struct kl_dx *e, const char **name, int64_t *add, int64_t *div) {
  if (!e) return false;
  *div = 1;
  if ((e->op == KL_DX_DIV || e->op == KL_DX_CEILDIV) && e->b && e->b->known && e->b->v >= 1) {
    *div = e->b->v;
    if (!kl_dx_name_plus(e->a, name, add, 0)) return false;
    if (e->op == KL_DX_CEILDIV && __builtin_add_overflow(*add, *div - 1, add)) return false;
  } else if (!kl_dx_name_plus(e, name, add, 0)) {
    return false;
  }
  /* A negative offset can wrap an unsigned count past zero into a huge grid. */
  return *add >= 0;
}

/* The count ceiling division e (by div, kl_dx_is_ceil_div) divides, when it is one term. */
static const struct kl_dx *kl_dx_ceil_num(const struct kl_dx *e, const struct kl_dx *div) {
  switch (e->op) {
  case KL_DX_CEILDIV:
    return e->a;
  case KL_DX_CEIL:
    return e->a->a;
  case KL_DX_NEG:
    return e->a->a->a;
  case KL_DX_DIV:
  case KL_DX_TDIV:
  case KL_DX_ADD: {
    /* (n + d - 1) / d, (n + k - 1) / d, (n - 1) / d + 1: n is what is left past the terms that
     * round up. */
    const struct kl_dx *num = e->a;
    if (e->op == KL_DX_ADD) {
      const struct kl_dx *q = e->a && e->a->op == KL_DX_DIV ? e->a : e->b;
      num = q && q->op == KL_DX_DIV ? q->a : NULL;
    }
    if (!num) return NULL;
    struct kl_dx_terms ts = {0};
    kl_dx_flatten(num, 1, &ts, 0);
    if (ts.overflow) return NULL;
    int64_t k;
    struct kl_dx_terms t1 = ts;
    bool ok = e->op == KL_DX_ADD
                  ? kl_dx_take(&t1, -1, NULL, true, 1)
                  : (kl_dx_take(&t1, 1, div, false, 0) && kl_dx_take(&t1, -1, NULL, true, 1));
    if (!ok && e->op != KL_DX_ADD && kl_dx_value(div, &k) && k > 1) {
      t1 = ts;
      ok = kl_dx_take(&t1, 1, NULL, true, k - 1);
    }
    return ok && t1.n == 1 && t1.sign[0] == 1 ? t1.t[0] : NULL;
  }
  default:
    return NULL;
  }
}

/* Whether some fact says div divides count. */
static bool kl_dx_divides(const struct kl_dx *count, const struct kl_dx *div,
                          const struct kl_dx *const *num, const struct kl_dx *const *fdiv,
                          size_t n) {
  int64_t a, b;
  if (!count || !div) return false;
  for (size_t i = 0; i < n; i++) {
    if (!kl_dx_equal(count, num[i])) continue;
    if (kl_dx_equal(div, fdiv[i])) return true;
    if (kl_dx_value(div, &a) && kl_dx_value(fdiv[i], &b) && a > 0 && b % a == 0) return true;
  }
  return false;
}

/* Whether e is a rounding of a count the tests say its divisor divides: `round_up(n, d)`,
 * `ceil_div(n, d)`, `ceil_div(n, d) * d`, or `ceil_div(n, d) * f` with f the threadgroup's
 * extent (tg, 0 unknown) in that dimension -- whole groups of f threads, one per d of the count.
 * Nothing else counts: a rounding inside a larger expression (`... + 64`, `... * 64 * 2`) launches
 * past it. */
static bool kl_dx_exact_at(const struct kl_dx *e, const struct kl_dx *const *num,
                           const struct kl_dx *const *div, size_t n, int64_t tg) {
  if (!e) return false;
  const struct kl_dx *d;
  if (e->op == KL_DX_ROUNDUP) return kl_dx_divides(e->a, e->b, num, div, n);
  if (kl_dx_is_ceil_div(e, &d)) return kl_dx_divides(kl_dx_ceil_num(e, d), d, num, div, n);
  if (e->op != KL_DX_MUL) return false;
  for (int side = 0; side < 2; side++) {
    const struct kl_dx *c = side ? e->b : e->a, *f = side ? e->a : e->b;
    int64_t k;
    if (kl_dx_is_ceil_div(c, &d) && (kl_dx_equal(f, d) || (kl_dx_value(f, &k) && k == tg)))
      return kl_dx_divides(kl_dx_ceil_num(c, d), d, num, div, n);
  }
  return false;
}

bool kl_dx_exact(const struct kl_dx *e, const struct kl_dx *const *num,
                 const struct kl_dx *const *div, size_t n, int64_t tg) {
  return n && kl_dx_exact_at(e, num, div, n, tg);
}

static const struct kl_dx *kl_dx_rounded_at(const struct kl_dx *e, int depth) {
  if (!e || depth > KL_DX_MAX_DEPTH) return NULL;
  if (e->op == KL_DX_ROUNDUP) return e;
  if (e->op == KL_DX_MUL) {
    const struct kl_dx *d;
    if ((kl_dx_is_ceil_div(e->a, &d) && kl_dx_equal(d, e->b)) ||
        (kl_dx_is_ceil_div(e->b, &d) && kl_dx_equal(d, e->a)))
      return e;
  }
  if (e->op == KL_DX_INT || e->op == KL_DX_LEAF) return NULL;
  const struct kl_dx *r = kl_dx_rounded_at(e->a, depth + 1);
  return r ? r : kl_dx_rounded_at(e->b, depth + 1);
}

const struct kl_dx *kl_dx_rounded(const struct kl_dx *e) {
  return kl_dx_rounded_at(e, 0);
}

static bool kl_dx_clamped_at(const struct kl_dx *e, int depth) {
  if (!e || depth > KL_DX_MAX_DEPTH || e->known) return false;
  if (e->op == KL_DX_MIN) return true; /* not known: an operand is a runtime value */
  if (e->op == KL_DX_INT || e->op == KL_DX_LEAF) return false;
  return kl_dx_clamped_at(e->a, depth + 1) || kl_dx_clamped_at(e->b, depth + 1);
}

bool kl_dx_clamped(const struct kl_dx *e) {
  return kl_dx_clamped_at(e, 0);
}

/* Whether leaf text reads a pipeline's own limit (`p->maxTotalThreadsPerThreadgroup()`,
 * `threadExecutionWidth`, a wrapper named for the maximum): at most 1024, a multiple of 32. */
static bool kl_dx_limit_text(const char *t) {
  static const char *const limits[] = {"maxTotalThreadsPerThreadgroup", "threadExecutionWidth",
                                       "max_threads_per_threadgroup", "max_theads_per_threadgroup",
                                       "max_total_threads"};
  for (size_t k = 0; t && k < sizeof limits / sizeof limits[0]; k++)
    if (strstr(t, limits[k])) return true;
  return false;
}

#define KL_DX_MAX_GRANULE ((int64_t)1 << 20)

static int64_t kl_dx_granule_at(const struct kl_dx *e, int depth) {
  if (!e || depth > KL_DX_MAX_DEPTH) return 1;
  if (e->known) {
    if (e->v == 0) return KL_DX_MAX_GRANULE;
    int64_t g = 1;
    while (g < KL_DX_MAX_GRANULE && e->v % (g * 2) == 0) g *= 2;
    return g;
  }
  /* A pipeline's limit is whole SIMD groups; a name the front end followed may be known to be
   * a multiple (doubled from 32). */
  if (e->op == KL_DX_LEAF)
    return kl_dx_limit_text(e->text)                           ? 32
           : e->granule > 1 && e->granule <= KL_DX_MAX_GRANULE ? e->granule
                                                               : 1;
  int64_t a = kl_dx_granule_at(e->a, depth + 1), b = kl_dx_granule_at(e->b, depth + 1), k;
  switch (e->op) {
  case KL_DX_MUL:
    return a * b < KL_DX_MAX_GRANULE ? a * b : KL_DX_MAX_GRANULE;
  case KL_DX_ADD:
  case KL_DX_SUB:
  case KL_DX_MIN:
  case KL_DX_MAX:
    return a < b ? a : b;
  case KL_DX_NEG:
  case KL_DX_CEIL:
    return a;
  case KL_DX_ROUNDUP:
    return b;
  case KL_DX_SHL:
    if (!kl_dx_value(e->b, &k) || k < 0 || k > 20) return a;
    return a << k < KL_DX_MAX_GRANULE ? a << k : KL_DX_MAX_GRANULE;
  default:
    return 1;
  }
}

int64_t kl_dx_granule(const struct kl_dx *e) {
  return kl_dx_granule_at(e, 0);
}

static int64_t kl_dx_gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static int64_t kl_dx_multiple_at(const struct kl_dx *e, int depth) {
  if (!e || depth > KL_DX_MAX_DEPTH) return 1;
  /* Capped so that products stay exact; a value past the cap is known by its factor of two. */
  if (e->known)
    return e->v > 0 && e->v <= KL_DX_MAX_GRANULE    ? e->v
           : e->v < 0 && -e->v <= KL_DX_MAX_GRANULE ? -e->v
                                                    : kl_dx_granule_at(e, depth);
  int64_t a = kl_dx_multiple_at(e->a, depth + 1), b = kl_dx_multiple_at(e->b, depth + 1), k;
  switch (e->op) {
  case KL_DX_MUL:
    return a * b <= KL_DX_MAX_GRANULE ? a * b : kl_dx_gcd(a * b, KL_DX_MAX_GRANULE);
  case KL_DX_ADD:
  case KL_DX_SUB:
  case KL_DX_MIN:
  case KL_DX_MAX:
    return kl_dx_gcd(a, b);
  case KL_DX_NEG:
    return a;
  case KL_DX_ROUNDUP:
    return b;
  case KL_DX_SHL:
    if (!kl_dx_value(e->b, &k) || k < 0 || k > 20) return a;
    return a << k <= KL_DX_MAX_GRANULE ? a << k : kl_dx_gcd(a << k, KL_DX_MAX_GRANULE);
  default:
    return 1;
  }
}

int64_t kl_dx_multiple(const struct kl_dx *e) {
  return kl_dx_multiple_at(e, 0);
}

const char *kl_dispatch_quote(struct kl_arena *a, const struct kl_source *src, uint32_t s,
                              uint32_t e) {
  const char *t = src->text;
  if (e > s + KL_DISPATCH_MAX_QUOTE) {
    e = s + KL_DISPATCH_MAX_QUOTE;
    while (e > s && (t[e] & 0xC0) == 0x80) e--;
  }
  char *q = kl_arena_strndup(a, t + s, e - s);
  for (char *c = q; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
  return q;
}

void kl_dispatch_set_grid(struct kl_dispatch *d, struct kl_arena *a, const struct kl_source *src,
                          struct kl_dx *const *dims, size_t n, bool groups, uint32_t fs,
                          uint32_t fe) {
  bool known = !groups && n > 0 && n <= 3;
  for (size_t i = 0; i < 3; i++) d->grid_size[i] = 1;
  for (size_t i = 0; i < n && known; i++) known = kl_dx_value(dims[i], &d->grid_size[i]);
  d->grid_known = known;
  for (size_t i = 0; i < 3; i++) {
    int64_t v;
    d->grid_threads[i] = !groups && i < n && kl_dx_value(dims[i], &v) && v > 0 ? v : 0;
  }
  /* A dimension not given is one thread. */
  for (size_t i = n; i < 3 && !groups && n > 0; i++) d->grid_threads[i] = 1;
  d->grid_groups = groups;
  bool one = groups && n > 0 && n <= 3;
  for (size_t i = 0; i < n && one; i++) {
    int64_t v;
    one = kl_dx_value(dims[i], &v) && v == 1;
  }
  d->grid_one_group = one;
  for (size_t i = 0; i < 3; i++) d->grid_multiple[i] = i < n ? kl_dx_multiple(dims[i]) : 1;
  for (size_t i = 0; i < n; i++) {
    const struct kl_dx *div, *r;
    /* Threadgroups counted by a ceiling division cover more threads than the data. */
    if (groups)
      r = kl_dx_is_ceil_div(dims[i], &div) ? dims[i] : NULL;
    else
      r = kl_dx_rounded(dims[i]);
    if (!r) continue;
    d->grid_dims |= (uint8_t)(1u << i);
    if (d->grid_rounded) continue; /* the first rounded dimension is the one quoted */
    d->grid_rounded = true;
    uint32_t s = r->end > r->start ? r->start : fs;
    uint32_t e = r->end > r->start ? r->end : fe;
    d->grid_span = kl_diag_span(src, s, e);
    const char *q = kl_dispatch_quote(a, src, s, e);
    d->grid_text = groups ? kl_arena_printf(a, "%s threadgroups", q) : q;
  }
}

/* Whether leaf text reads a size of the data: a tensor's dimension (ggml's `src0->ne[1]`,
 * `x.shape(0)`, `x.shape[2]`, `t.size(1)`, `t.sizes()[0]`, `a.dim(0)`), with no clamp. A name
 * that is none of these (a parameter, a value set in branches) may be a tile size. */
static bool kl_dx_data_text(const char *t) {
  static const char *const reads[] = {"->ne[",     ".ne[",      ".shape(", ".shape[",
                                      ".shape()[", ".sizes()[", ".size(",  ".dim("};
  for (size_t k = 0; k < sizeof reads / sizeof reads[0]; k++)
    if (strstr(t, reads[k])) return true;
  return false;
}

/* An upper bound of e when one is known: constants, min with a bounded operand, and sums,
 * products and divisions of bounded parts; a pipeline's own limits are at most 1024 threads. */
static bool kl_dx_bound(const struct kl_dx *e, int64_t *b, int depth) {
  if (!e || depth > 16) return false;
  if (e->known) {
    *b = e->v;
    return e->v >= 0;
  }
  int64_t x, y;
  switch (e->op) {
  case KL_DX_LEAF:
    if (kl_dx_limit_text(e->text)) {
      *b = 1024;
      return true;
    }
    return false;
  case KL_DX_MIN: {
    bool bx = kl_dx_bound(e->a, &x, depth + 1), by = kl_dx_bound(e->b, &y, depth + 1);
    if (bx && by)
      *b = x < y ? x : y;
    else if (bx || by)
      *b = bx ? x : y;
    return bx || by;
  }
  case KL_DX_ADD:
  case KL_DX_MUL:
  case KL_DX_MAX:
    if (!kl_dx_bound(e->a, &x, depth + 1) || !kl_dx_bound(e->b, &y, depth + 1)) return false;
    if (e->op == KL_DX_MAX)
      *b = x > y ? x : y;
    else if (e->op == KL_DX_ADD ? __builtin_add_overflow(x, y, b) : __builtin_mul_overflow(x, y, b))
      return false;
    return true;
  case KL_DX_DIV:
  case KL_DX_SHR:
    /* Division by a known positive amount keeps a bound; anything else may not shrink. */
    if (!kl_dx_bound(e->a, &x, depth + 1) || !e->b || !e->b->known || e->b->v < 1) return false;
    *b = e->op == KL_DX_DIV ? x / e->b->v : (e->b->v < 63 ? x >> e->b->v : 0);
    return true;
  default:
    return false;
  }
}

void kl_dispatch_set_tg(struct kl_dispatch *d, struct kl_dx *const *dims, size_t n,
                        struct kl_span span, const char *text) {
  int64_t total = 1, granule = 1;
  bool known = n > 0;
  for (size_t i = 0; i < 3; i++) d->tg_size[i] = 1;
  d->tg_dims = 7;
  for (size_t i = 0; i < n; i++) {
    int64_t v;
    bool one = kl_dx_value(dims[i], &v);
    if (!one || __builtin_mul_overflow(total, v, &total)) known = false;
    if (i < 3 && one) d->tg_size[i] = v;
    if (i < 3 && !one) d->tg_dims &= (uint8_t) ~(1u << i);
    if (kl_dx_clamped(dims[i])) d->tg_clamped = true;
    granule *= kl_dx_granule(dims[i]);
    if (granule > KL_DISPATCH_MAX_TG_GRANULE) granule = KL_DISPATCH_MAX_TG_GRANULE;
  }
  d->tg_granule = granule;
  /* A size of several runtime dimensions: the most threads it can reach, from bounds on each,
   * or no bound at all when two or more are unclamped data sizes (`MTLSizeMake(N, KH, KW)` of
   * tensor dimensions). One runtime dimension alone is left to the clamp checks. */
  if (!known && n > 1) {
    size_t nruntime = 0, ndata = 0;
    int64_t most = 1;
    bool bounded = true;
    for (size_t i = 0; i < n && i < 3; i++) {
      int64_t b;
      if (!dims[i]) {
        bounded = false;
        continue;
      }
      if (!dims[i]->known) nruntime++;
      if (kl_dx_bound(dims[i], &b, 0)) {
        if (__builtin_mul_overflow(most, b, &most)) bounded = false;
        continue;
      }
      bounded = false;
      if (dims[i]->op == KL_DX_LEAF && dims[i]->text && kl_dx_data_text(dims[i]->text)) ndata++;
    }
    if (ndata >= 2)
      d->tg_max = -1;
    else if (bounded && nruntime >= 2 && most > 1024)
      d->tg_max = most;
  }
  d->tg_present = true;
  d->tg_known = known;
  d->tg_total = known ? total : 0;
  d->tg_span = span;
  d->tg_text = text;
}
