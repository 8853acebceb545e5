#include <metal_stdlib>
using namespace metal;

struct Tile {
  float v[16][16];
};

kernel void tile_sum(device const float* in [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     ushort2 lid [[thread_position_in_threadgroup]],
                     ushort2 tg [[threadgroup_position_in_grid]],
                     ushort2 ntg [[threadgroups_per_grid]],
                     ushort quad_lane [[thread_index_in_quadgroup]],
                     ushort quad_id [[quadgroup_index_in_threadgroup]],
                     ushort nsg [[simdgroups_per_threadgroup]]) {
  threadgroup Tile t;
  t.v[lid.y][lid.x] = in[(tg.y * 16 + lid.y) * ntg.x * 16 + tg.x * 16 + lid.x];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float s = quad_sum(t.v[lid.y][lid.x]);
  if (quad_lane == 0) out[quad_id + nsg * (tg.y * ntg.x + tg.x)] = s;
}
