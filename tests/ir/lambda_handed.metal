#include <metal_stdlib>
using namespace metal;

// A lambda handed to a same-file helper runs where the helper calls it, under the helper's
// condition, seeing the kernel's names (not the helper's `n`); one handed to a function defined
// elsewhere runs once at the call, its parameter made of the call's arguments, under a branch on
// the flag handed beside it when it is generic (a dispatcher instantiates it per value of the
// flag, running it in one branch or the other).
template <typename F>
void when_low(uint n, uint lid, F body) {
  if (lid < n) body(n + 1);
}

template <typename F>
void elsewhere(bool flag, F body);

kernel void k(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]],
              uint lid [[thread_position_in_threadgroup]]) {
  when_low(4, lid, [&](uint m) {
    out[lid] = float(n + m);
  });
  elsewhere(n > 2, [&](auto f) {
    out[lid] = f ? 1.0f : 0.0f;
  });
}
