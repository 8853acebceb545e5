/* threadgroup-race: a missing threadgroup_barrier between two accesses to one element of
 * threadgroup memory by two threads of a threadgroup, one of them a write. The races come from
 * the lowered kernels (kl_facts.races, analyzer/passes/tgrace.h), which pair the accesses no
 * barrier orders on some path and decide with analyzer/passes/race.h whether two threads can meet
 * on one element, dropping a pair that one SIMD group makes around a SIMD-wide operation. */
#include <stdint.h>
#include <string.h>

#include "grammar/dialect.h"
#include "rules/rules.h"

static const char *kl_tr_text(struct kl_rule_ctx *ctx, TSNode n) {
  char *t = kl_dialect_node_text(ctx->arena, ctx->unit, n);
  /* The address spaces the dialect layer blanked, as written (`(threadgroup float4*)&tg[i]`). */
  static const char *const as[] = {"device", "constant", "threadgroup", "thread"};
  size_t k;
  uint32_t s = ts_node_start_byte(n);
  const struct kl_keyword *kw = kl_dialect_keywords_in(ctx->unit, s, ts_node_end_byte(n), &k);
  for (size_t i = 0; i < k; i++) {
    int j = kw[i].kind - KL_KW_DEVICE;
    if (j >= 0 && j < 4 && kw[i].len == strlen(as[j])) memcpy(t + kw[i].off - s, as[j], kw[i].len);
  }
  /* One line in the message: a subscript split over lines is named by its start. */
  char *nl = strchr(t, '\n');
  if (nl) *nl = '\0';
  return t;
}

/* The races to report: the lowered kernels' (kl_facts.races). */
struct kl_tr_list {
  const struct kl_facts_race *r;
  size_t n;
};

/* The race that pairs the same two accesses the other way round (j's first is i's second and
 * its second i's first), or SIZE_MAX: a loop with no barrier between them at all, or a helper
 * called twice, has both, and that is one race, not two. */
static size_t kl_tr_reverse(const struct kl_tr_list *l, size_t i) {
  const struct kl_facts_race *r = &l->r[i];
  for (size_t j = 0; j < l->n; j++)
    if (j != i && ts_node_eq(l->r[j].first, r->second) && ts_node_eq(l->r[j].second, r->first))
      return j;
  return SIZE_MAX;
}

/* Where race i is reported: its second access, or for a pair raced both ways the access that
 * comes first in the file (the pair's own order then depends on which way the walk met it). */
static TSNode kl_tr_at(const struct kl_tr_list *l, size_t i, size_t rev) {
  const struct kl_facts_race *r = &l->r[i];
  if (rev == SIZE_MAX) return r->second;
  return ts_node_start_byte(r->first) < ts_node_start_byte(r->second) ? r->first : r->second;
}

/* Whether the store at n reads its element first: `x++`, `x += v` (the node is the subscript,
 * or the variable, that the update or compound assignment names). */
static bool kl_tr_compound(TSNode n) {
  TSNode p = ts_node_parent(n);
  while (!kl_node_null(p) && !strcmp(ts_node_type(p), "parenthesized_expression"))
    p = ts_node_parent(p);
  if (kl_node_null(p)) return false;
  if (!strcmp(ts_node_type(p), "update_expression")) return true;
  if (strcmp(ts_node_type(p), "assignment_expression")) return false;
  TSNode op = kl_node_field(p, "operator");
  return !kl_node_null(op) && strcmp(ts_node_type(op), "=");
}

/* One store that several threads make to one element (a pair whose two sides are one access,
 * in one iteration): the threads' values differ, or each reads the element before writing. */
static void kl_tr_self(struct kl_rule_ctx *ctx, TSNode here) {
  if (kl_tr_compound(here))
    kl_rules_report(ctx, here,
                    "`%s` is updated here by several threads of the threadgroup at once: each "
                    "reads the element and writes it back, so updates are lost; combine the "
                    "values first (simd_sum, a reduction with barriers) and let one thread "
                    "write, or use an atomic",
                    kl_tr_text(ctx, here));
  else
    kl_rules_report(ctx, here,
                    "`%s` is written here by several threads of the threadgroup at once, with "
                    "values that differ between them: which one is left is not defined; let one "
                    "thread write it (`if (lid == 0)`), give each thread its own element, or use "
                    "an atomic",
                    kl_tr_text(ctx, here));
}

