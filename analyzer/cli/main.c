/* The command line: options, input discovery, per-file configuration, the lint loop, output
 * files, the summary and the exit status. Findings go to stdout (or --output), everything
 * about the run itself to stderr, so `kernlint ... > report` captures only the report. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/report/baseline.h"
#include "analyzer/core/config.h"
#include "analyzer/report/emit.h"
#include "analyzer/engine.h"
#include "analyzer/lsp/lsp.h"
#include "analyzer/report/fix.h"
#include "analyzer/input/project.h"
#include "analyzer/core/version.h"
#include "grammar/msl.h"
#include "grammar/preproc.h"
#include "rules/rules.h"

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

/* ---- options ---- */

/* The default -j: one worker per online core, up to this many (each lints one file at a time,
 * with that file's memory). */
#define KL_JOBS_DEFAULT_MAX 8
#define KL_JOBS_MAX 256

enum kl_opt_id {
  KL_OPT_LIST_RULES,
  KL_OPT_EXPLAIN,
  KL_OPT_TARGET,
  KL_OPT_METAL_VERSION,
  KL_OPT_FORMAT,
  KL_OPT_OUTPUT,
  KL_OPT_CONFIG,
  KL_OPT_FAIL_ON,
  KL_OPT_EXIT_ZERO,
  KL_OPT_ROUNDED,
  KL_OPT_QUIET,
  KL_OPT_STATS,
  KL_OPT_NO_COLOR,
  KL_OPT_COLOR,
  KL_OPT_VERSION,
  KL_OPT_HELP,
  KL_OPT_STDIN_NAME,
  KL_OPT_JOBS,
  KL_OPT_BASELINE,
  KL_OPT_WRITE_BASELINE,
  KL_OPT_BASELINE_UNUSED,
  KL_OPT_BASELINE_STRICT,
  KL_OPT_LSP,
  KL_OPT_FIX,
  KL_OPT_DIFF,
  KL_OPT_SHOW_UNRESOLVED,
  KL_OPT_SHOW_SETTINGS
};

static const struct kl_opt {
  const char *name;
  char short_name;
  bool takes_value;
  enum kl_opt_id id;
} kl_opts_table[] = {
    {"list-rules", 0, false, KL_OPT_LIST_RULES},
    {"explain", 0, true, KL_OPT_EXPLAIN},
    {"target", 0, true, KL_OPT_TARGET},
    {"metal-version", 0, true, KL_OPT_METAL_VERSION},
    {"format", 0, true, KL_OPT_FORMAT},
    {"output", 'o', true, KL_OPT_OUTPUT},
    {"config", 0, true, KL_OPT_CONFIG},
    {"fail-on", 0, true, KL_OPT_FAIL_ON},
    {"exit-zero", 0, false, KL_OPT_EXIT_ZERO},
    {"assume-rounded-grid", 0, false, KL_OPT_ROUNDED},
    {"quiet", 'q', false, KL_OPT_QUIET},
    {"stats", 0, false, KL_OPT_STATS},
    {"no-color", 0, false, KL_OPT_NO_COLOR},
    {"color", 0, true, KL_OPT_COLOR},
    {"version", 'V', false, KL_OPT_VERSION},
    {"help", 'h', false, KL_OPT_HELP},
    {"stdin-filename", 0, true, KL_OPT_STDIN_NAME},
    {"jobs", 'j', true, KL_OPT_JOBS},
    {"baseline", 0, true, KL_OPT_BASELINE},
    {"write-baseline", 0, true, KL_OPT_WRITE_BASELINE},
    {"baseline-unused", 0, false, KL_OPT_BASELINE_UNUSED},
    {"baseline-strict", 0, false, KL_OPT_BASELINE_STRICT},
    {"lsp", 0, false, KL_OPT_LSP},
    {"fix", 0, false, KL_OPT_FIX},
    {"diff", 0, false, KL_OPT_DIFF},
    {"show-unresolved", 0, false, KL_OPT_SHOW_UNRESOLVED},
    {"show-settings", 0, true, KL_OPT_SHOW_SETTINGS},
};
enum { KL_NOPTS = sizeof kl_opts_table / sizeof kl_opts_table[0] };

static void kl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kl_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kernlint: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int kl_opt_apply(struct kl_opts *o, const struct kl_opt *opt, const char *v) {
  switch (opt->id) {
  case KL_OPT_FORMAT:
  case KL_OPT_OUTPUT:
  case KL_OPT_FAIL_ON:
  case KL_OPT_EXIT_ZERO:
  case KL_OPT_QUIET:
  case KL_OPT_STATS:
  case KL_OPT_NO_COLOR:
  case KL_OPT_COLOR:
  case KL_OPT_STDIN_NAME:
  case KL_OPT_BASELINE:
  case KL_OPT_WRITE_BASELINE:
  case KL_OPT_BASELINE_UNUSED:
  case KL_OPT_BASELINE_STRICT:
  case KL_OPT_FIX:
  case KL_OPT_DIFF:
  case KL_OPT_SHOW_UNRESOLVED:
    if (!o->report_opt) o->report_opt = opt->name;
    break;
  default:
    break;
  }
  switch (opt->id) {
  case KL_OPT_LSP:
    o->lsp = true;
    break;
  case KL_OPT_LIST_RULES:
    o->list_rules = true;
    break;
  case KL_OPT_EXPLAIN:
    o->explain = v;
    break;
  case KL_OPT_TARGET:
    o->target = kl_msl_family(v);
    if (!o->target) {
      kl_usage_error("--target: unknown target '%s' (expected one of: %s)", v, kl_config_targets());
      return -1;
    }
    break;
  case KL_OPT_METAL_VERSION:
    o->metal_version = kl_config_metal_version(v);
    if (!o->metal_version) {
      kl_usage_error("--metal-version: invalid version '%s' (expected one such as 3.1)", v);
      return -1;
    }
    break;
  case KL_OPT_FORMAT:
    if (kl_emit_format_parse(v, &o->fmt) != 0) {
      kl_usage_error("--format: unknown format '%s' (expected text, json, sarif or github)", v);
      return -1;
    }
    break;
  case KL_OPT_OUTPUT:
    o->output = v;
    break;
  case KL_OPT_CONFIG:
    o->config = v;
    break;
  case KL_OPT_FAIL_ON:
    if (kl_diag_severity_parse(v, &o->fail_on) != 0 || o->fail_on == KL_SEV_OFF) {
      kl_usage_error("--fail-on: unknown level '%s' (expected note, warning or error)", v);
      return -1;
    }
    break;
  case KL_OPT_EXIT_ZERO:
    o->exit_zero = true;
    break;
  case KL_OPT_ROUNDED:
    o->rounded = true;
    break;
  case KL_OPT_QUIET:
    o->quiet = true;
    break;
  case KL_OPT_STATS:
    o->stats = true;
    break;
  case KL_OPT_NO_COLOR:
    o->color = KL_COLOR_NEVER;
    break;
  case KL_OPT_COLOR:
    if (!strcmp(v, "auto")) {
      o->color = KL_COLOR_AUTO;
    } else if (!strcmp(v, "always")) {
      o->color = KL_COLOR_ALWAYS;
    } else if (!strcmp(v, "never")) {
      o->color = KL_COLOR_NEVER;
    } else {
      kl_usage_error("--color: unknown value '%s' (expected auto, always or never)", v);
      return -1;
    }
    break;
  case KL_OPT_VERSION:
    o->version = true;
    break;
  case KL_OPT_HELP:
    o->help = true;
    break;
  case KL_OPT_STDIN_NAME:
    o->stdin_name = v;
    break;
  case KL_OPT_FIX:
    o->fix = true;
    break;
  case KL_OPT_DIFF:
    o->diff = true;
    break;
  case KL_OPT_SHOW_UNRESOLVED:
    o->show_unresolved = true;
    break;
  case KL_OPT_SHOW_SETTINGS:
    o->show_settings = v;
    break;
  case KL_OPT_JOBS: {
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || errno || n < 1 || n > KL_JOBS_MAX) {
      kl_usage_error("--jobs: invalid number '%s' (expected 1 to %d)", v, KL_JOBS_MAX);
      return -1;
    }
    o->jobs = (unsigned)n;
    break;
  }
  case KL_OPT_BASELINE:
    o->baseline = v;
    break;
  case KL_OPT_WRITE_BASELINE:
    o->write_baseline = v;
    break;
  case KL_OPT_BASELINE_UNUSED:
    o->baseline_unused = true;
    break;
  case KL_OPT_BASELINE_STRICT:
    o->baseline_unused = o->baseline_strict = true;
    break;
  }
  return 0;
}

