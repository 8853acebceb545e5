/* Unit tests for the uniformity pass (analyzer/passes/uniformity.h), each on a small IR program
 * built by hand: barriers under thread-, SIMD-group- and threadgroup-dependent branches, early
 * returns, breaks and continues, PHIs after branches and loops (temporal divergence), SIMD
 * collectives, threadgroup sizes that make coordinates uniform, and thread-local memory. */
#include "analyzer/passes/uniformity.h"

#include "tests/unit/kl_test.h"

static struct kl_arena *arena;
static struct kl_ir_fn *F;

static void fresh(void) {
  F = kl_ir_fn_new(arena, NULL, NULL);
}

static uint32_t emit(uint32_t b, enum kl_ir_op op, uint32_t a, uint32_t c) {
  uint32_t ops[2] = {a, c};
  return kl_ir_emit(F, b, op, ops, c ? 2 : a ? 1 : 0);
}

static uint32_t cst(uint32_t b, int64_t k) {
  uint32_t v = emit(b, KL_IR_CONST, 0, 0);
  F->ins[v].imm = k;
  return v;
}

static uint32_t arg(uint32_t b) {
  return emit(b, KL_IR_ARG, 0, 0);
}

static uint32_t coord(uint32_t b, const char *name, int comp) {
  uint32_t v = emit(b, KL_IR_COORD, 0, 0);
  F->ins[v].coord = kl_msl_coord(name);
  F->ins[v].imm = comp;
  return v;
}

static uint32_t lid(uint32_t b) {
  return coord(b, "thread_position_in_threadgroup", 0);
}

static uint32_t bin(uint32_t b, enum kl_ir_binop sub, uint32_t x, uint32_t y) {
  uint32_t v = emit(b, KL_IR_BINOP, x, y);
  F->ins[v].sub = (uint8_t)sub;
  return v;
}

static uint32_t call_fn(uint32_t b, enum kl_ir_op op, const char *fn, uint32_t x) {
  uint32_t v = emit(b, op, x, 0);
  F->ins[v].fn = kl_msl_fn(fn);
  return v;
}

static uint32_t barrier(uint32_t b) {
  return call_fn(b, KL_IR_BARRIER, "threadgroup_barrier", 0);
}

/* if (cond) { *then } else { *els } (els NULL: no else block). */
static uint32_t iff(uint32_t b, uint32_t cond, uint32_t *then, uint32_t *els) {
  uint32_t v = emit(b, KL_IR_IF, cond, 0);
  *then = kl_ir_block_new(F, v);
  F->ins[v].blk[0] = *then;
  if (els) {
    *els = kl_ir_block_new(F, v);
    F->ins[v].blk[1] = *els;
  }
  return v;
}

/* A loop with header, body and latch blocks; its condition is set by loop_cond. */
static uint32_t loop(uint32_t b, uint32_t *hdr, uint32_t *body, uint32_t *latch) {
  uint32_t v = emit(b, KL_IR_LOOP, 0, 0);
  *hdr = kl_ir_block_new(F, v);
  *body = kl_ir_block_new(F, v);
  *latch = kl_ir_block_new(F, v);
  F->ins[v].blk[0] = *hdr;
  F->ins[v].blk[1] = *body;
  F->ins[v].blk[2] = *latch;
  return v;
}

static void loop_cond(uint32_t l, uint32_t cond) {
  kl_ir_set_ops(F, l, &cond, 1);
}

static uint32_t phi(uint32_t b, enum kl_ir_phi_kind kind, uint32_t ref, uint32_t a, uint32_t c) {
  uint32_t ops[2] = {a, c};
  uint32_t v = kl_ir_emit(F, b, KL_IR_PHI, ops, 2);
  F->ins[v].sub = (uint8_t)kind;
  F->ins[v].ref_ins = ref;
  return v;
}

static void set_phi(uint32_t p, uint32_t a, uint32_t c) {
  uint32_t ops[2] = {a, c};
  kl_ir_set_ops(F, p, ops, 2);
}

/* for (i = 0; i < n; i++) in block b: returns the loop; *i the header PHI, *body the body. */
static uint32_t counted(uint32_t b, uint32_t n, uint32_t *i, uint32_t *body, uint32_t *latch) {
  uint32_t hdr, zero = cst(b, 0), one = cst(b, 1);
  uint32_t l = loop(b, &hdr, body, latch);
  *i = phi(hdr, KL_IR_PHI_HEAD, l, zero, 0);
  loop_cond(l, bin(hdr, KL_IR_LT, *i, n));
  set_phi(*i, zero, bin(*latch, KL_IR_ADD, *i, one));
  return l;
}

static struct kl_uniformity *run(const int64_t *tg) {
  struct kl_uniformity_launch launch = {{0, 0, 0}, 0, false, false};
  if (tg) memcpy(launch.tg, tg, sizeof launch.tg);
  struct kl_uniformity *u = kl_uniformity_compute(F, tg ? &launch : NULL);
  check("converged", u->converged, "stopped by the bound after %u passes", u->passes);
  return u;
}

static void check_scope(const char *name, struct kl_uniformity *u, uint32_t v, enum kl_scope want) {
  enum kl_scope got = kl_uniformity_value(u, v);
  check(name, got == want, "value %u is %s, want %s", v, kl_msl_scope_name(got),
        kl_msl_scope_name(want));
}

static void check_ctl(const char *name, struct kl_uniformity *u, uint32_t i, enum kl_scope want) {
  enum kl_scope got = kl_uniformity_control(u, i);
  check(name, got == want, "control at %u is %s, want %s", i, kl_msl_scope_name(got),
        kl_msl_scope_name(want));
}

/* if (lid < 16) threadgroup_barrier(); */
static void test_thread_branch(void) {
  fresh();
  uint32_t t, x = lid(F->body), c = bin(F->body, KL_IR_LT, x, cst(F->body, 16));
  uint32_t br = iff(F->body, c, &t, NULL);
  uint32_t bar = barrier(t), after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check_scope("thread-branch.cond", u, c, KL_SCOPE_THREAD);
  check("thread-branch.divergent", kl_uniformity_barrier_divergent(u, bar),
        "barrier not divergent");
  struct kl_uniformity_cause why = kl_uniformity_cause(u, bar);
  check("thread-branch.cause", why.branch == br && why.source == x, "cause %u/%u, want %u/%u",
        why.branch, why.source, br, x);
  check("thread-branch.after", !kl_uniformity_barrier_divergent(u, after), "barrier after the if");
}

/* if (tgpos.x < n) threadgroup_barrier(); -- fine; simdgroup-uniform control is not enough. */
static void test_threadgroup_branch(void) {
  fresh();
  uint32_t t, g = coord(F->body, "threadgroup_position_in_grid", 0);
  uint32_t c = bin(F->body, KL_IR_LT, g, arg(F->body));
  iff(F->body, c, &t, NULL);
  uint32_t bar = barrier(t);
  struct kl_uniformity *u = run(NULL);
  check_ctl("threadgroup-branch.ctl", u, bar, KL_SCOPE_THREADGROUP);
  check("threadgroup-branch.fine", !kl_uniformity_barrier_divergent(u, bar), "barrier divergent");
}

/* if (lid < 16) return; threadgroup_barrier(); */
static void test_early_return(void) {
  fresh();
  uint32_t t, x = lid(F->body), c = bin(F->body, KL_IR_LT, x, cst(F->body, 16));
  uint32_t br = iff(F->body, c, &t, NULL);
  uint32_t ret = emit(t, KL_IR_RETURN, 0, 0);
  uint32_t bar = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check("early-return.divergent", kl_uniformity_barrier_divergent(u, bar), "barrier not divergent");
  struct kl_uniformity_cause why = kl_uniformity_cause(u, bar), up = kl_uniformity_cause(u, ret);
  check("early-return.cause", why.branch == ret && why.source == x && up.branch == br,
        "cause %u/%u then %u, want %u/%u then %u", why.branch, why.source, up.branch, ret, x, br);
}

/* for (i < n) { barrier; if (lid < i) break; barrier; } barrier; */
static void test_divergent_break(void) {
  fresh();
  uint32_t i, body, latch, t, n = arg(F->body), x = lid(F->body);
  counted(F->body, n, &i, &body, &latch);
  uint32_t first = barrier(body);
  uint32_t br = iff(body, bin(body, KL_IR_LT, x, i), &t, NULL);
  uint32_t brk = emit(t, KL_IR_BREAK, 0, 0);
  uint32_t later = barrier(body), after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check("divergent-break.later", kl_uniformity_barrier_divergent(u, later), "not divergent");
  check("divergent-break.next-iteration", kl_uniformity_barrier_divergent(u, first),
        "first barrier not divergent (later iterations)");
  check("divergent-break.after-loop", !kl_uniformity_barrier_divergent(u, after), "after loop");
  struct kl_uniformity_cause why = kl_uniformity_cause(u, later);
  check("divergent-break.cause", why.branch == brk && why.source == x, "cause %u/%u", why.branch,
        why.source);
  check("divergent-break.break-cause", kl_uniformity_cause(u, brk).branch == br, "break's cause");
}

