/* Lowering MSL kernels into the IR (analyzer/ir/ir.h): each kernel once per specialisation, its
 * same-file helpers inlined at each call. See lower.c for how SSA is built. */
#ifndef KL_IR_LOWER_H
#define KL_IR_LOWER_H

#include <stdbool.h>
#include <stddef.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/ir/ir.h"
#include "analyzer/core/model.h"

/* Lower every kernel of the model, once per specialisation as spec.c enumerates them
 * (same inputs), into out; everything goes to the arena. */
void kl_ir_lower(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                 size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                 const struct kl_settings *s, struct kl_ir_module *out);

/* What kl_ir_lower_each hands over: one kernel in one specialisation, alive only during the
 * call (its arena is freed when the call returns). */
typedef void (*kl_ir_lower_fn)(void *ctx, struct kl_ir_fn *f);

/* Lower the kernels one at a time, calling each with every specialisation: a unit's IR never
 * lives whole, so memory is that of its largest kernel. */
void kl_ir_lower_each(const struct kl_model *m, const struct kl_dispatch *calls, size_t ncalls,
                      const struct kl_inst *xinsts, size_t nxinsts,
                      const struct kl_settings *s, kl_ir_lower_fn each, void *ctx);

/* Asked before any specialisation of kernel k, with the instructions the unit's kernels lowered
 * so far count against its budget (KL_LOWER_UNIT_INS): true when k is taken from elsewhere and
 * not lowered, with *ins the instructions its lowerings would count. */
typedef bool (*kl_ir_lower_skip)(void *ctx, const struct kl_function *k, uint64_t unit_ins,
                                 uint64_t *ins);

/* Offered a specialisation instead of its lowering when the lowering would take the course of
 * an earlier one of its kernel's (every name it would ask of its specialisation gets the same
 * value, and no cap cuts it): f is that kernel in that specialisation with no instructions
 * (kernel, inst and hosts set), `of` the earlier one's place among the kernel's specialisations
 * (from 1), whose IR f's would be. True when it takes f so; false to have it lowered. */
typedef bool (*kl_ir_lower_again_fn)(void *ctx, struct kl_ir_fn *f, uint32_t of);

/* Whether a kernel lowered once unit_ins instructions of its unit are counted gets its whole
 * instruction cap: the unit's budget does not bind it. */
bool kl_ir_lower_full_room(uint64_t unit_ins);

/* kl_ir_lower_each but for the kernels skip takes (skip NULL: none); again, unless NULL, is
 * offered the specialisations whose lowering would repeat an earlier one. Returns the
 * instructions counted against the unit's budget, the skipped kernels' included. */
uint64_t kl_ir_lower_some(const struct kl_model *m, const struct kl_dispatch *calls,
                          size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                          const struct kl_settings *s, kl_ir_lower_skip skip, kl_ir_lower_fn each,
                          kl_ir_lower_again_fn again, void *ctx);

#endif
