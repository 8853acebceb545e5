#include "analyzer/engine.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "analyzer/passes/factkeep.h"
#include "analyzer/passes/facts.h"
#include "analyzer/input/cstring.h"
#include "analyzer/input/host.h"
#include "analyzer/core/model.h"
#include "analyzer/input/python.h"
#include "analyzer/core/types.h"
#include "analyzer/core/xdefs.h"
#include "analyzer/report/suppress.h"
#include "grammar/dialect.h"
#include "grammar/expand.h"
#include "grammar/preproc.h"
#include "rules/rules.h"

/* Heap an MSL lint is assumed to take per byte of the file outside comments, for
 * kl_arena_prefault: below what the big corpus files take per byte (58 to 75), so that no more
 * is made resident than the file uses. Host and Python files take far less for their size. */
enum { KL_ENGINE_HEAP_PER_BYTE = 48 };

/* Deep bracket nesting is refused up front: every later walk may recurse per level, and no
 * real kernel nests anywhere near the limit. Comments and literals are skipped roughly: C and MSL
 * comments, or (python) `#` comments and triple-quoted strings, where `//` is floor division.
 * t maps to the file through map (NULL: t is the file), for the position in the message.
 * *comments (when not NULL) gets how many bytes are in comments. */
static int kl_engine_nesting(const struct kl_source *src, const char *t, uint32_t n,
                             const struct kl_offmap *map, bool python, uint32_t *comments,
                             char *err, size_t errlen) {
  /* Bytes that start a comment, string or bracket: all others are skipped a run at a time, as
   * this reads every byte of every input and expansion. */
  static const bool stop[256] = {['#'] = 1, ['/'] = 1, ['"'] = 1, ['\''] = 1, ['('] = 1,
                                 ['['] = 1, ['{'] = 1,  [')'] = 1, [']'] = 1,  ['}'] = 1};
  uint32_t depth = 0, in_comments = 0;
  for (uint32_t i = 0; i < n; i++) {
    while (i < n && !stop[(unsigned char)t[i]]) i++;
    if (i == n) break;
    char c = t[i];
    uint32_t at = i;
    if (python && c == '#') {
      while (i < n && t[i] != '\n') i++;
      in_comments += i - at;
    } else if (!python && c == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') i++;
      in_comments += i - at;
    } else if (!python && c == '/' && i + 1 < n && t[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(t[i] == '*' && t[i + 1] == '/')) i++;
      i++;
      in_comments += i - at;
    } else if (python && (c == '"' || c == '\'') && i + 2 < n && t[i + 1] == c && t[i + 2] == c) {
      for (i += 3; i + 2 < n && !(t[i] == c && t[i + 1] == c && t[i + 2] == c); i++)
        if (t[i] == '\\') i++;
      i += 2;
    } else if (c == '"' || c == '\'') {
      for (i++; i < n && t[i] != c && t[i] != '\n'; i++)
        if (t[i] == '\\') i++;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > KL_SOURCE_MAX_NESTING) {
        uint32_t line, col;
        kl_source_position(src, map ? kl_offmap_to_file(map, i) : i, &line, &col);
        snprintf(err, errlen, "nesting deeper than %d levels at line %u, column %u",
                 KL_SOURCE_MAX_NESTING, line, col);
        return -1;
      }
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  if (comments) *comments = in_comments;
  return 0;
}

/* kl_engine_nesting of a whole file; *code (when not NULL) gets its bytes outside comments. */
static int kl_engine_check_nesting(const struct kl_source *src, uint32_t *code, char *err,
                                   size_t errlen) {
  uint32_t comments = 0;
  int rc = kl_engine_nesting(src, src->text, src->len, NULL, src->lang == KL_LANG_PYTHON,
                             &comments, err, errlen);
  if (code) *code = comments < src->len ? src->len - comments : 0;
  return rc;
}

static char *kl_engine_dirname(struct kl_arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kl_arena_strdup(a, ".");
  if (slash == path) return kl_arena_strdup(a, "/");
  return kl_arena_strndup(a, path, (size_t)(slash - path));
}

static kl_engine_unit_tap kl_engine_tap;
static void *kl_engine_tap_ctx;

void kl_engine_set_unit_tap(kl_engine_unit_tap tap, void *ctx) {
  kl_engine_tap = tap;
  kl_engine_tap_ctx = ctx;
}

/* Parse one MSL unit (text mapped to the file through map, or the file itself when map is NULL)
 * and run the rules over it with the dispatches of its kernels. */
static int kl_engine_lint_unit(struct kl_arena *a, const struct kl_source *src, const char *text,
                               uint32_t len, const struct kl_offmap *map,
                               const struct kl_settings *s, const struct kl_dispatch *calls,
                               size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                               const char *const *includers, size_t nincluders,
                               bool family10, struct kl_dialect_reuse *reuse,
                               struct kl_factkeep *keep, struct kl_diag_list *out,
                               unsigned *nerrors, char *err, size_t errlen) {
  struct kl_unit unit;
  if (kl_dialect_parse_next(a, src, text, len, map, kl_engine_dirname(a, src->path), reuse, &unit,
                            err, errlen) != 0)
    return -1;
  if (nerrors) *nerrors += unit.nerrors;
  struct kl_model model;
  kl_model_build(a, &unit, &model);
  if (kl_engine_tap) {
    kl_engine_tap(kl_engine_tap_ctx, a, &model, calls, ncalls, xinsts, nxinsts, s);
    kl_dialect_release(&unit);
    return 0;
  }
  struct kl_types types;
  kl_types_collect(a, &unit, &types);
  /* A file's own text holds its includes; a kernel embedded in Python or in a host string
   * (map set) has none to read. */
  struct kl_xdefs *xdefs =
      src->lang == KL_LANG_METAL && !map ? kl_xdefs_new(a, src, includers, nincluders) : NULL;
  struct kl_facts facts;
  kl_facts_compute_kept(a, &model, calls, ncalls, xinsts, nxinsts, s, xdefs, keep, &facts);
#ifdef KL_TRAIL_CHECK
  if (keep) {
    struct kl_facts fresh;
    kl_facts_compute_x(a, &model, calls, ncalls, xinsts, nxinsts, s, xdefs, &fresh);
    if (!kl_factkeep_same(&facts, &fresh)) {
      fprintf(stderr, "kernlint: keep check: the kept facts differ from those lowered afresh\n");
      abort();
    }
  }
#endif
  kl_rules_run(a, src, &unit, &model, &facts, &types, xdefs, s, calls, ncalls, xinsts, nxinsts,
               family10, out);
  kl_xdefs_free(xdefs);
  kl_dialect_release(&unit);
  return 0;
}

/* Replace every `from` quoted in backticks with `to`. */
static const char *kl_engine_requote(struct kl_arena *a, const char *msg, const char *from,
                                     const char *to) {
  const char *q = kl_arena_printf(a, "`%s`", from);
  if (!strstr(msg, q)) return msg;
  const char *out = "";
  for (const char *m = msg, *hit; *m; m = hit + strlen(q)) {
    hit = strstr(m, q);
    if (!hit) return kl_arena_printf(a, "%s%s", out, m);
    out = kl_arena_printf(a, "%s%.*s`%s`", out, (int)(hit - m), m, to);
  }
  return out;
}

/* msg with each `__kl_field_N` kernlint made up shown as the field the user wrote (`{dim}`). */
static const char *kl_engine_unfield(struct kl_arena *a, const struct kl_py_embed *em,
                                     const char *msg) {
  const char *out = "";
  const char *m = msg;
  for (const char *hit; (hit = strstr(m, "__kl_field_"));) {
    char *end;
    unsigned long k = strtoul(hit + 11, &end, 10);
    const char *shown = end > hit + 11 && k < em->nfields ? em->fields[k].text : NULL;
    if (!shown) {
      out = kl_arena_printf(a, "%s%.*s", out, (int)(hit + 11 - m), m);
      m = hit + 11;
      continue;
    }
    out = kl_arena_printf(a, "%s%.*s%s", out, (int)(hit - m), m, shown);
    m = end;
  }
  return kl_arena_printf(a, "%s%s", out, m);
}

/* What the findings of one embedded unit say about it: the kernel by the name the user wrote
 * (not the identifier kernlint declared for it), and a line that holds a value known only at run
 * time. */
static void kl_engine_embed_words(struct kl_arena *a, const struct kl_py_embed *em,
                                  struct kl_diag_list *out, size_t from) {
  bool rename = em->fname && em->name && *em->name && strcmp(em->fname, em->name);
  size_t w = from;
  for (size_t i = from; i < out->n; i++) {
    struct kl_diag *d = &out->items[i];
    /* A missing bound check may be in a field kernlint cannot see (generated statements, an
     * opaque condition) before the access: the unit is incomplete there, not the kernel. */
    bool hidden = false;
    for (size_t k = 0; k < em->nfields && !strcmp(d->rule_id, "bounds-guard"); k++)
      hidden |= em->fields[k].control && em->fields[k].span.start < d->span.start;
    if (hidden) continue;
    out->items[w++] = *d;
    d = &out->items[w - 1];
    if (rename) {
      d->message = kl_engine_requote(a, d->message, em->fname, em->name);
      for (size_t k = 0; k < d->nrelated; k++)
        d->related[k].message = kl_engine_requote(a, d->related[k].message, em->fname, em->name);
    }
    /* Code quoted from the unit shows a field as written, not as kernlint's stand-in. */
    if (em->nfields && strstr(d->message, "__kl_field_"))
      d->message = kl_engine_unfield(a, em, d->message);
    const char *held = NULL;
    size_t nheld = 0;
    for (size_t k = 0; k < em->nfields; k++) {
      const struct kl_span *f = &em->fields[k].span;
      if (f->line > d->span.line || f->end_line < d->span.line) continue;
      if (nheld++ < 2)
        held = kl_arena_printf(a, "%s%s`%s`", held ? held : "", held ? " and " : "",
                               em->fields[k].text);
    }
    if (held)
      d->message = kl_arena_printf(a, "%s (this line holds %s%s, known only at run time and read "
                                   "as an opaque value)",
                                   d->message, held, nheld > 2 ? " and more" : "");
  }
  out->n = w;
}

/* A finding (rule and place) that several instances of one kernel give is reported once, in the
 * words of the first; one that only some give names them. first[i]..first[i+1]: the findings of
 * embed i. */
static void kl_engine_merge(struct kl_arena *a, const struct kl_python *py, const size_t *first,
                                struct kl_diag_list *out) {
  bool *gone = kl_arena_alloc(a, out->n + 1);
  memset(gone, 0, out->n + 1);
  for (size_t i = 0; i < py->nembeds; i++) {
    const struct kl_py_embed *em = &py->embeds[i];
    if (em->ninstances < 2) continue;
    for (size_t k = first[i]; k < first[i + 1]; k++) {
      if (gone[k]) continue;
      struct kl_diag *d = &out->items[k];
      const char *labels = em->label;
      size_t holds = 1;
      for (size_t j = i + 1; j < py->nembeds; j++) {
        if (py->embeds[j].group != em->group) continue;
        for (size_t m = first[j]; m < first[j + 1]; m++) {
          const struct kl_diag *e = &out->items[m];
          /* One finding per rule and place: instances word it with their own values. */
          if (gone[m] || e->span.start != d->span.start || e->span.end != d->span.end ||
              strcmp(e->rule_id, d->rule_id))
            continue;
          gone[m] = true;
          holds++;
          if (labels && py->embeds[j].label)
            labels = kl_arena_printf(a, "%s; %s", labels, py->embeds[j].label);
          break;
        }
      }
      if (holds < em->ninstances && labels)
        d->message = kl_arena_printf(a, "%s (%s)", d->message, labels);
    }
  }
  size_t w = 0;
  for (size_t k = 0; k < out->n; k++)
    if (!gone[k]) out->items[w++] = out->items[k];
  out->n = w;
}

static int kl_engine_lint_python(struct kl_arena *a, const struct kl_source *src,
                                 const struct kl_settings *s, struct kl_dialect_kept *kept,
                                 struct kl_diag_list *out, unsigned *nerrors, char *err,
                                 size_t errlen) {
  struct kl_python py;
  if (kl_python_extract_kept(a, src, kept, &py, err, errlen) != 0) return -1;
  int ui = kl_rules_index("unresolved-source");
  enum kl_severity note = ui < 0 ? KL_SEV_OFF : kl_rules_level(s, (size_t)ui);
  for (size_t i = 0; i < py.nnotes && note != KL_SEV_OFF; i++)
    kl_diag_add(out, "unresolved-source", note, py.notes[i].span, py.notes[i].message);
  size_t *first = kl_arena_alloc(a, (py.nembeds + 1) * sizeof *first);
  struct kl_dialect_reuse reuse = {0};
  int rc = 0;
  for (size_t i = 0; i < py.nembeds; i++) {
    const struct kl_py_embed *em = &py.embeds[i];
    first[i] = out->n;
    if (!em->text) {
      kl_rules_run(a, src, NULL, NULL, NULL, NULL, NULL, s, em->calls.items, em->calls.n, NULL,
                   0, false, out);
      kl_engine_embed_words(a, em, out, first[i]);
      continue;
    }
    /* Brackets inside Python strings were skipped by the file's check; the MSL is checked too. */
    if (kl_engine_nesting(src, em->text, em->len, &em->map, false, NULL, err, errlen) != 0) {
      rc = -1;
      break;
    }
    /* MLX compiles metal_kernel sources with language version 3.1 or later (its device.cpp
     * get_metal_version; it requires macOS 14), so native bfloat always compiles there. */
    struct kl_settings ms = *s;
    if (em->name && ms.metal_version < 310) ms.metal_version = 310;
    if (kl_engine_lint_unit(a, src, em->text, em->len, &em->map, &ms, em->calls.items, em->calls.n,
                            NULL, 0, NULL, 0, false, &reuse, NULL, out, nerrors, err,
                            errlen) != 0) {
      rc = -1;
      break;
    }
    kl_engine_embed_words(a, em, out, first[i]);
  }
  kl_dialect_reuse_end(&reuse);
  if (rc != 0) return rc;
  first[py.nembeds] = out->n;
  kl_engine_merge(a, &py, first, out);
  if (py.calls.n)
    kl_rules_run(a, src, NULL, NULL, NULL, NULL, NULL, s, py.calls.items, py.calls.n, NULL, 0,
                 false, out);
  return 0;
}

/* Host code holds no kernel: its dispatches' own sizes and arguments are what is checked here.
 * (What they say about kernels in MSL files reaches those files through main's pre-pass.) */
static void kl_engine_lint_host(struct kl_arena *a, const struct kl_source *src,
                                const struct kl_settings *s, const struct kl_dispatch_list *facts,
                                struct kl_diag_list *out) {
  struct kl_dispatch_list calls;
  kl_dispatch_list_init(&calls, a);
  bool read = false;
  for (size_t i = 0; facts && i < facts->nhosts && !read; i++)
    read = !strcmp(facts->hosts[i], src->path);
  if (read) {
    /* The facts pass read this file already, and filled in what the run's MSL files say about
     * its calls' kernels: its dispatches are this file's, in the order the file makes them. */
    for (size_t k = 0; k < facts->n; k++) {
      if (strcmp(facts->items[k].path, src->path)) continue;
      struct kl_dispatch *d = kl_dispatch_add(&calls);
      *d = facts->items[k];
      d->local = true;
    }
  } else {
    kl_host_dispatches(a, src, &calls);
  }
  if (calls.n)
    kl_rules_run(a, src, NULL, NULL, NULL, NULL, NULL, s, calls.items, calls.n, NULL, 0, false,
                 out);
}

/* The MSL kernels that a host file or a C++ header holds in string literals
 * (analyzer/input/cstring.h), each linted as a unit of its own under the dispatches of the run
 * (host) and of the file itself, so that a dispatch in the same file binds the kernel it
 * names. */
static int kl_engine_lint_strings(struct kl_arena *a, const struct kl_source *src,
                                  const struct kl_settings *s,
                                  const struct kl_dispatch_list *host, struct kl_diag_list *out,
                                  unsigned *nerrors, char *err, size_t errlen) {
  struct kl_cstring *v;
  size_t n = kl_cstring_find(a, src, &v);
  if (!n) return 0;
  bool read = false;
  for (size_t i = 0; host && i < host->nhosts && !read; i++)
    read = !strcmp(host->hosts[i], src->path);
  const struct kl_dispatch *calls = host ? host->items : NULL;
  size_t ncalls = host ? host->n : 0;
  if (!read) {
    /* The run's facts lack this file's own dispatches (it read no host file for a run without
     * MSL files, and the language server has none): they are added. */
    struct kl_dispatch_list own;
    kl_dispatch_list_init(&own, a);
    kl_host_dispatches(a, src, &own);
    for (size_t k = 0; k < ncalls; k++) *kl_dispatch_add(&own) = calls[k];
    /* Facts about the kernels, not calls this unit's own rules report. */
    for (size_t k = 0; k < own.n; k++) own.items[k].local = false;
    calls = own.items;
    ncalls = own.n;
  }
  struct kl_dialect_reuse reuse = {0};
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    /* A literal nested past what kernlint reads is no kernel it can check; the file's own code
     * and its other literals still are. */
    char skip[256];
    if (kl_engine_nesting(src, v[i].text, v[i].len, &v[i].map, false, NULL, skip, sizeof skip))
      continue;
    rc = kl_engine_lint_unit(a, src, v[i].text, v[i].len, &v[i].map, s, calls, ncalls, NULL, 0,
                             NULL, 0, false, &reuse, NULL, out, nerrors, err, errlen);
  }
  kl_dialect_reuse_end(&reuse);
  return rc;
}

