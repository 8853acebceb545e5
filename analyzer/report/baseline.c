/* Baselines. A finding is keyed by content, never by line number, so that an entry survives
 * edits elsewhere in its file; the same key is SARIF's partialFingerprints, so code scanning and
 * the baseline agree on which findings are the same. The file is JSON, sorted and indented so
 * that a change to it reads well in review. */
#include "analyzer/report/baseline.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file format's version: it changes only if the format ever does. */
#define KL_BASELINE_VERSION 1

struct kl_baseline {
  struct kl_arena *a; /* entries' strings */
  char *file;         /* as named, for messages */
  char *dir;          /* the baseline's folder, absolute (realpath), where stored paths start */
  char *cwd;          /* the working folder (realpath), where linted relative paths start */
  struct kl_baseline_entry *items;
  size_t n, cap;
  bool sorted;
  const char *checked; /* the last stored path looked up on disk by kl_baseline_next_unused */
  bool checked_gone;
};

/* ---- keys ---- */

/* 64-bit FNV-1a: small, stable across platforms, good enough to tell lines apart. */
static uint64_t kl_fnv1a(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

void kl_baseline_keys(const struct kl_source *src, const struct kl_diag_list *diags,
                      struct kl_finding_key *out) {
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    uint32_t len;
    const char *line = kl_source_line(src, d->span.line, &len);
    /* Trimmed, so re-indenting the line keeps its key. */
    while (len && (line[0] == ' ' || line[0] == '\t')) line++, len--;
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r')) len--;
    uint64_t h = kl_fnv1a(0xcbf29ce484222325ULL, d->rule_id, strlen(d->rule_id) + 1);
    struct kl_finding_key *k = &out[i];
    k->text = line;
    k->len = len;
    k->hash = kl_fnv1a(h, line, len);
    /* Identical (rule, line text) pairs in one file are told apart by occurrence, GitHub-style. */
    k->occurrence = 1;
    for (size_t j = 0; j < i; j++)
      if (out[j].hash == k->hash && out[j].len == len && !memcmp(out[j].text, line, len) &&
          !strcmp(diags->items[j].rule_id, d->rule_id))
        k->occurrence++;
  }
}

/* ---- paths ---- */

/* The realpath of the folder holding file, or NULL with errno. */
static char *kl_baseline_folder(const char *file) {
  const char *slash = strrchr(file, '/');
  if (!slash) return realpath(".", NULL);
  if (slash == file) return realpath("/", NULL);
  char *dir = kl_arena_xstrndup(file, (size_t)(slash - file));
  char *real = realpath(dir, NULL);
  int saved = errno;
  free(dir);
  errno = saved;
  return real;
}

/* abs (from kl_source_abspath) relative to the absolute folder dir, going up with "..". */
static char *kl_baseline_relative(const char *abs, const char *dir) {
  const char *sub = kl_source_subpath(abs, dir);
  if (sub) return kl_arena_xstrdup(sub);
  /* The longest common run of whole components. */
  size_t common = 0;
  for (size_t i = 0; abs[i] && abs[i] == dir[i];) {
    i++;
    if ((abs[i] == '/' || !abs[i]) && (dir[i] == '/' || !dir[i])) common = i;
  }
  size_t ups = 0;
  for (const char *p = dir + common; *p; p++) ups += *p == '/';
  const char *rest = abs + common + (abs[common] == '/');
  char *out = kl_arena_xmalloc(ups * 3 + strlen(rest) + 1), *o = out;
  for (size_t i = 0; i < ups; i++, o += 3) memcpy(o, "../", 3);
  memcpy(o, rest, strlen(rest) + 1);
  return out;
}

char *kl_baseline_path(const struct kl_baseline *b, const char *path, bool is_file) {
  if (!is_file) return kl_arena_xstrdup(path);
  char *abs = kl_source_abspath(path, b->cwd);
  char *rel = NULL;
  if (!kl_source_subpath(abs, b->dir)) {
    /* A file reached through a symlinked folder: its real path may lie under the baseline's. */
    char *real = realpath(path, NULL);
    if (real && kl_source_subpath(real, b->dir)) rel = kl_baseline_relative(real, b->dir);
    free(real);
  }
  if (!rel) rel = kl_baseline_relative(abs, b->dir);
  free(abs);
  return rel;
}

