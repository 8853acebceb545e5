/* .lintrc reading and per-file settings. libinih splits lines into key/value pairs; section
 * headers are parsed here, from the raw lines our reader hands it, because inih truncates
 * section names to 50 bytes and a `[path "glob"]` header is often longer. */
#include "analyzer/core/config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/input/source.h"
#include "grammar/msl.h"
#include "rules/rule_ids.h"

static void kl_config_levels_unset(int *level) {
  for (int i = 0; i < KL_CONFIG_MAX_RULES; i++) level[i] = -1;
}

/* ---- paths ---- */

/* Lexically absolute and normalised, from the working folder as the process sees it. */
static char *kl_config_abspath(const char *path) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) strcpy(cwd, "/");
  return kl_source_abspath(path, cwd);
}

/* Absolute path with symlinks in its existing ancestor folders resolved; the last component
 * is kept as named (a linked file matches globs by its own name, like git). */
static char *kl_config_resolve(const char *path, bool keep_last) {
  char *abs = kl_config_abspath(path);
  size_t len = strlen(abs);
  size_t cut = len;
  if (keep_last) {
    while (cut > 0 && abs[cut] != '/') cut--;
  }
  /* Walk up until an ancestor exists, resolve it, then put the rest back. */
  for (;;) {
    char *head = kl_arena_xstrndup(abs, cut ? cut : 1);
    char *real = realpath(head, NULL);
    free(head);
    if (real) {
      const char *rest = abs + cut;
      size_t rlen = strlen(real);
      if (rlen == 1 && *rest == '/') rlen = 0; /* real is "/" */
      char *out = kl_arena_xmalloc(rlen + strlen(rest) + 2);
      memcpy(out, real, rlen);
      strcpy(out + rlen, rest);
      if (!out[0]) strcpy(out, "/");
      free(real);
      free(abs);
      return out;
    }
    if (cut == 0) return abs;
    do cut--;
    while (cut > 0 && abs[cut] != '/');
  }
}

/* Folder part of a path as written ("." when there is none). */
static char *kl_config_dirname(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return kl_arena_xstrdup(".");
  while (slash > path && slash[-1] == '/') slash--;
  if (slash == path) return kl_arena_xstrdup("/");
  return kl_arena_xstrndup(path, (size_t)(slash - path));
}

/* Components of an absolute normalised path, as (start, length) pairs in *parts. */
static size_t kl_config_split(const char *path, const char ***parts) {
  size_t n = 0, cap = 0;
  *parts = NULL;
  for (const char *p = path; *p;) {
    while (*p == '/') p++;
    if (!*p) break;
    KL_XVEC_PUSH(*parts, n, cap);
    (*parts)[n++] = p;
    while (*p && *p != '/') p++;
  }
  return n;
}

static size_t kl_config_partlen(const char *p) {
  return strcspn(p, "/");
}

/* Path of to relative to the folder from (both absolute and normalised). */
static char *kl_config_relative(const char *to, const char *from) {
  const char **tp, **fp;
  size_t tn = kl_config_split(to, &tp), fn = kl_config_split(from, &fp), common = 0;
  while (common < tn && common < fn) {
    size_t len = kl_config_partlen(tp[common]);
    if (len != kl_config_partlen(fp[common]) || strncmp(tp[common], fp[common], len)) break;
    common++;
  }
  const char *rest = common < tn ? tp[common] : "";
  size_t ups = fn - common;
  char *out = kl_arena_xmalloc(ups * 3 + strlen(rest) + 1);
  for (size_t k = 0; k < ups; k++) memcpy(out + k * 3, "../", 3);
  strcpy(out + ups * 3, rest);
  free(tp);
  free(fp);
  return out;
}

char *kl_config_find(const char *file_path) {
  char *start = kl_config_dirname(file_path);
  char *dir = kl_config_resolve(start, false);
  free(start);
  char *found = NULL;
  for (;;) {
    size_t dlen = strlen(dir);
    char *cand = kl_arena_xmalloc(dlen + sizeof "/.lintrc");
    snprintf(cand, dlen + sizeof "/.lintrc", "%s/.lintrc", strcmp(dir, "/") ? dir : "");
    struct stat st;
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
      found = cand;
      break;
    }
    free(cand);
    if (strcmp(dir, "/") == 0) break;
    char *slash = strrchr(dir, '/');
    if (slash == dir)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
  if (found && file_path[0] != '/') {
    /* Relative in, relative out: messages then name the .lintrc the way the user would. */
    char *cwd = kl_config_resolve(".", false);
    char *rel = kl_config_relative(found, cwd);
    free(cwd);
    free(found);
    found = rel;
  }
  free(dir);
  return found;
}

