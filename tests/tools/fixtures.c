/* Fixture runner: lints every fixture under the given folders (default tests/fixtures) with
 * $KERNLINT --format json --exit-zero and compares the findings with the file's annotations.
 *
 *   // expect: rule-id[, rule-id...]   at the end of a line that must produce those findings
 *   # expect: rule-id                  the same in Python fixtures
 *   // expect-also: rule-id            a line a finding of that rule names as a related location
 *                                      and does not report itself (a further barrier that one
 *                                      divergent return reaches; a kernel that a finding of a
 *                                      host file added with `@` names as the one it launches)
 *   // kernlint-args: --target m3      extra arguments for this file (anywhere in the file)
 *   // kernlint-args: @host.mm         `@NAME` is a file in the fixture's folder, linted in the
 *                                      same run (host code that dispatches this file's kernels)
 *   // kernlint-xfail: <reason>        (or `# kernlint-xfail:`) known false positives: kernlint
 *                                      reports findings it should not; a missing expected
 *                                      finding still fails
 *   // kernlint-xfail-missing: <reason> a known false negative: expected findings are missing;
 *                                      an unexpected finding still fails
 *
 * Only the findings in the fixture itself count; files added with `@` are fixtures of their own.
 * A file whose name starts with `good` must carry no annotation; one starting with `bad` must
 * carry at least one. Every expectation is checked: a rule that stops reporting fails its
 * fixtures. Files kernlint does not lint (.lintrc, Oclgrind .sim/.cl files, notes) are not
 * fixtures.
 *
 * Prints one line per fixture: PASS, FAIL, or for a fixture marked kernlint-xfail whose findings
 * differ from its annotations, `XFAIL path: reason (mismatch)`. The marker is strict, as pytest's
 * xfail_strict: a marked fixture that matches FAILs, so a fixed bug cannot hide behind a stale
 * marker. It only covers a mismatch of findings: a fixture kernlint cannot lint (crash, exit
 * status, no report) FAILs, marked or not. Exits 1 when any fixture FAILs. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyzer/input/source.h"
#include "rules/rules.h"

#define KL_FX_MAX_ARGS 32

struct kl_fx_find {
  unsigned line;
  char rule[64];
  char message[200];
  int count; /* expected minus found, during matching */
};

struct kl_fx_list {
  struct kl_fx_find *items;
  size_t n, cap;
};

struct kl_fx_paths {
  char **items;
  size_t n, cap;
};

static void kl_fx_push(struct kl_fx_list *l, unsigned line, const char *rule, size_t rn,
                       const char *message) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 16;
    l->items = kl_arena_xrealloc(l->items, l->cap * sizeof *l->items);
  }
  struct kl_fx_find *f = &l->items[l->n++];
  memset(f, 0, sizeof *f);
  f->line = line;
  snprintf(f->rule, sizeof f->rule, "%.*s", (int)rn, rule);
  snprintf(f->message, sizeof f->message, "%s", message ? message : "");
}

static int kl_fx_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collect lintable files under dir, recursively. */
static void kl_fx_walk(const char *dir, struct kl_fx_paths *out) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue; /* ., .., .lintrc and editor droppings */
    size_t n = strlen(dir) + strlen(e->d_name) + 2;
    char *p = kl_arena_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(p, &st) != 0) {
      free(p);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      kl_fx_walk(p, out);
      free(p);
    } else if (S_ISREG(st.st_mode) && kl_source_lang(p) != KL_LANG_UNKNOWN) {
      if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 64;
        out->items = kl_arena_xrealloc(out->items, out->cap * sizeof *out->items);
      }
      out->items[out->n++] = p;
    } else {
      free(p);
    }
  }
  closedir(d);
}