static void kl_tr_check(struct kl_rule_ctx *ctx) {
  if (!ctx->facts || !ctx->facts->nraces) return;
  struct kl_tr_list list = {ctx->facts->races, ctx->facts->nraces}, *l = &list;
  for (size_t i = 0; i < l->n; i++) {
    const struct kl_facts_race *r = &l->r[i];
    size_t rev = kl_tr_reverse(l, i);
    TSNode here = kl_tr_at(l, i, rev);
    uint32_t at = ts_node_start_byte(here);
    /* One finding per access: the first pair found names the other side. */
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++)
      seen = ts_node_start_byte(kl_tr_at(l, k, kl_tr_reverse(l, k))) == at;
    if (seen) continue;
    if (ts_node_eq(r->first, r->second) && !r->back_edge) {
      kl_tr_self(ctx, here);
      continue;
    }
    TSNode there = ts_node_eq(here, r->second) ? r->first : r->second;
    bool here_store = ts_node_eq(here, r->second) ? r->second_store : r->first_store;
    bool there_store = ts_node_eq(here, r->second) ? r->first_store : r->second_store;
    const struct kl_facts_race *q = rev == SIZE_MAX ? NULL : &l->r[rev];
    uint32_t other = kl_rules_line(ctx, ts_node_start_byte(there));
    const char *what = here_store ? "written" : "read";
    const char *them = !there_store ? "still read it"
                       : here_store ? "also write it"
                                    : "still be writing it";
    const char *when = r->back_edge ? " in the previous iteration of the loop" : "";
    const char *fix = "add a threadgroup_barrier(mem_flags::mem_threadgroup) between them";
    TSNode fence = r->fence;
    if (q) {
      /* Both orders race: the other access may come before this one (across the loop's back
       * edge, or in the helper's earlier call) and after it. */
      them = !there_store ? "read it" : "write it";
      when = r->back_edge || q->back_edge ? ", later in the same iteration and in the previous one"
                                          : ", before and after this access";
      fix = "one race, seen from both of its accesses: add a "
            "threadgroup_barrier(mem_flags::mem_threadgroup) after each of them";
      /* A fence-only barrier is the whole fix only when it sits on both sides. */
      if (kl_node_null(r->fence) || kl_node_null(q->fence))
        fence = (TSNode){0};
      else if (!ts_node_eq(r->fence, q->fence))
        fix = kl_arena_printf(ctx->arena,
                              "one race, seen from both of its accesses: the barriers at lines %u "
                              "and %u order no threadgroup memory (their flags lack "
                              "mem_threadgroup): give them mem_flags::mem_threadgroup",
                              kl_rules_line(ctx, ts_node_start_byte(r->fence)),
                              kl_rules_line(ctx, ts_node_start_byte(q->fence)));
    }
    if (!kl_node_null(fence) && (!q || ts_node_eq(r->fence, q->fence)))
      fix = kl_arena_printf(ctx->arena,
                            "%sthe barrier at line %u orders no threadgroup memory (its flags lack "
                            "mem_threadgroup): give it mem_flags::mem_threadgroup",
                            q ? "one race, seen from both of its accesses: " : "",
                            kl_rules_line(ctx, ts_node_start_byte(fence)));
    struct kl_diag *d = kl_rules_report(
        ctx, here, "`%s` is %s here while other threads of the threadgroup may %s at line %u%s; %s",
        kl_tr_text(ctx, here), what, them, other, when, fix);
    if (q)
      kl_rules_relate(ctx, d, there,
                      "the other access (`%s`), racing with this one in both orders: the same "
                      "defect, reported once",
                      kl_tr_text(ctx, there));
    else
      kl_rules_relate(ctx, d, there, "the other access (`%s`)", kl_tr_text(ctx, there));
  }
}

