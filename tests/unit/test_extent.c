/* Unit tests for what threadgroup array extents say of the threadgroup's size
 * (analyzer/passes/extent.h), on IR programs built by hand: stores at tid, tid + 32 and tid + 64
 * of 96 elements allow 32 threads; 2 * tid + 1 of 64 allows 32; an access only some threads make
 * (under an IF, or after a return that some may take) bounds nothing, nor one of a local array,
 * an index of another coordinate, or an array whose length is not known. */
#include "analyzer/passes/extent.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;
static struct kl_var tg_arr = {.name = "cache", .type = "float", .as = KL_AS_THREADGROUP,
                               .array_dims = "[96]", .attr_index = -1};
static struct kl_var tg_2d = {.name = "tile", .type = "float", .as = KL_AS_THREADGROUP,
                              .array_dims = "[96][2]", .attr_index = -1};

/* A threadgroup array of len elements (0: not folded) declared by var. */
static uint32_t p_tgarray(uint32_t b, const struct kl_var *var, int64_t len) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_ALLOC, NULL, 0);
  P->ins[v].var = var;
  P->ins[v].as = KL_AS_THREADGROUP;
  P->ins[v].type = "float";
  P->ins[v].imm = len;
  return v;
}

/* A store of 0 into base[idx], in the address space of base. */
static uint32_t p_tgstore(uint32_t b, uint32_t base, uint32_t idx) {
  uint32_t at = p_index(b, base, idx, 4);
  P->ins[at].as = KL_AS_THREADGROUP;
  uint32_t v = p_op(b, KL_IR_STORE, at, p_const(b, 0), 0);
  P->ins[v].as = KL_AS_THREADGROUP;
  return v;
}

static int64_t extent_of(void) {
  return kl_extent_max_threads(P, kl_scev_run(A, P));
}

/* A fresh program whose top block holds coordinate `coord` (in *tid) and a threadgroup array of
 * var, len elements (in *arr); returns the top block. */
static uint32_t prog_with(const char *coord, const struct kl_var *var, int64_t len, uint32_t *tid,
                          uint32_t *arr) {
  prog_new(A);
  uint32_t b = P->body;
  *tid = p_coord(b, coord, 0);
  *arr = p_tgarray(b, var, len);
  return b;
}

static void test_slots(void) {
  uint32_t b, tid, arr;
  b = prog_with("thread_index_in_threadgroup", &tg_arr, 96, &tid, &arr);
  p_tgstore(b, arr, tid);
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, tid, p_const(b, 32)));
  check("extent-slots", extent_of() == 64, "tid + 32 of 96 allows 64 threads, got %lld",
        (long long)extent_of());
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, tid, p_const(b, 64)));
  check("extent-three-slots", extent_of() == 32, "tid + 64 of 96 allows 32 threads, got %lld",
        (long long)extent_of());

  b = prog_with("thread_index_in_threadgroup", &tg_arr, 64, &tid, &arr);
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, tid, p_const(b, 2)), p_const(b, 1)));
  check("extent-scaled", extent_of() == 32, "2 * tid + 1 of 64 allows 32 threads, got %lld",
        (long long)extent_of());
}

static void test_not_every_thread(void) {
  uint32_t b, tid, arr, t, e;
  /* Under an IF: only the threads that take it. */
  b = prog_with("thread_index_in_threadgroup", &tg_arr, 96, &tid, &arr);
  p_if(b, p_ubin(b, KL_IR_LT, tid, p_const(b, 8)), &t, &e);
  p_tgstore(t, arr, p_bin(t, KL_IR_ADD, tid, p_const(t, 64)));
  check("extent-under-if", extent_of() == 0, "a store under an IF bounds every thread");

  /* After an IF that returns for some threads. */
  b = prog_with("thread_index_in_threadgroup", &tg_arr, 96, &tid, &arr);
  p_if(b, p_ubin(b, KL_IR_GE, tid, p_const(b, 32)), &t, &e);
  p_op(t, KL_IR_RETURN, 0, 0, 0);
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, tid, p_const(b, 64)));
  check("extent-after-return", extent_of() == 0, "a store after a return bounds every thread");

  /* An IF with no return before it does not stop the walk. */
  b = prog_with("thread_index_in_threadgroup", &tg_arr, 96, &tid, &arr);
  p_if(b, p_ubin(b, KL_IR_GE, tid, p_const(b, 32)), &t, &e);
  p_tgstore(t, arr, tid);
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, tid, p_const(b, 64)));
  check("extent-after-if", extent_of() == 32, "an IF with no return stopped the walk");
}

static void test_unknown(void) {
  uint32_t b, tid, arr;
  /* The length not folded. */
  b = prog_with("thread_index_in_threadgroup", &tg_arr, 0, &tid, &arr);
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, tid, p_const(b, 64)));
  check("extent-no-length", extent_of() == 0, "an array of unknown length bounds the threads");
  /* Another coordinate: the x position says nothing of the count. */
  b = prog_with("thread_position_in_threadgroup", &tg_arr, 96, &tid, &arr);
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, tid, p_const(b, 64)));
  check("extent-other-coord", extent_of() == 0, "an x position bounds the thread count");
  /* Two dimensions: the offset is not in the first dimension's elements. */
  b = prog_with("thread_index_in_threadgroup", &tg_2d, 96, &tid, &arr);
  p_tgstore(b, arr, p_bin(b, KL_IR_ADD, tid, p_const(b, 64)));
  check("extent-two-dims", extent_of() == 0, "a two-dimensional array's length read as one");
}

int main(void) {
  A = kl_arena_new();
  test_slots();
  test_not_every_thread();
  test_unknown();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