/* ---- globs ---- */

/* Whether c is in the class starting after '[' at *pp; advances *pp past ']'. Returns -1 when
 * the class is not closed, so the '[' is taken literally. */
static int kl_glob_class(const char **pp, char c) {
  const char *p = *pp;
  bool neg = false, hit = false;
  if (*p == '!' || *p == '^') {
    neg = true;
    p++;
  }
  bool first = true;
  while (*p && (first || *p != ']')) {
    char lo = *p, hi = *p;
    if (p[1] == '-' && p[2] && p[2] != ']') {
      hi = p[2];
      p += 3;
    } else {
      p++;
    }
    if (c >= lo && c <= hi) hit = true;
    first = false;
  }
  if (*p != ']') return -1;
  *pp = p + 1;
  return hit != neg;
}

bool kl_config_glob(const char *glob, const char *path) {
  /* The set of path prefixes the pattern so far can match, advanced one glob token at a time:
   * linear in both lengths, so no pattern backtracks exponentially. */
  size_t n = strlen(path);
  bool *cur = kl_arena_xmalloc(n + 1), *nxt = kl_arena_xmalloc(n + 1);
  memset(cur, 0, n + 1);
  cur[0] = true;
  const char *g = glob;
  bool alive = true;
  while (*g && alive) {
    memset(nxt, 0, n + 1);
    bool at_start = g == glob || g[-1] == '/';
    if (g[0] == '*' && g[1] == '*' && at_start && (g[2] == '/' || g[2] == '\0')) {
      bool any = false;
      if (g[2] == '/') {
        /* `**` followed by a slash: zero or more whole folders. */
        for (size_t j = 0; j <= n; j++) {
          nxt[j] = cur[j] || (any && j > 0 && path[j - 1] == '/');
          if (cur[j]) any = true;
        }
        g += 3;
      } else {
        for (size_t j = 0; j <= n; j++) {
          if (cur[j]) any = true;
          nxt[j] = any;
        }
        g += 2;
      }
    } else if (*g == '*') {
      while (*g == '*') g++;
      for (size_t j = 0; j <= n; j++)
        nxt[j] = cur[j] || (j > 0 && nxt[j - 1] && path[j - 1] != '/');
    } else if (*g == '?') {
      g++;
      for (size_t j = 0; j < n; j++) nxt[j + 1] = cur[j] && path[j] != '/';
    } else {
      char lit = *g;
      const char *after = g + 1;
      if (*g == '\\' && g[1]) {
        lit = g[1];
        after = g + 2;
      }
      const char *cls = g + 1;
      if (*g == '[' && kl_glob_class(&cls, 'x') >= 0) {
        for (size_t j = 0; j < n; j++) {
          const char *p = g + 1;
          nxt[j + 1] = cur[j] && path[j] != '/' && kl_glob_class(&p, path[j]) == 1;
        }
        after = cls;
      } else {
        for (size_t j = 0; j < n; j++) nxt[j + 1] = cur[j] && path[j] == lit;
      }
      g = after;
    }
    bool *t = cur;
    cur = nxt;
    nxt = t;
    alive = false;
    for (size_t j = 0; j <= n; j++) alive = alive || cur[j];
  }
  bool ok = alive && cur[n];
  free(cur);
  free(nxt);
  return ok;
}

/* .gitignore-style match of a glob against a path relative to the .lintrc folder: a glob with
 * no slash matches any one component; otherwise it is anchored and matches the path or one
 * of its leading folders (so `vendor/ggml` covers everything below it). A trailing slash
 * restricts the glob to folders. */
