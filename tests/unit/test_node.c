/* The node layer's remembered children: kl_node_named_child and kl_node_field give what
 * tree-sitter gives, asked once or again, and trees parsed after one is deleted (which may reuse
 * its addresses) are never answered from the deleted tree's entries. */
#include <stdio.h>
#include <string.h>

#include "analyzer/core/node.h"
#include "grammar/dialect.h"

#include "tests/unit/kl_test.h"

static const char *const fields[] = {"left", "right", "body", "condition", "declarator",
                                     "value", "function", "arguments", "type", "name"};

static bool same(TSNode a, TSNode b) {
  return a.id == b.id && a.tree == b.tree && !memcmp(a.context, b.context, sizeof a.context);
}

/* Every node below n, each child and field asked through the cache against tree-sitter's own
 * answer; counts the questions in *asked and returns how many answers differed. */
static int compare(TSNode n, int *asked) {
  int bad = 0;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    (*asked)++;
    if (!same(kl_node_named_child(n, i), ts_node_named_child(n, i))) bad++;
  }
  for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
    (*asked)++;
    TSNode want = ts_node_child_by_field_name(n, fields[f], (uint32_t)strlen(fields[f]));
    if (!same(kl_node_field(n, fields[f]), want)) bad++;
  }
  for (uint32_t i = 0; i < k; i++) bad += compare(ts_node_named_child(n, i), asked);
  return bad;
}

static TSTree *parse(TSParser *p, const char *text) {
  return ts_parser_parse_string(p, NULL, text, (uint32_t)strlen(text));
}

static void test_same_answers(TSParser *p) {
  const char *src =
      "kernel void k(device float *x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  for (uint j = 0; j < 4; j++) { if (i < j) x[i + j] = min(x[i], 2.0f); }\n"
      "  float a = x[0] * 2 + x[1], b = a > 1 ? a : -a;\n  x[2] = b;\n}\n";
  TSTree *t = parse(p, src);
  int asked = 0;
  int first = compare(ts_tree_root_node(t), &asked);
  int again = compare(ts_tree_root_node(t), &asked);
  check("node-cache-first", first == 0 && asked > 100, "%d of %d answers differ", first, asked);
  check("node-cache-again", again == 0, "%d answers differ when asked again", again);
  kl_node_tree_delete(t);
}

/* Trees parsed one after another, each deleted before the next: the allocator hands the same
 * addresses out again, and a node at the same address and offset in the next tree may have
 * other children. */
static void test_after_delete(TSParser *p) {
  const char *srcs[] = {
      "void f() { a = b + c; d = e * g; }\n",
      "void f() { a = b(c); d = e[g]; }\n",
      "void f() { if (a) b = c; else d = e; }\n",
      "void f() { a = b + c; d = e * g; }\n",
  };
  int bad = 0, asked = 0;
  for (int round = 0; round < 8; round++) {
    for (size_t s = 0; s < sizeof srcs / sizeof srcs[0]; s++) {
      TSTree *t = parse(p, srcs[(s + (size_t)round) % 4]);
      bad += compare(ts_tree_root_node(t), &asked);
      kl_node_tree_delete(t);
    }
  }
  check("node-cache-after-delete", bad == 0, "%d of %d answers differ", bad, asked);
}

/* A parse that reuses an edited copy of an earlier tree shares that tree's unchanged subtrees:
 * the same node ids live in two trees at once, at other offsets, and each tree's questions get
 * that tree's answers. */
static void test_shared_subtrees(TSParser *p) {
  const char *a = "void f() { a = b + c; }\nvoid g() { d = e * h; }\n";
  const char *b = "int x;\nvoid f() { a = b + c; }\nvoid g() { d = e * h; }\n";
  TSTree *t1 = parse(p, a);
  int bad = 0, asked = 0;
  bad += compare(ts_tree_root_node(t1), &asked);
  TSTree *old = ts_tree_copy(t1);
  TSInputEdit e = {0, 0, 7, {0, 0}, {0, 0}, {1, 0}};
  ts_tree_edit(old, &e);
  TSTree *t2 = ts_parser_parse_string(p, old, b, (uint32_t)strlen(b));
  kl_node_tree_delete(old);
  for (int round = 0; round < 2; round++) {
    bad += compare(ts_tree_root_node(t2), &asked);
    bad += compare(ts_tree_root_node(t1), &asked);
  }
  check("node-cache-shared-subtrees", bad == 0, "%d of %d answers differ", bad, asked);
  kl_node_tree_delete(t2);
  kl_node_tree_delete(t1);
}

int main(void) {
  TSParser *p = ts_parser_new();
  ts_parser_set_language(p, kl_dialect_cpp());
  test_same_answers(p);
  test_after_delete(p);
  test_shared_subtrees(p);
  ts_parser_delete(p);
  return failures ? 1 : 0;
}