/* for (i < n) { barrier } with n uniform: every thread runs every iteration. */
static void test_uniform_loop(void) {
  fresh();
  uint32_t i, body, latch, n = arg(F->body);
  uint32_t l = counted(F->body, n, &i, &body, &latch);
  uint32_t bar = barrier(body);
  uint32_t out = phi(F->body, KL_IR_PHI_EXIT, l, i, 0);
  struct kl_uniformity *u = run(NULL);
  check_scope("uniform-loop.i", u, i, KL_SCOPE_UNIFORM);
  check_scope("uniform-loop.exit", u, out, KL_SCOPE_UNIFORM);
  check("uniform-loop.barrier", !kl_uniformity_barrier_divergent(u, bar), "divergent");
}

/* x = 0; if (lid < 4) x = 1; -- the join differs per thread. */
static void test_phi_if(void) {
  fresh();
  uint32_t t, e, x = lid(F->body), zero = cst(F->body, 0), one = cst(F->body, 1);
  uint32_t br = iff(F->body, bin(F->body, KL_IR_LT, x, cst(F->body, 4)), &t, &e);
  uint32_t p = phi(F->body, KL_IR_PHI_IF, br, one, zero);
  uint32_t same = phi(F->body, KL_IR_PHI_IF, br, zero, zero);
  uint32_t only = phi(F->body, KL_IR_PHI_IF, br, KL_IR_NONE, one);
  struct kl_uniformity *u = run(NULL);
  check_scope("phi-if.divergent", u, p, KL_SCOPE_THREAD);
  check("phi-if.source", kl_uniformity_source(u, p) == x, "source %u", kl_uniformity_source(u, p));
  check_scope("phi-if.same-value", u, same, KL_SCOPE_UNIFORM);
  check_scope("phi-if.one-edge", u, only, KL_SCOPE_UNIFORM);
}

/* simd_sum(lid) is one value per SIMD group; simd_shuffle of a uniform value stays uniform. */
static void test_simd_sum(void) {
  fresh();
  uint32_t x = lid(F->body), s = call_fn(F->body, KL_IR_SIMD, "simd_sum", x);
  uint32_t sh = call_fn(F->body, KL_IR_SIMD, "simd_shuffle", arg(F->body));
  uint32_t px = call_fn(F->body, KL_IR_SIMD, "simd_prefix_inclusive_sum", x);
  uint32_t bc = call_fn(F->body, KL_IR_SIMD, "simd_broadcast", x);
  struct kl_uniformity *u = run(NULL);
  check_scope("simd-sum.scope", u, s, KL_SCOPE_SIMDGROUP);
  check("simd-sum.source", kl_uniformity_source(u, s) == s, "source %u",
        kl_uniformity_source(u, s));
  check_scope("simd-shuffle.uniform", u, sh, KL_SCOPE_UNIFORM);
  check_scope("simd-prefix.thread", u, px, KL_SCOPE_THREAD);
  check_scope("simd-broadcast.simdgroup", u, bc, KL_SCOPE_SIMDGROUP);
}

/* In a threadgroup of at most 32 threads (a known size, or the kernel's cap) one SIMD group is
 * all of it: simd_sum(lid) is then the same in every thread of the threadgroup. */
static void test_simd_one_group(void) {
  const int64_t sizes[3][3] = {{32, 1, 1}, {8, 4, 1}, {64, 1, 1}};
  const enum kl_scope want[3] = {KL_SCOPE_THREADGROUP, KL_SCOPE_THREADGROUP, KL_SCOPE_SIMDGROUP};
  for (int k = 0; k < 4; k++) {
    fresh();
    uint32_t s = call_fn(F->body, KL_IR_SIMD, "simd_sum", lid(F->body));
    struct kl_uniformity *u;
    if (k < 3) {
      u = run(sizes[k]);
    } else { /* [[max_total_threads_per_threadgroup(32)]] and no size */
      struct kl_uniformity_launch capped = {{0, 0, 0}, 32, false, false};
      u = kl_uniformity_compute(F, &capped);
    }
    char name[40];
    snprintf(name, sizeof name, "simd-one-group.%d", k);
    check_scope(name, u, s, k < 3 ? want[k] : KL_SCOPE_THREADGROUP);
  }
}

/* threadgroup float tg[64]; simd_min(tg[lid]) is SIMDGROUP; tg[0] is THREADGROUP and so is its
 * simd_min; a device load at a uniform address is UNIFORM, at lid THREAD; atomics THREAD. */
static void test_simd_min_tg(void) {
  fresh();
  uint32_t a = emit(F->body, KL_IR_ALLOC, 0, 0);
  F->ins[a].as = KL_AS_THREADGROUP;
  uint32_t x = lid(F->body);
  uint32_t ld = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, a, x), 0);
  F->ins[ld].as = KL_AS_THREADGROUP;
  uint32_t m = call_fn(F->body, KL_IR_SIMD, "simd_min", ld);
  uint32_t ld0 = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, a, cst(F->body, 0)), 0);
  F->ins[ld0].as = KL_AS_THREADGROUP;
  uint32_t m0 = call_fn(F->body, KL_IR_SIMD, "simd_min", ld0);
  uint32_t buf = arg(F->body);
  uint32_t d0 = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, buf, cst(F->body, 3)), 0);
  uint32_t dx = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, buf, x), 0);
  F->ins[d0].as = F->ins[dx].as = KL_AS_DEVICE;
  uint32_t at = call_fn(F->body, KL_IR_ATOMIC, "atomic_fetch_add_explicit", buf);
  struct kl_uniformity *u = run(NULL);
  check_scope("simd-min-tg.load", u, ld, KL_SCOPE_THREAD);
  check_scope("simd-min-tg.min", u, m, KL_SCOPE_SIMDGROUP);
  check_scope("simd-min-tg.load0", u, ld0, KL_SCOPE_THREADGROUP);
  check("simd-min-tg.load0-source", kl_uniformity_source(u, ld0) == ld0, "source");
  check_scope("simd-min-tg.min0", u, m0, KL_SCOPE_THREADGROUP);
  check_scope("device-load.uniform", u, d0, KL_SCOPE_UNIFORM);
  check_scope("device-load.thread", u, dx, KL_SCOPE_THREAD);
  check_scope("atomic.thread", u, at, KL_SCOPE_THREAD);
}

/* sgid / 8: SIMDGROUP in general; with 8 SIMD groups (256 threads) it is 0 for every thread.
 * tid / 32 and tid >> 5 name the SIMD group: SIMDGROUP; tid / 16 does not. */
static void test_division(void) {
  fresh();
  uint32_t sg = coord(F->body, "simdgroup_index_in_threadgroup", 0);
  uint32_t d = bin(F->body, KL_IR_DIV, sg, cst(F->body, 8));
  uint32_t tid = coord(F->body, "thread_index_in_threadgroup", 0);
  uint32_t d32 = bin(F->body, KL_IR_DIV, tid, cst(F->body, 32));
  uint32_t s5 = bin(F->body, KL_IR_SHR, tid, cst(F->body, 5));
  uint32_t d16 = bin(F->body, KL_IR_DIV, tid, cst(F->body, 16));
  uint32_t lane = coord(F->body, "thread_index_in_simdgroup", 0);
  uint32_t l32 = bin(F->body, KL_IR_DIV, lane, cst(F->body, 32));
  struct kl_uniformity *u = run(NULL);
  check_scope("sgid-div.unknown", u, d, KL_SCOPE_SIMDGROUP);
  check_scope("tid-div32", u, d32, KL_SCOPE_SIMDGROUP);
  check_scope("tid-shr5", u, s5, KL_SCOPE_SIMDGROUP);
  check_scope("tid-div16", u, d16, KL_SCOPE_THREAD);
  check_scope("lane-div32", u, l32, KL_SCOPE_UNIFORM);
  u = run((const int64_t[3]){256, 1, 1});
  check_scope("sgid-div.256", u, d, KL_SCOPE_UNIFORM);
  check_scope("sgid.256", u, sg, KL_SCOPE_SIMDGROUP);
  u = run((const int64_t[3]){512, 1, 1});
  check_scope("sgid-div.512", u, d, KL_SCOPE_SIMDGROUP);
}

/* Threadgroup (32, 1, 8): lid.z and lid.x / 32 SIMDGROUP, lid.y constant, lid.x THREAD; a
 * branch on lid.z holds simdgroup_barrier but not threadgroup_barrier. */
static void test_tg_32_1_8(void) {
  fresh();
  const char *p = "thread_position_in_threadgroup";
  uint32_t lx = coord(F->body, p, 0), ly = coord(F->body, p, 1), lz = coord(F->body, p, 2);
  uint32_t gy = coord(F->body, "thread_position_in_grid", 1);
  uint32_t t, c = bin(F->body, KL_IR_EQ, lz, cst(F->body, 0));
  iff(F->body, c, &t, NULL);
  uint32_t sb = call_fn(t, KL_IR_BARRIER, "simdgroup_barrier", 0), tb = barrier(t);
  struct kl_uniformity *u = run((const int64_t[3]){32, 1, 8});
  check_scope("tg-32-1-8.x", u, lx, KL_SCOPE_THREAD);
  check_scope("tg-32-1-8.y", u, ly, KL_SCOPE_UNIFORM);
  check_scope("tg-32-1-8.z", u, lz, KL_SCOPE_SIMDGROUP);
  check_scope("tg-32-1-8.gid-y", u, gy, KL_SCOPE_THREADGROUP);
  check("tg-32-1-8.simdgroup-barrier", !kl_uniformity_barrier_divergent(u, sb), "divergent");
  check("tg-32-1-8.threadgroup-barrier", kl_uniformity_barrier_divergent(u, tb), "not divergent");
  u = run(NULL);
  check_scope("tg-unknown.z", u, lz, KL_SCOPE_THREAD);
  check("tg-unknown.simdgroup-barrier", kl_uniformity_barrier_divergent(u, sb), "not divergent");
}

