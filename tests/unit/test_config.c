/* Unit tests for .lintrc loading, validation, globs, [path] overrides and discovery. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/core/config.h"
#include "rules/rule_ids.h"
#include "rules/rules.h"

#include "tests/unit/kl_test.h"

static char root[64];

/* Everything created under root, removed in reverse order at the end. */
static char *created[256];
static size_t ncreated;

static char *under(const char *rel) {
  static char buf[4][PATH_MAX];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", root, rel);
  return buf[k];
}

static void track(const char *path) {
  for (size_t i = 0; i < ncreated; i++)
    if (!strcmp(created[i], path)) return;
  if (ncreated < sizeof created / sizeof created[0]) created[ncreated++] = strdup(path);
}

static void make_dir(const char *rel) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", under(rel));
  /* mkdir -p, tracking each new level. */
  for (char *p = path + strlen(root) + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(path, 0700) == 0) track(path);
    *p = '/';
  }
  if (mkdir(path, 0700) == 0) track(path);
}

static void write_file(const char *rel, const char *text) {
  const char *path = under(rel);
  FILE *f = fopen(path, "wb");
  if (!f) {
    printf("FAIL setup: cannot write %s\n", path);
    failures++;
    return;
  }
  fputs(text, f);
  fclose(f);
  track(path);
}

/* Load text as a config file named rel under root. */
static struct kl_config *load_text(const char *rel, const char *text, char *err, size_t errlen) {
  write_file(rel, text);
  err[0] = '\0';
  return kl_config_load(under(rel), err, errlen);
}

static void test_good(void) {
  char err[512];
  struct kl_config *c = load_text(
      "good.lintrc",
      "; kernlint settings\n"
      "# another comment\n"
      "target = m1\n"
      "assume-rounded-grid = yes\n"
      "include = src/**/*.metal, *.py\n"
      "include = kernels/   ; lists accumulate\n"
      "exclude = vendor third_party/**\n"
      "bfloat-guards = GGML_METAL_HAS_BF16, MY_BF16\n"
      "\n"
      "[rules]\n"
      "bounds-guard = off\n"
      "half-accumulator = error\n"
      "half-accumulator = note   # the last one wins\n"
      "\n"
      "[kernlint]\n"
      "assume-rounded-grid = off\n"
      "\n"
      "[path \"tests/**\"]\n"
      "bounds-guard = warning\n"
      "target = M1\n"
      "[path \"some/really/long/folder/name/that/goes/on/and/on/and/on/**/*.metal\"]  ; c\n"
      "assume-rounded-grid = true\n",
      err, sizeof err);
  check("good-loads", c != NULL, "error: %s", err);
  if (!c) return;
  int bg = kl_rules_index("bounds-guard"), ha = kl_rules_index("half-accumulator");
  check_str("good-target", c->target, "m1");
  check_int("good-rounded-last-wins", c->assume_rounded_grid, 0);
  check_int("good-include-count", (long)c->ninclude, 3);
  if (c->ninclude == 3) {
    check_str("good-include-0", c->include[0], "src/**/*.metal");
    check_str("good-include-1", c->include[1], "*.py");
    check_str("good-include-2", c->include[2], "kernels/");
  }
  check_int("good-exclude-count", (long)c->nexclude, 2);
  if (c->nexclude == 2) check_str("good-exclude-1", c->exclude[1], "third_party/**");
  check_int("good-guards-count", (long)c->nbfloat_guards, 2);
  if (c->nbfloat_guards == 2) check_str("good-guard-0", c->bfloat_guards[0], "GGML_METAL_HAS_BF16");
  check_int("good-rule-off", c->level[bg], KL_SEV_OFF);
  check_int("good-rule-duplicate-last-wins", c->level[ha], KL_SEV_NOTE);
  check_int("good-rule-unset", c->level[kl_rules_index("bfloat-target")], -1);
  check_int("good-sections", (long)c->nsections, 2);
  if (c->nsections == 2) {
    check_str("good-section-glob", c->sections[0].glob, "tests/**");
    check_int("good-section-level", c->sections[0].level[bg], KL_SEV_WARNING);
    check_str("good-section-target-lowercased", c->sections[0].target, "m1");
    check_int("good-section-rounded-unset", c->sections[0].assume_rounded_grid, -1);
    check_str("good-long-section-glob", c->sections[1].glob,
              "some/really/long/folder/name/that/goes/on/and/on/and/on/**/*.metal");
    check_int("good-long-section-rounded", c->sections[1].assume_rounded_grid, 1);
  }
  char *want_dir = realpath(root, NULL);
  check_str("good-dir-is-absolute", c->dir, want_dir);
  free(want_dir);
  kl_config_delete(c);
  kl_config_delete(NULL);

  c = load_text("crlf.lintrc", "\xEF\xBB\xBFtarget = m1\r\n[rules]\r\nbounds-guard = off\r\n", err,
                sizeof err);
  check("good-bom-crlf", c && c->level[bg] == KL_SEV_OFF, "error: %s", err);
  kl_config_delete(c);

  c = load_text("bools.lintrc",
                "[path \"a\"]\nassume-rounded-grid = ON\n[path \"b\"]\n"
                "assume-rounded-grid = 0\n",
                err, sizeof err);
  check("good-bools",
        c && c->nsections == 2 && c->sections[0].assume_rounded_grid == 1 &&
            c->sections[1].assume_rounded_grid == 0,
        "error: %s", err);
  kl_config_delete(c);

  c = load_text("multi.lintrc", "exclude = a,\n  b c\n\n  d\n", err, sizeof err);
  check("good-list-continuation", c && c->nexclude == 4, "error: %s", err);
  kl_config_delete(c);

  c = load_text("empty.lintrc", "", err, sizeof err);
  check("good-empty-file", c && !c->target && c->assume_rounded_grid == -1, "error: %s", err);
  kl_config_delete(c);
}

