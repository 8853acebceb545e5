/* Expansions kept for reuse (see kept.h). */
#include "grammar/kept.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* What one kl_expand_keep gave, kept for the next kl_expand_text of the same text
 * from the same include folder in the same generation, which takes it instead of expanding
 * again: the facts pass of a run expands the files that their lint expands once more. The text
 * is the key (compared whole, not by hash). A run keeps many at once, so an entry is compact:
 * its strings are offsets into one buffer, and an instantiation's names and arguments, which
 * repeat ("float", "32"), are stored once. */
struct kl_kept_inst {
  uint32_t function, host_name; /* offsets in strs; host_name UINT32_MAX for none */
  uint32_t text, textlen;       /* text UINT32_MAX for none */
  uint32_t args, ntargs;        /* the argument offsets are args[args, args + ntargs) */
  uint32_t start, end;
  bool placeholder;
};

struct kl_kept {
  char *dir; /* include_dir, or NULL */
  char *text;
  uint32_t len;
  uint32_t gen;
  char *strs; /* every string, NUL-terminated; the expansion's buffer first */
  size_t nstrs;
  bool has_out; /* whether the expansion gave a buffer (outlen bytes at strs) */
  uint32_t outlen;
  struct kl_offmap_seg *segs;
  size_t nsegs;
  struct kl_kept_inst *insts;
  size_t ninsts;
  uint32_t *args;
  size_t nargs;
  size_t bytes; /* what the entry holds, counted against KL_KEPT_BUDGET */
  struct kl_kept *next;
};

/* Entries wait from the facts pass until the lint reaches their file, so together they are
 * bounded: past the budget an expansion is not kept, and its lint expands the text again. */
enum { KL_KEPT_BUCKETS = 64, KL_KEPT_BUDGET = 16 << 20 };
static struct kl_kept *kl_kept_table[KL_KEPT_BUCKETS];
static size_t kl_kept_bytes;
/* Guards the table; taken alone, or inside the header cache's lock (kl_expand_forget_paths). */
static pthread_mutex_t kl_kept_lock = PTHREAD_MUTEX_INITIALIZER;
/* Bumped by kl_kept_forget, as the header cache's generation is: an entry is only taken in
 * the generation that kept it. */
static uint32_t kl_kept_gen = 1;

/* A growing string buffer (malloc'd), as the expansion's output buffer. */
struct kl_kept_buf {
  char *p;
  size_t n, cap;
};

static void kl_kept_buf_put(struct kl_kept_buf *o, const char *s, size_t n) {
  if (o->n + n + 1 > o->cap) {
    while (o->n + n + 1 > o->cap) o->cap = o->cap ? o->cap * 2 : 4096;
    o->p = kl_arena_xrealloc(o->p, o->cap);
  }
  memcpy(o->p + o->n, s, n);
  o->n += n;
}

