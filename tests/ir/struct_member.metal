#include <metal_stdlib>
using namespace metal;

template <int N>
struct Summer {
  static constexpr int half_n = N / 2;
  static float run(const device float *p, uint base) {
    float s = 0.0f;
    for (int k = 0; k < half_n; k++) {
      s += p[base + k];
    }
    return s;
  }
};

kernel void struct_member(device const float *in [[buffer(0)]], device float *out [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
  out[gid] = Summer<8>::run(in, gid * 8);
}
