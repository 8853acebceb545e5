/* barrier-divergence: documented here; its check arrives with the analysis core (uniformity, index algebra). */
#include "rules/rules.h"

const struct kl_rule kl_rule_barrier_divergence = {
    .id = "barrier-divergence",
    .default_severity = KL_SEV_ERROR,
    .implemented = false,
    .summary = "A threadgroup or SIMD-group barrier reached under thread-dependent control flow",
    .what =
        "Reports a `threadgroup_barrier` reached under control flow whose condition is "
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
    .check = NULL,
};