/* Drop exact repeats (same rule, span and message) from a sorted list: several Python kernels can
 * share one header constant, and a finding in it is the same finding for each of them. */
static void kl_engine_dedupe(struct kl_diag_list *out) {
  size_t w = 0;
  for (size_t i = 0; i < out->n; i++) {
    const struct kl_diag *d = &out->items[i];
    if (w > 0) {
      const struct kl_diag *p = &out->items[w - 1];
      if (p->span.start == d->span.start && p->span.end == d->span.end &&
          !strcmp(p->rule_id, d->rule_id) && !strcmp(p->message, d->message))
        continue;
    }
    out->items[w++] = *d;
  }
  out->n = w;
}

static size_t kl_engine_header_insts(struct kl_arena *a, const struct kl_dispatch_list *host,
                                     const char *path, const struct kl_inst **out,
                                     const char *const **includers, size_t *nincluders);

static int kl_engine_lint_with(struct kl_arena *a, const struct kl_source *src,
                               const struct kl_settings *s, const struct kl_dispatch_list *host,
                               struct kl_engine_reuse *r, struct kl_diag_list *out,
                               unsigned *nerrors, char *err, size_t errlen);

int kl_engine_lint(struct kl_arena *a, const struct kl_source *src, const struct kl_settings *s,
                   const struct kl_dispatch_list *host, struct kl_diag_list *out, char *err,
                   size_t errlen) {
  return kl_engine_lint_counted(a, src, s, host, out, NULL, err, errlen);
}