static bool kl_config_match(const char *glob, const char *rel) {
  while (glob[0] == '.' && glob[1] == '/') glob += 2;
  bool anchored = glob[0] == '/';
  while (*glob == '/') glob++;
  size_t glen = strlen(glob);
  bool dir_only = false;
  while (glen > 0 && glob[glen - 1] == '/') {
    dir_only = true;
    glen--;
  }
  if (glen == 0) return false;
  char *g = kl_arena_xstrndup(glob, glen);
  if (memchr(g, '/', glen)) anchored = true;
  bool hit = false;
  size_t rlen = strlen(rel);
  char *buf = kl_arena_xmalloc(rlen + 1);
  for (size_t i = 0; i <= rlen && !hit; i++) {
    if (rel[i] != '/' && rel[i] != '\0') continue;
    bool last = rel[i] == '\0';
    if (dir_only && last) break;
    if (anchored) {
      memcpy(buf, rel, i);
      buf[i] = '\0';
    } else {
      size_t s = i;
      while (s > 0 && rel[s - 1] != '/') s--;
      memcpy(buf, rel + s, i - s);
      buf[i - s] = '\0';
    }
    if (buf[0]) hit = kl_config_glob(g, buf);
  }
  free(buf);
  free(g);
  return hit;
}

/* The file's path relative to the config's folder; when the file lies outside it, the path as
 * the user named it (without a leading "./"), so basename globs still apply. */
char *kl_config_relpath(const struct kl_config *c, const char *file_path) {
  if (!c || (!c->nsections && !c->ninclude && !c->nexclude)) return NULL;
  char *abs = kl_config_resolve(file_path, true);
  const char *under = kl_source_subpath(abs, c->dir);
  char *rel;
  if (under) {
    rel = kl_arena_xstrdup(under);
  } else {
    const char *p = file_path;
    while (p[0] == '.' && p[1] == '/') p += 2;
    rel = kl_arena_xstrdup(p);
  }
  free(abs);
  return rel;
}

/* ---- loading ---- */

enum kl_section_kind { KL_SECTION_TOP, KL_SECTION_RULES, KL_SECTION_PATH, KL_SECTION_BAD };

struct kl_config_parse {
  struct kl_config *c;
  FILE *f;
  char *line; /* the raw current line, from getline */
  size_t line_cap;
  int lineno;
  bool after_key;    /* inih treats an indented line after a key as its continuation */
  bool continuation; /* the current line is such a continuation */
  enum kl_section_kind section;
  int err_line; /* first problem found; 0 when none */
  char err[400];
};

static void kl_config_fail(struct kl_config_parse *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void kl_config_fail(struct kl_config_parse *st, const char *fmt, ...) {
  if (st->err_line) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->err, sizeof st->err, fmt, ap);
  va_end(ap);
  st->err_line = st->lineno;
}

