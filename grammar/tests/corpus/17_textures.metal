#include <metal_stdlib>
using namespace metal;

kernel void blur(texture2d<float, access::read> src [[texture(0)]],
                 texture2d<float, access::write> dst [[texture(1)]],
                 texture2d_array<half, access::sample> arr [[texture(2)]],
                 depth2d<float> depth [[texture(3)]],
                 uint2 gid [[thread_position_in_grid]]) {
  if (gid.x >= src.get_width() || gid.y >= src.get_height()) return;
  float4 acc = float4(0.0f);
  for (int dy = -1; dy <= 1; dy++)
    for (int dx = -1; dx <= 1; dx++)
      acc += src.read(uint2(int2(gid) + int2(dx, dy)));
  dst.write(acc / 9.0f, gid);
}
