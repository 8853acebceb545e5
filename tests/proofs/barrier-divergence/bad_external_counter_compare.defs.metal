#include <metal_stdlib>
using namespace metal;

// The other file's helper, as the fixture's comment describes it: the next item of a shared work
// counter, taken by an atomic increment (each thread gets another value).
uint take_next(device atomic_uint* counter) {
  return atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
}
