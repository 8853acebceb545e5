/* Unit tests for value ranges (analyzer/passes/ranges.h) on IR programs built by hand:
 * coordinates under a known launch, arithmetic, loop counters inside and after their loops,
 * guards by early return, break and continue, branches, &&, || and !, clamps, the symbolic
 * bounds bounds-guard asks for, and an index a constant past its part's bound. */
#include "analyzer/passes/ranges.h"

#include <stdlib.h>

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;
static struct kl_ranges *R;

static void run(const struct kl_ranges_launch *l) {
  struct kl_scev *s = kl_scev_run(A, P);
  R = kl_ranges_run(A, P, s, l);
  if (getenv("KL_RANGES_DUMP")) kl_ranges_dump(R, stdout);
}

static void check_range(const char *name, struct kl_range got, int64_t lo, int64_t hi) {
  check(name, got.lo == lo && got.hi == hi, "got [%lld, %lld], want [%lld, %lld]",
        (long long)got.lo, (long long)got.hi, (long long)lo, (long long)hi);
}

/* A marker instruction at the point of a query. */
static uint32_t here(uint32_t b) {
  return kl_ir_emit(P, b, KL_IR_NOP, NULL, 0);
}

static void test_coords(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tid = p_coord(b, "thread_index_in_threadgroup", 0);
  uint32_t sg = p_coord(b, "simdgroup_index_in_threadgroup", 0);
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t eight = p_const(b, 8);
  uint32_t t8 = p_ubin(b, KL_IR_DIV, tid, eight), s8 = p_ubin(b, KL_IR_DIV, sg, eight);
  uint32_t l8 = p_ubin(b, KL_IR_DIV, lid, eight);
  uint32_t rem = p_ubin(b, KL_IR_REM, gid, eight), msk = p_ubin(b, KL_IR_AND, gid, p_const(b, 15));
  uint32_t shr = p_ubin(b, KL_IR_SHR, tid, p_const(b, 5));
  uint32_t wrap = p_ubin(b, KL_IR_SUB, lid, p_const(b, 1));
  P->ins[wrap].type = "uint";
  struct kl_ranges_launch l = {{64, 1, 1}, {0, 0, 0}, 0};
  run(&l);
  check_range("ranges-lid-tg64", kl_ranges_of(R, lid), 0, 63);
  check_range("ranges-lane", kl_ranges_of(R, lane), 0, 31);
  check_range("ranges-gid-unknown-grid", kl_ranges_of(R, gid), 0, UINT32_MAX);
  check_range("ranges-rem", kl_ranges_of(R, rem), 0, 7);
  check_range("ranges-and", kl_ranges_of(R, msk), 0, 15);
  check_range("ranges-shr", kl_ranges_of(R, shr), 0, 1);
  check_range("ranges-unsigned-wrap", kl_ranges_of(R, wrap), 0, UINT32_MAX);
  struct kl_ranges_launch l256 = {{256, 1, 1}, {0, 0, 0}, 0};
  run(&l256);
  check_range("ranges-tid-div8", kl_ranges_of(R, t8), 0, 31);
  check_range("ranges-sgid-div8", kl_ranges_of(R, s8), 0, 0);
  check_range("ranges-lid-div8", kl_ranges_of(R, l8), 0, 31);
  run(NULL);
  check_range("ranges-lid-no-launch", kl_ranges_of(R, lid), 0, 1023);
}

static void test_counted_loop(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), hundred = p_const(b, 100);
  uint32_t zero = p_const(b, 0), one = p_const(b, 1);
  uint32_t i, body, j, body2;
  uint32_t li = p_for(b, zero, KL_IR_LT, hundred, one, &i, &body);
  uint32_t in_i = here(body);
  uint32_t after = p_phi(b, KL_IR_PHI_EXIT, li, i, 0);
  uint32_t lj = p_for(b, zero, KL_IR_LT, n, one, &j, &body2);
  uint32_t in_j = here(body2);
  uint32_t after_j = here(b);
  (void)lj;
  run(NULL);
  check_range("ranges-loop-body", kl_ranges_at(R, i, in_i), 0, 99);
  check_range("ranges-loop-phi", kl_ranges_of(R, i), 0, 100);
  check_range("ranges-loop-after", kl_ranges_of(R, after), 100, 100);
  struct kl_ranges_bound bd;
  check("ranges-loop-symbolic",
        kl_ranges_upper(R, j, in_j, &bd) && bd.w == n && bd.k == 0 && bd.by == P->ins[lj].ops[0],
        "j < n not known in the body of for (j = 0; j < n; j++)");
  check_range("ranges-loop-symbolic-range", kl_ranges_at(R, j, in_j), 0, INT32_MAX - 1);
  check("ranges-loop-after-unbounded", !kl_ranges_bounded_above(R, j, after_j, NULL),
        "the counter bounded after its loop");
}

