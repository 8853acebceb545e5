#include <metal_stdlib>
using namespace metal;

kernel void row_sum(device const float* x [[buffer(0)]],
                    device float* out [[buffer(1)]],
                    constant uint& cols [[buffer(2)]],
                    uint tgid [[threadgroup_position_in_grid]],
                    uint lid [[thread_position_in_threadgroup]],
                    uint simd_lane [[thread_index_in_simdgroup]],
                    uint simd_id [[simdgroup_index_in_threadgroup]],
                    uint simd_size [[threads_per_simdgroup]],
                    uint tg_size [[threads_per_threadgroup]]) {
  threadgroup float partial[32];
  float acc = 0.0f;
  for (uint i = lid; i < cols; i += tg_size) acc += x[tgid * cols + i];
  acc = simd_sum(acc);
  if (simd_lane == 0) partial[simd_id] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (simd_id == 0) {
    acc = simd_lane < tg_size / simd_size ? partial[simd_lane] : 0.0f;
    acc = simd_sum(acc);
    if (simd_lane == 0) out[tgid] = acc;
  }
}