/* Threadgroup (1, 64, 1): lid.x is always 0; lid.y differs per thread. */
static void test_tg_1_64_1(void) {
  fresh();
  uint32_t lx = lid(F->body), ly = coord(F->body, "thread_position_in_threadgroup", 1);
  uint32_t t, c = bin(F->body, KL_IR_LT, lx, cst(F->body, 1));
  iff(F->body, c, &t, NULL);
  uint32_t bar = barrier(t);
  struct kl_uniformity *u = run((const int64_t[3]){1, 64, 1});
  check_scope("tg-1-64-1.x", u, lx, KL_SCOPE_UNIFORM);
  check_scope("tg-1-64-1.y", u, ly, KL_SCOPE_THREAD);
  check("tg-1-64-1.barrier", !kl_uniformity_barrier_divergent(u, bar), "divergent");
}

/* i = 0; for (;; i++) { if (data[lid] > 0) break; } -- i is uniform inside, divergent after. */
static void test_temporal(void) {
  fresh();
  uint32_t hdr, body, latch, t, buf = arg(F->body), x = lid(F->body);
  uint32_t zero = cst(F->body, 0), one = cst(F->body, 1);
  uint32_t l = loop(F->body, &hdr, &body, &latch);
  uint32_t i = phi(hdr, KL_IR_PHI_HEAD, l, zero, 0);
  uint32_t ld = emit(body, KL_IR_LOAD, emit(body, KL_IR_INDEX, buf, x), 0);
  F->ins[ld].as = KL_AS_DEVICE;
  iff(body, bin(body, KL_IR_GT, ld, zero), &t, NULL);
  emit(t, KL_IR_BREAK, 0, 0);
  set_phi(i, zero, bin(latch, KL_IR_ADD, i, one));
  uint32_t out = phi(F->body, KL_IR_PHI_EXIT, l, KL_IR_NONE, i);
  uint32_t inv = phi(F->body, KL_IR_PHI_EXIT, l, KL_IR_NONE, one);
  struct kl_uniformity *u = run(NULL);
  check_scope("temporal.inside", u, i, KL_SCOPE_UNIFORM);
  check_scope("temporal.after", u, out, KL_SCOPE_THREAD);
  /* The load's address is per thread: the leaf is the coordinate behind it. */
  check("temporal.source", kl_uniformity_source(u, out) == x, "source %u, want lid %u",
        kl_uniformity_source(u, out), x);
  check_scope("temporal.invariant", u, inv, KL_SCOPE_UNIFORM);
}

/* float a[4]; a[1] = lid; ... = a[0]: the array holds per-thread values. A second array only
 * ever holds constants; a third is given a constant under a divergent branch. */
static void test_thread_array(void) {
  fresh();
  uint32_t b = F->body, x = lid(b), k0 = cst(b, 0), k1 = cst(b, 1);
  uint32_t a = emit(b, KL_IR_ALLOC, 0, 0), c = emit(b, KL_IR_ALLOC, 0, 0);
  uint32_t d = emit(b, KL_IR_ALLOC, 0, 0), t;
  F->ins[a].as = KL_AS_THREAD;
  uint32_t ld = emit(b, KL_IR_LOAD, emit(b, KL_IR_INDEX, a, k0), 0); /* before the store */
  emit(b, KL_IR_STORE, emit(b, KL_IR_INDEX, a, k1), x);
  emit(b, KL_IR_STORE, emit(b, KL_IR_INDEX, c, k1), k0);
  uint32_t ldc = emit(b, KL_IR_LOAD, emit(b, KL_IR_INDEX, c, k0), 0);
  iff(b, bin(b, KL_IR_LT, x, k1), &t, NULL);
  emit(t, KL_IR_STORE, emit(t, KL_IR_INDEX, d, k0), k1);
  uint32_t ldd = emit(b, KL_IR_LOAD, emit(b, KL_IR_INDEX, d, k0), 0);
  struct kl_uniformity *u = run(NULL);
  check_scope("thread-array.load", u, ld, KL_SCOPE_THREAD);
  check("thread-array.source", kl_uniformity_source(u, ld) == x, "source %u",
        kl_uniformity_source(u, ld));
  check_scope("thread-array.constants", u, ldc, KL_SCOPE_UNIFORM);
  check_scope("thread-array.divergent-store", u, ldd, KL_SCOPE_THREAD);
}

/* for (i < n) { for (j < lid) { barrier } barrier } -- separate symbols, separate facts. */
static void test_nested_loops(void) {
  fresh();
  uint32_t i, j, ob, ol, ib, il, n = arg(F->body), x = lid(F->body);
  uint32_t outer = counted(F->body, n, &i, &ob, &ol);
  uint32_t inner = counted(ob, x, &j, &ib, &il);
  F->ins[i].sym = kl_ir_sym_new(F, "i", NULL, 0);
  F->ins[j].sym = kl_ir_sym_new(F, "j", NULL, 0);
  uint32_t in_bar = barrier(ib);
  uint32_t jout = phi(ob, KL_IR_PHI_EXIT, inner, j, 0);
  uint32_t out_bar = barrier(ob);
  uint32_t iout = phi(F->body, KL_IR_PHI_EXIT, outer, i, 0);
  struct kl_uniformity *u = run(NULL);
  check_scope("nested.i", u, i, KL_SCOPE_UNIFORM);
  check_scope("nested.j", u, j, KL_SCOPE_UNIFORM);
  check_scope("nested.j-after", u, jout, KL_SCOPE_THREAD);
  check_scope("nested.i-after", u, iout, KL_SCOPE_UNIFORM);
  check("nested.inner-barrier", kl_uniformity_barrier_divergent(u, in_bar), "not divergent");
  check("nested.outer-barrier", !kl_uniformity_barrier_divergent(u, out_bar), "divergent");
  check("nested.inner-cause", kl_uniformity_cause(u, in_bar).branch == inner, "cause %u",
        kl_uniformity_cause(u, in_bar).branch);
}

/* if (sgid == 0) { simdgroup_barrier(); threadgroup_barrier(); } */
static void test_simdgroup_branch(void) {
  fresh();
  uint32_t t, sg = coord(F->body, "simdgroup_index_in_threadgroup", 0);
  iff(F->body, bin(F->body, KL_IR_EQ, sg, cst(F->body, 0)), &t, NULL);
  uint32_t sb = call_fn(t, KL_IR_BARRIER, "simdgroup_barrier", 0), tb = barrier(t);
  struct kl_uniformity *u = run(NULL);
  check_ctl("simdgroup-branch.ctl", u, sb, KL_SCOPE_SIMDGROUP);
  check("simdgroup-branch.simdgroup-barrier", !kl_uniformity_barrier_divergent(u, sb), "divergent");
  check("simdgroup-branch.threadgroup-barrier", kl_uniformity_barrier_divergent(u, tb),
        "not divergent");
}

/* for (i < n) { barrier; s = 0; if (lid < 4) continue; barrier; s = 1; } latch: phi(s) --
 * the rest of the body diverges, the next iteration meets again. */
static void test_continue(void) {
  fresh();
  uint32_t i, body, latch, t, n = arg(F->body), x = lid(F->body);
  uint32_t l = counted(F->body, n, &i, &body, &latch);
  uint32_t first = barrier(body), zero = cst(body, 0);
  iff(body, bin(body, KL_IR_LT, x, cst(body, 4)), &t, NULL);
  emit(t, KL_IR_CONTINUE, 0, 0);
  uint32_t rest = barrier(body), one = cst(body, 1);
  uint32_t lp = phi(latch, KL_IR_PHI_LATCH, l, one, zero);
  struct kl_uniformity *u = run(NULL);
  check("continue.rest", kl_uniformity_barrier_divergent(u, rest), "not divergent");
  check("continue.next-iteration", !kl_uniformity_barrier_divergent(u, first), "divergent");
  check_scope("continue.latch-phi", u, lp, KL_SCOPE_THREAD);
  check("continue.latch-source", kl_uniformity_source(u, lp) == x, "source %u",
        kl_uniformity_source(u, lp));
  check_scope("continue.i", u, i, KL_SCOPE_UNIFORM);
}

/* A helper inlined at site 1 returns early under lid; its own later code diverges, the kernel's
 * code after the helper does not. */
static void test_helper_return(void) {
  fresh();
  TSNode none = {0};
  uint32_t site = kl_ir_site_new(F, none, NULL, 0), t;
  uint32_t x = lid(F->body);
  uint32_t c = bin(F->body, KL_IR_LT, x, cst(F->body, 4));
  F->ins[c].site = site;
  uint32_t br = iff(F->body, c, &t, NULL);
  F->ins[br].site = site;
  uint32_t ret = emit(t, KL_IR_RETURN, 0, 0);
  F->ins[ret].site = site;
  uint32_t in_helper = barrier(F->body);
  F->ins[in_helper].site = site;
  uint32_t after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check("helper-return.inside", kl_uniformity_barrier_divergent(u, in_helper), "not divergent");
  check("helper-return.after", !kl_uniformity_barrier_divergent(u, after), "divergent");
}

/* if (lid < n) { for (i < m) { if (i == 3) break; } } -- the guard does not make the loop's
 * exit value divergent; a thread-local array written in the loop stays uniform. */
