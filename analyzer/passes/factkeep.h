/* What each kernel's lowerings added to a unit's facts (analyzer/passes/facts.h), kept across
 * versions of one document so that the language server lowers again only the kernels an edit
 * can change (kl_facts_compute_kept).
 *
 * An edit is the span between the text two versions share at the start and at the end. Kernels
 * are taken from the version before only when that span lies inside one function's body, and
 * the two trees are the same elsewhere: every other node is the one of the version before, moved
 * by the edit. A kernel is then taken unless it may read the edited function: it or a function
 * it may reach names it (by name, as the model resolves calls; through an instantiation of the
 * kernel; any other file-scope mention, a macro's included, counts for every kernel). What the
 * unit's kernels share bounds the rest:
 *   - the lowering's instruction budget (KL_LOWER_UNIT_INS): a kernel is taken only where it
 *     bound neither that kernel's lowering then nor would now;
 *   - the threadgroup race pass's budgets and memory: a kernel is kept only when the budgets
 *     were not spent while it ran, and a unit whose pairs could spend them or fill the memory in
 *     some order (kl_race_memo_distinct, kl_race_memo_holds) is lowered again whole;
 *   - a kernel that read a header's definitions is not kept (the headers a lint may read are
 *     bounded, and which it reads depends on the order of the questions).
 * A node kept is found again in the new tree by its place, moved, and its kind; a kernel one of
 * whose nodes is not found is lowered. */
#ifndef KL_PASSES_FACTKEEP_H
#define KL_PASSES_FACTKEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kl_factkeep;
struct kl_facts;

/* An empty keep, for one document. */
struct kl_factkeep *kl_factkeep_new(void);
/* Free a keep; NULL is allowed. */
void kl_factkeep_free(struct kl_factkeep *k);
/* For tests: the kernels the last unit took from the version before, and those it lowered. */
void kl_factkeep_stats(const struct kl_factkeep *k, size_t *kept, size_t *lowered);

/* Whether two computations of one unit's facts say the same (the asan build's check of kept
 * facts against those lowered afresh). */
bool kl_factkeep_same(const struct kl_facts *x, const struct kl_facts *y);

#endif
