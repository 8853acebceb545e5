/* A lowering's additions to the facts, kept for a later lowering of the same IR (replay.h). */
#include "analyzer/passes/replay.h"

#include <string.h>

uint32_t kl_replay_next(struct kl_replay *r, const struct kl_function *k) {
  if (r->kernel != k || !r->a) {
    kl_replay_free(r);
    r->a = kl_arena_new();
    r->kernel = k;
  }
  return ++r->nlow;
}

void kl_replay_alias(struct kl_replay *r, uint32_t ord, const struct kl_replay_entry *e) {
  if (!r->a) return;
  if (ord >= r->cap_of) {
    size_t cap = r->cap_of ? r->cap_of : 16;
    while (cap <= ord) cap *= 2;
    r->entry_of = kl_arena_grow(r->a, r->entry_of, r->cap_of, cap, sizeof *r->entry_of);
    r->cap_of = cap;
  }
  r->entry_of[ord] = (uint32_t)(e - r->v) + 1;
}

const struct kl_replay_entry *kl_replay_of(const struct kl_replay *r, const struct kl_function *k,
                                           uint32_t of) {
  if (!k || r->kernel != k || of >= r->cap_of || !r->entry_of[of]) return NULL;
  return &r->v[r->entry_of[of] - 1];
}

const struct kl_replay_entry *kl_replay_find(const struct kl_replay *r,
                                             const struct kl_function *k, uint64_t h) {
  if (!k || r->kernel != k) return NULL;
  for (size_t i = 0; i < r->n; i++)
    if (r->v[i].hash == h) return &r->v[i];
  return NULL;
}

void *kl_replay_copy(struct kl_replay *r, const void *p, size_t n, size_t sz) {
  if (!n || !p || !r->a) return NULL;
  void *c = kl_arena_alloc_raw(r->a, n * sz);
  memcpy(c, p, n * sz);
  return c;
}

struct kl_replay_entry *kl_replay_keep(struct kl_replay *r, const struct kl_function *k,
                                       uint64_t h, uint32_t ord, struct kl_replay_mark m,
                                       const struct kl_access_table *t,
                                       const struct kl_bgaccess_list *l) {
  if (!k || r->kernel != k || !r->a) return NULL;
  /* Without the bounds-guard list (or with a run of it that joined another), what the
   * lowering added cannot be told apart from what it changed. */
  if (!l || !t || l->nruns != m.nruns + 1 || l->runs[m.nruns].joined) return NULL;
  KL_VEC_PUSH(r->a, r->v, r->n, r->cap);
  struct kl_replay_entry *e = &r->v[r->n++];
  memset(e, 0, sizeof *e);
  e->hash = h;
  e->naccess = t->n - m.naccess;
  e->access_first = m.naccess;
  e->access = kl_replay_copy(r, t->v ? t->v + m.naccess : NULL, e->naccess, sizeof *e->access);
  e->nbg = l->n - m.nbg;
  e->bg = kl_replay_copy(r, l->v ? l->v + m.nbg : NULL, e->nbg, sizeof *e->bg);
  kl_replay_alias(r, ord, e);
  return e;
}

void kl_replay_access(struct kl_arena *a, const struct kl_replay_entry *e,
                      struct kl_access_table *t, const char *inst) {
  size_t first = t->n;
  const char *label = inst ? kl_arena_strdup(a, inst) : NULL;
  for (size_t i = 0; i < e->naccess; i++) {
    KL_VEC_PUSH(a, t->v, t->n, t->cap);
    struct kl_access *x = &t->v[t->n++];
    *x = e->access[i];
    x->inst = label;
    /* An index into the table: of this lowering's entries, as in the one copied. */
    x->index_rep = (uint32_t)(x->index_rep - e->access_first + first);
  }
}

const char **kl_replay_names(struct kl_arena *a, const struct kl_ir_fn *f, size_t *n) {
  size_t nn = !f->inst ? (f->kernel ? 1 : 0) : f->nhosts ? f->nhosts : 1;
  const char **names = kl_arena_alloc(a, (nn + 1) * sizeof *names);
  for (size_t i = 0; i < nn; i++)
    names[i] = kl_arena_strdup(a, !f->inst     ? f->kernel->name
                                  : f->nhosts ? f->hosts[i]
                                              : f->inst);
  *n = nn;
  return names;
}

void kl_replay_free(struct kl_replay *r) {
  if (r->a) kl_arena_delete(r->a);
  memset(r, 0, sizeof *r);
}
