#include "analyzer/core/types.h"
#include "analyzer/core/types_int.h"

#include "analyzer/core/node.h"
#include "analyzer/core/xdefs.h"
#include "grammar/consteval.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
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
  const uint32_t *kw; /* offsets of the words an alias starts with, in order; NULL: no filter */
  size_t nkw;
};

/* Offsets of each word in t[0, n), in order, appended to kw. */
static void kl_types_find(struct kl_arena *a, const char *t, uint32_t n, const char *word,
                          uint32_t **kw, size_t *nkw, size_t *cap) {
  size_t wl = strlen(word);
  for (const char *p = t, *end = t + n; (p = memchr(p, word[0], (size_t)(end - p))); p++) {
    if ((size_t)(end - p) < wl || memcmp(p, word, wl)) continue;
    KL_VEC_PUSH(a, *kw, *nkw, *cap);
    (*kw)[(*nkw)++] = (uint32_t)(p - t);
  }
}

/* Offsets of each `typedef` and `using` in t[0, n), in order: in a tree without errors every
 * type_definition holds the first as a token, every alias_declaration the second. */
static uint32_t *kl_types_keywords(struct kl_arena *a, const char *t, uint32_t n, size_t *nkw) {
  uint32_t *td = NULL, *us = NULL;
  size_t ntd = 0, nus = 0, ctd = 0, cus = 0;
  kl_types_find(a, t, n, "typedef", &td, &ntd, &ctd);
  kl_types_find(a, t, n, "using", &us, &nus, &cus);
  *nkw = ntd + nus;
  if (!*nkw) return NULL;
  uint32_t *kw = kl_arena_alloc(a, *nkw * sizeof *kw);
  for (size_t i = 0, j = 0, k = 0; k < *nkw; k++)
    kw[k] = j == nus || (i < ntd && td[i] < us[j]) ? td[i++] : us[j++];
  return kw;
}

/* Aliases may sit in namespaces, structs and function bodies, so the whole tree is visited, but
 * for the subtrees whose text holds no word an alias starts with. */
static enum kl_walk kl_types_visit(TSNode n, void *ctx) {
  struct kl_types_walk *w = ctx;
  if (w->kw) {
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    size_t lo = 0, hi = w->nkw;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (w->kw[mid] < s)
        lo = mid + 1;
      else
        hi = mid;
    }
    if (lo == w->nkw || w->kw[lo] >= e) return KL_WALK_SKIP;
  }
  const char *ty = ts_node_type(n);
  if (!strcmp(ty, "type_definition")) {
    TSNode type = kl_node_field(n, "type");
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k && !kl_node_null(type); i++) {
      TSNode d = kl_node_named_child(n, i);
      if (kl_node_is(d, "type_identifier") && !ts_node_eq(d, type))
        kl_types_add(w->a, w->out, kl_dialect_node_text(w->a, w->unit, d),
                     kl_dialect_node_text(w->a, w->unit, type));
    }
    return KL_WALK_SKIP;
  }
  if (!strcmp(ty, "alias_declaration")) {
    TSNode name = kl_node_field(n, "name");
    TSNode type = kl_node_field(n, "type");
    if (!kl_node_null(name) && !kl_node_null(type))
      kl_types_add(w->a, w->out, kl_dialect_node_text(w->a, w->unit, name),
                   kl_dialect_node_text(w->a, w->unit, type));
    return KL_WALK_SKIP;
  }
  return KL_WALK_DESCEND;
}

static size_t kl_types_hash(const char *s, size_t mask) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h & mask;
}

void kl_types_collect(struct kl_arena *a, const struct kl_unit *unit, struct kl_types *out) {
  memset(out, 0, sizeof *out);
  struct kl_types_walk w = {a, unit, out, NULL, 0};
  if (unit->nerrors) {
    /* Error recovery may build an alias whose keyword is missing: the whole tree is walked. */
    kl_dialect_walk(ts_tree_root_node(unit->tree), kl_types_visit, &w, NULL);
  } else {
    w.kw = kl_types_keywords(a, unit->buf, unit->len, &w.nkw);
    if (w.kw) kl_dialect_walk(ts_tree_root_node(unit->tree), kl_types_visit, &w, NULL);
  }
  /* Types are resolved for every expression of every instantiation, and a big file declares
   * hundreds of aliases: look them up by name. */
  size_t cap = 16;
  while (cap < 2 * out->n) cap *= 2;
  out->slots = kl_arena_alloc(a, cap * sizeof *out->slots);
  memset(out->slots, 0, cap * sizeof *out->slots);
  out->nslots = cap;
  for (size_t i = 0; i < out->n; i++) {
    size_t h = kl_types_hash(out->aliases[i].name, cap - 1);
    while (out->slots[h] && strcmp(out->aliases[out->slots[h] - 1].name, out->aliases[i].name))
      h = (h + 1) & (cap - 1);
    if (!out->slots[h]) out->slots[h] = (uint32_t)i + 1; /* the first of a name is the one used */
  }
}

/* The type of the first alias named name, or NULL. */
static const char *kl_types_alias(const struct kl_types *t, const char *name) {
  if (!t) return NULL;
  if (!t->nslots) {
    for (size_t i = 0; i < t->n; i++)
      if (!strcmp(t->aliases[i].name, name)) return t->aliases[i].type;
    return NULL;
  }
  for (size_t h = kl_types_hash(name, t->nslots - 1); t->slots[h]; h = (h + 1) & (t->nslots - 1))
    if (!strcmp(t->aliases[t->slots[h] - 1].name, name)) return t->aliases[t->slots[h] - 1].type;
  return NULL;
}

/* Drop qualifiers, `metal::`, `typename` and surrounding blanks; pointer/reference marks stay. */
const char *kl_types_strip(struct kl_arena *a, const char *type) {
  /* Most types are already bare ("float", "uint"): those are returned as they are, and only a
   * changed one is copied into the arena (the analyses resolve types millions of times). */
  size_t tlen = strlen(type);
  char small[128];
  char *heap = tlen < sizeof small ? NULL : kl_arena_alloc(a, tlen + 1);
  char *buf = heap ? heap : small;
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
  if (heap) return heap;
  return o == tlen && !memcmp(buf, type, o) ? type : kl_arena_strndup(a, buf, o);
}

static const char *kl_types_resolve_in(struct kl_arena *a, const struct kl_types *t,
                                       const char *type, const struct kl_bindings *b,
                                       unsigned char *looked);

/* A template spelling of an MSL type whose arguments name bindings or aliases
 * (`simdgroup_matrix<T, 8, 8>`, `vec<U, 4>`), with each top-level argument resolved: the
 * element type of such a value is the instantiation's. cur itself when nothing changes. */
static const char *kl_types_resolve_args(struct kl_arena *a, const struct kl_types *t,
                                         const char *cur, const struct kl_bindings *b,
                                         unsigned char *looked) {
  static const char *const msl[] = {"vec", "packed_vec", "simdgroup_matrix", "matrix", "atomic"};
  const char *lt = strchr(cur, '<');
  size_t n = strlen(cur);
  if (!lt || cur[n - 1] != '>') return cur;
  bool known = false;
  for (size_t i = 0; i < sizeof msl / sizeof *msl && !known; i++)
    known = (size_t)(lt - cur) == strlen(msl[i]) && !memcmp(cur, msl[i], lt - cur);
  if (!known) return cur;
  const char **v = NULL;
  size_t nv = 0, cap = 0;
  char *inner = kl_arena_strndup(a, lt + 1, n - (size_t)(lt - cur) - 2);
  if (!kl_types_split(a, inner, &v, &nv, &cap) || !nv) return cur;
  bool changed = false;
  const char *out = kl_arena_strndup(a, cur, (size_t)(lt - cur) + 1);
  for (size_t i = 0; i < nv; i++) {
    const char *arg = kl_types_strip(a, v[i]);
    const char *r = strchr(arg, '<') ? arg : kl_types_resolve_in(a, t, arg, b, looked);
    changed = changed || strcmp(r, arg);
    out = kl_arena_printf(a, "%s%s%s", out, i ? ", " : "", r);
  }
  return changed ? kl_arena_printf(a, "%s>", out) : cur;
}

/* kl_types_resolve, marking in looked (one flag per binding of b, when given) each binding whose
 * name a step looked up: the answer depends on b through those bindings only. */
static const char *kl_types_resolve_in(struct kl_arena *a, const struct kl_types *t,
                                       const char *type, const struct kl_bindings *b,
                                       unsigned char *looked) {
  const char *cur = kl_types_strip(a, type);
  /* Alias chains are short; the bound stops a cycle (typedef A B; typedef B A;). */
  for (int hop = 0; hop < 16; hop++) {
    const char *next = NULL;
    for (size_t i = 0; b && i < b->n && !next; i++)
      if (!strcmp(b->items[i].name, cur)) {
        next = b->items[i].type;
        if (looked) looked[i] = 1;
      }
    if (!next) next = kl_types_alias(t, cur);
    if (!next) break;
    cur = kl_types_strip(a, next);
  }
  return strchr(cur, '<') ? kl_types_resolve_args(a, t, cur, b, looked) : cur;
}

