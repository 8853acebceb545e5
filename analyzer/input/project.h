/* The project a linted file belongs to, and what the project itself says about the settings
 * (as ruff reads requires-python): the lowest Metal language version its build states, the bfloat
 * guard macros its code makes, and, where the build states no version, the version its code
 * evidently requires. Settings are layered defaults < project < .lintrc < command line. */
#ifndef KL_PROJECT_H
#define KL_PROJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analyzer/core/config.h"

/* Where one fact about the project was read. */
struct kl_fact {
  const char *file; /* absolute path; NULL for a fact inferred from the whole project */
  unsigned line;
  const char *text; /* what it says there ("-std=metal3.0", "#undef GGML_HAS_BF16 ...") */
};

struct kl_project {
  const char *root;   /* the project's folder, absolute */
  const char *marker; /* the marker that made it a project; NULL when it is the default folder */
  unsigned metal_version; /* the lowest version stated (or inferred); 0 when neither */
  struct kl_fact metal_fact;
  bool metal_inferred; /* from the code's bfloat census, not from a statement */
  const char **guards; /* bfloat guard macros: the config's, then the inferred ones */
  size_t nguards, nconfig_guards;
  struct kl_fact *guard_facts;        /* per inferred guard (index - nconfig_guards) */
  size_t nbf, nbf_guarded, nbf_files; /* native bfloat uses, guarded ones, files with any */
  struct kl_fact *errors;             /* files that #error below MSL 3.1 */
  size_t nerrors;
  const char **unit_stride; /* a glob of names the project's code treats as one element's size
                               in bytes (`nb*0`), in a list of one; NULL when it shows none */
  struct kl_fact unit_fact;
  const char *key; /* the config's guards the census used, joined (the cache's key) */
  bool shallow;    /* only the root's own files were read (a named file's unmarked folder) */
};

struct kl_projects;

/* An empty cache of projects (one walk and census per project and set of configured guards). */
struct kl_projects *kl_projects_new(void);
/* Free a cache and every project in it; NULL is allowed. */
void kl_projects_delete(struct kl_projects *ps);

/* The project of file, linted through the command-line argument arg (a folder, or the file
 * itself), its census made with cfg's bfloat guards (cfg may be NULL). Not thread-safe. */
const struct kl_project *kl_project_for(struct kl_projects *ps, const char *file, const char *arg,
                                        const struct kl_config *cfg);

/* Apply what the project says to s, after cfg (the file's .lintrc, which wins) was applied. */
void kl_project_apply(const struct kl_project *p, const struct kl_config *cfg,
                      struct kl_settings *s);

/* Settings given on the command line, for kl_project_show. */
struct kl_cli_settings {
  const char *target; /* NULL when not given */
  bool rounded;
  unsigned metal_version;
  const char *config; /* --config FILE */
};

/* Print every setting that applies to file and where it came from, one per line. */
void kl_project_show(FILE *out, const char *file, const struct kl_project *p,
                     const struct kl_config *cfg, const struct kl_cli_settings *cli);

/* --show-settings: kl_project_show for file, linted through arg (NULL: the file itself), with
 * its closest .lintrc or cli->config, on standard output. Returns the exit status: 0, or 2 after
 * one line on standard error for a missing file, a bad .lintrc or a failed write. */
int kl_project_show_file(const char *file, const char *arg, const struct kl_cli_settings *cli);

#endif
