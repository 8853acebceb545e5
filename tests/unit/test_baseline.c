/* Unit tests for baselines: the content key (shared with SARIF's fingerprint), paths relative to
 * the baseline's folder, matching with counted duplicates, unused entries, and the file's exact
 * form, read back. Findings are built by hand; nothing is linted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/core/arena.h"
#include "analyzer/report/baseline.h"
#include "analyzer/report/diag.h"
#include "analyzer/input/source.h"
#include "tests/unit/kl_test.h"

static char dir[256]; /* a scratch folder, its real path */

/* A source and its findings, one per "rule@line" word of spec (each spans its line's start). */
struct fixture {
  struct kl_arena *a;
  struct kl_source src;
  struct kl_diag_list diags;
};

static void fixture_init(struct fixture *f, const char *path, const char *text, const char *spec) {
  f->a = kl_arena_new();
  char err[256];
  if (kl_source_from_memory(f->a, path, text, strlen(text), &f->src, err, sizeof err) != 0) {
    printf("FAIL fixture: %s\n", err);
    exit(1);
  }
  kl_diag_list_init(&f->diags, f->a);
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    char *at = strchr(tok, '@');
    *at = '\0';
    uint32_t start = f->src.line_starts[atoi(at + 1) - 1];
    kl_diag_add(&f->diags, kl_arena_strdup(f->a, tok), KL_SEV_ERROR,
                kl_diag_span(&f->src, start, start), "a finding");
  }
  kl_diag_sort(&f->diags);
}

/* The lines of the findings left, "rule@line" joined by spaces. */
static const char *left(const struct fixture *f) {
  static char out[512];
  size_t o = 0;
  out[0] = '\0';
  for (size_t i = 0; i < f->diags.n && o < sizeof out; i++)
    o += (size_t)snprintf(out + o, sizeof out - o, "%s%s@%u", i ? " " : "",
                          f->diags.items[i].rule_id, f->diags.items[i].span.line);
  return out;
}

/* The reference the fingerprint is documented as: FNV-1a of the rule id, a NUL and the text. */
static uint64_t fnv(const char *rule, const char *text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i <= strlen(rule); i++) h = (h ^ (unsigned char)rule[i]) * 0x100000001b3ULL;
  for (size_t i = 0; i < strlen(text); i++) h = (h ^ (unsigned char)text[i]) * 0x100000001b3ULL;
  return h;
}

static void test_keys(void) {
  struct fixture f;
  fixture_init(&f, "k.metal", "  a = b;\t\n\ta = b;  \r\nc;\n\n",
               "x-rule@1 x-rule@2 y-rule@2 x-rule@3 x-rule@4");
  struct kl_finding_key k[5];
  kl_baseline_keys(&f.src, &f.diags, k);
  check("key-trimmed", k[0].len == 6 && !memcmp(k[0].text, "a = b;", 6), "got '%.*s'",
        (int)k[0].len, k[0].text);
  check("key-trimmed-cr", k[1].len == 6 && !memcmp(k[1].text, "a = b;", 6), "got '%.*s'",
        (int)k[1].len, k[1].text);
  check_int("key-occurrence-first", (long)k[0].occurrence, 1);
  check_int("key-occurrence-same-rule-and-text", (long)k[1].occurrence, 2);
  check_int("key-occurrence-other-rule", (long)k[2].occurrence, 1);
  check_int("key-occurrence-other-text", (long)k[3].occurrence, 1);
  check("key-empty-line", k[4].len == 0, "got %u bytes", k[4].len);
  check("key-hash-documented", k[0].hash == fnv("x-rule", "a = b;"), "got %016llx",
        (unsigned long long)k[0].hash);
  check("key-hash-indent-free", k[0].hash == k[1].hash, "the two lines hash apart");
  check("key-hash-rule", k[1].hash != k[2].hash, "the rule is not in the hash");
  kl_arena_delete(f.a);
}

/* Write b to path; returns the file's bytes (malloc'd). */
static char *write_read(struct kl_baseline *b, const char *path) {
  FILE *fp = fopen(path, "w");
  if (!fp) return NULL;
  kl_baseline_write(b, fp);
  fclose(fp);
  fp = fopen(path, "r");
  char *buf = calloc(1, 8192);
  size_t n = fread(buf, 1, 8191, fp);
  buf[n] = '\0';
  fclose(fp);
  return buf;
}

