/* barrier-divergence: barriers reached under control flow that is not uniform over the scope
 * the barrier synchronises. Facts come from the kernels lowered into the IR
 * (analyzer/passes/facts.h: uniformity, and divergence's explanation of each barrier). */
#include <stdlib.h>
#include <string.h>

#include "rules/rules.h"

/* Where a diverging cause is: " (line N)" when the rule knows its node. */
static const char *kl_bd_at(struct kl_rule_ctx *ctx, TSNode n) {
  if (kl_node_null(n)) return "";
  return kl_arena_printf(ctx->arena, " (line %u)", kl_rules_line(ctx, ts_node_start_byte(n)));
}

/* Barrier b, explained by its cause k: 0 the first, 1.. its own (kl_facts_barrier.alt). */
static struct kl_facts_barrier kl_bd_as(const struct kl_facts_barrier *b, size_t k) {
  struct kl_facts_barrier x = *b;
  if (k == 0) return x;
  const struct kl_facts_cause *c = &b->alt[k - 1];
  x.cause = c->kind;
  x.back_edge = c->back_edge;
  x.cause_node = c->node;
  x.exit_stmt = c->exit_stmt;
  x.carried = c->carried;
  x.cause_var = c->var;
  return x;
}

/* Whether barriers a and b diverge for one reason: the same return, branch, loop or exit, over the
 * same group (the message names the threadgroup or the SIMD group that waits). */
static bool kl_bd_same_cause(const struct kl_facts_barrier *a, const struct kl_facts_barrier *b) {
  return a->fn->barrier_scope == b->fn->barrier_scope && !kl_node_null(a->cause_node) &&
         !kl_node_null(b->cause_node) && a->cause == b->cause && a->back_edge == b->back_edge &&
         ts_node_start_byte(a->cause_node) == ts_node_start_byte(b->cause_node);
}

static void kl_bd_report(struct kl_rule_ctx *ctx, const struct kl_facts_barrier *b,
                         const struct kl_facts_barrier *const *more, size_t nmore) {
  const char *what = b->fn->barrier_scope == KL_SCOPE_THREADGROUP ? "threadgroup" : "SIMD group";
  /* A message always names what diverges; with no name, it says the condition does. */
  const char *on =
      b->cause_var ? kl_arena_printf(ctx->arena, " on `%s`", b->cause_var)
                   : kl_arena_printf(ctx->arena,
                                     " on a value not the same for every thread of the %s", what);
  /* The instantiations it holds for, when not all of those that reach it. */
  const char *in = "";
  if (b->nflag < b->nreach && b->nnames)
    in = kl_arena_printf(ctx->arena, " (in %s)", kl_rules_list(ctx->arena, b->names, b->nnames, 3));
  const char *name = kl_arena_printf(ctx->arena, "`%s`%s", b->fn->name, in);
  /* The other barriers the same divergence reaches, in line order. */
  const char *also = "";
  if (nmore) {
    const char **lines = kl_arena_alloc(ctx->arena, nmore * sizeof *lines);
    uint32_t *ln = kl_arena_alloc(ctx->arena, nmore * sizeof *ln);
    for (size_t i = 0; i < nmore; i++) {
      ln[i] = kl_rules_line(ctx, more[i]->at);
      for (size_t k = i; k > 0 && ln[k - 1] > ln[k]; k--) {
        uint32_t t = ln[k];
        ln[k] = ln[k - 1];
        ln[k - 1] = t;
      }
    }
    for (size_t i = 0; i < nmore; i++) lines[i] = kl_arena_printf(ctx->arena, "%u", ln[i]);
    also = kl_arena_printf(ctx->arena, "; it also reaches the barrier%s at line%s %s",
                           nmore > 1 ? "s" : "", nmore > 1 ? "s" : "",
                           kl_rules_list(ctx->arena, lines, nmore, 8));
  }
  bool has_cause = !kl_node_null(b->cause_node);
  struct kl_diag *d;
  switch (b->cause) {
  case KL_DIV_RETURN:
    d = kl_rules_report(ctx, b->call,
                        "%s after an early return that depends%s%s: threads that returned never "
                        "reach it, so the rest of the %s waits forever or reads stale memory%s",
                        name, on, kl_bd_at(ctx, b->cause_node), what, also);
    if (has_cause) kl_rules_relate(ctx, d, b->cause_node, "the early return depends on this");
    break;
  case KL_DIV_EXIT: {
    bool brk =
        !kl_node_null(b->exit_stmt) && !strcmp(ts_node_type(b->exit_stmt), "break_statement");
    d = kl_rules_report(ctx, b->call,
                        "%s after a `%s`%s that depends%s: threads that leave this iteration "
                        "there never reach it, so the rest of the %s waits forever or reads "
                        "stale memory%s",
                        name, brk ? "break" : "continue", kl_bd_at(ctx, b->exit_stmt), on, what,
                        also);
    if (has_cause)
      kl_rules_relate(ctx, d, b->cause_node, "the `%s` depends on this",
                      brk ? "break" : "continue");
    break;
  }
  case KL_DIV_LOOP:
    if (b->back_edge) {
      d = kl_rules_report(ctx, b->call,
                          "%s inside a loop that threads leave early by a `break` that "
                          "depends%s, from the previous iteration%s: threads that broke out "
                          "never reach it again, so the rest of the %s waits forever%s",
                          name, on, kl_bd_at(ctx, b->cause_node), what, also);
      if (has_cause)
        kl_rules_relate(ctx, d, b->cause_node,
                        "the `break` in the previous iteration depends on this");
      break;
    }
    d = kl_rules_report(
        ctx, b->call,
        "%s inside a loop whose trip count depends%s%s%s: threads leave the loop after different "
        "iterations, so not every thread of the %s reaches each barrier%s",
        name, on, kl_node_null(b->carried) ? "" : ", from the previous iteration",
        kl_bd_at(ctx, b->carried), what, also);
    if (has_cause) kl_rules_relate(ctx, d, b->cause_node, "the loop condition diverges here");
    if (!kl_node_null(b->carried))
      kl_rules_relate(ctx, d, b->carried, "the previous iteration assigns it here");
    break;
  default:
    d = kl_rules_report(ctx, b->call,
                        "%s inside a branch%s: threads that skip the branch never reach it, so "
                        "the %s waits forever; move the barrier after the branch%s",
                        name, on, what, also);
    if (has_cause) kl_rules_relate(ctx, d, b->cause_node, "the branch condition diverges here");
    break;
  }
  for (size_t i = 0; i < nmore; i++)
    kl_rules_relate(ctx, d, more[i]->call, "the same divergence reaches this barrier");
  if (!kl_node_null(b->lambda_at)) kl_rules_relate(ctx, d, b->lambda_at, "the lambda runs here");
  if (!kl_node_null(b->via)) {
    if (b->kernel)
      kl_rules_relate(ctx, d, b->via, "called from `%s` here", b->kernel->name);
    else
      kl_rules_relate(ctx, d, b->via, "called from the kernel here");
  }
}

