/* Unit tests for the facts' SIMD-group ordering of two accesses (kl_facts_simd_ordered_ins,
 * analyzer/passes/facts.h) on IR programs built by hand: a slot per SIMD group read and written
 * around a simd_sum, accesses under `sg == c`, and what keeps a pair unordered -- no SIMD-wide
 * operation between, one only in a branch, a quad operation, one whose result nothing reads, a
 * slot shared by two SIMD groups, two SIMD groups pinned, an exit between, a loop around; and
 * for bounds-guard, the clamp that is evidence for an unguarded read (kl_facts_clamp_ins) and
 * the index that passes its loop's bound (kl_facts_past_ins). */
#include "analyzer/passes/facts.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;

static bool ordered(uint32_t a, uint32_t b) {
  struct kl_scev *s = kl_scev_run(A, P);
  return kl_facts_simd_ordered_ins(P, s, a, b, false) && kl_facts_simd_ordered_ins(P, s, b, a, false);
}

static uint32_t simd(uint32_t b, const char *fn, uint32_t x) {
  uint32_t v = p_op(b, KL_IR_SIMD, x, 0, 0);
  P->ins[v].fn = kl_msl_fn(fn);
  return v;
}

static uint32_t sgid(uint32_t b) {
  return p_coord(b, "simdgroup_index_in_threadgroup", 0);
}

static uint32_t lane(uint32_t b) {
  return p_coord(b, "thread_index_in_simdgroup", 0);
}

/* A threadgroup array (its ALLOC). */
static uint32_t tg_array(uint32_t b) {
  static struct kl_var v = {.name = "part", .type = "float", .as = KL_AS_THREADGROUP,
                            .attr_index = -1};
  uint32_t x = p_op(b, KL_IR_ALLOC, 0, 0, 0);
  P->ins[x].var = &v;
  P->ins[x].as = KL_AS_THREADGROUP;
  return x;
}

static uint32_t load(uint32_t b, uint32_t base, uint32_t idx) {
  return p_op(b, KL_IR_LOAD, p_index(b, base, idx, 4), 0, 0);
}

static uint32_t store(uint32_t b, uint32_t base, uint32_t idx, uint32_t val) {
  return p_op(b, KL_IR_STORE, p_index(b, base, idx, 4), val, 0);
}

/* part[sg] read, a reduction of it, part[sg] = the reduction (each SIMD group its own slot);
 * with the reduction's kind as fn, under a branch when branchy, and read or not. */
static bool own_slot(const char *fn, bool branchy, bool used, uint32_t sg_div) {
  prog_new(A);
  uint32_t b = P->body, part = tg_array(b), sg = sgid(b), l = lane(b);
  uint32_t idx = sg_div ? p_ubin(b, KL_IR_DIV, sg, p_const(b, sg_div)) : sg;
  uint32_t rd = load(b, part, idx);
  uint32_t where = b, e;
  if (branchy) p_if(b, p_ubin(b, KL_IR_LT, l, p_const(b, 8)), &where, &e);
  uint32_t r = simd(where, fn, rd);
  uint32_t val = used ? r : rd;
  uint32_t wr = store(b, part, idx, val);
  return ordered(rd, wr);
}

static void test_own_slot(void) {
  check("facts-own-slot", own_slot("simd_sum", false, true, 0),
        "part[sg] read, simd_sum, part[sg] written: not ordered");
  check("facts-own-slot-shuffle", own_slot("simd_shuffle_xor", false, true, 0),
        "a shuffle between orders no less than a sum");
  check("facts-own-slot-branch", !own_slot("simd_sum", true, true, 0),
        "a simd_sum under a branch taken as on every path");
  check("facts-own-slot-quad", !own_slot("quad_sum", false, true, 0),
        "a quad_sum taken to order a whole SIMD group");
  check("facts-own-slot-unused", !own_slot("simd_sum", false, false, 0),
        "a simd_sum nothing reads taken to order (it may be compiled away)");
  check("facts-shared-slot", !own_slot("simd_sum", false, true, 2),
        "part[sg / 2] is shared by two SIMD groups: taken as one SIMD group's");
}

/* The read `sg == 0 && lane < 8 ? part[lane] : 0`, a simd_sum of it, then under
 * `sg == wsg && lane == 0` part[0] = the sum; exit puts a return under `lane == 5` between the
 * read and the sum, looped wraps it all in a loop. */
