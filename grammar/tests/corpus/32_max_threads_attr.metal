#include <metal_stdlib>
using namespace metal;

[[kernel, max_total_threads_per_threadgroup(1024)]]
void wide(device float* x [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  x[gid] += 1.0f;
}

[[max_total_threads_per_threadgroup(256)]] kernel void narrow(
    device float* x [[buffer(0)]],
    uint3 gid [[thread_position_in_grid]],
    uint3 grid [[threads_per_grid]],
    uint width [[thread_execution_width]]) {
  x[gid.z * grid.y * grid.x + gid.y * grid.x + gid.x] *= float(width);
}
