/* The registry: every rule, in the order --list-rules and SARIF show them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/config.h"
#include "rules/rule_ids.h"
#include "rules/rules.h"

extern const struct kl_rule kl_rule_bounds_guard;
extern const struct kl_rule kl_rule_threadgroup_size;
extern const struct kl_rule kl_rule_half_accumulator;
extern const struct kl_rule kl_rule_barrier_divergence;
extern const struct kl_rule kl_rule_uncoalesced_access;
extern const struct kl_rule kl_rule_bfloat_target;
extern const struct kl_rule kl_rule_threadgroup_race;
extern const struct kl_rule kl_rule_unused_suppression;
extern const struct kl_rule kl_rule_unresolved_source;

static const struct kl_rule *const kl_registry[] = {
    &kl_rule_bounds_guard,       &kl_rule_threadgroup_size,   &kl_rule_half_accumulator,
    &kl_rule_barrier_divergence, &kl_rule_uncoalesced_access, &kl_rule_bfloat_target,
    &kl_rule_threadgroup_race,   &kl_rule_unused_suppression, &kl_rule_unresolved_source,
};

enum { KL_NRULES = sizeof kl_registry / sizeof kl_registry[0] };
_Static_assert(KL_NRULES <= KL_CONFIG_MAX_RULES, "raise KL_CONFIG_MAX_RULES");
_Static_assert((int)KL_NRULES == (int)KL_RULE_IDS_COUNT, "list the rule in rules/rule_ids.c too");

const struct kl_rule *const *kl_rules_all(size_t *n) {
  *n = KL_NRULES;
  return kl_registry;
}

int kl_rules_index(const char *id) {
  for (size_t i = 0; i < KL_NRULES; i++)
    if (!strcmp(kl_registry[i]->id, id)) return (int)i;
  return -1;
}

const struct kl_rule *kl_rules_find(const char *id) {
  int i = kl_rules_index(id);
  return i < 0 ? NULL : kl_registry[i];
}

enum kl_severity kl_rules_level(const struct kl_settings *s, size_t i) {
  if (i >= KL_NRULES) return KL_SEV_OFF;
  if (s && s->level[i] >= 0) return (enum kl_severity)s->level[i];
  return kl_registry[i]->default_severity;
}

void kl_rules_run(struct kl_arena *a, const struct kl_source *src, const struct kl_unit *unit,
                  const struct kl_model *model, const struct kl_facts *facts,
                  const struct kl_types *types,
                  struct kl_xdefs *xdefs, const struct kl_settings *s,
                  const struct kl_dispatch *dispatches, size_t ndispatches,
                  const struct kl_inst *xinsts, size_t nxinsts, bool family10,
                  struct kl_diag_list *out) {
  for (size_t i = 0; i < KL_NRULES; i++) {
    const struct kl_rule *r = kl_registry[i];
    enum kl_severity sev = kl_rules_level(s, i);
    if (!r->implemented || !r->check || sev == KL_SEV_OFF) continue;
    if (!unit && !r->reads_calls) continue;
    struct kl_rule_ctx ctx = {.arena = a,
                              .src = src,
                              .unit = unit,
                              .model = model,
                              .settings = s,
                              .rule = r,
                              .severity = sev,
                              .out = out,
                              .facts = facts,
                              .types = types,
                              .xdefs = xdefs,
                              .dispatches = dispatches,
                              .ndispatches = ndispatches,
                              .xinsts = xinsts,
                              .nxinsts = nxinsts,
                              .family10_only = family10};
    r->check(&ctx);
  }
}

struct kl_diag *kl_rules_report_span(struct kl_rule_ctx *ctx, struct kl_span span, const char *fmt,
                                     ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kl_diag_add(ctx->out, ctx->rule->id, ctx->severity, span, msg);
}

void kl_rules_relate_span(struct kl_rule_ctx *ctx, struct kl_diag *d, struct kl_span span,
                          const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kl_diag_relate(ctx->out, d, span, msg);
}

void kl_rules_relate_in(struct kl_rule_ctx *ctx, struct kl_diag *d, const char *path,
                        struct kl_span span, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  bool own = !path || (ctx->src->path && !strcmp(path, ctx->src->path));
  kl_diag_relate_in(ctx->out, d, own ? NULL : path, span, msg);
}

bool kl_rules_relate_kernel(struct kl_rule_ctx *ctx, struct kl_diag *d,
                            const struct kl_dispatch *dp, const char *fmt, ...) {
  if (!d || !dp->kernel_file) return false;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kl_rules_relate_in(ctx, d, dp->kernel_file, dp->kernel_at, "%s", msg);
  return true;
}

/* Whether function ki reaches f through same-file calls, at most KL_MODEL_MAX_CALL_DEPTH calls
 * deep. done[i] is the shallowest depth a search from function i failed at: a search from deeper
 * down reaches less, so it is not repeated, and fan-out does not multiply the work per level. */
