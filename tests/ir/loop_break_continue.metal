#include <metal_stdlib>
using namespace metal;

kernel void loop_break_continue(device const int *in [[buffer(0)]], device int *out [[buffer(1)]],
                                constant uint &n [[buffer(2)]],
                                uint gid [[thread_position_in_grid]]) {
  int sum = 0;
  uint j = gid;
  while (j < n) {
    int v = in[j];
    j += 64;
    if (v < 0) continue;
    if (v > 100) {
      sum = -1;
      break;
    }
    sum += v;
  }
  out[gid] = sum;
}
