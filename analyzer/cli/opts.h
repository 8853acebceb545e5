/* The command line's options: what kernlint was asked to do (struct kl_opts), read from argv
 * GNU-style, and the options that only print (--help, --list-rules, --explain). */
#ifndef KL_OPTS_H
#define KL_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "analyzer/core/config.h"
#include "analyzer/report/emit.h"
#include "grammar/msl.h"

enum kl_color { KL_COLOR_AUTO, KL_COLOR_ALWAYS, KL_COLOR_NEVER };

struct kl_opts {
  enum kl_format fmt;
  enum kl_severity fail_on;
  enum kl_color color;
  const struct kl_msl_family *target;
  unsigned metal_version; /* --metal-version, 0 when not given */
  unsigned jobs;          /* -j: files linted at once */
  const char *output, *config, *stdin_name, *explain;
  const char *show_settings; /* --show-settings FILE */
  const char *baseline, *write_baseline; /* --baseline, --write-baseline: files */
  bool baseline_unused, baseline_strict;
  bool exit_zero, rounded, quiet, stats, list_rules, help, version;
  bool lsp;               /* --lsp: serve the language server on stdio */
  const char *report_opt; /* the first option that shapes a report, which --lsp has none of */
  bool fix, diff; /* --fix writes the fixes, --diff shows them */
  bool show_unresolved; /* text: print each unresolved-source note, not one line for them all */
  const char **paths;
  size_t npaths;
};

/* Print "kernlint: " and the formatted message on stderr, as a usage error. */
void kl_opts_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* GNU-style parsing: --flag, --flag=value, --flag value, -h/-q/-V/-o/-j (also -j2, -oFILE), and
 * -- to end options.
 * A lone "-" is a path (stdin). Returns -1 after printing one line for a usage error. */
int kl_opts_parse(struct kl_opts *o, int argc, char **argv);
/* Print --help on stdout. */
void kl_opts_help(void);
/* Print --list-rules on stdout: every rule, its default level and summary. */
void kl_opts_list_rules(void);
/* Print --explain RULE on stdout; 2 (after a message) for an unknown rule, else 0. */
int kl_opts_explain(const char *id);

#endif
