#include <metal_stdlib>
using namespace metal;

template<typename T>
kernel void kernel_cpy(
        device const T * src0 [[buffer(0)]],
        device       T * dst  [[buffer(1)]],
        uint3 tgpig [[threadgroup_position_in_grid]],
        ushort3 tpitg [[thread_position_in_threadgroup]],
        ushort3 ntg [[threads_per_threadgroup]]) {
  const int i = tgpig.x * ntg.x + tpitg.x;
  dst[i] = src0[i];
}

typedef decltype(kernel_cpy<float>) kernel_cpy_t;

template [[host_name("kernel_cpy_f32_f32")]] kernel kernel_cpy_t kernel_cpy<float>;
template [[host_name("kernel_cpy_f16_f16")]] kernel kernel_cpy_t kernel_cpy<half>;
#if defined(GGML_METAL_HAS_BF16)
template [[host_name("kernel_cpy_bf16_bf16")]] kernel kernel_cpy_t kernel_cpy<bfloat>;
#endif
