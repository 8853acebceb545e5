/* Unit tests for bounds guards (analyzer/passes/guards.h) on IR programs built by hand: an index
 * guarded by an early return, one checked elsewhere (the evidence), a sum whose bound only adds a
 * small term's range, a loop counter in the comparison, a comparison a specialisation never runs,
 * a remaining count, a row pointer kept in a thread's array, a local declared unsigned in a
 * checked sum, a check of a sum over the index, a walk whose counter only counts, a pointer
 * stepped by a loop of a fixed count or by one bounded by a size, a loop over whole tiles
 * whose bound leaves room for the lane added, remainders written out, the join of two values
 * each bounded, and which unguarded parts a launch can widen. */
#include "analyzer/passes/guards.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;
static struct kl_guards *G;

static void run(void) {
  struct kl_scev *s = kl_scev_run(A, P);
  struct kl_ranges *r = kl_ranges_run(A, P, s, NULL);
  G = kl_guards_run(A, P, s, r);
}

static struct kl_guards_verdict verdict(uint32_t access) {
  struct kl_guards_verdict v;
  if (!kl_guards_access(G, access, &v)) v = (struct kl_guards_verdict){0};
  return v;
}

static uint32_t load(uint32_t b, uint32_t addr) {
  uint32_t v = p_op(b, KL_IR_LOAD, addr, 0, 0);
  P->ins[v].as = KL_AS_DEVICE;
  return v;
}

static uint32_t store(uint32_t b, uint32_t addr, uint32_t val) {
  uint32_t v = p_op(b, KL_IR_STORE, addr, val, 0);
  P->ins[v].as = KL_AS_DEVICE;
  return v;
}

/* if (gid >= n) return; y[gid * 4] = x[gid]. */
static void test_early_return(void) {
  prog_new(A);
  uint32_t b = P->body, t, e;
  uint32_t x = p_arg(b, true, NULL), y = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  p_if(b, p_ubin(b, KL_IR_GE, gid, n), &t, &e);
  kl_ir_emit(P, t, KL_IR_RETURN, NULL, 0);
  uint32_t ld = load(b, p_index(b, x, gid, 4));
  uint32_t st = store(b, p_index(b, y, p_ubin(b, KL_IR_MUL, gid, p_const(b, 4)), 4), ld);
  run();
  struct kl_guards_verdict v = verdict(ld), w = verdict(st);
  check("guards-return-indexed", v.thread_indexed && w.thread_indexed, "both index by gid");
  check("guards-return-guarded", !v.unguarded && !w.unguarded, "the return guards gid and 4 gid");
}

/* if (gid < n) y[gid] = 0; x[gid] read outside: unguarded along x, the check is evidence. */
static void test_evidence(void) {
  prog_new(A);
  uint32_t b = P->body, t, e;
  uint32_t x = p_arg(b, true, NULL), y = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 1);
  uint32_t cmp = p_ubin(b, KL_IR_LT, gid, n);
  p_if(b, cmp, &t, &e);
  uint32_t st = store(t, p_index(t, y, gid, 4), p_const(t, 0));
  uint32_t ld = load(b, p_index(b, x, gid, 4));
  uint32_t tg = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t other = load(b, p_index(b, x, tg, 4));
  run();
  struct kl_guards_verdict v = verdict(ld);
  check("guards-evidence-guarded-store", !verdict(st).unguarded, "the store is under the check");
  check("guards-evidence-unguarded", v.unguarded && v.dims == KL_GUARDS_Y, "unguarded along y");
  check("guards-evidence-cmp", v.evidence == cmp, "evidence %u, want %u", v.evidence, cmp);
  struct kl_guards_verdict o = verdict(other);
  check("guards-evidence-other-coord", o.unguarded && !o.evidence,
        "a check of gid.y says nothing of the threadgroup position");
}

/* for (i2 = 0; i2 < n; i2 += 32) { if (i2 + lid < n) st[lid] = ..; y[i2 + lid]; z[i2 * d + lid] }
 */
