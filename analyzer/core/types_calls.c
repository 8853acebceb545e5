/* Types: the bindings a templated helper takes from its calls in the unit (kl_types_callers),
 * split from types.c for size. */
#include "analyzer/core/types.h"
#include "analyzer/core/types_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- Bindings from calls ------------------------------------------------------------------- */

#define KL_TYPES_CALL_DEPTH 4

struct kl_types_calls {
  struct kl_arena *a;
  const struct kl_model *m;
  const struct kl_function *caller, *f;
  const char ***lists; /* the template arguments of each call of f found */
  size_t *nargs;
  size_t n, cap, cap_n;
};

/* The alias `using name = X<...>;` in a function body or at file scope: its template_type. */
static TSNode kl_types_alias_at(const struct kl_unit *u, TSNode scope, const char *name,
                                int depth) {
  TSNode none = {{0}, NULL, NULL};
  uint32_t k = ts_node_named_child_count(scope);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(scope, i);
    if (kl_types_is(c, "alias_declaration")) {
      TSNode an = kl_node_field(c, "name");
      TSNode ty = kl_node_field(ts_node_child_by_field_name(c, "type", 4), "type");
      uint32_t s = ts_node_start_byte(an), e = ts_node_end_byte(an);
      if (!kl_node_null(an) && e - s == strlen(name) && !memcmp(u->buf + s, name, e - s) &&
          kl_types_is(ty, "template_type"))
        return ty;
    } else if (depth < 2 &&
               (kl_types_is(c, "namespace_definition") || kl_types_is(c, "declaration_list"))) {
      TSNode r = kl_types_alias_at(u, c, name, depth + 1);
      if (!kl_node_null(r)) return r;
    }
  }
  return none;
}

/* The template arguments a call's callee gives f: `h<A, B>`, `S<A, B>::run`, `K::run` with K an
 * alias of `S<A, B>`, and f's own parameter names for a sibling member's unqualified call. */
static bool kl_types_call_args(struct kl_types_calls *w, TSNode callee, const char ***out,
                               size_t *n) {
  struct kl_arena *a = w->a;
  const struct kl_unit *u = w->m->unit;
  TSNode list = {{0}, NULL, NULL};
  if (kl_types_is(callee, "template_function")) {
    list = kl_node_field(callee, "arguments");
  } else if (kl_types_is(callee, "qualified_identifier")) {
    TSNode sc = kl_node_field(callee, "scope");
    if (kl_types_is(sc, "template_type")) {
      list = kl_node_field(sc, "arguments");
    } else if (kl_types_is(sc, "namespace_identifier") || kl_types_is(sc, "type_identifier")) {
      const char *name = kl_dialect_node_text(a, u, sc);
      TSNode ty =
          kl_node_null(w->caller->body) ? list : kl_types_alias_at(u, w->caller->body, name, 0);
      if (kl_node_null(ty)) ty = kl_types_alias_at(u, ts_tree_root_node(u->tree), name, 0);
      if (!kl_node_null(ty)) list = kl_node_field(ty, "arguments");
    }
  } else if (kl_types_is(callee, "identifier") && w->caller->owner && w->f->owner &&
             !strcmp(w->caller->owner, w->f->owner)) {
    *out = w->f->tparams;
    *n = w->f->ntparams;
    return true;
  }
  if (!kl_types_is(list, "template_argument_list")) return false;
  const char **v = NULL;
  size_t nv = 0, cap = 0;
  uint32_t k = ts_node_named_child_count(list);
  for (uint32_t i = 0; i < k; i++) {
    const char *t = kl_dialect_node_text(a, u, kl_node_named_child(list, i));
    const char *body = kl_model_const(w->m, t, strlen(t));
    if (!body || !kl_types_spread(a, body, &v, &nv, &cap)) {
      KL_VEC_PUSH(a, v, nv, cap);
      v[nv++] = t;
    }
  }
  *out = v;
  *n = nv;
  return true;
}

/* Whether f is the call operator of a struct S and callee a local `S<A, B> op;` of the caller:
 * then the arguments of its type. */
