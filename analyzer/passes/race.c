/* Threadgroup-memory conflicts between two threads, decided over a sample threadgroup. */
#include "analyzer/passes/race.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/arena.h"

/* The sample threadgroup: 64 threads (two SIMD groups), as a row, a square or a cube. */
enum { KL_RACE_THREADS = 64, KL_RACE_SIMD_WIDTH = 32, KL_RACE_OPTIONS = 12, KL_RACE_COMBOS = 256 };
enum { KL_RACE_SLOTS = 8 };
/* A thread set is a 64-bit mask. */
_Static_assert(KL_RACE_THREADS <= 64, "threads as bits of a uint64_t");

struct kl_race_form kl_race_const(int64_t c) {
  struct kl_race_form f = {0};
  f.known = true;
  f.c = c;
  return f;
}

struct kl_race_form kl_race_var(uint16_t var) {
  struct kl_race_form f = kl_race_const(0);
  f.n = 1;
  f.t[0].var = var;
  f.t[0].k = 1;
  return f;
}

struct kl_race_form kl_race_add(struct kl_race_form a, struct kl_race_form b, int sign) {
  if (!a.known || !b.known) return (struct kl_race_form){0};
  a.c += sign * b.c;
  for (uint8_t i = 0; i < b.n; i++) {
    int64_t k = sign * b.t[i].k;
    uint8_t j = 0;
    while (j < a.n && a.t[j].var != b.t[i].var) j++;
    if (j < a.n) {
      a.t[j].k += k;
      if (!a.t[j].k) a.t[j] = a.t[--a.n];
      continue;
    }
    if (a.n == KL_RACE_MAX_TERMS) return (struct kl_race_form){0};
    a.t[a.n].var = b.t[i].var;
    a.t[a.n++].k = k;
  }
  return a;
}

struct kl_race_form kl_race_scale(struct kl_race_form a, int64_t k) {
  if (!a.known) return a;
  if (!k) return kl_race_const(0);
  a.c *= k;
  for (uint8_t i = 0; i < a.n; i++) a.t[i].k *= k;
  return a;
}

bool kl_race_is_const(struct kl_race_form a, int64_t *c) {
  if (!a.known || a.n) return false;
  if (c) *c = a.c;
  return true;
}

/* How a pair's sides see one symbol. */
enum kl_race_rel { KL_REL_SAME, KL_REL_SHIFT, KL_REL_INDEP };

struct kl_race_slot {
  uint16_t sym;
  enum kl_race_rel rel;
  int64_t va[KL_RACE_OPTIONS], vb[KL_RACE_OPTIONS]; /* the values the first and second take */
  int n;
};

static int64_t kl_race_stepped(const struct kl_race_sym *s, int64_t v) {
  switch (s->step) {
  case '+': return v + s->by;
  case '-': return v - s->by;
  case '*': return v * s->by;
  case '/': return s->by ? v / s->by : v;
  case '<': return s->by >= 0 && s->by < 16 ? v << s->by : v;
  case '>': return s->by >= 0 && s->by < 63 ? v >> s->by : v;
  default: return v;
  }
}

static bool kl_race_holds(int64_t e, enum kl_race_op op) {
  switch (op) {
  case KL_RACE_EQ: return e == 0;
  case KL_RACE_NE: return e != 0;
  case KL_RACE_LT: return e < 0;
  case KL_RACE_LE: return e <= 0;
  }
  return true;
}

static bool kl_race_in_loop(const struct kl_race_sym *s, int64_t v) {
  if (!s->bound_known) return true;
  return kl_race_holds(s->bound_flip ? s->bound - v : v - s->bound, s->bound_op);
}

/* The values a loop's variable takes, in order (as many as fit), or some plausible ones when the
 * loop does not say. Returns how many. */
static int kl_race_sequence(const struct kl_race_sym *s, int64_t *out, int cap) {
  int n = 0;
  if (s->loop && s->step) {
    bool down = s->step == '-' || s->step == '/' || s->step == '>';
    int64_t v = s->init_known ? s->init : down ? 64 : s->step == '+' ? 0 : 1;
    for (int i = 0; i < 64 && n < cap; i++) {
      if (v < -4096 || v > 4096 || !kl_race_in_loop(s, v)) break;
      out[n++] = v;
      int64_t w = kl_race_stepped(s, v);
      if (w == v) break;
      v = w;
    }
    if (n) return n;
  }
  static const int64_t plain[] = {0, 1, 2, 3, 4, 8, 16, 32};
  if (s->loop && s->init_known && n < cap) out[n++] = s->init;
  for (size_t i = 0; i < sizeof plain / sizeof *plain && n < cap; i++)
    if (!s->loop || kl_race_in_loop(s, plain[i])) out[n++] = plain[i];
  return n;
}

static bool kl_race_has(const struct kl_race_side *s, uint16_t v) {
  for (uint8_t d = 0; d < s->ndims; d++)
    for (uint8_t i = 0; i < s->idx[d].n; i++)
      if (s->idx[d].t[i].var == v) return true;
  for (uint8_t c = 0; c < s->ncons; c++)
    for (uint8_t i = 0; i < s->cons[c].e.n; i++)
      if (s->cons[c].e.t[i].var == v) return true;
  return false;
}

static bool kl_race_in_idx(const struct kl_race_side *s, uint16_t v) {
  for (uint8_t d = 0; d < s->ndims; d++)
    for (uint8_t i = 0; i < s->idx[d].n; i++)
      if (s->idx[d].t[i].var == v) return true;
  return false;
}

static int64_t kl_race_coeff(const struct kl_race_form *f, uint16_t v) {
  for (uint8_t i = 0; i < f->n; i++)
    if (f->t[i].var == v) return f->t[i].k;
  return 0;
}

