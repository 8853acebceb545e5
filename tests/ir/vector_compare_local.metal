#include <metal_stdlib>
using namespace metal;

// any() and all() of a comparison with a local integer vector, or a conversion of one (`ushort3
// (size)`), read the local's lanes where the comparison is: each lane a load of its field, as
// `size.x` is. A local float vector, or a swizzle of a local, stays a call.
kernel void vector_compare_local(device float *out [[buffer(0)]],
                                 constant uint &w [[buffer(1)]],
                                 constant uint &h [[buffer(2)]],
                                 ushort3 gid [[thread_position_in_grid]]) {
  uint3 size;
  size.x = w;
  size.y = h;
  size.z = 4;
  if (any(gid >= ushort3(size))) return;
  uint3 p = uint3(gid);
  if (all(p < size)) out[0] = 1.0f;
  float2 f = float2(w, h);
  if (any(float2(gid.xy) > f)) out[1] = 2.0f;
  if (any(p.xy < size.yx)) out[2] = 3.0f;
}
