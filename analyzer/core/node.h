/* Node kinds and fields by name, without comparing strings on every visit. The analyses ask
 * `is this a call_expression`, `the node's "left"` millions of times on a big file; tree-sitter
 * answers a name by scanning the grammar's tables, so each name is looked up once (per thread)
 * and later questions compare numbers. */
#ifndef KL_NODE_H
#define KL_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"

/* Whether n is a node of the type named (the same answer as !strcmp(ts_node_type(n), type));
 * type should be a string literal: it is remembered by address. n must not be null. */
bool kl_node_is(TSNode n, const char *type);

/* Whether n is the null node: ts_node_is_null without a call into the library, for the walks
 * that ask it at every step. */
static inline bool kl_node_null(TSNode n) {
  return n.id == NULL;
}

/* The node types the walks dispatch on, by name. A chain of string comparisons against
 * ts_node_type was a tenth of the flow walk; a kind is one table lookup. */
#define KL_NODE_KINDS(X)                                                                           \
  X(ALIAS_DECLARATION, "alias_declaration")                                                        \
  X(ARGUMENT_LIST, "argument_list")                                                                \
  X(ARRAY_DECLARATOR, "array_declarator")                                                          \
  X(ASSIGNMENT_EXPRESSION, "assignment_expression")                                                \
  X(ATTRIBUTED_DECLARATOR, "attributed_declarator")                                                \
  X(BINARY_EXPRESSION, "binary_expression")                                                        \
  X(BREAK_STATEMENT, "break_statement")                                                            \
  X(CALL_EXPRESSION, "call_expression")                                                            \
  X(CASE_STATEMENT, "case_statement")                                                              \
  X(CAST_EXPRESSION, "cast_expression")                                                            \
  X(CHAR_LITERAL, "char_literal")                                                                  \
  X(COMMA_EXPRESSION, "comma_expression")                                                          \
  X(COMMENT, "comment")                                                                            \
  X(COMPOUND_STATEMENT, "compound_statement")                                                      \
  X(CONDITION_CLAUSE, "condition_clause")                                                          \
  X(CONDITIONAL_EXPRESSION, "conditional_expression")                                              \
  X(CONTINUE_STATEMENT, "continue_statement")                                                      \
  X(DECLARATION, "declaration")                                                                    \
  X(DO_STATEMENT, "do_statement")                                                                  \
  X(ELSE_CLAUSE, "else_clause")                                                                    \
  X(ENUMERATOR, "enumerator")                                                                      \
  X(EXPRESSION_STATEMENT, "expression_statement")                                                  \
  X(FALSE, "false")                                                                                \
  X(FIELD_DECLARATION_LIST, "field_declaration_list")                                              \
  X(FIELD_EXPRESSION, "field_expression")                                                          \
  X(FIELD_IDENTIFIER, "field_identifier")                                                          \
  X(FOR_RANGE_LOOP, "for_range_loop")                                                              \
  X(FOR_STATEMENT, "for_statement")                                                                \
  X(FUNCTION_DEFINITION, "function_definition")                                                    \
  X(IDENTIFIER, "identifier")                                                                      \
  X(IF_STATEMENT, "if_statement")                                                                  \
  X(INIT_DECLARATOR, "init_declarator")                                                            \
  X(LABELED_STATEMENT, "labeled_statement")                                                        \
  X(LAMBDA_EXPRESSION, "lambda_expression")                                                        \
  X(NULLPTR, "nullptr")                                                                            \
  X(NUMBER_LITERAL, "number_literal")                                                              \
  X(PARENTHESIZED_EXPRESSION, "parenthesized_expression")                                          \
  X(POINTER_DECLARATOR, "pointer_declarator")                                                      \
  X(POINTER_EXPRESSION, "pointer_expression")                                                      \
  X(PREPROC_ARG, "preproc_arg")                                                                    \
  X(PREPROC_CALL, "preproc_call")                                                                  \
  X(PREPROC_DEF, "preproc_def")                                                                    \
  X(PREPROC_ELIF, "preproc_elif")                                                                  \
  X(PREPROC_ELIFDEF, "preproc_elifdef")                                                            \
  X(PREPROC_ELSE, "preproc_else")                                                                  \
  X(PREPROC_FUNCTION_DEF, "preproc_function_def")                                                  \
  X(PREPROC_IF, "preproc_if")                                                                      \
  X(PREPROC_IFDEF, "preproc_ifdef")                                                                \
  X(QUALIFIED_IDENTIFIER, "qualified_identifier")                                                  \
  X(REFERENCE_DECLARATOR, "reference_declarator")                                                  \
  X(RETURN_STATEMENT, "return_statement")                                                          \
  X(SIZEOF_EXPRESSION, "sizeof_expression")                                                        \
  X(STATIC_ASSERT_DECLARATION, "static_assert_declaration")                                        \
  X(STRING_LITERAL, "string_literal")                                                              \
  X(SUBSCRIPT_EXPRESSION, "subscript_expression")                                                  \
  X(SWITCH_STATEMENT, "switch_statement")                                                          \
  X(TEMPLATE_DECLARATION, "template_declaration")                                                  \
  X(TEMPLATE_FUNCTION, "template_function")                                                        \
  X(TEMPLATE_INSTANTIATION, "template_instantiation")                                              \
  X(TRUE, "true")                                                                                  \
  X(TYPE_DEFINITION, "type_definition")                                                            \
  X(TYPE_DESCRIPTOR, "type_descriptor")                                                            \
  X(TYPE_IDENTIFIER, "type_identifier")                                                            \
  X(UNARY_EXPRESSION, "unary_expression")                                                          \
  X(UPDATE_EXPRESSION, "update_expression")                                                        \
  X(WHILE_STATEMENT, "while_statement")

