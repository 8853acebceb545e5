// Just enough of the Metal Shading Language to run the half-accumulator fixture kernels on the
// CPU, compiled as C++ (MSL is C++14 underneath): tests/proofs.test.sh copies each fixture with
// token-level edits only (address-space keywords and attributes dropped, `0.0h` literals spelled
// half(0.0), thread-coordinate attributes turned into default arguments that read the running
// lane's coordinates) and proof.cc includes the copies after this header.
//
// half is _Float16. g++ evaluates _Float16 arithmetic one operation at a time, each result rounded
// to half, as the GPU does; kl::check_half_rounding() proves it at startup, since C (and a future
// compiler) may instead keep a whole expression in float and round once.
//
// A threadgroup runs as one host thread per lane, so that simd_sum and friends can meet: a lane
// posts its value, waits for the rest of its SIMD group, and every lane reduces the same values in
// the same order (a 32-lane butterfly whose partial results have the operand type). A lane that
// returns leaves the group; the reductions skip it, as inactive lanes are skipped on the GPU.
// Threadgroup memory and barriers are not emulated: the test refuses kernels that use them.
#ifndef KL_MSL_HH
#define KL_MSL_HH

// C headers and GCC's math builtins rather than <cmath>, <thread> and the like: those would take
// longer to compile than all the rest, and the test builds this twice per run.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <type_traits>

#ifndef INFINITY
#define INFINITY __builtin_inff()
#endif

namespace metal {

typedef _Float16 half;
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned char uchar;

// Vector storage: .x .y .z .w exist only up to the vector's length.
template <class T, int N> struct vec_base;
template <class T> struct vec_base<T, 2> { T x, y; };
template <class T> struct vec_base<T, 3> { T x, y, z; };
template <class T> struct vec_base<T, 4> { T x, y, z, w; };

template <class T, int N> struct vec : vec_base<T, N> {
  vec() : vec_base<T, N>{} {}
  explicit vec(T s) {
    for (int i = 0; i < N; i++) (*this)[i] = s;
  }
  template <class... A>
  requires(sizeof...(A) == N && N > 1) vec(A... a) {
    T v[N] = {static_cast<T>(a)...};
    for (int i = 0; i < N; i++) (*this)[i] = v[i];
  }
  template <class U> explicit vec(const vec<U, N> &o) {
    for (int i = 0; i < N; i++) (*this)[i] = static_cast<T>(o[i]);
  }
  T &operator[](unsigned i) {
    return const_cast<T &>(static_cast<const vec &>(*this)[i]);
  }
  const T &operator[](unsigned i) const {
    if (i >= (unsigned)N) abort();
    const T *m[4] = {&this->x, &this->y, nullptr, nullptr};
    if constexpr (N > 2) m[2] = &this->z;
    if constexpr (N > 3) m[3] = &this->w;
    return *m[i];
  }
};

// Element-wise arithmetic, each element through T's own operators (so half rounds per element).
#define KL_VEC_OP(op)                                                                              \
  template <class T, int N> vec<T, N> operator op(vec<T, N> a, const vec<T, N> &b) {               \
    for (int i = 0; i < N; i++) a[i] = a[i] op b[i];                                               \
    return a;                                                                                      \
  }                                                                                                \
  template <class T, int N> vec<T, N> operator op(vec<T, N> a, std::type_identity_t<T> s) {        \
    for (int i = 0; i < N; i++) a[i] = a[i] op s;                                                  \
    return a;                                                                                      \
  }                                                                                                \
  template <class T, int N> vec<T, N> operator op(std::type_identity_t<T> s, vec<T, N> a) {        \
    for (int i = 0; i < N; i++) a[i] = s op a[i];                                                  \
    return a;                                                                                      \
  }                                                                                                \
  template <class T, int N, class R> vec<T, N> &operator op##=(vec<T, N> &a, const R &b) {         \
    return a = a op b;                                                                             \
  }
KL_VEC_OP(+)
KL_VEC_OP(-)
KL_VEC_OP(*)
KL_VEC_OP(/)
#undef KL_VEC_OP

#define KL_VEC_TYPES(s)                                                                            \
  typedef vec<s, 2> s##2;                                                                          \
  typedef vec<s, 3> s##3;                                                                          \
  typedef vec<s, 4> s##4;
KL_VEC_TYPES(half)
KL_VEC_TYPES(float)
KL_VEC_TYPES(int)
KL_VEC_TYPES(uint)
KL_VEC_TYPES(short)
KL_VEC_TYPES(ushort)
#undef KL_VEC_TYPES

