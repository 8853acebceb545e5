#include <metal_stdlib>
using namespace metal;

kernel void do_while(device uint *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  uint x = gid;
  uint steps = 0;
  do {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    steps++;
  } while (x > 1 && steps < 64);
  out[gid] = steps;
}
