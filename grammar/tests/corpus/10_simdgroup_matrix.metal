#include <metal_stdlib>
using namespace metal;

kernel void mma(device const half* A [[buffer(0)]],
                device const half* B [[buffer(1)]],
                device float* C [[buffer(2)]],
                uint2 tgid [[threadgroup_position_in_grid]],
                uint sgid [[simdgroup_index_in_threadgroup]]) {
  simdgroup_matrix<half, 8, 8> a;
  simdgroup_matrix<half, 8, 8> b;
  simdgroup_float8x8 c = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_load(a, A + tgid.x * 64, 8);
  simdgroup_load(b, B + tgid.y * 64, 8);
  simdgroup_multiply_accumulate(c, a, b, c);
  simdgroup_store(c, C + (tgid.y * 8 + sgid) * 8, 8);
}
