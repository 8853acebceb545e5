/* Unit tests for inline suppressions: each form, unused reporting, Python comments, and
 * markers that are not comments. Each case lints nothing: it builds diagnostics by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/report/diag.h"
#include "analyzer/input/source.h"
#include "analyzer/report/suppress.h"

static int failures;

/* Add one diagnostic per "rule@line" word of spec, spanning the line's text. */
static void add_diags(const struct kl_source *src, struct kl_diag_list *l, const char *spec) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    char *at = strchr(tok, '@');
    if (!at) continue;
    *at = '\0';
    unsigned line = (unsigned)atoi(at + 1);
    uint32_t start = src->line_starts[line - 1], len;
    kl_source_line(src, line, &len);
    const char *id = kl_arena_strdup(l->arena, tok);
    kl_diag_add(l, id, KL_SEV_ERROR, kl_diag_span(src, start, start + len), "finding");
  }
}

/* "rule@line" for findings; "unused@line `span text`: message" for suppression reports. */
static void summarize(const struct kl_source *src, const struct kl_diag_list *l, char *out,
                      size_t outlen, enum kl_severity unused_level, int *bad_level) {
  size_t o = 0;
  out[0] = '\0';
  for (size_t i = 0; i < l->n && o < outlen; i++) {
    const struct kl_diag *d = &l->items[i];
    const char *sep = i ? "; " : "";
    if (!strcmp(d->rule_id, "unused-suppression")) {
      if (d->severity != unused_level) *bad_level = 1;
      o += (size_t)snprintf(out + o, outlen - o, "%sunused@%u `%.*s`: %s", sep, d->span.line,
                            (int)(d->span.end - d->span.start), src->text + d->span.start,
                            d->message);
    } else {
      o += (size_t)snprintf(out + o, outlen - o, "%s%s@%u", sep, d->rule_id, d->span.line);
    }
  }
}

static void run(const char *name, const char *path, const char *text, const char *diags,
                enum kl_severity level, const char *want) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  if (kl_source_from_memory(a, path, text, strlen(text), &src, err, sizeof err) != 0) {
    printf("FAIL %s: source: %s\n", name, err);
    failures++;
    kl_arena_delete(a);
    return;
  }
  struct kl_diag_list l;
  kl_diag_list_init(&l, a);
  add_diags(&src, &l, diags);
  kl_suppress_apply(&src, &l, level);
  kl_diag_sort(&l);
  char got[2048];
  int bad_level = 0;
  summarize(&src, &l, got, sizeof got, level, &bad_level);
  if (strcmp(got, want) != 0) {
    printf("FAIL %s:\n    got:  %s\n    want: %s\n", name, got, want);
    failures++;
  } else if (bad_level) {
    printf("FAIL %s: unused-suppression not at level %s\n", name, kl_diag_severity_name(level));
    failures++;
  } else {
    printf("PASS %s\n", name);
  }
  kl_arena_delete(a);
}

#define N KL_SEV_NOTE

