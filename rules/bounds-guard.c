/* bounds-guard: documented here; its check arrives with the analysis core (uniformity, index algebra). */
#include "rules/rules.h"

const struct kl_rule kl_rule_bounds_guard = {
    .id = "bounds-guard",
    .default_severity = KL_SEV_ERROR,
    .implemented = false,
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
    .check = NULL,
};
