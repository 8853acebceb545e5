#include <metal_stdlib>
using namespace metal;

struct Material {
  texture2d<float> albedo [[id(0)]];
  sampler smp [[id(1)]];
  constant float* params [[id(2)]];
};

kernel void shade(device const Material* materials [[buffer(0)]],
                  array<texture2d<float, access::read>, 4> layers [[texture(0)]],
                  texture2d<float, access::write> out [[texture(4)]],
                  uint2 gid [[thread_position_in_grid]]) {
  float4 acc = 0.0f;
  for (uint i = 0; i < layers.size(); i++) acc += layers[i].read(gid);
  const device Material& m = materials[0];
  acc *= m.params[0];
  acc += m.albedo.sample(m.smp, float2(gid) / 1024.0f);
  out.write(acc, gid);
}
