/* Node kinds and fields by name, without comparing strings on every visit. The analyses ask
 * `is this a call_expression`, `the node's "left"` millions of times on a big file; tree-sitter
 * answers a name by scanning the grammar's tables, so each name is looked up once (per thread)
 * and later questions compare numbers. */
#ifndef KL_NODE_H
#define KL_NODE_H

#include <stdbool.h>
#include <tree_sitter/api.h>

/* Whether n is a node of the type named (the same answer as !strcmp(ts_node_type(n), type));
 * type should be a string literal: it is remembered by address. n must not be null. */
bool kl_node_is(TSNode n, const char *type);

/* n's child in the field named (as ts_node_child_by_field_name); name should be a literal. */
TSNode kl_node_field(TSNode n, const char *name);

#endif
