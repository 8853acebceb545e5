/* half-accumulator: running sums kept in half inside loops. A syntactic pattern over the tree,
 * with types resolved through aliases and template bindings (analyzer/core/types.h) and trip counts
 * folded by analyzer/passes/trips.h; a helper that adds to a reference parameter outside its
 * loops is summarised once, so that its calls in a loop count as updates. A body's candidate
 * updates and lane sums are found by one walk (they are syntax), then judged once per binding its
 * instantiations and calls give it, and what is found is merged by accumulator, so one
 * accumulator is one finding that names the instantiations it holds in. */
#include <stdio.h>
#include <string.h>

#include "analyzer/core/node.h"
#include "analyzer/passes/trips.h"
#include "rules/rules.h"

/* A fused add of up to this many operands is a few roundings, not a reduction (SPEC §3). */
#define KL_HA_SHORT 8
#define KL_HA_MAX_LOOPS 64
/* Instantiations a message names before "and N more". */
#define KL_HA_NAMES 3

/* One accumulator: its first update, merged over the bindings it was found under. */
struct kl_ha_find {
  TSNode at;
  const struct kl_var *v;
  bool element, matrix, bfloat;
  const char *type;  /* the resolved type, when it is the same under every binding */
  const char *param; /* the template parameter that makes it half; NULL when declared so */
  const char **vals; /* what param is bound to (half, half4) */
  size_t nvals, cap_vals;
  const char **where; /* the instantiations, or calls, it holds in */
  size_t nwhere, cap_where;
  const struct kl_dispatch **calls;
  size_t ncalls, cap_calls;
  TSNode *also; /* its other updates */
  size_t nalso, cap_also;
  TSNode via; /* the first update is a helper's call: where the helper adds to it */
  const char *helper;
};

/* What the walk of a body meets, in order: an update of a variable inside loops (judged under
 * each binding), or a lane sum of one. */
struct kl_ha_event {
  bool sum, element, matrix;
  TSNode at, lhs;
  TSNode via; /* a helper's call: where the helper adds to what the call passes */
  const char *helper;
  const struct kl_var *v;
  const char *name; /* the lane sum's callee */
  TSNode *loops;    /* the loops around an update, outermost first */
  size_t nloops;
};

/* A lane sum of a variable (simd_sum(acc)): a related location of that variable's finding. */
struct kl_ha_sum {
  const struct kl_var *v;
  TSNode at;
  const char *name;
};

struct kl_ha {
  struct kl_rule_ctx *ctx;
  const struct kl_function *fn;
  const struct kl_bindings *b;
  const char **names; /* what the bindings at hand are called in messages */
  size_t nnames;
  const struct kl_dispatch **calls; /* the calls that bind b, when it comes from calls */
  size_t ncalls;
  TSNode loops[KL_HA_MAX_LOOPS]; /* the loops whose repeated part holds the node at hand */
  size_t nloops;
  struct kl_ha_find *finds;
  size_t nfinds, cap_finds;
  struct kl_ha_sum *sums;
  size_t nsums, cap_sums;
  struct kl_ha_event *events; /* fn's body walked once, whatever the bindings */
  size_t nevents, cap_events;
  bool walked;
  bool unbound; /* a template nothing instantiates: judged for what is half outright */
  bool summary; /* walking a helper for what its reference parameters accumulate: updates count
                   outside loops too */
  struct kl_ha_helpers *helpers; /* what each function of the file adds to, once asked */
  /* Per local of fn, its type under bindings named as lnames' are, when no binding decides it:
   * kl_ha_has_half asks of every local under every set of bindings (hundreds of instantiations
   * of one kernel), and most locals' types do not depend on them. */
  const struct kl_msl_type **ltype;
  unsigned char *lfree; /* per local: 0 not asked, 1 asked and no binding decides it, 2 one does */
  struct kl_bindings lnames;
};

/* Per function of the file: which reference parameters a call adds to (bit i for parameter i,
 * the first 32), and which of those as a simdgroup matrix. */
struct kl_ha_helpers {
  unsigned char *state; /* 0 not asked, 1 being summarised, 2 done */
  uint32_t *adds, *matrix;
  TSNode **at; /* per function, once summarised: where it adds to each parameter */
};

static bool kl_ha_is(TSNode n, const char *t) {
  return kl_node_is(n, t);
}

static TSNode kl_ha_strip(TSNode n) {
  while (!kl_node_null(n) && kl_ha_is(n, "parenthesized_expression") &&
         ts_node_named_child_count(n) == 1)
    n = kl_node_named_child(n, 0);
  return n;
}

static bool kl_ha_same(struct kl_ha *h, TSNode a, TSNode b) {
  a = kl_ha_strip(a);
  b = kl_ha_strip(b);
  if (kl_node_null(a) || kl_node_null(b)) return false;
  uint32_t as = ts_node_start_byte(a), ae = ts_node_end_byte(a);
  uint32_t bs = ts_node_start_byte(b), be = ts_node_end_byte(b);
  return ae - as == be - bs && !memcmp(h->ctx->unit->buf + as, h->ctx->unit->buf + bs, ae - as);
}

/* The variable an accumulator expression names: `acc`, `acc.x`, `S[j]` -> acc / S. */
static const struct kl_var *kl_ha_var(struct kl_ha *h, TSNode n, bool *element) {
  n = kl_ha_strip(n);
  *element = false;
  for (int guard = 0; guard < 8 && !kl_node_null(n); guard++) {
    if (kl_ha_is(n, "identifier")) {
      const char *name = kl_dialect_node_text(h->ctx->arena, h->ctx->unit, n);
      return kl_trips_decl(h->fn, name, strlen(name), n);
    }
    if (kl_ha_is(n, "subscript_expression")) {
      *element = true;
      n = kl_node_field(n, "argument");
    } else if (kl_ha_is(n, "field_expression")) {
      n = kl_node_field(n, "argument");
    } else {
      break;
    }
  }
  return NULL;
}
/* Whether n is lhs scaled: `x * s` or `s * x`. */
static bool kl_ha_scales(struct kl_ha *h, TSNode n, TSNode lhs) {
  n = kl_ha_strip(n);
  if (kl_node_null(n) || !kl_ha_is(n, "binary_expression")) return false;
  TSNode op = kl_node_field(n, "operator");
  return !kl_node_null(op) && !strcmp(ts_node_type(op), "*") &&
         (kl_ha_same(h, kl_node_field(n, "left"), lhs) ||
          kl_ha_same(h, kl_node_field(n, "right"), lhs));
}

/* Whether rhs adds lhs to something: x + e, e + x, x - e, fma(a, b, x), x * s + y,
 * fma(x, s, y), fma(a, b, x * s). */
