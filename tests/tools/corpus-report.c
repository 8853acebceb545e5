/* Developer tool behind `make corpus-report`: the tables that measure kernlint on the development
 * corpus. tests/corpus/report.sh runs kernlint and parse-stats and hands their output here.
 *
 * Usage: corpus-report LEDGER PARSE_TSV TIMES_TSV TOTAL_SECONDS SARIF...
 *   LEDGER     tests/corpus/ledger.tsv: rule, path, line, fingerprint, verdict, reason
 *   PARSE_TSV  parse-stats output: path, parsed bytes, bytes in ERROR nodes, ERROR nodes
 *   TIMES_TSV  path, seconds (one kernlint run per file)
 *   SARIF      one kernlint SARIF log per corpus entry, run from the corpus folder
 *
 * A finding is keyed by rule, path and SARIF fingerprint (a hash of the rule and the trimmed text
 * of its line, with its occurrence among identical lines), so the ledger survives line shifts and
 * holds no code; a row at the finding's own line is tied on the text alone, so it also survives a
 * fix that renumbers the occurrences. Precision is computed over judged findings that kernlint
 * still reports; ledger rows that no longer match a finding are listed, because a judged TP that
 * disappears is a lost detection and a judged FP that disappears is a fix. A line one rule
 * reports twice is listed too: one defect is one finding. Exit 0, or 2 on unreadable input. */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/core/arena.h"

#define KL_CR_MAX_RULES 16
#define KL_CR_MAX_ENTRIES 32
#define KL_CR_SLOWEST 10
#define KL_CR_WORST_PARSE 15
/* The parse-quality targets: the share of bytes inside ERROR nodes stays below this
 * percentage, and the share of files with any ERROR node at or below this one. */
#define KL_CR_PARSE_MAX_BYTES 1.0
#define KL_CR_PARSE_MAX_FILES 10.0

struct kl_cr_finding {
  char *rule, *path, *fp, *message;
  long line;
  int judged; /* index into the ledger, or -1 */
};

struct kl_cr_row {
  char *rule, *path, *fp, *verdict, *reason;
  long line;
  int matched;
};

struct kl_cr_file {
  char *path;
  double bytes, error_bytes, error_nodes, seconds;
};

static struct kl_cr_finding *finds;
static size_t nfinds, cap_finds;
static struct kl_cr_row *rows;
static size_t nrows, cap_rows;
static struct kl_cr_file *files;
static size_t nfiles, cap_files;
static const char *rules[KL_CR_MAX_RULES];
static size_t nrules;
static const char *entries[KL_CR_MAX_ENTRIES];
static size_t nentries;

static size_t kl_cr_intern(const char **set, size_t *n, size_t max, const char *s) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp(set[i], s)) return i;
  if (*n == max) {
    fprintf(stderr, "corpus-report: more than %zu rules or entries\n", max);
    exit(2);
  }
  set[*n] = s;
  return (*n)++;
}

/* The corpus entry of a path: its first component. */
static char *kl_cr_entry(const char *path) {
  const char *slash = strchr(path, '/');
  return kl_arena_xstrndup(path, slash ? (size_t)(slash - path) : strlen(path));
}

static void kl_cr_load_sarif(const char *path) {
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  if (!root) {
    fprintf(stderr, "corpus-report: %s: %s\n", path, je.text);
    exit(2);
  }
  size_t i, j;
  json_t *run, *r;
  json_array_foreach(json_object_get(root, "runs"), i, run) {
    json_array_foreach(json_object_get(run, "results"), j, r) {
      json_t *pl =
          json_object_get(json_array_get(json_object_get(r, "locations"), 0), "physicalLocation");
      const char *uri =
          json_string_value(json_object_get(json_object_get(pl, "artifactLocation"), "uri"));
      const char *rule = json_string_value(json_object_get(r, "ruleId"));
      const char *fp = json_string_value(
          json_object_get(json_object_get(r, "partialFingerprints"), "primaryLocationLineHash"));
      const char *msg = json_string_value(json_object_get(json_object_get(r, "message"), "text"));
      if (!uri || !rule || !fp) continue;
      KL_XVEC_PUSH(finds, nfinds, cap_finds);
      nfinds++;
      struct kl_cr_finding *f = &finds[nfinds - 1];
      f->rule = kl_arena_xstrdup(rule);
      f->path = kl_arena_xstrdup(uri);
      f->fp = kl_arena_xstrdup(fp);
      f->message = kl_arena_xstrdup(msg ? msg : "");
      for (char *c = f->message; *c; c++)
        if (*c == '\n' || *c == '\t') *c = ' ';
      f->line =
          (long)json_integer_value(json_object_get(json_object_get(pl, "region"), "startLine"));
      f->judged = -1;
      kl_cr_intern(rules, &nrules, KL_CR_MAX_RULES, f->rule);
      kl_cr_intern(entries, &nentries, KL_CR_MAX_ENTRIES, kl_cr_entry(f->path));
    }
  }
  json_decref(root);
}

