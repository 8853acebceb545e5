#include <metal_stdlib>
using namespace metal;

kernel void transpose(device const float* in [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      constant uint2& dims [[buffer(2)]],
                      uint2 gid [[thread_position_in_grid]],
                      uint2 lid [[thread_position_in_threadgroup]],
                      uint2 tgid [[threadgroup_position_in_grid]]) {
  threadgroup float tile[32][33];
  tile[lid.y][lid.x] = in[gid.y * dims.x + gid.x];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint2 o = tgid.yx * 32 + lid;
  out[o.y * dims.y + o.x] = tile[lid.x][lid.y];
}
