/* Local includes for msl2cl (see includes.h). OpenCL C could include the header itself, but the
 * header is MSL and needs the same translation as the kernel file: so the parts are joined into
 * one text, translated at once, and the #line directives keep every part's line numbers. */
#include "tests/tools/msl2cl/includes.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct join {
  struct kl_arena *a;
  const char **seen; /* real paths of the files read */
  size_t nseen, cap_seen;
  char *out;
  size_t len, cap;
  bool joined;
  char *err;
  size_t errlen;
};

static void put(struct join *j, const char *s, size_t n) {
  if (j->len + n + 1 > j->cap) {
    size_t cap = j->cap ? j->cap * 2 : 4096;
    while (cap < j->len + n + 1) cap *= 2;
    char *grown = kl_arena_alloc_raw(j->a, cap);
    if (j->len) memcpy(grown, j->out, j->len);
    j->out = grown;
    j->cap = cap;
  }
  memcpy(j->out + j->len, s, n);
  j->len += n;
  j->out[j->len] = 0;
}

static char *slurp(struct join *j, const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(j->err, j->errlen, "cannot read %s", path);
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *s = malloc(cap);
  for (size_t r; s && (r = fread(s + len, 1, cap - len - 1, f)) > 0;) {
    len += r;
    if (len + 1 == cap) s = realloc(s, cap *= 2);
  }
  fclose(f);
  if (!s) abort();
  s[len] = 0;
  char *copy = kl_arena_strndup(j->a, s, len);
  free(s);
  *n = len;
  return copy;
}

/* The header a line names with `#include "name"`, looked up beside dir, or NULL. */
static char *local_include(struct join *j, const char *line, const char *end, const char *dir) {
  const char *p = line;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p == end || *p++ != '#') return NULL;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if ((size_t)(end - p) < 7 || strncmp(p, "include", 7)) return NULL;
  p += 7;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p == end || *p++ != '"') return NULL;
  const char *q = memchr(p, '"', (size_t)(end - p));
  if (!q) return NULL;
  char *path = kl_arena_printf(j->a, "%s/%.*s", dir, (int)(q - p), p);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL; /* not beside the file: left to msl2cl, which drops every #include */
  fclose(f);
  return path;
}

static bool is_pragma_once(const char *line, const char *end) {
  const char *p = line;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  if (p == end || *p++ != '#') return false;
  while (p < end && (*p == ' ' || *p == '\t')) p++;
  return (size_t)(end - p) >= 11 && !strncmp(p, "pragma once", 11);
}

/* Whether path was read before; marks it read. */
static bool seen(struct join *j, const char *path) {
  char real[PATH_MAX];
  const char *key = realpath(path, real) ? real : path;
  for (size_t i = 0; i < j->nseen; i++)
    if (!strcmp(j->seen[i], key)) return true;
  KL_VEC_PUSH(j->a, j->seen, j->nseen, j->cap_seen);
  j->seen[j->nseen++] = kl_arena_strndup(j->a, key, strlen(key));
  return false;
}

/* Appends path's headers, then path itself (its local include lines and `#pragma once` made
 * empty lines). top: the file msl2cl was given, whose #line is written only after a header. */
static bool add_file(struct join *j, const char *path, bool top) {
  size_t n;
  char *text = slurp(j, path, &n);
  if (!text) return false;
  const char *slash = strrchr(path, '/');
  const char *dir = slash ? kl_arena_strndup(j->a, path, (size_t)(slash - path)) : ".";
  for (char *line = text; line < text + n;) {
    char *end = memchr(line, '\n', (size_t)(text + n - line));
    if (!end) end = text + n;
    char *header = local_include(j, line, end, dir);
    if (header) {
      if (!seen(j, header) && !add_file(j, header, false)) return false;
      j->joined = true;
      memset(line, ' ', (size_t)(end - line));
    } else if (!top && is_pragma_once(line, end)) {
      /* In OpenCL's main file it only draws a warning, which a clean run may not print. */
      memset(line, ' ', (size_t)(end - line));
    }
    line = end + 1;
  }
  if (!top || j->joined) {
    const char *directive = kl_arena_printf(j->a, "#line 1 \"%s\"\n", path);
    put(j, directive, strlen(directive));
  }
  put(j, text, n);
  if (n && text[n - 1] != '\n') put(j, "\n", 1);
  return true;
}

const char *kl_m2c_includes_join(struct kl_arena *a, const char *path, const char *with,
                                 const char *want, uint32_t *len, bool *joined, bool *found,
                                 char *err, size_t errlen) {
  struct join j = {.a = a, .err = err, .errlen = errlen};
  seen(&j, path);
  if (!add_file(&j, path, true)) return NULL;
  /* After path, so that its lines keep their numbers even without a #line of their own: a C
   * prototype may come before the definition, and a helper template is inlined wherever it is. */
  if (with && !seen(&j, with) && !add_file(&j, with, false)) return NULL;
  j.joined = j.joined || with != NULL;
  if (found) {
    char real[PATH_MAX];
    const char *key = want && realpath(want, real) ? real : want;
    *found = false;
    for (size_t i = 0; key && i < j.nseen; i++) *found = *found || !strcmp(j.seen[i], key);
  }
  *len = (uint32_t)j.len;
  *joined = j.joined;
  return j.out;
}