static char *kl_fx_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = kl_arena_xmalloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) buf = kl_arena_xrealloc(buf, cap *= 2);
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* Where a `// expect:` / `# expect:` / `kernlint-args:` note starts in [s, e), or NULL. */
static const char *kl_fx_note(const char *s, const char *e, const char *key) {
  size_t kn = strlen(key);
  for (const char *p = s; p + kn <= e; p++) {
    if (memcmp(p, key, kn)) continue;
    const char *q = p;
    while (q > s && (q[-1] == ' ' || q[-1] == '\t')) q--;
    if ((q - s >= 2 && q[-1] == '/' && q[-2] == '/') || (q - s >= 1 && q[-1] == '#')) return p + kn;
  }
  return NULL;
}

struct kl_fx_file {
  struct kl_fx_list expect;
  struct kl_fx_list also; /* expect-also: lines */
  char *args[KL_FX_MAX_ARGS];
  int nargs;
  char problems[2048]; /* annotation errors found while reading */
  char xfail[256];     /* the kernlint-xfail reason; empty when the fixture is not marked */
  unsigned xfail_line;
  bool xfail_missing; /* marked kernlint-xfail-missing: a known false negative */
};

/* Append one "; "-separated item to a fixed reason buffer, dropping what does not fit. */
static void kl_fx_append(char *buf, size_t cap, const char *item) {
  size_t used = strlen(buf);
  snprintf(buf + used, cap - used, "%s%s", used ? "; " : "", item);
}

