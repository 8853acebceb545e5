/* Unit tests for value numbering (analyzer/passes/valnum.h) on IR programs built by hand: a
 * copy is its value, a computation written twice is one value, operands in either order of a
 * commutative operation, casts looked through; different operands, loads of writable memory and
 * PHIs stay apart; addresses into different buffers at one offset are the same offset. */
#include "analyzer/passes/valnum.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;

static void test_values(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t x = p_coord(b, "thread_position_in_grid", 0);
  uint32_t y = p_coord(b, "thread_position_in_grid", 1);
  uint32_t n = p_arg(b, false, "int");
  /* elem = x * (n * 4) + y, written twice with its own constants, once with operands swapped. */
  uint32_t e1 =
      p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, x, p_bin(b, KL_IR_MUL, n, p_const(b, 4))), y);
  uint32_t e2 =
      p_bin(b, KL_IR_ADD, y, p_bin(b, KL_IR_MUL, p_bin(b, KL_IR_MUL, n, p_const(b, 4)), x));
  uint32_t e3 = p_op(b, KL_IR_CAST, e1, 0, 0);
  uint32_t other =
      p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, x, p_bin(b, KL_IR_MUL, n, p_const(b, 8))), y);
  uint32_t sub1 = p_bin(b, KL_IR_SUB, x, y), sub2 = p_bin(b, KL_IR_SUB, y, x);
  uint32_t x2 = p_coord(b, "thread_position_in_grid", 0);
  struct kl_scev *s = kl_scev_run(A, P);
  check("valnum-same", kl_valnum_equal(P, s, e1, e1), "a value is not itself");
  check("valnum-twice", kl_valnum_equal(P, s, e1, e2), "one computation written twice differs");
  check("valnum-cast", kl_valnum_equal(P, s, e3, e1), "a cast of a value differs from it");
  check("valnum-coord", kl_valnum_equal(P, s, x, x2), "a coordinate read twice differs");
  check("valnum-other", !kl_valnum_equal(P, s, e1, other), "x * 4n + y equal to x * 8n + y");
  check("valnum-sub", !kl_valnum_equal(P, s, sub1, sub2), "x - y equal to y - x");
}

static void test_loads_and_phis(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t x = p_coord(b, "thread_position_in_grid", 0);
  uint32_t l1 = p_op(b, KL_IR_LOAD, p_index(b, buf, x, 4), 0, 0);
  P->ins[l1].as = KL_AS_DEVICE;
  uint32_t l2 = p_op(b, KL_IR_LOAD, p_index(b, buf, x, 4), 0, 0);
  P->ins[l2].as = KL_AS_DEVICE;
  uint32_t then_b, else_b;
  uint32_t cond = p_bin(b, KL_IR_LT, x, p_const(b, 4));
  uint32_t ifv = p_if(b, cond, &then_b, &else_b);
  uint32_t phi1 = p_phi(b, KL_IR_PHI_IF, ifv, p_const(then_b, 1), p_const(else_b, 2));
  uint32_t phi2 = p_phi(b, KL_IR_PHI_IF, ifv, p_const(then_b, 1), p_const(else_b, 2));
  struct kl_scev *s = kl_scev_run(A, P);
  check("valnum-load-writable", !kl_valnum_equal(P, s, l1, l2),
        "two loads of a writable buffer taken as one value");
  check("valnum-phi", !kl_valnum_equal(P, s, phi1, phi2), "two PHIs taken as one value");
}

static void test_offsets(void) {
  prog_new(A);
  uint32_t b = P->body;
  static struct kl_var va = {
      .name = "a", .type = "float", .as = KL_AS_DEVICE, .is_pointer = true, .attr_index = -1};
  static struct kl_var vb = {
      .name = "b", .type = "float", .as = KL_AS_DEVICE, .is_pointer = true, .attr_index = -1};
  uint32_t a = p_arg(b, true, "float*"), c = p_arg(b, true, "float*");
  P->ins[a].var = &va;
  P->ins[c].var = &vb;
  uint32_t x = p_coord(b, "thread_position_in_grid", 0);
  uint32_t n = p_arg(b, false, "int");
  uint32_t row = p_bin(b, KL_IR_MUL, x, n);
  uint32_t j = p_const(b, 3);
  /* a[row + 3], &b[row][3] (pointer moved first), b[row + 3] computed again, b[x * n + 5]. */
  uint32_t pa = p_index(b, a, p_bin(b, KL_IR_ADD, row, j), 4);
  uint32_t pb_moved = p_index(b, p_index(b, c, row, 4), p_const(b, 3), 4);
  uint32_t pb_again =
      p_index(b, c, p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, x, n), p_const(b, 3)), 4);
  uint32_t pb_other = p_index(b, c, p_bin(b, KL_IR_ADD, row, p_const(b, 5)), 4);
  uint32_t pa_half = p_index(b, a, p_bin(b, KL_IR_ADD, row, j), 2);
  struct kl_scev *s = kl_scev_run(A, P);
  check("valnum-offset-two-buffers", kl_valnum_same_offset(P, s, pa, pb_again),
        "a[x*n + 3] and b[x*n + 3] not the same offset");
  check("valnum-offset-other", !kl_valnum_same_offset(P, s, pa, pb_other),
        "a[x*n + 3] and b[x*n + 5] taken as one offset");
  check("valnum-offset-elem-size", !kl_valnum_same_offset(P, s, pa, pa_half),
        "one index into floats and into halves taken as one offset");
  /* Moved pointer against a flat index: only scev can tell, and the runtime n has no tag of a
   * product here; the answer errs towards different, never towards equal. */
  check("valnum-offset-moved-not-wrong", !kl_valnum_same_offset(P, s, pb_moved, pb_other),
        "&b[x*n][3] taken as b[x*n + 5]");
}

int main(void) {
  A = kl_arena_new();
  test_values();
  test_loads_and_phis();
  test_offsets();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
