/* Uniformity over the IR (analyzer/ir/ir.h): for every value of a kl_ir_fn, the widest set of
 * threads over which it is the same, and for every instruction and block, the set of threads
 * that must agree on reaching it (its control scope), with the branch and leaf that explain it.
 *
 * Lattice: enum kl_scope, UNIFORM < THREADGROUP < SIMDGROUP < THREAD ("the same for the whole
 * grid / one threadgroup / one SIMD group / differs per thread"); joins take the maximum.
 *
 * Sources (leaves): a COORD by its catalogue scope (grammar/msl.c), refined by a known
 * threadgroup size (X, Y, Z): a component of extent 1 is constant, and with SIMD groups of 32
 * cut from the linear index x + X*y + X*Y*z, lid.y is SIMDGROUP when X % 32 == 0 and lid.z when
 * X*Y % 32 == 0. Coordinates' known ranges go through constant arithmetic, so a value or
 * comparison that folds to one value is UNIFORM (sgid / 8 with 8 SIMD groups, lid < 256 in a
 * threadgroup of 256), and the linear index divided by a multiple of 32 is SIMDGROUP.
 * Each value also keeps its per-thread part as a sum of coordinates with constant coefficients
 * (a recurrence stepping by a uniform amount keeps its start's): a comparison or difference
 * whose parts cancel (`t < end` with t from base + lid by C, end = base' + lid) is no wider than
 * the rest, so such a loop runs the same trips in every thread.
 * A LOAD from threadgroup memory is at least THREADGROUP; from thread-local memory (an ALLOC)
 * it also takes every value and address stored into that ALLOC and the control at each store
 * relative to the ALLOC (flow-insensitive per ALLOC); a store through an address the pass
 * cannot trace reaches only the ALLOCs whose address escapes (is handed to a call, stored,
 * joined, returned: anything but the address of a LOAD or STORE or the base of INDEX, MEMBER
 * or CAST). ATOMIC results are THREAD. A SIMD
 * collective gives its catalogue result scope: a reduction or vote is SIMDGROUP whatever its
 * input (an idempotent one -- min, max, and, or, all, any -- no wider than its input), a
 * shuffle or broadcast no wider than the value it moves. A CALL of a function the unit does not
 * define may return anything (THREAD) and write anything into the thread-local memory it is
 * handed (`&x`, a method's object, which the lowering makes its last operand), and, asked of a
 * kl_uniformity_ext, what its body adds (a per-lane built-in or an atomic); a built-in
 * type's constructor (`uint2(x, 0)`) joins its operands, as everything else does.
 *
 * Control dependence (Tint's statement behaviours, GPUVerify's non-uniform blocks): a block runs
 * under the join of its enclosing IF conditions and LOOP divergences. An exit under control S
 * raises the rest of its block, and of every enclosing block up to its target, to S: a BREAK or
 * RETURN in a loop also raises the whole loop (header, body and latch: later iterations); a
 * CONTINUE raises only the rest of the body (threads meet again at the latch); a RETURN raises
 * everything after it to the end of the kernel or of the inlined helper it leaves (a helper's
 * return inside a loop leaves the helper, not the loop; a LOOP flagged KL_IR_F_REGION, a helper
 * with an early return run once, has its returns as breaks and no later iteration). A break
 * that can fire only in its loop's last iteration (loopexit.h: its condition implies the loop's
 * test fails next, the counter, bound and step threadgroup-uniform) raises the rest of that
 * iteration, the latch and the header (the test the others run once more) and the exit PHIs,
 * but not the body: there is no later iteration for the threads that left to miss. The cause kept
 * is the innermost divergent branch; an exit's own cause (the IF around a RETURN) is the cause at
 * the exit.
 *
 * A restated threadgroup size: when every launch sizes the threadgroup's x at run time
 * (runtime_x), `if (lid.x >= lim) return;` with lim a runtime value uniform over the grid (not
 * a constant, not derived from threads_per_threadgroup or threads_per_simdgroup) and nothing
 * else in the branch is taken as the kernel restating the size the host gave (MLX's
 * `threadgroup=(half, 1, 1)` against `tid >= params[0] / 2`): no thread is presumed to leave
 * there, as the flow analysis presumes. A constant size, or a limit that is the size's own
 * fraction, leaves that test divergent.
 *
 * Joins: PHI_IF takes its incoming values and, unless they are one value, the IF's condition;
 * PHI_HEAD its incoming values; PHI_LATCH also the control of the continues relative to the
 * loop; PHI_EXIT (temporal divergence, after LLVM's GenericUniformityImpl) also the loop's exit
 * divergence -- its condition and its breaks' control relative to the loop -- unless its one
 * incoming value is defined outside the loop. A value made under divergent control reaches
 * later uses only through these PHIs (or through memory, above).
 *
 * Everything is computed by passes over the structured blocks in program order, joining
 * monotonically into arrays indexed by value, until nothing changes: usually two or three
 * passes; a chain of values carried across back edges takes one more per link; the bound is
 * the lattice height times the function's size. */