static bool kl_rules_reaches(const struct kl_model *m, size_t ki, const struct kl_function *f,
                             int depth, uint8_t *done) {
  const struct kl_function *k = &m->functions[ki];
  if (k == f) return true;
  if (depth > KL_MODEL_MAX_CALL_DEPTH || done[ki] <= depth) return false;
  for (size_t i = 0; i < k->ncallees; i++) {
    size_t ci = k->callee_index[i];
    if (ci != ki && kl_rules_reaches(m, ci, f, depth + 1, done)) return true;
  }
  done[ki] = (uint8_t)depth;
  return false;
}

bool kl_rules_launches(const struct kl_rule_ctx *ctx, const struct kl_dispatch *d,
                       const struct kl_function *f) {
  const struct kl_model *m = ctx->model;
  if (!m || !f) return false;
  if (kl_model_names(m, d->kernel, d->kernel_prefix, f)) return true;
  if (f->is_kernel) return false;
  uint8_t *done = NULL; /* shared by every kernel d names: the target f is the same */
  bool reached = false;
  for (size_t i = 0; i < m->nfunctions && !reached; i++) {
    if (!kl_model_names(m, d->kernel, d->kernel_prefix, &m->functions[i])) continue;
    if (!done) {
      done = kl_arena_xmalloc(m->nfunctions);
      memset(done, UINT8_MAX, m->nfunctions);
    }
    reached = kl_rules_reaches(m, i, f, 0, done);
  }
  free(done);
  return reached;
}

struct kl_rules_rec {
  uint32_t start;
  size_t index;
};

