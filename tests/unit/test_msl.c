/* The MSL catalogue: thread coordinates, built-in types, barrier and SIMD functions, families. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "grammar/msl.h"

#include "tests/unit/kl_test.h"

static void test_coords(void) {
  static const struct {
    const char *name;
    enum kl_scope scope;
  } want[] = {
      {"thread_position_in_grid", KL_SCOPE_THREAD},
      {"thread_position_in_threadgroup", KL_SCOPE_THREAD},
      {"thread_index_in_threadgroup", KL_SCOPE_THREAD},
      {"thread_index_in_simdgroup", KL_SCOPE_THREAD},
      {"thread_index_in_quadgroup", KL_SCOPE_THREAD},
      {"quadgroup_index_in_threadgroup", KL_SCOPE_THREAD},
      {"simdgroup_index_in_threadgroup", KL_SCOPE_SIMDGROUP},
      {"threadgroup_position_in_grid", KL_SCOPE_THREADGROUP},
      {"threads_per_threadgroup", KL_SCOPE_UNIFORM},
      {"threads_per_grid", KL_SCOPE_UNIFORM},
      {"threadgroups_per_grid", KL_SCOPE_UNIFORM},
      {"threads_per_simdgroup", KL_SCOPE_UNIFORM},
      {"thread_execution_width", KL_SCOPE_UNIFORM},
      {"simdgroups_per_threadgroup", KL_SCOPE_UNIFORM},
      {"quadgroups_per_threadgroup", KL_SCOPE_UNIFORM},
      {"dispatch_threads_per_threadgroup", KL_SCOPE_UNIFORM},
      {"dispatch_simdgroups_per_threadgroup", KL_SCOPE_UNIFORM},
      {"dispatch_quadgroups_per_threadgroup", KL_SCOPE_UNIFORM},
      {"grid_origin", KL_SCOPE_UNIFORM},
      {"grid_size", KL_SCOPE_UNIFORM},
  };
  bool ok = true;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const struct kl_msl_coord *c = kl_msl_coord(want[i].name);
    if (!c || c->scope != want[i].scope || strcmp(c->name, want[i].name)) {
      printf("FAIL coord-%s: %s\n", want[i].name, c ? "wrong scope" : "not found");
      ok = false;
      failures++;
    }
  }
  check("coords-scopes", ok, "see above");
  size_t n;
  const struct kl_msl_coord *all = kl_msl_coords(&n);
  bool sorted = n == sizeof want / sizeof want[0];
  for (size_t i = 1; i < n; i++)
    if (strcmp(all[i - 1].name, all[i].name) >= 0) sorted = false;
  check("coords-table-sorted", sorted, "%zu entries", n);
  check("coords-unknown",
        !kl_msl_coord("buffer") && !kl_msl_coord("position") && !kl_msl_coord("") &&
            !kl_msl_coord(NULL),
        "a non-coordinate was found");
}

static void test_types(void) {
  static const struct {
    const char *name, *scalar;
    enum kl_msl_type_kind kind;
    unsigned lanes, size;
    bool half, bf;
  } want[] = {
      {"half", "half", KL_TYPE_SCALAR, 1, 2, true, false},
      {"float", "float", KL_TYPE_SCALAR, 1, 4, false, false},
      {"bfloat", "bfloat", KL_TYPE_SCALAR, 1, 2, false, true},
      {"bfloat16_t", "bfloat", KL_TYPE_SCALAR, 1, 2, false, true},
      {"bool", "bool", KL_TYPE_SCALAR, 1, 1, false, false},
      {"ulong", "ulong", KL_TYPE_SCALAR, 1, 8, false, false},
      {"uint32_t", "uint", KL_TYPE_SCALAR, 1, 4, false, false},
      {"unsigned int", "uint", KL_TYPE_SCALAR, 1, 4, false, false},
      {"half4", "half", KL_TYPE_VECTOR, 4, 8, true, false},
      {"half3", "half", KL_TYPE_VECTOR, 3, 8, true, false},
      {"float3", "float", KL_TYPE_VECTOR, 3, 16, false, false},
      {"packed_float3", "float", KL_TYPE_VECTOR, 3, 12, false, false},
      {"packed_half2", "half", KL_TYPE_VECTOR, 2, 4, true, false},
      {"bfloat4", "bfloat", KL_TYPE_VECTOR, 4, 8, false, true},
      {"uchar4", "uchar", KL_TYPE_VECTOR, 4, 4, false, false},
      {"ushort2", "ushort", KL_TYPE_VECTOR, 2, 4, false, false},
      {"float4x4", "float", KL_TYPE_MATRIX, 16, 64, false, false},
      {"float3x3", "float", KL_TYPE_MATRIX, 9, 48, false, false},
      {"half2x3", "half", KL_TYPE_MATRIX, 6, 16, true, false},
      {"simdgroup_float8x8", "float", KL_TYPE_SIMDGROUP_MATRIX, 64, 256, false, false},
      {"simdgroup_half8x8", "half", KL_TYPE_SIMDGROUP_MATRIX, 64, 128, true, false},
      {"simdgroup_bfloat8x8", "bfloat", KL_TYPE_SIMDGROUP_MATRIX, 64, 128, false, true},
      {"atomic_int", "int", KL_TYPE_ATOMIC, 1, 4, false, false},
      {"atomic_uint", "uint", KL_TYPE_ATOMIC, 1, 4, false, false},
      {"atomic_float", "float", KL_TYPE_ATOMIC, 1, 4, false, false},
      {"metal::half2", "half", KL_TYPE_VECTOR, 2, 4, true, false},
      {"atomic<int>", "int", KL_TYPE_ATOMIC, 1, 4, false, false},
      {"metal::atomic<uint>", "uint", KL_TYPE_ATOMIC, 1, 4, false, false},
      {"simdgroup_matrix<half, 8, 8>", "half", KL_TYPE_SIMDGROUP_MATRIX, 64, 128, true, false},
      {"simdgroup_matrix<bfloat,8,8>", "bfloat", KL_TYPE_SIMDGROUP_MATRIX, 64, 128, false, true},
      {"vec<float, 4>", "float", KL_TYPE_VECTOR, 4, 16, false, false},
      {"vec<half,3>", "half", KL_TYPE_VECTOR, 3, 8, true, false},
      {"matrix<float, 2, 2>", "float", KL_TYPE_MATRIX, 4, 16, false, false},
  };
  bool ok = true;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const struct kl_msl_type *t = kl_msl_type(want[i].name);
    if (!t || strcmp(t->scalar, want[i].scalar) || t->kind != want[i].kind ||
        t->lanes != want[i].lanes || t->size != want[i].size || t->is_half != want[i].half ||
        t->is_bfloat != want[i].bf) {
      printf("FAIL type-%s: %s\n", want[i].name, t ? "wrong properties" : "not found");
      ok = false;
      failures++;
    }
  }
  check("types-properties", ok, "see above");
  /* Every spelled-out vector form is found: the table is sorted for the binary search. */
  static const char *const scalars[] = {"bool", "char", "uchar", "short", "ushort", "int",
                                        "uint", "long", "ulong", "half",  "float",  "bfloat"};
  bool all = true;
  char name[64];
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
    for (int w = 1; w <= 4; w++) {
      for (int packed = 0; packed < 2; packed++) {
        if (packed && (w == 1 || !strcmp(scalars[i], "bool"))) continue;
        if (w == 1)
          snprintf(name, sizeof name, "%s", scalars[i]);
        else
          snprintf(name, sizeof name, "%s%s%d", packed ? "packed_" : "", scalars[i], w);
        const struct kl_msl_type *t = kl_msl_type(name);
        if (!t || strcmp(t->name, name) || t->lanes != (unsigned)w) {
          printf("FAIL type-table-%s: not found\n", name);
          all = false;
          failures++;
        }
      }
    }
  }
  for (int c = 2; c <= 4; c++)
    for (int r = 2; r <= 4; r++)
      for (int h = 0; h < 2; h++) {
        snprintf(name, sizeof name, "%s%dx%d", h ? "half" : "float", c, r);
        if (!kl_msl_type(name)) {
          printf("FAIL type-table-%s: not found\n", name);
          all = false;
          failures++;
        }
      }
  check("types-table-complete", all, "see above");
  check("types-unknown",
        !kl_msl_type("half5") && !kl_msl_type("foo") && !kl_msl_type("float4x5") &&
            !kl_msl_type("vec<foo, 4>") && !kl_msl_type("atomic<") && !kl_msl_type("") &&
            !kl_msl_type("metal::") && !kl_msl_type(NULL) && !kl_msl_type("device"),
        "a non-type was found");
}

