/* threadgroup-size: a constant threads-per-threadgroup that is not a multiple of the SIMD width
 * or is above the hardware maximum: [[max_total_threads_per_threadgroup(N)]] folded here, and the
 * sizes host calls pass (MLX threadgroup=, PyTorch group_size=, MTL::Size), folded by the Python
 * and host front ends (analyzer/input/dispatch.h), including MLX launches tied to no kernel.
 * A call's finding relates the kernel it launches where the front end or the engine placed it
 * (kl_dispatch.kernel_file: in this file, or in an MSL file of the run for host code).
 *
 * N is folded from its text by the shared evaluator (grammar/consteval.h), with names bound by
 * the file's constants (kl_model_const: `#define`, file-scope `constant constexpr`/`const`
 * declarations, enumerators) and template parameters bound by the file's explicit
 * instantiations. Anything else is unknown and silent. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/consteval.h"
#include "grammar/lex.h"
#include "rules/rules.h"

#define KL_TG_SIMD_WIDTH 32
#define KL_TG_MAX_THREADS 1024

struct kl_tg {
  struct kl_rule_ctx *ctx;
  /* Template bindings for the instantiation being evaluated. */
  const char *const *bind_names;
  const char *const *bind_values;
  size_t nbind;
};

/* The text a name stands for: a template binding of the instantiation being evaluated, then a
 * constant of the file (none when it has two different definitions). */
static const char *kl_tg_lookup(void *ctx, const char *s, size_t n) {
  const struct kl_tg *tg = ctx;
  for (size_t i = 0; i < tg->nbind; i++)
    if (strlen(tg->bind_names[i]) == n && !memcmp(tg->bind_names[i], s, n))
      return tg->bind_values[i];
  return kl_model_const(tg->ctx->model, s, n);
}

/* Fold a size expression with the shared evaluator; *ok is false when any part is unknown. */
static int64_t kl_tg_text(const struct kl_tg *tg, const char *text, bool *ok) {
  struct kl_consteval_env env = {kl_tg_lookup, NULL, NULL, (void *)tg, false};
  int64_t v = 0;
  if (!kl_consteval_eval(text, strlen(text), &env, &v)) *ok = false;
  return v;
}

/* ---- The check ----------------------------------------------------------------------------- */

/* The problem with threads-per-threadgroup n, written as text, or NULL when it is a good size.
 * where names the instantiation or the kernel (or is ""). */
static const char *kl_tg_problem(struct kl_rule_ctx *ctx, int64_t n, const char *text,
                                 const char *where) {
  if (n <= 0) return NULL; /* zero and negative sizes are a compile error, not this rule's */
  char shown[160] = "";
  char num[32];
  snprintf(num, sizeof num, "%lld", (long long)n);
  if (text && strcmp(text, num) && strlen(text) < 100)
    snprintf(shown, sizeof shown, " (`%s`)", text);
  if (n > KL_TG_MAX_THREADS)
    return kl_arena_printf(ctx->arena,
                           "threadgroup size %lld%s%s is above the %d-thread maximum of Apple "
                           "GPUs; use %d or less",
                           (long long)n, shown, where, KL_TG_MAX_THREADS, KL_TG_MAX_THREADS);
  if (n % KL_TG_SIMD_WIDTH) {
    long long up = (n + KL_TG_SIMD_WIDTH - 1) / KL_TG_SIMD_WIDTH * KL_TG_SIMD_WIDTH;
    return kl_arena_printf(ctx->arena,
                           "threadgroup size %lld%s%s is not a multiple of the SIMD width %d: "
                           "the last SIMD group runs with %lld idle lanes; use %lld",
                           (long long)n, shown, where, KL_TG_SIMD_WIDTH,
                           (long long)(KL_TG_SIMD_WIDTH - n % KL_TG_SIMD_WIDTH), up);
  }
  return NULL;
}

/* Report n at the attribute's size expression if it is a bad size. */
static struct kl_diag *kl_tg_judge(struct kl_tg *tg, const struct kl_attr *a, int64_t n,
                                   const char *where) {
  struct kl_rule_ctx *ctx = tg->ctx;
  const char *msg =
      kl_tg_problem(ctx, n, kl_dialect_node_text(ctx->arena, ctx->unit, a->arg_node), where);
  return msg ? kl_rules_report(ctx, a->arg_node, "%s", msg) : NULL;
}

static bool kl_tg_mentions(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = text; (p = strstr(p, name)) != NULL; p += n) {
    bool before = p > text && kl_lex_ident_char(p[-1]);
    if (!before && !kl_lex_ident_char(p[n])) return true;
  }
  return false;
}

