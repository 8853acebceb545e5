/* Unit tests for scalar evolution (analyzer/passes/scev.h) on IR programs built by hand: affine
 * forms of coordinates, recurrences in simple, strided and nested loops, addresses and their
 * element offsets, joins, and what stays unknown. */
#include "analyzer/passes/scev.h"

#include <stdlib.h>

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;
static struct kl_scev *S;

static void run(void) {
  S = kl_scev_run(A, P);
  if (getenv("KL_SCEV_DUMP")) kl_scev_dump(S, stdout);
}

/* Whether v's form is c0 + k * (atom of value at), with a constant coefficient. */
static bool is_lin(uint32_t v, uint32_t at, int64_t k, int64_t c0) {
  struct kl_affine f = kl_scev_form(S, v);
  uint16_t id;
  int64_t kk;
  bool sym;
  if (!f.known || f.c0_symbolic || f.c0 != c0 || f.n != 1) return false;
  if (!kl_scev_atom_of(S, at, &id)) return false;
  return kl_affine_coeff(f, id, &kk, &sym) && !sym && kk == k;
}

static void test_coord_form(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t v = p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, lid, p_const(b, 4)), p_const(b, 3));
  uint32_t sh = p_bin(b, KL_IR_SHL, lid, p_const(b, 2));
  uint32_t lid2 = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t ly = p_coord(b, "thread_position_in_threadgroup", 1);
  uint32_t w = p_op(b, KL_IR_CAST, p_bin(b, KL_IR_SUB, lid2, ly), 0, 0);
  run();
  check("scev-lid4+3", is_lin(v, lid, 4, 3), "lid.x*4 + 3 not 3 + 4*lid");
  int64_t k;
  bool sym;
  check("scev-coord-coeff",
        kl_scev_coord_coeff(S, kl_scev_form(S, v), "thread_position_in_threadgroup", 0, &k, &sym) &&
            k == 4 && !sym,
        "lane coefficient of lid.x*4 + 3 not 4");
  check("scev-shl", is_lin(sh, lid, 4, 0), "lid << 2 not 4*lid");
  struct kl_affine fw = kl_scev_form(S, w);
  uint16_t ix, iy;
  kl_scev_atom_of(S, lid, &ix);
  kl_scev_atom_of(S, ly, &iy);
  int64_t kx, ky;
  bool sx, sy;
  check("scev-same-coord-one-atom",
        kl_scev_atom_of(S, lid2, &iy) && iy == ix && kl_scev_atom_of(S, ly, &iy) && iy != ix &&
            kl_affine_coeff(fw, ix, &kx, &sx) && kx == 1 && kl_affine_coeff(fw, iy, &ky, &sy) &&
            ky == -1,
        "lid.x read twice is not one atom, or x - y wrong");
  check("scev-coord-scope", kl_scev_scope(S, v) == KL_SCOPE_THREAD, "lid.x form not per thread");
}

static void test_constants_uniform(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t c =
      p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, p_const(b, 3), p_const(b, 4)), p_const(b, 1));
  uint32_t w = p_coord(b, "threads_per_simdgroup", 0);
  uint32_t n = p_arg(b, false, "int");
  uint32_t d = p_bin(b, KL_IR_DIV, n, p_const(b, 8));
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t r = p_bin(b, KL_IR_REM, lid, p_const(b, 8));
  uint32_t an = p_bin(b, KL_IR_AND, lid, p_const(b, 7));
  run();
  struct kl_affine fc = kl_scev_form(S, c), fw = kl_scev_form(S, w), fd = kl_scev_form(S, d);
  check("scev-fold", fc.known && !fc.c0_symbolic && fc.c0 == 13 && !fc.n, "3*4+1 not 13");
  check("scev-simd-width", fw.known && !fw.c0_symbolic && fw.c0 == 32, "SIMD width not 32");
  check("scev-uniform-div",
        fd.known && fd.c0_symbolic && !fd.n && kl_scev_scope(S, d) == KL_SCOPE_UNIFORM,
        "n / 8 not a uniform symbol");
  check("scev-rem-and-unknown",
        !kl_scev_form(S, r).known && !kl_scev_form(S, an).known &&
            kl_scev_scope(S, r) == KL_SCOPE_THREAD,
        "lid %% 8 or lid & 7 has an affine form");
}

