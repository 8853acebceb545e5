/* Benchmark helpers for tests/bench.sh (make bench).
 *
 *   bench synth FILE [ROUNDS]   per-file time of the whole lint pipeline against a bare
 *                               tree-sitter-cpp parse of the same bytes, in one process, rounds
 *                               interleaved so machine noise hits both alike; the ratio of medians
 *   bench parse [-r R] [-p] FILE...
 *                               a bare tree-sitter parse of each file (the python grammar for .py,
 *                               cpp for everything else), read from disk like kernlint reads it;
 *                               -p prints each file's median wall time over R rounds (ms)
 *   bench exec -- ARGV...       run ARGV with its output thrown away and print
 *                               "CPU_S WALL_S MAXRSS_KB STATUS": user+sys time and peak memory
 *                               of the child (wait4), wall time around it */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/core/config.h"
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

static double kl_bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, kl_bench_cmp);
  return v[n / 2];
}

static int kl_bench_synth(int argc, char **argv) {
  if (argc < 1) {
    fprintf(stderr, "usage: bench synth FILE [ROUNDS]\n");
    return 2;
  }
  int rounds = argc > 1 ? atoi(argv[1]) : 50;
  if (rounds < 3) rounds = 3;
  struct kl_arena *keep = kl_arena_new();
  struct kl_source src;
  char err[256];
  if (kl_source_load(keep, argv[0], &src, err, sizeof err) != 0) {
    fprintf(stderr, "bench: %s: %s\n", argv[0], err);
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
      fprintf(stderr, "bench: %s: %s\n", argv[0], err);
      kl_arena_delete(a);
      break;
    }
    findings = diags.n;
    kl_arena_delete(a);
    double t2 = kl_bench_now();
    parse[r] = t1 - t0;
    lint[r] = t2 - t1;
  }
  double mp = kl_bench_median(parse, rounds), ml = kl_bench_median(lint, rounds);
  const char *base = strrchr(argv[0], '/');
  printf("%-22s %5u lines: lint %7.2f ms, bare parse %6.2f ms: %5.2fx  (%d rounds, %zu findings)\n",
         base ? base + 1 : argv[0], src.nlines, ml * 1e3, mp * 1e3, ml / mp, rounds, findings);
  free(parse);
  free(lint);
  kl_arena_delete(keep);
  return 0;
}

/* The whole file in malloc'd memory, or NULL. */
static char *kl_bench_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf;
  int rc = kl_source_read(f, 64 * 1024, &buf, len);
  fclose(f);
  return rc == 0 ? buf : NULL;
}

static int kl_bench_parse(int argc, char **argv) {
  int rounds = 1;
  bool per_file = false;
  int i = 0;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "-p")) {
      per_file = true;
    } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
      rounds = atoi(argv[++i]);
      if (rounds < 1) rounds = 1;
    } else {
      fprintf(stderr, "usage: bench parse [-r ROUNDS] [-p] FILE...\n");
      return 2;
    }
  }
  double *t = calloc((size_t)rounds, sizeof *t);
  for (; i < argc; i++) {
    size_t n = strlen(argv[i]);
    bool py = n > 3 && !strcmp(argv[i] + n - 3, ".py");
    for (int r = 0; r < rounds; r++) {
      double t0 = kl_bench_now();
      size_t len = 0;
      char *text = kl_bench_read(argv[i], &len);
      if (!text) {
        fprintf(stderr, "bench: %s: cannot read\n", argv[i]);
        break;
      }
      TSParser *p = ts_parser_new();
      ts_parser_set_language(p, py ? kl_dialect_python() : kl_dialect_cpp());
      TSTree *tree = ts_parser_parse_string(p, NULL, text, (uint32_t)len);
      ts_tree_delete(tree);
      ts_parser_delete(p);
      free(text);
      t[r] = kl_bench_now() - t0;
    }
    if (per_file) printf("%.3f\t%s\n", kl_bench_median(t, rounds) * 1e3, argv[i]);
  }
  free(t);
  return 0;
}

static int kl_bench_exec(int argc, char **argv) {
  if (argc > 0 && !strcmp(argv[0], "--")) {
    argc--;
    argv++;
  }
  if (argc < 1) {
    fprintf(stderr, "usage: bench exec -- ARGV...\n");
    return 2;
  }
  fflush(stdout);
  double t0 = kl_bench_now();
  pid_t pid = fork();
  if (pid < 0) {
    perror("bench: fork");
    return 2;
  }
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execvp(argv[0], argv);
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) < 0) {
    perror("bench: wait4");
    return 2;
  }
  double wall = kl_bench_now() - t0;
  double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  printf("%.4f %.4f %ld %d\n", cpu, wall, ru.ru_maxrss, code);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "synth")) return kl_bench_synth(argc - 2, argv + 2);
  if (argc >= 2 && !strcmp(argv[1], "parse")) return kl_bench_parse(argc - 2, argv + 2);
  if (argc >= 2 && !strcmp(argv[1], "exec")) return kl_bench_exec(argc - 2, argv + 2);
  fprintf(stderr,
          "usage: bench synth FILE [ROUNDS] | parse [-r R] [-p] FILE... | exec -- ARGV...\n");
  return 2;
}
