#include <metal_stdlib>
using namespace metal;

template <typename T, int N_READS = 4>
[[kernel]] void softmax_looped(const device T* in [[buffer(0)]],
                               device T* out [[buffer(1)]],
                               constant int& axis_size [[buffer(2)]],
                               uint gid [[threadgroup_position_in_grid]],
                               uint lid [[thread_position_in_threadgroup]],
                               uint lsize [[threads_per_threadgroup]],
                               uint simd_lane_id [[thread_index_in_simdgroup]],
                               uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float local_max[32];
  threadgroup float local_normalizer[32];
  in += gid * size_t(axis_size);
  float prevmax;
  float maxval = -INFINITY;
  float normalizer = 0;
  for (int r = 0; r < static_cast<int>(ceildiv(axis_size, N_READS * lsize)); r++) {
    int offset = r * lsize * N_READS + lid * N_READS;
    T vals[N_READS];
    for (int i = 0; i < N_READS; i++) {
      vals[i] = (offset + i < axis_size) ? in[offset + i] : T(-INFINITY);
    }
    prevmax = maxval;
    for (int i = 0; i < N_READS; i++) maxval = max(maxval, static_cast<float>(vals[i]));
    normalizer *= fast::exp(prevmax - maxval);
    for (int i = 0; i < N_READS; i++) normalizer += fast::exp(static_cast<float>(vals[i]) - maxval);
  }
  prevmax = maxval;
  maxval = simd_max(maxval);
  normalizer *= fast::exp(prevmax - maxval);
  normalizer = simd_sum(normalizer);
  if (simd_lane_id == 0) {
    local_max[simd_group_id] = maxval;
    local_normalizer[simd_group_id] = normalizer;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  maxval = local_max[0];
  normalizer = 1 / local_normalizer[0];
  out += gid * size_t(axis_size) + lid * N_READS;
  for (int i = 0; i < N_READS && lid * N_READS + i < uint(axis_size); i++) {
    out[i] = T(fast::exp(float(in[lid * N_READS + i]) - maxval) * normalizer);
  }
}

template [[host_name("softmax_looped_float32")]] [[kernel]]
decltype(softmax_looped<float>) softmax_looped<float>;
