/* What a kernel's own threadgroup arrays say of how many threads its threadgroup has.
 *
 * An access every thread makes, `cache[tid + 64]` in `threadgroup float cache[96]` with tid the
 * thread's index in its threadgroup, stays in the array only if tid <= 31: a kernel written that
 * way is launched with at most 32 threads per threadgroup, or it has a worse defect than a race.
 * The race pass reads this bound where no launch and no [[max_total_threads_per_threadgroup]]
 * says the size, so that slots `tid`, `tid + 32` and `tid + 64` of such a kernel are not taken for
 * one element written by two threads. Only accesses that no thread can skip count: those in the
 * kernel's top block before any return, or any IF or LOOP that holds one; of a one-dimensional
 * threadgroup array whose length folds; indexed by k * tid + c with k > 0 and c >= 0. */
#ifndef KL_PASSES_EXTENT_H
#define KL_PASSES_EXTENT_H

#include <stdint.h>

#include "analyzer/ir/ir.h"
#include "analyzer/passes/scev.h"

/* The most threads per threadgroup f's unconditional threadgroup accesses leave in bounds, 0
 * when none bounds them. */
int64_t kl_extent_max_threads(const struct kl_ir_fn *f, const struct kl_scev *sc);

#endif
