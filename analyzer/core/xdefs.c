#include "analyzer/core/xdefs.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/node.h"
#include "grammar/dialect.h"
#include "grammar/expand.h"

/* Bounds on what one unit's lint reads for others' definitions: a large project's include graph
 * (MLX's kernels reach dozens of headers) is listed, but few of its headers are ever parsed. */
enum {
  KL_XDEFS_MAX_HEADERS = 128,  /* headers listed */
  KL_XDEFS_MAX_PARSED = 12,    /* headers parsed */
  KL_XDEFS_MAX_INCLUDERS = 16, /* includers whose includes a header sees */
  KL_XDEFS_MAX_BYTES = 1u << 20
};

/* What a call in a header function's body means to kl_xdefs_body_scope: a built-in that differs
 * lane by lane, a call of a function of the same header, or of a name the headers may define.
 * Calls that can add nothing are left out. */
enum { KL_XDEFS_CALL_THREAD, KL_XDEFS_CALL_LOCAL, KL_XDEFS_CALL_EXTERN };

struct kl_xdefs_call {
  uint32_t kind;
  uint32_t target;  /* LOCAL: the callee's index in the header's functions */
  const char *name; /* EXTERN: the callee's name, namespace prefix removed */
};

struct kl_xdefs_fn {
  const char *name; /* NULL unless a definition by name: no member, and a body */
  uint32_t call0, ncalls;
};

/* A parsed header, as its answers need it: its functions in the model's order (an index here
 * is one in its model's functions), and their calls. Built from the model; then the tree and
 * the model can go. */
struct kl_xdefs_sum {
  struct kl_xdefs_fn *fns;
  struct kl_xdefs_call *calls;
  uint32_t nfns, ncalls;
};

/* A header's parse and model, in an arena of its own: one unit's lint holds it while it runs,
 * then it waits in the run's pool for the next unit that includes the same text. */
struct kl_xdefs_tree {
  struct kl_arena *a;
  const char *path; /* real path */
  uint64_t hash;    /* of src.text */
  struct kl_source src;
  struct kl_unit unit;
  struct kl_model model;
  struct kl_expand_deps deps; /* what its parse read of other headers */
  uint32_t checked;           /* the generation in which deps last held */
  struct kl_xdefs_tree *next; /* in the pool */
};

struct kl_xdefs_hdr {
  const char *path; /* real path */
  bool read;
  bool parsed; /* counted against KL_XDEFS_MAX_PARSED, and sum is set */
  bool hashed; /* hash is that of src's text */
  uint64_t hash;
  struct kl_source src; /* its text, once read (len 0 when unreadable) */
  const struct kl_xdefs_sum *sum;
  struct kl_xdefs_tree *tree; /* the parse this lint holds, or NULL */
};

/* Where a definition is: header hdr's function fn; hdr < 0 for none. */
struct kl_xdefs_loc {
  int32_t hdr;
  uint32_t fn;
};

/* One question asked, and its answer. */
struct kl_xdefs_ans {
  const char *owner, *name;
  struct kl_xdefs_loc loc;
};

/* One function's kl_xdefs_result_scope, remembered (the passes ask at every evaluation). */
struct kl_xdefs_scope {
  const char *name;
  enum kl_scope scope;
  bool found;
};

struct kl_xdefs {
  struct kl_arena *a;
  struct kl_xdefs_scope *scopes;
  size_t nscopes, cap_scopes;
  const struct kl_source *src;
  const char *const *includers;
  size_t nincluders;
  bool listed;
  struct kl_xdefs_hdr *hdrs;
  size_t nhdrs, nparsed;
  struct kl_xdefs_ans *ans;
  size_t nans, cap_ans;
};

/* ---- The run's summaries --------------------------------------------------------------------- */

/* One summary kept for the run, in one malloc'd block with its strings. */
struct kl_xdefs_entry {
  char *path;
  uint32_t len;
  uint64_t hash;
  struct kl_xdefs_sum sum;
  struct kl_expand_deps deps; /* what the header's parse read of other headers */
  uint32_t checked;           /* the generation in which deps last held */
  size_t bytes;
  struct kl_xdefs_entry *next;
};