const char *kl_types_resolve(struct kl_arena *a, const struct kl_types *t, const char *type,
                             const struct kl_bindings *b) {
  return kl_types_resolve_in(a, t, type, b, NULL);
}

const struct kl_msl_type *kl_types_builtin(struct kl_arena *a, const struct kl_types *t,
                                           const char *type, const struct kl_bindings *b) {
  return kl_msl_type(kl_types_resolve(a, t, type, b));
}

const struct kl_msl_type *kl_types_builtin_in(struct kl_arena *a, const struct kl_types *t,
                                              const char *type, const struct kl_bindings *b,
                                              bool *bound) {
  size_t n = b ? b->n : 0;
  unsigned char small[16];
  unsigned char *looked = n < sizeof small ? small : kl_arena_alloc(a, n + 1);
  memset(looked, 0, n + 1);
  const struct kl_msl_type *r = kl_msl_type(kl_types_resolve_in(a, t, type, b, looked));
  *bound = false;
  for (size_t i = 0; i < n; i++) *bound = *bound || looked[i];
  return r;
}

/* Push the pieces of an argument list, split at its top-level commas, line continuations
 * dropped. */
bool kl_types_split(struct kl_arena *a, const char *text, const char ***v, size_t *n,
                    size_t *cap) {
  int nest;
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

/* kl_types_split for a macro body that is an argument list (`half, half4, ...`); false, pushing
 * nothing, when it has no top-level comma. */
bool kl_types_spread(struct kl_arena *a, const char *text, const char ***v, size_t *n,
                     size_t *cap) {
  int nest = 0;
  bool comma = false;
  for (const char *p = text; *p; p++) {
    if (*p == '<' || *p == '(') nest++;
    if ((*p == '>' || *p == ')') && nest > 0) nest--;
    if (*p == ',' && !nest) comma = true;
  }
  return comma && kl_types_split(a, text, v, n, cap);
}

/* ---- Types of expressions ------------------------------------------------------------------ */

static TSNode kl_types_field(TSNode n, const char *name) {
  return kl_node_field(n, name);
}

bool kl_types_is(TSNode n, const char *type) {
  return !kl_node_null(n) && kl_node_is(n, type);
}

/* A written type resolved under env's bindings (and recorded in env->looked). */
static const char *kl_types_env_resolve(struct kl_types_env *env, const char *type) {
  return kl_types_resolve_in(env->a, env->types, type, env->b, env->looked);
}

/* The MSL type a written type names under b, or NULL. */
static const struct kl_msl_type *kl_types_msl(struct kl_types_env *env, const char *type) {
  return type ? kl_msl_type(kl_types_env_resolve(env, type)) : NULL;
}

/* The scalar of a vector type (`v.x`, `v[0]`), the type itself for a scalar. */
static const char *kl_types_scalar(struct kl_types_env *env, const char *type) {
  const struct kl_msl_type *t = kl_types_msl(env, type);
  if (!t) return NULL;
  if (t->kind == KL_TYPE_VECTOR || t->kind == KL_TYPE_SCALAR) return t->scalar;
  return NULL;
}

/* Functions of the Metal standard library that compute in their argument's type. */
static bool kl_types_math_builtin(const char *s, size_t n) {
  static const char *const names[] = {
      "abs",   "exp",  "exp2",  "exp10", "log",   "log2",  "log10", "sqrt",  "rsqrt", "sin",
      "cos",   "tan",  "tanh",  "sinh",  "cosh",  "pow",   "powr",  "fma",   "fabs",  "max",
      "min",   "fmax", "fmin",  "clamp", "floor", "ceil",  "round", "trunc", "fract", "mix",
      "sign",  "erf",  "atan",  "asin",  "acos",  "atan2", "fmod",  "dot",   "precise::exp"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strlen(names[i]) == n && !memcmp(names[i], s, n)) return true;
  return false;
}

/* The name a call's callee node ends in (`exp` of `metal::exp`, `fast::exp`). */
static TSNode kl_types_callee_name(TSNode fn) {
  for (int i = 0; i < 4 && kl_types_is(fn, "qualified_identifier"); i++)
    fn = kl_types_field(fn, "name");
  return fn;
}

bool kl_types_is_math_call(const struct kl_unit *unit, TSNode call) {
  if (!kl_types_is(call, "call_expression")) return false;
  TSNode name = kl_types_callee_name(kl_types_field(call, "function"));
  if (!kl_types_is(name, "identifier")) return false;
  uint32_t s = ts_node_start_byte(name);
  return kl_types_math_builtin(unit->buf + s, ts_node_end_byte(name) - s);
}

static const char *kl_types_expr_raw(struct kl_types_env *env, struct kl_node_map *m,
                                     const void *wk, TSNode e);

/* What a computation under env depends on: env->looked swapped for a fresh one while it runs,
 * then added back, and kept as a mask (bit i: binding i), for answers remembered past one walk
 * (kl_types_dep_put). Without looked, or with more bindings than a mask holds, nothing is kept
 * (ok false). */
struct kl_types_deps {
  unsigned char *outer;
  unsigned char local[KL_TYPES_DEP_MAX + 1];
  size_t n;
  bool ok;
};

static void kl_types_deps_begin(struct kl_types_env *env, struct kl_types_deps *d) {
  d->outer = env->looked;
  d->n = env->b ? env->b->n : 0;
  d->ok = d->outer && d->n <= KL_TYPES_DEP_MAX;
  if (!d->ok) return;
  memset(d->local, 0, d->n + 1);
  env->looked = d->local;
}

/* The mask of what ran since kl_types_deps_begin, also marked in the looked it had. */
static uint64_t kl_types_deps_end(struct kl_types_env *env, struct kl_types_deps *d) {
  uint64_t mask = 0;
  if (!d->ok) return 0;
  env->looked = d->outer;
  for (size_t i = 0; i < d->n; i++)
    if (d->local[i]) {
      d->outer[i] = 1;
      mask |= (uint64_t)1 << i;
    }
  return mask;
}

/* Mark the bindings of mask in env->looked: an answer remembered stands for the lookups it made. */
static void kl_types_deps_mark(struct kl_types_env *env, uint64_t mask) {
  for (size_t i = 0; env->looked && mask; i++, mask >>= 1)
    if (mask & 1) env->looked[i] = 1;
}

/* A type in the memo of kl_types_expr_m, with the bindings its computation looked at. */
struct kl_types_typed {
  const char *type;
  uint64_t mask;
};

/* kl_types_expr, remembered in m under key wk (one environment) when m is given: a bfloat walk
 * asks for the operands of an operation at every level of a nested expression, which would type
 * each subtree again for every operation above it. An answer remembered marks what its
 * computation looked at, so that what depends on it knows all it depends on. */
static const char *kl_types_expr_m(struct kl_types_env *env, struct kl_node_map *m, const void *wk,
                                   TSNode e) {
  const void *got;
  if (!m || kl_node_null(e)) return kl_types_expr_raw(env, m, wk, e);
  if (kl_node_map_get(m, e, wk, &got)) {
    const struct kl_types_typed *t = got;
    kl_types_deps_mark(env, t->mask);
    return t->type;
  }
  struct kl_types_deps d;
  kl_types_deps_begin(env, &d);
  struct kl_types_typed *t = kl_arena_alloc(env->a, sizeof *t);
  t->type = kl_types_expr_raw(env, m, wk, e);
  t->mask = kl_types_deps_end(env, &d);
  kl_node_map_put(env->a, m, e, wk, t);
  return t->type;
}

/* The type of a plain field name of the struct whose member env->f is (`OutT scale;`, used as
 * `scale` in its member), or NULL: no pointer, array or bit-field. */
static const char *kl_types_member_field(struct kl_types_env *env, const char *name) {
  TSNode body = env->f->owner_body;
  if (!env->f->owner || kl_node_null(body)) return NULL;
  uint32_t k = ts_node_named_child_count(body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode d = kl_node_named_child(body, i);
    if (!kl_types_is(d, "field_declaration")) continue;
    TSNode decl = kl_types_field(d, "declarator"), ty = kl_types_field(d, "type");
    if (!kl_types_is(decl, "field_identifier") || kl_node_null(ty) ||
        strcmp(kl_dialect_node_text(env->a, env->unit, decl), name))
      continue;
    return kl_types_env_resolve(env, kl_dialect_node_text(env->a, env->unit, ty));
  }
  return NULL;
}

const char *kl_types_expr(struct kl_types_env *env, TSNode e) {
  return kl_types_expr_raw(env, NULL, NULL, e);
}

static const char *kl_types_expr_raw(struct kl_types_env *env, struct kl_node_map *m,
                                     const void *wk, TSNode e) {
  if (kl_node_null(e)) return NULL;
  /* One kind lookup, not a chain of string comparisons: every walk types every operation. */
  enum kl_kind t = kl_node_kind(e);
  struct kl_arena *a = env->a;
  if (t == KL_KIND_PARENTHESIZED_EXPRESSION)
    return ts_node_named_child_count(e) ? kl_types_expr_m(env, m, wk, kl_node_named_child(e, 0))
                                        : NULL;
  if (t == KL_KIND_IDENTIFIER) {
    const char *name = kl_dialect_node_text(a, env->unit, e);
    const struct kl_var *v = env->f ? kl_model_var(env->f, name) : NULL;
    if (!v && env->f) return kl_types_member_field(env, name);
    if (!v || !v->type || v->is_pointer || v->array_dims) return NULL;
    return kl_types_env_resolve(env, v->type);
  }
  if (t == KL_KIND_SUBSCRIPT_EXPRESSION || t == KL_KIND_POINTER_EXPRESSION) {
    TSNode arg = kl_types_field(e, "argument");
    if (kl_node_null(arg) && ts_node_named_child_count(e)) arg = kl_node_named_child(e, 0);
    if (t == KL_KIND_POINTER_EXPRESSION) {
      TSNode op = kl_types_field(e, "operator");
      if (kl_node_null(op) || ts_node_end_byte(op) - ts_node_start_byte(op) != 1 ||
          env->unit->buf[ts_node_start_byte(op)] != '*')
        return NULL;
    }
    if (!kl_node_is_kind(arg, KL_KIND_IDENTIFIER)) return NULL;
    const struct kl_var *v =
        env->f ? kl_model_var(env->f, kl_dialect_node_text(a, env->unit, arg)) : NULL;
    if (!v || !v->type) return NULL;
    if (v->is_pointer || v->array_dims) return kl_types_env_resolve(env, v->type);
    return kl_types_scalar(env, v->type); /* an element of a vector */
  }
  if (t == KL_KIND_FIELD_EXPRESSION) {
    TSNode arg = kl_types_field(e, "argument");
    TSNode field = kl_types_field(e, "field");
    const char *at = kl_types_expr_m(env, m, wk, arg);
    const struct kl_msl_type *mt = kl_types_msl(env, at);
    if (!mt || mt->kind != KL_TYPE_VECTOR || kl_node_null(field)) return NULL;
    /* A swizzle of one component is the scalar; of several, a vector we do not name. */
    return ts_node_end_byte(field) - ts_node_start_byte(field) == 1 ? mt->scalar : NULL;
  }
  if (t == KL_KIND_CAST_EXPRESSION) {
    TSNode ty = kl_types_field(e, "type");
    const char *tt = kl_node_null(ty) ? NULL : kl_dialect_node_text(a, env->unit, ty);
    return kl_types_msl(env, tt) ? kl_types_env_resolve(env, tt) : NULL;
  }
  if (t == KL_KIND_CALL_EXPRESSION) {
    TSNode fn = kl_types_field(e, "function");
    TSNode args = kl_types_field(e, "arguments");
    if (kl_node_is_kind(fn, KL_KIND_TEMPLATE_FUNCTION)) { /* static_cast<T>(x) */
      TSNode name = kl_types_field(fn, "name");
      TSNode targs = kl_types_field(fn, "arguments");
      const char *nm = kl_dialect_node_text(a, env->unit, name);
      if ((!strcmp(nm, "static_cast") || !strcmp(nm, "as_type")) &&
          ts_node_named_child_count(targs) == 1) {
        const char *tt = kl_dialect_node_text(a, env->unit, kl_node_named_child(targs, 0));
        return kl_types_msl(env, tt) ? kl_types_env_resolve(env, tt) : NULL;
      }
      return NULL;
    }
    if (kl_node_null(fn)) return NULL;
    /* A functional cast or constructor: `T(x)`, `bfloat(x)`, `float4(v)`. */
    const char *ft = kl_dialect_node_text(a, env->unit, fn);
    if (kl_types_msl(env, ft)) return kl_types_env_resolve(env, ft);
    /* A math builtin computes in its arguments' type when they all share it; MSL has no bfloat
     * overloads, so bfloat arguments convert to float and the call returns float (MLX's
     * bf16_math.h says so, and overloads them in float for that reason). */
    if (env->math_builtins && kl_types_is_math_call(env->unit, e) && !kl_node_null(args)) {
      const char *common = NULL;
      uint32_t k = ts_node_named_child_count(args);
      for (uint32_t i = 0; i < k; i++) {
        const char *at = kl_types_expr_m(env, m, wk, kl_node_named_child(args, i));
        if (!at || (common && strcmp(common, at))) return NULL;
        common = at;
      }
      const struct kl_msl_type *ct = common ? kl_types_msl(env, common) : NULL;
      if (ct && ct->is_bfloat) {
        if (ct->kind == KL_TYPE_SCALAR) return "float";
        if (ct->kind != KL_TYPE_VECTOR || ct->lanes < 2 || ct->lanes > 4) return NULL;
        static const char *const floatn[] = {"float2", "float3", "float4"};
        return floatn[ct->lanes - 2];
      }
      return common;
    }
    return NULL;
  }
  if (t == KL_KIND_UNARY_EXPRESSION) {
    TSNode op = kl_types_field(e, "operator");
    if (kl_node_null(op) || env->unit->buf[ts_node_start_byte(op)] != '-') return NULL;
    return kl_types_expr_m(env, m, wk, kl_types_field(e, "argument"));
  }
  if (t == KL_KIND_BINARY_EXPRESSION) {
    TSNode op = kl_types_field(e, "operator");
    char c = kl_node_null(op) ? 0 : env->unit->buf[ts_node_start_byte(op)];
    if (kl_node_null(op) || ts_node_end_byte(op) - ts_node_start_byte(op) != 1 ||
        (c != '+' && c != '-' && c != '*' && c != '/'))
      return NULL;
    const char *l = kl_types_expr_m(env, m, wk, kl_types_field(e, "left"));
    const char *r = kl_types_expr_m(env, m, wk, kl_types_field(e, "right"));
    if (!l || !r) return NULL;
    const struct kl_msl_type *lt = kl_types_msl(env, l), *rt = kl_types_msl(env, r);
    if (!lt || !rt) return NULL;
    /* The same type, or a scalar with a vector of it; anything else converts (bfloat with
     * float computes in float), so this says nothing of the result. */
    if (!strcmp(lt->scalar, rt->scalar)) return lt->lanes >= rt->lanes ? l : r;
    return NULL;
  }
  if (t == KL_KIND_CONDITIONAL_EXPRESSION) {
    const char *x = kl_types_expr_m(env, m, wk, kl_types_field(e, "consequence"));
    const char *y = kl_types_expr_m(env, m, wk, kl_types_field(e, "alternative"));
    return x && y && !strcmp(x, y) ? x : NULL;
  }
  return NULL;
}

bool kl_types_is_bfloat(struct kl_types_env *env, const char *type) {
  const struct kl_msl_type *t = kl_types_msl(env, type);
  return t && t->is_bfloat;
}

static bool kl_types_bfloat_op_m(struct kl_types_env *env, struct kl_node_map *m, const void *wk,
                                 TSNode e) {
  enum kl_kind t = kl_node_kind(e);
  /* A math builtin is not here: on bfloat it converts to float and computes in float. */
  if (t == KL_KIND_BINARY_EXPRESSION || t == KL_KIND_UNARY_EXPRESSION) {
    if (t == KL_KIND_BINARY_EXPRESSION) {
      /* Both operands, not the result: bfloat with float promotes to float. */
      if (!kl_types_expr_m(env, m, wk, e)) return false;
      return kl_types_is_bfloat(env, kl_types_expr_m(env, m, wk, kl_types_field(e, "left"))) &&
             kl_types_is_bfloat(env, kl_types_expr_m(env, m, wk, kl_types_field(e, "right")));
    }
    return kl_types_is_bfloat(env, kl_types_expr_m(env, m, wk, e));
  }
  if (t == KL_KIND_ASSIGNMENT_EXPRESSION) {
    TSNode op = kl_types_field(e, "operator");
    if (kl_node_null(op) || ts_node_end_byte(op) - ts_node_start_byte(op) != 2) return false;
    char c = env->unit->buf[ts_node_start_byte(op)];
    if (c != '+' && c != '-' && c != '*' && c != '/') return false;
    return kl_types_is_bfloat(env, kl_types_expr_m(env, m, wk, kl_types_field(e, "left"))) &&
           kl_types_is_bfloat(env, kl_types_expr_m(env, m, wk, kl_types_field(e, "right")));
  }
  return false;
}

bool kl_types_bfloat_op(struct kl_types_env *env, TSNode e) {
  return kl_types_bfloat_op_m(env, NULL, NULL, e);
}

/* ---- bfloat computed, through helpers ------------------------------------------------------ */

struct kl_types_bf_walk {
  struct kl_types_bfloat *c;
  const struct kl_model *m; /* the model env.f is in: the unit's, or a header's (kl_xdefs) */
  struct kl_types_env env;
  bool may;        /* whether any operation of the body can be in bfloat (kl_types_bf_may) */
  const void *key; /* this walk's environment, in c->exprs: its memo entry's bindings key */
  bool found;
  struct kl_types_bfloat_site site;
  bool cut; /* a call was not followed because its function was being walked */
  const struct kl_function **callees; /* the helpers whose answers the walk asked for */
  size_t ncallees, cap_callees;
};

/* A header's model the walk entered, and its aliases. */
struct kl_types_bf_ext {
  const struct kl_model *m;
  struct kl_types types;
};

static bool kl_types_bf_computes(struct kl_types_bfloat *c, const struct kl_function *f,
                                 const struct kl_bindings *b, struct kl_types_bfloat_site *out,
                                 bool *cut);
static const char *kl_types_bf_subst(struct kl_types_bf_walk *w, const char *type);

/* The bindings a call gives a template callee g: its explicit template arguments, then the
 * types of the arguments passed to parameters declared with a template parameter. */
static struct kl_bindings *kl_types_call_bindings(struct kl_types_bf_walk *w,
                                                  const struct kl_function *g, TSNode call) {
  struct kl_arena *a = w->c->a;
  const struct kl_unit *u = w->env.unit;
  struct kl_bindings *nb = kl_arena_alloc(a, sizeof *nb);
  memset(nb, 0, sizeof *nb);
  if (!g->ntparams) return nb;
  struct kl_binding *items = kl_arena_alloc(a, g->ntparams * sizeof *items);
  memset(items, 0, g->ntparams * sizeof *items);
  TSNode fn = kl_types_field(call, "function");
  if (kl_types_is(fn, "template_function")) {
    TSNode targs = kl_types_field(fn, "arguments");
    uint32_t k = ts_node_named_child_count(targs);
    for (uint32_t i = 0; i < k && i < g->ntparams; i++) {
      const char *t = kl_dialect_node_text(a, u, kl_node_named_child(targs, i));
      items[i].name = g->tparams[i];
      items[i].type = kl_types_env_resolve(&w->env, t);
    }
  }
  TSNode args = kl_types_field(call, "arguments");
  uint32_t na = ts_node_named_child_count(args);
  for (size_t p = 0; p < g->nparams && p < na; p++) {
    for (size_t i = 0; i < g->ntparams; i++) {
      if (items[i].name || !g->params[p].type || strcmp(g->params[p].type, g->tparams[i])) continue;
      TSNode arg = kl_node_named_child(args, (uint32_t)p);
      const char *t = NULL;
      if (g->params[p].is_pointer && kl_types_is(arg, "identifier")) {
        const struct kl_var *v = kl_model_var(w->env.f, kl_dialect_node_text(a, u, arg));
        if (v && v->is_pointer && v->type) t = kl_types_env_resolve(&w->env, v->type);
      } else if (!g->params[p].is_pointer) {
        t = kl_types_expr(&w->env, arg);
        /* A struct's arguments under the caller's bindings: `ScaleOp<T>` passed as UnaryOp. */
        if (t && strchr(t, '<')) t = kl_types_bf_subst(w, t);
      }
      if (t) items[i].name = g->tparams[i], items[i].type = t;
    }
  }
  size_t n = 0;
  for (size_t i = 0; i < g->ntparams; i++)
    if (items[i].name) items[n++] = items[i];
  nb->items = items;
  nb->n = n;
  return nb;
}

/* The template arguments of a type written `Name<a, b<c, d>>`, split at its top-level commas,
 * whitespace trimmed; returns their count (0 for a type with none). */
static size_t kl_types_type_args(struct kl_arena *a, const char *type, const char ***out) {
  const char *lt = strchr(type, '<');
  const char *gt = strrchr(type, '>');
  *out = NULL;
  if (!lt || !gt || gt < lt) return 0;
  size_t n = 0, cap = 0;
  const char **v = NULL;
  int depth = 0;
  const char *start = lt + 1;
  for (const char *p = lt + 1; p <= gt; p++) {
    if (*p == '<' || *p == '(') depth++;
    else if ((*p == '>' || *p == ')') && p < gt) depth--;
    if ((*p == ',' && depth == 0) || p == gt) {
      const char *b = start, *e = p;
      while (b < e && isspace((unsigned char)*b)) b++;
      while (e > b && isspace((unsigned char)e[-1])) e--;
      if (e > b) {
        KL_VEC_PUSH(a, v, n, cap);
        v[n++] = kl_arena_strndup(a, b, (size_t)(e - b));
      }
      start = p + 1;
    }
  }
  *out = v;
  return n;
}

/* The variable name denotes at use, in f: the last local of that name declared before use in a
 * block that holds use (the innermost, then), else a parameter; NULL when a declaration's block
 * cannot be told. */
static const struct kl_var *kl_types_var_at(const struct kl_function *f, const char *name,
                                            TSNode use) {
  const struct kl_var *found = NULL;
  uint32_t at = ts_node_start_byte(use);
  for (size_t i = 0; i < f->nlocals; i++) {
    const struct kl_var *v = &f->locals[i];
    if (strcmp(v->name, name)) continue;
    if (kl_node_null(v->node)) return NULL;
    if (ts_node_start_byte(v->node) >= at) continue;
    TSNode s = ts_node_parent(v->node);
    while (!kl_node_null(s) && !kl_types_is(s, "compound_statement") &&
           !kl_types_is(s, "for_statement") && !kl_types_is(s, "for_range_loop") &&
           !kl_types_is(s, "if_statement") && !kl_types_is(s, "while_statement") &&
           !kl_types_is(s, "switch_statement"))
      s = ts_node_parent(s);
    if (kl_node_null(s)) return NULL;
    if (ts_node_start_byte(s) <= at && ts_node_end_byte(use) <= ts_node_end_byte(s)) found = v;
  }
  if (found) return found;
  for (size_t i = 0; i < f->nparams; i++)
    if (!strcmp(f->params[i].name, name)) return &f->params[i];
  return NULL;
}

static bool kl_types_has_word(const char *s, size_t len, const char *word);
static void kl_types_bf_home(struct kl_types_bfloat *c, const struct kl_function *f,
                             const struct kl_model **m, const struct kl_types **t);

/* Any member function of struct name, in the walk's model, the unit's, or a header's: what
 * the struct's body and template parameters are read from. */
static const struct kl_function *kl_types_bf_struct(struct kl_types_bf_walk *w, const char *name) {
  const struct kl_model *ms[2] = {w->m, w->c->m};
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < ms[k]->nfunctions; i++)
      if (ms[k]->functions[i].owner && !strcmp(ms[k]->functions[i].owner, name))
        return &ms[k]->functions[i];
  return kl_xdefs_find(w->c->xdefs, name, "");
}