static const char *kl_config_skip_ws(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* Parse a `[...]` header line (p at the '['), switching the current section. */
static void kl_config_section(struct kl_config_parse *st, const char *p) {
  const char *q = kl_config_skip_ws(p + 1);
  const char *w = q;
  while (isalnum((unsigned char)*q) || *q == '-' || *q == '_') q++;
  size_t wlen = (size_t)(q - w);
  q = kl_config_skip_ws(q);
  char *glob = NULL;
  st->section = KL_SECTION_BAD;
  if (wlen == 4 && !strncmp(w, "path", 4)) {
    if (*q != '"') {
      kl_config_fail(st, "[path] needs a quoted glob, e.g. [path \"src/**/*.metal\"]");
      return;
    }
    const char *g = q + 1, *e = strchr(g, '"');
    if (!e) {
      kl_config_fail(st, "unterminated glob in [path \"...\"]");
      return;
    }
    if (e == g) {
      kl_config_fail(st, "empty glob in [path \"\"]");
      return;
    }
    glob = kl_arena_xstrndup(g, (size_t)(e - g));
    q = kl_config_skip_ws(e + 1);
  }
  if (*q != ']') {
    free(glob);
    kl_config_fail(st, "malformed section header (expected [kernlint], [rules] or "
                       "[path \"glob\"])");
    return;
  }
  const char *tail = kl_config_skip_ws(q + 1);
  if (*tail && *tail != ';' && *tail != '#') {
    free(glob);
    kl_config_fail(st, "unexpected text after section header: '%s'", tail);
    return;
  }
  if (glob) {
    struct kl_config *c = st->c;
    KL_XVEC_PUSH(c->sections, c->nsections, c->cap_sections);
    struct kl_config_section *s = &c->sections[c->nsections++];
    memset(s, 0, sizeof *s);
    s->glob = glob;
    s->assume_rounded_grid = -1;
    kl_config_levels_unset(s->level);
    st->section = KL_SECTION_PATH;
  } else if (wlen == 5 && !strncmp(w, "rules", 5)) {
    st->section = KL_SECTION_RULES;
  } else if (wlen == 8 && !strncmp(w, "kernlint", 8)) {
    st->section = KL_SECTION_TOP;
  } else {
    kl_config_fail(st, "unknown section [%.*s] (expected [kernlint], [rules] or [path \"glob\"])",
                   (int)(q - (p + 1)), p + 1);
  }
}

/* fgets-style reader for inih that counts lines and follows sections itself. */
static char *kl_config_reader(char *str, int num, void *stream) {
  struct kl_config_parse *st = stream;
  ssize_t got = getline(&st->line, &st->line_cap, st->f);
  if (got < 0) return NULL;
  st->lineno++;
  size_t len = (size_t)got;
  /* inih splits a long line into several; refuse it instead of misreading the tail. */
  size_t body = len;
  while (body > 0 && (st->line[body - 1] == '\n' || st->line[body - 1] == '\r')) body--;
  if (num < 4 || body > (size_t)num - 3)
    kl_config_fail(st, "line too long (at most %d characters)", num - 3);
  size_t keep = len < (size_t)num - 1 ? len : (size_t)num - 1;
  memcpy(str, st->line, keep);
  str[keep] = '\0';
  st->line[body] = '\0';

  const char *p = st->line;
  if (st->lineno == 1 && !strncmp(p, "\xEF\xBB\xBF", 3)) p += 3;
  bool indented = *p == ' ' || *p == '\t';
  p = kl_config_skip_ws(p);
  st->continuation = false;
  if (*p == '\0' || *p == ';' || *p == '#') return str;
  if (st->after_key && indented) {
    st->continuation = true;
  } else if (*p == '[') {
    st->after_key = false;
    kl_config_section(st, p);
  } else {
    /* Mirrors inih: a pair line has '=' or ':' before any " ;" comment. */
    for (const char *q = p; *q; q++) {
      if (*q == '=' || *q == ':') {
        st->after_key = true;
        break;
      }
      if (*q == ';' && q > p && (q[-1] == ' ' || q[-1] == '\t')) break;
    }
  }
  return str;
}

static int kl_config_bool(const char *v) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  for (size_t i = 0; i < 4; i++) {
    if (!strcasecmp(v, yes[i])) return 1;
    if (!strcasecmp(v, no[i])) return 0;
  }
  return -1;
}

const char *kl_config_targets(void) {
  /* A static buffer is enough for a short catalogue that never changes during a run. */
  static char buf[512];
  size_t n, used = 0;
  const struct kl_msl_family *fams = kl_msl_families(&n);
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < sizeof buf; i++) {
    snprintf(buf + used, sizeof buf - used, "%s%s", i ? ", " : "", fams[i].name);
    used += strlen(buf + used);
  }
  return buf;
}

unsigned kl_config_metal_version(const char *v) {
  /* MSL versions are MAJOR.MINOR with one digit each (1.0 to 4.x); __METAL_VERSION__ is
   * MAJOR*100 + MINOR*10. */
  if (!v || v[0] < '1' || v[0] > '9' || v[1] != '.' || v[2] < '0' || v[2] > '9' || v[3])
    return 0;
  return (unsigned)(v[0] - '0') * 100 + (unsigned)(v[2] - '0') * 10;
}

/* Validate a target name, lower-cased; NULL (and an error) when unknown. */
static char *kl_config_target(struct kl_config_parse *st, const char *v) {
  char *t = kl_arena_xstrdup(v);
  for (char *p = t; *p; p++) *p = (char)tolower((unsigned char)*p);
  if (kl_msl_family(t)) return t;
  kl_config_fail(st, "unknown target '%s' (expected one of: %s)", v, kl_config_targets());
  free(t);
  return NULL;
}

