#include <metal_stdlib>
using namespace metal;

#if defined(__HAVE_BFLOAT__)
typedef bfloat bfloat16_t;
#else
typedef half bfloat16_t;
#endif

#ifdef USE_FAST_MATH
#define EXP fast::exp
#else
#define EXP precise::exp
#endif

kernel void activate(device bfloat16_t* x [[buffer(0)]],
                     uint gid [[thread_position_in_grid]]) {
  float v = float(x[gid]);
#if __METAL_VERSION__ >= 310
  v = v / (1.0f + exp(-v));
#elif defined(LEGACY)
  v = max(v, 0.0f);
#else
  v = v > 0.0f ? v : 0.0f;
#endif
  x[gid] = bfloat16_t(v);
}
