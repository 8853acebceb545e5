/* The preprocessor's directives: the structure of a buffer's conditionals and their
 * evaluation (macro expansion is grammar/expand.h).
 *
 * The structure of a buffer: its `#if`/`#ifdef`/`#elif`/`#else`/`#endif` chains and
 * the `#define`/`#undef` lines between them, read line by line as the preprocessor reads them
 * (tree-sitter's preproc nodes break apart when a directive sits inside an expression).
 *
 * Which branch a build takes is evaluated with the shared constant evaluator under stated
 * assumptions about the build: nothing assumed (only what the file itself decides, such as
 * `#if 0`), or a Metal version with or without bfloat. `#define` and `#undef` are replayed in
 * order, so a macro the file `#undef`s under `__METAL_VERSION__ < 310` is known undefined in an
 * MSL 3.0 build and may be defined in a 3.1 one. A macro the file never defines is unknown: the
 * build may pass it with -D; and after an `#include`, anything the file said of a macro is
 * unknown again, since the header may change it. */
#ifndef KL_PREPROC_H
#define KL_PREPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"

enum kl_pp_kind {
  KL_PP_IF,
  KL_PP_ELIF,
  KL_PP_ELSE,
  KL_PP_ENDIF,
  KL_PP_DEFINE,
  KL_PP_UNDEF,
  KL_PP_INCLUDE,
  KL_PP_ERROR /* `#error`: a build that reaches it fails */
};

/* One directive that matters to conditions, in file order. */
struct kl_pp_line {
  enum kl_pp_kind kind;
  uint32_t start;    /* offset of the line's first byte */
  uint32_t end;      /* offset of the newline that ends it (continuations included), or len */
  const char *cond;  /* IF/ELIF: the condition (`#ifdef X` is `defined(X)`); DEFINE/UNDEF: the
                        macro name */
  const char *value; /* DEFINE: an object-like macro's replacement text; NULL for a
                        function-like macro, whose value is not a constant */
  int group;         /* IF..ENDIF: index of the chain it belongs to, else -1 */
};

struct kl_pp {
  struct kl_pp_line *lines;
  size_t nlines, cap_lines;
  size_t ngroups; /* #if chains; each IF..ENDIF line holds its chain's index */
  uint32_t len;
};

/* What is assumed about the build: macros it defines (with their values) and macros it is
 * known not to define. Every other name keeps what the file says, or is unknown. */
struct kl_pp_assume {
  const char *const *defined;
  const char *const *values; /* parallel to defined; NULL entries mean "1" */
  size_t ndefined;
  const char *const *undefined;
  size_t nundefined;
};

/* Read the directives of buf[0, len) into pp; strings live in the arena. */
void kl_preproc_scan(struct kl_arena *a, const char *buf, uint32_t len, struct kl_pp *pp);

/* Under the assumptions (NULL: none), for each line of pp: in taken[i] whether a build takes
 * the branch that line opens (1, 0, or -1 unknown; for ENDIF/DEFINE/UNDEF lines, whether the
 * line itself is reached), and in cond[i] the truth of an IF/ELIF line's own condition where it
 * stands (1, 0, -1). Either output may be NULL. */
void kl_preproc_eval(struct kl_arena *a, const struct kl_pp *pp, const struct kl_pp_assume *as,
                     int *taken, int *cond);

/* The line index that ends the branch opened by line i (its chain's next ELIF/ELSE/ENDIF). */
size_t kl_preproc_branch_end(const struct kl_pp *pp, size_t i);

/* A copy of text with the branches no build takes (`#if 0`, the `#else` of `#if 1`, a test of
 * a macro the file defines to 0) blanked to spaces, line breaks kept so no position moves; NULL
 * when there are none. Directive lines stay, so the chain still reads as one. */
char *kl_preproc_strip_dead(struct kl_arena *a, const char *text, uint32_t len);

/* One branch of an #if chain: the bytes it holds, its chain, the branch it is nested in. */
struct kl_pp_arm {
  uint32_t from, to; /* past its directive line, to the start of the next line of its chain */
  int group;
  long parent;      /* index of the branch holding this one, or -1 */
  bool if_arm;      /* opened by the #if itself (not an #elif or #else) */
  const char *cond; /* the chain's condition when it is `#if C` with at most an #else, or NULL */
};

/* The branches of a buffer's #if chains, in the order they open. */
struct kl_pp_arms {
  struct kl_pp_arm *v;
  size_t n;
};

/* The branches of pp, for kl_preproc_exclusive; they live in the arena. */
void kl_preproc_arms(struct kl_arena *a, const struct kl_pp *pp, struct kl_pp_arms *out);

/* Whether offsets a and b lie in two branches of one #if chain (`#if X` and its `#else`), or in
 * the `#if` branch of one chain and the `#else` of another on the same condition (`#if X ...
 * #else ... #endif` twice), so that no build compiles both. */
bool kl_preproc_exclusive(const struct kl_pp_arms *arms, uint32_t a, uint32_t b);

/* Whether buffer offset off lies outside every #if group of pp (an include guard, `#ifndef X`
 * then `#define X`, is no condition): every build of the file compiles it. */
bool kl_preproc_unconditional(const struct kl_pp *pp, uint32_t off);

#endif
