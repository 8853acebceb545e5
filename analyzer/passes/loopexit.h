/* Breaks that can only leave a loop in its last iteration, and conditions that are the loop's
 * test for its next trip (kl_loopexit_next_test).
 *
 * For `for (j = s; j < B; j += step)` (j a header PHI whose back edge is j + step, B and step
 * the same in every iteration), a break under a condition that implies `j + step >= B` fires
 * only in an iteration after which the loop's own test fails: when j, B and step are the same in
 * every thread, the threads that did not break leave at the next test, so the break makes no
 * later iteration that some threads miss. Uniformity (uniformity.h) checks those scopes; this
 * module proves the implication, over integers taken not to wrap (as ranges.h does):
 *   - the condition, or a conjunct of it (`&&`), of an IF whose then block holds the break, is a
 *     comparison L < R (<=, >, >=) whose sides, as sums of terms with integer coefficients
 *     (through +, -, unary -, multiplication by a constant, casts), differ by j - B + X;
 *   - and X <= step (plus the comparison's slack): X a constant and step one at least as large,
 *     X = a % step (unsigned), or X = (a % S) * K with K >= 0 and step = K * S (then
 *     X <= K * S - K): the offset of one part of a block split S ways, each K wide, against a
 *     loop stepping by the whole block. A component of a vector stored once in thread memory
 *     (`ushort2 p(a % S, a / S); ... p.x * K`) is read as the value stored.
 * Terms that cancel are the same value or the same pure expression of constants, symbols and
 * values defined outside the loop (a function constant read again in the body is the one the
 * header read). A term left with a negative coefficient is dropped when it is not negative. */
#ifndef KL_PASSES_LOOPEXIT_H
#define KL_PASSES_LOOPEXIT_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/ir/ir.h"

/* What makes a loop's last iteration: its counter j (the header PHI), bound B and step. */
struct kl_loopexit {
  uint32_t loop, j, bound, step;
};

/* Whether BREAK brk of f can fire only in the last iteration of its loop (see above); fills *out
 * with the loop's counter, bound and step, whose scopes the caller still has to check. */
bool kl_loopexit_last(const struct kl_ir_fn *f, uint32_t brk, struct kl_loopexit *out);
/* Whether a thread can leave LOOP l, or skip the rest of a trip, before its trips end: a break,
 * continue or return stands somewhere inside it. */
bool kl_loopexit_leaves(const struct kl_ir_fn *f, uint32_t l);
/* Whether condition cond, computed in LOOP l's body, is the test l makes before its next trip
 * (`if (base < n)` after `base += 64` in `while (base < n)`, or a do-while's own test): a path
 * on which cond fails leaves l at that test and never comes round the back edge. */
bool kl_loopexit_next_test(const struct kl_ir_fn *f, uint32_t l, uint32_t cond);

#endif
