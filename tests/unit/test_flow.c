/* Unit tests for the analyses: uniformity (through the barrier facts of the lowered kernels,
 * analyzer/passes/facts.h), guards and evidence, and the affine forms themselves (lane strides
 * are the device-access table's: test_access.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/passes/affine.h"
#include "analyzer/passes/facts.h"
#include "analyzer/passes/flow.h"
#include "analyzer/input/source.h"

#include "tests/unit/kl_test.h"

/* One kernel source analysed end to end, all in one arena. */
struct kl_fx {
  struct kl_arena *a;
  struct kl_source src;
  struct kl_unit unit;
  struct kl_model model;
  struct kl_flow flow;
  struct kl_facts facts; /* every kernel lowered: the barriers' facts */
};

static const char *const kl_prelude = "#include <metal_stdlib>\nusing namespace metal;\n";

static void fx_open(struct kl_fx *x, const char *body) {
  x->a = kl_arena_new();
  char *text = kl_arena_printf(x->a, "%s%s", kl_prelude, body);
  char err[256];
  if (kl_source_from_memory(x->a, "t.metal", text, strlen(text), &x->src, err, sizeof err) != 0 ||
      kl_dialect_parse(x->a, &x->src, x->src.text, x->src.len, NULL, ".", &x->unit, err,
                       sizeof err) != 0) {
    printf("FAIL setup: %s\n", err);
    failures++;
    return;
  }
  kl_model_build(x->a, &x->unit, &x->model);
  kl_flow_analyze(x->a, &x->model, NULL, 0, NULL, 0, NULL, &x->flow);
  kl_facts_compute(x->a, &x->model, NULL, 0, NULL, 0, NULL, NULL, &x->facts);
}

static void fx_close(struct kl_fx *x) {
  kl_dialect_release(&x->unit);
  kl_arena_delete(x->a);
}

/* Line (1-based, counting the two-line prelude) of a node. */
static uint32_t fx_line(struct kl_fx *x, TSNode n) {
  uint32_t line, col;
  kl_source_position(&x->src, kl_offmap_to_file(&x->unit.map, ts_node_start_byte(n)), &line, &col);
  return line;
}

static const struct kl_facts_barrier *fx_barrier(struct kl_fx *x, uint32_t line) {
  for (size_t i = 0; i < x->facts.nbarriers; i++)
    if (fx_line(x, x->facts.barriers[i].call) == line) return &x->facts.barriers[i];
  return NULL;
}

/* The last access recorded on a line: the outermost, since an index is evaluated first. */
static const struct kl_flow_access *fx_access(struct kl_fx *x, uint32_t line) {
  const struct kl_flow_access *found = NULL;
  for (size_t i = 0; i < x->flow.naccesses; i++)
    if (fx_line(x, x->flow.accesses[i].node) == line) found = &x->flow.accesses[i];
  return found;
}

/* A barrier on `line` is reached under control of scope `ctrl`, for cause `cause`. */
static void expect_barrier(const char *name, const char *body, uint32_t line, enum kl_scope ctrl,
                           enum kl_divergence_kind cause, const char *var) {
  struct kl_fx x;
  fx_open(&x, body);
  const struct kl_facts_barrier *b = fx_barrier(&x, line);
  if (!b) {
    check(name, false, "no barrier found on line %u", line);
  } else {
    bool diverges = b->ctrl > b->fn->barrier_scope;
    check(name,
          b->ctrl == ctrl && (!diverges || b->cause == cause) &&
              (!var || (b->cause_var && !strcmp(b->cause_var, var))),
          "ctrl %s cause %d var %s; want ctrl %s cause %d var %s", kl_msl_scope_name(b->ctrl),
          (int)b->cause, b->cause_var ? b->cause_var : "-", kl_msl_scope_name(ctrl), (int)cause,
          var ? var : "-");
  }
  fx_close(&x);
}

/* The device access on `line` is (un)guarded, with or without evidence (b). */
static void expect_guard(const char *name, const char *body, uint32_t line, bool unguarded,
                         bool evidence) {
  struct kl_fx x;
  fx_open(&x, body);
  const struct kl_flow_access *a = fx_access(&x, line);
  if (!a) {
    check(name, false, "no access found on line %u", line);
  } else {
    check(name, a->unguarded == unguarded && (!unguarded || a->evidence == evidence),
          "unguarded %d evidence %d; want %d %d", a->unguarded, a->evidence, unguarded, evidence);
  }
  fx_close(&x);
}

#define KSIG                                                                                       \
  "kernel void k(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]],\n"                 \
  "  threadgroup float* sh [[threadgroup(0)]], uint gid [[thread_position_in_grid]],\n"            \
  "  uint lid [[thread_position_in_threadgroup]], uint tgid [[threadgroup_position_in_grid]],\n"   \
  "  uint sgid [[simdgroup_index_in_threadgroup]], uint lane [[thread_index_in_simdgroup]],\n"     \
  "  uint tg [[threads_per_threadgroup]], uint2 g2 [[thread_position_in_grid]]) {\n"
/* The body's first line is line 8 of the file (2 prelude lines, 5 signature lines). */

/* A kernel whose body is inner (lines) inside depth uniform ifs. */
static char *deep_body(struct kl_arena *a, const char *const *inner, size_t n, int depth) {
  char *body = kl_arena_printf(a, "%s", KSIG);
  for (int i = 0; i < depth; i++) body = kl_arena_printf(a, "%s  if (n > %d) {\n", body, i);
  for (size_t i = 0; i < n; i++) body = kl_arena_printf(a, "%s  %s\n", body, inner[i]);
  for (int i = 0; i < depth; i++) body = kl_arena_printf(a, "%s  }\n", body);
  return kl_arena_printf(a, "%s}\n", body);
}

