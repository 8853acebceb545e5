/* Unit tests for trip counts (analyzer/passes/trips.h) and the bindings types.c gives templated
 * helpers: constant bounds, steps, template values, constant locals, function constants bounded
 * by the arrays their counters index, macro argument lists and calls. */
#include <stdio.h>
#include <string.h>

#include "analyzer/core/model.h"
#include "analyzer/input/source.h"
#include "analyzer/passes/trips.h"
#include "analyzer/core/types.h"

#include "tests/unit/kl_test_unit.h"

static int build(struct fixture *fx, const char *text) {
  return kl_test_unit_build(fx, "trips parse", text);
}

static void release(struct fixture *fx) {
  kl_test_unit_release(fx);
}

struct loops {
  TSNode at[16];
  size_t n;
};

static enum kl_walk collect(TSNode n, void *ctx) {
  struct loops *l = ctx;
  if (!strcmp(ts_node_type(n), "for_statement") && l->n < 16) l->at[l->n++] = n;
  return KL_WALK_DESCEND;
}

/* The trip counts of the for loops of function name, in source order, under bindings b. */
static void trips_of(struct fixture *fx, const char *name, const struct kl_bindings *b, long *out,
                     size_t want) {
  const struct kl_function *f = kl_model_function(&fx->model, name);
  struct loops l = {.n = 0};
  if (f) kl_dialect_walk(f->body, collect, &l, NULL);
  for (size_t i = 0; i < want; i++)
    out[i] = i < l.n ? (long)kl_trips_max(fx->a, &fx->model, f, l.at[i], b) : -2;
}

static void test_constant_bounds(void) {
  struct fixture fx;
  if (build(&fx, "#define N 6\n"
                 "constant constexpr int M = 3;\n"
                 "kernel void k(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]]) {\n"
                 "  constexpr short NC = (M * 8) / 4;\n"
                 "  for (int i = 0; i < 4; ++i) x[i] = 0;\n"
                 "  for (int i = 1; i <= N; i++) x[i] = 0;\n"
                 "  for (uint i = 0; i < 32; i += 8) x[i] = 0;\n"
                 "  for (short i = 0; i < NC; ++i) x[i] = 0;\n"
                 "  for (uint i = 0; i < n; ++i) x[i] = 0;\n"
                 "  for (uint i = 0; 16 > i; ++i) x[i] = 0;\n"
                 "}\n"))
    return;
  long t[6];
  trips_of(&fx, "k", NULL, t, 6);
  check_int("trips constant", t[0], 4);
  check_int("trips inclusive from 1, macro bound", t[1], 6);
  check_int("trips step 8", t[2], 4);
  check_int("trips constant local of file constants", t[3], 6);
  check_int("trips runtime bound unknown", t[4], -1);
  check_int("trips bound on the left", t[5], 16);
  release(&fx);
}

static void test_block_scope(void) {
  struct fixture fx;
  if (build(&fx, "constant constexpr int N = 2;\n"
                 "kernel void k(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]]) {\n"
                 "  for (int i = 0; i < N; ++i) x[i] = 0;\n"
                 "  { const int N = 4; for (int i = 0; i < N; ++i) x[i] = 0; }\n"
                 "  { const int N = 64; for (int i = 0; i < N; ++i) x[i] = 0; }\n"
                 "  for (int i = 0; i < N; ++i) x[i] = 0;\n"
                 "  { int N = 3; for (int i = 0; i < N; ++i) x[i] = 0; }\n"
                 "}\n"))
    return;
  long t[5];
  trips_of(&fx, "k", NULL, t, 5);
  check_int("trips file constant before the blocks", t[0], 2);
  check_int("trips first block's constant", t[1], 4);
  check_int("trips second block's constant", t[2], 64);
  check_int("trips file constant after the blocks", t[3], 2);
  check_int("trips a variable local hides the file constant", t[4], -1);
  release(&fx);
}

static void test_template_value(void) {
  struct fixture fx;
  if (build(&fx, "template <typename T, int R>\n"
                 "kernel void k(device T* x [[buffer(0)]]) {\n"
                 "  for (int r = 0; r < R; ++r) x[r] = 0;\n"
                 "}\n"
                 "template [[host_name(\"k4\")]] kernel decltype(k<half, 4>) k<half, 4>;\n"))
    return;
  const struct kl_function *f = kl_model_function(&fx.model, "k");
  struct kl_bindings *sets = NULL;
  size_t n = f ? kl_types_instances(fx.a, &fx.model, f, &sets) : 0;
  check_int("template instances", (long)n, 1);
  long t[1];
  trips_of(&fx, "k", n ? &sets[0] : NULL, t, 1);
  check_int("trips template value", t[0], 4);
  trips_of(&fx, "k", NULL, t, 1);
  check_int("trips template value unbound", t[0], -1);
  release(&fx);
}