struct bad_case {
  const char *name;
  const char *text;
  int line;
  const char *message; /* the error after "path:line: " (a prefix when it ends in "...") */
};

static void test_errors(void) {
  static char long_line[400];
  memset(long_line, 0, sizeof long_line);
  strcpy(long_line, "include = ");
  memset(long_line + strlen(long_line), 'x', 300);
  strcat(long_line, "\n");
  const struct bad_case cases[] = {
      {"err-unknown-rule", "[rules]\nno-such-rule = off\n", 2,
       "unknown rule 'no-such-rule' in [rules]"},
      {"err-unknown-key", "target = m1\nfoo = 1\n", 2, "unknown key 'foo'"},
      {"err-unknown-key-kernlint", "[kernlint]\n\nfoo = 1\n", 3, "unknown key 'foo'"},
      {"err-rule-at-top", "bounds-guard = off\n", 1,
       "unknown key 'bounds-guard' (rule levels go in [rules])"},
      {"err-path-key", "[path \"*.metal\"]\ninclude = x\n", 2,
       "unknown key 'include' in [path \"*.metal\"]"},
      {"err-target", "\n\ntarget = m9\n", 3, "unknown target 'm9' (expected one of: m1..."},
      {"err-path-target", "[path \"x\"]\ntarget = nope\n", 2, "unknown target 'nope'..."},
      {"err-bool", "assume-rounded-grid = maybe\n", 1,
       "invalid value 'maybe' for 'assume-rounded-grid' (expected true or false)"},
      {"err-level", "[rules]\nbounds-guard = loud\n", 2,
       "invalid level 'loud' for rule 'bounds-guard' (expected off, note, warning or error)"},
      {"err-path-level", "[path \"x\"]\nbounds-guard = warn\n", 2,
       "invalid level 'warn' for rule 'bounds-guard'..."},
      {"err-section", "; c\n\n[foo]\n", 3,
       "unknown section [foo] (expected [kernlint], [rules] or [path \"glob\"])"},
      {"err-path-unquoted", "[path src]\n", 1, "[path] needs a quoted glob..."},
      {"err-path-empty", "[path \"\"]\n", 1, "empty glob in [path \"\"]"},
      {"err-path-unterminated", "[path \"src]\n", 1, "unterminated glob..."},
      {"err-section-unclosed", "target = m1\n[rules\n", 2, "malformed section header..."},
      {"err-section-trailing", "[rules] x\n", 1, "unexpected text after section header: 'x'"},
      {"err-syntax", "target = m1\njust words\n", 2, "syntax error..."},
      {"err-macro", "bfloat-guards = OK, 1BAD\n", 1, "invalid macro name '1BAD' in bfloat-guards"},
      {"err-continuation", "target = m1\n  m2\n", 2, "'target' takes one value..."},
      {"err-long-line", long_line, 1, "line too long..."},
      {"err-after-comments", "; c\n\n# c\ntarget = m1\n[rules]\n\nbogus = off\n", 7,
       "unknown rule 'bogus' in [rules]"},
      {"err-first-wins", "foo = 1\nbar = 2\n", 1, "unknown key 'foo'"},
      {"err-semantic-before-syntax", "foo = 1\ngarbage\n", 1, "unknown key 'foo'"},
      {"err-syntax-before-semantic", "garbage\nfoo = 1\n", 1, "syntax error..."},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char err[512], rel[64], want[600];
    snprintf(rel, sizeof rel, "bad%zu.lintrc", i);
    struct kl_config *c = load_text(rel, cases[i].text, err, sizeof err);
    if (c) {
      check(cases[i].name, 0, "loaded without error");
      kl_config_delete(c);
      continue;
    }
    snprintf(want, sizeof want, "%s:%d: %s", under(rel), cases[i].line, cases[i].message);
    size_t wl = strlen(want);
    int ok;
    if (wl > 3 && !strcmp(want + wl - 3, "...")) {
      ok = !strncmp(err, want, wl - 3);
    } else {
      ok = !strcmp(err, want);
    }
    check(cases[i].name, ok && !strchr(err, '\n'), "got \"%s\", want \"%s\"", err, want);
    /* The in-memory reader (the fuzzer's) must say exactly what the file reader says. */
    char merr[512] = "";
    struct kl_config *m = kl_config_from_memory(under(rel), cases[i].text, strlen(cases[i].text),
                                                merr, sizeof merr);
    snprintf(want, sizeof want, "%s-memory", cases[i].name);
    check(want, !m && !strcmp(merr, err), "got \"%s\", want \"%s\"", merr, err);
    kl_config_delete(m);
  }

  char err[512], want[600];
  struct kl_config *c = kl_config_from_memory(under("empty.lintrc"), NULL, 0, err, sizeof err);
  check("memory-empty", c && c->target == NULL && c->nsections == 0, "got \"%s\"", err);
  kl_config_delete(c);
  c = kl_config_load(under("missing.lintrc"), err, sizeof err);
  snprintf(want, sizeof want, "%s: no such file or directory", under("missing.lintrc"));
  check("err-missing-file", !c && !strcmp(err, want), "got \"%s\"", err);
  kl_config_delete(c);
  make_dir("adir");
  c = kl_config_load(under("adir"), err, sizeof err);
  snprintf(want, sizeof want, "%s: is a directory, expected a .lintrc file", under("adir"));
  check("err-directory", !c && !strcmp(err, want), "got \"%s\"", err);
  kl_config_delete(c);
}

