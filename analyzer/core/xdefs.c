#include "analyzer/core/xdefs.h"

#include <limits.h>
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

struct kl_xdefs_hdr {
  const char *path; /* real path */
  bool read, parsed;
  struct kl_source src; /* its text, once read (len 0 when unreadable) */
  struct kl_unit unit;
  struct kl_model model;
};

/* One question asked, and its answer (f NULL: no header defines it). */
struct kl_xdefs_ans {
  const char *owner, *name;
  const struct kl_function *f;
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

struct kl_xdefs *kl_xdefs_new(struct kl_arena *a, const struct kl_source *src,
                              const char *const *includers, size_t n) {
  struct kl_xdefs *x = kl_arena_alloc(a, sizeof *x);
  memset(x, 0, sizeof *x);
  x->a = a;
  x->src = src;
  x->includers = includers;
  x->nincluders = n;
  return x;
}

void kl_xdefs_free(struct kl_xdefs *x) {
  for (size_t i = 0; x && i < x->nhdrs; i++)
    if (x->hdrs[i].parsed) kl_dialect_release(&x->hdrs[i].unit);
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

/* h, read and (when its text may define the name) parsed; false when it cannot answer. */
static bool kl_xdefs_parse(struct kl_xdefs *x, struct kl_xdefs_hdr *h) {
  if (h->parsed) return true;
  if (x->nparsed >= KL_XDEFS_MAX_PARSED) return false;
  x->nparsed++;
  char err[256];
  if (kl_dialect_parse(x->a, &h->src, h->src.text, h->src.len, NULL, kl_xdefs_dir(x->a, h->path),
                       &h->unit, err, sizeof err) != 0)
    return false;
  h->parsed = true;
  kl_model_build(x->a, &h->unit, &h->model);
  return true;
}

static const struct kl_function *kl_xdefs_in(const struct kl_xdefs_hdr *h, const char *owner,
                                             const char *name) {
  for (size_t i = 0; owner && !*name && i < h->model.nfunctions; i++)
    if (h->model.functions[i].owner && !strcmp(h->model.functions[i].owner, owner))
      return &h->model.functions[i];
  if (owner) return kl_model_method(&h->model, NULL, owner, name, strlen(name));
  for (size_t i = 0; i < h->model.nfunctions; i++) {
    const struct kl_function *f = &h->model.functions[i];
    if (!f->owner && !strcmp(f->name, name) && !kl_node_null(f->body)) return f;
  }
  return NULL;
}

const struct kl_function *kl_xdefs_find(struct kl_xdefs *x, const char *owner, const char *name) {
  if (!x || !name) return NULL;
  for (size_t i = 0; i < x->nans; i++) {
    const struct kl_xdefs_ans *e = &x->ans[i];
    if (strcmp(e->name, name) || (!e->owner != !owner) || (owner && strcmp(e->owner, owner)))
      continue;
    return e->f;
  }
  kl_xdefs_list(x);
  /* The struct a member belongs to is what its header defines; `Op<T>` is Op. */
  size_t on = owner ? strcspn(owner, "< \t") : 0;
  const char *key = owner ? kl_arena_strndup(x->a, owner, on) : name;
  struct kl_xdefs_ans ans = {owner ? kl_arena_strdup(x->a, owner) : NULL,
                             kl_arena_strdup(x->a, name), NULL};
  for (size_t i = 0; i < x->nhdrs && !ans.f; i++) {
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
    ans.f = kl_xdefs_in(h, owner ? key : NULL, name);
  }
  KL_VEC_PUSH(x->a, x->ans, x->nans, x->cap_ans);
  x->ans[x->nans++] = ans;
  return ans.f;
}

const struct kl_model *kl_xdefs_home(const struct kl_xdefs *x, const struct kl_function *f) {
  for (size_t i = 0; x && i < x->nhdrs; i++) {
    const struct kl_xdefs_hdr *h = &x->hdrs[i];
    uintptr_t p = (uintptr_t)f, lo = (uintptr_t)h->model.functions;
    if (h->parsed && p >= lo && p < lo + h->model.nfunctions * sizeof *f) return &h->model;
  }
  return NULL;
}

enum { KL_XDEFS_SCOPE_DEPTH = 4 };

/* What a call of f's body (in model m) adds to its result, with depth more levels to follow. */
static enum kl_scope kl_xdefs_body_scope(struct kl_xdefs *x, const struct kl_model *m,
                                         const struct kl_function *f, int depth) {
  enum kl_scope s = KL_SCOPE_UNIFORM;
  for (size_t i = 0; m && i < f->ncalls && s < KL_SCOPE_THREAD; i++) {
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
    /* A vote or prefix over the lanes differs lane by lane whatever it is handed; a shuffle
     * moves no more than its value, a reduction gives the SIMD group one value. */
    if (bf && bf->kind != KL_FN_BARRIER && bf->kind != KL_FN_SIMD_SHUFFLE &&
        bf->result_scope == KL_SCOPE_THREAD) {
      s = KL_SCOPE_THREAD;
    } else if (!bf && !strncmp(bare, "atomic_", 7) && strcmp(bare, "atomic_store_explicit") &&
               strcmp(bare, "atomic_thread_fence")) {
      s = KL_SCOPE_THREAD; /* each thread takes its own turn at the counter */
    } else if (!bf && depth > 0) {
      const struct kl_function *g = f->call_targets ? f->call_targets[i] : NULL;
      const struct kl_model *gm = m;
      if (!g && kl_node_is_kind(fu, KL_KIND_IDENTIFIER)) {
        g = kl_xdefs_find(x, NULL, bare);
        gm = g ? kl_xdefs_home(x, g) : NULL;
      }
      if (g && g != f && gm) {
        enum kl_scope t = kl_xdefs_body_scope(x, gm, g, depth - 1);
        if (t > s) s = t;
      }
    }
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
  const struct kl_function *f = kl_xdefs_find(x, NULL, name);
  const struct kl_model *m = f ? kl_xdefs_home(x, f) : NULL;
  struct kl_xdefs_scope e = {kl_arena_strdup(x->a, name), KL_SCOPE_UNIFORM, m != NULL};
  if (m) e.scope = kl_xdefs_body_scope(x, m, f, KL_XDEFS_SCOPE_DEPTH);
  KL_VEC_PUSH(x->a, x->scopes, x->nscopes, x->cap_scopes);
  x->scopes[x->nscopes++] = e;
  *found = e.found;
  return e.scope;
}
