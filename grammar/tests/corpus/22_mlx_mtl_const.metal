#include <metal_stdlib>
using namespace metal;

#define MLX_MTL_CONST static constant constexpr const
#define MLX_MTL_PRAGMA_UNROLL _Pragma("clang loop unroll(full)")

MLX_MTL_CONST int SIMD_SIZE = 32;
MLX_MTL_CONST int N_READS = 4;

kernel void copy4(device const float* in [[buffer(0)]],
                  device float* out [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
  MLX_MTL_PRAGMA_UNROLL
  for (int i = 0; i < N_READS; i++) {
    out[gid * N_READS + i] = in[gid * N_READS + i] * float(SIMD_SIZE);
  }
}