static void test_simple_rec(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), zero = p_const(b, 0), one = p_const(b, 1);
  uint32_t i, body;
  uint32_t l = p_for(b, zero, KL_IR_LT, n, one, &i, &body);
  uint32_t twice = p_bin(body, KL_IR_MUL, i, p_const(body, 2));
  uint32_t after = p_phi(b, KL_IR_PHI_EXIT, l, i, 0);
  run();
  const struct kl_scev_atom *r = kl_scev_rec(S, i);
  check("scev-rec-0-1",
        r && r->loop == l && r->start == zero && r->start_form.known && !r->start_form.c0 &&
            r->step.known && !r->step.c0_symbolic && r->step.c0 == 1 &&
            r->scope == KL_SCOPE_UNIFORM,
        "i not {0, +, 1}");
  check("scev-rec-body", is_lin(twice, i, 2, 0), "i*2 not 2*{i}");
  struct kl_affine fa = kl_scev_form(S, after);
  check("scev-exit-not-atom", fa.known && fa.c0_symbolic && !fa.n,
        "i after a uniform loop not one uniform value");
}

static void test_strided_rec(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int");
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t tg = p_coord(b, "threads_per_threadgroup", 0);
  uint32_t i, body, j, body2;
  p_for(b, lane, KL_IR_LT, n, p_const(b, 32), &i, &body);
  uint32_t l2 = p_for(b, lane, KL_IR_LT, n, tg, &j, &body2);
  uint32_t after = p_phi(b, KL_IR_PHI_EXIT, l2, j, 0);
  run();
  const struct kl_scev_atom *r = kl_scev_rec(S, i);
  int64_t k;
  bool sym;
  check("scev-rec-lane-32",
        r && r->start == lane && r->step.known && r->step.c0 == 32 && !r->step_value &&
            r->scope == KL_SCOPE_THREAD,
        "i not {lane, +, 32}");
  check("scev-rec-lane-stride",
        kl_scev_coord_coeff(S, kl_scev_form(S, i), "thread_index_in_simdgroup", 0, &k, &sym) &&
            k == 1 && !sym,
        "the lane coefficient of {lane, +, 32} not 1");
  const struct kl_scev_atom *r2 = kl_scev_rec(S, j);
  check("scev-rec-symbolic-step", r2 && r2->step_value == tg && r2->step.c0_symbolic,
        "j not {lane, +, threads_per_threadgroup}");
  check("scev-exit-divergent",
        !kl_scev_form(S, after).known && kl_scev_scope(S, after) == KL_SCOPE_THREAD,
        "j after a per-thread loop has a form");
}

static void test_nested(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t m = p_arg(b, false, "int"), K = p_arg(b, false, "int");
  uint32_t zero = p_const(b, 0), one = p_const(b, 1);
  uint32_t i, bi, j, bj;
  uint32_t li = p_for(b, zero, KL_IR_LT, m, one, &i, &bi);
  uint32_t lj = p_for(bi, zero, KL_IR_LT, K, one, &j, &bj);
  uint32_t idx = p_bin(bj, KL_IR_ADD, p_bin(bj, KL_IR_MUL, i, K), j);
  run();
  const struct kl_scev_atom *ri = kl_scev_rec(S, i), *rj = kl_scev_rec(S, j);
  uint16_t ai, aj;
  int64_t k;
  bool sym;
  struct kl_affine f = kl_scev_form(S, idx);
  check("scev-nested-two-recs",
        ri && rj && ri->loop == li && rj->loop == lj && kl_scev_atom_of(S, i, &ai) &&
            kl_scev_atom_of(S, j, &aj) && ai != aj,
        "the nested counters are not two recurrences");
  check("scev-nested-form",
        f.known && f.n == 2 && kl_affine_coeff(f, ai, &k, &sym) && sym &&
            kl_affine_coeff(f, aj, &k, &sym) && !sym && k == 1,
        "i*K + j not K*{i} + {j}");
}

static void test_address(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t a = p_arg(b, true, "float"), stride = p_arg(b, false, "int");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t i, body;
  p_for(b, p_const(b, 0), KL_IR_LT, stride, p_const(b, 1), &i, &body);
  uint32_t idx = p_bin(body, KL_IR_ADD, p_bin(body, KL_IR_MUL, gid, stride), i);
  uint32_t addr = p_index(body, a, idx, 4);
  uint32_t ld = p_op(body, KL_IR_LOAD, addr, 0, 0);
  uint32_t root;
  struct kl_affine off;
  run();
  uint16_t ag, ai;
  int64_t k;
  bool sym;
  kl_scev_atom_of(S, gid, &ag);
  kl_scev_atom_of(S, i, &ai);
  check("scev-address",
        kl_scev_address(S, addr, &root, &off) && root == a && off.known && off.n == 2 &&
            kl_affine_coeff(off, ag, &k, &sym) && sym && kl_affine_coeff(off, ai, &k, &sym) &&
            !sym && k == 1,
        "a[gid*stride + i] not a + stride*gid + {i}");
  check("scev-load-varying", !kl_scev_form(S, ld).known, "a load at a per-thread address known");
  check("scev-value-no-root", !kl_scev_address(S, idx, &root, &off), "an index has a root");
}