static bool kl_ha_adds_to(struct kl_ha *h, TSNode rhs, TSNode lhs, int depth) {
  rhs = kl_ha_strip(rhs);
  if (kl_node_null(rhs) || depth > 16) return false;
  if (kl_ha_is(rhs, "binary_expression")) {
    TSNode op = kl_node_field(rhs, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    TSNode l = kl_node_field(rhs, "left");
    TSNode r = kl_node_field(rhs, "right");
    if (!strcmp(o, "+") || !strcmp(o, "-")) {
      if (kl_ha_same(h, l, lhs) || (o[0] == '+' && kl_ha_same(h, r, lhs))) return true;
      /* A rescaled running sum: x * scale + y (online softmax). */
      TSNode sides[2] = {kl_ha_strip(l), kl_ha_strip(r)};
      for (int i = 0; i < 2; i++) {
        if (i == 1 && o[0] == '-') break;
        if (kl_ha_scales(h, sides[i], lhs) || kl_ha_adds_to(h, sides[i], lhs, depth + 1))
          return true;
      }
    }
    return false;
  }
  if (kl_ha_is(rhs, "call_expression")) {
    TSNode fn = kl_node_field(rhs, "function");
    TSNode args = kl_node_field(rhs, "arguments");
    if (kl_node_null(fn) || kl_node_null(args)) return false;
    const char *name = kl_msl_unprefix(kl_dialect_node_text(h->ctx->arena, h->ctx->unit, fn));
    if ((!strcmp(name, "fma") || !strcmp(name, "mad") || !strcmp(name, "precise::fma")) &&
        ts_node_named_child_count(args) == 3) {
      /* fma(a, b, c) is a * b + c: a sum of x when c is x or adds to it (`fma(v, p, x * ms)`),
       * and a rescaled one when a factor is x (`fma(x, ms, v * p)`, online softmax). */
      TSNode c = kl_node_named_child(args, 2);
      if (kl_ha_same(h, c, lhs) || kl_ha_same(h, kl_node_named_child(args, 0), lhs) ||
          kl_ha_same(h, kl_node_named_child(args, 1), lhs) || kl_ha_scales(h, c, lhs) ||
          kl_ha_adds_to(h, c, lhs, depth + 1))
        return true;
    }
  }
  return false;
}

/* Whether built-in type t is a half accumulator's: a half scalar or vector, or (matrix) a half or
 * bfloat simdgroup matrix. */
static bool kl_ha_type_is(const struct kl_msl_type *t, bool matrix) {
  if (matrix) return t->kind == KL_TYPE_SIMDGROUP_MATRIX && (t->is_half || t->is_bfloat);
  return t->is_half && t->kind != KL_TYPE_MATRIX && t->kind != KL_TYPE_SIMDGROUP_MATRIX;
}

/* v's built-in type, for a variable that can accumulate (not a pointer, not device memory). */
static const struct kl_msl_type *kl_ha_var_type(struct kl_ha *h, const struct kl_var *v,
                                                const struct kl_bindings *b) {
  if (!v || !v->type || v->is_pointer) return NULL;
  if (v->as == KL_AS_DEVICE || v->as == KL_AS_CONSTANT) return NULL;
  return kl_types_builtin(h->ctx->arena, h->ctx->types, v->type, b);
}

/* The built-in type v has under bindings b, when it is one this rule is about (kl_ha_type_is). */
static const struct kl_msl_type *kl_ha_type(struct kl_ha *h, const struct kl_var *v,
                                            const struct kl_bindings *b, bool matrix) {
  const struct kl_msl_type *t = kl_ha_var_type(h, v, b);
  return t && kl_ha_type_is(t, matrix) ? t : NULL;
}

/* Whether an identifier named as one of loop l's counters occurs under node n. */
static bool kl_ha_mentions(struct kl_ha *h, TSNode n, const char *const *names, size_t k) {
  if (kl_node_null(n)) return false;
  if (kl_ha_is(n, "identifier")) {
    const char *t = kl_dialect_node_text(h->ctx->arena, h->ctx->unit, n);
    for (size_t i = 0; i < k; i++)
      if (!strcmp(t, names[i])) return true;
    return false;
  }
  uint32_t c = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < c; i++)
    if (kl_ha_mentions(h, kl_node_named_child(n, i), names, k)) return true;
  return false;
}

/* Whether index n moves with the counters named, affinely: it mentions one, and every mention
 * reaches the top through +, -, * by a factor without a counter, <<, a sign, parentheses or an
 * integer cast only. `acc[i % 4]`, `acc[i & 3]`, `acc[i / 2]` come back to one element again and
 * again; `acc[idx[i]]` may. */
static bool kl_ha_affine(struct kl_ha *h, TSNode n, const char *const *names, size_t k) {
  n = kl_ha_strip(n);
  if (kl_node_null(n)) return false;
  if (kl_ha_is(n, "identifier")) return kl_ha_mentions(h, n, names, k);
  if (kl_ha_is(n, "binary_expression")) {
    TSNode op = kl_node_field(n, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    TSNode l = kl_node_field(n, "left");
    TSNode r = kl_node_field(n, "right");
    bool ml = kl_ha_mentions(h, l, names, k), mr = kl_ha_mentions(h, r, names, k);
    if (!strcmp(o, "+") || !strcmp(o, "-"))
      return (ml || mr) && (!ml || kl_ha_affine(h, l, names, k)) &&
             (!mr || kl_ha_affine(h, r, names, k));
    if (!strcmp(o, "*")) return ml != mr && kl_ha_affine(h, ml ? l : r, names, k);
    if (!strcmp(o, "<<")) return ml && !mr && kl_ha_affine(h, l, names, k);
    return false;
  }
  if (kl_ha_is(n, "unary_expression")) {
    TSNode op = kl_node_field(n, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    return (!strcmp(o, "-") || !strcmp(o, "+")) &&
           kl_ha_affine(h, kl_node_field(n, "argument"), names, k);
  }
  if (kl_ha_is(n, "cast_expression")) return kl_ha_affine(h, kl_node_field(n, "value"), names, k);
  if (kl_ha_is(n, "call_expression")) {
    /* A function-style cast, `uint(i)`. */
    static const char *const ints[] = {"int",   "uint",   "short",   "ushort",  "long",
                                       "ulong", "size_t", "int32_t", "uint32_t"};
    TSNode fn = kl_node_field(n, "function");
    TSNode args = kl_node_field(n, "arguments");
    if (kl_node_null(fn) || kl_node_null(args) || ts_node_named_child_count(args) != 1)
      return false;
    const char *name = kl_dialect_node_text(h->ctx->arena, h->ctx->unit, fn);
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
      if (!strcmp(name, ints[i])) return kl_ha_affine(h, kl_node_named_child(args, 0), names, k);
  }
  return false;
}

/* Whether loop l picks which element an update of lhs (`lo[2 * ii]`, `acc[i][j]`) adds to: a
 * subscript of lhs is affine in a counter its initializer declares or sets. Such a loop moves
 * along the array; it does not add to one element again. */
static bool kl_ha_selects(struct kl_ha *h, TSNode l, TSNode lhs) {
  TSNode init = kl_node_field(l, "initializer");
  if (kl_node_null(init)) return false;
  const char *names[8];
  size_t k = 0;
  uint32_t c = ts_node_named_child_count(init);
  if (kl_ha_is(init, "assignment_expression")) {
    TSNode left = kl_node_field(init, "left");
    if (kl_ha_is(left, "identifier"))
      names[k++] = kl_dialect_node_text(h->ctx->arena, h->ctx->unit, left);
  }
  for (uint32_t i = 0; i < c && k < 8 && kl_ha_is(init, "declaration"); i++) {
    TSNode d = kl_node_named_child(init, i);
    if (kl_ha_is(d, "init_declarator")) d = kl_node_field(d, "declarator");
    if (!kl_node_null(d) && kl_ha_is(d, "identifier") &&
        !ts_node_eq(d, kl_node_field(init, "type")))
      names[k++] = kl_dialect_node_text(h->ctx->arena, h->ctx->unit, d);
  }
  for (TSNode n = kl_ha_strip(lhs); k && !kl_node_null(n); n = kl_ha_strip(n)) {
    if (kl_ha_is(n, "subscript_expression")) {
      TSNode idx = kl_node_field(n, "indices");
      uint32_t ni = kl_node_null(idx) ? 0 : ts_node_named_child_count(idx);
      for (uint32_t i = 0; i < ni; i++)
        if (kl_ha_affine(h, kl_node_named_child(idx, i), names, k)) return true;
    } else if (!kl_ha_is(n, "field_expression")) {
      break;
    }
    n = kl_node_field(n, "argument");
  }
  return false;
}

/* Whether loop l's body starts v afresh each iteration: a plain `v = e`, e not naming v, among
 * the body's top-level statements before the one holding the update of lhs. Such a loop does not
 * carry v; an inner loop adding to it may (`s = 0; for (j ...) s += x[j];`). */
static bool kl_ha_resets(struct kl_ha *h, TSNode l, const struct kl_var *v, TSNode lhs) {
  TSNode body = kl_node_field(l, "body");
  if (kl_node_null(body) || !kl_ha_is(body, "compound_statement")) return false;
  uint32_t at = ts_node_start_byte(lhs);
  if (at < ts_node_start_byte(body) || at >= ts_node_end_byte(body)) return false;
  const char *names[1] = {v->name};
  uint32_t k = ts_node_named_child_count(body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode st = kl_node_named_child(body, i);
    if (ts_node_end_byte(st) > at) return false;
    TSNode e = kl_node_named_child(st, 0);
    if (!kl_ha_is(st, "expression_statement") || kl_node_null(e) ||
        !kl_ha_is(e, "assignment_expression"))
      continue;
    TSNode op = kl_node_field(e, "operator");
    TSNode left = kl_ha_strip(kl_node_field(e, "left"));
    bool element;
    if (kl_node_null(op) || strcmp(ts_node_type(op), "=") ||
        (!kl_ha_is(left, "identifier") && !kl_ha_same(h, left, lhs)) ||
        kl_ha_var(h, left, &element) != v || kl_ha_mentions(h, kl_node_field(e, "right"), names, 1))
      continue;
    return true;
  }
  return false;
}

/* Whether the node at hand, an update of v (written lhs), carries v across the iterations of a
 * reduction: some loop around it neither holds v's declaration (a value declared in the body is a
 * new one each iteration), nor sets v afresh before the update, nor picks the element updated,
 * and those loops together run more than a fused add's few times (or an unknown number). */
static bool kl_ha_reduces(struct kl_ha *h, const struct kl_var *v, TSNode lhs) {
  uint32_t ds = kl_node_null(v->node) ? 0 : ts_node_start_byte(v->node);
  int64_t trips = 1;
  bool carried = false;
  for (size_t i = 0; i < h->nloops; i++) {
    TSNode l = h->loops[i];
    TSNode init = kl_node_field(l, "initializer");
    bool inside =
        ds >= ts_node_start_byte(l) && ds < ts_node_end_byte(l) &&
        (kl_node_null(init) || ds < ts_node_start_byte(init) || ds >= ts_node_end_byte(init));
    if (inside || kl_ha_resets(h, l, v, lhs) || kl_ha_selects(h, l, lhs)) continue;
    int64_t n = kl_trips_max(h->ctx->arena, h->ctx->model, h->fn, l, h->b);
    /* A bound that only an instantiation would give (`i < N`, N a template value) may be a
     * fused add's few: not counted without one. */
    if (n < 0 && h->unbound &&
        kl_ha_mentions(h, kl_node_field(l, "condition"), h->fn->tparams, h->fn->ntparams))
      continue;
    carried = true;
    if (n < 0) return true;
    trips *= n;
    if (trips > KL_HA_SHORT) return true;
  }
  return carried && trips > KL_HA_SHORT;
}

/* The template parameter whose binding makes v's type what it is (`T` of `T acc`, also through
 * `using acc_t = T`), and the value it binds; NULL when v is declared half outright. */
static const char *kl_ha_param(struct kl_ha *h, const struct kl_var *v, bool matrix,
                               const char **val) {
  *val = NULL;
  if (!h->b || kl_ha_type(h, v, NULL, matrix)) return NULL;
  for (size_t i = 0; i < h->b->n; i++) {
    struct kl_bindings one = {.items = &h->b->items[i], .n = 1};
    if (kl_ha_type(h, v, &one, matrix)) {
      *val = h->b->items[i].type;
      return h->b->items[i].name;
    }
  }
  *val = kl_types_resolve(h->ctx->arena, h->ctx->types, v->type, h->b);
  return v->type;
}

static void kl_ha_add(struct kl_arena *a, const char ***list, size_t *n, size_t *cap,
                      const char *s) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*list)[i], s)) return;
  KL_VEC_PUSH(a, *list, *n, *cap);
  (*list)[(*n)++] = s;
}

