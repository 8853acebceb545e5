// Numeric proof of the half-accumulator fixtures (SPEC §4), run on the fixture kernels themselves:
// tests/proofs.test.sh compiles every tests/fixtures/half-accumulator/*.metal as C++ into
// kernels.inc, each in a namespace named after its file (bad_dot_loop::batched_dot is the kernel
// of bad_dot_loop.metal), and msl.hh supplies the MSL it needs. Both kernels of a pair run on the
// same inputs, long reductions of values drawn once and rounded to half, and each output is
// measured against the same computation in double. The defective kernel's worst output must be
// off by more than the tolerance, the reference's worst within it; swapping the kernels of a pair
// fails its proof (tests/proofs.test.sh checks that on swapped copies).
//
// The tolerance is 1e-3 relative: about two half ulps (2^-11 = 4.9e-4 each), i.e. what rounding
// the result once to half costs (several references store half). A float accumulator stays well
// inside it; a half one does not.
//
// Prints "PASS half-accumulator/<pair>: figures" or "FAIL ...", one line per pair, and exits 1 on
// any FAIL.
#include "msl.hh"

#include <stdint.h>

namespace kl_fixtures {
#include "kernels.inc"
}

using namespace kl_fixtures;
using metal::half;
using metal::half4;
using metal::uint;

static const uint TG = kl::simd_width;
static const double TOL = 1e-3;

// A zero-filled array (std::vector would cost more to compile than the proof itself).
template <class T> struct buf {
  T *p;
  size_t n;
  explicit buf(size_t len, T fill = T()) : p(new T[len]), n(len) {
    for (size_t i = 0; i < n; i++) p[i] = fill;
  }
  buf(buf &&o) : p(o.p), n(o.n) {
    o.p = nullptr;
  }
  buf(const buf &) = delete;
  ~buf() {
    delete[] p;
  }
  T &operator[](size_t i) {
    return p[i];
  }
  const T &operator[](size_t i) const {
    return p[i];
  }
  size_t size() const {
    return n;
  }
  T *data() {
    return p;
  }
};

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

