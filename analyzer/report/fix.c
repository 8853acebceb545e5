#include "analyzer/report/fix.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/engine.h"

/* ---- applying ---- */

char *kl_fix_edit_text(struct kl_arena *a, const char *text, uint32_t len,
                       const struct kl_edit *edits, size_t n, uint32_t *outlen) {
  size_t total = len;
  for (size_t i = 0; i < n; i++) total += strlen(edits[i].text) - (edits[i].end - edits[i].start);
  char *out = kl_arena_alloc(a, total + 1);
  size_t w = 0;
  uint32_t at = 0;
  for (size_t i = 0; i < n; i++) {
    memcpy(out + w, text + at, edits[i].start - at);
    w += edits[i].start - at;
    size_t tl = strlen(edits[i].text);
    memcpy(out + w, edits[i].text, tl);
    w += tl;
    at = edits[i].end;
  }
  memcpy(out + w, text + at, len - at);
  w += len - at;
  out[w] = '\0';
  *outlen = (uint32_t)w;
  return out;
}

/* Whether two edits touch: adjacent edits and insertions at one point count, so that the order
 * two fixes' texts land in never depends on which was found first. */
static bool kl_fix_touch(const struct kl_edit *x, const struct kl_edit *y) {
  return x->start <= y->end && y->start <= x->end;
}

static bool kl_fix_conflict(const struct kl_fix *f, const struct kl_edit *taken, size_t ntaken) {
  for (size_t i = 0; i < f->nedits; i++)
    for (size_t k = 0; k < ntaken; k++)
      if (kl_fix_touch(&f->edits[i], &taken[k])) return true;
  return false;
}

static int kl_fix_edit_cmp(const void *pa, const void *pb) {
  const struct kl_edit *a = pa, *b = pb;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  return a->end < b->end ? -1 : a->end > b->end;
}

/* Whether f's edits are what struct kl_fix promises, within a text of len bytes: a rule's slip
 * costs its fix, not the file. */
static bool kl_fix_valid(const struct kl_fix *f, uint32_t len) {
  for (size_t i = 0; i < f->nedits; i++) {
    const struct kl_edit *e = &f->edits[i];
    if (e->start > e->end || e->end > len || !e->text || (i && e->start < f->edits[i - 1].end))
      return false;
  }
  return f->nedits > 0;
}

/* Where file offset p of the text before edits (sorted) lands after them; *rewritten tells
 * whether p was in a range an edit replaced (it then lands at the replacement's start). */
static uint32_t kl_fix_moved(uint32_t p, const struct kl_edit *edits, size_t n, bool *rewritten) {
  int64_t delta = 0;
  *rewritten = false;
  for (size_t i = 0; i < n; i++) {
    const struct kl_edit *e = &edits[i];
    if (e->end <= p) {
      delta += (int64_t)strlen(e->text) - (int64_t)(e->end - e->start);
    } else if (e->start <= p) {
      *rewritten = true;
      return (uint32_t)(e->start + delta);
    }
  }
  return (uint32_t)(p + delta);
}

/* One state of the text being fixed: its source, findings and parse-quality figure, in arena
 * (NULL for the caller's own). */
struct kl_fix_state {
  struct kl_arena *arena;
  struct kl_source src;
  struct kl_diag_list diags;
  unsigned nerrors;
};

/* Lint text as src's contents into a new state; -1 when it cannot be. */
static int kl_fix_lint(const struct kl_source *orig, const struct kl_settings *s,
                       const struct kl_dispatch_list *host, const char *text, uint32_t len,
                       struct kl_fix_state *st) {
  char err[512];
  st->arena = kl_arena_new();
  kl_diag_list_init(&st->diags, st->arena);
  int rc = kl_source_from_memory(st->arena, orig->path, text, len, &st->src, err, sizeof err);
  /* The language the file was linted as (a named file of any extension is MSL). */
  st->src.lang = orig->lang;
  if (rc == 0)
    rc = kl_engine_lint_counted(st->arena, &st->src, s, host, &st->diags, &st->nerrors, err,
                                sizeof err);
  if (rc != 0) {
    kl_arena_delete(st->arena);
    st->arena = NULL;
    return -1;
  }
  return 0;
}

