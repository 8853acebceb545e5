#include <metal_stdlib>
using namespace metal;

kernel void accumulate(device const float* x [[buffer(0)]],
                       device atomic_float* total [[buffer(1)]],
                       device atomic<uint>* counter [[buffer(2)]],
                       uint gid [[thread_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]]) {
  threadgroup atomic<uint> local_count;
  if (lid == 0) atomic_store_explicit(&local_count, 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (x[gid] > 0.0f) atomic_fetch_add_explicit(&local_count, 1u, memory_order_relaxed);
  atomic_fetch_add_explicit(total, x[gid], memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) {
    uint c = atomic_load_explicit(&local_count, memory_order_relaxed);
    atomic_fetch_add_explicit(counter, c, memory_order_relaxed);
  }
}
