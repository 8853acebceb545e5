/* Emitters. Text and GitHub workflow commands are streamed as files arrive, so a long run shows
 * findings early. JSON and SARIF are single documents whose head depends on the whole run (the
 * failures, before the files), so they are written in kl_emit_delete; but each file's part is
 * encoded by jansson as its output arrives and kept as text, a tenth of what its tree would hold
 * for the whole run. */
#include "analyzer/report/emit.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/report/baseline.h"
#include "analyzer/core/version.h"
#include "rules/rules.h"

/* Growing malloc'd string for URIs, help text and the documents' parts kept as text. */
struct kl_buf {
  char *s;
  size_t n, cap;
};

/* The elements of one of a document's arrays, kept as the text jansson writes for them in place:
 * each after ",\n" (the first after "\n") and its indentation, then indented itself. */
struct kl_json_spool {
  struct kl_buf text;
  size_t n;       /* elements */
  unsigned depth; /* where the elements sit: the array's own depth + 1 */
};

struct kl_emitter {
  enum kl_format fmt;
  FILE *out;
  bool color;
  bool bad;                       /* jansson could not encode a part */
  struct kl_json_spool files;     /* JSON: files[] */
  json_t *failures;               /* JSON: errors[]; SARIF: toolExecutionNotifications[] */
  struct kl_json_spool results;   /* SARIF: results[] */
  struct kl_json_spool artifacts; /* SARIF: artifacts[] */
  char *cwd;                      /* SARIF, GitHub: where relative paths start (%SRCROOT%) */
  const char *fold;               /* text: the rule whose findings are counted, not printed */
  size_t folded;
  struct kl_emit_counts counts;
};

/* ---- shared helpers ---- */

static void kl_buf_add(struct kl_buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->s = kl_arena_xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}

static void kl_buf_str(struct kl_buf *b, const char *s) {
  kl_buf_add(b, s, strlen(s));
}

static void kl_buf_spaces(struct kl_buf *b, unsigned n) {
  static const char sp[] = "                                ";
  for (unsigned k; n; n -= k) {
    k = n < sizeof sp - 1 ? n : (unsigned)(sizeof sp - 1);
    kl_buf_add(b, sp, k);
  }
}

/* v's text as jansson writes it (two spaces a level) at depth within a document: its text alone,
 * with every line after the first indented by the depth. A string never holds a raw newline (JSON
 * escapes it), so each one is a line break jansson wrote. False when jansson cannot encode v. */
static bool kl_json_text(struct kl_buf *b, const json_t *v, unsigned depth) {
  char *t = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
  if (!t) return false;
  const char *p = t;
  for (const char *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
    kl_buf_add(b, p, (size_t)(nl + 1 - p));
    kl_buf_spaces(b, 2 * depth);
  }
  kl_buf_str(b, p);
  free(t);
  return true;
}

/* Write v at depth within the document being written. */
static void kl_json_write(struct kl_emitter *e, const json_t *v, unsigned depth) {
  struct kl_buf b = {0};
  kl_buf_add(&b, "", 0);
  if (!kl_json_text(&b, v, depth)) e->bad = true;
  fwrite(b.s, 1, b.n, e->out);
  free(b.s);
}

/* Append an element (taking it) to a spooled array, as the text jansson would write for it. */
static void kl_spool_add(struct kl_emitter *e, struct kl_json_spool *sp, json_t *v) {
  kl_buf_str(&sp->text, sp->n ? ",\n" : "\n");
  kl_buf_spaces(&sp->text, 2 * sp->depth);
  if (!kl_json_text(&sp->text, v, sp->depth)) e->bad = true;
  sp->n++;
  json_decref(v);
}

/* Write a spooled array in place, brackets and all, and free its text. */
static void kl_spool_write(struct kl_emitter *e, struct kl_json_spool *sp) {
  if (!sp->n) {
    fputs("[]", e->out);
  } else {
    fputc('[', e->out);
    fwrite(sp->text.s, 1, sp->text.n, e->out);
    fputc('\n', e->out);
    for (unsigned i = 0; i + 1 < sp->depth; i++) fputs("  ", e->out);
    fputc(']', e->out);
  }
  free(sp->text.s);
  sp->text = (struct kl_buf){0};
}

/* A JSON string for s. Paths are arbitrary bytes and jansson refuses invalid UTF-8, so bad
 * bytes become U+FFFD instead of silently dropping the whole value. */
