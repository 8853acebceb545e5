/* Where bfloat availability decides a buffer's code: the one reading of availability guards
 * that the bfloat-target rule and the project pass (which counts a project's guarded and
 * unguarded bfloat) share, so that both call the same thing "guarded". */
#ifndef KL_BFGUARD_H
#define KL_BFGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "grammar/preproc.h"

struct kl_bfguard_range {
  uint32_t start, end;
  bool guarded; /* a branch the build without bfloat skips (guarded code, not a fallback) */
};

/* A macro the buffer #defines or #undefs, where that directive starts, and whether it makes the
 * macro a bfloat guard (#undef'd only below MSL 3.1, #defined only with bfloat). */
struct kl_bfguard_macro {
  const char *name;
  uint32_t at;
  bool guard;
};

/* What a buffer's directives say about bfloat availability. */
struct kl_bfguard {
  struct kl_bfguard_range *ranges; /* branches that bfloat availability decides */
  size_t n, cap;
  size_t nsplits;    /* branches that the MSL 3.0 and 3.1 builds take differently, or that name
                        a guard macro: a buffer written for builds below MSL 3.1 too */
  bool needs_msl31;  /* an `#error` stops every build below MSL 3.1 */
  uint32_t error_at; /* where that #error line starts */
  struct kl_bfguard_macro *macros; /* the first #define or #undef of each macro that is a
                                      guard's, or that is not */
  size_t nmacros, cap_macros;
};

/* Whether s[0, n) is a built-in bfloat spelling (bfloat, bfloat2..4, packed_bfloat2..4,
 * bfloat16_t, simdgroup_bfloat8x8, bfloat2x2..4x4). */
bool kl_bfguard_builtin(const char *s, size_t n);

/* Whether t[0, n) is __HAVE_BFLOAT__ or one of the guard macros names[0, nnames). */
bool kl_bfguard_is_macro(const char *const *names, size_t nnames, const char *t, size_t n);

/* Read pp (the directives of a buffer of len bytes) under the builds with and without bfloat,
 * with names[0, nnames) taken as extra guard macros: the guarded branches (the code an MSL 3.0
 * build never compiles, and the #else fallback some build with bfloat skips), whether the
 * buffer #errors below MSL 3.1, and the macros it makes into guards. */
void kl_bfguard_scan(struct kl_arena *a, const struct kl_pp *pp, uint32_t len,
                     const char *const *names, size_t nnames, struct kl_bfguard *g);

/* Whether buffer offset off lies in a branch that bfloat availability decides (guarded code or
 * a guard's #else fallback). */
bool kl_bfguard_covers(const struct kl_bfguard *g, uint32_t off);

/* Whether the build without bfloat skips buffer offset off: guarded code, not a fallback. */
bool kl_bfguard_skipped(const struct kl_bfguard *g, uint32_t off);

#endif
