#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void fill_scalar(device T* out [[buffer(0)]],
                        constant T& value [[buffer(1)]],
                        uint index [[thread_position_in_grid]]) {
  out[index] = value;
}

#define REGISTER_FILL_OP(DTYPE)                                  \
  template [[host_name("fill_scalar_" #DTYPE)]] kernel void      \
  fill_scalar<DTYPE>(device DTYPE * out [[buffer(0)]],           \
                     constant DTYPE & value [[buffer(1)]],       \
                     uint index [[thread_position_in_grid]])

REGISTER_FILL_OP(float);
REGISTER_FILL_OP(half);
REGISTER_FILL_OP(int);
#if __METAL_VERSION__ >= 310
REGISTER_FILL_OP(bfloat);
#endif