static unsigned kl_default_jobs(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  return n > KL_JOBS_DEFAULT_MAX ? KL_JOBS_DEFAULT_MAX : (unsigned)n;
}

/* GNU-style parsing: --flag, --flag=value, --flag value, -h/-q/-V/-o/-j (also -j2, -oFILE), and
 * -- to end options.
 * A lone "-" is a path (stdin). Returns -1 after printing one line for a usage error. */
static int kl_opts_parse(struct kl_opts *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->fmt = KL_FORMAT_TEXT;
  o->fail_on = KL_SEV_WARNING;
  o->color = KL_COLOR_AUTO;
  o->paths = kl_arena_xmalloc(sizeof *o->paths * (size_t)(argc > 0 ? argc : 1));
  bool options_done = false;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (options_done || arg[0] != '-' || !strcmp(arg, "-")) {
      o->paths[o->npaths++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      options_done = true;
      continue;
    }
    const struct kl_opt *opt = NULL;
    const char *value = NULL;
    size_t namelen;
    if (arg[1] == '-') {
      const char *name = arg + 2, *eq = strchr(name, '=');
      namelen = eq ? (size_t)(eq - name) : strlen(name);
      for (size_t k = 0; k < KL_NOPTS; k++)
        if (strlen(kl_opts_table[k].name) == namelen &&
            !strncmp(kl_opts_table[k].name, name, namelen))
          opt = &kl_opts_table[k];
      if (opt && eq && !opt->takes_value) {
        kl_usage_error("option '--%s' takes no value", opt->name);
        return -1;
      }
      if (eq) value = eq + 1;
    } else {
      for (size_t k = 0; k < KL_NOPTS; k++)
        if (kl_opts_table[k].short_name == arg[1]) opt = &kl_opts_table[k];
      /* A short option's value may be attached (-j2); a switch is one letter alone. */
      if (opt && arg[2] != '\0') {
        if (opt->takes_value)
          value = arg + 2;
        else
          opt = NULL;
      }
    }
    if (!opt) {
      kl_usage_error("unknown option '%s' (see kernlint --help)", arg);
      return -1;
    }
    if (opt->takes_value && !value) {
      if (i + 1 >= argc) {
        kl_usage_error("option '--%s' needs a value", opt->name);
        return -1;
      }
      value = argv[++i];
    }
    if (opt->takes_value && value[0] == '\0') {
      kl_usage_error("option '--%s' needs a non-empty value", opt->name);
      return -1;
    }
    if (kl_opt_apply(o, opt, value) != 0) return -1;
  }
  if (!o->jobs) o->jobs = kl_default_jobs();
  if (o->baseline && o->write_baseline) {
    kl_usage_error("--baseline and --write-baseline cannot be combined (rewrite it on its own)");
    return -1;
  }
  if (o->baseline_unused && !o->baseline) {
    kl_usage_error("--baseline-%s needs --baseline FILE", o->baseline_strict ? "strict" : "unused");
    return -1;
  }
  if (o->write_baseline && o->output) {
    kl_usage_error("--write-baseline writes no report: drop --output");
    return -1;
  }
  if (o->fix && o->diff) {
    kl_usage_error("--fix and --diff cannot be combined (--diff shows what --fix would write)");
    return -1;
  }
  if (o->diff && o->fmt != KL_FORMAT_TEXT) {
    kl_usage_error("--diff prints a unified diff; it cannot be combined with --format");
    return -1;
  }
  if (o->diff && (o->output || o->baseline || o->write_baseline)) {
    kl_usage_error("--diff prints the fixes on standard output and reports nothing: drop --%s",
                   o->output ? "output" : o->baseline ? "baseline" : "write-baseline");
    return -1;
  }
  return 0;
}

static void kl_print_help(void) {
  printf("kernlint %s: a static analyzer for Metal Shading Language compute kernels\n\n",
         KL_VERSION);
  printf(
      "Usage: kernlint [options] PATH...\n"
      "\n"
      "Lints the named files (whatever their extension) and every .metal, .h, .hpp, .py,\n"
      ".mm, .m, .cpp and .cc file under the named folders: MSL, kernels embedded in Python\n"
      "(MLX, PyTorch) and the host code that dispatches kernels (metal-cpp, Objective-C).\n"
      "PATH '-' reads standard input.\n"
      "\n"
      "Options:\n"
      "  --target T              GPU target (%s); default m1\n"
      "  --metal-version V       the lowest Metal language version the build uses (3.1)\n"
      "  --format F              output format: text (default), json, sarif or github\n"
      "  -o, --output FILE       write the report to FILE (replaced atomically)\n"
      "  --config FILE           use this .lintrc instead of the closest one to each file\n"
      "  --fail-on LEVEL         exit 1 on findings at or above note, warning (default) or error\n"
      "  --exit-zero             exit 0 even when there are findings (errors still exit 2)\n"
      "  --assume-rounded-grid   assume every dispatch may round the grid up past the data\n"
      "  --stdin-filename NAME   name to report for '-' (and to find its .lintrc from)\n"
      "  -j, --jobs N            lint N files at once (default: the number of cores, up to %d)\n"
      "  --write-baseline FILE   record every finding in FILE instead of reporting them\n"
      "  --baseline FILE         report only findings not recorded in FILE\n"
      "  --baseline-unused       with --baseline, list its entries that match no finding\n"
      "  --baseline-strict       --baseline-unused, and exit 1 when there are such entries\n"
      "  --lsp                   run as a language server (LSP on stdin/stdout); no PATH\n"
      "  --fix                   apply the safe fixes in place (findings marked [*]); with '-',\n"
      "                          print the fixed text on stdout and the report on stderr\n"
      "  --diff                  print the fixes as a unified diff, write nothing; exit 1 if any\n"
      "  --show-unresolved       text: list each embedded kernel kernlint cannot read\n"
      "                          (unresolved-source notes), not one line counting them\n"
      "  -q, --quiet             print findings only, no summary line\n"
      "  --stats                 print per-run counts and time on stderr\n"
      "  --color WHEN            colour text output: auto (default), always or never\n"
      "  --no-color              same as --color never (NO_COLOR is honoured too)\n"
      "  --show-settings FILE    print each setting that applies to FILE and where it came\n"
      "                          from (.lintrc, the build, the code, the command line); a\n"
      "                          PATH bounds FILE's project as `kernlint PATH` would\n"
      "  --list-rules            list every rule with its default level\n"
      "  --explain RULE          explain a rule: what it does, why, an example, the fix\n"
      "  -V, --version           print the version\n"
      "  -h, --help              print this help\n"
      "\n"
      "Options take a value as '--flag value' or '--flag=value'.\n"
      "\n"
      "Exit status: 0 no findings at or above --fail-on, 1 findings, 2 usage or input error.\n",
      kl_config_targets(), KL_JOBS_DEFAULT_MAX);
}

static void kl_list_rules(void) {
  size_t n;
  const struct kl_rule *const *all = kl_rules_all(&n);
  int w = 0;
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(all[i]->id) > w) w = (int)strlen(all[i]->id);
  for (size_t i = 0; i < n; i++) {
    const struct kl_rule *r = all[i];
    printf("%-*s  %-7s  %s%s\n", w, r->id, kl_diag_severity_name(r->default_severity),
           r->summary ? r->summary : "", r->implemented ? "" : " (not yet implemented)");
  }
}

static int kl_explain(const char *id) {
  const struct kl_rule *r = kl_rules_find(id);
  if (!r) {
    fprintf(stderr, "kernlint: --explain: unknown rule '%s' (see kernlint --list-rules)\n", id);
    return 2;
  }
  printf("# %s (default: %s)\n\n", r->id, kl_diag_severity_name(r->default_severity));
  if (r->summary) printf("%s\n\n", r->summary);
  if (!r->implemented)
    printf("This rule is not yet implemented: it is documented here, and its check comes in a "
           "later release.\n\n");
  if (r->what) printf("## What it does\n\n%s\n\n", r->what);
  if (r->why) printf("## Why is this bad?\n\n%s\n\n", r->why);
  if (r->example) printf("## Example\n\n```metal\n%s\n```\n\n", r->example);
  if (r->instead) printf("## Use instead\n\n```metal\n%s\n```\n", r->instead);
  return 0;
}