/* Record an update of v at node at under the bindings at hand, merged with the same update found
 * under other bindings. */
static void kl_ha_found(struct kl_ha *h, const struct kl_ha_event *e) {
  TSNode at = e->at, lhs = e->lhs;
  const struct kl_var *v = e->v;
  bool element = e->element, matrix = e->matrix;
  struct kl_arena *a = h->ctx->arena;
  const struct kl_msl_type *t = kl_ha_type(h, v, h->b, matrix);
  if (!t || !kl_ha_reduces(h, v, lhs)) return;
  struct kl_ha_find *f = NULL;
  for (size_t i = 0; i < h->nfinds && !f; i++)
    if (h->finds[i].v == v) f = &h->finds[i];
  /* One accumulator is one finding: its first update, the others related to it. */
  if (f && !ts_node_eq(f->at, at)) {
    bool seen = false;
    for (size_t i = 0; i < f->nalso && !seen; i++) seen = ts_node_eq(f->also[i], at);
    if (!seen) {
      KL_VEC_PUSH(a, f->also, f->nalso, f->cap_also);
      f->also[f->nalso++] = at;
    }
  }
  if (!f) {
    KL_VEC_PUSH(a, h->finds, h->nfinds, h->cap_finds);
    f = &h->finds[h->nfinds++];
    memset(f, 0, sizeof *f);
    f->at = at;
    f->v = v;
    f->element = element;
    f->matrix = matrix;
    f->bfloat = t->is_bfloat;
    f->type = t->name;
    f->via = e->via;
    f->helper = e->helper;
  } else if (f->type && strcmp(f->type, t->name)) {
    f->type = NULL;
  }
  const char *val;
  const char *param = kl_ha_param(h, v, matrix, &val);
  if (!param) return;
  f->param = param;
  kl_ha_add(a, &f->vals, &f->nvals, &f->cap_vals, val);
  for (size_t i = 0; i < h->nnames; i++)
    kl_ha_add(a, &f->where, &f->nwhere, &f->cap_where, h->names[i]);
  for (size_t i = 0; i < h->ncalls; i++) {
    KL_VEC_PUSH(a, f->calls, f->ncalls, f->cap_calls);
    f->calls[f->ncalls++] = h->calls[i];
  }
}

/* The name a call's callee is written with, when it is one this rule looks at (a lane sum or
 * simdgroup_multiply_accumulate); "" otherwise, without copying every callee's text. */
static const char *kl_ha_callee(struct kl_ha *h, TSNode call, TSNode *args) {
  TSNode fn = kl_node_field(call, "function");
  *args = kl_node_field(call, "arguments");
  if (kl_node_null(fn) || kl_node_null(*args)) return "";
  uint32_t s = ts_node_start_byte(fn), e = ts_node_end_byte(fn);
  const char *p = h->ctx->unit->buf + s;
  if (e - s < 8 || e - s > 40 || !memchr(p, '_', e - s) ||
      (memcmp(p, "simd", 4) && memcmp(p, "quad", 4) && memcmp(p, "metal::", 7)))
    return "";
  return kl_msl_unprefix(kl_dialect_node_text(h->ctx->arena, h->ctx->unit, fn));
}

static void kl_ha_event(struct kl_ha *h, bool sum, TSNode at, TSNode lhs, const struct kl_var *v,
                        bool element, bool matrix, const char *name) {
  struct kl_arena *a = h->ctx->arena;
  KL_VEC_PUSH(a, h->events, h->nevents, h->cap_events);
  struct kl_ha_event *e = &h->events[h->nevents++];
  *e = (struct kl_ha_event){
      .sum = sum, .element = element, .matrix = matrix, .at = at, .lhs = lhs, .v = v, .name = name};
  if (sum || !h->nloops) return;
  e->loops = kl_arena_alloc(a, h->nloops * sizeof *e->loops);
  memcpy(e->loops, h->loops, h->nloops * sizeof *e->loops);
  e->nloops = h->nloops;
}

static void kl_ha_walk(struct kl_ha *h, TSNode n, int depth);

/* What helper g adds to (struct kl_ha_helpers), from its updates of its own reference parameters
 * outside its loops (`c += x`, `simdgroup_multiply_accumulate(c, a, b, c)`): called in a loop,
 * it carries the caller's accumulator across that loop. Its updates inside its own loops are
 * its own findings. */
static void kl_ha_summarise(struct kl_ha *h, size_t gi) {
  struct kl_ha_helpers *hs = h->helpers;
  const struct kl_function *g = &h->ctx->model->functions[gi];
  hs->state[gi] = 1;
  hs->at[gi] = kl_arena_alloc(h->ctx->arena, 32 * sizeof **hs->at);
  if (!kl_node_null(g->body)) {
    struct kl_ha s = {.ctx = h->ctx, .fn = g, .summary = true};
    kl_ha_walk(&s, g->body, 0);
    for (size_t i = 0; i < s.nevents; i++) {
      const struct kl_ha_event *e = &s.events[i];
      if (e->sum || e->nloops || e->element || !e->v->is_reference) continue;
      for (size_t p = 0; p < g->nparams && p < 32; p++)
        if (&g->params[p] == e->v && !(hs->adds[gi] & (1u << p))) {
          hs->at[gi][p] = e->at;
          hs->adds[gi] |= 1u << p;
          if (e->matrix) hs->matrix[gi] |= 1u << p;
        }
    }
  }
  hs->state[gi] = 2;
}

/* A call, in a loop, of a helper of the file that adds to a reference parameter: an update of
 * the variable passed there (`mma(acc, a, b)` in the K loop). */
