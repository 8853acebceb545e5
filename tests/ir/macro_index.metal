#include <metal_stdlib>
using namespace metal;

// Names and calls that are the file's macros lower as their bodies: `tid` is the coordinate's x,
// TID a sum over both coordinates, IDX(i) its argument scaled plus the coordinate, AT(r, c) an
// element (an address: stored through), SYNC a barrier (its `;` dropped). A macro's parameter
// stands for its argument even where a local of the same name is in scope (`i`).
#define tid lid.x
#define TID (lid.x + lid.y * 8)
#define IDX(i) (i * 4 + tid)
#define AT(r, c) t[(r) * 8 + (c)]
#define SYNC threadgroup_barrier(mem_flags::mem_threadgroup);

kernel void macro_index(device float *out [[buffer(0)]],
                        uint2 lid [[thread_position_in_threadgroup]]) {
  threadgroup float t[64];
  uint i = 7;
  AT(lid.y, lid.x) = out[IDX(1)];
  SYNC;
  out[TID] = t[tid] + float(i);
}
