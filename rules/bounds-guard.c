/* bounds-guard: device accesses indexed by thread position with no guard, when the grid may
 * exceed the data. Facts come from the flow analysis (analyzer/flow.h). */
#include <stdio.h>
#include <string.h>

#include "rules/rules.h"

/* Evidence (a): the first dispatch of the access's kernel that rounds the grid up, if any. */
static const struct kl_dispatch *kl_bg_rounding(struct kl_rule_ctx *ctx,
                                                const struct kl_flow_access *x) {
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    /* Only a dimension the grid is rounded in can run past the data. */
    if (d->grid_rounded && (d->grid_dims & x->unguarded_dims) &&
        kl_rules_launches(ctx, d, x->owner))
      return d;
  }
  return NULL;
}

/* Evidence (a) reported: the first rounding dispatch names the place, and every local one is a
 * related location (each call site is checked on its own). */
static struct kl_diag *kl_bg_report_host(struct kl_rule_ctx *ctx,
                                         const struct kl_flow_access *x, struct kl_span at,
                                         const struct kl_dispatch *first, const char *access,
                                         const char *var, const char *spec) {
  const char *where = kl_rules_dispatch_place(ctx->arena, first);
  struct kl_diag *d = kl_rules_report_span(
      ctx, at,
      "`%s` is indexed by `%s` with no bound check, and %s rounds the grid up past the data "
      "(`%s`); add `if (%s >= n) return;` or guard the access%s",
      access, var, where, first->grid_text ? first->grid_text : "rounded", var, spec);
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *o = &ctx->dispatches[i];
    if (o->local && o->grid_rounded && (o->grid_dims & x->unguarded_dims) &&
        kl_rules_launches(ctx, o, x->owner))
      kl_rules_relate_span(ctx, d, o->grid_span, "%s rounds the grid up here",
                           kl_rules_dispatch_place(ctx->arena, o));
  }
  return d;
}

/* Whether access x is reported, and the dispatch that is its evidence (a) if that is why. */
static bool kl_bg_flagged(struct kl_rule_ctx *ctx, const struct kl_flow_access *x,
                          const struct kl_dispatch **host) {
  *host = NULL;
  if (!x->thread_indexed || !x->unguarded) return false;
  bool rounded = ctx->settings && ctx->settings->assume_rounded_grid;
  if (x->evidence || rounded) return true;
  *host = kl_bg_rounding(ctx, x);
  return *host != NULL;
}

static void kl_bg_check(struct kl_rule_ctx *ctx) {
  const struct kl_flow *fl = ctx->flow;
  bool *flagged = kl_arena_alloc(ctx->arena, fl->naccesses + 1);
  const struct kl_dispatch *host;
  for (size_t i = 0; i < fl->naccesses; i++) flagged[i] = kl_bg_flagged(ctx, &fl->accesses[i], &host);
  struct kl_rules_group *groups;
  size_t ng = kl_rules_group_accesses(ctx, flagged, &groups);
  for (size_t gi = 0; gi < ng; gi++) {
    const struct kl_flow_access *x = &fl->accesses[groups[gi].first];
    const char *where = groups[gi].where;
    struct kl_span sp = groups[gi].span;
    kl_bg_flagged(ctx, x, &host);
    const char *var = x->unguarded_var ? x->unguarded_var : "the thread position";
    const char *access = kl_dialect_node_text(ctx->arena, ctx->unit, x->node);
    if (strlen(access) > 60) access = x->buffer && x->buffer->name ? x->buffer->name : "buffer";
    struct kl_diag *d;
    if (x->evidence && !kl_node_null(x->evidence_node)) {
      const char *cmp = kl_dialect_node_text(ctx->arena, ctx->unit, x->evidence_node);
      if (strlen(cmp) > 60) cmp = var;
      d = kl_rules_report_span(
          ctx, sp,
          "`%s` is indexed by `%s` with no bound check on this path, but the kernel checks "
          "`%s` on line %u, so the grid can run past the data; guard this access too%s",
          access, var, cmp, kl_rules_line(ctx, ts_node_start_byte(x->evidence_node)), where);
      kl_rules_relate(ctx, d, x->evidence_node, "the bound check that does not cover the access");
    } else if (host) {
      d = kl_bg_report_host(ctx, x, sp, host, access, var, where);
    } else {
      d = kl_rules_report_span(
          ctx, sp,
          "`%s` is indexed by `%s` with no bound check, and the grid is rounded up "
          "past the data (assume-rounded-grid); add `if (%s >= n) return;` or guard "
          "the access%s",
          access, var, var, where);
    }
    kl_rules_relate_call(ctx, d, x);
  }
}