/* FNV-1a, as the expansion hashes macro names. */
static uint32_t kl_kept_hash(const char *s, uint32_t n) {
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

void kl_kept_free(struct kl_kept *k) {
  free(k->dir);
  free(k->text);
  free(k->strs);
  free(k->segs);
  free(k->insts);
  free(k->args);
  free(k);
}

void kl_kept_forget(void) {
  pthread_mutex_lock(&kl_kept_lock);
  for (size_t i = 0; i < KL_KEPT_BUCKETS; i++) {
    for (struct kl_kept *e = kl_kept_table[i], *next; e; e = next) {
      next = e->next;
      kl_kept_free(e);
    }
    kl_kept_table[i] = NULL;
  }
  kl_kept_bytes = 0;
  kl_kept_gen++;
  pthread_mutex_unlock(&kl_kept_lock);
}

/* The strings of a kept entry as they are put in: each distinct one once. */
struct kl_kept_strs {
  struct kl_kept_buf buf;
  uint32_t *slots; /* open addressing: offset + 1, 0 for empty; a power of two in size */
  size_t n, cap;
};

static uint32_t kl_kept_add(struct kl_kept_strs *t, const char *s, size_t n) {
  uint32_t off = (uint32_t)t->buf.n;
  kl_kept_buf_put(&t->buf, s, n);
  kl_kept_buf_put(&t->buf, "", 1);
  return off;
}

static uint32_t kl_kept_intern(struct kl_kept_strs *t, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  if (2 * (t->n + 1) > t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) abort();
    for (size_t i = 0; i < t->cap; i++) {
      if (!t->slots[i]) continue;
      const char *o = t->buf.p + t->slots[i] - 1;
      size_t h = kl_kept_hash(o, (uint32_t)strlen(o)) & (cap - 1);
      while (slots[h]) h = (h + 1) & (cap - 1);
      slots[h] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
  }
  size_t h = kl_kept_hash(s, n) & (t->cap - 1);
  for (; t->slots[h]; h = (h + 1) & (t->cap - 1))
    if (!strcmp(t->buf.p + t->slots[h] - 1, s)) return t->slots[h] - 1;
  uint32_t off = kl_kept_add(t, s, n);
  t->n++;
  t->slots[h] = off + 1;
  return off;
}

/* Keep what kl_expand_text gave for text (out, the map's segments, the instantiations). */
void kl_kept_put(const char *text, uint32_t len, const char *include_dir, const char *out,
                 uint32_t outlen, const struct kl_offmap *map, const struct kl_inst *insts,
                 size_t ninsts) {
  struct kl_kept *k = kl_arena_xmalloc(sizeof *k);
  memset(k, 0, sizeof *k);
  k->dir = include_dir ? kl_arena_xstrdup(include_dir) : NULL;
  k->text = kl_arena_xstrndup(text, len);
  k->len = len;
  struct kl_kept_strs t = {0};
  if (out) kl_kept_add(&t, out, outlen);
  k->has_out = out != NULL;
  k->outlen = outlen;
  k->nsegs = map->n;
  k->segs = kl_arena_xmalloc(map->n * sizeof *map->segs);
  if (map->n) memcpy(k->segs, map->segs, map->n * sizeof *map->segs);
  k->ninsts = ninsts;
  k->insts = kl_arena_xmalloc(ninsts * sizeof *k->insts);
  size_t cap_args = 0;
  for (size_t i = 0; i < ninsts; i++) {
    const struct kl_inst *in = &insts[i];
    struct kl_kept_inst *c = &k->insts[i];
    c->function = kl_kept_intern(&t, in->function);
    c->host_name = in->host_name ? kl_kept_intern(&t, in->host_name) : UINT32_MAX;
    c->text = in->text ? kl_kept_add(&t, in->text, in->textlen) : UINT32_MAX;
    c->textlen = in->textlen;
    c->args = (uint32_t)k->nargs;
    c->ntargs = (uint32_t)in->ntargs;
    for (size_t j = 0; j < in->ntargs; j++) {
      KL_XVEC_PUSH(k->args, k->nargs, cap_args);
      k->args[k->nargs++] = kl_kept_intern(&t, in->targs[j]);
    }
    c->start = in->start;
    c->end = in->end;
    c->placeholder = in->placeholder;
  }
  free(t.slots);
  /* Exact sizes: entries stay until the lint reaches their file. */
  k->strs = kl_arena_xrealloc(t.buf.p, t.buf.n);
  k->nstrs = t.buf.n;
  k->args = kl_arena_xrealloc(k->args, k->nargs * sizeof *k->args);
  k->bytes = sizeof *k + len + k->nstrs + k->nsegs * sizeof *k->segs +
             k->ninsts * sizeof *k->insts + k->nargs * sizeof *k->args;
  struct kl_kept **slot = &kl_kept_table[len % KL_KEPT_BUCKETS];
  pthread_mutex_lock(&kl_kept_lock);
  bool room = kl_kept_bytes + k->bytes <= KL_KEPT_BUDGET;
  if (room) {
    kl_kept_bytes += k->bytes;
    k->gen = kl_kept_gen;
    k->next = *slot;
    *slot = k;
  }
  pthread_mutex_unlock(&kl_kept_lock);
  if (!room) kl_kept_free(k);
}

/* The kept expansion of text from include_dir in this generation, unlinked; NULL if none. */
struct kl_kept *kl_kept_take(const char *text, uint32_t len, const char *include_dir) {
  struct kl_kept **slot = &kl_kept_table[len % KL_KEPT_BUCKETS], *k = NULL;
  pthread_mutex_lock(&kl_kept_lock);
  for (struct kl_kept **p = slot; *p; p = &(*p)->next) {
    struct kl_kept *e = *p;
    if (e->len != len || e->gen != kl_kept_gen || !e->dir != !include_dir ||
        (include_dir && strcmp(e->dir, include_dir)) || memcmp(e->text, text, len))
      continue;
    *p = e->next;
    kl_kept_bytes -= e->bytes;
    k = e;
    break;
  }
  pthread_mutex_unlock(&kl_kept_lock);
  return k;
}

/* Give back what the kept expansion gave, copied into the arena, as kl_expand_text would. */
char *kl_kept_give(struct kl_arena *a, const struct kl_kept *k, uint32_t *outlen,
                   struct kl_offmap *map, struct kl_inst **insts, size_t *ninsts) {
  char *strs = kl_arena_alloc_raw(a, k->nstrs);
  if (k->nstrs) memcpy(strs, k->strs, k->nstrs);
  kl_offmap_init(map, a);
  if (k->nsegs) {
    map->segs = kl_arena_alloc_raw(a, k->nsegs * sizeof *map->segs);
    memcpy(map->segs, k->segs, k->nsegs * sizeof *map->segs);
    map->n = map->cap = k->nsegs;
  }
  if (k->ninsts) {
    struct kl_inst *v = kl_arena_alloc(a, k->ninsts * sizeof *v);
    const char **args = kl_arena_alloc_raw(a, (k->nargs ? k->nargs : 1) * sizeof *args);
    for (size_t j = 0; j < k->nargs; j++) args[j] = strs + k->args[j];
    for (size_t i = 0; i < k->ninsts; i++) {
      const struct kl_kept_inst *c = &k->insts[i];
      v[i].function = strs + c->function;
      v[i].host_name = c->host_name == UINT32_MAX ? NULL : strs + c->host_name;
      v[i].targs = c->ntargs ? args + c->args : NULL;
      v[i].ntargs = c->ntargs;
      v[i].start = c->start;
      v[i].end = c->end;
      v[i].text = c->text == UINT32_MAX ? NULL : strs + c->text;
      v[i].textlen = c->textlen;
      v[i].placeholder = c->placeholder;
    }
    *insts = v;
    *ninsts = k->ninsts;
  }
  if (!k->has_out) return NULL;
  *outlen = k->outlen;
  return strs;
}
