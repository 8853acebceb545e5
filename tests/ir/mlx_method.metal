#include <metal_stdlib>
using namespace metal;

struct Accum {
  float total;
  void add(float x) {
    total += x;
  }
};

template <typename T, int BLOCK>
[[kernel]] void mlx_method(device const T *in [[buffer(0)]], device T *out [[buffer(1)]],
                           uint2 tid [[thread_position_in_grid]],
                           uint simd_lane [[thread_index_in_simdgroup]]) {
  Accum acc;
  acc.total = 0.0f;
  for (int b = 0; b < BLOCK; b++) {
    acc.add(in[tid.y * BLOCK + b]);
  }
  float r = simd_shuffle_down(acc.total, 1);
  if (simd_lane == 0) {
    out[tid.y] = r;
  }
}

template [[host_name("mlx_method_float_16")]] [[kernel]] void mlx_method<float, 16>(
    device const float *, device float *, uint2, uint);