int kl_engine_lint_counted(struct kl_arena *a, const struct kl_source *src,
                           const struct kl_settings *s, const struct kl_dispatch_list *host,
                           struct kl_diag_list *out, unsigned *nerrors, char *err, size_t errlen) {
  return kl_engine_lint_with(a, src, s, host, NULL, out, nerrors, err, errlen);
}

int kl_engine_lint_reuse(struct kl_arena *a, const struct kl_source *src,
                         const struct kl_settings *s, const struct kl_dispatch_list *host,
                         struct kl_engine_reuse *r, struct kl_diag_list *out, char *err,
                         size_t errlen) {
  return kl_engine_lint_with(a, src, s, host, r, out, NULL, err, errlen);
}

void kl_engine_reuse_end(struct kl_engine_reuse *r) {
  kl_dialect_reuse_end(&r->parse);
  kl_dialect_kept_end(&r->py);
  kl_factkeep_free(r->facts);
  r->facts = NULL;
}

/* kl_engine_lint_counted, an MSL file's parse and facts reusing r (NULL: none). */
static int kl_engine_lint_with(struct kl_arena *a, const struct kl_source *src,
                               const struct kl_settings *s, const struct kl_dispatch_list *host,
                               struct kl_engine_reuse *r, struct kl_diag_list *out,
                               unsigned *nerrors, char *err, size_t errlen) {
  if (nerrors) *nerrors = 0;
  /* Nothing to parse, and nothing a rule or a suppression could say about it. */
  if (src->len == 0) return 0;
  uint32_t code = 0;
  if (kl_engine_check_nesting(src, &code, err, errlen) != 0) return -1;
  int rc = 0;
  bool header = false;
  enum kl_lang lang = kl_host_is_host(src) ? KL_LANG_HOST : src->lang;
  switch (lang) {
  case KL_LANG_METAL:
    /* Most of what the lint will take is faulted in at once (its headers may take more). */
    kl_arena_prefault((size_t)code * KL_ENGINE_HEAP_PER_BYTE);
    /* Only a header is instantiated by the files that include it. */
    header = kl_host_is_header(src->path);
    for (size_t i = 0; host && !header && i < host->nincluded; i++)
      header = !strcmp(host->included[i], src->path);
    bool family10 = false;
    for (size_t i = 0; host && header && i < host->nfamily10 && !family10; i++)
      family10 = !strcmp(host->family10[i], src->path);
    const struct kl_inst *xinsts = NULL;
    const char *const *includers = NULL;
    size_t nincluders = 0;
    size_t nxinsts = host && header ? kl_engine_header_insts(a, host, src->path, &xinsts,
                                                             &includers, &nincluders)
                                    : 0;
    if (r && !r->facts) r->facts = kl_factkeep_new();
    rc = kl_engine_lint_unit(a, src, src->text, src->len, NULL, s, host ? host->items : NULL,
                             host ? host->n : 0, xinsts, nxinsts, includers, nincluders, family10,
                             r ? &r->parse : NULL, r ? r->facts : NULL, out, nerrors, err,
                             errlen);
    /* A C++ header may hold kernels in string literals rather than as code; a `.metal` file
     * (one that others include too) holds none. */
    if (rc == 0 && kl_host_is_header(src->path))
      rc = kl_engine_lint_strings(a, src, s, host, out, nerrors, err, errlen);
    break;
  case KL_LANG_PYTHON:
    rc = kl_engine_lint_python(a, src, s, r ? &r->py : NULL, out, nerrors, err, errlen);
    break;
  case KL_LANG_HOST:
    kl_engine_lint_host(a, src, s, host, out);
    rc = kl_engine_lint_strings(a, src, s, host, out, nerrors, err, errlen);
    break;
  case KL_LANG_UNKNOWN:
    break;
  }
  if (rc != 0) return rc;
  int ui = kl_rules_index("unused-suppression");
  kl_suppress_apply(src, out, ui < 0 ? KL_SEV_OFF : kl_rules_level(s, (size_t)ui));
  kl_diag_sort(out);
  kl_engine_dedupe(out);
  return 0;
}

