#include <metal_stdlib>
using namespace metal;

constant constexpr int SIMD_SIZE = 32;

template <typename T>
inline float block_sum(float v, threadgroup float* scratch, uint simd_lane, uint simd_id) {
  v = simd_sum(v);
  if (simd_lane == 0) scratch[simd_id] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  v = scratch[simd_lane];
  return simd_sum(v);
}

template <typename T>
[[kernel]] void layer_norm(const device T* x [[buffer(0)]],
                           const device T* w [[buffer(1)]],
                           const device T* b [[buffer(2)]],
                           device T* out [[buffer(3)]],
                           constant float& eps [[buffer(4)]],
                           constant uint& axis_size [[buffer(5)]],
                           uint gid [[threadgroup_position_in_grid]],
                           uint lid [[thread_position_in_threadgroup]],
                           uint simd_lane [[thread_index_in_simdgroup]],
                           uint simd_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float scratch[SIMD_SIZE];
  x += gid * axis_size;
  out += gid * axis_size;
  float sum = 0;
  for (uint i = lid; i < axis_size; i += SIMD_SIZE * SIMD_SIZE) sum += float(x[i]);
  float mean = block_sum<T>(sum, scratch, simd_lane, simd_id) / axis_size;
  float var = 0;
  for (uint i = lid; i < axis_size; i += SIMD_SIZE * SIMD_SIZE) {
    float d = float(x[i]) - mean;
    var += d * d;
  }
  float inv = metal::precise::rsqrt(block_sum<T>(var, scratch, simd_lane, simd_id) / axis_size + eps);
  for (uint i = lid; i < axis_size; i += SIMD_SIZE * SIMD_SIZE)
    out[i] = static_cast<T>((float(x[i]) - mean) * inv) * w[i] + b[i];
}

template [[host_name("layer_norm_float16")]] [[kernel]] decltype(layer_norm<half>) layer_norm<half>;
template [[host_name("layer_norm_bfloat16")]] [[kernel]] decltype(layer_norm<bfloat>) layer_norm<bfloat>;
