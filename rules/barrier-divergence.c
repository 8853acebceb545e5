/* barrier-divergence: barriers reached under control flow that is not uniform over the scope
 * the barrier synchronises. Facts come from the uniformity analysis (analyzer/flow.h). */
#include <string.h>

#include "rules/rules.h"

/* Where a diverging cause is: " (line N)" when the rule knows its node. */
static const char *kl_bd_at(struct kl_rule_ctx *ctx, TSNode n) {
  if (ts_node_is_null(n)) return "";
  return kl_arena_printf(ctx->arena, " (line %u)", kl_rules_line(ctx, ts_node_start_byte(n)));
}

static void kl_bd_check(struct kl_rule_ctx *ctx) {
  for (size_t i = 0; i < ctx->flow->nbarriers; i++) {
    const struct kl_flow_barrier *b = &ctx->flow->barriers[i];
    if (b->ctrl <= b->fn->barrier_scope) continue;
    const char *what = b->fn->barrier_scope == KL_SCOPE_THREADGROUP ? "threadgroup" : "SIMD group";
    /* A message always names what diverges; with no name, it says the condition does. */
    const char *on = b->cause_var ? kl_arena_printf(ctx->arena, " on `%s`", b->cause_var)
                                  : kl_arena_printf(ctx->arena, " on a value not the same for "
                                                                "every thread of the %s", what);
    bool has_cause = !ts_node_is_null(b->cause_node);
    struct kl_diag *d;
    switch (b->cause) {
    case KL_CAUSE_RETURN:
      d = kl_rules_report(ctx, b->call,
                          "`%s` after an early return that depends%s%s: threads that returned "
                          "never reach it, so the rest of the %s waits forever or reads stale "
                          "memory",
                          b->fn->name, on, kl_bd_at(ctx, b->cause_node), what);
      if (has_cause) kl_rules_relate(ctx, d, b->cause_node, "the early return depends on this");
      break;
    case KL_CAUSE_EXIT: {
      bool brk = !ts_node_is_null(b->exit_stmt) && !strcmp(ts_node_type(b->exit_stmt),
                                                           "break_statement");
      d = kl_rules_report(ctx, b->call,
                          "`%s` after a `%s`%s that depends%s: threads that leave this "
                          "iteration there never reach it, so the rest of the %s waits forever "
                          "or reads stale memory",
                          b->fn->name, brk ? "break" : "continue", kl_bd_at(ctx, b->exit_stmt),
                          on, what);
      if (has_cause)
        kl_rules_relate(ctx, d, b->cause_node, "the `%s` depends on this",
                        brk ? "break" : "continue");
      break;
    }
    case KL_CAUSE_LOOP:
      if (b->back_edge) {
        d = kl_rules_report(ctx, b->call,
                            "`%s` inside a loop that threads leave early by a `break` that "
                            "depends%s, from the previous iteration%s: threads that broke out "
                            "never reach it again, so the rest of the %s waits forever",
                            b->fn->name, on, kl_bd_at(ctx, b->cause_node), what);
        if (has_cause)
          kl_rules_relate(ctx, d, b->cause_node, "the `break` in the previous iteration depends "
                                                 "on this");
        break;
      }
      d = kl_rules_report(ctx, b->call,
                          "`%s` inside a loop whose trip count depends%s: threads leave the loop "
                          "after different iterations, so not every thread of the %s reaches "
                          "each barrier",
                          b->fn->name, on, what);
      if (has_cause) kl_rules_relate(ctx, d, b->cause_node, "the loop condition diverges here");
      break;
    default:
      d = kl_rules_report(ctx, b->call,
                          "`%s` inside a branch%s: threads that skip the branch never reach it, "
                          "so the %s waits forever; move the barrier after the branch",
                          b->fn->name, on, what);
      if (has_cause) kl_rules_relate(ctx, d, b->cause_node, "the branch condition diverges here");
      break;
    }
  }
}

const struct kl_rule kl_rule_barrier_divergence = {
    .id = "barrier-divergence",
    .default_severity = KL_SEV_ERROR,
    .implemented = true,
    .summary = "A threadgroup or SIMD-group barrier reached under thread-dependent control flow",
    .what = "Reports a `threadgroup_barrier` reached under control flow whose condition is "
            "not the same for every thread of the threadgroup, and a `simdgroup_barrier` "
            "under control flow that is not the same for every thread of the SIMD group. "
            "Conditions are judged by the uniformity analysis: thread positions and indices "
            "vary per thread, `simdgroup_index_in_threadgroup` and `simd_*` results are "
            "uniform within a SIMD group, threadgroup positions within a threadgroup, and "
            "constants, `constant` buffers and template parameters everywhere. Loops count "
            "through their condition, and an earlier `return`, `break` or `continue` under a "
            "thread-dependent condition counts for the rest of the region. Helpers in the "
            "same file are followed. Reported at the barrier, with the diverging condition as "
            "a related location; the message says which case it is (\"after a thread-dependent "
            "early return\" or \"inside a branch on `lid`\").",
    .why = "A barrier waits until every thread of the group has reached it. If some "
           "threads skip it, because they took the other branch or returned early, the "
           "others wait for threads that will never come: the GPU can hang, or the threads "
           "that did arrive go on to read threadgroup memory that was never written. The "
           "usual culprit is an early `if (gid >= n) return;` in a kernel that later "
           "synchronises through threadgroup memory.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void block_sum(device const float* x [[buffer(0)]],\n"
               "                      device float* out [[buffer(1)]],\n"
               "                      constant uint& n [[buffer(2)]],\n"
               "                      uint gid [[thread_position_in_grid]],\n"
               "                      uint lid [[thread_position_in_threadgroup]],\n"
               "                      uint tgid [[threadgroup_position_in_grid]]) {\n"
               "  threadgroup float part[256];\n"
               "  if (gid >= n) return; // threads past n never reach the barrier below\n"
               "  part[lid] = x[gid];\n"
               "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
               "  if (lid == 0) {\n"
               "    float s = 0.0f;\n"
               "    for (uint i = 0; i < 256; i++) s += part[i];\n"
               "    out[tgid] = s;\n"
               "  }\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void block_sum(device const float* x [[buffer(0)]],\n"
               "                      device float* out [[buffer(1)]],\n"
               "                      constant uint& n [[buffer(2)]],\n"
               "                      uint gid [[thread_position_in_grid]],\n"
               "                      uint lid [[thread_position_in_threadgroup]],\n"
               "                      uint tgid [[threadgroup_position_in_grid]]) {\n"
               "  threadgroup float part[256];\n"
               "  part[lid] = gid < n ? x[gid] : 0.0f; // every thread reaches the barrier\n"
               "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
               "  if (lid == 0) {\n"
               "    float s = 0.0f;\n"
               "    for (uint i = 0; i < 256; i++) s += part[i];\n"
               "    out[tgid] = s;\n"
               "  }\n"
               "}\n",
    .check = kl_bd_check,
};
