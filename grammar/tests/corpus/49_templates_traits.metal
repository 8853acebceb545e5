#include <metal_stdlib>
using namespace metal;

template <typename T, typename = metal::enable_if_t<metal::is_floating_point_v<T>>>
inline T safe_div(T a, T b) {
  return b == T(0) ? metal::numeric_limits<T>::max() : a / b;
}

template <typename T>
struct Limits {
  static constexpr constant T lowest = metal::numeric_limits<T>::lowest();
};

template <typename T, typename U = float>
using Pair = metal::array<T, 2>;

template <typename T>
kernel void ratio(device const T* a [[buffer(0)]],
                  device const T* b [[buffer(1)]],
                  device T* out [[buffer(2)]],
                  uint gid [[thread_position_in_grid]]) {
  Pair<T> p = {a[gid], b[gid]};
  out[gid] = max(safe_div(p[0], p[1]), Limits<T>::lowest);
}

template [[host_name("ratio_f32")]] kernel void ratio<float>(device const float*, device const float*,
                                                             device float*, uint);
