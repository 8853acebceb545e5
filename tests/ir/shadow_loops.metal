#include <metal_stdlib>
using namespace metal;

kernel void shadow_loops(device float *out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  float acc = 0.0f;
  for (int i = 0; i < 4; i++) {
    for (int i = 0; i < 8; i += 2) {
      acc += i;
    }
    acc *= 0.5f;
  }
  out[tid] = acc;
}
