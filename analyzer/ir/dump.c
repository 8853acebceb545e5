/* `kernlint --dump-ir`: lint each file through the engine with a tap that lowers and prints
 * every unit instead of analysing it. */
#include "analyzer/ir/dump.h"

#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/engine.h"
#include "analyzer/ir/ir.h"
#include "analyzer/ir/lower.h"
#include "analyzer/input/source.h"

struct kl_dump {
  FILE *out;
  const char *path;
};

static void kl_dump_unit(void *ctx, struct kl_arena *a, const struct kl_model *m,
                         const struct kl_dispatch *calls, size_t ncalls,
                         const struct kl_inst *xinsts, size_t nxinsts,
                         const struct kl_settings *s) {
  struct kl_dump *d = ctx;
  struct kl_ir_module mod;
  kl_ir_lower(a, m, calls, ncalls, xinsts, nxinsts, s, &mod);
  for (size_t i = 0; i < mod.nfns; i++) kl_ir_print(mod.fns[i], m->unit->buf, d->out);
}

int kl_ir_dump_main(int n, char **paths, FILE *out) {
  int rc = 0;
  struct kl_settings s;
  kl_config_defaults(&s);
  for (int i = 0; i < n; i++) {
    struct kl_arena *a = kl_arena_new();
    struct kl_source src;
    char err[256] = "";
    struct kl_dump d = {out, paths[i]};
    if (kl_source_load(a, paths[i], &src, err, sizeof err) != 0) {
      fprintf(stderr, "kernlint: %s: %s\n", paths[i], err);
      rc = 2;
      kl_arena_delete(a);
      continue;
    }
    fprintf(out, "; %s\n", paths[i]);
    struct kl_diag_list diags;
    kl_diag_list_init(&diags, a);
    kl_engine_set_unit_tap(kl_dump_unit, &d);
    if (kl_engine_lint(a, &src, &s, NULL, &diags, err, sizeof err) != 0) {
      fprintf(stderr, "kernlint: %s: %s\n", paths[i], err);
      rc = 2;
    }
    kl_engine_set_unit_tap(NULL, NULL);
    fflush(out);
    kl_arena_delete(a);
  }
  return rc;
}
