/* libFuzzer harness over the language server.
 *
 * Input: one control byte, then the rest. Control value % 3: 0 and 1 read the rest as an MSL or
 * a Python file and, for each line, apply the "suppress on this line" edit and check that
 * kl_suppress_apply then drops a finding on that line (the edit and suppress.c must agree on
 * where comments and strings are); 2 feeds the rest to kl_lsp_run as the client's byte stream. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/report/diag.h"
#include "analyzer/lsp/lsp.h"
#include "analyzer/lsp/text.h"
#include "analyzer/input/source.h"
#include "analyzer/report/suppress.h"

/* Larger inputs only repeat the lexing that smaller ones reach; each line is a full re-scan. */
#define KL_FUZZ_MAX_TEXT 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether the edit for line makes a finding on the line it covers go away. */
static void kl_fuzz_suppress_line(const struct kl_source *src, uint32_t line) {
  uint32_t s, e;
  char *ins = kl_text_suppress_edit(src, line, "bounds-guard", &s, &e);
  if (!ins) return;
  size_t m = strlen(ins), n = (size_t)src->len - (e - s) + m;
  char *t = kl_arena_xmalloc(n + 1);
  memcpy(t, src->text, s);
  memcpy(t + s, ins, m);
  memcpy(t + s + m, src->text + e, src->len - e);
  t[n] = '\0';
  /* The next-line form puts a line above: the finding's line moves down one. */
  uint32_t target = m && ins[m - 1] == '\n' ? line + 1 : line;
  struct kl_arena *a = kl_arena_new();
  struct kl_source s2;
  char err[256];
  if (kl_source_from_memory(a, src->path, t, n, &s2, err, sizeof err) == 0) {
    struct kl_diag_list l;
    kl_diag_list_init(&l, a);
    uint32_t ls = s2.line_starts[target - 1];
    kl_diag_add(&l, "bounds-guard", KL_SEV_ERROR, kl_diag_span(&s2, ls, ls), "finding");
    kl_suppress_apply(&s2, &l, KL_SEV_OFF);
    if (l.n) {
      fprintf(stderr, "line %u: the edit [%u, %u) <- '%s' does not suppress it:\n%s\n", line, s, e,
              ins, t);
      abort();
    }
  }
  kl_arena_delete(a);
  free(t);
  free(ins);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned mode = data[0] % 3;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  if (mode == 2) {
    FILE *in = fmemopen((void *)text, len ? len : 1, "r");
    FILE *out = fopen("/dev/null", "w");
    if (in && out) {
      struct kl_lsp_options o = {0};
      kl_lsp_run(&o, in, out);
    }
    if (in) fclose(in);
    if (out) fclose(out);
    return 0;
  }
  if (len > KL_FUZZ_MAX_TEXT) return 0;
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  const char *path = mode ? "/nonexistent/kl-fuzz/s.py" : "/nonexistent/kl-fuzz/s.metal";
  if (kl_source_from_memory(a, path, text, len, &src, err, sizeof err) == 0)
    for (uint32_t line = 1; line <= src.nlines; line++) kl_fuzz_suppress_line(&src, line);
  kl_arena_delete(a);
  return 0;
}
