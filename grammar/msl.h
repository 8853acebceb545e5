/* MSL language knowledge the analyses consult: thread coordinates and their uniformity scope,
 * built-in types, barrier and SIMD functions, and the Apple GPU families. */
#ifndef KL_MSL_H
#define KL_MSL_H

#include <stdbool.h>
#include <stddef.h>

/* Smallest scope over which a value is the same for every thread; ordered narrow to wide. */
enum kl_scope { KL_SCOPE_UNIFORM = 0, KL_SCOPE_THREADGROUP, KL_SCOPE_SIMDGROUP, KL_SCOPE_THREAD };

struct kl_msl_coord {
  const char *name; /* attribute name, also the MLX identifier: "thread_position_in_grid" */
  enum kl_scope scope;
};

enum kl_msl_type_kind {
  KL_TYPE_SCALAR,
  KL_TYPE_VECTOR,
  KL_TYPE_MATRIX,
  KL_TYPE_SIMDGROUP_MATRIX,
  KL_TYPE_ATOMIC,
  KL_TYPE_OTHER
};

struct kl_msl_type {
  const char *name;   /* "half4" */
  const char *scalar; /* "half" */
  enum kl_msl_type_kind kind;
  unsigned lanes; /* vector width, 1 for scalars; rows*cols for matrices */
  unsigned size;  /* bytes of one value (a 3-vector is padded to 4 lanes) */
  bool is_half;   /* half-precision float element */
  bool is_bfloat; /* bfloat element */
};

enum kl_msl_fn_kind { KL_FN_BARRIER, KL_FN_SIMD_REDUCE, KL_FN_SIMD_SHUFFLE, KL_FN_SIMD_OTHER };

struct kl_msl_fn {
  const char *name; /* without the metal:: prefix */
  enum kl_msl_fn_kind kind;
  enum kl_scope barrier_scope; /* for barriers: the scope that must be uniform at the call */
  enum kl_scope result_scope;  /* uniformity of the result (simdgroup for simd_sum) */
};

struct kl_msl_family {
  const char *name;  /* "m1", "apple7" */
  unsigned apple;    /* Apple GPU family number: m1 -> 7 */
  const char *chips; /* human description for messages */
};

/* name without a leading `metal::` or `::metal::` (a pointer into name). */
const char *kl_msl_unprefix(const char *name);
/* Thread-coordinate attribute or MLX identifier by name (without [[ ]]); NULL if not one. */
const struct kl_msl_coord *kl_msl_coord(const char *name);
/* All thread-coordinate entries. */
const struct kl_msl_coord *kl_msl_coords(size_t *n);
/* Built-in type by name, accepting a leading "metal::"; NULL if not built in. */
const struct kl_msl_type *kl_msl_type(const char *name);
/* The bytes of what a pointer type as written points to (`float4*`), 0 when not known. */
unsigned kl_msl_pointee_size(const char *type);
/* Barrier or SIMD function by name, accepting a leading "metal::"; NULL if not one. */
const struct kl_msl_fn *kl_msl_fn(const char *name);
/* GPU family by target name (m1..m4, apple7..apple10); NULL if unknown. */
const struct kl_msl_family *kl_msl_family(const char *name);
/* All known targets, for help text and error messages. */
const struct kl_msl_family *kl_msl_families(size_t *n);
/* Name of a scope: "uniform", "threadgroup", "simdgroup", "thread". */
const char *kl_msl_scope_name(enum kl_scope s);

#endif
