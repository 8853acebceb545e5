#include <metal_stdlib>
using namespace metal;

constexpr sampler linear_clamp(coord::normalized, address::clamp_to_edge, filter::linear);

kernel void resample(texture2d<float, access::sample> src [[texture(0)]],
                     texture2d<float, access::write> dst [[texture(1)]],
                     uint2 gid [[thread_position_in_grid]]) {
  constexpr sampler s(address::clamp_to_zero, filter::nearest);
  float2 uv = (float2(gid) + 0.5f) / float2(dst.get_width(), dst.get_height());
  dst.write(src.sample(linear_clamp, uv) + src.sample(s, uv), gid);
}
