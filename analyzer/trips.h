/* Trip counts: the most iterations a `for` loop makes, from its counter's start, bound and step,
 * folded with the shared evaluator (grammar/consteval.h). A bound that is a function constant has
 * no value in the source, but a loop it bounds that indexes an array of N slots with its counter
 * shows that every valid pipeline sets it to at most N (ggml's fused add of up to 8 operands). */
#ifndef KL_TRIPS_H
#define KL_TRIPS_H

#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/arena.h"
#include "analyzer/model.h"
#include "analyzer/types.h"

/* The most iterations for_statement loop of function f makes under bindings b (may be NULL),
 * or -1 when it is not known. */
int64_t kl_trips_max(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                     TSNode loop, const struct kl_bindings *b);

#endif
