/* The MSL catalogue: thread coordinates, built-in types, barrier and SIMD functions, and GPU
 * families. Every table is sorted by name (tests/unit/test_msl.c checks it) so the per-identifier
 * lookups are binary searches. */
#include "grammar/msl.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define KL_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Positions and indices vary per thread; counts and sizes are the same for the whole dispatch.
 * A quadgroup is narrower than a SIMD group, so its index is thread-varying at our granularity. */
static const struct kl_msl_coord kl_coords[] = {
    {"dispatch_quadgroups_per_threadgroup", KL_SCOPE_UNIFORM},
    {"dispatch_simdgroups_per_threadgroup", KL_SCOPE_UNIFORM},
    {"dispatch_threads_per_threadgroup", KL_SCOPE_UNIFORM},
    {"grid_origin", KL_SCOPE_UNIFORM},
    {"grid_size", KL_SCOPE_UNIFORM},
    {"quadgroup_index_in_threadgroup", KL_SCOPE_THREAD},
    {"quadgroups_per_threadgroup", KL_SCOPE_UNIFORM},
    {"simdgroup_index_in_threadgroup", KL_SCOPE_SIMDGROUP},
    {"simdgroups_per_threadgroup", KL_SCOPE_UNIFORM},
    {"thread_execution_width", KL_SCOPE_UNIFORM},
    {"thread_index_in_quadgroup", KL_SCOPE_THREAD},
    {"thread_index_in_simdgroup", KL_SCOPE_THREAD},
    {"thread_index_in_threadgroup", KL_SCOPE_THREAD},
    {"thread_position_in_grid", KL_SCOPE_THREAD},
    {"thread_position_in_threadgroup", KL_SCOPE_THREAD},
    {"threadgroup_position_in_grid", KL_SCOPE_THREADGROUP},
    {"threadgroups_per_grid", KL_SCOPE_UNIFORM},
    {"threads_per_grid", KL_SCOPE_UNIFORM},
    {"threads_per_simdgroup", KL_SCOPE_UNIFORM},
    {"threads_per_threadgroup", KL_SCOPE_UNIFORM},
};

