/* bounds-guard: device accesses indexed by thread position with no guard, when the grid may
 * exceed the data. Facts come from the flow analysis (analyzer/flow.h). */
#include <stdio.h>
#include <string.h>

#include "rules/rules.h"

static void kl_bg_check(struct kl_rule_ctx *ctx) {
  uint32_t last_line = 0;
  for (size_t i = 0; i < ctx->flow->naccesses; i++) {
    const struct kl_flow_access *x = &ctx->flow->accesses[i];
    if (!x->thread_indexed || !x->unguarded) continue;
    bool rounded = ctx->settings && ctx->settings->assume_rounded_grid;
    if (!x->evidence && !rounded) continue;
    struct kl_span sp = kl_diag_span_mapped(ctx->src, &ctx->unit->map, ts_node_start_byte(x->node),
                                            ts_node_end_byte(x->node));
    if (sp.line == last_line) continue; /* one report per line */
    last_line = sp.line;
    const char *var = x->unguarded_var ? x->unguarded_var : "the thread position";
    const char *access = kl_dialect_node_text(ctx->arena, ctx->unit, x->node);
    if (strlen(access) > 60) access = x->buffer && x->buffer->name ? x->buffer->name : "buffer";
    if (x->evidence && !ts_node_is_null(x->evidence_node)) {
      uint32_t line, col;
      kl_source_position(ctx->src,
                         kl_offmap_to_file(&ctx->unit->map, ts_node_start_byte(x->evidence_node)),
                         &line, &col);
      const char *cmp = kl_dialect_node_text(ctx->arena, ctx->unit, x->evidence_node);
      if (strlen(cmp) > 60) cmp = var;
      struct kl_diag *d = kl_rules_report(
          ctx, x->node,
          "`%s` is indexed by `%s` with no bound check on this path, but the kernel checks "
          "`%s` on line %u, so the grid can run past the data; guard this access too",
          access, var, cmp, line);
      kl_rules_relate(ctx, d, x->evidence_node, "the bound check that does not cover the access");
    } else {
      kl_rules_report(ctx, x->node,
                      "`%s` is indexed by `%s` with no bound check, and the grid is rounded up "
                      "past the data (assume-rounded-grid); add `if (%s >= n) return;` or guard "
                      "the access",
                      access, var, var);
    }
  }
}


const struct kl_rule kl_rule_bounds_guard = {
    .id = "bounds-guard",
    .default_severity = KL_SEV_ERROR,
    .implemented = true,
    .summary = "A device-memory access indexed by thread position with no bounds guard, on a grid "
               "that may exceed the data",
    .what =
        "Reports each device-memory load or store whose index derives from a thread "
        "coordinate (`thread_position_in_grid`, and also the threadgroup position and the "
        "lane or SIMD-group index, as in `row = 2 * tgid.x + sgid`) and that no "
        "comparison dominates on every path (`if (gid >= n) return;`, `if (gid < n) { ... "
        "}`, `gid < n ? x[gid] : 0`, `min(gid, n - 1)`, or a loop condition `i < n`). It "
        "reports only when there is evidence that the grid may be larger than the data: "
        "(a) a host dispatch in the same run rounds the grid up (`(n + tg - 1) // tg * "
        "tg`, `ceil`, `dispatchThreadgroups`); (b) the kernel itself compares that thread "
        "index against a bound somewhere else, so it knows the grid can pass the data, "
        "yet this access is outside the comparison's reach; or (c) `.lintrc` says so with "
        "`assume-rounded-grid = true` (or `--assume-rounded-grid`). With no evidence it "
        "stays silent, because an exact grid (as MLX dispatches by default) needs no "
        "guard. Reported at the access.",
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
