/* half-accumulator: running sums kept in half inside loops. A syntactic pattern over the tree,
 * with types resolved through aliases and template instantiations (analyzer/types.h). */
#include <stdio.h>
#include <string.h>

#include "rules/rules.h"

struct kl_ha {
  struct kl_rule_ctx *ctx;
  const struct kl_function *fn;
  const struct kl_bindings *b;
  const struct kl_dispatch **calls; /* the calls that bind b, when it comes from calls */
  size_t ncalls;
  const char **acc; /* names accumulated in a loop (any type), for the simd_sum case */
  size_t nacc, cap_acc;
  bool report;    /* second pass: report; first pass only collects accumulators */
  bool collected; /* the first pass has run */
};

static bool kl_ha_is(TSNode n, const char *t) {
  return !strcmp(ts_node_type(n), t);
}

static TSNode kl_ha_strip(TSNode n) {
  while (!ts_node_is_null(n) && kl_ha_is(n, "parenthesized_expression") &&
         ts_node_named_child_count(n) == 1)
    n = ts_node_named_child(n, 0);
  return n;
}

static bool kl_ha_same(struct kl_ha *h, TSNode a, TSNode b) {
  a = kl_ha_strip(a);
  b = kl_ha_strip(b);
  if (ts_node_is_null(a) || ts_node_is_null(b)) return false;
  uint32_t as = ts_node_start_byte(a), ae = ts_node_end_byte(a);
  uint32_t bs = ts_node_start_byte(b), be = ts_node_end_byte(b);
  return ae - as == be - bs && !memcmp(h->ctx->unit->buf + as, h->ctx->unit->buf + bs, ae - as);
}

/* The variable an accumulator expression names: `acc`, `acc.x`, `S[j]` -> acc / S. */
static const struct kl_var *kl_ha_var(struct kl_ha *h, TSNode n, bool *element) {
  n = kl_ha_strip(n);
  *element = false;
  for (int guard = 0; guard < 8 && !ts_node_is_null(n); guard++) {
    if (kl_ha_is(n, "identifier")) {
      char *name = kl_dialect_node_text(h->ctx->arena, h->ctx->unit, n);
      return kl_model_var(h->fn, name);
    }
    if (kl_ha_is(n, "subscript_expression")) {
      *element = true;
      n = ts_node_child_by_field_name(n, "argument", 8);
    } else if (kl_ha_is(n, "field_expression")) {
      n = ts_node_child_by_field_name(n, "argument", 8);
    } else {
      break;
    }
  }
  return NULL;
}

/* Whether rhs adds lhs to something: x + e, e + x, x - e, fma(a, b, x), x * s + y. */
static bool kl_ha_adds_to(struct kl_ha *h, TSNode rhs, TSNode lhs, int depth) {
  rhs = kl_ha_strip(rhs);
  if (ts_node_is_null(rhs) || depth > 16) return false;
  if (kl_ha_is(rhs, "binary_expression")) {
    TSNode op = ts_node_child_by_field_name(rhs, "operator", 8);
    const char *o = ts_node_is_null(op) ? "" : ts_node_type(op);
    TSNode l = ts_node_child_by_field_name(rhs, "left", 4);
    TSNode r = ts_node_child_by_field_name(rhs, "right", 5);
    if (!strcmp(o, "+") || !strcmp(o, "-")) {
      if (kl_ha_same(h, l, lhs) || (o[0] == '+' && kl_ha_same(h, r, lhs))) return true;
      /* A rescaled running sum: x * scale + y (online softmax). */
      TSNode sides[2] = {kl_ha_strip(l), kl_ha_strip(r)};
      for (int i = 0; i < 2; i++) {
        if (i == 1 && o[0] == '-') break;
        TSNode s = sides[i];
        if (kl_ha_is(s, "binary_expression")) {
          TSNode sop = ts_node_child_by_field_name(s, "operator", 8);
          if (!ts_node_is_null(sop) && !strcmp(ts_node_type(sop), "*") &&
              (kl_ha_same(h, ts_node_child_by_field_name(s, "left", 4), lhs) ||
               kl_ha_same(h, ts_node_child_by_field_name(s, "right", 5), lhs)))
            return true;
        }
        if (kl_ha_adds_to(h, s, lhs, depth + 1)) return true;
      }
    }
    return false;
  }
  if (kl_ha_is(rhs, "call_expression")) {
    TSNode fn = ts_node_child_by_field_name(rhs, "function", 8);
    TSNode args = ts_node_child_by_field_name(rhs, "arguments", 9);
    if (ts_node_is_null(fn) || ts_node_is_null(args)) return false;
    const char *name = kl_msl_unprefix(kl_dialect_node_text(h->ctx->arena, h->ctx->unit, fn));
    if ((!strcmp(name, "fma") || !strcmp(name, "mad") || !strcmp(name, "precise::fma")) &&
        ts_node_named_child_count(args) == 3)
      return kl_ha_same(h, ts_node_named_child(args, 2), lhs);
  }
  return false;
}

