/* Availability guards of native bfloat, read from a buffer's directives (see bfguard.h).
 *
 * Guards are decided from the preprocessor directives in the text, not from tree-sitter's
 * preproc_if nodes: a directive in the middle of a parameter list or an expression breaks the
 * tree into ERROR nodes, but the preprocessor is line based and so is this scan. */
#include "analyzer/input/bfguard.h"

#include <string.h>

#include "grammar/dialect.h"
#include "grammar/lex.h"
#include "grammar/msl.h"

bool kl_bfguard_builtin(const char *s, size_t n) {
  char name[64];
  if (n < 6 || n >= sizeof name) return false;
  memcpy(name, s, n);
  name[n] = '\0';
  if (!strstr(name, "bfloat")) return false; /* every identifier passes here: stay cheap */
  const struct kl_msl_type *t = kl_msl_type(name);
  if (t) return t->is_bfloat;
  return n == 9 && !strncmp(name, "bfloat", 6) && name[6] >= '2' && name[6] <= '4' &&
         name[7] == 'x' && name[8] >= '2' && name[8] <= '4';
}

bool kl_bfguard_is_macro(const char *const *names, size_t nnames, const char *t, size_t n) {
  if (n == 15 && !memcmp(t, "__HAVE_BFLOAT__", 15)) return true;
  for (size_t i = 0; i < nnames; i++)
    if (strlen(names[i]) == n && !memcmp(names[i], t, n)) return true;
  return false;
}

/* Whether a condition names a guard macro at all: the fallback for one the evaluator cannot
 * read. */
static bool kl_bfguard_names(const char *const *names, size_t nnames, const char *cond) {
  for (const char *p = cond; *p;) {
    if (!kl_lex_ident_char(*p)) {
      p++;
      continue;
    }
    const char *w = p;
    while (kl_lex_ident_char(*p)) p++;
    if (kl_bfguard_is_macro(names, nnames, w, (size_t)(p - w))) return true;
  }
  return false;
}

/* The builds a guard tells apart: MSL 3.0 without bfloat, and MSL 3.1 or later with it (several
 * versions, so that `== 310`, `== 320` and `>= 330` all tell them apart). */
static const char *const kl_bfguard_versions[] = {"300", "310", "320", "330", "400"};
enum { KL_BFGUARD_BUILDS = sizeof kl_bfguard_versions / sizeof kl_bfguard_versions[0] };
/* The #define and #undef directives of one buffer read for guard macros, at most. */
enum { KL_BFGUARD_MAX_MACROS = 64 };

static void kl_bfguard_assume(struct kl_arena *a, const char *const *guards, size_t ng, int build,
                              struct kl_pp_assume *as) {
  const char **names = kl_arena_alloc(a, (ng + 2) * sizeof *names);
  const char **values = kl_arena_alloc(a, (ng + 2) * sizeof *values);
  memset(as, 0, sizeof *as);
  names[0] = "__METAL_VERSION__";
  values[0] = kl_bfguard_versions[build];
  names[1] = "__HAVE_BFLOAT__";
  values[1] = NULL;
  for (size_t i = 0; i < ng; i++) names[2 + i] = guards[i], values[2 + i] = NULL;
  as->defined = names;
  as->values = values;
  if (build == 0) {
    as->ndefined = 1;
    as->undefined = names + 1;
    as->nundefined = ng + 1;
  } else {
    as->ndefined = ng + 2;
  }
}

/* Every branch that bfloat availability decides becomes a guarded range: one the MSL 3.0 build
 * without bfloat never compiles (the guarded code), and one that some build with bfloat skips
 * (the #else fallback of a guard). The builds are evaluated by the preprocessor module, which
 * replays #define and #undef: a macro the buffer #undefs below MSL 3.1 is therefore a guard with
 * no configuration. A condition the evaluator cannot read still guards when it names a guard
 * macro. */
