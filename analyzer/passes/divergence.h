/* Why an instruction runs under divergent control, in the terms a message gives: the early
 * return, the branch, the loop or the exit of its iteration that makes some threads miss it, its
 * condition, and a name in that condition that differs between threads. It reads uniformity's
 * facts (analyzer/passes/uniformity.h) and the IR's structure; barrier-divergence asks it of
 * each barrier uniformity calls divergent.
 *
 * Of several diverging constructs, the one cited diverges as widely as the control does (a branch
 * on the lane explains a threadgroup barrier better than an earlier return that differs only
 * between SIMD groups). Among those: an earlier return first, then the outermost enclosing
 * branch or loop (values assigned under it are divergent by control dependence, which taints the
 * conditions nested inside), a break or continue earlier in the same iteration ranking just
 * inside its loop. */
#ifndef KL_PASSES_DIVERGENCE_H
#define KL_PASSES_DIVERGENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/ir/ir.h"
#include "analyzer/passes/uniformity.h"
#include "grammar/msl.h"

enum kl_divergence_kind {
  KL_DIV_NONE,
  KL_DIV_BRANCH, /* an enclosing IF (an if, a switch case, a ternary) */
  KL_DIV_LOOP,   /* an enclosing LOOP whose trip count differs between threads */
  KL_DIV_RETURN, /* an earlier RETURN under divergent control */
  KL_DIV_EXIT    /* an earlier BREAK or CONTINUE of the same iteration */
};

/* The explanation of one instruction's divergent control. */
struct kl_divergence {
  enum kl_divergence_kind kind;
  bool back_edge;  /* KL_DIV_LOOP: through a break in an earlier iteration, not its condition */
  uint32_t branch; /* the IF or LOOP; the RETURN, BREAK or CONTINUE */
  uint32_t cond_at; /* the IF or LOOP whose condition diverges (for an exit, the IF around it) */
  const char *var;  /* a name in that condition whose value differs between threads, or NULL */
  uint32_t carried; /* KL_DIV_LOOP: the value of the previous iteration through which alone its
                       condition diverges (its entry value is uniform), or 0 */
  TSNode carried_at; /* and where the previous iteration assigns it: the assignment that gives
                        the condition's variable that value (`n = end;`), else the value's own
                        node */
};

/* Explain why ins runs under control wider than allowed; kind KL_DIV_NONE when it does not, or
 * when no construct of the IR accounts for it. buf is the text the IR's nodes point into (names
 * are chosen among those the condition says), or NULL. */
void kl_divergence_explain(const struct kl_uniformity *u, uint32_t ins, enum kl_scope allowed,
                           const char *buf, struct kl_divergence *out);

/* Whether instruction v of f sits where no thread goes in this lowering: in the block of an IF
 * that a constant condition rules out, or the body of a loop whose condition is constant false. */
bool kl_divergence_dead(const struct kl_ir_fn *f, uint32_t v);

#endif