struct glob_case {
  const char *glob, *path;
  bool want;
};

static void test_glob(void) {
  static const struct glob_case cases[] = {
      {"*.metal", "a.metal", true},
      {"*.metal", "src/a.metal", false},
      {"*.metal", ".hidden.metal", true},
      {"**/*.metal", "a.metal", true},
      {"**/*.metal", "src/a.metal", true},
      {"**/*.metal", "a/b/c.metal", true},
      {"**/*.metal", "a/b/c.h", false},
      {"src/**", "src/a/b.metal", true},
      {"src/**", "src", false},
      {"src/**", "srcx/a", false},
      {"src/**/x.h", "src/x.h", true},
      {"src/**/x.h", "src/a/b/x.h", true},
      {"src/**/x.h", "src/a/b/y.h", false},
      {"src/*/x.h", "src/a/x.h", true},
      {"src/*/x.h", "src/a/b/x.h", false},
      {"**", "a/b/c", true},
      {"a/**/b/**/c", "a/x/b/y/z/c", true},
      {"a**b", "axyb", true},
      {"a**b", "ax/yb", false},
      {"?.h", "a.h", true},
      {"?.h", "ab.h", false},
      {"a?b", "a/b", false},
      {"[ab].h", "b.h", true},
      {"[ab].h", "c.h", false},
      {"[!ab].h", "b.h", false},
      {"[!ab].h", "c.h", true},
      {"[a-c]x", "cx", true},
      {"[a-c]x", "dx", false},
      {"a[", "a[", true},
      {"\\*", "*", true},
      {"\\*", "a", false},
      {"*", "", true},
      {"", "", true},
      {"", "a", false},
      {"abc", "abcd", false},
      {"*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
       false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[160];
    snprintf(name, sizeof name, "glob '%s' vs '%s'", cases[i].glob, cases[i].path);
    bool got = kl_config_glob(cases[i].glob, cases[i].path);
    check(name, got == cases[i].want, "got %s", got ? "match" : "no match");
  }
}

static void test_selects(void) {
  char err[512];
  struct kl_config *c = load_text("sel.lintrc",
                                  "include = *.metal kernels/*.h\n"
                                  "exclude = vendor, build/, /gen/*.metal, docs/**/x.metal\n",
                                  err, sizeof err);
  check("selects-loads", c != NULL, "error: %s", err);
  if (!c) return;
  struct {
    const char *rel;
    bool want;
  } cases[] = {
      {"a.metal", true},
      {"src/a.metal", true},
      {"a.py", false},
      {"kernels/k.h", true},
      {"src/kernels/k.h", false},
      {"vendor/x.metal", false},
      {"src/vendor/y.metal", false},
      {"build/x.metal", false},
      {"build.metal", true},
      {"gen/x.metal", false},
      {"src/gen/x.metal", true},
      {"docs/a/b/x.metal", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[160];
    snprintf(name, sizeof name, "selects %s", cases[i].rel);
    bool got = kl_config_selects(c, under(cases[i].rel));
    check(name, got == cases[i].want, "got %s", got ? "selected" : "skipped");
  }
  check("selects-outside-folder-basename", kl_config_selects(c, "/nonexistent-kl/a.metal"),
        "a file outside the .lintrc folder still matches basename globs");
  check("selects-outside-folder-excluded", !kl_config_selects(c, "/nonexistent-kl/vendor/a.metal"),
        "a vendor component outside the folder is still excluded");
  check("selects-null-config", kl_config_selects(NULL, "anything.txt"), "NULL selects all");

  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) && chdir(root) == 0) {
    check("selects-relative", kl_config_selects(c, "src/a.metal"), "relative path");
    check("selects-relative-dot", !kl_config_selects(c, "./vendor/x.metal"), "./ prefix");
    check("selects-relative-dotdot", !kl_config_selects(c, "src/../vendor/x.metal"), "..");
    if (chdir(cwd) != 0) check("selects-chdir-back", 0, "cannot return to %s", cwd);
  }
  kl_config_delete(c);
}