static json_t *kl_json_str(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  size_t n = strlen(s);
  char *buf = kl_arena_xmalloc(n * 3 + 1), *o = buf;
  const unsigned char *end = (const unsigned char *)s + n;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t k = kl_source_utf8_seq(p, (size_t)(end - p));
    if (k) {
      memcpy(o, p, k);
      o += k;
      p += k;
    } else {
      memcpy(o, "\xEF\xBF\xBD", 3);
      o += 3;
      p++;
    }
  }
  *o = '\0';
  j = json_string(buf);
  free(buf);
  return j ? j : json_string("");
}

static void kl_json_set_str(json_t *obj, const char *key, const char *s) {
  json_object_set_new(obj, key, kl_json_str(s));
}

static void kl_json_set_int(json_t *obj, const char *key, size_t v) {
  json_object_set_new(obj, key, json_integer((json_int_t)v));
}

int kl_emit_format_parse(const char *name, enum kl_format *out) {
  if (!strcmp(name, "text"))
    *out = KL_FORMAT_TEXT;
  else if (!strcmp(name, "json"))
    *out = KL_FORMAT_JSON;
  else if (!strcmp(name, "sarif"))
    *out = KL_FORMAT_SARIF;
  else if (!strcmp(name, "github"))
    *out = KL_FORMAT_GITHUB;
  else
    return -1;
  return 0;
}

/* ---- text ---- */

#define KL_C_RESET "\033[0m"
#define KL_C_BOLD "\033[1m"
#define KL_C_RED "\033[1;31m"
#define KL_C_MAGENTA "\033[1;35m"
#define KL_C_CYAN "\033[1;36m"
#define KL_C_GREEN "\033[1;32m"

static const char *kl_text_sev_color(enum kl_severity s) {
  switch (s) {
  case KL_SEV_ERROR:
    return KL_C_RED;
  case KL_SEV_WARNING:
    return KL_C_MAGENTA;
  default:
    return KL_C_CYAN;
  }
}

static void kl_text_header(struct kl_emitter *e, const char *path, const struct kl_span *sp,
                           enum kl_severity sev, const char *message, const char *rule_id,
                           bool fixable) {
  const char *bold = e->color ? KL_C_BOLD : "", *reset = e->color ? KL_C_RESET : "";
  const char *sc = e->color ? kl_text_sev_color(sev) : "";
  /* ruff's mark of a finding --fix can fix, before the message. */
  fprintf(e->out, "%s%s:%u:%u:%s %s%s:%s %s%s", bold, path, sp->line, sp->col, reset, sc,
          kl_diag_severity_name(sev), reset, fixable ? "[*] " : "", message);
  if (rule_id) fprintf(e->out, " [%s]", rule_id);
  fputc('\n', e->out);
}

/* The span's first line, then a caret line under it. Columns count code points, so the caret
 * line copies tabs and puts one space per code point before the span; control bytes in the line
 * are shown as spaces so a hostile file cannot drive the terminal. */
static void kl_text_snippet(struct kl_emitter *e, const struct kl_source *src,
                            const struct kl_span *sp) {
  uint32_t len;
  const char *line = kl_source_line(src, sp->line, &len);
  uint32_t ncp = 0;
  for (uint32_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)line[i];
    if ((c & 0xC0) != 0x80) ncp++;
    fputc((c < 0x20 && c != '\t') || c == 0x7F ? ' ' : (int)c, e->out);
  }
  fputc('\n', e->out);
  uint32_t col = sp->col < 1 ? 1 : sp->col;
  if (col > ncp + 1) col = ncp + 1;
  uint32_t width;
  if (sp->end_line == sp->line && sp->end_col > col)
    width = sp->end_col - col;
  else
    width = ncp + 1 - col;
  if (width > ncp + 1 - col) width = ncp + 1 - col;
  if (width < 1) width = 1;
  uint32_t cp = 1;
  for (uint32_t i = 0; i < len && cp < col; i++) {
    unsigned char c = (unsigned char)line[i];
    if ((c & 0xC0) == 0x80) continue;
    fputc(c == '\t' ? '\t' : ' ', e->out);
    cp++;
  }
  if (e->color) fputs(KL_C_GREEN, e->out);
  fputc('^', e->out);
  for (uint32_t k = 1; k < width; k++) fputc('~', e->out);
  if (e->color) fputs(KL_C_RESET, e->out);
  fputc('\n', e->out);
}