static const char *kl_types_bf_subst_in(struct kl_types_bf_walk *w, struct kl_types_env *env,
                                        const char *type, int depth);

/* The member type mem of struct type scope (`GEMMKernel<bfloat, 32>` and `loader_a_t`): its
 * `using`/typedef in the struct's body, with the struct's parameters bound to scope's
 * arguments; NULL when not found. */
static const char *kl_types_bf_member_type(struct kl_types_bf_walk *w, const char *scope,
                                           const char *mem, int depth) {
  struct kl_arena *a = w->c->a;
  const char *name = kl_arena_strndup(a, scope, strcspn(scope, "< \t"));
  const struct kl_function *g = kl_types_bf_struct(w, name);
  if (!g || kl_node_null(g->owner_body)) return NULL;
  const struct kl_model *hm;
  const struct kl_types *ht;
  kl_types_bf_home(w->c, g, &hm, &ht);
  const char *text = NULL;
  uint32_t k = ts_node_named_child_count(g->owner_body);
  for (uint32_t i = 0; i < k && !text; i++) {
    TSNode d = kl_node_named_child(g->owner_body, i);
    TSNode nm = kl_types_is(d, "alias_declaration") ? kl_types_field(d, "name")
                : kl_types_is(d, "type_definition") ? kl_types_field(d, "declarator")
                                                    : (TSNode){{0}, NULL, NULL};
    if (!kl_node_null(nm) && !strcmp(kl_dialect_node_text(a, hm->unit, nm), mem))
      text = kl_dialect_node_text(a, hm->unit, kl_types_field(d, "type"));
  }
  if (!text) return NULL;
  const char **args;
  size_t nargs = kl_types_type_args(a, scope, &args);
  struct kl_binding *items = kl_arena_alloc(a, (g->notparams + 1) * sizeof *items);
  size_t n = 0;
  for (size_t i = 0; i < g->notparams && i < nargs; i++)
    items[n++] = (struct kl_binding){g->otparams[i], args[i]};
  struct kl_bindings b = {.items = items, .n = n};
  struct kl_types_env e = {a, ht, hm->unit, NULL, &b, w->env.math_builtins, NULL};
  return kl_types_bf_subst_in(w, &e, text, depth + 1);
}