enum { KL_XDEFS_BUCKETS = 64, KL_XDEFS_CACHE_BYTES = 4 << 20 };
static struct kl_xdefs_entry *kl_xdefs_table[KL_XDEFS_BUCKETS];
/* Entries whose headers' includes changed (only the language server's generations change):
 * out of the table, and freed by the next kl_xdefs_sweep, when this lint no longer reads them. */
static struct kl_xdefs_entry *kl_xdefs_retired;
/* Whether header parses record what they read (kl_xdefs_track): a command-line run's
 * generation never changes, so it would only pay for records never checked. */
static bool kl_xdefs_tracking;
static size_t kl_xdefs_cache_bytes;
static pthread_mutex_t kl_xdefs_lock = PTHREAD_MUTEX_INITIALIZER;

/* The pool of parses no lint holds, most recently given back first. Files come in path order,
 * so the next unit is most often a sibling that includes the same headers: a few kept suffice.
 * A parse holds some 30 times its text (tree and model), so the text is bounded, each header's
 * and all of them: the pool must not add much to the run's peak, which a large unit makes
 * while the pool still holds its predecessors' headers. */
enum {
  KL_XDEFS_POOL_TREES = 8,
  KL_XDEFS_POOL_TREE_BYTES = 64 << 10,
  KL_XDEFS_POOL_BYTES = 192 << 10,
  KL_XDEFS_POOL_FLUSH = 128 << 10 /* a unit this long empties the pool first */
};
static struct kl_xdefs_tree *kl_xdefs_pool;