static void kl_text_file(struct kl_emitter *e, const struct kl_source *src,
                         const struct kl_diag_list *diags) {
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    /* Only notes fold: a level raised in .lintrc asks for each finding to be seen. */
    if (e->fold && d->severity == KL_SEV_NOTE && !strcmp(d->rule_id, e->fold)) {
      e->folded++;
      continue;
    }
    kl_text_header(e, src->path, &d->span, d->severity, d->message, d->rule_id, d->fix != NULL);
    kl_text_snippet(e, src, &d->span);
    /* A related location in another file names that file, as clang's notes do. */
    for (size_t k = 0; k < d->nrelated; k++)
      kl_text_header(e, d->related[k].path ? d->related[k].path : src->path,
                     &d->related[k].span, KL_SEV_NOTE, d->related[k].message, NULL, false);
  }
}

/* The line that stands for the folded findings, after the others. */
static void kl_text_folded(struct kl_emitter *e) {
  const char *bold = e->color ? KL_C_BOLD : "", *reset = e->color ? KL_C_RESET : "";
  const char *sc = e->color ? kl_text_sev_color(KL_SEV_NOTE) : "";
  fprintf(e->out,
          "%skernlint:%s %snote:%s %zu embedded %s not checked in full: %s source or header is "
          "built in a way kernlint does not follow; --show-unresolved lists %s [%s]\n",
          bold, reset, sc, reset, e->folded, e->folded == 1 ? "kernel is" : "kernels are",
          e->folded == 1 ? "its" : "their", e->folded == 1 ? "it" : "them", e->fold);
}

/* ---- JSON ---- */

static json_t *kl_json_span(json_t *obj, const struct kl_span *sp) {
  kl_json_set_int(obj, "line", sp->line);
  kl_json_set_int(obj, "column", sp->col);
  kl_json_set_int(obj, "end_line", sp->end_line);
  kl_json_set_int(obj, "end_column", sp->end_col);
  return obj;
}

/* A fix: its title and its edits, each a file byte range with its positions and the new text. */
static json_t *kl_json_fix(const struct kl_source *src, const struct kl_fix *f) {
  json_t *o = json_object(), *edits = json_array();
  kl_json_set_str(o, "title", f->title);
  for (size_t i = 0; i < f->nedits; i++) {
    const struct kl_edit *ed = &f->edits[i];
    json_t *x = json_object();
    struct kl_span sp = kl_diag_span(src, ed->start, ed->end);
    kl_json_set_int(x, "start", ed->start);
    kl_json_set_int(x, "end", ed->end);
    kl_json_span(x, &sp);
    kl_json_set_str(x, "text", ed->text);
    json_array_append_new(edits, x);
  }
  json_object_set_new(o, "edits", edits);
  return o;
}

static void kl_json_file(struct kl_emitter *e, const struct kl_source *src,
                         const struct kl_diag_list *diags) {
  json_t *f = json_object(), *arr = json_array();
  kl_json_set_str(f, "path", src->path);
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    json_t *o = json_object(), *rel = json_array();
    kl_json_set_str(o, "rule", d->rule_id);
    kl_json_set_str(o, "severity", kl_diag_severity_name(d->severity));
    kl_json_set_str(o, "message", d->message);
    kl_json_span(o, &d->span);
    for (size_t k = 0; k < d->nrelated; k++) {
      json_t *r = json_object();
      kl_json_set_str(r, "message", d->related[k].message);
      /* Only a location in another file says which: the others are in the file's own "path". */
      if (d->related[k].path) kl_json_set_str(r, "path", d->related[k].path);
      json_array_append_new(rel, kl_json_span(r, &d->related[k].span));
    }
    json_object_set_new(o, "related", rel);
    if (d->fix) json_object_set_new(o, "fix", kl_json_fix(src, d->fix));
    json_array_append_new(arr, o);
  }
  json_object_set_new(f, "diagnostics", arr);
  kl_spool_add(e, &e->files, f);
}

/* The document: {version, files, errors, summary}, as jansson would write it whole. */
static void kl_json_document(struct kl_emitter *e) {
  json_t *version = json_string(KL_VERSION), *sum = json_object(), *by = json_object();
  fputs("{\n  \"version\": ", e->out);
  kl_json_write(e, version, 1);
  fputs(",\n  \"files\": ", e->out);
  kl_spool_write(e, &e->files);
  fputs(",\n  \"errors\": ", e->out);
  kl_json_write(e, e->failures, 1);
  const struct kl_emit_counts *c = &e->counts;
  kl_json_set_int(sum, "files", c->files);
  kl_json_set_int(sum, "failures", c->failed);
  kl_json_set_int(sum, "diagnostics", kl_emit_total(c));
  kl_json_set_int(by, "error", c->nsev[KL_SEV_ERROR]);
  kl_json_set_int(by, "warning", c->nsev[KL_SEV_WARNING]);
  kl_json_set_int(by, "note", c->nsev[KL_SEV_NOTE]);
  json_object_set_new(sum, "by_severity", by);
  fputs(",\n  \"summary\": ", e->out);
  kl_json_write(e, sum, 1);
  fputs("\n}", e->out);
  json_decref(sum);
  json_decref(version);
}