/* A size that depends on template parameters is judged once per distinct value the file's
 * explicit instantiations give it, naming the first instantiation with that value. */
static void kl_tg_instances(struct kl_tg *tg, const struct kl_function *f, const struct kl_attr *a,
                            const char *text) {
  const struct kl_model *m = tg->ctx->model;
  int64_t *seen = kl_arena_alloc(tg->ctx->arena, (m->ninstances + 1) * sizeof *seen);
  size_t nseen = 0;
  for (size_t i = 0; i < m->ninstances; i++) {
    const struct kl_instance *in = &m->instances[i];
    if (strcmp(in->function, f->name)) continue;
    size_t nb = in->ntargs < f->ntparams ? in->ntargs : f->ntparams;
    tg->bind_names = f->tparams;
    tg->bind_values = in->targs;
    tg->nbind = nb;
    bool ok = true;
    int64_t v = kl_tg_text(tg, text, &ok);
    tg->nbind = 0;
    if (!ok) continue;
    bool dup = false;
    for (size_t j = 0; j < nseen && !dup; j++) dup = seen[j] == v;
    if (dup) continue;
    seen[nseen++] = v;
    char where[200];
    if (in->host_name)
      snprintf(where, sizeof where, " in instantiation `%s`", in->host_name);
    else
      snprintf(where, sizeof where, " in an instantiation of `%s`", f->name);
    struct kl_diag *d = kl_tg_judge(tg, a, v, where);
    if (d)
      kl_rules_relate_range(tg->ctx, d, in->start, in->end, "the instantiation that gives it %lld",
                            (long long)v);
  }
}

/* The kernel d launches, when the unit defines it under its name (a PyTorch library's source);
 * NULL otherwise. */
static const struct kl_function *kl_tg_own_kernel(const struct kl_rule_ctx *ctx,
                                                  const struct kl_dispatch *d) {
  for (size_t k = 0; d->kernel && ctx->model && k < ctx->model->nfunctions; k++) {
    const struct kl_function *f = &ctx->model->functions[k];
    if (f->is_kernel && !kl_node_null(f->name_node) &&
        kl_model_names(ctx->model, d->kernel, d->kernel_prefix, f))
      return f;
  }
  return NULL;
}

/* A finding at a call's threadgroup size points to the kernel it launches, where that is known:
 * in another file of the run (host code launching an MSL kernel), at the call that makes an MLX
 * kernel object, or in the unit itself. what says what the kernel is to the finding. */
static void kl_tg_relate(struct kl_rule_ctx *ctx, struct kl_diag *g, const struct kl_dispatch *d,
                         const char *what) {
  if (!g) return;
  /* A launch tied to no kernel object names what its callable holds (`k`, an alias of one). */
  const char *name = d->kernel ? kl_arena_printf(ctx->arena, "`%s`", kl_rules_kernel(ctx->arena, d))
                               : d->kernel_shown;
  if (!name || kl_rules_relate_kernel(ctx, g, d, "the kernel %s%s", name, what)) return;
  const struct kl_function *f = kl_tg_own_kernel(ctx, d);
  if (f) kl_rules_relate(ctx, g, f->name_node, "the kernel %s%s", name, what);
}

