#include <metal_stdlib>
using namespace metal;

// A file-scope constant that does not fold is lowered as its initialiser over the function
// constants it names (PART * PARTS), not as one opaque symbol; one that folds is a constant,
// and one with a call in it stays a symbol.
constant uint PART [[function_constant(0)]];
constant uint PARTS [[function_constant(1)]];
constant uint WHOLE = PART * PARTS;
constant uint HALF = (WHOLE + 1) / 2;
constant uint EIGHT = 2 * 4;
constant uint ROOT = sqrt(PART);

kernel void const_expr(device uint *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = HALF + EIGHT + ROOT;
}

// A local of the same name as a function constant in WHOLE's initialiser: WHOLE stays a symbol
// (lowered here, PART would read the local).
kernel void const_shadowed(device uint *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  uint PART = gid;
  out[gid] = WHOLE + PART;
}