/* ---- the entries ---- */

/* Order by length-aware bytes: a key's text is not NUL-terminated. */
static int kl_baseline_textcmp(const char *a, size_t alen, const char *b, size_t blen) {
  int c = memcmp(a, b, alen < blen ? alen : blen);
  if (c) return c;
  return alen == blen ? 0 : alen < blen ? -1 : 1;
}

/* Compare an entry with (path, rule, text): the group of entries a finding may match. */
static int kl_baseline_groupcmp(const struct kl_baseline_entry *e, const char *path,
                                const char *rule, const char *text, size_t len) {
  int c = strcmp(e->path, path);
  if (c) return c;
  if ((c = strcmp(e->rule, rule)) != 0) return c;
  return kl_baseline_textcmp(e->text, strlen(e->text), text, len);
}

static int kl_baseline_entrycmp(const void *pa, const void *pb) {
  const struct kl_baseline_entry *a = pa, *b = pb;
  int c = kl_baseline_groupcmp(a, b->path, b->rule, b->text, strlen(b->text));
  if (c) return c;
  if (a->occurrence != b->occurrence) return a->occurrence < b->occurrence ? -1 : 1;
  return strcmp(a->message, b->message);
}

static void kl_baseline_sort(struct kl_baseline *b) {
  if (!b->sorted && b->n > 1) qsort(b->items, b->n, sizeof *b->items, kl_baseline_entrycmp);
  b->sorted = true;
}

/* The first entry not ordered before (path, rule, text); text NULL compares by path alone. */
static size_t kl_baseline_lower(const struct kl_baseline *b, const char *path, const char *rule,
                                const char *text, size_t len) {
  size_t lo = 0, hi = b->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const struct kl_baseline_entry *e = &b->items[mid];
    int c = text ? kl_baseline_groupcmp(e, path, rule, text, len) : strcmp(e->path, path);
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static struct kl_baseline_entry *kl_baseline_push(struct kl_baseline *b) {
  KL_VEC_PUSH(b->a, b->items, b->n, b->cap);
  struct kl_baseline_entry *e = &b->items[b->n++];
  memset(e, 0, sizeof *e);
  b->sorted = false;
  return e;
}

static struct kl_baseline *kl_baseline_open(const char *file, char *err, size_t errlen) {
  char *dir = kl_baseline_folder(file);
  if (!dir) {
    snprintf(err, errlen, "%s: cannot use the baseline's folder: %s", file, strerror(errno));
    return NULL;
  }
  char *cwd = realpath(".", NULL);
  if (!cwd) {
    snprintf(err, errlen, "%s: cannot resolve the working folder: %s", file, strerror(errno));
    free(dir);
    return NULL;
  }
  struct kl_baseline *b = kl_arena_xmalloc(sizeof *b);
  memset(b, 0, sizeof *b);
  b->a = kl_arena_new();
  b->file = kl_arena_strdup(b->a, file);
  b->dir = dir;
  b->cwd = cwd;
  b->sorted = true;
  return b;
}

struct kl_baseline *kl_baseline_new(const char *file, char *err, size_t errlen) {
  return kl_baseline_open(file, err, errlen);
}

void kl_baseline_record(struct kl_baseline *b, const char *rel, const struct kl_source *src,
                        const struct kl_diag_list *diags) {
  struct kl_finding_key *keys = kl_arena_xmalloc((diags->n ? diags->n : 1) * sizeof *keys);
  kl_baseline_keys(src, diags, keys);
  for (size_t i = 0; i < diags->n; i++) {
    struct kl_baseline_entry *e = kl_baseline_push(b);
    e->path = kl_arena_strdup(b->a, rel);
    e->rule = kl_arena_strdup(b->a, diags->items[i].rule_id);
    e->text = kl_arena_strndup(b->a, keys[i].text, keys[i].len);
    e->message = kl_arena_strdup(b->a, diags->items[i].message);
    e->occurrence = keys[i].occurrence;
  }
  free(keys);
}

size_t kl_baseline_filter(struct kl_baseline *b, const char *rel, const struct kl_source *src,
                          struct kl_diag_list *diags) {
  kl_baseline_sort(b);
  for (size_t i = kl_baseline_lower(b, rel, NULL, NULL, 0);
       i < b->n && !strcmp(b->items[i].path, rel); i++)
    b->items[i].judged = true;
  struct kl_finding_key *keys = kl_arena_xmalloc((diags->n ? diags->n : 1) * sizeof *keys);
  kl_baseline_keys(src, diags, keys);
  /* Findings come in file order, so a group's entries are taken by its first occurrences: with
   * two entries and three findings, the third is the one reported. */
  size_t w = 0;
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    bool matched = false;
    for (size_t k = kl_baseline_lower(b, rel, d->rule_id, keys[i].text, keys[i].len);
         k < b->n &&
         !kl_baseline_groupcmp(&b->items[k], rel, d->rule_id, keys[i].text, keys[i].len);
         k++) {
      if (!b->items[k].used) {
        b->items[k].used = matched = true;
        break;
      }
    }
    if (!matched) diags->items[w++] = *d;
  }
  free(keys);
  size_t dropped = diags->n - w;
  diags->n = w;
  return dropped;
}