static void test_strided_nested(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t i, body;
  p_for(b, lane, KL_IR_LT, p_const(b, 1000), p_const(b, 32), &i, &body);
  uint32_t in_i = here(body);
  uint32_t x, bx, y, by;
  p_for(b, p_const(b, 0), KL_IR_LT, p_const(b, 4), p_const(b, 1), &x, &bx);
  p_for(bx, p_const(bx, 0), KL_IR_LE, p_const(bx, 7), p_const(bx, 1), &y, &by);
  uint32_t xy = p_bin(by, KL_IR_ADD, p_bin(by, KL_IR_MUL, x, p_const(by, 8)), y);
  uint32_t in_y = here(by);
  run(NULL);
  check_range("ranges-strided-body", kl_ranges_at(R, i, in_i), 0, 999);
  check_range("ranges-strided-phi", kl_ranges_of(R, i), 0, 1031);
  check_range("ranges-nested-outer", kl_ranges_at(R, x, in_y), 0, 3);
  check_range("ranges-nested-inner", kl_ranges_at(R, y, in_y), 0, 7);
  check_range("ranges-nested-sum", kl_ranges_of(R, xy), 0, 31);
}

static void test_early_return(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t before = here(b);
  uint32_t tb, eb;
  uint32_t ge = p_bin(b, KL_IR_GE, gid, n);
  p_if(b, ge, &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_RETURN, NULL, 0);
  uint32_t after = here(b);
  uint32_t hundred = p_bin(b, KL_IR_LT, gid, p_const(b, 100));
  uint32_t if2 = p_if(b, hundred, &tb, &eb);
  uint32_t idx = p_bin(tb, KL_IR_MUL, gid, p_const(tb, 4));
  uint32_t in_else = here(eb);
  (void)if2;
  run(NULL);
  uint32_t by = 0;
  check("ranges-before-guard", !kl_ranges_bounded_above(R, gid, before, NULL),
        "gid bounded before its guard");
  check("ranges-after-return", kl_ranges_bounded_above(R, gid, after, &by) && by == ge,
        "gid < n not known after if (gid >= n) return");
  check_range("ranges-guarded-derived", kl_ranges_of(R, idx), 0, 396);
  /* gid < n, an int, still holds in the else branch. */
  check_range("ranges-else-constant", kl_ranges_at(R, gid, in_else), 100, INT32_MAX - 1);
}

static void test_branches(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t idx = p_coord(b, "thread_position_in_grid", 0);
  uint32_t tb, eb;
  uint32_t lt = p_bin(b, KL_IR_LT, idx, n);
  p_if(b, lt, &tb, &eb);
  uint32_t in_then = here(tb), in_else = here(eb);
  uint32_t nm1 = p_bin(b, KL_IR_SUB, n, p_const(b, 1));
  uint32_t mn = p_bin(b, KL_IR_MIN, idx, nm1);
  uint32_t sel = p_op(b, KL_IR_SELECT, lt, idx, nm1);
  /* if (idx >= n) x = n - 1; (else x = idx) */
  uint32_t ge = p_bin(b, KL_IR_GE, idx, n);
  uint32_t if3 = p_if(b, ge, &tb, &eb);
  uint32_t x = p_phi(b, KL_IR_PHI_IF, if3, nm1, idx);
  uint32_t end = here(b);
  run(NULL);
  uint32_t by = 0;
  struct kl_ranges_bound bd;
  check("ranges-then-bounded", kl_ranges_bounded_above(R, idx, in_then, &by) && by == lt,
        "idx < n not known in the then branch");
  check("ranges-else-unbounded", !kl_ranges_bounded_above(R, idx, in_else, NULL),
        "idx bounded in the else branch of if (idx < n)");
  check("ranges-min-clamp",
        kl_ranges_upper(R, mn, end, &bd) && bd.w == n && bd.k == 0 && bd.by == mn,
        "min(idx, n - 1) not below n");
  check("ranges-select-clamp", kl_ranges_upper(R, sel, end, &bd) && bd.w == n && bd.k == 0,
        "idx < n ? idx : n - 1 not below n");
  check("ranges-if-clamp", kl_ranges_upper(R, x, end, &bd) && bd.w == n && bd.k == 0,
        "if (idx >= n) x = n - 1 not below n");
  check("ranges-unclamped", !kl_ranges_bounded_above(R, idx, end, NULL),
        "idx bounded after the branches");
}

static void test_tail(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t i = p_bin(b, KL_IR_MUL, gid, p_const(b, 4));
  uint32_t tb, eb;
  uint32_t le = p_bin(b, KL_IR_LE, p_bin(b, KL_IR_ADD, i, p_const(b, 4)), n);
  p_if(b, le, &tb, &eb);
  uint32_t i3 = p_bin(tb, KL_IR_ADD, i, p_const(tb, 3));
  uint32_t i4 = p_bin(tb, KL_IR_ADD, i, p_const(tb, 4));
  uint32_t at = here(tb);
  run(NULL);
  struct kl_ranges_bound b3, b4;
  check("ranges-tail-i3", kl_ranges_upper(R, i3, at, &b3) && b3.w == n && b3.k == 0 && b3.by == le,
        "i + 3 not below n under i + 4 <= n");
  check("ranges-tail-i4", kl_ranges_upper(R, i4, at, &b4) && b4.w == n && b4.k == 1,
        "i + 4 not below n + 1 under i + 4 <= n");
}

