/* Input files: loading with the bad-input checks, languages, and byte offset to line/column. */
#ifndef KL_SOURCE_H
#define KL_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/core/arena.h"

/* Files above this size are refused rather than analysed (kernels are kilobytes, not megabytes). */
#define KL_SOURCE_MAX_BYTES (8u * 1024u * 1024u)
/* Bracket nesting deeper than this is refused before parsing, so no recursive walk can overflow. */
#define KL_SOURCE_MAX_NESTING 256

enum kl_lang {
  KL_LANG_METAL,  /* .metal and MSL headers */
  KL_LANG_PYTHON, /* .py: MLX and PyTorch embedded kernels */
  KL_LANG_HOST,   /* .mm .m .cpp: metal-cpp and Objective-C dispatch code */
  KL_LANG_UNKNOWN
};

struct kl_source {
  const char *path; /* as the user named it (or --stdin-filename); used in every message */
  const char *text; /* NUL-terminated, valid UTF-8 */
  uint32_t len;
  enum kl_lang lang;
  uint32_t *line_starts; /* byte offset of each line's first byte */
  bool *line_ascii;      /* whether each line is all ASCII (columns are then byte offsets) */
  uint32_t nlines;
};

/* Language of a path by its extension; KL_LANG_UNKNOWN when it is not ours to lint. */
enum kl_lang kl_source_lang(const char *path);
/* Read and validate a file into the arena; on failure returns -1 with a one-line reason in err. */
int kl_source_load(struct kl_arena *a, const char *path, struct kl_source *out, char *err,
                   size_t errlen);
/* Validate bytes already in memory (stdin) the same way kl_source_load validates a file. */
int kl_source_from_memory(struct kl_arena *a, const char *path, const char *bytes, size_t len,
                          struct kl_source *out, char *err, size_t errlen);
/* Read f into malloc'd *bytes (*len), stopping one byte past the size limit; -1 with errno. */
int kl_source_read(FILE *f, size_t size_hint, char **bytes, size_t *len);
/* path joined to base unless absolute, "." and ".." folded, no repeated or trailing slash. */
char *kl_source_abspath(const char *path, const char *base);
/* path percent-encoded for a URI (malloc'd): everything but unreserved characters and '/'. ':'
 * is encoded too, so a relative reference can never be read as having a scheme. */
char *kl_source_uri_escape(const char *path);
/* The part of abs below dir (both from kl_source_abspath) when abs lies inside dir, else NULL. */
const char *kl_source_subpath(const char *abs, const char *dir);
/* Length (1..4) of the valid UTF-8 sequence at s, given avail readable bytes; 0 when invalid. */
size_t kl_source_utf8_seq(const unsigned char *s, size_t avail);
/* 1-based line and column (in Unicode code points) of a byte offset into the file. */
void kl_source_position(const struct kl_source *s, uint32_t off, uint32_t *line, uint32_t *col);
/* Bytes of line (1-based) without its newline, for carets and fingerprints. */
const char *kl_source_line(const struct kl_source *s, uint32_t line, uint32_t *len);

#endif