void kl_bfguard_scan(struct kl_arena *a, const struct kl_pp *pp, uint32_t len,
                     const char *const *names, size_t nnames, struct kl_bfguard *g) {
  memset(g, 0, sizeof *g);
  if (!pp->ngroups) return;
  int *taken[KL_BFGUARD_BUILDS], *cond[KL_BFGUARD_BUILDS];
  for (int b = 0; b < KL_BFGUARD_BUILDS; b++) {
    struct kl_pp_assume as;
    kl_bfguard_assume(a, names, nnames, b, &as);
    taken[b] = kl_arena_alloc(a, pp->nlines * sizeof *taken[b]);
    cond[b] = kl_arena_alloc(a, pp->nlines * sizeof *cond[b]);
    kl_preproc_eval(a, pp, &as, taken[b], cond[b]);
  }
  for (size_t i = 0; i < pp->nlines; i++) {
    const struct kl_pp_line *l = &pp->lines[i];
    /* A buffer that stops an MSL 3.0 build with #error needs 3.1. */
    if (l->kind == KL_PP_ERROR && taken[0][i] == 1 && !g->needs_msl31) {
      g->needs_msl31 = true;
      g->error_at = l->start;
    }
    if ((l->kind != KL_PP_UNDEF && l->kind != KL_PP_DEFINE) || !l->cond) continue;
    /* ggml's `#if __METAL_VERSION__ < 310 && defined(X)` / `#undef X`: X is defined only where
     * bfloat is, and so is a macro whose only #define sits under a guard. */
    bool with = false, always = true;
    for (int b = 1; b < KL_BFGUARD_BUILDS; b++) {
      with = with || taken[b][i] == 1;
      always = always && taken[b][i] == 0;
    }
    bool guard = l->kind == KL_PP_UNDEF ? taken[0][i] != 0 && always : taken[0][i] == 0 && with;
    if (kl_bfguard_is_macro(names, nnames, l->cond, strlen(l->cond))) continue;
    /* One directive that is a guard's, and one that is not, of each macro; past a few dozen
     * macros a buffer is generated, not a project's guard habit, and the linear checks here and
     * in every reader of guards would grow with its square. */
    if (g->nmacros == KL_BFGUARD_MAX_MACROS) continue;
    bool seen = false;
    for (size_t k = 0; k < g->nmacros && !seen; k++)
      seen = g->macros[k].guard == guard && !strcmp(g->macros[k].name, l->cond);
    if (seen) continue;
    KL_VEC_PUSH(a, g->macros, g->nmacros, g->cap_macros);
    g->macros[g->nmacros++] = (struct kl_bfguard_macro){l->cond, l->start, guard};
  }
  bool *unread = kl_arena_alloc(a, pp->ngroups * sizeof *unread);
  memset(unread, 0, pp->ngroups * sizeof *unread);
  for (size_t i = 0; i < pp->nlines; i++) {
    const struct kl_pp_line *l = &pp->lines[i];
    if (l->kind != KL_PP_IF && l->kind != KL_PP_ELIF && l->kind != KL_PP_ELSE) continue;
    bool some_yes_skipped = false, any_known = false;
    for (int b = 1; b < KL_BFGUARD_BUILDS; b++)
      some_yes_skipped = some_yes_skipped || taken[b][i] == 0;
    for (int b = 0; b < KL_BFGUARD_BUILDS; b++) any_known = any_known || cond[b][i] >= 0;
    /* Not compiled without bfloat (the guarded code), or skipped by some build with it (the
     * fallback of a guard). */
    bool decided = taken[0][i] == 0 || some_yes_skipped;
    if (l->kind != KL_PP_ELSE && !any_known && kl_bfguard_names(names, nnames, l->cond))
      unread[l->group] = true;
    /* Only the MSL 3.0 and 3.1 builds tell bfloat availability apart: `#if !defined(
     * __METAL_VERSION__)` (host code in a shared header) and `__METAL_VERSION__ >= 320` (a later
     * feature) say nothing of builds below 3.1. */
    g->nsplits += unread[l->group] || taken[1][i] != taken[0][i];
    if (!decided && !unread[l->group]) continue;
    size_t e = kl_preproc_branch_end(pp, i);
    uint32_t end = e == pp->nlines                    ? len
                   : pp->lines[e].kind == KL_PP_ENDIF ? pp->lines[e].end
                                                      : pp->lines[e].start;
    KL_VEC_PUSH(a, g->ranges, g->n, g->cap);
    bool guarded = taken[0][i] == 0 || (unread[l->group] && l->kind != KL_PP_ELSE);
    g->ranges[g->n++] = (struct kl_bfguard_range){l->start, end, guarded};
  }
}

bool kl_bfguard_covers(const struct kl_bfguard *g, uint32_t off) {
  for (size_t i = 0; i < g->n; i++)
    if (off >= g->ranges[i].start && off < g->ranges[i].end) return true;
  return false;
}

bool kl_bfguard_skipped(const struct kl_bfguard *g, uint32_t off) {
  for (size_t i = 0; i < g->n; i++)
    if (g->ranges[i].guarded && off >= g->ranges[i].start && off < g->ranges[i].end) return true;
  return false;
}