/* A 3-vector occupies 4 lanes; packed_ vectors do not. Matrices are columns of vectors. */
static const struct kl_msl_type kl_types[] = {
    {"atomic_bool", "bool", KL_TYPE_ATOMIC, 1, 1, false, false},
    {"atomic_float", "float", KL_TYPE_ATOMIC, 1, 4, false, false},
    {"atomic_int", "int", KL_TYPE_ATOMIC, 1, 4, false, false},
    {"atomic_uint", "uint", KL_TYPE_ATOMIC, 1, 4, false, false},
    {"atomic_ulong", "ulong", KL_TYPE_ATOMIC, 1, 8, false, false},
    {"bfloat", "bfloat", KL_TYPE_SCALAR, 1, 2, false, true},
    {"bfloat16_t", "bfloat", KL_TYPE_SCALAR, 1, 2, false, true},
    {"bfloat2", "bfloat", KL_TYPE_VECTOR, 2, 4, false, true},
    {"bfloat3", "bfloat", KL_TYPE_VECTOR, 3, 8, false, true},
    {"bfloat4", "bfloat", KL_TYPE_VECTOR, 4, 8, false, true},
    {"bool", "bool", KL_TYPE_SCALAR, 1, 1, false, false},
    {"bool2", "bool", KL_TYPE_VECTOR, 2, 2, false, false},
    {"bool3", "bool", KL_TYPE_VECTOR, 3, 4, false, false},
    {"bool4", "bool", KL_TYPE_VECTOR, 4, 4, false, false},
    {"char", "char", KL_TYPE_SCALAR, 1, 1, false, false},
    {"char2", "char", KL_TYPE_VECTOR, 2, 2, false, false},
    {"char3", "char", KL_TYPE_VECTOR, 3, 4, false, false},
    {"char4", "char", KL_TYPE_VECTOR, 4, 4, false, false},
    {"float", "float", KL_TYPE_SCALAR, 1, 4, false, false},
    {"float16_t", "half", KL_TYPE_SCALAR, 1, 2, true, false},
    {"float2", "float", KL_TYPE_VECTOR, 2, 8, false, false},
    {"float2x2", "float", KL_TYPE_MATRIX, 4, 16, false, false},
    {"float2x3", "float", KL_TYPE_MATRIX, 6, 32, false, false},
    {"float2x4", "float", KL_TYPE_MATRIX, 8, 32, false, false},
    {"float3", "float", KL_TYPE_VECTOR, 3, 16, false, false},
    {"float32_t", "float", KL_TYPE_SCALAR, 1, 4, false, false},
    {"float3x2", "float", KL_TYPE_MATRIX, 6, 24, false, false},
    {"float3x3", "float", KL_TYPE_MATRIX, 9, 48, false, false},
    {"float3x4", "float", KL_TYPE_MATRIX, 12, 48, false, false},
    {"float4", "float", KL_TYPE_VECTOR, 4, 16, false, false},
    {"float4x2", "float", KL_TYPE_MATRIX, 8, 32, false, false},
    {"float4x3", "float", KL_TYPE_MATRIX, 12, 64, false, false},
    {"float4x4", "float", KL_TYPE_MATRIX, 16, 64, false, false},
    {"half", "half", KL_TYPE_SCALAR, 1, 2, true, false},
    {"half2", "half", KL_TYPE_VECTOR, 2, 4, true, false},
    {"half2x2", "half", KL_TYPE_MATRIX, 4, 8, true, false},
    {"half2x3", "half", KL_TYPE_MATRIX, 6, 16, true, false},
    {"half2x4", "half", KL_TYPE_MATRIX, 8, 16, true, false},
    {"half3", "half", KL_TYPE_VECTOR, 3, 8, true, false},
    {"half3x2", "half", KL_TYPE_MATRIX, 6, 12, true, false},
    {"half3x3", "half", KL_TYPE_MATRIX, 9, 24, true, false},
    {"half3x4", "half", KL_TYPE_MATRIX, 12, 24, true, false},
    {"half4", "half", KL_TYPE_VECTOR, 4, 8, true, false},
    {"half4x2", "half", KL_TYPE_MATRIX, 8, 16, true, false},
    {"half4x3", "half", KL_TYPE_MATRIX, 12, 32, true, false},
    {"half4x4", "half", KL_TYPE_MATRIX, 16, 32, true, false},
    {"int", "int", KL_TYPE_SCALAR, 1, 4, false, false},
    {"int16_t", "short", KL_TYPE_SCALAR, 1, 2, false, false},
    {"int2", "int", KL_TYPE_VECTOR, 2, 8, false, false},
    {"int3", "int", KL_TYPE_VECTOR, 3, 16, false, false},
    {"int32_t", "int", KL_TYPE_SCALAR, 1, 4, false, false},
    {"int4", "int", KL_TYPE_VECTOR, 4, 16, false, false},
    {"int64_t", "long", KL_TYPE_SCALAR, 1, 8, false, false},
    {"int8_t", "char", KL_TYPE_SCALAR, 1, 1, false, false},
    {"long", "long", KL_TYPE_SCALAR, 1, 8, false, false},
    {"long long", "long", KL_TYPE_SCALAR, 1, 8, false, false},
    {"long2", "long", KL_TYPE_VECTOR, 2, 16, false, false},
    {"long3", "long", KL_TYPE_VECTOR, 3, 32, false, false},
    {"long4", "long", KL_TYPE_VECTOR, 4, 32, false, false},
    {"packed_bfloat2", "bfloat", KL_TYPE_VECTOR, 2, 4, false, true},
    {"packed_bfloat3", "bfloat", KL_TYPE_VECTOR, 3, 6, false, true},
    {"packed_bfloat4", "bfloat", KL_TYPE_VECTOR, 4, 8, false, true},
    {"packed_char2", "char", KL_TYPE_VECTOR, 2, 2, false, false},
    {"packed_char3", "char", KL_TYPE_VECTOR, 3, 3, false, false},
    {"packed_char4", "char", KL_TYPE_VECTOR, 4, 4, false, false},
    {"packed_float2", "float", KL_TYPE_VECTOR, 2, 8, false, false},
    {"packed_float3", "float", KL_TYPE_VECTOR, 3, 12, false, false},
    {"packed_float4", "float", KL_TYPE_VECTOR, 4, 16, false, false},
    {"packed_half2", "half", KL_TYPE_VECTOR, 2, 4, true, false},
    {"packed_half3", "half", KL_TYPE_VECTOR, 3, 6, true, false},
    {"packed_half4", "half", KL_TYPE_VECTOR, 4, 8, true, false},
    {"packed_int2", "int", KL_TYPE_VECTOR, 2, 8, false, false},
    {"packed_int3", "int", KL_TYPE_VECTOR, 3, 12, false, false},
    {"packed_int4", "int", KL_TYPE_VECTOR, 4, 16, false, false},
    {"packed_long2", "long", KL_TYPE_VECTOR, 2, 16, false, false},
    {"packed_long3", "long", KL_TYPE_VECTOR, 3, 24, false, false},
    {"packed_long4", "long", KL_TYPE_VECTOR, 4, 32, false, false},
    {"packed_short2", "short", KL_TYPE_VECTOR, 2, 4, false, false},
    {"packed_short3", "short", KL_TYPE_VECTOR, 3, 6, false, false},
    {"packed_short4", "short", KL_TYPE_VECTOR, 4, 8, false, false},
    {"packed_uchar2", "uchar", KL_TYPE_VECTOR, 2, 2, false, false},
    {"packed_uchar3", "uchar", KL_TYPE_VECTOR, 3, 3, false, false},
    {"packed_uchar4", "uchar", KL_TYPE_VECTOR, 4, 4, false, false},
    {"packed_uint2", "uint", KL_TYPE_VECTOR, 2, 8, false, false},
    {"packed_uint3", "uint", KL_TYPE_VECTOR, 3, 12, false, false},
    {"packed_uint4", "uint", KL_TYPE_VECTOR, 4, 16, false, false},
    {"packed_ulong2", "ulong", KL_TYPE_VECTOR, 2, 16, false, false},
    {"packed_ulong3", "ulong", KL_TYPE_VECTOR, 3, 24, false, false},
    {"packed_ulong4", "ulong", KL_TYPE_VECTOR, 4, 32, false, false},
    {"packed_ushort2", "ushort", KL_TYPE_VECTOR, 2, 4, false, false},
    {"packed_ushort3", "ushort", KL_TYPE_VECTOR, 3, 6, false, false},
    {"packed_ushort4", "ushort", KL_TYPE_VECTOR, 4, 8, false, false},
    {"ptrdiff_t", "long", KL_TYPE_SCALAR, 1, 8, false, false},
    {"short", "short", KL_TYPE_SCALAR, 1, 2, false, false},
    {"short2", "short", KL_TYPE_VECTOR, 2, 4, false, false},
    {"short3", "short", KL_TYPE_VECTOR, 3, 8, false, false},
    {"short4", "short", KL_TYPE_VECTOR, 4, 8, false, false},
    {"signed char", "char", KL_TYPE_SCALAR, 1, 1, false, false},
    {"simdgroup_bfloat8x8", "bfloat", KL_TYPE_SIMDGROUP_MATRIX, 64, 128, false, true},
    {"simdgroup_float8x8", "float", KL_TYPE_SIMDGROUP_MATRIX, 64, 256, false, false},
    {"simdgroup_half8x8", "half", KL_TYPE_SIMDGROUP_MATRIX, 64, 128, true, false},
    {"size_t", "ulong", KL_TYPE_SCALAR, 1, 8, false, false},
    {"uchar", "uchar", KL_TYPE_SCALAR, 1, 1, false, false},
    {"uchar2", "uchar", KL_TYPE_VECTOR, 2, 2, false, false},
    {"uchar3", "uchar", KL_TYPE_VECTOR, 3, 4, false, false},
    {"uchar4", "uchar", KL_TYPE_VECTOR, 4, 4, false, false},
    {"uint", "uint", KL_TYPE_SCALAR, 1, 4, false, false},
    {"uint16_t", "ushort", KL_TYPE_SCALAR, 1, 2, false, false},
    {"uint2", "uint", KL_TYPE_VECTOR, 2, 8, false, false},
    {"uint3", "uint", KL_TYPE_VECTOR, 3, 16, false, false},
    {"uint32_t", "uint", KL_TYPE_SCALAR, 1, 4, false, false},
    {"uint4", "uint", KL_TYPE_VECTOR, 4, 16, false, false},
    {"uint64_t", "ulong", KL_TYPE_SCALAR, 1, 8, false, false},
    {"uint8_t", "uchar", KL_TYPE_SCALAR, 1, 1, false, false},
    {"ulong", "ulong", KL_TYPE_SCALAR, 1, 8, false, false},
    {"ulong2", "ulong", KL_TYPE_VECTOR, 2, 16, false, false},
    {"ulong3", "ulong", KL_TYPE_VECTOR, 3, 32, false, false},
    {"ulong4", "ulong", KL_TYPE_VECTOR, 4, 32, false, false},
    {"unsigned", "uint", KL_TYPE_SCALAR, 1, 4, false, false},
    {"unsigned char", "uchar", KL_TYPE_SCALAR, 1, 1, false, false},
    {"unsigned int", "uint", KL_TYPE_SCALAR, 1, 4, false, false},
    {"unsigned long", "ulong", KL_TYPE_SCALAR, 1, 8, false, false},
    {"unsigned long long", "ulong", KL_TYPE_SCALAR, 1, 8, false, false},
    {"unsigned short", "ushort", KL_TYPE_SCALAR, 1, 2, false, false},
    {"ushort", "ushort", KL_TYPE_SCALAR, 1, 2, false, false},
    {"ushort2", "ushort", KL_TYPE_VECTOR, 2, 4, false, false},
    {"ushort3", "ushort", KL_TYPE_VECTOR, 3, 8, false, false},
    {"ushort4", "ushort", KL_TYPE_VECTOR, 4, 8, false, false},
};