/* ---- inputs ---- */

struct kl_input {
  char *path;
  bool named; /* named on the command line: linted even when a config excludes it */
  const char *arg; /* the command-line path it was found through (its project's bound) */
  bool is_stdin;
  bool has_id; /* dev/ino are known (the file exists) */
  dev_t dev;
  ino_t ino;
};

struct kl_dirid {
  dev_t dev;
  ino_t ino;
};

/* Folders walked per run, at most: a maze of symlinks that is not a loop can still multiply
 * paths, and a lint run must end. */
#define KL_WALK_MAX_DIRS 100000

struct kl_inputs {
  struct kl_input *items;
  size_t n, cap;
  struct kl_dirid *stack; /* the folders being walked, outermost first: a symlink loop leads
                             back to one of them */
  size_t depth, capstack;
  size_t walked;
  struct kl_emitter *emit; /* also counts the inputs and configs that could not be used */
  const char *arg;         /* the command-line path being collected */
};

static void kl_inputs_add(struct kl_inputs *in, const char *path, bool named, bool is_stdin,
                          const struct stat *st) {
  KL_XVEC_PUSH(in->items, in->n, in->cap);
  struct kl_input *it = &in->items[in->n++];
  memset(it, 0, sizeof *it);
  it->path = kl_arena_xstrdup(path);
  it->named = named;
  it->arg = in->arg;
  it->is_stdin = is_stdin;
  if (st) {
    it->has_id = true;
    it->dev = st->st_dev;
    it->ino = st->st_ino;
  }
}

/* A folder walk picks up every file whose extension kl_source_lang knows (the one list of
 * them); a file named on the command line is linted regardless. */
static bool kl_has_walk_ext(const char *name) {
  return kl_source_lang(name) != KL_LANG_UNKNOWN;
}

