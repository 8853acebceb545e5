/* STUB CLI: replaced by the full command line. */
#include <stdio.h>

#include "analyzer/emit.h"
#include "analyzer/engine.h"

int main(int argc, char **argv) {
  int status = 0;
  struct kl_settings s;
  kl_config_defaults(&s);
  struct kl_emitter *e = kl_emit_new(KL_FORMAT_TEXT, stdout, false);
  for (int i = 1; i < argc; i++) {
    struct kl_arena *a = kl_arena_new();
    struct kl_source src;
    char err[512];
    struct kl_diag_list diags;
    kl_diag_list_init(&diags, a);
    if (kl_source_load(a, argv[i], &src, err, sizeof err) != 0 ||
        kl_engine_lint(a, &src, &s, &diags, err, sizeof err) != 0) {
      fprintf(stderr, "kernlint: %s: %s\n", argv[i], err);
      status = 2;
    } else {
      kl_emit_file(e, &src, &diags);
      if (diags.n && status == 0) status = 1;
    }
    kl_arena_delete(a);
  }
  kl_emit_delete(e);
  return status;
}