static void test_guarded_loop(void) {
  fresh();
  uint32_t t, i, body, latch, bt, x = lid(F->body), n = arg(F->body), m = arg(F->body);
  iff(F->body, bin(F->body, KL_IR_LT, x, n), &t, NULL);
  uint32_t a = emit(t, KL_IR_ALLOC, 0, 0);
  uint32_t l = counted(t, m, &i, &body, &latch);
  iff(body, bin(body, KL_IR_EQ, i, cst(body, 3)), &bt, NULL);
  emit(bt, KL_IR_BREAK, 0, 0);
  emit(body, KL_IR_STORE, emit(body, KL_IR_INDEX, a, i), i);
  uint32_t out = phi(t, KL_IR_PHI_EXIT, l, i, i);
  uint32_t ld = emit(t, KL_IR_LOAD, emit(t, KL_IR_INDEX, a, cst(t, 0)), 0);
  uint32_t bar = barrier(body);
  struct kl_uniformity *u = run(NULL);
  check_scope("guarded-loop.exit", u, out, KL_SCOPE_UNIFORM);
  check_scope("guarded-loop.array", u, ld, KL_SCOPE_UNIFORM);
  check_ctl("guarded-loop.ctl", u, bar, KL_SCOPE_THREAD);
  check("guarded-loop.cause", kl_uniformity_cause(u, bar).source == x, "cause source %u",
        kl_uniformity_cause(u, bar).source);
}

/* A loop whose bound is loaded per thread: its header PHI stays uniform, its trip count is not,
 * so a barrier in it diverges and so does a value carried across the back edge of a PHI that
 * joins a value from a divergent branch. */
static void test_loop_carried(void) {
  fresh();
  uint32_t i, body, latch, t, e, x = lid(F->body), zero = cst(F->body, 0);
  uint32_t hdr, one = cst(F->body, 1);
  uint32_t l = loop(F->body, &hdr, &body, &latch);
  uint32_t s = phi(hdr, KL_IR_PHI_HEAD, l, zero, 0);
  i = phi(hdr, KL_IR_PHI_HEAD, l, zero, 0);
  loop_cond(l, bin(hdr, KL_IR_LT, i, cst(hdr, 8)));
  uint32_t br = iff(body, bin(body, KL_IR_LT, s, one), &t, &e);
  uint32_t ns = bin(t, KL_IR_ADD, x, one);
  uint32_t p = phi(body, KL_IR_PHI_IF, br, ns, s);
  set_phi(s, zero, p);
  set_phi(i, zero, bin(latch, KL_IR_ADD, i, one));
  uint32_t bar = barrier(t);
  struct kl_uniformity *u = run(NULL);
  check_scope("loop-carried.s", u, s, KL_SCOPE_THREAD);
  check_scope("loop-carried.i", u, i, KL_SCOPE_UNIFORM);
  check("loop-carried.barrier", kl_uniformity_barrier_divergent(u, bar), "not divergent");
  check("loop-carried.passes", u->passes <= 6, "%u passes", u->passes);
}

/* for (i < lid) acc[0] += 1; -- a per-thread trip count makes the array's contents per thread. */
static void test_divergent_trip_store(void) {
  fresh();
  uint32_t i, body, latch, b = F->body, x = lid(b), k0 = cst(b, 0);
  uint32_t a = emit(b, KL_IR_ALLOC, 0, 0);
  F->ins[a].as = KL_AS_THREAD;
  counted(b, x, &i, &body, &latch);
  uint32_t st = emit(body, KL_IR_STORE, emit(body, KL_IR_INDEX, a, k0), cst(body, 1));
  F->ins[st].sub = KL_IR_ADD;
  uint32_t ld = emit(b, KL_IR_LOAD, emit(b, KL_IR_INDEX, a, k0), 0);
  struct kl_uniformity *u = run(NULL);
  check_scope("divergent-trip-store.load", u, ld, KL_SCOPE_THREAD);
}

/* do { barrier; } while (data[lid] != 0); -- the body runs first, but later iterations are per
 * thread. */
static void test_do_while(void) {
  fresh();
  uint32_t hdr, body, latch, buf = arg(F->body), x = lid(F->body);
  uint32_t l = loop(F->body, &hdr, &body, &latch);
  F->ins[l].flags |= KL_IR_F_DO_WHILE;
  uint32_t bar = barrier(body);
  uint32_t ld = emit(hdr, KL_IR_LOAD, emit(hdr, KL_IR_INDEX, buf, x), 0);
  F->ins[ld].as = KL_AS_DEVICE;
  loop_cond(l, bin(hdr, KL_IR_NE, ld, cst(hdr, 0)));
  uint32_t after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check("do-while.body", kl_uniformity_barrier_divergent(u, bar), "not divergent");
  check("do-while.after", !kl_uniformity_barrier_divergent(u, after), "divergent");
}

/* for (i < n) { barrier; if (lid == i) return; } barrier; -- a return leaves the loop and the
 * kernel: later iterations and everything after diverge. A return under a threadgroup-uniform
 * condition keeps a threadgroup barrier fine. */
static void test_return_in_loop(void) {
  fresh();
  uint32_t i, body, latch, t, t2, n = arg(F->body), x = lid(F->body);
  uint32_t g = coord(F->body, "threadgroup_position_in_grid", 0);
  iff(F->body, bin(F->body, KL_IR_GE, g, n), &t2, NULL);
  emit(t2, KL_IR_RETURN, 0, 0);
  uint32_t early = barrier(F->body);
  counted(F->body, n, &i, &body, &latch);
  uint32_t first = barrier(body);
  iff(body, bin(body, KL_IR_EQ, x, i), &t, NULL);
  emit(t, KL_IR_RETURN, 0, 0);
  uint32_t after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check_ctl("return-in-loop.threadgroup-return", u, early, KL_SCOPE_THREADGROUP);
  check("return-in-loop.early", !kl_uniformity_barrier_divergent(u, early), "divergent");
  check("return-in-loop.first", kl_uniformity_barrier_divergent(u, first), "not divergent");
  check("return-in-loop.after", kl_uniformity_barrier_divergent(u, after), "not divergent");
}

/* Values carried around a loop in a rotation reach lid one back edge at a time. */
static void test_rotation(void) {
  fresh();
  enum { K = 10 };
  uint32_t hdr, body, latch, x = lid(F->body), zero = cst(F->body, 0), p[K], next[K];
  uint32_t l = loop(F->body, &hdr, &body, &latch);
  for (int k = 0; k < K; k++) p[k] = phi(hdr, KL_IR_PHI_HEAD, l, zero, 0);
  loop_cond(l, bin(hdr, KL_IR_LT, p[0], arg(hdr)));
  for (int k = 0; k < K; k++) next[k] = k + 1 < K ? emit(body, KL_IR_CAST, p[k + 1], 0) : x;
  for (int k = 0; k < K; k++) set_phi(p[k], zero, next[k]);
  uint32_t bar = barrier(body);
  struct kl_uniformity *u = run(NULL);
  check_scope("rotation.first", u, p[0], KL_SCOPE_THREAD);
  check("rotation.barrier", kl_uniformity_barrier_divergent(u, bar), "not divergent");
  check("rotation.passes", u->passes <= K + 4, "%u passes", u->passes);
}

/* for (i < n) { barrier; helper() { if (lid < 4) return; } } -- the helper's return ends with
 * the helper: neither the next iteration nor code after the loop diverges. */
static void test_helper_in_loop(void) {
  fresh();
  TSNode none = {0};
  uint32_t i, body, latch, t, n = arg(F->body), x = lid(F->body);
  uint32_t site = kl_ir_site_new(F, none, NULL, 0);
  uint32_t l = counted(F->body, n, &i, &body, &latch);
  uint32_t first = barrier(body);
  uint32_t c = bin(body, KL_IR_LT, x, cst(body, 4));
  uint32_t br = iff(body, c, &t, NULL);
  uint32_t ret = emit(t, KL_IR_RETURN, 0, 0);
  uint32_t tail = barrier(body);
  F->ins[c].site = F->ins[br].site = F->ins[ret].site = F->ins[tail].site = site;
  uint32_t out = phi(F->body, KL_IR_PHI_EXIT, l, i, 0);
  uint32_t after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check("helper-in-loop.tail", kl_uniformity_barrier_divergent(u, tail), "not divergent");
  check("helper-in-loop.first", !kl_uniformity_barrier_divergent(u, first), "divergent");
  check("helper-in-loop.after", !kl_uniformity_barrier_divergent(u, after), "divergent");
  check_scope("helper-in-loop.exit", u, out, KL_SCOPE_UNIFORM);
}

/* simd_min(tg[lane]): every SIMD group reads the same slots lane for lane, so the minimum is the
 * same in all of them (THREADGROUP), unless the threadgroup has a shorter last SIMD group; with
 * a per-SIMD-group offset added to the slot it is only SIMDGROUP. */
static void test_simd_min_lanewise(void) {
  for (int t = 0; t < 3; t++) {
    fresh();
    uint32_t a = emit(F->body, KL_IR_ALLOC, 0, 0);
    F->ins[a].as = KL_AS_THREADGROUP;
    uint32_t lane = coord(F->body, "thread_index_in_simdgroup", 0);
    uint32_t slot = lane;
    if (t == 2)
      slot = bin(F->body, KL_IR_ADD, lane, coord(F->body, "simdgroup_index_in_threadgroup", 0));
    uint32_t ld = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, a, slot), 0);
    F->ins[ld].as = KL_AS_THREADGROUP;
    uint32_t m = call_fn(F->body, KL_IR_SIMD, "simd_min", ld);
    int64_t tg48[3] = {48, 1, 1};
    struct kl_uniformity *u = run(t == 1 ? tg48 : NULL);
    check_scope(t == 0   ? "simd-min-lanewise"
                : t == 1 ? "simd-min-lanewise.short-simd-group"
                         : "simd-min-lanewise.per-group-slot",
                u, m, t == 0 ? KL_SCOPE_THREADGROUP : KL_SCOPE_SIMDGROUP);
  }
}

