/* Types: what the bfloat walk (kl_types_bfloat_computes) remembers for one unit, split from
 * types.c for size: each function body's list of the nodes a walk acts on, and the index of its
 * answers by function and bindings. */
#include "analyzer/core/types.h"
#include "analyzer/core/types_int.h"

#include "analyzer/core/node.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t kl_types_fnv(const char *s) {
  uint64_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static bool kl_types_bf_same(const char *x, const char *y) {
  return x == y || (x && y && !strcmp(x, y));
}

bool kl_types_bf_walking(const struct kl_types_bfloat *c, const struct kl_function *f) {
  for (size_t i = 0; i < c->nwalking; i++)
    if (c->walking[i] == f) return true;
  return false;
}

/* ---- Bodies, once ------------------------------------------------------------------------- */

/* A subtree the collecting walk is inside of: an entry's (its end) or an if_statement's child
 * (that range's hi), closed with the list's length when the walk climbs out of it. */
struct kl_types_bf_flat_open {
  uint32_t depth, at;
  int field; /* 0: v[at].end, 1: v[at].cons_hi, 2: v[at].alt_hi */
};

/* While collecting: the body's list, the open subtrees, and the walk's depth. */
struct kl_types_bf_flat_build {
  struct kl_arena *a;
  struct kl_types_bf_flat *fl;
  uint32_t depth;
  struct kl_types_bf_flat_open *open;
  size_t nopen, cap_open;
};

static void kl_types_bf_flat_push(struct kl_types_bf_flat_build *fb, uint32_t depth, uint32_t at,
                                  int field) {
  KL_VEC_PUSH(fb->a, fb->open, fb->nopen, fb->cap_open);
  fb->open[fb->nopen++] = (struct kl_types_bf_flat_open){depth, at, field};
}

/* Close the open subtrees at depth or deeper: the walk has climbed out of them. */
static void kl_types_bf_flat_close(struct kl_types_bf_flat_build *fb, uint32_t depth) {
  struct kl_types_bf_flat *fl = fb->fl;
  while (fb->nopen && fb->open[fb->nopen - 1].depth >= depth) {
    const struct kl_types_bf_flat_open *o = &fb->open[--fb->nopen];
    struct kl_types_bf_flat_node *e = &fl->v[o->at];
    uint32_t *hi = o->field == 0 ? &e->end : o->field == 1 ? &e->cons_hi : &e->alt_hi;
    *hi = (uint32_t)fl->n;
  }
}

static enum kl_walk kl_types_bf_flat_visit(TSNode n, void *ctx) {
  struct kl_types_bf_flat_build *fb = ctx;
  struct kl_types_bf_flat *fl = fb->fl;
  uint32_t d = fb->depth;
  kl_types_bf_flat_close(fb, d);
  /* A child of an if_statement entry (the innermost open subtree, one level up): where its
   * consequence or alternative starts. */
  if (fb->nopen && fb->open[fb->nopen - 1].depth + 1 == d && fb->open[fb->nopen - 1].field == 0 &&
      fl->v[fb->open[fb->nopen - 1].at].is_if) {
    uint32_t p = fb->open[fb->nopen - 1].at;
    TSNode parent = fl->v[p].n;
    if (ts_node_eq(n, kl_node_field(parent, "consequence"))) {
      fl->v[p].cons_lo = (uint32_t)fl->n;
      kl_types_bf_flat_push(fb, d, p, 1);
    } else if (ts_node_eq(n, kl_node_field(parent, "alternative"))) {
      fl->v[p].alt_lo = (uint32_t)fl->n;
      kl_types_bf_flat_push(fb, d, p, 2);
    }
  }
  enum kl_kind t = kl_node_kind(n);
  bool is_if = t == KL_KIND_IF_STATEMENT;
  if (is_if || t == KL_KIND_BINARY_EXPRESSION || t == KL_KIND_UNARY_EXPRESSION ||
      t == KL_KIND_ASSIGNMENT_EXPRESSION || t == KL_KIND_CALL_EXPRESSION) {
    KL_VEC_PUSH(fb->a, fl->v, fl->n, fl->cap);
    uint32_t at = (uint32_t)fl->n++;
    fl->v[at] = (struct kl_types_bf_flat_node){
        .n = n, .is_if = is_if, .is_call = t == KL_KIND_CALL_EXPRESSION};
    kl_types_bf_flat_push(fb, d, at, 0);
  }
  return KL_WALK_DESCEND;
}