/* A type resolved under env, its template arguments too (`ScaleOp<T>` with T = bfloat:
 * `ScaleOp<bfloat>`), and a member type of a struct followed (`typename K::loader_t`, K an
 * alias of `GEMMKernel<T, 32>`: GEMMKernel's `using loader_t = ...` under its arguments). */
static const char *kl_types_bf_subst_in(struct kl_types_bf_walk *w, struct kl_types_env *env,
                                        const char *type, int depth) {
  const char *t = kl_types_env_resolve(env, type);
  if (depth > 4) return t;
  const char *sep = NULL; /* the last `::` outside template arguments */
  int nest = 0;
  for (const char *p = t; *p; p++) {
    if (*p == '<') nest++;
    else if (*p == '>') nest--;
    else if (!nest && p[0] == ':' && p[1] == ':') sep = p++;
  }
  if (sep && sep > t && w->c->xdefs) {
    const char *scope = kl_types_bf_subst_in(
        w, env, kl_arena_strndup(w->c->a, t, (size_t)(sep - t)), depth + 1);
    const char *r = kl_types_bf_member_type(w, scope, sep + 2, depth);
    return r ? r : t;
  }
  const char **args;
  const char *lt = strchr(t, '<');
  size_t n = lt ? kl_types_type_args(w->c->a, t, &args) : 0;
  if (!n) return t;
  size_t len = (size_t)(lt - t) + 3;
  const char **r = kl_arena_alloc(w->c->a, n * sizeof *r);
  for (size_t i = 0; i < n; i++)
    len += strlen(r[i] = kl_types_bf_subst_in(w, env, args[i], depth + 1)) + 2;
  char *out = kl_arena_alloc(w->c->a, len), *o = out;
  /* Spelt by copies, not sprintf: walks under many bindings spell types tens of thousands of
   * times. */
  o = kl_types_put(o, t, (size_t)(lt - t));
  *o++ = '<';
  for (size_t i = 0; i < n; i++) {
    if (i) o = kl_types_put(o, ", ", 2);
    o = kl_types_put(o, r[i], strlen(r[i]));
  }
  *o++ = '>';
  *o = '\0';
  return out;
}

