#include "analyzer/report/diag.h"

#include <stdlib.h>
#include <string.h>

static const char *const kl_sev_names[] = {"off", "note", "warning", "error"};

const char *kl_diag_severity_name(enum kl_severity s) {
  return (unsigned)s < 4 ? kl_sev_names[s] : "?";
}

int kl_diag_severity_parse(const char *name, enum kl_severity *out) {
  for (int i = 0; i < 4; i++) {
    if (!strcmp(name, kl_sev_names[i])) {
      *out = (enum kl_severity)i;
      return 0;
    }
  }
  return -1;
}

struct kl_span kl_diag_span(const struct kl_source *src, uint32_t start, uint32_t end) {
  struct kl_span sp;
  if (end < start) end = start;
  sp.start = start;
  sp.end = end;
  kl_source_position(src, start, &sp.line, &sp.col);
  kl_source_position(src, end, &sp.end_line, &sp.end_col);
  return sp;
}

struct kl_span kl_diag_span_mapped(const struct kl_source *src, const struct kl_offmap *map,
                                   uint32_t buf_start, uint32_t buf_end) {
  uint32_t s = kl_offmap_to_file(map, buf_start);
  uint32_t e = buf_end > buf_start ? kl_offmap_end_to_file(map, buf_end) : s;
  return kl_diag_span(src, s, e);
}

void kl_diag_list_init(struct kl_diag_list *l, struct kl_arena *a) {
  memset(l, 0, sizeof *l);
  l->arena = a;
}

struct kl_diag *kl_diag_add(struct kl_diag_list *l, const char *rule_id, enum kl_severity sev,
                            struct kl_span span, const char *message) {
  KL_VEC_PUSH(l->arena, l->items, l->n, l->cap);
  struct kl_diag *d = &l->items[l->n++];
  memset(d, 0, sizeof *d);
  d->rule_id = rule_id;
  d->severity = sev;
  d->message = kl_arena_strdup(l->arena, message);
  d->span = span;
  return d;
}

void kl_diag_relate(struct kl_diag_list *l, struct kl_diag *d, struct kl_span span,
                    const char *message) {
  kl_diag_relate_in(l, d, NULL, span, message);
}

void kl_diag_relate_in(struct kl_diag_list *l, struct kl_diag *d, const char *path,
                       struct kl_span span, const char *message) {
  KL_VEC_PUSH(l->arena, d->related, d->nrelated, d->cap_related);
  d->related[d->nrelated].span = span;
  d->related[d->nrelated].message = kl_arena_strdup(l->arena, message);
  d->related[d->nrelated].path = path ? kl_arena_strdup(l->arena, path) : NULL;
  d->nrelated++;
}

struct kl_fix *kl_diag_fix(struct kl_diag_list *l, struct kl_diag *d, const char *title) {
  struct kl_fix *f = kl_arena_alloc(l->arena, sizeof *f);
  memset(f, 0, sizeof *f);
  f->title = kl_arena_strdup(l->arena, title);
  d->fix = f;
  return f;
}

void kl_diag_edit(struct kl_diag_list *l, struct kl_fix *f, uint32_t start, uint32_t end,
                  const char *text) {
  KL_VEC_PUSH(l->arena, f->edits, f->nedits, f->cap_edits);
  /* Rules find their edits in tree order, which is nearly always file order: insert by shifting. */
  size_t i = f->nedits;
  /* An insertion goes before a replacement that starts where it does. */
  while (i > 0 && (f->edits[i - 1].start > start ||
                   (f->edits[i - 1].start == start && f->edits[i - 1].end > end))) {
    f->edits[i] = f->edits[i - 1];
    i--;
  }
  f->edits[i].start = start;
  f->edits[i].end = end;
  f->edits[i].text = kl_arena_strdup(l->arena, text);
  f->nedits++;
}

static int kl_diag_cmp(const void *pa, const void *pb) {
  const struct kl_diag *a = pa, *b = pb;
  if (a->span.line != b->span.line) return a->span.line < b->span.line ? -1 : 1;
  if (a->span.col != b->span.col) return a->span.col < b->span.col ? -1 : 1;
  int c = strcmp(a->rule_id, b->rule_id);
  if (c) return c;
  return strcmp(a->message, b->message);
}

void kl_diag_sort(struct kl_diag_list *l) {
  if (l->n > 1) qsort(l->items, l->n, sizeof l->items[0], kl_diag_cmp);
}
