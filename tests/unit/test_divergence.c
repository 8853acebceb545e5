/* Unit tests for the divergence explanations (analyzer/passes/divergence.h), on small IR
 * programs: which construct a barrier's divergent control is blamed on (an earlier return, an
 * enclosing branch, a loop, through its condition or a carried value), which wins when several
 * diverge, and code in a branch a constant rules out. */
#include "analyzer/passes/divergence.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *arena;

static uint32_t p_barrier(uint32_t b) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_BARRIER, NULL, 0);
  P->ins[v].fn = kl_msl_fn("threadgroup_barrier");
  return v;
}

static uint32_t p_exit(uint32_t b, enum kl_ir_op op) {
  return kl_ir_emit(P, b, op, NULL, 0);
}

static struct kl_divergence explain(uint32_t ins) {
  struct kl_uniformity *u = kl_uniformity_compute(P, NULL);
  struct kl_divergence d;
  kl_divergence_explain(u, ins, KL_SCOPE_THREADGROUP, NULL, &d);
  return d;
}

/* if (lid < n) return; barrier: the return. */
static void test_return(void) {
  prog_new(arena);
  uint32_t b = P->body, t, e;
  uint32_t n = p_arg(b, false, "int"), lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t c = p_ubin(b, KL_IR_LT, lid, n);
  uint32_t i = p_if(b, c, &t, &e);
  p_exit(t, KL_IR_RETURN);
  uint32_t bar = p_barrier(b);
  struct kl_divergence d = explain(bar);
  check("return-kind", d.kind == KL_DIV_RETURN, "kind %d", (int)d.kind);
  check("return-cond", d.cond_at == i, "cond_at %u want %u", d.cond_at, i);
}

/* A SIMD-group-wide return, then a branch on the lane around the barrier: the branch explains a
 * threadgroup barrier reached by one lane per SIMD group; a thread-wide return stays first. */
static void test_widest(void) {
  for (int thread_return = 0; thread_return < 2; thread_return++) {
    prog_new(arena);
    uint32_t b = P->body, t, e, t2, e2;
    uint32_t n = p_arg(b, false, "int");
    uint32_t who = thread_return ? p_coord(b, "thread_position_in_grid", 0)
                                 : p_coord(b, "simdgroup_index_in_threadgroup", 0);
    uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
    p_if(b, p_ubin(b, KL_IR_GE, who, n), &t, &e);
    p_exit(t, KL_IR_RETURN);
    uint32_t br = p_if(b, p_ubin(b, KL_IR_EQ, lane, p_const(b, 0)), &t2, &e2);
    uint32_t bar = p_barrier(t2);
    struct kl_divergence d = explain(bar);
    if (thread_return)
      check("thread-return-first", d.kind == KL_DIV_RETURN, "kind %d", (int)d.kind);
    else
      check("lane-branch-over-simd-return", d.kind == KL_DIV_BRANCH && d.branch == br,
            "kind %d branch %u want %u", (int)d.kind, d.branch, br);
  }
}

/* for (i = lid; i < n; i += 32) barrier: the loop, through its condition. */
static void test_loop(void) {
  prog_new(arena);
  uint32_t b = P->body, hdr, body, latch;
  uint32_t n = p_arg(b, false, "int"), lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t i = p_head(hdr, l, lid);
  p_loop_cond(l, p_ubin(hdr, KL_IR_LT, i, n));
  uint32_t bar = p_barrier(body);
  p_back(i, p_ubin(latch, KL_IR_ADD, i, p_const(latch, 32)));
  struct kl_divergence d = explain(bar);
  check("loop-kind", d.kind == KL_DIV_LOOP && !d.back_edge && d.branch == l, "kind %d back %d",
        (int)d.kind, d.back_edge);
  check("loop-not-carried", !d.carried, "carried %u", d.carried);
}

/* for (k = 0; k < n; k = k + lid) barrier: uniform on entry, divergent through the back edge. */
static void test_carried(void) {
  prog_new(arena);
  uint32_t b = P->body, hdr, body, latch;
  uint32_t n = p_arg(b, false, "int"), lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t k = p_head(hdr, l, p_const(b, 0));
  p_loop_cond(l, p_ubin(hdr, KL_IR_LT, k, n));
  uint32_t bar = p_barrier(body);
  uint32_t next = p_ubin(latch, KL_IR_ADD, k, lid);
  p_back(k, next);
  struct kl_divergence d = explain(bar);
  check("carried-kind", d.kind == KL_DIV_LOOP, "kind %d", (int)d.kind);
  check("carried-value", d.carried == next, "carried %u want %u", d.carried, next);
}

/* A barrier under `if (0)`: dead, nothing to explain, and dead code says so. */
static void test_dead(void) {
  prog_new(arena);
  uint32_t b = P->body, t, e;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  p_if(b, p_const(b, 0), &t, &e);
  uint32_t t2, e2;
  p_if(t, p_ubin(t, KL_IR_LT, lid, p_const(t, 4)), &t2, &e2);
  uint32_t bar = p_barrier(t2);
  check("dead", kl_divergence_dead(P, bar), "not dead");
  struct kl_divergence d = explain(bar);
  check("dead-unexplained", d.kind == KL_DIV_NONE, "kind %d", (int)d.kind);
  /* The other arm of `if (1)` is dead; the taken arm is not. */
  prog_new(arena);
  b = P->body;
  p_if(b, p_const(b, 1), &t, &e);
  uint32_t live = p_barrier(t), dead = p_barrier(e);
  check("taken-arm-live", !kl_divergence_dead(P, live), "dead");
  check("other-arm-dead", kl_divergence_dead(P, dead), "live");
}

/* An exit (op) under a lane branch before the barrier, in a uniform loop. */
static void exit_case(enum kl_ir_op op, const char *name) {
  prog_new(arena);
  uint32_t b = P->body, hdr, body, latch, t, e;
  uint32_t n = p_arg(b, false, "int"), lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t i = p_head(hdr, l, p_const(b, 0));
  p_loop_cond(l, p_ubin(hdr, KL_IR_LT, i, n));
  p_if(body, p_ubin(body, KL_IR_LT, lid, p_const(body, 4)), &t, &e);
  uint32_t c = p_exit(t, op);
  uint32_t bar = p_barrier(body);
  p_back(i, p_ubin(latch, KL_IR_ADD, i, p_const(latch, 1)));
  struct kl_divergence d = explain(bar);
  check(name, d.kind == KL_DIV_EXIT && d.branch == c, "kind %d branch %u want %u",
        (int)d.kind, d.branch, c);
}

/* for (...) { if (lid < 4) continue; barrier; }: the continue; the same with a break: the break
 * of this iteration too, not the loop its earlier iterations left (the back edge). */
static void test_exit(void) {
  exit_case(KL_IR_CONTINUE, "exit-kind");
  exit_case(KL_IR_BREAK, "exit-break-kind");
}

int main(void) {
  arena = kl_arena_new();
  test_return();
  test_widest();
  test_loop();
  test_carried();
  test_dead();
  test_exit();
  kl_arena_delete(arena);
  return failures != 0;
}