static void test_function_constant(void) {
  struct fixture fx;
  if (build(&fx,
            "constant short n_f [[function_constant(0)]];\n"
            "constant short n_g [[function_constant(1)]];\n"
            "struct args_t { uint offs[6]; };\n"
            "#define NF n_f\n"
            "kernel void k(constant args_t& args [[buffer(0)]], device half* x [[buffer(1)]],\n"
            "              device const half* y [[buffer(2)]]) {\n"
            "  device const half* p[8];\n"
            "  for (short j = 0; j < NF; ++j) p[j] = y + j;\n"
            "  half r = 0;\n"
            "  for (short j = 0; j < n_f; ++j) r += p[j][0];\n"
            "  for (short j = 0; j < n_g; ++j) r += y[args.offs[j]];\n"
            "  for (short j = 0; j < n_g; ++j) r += y[j];\n"
            "  x[0] = r;\n"
            "}\n"))
    return;
  long t[4];
  trips_of(&fx, "k", NULL, t, 4);
  check_int("trips function constant through a macro, local array", t[0], 8);
  check_int("trips function constant, local array elsewhere", t[1], 8);
  check_int("trips function constant, struct member array", t[2], 6);
  check_int("trips function constant bounded by another of its loops", t[3], 6);
  release(&fx);
}

static void test_bindings(void) {
  struct fixture fx;
  if (build(&fx, "#define PAIR half, half4\n"
                 "template <typename U, short W> U part(device const U* x) { return x[W]; }\n"
                 "template <typename T, int N> struct Op {\n"
                 "  static T run(device const T* x) { return x[N]; }\n"
                 "  T operator()(device const T* x) const { return x[0]; }\n"
                 "};\n"
                 "template <typename A, typename A4>\n"
                 "kernel void k(device A* x [[buffer(0)]], device A4* y [[buffer(1)]]) {\n"
                 "  using op_t = Op<A, 2>;\n"
                 "  Op<A4, 1> f;\n"
                 "  x[0] = part<A, 8>(x) + op_t::run(x);\n"
                 "  y[0] = f(y);\n"
                 "}\n"
                 "template [[host_name(\"k_h\")]] kernel decltype(k<PAIR>) k<PAIR>;\n"))
    return;
  const struct kl_function *k = kl_model_function(&fx.model, "k");
  struct kl_bindings *sets = NULL;
  size_t n = k ? kl_types_instances(fx.a, &fx.model, k, &sets) : 0;
  check("macro argument list spread",
        n == 1 && sets[0].n == 2 && !strcmp(sets[0].items[1].type, "half4"), "got %zu sets", n);
  const struct kl_function *part = kl_model_function(&fx.model, "part");
  n = part ? kl_types_callers(fx.a, &fx.model, &fx.types, part, &sets) : 0;
  check("helper bound by its call",
        n == 1 && sets[0].n == 2 && !strcmp(sets[0].items[0].type, "half") &&
            !strcmp(sets[0].items[1].type, "8") && sets[0].nnames == 1 &&
            !strcmp(sets[0].names[0], "k_h"),
        "got %zu sets", n);
  const struct kl_function *run = NULL, *op = NULL;
  for (size_t i = 0; i < fx.model.nfunctions; i++) {
    if (!strcmp(fx.model.functions[i].name, "run")) run = &fx.model.functions[i];
    if (!strncmp(fx.model.functions[i].name, "operator", 8)) op = &fx.model.functions[i];
  }
  n = run ? kl_types_callers(fx.a, &fx.model, &fx.types, run, &sets) : 0;
  check("member bound through an alias",
        n == 1 && !strcmp(sets[0].items[0].type, "half") && !strcmp(sets[0].items[1].type, "2"),
        "got %zu sets", n);
  n = op ? kl_types_callers(fx.a, &fx.model, &fx.types, op, &sets) : 0;
  check("functor bound by its local's type", n == 1 && !strcmp(sets[0].items[0].type, "half4"),
        "got %zu sets", n);
  release(&fx);
}

int main(void) {
  test_constant_bounds();
  test_block_scope();
  test_template_value();
  test_function_constant();
  test_bindings();
  return failures ? 1 : 0;
}