static void kl_ha_helper_call(struct kl_ha *h, TSNode call) {
  const struct kl_function *g = NULL;
  for (size_t k = 0; k < h->fn->ncalls && !g; k++)
    if (ts_node_eq(h->fn->calls[k], call)) g = h->fn->call_targets[k];
  if (!g || !h->helpers) return;
  size_t gi = (size_t)(g - h->ctx->model->functions);
  if (h->helpers->state[gi] == 0) kl_ha_summarise(h, gi);
  uint32_t adds = h->helpers->state[gi] == 2 ? h->helpers->adds[gi] : 0;
  TSNode args = kl_node_field(call, "arguments");
  uint32_t na = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  for (uint32_t i = 0; adds && i < na && i < 32; i++) {
    if (!(adds & (1u << i))) continue;
    bool element;
    TSNode arg = kl_node_named_child(args, i);
    const struct kl_var *v = kl_ha_var(h, arg, &element);
    if (!v) continue;
    kl_ha_event(h, false, call, arg, v, element, h->helpers->matrix[gi] & (1u << i), NULL);
    h->events[h->nevents - 1].via = h->helpers->at[gi][i];
    h->events[h->nevents - 1].helper = g->name;
  }
}

static void kl_ha_walk(struct kl_ha *h, TSNode n, int depth) {
  if (kl_node_null(n) || depth > 300) return;
  const char *ty = ts_node_type(n);
  bool loop = !strcmp(ty, "for_statement") || !strcmp(ty, "while_statement") ||
              !strcmp(ty, "do_statement") || !strcmp(ty, "for_range_loop");
  if ((h->nloops > 0 || h->summary) && !strcmp(ty, "assignment_expression")) {
    TSNode op = kl_node_field(n, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    TSNode lhs = kl_node_field(n, "left");
    TSNode rhs = kl_node_field(n, "right");
    bool adds =
        !strcmp(o, "+=") || !strcmp(o, "-=") || (!strcmp(o, "=") && kl_ha_adds_to(h, rhs, lhs, 0));
    bool element;
    const struct kl_var *v = adds ? kl_ha_var(h, lhs, &element) : NULL;
    if (v) kl_ha_event(h, false, n, lhs, v, element, false, NULL);
  }
  if (!strcmp(ty, "call_expression")) {
    TSNode args;
    const char *name = kl_ha_callee(h, n, &args);
    /* The cross-lane sums SPEC names: simd_sum, its prefix (scan) forms, and quad_sum. */
    bool lane_sum = !strcmp(name, "simd_sum") || !strcmp(name, "simd_prefix_inclusive_sum") ||
                    !strcmp(name, "simd_prefix_exclusive_sum") || !strcmp(name, "quad_sum");
    bool element;
    if (lane_sum && ts_node_named_child_count(args) == 1) {
      const struct kl_var *v = kl_ha_var(h, kl_node_named_child(args, 0), &element);
      if (v) kl_ha_event(h, true, n, n, v, element, false, name);
    }
    /* simdgroup_multiply_accumulate(C, A, B, C): C = A * B + C, a matrix running sum. */
    if ((h->nloops > 0 || h->summary) && !strcmp(name, "simdgroup_multiply_accumulate") &&
        ts_node_named_child_count(args) == 4 &&
        kl_ha_same(h, kl_node_named_child(args, 0), kl_node_named_child(args, 3))) {
      const struct kl_var *v = kl_ha_var(h, kl_node_named_child(args, 0), &element);
      if (v) kl_ha_event(h, false, n, kl_node_named_child(args, 0), v, element, true, NULL);
    }
    if (h->nloops > 0 && !h->summary && !*name) kl_ha_helper_call(h, n);
  }
  /* A loop's initializer runs once; its condition, update and body repeat. */
  TSNode init = loop ? kl_node_field(n, "initializer") : n;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    bool repeats = loop && !ts_node_eq(c, init) && h->nloops < KL_HA_MAX_LOOPS;
    if (repeats) h->loops[h->nloops++] = n;
    kl_ha_walk(h, c, depth + 1);
    if (repeats) h->nloops--;
  }
}

static bool kl_ha_same_binds(const struct kl_dispatch *a, const struct kl_dispatch *b) {
  if (a->nbinds != b->nbinds) return false;
  for (size_t i = 0; i < a->nbinds; i++)
    if (strcmp(a->binds[i].name, b->binds[i].name) || strcmp(a->binds[i].type, b->binds[i].type))
      return false;
  return true;
}

/* Whether any local or parameter is half under the current bindings: without one there is
 * nothing to report, and the function's body need not be walked (most kernels are float). */
/* Whether x and y bind the same names in the same order (types aside). */
static bool kl_ha_same_names(const struct kl_bindings *x, const struct kl_bindings *y) {
  size_t nx = x ? x->n : 0, ny = y ? y->n : 0;
  if (nx != ny) return false;
  for (size_t i = 0; i < nx; i++) {
    const char *p = x->items[i].name, *q = y->items[i].name;
    if (p != q && (!p || !q || strcmp(p, q))) return false;
  }
  return true;
}

/* kl_ha_var_type of local i of h->fn under h->b, remembered when no binding decides it. */
static const struct kl_msl_type *kl_ha_local_type(struct kl_ha *h, size_t i) {
  const struct kl_var *v = &h->fn->locals[i];
  if (!v->type || v->is_pointer || v->as == KL_AS_DEVICE || v->as == KL_AS_CONSTANT) return NULL;
  if (!h->lfree || !kl_ha_same_names(&h->lnames, h->b)) {
    size_t n = h->fn->nlocals + 1;
    h->ltype = kl_arena_alloc(h->ctx->arena, n * sizeof *h->ltype);
    h->lfree = kl_arena_alloc(h->ctx->arena, n);
    h->lnames = h->b ? *h->b : (struct kl_bindings){0};
  }
  if (h->lfree[i] == 1) return h->ltype[i];
  bool bound;
  const struct kl_msl_type *t =
      kl_types_builtin_in(h->ctx->arena, h->ctx->types, v->type, h->b, &bound);
  h->lfree[i] = bound ? 2 : 1;
  h->ltype[i] = t;
  return t;
}

static bool kl_ha_has_half(struct kl_ha *h) {
  for (size_t i = 0; i < h->fn->nlocals; i++) {
    const struct kl_msl_type *t = kl_ha_local_type(h, i);
    if (t && (kl_ha_type_is(t, false) || kl_ha_type_is(t, true))) return true;
  }
  for (size_t i = 0; i < h->fn->nparams; i++)
    if (kl_ha_type(h, &h->fn->params[i], h->b, false)) return true;
  return false;
}

static void kl_ha_run(struct kl_ha *h) {
  if (!kl_ha_has_half(h)) return;
  if (!h->walked) {
    h->nloops = 0;
    kl_ha_walk(h, h->fn->body, 0);
    h->walked = true;
  }
  for (size_t i = 0; i < h->nevents; i++) {
    const struct kl_ha_event *e = &h->events[i];
    if (e->sum) {
      KL_VEC_PUSH(h->ctx->arena, h->sums, h->nsums, h->cap_sums);
      h->sums[h->nsums++] = (struct kl_ha_sum){e->v, e->at, e->name};
      continue;
    }
    memcpy(h->loops, e->loops, e->nloops * sizeof *e->loops);
    h->nloops = e->nloops;
    kl_ha_found(h, e);
  }
}

/* A templated kernel bound by its calls (MLX template=): walked once per distinct binding, and
 * what it finds names the calls with that binding, so a body that is right for float32 is
 * reported only where a call binds float16. */
static void kl_ha_calls(struct kl_ha *h, const struct kl_function *fn) {
  struct kl_rule_ctx *ctx = h->ctx;
  bool *done = kl_arena_alloc(ctx->arena, ctx->ndispatches + 1);
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    if (done[i] || !d->local || !d->nbinds || !kl_rules_launches(ctx, d, fn)) continue;
    const struct kl_dispatch **group =
        kl_arena_alloc(ctx->arena, (ctx->ndispatches + 1) * sizeof *group);
    const char **names = kl_arena_alloc(ctx->arena, (ctx->ndispatches + 1) * sizeof *names);
    size_t n = 0;
    for (size_t j = i; j < ctx->ndispatches; j++) {
      const struct kl_dispatch *e = &ctx->dispatches[j];
      if (done[j] || !e->local || !kl_ha_same_binds(d, e) || !kl_rules_launches(ctx, e, fn))
        continue;
      done[j] = true;
      names[n] = kl_arena_printf(ctx->arena, "the call on line %u", e->call.line);
      group[n++] = e;
    }
    struct kl_bindings b = {.items = d->binds, .n = d->nbinds, .label = d->bind_text};
    h->b = &b;
    h->calls = group;
    h->ncalls = n;
    h->names = names;
    h->nnames = n;
    kl_ha_run(h);
  }
  h->calls = NULL;
  h->ncalls = 0;
  h->b = NULL;
}

