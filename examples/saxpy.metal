// y = a*x + y over n elements. Clean: guarded against a rounded-up grid, float throughout,
// and a threadgroup-size hint that is a whole number of SIMD groups.
#include <metal_stdlib>
using namespace metal;

[[max_total_threads_per_threadgroup(256)]]
kernel void saxpy(device const float* x [[buffer(0)]],
                  device float* y [[buffer(1)]],
                  constant float& a [[buffer(2)]],
                  constant uint& n [[buffer(3)]],
                  uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  y[gid] = fma(a, x[gid], y[gid]);
}
