/* Developer tool: lower each file's kernels (as `kernlint --dump-ir` does) and print, for every
 * load and store through an index, the buffer, the element offset's affine form, and whether the
 * index is bounded above where it is used (kl_ranges_parts_bounded) and by which line.
 * Usage: dump-ranges FILE... */
#include <stdio.h>
#include <string.h>

#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/engine.h"
#include "analyzer/ir/lower.h"
#include "analyzer/passes/ranges.h"
#include "analyzer/passes/scev.h"
#include "analyzer/input/source.h"

static uint32_t kl_line(TSNode n) {
  return ts_node_is_null(n) ? 0 : ts_node_start_point(n).row + 1;
}

static void kl_print_form(struct kl_affine a, const struct kl_scev *s) {
  if (!a.known) {
    printf("?");
    return;
  }
  if (a.c0_symbolic)
    printf("S");
  else
    printf("%lld", (long long)a.c0);
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(s, a.t[i].atom);
    const char *nm = !at ? "?" : at->kind == KL_SCEV_COORD && at->coord ? at->coord->name : "rec";
    if (a.t[i].symbolic)
      printf(" + S*%s", nm);
    else
      printf(" + %lld*%s", (long long)a.t[i].k, nm);
    if (at && at->kind == KL_SCEV_COORD) printf(".%d", at->comp);
    if (at && at->kind == KL_SCEV_REC) printf("@%u", kl_line(s->f->ins[at->loop].node));
  }
}

static void kl_unit(void *ctx, struct kl_arena *a, const struct kl_model *m,
                    const struct kl_dispatch *calls, size_t ncalls,
                    const struct kl_inst *xinsts, size_t nxinsts,
                    const struct kl_settings *st) {
  (void)ctx;
  struct kl_ir_module mod;
  kl_ir_lower(a, m, calls, ncalls, xinsts, nxinsts, st, &mod);
  for (size_t i = 0; i < mod.nfns; i++) {
    const struct kl_ir_fn *f = mod.fns[i];
    struct kl_scev *s = kl_scev_run(a, f);
    struct kl_ranges *r = kl_ranges_run(a, f, s, NULL);
    printf("kernel %s%s%s\n", f->kernel && f->kernel->name ? f->kernel->name : "?",
           f->inst ? " " : "", f->inst ? f->inst : "");
    for (uint32_t v = 1; v < f->nins; v++) {
      const struct kl_ir_ins *in = &f->ins[v];
      if ((in->op != KL_IR_LOAD && in->op != KL_IR_STORE) || !in->nops) continue;
      uint32_t addr = in->ops[0];
      if (f->ins[addr].op != KL_IR_INDEX || f->ins[addr].nops < 2) continue;
      uint32_t root, by = 0;
      struct kl_affine off;
      if (!kl_scev_address(s, addr, &root, &off)) continue;
      const struct kl_ir_ins *ri = &f->ins[root];
      bool bounded = kl_ranges_address_bounded(r, addr, v, &by);
      struct kl_range rg = kl_ranges_at(r, f->ins[addr].ops[1], v);
      printf("  %u: %s %s[", kl_line(in->node), in->op == KL_IR_LOAD ? "load" : "store",
             ri->var && ri->var->name ? ri->var->name : "?");
      kl_print_form(off, s);
      printf("] %s", bounded ? "bounded" : "unbounded");
      if (bounded) printf(" by %u", kl_line(f->ins[by].node));
      printf(" range [%lld, %lld]\n", (long long)rg.lo, (long long)rg.hi);
    }
  }
}

int main(int argc, char **argv) {
  int rc = 0;
  struct kl_settings s;
  kl_config_defaults(&s);
  for (int i = 1; i < argc; i++) {
    struct kl_arena *a = kl_arena_new();
    struct kl_source src;
    char err[256] = "";
    if (kl_source_load(a, argv[i], &src, err, sizeof err) != 0) {
      fprintf(stderr, "dump-ranges: %s: %s\n", argv[i], err);
      rc = 2;
      kl_arena_delete(a);
      continue;
    }
    printf("; %s\n", argv[i]);
    struct kl_diag_list diags;
    kl_diag_list_init(&diags, a);
    kl_engine_set_unit_tap(kl_unit, NULL);
    if (kl_engine_lint(a, &src, &s, NULL, &diags, err, sizeof err) != 0) {
      fprintf(stderr, "dump-ranges: %s: %s\n", argv[i], err);
      rc = 2;
    }
    kl_engine_set_unit_tap(NULL, NULL);
    kl_arena_delete(a);
  }
  return rc;
}