/* for (i = 0; i < n[lid]; i++) {}  x = i; -- no break, so no exit PHI: the header PHI read after
 * the loop is as divergent as the trip count. */
static void test_temporal_header(void) {
  fresh();
  uint32_t buf = arg(F->body);
  uint32_t n = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, buf, lid(F->body)), 0);
  F->ins[n].as = KL_AS_DEVICE;
  uint32_t i, body, latch;
  counted(F->body, n, &i, &body, &latch);
  uint32_t after = bin(F->body, KL_IR_ADD, i, cst(F->body, 1));
  uint32_t then;
  iff(F->body, bin(F->body, KL_IR_LT, i, cst(F->body, 4)), &then, NULL);
  uint32_t b = barrier(then);
  struct kl_uniformity *u = run(NULL);
  check_scope("temporal-header.inside", u, i, KL_SCOPE_UNIFORM); /* the threads still in agree */
  check_scope("temporal-header.after", u, after, KL_SCOPE_THREAD);
  check_ctl("temporal-header.barrier", u, b, KL_SCOPE_THREAD);
}

/* Threadgroup of 256: lid < 256 holds for every thread, so a barrier under it is fine;
 * lid < 128 does not; min(lid, 0) is 0. */
static void test_decided_compare(void) {
  fresh();
  uint32_t t, t2, x = lid(F->body);
  uint32_t all = bin(F->body, KL_IR_LT, x, cst(F->body, 256));
  uint32_t half = bin(F->body, KL_IR_LT, x, cst(F->body, 128));
  uint32_t ne = bin(F->body, KL_IR_NE, x, cst(F->body, -1));
  uint32_t mn = bin(F->body, KL_IR_MIN, x, cst(F->body, 0));
  iff(F->body, all, &t, NULL);
  uint32_t fine = barrier(t);
  iff(F->body, half, &t2, NULL);
  uint32_t bad = barrier(t2);
  struct kl_uniformity *u = run((const int64_t[3]){256, 1, 1});
  check_scope("decided.all", u, all, KL_SCOPE_UNIFORM);
  check_scope("decided.half", u, half, KL_SCOPE_THREAD);
  check_scope("decided.ne", u, ne, KL_SCOPE_UNIFORM);
  check_scope("decided.min", u, mn, KL_SCOPE_UNIFORM);
  check("decided.fine", !kl_uniformity_barrier_divergent(u, fine), "divergent");
  check("decided.bad", kl_uniformity_barrier_divergent(u, bad), "not divergent");
  u = run(NULL);
  check_scope("decided.unknown", u, all, KL_SCOPE_THREAD);
}

/* An inlined helper with an early return, as the lowering makes it: a REGION loop run once,
 * `if (lid < 4) return 0; barrier; return 1;` -- the barrier after the return diverges, the one
 * before does not (no later iteration), the joined return value is per thread, and the
 * caller's code after the region is fine. */
static void test_region(void) {
  fresh();
  TSNode none = {0};
  uint32_t hdr, body, latch, t, x = lid(F->body), site = kl_ir_site_new(F, none, NULL, 0);
  uint32_t l = loop(F->body, &hdr, &body, &latch);
  F->ins[l].flags |= KL_IR_F_REGION;
  F->ins[l].site = site;
  uint32_t before = barrier(body);
  uint32_t c = bin(body, KL_IR_LT, x, cst(body, 4)), br = iff(body, c, &t, NULL);
  uint32_t r0 = emit(t, KL_IR_RETURN, cst(t, 0), 0);
  uint32_t mid = barrier(body), k1 = cst(body, 1), r1 = emit(body, KL_IR_RETURN, k1, 0);
  uint32_t end = emit(body, KL_IR_BREAK, 0, 0);
  uint32_t ops[] = {before, c, br, r0, mid, k1, r1, end};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) F->ins[ops[k]].site = site;
  uint32_t ret =
      kl_ir_emit(F, F->body, KL_IR_PHI, (uint32_t[]){KL_IR_NONE, F->ins[r0].ops[0], k1}, 3);
  F->ins[ret].sub = KL_IR_PHI_EXIT;
  F->ins[ret].ref_ins = l;
  uint32_t after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  check("region.before", !kl_uniformity_barrier_divergent(u, before), "divergent");
  check("region.mid", kl_uniformity_barrier_divergent(u, mid), "not divergent");
  check("region.after", !kl_uniformity_barrier_divergent(u, after), "divergent");
  check_scope("region.return-value", u, ret, KL_SCOPE_THREAD);
  check("region.return-source", kl_uniformity_source(u, ret) == x, "source %u",
        kl_uniformity_source(u, ret));
}

/* Threadgroup (32, 8, 1), 8 SIMD groups: row = tgid.x * 4 + 4 * (sgid / 8) is one row per
 * threadgroup, so `if (row >= n) return;` keeps every thread of a threadgroup together and the
 * barrier after it is fine; with the threadgroup size unknown it is not. */
static void test_row_per_threadgroup(void) {
  fresh();
  uint32_t t, b = F->body, g = coord(b, "threadgroup_position_in_grid", 0);
  uint32_t sg = coord(b, "simdgroup_index_in_threadgroup", 0), four = cst(b, 4);
  uint32_t m = bin(b, KL_IR_MUL, four, bin(b, KL_IR_DIV, sg, cst(b, 8)));
  uint32_t row = bin(b, KL_IR_ADD, bin(b, KL_IR_MUL, g, four), m);
  iff(b, bin(b, KL_IR_GE, row, arg(b)), &t, NULL);
  emit(t, KL_IR_RETURN, 0, 0);
  uint32_t bar = barrier(b);
  struct kl_uniformity *u = run((const int64_t[3]){32, 8, 1});
  check_scope("row-per-threadgroup.row", u, row, KL_SCOPE_THREADGROUP);
  check("row-per-threadgroup.barrier", !kl_uniformity_barrier_divergent(u, bar), "divergent");
  u = run(NULL);
  check_scope("row-per-threadgroup.unknown", u, row, KL_SCOPE_SIMDGROUP);
  check("row-per-threadgroup.unknown-barrier", kl_uniformity_barrier_divergent(u, bar),
        "not divergent");
}

/* for (t = base + lid; t < end + lid; t += C) { barrier } -- every thread runs end - base over C
 * iterations: with scev's forms the condition's per-thread parts cancel. Without them, or when
 * the bound is not offset by the same coordinate, the loop diverges. */
static void test_cancelling_bound(void) {
  fresh();
  uint32_t hdr, body, latch, b = F->body, x = lid(b), base = arg(b), end = arg(b), c = arg(b);
  uint32_t start = bin(b, KL_IR_ADD, base, x), lim = bin(b, KL_IR_ADD, end, x);
  uint32_t other = bin(b, KL_IR_ADD, end, bin(b, KL_IR_MUL, x, cst(b, 2)));
  uint32_t l = loop(b, &hdr, &body, &latch);
  uint32_t t = phi(hdr, KL_IR_PHI_HEAD, l, start, 0);
  uint32_t cond = bin(hdr, KL_IR_LT, t, lim), odd = bin(hdr, KL_IR_LT, t, other);
  loop_cond(l, cond);
  uint32_t bar = barrier(body);
  set_phi(t, start, bin(latch, KL_IR_ADD, t, c));
  struct kl_scev *sc = kl_scev_run(arena, F);
  struct kl_uniformity *u = kl_uniformity_compute_scev(F, NULL, sc);
  check("cancelling.converged", u->converged, "not converged");
  check_scope("cancelling.cond", u, cond, KL_SCOPE_UNIFORM);
  check_scope("cancelling.other", u, odd, KL_SCOPE_THREAD);
  check_scope("cancelling.t", u, t, KL_SCOPE_THREAD);
  check("cancelling.barrier", !kl_uniformity_barrier_divergent(u, bar), "divergent");
  u = run(NULL);
  check_scope("cancelling.own-forms", u, cond, KL_SCOPE_UNIFORM);
  check_scope("cancelling.own-forms-other", u, odd, KL_SCOPE_THREAD);
  check("cancelling.own-forms-barrier", !kl_uniformity_barrier_divergent(u, bar), "divergent");
}

/* The same cancellation through the pass's own forms, with a threadgroup-uniform division in
 * the start (batch = tgpos.x / H, not affine): start = batch * n + lid, end = (batch + 1) * n +
 * lid. A step that is per thread (t += lid) breaks it. */