/* Whether the finding d of the state before (fixed by edits) is gone from after. */
static bool kl_fix_gone(const struct kl_diag *d, const struct kl_edit *edits, size_t n,
                        const struct kl_fix_state *after) {
  bool rewritten;
  uint32_t p = kl_fix_moved(d->span.start, edits, n, &rewritten);
  /* Where the finding's own text was replaced, a finding of the same rule there is another one
   * (the next id of a suppression comment) unless it says the same. */
  for (size_t i = 0; i < after->diags.n; i++) {
    const struct kl_diag *e = &after->diags.items[i];
    if (e->span.start == p && !strcmp(e->rule_id, d->rule_id) &&
        (!rewritten || !strcmp(e->message, d->message)))
      return false;
  }
  return true;
}

/* A fix that failed its check, by what it says: it is not tried again in a later round. */
struct kl_fix_dropped {
  char **keys;
  size_t n, cap;
};

static char *kl_fix_key(const struct kl_diag *d) {
  size_t n = strlen(d->rule_id) + strlen(d->message) + strlen(d->fix->title) + 3;
  char *k = kl_arena_xmalloc(n);
  snprintf(k, n, "%s\n%s\n%s", d->rule_id, d->message, d->fix->title);
  return k;
}

static bool kl_fix_is_dropped(const struct kl_fix_dropped *dr, const struct kl_diag *d) {
  char *k = kl_fix_key(d);
  bool found = false;
  for (size_t i = 0; i < dr->n && !found; i++) found = !strcmp(dr->keys[i], k);
  free(k);
  return found;
}

/* Apply the fixes of cur's findings listed in pick (npick of them) and lint the result into
 * next; true when it is accepted: no more ERROR nodes and every one of those findings gone.
 * *gone counts the findings with a fix that are gone (one edit may fix several). */
static bool kl_fix_try(const struct kl_fix_state *cur, const struct kl_settings *s,
                       const struct kl_dispatch_list *host, const size_t *pick, size_t npick,
                       struct kl_fix_state *next, size_t *gone) {
  size_t n = 0;
  for (size_t i = 0; i < npick; i++) n += cur->diags.items[pick[i]].fix->nedits;
  struct kl_edit *edits = kl_arena_xmalloc((n ? n : 1) * sizeof *edits);
  n = 0;
  for (size_t i = 0; i < npick; i++) {
    const struct kl_fix *f = cur->diags.items[pick[i]].fix;
    for (size_t k = 0; k < f->nedits; k++) edits[n++] = f->edits[k];
  }
  qsort(edits, n, sizeof *edits, kl_fix_edit_cmp);
  struct kl_arena *tmp = kl_arena_new();
  uint32_t len;
  char *text = kl_fix_edit_text(tmp, cur->src.text, cur->src.len, edits, n, &len);
  bool ok = kl_fix_lint(&cur->src, s, host, text, len, next) == 0;
  kl_arena_delete(tmp);
  ok = ok && next->nerrors <= cur->nerrors;
  for (size_t i = 0; i < npick && ok; i++)
    ok = kl_fix_gone(&cur->diags.items[pick[i]], edits, n, next);
  *gone = 0;
  for (size_t i = 0; i < cur->diags.n && ok; i++)
    *gone += cur->diags.items[i].fix && kl_fix_gone(&cur->diags.items[i], edits, n, next);
  free(edits);
  if (!ok && next->arena) {
    kl_arena_delete(next->arena);
    next->arena = NULL;
  }
  return ok;
}

