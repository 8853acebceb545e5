/* Types: the instantiations of a template, split from types.c for size: the sets of bindings its
 * explicit instantiations make, in this unit or in the other files of the run. */
#include "analyzer/core/types.h"
#include "analyzer/core/types_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t kl_types_targs(struct kl_arena *a, const struct kl_model *m, const struct kl_instance *in,
                      const char ***out) {
  const char **v = NULL;
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < in->ntargs; i++) {
    const char *t = in->targs[i];
    const char *body = kl_model_const(m, t, strlen(t));
    if (!body || !kl_types_spread(a, body, &v, &n, &cap)) {
      KL_VEC_PUSH(a, v, n, cap);
      v[n++] = t;
    }
  }
  *out = v;
  return n;
}

/* Add a name to the instantiations a set stands for, once. */
void kl_types_name(struct kl_arena *a, struct kl_bindings *b, const char *name) {
  for (size_t i = 0; i < b->nnames; i++)
    if (!strcmp(b->names[i], name)) return;
  const char **v = kl_arena_alloc(a, (b->nnames + 1) * sizeof *v);
  if (b->nnames) memcpy(v, b->names, b->nnames * sizeof *v);
  v[b->nnames++] = name;
  b->names = v;
}

/* While the sets of one template are gathered: each set's index by its types, each name already
 * in a set, and the room of each set's arrays. A template instantiated thousands of times
 * (MLX's copy kernels, by every file of the run) was gathered in time quadratic in its
 * instantiations: each compared with every set, each name with every name of its set, and each
 * array copied to grow by one. The sets, their order and their names are the same. */
struct kl_types_gather {
  struct kl_arena *a;
  struct kl_bindings **sets;
  size_t *n, *cap;
  size_t *by_types; /* 1 + a set's index, by the hash of its types; malloc'd */
  size_t cap_types;
  struct kl_types_named {
    size_t set; /* 1 + the set's index; 0 for an empty slot */
    const char *name;
  } *names; /* malloc'd */
  size_t nnames, cap_names;
  size_t *room; /* per set: room of its names, then of its instances; malloc'd */
  size_t cap_room;
};

/* The set binding items' types (the first with the same types), or *g->n. */
static size_t kl_types_gather_find(struct kl_types_gather *g, const struct kl_binding *items,
                                   size_t nb) {
  if (!g->cap_types) return *g->n;
  uint64_t h = kl_types_bindings_hash(items, nb);
  for (size_t i = h & (g->cap_types - 1); g->by_types[i]; i = (i + 1) & (g->cap_types - 1))
    if (kl_types_bindings_same(&(*g->sets)[g->by_types[i] - 1], items, nb))
      return g->by_types[i] - 1;
  return *g->n;
}

static void kl_types_gather_index(struct kl_types_gather *g, size_t set) {
  if (2 * (*g->n + 1) > g->cap_types) {
    size_t cap = g->cap_types ? 2 * g->cap_types : 64;
    free(g->by_types);
    g->by_types = kl_arena_xmalloc(cap * sizeof *g->by_types);
    memset(g->by_types, 0, cap * sizeof *g->by_types);
    g->cap_types = cap;
    for (size_t s = 0; s < *g->n; s++) {
      const struct kl_bindings *b = &(*g->sets)[s];
      size_t i = kl_types_bindings_hash(b->items, b->n) & (cap - 1);
      while (g->by_types[i]) i = (i + 1) & (cap - 1);
      g->by_types[i] = s + 1;
    }
    if (set < *g->n) return; /* indexed with the others */
  }
  const struct kl_bindings *b = &(*g->sets)[set];
  size_t i = kl_types_bindings_hash(b->items, b->n) & (g->cap_types - 1);
  while (g->by_types[i]) i = (i + 1) & (g->cap_types - 1);
  g->by_types[i] = set + 1;
}

/* A new set of items, last. */
static size_t kl_types_gather_add(struct kl_types_gather *g, struct kl_binding *items, size_t nb,
                                  const char *label) {
  KL_VEC_PUSH(g->a, *g->sets, *g->n, *g->cap);
  size_t s = *g->n;
  struct kl_bindings *b = &(*g->sets)[s];
  memset(b, 0, sizeof *b);
  b->items = items;
  b->n = nb;
  b->label = label;
  kl_types_gather_index(g, s);
  (*g->n)++;
  if (2 * *g->n > g->cap_room) {
    size_t cap = g->cap_room ? 2 * g->cap_room : 32;
    size_t *room = kl_arena_xmalloc(cap * sizeof *room);
    memset(room, 0, cap * sizeof *room);
    if (g->cap_room) memcpy(room, g->room, g->cap_room * sizeof *room);
    free(g->room);
    g->room = room;
    g->cap_room = cap;
  }
  return s;
}

static uint64_t kl_types_named_hash(size_t set, const char *name) {
  return kl_types_fnv(name) ^ ((uint64_t)set * 0x9e3779b97f4a7c15u);
}