static void test_forms(void) {
  run("no-directives-unchanged", "k.metal", "a;\nb;\n", "bounds-guard@1 half-accumulator@2", N,
      "bounds-guard@1; half-accumulator@2");
  run("disable-line", "k.metal", "x = a[gid]; // kernlint-disable-line bounds-guard\ny = a[gid];\n",
      "bounds-guard@1 bounds-guard@2", N, "bounds-guard@2");
  run("disable-line-other-rule", "k.metal",
      "x = a[gid]; // kernlint-disable-line half-accumulator\n", "bounds-guard@1", N,
      "bounds-guard@1; unused@1 `half-accumulator`: suppression of `half-accumulator` is unused");
  run("disable-next-line", "k.metal",
      "// kernlint-disable-next-line bounds-guard, half-accumulator\nx = a[gid];\ny = a[gid];\n",
      "bounds-guard@2 half-accumulator@2 bounds-guard@3", N, "bounds-guard@3");
  run("disable-next-line-is-next-line-only", "k.metal",
      "// kernlint-disable-next-line bounds-guard\n\nx = a[gid];\n", "bounds-guard@3", N,
      "unused@1 `bounds-guard`: suppression of `bounds-guard` is unused; bounds-guard@3");
  run("ids-separated-by-spaces", "k.metal",
      "x = a[gid]; // kernlint-disable-line bounds-guard half-accumulator\n",
      "bounds-guard@1 half-accumulator@1", N, "");
  run("region", "k.metal",
      "// kernlint-disable bounds-guard\na;\nb;\n// kernlint-enable bounds-guard\nc;\n",
      "bounds-guard@2 bounds-guard@3 half-accumulator@3 bounds-guard@5", N,
      "half-accumulator@3; bounds-guard@5");
  run("region-inclusive-ends", "k.metal",
      "a; // kernlint-disable bounds-guard\nb;\nc; // kernlint-enable bounds-guard\nd;\n",
      "bounds-guard@1 bounds-guard@3 bounds-guard@4", N, "bounds-guard@4");
  run("region-unterminated-runs-to-eof", "k.metal",
      "a;\n// kernlint-disable bounds-guard\nb;\nc;\n",
      "bounds-guard@1 bounds-guard@3 bounds-guard@4", N, "bounds-guard@1");
  run("region-reopened", "k.metal",
      "// kernlint-disable bounds-guard\na;\n// kernlint-enable bounds-guard\nb;\n"
      "// kernlint-disable bounds-guard\nc;\n",
      "bounds-guard@2 bounds-guard@4 bounds-guard@6", N, "bounds-guard@4");
  run("region-all-with-hole", "k.metal",
      "// kernlint-disable all\na;\n// kernlint-enable bounds-guard\nb;\n",
      "bounds-guard@2 half-accumulator@2 bounds-guard@4 half-accumulator@4", N, "bounds-guard@4");
  run("region-unused", "k.metal",
      "// kernlint-disable bounds-guard\na;\n// kernlint-enable bounds-guard\n", "", N,
      "unused@1 `bounds-guard`: suppression of `bounds-guard` is unused");
  run("disable-file", "k.metal", "a;\nb;\n// kernlint-disable-file bounds-guard\n",
      "bounds-guard@1 bounds-guard@2 half-accumulator@2", N, "half-accumulator@2");
  run("all-line", "k.metal", "a; // kernlint-disable-line all\nb;\n",
      "bounds-guard@1 some-engine-check@1 half-accumulator@2", N, "half-accumulator@2");
  run("all-file", "k.metal", "// kernlint-disable-file all\nb;\n",
      "bounds-guard@2 half-accumulator@2", N, "");
  run("second-comment-ends-ids", "k.metal",
      "x = a[gid]; // kernlint-disable-line bounds-guard // expect: unused-suppression\n",
      "bounds-guard@1", N, "");
  run("second-comment-ends-ids-unused", "k.metal",
      "x = a[gid]; // kernlint-disable-line bounds-guard // no finding here\n", "", N,
      "unused@1 `bounds-guard`: suppression of `bounds-guard` is unused");
  run("reason-after-dashes", "k.metal",
      "x = a[gid]; // kernlint-disable-line bounds-guard -- the grid is exact here\n",
      "bounds-guard@1", N, "");
  run("colon-after-directive", "k.metal", "x = a[gid]; // kernlint-disable-line: bounds-guard\n",
      "bounds-guard@1", N, "");
  run("block-comment", "k.metal", "x = a[gid]; /* kernlint-disable-line bounds-guard */ y;\n",
      "bounds-guard@1", N, "");
  run("block-comment-next-line-after-its-end", "k.metal",
      "/* kernlint-disable-next-line bounds-guard\n   because the grid is exact */\nx = a[gid];\n",
      "bounds-guard@3", N, "");
  run("doc-comment-opener", "k.metal", "x = a[gid]; /// kernlint-disable-line bounds-guard\n",
      "bounds-guard@1", N, "");
  run("crlf", "k.metal", "x = a[gid]; // kernlint-disable-line bounds-guard\r\ny;\r\n",
      "bounds-guard@1", N, "");
}