// Math, with MSL's overloads: a half argument gives a half result, computed in float and rounded
// once (Metal's half functions are at least that accurate).
inline half exp(half x) {
  return (half)__builtin_expf((float)x);
}
inline float exp(float x) {
  return __builtin_expf(x);
}
inline half sqrt(half x) {
  return (half)__builtin_sqrtf((float)x);
}
inline float sqrt(float x) {
  return __builtin_sqrtf(x);
}
inline half rsqrt(half x) {
  return (half)(1.0f / __builtin_sqrtf((float)x));
}
inline float rsqrt(float x) {
  return 1.0f / __builtin_sqrtf(x);
}
inline half abs(half x) {
  return x < (half)0 ? (half)-x : x;
}
inline float abs(float x) {
  return __builtin_fabsf(x);
}
template <class T> T max(T a, T b) {
  return a < b ? b : a;
}
template <class T> T min(T a, T b) {
  return b < a ? b : a;
}
// fma rounds a*b+c once: in double the product of two halves is exact and the sum is rounded far
// below half precision, so the rounding to half is the one that counts.
inline half fma(half a, half b, half c) {
  return (half)__builtin_fma((double)a, (double)b, (double)c);
}
inline float fma(float a, float b, float c) {
  return __builtin_fmaf(a, b, c);
}
template <class T, int N> T dot(const vec<T, N> &a, const vec<T, N> &b) {
  T s = a[0] * b[0];
  for (int i = 1; i < N; i++) s = s + a[i] * b[i];
  return s;
}

// SIMD-group matrices: every lane of the group holds the whole matrix and computes it alike
// (the hardware spreads it over the lanes; the values are the same). simdgroup_matrix<T, C, R>
// has R rows of C columns. simdgroup_multiply_accumulate rounds each element to the result
// type once per call, its 8-term dot product and the addend summed exactly (in double): the
// fewest roundings the hardware could make, so a half accumulator's error here is a lower bound
// of the GPU's.
template <class T, int C, int R> struct simdgroup_matrix {
  T e[R][C];
  simdgroup_matrix() : e{} {}
  explicit simdgroup_matrix(T v) {
    for (int r = 0; r < R; r++)
      for (int c = 0; c < C; c++) e[r][c] = v;
  }
};
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;

template <class T, int C, int R> simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T v) {
  return simdgroup_matrix<T, C, R>(v);
}
template <class T, int C, int R>
void simdgroup_load(simdgroup_matrix<T, C, R> &d, const T *src, unsigned long per_row = C) {
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) d.e[r][c] = src[r * per_row + c];
}
template <class T, int C, int R>
void simdgroup_store(const simdgroup_matrix<T, C, R> &m, T *dst, unsigned long per_row = C) {
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) dst[r * per_row + c] = m.e[r][c];
}
template <class TD, class TA, class TB, class TC, int N, int K, int M>
void simdgroup_multiply_accumulate(simdgroup_matrix<TD, N, M> &d,
                                   const simdgroup_matrix<TA, K, M> &a,
                                   const simdgroup_matrix<TB, N, K> &b,
                                   const simdgroup_matrix<TC, N, M> &c) {
  simdgroup_matrix<TD, N, M> out;
  for (int r = 0; r < M; r++)
    for (int col = 0; col < N; col++) {
      double s = (double)c.e[r][col];
      for (int k = 0; k < K; k++) s += (double)a.e[r][k] * (double)b.e[k][col];
      out.e[r][col] = (TD)s;
    }
  d = out;
}

} // namespace metal