/* Split a comma/space list value, appending each item (validated as a macro name if asked). */
static void kl_config_list(struct kl_config_parse *st, const char *key, const char *v,
                           char ***items, size_t *n, size_t *cap, bool macros) {
  const char *p = v;
  while (*p) {
    while (*p == ',' || isspace((unsigned char)*p)) p++;
    const char *s = p;
    while (*p && *p != ',' && !isspace((unsigned char)*p)) p++;
    if (p == s) continue;
    if (macros) {
      /* unit-strides names may be globs: `nb*0` is every dimension-0 stride. */
      bool glob = !strcmp(key, "unit-strides");
      bool ok = isalpha((unsigned char)*s) || *s == '_' || (glob && (*s == '*' || *s == '?'));
      for (const char *q = s; q < p; q++)
        ok = ok && (isalnum((unsigned char)*q) || *q == '_' || (glob && (*q == '*' || *q == '?')));
      if (!ok) {
        kl_config_fail(st, "invalid %s '%.*s' in %s",
                       strcmp(key, "bfloat-guards") ? "name" : "macro name", (int)(p - s), s, key);
        return;
      }
    }
    KL_XVEC_PUSH(*items, *n, *cap);
    (*items)[(*n)++] = kl_arena_xstrndup(s, (size_t)(p - s));
  }
}

static void kl_config_level(struct kl_config_parse *st, const char *rule, const char *v,
                            int *level) {
  int ri = kl_rule_ids_index(rule);
  enum kl_severity sev;
  if (kl_diag_severity_parse(v, &sev) != 0) {
    kl_config_fail(st, "invalid level '%s' for rule '%s' (expected off, note, warning or error)", v,
                   rule);
    return;
  }
  level[ri] = (int)sev;
}

/* Keys that take one value refuse inih's indented continuation lines. */
static bool kl_config_scalar_ok(struct kl_config_parse *st, const char *name) {
  if (!st->continuation) return true;
  kl_config_fail(st,
                 "'%s' takes one value; only include, exclude, bfloat-guards and unit-strides may "
                 "continue on an indented line",
                 name);
  return false;
}

static int kl_config_handler(void *user, const char *section, const char *name, const char *value) {
  struct kl_config_parse *st = user;
  struct kl_config *c = st->c;
  if (st->err_line || st->section == KL_SECTION_BAD) return 1;
  /* inih only strips " ;" comments; " #" reads the same way to most people. */
  char v[256];
  snprintf(v, sizeof v, "%s", value ? value : "");
  for (char *h = v; *h; h++)
    if (*h == '#' && h > v && (h[-1] == ' ' || h[-1] == '\t')) {
      *h = '\0';
      break;
    }
  size_t vl = strlen(v);
  while (vl > 0 && isspace((unsigned char)v[vl - 1])) v[--vl] = '\0';
  if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
    memmove(v, v + 1, vl - 2);
    v[vl - 2] = '\0';
  }

  if (st->section == KL_SECTION_RULES) {
    if (kl_rule_ids_index(name) < 0) {
      kl_config_fail(st, "unknown rule '%s' in [rules]", name);
      return 0;
    }
    if (kl_config_scalar_ok(st, name)) kl_config_level(st, name, v, c->level);
    c->line_level[kl_rule_ids_index(name)] = st->lineno;
    return !st->err_line;
  }
  bool in_path = st->section == KL_SECTION_PATH;
  struct kl_config_section *sec = in_path ? &c->sections[c->nsections - 1] : NULL;
  char where[80];
  if (in_path)
    snprintf(where, sizeof where, " in [path \"%.60s\"]", sec->glob);
  else
    where[0] = '\0';
  if (!strcmp(name, "target")) {
    if (!kl_config_scalar_ok(st, name)) return 0;
    char *t = kl_config_target(st, v);
    if (!t) return 0;
    char **slot = in_path ? &sec->target : &c->target;
    free(*slot);
    *slot = t;
    *(in_path ? &sec->line_target : &c->line_target) = st->lineno;
  } else if (!strcmp(name, "assume-rounded-grid")) {
    if (!kl_config_scalar_ok(st, name)) return 0;
    int b = kl_config_bool(v);
    if (b < 0) {
      kl_config_fail(st, "invalid value '%s' for 'assume-rounded-grid' (expected true or false)",
                     v);
      return 0;
    }
    *(in_path ? &sec->assume_rounded_grid : &c->assume_rounded_grid) = b;
    *(in_path ? &sec->line_rounded : &c->line_rounded) = st->lineno;
  } else if (!in_path && !strcmp(name, "metal-version")) {
    if (!kl_config_scalar_ok(st, name)) return 0;
    c->metal_version = kl_config_metal_version(v);
    if (!c->metal_version) {
      kl_config_fail(st, "invalid value '%s' for 'metal-version' (expected a version such as 3.1)",
                     v);
      return 0;
    }
    c->line_metal_version = st->lineno;
  } else if (!in_path && !strcmp(name, "include")) {
    kl_config_list(st, name, v, &c->include, &c->ninclude, &c->cap_include, false);
  } else if (!in_path && !strcmp(name, "exclude")) {
    kl_config_list(st, name, v, &c->exclude, &c->nexclude, &c->cap_exclude, false);
  } else if (!in_path && !strcmp(name, "bfloat-guards")) {
    kl_config_list(st, name, v, &c->bfloat_guards, &c->nbfloat_guards, &c->cap_bfloat_guards, true);
    if (!c->line_bfloat_guards) c->line_bfloat_guards = st->lineno;
  } else if (!in_path && !strcmp(name, "unit-strides")) {
    kl_config_list(st, name, v, &c->unit_strides, &c->nunit_strides, &c->cap_unit_strides, true);
    if (!c->line_unit_strides) c->line_unit_strides = st->lineno;
  } else if (in_path && kl_rule_ids_index(name) >= 0) {
    if (kl_config_scalar_ok(st, name)) kl_config_level(st, name, v, sec->level);
    sec->line_level[kl_rule_ids_index(name)] = st->lineno;
  } else if (kl_rule_ids_index(name) >= 0) {
    kl_config_fail(st, "unknown key '%s' (rule levels go in [rules])", name);
  } else {
    kl_config_fail(st, "unknown key '%s'%s", name, where);
  }
  return !st->err_line;
}