/* The first occurrence of needle in t[0, n), or NULL (memmem is not C11). */
static const char *kl_engine_find(const char *t, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (t[i] == needle[0] && !memcmp(t + i, needle, k)) return t + i;
  return NULL;
}

/* kernel_file of a dispatch whose kernel two places define: known to be no one place. */
static const char kl_engine_many[] = "";

/* Whether dispatch d wants to know where its kernel is: a host call that sizes its threadgroups
 * (its findings are at the host line, with the kernel as a related location). */
static bool kl_engine_wants_place(const struct kl_dispatch *d) {
  return d->kernel && d->tg_present && d->kernel_file != kl_engine_many;
}

/* What the MSL file at path says about the host dispatches' kernels: where each kernel it
 * defines is (a kernel defined in two places, or a prefix naming two, has no one place), and
 * for a clamped size whether the kernel reduces across lanes. The file is parsed only when it
 * may answer: a clamped size's kernel may be anywhere (its name can be built by a macro), a
 * place is looked for only in a file whose text holds the kernel's name. */
static void kl_engine_kernels(const char *path, bool clamped, struct kl_dispatch_list *facts) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_unit unit;
  char err[256];
  if (kl_source_load(a, path, &src, err, sizeof err) != 0 || !src.len || kl_host_is_host(&src)) {
    kl_arena_delete(a);
    return;
  }
  bool named = false;
  for (size_t i = 0; i < facts->n && !named; i++) {
    const struct kl_dispatch *d = &facts->items[i];
    named = kl_engine_wants_place(d) && kl_engine_find(src.text, src.len, d->kernel);
  }
  if ((!clamped && !named) || kl_engine_check_nesting(&src, NULL, err, sizeof err) != 0 ||
      kl_dialect_parse(a, &src, src.text, src.len, NULL, kl_engine_dirname(a, path), &unit, err,
                       sizeof err) != 0) {
    kl_arena_delete(a);
    return;
  }
  struct kl_model model;
  kl_model_build(a, &unit, &model);
  const char *kept = NULL;
  for (size_t i = 0; i < facts->n; i++) {
    struct kl_dispatch *d = &facts->items[i];
    if (!d->kernel) continue;
    bool place = kl_engine_wants_place(d);
    bool reduce = d->tg_clamped && !d->reduces;
    for (size_t k = 0; k < model.nfunctions && (place || reduce); k++) {
      const struct kl_function *f = &model.functions[k];
      if (!kl_model_names(&model, d->kernel, d->kernel_prefix, f)) continue;
      const char *r = reduce ? kl_model_simd_reduction(a, &model, f) : NULL;
      if (r) {
        d->reduces = kl_arena_strdup(facts->arena, r);
        reduce = false;
      }
      if (!place || !f->is_kernel || kl_node_null(f->name_node)) continue;
      struct kl_span at = kl_diag_span_mapped(&src, &unit.map, ts_node_start_byte(f->name_node),
                                              ts_node_end_byte(f->name_node));
      if (d->kernel_file && (strcmp(d->kernel_file, path) || d->kernel_at.start != at.start)) {
        d->kernel_file = kl_engine_many;
        place = false;
        continue;
      }
      if (!kept) kept = kl_arena_strdup(facts->arena, path);
      d->kernel_file = kept;
      d->kernel_at = at;
    }
  }
  kl_dialect_release(&unit);
  kl_arena_delete(a);
}

/* Whether path may hold host code: a host extension, or a header (checked by its text). */
static bool kl_engine_maybe_host(const char *path) {
  return kl_source_lang(path) == KL_LANG_HOST || kl_host_is_header(path);
}

/* Whether an MSL file may define a templated kernel (text only: it is read, never parsed). */
static bool kl_engine_template_kernels(const struct kl_source *src) {
  const char *t = src->text;
  size_t n = src->len;
  return kl_engine_find(t, n, "template") &&
         (kl_engine_find(t, n, "[[kernel") || kl_engine_find(t, n, "kernel void"));
}

/* The next quoted #include at or after p in [p, end): its file name (the path's last part) in
 * [*base, *base + *n); returns where to go on from, or NULL when there is none. */
static const char *kl_engine_next_include(const char *p, const char *end, const char **base,
                                          size_t *n) {
  for (; (p = kl_engine_find(p, (size_t)(end - p), "#include")) != NULL; p += 8) {
    const char *q = p + 8;
    while (q < end && (*q == ' ' || *q == '\t')) q++;
    if (q >= end || *q != '"') continue;
    const char *e = memchr(q + 1, '"', (size_t)(end - q - 1));
    if (!e) continue;
    *base = q + 1;
    for (const char *s = q + 1; s < e; s++)
      if (*s == '/') *base = s + 1;
    *n = (size_t)(e - *base);
    return p + 8;
  }
  return NULL;
}

/* Where the path of an include starts, given where its file name (kl_engine_next_include's base)
 * starts: after the opening quote, which is always there. */
static const char *kl_engine_quote_start(const char *base) {
  while (base[-1] != '"') base--;
  return base;
}

