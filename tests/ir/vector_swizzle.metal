#include <metal_stdlib>
using namespace metal;

kernel void vector_swizzle(device float4 *data [[buffer(0)]], constant uint2 &size [[buffer(1)]],
                           uint3 tid [[thread_position_in_grid]]) {
  if (tid.x >= size.x || tid.y >= size.y) return;
  uint i = tid.y * size.x + tid.x;
  float4 v = data[i];
  v.xy = v.yx;
  v.w = data[i].z * 2.0f;
  data[i] = v;
}