static int kl_bd_by_seq(const void *p, const void *q) {
  const struct kl_facts_barrier *a = *(const struct kl_facts_barrier *const *)p,
                                *b = *(const struct kl_facts_barrier *const *)q;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* A finding being gathered: its cause (a barrier as kl_bd_as explains it, at the first barrier
 * the cause reaches) and the other barriers the cause reaches; or, absorbed, a cause of a
 * barrier that already has a finding, which it joins unnamed. */
struct kl_bd_group {
  struct kl_facts_barrier head;
  const struct kl_facts_barrier **more;
  size_t nmore;
  bool absorbed;
};

/* Every barrier some lowering reaches, where it is live, under control wider than its scope,
 * explained by the IR (analyzer/passes/divergence.h). One divergent return, branch or loop is
 * one finding, at the first barrier it reaches (in the order the lowerings reach them). A barrier
 * that an earlier return explains first may sit in a branch or loop that diverges of its own, or
 * after a later return: each such cause is a defect of its own, a finding at the first barrier it
 * reaches, unless that barrier has a finding already. Nothing when a lowering was cut short: it
 * may miss what makes a barrier diverge, or what keeps it uniform. */
static void kl_bd_check(struct kl_rule_ctx *ctx) {
  const struct kl_facts *f = ctx->facts;
  if (!f || f->incomplete) return;
  const struct kl_facts_barrier **xs = kl_arena_alloc(ctx->arena, (f->nbarriers + 1) * sizeof *xs);
  size_t n = 0;
  for (size_t i = 0; i < f->nbarriers; i++) {
    const struct kl_facts_barrier *x = &f->barriers[i];
    if (x->live_divergent && x->fn && x->ctrl > x->fn->barrier_scope) xs[n++] = x;
  }
  qsort(xs, n, sizeof *xs, kl_bd_by_seq);
  struct kl_bd_group *g = kl_arena_alloc(ctx->arena, (3 * n + 1) * sizeof *g);
  size_t ng = 0;
  for (size_t i = 0; i < n; i++) {
    bool has_finding = false;
    for (size_t k = 0; k <= xs[i]->nalt; k++) {
      struct kl_facts_barrier c = kl_bd_as(xs[i], k);
      size_t j = 0;
      while (j < ng && !kl_bd_same_cause(&g[j].head, &c)) j++;
      if (j < ng) {
        if (g[j].absorbed || g[j].head.call.id == c.call.id) continue;
        /* A barrier may join one group by its first cause and by another. */
        if (!g[j].more) g[j].more = kl_arena_alloc(ctx->arena, (2 * n + 1) * sizeof *g[j].more);
        g[j].more[g[j].nmore++] = xs[i];
        continue;
      }
      g[ng] = (struct kl_bd_group){c, NULL, 0, k > 0 && has_finding};
      has_finding |= !g[ng].absorbed;
      ng++;
    }
  }
  for (size_t j = 0; j < ng; j++)
    if (!g[j].absorbed) kl_bd_report(ctx, &g[j].head, g[j].more, g[j].nmore);
}

const struct kl_rule kl_rule_barrier_divergence = {
    .id = "barrier-divergence",
    .default_severity = KL_SEV_ERROR,
    .implemented = true,
    .summary = "A threadgroup or SIMD-group barrier reached under thread-dependent control flow",
    .what = "Reports a `threadgroup_barrier` reached under control flow whose condition is not the "
            "same for every thread of the threadgroup, and a `simdgroup_barrier` under control "
            "flow that is not the same for every thread of the SIMD group. Conditions are judged "
            "by the uniformity analysis: thread positions and indices vary per thread, "
            "`simdgroup_index_in_threadgroup` and `simd_*` results are uniform within a SIMD "
            "group, threadgroup positions within a threadgroup, and constants, `constant` buffers "
            "and template parameters everywhere; when every launch the run sees gives threadgroups "
            "whose rows (or planes) are whole SIMD groups (`threadgroup=(32, 1, nw)`), the edge "
            "threadgroups too (a grid of threads whose x is a known multiple of the threadgroup's, "
            "or a grid of threadgroups), the y (and z) positions are uniform within a SIMD group. "
            "A SIMD reduction of a value every SIMD group holds alike lane for lane (each lane "
            "reads the same slot of threadgroup memory after a barrier) is uniform over the "
            "threadgroup, also a `simd_min`/`simd_max`/`simd_and`/`simd_or` whose lanes past the "
            "SIMD-group count keep their group's own partial, stored in the slot lane `sgid` reads "
            "back (a `simd_sum` counts it again: not). Loops count through their trip count: a "
            "counter whose start and bound differ by a uniform amount (`for (t = base + tid; t < "
            "base + n * C + tid; t += C)`) runs as often in every thread. An earlier "
            "thread-dependent `return` counts for the rest of the kernel, a `continue` or `break` "
            "for the rest of its iteration, and a `break` also for the later iterations: a "
            "divergent `break` after the last barrier of the body is reported, because the threads "
            "that left miss the barriers of the iterations the others go on to run (a `continue` "
            "there is not: every thread comes back for the next iteration), unless it can fire "
            "only in the last iteration: its condition implies the loop's own test fails next (`if "
            "(int(n - j) - (sg % S) * K < 0) break;` in `for (j = 0; j < n; j += K * S)`, with n, "
            "K and S uniform), so no thread misses a later iteration. Helpers in the same file, "
            "members called on objects and lambdas are followed at each call, a lambda's "
            "parameters holding the call's arguments (a lambda handed to a helper runs where the "
            "helper calls it, under the helper's conditions, and one handed with a flag to a "
            "function defined in another file, `dispatch_bool(sg == 0, [&](auto k) {...})`, under "
            "a branch on the flag, since threads that disagree on it run different copies of its "
            "barriers); a function defined in another file returns a value no wider than its "
            "arguments and what it reads through them, since only a kernel's parameters carry "
            "thread positions. The fields of a local struct are kept apart. Templated kernels are "
            "analysed per instantiation, and a thread index spelled through one of the file's "
            "macros (`#define tid lid.x`, `#define IDX(i) (i * 4 + lid)`) is seen through. One "
            "divergent return, branch or loop is reported once per group it stalls (threadgroup or "
            "SIMD group), at the first barrier it reaches; a barrier that an earlier return "
            "reaches may also diverge for a reason of its own (a branch around it, a later "
            "return), which is a finding of its own at the first barrier it reaches when that "
            "barrier has none yet (it would still diverge with the return fixed). Each finding "
            "comes with the condition, the further barriers it reaches and, in a helper, the call "
            "of the kernel where it diverges, in a lambda, the call where it runs, as related "
            "locations; the message says which case it is (\"after a thread-dependent early "
            "return\" or \"inside a branch on `lid`\") and names the instantiations (or kernels) "
            "it holds for when not all. Of several diverging constructs around a barrier, the one "
            "cited diverges as widely as its control does: a branch on the lane rather than an "
            "earlier return that differs only between SIMD groups.",
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
