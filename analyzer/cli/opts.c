/* Options (see opts.h). */
#include "analyzer/cli/opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/core/version.h"
#include "rules/rules.h"

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

void kl_opts_usage_error(const char *fmt, ...) {
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
      kl_opts_usage_error("--target: unknown target '%s' (expected one of: %s)", v,
                          kl_config_targets());
      return -1;
    }
    break;
  case KL_OPT_METAL_VERSION:
    o->metal_version = kl_config_metal_version(v);
    if (!o->metal_version) {
      kl_opts_usage_error("--metal-version: invalid version '%s' (expected one such as 3.1)", v);
      return -1;
    }
    break;
  case KL_OPT_FORMAT:
    if (kl_emit_format_parse(v, &o->fmt) != 0) {
      kl_opts_usage_error("--format: unknown format '%s' (expected text, json, sarif or github)",
                          v);
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
      kl_opts_usage_error("--fail-on: unknown level '%s' (expected note, warning or error)", v);
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
      kl_opts_usage_error("--color: unknown value '%s' (expected auto, always or never)", v);
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
      kl_opts_usage_error("--jobs: invalid number '%s' (expected 1 to %d)", v, KL_JOBS_MAX);
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
int kl_opts_parse(struct kl_opts *o, int argc, char **argv) {
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
        kl_opts_usage_error("option '--%s' takes no value", opt->name);
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
      kl_opts_usage_error("unknown option '%s' (see kernlint --help)", arg);
      return -1;
    }
    if (opt->takes_value && !value) {
      if (i + 1 >= argc) {
        kl_opts_usage_error("option '--%s' needs a value", opt->name);
        return -1;
      }
      value = argv[++i];
    }
    if (opt->takes_value && value[0] == '\0') {
      kl_opts_usage_error("option '--%s' needs a non-empty value", opt->name);
      return -1;
    }
    if (kl_opt_apply(o, opt, value) != 0) return -1;
  }
  if (!o->jobs) o->jobs = kl_default_jobs();
  if (o->baseline && o->write_baseline) {
    kl_opts_usage_error(
        "--baseline and --write-baseline cannot be combined (rewrite it on its own)");
    return -1;
  }
  if (o->baseline_unused && !o->baseline) {
    kl_opts_usage_error("--baseline-%s needs --baseline FILE",
                        o->baseline_strict ? "strict" : "unused");
    return -1;
  }
  if (o->write_baseline && o->output) {
    kl_opts_usage_error("--write-baseline writes no report: drop --output");
    return -1;
  }
  if (o->fix && o->diff) {
    kl_opts_usage_error(
        "--fix and --diff cannot be combined (--diff shows what --fix would write)");
    return -1;
  }
  if (o->diff && o->fmt != KL_FORMAT_TEXT) {
    kl_opts_usage_error("--diff prints a unified diff; it cannot be combined with --format");
    return -1;
  }
  if (o->diff && (o->output || o->baseline || o->write_baseline)) {
    kl_opts_usage_error("--diff prints the fixes on standard output and reports nothing: drop --%s",
                        o->output     ? "output"
                        : o->baseline ? "baseline"
                                      : "write-baseline");
    return -1;
  }
  return 0;
}

void kl_opts_help(void) {
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

void kl_opts_list_rules(void) {
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

int kl_opts_explain(const char *id) {
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
