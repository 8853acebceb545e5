/* Parse corpus: every .metal file in grammar/tests/corpus must parse with no ERROR or MISSING node
 * after the dialect layer. Run from the repository root. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/input/source.h"
#include "grammar/dialect.h"

#define KL_CORPUS_DIR "grammar/tests/corpus"
#define KL_CORPUS_MIN 45

static int kl_cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* First ERROR or MISSING node in document order, found with a cursor. */
static bool kl_first_error(TSNode root, TSNode *out) {
  TSTreeCursor cur = ts_tree_cursor_new(root);
  bool found = false;
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&cur);
    if (ts_node_is_missing(n) || ts_node_symbol(n) == (TSSymbol)-1) {
      *out = n;
      found = true;
      break;
    }
    if (ts_node_has_error(n) && ts_tree_cursor_goto_first_child(&cur)) continue;
    bool up = false;
    while (!ts_tree_cursor_goto_next_sibling(&cur)) {
      if (!ts_tree_cursor_goto_parent(&cur)) {
        up = true;
        break;
      }
    }
    if (up) break;
  }
  ts_tree_cursor_delete(&cur);
  return found;
}

static int kl_check_file(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", KL_CORPUS_DIR, name);
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  int failed = 1;
  if (kl_source_load(a, path, &src, err, sizeof err) != 0) {
    printf("FAIL corpus/%s: %s\n", name, err);
    kl_arena_delete(a);
    return failed;
  }
  struct kl_unit u;
  if (kl_dialect_parse(a, &src, src.text, src.len, NULL, KL_CORPUS_DIR, &u, err, sizeof err)) {
    printf("FAIL corpus/%s: %s\n", name, err);
    kl_arena_delete(a);
    return failed;
  }
  TSNode bad;
  if (u.nerrors == 0) {
    printf("PASS corpus/%s%s\n", name, u.expanded ? " (macros expanded)" : "");
    failed = 0;
  } else if (kl_first_error(ts_tree_root_node(u.tree), &bad)) {
    uint32_t line, col;
    kl_source_position(&src, kl_offmap_to_file(&u.map, ts_node_start_byte(bad)), &line, &col);
    printf("FAIL corpus/%s: %u error node(s), first %s at %u:%u\n", name, u.nerrors,
           ts_node_is_missing(bad) ? "MISSING" : "ERROR", line, col);
  } else {
    printf("FAIL corpus/%s: %u error node(s)\n", name, u.nerrors);
  }
  kl_dialect_release(&u);
  kl_arena_delete(a);
  return failed;
}

int main(void) {
  DIR *d = opendir(KL_CORPUS_DIR);
  if (!d) {
    printf("FAIL corpus: cannot open %s (run from the repository root)\n", KL_CORPUS_DIR);
    return 1;
  }
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l <= 6 || strcmp(e->d_name + l - 6, ".metal")) continue;
    names = kl_arena_xrealloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, kl_cmp_names);
  int failed = 0;
  for (size_t i = 0; i < n; i++) {
    failed += kl_check_file(names[i]);
    free(names[i]);
  }
  free(names);
  if (n >= KL_CORPUS_MIN)
    printf("PASS corpus-size: %zu snippets\n", n);
  else
    printf("FAIL corpus-size: %zu snippets, expected at least %d\n", n, KL_CORPUS_MIN);
  return failed || n < KL_CORPUS_MIN;
}