/* Adds a side's symbols to the slots; false when there are too many. */
static bool kl_race_collect(const struct kl_race_side *s, struct kl_race_slot *slots, int *n) {
  for (uint8_t d = 0; d <= s->ndims; d++) {
    int nf = d < s->ndims ? 1 : s->ncons;
    for (int c = 0; c < nf; c++) {
      const struct kl_race_form *f = d < s->ndims ? &s->idx[d] : &s->cons[c].e;
      for (uint8_t i = 0; i < f->n; i++) {
        uint16_t v = f->t[i].var;
        if (v < KL_RACE_NATOMS || v >= KL_RACE_DERIVED) continue;
        int j = 0;
        while (j < *n && slots[j].sym != v - KL_RACE_NATOMS) j++;
        if (j < *n) continue;
        if (*n == KL_RACE_SLOTS) return false;
        slots[(*n)++].sym = (uint16_t)(v - KL_RACE_NATOMS);
      }
    }
  }
  return true;
}

struct kl_race_run {
  int nthreads;
  int64_t atoms[KL_RACE_THREADS][KL_RACE_NATOMS];
  const struct kl_race_derived *der;
  size_t nder;
};

/* A form's value for one thread, over the coordinates and derived coordinates only: symbol terms
 * are left out (they are the same for every thread, and kl_race_prep adds them per valuation).
 * Wrapping arithmetic: an index too large to mean anything must not be undefined behaviour. */
static int64_t kl_race_thread_part(const struct kl_race_run *r, const struct kl_race_form *f,
                                   const int64_t *atoms) {
  uint64_t v = (uint64_t)f->c;
  for (uint8_t i = 0; i < f->n; i++) {
    uint16_t x = f->t[i].var;
    int64_t xv = 0;
    if (x < KL_RACE_NATOMS) {
      xv = atoms[x];
    } else if (x < KL_RACE_DERIVED) {
      continue;
    } else if ((size_t)(x - KL_RACE_DERIVED) < r->nder) {
      const struct kl_race_derived *d = &r->der[x - KL_RACE_DERIVED];
      int64_t b = kl_race_thread_part(r, &d->base, atoms);
      xv =
          d->op == '/' ? (b >= 0 ? b / d->c : -((-b + d->c - 1) / d->c)) : (b % d->c + d->c) % d->c;
    }
    v += (uint64_t)f->t[i].k * (uint64_t)xv;
  }
  return (int64_t)v;
}

/* The symbol terms of a form under one valuation (symv by slot). */
static int64_t kl_race_sym_part(const struct kl_race_form *f, const int64_t *symv) {
  uint64_t v = 0;
  for (uint8_t i = 0; i < f->n; i++) {
    uint16_t x = f->t[i].var;
    if (x >= KL_RACE_NATOMS && x < KL_RACE_DERIVED)
      v += (uint64_t)f->t[i].k * (uint64_t)symv[x - KL_RACE_NATOMS];
  }
  return (int64_t)v;
}

static bool kl_race_has_sym(const struct kl_race_form *f) {
  for (uint8_t i = 0; i < f->n; i++)
    if (f->t[i].var >= KL_RACE_NATOMS && f->t[i].var < KL_RACE_DERIVED) return true;
  return false;
}

/* One side made ready for many valuations: each form's thread part per thread, computed once
 * per pair, and which threads pass the conditions that name no symbol. A valuation then costs
 * an addition per thread and form instead of a walk of every form's terms. */
struct kl_race_prep {
  const struct kl_race_side *s;
  int64_t idx[KL_RACE_MAX_DIMS][KL_RACE_THREADS];
  int64_t cons[KL_RACE_MAX_CONS][KL_RACE_THREADS];
  uint8_t vary[KL_RACE_MAX_CONS]; /* the conditions that name a symbol */
  uint8_t nvary;
  bool on[KL_RACE_THREADS]; /* the thread passes every condition that names none */
};

static bool kl_race_cons_hold(const struct kl_race_cons *k, int64_t v) {
  if (k->mod > 0) v = (v % k->mod + k->mod) % k->mod - k->off;
  return kl_race_holds(v, k->op);
}

static void kl_race_prepare(const struct kl_race_run *r, const struct kl_race_side *s,
                            struct kl_race_prep *p) {
  p->s = s;
  p->nvary = 0;
  for (uint8_t c = 0; c < s->ncons; c++)
    if (kl_race_has_sym(&s->cons[c].e)) p->vary[p->nvary++] = c;
  for (int t = 0; t < r->nthreads; t++) {
    p->on[t] = true;
    for (uint8_t c = 0; c < s->ncons; c++) {
      p->cons[c][t] = kl_race_thread_part(r, &s->cons[c].e, r->atoms[t]);
      if (!kl_race_has_sym(&s->cons[c].e) && !kl_race_cons_hold(&s->cons[c], p->cons[c][t]))
        p->on[t] = false;
    }
    for (uint8_t d = 0; d < s->ndims; d++)
      p->idx[d][t] = kl_race_thread_part(r, &s->idx[d], r->atoms[t]);
  }
}

/* What one valuation of the symbols adds to a side: to each condition that names a symbol (cs),
 * and to each index (ds). A thread's elements and whether it runs follow from these. */
static void kl_race_sym_parts(const struct kl_race_prep *p, const int64_t *symv, int64_t *cs,
                              int64_t *ds) {
  const struct kl_race_side *s = p->s;
  for (uint8_t i = 0; i < p->nvary; i++) cs[i] = kl_race_sym_part(&s->cons[p->vary[i]].e, symv);
  for (uint8_t d = 0; d < s->ndims; d++) ds[d] = kl_race_sym_part(&s->idx[d], symv);
}