/* What a barrier's finding says, with lines relative to the start of inner. */
static char *deep_says(struct kl_arena *a, struct kl_fx *x, const struct kl_facts_barrier *b,
                       int depth) {
  int cause = kl_node_null(b->cause_node) ? -1 : (int)fx_line(x, b->cause_node) - depth;
  int exit = kl_node_null(b->exit_stmt) ? -1 : (int)fx_line(x, b->exit_stmt) - depth;
  return kl_arena_printf(a, "line %d ctrl %s cause %d at %d var %s back %d exit %d",
                         (int)fx_line(x, b->call) - depth, kl_msl_scope_name(b->ctrl),
                         (int)b->cause, cause, b->cause_var ? b->cause_var : "-", (int)b->back_edge,
                         exit);
}

/* Every barrier of inner, in order, as deep_says gives it. */
static char *deep_all(struct kl_arena *a, const char *const *inner, size_t n, int depth) {
  struct kl_fx x;
  fx_open(&x, deep_body(a, inner, n, depth));
  char *all = "";
  for (size_t i = 0; i < x.facts.nbarriers; i++)
    all = kl_arena_printf(a, "%s%s\n", all, deep_says(a, &x, &x.facts.barriers[i], depth));
  fx_close(&x);
  return all;
}

/* Control nested however deep says of a barrier what it says at the top of the body: the flow
 * once kept 64 constructs, and past them lost enclosing branches, the loop a break leaves, or
 * kept a closed branch as the cause. want is the top-level verdict, checked first. */
static void expect_deep(const char *name, const char *const *inner, size_t n, const char *want) {
  struct kl_arena *a = kl_arena_new();
  char *top = deep_all(a, inner, n, 0);
  check(kl_arena_printf(a, "%s-top", name), !strcmp(top, want), "got\n%swant\n%s", top, want);
  static const int depths[] = {62, 63, 64, 65, 70, 140};
  for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
    char *deep = deep_all(a, inner, n, depths[d]);
    check(kl_arena_printf(a, "%s-depth-%d", name, depths[d]), !strcmp(deep, top),
          "got\n%sat the top\n%s", deep, top);
  }
  kl_arena_delete(a);
}

static void test_deep_control(void) {
  /* Line numbers in the verdicts count from 8, the body's first line. */
  static const char *const closed_inner[] = {
      "if (lid < 5) {",
      "if (n > 100) { if (n > 101) { if (n > 102) { x[0] = 1.0f; } } }",
      "threadgroup_barrier(mem_flags::mem_threadgroup);",
      "}",
      "threadgroup_barrier(mem_flags::mem_threadgroup);",
  };
  char want[256];
  snprintf(want, sizeof want,
           "line 10 ctrl thread cause %d at 8 var lid back 0 exit -1\n"
           "line 12 ctrl uniform cause %d at -1 var - back 0 exit -1\n",
           (int)KL_DIV_BRANCH, (int)KL_DIV_NONE);
  expect_deep("deep-closed-inner", closed_inner, 5, want);
  static const char *const brk[] = {
      "for (uint k = 0; k < n; ++k) {",
      "if (lid < k) break;",
      "threadgroup_barrier(mem_flags::mem_threadgroup);",
      "}",
  };
  struct kl_arena *a = kl_arena_new();
  struct kl_fx x;
  fx_open(&x, deep_body(a, brk, 4, 0));
  const struct kl_facts_barrier *b = fx_barrier(&x, 10);
  check("deep-break-diverges", b && b->ctrl == KL_SCOPE_THREAD && b->cause != KL_DIV_NONE,
        "the barrier after a break on lid is not flagged at the top");
  snprintf(want, sizeof want, "%s", b ? deep_says(a, &x, b, 0) : "");
  fx_close(&x);
  expect_deep("deep-break", brk, 4, kl_arena_printf(a, "%s\n", want));
  kl_arena_delete(a);
  static const char *const after[] = {
      "if (lid < 5) { x[0] = 1.0f; }",
      "threadgroup_barrier(mem_flags::mem_threadgroup);",
  };
  snprintf(want, sizeof want, "line 9 ctrl uniform cause %d at -1 var - back 0 exit -1\n",
           (int)KL_DIV_NONE);
  expect_deep("deep-after-branch", after, 2, want);
}

/* Loops nested far deeper than any kernel nests them: the walk stays linear (inner loops past
 * KL_FLOW_LOOP_NEST are walked once), and the outer loop still sees the barrier its divergent
 * branch guards. */
static void test_deep_loops(void) {
  enum { DEPTH = 24 };
  struct kl_arena *a = kl_arena_new();
  char *inner = "acc += x[i23];";
  for (int d = DEPTH - 1; d >= 0; d--)
    inner = kl_arena_printf(a, "for (uint i%d = 0; i%d < n; i%d++) { %s }", d, d, d, inner);
  char *body = kl_arena_printf(
      a,
      "kernel void k(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
      "              constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],\n"
      "              uint lid [[thread_position_in_threadgroup]]) {\n"
      "  threadgroup float tg[64];\n"
      "  for (uint r = 0; r < n; r++) {\n"
      "    tg[lid] = x[gid] * float(r);\n"
      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "    float acc = tg[(lid + 1) %% 64];\n"
      "    %s\n"
      "    if (lid < r) { threadgroup_barrier(mem_flags::mem_threadgroup); }\n"
      "    y[gid] = acc;\n"
      "  }\n"
      "}\n",
      inner);
  struct kl_fx x;
  fx_open(&x, body);
  const struct kl_facts_barrier *b = fx_barrier(&x, 12);
  check("deep-loops-divergent", b && b->ctrl == KL_SCOPE_THREAD,
        "the barrier under `lid < r` is not reached under thread-divergent control");
  fx_close(&x);
  kl_arena_delete(a);
}

