/* Unit tests for threadgroup races over the IR (analyzer/passes/tgrace.h) on programs built by
 * hand: each thread's own slot, a neighbour's slot with and without a barrier, a barrier that
 * orders no threadgroup memory, the previous iteration across a loop's back edge, a counter
 * named only by the loop's condition, one value stored by every thread, an early return, a
 * launch whose threadgroup is one SIMD group, one store that many threads make to one
 * element, SIMD-group matrix loads and stores, and a barrier under the loop's own test for its
 * next trip. */
#include "analyzer/passes/tgrace.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;
static struct kl_tgrace_pair *R;
static size_t N;

static struct kl_var tgvar = {.name = "tg", .type = "float", .as = KL_AS_THREADGROUP,
                              .attr_index = -1};

static uint32_t tg_alloc(uint32_t b) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_ALLOC, NULL, 0);
  P->ins[v].var = &tgvar;
  P->ins[v].as = KL_AS_THREADGROUP;
  return v;
}

static uint32_t tg_store(uint32_t b, uint32_t arr, uint32_t idx, uint32_t val) {
  uint32_t v = p_op(b, KL_IR_STORE, p_index(b, arr, idx, 4), val, 0);
  P->ins[v].as = KL_AS_THREADGROUP;
  return v;
}

static uint32_t tg_load(uint32_t b, uint32_t arr, uint32_t idx) {
  uint32_t v = p_op(b, KL_IR_LOAD, p_index(b, arr, idx, 4), 0, 0);
  P->ins[v].as = KL_AS_THREADGROUP;
  return v;
}

static uint32_t barrier(uint32_t b, int64_t mem) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_BARRIER, NULL, 0);
  P->ins[v].fn = kl_msl_fn("threadgroup_barrier");
  P->ins[v].imm = mem;
  return v;
}

static uint32_t fval(uint32_t b) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_FCONST, NULL, 0);
  P->ins[v].fimm = 1.5;
  return v;
}

static void run_tg(const int64_t *tg) {
  struct kl_scev *s = kl_scev_run(A, P);
  N = kl_tgrace_run(A, P, s, NULL, tg, 0, NULL, &R);
}

/* Whether the race (first, second) was found, across the back edge of loop when loop != 0. */
static bool has(uint32_t first, uint32_t second, uint32_t loop) {
  for (size_t i = 0; i < N; i++)
    if (R[i].first == first && R[i].second == second && R[i].back_edge == (loop != 0) &&
        R[i].loop == loop)
      return true;
  return false;
}

/* tg[lid] = v; ... = tg[lid + 1] with and without a barrier; ... = tg[lid] needs none. */
static void test_straight(void) {
  for (int with = 0; with < 3; with++) {
    prog_new(A);
    uint32_t b = P->body;
    uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
    uint32_t tg = tg_alloc(b);
    uint32_t st = tg_store(b, tg, lid, fval(b));
    uint32_t own = tg_load(b, tg, lid);
    uint32_t bar = with ? barrier(b, with == 1 ? KL_IR_MEM_THREADGROUP : KL_IR_MEM_DEVICE) : 0;
    uint32_t next = tg_load(b, tg, p_ubin(b, KL_IR_ADD, lid, p_const(b, 1)));
    run_tg(NULL);
    (void)own;
    if (with == 1)
      check("tgrace-barrier", N == 0, "%zu races past a threadgroup barrier", N);
    else
      check(with ? "tgrace-fence" : "tgrace-neighbour",
            N == 1 && has(st, next, 0) && R[0].first_store && !R[0].second_store &&
                R[0].fence == bar,
            "%zu races; want the store and the neighbour's read only (fence %u)", N, bar);
  }
}

/* for (r ...) { tg[lid] = v; barrier; ... = tg[lid + 1]; }: the next iteration's store races with
 * this one's read. */
static void test_back_edge(void) {
  prog_new(A);
  uint32_t b = P->body, body, i;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tg = tg_alloc(b);
  uint32_t l = p_for(b, p_const(b, 0), KL_IR_LT, p_const(b, 8), p_const(b, 1), &i, &body);
  uint32_t st = tg_store(body, tg, lid, fval(body));
  barrier(body, KL_IR_MEM_THREADGROUP);
  uint32_t rd = tg_load(body, tg, p_ubin(body, KL_IR_ADD, lid, p_const(body, 1)));
  run_tg(NULL);
  check("tgrace-back-edge", N == 1 && has(rd, st, l), "%zu races; want the read, then the store "
        "in the next iteration", N);
}

