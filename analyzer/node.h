/* Node kinds and fields by name, without comparing strings on every visit. The analyses ask
 * `is this a call_expression`, `the node's "left"` millions of times on a big file; tree-sitter
 * answers a name by scanning the grammar's tables, so each name is looked up once (per thread)
 * and later questions compare numbers. */
#ifndef KL_NODE_H
#define KL_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <tree_sitter/api.h>

#include "analyzer/arena.h"

/* Whether n is a node of the type named (the same answer as !strcmp(ts_node_type(n), type));
 * type should be a string literal: it is remembered by address. n must not be null. */
bool kl_node_is(TSNode n, const char *type);

/* n's child in the field named (as ts_node_child_by_field_name); name should be a literal. */
TSNode kl_node_field(TSNode n, const char *name);

/* The named children of n in order, as ts_node_named_child gives them one index at a time but
 * in one pass (that call starts from the first child each time): in buf when they fit in cap,
 * else in an array from a. *k is how many there are. */
const TSNode *kl_node_kids(struct kl_arena *a, TSNode n, TSNode *buf, uint32_t cap, uint32_t *k);

/* A memo of answers by node (and a key of the asker's, such as the function being analysed), for
 * questions asked of one node again and again: a loop body walked until it settles, a template
 * walked once per instantiation. Zero-initialised is empty; its table is malloc'd: free it with
 * kl_node_map_free. */
struct kl_node_map {
  struct kl_node_map_slot *slots;
  size_t n, cap;
};

/* Whether m holds an answer for node n under key k; if so *v is it. */
bool kl_node_map_get(const struct kl_node_map *m, TSNode n, const void *k, const void **v);

/* Free m's table (the answers themselves are the caller's); m is empty again. */
void kl_node_map_free(struct kl_node_map *m);

/* Remember v as the answer for node n under key k. */
void kl_node_map_put(struct kl_arena *a, struct kl_node_map *m, TSNode n, const void *k,
                     const void *v);

#endif
