#include <metal_stdlib>
using namespace metal;

[[visible]] float shade(float x, float y) {
  return x * y + 1.0f;
}

[[stitchable]] float add_one(float x) {
  return x + 1.0f;
}

kernel void use_visible(device float* x [[buffer(0)]],
                        visible_function_table<float(float, float)> table [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
  x[gid] = table[0](x[gid], 2.0f) + add_one(x[gid]);
}
