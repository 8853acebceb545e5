#include <metal_stdlib>
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wunused-variable"
using namespace metal;

kernel void pragmas(device float4* x [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  float4 acc = 0;
  int unused = 0;
#pragma unroll(4)
  for (int i = 0; i < 16; i++) acc += x[gid * 16 + i];
  _Pragma("clang loop vectorize(enable)")
  for (int i = 0; i < 4; i++) acc[i] *= 2.0f;
  x[gid] = acc;
}
#pragma clang diagnostic pop
