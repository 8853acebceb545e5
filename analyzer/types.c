#include "analyzer/types.h"

#include <ctype.h>
#include <string.h>

static void kl_types_add(struct kl_arena *a, struct kl_types *t, const char *name,
                         const char *type) {
  KL_VEC_PUSH(a, t->aliases, t->n, t->cap);
  t->aliases[t->n].name = name;
  t->aliases[t->n].type = type;
  t->n++;
}

struct kl_types_walk {
  struct kl_arena *a;
  const struct kl_unit *unit;
  struct kl_types *out;
};

/* Aliases may sit in namespaces, structs and function bodies, so the whole tree is visited. */
static enum kl_walk kl_types_visit(TSNode n, void *ctx) {
  struct kl_types_walk *w = ctx;
  const char *ty = ts_node_type(n);
  if (!strcmp(ty, "type_definition")) {
    TSNode type = ts_node_child_by_field_name(n, "type", 4);
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k && !ts_node_is_null(type); i++) {
      TSNode d = ts_node_named_child(n, i);
      if (!strcmp(ts_node_type(d), "type_identifier") && !ts_node_eq(d, type))
        kl_types_add(w->a, w->out, kl_dialect_node_text(w->a, w->unit, d),
                     kl_dialect_node_text(w->a, w->unit, type));
    }
    return KL_WALK_SKIP;
  }
  if (!strcmp(ty, "alias_declaration")) {
    TSNode name = ts_node_child_by_field_name(n, "name", 4);
    TSNode type = ts_node_child_by_field_name(n, "type", 4);
    if (!ts_node_is_null(name) && !ts_node_is_null(type))
      kl_types_add(w->a, w->out, kl_dialect_node_text(w->a, w->unit, name),
                   kl_dialect_node_text(w->a, w->unit, type));
    return KL_WALK_SKIP;
  }
  return KL_WALK_DESCEND;
}

void kl_types_collect(struct kl_arena *a, const struct kl_unit *unit, struct kl_types *out) {
  memset(out, 0, sizeof *out);
  struct kl_types_walk w = {a, unit, out};
  kl_dialect_walk(ts_tree_root_node(unit->tree), kl_types_visit, &w, NULL);
}

/* Drop qualifiers, `metal::`, `typename` and surrounding blanks; pointer/reference marks stay. */
static const char *kl_types_strip(struct kl_arena *a, const char *type) {
  char *buf = kl_arena_alloc(a, strlen(type) + 1);
  size_t o = 0;
  const char *p = type;
  while (*p) {
    while (*p && isspace((unsigned char)*p)) p++;
    const char *w = p;
    while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == ':')) p++;
    size_t len = (size_t)(p - w);
    if (len == 0) {
      if (*p) {
        buf[o++] = *p;
        p++;
      }
      continue;
    }
    if ((len == 5 && !memcmp(w, "const", 5)) || (len == 8 && !memcmp(w, "volatile", 8)) ||
        (len == 8 && !memcmp(w, "typename", 8)))
      continue;
    size_t cut = (size_t)(kl_msl_unprefix(w) - w);
    if (cut < len) {
      w += cut;
      len -= cut;
    }
    if (o && (isalnum((unsigned char)buf[o - 1]) || buf[o - 1] == '_')) buf[o++] = ' ';
    memcpy(buf + o, w, len);
    o += len;
  }
  buf[o] = '\0';
  return buf;
}

const char *kl_types_resolve(struct kl_arena *a, const struct kl_types *t, const char *type,
                             const struct kl_bindings *b) {
  const char *cur = kl_types_strip(a, type);
  /* Alias chains are short; the bound stops a cycle (typedef A B; typedef B A;). */
  for (int hop = 0; hop < 16; hop++) {
    const char *next = NULL;
    for (size_t i = 0; b && i < b->n && !next; i++)
      if (!strcmp(b->items[i].name, cur)) next = b->items[i].type;
    for (size_t i = 0; t && i < t->n && !next; i++)
      if (!strcmp(t->aliases[i].name, cur)) next = t->aliases[i].type;
    if (!next) break;
    cur = kl_types_strip(a, next);
  }
  return cur;
}

const struct kl_msl_type *kl_types_builtin(struct kl_arena *a, const struct kl_types *t,
                                           const char *type, const struct kl_bindings *b) {
  return kl_msl_type(kl_types_resolve(a, t, type, b));
}

/* Push the pieces of a macro body that is an argument list, split at its top-level commas, the
 * line continuations dropped; false when it has no such comma. */
static bool kl_types_spread(struct kl_arena *a, const char *text, const char ***v, size_t *n,
                            size_t *cap) {
  int nest = 0;
  bool comma = false;
  for (const char *p = text; *p; p++) {
    if (*p == '<' || *p == '(') nest++;
    if ((*p == '>' || *p == ')') && nest > 0) nest--;
    if (*p == ',' && !nest) comma = true;
  }
  if (!comma) return false;
  const char *p = text;
  for (;;) {
    const char *e = p;
    for (nest = 0; *e && (*e != ',' || nest); e++) {
      if (*e == '<' || *e == '(') nest++;
      if ((*e == '>' || *e == ')') && nest > 0) nest--;
    }
    char *piece = kl_arena_alloc(a, (size_t)(e - p) + 1);
    size_t k = 0;
    for (const char *q = p; q < e; q++)
      if (*q != '\\') piece[k++] = isspace((unsigned char)*q) ? ' ' : *q;
    piece[k] = '\0';
    while (k && piece[k - 1] == ' ') piece[--k] = '\0';
    while (*piece == ' ') piece++;
    KL_VEC_PUSH(a, *v, *n, *cap);
    (*v)[(*n)++] = piece;
    if (!*e) break;
    p = e + 1;
  }
  return true;
}

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
    size_t nb = nt < f->ntparams ? nt : f->ntparams;
    struct kl_binding *items = kl_arena_alloc(a, sizeof *items * (nb ? nb : 1));
    for (size_t k = 0; k < nb; k++) {
      items[k].name = f->tparams[k];
      items[k].type = kl_types_strip(a, targs[k]);
    }
    /* Instantiations that bind the same types (differing host names) are analysed once. */
    bool dup = false;
    for (size_t s = 0; s < n && !dup; s++) {
      if (sets[s].n != nb) continue;
      dup = true;
      for (size_t k = 0; k < nb && dup; k++)
        if (strcmp(sets[s].items[k].type, items[k].type)) dup = false;
    }
    if (dup) continue;
    KL_VEC_PUSH(a, sets, n, cap);
    sets[n].items = items;
    sets[n].n = nb;
    sets[n].label = in->host_name ? kl_arena_printf(a, "\"%s\"", in->host_name)
                                  : kl_arena_printf(a, "%s<...>", f->name);
    n++;
  }
  *out = sets;
  return n;
}