/* A type written in the walk's function, resolved under its bindings (kl_types_bf_subst_in). */
static const char *kl_types_bf_subst(struct kl_types_bf_walk *w, const char *type) {
  return kl_types_bf_subst_in(w, &w->env, type, 0);
}

/* Member name of struct type: in the walk's model, the unit's, or (when ext) a header's. */
static const struct kl_function *kl_types_bf_member(struct kl_types_bf_walk *w, const char *type,
                                                    const char *name, bool ext) {
  const struct kl_function *g = kl_model_method(w->m, w->env.f, type, name, strlen(name));
  if (!g && w->m != w->c->m) g = kl_model_method(w->c->m, NULL, type, name, strlen(name));
  if (!g && ext) g = kl_xdefs_find(w->c->xdefs, type, name);
  return g;
}

/* Whether a call passes a bfloat value (or names a bfloat type, in its template arguments or
 * its functor's type): only such a call is looked up in the headers. */
static bool kl_types_bf_passes(struct kl_types_bf_walk *w, TSNode call, const char *type) {
  if (!w->c->xdefs) return false;
  if (type && kl_types_has_word(type, strlen(type), "bfloat")) return true;
  TSNode fn = kl_types_field(call, "function");
  if (kl_types_is(fn, "template_function") && !kl_node_null(kl_types_field(fn, "arguments"))) {
    const char *t = kl_dialect_node_text(w->c->a, w->env.unit, kl_types_field(fn, "arguments"));
    t = kl_types_bf_subst(w, t[0] == '<' ? kl_arena_printf(w->c->a, "X%s", t) : t);
    if (kl_types_has_word(t, strlen(t), "bfloat")) return true;
  }
  TSNode args = kl_types_field(call, "arguments");
  uint32_t k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  for (uint32_t i = 0; i < k; i++) {
    TSNode arg = kl_node_named_child(args, i);
    const char *t = kl_types_expr_m(&w->env, &w->c->exprs, w->key, arg);
    if (!t && kl_types_is(arg, "identifier")) {
      const struct kl_var *v = kl_types_var_at(
          w->env.f, kl_dialect_node_text(w->c->a, w->env.unit, arg), arg);
      if (v && v->type && !v->is_pointer) t = kl_types_bf_subst(w, v->type);
    } else if (t) {
      t = kl_types_bf_subst(w, t);
    }
    if (t && kl_types_has_word(t, strlen(t), "bfloat")) return true;
  }
  return false;
}

/* The member a functor call runs, when the model resolves no function by the callee's name:
 * `op(a, b)` (operator() of the struct op is, a template argument such as `Op = CumSum<T>`
 * included, resolved under w's bindings), `op.scan(x)`, or a temporary's `Op{}(a, b)`. *type
 * receives that struct type. */
static const struct kl_function *kl_types_functor(struct kl_types_bf_walk *w, TSNode call,
                                                  TSNode callee, const char **type) {
  struct kl_arena *a = w->c->a;
  const struct kl_unit *u = w->env.unit;
  TSNode obj = callee;
  const char *method = "operator()";
  if (kl_types_is(callee, "compound_literal_expression")) {
    TSNode ty = kl_types_field(callee, "type");
    if (kl_node_null(ty)) return NULL;
    *type = kl_types_bf_subst(w, kl_dialect_node_text(a, u, ty));
    return kl_types_bf_member(w, *type, method, kl_types_bf_passes(w, call, *type));
  }
  if (kl_types_is(callee, "field_expression")) {
    TSNode op = kl_types_field(callee, "operator");
    if (!kl_node_null(op) && strcmp(kl_dialect_node_text(a, u, op), ".")) return NULL;
    obj = kl_types_field(callee, "argument");
    TSNode field = kl_types_field(callee, "field");
    if (kl_node_null(field)) return NULL;
    method = kl_dialect_node_text(a, u, field);
  }
  if (!kl_types_is(obj, "identifier")) return NULL;
  /* The declaration in scope at the call: a later one of the same name may shadow nothing here. */
  const struct kl_var *v = kl_types_var_at(w->env.f, kl_dialect_node_text(a, u, obj), obj);
  if (!v || !v->type || v->is_pointer) return NULL;
  const char *t = kl_types_bf_subst(w, v->type);
  if (!t) return NULL;
  *type = t;
  const struct kl_function *g = kl_types_bf_member(w, t, method, false);
  if (!g && kl_types_bf_passes(w, call, t)) g = kl_types_bf_member(w, t, method, true);
  return g;
}

/* A function no model of the walk defines, by name (`h(x)`, `h<T>(x)`), from the headers the
 * unit sees. */
static const struct kl_function *kl_types_bf_extern(struct kl_types_bf_walk *w, TSNode call,
                                                    TSNode callee) {
  TSNode name = kl_types_is(callee, "template_function") ? kl_types_field(callee, "name") : callee;
  if (!w->c->xdefs || !kl_types_is(name, "identifier") || kl_types_is_math_call(w->env.unit, call))
    return NULL;
  /* Casts, constructors of built-in types and the SIMD-group functions are the language's: no
   * header defines them (a project's overload of one for bfloat computes in float, as MLX's
   * bf16_math.h does). */
  const char *nm = kl_dialect_node_text(w->c->a, w->env.unit, name);
  if (kl_msl_type(nm) || strstr(nm, "_cast") || !strcmp(nm, "as_type") ||
      !strncmp(nm, "simd_", 5) || !strncmp(nm, "simdgroup_", 10) || !strncmp(nm, "quad_", 5) ||
      !kl_types_bf_passes(w, call, NULL))
    return NULL;
  return kl_xdefs_find(w->c->xdefs, NULL, nm);
}

/* A functor's bindings: the struct's template parameters bound to the arguments of its type
 * (`CumSum<bfloat>`: U = bfloat), then what the call binds of the member's own (call). */
