#include <metal_stdlib>
using namespace metal;

kernel void switch_case(device int *out [[buffer(0)]], constant int &mode [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
  int r = 0;
  switch (mode) {
  case 0:
  case 1:
    r = 10;
    break;
  case 2:
    r = 20;
  case 3:
    r += 1;
    break;
  default:
    r = -1;
  }
  out[gid] = r;
}