/* MLX binds float16 by that name; the message says it as the call does. */
static const char *kl_ha_dtype(const struct kl_ha_find *f, const char *val) {
  if (!f->ncalls || f->nwhere != f->ncalls) return val;
  if (!strcmp(val, "half")) return "float16";
  if (!strcmp(val, "bfloat")) return "bfloat16";
  return val;
}

/* ---- the fix: a float accumulator, converted back where its value flows into half ---------- */

/* The edits of one accumulator's fix, in buffer offsets, until they are known to be safe. */
struct kl_ha_fixer {
  struct kl_ha *h;
  const struct kl_var *v;
  struct kl_edit *edits;
  size_t n, cap;
  bool bad; /* some use cannot be fixed safely: no fix */
};

/* Whether buffer range [s, e) is the file's own text byte for byte (not a macro expansion, not
 * an escaped Python string); an insertion (s == e) needs its neighbours to be. */
static bool kl_ha_plain(const struct kl_rule_ctx *ctx, uint32_t s, uint32_t e) {
  const struct kl_unit *u = ctx->unit;
  if (s == e) {
    s = s > 0 ? s - 1 : s;
    e = e < u->len ? e + 1 : e;
    if (s == e) return false;
  }
  uint32_t fs = kl_offmap_to_file(&u->map, s), fe = kl_offmap_end_to_file(&u->map, e);
  return fe >= fs && fe - fs == e - s && fe <= ctx->src->len &&
         !memcmp(ctx->src->text + fs, u->buf + s, e - s);
}

static void kl_ha_edit(struct kl_ha_fixer *x, uint32_t s, uint32_t e, const char *text) {
  if (!kl_ha_plain(x->h->ctx, s, e)) {
    x->bad = true;
    return;
  }
  /* Uses that flow into one expression (`half4(acc[0], acc[1], ...)`) ask for its edits once
   * each. */
  for (size_t i = 0; i < x->n; i++)
    if (x->edits[i].start == s && x->edits[i].end == e && !strcmp(x->edits[i].text, text)) return;
  KL_VEC_PUSH(x->h->ctx->arena, x->edits, x->n, x->cap);
  x->edits[x->n++] = (struct kl_edit){s, e, text};
}

/* Convert expression n to type name t: `t(n)`. */
static void kl_ha_wrap(struct kl_ha_fixer *x, TSNode n, const char *t) {
  struct kl_arena *a = x->h->ctx->arena;
  kl_ha_edit(x, ts_node_start_byte(n), ts_node_start_byte(n), kl_arena_printf(a, "%s(", t));
  kl_ha_edit(x, ts_node_end_byte(n), ts_node_end_byte(n), ")");
}

/* "half", "half4" / "float", "float4" for lanes lanes. */
static const char *kl_ha_tname(struct kl_arena *a, const char *scalar, unsigned lanes) {
  return lanes > 1 ? kl_arena_printf(a, "%s%u", scalar, lanes) : scalar;
}

static TSNode kl_ha_up(TSNode n) {
  TSNode p = ts_node_parent(n);
  while (!kl_node_null(p) && kl_ha_is(p, "parenthesized_expression")) p = ts_node_parent(p);
  return p;
}

static bool kl_ha_within(TSNode n, TSNode outer) {
  return !kl_node_null(outer) && ts_node_start_byte(n) >= ts_node_start_byte(outer) &&
         ts_node_end_byte(n) <= ts_node_end_byte(outer);
}

/* Whether an identifier naming v occurs under n. */
static bool kl_ha_names_var(struct kl_ha_fixer *x, TSNode n) {
  if (kl_node_null(n)) return false;
  if (kl_ha_is(n, "identifier")) {
    bool element;
    return kl_ha_var(x->h, n, &element) == x->v;
  }
  uint32_t c = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < c; i++)
    if (kl_ha_names_var(x, kl_node_named_child(n, i))) return true;
  return false;
}

/* The initializer of the declaration, made float: `0.0h` -> `0.0f`, `half4(0)` -> `float4(0)`,
 * `{...}` element by element; another vector value is converted, a scalar one widens as is. */
static void kl_ha_fix_init(struct kl_ha_fixer *x, TSNode val, const char *half_t,
                           const char *float_t, bool vector, int depth) {
  struct kl_arena *a = x->h->ctx->arena;
  if (kl_node_null(val) || depth > 4) return;
  if (kl_ha_is(val, "number_literal") || kl_ha_is(val, "user_defined_literal")) {
    const char *t = kl_dialect_node_text(a, x->h->ctx->unit, val);
    size_t n = strlen(t);
    if (n > 1 && (t[n - 1] == 'h' || t[n - 1] == 'H') && strpbrk(t, ".eE") &&
        !strpbrk(t, "xX"))
      kl_ha_edit(x, ts_node_end_byte(val) - 1, ts_node_end_byte(val), "f");
    else if (vector)
      kl_ha_wrap(x, val, float_t);
    return;
  }
  if (kl_ha_is(val, "unary_expression") && !vector) {
    kl_ha_fix_init(x, kl_node_field(val, "argument"), half_t, float_t, vector, depth + 1);
    return;
  }
  if (kl_ha_is(val, "initializer_list")) {
    uint32_t c = ts_node_named_child_count(val);
    for (uint32_t i = 0; i < c; i++)
      kl_ha_fix_init(x, kl_node_named_child(val, i), half_t, float_t, vector, depth + 1);
    return;
  }
  if (kl_ha_is(val, "call_expression")) {
    TSNode fn = kl_node_field(val, "function");
    if (!kl_node_null(fn) && !strcmp(kl_dialect_node_text(a, x->h->ctx->unit, fn), half_t)) {
      kl_ha_edit(x, ts_node_start_byte(fn), ts_node_end_byte(fn), float_t);
      return;
    }
  }
  if (vector) kl_ha_wrap(x, val, float_t);
}

/* Lanes of a swizzle (`xy` -> 2), 0 when field is not one. */
static unsigned kl_ha_swizzle(const char *field) {
  size_t n = strlen(field);
  if (!n || n > 4) return 0;
  bool xyzw = strspn(field, "xyzw") == n, rgba = strspn(field, "rgba") == n;
  return xyzw || rgba ? (unsigned)n : 0;
}

/* MSL functions that return their argument's type (a lane sum of a half is a half): a use
 * passed through one is judged where the call's value goes. */
static bool kl_ha_same_type_call(const char *name) {
  static const char *const fns[] = {"simd_sum",   "simd_prefix_inclusive_sum",
                                    "simd_prefix_exclusive_sum", "quad_sum",
                                    "simd_broadcast", "simd_shuffle", "simd_shuffle_down",
                                    "simd_shuffle_up", "simd_shuffle_xor", "abs", "fabs"};
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
    if (!strcmp(name, fns[i])) return true;
  return false;
}

/* The built-in type of what an lvalue (`out[i]`, `y`, `s.x`) stores, NULL when unknown. */
static const struct kl_msl_type *kl_ha_dest(struct kl_ha_fixer *x, TSNode lhs) {
  bool element;
  const struct kl_var *d = kl_ha_var(x->h, lhs, &element);
  lhs = kl_ha_strip(lhs);
  if (!d || !d->type || kl_ha_is(lhs, "field_expression")) return NULL;
  if (!kl_ha_is(lhs, "identifier") && !d->is_pointer && !d->array_dims) return NULL;
  return kl_types_builtin(x->h->ctx->arena, x->h->ctx->types, d->type, NULL);
}

/* Whether n is a scalar for certain: a literal, a scalar conversion, a scalar variable. */
static bool kl_ha_scalar(struct kl_ha_fixer *x, TSNode n) {
  struct kl_arena *a = x->h->ctx->arena;
  n = kl_ha_strip(n);
  if (kl_ha_is(n, "number_literal") || kl_ha_is(n, "user_defined_literal")) return true;
  if (kl_ha_is(n, "call_expression")) {
    static const char *const conv[] = {"half", "float", "int", "uint", "short", "ushort"};
    TSNode fn = kl_node_field(n, "function");
    const char *name = kl_node_null(fn) ? "" : kl_dialect_node_text(a, x->h->ctx->unit, fn);
    for (size_t i = 0; i < sizeof conv / sizeof *conv; i++)
      if (!strcmp(name, conv[i])) return true;
    return false;
  }
  if (kl_ha_is(n, "identifier")) {
    bool element;
    const struct kl_var *v = kl_ha_var(x->h, n, &element);
    const struct kl_msl_type *t =
        v && v->type && !v->is_pointer && !v->array_dims
            ? kl_types_builtin(a, x->h->ctx->types, v->type, NULL)
            : NULL;
    return t && t->lanes == 1 && t->kind != KL_TYPE_MATRIX && v != x->v;
  }
  return false;
}