static void test_cancelling_division(void) {
  fresh();
  uint32_t hdr, body, latch, h2, b2, l2, b = F->body, x = lid(b), n = arg(b);
  uint32_t g = coord(b, "threadgroup_position_in_grid", 0);
  uint32_t batch = bin(b, KL_IR_DIV, g, arg(b));
  uint32_t start = bin(b, KL_IR_ADD, bin(b, KL_IR_MUL, batch, n), x);
  uint32_t stop = bin(b, KL_IR_ADD, bin(b, KL_IR_MUL, bin(b, KL_IR_ADD, batch, cst(b, 1)), n), x);
  uint32_t l = loop(b, &hdr, &body, &latch);
  uint32_t t = phi(hdr, KL_IR_PHI_HEAD, l, start, 0);
  uint32_t cond = bin(hdr, KL_IR_LT, t, stop);
  loop_cond(l, cond);
  uint32_t bar = barrier(body);
  set_phi(t, start, bin(latch, KL_IR_ADD, t, n));
  uint32_t l2v = loop(b, &h2, &b2, &l2);
  uint32_t t2 = phi(h2, KL_IR_PHI_HEAD, l2v, start, 0);
  uint32_t cond2 = bin(h2, KL_IR_LT, t2, stop);
  loop_cond(l2v, cond2);
  uint32_t bar2 = barrier(b2);
  set_phi(t2, start, bin(l2, KL_IR_ADD, t2, x));
  struct kl_uniformity *u = run(NULL);
  check_scope("cancelling-division.cond", u, cond, KL_SCOPE_THREADGROUP);
  check("cancelling-division.barrier", !kl_uniformity_barrier_divergent(u, bar), "divergent");
  check_scope("cancelling-division.per-thread-step", u, cond2, KL_SCOPE_THREAD);
  check("cancelling-division.per-thread-step-barrier", kl_uniformity_barrier_divergent(u, bar2),
        "not divergent");
}

/* j = max(lane - 1u, 0u): unsigned, lane 0 wraps to the top of the type, so `j < 32u` is not
 * decided by the ranges and a barrier under it stays divergent. With a ragged launch, a
 * lane-wise reduction is no longer taken as uniform over the threadgroup. */
static void test_unsigned_wrap(void) {
  fresh();
  uint32_t lane = coord(F->body, "thread_index_in_simdgroup", 0);
  uint32_t d = bin(F->body, KL_IR_SUB, lane, cst(F->body, 1));
  F->ins[d].flags |= KL_IR_F_UNSIGNED;
  uint32_t j = bin(F->body, KL_IR_MAX, d, cst(F->body, 0));
  F->ins[j].flags |= KL_IR_F_UNSIGNED;
  uint32_t c = bin(F->body, KL_IR_LT, j, cst(F->body, 32));
  F->ins[c].flags |= KL_IR_F_UNSIGNED;
  uint32_t then;
  iff(F->body, c, &then, NULL);
  uint32_t b = barrier(then);
  struct kl_uniformity *u = run(NULL);
  check_ctl("unsigned-wrap.barrier", u, b, KL_SCOPE_THREAD);

  fresh();
  uint32_t a = emit(F->body, KL_IR_ALLOC, 0, 0);
  F->ins[a].as = KL_AS_THREADGROUP;
  uint32_t ln = coord(F->body, "thread_index_in_simdgroup", 0);
  uint32_t ld = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, a, ln), 0);
  F->ins[ld].as = KL_AS_THREADGROUP;
  uint32_t m = call_fn(F->body, KL_IR_SIMD, "simd_min", ld);
  struct kl_uniformity_launch ragged = {{0, 1, 1}, 0, true, false};
  u = kl_uniformity_compute(F, &ragged);
  check_scope("ragged-launch.simd-min", u, m, KL_SCOPE_SIMDGROUP);
}

/* own = simd_max(lid); if (lane == 0) T[sg] = own; barrier; if (lane < nsg) x = T[lane] (else
 * x = own); m = simd_max(x): the padded lanes repeat own, which lane sg loads back, so m is the
 * maximum of T[0..nsg) in every SIMD group. Each variant breaks one link of that argument (10:
 * a slot narrower than own reads back a converted own; 11: no types to tell). */
static void test_own_slot_fill(void) {
  static const char *const names[] = {
      "own-slot.max",         "own-slot.sum",        "own-slot.short-cond",
      "own-slot.other-value", "own-slot.no-barrier", "own-slot.store-between",
      "own-slot.tg48",        "own-slot.select",     "own-slot.store-in-lane-40",
      "own-slot.store-before", "own-slot.narrow-slot", "own-slot.untyped"};
  for (int t = 0; t < 12; t++) {
    fresh();
    uint32_t tgm = emit(F->body, KL_IR_ALLOC, 0, 0);
    F->ins[tgm].as = KL_AS_THREADGROUP;
    uint32_t lane = coord(F->body, "thread_index_in_simdgroup", 0);
    uint32_t sg = coord(F->body, "simdgroup_index_in_threadgroup", 0);
    uint32_t nsg = coord(F->body, "simdgroups_per_threadgroup", 0);
    const char *red = t == 1 ? "simd_sum" : "simd_max";
    uint32_t own = call_fn(F->body, KL_IR_SIMD, red, lid(F->body));
    /* 10: a uchar slot keeps (uchar)own, not own; 11: types unknown, nothing to compare. */
    const char *ty = t == 11 ? NULL : "uint", *slot_ty = t == 10 ? "uchar" : ty;
    F->ins[own].type = ty;
    uint32_t stored = t == 3 ? call_fn(F->body, KL_IR_SIMD, red, cst(F->body, 7)) : own;
    uint32_t then, fill;
    if (t == 9) {
      uint32_t s0 = emit(F->body, KL_IR_STORE, emit(F->body, KL_IR_INDEX, tgm, lane), own);
      F->ins[s0].as = KL_AS_THREADGROUP;
    }
    iff(F->body, bin(F->body, KL_IR_EQ, lane, cst(F->body, t == 8 ? 40 : 0)), &then, NULL);
    uint32_t st = emit(then, KL_IR_STORE, emit(then, KL_IR_INDEX, tgm, sg), stored);
    F->ins[st].as = KL_AS_THREADGROUP;
    F->ins[st].type = slot_ty;
    if (t != 4) F->ins[barrier(F->body)].imm = KL_IR_MEM_THREADGROUP;
    if (t == 5) {
      uint32_t s2 = emit(F->body, KL_IR_STORE, emit(F->body, KL_IR_INDEX, tgm, lane), own);
      F->ins[s2].as = KL_AS_THREADGROUP;
    }
    uint32_t cond =
        t == 2 ? bin(F->body, KL_IR_LT, bin(F->body, KL_IR_ADD, lane, cst(F->body, 1)), nsg)
               : bin(F->body, KL_IR_LT, lane, nsg);
    if (t == 7) {
      uint32_t ld = emit(F->body, KL_IR_LOAD, emit(F->body, KL_IR_INDEX, tgm, lane), 0);
      F->ins[ld].as = KL_AS_THREADGROUP;
      F->ins[ld].type = slot_ty;
      uint32_t ops[3] = {cond, ld, own};
      fill = kl_ir_emit(F, F->body, KL_IR_SELECT, ops, 3);
    } else {
      uint32_t br = iff(F->body, cond, &then, NULL);
      uint32_t ld = emit(then, KL_IR_LOAD, emit(then, KL_IR_INDEX, tgm, lane), 0);
      F->ins[ld].as = KL_AS_THREADGROUP;
      F->ins[ld].type = slot_ty;
      fill = phi(F->body, KL_IR_PHI_IF, br, ld, own);
    }
    uint32_t m = call_fn(F->body, KL_IR_SIMD, red, fill);
    int64_t tg48[3] = {48, 1, 1};
    struct kl_uniformity *u = run(t == 6 ? tg48 : NULL);
    bool good = t == 0 || t == 7;
    check_scope(names[t], u, m, good ? KL_SCOPE_THREADGROUP : KL_SCOPE_SIMDGROUP);
  }
}

static uint32_t sym(uint32_t b, const char *name) {
  uint32_t v = emit(b, KL_IR_SYMBOL, 0, 0);
  F->ins[v].name = name;
  return v;
}

static uint32_t ubin(uint32_t b, enum kl_ir_binop sub, uint32_t x, uint32_t y) {
  uint32_t v = bin(b, sub, x, y);
  F->ins[v].flags |= KL_IR_F_UNSIGNED;
  return v;
}

/* for (j = 0; j < N; j += K * S) { b1; b2; if (int(N - j) - (sg % S) * K < 0) break; b3; }
 * with b4 in the latch: the break fires only in the last trip, where (sg % S) * K < K * S is
 * past what is left, so b1 and b2 are reached by all; b3 and b4 in that trip are not. Variants
 * that break that: 1 the step is K alone, 2 the offset sg * K has no remainder, 3 the bound is
 * read from threadgroup memory in the header (not the same in every trip), 4 the comparison
 * written `X > N - j` (still the last trip), 5 the break in the else block, 6 the offset
 * (sg % S) * K + 2, which can pass the step K * S when K < 2, 7 a `&&` with another conjunct
 * (still the last trip), 8 the offset (sg % 2) * 32 + lane (at most 63) with the step 63 (the
 * last trip: the break needs N - j < X <= 63), 9 the same with the step 61, 10 the offset
 * read from component x of a vector stored once (the last trip), 11 the vector stored twice. */