/* Whether the paths of a list made by kl_engine_include_names name one of names (file names:
 * a path's last part). */
static bool kl_engine_includes(const char *list, const char *const *names, size_t n) {
  for (const char *b = list; b && *b; b += strlen(b) + 1) {
    const char *slash = strrchr(b, '/');
    for (size_t i = 0; i < n; i++)
      if (!strcmp(names[i], slash ? slash + 1 : b)) return true;
  }
  return false;
}

/* The paths the text includes with quotes (as written), each NUL-terminated, the list ended by
 * an empty one (malloc'd); NULL when there are none. */
static char *kl_engine_include_names(const struct kl_source *src) {
  const char *end = src->text + src->len, *base;
  size_t n, total = 0;
  /* An empty file name (`#include ""`, a path ending in a slash) is no file of the run, and would
   * end the list early. The path starts after the quote, n bytes before its file name ends. */
  for (const char *p = src->text; (p = kl_engine_next_include(p, end, &base, &n)) != NULL;)
    if (n) total += (size_t)(base + n - kl_engine_quote_start(base)) + 1;
  if (!total) return NULL;
  char *list = kl_arena_xmalloc(total + 1), *w = list;
  for (const char *p = src->text; (p = kl_engine_next_include(p, end, &base, &n)) != NULL;) {
    if (!n) continue;
    /* A name with a NUL in it matches none; the source loader refuses such files anyway. */
    const char *q = kl_engine_quote_start(base);
    memcpy(w, q, (size_t)(base + n - q));
    w += base + n - q;
    *w++ = '\0';
  }
  *w = '\0';
  return list;
}

/* Copies of strings in one arena, each distinct string once: the instantiations of a run repeat
 * the same few names and arguments ("float", "half", "32") thousands of times. */
struct kl_intern {
  struct kl_arena *a;
  const char **slots; /* open addressing, a power of two in size */
  size_t n, cap;
};

static uint32_t kl_intern_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

static const char *kl_intern(struct kl_intern *t, const char *s) {
  if (2 * (t->n + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    const char **slots = kl_arena_xmalloc(cap * sizeof *slots);
    memset(slots, 0, cap * sizeof *slots);
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->slots[i]) continue;
      size_t h = kl_intern_hash(t->slots[i]) & (cap - 1);
      while (slots[h]) h = (h + 1) & (cap - 1);
      slots[h] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
  }
  size_t h = kl_intern_hash(s) & (t->cap - 1);
  for (; t->slots[h]; h = (h + 1) & (t->cap - 1))
    if (!strcmp(t->slots[h], s)) return t->slots[h];
  t->n++;
  return t->slots[h] = kl_arena_strdup(t->a, s);
}

/* A parallel loop's shared state: the next index to take. */
struct kl_par {
  pthread_mutex_t mu;
  size_t next, n;
  void (*fn)(void *ctx, size_t i);
  void *ctx;
};

static void *kl_par_worker(void *arg) {
  struct kl_par *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    size_t i = p->next < p->n ? p->next++ : p->n;
    pthread_mutex_unlock(&p->mu);
    if (i >= p->n) return NULL;
    p->fn(p->ctx, i);
  }
}

/* Run fn(ctx, i) for every i below n on up to jobs threads (the calling thread is one of them),
 * each i once, in no set order; fewer threads when they cannot be made. */
static void kl_engine_parallel(size_t n, unsigned jobs, void (*fn)(void *ctx, size_t i),
                               void *ctx) {
  struct kl_par p = {.n = n, .fn = fn, .ctx = ctx};
  pthread_mutex_init(&p.mu, NULL);
  unsigned extra = jobs > 1 ? jobs - 1 : 0;
  if (n && extra > n - 1) extra = (unsigned)(n - 1);
  pthread_t *tids = kl_arena_xmalloc((extra ? extra : 1) * sizeof *tids);
  unsigned started = 0;
  pthread_attr_t at;
  kl_engine_attr_init(&at);
  while (started < extra && pthread_create(&tids[started], &at, kl_par_worker, &p) == 0)
    started++;
  pthread_attr_destroy(&at);
  kl_par_worker(&p);
  for (unsigned t = 0; t < started; t++) pthread_join(tids[t], NULL);
  free(tids);
  pthread_mutex_destroy(&p.mu);
}

void kl_engine_attr_init(pthread_attr_t *at) {
  /* The analyses recurse as deep on one thread as on another: a file must not lint on the main
   * thread and overflow on a worker. */
  pthread_attr_init(at);
  struct rlimit rl;
  if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur > 0)
    pthread_attr_setstacksize(at, (size_t)rl.rlim_cur);
  else
    pthread_attr_setstacksize(at, (size_t)8 << 20);
}

/* The facts pass over the run's MSL files, one slot per path, filled on any thread. */
/* A file the instantiation pass reads, by its length. */
struct kl_inst_job {
  uint32_t size;
  size_t path;
};

struct kl_inst_pass {
  const char *const *paths;
  const char **names; /* per path: the file name when it has templated kernels, else NULL */
  char **includes;    /* per path: kl_engine_include_names of the file, or NULL */
  bool *mpp;          /* per path: the text names Metal Performance Primitives */
  const char *const *found;
  size_t nfound;
  struct kl_arena **arenas; /* per path: what its instantiations need, or NULL */
  struct kl_inst **insts;
  size_t *ninsts;
  uint32_t *sizes;           /* per path: the file's length, 0 when unread */
  struct kl_inst_job *order; /* the paths to read, largest first */
};

static bool kl_engine_msl_path(const char *path) {
  enum kl_lang l = kl_source_lang(path);
  return l == KL_LANG_METAL || l == KL_LANG_UNKNOWN;
}

static void kl_inst_names(void *ctx, size_t i) {
  struct kl_inst_pass *ps = ctx;
  if (!kl_engine_msl_path(ps->paths[i])) return;
  struct kl_arena *tmp = kl_arena_new();
  struct kl_source src;
  char err[256];
  if (kl_source_load(tmp, ps->paths[i], &src, err, sizeof err) != 0) {
    kl_arena_delete(tmp);
    return;
  }
  if (kl_engine_template_kernels(&src)) {
    const char *slash = strrchr(ps->paths[i], '/');
    ps->names[i] = slash ? slash + 1 : ps->paths[i];
  }
  /* What the file includes is all the next sub-pass needs to skip it without reading it again. */
  ps->includes[i] = kl_engine_include_names(&src);
  ps->mpp[i] = kl_engine_find(src.text, src.len, "MetalPerformancePrimitives") ||
               kl_engine_find(src.text, src.len, "mpp::tensor_ops");
  ps->sizes[i] = src.len;
  kl_arena_delete(tmp);
}

/* ---- Headers only family-10 files include ------------------------------------------------- */

/* Which of the run's files can only run on Apple GPU family 10 by their own text (and the
 * headers they include): kl_expand_family10, one slot per path, filled on any thread. */
struct kl_f10_pass {
  const struct kl_inst_pass *ps;
  bool *own;
  const bool *ends; /* per path: an end of an include edge between the run's files */
};

