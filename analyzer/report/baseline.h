/* Baselines: a finding's content key (shared with SARIF's fingerprint), and the baseline file
 * that records today's findings so that later runs report only new ones. The filtering is a step
 * of its own between the engine's diagnostics and the emitters. */
#ifndef KL_BASELINE_H
#define KL_BASELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/report/diag.h"
#include "analyzer/input/source.h"

/* What identifies a finding across edits elsewhere in its file: its rule, the text of its line
 * with surrounding whitespace trimmed, and which of the file's findings with that pair it is. */
struct kl_finding_key {
  const char *text;  /* the trimmed line, inside the source's text (not NUL-terminated) */
  uint32_t len;      /* its length in bytes */
  uint64_t hash;     /* 64-bit FNV-1a of the rule id, a NUL, then the text */
  size_t occurrence; /* 1 + the earlier findings of the file with the same rule and text */
};

/* One recorded finding. */
struct kl_baseline_entry {
  char *path;    /* relative to the baseline file's folder, '/'-separated */
  char *rule;    /* rule id */
  char *text;    /* the trimmed line */
  char *message; /* for review only: not part of the key */
  size_t occurrence;
  bool used;   /* matched a finding of this run */
  bool judged; /* its file was linted this run, or no longer exists */
};

struct kl_baseline;

/* Keys of a file's findings (sorted as kl_diag_sort leaves them) into out[0 .. diags->n). */
void kl_baseline_keys(const struct kl_source *src, const struct kl_diag_list *diags,
                      struct kl_finding_key *out);
/* An empty baseline to record into and write to file; NULL with a one-line err naming it. */
struct kl_baseline *kl_baseline_new(const char *file, char *err, size_t errlen);
/* Read a baseline file; NULL with a one-line err naming it when it is missing or malformed. */
struct kl_baseline *kl_baseline_load(const char *file, char *err, size_t errlen);
/* How a linted path is stored (malloc'd): a file's relative to the baseline's folder, with '/'
 * separators; a name that is no file (is_file false: "<stdin>") as it is. */
char *kl_baseline_path(const struct kl_baseline *b, const char *path, bool is_file);
/* Record a file's findings, under its stored path rel. */
void kl_baseline_record(struct kl_baseline *b, const char *rel, const struct kl_source *src,
                        const struct kl_diag_list *diags);
/* Remove from diags the findings the baseline holds (each entry matches once); returns how many. */
size_t kl_baseline_filter(struct kl_baseline *b, const char *rel, const struct kl_source *src,
                          struct kl_diag_list *diags);
/* Write the entries, sorted, as the documented JSON (ending in a newline); -1 on a write error. */
int kl_baseline_write(struct kl_baseline *b, FILE *f);
/* Number of entries. */
size_t kl_baseline_count(const struct kl_baseline *b);
/* Entries that matched no finding although their file was linted (or is gone), in file order:
 * *pos starts at 0; returns NULL after the last. */
const struct kl_baseline_entry *kl_baseline_next_unused(struct kl_baseline *b, size_t *pos);
/* Free the baseline; NULL is allowed. */
void kl_baseline_delete(struct kl_baseline *b);

#endif
