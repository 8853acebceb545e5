/* Unit tests for the device-access table (analyzer/passes/access.h) on IR programs built by
 * hand: lane strides constant, runtime, of one unseen compile-time value and of a product of
 * two; steps per thread position; byte offsets through pointer casts; a pointer moved in a loop
 * by a uniform step; a counter expanded before it is combined; few-lane branches, scalar tails
 * and the quadgroup lane; and accesses at one offset into two buffers. */
#include "analyzer/passes/access.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;

/* The table of the program built (its accesses in *t). */
static size_t collect(struct kl_access_table *t) {
  memset(t, 0, sizeof *t);
  struct kl_scev *s = kl_scev_run(A, P);
  return kl_access_collect(A, P, s, NULL, t);
}

static uint32_t p_load(uint32_t b, uint32_t addr) {
  uint32_t v = p_op(b, KL_IR_LOAD, addr, 0, 0);
  P->ins[v].as = KL_AS_DEVICE;
  P->ins[v].type = "float";
  return v;
}

static uint32_t p_symbol(uint32_t b, const char *name) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_SYMBOL, NULL, 0);
  P->ins[v].name = name;
  P->ins[v].type = "int";
  return v;
}

static uint32_t p_cast(uint32_t b, uint32_t x, const char *type) {
  uint32_t v = p_op(b, KL_IR_CAST, x, 0, 0);
  P->ins[v].type = type;
  return v;
}

/* buf[lid * k] for a k built by make. */
static const struct kl_access *lane_times(struct kl_access_table *t, const char *coord,
                                          uint32_t (*make)(uint32_t)) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t lid = p_coord(b, coord, 0);
  p_load(b, p_index(b, buf, p_bin(b, KL_IR_MUL, lid, make(b)), 4));
  return collect(t) == 1 ? &t->v[0] : NULL;
}

/* buf[gid.x * n + gid.y], n a runtime value: the lanes on rows n long, y walking a row. */
static const struct kl_access *lane_row(struct kl_access_table *t) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t gx = p_coord(b, "thread_position_in_grid", 0);
  uint32_t gy = p_coord(b, "thread_position_in_grid", 1);
  uint32_t n = p_arg(b, false, "int");
  p_load(b, p_index(b, buf, p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, gx, n), gy), 4));
  return collect(t) == 1 ? &t->v[0] : NULL;
}

static uint32_t k4(uint32_t b) { return p_const(b, 4); }
static uint32_t runtime_n(uint32_t b) { return p_arg(b, false, "int"); }
static uint32_t one_ct(uint32_t b) { return p_symbol(b, "N"); }
static uint32_t two_ct(uint32_t b) {
  return p_bin(b, KL_IR_MUL, p_symbol(b, "N"), p_symbol(b, "D"));
}

static void test_lane_strides(void) {
  struct kl_access_table t;
  const struct kl_access *x = lane_times(&t, "thread_position_in_grid", k4);
  check("access-const", x && x->lane_known && !x->lane_symbolic && x->lane_stride == 4 &&
                            x->elem_size == 4 && x->dims_known &&
                            x->dim_stride[KL_ACCESS_DIM_X] == 4 && kl_access_is_strided(x),
        "buf[gid * 4]: lane stride 4 floats expected");
  x = lane_times(&t, "thread_position_in_grid", runtime_n);
  check("access-runtime-element", x && !x->lane_known && !x->lane_symbolic,
        "buf[gid * n]: n scales the whole index (an element stride): no lane stride expected");
  x = lane_row(&t);
  check("access-runtime", x && x->lane_known && x->lane_symbolic && !x->lane_compile_time,
        "buf[gid.x * n + gid.y]: a runtime lane stride (a row length) expected");
  x = lane_times(&t, "thread_position_in_grid", one_ct);
  check("access-one-ct", x && !x->lane_known && (x->dim_unknown & 1),
        "buf[gid * N], N an unseen template value: no lane stride expected");
  x = lane_times(&t, "thread_position_in_grid", two_ct);
  check("access-ct-product", x && x->lane_known && x->lane_symbolic && x->lane_compile_time,
        "buf[gid * N * D]: a product of compile-time sizes expected");
  x = lane_times(&t, "thread_index_in_simdgroup", k4);
  check("access-linear", x && x->lane_stride == 4 && x->dim_stride[KL_ACCESS_DIM_LINEAR] == 4 &&
                             x->dim_stride[KL_ACCESS_DIM_X] == 0,
        "buf[lane * 4]: the linear index's step expected");
}

