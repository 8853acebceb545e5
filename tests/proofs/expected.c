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
  /* Sums of rows of 100 ramp values (0 .. 299), checked column by column. */
  f = open_out(sub, "good_private_array_check");
  for (int r = 0; r < 3; r++) put(f, "out", r, 10000.0 * r + 4950);
  fclose(f);
  f = open_out(sub, "good_if_config_check");
  for (int r = 0; r < 3; r++) put(f, "out", r, 10000.0 * r + 4950);
  fclose(f);
  /* 3 rows of top (0 .. 119) stacked over 2 rows of bottom (1000 .. 1079). */
  f = open_out(sub, "good_select_source_own_offsets");
  for (int i = 0; i < 200; i++) put(f, "out", i, i < 120 ? i : 1000 + (i - 120));
  fclose(f);
  f = open_out(sub, "good_guard_after_access");
  for (int i = 0; i < 100; i++) put(f, "y", i, 2.0 * i + 1.0);
  fclose(f);
  /* Chunks of 8 of 100 items: twelve whole, the last 4 long. */
  f = open_out(sub, "good_chunk_end_clamp");
  for (int g = 0; g < 13; g++) put(f, "out", g, g < 12 ? 8 : 4);
  fclose(f);
  /* Offsets 3 apart: every segment is 3 long. */
  f = open_out(sub, "good_offsets_next");
  for (int i = 0; i < 100; i++) put(f, "len", i, 3);
  fclose(f);
  f = open_out(sub, "good_guarded_load_only");
  for (int i = 0; i < 100; i++) put(f, "y", i, 2.0 * i + i);
  fclose(f);
  /* Each of the 4 x 30 elements doubled. */
  f = open_out(sub, "good_reader_struct_row");
  for (int i = 0; i < 120; i++) put(f, "out", i, 2.0 * i);
  fclose(f);
  f = open_out(sub, "good_block_fields");
  for (int i = 0; i < 100; i++) put(f, "out", i, 4.0);
  fclose(f);
  /* Six rows of 8 ramp values, doubled. */
  f = open_out(sub, "good_unsigned_block_row");
  for (int i = 0; i < 48; i++) put(f, "dst", i, 2.0 * i);
  fclose(f);
  /* Blocks of 4 of 40 ramp values from column (gid / 8) * 32 + (gid % 8) * 4, cut at 40; a
   * thread whose block starts past 40 writes nothing (0). */
  f = open_out(sub, "good_select_sum_bound");
  for (int t = 0; t < 16; t++) {
    int c = (t / 8) * 32 + (t % 8) * 4;
    double s = 0;
    for (int i = 0; i < 4 && c + i < 40; i++) s += c + i;
    put(f, "out", t, s);
  }
  fclose(f);
  /* 3 columns of 20 ramp values, 32 threads: thread t < 20 holds element t, the others 0. */
  f = open_out(sub, "good_walk_counts_only");
  for (int c = 0; c < 3; c++)
    for (int t = 0; t < 32; t++) put(f, "partials", c * 32 + t, t < 20 ? c * 20 + t : 0);
  fclose(f);
  /* Rows of 2 ramp scales, summed. */
  f = open_out(sub, "good_fixed_steps_pointer");
  for (int r = 0; r < 50; r++) put(f, "out", r, 4.0 * r + 1);
  fclose(f);
  f = open_out(sub, "good_lane_block_stores");
  for (int i = 0; i < 100; i++)
    for (int k = 0; k < 4; k++) put(f, "out", 4 * i + k, (k + 1.0) * i);
  fclose(f);
  f = open_out(sub, "good_rmsnorm_tail");
  for (int r = 0; r < 4; r++) {
    double ss = 0;
    for (int i = 0; i < 24; i++) ss += (double)(r * 24 + i) * (r * 24 + i);
    double rms = 1.0 / sqrt(ss / 24 + 1e-5);
    for (int i = 0; i < 24; i++) put(f, "out", r * 24 + i, (r * 24 + i) * rms * (i + 1));
  }
  fclose(f);
  /* Rows of 20 ramp values, 32 threads: thread lid < 20 holds one value, the others none. */
  f = open_out(sub, "good_walk_other_map");
  for (int r = 0; r < 2; r++)
    for (int t = 0; t < 32; t++) {
      double v = t < 20 ? r * 20 + t : 0;
      put(f, "partials", r * 64 + 2 * t, v);
      put(f, "partials", r * 64 + 2 * t + 1, v * v);
    }
  fclose(f);

  /* Rows of 20 ramp values (0 .. 79), each divided by its sum. */
  f = open_out(sub, "good_tile_tail");
  for (int r = 0; r < 4; r++) {
    double sum = 0;
    for (int i = 0; i < 20; i++) sum += r * 20 + i;
    for (int i = 0; i < 20; i++) put(f, "out", r * 20 + i, (r * 20 + i) / sum);
  }
  fclose(f);
  /* Softmax of rows of 20 values 0.125 apart (0 .. 9.875). */
  f = open_out(sub, "good_simd_tile_tail");
  for (int r = 0; r < 4; r++) {
    double m = 0.125 * (r * 20 + 19), sum = 0;
    for (int i = 0; i < 20; i++) sum += exp(0.125 * (r * 20 + i) - m);
    for (int i = 0; i < 20; i++) put(f, "y", r * 20 + i, exp(0.125 * (r * 20 + i) - m) / sum);
  }
  fclose(f);
  /* Rows of 40 ramp values (0 .. 159), each scaled to unit RMS. */
  f = open_out(sub, "good_fixed_walk_row");
  for (int r = 0; r < 4; r++) {
    double ss = 0;
    for (int i = 0; i < 40; i++) ss += (double)(r * 40 + i) * (r * 40 + i);
    double scale = 1.0 / sqrt(ss / 40 + 1e-6);
    for (int i = 0; i < 40; i++) put(f, "y", r * 40 + i, (r * 40 + i) * scale);
  }
  fclose(f);
  /* Softmax of rows of 20 scores 0.125 apart (0 .. 4.875) over values v[j][d] = 64 j + d. */
  f = open_out(sub, "good_fixed_walk_own_rows");
  for (int r = 0; r < 2; r++) {
    double m = 0.125 * (r * 20 + 19), sum = 0;
    for (int j = 0; j < 20; j++) sum += exp(0.125 * (r * 20 + j) - m);
    for (int d = 0; d < 64; d++) {
      double acc = 0;
      for (int j = 0; j < 20; j++) acc += exp(0.125 * (r * 20 + j) - m) * (64 * j + d);
      put(f, "out", r * 64 + d, acc / sum);
    }
  }
  fclose(f);
  /* Rows of 40 ramp values (0 .. 159), each divided by its sum. */
  f = open_out(sub, "good_whole_tiles_tail");
  for (int r = 0; r < 4; r++) {
    double sum = 0;
    for (int i = 0; i < 40; i++) sum += r * 40 + i;
    for (int i = 0; i < 40; i++) put(f, "y", r * 40 + i, (r * 40 + i) / sum);
  }
  fclose(f);
  /* Rows of 80 ramp values (0 .. 319): the first 64 of each doubled, the rest copied. */
  f = open_out(sub, "good_fixed_head_rest");
  for (int i = 0; i < 320; i++) put(f, "y", i, i % 80 < 64 ? 2.0 * i : i);
  fclose(f);
  /* Sums of rows of 20 ramp values (0 .. 79). */
  f = open_out(sub, "good_ceil_tiles");
  for (int r = 0; r < 4; r++) put(f, "sums", r, 400.0 * r + 190);
  fclose(f);
  /* Rows of 128 ramp values (0 .. 511) plus the bias ramp (0 .. 127). */
  f = open_out(sub, "good_tile_whole_rows");
  for (int i = 0; i < 512; i++) put(f, "out", i, i + i % 128);
  fclose(f);

  /* Batch b, slice s, pixel x, lane k: channel c = 4s + k of the planes 8 apart, 0 past 6. */
  f = open_out(sub, "good_remainder_written_out");
  for (int b = 0; b < 2; b++)
    for (int s = 0; s < 2; s++)
      for (int x = 0; x < 5; x++)
        for (int k = 0, c = 4 * s; k < 4; k++, c++)
          put(f, "dst", 4 * ((b * 2 + s) * 5 + x) + k, c < 6 ? (b * 6 + c) * 8 + x : 0);
  fclose(f);

  /* The 5 x 3 ramp inside a border of 100, one column left and right, one row above and below. */
  f = open_out(sub, "good_any_lane_stored_size");
  for (int y = 0; y < 5; y++)
    for (int x = 0; x < 7; x++) {
      int sx = x - 1, sy = y - 1;
      put(f, "out", y * 7 + x, sx >= 0 && sx < 5 && sy >= 0 && sy < 3 ? sy * 5 + sx : 100);
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
  /* A 5 x 8 ramp (0 .. 39) moved into blocks of four columns: (r, c) to (c / 4) * 20 + r * 4
   * + c % 4. */
  /* 5 rows of 32 float4 (a ramp 0 .. 639), doubled. */
  f = open_out(sub, "good_lane_row");
  for (int i = 0; i < 640; i++) put(f, "x", i, 2.0 * i);
  fclose(f);
  f = open_out(sub, "good_helper_return_offset");
  {
    double y[40];
    for (int i = 0; i < 40; i++) y[(i % 8 / 4) * 20 + i / 8 * 4 + i % 8 % 4] = i;
    for (int i = 0; i < 40; i++) put(f, "y", i, y[i]);
  }
  fclose(f);

  /* The classes of judged corpus findings (tests/fixtures/real/bounds-guard). */
  snprintf(sub, sizeof sub, "%s/real/bounds-guard", dir);
  /* Two rows of 10, doubled. */
  f = open_out(sub, "good_remaining_count");
  for (int i = 0; i < 20; i++) put(f, "out", i, 2.0 * i);
  fclose(f);
  /* 16 rows of 4: rows of head 0 (the first 8) times m0 = 2, of head 1 times m1 = 3. */
  f = open_out(sub, "good_select_struct_fields");
  for (int i = 0; i < 64; i++) put(f, "y", i, (i / 4 < 8 ? 2.0 : 3.0) * i);
  fclose(f);
  /* Each batch's row R: the sum of row R of range-filled w, 8 wide: 64 R + 28. */
  f = open_out(sub, "good_clamp_other_row");
  for (int b = 0; b < 2; b++)
    for (int r = 0; r < 16; r++) put(f, "y", b * 16 + r, 64.0 * r + 28.0);
  fclose(f);
  f = open_out(sub, "good_helper_guarded_call");
  for (int r = 0; r < 5; r++) put(f, "out", r, ramp_dot(40, r, 40));
  for (int r = 0; r < 5; r++) put(f, "out", 5 + r, 2 * ramp_dot(40, r, 40));
  fclose(f);
  /* Snapshot of batch b (tokens 32b..) at 4 * 32b and 4 * 32b + 40: the running sum of each
   * batch's first token, x[i] = i + 1. */
  f = open_out(sub, "good_counter_slot");
  {
    double snaps[200];
    for (int i = 0; i < 200; i++) snaps[i] = -1;
    double s = 0;
    for (int i2 = 0; i2 < 40; i2 += 32) {
      s += i2 + 1;
      for (int lid = 0; lid < 32; lid++) snaps[i2 * 4 + lid] = snaps[i2 * 4 + 40 + lid] = s;
    }
    for (int i = 0; i < 200; i++) put(f, "snaps", i, snaps[i]);
  }
  fclose(f);
  /* 1 in each of the 64 floats of the 5 x 6 pixels, rows 512 floats apart; 0 elsewhere. */
  f = open_out(sub, "good_sentinel_offset");
  for (int i = 0; i < 5 * 512; i++) put(f, "out", i, i % 512 < 6 * 64 ? 1 : 0);
  fclose(f);
  f = open_out(sub, "bad_one_specialisation.fill1");
  for (int i = 0; i < 10; i++) put(f, "out", i, 1);
  for (int i = 0; i < 10; i++) put(f, "counts", i, 1);
  fclose(f);
  const char *const chunks[] = {"good_chunk_else_branch.chunk4", "good_chunk_else_branch.chunk1"};
  for (int k = 0; k < 2; k++) {
    f = open_out(sub, chunks[k]);
    for (int i = 0; i < 10; i++) put(f, "dst", i, 2.0 * i);
    fclose(f);
  }
  /* Planes in pairs: plane 2y holds src row y, plane 2y + 1 twice it (5 planes of 5 pixels). */
  f = open_out(sub, "good_any_vector_guard");
  for (int p = 0; p < 5; p++)
    for (int x = 0; x < 5; x++) put(f, "dst", p * 5 + x, (p % 2 ? 2.0 : 1.0) * ((p / 2) * 5 + x));
  fclose(f);
  /* Four values per pixel p of 15: (k + 1) * p at 4p + k. */
  f = open_out(sub, "good_vector_lane_index");
  for (int i = 0; i < 60; i++) put(f, "dst", i, (i % 4 + 1) * (i / 4));
  fclose(f);
  /* Slice y of pixel x: the sum of src[c * 5 + x] over its channels c = 4y .. 4y + 3 below 6. */
  f = open_out(sub, "good_masked_lane_gather");
  for (int y = 0; y < 2; y++)
    for (int x = 0; x < 5; x++) {
      double sum = 0;
      for (int c = 4 * y; c < 4 * y + 4 && c < 6; c++) sum += c * 5 + x;
      put(f, "dst", y * 5 + x, sum);
    }
  fclose(f);
  f = open_out(sub, "good_dead_specialisation_branch");
  for (int i = 0; i < 21; i++) put(f, "dst", i, i);
  fclose(f);
  /* Twice a (x) per element: one row in the one-thread-per-element modes, three otherwise. */
  const struct {
    const char *run, *arg;
    int n;
  } twice[] = {{"good_fc_macro_alias.counted", "b", 20},
               {"good_fc_macro_alias.blocked", "b", 60},
               {"good_fc_mode_redef.per_elem", "y", 20},
               {"good_fc_mode_redef.blocked", "y", 60}};
  for (int k = 0; k < 4; k++) {
    f = open_out(sub, twice[k].run);
    for (int i = 0; i < twice[k].n; i++) put(f, twice[k].arg, i, 2.0 * i);
    fclose(f);
  }
  const char *const plus_one[] = {"good_fc_mode_sibling.flat", "good_fc_mode_sibling.rows"};
  for (int k = 0; k < 2; k++) {
    f = open_out(sub, plus_one[k]);
    for (int i = 0; i < 60; i++) put(f, "b", i, i + 1.0);
    fclose(f);
  }
  /* The largest bias of each row of a 2 x 40 ramp, the masked keys past the row left out. */
  f = open_out(sub, "good_mask_sentinel_tail");
  for (int r = 0; r < 2; r++) put(f, "out", r, 40.0 * r + 39);
  fclose(f);
  /* x[i] + 0.5, the bias being given. */
  f = open_out(sub, "good_optional_input_tail");
  for (int i = 0; i < 100; i++) put(f, "y", i, i + 0.5);
  fclose(f);
  /* Column sums of a 3 x 10 ramp. */
  f = open_out(sub, "good_guard_in_bool");
  for (int c = 0; c < 10; c++) put(f, "out", c, c + (10.0 + c) + (20.0 + c));
  fclose(f);
  /* Each state element decays by half per token and adds the token, tok[t] = t + 1. */
  f = open_out(sub, "good_lane_reused_as_token_offset");
  for (int i = 0; i < 128; i++) {
    double st = i;
    for (int t = 0; t < 40; t++) st = st * 0.5 + (t + 1);
    put(f, "out", i, st);
  }
  fclose(f);
  /* out[i] = vals[slot[i]] where the mask keeps i and slot[i] = 15 - i < nvals = 12. */
  f = open_out(sub, "good_loaded_value_check");
  {
    static const int keep[16] = {1, 0, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1};
    for (int i = 0; i < 16; i++) put(f, "out", i, keep[i] && 15 - i < 12 ? 10.0 + (15 - i) : -1);
  }
  fclose(f);
  /* Destination row r copies source row floor(0.6 r), at most the last one, 2. */
  f = open_out(sub, "good_macro_clamp_src_row.resize_rows");
  for (int r = 0; r < 6; r++) {
    int sr = (int)floor(r * 0.6) < 2 ? (int)floor(r * 0.6) : 2;
    for (int c = 0; c < 8; c++) put(f, "dst", r * 8 + c, sr * 8 + c);
  }
  fclose(f);
  f = open_out(sub, "good_macro_clamp_src_row.sum4");
  put(f, "o", 0, 1 + 2 + 3 + 4);
  fclose(f);
  /* Row r of w (bytes r * 48 + j) against x[j] = j, at j = 16 g + 4 k for g < 3, k < 4. */
  f = open_out(sub, "good_min_clamp_pointer");
  for (int r = 0; r < 5; r++) {
    double s = 0;
    for (int j = 0; j < 48; j += 4) s += (double)(r * 48 + j) * j;
    put(f, "y", r, s);
  }
  fclose(f);
  /* The 3 x 5 source in the top left corner of a 4 x 8 destination, zeros around it. */
  f = open_out(sub, "good_padding_selector");
  for (int y = 0; y < 4; y++)
    for (int i = 0; i < 8; i++) put(f, "dst", y * 8 + i, i < 5 && y < 3 ? y * 5 + i : 0);
  fclose(f);
  /* The same, the zero rows written after the copying branch returns. */
  f = open_out(sub, "good_pad_exit_selector");
  for (int y = 0; y < 4; y++)
    for (int i = 0; i < 8; i++) put(f, "dst", y * 8 + i, i < 5 && y < 3 ? y * 5 + i : 0);
  fclose(f);
  /* Each threadgroup's slot holds the sum of its first SIMD group's 32 values, x[i] = i. */
  f = open_out(sub, "good_per_group_slot");
  for (int g = 0; g < 3; g++) {
    double s = 0;
    for (int i = g * 256; i < g * 256 + 32; i++) s += i;
    put(f, "partials", g, s);
  }
  fclose(f);
  /* Code i is bits 2 (i % 4) of byte i / 4, packed[j] = 19 j; book = {10, 20, 30, 40}. */
  f = open_out(sub, "good_data_dependent_index");
  for (int i = 0; i < 50; i++) put(f, "out", i, 10.0 * ((((19 * (i / 4)) >> (i % 4 * 2)) & 3) + 1));
  fclose(f);
  /* Row h scaled by 0.5^(h + 1) below n_fast = 2, by 0.25^(2 (h - 2) + 1) from there. */
  f = open_out(sub, "good_ternary_selector");
  for (int h = 0; h < 4; h++) {
    double slope = h < 2 ? pow(0.5, h + 1) : pow(0.25, 2 * (h - 2) + 1);
    for (int c = 0; c < 10; c++) put(f, "dst", h * 10 + c, (h * 10 + c) * slope);
  }
  fclose(f);
  f = open_out(sub, "good_tree_reduction_guard");
  for (int r = 0; r < 3; r++) put(f, "out", r, ramp_dot(64, r, 64));
  fclose(f);
  f = open_out(sub, "good_member_run_guarded");
  for (int i = 0; i < 10; i++) put(f, "out", i, 2.0 * i);
  fclose(f);
  f = open_out(sub, "good_row_pointers_clamped");
  for (int r = 0; r < 5; r++) put(f, "out", r, ramp_dot(40, r, 40));
  fclose(f);
  /* The whole block and the tail together cover each row of 200 once. */
  f = open_out(sub, "good_blocked_walk_tail");
  for (int r = 0; r < 3; r++) put(f, "out", r, ramp_dot(200, r, 200));
  fclose(f);

  /* Core classes of issue 2: a branch no built instantiation takes (y = 2.5 x, n = 100, every
   * live instantiation), an index a loop or min() keeps in range. */
  {
    const char *runs[] = {"good_unbuilt_width_branch.w2", "good_unbuilt_width_branch.w4",
                          "bad_unbuilt_width_branch.w2"};
    for (int r = 0; r < 3; r++) {
      f = open_out(sub, runs[r]);
      for (int i = 0; i < 100; i++) put(f, "y", i, 2.5 * i);
      fclose(f);
    }
  }
  /* x[c] + x[c + 1] (the last column doubled) grows along each row: its argmax is column 99. */
  f = open_out(sub, "good_clamped_neighbour");
  for (int r = 0; r < 3; r++) put(f, "out", r, 99);
  fclose(f);
  /* The largest of each block of 64 of x[i] = i, n = 100: the block's last element. */
  f = open_out(sub, "good_clamped_tie_break");
  put(f, "out_v", 0, 63);
  put(f, "out_v", 1, 99);
  put(f, "out_i", 0, 63);
  put(f, "out_i", 1, 99);
  fclose(f);

  /* The kernel file another file includes and instantiates: 100 floats x[i] = i doubled. */
  snprintf(sub, sizeof sub, "%s/real/bounds-guard/included-impl", dir);
  const char *const widened[] = {"good_widen_impl", "bad_widen_one_impl.f4"};
  for (int k = 0; k < 2; k++) {
    f = open_out(sub, widened[k]);
    for (int i = 0; i < 100; i++) put(f, "y", i, 2.0 * i);
    fclose(f);
  }
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
  /* Each value halved while it is at least 1, over 3 rounds. */
  f = open_out(sub, "good_halve_rounds_break");
  for (int i = 0; i < 128; i++) {
    double v = i;
    for (int r = 0; r < 3; r++)
      if (v >= 1) v *= 0.5;
    put(f, "v", i, v);
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
  /* Each of 2 rows of 64 values x[i] = i reversed. */
  f = open_out(sub, "good_struct_field_tile");
  for (int i = 0; i < 128; i++) put(f, "out", i, (i / 64) * 64 + 63 - i % 64);
  fclose(f);
  f = open_out(sub, "good_simd_pair_exchange");
  for (int k = 0; k < 50; k++) put(f, "out", k, 2.0 * k + (2.0 * k + 1));
  fclose(f);
  /* Per thread of a row of 80 values x[i] = 80 * row + i: the sum of its lane's values in its
   * SIMD group's half of each 64-block, up to the row's end. */
  f = open_out(sub, "good_last_trip_break");
  for (int r = 0; r < 2; r++)
    for (int t = 0; t < 64; t++) {
      int part = (t / 32 % 2) * 32, lane = t % 32;
      double s = 0;
      for (int j = 0; j < 80; j += 64) {
        if (80 - j - part <= 0) break;
        if (j + part + lane < 80) s += 80 * r + j + part + lane;
      }
      put(f, "out", r * 64 + t, s);
    }
  fclose(f);
  /* Each block of 64 of x[i] = i (n = 100) reversed in place: the last block holds 36. */
  f = open_out(sub, "good_vector_block_span");
  for (int b = 0; b < 2; b++) {
    int start = 64 * b, len = 100 - start < 64 ? 100 - start : 64;
    for (int l = 0; l < len; l++) put(f, "y", start + l, start + len - 1 - l);
  }
  fclose(f);
  f = open_out(sub, "good_tiled_loop_trip");
  for (int r = 0; r < 100; r++) {
    double s = 0;
    for (int j = 0; j < 72; j++) s += (double)(100 * j + r) * j;
    put(f, "y", r, s);
  }
  fclose(f);

  /* The core classes of issue 2 (shadowed counter, uniform through SIMD operations). */
  /* Four sums per 64-thread block of x[i] = i, element k of each thread's quad. */
  f = open_out(sub, "good_shadowed_counter");
  for (int g = 0; g < 2; g++)
    for (int k = 0; k < 4; k++) {
      double s = 0;
      for (int l = 0; l < 64; l++) s += (64 * g + l) * 4 + k;
      put(f, "out", 4 * g + k, s);
    }
  fclose(f);
  /* The values of a 64-block of x[i] = i before its first one above 40. */
  f = open_out(sub, "good_simd_min_slots");
  for (int g = 0; g < 2; g++) {
    double s = 0;
    for (int i = 64 * g; i < 64 * g + 64 && i <= 40; i++) s += i;
    put(f, "out", g, s);
  }
  fclose(f);
  /* Per 64-block of runs[i] = i, the sum of the lengths i / 8: every thread's run is live in
   * that many rounds, all of which the threadgroup-wide longest covers. */
  f = open_out(sub, "good_simd_max_own_fill");
  for (int g = 0; g < 2; g++) {
    double s = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) s += i / 8;
    put(f, "out", g, s);
  }
  fclose(f);
  /* Tiles of 32 of x[i] = i - 31: the first sums below zero and stays 0, the others reversed. */
  f = open_out(sub, "good_one_simd_group_any");
  for (int i = 0; i < 128; i++) put(f, "out", i, i < 32 ? 0 : (i / 32) * 32 + 31 - i % 32 - 31);
  fclose(f);
  /* Row sums of 3 rows of 256 of x[i] = i. */
  f = open_out(sub, "good_simd_group_eighth");
  for (int r = 0; r < 3; r++) {
    double s = 0;
    for (int i = 256 * r; i < 256 * r + 256; i++) s += i;
    put(f, "out", r, s);
  }
  fclose(f);

  /* threadgroup-race: 64-thread threadgroups over x[i] = i (unless said otherwise). */
  /* Issue 36.2, the thread index through a macro: the same block sums of 100 values; and sums
   * of 256-element blocks of 478 values x[i] = i. */
  f = open_out(sub, "good_macro_thread_guard");
  for (int g = 0; g < 4; g++) {
    double s = 0;
    for (int i = g * 32; i < g * 32 + 32 && i < 100; i++) s += i;
    put(f, "out", g, s);
  }
  fclose(f);
  f = open_out(sub, "good_macro_chunk_return");
  for (int g = 0; g < 2; g++) {
    double s = 0;
    for (int i = g * 256; i < g * 256 + 256 && i < 478; i++) s += i;
    put(f, "out", g, s);
  }
  fclose(f);
  /* Issue 36.10, independent divergences after an early return: 100 values x[i] = i in
   * threadgroups of 64, each folded in half (zero past the end), and each divided by its pair
   * partner's (zero for a zero partner). */
  f = open_out(sub, "good_return_then_branch");
  for (int i = 0; i < 100; i++) {
    int g = i / 64 * 64, l = i % 32;
    double a = g + l < 100 ? g + l : 0, b = g + l + 32 < 100 ? g + l + 32 : 0;
    put(f, "out", i, a + b);
  }
  fclose(f);
  f = open_out(sub, "good_return_then_return");
  for (int i = 0; i < 100; i++) {
    int p = i ^ 1;
    double partner = p < 100 ? p : 0;
    put(f, "out", i, partner == 0 ? 0.0 : i / partner);
  }
  fclose(f);
  /* Each of 2 threadgroups of 64 lengths i % 3 mirrored (the swizzle fixtures). */
  f = open_out(sub, "good_swizzle_lane_alias");
  for (int i = 0; i < 128; i++) put(f, "out", i, (i / 64 * 64 + 63 - i % 64) % 3);
  fclose(f);
  /* Lambdas handed to helper templates (msl2cl inlines both). pair_sums on 2 threadgroups of
   * 128 values i: the even threadgroup's pairs i + (127 - i), the odd one's untouched zeros. */
  f = open_out(sub, "good_lambda_helper_branch");
  for (int i = 0; i < 256; i++) put(f, "out", i, i < 128 ? 127.0 : 0.0);
  fclose(f);
  /* Functions defined in another file, given by the proof (<fixture>.defs.metal). 8 buckets,
   * bucket 0 of 3 entries: threadgroup 0 stores 3 + lid mirrored, threadgroup 1 (bucket 1,
   * empty) leaves. */
  f = open_out(sub, "good_external_helper_lane");
  for (int i = 0; i < 256; i++) put(f, "counts", i, i < 128 ? 3 + 127 - i : 0);
  fclose(f);
  /* A stored count of 100: 64 values i reversed; of 5000: none copied. */
  f = open_out(sub, "good_external_counter_compare.below");
  for (int i = 0; i < 64; i++) put(f, "out", i, 63 - i);
  fclose(f);
  f = open_out(sub, "good_external_counter_compare.above");
  for (int i = 0; i < 64; i++) put(f, "out", i, 0);
  fclose(f);
  /* Block 0 of 5 elements: w[i] = i mirrored, times 5; block 1 empty, its zeros untouched. */
  f = open_out(sub, "good_external_out_reference");
  for (int i = 0; i < 128; i++) put(f, "vals", i, i < 64 ? 5.0 * (63 - i) : 0.0);
  fclose(f);
  /* n = 40 values i in threadgroups of 64: mirrored (0 where the mirror is past n) when fast,
   * halved when not. */
  f = open_out(sub, "good_lambda_external_dispatch.fast");
  for (int i = 0; i < 40; i++) put(f, "out", i, 63 - i < 40 ? 63 - i : 0);
  fclose(f);
  f = open_out(sub, "good_lambda_external_dispatch.slow");
  for (int i = 0; i < 40; i++) put(f, "out", i, 0.5 * i);
  fclose(f);
  /* 100 values i reversed in threadgroups of 64 (a zero where the mirrored place is past the
   * end), scaled by 2 and as they are. */
  snprintf(sub, sizeof sub, "%s/barrier-divergence/header-dispatch", dir);
  const char *const reversed[] = {"good_flag_dispatch_scaled", "good_plain_lambda_runner"};
  for (int k = 0; k < 2; k++) {
    f = open_out(sub, reversed[k]);
    for (int i = 0; i < 100; i++) {
      int j = i / 64 * 64 + 63 - i % 64;
      put(f, "out", i, (j < 100 ? j : 0) * (k == 0 ? 2.0 : 1.0));
    }
    fclose(f);
  }
  /* Kernels with a local header (msl2cl joins it): 100 values x[i] = i in threadgroups of 64,
   * each in-range one made the sum of its threadgroup's first four; 64 values 0.001 i, the
   * SIMD group reading in[0..31] storing its total, the other leaving with its total over 1. */
  snprintf(sub, sizeof sub, "%s/barrier-divergence/header-macro", dir);
  f = open_out(sub, "good_header_unroll_macro");
  for (int i = 0; i < 100; i++) put(f, "x", i, 4.0 * (i / 64 * 64) + 6);
  fclose(f);
  snprintf(sub, sizeof sub, "%s/barrier-divergence/header-helper", dir);
  f = open_out(sub, "good_header_plain_helpers");
  for (int i = 0; i < 64; i++) {
    double total = 0;
    for (int j = 0; j < 32; j++) total += 0.001 * (i < 32 ? 32 + j : j);
    put(f, "out", i, total > 1.0 ? 0.0 : total);
  }
  fclose(f);
  snprintf(sub, sizeof sub, "%s/threadgroup-race", dir);
  /* Two tiles of 96 values x[i] = i, each reversed (threadgroups of 32). */
  f = open_out(sub, "good_slots_by_extent");
  for (int i = 0; i < 192; i++) put(f, "out", i, (i / 96) * 96 + 95 - i % 96);
  fclose(f);
  /* in[j] = (2j, 2j + 1): thread t of group g adds both halves of its mirror j = 32g + 31 - t. */
  f = open_out(sub, "good_slots_max_total");
  for (int i = 0; i < 64; i++) put(f, "out", i, 4.0 * ((i / 32) * 32 + 31 - i % 32) + 1);
  fclose(f);
  /* Each of 2 rows of 64 values x[i] = i reversed, read before ten stages of helpers. */
  f = open_out(sub, "good_deep_helper_barrier");
  for (int i = 0; i < 128; i++) put(f, "out", i, (i / 64) * 64 + 63 - i % 64);
  fclose(f);
  /* Each block's mean and population variance. */
  f = open_out(sub, "good_helper_twice");
  for (int g = 0; g < 2; g++) {
    double m = 0, v = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) m += i / 64.0;
    for (int i = 64 * g; i < 64 * g + 64; i++) v += (i - m) * (i - m) / 64.0;
    put(f, "stats", 2 * g, m);
    put(f, "stats", 2 * g + 1, v);
  }
  fclose(f);
  /* The same statistics, through a helper that declares its own scratch. */
  f = open_out(sub, "good_helper_own_scratch_twice");
  for (int g = 0; g < 2; g++) {
    double m = 0, v = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) m += i / 64.0;
    for (int i = 64 * g; i < 64 * g + 64; i++) v += (i - m) * (i - m) / 64.0;
    put(f, "stats", 2 * g, m);
    put(f, "stats", 2 * g + 1, v);
  }
  fclose(f);
  /* Thread lid of block g: column lid / 8 of row g * 8 + lid % 8, summed over the two steps. */
  f = open_out(sub, "good_loader_struct_refill");
  for (int i = 0; i < 128; i++) {
    int g = i / 64, lid = i % 64, row = g * 8 + lid % 8;
    put(f, "out", i, (row * 16 + lid / 8) + (row * 16 + 8 + lid / 8));
  }
  fclose(f);
  /* The squares of the neighbour's four floats (the next lid, wrapping in the block). */
  f = open_out(sub, "good_vector_store_cast");
  for (int i = 0; i < 128; i++) {
    int nb = (i / 64) * 64 + (i % 64 + 1) % 64;
    double e = 0;
    for (int k = 0; k < 4; k++) e += (4.0 * nb + k) * (4.0 * nb + k);
    put(f, "out", i, e);
  }
  fclose(f);
  /* Each value less its block's mean. */
  f = open_out(sub, "good_zero_after_mean");
  for (int g = 0; g < 2; g++) {
    double m = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) m += i / 64.0;
    for (int i = 64 * g; i < 64 * g + 64; i++) put(f, "out", i, i - m);
  }
  fclose(f);
  f = open_out(sub, "good_tree_no_step_barrier");
  for (int g = 0; g < 2; g++) {
    double s = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) s += i;
    put(f, "out", g, s);
  }
  fclose(f);
  /* Over rounds 3, 2, 1: each thread's neighbour in its block (the next lid, wrapping) times the
   * round, summed: 6 times the neighbour's value. */
  f = open_out(sub, "good_rotate_rounds");
  for (int i = 0; i < 128; i++) put(f, "out", i, 6.0 * (64 * (i / 64) + (i % 64 + 1) % 64));
  fclose(f);
  /* Inclusive prefix sums, restarting at each block. */
  f = open_out(sub, "good_scan_prefix");
  {
    double s = 0;
    for (int i = 0; i < 128; i++) {
      s = i % 64 ? s + i : i;
      put(f, "out", i, s);
    }
  }
  fclose(f);
  /* Every thread of a row of 150 holds the row's sum, each chunk staged once. */
  const char *const row_sums[] = {"good_barrier_under_loop_test", "good_barrier_under_for_test"};
  for (int k = 0; k < 2; k++) {
    f = open_out(sub, row_sums[k]);
    for (int i = 0; i < 128; i++) put(f, "out", i, 150.0 * 150 * (i / 64) + 149.0 * 150 / 2);
    fclose(f);
  }
  /* Per row of 256, per chunk of 64: the sum of the chunks' last elements so far. */
  f = open_out(sub, "good_chunk_carry");
  for (int g = 0; g < 2; g++) {
    double t = 0;
    for (int k = 0; k < 4; k++) {
      t += 256 * g + 64 * k + 63;
      for (int i = 0; i < 64; i++) put(f, "out", 256 * g + 64 * k + i, t);
    }
  }
  fclose(f);
  /* C = A B for 16 x 16 A and B, both A[i] = B[i] = i (row-major). */
  f = open_out(sub, "good_gemm_refill");
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++) {
      double s = 0;
      for (int k = 0; k < 16; k++) s += (double)(16 * r + k) * (16 * k + c);
      put(f, "C", 16 * r + c, s);
    }
  fclose(f);
  /* The same product, by 8 x 8 SIMD-group matrices. */
  f = open_out(sub, "good_gemm_store_phase");
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++) {
      double s = 0;
      for (int k = 0; k < 16; k++) s += (double)(16 * r + k) * (16 * k + c);
      put(f, "C", 16 * r + c, s);
    }
  fclose(f);
  f = open_out(sub, "good_own_slot");
  for (int i = 0; i < 128; i++) put(f, "out", i, (0.5 * i + 2.0) * i - 1.0);
  fclose(f);
  /* Block 0 scaled by 2, block 1 by 0.5. */
  f = open_out(sub, "good_lid0_broadcast");
  for (int i = 0; i < 128; i++) put(f, "out", i, i * (i < 64 ? 2.0 : 0.5));
  fclose(f);
  /* x[i] = i - 100 over 4 blocks: a block with a negative value is zeroed, the others copied. */
  f = open_out(sub, "good_same_value");
  for (int g = 0; g < 4; g++) {
    int neg = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) neg |= i - 100 < 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) put(f, "out", i, neg ? 0.0 : i - 100.0);
  }
  fclose(f);
  /* The positive values of each block of x[i] = i - 20. */
  f = open_out(sub, "good_atomic_counter");
  for (int g = 0; g < 2; g++) {
    int n = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) n += i - 20 > 0;
    put(f, "counts", g, n);
  }
  fclose(f);

  /* The lowest index above 100 per block of x[i] = i: none in the first (all ones), 37 in the
   * second (x = 101). */
  f = open_out(sub, "good_last_hit_scalar");
  put(f, "hits", 0, 4294967295.0);
  put(f, "hits", 1, 37);
  fclose(f);
  /* Each value over its block's root mean square. */
  f = open_out(sub, "good_sum_squares_scalar");
  for (int g = 0; g < 2; g++) {
    double ss = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) ss += (double)i * i;
    for (int i = 64 * g; i < 64 * g + 64; i++) put(f, "out", i, i / sqrt(ss / 64.0 + 1e-6));
  }
  fclose(f);
  /* Each value times the first of its run of 16. */
  f = open_out(sub, "good_bucket_slot");
  for (int i = 0; i < 128; i++) put(f, "out", i, (double)i * (i / 16 * 16));
  fclose(f);
  /* Each value less the first of its block. */
  f = open_out(sub, "good_tile4d_corner");
  for (int i = 0; i < 128; i++) put(f, "out", i, i - i / 64 * 64);
  fclose(f);
  /* Each value times the weight of lane 31 - lane: 1 / (32 - lane). */
  f = open_out(sub, "good_lane_table");
  for (int i = 0; i < 128; i++) put(f, "out", i, i / (32.0 - i % 32));
  fclose(f);
  /* Each value over its block's first plus one. */
  f = open_out(sub, "good_shared_reciprocal");
  for (int i = 0; i < 128; i++) put(f, "out", i, i / (i / 64 * 64 + 1.0));
  fclose(f);
  /* Each square over its block's sum of squares. */
  f = open_out(sub, "good_simd_slot_reuse");
  for (int g = 0; g < 2; g++) {
    double ss = 0;
    for (int i = 64 * g; i < 64 * g + 64; i++) ss += (double)i * i;
    for (int i = 64 * g; i < 64 * g + 64; i++) put(f, "out", i, (double)i * i / ss);
  }
  fclose(f);

  /* The 16 levels (c % 16 - 8) / 8 of each code c = i, read from entry c % 32 of the table. */
  f = open_out(sub, "good_lane_table_lookup");
  for (int i = 0; i < 128; i++) put(f, "out", i, (i % 32 % 16 - 8) / 8.0);
  fclose(f);
  /* Twice the value at the transposed lane of each SIMD group over the group's sum. */
  f = open_out(sub, "good_simd_scratch_transpose");
  for (int i = 0; i < 128; i++) {
    int k = i / 32, l = i % 32;
    double s = 32.0 * 32 * k + 496;
    put(f, "out", i, 2.0 * (32 * k + l % 4 * 8 + l / 4) / s);
  }
  fclose(f);

  /* Each value over its SIMD group's sum plus one, times the sum of those over the group. */
  /* Each key's sum of q[l] * k = 0 + 1 + ... + 31 = 496, scaled by the weight of lane 8 * c + 4
   * of the SIMD group. */
  f = open_out(sub, "good_keys_after_shuffle");
  for (int g = 0; g < 4; g++)
    for (int c = 0; c < 4; c++) put(f, "out", g * 4 + c, 496.0 * (g * 32 + 8 * c + 4));
  fclose(f);
  f = open_out(sub, "good_simd_own_slot");
  for (int k = 0; k < 4; k++) {
    double s = 0, t = 0;
    for (int i = 32 * k; i < 32 * k + 32; i++) s += i;
    for (int i = 32 * k; i < 32 * k + 32; i++) t += i / (s + 1.0);
    for (int i = 32 * k; i < 32 * k + 32; i++) put(f, "out", i, i / (s + 1.0) * t);
  }
  fclose(f);

  /* Issue 36.2, the thread index through a macro: each block of 64 of x[i] = i shifted one
   * place left at half its value, a zero past the block's end; 8 x 8 tiles of x[i] = i made
   * symmetric, (A + A^T) / 2. */
  f = open_out(sub, "good_macro_thread_index");
  for (int i = 0; i < 128; i++) put(f, "out", i, i % 64 == 63 ? 0.0 : 0.5 * (i + 1));
  fclose(f);
  f = open_out(sub, "good_macro_tile_symmetrize");
  for (int t = 0; t < 4; t++)
    for (int y = 0; y < 8; y++)
      for (int x = 0; x < 8; x++)
        put(f, "out", t * 64 + y * 8 + x, 0.5 * ((t * 64 + y * 8 + x) + (t * 64 + x * 8 + y)));
  fclose(f);
  /* Each SIMD group's votes (all zero, any negative) on its 32 values of the .sim (zeros; ones
   * and a -1; ones; twos and a -3), each thread given those of the group of its lane's parity in
   * its threadgroup. */
  f = open_out(sub, "good_simd_vote_slot");
  for (int i = 0; i < 128; i++) {
    int g = i / 64 * 2 + i % 32 % 2;
    put(f, "out", 2 * i, g == 0);
    put(f, "out", 2 * i + 1, g == 1 || g == 3);
  }
  fclose(f);
  /* Issue 36.3, an index loaded from memory: the keys i & 15 of each block of 64 counted per
   * bucket, 4 each; codebook entry (i & 15) / 2 of each code i; each block of x[i] = i reversed
   * through its slot table (63 - lid). */
  f = open_out(sub, "good_bucket_count_loaded");
  for (int i = 0; i < 32; i++) put(f, "counts", i, 4);
  fclose(f);
  f = open_out(sub, "good_codebook_gather");
  for (int i = 0; i < 128; i++) put(f, "out", i, (i & 15) * 0.5);
  fclose(f);
  f = open_out(sub, "good_slot_table_pairs");
  for (int i = 0; i < 128; i++) put(f, "out", i, i / 64 * 64 + 63 - i % 64);
  fclose(f);
  snprintf(sub, sizeof sub, "%s/uncoalesced-access", dir);
  f = open_out(sub, "good_row_dot");
  for (int r = 0; r < 64; r++) put(f, "y", r, ramp_dot(40, r, 40));
  fclose(f);
  f = open_out(sub, "good_stride8_bias");
  for (int i = 0; i < 512; i++) put(f, "y", i, i + i % 8);
  fclose(f);
  f = open_out(sub, "good_float4_halves");
  for (int i = 0; i < 512; i++) put(f, "dst", i, 2.0 * i);
  fclose(f);
  f = open_out(sub, "good_dequant_chunk");
  for (int p = 0; p < 256; p++)
    for (int h = 0; h < 2; h++) put(f, "out", 2 * p + h, (((p >> (4 * h)) & 15) - 8) * 0.5);
  fclose(f);
  f = open_out(sub, "good_same_index");
  for (int r = 0; r < 32; r++)
    for (int c = 0; c < 64; c++) put(f, "out", r * 64 + c, (r * 64 + c) * (1.0 + (r * 72 + c)));
  fclose(f);
  f = open_out(sub, "good_transpose");
  for (int x = 0; x < 64; x++)
    for (int y = 0; y < 48; y++) put(f, "out", x * 48 + y, y * 64 + x);
  fclose(f);
  f = open_out(sub, "good_runtime_row_length");
  for (int i = 0; i < 2560; i++) put(f, "out", i, 2.0 * i);
  fclose(f);
  /* Squared norms of 64 points whose coordinates are all 2 (the record and the plane layouts
   * read the same values). */
  f = open_out(sub, "good_record_fields_runtime_stride");
  for (int i = 0; i < 64; i++) put(f, "out", i, 12.0);
  fclose(f);
  return 0;
}
