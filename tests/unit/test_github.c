/* Unit tests for --format github: the escaping GitHub's workflow commands require, and the
 * annotations the emitter writes for made-up findings (levels, 1-based inclusive columns, spans
 * over several lines, related locations in the message, failures, hostile paths). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/report/diag.h"
#include "analyzer/report/emit.h"
#include "analyzer/input/source.h"
#include "tests/unit/kl_test.h"

static void escape(const char *name, const char *in, bool property, const char *want) {
  char *got = kl_emit_github_escape(in, property);
  check_str(name, got, want);
  free(got);
}

static void test_escape(void) {
  escape("escape-plain", "found `x` here", false, "found `x` here");
  escape("escape-empty", "", false, "");
  escape("escape-percent", "100% of 50%25", false, "100%25 of 50%2525");
  escape("escape-newlines", "a\nb\r\nc", false, "a%0Ab%0D%0Ac");
  /* The message keeps ':' and ',': only a property value ends at them. */
  escape("escape-message-keeps-colon-comma", "a: b, c::d", false, "a: b, c::d");
  escape("escape-property", "a: b, c::d", true, "a%3A b%2C c%3A%3Ad");
  escape("escape-property-all", "%\r\n:,", true, "%25%0D%0A%3A%2C");
  escape("escape-utf8-untouched", "caf\xc3\xa9 \xe2\x80\x94", true, "caf\xc3\xa9 \xe2\x80\x94");
  /* An escape is never decoded twice: "%3A" in the text stays text. */
  escape("escape-no-double-decode", "%3A", true, "%253A");
}

/* The output of a github emitter given one file with the findings add() makes, or a failure. */
static char *emit(const char *path, const char *text,
                  void (*add)(const struct kl_source *, struct kl_diag_list *),
                  const char *fail_path, const char *fail_reason) {
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  struct kl_emitter *e = kl_emit_new(KL_FORMAT_GITHUB, out, true);
  if (path) {
    struct kl_arena *a = kl_arena_new();
    struct kl_source src;
    char err[256];
    if (kl_source_from_memory(a, path, text, strlen(text), &src, err, sizeof err) == 0) {
      struct kl_diag_list l;
      kl_diag_list_init(&l, a);
      add(&src, &l);
      kl_diag_sort(&l);
      kl_emit_file(e, &src, &l);
    }
    kl_arena_delete(a);
  }
  if (fail_path) kl_emit_failure(e, fail_path, fail_reason);
  kl_emit_delete(e);
  fclose(out);
  return buf;
}

static uint32_t off(const struct kl_source *s, const char *needle) {
  return (uint32_t)(strstr(s->text, needle) - s->text);
}

static void add_levels(const struct kl_source *s, struct kl_diag_list *l) {
  uint32_t a = off(s, "bfloat"), b = off(s, "acc"), c = off(s, "gid");
  kl_diag_add(l, "bfloat-target", KL_SEV_WARNING, kl_diag_span(s, a, a + 6), "found `bfloat`");
  kl_diag_add(l, "half-accumulator", KL_SEV_NOTE, kl_diag_span(s, b, b + 3), "a note");
  kl_diag_add(l, "bounds-guard", KL_SEV_ERROR, kl_diag_span(s, c, c + 3), "100%, a: b");
}

static void add_multiline(const struct kl_source *s, struct kl_diag_list *l) {
  uint32_t a = off(s, "x +"), b = off(s, "y;");
  kl_diag_add(l, "half-accumulator", KL_SEV_WARNING, kl_diag_span(s, a, b + 1), "over lines");
}

static void add_related(const struct kl_source *s, struct kl_diag_list *l) {
  uint32_t a = off(s, "threadgroup_barrier"), b = off(s, "if (lid");
  struct kl_diag *d = kl_diag_add(l, "barrier-divergence", KL_SEV_ERROR, kl_diag_span(s, a, a + 19),
                                  "barrier in a branch");
  kl_diag_relate(l, d, kl_diag_span(s, b, b + 7), "the branch that diverges");
}

/* A host call's finding whose kernel is in another file (named with "./", as a run may). */
static void add_related_other(const struct kl_source *s, struct kl_diag_list *l) {
  uint32_t a = off(s, "MTLSizeMake(100");
  struct kl_diag *d = kl_diag_add(l, "threadgroup-size", KL_SEV_WARNING,
                                  kl_diag_span(s, a, a + 22), "threadgroup size 100");
  struct kl_span at = {0, 0, 4, 13, 4, 23};
  kl_diag_relate_in(l, d, "./kernels/k.metal", at, "the kernel `k` is defined here");
}

