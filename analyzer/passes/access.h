/* The device-access table: every load, store and atomic of device memory in the lowered kernels,
 * with what the rules ask of its address (analyzer/passes/facts.h keeps the table after the
 * lowerings are gone).
 *
 * What it computes. For each LOAD, STORE or ATOMIC of device memory whose address the scalar
 * evolution follows to a kernel buffer (analyzer/passes/scev.h): the buffer, the element the
 * access reads (type as written, size when known), the element offset from the buffer's start
 * (loop counters expanded to their start plus a uniform multiple of their step, so only thread
 * coordinates are left), and from it the steps between threads -- between adjacent SIMD lanes
 * (the coefficient of the fastest-varying thread coordinate), and along each thread position
 * (x, y, z and the linear index) for a threadgroup narrower than a SIMD group.
 *
 * How units meet. The offset is summed over the address's INDEX steps in bytes (each INDEX
 * knows its element's size), then divided by the accessed element's size, so a byte pointer
 * cast to `float*` and a float4 read of `&x[4 * i]` both count in the element read. Where a size
 * is not known (a template type), the steps must all be of one element, as scev counts them.
 *
 * A runtime value in the lane's step is a row length where the index walks another axis one
 * fixed step at a time, or where the thread reads the elements beside the one it steps to (an
 * access of the same base a constant 1 to 16 elements off: `x[gid * ld]`, `x[gid * ld + 1]`);
 * otherwise it scales the whole index, the element stride the host hands in: no lane stride.
 *
 * What is not a stride. A coefficient that is one compile-time value kernlint cannot see (an
 * unbound template parameter, a macro it cannot read) is mostly a small chunk per lane: the lane
 * stride is then unknown -- but where the kernel itself has set it apart from 1 (the `else` of
 * `if (stride == 1)`), it is a stride. A name the settings list as a unit stride (`nb0`) is one
 * element. An access only a few lanes make is marked `few` (a branch `lane < 4` or `lane <
 * simdgroups_per_threadgroup`, a scalar tail of a chunk test, an index of the quadgroup lane
 * alone), and its lane stride is not known either. */
#ifndef KL_PASSES_ACCESS_H
#define KL_PASSES_ACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/core/model.h"
#include "analyzer/ir/ir.h"
#include "analyzer/passes/affine.h"
#include "analyzer/passes/scev.h"

/* Dimensions of kl_access.dim_stride: the x, y and z thread positions, and the linear thread
 * index (`thread_index_in_threadgroup`, `thread_index_in_simdgroup`). */
enum { KL_ACCESS_DIM_X, KL_ACCESS_DIM_Y, KL_ACCESS_DIM_Z, KL_ACCESS_DIM_LINEAR };
/* kl_access.few: few x positions (in each row of the threadgroup), or few lanes in all. */
enum { KL_ACCESS_FEW_ROW = 1, KL_ACCESS_FEW_ALL = 2 };

/* One device access of one lowering (a kernel in one specialisation). */
struct kl_access {
  uint32_t ins;                /* its LOAD, STORE or ATOMIC (meaningful while the lowering is) */
  uint32_t address;            /* that instruction's address value */
  TSNode node;                 /* the source it was lowered from */
  const struct kl_var *buffer; /* the kernel buffer it reaches */
  const char *elem_type;       /* the element read or written, as written ("float4", "T") */
  unsigned elem_size;          /* its size in bytes, 0 when the lowering does not know it */
  bool store, atomic;
  struct kl_affine form; /* element offset from the buffer (recurrences expanded), or unknown */
  bool lane_known;       /* the lane stride below is meaningful */
  bool lane_symbolic;    /* the stride between adjacent SIMD lanes is a value not known: */
  bool lane_compile_time; /* a product of compile-time values, or else a runtime value */
  int64_t lane_stride;    /* elements between adjacent lanes */
  bool ct_not_one; /* a step is one compile-time value kernlint cannot see, but the access runs
                      only where the kernel has tested it is not 1 (`else` of `stride == 1`):
                      a stride, counted as a compile-time one */
  /* Elements between neighbours along the x, y and z thread positions and the linear thread
   * index (KL_ACCESS_DIM_*). A bit set in dim_symbolic: that step is a value not known (in
   * dim_ct too: a product of compile-time values); in dim_unknown: one compile-time value
   * kernlint cannot see. Meaningful when dims_known. */
  bool dims_known;
  int64_t dim_stride[4];
  uint8_t dim_symbolic, dim_ct, dim_unknown;
  uint8_t few; /* KL_ACCESS_FEW_*: only a few lanes of each SIMD group run it; 0 otherwise */
  const struct kl_function *kernel; /* the kernel of the lowering */
  const struct kl_function *owner;  /* the function whose code holds it (a helper, or kernel) */
  TSNode call;       /* in a helper: the kernel's own call that leads there (null in the kernel) */
  const char *inst;  /* the specialisation label ("N = 2"), NULL when analysed unspecialised */
  uint16_t ninsts;   /* how many specialisations of the kernel were lowered (set by the caller) */
  uint32_t index_rep; /* the first access of its lowering at the same offset (table index) */
  bool row_step; /* while collecting: a runtime lane step was taken for an element stride */
};

/* A growing table of accesses. */
struct kl_access_table {
  struct kl_access *v;
  size_t n, cap;
};

/* Append f's device accesses to t, in instruction order, one per source node and kernel call
 * (a store wins over a load of the same node: `x[i] += v`); strings and nodes it keeps outlive
 * f (the specialisation label is copied into a). settings may be NULL (no unit strides).
 * Returns how many were added. index_rep is filled among those added (kl_valnum_same_offset);
 * ninsts is left 0. */
size_t kl_access_collect(struct kl_arena *a, const struct kl_ir_fn *f, const struct kl_scev *s,
                         const struct kl_settings *settings, struct kl_access_table *t);

/* Whether access x has a step between threads that is not 0: between adjacent lanes, or along
 * some thread position of a narrow threadgroup. */
bool kl_access_is_strided(const struct kl_access *x);

#endif