static void test_logic(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), m = p_arg(b, false, "int");
  uint32_t x = p_coord(b, "thread_position_in_grid", 0);
  uint32_t y = p_coord(b, "thread_position_in_grid", 1);
  uint32_t z = p_coord(b, "thread_position_in_grid", 2);
  uint32_t tb, eb;
  uint32_t both = p_bin(b, KL_IR_LAND, p_bin(b, KL_IR_LT, x, n), p_bin(b, KL_IR_LT, y, m));
  p_if(b, both, &tb, &eb);
  uint32_t in_and = here(tb), in_and_else = here(eb);
  uint32_t either = p_bin(b, KL_IR_LOR, p_bin(b, KL_IR_GE, x, n), p_bin(b, KL_IR_GE, y, m));
  p_if(b, either, &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_RETURN, NULL, 0);
  uint32_t after_or = here(b);
  /* if (!(z < n)) return; as a select-lowered && too: (z < n) && (z < 50) */
  uint32_t zlt = p_bin(b, KL_IR_LT, z, n);
  uint32_t sel = p_op(b, KL_IR_SELECT, zlt, p_bin(b, KL_IR_LT, z, p_const(b, 50)), p_const(b, 0));
  p_if(b, p_not(b, sel), &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_RETURN, NULL, 0);
  uint32_t after_not = here(b);
  /* if (x < n && load > 0) lowered as an IF and a PHI of the load's test and false. */
  uint32_t w = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t xlt = p_bin(b, KL_IR_LT, w, n);
  uint32_t ifa = p_if(b, xlt, &tb, &eb);
  uint32_t ld = p_op(tb, KL_IR_LOAD, p_index(tb, p_arg(tb, true, "float"), w, 4), 0, 0);
  uint32_t pos = p_bin(tb, KL_IR_GT, ld, p_const(tb, 0));
  uint32_t ph = p_phi(b, KL_IR_PHI_IF, ifa, pos, p_const(eb, 0));
  p_if(b, ph, &tb, &eb);
  uint32_t in_phi_and = here(tb), in_phi_else = here(eb);
  run(NULL);
  check("ranges-and-as-phi", kl_ranges_bounded_above(R, w, in_phi_and, NULL),
        "w < n not known where (w < n && load > 0), lowered as a PHI, holds");
  check("ranges-and-as-phi-else", !kl_ranges_bounded_above(R, w, in_phi_else, NULL),
        "w bounded where the PHI-lowered && failed");
  check("ranges-and-then",
        kl_ranges_bounded_above(R, x, in_and, NULL) && kl_ranges_bounded_above(R, y, in_and, NULL),
        "x < n && y < m not split in the then branch");
  check("ranges-and-else", !kl_ranges_bounded_above(R, x, in_and_else, NULL),
        "x bounded where x < n && y < m failed");
  check("ranges-or-return",
        kl_ranges_bounded_above(R, x, after_or, NULL) &&
            kl_ranges_bounded_above(R, y, after_or, NULL),
        "x >= n || y >= m then return did not bound both");
  check_range("ranges-not-select", kl_ranges_at(R, z, after_not), 0, 49);
  check("ranges-not-select-symbolic", kl_ranges_bounded_above(R, z, after_not, NULL),
        "!((z < n) && (z < 50)) then return did not bound z");
}

static void test_break_continue(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), one = p_const(b, 1), zero = p_const(b, 0);
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  /* for (;;) { if (i >= n) break; use(i); i++ } */
  uint32_t hdr, body, latch, tb, eb;
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t i = p_head(hdr, l, zero);
  p_if(body, p_bin(body, KL_IR_GE, i, n), &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_BREAK, NULL, 0);
  uint32_t use_i = here(body);
  p_back(i, p_bin(latch, KL_IR_ADD, i, one));
  uint32_t after = here(b);
  /* for (k = 0; k < n; k++) { x = lid + k; if (x >= n) continue; use(x); } */
  uint32_t k, kb;
  p_for(b, zero, KL_IR_LT, n, one, &k, &kb);
  uint32_t x = p_bin(kb, KL_IR_ADD, lid, k);
  p_if(kb, p_bin(kb, KL_IR_GE, x, n), &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_CONTINUE, NULL, 0);
  uint32_t use_x = here(kb);
  /* A loop that grows x by 2 forever: widened, not hung. */
  uint32_t h2, b2, l2;
  uint32_t w = p_loop(b, &h2, &b2, &l2);
  uint32_t g = p_head(h2, w, zero);
  p_back(g, p_bin(l2, KL_IR_ADD, g, p_const(l2, 2)));
  run(NULL);
  check("ranges-break-guard", kl_ranges_bounded_above(R, i, use_i, NULL),
        "i < n not known after if (i >= n) break");
  check("ranges-after-break-loop", !kl_ranges_bounded_above(R, i, after, NULL),
        "i bounded after a loop left by break");
  check("ranges-continue-guard", kl_ranges_bounded_above(R, x, use_x, NULL),
        "x < n not known after if (x >= n) continue");
  check_range("ranges-widen", kl_ranges_of(R, g), 0, KL_RANGE_POS_INF);
}