static void test_counter(void) {
  prog_new(A);
  uint32_t b = P->body, body, i2, t, e;
  uint32_t y = p_arg(b, true, NULL), z = p_arg(b, true, NULL), n = p_arg(b, false, "int");
  uint32_t d = p_arg(b, false, "int");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  p_for(b, p_const(b, 0), KL_IR_LT, n, p_const(b, 32), &i2, &body);
  uint32_t cmp = p_bin(body, KL_IR_LT, p_bin(body, KL_IR_ADD, i2, lid), n);
  p_if(body, cmp, &t, &e);
  store(t, p_index(t, z, p_bin(t, KL_IR_ADD, i2, lid), 4), p_const(t, 0));
  uint32_t same =
      store(body, p_index(body, y, p_bin(body, KL_IR_ADD, i2, lid), 4), p_const(body, 1));
  uint32_t scaled =
      store(body, p_index(body, y, p_bin(body, KL_IR_ADD, p_bin(body, KL_IR_MUL, i2, d), lid), 4),
            p_const(body, 1));
  run();
  struct kl_guards_verdict v = verdict(same), w = verdict(scaled);
  check("guards-counter-slack", v.unguarded, "i2 < n leaves lid unbounded in i2 + lid");
  check("guards-counter-evidence", v.evidence == cmp, "i2 + lid < n is evidence for y[i2 + lid]");
  check("guards-counter-scaled", w.unguarded && !w.evidence,
        "i2 + lid < n says nothing of y[i2 * d + lid]");
}

/* if (false && gid < n) {...} else y[gid]: the comparison never runs. */
static void test_dead(void) {
  prog_new(A);
  uint32_t b = P->body, t, e;
  uint32_t y = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t cmp = p_ubin(b, KL_IR_LT, gid, n);
  p_if(b, p_bin(b, KL_IR_LAND, p_const(b, 0), cmp), &t, &e);
  uint32_t dead = store(t, p_index(t, y, gid, 4), p_const(t, 0));
  uint32_t live = store(e, p_index(e, y, gid, 4), p_const(e, 1));
  run();
  check("guards-dead-access", !verdict(dead).thread_indexed, "no thread runs the then block");
  struct kl_guards_verdict v = verdict(live);
  check("guards-dead-no-evidence", v.unguarded && !v.evidence, "the comparison never runs");
}

/* rem = size - lid * 4; for (i = 0; i < rem; i++) x[lid * 4 + i]: guarded by the count. */
static void test_remaining(void) {
  prog_new(A);
  uint32_t b = P->body, body, i;
  uint32_t x = p_arg(b, true, NULL), size = p_arg(b, false, "int");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t four = p_const(b, 4);
  uint32_t rem = p_bin(b, KL_IR_SUB, size, p_bin(b, KL_IR_MUL, lid, four));
  p_for(b, p_const(b, 0), KL_IR_LT, rem, p_const(b, 1), &i, &body);
  uint32_t base = p_index(body, x, p_bin(body, KL_IR_MUL, lid, p_const(body, 4)), 4);
  uint32_t ld = load(body, p_index(body, base, i, 4));
  run();
  struct kl_guards_verdict v = verdict(ld);
  check("guards-remaining", v.thread_indexed && !v.unguarded, "i < size - 4 lid bounds 4 lid");
}

/* rows[0] = x + gid * n kept in a thread's array; rows[0][c] reads row gid. */
static void test_carried(void) {
  prog_new(A);
  uint32_t b = P->body, t, e;
  uint32_t x = p_arg(b, true, NULL), y = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t rows = kl_ir_emit(P, b, KL_IR_ALLOC, NULL, 0);
  P->ins[rows].as = KL_AS_THREAD;
  uint32_t zero = p_const(b, 0);
  uint32_t row = p_index(b, x, p_ubin(b, KL_IR_MUL, gid, n), 4);
  uint32_t st = p_op(b, KL_IR_STORE, p_index(b, rows, zero, 8), row, 0);
  P->ins[st].as = KL_AS_THREAD;
  uint32_t ptr = p_op(b, KL_IR_LOAD, p_index(b, rows, zero, 8), 0, 0);
  P->ins[ptr].as = KL_AS_THREAD;
  uint32_t ld = load(b, p_index(b, ptr, p_const(b, 3), 4));
  uint32_t cmp = p_ubin(b, KL_IR_LT, gid, n);
  p_if(b, cmp, &t, &e);
  store(t, p_index(t, y, gid, 4), p_const(t, 0));
  run();
  struct kl_guards_verdict v = verdict(ld);
  check("guards-carried-indexed", v.thread_indexed, "the row pointer carries gid");
  check("guards-carried-unguarded", v.unguarded && v.evidence == cmp, "checked only at the store");
}

/* r0 = opaque(tg) * 4, declared ushort; if (r0 + sg < n) x[sg * n]: the check bounds sg, as
 * the declaration keeps r0 from being negative (the ranges cannot: the opaque part). */