static int kl_rules_by_node(const void *a, const void *b) {
  const struct kl_rules_rec *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static int kl_rules_by_first(const void *a, const void *b) {
  const struct kl_rules_group *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* A specialisation label ("N = 2, has_mask = true") split into its bindings. */
struct kl_rules_label {
  const char *key[8];
  const char *val[8];
  size_t n;
};

static void kl_rules_label_parse(struct kl_arena *a, const char *lab, struct kl_rules_label *out) {
  out->n = 0;
  while (lab && *lab && out->n < 8) {
    const char *end = strstr(lab, ", ");
    size_t len = end ? (size_t)(end - lab) : strlen(lab);
    const char *eq = memchr(lab, '=', len);
    if (!eq || eq < lab + 2) break;
    out->key[out->n] = kl_arena_strndup(a, lab, (size_t)(eq - 1 - lab));
    out->val[out->n++] = kl_arena_strndup(a, eq + 2, len - (size_t)(eq + 2 - lab));
    lab = end ? end + 2 : NULL;
  }
}

/* Whether label x equals y except, perhaps, at binding k. */
static bool kl_rules_label_near(const struct kl_rules_label *x, const struct kl_rules_label *y,
                                size_t k) {
  if (x->n != y->n) return false;
  for (size_t i = 0; i < x->n; i++)
    if (strcmp(x->key[i], y->key[i]) || (i != k && strcmp(x->val[i], y->val[i]))) return false;
  return true;
}

/* The specialisations a finding holds for, named by the bindings that matter: a binding is left
 * out when changing it alone, to any value analysed, keeps the finding ("bits = 3", not
 * "group_size = 128, bits = 3 or group_size = 64, bits = 3 or ..."). all[0..nall) are every
 * specialisation analysed; hit[0..nhit) those the finding holds for. */
static const char *kl_rules_where(struct kl_arena *a, const char **hit, size_t nhit,
                                  const char **all, size_t nall) {
  struct kl_rules_label *H = kl_arena_alloc(a, (nhit + 1) * sizeof *H);
  struct kl_rules_label *A = kl_arena_alloc(a, (nall + 1) * sizeof *A);
  for (size_t i = 0; i < nhit; i++) kl_rules_label_parse(a, hit[i], &H[i]);
  for (size_t i = 0; i < nall; i++) kl_rules_label_parse(a, all[i], &A[i]);
  bool drop[8] = {false};
  size_t nk = nhit ? H[0].n : 0;
  for (size_t k = 0; k < nk; k++) {
    /* Dropped only on evidence: some analysed label differs at k alone, and every such label
     * holds the finding too. */
    bool irrelevant = true, seen = false;
    for (size_t i = 0; i < nhit && irrelevant; i++)
      for (size_t j = 0; j < nall && irrelevant; j++) {
        /* Labels of other lengths (`k<6 4>` beside `k<32, 4>`) have no binding k to compare. */
        if (k >= H[i].n || !kl_rules_label_near(&H[i], &A[j], k) ||
            !strcmp(H[i].val[k], A[j].val[k]))
          continue;
        seen = true;
        bool in = false;
        for (size_t q = 0; q < nhit && !in; q++) in = kl_rules_label_near(&H[q], &A[j], nk);
        irrelevant = in;
      }
    drop[k] = irrelevant && seen;
  }
  const char **shown = kl_arena_alloc(a, (nhit + 1) * sizeof *shown);
  size_t nshown = 0;
  for (size_t i = 0; i < nhit; i++) {
    const char *s = "";
    for (size_t k = 0; k < H[i].n; k++)
      if (!drop[k] || H[i].n != nk)
        s = kl_arena_printf(a, "%s%s%s = %s", s, *s ? ", " : "", H[i].key[k],
                            H[i].val[k]);
    bool dup = !*s;
    for (size_t q = 0; q < nshown && !dup; q++) dup = !strcmp(shown[q], s);
    if (!dup) shown[nshown++] = s;
  }
  const char *where = "";
  for (size_t k = 0; k < nshown; k++) {
    if (k == 3) {
      where = kl_arena_printf(a, "%s, and %zu more", where, nshown - 3);
      break;
    }
    where = kl_arena_printf(a, "%s%s%s", where, k ? " or " : "", shown[k]);
  }
  return *where ? kl_arena_printf(a, " (where %s)", where) : "";
}

size_t kl_rules_group_records(struct kl_rule_ctx *ctx, const struct kl_rules_record *r, size_t nr,
                              const bool *flagged, struct kl_rules_group **out) {
  size_t n = 0;
  struct kl_rules_rec *rec = kl_arena_alloc(ctx->arena, (nr + 1) * sizeof *rec);
  for (size_t i = 0; i < nr; i++)
    if (flagged[i]) rec[n++] = (struct kl_rules_rec){ts_node_start_byte(r[i].node), i};
  qsort(rec, n, sizeof *rec, kl_rules_by_node);
  struct kl_rules_group *g = kl_arena_alloc(ctx->arena, (n + 1) * sizeof *g);
  size_t ng = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && rec[j].start == rec[i].start) j++;
    const struct kl_rules_record *x = &r[rec[i].index];
    const char *where = "";
    const char **labs = kl_arena_alloc(ctx->arena, (j - i + 1) * sizeof *labs);
    size_t nlabs = 0;
    for (size_t k = i; k < j; k++) {
      const char *lab = r[rec[k].index].inst;
      bool dup = !lab;
      for (size_t m = 0; m < nlabs && !dup; m++) dup = !strcmp(labs[m], lab);
      if (!dup) labs[nlabs++] = lab;
    }
    /* Named only when the finding does not hold for every specialisation analysed. */
    if (x->inst && nlabs < x->ninsts) {
      const char **all = kl_arena_alloc(ctx->arena, (nr + 1) * sizeof *all);
      size_t nall = 0;
      for (size_t k = 0; k < nr; k++) {
        const struct kl_rules_record *y = &r[k];
        if (y->owner != x->owner || !y->inst) continue;
        bool dup = false;
        for (size_t m = 0; m < nall && !dup; m++) dup = !strcmp(all[m], y->inst);
        if (!dup) all[nall++] = y->inst;
      }
      where = kl_rules_where(ctx->arena, labs, nlabs, all, nall);
    }
    g[ng++] = (struct kl_rules_group){rec[i].index, where, {0}};
    i = j;
  }
  qsort(g, ng, sizeof *g, kl_rules_by_first);
  size_t w = 0;
  for (size_t i = 0; i < ng; i++) {
    const struct kl_rules_record *x = &r[g[i].first];
    g[i].span = kl_diag_span_mapped(ctx->src, &ctx->unit->map, ts_node_start_byte(x->node),
                                    ts_node_end_byte(x->node));
    bool seen = false; /* one report per line */
    for (size_t k = 0; k < w && !seen; k++) seen = g[k].span.line == g[i].span.line;
    if (!seen) g[w++] = g[i];
  }
  *out = g;
  return w;
}

