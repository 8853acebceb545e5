/* Numeric proof for the half-accumulator fixtures (SPEC §4): each defective kernel's
 * accumulation is replayed in _Float16, each reference's in float, on a long reduction, and both
 * are measured against the same computation in double. The defect must push the error past the
 * tolerance; the reference must stay within it.
 *
 * The tolerance is 1e-3 relative: about two half ulps (2^-11 = 4.9e-4 each), i.e. what rounding
 * the result once to half costs. A float accumulator is well inside it; a half one is not.
 *
 * Emulation: inputs are drawn once and rounded to half, as the kernels read them. Every half
 * operation the kernel does is one assignment here, so it is rounded to half as on the GPU
 * (C11 evaluates _Float16 arithmetic in float and rounds at assignment); fma rounds once.
 * simd_sum is a 32-lane butterfly whose partial sums have the operand type.
 *
 * Prints "PASS half-accumulator/<fixture>: figures" or "FAIL ...", one line per defective
 * fixture, and exits 1 on any FAIL. Built by tests/proofs.test.sh; -DKL_REF_ACC=_Float16 turns
 * every reference accumulator into half, which must make every check fail (the mutation test). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#ifndef KL_REF_ACC
#define KL_REF_ACC float
#endif

typedef _Float16 half;
typedef KL_REF_ACC ref;

#define TOL 1e-3
#define LANES 32

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;

/* xorshift64*: fixed seed, so every run sees the same data. */
static double uniform01(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (double)((rng_state * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

static half draw(double lo, double hi) {
  return (half)(lo + (hi - lo) * uniform01());
}

static double rel_err(double got, double want) {
  return fabs(got - want) / fabs(want);
}

static int failures;

static void report(const char *fixture, const char *what, double half_err, double ref_err) {
  int ok = half_err > TOL && ref_err <= TOL;
  printf("%s half-accumulator/%s: %s: half accumulator rel. error %.2e (%s %.0e), "
         "%s accumulator %.2e (%s %.0e)\n",
         ok ? "PASS" : "FAIL", fixture, what, half_err, half_err > TOL ? ">" : "<=", TOL,
         sizeof(ref) == sizeof(float) ? "float" : "mutated half", ref_err,
         ref_err <= TOL ? "<=" : ">", TOL);
  if (!ok) failures++;
}

/* bad_dot_loop: acc += a[i] * b[i] over D terms, in half against float. */
static void dot_loop(void) {
  enum { D = 4096 };
  static half a[D], b[D];
  for (int i = 0; i < D; i++) a[i] = draw(0, 1), b[i] = draw(0, 1);
  half acc = 0;
  ref racc = 0;
  double want = 0;
  for (int i = 0; i < D; i++) {
    half p = a[i] * b[i];
    acc = acc + p;
    racc = racc + (ref)((ref)a[i] * (ref)b[i]);
    want += (double)a[i] * (double)b[i];
  }
  report("dot_loop", "dot product of 4096 terms", rel_err(acc, want), rel_err(racc, want));
}

/* bad_half4_sum: a half4 running sum of squares, 4 lanes of 4096 terms each. */
static void half4_sum(void) {
  enum { N4 = 4096 };
  half acc[4] = {0, 0, 0, 0};
  ref racc[4] = {0, 0, 0, 0};
  double want = 0;
  for (int i = 0; i < N4; i++) {
    for (int l = 0; l < 4; l++) {
      half v = draw(-1, 1);
      half sq = v * v;
      acc[l] = acc[l] + sq;
      racc[l] = racc[l] + (ref)((ref)v * (ref)v);
      want += (double)v * (double)v;
    }
  }
  double got = (double)((float)acc[0] + (float)acc[1] + (float)acc[2] + (float)acc[3]);
  double rgot = (double)((float)racc[0] + (float)racc[1] + (float)racc[2] + (float)racc[3]);
  report("half4_sum", "sum of squares of 16384 halves in a 4-vector", rel_err(got, want),
         rel_err(rgot, want));
}

/* bad_fma_gemv: acc = fma(w, x, acc) over n terms; fma rounds once to the accumulator type. */
static void fma_gemv(void) {
  enum { N = 4096 };
  half acc = 0;
  ref racc = 0;
  double want = 0;
  for (int k = 0; k < N; k++) {
    half w = draw(-0.25, 1), x = draw(0, 1);
    acc = (half)fma((double)w, (double)x, (double)acc);
    racc = (ref)fma((double)w, (double)x, (double)racc);
    want += (double)w * (double)x;
  }
  report("fma_gemv", "fma chain of 4096 terms", rel_err(acc, want), rel_err(racc, want));
}

/* bad_online_softmax: sum = sum * exp(m - m_new) + exp(x - m_new), with a half running max
 * (exact either way) and a half or float running sum. */
static void online_softmax(void) {
  enum { D = 4096 };
  static half x[D];
  double m_all = -INFINITY;
  for (int i = 0; i < D; i++) x[i] = draw(-4, 4), m_all = fmax(m_all, (double)x[i]);
  half m = (half)-INFINITY, sum = 0;
  half rm = (half)-INFINITY;
  ref rsum = 0;
  double want = 0;
  for (int i = 0; i < D; i++) {
    half m_new = m > x[i] ? m : x[i];
    half c = (half)expf((float)(m - m_new)), p = (half)expf((float)(x[i] - m_new));
    half scaled = sum * c;
    sum = scaled + p;
    m = m_new;
    half rm_new = rm > x[i] ? rm : x[i];
    rsum = rsum * (ref)expf((float)rm - (float)rm_new) + (ref)expf((float)x[i] - (float)rm_new);
    rm = rm_new;
    want += exp((double)x[i] - m_all);
  }
  report("online_softmax", "online softmax denominator over 4096 scores", rel_err(sum, want),
         rel_err(rsum, want));
}

/* bad_array_accumulator: acc[d] = acc[d] * c + p * v[d] for head dimension 4 over N keys,
 * output acc[d] / s; the error is the largest relative error of the 4 outputs. */
static void array_accumulator(void) {
  enum { N = 4096, HD = 4 };
  static half q[HD], k[N][HD], v[N][HD];
  for (int d = 0; d < HD; d++) q[d] = draw(-1, 1);
  for (int j = 0; j < N; j++)
    for (int d = 0; d < HD; d++) k[j][d] = draw(-1, 1), v[j][d] = draw(0, 1);
  const float scale = 0.5f;
  float m = -INFINITY, s = 0;
  half acc[HD] = {0, 0, 0, 0};
  ref racc[HD] = {0, 0, 0, 0};
  double mw = -INFINITY, sw = 0, want[HD] = {0, 0, 0, 0};
  for (int j = 0; j < N; j++) {
    float score = 0;
    double dscore = 0;
    for (int d = 0; d < HD; d++) {
      score += (float)q[d] * scale * (float)k[j][d];
      dscore += (double)q[d] * scale * (double)k[j][d];
    }
    float m_new = fmaxf(m, score), c = expf(m - m_new), p = expf(score - m_new);
    s = s * c + p;
    for (int d = 0; d < HD; d++) {
      half hc = (half)c, hp = (half)p;
      half kept = acc[d] * hc, add = hp * v[j][d];
      acc[d] = kept + add;
      racc[d] = racc[d] * (ref)c + (ref)p * (ref)v[j][d];
    }
    m = m_new;
    double mw_new = fmax(mw, dscore), cw = exp(mw - mw_new), pw = exp(dscore - mw_new);
    sw = sw * cw + pw;
    for (int d = 0; d < HD; d++) want[d] = want[d] * cw + pw * (double)v[j][d];
    mw = mw_new;
  }
  double err = 0, rerr = 0;
  for (int d = 0; d < HD; d++) {
    err = fmax(err, rel_err((double)(float)acc[d] / s, want[d] / sw));
    rerr = fmax(rerr, rel_err((double)(float)racc[d] / s, want[d] / sw));
  }
  report("array_accumulator", "attention output, 4096 keys, head dim 4", err, rerr);
}

/* bad_simd_sum_half: 32 lanes each sum D / 32 lane-strided terms, then simd_sum adds the 32
 * partials (butterfly); all in half, or all in float. The terms are small next to the running
 * sums (activations in [0, 0.1)), the case where half rounding stops being unbiased. */
static void simd_sum_half(void) {
  enum { D = 65536 };
  half part[LANES] = {0};
  ref rpart[LANES] = {0};
  double want = 0;
  for (int i = 0; i < D; i++) {
    half x = draw(0, 0.1);
    part[i % LANES] = part[i % LANES] + x;
    rpart[i % LANES] = rpart[i % LANES] + (ref)x;
    want += (double)x;
  }
  for (int width = LANES / 2; width > 0; width /= 2)
    for (int l = 0; l < width; l++) {
      part[l] = part[l] + part[l + width];
      rpart[l] = rpart[l] + rpart[l + width];
    }
  report("simd_sum_half", "row sum of 65536 small halves, 32 lanes then simd_sum",
         rel_err(part[0], want), rel_err(rpart[0], want));
}

int main(void) {
  dot_loop();
  half4_sum();
  fma_gemv();
  online_softmax();
  array_accumulator();
  simd_sum_half();
  return failures ? 1 : 0;
}
