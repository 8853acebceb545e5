#include <metal_stdlib>
using namespace metal;

kernel void pointer_arith(device float *a [[buffer(0)]], constant uint &row [[buffer(1)]],
                          uint2 pos [[thread_position_in_grid]]) {
  device float *p = a + pos.y * row;
  *(p + pos.x) = 0.0f;
  p += 1;
  p[pos.x] += 2.0f;
}
