#include <metal_stdlib>
#pragma METAL internals : enable
using namespace metal;

kernel void unrolled(device float* x [[buffer(0)]],
                     uint gid [[thread_position_in_grid]]) {
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; i++) {
    acc += x[gid * 4 + i];
  }
  _Pragma("clang loop unroll(full)") for (int j = 0; j < 8; j++) {
    acc *= 0.5f;
  }
  _Pragma ( "clang loop unroll_count(2)" )
  while (acc > 1.0f) acc -= 1.0f;
  x[gid] = acc;
}
