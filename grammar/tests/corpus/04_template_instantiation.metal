#include <metal_stdlib>
using namespace metal;

template <typename T>
[[kernel]] void gemv(const device T* mat [[buffer(0)]],
                     const device T* vec [[buffer(1)]],
                     device T* out [[buffer(2)]],
                     constant int& in_vec_size [[buffer(3)]],
                     uint tid [[thread_position_in_grid]]) {
  float acc = 0.0f;
  for (int i = 0; i < in_vec_size; i++) {
    acc += static_cast<float>(mat[tid * in_vec_size + i]) * static_cast<float>(vec[i]);
  }
  out[tid] = static_cast<T>(acc);
}

template [[host_name("gemv_float16")]] [[kernel]] decltype(gemv<half>) gemv<half>;
template [[host_name("gemv_float32")]] [[kernel]] decltype(gemv<float>) gemv<float>;