static void test_unused(void) {
  run("unknown-rule", "k.metal", "x; // kernlint-disable-line no-such-rule\n", "bounds-guard@1", N,
      "bounds-guard@1; unused@1 `no-such-rule`: unknown rule 'no-such-rule'");
  run("unknown-rule-in-enable", "k.metal",
      "// kernlint-disable bounds-guard\na;\n// kernlint-enable bounds-gaurd\n", "bounds-guard@2",
      N, "unused@3 `bounds-gaurd`: unknown rule 'bounds-gaurd'");
  run("unused-at-warning-level", "k.metal", "x; // kernlint-disable-line bounds-guard\n", "",
      KL_SEV_WARNING, "unused@1 `bounds-guard`: suppression of `bounds-guard` is unused");
  run("unused-off-still-suppresses", "k.metal",
      "x; // kernlint-disable-line bounds-guard\ny; // kernlint-disable-line half-accumulator\n",
      "bounds-guard@1", KL_SEV_OFF, "");
  run("duplicate-id-second-unused", "k.metal",
      "x; // kernlint-disable-line bounds-guard, bounds-guard\n", "bounds-guard@1", N,
      "unused@1 `bounds-guard`: suppression of `bounds-guard` is unused");
  run("redundant-file-disable-unused", "k.metal",
      "// kernlint-disable-file bounds-guard\nx; // kernlint-disable-line bounds-guard\n",
      "bounds-guard@2", N, "unused@1 `bounds-guard`: suppression of `bounds-guard` is unused");
  run("file-disable-of-unused-suppression", "k.metal",
      "// kernlint-disable-file unused-suppression\nx; // kernlint-disable-line bounds-guard\n"
      "y; // kernlint-disable-line nope\n",
      "", N, "");
  run("unused-file-disable-of-unused-suppression", "k.metal",
      "// kernlint-disable-file unused-suppression\nx;\n", "", N,
      "unused@1 `unused-suppression`: suppression of `unused-suppression` is unused");
  run("line-disable-of-unused-suppression", "k.metal",
      "x; // kernlint-disable-line half-accumulator, unused-suppression\n", "", N, "");
  run("all-does-not-cover-unused-reports", "k.metal",
      "// kernlint-disable-file all\nx; // kernlint-disable-line bounds-guard\ny;\n",
      "half-accumulator@3", N, "unused@2 `bounds-guard`: suppression of `bounds-guard` is unused");
  run("bare-directive", "k.metal", "x; // kernlint-disable-line\n", "bounds-guard@1", N,
      "bounds-guard@1; unused@1 `kernlint-disable-line`: `kernlint-disable-line` needs a rule id, "
      "or `all`");
  run("bare-directive-with-reason", "k.metal", "x; // kernlint-disable-line -- because\n", "", N,
      "unused@1 `kernlint-disable-line`: `kernlint-disable-line` needs a rule id, or `all`");
  run("unknown-directive", "k.metal", "x; // kernlint-disable-lines bounds-guard\n",
      "bounds-guard@1", N,
      "bounds-guard@1; unused@1 `kernlint-disable-lines`: unknown directive "
      "`kernlint-disable-lines` (expected kernlint-disable-line, kernlint-disable-next-line, "
      "kernlint-disable, kernlint-enable or kernlint-disable-file)");
  run("enable-without-disable", "k.metal", "x;\n// kernlint-enable bounds-guard\n", "", N,
      "unused@2 `bounds-guard`: `kernlint-enable bounds-guard` has no matching kernlint-disable");
}

