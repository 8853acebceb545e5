#include <metal_stdlib>
using namespace metal;

inline void bump(thread int &count, int by) {
  if (by > 0) {
    count += by;
  }
}

kernel void reference_param(device int *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  int c = 0;
  bump(c, int(gid));
  bump(c, 3);
  out[gid] = c;
}
