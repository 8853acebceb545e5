/* Unit tests for fixes: a fix is kept only when linting its result shows its finding gone and no
 * new ERROR node (crafted fixes that fail each check are dropped), and the unified diff's hunks,
 * context and "\ No newline at end of file". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/engine.h"
#include "analyzer/report/fix.h"
#include "analyzer/input/source.h"
#include "kl_test.h"

static const char kernel[] = "#include <metal_stdlib>\n"
                             "using namespace metal;\n"
                             "\n"
                             "kernel void dot(device const half* a [[buffer(0)]],\n"
                             "                device half* out [[buffer(1)]],\n"
                             "                constant uint& n [[buffer(2)]],\n"
                             "                uint gid [[thread_position_in_grid]]) {\n"
                             "  half acc = 0.0h; // the sum\n"
                             "  for (uint i = 0; i < n; ++i) acc += a[i];\n"
                             "  out[gid] = acc;\n"
                             "}\n";

/* The half-accumulator finding of kernel, linted into a; NULL when there is none. */
static struct kl_diag *lint(struct kl_arena *a, struct kl_source *src, struct kl_settings *s,
                            struct kl_diag_list *l, unsigned *nerrors) {
  char err[256];
  kl_config_defaults(s);
  kl_diag_list_init(l, a);
  if (kl_source_from_memory(a, "k.metal", kernel, strlen(kernel), src, err, sizeof err) != 0 ||
      kl_engine_lint_counted(a, src, s, NULL, l, nerrors, err, sizeof err) != 0)
    return NULL;
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->items[i].rule_id, "half-accumulator")) return &l->items[i];
  return NULL;
}

/* Run the fixes of l with d's fix replaced by one edit; returns the findings fixed. */
static size_t crafted(const char *name, const char *find, const char *text) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_settings s;
  struct kl_diag_list l;
  unsigned nerrors = 0;
  struct kl_diag *d = lint(a, &src, &s, &l, &nerrors);
  size_t fixed = SIZE_MAX;
  if (!d) {
    check(name, false, "no half-accumulator finding to fix");
  } else {
    const char *at = strstr(src.text, find);
    struct kl_fix *f = kl_diag_fix(&l, d, "crafted");
    uint32_t start = (uint32_t)(at - src.text);
    kl_diag_edit(&l, f, start, start + (uint32_t)strlen(find), text);
    struct kl_fix_result r;
    if (kl_fix_run(&src, &s, NULL, &l, nerrors, &r) == 0) {
      fixed = r.nfixed;
      if (r.changed) kl_arena_delete(r.arena);
    }
  }
  kl_arena_delete(a);
  return fixed;
}

static void test_validation(void) {
  /* Edits a comment: the finding stays, so the fix is dropped. */
  check_int("fix-dropped-finding-stays", (long)crafted("fix-dropped-finding-stays",
                                                       "// the sum", "// the total"),
            0);
  /* Declares float but breaks the parse: more ERROR nodes, dropped. */
  check_int("fix-dropped-error-node",
            (long)crafted("fix-dropped-error-node", "half acc = 0.0h;", "float acc = 0.0f; ) ) {"),
            0);
  /* The same change done right is kept. */
  check_int("fix-kept", (long)crafted("fix-kept", "half acc = 0.0h;", "float acc = 0.0f;"), 1);

  /* The rule's own fix: applied, and the result has no finding left. */
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_settings s;
  struct kl_diag_list l;
  unsigned nerrors = 0;
  struct kl_diag *d = lint(a, &src, &s, &l, &nerrors);
  check("rule-fix-offered", d && d->fix, "the finding has no fix");
  struct kl_fix_result r;
  if (d && d->fix && kl_fix_run(&src, &s, NULL, &l, nerrors, &r) == 0 && r.changed) {
    check_int("rule-fix-applied", (long)r.nfixed, 1);
    check_int("rule-fix-no-findings", (long)r.diags.n, 0);
    check("rule-fix-text", strstr(r.src.text, "float acc = 0.0f;") &&
                               strstr(r.src.text, "out[gid] = half(acc);"),
          "got:\n%s", r.src.text);
    kl_arena_delete(r.arena);
  } else {
    check("rule-fix-applied", false, "not applied");
  }
  kl_arena_delete(a);
}

static void test_diff(void) {
  struct kl_arena *a = kl_arena_new();
  check_str("diff-equal", kl_fix_diff(a, "x", "a\nb\n", 4, "a\nb\n", 4), "");
  const char *old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n";
  const char *new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\nsixteen\n";
  check_str("diff-hunks",
            kl_fix_diff(a, "./d/x.metal", old, (uint32_t)strlen(old), new, (uint32_t)strlen(new)),
            "--- a/d/x.metal\n+++ b/d/x.metal\n"
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
            "@@ -13,3 +13,4 @@\n 13\n 14\n 15\n+sixteen\n");
  check_str("diff-no-newline", kl_fix_diff(a, "x", "a\nb", 3, "a\nc", 3),
            "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
            "+c\n\\ No newline at end of file\n");
  check_str("diff-insert-at-start", kl_fix_diff(a, "x", "a\n", 2, "#if X\na\n", 8),
            "--- a/x\n+++ b/x\n@@ -1,1 +1,2 @@\n+#if X\n a\n");
  check_str("diff-delete-all", kl_fix_diff(a, "x", "a\n", 2, "", 0),
            "--- a/x\n+++ b/x\n@@ -1,1 +0,0 @@\n-a\n");
  struct kl_edit e[2] = {{0, 1, "A"}, {2, 2, "+"}};
  uint32_t n;
  check_str("edit-text", kl_fix_edit_text(a, "abc", 3, e, 2, &n), "Ab+c");
  kl_arena_delete(a);
}

int main(void) {
  test_validation();
  test_diff();
  return failures ? 1 : 0;
}