/* ---- SARIF ---- */

/* Append path percent-encoded for a URI (kl_source_uri_escape). */
static void kl_buf_uri_path(struct kl_buf *b, const char *path) {
  char *esc = kl_source_uri_escape(path);
  kl_buf_add(b, esc, strlen(esc));
  free(esc);
}

/* path relative to the working folder (malloc'd), or NULL when it lies outside; *abs gets the
 * normalised absolute path. The path is compared lexically first so a symlinked file keeps the
 * name the user gave it, then through realpath for a symlinked working folder. */
static char *kl_emit_relpath(const struct kl_emitter *e, const char *path, char **abs) {
  *abs = kl_source_abspath(path, e->cwd ? e->cwd : "/");
  const char *rel = e->cwd ? kl_source_subpath(*abs, e->cwd) : NULL;
  char *real = NULL;
  if (!rel && e->cwd && (real = realpath(path, NULL)) != NULL)
    rel = kl_source_subpath(real, e->cwd);
  char *out = rel ? kl_arena_xstrdup(rel) : NULL;
  free(real);
  return out;
}

/* URI of a path for artifactLocation. Files under the working folder get a relative URI with
 * uriBaseId %SRCROOT% (what GitHub code scanning resolves against the checkout); others get an
 * absolute file URI. */
static char *kl_sarif_uri(const struct kl_emitter *e, const char *path, bool *relative) {
  struct kl_buf b = {0};
  char *abs, *rel = kl_emit_relpath(e, path, &abs);
  *relative = rel != NULL;
  if (rel) {
    kl_buf_uri_path(&b, rel);
  } else {
    kl_buf_str(&b, "file://");
    kl_buf_uri_path(&b, abs);
  }
  free(rel);
  free(abs);
  return b.s;
}

/* An artifactLocation (uri, and uriBaseId when relative) for a path, without an index. */
static json_t *kl_sarif_artifact_location(const struct kl_emitter *e, const char *path) {
  bool relative;
  char *uri = kl_sarif_uri(e, path, &relative);
  json_t *al = json_object();
  kl_json_set_str(al, "uri", uri);
  if (relative) kl_json_set_str(al, "uriBaseId", "%SRCROOT%");
  free(uri);
  return al;
}

/* A physicalLocation for a span (or none), taking ownership of its artifactLocation. */
static json_t *kl_sarif_location(json_t *al, const struct kl_span *sp) {
  json_t *pl = json_object();
  json_object_set_new(pl, "artifactLocation", al);
  if (sp) {
    json_t *r = json_object();
    kl_json_set_int(r, "startLine", sp->line);
    kl_json_set_int(r, "startColumn", sp->col);
    kl_json_set_int(r, "endLine", sp->end_line);
    kl_json_set_int(r, "endColumn", sp->end_col);
    json_object_set_new(pl, "region", r);
  }
  return pl;
}

/* SARIF's message guidance wants full sentences; add the final period where one is missing. */
static json_t *kl_sarif_message(const char *text) {
  json_t *m = json_object();
  size_t n = strlen(text);
  if (n && strchr(".!?", text[n - 1])) {
    kl_json_set_str(m, "text", text);
  } else {
    struct kl_buf b = {0};
    kl_buf_add(&b, text, n);
    kl_buf_str(&b, ".");
    kl_json_set_str(m, "text", b.s);
    free(b.s);
  }
  return m;
}

/* A finding's fix as SARIF's fix: one artifactChange of the file, a replacement per edit (a
 * deletedRegion, empty for an insertion, and the insertedContent). */
static json_t *kl_sarif_fix(const struct kl_source *src, json_t *indexed, const struct kl_fix *f) {
  json_t *fix = json_object(), *changes = json_array(), *change = json_object();
  json_t *reps = json_array();
  json_object_set_new(fix, "description", kl_sarif_message(f->title));
  for (size_t i = 0; i < f->nedits; i++) {
    const struct kl_edit *ed = &f->edits[i];
    struct kl_span sp = kl_diag_span(src, ed->start, ed->end);
    json_t *rp = json_object(), *r = json_object();
    kl_json_set_int(r, "startLine", sp.line);
    kl_json_set_int(r, "startColumn", sp.col);
    kl_json_set_int(r, "endLine", sp.end_line);
    kl_json_set_int(r, "endColumn", sp.end_col);
    json_object_set_new(rp, "deletedRegion", r);
    if (ed->text[0]) {
      json_t *c = json_object();
      kl_json_set_str(c, "text", ed->text);
      json_object_set_new(rp, "insertedContent", c);
    }
    json_array_append_new(reps, rp);
  }
  json_object_set_new(change, "artifactLocation", json_deep_copy(indexed));
  json_object_set_new(change, "replacements", reps);
  json_array_append_new(changes, change);
  json_object_set_new(fix, "artifactChanges", changes);
  json_t *fixes = json_array();
  json_array_append_new(fixes, fix);
  return fixes;
}