size_t kl_baseline_count(const struct kl_baseline *b) {
  return b->n;
}

const struct kl_baseline_entry *kl_baseline_next_unused(struct kl_baseline *b, size_t *pos) {
  kl_baseline_sort(b);
  for (; *pos < b->n; (*pos)++) {
    struct kl_baseline_entry *e = &b->items[*pos];
    if (e->used) continue;
    if (!e->judged) {
      /* Not linted this run: stale only when its file is gone. Entries come grouped by path,
       * so each path is looked up once. */
      if (!b->checked || strcmp(b->checked, e->path)) {
        char *full = kl_arena_printf(b->a, "%s/%s", b->dir, e->path);
        struct stat st;
        b->checked = e->path;
        b->checked_gone = stat(full, &st) != 0 && errno == ENOENT;
      }
      e->judged = b->checked_gone;
      if (!e->judged) continue;
    }
    (*pos)++;
    return e;
  }
  return NULL;
}

/* ---- the file ---- */

/* A JSON string; jansson refuses invalid UTF-8 (a file name can hold any bytes), so such bytes
 * become '?' rather than dropping the entry's field. */
static json_t *kl_baseline_str(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  size_t n = strlen(s);
  char *copy = kl_arena_xstrdup(s);
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    size_t k = kl_source_utf8_seq(p + i, n - i);
    if (!k) copy[i++] = '?';
    i += k;
  }
  j = json_string(copy);
  free(copy);
  return j ? j : json_string("");
}

int kl_baseline_write(struct kl_baseline *b, FILE *f) {
  kl_baseline_sort(b);
  json_t *doc = json_object(), *entries = json_array();
  json_object_set_new(doc, "version", json_integer(KL_BASELINE_VERSION));
  json_object_set_new(doc, "tool", json_string("kernlint"));
  for (size_t i = 0; i < b->n; i++) {
    const struct kl_baseline_entry *e = &b->items[i];
    json_t *o = json_object();
    json_object_set_new(o, "path", kl_baseline_str(e->path));
    json_object_set_new(o, "rule", kl_baseline_str(e->rule));
    json_object_set_new(o, "text", kl_baseline_str(e->text));
    json_object_set_new(o, "occurrence", json_integer((json_int_t)e->occurrence));
    json_object_set_new(o, "message", kl_baseline_str(e->message));
    json_array_append_new(entries, o);
  }
  json_object_set_new(doc, "entries", entries);
  /* Keys in insertion order (jansson keeps it): the order docs/usage.md documents. */
  int rc = json_dumpf(doc, f, JSON_INDENT(2)) == 0 && fputc('\n', f) != EOF ? 0 : -1;
  json_decref(doc);
  return rc;
}