static void test_apply(void) {
  char err[512];
  struct kl_config *c = load_text("apply.lintrc",
                                  "target = m1\n"
                                  "assume-rounded-grid = false\n"
                                  "bfloat-guards = HAS_BF16\n"
                                  "[rules]\n"
                                  "bounds-guard = warning\n"
                                  "[path \"*.metal\"]\n"
                                  "bounds-guard = error\n"
                                  "assume-rounded-grid = true\n"
                                  "[path \"src/legacy/**\"]\n"
                                  "bounds-guard = off\n"
                                  "[path \"*.metal\"]\n"
                                  "half-accumulator = off\n",
                                  err, sizeof err);
  check("apply-loads", c != NULL, "error: %s", err);
  if (!c) return;
  int bg = kl_rules_index("bounds-guard"), ha = kl_rules_index("half-accumulator");
  struct kl_settings s;

  kl_config_defaults(&s);
  check_str("defaults-target", s.target, "m1");
  check_int("defaults-family", s.apple_family, 7);
  check_int("defaults-rounded", s.assume_rounded_grid, 0);
  check_int("defaults-level", s.level[bg], -1);
  check_int("defaults-guards", (long)s.nbfloat_guards, 0);
  kl_config_apply(NULL, "x.metal", &s);
  check_int("apply-null-keeps-defaults", s.level[bg], -1);

  kl_config_defaults(&s);
  kl_config_apply(c, under("src/legacy/a.metal"), &s);
  check_int("apply-later-section-wins", s.level[bg], KL_SEV_OFF);
  check_int("apply-third-section", s.level[ha], KL_SEV_OFF);
  check_int("apply-section-rounded", s.assume_rounded_grid, 1);
  check_str("apply-target", s.target, "m1");
  check_int("apply-family", s.apple_family, 7);
  check("apply-guards-point-into-config",
        s.nbfloat_guards == 1 && s.bfloat_guards[0] == c->bfloat_guards[0], "guards not shared");

  kl_config_defaults(&s);
  kl_config_apply(c, under("src/a.metal"), &s);
  check_int("apply-basename-section", s.level[bg], KL_SEV_ERROR);
  check_int("apply-basename-section-2", s.level[ha], KL_SEV_OFF);

  kl_config_defaults(&s);
  kl_config_apply(c, under("src/legacy/a.py"), &s);
  check_int("apply-anchored-only", s.level[bg], KL_SEV_OFF);
  check_int("apply-no-basename-match", s.level[ha], -1);
  check_int("apply-top-level-rounded", s.assume_rounded_grid, 0);

  kl_config_defaults(&s);
  kl_config_apply(c, under("b.py"), &s);
  check_int("apply-top-level-rule", s.level[bg], KL_SEV_WARNING);
  check_int("apply-unset-rule", s.level[ha], -1);
  check_int("apply-rules-level", kl_rules_level(&s, (size_t)bg), KL_SEV_WARNING);
  kl_config_delete(c);
}