static void test_parts(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t M = p_arg(b, false, "int"), K = p_arg(b, false, "int");
  uint32_t row = p_coord(b, "thread_position_in_grid", 1);
  uint32_t col = p_coord(b, "thread_position_in_grid", 0);
  uint32_t tb, eb;
  p_if(b, p_bin(b, KL_IR_GE, row, M), &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_RETURN, NULL, 0);
  uint32_t k, kb;
  p_for(b, p_const(b, 0), KL_IR_LT, K, p_const(b, 1), &k, &kb);
  uint32_t idx = p_bin(kb, KL_IR_ADD, p_bin(kb, KL_IR_MUL, row, K), k);
  uint32_t bad = p_bin(kb, KL_IR_ADD, p_bin(kb, KL_IR_MUL, col, K), k);
  uint32_t at = here(kb);
  /* blocks[row].q[k] and blocks[col].q[k]: the row is what must be bounded. */
  uint32_t buf = p_arg(kb, true, "float");
  uint32_t fld = p_op(kb, KL_IR_MEMBER, p_index(kb, buf, row, 36), 0, 0);
  P->ins[fld].name = "q";
  uint32_t good_addr = p_index(kb, fld, k, 4);
  uint32_t fld2 = p_op(kb, KL_IR_MEMBER, p_index(kb, buf, col, 36), 0, 0);
  P->ins[fld2].name = "q";
  uint32_t bad_addr = p_index(kb, fld2, k, 4);
  uint32_t at2 = here(kb);
  run(NULL);
  uint32_t by = 0;
  check("ranges-address-bounded", kl_ranges_address_bounded(R, good_addr, at2, &by) && by,
        "blocks[row].q[k] not bounded along its address");
  check("ranges-address-unbounded", !kl_ranges_address_bounded(R, bad_addr, at2, NULL),
        "blocks[col].q[k] bounded though col is not compared");
  check("ranges-parts-bounded", kl_ranges_parts_bounded(R, idx, at, &by) && by,
        "row*K + k not bounded part by part");
  check("ranges-parts-unbounded", !kl_ranges_parts_bounded(R, bad, at, NULL),
        "col*K + k bounded though col is not compared");
  const struct kl_ranges_fact *fs;
  check("ranges-facts-at", kl_ranges_facts_at(R, at, &fs) >= 2, "facts at the access missing");
}

/* An index a constant past the part its path bounds (`c + 1` under `c < n`, also after a row's
 * start `row * n`) can reach the bound; not when a check covers the constant, when the index is
 * clamped, when another value computed from the part is checked (`t + 1 < m`, t = c % m), when
 * the bound leaves room (`i < n - 1`), nor for a part that is the same in every thread. */
static void test_past_bound(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), m = p_arg(b, false, "int");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tg = p_coord(b, "threads_per_threadgroup", 0);
  uint32_t row = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t c, cb;
  uint32_t loop = p_for(b, lid, KL_IR_LT, n, tg, &c, &cb);
  uint32_t next = p_bin(cb, KL_IR_ADD, c, p_const(cb, 1));
  uint32_t rs = p_bin(cb, KL_IR_ADD, p_bin(cb, KL_IR_MUL, row, n), c);
  uint32_t rowed = p_bin(cb, KL_IR_ADD, rs, p_const(cb, 1));
  uint32_t nm1 = p_bin(cb, KL_IR_SUB, n, p_const(cb, 1));
  uint32_t clamped = p_bin(cb, KL_IR_MIN, next, nm1);
  uint32_t after_clamp = p_bin(cb, KL_IR_ADD, p_bin(cb, KL_IR_MIN, c, nm1), p_const(cb, 1));
  uint32_t at = here(cb);
  uint32_t tb, eb;
  p_if(cb, p_bin(cb, KL_IR_LT, p_bin(cb, KL_IR_ADD, c, p_const(cb, 1)), n), &tb, &eb);
  uint32_t in_checked = here(tb);
  uint32_t t = p_bin(cb, KL_IR_REM, c, m);
  p_if(cb, p_bin(cb, KL_IR_LT, p_bin(cb, KL_IR_ADD, t, p_const(cb, 1)), m), &tb, &eb);
  uint32_t in_through = here(tb);
  uint32_t i, ib;
  p_for(b, lid, KL_IR_LT, p_bin(b, KL_IR_SUB, n, p_const(b, 1)), tg, &i, &ib);
  uint32_t inext = p_bin(ib, KL_IR_ADD, i, p_const(ib, 1));
  uint32_t in_i = here(ib);
  uint32_t k, kb;
  p_for(b, p_const(b, 0), KL_IR_LT, n, p_const(b, 1), &k, &kb);
  uint32_t knext = p_bin(kb, KL_IR_ADD, k, p_const(kb, 1));
  uint32_t in_k = here(kb);
  run(NULL);
  struct kl_ranges_bound bd = {0, 0, 0};
  check("ranges-past-neighbour",
        kl_ranges_past_bound(R, next, at, &bd) && bd.w == n && bd.k == 1 &&
            bd.by == P->ins[loop].ops[0],
        "c + 1 under c < n not found able to reach n (w %u k %lld)", bd.w, (long long)bd.k);
  check("ranges-past-row", kl_ranges_past_bound(R, rowed, at, NULL),
        "row * n + c + 1 under c < n not found able to pass the row");
  check("ranges-past-after-clamp", kl_ranges_past_bound(R, after_clamp, at, NULL),
        "min(c, n - 1) + 1 not found able to reach n");
  check("ranges-past-not-plain", !kl_ranges_past_bound(R, c, at, NULL) &&
                                     !kl_ranges_past_bound(R, rs, at, NULL),
        "an index with no constant added found past its bound");
  check("ranges-past-clamped", !kl_ranges_past_bound(R, clamped, at, NULL),
        "min(c + 1, n - 1) found past n");
  check("ranges-past-checked", !kl_ranges_past_bound(R, next, in_checked, NULL),
        "c + 1 found past n under if (c + 1 < n)");
  check("ranges-past-through", !kl_ranges_past_bound(R, next, in_through, NULL),
        "c + 1 found past n where t + 1 < m is checked for t = c %% m");
  check("ranges-past-room", !kl_ranges_past_bound(R, inext, in_i, NULL),
        "i + 1 found past n under i < n - 1");
  check("ranges-past-uniform", !kl_ranges_past_bound(R, knext, in_k, NULL),
        "k + 1 of a loop every thread runs alike found past n");
}