/* The resolved type of a variable is half (scalar or vector) under the current bindings. */
static bool kl_ha_half(struct kl_ha *h, const struct kl_var *v) {
  if (!v || !v->type || v->is_pointer) return false;
  if (v->as == KL_AS_DEVICE || v->as == KL_AS_CONSTANT) return false;
  const struct kl_msl_type *t = kl_types_builtin(h->ctx->arena, h->ctx->types, v->type, h->b);
  return t && t->is_half && t->kind != KL_TYPE_MATRIX && t->kind != KL_TYPE_SIMDGROUP_MATRIX;
}

static bool kl_ha_accumulated(struct kl_ha *h, const char *name) {
  for (size_t i = 0; i < h->nacc; i++)
    if (!strcmp(h->acc[i], name)) return true;
  return false;
}

static void kl_ha_report(struct kl_ha *h, TSNode at, const struct kl_var *v, bool element,
                         const char *how) {
  const char *inst = "";
  if (h->b && h->b->label && h->ncalls)
    inst = kl_arena_printf(h->ctx->arena, " when the call binds %s (`%s` = half)", h->b->label,
                           v->type);
  else if (h->b && h->b->label)
    inst =
        kl_arena_printf(h->ctx->arena, " in instantiation %s (`%s` = half)", h->b->label, v->type);
  struct kl_diag *d = kl_rules_report(
      h->ctx, at,
      "%s `%s` is %s%s and %s: half keeps 11 significant bits, so the running sum "
      "stops absorbing small terms; accumulate in float and convert once at the end",
      element ? "accumulator array" : "accumulator", v->name,
      kl_types_resolve(h->ctx->arena, h->ctx->types, v->type, h->b), inst, how);
  if (!ts_node_is_null(v->name_node)) kl_rules_relate(h->ctx, d, v->name_node, "declared here");
  for (size_t i = 0; i < h->ncalls; i++)
    kl_rules_relate_span(h->ctx, d, h->calls[i]->bind_span,
                         "the call of `%s` on line %u binds `%s` to half here", h->calls[i]->kernel,
                         h->calls[i]->call.line, v->type);
}