static void test_paths(void) {
  char file[512], path[600], err[512];
  snprintf(file, sizeof file, "%s/sub/bl.json", dir);
  snprintf(path, sizeof path, "%s/sub", dir);
  mkdir(path, 0777);
  struct kl_baseline *b = kl_baseline_new(file, err, sizeof err);
  if (!b) {
    check("path-new", false, "%s", err);
    return;
  }
  char *p;
  snprintf(path, sizeof path, "%s/sub/k/a.metal", dir);
  check_str("path-below", p = kl_baseline_path(b, path, true), "k/a.metal");
  free(p);
  snprintf(path, sizeof path, "%s/sub/./k//../a.metal", dir);
  check_str("path-normalised", p = kl_baseline_path(b, path, true), "a.metal");
  free(p);
  snprintf(path, sizeof path, "%s/other/a.metal", dir);
  check_str("path-beside", p = kl_baseline_path(b, path, true), "../other/a.metal");
  free(p);
  snprintf(path, sizeof path, "%s/subway.metal", dir);
  check_str("path-prefix-not-folder", p = kl_baseline_path(b, path, true), "../subway.metal");
  free(p);
  check_str("path-not-a-file", p = kl_baseline_path(b, "<stdin>", false), "<stdin>");
  free(p);
  kl_baseline_delete(b);
  snprintf(file, sizeof file, "%s/no/such/bl.json", dir);
  b = kl_baseline_new(file, err, sizeof err);
  check("path-folder-missing", !b && !strncmp(err, file, strlen(file)), "err '%s'", err);
  kl_baseline_delete(b);
}

static void test_match(void) {
  char file[512], err[512];
  snprintf(file, sizeof file, "%s/bl.json", dir);
  struct kl_baseline *b = kl_baseline_new(file, err, sizeof err);
  if (!b) {
    check("match-new", false, "%s", err);
    return;
  }
  /* Recorded out of order: the file is sorted by path, rule, text and occurrence. */
  struct fixture z, k;
  fixture_init(&z, "z.metal", "q;\n", "b-rule@1");
  fixture_init(&k, "k.metal", "x;\nx;\ny;\n", "b-rule@1 b-rule@2 a-rule@3 b-rule@3");
  kl_baseline_record(b, "z.metal", &z.src, &z.diags);
  kl_baseline_record(b, "k.metal", &k.src, &k.diags);
  check_int("record-count", (long)kl_baseline_count(b), 5);
  char *text = write_read(b, file);
  const char *want = "{\n"
                     "  \"version\": 1,\n"
                     "  \"tool\": \"kernlint\",\n"
                     "  \"entries\": [\n"
                     "    {\n"
                     "      \"path\": \"k.metal\",\n"
                     "      \"rule\": \"a-rule\",\n"
                     "      \"text\": \"y;\",\n"
                     "      \"occurrence\": 1,\n"
                     "      \"message\": \"a finding\"\n"
                     "    },\n"
                     "    {\n"
                     "      \"path\": \"k.metal\",\n"
                     "      \"rule\": \"b-rule\",\n"
                     "      \"text\": \"x;\",\n"
                     "      \"occurrence\": 1,\n"
                     "      \"message\": \"a finding\"\n"
                     "    },\n"
                     "    {\n"
                     "      \"path\": \"k.metal\",\n"
                     "      \"rule\": \"b-rule\",\n"
                     "      \"text\": \"x;\",\n"
                     "      \"occurrence\": 2,\n"
                     "      \"message\": \"a finding\"\n"
                     "    },\n"
                     "    {\n"
                     "      \"path\": \"k.metal\",\n"
                     "      \"rule\": \"b-rule\",\n"
                     "      \"text\": \"y;\",\n"
                     "      \"occurrence\": 1,\n"
                     "      \"message\": \"a finding\"\n"
                     "    },\n"
                     "    {\n"
                     "      \"path\": \"z.metal\",\n"
                     "      \"rule\": \"b-rule\",\n"
                     "      \"text\": \"q;\",\n"
                     "      \"occurrence\": 1,\n"
                     "      \"message\": \"a finding\"\n"
                     "    }\n"
                     "  ]\n"
                     "}\n";
  check_str("write-exact", text, want);
  free(text);
  kl_baseline_delete(b);
  kl_arena_delete(z.a);
  kl_arena_delete(k.a);

  b = kl_baseline_load(file, err, sizeof err);
  if (!b) {
    check("load", false, "%s", err);
    return;
  }
  check_int("load-count", (long)kl_baseline_count(b), 5);
  /* Lines moved down, the x; line three times (two recorded), the y; a-rule finding gone. */
  fixture_init(&k, "k.metal", "\n\nx;\nx;\nx;\ny;\nnew;\n",
               "b-rule@3 b-rule@4 b-rule@5 b-rule@6 b-rule@7");
  size_t n = kl_baseline_filter(b, "k.metal", &k.src, &k.diags);
  check_int("filter-count", (long)n, 3);
  check_str("filter-left", left(&k), "b-rule@5 b-rule@7");
  kl_arena_delete(k.a);
  /* Another path is another file, whatever its text. */
  fixture_init(&k, "other.metal", "x;\n", "b-rule@1");
  check_int("filter-other-path", (long)kl_baseline_filter(b, "other.metal", &k.src, &k.diags), 0);
  kl_arena_delete(k.a);
  /* z.metal was not linted and exists: not judged; k.metal's a-rule entry is unused. */
  char zpath[600];
  snprintf(zpath, sizeof zpath, "%s/z.metal", dir);
  FILE *zf = fopen(zpath, "w");
  if (zf) fclose(zf);
  size_t pos = 0;
  const struct kl_baseline_entry *e = kl_baseline_next_unused(b, &pos);
  check("unused-first", e && !strcmp(e->rule, "a-rule") && !strcmp(e->text, "y;"), "got %s",
        e ? e->rule : "none");
  e = kl_baseline_next_unused(b, &pos);
  check("unused-unlinted-existing-skipped", !e, "got %s %s", e ? e->path : "", e ? e->text : "");
  kl_baseline_delete(b);
  /* Once z.metal is gone, its entry is stale too. */
  unlink(zpath);
  b = kl_baseline_load(file, err, sizeof err);
  pos = 0;
  size_t count = 0;
  while ((e = kl_baseline_next_unused(b, &pos)) != NULL) count++;
  check_int("unused-gone-file", (long)count, 5);
  kl_baseline_delete(b);
  unlink(file);
}

