#include <metal_stdlib>
using namespace metal;

// Methods of a type the file does not define (a header's): each call takes its object's
// address as its last operand, since it reads the object and may write it; through a pointer,
// the pointer.
kernel void unknown_method(device float *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  Loader l = Loader(gid);
  l.step(2);
  thread Loader *q = &l;
  q->step(3);
  out[gid] = l.value();
}
