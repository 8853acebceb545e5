/* The rule interface and registry. A rule inspects one parsed unit and its model and reports
 * diagnostics through its context; it never prints and never re-parses. */
#ifndef KL_RULES_H
#define KL_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/passes/affine.h"
#include "analyzer/passes/facts.h"
#include "analyzer/core/model.h"
#include "analyzer/core/types.h"
#include "grammar/dialect.h"

/* The file's settings (analyzer/core/config.h), which rules read through a pointer: config
 * validates .lintrc rule names against this registry, so this header must not include it. */
struct kl_settings;
struct kl_rule_ctx;

struct kl_rule {
  const char *id;
  enum kl_severity default_severity;
  bool implemented;    /* false: listed, documented, but its check comes in a later release */
  const char *summary; /* one line, for --list-rules and SARIF shortDescription */
  const char *what;    /* documentation, ruff style: what it does */
  const char *why;     /* why is this bad */
  const char *example; /* a kernel it flags */
  const char *instead; /* what to write instead */
  void (*check)(struct kl_rule_ctx *ctx); /* NULL for rules reported by the engine itself */
  bool reads_calls; /* check also runs with no unit (a host file, an unreadable Python
                       source): it then reads only ctx->dispatches */
};

/* What a rule sees: one unit, its model, the file's settings, the calls that launch the unit's
 * kernels, and where findings go. unit, model, facts and types are NULL when a reads_calls rule
 * runs over dispatches alone. */
struct kl_rule_ctx {
  struct kl_arena *arena;
  const struct kl_source *src;
  const struct kl_unit *unit;
  const struct kl_model *model;
  const struct kl_settings *settings;
  const struct kl_rule *rule;
  enum kl_severity severity; /* the level this rule runs at for this file */
  struct kl_diag_list *out;
  const struct kl_facts *facts; /* the lowered kernels and the passes' facts over them */
  const struct kl_types *types; /* the unit's type aliases */
  struct kl_xdefs *xdefs; /* the definitions of the headers the unit sees, read on demand */
  const struct kl_dispatch *dispatches; /* launches: from this file (local) or other files */
  size_t ndispatches;
  /* Instantiations other files of the run make of the unit's templates (a header's kernel
   * instantiated by the .metal files including it). */
  const struct kl_inst *xinsts;
  size_t nxinsts;
  bool family10_only; /* a header that only files for Apple GPU family 10 of the run include */
};

struct kl_xdefs;

/* Every registered rule, in listing order; *n receives the count. */
const struct kl_rule *const *kl_rules_all(size_t *n);
/* Rule by id, or NULL. */
const struct kl_rule *kl_rules_find(const char *id);
/* Registry index of a rule id (the key of kl_settings.level), or -1. */
int kl_rules_index(const char *id);
/* Effective level of rule i under s (its default unless configured). */
enum kl_severity kl_rules_level(const struct kl_settings *s, size_t i);
/* Run every enabled, implemented rule over one unit and the dispatches of its kernels,
 * appending to out. With unit NULL (model, facts, types NULL too) only reads_calls rules
 * run. xdefs (may be NULL) finds the definitions of the headers the unit sees. xinsts are the
 * instantiations other files of the run make of the unit's templates;
 * family10 says the unit is a header only files for Apple GPU family 10 include. */
void kl_rules_run(struct kl_arena *a, const struct kl_source *src, const struct kl_unit *unit,
                  const struct kl_model *model, const struct kl_facts *facts,
                  const struct kl_types *types,
                  struct kl_xdefs *xdefs, const struct kl_settings *s,
                  const struct kl_dispatch *dispatches, size_t ndispatches,
                  const struct kl_inst *xinsts, size_t nxinsts, bool family10,
                  struct kl_diag_list *out);
/* Report a finding at a node of the unit's buffer; returns it for kl_rules_relate. */
struct kl_diag *kl_rules_report(struct kl_rule_ctx *ctx, TSNode node, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Report a finding at a buffer byte range. */
struct kl_diag *kl_rules_report_range(struct kl_rule_ctx *ctx, uint32_t start, uint32_t end,
                                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Report a finding at a span of the file itself (a Python call argument, a host expression). */
struct kl_diag *kl_rules_report_span(struct kl_rule_ctx *ctx, struct kl_span span, const char *fmt,
                                     ...) __attribute__((format(printf, 3, 4)));
/* Attach a related location at a span of the file itself. */
void kl_rules_relate_span(struct kl_rule_ctx *ctx, struct kl_diag *d, struct kl_span span,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Attach a related location at a span of the file at path: another file of the run, or the
 * linted file itself (then an ordinary related location). */
void kl_rules_relate_in(struct kl_rule_ctx *ctx, struct kl_diag *d, const char *path,
                        struct kl_span span, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Attach to d (may be NULL) where the kernel dispatch dp launches is defined, when the front end
 * or the run's MSL files told (dp->kernel_file); returns whether it did. */
bool kl_rules_relate_kernel(struct kl_rule_ctx *ctx, struct kl_diag *d,
                            const struct kl_dispatch *dp, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Whether dispatch d launches f: f is the kernel it names (by name or by an instantiation's host
 * name), or a helper that such a kernel calls. */
bool kl_rules_launches(const struct kl_rule_ctx *ctx, const struct kl_dispatch *d,
                       const struct kl_function *f);
/* Names as one message fragment, repeats dropped: "a, b and c", or "a, b, c and 4 more" past
 * max shown; "" for none. Findings that hold for several instantiations name them with it. */
const char *kl_rules_list(struct kl_arena *a, const char *const *names, size_t n, size_t max);
/* The kernel a dispatch names, as messages show it: `axpby_*` for a name built from a prefix. */
const char *kl_rules_kernel(struct kl_arena *a, const struct kl_dispatch *d);
/* Where a dispatch is, for a message: "the call of `k` on line 12" in the linted file, else
 * "the dispatch of `k` in path:12". */
const char *kl_rules_dispatch_place(struct kl_arena *a, const struct kl_dispatch *d);
/* The file line (1-based) that buffer offset off of the unit maps to. */
uint32_t kl_rules_line(const struct kl_rule_ctx *ctx, uint32_t off);

/* Flagged accesses grouped by node: an access is recorded once per specialisation of its
 * kernel, and a finding is one per access. */
struct kl_rules_group {
  size_t first;      /* the first flagged record of the access, in the records' order */
  const char *where; /* " (where N = 2 or N = 4)" when only some specialisations are flagged,
                        else "" */
  struct kl_span span; /* the access in the file */
};
/* What grouping needs of one access record: its node, specialisation label, function and how
 * many specialisations of its kernel were analysed. */
struct kl_rules_record {
  TSNode node;
  const char *inst;
  const struct kl_function *owner;
  uint16_t ninsts;
};
/* Group records r[0, nr) for which flagged[i] is true; returns the groups in the order of their
 * first records, one per line (the first one on it). */
size_t kl_rules_group_records(struct kl_rule_ctx *ctx, const struct kl_rules_record *r, size_t nr,
                              const bool *flagged, struct kl_rules_group **out);
/* Add a related location at buffer range [start, end) of the unit. */
void kl_rules_relate_range(struct kl_rule_ctx *ctx, struct kl_diag *d, uint32_t start,
                           uint32_t end, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Attach a related location (a node of the unit's buffer) to a finding. */
void kl_rules_relate(struct kl_rule_ctx *ctx, struct kl_diag *d, TSNode node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Attach the call that gives a helper's access its context: the kernel's call of the helper
 * (null: none). */
void kl_rules_relate_call_at(struct kl_rule_ctx *ctx, struct kl_diag *d, TSNode call);

#endif
