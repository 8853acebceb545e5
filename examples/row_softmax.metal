// Softmax over rows of 96 floats, one threadgroup per row. The size hint is the row length,
// 96 + 4 padding threads = 100: not a whole number of 32-wide SIMD groups, so the last one
// runs with idle lanes and the simd_max/simd_sum reductions see a partial group.
#include <metal_stdlib>
using namespace metal;

#define ROW 96
#define PAD 4

[[max_total_threads_per_threadgroup(ROW + PAD)]]
kernel void row_softmax(device const float* x [[buffer(0)]],
                        device float* y [[buffer(1)]],
                        uint row [[threadgroup_position_in_grid]],
                        uint lid [[thread_position_in_threadgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]]) {
  threadgroup float part[4];
  float v = lid < ROW ? x[row * ROW + lid] : -INFINITY;
  float m = simd_max(v);
  if (lane == 0) part[sg] = m;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  m = max(max(part[0], part[1]), max(part[2], part[3]));
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float e = lid < ROW ? exp(v - m) : 0.0f;
  float s = simd_sum(e);
  if (lane == 0) part[sg] = s;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  s = part[0] + part[1] + part[2] + part[3];
  if (lid < ROW) y[row * ROW + lid] = e / s;
}