#define KL_FN(name, kind, barrier, result)                                                         \
  { name, KL_FN_##kind, KL_SCOPE_##barrier, KL_SCOPE_##result }
/* Reductions, broadcasts, ballots and votes give every lane of a SIMD group the same value;
 * scans, shuffles and quad operations give lanes different values. */
static const struct kl_msl_fn kl_fns[] = {
    KL_FN("quad_active_threads_mask", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("quad_all", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("quad_and", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_any", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("quad_ballot", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("quad_broadcast", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_broadcast_first", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_is_first", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("quad_is_helper_thread", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("quad_max", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_min", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_or", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_prefix_exclusive_product", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_prefix_exclusive_sum", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_prefix_inclusive_product", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_prefix_inclusive_sum", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_product", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_shuffle", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_shuffle_and_fill_down", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_shuffle_and_fill_up", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_shuffle_down", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_shuffle_rotate_down", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_shuffle_rotate_up", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_shuffle_up", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_shuffle_xor", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("quad_sum", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("quad_xor", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("simd_active_threads_mask", SIMD_OTHER, UNIFORM, SIMDGROUP),
    KL_FN("simd_all", SIMD_OTHER, UNIFORM, SIMDGROUP),
    KL_FN("simd_and", SIMD_REDUCE, UNIFORM, SIMDGROUP),
    KL_FN("simd_any", SIMD_OTHER, UNIFORM, SIMDGROUP),
    KL_FN("simd_ballot", SIMD_OTHER, UNIFORM, SIMDGROUP),
    KL_FN("simd_broadcast", SIMD_SHUFFLE, UNIFORM, SIMDGROUP),
    KL_FN("simd_broadcast_first", SIMD_SHUFFLE, UNIFORM, SIMDGROUP),
    KL_FN("simd_is_first", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("simd_is_helper_thread", SIMD_OTHER, UNIFORM, THREAD),
    KL_FN("simd_max", SIMD_REDUCE, UNIFORM, SIMDGROUP),
    KL_FN("simd_min", SIMD_REDUCE, UNIFORM, SIMDGROUP),
    KL_FN("simd_or", SIMD_REDUCE, UNIFORM, SIMDGROUP),
    KL_FN("simd_prefix_exclusive_product", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("simd_prefix_exclusive_sum", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("simd_prefix_inclusive_product", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("simd_prefix_inclusive_sum", SIMD_REDUCE, UNIFORM, THREAD),
    KL_FN("simd_product", SIMD_REDUCE, UNIFORM, SIMDGROUP),
    KL_FN("simd_shuffle", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_shuffle_and_fill_down", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_shuffle_and_fill_up", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_shuffle_down", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_shuffle_rotate_down", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_shuffle_rotate_up", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_shuffle_up", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_shuffle_xor", SIMD_SHUFFLE, UNIFORM, THREAD),
    KL_FN("simd_sum", SIMD_REDUCE, UNIFORM, SIMDGROUP),
    KL_FN("simd_xor", SIMD_REDUCE, UNIFORM, SIMDGROUP),
    KL_FN("simdgroup_barrier", BARRIER, SIMDGROUP, UNIFORM),
    KL_FN("threadgroup_barrier", BARRIER, THREADGROUP, UNIFORM),
};
#undef KL_FN

/* Listing order: marketing names first, then the families they stand for. */
static const struct kl_msl_family kl_families[] = {
    {"m1", 7, "Apple GPU family 7: M1, A14"},
    {"m2", 8, "Apple GPU family 8: M2, A15, A16"},
    {"m3", 9, "Apple GPU family 9: M3, A17 Pro"},
    {"m4", 10, "Apple GPU family 10: M4, A18"},
    {"apple7", 7, "Apple GPU family 7: M1, A14"},
    {"apple8", 8, "Apple GPU family 8: M2, A15, A16"},
    {"apple9", 9, "Apple GPU family 9: M3, A17 Pro"},
    {"apple10", 10, "Apple GPU family 10: M4, A18"},
};

/* bsearch over a name-sorted table whose entries start with a `const char *name`. */
static const void *kl_msl_find(const char *name, const void *table, size_t n, size_t size) {
  const char *base = table;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *key = *(const char *const *)(const void *)(base + mid * size);
    int c = strcmp(name, key);
    if (!c) return base + mid * size;
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return NULL;
}

const char *kl_msl_unprefix(const char *name) {
  if (!strncmp(name, "metal::", 7)) return name + 7;
  if (!strncmp(name, "::metal::", 9)) return name + 9;
  return name;
}

const struct kl_msl_coord *kl_msl_coord(const char *name) {
  if (!name) return NULL;
  return kl_msl_find(name, kl_coords, KL_COUNT(kl_coords), sizeof kl_coords[0]);
}

const struct kl_msl_coord *kl_msl_coords(size_t *n) {
  *n = KL_COUNT(kl_coords);
  return kl_coords;
}

static const struct kl_msl_type *kl_msl_type_plain(const char *name) {
  return kl_msl_find(name, kl_types, KL_COUNT(kl_types), sizeof kl_types[0]);
}

/* Template spellings (`vec<float, 4>`, `atomic<uint>`, `simdgroup_matrix<half, 8, 8>`,
 * `matrix<float, 4, 4>`) name the same types as their short forms. */
static const struct kl_msl_type *kl_msl_type_template(const char *name) {
  char buf[96], arg[3][32];
  size_t o = 0;
  for (const char *p = name; *p; p++) {
    if (*p == ' ' || *p == '\t') continue;
    if (o + 1 >= sizeof buf) return NULL;
    buf[o++] = *p;
  }
  buf[o] = '\0';
  char *lt = strchr(buf, '<');
  if (!lt || buf[o - 1] != '>') return NULL;
  *lt = '\0';
  buf[o - 1] = '\0';
  size_t nargs = 0;
  for (char *a = lt + 1; nargs < 3;) {
    char *comma = strchr(a, ',');
    size_t n = comma ? (size_t)(comma - a) : strlen(a);
    if (n == 0 || n >= sizeof arg[0]) return NULL;
    memcpy(arg[nargs], a, n);
    arg[nargs++][n] = '\0';
    if (!comma) break;
    a = comma + 1;
  }
  const struct kl_msl_type *elem = kl_msl_type_plain(kl_msl_unprefix(arg[0]));
  if (!elem || elem->kind != KL_TYPE_SCALAR) return NULL;
  const char *t = kl_msl_unprefix(buf);
  char canon[sizeof arg + 32];
  if (!strcmp(t, "atomic") && nargs == 1) {
    snprintf(canon, sizeof canon, "atomic_%s", elem->scalar);
  } else if ((!strcmp(t, "vec") || !strcmp(t, "packed_vec")) && nargs == 2) {
    snprintf(canon, sizeof canon, "%s%s%s", t[0] == 'p' ? "packed_" : "", elem->scalar, arg[1]);
  } else if (!strcmp(t, "simdgroup_matrix") && nargs == 3) {
    snprintf(canon, sizeof canon, "simdgroup_%s%sx%s", elem->scalar, arg[1], arg[2]);
  } else if (!strcmp(t, "matrix") && nargs == 3) {
    snprintf(canon, sizeof canon, "%s%sx%s", elem->scalar, arg[1], arg[2]);
  } else {
    return NULL;
  }
  return kl_msl_type_plain(canon);
}

const struct kl_msl_type *kl_msl_type(const char *name) {
  if (!name) return NULL;
  name = kl_msl_unprefix(name);
  const struct kl_msl_type *t = kl_msl_type_plain(name);
  if (t || !strchr(name, '<')) return t;
  return kl_msl_type_template(name);
}

unsigned kl_msl_pointee_size(const char *type) {
  char b[64];
  size_t n = type ? strcspn(type, "*") : 0;
  while (n && type[n - 1] == ' ') n--;
  if (!n || n >= sizeof b || !strchr(type, '*')) return 0;
  memcpy(b, type, n);
  b[n] = '\0';
  const char *p = strrchr(b, ' ');
  const struct kl_msl_type *mt = kl_msl_type(p ? p + 1 : b);
  return mt ? mt->size : 0;
}

const struct kl_msl_fn *kl_msl_fn(const char *name) {
  if (!name) return NULL;
  name = kl_msl_unprefix(name);
  /* Every entry starts with q, s or t: most identifiers leave here. */
  if (name[0] != 'q' && name[0] != 's' && name[0] != 't') return NULL;
  return kl_msl_find(name, kl_fns, KL_COUNT(kl_fns), sizeof kl_fns[0]);
}

const struct kl_msl_family *kl_msl_family(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < KL_COUNT(kl_families); i++)
    if (!strcasecmp(name, kl_families[i].name)) return &kl_families[i];
  return NULL;
}

const struct kl_msl_family *kl_msl_families(size_t *n) {
  *n = KL_COUNT(kl_families);
  return kl_families;
}

const char *kl_msl_scope_name(enum kl_scope s) {
  switch (s) {
  case KL_SCOPE_UNIFORM:
    return "uniform";
  case KL_SCOPE_THREADGROUP:
    return "threadgroup";
  case KL_SCOPE_SIMDGROUP:
    return "simdgroup";
  case KL_SCOPE_THREAD:
    return "thread";
  }
  return "?";
}
