#include <metal_stdlib>
using namespace metal;

// The other file's helper, as the fixture's comment describes it: the length of a row of a sparse
// matrix, from its row offsets (rows + 1 entries), written through the reference parameter.
void row_length(device const uint* offsets, uint row, thread uint& len) {
  len = offsets[row + 1] - offsets[row];
}