/* Split a line at tabs into at most max fields; returns the count. */
static size_t kl_cr_split(char *line, char **field, size_t max) {
  size_t n = 0;
  line[strcspn(line, "\r\n")] = '\0';
  for (char *p = line; n < max;) {
    field[n++] = p;
    char *tab = strchr(p, '\t');
    if (!tab) break;
    *tab = '\0';
    p = tab + 1;
  }
  return n;
}

static FILE *kl_cr_open(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "corpus-report: cannot read %s\n", path);
    exit(2);
  }
  return f;
}

static void kl_cr_load_ledger(const char *path) {
  FILE *f = kl_cr_open(path);
  char line[4096];
  unsigned n = 0;
  while (fgets(line, sizeof line, f)) {
    n++;
    char *fl[6];
    if (line[0] == '#' || line[0] == '\n') continue;
    size_t k = kl_cr_split(line, fl, 6);
    if (n == 1 && !strcmp(fl[0], "rule")) continue; /* header */
    if (k != 6 || (strcmp(fl[4], "TP") && strcmp(fl[4], "DEF") && strcmp(fl[4], "FP"))) {
      fprintf(stderr,
              "corpus-report: %s:%u: want rule, path, line, fingerprint, TP|DEF|FP, "
              "reason\n",
              path, n);
      exit(2);
    }
    KL_XVEC_PUSH(rows, nrows, cap_rows);
    nrows++;
    struct kl_cr_row *r = &rows[nrows - 1];
    r->rule = kl_arena_xstrdup(fl[0]);
    r->path = kl_arena_xstrdup(fl[1]);
    r->line = strtol(fl[2], NULL, 10);
    r->fp = kl_arena_xstrdup(fl[3]);
    r->verdict = kl_arena_xstrdup(fl[4]);
    r->reason = kl_arena_xstrdup(fl[5]);
    r->matched = 0;
  }
  fclose(f);
}

static struct kl_cr_file *kl_cr_file(const char *path) {
  for (size_t i = 0; i < nfiles; i++)
    if (!strcmp(files[i].path, path)) return &files[i];
  KL_XVEC_PUSH(files, nfiles, cap_files);
  nfiles++;
  struct kl_cr_file *f = &files[nfiles - 1];
  memset(f, 0, sizeof *f);
  f->path = kl_arena_xstrdup(path);
  f->seconds = -1;
  return f;
}

/* parse-stats and the timing file name paths as `./entry/...` or `entry/...`. */
static const char *kl_cr_trim(const char *p) {
  return strncmp(p, "./", 2) ? p : p + 2;
}

static void kl_cr_load_parse(const char *path) {
  FILE *f = kl_cr_open(path);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    char *fl[4];
    if (kl_cr_split(line, fl, 4) != 4) continue;
    struct kl_cr_file *cf = kl_cr_file(kl_cr_trim(fl[0]));
    cf->bytes = strtod(fl[1], NULL);
    cf->error_bytes = strtod(fl[2], NULL);
    cf->error_nodes = strtod(fl[3], NULL);
  }
  fclose(f);
}

static void kl_cr_load_times(const char *path) {
  FILE *f = kl_cr_open(path);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    char *fl[2];
    if (kl_cr_split(line, fl, 2) == 2) kl_cr_file(kl_cr_trim(fl[0]))->seconds = strtod(fl[1], NULL);
  }
  fclose(f);
}

