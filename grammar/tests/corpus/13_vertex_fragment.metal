#include <metal_stdlib>
using namespace metal;

struct VertexOut {
  float4 pos [[position]];
  float2 uv [[user(locn0)]];
  float point_size [[point_size]];
};

struct VertexIn {
  float3 position [[attribute(0)]];
  float2 uv [[attribute(1)]];
};

vertex VertexOut vmain(VertexIn in [[stage_in]],
                       constant float4x4& mvp [[buffer(1)]],
                       uint vid [[vertex_id]]) {
  VertexOut o;
  o.pos = mvp * float4(in.position, 1.0f);
  o.uv = in.uv;
  o.point_size = 1.0f;
  return o;
}

fragment half4 fmain(VertexOut in [[stage_in]],
                     texture2d<half> tex [[texture(0)]],
                     sampler s [[sampler(0)]]) {
  return tex.sample(s, in.uv);
}
