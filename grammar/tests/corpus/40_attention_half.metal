#include <metal_stdlib>
using namespace metal;

template <typename T, int D>
[[kernel]] void sdpa_vector(const device T* queries [[buffer(0)]],
                            const device T* keys [[buffer(1)]],
                            const device T* values [[buffer(2)]],
                            device T* out [[buffer(3)]],
                            const constant int& N [[buffer(4)]],
                            const constant float& scale [[buffer(5)]],
                            uint3 tid [[threadgroup_position_in_grid]],
                            uint simd_lid [[thread_index_in_simdgroup]]) {
  constexpr int elem_per_thread = D / 32;
  thread T q[elem_per_thread];
  thread T o[elem_per_thread];
  for (int i = 0; i < elem_per_thread; i++) {
    q[i] = static_cast<T>(scale) * queries[tid.x * D + simd_lid * elem_per_thread + i];
    o[i] = 0;
  }
  T max_score = -1e4;
  T sum_exp = 0;
  for (int n = 0; n < N; n++) {
    T score = 0;
    for (int i = 0; i < elem_per_thread; i++) score += q[i] * keys[n * D + simd_lid * elem_per_thread + i];
    score = simd_sum(score);
    T new_max = max(max_score, score);
    T factor = fast::exp(max_score - new_max);
    T e = fast::exp(score - new_max);
    max_score = new_max;
    sum_exp = sum_exp * factor + e;
    for (int i = 0; i < elem_per_thread; i++)
      o[i] = o[i] * factor + e * values[n * D + simd_lid * elem_per_thread + i];
  }
  for (int i = 0; i < elem_per_thread; i++)
    out[tid.x * D + simd_lid * elem_per_thread + i] = o[i] / sum_exp;
}

template [[host_name("sdpa_vector_float16_t_64")]] [[kernel]]
decltype(sdpa_vector<half, 64>) sdpa_vector<half, 64>;
