/* The command line: per-file configuration, the lint loop, output files, the summary and the
 * exit status (options are read in opts.c, inputs found in inputs.c). Findings go to stdout (or
 * --output), everything about the run itself to stderr, so `kernlint ... > report` captures
 * only the report. */
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

#include "analyzer/cli/inputs.h"
#include "analyzer/cli/opts.h"
#include "analyzer/report/baseline.h"
#include "analyzer/core/config.h"
#include "analyzer/report/emit.h"
#include "analyzer/engine.h"
#include "analyzer/lsp/lsp.h"
#include "analyzer/report/fix.h"
#include "analyzer/input/project.h"
#include "analyzer/core/version.h"
#include "analyzer/core/xdefs.h"
#include "analyzer/ir/dump.h"
#include "grammar/expand.h"
#include "grammar/msl.h"
#include "grammar/preproc.h"
#include "rules/rules.h"

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
    for (size_t r = 0; r < o->nrelated; r++) {
      const char *m = kl_carve_str(c, o->related[r].message);
      const char *p = o->related[r].path ? kl_carve_str(c, o->related[r].path) : NULL;
      if (c->base) {
        d.related[r].message = m;
        d.related[r].path = p;
      }
    }
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
    char *bytes = kl_inputs_read_stdin(&len, j->err, sizeof j->err);
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
    kl_inputs_error(in, j->item->path, j->err[0] ? j->err : "cannot be linted");
  } else {
    if (j->fixerr[0]) kl_inputs_error(in, j->item->path, j->fixerr);
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
    kl_opts_usage_error("--lsp takes no PATH (the editor sends the documents)");
    return 2;
  }
  if (o->report_opt) {
    kl_opts_usage_error("--lsp cannot be combined with --%s (diagnostics go to the editor)",
                        o->report_opt);
    return 2;
  }
  struct kl_lsp_options lo = {o->target ? o->target->name : NULL, o->target ? o->target->apple : 0,
                              o->rounded, o->metal_version, o->config};
  /* The process's malloc, tuned for its one lint thread (the reader allocates little): what a
   * version freed stays resident for the next one, which would otherwise fault its pages in
   * again on every keystroke. */
  kl_arena_tune(1);
  return kl_lsp_run(&lo, stdin, stdout);
}

int main(int argc, char **argv) {
  struct kl_opts o;
  int rc;
  /* Hidden: the IR of every kernel (a developer's view; not in --help). */
  if (argc > 1 && !strcmp(argv[1], "--dump-ir")) return kl_ir_dump_main(argc - 2, argv + 2, stdout);
  if (kl_opts_parse(&o, argc, argv) != 0) {
    rc = 2;
  } else if (o.help) {
    kl_opts_help();
    rc = 0;
  } else if (o.version) {
    printf("kernlint %s\n", KL_VERSION);
    rc = 0;
  } else if (o.list_rules) {
    kl_opts_list_rules();
    rc = 0;
  } else if (o.explain) {
    rc = kl_opts_explain(o.explain);
  } else if (o.show_settings && o.npaths > 1) {
    kl_opts_usage_error("--show-settings FILE takes at most one PATH (the folder FILE is linted "
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
    kl_opts_usage_error("no input paths given (see kernlint --help)");
    rc = 2;
  } else {
    size_t nstdin = 0;
    for (size_t i = 0; i < o.npaths; i++) nstdin += !strcmp(o.paths[i], "-");
    if (nstdin > 1) {
      kl_opts_usage_error("'-' (standard input) given more than once");
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
  kl_expand_forget_headers();
  kl_xdefs_forget();
  return rc;
}