static bool kl_types_functor_args(struct kl_types_calls *w, TSNode callee, const char ***out,
                                  size_t *n) {
  const struct kl_function *f = w->f;
  if (!f->owner || strncmp(f->name, "operator", 8) || !kl_types_is(callee, "identifier"))
    return false;
  const struct kl_var *v = kl_model_var(w->caller, kl_dialect_node_text(w->a, w->m->unit, callee));
  const char *ty = v && v->type && !v->is_pointer ? kl_types_strip(w->a, v->type) : NULL;
  size_t on = strlen(f->owner);
  if (!ty || strncmp(ty, f->owner, on) || ty[on] != '<') return false;
  const char *close = strrchr(ty, '>');
  if (!close || close < ty + on + 1) return false;
  char *inner = kl_arena_alloc(w->a, (size_t)(close - ty - (long)on));
  memcpy(inner, ty + on + 1, (size_t)(close - ty - (long)on - 1));
  size_t cap = 0;
  *out = NULL;
  *n = 0;
  return kl_types_split(w->a, inner, out, n, &cap);
}

/* The k-th call of caller c, when it calls w->f: its template arguments join w's lists. */
static void kl_types_call_visit(const struct kl_function *c, size_t k, struct kl_types_calls *w) {
  TSNode callee = kl_node_field(c->calls[k], "function");
  const char **args;
  size_t nargs;
  if (!kl_node_null(callee) &&
      ((c->call_targets[k] == w->f && kl_types_call_args(w, callee, &args, &nargs)) ||
       kl_types_functor_args(w, callee, &args, &nargs))) {
    KL_VEC_PUSH(w->a, w->lists, w->n, w->cap);
    KL_VEC_PUSH(w->a, w->nargs, w->n, w->cap_n);
    w->lists[w->n] = args;
    w->nargs[w->n++] = nargs;
  }
}

/* The sets found so far by their types, so that a helper bound by hundreds of instantiations
 * (candle's reduce: one per block size) does not compare each new set with every earlier one
 * (in a hash: the first set with the same types). */
struct kl_types_seen {
  size_t *at; /* malloc'd: 1 + the set's index, 0 for an empty slot */
  uint64_t *h;
  size_t n, cap;
};

uint64_t kl_types_bindings_hash(const struct kl_binding *items, size_t nb) {
  uint64_t h = 1469598103934665603u ^ nb;
  for (size_t k = 0; k < nb; k++)
    h = (h ^ kl_types_fnv(items[k].type)) * 1099511628211u;
  return h;
}

bool kl_types_bindings_same(const struct kl_bindings *s, const struct kl_binding *items,
                            size_t nb) {
  if (s->n != nb) return false;
  for (size_t k = 0; k < nb; k++)
    if (strcmp(s->items[k].type, items[k].type)) return false;
  return true;
}

/* The index among sets[0, n) of the set binding items' types, or n after recording that set n
 * will. */
static size_t kl_types_seen_find(struct kl_types_seen *t, const struct kl_bindings *sets,
                                 size_t n, const struct kl_binding *items, size_t nb) {
  if (4 * (t->n + 1) > 3 * t->cap) {
    struct kl_types_seen old = *t;
    t->cap = old.cap ? 2 * old.cap : 64;
    t->at = kl_arena_xmalloc(t->cap * sizeof *t->at);
    t->h = kl_arena_xmalloc(t->cap * sizeof *t->h);
    memset(t->at, 0, t->cap * sizeof *t->at);
    for (size_t i = 0; i < old.cap; i++) {
      if (!old.at[i]) continue;
      size_t k = old.h[i] & (t->cap - 1);
      while (t->at[k]) k = (k + 1) & (t->cap - 1);
      t->at[k] = old.at[i];
      t->h[k] = old.h[i];
    }
    free(old.at);
    free(old.h);
  }
  uint64_t h = kl_types_bindings_hash(items, nb);
  size_t k = h & (t->cap - 1);
  for (; t->at[k]; k = (k + 1) & (t->cap - 1))
    if (t->h[k] == h && kl_types_bindings_same(&sets[t->at[k] - 1], items, nb)) return t->at[k] - 1;
  t->at[k] = n + 1;
  t->h[k] = h;
  t->n++;
  return n;
}

/* The unit's functions by the names they call, and the answers of kl_types_callers_at per
 * function and depth (kl_types_callers_memo). */