/* Each thread's elements under one valuation's parts (kl_race_sym_parts); false for a thread
 * that does not run the access. */
static void kl_race_elems(const struct kl_race_run *r, const struct kl_race_prep *p,
                          const int64_t *cs, const int64_t *ds, bool *on,
                          int64_t (*el)[KL_RACE_MAX_DIMS]) {
  const struct kl_race_side *s = p->s;
  for (int t = 0; t < r->nthreads; t++) {
    on[t] = p->on[t];
    for (uint8_t i = 0; i < p->nvary && on[t]; i++) {
      uint8_t c = p->vary[i];
      on[t] = kl_race_cons_hold(&s->cons[c], (int64_t)((uint64_t)p->cons[c][t] + (uint64_t)cs[i]));
    }
    if (!on[t]) continue;
    for (uint8_t d = 0; d < s->ndims; d++)
      el[t][d] = (int64_t)((uint64_t)p->idx[d][t] + (uint64_t)ds[d]);
  }
}

/* The valuations of one pair tried so far, by what they add to the two sides (each key the
 * index parts and the varying conditions' parts, all of one length): at most cap of them, the
 * pair's count of valuations. On the heap: a pair asks at most KL_RACE_COMBOS. */
struct kl_race_seen {
  int n, cap, nk;
  uint16_t *cell; /* 2 * cap of them: 1 + the key's index; 0: empty */
  int64_t *keys;  /* cap keys of nk values */
};

static void kl_race_seen_init(struct kl_race_seen *t, int cap, int nk) {
  t->n = 0;
  t->cap = cap > 1 ? cap : 0; /* a pair with one valuation keeps none */
  t->nk = nk;
  t->cell = t->cap ? kl_arena_xmalloc(2 * (size_t)t->cap * sizeof *t->cell) : NULL;
  t->keys = t->cap ? kl_arena_xmalloc((size_t)t->cap * (size_t)(nk ? nk : 1) * sizeof *t->keys)
                   : NULL;
  if (t->cap) memset(t->cell, 0, 2 * (size_t)t->cap * sizeof *t->cell);
}

static void kl_race_seen_free(struct kl_race_seen *t) {
  free(t->cell);
  free(t->keys);
}

/* Add key (t->nk values); false when it was there. */
static bool kl_race_seen_add(struct kl_race_seen *t, const int64_t *key) {
  if (!t->cap || t->n == t->cap) return true;
  size_t ncell = 2 * (size_t)t->cap, bytes = (size_t)t->nk * sizeof *key;
  uint64_t h = 0;
  for (int i = 0; i < t->nk; i++) h = (h ^ (uint64_t)key[i]) * 0x9E3779B97F4A7C15u;
  size_t c = (size_t)(h >> 40) % ncell;
  for (; t->cell[c]; c = (c + 1) % ncell)
    if (!memcmp(t->keys + (size_t)(t->cell[c] - 1) * (size_t)t->nk, key, bytes)) return false;
  memcpy(t->keys + (size_t)t->n * (size_t)t->nk, key, bytes);
  t->cell[c] = (uint16_t)(++t->n);
  return true;
}

static bool kl_race_el_same(const int64_t *a, const int64_t *b, uint8_t ndims) {
  for (uint8_t d = 0; d < ndims; d++)
    if (a[d] != b[d]) return false;
  return true;
}

/* Whether one thread's element on side a is another thread's on side b, the two in different
 * SIMD groups when group (each thread's group as a mask) is not NULL. b's threads are tabled by
 * element, so each of a's threads is one probe instead of a comparison with every thread of b:
 * a pair of accesses is tried under up to KL_RACE_COMBOS valuations. */
static bool kl_race_any_pair(const struct kl_race_run *r, const uint64_t *group, uint8_t ndims,
                             const bool *on_a, const int64_t (*el_a)[KL_RACE_MAX_DIMS],
                             const bool *on_b, const int64_t (*el_b)[KL_RACE_MAX_DIMS]) {
  enum { KL_CELLS = 2 * KL_RACE_THREADS };
  struct {
    const int64_t *el;
    uint64_t threads; /* the threads of b at that element; 0: an empty cell */
  } cell[KL_CELLS];
  memset(cell, 0, sizeof cell);
  for (int pass = 0; pass < 2; pass++) {
    const bool *on = pass ? on_a : on_b;
    const int64_t(*el)[KL_RACE_MAX_DIMS] = pass ? el_a : el_b;
    for (int t = 0; t < r->nthreads; t++) {
      if (!on[t]) continue;
      uint64_t h = 0;
      for (uint8_t d = 0; d < ndims; d++) h = (h ^ (uint64_t)el[t][d]) * 0x9E3779B97F4A7C15u;
      size_t c = (size_t)(h >> 57) % KL_CELLS;
      while (cell[c].threads && !kl_race_el_same(cell[c].el, el[t], ndims)) c = (c + 1) % KL_CELLS;
      if (!pass) {
        cell[c].el = el[t];
        cell[c].threads |= (uint64_t)1 << t;
        continue;
      }
      uint64_t others = cell[c].threads & ~((uint64_t)1 << t);
      if (group) others &= ~group[t];
      if (others) return true;
    }
  }
  return false;
}

static bool kl_race_form_same(const struct kl_race_form *a, const struct kl_race_form *b) {
  if (a->known != b->known || a->c != b->c || a->n != b->n) return false;
  for (uint8_t i = 0; i < a->n; i++) {
    uint8_t j = 0;
    while (j < b->n && b->t[j].var != a->t[i].var) j++;
    if (j == b->n || b->t[j].k != a->t[i].k) return false;
  }
  return true;
}

