/* Input discovery (see inputs.h). */
#include "analyzer/cli/inputs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer/input/source.h"

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

void kl_inputs_error(struct kl_inputs *in, const char *path, const char *problem) {
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
      kl_inputs_error(in, dir, "too many folders to walk (a maze of symbolic links?)");
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
    kl_inputs_error(in, dir, msg);
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
void kl_inputs_collect(struct kl_inputs *in, const struct kl_opts *o) {
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

void kl_inputs_free(struct kl_inputs *in) {
  for (size_t i = 0; i < in->n; i++) free(in->items[i].path);
  free(in->items);
  free(in->stack);
}

/* Standard input, read up to one byte past the size limit so the loader can refuse it. */
char *kl_inputs_read_stdin(size_t *len, char *err, size_t errlen) {
  char *buf;
  if (kl_source_read(stdin, 64 * 1024, &buf, len) == 0) return buf;
  snprintf(err, errlen, "cannot read standard input: %s", strerror(errno));
  return NULL;
}