static void test_declared_unsigned(void) {
  static struct kl_var r0var = {.name = "r0", .type = "ushort", .attr_index = -1};
  prog_new(A);
  uint32_t b = P->body, t, e;
  uint32_t x = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t tg = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t sg = p_coord(b, "simdgroup_index_in_threadgroup", 0);
  uint32_t opq = kl_ir_emit(P, b, KL_IR_OPAQUE, &tg, 1);
  uint32_t r0 = p_bin(b, KL_IR_MUL, opq, p_const(b, 4));
  uint32_t cmp = p_ubin(b, KL_IR_LT, p_ubin(b, KL_IR_ADD, r0, sg), n);
  p_if(b, cmp, &t, &e);
  uint32_t in = load(t, p_index(t, x, p_bin(t, KL_IR_MUL, sg, n), 4));
  uint32_t out = load(b, p_index(b, x, p_bin(b, KL_IR_MUL, sg, n), 4));
  run();
  check("guards-unsigned-unknown", verdict(in).unguarded && verdict(out).unguarded,
        "r0 of no known sign: no bound for sg");
  prog_new(A);
  b = P->body;
  x = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  tg = p_coord(b, "threadgroup_position_in_grid", 0);
  sg = p_coord(b, "simdgroup_index_in_threadgroup", 0);
  opq = kl_ir_emit(P, b, KL_IR_OPAQUE, &tg, 1);
  r0 = p_bin(b, KL_IR_MUL, opq, p_const(b, 4));
  P->ins[r0].sym = kl_ir_sym_new(P, "r0", &r0var, 0);
  cmp = p_ubin(b, KL_IR_LT, p_ubin(b, KL_IR_ADD, r0, sg), n);
  p_if(b, cmp, &t, &e);
  in = load(t, p_index(t, x, p_bin(t, KL_IR_MUL, sg, n), 4));
  out = load(b, p_index(b, x, p_bin(b, KL_IR_MUL, sg, n), 4));
  run();
  struct kl_guards_verdict v = verdict(in), w = verdict(out);
  check("guards-unsigned-guarded", v.thread_indexed && !v.unguarded, "r0 + sg < n bounds sg");
  check("guards-unsigned-outside", w.unguarded && w.evidence == cmp,
        "outside: the check is evidence");
}

/* column = tg * 32 + opaque(lid); p = x + column; for (i = 0; i < 4; i++) if (column + i < n)
 * p[i]: the check of the sum bounds column, i being >= 0. */
static void test_sum_over(void) {
  prog_new(A);
  uint32_t b = P->body, body, i, t, e;
  uint32_t x = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t tg = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t off = kl_ir_emit(P, b, KL_IR_OPAQUE, &lid, 1);
  uint32_t column = p_ubin(b, KL_IR_ADD, p_ubin(b, KL_IR_MUL, tg, p_const(b, 32)), off);
  uint32_t base = p_index(b, x, column, 4);
  p_for(b, p_const(b, 0), KL_IR_LT, p_const(b, 4), p_const(b, 1), &i, &body);
  uint32_t cmp = p_ubin(body, KL_IR_LT, p_ubin(body, KL_IR_ADD, column, i), n);
  uint32_t before = load(body, p_index(body, base, i, 4));
  p_if(body, cmp, &t, &e);
  uint32_t in = load(t, p_index(t, base, i, 4));
  run();
  struct kl_guards_verdict v = verdict(in), w = verdict(before);
  check("guards-sum-over-guarded", v.thread_indexed && !v.unguarded,
        "column + i < n bounds column");
  check("guards-sum-over-before", w.unguarded && w.evidence == cmp, "read before the check");
}

/* for (i = lid; i < n; i += 32) { p[0] (p stepped each time) or x[i] }; out[row * 32 + lid]: a
 * walk is evidence for lid only when its counter indexes something. */
static void walk(bool indexed) {
  prog_new(A);
  uint32_t b = P->body, hdr, body, latch;
  uint32_t x = p_arg(b, true, NULL), out = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t row = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t i = p_head(hdr, l, lid);
  uint32_t ptr = p_head(hdr, l, p_index(b, x, lid, 4));
  uint32_t cmp = p_ubin(hdr, KL_IR_LT, i, n);
  p_loop_cond(l, cmp);
  load(body, indexed ? p_index(body, x, i, 4) : ptr);
  p_back(i, p_ubin(latch, KL_IR_ADD, i, p_const(latch, 32)));
  p_back(ptr, p_index(latch, ptr, p_const(latch, 32), 4));
  uint32_t st = store(b, p_index(b, out, p_ubin(b, KL_IR_ADD,
                                                 p_ubin(b, KL_IR_MUL, row, p_const(b, 32)), lid),
                                 4),
                      p_const(b, 0));
  run();
  struct kl_guards_verdict v = verdict(st);
  if (indexed)
    check("guards-walk-indexed", v.unguarded && v.evidence == cmp, "x[i]: the walk is evidence");
  else
    check("guards-walk-counts", v.unguarded && !v.evidence, "a counting walk is no evidence");
}