static void kl_fx_parse(const char *text, size_t len, struct kl_fx_file *f) {
  unsigned line = 1;
  for (const char *s = text; s < text + len; line++) {
    const char *e = memchr(s, '\n', (size_t)(text + len - s));
    if (!e) e = text + len;
    const char *pa = kl_fx_note(s, e, "expect-also:");
    while (pa && pa < e && (*pa == ' ' || *pa == '\t')) pa++;
    if (pa) {
      const char *w = pa;
      while (pa < e && ((*pa >= 'a' && *pa <= 'z') || (*pa >= '0' && *pa <= '9') || *pa == '-'))
        pa++;
      char id[64];
      snprintf(id, sizeof id, "%.*s", (int)(pa - w), w);
      if (!kl_rules_find(id)) {
        char item[128];
        snprintf(item, sizeof item, "line %u: unknown rule `%s` in expect-also", line, id);
        kl_fx_append(f->problems, sizeof f->problems, item);
      } else {
        kl_fx_push(&f->also, line, id, strlen(id), NULL);
      }
    }
    const char *p = kl_fx_note(s, e, "expect:");
    while (p) {
      while (p < e && (*p == ' ' || *p == '\t' || *p == ',')) p++;
      const char *w = p;
      while (p < e && ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-')) p++;
      if (p == w) break;
      char id[64];
      snprintf(id, sizeof id, "%.*s", (int)(p - w), w);
      const struct kl_rule *r = kl_rules_find(id);
      if (!r) {
        char item[128];
        snprintf(item, sizeof item, "line %u: unknown rule `%s` in expect", line, id);
        kl_fx_append(f->problems, sizeof f->problems, item);
      } else {
        kl_fx_push(&f->expect, line, id, strlen(id), NULL);
      }
      while (p < e && (*p == ' ' || *p == '\t')) p++;
      if (p >= e || *p != ',') break;
    }
    const char *x = kl_fx_note(s, e, "kernlint-xfail:");
    const char *xm = kl_fx_note(s, e, "kernlint-xfail-missing:");
    if (xm) x = xm;
    if (x) {
      while (x < e && (*x == ' ' || *x == '\t')) x++;
      const char *xe = e;
      while (xe > x && (xe[-1] == ' ' || xe[-1] == '\t' || xe[-1] == '\r')) xe--;
      char item[128];
      if (f->xfail_line) {
        snprintf(item, sizeof item, "line %u: a second kernlint-xfail (first on line %u)", line,
                 f->xfail_line);
        kl_fx_append(f->problems, sizeof f->problems, item);
      } else if (x == xe) {
        /* The reason is what the XFAIL line reports and what later work starts from. */
        snprintf(item, sizeof item, "line %u: kernlint-xfail gives no reason", line);
        kl_fx_append(f->problems, sizeof f->problems, item);
      } else {
        snprintf(f->xfail, sizeof f->xfail, "%.*s", (int)(xe - x), x);
        f->xfail_line = line;
        f->xfail_missing = xm != NULL;
      }
    }
    const char *a = kl_fx_note(s, e, "kernlint-args:");
    while (a && a < e && f->nargs < KL_FX_MAX_ARGS) {
      while (a < e && (*a == ' ' || *a == '\t' || *a == '\r')) a++;
      const char *w = a;
      while (a < e && *a != ' ' && *a != '\t' && *a != '\r') a++;
      if (a == w) break;
      f->args[f->nargs] = kl_arena_xmalloc((size_t)(a - w) + 1);
      memcpy(f->args[f->nargs], w, (size_t)(a - w));
      f->args[f->nargs++][a - w] = '\0';
    }
    s = e + 1;
  }
}

/* Run kernlint on one file; returns its stdout (malloc'd) or NULL with a reason. */
static char *kl_fx_run(const char *kernlint, const struct kl_fx_file *f, const char *path,
                       char *why, size_t whylen) {
  int out[2];
  FILE *err = tmpfile();
  if (!err || pipe(out) != 0) {
    snprintf(why, whylen, "cannot create a pipe: %s", strerror(errno));
    if (err) fclose(err);
    return NULL;
  }
  const char *argv[KL_FX_MAX_ARGS + 8];
  int k = 0;
  argv[k++] = kernlint;
  argv[k++] = "--format";
  argv[k++] = "json";
  argv[k++] = "--exit-zero";
  for (int i = 0; i < f->nargs; i++) argv[k++] = f->args[i];
  argv[k++] = path;
  argv[k] = NULL;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(fileno(err), 2);
    close(out[0]);
    close(out[1]);
    execvp(kernlint, (char *const *)argv);
    fprintf(stderr, "cannot run %s: %s\n", kernlint, strerror(errno));
    _exit(127);
  }
  close(out[1]);
  size_t cap = 8192, n = 0;
  char *buf = kl_arena_xmalloc(cap);
  ssize_t got;
  while ((got = read(out[0], buf + n, cap - n - 1)) > 0) {
    n += (size_t)got;
    if (n + 1 == cap) buf = kl_arena_xrealloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  close(out[0]);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) status = -1;
  if (status != 0) {
    char msg[300] = "";
    rewind(err);
    size_t m = fread(msg, 1, sizeof msg - 1, err);
    msg[m] = '\0';
    char *nl = strchr(msg, '\n');
    if (nl) *nl = '\0';
    if (status != -1 && WIFSIGNALED(status))
      snprintf(why, whylen, "kernlint was killed by signal %d: %s", WTERMSIG(status), msg);
    else
      snprintf(why, whylen, "kernlint exited with status %d: %s",
               status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, msg);
    fclose(err);
    free(buf);
    return NULL;
  }
  fclose(err);
  return buf;
}