/* f's list, collected on first use. */
const struct kl_types_bf_flat *kl_types_bf_flat_of(struct kl_types_bfloat *c,
                                                   const struct kl_function *f) {
  const void *got;
  if (kl_node_map_get(&c->flat, f->body, f, &got)) return got;
  struct kl_types_bf_flat *fl = kl_arena_alloc(c->a, sizeof *fl);
  memset(fl, 0, sizeof *fl);
  struct kl_types_bf_flat_build fb = {.a = c->a, .fl = fl};
  kl_dialect_walk(f->body, kl_types_bf_flat_visit, &fb, &fb.depth);
  kl_types_bf_flat_close(&fb, 0);
  kl_node_map_put(c->a, &c->flat, f->body, f, fl);
  return fl;
}

/* ---- The memo's index ----------------------------------------------------------------------
 * kl_types_bf_computes used to scan every answer of a function per question (and per question
 * every earlier walk, to share one): quadratic in a template's instantiations, which run to
 * hundreds (candle's reduce, once per BLOCKSIZE and indexer). The index answers both in a hash
 * lookup. A walk is shared by bindings that agree with it on what it depends on (its binding
 * names, may, and the types of the bindings it looked at: kl_types_bf_shared); its walks of
 * one function that looked at the same bindings are one "mask", and under a mask the types of
 * the looked bindings, spelt, find the walks that agree. */

struct kl_types_bf_slot {
  const void *f; /* NULL for an empty slot */
  size_t mask;   /* 0 for an answer by key; else 1 + the mask's number */
  const char *s; /* the key, or the looked bindings' types */
  uint64_t h;
  size_t list; /* by key: the memo entry; by mask: the list of walks (lists[list]) */
};

/* Walks that agree on a mask, in memo order. */
struct kl_types_bf_list {
  size_t *v;
  size_t n, cap;
};

struct kl_types_bf_mask {
  const struct kl_function *f;
  bool may;
  size_t n;
  const struct kl_binding *items; /* the names (those of the walk that made the mask) */
  const unsigned char *looked;
  size_t next; /* 1 + the function's next mask, or 0 */
};

struct kl_types_bf_index {
  struct kl_types_bf_slot *slots; /* malloc'd, freed by kl_types_bfloat_free */
  size_t n, cap;
  struct kl_types_bf_list *lists;
  size_t nlists, cap_lists;
  struct kl_types_bf_mask *masks;
  size_t nmasks, cap_masks;
  struct kl_node_map first; /* per function, 1 + its first mask */
};

static uint64_t kl_types_bf_slot_hash(const void *f, size_t mask, const char *s) {
  uint64_t h = kl_types_fnv(s) ^ ((uint64_t)(uintptr_t)f * 0x9e3779b97f4a7c15u);
  return h ^ (mask * 0xc2b2ae3d27d4eb4fu);
}

static struct kl_types_bf_slot *kl_types_bf_slot_at(struct kl_types_bf_index *x, const void *f,
                                                    size_t mask, const char *s, uint64_t h) {
  if (!x->cap) return NULL;
  for (size_t i = h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
    struct kl_types_bf_slot *t = &x->slots[i];
    if (!t->f) return t;
    if (t->h == h && t->f == f && t->mask == mask && !strcmp(t->s, s)) return t;
  }
}

/* The slot of (f, mask, s), added (with list unset) when it is not there. */
static struct kl_types_bf_slot *kl_types_bf_slot_add(struct kl_types_bf_index *x, const void *f,
                                                     size_t mask, const char *s, bool *fresh) {
  if (4 * (x->n + 1) > 3 * x->cap) {
    struct kl_types_bf_slot *old = x->slots;
    size_t cap = x->cap;
    x->cap = cap ? 2 * cap : 256;
    x->slots = kl_arena_xmalloc(x->cap * sizeof *x->slots);
    memset(x->slots, 0, x->cap * sizeof *x->slots);
    for (size_t i = 0; i < cap; i++) {
      if (!old[i].f) continue;
      size_t k = old[i].h & (x->cap - 1);
      while (x->slots[k].f) k = (k + 1) & (x->cap - 1);
      x->slots[k] = old[i];
    }
    free(old);
  }
  uint64_t h = kl_types_bf_slot_hash(f, mask, s);
  struct kl_types_bf_slot *t = kl_types_bf_slot_at(x, f, mask, s, h);
  *fresh = !t->f;
  if (!t->f) {
    *t = (struct kl_types_bf_slot){f, mask, s, h, 0};
    x->n++;
  }
  return t;
}

