#include <metal_stdlib>
using namespace metal;

kernel void if_phi(device const float *in [[buffer(0)]], device float *out [[buffer(1)]],
                   constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  float x = in[gid];
  int k = 0;
  if (x > 0.0f) {
    x = x * 2.0f;
    k = 1;
  } else {
    k = 2;
  }
  out[gid] = x + k;
}
