#include <metal_stdlib>
using namespace metal;

// The other header's dispatcher, as the fixture's comment describes it: the flag picks which
// instantiation of the work runs (the work's flag a constant in each), so the work is called in
// both branches, as a compile-time dispatch is written.
template <typename Work>
void with_mode(bool fast, Work work) {
  if (fast) {
    work(true);
  } else {
    work(false);
  }
}