static void test_find(void) {
  make_dir("proj/src/kern");
  make_dir("proj/src/legacy");
  make_dir("other/.lintrc");
  write_file("proj/.lintrc", "[path \"src/legacy/**\"]\nbounds-guard = off\n");
  char *want = realpath(root, NULL), buf[PATH_MAX];
  char *f = kl_config_find(under("proj/y.metal"));
  snprintf(buf, sizeof buf, "%s/proj/.lintrc", want);
  check_str("find-same-folder", f, buf);
  free(f);
  f = kl_config_find(under("proj/src/kern/x.metal"));
  check_str("find-upward", f, buf);
  free(f);
  f = kl_config_find(under("proj/not/there/x.metal"));
  check_str("find-from-missing-folder", f, buf);
  free(f);
  write_file("proj/src/.lintrc", "target = m1\n");
  f = kl_config_find(under("proj/src/kern/x.metal"));
  snprintf(buf, sizeof buf, "%s/proj/src/.lintrc", want);
  check_str("find-closest-wins", f, buf);
  free(f);
  f = kl_config_find(under("other/z.metal"));
  check("find-ignores-directory", !f || strncmp(f, want, strlen(want)) != 0, "found %s",
        f ? f : "");
  free(f);

  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) && chdir(under("proj/src/kern")) == 0) {
    f = kl_config_find("x.metal");
    check_str("find-relative-up", f, "../.lintrc");
    free(f);
    if (chdir(under("proj")) == 0) {
      f = kl_config_find("src/kern/x.metal");
      check_str("find-relative-down", f, "src/.lintrc");
      free(f);
      f = kl_config_find("y.metal");
      check_str("find-relative-here", f, ".lintrc");
      char err[512];
      struct kl_config *c = f ? kl_config_load(f, err, sizeof err) : NULL;
      check("find-relative-loads", c != NULL, "error: %s", f ? err : "not found");
      if (c) {
        int bg = kl_rules_index("bounds-guard");
        struct kl_settings s;
        kl_config_defaults(&s);
        kl_config_apply(c, "src/legacy/a.metal", &s);
        check_int("apply-relative-file", s.level[bg], KL_SEV_OFF);
        kl_config_defaults(&s);
        kl_config_apply(c, "./src/kern/../legacy/b.metal", &s);
        check_int("apply-relative-dotdot", s.level[bg], KL_SEV_OFF);
        kl_config_defaults(&s);
        kl_config_apply(c, "src/kern/a.metal", &s);
        check_int("apply-relative-nonmatch", s.level[bg], -1);
      }
      kl_config_delete(c);
      free(f);
    }
    if (chdir(cwd) != 0) check("find-chdir-back", 0, "cannot return to %s", cwd);
  }
  free(want);
}

