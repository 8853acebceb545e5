/* Value numbering over the IR, asked a pair at a time: whether two values of one lowered kernel
 * compute the same thing, and whether two addresses point at the same element offset from their
 * bases, whichever buffers those are (`a[elem]`, `b[elem]`: one index, two buffers).
 *
 * SSA already makes a copy (`index = elem`) the same value; what it does not merge is the same
 * computation written twice (`ks - 1` in two places, a constant emitted at each use). Two values
 * are equal when they are the same instruction, or the same constant, parameter, thread
 * coordinate or compile-time symbol, or the same pure operation on equal operands (either order
 * for a commutative one), casts looked through; a load is equal only to itself, or for
 * read-only memory to a load of the same address (kl_scev_leader). A PHI is equal only to
 * itself. The walk is bounded in depth; past it values are not equal, so the answer errs
 * towards "different". */
#ifndef KL_PASSES_VALNUM_H
#define KL_PASSES_VALNUM_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/ir/ir.h"
#include "analyzer/passes/scev.h"

/* Whether values a and b of f compute the same value (above); s, when not NULL, gives the
 * leaders of read-only loads. */
bool kl_valnum_equal(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a, uint32_t b);

/* Whether addresses a and b of f are the same element offset from their roots (an ARG or an
 * ALLOC, which may differ): the chains of INDEX and MEMBER from each root have equal indices
 * (kl_valnum_equal), element sizes and field names, casts looked through; or, with s, scalar
 * evolution gives both the same element offset, an affine form whose every symbolic part is
 * one named value. False when either is not an address followed to a root. */
bool kl_valnum_same_offset(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a,
                           uint32_t b);

#endif
