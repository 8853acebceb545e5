#include <metal_stdlib>
using namespace metal;

kernel void histogram(device const uchar* data [[buffer(0)]],
                      device atomic_uint* bins [[buffer(1)]],
                      device atomic<int>* total [[buffer(2)]],
                      uint gid [[thread_position_in_grid]],
                      uint lid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint local_bins[256];
  atomic_store_explicit(&local_bins[lid], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&local_bins[data[gid]], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint c = atomic_load_explicit(&local_bins[lid], memory_order_relaxed);
  atomic_fetch_add_explicit(&bins[lid], c, memory_order_relaxed);
  atomic_fetch_add_explicit(total, int(c), memory_order_relaxed);
}
