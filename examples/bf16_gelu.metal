// GELU on bfloat activations. The float and half variants run on every Apple GPU; the bfloat
// variant is guarded, except for its instantiation at the bottom, which slipped outside the
// #if: on M1/M2 (the default target is m1) that kernel is built with emulated bfloat.
#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void gelu(device const T* x [[buffer(0)]],
                     device T* y [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
  float v = float(x[gid]);
  y[gid] = T(0.5f * v * (1.0f + precise::tanh(0.7978845608f * (v + 0.044715f * v * v * v))));
}

template [[host_name("gelu_float32")]] [[kernel]] decltype(gelu<float>) gelu<float>;
template [[host_name("gelu_float16")]] [[kernel]] decltype(gelu<half>) gelu<half>;

#if defined(__HAVE_BFLOAT__)
kernel void gelu_bf16_vec(device const bfloat4* x [[buffer(0)]],
                          device bfloat4* y [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
  float4 v = float4(x[gid]);
  y[gid] = bfloat4(0.5f * v * (1.0f + precise::tanh(0.7978845608f * v)));
}
#endif

template [[host_name("gelu_bfloat16")]] [[kernel]] decltype(gelu<bfloat>) gelu<bfloat>;