int kl_fix_run(const struct kl_source *src, const struct kl_settings *s,
               const struct kl_dispatch_list *host, const struct kl_diag_list *diags,
               unsigned nerrors, struct kl_fix_result *out) {
  memset(out, 0, sizeof *out);
  if (src->lang != KL_LANG_METAL && src->lang != KL_LANG_PYTHON) return -1;
  struct kl_fix_state cur = {NULL, *src, *diags, nerrors};
  struct kl_fix_dropped dropped = {NULL, 0, 0};
  for (int round = 0; round < KL_FIX_ROUNDS; round++) {
    /* The fixes that do not touch one another, first found first. */
    size_t *pick = kl_arena_xmalloc((cur.diags.n ? cur.diags.n : 1) * sizeof *pick);
    size_t npick = 0, ntaken = 0, captaken = 0;
    struct kl_edit *taken = NULL;
    for (size_t i = 0; i < cur.diags.n; i++) {
      const struct kl_diag *d = &cur.diags.items[i];
      if (!d->fix || !kl_fix_valid(d->fix, cur.src.len) || kl_fix_conflict(d->fix, taken, ntaken) ||
          kl_fix_is_dropped(&dropped, d))
        continue;
      pick[npick++] = i;
      for (size_t k = 0; k < d->fix->nedits; k++) {
        KL_XVEC_PUSH(taken, ntaken, captaken);
        taken[ntaken++] = d->fix->edits[k];
      }
    }
    free(taken);
    struct kl_fix_state next = {0};
    size_t gone = 0;
    bool ok = npick && kl_fix_try(&cur, s, host, pick, npick, &next, &gone);
    if (!ok && npick) {
      /* Some fix of the round is wrong: each is tried alone, the failures dropped, and the
       * round is the first that passes alone (the others come back in the next round). */
      size_t good = SIZE_MAX;
      for (size_t i = 0; i < npick; i++) {
        struct kl_fix_state one = {0};
        size_t one_gone;
        if (kl_fix_try(&cur, s, host, &pick[i], 1, &one, &one_gone)) {
          if (good == SIZE_MAX) {
            good = i;
            next = one;
            gone = one_gone;
            continue;
          }
          kl_arena_delete(one.arena);
        } else {
          KL_XVEC_PUSH(dropped.keys, dropped.n, dropped.cap);
          dropped.keys[dropped.n++] = kl_fix_key(&cur.diags.items[pick[i]]);
        }
      }
      ok = good != SIZE_MAX;
    }
    free(pick);
    if (!ok) break;
    if (cur.arena) kl_arena_delete(cur.arena);
    cur = next;
    out->nfixed += gone;
    out->changed = true;
  }
  for (size_t i = 0; i < dropped.n; i++) free(dropped.keys[i]);
  free(dropped.keys);
  if (!out->changed) return 0;
  /* What is left could not be applied: it is not offered as a fix again. */
  for (size_t i = 0; i < cur.diags.n; i++) cur.diags.items[i].fix = NULL;
  out->arena = cur.arena;
  out->src = cur.src;
  out->diags = cur.diags;
  return 0;
}

/* ---- the unified diff ---- */

struct kl_fix_lines {
  const char **p;
  uint32_t *len; /* with the '\n', when there is one */
  size_t n;
};

static void kl_fix_split(struct kl_arena *a, const char *t, uint32_t len, struct kl_fix_lines *l) {
  size_t n = 0;
  for (uint32_t i = 0; i < len; i++) n += t[i] == '\n';
  n += len && t[len - 1] != '\n';
  l->p = kl_arena_alloc(a, (n + 1) * sizeof *l->p);
  l->len = kl_arena_alloc(a, (n + 1) * sizeof *l->len);
  l->n = 0;
  for (uint32_t i = 0; i < len;) {
    uint32_t j = i;
    while (j < len && t[j] != '\n') j++;
    if (j < len) j++;
    l->p[l->n] = t + i;
    l->len[l->n++] = j - i;
    i = j;
  }
}

static bool kl_fix_same(const struct kl_fix_lines *x, size_t i, const struct kl_fix_lines *y,
                        size_t j) {
  return x->len[i] == y->len[j] && !memcmp(x->p[i], y->p[j], x->len[i]);
}

enum { KL_DIFF_EQ, KL_DIFF_DEL, KL_DIFF_INS };

struct kl_fix_op {
  int kind;
  size_t i, j; /* line of old (EQ, DEL) and of new (EQ, INS) */
};

