#include <metal_stdlib>
using namespace metal;

kernel void apply(device float* x [[buffer(0)]],
                  constant float& alpha [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
  auto f = [&](float v) { return v * alpha; };
  auto g = [](thread float& v) -> void { v += 1.0f; };
  float y = f(x[gid]);
  g(y);
  x[gid] = y;
}