/* FNV-1a, 64 bits: a header's text is compared by length and this. */
static uint64_t kl_xdefs_hash(const char *s, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static size_t kl_xdefs_bucket(const char *path) {
  return (size_t)(kl_xdefs_hash(path, strlen(path)) % KL_XDEFS_BUCKETS);
}

/* Whether what a header's parse read of other headers (deps, last found to hold in generation
 * *checked) still holds: asked again once per generation, that is once per lint of the language
 * server, for the summaries that lint uses. */
static bool kl_xdefs_holds(const struct kl_expand_deps *deps, uint32_t *checked, uint32_t gen) {
  if (*checked == gen) return true;
  if (!kl_expand_deps_hold(deps)) return false;
  *checked = gen;
  return true;
}

/* The summary kept for path with that text, or NULL. */
static const struct kl_xdefs_sum *kl_xdefs_cached(const char *path, uint32_t len, uint64_t hash) {
  const struct kl_xdefs_sum *s = NULL;
  uint32_t gen = kl_expand_generation();
  pthread_mutex_lock(&kl_xdefs_lock);
  for (struct kl_xdefs_entry **at = &kl_xdefs_table[kl_xdefs_bucket(path)]; *at && !s;) {
    struct kl_xdefs_entry *e = *at;
    if (e->len != len || e->hash != hash || strcmp(e->path, path)) {
      at = &e->next;
    } else if (kl_xdefs_holds(&e->deps, &e->checked, gen)) {
      s = &e->sum;
    } else {
      *at = e->next;
      e->next = kl_xdefs_retired;
      kl_xdefs_retired = e;
      kl_xdefs_cache_bytes -= e->bytes;
    }
  }
  pthread_mutex_unlock(&kl_xdefs_lock);
  return s;
}

/* A copy of d, for an entry that outlives the parse that recorded it. */
static struct kl_expand_deps kl_xdefs_deps_copy(const struct kl_expand_deps *d) {
  struct kl_expand_deps c = {NULL, 0, 0};
  if (!d->n) return c;
  c.items = kl_arena_xmalloc(d->n * sizeof *c.items);
  for (size_t i = 0; i < d->n; i++) {
    c.items[i] = d->items[i];
    c.items[i].path = kl_arena_xstrdup(d->items[i].path);
    c.items[i].real = d->items[i].real ? kl_arena_xstrdup(d->items[i].real) : NULL;
  }
  c.n = c.cap = d->n;
  return c;
}

/* Keep a copy of s for path with that text, within the budget. Two threads may summarise one
 * header at once: the second copy is not kept (both are the same). */
static void kl_xdefs_keep(const char *path, uint32_t len, uint64_t hash,
                          const struct kl_xdefs_sum *s, const struct kl_xdefs_tree *t) {
  size_t chars = strlen(path) + 1;
  for (uint32_t i = 0; i < s->nfns; i++) chars += s->fns[i].name ? strlen(s->fns[i].name) + 1 : 0;
  for (uint32_t i = 0; i < s->ncalls; i++)
    chars += s->calls[i].name ? strlen(s->calls[i].name) + 1 : 0;
  size_t bytes = sizeof(struct kl_xdefs_entry) + s->nfns * sizeof *s->fns +
                 s->ncalls * sizeof *s->calls + chars;
  /* The record of what the parse read is copied with it: counted against the budget too. */
  for (size_t i = 0; i < t->deps.n; i++)
    bytes += sizeof *t->deps.items + strlen(t->deps.items[i].path) + 1 +
             (t->deps.items[i].real ? strlen(t->deps.items[i].real) + 1 : 0);
  pthread_mutex_lock(&kl_xdefs_lock);
  struct kl_xdefs_entry **slot = &kl_xdefs_table[kl_xdefs_bucket(path)];
  bool have = false;
  for (struct kl_xdefs_entry *e = *slot; e && !have; e = e->next)
    have = e->len == len && e->hash == hash && !strcmp(e->path, path);
  if (have || kl_xdefs_cache_bytes + bytes > KL_XDEFS_CACHE_BYTES) {
    pthread_mutex_unlock(&kl_xdefs_lock);
    return;
  }
  struct kl_xdefs_entry *e = kl_arena_xmalloc(bytes);
  struct kl_xdefs_fn *fns = (struct kl_xdefs_fn *)(e + 1);
  struct kl_xdefs_call *calls = (struct kl_xdefs_call *)(fns + s->nfns);
  char *c = (char *)(calls + s->ncalls);
  size_t n = strlen(path) + 1;
  e->path = memcpy(c, path, n);
  c += n;
  for (uint32_t i = 0; i < s->nfns; i++) {
    fns[i] = s->fns[i];
    if (!fns[i].name) continue;
    n = strlen(fns[i].name) + 1;
    fns[i].name = memcpy(c, fns[i].name, n);
    c += n;
  }
  for (uint32_t i = 0; i < s->ncalls; i++) {
    calls[i] = s->calls[i];
    if (!calls[i].name) continue;
    n = strlen(calls[i].name) + 1;
    calls[i].name = memcpy(c, calls[i].name, n);
    c += n;
  }
  e->len = len;
  e->hash = hash;
  e->sum = (struct kl_xdefs_sum){fns, calls, s->nfns, s->ncalls};
  e->deps = kl_xdefs_deps_copy(&t->deps);
  e->checked = t->checked;
  e->bytes = bytes;
  e->next = *slot;
  *slot = e;
  kl_xdefs_cache_bytes += bytes;
  pthread_mutex_unlock(&kl_xdefs_lock);
}

static void kl_xdefs_tree_free(struct kl_xdefs_tree *t) {
  kl_expand_deps_free(&t->deps);
  kl_dialect_release(&t->unit);
  kl_arena_delete(t->a);
  free(t);
}

/* The pooled parse of path with that text, taken out of the pool (one lint holds a tree at a
 * time: trees are not shared between threads), or NULL. */
static struct kl_xdefs_tree *kl_xdefs_take(const char *path, uint32_t len, uint64_t hash) {
  uint32_t gen = kl_expand_generation();
  pthread_mutex_lock(&kl_xdefs_lock);
  struct kl_xdefs_tree **at = &kl_xdefs_pool;
  while (*at && !((*at)->src.len == len && (*at)->hash == hash && !strcmp((*at)->path, path)))
    at = &(*at)->next;
  struct kl_xdefs_tree *t = *at;
  if (t) *at = t->next;
  pthread_mutex_unlock(&kl_xdefs_lock);
  /* Taken out of the pool, it is this lint's alone: checked and freed without the lock. */
  if (t && !kl_xdefs_holds(&t->deps, &t->checked, gen)) {
    kl_xdefs_tree_free(t);
    t = NULL;
  }
  return t;
}

/* Put t back in the pool, first; what the bounds leave out is freed (a copy of one already
 * there, made by a lint on another thread at the same time, too). */
static void kl_xdefs_give(struct kl_xdefs_tree *t) {
  struct kl_xdefs_tree *drop = NULL;
  pthread_mutex_lock(&kl_xdefs_lock);
  t->next = kl_xdefs_pool;
  kl_xdefs_pool = t;
  size_t n = 0, bytes = 0;
  for (struct kl_xdefs_tree **at = &kl_xdefs_pool; *at;) {
    struct kl_xdefs_tree *e = *at;
    bool same = e != t && e->src.len == t->src.len && e->hash == t->hash &&
                !strcmp(e->path, t->path);
    if (same || n >= KL_XDEFS_POOL_TREES || e->src.len > KL_XDEFS_POOL_TREE_BYTES ||
        bytes + e->src.len > KL_XDEFS_POOL_BYTES) {
      *at = e->next;
      e->next = drop;
      drop = e;
      continue;
    }
    n++;
    bytes += e->src.len;
    at = &e->next;
  }
  pthread_mutex_unlock(&kl_xdefs_lock);
  while (drop) {
    struct kl_xdefs_tree *next = drop->next;
    kl_xdefs_tree_free(drop);
    drop = next;
  }
}

/* Free the pool's parses. */
static void kl_xdefs_flush(void) {
  pthread_mutex_lock(&kl_xdefs_lock);
  struct kl_xdefs_tree *t = kl_xdefs_pool;
  kl_xdefs_pool = NULL;
  pthread_mutex_unlock(&kl_xdefs_lock);
  for (struct kl_xdefs_tree *next; t; t = next) {
    next = t->next;
    kl_xdefs_tree_free(t);
  }
}

static void kl_xdefs_entries_free(struct kl_xdefs_entry *e) {
  for (struct kl_xdefs_entry *next; e; e = next) {
    next = e->next;
    kl_expand_deps_free(&e->deps);
    free(e);
  }
}

void kl_xdefs_track(void) {
  kl_xdefs_tracking = true;
}

void kl_xdefs_sweep(void) {
  pthread_mutex_lock(&kl_xdefs_lock);
  struct kl_xdefs_entry *e = kl_xdefs_retired;
  kl_xdefs_retired = NULL;
  pthread_mutex_unlock(&kl_xdefs_lock);
  kl_xdefs_entries_free(e);
}

void kl_xdefs_forget(void) {
  kl_xdefs_flush();
  pthread_mutex_lock(&kl_xdefs_lock);
  for (size_t i = 0; i < KL_XDEFS_BUCKETS; i++) {
    kl_xdefs_entries_free(kl_xdefs_table[i]);
    kl_xdefs_table[i] = NULL;
  }
  kl_xdefs_entries_free(kl_xdefs_retired);
  kl_xdefs_retired = NULL;
  kl_xdefs_cache_bytes = 0;
  pthread_mutex_unlock(&kl_xdefs_lock);
}

/* The summary of m (a header's model) in a. */
static struct kl_xdefs_sum *kl_xdefs_summarise(struct kl_arena *a, const struct kl_model *m) {
  struct kl_xdefs_sum *s = kl_arena_alloc(a, sizeof *s);
  size_t ncalls = 0, cap = 0;
  s->nfns = (uint32_t)m->nfunctions;
  s->fns = kl_arena_alloc(a, (m->nfunctions ? m->nfunctions : 1) * sizeof *s->fns);
  for (size_t k = 0; k < m->nfunctions; k++) {
    const struct kl_function *f = &m->functions[k];
    struct kl_xdefs_fn *sf = &s->fns[k];
    sf->name = !f->owner && f->name && !kl_node_null(f->body) ? f->name : NULL;
    sf->call0 = (uint32_t)ncalls;
    for (size_t i = 0; i < f->ncalls; i++) {
      TSNode fu = kl_node_field(f->calls[i], "function");
      if (kl_node_null(fu)) continue;
      if (kl_node_is_kind(fu, KL_KIND_TEMPLATE_FUNCTION)) fu = kl_node_field(fu, "name");
      uint32_t b = ts_node_start_byte(fu), e = ts_node_end_byte(fu);
      if (kl_node_null(fu) || e <= b || e > m->unit->len || e - b > 128) continue;
      char nm[129];
      memcpy(nm, m->unit->buf + b, e - b);
      nm[e - b] = 0;
      const char *bare = kl_msl_unprefix(nm);
      const struct kl_msl_fn *bf = kl_msl_fn(bare);
      struct kl_xdefs_call c = {KL_XDEFS_CALL_THREAD, 0, NULL};
      const struct kl_function *g = f->call_targets ? f->call_targets[i] : NULL;
      /* A vote or prefix over the lanes differs lane by lane whatever it is handed; a shuffle
       * moves no more than its value, a reduction gives the SIMD group one value. */
      if (bf && bf->kind != KL_FN_BARRIER && bf->kind != KL_FN_SIMD_SHUFFLE &&
          bf->result_scope == KL_SCOPE_THREAD) {
        c.kind = KL_XDEFS_CALL_THREAD;
      } else if (!bf && !strncmp(bare, "atomic_", 7) && strcmp(bare, "atomic_store_explicit") &&
                 strcmp(bare, "atomic_thread_fence")) {
        c.kind = KL_XDEFS_CALL_THREAD; /* each thread takes its own turn at the counter */
      } else if (bf) {
        continue;
      } else if (g) {
        if (g == f || g < m->functions || g >= m->functions + m->nfunctions) continue;
        c.kind = KL_XDEFS_CALL_LOCAL;
        c.target = (uint32_t)(g - m->functions);
      } else if (kl_node_is_kind(fu, KL_KIND_IDENTIFIER)) {
        c.kind = KL_XDEFS_CALL_EXTERN;
        c.name = kl_arena_strdup(a, bare);
      } else {
        continue;
      }
      KL_VEC_PUSH(a, s->calls, ncalls, cap);
      s->calls[ncalls++] = c;
    }
    sf->ncalls = (uint32_t)ncalls - sf->call0;
  }
  s->ncalls = (uint32_t)ncalls;
  return s;
}

/* ---- One unit's questions ------------------------------------------------------------------- */

struct kl_xdefs *kl_xdefs_new(struct kl_arena *a, const struct kl_source *src,
                              const char *const *includers, size_t n) {
  struct kl_xdefs *x = kl_arena_alloc(a, sizeof *x);
  memset(x, 0, sizeof *x);
  x->a = a;
  x->src = src;
  x->includers = includers;
  x->nincluders = n;
  /* The run's peak memory is a large unit's: what the pool holds must not add to it. */
  if (src->len >= KL_XDEFS_POOL_FLUSH) kl_xdefs_flush();
  return x;
}

void kl_xdefs_free(struct kl_xdefs *x) {
  for (size_t i = 0; x && i < x->nhdrs; i++)
    if (x->hdrs[i].tree) kl_xdefs_give(x->hdrs[i].tree);
}

static const char *kl_xdefs_dir(struct kl_arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? kl_arena_strndup(a, path, (size_t)(slash - path)) : ".";
}

/* Add the headers text (of the file at path) includes to x's list, each once, src's own file
 * left out. */
static void kl_xdefs_add(struct kl_xdefs *x, const char *text, uint32_t len, const char *path,
                         const char *self) {
  const char **v;
  size_t n = kl_expand_headers(x->a, text, len, kl_xdefs_dir(x->a, path), &v);
  for (size_t i = 0; i < n && x->nhdrs < KL_XDEFS_MAX_HEADERS; i++) {
    bool seen = self && !strcmp(v[i], self);
    for (size_t k = 0; k < x->nhdrs && !seen; k++) seen = !strcmp(x->hdrs[k].path, v[i]);
    if (seen) continue;
    struct kl_xdefs_hdr *h = &x->hdrs[x->nhdrs++];
    memset(h, 0, sizeof *h);
    h->path = v[i];
  }
}

/* The headers src sees, in the order the preprocessor reaches them: its own, then its
 * includers'. */
static void kl_xdefs_list(struct kl_xdefs *x) {
  if (x->listed) return;
  x->listed = true;
  x->hdrs = kl_arena_alloc(x->a, KL_XDEFS_MAX_HEADERS * sizeof *x->hdrs);
  char rp[PATH_MAX];
  const char *self = x->src->path && realpath(x->src->path, rp) ? kl_arena_strdup(x->a, rp) : NULL;
  if (x->src->path) kl_xdefs_add(x, x->src->text, x->src->len, x->src->path, self);
  for (size_t i = 0; i < x->nincluders && i < KL_XDEFS_MAX_INCLUDERS; i++) {
    struct kl_source s;
    char err[256];
    if (kl_source_load(x->a, x->includers[i], &s, err, sizeof err) == 0)
      kl_xdefs_add(x, s.text, s.len, x->includers[i], self);
  }
}

bool kl_xdefs_order_free(struct kl_xdefs *x) {
  if (!x) return true;
  kl_xdefs_list(x);
  return x->nhdrs <= KL_XDEFS_MAX_PARSED;
}

static bool kl_xdefs_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The first occurrence of needle[0, k) in t[0, n), or NULL (memmem is not C11). */
static const char *kl_xdefs_find_in(const char *t, size_t n, const char *needle, size_t k) {
  const char *end = t + n;
  for (const char *p = t; k && end - p >= (ptrdiff_t)k; p++) {
    p = memchr(p, needle[0], (size_t)(end - p) - k + 1);
    if (!p) return NULL;
    if (!memcmp(p, needle, k)) return p;
  }
  return NULL;
}

static bool kl_xdefs_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The word that ends just before p (blanks skipped) into [*ws, p'), or false for none. */
static bool kl_xdefs_word_before(const char *t, const char *p, const char **ws, size_t *wn) {
  while (p > t && kl_xdefs_blank(p[-1])) p--;
  const char *e = p;
  while (p > t && kl_xdefs_ident(p[-1])) p--;
  *ws = p;
  *wn = (size_t)(e - p);
  return e > p;
}

/* Whether t[0, n) may define name: `struct name` or `class name` for a type; for a function,
 * `name (` after a type (a word that is no statement keyword, or a `>`, `*` or `&`), not after
 * a scope, a member access or an operator. A comment that looks so costs a parse, no more. */
static bool kl_xdefs_defines(const char *t, uint32_t n, const char *name, bool type) {
  static const char *const stmt[] = {"return", "else", "do", "case", "throw", "sizeof", "new"};
  size_t ln = strlen(name);
  const char *end = t + n;
  for (const char *p = t; ln && (p = kl_xdefs_find_in(p, (size_t)(end - p), name, ln)) != NULL;
       p++) {
    const char *q = p + ln;
    if ((p > t && kl_xdefs_ident(p[-1])) || (q < end && kl_xdefs_ident(*q))) continue;
    const char *ws;
    size_t wn;
    bool word = kl_xdefs_word_before(t, p, &ws, &wn);
    if (type) {
      if (word && ((wn == 6 && !memcmp(ws, "struct", 6)) || (wn == 5 && !memcmp(ws, "class", 5))))
        return true;
      continue;
    }
    while (q < end && kl_xdefs_blank(*q)) q++;
    if (q >= end || *q != '(') continue;
    if (word) {
      bool kw = false;
      for (size_t i = 0; i < sizeof stmt / sizeof stmt[0] && !kw; i++)
        kw = strlen(stmt[i]) == wn && !memcmp(stmt[i], ws, wn);
      if (!kw) return true;
      continue;
    }
    const char *b = p;
    while (b > t && kl_xdefs_blank(b[-1])) b--;
    if (b > t && (b[-1] == '*' || b[-1] == '&' || (b[-1] == '>' && !(b - 1 > t && b[-2] == '-'))))
      return true;
  }
  return false;
}

static uint64_t kl_xdefs_text_hash(struct kl_xdefs_hdr *h) {
  if (!h->hashed) h->hash = kl_xdefs_hash(h->src.text, h->src.len);
  h->hashed = true;
  return h->hash;
}

/* The parse of h, and its model (what kl_xdefs_find's answers point into), that this lint holds
 * until kl_xdefs_free: the pool's when an earlier unit parsed the same text (the same text
 * parses to the same tree and model), else a new one. */
static bool kl_xdefs_full(struct kl_xdefs *x, struct kl_xdefs_hdr *h) {
  if (h->tree) return true;
  uint64_t hash = kl_xdefs_text_hash(h);
  struct kl_xdefs_tree *t = kl_xdefs_take(h->path, h->src.len, hash);
  if (!t) {
    char err[256];
    t = kl_arena_xmalloc(sizeof *t);
    memset(t, 0, sizeof *t);
    t->a = kl_arena_new();
    t->hash = hash;
    t->checked = kl_expand_generation();
    /* Its own copy of the text: the tree and the model point into it, and outlive this lint. */
    int rc = kl_source_from_memory(t->a, h->path, h->src.text, h->src.len, &t->src, err,
                                   sizeof err);
    /* What the parse reads of other headers is recorded: the parse and its summary hold only
     * while that does (a server outlives edits to them). */
    if (kl_xdefs_tracking) kl_expand_record(&t->deps);
    if (rc == 0)
      rc = kl_dialect_parse(t->a, &t->src, t->src.text, t->src.len, NULL,
                            kl_xdefs_dir(t->a, h->path), &t->unit, err, sizeof err);
    kl_expand_record(NULL);
    if (rc != 0) {
      kl_xdefs_tree_free(t);
      return false;
    }
    t->path = t->src.path;
    kl_model_build(t->a, &t->unit, &t->model);
  }
  h->tree = t;
  return true;
}

/* h (read) summarised, counted against the unit's bound as a parse: from the run's summaries
 * when another unit parsed the same text, else parsed here; false when it cannot answer. */
static bool kl_xdefs_parse(struct kl_xdefs *x, struct kl_xdefs_hdr *h) {
  if (h->parsed) return true;
  if (x->nparsed >= KL_XDEFS_MAX_PARSED) return false;
  x->nparsed++;
  uint64_t hash = kl_xdefs_text_hash(h);
  h->sum = kl_xdefs_cached(h->path, h->src.len, hash);
  if (!h->sum) {
    /* A failed parse (a timeout) is not kept: the next unit tries again, as it always did. */
    if (!kl_xdefs_full(x, h)) return false;
    struct kl_xdefs_sum *s = kl_xdefs_summarise(x->a, &h->tree->model);
    kl_xdefs_keep(h->path, h->src.len, hash, s, h->tree);
    h->sum = s;
  }
  h->parsed = true;
  return true;
}

static const struct kl_function *kl_xdefs_in(const struct kl_model *m, const char *owner,
                                             const char *name) {
  for (size_t i = 0; !*name && i < m->nfunctions; i++)
    if (m->functions[i].owner && !strcmp(m->functions[i].owner, owner)) return &m->functions[i];
  return kl_model_method(m, NULL, owner, name, strlen(name));
}

/* Where the definition kl_xdefs_find answers with is. A member is looked up in the header's
 * model (parsed here); a function by name in its summary. */
static struct kl_xdefs_loc kl_xdefs_locate(struct kl_xdefs *x, const char *owner,
                                           const char *name) {
  struct kl_xdefs_loc none = {-1, 0};
  if (!x || !name) return none;
  for (size_t i = 0; i < x->nans; i++) {
    const struct kl_xdefs_ans *e = &x->ans[i];
    if (strcmp(e->name, name) || (!e->owner != !owner) || (owner && strcmp(e->owner, owner)))
      continue;
    return e->loc;
  }
  kl_xdefs_list(x);
  /* The struct a member belongs to is what its header defines; `Op<T>` is Op. */
  size_t on = owner ? strcspn(owner, "< \t") : 0;
  const char *key = owner ? kl_arena_strndup(x->a, owner, on) : name;
  struct kl_xdefs_ans ans = {owner ? kl_arena_strdup(x->a, owner) : NULL,
                             kl_arena_strdup(x->a, name), none};
  for (size_t i = 0; i < x->nhdrs && ans.loc.hdr < 0; i++) {
    struct kl_xdefs_hdr *h = &x->hdrs[i];
    if (!h->read) {
      h->read = true;
      char err[256];
      if (kl_source_load(x->a, h->path, &h->src, err, sizeof err) != 0 ||
          h->src.len > KL_XDEFS_MAX_BYTES)
        h->src.len = 0;
    }
    if (!h->src.len || !kl_xdefs_defines(h->src.text, h->src.len, key, owner != NULL) ||
        !kl_xdefs_parse(x, h))
      continue;
    if (owner) {
      const struct kl_model *m = kl_xdefs_full(x, h) ? &h->tree->model : NULL;
      const struct kl_function *f = m ? kl_xdefs_in(m, key, name) : NULL;
      size_t k = f ? (size_t)(f - m->functions) : 0;
      if (f && f >= m->functions && k < m->nfunctions)
        ans.loc = (struct kl_xdefs_loc){(int32_t)i, (uint32_t)k};
      continue;
    }
    for (uint32_t k = 0; k < h->sum->nfns && ans.loc.hdr < 0; k++)
      if (h->sum->fns[k].name && !strcmp(h->sum->fns[k].name, name))
        ans.loc = (struct kl_xdefs_loc){(int32_t)i, k};
  }
  KL_VEC_PUSH(x->a, x->ans, x->nans, x->cap_ans);
  x->ans[x->nans++] = ans;
  return ans.loc;
}

const struct kl_function *kl_xdefs_find(struct kl_xdefs *x, const char *owner, const char *name) {
  struct kl_xdefs_loc l = kl_xdefs_locate(x, owner, name);
  if (l.hdr < 0) return NULL;
  struct kl_xdefs_hdr *h = &x->hdrs[l.hdr];
  /* The same text parses to the same model: the summary's index is the model's. */
  if (!kl_xdefs_full(x, h) || l.fn >= h->tree->model.nfunctions) return NULL;
  return &h->tree->model.functions[l.fn];
}

const struct kl_model *kl_xdefs_home(const struct kl_xdefs *x, const struct kl_function *f) {
  for (size_t i = 0; x && i < x->nhdrs; i++) {
    const struct kl_model *m = x->hdrs[i].tree ? &x->hdrs[i].tree->model : NULL;
    uintptr_t p = (uintptr_t)f, lo = m ? (uintptr_t)m->functions : 0;
    if (m && p >= lo && p < lo + m->nfunctions * sizeof *f) return m;
  }
  return NULL;
}

enum { KL_XDEFS_SCOPE_DEPTH = 4 };

/* What a call of the function at adds to its result, with depth more levels to follow. */
static enum kl_scope kl_xdefs_body_scope(struct kl_xdefs *x, struct kl_xdefs_loc at, int depth) {
  const struct kl_xdefs_sum *sum = x->hdrs[at.hdr].sum;
  const struct kl_xdefs_fn *f = &sum->fns[at.fn];
  enum kl_scope s = KL_SCOPE_UNIFORM;
  for (uint32_t i = 0; i < f->ncalls && s < KL_SCOPE_THREAD; i++) {
    const struct kl_xdefs_call *c = &sum->calls[f->call0 + i];
    if (c->kind == KL_XDEFS_CALL_THREAD) {
      s = KL_SCOPE_THREAD;
      continue;
    }
    if (depth <= 0) continue;
    struct kl_xdefs_loc g = {at.hdr, c->target};
    if (c->kind == KL_XDEFS_CALL_EXTERN) {
      g = kl_xdefs_locate(x, NULL, c->name);
      if (g.hdr < 0 || (g.hdr == at.hdr && g.fn == at.fn)) continue;
    }
    enum kl_scope t = kl_xdefs_body_scope(x, g, depth - 1);
    if (t > s) s = t;
  }
  return s;
}

enum kl_scope kl_xdefs_result_scope(struct kl_xdefs *x, const char *name, bool *found) {
  *found = false;
  if (!x || !name) return KL_SCOPE_UNIFORM;
  for (size_t i = 0; i < x->nscopes; i++)
    if (!strcmp(x->scopes[i].name, name)) {
      *found = x->scopes[i].found;
      return x->scopes[i].scope;
    }
  struct kl_xdefs_loc l = kl_xdefs_locate(x, NULL, name);
  struct kl_xdefs_scope e = {kl_arena_strdup(x->a, name), KL_SCOPE_UNIFORM, l.hdr >= 0};
  if (l.hdr >= 0) e.scope = kl_xdefs_body_scope(x, l, KL_XDEFS_SCOPE_DEPTH);
  KL_VEC_PUSH(x->a, x->scopes, x->nscopes, x->cap_scopes);
  x->scopes[x->nscopes++] = e;
  *found = e.found;
  return e.scope;
}