static void test_2d_and_uniform_load(void) {
  prog_new(A);
  uint32_t b = P->body;
  static struct kl_var tgv = {.name = "t",
                              .type = "float",
                              .as = KL_AS_THREADGROUP,
                              .array_dims = "[4][33]",
                              .attr_index = -1};
  static struct kl_var pv = {
      .name = "p", .type = "Params", .as = KL_AS_CONSTANT, .is_reference = true, .attr_index = -1};
  uint32_t t = kl_ir_emit(P, b, KL_IR_ALLOC, NULL, 0);
  P->ins[t].var = &tgv;
  uint32_t params = kl_ir_emit(P, b, KL_IR_ARG, NULL, 0);
  P->ins[params].var = &pv;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t row = p_index(b, t, p_const(b, 2), 132);
  uint32_t el = p_index(b, row, lid, 4);
  uint32_t mem = p_op(b, KL_IR_MEMBER, params, 0, 0);
  P->ins[mem].name = "n";
  uint32_t n = p_op(b, KL_IR_LOAD, mem, 0, 0);
  P->ins[n].type = "uint";
  P->ins[n].as = KL_AS_CONSTANT;
  /* params.n read again: the same value; params.m another. */
  uint32_t mem2 = p_op(b, KL_IR_MEMBER, params, 0, 0);
  P->ins[mem2].name = "n";
  uint32_t n2 = p_op(b, KL_IR_LOAD, mem2, 0, 0);
  P->ins[n2].type = "uint";
  P->ins[n2].as = KL_AS_CONSTANT;
  uint32_t mem3 = p_op(b, KL_IR_MEMBER, params, 0, 0);
  P->ins[mem3].name = "m";
  uint32_t m = p_op(b, KL_IR_LOAD, mem3, 0, 0);
  P->ins[m].type = "uint";
  P->ins[m].as = KL_AS_CONSTANT;
  run();
  check("scev-leader",
        kl_scev_leader(S, n2) == n && kl_scev_leader(S, m) == m && kl_scev_leader(S, n) == n,
        "params.n read twice not one value, or params.m taken for it");
  uint32_t root;
  struct kl_affine off;
  check("scev-2d-rows",
        kl_scev_address(S, el, &root, &off) && root == t && off.known && off.c0 == 66 && off.n == 1,
        "t[2][lid] not t + 66 + lid");
  struct kl_affine fn = kl_scev_form(S, n);
  check("scev-uniform-load",
        fn.known && fn.c0_symbolic && !fn.n && (fn.sym & ~KL_AFFINE_SYM_KNOWN) == n,
        "params.n not a uniform symbol tagged with its value");
}

static void test_joins(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t n = p_arg(b, false, "int");
  uint32_t tb, eb;
  /* if (lid < n) x = lid + 1; else x = lid + 1: one form. */
  uint32_t c1 = p_bin(b, KL_IR_LT, lid, n);
  uint32_t if1 = p_if(b, c1, &tb, &eb);
  uint32_t x1 = p_bin(tb, KL_IR_ADD, lid, p_const(tb, 1));
  uint32_t x2 = p_bin(eb, KL_IR_ADD, lid, p_const(eb, 1));
  uint32_t j1 = p_phi(b, KL_IR_PHI_IF, if1, x1, x2);
  /* Differing under a per-thread condition: unknown. */
  uint32_t if2 = p_if(b, c1, &tb, &eb);
  uint32_t y1 = p_bin(tb, KL_IR_ADD, lid, p_const(tb, 1));
  uint32_t y2 = p_bin(eb, KL_IR_ADD, lid, p_const(eb, 2));
  uint32_t j2 = p_phi(b, KL_IR_PHI_IF, if2, y1, y2);
  /* Differing under a uniform condition: lid + a uniform value. */
  uint32_t c3 = p_bin(b, KL_IR_GT, n, p_const(b, 4));
  uint32_t if3 = p_if(b, c3, &tb, &eb);
  uint32_t z1 = p_bin(tb, KL_IR_ADD, lid, p_const(tb, 1));
  uint32_t z2 = p_bin(eb, KL_IR_ADD, lid, p_const(eb, 2));
  uint32_t j3 = p_phi(b, KL_IR_PHI_IF, if3, z1, z2);
  uint32_t sel = p_op(b, KL_IR_SELECT, c1, x1, x2);
  run();
  struct kl_affine f3 = kl_scev_form(S, j3);
  check("scev-phi-equal", is_lin(j1, lid, 1, 1), "equal arms not kept");
  check("scev-phi-divergent", !kl_scev_form(S, j2).known, "differing arms under lid known");
  check("scev-phi-uniform-choice", f3.known && f3.c0_symbolic && f3.n == 1,
        "differing constants under a uniform condition not lid + uniform");
  check("scev-select-equal", is_lin(sel, lid, 1, 1), "select of equal arms not kept");
}