/* Whether the pair touches, on both sides, each thread's own elements whatever the symbols:
 * the same index forms, every symbol in them given one value on both sides at each valuation,
 * and no two sample threads with one element once the symbols are set aside. A symbol adds the
 * same amount to both sides, so the element of thread t on one side is thread u's on the other
 * only when t is u, and no valuation can make the pair meet: it is decided without any (the
 * usual pair of `tile[lid]` updates, which otherwise tries every valuation for nothing). */
static bool kl_race_own_elements(const struct kl_race_run *r, const struct kl_race_side *a,
                                 const struct kl_race_side *b, const struct kl_race_slot *slots) {
  for (uint8_t d = 0; d < a->ndims; d++) {
    if (!kl_race_form_same(&a->idx[d], &b->idx[d])) return false;
    for (uint8_t i = 0; i < a->idx[d].n; i++) {
      uint16_t x = a->idx[d].t[i].var;
      if (x < KL_RACE_NATOMS || x >= KL_RACE_DERIVED) continue;
      const struct kl_race_slot *sl = &slots[x - KL_RACE_NATOMS];
      if (memcmp(sl->va, sl->vb, (size_t)sl->n * sizeof *sl->va)) return false;
    }
  }
  bool all[KL_RACE_THREADS];
  int64_t el[KL_RACE_THREADS][KL_RACE_MAX_DIMS];
  for (int t = 0; t < r->nthreads; t++) {
    all[t] = true;
    for (uint8_t d = 0; d < a->ndims; d++)
      el[t][d] = kl_race_thread_part(r, &a->idx[d], r->atoms[t]);
  }
  return !kl_race_any_pair(r, NULL, a->ndims, all, (const int64_t(*)[KL_RACE_MAX_DIMS])el, all,
                           (const int64_t(*)[KL_RACE_MAX_DIMS])el);
}

/* Pairs decided, by their content after the symbols became slots: the sides' forms with each
 * derived coordinate written out, the values each slot takes, and whether SIMD groups order the
 * pair. That is everything the valuations read, so a pair asked again (a loop's later passes
 * walk its body again; a statement repeated meets the same partners) is answered by a lookup. */
enum { KL_RACE_MEMO_MAX = 1 << 14 };
struct kl_race_memo_entry {
  uint64_t h;
  size_t off; /* the key's bytes in keys */
  uint32_t len;
  uint32_t cost; /* the valuations its decision tried */
  uint32_t epoch; /* the last epoch that asked it (kl_race_memo_epoch) */
  bool met;
  bool used;
};
struct kl_race_memo {
  struct kl_race_memo_entry *e;
  size_t cap, n;
  unsigned char *keys, *key; /* every stored key, end to end; the key being built */
  size_t nkeys, cap_keys, nkey, cap_key;
  uint64_t valuations, asked, answered;
  uint32_t epoch;
  uint64_t distinct; /* valuations, each pair's counted once per epoch that asks it */
};

struct kl_race_memo *kl_race_memo_new(void) {
  struct kl_race_memo *m = kl_arena_xmalloc(sizeof *m);
  memset(m, 0, sizeof *m);
  return m;
}

void kl_race_memo_delete(struct kl_race_memo *m) {
  if (!m) return;
  free(m->e);
  free(m->keys);
  free(m->key);
  free(m);
}

void kl_race_memo_stats(const struct kl_race_memo *m, uint64_t *valuations, uint64_t *asked,
                        uint64_t *answered) {
  if (valuations) *valuations = m ? m->valuations : 0;
  if (asked) *asked = m ? m->asked : 0;
  if (answered) *answered = m ? m->answered : 0;
}

void kl_race_memo_epoch(struct kl_race_memo *m) {
  if (m) m->epoch++;
}

uint64_t kl_race_memo_distinct(const struct kl_race_memo *m) {
  return m ? m->distinct : 0;
}

bool kl_race_memo_holds(uint64_t asked) {
  return asked < KL_RACE_MEMO_MAX;
}

bool kl_race_memo_room(const struct kl_race_memo *m) {
  return !m || m->n < KL_RACE_MEMO_MAX;
}

size_t kl_race_memo_size(const struct kl_race_memo *m) {
  return m ? m->n : 0;
}

bool kl_race_memo_spare(const struct kl_race_memo *m) {
  return !m || m->n < KL_RACE_MEMO_MAX / 2;
}

static void kl_memo_put(struct kl_race_memo *m, const void *p, size_t n) {
  if (m->nkey + n > m->cap_key) {
    m->cap_key = (m->nkey + n) * 2;
    m->key = kl_arena_xrealloc(m->key, m->cap_key);
  }
  memcpy(m->key + m->nkey, p, n);
  m->nkey += n;
}

static void kl_memo_put_i64(struct kl_race_memo *m, int64_t v) {
  kl_memo_put(m, &v, sizeof v);
}

static void kl_memo_put_form(struct kl_race_memo *m, const struct kl_race_form *f,
                             const struct kl_race_derived *der, size_t nder) {
  kl_memo_put_i64(m, f->known ? f->n : -1);
  kl_memo_put_i64(m, f->c);
  for (uint8_t i = 0; i < f->n; i++) {
    uint16_t x = f->t[i].var;
    kl_memo_put_i64(m, f->t[i].k);
    if (x >= KL_RACE_DERIVED && (size_t)(x - KL_RACE_DERIVED) < nder) {
      /* A derived coordinate by what it is, not by its place in this unit's table. */
      const struct kl_race_derived *d = &der[x - KL_RACE_DERIVED];
      kl_memo_put_i64(m, -2 - d->op);
      kl_memo_put_i64(m, d->c);
      kl_memo_put_form(m, &d->base, NULL, 0);
    } else {
      kl_memo_put_i64(m, x);
    }
  }
}

