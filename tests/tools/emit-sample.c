/* emit-sample: drive the emitters with made-up diagnostics, so the output formats can be tested
 * (and the SARIF validated with results in it) independently of what the rules find.
 * Usage: emit-sample FORMAT ITEM...
 *   file=PATH                      start a file (loaded like kernlint loads it)
 *   fail=PATH:REASON               record a file that could not be linted
 *   RULE:SEVERITY:NEEDLE[:RELATED] a finding at every occurrence of NEEDLE in the current file,
 *                                  with a related location at the first occurrence of RELATED
 * Set EMIT_COLOR=1 for coloured text. Exit status: 0, or 2 on bad arguments or input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/report/emit.h"

struct sample_file {
  struct kl_arena *arena;
  struct kl_source src;
  struct kl_diag_list diags;
};

static void sample_flush(struct kl_emitter *e, struct sample_file *f) {
  if (!f->arena) return;
  kl_diag_sort(&f->diags);
  kl_emit_file(e, &f->src, &f->diags);
  kl_arena_delete(f->arena);
  f->arena = NULL;
}

static int sample_diag(struct sample_file *f, char *spec) {
  char *rule = spec, *sev = strchr(rule, ':');
  if (!sev) return -1;
  *sev++ = '\0';
  char *needle = strchr(sev, ':');
  if (!needle) return -1;
  *needle++ = '\0';
  char *related = strchr(needle, ':');
  if (related) *related++ = '\0';
  enum kl_severity s;
  if (kl_diag_severity_parse(sev, &s) != 0 || !needle[0]) return -1;
  const char *text = f->src.text;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) {
    uint32_t start = (uint32_t)(p - text), end = start + (uint32_t)strlen(needle);
    char msg[256];
    snprintf(msg, sizeof msg, "found `%s`", needle);
    for (char *m = msg; *m; m++)
      if (*m == '\n') *m = ' '; /* messages are one line */
    struct kl_diag *d = kl_diag_add(&f->diags, kl_arena_strdup(f->arena, rule), s,
                                    kl_diag_span(&f->src, start, end), msg);
    const char *r = related ? strstr(text, related) : NULL;
    if (r) {
      uint32_t rs = (uint32_t)(r - text);
      snprintf(msg, sizeof msg, "related `%s` here", related);
      kl_diag_relate(&f->diags, d, kl_diag_span(&f->src, rs, rs + (uint32_t)strlen(related)), msg);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  enum kl_format fmt;
  if (argc < 2 || kl_emit_format_parse(argv[1], &fmt) != 0) {
    fprintf(stderr, "usage: emit-sample text|json|sarif|github ITEM...\n");
    return 2;
  }
  const char *color = getenv("EMIT_COLOR");
  struct kl_emitter *e = kl_emit_new(fmt, stdout, color && !strcmp(color, "1"));
  struct sample_file f = {0};
  int rc = 0;
  for (int i = 2; i < argc && rc == 0; i++) {
    char *arg = argv[i];
    if (!strncmp(arg, "file=", 5)) {
      sample_flush(e, &f);
      f.arena = kl_arena_new();
      char err[256];
      if (kl_source_load(f.arena, arg + 5, &f.src, err, sizeof err) != 0) {
        fprintf(stderr, "emit-sample: %s: %s\n", arg + 5, err);
        kl_arena_delete(f.arena);
        f.arena = NULL;
        rc = 2;
        break;
      }
      kl_diag_list_init(&f.diags, f.arena);
    } else if (!strncmp(arg, "fail=", 5)) {
      char *colon = strchr(arg + 5, ':');
      if (!colon) {
        rc = 2;
        break;
      }
      *colon = '\0';
      kl_emit_failure(e, arg + 5, colon + 1);
    } else if (!f.arena || sample_diag(&f, arg) != 0) {
      fprintf(stderr, "emit-sample: bad item '%s'\n", arg);
      rc = 2;
    }
  }
  sample_flush(e, &f);
  if (kl_emit_delete(e) != 0) rc = 2;
  return rc;
}