static void test_not_recurrences(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), one = p_const(b, 1);
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t hdr, body, latch;
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t x = p_head(hdr, l, one); /* x = x * 2: uniform, not affine */
  uint32_t y = p_head(hdr, l, lid); /* y = y * 2 from lid: per thread */
  uint32_t i = p_head(hdr, l, p_const(b, 0));
  p_loop_cond(l, p_bin(hdr, KL_IR_LT, i, n));
  uint32_t x2 = p_bin(body, KL_IR_MUL, x, p_const(body, 2));
  uint32_t y2 = p_bin(body, KL_IR_MUL, y, p_const(body, 2));
  /* z steps by x: x varies by iteration, so z is no recurrence. */
  uint32_t z = p_head(hdr, l, p_const(b, 0));
  uint32_t z2 = p_bin(body, KL_IR_ADD, z, x);
  p_back(x, x2);
  p_back(y, y2);
  p_back(z, z2);
  p_back(i, p_bin(latch, KL_IR_ADD, i, one));
  run();
  struct kl_affine fx = kl_scev_form(S, x);
  check("scev-doubling-uniform",
        !kl_scev_rec(S, x) && fx.known && fx.c0_symbolic && !fx.n &&
            kl_scev_scope(S, x) == KL_SCOPE_UNIFORM,
        "x = x * 2 not a uniform value");
  check("scev-doubling-thread", !kl_scev_rec(S, y) && !kl_scev_form(S, y).known,
        "y = y * 2 from lid has a form");
  check("scev-variant-step", !kl_scev_rec(S, z) && kl_scev_rec(S, i),
        "z += x taken for a recurrence, or i lost");
}

static void test_continue(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), one = p_const(b, 1);
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t hdr, body, latch, tb, eb;
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t i = p_head(hdr, l, p_const(b, 0));
  p_loop_cond(l, p_bin(hdr, KL_IR_LT, i, n));
  p_if(body, p_bin(body, KL_IR_EQ, i, lid), &tb, &eb);
  kl_ir_emit(P, tb, KL_IR_CONTINUE, NULL, 0);
  /* The latch joins the body's end and the continue, both i; then i + 1. */
  uint32_t lp = p_phi(latch, KL_IR_PHI_LATCH, l, i, i);
  p_back(i, p_bin(latch, KL_IR_ADD, lp, one));
  run();
  const struct kl_scev_atom *r = kl_scev_rec(S, i);
  check("scev-rec-continue", r && r->step.c0 == 1, "a loop with continue lost its counter");
}

/* Loops 64 deep, each with a counter and a doubling value (which takes a second walk): the
 * rounds must not multiply with the depth, and plain counters stay recurrences. */
static void test_deep(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t n = p_arg(b, false, "int"), one = p_const(b, 1), zero = p_const(b, 0);
  uint32_t i = 0;
  for (int d = 0; d < 64; d++) {
    uint32_t hdr, body, latch;
    uint32_t l = p_loop(b, &hdr, &body, &latch);
    i = p_head(hdr, l, zero);
    uint32_t x = p_head(hdr, l, one);
    p_loop_cond(l, p_bin(hdr, KL_IR_LT, i, n));
    p_back(x, p_bin(latch, KL_IR_MUL, x, p_const(latch, 2)));
    p_back(i, p_bin(latch, KL_IR_ADD, i, one));
    b = body;
  }
  run();
  check("scev-deep-nesting", kl_scev_rec(S, i) != NULL, "the innermost counter lost");
}

int main(void) {
  A = kl_arena_new();
  test_coord_form();
  test_constants_uniform();
  test_simple_rec();
  test_strided_rec();
  test_nested();
  test_address();
  test_2d_and_uniform_load();
  test_joins();
  test_not_recurrences();
  test_continue();
  test_deep();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