/* Findings from kernlint's JSON report; returns -1 with a reason when it is not one. */
static int kl_fx_json(const char *json, const char *path, struct kl_fx_list *found,
                      struct kl_fx_list *related, char *why, size_t whylen) {
  json_error_t je;
  json_t *root = json_loads(json, 0, &je);
  json_t *files = root ? json_object_get(root, "files") : NULL;
  if (!json_is_array(files)) {
    snprintf(why, whylen, "not a kernlint JSON report (%s)", root ? "no files" : je.text);
    json_decref(root);
    return -1;
  }
  json_t *errors = json_object_get(root, "errors");
  if (json_is_array(errors) && json_array_size(errors) > 0) {
    json_t *e0 = json_array_get(errors, 0);
    const char *msg = json_string_value(json_object_get(e0, "message"));
    if (!msg) msg = json_string_value(json_object_get(e0, "reason"));
    snprintf(why, whylen, "kernlint could not lint it: %s", msg ? msg : "(no reason)");
    json_decref(root);
    return -1;
  }
  size_t i, j;
  json_t *file, *d;
  int listed = 0;
  json_array_foreach(files, i, file) {
    const char *fp = json_string_value(json_object_get(file, "path"));
    if (!fp) continue;
    bool own = !strcmp(fp, path);
    listed |= own;
    json_array_foreach(json_object_get(file, "diagnostics"), j, d) {
      const char *rule = json_string_value(json_object_get(d, "rule"));
      json_int_t line = json_integer_value(json_object_get(d, "line"));
      const char *msg = json_string_value(json_object_get(d, "message"));
      if (rule && own) kl_fx_push(found, (unsigned)line, rule, strlen(rule), msg);
      /* Related locations in this file: its own findings' (no "path"), and those of another
       * file's findings that name it (a host call's kernel, defined here). */
      size_t k;
      json_t *r;
      json_array_foreach(json_object_get(d, "related"), k, r) {
        json_int_t rl = json_integer_value(json_object_get(r, "line"));
        const char *rp = json_string_value(json_object_get(r, "path"));
        if (rule && (rp ? !strcmp(rp, path) : own))
          kl_fx_push(related, (unsigned)rl, rule, strlen(rule), NULL);
      }
    }
  }
  json_decref(root);
  /* Every linted file is listed, findings or not: an empty list is not a clean result. */
  if (!listed) {
    snprintf(why, whylen, "kernlint's report does not list it in `files`");
    return -1;
  }
  return 0;
}

