#include <metal_stdlib>
using namespace metal;

// any() and all() of a comparison of integer vectors are the OR and the AND of the lanes'
// comparisons: a coordinate vector (and its swizzle) gives its components, a constructor its
// arguments (one argument: every lane), a scalar name every lane. Anything else stays a call.
kernel void vector_compare(device float *out [[buffer(0)]],
                           constant uint &w [[buffer(1)]],
                           constant uint &h [[buffer(2)]],
                           uint3 gid [[thread_position_in_grid]]) {
  if (any(gid.xy >= uint2(w, h))) return;
  if (all(gid < uint3(w))) out[0] = 1.0f;
  if (!any(gid.xy == w)) out[1] = 2.0f;
  float2 f = float2(gid.xy);
  if (any(f > float2(1.0f))) out[2] = 3.0f;
}
