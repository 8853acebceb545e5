#include <metal_stdlib>
using namespace metal;

inline int find_first(device const int *v, int n, int key) {
  for (int i = 0; i < n; i++) {
    if (v[i] == key) {
      return i;
    }
  }
  return -1;
}

kernel void return_in_loop(device const int *v [[buffer(0)]], device int *out [[buffer(1)]],
                           constant int &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  int at = find_first(v, n, int(gid));
  out[gid] = at;
}