/* Whether every argument of a vector constructor is a scalar use of v (`acc[0]`, `acc.x`). */
static bool kl_ha_all_uses(struct kl_ha_fixer *x, TSNode args) {
  uint32_t c = ts_node_named_child_count(args);
  for (uint32_t i = 0; i < c; i++) {
    TSNode arg = kl_ha_strip(kl_node_named_child(args, i));
    bool element;
    if ((!kl_ha_is(arg, "subscript_expression") && !kl_ha_is(arg, "field_expression")) ||
        kl_ha_var(x->h, arg, &element) != x->v || kl_ha_names_var(x, kl_node_field(arg, "indices")))
      return false;
    if (kl_ha_is(arg, "field_expression")) {
      TSNode f = kl_node_field(arg, "field");
      if (kl_node_null(f) ||
          kl_ha_swizzle(kl_dialect_node_text(x->h->ctx->arena, x->h->ctx->unit, f)) != 1)
        return false;
    }
  }
  return c > 1;
}

/* One use of v: identifier id. */
static void kl_ha_fix_use(struct kl_ha_fixer *x, TSNode id, unsigned lanes, bool array) {
  struct kl_ha *h = x->h;
  struct kl_arena *a = h->ctx->arena;
  TSNode u = id;
  TSNode p = kl_ha_up(u);
  if (array) {
    if (kl_node_null(p) || !kl_ha_is(p, "subscript_expression") ||
        !ts_node_eq(kl_ha_strip(kl_node_field(p, "argument")), u)) {
      x->bad = true; /* the array itself, passed or pointed at */
      return;
    }
    u = p;
    p = kl_ha_up(u);
  }
  if (!kl_node_null(p) && kl_ha_is(p, "field_expression") &&
      ts_node_eq(kl_ha_strip(kl_node_field(p, "argument")), u)) {
    TSNode f = kl_node_field(p, "field");
    lanes = kl_node_null(f) ? 0 : kl_ha_swizzle(kl_dialect_node_text(a, h->ctx->unit, f));
    if (!lanes) {
      x->bad = true;
      return;
    }
    u = p;
    p = kl_ha_up(u);
  }
  if (kl_node_null(p)) {
    x->bad = true;
    return;
  }
  const char *half_t = kl_ha_tname(a, "half", lanes);
  const char *float_t = kl_ha_tname(a, "float", lanes);
  /* Written: a scalar takes any value as is; a vector needs its value converted. */
  if (kl_ha_is(p, "assignment_expression") &&
      ts_node_eq(kl_ha_strip(kl_node_field(p, "left")), u)) {
    if (lanes == 1) return;
    TSNode op = kl_node_field(p, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    TSNode right = kl_node_field(p, "right");
    if ((strcmp(o, "=") && strcmp(o, "+=") && strcmp(o, "-=")) || kl_ha_names_var(x, right))
      x->bad = true;
    else
      kl_ha_wrap(x, right, float_t);
    return;
  }
  if (kl_ha_is(p, "update_expression")) return;
  if (kl_ha_is(p, "pointer_expression")) {
    x->bad = true; /* its address taken: where it goes is not known */
    return;
  }
  /* Read by its own update (`acc = fma(a, b, acc)`, `s = s * c + x`): float arithmetic with
   * half operands is float; fma's other operands must be float too, or the call is ambiguous. */
  for (TSNode q = p; !kl_node_null(q); q = ts_node_parent(q)) {
    if (!kl_ha_is(q, "assignment_expression")) continue;
    TSNode right = kl_node_field(q, "right");
    bool element;
    if (!kl_ha_within(u, right) || kl_ha_var(h, kl_node_field(q, "left"), &element) != x->v)
      continue;
    if (lanes > 1) {
      x->bad = true;
      return;
    }
    /* Through arithmetic into a call's argument (`fma(v, p, acc * ms)`): the float value makes
     * the call's other operands need float too. */
    TSNode arith = p;
    while (kl_ha_is(arith, "binary_expression")) arith = kl_ha_up(arith);
    if (kl_ha_is(arith, "argument_list")) p = arith;
    if (kl_ha_is(p, "argument_list")) {
      TSNode call = ts_node_parent(p);
      TSNode fn = kl_node_field(call, "function");
      const char *name =
          kl_node_null(fn) ? "" : kl_msl_unprefix(kl_dialect_node_text(a, h->ctx->unit, fn));
      if (strcmp(name, "fma") && strcmp(name, "mad") && strcmp(name, "precise::fma") &&
          strcmp(name, "max") && strcmp(name, "min")) {
        x->bad = true;
        return;
      }
      uint32_t c = ts_node_named_child_count(p);
      for (uint32_t i = 0; i < c; i++) {
        TSNode arg = kl_node_named_child(p, i);
        if (kl_ha_within(u, arg)) continue;
        bool conv = false;
        if (kl_ha_is(arg, "call_expression")) {
          TSNode af = kl_node_field(arg, "function");
          conv = !kl_node_null(af) && !strcmp(kl_dialect_node_text(a, h->ctx->unit, af), float_t);
        }
        if (!conv && !kl_ha_is(arg, "number_literal") && !kl_ha_is(arg, "user_defined_literal"))
          kl_ha_wrap(x, arg, float_t);
      }
      return;
    }
    if (!kl_ha_is(p, "binary_expression")) x->bad = true;
    return;
  }
  /* Read elsewhere: judged where the value goes, followed through what computes as well in
   * float (calls that keep its type, a vector built of its elements, arithmetic with a scalar),
   * so that it is rounded to half once, where it is stored. */
  for (int guard = 0; guard < 16; guard++) {
    if (kl_ha_is(p, "binary_expression")) {
      TSNode op = kl_node_field(p, "operator");
      const char *o = kl_node_null(op) ? "" : ts_node_type(op);
      TSNode l = kl_node_field(p, "left"), r = kl_node_field(p, "right");
      TSNode other = kl_ha_within(u, l) ? r : l;
      if (strlen(o) == 1 && strchr("+-*/", o[0]) && kl_ha_scalar(x, other)) {
        u = p;
        p = kl_ha_up(u);
        continue;
      }
      break;
    }
    if (kl_ha_is(p, "argument_list")) {
      TSNode call = ts_node_parent(p);
      TSNode fn = kl_node_field(call, "function");
      const char *name = kl_node_null(fn) ? "" : kl_dialect_node_text(a, h->ctx->unit, fn);
      /* Converted already: to float, or to the half it is stored as. */
      if (!strncmp(name, "float", 5) || !strcmp(name, "static_cast<float>") ||
          (ts_node_named_child_count(p) == 1 && !strcmp(name, half_t)))
        return;
      const char *bare = kl_msl_unprefix(name);
      if (ts_node_named_child_count(p) == 1 && kl_ha_same_type_call(bare)) {
        u = call;
        p = kl_ha_up(u);
        continue;
      }
      unsigned n = ts_node_named_child_count(p);
      if (lanes == 1 && n >= 2 && n <= 4 && !strcmp(name, kl_ha_tname(a, "half", n)) &&
          kl_ha_all_uses(x, p)) {
        kl_ha_edit(x, ts_node_start_byte(fn), ts_node_end_byte(fn), kl_ha_tname(a, "float", n));
        lanes = n;
        half_t = kl_ha_tname(a, "half", n);
        float_t = kl_ha_tname(a, "float", n);
        u = call;
        p = kl_ha_up(u);
        continue;
      }
      /* A function of the file may take it by reference. */
      if (kl_model_function(h->ctx->model, name)) {
        x->bad = true;
        return;
      }
      break;
    }
    if (kl_ha_is(p, "init_declarator") && ts_node_eq(kl_node_field(p, "value"), u)) {
      TSNode decl = ts_node_parent(p);
      TSNode ty = kl_node_null(decl) ? decl : kl_node_field(decl, "type");
      const char *t = kl_node_null(ty) ? "" : kl_dialect_node_text(a, h->ctx->unit, ty);
      if (!strcmp(t, float_t)) return;
      break;
    }
    if (kl_ha_is(p, "assignment_expression") && ts_node_eq(kl_node_field(p, "right"), u)) {
      const struct kl_msl_type *t = kl_ha_dest(x, kl_node_field(p, "left"));
      if (t && !t->is_half && !t->is_bfloat && !strcmp(t->scalar, "float") && t->lanes == lanes)
        return;
    }
    break;
  }
  kl_ha_wrap(x, u, half_t);
}

static void kl_ha_collect_uses(struct kl_ha_fixer *x, TSNode n, TSNode **out, size_t *nout,
                               size_t *cap, int depth) {
  if (kl_node_null(n) || depth > 300 || x->bad) return;
  if (kl_ha_is(n, "identifier")) {
    bool element;
    if (!ts_node_eq(n, x->v->name_node) && kl_ha_var(x->h, n, &element) == x->v) {
      KL_VEC_PUSH(x->h->ctx->arena, *out, *nout, *cap);
      (*out)[(*nout)++] = n;
    }
    return;
  }
  uint32_t c = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < c; i++)
    kl_ha_collect_uses(x, kl_node_named_child(n, i), out, nout, cap, depth + 1);
}