static struct kl_bindings *kl_types_functor_bindings(struct kl_types_bf_walk *w,
                                                     const struct kl_function *g,
                                                     const char *type, struct kl_bindings *call) {
  struct kl_arena *a = w->c->a;
  const char **args;
  size_t nargs = kl_types_type_args(a, type, &args);
  if (!g->notparams || !nargs) return call;
  size_t cap = g->notparams + call->n;
  struct kl_binding *items = kl_arena_alloc(a, (cap ? cap : 1) * sizeof *items);
  size_t n = 0;
  for (size_t i = 0; i < call->n; i++) items[n++] = call->items[i];
  for (size_t i = 0; i < g->notparams && i < nargs; i++) {
    bool have = false;
    for (size_t k = 0; k < call->n && !have; k++)
      have = !strcmp(call->items[k].name, g->otparams[i]);
    if (have) continue;
    items[n].name = g->otparams[i];
    items[n++].type = kl_types_strip(a, args[i]);
  }
  call->items = items;
  call->n = n;
  return call;
}

/* What a call is followed into: the helper and the bindings the call gives it (g NULL: the
 * call is not followed). */
struct kl_types_bf_target {
  const struct kl_function *g;
  struct kl_bindings *b;
};

static struct kl_types_bf_target kl_types_bf_target_of(struct kl_types_bf_walk *w, TSNode n) {
  struct kl_types_bf_target none = {NULL, NULL};
  /* Each instantiation walks the body again: the callee is looked up once. */
  TSNode callee = kl_types_field(n, "function");
  const void *found;
  if (!kl_node_map_get(&w->c->callees, callee, w->env.f, &found)) {
    found = kl_model_callee(w->m, w->env.f, callee);
    kl_node_map_put(w->c->a, &w->c->callees, callee, w->env.f, found);
  }
  const struct kl_function *g = found;
  /* A helper the model resolves is followed with what the call binds, and so is a functor of a
   * struct it defines; an opaque call (a header's function) is not: precision first. */
  const char *functor = NULL;
  if (!g) g = kl_types_functor(w, n, callee, &functor);
  if (!g && !functor) g = kl_types_bf_extern(w, n, callee);
  if (!g || g == w->env.f || kl_node_null(g->body)) return none;
  struct kl_bindings *b = kl_types_call_bindings(w, g, n);
  if (functor) b = kl_types_functor_bindings(w, g, functor, b);
  return (struct kl_types_bf_target){g, b};
}

/* A call met by w's walk: followed into the helper it calls; true when that computes in bfloat
 * (w's answer, then). Where the call goes is worked out once per distinct value of what it
 * depends on (c->targets), not once per walk. */
static bool kl_types_bf_call(struct kl_types_bf_walk *w, TSNode n) {
  struct kl_types_bf_target t;
  const struct kl_types_dep *d = kl_types_dep_get(&w->c->targets, n, w->env.f, w->env.b);
  if (d) {
    t = *(const struct kl_types_bf_target *)d->v;
    kl_types_deps_mark(&w->env, d->mask);
  } else {
    struct kl_types_deps deps;
    kl_types_deps_begin(&w->env, &deps);
    t = kl_types_bf_target_of(w, n);
    uint64_t mask = kl_types_deps_end(&w->env, &deps);
    if (deps.ok) {
      struct kl_types_bf_target *keep = kl_arena_alloc(w->c->a, sizeof *keep);
      *keep = t;
      kl_types_dep_put(w->c->a, &w->c->targets, n, w->env.f, w->env.b, mask, keep);
    }
  }
  const struct kl_function *g = t.g;
  struct kl_types_bfloat_site in;
  if (!g) return false;
  bool cut, hit = kl_types_bf_computes(w->c, g, t.b, &in, &cut);
  w->cut = w->cut || cut;
  bool seen = false;
  for (size_t i = 0; i < w->ncallees && !seen; i++) seen = w->callees[i] == g;
  if (!seen) {
    KL_VEC_PUSH(w->c->a, w->callees, w->ncallees, w->cap_callees);
    w->callees[w->ncallees++] = g;
  }
  if (!hit) return false;
  w->found = true;
  w->site.at = n; /* the call, in the function being checked */
  w->site.op = in.op;
  return true;
}

/* consteval's lookup: a value template parameter's argument under the walk's bindings, marked
 * as looked at (the answer depends on it). */
static const char *kl_types_bf_lookup(void *ctx, const char *name, size_t n) {
  struct kl_types_env *env = ctx;
  for (size_t i = 0; env->b && i < env->b->n; i++) {
    const char *k = env->b->items[i].name;
    if (k && strlen(k) == n && !memcmp(k, name, n)) {
      if (env->looked) env->looked[i] = 1;
      return env->b->items[i].type;
    }
  }
  return NULL;
}

/* Which branch of an if_statement the bindings take: 1 the consequence only, 0 the alternative
 * only, -1 both (the condition does not fold). `if (kDoAxpby)` in an instantiation with
 * kDoAxpby = 0 computes nothing in its consequence. */
static int kl_types_bf_branch(struct kl_types_env *env, TSNode n) {
  if (!env->b || !env->b->n || !kl_types_is(n, "if_statement")) return -1;
  TSNode cond = kl_types_field(n, "condition");
  if (kl_node_null(cond)) return -1;
  const char *text = env->unit->buf + ts_node_start_byte(cond);
  size_t len = ts_node_end_byte(cond) - ts_node_start_byte(cond);
  struct kl_consteval_env ce = {.lookup = kl_types_bf_lookup, .ctx = env};
  return kl_consteval_truth(text, len, &ce);
}

/* Whether node n of the walk's function is in a branch its bindings never take. */
static bool kl_types_bf_dead(struct kl_types_env *env, TSNode n, TSNode body) {
  if (!env->b || !env->b->n) return false;
  for (TSNode c = n, p = ts_node_parent(n); !kl_node_null(p) && !ts_node_eq(c, body);
       c = p, p = ts_node_parent(p)) {
    int t = kl_types_bf_branch(env, p);
    if (t < 0) continue;
    TSNode dead = kl_types_field(p, t ? "alternative" : "consequence");
    if (!kl_node_null(dead) && ts_node_eq(c, dead)) return true;
  }
  return false;
}

/* Whether operation n of w's function is in bfloat, once per distinct value of what it depends
 * on (c->ops). */
static bool kl_types_bf_op(struct kl_types_bf_walk *w, TSNode n) {
  const struct kl_types_dep *d = kl_types_dep_get(&w->c->ops, n, w->env.f, w->env.b);
  if (d) {
    kl_types_deps_mark(&w->env, d->mask);
    return d->v != NULL;
  }
  struct kl_types_deps deps;
  kl_types_deps_begin(&w->env, &deps);
  bool r = kl_types_bfloat_op_m(&w->env, &w->c->exprs, w->key, n);
  uint64_t mask = kl_types_deps_end(&w->env, &deps);
  if (deps.ok)
    kl_types_dep_put(w->c->a, &w->c->ops, n, w->env.f, w->env.b, mask,
                     r ? (const void *)w->c : NULL);
  return r;
}

/* The answers of kl_types_bf_branch, as kl_types_bf_fold remembers them. */
static const int kl_types_folds[3] = {-1, 0, 1};

/* kl_types_bf_branch in w's walk, once per distinct value of what it depends on (c->branches). */
static int kl_types_bf_fold(struct kl_types_bf_walk *w, TSNode n) {
  if (!w->env.b || !w->env.b->n) return -1;
  const struct kl_types_dep *d = kl_types_dep_get(&w->c->branches, n, w->env.f, w->env.b);
  if (d) {
    kl_types_deps_mark(&w->env, d->mask);
    return *(const int *)d->v;
  }
  struct kl_types_deps deps;
  kl_types_deps_begin(&w->env, &deps);
  int r = kl_types_bf_branch(&w->env, n);
  uint64_t mask = kl_types_deps_end(&w->env, &deps);
  if (deps.ok)
    kl_types_dep_put(w->c->a, &w->c->branches, n, w->env.f, w->env.b, mask,
                     &kl_types_folds[r + 1]);
  return r;
}

/* The walk of f's body under w's bindings, over entries [lo, hi) of its list: each if_statement
 * the bindings fold has only its live branch walked; the walk stops at the first operation in
 * bfloat (when w->may) or call into a helper that computes in bfloat. */
