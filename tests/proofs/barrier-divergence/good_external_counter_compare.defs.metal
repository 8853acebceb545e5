#include <metal_stdlib>
using namespace metal;

// The other file's helper, as the fixture's comment describes it: the count stored at the start
// of a buffer every thread shares (one address, so one answer for the whole threadgroup).
uint stored_count(device const uint* counts) {
  return counts[0];
}