/* The fix of finding d: v declared float (floatN), its initializer made float, and converted
 * back to half (halfN) where its value flows into half. None when v is not a local declared
 * half outright (a template parameter's type is the template's to change), or a use cannot be
 * followed (its address taken, passed to a function of the file, written through a macro). */
static void kl_ha_fix(struct kl_ha *h, const struct kl_ha_find *f, struct kl_diag *d) {
  struct kl_rule_ctx *ctx = h->ctx;
  struct kl_arena *a = ctx->arena;
  const struct kl_var *v = f->v;
  if (f->matrix || f->param || f->bfloat || !f->type || !v->type || v->is_pointer ||
      v->is_reference || kl_node_null(v->node) || !kl_ha_is(v->node, "declaration") ||
      kl_node_null(v->name_node))
    return;
  const struct kl_msl_type *t = kl_types_builtin(a, ctx->types, v->type, NULL);
  if (!t || !t->is_half || t->kind == KL_TYPE_MATRIX || t->kind == KL_TYPE_SIMDGROUP_MATRIX ||
      (t->lanes != 1 && t->lanes != 2 && t->lanes != 3 && t->lanes != 4))
    return;
  TSNode ty = kl_node_field(v->node, "type");
  const char *half_t = kl_ha_tname(a, "half", t->lanes);
  const char *float_t = kl_ha_tname(a, "float", t->lanes);
  if (kl_node_null(ty) || strcmp(kl_dialect_node_text(a, ctx->unit, ty), half_t)) return;
  /* One declarator: `half m, sum;` would change m too. */
  uint32_t ndecl = 0;
  TSNode decl = {0};
  uint32_t c = ts_node_child_count(v->node);
  for (uint32_t i = 0; i < c; i++) {
    const char *field = ts_node_field_name_for_child(v->node, i);
    if (field && !strcmp(field, "declarator")) {
      ndecl++;
      decl = ts_node_child(v->node, i);
    }
  }
  if (ndecl != 1) return;
  struct kl_ha_fixer x = {.h = h, .v = v};
  kl_ha_edit(&x, ts_node_start_byte(ty), ts_node_end_byte(ty), float_t);
  if (kl_ha_is(decl, "init_declarator"))
    kl_ha_fix_init(&x, kl_node_field(decl, "value"), half_t, float_t, t->lanes > 1, 0);
  TSNode *uses = NULL;
  size_t nuses = 0, cap = 0;
  kl_ha_collect_uses(&x, h->fn->body, &uses, &nuses, &cap, 0);
  for (size_t i = 0; i < nuses && !x.bad; i++) kl_ha_fix_use(&x, uses[i], t->lanes, v->array_dims);
  if (x.bad || !x.n) return;
  /* In Python the kernel is assembled from strings: an edit must fall in the same literal run as
   * the accumulator's name (one offset shift from buffer to file). Text that maps elsewhere is an
   * interpolated value (`{acc_t}`), whose literal other kernels share: rewriting it changes
   * them. */
  if (ctx->src->lang == KL_LANG_PYTHON) {
    const struct kl_unit *u = ctx->unit;
    uint32_t at = ts_node_start_byte(v->name_node);
    int64_t shift = (int64_t)kl_offmap_to_file(&u->map, at) - at;
    for (size_t i = 0; i < x.n; i++)
      if ((int64_t)kl_offmap_to_file(&u->map, x.edits[i].start) - x.edits[i].start != shift)
        return;
  }
  struct kl_fix *fx = kl_diag_fix(ctx->out, d, kl_arena_printf(a, "declare `%s` as %s", v->name,
                                                               float_t));
  for (size_t i = 0; i < x.n; i++) {
    const struct kl_unit *u = ctx->unit;
    uint32_t fs = kl_offmap_to_file(&u->map, x.edits[i].start);
    kl_diag_edit(ctx->out, fx, fs, fs + (x.edits[i].end - x.edits[i].start), x.edits[i].text);
  }
}

static void kl_ha_report(struct kl_ha *h, const struct kl_ha_find *f) {
  struct kl_rule_ctx *ctx = h->ctx;
  struct kl_arena *a = ctx->arena;
  const char *what = f->matrix    ? "accumulator matrix"
                     : f->element ? "accumulator array"
                                  : "accumulator";
  const char *how = f->matrix ? "accumulated by `simdgroup_multiply_accumulate` in a loop"
                              : "updated by addition in a loop";
  const char *is = f->type ? f->type : "half";
  if (f->param) {
    const char **vals = kl_arena_alloc(a, (f->nvals + 1) * sizeof *vals);
    for (size_t i = 0; i < f->nvals; i++) vals[i] = kl_ha_dtype(f, f->vals[i]);
    const char *bound = vals[0];
    for (size_t i = 1; i < f->nvals; i++)
      bound = kl_arena_printf(a, "%s%s%s", bound, i + 1 == f->nvals ? " or " : ", ", vals[i]);
    const char *where = kl_rules_list(a, f->where, f->nwhere, KL_HA_NAMES);
    const char *in = f->nwhere ? kl_arena_printf(a, " in %s", where) : "";
    is = f->ncalls ? kl_arena_printf(a, "%s%s (`%s = %s`),", is, in, f->param, bound)
                   : kl_arena_printf(a, "%s%s (`%s` = %s),", is, in, f->param, bound);
  }
  const char *kind =
      f->bfloat ? "bfloat keeps 8 significant bits" : "half keeps 11 significant bits";
  /* The accumulator's other updates and its sums across lanes are this same defect: the
   * message names their lines, and each is a related location. */
  uint32_t after = ts_node_end_byte(f->at);
  const char **lines = kl_arena_alloc(a, (f->nalso + h->nsums + 1) * sizeof *lines);
  size_t nlines = 0;
  for (size_t i = 0; i < f->nalso; i++)
    lines[nlines++] = kl_arena_printf(a, "%u", kl_rules_line(ctx, ts_node_start_byte(f->also[i])));
  for (size_t i = 0; i < h->nsums; i++) {
    const struct kl_ha_sum *s = &h->sums[i];
    if (s->v == f->v && ts_node_start_byte(s->at) >= after)
      lines[nlines++] = kl_arena_printf(a, "%u", kl_rules_line(ctx, ts_node_start_byte(s->at)));
  }
  const char *same = "";
  if (nlines)
    same = kl_arena_printf(a, "; line%s %s use%s the same accumulator: the same defect",
                           nlines > 1 ? "s" : "", kl_rules_list(a, lines, nlines, 8),
                           nlines > 1 ? "" : "s");
  struct kl_diag *d = kl_rules_report(
      ctx, f->at,
      "%s `%s` is %s and %s: %s, so the running sum stops absorbing small terms; accumulate in "
      "float and convert once at the end%s",
      what, f->v->name, is, how, kind, same);
  if (!kl_node_null(f->v->name_node)) kl_rules_relate(ctx, d, f->v->name_node, "declared here");
  if (f->helper && !kl_node_null(f->via))
    kl_rules_relate(ctx, d, f->via, "`%s` adds to what the call passes here", f->helper);
  for (size_t i = 0; i < f->nalso; i++)
    kl_rules_relate(ctx, d, f->also[i], "also updated here: the same accumulator, the same defect");
  for (size_t i = 0; i < h->nsums; i++) {
    const struct kl_ha_sum *s = &h->sums[i];
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) seen = ts_node_eq(h->sums[k].at, s->at);
    if (seen || s->v != f->v || ts_node_start_byte(s->at) < after) continue;
    kl_rules_relate(ctx, d, s->at,
                    "summed across lanes by `%s` here, still in %s: the same accumulator, the "
                    "same defect",
                    s->name, f->bfloat ? "bfloat" : "half");
  }
  for (size_t i = 0; i < f->ncalls; i++) {
    const struct kl_dispatch *c = f->calls[i];
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) seen = f->calls[k] == c;
    if (seen) continue;
    /* What this call binds the parameter to; an alias (`acc_t`) is no binding of its own. */
    const char *val = f->bfloat ? "bfloat" : "half";
    for (size_t k = 0; f->param && k < c->nbinds; k++)
      if (!strcmp(c->binds[k].name, f->param)) val = c->binds[k].type;
    kl_rules_relate_span(ctx, d, c->bind_span, "the call of `%s` on line %u binds `%s = %s` here",
                         c->kernel, c->call.line, f->param ? f->param : f->v->type,
                         kl_ha_dtype(f, val));
  }
  if (d) kl_ha_fix(h, f, d);
}