static void kl_memo_put_side(struct kl_race_memo *m, const struct kl_race_side *s,
                             const struct kl_race_derived *der, size_t nder) {
  kl_memo_put_i64(m, s->store);
  kl_memo_put_i64(m, s->ranged ? 2 + s->certain : s->certain);
  if (s->ranged) {
    kl_memo_put_i64(m, s->lo);
    kl_memo_put_i64(m, s->hi);
  }
  kl_memo_put_i64(m, s->ndims);
  for (uint8_t d = 0; d < s->ndims; d++) kl_memo_put_form(m, &s->idx[d], der, nder);
  kl_memo_put_i64(m, s->ncons);
  for (uint8_t c = 0; c < s->ncons; c++) {
    kl_memo_put_form(m, &s->cons[c].e, der, nder);
    kl_memo_put_i64(m, s->cons[c].op);
    kl_memo_put_i64(m, s->cons[c].mod);
    kl_memo_put_i64(m, s->cons[c].off);
  }
}

static uint64_t kl_memo_hash(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3u;
  return h;
}

/* The entry for the key just built: its own, or the empty one it would take (NULL when the
 * table is full and the key is not in it). */
static struct kl_race_memo_entry *kl_memo_find(struct kl_race_memo *m, uint64_t h) {
  if (!m->cap) return NULL;
  size_t i = (size_t)h & (m->cap - 1);
  for (;;) {
    struct kl_race_memo_entry *e = &m->e[i];
    if (!e->used) return e;
    if (e->h == h && e->len == m->nkey && !memcmp(m->keys + e->off, m->key, m->nkey)) return e;
    i = (i + 1) & (m->cap - 1);
  }
}

static void kl_memo_store(struct kl_race_memo *m, uint64_t h, bool met, uint32_t cost) {
  if (m->n >= KL_RACE_MEMO_MAX) return; /* enough remembered: later pairs are decided afresh */
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 256;
    struct kl_race_memo_entry *old = m->e;
    size_t ocap = m->cap;
    m->e = kl_arena_xmalloc(cap * sizeof *m->e);
    memset(m->e, 0, cap * sizeof *m->e);
    m->cap = cap;
    for (size_t i = 0; i < ocap; i++) {
      if (!old[i].used) continue;
      size_t j = (size_t)old[i].h & (cap - 1);
      while (m->e[j].used) j = (j + 1) & (cap - 1);
      m->e[j] = old[i];
    }
    free(old);
  }
  struct kl_race_memo_entry *e = kl_memo_find(m, h);
  if (!e || e->used) return;
  if (m->nkeys + m->nkey > m->cap_keys) {
    m->cap_keys = (m->nkeys + m->nkey) * 2;
    m->keys = kl_arena_xrealloc(m->keys, m->cap_keys);
  }
  memcpy(m->keys + m->nkeys, m->key, m->nkey);
  *e = (struct kl_race_memo_entry){h, m->nkeys, (uint32_t)m->nkey, cost, m->epoch, met, true};
  m->nkeys += m->nkey;
  m->n++;
}

/* A pair with a ranged side under one valuation (kl_race_meet says when it meets). A store with
 * itself (b NULL): more of its threads (or SIMD groups, when group is not NULL) than elements in
 * its range, counted in the sample, or over the whole threadgroup the launch gives when no
 * condition picks among its threads. Else a thread of the ranged side (on_r) for which each
 * element of its range is the other side's element of another thread (of another SIMD group). */
static bool kl_race_ranged_pair(const struct kl_race_run *r, const uint64_t *group,
                                const struct kl_race_side *rs, const struct kl_race_order *o,
                                const bool *on_r, const struct kl_race_side *ks,
                                const bool *on_k, const int64_t (*el_k)[KL_RACE_MAX_DIMS]) {
  const int64_t *tg = o->tg;
  int64_t width = rs->hi - rs->lo + 1;
  if (width <= 0) return false;
  /* A kernel that says how many threads it runs at most: no sample thread past that counts. */
  int cap = o->max_total > 0 && o->max_total < r->nthreads ? (int)o->max_total : r->nthreads;
  if (!ks) {
    int64_t count = 0;
    uint64_t groups = 0;
    for (int t = 0; t < cap; t++) {
      if (!on_r[t]) continue;
      count++;
      groups |= (uint64_t)1 << (r->atoms[t][KL_RACE_SIMD] % 64);
    }
    if (group)
      for (count = 0; groups; groups &= groups - 1) count++;
    int64_t total = tg[0] > 0 && tg[1] > 0 && tg[2] > 0 ? tg[0] * tg[1] * tg[2] : 0;
    if (o->max_total > 0 && total > o->max_total) total = o->max_total;
    if (!rs->ncons && total > r->nthreads)
      count = group ? (total + KL_RACE_SIMD_WIDTH - 1) / KL_RACE_SIMD_WIDTH : total;
    return count > width;
  }
  if (width > cap) return false;
  uint64_t at[KL_RACE_THREADS] = {0};
  for (int u = 0; u < cap; u++) {
    if (!on_k[u]) continue;
    int64_t e = el_k[u][0] - rs->lo;
    if (e >= 0 && e < width) at[e] |= (uint64_t)1 << u;
  }
  for (int t = 0; t < cap; t++) {
    if (!on_r[t]) continue;
    uint64_t not_t = ~((uint64_t)1 << t) & (group ? ~group[t] : ~(uint64_t)0);
    bool all = true;
    for (int64_t e = 0; e < width && all; e++) all = (at[e] & not_t) != 0;
    if (all) return true;
  }
  return false;
}