/* Parse an open .lintrc stream, named path in messages; closes f. */
static struct kl_config *kl_config_parse(const char *path, FILE *f, char *err, size_t errlen);

struct kl_config *kl_config_load(const char *path, char *err, size_t errlen) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    snprintf(err, errlen, "%s: %s", path,
             errno == ENOENT ? "no such file or directory" : strerror(errno));
    return NULL;
  }
  if (S_ISDIR(sb.st_mode)) {
    snprintf(err, errlen, "%s: is a directory, expected a .lintrc file", path);
    return NULL;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  return kl_config_parse(path, f, err, errlen);
}

struct kl_config *kl_config_from_memory(const char *path, const char *bytes, size_t len,
                                        char *err, size_t errlen) {
  /* fmemopen lets the one line reader serve memory too; it wants a buffer even when empty. */
  static char empty[1];
  FILE *f = fmemopen(len ? (void *)bytes : empty, len, "r");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  return kl_config_parse(path, f, err, errlen);
}

static struct kl_config *kl_config_parse(const char *path, FILE *f, char *err, size_t errlen) {
  struct kl_config *c = kl_arena_xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->path = kl_arena_xstrdup(path);
  char *d = kl_config_dirname(path);
  c->dir = kl_config_resolve(d, false);
  free(d);
  c->assume_rounded_grid = -1;
  kl_config_levels_unset(c->level);

  struct kl_config_parse st;
  memset(&st, 0, sizeof st);
  st.c = c;
  st.f = f;
  st.section = KL_SECTION_TOP;
  int rc = ini_parse_stream(kl_config_reader, &st, kl_config_handler, &st);
  int ioerr = ferror(f);
  fclose(f);
  free(st.line);
  if (rc > 0 && (!st.err_line || rc < st.err_line)) {
    st.err_line = rc;
    snprintf(st.err, sizeof st.err, "syntax error (expected 'key = value' or a [section])");
  } else if (rc < 0 && !st.err_line) {
    st.err_line = -1;
    snprintf(st.err, sizeof st.err, "out of memory");
  }
  if (ioerr && !st.err_line) {
    snprintf(err, errlen, "%s: read error", path);
    kl_config_delete(c);
    return NULL;
  }
  if (st.err_line) {
    if (st.err_line > 0)
      snprintf(err, errlen, "%s:%d: %s", path, st.err_line, st.err);
    else
      snprintf(err, errlen, "%s: %s", path, st.err);
    kl_config_delete(c);
    return NULL;
  }
  return c;
}

