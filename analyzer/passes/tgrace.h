/* Threadgroup races over the IR: the pairs of accesses to one threadgroup array, at least one a
 * store, that two threads of a threadgroup can make to one element with no barrier ordering
 * threadgroup memory between them on some path, in one stretch of code or across a loop's back
 * edge (the previous iteration), as GPUVerify's two-thread reduction asks it.
 *
 * How. One walk of the structured IR keeps the set of accesses no barrier has closed off yet (the
 * open set): an IF walks each branch from a copy and joins the two, a LOOP walks its body twice,
 * the second time with the first pass's open set carried round the back edge (marked crossed),
 * a BREAK leaves its set to the loop's exit, a CONTINUE to its latch, a RETURN to the helper's
 * region or the kernel's end; a path on which an IF's condition fails where that condition is the
 * loop's own test for its next trip computed again (`if (base < n) barrier;` after `base += 64` in
 * `while (base < n)`, kl_loopexit_next_test) leaves at that test, so what is open on it goes to
 * the loop's exit, not round the back edge. Each access is described over the thread coordinates
 * (analyzer/passes/race.h): the element index of its address, flattened over the array's rows
 * from the INDEX chain (a coordinate divided or reduced by a constant is a derived coordinate),
 * a value the same for the threadgroup a symbol (a loop's header PHI one that knows its start,
 * step and bound, so that two iterations in a row take the values they do), and the conditions
 * of the enclosing branches and loops. Each access is paired with every open access of the same
 * array and the pair decided by kl_race_meet over a sample threadgroup; a store is also paired
 * with itself (many threads storing to one element), unless every thread stores one value (per
 * SIMD group: it is paired across two groups only) or the value follows from the index's one
 * coordinate. A function whose threads differ by their SIMD lane alone is sampled as one SIMD
 * group (a second would redo the same work). A SIMD-group matrix load or store of threadgroup
 * memory (simdgroup_load, simdgroup_store) is an access each lane makes to its elements of the
 * matrix, ordered within its SIMD group. An index of a one-dimensional array with no form (a
 * value read from memory, masked or of a narrow type) is described by its range (ranges.h, run
 * when first needed): a ranged side, decided by the race pass only where the race is certain,
 * and only when no condition around the access, nor a way out before it, was left unread. A
 * load of a threadgroup table its one store filled at each thread's own element, a barrier
 * between in the same block, is the value stored.
 *
 * Cost. The walk is linear in the IR per loop pass (nested loops: twice per level); pairs are
 * asked only within one array, only with a store on a side, each pair of instructions once, and
 * a unit's budgets (pairs, valuations) bound the rest. Accesses whose index has neither a form
 * nor a narrow range (a pointer chosen at run time) take no part. */
#ifndef KL_PASSES_TGRACE_H
#define KL_PASSES_TGRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/ir/ir.h"
#include "analyzer/passes/race.h"
#include "analyzer/passes/scev.h"

/* One race of a function: first is the access on the path before second (in the previous
 * iteration of loop when back_edge); first == second, not back_edge: one store that several
 * threads make to one element at once. */
struct kl_tgrace_pair {
  uint32_t first, second; /* LOAD, STORE or simdgroup_load/store CALL instructions */
  bool first_store, second_store;
  bool back_edge;
  uint32_t loop;  /* the LOOP crossed, KL_IR_NONE */
  uint32_t fence; /* a threadgroup BARRIER between them that orders no threadgroup memory */
  bool one_sg;    /* only two threads of one SIMD group meet on an element (a group's own
                     scratch, `sm[tx * 8 + ty]` of lanes), so a SIMD-wide operation orders them */
};

/* What a unit's runs share: the budgets and the pairs decided (kl_race_meet_memo). */
struct kl_tgrace_budget {
  uint32_t pairs, valuations;
  struct kl_race_memo *memo;
};

/* The races of f, in the order the walk finds them, into *out (arena a); returns how many. buf
 * is the unit's text (a barrier's flags kernlint cannot read are presumed to order threadgroup
 * memory, unless they name mem_none); tg, unless NULL, the threadgroup's size every launch
 * agrees on (0 where not known); max_total the kernel's [[max_total_threads_per_threadgroup]]
 * (0: none); b, unless NULL, bounds the work. */
size_t kl_tgrace_run(struct kl_arena *a, const struct kl_ir_fn *f, const struct kl_scev *s,
                     const char *buf, const int64_t tg[3], int64_t max_total,
                     struct kl_tgrace_budget *b, struct kl_tgrace_pair **out);

/* The node a race names for an access (a LOAD, STORE or matrix CALL): the subscript of its
 * address (the outermost INDEX under any vector component), the variable a one-element store
 * assigns, else its own. */
TSNode kl_tgrace_node(const struct kl_ir_fn *f, uint32_t access);

#endif