/* Whether two fingerprints hash the same line text (the part before the occurrence). */
static bool kl_cr_same_text(const char *a, const char *b) {
  size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
  return la == lb && !memcmp(a, b, la);
}

/* Tie ledger rows to today's findings by (rule, path, fingerprint). A row on the finding's own
 * line with the same line text is tied first, whatever its occurrence: when a fix removes an
 * earlier finding on an identical line, the ones after it renumber but are the same findings. */
static void kl_cr_match(void) {
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < nfinds; i++) {
      if (finds[i].judged >= 0) continue;
      for (size_t k = 0; k < nrows; k++) {
        if (rows[k].matched || strcmp(rows[k].rule, finds[i].rule) ||
            strcmp(rows[k].path, finds[i].path))
          continue;
        if (pass == 0 ? rows[k].line != finds[i].line || !kl_cr_same_text(rows[k].fp, finds[i].fp)
                      : strcmp(rows[k].fp, finds[i].fp) != 0)
          continue;
        rows[k].matched = 1;
        finds[i].judged = (int)k;
        break;
      }
    }
}

static int kl_cr_cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void kl_cr_findings_table(void) {
  qsort(rules, nrules, sizeof *rules, kl_cr_cmp_str);
  qsort(entries, nentries, sizeof *entries, kl_cr_cmp_str);
  printf("## Findings per rule and entry (%zu in all)\n\n%-20s", nfinds, "rule");
  for (size_t e = 0; e < nentries; e++) printf(" %13s", entries[e]);
  printf(" %7s\n", "total");
  for (size_t r = 0; r < nrules; r++) {
    printf("%-20s", rules[r]);
    size_t total = 0;
    for (size_t e = 0; e < nentries; e++) {
      size_t n = 0, len = strlen(entries[e]);
      for (size_t i = 0; i < nfinds; i++)
        if (!strcmp(finds[i].rule, rules[r]) && !strncmp(finds[i].path, entries[e], len) &&
            finds[i].path[len] == '/')
          n++;
      total += n;
      printf(" %13zu", n);
    }
    printf(" %7zu\n", total);
  }
  printf("\n");
}

/* Whether finding i is in entry e (its path's first component). */
static bool kl_cr_in_entry(size_t i, size_t e) {
  size_t len = strlen(entries[e]);
  return !strncmp(finds[i].path, entries[e], len) && finds[i].path[len] == '/';
}

/* Whether finding i repeats the line of an earlier finding of its rule. */
static bool kl_cr_repeat(size_t i) {
  for (size_t j = 0; j < i; j++)
    if (finds[j].line == finds[i].line && !strcmp(finds[j].rule, finds[i].rule) &&
        !strcmp(finds[j].path, finds[i].path))
      return true;
  return false;
}

/* Counts over the findings of rule r (NULL: every rule) in entry e (SIZE_MAX: every entry). */
struct kl_cr_tally {
  size_t found, tp, def, fp, unjudged, repeats;
};

static struct kl_cr_tally kl_cr_count(const char *rule, size_t e) {
  struct kl_cr_tally t = {0};
  for (size_t i = 0; i < nfinds; i++) {
    if ((rule && strcmp(finds[i].rule, rule)) || (e != SIZE_MAX && !kl_cr_in_entry(i, e)))
      continue;
    t.found++;
    t.repeats += kl_cr_repeat(i);
    if (finds[i].judged < 0) {
      t.unjudged++;
      continue;
    }
    const char *v = rows[finds[i].judged].verdict;
    t.tp += !strcmp(v, "TP"), t.def += !strcmp(v, "DEF"), t.fp += !strcmp(v, "FP");
  }
  return t;
}

static void kl_cr_tally_print(const char *name, struct kl_cr_tally t, size_t gone) {
  size_t judged = t.tp + t.def + t.fp;
  printf("%-21s %6zu %6zu %5zu %5zu %5zu", name, t.found, judged, t.tp, t.def, t.fp);
  if (judged)
    printf(" %9.0f%% %8.0f%%", 100.0 * (double)(t.tp + t.def) / (double)judged,
           100.0 * (double)t.tp / (double)judged);
  else
    printf(" %10s %9s", "-", "-");
  printf(" %8zu %7zu", t.unjudged, t.repeats);
  if (gone != SIZE_MAX) printf(" %7zu", gone);
  printf("\n");
}