static void kl_f10_own(void *ctx, size_t i) {
  struct kl_f10_pass *fp = ctx;
  const struct kl_inst_pass *ps = fp->ps;
  if (!fp->ends[i] || !kl_engine_msl_path(ps->paths[i]) || (!ps->includes[i] && !ps->mpp[i]))
    return;
  struct kl_arena *tmp = kl_arena_new();
  struct kl_source src;
  char err[256];
  if (kl_source_load(tmp, ps->paths[i], &src, err, sizeof err) == 0 && !kl_host_is_host(&src))
    fp->own[i] =
        kl_expand_family10(tmp, src.text, src.len, NULL, kl_engine_dirname(tmp, ps->paths[i]));
  kl_arena_delete(tmp);
}

/* The file of the run (its index in real, the run's real paths: NULL where not a header) that an
 * include of name from folder dir reaches, found as the preprocessor finds it (next to the file,
 * then a project-root path from the folders above); n when it is no header of the run. */
static size_t kl_engine_resolve(const char *dir, const char *name, char *const *real, size_t n) {
  char cand[PATH_MAX], up[PATH_MAX], rp[PATH_MAX];
  int w = snprintf(up, sizeof up, "%s", dir);
  if (w < 0 || (size_t)w >= sizeof up) return n;
  for (int level = 0; level < 9; level++) {
    w = snprintf(cand, sizeof cand, "%s/%s", up, name);
    if (w < 0 || (size_t)w >= sizeof cand) return n;
    if (realpath(cand, rp)) {
      for (size_t j = 0; j < n; j++)
        if (real[j] && !strcmp(real[j], rp)) return j;
      return n; /* the preprocessor takes the first file found: one outside the run */
    }
    if (!strchr(name, '/')) return n;
    if (level == 0 && !realpath(dir, up)) return n;
    char *slash = strrchr(up, '/');
    if (!slash || slash == up) return n;
    *slash = '\0';
  }
  return n;
}

/* The MSL files of the run with templated kernels that another file of the run includes
 * (`#include "copy_impl.metal"`), into facts->included: such a file is a header whatever its
 * extension, linted alone and specialised by its includers' instantiations, not analysed
 * unspecialised (a branch no instantiation builds is dead there). */
static void kl_engine_included(const struct kl_inst_pass *ps, size_t npaths,
                               struct kl_dispatch_list *facts) {
  char **real = kl_arena_xmalloc((npaths + 1) * sizeof *real);
  bool any = false;
  for (size_t j = 0; j < npaths; j++) {
    char rp[PATH_MAX];
    real[j] = ps->names[j] && !kl_host_is_header(ps->paths[j]) && realpath(ps->paths[j], rp)
                  ? strdup(rp)
                  : NULL;
    any = any || real[j];
  }
  bool *in = kl_arena_xmalloc((npaths + 1) * sizeof *in);
  memset(in, 0, (npaths + 1) * sizeof *in);
  for (size_t i = 0; i < npaths && any; i++) {
    if (!ps->includes[i]) continue;
    const char *slash = strrchr(ps->paths[i], '/');
    char dir[PATH_MAX];
    if (!slash)
      snprintf(dir, sizeof dir, ".");
    else
      snprintf(dir, sizeof dir, "%.*s", (int)(slash - ps->paths[i]), ps->paths[i]);
    for (const char *b = ps->includes[i]; *b; b += strlen(b) + 1) {
      size_t j = kl_engine_resolve(dir, b, real, npaths);
      if (j < npaths && j != i) in[j] = true;
    }
  }
  for (size_t j = 0; j < npaths; j++) {
    if (in[j]) {
      KL_VEC_PUSH(facts->arena, facts->included, facts->nincluded, facts->cap_included);
      facts->included[facts->nincluded++] = kl_arena_strdup(facts->arena, ps->paths[j]);
    }
    free(real[j]);
  }
  free(real);
  free(in);
}

/* The quoted include edges between files of the run that land on a file target() accepts:
 * (*from)[k] includes (*to)[k], by path index (malloc'd; the caller frees both); returns their
 * number. */
static size_t kl_engine_include_edges(const struct kl_inst_pass *ps, size_t npaths,
                                      bool (*target)(const char *), size_t **from, size_t **to) {
  char **real = kl_arena_xmalloc((npaths + 1) * sizeof *real);
  for (size_t j = 0; j < npaths; j++) {
    char rp[PATH_MAX];
    real[j] = target(ps->paths[j]) && realpath(ps->paths[j], rp) ? strdup(rp) : NULL;
  }
  size_t n = 0, cap = 0;
  *from = *to = NULL;
  for (size_t i = 0; i < npaths; i++) {
    if (!ps->includes[i]) continue;
    const char *slash = strrchr(ps->paths[i], '/');
    char dir[PATH_MAX];
    if (!slash)
      snprintf(dir, sizeof dir, ".");
    else
      snprintf(dir, sizeof dir, "%.*s", (int)(slash - ps->paths[i]), ps->paths[i]);
    for (const char *b = ps->includes[i]; *b; b += strlen(b) + 1) {
      size_t j = kl_engine_resolve(dir, b, real, npaths);
      if (j >= npaths || j == i) continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 64;
        *from = kl_arena_xrealloc(*from, cap * sizeof **from);
        *to = kl_arena_xrealloc(*to, cap * sizeof **to);
      }
      (*from)[n] = i;
      (*to)[n++] = j;
    }
  }
  for (size_t j = 0; j < npaths; j++) free(real[j]);
  free(real);
  return n;
}

/* The headers of the run that only files for Apple GPU family 10 include, directly or through
 * other headers, into facts->family10: a header is linted alone, and its code runs only where
 * its includers do. A header included by no file of the run, or by one that can run elsewhere,
 * is not one. Only runs that name Metal Performance Primitives somewhere pay for this. */
static void kl_engine_family10(const struct kl_inst_pass *ps, size_t npaths, unsigned jobs,
                               struct kl_dispatch_list *facts) {
  bool any = false;
  for (size_t i = 0; i < npaths && !any; i++) any = ps->mpp[i];
  if (!any) return;
  size_t *from, *to;
  size_t nedges = kl_engine_include_edges(ps, npaths, kl_host_is_header, &from, &to);
  /* A file no edge touches is in the set by its own text alone and is never reported, nor
   * counts for any other: its text is not expanded (a run of one file expands none). */
  bool *ends = kl_arena_xmalloc((npaths + 1) * sizeof *ends);
  memset(ends, 0, (npaths + 1) * sizeof *ends);
  for (size_t k = 0; k < nedges; k++) ends[from[k]] = ends[to[k]] = true;
  struct kl_f10_pass fp = {ps, kl_arena_xmalloc((npaths + 1) * sizeof *fp.own), ends};
  memset(fp.own, 0, (npaths + 1) * sizeof *fp.own);
  if (nedges) kl_engine_parallel(npaths, jobs, kl_f10_own, &fp);
  /* Least fixed point: a header joins once it has includers and all of them are in. */
  bool *in = kl_arena_xmalloc((npaths + 1) * sizeof *in);
  memcpy(in, fp.own, npaths * sizeof *in);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t j = 0; j < npaths; j++) {
      if (in[j]) continue;
      bool some = false, all = true;
      for (size_t k = 0; k < nedges && all; k++) {
        if (to[k] != j) continue;
        some = true;
        all = in[from[k]];
      }
      if (some && all) in[j] = changed = true;
    }
  }
  for (size_t j = 0; j < npaths; j++) {
    if (in[j] && !fp.own[j]) {
      KL_VEC_PUSH(facts->arena, facts->family10, facts->nfamily10, facts->cap_family10);
      facts->family10[facts->nfamily10++] = kl_arena_strdup(facts->arena, ps->paths[j]);
    }
  }
  free(from);
  free(to);
  free(in);
  free(fp.own);
  free(ends);
}