static bool pinned(int64_t wsg, bool exit, bool looped, bool barrier) {
  prog_new(A);
  uint32_t b = P->body, part = tg_array(b), sg = sgid(b), l = lane(b);
  if (looped) {
    uint32_t i;
    p_for(b, p_const(b, 0), KL_IR_LT, p_const(b, 4), p_const(b, 1), &i, &b);
  }
  uint32_t c1 = p_bin(b, KL_IR_LAND, p_ubin(b, KL_IR_EQ, sg, p_const(b, 0)),
                      p_ubin(b, KL_IR_LT, l, p_const(b, 8)));
  uint32_t t, e;
  uint32_t iff = p_if(b, c1, &t, &e);
  uint32_t rd = load(t, part, l);
  uint32_t z = p_const(e, 0);
  uint32_t phi = p_phi(b, KL_IR_PHI_IF, iff, rd, z);
  if (exit) {
    uint32_t t2, e2;
    p_if(b, p_ubin(b, KL_IR_EQ, l, p_const(b, 5)), &t2, &e2);
    p_op(t2, KL_IR_RETURN, 0, 0, 0);
  }
  uint32_t sum;
  if (barrier) {
    sum = phi;
    uint32_t v = p_op(b, KL_IR_BARRIER, 0, 0, 0);
    P->ins[v].fn = kl_msl_fn("simdgroup_barrier");
  } else {
    sum = simd(b, "simd_sum", phi);
  }
  uint32_t c2 = p_bin(b, KL_IR_LAND, p_ubin(b, KL_IR_EQ, sg, p_const(b, wsg)),
                      p_ubin(b, KL_IR_EQ, l, p_const(b, 0)));
  uint32_t t3, e3;
  p_if(b, c2, &t3, &e3);
  uint32_t wr = store(t3, part, p_const(t3, 0), sum);
  return ordered(rd, wr);
}

static void test_pinned(void) {
  check("facts-pinned", pinned(0, false, false, false),
        "reads and write under sg == 0 with a simd_sum between: not ordered");
  check("facts-pinned-barrier", pinned(0, false, false, true),
        "a simdgroup_barrier between orders the lanes too");
  check("facts-pinned-two-groups", !pinned(1, false, false, false),
        "read in SIMD group 0, written in SIMD group 1: taken as one SIMD group");
  check("facts-pinned-exit", !pinned(0, true, false, false),
        "a lane may return between its read and the simd_sum: taken as ordered");
  check("facts-pinned-loop", !pinned(0, false, true, false),
        "in a loop the write meets the next iteration's read: taken as ordered");
}

/* part[sg] read by every lane, then under `sg == 0 && lane == 0` part[0] written after a
 * simd_sum: slot 0 is SIMD group 0's alone, a mixed pair; part[1] is not. */
static bool mixed(int64_t slot) {
  prog_new(A);
  uint32_t b = P->body, part = tg_array(b), sg = sgid(b), l = lane(b);
  uint32_t rd = load(b, part, sg);
  uint32_t sum = simd(b, "simd_sum", rd);
  uint32_t c2 = p_bin(b, KL_IR_LAND, p_ubin(b, KL_IR_EQ, sg, p_const(b, 0)),
                      p_ubin(b, KL_IR_EQ, l, p_const(b, 0)));
  uint32_t t, e;
  p_if(b, c2, &t, &e);
  uint32_t wr = store(t, part, p_const(t, slot), sum);
  return ordered(rd, wr);
}

static void test_mixed(void) {
  check("facts-mixed-own-slot", mixed(0), "SIMD group 0 writing its own slot 0: not ordered");
  check("facts-mixed-other-slot", !mixed(1),
        "SIMD group 0 writing SIMD group 1's slot taken as ordered");
}

/* ---- Indices against the kernel's bounds ---- */

/* A device buffer's load of base[idx]. */
static uint32_t dload(uint32_t b, uint32_t base, uint32_t idx) {
  uint32_t v = p_op(b, KL_IR_LOAD, p_index(b, base, idx, 4), 0, 0);
  P->ins[v].as = KL_AS_DEVICE;
  return v;
}

static struct kl_scev *S;
static struct kl_ranges *R;

static void analyse(void) {
  S = kl_scev_run(A, P);
  R = kl_ranges_run(A, P, S, NULL);
}

/* x[gid] read unguarded, then `clamp` built from gid, n and m (a size) by make; whether
 * kl_facts_clamp_ins names it as the evidence for the read. */
static bool clamp_evidence(uint32_t (*make)(uint32_t b, uint32_t gid, uint32_t n, uint32_t m),
                           bool guarded) {
  prog_new(A);
  uint32_t b = P->body, x = p_arg(b, true, "float"), n = p_arg(b, false, "int");
  uint32_t m = p_arg(b, false, "int"), gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t where = b, e;
  if (guarded) p_if(b, p_ubin(b, KL_IR_LT, gid, n), &where, &e);
  uint32_t rd = dload(where, x, gid);
  uint32_t c = make(b, gid, n, m);
  analyse();
  return kl_facts_clamp_ins(P, S, R, rd) == c;
}