/* p = x + gid * 2; for (k = 0; k < bound; k++) { p[0]; p++ }; if (gid < n) y[gid]: with a
 * constant bound the steps are few and p[0] indexes by gid, unguarded; with a size bound p walks
 * in step with it. */
static void stepped(bool fixed) {
  prog_new(A);
  uint32_t b = P->body, hdr, body, latch, t, e;
  uint32_t x = p_arg(b, true, NULL), y = p_arg(b, true, NULL), n = p_arg(b, false, "uint");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t k = p_head(hdr, l, p_const(b, 0));
  uint32_t ptr = p_head(hdr, l, p_index(b, x, p_ubin(b, KL_IR_MUL, gid, p_const(b, 2)), 4));
  p_loop_cond(l, p_bin(hdr, KL_IR_LT, k, fixed ? p_const(hdr, 2) : n));
  uint32_t ld = load(body, p_index(body, ptr, p_const(body, 0), 4));
  p_back(k, p_bin(latch, KL_IR_ADD, k, p_const(latch, 1)));
  p_back(ptr, p_index(latch, ptr, p_const(latch, 1), 4));
  uint32_t cmp = p_ubin(b, KL_IR_LT, gid, n);
  p_if(b, cmp, &t, &e);
  store(t, p_index(t, y, gid, 4), p_const(t, 0));
  run();
  struct kl_guards_verdict v = verdict(ld);
  if (fixed)
    check("guards-stepped-fixed", v.unguarded && v.evidence == cmp, "p entered at row gid");
  else
    check("guards-stepped-size", !v.unguarded, "p walks in step with k < n");
}

/* for (i0 = 0; i0 + W <= n; i0 += 32) x[i0 + lane]: with W = 32 the bound leaves room for every
 * lane (whole tiles), with W = 16 it does not. */
static void room(bool whole) {
  prog_new(A);
  uint32_t b = P->body, i0, body;
  uint32_t x = p_arg(b, true, NULL), n = p_arg(b, false, "int");
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t hdr, latch;
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  i0 = p_head(hdr, l, p_const(b, 0));
  p_loop_cond(l, p_bin(hdr, KL_IR_LE, p_bin(hdr, KL_IR_ADD, i0, p_const(hdr, whole ? 32 : 16)), n));
  p_back(i0, p_bin(latch, KL_IR_ADD, i0, p_const(latch, 32)));
  uint32_t ld = load(body, p_index(body, x, p_bin(body, KL_IR_ADD, i0, lane), 4));
  run();
  struct kl_guards_verdict v = verdict(ld);
  if (whole)
    check("guards-room-whole-tiles", v.thread_indexed && !v.unguarded,
          "i0 + 32 <= n leaves room for lane <= 31");
  else
    check("guards-room-short", v.unguarded, "i0 + 16 <= n leaves no room for lane <= 31");
}

/* if (gid >= n) return; idx = blocked ? (gid / 4) * 4 + gid % 4 : gid, joined after an if (the
 * join of a helper's two returns); y[idx]: each incoming value is bounded by the return. */
static void test_join(void) {
  prog_new(A);
  uint32_t b = P->body, t, e, t2, e2;
  uint32_t y = p_arg(b, true, NULL), n = p_arg(b, false, "uint"), bl = p_arg(b, false, "int");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  p_if(b, p_ubin(b, KL_IR_GE, gid, n), &t, &e);
  kl_ir_emit(P, t, KL_IR_RETURN, NULL, 0);
  uint32_t four = p_const(b, 4);
  uint32_t iff = p_if(b, bl, &t2, &e2);
  uint32_t q4 = p_ubin(t2, KL_IR_MUL, p_ubin(t2, KL_IR_DIV, gid, four), four);
  uint32_t blk = p_ubin(t2, KL_IR_ADD, q4, p_ubin(t2, KL_IR_REM, gid, four));
  uint32_t idx = p_phi(b, KL_IR_PHI_IF, iff, blk, gid);
  uint32_t st = store(b, p_index(b, y, idx, 4), p_const(b, 0));
  run();
  struct kl_guards_verdict v = verdict(st);
  check("guards-join-guarded", v.thread_indexed && !v.unguarded,
        "each value the join takes is bounded by the return");
}

