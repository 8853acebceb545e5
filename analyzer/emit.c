/* STUB: replaced by the text, JSON and SARIF emitters. */
#include "analyzer/emit.h"

#include <stdlib.h>
#include <string.h>

struct kl_emitter {
  FILE *out;
};

int kl_emit_format_parse(const char *name, enum kl_format *out) {
  if (!strcmp(name, "text")) *out = KL_FORMAT_TEXT;
  else if (!strcmp(name, "json")) *out = KL_FORMAT_JSON;
  else if (!strcmp(name, "sarif")) *out = KL_FORMAT_SARIF;
  else return -1;
  return 0;
}
struct kl_emitter *kl_emit_new(enum kl_format fmt, FILE *out, bool color) {
  struct kl_emitter *e = calloc(1, sizeof *e);
  e->out = out;
  return e;
}
void kl_emit_file(struct kl_emitter *e, const struct kl_source *src,
                  const struct kl_diag_list *diags) {
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    fprintf(e->out, "%s:%u:%u: %s: %s [%s]\n", src->path, d->span.line, d->span.col,
            kl_diag_severity_name(d->severity), d->message, d->rule_id);
  }
}
void kl_emit_failure(struct kl_emitter *e, const char *path, const char *reason) {}
int kl_emit_delete(struct kl_emitter *e) {
  free(e);
  return 0;
}
