#include <metal_stdlib>
using namespace metal;

#define METAL_FUNC inline
#define METAL_FUNC_ALWAYS inline __attribute__((always_inline))

METAL_FUNC float gelu(float x) {
  return 0.5f * x * (1.0f + precise::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

template <typename T>
METAL_FUNC_ALWAYS T relu(T x) {
  return max(x, T(0));
}

kernel void act(device float* x [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  x[gid] = relu(gelu(x[gid]));
}