struct kl_types_callers_index {
  size_t nslots;        /* a power of two, over twice the names */
  const char **names;   /* per slot, a name some function calls, or NULL */
  size_t **callers;     /* per slot, the indices of the functions calling it, in order */
  size_t *ncallers;
  struct kl_bindings **sets; /* per function and depth, its answer */
  size_t *nsets;
  unsigned char *done;
  struct kl_bindings **inst; /* per function, its kl_types_instances, once asked (inst_done) */
  size_t *ninst;
  unsigned char *inst_done;
};

/* kl_types_instances of caller c, asked once per function with the index: every helper c calls
 * asks for them, and each asking gathered them from all the unit's instantiations again. */
static size_t kl_types_caller_sets(struct kl_arena *a, const struct kl_model *m,
                                   const struct kl_function *c, struct kl_types_callers_index *x,
                                   struct kl_bindings **out) {
  size_t ci = (size_t)(c - m->functions);
  if (!x || c < m->functions || ci >= m->nfunctions) return kl_types_instances(a, m, c, out);
  if (!x->inst_done[ci]) {
    x->ninst[ci] = kl_types_instances(a, m, c, &x->inst[ci]);
    x->inst_done[ci] = 1;
  }
  *out = x->inst[ci];
  return x->ninst[ci];
}

static struct kl_types_callers_index *kl_types_callers_index(struct kl_arena *a,
                                                             const struct kl_model *m) {
  struct kl_types_callers_index *x = kl_arena_alloc(a, sizeof *x);
  size_t total = 0;
  for (size_t i = 0; i < m->nfunctions; i++) total += m->functions[i].ncallees;
  x->nslots = 16;
  while (x->nslots < 2 * total + 1) x->nslots <<= 1;
  x->names = kl_arena_alloc(a, x->nslots * sizeof *x->names);
  x->callers = kl_arena_alloc(a, x->nslots * sizeof *x->callers);
  x->ncallers = kl_arena_alloc(a, x->nslots * sizeof *x->ncallers);
  size_t *cap = kl_arena_alloc(a, x->nslots * sizeof *cap);
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *c = &m->functions[i];
    for (size_t k = 0; k < c->ncallees; k++) {
      size_t h = kl_types_fnv(c->callees[k]) & (x->nslots - 1);
      while (x->names[h] && strcmp(x->names[h], c->callees[k])) h = (h + 1) & (x->nslots - 1);
      x->names[h] = c->callees[k];
      /* A function lists each callee once: i is not already last. */
      if (x->ncallers[h] && x->callers[h][x->ncallers[h] - 1] == i) continue;
      KL_VEC_PUSH(a, x->callers[h], x->ncallers[h], cap[h]);
      x->callers[h][x->ncallers[h]++] = i;
    }
  }
  size_t nm = m->nfunctions * KL_TYPES_CALL_DEPTH + 1;
  x->sets = kl_arena_alloc(a, nm * sizeof *x->sets);
  x->nsets = kl_arena_alloc(a, nm * sizeof *x->nsets);
  x->done = kl_arena_alloc(a, nm);
  memset(x->done, 0, nm);
  x->inst = kl_arena_alloc(a, (m->nfunctions + 1) * sizeof *x->inst);
  x->ninst = kl_arena_alloc(a, (m->nfunctions + 1) * sizeof *x->ninst);
  x->inst_done = kl_arena_alloc(a, m->nfunctions + 1);
  return x;
}

/* The slot of the functions calling name in x, or SIZE_MAX when none does. */
static size_t kl_types_callers_of(const struct kl_types_callers_index *x, const char *name) {
  for (size_t h = kl_types_fnv(name) & (x->nslots - 1); x->names[h]; h = (h + 1) & (x->nslots - 1))
    if (!strcmp(x->names[h], name)) return h;
  return SIZE_MAX;
}

