#include <metal_stdlib>
using namespace metal;

// any() and all() of a comparison of integer vectors are the OR and the AND of the lanes'
// comparisons: a coordinate vector (and its swizzle) gives its components, a constructor its
// arguments (one scalar argument: every lane), a scalar name every lane. Anything else stays a
// call.
kernel void vector_compare(device float *out [[buffer(0)]],
                           constant uint &w [[buffer(1)]],
                           constant uint &h [[buffer(2)]],
                           uint3 gid [[thread_position_in_grid]]) {
  if (any(gid.xy >= uint2(w, h))) return;
  if (all(gid < uint3(w))) out[0] = 1.0f;
  if (!any(gid.xy == w)) out[1] = 2.0f;
  float2 f = float2(gid.xy);
  if (any(f > float2(1.0f))) out[2] = 3.0f;
  // A literal takes the other side's type (signed here); a constructor of one vector argument
  // is no scalar for every lane, and stays a call.
  int dx = int(gid.x) - int(w), dy = int(gid.y) - int(h);
  if (any(int2(dx, dy) < 0)) out[3] = 4.0f;
  if (all(gid.xy < uint2(gid.yx))) out[4] = 5.0f;
}
