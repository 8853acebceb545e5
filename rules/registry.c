/* The registry: every rule, in the order --list-rules and SARIF show them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rules/rules.h"

extern const struct kl_rule kl_rule_bounds_guard;
extern const struct kl_rule kl_rule_threadgroup_size;
extern const struct kl_rule kl_rule_half_accumulator;
extern const struct kl_rule kl_rule_barrier_divergence;
extern const struct kl_rule kl_rule_uncoalesced_access;
extern const struct kl_rule kl_rule_bfloat_target;
extern const struct kl_rule kl_rule_unused_suppression;

static const struct kl_rule *const kl_registry[] = {
    &kl_rule_bounds_guard,        &kl_rule_threadgroup_size, &kl_rule_half_accumulator,
    &kl_rule_barrier_divergence,  &kl_rule_uncoalesced_access, &kl_rule_bfloat_target,
    &kl_rule_unused_suppression,
};

enum { KL_NRULES = sizeof kl_registry / sizeof kl_registry[0] };
_Static_assert(KL_NRULES <= KL_CONFIG_MAX_RULES, "raise KL_CONFIG_MAX_RULES");

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
                  const struct kl_model *model, const struct kl_flow *flow,
                  const struct kl_types *types, const struct kl_settings *s,
                  struct kl_diag_list *out) {
  for (size_t i = 0; i < KL_NRULES; i++) {
    const struct kl_rule *r = kl_registry[i];
    enum kl_severity sev = kl_rules_level(s, i);
    if (!r->implemented || !r->check || sev == KL_SEV_OFF) continue;
    struct kl_rule_ctx ctx = {a, src, unit, model, s, r, sev, out, flow, types};
    r->check(&ctx);
  }
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