static void kl_sarif_file(struct kl_emitter *e, const struct kl_source *src,
                          const struct kl_diag_list *diags) {
  /* The URI costs a join, a normalisation, an encoding and maybe a realpath: work it out once
   * per file, and copy it (with the artifact's index) into every location in the file. */
  json_t *al = kl_sarif_artifact_location(e, src->path);
  json_t *indexed = json_deep_copy(al);
  kl_json_set_int(indexed, "index", e->artifacts.n);
  json_t *art = json_object();
  json_object_set_new(art, "location", al);
  kl_json_set_int(art, "length", src->len);
  json_t *roles = json_array();
  json_array_append_new(roles, json_string("analysisTarget"));
  json_object_set_new(art, "roles", roles);
  kl_spool_add(e, &e->artifacts, art);

  /* The fingerprint is the baseline's content key: one definition of "the same finding". */
  struct kl_finding_key *keys = kl_arena_xmalloc((diags->n ? diags->n : 1) * sizeof *keys);
  kl_baseline_keys(src, diags, keys);
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    json_t *r = json_object();
    kl_json_set_str(r, "ruleId", d->rule_id);
    int ri = kl_rules_index(d->rule_id);
    if (ri >= 0) kl_json_set_int(r, "ruleIndex", (size_t)ri);
    kl_json_set_str(r, "level",
                    d->severity == KL_SEV_OFF ? "none" : kl_diag_severity_name(d->severity));
    json_object_set_new(r, "message", kl_sarif_message(d->message));
    json_t *locs = json_array(), *l = json_object();
    json_object_set_new(l, "physicalLocation",
                        kl_sarif_location(json_deep_copy(indexed), &d->span));
    json_array_append_new(locs, l);
    json_object_set_new(r, "locations", locs);
    if (d->nrelated) {
      json_t *rels = json_array();
      for (size_t k = 0; k < d->nrelated; k++) {
        json_t *rl = json_object();
        kl_json_set_int(rl, "id", k + 1);
        /* Another file's location is relative like the result's own, without an index: that
         * file's place in artifacts is not known here (it may come later, or not at all). */
        const char *rp = d->related[k].path;
        json_t *ral = rp ? kl_sarif_artifact_location(e, rp) : json_deep_copy(indexed);
        json_object_set_new(rl, "physicalLocation", kl_sarif_location(ral, &d->related[k].span));
        json_object_set_new(rl, "message", kl_sarif_message(d->related[k].message));
        json_array_append_new(rels, rl);
      }
      json_object_set_new(r, "relatedLocations", rels);
    }
    char fp[48];
    snprintf(fp, sizeof fp, "%016llx:%zu", (unsigned long long)keys[i].hash, keys[i].occurrence);
    json_t *fps = json_object();
    kl_json_set_str(fps, "primaryLocationLineHash", fp);
    json_object_set_new(r, "partialFingerprints", fps);
    if (d->fix) json_object_set_new(r, "fixes", kl_sarif_fix(src, indexed, d->fix));
    kl_spool_add(e, &e->results, r);
  }
  free(keys);
  json_decref(indexed);
}

/* "bounds-guard" -> "BoundsGuard", SARIF's human-readable rule name. */
static char *kl_sarif_pascal(const char *id) {
  char *s = kl_arena_xmalloc(strlen(id) + 1), *o = s;
  bool up = true;
  for (const char *p = id; *p; p++) {
    if (*p == '-' || *p == '_') {
      up = true;
      continue;
    }
    *o++ = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
    up = false;
  }
  *o = '\0';
  return s;
}

/* Tags shown by code-scanning UIs. They describe the rule's concern, not its analysis, so they
 * live with the output format rather than in the rule interface. */
