/* What types.c shares with types_calls.c (the bindings a helper takes from its calls): string
 * and node helpers of one module split in two files, not an interface for others. */
#ifndef KL_TYPES_INT_H
#define KL_TYPES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"

struct kl_binding;
struct kl_bindings;

/* A type without qualifiers, `metal::` and `typename` (kept as it is when already bare). */
const char *kl_types_strip(struct kl_arena *a, const char *type);
/* Push the pieces of an argument list, split at its top-level commas, onto *v (see types.c). */
bool kl_types_split(struct kl_arena *a, const char *text, const char ***v, size_t *n, size_t *cap);
/* kl_types_split for a macro body that is an argument list (`half, half4, ...`). */
bool kl_types_spread(struct kl_arena *a, const char *text, const char ***v, size_t *n, size_t *cap);
/* The index of the set among sets[0, n) that binds the same types, or n. */
size_t kl_types_same(const struct kl_bindings *sets, size_t n, const struct kl_binding *items,
                     size_t nb);
/* Add a name to the instantiations a set stands for, once. */
void kl_types_name(struct kl_arena *a, struct kl_bindings *b, const char *name);
/* Whether n is a node of that type (false for a null node). */
bool kl_types_is(TSNode n, const char *type);

#endif
