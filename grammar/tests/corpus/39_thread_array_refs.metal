#include <metal_stdlib>
using namespace metal;

#define METAL_FUNC inline __attribute__((always_inline))

template <typename T, int N>
METAL_FUNC void load_chunk(thread T (&dst)[N], const device T* src, int stride) {
  for (int i = 0; i < N; i++) dst[i] = src[i * stride];
}

template <typename T, int N>
METAL_FUNC T dot_chunk(const thread T (&a)[N], const threadgroup T* b) {
  T acc = 0;
  for (int i = 0; i < N; i++) acc += a[i] * b[i];
  return acc;
}

kernel void qmv(const device float* w [[buffer(0)]],
                const device float* x [[buffer(1)]],
                device float* y [[buffer(2)]],
                uint tid [[thread_position_in_grid]],
                uint lid [[thread_index_in_threadgroup]]) {
  threadgroup float xs[64];
  xs[lid] = x[lid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float wl[8];
  load_chunk<float, 8>(wl, w + tid * 8, 1);
  y[tid] = dot_chunk<float, 8>(wl, xs);
}