static void test_fns(void) {
  const struct kl_msl_fn *f = kl_msl_fn("threadgroup_barrier");
  check("fn-threadgroup-barrier",
        f && f->kind == KL_FN_BARRIER && f->barrier_scope == KL_SCOPE_THREADGROUP, "wrong entry");
  f = kl_msl_fn("metal::simdgroup_barrier");
  check("fn-simdgroup-barrier-prefixed",
        f && f->kind == KL_FN_BARRIER && f->barrier_scope == KL_SCOPE_SIMDGROUP &&
            !strcmp(f->name, "simdgroup_barrier"),
        "wrong entry");
  static const char *const simd_uniform[] = {
      "simd_sum",       "simd_product", "simd_min",       "simd_max",
      "simd_and",       "simd_or",      "simd_xor",       "simd_all",
      "simd_any",       "simd_ballot",  "simd_broadcast", "simd_broadcast_first",
      "metal::simd_sum"};
  bool ok = true;
  for (size_t i = 0; i < sizeof simd_uniform / sizeof simd_uniform[0]; i++) {
    f = kl_msl_fn(simd_uniform[i]);
    if (!f || f->result_scope != KL_SCOPE_SIMDGROUP || f->kind == KL_FN_BARRIER) ok = false;
  }
  check("fn-simd-results-simdgroup", ok, "a reduction is not simdgroup-uniform");
  static const char *const varying[] = {"simd_prefix_inclusive_sum",
                                        "simd_prefix_exclusive_sum",
                                        "simd_prefix_inclusive_product",
                                        "simd_prefix_exclusive_product",
                                        "simd_shuffle",
                                        "simd_shuffle_down",
                                        "simd_shuffle_up",
                                        "simd_shuffle_xor",
                                        "simd_is_first",
                                        "quad_sum",
                                        "quad_shuffle",
                                        "quad_broadcast",
                                        "quad_prefix_exclusive_sum",
                                        "quad_ballot"};
  ok = true;
  for (size_t i = 0; i < sizeof varying / sizeof varying[0]; i++) {
    f = kl_msl_fn(varying[i]);
    if (!f || f->result_scope != KL_SCOPE_THREAD) ok = false;
  }
  check("fn-lane-varying-results", ok, "a scan or shuffle is not thread-varying");
  f = kl_msl_fn("simd_sum");
  const struct kl_msl_fn *g = kl_msl_fn("simd_shuffle_down");
  const struct kl_msl_fn *p = kl_msl_fn("simd_prefix_inclusive_sum");
  check("fn-kinds",
        f && f->kind == KL_FN_SIMD_REDUCE && g && g->kind == KL_FN_SIMD_SHUFFLE && p &&
            p->kind == KL_FN_SIMD_REDUCE,
        "wrong kinds");
  check("fn-unknown",
        !kl_msl_fn("simd_foo") && !kl_msl_fn("sum") && !kl_msl_fn("barrier") && !kl_msl_fn("") &&
            !kl_msl_fn(NULL) && !kl_msl_fn("metal::"),
        "a non-function was found");
}

