#include <metal_stdlib>
using namespace metal;

// A helper's threadgroup array is one array for every call (one alloc, the first call's).
float group_sum(float v, uint lid) {
  threadgroup float scratch[32];
  scratch[lid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return scratch[0] + scratch[1];
}

kernel void helper_own_scratch(device float* x [[buffer(0)]],
                               uint lid [[thread_position_in_threadgroup]]) {
  float a = group_sum(x[lid], lid);
  float b = group_sum(a * 2.0f, lid);
  x[lid] = b;
}