static size_t kl_types_callers_at(struct kl_arena *a, const struct kl_model *m,
                                  const struct kl_types *t, const struct kl_function *f,
                                  struct kl_bindings **out, int depth,
                                  struct kl_types_callers_index *x) {
  /* The answer depends on f and depth alone: a helper called by many others is asked once. */
  size_t fi = (size_t)(f - m->functions), mi = 0;
  bool memo = x && f >= m->functions && fi < m->nfunctions && depth < KL_TYPES_CALL_DEPTH;
  if (memo) {
    mi = fi * KL_TYPES_CALL_DEPTH + (size_t)depth;
    if (x->done[mi]) {
      *out = x->sets[mi];
      return x->nsets[mi];
    }
  }
  struct kl_bindings *sets = NULL;
  size_t n = 0, cap = 0;
  struct kl_types_seen seen = {0};
  /* By name: the model's callees are named, not resolved to members; a call operator is called
   * by its object's name. With the index, only the functions calling f's name are visited, in
   * the same order. */
  bool any = f->owner && !strncmp(f->name, "operator", 8);
  size_t slot = x && !any ? kl_types_callers_of(x, f->name) : SIZE_MAX;
  size_t nvisit = x && !any ? (slot == SIZE_MAX ? 0 : x->ncallers[slot]) : m->nfunctions;
  for (size_t j = 0; depth < KL_TYPES_CALL_DEPTH && j < nvisit; j++) {
    size_t i = x && !any ? x->callers[slot][j] : j;
    const struct kl_function *c = &m->functions[i];
    bool calls = any;
    for (size_t k = 0; !x && k < c->ncallees && !calls; k++)
      calls = !strcmp(c->callees[k], f->name);
    if (c == f || !(calls || (x && !any)) || kl_node_null(c->body)) continue;
    struct kl_types_calls w = {.a = a, .m = m, .caller = c, .f = f};
    for (size_t k = 0; k < c->ncalls; k++) kl_types_call_visit(c, k, &w);
    if (!w.n) continue;
    /* The caller's own bindings: none, its instantiations, or those its callers give it. */
    struct kl_bindings *cs = NULL;
    size_t nc = kl_types_caller_sets(a, m, c, x, &cs);
    if (c->ntparams && !nc) nc = kl_types_callers_at(a, m, t, c, &cs, depth + 1, x);
    for (size_t s = 0; s < nc; s++) {
      const struct kl_bindings *cb = c->ntparams ? &cs[s] : NULL;
      for (size_t l = 0; l < w.n; l++) {
        struct kl_binding *items = kl_arena_alloc(a, sizeof *items * (f->ntparams + 1));
        size_t nb = 0;
        for (size_t k = 0; k < f->ntparams; k++) {
          const char *arg = k < w.nargs[l] ? w.lists[l][k] : f->tdefaults[k];
          if (!arg) break;
          struct kl_bindings so_far = {.items = items, .n = nb};
          /* Arguments are the caller's names; a default is f's own, bound by those before. */
          items[nb].name = f->tparams[k];
          items[nb].type = kl_types_resolve(a, t, arg, k < w.nargs[l] ? cb : &so_far);
          nb++;
        }
        if (!nb) continue;
        size_t at = kl_types_seen_find(&seen, sets, n, items, nb);
        if (at == n) {
          KL_VEC_PUSH(a, sets, n, cap);
          memset(&sets[n], 0, sizeof sets[n]);
          sets[n].items = items;
          sets[n].n = nb;
          sets[n].label = kl_arena_printf(a, "%s<...>", f->name);
          n++;
        }
        if (cb)
          for (size_t k = 0; k < cb->nnames; k++) kl_types_name(a, &sets[at], cb->names[k]);
        else
          kl_types_name(a, &sets[at], c->name);
      }
    }
  }
  free(seen.at);
  free(seen.h);
  if (memo) {
    x->sets[mi] = sets;
    x->nsets[mi] = n;
    x->done[mi] = 1;
  }
  *out = sets;
  return n;
}

size_t kl_types_callers(struct kl_arena *a, const struct kl_model *m, const struct kl_types *t,
                        const struct kl_function *f, struct kl_bindings **out) {
  return kl_types_callers_at(a, m, t, f, out, 0, NULL);
}

size_t kl_types_callers_in(struct kl_types_callers_memo *memo, struct kl_arena *a,
                           const struct kl_model *m, const struct kl_types *t,
                           const struct kl_function *f, struct kl_bindings **out) {
  if (!memo->index) memo->index = kl_types_callers_index(a, m);
  return kl_types_callers_at(a, m, t, f, out, 0, memo->index);
}