static uint32_t last(uint32_t b, uint32_t gid, uint32_t n, uint32_t m) {
  (void)m;
  return p_ubin(b, KL_IR_MIN, gid, p_ubin(b, KL_IR_SUB, n, p_const(b, 1)));
}

static uint32_t chunk_end(uint32_t b, uint32_t gid, uint32_t n, uint32_t m) {
  (void)m;
  return p_ubin(b, KL_IR_MIN, p_ubin(b, KL_IR_ADD, gid, p_const(b, 4)), n);
}

static uint32_t remaining(uint32_t b, uint32_t gid, uint32_t n, uint32_t m) {
  return p_bin(b, KL_IR_MIN, p_bin(b, KL_IR_SUB, n, gid), m);
}

static uint32_t constant(uint32_t b, uint32_t gid, uint32_t n, uint32_t m) {
  (void)n, (void)m;
  return p_ubin(b, KL_IR_MIN, gid, p_const(b, 255));
}

static uint32_t other_coord(uint32_t b, uint32_t gid, uint32_t n, uint32_t m) {
  (void)gid, (void)m;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  return p_ubin(b, KL_IR_MIN, lid, p_ubin(b, KL_IR_SUB, n, p_const(b, 1)));
}

static void test_clamp(void) {
  check("facts-clamp-evidence", clamp_evidence(last, false),
        "min(gid, n - 1) not evidence for x[gid] read unguarded");
  check("facts-clamp-guarded", !clamp_evidence(last, true),
        "min(gid, n - 1) taken as evidence for x[gid] read under gid < n");
  check("facts-clamp-chunk-end", !clamp_evidence(chunk_end, false),
        "min(gid + 4, n), a chunk's end, taken as evidence for x[gid]");
  check("facts-clamp-remaining", !clamp_evidence(remaining, false),
        "min(n - gid, m), a remaining count, taken as evidence for x[gid]");
  check("facts-clamp-constant", !clamp_evidence(constant, false),
        "min(gid, 255), a constant, taken as evidence for x[gid]");
  check("facts-clamp-other-coord", !clamp_evidence(other_coord, false),
        "min(lid, n - 1) taken as evidence for x[gid]");
}

/* In row xr = x + row * n: xr[c] and xr[c + 1] in `for (c = lid; c < n; c += tg)`, and
 * xr[min(c + 1, n - 1)] beside them; and o[c + 1] of a buffer o with no rows (offsets, whose
 * length nothing says). */
static void test_past(void) {
  prog_new(A);
  uint32_t b = P->body, x0 = p_arg(b, true, "float"), n = p_arg(b, false, "int");
  uint32_t o = p_arg(b, true, "float");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t tg = p_coord(b, "threads_per_threadgroup", 0);
  uint32_t row = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t x = p_index(b, x0, p_ubin(b, KL_IR_MUL, row, n), 4);
  uint32_t c, cb;
  uint32_t loop = p_for(b, lid, KL_IR_LT, n, tg, &c, &cb);
  uint32_t here_rd = dload(cb, x, c);
  uint32_t next = p_bin(cb, KL_IR_ADD, c, p_const(cb, 1));
  uint32_t next_rd = dload(cb, x, next);
  uint32_t cl = p_bin(cb, KL_IR_MIN, next, p_bin(cb, KL_IR_SUB, n, p_const(cb, 1)));
  uint32_t clamped_rd = dload(cb, x, cl);
  uint32_t offs_rd = dload(cb, o, next);
  analyse();
  uint32_t idx = 0;
  check("facts-past-neighbour",
        kl_facts_past_ins(P, S, R, next_rd, &idx) == P->ins[loop].ops[0] && idx == next,
        "xr[c + 1] under c < n not found past the row");
  check("facts-past-own", !kl_facts_past_ins(P, S, R, here_rd, &idx),
        "xr[c] found past the row");
  check("facts-past-clamped", !kl_facts_past_ins(P, S, R, clamped_rd, &idx),
        "xr[min(c + 1, n - 1)] found past the row");
  check("facts-past-no-rows", !kl_facts_past_ins(P, S, R, offs_rd, &idx),
        "o[c + 1] of a buffer without rows found past its end");
}

int main(void) {
  A = kl_arena_new();
  test_own_slot();
  test_pinned();
  test_mixed();
  test_clamp();
  test_past();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