static void last_trip(const char *name, int variant, bool first_div) {
  fresh();
  uint32_t hdr, body, latch, t, e, sg = coord(F->body, "simdgroup_index_in_threadgroup", 0);
  uint32_t tg = arg(F->body), zero = cst(F->body, 0);
  uint32_t k = sym(F->body, "K"), s = sym(F->body, "S");
  uint32_t x = variant == 2 ? ubin(F->body, KL_IR_MUL, sg, k)
                            : ubin(F->body, KL_IR_MUL, ubin(F->body, KL_IR_REM, sg, s), k);
  if (variant == 6) x = bin(F->body, KL_IR_ADD, x, cst(F->body, 2));
  /* (sg % 2) * 32 + lane, at most 63. */
  if (variant == 8 || variant == 9)
    x = bin(
        F->body, KL_IR_ADD,
        ubin(F->body, KL_IR_MUL, ubin(F->body, KL_IR_REM, sg, cst(F->body, 2)), cst(F->body, 32)),
        coord(F->body, "thread_index_in_simdgroup", 0));
  /* ushort2 p(sg % S, sg / S); x = p.x * K (10), or p with a second store (11). */
  if (variant >= 10) {
    uint32_t al = emit(F->body, KL_IR_ALLOC, 0, 0);
    F->ins[al].as = KL_AS_THREAD;
    F->ins[al].type = "ushort2";
    uint32_t v =
        emit(F->body, KL_IR_CALL, ubin(F->body, KL_IR_REM, sg, s), ubin(F->body, KL_IR_DIV, sg, s));
    F->ins[v].name = "ushort2";
    emit(F->body, KL_IR_STORE, al, v);
    if (variant == 11) emit(F->body, KL_IR_STORE, al, emit(F->body, KL_IR_CALL, sg, sg));
    uint32_t m = emit(F->body, KL_IR_MEMBER, al, 0);
    F->ins[m].name = "x";
    x = ubin(F->body, KL_IR_MUL, emit(F->body, KL_IR_LOAD, m, 0), k);
  }
  uint32_t l = loop(F->body, &hdr, &body, &latch);
  uint32_t j = phi(hdr, KL_IR_PHI_HEAD, l, zero, 0), n = sym(hdr, "N");
  if (variant == 3) {
    n = emit(hdr, KL_IR_LOAD, tg, 0);
    F->ins[n].as = KL_AS_THREADGROUP;
  }
  loop_cond(l, bin(hdr, KL_IR_LT, j, n));
  uint32_t b1 = barrier(body), b2 = barrier(body);
  uint32_t nb = variant == 3 ? n : sym(body, "N");
  uint32_t left = emit(body, KL_IR_CAST, ubin(body, KL_IR_SUB, nb, j), 0);
  F->ins[left].type = "int";
  uint32_t c = variant == 4 ? bin(body, KL_IR_GT, x, left)
                            : bin(body, KL_IR_LT, bin(body, KL_IR_SUB, left, x), zero);
  if (variant == 7) c = bin(body, KL_IR_LAND, bin(body, KL_IR_NE, n, zero), c);
  iff(body, c, &t, variant == 5 ? &e : NULL);
  emit(variant == 5 ? e : t, KL_IR_BREAK, 0, 0);
  uint32_t b3 = barrier(body), b4 = barrier(latch);
  uint32_t step = variant == 1 ? sym(latch, "K")
                  : variant == 8 || variant == 9
                      ? cst(latch, variant == 8 ? 63 : 61)
                      : bin(latch, KL_IR_MUL, sym(latch, "K"), sym(latch, "S"));
  set_phi(j, zero, bin(latch, KL_IR_ADD, j, step));
  uint32_t out = phi(F->body, KL_IR_PHI_EXIT, l, j, j), after = barrier(F->body);
  struct kl_uniformity *u = run(NULL);
  char what[96];
  snprintf(what, sizeof what, "last-trip.%s.first", name);
  check(what, kl_uniformity_barrier_divergent(u, b1) == first_div, "b1 divergent %d", !first_div);
  snprintf(what, sizeof what, "last-trip.%s.second", name);
  check(what, kl_uniformity_barrier_divergent(u, b2) == first_div, "b2 divergent %d", !first_div);
  snprintf(what, sizeof what, "last-trip.%s.rest", name);
  check(what, kl_uniformity_barrier_divergent(u, b3), "b3 not divergent");
  snprintf(what, sizeof what, "last-trip.%s.latch", name);
  check(what, kl_uniformity_barrier_divergent(u, b4), "b4 not divergent");
  snprintf(what, sizeof what, "last-trip.%s.exit", name);
  check(what, kl_uniformity_value(u, out) >= KL_SCOPE_SIMDGROUP, "exit PHI %s",
        kl_msl_scope_name(kl_uniformity_value(u, out)));
  snprintf(what, sizeof what, "last-trip.%s.after", name);
  check(what, !kl_uniformity_barrier_divergent(u, after), "after the loop divergent");
}

static void test_last_trip_break(void) {
  last_trip("proven", 0, false);
  last_trip("step-k", 1, true);
  last_trip("no-rem", 2, true);
  last_trip("bound-read", 3, true);
  last_trip("greater", 4, false);
  last_trip("else", 5, true);
  last_trip("plus-two", 6, true);
  last_trip("conjunct", 7, false);
  last_trip("const-step", 8, false);
  last_trip("const-step-short", 9, true);
  last_trip("vector-part", 10, false);
  last_trip("vector-stored-twice", 11, true);
}

/* uint2(tgpos.x, 0) is as uniform as its operands; so is what a function the unit does not
 * define returns, or the constructor of a struct it does not know: only a kernel's parameters
 * carry thread positions, so a helper sees only what it is handed. */
static void test_constructor(void) {
  fresh();
  uint32_t b = F->body, g = coord(b, "threadgroup_position_in_grid", 0), k = cst(b, 0);
  uint32_t ctor = emit(b, KL_IR_CALL, g, k);
  F->ins[ctor].name = F->ins[ctor].type = "uint2";
  uint32_t ext = emit(b, KL_IR_CALL, g, k);
  F->ins[ext].name = "elem_to_loc";
  uint32_t obj = emit(b, KL_IR_CALL, g, k);
  F->ins[obj].name = F->ins[obj].type = "Loader";
  struct kl_uniformity *u = run(NULL);
  check_scope("constructor.builtin", u, ctor, KL_SCOPE_THREADGROUP);
  check_scope("constructor.external", u, ext, KL_SCOPE_THREADGROUP);
  check_scope("constructor.struct", u, obj, KL_SCOPE_THREADGROUP);
}

/* What a function the unit does not define returns when handed addresses: as wide as what it can
 * read through them -- a thread array holding the lane (THREAD), one holding a constant
 * (UNIFORM), threadgroup memory (THREADGROUP), a device buffer at a uniform address (UNIFORM) --
 * and an atomic's result differs per thread whatever its address. */
static void test_external_reads(void) {
  fresh();
  uint32_t b = F->body, x = lid(b), k0 = cst(b, 0), buf = arg(b);
  static struct kl_var dev = {.name = "p", .type = "float", .as = KL_AS_DEVICE};
  static struct kl_var at = {.name = "c", .type = "atomic_uint", .as = KL_AS_DEVICE};
  F->ins[buf].var = &dev;
  uint32_t cnt = arg(b);
  F->ins[cnt].var = &at;
  uint32_t lane = emit(b, KL_IR_ALLOC, 0, 0), zero = emit(b, KL_IR_ALLOC, 0, 0);
  uint32_t tg = emit(b, KL_IR_ALLOC, 0, 0);
  F->ins[lane].as = F->ins[zero].as = KL_AS_THREAD;
  F->ins[tg].as = KL_AS_THREADGROUP;
  emit(b, KL_IR_STORE, emit(b, KL_IR_INDEX, lane, k0), x);
  emit(b, KL_IR_STORE, emit(b, KL_IR_INDEX, zero, k0), k0);
  uint32_t r_lane = emit(b, KL_IR_CALL, lane, 0), r_zero = emit(b, KL_IR_CALL, zero, 0);
  uint32_t r_tg = emit(b, KL_IR_CALL, tg, 0), r_dev = emit(b, KL_IR_CALL, buf, k0);
  uint32_t r_at = emit(b, KL_IR_CALL, cnt, 0);
  F->ins[r_lane].name = F->ins[r_zero].name = F->ins[r_tg].name = "sum";
  F->ins[r_dev].name = "load_at";
  F->ins[r_at].name = "bump";
  struct kl_uniformity *u = run(NULL);
  check_scope("external.thread-array", u, r_lane, KL_SCOPE_THREAD);
  check_scope("external.constant-array", u, r_zero, KL_SCOPE_UNIFORM);
  check_scope("external.threadgroup", u, r_tg, KL_SCOPE_THREADGROUP);
  check_scope("external.device", u, r_dev, KL_SCOPE_UNIFORM);
  check_scope("external.atomic", u, r_at, KL_SCOPE_THREAD);
}

/* A per-thread value stored through an address a call returned (`*p() = lid`) may land in any
 * thread-local array whose address escaped (here: handed to a call), not in one only ever read
 * and written in place; before and after the store alike. */
