#include <metal_stdlib>
using namespace metal;

#define KL_CALL(f, ...) f(0, ##__VA_ARGS__)
#define KL_DECLARE(type, name, ...) type name __VA_ARGS__;
#define KL_EMPTY()

inline float first(int z, float a = 1.0f, float b = 2.0f) { return a + b + float(z); }

KL_DECLARE(constant float, kScale, = 0.5f)
KL_DECLARE(constant int, kCount)
KL_EMPTY()

kernel void variadic(device float* x [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  x[gid] = KL_CALL(first) + KL_CALL(first, 3.0f) + KL_CALL(first, 3.0f, 4.0f) * kScale;
}
