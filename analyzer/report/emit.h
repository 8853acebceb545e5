/* Output: gcc-style text, JSON, SARIF 2.1.0 and GitHub workflow commands. Emitters only format;
 * they never analyse. */
#ifndef KL_EMIT_H
#define KL_EMIT_H

#include <stdbool.h>
#include <stdio.h>

#include "analyzer/report/diag.h"
#include "analyzer/input/source.h"

enum kl_format { KL_FORMAT_TEXT, KL_FORMAT_JSON, KL_FORMAT_SARIF, KL_FORMAT_GITHUB };

struct kl_emitter;

/* What an emitter has been given: the run's counts, kept in one place for every report. */
struct kl_emit_counts {
  size_t files;   /* files emitted (linted) */
  size_t failed;  /* inputs and configs recorded as failures */
  size_t nsev[4]; /* findings, indexed by enum kl_severity */
};

/* Parse a --format value; -1 when unknown. */
int kl_emit_format_parse(const char *name, enum kl_format *out);
/* Start output in a format to out; color applies to text only. */
struct kl_emitter *kl_emit_new(enum kl_format fmt, FILE *out, bool color);
/* Emit one file's diagnostics (already sorted); the emitter copies what it keeps. */
void kl_emit_file(struct kl_emitter *e, const struct kl_source *src,
                  const struct kl_diag_list *diags);
/* Text only: print no finding of rule rule_id (a literal, kept) but one closing line that counts
 * them and names the flag that lists them (the unresolved-source notes). */
void kl_emit_fold(struct kl_emitter *e, const char *rule_id);
/* Record a file that could not be linted (one-line reason): a JSON error, a SARIF notification
 * or a GitHub error annotation. */
void kl_emit_failure(struct kl_emitter *e, const char *path, const char *reason);
/* Counts of everything given to the emitter so far; valid until kl_emit_delete. */
const struct kl_emit_counts *kl_emit_get_counts(const struct kl_emitter *e);
/* Findings that count as problems: errors, warnings and notes. */
size_t kl_emit_total(const struct kl_emit_counts *c);
/* s escaped for a GitHub workflow command (malloc'd): '%', CR and LF always, and ':' and ','
 * too for a property value (property true) rather than the message. */
char *kl_emit_github_escape(const char *s, bool property);
/* Finish the document (JSON and SARIF are written here) and free the emitter. */
int kl_emit_delete(struct kl_emitter *e);

#endif
