/* What types.c shares with types_calls.c (the bindings a helper takes from its calls) and
 * types_memo.c (what the bfloat walk remembers): string and node helpers and the walk's memo, of
 * one module split in three files, not an interface for others. */
#ifndef KL_TYPES_INT_H
#define KL_TYPES_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"

struct kl_binding;
struct kl_bindings;
struct kl_function;
struct kl_types_bfloat;

/* A type without qualifiers, `metal::` and `typename` (kept as it is when already bare). */
const char *kl_types_strip(struct kl_arena *a, const char *type);
/* Push the pieces of an argument list, split at its top-level commas, onto *v (see types.c). */
bool kl_types_split(struct kl_arena *a, const char *text, const char ***v, size_t *n, size_t *cap);
/* kl_types_split for a macro body that is an argument list (`half, half4, ...`). */
bool kl_types_spread(struct kl_arena *a, const char *text, const char ***v, size_t *n, size_t *cap);
/* Add a name to the instantiations a set stands for, once. */
void kl_types_name(struct kl_arena *a, struct kl_bindings *b, const char *name);
/* Whether n is a node of that type (false for a null node). */
bool kl_types_is(TSNode n, const char *type);

/* FNV-1a of a string: the hash of types.c's tables. */
uint64_t kl_types_fnv(const char *s);
/* A hash of the types items[0, nb) bind, in order (kl_types_fnv of each). */
uint64_t kl_types_bindings_hash(const struct kl_binding *items, size_t nb);
/* Whether set s binds the same types as items[0, nb), in order. */
bool kl_types_bindings_same(const struct kl_bindings *s, const struct kl_binding *items,
                            size_t nb);
/* Copy n bytes of s to o; returns the end of the copy (spelling keys without sprintf). */
static inline char *kl_types_put(char *o, const char *s, size_t n) {
  memcpy(o, s, n);
  return o + n;
}

/* ---- What the bfloat walk remembers (types_memo.c) ---------------------------------------- */

/* The nodes of a function body where a bindings' walk can do anything but descend (an
 * if_statement, which the bindings may fold, an operation, a call), in preorder:
 * collected once per body, so each bindings' walk reads a short list instead of walking the
 * whole tree again. end is the index past an entry's subtree; an if_statement's consequence
 * and alternative are the ranges [lo, hi) of the entries in them (empty for a missing one). */
struct kl_types_bf_flat_node {
  TSNode n;
  uint32_t end;
  uint32_t cons_lo, cons_hi, alt_lo, alt_hi;
  bool is_if, is_call;
};

struct kl_types_bf_flat {
  struct kl_types_bf_flat_node *v;
  size_t n, cap;
};

/* f's list, collected on first use (in c's arena). */
const struct kl_types_bf_flat *kl_types_bf_flat_of(struct kl_types_bfloat *c,
                                                   const struct kl_function *f);
/* Whether f is being walked (c->walking). */
bool kl_types_bf_walking(const struct kl_types_bfloat *c, const struct kl_function *f);
/* The memo entry answering f under the bindings key, or SIZE_MAX. */
size_t kl_types_bf_by_key(struct kl_types_bfloat *c, const struct kl_function *f,
                          const char *key);
/* Index memo entry at as f's answer under key (the first one for a key stays). */
void kl_types_bf_key_add(struct kl_types_bfloat *c, const struct kl_function *f, const char *key,
                         size_t at);
/* The first walk of f, in memo order, that bindings b (with kl_types_bf_may may) can share,
 * or SIZE_MAX (types_memo.c says when). */
size_t kl_types_bf_shared(struct kl_types_bfloat *c, const struct kl_function *f,
                          const struct kl_bindings *b, bool may);
/* Record the walk at memo entry at (done, not cut short), under bindings b, for others to share. */
void kl_types_bf_share(struct kl_types_bfloat *c, const struct kl_function *f,
                       const struct kl_bindings *b, size_t at);
/* Free the index's tables. */
void kl_types_bf_index_free(struct kl_types_bfloat *c);

/* An answer about one node of a function under bindings (is this operation in bfloat, which way
 * does this if fold, what does this call follow), with what it depends on: the binding names in
 * force, and the types of the bindings (bit i of mask: items[i]) that it looked at. Bindings
 * that agree on those get the same answer; a walk of a template under hundreds of bindings that
 * differ elsewhere (candle's BLOCKSIZE) asks each question once per distinct answer. Walks of
 * more than KL_TYPES_DEP_MAX bindings keep no such answers. */
enum { KL_TYPES_DEP_MAX = 64 };

struct kl_types_dep {
  const struct kl_binding *items;
  size_t n;
  uint64_t mask;
  const void *v;
  const struct kl_types_dep *next;
};

/* The answer map holds for node of function f under bindings b, or NULL. */
const struct kl_types_dep *kl_types_dep_get(const struct kl_node_map *map, TSNode node,
                                            const struct kl_function *f,
                                            const struct kl_bindings *b);
/* Remember v as the answer for node of f under b, which looked at the bindings in mask. */
void kl_types_dep_put(struct kl_arena *a, struct kl_node_map *map, TSNode node,
                      const struct kl_function *f, const struct kl_bindings *b, uint64_t mask,
                      const void *v);

#endif