/* load must refuse bad with an error naming the file and containing want. */
static void bad(const char *name, const char *content, const char *want) {
  char file[512], err[512] = "";
  snprintf(file, sizeof file, "%s/bad.json", dir);
  FILE *f = fopen(file, "w");
  fputs(content, f);
  fclose(f);
  struct kl_baseline *b = kl_baseline_load(file, err, sizeof err);
  check(name, !b && !strncmp(err, file, strlen(file)) && strstr(err, want) && !strchr(err, '\n'),
        "err '%s'", err);
  kl_baseline_delete(b);
  unlink(file);
}

static void test_bad(void) {
  bad("bad-json", "{\"version\": 1,", "malformed");
  bad("bad-duplicate-key", "{\"version\": 1, \"version\": 1}", "malformed");
  bad("bad-tool", "{\"version\": 1, \"entries\": []}", "not a kernlint baseline");
  bad("bad-version", "{\"version\": \"1\", \"tool\": \"kernlint\", \"entries\": []}", "version");
  bad("bad-entry", "{\"version\": 1, \"tool\": \"kernlint\", \"entries\": [1]}", "entries[0]");
  bad("bad-path",
      "{\"version\": 1, \"tool\": \"kernlint\", \"entries\": [{\"path\": \"\", "
      "\"rule\": \"r\", \"text\": \"\", \"occurrence\": 1}]}",
      "entries[0].path");
  bad("bad-nul",
      "{\"version\": 1, \"tool\": \"kernlint\", \"entries\": [{\"path\": \"a\", "
      "\"rule\": \"r\", \"text\": \"a\\u0000b\", \"occurrence\": 1}]}",
      "malformed");
  bad("bad-message",
      "{\"version\": 1, \"tool\": \"kernlint\", \"entries\": [{\"path\": \"a\", "
      "\"rule\": \"r\", \"text\": \"\", \"occurrence\": 1, \"message\": 2}]}",
      "message");
  char file[512], err[512] = "";
  snprintf(file, sizeof file, "%s/missing.json", dir);
  struct kl_baseline *b = kl_baseline_load(file, err, sizeof err);
  check("bad-missing", !b && !strncmp(err, file, strlen(file)) && strstr(err, "No such file"),
        "err '%s'", err);
  kl_baseline_delete(b);
}

int main(void) {
  char tmpl[] = "/tmp/kl-baseline-XXXXXX";
  if (!mkdtemp(tmpl)) {
    printf("FAIL scratch: cannot make a folder\n");
    return 1;
  }
  char *real = realpath(tmpl, NULL);
  snprintf(dir, sizeof dir, "%s", real);
  free(real);
  test_keys();
  test_paths();
  test_match();
  test_bad();
  char sub[300];
  snprintf(sub, sizeof sub, "%s/sub", dir);
  rmdir(sub);
  rmdir(dir);
  return failures ? 1 : 0;
}
