#include <metal_stdlib>
using namespace metal;

kernel void scan(device const uint* in [[buffer(0)]],
                 device uint* out [[buffer(1)]],
                 device uint* totals [[buffer(2)]],
                 uint gid [[thread_position_in_grid]],
                 uint lane [[thread_index_in_simdgroup]],
                 uint sg [[simdgroup_index_in_threadgroup]]) {
  uint v = in[gid];
  uint incl = simd_prefix_inclusive_sum(v);
  uint excl = simd_prefix_exclusive_sum(v);
  uint down = simd_shuffle_down(v, 1);
  uint x = simd_shuffle_xor(v, 16u);
  uint first = simd_broadcast_first(v);
  uint from3 = simd_broadcast(v, ushort(3));
  simd_vote vote = simd_ballot(v > 4);
  if (simd_all(v > 0) || simd_any(v == 7)) out[gid] = incl + excl + down + x;
  if (simd_is_first()) totals[sg] = first + from3 + uint(uint64_t(vote) & 1);
  simdgroup_barrier(mem_flags::mem_none);
}
