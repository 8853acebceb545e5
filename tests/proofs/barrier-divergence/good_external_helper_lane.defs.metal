#include <metal_stdlib>
using namespace metal;

// The other file's helpers, as the fixture's comment describes them: the bucket an item falls in
// (items dealt round-robin over the buckets) and the range [start, end) of a bucket's entries in
// the prefix array starts (buckets + 1 entries; an empty bucket starts where the next does).
uint bucket_of(uint item, uint buckets) {
  return item % buckets;
}

void bucket_range(uint bucket, device const uint* starts, thread uint2* range) {
  *range = uint2(starts[bucket], starts[bucket + 1]);
}
