/* Macro expansion: the macros a text defines, and those of the local headers it includes, are
 * expanded into a new buffer with an offset map back to the text. Object- and function-like
 * macros, __VA_ARGS__, # and ##, argument prescan, and rescanning with hide sets; directives
 * other than #define/#undef/#include "x" are left in place (tree-sitter-cpp parses #if
 * branches itself). Local headers are read once per run, keyed by real path, size and
 * modification time; the same reading answers whether a text defines a macro or includes a
 * path. */
#ifndef KL_EXPAND_H
#define KL_EXPAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"
#include "grammar/preproc.h"

struct kl_inst;

/* Expand the macros that text defines, and those of the local headers it includes from
 * include_dir (may be NULL), into a new buffer in the arena; map takes its offsets back to text.
 * When insts is not NULL, a macro call that stamps out nothing but explicit instantiations
 * (`instantiate_kernel(...)`, often hundreds of them) is not written out: one space stands for
 * it, and its instantiations, read as text, are appended to *insts (count in *ninsts), so a
 * parse never pays for them. NULL when nothing was expanded or a limit was hit. */
char *kl_expand_text(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                     uint32_t *outlen, struct kl_offmap *map, struct kl_inst **insts,
                     size_t *ninsts);

/* kl_expand_text (insts not NULL, *ninsts 0), and keep a copy of what it gave for the next
 * kl_expand_text of the same text from the same include_dir in this generation (insts not
 * NULL, *ninsts 0), which takes that copy instead of expanding again. */
char *kl_expand_keep(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                     uint32_t *outlen, struct kl_offmap *map, struct kl_inst **insts,
                     size_t *ninsts);

/* Free what the run remembers of the headers it read (their directive lines, kept per real
 * path, size and modification time, and where include paths led; shared by every file and
 * thread of the run), and the expansions kept. */
void kl_expand_forget_headers(void);

/* Start a new generation: forget where include paths led and the expansions kept, and check
 * each header's size and modification time again on its next use, so that a long-lived process
 * (the language server) sees headers created, moved, deleted or edited since. No expansion may
 * be running: what it reads of an edited header is freed when the new version is read. */
void kl_expand_forget_paths(void);

/* The generation: one per run, and one per lint of the language server (each
 * kl_expand_forget_paths starts the next). */
uint32_t kl_expand_generation(void);

/* One include path an expansion asked for and where it led (real, NULL for nowhere); or
 * (header) one header it read, by real path, as of that size and modification time. */
struct kl_expand_dep {
  char *path, *real;
  bool header;
  int64_t size, sec, nsec;
};

/* What expansions read of the file system while recording: what was made of the headers they
 * read (kl_xdefs' summary of a header whose parse expanded its includes) holds while these do. */
struct kl_expand_deps {
  struct kl_expand_dep *items;
  size_t n, cap;
};

/* Record into d every include path this thread's expansions ask for from now on, until called
 * with NULL; d starts zeroed and is freed by kl_expand_deps_free. */
void kl_expand_record(struct kl_expand_deps *d);
/* Whether every path d recorded still leads to the same header, of the same size and time. */
bool kl_expand_deps_hold(const struct kl_expand_deps *d);
/* Free what d holds; NULL is allowed. */
void kl_expand_deps_free(struct kl_expand_deps *d);

/* Whether expansions install the macros a header defines as parsed once per run (the default),
 * or parse its lines again each time; for tests, before any thread expands. */
void kl_expand_cache_headers(bool on);

/* Whether text, or a local header it includes from include_dir (found as kl_expand_text
 * finds them), has a `#define` of the name[0, n). */
bool kl_expand_defines(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                       const char *name, size_t n);

/* Whether text, or a local header it includes (found as kl_expand_text finds them, header
 * of header included), has an `#include` of a path that starts with prefix, in <> or "", that
 * every build reaches: outside any #if group (an include guard excepted), in the file and in
 * each header on the way. */
bool kl_expand_includes(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                        const char *prefix);

/* The real paths of the local headers text includes from include_dir, headers of headers
 * included, each once, in the order the preprocessor reaches them (found as kl_expand_text finds
 * them); returns their number. */
size_t kl_expand_headers(struct kl_arena *a, const char *text, uint32_t len,
                         const char *include_dir, const char ***out);

/* Whether text can only run on Apple GPU family 10: every build of it reaches an include of
 * Metal Performance Primitives (kl_expand_includes), or uses its tensor ops (`mpp::tensor_ops`)
 * outside any #if group. pp is text's directives when the caller has them, else NULL. */
bool kl_expand_family10(struct kl_arena *a, const char *text, uint32_t len, const struct kl_pp *pp,
                        const char *include_dir);

#endif
