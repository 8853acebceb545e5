/* Trip counts: the most iterations a `for` loop makes, from its counter's start, bound and step,
 * folded with the shared evaluator (grammar/consteval.h). A bound that is a function constant has
 * no value in the source, but a loop it bounds that indexes an array of N slots with its counter
 * shows that every valid pipeline sets it to at most N (ggml's fused add of up to 8 operands). */
#ifndef KL_TRIPS_H
#define KL_TRIPS_H

#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/model.h"
#include "analyzer/core/types.h"

/* The most iterations for_statement loop of function f makes under bindings b (may be NULL),
 * or -1 when it is not known. */
int64_t kl_trips_max(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                     TSNode loop, const struct kl_bindings *b);

/* The local or parameter of f that name (len bytes) means at node at: the last declaration before
 * at whose enclosing block holds at (kl_model_var takes the last in the body, which may sit in a
 * sibling block), else a parameter; NULL when neither. */
const struct kl_var *kl_trips_decl(const struct kl_function *f, const char *name, size_t len,
                                   TSNode at);

#endif
