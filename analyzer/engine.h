/* The engine: one file from source text to sorted, suppression-filtered diagnostics. */
#ifndef KL_ENGINE_H
#define KL_ENGINE_H

#include <stddef.h>

#include "analyzer/arena.h"
#include "analyzer/config.h"
#include "analyzer/diag.h"
#include "analyzer/source.h"

/* Lint a loaded source under settings s, appending to out. Returns -1 with a one-line reason in
 * err when the file cannot be analysed (too deeply nested, parser timeout). */
int kl_engine_lint(struct kl_arena *a, const struct kl_source *src, const struct kl_settings *s,
                   struct kl_diag_list *out, char *err, size_t errlen);

#endif