const struct kl_rule kl_rule_bounds_guard = {
    .id = "bounds-guard",
    .default_severity = KL_SEV_ERROR,
    .implemented = true,
    .summary = "A device-memory access indexed by thread position with no bounds guard, on a grid "
               "that may exceed the data",
    .what = "Reports each device-memory load or store whose index derives from a thread "
            "coordinate (`thread_position_in_grid`, and also the threadgroup position and the "
            "lane or SIMD-group index, as in `row = 2 * tgid.x + sgid`) and that no "
            "comparison dominates on every path (`if (gid >= n) return;`, `if (gid < n) { ... "
            "}`, `gid < n ? x[gid] : 0`, `min(gid, n - 1)`, a loop condition `i < n`, or the "
            "sign test of an offset stored as `valid ? off : -1`). It "
            "reports only when there is evidence that the grid may be larger than the data: "
            "(a) a host dispatch in the same run rounds the grid up: an MLX `grid=` or "
            "PyTorch `threads=` written `(n + tg - 1) // tg * tg`, `math.ceil(n / tg) * tg`, "
            "`-(-n // tg) * tg` or their `mx.add`/`mx.divide`/`mx.multiply` spellings, a "
            "metal-cpp or Objective-C `dispatchThreads` with such a size, or a "
            "`dispatchThreadgroups` with a ceiling-divided count (`(n + 255) / 256`), tied to "
            "the kernel by the function name its pipeline was made from; (b) the kernel itself "
            "compares the same value against a bound somewhere else, so it knows the grid can "
            "pass the data, yet this access is outside the comparison's reach. The same value "
            "means the comparison's thread coordinates all appear in the index scaled by one "
            "factor (`row < n` is evidence for `w[row * ld + col]`); a comparison of a value "
            "loaded from memory, of a larger offset that only contains the index (`tg * 256 + "
            "lid < n` says nothing of `out[tg]`), of another coordinate, or of a token a loop "
            "counter moves (`i2 + lid < n_t`) for an index that does not move with it is not, "
            "nor one that only picks between two formulas (`h < n ? a : b`); one that masks "
            "what fails it with an infinity (`k < n ? 0.0f : -INFINITY`, `FLT_MAX`) is; "
            "or (c) "
            "`.lintrc` says so with "
            "`assume-rounded-grid = true` (or `--assume-rounded-grid`). With no evidence it "
            "stays silent, because an exact grid (as MLX dispatches by default) needs no "
            "guard. Accesses in a same-file helper or static member (`kernel_t::run(...)`, "
            "through the alias) are analysed at each call, with the thread coordinates and "
            "thread-derived values the call passes it (`_impl(..., tgpig, tiisg, sgitg)`, "
            "`store_rows(out, sums, first_row, ne01)`), and the call is a related location; a "
            "helper's comparison of such a value is evidence (b) in the caller too. Row "
            "pointers kept in an array (`ax[row] = src0 + (r0 + row) * nb01`) carry their rows "
            "into `ax[row][i]`. Reported at the access; with evidence (a) the message names the "
            "dispatch, and each rounding call in the same file is a related location.",
    .why = "When the grid is rounded up to a whole number of threadgroups, the threads "
           "past the end of the data still run. Without a guard they read past the buffer "
           "(garbage, or a GPU fault) and, worse, write past it, silently corrupting "
           "whatever the allocator placed next. The bug only shows for sizes that are not "
           "a multiple of the threadgroup size, so it passes most tests.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void relu(device const float* x [[buffer(0)]],\n"
               "                 device float* y [[buffer(1)]],\n"
               "                 constant uint& n [[buffer(2)]],\n"
               "                 uint gid [[thread_position_in_grid]]) {\n"
               "  if (gid < n) y[gid] = max(x[gid], 0.0f);\n"
               "  y[gid] += 1.0f; // outside the guard: runs for gid >= n too\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void relu(device const float* x [[buffer(0)]],\n"
               "                 device float* y [[buffer(1)]],\n"
               "                 constant uint& n [[buffer(2)]],\n"
               "                 uint gid [[thread_position_in_grid]]) {\n"
               "  if (gid >= n) return;\n"
               "  y[gid] = max(x[gid], 0.0f) + 1.0f;\n"
               "}\n",
    .check = kl_bg_check,
};
