/* .lintrc configuration: INI read with libinih, found from each file's folder upward. */
#ifndef KL_CONFIG_H
#define KL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "analyzer/report/diag.h"

/* Rules are addressed by their index in the registry (kl_rules_all); this bounds the table. */
#define KL_CONFIG_MAX_RULES 32

/* Settings that apply to one file after every layer (defaults, .lintrc, [path], CLI) is merged. */
struct kl_settings {
  const char *target;    /* "m1".."m4", "apple7".."apple10" */
  unsigned apple_family; /* 7..10, from target */
  bool assume_rounded_grid;
  unsigned metal_version; /* the lowest MSL version the build compiles with, as __METAL_VERSION__
                             spells it (310 for 3.1); 0 when not stated */
  int level[KL_CONFIG_MAX_RULES]; /* -1: rule default; else an enum kl_severity (OFF disables) */
  const char **bfloat_guards;     /* extra macro names that guard bfloat code */
  size_t nbfloat_guards;
  const char **unit_strides; /* names that hold one element's size in bytes (ggml's nb0) */
  size_t nunit_strides;
};

/* A `[path "glob"]` section: overrides for matching files. */
struct kl_config_section {
  char *glob;
  int level[KL_CONFIG_MAX_RULES];
  char *target;            /* NULL: not set here */
  int assume_rounded_grid; /* -1: not set here */
  int line_target, line_rounded, line_level[KL_CONFIG_MAX_RULES]; /* where each was set */
};

/* One loaded .lintrc. */
struct kl_config {
  char *path;              /* the file it came from */
  char *dir;               /* its folder: globs match paths relative to it */
  char *target;            /* NULL when not set */
  int assume_rounded_grid; /* -1 when not set */
  unsigned metal_version;  /* 0 when not set */
  int level[KL_CONFIG_MAX_RULES];
  char **include, **exclude;
  size_t ninclude, nexclude, cap_include, cap_exclude;
  char **bfloat_guards;
  size_t nbfloat_guards, cap_bfloat_guards;
  char **unit_strides;
  size_t nunit_strides, cap_unit_strides;
  struct kl_config_section *sections;
  size_t nsections, cap_sections;
  /* The line each key was (last) set on, for --show-settings; 0 when not set. */
  int line_target, line_rounded, line_metal_version, line_bfloat_guards, line_unit_strides;
  int line_level[KL_CONFIG_MAX_RULES];
};

/* Load and validate a .lintrc; on error returns NULL with "file:line: problem" in err. */
struct kl_config *kl_config_load(const char *path, char *err, size_t errlen);
/* kl_config_load for .lintrc text already in memory, as if read from path (fuzzing, tests). */
struct kl_config *kl_config_from_memory(const char *path, const char *bytes, size_t len,
                                        char *err, size_t errlen);
/* Free a config from kl_config_load; NULL is allowed. */
void kl_config_delete(struct kl_config *c);
/* Path of the closest .lintrc at or above the folder of file_path, malloc'd; NULL if none. */
char *kl_config_find(const char *file_path);
/* Defaults: target m1, no rounded grid, every rule at its default level. */
void kl_config_defaults(struct kl_settings *s);
/* Apply a config (may be NULL) to s for file_path: top-level keys, then matching [path] sections.
 */
void kl_config_apply(const struct kl_config *c, const char *file_path, struct kl_settings *s);
/* Whether section k of c applies to the file at rel (a kl_config_relpath). */
bool kl_config_section_applies(const struct kl_config *c, size_t k, const char *rel);
/* Whether file_path passes the config's include/exclude globs (true when c is NULL). */
bool kl_config_selects(const struct kl_config *c, const char *file_path);
/* The path its globs match file_path by (malloc'd); NULL when c is NULL or has no globs. */
char *kl_config_relpath(const struct kl_config *c, const char *file_path);
/* kl_config_apply given the file's kl_config_relpath, so one lookup serves apply and selects. */
void kl_config_apply_rel(const struct kl_config *c, const char *rel, struct kl_settings *s);
/* kl_config_selects given the file's kl_config_relpath. */
bool kl_config_selects_rel(const struct kl_config *c, const char *rel);
/* A Metal language version ("3.1") as __METAL_VERSION__ spells it (310); 0 when it is none. */
unsigned kl_config_metal_version(const char *v);
/* The known targets as "m1, m2, ..." for help and error messages (a static buffer). */
const char *kl_config_targets(void);
/* Glob match with `*` (not across /), `**` (across /) and `?`. */
bool kl_config_glob(const char *glob, const char *path);

#endif