/* The thread's place in a tile past the tile's start, which the loop bounds (`i0 + lid` under
 * `i0 < n`, i0 the same in every thread), can reach n in the row's last tile: the lid added is
 * named; not when the sum is checked (`if (i0 + lid < n)`), nor when lid itself is compared with
 * a size on the path, nor for a coordinate of the whole grid (no small range of its own). */
static void test_past_tile(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t tg = p_coord(b, "threads_per_threadgroup", 0);
  uint32_t i0, ib;
  p_for(b, p_const(b, 0), KL_IR_LT, n, tg, &i0, &ib);
  uint32_t idx = p_bin(ib, KL_IR_ADD, i0, lid);
  uint32_t far = p_bin(ib, KL_IR_ADD, i0, gid);
  uint32_t at = here(ib);
  uint32_t tb, eb;
  p_if(ib, p_bin(ib, KL_IR_LT, p_bin(ib, KL_IR_ADD, i0, lid), n), &tb, &eb);
  uint32_t in_checked = here(tb);
  p_if(ib, p_bin(ib, KL_IR_LT, lid, n), &tb, &eb);
  uint32_t in_lid = here(tb);
  run(NULL);
  struct kl_ranges_bound bd = {0, 0, 0};
  uint32_t added = 0;
  check("ranges-past-tile", kl_ranges_past_by(R, idx, at, &bd, &added) && bd.w == n &&
                                added == lid,
        "i0 + lid under i0 < n not found able to reach n (w %u added %u)", bd.w, added);
  check("ranges-past-tile-checked", !kl_ranges_past_by(R, idx, in_checked, NULL, &added),
        "i0 + lid found past n under if (i0 + lid < n)");
  check("ranges-past-tile-lid-compared", !kl_ranges_past_by(R, idx, in_lid, NULL, &added),
        "i0 + lid found past n where lid < n is checked");
  check("ranges-past-tile-grid", !kl_ranges_past_by(R, far, at, NULL, &added),
        "i0 + gid, gid a grid position with no small range, found past n");
}

/* A walk of the thread's own bounded by a constant alone (`i` of `for (i = lid; i < 64; i +=
 * tg)`, also after a row's start `row * n`) is found with that bound; not when a value bounds it
 * too (`if (i < n)`), nor a walk bounded by a value. */
static void test_const_walk(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tg = p_coord(b, "threads_per_threadgroup", 0);
  uint32_t row = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t i, ib, j, jb;
  uint32_t loop = p_for(b, lid, KL_IR_LT, p_const(b, 64), tg, &i, &ib);
  uint32_t rowed = p_bin(ib, KL_IR_ADD, p_bin(ib, KL_IR_MUL, row, n), i);
  uint32_t at = here(ib);
  uint32_t tb, eb;
  p_if(ib, p_bin(ib, KL_IR_LT, i, n), &tb, &eb);
  uint32_t in_checked = here(tb);
  p_for(b, lid, KL_IR_LT, n, tg, &j, &jb);
  uint32_t in_j = here(jb);
  run(NULL);
  uint32_t part = 0;
  struct kl_ranges_bound bd = {0, 0, 0};
  check("ranges-const-walk", kl_ranges_const_walk(R, rowed, at, &part, &bd) && part == i &&
                                 !bd.w && bd.k == 64 && bd.by == P->ins[loop].ops[0],
        "row * n + i under i < 64 not found bounded by 64 alone (k %lld)", (long long)bd.k);
  check("ranges-const-walk-checked", !kl_ranges_const_walk(R, rowed, in_checked, &part, NULL),
        "i found bounded by a constant alone under if (i < n)");
  check("ranges-const-walk-value", !kl_ranges_const_walk(R, j, in_j, &part, NULL),
        "j of j < n found bounded by a constant alone");
}

/* t * tg + lid under t < (n + tg - 1) / tg (a count of tiles rounded up) can pass n: lid is
 * named; not under t < n / tg (whole tiles), nor when t * tg + lid is checked. */
