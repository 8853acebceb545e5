#include <metal_stdlib>
using namespace metal;

kernel void reduce_sum(device const float* in [[buffer(0)]],
                       device atomic_float* out [[buffer(1)]],
                       threadgroup float* shared [[threadgroup(0)]],
                       uint lid [[thread_index_in_threadgroup]],
                       uint gid [[thread_position_in_grid]],
                       uint tg_size [[threads_per_threadgroup]]) {
  shared[lid] = in[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = tg_size / 2; s > 0; s >>= 1) {
    if (lid < s) shared[lid] += shared[lid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) atomic_fetch_add_explicit(out, shared[0], memory_order_relaxed);
}
