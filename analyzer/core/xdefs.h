/* Definitions a unit uses but does not hold: the functions and struct members of the local
 * headers it includes (and, for a header, those its includers include before it), found as the
 * macro expansion finds them. A header is read only when a name is asked for, and parsed only
 * when its text defines that name; every answer is remembered for the unit's lint. */
#ifndef KL_XDEFS_H
#define KL_XDEFS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/model.h"
#include "analyzer/input/source.h"
#include "grammar/msl.h"

struct kl_xdefs;

/* The definitions src (being linted, its model built) sees: those of the local headers it
 * includes, then those the files at includers[0, n) include (the files of the run that include
 * the header src is). Nothing is read until the first kl_xdefs_find. Lives in a. */
struct kl_xdefs *kl_xdefs_new(struct kl_arena *a, const struct kl_source *src,
                              const char *const *includers, size_t n);
/* Free the trees of the headers parsed (the rest lives in the arena); x may be NULL. */
void kl_xdefs_free(struct kl_xdefs *x);
/* The function name that a header src sees defines (a member of struct owner when owner is not
 * NULL, any member of it when name is "", else one that is no member), or NULL. */
const struct kl_function *kl_xdefs_find(struct kl_xdefs *x, const char *owner, const char *name);
/* The model (a header's) that holds f, when kl_xdefs_find returned it or a function of the same
 * header; NULL for any other function. */
const struct kl_model *kl_xdefs_home(const struct kl_xdefs *x, const struct kl_function *f);

/* How far the result of a call of name (no member), which a header src sees defines, may differ
 * between threads because of what its body (or the header functions it calls, a few deep) uses:
 * THREAD for a per-lane SIMD or quad built-in (simd_is_first, simd_prefix_exclusive_sum) or an
 * atomic, else UNIFORM (nothing beyond what it is handed). *found is whether a definition was
 * read. */
enum kl_scope kl_xdefs_result_scope(struct kl_xdefs *x, const char *name, bool *found);

#endif