static struct kl_types_bf_index *kl_types_bf_index(struct kl_types_bfloat *c) {
  if (!c->index) {
    c->index = kl_arena_alloc(c->a, sizeof *c->index);
    memset(c->index, 0, sizeof *c->index);
  }
  return c->index;
}

/* The memo entry answering f under key, or SIZE_MAX. */
size_t kl_types_bf_by_key(struct kl_types_bfloat *c, const struct kl_function *f,
                          const char *key) {
  struct kl_types_bf_index *x = kl_types_bf_index(c);
  struct kl_types_bf_slot *t = kl_types_bf_slot_at(x, f, 0, key, kl_types_bf_slot_hash(f, 0, key));
  return t && t->f ? t->list : SIZE_MAX;
}

void kl_types_bf_key_add(struct kl_types_bfloat *c, const struct kl_function *f, const char *key,
                         size_t at) {
  bool fresh;
  struct kl_types_bf_slot *t = kl_types_bf_slot_add(kl_types_bf_index(c), f, 0, key, &fresh);
  if (fresh) t->list = at;
}

/* The types of b's bindings that a mask looked at, spelt as one string. */
static const char *kl_types_bf_sig(struct kl_arena *a, const struct kl_types_bf_mask *m,
                                   const struct kl_bindings *b) {
  size_t len = 1;
  for (size_t i = 0; i < m->n; i++)
    if (m->looked[i]) len += strlen(b->items[i].type ? b->items[i].type : "") + 24;
  char *s = kl_arena_alloc(a, len), *o = s;
  for (size_t i = 0; i < m->n; i++)
    if (m->looked[i]) {
      /* Each type after its length (no text can run into the next); a NULL type is told from
       * "" by its mark, as kl_types_bf_same tells them apart. */
      const char *t = b->items[i].type;
      if (t) {
        size_t n = strlen(t);
        char num[24];
        int k = 0;
        do num[k++] = (char)('0' + n % 10);
        while ((n /= 10) > 0);
        while (k) *o++ = num[--k];
        *o++ = ':';
        o = kl_types_put(o, t, strlen(t));
      } else {
        *o++ = '!';
      }
    }
  *o = '\0';
  return s;
}

/* Whether mask m is for walks with b's binding names and may. */
static bool kl_types_bf_mask_fits(const struct kl_types_bf_mask *m, const struct kl_bindings *b,
                                  bool may) {
  size_t n = b ? b->n : 0;
  if (m->may != may || m->n != n) return false;
  for (size_t i = 0; i < n; i++)
    if (!kl_types_bf_same(m->items[i].name, b->items[i].name)) return false;
  return true;
}

/* The first walk of f, in memo order, that b can share, or SIZE_MAX: one a fresh walk under b
 * would go exactly as: the same binding names (so every name a resolution looks up finds a
 * binding under b where it did then, and none where it found none), the same type for each
 * binding a resolution went through, the same kl_types_bf_may, and every helper it asked about
 * answered from the memo as it was then (none of them being walked now, and none cut short
 * then: a walk cut short is not shared). */
size_t kl_types_bf_shared(struct kl_types_bfloat *c, const struct kl_function *f,
                          const struct kl_bindings *b, bool may) {
  struct kl_types_bf_index *x = kl_types_bf_index(c);
  const void *first;
  if (!kl_node_map_get(&x->first, f->body, f, &first)) return SIZE_MAX;
  size_t best = SIZE_MAX;
  for (size_t k = (size_t)(uintptr_t)first; k; k = x->masks[k - 1].next) {
    const struct kl_types_bf_mask *m = &x->masks[k - 1];
    if (!kl_types_bf_mask_fits(m, b, may)) continue;
    const char *sig = kl_types_bf_sig(c->a, m, b);
    struct kl_types_bf_slot *t =
        kl_types_bf_slot_at(x, f, k, sig, kl_types_bf_slot_hash(f, k, sig));
    if (!t || !t->f) continue;
    const struct kl_types_bf_list *l = &x->lists[t->list];
    for (size_t i = 0; i < l->n && l->v[i] < best; i++) {
      const struct kl_types_bf_memo *e = &c->memo[l->v[i]];
      bool busy = false;
      for (size_t j = 0; j < e->ncallees && !busy; j++)
        busy = kl_types_bf_walking(c, e->callees[j]);
      if (!busy) best = l->v[i];
    }
  }
  return best;
}

