#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void neg(device const T* in [[buffer(0)]],
                    device T* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
  out[gid] = -in[gid];
}

#define DEFINE_SQUARE(type) \
  inline type square_##type(type x) { return x * x; }

DEFINE_SQUARE(float)
DEFINE_SQUARE(half)

#define instantiate_neg(tname, type)                                        \
  template [[host_name("neg_" #tname)]] [[kernel]] void neg<type>(         \
      device const type* in [[buffer(0)]],                                  \
      device type* out [[buffer(1)]],                                       \
      uint gid [[thread_position_in_grid]]);

instantiate_neg(float32, float)
instantiate_neg(float16, half)

kernel void sq(device float* x [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  x[gid] = square_float(x[gid]) + float(square_half(half(x[gid])));
}
