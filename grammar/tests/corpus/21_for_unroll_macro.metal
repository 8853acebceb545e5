#include <metal_stdlib>
using namespace metal;

#define FOR_UNROLL(x) _Pragma("clang loop unroll(full)") for (x)

kernel void dot4(device const float4* a [[buffer(0)]],
                 device const float4* b [[buffer(1)]],
                 device float* out [[buffer(2)]],
                 uint gid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  FOR_UNROLL(int i = 0; i < 4; i++) {
    acc += dot(a[gid * 4 + i], b[gid * 4 + i]);
  }
  out[gid] = acc;
}
