#include <metal_stdlib>
using namespace metal;

inline float scale(float x, float s) {
  float y = x * s;
  return y + 1.0f;
}

kernel void helper_twice(device float *a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  float u = scale(a[gid], 2.0f);
  float w = scale(u, 3.0f);
  a[gid] = w;
}