struct kl_fix_buf {
  struct kl_arena *a;
  char *s;
  size_t n, cap;
};

static void kl_fix_put(struct kl_fix_buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->n + n + 1) cap *= 2;
    b->s = kl_arena_grow(b->a, b->s, b->cap, cap, 1);
    b->cap = cap;
  }
  memcpy(b->s + b->n, s, n);
  b->n += n;
  b->s[b->n] = '\0';
}

static void kl_fix_line(struct kl_fix_buf *b, char mark, const char *p, uint32_t len) {
  kl_fix_put(b, &mark, 1);
  kl_fix_put(b, p, len);
  if (!len || p[len - 1] != '\n') kl_fix_put(b, "\n\\ No newline at end of file\n", 29);
}

/* Lines of the changed middle beyond which it is shown as one block replaced, not aligned line
 * by line (the table an LCS needs grows with the square). */
#define KL_DIFF_LCS_MAX 4000

const char *kl_fix_diff(struct kl_arena *a, const char *path, const char *old, uint32_t oldlen,
                        const char *new, uint32_t newlen) {
  struct kl_fix_lines x, y;
  kl_fix_split(a, old, oldlen, &x);
  kl_fix_split(a, new, newlen, &y);
  size_t pre = 0;
  while (pre < x.n && pre < y.n && kl_fix_same(&x, pre, &y, pre)) pre++;
  size_t suf = 0;
  while (suf < x.n - pre && suf < y.n - pre && kl_fix_same(&x, x.n - 1 - suf, &y, y.n - 1 - suf))
    suf++;
  if (pre == x.n && pre == y.n) return "";
  size_t m = x.n - pre - suf, k = y.n - pre - suf;
  /* The edit script over every line: equal prefix, the middle by LCS, equal suffix. */
  struct kl_fix_op *ops = kl_arena_alloc(a, (x.n + y.n + 1) * sizeof *ops);
  size_t nops = 0;
  for (size_t i = 0; i < pre; i++) ops[nops++] = (struct kl_fix_op){KL_DIFF_EQ, i, i};
  if (m && k && m <= KL_DIFF_LCS_MAX && k <= KL_DIFF_LCS_MAX) {
    /* L[i][j]: the LCS of old middle lines i.. and new middle lines j.. */
    uint32_t *L = kl_arena_xmalloc((m + 1) * (k + 1) * sizeof *L);
#define KL_L(i, j) L[(i) * (k + 1) + (j)]
    for (size_t i = m + 1; i-- > 0;)
      for (size_t j = k + 1; j-- > 0;) {
        if (i == m || j == k)
          KL_L(i, j) = 0;
        else if (kl_fix_same(&x, pre + i, &y, pre + j))
          KL_L(i, j) = KL_L(i + 1, j + 1) + 1;
        else
          KL_L(i, j) = KL_L(i + 1, j) > KL_L(i, j + 1) ? KL_L(i + 1, j) : KL_L(i, j + 1);
      }
    size_t i = 0, j = 0;
    while (i < m || j < k) {
      if (i < m && j < k && kl_fix_same(&x, pre + i, &y, pre + j)) {
        ops[nops++] = (struct kl_fix_op){KL_DIFF_EQ, pre + i++, pre + j++};
      } else if (j == k || (i < m && KL_L(i + 1, j) >= KL_L(i, j + 1))) {
        ops[nops++] = (struct kl_fix_op){KL_DIFF_DEL, pre + i++, pre + j};
      } else {
        ops[nops++] = (struct kl_fix_op){KL_DIFF_INS, pre + i, pre + j++};
      }
    }
#undef KL_L
    free(L);
  } else {
    for (size_t i = 0; i < m; i++) ops[nops++] = (struct kl_fix_op){KL_DIFF_DEL, pre + i, pre};
    for (size_t j = 0; j < k; j++) ops[nops++] = (struct kl_fix_op){KL_DIFF_INS, pre + m, pre + j};
  }
  for (size_t s = 0; s < suf; s++)
    ops[nops++] = (struct kl_fix_op){KL_DIFF_EQ, x.n - suf + s, y.n - suf + s};

  struct kl_fix_buf b = {a, NULL, 0, 0};
  const char *shown = path;
  while (shown[0] == '.' && shown[1] == '/') shown += 2;
  char *head = kl_arena_printf(a, "--- a/%s\n+++ b/%s\n", shown, shown);
  kl_fix_put(&b, head, strlen(head));
  const size_t ctx = 3;
  size_t o = 0;
  while (o < nops) {
    while (o < nops && ops[o].kind == KL_DIFF_EQ) o++;
    if (o == nops) break;
    /* A hunk: from ctx lines before this change to ctx lines after the last change that is at
     * most 2 * ctx equal lines from the one before it. */
    size_t from = o > ctx ? o - ctx : 0, to = o;
    for (;;) {
      while (to < nops && ops[to].kind != KL_DIFF_EQ) to++;
      size_t eq = to;
      while (eq < nops && ops[eq].kind == KL_DIFF_EQ) eq++;
      if (eq < nops && eq - to <= 2 * ctx) {
        to = eq;
        continue;
      }
      to = to + ctx < nops ? to + ctx : nops;
      break;
    }
    size_t oc = 0, nc = 0;
    for (size_t q = from; q < to; q++) {
      oc += ops[q].kind != KL_DIFF_INS;
      nc += ops[q].kind != KL_DIFF_DEL;
    }
    /* An empty side is numbered by the line before it (GNU diff, and what patch expects). */
    size_t os = ops[from].i + (oc ? 1 : 0), ns = ops[from].j + (nc ? 1 : 0);
    char *hh = kl_arena_printf(a, "@@ -%zu,%zu +%zu,%zu @@\n", os, oc, ns, nc);
    kl_fix_put(&b, hh, strlen(hh));
    for (size_t q = from; q < to; q++) {
      const struct kl_fix_op *op = &ops[q];
      if (op->kind == KL_DIFF_EQ)
        kl_fix_line(&b, ' ', x.p[op->i], x.len[op->i]);
      else if (op->kind == KL_DIFF_DEL)
        kl_fix_line(&b, '-', x.p[op->i], x.len[op->i]);
      else
        kl_fix_line(&b, '+', y.p[op->j], y.len[op->j]);
    }
    o = to;
  }
  return b.s;
}