static int kl_strcmp_ptr(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void kl_input_error(struct kl_inputs *in, const char *path, const char *problem) {
  fprintf(stderr, "kernlint: %s: %s\n", path, problem);
  kl_emit_failure(in->emit, path, problem);
}

static void kl_walk(struct kl_inputs *in, const char *dir);

/* Walk a folder unless it is one being walked already (a symlink loop). */
static void kl_walk_enter(struct kl_inputs *in, const char *dir, const struct stat *st) {
  for (size_t i = 0; i < in->depth; i++)
    if (in->stack[i].dev == st->st_dev && in->stack[i].ino == st->st_ino) return;
  if (++in->walked > KL_WALK_MAX_DIRS) {
    if (in->walked == KL_WALK_MAX_DIRS + 1)
      kl_input_error(in, dir, "too many folders to walk (a maze of symbolic links?)");
    return;
  }
  KL_XVEC_PUSH(in->stack, in->depth, in->capstack);
  in->stack[in->depth++] = (struct kl_dirid){st->st_dev, st->st_ino};
  kl_walk(in, dir);
  in->depth--;
}

/* Collect files under dir, in sorted order. Hidden entries are skipped: version-control folders,
 * editor lock files (dangling symlinks such as .#k.metal) and caches are never sources. */
static void kl_walk(struct kl_inputs *in, const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    char msg[256];
    snprintf(msg, sizeof msg, "cannot open folder: %s", strerror(errno));
    kl_input_error(in, dir, msg);
    return;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    KL_XVEC_PUSH(names, n, cap);
    names[n++] = kl_arena_xstrdup(de->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, kl_strcmp_ptr);
  size_t dlen = strlen(dir);
  bool here = !strcmp(dir, ".");
  bool slash = dlen && dir[dlen - 1] == '/';
  for (size_t i = 0; i < n; i++) {
    size_t nlen = strlen(names[i]);
    char *child = kl_arena_xmalloc(dlen + nlen + 2);
    if (here)
      memcpy(child, names[i], nlen + 1);
    else
      snprintf(child, dlen + nlen + 2, "%s%s%s", dir, slash ? "" : "/", names[i]);
    struct stat st;
    if (stat(child, &st) != 0) {
      /* A broken link with a source name is reported when it is linted; the rest is noise. */
      if (kl_has_walk_ext(names[i])) kl_inputs_add(in, child, false, false, NULL);
    } else if (S_ISDIR(st.st_mode)) {
      kl_walk_enter(in, child, &st);
    } else if (S_ISREG(st.st_mode) && kl_has_walk_ext(names[i])) {
      kl_inputs_add(in, child, false, false, &st);
    }
    free(child);
    free(names[i]);
  }
  free(names);
}

static int kl_input_cmp(const void *pa, const void *pb) {
  const struct kl_input *a = pa, *b = pb;
  int c = strcmp(a->path, b->path);
  if (c) return c;
  return (int)a->is_stdin - (int)b->is_stdin;
}

/* Order by file identity, then path, so the first of each identity is its smallest path. */
static int kl_input_id_cmp(const void *pa, const void *pb) {
  const struct kl_input *a = *(const struct kl_input *const *)pa;
  const struct kl_input *b = *(const struct kl_input *const *)pb;
  if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
  if (a->ino != b->ino) return a->ino < b->ino ? -1 : 1;
  return kl_input_cmp(a, b);
}

/* Every input once, sorted by path. A file reached by several paths (symlinked folders, the
 * same folder named twice) is linted once, under its smallest path, so the result does not
 * depend on the order of the arguments. */
static void kl_inputs_collect(struct kl_inputs *in, const struct kl_opts *o) {
  for (size_t i = 0; i < o->npaths; i++) {
    const char *p = o->paths[i];
    struct stat st;
    in->arg = strcmp(p, "-") ? p : o->stdin_name;
    if (!strcmp(p, "-")) {
      kl_inputs_add(in, o->stdin_name ? o->stdin_name : "<stdin>", true, true, NULL);
      continue;
    }
    bool found = stat(p, &st) == 0;
    if (found && S_ISDIR(st.st_mode))
      kl_walk_enter(in, p, &st);
    else
      kl_inputs_add(in, p, true, false, found && S_ISREG(st.st_mode) ? &st : NULL);
  }
  in->arg = o->stdin_name;
  if (o->npaths == 0 && o->stdin_name) kl_inputs_add(in, o->stdin_name, true, true, NULL);
  if (in->n < 2) return;

  struct kl_input **byid = kl_arena_xmalloc(in->n * sizeof *byid);
  size_t nid = 0;
  for (size_t i = 0; i < in->n; i++)
    if (in->items[i].has_id) byid[nid++] = &in->items[i];
  if (nid > 1) qsort(byid, nid, sizeof *byid, kl_input_id_cmp);
  for (size_t i = 1; i < nid; i++) {
    struct kl_input *first = byid[i - 1], *cur = byid[i];
    if (first->dev == cur->dev && first->ino == cur->ino) {
      first->named |= cur->named;
      cur->has_id = false;
      free(cur->path);
      cur->path = NULL;
      byid[i] = first; /* later duplicates fold into the same first */
    }
  }
  free(byid);

  size_t w = 0;
  for (size_t i = 0; i < in->n; i++)
    if (in->items[i].path) in->items[w++] = in->items[i];
  in->n = w;
  qsort(in->items, in->n, sizeof *in->items, kl_input_cmp);
  w = 0;
  for (size_t i = 0; i < in->n; i++) {
    if (w > 0 && !kl_input_cmp(&in->items[w - 1], &in->items[i])) {
      in->items[w - 1].named |= in->items[i].named;
      free(in->items[i].path);
      continue;
    }
    in->items[w++] = in->items[i];
  }
  in->n = w;
}

static void kl_inputs_free(struct kl_inputs *in) {
  for (size_t i = 0; i < in->n; i++) free(in->items[i].path);
  free(in->items);
  free(in->stack);
}

/* Standard input, read up to one byte past the size limit so the loader can refuse it. */
static char *kl_read_stdin(size_t *len, char *err, size_t errlen) {
  char *buf;
  if (kl_source_read(stdin, 64 * 1024, &buf, len) == 0) return buf;
  snprintf(err, errlen, "cannot read standard input: %s", strerror(errno));
  return NULL;
}

/* ---- configuration ---- */

struct kl_cfg_entry {
  char *path;
  struct kl_config *cfg; /* NULL when it failed to load */
};

struct kl_cfgs {
  struct kl_cfg_entry *items;
  size_t n, cap;
  /* The answer for the last file's folder. Inputs come sorted, so a folder's files are looked
   * up in a row, and finding the .lintrc (a realpath and a stat per level) is done once. */
  char *last_dir; /* the folder part of the path, as named; NULL before the first lookup */
  const struct kl_config *last_cfg;
  bool last_bad;
};

/* The closest .lintrc to a file, loaded once. Sets *bad when that config failed. Its error is
 * reported once, with the first file under it: it is handed back in *fail (malloc'd, with the
 * config's path in *fail_path) to be reported when that file's turn to be output comes, so that
 * it comes out in the same place whether the files are linted in order or in parallel. */
static const struct kl_config *kl_cfgs_lookup(struct kl_cfgs *cs, const char *file, bool *bad,
                                              const char **fail_path, char **fail) {
  *bad = false;
  char *path = kl_config_find(file);
  if (!path) return NULL;
  for (size_t i = 0; i < cs->n; i++) {
    if (!strcmp(cs->items[i].path, path)) {
      free(path);
      *bad = cs->items[i].cfg == NULL;
      return cs->items[i].cfg;
    }
  }
  char err[512] = "";
  struct kl_config *c = kl_config_load(path, err, sizeof err);
  if (!c) {
    *fail_path = path;
    *fail = kl_arena_xstrdup(err);
    *bad = true;
  }
  KL_XVEC_PUSH(cs->items, cs->n, cs->cap);
  cs->items[cs->n++] = (struct kl_cfg_entry){path, c};
  return c;
}

/* kl_cfgs_lookup, answered from the last lookup when the file is in the same folder: the
 * search depends only on the folder. */
static const struct kl_config *kl_cfgs_for(struct kl_cfgs *cs, const char *file, bool *bad,
                                           const char **fail_path, char **fail) {
  const char *slash = strrchr(file, '/');
  size_t dlen = slash ? (size_t)(slash - file) + 1 : 0;
  if (cs->last_dir && strlen(cs->last_dir) == dlen && !strncmp(cs->last_dir, file, dlen)) {
    *bad = cs->last_bad;
    return cs->last_cfg;
  }
  const struct kl_config *c = kl_cfgs_lookup(cs, file, bad, fail_path, fail);
  free(cs->last_dir);
  cs->last_dir = kl_arena_xstrndup(file, dlen);
  cs->last_cfg = c;
  cs->last_bad = *bad;
  return c;
}

static void kl_cfgs_free(struct kl_cfgs *cs) {
  for (size_t i = 0; i < cs->n; i++) {
    kl_config_delete(cs->items[i].cfg);
    free(cs->items[i].path);
  }
  free(cs->items);
  free(cs->last_dir);
}

/* --config FILE, checked up front: a run with the wrong settings is worse than no run. */
static struct kl_config *kl_config_explicit(const char *path) {
  /* kl_config_load names the file in every error, a missing one or a folder included. */
  char err[512] = "";
  struct kl_config *c = kl_config_load(path, err, sizeof err);
  if (!c) fprintf(stderr, "kernlint: %s\n", err[0] ? err : path);
  return c;
}

/* ---- --output ---- */

/* Output goes to a temporary file beside the target and is renamed over it at the end, so a
 * reader never sees half a report and a failed run leaves the old one in place. */
struct kl_outfile {
  char *target;
  char *tmp; /* NULL when writing straight to a device or pipe */
  FILE *f;
};

/* The temporary file's name, for the signal handler (which may only call async-signal-safe
 * functions, so it cannot look at heap state that might be changing). */
static char kl_tmp_for_signal[PATH_MAX + 32];

static void kl_on_signal(int sig) {
  if (kl_tmp_for_signal[0]) unlink(kl_tmp_for_signal);
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Where writing through path lands when path is a dangling symlink: the end of its chain of
 * links, which realpath cannot give because that file does not exist yet. Relative links are
 * read from their own folder. Returns NULL with errno set when the chain cannot be followed. */
static char *kl_outfile_follow(const char *path) {
  char *cur = kl_arena_xstrdup(path);
  /* Linux's own limit on links followed in one lookup; more than that is a loop. */
  for (int hops = 0; hops < 40; hops++) {
    struct stat lst;
    if (lstat(cur, &lst) != 0 || !S_ISLNK(lst.st_mode)) return cur;
    char link[PATH_MAX];
    ssize_t n = readlink(cur, link, sizeof link);
    if (n < 0 || (size_t)n >= sizeof link) {
      if (n >= 0) errno = ENAMETOOLONG;
      free(cur);
      return NULL;
    }
    link[n] = '\0';
    const char *slash = strrchr(cur, '/');
    size_t dlen = link[0] == '/' || !slash ? 0 : (size_t)(slash - cur) + 1;
    char *next = kl_arena_xmalloc(dlen + (size_t)n + 1);
    memcpy(next, cur, dlen);
    memcpy(next + dlen, link, (size_t)n + 1);
    free(cur);
    cur = next;
  }
  free(cur);
  errno = ELOOP;
  return NULL;
}

static int kl_outfile_open(struct kl_outfile *o, const char *target) {
  memset(o, 0, sizeof *o);
  struct stat st;
  size_t tlen = strlen(target);
  bool exists = stat(target, &st) == 0;
  if ((exists && S_ISDIR(st.st_mode)) || target[tlen - 1] == '/') {
    fprintf(stderr, "kernlint: %s: is a directory, expected a file for --output\n", target);
    return -1;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    /* A device or pipe (/dev/stdout, a FIFO) cannot be replaced by rename, and must not be. */
    o->f = fopen(target, "w");
    if (!o->f) {
      fprintf(stderr, "kernlint: %s: cannot open for writing: %s\n", target, strerror(errno));
      return -1;
    }
    o->target = kl_arena_xstrdup(target);
    return 0;
  }
  /* Replace what a symlink points at, not the link, even when the link dangles. */
  o->target = exists ? realpath(target, NULL) : kl_outfile_follow(target);
  if (!o->target && !exists) {
    fprintf(stderr, "kernlint: %s: cannot create output: %s\n", target, strerror(errno));
    return -1;
  }
  if (!o->target) o->target = kl_arena_xstrdup(target);
  size_t len = strlen(o->target);
  if (o->target[len - 1] == '/') {
    fprintf(stderr, "kernlint: %s: is a directory, expected a file for --output\n", target);
    free(o->target);
    return -1;
  }
  const char *slash = strrchr(o->target, '/');
  size_t dlen = slash ? (size_t)(slash - o->target) + 1 : 0;
  if (len + 16 >= sizeof kl_tmp_for_signal) {
    fprintf(stderr, "kernlint: %s: path too long\n", target);
    free(o->target);
    return -1;
  }
  o->tmp = kl_arena_xmalloc(len + 16);
  snprintf(o->tmp, len + 16, "%.*s.%s.XXXXXX", (int)dlen, o->target, o->target + dlen);
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    fprintf(stderr, "kernlint: %s: cannot create output: %s\n", target, strerror(errno));
    free(o->tmp);
    free(o->target);
    return -1;
  }
  memcpy(kl_tmp_for_signal, o->tmp, strlen(o->tmp) + 1);
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, exists ? (st.st_mode & 07777) : (0666 & ~mask));
  o->f = fdopen(fd, "w");
  if (!o->f) {
    fprintf(stderr, "kernlint: %s: cannot open output: %s\n", target, strerror(errno));
    close(fd);
    unlink(o->tmp);
    kl_tmp_for_signal[0] = '\0';
    free(o->tmp);
    free(o->target);
    return -1;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = kl_on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  return 0;
}

/* Finish the output: commit it (keep = true) or throw it away. Returns -1 on a write error. */
static int kl_outfile_close(struct kl_outfile *o, bool keep, const char *shown) {
  int rc = 0, saved = 0;
  if (fflush(o->f) != 0 || ferror(o->f) || (o->tmp && keep && fsync(fileno(o->f)) != 0)) {
    rc = -1;
    saved = errno;
  }
  if (fclose(o->f) != 0 && rc == 0) {
    rc = -1;
    saved = errno;
  }
  if (rc != 0) fprintf(stderr, "kernlint: %s: cannot write output: %s\n", shown, strerror(saved));
  if (o->tmp) {
    if (keep && rc == 0) {
      if (rename(o->tmp, o->target) != 0) {
        fprintf(stderr, "kernlint: %s: cannot replace output: %s\n", shown, strerror(errno));
        rc = -1;
      } else {
        /* Make the rename itself durable. */
        char *dir = o->target;
        char *slash = strrchr(dir, '/');
        int dfd = -1;
        if (slash == dir) {
          dfd = open("/", O_RDONLY);
        } else if (slash) {
          *slash = '\0';
          dfd = open(dir, O_RDONLY);
          *slash = '/';
        } else {
          dfd = open(".", O_RDONLY);
        }
        if (dfd >= 0) {
          fsync(dfd);
          close(dfd);
        }
      }
    }
    if (!keep || rc != 0) unlink(o->tmp);
    kl_tmp_for_signal[0] = '\0';
    free(o->tmp);
  }
  free(o->target);
  return rc;
}

/* Whether the output file already exists as one of the inputs: the report would replace the
 * source it describes. */
static bool kl_output_is_input(const struct kl_outfile *of, const struct kl_inputs *in) {
  struct stat st;
  if (stat(of->target, &st) != 0) return false;
  for (size_t i = 0; i < in->n; i++)
    if (in->items[i].has_id && in->items[i].dev == st.st_dev && in->items[i].ino == st.st_ino)
      return true;
  return false;
}

/* ---- the run ---- */

/* What only the command line tracks; files, failures and findings are the emitter's counts. */
struct kl_run {
  size_t skipped;
  size_t *by_rule; /* indexed like kl_rules_all */
  size_t nrules;
  enum kl_severity worst;
  struct kl_baseline *baseline; /* --baseline or --write-baseline, else NULL */
  bool recording;               /* --write-baseline: findings go to the baseline, not out */
  bool stdin_named;             /* --stdin-filename given: standard input is stored as a file */
  size_t baselined;             /* findings recorded, or left out because the baseline has them */
  bool fix, diff;           /* --fix, --diff */
  size_t fixable;           /* findings reported with a fix */
  size_t nfixed, fixed_files; /* findings fixed (--diff: that would be), and their files */
};

static void kl_count(struct kl_run *r, const struct kl_diag_list *diags) {
  for (size_t i = 0; i < diags->n; i++) {
    const struct kl_diag *d = &diags->items[i];
    if (d->severity > r->worst) r->worst = d->severity;
    if (d->fix) r->fixable++;
    int ri = kl_rules_index(d->rule_id);
    if (ri >= 0 && (size_t)ri < r->nrules) r->by_rule[ri]++;
  }
}

/* One input of the run. The main thread finds its config and outputs it; whichever thread takes
 * it lints it (standard input: the main thread, at its turn). */
struct kl_job {
  const struct kl_input *item;
  const struct kl_config *cfg;
  const struct kl_project *proj; /* what the file's project says, under cfg */
  bool bad_cfg;          /* under a .lintrc that failed to load: skipped */
  const char *fail_path; /* a config that failed, first met with this input (else NULL) */
  char *fail;            /* its error (malloc'd) */
  /* The result, in its own arena. */
  bool skipped; /* excluded by its config */
  int rc;
  char err[512];
  struct kl_arena *a;
  struct kl_source src;
  struct kl_diag_list diags;
  void *block; /* the result once compacted (then a is NULL) */
  size_t kept; /* its size: what the result holds while it waits to be output */
  /* --fix and --diff: src and diags are then the fixed text's, in fa. */
  struct kl_arena *fa;
  size_t nfixed;       /* findings fixed (with --diff, that would be) */
  const char *diff;    /* --diff: the file's unified diff, NULL when none */
  char fixerr[512];    /* why the fixes could not be written (src and diags stay the file's) */
  bool done;
};

/* Carves a result's pieces out of one allocation; with base NULL it only measures them. */
struct kl_carve {
  char *base;
  size_t used;
};

static void *kl_carve(struct kl_carve *c, const void *from, size_t n) {
  const size_t align = sizeof(max_align_t);
  void *p = c->base ? c->base + c->used : NULL;
  if (p && n) memcpy(p, from, n);
  c->used += (n + align - 1) / align * align;
  return p;
}

static const char *kl_carve_str(struct kl_carve *c, const char *s) {
  return kl_carve(c, s, strlen(s) + 1);
}

/* Copy what output needs of a result (the text, its line index and the findings) into j->kept,
 * one malloc'd block: c->base NULL only measures it. */
static void kl_job_copy(struct kl_job *j, struct kl_carve *c, struct kl_source *src,
                        struct kl_diag_list *diags, const char **diff) {
  *diff = j->diff ? kl_carve_str(c, j->diff) : NULL;
  const struct kl_source *s = &j->src;
  *src = *s;
  src->path = kl_carve_str(c, s->path);
  src->text = kl_carve(c, s->text, (size_t)s->len + 1);
  src->line_starts = kl_carve(c, s->line_starts, s->nlines * sizeof *s->line_starts);
  src->line_ascii = kl_carve(c, s->line_ascii, s->nlines * sizeof *s->line_ascii);
  *diags = j->diags;
  diags->arena = NULL;
  diags->cap = diags->n;
  diags->items = kl_carve(c, j->diags.items, j->diags.n * sizeof *j->diags.items);
  for (size_t i = 0; i < j->diags.n; i++) {
    const struct kl_diag *o = &j->diags.items[i];
    struct kl_diag d = *o;
    d.rule_id = kl_carve_str(c, o->rule_id);
    d.message = kl_carve_str(c, o->message);
    d.cap_related = d.nrelated;
    d.related = kl_carve(c, o->related, o->nrelated * sizeof *o->related);
    for (size_t r = 0; r < o->nrelated && c->base; r++)
      d.related[r].message = kl_carve_str(c, o->related[r].message);
    for (size_t r = 0; r < o->nrelated && !c->base; r++) kl_carve_str(c, o->related[r].message);
    if (o->fix) {
      struct kl_fix f = *o->fix;
      f.title = kl_carve_str(c, o->fix->title);
      f.cap_edits = f.nedits;
      f.edits = kl_carve(c, o->fix->edits, f.nedits * sizeof *f.edits);
      for (size_t k = 0; k < f.nedits; k++) {
        const char *t = kl_carve_str(c, o->fix->edits[k].text);
        if (c->base) f.edits[k].text = t;
      }
      d.fix = kl_carve(c, &f, sizeof f);
    }
    if (c->base) diags->items[i] = d;
  }
}

/* Keep only what output needs of a finished result, in one exact block, and free its arena:
 * results that wait their turn take what their text and findings take, and no more. */
static void kl_job_compact(struct kl_job *j) {
  struct kl_source src;
  struct kl_diag_list diags;
  const char *diff;
  struct kl_carve c = {NULL, 0};
  kl_job_copy(j, &c, &src, &diags, &diff);
  c.base = kl_arena_xmalloc(c.used);
  c.used = 0;
  kl_job_copy(j, &c, &src, &diags, &diff);
  /* A worker's freed arena stays in its thread's malloc heap for the next file it lints. It is
   * not trimmed after a big file: malloc_trim walks and locks every thread's heap, and the pages
   * it hands back are faulted in again by the next file; on the corpus that cost a tenth of the
   * -j 2 run's system time and lowered no peak. */
  kl_arena_delete(j->a);
  j->a = NULL;
  kl_arena_delete(j->fa);
  j->fa = NULL;
  j->diff = diff;
  j->block = c.base;
  j->kept = c.used;
  j->src = src;
  j->diags = diags;
}

/* --fix and --diff on a linted job: the fixes that check out, as a diff (--diff) or written to
 * the file (--fix; standard input is printed when it is output), and then the job's result is
 * the fixed text's. */
static void kl_job_fix(const struct kl_opts *o, struct kl_job *j, const struct kl_settings *s,
                       const struct kl_dispatch_list *facts, unsigned nerrors) {
  bool any = false;
  for (size_t i = 0; i < j->diags.n && !any; i++) any = j->diags.items[i].fix != NULL;
  struct kl_fix_result r;
  if (!any) return;
  if (kl_fix_run(&j->src, s, facts, &j->diags, nerrors, &r) != 0 || !r.changed) {
    /* Tried and dropped: not offered as fixable again. */
    for (size_t i = 0; i < j->diags.n; i++) j->diags.items[i].fix = NULL;
    return;
  }
  if (o->diff) {
    j->diff = kl_fix_diff(j->a, j->src.path, j->src.text, j->src.len, r.src.text, r.src.len);
    j->nfixed = r.nfixed;
    kl_arena_delete(r.arena);
    return;
  }
  if (!j->item->is_stdin &&
      kl_fix_write(j->item->path, r.src.text, r.src.len, j->fixerr, sizeof j->fixerr) != 0) {
    kl_arena_delete(r.arena);
    return;
  }
  j->nfixed = r.nfixed;
  j->fa = r.arena;
  j->src = r.src;
  j->diags = r.diags;
}

/* Lint one input into its own arena (the result stays in the job until it is output). */
static void kl_job_run(const struct kl_opts *o, struct kl_job *j,
                       const struct kl_dispatch_list *facts, bool compact) {
  const struct kl_input *item = j->item;
  char *rel = kl_config_relpath(j->cfg, item->path);
  if (!item->named && !kl_config_selects_rel(j->cfg, rel)) {
    free(rel);
    j->skipped = true;
    return;
  }
  struct kl_settings s;
  kl_config_defaults(&s);
  kl_config_apply_rel(j->cfg, rel, &s);
  kl_project_apply(j->proj, j->cfg, &s);
  free(rel);
  if (o->target) {
    s.target = o->target->name;
    s.apple_family = o->target->apple;
  }
  if (o->rounded) s.assume_rounded_grid = true;
  if (o->metal_version) s.metal_version = o->metal_version;

  j->a = kl_arena_new();
  kl_diag_list_init(&j->diags, j->a);
  int rc;
  if (item->is_stdin) {
    size_t len = 0;
    char *bytes = kl_read_stdin(&len, j->err, sizeof j->err);
    rc = bytes ? kl_source_from_memory(j->a, item->path, bytes, len, &j->src, j->err, sizeof j->err)
               : -1;
    free(bytes);
  } else {
    rc = kl_source_load(j->a, item->path, &j->src, j->err, sizeof j->err);
  }
  /* A file named explicitly is the user's word that it is MSL, whatever it is called. */
  if (rc == 0 && j->src.lang == KL_LANG_UNKNOWN) j->src.lang = KL_LANG_METAL;
  unsigned nerrors = 0;
  if (rc == 0)
    rc = kl_engine_lint_counted(j->a, &j->src, &s, facts, &j->diags, &nerrors, j->err,
                                sizeof j->err);
  j->rc = rc;
  if (rc == 0 && (o->fix || o->diff)) kl_job_fix(o, j, &s, facts, nerrors);
  if (rc == 0 && compact) kl_job_compact(j);
}

/* Between the engine and the emitters: record the findings (leaving none to output), or drop
 * those the baseline holds. Done here, in input order, so the result is the same whatever -j. */
static void kl_job_baseline(struct kl_run *run, struct kl_job *j) {
  bool is_file = !j->item->is_stdin || run->stdin_named;
  char *rel = kl_baseline_path(run->baseline, j->src.path, is_file);
  if (run->recording) {
    kl_baseline_record(run->baseline, rel, &j->src, &j->diags);
    run->baselined += j->diags.n;
    j->diags.n = 0;
  } else {
    run->baselined += kl_baseline_filter(run->baseline, rel, &j->src, &j->diags);
  }
  free(rel);
}

/* Output one job's result, in input order, and free it. */
static void kl_job_emit(struct kl_inputs *in, struct kl_job *j, struct kl_run *run) {
  if (j->fail_path) {
    fprintf(stderr, "kernlint: %s\n", j->fail[0] ? j->fail : j->fail_path);
    kl_emit_failure(in->emit, j->fail_path, j->fail[0] ? j->fail : "cannot load configuration");
  }
  if (j->bad_cfg || j->skipped) {
    run->skipped++;
  } else if (j->rc != 0) {
    kl_input_error(in, j->item->path, j->err[0] ? j->err : "cannot be linted");
  } else {
    if (j->fixerr[0]) kl_input_error(in, j->item->path, j->fixerr);
    if (j->nfixed) {
      run->nfixed += j->nfixed;
      run->fixed_files++;
    }
    if (run->diff) {
      if (j->diff) fputs(j->diff, stdout);
    } else {
      if (run->baseline) kl_job_baseline(run, j);
      kl_emit_file(in->emit, &j->src, &j->diags);
      kl_count(run, &j->diags);
      /* Standard input fixed goes back out, as ruff does; the report went to stderr. */
      if (run->fix && j->item->is_stdin) fwrite(j->src.text, 1, j->src.len, stdout);
    }
  }
  kl_arena_delete(j->a);
  j->a = NULL;
  kl_arena_delete(j->fa);
  j->fa = NULL;
  free(j->block);
  j->block = NULL;
  free(j->fail);
  j->fail = NULL;
}

/* The worker pool for -j N: N - 1 workers and the main thread take inputs in order and lint
 * them; the main thread lints while it waits, and outputs each input once it and every input
 * before it are done (and its own lint, if it is running one, ends). Takers may run ahead of the
 * output by at most KL_POOL_AHEAD inputs and KL_POOL_KEPT bytes of waiting results (always
 * allowed to take the input the output waits for), so memory stays bounded by what N lints take
 * at once. The main thread is one of the N so that the memory its facts pass freed is linted in
 * again, not faulted in afresh by another worker. */
#define KL_POOL_AHEAD 256
#define KL_POOL_KEPT (16u << 20)

struct kl_pool {
  pthread_mutex_t mu;
  pthread_cond_t more; /* workers wait: room to run ahead */
  pthread_cond_t done; /* the main thread waits: the input it outputs next is done */
  struct kl_job *jobs;
  size_t n;
  size_t next;    /* the next input to take */
  size_t emitted; /* inputs output so far */
  size_t kept;    /* bytes of results done and not yet output */
  const struct kl_opts *o;
  const struct kl_dispatch_list *facts;
};

/* Whether an input is there to take within the run-ahead bounds; p->mu held. */
static bool kl_pool_can_take(const struct kl_pool *p) {
  return p->next < p->n && (p->next == p->emitted || (p->next < p->emitted + KL_POOL_AHEAD &&
                                                      p->kept < KL_POOL_KEPT));
}

/* Take the next input and lint it, p->mu held on entry and on return. Its result is compacted,
 * unless the main thread (is_main) takes the input it outputs next: a worker's may wait for the
 * main thread to finish a lint of its own. */
static void kl_pool_take(struct kl_pool *p, bool is_main) {
  struct kl_job *j = &p->jobs[p->next++];
  bool compact = !is_main || j != &p->jobs[p->emitted];
  pthread_mutex_unlock(&p->mu);
  /* Standard input is read by the main thread, when its turn comes. */
  if (!j->bad_cfg && !j->item->is_stdin) kl_job_run(p->o, j, p->facts, compact);
  pthread_mutex_lock(&p->mu);
  j->done = true;
  p->kept += j->kept;
  if (j == &p->jobs[p->emitted]) pthread_cond_signal(&p->done);
}

static void *kl_pool_worker(void *arg) {
  struct kl_pool *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->next < p->n && !kl_pool_can_take(p)) pthread_cond_wait(&p->more, &p->mu);
    if (p->next >= p->n) break;
    kl_pool_take(p, false);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* Lint every job on nthreads threads, the main thread one of them, outputting in order; falls
 * back to fewer workers (down to the serial loop) when threads cannot be made. */
static void kl_pool_run(const struct kl_opts *o, struct kl_inputs *in, struct kl_job *jobs,
                        size_t n, const struct kl_dispatch_list *facts,
                        const struct kl_dispatch_list *stdin_facts, unsigned nthreads,
                        struct kl_run *run) {
  struct kl_pool p;
  memset(&p, 0, sizeof p);
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.more, NULL);
  pthread_cond_init(&p.done, NULL);
  p.jobs = jobs;
  p.n = n;
  p.o = o;
  p.facts = facts;
  pthread_t *tids = kl_arena_xmalloc(nthreads * sizeof *tids);
  unsigned started = 0;
  /* Workers get the main thread's stack size: -j must not change what a file can take. */
  pthread_attr_t at;
  kl_engine_attr_init(&at);
  while (started + 1 < nthreads && pthread_create(&tids[started], &at, kl_pool_worker, &p) == 0)
    started++;
  pthread_attr_destroy(&at);
  for (size_t i = 0; i < n; i++) {
    struct kl_job *j = &jobs[i];
    if (started) {
      pthread_mutex_lock(&p.mu);
      while (!j->done) {
        if (kl_pool_can_take(&p))
          kl_pool_take(&p, true);
        else
          pthread_cond_wait(&p.done, &p.mu);
      }
      pthread_mutex_unlock(&p.mu);
    }
    if (!started && !j->bad_cfg && !j->item->is_stdin) kl_job_run(o, j, facts, false);
    if (!j->bad_cfg && j->item->is_stdin) kl_job_run(o, j, stdin_facts, false);
    kl_job_emit(in, j, run);
    pthread_mutex_lock(&p.mu);
    p.emitted = i + 1;
    p.kept -= j->kept;
    pthread_cond_broadcast(&p.more);
    pthread_mutex_unlock(&p.mu);
  }
  for (unsigned t = 0; t < started; t++) pthread_join(tids[t], NULL);
  free(tids);
  pthread_cond_destroy(&p.done);
  pthread_cond_destroy(&p.more);
  pthread_mutex_destroy(&p.mu);
}