/* A value carried round the back edge of a loop nested past KL_FLOW_LOOP_NEST (`v = lid` at the
 * end of one iteration, tested at the start of the next) still reaches the barrier it guards,
 * and a barrier every thread reaches in that nest is still not divergent. */
static void test_deep_carried(void) {
  static const int depths[] = {8, 20};
  for (int t = 0; t < 2; t++) {
    struct kl_arena *a = kl_arena_new();
    char *open = "", *close = "";
    for (int d = 0; d < depths[t]; d++) {
      open = kl_arena_printf(a, "%sfor (uint i%d = 0; i%d < 2; i%d++) { ", open, d, d, d);
      close = kl_arena_printf(a, "%s}", close);
    }
    char *body = kl_arena_printf(
        a,
        "kernel void k(device float* y [[buffer(0)]],\n"
        "              uint lid [[thread_position_in_threadgroup]]) {\n"
        "  %s\n"
        "    uint v = 0;\n"
        "    for (uint k = 0; k < 4; k++) {\n"
        "      if (v > 0) { threadgroup_barrier(mem_flags::mem_threadgroup); }\n"
        "      v = lid;\n"
        "    }\n"
        "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
        "    y[lid] = float(v);\n"
        "  %s\n"
        "}\n",
        open, close);
    struct kl_fx x;
    fx_open(&x, body);
    const struct kl_facts_barrier *b = fx_barrier(&x, 8), *after = fx_barrier(&x, 11);
    check(t ? "deep-carried.20" : "deep-carried.8", b && b->ctrl == KL_SCOPE_THREAD,
          "the barrier under the carried `v > 0` is not reached under thread-divergent control");
    check(t ? "deep-carried.20-after" : "deep-carried.8-after",
          after && after->ctrl == KL_SCOPE_UNIFORM, "the barrier after the loop is divergent");
    fx_close(&x);
    kl_arena_delete(a);
  }
}