static void add_one(const struct kl_source *s, struct kl_diag_list *l) {
  kl_diag_add(l, "bounds-guard", KL_SEV_ERROR, kl_diag_span(s, 0, 1), "m");
}

static void add_empty(const struct kl_source *s, struct kl_diag_list *l) {
  kl_diag_add(l, "bounds-guard", KL_SEV_ERROR, kl_diag_span(s, 2, 2), "empty span");
}

static void test_emit(void) {
  char *got = emit("k.metal", "bfloat v;\nhalf acc;\nout[gid] = 1;\n", add_levels, NULL, NULL);
  check_str("emit-levels", got,
            "::warning file=k.metal,line=1,col=1,endLine=1,endColumn=6,"
            "title=kernlint (bfloat-target)::found `bfloat`\n"
            "::notice file=k.metal,line=2,col=6,endLine=2,endColumn=8,"
            "title=kernlint (half-accumulator)::a note\n"
            "::error file=k.metal,line=3,col=5,endLine=3,endColumn=7,"
            "title=kernlint (bounds-guard)::100%25, a: b\n");
  free(got);

  /* GitHub allows columns only on a one-line span. */
  got = emit("k.metal", "float z = x +\n    y;\n", add_multiline, NULL, NULL);
  check_str(
      "emit-multiline-span", got,
      "::warning file=k.metal,line=1,endLine=2,title=kernlint (half-accumulator)::over lines\n");
  free(got);

  /* Columns count code points, as in the other formats. */
  got = emit("k.metal", "/*\xc3\xa9*/ if (lid > 0) {\n  threadgroup_barrier(f);\n}\n", add_related,
             NULL, NULL);
  check_str("emit-related-in-message", got,
            "::error file=k.metal,line=2,col=3,endLine=2,endColumn=21,"
            "title=kernlint (barrier-divergence)::barrier in a branch"
            "%0Ak.metal:1:7: note: the branch that diverges\n");
  free(got);

  /* A related location in another file names that file, relative to the checkout as well. */
  got = emit("h.mm", "[e dispatch:MTLSizeMake(100, 1, 1)];\n", add_related_other, NULL, NULL);
  check_str("emit-related-other-file", got,
            "::warning file=h.mm,line=1,col=13,endLine=1,endColumn=34,"
            "title=kernlint (threadgroup-size)::threadgroup size 100"
            "%0Akernels/k.metal:4:13: note: the kernel `k` is defined here\n");
  free(got);

  /* An empty span still names one column; the end is never before the start. */
  got = emit("k.metal", "abcdef\n", add_empty, NULL, NULL);
  check_str("emit-empty-span", got,
            "::error file=k.metal,line=1,col=3,endLine=1,endColumn=3,"
            "title=kernlint (bounds-guard)::empty span\n");
  free(got);

  /* A path is a property value: ':' and ',' must not end it, and a newline must not start a
   * second command. "./" is folded, as GitHub names files relative to the checkout. */
  got = emit("./a:b,c\n::error::x.metal", "x\n", add_one, NULL, NULL);
  check_str("emit-hostile-path", got,
            "::error file=a%3Ab%2Cc%0A%3A%3Aerror%3A%3Ax.metal,line=1,col=1,endLine=1,endColumn=1,"
            "title=kernlint (bounds-guard)::m\n");
  free(got);

  got = emit(NULL, NULL, NULL, "sub/../blob.metal", "binary file (NUL byte at offset 3)");
  check_str("emit-failure", got,
            "::error file=blob.metal,title=kernlint::binary file (NUL byte at offset 3)\n");
  free(got);

  /* A path outside the working folder cannot be made relative: it is kept as given. */
  got = emit(NULL, NULL, NULL, "/nonexistent-kl/x.metal", "missing");
  check_str("emit-path-outside", got,
            "::error file=/nonexistent-kl/x.metal,title=kernlint::missing\n");
  free(got);
}

int main(void) {
  test_escape();
  test_emit();
  enum kl_format f;
  check("format-parse-github", kl_emit_format_parse("github", &f) == 0 && f == KL_FORMAT_GITHUB,
        "--format github is not parsed");
  return failures ? 1 : 0;
}
