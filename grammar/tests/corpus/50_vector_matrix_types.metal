#include <metal_stdlib>
using namespace metal;

struct Particle {
  packed_float3 position;
  packed_half3 color;
  float mass;
};

kernel void transform(device Particle* ps [[buffer(0)]],
                      constant half4x4& m [[buffer(1)]],
                      constant float3x3& rot [[buffer(2)]],
                      uint gid [[thread_position_in_grid]]) {
  vec<float, 4> p = vec<float, 4>(float3(ps[gid].position), 1.0f);
  half4 c = m * half4(half3(ps[gid].color), 1.0h);
  float3 r = rot * p.xyz;
  matrix<float, 2, 2> small = matrix<float, 2, 2>(1.0f);
  ps[gid].position = packed_float3(r + float3(small[0], 0.0f));
  ps[gid].color = packed_half3(c.rgb);
  uchar4 bytes = uchar4(255);
  short2 s = short2(-1, 1);
  ps[gid].mass *= float(bytes.x) + float(s.y) + float(ulong(gid));
}
