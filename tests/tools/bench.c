/* Benchmark: per-file time of the whole lint pipeline against a bare tree-sitter-cpp parse of the
 * same bytes. The two are interleaved in one run so machine noise hits both alike; the figure
 * that matters is the ratio of medians.  Usage: bench FILE [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "analyzer/config.h"
#include "analyzer/engine.h"
#include "grammar/dialect.h"

static double kl_bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int kl_bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench FILE [ROUNDS]\n");
    return 2;
  }
  int rounds = argc > 2 ? atoi(argv[2]) : 50;
  if (rounds < 3) rounds = 3;
  struct kl_arena *keep = kl_arena_new();
  struct kl_source src;
  char err[256];
  if (kl_source_load(keep, argv[1], &src, err, sizeof err) != 0) {
    fprintf(stderr, "bench: %s: %s\n", argv[1], err);
    kl_arena_delete(keep);
    return 2;
  }
  struct kl_settings s;
  kl_config_defaults(&s);
  double *parse = calloc((size_t)rounds, sizeof *parse);
  double *lint = calloc((size_t)rounds, sizeof *lint);
  size_t findings = 0;
  for (int r = 0; r < rounds; r++) {
    double t0 = kl_bench_now();
    TSParser *p = ts_parser_new();
    ts_parser_set_language(p, kl_dialect_cpp());
    TSTree *t = ts_parser_parse_string(p, NULL, src.text, src.len);
    ts_tree_delete(t);
    ts_parser_delete(p);
    double t1 = kl_bench_now();
    /* The lint side starts from the file's bytes too: validation, line index, dialect, model,
     * rules, suppressions. */
    struct kl_arena *a = kl_arena_new();
    struct kl_source s2;
    struct kl_diag_list diags;
    kl_diag_list_init(&diags, a);
    if (kl_source_from_memory(a, src.path, src.text, src.len, &s2, err, sizeof err) != 0 ||
        kl_engine_lint(a, &s2, &s, NULL, &diags, err, sizeof err) != 0) {
      fprintf(stderr, "bench: %s: %s\n", argv[1], err);
      kl_arena_delete(a);
      break;
    }
    findings = diags.n;
    kl_arena_delete(a);
    double t2 = kl_bench_now();
    parse[r] = t1 - t0;
    lint[r] = t2 - t1;
  }
  qsort(parse, (size_t)rounds, sizeof *parse, kl_bench_cmp);
  qsort(lint, (size_t)rounds, sizeof *lint, kl_bench_cmp);
  double mp = parse[rounds / 2], ml = lint[rounds / 2];
  printf("file: %s (%u lines, %u bytes), %d rounds, %zu findings\n", argv[1], src.nlines, src.len,
         rounds, findings);
  printf("bare tree-sitter parse: median %.3f ms\n", mp * 1e3);
  printf("kernlint pipeline:      median %.3f ms\n", ml * 1e3);
  printf("ratio lint/parse:       %.2fx\n", ml / mp);
  free(parse);
  free(lint);
  kl_arena_delete(keep);
  return 0;
}