const struct kl_rule kl_rule_threadgroup_race = {
    .id = "threadgroup-race",
    .default_severity = KL_SEV_ERROR,
    .implemented = true,
    .summary = "Two threads of a threadgroup access one element of threadgroup memory, one of them "
               "writing, with no threadgroup_barrier between the accesses",
    .what = "Reports a pair of accesses to the same threadgroup memory, one of them a write, that "
            "two different threads of one threadgroup can make to the same element with no "
            "`threadgroup_barrier(mem_flags::mem_threadgroup)` between them on some path: in one "
            "stretch of code, across a loop's back edge (the end of one iteration and the start of "
            "the next), or across two calls of one helper; and one store that several threads make "
            "to one element with values that differ between them (`slot[lid / 16] = x[gid]`, "
            "`hit = lid`), or that reads the element first (`count[0]++`, `total += v`), which "
            "loses updates. A `simdgroup_load` or `simdgroup_store` of a SIMD-group matrix in "
            "threadgroup memory counts as an access of every element of the matrix by its SIMD "
            "group (a tiled multiply storing its result into the tiles another SIMD group may "
            "still be loading). Which element each thread touches is "
            "read from the index as a linear form over the thread coordinates (and uniform values, "
            "loop counters among them), over a sample threadgroup no larger than the one every "
            "launch of the kernel gives, its `[[max_total_threads_per_threadgroup(N)]]`, or, "
            "where neither says, what the kernel's own arrays leave in bounds: stores every "
            "thread makes at `tid`, `tid + 32` and `tid + 64` of `threadgroup float t[96]`, "
            "with `tid` its index in the threadgroup, are written for at most 32 threads, and "
            "are not taken for one slot stored twice. An index read from memory, or otherwise "
            "no such form, is known by its range (a mask, a modulo, a `min` clamp, its type: "
            "`keys[gid] & 15`, a `uchar` or `bool` read), and decides a pair only where the "
            "race is certain: more "
            "threads store through it than its range has elements, so two of them store to one "
            "(`hist[keys[gid] & 15] = ...` by 64 threads), or a thread's every possible element "
            "is one another thread writes with no barrier between (a 16-entry table the first "
            "16 threads fill, read at `code & 15`); the access and its partner must run for "
            "every thread their conditions name (a condition on data, or an early return before "
            "them, keeps them out), and a permutation (`s[perm[lid]]`) is never reported. A "
            "threadgroup table each thread filled at its own element before a barrier "
            "(`slot[lid] = lid / 2`) is read as what was stored. Any other index it cannot read "
            "is never reported. Accesses "
            "through derived pointers count as the array's own: a pointer moved along it "
            "(`threadgroup float* p = tg + lid * 4; p[i]`), a pointer field of a local object "
            "its constructor sets (an MLX-style `BlockLoader` whose `load()` writes `dst[i]`), "
            "and a pointer cast to another element type (`*(threadgroup float4*)&tg[4 * lid]`, "
            "as wide as it points to). A threadgroup array a helper declares is one array for "
            "every call of the helper. A thread "
            "index or an element spelled through one of the file's macros (`#define tid lid.x`, "
            "`#define AT(r, c) tile[(r) * 8 + (c)]`) is read through it. The finding is "
            "at the second access on the path, with the first as a related location; two accesses "
            "that race in both orders (a loop with no barrier between them either way) are one "
            "finding, at the one that comes first in the file. It stays "
            "quiet on each thread using its own slot (`tg[lid]`), on writes under `if (lid == 0)` "
            "that the others read only after a barrier, on SIMD-group reductions (`simd_sum`), on "
            "atomics, on every thread storing the same value (a constant, a value uniform over the "
            "threadgroup, a `simd_sum` stored by the lanes of one SIMD group to their group's "
            "slot), and on a slot only the lanes of one "
            "SIMD group touch when a SIMD-group-wide operation (`simd_sum`, `simd_shuffle`) that "
            "every lane runs lies between the two accesses (each SIMD group reading its slot and "
            "then overwriting it with a `simd_sum`). A barrier with only `mem_device` "
            "or `mem_none` does not order threadgroup memory, and the message says so when that is "
            "the only barrier between the accesses; a `simdgroup_barrier` orders the threads of "
            "one SIMD group only.",
    .why = "Threads of a threadgroup run in SIMD groups that are scheduled independently: a fast "
           "group can overwrite a slot a slow one has not read yet, or read it before it is "
           "written. The result is wrong numbers for some shapes and some launches only, which "
           "pass review and most tests. These are the most common fixed Metal kernel bugs in "
           "MLX, llama.cpp, candle and mlx-lm: a reduction helper called twice whose second call "
           "overwrites the scratch array the first still reads, thread 0 zeroing `sum[0]` before "
           "the others read the mean out of it, a tree reduction with no barrier per step, a tiled "
           "GEMM refilling its tile before every thread has read the last one.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void center(device float* x [[buffer(0)]],\n"
               "                   uint lid [[thread_position_in_threadgroup]],\n"
               "                   uint gid [[thread_position_in_grid]]) {\n"
               "  threadgroup float sum[1];\n"
               "  if (lid == 0) sum[0] = x[0] + x[1];\n"
               "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
               "  float mean = sum[0] * 0.5f;\n"
               "  if (lid == 0) sum[0] = 0.0f; // others may still be reading the mean\n"
               "  x[gid] -= mean;\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void center(device float* x [[buffer(0)]],\n"
               "                   uint lid [[thread_position_in_threadgroup]],\n"
               "                   uint gid [[thread_position_in_grid]]) {\n"
               "  threadgroup float sum[1];\n"
               "  if (lid == 0) sum[0] = x[0] + x[1];\n"
               "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
               "  float mean = sum[0] * 0.5f;\n"
               "  threadgroup_barrier(mem_flags::mem_threadgroup); // every thread has read it\n"
               "  if (lid == 0) sum[0] = 0.0f;\n"
               "  x[gid] -= mean;\n"
               "}\n",
    .check = kl_tr_check,
};