#ifndef KL_PASSES_UNIFORMITY_H
#define KL_PASSES_UNIFORMITY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/ir/ir.h"
#include "analyzer/passes/scev.h"
#include "grammar/msl.h"

/* What is known of the dispatch. */
struct kl_uniformity_launch {
  int64_t tg[3];     /* threadgroup size per dimension, 0 where not known */
  int64_t max_total; /* at most this many threads in a threadgroup (the kernel's
                        [[max_total_threads_per_threadgroup(N)]]), 0 when not known */
  bool ragged;       /* a launch's grid is not whole threadgroups: its last ones are narrower,
                        their last SIMD group short */
  bool runtime_x;    /* the kernel has launches, and every one sizes the threadgroup's x with a
                        runtime value (not a constant, clamp or granule, not the grid) */
};

/* Why an instruction runs under divergent control. */
struct kl_uniformity_cause {
  enum kl_scope scope; /* its control scope */
  uint32_t branch;     /* the IF, LOOP, BREAK, CONTINUE or RETURN that raised it, or 0 */
  uint32_t source;     /* the leaf (COORD, LOAD, ATOMIC, SIMD) that made that branch divergent */
};

/* The facts of one function, held in its arena. Arrays are indexed by value (instruction) id,
 * block_ctl by block id. */
struct kl_uniformity {
  const struct kl_ir_fn *fn;
  uint8_t *scope;       /* enum kl_scope of each value */
  uint32_t *source;     /* the leaf that gave the value its scope, 0 when UNIFORM */
  uint8_t *ctl;         /* enum kl_scope of the control each instruction runs under */
  uint32_t *ctl_branch; /* the branch that raised it (see kl_uniformity_cause) */
  uint32_t *ctl_source; /* the leaf behind that branch */
  uint8_t *block_ctl;   /* control scope on entry of each block */
  uint32_t *exits;      /* the RETURN, BREAK and CONTINUE instructions, in order */
  uint32_t nexits;
  uint32_t passes;      /* passes until nothing changed */
  bool converged;       /* false when the bound stopped it: everything was widened to THREAD */
  struct kl_uniformity_work *work; /* state of the passes (per loop, per ALLOC, value ranges) */
};

/* Compute uniformity for f; launch may be NULL (threadgroup size unknown). */
struct kl_uniformity *kl_uniformity_compute(const struct kl_ir_fn *f,
                                            const struct kl_uniformity_launch *launch);
/* The same, also reading scev's affine forms (may be NULL): a comparison or difference of two
 * values whose per-thread parts cancel (`t < end` with t = start + tid + k*C, end = base + tid)
 * is no wider than what is left of them -- its coordinates, or THREADGROUP for symbolic parts. */
struct kl_uniformity *kl_uniformity_compute_scev(const struct kl_ir_fn *f,
                                                 const struct kl_uniformity_launch *launch,
                                                 const struct kl_scev *scev);
/* What is known of the functions the unit calls but does not define: result_scope(ctx, name)
 * is how far a call's result may differ between threads because of its body (per-lane SIMD
 * built-ins, atomics), UNIFORM when nothing is known of it. */
struct kl_uniformity_ext {
  enum kl_scope (*result_scope)(void *ctx, const char *name);
  void *ctx;
};
/* kl_uniformity_compute_scev, also asking ext (may be NULL) of the calls of such functions. */
struct kl_uniformity *kl_uniformity_compute_ext(const struct kl_ir_fn *f,
                                                const struct kl_uniformity_launch *launch,
                                                const struct kl_scev *scev,
                                                const struct kl_uniformity_ext *ext);
/* The scope of value v (UNIFORM for KL_IR_NONE). */
enum kl_scope kl_uniformity_value(const struct kl_uniformity *u, uint32_t v);
/* The leaf that made value v as wide as it is, or 0. */
uint32_t kl_uniformity_source(const struct kl_uniformity *u, uint32_t v);
/* The control scope instruction ins runs under. */
enum kl_scope kl_uniformity_control(const struct kl_uniformity *u, uint32_t ins);
/* Why ins runs under its control scope; cause->branch is 0 when nothing raised it. */
struct kl_uniformity_cause kl_uniformity_cause(const struct kl_uniformity *u, uint32_t ins);
/* Whether ins is a BARRIER reached under control wider than its function's barrier_scope
 * (threadgroup_barrier: anything past THREADGROUP; simdgroup_barrier: THREAD). */
bool kl_uniformity_barrier_divergent(const struct kl_uniformity *u, uint32_t ins);
/* One line per instruction, in block order: its scope and source, its control and cause. */
void kl_uniformity_dump(FILE *out, const struct kl_uniformity *u);

#endif