/* Read one entry, or say (into err) what is wrong with it. */
static int kl_baseline_entry_load(struct kl_baseline *b, size_t index, json_t *o, char *err,
                                  size_t errlen) {
  static const char *const fields[] = {"path", "rule", "text"};
  if (!json_is_object(o)) {
    snprintf(err, errlen, "%s: malformed baseline: entries[%zu] is not an object", b->file, index);
    return -1;
  }
  const char *vals[3];
  for (int k = 0; k < 3; k++) {
    json_t *v = json_object_get(o, fields[k]);
    if (!json_is_string(v) || (k < 2 && !json_string_length(v)) ||
        strlen(json_string_value(v)) != json_string_length(v)) {
      snprintf(err, errlen, "%s: malformed baseline: entries[%zu].%s must be a%s string", b->file,
               index, fields[k], k < 2 ? " non-empty" : "");
      return -1;
    }
    vals[k] = json_string_value(v);
  }
  json_t *occ = json_object_get(o, "occurrence"), *msg = json_object_get(o, "message");
  if (!json_is_integer(occ) || json_integer_value(occ) < 1) {
    snprintf(err, errlen, "%s: malformed baseline: entries[%zu].occurrence must be a number >= 1",
             b->file, index);
    return -1;
  }
  if (msg && !json_is_string(msg)) {
    snprintf(err, errlen, "%s: malformed baseline: entries[%zu].message must be a string", b->file,
             index);
    return -1;
  }
  struct kl_baseline_entry *e = kl_baseline_push(b);
  e->path = kl_arena_strdup(b->a, vals[0]);
  e->rule = kl_arena_strdup(b->a, vals[1]);
  e->text = kl_arena_strdup(b->a, vals[2]);
  e->message = kl_arena_strdup(b->a, msg ? json_string_value(msg) : "");
  e->occurrence = (size_t)json_integer_value(occ);
  return 0;
}

/* Check the document's shape and take its entries; -1 with err set. */
static int kl_baseline_doc_load(struct kl_baseline *b, json_t *doc, char *err, size_t errlen) {
  if (!json_is_object(doc)) {
    snprintf(err, errlen, "%s: malformed baseline: expected a JSON object", b->file);
    return -1;
  }
  json_t *tool = json_object_get(doc, "tool"), *ver = json_object_get(doc, "version");
  if (!json_is_string(tool) || strcmp(json_string_value(tool), "kernlint")) {
    snprintf(err, errlen, "%s: not a kernlint baseline (no \"tool\": \"kernlint\")", b->file);
    return -1;
  }
  if (!json_is_integer(ver) || json_integer_value(ver) != KL_BASELINE_VERSION) {
    snprintf(err, errlen, "%s: unsupported baseline version (this kernlint reads version %d)",
             b->file, KL_BASELINE_VERSION);
    return -1;
  }
  json_t *entries = json_object_get(doc, "entries");
  if (!json_is_array(entries)) {
    snprintf(err, errlen, "%s: malformed baseline: \"entries\" must be an array", b->file);
    return -1;
  }
  for (size_t i = 0; i < json_array_size(entries); i++)
    if (kl_baseline_entry_load(b, i, json_array_get(entries, i), err, errlen) != 0) return -1;
  return 0;
}

struct kl_baseline *kl_baseline_load(const char *file, char *err, size_t errlen) {
  struct stat st;
  if (stat(file, &st) != 0) {
    snprintf(err, errlen, "%s: cannot read baseline: %s", file, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s: is a directory, expected a baseline file", file);
    return NULL;
  }
  FILE *f = fopen(file, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot read baseline: %s", file, strerror(errno));
    return NULL;
  }
  json_error_t je;
  json_t *doc = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
  fclose(f);
  if (!doc) {
    /* jansson's text is one line; its position says where to look. */
    snprintf(err, errlen, "%s:%d: malformed baseline: %s", file, je.line, je.text);
    return NULL;
  }
  struct kl_baseline *b = kl_baseline_open(file, err, errlen);
  if (b && kl_baseline_doc_load(b, doc, err, errlen) != 0) {
    kl_baseline_delete(b);
    b = NULL;
  }
  json_decref(doc);
  if (b) kl_baseline_sort(b);
  return b;
}

void kl_baseline_delete(struct kl_baseline *b) {
  if (!b) return;
  kl_arena_delete(b->a);
  free(b->dir);
  free(b->cwd);
  free(b);
}