/* One fixture: 1 when it passes or is an expected failure. */
static int kl_fx_check(const char *kernlint, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len;
  char *text = kl_fx_read(path, &len);
  if (!text) {
    printf("FAIL %s: cannot read it\n", path);
    return 0;
  }
  struct kl_fx_file f;
  memset(&f, 0, sizeof f);
  kl_fx_parse(text, len, &f);
  free(text);
  for (int i = 0; i < f.nargs; i++) {
    if (f.args[i][0] != '@') continue;
    int dlen = (int)(base - path);
    size_t n = (size_t)dlen + strlen(f.args[i]) + 1;
    char *full = kl_arena_xmalloc(n);
    snprintf(full, n, "%.*s%s", dlen, path, f.args[i] + 1);
    free(f.args[i]);
    f.args[i] = full;
  }
  char why[4096] = "";
  int ok = 1;
  int mismatch = 0; /* kernlint ran and reported, and its findings differ from the annotations */
  int missing = 0, extra = 0; /* which way they differ */
  struct kl_fx_list found = {0}, related = {0};
  char *json = NULL;
  if (f.problems[0]) {
    snprintf(why, sizeof why, "%s", f.problems);
    ok = 0;
  } else if (!strncmp(base, "good", 4) && f.expect.n) {
    snprintf(why, sizeof why, "a good fixture carries `expect:` annotations");
    ok = 0;
  } else if (!strncmp(base, "bad", 3) && !f.expect.n) {
    snprintf(why, sizeof why, "a bad fixture carries no `expect:` annotation");
    ok = 0;
  } else if ((json = kl_fx_run(kernlint, &f, path, why, sizeof why)) == NULL ||
             kl_fx_json(json, path, &found, &related, why, sizeof why) != 0) {
    ok = 0;
  } else {
    /* Match as multisets of (line, rule): count up for expected, down for found. */
    for (size_t i = 0; i < f.expect.n; i++) f.expect.items[i].count = 1;
    for (size_t i = 0; i < found.n; i++) {
      struct kl_fx_find *g = &found.items[i];
      g->count = -1;
      for (size_t k = 0; k < f.expect.n; k++) {
        struct kl_fx_find *x = &f.expect.items[k];
        if (x->count > 0 && x->line == g->line && !strcmp(x->rule, g->rule)) {
          x->count = 0;
          g->count = 0;
          break;
        }
      }
    }
    for (size_t i = 0; i < f.expect.n; i++) {
      if (f.expect.items[i].count == 0) continue;
      char item[128];
      snprintf(item, sizeof item, "missing line %u %s", f.expect.items[i].line,
               f.expect.items[i].rule);
      kl_fx_append(why, sizeof why, item);
      mismatch = missing = 1;
    }
    for (size_t i = 0; i < f.also.n; i++) {
      const struct kl_fx_find *x = &f.also.items[i];
      bool seen = false;
      for (size_t k = 0; k < related.n && !seen; k++)
        seen = related.items[k].line == x->line && !strcmp(related.items[k].rule, x->rule);
      if (seen) continue;
      char item[160];
      snprintf(item, sizeof item, "line %u is no related location of a %s finding", x->line,
               x->rule);
      kl_fx_append(why, sizeof why, item);
      mismatch = missing = 1;
    }
    for (size_t i = 0; i < found.n; i++) {
      if (found.items[i].count == 0) continue;
      char item[400];
      snprintf(item, sizeof item, "unexpected line %u %s (%s)", found.items[i].line,
               found.items[i].rule, found.items[i].message);
      kl_fx_append(why, sizeof why, item);
      mismatch = extra = 1;
    }
  }
  if (!f.xfail_line) {
    ok = ok && !mismatch;
    if (ok)
      printf("PASS %s\n", path);
    else
      printf("FAIL %s: %s\n", path, why);
  } else if (ok && mismatch && (f.xfail_missing ? extra : missing)) {
    /* The marker names which way kernlint is wrong; any other difference is a regression. */
    printf("FAIL %s: marked %s, but %s: %s\n", path,
           f.xfail_missing ? "kernlint-xfail-missing (a known false negative)"
                           : "kernlint-xfail (known false positives)",
           f.xfail_missing ? "it reports findings it should not" : "an expected finding is missing",
           why);
    ok = 0;
  } else if (ok && mismatch) {
    printf("XFAIL %s: %s (%s)\n", path, f.xfail, why);
  } else if (ok) {
    printf("FAIL %s: marked kernlint-xfail but passes now; remove the marker\n", path);
    ok = 0;
  } else {
    printf("FAIL %s: %s\n", path, why);
  }
  free(json);
  free(found.items);
  free(related.items);
  free(f.expect.items);
  free(f.also.items);
  for (int i = 0; i < f.nargs; i++) free(f.args[i]);
  return ok;
}

int main(int argc, char **argv) {
  const char *kernlint = getenv("KERNLINT");
  if (!kernlint || !*kernlint) {
    printf("FAIL fixtures: KERNLINT is not set (the kernlint binary to test)\n");
    return 1;
  }
  struct kl_fx_paths paths = {0};
  if (argc < 2) {
    kl_fx_walk("tests/fixtures", &paths);
  } else {
    for (int i = 1; i < argc; i++) {
      struct stat st;
      if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode)) {
        if (paths.n == paths.cap) {
          paths.cap = paths.cap ? paths.cap * 2 : 64;
          paths.items = kl_arena_xrealloc(paths.items, paths.cap * sizeof *paths.items);
        }
        paths.items[paths.n++] = strdup(argv[i]);
      } else {
        kl_fx_walk(argv[i], &paths);
      }
    }
  }
  if (paths.n == 0) {
    printf("FAIL fixtures: no fixture found\n");
    return 1;
  }
  qsort(paths.items, paths.n, sizeof *paths.items, kl_fx_cmp_str);
  int failed = 0;
  for (size_t i = 0; i < paths.n; i++) {
    if (!kl_fx_check(kernlint, paths.items[i])) failed++;
    free(paths.items[i]);
  }
  free(paths.items);
  return failed ? 1 : 0;
}