/* The scan's carry: for (r = 0; r < n; r += step) { if (lane == 31) tg[sg] = v; barrier; ...;
 * barrier; x = tg[0]; } with n and step read from buffers: r is named only by the loop's
 * condition, and the next iteration's store to slot 0 races with this one's read. */
static void test_carry(void) {
  prog_new(A);
  uint32_t b = P->body, hdr, body, latch;
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t sg = p_coord(b, "simdgroup_index_in_threadgroup", 0);
  uint32_t n = p_arg(b, false, "int"), step = p_coord(b, "threads_per_threadgroup", 0);
  uint32_t tg = tg_alloc(b);
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t r = p_head(hdr, l, p_const(b, 0));
  p_loop_cond(l, p_bin(hdr, KL_IR_LT, r, n));
  p_back(r, p_bin(latch, KL_IR_ADD, r, step));
  uint32_t then_b, else_b;
  p_if(body, p_bin(body, KL_IR_EQ, lane, p_const(body, 31)), &then_b, &else_b);
  P->ins[P->blocks[body].ins[P->blocks[body].n - 1]].blk[1] = KL_IR_NONE;
  uint32_t st = tg_store(then_b, tg, sg, fval(then_b));
  barrier(body, KL_IR_MEM_THREADGROUP);
  uint32_t rd = tg_load(body, tg, p_const(body, 0));
  run_tg(NULL);
  check("tgrace-carry", N == 1 && has(rd, st, l), "%zu races; want the carry's read, then the "
        "next iteration's store", N);
}

/* tg[0] = 1.5 by every thread twice: one value, no race; if (lid >= 1) return; tg[0] = x; ... =
 * tg[0]: thread 0 alone. */
static void test_benign(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tg = tg_alloc(b);
  uint32_t c = fval(b);
  tg_store(b, tg, p_const(b, 0), c);
  tg_store(b, tg, p_const(b, 0), c);
  run_tg(NULL);
  check("tgrace-same-value", N == 0, "%zu races between stores of one value", N);
  prog_new(A);
  b = P->body;
  lid = p_coord(b, "thread_position_in_threadgroup", 0);
  tg = tg_alloc(b);
  uint32_t then_b, else_b;
  uint32_t iff = p_if(b, p_ubin(b, KL_IR_GE, lid, p_const(b, 1)), &then_b, &else_b);
  P->ins[iff].blk[1] = KL_IR_NONE;
  kl_ir_emit(P, then_b, KL_IR_RETURN, NULL, 0);
  tg_store(b, tg, p_const(b, 0), p_op(b, KL_IR_CAST, lid, 0, 0));
  tg_load(b, tg, p_const(b, 0));
  run_tg(NULL);
  check("tgrace-early-return", N == 0, "%zu races where thread 0 alone runs", N);
}

/* tg[lid] = v; ... = tg[lid + 32]: two SIMD groups race; a launch of 32 threads has one. */
static void test_launch(void) {
  for (int small = 0; small < 2; small++) {
    prog_new(A);
    uint32_t b = P->body;
    uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
    uint32_t tg = tg_alloc(b);
    tg_store(b, tg, lid, fval(b));
    tg_load(b, tg, p_ubin(b, KL_IR_ADD, lid, p_const(b, 32)));
    int64_t size[3] = {32, 1, 1};
    run_tg(small ? size : NULL);
    check(small ? "tgrace-launch-32" : "tgrace-launch-unknown", small ? N == 0 : N == 1,
          "%zu races", N);
  }
}

/* One store by many threads: tg[k] = lid for k = 0 and lid / 16 races with itself, a compound
 * tg[0] += 1.5 as well (it reads the element first); under `if (lid == 0)`, or to tg[lid], none. */
static void test_self(void) {
  for (int k = 0; k < 5; k++) {
    prog_new(A);
    uint32_t b = P->body;
    uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
    uint32_t tg = tg_alloc(b);
    if (k == 3) {
      uint32_t then_b, else_b;
      uint32_t iff = p_if(b, p_ubin(b, KL_IR_EQ, lid, p_const(b, 0)), &then_b, &else_b);
      P->ins[iff].blk[1] = KL_IR_NONE;
      b = then_b;
    }
    uint32_t idx = k == 1   ? p_ubin(b, KL_IR_DIV, lid, p_const(b, 16))
                   : k == 4 ? lid
                            : p_const(b, 0);
    uint32_t st = tg_store(b, tg, idx, k == 2 ? fval(b) : p_op(b, KL_IR_CAST, lid, 0, 0));
    if (k == 2) P->ins[st].sub = KL_IR_ADD;
    run_tg(NULL);
    static const char *const name[] = {"tgrace-self-fixed", "tgrace-self-shared", "tgrace-self-add",
                                       "tgrace-self-lid0", "tgrace-self-own"};
    bool want = k < 3;
    check(name[k], want ? N == 1 && has(st, st, 0) : N == 0, "%zu races", N);
  }
}