static void test_ceil_tiles(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tg = p_coord(b, "threads_per_threadgroup", 0);
  uint32_t up = p_bin(b, KL_IR_DIV, p_bin(b, KL_IR_SUB, p_bin(b, KL_IR_ADD, n, tg), p_const(b, 1)),
                      tg);
  uint32_t down = p_bin(b, KL_IR_DIV, n, tg);
  uint32_t t, tb, u, ub, cb, ce;
  p_for(b, p_const(b, 0), KL_IR_LT, up, p_const(b, 1), &t, &tb);
  uint32_t idx = p_bin(tb, KL_IR_ADD, p_bin(tb, KL_IR_MUL, t, tg), lid);
  uint32_t at = here(tb);
  p_if(tb, p_bin(tb, KL_IR_LT, idx, n), &cb, &ce);
  uint32_t in_checked = here(cb);
  p_for(b, p_const(b, 0), KL_IR_LT, down, p_const(b, 1), &u, &ub);
  uint32_t whole = p_bin(ub, KL_IR_ADD, p_bin(ub, KL_IR_MUL, u, tg), lid);
  uint32_t at_whole = here(ub);
  run(NULL);
  uint32_t added = 0;
  struct kl_ranges_bound bd = {0, 0, 0};
  check("ranges-ceil-tiles", kl_ranges_ceil_tiles(R, idx, at, &added, &bd) && added == lid &&
                                 bd.w == n,
        "t * tg + lid under t < (n + tg - 1) / tg not found able to pass n");
  check("ranges-ceil-tiles-whole", !kl_ranges_ceil_tiles(R, whole, at_whole, &added, NULL),
        "u * tg + lid under u < n / tg found able to pass n");
  check("ranges-ceil-tiles-checked", !kl_ranges_ceil_tiles(R, idx, in_checked, &added, NULL),
        "t * tg + lid found past n under if (t * tg + lid < n)");
}

/* A return in an inlined helper leaves the helper: its guard holds for the rest of the helper,
 * not for the caller after it; a loop the helper returns from is not left by its test alone. */
static void test_helper_return(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t site = kl_ir_site_new(P, (TSNode){0}, NULL, 0);
  uint32_t tb, eb;
  uint32_t ge = p_bin(b, KL_IR_GE, gid, n);
  uint32_t iff = p_if(b, ge, &tb, &eb);
  uint32_t ret = kl_ir_emit(P, tb, KL_IR_RETURN, NULL, 0);
  uint32_t in_helper = here(b);
  P->ins[ge].site = P->ins[iff].site = P->ins[ret].site = P->ins[in_helper].site = site;
  uint32_t in_caller = here(b);
  /* The helper: for (i = 0; i < n; i++) if (i == gid) return; then the caller goes on. */
  uint32_t i, body;
  uint32_t l = p_for(b, p_const(b, 0), KL_IR_LT, p_const(b, 100), p_const(b, 1), &i, &body);
  uint32_t if2 = p_if(body, p_bin(body, KL_IR_EQ, i, gid), &tb, &eb);
  uint32_t ret2 = kl_ir_emit(P, tb, KL_IR_RETURN, NULL, 0);
  P->ins[l].site = P->ins[if2].site = P->ins[ret2].site = site;
  uint32_t at = here(b);
  run(NULL);
  check("ranges-helper-return-inside", kl_ranges_bounded_above(R, gid, in_helper, NULL),
        "gid < n not known in the rest of the helper");
  check("ranges-helper-return-caller", !kl_ranges_bounded_above(R, gid, in_caller, NULL),
        "the helper's early return bounded the caller's gid");
  check_range("ranges-helper-loop-return", kl_ranges_at(R, i, at), 0, 100);
}

/* Loops 64 deep, each with a counter and a value that grows (which takes rounds): the cost must
 * not multiply with the depth, and the innermost counter keeps its bound. */
static void test_deep(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t hundred = p_const(b, 100), one = p_const(b, 1), zero = p_const(b, 0);
  uint32_t i = 0;
  for (int d = 0; d < 64; d++) {
    uint32_t hdr, body, latch;
    uint32_t l = p_loop(b, &hdr, &body, &latch);
    i = p_head(hdr, l, zero);
    uint32_t x = p_head(hdr, l, one);
    p_loop_cond(l, p_bin(hdr, KL_IR_LT, i, hundred));
    p_back(x, p_bin(latch, KL_IR_MUL, x, p_const(latch, 2)));
    p_back(i, p_bin(latch, KL_IR_ADD, i, one));
    b = body;
  }
  uint32_t at = here(b);
  run(NULL);
  check_range("ranges-deep-nesting", kl_ranges_at(R, i, at), 0, 99);
}

/* Random structured programs, well formed or not (operands anywhere, missing back edges): both
 * passes and every query must run to the end without a fault (the suite runs this under ASan). */
static uint64_t rnd_state = 88172645463325252ull;

static uint32_t rnd(uint32_t n) {
  rnd_state ^= rnd_state << 13;
  rnd_state ^= rnd_state >> 7;
  rnd_state ^= rnd_state << 17;
  return n ? (uint32_t)(rnd_state % n) : 0;
}