static void kl_ha_walk(struct kl_ha *h, TSNode n, int loops, int depth) {
  if (ts_node_is_null(n) || depth > 300) return;
  const char *ty = ts_node_type(n);
  bool loop = !strcmp(ty, "for_statement") || !strcmp(ty, "while_statement") ||
              !strcmp(ty, "do_statement") || !strcmp(ty, "for_range_loop");
  if (loops > 0 && !strcmp(ty, "assignment_expression")) {
    TSNode op = ts_node_child_by_field_name(n, "operator", 8);
    const char *o = ts_node_is_null(op) ? "" : ts_node_type(op);
    TSNode lhs = ts_node_child_by_field_name(n, "left", 4);
    TSNode rhs = ts_node_child_by_field_name(n, "right", 5);
    bool adds =
        !strcmp(o, "+=") || !strcmp(o, "-=") || (!strcmp(o, "=") && kl_ha_adds_to(h, rhs, lhs, 0));
    bool element;
    const struct kl_var *v = adds ? kl_ha_var(h, lhs, &element) : NULL;
    if (v) {
      if (!h->report) {
        KL_VEC_PUSH(h->ctx->arena, h->acc, h->nacc, h->cap_acc);
        h->acc[h->nacc++] = v->name;
      } else if (kl_ha_half(h, v)) {
        kl_ha_report(h, n, v, element, "updated by addition in a loop");
      }
    }
  }
  if (h->report && !strcmp(ty, "call_expression")) {
    TSNode fn = ts_node_child_by_field_name(n, "function", 8);
    TSNode args = ts_node_child_by_field_name(n, "arguments", 9);
    const char *name = kl_msl_unprefix(
        ts_node_is_null(fn) ? "" : kl_dialect_node_text(h->ctx->arena, h->ctx->unit, fn));
    /* The cross-lane sums SPEC names: simd_sum, its prefix (scan) forms, and quad_sum. */
    bool lane_sum = !strcmp(name, "simd_sum") || !strcmp(name, "simd_prefix_inclusive_sum") ||
                    !strcmp(name, "simd_prefix_exclusive_sum") || !strcmp(name, "quad_sum");
    if (lane_sum && !ts_node_is_null(args) && ts_node_named_child_count(args) == 1) {
      bool element;
      const struct kl_var *v = kl_ha_var(h, ts_node_named_child(args, 0), &element);
      if (v && kl_ha_half(h, v) && kl_ha_accumulated(h, v->name))
        kl_ha_report(h, n, v, element,
                     kl_arena_printf(h->ctx->arena,
                                     "summed across lanes by `%s` after a loop accumulation",
                                     name));
    }
  }
  /* A loop's initializer runs once; its condition, update and body repeat. */
  TSNode init = loop ? ts_node_child_by_field_name(n, "initializer", 11) : n;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_named_child(n, i);
    bool repeats = loop && !ts_node_eq(c, init);
    kl_ha_walk(h, c, loops + (repeats ? 1 : 0), depth + 1);
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
static bool kl_ha_has_half(struct kl_ha *h) {
  for (size_t i = 0; i < h->fn->nlocals; i++)
    if (kl_ha_half(h, &h->fn->locals[i])) return true;
  for (size_t i = 0; i < h->fn->nparams; i++)
    if (kl_ha_half(h, &h->fn->params[i])) return true;
  return false;
}

/* Report the body under the current bindings, collecting its accumulators first if needed. */
static void kl_ha_run(struct kl_ha *h) {
  if (!kl_ha_has_half(h)) return;
  if (!h->collected) {
    h->report = false;
    kl_ha_walk(h, h->fn->body, 0, 0);
    h->collected = true;
  }
  h->report = true;
  kl_ha_walk(h, h->fn->body, 0, 0);
}

/* A templated kernel bound by its calls (MLX template=): walked once per distinct binding, and
 * each finding names the calls with that binding, so a body that is right for float32 is
 * reported only where a call binds float16. */
static void kl_ha_calls(struct kl_ha *h, const struct kl_function *fn) {
  struct kl_rule_ctx *ctx = h->ctx;
  const struct kl_dispatch **group =
      kl_arena_alloc(ctx->arena, (ctx->ndispatches + 1) * sizeof *group);
  bool *done = kl_arena_alloc(ctx->arena, ctx->ndispatches + 1);
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    if (done[i] || !d->local || !d->nbinds || !kl_rules_launches(ctx, d, fn)) continue;
    size_t n = 0;
    for (size_t j = i; j < ctx->ndispatches; j++) {
      const struct kl_dispatch *e = &ctx->dispatches[j];
      if (done[j] || !e->local || !kl_ha_same_binds(d, e) || !kl_rules_launches(ctx, e, fn))
        continue;
      done[j] = true;
      group[n++] = e;
    }
    struct kl_bindings b = {d->binds, d->nbinds, d->bind_text};
    h->b = &b;
    h->calls = group;
    h->ncalls = n;
    kl_ha_run(h);
  }
  h->calls = NULL;
  h->ncalls = 0;
}

static void kl_ha_check(struct kl_rule_ctx *ctx) {
  for (size_t i = 0; i < ctx->model->nfunctions; i++) {
    const struct kl_function *fn = &ctx->model->functions[i];
    if (ts_node_is_null(fn->body)) continue;
    struct kl_bindings *sets = NULL;
    size_t n = kl_types_instances(ctx->arena, ctx->model, fn, &sets);
    struct kl_ha h = {.ctx = ctx, .fn = fn};
    for (size_t s = 0; s < n; s++) {
      h.b = fn->ntparams ? &sets[s] : NULL;
      kl_ha_run(&h);
    }
    if (fn->ntparams && fn->is_kernel) kl_ha_calls(&h, fn);
  }
}

const struct kl_rule kl_rule_half_accumulator = {
    .id = "half-accumulator",
    .default_severity = KL_SEV_WARNING,
    .implemented = true,
    .summary = "A half-precision variable used as a running sum inside a loop",
    .what = "Reports a variable of `half` type (scalar or vector such as `half4`, and a "
            "template parameter bound to `half`/float16 by an instantiation, or by an MLX "
            "call's `template=[(\"T\", mx.float16)]`, which the message names) that is updated "
            "inside a loop by adding to itself: `acc += x`, "
            "`acc -= x`, `acc = acc + x`, `acc = fma(a, b, acc)`, or a rescaled running sum "
            "`acc = acc * scale + x` (online softmax). Array elements (`half S[Q]; S[j] = "
            "S[j] * ms + ...`) and struct members accumulated through a templated operator "
            "count too, and so does a `half` value summed across lanes with `simd_sum` or "
            "`simd_prefix_*_sum` after a loop accumulation. `max`, `min` and products are "
            "accurate enough and are not reported. Reported at the update, with the "
            "accumulator's declaration as a related location. A templated MLX body is checked "
            "once per distinct binding its calls give: a body that is right for float32 is "
            "reported only for the calls that bind float16, each named as a related location.",
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