/* Whether a binding could make some value of fn half: one whose type is no built-in type
 * without bindings (`T`, `acc_t`). Finding a helper's bindings walks its callers, so helpers
 * whose values are all float or integer skip it. */
static bool kl_ha_may_bind(struct kl_rule_ctx *ctx, const struct kl_function *fn) {
  for (size_t i = 0; i < fn->nlocals + fn->nparams; i++) {
    const struct kl_var *v = i < fn->nlocals ? &fn->locals[i] : &fn->params[i - fn->nlocals];
    if (v->type && !v->is_pointer && v->as != KL_AS_DEVICE && v->as != KL_AS_CONSTANT &&
        !kl_types_builtin(ctx->arena, ctx->types, v->type, NULL))
      return true;
  }
  return false;
}

static void kl_ha_check(struct kl_rule_ctx *ctx) {
  size_t nf = ctx->model->nfunctions;
  struct kl_ha_helpers helpers = {
      .state = kl_arena_alloc(ctx->arena, nf + 1),
      .adds = kl_arena_alloc(ctx->arena, (nf + 1) * sizeof *helpers.adds),
      .matrix = kl_arena_alloc(ctx->arena, (nf + 1) * sizeof *helpers.matrix),
      .at = kl_arena_alloc(ctx->arena, (nf + 1) * sizeof *helpers.at)};
  struct kl_types_callers_memo callers = {0};
  for (size_t i = 0; i < ctx->model->nfunctions; i++) {
    const struct kl_function *fn = &ctx->model->functions[i];
    if (kl_node_null(fn->body)) continue;
    struct kl_bindings *sets = NULL;
    size_t n = kl_types_instances(ctx->arena, ctx->model, fn, &sets);
    /* A templated helper or struct member is bound by the calls that reach it. */
    if (fn->ntparams && !n && kl_ha_may_bind(ctx, fn))
      n = kl_types_callers_in(&callers, ctx->arena, ctx->model, ctx->types, fn, &sets);
    struct kl_ha h = {.ctx = ctx, .fn = fn, .helpers = &helpers};
    /* A template nothing in the file binds still has what it declares half outright. */
    if (fn->ntparams && !n) {
      h.unbound = true;
      kl_ha_run(&h);
      h.unbound = false;
    }
    for (size_t s = 0; s < n; s++) {
      h.b = fn->ntparams ? &sets[s] : NULL;
      h.names = h.b ? h.b->names : NULL;
      h.nnames = h.b ? h.b->nnames : 0;
      kl_ha_run(&h);
    }
    h.b = NULL;
    h.names = NULL;
    h.nnames = 0;
    if (fn->ntparams && fn->is_kernel) kl_ha_calls(&h, fn);
    for (size_t f = 0; f < h.nfinds; f++) kl_ha_report(&h, &h.finds[f]);
  }
}

const struct kl_rule kl_rule_half_accumulator = {
    .id = "half-accumulator",
    .default_severity = KL_SEV_WARNING,
    .implemented = true,
    .summary = "A half-precision variable used as a running sum inside a loop",
    .what = "Reports a variable of `half` type (scalar or vector such as `half4`, an array "
            "element `S[j]`, or a `simdgroup_half8x8`/`simdgroup_bfloat8x8` matrix) that "
            "carries a running sum across the iterations of a loop: declared outside it and "
            "updated by adding to itself, `acc += x`, `acc -= x`, `acc = acc + x`, "
            "`acc = fma(a, b, acc)`, a rescaled sum `acc = acc * scale + x` (online softmax), "
            "also through fma (`acc = fma(acc, scale, x)`, `acc = fma(v, p, acc * scale)`), "
            "or `simdgroup_multiply_accumulate(C, A, B, C)`, also in a helper of the file that "
            "adds to a reference parameter so, called in the loop (`mma(acc, a, b)`: reported "
            "at the call, the helper's update related). The type may come from a template "
            "parameter bound to half by an instantiation (also one a macro stamps out, "
            "`#define INST(T) template [[host_name(...)]] ... k<T>(...);` then `INST(half);`, "
            "through a macro that stands for an argument list, `#define TYPES half, half4`, and "
            "inside an MSL template spelling, `simdgroup_matrix<T, 8, 8>`), by an MLX call's "
            "`template=[(\"T\", mx.float16)]`, or, for a templated helper, a static member "
            "(`Kernel<T>::run`) or a functor's `operator()`, by the calls that reach it. One "
            "accumulator is one finding, at its first loop update, with its declaration, its "
            "other updates and a later `simd_sum`/`simd_prefix_*_sum`/`quad_sum` of it as "
            "related locations. When only some instantiations make it half, the message names "
            "them (and the binding, `T` = half, or `T = float16` for a call); a variable "
            "declared half outright names none, and is reported in a template that nothing in "
            "the file instantiates too (a loop bounded by a template value is then not counted "
            "long). Not reported: a value declared inside the loop "
            "body (a new one each iteration), a loop whose body sets it afresh (`s = 0`) before "
            "the update, loops that pick which element they add to by a subscript affine in "
            "their counter (`acc[i]`, `acc[4 * i + 1]` in `for (i ...)`, but not `acc[i % 4]`), "
            "loops that run at most 8 times in all, counted from constant bounds, template "
            "values, constant locals, and a function-constant bound that indexes an array of at "
            "most 8 slots (a fused add of a few operands), and `max`, `min` and products, which "
            "are accurate enough. Fix (`--fix`): a local declared `half`/`halfN` (or an array of "
            "them) becomes `float`/`floatN` with its initializer, and is converted back "
            "(`half(acc)`) once, where its value is stored into half; none for a type from a "
            "template parameter, a matrix, or a use that cannot be followed (address taken, "
            "passed to a function of the file, in a macro).",
    .why = "`half` has an 11-bit significand: once the sum is large, each small addend is "
           "rounded away (at 2048, adding 1 changes nothing) and the error grows with the "
           "length of the reduction. A norm, a softmax denominator or a dot product over "
           "a few thousand elements comes out visibly wrong, and it can overflow to "
           "infinity at 65504. Keeping the inputs and outputs in `half` is fine; the "
           "running sum is what needs `float`, and on Apple GPUs the float accumulator "
           "costs almost nothing.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void row_sum(device const half* x [[buffer(0)]],\n"
               "                    device half* out [[buffer(1)]],\n"
               "                    constant uint& cols [[buffer(2)]],\n"
               "                    uint row [[thread_position_in_grid]]) {\n"
               "  half acc = 0.0h;\n"
               "  for (uint j = 0; j < cols; j++)\n"
               "    acc += x[row * cols + j];\n"
               "  out[row] = acc;\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void row_sum(device const half* x [[buffer(0)]],\n"
               "                    device half* out [[buffer(1)]],\n"
               "                    constant uint& cols [[buffer(2)]],\n"
               "                    uint row [[thread_position_in_grid]]) {\n"
               "  float acc = 0.0f;\n"
               "  for (uint j = 0; j < cols; j++)\n"
               "    acc += float(x[row * cols + j]);\n"
               "  out[row] = half(acc);\n"
               "}\n",
    .check = kl_ha_check,
};