static const struct {
  const char *id;
  const char *tags[3];
} kl_sarif_tags[] = {
    {"bounds-guard", {"correctness", "memory-safety", NULL}},
    {"threadgroup-size", {"correctness", "performance", NULL}},
    {"half-accumulator", {"correctness", "precision", NULL}},
    {"barrier-divergence", {"correctness", "concurrency", NULL}},
    {"uncoalesced-access", {"performance", NULL, NULL}},
    {"bfloat-target", {"correctness", "portability", NULL}},
    {"threadgroup-race", {"correctness", "concurrency", NULL}},
    {"unused-suppression", {"maintainability", NULL, NULL}},
};

static json_t *kl_sarif_rule(const struct kl_rule *r) {
  json_t *o = json_object();
  kl_json_set_str(o, "id", r->id);
  char *name = kl_sarif_pascal(r->id);
  kl_json_set_str(o, "name", name);
  free(name);
  const char *summary = r->summary ? r->summary : r->id;
  const char *what = r->what ? r->what : summary;
  json_object_set_new(o, "shortDescription", kl_sarif_message(summary));
  json_object_set_new(o, "fullDescription", kl_sarif_message(what));

  struct kl_buf text = {0}, md = {0};
  kl_buf_str(&text, what);
  kl_buf_str(&md, "## What it does\n\n");
  kl_buf_str(&md, what);
  if (r->why) {
    kl_buf_str(&text, "\n\nWhy is this bad?\n");
    kl_buf_str(&text, r->why);
    kl_buf_str(&md, "\n\n## Why is this bad?\n\n");
    kl_buf_str(&md, r->why);
  }
  if (r->example) {
    kl_buf_str(&text, "\n\nExample:\n");
    kl_buf_str(&text, r->example);
    kl_buf_str(&md, "\n\n## Example\n\n```metal\n");
    kl_buf_str(&md, r->example);
    kl_buf_str(&md, "\n```");
  }
  if (r->instead) {
    kl_buf_str(&text, "\n\nUse instead:\n");
    kl_buf_str(&text, r->instead);
    kl_buf_str(&md, "\n\n## Use instead\n\n```metal\n");
    kl_buf_str(&md, r->instead);
    kl_buf_str(&md, "\n```");
  }
  json_t *help = json_object();
  kl_json_set_str(help, "text", text.s);
  kl_json_set_str(help, "markdown", md.s);
  free(text.s);
  free(md.s);
  json_object_set_new(o, "help", help);

  json_t *conf = json_object();
  kl_json_set_str(conf, "level",
                  r->default_severity == KL_SEV_OFF ? "none"
                                                    : kl_diag_severity_name(r->default_severity));
  if (r->default_severity == KL_SEV_OFF) json_object_set_new(conf, "enabled", json_false());
  json_object_set_new(o, "defaultConfiguration", conf);

  json_t *props = json_object(), *tags = json_array();
  json_array_append_new(tags, json_string("metal"));
  for (size_t i = 0; i < sizeof kl_sarif_tags / sizeof kl_sarif_tags[0]; i++) {
    if (strcmp(kl_sarif_tags[i].id, r->id)) continue;
    for (size_t k = 0; k < 3 && kl_sarif_tags[i].tags[k]; k++)
      json_array_append_new(tags, json_string(kl_sarif_tags[i].tags[k]));
  }
  json_object_set_new(props, "tags", tags);
  if (!r->implemented) json_object_set_new(props, "implemented", json_false());
  json_object_set_new(o, "properties", props);
  return o;
}

/* The document, as jansson would write it whole: one run of {tool, invocations,
 * originalUriBaseIds, artifacts, results, columnKind}. */
static void kl_sarif_document(struct kl_emitter *e) {
  fputs("{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n"
        "  \"version\": \"2.1.0\",\n  \"runs\": [\n    {\n      \"tool\": ",
        e->out);

  json_t *tool = json_object(), *driver = json_object(), *rules = json_array();
  kl_json_set_str(driver, "name", "kernlint");
  /* No informationUri: the project has no public address yet, and an invented one would send
   * code-scanning users to a page that does not exist (see docs/output.md, SARIF). */
  kl_json_set_str(driver, "version", KL_VERSION);
  kl_json_set_str(driver, "semanticVersion", KL_VERSION);
  size_t n;
  const struct kl_rule *const *all = kl_rules_all(&n);
  for (size_t i = 0; i < n; i++) json_array_append_new(rules, kl_sarif_rule(all[i]));
  json_object_set_new(driver, "rules", rules);
  json_object_set_new(tool, "driver", driver);
  kl_json_write(e, tool, 3);
  json_decref(tool);

  json_t *invs = json_array(), *inv = json_object();
  json_object_set_new(inv, "executionSuccessful", json_boolean(e->counts.failed == 0));
  if (json_array_size(e->failures)) json_object_set(inv, "toolExecutionNotifications", e->failures);
  json_array_append_new(invs, inv);
  fputs(",\n      \"invocations\": ", e->out);
  kl_json_write(e, invs, 3);
  json_decref(invs);

  if (e->cwd) {
    struct kl_buf b = {0};
    kl_buf_str(&b, "file://");
    kl_buf_uri_path(&b, e->cwd);
    if (b.s[b.n - 1] != '/') kl_buf_str(&b, "/");
    json_t *bases = json_object(), *root = json_object();
    kl_json_set_str(root, "uri", b.s);
    free(b.s);
    json_object_set_new(bases, "%SRCROOT%", root);
    fputs(",\n      \"originalUriBaseIds\": ", e->out);
    kl_json_write(e, bases, 3);
    json_decref(bases);
  }
  fputs(",\n      \"artifacts\": ", e->out);
  kl_spool_write(e, &e->artifacts);
  fputs(",\n      \"results\": ", e->out);
  kl_spool_write(e, &e->results);
  fputs(",\n      \"columnKind\": \"unicodeCodePoints\"\n    }\n  ]\n}", e->out);
}

