#include <metal_stdlib>
using namespace metal;

[[kernel]] void scale(device float* x [[buffer(0)]],
                      constant float& s [[buffer(1)]],
                      uint2 gid [[thread_position_in_grid]],
                      uint2 grid [[threads_per_grid]]) {
  uint i = gid.y * grid.x + gid.x;
  x[i] *= s;
}
