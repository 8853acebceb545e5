#include <metal_stdlib>
#include "26_local_header_macros.h"
using namespace metal;

KL_CONST float kAlpha = 2.0f;

template <typename T>
KL_KERNEL_ATTRS void axpy(device const T* x [[buffer(0)]],
                          device T* y [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
  y[gid] = static_cast<T>(kAlpha) * x[gid] + y[gid];
}

instantiate_axpy(float32, float)
instantiate_axpy(float16, half)