static void kl_types_bf_flat_walk(struct kl_types_bf_walk *w, const struct kl_types_bf_flat *fl,
                                  uint32_t lo, uint32_t hi) {
  for (uint32_t i = lo; i < hi && !w->found;) {
    const struct kl_types_bf_flat_node *e = &fl->v[i];
    if (e->is_if) {
      int t = kl_types_bf_fold(w, e->n);
      if (t >= 0) {
        /* Only the branch the bindings take is walked. */
        if (t) kl_types_bf_flat_walk(w, fl, e->cons_lo, e->cons_hi);
        else kl_types_bf_flat_walk(w, fl, e->alt_lo, e->alt_hi);
        i = e->end;
        continue;
      }
    } else if (w->may && kl_types_bf_op(w, e->n)) {
      w->found = true;
      w->site.at = w->site.op = e->n;
      return;
    } else if (e->is_call && kl_types_bf_call(w, e->n)) {
      return;
    }
    i++;
  }
}

/* Whether word occurs in s (len bytes). */
static bool kl_types_has_word(const char *s, size_t len, const char *word) {
  size_t n = strlen(word);
  if (!n) return true;
  for (const char *p = s; n <= len - (size_t)(p - s);) {
    const char *q = memchr(p, word[0], len - (size_t)(p - s) - n + 1);
    if (!q) return false;
    if (!memcmp(q, word, n)) return true;
    p = q + 1;
  }
  return false;
}

static bool kl_types_has_any(const char *s, size_t len, const char *const *words, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (kl_types_has_word(s, len, words[i])) return true;
  return false;
}

/* The spellings that can resolve to a bfloat type under b: "bfloat" (every such type has it in
 * its name), and each binding or alias whose type has one of these in it. A resolution only
 * replaces a name that equals a binding's or alias's, and that name is written in the text it
 * started from, so a text with none of these words never resolves to bfloat. */
static const char **kl_types_bf_words(struct kl_arena *a, const struct kl_types *t,
                                      const struct kl_bindings *b, size_t *n, bool **joined) {
  size_t nb = b ? b->n : 0, na = t ? t->n : 0;
  const char **words = kl_arena_alloc(a, (1 + nb + na) * sizeof *words);
  bool *in = kl_arena_alloc(a, nb + na + 1);
  if (joined) *joined = in;
  size_t k = 0;
  words[k++] = "bfloat";
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < nb + na; i++) {
      const char *name = i < nb ? b->items[i].name : t->aliases[i - nb].name;
      const char *type = i < nb ? b->items[i].type : t->aliases[i - nb].type;
      if (in[i] || !name || !type || !kl_types_has_any(type, strlen(type), words, k)) continue;
      in[i] = grew = true;
      words[k++] = name;
    }
  }
  *n = k;
  return words;
}

/* kl_types_bf_words under b, from c->words: those are the aliases' own closure, so an alias
 * not in them has none of them in its type, and can only join through a word b adds. Each
 * round tests what is still out against the words the round before added (the same closure,
 * without testing every alias against every word each round). */
static const char **kl_types_bf_words_more(struct kl_types_bfloat *c, const struct kl_bindings *b,
                                           size_t *n) {
  size_t nb = b ? b->n : 0, na = c->types ? c->types->n : 0;
  const char **words = kl_arena_alloc(c->a, (c->nwords + nb + na) * sizeof *words);
  bool *in = kl_arena_alloc(c->a, nb + na + 1);
  memset(in, 0, nb + na + 1);
  memcpy(words, c->words, c->nwords * sizeof *words);
  if (na) memcpy(in + nb, c->words_in, na);
  size_t k = c->nwords, lo = 0;
  for (bool first = true; lo < k; first = false) {
    size_t hi = k;
    for (size_t i = 0; i < (first ? nb : nb + na); i++) {
      const char *name = i < nb ? b->items[i].name : c->types->aliases[i - nb].name;
      const char *type = i < nb ? b->items[i].type : c->types->aliases[i - nb].type;
      if (in[i] || !name || !type || !kl_types_has_any(type, strlen(type), words + lo, hi - lo))
        continue;
      in[i] = true;
      words[k++] = name;
    }
    lo = first ? c->nwords : hi;
  }
  *n = k;
  return words;
}

/* An answer the bfloat walk keeps per string, in the tables of struct kl_types_bfloat: the words
 * of one bindings key (kl_types_bf_key; they depend on the bindings' names and types alone, and a
 * template's many calls bind the same few), or whether one binding type has one of the words in
 * it (n 1 or 0, words NULL). */
struct kl_types_bf_spelt {
  const char *key; /* NULL for an empty slot */
  const char **words;
  size_t n;
};

/* key's entry in an open-addressing table of *cap entries, *used of them taken, or the empty
 * slot to fill (then *found is false and the caller counts it in *used). The table doubles, in
 * arena a, when half full. */
static struct kl_types_bf_spelt *kl_types_bf_slot(struct kl_arena *a,
                                                  struct kl_types_bf_spelt **tab, size_t used,
                                                  size_t *cap, const char *key, bool *found) {
  if (2 * (used + 1) > *cap) {
    size_t nc = *cap ? 2 * *cap : 64;
    struct kl_types_bf_spelt *t = kl_arena_alloc(a, nc * sizeof *t);
    for (size_t i = 0; i < *cap; i++) {
      if (!(*tab)[i].key) continue;
      size_t h = kl_types_fnv((*tab)[i].key) & (nc - 1);
      while (t[h].key) h = (h + 1) & (nc - 1);
      t[h] = (*tab)[i];
    }
    *tab = t;
    *cap = nc;
  }
  size_t h = kl_types_fnv(key) & (*cap - 1);
  for (; (*tab)[h].key; h = (h + 1) & (*cap - 1))
    if (!strcmp((*tab)[h].key, key)) {
      *found = true;
      return &(*tab)[h];
    }
  *found = false;
  return &(*tab)[h];
}

/* kl_types_bf_words under b, whose kl_types_bf_key is key, computed once per key. */
static const char **kl_types_bf_words_for(struct kl_types_bfloat *c, const struct kl_bindings *b,
                                          const char *key, size_t *n) {
  bool found;
  struct kl_types_bf_spelt *e =
      kl_types_bf_slot(c->a, &c->spelt, c->nspelt, &c->cap_spelt, key, &found);
  if (found) {
    *n = e->n;
    return e->words;
  }
  const char **words = kl_types_bf_words_more(c, b, n);
  *e = (struct kl_types_bf_spelt){key, words, *n};
  c->nspelt++;
  return words;
}

/* Whether f's body text, or the type of one of its values, has one of words in it. */
static bool kl_types_bf_spells(const char *buf, const struct kl_function *f,
                               const char *const *words, size_t n) {
  uint32_t s = ts_node_start_byte(f->body), e = ts_node_end_byte(f->body);
  if (kl_types_has_any(buf + s, e - s, words, n)) return true;
  for (size_t i = 0; i < f->nlocals + f->nparams; i++) {
    const struct kl_var *v = i < f->nlocals ? &f->locals[i] : &f->params[i - f->nlocals];
    if (v->type && kl_types_has_any(v->type, strlen(v->type), words, n)) return true;
  }
  return false;
}

static const char *kl_types_bf_key(struct kl_arena *a, const struct kl_bindings *b);

/* Whether s has a letter or an underscore: a name (a word of kl_types_bf_words) has one, so a
 * text without any (`1024`, a value parameter's argument) holds no word. */
static bool kl_types_bf_wordy(const char *s) {
  for (; s && *s; s++)
    if (isalpha((unsigned char)*s) || *s == '_') return true;
  return false;
}

/* The key kl_types_bf_words_for remembers b's words by: key without the bindings whose type
 * holds no word (they never join the words: `BLOCKSIZE=1024`), so that a template's
 * instantiations that differ in such values only share one computation. key itself when a
 * name that could be a word has no letter (then a number could hold it). */
static const char *kl_types_bf_words_key(struct kl_types_bfloat *c, const struct kl_bindings *b,
                                         const char *key) {
  bool drop = false;
  for (size_t i = 0; i < b->n; i++) {
    if (b->items[i].name && !kl_types_bf_wordy(b->items[i].name)) return key;
    drop = drop || (b->items[i].type && !kl_types_bf_wordy(b->items[i].type));
  }
  for (size_t i = 0; i < c->nwords; i++)
    if (!kl_types_bf_wordy(c->words[i])) return key;
  if (!drop) return key;
  struct kl_binding *items = kl_arena_alloc(c->a, b->n * sizeof *items);
  size_t n = 0;
  for (size_t i = 0; i < b->n; i++)
    if (!b->items[i].type || kl_types_bf_wordy(b->items[i].type)) items[n++] = b->items[i];
  struct kl_bindings kept = {.items = items, .n = n};
  return kl_types_bf_key(c->a, &kept);
}

/* Whether type has one of c->words in it, asked once per type: every call of every walk asks of
 * each type it binds, and a unit binds few distinct ones. */