/* The quoted includes between the run's MSL files, into facts->edge_from / edge_to: which
 * files' instantiations reach a header (kl_engine_lint). */
static void kl_engine_edges(const struct kl_inst_pass *ps, size_t npaths, struct kl_intern *strs,
                            struct kl_dispatch_list *facts) {
  size_t *from, *to;
  size_t n = kl_engine_include_edges(ps, npaths, kl_engine_msl_path, &from, &to);
  for (size_t k = 0; k < n; k++) {
    KL_VEC_PUSH(facts->arena, facts->edge_from, facts->nedges, facts->cap_edge_from);
    KL_VEC_PUSH(facts->arena, facts->edge_to, facts->nedges, facts->cap_edge_to);
    facts->edge_from[facts->nedges] = kl_intern(strs, ps->paths[from[k]]);
    facts->edge_to[facts->nedges++] = kl_intern(strs, ps->paths[to[k]]);
  }
  free(from);
  free(to);
}

/* The instantiations of the run that reach the header at path: those made by files that include
 * it, directly or through other files of the run. Into *out (arena a); returns their number.
 * Those files go to *includers (*nincluders of them): what they include before the header, it
 * sees. */
static size_t kl_engine_header_insts(struct kl_arena *a, const struct kl_dispatch_list *host,
                                     const char *path, const struct kl_inst **out,
                                     const char *const **includers, size_t *nincluders) {
  *out = NULL;
  *includers = NULL;
  *nincluders = 0;
  if (!host->ninsts) return 0;
  /* The paths of the edges and instantiations are interned (one pointer per path): path's own
   * pointer is found once, and the walk compares pointers. A path no edge leads to is reached by
   * no other file. */
  const char *self = NULL;
  for (size_t k = 0; k < host->nedges && !self; k++)
    if (!strcmp(path, host->edge_to[k])) self = host->edge_to[k];
  if (!self) return 0;
  /* The files that reach path, grown to a fixed point over the include edges. */
  size_t cap = host->nedges + 1, n = 1;
  const char **in = kl_arena_alloc(a, cap * sizeof *in);
  in[0] = self;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 0; k < host->nedges; k++) {
      bool to = false, from = false;
      for (size_t m = 0; m < n && !(to && from); m++) {
        to = to || in[m] == host->edge_to[k];
        from = from || in[m] == host->edge_from[k];
      }
      if (to && !from && n < cap) in[n++] = host->edge_from[k], changed = true;
    }
  }
  *includers = in + 1;
  *nincluders = n - 1;
  struct kl_inst *v = kl_arena_alloc(a, host->ninsts * sizeof *v);
  size_t nv = 0;
  for (size_t k = 0; k < host->ninsts; k++)
    for (size_t m = 1; m < n; m++)
      if (in[m] == host->inst_from[k]) {
        v[nv++] = host->insts[k];
        break;
      }
  *out = v;
  return nv;
}

/* Whether the instantiation pass reads path i: an MSL file that includes a templated header. */
static bool kl_inst_reads(const struct kl_inst_pass *ps, size_t i) {
  return kl_engine_msl_path(ps->paths[i]) &&
         kl_engine_includes(ps->includes[i], ps->found, ps->nfound);
}

/* Larger files first (ties in path order): a big file started last would leave the other
 * threads idle while it is expanded alone. */
static int kl_inst_by_size(const void *x, const void *y) {
  const struct kl_inst_job *a = x, *b = y;
  if (a->size != b->size) return a->size > b->size ? -1 : 1;
  return a->path < b->path ? -1 : a->path > b->path;
}

static bool kl_engine_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether the text defines (or declares) a function template named name itself: `name (` whose
 * declaration, back to the last `;` or brace, has a `template` followed by `<`. An explicit
 * instantiation (`template [[...]] ... name<A>(...)`) is none. */
static bool kl_engine_defines_template(const char *t, size_t n, const char *name) {
  size_t ln = strlen(name);
  const char *end = t + n;
  for (const char *p = t; ln && (p = kl_engine_find(p, (size_t)(end - p), name)) != NULL; p++) {
    const char *q = p + ln;
    if ((p > t && kl_engine_ident(p[-1])) || (q < end && kl_engine_ident(*q))) continue;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')) q++;
    if (q >= end || *q != '(') continue;
    const char *b = p;
    while (b > t && b[-1] != ';' && b[-1] != '{' && b[-1] != '}') b--;
    const char *tp = NULL;
    for (const char *r = b; (r = kl_engine_find(r, (size_t)(p - r), "template")) != NULL; r++)
      if ((r == t || !kl_engine_ident(r[-1])) && !kl_engine_ident(r[8])) tp = r;
    if (!tp) continue;
    tp += 8;
    while (tp < p && (*tp == ' ' || *tp == '\t' || *tp == '\n' || *tp == '\r')) tp++;
    if (tp < p && *tp == '<') return true;
  }
  return false;
}

static void kl_inst_read_path(void *ctx, size_t at) {
  struct kl_inst_pass *ps = ctx;
  size_t i = ps->order[at].path;
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  struct kl_inst *v = NULL;
  size_t nv = 0;
  if (kl_source_load(a, ps->paths[i], &src, err, sizeof err) == 0 && !kl_host_is_host(&src))
    nv = kl_dialect_instances(a, src.text, src.len, kl_engine_dirname(a, ps->paths[i]), &v);
  if (nv) {
    /* Only names and arguments outlive the file: its text and expansion go now. */
    struct kl_arena *keep = kl_arena_new();
    struct kl_inst *w = kl_arena_alloc(keep, nv * sizeof *w);
    size_t nw = 0;
    /* The names asked already (a file instantiates few templates many times), and the answers. */
    const char **asked = kl_arena_alloc(a, nv * sizeof *asked);
    bool *own = kl_arena_alloc(a, nv * sizeof *own);
    size_t nasked = 0;
    for (size_t k = 0; k < nv; k++) {
      struct kl_inst c = v[k];
      size_t m = 0;
      while (m < nasked && strcmp(asked[m], c.function)) m++;
      if (m == nasked) {
        asked[nasked] = c.function;
        own[nasked++] = kl_engine_defines_template(src.text, src.len, c.function);
      }
      /* The file's own template of that name is the one it instantiates, no header's. */
      if (own[m]) continue;
      c.start = c.end = c.textlen = 0;
      c.text = NULL;
      c.placeholder = false;
      c.function = kl_arena_strdup(keep, c.function);
      c.host_name = c.host_name ? kl_arena_strdup(keep, c.host_name) : NULL;
      const char **args = kl_arena_alloc(keep, (c.ntargs + 1) * sizeof *args);
      for (size_t j = 0; j < c.ntargs; j++) args[j] = kl_arena_strdup(keep, c.targs[j]);
      c.targs = args;
      w[nw++] = c;
    }
    ps->arenas[i] = keep;
    ps->insts[i] = w;
    ps->ninsts[i] = nw;
  }
  kl_arena_delete(a);
}

