#include <metal_stdlib>
using namespace metal;

kernel
void
split_decl(device
           float * x [[ buffer(0) ]],
           constant
           uint & n [[ buffer(1) ]],
           uint gid [[ thread_position_in_grid ]])
{
  if (gid < n) {
    thread float & v = x[gid];
    v = -v;
  }
}

static inline
device float* offset_ptr(device float* base, uint i) { return base + i; }