static void kl_config_free_list(char **items, size_t n) {
  for (size_t i = 0; i < n; i++) free(items[i]);
  free(items);
}

void kl_config_delete(struct kl_config *c) {
  if (!c) return;
  free(c->path);
  free(c->dir);
  free(c->target);
  kl_config_free_list(c->include, c->ninclude);
  kl_config_free_list(c->exclude, c->nexclude);
  kl_config_free_list(c->bfloat_guards, c->nbfloat_guards);
  kl_config_free_list(c->unit_strides, c->nunit_strides);
  for (size_t i = 0; i < c->nsections; i++) {
    free(c->sections[i].glob);
    free(c->sections[i].target);
  }
  free(c->sections);
  free(c);
}

/* ---- applying ---- */

void kl_config_defaults(struct kl_settings *s) {
  memset(s, 0, sizeof *s);
  s->target = "m1";
  const struct kl_msl_family *fam = kl_msl_family("m1");
  s->apple_family = fam ? fam->apple : 7;
  kl_config_levels_unset(s->level);
}

static void kl_config_set_target(struct kl_settings *s, const char *target) {
  const struct kl_msl_family *fam = kl_msl_family(target);
  if (!fam) return;
  s->target = target;
  s->apple_family = fam->apple;
}

void kl_config_apply_rel(const struct kl_config *c, const char *rel, struct kl_settings *s) {
  if (!c) return;
  if (c->target) kl_config_set_target(s, c->target);
  if (c->assume_rounded_grid >= 0) s->assume_rounded_grid = c->assume_rounded_grid;
  if (c->metal_version) s->metal_version = c->metal_version;
  for (int i = 0; i < KL_CONFIG_MAX_RULES; i++)
    if (c->level[i] >= 0) s->level[i] = c->level[i];
  if (c->nbfloat_guards) {
    s->bfloat_guards = (const char **)c->bfloat_guards;
    s->nbfloat_guards = c->nbfloat_guards;
  }
  if (c->nunit_strides) {
    s->unit_strides = (const char **)c->unit_strides;
    s->nunit_strides = c->nunit_strides;
  }
  for (size_t k = 0; k < c->nsections; k++) {
    const struct kl_config_section *sec = &c->sections[k];
    if (!kl_config_match(sec->glob, rel)) continue;
    if (sec->target) kl_config_set_target(s, sec->target);
    if (sec->assume_rounded_grid >= 0) s->assume_rounded_grid = sec->assume_rounded_grid;
    for (int i = 0; i < KL_CONFIG_MAX_RULES; i++)
      if (sec->level[i] >= 0) s->level[i] = sec->level[i];
  }
}

bool kl_config_section_applies(const struct kl_config *c, size_t k, const char *rel) {
  return k < c->nsections && kl_config_match(c->sections[k].glob, rel);
}

bool kl_config_selects_rel(const struct kl_config *c, const char *rel) {
  if (!c || (!c->ninclude && !c->nexclude)) return true;
  bool ok = c->ninclude == 0;
  for (size_t i = 0; i < c->ninclude && !ok; i++) ok = kl_config_match(c->include[i], rel);
  for (size_t i = 0; i < c->nexclude && ok; i++) ok = !kl_config_match(c->exclude[i], rel);
  return ok;
}

void kl_config_apply(const struct kl_config *c, const char *file_path, struct kl_settings *s) {
  char *rel = c && c->nsections ? kl_config_relpath(c, file_path) : NULL;
  kl_config_apply_rel(c, rel, s);
  free(rel);
}

bool kl_config_selects(const struct kl_config *c, const char *file_path) {
  if (!c || (!c->ninclude && !c->nexclude)) return true;
  char *rel = kl_config_relpath(c, file_path);
  bool ok = kl_config_selects_rel(c, rel);
  free(rel);
  return ok;
}
