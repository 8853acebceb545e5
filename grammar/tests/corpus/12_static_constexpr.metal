#include <metal_stdlib>
using namespace metal;

static constant constexpr int BN = 32;
static constant constexpr const float kEps = 1e-5f;
constexpr constant int kSimd = 32;
constant float kTable[4] = {0.0f, 0.25f, 0.5f, 0.75f};

kernel void norm(device float* x [[buffer(0)]],
                 uint gid [[thread_position_in_grid]]) {
  x[gid] = x[gid] * rsqrt(kTable[gid % 4] + kEps) + float(BN / kSimd);
}