/* Record the walk at memo entry at (done, not cut short) for bindings b to share. */
void kl_types_bf_share(struct kl_types_bfloat *c, const struct kl_function *f,
                       const struct kl_bindings *b, size_t at) {
  struct kl_types_bf_index *x = kl_types_bf_index(c);
  const struct kl_types_bf_memo *e = &c->memo[at];
  const void *first;
  size_t k = 0, last = 0;
  if (kl_node_map_get(&x->first, f->body, f, &first)) {
    for (k = (size_t)(uintptr_t)first; k; last = k, k = x->masks[k - 1].next) {
      const struct kl_types_bf_mask *m = &x->masks[k - 1];
      if (kl_types_bf_mask_fits(m, b, e->may) && !memcmp(m->looked, e->looked, e->n)) break;
    }
  }
  if (!k) {
    KL_VEC_PUSH(c->a, x->masks, x->nmasks, x->cap_masks);
    x->masks[x->nmasks++] = (struct kl_types_bf_mask){f, e->may, e->n, e->items, e->looked, 0};
    k = x->nmasks;
    if (last) x->masks[last - 1].next = k;
    else kl_node_map_put(c->a, &x->first, f->body, f, (const void *)(uintptr_t)k);
  }
  bool fresh;
  struct kl_types_bf_slot *t =
      kl_types_bf_slot_add(x, f, k, kl_types_bf_sig(c->a, &x->masks[k - 1], b), &fresh);
  if (fresh) {
    KL_VEC_PUSH(c->a, x->lists, x->nlists, x->cap_lists);
    x->lists[x->nlists] = (struct kl_types_bf_list){0};
    t->list = x->nlists++;
  }
  struct kl_types_bf_list *l = &x->lists[t->list];
  KL_VEC_PUSH(c->a, l->v, l->n, l->cap);
  l->v[l->n++] = at;
}

/* ---- Answers about nodes, by what they depend on ------------------------------------------- */

static bool kl_types_dep_fits(const struct kl_types_dep *d, const struct kl_bindings *b) {
  size_t n = b ? b->n : 0;
  if (d->n != n) return false;
  for (size_t i = 0; i < n; i++) {
    const struct kl_binding *x = &d->items[i], *y = &b->items[i];
    /* The same names, so a name looked up finds a binding or not as it did; the same types
     * where it found one. */
    if (!kl_types_bf_same(x->name, y->name)) return false;
    if ((d->mask >> i & 1) && !kl_types_bf_same(x->type, y->type)) return false;
  }
  return true;
}

/* A node's answers, in the map by node and function (a map's answer is not replaced). */
struct kl_types_dep_head {
  const struct kl_types_dep *first;
};

const struct kl_types_dep *kl_types_dep_get(const struct kl_node_map *map, TSNode node,
                                            const struct kl_function *f,
                                            const struct kl_bindings *b) {
  const void *got;
  if (!kl_node_map_get(map, node, f, &got)) return NULL;
  for (const struct kl_types_dep *d = ((const struct kl_types_dep_head *)got)->first; d;
       d = d->next)
    if (kl_types_dep_fits(d, b)) return d;
  return NULL;
}

void kl_types_dep_put(struct kl_arena *a, struct kl_node_map *map, TSNode node,
                      const struct kl_function *f, const struct kl_bindings *b, uint64_t mask,
                      const void *v) {
  const void *got;
  struct kl_types_dep_head *h;
  if (kl_node_map_get(map, node, f, &got)) {
    h = (struct kl_types_dep_head *)got;
  } else {
    h = kl_arena_alloc(a, sizeof *h);
    h->first = NULL;
    kl_node_map_put(a, map, node, f, h);
  }
  struct kl_types_dep *d = kl_arena_alloc(a, sizeof *d);
  *d = (struct kl_types_dep){b ? b->items : NULL, b ? b->n : 0, mask, v, h->first};
  h->first = d;
}

void kl_types_bf_index_free(struct kl_types_bfloat *c) {
  if (!c->index) return;
  free(c->index->slots);
  kl_node_map_free(&c->index->first);
  c->index = NULL;
}
