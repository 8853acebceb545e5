#include <metal_stdlib>
using namespace metal;

constant bool has_bias [[function_constant(0)]];
constant int block_size [[function_constant(1)]];
constant bool use_fast = is_function_constant_defined(has_bias) && has_bias;

kernel void linear(device const float* x [[buffer(0)]],
                   device const float* bias [[buffer(1), function_constant(has_bias)]],
                   device float* y [[buffer(2)]],
                   uint gid [[thread_position_in_grid]]) {
  float v = x[gid];
  if (has_bias) {
    v += bias[gid % block_size];
  }
  y[gid] = v;
}
