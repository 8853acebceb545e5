#include <metal_stdlib>
using namespace metal;

template <typename T, int WIDTH>
kernel void template_two(device const T *in [[buffer(0)]], device T *out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]]) {
  T acc = 0;
  for (int k = 0; k < WIDTH; k++) {
    acc += in[gid * WIDTH + k];
  }
  out[gid] = acc;
}

template [[host_name("template_two_f4")]] kernel void template_two<float, 4>(
    device const float *, device float *, uint);
template [[host_name("template_two_h8")]] kernel void template_two<half, 8>(
    device const half *, device half *, uint);