static void kl_cr_precision_table(void) {
  printf("## Precision over judged findings, per rule (ledger: %zu rows)\n\n", nrows);
  printf("%-21s %6s %6s %5s %5s %5s %10s %9s %8s %7s %7s\n", "rule", "found", "judged", "TP",
         "DEF", "FP", "precision", "TP only", "unjudged", "repeats", "gone");
  for (size_t r = 0; r < nrules; r++) {
    size_t gone = 0;
    for (size_t k = 0; k < nrows; k++) gone += !rows[k].matched && !strcmp(rows[k].rule, rules[r]);
    kl_cr_tally_print(rules[r], kl_cr_count(rules[r], SIZE_MAX), gone);
  }
  kl_cr_tally_print("all rules", kl_cr_count(NULL, SIZE_MAX), SIZE_MAX);
  printf(
      "\nprecision = (TP + DEF) / judged; `TP only` = TP / judged; `repeats` = findings on a line\n"
      "their rule already reports; `gone` = ledger rows whose finding kernlint no longer\n"
      "reports (listed below).\n\n");
  printf("## Precision per entry\n\n");
  printf("%-21s %6s %6s %5s %5s %5s %10s %9s %8s %7s\n", "entry", "found", "judged", "TP", "DEF",
         "FP", "precision", "TP only", "unjudged", "repeats");
  for (size_t e = 0; e < nentries; e++)
    kl_cr_tally_print(entries[e], kl_cr_count(NULL, e), SIZE_MAX);
  /* Rule by entry, so that a change which helps one project and hurts another shows. */
  printf("\nper rule and entry: precision (judged findings), `-` none judged\n\n%-20s", "rule");
  for (size_t e = 0; e < nentries; e++) printf(" %13.13s", entries[e]);
  printf("\n");
  for (size_t r = 0; r < nrules; r++) {
    printf("%-20s", rules[r]);
    for (size_t e = 0; e < nentries; e++) {
      struct kl_cr_tally t = kl_cr_count(rules[r], e);
      size_t judged = t.tp + t.def + t.fp;
      char cell[32] = "-";
      if (judged)
        snprintf(cell, sizeof cell, "%.0f%% (%zu)", 100.0 * (double)(t.tp + t.def) / (double)judged,
                 judged);
      printf(" %13s", cell);
    }
    printf("\n");
  }
  printf("\n");
}

/* A judged row that names the finding it was folded into, "[merged into PATH:LINE] ...", is not
 * lost while that rule still reports PATH:LINE: one defect is one finding, with the rest as its
 * related locations. Returns whether row k is such a row, and its survivor is reported. */
static bool kl_cr_merged(size_t k) {
  const char *tag = "[merged into ";
  if (strncmp(rows[k].reason, tag, strlen(tag))) return false;
  const char *p = rows[k].reason + strlen(tag), *colon = strchr(p, ':'), *end = strchr(p, ']');
  if (!colon || !end || colon > end) return false;
  long line = strtol(colon + 1, NULL, 10);
  for (size_t i = 0; i < nfinds; i++)
    if (finds[i].line == line && !strcmp(finds[i].rule, rows[k].rule) &&
        strlen(finds[i].path) == (size_t)(colon - p) && !strncmp(finds[i].path, p, colon - p))
      return true;
  return false;
}

/* An unresolved-source row tagged "[read since] ...": kernlint reads that kernel's source now
 * (py-kernels tells how), so the note is gone because its cause is: an improvement. */
static bool kl_cr_read_since(size_t k) {
  return !strcmp(rows[k].rule, "unresolved-source") &&
         !strncmp(rows[k].reason, "[read since] ", 13);
}

/* Whether row k's reason starts with tag. */
static bool kl_cr_tagged(size_t k, const char *tag) {
  return !strncmp(rows[k].reason, tag, strlen(tag));
}

