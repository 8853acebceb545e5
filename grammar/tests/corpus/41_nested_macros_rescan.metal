#include <metal_stdlib>
using namespace metal;

#define CONCAT_(a, b) a##b
#define CONCAT(a, b) CONCAT_(a, b)
#define STR_(x) #x
#define STR(x) STR_(x)
#define BLOCK 128

#define instantiate_copy_impl(tname, type, bs)                       \
  template [[host_name("copy_" #tname "_" STR(bs))]] [[kernel]]      \
  decltype(copy_block<type, bs>) copy_block<type, bs>;

#define instantiate_copy_float32(bs) instantiate_copy_impl(float32, float, bs)
#define instantiate_copy_float16(bs) instantiate_copy_impl(float16, half, bs)

template <typename T, int BS>
[[kernel]] void copy_block(const device T* src [[buffer(0)]],
                           device T* dst [[buffer(1)]],
                           uint tgid [[threadgroup_position_in_grid]],
                           uint lid [[thread_position_in_threadgroup]]) {
  for (int i = lid; i < BS; i += 32) dst[tgid * BS + i] = src[tgid * BS + i];
}

CONCAT(instantiate_copy_, float32)(BLOCK)
CONCAT(instantiate_copy_, float16)(64)
