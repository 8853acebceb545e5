/* uncoalesced-access: documented here; its check arrives with the analysis core (uniformity, index algebra). */
#include "rules/rules.h"

const struct kl_rule kl_rule_uncoalesced_access = {
    .id = "uncoalesced-access",
    .default_severity = KL_SEV_WARNING,
    .implemented = false,
    .summary = "Adjacent SIMD lanes access device memory far apart",
    .what =
        "Reports a device-memory load or store whose index has a lane stride (the "
        "coefficient of the fastest-varying thread coordinate, found by the index "
        "algebra) that is symbolic, such as `x[gid * D + j]` with a runtime `D`, or "
        "constant with stride times element size above 16 bytes. A stride of 0 (every "
        "lane reads the same element) or 1 is fine, and so are vector element types "
        "(`float4*` with stride 1) and a small per-thread chunk: each thread handling N "
        "consecutive elements with N times the element size at most 16 bytes (`index *= "
        "4; for (i = 0; i < 4; i++) out[index + i]` on floats). Threadgroup and constant "
        "memory are not reported. An index the algebra cannot express (`%`, "
        "data-dependent values) is never reported. Reported at the access.",
    .why = "The 32 lanes of a SIMD group issue their memory accesses together, and the "
           "hardware serves them in 128-byte lines. Consecutive lanes reading consecutive "
           "elements share a few lines; lanes a row apart touch 32 different lines for "
           "the same amount of useful data, so a bandwidth-bound kernel (a row-wise dot "
           "product, a normalisation) runs several times slower. The fix is usually to "
           "let the lanes of a SIMD group cooperate on one row, striding by the lane "
           "count, and reduce with `simd_sum`.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void row_dot(device const float* a [[buffer(0)]],\n"
               "                    device const float* v [[buffer(1)]],\n"
               "                    device float* out [[buffer(2)]],\n"
               "                    constant uint& cols [[buffer(3)]],\n"
               "                    uint row [[thread_position_in_grid]]) {\n"
               "  float s = 0.0f;\n"
               "  for (uint j = 0; j < cols; j++)\n"
               "    s += a[row * cols + j] * v[j]; // lanes are `cols` floats apart\n"
               "  out[row] = s;\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "// One SIMD group per row: lanes read consecutive floats, then reduce.\n"
               "kernel void row_dot(device const float* a [[buffer(0)]],\n"
               "                    device const float* v [[buffer(1)]],\n"
               "                    device float* out [[buffer(2)]],\n"
               "                    constant uint& cols [[buffer(3)]],\n"
               "                    uint row [[threadgroup_position_in_grid]],\n"
               "                    uint lane [[thread_index_in_simdgroup]]) {\n"
               "  float s = 0.0f;\n"
               "  for (uint j = lane; j < cols; j += 32)\n"
               "    s += a[row * cols + j] * v[j];\n"
               "  s = simd_sum(s);\n"
               "  if (lane == 0) out[row] = s;\n"
               "}\n",
    .check = NULL,
};