/* buf[tid.x + 16 * tid.y]: steps 1 along x and 16 along y. */
static void test_dims(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t tx = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t ty = p_coord(b, "thread_position_in_threadgroup", 1);
  p_load(b, p_index(b, buf, p_bin(b, KL_IR_ADD, tx, p_bin(b, KL_IR_MUL, ty, p_const(b, 16))), 4));
  struct kl_access_table t;
  check("access-dims", collect(&t) == 1 && t.v[0].lane_stride == 1 && t.v[0].dims_known &&
                           t.v[0].dim_stride[KL_ACCESS_DIM_X] == 1 &&
                           t.v[0].dim_stride[KL_ACCESS_DIM_Y] == 16,
        "steps 1 in x and 16 in y expected");
}

/* ((device float*)((device char*)buf + gid * 8))[0]: 8 bytes between lanes, 2 floats. */
static void test_bytes(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t c = p_cast(b, buf, "device char *");
  uint32_t at = p_index(b, c, p_bin(b, KL_IR_MUL, gid, p_const(b, 8)), 0);
  uint32_t f = p_cast(b, at, "device float *");
  p_load(b, p_index(b, f, p_const(b, 0), 4));
  struct kl_access_table t;
  /* Collected before the call: the message reads t, and arguments have no order. */
  size_t n = collect(&t);
  check("access-bytes", n == 1 && t.v[0].lane_known && t.v[0].lane_stride == 2 &&
                            t.v[0].elem_size == 4 && !strcmp(t.v[0].elem_type, "float"),
        "a char* step of 8 bytes read as float: 2 elements expected, got %lld",
        t.n ? (long long)t.v[0].lane_stride : -1);
}

/* ((device float4*)(buf + gid * 4))[0] with buf's element not known: gid * 4 counts elements of
 * an unknown size, not float4s, so there is no stride to report. */
static void test_unit_mismatch(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t at = p_index(b, buf, p_bin(b, KL_IR_MUL, gid, p_const(b, 4)), 0);
  P->ins[at].type = "T";
  uint32_t f = p_cast(b, at, "device float4 *");
  p_load(b, p_index(b, f, p_const(b, 0), 16));
  struct kl_access_table t;
  check("access-unit-mismatch", collect(&t) == 1 && !t.v[0].lane_known,
        "a step of T elements read as float4: no lane stride expected");
}

/* p = buf + gid * 8; loop { p[0]; p += 32 }: the pointer keeps the lane stride 8. */
static void test_pointer_loop(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t p0 = p_index(b, buf, p_bin(b, KL_IR_MUL, gid, p_const(b, 8)), 4);
  uint32_t hdr, body, latch;
  uint32_t l = p_loop(b, &hdr, &body, &latch);
  uint32_t p = p_head(hdr, l, p0);
  p_loop_cond(l, p_bin(hdr, KL_IR_LT, p_arg(hdr, false, "int"), p_const(hdr, 9)));
  p_load(body, p_index(body, p, p_const(body, 0), 4));
  p_back(p, p_index(latch, p, p_const(latch, 32), 4));
  struct kl_access_table t;
  check("access-pointer-loop", collect(&t) == 1 && t.v[0].lane_known && t.v[0].lane_stride == 8,
        "a pointer moved by 32 each trip: lane stride 8 expected");
  /* Moved by the lane each trip, it has no stride known. */
  p_back(p, p_index(latch, p, gid, 4));
  size_t n = collect(&t);
  check("access-pointer-varying", n == 0 || (n == 1 && !t.v[0].lane_known),
        "a pointer moved by gid each trip: no lane stride expected");
}

