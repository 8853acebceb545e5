/* Fixes: apply the edits rules attach to findings, each kept only when linting the result again
 * shows it removed its finding and broke nothing; show them as a unified diff; write a fixed file
 * atomically. */
#ifndef KL_FIX_H
#define KL_FIX_H

#include <stdbool.h>
#include <stddef.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/report/diag.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/input/source.h"

/* Rounds of fixing at most: a fix whose edits overlap one applied in a round waits for the next
 * (ruff stops at 100; kernlint's fixes settle in two or three). */
#define KL_FIX_ROUNDS 10

/* What fixing one file gave. */
struct kl_fix_result {
  struct kl_arena *arena;   /* holds src and diags when changed; the caller deletes it */
  struct kl_source src;     /* the fixed text (src->text), when changed */
  struct kl_diag_list diags; /* the findings of the fixed text, without fixes */
  size_t nfixed;            /* findings fixed */
  bool changed;
};

/* Apply the fixes of diags (src's findings under settings s and host facts host, whose parses
 * left nerrors ERROR nodes) round after round. A round applies the fixes that do not overlap,
 * lints the result in memory, and keeps it when it has no more ERROR nodes and every applied
 * finding (same rule, at its moved position) is gone; otherwise each fix is tried on its own
 * and those that fail are dropped. Returns -1 with nothing changed when src cannot be fixed. */
int kl_fix_run(const struct kl_source *src, const struct kl_settings *s,
               const struct kl_dispatch_list *host, const struct kl_diag_list *diags,
               unsigned nerrors, struct kl_fix_result *out);
/* Apply edits sorted and non-overlapping to text; returns the new text (arena) and its length. */
char *kl_fix_edit_text(struct kl_arena *a, const char *text, uint32_t len,
                       const struct kl_edit *edits, size_t n, uint32_t *outlen);
/* The unified diff (3 lines of context, `--- a/PATH` / `+++ b/PATH`) turning old into new, in the
 * arena; "" when they are equal. */
const char *kl_fix_diff(struct kl_arena *a, const char *path, const char *old, uint32_t oldlen,
                        const char *new, uint32_t newlen);
/* Replace the file at path (a symlink's target) by text: a temporary file in the same folder,
 * with the file's mode, renamed over it. Returns -1 with a one-line reason in err. */
int kl_fix_write(const char *path, const char *text, size_t len, char *err, size_t errlen);

#endif
