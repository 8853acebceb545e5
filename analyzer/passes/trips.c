#include "analyzer/passes/trips.h"

#include "analyzer/core/node.h"

#include <string.h>

#include "grammar/consteval.h"
#include "grammar/lex.h"

struct kl_trips {
  struct kl_arena *a;
  const struct kl_model *m;
  const struct kl_function *f;
  const struct kl_bindings *b;
  TSNode at; /* where the names folded are read: the loop at hand */
};

/* A counted loop: `for (T i = start; i < bound; i += step)`, either comparison order. */
struct kl_trips_loop {
  const char *counter;
  TSNode start, bound;
  bool inclusive; /* i <= bound */
  int64_t step;
};

static bool kl_trips_is(TSNode n, const char *t) {
  return !kl_node_null(n) && kl_node_is(n, t);
}

static TSNode kl_trips_strip(TSNode n) {
  while ((kl_trips_is(n, "parenthesized_expression") || kl_trips_is(n, "condition_clause")) &&
         ts_node_named_child_count(n) == 1)
    n = kl_node_named_child(n, 0);
  return n;
}

static const char *kl_trips_text(const struct kl_trips *t, TSNode n) {
  return kl_dialect_node_text(t->a, t->m->unit, n);
}

static bool kl_trips_names(const struct kl_trips *t, TSNode n, const char *name) {
  n = kl_trips_strip(n);
  return kl_trips_is(n, "identifier") && !strcmp(kl_trips_text(t, n), name);
}

const struct kl_var *kl_trips_decl(const struct kl_function *f, const char *name, size_t len,
                                   TSNode at) {
  uint32_t s = ts_node_start_byte(at);
  for (size_t i = f->nlocals; i-- > 0;) {
    const struct kl_var *v = &f->locals[i];
    if (strlen(v->name) != len || memcmp(v->name, name, len) || kl_node_null(v->node) ||
        ts_node_start_byte(v->node) > s)
      continue;
    TSNode scope = ts_node_parent(v->node);
    if (kl_node_null(scope) || (s >= ts_node_start_byte(scope) && s < ts_node_end_byte(scope)))
      return v;
  }
  for (size_t i = 0; i < f->nparams; i++)
    if (strlen(f->params[i].name) == len && !memcmp(f->params[i].name, name, len))
      return &f->params[i];
  return NULL;
}

/* The initializer of v when it is a constant local (`constexpr short NC = (C/8)/2;`), or NULL. */
static const char *kl_trips_local(const struct kl_trips *t, const struct kl_var *v) {
  if (!v->is_const || v->is_pointer || v->array_dims || kl_node_null(v->node)) return NULL;
  uint32_t k = ts_node_named_child_count(v->node);
  for (uint32_t j = 0; j < k; j++) {
    TSNode d = kl_node_named_child(v->node, j);
    TSNode value = kl_node_field(d, "value");
    if (kl_trips_is(d, "init_declarator") && !kl_node_null(value) &&
        kl_trips_names(t, kl_node_field(d, "declarator"), v->name))
      return kl_trips_text(t, value);
  }
  return NULL;
}

/* A name's meaning: the binding of the instantiation at hand, then the local or parameter in scope
 * at the loop (which hides a constant of the file), then a constant of the file. */
static const char *kl_trips_lookup(void *ctx, const char *s, size_t n) {
  const struct kl_trips *t = ctx;
  for (size_t i = 0; t->b && i < t->b->n; i++)
    if (strlen(t->b->items[i].name) == n && !memcmp(t->b->items[i].name, s, n))
      return t->b->items[i].type;
  const struct kl_var *v = kl_trips_decl(t->f, s, n, t->at);
  if (v) return kl_trips_local(t, v);
  return kl_model_const(t->m, s, n);
}

static bool kl_trips_fold(const struct kl_trips *t, const char *text, int64_t *v) {
  struct kl_consteval_env env = {kl_trips_lookup, NULL, NULL, (void *)t, false};
  return kl_consteval_eval(text, strlen(text), &env, v);
}