/* for (i = lid; i < n; i += 32) buf[(i - lid) * n + lid]: lanes one element apart. */
static void test_counter_expanded(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t n = p_arg(b, false, "int");
  uint32_t lid = p_coord(b, "thread_position_in_threadgroup", 0);
  uint32_t i, body;
  p_for(b, lid, KL_IR_LT, n, p_const(b, 32), &i, &body);
  uint32_t base = p_bin(body, KL_IR_SUB, i, lid);
  p_load(body, p_index(body, buf, p_bin(body, KL_IR_ADD, p_bin(body, KL_IR_MUL, base, n), lid), 4));
  struct kl_access_table t;
  check("access-counter-expanded",
        collect(&t) == 1 && t.v[0].lane_known && !t.v[0].lane_symbolic && t.v[0].lane_stride == 1,
        "(i - lid) * n + lid with i from lid: lane stride 1 expected");
}

/* if (lane < 4) buf[lane * 64]: few lanes. */
static void test_few(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t th, el;
  p_if(b, p_bin(b, KL_IR_LT, lane, p_const(b, 4)), &th, &el);
  p_load(th, p_index(th, buf, p_bin(th, KL_IR_MUL, lane, p_const(th, 64)), 4));
  struct kl_access_table t;
  check("access-few", collect(&t) == 1 && t.v[0].few == KL_ACCESS_FEW_ALL && !t.v[0].lane_known,
        "a branch of 4 lanes: few expected");
  /* The quadgroup lane alone: 4 addresses per SIMD group. */
  prog_new(A);
  b = P->body;
  buf = p_arg(b, true, "float*");
  uint32_t q = p_coord(b, "thread_index_in_quadgroup", 0);
  p_load(b, p_index(b, buf, p_bin(b, KL_IR_MUL, q, p_const(b, 32)), 4));
  check("access-quad", collect(&t) == 1 && t.v[0].few == KL_ACCESS_FEW_ALL,
        "buf[quad_lid * 32]: few expected");
}

/* x = lane * 8; if (x + 8 <= n) { buf[x] } else { for (i = x; i < n; ++i) buf[i] }: the vector
 * path is strided, the scalar tail is one lane's. */
static void test_tail(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t n = p_arg(b, false, "int");
  uint32_t lane = p_coord(b, "thread_index_in_simdgroup", 0);
  uint32_t x = p_bin(b, KL_IR_MUL, lane, p_const(b, 8));
  uint32_t th, el;
  p_if(b, p_bin(b, KL_IR_LE, p_bin(b, KL_IR_ADD, x, p_const(b, 8)), n), &th, &el);
  p_load(th, p_index(th, buf, x, 4));
  uint32_t i, body;
  p_for(el, x, KL_IR_LT, n, p_const(el, 1), &i, &body);
  p_load(body, p_index(body, buf, i, 4));
  struct kl_access_table t;
  check("access-tail", collect(&t) == 2 && t.v[0].few == 0 && t.v[0].lane_stride == 8 &&
                           t.v[1].few == KL_ACCESS_FEW_ALL,
        "vector path strided, tail few expected");
}

/* if (stride == 1) buf[lid * stride] else buf[lid * stride], stride an unseen template value:
 * unknown where it may be 1 (a chunk), a compile-time stride where the kernel set it apart. */
