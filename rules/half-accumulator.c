/* half-accumulator: documented here; its check arrives with the analysis core (uniformity, index algebra). */
#include "rules/rules.h"

const struct kl_rule kl_rule_half_accumulator = {
    .id = "half-accumulator",
    .default_severity = KL_SEV_WARNING,
    .implemented = false,
    .summary = "A half-precision variable used as a running sum inside a loop",
    .what =
        "Reports a variable of `half` type (scalar or vector such as `half4`, and a "
        "template parameter bound to `half`/float16 by an instantiation, which the "
        "message names) that is updated inside a loop by adding to itself: `acc += x`, "
        "`acc -= x`, `acc = acc + x`, `acc = fma(a, b, acc)`, or a rescaled running sum "
        "`acc = acc * scale + x` (online softmax). Array elements (`half S[Q]; S[j] = "
        "S[j] * ms + ...`) and struct members accumulated through a templated operator "
        "count too, and so does a `half` value summed across lanes with `simd_sum` or "
        "`simd_prefix_*_sum` after a loop accumulation. `max`, `min` and products are "
        "accurate enough and are not reported. Reported at the update, with the "
        "accumulator's declaration as a related location.",
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
    .check = NULL,
};