static bool kl_trips_read(const struct kl_trips *t, TSNode loop, struct kl_trips_loop *out) {
  memset(out, 0, sizeof *out);
  if (!kl_trips_is(loop, "for_statement")) return false;
  TSNode init = kl_node_field(loop, "initializer");
  TSNode name = {0};
  if (kl_trips_is(init, "declaration")) {
    TSNode d = kl_node_field(init, "declarator");
    if (!kl_trips_is(d, "init_declarator") || ts_node_named_child_count(init) != 2) return false;
    name = kl_node_field(d, "declarator");
    out->start = kl_node_field(d, "value");
  } else if (kl_trips_is(init, "assignment_expression")) {
    name = kl_node_field(init, "left");
    out->start = kl_node_field(init, "right");
  }
  if (!kl_trips_is(name, "identifier") || kl_node_null(out->start)) return false;
  out->counter = kl_trips_text(t, name);

  TSNode cond = kl_trips_strip(kl_node_field(loop, "condition"));
  if (!kl_trips_is(cond, "binary_expression")) return false;
  TSNode op = kl_node_field(cond, "operator");
  const char *o = kl_node_null(op) ? "" : ts_node_type(op);
  TSNode l = kl_node_field(cond, "left");
  TSNode r = kl_node_field(cond, "right");
  if (kl_trips_names(t, l, out->counter) && (!strcmp(o, "<") || !strcmp(o, "<="))) {
    out->bound = r;
    out->inclusive = o[1] == '=';
  } else if (kl_trips_names(t, r, out->counter) && (!strcmp(o, ">") || !strcmp(o, ">="))) {
    out->bound = l;
    out->inclusive = o[1] == '=';
  } else {
    return false;
  }

  TSNode up = kl_trips_strip(kl_node_field(loop, "update"));
  if (kl_trips_is(up, "update_expression")) {
    TSNode arg = kl_node_field(up, "argument");
    if (!kl_trips_names(t, arg, out->counter) || !strstr(kl_trips_text(t, up), "++")) return false;
    out->step = 1;
  } else if (kl_trips_is(up, "assignment_expression")) {
    TSNode uop = kl_node_field(up, "operator");
    if (kl_node_null(uop) || strcmp(ts_node_type(uop), "+=") ||
        !kl_trips_names(t, kl_node_field(up, "left"), out->counter) ||
        !kl_trips_fold(t, kl_trips_text(t, kl_node_field(up, "right")), &out->step))
      return false;
  }
  return out->step > 0;
}