#define KL_KIND_ENUM(k, name) KL_KIND_##k,
enum kl_kind { KL_KIND_OTHER, KL_NODE_KINDS(KL_KIND_ENUM) KL_KIND_COUNT };
#undef KL_KIND_ENUM

/* Symbols past this are looked up by name (tree-sitter-cpp has 543, python 275). */
enum { KL_KIND_SYMS = 1024 };

/* Per language, each symbol's kind. */
struct kl_kind_table {
  const TSLanguage *lang;
  uint8_t kind[KL_KIND_SYMS];
};

/* The table this thread's last kl_node_kind_slow answered from: a run asks of one language's
 * nodes tens of millions of times, so the inline path below tries it first. */
extern _Thread_local const struct kl_kind_table *kl_node_kind_last;

/* kl_node_kind for any node: finds (or fills) its language's table. */
enum kl_kind kl_node_kind_slow(TSNode n);

/* n's kind among KL_NODE_KINDS, KL_KIND_OTHER for any other type or the null node: the same
 * answer as comparing ts_node_type(n) with each name. */
static inline enum kl_kind kl_node_kind(TSNode n) {
  const struct kl_kind_table *t = kl_node_kind_last;
  if (t && n.id && n.tree && t->lang == ts_tree_language(n.tree)) {
    TSSymbol s = ts_node_symbol(n);
    if (s < KL_KIND_SYMS) return (enum kl_kind)t->kind[s];
  }
  return kl_node_kind_slow(n);
}

/* Whether n is of kind k (never true of the null node). */
static inline bool kl_node_is_kind(TSNode n, enum kl_kind k) {
  return kl_node_kind(n) == k;
}

/* n's child in the field named (as ts_node_child_by_field_name); name should be a literal. */
TSNode kl_node_field(TSNode n, const char *name);

/* ts_node_named_child(n, i), remembered: tree-sitter finds a child by walking n's children (and
 * the hidden nodes between) from the first every time, and the analyses ask for the same children
 * of the same nodes on every loop pass, specialisation and helper call. */
TSNode kl_node_named_child(TSNode n, uint32_t i);

/* ts_tree_delete(t), forgetting first all that kl_node_named_child and kl_node_field remember in
 * every thread: a later tree may be given the same addresses, and the answers would be that tree's
 * wrong ones, so every tree is deleted through it. For the same reason ts_tree_edit, which changes
 * a tree in place, is only used on a fresh ts_tree_copy that nothing has asked about. */
void kl_node_tree_delete(TSTree *t);

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