static void random_block(uint32_t b, int depth, uint32_t *budget) {
  static const char *const coords[] = {"thread_position_in_grid", "thread_index_in_simdgroup",
                                       "threads_per_threadgroup", "simdgroup_index_in_threadgroup"};
  static const char *const types[] = {NULL, "int", "uint", "ushort", "float", "bool"};
  while (*budget && rnd(8)) {
    (*budget)--;
    uint32_t any = P->nins > 1 ? 1 + rnd(P->nins - 1) : 0, other = rnd(P->nins);
    uint32_t tb, eb, v = 0;
    switch (rnd(12)) {
    case 0:
      v = p_const(b, (int64_t)rnd(200) - 100);
      break;
    case 1:
      v = p_coord(b, coords[rnd(4)], (int)rnd(3));
      break;
    case 2:
      v = p_arg(b, rnd(2), "int");
      break;
    case 3:
    case 4:
      v = p_bin(b, (enum kl_ir_binop)(1 + rnd(KL_IR_MAX)), any, other);
      P->ins[v].flags = (uint8_t)rnd(3);
      break;
    case 5:
      v = p_op(b, KL_IR_SELECT, any, other, 1 + rnd(P->nins - 1));
      break;
    case 6:
      v = p_op(b, (enum kl_ir_op)(1 + rnd(KL_IR_NOPS - 1)), any, other, 0);
      break;
    case 7:
      if (depth > 4) break;
      v = p_if(b, any, &tb, &eb);
      random_block(tb, depth + 1, budget);
      if (rnd(2)) random_block(eb, depth + 1, budget);
      p_phi(b, KL_IR_PHI_IF, v, rnd(P->nins), rnd(P->nins));
      break;
    case 8: {
      if (depth > 4) break;
      uint32_t hdr, body, latch;
      uint32_t l = p_loop(b, &hdr, &body, &latch);
      uint32_t ph = p_head(hdr, l, any);
      p_loop_cond(l, p_bin(hdr, KL_IR_LT, ph, other));
      random_block(body, depth + 1, budget);
      uint32_t nx = p_bin(latch, rnd(2) ? KL_IR_ADD : KL_IR_MUL, ph, rnd(P->nins));
      if (rnd(4)) p_back(ph, nx);
      p_phi(b, KL_IR_PHI_EXIT, l, ph, 0);
      v = l;
      break;
    }
    case 9:
      v = kl_ir_emit(P, b, rnd(2) ? KL_IR_RETURN : rnd(2) ? KL_IR_BREAK : KL_IR_CONTINUE, NULL, 0);
      break;
    case 10:
      v = p_index(b, any, other, rnd(3) * 4);
      break;
    default:
      v = p_op(b, KL_IR_CAST, any, 0, 0);
      break;
    }
    if (v) P->ins[v].type = types[rnd(6)];
  }
}

static void test_random(void) {
  bool ok = true;
  int prog = 0;
  for (; prog < 300 && ok; prog++) {
    prog_new(A);
    uint32_t budget = 150;
    random_block(P->body, 0, &budget);
    struct kl_ranges_launch l = {{(int64_t)rnd(3) * 32, 1, 1}, {0, 0, 0}, 0};
    run(rnd(2) ? &l : NULL);
    for (uint32_t q = 0; q < 64 && P->nins > 1; q++) {
      uint32_t v = 1 + rnd(P->nins - 1), p = 1 + rnd(P->nins - 1), by;
      struct kl_range a = kl_ranges_at(R, v, p), base = kl_ranges_of(R, v);
      kl_ranges_bounded_above(R, v, p, &by);
      kl_ranges_parts_bounded(R, v, p, &by);
      /* A query only narrows what holds everywhere. */
      if (a.lo <= a.hi && (a.lo < base.lo || a.hi > base.hi)) ok = false;
    }
  }
  check("ranges-random-programs", ok, "program %d: a query widened a value's range", prog - 1);
}

/* run() under launch l, the grid's x dimension counted from value n. */
static void counted(const struct kl_ranges_launch *l, uint32_t n, int64_t add, int64_t div,
                    bool groups) {
  run(l);
  struct kl_ranges_count c[3] = {{n, add, div, groups}, {0, 0, 0, false}, {0, 0, 0, false}};
  kl_ranges_set_counts(R, c);
}

/* What a launch keeps in bounds (kl_ranges_address_covered): a grid counted from the kernel's
 * argument bounds div times its coordinate, and no more; a threadgroup's width bounds a part
 * within the stride of a guarded row. */
