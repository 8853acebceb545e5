/* Running the IR passes over a unit, and the questions rules ask of their results. */
#include "analyzer/passes/facts.h"

#include <stdlib.h>
#include <string.h>

static int kl_facts_cmp(const void *x, const void *y) {
  uint32_t a = ((const struct kl_facts_barrier *)x)->at,
           b = ((const struct kl_facts_barrier *)y)->at;
  return (a > b) - (a < b);
}

/* The threadgroup size every launch of kernel k agrees on, per dimension (0 where a launch
 * leaves it unknown or two launches differ); false when no launch of k is seen. */
static bool kl_facts_launch(const struct kl_model *m, const struct kl_function *k,
                            const struct kl_dispatch *calls, size_t ncalls,
                            struct kl_uniformity_launch *out) {
  bool seen = false;
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < ncalls; i++) {
    const struct kl_dispatch *d = &calls[i];
    if (!d->kernel || !kl_model_names(m, d->kernel, d->kernel_prefix, k)) continue;
    for (int c = 0; c < 3; c++) {
      int64_t v = d->tg_present && !d->tg_clamped && (d->tg_dims & (1u << c)) ? d->tg_size[c] : 0;
      /* A grid of threads that is not whole threadgroups along c ends in a narrower group: its
       * size along c is then not the same in every threadgroup. */
      if (v > 1 && !d->grid_groups && !(d->grid_multiple[c] > 0 && d->grid_multiple[c] % v == 0))
        v = 0;
      if (!seen)
        out->tg[c] = v;
      else if (out->tg[c] != v)
        out->tg[c] = 0;
    }
    seen = true;
  }
  return seen;
}

/* The kernel's [[max_total_threads_per_threadgroup(N)]] when N is a number or a file-scope
 * constant of one, else 0. */
static int64_t kl_facts_max_total(const struct kl_model *m, const struct kl_function *k) {
  const struct kl_attr *at = kl_model_attr(k, "max_total_threads_per_threadgroup");
  const char *t = at ? at->arg : NULL;
  for (int depth = 0; t && depth < 4; depth++) {
    char *end;
    long long v = strtoll(t, &end, 0);
    while (*end == 'u' || *end == 'U' || *end == ' ') end++;
    if (end != t && !*end) return v > 0 ? v : 0;
    t = kl_model_const(m, t, strlen(t));
  }
  return 0;
}

/* What the lowering of one unit is run with, and where the answers go. */
struct kl_facts_run {
  struct kl_arena *a;
  const struct kl_model *m;
  const struct kl_dispatch *calls;
  size_t ncalls;
  struct kl_facts *out;
  size_t cap_barriers;
};

/* One kernel in one specialisation, alive only in this call: run the passes over it and keep
 * what the rules will ask, in the unit's arena. */
static void kl_facts_take(void *ctx, struct kl_ir_fn *fn) {
  struct kl_facts_run *r = ctx;
  struct kl_facts *out = r->out;
  struct kl_uniformity_launch launch;
  bool known = fn->kernel && kl_facts_launch(r->m, fn->kernel, r->calls, r->ncalls, &launch);
  if (!known) memset(&launch, 0, sizeof launch);
  launch.max_total = fn->kernel ? kl_facts_max_total(r->m, fn->kernel) : 0;
  known |= launch.max_total > 0;
  struct kl_scev *sc = kl_scev_run(fn->arena, fn);
  struct kl_uniformity *u = kl_uniformity_compute_scev(fn, known ? &launch : NULL, sc);
  out->nfns++;
  for (uint32_t v = 1; v < fn->nins; v++) {
    if (fn->ins[v].op != KL_IR_BARRIER) continue;
    KL_VEC_PUSH(r->a, out->barriers, out->nbarriers, r->cap_barriers);
    out->barriers[out->nbarriers].at = ts_node_start_byte(fn->ins[v].node);
    out->barriers[out->nbarriers++].divergent = kl_uniformity_barrier_divergent(u, v);
  }
}

void kl_facts_compute(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                      size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                      const struct kl_settings *s, struct kl_facts *out) {
  memset(out, 0, sizeof *out);
  struct kl_facts_run run = {a, m, calls, ncalls, out, 0};
  kl_ir_lower_each(m, calls, ncalls, xinsts, nxinsts, s, kl_facts_take, &run);
  struct kl_facts_barrier *bs = out->barriers;
  size_t n = out->nbarriers;
  if (n) qsort(bs, n, sizeof *bs, kl_facts_cmp);
  /* One entry per call: divergent when any lowering says so. */
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    if (w && bs[w - 1].at == bs[i].at)
      bs[w - 1].divergent |= bs[i].divergent;
    else
      bs[w++] = bs[i];
  }
  out->nbarriers = w;
}

bool kl_facts_barrier(const struct kl_facts *f, uint32_t at, bool *divergent) {
  size_t lo = 0, hi = f->nbarriers;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->barriers[mid].at < at)
      lo = mid + 1;
    else
      hi = mid;
  }
  bool held = lo < f->nbarriers && f->barriers[lo].at == at;
  *divergent = held && f->barriers[lo].divergent;
  return held;
}
