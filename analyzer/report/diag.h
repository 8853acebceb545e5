/* Diagnostics: what rules produce and emitters print. Positions are file positions. */
#ifndef KL_DIAG_H
#define KL_DIAG_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"
#include "analyzer/input/source.h"

enum kl_severity { KL_SEV_OFF = 0, KL_SEV_NOTE, KL_SEV_WARNING, KL_SEV_ERROR };

struct kl_span {
  uint32_t start, end;        /* byte offsets in the file */
  uint32_t line, col;         /* 1-based start */
  uint32_t end_line, end_col; /* 1-based, exclusive end column */
};

/* A place a finding points to besides its own: in the finding's file, or in another file (a
 * host call's kernel defined in an MSL file of the run). */
struct kl_related {
  struct kl_span span; /* positions in path's file */
  const char *message;
  const char *path; /* the other file, as the run names it; NULL: the finding's own file */
};

/* One replacement of the file byte range [start, end) by text (an insertion when start == end). */
struct kl_edit {
  uint32_t start, end;
  const char *text;
};

/* A safe, mechanical fix: edits that do not overlap, in ascending order of start. */
struct kl_fix {
  const char *title; /* imperative, shown by --diff and editors: "declare 'acc' as float" */
  struct kl_edit *edits;
  size_t nedits, cap_edits;
};

struct kl_diag {
  const char *rule_id;
  enum kl_severity severity;
  const char *message;
  struct kl_span span;
  struct kl_related *related;
  size_t nrelated, cap_related;
  struct kl_fix *fix; /* NULL when no safe fix exists */
};

struct kl_diag_list {
  struct kl_arena *arena;
  struct kl_diag *items;
  size_t n, cap;
};

/* Name of a severity as printed ("note", "warning", "error", "off"). */
const char *kl_diag_severity_name(enum kl_severity s);
/* Parse a severity name; returns -1 when the name is not one. */
int kl_diag_severity_parse(const char *name, enum kl_severity *out);
/* Span of the file byte range [start, end). */
struct kl_span kl_diag_span(const struct kl_source *src, uint32_t start, uint32_t end);
/* Span of a buffer byte range, through the buffer's offset map. */
struct kl_span kl_diag_span_mapped(const struct kl_source *src, const struct kl_offmap *map,
                                   uint32_t buf_start, uint32_t buf_end);
/* Start an empty list backed by the arena. */
void kl_diag_list_init(struct kl_diag_list *l, struct kl_arena *a);
/* Append a diagnostic (message copied into the arena) and return it for related spans. */
struct kl_diag *kl_diag_add(struct kl_diag_list *l, const char *rule_id, enum kl_severity sev,
                            struct kl_span span, const char *message);
/* Attach a related location with its own message. */
void kl_diag_relate(struct kl_diag_list *l, struct kl_diag *d, struct kl_span span,
                    const char *message);
/* Attach a related location in the file at path (copied; NULL: the finding's own file). */
void kl_diag_relate_in(struct kl_diag_list *l, struct kl_diag *d, const char *path,
                       struct kl_span span, const char *message);
/* Give d a fix titled title (copied), replacing any it had, and return it for kl_diag_edit. */
struct kl_fix *kl_diag_fix(struct kl_diag_list *l, struct kl_diag *d, const char *title);
/* Add to fix f the replacement of file bytes [start, end) by text (copied), kept sorted. */
void kl_diag_edit(struct kl_diag_list *l, struct kl_fix *f, uint32_t start, uint32_t end,
                  const char *text);
/* Sort by line, column, rule id, then message, so output is deterministic. */
void kl_diag_sort(struct kl_diag_list *l);

#endif