/* y[tg * 32 + lane] with nothing checked: unguarded, and wide through tg; z[lane] alone is
 * unguarded but no part a launch can widen. */
static void test_wide(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t y = p_arg(b, true, NULL), z = p_arg(b, true, NULL);
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t tg = p_coord(b, "threadgroup_position_in_grid", 0);
  uint32_t at = p_ubin(b, KL_IR_ADD, p_ubin(b, KL_IR_MUL, tg, p_const(b, 32)), lane);
  uint32_t sy = store(b, p_index(b, y, at, 4), p_const(b, 0));
  uint32_t sz = store(b, p_index(b, z, lane, 4), p_const(b, 0));
  run();
  struct kl_guards_verdict v = verdict(sy), w = verdict(sz);
  check("guards-wide-row", v.unguarded && v.wide && v.part == tg,
        "the threadgroup's row is wide and named (part %u, want %u)", v.part, tg);
  check("guards-wide-lane", w.unguarded && !w.wide, "a lane's index alone is not wide");
  /* z[t[lane]] with t device memory: what another thread wrote there may be anything. */
  prog_new(A);
  b = P->body;
  uint32_t t = p_arg(b, true, NULL), z2 = p_arg(b, true, NULL);
  uint32_t lane2 = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t back = load(b, p_index(b, t, lane2, 4));
  uint32_t sl = store(b, p_index(b, z2, back, 4), p_const(b, 0));
  run();
  struct kl_guards_verdict u = verdict(sl);
  check("guards-wide-loaded", u.unguarded && u.wide, "a value loaded at a lane's slot is wide");
}

/* x[gid - (gid / w) * w] is x[gid % w], below w (also `w * (gid / w)`, and a thread's local `i =
 * gid; i -= (i / w) * w;` read back, the first store unbounded but overwritten); with another
 * size than the quotient's (`(gid / w) * (w + 1)`) gid is left unbounded. */
static void written_out(int k) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t x = p_arg(b, true, NULL), w = p_arg(b, false, "uint");
  uint32_t h = p_ubin(b, KL_IR_ADD, w, p_const(b, 1)); /* (scalar arguments share one kl_var) */
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  bool local = k >= 3, wrong = k == 2 || k == 4;
  uint32_t al = 0, idx;
  if (local) {
    al = kl_ir_emit(P, b, KL_IR_ALLOC, NULL, 0);
    P->ins[al].as = KL_AS_THREAD;
    P->ins[p_op(b, KL_IR_STORE, al, gid, 0)].as = KL_AS_THREAD;
  }
  uint32_t from = gid;
  if (local) P->ins[from = p_op(b, KL_IR_LOAD, al, 0, 0)].as = KL_AS_THREAD;
  uint32_t q = p_ubin(b, KL_IR_DIV, from, w);
  uint32_t m = k == 1 ? p_ubin(b, KL_IR_MUL, w, q) : p_ubin(b, KL_IR_MUL, q, wrong ? h : w);
  if (local) {
    uint32_t st = p_op(b, KL_IR_STORE, al, m, 0);
    P->ins[st].as = KL_AS_THREAD;
    P->ins[st].sub = KL_IR_SUB;
    P->ins[idx = p_op(b, KL_IR_LOAD, al, 0, 0)].as = KL_AS_THREAD;
  } else {
    idx = p_ubin(b, KL_IR_SUB, gid, m);
  }
  uint32_t ld = load(b, p_index(b, x, idx, 4));
  run();
  struct kl_guards_verdict v = verdict(ld);
  static const char *const name[] = {"guards-remainder", "guards-remainder-mirrored",
                                     "guards-remainder-other-size", "guards-remainder-local",
                                     "guards-remainder-local-other-size"};
  if (wrong)
    check(name[k], v.thread_indexed && v.unguarded, "gid - (gid / w) * h is not below w");
  else
    check(name[k], v.thread_indexed && !v.unguarded, "gid - (gid / w) * w is below w");
}

int main(void) {
  A = kl_arena_new();
  test_join();
  test_wide();
  test_early_return();
  test_evidence();
  test_counter();
  test_dead();
  test_remaining();
  test_carried();
  test_declared_unsigned();
  test_sum_over();
  walk(false);
  walk(true);
  stepped(true);
  stepped(false);
  room(true);
  room(false);
  for (int k = 0; k < 5; k++) written_out(k);
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
