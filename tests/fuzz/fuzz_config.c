/* libFuzzer harness over the two parsers of user-written settings: the .lintrc reader (with its
 * globs, applied to a few paths) and the inline suppression comments (kernlint-disable...).
 *
 * Input: one control byte, then the text. Control value % 3: 0 parses the text as a .lintrc;
 * 1 and 2 read it as an MSL or a Python file whose every line carries one finding, cycling
 * through the rules and one unknown rule, and apply its suppressions (bit 7 turns the
 * unused-suppression notes off). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/input/source.h"
#include "analyzer/report/suppress.h"
#include "rules/rules.h"

/* Findings per file at most: suppression matching is linear per finding. */
#define KL_FUZZ_MAX_DIAGS 2048

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void kl_fuzz_lintrc(const char *text, size_t len) {
  static const char *const files[] = {
      "/nonexistent/kl-fuzz/a.metal",       "/nonexistent/kl-fuzz/src/kernels/b.h",
      "/nonexistent/kl-fuzz/vendor/x/c.py", "/nonexistent/other/d.mm",
      "relative/dir/e.metal",               "./f.cpp",
  };
  char err[512];
  struct kl_config *c =
      kl_config_from_memory("/nonexistent/kl-fuzz/.lintrc", text, len, err, sizeof err);
  if (!c) return;
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *rel = kl_config_relpath(c, files[i]);
    struct kl_settings s;
    kl_config_defaults(&s);
    kl_config_apply_rel(c, rel, &s);
    (void)kl_config_selects_rel(c, rel);
    free(rel);
  }
  kl_config_delete(c);
}

static void kl_fuzz_suppress(const char *text, size_t len, bool python, bool unused_off) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[512];
  const char *path = python ? "/nonexistent/kl-fuzz/s.py" : "/nonexistent/kl-fuzz/s.metal";
  if (kl_source_from_memory(a, path, text, len, &src, err, sizeof err) == 0) {
    struct kl_diag_list diags;
    kl_diag_list_init(&diags, a);
    size_t nrules;
    const struct kl_rule *const *rules = kl_rules_all(&nrules);
    for (uint32_t l = 0; l < src.nlines && l < KL_FUZZ_MAX_DIAGS; l++) {
      uint32_t start = src.line_starts[l];
      uint32_t end = l + 1 < src.nlines ? src.line_starts[l + 1] : src.len;
      const char *rule = l % (nrules + 1) < nrules ? rules[l % (nrules + 1)]->id : "not-a-rule";
      kl_diag_add(&diags, rule, KL_SEV_WARNING, kl_diag_span(&src, start, end), "finding");
    }
    kl_suppress_apply(&src, &diags, unused_off ? KL_SEV_OFF : KL_SEV_NOTE);
    kl_diag_sort(&diags);
  }
  kl_arena_delete(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *text = (const char *)data + 1;
  switch (data[0] % 3) {
  case 0:
    kl_fuzz_lintrc(text, size - 1);
    break;
  default:
    kl_fuzz_suppress(text, size - 1, data[0] % 3 == 2, data[0] & 128);
    break;
  }
  return 0;
}
