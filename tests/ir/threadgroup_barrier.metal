#include <metal_stdlib>
using namespace metal;

kernel void threadgroup_barrier_tile(device const float *in [[buffer(0)]],
                                     device float *out [[buffer(1)]],
                                     uint lid [[thread_position_in_threadgroup]],
                                     uint gid [[thread_position_in_grid]]) {
  threadgroup float tile[64];
  tile[lid] = in[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = tile[63 - lid];
}