/* A SIMD-group matrix call (simdgroup_load or simdgroup_store) of tg + off, 16 elements a row. */
static uint32_t tg_matrix(uint32_t b, const char *name, uint32_t tg, uint32_t off) {
  uint32_t v = p_op(b, KL_IR_CALL, fval(b), p_index(b, tg, off, 4), p_const(b, 16));
  P->ins[v].name = name;
  return v;
}

/* simdgroup_load(m, tg, 16); then simdgroup_store(m, tg + 8 sg, 16): the other SIMD group's
 * store overwrites what this one loaded, unless a barrier comes between; storing to tg + 128
 * touches none of it. */
static void test_matrix(void) {
  for (int k = 0; k < 3; k++) {
    prog_new(A);
    uint32_t b = P->body;
    uint32_t sg = p_coord(b, "simdgroup_index_in_threadgroup", 0);
    uint32_t tg = tg_alloc(b);
    uint32_t ld = tg_matrix(b, "simdgroup_load", tg, p_const(b, 0));
    if (k == 1) barrier(b, KL_IR_MEM_THREADGROUP);
    uint32_t off = p_ubin(b, KL_IR_MUL, sg, p_const(b, 8));
    if (k == 2) off = p_ubin(b, KL_IR_ADD, off, p_const(b, 128));
    uint32_t st = tg_matrix(b, "simdgroup_store", tg, off);
    run_tg(NULL);
    static const char *const name[] = {"tgrace-matrix", "tgrace-matrix-barrier",
                                       "tgrace-matrix-apart"};
    check(name[k], k ? N == 0 : N == 1 && has(ld, st, 0) && R[0].second_store, "%zu races", N);
  }
}

/* while (r < n) { tg[lid] = v; barrier; ... = tg[lid + 1]; r2 = r + 64; if (C) barrier; r = r2; }:
 * C is the loop's test for its next trip computed again (`r2 < n`, `n > r2`, a do-while's `r2 <
 * n`), so a thread that skips the barrier leaves: no race. Under `r2 + 64 < n` the loop can come
 * round without it: the next iteration's store races with this one's read. */
static void test_next_test(void) {
  static const char *const name[] = {"tgrace-next-test", "tgrace-next-test-mirrored",
                                     "tgrace-next-test-do-while", "tgrace-next-test-late"};
  for (int k = 0; k < 4; k++) {
    prog_new(A);
    uint32_t b = P->body, hdr, body, latch, then_b, else_b;
    uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
    uint32_t n = p_arg(b, false, "int");
    uint32_t tg = tg_alloc(b);
    uint32_t l = p_loop(b, &hdr, &body, &latch);
    uint32_t r = p_head(hdr, l, p_const(b, 0));
    if (k != 2) p_loop_cond(l, p_bin(hdr, KL_IR_LT, r, n));
    uint32_t st = tg_store(body, tg, lid, fval(body));
    barrier(body, KL_IR_MEM_THREADGROUP);
    uint32_t rd = tg_load(body, tg, p_ubin(body, KL_IR_ADD, lid, p_const(body, 1)));
    uint32_t r2 = p_bin(body, KL_IR_ADD, r, p_const(body, 64));
    uint32_t x = k == 3 ? p_bin(body, KL_IR_ADD, r2, p_const(body, 64)) : r2;
    p_if(body, k == 1 ? p_bin(body, KL_IR_GT, n, x) : p_bin(body, KL_IR_LT, x, n), &then_b,
         &else_b);
    P->ins[P->blocks[body].ins[P->blocks[body].n - 1]].blk[1] = KL_IR_NONE;
    barrier(then_b, KL_IR_MEM_THREADGROUP);
    p_back(r, r2);
    if (k == 2) {
      P->ins[l].flags |= KL_IR_F_DO_WHILE;
      p_loop_cond(l, p_bin(latch, KL_IR_LT, r2, n));
    }
    run_tg(NULL);
    if (k == 3)
      check(name[k], N == 1 && has(rd, st, l), "%zu races; want the read, then the store in the "
            "next iteration", N);
    else
      check(name[k], N == 0, "%zu races under the loop's own next test", N);
  }
}

int main(void) {
  A = kl_arena_new();
  test_straight();
  test_back_edge();
  test_carry();
  test_benign();
  test_launch();
  test_self();
  test_matrix();
  test_next_test();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
