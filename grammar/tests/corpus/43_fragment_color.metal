#include <metal_stdlib>
using namespace metal;

struct FragOut {
  half4 color [[color(0)]];
  float depth [[depth(any)]];
};

struct VSOut {
  float4 pos [[position]];
  float3 normal [[user(normal)]];
  float2 uv [[user(locn1), center_perspective]];
};

[[early_fragment_tests]] fragment FragOut lit(VSOut in [[stage_in]],
                                              constant float3& light [[buffer(0)]],
                                              bool front [[front_facing]],
                                              uint sid [[sample_id]]) {
  FragOut o;
  float ndotl = max(dot(normalize(in.normal), light), 0.0f);
  o.color = half4(half3(ndotl), front ? 1.0h : 0.5h);
  o.depth = in.pos.z;
  return o;
}
