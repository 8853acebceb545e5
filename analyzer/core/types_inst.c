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

/* The index of the set among sets[0, n) that binds the same types, or n. */
size_t kl_types_same(const struct kl_bindings *sets, size_t n,
                     const struct kl_binding *items, size_t nb) {
  for (size_t s = 0; s < n; s++) {
    if (sets[s].n != nb) continue;
    bool same = true;
    for (size_t k = 0; k < nb && same; k++)
      if (strcmp(sets[s].items[k].type, items[k].type)) same = false;
    if (same) return s;
  }
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

/* Add an instantiation to those a set stands for. */
static void kl_types_instance(struct kl_arena *a, struct kl_bindings *b,
                              const struct kl_instance *in) {
  const struct kl_instance **v = kl_arena_alloc(a, (b->ninstances + 1) * sizeof *v);
  if (b->ninstances) memcpy(v, b->instances, b->ninstances * sizeof *v);
  v[b->ninstances++] = in;
  b->instances = v;
}

size_t kl_types_instances(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                          struct kl_bindings **out) {
  if (f->ntparams == 0) {
    *out = kl_arena_alloc(a, sizeof **out);
    return 1;
  }
  struct kl_bindings *sets = NULL;
  size_t n = 0, cap = 0;
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
    size_t s_dup = kl_types_same(sets, n, items, nb);
    bool dup = s_dup < n;
    const char *name = in->host_name ? in->host_name : kl_arena_printf(a, "%s<...>", f->name);
    if (dup) {
      kl_types_name(a, &sets[s_dup], name);
      kl_types_instance(a, &sets[s_dup], in);
      continue;
    }
    KL_VEC_PUSH(a, sets, n, cap);
    memset(&sets[n], 0, sizeof sets[n]);
    kl_types_name(a, &sets[n], name);
    kl_types_instance(a, &sets[n], in);
    sets[n].items = items;
    sets[n].n = nb;
    sets[n].label = in->host_name ? kl_arena_printf(a, "\"%s\"", in->host_name)
                                  : kl_arena_printf(a, "%s<...>", f->name);
    n++;
  }
  *out = sets;
  return n;
}

size_t kl_types_xinstances(struct kl_arena *a, const struct kl_function *f,
                           const struct kl_inst *xinsts, size_t nxinsts,
                           struct kl_bindings **out) {
  struct kl_bindings *sets = NULL;
  size_t n = 0, cap = 0;
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
    size_t s_dup = kl_types_same(sets, n, items, nb);
    if (s_dup == n) {
      KL_VEC_PUSH(a, sets, n, cap);
      memset(&sets[n], 0, sizeof sets[n]);
      sets[n].items = items;
      sets[n].n = nb;
      sets[n].label = in->host_name ? kl_arena_printf(a, "\"%s\"", in->host_name)
                                    : kl_arena_printf(a, "%s<...>", f->name);
      n++;
    }
    kl_types_name(a, &sets[s_dup], name);
  }
  *out = sets;
  return n;
}