bool kl_race_meet(const struct kl_race_side *a, const struct kl_race_side *b,
                  const struct kl_race_order *o, const struct kl_race_sym *syms, size_t nsyms,
                  const struct kl_race_derived *der, size_t nder, uint32_t *budget) {
  return kl_race_meet_memo(a, b, o, syms, nsyms, der, nder, budget, NULL);
}

/* Whether the pair meets under one valuation's parts (kl_race_sym_parts) of its prepared sides:
 * some thread's element on one side is another thread's on the other (in another SIMD group
 * when gr is not NULL); a ranged side by kl_race_ranged_pair. */
static bool kl_race_valuation_meets(const struct kl_race_run *r, const uint64_t *gr,
                                    const struct kl_race_side *a, const struct kl_race_side *b,
                                    const struct kl_race_order *o, bool crowd,
                                    const struct kl_race_prep *pa, const struct kl_race_prep *pb,
                                    const int64_t *cs_a, const int64_t *ds_a,
                                    const int64_t *cs_b, const int64_t *ds_b) {
  bool on_a[KL_RACE_THREADS], on_b[KL_RACE_THREADS];
  int64_t el_a[KL_RACE_THREADS][KL_RACE_MAX_DIMS], el_b[KL_RACE_THREADS][KL_RACE_MAX_DIMS];
  kl_race_elems(r, pa, cs_a, ds_a, on_a, el_a);
  kl_race_elems(r, pb, cs_b, ds_b, on_b, el_b);
  if (!a->ranged && !b->ranged)
    return kl_race_any_pair(r, gr, a->ndims, on_a, (const int64_t(*)[KL_RACE_MAX_DIMS])el_a,
                            on_b, (const int64_t(*)[KL_RACE_MAX_DIMS])el_b);
  if (crowd) return kl_race_ranged_pair(r, gr, a, o, on_a, NULL, NULL, NULL);
  return a->ranged ? kl_race_ranged_pair(r, gr, a, o, on_a, b, on_b,
                                         (const int64_t(*)[KL_RACE_MAX_DIMS])el_b)
                   : kl_race_ranged_pair(r, gr, b, o, on_b, a, on_a,
                                         (const int64_t(*)[KL_RACE_MAX_DIMS])el_a);
}