/* The shipped example must itself be a valid config (tests run from the repo root). */
static void test_example(void) {
  if (access(".lintrc.example", R_OK) != 0) {
    printf("PASS skipped-example (not run from the repo root)\n");
    return;
  }
  char err[512];
  struct kl_config *c = kl_config_load(".lintrc.example", err, sizeof err);
  check("example-loads", c != NULL, "%s", err);
  kl_config_delete(c);
}

/* kl_rules_list: the instantiation lists of one-finding-per-defect messages. */
static void test_list(void) {
  struct kl_arena *a = kl_arena_new();
  const char *v[] = {"a", "b", "a", "c", "d", "e"};
  check_str("list-none", kl_rules_list(a, v, 0, 3), "");
  check_str("list-one", kl_rules_list(a, v, 1, 3), "a");
  check_str("list-two-dup", kl_rules_list(a, v, 3, 3), "a and b");
  check_str("list-three", kl_rules_list(a, v, 4, 3), "a, b and c");
  check_str("list-more", kl_rules_list(a, v, 6, 3), "a, b, c and 2 more");
  kl_arena_delete(a);
}

/* Settings index rules by rules/rule_ids.c, which must list the registry's rules in its order. */
static void test_ids(void) {
  size_t n;
  const struct kl_rule *const *rules = kl_rules_all(&n);
  check_int("ids-count", (long)n, KL_RULE_IDS_COUNT);
  for (size_t i = 0; i < n && i < KL_RULE_IDS_COUNT; i++) {
    check_str("ids-order", kl_rule_ids_name(i), rules[i]->id);
    check_int("ids-index", kl_rule_ids_index(rules[i]->id), kl_rules_index(rules[i]->id));
  }
  check_int("ids-unknown", kl_rule_ids_index("no-such-rule"), -1);
}

static int by_length_desc(const void *a, const void *b) {
  size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
  return la < lb ? 1 : la > lb ? -1 : 0;
}

int main(void) {
  snprintf(root, sizeof root, "/tmp/kl-config-XXXXXX");
  if (!mkdtemp(root)) {
    printf("FAIL setup: mkdtemp\n");
    return 1;
  }
  test_good();
  test_errors();
  test_glob();
  test_selects();
  test_apply();
  test_find();
  test_example();
  test_list();
  test_ids();
  /* Deepest paths first, so folders are empty when removed. */
  qsort(created, ncreated, sizeof created[0], by_length_desc);
  for (size_t i = 0; i < ncreated; i++) {
    remove(created[i]);
    free(created[i]);
  }
  check("cleanup", rmdir(root) == 0, "%s is not empty", root);
  return failures ? 1 : 0;
}