static void test_not_one(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t buf = p_arg(b, true, "float*");
  uint32_t lid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t th, el;
  p_if(b, p_bin(b, KL_IR_EQ, p_symbol(b, "stride"), p_const(b, 1)), &th, &el);
  p_load(th, p_index(th, buf, p_bin(th, KL_IR_MUL, lid, p_symbol(th, "stride")), 4));
  p_load(el, p_index(el, buf, p_bin(el, KL_IR_MUL, lid, p_symbol(el, "stride")), 4));
  struct kl_access_table t;
  check("access-not-one", collect(&t) == 2 && !t.v[0].lane_known && t.v[1].lane_known &&
                              t.v[1].lane_symbolic && t.v[1].lane_compile_time &&
                              t.v[1].ct_not_one,
        "the else of `stride == 1`: a compile-time stride expected there only");
}

/* a[gid * 4] and c[gid * 4], two buffers at one offset: one index. */
static void test_same_index(void) {
  prog_new(A);
  uint32_t b = P->body;
  uint32_t a = p_arg(b, true, "float*"), c = p_arg(b, true, "float*");
  uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
  p_load(b, p_index(b, a, p_bin(b, KL_IR_MUL, gid, p_const(b, 4)), 4));
  p_load(b, p_index(b, c, p_bin(b, KL_IR_MUL, gid, p_const(b, 4)), 4));
  p_load(b, p_index(b, c, p_bin(b, KL_IR_MUL, gid, p_const(b, 8)), 4));
  struct kl_access_table t;
  check("access-same-index", collect(&t) == 3 && t.v[1].index_rep == 0 && t.v[2].index_rep == 2,
        "a[gid*4], c[gid*4] one index, c[gid*8] another expected");
}

/* buf[gid * n] beside buf[gid * n + off] (n a runtime value, each product computed apart): a
 * thread reading elements next to each other owns a row, so n is a row length -- but not for an
 * offset past 16 elements, nor for the neighbour in another buffer. */
static void test_row_neighbour(void) {
  const struct {
    const char *name;
    int64_t off;
    bool other, pairs, want;
  } cases[] = {{"access-row-neighbour", 1, false, false, true},
               {"access-row-neighbour-behind", -2, false, false, true},
               {"access-row-neighbour-far", 40, false, false, false},
               {"access-row-neighbour-other-buffer", 1, true, false, false},
               /* buf[2 * gid * n + 1]: the other half of a pair, at an element stride */
               {"access-row-neighbour-pair", 1, false, true, false}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    prog_new(A);
    uint32_t b = P->body;
    static struct kl_var second = {.name = "other", .type = "float", .as = KL_AS_DEVICE,
                                   .is_pointer = true, .attr_index = -1};
    uint32_t buf = p_arg(b, true, "float*"), other = p_arg(b, true, "float*");
    P->ins[other].var = &second; /* p_arg gives every buffer one parameter */
    uint32_t gid = p_coord(b, "thread_position_in_grid", 0);
    uint32_t n = p_arg(b, false, "int");
    uint32_t lane = cases[k].pairs ? p_bin(b, KL_IR_MUL, p_const(b, 2), gid) : gid;
    p_load(b, p_index(b, buf, p_bin(b, KL_IR_MUL, lane, n), 4));
    uint32_t next = p_bin(b, KL_IR_ADD, p_bin(b, KL_IR_MUL, lane, n), p_const(b, cases[k].off));
    p_load(b, p_index(b, cases[k].other ? other : buf, next, 4));
    struct kl_access_table t;
    size_t got = collect(&t);
    bool row = got == 2 && t.v[0].lane_known && t.v[0].lane_symbolic && !t.v[0].lane_compile_time;
    check(cases[k].name, row == cases[k].want, "buf[gid * n] beside an offset of %lld: %s expected",
          (long long)cases[k].off, cases[k].want ? "a runtime row stride" : "no lane stride");
  }
}

int main(void) {
  A = kl_arena_new();
  test_lane_strides();
  test_dims();
  test_bytes();
  test_unit_mismatch();
  test_pointer_loop();
  test_counter_expanded();
  test_few();
  test_tail();
  test_same_index();
  test_row_neighbour();
  test_not_one();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
