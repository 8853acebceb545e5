/* Bounds guards over the IR: for a device access of a lowered kernel, whether its index derives
 * from a thread coordinate, which of its thread-varying parts the value ranges leave unbounded on
 * its path (and in which grid dimensions), and whether the kernel compares such a part against a
 * size elsewhere: the evidence bounds-guard needs that the grid can pass the data.
 *
 * What it computes. Per value, the grid dimensions of the varying thread coordinates it is
 * computed from (through loads too: `x[idx[gid]]` is thread-indexed). Per access, each index
 * along its address that varies across threads is split into the terms of its sum; a term is
 * guarded when kl_ranges_parts_bounded bounds it at the access, or, for a loaded value, when the
 * address it was loaded from is bounded there (the value is data, its load is what the guard
 * covers). A check of a sum bounds a part of it the rest adds to without going below 0
 * (`column + i < n` bounds column, i >= 0), a term of small range is kept in range by the room
 * another term's bound leaves it (`x[i0 + lane]` in `for (i0 = 0; i0 + 32 <= n; i0 += 32)`:
 * i0 < n - 31, lane <= 31; whole tiles), and a local declared unsigned is not negative
 * whatever the lowering kept of the conversion (`const ushort r0 = pos[0] * 8`). The unguarded
 * terms give the dimensions and the value the message names. What a
 * thread keeps in an array of its own is followed from the store to the load (`ax[row] = src0 +
 * (r0 + row) * nb01` carries r0 into `ax[row][i]`): a load from it is computed from what is
 * stored, and an address loaded from it continues at the stored address; such a load is bounded
 * when every store it can read is (a `+=` of a bounded value, a `-=` of one not negative). A
 * remainder written out, `x - (x / d) * d` (the factors of d in any order, through locals: `int4
 * q = i / (w * h); i -= q * h * w;`), is x % d, below a uniform d as `%` is. A pointer a loop of a
 * fixed count steps (`for (k = 0; k < 2; k++) { sl[0]; sl++; }`) continues at where it entered
 * the loop; one a loop bounded by a size steps walks in step with that bound and stops there.
 *
 * Evidence. A comparison (<, <=, >, >=) of a thread-derived value with an affine form against a
 * size (a uniform value computed from a kernel argument or a load, not a constant, nor a loop's
 * counter) that guards something (the condition, alone or through &&, || and !, of a loop, of an
 * IF that exits or makes a memory access without only choosing what one store writes, or of a
 * select of a load or of an infinity), whose atoms all appear in the access's offset scaled by
 * one factor and include an atom of an unguarded term: `row < n` for `w[row * ld + col]`, not
 * `tg * 256 + lid < n` for `out[tg]`, nor `i2 + lid < n` for `out[lid]`. A counter of a loop
 * with a bounded range (`row < NR0`) is no atom here: at its start the compared value is the
 * thread's own. A walk from the thread's position (`for (i = lid; i < n; i += 32)`) is evidence
 * only for an index of that position by the map it steps (`x[lid]`, not `out[lid * 2]`), and only
 * when its counter indexes memory in the loop: a walk that only counts (`for (i = sg; i < n; i +=
 * BN)` stepping pointers of its own) bounds how often it runs, not a position. Clamps
 * are read by the facts (kl_facts_clamp_ins).
 *
 * Cost. One pass over the values for the dimensions and the comparisons; per access a walk of
 * its address and the comparisons' list. */
#ifndef KL_PASSES_GUARDS_H
#define KL_PASSES_GUARDS_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/ir/ir.h"
#include "analyzer/passes/ranges.h"
#include "analyzer/passes/scev.h"
#include "grammar/preproc.h"

/* kl_guards.dep bits: the grid dimensions x, y, z of the varying coordinates a value is computed
 * from (a scalar coordinate counts as x), THREAD when it is computed from any, and WIDE when from
 * one a launch can make as large as it likes (a position in the grid or in a threadgroup), not
 * only from a lane's index in its SIMD group or quad, which the hardware keeps below 32 or 4. */
enum {
  KL_GUARDS_X = 1,
  KL_GUARDS_Y = 2,
  KL_GUARDS_Z = 4,
  KL_GUARDS_THREAD = 8,
  KL_GUARDS_WIDE = 16
};

/* The pass's result for one function. */
struct kl_guards {
  const struct kl_ir_fn *f;
  const struct kl_scev *s;
  struct kl_ranges *r;
  uint8_t *dep;       /* per value: KL_GUARDS_* bits */
  uint8_t *guarding;  /* per value: a condition that guards something (see above) */
  uint32_t *stored;   /* per value: for a thread's own ALLOC, or a field of one (its first
                         MEMBER, kl_guards.field), the first value stored into it that is
                         computed from a thread coordinate (else any), or 0 */
  uint32_t *anyfield; /* per ALLOC: the same over the stores into any of its fields */
  uint8_t *nstores;   /* per slot of stored: how many stores write it, up to 2 */
  uint32_t *first_store; /* per slot of stored: the last STORE into it in the function, or 0 */
  uint32_t *next_store;  /* per STORE: the one before it into the same slot, or 0 */
  uint8_t *escaped;      /* per ALLOC of the thread's own memory: its address is used other than
                            to load or store through it (handed to a call, stored, an atomic's) */
  uint32_t *field;    /* per address into a field of a struct in thread memory: the field's
                         first MEMBER (`t.row` here and there are one field), else 0 */
  uint32_t *cmps;     /* comparisons that can be evidence, ncmps of them */
  uint32_t *cmp_side; /* per comparison: its thread-derived side */
  uint32_t ncmps;
  struct kl_arena *a;
  struct kl_gd_memo *forms; /* values' forms as the facts about them are tried (guards.c) */
  /* Set by the caller (NULL: not known): the #if branches of the unit's buffer, and its tree,
   * whose nodes' offsets they index. A comparison in another branch than an access (`#if
   * ALIGNED` reads unchecked, its `#else` checks) is no evidence for it: no build has both. */
  const struct kl_pp_arms *arms;
  const TSTree *tree;
};

/* What one access's index shows. */
struct kl_guards_verdict {
  bool thread_indexed; /* some index varies with a thread coordinate */
  bool unguarded;      /* some thread-derived term is bounded by nothing on its path */
  uint8_t dims;        /* the grid dimensions of those terms (KL_GUARDS_X...) */
  bool wide;           /* one of those terms is KL_GUARDS_WIDE: a grid rounded up reaches it */
  uint32_t part;       /* the first unguarded term */
  uint32_t evidence;   /* a comparison elsewhere of that part against a size, or 0 */
};

/* Run the pass over f, whose scalar evolution is s and value ranges r (r's launch is read by
 * nothing here). */
struct kl_guards *kl_guards_run(struct kl_arena *a, const struct kl_ir_fn *f,
                                const struct kl_scev *s, struct kl_ranges *r);
/* The verdict on access (a LOAD, STORE or ATOMIC of g's function); false when it is none. */
bool kl_guards_access(struct kl_guards *g, uint32_t access, struct kl_guards_verdict *out);
/* The value stored in a thread's own array that load v reads back (`ax[row]` after `ax[row] =
 * src0 + off`; kl_guards.stored), or 0. */
uint32_t kl_guards_find_carried(const struct kl_guards *g, uint32_t v);

#endif