static bool kl_types_bf_grows(struct kl_types_bfloat *c, const char *type) {
  bool found;
  struct kl_types_bf_spelt *e =
      kl_types_bf_slot(c->a, &c->grown, c->ngrown, &c->cap_grown, type, &found);
  if (found) return e->n;
  bool grows = kl_types_has_any(type, strlen(type), c->words, c->nwords);
  *e = (struct kl_types_bf_spelt){type, NULL, grows};
  c->ngrown++;
  return grows;
}

/* Whether some operation in f's body can compute in bfloat under b: its text, or the type of one
 * of its values, spells a bfloat type or a name that resolves to one. When none can, the walk
 * only follows f's calls. */
static bool kl_types_bf_may(struct kl_types_bfloat *c, const struct kl_function *f,
                            const struct kl_bindings *b, const char *key) {
  if (!c->have_words) c->words = kl_types_bf_words(c->a, c->types, NULL, &c->nwords, &c->words_in);
  c->have_words = true;
  const char **words = c->words;
  size_t n = c->nwords;
  /* The words grow under b only when a binding's type has one of the aliases' words: otherwise
   * no binding joins them, and no alias beyond those already in. Most calls bind a type that
   * is not bfloat, and are spared a walk of every alias of the unit per call. */
  bool grows = false;
  for (size_t i = 0; b && i < b->n && !grows; i++)
    grows = b->items[i].name && b->items[i].type && kl_types_bf_grows(c, b->items[i].type);
  if (grows) words = kl_types_bf_words_for(c, b, kl_types_bf_words_key(c, b, key), &n);
  /* Without new words the answer is f's alone: a template instantiated many times (or a helper
   * called from many places) has its body's text searched once, not once per bindings; with
   * them, once per list of words (kl_types_bf_words_for gives one list per words key). */
  const void *memo, *k = grows ? (const void *)words : (const void *)f;
  if (kl_node_map_get(&c->may, f->body, k, &memo)) return memo == (const void *)c;
  bool may = kl_types_bf_spells(c->m->unit->buf, f, words, n);
  kl_node_map_put(c->a, &c->may, f->body, k, may ? (const void *)c : (const void *)f);
  return may;
}

/* The model and alias table f is in: the unit's, or a header's (kl_xdefs). */
static void kl_types_bf_home(struct kl_types_bfloat *c, const struct kl_function *f,
                             const struct kl_model **m, const struct kl_types **t) {
  uintptr_t p = (uintptr_t)f, lo = (uintptr_t)c->m->functions;
  *m = c->m;
  *t = c->types;
  if (p >= lo && p < lo + c->m->nfunctions * sizeof *f) return;
  const struct kl_model *hm = kl_xdefs_home(c->xdefs, f);
  if (!hm) return;
  /* A header's aliases, collected once per header the walk enters. */
  for (size_t i = 0; i < c->next; i++)
    if (c->ext[i]->m == hm) {
      *m = hm;
      *t = &c->ext[i]->types;
      return;
    }
  struct kl_types_bf_ext *x = kl_arena_alloc(c->a, sizeof *x);
  *x = (struct kl_types_bf_ext){.m = hm};
  kl_types_collect(c->a, hm->unit, &x->types);
  KL_VEC_PUSH(c->a, c->ext, c->next, c->cap_ext);
  c->ext[c->next++] = x;
  *m = hm;
  *t = &x->types;
}

/* The memo key of bindings: names and types in order. */
static const char *kl_types_bf_key(struct kl_arena *a, const struct kl_bindings *b) {
  size_t len = 1;
  for (size_t i = 0; b && i < b->n; i++)
    len += strlen(b->items[i].name ? b->items[i].name : "") +
           strlen(b->items[i].type ? b->items[i].type : "") + 2;
  char *k = kl_arena_alloc(a, len), *o = k;
  for (size_t i = 0; b && i < b->n; i++) {
    const char *name = b->items[i].name ? b->items[i].name : "";
    const char *type = b->items[i].type ? b->items[i].type : "";
    o = kl_types_put(o, name, strlen(name));
    *o++ = '=';
    o = kl_types_put(o, type, strlen(type));
    *o++ = ';';
  }
  *o = '\0';
  return k;
}

void kl_types_bfloat_free(struct kl_types_bfloat *c) {
  kl_types_bf_index_free(c);
  kl_node_map_free(&c->callees);
  kl_node_map_free(&c->exprs);
  kl_node_map_free(&c->may);
  kl_node_map_free(&c->flat);
  kl_node_map_free(&c->ops);
  kl_node_map_free(&c->branches);
  kl_node_map_free(&c->targets);
}

/* kl_types_bfloat_computes; *cut says whether the answer is no because f is being walked. */
static bool kl_types_bf_computes(struct kl_types_bfloat *c, const struct kl_function *f,
                                 const struct kl_bindings *b, struct kl_types_bfloat_site *out,
                                 bool *cut) {
  *cut = false;
  if (kl_node_null(f->body)) return false;
  const char *key = kl_types_bf_key(c->a, b);
  /* MSL has no recursion: a call back into a function being walked is the model taking one
   * function for another of the same name, and it is not followed. (No answer of f is added
   * while f is walked, so an answer by key is one from before.) */
  size_t got = kl_types_bf_by_key(c, f, key);
  if (got != SIZE_MAX && !c->memo[got].walking) {
    const struct kl_types_bf_memo *e = &c->memo[got];
    if (e->found) *out = e->site;
    return e->found;
  }
  if (got != SIZE_MAX || kl_types_bf_walking(c, f)) {
    *cut = true;
    return false;
  }
  const struct kl_model *hm;
  const struct kl_types *ht;
  kl_types_bf_home(c, f, &hm, &ht);
  bool may;
  if (hm == c->m) {
    may = kl_types_bf_may(c, f, b, key);
  } else { /* a header's function: its own aliases, asked once per bindings (few are) */
    size_t nw;
    const char **words = kl_types_bf_words(c->a, ht, b, &nw, NULL);
    may = kl_types_bf_spells(hm->unit->buf, f, words, nw);
  }
  size_t n = b ? b->n : 0;
  /* A template is instantiated for many values of parameters that name no type it resolves
   * (ggml's head sizes): those instantiations share one walk. */
  size_t i = kl_types_bf_shared(c, f, b, may);
  if (i != SIZE_MAX) {
    struct kl_types_bf_memo e = c->memo[i];
    e.key = key;
    e.items = b ? b->items : NULL;
    KL_VEC_PUSH(c->a, c->memo, c->nmemo, c->cap_memo);
    kl_types_bf_key_add(c, f, key, c->nmemo);
    c->memo[c->nmemo++] = e;
    if (e.found) *out = e.site;
    return e.found;
  }
  KL_VEC_PUSH(c->a, c->memo, c->nmemo, c->cap_memo);
  size_t at = c->nmemo++;
  c->memo[at] = (struct kl_types_bf_memo){.f = f, .key = key, .walking = true};
  kl_types_bf_key_add(c, f, key, at);
  unsigned char *looked = kl_arena_alloc(c->a, n + 1);
  memset(looked, 0, n + 1);
  struct kl_types_bf_walk w = {.c = c, .m = hm, .may = may, .key = key};
  w.env = (struct kl_types_env){c->a, ht, hm->unit, f, b, c->math_builtins, looked};
  c->walks++;
  KL_VEC_PUSH(c->a, c->walking, c->nwalking, c->cap_walking);
  c->walking[c->nwalking++] = f;
  /* Where no operation can be in bfloat only the calls matter: the model lists them, in the
   * order the walk would meet them (every call_expression of the body, in preorder). */
  if (may) {
    const struct kl_types_bf_flat *fl = kl_types_bf_flat_of(c, f);
    kl_types_bf_flat_walk(&w, fl, 0, (uint32_t)fl->n);
  }
  else
    for (size_t k = 0; k < f->ncalls; k++)
      if (!kl_types_bf_dead(&w.env, f->calls[k], f->body) && kl_types_bf_call(&w, f->calls[k]))
        break;
  c->nwalking--;
  /* The walk may have grown the memo: index it again. */
  struct kl_types_bf_memo *e = &c->memo[at];
  e->walking = false;
  e->found = w.found;
  e->site = w.site;
  e->items = b ? b->items : NULL;
  e->n = n;
  e->looked = looked;
  e->may = may;
  e->cut = w.cut;
  e->callees = w.callees;
  e->ncallees = w.ncallees;
  if (!w.cut) kl_types_bf_share(c, f, b, at);
  if (w.found) *out = w.site;
  return w.found;
}

bool kl_types_bfloat_computes(struct kl_types_bfloat *c, const struct kl_function *f,
                              const struct kl_bindings *b, struct kl_types_bfloat_site *out) {
  bool cut;
  return kl_types_bf_computes(c, f, b, out, &cut);
}