namespace kl {

using metal::uint;

constexpr uint simd_width = 32;

// A coordinate as the kernel's parameter type wants it: scalar (x), uint2 or uint3.
struct coord {
  uint x, y, z;
  operator uint() const {
    return x;
  }
  operator metal::ushort() const {
    return (metal::ushort)x;
  }
  operator int() const {
    return (int)x;
  }
  template <class T> operator metal::vec<T, 2>() const {
    return metal::vec<T, 2>(x, y);
  }
  template <class T> operator metal::vec<T, 3>() const {
    return metal::vec<T, 3>(x, y, z);
  }
};

// The running lane: what its thread-coordinate parameters read (1-D dispatches only).
struct lane_state {
  coord thread_position_in_grid, thread_position_in_threadgroup, threadgroup_position_in_grid,
      threads_per_threadgroup, threadgroups_per_grid, threads_per_grid,
      dispatch_threads_per_threadgroup;
  uint thread_index_in_threadgroup, thread_index_in_simdgroup, simdgroup_index_in_threadgroup,
      threads_per_simdgroup, thread_execution_width, simdgroups_per_threadgroup;
  struct simd_group *group;
};
inline thread_local const lane_state *lane;

// Where the lanes of a SIMD group meet: a barrier that a lane leaves when it returns, so that
// the others stop waiting for it.
struct simd_group {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  int members = 0, arrived = 0;
  unsigned long round = 0;
  bool gone[simd_width] = {};
  alignas(16) unsigned char slot[simd_width][64];
};

// With g->mu held: ends the round once every member still running has arrived.
inline void end_round_if_all_in(simd_group *g) {
  if (g->arrived == 0 || g->arrived != g->members) return;
  g->arrived = 0;
  g->round++;
  pthread_cond_broadcast(&g->cv);
}

inline void meet(simd_group *g) {
  pthread_mutex_lock(&g->mu);
  unsigned long round = g->round;
  g->arrived++;
  end_round_if_all_in(g);
  while (g->round == round) pthread_cond_wait(&g->cv, &g->mu);
  pthread_mutex_unlock(&g->mu);
}

inline void leave(simd_group *g, uint me) {
  pthread_mutex_lock(&g->mu);
  g->gone[me] = true;
  g->members--;
  end_round_if_all_in(g);
  pthread_mutex_unlock(&g->mu);
}

// Every lane of the SIMD group reduces the posted values the same way; the second meeting keeps
// a lane from posting its next value before all have read this one.
template <class T, class Op> T simd_reduce(T v, Op op) {
  static_assert(sizeof(T) <= 64 && std::is_trivially_copyable_v<T>);
  simd_group *g = lane->group;
  uint me = lane->thread_index_in_simdgroup;
  __builtin_memcpy(g->slot[me], &v, sizeof v);
  meet(g);
  T val[simd_width];
  bool has[simd_width];
  for (uint l = 0; l < simd_width; l++) {
    has[l] = !g->gone[l];
    if (has[l]) __builtin_memcpy(&val[l], g->slot[l], sizeof v);
  }
  for (uint width = simd_width / 2; width > 0; width /= 2)
    for (uint l = 0; l < width; l++) {
      if (has[l] && has[l + width])
        val[l] = op(val[l], val[l + width]);
      else if (has[l + width])
        val[l] = val[l + width], has[l] = true;
    }
  meet(g);
  return val[0];
}

template <class F> struct lane_run {
  lane_state state;
  const F *fn;
  pthread_t thread;
};

template <class F> void *run_lane(void *arg) {
  lane_run<F> *r = static_cast<lane_run<F> *>(arg);
  lane = &r->state;
  (*r->fn)();
  leave(r->state.group, r->state.thread_index_in_simdgroup);
  return nullptr;
}

// Runs fn once per lane of a 1-D grid of `threads` lanes in threadgroups of `tg`, a threadgroup
// at a time, its lanes concurrently.
template <class F> void dispatch(uint threads, uint tg, const F &fn) {
  if (tg == 0 || threads % tg) {
    fprintf(stderr, "dispatch: %u threads is not a whole number of threadgroups of %u\n", threads,
            tg);
    exit(2);
  }
  uint groups = threads / tg, sgs = (tg + simd_width - 1) / simd_width;
  for (uint g = 0; g < groups; g++) {
    simd_group *sg = new simd_group[sgs];
    for (uint s = 0; s < sgs; s++)
      sg[s].members = (int)(tg - s * simd_width < simd_width ? tg - s * simd_width : simd_width);
    lane_run<F> *runs = new lane_run<F>[tg];
    for (uint t = 0; t < tg; t++) {
      lane_state &l = runs[t].state;
      l.thread_position_in_grid = {g * tg + t, 0, 0};
      l.thread_position_in_threadgroup = {t, 0, 0};
      l.threadgroup_position_in_grid = {g, 0, 0};
      l.threads_per_threadgroup = l.dispatch_threads_per_threadgroup = {tg, 1, 1};
      l.threadgroups_per_grid = {groups, 1, 1};
      l.threads_per_grid = {threads, 1, 1};
      l.thread_index_in_threadgroup = t;
      l.thread_index_in_simdgroup = t % simd_width;
      l.simdgroup_index_in_threadgroup = t / simd_width;
      l.threads_per_simdgroup = l.thread_execution_width = simd_width;
      l.simdgroups_per_threadgroup = sgs;
      l.group = &sg[t / simd_width];
      runs[t].fn = &fn;
      if (pthread_create(&runs[t].thread, nullptr, run_lane<F>, &runs[t]) != 0) {
        fprintf(stderr, "dispatch: cannot start a thread for lane %u\n", t);
        exit(2);
      }
    }
    for (uint t = 0; t < tg; t++) pthread_join(runs[t].thread, nullptr);
    delete[] runs;
    delete[] sg;
  }
}

// The emulation is only faithful if half arithmetic rounds at every operation: 1 + 0.0003 is 1
// in half (the spacing there is 2^-10), so adding it three times must leave 1, where one rounding
// of the float sum would give 1.000977.
inline bool check_half_rounding() {
  volatile float tiny = 0.0003f;
  metal::half one = 1, e = (metal::half)tiny;
  metal::half sum = one + e + e + e;
  metal::half4 v = metal::half4(one) + e + e + e;
  return sum == one && v.w == one;
}

} // namespace kl

namespace metal {
template <class T> T simd_sum(T v) {
  return kl::simd_reduce(v, [](T a, T b) { return a + b; });
}
template <class T> T simd_max(T v) {
  return kl::simd_reduce(v, [](T a, T b) { return max(a, b); });
}
template <class T> T simd_min(T v) {
  return kl::simd_reduce(v, [](T a, T b) { return min(a, b); });
}
} // namespace metal

#endif
