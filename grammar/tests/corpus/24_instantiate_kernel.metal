#include <metal_stdlib>
using namespace metal;

#define instantiate_kernel(name, func, ...) \
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;

template <typename T, int N>
[[kernel]] void fill(device T* out [[buffer(0)]],
                     constant T& value [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
  for (int i = 0; i < N; i++) out[gid * N + i] = value;
}

#define instantiate_fill(tname, type, n) \
  instantiate_kernel("fill_" #tname "_" #n, fill, type, n)

#define instantiate_fill_all(tname, type) \
  instantiate_fill(tname, type, 1)        \
  instantiate_fill(tname, type, 4)

instantiate_fill_all(float32, float)
instantiate_fill_all(float16, half)
instantiate_fill(int32, int, 2) // NOLINT-ish comment after an invocation