/* Sizes the calls of this file pass: MLX threadgroup=, PyTorch group_size=, host MTL::Size. */
static void kl_tg_calls(struct kl_rule_ctx *ctx) {
  uint32_t *seen = kl_arena_alloc(ctx->arena, (ctx->ndispatches + 1) * sizeof *seen);
  size_t nseen = 0;
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    if (!d->local || !d->tg_present) continue;
    /* Several calls can share one size expression (the old MLX API sets it once). */
    bool dup = false;
    for (size_t k = 0; k < nseen && !dup; k++) dup = seen[k] == d->tg_span.start;
    if (dup) continue;
    seen[nseen++] = d->tg_span.start;
    const char *where =
        d->kernel         ? kl_arena_printf(ctx->arena, " for `%s`", kl_rules_kernel(ctx->arena, d))
        : d->kernel_shown ? kl_arena_printf(ctx->arena, " for %s", d->kernel_shown)
                          : "";
    if (d->tg_known) {
      /* A whole grid that fits in one threadgroup idles the same lanes whatever the size; so
       * does a launch of one threadgroup, whose size is the work it was given (one thread for
       * a serial step, 100 for 100 items: 128 would add 28 threads with nothing to do). */
      bool fits = (d->grid_known || d->grid_one_group) && d->tg_total <= KL_TG_MAX_THREADS;
      for (int k = 0; k < 3 && fits && d->grid_known; k++) fits = d->grid_size[k] <= d->tg_size[k];
      if (fits) continue;
      /* So does a whole grid of at most one SIMD group's threads (a unit test's 4 elements in
       * groups of 2): lanes idle whatever the size, and there is no work to lose. */
      int64_t threads = d->grid_known && d->tg_total <= KL_TG_MAX_THREADS ? 1 : 0;
      for (int k = 0; k < 3 && threads && threads <= KL_TG_SIMD_WIDTH; k++)
        threads = d->grid_size[k] > 0 && d->grid_size[k] <= KL_TG_SIMD_WIDTH
                      ? threads * d->grid_size[k]
                      : 0;
      if (threads && threads <= KL_TG_SIMD_WIDTH) continue;
      const char *msg = kl_tg_problem(ctx, d->tg_total, d->tg_text, where);
      if (msg)
        kl_tg_relate(ctx, kl_rules_report_span(ctx, d->tg_span, "%s", msg), d, " is defined here");
      continue;
    }
    if (d->tg_grid) {
      struct kl_diag *g = kl_rules_report_span(
          ctx, d->tg_span,
          "threadgroup size `%s`%s is not a constant and is sized like the grid: "
          "it can exceed 1024 threads and fail the dispatch; the arguments are "
          "the grid, then the threadgroup",
          d->tg_text, where);
      kl_tg_relate(ctx, g, d, " is defined here");
      continue;
    }
    if (d->tg_max) {
      const char *msg = d->tg_max < 0 ? "multiplies data sizes with no bound"
                                      : kl_arena_printf(ctx->arena, "can reach %lld threads",
                                                        (long long)d->tg_max);
      struct kl_diag *g =
          kl_rules_report_span(ctx, d->tg_span,
                               "threadgroup size `%s`%s %s: above 1024 threads the pipeline "
                               "cannot run it and the dispatch fails; clamp the product to "
                               "1024 or loop over the rest inside the kernel",
                               d->tg_text, where, msg);
      kl_tg_relate(ctx, g, d, " is defined here");
      continue;
    }
    /* A clamp that is then rounded to whole SIMD groups is fine. */
    if (!d->tg_clamped || d->tg_granule % KL_TG_SIMD_WIDTH == 0) continue;
    /* The kernel is in this unit, or (host code) in an MSL file of the run. */
    const struct kl_function *f = NULL;
    const char *red = d->reduces;
    for (size_t k = 0; !red && ctx->model && k < ctx->model->nfunctions; k++) {
      f = &ctx->model->functions[k];
      if (f->is_kernel && kl_rules_launches(ctx, d, f))
        red = kl_model_simd_reduction(ctx->arena, ctx->model, f);
    }
    if (!red) continue;
    struct kl_diag *g = kl_rules_report_span(
        ctx, d->tg_span,
        "threadgroup size `%s` is clamped to a runtime value, and `%s` reduces with `%s`: when "
        "the clamp is not a multiple of 32 the last SIMD group is partial and the reduction "
        "reads lanes that do not exist; round the clamp down to a multiple of 32",
        d->tg_text, kl_rules_kernel(ctx->arena, d), red);
    /* The kernel where the front end or the run's MSL files placed it, else the unit's. */
    const char *uses = kl_arena_printf(ctx->arena, ", which uses `%s`", red);
    if (!kl_rules_relate_kernel(ctx, g, d, "the kernel `%s`%s", kl_rules_kernel(ctx->arena, d),
                                uses) &&
        f && !d->reduces)
      kl_rules_relate(ctx, g, f->name_node, "the kernel that uses `%s`", red);
  }
}

static void kl_tg_check(struct kl_rule_ctx *ctx) {
  kl_tg_calls(ctx);
  if (!ctx->unit) return;
  const struct kl_model *m = ctx->model;
  struct kl_tg tg = {0};
  tg.ctx = ctx;
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *f = &m->functions[i];
    for (size_t j = 0; j < f->nattrs; j++) {
      const struct kl_attr *a = &f->attrs[j];
      if (strcmp(a->name, "max_total_threads_per_threadgroup") || kl_node_null(a->arg_node))
        continue;
      char *text = kl_dialect_node_text(ctx->arena, ctx->unit, a->arg_node);
      bool templated = false;
      for (size_t k = 0; k < f->ntparams && !templated; k++)
        templated = kl_tg_mentions(text, f->tparams[k]);
      if (templated) {
        kl_tg_instances(&tg, f, a, text);
        continue;
      }
      bool ok = true;
      int64_t v = kl_tg_text(&tg, text, &ok);
      if (ok) kl_tg_judge(&tg, a, v, "");
    }
  }
}