/* Why a judged row has no finding today: "merged", "absent", "read", "settled", "build", or its
 * verdict when none of those applies (a TP or DEF then is a lost detection). A row tagged
 * "[settled by the project's settings] " states a claim the project's own build or code answers
 * (an unguarded bfloat in a project that guards none), and "[needs a build file the corpus
 * lacks] " one that kernlint keeps on a full checkout, where it reads the build. */
static const char *kl_cr_why_gone(size_t k) {
  if (kl_cr_merged(k)) return "merged";
  if (access(rows[k].path, F_OK) != 0) return "absent";
  if (kl_cr_read_since(k)) return "read";
  if (kl_cr_tagged(k, "[settled by the project's settings] ")) return "settled";
  if (kl_cr_tagged(k, "[needs a build file the corpus lacks] ")) return "build";
  return rows[k].verdict;
}

static void kl_cr_gone(void) {
  size_t n = 0, lost = 0, merged = 0, absent = 0, read = 0, settled = 0, build = 0;
  for (size_t k = 0; k < nrows; k++) {
    if (rows[k].matched) continue;
    n++;
    const char *w = kl_cr_why_gone(k);
    merged += !strcmp(w, "merged"), absent += !strcmp(w, "absent"), read += !strcmp(w, "read");
    settled += !strcmp(w, "settled"), build += !strcmp(w, "build");
    lost += !strcmp(w, "TP") || !strcmp(w, "DEF");
  }
  if (!n) return;
  printf("## Judged findings no longer reported (%zu): %zu TP or DEF lost, %zu merged into a "
         "finding still reported, %zu unresolved-source notes whose source is read since, %zu "
         "settled by the project's settings, %zu that need a build file the corpus lacks, %zu "
         "in files this corpus build lacks\n\n",
         n, lost, merged, read, settled, build, absent);
  /* A Python entry's history is the newest commits that touch the kernel APIs, so a snapshot
   * taken later may lack a file that was judged: that is no lost detection. */
  for (size_t k = 0; k < nrows; k++)
    if (!rows[k].matched)
      printf("%-7s %s %s:%ld  %s\n", kl_cr_why_gone(k), rows[k].rule, rows[k].path, rows[k].line,
             rows[k].reason);
  printf("\n");
}

static int kl_cr_cmp_errors(const void *a, const void *b) {
  const struct kl_cr_file *x = a, *y = b;
  double fx = x->bytes > 0 ? x->error_bytes / x->bytes : 0;
  double fy = y->bytes > 0 ? y->error_bytes / y->bytes : 0;
  if (fx != fy) return fx < fy ? 1 : -1;
  return strcmp(x->path, y->path);
}

static int kl_cr_cmp_seconds(const void *a, const void *b) {
  const struct kl_cr_file *x = a, *y = b;
  if (x->seconds != y->seconds) return x->seconds < y->seconds ? 1 : -1;
  return strcmp(x->path, y->path);
}

static void kl_cr_parse_table(void) {
  double bytes = 0, err = 0;
  size_t parsed = 0, with = 0;
  for (size_t i = 0; i < nfiles; i++) {
    if (files[i].bytes <= 0) continue;
    parsed++;
    bytes += files[i].bytes, err += files[i].error_bytes;
    with += files[i].error_nodes > 0;
  }
  double file_share = parsed ? 100.0 * (double)with / (double)parsed : 0.0;
  double byte_share = bytes > 0 ? 100.0 * err / bytes : 0.0;
  printf("## Parse quality after the dialect layer\n\n");
  printf("bytes inside ERROR nodes: %.0f of %.0f (%.2f%%); target below %.0f%%: %s\n", err, bytes,
         byte_share, KL_CR_PARSE_MAX_BYTES, byte_share < KL_CR_PARSE_MAX_BYTES ? "met" : "NOT met");
  printf("files with an ERROR node: %zu of %zu parsed (%.1f%%); target at most %.0f%%: %s\n\n",
         with, parsed, file_share, KL_CR_PARSE_MAX_FILES,
         file_share <= KL_CR_PARSE_MAX_FILES ? "met" : "NOT met");
  qsort(files, nfiles, sizeof *files, kl_cr_cmp_errors);
  printf("worst files (share of bytes in ERROR nodes; bytes in ERROR of parsed; ERROR nodes):\n");
  for (size_t i = 0; i < nfiles && i < KL_CR_WORST_PARSE && files[i].error_bytes > 0; i++)
    printf("  %6.1f%%  %7.0f of %8.0f  %5.0f nodes  %s\n",
           100.0 * files[i].error_bytes / files[i].bytes, files[i].error_bytes, files[i].bytes,
           files[i].error_nodes, files[i].path);
  if (!with) printf("  (none)\n");
  printf("\n");
}