const char *kl_rules_list(struct kl_arena *a, const char *const *names, size_t n, size_t max) {
  const char **u = kl_arena_alloc(a, (n + 1) * sizeof *u);
  size_t nu = 0;
  for (size_t i = 0; i < n; i++) {
    bool dup = !names[i] || !*names[i];
    for (size_t k = 0; k < nu && !dup; k++) dup = !strcmp(u[k], names[i]);
    if (!dup) u[nu++] = names[i];
  }
  if (max < 1) max = 1;
  size_t shown = nu > max ? max : nu;
  const char *s = "";
  for (size_t i = 0; i < shown; i++)
    s = kl_arena_printf(a, "%s%s%s", s, !i ? "" : (i + 1 == shown && nu == shown) ? " and " : ", ",
                        u[i]);
  if (nu > shown) s = kl_arena_printf(a, "%s and %zu more", s, nu - shown);
  return s;
}

const char *kl_rules_kernel(struct kl_arena *a, const struct kl_dispatch *d) {
  return kl_arena_printf(a, "%s%s", d->kernel ? d->kernel : "", d->kernel_prefix ? "*" : "");
}

const char *kl_rules_dispatch_place(struct kl_arena *a, const struct kl_dispatch *d) {
  if (d->local) return kl_arena_printf(a, "the call of `%s` on line %u", kl_rules_kernel(a, d),
                                       d->call.line);
  return kl_arena_printf(a, "the dispatch of `%s` in %s:%u", kl_rules_kernel(a, d), d->path,
                         d->call.line);
}

uint32_t kl_rules_line(const struct kl_rule_ctx *ctx, uint32_t off) {
  uint32_t line, col;
  kl_source_position(ctx->src, kl_offmap_to_file(&ctx->unit->map, off), &line, &col);
  return line;
}

static struct kl_diag *kl_rules_vreport(struct kl_rule_ctx *ctx, uint32_t start, uint32_t end,
                                        const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  struct kl_span sp = kl_diag_span_mapped(ctx->src, &ctx->unit->map, start, end);
  return kl_diag_add(ctx->out, ctx->rule->id, ctx->severity, sp, msg);
}

struct kl_diag *kl_rules_report(struct kl_rule_ctx *ctx, TSNode node, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  struct kl_diag *d =
      kl_rules_vreport(ctx, ts_node_start_byte(node), ts_node_end_byte(node), fmt, ap);
  va_end(ap);
  return d;
}

struct kl_diag *kl_rules_report_range(struct kl_rule_ctx *ctx, uint32_t start, uint32_t end,
                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  struct kl_diag *d = kl_rules_vreport(ctx, start, end, fmt, ap);
  va_end(ap);
  return d;
}

void kl_rules_relate(struct kl_rule_ctx *ctx, struct kl_diag *d, TSNode node, const char *fmt,
                     ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  struct kl_span sp = kl_diag_span_mapped(ctx->src, &ctx->unit->map, ts_node_start_byte(node),
                                          ts_node_end_byte(node));
  kl_diag_relate(ctx->out, d, sp, msg);
}

void kl_rules_relate_range(struct kl_rule_ctx *ctx, struct kl_diag *d, uint32_t start,
                           uint32_t end, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kl_diag_relate(ctx->out, d, kl_diag_span_mapped(ctx->src, &ctx->unit->map, start, end), msg);
}

void kl_rules_relate_call_at(struct kl_rule_ctx *ctx, struct kl_diag *d, TSNode call) {
  if (!ts_node_is_null(call))
    kl_rules_relate(ctx, d, call, "the call whose arguments give the index");
}