bool kl_race_meet_memo(const struct kl_race_side *a, const struct kl_race_side *b,
                       const struct kl_race_order *o, const struct kl_race_sym *syms,
                       size_t nsyms, const struct kl_race_derived *der, size_t nder,
                       uint32_t *budget, struct kl_race_memo *memo) {
  if (!a->store && !b->store) return false;
  if (budget && !*budget) return false; /* spent: not even the pair's set-up */
  if (a->ndims != b->ndims || !a->ndims) return false;
  if (a->store && b->store && a->same_value && b->same_value &&
      !strcmp(a->same_value, b->same_value))
    return false; /* every thread stores the same value: benign */
  /* A ranged side: only what is certain (see race.h). */
  bool crowd = a->ranged && a == b && a->store && !o->crossed;
  if ((a->ranged || b->ranged) &&
      (!a->certain || !b->certain || a->ndims != 1 || (a->ranged && b->ranged && !crowd)))
    return false;
  for (uint8_t d = 0; d < a->ndims; d++)
    if (!a->idx[d].known || !b->idx[d].known) return false;
  struct kl_race_slot slots[KL_RACE_SLOTS];
  memset(slots, 0, sizeof slots);
  int nslots = 0;
  if (!kl_race_collect(a, slots, &nslots) || !kl_race_collect(b, slots, &nslots)) return false;
  /* A name that is no loop's variable is some value both sides share: the indices must agree on
   * it, or which element each touches is not known. */
  for (int i = 0; i < nslots; i++) {
    if (slots[i].sym >= nsyms) return false;
    const struct kl_race_sym *s = &syms[slots[i].sym];
    uint16_t v = (uint16_t)(KL_RACE_NATOMS + slots[i].sym);
    if (!s->loop) {
      for (uint8_t d = 0; d < a->ndims; d++)
        if (kl_race_coeff(&a->idx[d], v) != kl_race_coeff(&b->idx[d], v)) return false;
      static const int64_t free_vals[] = {1, 4, 16, 64, 1024};
      slots[i].rel = KL_REL_SAME;
      for (size_t k = 0; k < sizeof free_vals / sizeof *free_vals; k++)
        slots[i].va[slots[i].n] = slots[i].vb[slots[i].n] = free_vals[k], slots[i].n++;
      continue;
    }
    bool in_a = kl_race_has(a, v), in_b = kl_race_has(b, v);
    enum kl_race_rel rel = KL_REL_SAME;
    if (o->crossed && s->lo == o->lo && s->hi == o->hi)
      rel = KL_REL_SHIFT;
    else if (o->crossed && s->lo >= o->lo && s->hi <= o->hi)
      rel = KL_REL_INDEP;
    if (!(in_a && in_b) && rel == KL_REL_SHIFT) rel = KL_REL_INDEP;
    int64_t seq[KL_RACE_OPTIONS + 1];
    int len = kl_race_sequence(s, seq, KL_RACE_OPTIONS + 1);
    slots[i].rel = rel;
    /* The next iteration's value is not known: an index naming it says no element, but a
     * condition alone (the loop's own `r < n`) holds for some value in each iteration. */
    if (rel == KL_REL_SHIFT && !s->step && !kl_race_in_idx(a, v) && !kl_race_in_idx(b, v))
      rel = KL_REL_INDEP;
    if (rel == KL_REL_SHIFT) {
      if (!s->step) return false;
      for (int k = 0; k + 1 < len && slots[i].n < KL_RACE_OPTIONS; k++) {
        slots[i].va[slots[i].n] = seq[k];
        slots[i].vb[slots[i].n++] = seq[k + 1];
      }
    } else {
      for (int k = 0; k < len && slots[i].n < KL_RACE_OPTIONS; k++)
        slots[i].va[slots[i].n] = slots[i].vb[slots[i].n] = seq[k], slots[i].n++;
    }
    if (!slots[i].n) return false;
  }
  /* Independent sides take their values apart: b names a copy of the slot. */
  int nall = nslots;
  int b_slot[KL_RACE_SLOTS];
  for (int i = 0; i < nslots; i++) {
    b_slot[i] = i;
    if (slots[i].rel != KL_REL_INDEP) continue;
    if (nall == KL_RACE_SLOTS) return false;
    slots[nall] = slots[i];
    b_slot[i] = nall++;
  }
  /* The pair's own copies, their symbols renamed to slots. */
  struct kl_race_side ra = *a, rb = *b;
  for (int side = 0; side < 2; side++) {
    struct kl_race_side *s = side ? &rb : &ra;
    for (uint8_t d = 0; d <= s->ndims; d++) {
      int nf = d < s->ndims ? 1 : s->ncons;
      for (int c = 0; c < nf; c++) {
        struct kl_race_form *f = d < s->ndims ? &s->idx[d] : &s->cons[c].e;
        for (uint8_t i = 0; i < f->n; i++) {
          uint16_t v = f->t[i].var;
          if (v < KL_RACE_NATOMS || v >= KL_RACE_DERIVED) continue;
          int j = 0;
          while (j < nslots && slots[j].sym != v - KL_RACE_NATOMS) j++;
          f->t[i].var = (uint16_t)(KL_RACE_NATOMS + (side ? b_slot[j] : j));
        }
      }
    }
  }
  /* Fewer options where there are many symbols, so the combinations stay few. */
  long combos = 1;
  for (int i = 0; i < nall; i++) combos *= slots[i].n;
  while (combos > KL_RACE_COMBOS) {
    int w = 0;
    for (int i = 1; i < nall; i++)
      if (slots[i].n > slots[w].n) w = i;
    if (slots[w].n <= 1) break;
    combos /= slots[w].n;
    int keep = (slots[w].n + 1) / 2;
    for (int k = 0; k < keep; k++) {
      slots[w].va[k] = slots[w].va[k * 2 < slots[w].n ? k * 2 : slots[w].n - 1];
      slots[w].vb[k] = slots[w].vb[k * 2 < slots[w].n ? k * 2 : slots[w].n - 1];
    }
    slots[w].n = keep;
    combos *= keep;
  }
  /* The sample threadgroup, shaped after the coordinates the accesses name. */
  bool uses[KL_RACE_NATOMS] = {0};
  for (uint16_t v = 0; v < KL_RACE_NATOMS; v++) uses[v] = kl_race_has(a, v) || kl_race_has(b, v);
  for (size_t j = 0; j < nder; j++) {
    if (!kl_race_has(a, (uint16_t)(KL_RACE_DERIVED + j)) &&
        !kl_race_has(b, (uint16_t)(KL_RACE_DERIVED + j)))
      continue;
    for (uint8_t i = 0; i < der[j].base.n; i++)
      if (der[j].base.t[i].var < KL_RACE_NATOMS) uses[der[j].base.t[i].var] = true;
  }
  int nx = KL_RACE_THREADS, ny = 1, nz = 1;
  if (uses[KL_RACE_Z])
    nx = ny = nz = 4;
  else if (uses[KL_RACE_Y])
    nx = ny = 8;
  /* A launch that says the threadgroup's size: no thread past it (one SIMD group of 32 has no
   * second group to race with). */
  bool whole = true;
  int64_t total = 1;
  for (int c = 0; c < 3; c++) whole = whole && o->tg[c] > 0, total *= whole ? o->tg[c] : 1;
  if (whole && total <= KL_RACE_THREADS) {
    nx = (int)o->tg[0], ny = (int)o->tg[1], nz = (int)o->tg[2];
  } else {
    if (o->tg[0] > 0 && o->tg[0] < nx) nx = (int)o->tg[0];
    if (o->tg[1] > 0 && o->tg[1] < ny) ny = (int)o->tg[1];
    if (o->tg[2] > 0 && o->tg[2] < nz) nz = (int)o->tg[2];
  }
  /* A kernel that says how many threads it runs at most: a one-dimensional sample has no
   * thread past it (its linear index and each coordinate stay below that count). */
  if (o->max_total > 0 && ny == 1 && nz == 1 && nx > o->max_total) nx = (int)o->max_total;
  struct kl_race_run run;
  struct kl_race_run *r = &run;
  r->der = der;
  r->nder = nder;
  r->nthreads = nx * ny * nz;
  for (int z = 0, t = 0; z < nz; z++)
    for (int y = 0; y < ny; y++)
      for (int x = 0; x < nx; x++, t++) {
        int64_t *at = r->atoms[t];
        at[KL_RACE_X] = x;
        at[KL_RACE_Y] = y;
        at[KL_RACE_Z] = z;
        at[KL_RACE_LINEAR] = t;
        at[KL_RACE_LANE] = t % KL_RACE_SIMD_WIDTH;
        at[KL_RACE_SIMD] = t / KL_RACE_SIMD_WIDTH;
        at[KL_RACE_QLANE] = t % 4;
        at[KL_RACE_QUAD] = t / 4;
      }
  /* Each thread's SIMD group, as a mask of the threads in it. */
  uint64_t group[KL_RACE_THREADS], in_simd[KL_RACE_THREADS] = {0};
  for (int t = 0; t < r->nthreads; t++)
    in_simd[r->atoms[t][KL_RACE_SIMD] % KL_RACE_THREADS] |= (uint64_t)1 << t;
  for (int t = 0; t < r->nthreads; t++)
    group[t] = in_simd[r->atoms[t][KL_RACE_SIMD] % KL_RACE_THREADS];
  int pick[KL_RACE_SLOTS] = {0};
  if (!a->ranged && !b->ranged && kl_race_own_elements(r, &ra, &rb, slots)) return false;
  uint64_t h = 0;
  if (memo) {
    memo->asked++;
    memo->nkey = 0;
    kl_memo_put_side(memo, &ra, der, nder);
    kl_memo_put_side(memo, &rb, der, nder);
    kl_memo_put_i64(memo, o->simd_ordered);
    kl_memo_put_i64(memo, ((int64_t)nx << 32) | (ny << 16) | nz);
    if (a->ranged || b->ranged) {
      kl_memo_put_i64(memo, o->tg[0] * o->tg[1] * o->tg[2]);
      kl_memo_put_i64(memo, o->max_total);
    }
    kl_memo_put_i64(memo, nall);
    for (int i = 0; i < nall; i++) {
      kl_memo_put_i64(memo, slots[i].n);
      kl_memo_put(memo, slots[i].va, slots[i].n * sizeof *slots[i].va);
      kl_memo_put(memo, slots[i].vb, slots[i].n * sizeof *slots[i].vb);
    }
    h = kl_memo_hash(memo->key, memo->nkey);
    struct kl_race_memo_entry *e = kl_memo_find(memo, h);
    if (e && e->used) {
      memo->answered++;
      if (e->epoch != memo->epoch) {
        memo->distinct += e->cost;
        e->epoch = memo->epoch;
      }
      return e->met;
    }
  }
  struct kl_race_prep pa, pb;
  kl_race_prepare(r, &ra, &pa);
  kl_race_prepare(r, &rb, &pb);
  bool met = false;
  uint32_t cost = 0;
  /* A valuation that adds what one tried already adds meets nothing either: it is counted
   * (the budget and the memo's costs stay those of trying it), not tried. Where no side is
   * ranged, which elements meet depends on the difference of the two index parts alone;
   * elsewhere on both. */
  bool ranged = a->ranged || b->ranged;
  struct kl_race_seen seen;
  kl_race_seen_init(&seen, (int)combos, (ranged ? 2 : 1) * a->ndims + pa.nvary + pb.nvary);
  const uint64_t *gr = o->simd_ordered ? group : NULL;
  for (;;) {
    if (budget) {
      if (!*budget) {
        kl_race_seen_free(&seen);
        return false; /* undecided: not remembered */
      }
      --*budget;
    }
    if (memo) memo->valuations++, memo->distinct++;
    cost++;
    int64_t symv_a[KL_RACE_SLOTS], symv_b[KL_RACE_SLOTS];
    for (int i = 0; i < nall; i++) {
      symv_a[i] = slots[i].va[pick[i]];
      symv_b[i] = slots[i].vb[pick[i]];
    }
    int64_t cs_a[KL_RACE_MAX_CONS], ds_a[KL_RACE_MAX_DIMS];
    int64_t cs_b[KL_RACE_MAX_CONS], ds_b[KL_RACE_MAX_DIMS];
    kl_race_sym_parts(&pa, symv_a, cs_a, ds_a);
    kl_race_sym_parts(&pb, symv_b, cs_b, ds_b);
    int64_t key[2 * KL_RACE_MAX_DIMS + 2 * KL_RACE_MAX_CONS];
    int nk = 0;
    for (uint8_t d = 0; d < a->ndims; d++) {
      if (ranged)
        key[nk++] = ds_a[d], key[nk++] = ds_b[d];
      else
        key[nk++] = (int64_t)((uint64_t)ds_b[d] - (uint64_t)ds_a[d]);
    }
    for (uint8_t i = 0; i < pa.nvary; i++) key[nk++] = cs_a[i];
    for (uint8_t i = 0; i < pb.nvary; i++) key[nk++] = cs_b[i];
    bool fresh = kl_race_seen_add(&seen, key);
#ifdef KL_TRAIL_CHECK
    if (!fresh &&
        kl_race_valuation_meets(r, gr, a, b, o, crowd, &pa, &pb, cs_a, ds_a, cs_b, ds_b)) {
      fprintf(stderr, "kernlint: race check: a valuation not tried meets\n");
      abort();
    }
#endif
    if (fresh &&
        kl_race_valuation_meets(r, gr, a, b, o, crowd, &pa, &pb, cs_a, ds_a, cs_b, ds_b)) {
      met = true;
      break;
    }
    int i = 0;
    while (i < nall && ++pick[i] == slots[i].n) pick[i++] = 0;
    if (i == nall) break;
  }
  kl_race_seen_free(&seen);
  if (memo) kl_memo_store(memo, h, met, cost);
  return met;
}

int kl_race_coord_atom(const char *name, int64_t component) {
  if (!name) return -1;
  if (!strcmp(name, "thread_position_in_threadgroup") || !strcmp(name, "thread_position_in_grid"))
    return component == 1 ? KL_RACE_Y : component == 2 ? KL_RACE_Z : KL_RACE_X;
  if (!strcmp(name, "thread_index_in_threadgroup")) return KL_RACE_LINEAR;
  if (!strcmp(name, "thread_index_in_simdgroup")) return KL_RACE_LANE;
  if (!strcmp(name, "simdgroup_index_in_threadgroup")) return KL_RACE_SIMD;
  if (!strcmp(name, "thread_index_in_quadgroup")) return KL_RACE_QLANE;
  if (!strcmp(name, "quadgroup_index_in_threadgroup")) return KL_RACE_QUAD;
  return -1;
}
