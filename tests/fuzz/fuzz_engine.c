/* libFuzzer harness over the whole per-file engine: source checks, preprocessing, parsing, the
 * model, flow facts, every rule, suppressions and sorting, for MSL, Python and host files; then
 * the same file again through the IR lowering and its printer (--dump-ir's path).
 *
 * Input: one control byte, then the file's bytes. Control bits 0-1 pick the path, and so the
 * language (.metal, MSL header .h, .py, .mm); bit 2 sets assume-rounded-grid; bits 3-5 pick the
 * target; bit 6 sets metal-version 3.1; bit 7 turns every rule up to note, so rules that are off
 * by default run too. The path lies in a folder that does not exist, so `#include "x.h"` never
 * reaches a real file. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/engine.h"
#include "analyzer/ir/ir.h"
#include "analyzer/ir/lower.h"
#include "analyzer/input/source.h"
#include "grammar/msl.h"
#include "rules/rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lower every unit and print it where nothing reads it. */
static void kl_fuzz_ir(void *ctx, struct kl_arena *a, const struct kl_model *m,
                       const struct kl_dispatch *calls, size_t ncalls,
                       const struct kl_inst *xinsts, size_t nxinsts,
                       const struct kl_settings *s) {
  struct kl_ir_module mod;
  kl_ir_lower(a, m, calls, ncalls, xinsts, nxinsts, s, &mod);
  for (size_t i = 0; i < mod.nfns; i++) kl_ir_print(mod.fns[i], m->unit->buf, ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const paths[] = {"/nonexistent/kl-fuzz/k.metal", "/nonexistent/kl-fuzz/k.h",
                                      "/nonexistent/kl-fuzz/k.py", "/nonexistent/kl-fuzz/k.mm"};
  if (size < 1) return 0;
  unsigned ctl = data[0];
  struct kl_settings s;
  kl_config_defaults(&s);
  size_t nfam;
  const struct kl_msl_family *fams = kl_msl_families(&nfam);
  if (nfam) {
    s.target = fams[(ctl >> 3 & 7) % nfam].name;
    s.apple_family = fams[(ctl >> 3 & 7) % nfam].apple;
  }
  s.assume_rounded_grid = ctl & 4;
  s.metal_version = ctl & 64 ? 310 : 0;
  if (ctl & 128) {
    size_t nrules;
    kl_rules_all(&nrules);
    for (size_t i = 0; i < nrules && i < KL_CONFIG_MAX_RULES; i++) s.level[i] = KL_SEV_NOTE;
  }

  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_diag_list diags;
  kl_diag_list_init(&diags, a);
  char err[512];
  if (kl_source_from_memory(a, paths[ctl & 3], (const char *)data + 1, size - 1, &src, err,
                            sizeof err) == 0) {
    /* As main.c does for a file named on the command line. */
    if (src.lang == KL_LANG_UNKNOWN) src.lang = KL_LANG_METAL;
    kl_engine_lint(a, &src, &s, NULL, &diags, err, sizeof err);
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    if (sink) {
      kl_engine_set_unit_tap(kl_fuzz_ir, sink);
      kl_engine_lint(a, &src, &s, NULL, &diags, err, sizeof err);
      kl_engine_set_unit_tap(NULL, NULL);
    }
  }
  kl_arena_delete(a);
  return 0;
}