/* The function constant a bound names, through macros (`#define FC_F FC_bin_f`), or NULL. */
static const char *kl_trips_fconst(const struct kl_trips *t, TSNode bound) {
  bound = kl_trips_strip(bound);
  if (!kl_trips_is(bound, "identifier")) return NULL;
  const char *name = kl_trips_text(t, bound);
  for (int hop = 0; hop < 4 && name; hop++) {
    if (kl_model_fconst(t->m, name, strlen(name))) return name;
    const char *next = kl_trips_lookup((void *)t, name, strlen(name));
    /* Only a plain alias of another name is followed; an expression has no one constant. */
    if (!next) return NULL;
    while (*next == ' ') next++;
    size_t n = strspn(next, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789");
    if (!n || next[n] || !kl_lex_ident_start(next[0])) return NULL;
    name = next;
  }
  return NULL;
}

/* The first dimension of `[8][4]`, folded; -1 when unknown. */
static int64_t kl_trips_dim(const struct kl_trips *t, const char *dims) {
  const char *s = dims ? strchr(dims, '[') : NULL;
  const char *e = s ? strchr(s, ']') : NULL;
  if (!e) return -1;
  char *text = kl_arena_alloc(t->a, (size_t)(e - s));
  memcpy(text, s + 1, (size_t)(e - s - 1));
  int64_t v;
  return kl_trips_fold(t, text, &v) && v > 0 ? v : -1;
}

struct kl_trips_field {
  const struct kl_trips *t;
  const char *type, *field;
  int64_t slots;
};

/* The slot count of array member `field` of struct specifier n, if it is the struct `type`. */
static int64_t kl_trips_field_in(struct kl_trips_field *w, TSNode n) {
  TSNode name = kl_node_field(n, "name");
  TSNode body = kl_node_field(n, "body");
  if (kl_node_null(name) || kl_node_null(body) || strcmp(kl_trips_text(w->t, name), w->type))
    return -1;
  TSNode buf[32];
  uint32_t k;
  const TSNode *kids = kl_node_kids(w->t->a, body, buf, 32, &k);
  for (uint32_t i = 0; i < k; i++) {
    TSNode d = kl_node_field(kids[i], "declarator");
    if (!kl_trips_is(d, "array_declarator")) continue;
    TSNode fid = kl_node_field(d, "declarator");
    TSNode size = kl_node_field(d, "size");
    int64_t v;
    if (kl_trips_is(fid, "field_identifier") && !kl_node_null(size) &&
        !strcmp(kl_trips_text(w->t, fid), w->field) &&
        kl_trips_fold(w->t, kl_trips_text(w->t, size), &v) && v > 0)
      return v;
  }
  return -1;
}

/* The struct is defined at file scope, in a namespace or a preprocessor block: only those are
 * searched, not function bodies (a file of ggml's size has hundreds). */
static void kl_trips_field_scope(struct kl_trips_field *w, TSNode scope, int depth) {
  TSNode buf[32];
  uint32_t k;
  const TSNode *kids = kl_node_kids(w->t->a, scope, buf, 32, &k);
  for (uint32_t i = 0; i < k && w->slots < 0; i++) {
    TSNode c = kids[i];
    TSNode spec = kl_trips_is(c, "struct_specifier") ? c : kl_node_field(c, "type");
    if (kl_trips_is(spec, "struct_specifier")) {
      w->slots = kl_trips_field_in(w, spec);
    } else if (depth < 4 &&
               (kl_trips_is(c, "namespace_definition") || kl_trips_is(c, "declaration_list") ||
                kl_trips_is(c, "preproc_if") || kl_trips_is(c, "preproc_ifdef") ||
                kl_trips_is(c, "preproc_else") || kl_trips_is(c, "linkage_specification"))) {
      kl_trips_field_scope(w, c, depth + 1);
    }
  }
}

/* The slots of the array a subscript's argument names: a local array (`ptr[8]`), or an array
 * member of a struct the unit defines (`args.offs[j]`); -1 when unknown. */
static int64_t kl_trips_slots_of(const struct kl_trips *t, TSNode arr) {
  arr = kl_trips_strip(arr);
  if (kl_trips_is(arr, "identifier")) {
    const char *name = kl_trips_text(t, arr);
    const struct kl_var *v = kl_trips_decl(t->f, name, strlen(name), arr);
    return v ? kl_trips_dim(t, v->array_dims) : -1;
  }
  if (!kl_trips_is(arr, "field_expression")) return -1;
  TSNode base = kl_trips_strip(kl_node_field(arr, "argument"));
  TSNode field = kl_node_field(arr, "field");
  if (!kl_trips_is(base, "identifier") || kl_node_null(field)) return -1;
  const char *bname = kl_trips_text(t, base);
  const struct kl_var *v = kl_trips_decl(t->f, bname, strlen(bname), base);
  if (!v || !v->type || v->array_dims) return -1;
  struct kl_trips_field w = {t, v->type, kl_trips_text(t, field), -1};
  kl_trips_field_scope(&w, ts_tree_root_node(t->m->unit->tree), 0);
  return w.slots;
}

struct kl_trips_use {
  const struct kl_trips *t;
  const char *counter;
  int64_t slots; /* the fewest slots of an array the counter indexes, -1 none yet */
};

static enum kl_walk kl_trips_use_visit(TSNode n, void *ctx) {
  struct kl_trips_use *w = ctx;
  if (!kl_trips_is(n, "subscript_expression")) return KL_WALK_DESCEND;
  TSNode idx = kl_node_field(n, "indices");
  if (kl_trips_is(idx, "subscript_argument_list") && ts_node_named_child_count(idx) == 1)
    idx = kl_node_named_child(idx, 0);
  if (kl_trips_names(w->t, idx, w->counter)) {
    int64_t s = kl_trips_slots_of(w->t, kl_node_field(n, "argument"));
    if (s > 0 && (w->slots < 0 || s < w->slots)) w->slots = s;
  }
  return KL_WALK_DESCEND;
}

struct kl_trips_fc {
  const struct kl_trips *t;
  const char *fc;
  int64_t slots;
};

/* Loops bounded by the function constant whose counters index arrays: the fewest slots. */
static enum kl_walk kl_trips_fc_visit(TSNode n, void *ctx) {
  struct kl_trips_fc *w = ctx;
  if (!kl_trips_is(n, "for_statement")) return KL_WALK_DESCEND;
  /* This loop's names are read where it is, not where the loop being counted is. */
  struct kl_trips here = *w->t;
  here.at = n;
  struct kl_trips_loop l;
  if (!kl_trips_read(&here, n, &l) || l.step != 1 || l.inclusive) return KL_WALK_DESCEND;
  const char *fc = kl_trips_fconst(&here, l.bound);
  int64_t s0;
  if (!fc || strcmp(fc, w->fc) || !kl_trips_fold(&here, kl_trips_text(&here, l.start), &s0) ||
      s0 != 0)
    return KL_WALK_DESCEND;
  struct kl_trips_use u = {&here, l.counter, -1};
  kl_dialect_walk(kl_node_field(n, "body"), kl_trips_use_visit, &u, NULL);
  if (u.slots > 0 && (w->slots < 0 || u.slots < w->slots)) w->slots = u.slots;
  return KL_WALK_DESCEND;
}

int64_t kl_trips_max(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                     TSNode loop, const struct kl_bindings *b) {
  struct kl_trips t = {a, m, f, b, loop};
  struct kl_trips_loop l;
  int64_t start, end;
  if (!kl_trips_read(&t, loop, &l) || !kl_trips_fold(&t, kl_trips_text(&t, l.start), &start))
    return -1;
  if (!kl_trips_fold(&t, kl_trips_text(&t, l.bound), &end)) {
    /* A counter from 0 that indexes an array of N slots runs at most N times in any run that
     * stays in bounds, so the function constant bounding such a loop is at most N. */
    const char *fc = kl_trips_fconst(&t, l.bound);
    if (!fc || kl_node_null(f->body)) return -1;
    struct kl_trips_fc w = {&t, fc, -1};
    kl_dialect_walk(f->body, kl_trips_fc_visit, &w, NULL);
    if (w.slots < 0) return -1;
    end = w.slots;
    if (l.inclusive) return -1;
  }
  int64_t span = end - start + (l.inclusive ? 1 : 0);
  if (span <= 0) return 0;
  return (span + l.step - 1) / l.step;
}
