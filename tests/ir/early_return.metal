#include <metal_stdlib>
using namespace metal;

kernel void early_return(device float *data [[buffer(0)]], constant uint &n [[buffer(1)]],
                         uint gid [[thread_position_in_grid]]) {
  if (gid >= n) {
    return;
  }
  float v = data[gid];
  if (v == 0.0f) return;
  data[gid] = 1.0f / v;
}