/* ---- GitHub workflow commands ---- */

char *kl_emit_github_escape(const char *s, bool property) {
  struct kl_buf b = {0};
  kl_buf_add(&b, "", 0);
  for (const char *p = s; *p; p++) {
    const char *esc = NULL;
    switch (*p) {
    case '%':
      esc = "%25";
      break;
    case '\r':
      esc = "%0D";
      break;
    case '\n':
      esc = "%0A";
      break;
    case ':':
      esc = property ? "%3A" : NULL;
      break;
    case ',':
      esc = property ? "%2C" : NULL;
      break;
    }
    if (esc)
      kl_buf_str(&b, esc);
    else
      kl_buf_add(&b, p, 1);
  }
  return b.s;
}

/* One annotation: "::LEVEL file=F,line=L,col=C,endLine=EL,endColumn=EC,title=T::MESSAGE".
 * GitHub's columns are inclusive at both ends and only allowed on a one-line span, so a span over
 * several lines gets lines only, and the exclusive end column becomes the last one covered. */
static void kl_github_command(struct kl_emitter *e, const char *level, const char *path,
                              const struct kl_span *sp, const char *title, const char *message) {
  char *file = kl_emit_github_escape(path, true), *t = kl_emit_github_escape(title, true);
  char *msg = kl_emit_github_escape(message, false);
  fprintf(e->out, "::%s file=%s", level, file);
  if (sp) {
    bool one_line = sp->end_line == sp->line;
    uint32_t last = sp->end_col > sp->col ? sp->end_col - 1 : sp->col;
    fprintf(e->out, ",line=%u", sp->line);
    if (one_line) fprintf(e->out, ",col=%u", sp->col);
    fprintf(e->out, ",endLine=%u", sp->end_line > sp->line ? sp->end_line : sp->line);
    if (one_line) fprintf(e->out, ",endColumn=%u", last);
  }
  fprintf(e->out, ",title=%s::%s\n", t, msg);
  free(file);
  free(t);
  free(msg);
}

static const char *kl_github_level(enum kl_severity s) {
  switch (s) {
  case KL_SEV_ERROR:
    return "error";
  case KL_SEV_WARNING:
    return "warning";
  default:
    return "notice";
  }
}

/* GitHub resolves an annotation's file against the checkout: a path inside the working folder
 * (run from the repository root) is given relative to it, "./" and ".." folded; others as given. */
static char *kl_github_path(const struct kl_emitter *e, const char *path) {
  char *abs, *rel = kl_emit_relpath(e, path, &abs);
  free(abs);
  return rel ? rel : kl_arena_xstrdup(path);
}

/* Related locations have no place of their own in an annotation: they follow the message, one
 * per line, as text output writes them. */
static void kl_github_file(struct kl_emitter *e, const struct kl_source *src,
                           const struct kl_diag_list *diags) {
  char *path = kl_github_path(e, src->path);
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    struct kl_buf title = {0}, msg = {0};
    kl_buf_str(&title, "kernlint (");
    kl_buf_str(&title, d->rule_id);
    kl_buf_str(&title, ")");
    kl_buf_str(&msg, d->message);
    for (size_t k = 0; k < d->nrelated; k++) {
      char pos[48];
      snprintf(pos, sizeof pos, ":%u:%u: note: ", d->related[k].span.line, d->related[k].span.col);
      char *other = d->related[k].path ? kl_github_path(e, d->related[k].path) : NULL;
      kl_buf_str(&msg, "\n");
      kl_buf_str(&msg, other ? other : path);
      kl_buf_str(&msg, pos);
      kl_buf_str(&msg, d->related[k].message);
      free(other);
    }
    kl_github_command(e, kl_github_level(d->severity), path, &d->span, title.s, msg.s);
    free(title.s);
    free(msg.s);
  }
  free(path);
}

