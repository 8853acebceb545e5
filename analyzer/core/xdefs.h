/* Definitions a unit uses but does not hold: the functions and struct members of the local
 * headers it includes (and, for a header, those its includers include before it), found as the
 * macro expansion finds them. A header is read only when a name is asked for, and parsed only
 * when its text defines that name; every answer is remembered for the unit's lint.
 *
 * What the uniformity pass asks (kl_xdefs_result_scope) needs of a header only its functions by
 * name and their calls: that summary is kept for the whole run, shared by every unit and thread,
 * so that a header many files include (MLX's utils.h) is parsed once per run, not once per
 * includer that asks. Safe because an entry is keyed by the header's real path, length and a
 * 64-bit FNV-1a hash of its text (each unit hashes the text it reads, so a header edited during
 * the run is parsed again; two texts of one path and length with one hash are taken as the
 * same), is never changed once made (the lock guards the table only), and holds no tree or
 * pointer into a unit's arena; a unit still counts the header against its own bound on parses,
 * so answers are the same as with no summary kept. Bounded to 4 MB (past that a summary is not
 * kept and the unit parses as before); kl_xdefs_forget frees it at exit. A header's parse also
 * reads the headers it includes: in the language server, which outlives edits to them
 * (kl_xdefs_track), what it read is recorded (kl_expand_record) with the entry, which is used
 * only while that holds, checked once per generation, that is once per lint (a command-line
 * run's generation never changes, so it records nothing).
 * kl_xdefs_find, whose callers walk the definition's nodes, needs the header's own parse: that
 * parse and its model live in an arena of their own, held by one unit's lint at a time (no tree
 * is read by two threads) and then kept in a small run-wide pool, keyed as the summaries are, for
 * the next unit that includes the same text (the same text parses to the same tree and model).
 * The pool is bounded, emptied before a large unit (the run's peak memory) and by
 * kl_xdefs_forget. */
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

/* Whether every answer x gives is the same whatever was asked of it before: it sees no more
 * headers than a lint may parse, so the bound on parses never refuses one (NULL: true). */
bool kl_xdefs_order_free(struct kl_xdefs *x);

/* Free the summaries the run kept; no lint may be running. */
void kl_xdefs_forget(void);

/* Make header parses record what they read of other headers, so that the summaries and parses
 * kept outlive a generation (the language server); before any lint. */
void kl_xdefs_track(void);

/* Free the summaries found out of date since the last sweep; no lint may be running. */
void kl_xdefs_sweep(void);

/* How far the result of a call of name (no member), which a header src sees defines, may differ
 * between threads because of what its body (or the header functions it calls, a few deep) uses:
 * THREAD for a per-lane SIMD or quad built-in (simd_is_first, simd_prefix_exclusive_sum) or an
 * atomic, else UNIFORM (nothing beyond what it is handed). *found is whether a definition was
 * read. */
enum kl_scope kl_xdefs_result_scope(struct kl_xdefs *x, const char *name, bool *found);

#endif