static void test_uniformity(void) {
  /* A lambda's parameter holds the argument of its call, whatever the frame's names are. */
  expect_barrier("lambda-param-constant",
                 KSIG "  auto step = [&](uint lid) {\n"
                      "    if (lid < 4) threadgroup_barrier(mem_flags::mem_threadgroup);\n  };\n"
                      "  step(0);\n}\n",
                 9, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("lambda-param-lid",
                 KSIG "  auto step = [&](uint k) {\n"
                      "    if (k < 4) threadgroup_barrier(mem_flags::mem_threadgroup);\n  };\n"
                      "  step(lid);\n}\n",
                 9, KL_SCOPE_THREAD, KL_DIV_BRANCH, "k");
  /* A local handed to a reference parameter of a function defined elsewhere holds what the
   * call made of its arguments: per thread when handed the thread's index, not through a
   * const reference. (The prototype is line 3: the body's first line is 9.) */
  expect_barrier("out-reference-lid",
                 "void len_of(uint i, thread uint& out);\n" KSIG "  uint m = 0;\n"
                 "  len_of(gid, m);\n  if (m == 0) return;\n"
                 "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n",
                 12, KL_SCOPE_THREAD, KL_DIV_RETURN, "m");
  expect_barrier("out-reference-const",
                 "void len_of(const thread uint& i, uint j);\n" KSIG "  uint m = 0;\n"
                 "  len_of(m, gid);\n  if (m == 0) return;\n"
                 "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n",
                 12, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("uniform-barrier",
                 KSIG "  sh[lid] = x[gid];\n"
                      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n",
                 9, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("tree-reduction-after-if",
                 KSIG "  for (uint s = tg / 2; s > 0; s >>= 1) {\n"
                      "    if (lid < s) sh[lid] += sh[lid + s];\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("early-return",
                 KSIG "  if (gid >= n) return;\n"
                      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n",
                 9, KL_SCOPE_THREAD, KL_DIV_RETURN, "gid");
  expect_barrier("threadgroup-uniform-return",
                 KSIG "  if (tgid >= n) return;\n"
                      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n",
                 9, KL_SCOPE_THREADGROUP, KL_DIV_NONE, NULL);
  /* The cause cited diverges as widely as the control: a lane branch around the barrier, not an
   * earlier return that differs only between SIMD groups; a return as wide as the branch stays. */
  expect_barrier("lane-branch-after-simdgroup-return",
                 KSIG "  if (sgid >= n) return;\n"
                      "  if (lid % 32 == 0) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_THREAD, KL_DIV_BRANCH, "lid");
  expect_barrier("thread-return-before-lane-branch",
                 KSIG "  if (gid >= n) return;\n"
                      "  if (lid % 32 == 0) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_THREAD, KL_DIV_RETURN, "gid");
  expect_barrier("simdgroup-return-alone",
                 KSIG "  if (sgid >= n) return;\n"
                      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n",
                 9, KL_SCOPE_SIMDGROUP, KL_DIV_RETURN, "sgid");
  expect_barrier("simdgroup-branch-tg-barrier",
                 KSIG "  if (sgid == 0) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 9, KL_SCOPE_SIMDGROUP, KL_DIV_BRANCH, "sgid");
  expect_barrier("simdgroup-branch-simd-barrier",
                 KSIG "  if (sgid == 0) {\n"
                      "    simdgroup_barrier(mem_flags::mem_none);\n  }\n}\n",
                 9, KL_SCOPE_SIMDGROUP, KL_DIV_NONE, NULL);
  expect_barrier("loop-from-lid",
                 KSIG "  for (uint i = lid; i < n; i += 32) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 9, KL_SCOPE_THREAD, KL_DIV_LOOP, "i");
  expect_barrier("switch-on-lid",
                 KSIG "  switch (lid) {\n  case 0:\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n    break;\n  }\n}\n",
                 10, KL_SCOPE_THREAD, KL_DIV_BRANCH, "lid");
  expect_barrier("do-while-on-lane",
                 KSIG "  uint k = lane;\n  do {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n    k += 32;\n"
                      "  } while (k < n);\n}\n",
                 10, KL_SCOPE_THREAD, KL_DIV_LOOP, NULL);
  expect_barrier("ternary-taints",
                 KSIG "  uint k = lid < 4 ? 1u : 0u;\n  if (k > 0) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_THREAD, KL_DIV_BRANCH, "k");
  expect_barrier("assigned-under-branch",
                 KSIG
                 "  uint k = 0;\n  if (lid == 3) k = 1;\n"
                 "  if (k > 0) {\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 11, KL_SCOPE_THREAD, KL_DIV_BRANCH, "k");
  expect_barrier("break-under-lid",
                 KSIG "  for (uint i = 0; i < n; i++) {\n"
                      "    if (lid == i) break;\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_THREAD, KL_DIV_EXIT, "lid");
  expect_barrier("break-after-last-barrier",
                 KSIG "  for (uint i = 0; i < n; i++) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                      "    if (lid == i) break;\n  }\n}\n",
                 9, KL_SCOPE_THREAD, KL_DIV_LOOP, "lid");
  expect_barrier("continue-after-last-barrier",
                 KSIG "  for (uint i = 0; i < n; i++) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                      "    if (lid == i) continue;\n    x[gid] = 0;\n  }\n}\n",
                 9, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("continue-then-next-loop",
                 KSIG "  for (uint i = 0; i < n; i++) {\n"
                      "    if (lid == i) continue;\n  }\n"
                      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n}\n",
                 11, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("break-in-switch-leaves-switch",
                 KSIG "  for (uint i = 0; i < n; i++) {\n"
                      "    switch (lid) { case 0: x[gid] = 1; break; default: break; }\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  /* s = lid and e = lid + n: n trips in every thread (the shadowed s = 0 is another symbol). */
  expect_barrier("trip-shadowed-start",
                 KSIG "  if (n > 2) { const uint s = 0; x[s] = 0; }\n"
                      "  const uint s = lid;\n  const uint e = lid + n;\n"
                      "  for (uint t = s; t < e; t++) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 12, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("trip-shared-offset",
                 KSIG "  const uint s = tgid * n + lid;\n  const uint e = s + n * tg;\n"
                      "  for (uint t = s; t < e; t += tg) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 11, KL_SCOPE_THREADGROUP, KL_DIV_NONE, NULL);
  expect_barrier("trip-lane-offset",
                 KSIG "  for (uint t = lid; t < n; t += tg) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 9, KL_SCOPE_THREAD, KL_DIV_LOOP, "t");
  expect_barrier("trip-counter-assigned-in-body",
                 KSIG "  const uint s = lid;\n  const uint e = s + n;\n"
                      "  for (uint t = s; t < e; t += 1) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                      "    if (x[t] > 0) t += 2;\n  }\n}\n",
                 11, KL_SCOPE_THREAD, KL_DIV_LOOP, NULL);
  expect_barrier("trip-offset-reassigned",
                 KSIG "  uint o = lid;\n  const uint s = o;\n  o = 0;\n  const uint e = o + n;\n"
                      "  for (uint t = s; t < e; t++) {\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 13, KL_SCOPE_THREAD, KL_DIV_LOOP, NULL);
  expect_barrier("simd-sum-is-simdgroup",
                 KSIG "  float s = simd_sum(x[gid]);\n"
                      "  if (s > 0) {\n    simdgroup_barrier(mem_flags::mem_none);\n"
                      "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_SIMDGROUP, KL_DIV_NONE, NULL);
  expect_barrier("struct-member-uniform",
                 "struct P { float a; float b; };\n" KSIG "  P p;\n  p.a = float(gid);\n"
                 "  p.b = 1.0f;\n  if (p.b > 0) {\n"
                 "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 13, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
  expect_barrier("struct-member-thread",
                 "struct P { float a; float b; };\n" KSIG "  P p;\n  p.a = float(gid);\n"
                 "  p.b = 1.0f;\n  if (p.a > 0) {\n"
                 "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 13, KL_SCOPE_THREAD, KL_DIV_BRANCH, "p.a");
  expect_barrier("helper-result",
                 "static uint twice(uint v) { return v * 2; }\n" KSIG "  if (twice(lid) > 3) {\n"
                 "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_THREAD, KL_DIV_BRANCH, NULL);
  expect_barrier("helper-result-uniform",
                 "static uint twice(uint v) { return v * 2; }\n" KSIG "  if (twice(n) > 3) {\n"
                 "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n",
                 10, KL_SCOPE_UNIFORM, KL_DIV_NONE, NULL);
}

static void test_guards(void) {
  expect_guard("early-return-guards", KSIG "  if (gid >= n) return;\n  x[gid] = 0;\n}\n", 9, false,
               false);
  expect_guard("access-before-guard",
               KSIG "  float v = x[gid];\n  if (gid >= n) return;\n"
                    "  x[gid] = v;\n}\n",
               8, true, true);
  expect_guard("no-evidence-exact-grid", KSIG "  x[gid] = 1;\n}\n", 8, true, false);
  expect_guard("if-block", KSIG "  if (gid < n) {\n    x[gid] = 0;\n  }\n}\n", 9, false, false);
  expect_guard("outside-if-block",
               KSIG "  if (gid < n) {\n    x[gid] = 0;\n  }\n  x[gid + 1] = 0;\n}\n", 11, true,
               true);
  expect_guard("ternary", KSIG "  float v = gid < n ? x[gid] : 0.0f;\n  sh[lid] = v;\n}\n", 8,
               false, false);
  expect_guard("min-clamp", KSIG "  x[min(gid, n - 1)] = 0;\n  if (gid < n) x[gid] = 1;\n}\n", 8,
               false, false);
  expect_guard("derived-index", KSIG "  uint i = gid * 2;\n  if (i >= n) return;\n  x[i] = 0;\n}\n",
               10, false, false);
  /* g2.y is never compared against a size: unguarded, but no evidence (b) for it. */
  expect_guard("one-component-guard",
               KSIG "  if (g2.x >= n) return;\n  x[g2.y * n + g2.x] = 0;\n}\n", 9, true, false);
  expect_guard(
      "other-component-compared",
      KSIG "  if (g2.x >= n) return;\n  x[g2.y * n + g2.x] = 0;\n  if (g2.y < n) x[0] = 1;\n}\n", 9,
      true, true);
  expect_guard("both-components-guard",
               KSIG "  if (g2.x >= n || g2.y >= n) return;\n  x[g2.y * n + g2.x] = 0;\n}\n", 9,
               false, false);
  expect_guard("loop-condition", KSIG "  for (uint i = lid; i < n; i += tg) x[i] = 0;\n}\n", 8,
               false, false);
  expect_guard("loop-evidence-other-index",
               KSIG "  for (uint i = lid; i < n; i += tg) x[i] = 0;\n  x[lid] = 1;\n}\n", 9, true,
               true);
  /* Evidence must bound the same value (issue 8): not a value loaded with the index, not a
   * larger offset that only contains the index, not another coordinate. */
  expect_guard("loaded-value-is-no-evidence",
               KSIG "  uint j = uint(x[gid]);\n  if (j >= n) return;\n  x[gid] = 0;\n}\n", 8, true,
               false);
  expect_guard("larger-offset-is-no-evidence",
               KSIG "  uint i = tgid * 256 + lid;\n  float v = i < n ? x[i] : 0.0f;\n"
                    "  x[tgid] = v;\n}\n",
               10, true, false);
  expect_guard("row-check-is-evidence-for-row-pointer",
               KSIG "  uint row = tgid * 4 + sgid;\n  device float* r = x + row * n;\n"
                    "  float s = r[0];\n  if (row < n) r[lane] = s;\n}\n",
               10, true, true);
  expect_guard("partial-index-keeps-its-affine-part",
               KSIG "  uint row = tgid * 4 + sgid;\n  float s = x[row * n + lane / 3];\n"
                    "  if (row < n) x[row] = s;\n}\n",
               9, true, true);
  expect_guard("tree-reduction-bound-is-no-size",
               KSIG "  for (uint s = tg / 2; s > 0; s >>= 1) {\n    if (lid < s) sh[lid] += 1;\n"
                    "  }\n  x[tgid * tg + lid] = sh[lid];\n}\n",
               11, true, false);
  /* A check of where a blocked walk ended (the tail's `bm < n` after `bm += 128`) is about the
   * value the loop left, not the earlier values its own accesses used; after the loop it is the
   * same value, and a value assigned afresh in the loop (not stepped) is the same value too. */
  expect_guard("walk-end-is-no-evidence-inside-the-walk",
               KSIG "  uint bm = lane * 4;\n  for (uint i = 0; i < n / 128; ++i) {\n"
                    "    x[bm] = 0;\n    bm += 128;\n  }\n  if (bm < n) x[bm] = 1;\n}\n",
               10, true, false);
  expect_guard("walk-end-is-evidence-after-the-walk",
               KSIG "  uint bm = lane * 4;\n  for (uint i = 0; i < n / 128; ++i) {\n"
                    "    x[bm] = 0;\n    bm += 128;\n  }\n  x[bm + 1] = 2;\n"
                    "  if (bm < n) x[bm] = 1;\n}\n",
               13, true, true);
  /* A block count rounded up runs the walk's last step past the data: the check of where the
   * walk ended is evidence for the walk too. */
  expect_guard("rounded-up-walk-end-is-evidence",
               KSIG "  uint bm = lane * 4;\n  for (uint i = 0; i < (n + 127) / 128; ++i) {\n"
                    "    x[bm] = 0;\n    bm += 128;\n  }\n  if (bm < n) x[bm] = 1;\n}\n",
               10, true, true);
  expect_guard("rounded-up-local-walk-end-is-evidence",
               KSIG "  uint bm = lane * 4;\n  uint nb = (n + 128 - 1) / 128;\n"
                    "  for (uint i = 0; i < nb; ++i) {\n"
                    "    x[bm] = 0;\n    bm += 128;\n  }\n  if (bm < n) x[bm] = 1;\n}\n",
               11, true, true);
  expect_guard("fresh-value-in-loop-is-evidence",
               KSIG "  uint r = lane * 4;\n  for (uint i = 0; i < n / 128; ++i) {\n"
                    "    x[r] = 0;\n    r = lane * 4 + 128;\n  }\n  if (r < n) x[r] = 1;\n}\n",
               10, true, true);
}

static void test_affine(void) {
  struct kl_affine a =
      kl_affine_add(kl_affine_mul(kl_affine_atom(1), kl_affine_const(4)), kl_affine_const(3), 1);
  int64_t k;
  bool sym;
  check("affine-4x+3", kl_affine_coeff(a, 1, &k, &sym) && k == 4 && !sym && a.c0 == 3, "bad form");
  struct kl_affine s = kl_affine_mul(kl_affine_atom(1), kl_affine_symbol());
  check("affine-symbolic-coefficient", kl_affine_coeff(s, 1, &k, &sym) && sym, "not symbolic");
  check("affine-product-of-atoms", !kl_affine_mul(kl_affine_atom(1), kl_affine_atom(2)).known,
        "x*y should be unknown");
  struct kl_affine z = kl_affine_add(kl_affine_atom(1), kl_affine_atom(1), -1);
  check("affine-cancel", z.known && z.n == 0 && z.c0 == 0, "x - x should be 0");
  struct kl_affine j =
      kl_affine_join(kl_affine_atom(1), kl_affine_add(kl_affine_atom(1), kl_affine_const(5), 1));
  check("affine-join-induction",
        j.known && j.c0_symbolic && kl_affine_coeff(j, 1, &k, &sym) && k == 1,
        "lid joined with lid+5 should be lid + c");
  check("affine-join-different-atoms", !kl_affine_join(kl_affine_atom(1), kl_affine_atom(2)).known,
        "x join y is unknown");
  struct kl_affine big = kl_affine_mul(kl_affine_const(INT64_MAX), kl_affine_const(2));
  check("affine-overflow", !big.known, "overflow must give up");
  check("affine-unknown-propagates",
        !kl_affine_add(kl_affine_unknown(), kl_affine_const(1), 1).known, "unknown + 1");
  struct kl_affine p =
      kl_affine_add(kl_affine_mul(kl_affine_atom(1), kl_affine_const(4)), kl_affine_unknown(), 1);
  check("affine-partial-sum",
        !p.known && p.partial && kl_affine_part_coeff(p, 1, &k, &sym) && k == 4 &&
            !kl_affine_coeff(p, 1, &k, &sym),
        "4x + unknown keeps 4x as its affine part, and is not known");
  struct kl_affine ps = kl_affine_mul(p, kl_affine_const(2));
  check("affine-partial-scaled", ps.partial && kl_affine_part_coeff(ps, 1, &k, &sym) && k == 8,
        "(4x + ?) * 2 keeps 8x");
  check("affine-partial-join", kl_affine_join(p, p).partial, "a partial form joined with itself");
  check("affine-unknown-sum-stays-unknown",
        !kl_affine_add(kl_affine_unknown(), kl_affine_unknown(), 1).partial, "? + ? has no part");
}

/* A specialisation that binds every name the kernel reads as an earlier one did is not walked
 * again, and still counts as its own run: its barriers are reached and flagged, and its accesses
 * recorded, under its own name. */
static void test_specialisations(void) {
  struct kl_fx x;
  fx_open(&x, "template <int R, int U>\n"
              "kernel void k(device float* x [[buffer(0)]], constant int& n [[buffer(1)]],\n"
              "  uint sg [[simdgroup_index_in_threadgroup]],\n"
              "  uint grp [[threadgroup_position_in_grid]]) {\n"
              "  const int row = int(grp) * R + (R > 1 ? int(sg) : 0);\n"
              "  if (row >= n) return;\n"
              "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "  x[row] = 1.0f;\n"
              "}\n"
              "template [[host_name(\"a\")]] kernel decltype(k<1, 1>) k<1, 1>;\n"
              "template [[host_name(\"b\")]] kernel decltype(k<4, 1>) k<4, 1>;\n"
              "template [[host_name(\"c\")]] kernel decltype(k<4, 2>) k<4, 2>;\n"
              "template [[host_name(\"d\")]] kernel decltype(k<1, 2>) k<1, 2>;\n");
  const struct kl_facts_barrier *b = fx_barrier(&x, 9);
  check("replay-barrier", b && b->nreach == 4 && b->nflag == 2 && b->nnames == 2 &&
                              !strcmp(b->names[0], "b") && !strcmp(b->names[1], "c"),
        "reached %u flagged %u in %zu: %s %s", b ? b->nreach : 0, b ? b->nflag : 0,
        b ? b->nnames : 0, b && b->nnames > 0 ? b->names[0] : "-",
        b && b->nnames > 1 ? b->names[1] : "-");
  size_t n = 0;
  bool named = true;
  for (size_t i = 0; i < x.flow.naccesses; i++) {
    if (fx_line(&x, x.flow.accesses[i].node) != 10) continue;
    const char *in = x.flow.accesses[i].inst;
    named = named && in && strstr(in, n == 0 || n == 3 ? "R = 1" : "R = 4") &&
            strstr(in, n < 2 ? "U = 1" : "U = 2");
    n++;
  }
  check("replay-accesses", n == 4 && named, "%zu records of the store, named %d", n, named);
  fx_close(&x);
}

/* With the flow asking nothing else, every kernel is lowered (the device-access table asks of
 * each), and those that may reach a barrier take the uniformity pass and hold their barriers:
 * one calling it, one calling a helper that does, one calling a member that does on an object;
 * not a kernel with none. */
static void test_barrier_reach(void) {
  struct kl_fx x;
  fx_open(&x, "struct Sync { threadgroup float* p; void wait() {\n"
              "  threadgroup_barrier(mem_flags::mem_threadgroup); } };\n"
              "static void wait_all() { threadgroup_barrier(mem_flags::mem_threadgroup); }\n"
              "kernel void plain(device float* x [[buffer(0)]]) { x[0] = 1.0f; }\n"
              "kernel void direct(device float* x [[buffer(0)]]) {\n"
              "  threadgroup_barrier(mem_flags::mem_threadgroup); x[0] = 1.0f; }\n"
              "kernel void helper(device float* x [[buffer(0)]]) { wait_all(); x[0] = 1.0f; }\n"
              "kernel void member(device float* x [[buffer(0)]]) {\n"
              "  Sync y; y.wait(); x[0] = 2.0f; }\n");
  struct kl_facts f;
  kl_facts_compute(x.a, &x.model, NULL, 0, NULL, 0, NULL, &x.flow, &f);
  check("barrier-reach-lowered", f.nfns == 4 && f.nbarriers == 3,
        "%zu kernels lowered, %zu barriers; want 4 and 3", f.nfns, f.nbarriers);
  fx_close(&x);
}

/* The facts of one text analysed with helper walks shared between specialisations or not. */
static void fx_open_text(struct kl_fx *x, const char *path, const char *text, size_t len,
                         const char *dir, bool share) {
  x->a = kl_arena_new();
  char err[256];
  kl_flow_share_walks(share);
  memset(&x->flow, 0, sizeof x->flow);
  if (kl_source_from_memory(x->a, path, text, len, &x->src, err, sizeof err) != 0 ||
      kl_dialect_parse(x->a, &x->src, x->src.text, x->src.len, NULL, dir, &x->unit, err,
                       sizeof err) != 0) {
    printf("FAIL setup %s: %s\n", path, err);
    failures++;
    kl_flow_share_walks(true);
    return;
  }
  kl_model_build(x->a, &x->unit, &x->model);
  kl_flow_analyze(x->a, &x->model, NULL, 0, NULL, 0, NULL, &x->flow);
  kl_flow_share_walks(true);
}

static uint32_t fx_at(TSNode n) {
  return n.id ? ts_node_start_byte(n) + 1 : 0;
}

static bool fx_str_same(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

/* Whether two analyses of one text found the same facts (nodes by their start). */
static bool fx_flow_same(const struct kl_flow *a, const struct kl_flow *b, char *why, size_t n) {
  if (a->naccesses != b->naccesses) {
    snprintf(why, n, "%zu/%zu accesses", a->naccesses, b->naccesses);
    return false;
  }
  for (size_t i = 0; i < a->naccesses; i++) {
    const struct kl_flow_access *p = &a->accesses[i], *q = &b->accesses[i];
    if (fx_at(p->node) != fx_at(q->node) || fx_at(p->call) != fx_at(q->call) ||
        fx_at(p->evidence_node) != fx_at(q->evidence_node) ||
        !fx_str_same(p->buffer ? p->buffer->name : NULL, q->buffer ? q->buffer->name : NULL) ||
        !fx_str_same(p->owner ? p->owner->name : NULL, q->owner ? q->owner->name : NULL) ||
        p->store != q->store || !kl_affine_equal(p->form, q->form) ||
        p->thread_indexed != q->thread_indexed || p->unguarded != q->unguarded ||
        p->unguarded_dims != q->unguarded_dims || p->evidence != q->evidence ||
        !fx_str_same(p->unguarded_var, q->unguarded_var) || !fx_str_same(p->inst, q->inst) ||
        p->ninsts != q->ninsts || !fx_str_same(p->elem_type, q->elem_type)) {
      snprintf(why, n, "access %zu (byte %u, %s) differs", i, fx_at(p->node) - 1,
               p->inst ? p->inst : "-");
      return false;
    }
  }
  return true;
}

/* Text analysed both ways: the same facts; *shared gets how many walks were taken. */
static void expect_share_same(const char *name, const char *path, const char *text, size_t len,
                              const char *dir, size_t *shared) {
  struct kl_fx on, off;
  fx_open_text(&on, path, text, len, dir, true);
  fx_open_text(&off, path, text, len, dir, false);
  char why[160] = "";
  check(name, fx_flow_same(&on.flow, &off.flow, why, sizeof why), "%s: %s", path, why);
  check(name, off.flow.shared == 0, "%s: %zu walks shared with sharing off", path, off.flow.shared);
  if (shared) *shared = on.flow.shared;
  fx_close(&on);
  fx_close(&off);
}

/* Every .metal file under dir, analysed both ways. */
static void expect_share_tree(const char *dir, size_t *files) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t len = strlen(e->d_name);
    if (len > 6 && !strcmp(e->d_name + len - 6, ".metal")) {
      FILE *fp = fopen(path, "rb");
      if (!fp) continue;
      static char buf[1 << 20];
      size_t n = fread(buf, 1, sizeof buf - 1, fp);
      bool whole = n < sizeof buf - 1 || fgetc(fp) == EOF;
      fclose(fp);
      buf[n] = '\0';
      check("share-fixture-size", whole, "%s is over 1 MiB: read only its start", path);
      expect_share_same("share-fixture", path, buf, n, dir, NULL);
      ++*files;
    } else {
      expect_share_tree(path, files);
    }
  }
  closedir(d);
}

/* A specialisation takes a helper's walk from another only where the walk would be the same. */
static void test_shared_walks(void) {
  static const char k[] =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "constant int W = 4;\n"
      "inline void put(device float* y, uint i, float v) { y[i] = v; }\n"
      "inline void put2(device float* y, uint i, float v, int n) {\n"
      "  if (int(i) < n) put(y, i, v);\n"
      "  put(y, i + W, v);\n"
      "}\n"
      "template <int R>\n"
      "inline float sum(device const float* x, uint i) {\n"
      "  float s = 0.0f;\n"
      "  for (int k = 0; k < R; k++) s += x[i * R + k];\n"
      "  return s;\n"
      "}\n"
      "inline float rows(device const float* x, uint i, int r) {\n"
      "  return r > 2 ? x[i * 3] : x[i];\n"
      "}\n"
      "template <int R, int U>\n"
      "kernel void k(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
      "  constant int& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {\n"
      "  float v = sum<R>(x, gid) + rows(x, gid, R);\n"
      "  for (int u = 0; u < U; u++) put2(y, gid * U + u, v, n);\n"
      "  if (gid < uint(n)) put(y, gid, v);\n"
      "  put(y, gid + R, v);\n"
      "  put2(y, gid, v, n);\n"
      "}\n"
      "template [[host_name(\"a\")]] kernel decltype(k<1, 1>) k<1, 1>;\n"
      "template [[host_name(\"b\")]] kernel decltype(k<4, 1>) k<4, 1>;\n"
      "template [[host_name(\"c\")]] kernel decltype(k<4, 2>) k<4, 2>;\n"
      "template [[host_name(\"d\")]] kernel decltype(k<1, 2>) k<1, 2>;\n";
  size_t shared = 0;
  expect_share_same("share-kernel", "t.metal", k, sizeof k - 1, ".", &shared);
  check("share-kernel-takes", shared > 0, "no helper walk was shared");
  /* In the second specialisation the kernel itself calls put before wrap does: wrap's walk
   * there reuses put's summary and records none of put's accesses, unlike the first's. */
  static const char k2[] =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "inline void put(device float* y, uint i, float v) { y[i] = v; }\n"
      "inline void wrap(device float* y, uint i, float v) { put(y, i, v); y[i + 1] = v; }\n"
      "template <int R>\n"
      "kernel void k2(device float* y [[buffer(0)]], uint gid [[thread_position_in_grid]]) {\n"
      "  if (R > 2) put(y, gid, 1.0f);\n"
      "  wrap(y, gid, 2.0f);\n"
      "}\n"
      "template [[host_name(\"a\")]] kernel decltype(k2<1>) k2<1>;\n"
      "template [[host_name(\"b\")]] kernel decltype(k2<4>) k2<4>;\n"
      "template [[host_name(\"c\")]] kernel decltype(k2<2>) k2<2>;\n";
  expect_share_same("share-asked-before", "t.metal", k2, sizeof k2 - 1, ".", &shared);
  check("share-asked-before-takes", shared > 0, "no helper walk was shared");
  /* The races' state at the call: in k<2> the tile access of the last iteration is still open
   * when sum4's loop runs, which crosses it with its own bytes. */
  static const char k3[] =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "inline float sum4(device const float* x, uint i) {\n"
      "  float s = 0.0f;\n"
      "  for (int k = 0; k < 4; k++) s += x[i + k];\n"
      "  return s;\n"
      "}\n"
      "template <int R>\n"
      "kernel void k3(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
      "  constant uint& n0 [[buffer(2)]], uint lid [[thread_position_in_threadgroup]],\n"
      "  uint gid [[thread_position_in_grid]]) {\n"
      "  threadgroup float tile[4096];\n"
      "  uint j = 0;\n"
      "  for (uint it = n0; it < n0 + 4; it++) {\n"
      "    float s = sum4(x, j);\n"
      "    if (R > 1) {\n"
      "      float v = tile[lid + it * 64 + 1];\n"
      "      tile[lid + it * 64] = s + v;\n"
      "    }\n"
      "    j = gid;\n"
      "  }\n"
      "  y[gid] = tile[lid];\n"
      "}\n"
      "template [[host_name(\"a\")]] kernel decltype(k3<1>) k3<1>;\n"
      "template [[host_name(\"b\")]] kernel decltype(k3<2>) k3<2>;\n";
  expect_share_same("share-open-accesses", "t.metal", k3, sizeof k3 - 1, ".", NULL);
  /* A store's uniform value, which a helper called in its left side clears by storing. */
  static const char k4[] =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "inline uint zero(uint u) { return 0; }\n"
      "inline uint h(device float* y) { y[0] = 0.0f; return 0u; }\n"
      "template <int R>\n"
      "kernel void k4(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],\n"
      "  uint lid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]]) {\n"
      "  threadgroup float tile[64];\n"
      "  float v = x[gid];\n"
      "  if (R > 1) {\n"
      "    v = 1.0f;\n"
      "    tile[0] = v;\n"
      "  }\n"
      "  tile[lid + zero(h(y))] = v;\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  y[gid] = tile[lid];\n"
      "}\n"
      "template [[host_name(\"a\")]] kernel decltype(k4<1>) k4<1>;\n"
      "template [[host_name(\"b\")]] kernel decltype(k4<2>) k4<2>;\n";
  expect_share_same("share-store-value", "t.metal", k4, sizeof k4 - 1, ".", NULL);
  /* h calls g calls h: the outer h settles evidence on the inner h's records after the inner
   * walk ends, from comparisons only one specialisation makes. */
  static const char k5[] =
      "#include <metal_stdlib>\nusing namespace metal;\n"
      "inline void g(device float* y, uint i, uint a, uint b, uint c);\n"
      "inline void h(device float* y, uint i, uint m, uint a, uint b, uint c) {\n"
      "  y[i] = 0.0f;\n"
      "  g(y, i, a, b, c);\n"
      "  if (i < m) y[0] = 1.0f;\n"
      "}\n"
      "inline void g(device float* y, uint i, uint a, uint b, uint c) { h(y, i, 7u, b, c, i); }\n"
      "template <int R>\n"
      "kernel void k5(device float* y [[buffer(0)]], constant uint& n [[buffer(1)]],\n"
      "  uint gid [[thread_position_in_grid]]) {\n"
      "  uint m = 64u;\n"
      "  if (R == 1) m = n;\n"
      "  h(y, gid, m, 0u, 0u, 0u);\n"
      "}\n"
      "template [[host_name(\"a\")]] kernel decltype(k5<1>) k5<1>;\n"
      "template [[host_name(\"b\")]] kernel decltype(k5<2>) k5<2>;\n";
  expect_share_same("share-settled-later", "t.metal", k5, sizeof k5 - 1, ".", NULL);
  size_t files = 0;
  expect_share_tree("tests/fixtures", &files);
  check("share-fixtures", files > 50, "only %zu fixture files found (run from the checkout)",
        files);
}

int main(void) {
  test_shared_walks();
  test_specialisations();
  test_barrier_reach();
  test_uniformity();
  test_deep_control();
  test_deep_loops();
  test_deep_carried();
  test_guards();
  test_affine();
  return failures ? 1 : 0;
}
