#include "analyzer/engine.h"

#include <stdio.h>
#include <string.h>

#include "analyzer/flow.h"
#include "analyzer/model.h"
#include "analyzer/types.h"
#include "analyzer/suppress.h"
#include "grammar/dialect.h"
#include "rules/rules.h"

/* Deep bracket nesting is refused up front: every later walk may recurse per level, and no
 * real kernel nests anywhere near the limit. Comments and literals are skipped roughly. */
static int kl_engine_check_nesting(const struct kl_source *src, char *err, size_t errlen) {
  const char *t = src->text;
  uint32_t n = src->len, depth = 0;
  for (uint32_t i = 0; i < n; i++) {
    char c = t[i];
    if (c == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') i++;
    } else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(t[i] == '*' && t[i + 1] == '/')) i++;
      i++;
    } else if (c == '"' || c == '\'') {
      for (i++; i < n && t[i] != c && t[i] != '\n'; i++)
        if (t[i] == '\\') i++;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > KL_SOURCE_MAX_NESTING) {
        uint32_t line, col;
        kl_source_position(src, i, &line, &col);
        snprintf(err, errlen, "nesting deeper than %d levels at line %u, column %u",
                 KL_SOURCE_MAX_NESTING, line, col);
        return -1;
      }
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return 0;
}

static char *kl_engine_dirname(struct kl_arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kl_arena_strdup(a, ".");
  if (slash == path) return kl_arena_strdup(a, "/");
  return kl_arena_strndup(a, path, (size_t)(slash - path));
}

static int kl_engine_lint_metal(struct kl_arena *a, const struct kl_source *src,
                                const struct kl_settings *s, struct kl_diag_list *out, char *err,
                                size_t errlen) {
  struct kl_unit unit;
  if (kl_dialect_parse(a, src, src->text, src->len, NULL, kl_engine_dirname(a, src->path), &unit,
                       err, errlen) != 0)
    return -1;
  struct kl_model model;
  kl_model_build(a, &unit, &model);
  struct kl_flow flow;
  kl_flow_analyze(a, &model, &flow);
  struct kl_types types;
  kl_types_collect(a, &unit, &types);
  kl_rules_run(a, src, &unit, &model, &flow, &types, s, out);
  kl_dialect_release(&unit);
  return 0;
}

int kl_engine_lint(struct kl_arena *a, const struct kl_source *src, const struct kl_settings *s,
                   struct kl_diag_list *out, char *err, size_t errlen) {
  if (kl_engine_check_nesting(src, err, errlen) != 0) return -1;
  int rc = 0;
  switch (src->lang) {
  case KL_LANG_METAL:
    rc = kl_engine_lint_metal(a, src, s, out, err, errlen);
    break;
  case KL_LANG_PYTHON:
  case KL_LANG_HOST:
  case KL_LANG_UNKNOWN:
    /* Embedded and host sources are read by the Python/host front end (not in this release). */
    break;
  }
  if (rc != 0) return rc;
  int ui = kl_rules_index("unused-suppression");
  kl_suppress_apply(src, out, ui < 0 ? KL_SEV_OFF : kl_rules_level(s, (size_t)ui));
  kl_diag_sort(out);
  return 0;
}
