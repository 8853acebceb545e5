#include <metal_stdlib>
using namespace metal;

kernel void swz(device float4* v [[buffer(0)]],
                device uint* bits [[buffer(1)]],
                uint gid [[thread_position_in_grid]]) {
  float4 a = v[gid];
  float3 rgb = a.bgr;
  a.xy = a.yx * 2.0f;
  a.w = dot(rgb, float3(0.2126f, 0.7152f, 0.0722f));
  bits[gid] = as_type<uint>(a.x);
  half2 h = as_type<half2>(bits[gid]);
  v[gid] = float4(float2(h), a.zw);
}
