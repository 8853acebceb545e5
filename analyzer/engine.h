/* The engine: one file from source text to sorted, suppression-filtered diagnostics. */
#ifndef KL_ENGINE_H
#define KL_ENGINE_H

#include <pthread.h>
#include <stddef.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/core/model.h"
#include "analyzer/input/source.h"
#include "grammar/dialect.h"

/* Lint a loaded source under settings s, appending to out. host holds the dispatches that other
 * files of the run (C++/Objective-C host code) make, matched to an MSL file's kernels by name;
 * it may be NULL. Returns -1 with a one-line reason in err when the file cannot be analysed (too
 * deeply nested, parser timeout). */
int kl_engine_lint(struct kl_arena *a, const struct kl_source *src, const struct kl_settings *s,
                   const struct kl_dispatch_list *host, struct kl_diag_list *out, char *err,
                   size_t errlen);

/* kl_engine_lint, also counting in *nerrors the ERROR and MISSING nodes its parses left (the
 * parse-quality figure a fix must not raise). */
int kl_engine_lint_counted(struct kl_arena *a, const struct kl_source *src,
                           const struct kl_settings *s, const struct kl_dispatch_list *host,
                           struct kl_diag_list *out, unsigned *nerrors, char *err, size_t errlen);

struct kl_factkeep;
/* What the lint of one version of a document keeps for the next: an MSL file's parse's trees
 * (grammar/dialect.h) and its kernels' facts (analyzer/passes/factkeep.h), a Python file's tree.
 * Zeroed by its owner, freed with kl_engine_reuse_end. */
struct kl_engine_reuse {
  struct kl_dialect_reuse parse;
  struct kl_factkeep *facts;
  struct kl_dialect_kept py;
};

/* kl_engine_lint of the next version of a document: an MSL file's parse edits the tree r kept
 * of the version before where the two texts begin or end alike (tree-sitter's incremental
 * parse), its kernels that the edit cannot change are taken from the facts r kept, and r then
 * holds this version's. The diagnostics are those of kl_engine_lint. */
int kl_engine_lint_reuse(struct kl_arena *a, const struct kl_source *src,
                         const struct kl_settings *s, const struct kl_dispatch_list *host,
                         struct kl_engine_reuse *r, struct kl_diag_list *out, char *err,
                         size_t errlen);
/* Free what r keeps; r can be used again. */
void kl_engine_reuse_end(struct kl_engine_reuse *r);

/* The dispatches the host files among paths make (.mm, .m, .cpp, .cc, and headers that
 * dispatch), appended to facts with every string in facts' arena. A dispatch whose threadgroup
 * size is clamped at run time gets `reduces` filled in when its kernel, found in an MSL file
 * among paths, makes a simd_* reduction. Files that cannot be read are skipped here (they are
 * reported when they are linted). MSL files are read on up to jobs threads. */
void kl_engine_host_facts(const char *const *paths, size_t npaths, unsigned jobs,
                          struct kl_dispatch_list *facts);

/* What a tap is given for each MSL unit the engine parses: its model and what the flow
 * analysis would be given. */
typedef void (*kl_engine_unit_tap)(void *ctx, struct kl_arena *a, const struct kl_model *m,
                                   const struct kl_dispatch *calls, size_t ncalls,
                                   const struct kl_inst *xinsts, size_t nxinsts,
                                   const struct kl_settings *s);

/* Hand every MSL unit to tap instead of the analyses and rules (NULL: lint as usual); not
 * thread-safe: for the hidden --dump-ir, which lints one file at a time. */
void kl_engine_set_unit_tap(kl_engine_unit_tap tap, void *ctx);

/* Attributes for a thread that lints: the main thread's stack size (8 MB when unlimited). */
void kl_engine_attr_init(pthread_attr_t *at);

#endif