static void test_escape(void) {
  fresh();
  uint32_t b = F->body, x = lid(b), k0 = cst(b, 0);
  uint32_t kept = emit(b, KL_IR_ALLOC, 0, 0), lent = emit(b, KL_IR_ALLOC, 0, 0);
  F->ins[kept].as = F->ins[lent].as = KL_AS_THREAD;
  emit(b, KL_IR_STORE, emit(b, KL_IR_INDEX, kept, k0), k0);
  emit(b, KL_IR_STORE, emit(b, KL_IR_INDEX, lent, k0), k0);
  uint32_t ld_kept = emit(b, KL_IR_LOAD, emit(b, KL_IR_INDEX, kept, k0), 0);
  uint32_t ld_lent = emit(b, KL_IR_LOAD, emit(b, KL_IR_INDEX, lent, k0), 0);
  uint32_t give = emit(b, KL_IR_CALL, emit(b, KL_IR_INDEX, lent, k0), 0);
  F->ins[give].name = "fill";
  uint32_t p = emit(b, KL_IR_CALL, 0, 0);
  F->ins[p].name = "elements";
  uint32_t st = emit(b, KL_IR_STORE, p, x);
  F->ins[st].as = KL_AS_THREAD;
  struct kl_uniformity *u = run(NULL);
  check_scope("escape.kept", u, ld_kept, KL_SCOPE_UNIFORM);
  check_scope("escape.lent", u, ld_lent, KL_SCOPE_THREAD);
}

/* if (lid.x >= lim) return; threadgroup_barrier(); under launches that size x at run time:
 * kind 0 lim = params[0] / 2 (restated: no divergence); 1 lim a constant; 2 lim from
 * threads_per_threadgroup (half the group leaves); 3 a store before the return; 4 launches of a
 * constant size; 5 `lim <= lid.x`, mirrored; 6 lid.y. */
static bool restated(int kind) {
  fresh();
  const char *lx = kind == 6 ? "thread_position_in_threadgroup" : "thread_index_in_threadgroup";
  uint32_t b = F->body, x = coord(b, lx, kind == 6 ? 1 : 0);
  uint32_t p = arg(b), k0 = cst(b, 0), k2 = cst(b, 2);
  uint32_t lim;
  if (kind == 1)
    lim = cst(b, 64);
  else if (kind == 2)
    lim = bin(b, KL_IR_DIV, coord(b, "threads_per_threadgroup", 0), k2);
  else
    lim = bin(b, KL_IR_DIV, emit(b, KL_IR_LOAD, emit(b, KL_IR_INDEX, p, k0), 0), k2);
  uint32_t c = kind == 5 ? bin(b, KL_IR_LE, lim, x) : bin(b, KL_IR_GE, x, lim), t;
  iff(b, c, &t, NULL);
  if (kind == 3) emit(t, KL_IR_STORE, emit(t, KL_IR_INDEX, p, x), k0);
  emit(t, KL_IR_RETURN, 0, 0);
  uint32_t bar = barrier(b);
  struct kl_uniformity_launch launch = {{0, 0, 0}, 0, false, kind != 4};
  if (kind == 4) launch.tg[0] = 128, launch.tg[1] = launch.tg[2] = 1;
  struct kl_uniformity *u = kl_uniformity_compute(F, &launch);
  return !kl_uniformity_barrier_divergent(u, bar);
}

static void test_restated_size(void) {
  check("restated.runtime-limit", restated(0), "lid >= params[0] / 2 under a runtime size");
  check("restated.constant", !restated(1), "lid >= 64 taken as restating the size");
  check("restated.own-fraction", !restated(2), "lid >= threads_per_threadgroup / 2 taken");
  check("restated.work", !restated(3), "a branch that stores before leaving taken");
  check("restated.constant-size", !restated(4), "a launch of 128 threads taken as runtime");
  check("restated.mirrored", restated(5), "lim <= lid not seen as lid >= lim");
  check("restated.y", !restated(6), "lid.y taken as the runtime x");
}

/* float a = 0; fill(lid, &a) (a function the unit does not define, or a method of a's type): a
 * may now hold what the call was handed, per thread; c, handed with a constant, and d, handed
 * with a constant under a branch on lid, hold what they are given under that control; e,
 * never handed over, still holds its constant. */
static void test_call_writes(void) {
  fresh();
  uint32_t b = F->body, k0 = cst(b, 0), x = lid(b), t;
  uint32_t a = emit(b, KL_IR_ALLOC, 0, 0), c = emit(b, KL_IR_ALLOC, 0, 0);
  uint32_t d = emit(b, KL_IR_ALLOC, 0, 0), e = emit(b, KL_IR_ALLOC, 0, 0);
  F->ins[a].as = F->ins[c].as = F->ins[d].as = F->ins[e].as = KL_AS_THREAD;
  emit(b, KL_IR_STORE, a, k0);
  emit(b, KL_IR_STORE, c, k0);
  emit(b, KL_IR_STORE, d, k0);
  emit(b, KL_IR_STORE, e, k0);
  uint32_t fill = emit(b, KL_IR_CALL, x, a), keep = emit(b, KL_IR_CALL, k0, c);
  iff(b, bin(b, KL_IR_LT, x, cst(b, 8)), &t, NULL);
  uint32_t under = emit(t, KL_IR_CALL, k0, d);
  F->ins[fill].name = F->ins[keep].name = F->ins[under].name = "obj.fill";
  uint32_t la = emit(b, KL_IR_LOAD, a, 0), lc = emit(b, KL_IR_LOAD, c, 0);
  uint32_t ld = emit(b, KL_IR_LOAD, d, 0), le = emit(b, KL_IR_LOAD, e, 0);
  struct kl_uniformity *u = run(NULL);
  check_scope("call-writes.handed-lane", u, la, KL_SCOPE_THREAD);
  check_scope("call-writes.handed-constant", u, lc, KL_SCOPE_UNIFORM);
  check_scope("call-writes.under-branch", u, ld, KL_SCOPE_THREAD);
  check_scope("call-writes.kept", u, le, KL_SCOPE_UNIFORM);
}

/* The headers' answer for test_external_body: `is_leader` uses a per-lane vote in its body. */
static enum kl_scope ext_scope(void *ctx, const char *name) {
  (void)ctx;
  return !strcmp(name, "is_leader") ? KL_SCOPE_THREAD : KL_SCOPE_UNIFORM;
}

/* A call of a function defined in a header the unit includes, handed nothing that varies: its
 * body decides (a per-lane built-in makes it THREAD, arithmetic keeps its operands' scope), and
 * a barrier after `if (!is_leader()) return;` diverges. Without the headers it is UNIFORM. */
static void test_external_body(void) {
  fresh();
  uint32_t b = F->body, k = cst(b, 7), then;
  uint32_t lead = emit(b, KL_IR_CALL, 0, 0), plain = emit(b, KL_IR_CALL, k, 0);
  F->ins[lead].name = "is_leader";
  F->ins[plain].name = "padded";
  iff(b, emit(b, KL_IR_UNOP, lead, 0), &then, NULL);
  emit(then, KL_IR_RETURN, 0, 0);
  uint32_t bar = barrier(b);
  struct kl_uniformity_ext ext = {ext_scope, &ext};
  struct kl_uniformity *u = kl_uniformity_compute_ext(F, NULL, NULL, &ext);
  check_scope("external-body.lane", u, lead, KL_SCOPE_THREAD);
  check_scope("external-body.plain", u, plain, KL_SCOPE_UNIFORM);
  check("external-body.barrier", kl_uniformity_barrier_divergent(u, bar), "not divergent");
  u = run(NULL);
  check_scope("external-body.unknown", u, lead, KL_SCOPE_UNIFORM);
  check("external-body.unknown-barrier", !kl_uniformity_barrier_divergent(u, bar), "divergent");
}

/* A call the unit does not define, handed a device atomic, compared with a constant: scev sees
 * a uniform symbol (its operands'), this pass a per-thread result; the comparison keeps ours. */
static void test_external_compare(void) {
  fresh();
  uint32_t b = F->body, cnt = arg(b), then;
  static struct kl_var at = {.name = "c", .type = "atomic_uint", .as = KL_AS_DEVICE};
  F->ins[cnt].var = &at;
  uint32_t item = emit(b, KL_IR_CALL, cnt, 0);
  F->ins[item].name = "take_next";
  uint32_t cmp = bin(b, KL_IR_GE, item, cst(b, 4096));
  iff(b, cmp, &then, NULL);
  emit(then, KL_IR_RETURN, 0, 0);
  uint32_t bar = barrier(b);
  struct kl_scev *sc = kl_scev_run(arena, F);
  struct kl_uniformity *u = kl_uniformity_compute_scev(F, NULL, sc);
  check_scope("external-compare.item", u, item, KL_SCOPE_THREAD);
  check_scope("external-compare.cmp", u, cmp, KL_SCOPE_THREAD);
  check("external-compare.barrier", kl_uniformity_barrier_divergent(u, bar), "not divergent");
}

int main(void) {
  arena = kl_arena_new();
  test_thread_branch();
  test_threadgroup_branch();
  test_early_return();
  test_divergent_break();
  test_uniform_loop();
  test_phi_if();
  test_simd_sum();
  test_simd_one_group();
  test_simd_min_tg();
  test_division();
  test_tg_32_1_8();
  test_tg_1_64_1();
  test_temporal();
  test_thread_array();
  test_nested_loops();
  test_simdgroup_branch();
  test_continue();
  test_helper_return();
  test_guarded_loop();
  test_loop_carried();
  test_divergent_trip_store();
  test_do_while();
  test_return_in_loop();
  test_rotation();
  test_helper_in_loop();
  test_simd_min_lanewise();
  test_temporal_header();
  test_unsigned_wrap();
  test_decided_compare();
  test_region();
  test_row_per_threadgroup();
  test_cancelling_bound();
  test_cancelling_division();
  test_own_slot_fill();
  test_last_trip_break();
  test_constructor();
  test_external_reads();
  test_escape();
  test_restated_size();
  test_call_writes();
  test_external_body();
  test_external_compare();
  kl_arena_delete(arena);
  return failures != 0;
}
