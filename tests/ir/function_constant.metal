#include <metal_stdlib>
using namespace metal;

constant bool use_bias [[function_constant(0)]];

kernel void function_constant(device float *out [[buffer(0)]], device const float *bias [[buffer(1)]],
                              uint gid [[thread_position_in_grid]]) {
  float v = out[gid];
  if (use_bias) {
    v += bias[gid];
  }
  out[gid] = v;
}