/* ---- the emitter ---- */

struct kl_emitter *kl_emit_new(enum kl_format fmt, FILE *out, bool color) {
  struct kl_emitter *e = kl_arena_xmalloc(sizeof *e);
  memset(e, 0, sizeof *e);
  e->fmt = fmt;
  e->out = out;
  e->color = color && fmt == KL_FORMAT_TEXT;
  e->failures = json_array();
  /* Depths of the elements: doc.files[i]; doc.runs[0].artifacts[i] and .results[i]. */
  e->files.depth = 2;
  e->artifacts.depth = 4;
  e->results.depth = 4;
  if (fmt == KL_FORMAT_SARIF || fmt == KL_FORMAT_GITHUB) {
    char *cwd = getcwd(NULL, 0);
    if (cwd) {
      e->cwd = realpath(cwd, NULL);
      free(cwd);
    }
  }
  return e;
}

void kl_emit_file(struct kl_emitter *e, const struct kl_source *src,
                  const struct kl_diag_list *diags) {
  e->counts.files++;
  for (size_t i = 0; i < diags->n; i++) {
    unsigned s = (unsigned)diags->items[i].severity;
    if (s < 4) e->counts.nsev[s]++;
  }
  switch (e->fmt) {
  case KL_FORMAT_TEXT:
    kl_text_file(e, src, diags);
    break;
  case KL_FORMAT_JSON:
    kl_json_file(e, src, diags);
    break;
  case KL_FORMAT_SARIF:
    kl_sarif_file(e, src, diags);
    break;
  case KL_FORMAT_GITHUB:
    kl_github_file(e, src, diags);
    break;
  }
}

void kl_emit_failure(struct kl_emitter *e, const char *path, const char *reason) {
  e->counts.failed++;
  if (e->fmt == KL_FORMAT_JSON) {
    json_t *o = json_object();
    kl_json_set_str(o, "path", path);
    kl_json_set_str(o, "message", reason);
    json_array_append_new(e->failures, o);
  } else if (e->fmt == KL_FORMAT_SARIF) {
    json_t *o = json_object(), *locs = json_array(), *l = json_object();
    kl_json_set_str(o, "level", "error");
    struct kl_buf b = {0};
    kl_buf_str(&b, path);
    kl_buf_str(&b, ": ");
    kl_buf_str(&b, reason);
    json_object_set_new(o, "message", kl_sarif_message(b.s));
    free(b.s);
    json_object_set_new(l, "physicalLocation",
                        kl_sarif_location(kl_sarif_artifact_location(e, path), NULL));
    json_array_append_new(locs, l);
    json_object_set_new(o, "locations", locs);
    json_array_append_new(e->failures, o);
  } else if (e->fmt == KL_FORMAT_GITHUB) {
    char *p = kl_github_path(e, path);
    kl_github_command(e, "error", p, NULL, "kernlint", reason);
    free(p);
  }
}

void kl_emit_fold(struct kl_emitter *e, const char *rule_id) {
  if (e->fmt == KL_FORMAT_TEXT) e->fold = rule_id;
}

const struct kl_emit_counts *kl_emit_get_counts(const struct kl_emitter *e) {
  return &e->counts;
}

size_t kl_emit_total(const struct kl_emit_counts *c) {
  return c->nsev[KL_SEV_ERROR] + c->nsev[KL_SEV_WARNING] + c->nsev[KL_SEV_NOTE];
}

int kl_emit_delete(struct kl_emitter *e) {
  if (!e) return 0;
  /* Members in insertion order (jansson keeps it): deterministic, and read better sorted by
   * meaning than alphabetically. */
  if (e->fmt == KL_FORMAT_JSON) kl_json_document(e);
  if (e->fmt == KL_FORMAT_SARIF) kl_sarif_document(e);
  if (e->fmt == KL_FORMAT_JSON || e->fmt == KL_FORMAT_SARIF) fputc('\n', e->out);
  int rc = e->bad ? -1 : 0;
  if (e->folded) kl_text_folded(e);
  if (fflush(e->out) != 0 || ferror(e->out)) rc = -1;
  free(e->files.text.s);
  free(e->results.text.s);
  free(e->artifacts.text.s);
  json_decref(e->failures);
  free(e->cwd);
  free(e);
  return rc;
}
