/* Writes the expected outputs of the reference kernels that tests/proofs.test.sh runs under
 * Oclgrind, computed here in double straight from what each kernel is for (not by running it),
 * with the inputs of its .sim file. Regenerate after changing a .sim:
 *   cc -std=c11 tests/proofs/expected.c -o /tmp/expected -lm && /tmp/expected tests/proofs
 * Each file holds lines "name[i] = value", the format of Oclgrind's argument dumps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *open_out(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.expected", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    exit(1);
  }
  return f;
}

static void put(FILE *f, const char *arg, int i, double v) {
  fprintf(f, "%s[%d] = %.9g\n", arg, i, v);
}

/* Σ_{i<d} (a*row + i) * i: a dot product of a row of range-filled W with a range-filled x. */
static double ramp_dot(int a, int row, int d) {
  double s = 0;
  for (int i = 0; i < d; i++) s += (double)(a * row + i) * i;
  return s;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "tests/proofs";
  char sub[512];
  FILE *f;

  snprintf(sub, sizeof sub, "%s/bounds-guard", dir);
  f = open_out(sub, "good_guard_after_access");
  for (int i = 0; i < 100; i++) put(f, "y", i, 2.0 * i + 1.0);
  fclose(f);
  f = open_out(sub, "good_guarded_load_only");
  for (int i = 0; i < 100; i++) put(f, "y", i, 2.0 * i + i);
  fclose(f);
  f = open_out(sub, "good_rmsnorm_tail");
  for (int r = 0; r < 4; r++) {
    double ss = 0;
    for (int i = 0; i < 24; i++) ss += (double)(r * 24 + i) * (r * 24 + i);
    double rms = 1.0 / sqrt(ss / 24 + 1e-5);
    for (int i = 0; i < 24; i++) put(f, "out", r * 24 + i, (r * 24 + i) * rms * (i + 1));
  }
  fclose(f);

  snprintf(sub, sizeof sub, "%s/bounds-guard/rounded", dir);
  f = open_out(sub, "good_leaky_relu");
  for (int i = 0; i < 100; i++) put(f, "out", i, i - 50 > 0 ? i - 50 : 0.125 * (i - 50));
  fclose(f);
  f = open_out(sub, "good_add2d_column_guard");
  for (int i = 0; i < 120; i++) put(f, "out", i, i + 0.5);
  fclose(f);
  f = open_out(sub, "good_gemv_simd_rows");
  for (int r = 0; r < 5; r++) put(f, "y", r, ramp_dot(40, r, 40));
  fclose(f);
  f = open_out(sub, "good_sentinel_tile");
  for (int i = 0; i < 50; i++) put(f, "out", i, i + 0.5);
  fclose(f);

  snprintf(sub, sizeof sub, "%s/barrier-divergence", dir);
  f = open_out(sub, "good_attention_early_return");
  for (int q = 0; q < 40; q++) {
    double m = -INFINITY, s = 0, o = 0;
    for (int j = 0; j < 40; j++) m = fmax(m, q * (j - 20) / 128.0);
    for (int j = 0; j < 40; j++) {
      double p = exp(q * (j - 20) / 128.0 - m);
      s += p;
      o += p * j;
    }
    put(f, "O", q, o / s);
  }
  fclose(f);
  /* The helper-barrier reference computes the same per-threadgroup sums. */
  const char *const block_sums[] = {"good_tree_reduction", "good_helper_barrier"};
  for (int k = 0; k < 2; k++) {
    f = open_out(sub, block_sums[k]);
    for (int g = 0; g < 4; g++) {
      double s = 0;
      for (int i = g * 32; i < g * 32 + 32 && i < 100; i++) s += i;
      put(f, "out", g, s);
    }
    fclose(f);
  }
  f = open_out(sub, "good_simd_pair_exchange");
  for (int k = 0; k < 50; k++) put(f, "out", k, 2.0 * k + (2.0 * k + 1));
  fclose(f);
  f = open_out(sub, "good_tiled_loop_trip");
  for (int r = 0; r < 100; r++) {
    double s = 0;
    for (int j = 0; j < 72; j++) s += (double)(100 * j + r) * j;
    put(f, "y", r, s);
  }
  fclose(f);

  snprintf(sub, sizeof sub, "%s/uncoalesced-access", dir);
  f = open_out(sub, "good_row_dot");
  for (int r = 0; r < 64; r++) put(f, "y", r, ramp_dot(40, r, 40));
  fclose(f);
  f = open_out(sub, "good_stride8_bias");
  for (int i = 0; i < 512; i++) put(f, "y", i, i + i % 8);
  fclose(f);
  f = open_out(sub, "good_dequant_chunk");
  for (int p = 0; p < 256; p++)
    for (int h = 0; h < 2; h++) put(f, "out", 2 * p + h, (((p >> (4 * h)) & 15) - 8) * 0.5);
  fclose(f);
  f = open_out(sub, "good_transpose");
  for (int x = 0; x < 64; x++)
    for (int y = 0; y < 48; y++) put(f, "out", x * 48 + y, y * 64 + x);
  fclose(f);
  return 0;
}
