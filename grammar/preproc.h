/* The preprocessor: the structure of a buffer's conditionals, their evaluation, and macro
 * expansion.
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

struct kl_inst;

/* Expand the macros that text defines, and those of the local headers it includes from
 * include_dir (may be NULL), into a new buffer in the arena; map takes its offsets back to text.
 * When insts is not NULL, a macro call that stamps out nothing but explicit instantiations
 * (`instantiate_kernel(...)`, often hundreds of them) is not written out: one space stands for
 * it, and its instantiations, read as text, are appended to *insts (count in *ninsts), so a
 * parse never pays for them. NULL when nothing was expanded or a limit was hit. */
char *kl_preproc_expand(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                        uint32_t *outlen, struct kl_offmap *map, struct kl_inst **insts,
                        size_t *ninsts);

/* kl_preproc_expand (insts not NULL, *ninsts 0), and keep a copy of what it gave for the next
 * kl_preproc_expand of the same text from the same include_dir in this generation (insts not
 * NULL, *ninsts 0), which takes that copy instead of expanding again. */
char *kl_preproc_expand_keep(struct kl_arena *a, const char *text, uint32_t len,
                             const char *include_dir, uint32_t *outlen, struct kl_offmap *map,
                             struct kl_inst **insts, size_t *ninsts);

/* Free what the run remembers of the headers it read (their directive lines, kept per real
 * path, size and modification time, and where include paths led; shared by every file and
 * thread of the run), and the expansions kept. */
void kl_preproc_forget_headers(void);

/* Start a new generation: forget where include paths led and the expansions kept, and check
 * each header's size and modification time again on its next use, so that a long-lived process
 * (the language server) sees headers created, moved, deleted or edited since. No expansion may
 * be running: what it reads of an edited header is freed when the new version is read. */
void kl_preproc_forget_paths(void);

/* Whether expansions install the macros a header defines as parsed once per run (the default),
 * or parse its lines again each time; for tests, before any thread expands. */
void kl_preproc_cache_headers(bool on);

/* Whether text, or a local header it includes from include_dir (found as kl_preproc_expand
 * finds them), has a `#define` of the name[0, n). */
bool kl_preproc_defines(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                        const char *name, size_t n);

/* Whether buffer offset off lies outside every #if group of pp (an include guard, `#ifndef X`
 * then `#define X`, is no condition): every build of the file compiles it. */
bool kl_preproc_unconditional(const struct kl_pp *pp, uint32_t off);

/* Whether text, or a local header it includes (found as kl_preproc_expand finds them, header
 * of header included), has an `#include` of a path that starts with prefix, in <> or "", that
 * every build reaches: outside any #if group (an include guard excepted), in the file and in
 * each header on the way. */
bool kl_preproc_includes(struct kl_arena *a, const char *text, uint32_t len,
                         const char *include_dir, const char *prefix);

/* Whether text can only run on Apple GPU family 10: every build of it reaches an include of
 * Metal Performance Primitives (kl_preproc_includes), or uses its tensor ops (`mpp::tensor_ops`)
 * outside any #if group. pp is text's directives when the caller has them, else NULL. */
bool kl_preproc_family10(struct kl_arena *a, const char *text, uint32_t len, const struct kl_pp *pp,
                         const char *include_dir);

#endif