static const char *kl_plural(size_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

static void kl_print_summary(const struct kl_emit_counts *c) {
  /* Findings on stdout come before the summary on stderr, even when both go to one pipe. */
  fflush(stdout);
  size_t total = kl_emit_total(c);
  char tail[96] = "";
  if (c->failed)
    snprintf(tail, sizeof tail, "; %zu %s could not be linted", c->failed,
             kl_plural(c->failed, "input", "inputs"));
  if (total == 0) {
    fprintf(stderr, "No problems found in %zu %s%s.\n", c->files,
            kl_plural(c->files, "file", "files"), tail);
    return;
  }
  fprintf(stderr, "Found %zu %s (%zu %s, %zu %s, %zu %s) in %zu %s%s.\n", total,
          kl_plural(total, "problem", "problems"), c->nsev[KL_SEV_ERROR],
          kl_plural(c->nsev[KL_SEV_ERROR], "error", "errors"), c->nsev[KL_SEV_WARNING],
          kl_plural(c->nsev[KL_SEV_WARNING], "warning", "warnings"), c->nsev[KL_SEV_NOTE],
          kl_plural(c->nsev[KL_SEV_NOTE], "note", "notes"), c->files,
          kl_plural(c->files, "file", "files"), tail);
}

static void kl_print_stats(const struct kl_run *r, const struct kl_emit_counts *c, double seconds) {
  size_t n;
  const struct kl_rule *const *all = kl_rules_all(&n);
  fprintf(stderr, "kernlint stats:\n");
  fprintf(stderr, "  files: %zu linted, %zu failed, %zu skipped by config\n", c->files, c->failed,
          r->skipped);
  fprintf(stderr, "  findings: %zu (%zu error, %zu warning, %zu note)\n", kl_emit_total(c),
          c->nsev[KL_SEV_ERROR], c->nsev[KL_SEV_WARNING], c->nsev[KL_SEV_NOTE]);
  for (size_t i = 0; i < n && i < r->nrules; i++)
    fprintf(stderr, "    %-20s %zu\n", all[i]->id, r->by_rule[i]);
  fprintf(stderr, "  time: %.3f s\n", seconds);
}

static double kl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --write-baseline: write the recorded findings and commit the file; -1 on a write error. */
static int kl_run_write_baseline(const struct kl_opts *o, struct kl_baseline *bl,
                                 struct kl_outfile *of, const struct kl_run *run) {
  bool ok = kl_baseline_write(bl, of->f) == 0;
  int saved = errno;
  if (kl_outfile_close(of, ok, o->write_baseline) != 0) return -1;
  if (!ok) {
    fprintf(stderr, "kernlint: %s: cannot write baseline: %s\n", o->write_baseline,
            strerror(saved));
    return -1;
  }
  if (!o->quiet)
    fprintf(stderr, "kernlint: wrote %zu %s to %s\n", run->baselined,
            kl_plural(run->baselined, "finding", "findings"), o->write_baseline);
  return 0;
}

/* A baseline's string on stderr, control characters shown as spaces: the file is not ours, and
 * must not drive the terminal or break the one-line-per-entry form. */
static void kl_print_plain(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    fputc(*p < 0x20 || *p == 0x7F ? ' ' : (int)*p, stderr);
}

/* --baseline-unused: one line per entry that matched nothing; returns how many. */
static size_t kl_run_list_unused(const struct kl_opts *o, struct kl_baseline *bl) {
  fflush(stdout);
  size_t n = 0, pos = 0;
  const struct kl_baseline_entry *e;
  while ((e = kl_baseline_next_unused(bl, &pos)) != NULL) {
    fprintf(stderr, "kernlint: %s: unused entry: ", o->baseline);
    kl_print_plain(e->path);
    fputs(" [", stderr);
    kl_print_plain(e->rule);
    fputs("] ", stderr);
    kl_print_plain(e->text);
    fputc('\n', stderr);
    n++;
  }
  return n;
}

static bool kl_use_color(const struct kl_opts *o) {
  if (o->color == KL_COLOR_ALWAYS) return true;
  if (o->color == KL_COLOR_NEVER || o->output || o->fmt != KL_FORMAT_TEXT) return false;
  const char *nc = getenv("NO_COLOR");
  if (nc && nc[0]) return false;
  const char *term = getenv("TERM");
  if (term && !strcmp(term, "dumb")) return false;
  return isatty(fileno(stdout)) != 0;
}

static int kl_run_lint(const struct kl_opts *o) {
  double t0 = kl_now();
  struct kl_config *forced = NULL;
  if (o->config && !(forced = kl_config_explicit(o->config))) return 2;
  /* The baseline is checked up front too: a bad one must not pass for "no new findings". */
  struct kl_baseline *bl = NULL;
  if (o->baseline || o->write_baseline) {
    char err[PATH_MAX + 256] = "";
    bl = o->baseline ? kl_baseline_load(o->baseline, err, sizeof err)
                     : kl_baseline_new(o->write_baseline, err, sizeof err);
    if (!bl) {
      fprintf(stderr, "kernlint: %s\n", err);
      kl_config_delete(forced);
      return 2;
    }
  }
  /* --fix with standard input prints the fixed text on stdout: the report goes to stderr. */
  bool fix_stdin = o->fix && o->npaths == 0 && o->stdin_name;
  for (size_t i = 0; i < o->npaths && o->fix; i++) fix_stdin |= !strcmp(o->paths[i], "-");
  /* --write-baseline's file is written like --output's (which it excludes): atomically. */
  const char *outpath = o->output ? o->output : o->write_baseline;
  struct kl_outfile of;
  FILE *out = fix_stdin ? stderr : stdout;
  if (outpath) {
    if (kl_outfile_open(&of, outpath) != 0) {
      kl_baseline_delete(bl);
      kl_config_delete(forced);
      return 2;
    }
    if (o->output) out = of.f;
  }
  struct kl_inputs in;
  memset(&in, 0, sizeof in);
  in.emit = kl_emit_new(o->write_baseline ? KL_FORMAT_TEXT : o->fmt, out, kl_use_color(o));
  /* Text is read top to bottom, where a note per kernel built at run time buries the findings;
   * the other formats put each note beside its code (an editor, a code-scanning view, a PR). */
  if (o->fmt == KL_FORMAT_TEXT && !o->show_unresolved) kl_emit_fold(in.emit, "unresolved-source");
  kl_inputs_collect(&in, o);
  if (outpath && kl_output_is_input(&of, &in)) {
    fprintf(stderr, "kernlint: %s: %s would overwrite an input file\n", outpath,
            o->output ? "--output" : "--write-baseline");
    kl_emit_delete(in.emit);
    kl_outfile_close(&of, false, outpath);
    kl_inputs_free(&in);
    kl_baseline_delete(bl);
    kl_config_delete(forced);
    return 2;
  }

  struct kl_run run;
  memset(&run, 0, sizeof run);
  kl_rules_all(&run.nrules);
  run.fix = o->fix;
  run.diff = o->diff;
  run.by_rule = kl_arena_xmalloc((run.nrules ? run.nrules : 1) * sizeof *run.by_rule);
  memset(run.by_rule, 0, (run.nrules ? run.nrules : 1) * sizeof *run.by_rule);
  run.baseline = bl;
  run.recording = o->write_baseline != NULL;
  run.stdin_named = o->stdin_name != NULL;
  struct kl_cfgs cs;
  memset(&cs, 0, sizeof cs);
  struct kl_arena *facts_arena = kl_arena_new();
  struct kl_dispatch_list facts;
  kl_dispatch_list_init(&facts, facts_arena);
  /* Host files tell MSL files how their kernels are dispatched: read them all first. */
  const char **paths = kl_arena_xmalloc((in.n ? in.n : 1) * sizeof *paths);
  size_t npaths = 0;
  for (size_t i = 0; i < in.n; i++)
    if (!in.items[i].is_stdin) paths[npaths++] = in.items[i].path;
  /* More workers than inputs would only wait. */
  unsigned nthreads = o->jobs;
  if (nthreads > in.n) nthreads = (unsigned)in.n;
  kl_arena_tune(nthreads);
  kl_engine_host_facts(paths, npaths, o->jobs, &facts);
  free(paths);
  /* Standard input may be named like a host file of the run: it is read on its own. */
  struct kl_dispatch_list stdin_facts = facts;
  stdin_facts.nhosts = 0;
  /* Configs are found here, in input order, so the lookup cache needs no lock. */
  struct kl_job *jobs = kl_arena_xmalloc((in.n ? in.n : 1) * sizeof *jobs);
  memset(jobs, 0, (in.n ? in.n : 1) * sizeof *jobs);
  struct kl_projects *projects = kl_projects_new();
  for (size_t i = 0; i < in.n; i++) {
    jobs[i].item = &in.items[i];
    jobs[i].cfg = o->config ? forced
                            : kl_cfgs_for(&cs, in.items[i].path, &jobs[i].bad_cfg,
                                          &jobs[i].fail_path, &jobs[i].fail);
    if (!jobs[i].bad_cfg)
      jobs[i].proj = kl_project_for(projects, in.items[i].path, in.items[i].arg, jobs[i].cfg);
  }
  kl_pool_run(o, &in, jobs, in.n, &facts, &stdin_facts, nthreads > 1 ? nthreads : 0, &run);
  free(jobs);
  kl_projects_delete(projects);
  kl_arena_delete(facts_arena);

  /* Copied out: the emitter, and its counts, are gone once the document is written. */
  struct kl_emit_counts counts = *kl_emit_get_counts(in.emit);
  int status = counts.failed ? 2 : 0;
  if (kl_emit_delete(in.emit) != 0 && !o->output) {
    fprintf(stderr, "kernlint: cannot write output: %s\n", strerror(errno));
    status = 2;
  }
  if (o->output && kl_outfile_close(&of, true, o->output) != 0) status = 2;
  size_t unused = 0;
  if (o->write_baseline && kl_run_write_baseline(o, bl, &of, &run) != 0) status = 2;
  if (o->baseline_unused) unused = kl_run_list_unused(o, bl);
  if (o->diff) {
    fflush(stdout);
    if (!o->quiet)
      fprintf(stderr, "kernlint: would fix %zu %s in %zu %s\n", run.nfixed,
              kl_plural(run.nfixed, "finding", "findings"), run.fixed_files,
              kl_plural(run.fixed_files, "file", "files"));
    if (status == 0 && !o->exit_zero && run.nfixed) status = 1;
    run.worst = KL_SEV_OFF;
  } else {
    if (o->fix && !o->quiet) {
      fflush(stdout);
      fprintf(stderr, "kernlint: fixed %zu %s in %zu %s\n", run.nfixed,
              kl_plural(run.nfixed, "finding", "findings"), run.fixed_files,
              kl_plural(run.fixed_files, "file", "files"));
    }
    /* The formats people read in a terminal or a CI log close with a summary; documents do not. */
    bool summary = (o->fmt == KL_FORMAT_TEXT || o->fmt == KL_FORMAT_GITHUB) && !o->quiet;
    if (summary && !o->write_baseline) kl_print_summary(&counts);
    if (summary && run.fixable && !o->write_baseline)
      fprintf(stderr, "[*] %zu fixable with the --fix option.\n", run.fixable);
    if (o->baseline && summary) {
      fprintf(stderr, "%zu %s baselined", run.baselined,
              kl_plural(run.baselined, "finding", "findings"));
      if (o->baseline_unused)
        fprintf(stderr, "; %zu baseline %s unused", unused, kl_plural(unused, "entry", "entries"));
      fputs(".\n", stderr);
    }
  }
  if (o->stats) kl_print_stats(&run, &counts, kl_now() - t0);
  if (status == 0 && !o->exit_zero && run.worst != KL_SEV_OFF && run.worst >= o->fail_on)
    status = 1;
  if (status == 0 && !o->exit_zero && o->baseline_strict && unused) status = 1;
  kl_cfgs_free(&cs);
  kl_config_delete(forced);
  kl_inputs_free(&in);
  kl_baseline_delete(bl);
  free(run.by_rule);
  return status;
}

/* --lsp: the server reads its documents from the client, and answers only in LSP. */
static int kl_run_lsp(const struct kl_opts *o) {
  if (o->npaths) {
    kl_usage_error("--lsp takes no PATH (the editor sends the documents)");
    return 2;
  }
  if (o->report_opt) {
    kl_usage_error("--lsp cannot be combined with --%s (diagnostics go to the editor)",
                   o->report_opt);
    return 2;
  }
  struct kl_lsp_options lo = {o->target ? o->target->name : NULL, o->target ? o->target->apple : 0,
                              o->rounded, o->metal_version, o->config};
  return kl_lsp_run(&lo, stdin, stdout);
}

int main(int argc, char **argv) {
  struct kl_opts o;
  int rc;
  if (kl_opts_parse(&o, argc, argv) != 0) {
    rc = 2;
  } else if (o.help) {
    kl_print_help();
    rc = 0;
  } else if (o.version) {
    printf("kernlint %s\n", KL_VERSION);
    rc = 0;
  } else if (o.list_rules) {
    kl_list_rules();
    rc = 0;
  } else if (o.explain) {
    rc = kl_explain(o.explain);
  } else if (o.show_settings && o.npaths > 1) {
    kl_usage_error("--show-settings FILE takes at most one PATH (the folder FILE is linted "
                   "through)");
    rc = 2;
  } else if (o.show_settings) {
    /* With a PATH, FILE's project is bounded as when `kernlint PATH` lints it. */
    struct kl_cli_settings cli = {o.target ? o.target->name : NULL, o.rounded, o.metal_version,
                                  o.config};
    rc = kl_project_show_file(o.show_settings, o.npaths ? o.paths[0] : NULL, &cli);
  } else if (o.lsp) {
    rc = kl_run_lsp(&o);
  } else if (o.npaths == 0 && !o.stdin_name) {
    kl_usage_error("no input paths given (see kernlint --help)");
    rc = 2;
  } else {
    size_t nstdin = 0;
    for (size_t i = 0; i < o.npaths; i++) nstdin += !strcmp(o.paths[i], "-");
    if (nstdin > 1) {
      kl_usage_error("'-' (standard input) given more than once");
      rc = 2;
    } else {
      rc = kl_run_lint(&o);
    }
  }
  if ((o.help || o.version || o.list_rules || (o.explain && rc == 0)) &&
      (fflush(stdout) != 0 || ferror(stdout))) {
    fprintf(stderr, "kernlint: cannot write output: %s\n", strerror(errno));
    rc = 2;
  }
  free(o.paths);
  kl_preproc_forget_headers();
  return rc;
}
