/* Developer tool: print a file's tree after the dialect layer, and its ERROR count; with
 * KL_DUMP_BUF set, the buffer tree-sitter parsed as well (after blanking and expansion).
 * Usage: dump-tree FILE.metal */
#include <stdio.h>
#include <stdlib.h>

#include "analyzer/input/source.h"
#include "grammar/dialect.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dump-tree FILE\n");
    return 2;
  }
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  if (kl_source_load(a, argv[1], &src, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", argv[1], err);
    kl_arena_delete(a);
    return 2;
  }
  struct kl_unit u;
  if (kl_dialect_parse(a, &src, src.text, src.len, NULL, ".", &u, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", argv[1], err);
    kl_arena_delete(a);
    return 2;
  }
  char *s = ts_node_string(ts_tree_root_node(u.tree));
  printf("%s\nerrors: %u expanded: %d keywords: %zu\n", s, u.nerrors, u.expanded, u.nkws);
  if (getenv("KL_DUMP_BUF")) fwrite(u.buf, 1, u.len, stdout);
  free(s);
  int rc = u.nerrors ? 1 : 0;
  kl_dialect_release(&u);
  kl_arena_delete(a);
  return rc;
}