/* The explicit instantiations the run's MSL files make of the templated kernels in the headers
 * of the run they include: a header is linted alone, and its kernels are specialised by them.
 * Files are read on up to jobs threads; the instantiations are kept in path order. */
static void kl_engine_instances(const char *const *paths, size_t npaths, unsigned jobs,
                                struct kl_dispatch_list *facts) {
  struct kl_inst_pass ps = {.paths = paths};
  ps.names = kl_arena_xmalloc((npaths + 1) * sizeof *ps.names);
  memset(ps.names, 0, (npaths + 1) * sizeof *ps.names);
  ps.includes = kl_arena_xmalloc((npaths + 1) * sizeof *ps.includes);
  memset(ps.includes, 0, (npaths + 1) * sizeof *ps.includes);
  ps.sizes = kl_arena_xmalloc((npaths + 1) * sizeof *ps.sizes);
  memset(ps.sizes, 0, (npaths + 1) * sizeof *ps.sizes);
  ps.mpp = kl_arena_xmalloc((npaths + 1) * sizeof *ps.mpp);
  memset(ps.mpp, 0, (npaths + 1) * sizeof *ps.mpp);
  kl_engine_parallel(npaths, jobs, kl_inst_names, &ps);
  kl_engine_family10(&ps, npaths, jobs, facts);
  kl_engine_included(&ps, npaths, facts);
  /* The names in path order, as one list every file is checked against. */
  const char **found = kl_arena_xmalloc((npaths + 1) * sizeof *found);
  for (size_t i = 0; i < npaths; i++)
    if (ps.names[i]) found[ps.nfound++] = ps.names[i];
  ps.found = found;
  if (ps.nfound) {
    ps.arenas = kl_arena_xmalloc((npaths + 1) * sizeof *ps.arenas);
    ps.insts = kl_arena_xmalloc((npaths + 1) * sizeof *ps.insts);
    ps.ninsts = kl_arena_xmalloc((npaths + 1) * sizeof *ps.ninsts);
    memset(ps.arenas, 0, (npaths + 1) * sizeof *ps.arenas);
    memset(ps.insts, 0, (npaths + 1) * sizeof *ps.insts);
    memset(ps.ninsts, 0, (npaths + 1) * sizeof *ps.ninsts);
    ps.order = kl_arena_xmalloc((npaths + 1) * sizeof *ps.order);
    size_t nread = 0;
    for (size_t i = 0; i < npaths; i++)
      if (kl_inst_reads(&ps, i)) ps.order[nread++] = (struct kl_inst_job){ps.sizes[i], i};
    qsort(ps.order, nread, sizeof *ps.order, kl_inst_by_size);
    kl_engine_parallel(nread, jobs, kl_inst_read_path, &ps);
    free(ps.order);
    struct kl_intern strs = {facts->arena, NULL, 0, 0};
    for (size_t i = 0; i < npaths; i++) {
      for (size_t k = 0; k < ps.ninsts[i]; k++) {
        struct kl_inst c = ps.insts[i][k];
        c.function = kl_intern(&strs, c.function);
        c.host_name = c.host_name ? kl_intern(&strs, c.host_name) : NULL;
        const char **args = kl_arena_alloc(facts->arena, (c.ntargs + 1) * sizeof *args);
        for (size_t j = 0; j < c.ntargs; j++) args[j] = kl_intern(&strs, c.targs[j]);
        c.targs = args;
        KL_VEC_PUSH(facts->arena, facts->insts, facts->ninsts, facts->cap_insts);
        KL_VEC_PUSH(facts->arena, facts->inst_from, facts->ninsts, facts->cap_inst_from);
        facts->inst_from[facts->ninsts] = kl_intern(&strs, paths[i]);
        facts->insts[facts->ninsts++] = c;
      }
      kl_arena_delete(ps.arenas[i]);
    }
    kl_engine_edges(&ps, npaths, &strs, facts);
    /* The list is read by every MSL file of the run: no room is kept for more. */
    struct kl_inst *fit = kl_arena_fit(facts->arena, facts->insts, facts->cap_insts,
                                       facts->ninsts, sizeof *facts->insts);
    if (fit) facts->insts = fit, facts->cap_insts = facts->ninsts;
    const char **from = kl_arena_fit(facts->arena, facts->inst_from, facts->cap_inst_from,
                                     facts->ninsts, sizeof *facts->inst_from);
    if (from) facts->inst_from = from, facts->cap_inst_from = facts->ninsts;
    free(strs.slots);
    free(ps.arenas);
    free(ps.insts);
    free(ps.ninsts);
  }
  free(found);
  for (size_t i = 0; i < npaths; i++) free(ps.includes[i]);
  free(ps.includes);
  free(ps.names);
  free(ps.sizes);
  free(ps.mpp);
}

void kl_engine_host_facts(const char *const *paths, size_t npaths, unsigned jobs,
                          struct kl_dispatch_list *facts) {
  /* Facts only matter to MSL files: a run without one reads nothing twice. */
  bool msl = false;
  for (size_t i = 0; i < npaths && !msl; i++)
    msl = kl_engine_msl_path(paths[i]) && !kl_engine_maybe_host(paths[i]);
  if (!msl) return;
  kl_engine_instances(paths, npaths, jobs, facts);
  for (size_t i = 0; i < npaths; i++) {
    if (!kl_engine_maybe_host(paths[i])) continue;
    struct kl_arena *tmp = kl_arena_new();
    struct kl_source src;
    char err[256];
    if (kl_source_load(tmp, paths[i], &src, err, sizeof err) == 0 && kl_host_is_host(&src)) {
      kl_host_dispatches(tmp, &src, facts);
      KL_VEC_PUSH(facts->arena, facts->hosts, facts->nhosts, facts->cap_hosts);
      facts->hosts[facts->nhosts++] = kl_arena_strdup(facts->arena, paths[i]);
    }
    kl_arena_delete(tmp);
  }
  bool clamped = false, sized = false;
  for (size_t i = 0; i < facts->n; i++) {
    facts->items[i].local = false;
    clamped = clamped || (facts->items[i].tg_clamped && facts->items[i].kernel);
    sized = sized || kl_engine_wants_place(&facts->items[i]);
  }
  /* Parsing an MSL file twice is only worth it for a clamped size or a sized launch of a kernel
   * the file names (kl_engine_kernels reads the text first). */
  for (size_t i = 0; (clamped || sized) && i < npaths; i++)
    if (kl_engine_msl_path(paths[i])) kl_engine_kernels(paths[i], clamped, facts);
  for (size_t i = 0; i < facts->n; i++)
    if (facts->items[i].kernel_file == kl_engine_many) facts->items[i].kernel_file = NULL;
}