static void test_families(void) {
  static const struct {
    const char *name;
    unsigned apple;
  } want[] = {{"m1", 7},     {"m2", 8},     {"m3", 9},     {"m4", 10},
              {"apple7", 7}, {"apple8", 8}, {"apple9", 9}, {"apple10", 10}};
  bool ok = true;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const struct kl_msl_family *f = kl_msl_family(want[i].name);
    if (!f || f->apple != want[i].apple || !f->chips || !*f->chips) ok = false;
  }
  check("families", ok, "a target maps to the wrong family");
  const struct kl_msl_family *m1 = kl_msl_family("m1"), *m3 = kl_msl_family("M3");
  check("families-chips",
        m1 && strstr(m1->chips, "M1") && strstr(m1->chips, "A14") && m3 &&
            strstr(m3->chips, "A17 Pro"),
        "chip descriptions");
  size_t n;
  const struct kl_msl_family *all = kl_msl_families(&n);
  check("families-list", n == 8 && !strcmp(all[0].name, "m1"), "%zu families", n);
  check("families-unknown",
        !kl_msl_family("m5") && !kl_msl_family("apple6") && !kl_msl_family("") &&
            !kl_msl_family(NULL),
        "an unknown target was accepted");
}

static void test_scope_names(void) {
  check("scope-names",
        !strcmp(kl_msl_scope_name(KL_SCOPE_UNIFORM), "uniform") &&
            !strcmp(kl_msl_scope_name(KL_SCOPE_THREADGROUP), "threadgroup") &&
            !strcmp(kl_msl_scope_name(KL_SCOPE_SIMDGROUP), "simdgroup") &&
            !strcmp(kl_msl_scope_name(KL_SCOPE_THREAD), "thread"),
        "wrong names");
  check("scope-order",
        KL_SCOPE_UNIFORM < KL_SCOPE_THREADGROUP && KL_SCOPE_THREADGROUP < KL_SCOPE_SIMDGROUP &&
            KL_SCOPE_SIMDGROUP < KL_SCOPE_THREAD,
        "scopes not ordered wide to narrow");
}

static void test_unprefix(void) {
  check_str("unprefix metal::", kl_msl_unprefix("metal::simd_sum"), "simd_sum");
  check_str("unprefix ::metal::", kl_msl_unprefix("::metal::half4"), "half4");
  check_str("unprefix leaves a plain name", kl_msl_unprefix("simd_sum"), "simd_sum");
  check_str("unprefix strips once", kl_msl_unprefix("metal::metal::x"), "metal::x");
  check_str("unprefix leaves other scopes", kl_msl_unprefix("precise::fma"), "precise::fma");
}

/* The bytes a pointer type as written points to. */
static void test_pointee_size(void) {
  check("pointee-float4", kl_msl_pointee_size("threadgroup float4 *") == 16, "float4*");
  check("pointee-half", kl_msl_pointee_size("half*") == 2, "half*");
  check("pointee-none", !kl_msl_pointee_size("float4") && !kl_msl_pointee_size(NULL) &&
                            !kl_msl_pointee_size("MyStruct *"),
        "not a pointer, or a type not built in");
}

int main(void) {
  test_unprefix();
  test_pointee_size();
  test_coords();
  test_types();
  test_fns();
  test_families();
  test_scope_names();
  return failures ? 1 : 0;
}
