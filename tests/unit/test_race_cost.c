/* The race analysis's cost, counted rather than timed: valuations of the symbols tried (struct
 * kl_facts's race_valuations, analyzer/passes/tgrace.h over the lowered kernels) on the
 * fuzzer's slow inputs (tests/fuzz/fuzz_engine/race-*, one control byte then the file) and on
 * generated kernels of their class, threadgroup accesses with no barrier between them that a
 * loop's passes pair again and again. Each must stay well inside the budget of 65,536 valuations
 * a unit has (which they all used to exhaust), and grow no faster than the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/passes/facts.h"
#include "analyzer/input/source.h"

#include "tests/unit/kl_test.h"

/* Well inside the unit's budget: the inputs below spent all of it before pairs were remembered. */
enum { KL_COST_MAX_VALUATIONS = 16384 };

struct kl_cost {
  size_t valuations, asked, races;
  bool ok;
};

static struct kl_cost cost_of(const char *path, const char *text, size_t len) {
  struct kl_cost c = {0};
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_unit u;
  char err[256];
  if (kl_source_from_memory(a, path, text, len, &src, err, sizeof err) != 0 ||
      kl_dialect_parse(a, &src, src.text, src.len, NULL, ".", &u, err, sizeof err) != 0) {
    printf("FAIL setup %s: %s\n", path, err);
    failures++;
    kl_arena_delete(a);
    return c;
  }
  struct kl_model m;
  kl_model_build(a, &u, &m);
  struct kl_facts fa;
  kl_facts_compute(a, &m, NULL, 0, NULL, 0, NULL, &fa);
  c.valuations = fa.race_valuations;
  c.asked = fa.race_asked;
  c.races = fa.nraces;
  c.ok = true;
  kl_dialect_release(&u);
  kl_arena_delete(a);
  return c;
}

/* The fuzzer's inputs, read as the harness reads them with control byte 0 (a .metal file). */
static void test_fuzz_inputs(void) {
  static const char *const names[] = {
      "tests/fuzz/fuzz_engine/race-pairs-under-error-recovered-loops",
      "tests/fuzz/fuzz_engine/race-valuations-under-error-recovered-loops",
      "tests/fuzz/fuzz_engine/race-pairs-asked-again-under-error-recovered-loops",
  };
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    FILE *f = fopen(names[i], "rb");
    char buf[16384];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    if (n < 2) {
      check(names[i], false, "cannot read it (run from the repository's root)");
      continue;
    }
    struct kl_cost c = cost_of("k.metal", buf + 1, n - 1);
    check(names[i], c.ok && c.valuations <= KL_COST_MAX_VALUATIONS && c.races > 0,
          "%zu valuations (at most %d), %zu pairs decided, %zu races", c.valuations,
          KL_COST_MAX_VALUATIONS, c.asked, c.races);
  }
}

/* A kernel of n guarded updates of each thread's own element of threadgroup memory in one loop,
 * with no barrier: every pair is asked on every pass, and none can meet. */
static char *own_updates(int n) {
  size_t cap = 512 + (size_t)n * 96, len = 0;
  char *t = malloc(cap);
  len += (size_t)snprintf(t + len, cap - len,
                          "kernel void k(threadgroup float *t [[threadgroup(0)]],\n"
                          "  uint lid [[thread_position_in_threadgroup]],\n"
                          "  constant uint &a [[buffer(0)]], constant uint &b [[buffer(1)]],\n"
                          "  uint m [[threads_per_threadgroup]]) {\n"
                          "  for (uint s = m / 2; s > 0; s >>= 1) {\n");
  for (int i = 1; i <= n; i++)
    len += (size_t)snprintf(t + len, cap - len,
                            "    if (lid < s + a * %d) { t[lid + b] = t[lid + b] + %d.0f; }\n", i,
                            i);
  snprintf(t + len, cap - len, "  }\n}\n");
  return t;
}

/* Loops nested d deep, each reading a neighbour's element and writing its own with no barrier:
 * every level races, and a loop's passes ask each pair again under every enclosing pass. */
static char *nested_loops(int d) {
  size_t cap = 512 + (size_t)d * 96, len = 0;
  char *t = malloc(cap);
  len += (size_t)snprintf(t + len, cap - len,
                          "kernel void k(threadgroup float *t [[threadgroup(0)]],\n"
                          "  uint lid [[thread_position_in_threadgroup]],\n"
                          "  constant uint &n [[buffer(0)]], device float *o [[buffer(1)]]) {\n"
                          "  float acc = 0.0f;\n");
  for (int i = 1; i <= d; i++)
    len += (size_t)snprintf(t + len, cap - len,
                            "  for (uint i%d = 0; i%d < n; i%d++) {\n"
                            "    acc += t[lid + i%d]; t[lid] = acc;\n",
                            i, i, i, i);
  for (int i = 1; i <= d; i++) len += (size_t)snprintf(t + len, cap - len, "  }\n");
  snprintf(t + len, cap - len, "  o[lid] = acc;\n}\n");
  return t;
}

static void test_generated(void) {
  char *t8 = own_updates(8), *t64 = own_updates(64);
  struct kl_cost c8 = cost_of("own8.metal", t8, strlen(t8));
  struct kl_cost c64 = cost_of("own64.metal", t64, strlen(t64));
  check("own-updates", c8.ok && c64.ok && c8.valuations == 0 && c64.valuations == 0 &&
                           c8.races == 0 && c64.races == 0,
        "8 updates: %zu valuations, %zu races; 64: %zu, %zu", c8.valuations, c8.races,
        c64.valuations, c64.races);
  free(t8);
  free(t64);
  char *n6 = nested_loops(6), *n12 = nested_loops(12);
  struct kl_cost d6 = cost_of("nest6.metal", n6, strlen(n6));
  struct kl_cost d12 = cost_of("nest12.metal", n12, strlen(n12));
  /* Twice the loops, twice the text: the valuations may grow with the pairs that race (about
   * twice as many), not with the passes that ask them. */
  check("nested-loops", d6.ok && d12.ok && d12.valuations <= 3 * d6.valuations &&
                            d12.valuations <= KL_COST_MAX_VALUATIONS && d12.races >= 2 * d6.races,
        "6 deep: %zu valuations, %zu races; 12 deep: %zu, %zu", d6.valuations, d6.races,
        d12.valuations, d12.races);
  free(n6);
  free(n12);
}

int main(void) {
  test_fuzz_inputs();
  test_generated();
  return failures ? 1 : 0;
}
