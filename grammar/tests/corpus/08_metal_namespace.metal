#include <metal_stdlib>

kernel void softplus(device const float* x [[buffer(0)]],
                     device float* y [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
  float v = x[gid];
  y[gid] = metal::log(1.0f + metal::exp(metal::min(v, 20.0f)));
  metal::threadgroup_barrier(metal::mem_flags::mem_none);
  metal::simdgroup_barrier(metal::mem_flags::mem_device | metal::mem_flags::mem_threadgroup);
}