static void kl_cr_time_table(double total) {
  double sum = 0;
  size_t timed = 0;
  for (size_t i = 0; i < nfiles; i++)
    if (files[i].seconds >= 0) sum += files[i].seconds, timed++;
  printf("## Time\n\nwhole corpus, one run per entry: %.2f s; one run per file: %.2f s over %zu "
         "files\n\nslowest files (one run each):\n",
         total, sum, timed);
  qsort(files, nfiles, sizeof *files, kl_cr_cmp_seconds);
  for (size_t i = 0; i < nfiles && i < KL_CR_SLOWEST && files[i].seconds >= 0; i++)
    printf("  %6.3f s  %s\n", files[i].seconds, files[i].path);
  printf("\n");
}

static int kl_cr_cmp_finding(const void *a, const void *b) {
  const struct kl_cr_finding *x = *(const struct kl_cr_finding *const *)a;
  const struct kl_cr_finding *y = *(const struct kl_cr_finding *const *)b;
  int c = strcmp(x->rule, y->rule);
  if (!c) c = strcmp(x->path, y->path);
  if (!c) c = x->line < y->line ? -1 : x->line > y->line;
  return c;
}

/* One defect is one finding: a line that one rule reports twice in a run is a repeat (an
 * instantiation, a use of an alias, a second barrier after the same return) that should have
 * been folded into the first. The count heads the section so a regression shows at a glance. */
static void kl_cr_repeats(void) {
  struct kl_cr_finding **v = malloc((nfinds + 1) * sizeof *v);
  if (!v) abort();
  for (size_t i = 0; i < nfinds; i++) v[i] = &finds[i];
  qsort(v, nfinds, sizeof *v, kl_cr_cmp_finding);
  size_t n = 0;
  for (size_t i = 1; i < nfinds; i++) n += !kl_cr_cmp_finding(&v[i - 1], &v[i]);
  printf("## Lines one rule reports more than once: %zu\n\n", n);
  for (size_t i = 1; i < nfinds; i++)
    if (!kl_cr_cmp_finding(&v[i - 1], &v[i]) &&
        (i < 2 || kl_cr_cmp_finding(&v[i - 2], &v[i - 1])))
      printf("%s %s:%ld\n", v[i]->rule, v[i]->path, v[i]->line);
  if (n) printf("\n");
  free(v);
}

static void kl_cr_unjudged(void) {
  size_t n = 0;
  for (size_t i = 0; i < nfinds; i++) n += finds[i].judged < 0;
  printf("## Findings not judged yet (%zu)\n\n", n);
  for (size_t r = 0; r < nrules; r++)
    for (size_t i = 0; i < nfinds; i++)
      if (finds[i].judged < 0 && !strcmp(finds[i].rule, rules[r]))
        printf("%s\t%s\t%ld\t%s\t%s\n", finds[i].rule, finds[i].path, finds[i].line, finds[i].fp,
               finds[i].message);
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: corpus-report LEDGER PARSE_TSV TIMES_TSV TOTAL_SECONDS SARIF...\n");
    return 2;
  }
  kl_cr_load_ledger(argv[1]);
  kl_cr_load_parse(argv[2]);
  kl_cr_load_times(argv[3]);
  for (int i = 5; i < argc; i++) kl_cr_load_sarif(argv[i]);
  kl_cr_match();
  kl_cr_findings_table();
  kl_cr_precision_table();
  kl_cr_repeats();
  kl_cr_parse_table();
  kl_cr_time_table(strtod(argv[4], NULL));
  kl_cr_gone();
  kl_cr_unjudged();
  return 0;
}