/* Add a name to set s, once (as kl_types_name). */
static void kl_types_gather_name(struct kl_types_gather *g, size_t s, const char *name) {
  if (2 * (g->nnames + 1) > g->cap_names) {
    size_t cap = g->cap_names ? 2 * g->cap_names : 64;
    struct kl_types_named *t = kl_arena_xmalloc(cap * sizeof *t);
    memset(t, 0, cap * sizeof *t);
    for (size_t i = 0; i < g->cap_names; i++) {
      if (!g->names[i].set) continue;
      size_t k = kl_types_named_hash(g->names[i].set, g->names[i].name) & (cap - 1);
      while (t[k].set) k = (k + 1) & (cap - 1);
      t[k] = g->names[i];
    }
    free(g->names);
    g->names = t;
    g->cap_names = cap;
  }
  size_t k = kl_types_named_hash(s + 1, name) & (g->cap_names - 1);
  for (; g->names[k].set; k = (k + 1) & (g->cap_names - 1))
    if (g->names[k].set == s + 1 && !strcmp(g->names[k].name, name)) return;
  g->names[k] = (struct kl_types_named){s + 1, name};
  g->nnames++;
  struct kl_bindings *b = &(*g->sets)[s];
  size_t *room = &g->room[2 * s];
  if (b->nnames == *room) {
    *room = *room ? 2 * *room : 4;
    const char **v = kl_arena_alloc(g->a, *room * sizeof *v);
    if (b->nnames) memcpy(v, b->names, b->nnames * sizeof *v);
    b->names = v;
  }
  b->names[b->nnames++] = name;
}

/* Add an instantiation to those set s stands for. */
static void kl_types_gather_instance(struct kl_types_gather *g, size_t s,
                                     const struct kl_instance *in) {
  struct kl_bindings *b = &(*g->sets)[s];
  size_t *room = &g->room[2 * s + 1];
  if (b->ninstances == *room) {
    *room = *room ? 2 * *room : 4;
    const struct kl_instance **v = kl_arena_alloc(g->a, *room * sizeof *v);
    if (b->ninstances) memcpy(v, b->instances, b->ninstances * sizeof *v);
    b->instances = v;
  }
  b->instances[b->ninstances++] = in;
}

static void kl_types_gather_free(struct kl_types_gather *g) {
  free(g->by_types);
  free(g->names);
  free(g->room);
}

size_t kl_types_instances(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                          struct kl_bindings **out) {
  if (f->ntparams == 0) {
    *out = kl_arena_alloc(a, sizeof **out);
    return 1;
  }
  struct kl_bindings *sets = NULL;
  size_t n = 0, cap = 0;
  struct kl_types_gather g = {.a = a, .sets = &sets, .n = &n, .cap = &cap};
  for (size_t i = 0; i < m->ninstances; i++) {
    const struct kl_instance *in = &m->instances[i];
    if (strcmp(in->function, f->name)) continue;
    const char **targs;
    size_t nt = kl_types_targs(a, m, in, &targs);
    /* Parameters left out take their defaults (`short C = NCPSG`). */
    size_t nb = 0;
    struct kl_binding *items = kl_arena_alloc(a, sizeof *items * (f->ntparams + 1));
    for (size_t k = 0; k < f->ntparams; k++) {
      const char *arg = k < nt ? targs[k] : f->tdefaults[k];
      if (!arg) break;
      items[nb].name = f->tparams[k];
      items[nb++].type = kl_types_strip(a, arg);
    }
    /* Instantiations that bind the same types (differing host names) are analysed once. */
    size_t s = kl_types_gather_find(&g, items, nb);
    const char *name = in->host_name ? in->host_name : kl_arena_printf(a, "%s<...>", f->name);
    if (s == n)
      s = kl_types_gather_add(&g, items, nb,
                              in->host_name ? kl_arena_printf(a, "\"%s\"", in->host_name)
                                            : kl_arena_printf(a, "%s<...>", f->name));
    kl_types_gather_name(&g, s, name);
    kl_types_gather_instance(&g, s, in);
  }
  kl_types_gather_free(&g);
  *out = sets;
  return n;
}

size_t kl_types_xinstances(struct kl_arena *a, const struct kl_function *f,
                           const struct kl_inst *xinsts, size_t nxinsts,
                           struct kl_bindings **out) {
  struct kl_bindings *sets = NULL;
  size_t n = 0, cap = 0;
  struct kl_types_gather g = {.a = a, .sets = &sets, .n = &n, .cap = &cap};
  for (size_t i = 0; f->ntparams && i < nxinsts; i++) {
    const struct kl_inst *in = &xinsts[i];
    if (strcmp(in->function, f->name)) continue;
    size_t nb = 0;
    struct kl_binding *items = kl_arena_alloc(a, sizeof *items * (f->ntparams + 1));
    for (size_t k = 0; k < f->ntparams; k++) {
      const char *arg = f->tpos[k] < in->ntargs ? in->targs[f->tpos[k]] : f->tdefaults[k];
      if (!arg) break;
      items[nb].name = f->tparams[k];
      items[nb++].type = kl_types_strip(a, arg);
    }
    const char *name = in->host_name ? in->host_name : kl_arena_printf(a, "%s<...>", f->name);
    size_t s = kl_types_gather_find(&g, items, nb);
    if (s == n)
      s = kl_types_gather_add(&g, items, nb,
                              in->host_name ? kl_arena_printf(a, "\"%s\"", in->host_name)
                                            : kl_arena_printf(a, "%s<...>", f->name));
    kl_types_gather_name(&g, s, name);
  }
  kl_types_gather_free(&g);
  *out = sets;
  return n;
}
