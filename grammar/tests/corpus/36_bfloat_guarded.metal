#include <metal_stdlib>
using namespace metal;

#if defined(__HAVE_BFLOAT__)
typedef bfloat bfloat16_t;
typedef bfloat4 bfloat16x4_t;
#endif

template <typename T>
kernel void to_float(device const T* in [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
  out[gid] = static_cast<float>(in[gid]);
}

template [[host_name("to_float_half")]] kernel void to_float<half>(
    device const half*, device float*, uint);
#if __METAL_VERSION__ >= 310
template [[host_name("to_float_bfloat")]] kernel void to_float<bfloat>(
    device const bfloat*, device float*, uint);
#endif