// xorshift64*: fixed seed, so every run sees the same data.
static double uniform01() {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static buf<half> draw(size_t n, double lo, double hi) {
  buf<half> v(n);
  for (size_t i = 0; i < n; i++) v[i] = (half)(lo + (hi - lo) * uniform01());
  return v;
}

// The worst relative error of got[i] against want[i]; non-finite output counts as infinite.
template <class T> static double worst(const buf<T> &got, const buf<double> &want) {
  double w = 0;
  for (size_t i = 0; i < want.size(); i++) {
    double g = (double)got[i];
    double e =
        __builtin_isfinite(g) ? __builtin_fabs(g - want[i]) / __builtin_fabs(want[i]) : INFINITY;
    if (!(e <= w)) w = e;
  }
  return w;
}

static int failures;

static void report(const char *pair, const char *what, double bad_err, double good_err) {
  bool ok = bad_err > TOL && good_err <= TOL;
  printf("%s half-accumulator/%s: %s: bad_%s.metal worst rel. error %.2e (%s %.0e), "
         "good_%s.metal %.2e (%s %.0e)\n",
         ok ? "PASS" : "FAIL", pair, what, pair, bad_err, bad_err > TOL ? ">" : "<=", TOL, pair,
         good_err, good_err <= TOL ? "<=" : ">", TOL);
  if (!ok) failures++;
}

// One thread per vector; vectors stored column-wise.
static void dot_loop() {
  uint D = 4096, batch = 32;
  buf<half> a = draw(D * batch, 0, 1), b = draw(D * batch, 0, 1);
  buf<half> bad(batch), good(batch);
  buf<double> want(batch);
  for (uint j = 0; j < batch; j++)
    for (uint i = 0; i < D; i++) want[j] += (double)a[i * batch + j] * (double)b[i * batch + j];
  kl::dispatch(batch, TG,
               [&] { bad_dot_loop::batched_dot(a.data(), b.data(), bad.data(), D, batch); });
  kl::dispatch(batch, TG,
               [&] { good_dot_loop::batched_dot(a.data(), b.data(), good.data(), D, batch); });
  report("dot_loop", "32 dot products of 4096 terms", worst(bad, want), worst(good, want));
}

// The same layout, one running sum per vector, unrolled by hand four times.
static void unrolled_sum() {
  uint D = 4096, batch = 32;
  buf<half> a = draw(D * batch, 0, 1);
  buf<half> bad(batch), good(batch);
  buf<double> want(batch);
  for (uint j = 0; j < batch; j++)
    for (uint i = 0; i < D; i++) want[j] += (double)a[i * batch + j];
  kl::dispatch(batch, TG, [&] { bad_unrolled_sum::batched_sum4(a.data(), bad.data(), D, batch); });
  kl::dispatch(batch, TG,
               [&] { good_unrolled_sum::batched_sum4(a.data(), good.data(), D, batch); });
  report("unrolled_sum", "32 sums of 4096 terms, four updates an iteration", worst(bad, want),
         worst(good, want));
}

// Wt is n x rows, so a SIMD group reads consecutive weights.
static void fma_gemv() {
  uint rows = 32, n = 4096;
  buf<half> Wt = draw(n * rows, -0.25, 1), x = draw(n, 0, 1);
  buf<half> bad(rows), good(rows);
  buf<double> want(rows);
  for (uint r = 0; r < rows; r++)
    for (uint k = 0; k < n; k++) want[r] += (double)Wt[k * rows + r] * (double)x[k];
  kl::dispatch(rows, TG,
               [&] { bad_fma_gemv::gemv_half(Wt.data(), x.data(), bad.data(), rows, n); });
  kl::dispatch(rows, TG,
               [&] { good_fma_gemv::gemv_half(Wt.data(), x.data(), good.data(), rows, n); });
  report("fma_gemv", "32 rows of 4096-term fma chains", worst(bad, want), worst(good, want));
}

// One SIMD group per row; each lane keeps a 4-vector of running sums over n4 / 32 half4s.
static void half4_sum() {
  uint rows = 2, n4 = 32768;
  buf<half> flat = draw(rows * n4 * 4, -1, 1);
  buf<half4> x(rows * n4);
  for (size_t i = 0; i < x.size(); i++)
    x[i] = half4(flat[4 * i], flat[4 * i + 1], flat[4 * i + 2], flat[4 * i + 3]);
  buf<float> bad(rows), good(rows);
  buf<double> want(rows);
  for (uint r = 0; r < rows; r++)
    for (uint i = 0; i < n4 * 4; i++)
      want[r] += (double)flat[r * n4 * 4 + i] * flat[r * n4 * 4 + i];
  kl::dispatch(rows * TG, TG, [&] { bad_half4_sum::sum_squares(x.data(), bad.data(), n4); });
  kl::dispatch(rows * TG, TG, [&] { good_half4_sum::sum_squares(x.data(), good.data(), n4); });
  report("half4_sum", "2 sums of squares of 131072 halves", worst(bad, want), worst(good, want));
}

// One SIMD group per row; each lane rescales its running sum as its maximum grows, then the
// lanes' sums meet at the row maximum. Both outputs are checked: the maximum must be exact.
static void online_softmax() {
  uint rows = 2, D = 65536;
  buf<half> s = draw(rows * D, -4, 4);
  buf<float> bad_max(rows), bad_sum(rows), good_max(rows), good_sum(rows);
  buf<double> want_max(rows, -INFINITY), want_sum(rows);
  for (uint r = 0; r < rows; r++) {
    for (uint i = 0; i < D; i++) want_max[r] = __builtin_fmax(want_max[r], (double)s[r * D + i]);
    for (uint i = 0; i < D; i++) want_sum[r] += __builtin_exp((double)s[r * D + i] - want_max[r]);
  }
  kl::dispatch(rows * TG, TG, [&] {
    bad_online_softmax::softmax_denominator(s.data(), bad_max.data(), bad_sum.data(), D);
  });
  kl::dispatch(rows * TG, TG, [&] {
    good_online_softmax::softmax_denominator(s.data(), good_max.data(), good_sum.data(), D);
  });
  report("online_softmax", "2 softmax denominators over 65536 scores",
         __builtin_fmax(worst(bad_sum, want_sum), worst(bad_max, want_max)),
         __builtin_fmax(worst(good_sum, want_sum), worst(good_max, want_max)));
}

// 32 queries (the grid covers only those) against N keys, head dimension 4.
static void array_accumulator() {
  uint N = 4096, queries = 32;
  float scale = 0.5f;
  buf<half> q = draw(N * 4, -1, 1), k = draw(N * 4, -1, 1), v = draw(N * 4, 0, 1);
  buf<half4> Q(N), K(N), V(N), bad(N), good(N);
  for (uint j = 0; j < N; j++) {
    Q[j] = half4(q[4 * j], q[4 * j + 1], q[4 * j + 2], q[4 * j + 3]);
    K[j] = half4(k[4 * j], k[4 * j + 1], k[4 * j + 2], k[4 * j + 3]);
    V[j] = half4(v[4 * j], v[4 * j + 1], v[4 * j + 2], v[4 * j + 3]);
  }
  buf<double> want(queries * 4);
  for (uint i = 0; i < queries; i++) {
    double m = -INFINITY;
    buf<double> score(N);
    for (uint j = 0; j < N; j++) {
      score[j] = 0;
      for (int d = 0; d < 4; d++) score[j] += (double)q[4 * i + d] * scale * (double)k[4 * j + d];
      m = __builtin_fmax(m, score[j]);
    }
    double s = 0, acc[4] = {0, 0, 0, 0};
    for (uint j = 0; j < N; j++) {
      double p = __builtin_exp(score[j] - m);
      s += p;
      for (int d = 0; d < 4; d++) acc[d] += p * (double)v[4 * j + d];
    }
    for (int d = 0; d < 4; d++) want[4 * i + d] = acc[d] / s;
  }
  kl::dispatch(queries, TG, [&] {
    bad_array_accumulator::attend_half(Q.data(), K.data(), V.data(), bad.data(), N, scale);
  });
  kl::dispatch(queries, TG, [&] {
    good_array_accumulator::attend_half(Q.data(), K.data(), V.data(), good.data(), N, scale);
  });
  buf<half> bad_out(queries * 4), good_out(queries * 4);
  for (uint i = 0; i < queries; i++)
    for (int d = 0; d < 4; d++) bad_out[4 * i + d] = bad[i][d], good_out[4 * i + d] = good[i][d];
  report("array_accumulator", "attention outputs of 32 queries over 4096 keys, head dim 4",
         worst(bad_out, want), worst(good_out, want));
}

// One SIMD group per row of small activations, the case where half rounding stops being unbiased
// (the terms are small next to the running sums). D is 65504 = 32 x 2047, the largest half: the
// defective kernel divides by half(D), which would be infinite past it.
static void simd_sum_half() {
  uint rows = 2, D = 65504;
  buf<half> x = draw(rows * D, 0, 0.1);
  buf<half> bad(rows), good(rows);
  buf<double> want(rows);
  for (uint r = 0; r < rows; r++) {
    for (uint i = 0; i < D; i++) want[r] += (double)x[r * D + i];
    want[r] /= D;
  }
  kl::dispatch(rows * TG, TG, [&] { bad_simd_sum_half::row_mean(x.data(), bad.data(), D); });
  kl::dispatch(rows * TG, TG, [&] { good_simd_sum_half::row_mean(x.data(), good.data(), D); });
  report("simd_sum_half", "2 row means of 65504 small halves, 32 lanes then simd_sum",
         worst(bad, want), worst(good, want));
}

// One run of a tile kernel, measured whatever element type it stores C in (its pointer type
// says which), so that the pair's kernels may differ there, and still swap.
template <class Out>
static double tile_error(void (*kernel)(const half *, const half *, Out *, uint &, uint),
                         uint tiles, uint K, buf<half> &A, buf<half> &B, const buf<double> &want) {
  buf<Out> C(tiles * 64);
  kl::dispatch(tiles * TG, TG, [&] {
    kernel(A.data(), B.data(), C.data(), K, kl::lane->threadgroup_position_in_grid);
  });
  return worst(C, want);
}

// One SIMD group per 8 x 8 tile of C = A B: A is 16 x 4096, B 4096 x 8, 512 steps of the
// SIMD-group matrix unit per tile.
static void mma_template_tile() {
  uint tiles = 2, K = 4096;
  buf<half> A = draw(tiles * 8 * K, 0, 1), B = draw(K * 8, 0, 1);
  buf<double> want(tiles * 64);
  for (uint r = 0; r < tiles * 8; r++)
    for (uint c = 0; c < 8; c++)
      for (uint k = 0; k < K; k++) want[r * 8 + c] += (double)A[r * K + k] * (double)B[k * 8 + c];
  report("mma_template_tile", "2 tiles of 8 x 8 dot products of 4096 terms, 8 per matrix step",
         tile_error(&bad_mma_template_tile::gemm_tile<half>, tiles, K, A, B, want),
         tile_error(&good_mma_template_tile::gemm_tile<half>, tiles, K, A, B, want));
}

// The same product, each step of the K loop through a helper the kernel calls.
static void mma_helper_step() {
  uint tiles = 2, K = 4096;
  buf<half> A = draw(tiles * 8 * K, 0, 1), B = draw(K * 8, 0, 1);
  buf<double> want(tiles * 64);
  for (uint r = 0; r < tiles * 8; r++)
    for (uint c = 0; c < 8; c++)
      for (uint k = 0; k < K; k++) want[r * 8 + c] += (double)A[r * K + k] * (double)B[k * 8 + c];
  report("mma_helper_step", "2 tiles of 8 x 8 dot products of 4096 terms, a helper call a step",
         tile_error(&bad_mma_helper_step::gemm_tile, tiles, K, A, B, want),
         tile_error(&good_mma_helper_step::gemm_tile, tiles, K, A, B, want));
}

// 32 queries (one thread each) against 4096 keys, scores key-major, head dimension 2.
static void softmax_fma_output() {
  uint N = 4096, nq = 32;
  buf<half> sh = draw(N * nq, -4, 4), vh = draw(N * 2, 0, 1);
  buf<float> scores(N * nq);
  for (size_t i = 0; i < scores.size(); i++) scores[i] = (float)sh[i];
  buf<metal::half2> V(N), bad(nq), good(nq);
  for (uint j = 0; j < N; j++) V[j] = metal::half2(vh[2 * j], vh[2 * j + 1]);
  buf<double> want(nq * 2);
  for (uint q = 0; q < nq; q++) {
    double m = -INFINITY, l = 0, o[2] = {0, 0};
    for (uint j = 0; j < N; j++) m = __builtin_fmax(m, (double)scores[j * nq + q]);
    for (uint j = 0; j < N; j++) {
      double p = __builtin_exp((double)scores[j * nq + q] - m);
      l += p;
      for (int d = 0; d < 2; d++) o[d] += p * (double)vh[2 * j + d];
    }
    for (int d = 0; d < 2; d++) want[2 * q + d] = o[d] / l;
  }
  kl::dispatch(nq, TG, [&] {
    bad_softmax_fma_output::attend_fma(scores.data(), V.data(), bad.data(), N, nq);
  });
  kl::dispatch(nq, TG, [&] {
    good_softmax_fma_output::attend_fma(scores.data(), V.data(), good.data(), N, nq);
  });
  buf<half> bad_out(nq * 2), good_out(nq * 2);
  for (uint q = 0; q < nq; q++)
    for (int d = 0; d < 2; d++) bad_out[2 * q + d] = bad[q][d], good_out[2 * q + d] = good[q][d];
  report("softmax_fma_output", "attention outputs of 32 queries over 4096 keys, head dim 2",
         worst(bad_out, want), worst(good_out, want));
}

// 32 rows of 4096 4-bit weights, a scale per 32, bytes and scales column-major; U = half, as
// both files instantiate it.
static void qmv_template_acc() {
  uint rows = 32, n = 4096;
  buf<metal::uchar> w(n / 2 * rows);
  for (size_t i = 0; i < w.size(); i++) w[i] = (metal::uchar)(uniform01() * 256);
  buf<half> scales = draw(n / 32 * rows, 0.5, 1), x = draw(n, 0, 1);
  buf<half> bad(rows), good(rows);
  buf<double> want(rows);
  for (uint r = 0; r < rows; r++)
    for (uint i = 0; i < n; i++) {
      metal::uchar b = w[(i / 2) * rows + r];
      int q = (i % 2 ? b >> 4 : b & 15) - 8;
      want[r] += (double)scales[(i / 32) * rows + r] * q * (double)x[i];
    }
  kl::dispatch(rows, TG, [&] {
    bad_qmv_template_acc::qmv<half, half>(w.data(), scales.data(), x.data(), bad.data(), rows, n);
  });
  kl::dispatch(rows, TG, [&] {
    good_qmv_template_acc::qmv<half, half>(w.data(), scales.data(), x.data(), good.data(), rows,
                                           n);
  });
  report("qmv_template_acc", "32 rows of 4096 4-bit weights", worst(bad, want),
         worst(good, want));
}

// 32 column sums of 4096 rows, one thread per column.
static void inst_in_define() {
  uint rows = 4096, cols = 32;
  buf<half> x = draw(rows * cols, 0, 1);
  buf<half> bad(cols), good(cols);
  buf<double> want(cols);
  for (uint r = 0; r < rows; r++)
    for (uint c = 0; c < cols; c++) want[c] += (double)x[r * cols + c];
  kl::dispatch(cols, TG,
               [&] { bad_inst_in_define::column_sum<half>(x.data(), bad.data(), rows, cols); });
  kl::dispatch(cols, TG,
               [&] { good_inst_in_define::column_sum<half>(x.data(), good.data(), rows, cols); });
  report("inst_in_define", "32 column sums of 4096 halves", worst(bad, want), worst(good, want));
}

// One SIMD group per row, T = half: the files that include the template would instantiate it.
static void uninstantiated_template() {
  uint rows = 2, D = 65536;
  buf<half> x = draw(rows * D, 0, 0.1);
  buf<float> bad(rows), good(rows);
  buf<double> want(rows);
  for (uint r = 0; r < rows; r++) {
    for (uint i = 0; i < D; i++) want[r] += (double)x[r * D + i];
    want[r] /= D;
  }
  kl::dispatch(rows * TG, TG,
               [&] { bad_uninstantiated_template::row_mean<half>(x.data(), bad.data(), D); });
  kl::dispatch(rows * TG, TG,
               [&] { good_uninstantiated_template::row_mean<half>(x.data(), good.data(), D); });
  report("uninstantiated_template", "2 row means of 65536 small halves, 32 lanes then simd_sum",
         worst(bad, want), worst(good, want));
}

int main() {
  if (!kl::check_half_rounding()) {
    printf("FAIL half-accumulator: this compiler does not round _Float16 arithmetic at every "
           "operation, so it cannot stand in for the GPU (use g++ 12 or later)\n");
    return 1;
  }
  dot_loop();
  fma_gemv();
  half4_sum();
  online_softmax();
  array_accumulator();
  simd_sum_half();
  unrolled_sum();
  mma_template_tile();
  mma_helper_step();
  softmax_fma_output();
  qmv_template_acc();
  inst_in_define();
  uninstantiated_template();
  return failures ? 1 : 0;
}