static void test_launch_cover(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "uint"), buf = p_arg(b, true, "float");
  uint32_t r0 = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t quad = p_coord(b, "thread_index_in_quadgroup", 0);
  uint32_t first = p_ubin(b, KL_IR_MUL, r0, p_const(b, 4));
  uint32_t shl = p_ubin(b, KL_IR_SHL, r0, p_const(b, 2));
  uint32_t a0 = p_index(b, buf, first, 4);
  uint32_t a1 = p_index(b, buf, p_ubin(b, KL_IR_ADD, first, p_const(b, 1)), 4);
  uint32_t a3 = p_index(b, buf, p_ubin(b, KL_IR_ADD, first, p_const(b, 3)), 4);
  uint32_t aq = p_index(b, buf, p_ubin(b, KL_IR_ADD, first, quad), 4);
  uint32_t as = p_index(b, buf, shl, 4);
  uint32_t ar = p_index(b, buf, r0, 4);
  uint32_t at = here(b);
  /* (n + 3) / 4 threadgroups: r0 * 4 <= n - 1, nothing past it. */
  struct kl_ranges_launch ceil4 = {{32, 1, 1}, {0, 0, 0}, 0};
  counted(&ceil4, n, 3, 4, true);
  check("cover-ceil-start", kl_ranges_address_covered(R, a0, at, NULL), "r0 * 4 < n not seen");
  check("cover-ceil-shl", kl_ranges_address_covered(R, as, at, NULL), "r0 << 2 < n not seen");
  check("cover-ceil-plus-1", !kl_ranges_address_covered(R, a1, at, NULL),
        "r0 * 4 + 1 may reach n under a ceiling division");
  check("cover-ceil-plus-quad", !kl_ranges_address_covered(R, aq, at, NULL),
        "r0 * 4 + quad lane may reach n + 2");
  check("cover-ceil-not-bounded", !kl_ranges_address_bounded(R, a0, at, NULL),
        "a launch is no comparison for kl_ranges_address_bounded");
  check("cover-coord-alone", !kl_ranges_address_covered(R, ar, at, NULL),
        "r0 alone is no start of a block of div");
  /* n / 4 threadgroups: r0 * 4 + 3 <= n - 1. */
  struct kl_ranges_launch floor4 = {{32, 1, 1}, {0, 0, 0}, 0};
  counted(&floor4, n, 0, 4, true);
  check("cover-floor-plus-3", kl_ranges_address_covered(R, a3, at, NULL), "r0 * 4 + 3 < n");
  check("cover-floor-plus-quad", kl_ranges_address_covered(R, aq, at, NULL),
        "r0 * 4 + quad lane < n");
  /* The count of threads bounds the thread position, not the threadgroup's; a count by 2 is no
   * bound of r0 * 4; no launch, no bound. */
  struct kl_ranges_launch threads = {{32, 1, 1}, {0, 0, 0}, 0};
  counted(&threads, n, 3, 4, false);
  check("cover-threads-not-groups", !kl_ranges_address_covered(R, a0, at, NULL),
        "a count of threads bounds no threadgroup position");
  struct kl_ranges_launch by2 = {{32, 1, 1}, {0, 0, 0}, 0};
  counted(&by2, n, 1, 2, true);
  check("cover-other-div", !kl_ranges_address_covered(R, a0, at, NULL),
        "(n + 1) / 2 groups leave r0 * 4 up to 2n");
  run(NULL);
  check("cover-no-launch", !kl_ranges_address_covered(R, a0, at, NULL), "no launch, no bound");

  /* row = tgid, `if (row >= rows) return;`, x[row * 256 + pos.x] and x[row * 256 + tid]. */
  prog_new(A);
  b = P->body;
  uint32_t rows = p_arg(b, false, "uint"), x = p_arg(b, true, "float");
  uint32_t row = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t px = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tid = p_coord(b, "thread_index_in_threadgroup", 0);
  uint32_t tb, eb;
  p_if(b, p_ubin(b, KL_IR_GE, row, rows), &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_RETURN, NULL, 0);
  uint32_t base = p_ubin(b, KL_IR_MUL, row, p_const(b, 256));
  uint32_t ax = p_index(b, x, p_ubin(b, KL_IR_ADD, base, px), 4);
  uint32_t at_ = p_index(b, x, p_ubin(b, KL_IR_ADD, px, base), 4);
  uint32_t atid = p_index(b, x, p_ubin(b, KL_IR_ADD, base, tid), 4);
  uint32_t q = here(b);
  struct kl_ranges_launch wide = {{256, 2, 1}, {0, 0, 0}, 0};
  run(&wide);
  check("cover-stride-pos-x", kl_ranges_address_covered(R, ax, q, NULL),
        "row * 256 + pos.x with pos.x < 256 not seen");
  check("cover-stride-commuted", kl_ranges_address_covered(R, at_, q, NULL),
        "pos.x + row * 256 not seen");
  check("cover-stride-tid", !kl_ranges_address_covered(R, atid, q, NULL),
        "tid < 512 passes the row's 256");
  check("cover-stride-not-bounded", !kl_ranges_address_bounded(R, ax, q, NULL),
        "kl_ranges_address_bounded counts no launch");
  struct kl_ranges_launch wider = {{512, 1, 1}, {0, 0, 0}, 0};
  run(&wider);
  check("cover-stride-wider", !kl_ranges_address_covered(R, ax, q, NULL),
        "pos.x < 512 passes the row's 256");
  run(NULL);
  check("cover-stride-unknown", !kl_ranges_address_covered(R, ax, q, NULL),
        "an unknown threadgroup may be 1024 wide");
}

int main(void) {
  A = kl_arena_new();
  test_coords();
  test_counted_loop();
  test_strided_nested();
  test_early_return();
  test_branches();
  test_tail();
  test_logic();
  test_break_continue();
  test_parts();
  test_past_bound();
  test_past_tile();
  test_const_walk();
  test_ceil_tiles();
  test_helper_return();
  test_deep();
  test_launch_cover();
  test_random();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