/* ---- writing ---- */

int kl_fix_write(const char *path, const char *text, size_t len, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "cannot write fixes: %s", strerror(errno));
    return -1;
  }
  /* A read-only file is the user's word that it is not to be changed, even for root. */
  if (!S_ISREG(st.st_mode) || !(st.st_mode & 0222)) {
    snprintf(err, errlen, "cannot write fixes: %s",
             S_ISREG(st.st_mode) ? "the file is read-only" : "not a regular file");
    return -1;
  }
  char *target = realpath(path, NULL);
  if (!target) {
    snprintf(err, errlen, "cannot write fixes: %s", strerror(errno));
    return -1;
  }
  const char *slash = strrchr(target, '/');
  size_t dlen = slash ? (size_t)(slash - target) + 1 : 0;
  size_t tlen = strlen(target) + 16;
  char *tmp = kl_arena_xmalloc(tlen);
  snprintf(tmp, tlen, "%.*s.%s.XXXXXX", (int)dlen, target, target + dlen);
  int fd = mkstemp(tmp);
  int rc = -1;
  if (fd < 0) {
    snprintf(err, errlen, "cannot write fixes: %s", strerror(errno));
    goto out;
  }
  size_t done = 0;
  while (done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  if (done < len || fchmod(fd, st.st_mode & 07777) != 0 || fsync(fd) != 0) {
    snprintf(err, errlen, "cannot write fixes: %s", strerror(errno));
    close(fd);
    unlink(tmp);
    goto out;
  }
  if (close(fd) != 0 || rename(tmp, target) != 0) {
    snprintf(err, errlen, "cannot write fixes: %s", strerror(errno));
    unlink(tmp);
    goto out;
  }
  rc = 0;
out:
  free(tmp);
  free(target);
  return rc;
}
