#include <metal_stdlib>
using namespace metal;

kernel void simd_reduce(device const float *in [[buffer(0)]], device float *out [[buffer(1)]],
                        uint gid [[thread_position_in_grid]],
                        uint lane [[thread_index_in_simdgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]]) {
  float v = in[gid];
  float s = simd_sum(v);
  if (lane == 0) {
    out[sg] = s;
  }
}