static void test_not_comments(void) {
  run("string-literal-is-not-a-comment", "k.metal",
      "const char *s = \"// kernlint-disable-line bounds-guard\"; x = a[gid];\n", "bounds-guard@1",
      N, "bounds-guard@1");
  run("string-with-escaped-quote", "k.metal",
      "s = \"\\\" // kernlint-disable-line bounds-guard\"; x = a[gid];\n", "bounds-guard@1", N,
      "bounds-guard@1");
  run("comment-after-string", "k.metal",
      "s = \"//\"; x = a[gid]; // kernlint-disable-line bounds-guard\n", "bounds-guard@1", N, "");
  run("char-literal-quote", "k.metal",
      "char q = '\"'; x = a[gid]; // kernlint-disable-line bounds-guard\n", "bounds-guard@1", N,
      "");
  run("digit-separator", "k.mm",
      "int n = 1'000; x = a[gid]; // kernlint-disable-line bounds-guard\n", "bounds-guard@1", N,
      "");
  run("raw-string", "k.mm",
      "auto s = R\"msl(\" // kernlint-disable-line bounds-guard )msl\"; x = a[gid];\n",
      "bounds-guard@1", N, "bounds-guard@1");
  /* A literal that holds a kernel: its MSL comments are the kernel's (plain and raw). */
  run("comment-in-kernel-string", "k.mm",
      "auto s = R\"(kernel void k() { x = a[gid]; // kernlint-disable-line bounds-guard\n})\";\n",
      "bounds-guard@1", N, "");
  run("comment-in-kernel-lines", "k.cpp",
      "const char *s = \"kernel void k() {\\n\"\n\"  x = a[gid]; // kernlint-disable-line "
      "bounds-guard\\n\"\n\"}\\n\";\n",
      "bounds-guard@2", N, "");
  run("marker-not-at-comment-start", "k.metal",
      "x = a[gid]; // see kernlint-disable-line bounds-guard\n", "bounds-guard@1", N,
      "bounds-guard@1");
  run("marker-in-prose", "k.metal", "// kernlint-friendly code\nx;\n", "", N, "");
  run("hash-is-not-a-comment-in-metal", "k.metal", "# kernlint-disable-line bounds-guard\n",
      "bounds-guard@1", N, "bounds-guard@1");
  run("inside-block-comment-not-directive", "k.metal",
      "/* see // kernlint-disable-line bounds-guard */ x;\n", "bounds-guard@1", N,
      "bounds-guard@1");
}

static void test_python(void) {
  run("python-hash-line", "k.py", "k = build()  # kernlint-disable-line threadgroup-size\n",
      "threadgroup-size@1", N, "");
  run("python-hash-next-line", "k.py",
      "# kernlint-disable-next-line threadgroup-size\nk(threadgroup=(100, 1, 1))\n",
      "threadgroup-size@2", N, "");
  run("python-hash-in-string-is-not-a-comment", "k.py",
      "s = \"# kernlint-disable-line bounds-guard\"\n", "bounds-guard@1", N, "bounds-guard@1");
  run("python-metal-comments-in-source-string", "k.py",
      "import mlx.core as mx\n"
      "source = \"\"\"\n"
      "    uint gid = thread_position_in_grid.x;\n"
      "    out[gid] = inp[gid]; // kernlint-disable-line bounds-guard\n"
      "    // kernlint-disable-next-line half-accumulator\n"
      "    acc += x;\n"
      "    /* kernlint-disable uncoalesced-access */\n"
      "    y = inp[gid * 7];\n"
      "\"\"\"\n"
      "k = mx.fast.metal_kernel(name='k', source=source)"
      "  # kernlint-disable-line threadgroup-size\n"
      "z = 1\n",
      "bounds-guard@4 half-accumulator@6 uncoalesced-access@8 threadgroup-size@10 "
      "uncoalesced-access@11",
      N, "");
  run("python-comment-in-one-line-string", "k.py",
      "src = \"out[gid] = inp[gid]; // kernlint-disable-line bounds-guard\\n\"\n", "bounds-guard@1",
      N, "");
  run("python-slashes-outside-strings-are-code", "k.py",
      "n = 7 // 2  # kernlint-disable-line bounds-guard\nm = 8 // kernlint-disable-line x\n",
      "bounds-guard@1", N, "");
  run("python-quote-in-comment", "k.py",
      "# it's fine\nx = 1  # kernlint-disable-line bounds-guard\n", "bounds-guard@2", N, "");
  run("python-unused", "k.py", "x = 1  # kernlint-disable-line bounds-guard\n", "", N,
      "unused@1 `bounds-guard`: suppression of `bounds-guard` is unused");
}

int main(void) {
  test_forms();
  test_unused();
  test_not_comments();
  test_python();
  return failures ? 1 : 0;
}
