/* The facts the rules read, computed once per MSL unit: every kernel lowered into the IR per
 * specialisation (analyzer/ir/lower.h), and the passes over each (scalar evolution, uniformity),
 * whose answers are kept in tables by source position. A
 * rule asks these questions of a barrier, an access or a value; it never walks syntax for them. */
#ifndef KL_PASSES_FACTS_H
#define KL_PASSES_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/ir/ir.h"
#include "analyzer/core/model.h"
#include "analyzer/ir/lower.h"
#include "analyzer/passes/scev.h"
#include "analyzer/passes/uniformity.h"

/* A barrier of the lowered kernels: where its call starts, and whether any lowering reaches it
 * under control wider than its scope. */
struct kl_facts_barrier {
  uint32_t at;
  bool divergent;
};

/* What the rules may ask, kept after the lowered kernels are gone: the IR of one kernel lives
 * only while the passes run over it (kl_ir_lower_each), and each pass's answers are taken into
 * these tables then. */
struct kl_facts {
  size_t nfns;                       /* kernels lowered, counting each specialisation */
  struct kl_facts_barrier *barriers; /* one per call, by position */
  size_t nbarriers;
};

/* Lower the unit's kernels and run the passes; the same inputs as kl_ir_lower. */
void kl_facts_compute(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                      size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                      const struct kl_settings *s, struct kl_facts *out);

/* How the lowered kernels judge the barrier call starting at byte `at`: returns false when no
 * lowered function holds it (kernlint could not lower it), else sets *divergent to whether any
 * of them reaches it under control wider than the barrier's scope. */
bool kl_facts_barrier(const struct kl_facts *f, uint32_t at, bool *divergent);

#endif
