#include <metal_stdlib>
using namespace metal;

// The other file's helpers, as the fixture's comment describes them: the length of a block, from
// the block offsets (blocks + 1 entries), written through the reference parameter; and the weight
// of element i, read through the const reference.
void block_length(device const uint* offsets, uint block, thread uint& len) {
  len = offsets[block + 1] - offsets[block];
}

float weight_of(device const float* w, const thread uint& i) {
  return w[i];
}
