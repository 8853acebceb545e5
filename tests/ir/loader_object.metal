#include <metal_stdlib>
using namespace metal;

// A local object: its constructor inlined (field initializers first), its pointer and const
// fields SSA values in every frame, next() a loop recurrence of the pointer.
struct Loader {
  const int ld;
  const device float* src;
  threadgroup float* dst;

  Loader(const device float* s, int ld_, threadgroup float* d, uint lid)
      : ld(ld_), src(s + lid * ld_), dst(d + lid) {}

  void load() const {
    dst[0] = src[0];
  }

  void next() {
    src += 1;
  }
};

kernel void loader_object(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
                          constant int& n [[buffer(2)]],
                          uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float tile[32];
  Loader l(a, n, tile, lid);
  for (int k = 0; k < n; k++) {
    l.load();
    l.next();
  }
  out[lid] = tile[lid];
}