const struct kl_rule kl_rule_threadgroup_size = {
    .id = "threadgroup-size",
    .default_severity = KL_SEV_WARNING,
    .implemented = true,
    .summary = "Threads per threadgroup not a multiple of 32, or above 1024",
    .what =
        "Reports a constant threadgroup size that is not a multiple of the SIMD width (32 on "
        "every Apple GPU) or is above the 1024-thread maximum. It reads "
        "`[[max_total_threads_per_threadgroup(N)]]` on a kernel, folded from literals, "
        "arithmetic (`32 * 8`, `1 << 10`), `#define`s, file-scope `constant constexpr` and "
        "`const` values, enumerators, and template parameters bound by the file's explicit "
        "instantiations (each distinct bad value is reported once, naming an instantiation). It "
        "also reads the sizes host code passes: MLX `threadgroup=`, PyTorch `group_size=`, and "
        "the `MTL::Size` / `MTLSizeMake` threadgroup argument of `dispatchThreads` and "
        "`dispatchThreadgroups` in metal-cpp and Objective-C, folded through the names of the "
        "module or function (`tg = 256`, `#define TG 100`, `constexpr int kRows = 3`). An "
        "MLX launch whose kernel cannot be tied to one kernel object (`k = ka if c else kb`, "
        "`self._kernels[key](...)`, a getter, a kernel from another module) is checked from "
        "what the call itself writes, when it reads as one (`grid=` and `threadgroup=` with "
        "`inputs=`, `output_shapes=` or `output_dtypes=`), naming its candidate kernels when "
        "they are known. A call whose constant grid of threads fits in one threadgroup "
        "(`grid=(1, 1, 1)`, `threadgroup=(1, 1, 1)`), a host `dispatchThreadgroups` of one "
        "threadgroup (`MTLSizeMake(1, 1, 1)` groups: the whole launch is that group, sized to its "
        "work, such as one thread for a serial step), or a grid of at most 32 threads in all, is "
        "not "
        "reported: no size would idle fewer lanes, or there is no work to lose. A size "
        "clamped to a runtime value (`nth = MIN(nth, ne00)`, `group_size=min(32, n)`) is "
        "reported when the kernel reduces with `simd_*` (in the same file, or in an MSL file of "
        "the same run), unless the clamp is rounded to a multiple of 32 (`MIN(nth, n) / 32 * "
        "32`); a pipeline's own limit is a multiple of 32, so clamping to it a size that is "
        "one (`std::min(nth, p->maxTotalThreadsPerThreadgroup())`, nth doubled from 32 in a "
        "loop) keeps whole SIMD groups and is not reported. A size "
        "of several runtime dimensions is reported when their product can pass 1024: two or "
        "more unclamped tensor dimensions (`MTLSizeMake(N, KH, KW)` of `src->ne[k]`, `x.shape[1]`, "
        "`x.shape(0)`), or clamps whose bounds multiply past it (`(min(w, 64), min(h, 32), "
        "1)`). A host threadgroup that reads as the grid, the two arguments swapped, is "
        "reported too: what the grid argument clamps, a count rounded up to whole groups of the "
        "grid argument's constant size, or that count of groups itself "
        "(`dispatch_threadgroups(group_dims, grid_dims)` with 1024 and `(n + 1023) / 1024`). "
        "A size the analyzer cannot fold is not reported. Reported at the size expression, "
        "with the kernel the call launches as a related location where it is known: the "
        "`name=` of the call that makes an MLX kernel object, the kernel in a PyTorch "
        "library's source, or for host code its definition in an MSL file of the same run "
        "(a note at `im2col.metal:12:13` after the finding in `encode.mm`); linted without "
        "that file, a host call names its kernel in the message only.",
    .why = "Threads run in SIMD groups of 32. A threadgroup of 100 threads runs as four SIMD "
           "groups, the last with 28 idle lanes, so an eighth of that group's issue slots do no "
           "work, and `simd_sum`-style reductions that assume full groups read lanes that do not "
           "exist. No Apple GPU runs more than 1024 threads per threadgroup: a larger size is "
           "rejected when the pipeline is built or makes the dispatch invalid, an error that shows "
           "up only at run time.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "[[max_total_threads_per_threadgroup(100)]]\n"
               "kernel void add_one(device float* x [[buffer(0)]],\n"
               "                    uint i [[thread_position_in_grid]]) {\n"
               "  x[i] += 1.0f;\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "[[max_total_threads_per_threadgroup(128)]]\n"
               "kernel void add_one(device float* x [[buffer(0)]],\n"
               "                    uint i [[thread_position_in_grid]]) {\n"
               "  x[i] += 1.0f;\n"
               "}\n",
    .check = kl_tg_check,
    .reads_calls = true,
};
