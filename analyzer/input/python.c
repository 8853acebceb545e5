/* The Python front end. One walk of the tree-sitter-python tree collects imports, assignments,
 * `global` declarations and calls; the kernel-making calls are then tied to the calls that
 * dispatch them, their sources are decoded with an offset map, and each becomes an MSL unit.
 *
 * Values are followed through names the way Python scopes them: a function's own assignments
 * made before the use, then the module's. A function parameter, a loop variable or anything
 * assigned by unpacking is a runtime value. */
#include "analyzer/input/python.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tree_sitter/api.h>

#include "analyzer/core/node.h"
#include "grammar/dialect.h"
#include "grammar/lex.h"
#include "grammar/msl.h"

#define KL_PY_PARSE_TIMEOUT_US 10000000u
/* Names followed through names, and expression depth, before a value counts as unknown. */
#define KL_PY_MAX_DEPTH 24
/* Longest expression a message quotes as written. */
#define KL_PY_MAX_SHOWN 48
/* Expressions evaluated per file: names that each refer to several others could otherwise make
 * the work exponential in the depth limit. */
#define KL_PY_BUDGET 200000
/* Bytes of values put into texts (kl_py_put) per build: a text made of a name's text twice, made
 * of the next name's twice and so on, doubles at every name (22 names took 6 s and 660 MB before
 * this bound); a real kernel source is a few KB. */
#define KL_PY_TEXT_BUDGET (1u << 20)

enum kl_py_api { KL_PY_MLX, KL_PY_MLX_OLD, KL_PY_TORCH };

/* The last names of the three kernel-making APIs: what decides whether a file is looked at. */
static const char *const kl_py_api_names[] = {"metal_kernel", "MetalKernel", "compile_shader"};
#define KL_PY_NAPI (sizeof kl_py_api_names / sizeof kl_py_api_names[0])

struct kl_py_alias {
  const char *name, *path;
};

/* A name (or attribute text such as `self.k`) bound to a value in a scope. */
struct kl_py_asg {
  const char *target;
  TSNode value; /* null when not a plain value (loop target, +=, unpacking) */
  TSNode stmt;  /* the assignment (its scope is decided once globals are known) */
  TSNode scope; /* function_definition or the module */
  uint32_t end; /* the value is visible from here on */
};

struct kl_py_global {
  TSNode fn;
  const char *name;
};

/* A name through which code reaches a kernel object. */
struct kl_py_binding {
  const char *var;
  TSNode scope;
  uint32_t at;
  size_t def;
};

/* The parameters of a function bound by one call of it, while a value inside it is read: a
 * factory instance, or a helper that returns a source. Its arguments are read where the call is,
 * through the rest of the chain. */
struct kl_py_env {
  TSNode fn, call; /* call null: only the parameters' defaults are known */
  const struct kl_py_env *up;
  bool opaque; /* too many calls to tell apart: every parameter is unknown */
};

/* Conditionals with an unknown test that one build may choose between (2^4 = 16 combinations). */
#define KL_PY_MAX_CHOICES 4
/* Instances of one kernel-making call: factory argument sets times choices. */
#define KL_PY_MAX_INSTANCES 16
/* Distinct factory argument sets built apart; more fall back to one opaque instance. */
#define KL_PY_MAX_ENVS 8
/* Loops unrolled one inside another while a text is built, and iterations of one loop. */
#define KL_PY_MAX_LOOPS 4
#define KL_PY_MAX_ITERS 64
/* Opaque fields in one unit before its source counts as out of reach. */
#define KL_PY_MAX_FIELDS 1024

struct kl_py_def {
  enum kl_py_api api;
  TSNode call;
  const char *factory; /* the function that returns it, when it is returned */
  TSNode *uses;        /* calls that dispatch it */
  size_t nuses, cap_uses;
  TSNode *tmpl; /* MetalKernel: `kernel.template(T=...)` calls */
  size_t ntmpl, cap_tmpl;
};

struct kl_py {
  struct kl_arena *a;
  const struct kl_source *src;
  const char *t;
  TSNode root;
  struct kl_py_alias *aliases;
  size_t naliases, cap_aliases;
  TSNode *asg_nodes;
  size_t nasg_nodes, cap_asg_nodes;
  struct kl_py_asg *asgs;
  size_t nasgs, cap_asgs;
  struct kl_py_global *globals;
  size_t nglobals, cap_globals;
  TSNode *calls;
  size_t ncalls, cap_calls;
  struct kl_py_def *defs;
  size_t ndefs, cap_defs;
  struct kl_py_binding *binds;
  size_t nbinds, cap_binds;
  TSNode *fns; /* every function_definition, in document order */
  size_t nfns, cap_fns;
  struct kl_python *out;
  unsigned budget;
  uint32_t text_budget; /* what is left of KL_PY_TEXT_BUDGET */
  /* The string literals being read, outermost first, each with the parameter bindings it is read
   * under (a helper's literal is read again, with its own bindings, by a nested call of it). */
  struct {
    const void *id;
    const struct kl_py_env *env;
  } in_text[KL_PY_MAX_DEPTH + 1];
  int nin_text;
  const struct kl_py_env *env; /* parameter bindings in force */
  unsigned choice;             /* bit i: take the else branch of the i-th unknown conditional */
  unsigned nbits;              /* how many of those bits the builds of this call enumerate */
  bool first_alt;              /* a conditional past them takes its first branch, not opaque */
  bool hdr_noted;              /* the call's header was said to be out of reach */
  unsigned nchoices;           /* unknown conditionals met by this build */
  const char *choice_text[KL_PY_MAX_CHOICES];
  struct kl_py_field *fields; /* opaque fields of the unit being built */
  size_t nfields, cap_fields;
  /* Loop variables of the loops being unrolled (kl_py_grow), innermost last. */
  struct kl_py_loopvar {
    const char *name;
    TSNode loop; /* the for statement or comprehension: names inside it only */
    TSNode node; /* the item it holds, or null for an integer of range() */
    int64_t value;
  } loopvars[KL_PY_MAX_LOOPS];
  int nloopvars;
};

/* Text built from pieces of the file and made-up pieces, with its map back into the file. */
struct kl_py_buf {
  struct kl_arena *a;
  char *p;
  uint32_t n, cap;
  struct kl_offmap map;
  const char *why; /* set when a source could not be resolved */
  TSNode why_node;
  bool skeleton; /* a field whose value is unknown becomes an opaque identifier */
  bool inner;    /* the text is a value put into another text: never a line of its own */
};

static const TSNode kl_py_null = {{0, 0, 0, 0}, NULL, NULL};

/* ---- small helpers ---- */

/* By symbol and field id (analyzer/core/node.h): type and name must be literals. */
static bool kl_py_is(TSNode n, const char *type) {
  return !kl_node_null(n) && kl_node_is(n, type);
}

static TSNode kl_py_field(TSNode n, const char *name) {
  if (kl_node_null(n)) return n;
  return kl_node_field(n, name);
}

static char *kl_py_text(struct kl_py *p, TSNode n) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  return kl_arena_strndup(p->a, p->t + s, e - s);
}

/* Whether node n's text is exactly s. */
static bool kl_py_text_is(struct kl_py *p, TSNode n, const char *s) {
  if (kl_node_null(n)) return false;
  uint32_t a = ts_node_start_byte(n), e = ts_node_end_byte(n);
  return strlen(s) == e - a && !memcmp(p->t + a, s, e - a);
}

static bool kl_py_contains(TSNode outer, TSNode inner) {
  return ts_node_start_byte(outer) <= ts_node_start_byte(inner) &&
         ts_node_end_byte(inner) <= ts_node_end_byte(outer);
}

/* The loop variable identifier id names, while a loop that holds it is unrolled; else NULL. */
static const struct kl_py_loopvar *kl_py_loopvar(struct kl_py *p, TSNode id) {
  if (!p->nloopvars || !kl_py_is(id, "identifier")) return NULL;
  const char *t = kl_py_text(p, id);
  for (int i = p->nloopvars; i-- > 0;)
    if (!strcmp(p->loopvars[i].name, t) && kl_py_contains(p->loopvars[i].loop, id))
      return &p->loopvars[i];
  return NULL;
}

static TSNode kl_py_unparen(TSNode n) {
  for (int i = 0; i < KL_PY_MAX_DEPTH && kl_py_is(n, "parenthesized_expression") &&
                  ts_node_named_child_count(n) > 0;
       i++)
    n = kl_node_named_child(n, 0);
  return n;
}

/* The innermost function that holds n (not n itself), or the module. From the functions the
 * walk collected: ts_node_parent re-descends from the root, quadratic over a large module. */
static TSNode kl_py_scope(struct kl_py *p, TSNode n) {
  TSNode best = p->root;
  for (size_t i = 0; i < p->nfns; i++) {
    TSNode f = p->fns[i];
    if (ts_node_start_byte(f) > ts_node_start_byte(n)) break;
    if (!ts_node_eq(f, n) && kl_py_contains(f, n)) best = f;
  }
  return best;
}

static bool kl_py_idchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool kl_py_ident(const char *s) {
  if (!s || !kl_py_idchar(*s) || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!kl_py_idchar(*s)) return false;
  return true;
}

static struct kl_span kl_py_span(struct kl_py *p, TSNode n) {
  return kl_diag_span(p->src, ts_node_start_byte(n), ts_node_end_byte(n));
}

/* ---- buffers ---- */

static void kl_py_buf_init(struct kl_py_buf *b, struct kl_arena *a) {
  memset(b, 0, sizeof *b);
  b->a = a;
  kl_offmap_init(&b->map, a);
}

static void kl_py_buf_raw(struct kl_py_buf *b, const char *s, uint32_t n) {
  if (b->n + n + 1 > b->cap) {
    uint32_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + n + 1) nc *= 2;
    b->p = kl_arena_grow(b->a, b->p, b->cap, nc, 1);
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

/* Bytes copied from the file at file_off, one for one. */
static void kl_py_buf_linear(struct kl_py_buf *b, const char *s, uint32_t n, uint32_t file_off) {
  if (!n) return;
  kl_offmap_add(&b->map, b->n, n, file_off, n);
  kl_py_buf_raw(b, s, n);
}

/* Bytes that stand for the file range [file_off, file_off + file_len): an escape, or (with
 * file_len 0) text made up at that place. */
static void kl_py_buf_collapsed(struct kl_py_buf *b, const char *s, uint32_t n, uint32_t file_off,
                                uint32_t file_len) {
  if (!n) return;
  kl_offmap_add(&b->map, b->n, n, file_off, file_len);
  kl_py_buf_raw(b, s, n);
}

static void kl_py_buf_synth(struct kl_py_buf *b, const char *s, uint32_t anchor) {
  kl_py_buf_collapsed(b, s, (uint32_t)strlen(s), anchor, 0);
}

static void kl_py_buf_append(struct kl_py_buf *b, const struct kl_py_buf *o) {
  uint32_t base = b->n;
  for (size_t i = 0; i < o->map.n; i++) {
    const struct kl_offmap_seg *s = &o->map.segs[i];
    kl_offmap_add(&b->map, base + s->buf, s->buf_len, s->file, s->file_len);
  }
  if (o->n) kl_py_buf_raw(b, o->p, o->n);
}

static bool kl_py_fail(struct kl_py_buf *b, TSNode at, const char *why) {
  if (!b->why) {
    b->why = why;
    b->why_node = at;
  }
  return false;
}

/* ---- imports and names ---- */

static void kl_py_alias_add(struct kl_py *p, const char *name, const char *path) {
  KL_VEC_PUSH(p->a, p->aliases, p->naliases, p->cap_aliases);
  p->aliases[p->naliases++] = (struct kl_py_alias){name, path};
}

static void kl_py_import(struct kl_py *p, TSNode n) {
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    if (kl_py_is(c, "aliased_import")) {
      kl_py_alias_add(p, kl_py_text(p, kl_py_field(c, "alias")),
                      kl_py_text(p, kl_py_field(c, "name")));
    } else if (kl_py_is(c, "dotted_name") && ts_node_named_child_count(c) > 0) {
      /* `import mlx.core` binds `mlx`, which then resolves to itself. */
      char *first = kl_py_text(p, kl_node_named_child(c, 0));
      kl_py_alias_add(p, first, first);
    }
  }
}

static void kl_py_import_from(struct kl_py *p, TSNode n) {
  TSNode mod = kl_py_field(n, "module_name");
  if (kl_node_null(mod)) return;
  const char *m = kl_py_text(p, mod);
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    if (ts_node_eq(c, mod)) continue;
    if (kl_py_is(c, "aliased_import")) {
      kl_py_alias_add(p, kl_py_text(p, kl_py_field(c, "alias")),
                      kl_arena_printf(p->a, "%s.%s", m, kl_py_text(p, kl_py_field(c, "name"))));
    } else if (kl_py_is(c, "dotted_name")) {
      const char *nm = kl_py_text(p, c);
      kl_py_alias_add(p, nm, kl_arena_printf(p->a, "%s.%s", m, nm));
    } else if (kl_py_is(c, "wildcard_import")) {
      static const char *const api[] = {"metal_kernel", "MetalKernel", "compile_shader", "fast",
                                        "mps"};
      for (size_t j = 0; j < sizeof api / sizeof api[0]; j++)
        kl_py_alias_add(p, api[j], kl_arena_printf(p->a, "%s.%s", m, api[j]));
    }
  }
}

/* Dotted path of a name or attribute chain under the file's imports: `mx.fast.metal_kernel`
 * after `import mlx.core as mx` is "mlx.core.fast.metal_kernel". */
static const char *kl_py_dotted(struct kl_py *p, TSNode n, int depth) {
  if (kl_node_null(n) || depth > KL_PY_MAX_DEPTH) return NULL;
  if (kl_py_is(n, "identifier")) {
    const char *name = kl_py_text(p, n);
    for (size_t i = p->naliases; i-- > 0;)
      if (!strcmp(p->aliases[i].name, name)) return p->aliases[i].path;
    /* Snippets often leave the import out; these names mean one thing in practice. */
    if (!strcmp(name, "mx")) return "mlx.core";
    if (!strcmp(name, "np")) return "numpy";
    return name;
  }
  if (kl_py_is(n, "attribute")) {
    const char *obj = kl_py_dotted(p, kl_py_field(n, "object"), depth + 1);
    TSNode at = kl_py_field(n, "attribute");
    if (!obj || kl_node_null(at)) return NULL;
    return kl_arena_printf(p->a, "%s.%s", obj, kl_py_text(p, at));
  }
  return NULL;
}

static TSNode kl_py_arg(struct kl_py *p, TSNode call, const char *name, int pos);

static bool kl_py_declares_global(struct kl_py *p, TSNode fn, const char *name) {
  for (size_t i = 0; i < p->nglobals; i++)
    if (ts_node_eq(p->globals[i].fn, fn) && !strcmp(p->globals[i].name, name)) return true;
  return false;
}

/* The parameter of function fn named name (null when none), with its place among the positional
 * parameters (-1: keyword-only or a splat) and its default value (null when none). */
static TSNode kl_py_param(struct kl_py *p, TSNode fn, const char *name, int *pos, TSNode *dflt) {
  TSNode params = kl_py_field(fn, "parameters");
  uint32_t k = kl_node_null(params) ? 0 : ts_node_named_child_count(params);
  int at = 0;
  bool kwonly = false;
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(params, i);
    if (kl_py_is(c, "keyword_separator") || kl_py_is(c, "list_splat_pattern")) kwonly = true;
    if (kl_py_is(c, "positional_separator") || kl_py_is(c, "keyword_separator")) continue;
    TSNode id = c;
    if (!kl_py_is(id, "identifier")) id = kl_py_field(c, "name");
    if (kl_node_null(id) && ts_node_named_child_count(c) > 0) id = kl_node_named_child(c, 0);
    bool splat = kl_py_is(c, "list_splat_pattern") || kl_py_is(c, "dictionary_splat_pattern");
    if (kl_py_is(id, "identifier") && kl_py_text_is(p, id, name)) {
      if (pos) *pos = kwonly || splat ? -1 : at;
      if (dflt) *dflt = splat ? kl_py_null : kl_py_field(c, "value");
      return c;
    }
    at++;
  }
  return kl_py_null;
}

/* Whether name is a parameter of function fn (a runtime value there). */
static bool kl_py_is_param(struct kl_py *p, TSNode fn, const char *name) {
  return !kl_node_null(kl_py_param(p, fn, name, NULL, NULL));
}

/* What parameter name of fn holds: the argument of the call that binds fn in the chain in force,
 * else its default. A method's call does not pass `self`. */
static bool kl_py_param_value(struct kl_py *p, TSNode fn, const char *name, TSNode *value) {
  int pos = -1;
  TSNode dflt = kl_py_null;
  if (kl_node_null(kl_py_param(p, fn, name, &pos, &dflt))) return false;
  for (const struct kl_py_env *e = p->env; e; e = e->up) {
    if (ts_node_eq(e->fn, fn) && e->opaque) return false;
    if (!ts_node_eq(e->fn, fn) || kl_node_null(e->call)) continue;
    TSNode callee = kl_py_field(e->call, "function");
    TSNode params = kl_py_field(fn, "parameters");
    TSNode first = kl_node_null(params) || !ts_node_named_child_count(params)
                       ? kl_py_null
                       : kl_node_named_child(params, 0);
    if (kl_py_is(callee, "attribute") &&
        (kl_py_text_is(p, first, "self") || kl_py_text_is(p, first, "cls")))
      pos--;
    /* f(*args): which argument lands on which parameter is not known. */
    TSNode args = kl_py_field(e->call, "arguments");
    for (uint32_t i = 0; i < ts_node_named_child_count(args); i++)
      if (kl_py_is(kl_node_named_child(args, i), "list_splat")) return false;
    TSNode arg = kl_py_arg(p, e->call, name, pos);
    if (!kl_node_null(arg)) {
      *value = arg;
      return true;
    }
    break;
  }
  if (kl_node_null(dflt)) return false;
  *value = dflt;
  return true;
}

static void kl_py_asg_add(struct kl_py *p, TSNode target, TSNode value, TSNode stmt, TSNode scope) {
  if (kl_py_is(target, "subscript")) {
    /* a[i] = v changes what a holds; the index is only read. */
    kl_py_asg_add(p, kl_py_field(target, "value"), kl_py_null, stmt, scope);
    return;
  }
  if (!kl_py_is(target, "identifier") && !kl_py_is(target, "attribute")) {
    /* Unpacking: a, b = 1, 2 pairs up; anything else is a runtime value per name. */
    uint32_t k = ts_node_named_child_count(target);
    TSNode v = kl_py_unparen(value);
    bool pair = (kl_py_is(v, "expression_list") || kl_py_is(v, "tuple")) &&
                ts_node_named_child_count(v) == k;
    for (uint32_t i = 0; i < k; i++)
      kl_py_asg_add(p, kl_node_named_child(target, i),
                    pair ? kl_node_named_child(v, i) : kl_py_null, stmt, scope);
    return;
  }
  KL_VEC_PUSH(p->a, p->asgs, p->nasgs, p->cap_asgs);
  struct kl_py_asg *g = &p->asgs[p->nasgs++];
  g->target = kl_py_text(p, target);
  g->value = value;
  g->stmt = stmt;
  g->end = ts_node_end_byte(stmt);
  if (!ts_node_eq(scope, p->root) &&
      (kl_py_is(target, "attribute") || kl_py_declares_global(p, scope, g->target)))
    scope = p->root;
  g->scope = scope;
}

static void kl_py_asg_node(struct kl_py *p, TSNode n, TSNode scope) {
  if (kl_py_is(n, "assignment")) {
    TSNode left = kl_py_field(n, "left"), right = kl_py_field(n, "right");
    /* a = b = value: every target gets the final value. */
    TSNode v = right;
    for (int i = 0; i < KL_PY_MAX_DEPTH && kl_py_is(v, "assignment"); i++)
      v = kl_py_field(v, "right");
    if (!kl_node_null(left)) kl_py_asg_add(p, left, v, n, scope);
  } else if (kl_py_is(n, "augmented_assignment")) {
    TSNode left = kl_py_field(n, "left");
    if (!kl_node_null(left)) kl_py_asg_add(p, left, kl_py_null, n, scope);
  } else if (kl_py_is(n, "for_statement")) {
    TSNode left = kl_py_field(n, "left");
    if (!kl_node_null(left)) kl_py_asg_add(p, left, kl_py_null, left, scope);
  }
}

/* The value bound to name (an identifier or attribute text) where `at` is. */
static bool kl_py_lookup(struct kl_py *p, const char *name, TSNode at, TSNode *value) {
  uint32_t pos = ts_node_start_byte(at);
  TSNode s = kl_py_scope(p, at);
  for (int guard = 0; guard < KL_PY_MAX_DEPTH; guard++) {
    bool module = ts_node_eq(s, p->root);
    bool global = !module && kl_py_declares_global(p, s, name);
    /* A parameter holds its argument until the function assigns it (`tg = min(tg, 1024)`). */
    bool param = !module && !global && kl_py_is_param(p, s, name);
    const struct kl_py_asg *best = NULL, *last = NULL;
    bool later = false;
    if (!global) {
      for (size_t i = 0; i < p->nasgs; i++) {
        const struct kl_py_asg *g = &p->asgs[i];
        if (!ts_node_eq(g->scope, s) || strcmp(g->target, name)) continue;
        if (g->end <= pos) {
          if (!best || g->end > best->end) best = g;
        } else {
          later = true;
        }
        last = g;
      }
    }
    /* A module global read from a function may be assigned after the function. */
    if (!best && module) best = last;
    if (best) {
      *value = best->value;
      return !kl_node_null(best->value);
    }
    if (param) return kl_py_param_value(p, s, name, value);
    if (module) return false;
    if (later) return false; /* a local assigned only afterwards */
    s = kl_py_scope(p, s);
  }
  return false;
}

/* Follow a name to the expression it stands for (through at most KL_PY_MAX_DEPTH names). */
static TSNode kl_py_resolve(struct kl_py *p, TSNode n) {
  n = kl_py_unparen(n);
  for (int i = 0; i < KL_PY_MAX_DEPTH && kl_py_is(n, "identifier"); i++) {
    TSNode v;
    if (!kl_py_lookup(p, kl_py_text(p, n), n, &v)) break;
    n = kl_py_unparen(v);
  }
  return n;
}

/* ---- string sources ---- */

static int kl_py_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static uint32_t kl_py_utf8(uint32_t cp, char *out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = '?';
  if (cp == 0) cp = ' '; /* a NUL would end the text early for C string helpers */
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Decode the body of one string literal, file bytes [s, e), into b. Every escape maps its
 * decoded bytes onto the escape's own file range; everything else maps byte for byte. */
static void kl_py_decode(struct kl_py_buf *b, const char *t, uint32_t s, uint32_t e, bool raw,
                         bool fstr) {
  uint32_t run = s;
  for (uint32_t i = s; i < e;) {
    char c = t[i];
    if (fstr && (c == '{' || c == '}') && i + 1 < e && t[i + 1] == c) {
      kl_py_buf_linear(b, t + run, i - run, run);
      kl_py_buf_collapsed(b, t + i, 1, i, 2);
      i += 2;
      run = i;
      continue;
    }
    if (raw || c != '\\' || i + 1 >= e) {
      i++;
      continue;
    }
    kl_py_buf_linear(b, t + run, i - run, run);
    char out[8];
    uint32_t n = 0, len = 2;
    char x = t[i + 1];
    switch (x) {
    case '\n':
      n = 0;
      break; /* a line continuation */
    case '\r':
      len = i + 2 < e && t[i + 2] == '\n' ? 3 : 2;
      break;
    case '\\':
    case '\'':
    case '"':
      out[n++] = x;
      break;
    case 'a':
      out[n++] = '\a';
      break;
    case 'b':
      out[n++] = '\b';
      break;
    case 'f':
      out[n++] = '\f';
      break;
    case 'n':
      out[n++] = '\n';
      break;
    case 'r':
      out[n++] = '\r';
      break;
    case 't':
      out[n++] = '\t';
      break;
    case 'v':
      out[n++] = '\v';
      break;
    case 'x':
    case 'u':
    case 'U': {
      uint32_t want = x == 'x' ? 2 : x == 'u' ? 4 : 8, cp = 0, k = 0;
      for (; k < want && i + 2 + k < e && kl_py_hex(t[i + 2 + k]) >= 0; k++)
        cp = cp * 16 + (uint32_t)kl_py_hex(t[i + 2 + k]);
      if (k == want) {
        len = 2 + want;
        n = kl_py_utf8(cp, out);
      } else {
        out[n++] = '\\';
        out[n++] = x;
      }
      break;
    }
    case 'N': { /* \N{NAME}: the character is not needed, only its place */
      uint32_t k = i + 2;
      if (k < e && t[k] == '{') {
        while (k < e && t[k] != '}') k++;
        len = k < e ? k + 1 - i : 2;
      }
      out[n++] = '?';
      break;
    }
    default:
      if (x >= '0' && x <= '7') {
        uint32_t cp = 0, k = 0;
        for (; k < 3 && i + 1 + k < e && t[i + 1 + k] >= '0' && t[i + 1 + k] <= '7'; k++)
          cp = cp * 8 + (uint32_t)(t[i + 1 + k] - '0');
        len = 1 + k;
        n = kl_py_utf8(cp, out);
      } else {
        /* Python keeps an unknown escape as written. */
        out[n++] = '\\';
        out[n++] = x;
      }
    }
    if (n == 2 && out[0] == '\\' && len == 2)
      kl_py_buf_linear(b, t + i, 2, i);
    else
      kl_py_buf_collapsed(b, out, n, i, len);
    i += len;
    run = i;
  }
  kl_py_buf_linear(b, t + run, e - run, run);
}

static bool kl_py_string(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth);
static const char *kl_py_short(struct kl_py *p, TSNode n, uint32_t max);
static struct kl_dx *kl_py_dx(struct kl_py *p, TSNode n, int depth);

/* Bytes [s, e) of another buffer, with their map into the file. */
static void kl_py_buf_copy(struct kl_py_buf *b, const struct kl_py_buf *o, uint32_t s, uint32_t e) {
  if (e <= s) return;
  uint32_t base = b->n;
  for (size_t i = 0; i < o->map.n; i++) {
    const struct kl_offmap_seg *g = &o->map.segs[i];
    uint32_t lo = g->buf > s ? g->buf : s, hi = g->buf + g->buf_len < e ? g->buf + g->buf_len : e;
    if (lo >= hi) continue;
    if (g->buf_len == g->file_len)
      kl_offmap_add(&b->map, base + lo - s, hi - lo, g->file + (lo - g->buf), hi - lo);
    else
      kl_offmap_add(&b->map, base + lo - s, hi - lo, g->file, g->file_len);
  }
  kl_py_buf_raw(b, o->p + s, e - s);
}

/* Whether only blanks follow, up to the end of the line (or of the text). */
static bool kl_py_rest_blank(const char *t, uint32_t n) {
  for (uint32_t i = 0; i < n && t[i] != '\n'; i++)
    if (t[i] != ' ' && t[i] != '\t' && t[i] != '\r') return false;
  return true;
}

/* A field whose value is not known, at file bytes [fs, fe): an opaque identifier, uniform and of
 * no known type. A field alone on its line stands for generated statements, and becomes a comment
 * (an identifier there would glue onto the next statement as its type). after/nafter: the text
 * that follows the field. */
static bool kl_py_placeholder(struct kl_py *p, struct kl_py_buf *b, uint32_t fs, uint32_t fe,
                              const char *after, uint32_t nafter) {
  /* A unit of thousands of opaque fields is generated code, not a kernel written by hand. */
  if (!b->skeleton || p->nfields >= KL_PY_MAX_FIELDS) return false;
  if (fe < fs) fe = fs;
  uint32_t i = b->n;
  while (i > 0 && (b->p[i - 1] == ' ' || b->p[i - 1] == '\t')) i--;
  /* Statements: after `;`, `{` or `}` on its line, or first on a line that does not continue an
   * expression (`max(v,` above it does). */
  bool alone = false;
  if (!b->inner && kl_py_rest_blank(after, nafter)) {
    if (i > 0 && strchr(";{}", b->p[i - 1])) {
      alone = true;
    } else if (i == 0 || b->p[i - 1] == '\n') {
      uint32_t j = i;
      while (j > 0 && strchr(" \t\r\n", b->p[j - 1])) j--;
      alone = j == 0 || !strchr(",(+-*/%=<>&|?:[!^~", b->p[j - 1]);
    }
  }
  KL_VEC_PUSH(p->a, p->fields, p->nfields, p->cap_fields);
  struct kl_py_field *f = &p->fields[p->nfields];
  f->span = kl_diag_span(p->src, fs, fe);
  /* Quoted on one line: a field's expression can span several. */
  uint32_t shown = fe - fs > KL_PY_MAX_SHOWN ? KL_PY_MAX_SHOWN : fe - fs;
  char *q = kl_arena_strndup(p->a, p->t + fs, shown);
  for (char *c = q; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
  f->text = fe <= fs                 ? "{...}"
            : fe - fs > KL_PY_MAX_SHOWN ? kl_arena_printf(p->a, "%s...", q)
                                        : q;
  /* The text of its line so far: a condition around it makes it part of a guard. */
  uint32_t ls = b->n;
  while (ls > 0 && b->p[ls - 1] != '\n') ls--;
  const char *line = b->n ? kl_arena_strndup(p->a, b->p + ls, b->n - ls) : "";
  f->control = alone || strstr(line, "if") || strstr(line, "while") || strchr(line, '?');
  const char *id = kl_arena_printf(p->a, alone ? "/*__kl_field_%zu*/" : "__kl_field_%zu",
                                   p->nfields);
  p->nfields++;
  kl_py_buf_collapsed(b, id, (uint32_t)strlen(id), fs, fe - fs);
  return true;
}

/* Which branch of a conditional whose test is unknown this build takes (0 the first, 1 the
 * else); -1 when the build has used up its choices and the value is opaque. */
static int kl_py_choose(struct kl_py *p, TSNode test) {
  const char *text = kl_py_short(p, test, 32);
  /* One test decides every fragment it guards: `x if has_mask else y` twice is one choice. */
  for (unsigned j = 0; j < p->nchoices && j < KL_PY_MAX_CHOICES; j++)
    if (!strcmp(p->choice_text[j], text)) return j < p->nbits ? (int)((p->choice >> j) & 1u) : -1;
  unsigned i = p->nchoices++;
  if (i < KL_PY_MAX_CHOICES) p->choice_text[i] = text;
  if (i < p->nbits) return (int)((p->choice >> i) & 1u);
  /* Past the combinations built: opaque inside a field, else the first alternative. */
  return p->first_alt ? 0 : -1;
}

static int kl_py_truth(struct kl_py *p, TSNode n, int depth);

/* The integer value of n when it is known. */
static bool kl_py_int(struct kl_py *p, TSNode n, int depth, int64_t *v) {
  n = kl_py_unparen(n);
  if (kl_py_is(n, "string") || kl_py_is(n, "concatenated_string")) return false;
  return kl_dx_value(kl_py_dx(p, n, depth + 1), v);
}

/* A string constant under the bindings in force (no opaque fields), or NULL. */
static const char *kl_py_string_at(struct kl_py *p, TSNode n, int depth);

static const char *kl_py_known_string(struct kl_py *p, TSNode n, int depth) {
  size_t nf = p->nfields;
  unsigned nc = p->nchoices;
  const char *v = kl_py_string_at(p, n, depth + 1);
  if (!v) {
    p->nfields = nf;
    p->nchoices = nc;
  }
  return v;
}

/* Truth of a test: 1, 0, or -1 when not known. */
static int kl_py_truth(struct kl_py *p, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (kl_node_null(n) || depth > KL_PY_MAX_DEPTH || p->budget == 0) return -1;
  p->budget--;
  const char *ty = ts_node_type(n);
  if (!strcmp(ty, "true")) return 1;
  if (!strcmp(ty, "false") || !strcmp(ty, "none")) return 0;
  if (!strcmp(ty, "identifier")) {
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, n);
    if (lv) return kl_node_null(lv->node) ? lv->value != 0 : kl_py_truth(p, lv->node, depth + 1);
    TSNode v = kl_py_resolve(p, n);
    return kl_py_is(v, "identifier") ? -1 : kl_py_truth(p, v, depth + 1);
  }
  if (!strcmp(ty, "not_operator")) {
    int t = kl_py_truth(p, kl_py_field(n, "argument"), depth + 1);
    return t < 0 ? -1 : !t;
  }
  if (!strcmp(ty, "boolean_operator")) {
    bool conj = kl_py_is(kl_py_field(n, "operator"), "and");
    int l = kl_py_truth(p, kl_py_field(n, "left"), depth + 1);
    if (l == (conj ? 0 : 1)) return l;
    int r = kl_py_truth(p, kl_py_field(n, "right"), depth + 1);
    if (r == (conj ? 0 : 1)) return r;
    return l < 0 || r < 0 ? -1 : r;
  }
  if (!strcmp(ty, "comparison_operator")) {
    if (ts_node_named_child_count(n) != 2 || ts_node_child_count(n) != 3) return -1;
    TSNode l = kl_node_named_child(n, 0), r = kl_node_named_child(n, 1);
    const char *op = ts_node_type(ts_node_child(n, 1));
    int64_t x, y;
    if (kl_py_int(p, l, depth, &x) && kl_py_int(p, r, depth, &y)) {
      if (!strcmp(op, "==")) return x == y;
      if (!strcmp(op, "!=")) return x != y;
      if (!strcmp(op, "<")) return x < y;
      if (!strcmp(op, "<=")) return x <= y;
      if (!strcmp(op, ">")) return x > y;
      if (!strcmp(op, ">=")) return x >= y;
      return -1;
    }
    if (strcmp(op, "==") && strcmp(op, "!=")) return -1;
    const char *sx = kl_py_known_string(p, l, depth);
    const char *sy = sx ? kl_py_known_string(p, r, depth) : NULL;
    if (!sx || !sy) return -1;
    return !strcmp(sx, sy) == !strcmp(op, "==");
  }
  int64_t v;
  if (!strcmp(ty, "integer") && kl_py_int(p, n, depth, &v)) return v != 0;
  if (!strcmp(ty, "string") || !strcmp(ty, "concatenated_string")) {
    const char *s = kl_py_known_string(p, n, depth);
    return s ? *s != '\0' : -1;
  }
  return -1;
}

/* The element `x[k]` stands for when x is a dict, list or tuple written out (through names) and
 * k a known string or integer: the value of the pair whose key is k (a dict with `**` spread
 * in has keys kernlint cannot see), or the k-th item; null otherwise. */
static TSNode kl_py_element(struct kl_py *p, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (!kl_py_is(n, "subscript") || depth > KL_PY_MAX_DEPTH) return kl_py_null;
  TSNode base = kl_py_unparen(kl_py_field(n, "value"));
  /* A table the file changes anywhere (`T[k] = v`, `T += ...`, unpacked into) may not hold what
   * its literal says where it is read: a function can run after the change. */
  if (kl_py_is(base, "identifier")) {
    const char *name = kl_py_text(p, base);
    for (size_t i = 0; i < p->nasgs; i++)
      if (kl_node_null(p->asgs[i].value) && !strcmp(p->asgs[i].target, name)) return kl_py_null;
  }
  TSNode c = kl_py_resolve(p, base);
  TSNode key = kl_py_field(n, "subscript");
  if (kl_node_null(key) || kl_py_is(key, "slice")) return kl_py_null;
  int64_t ki = 0;
  const char *ks = NULL;
  bool kint = kl_py_int(p, key, depth, &ki);
  if (!kint && !(ks = kl_py_known_string(p, key, depth))) return kl_py_null;
  uint32_t m = kl_node_null(c) ? 0 : ts_node_named_child_count(c);
  if (kl_py_is(c, "dictionary")) {
    TSNode found = kl_py_null;
    for (uint32_t i = 0; i < m; i++) {
      TSNode pr = kl_node_named_child(c, i);
      if (kl_py_is(pr, "comment")) continue;
      if (!kl_py_is(pr, "pair")) return kl_py_null;
      TSNode k = kl_py_field(pr, "key");
      int64_t vi;
      const char *vs;
      bool same = kint ? kl_py_int(p, k, depth, &vi) && vi == ki
                       : (vs = kl_py_known_string(p, k, depth)) && !strcmp(vs, ks);
      if (same) found = kl_py_field(pr, "value"); /* the last of repeated keys wins */
    }
    return found;
  }
  if (!kint || (!kl_py_is(c, "list") && !kl_py_is(c, "tuple"))) return kl_py_null;
  TSNode items[256];
  uint32_t ni = 0;
  for (uint32_t i = 0; i < m && ni < 256; i++) {
    TSNode e = kl_node_named_child(c, i);
    if (kl_py_is(e, "comment")) continue;
    if (kl_py_is(e, "list_splat")) return kl_py_null;
    items[ni++] = e;
  }
  if (ni == 256 && m > 256) return kl_py_null;
  if (ki < 0) ki += ni;
  return ki >= 0 && ki < ni ? items[ki] : kl_py_null;
}

/* str() of a value into b: a string, an integer, a bool; false (b untouched but for why) when it
 * is not known. The text of a number stands for the file range [fs, fe). */
static bool kl_py_value(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth, uint32_t fs,
                        uint32_t fe) {
  TSNode v = kl_py_unparen(n);
  for (int i = 0; i < KL_PY_MAX_DEPTH; i++) {
    TSNode w;
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, v);
    if (lv && kl_node_null(lv->node)) {
      const char *t = kl_arena_printf(p->a, "%lld", (long long)lv->value);
      kl_py_buf_collapsed(b, t, (uint32_t)strlen(t), fs, fe - fs);
      return true;
    }
    if (lv) {
      w = lv->node;
    } else if (kl_py_is(v, "identifier")) {
      if (!kl_py_lookup(p, kl_py_text(p, v), v, &w)) break;
    } else if (kl_py_is(v, "subscript")) {
      w = kl_py_element(p, v, depth + 1);
      if (kl_node_null(w)) break;
    } else {
      break;
    }
    v = kl_py_unparen(w);
  }
  const char *ty = kl_node_null(v) ? "" : ts_node_type(v);
  const char *text = NULL;
  int64_t k;
  if (!strcmp(ty, "true") || !strcmp(ty, "false") || !strcmp(ty, "none")) {
    text = ty[0] == 't' ? "True" : ty[0] == 'f' ? "False" : "None";
  } else if (!strcmp(ty, "float")) {
    char *f = kl_py_text(p, v), *o = f;
    for (char *c = f; *c; c++)
      if (*c != '_') *o++ = *c;
    *o = '\0';
    text = f;
  } else if ((!strcmp(ty, "integer") || !strcmp(ty, "unary_operator") ||
              !strcmp(ty, "binary_operator") || !strcmp(ty, "call")) &&
             kl_py_int(p, v, depth, &k)) {
    text = kl_arena_printf(p->a, "%lld", (long long)k);
  } else if (!strcmp(ty, "call")) {
    TSNode fn = kl_py_field(v, "function");
    TSNode args = kl_py_field(v, "arguments");
    if (kl_py_text_is(p, fn, "str") && !kl_node_null(args) && ts_node_named_child_count(args) == 1)
      return kl_py_value(p, b, kl_node_named_child(args, 0), depth + 1, fs, fe);
  }
  if (text) {
    kl_py_buf_collapsed(b, text, (uint32_t)strlen(text), fs, fe - fs);
    return true;
  }
  return kl_py_string(p, b, v, depth + 1);
}

/* How a value becomes text where it is put: str(), an integer conversion (`%d`, `{:d}`: True is
 * 1), or a format kernlint does not apply (the value is then opaque). */
enum kl_py_conv { KL_PY_CONV_NONE, KL_PY_CONV_STR, KL_PY_CONV_INT };

/* One value put into a text (an f-string field, a `.format()` or `%` argument, a `.replace()`
 * replacement), at file bytes [fs, fe): its text when known, else an opaque field when the
 * build allows one. */
static bool kl_py_put(struct kl_py *p, struct kl_py_buf *b, TSNode n, enum kl_py_conv conv,
                      int depth, uint32_t fs, uint32_t fe, const char *after, uint32_t nafter,
                      const char *what) {
  struct kl_py_buf v;
  kl_py_buf_init(&v, p->a);
  v.skeleton = b->skeleton;
  v.inner = true;
  size_t nf = p->nfields;
  unsigned nc = p->nchoices;
  int64_t k;
  if (conv == KL_PY_CONV_INT && !kl_node_null(n) && kl_py_int(p, n, depth, &k)) {
    const char *t = kl_arena_printf(p->a, "%lld", (long long)k);
    kl_py_buf_collapsed(b, t, (uint32_t)strlen(t), fs, fe - fs);
    return true;
  }
  if (conv == KL_PY_CONV_STR && !kl_node_null(n) && p->text_budget &&
      kl_py_value(p, &v, n, depth, fs, fe)) {
    /* Past the budget a value is not known, as if it could not be read. */
    size_t cost = v.n + v.map.n * sizeof *v.map.segs;
    if (cost <= p->text_budget) {
      p->text_budget -= (uint32_t)cost;
      kl_py_buf_append(b, &v);
      return true;
    }
    p->text_budget = 0;
  }
  p->nfields = nf;
  p->nchoices = nc;
  if (kl_py_placeholder(p, b, fs, fe, after, nafter)) return true;
  return kl_py_fail(b, kl_node_null(n) ? p->root : n, what);
}

static bool kl_py_string_lit_in(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth);

/* A string literal's text. One whose fields reach back to itself under the same bindings
 * (`s = t = f"{t}..."`) has none: read, it would double at every turn until the budgets ran out. */
static bool kl_py_string_lit(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  for (int i = 0; i < p->nin_text; i++)
    if (p->in_text[i].id == n.id && p->in_text[i].env == p->env)
      return kl_py_fail(b, n, "a string that contains itself");
  if (p->nin_text > KL_PY_MAX_DEPTH) return kl_py_fail(b, n, "a chain of names too long to follow");
  p->in_text[p->nin_text].id = n.id;
  p->in_text[p->nin_text++].env = p->env;
  bool ok = kl_py_string_lit_in(p, b, n, depth);
  p->nin_text--;
  return ok;
}

static bool kl_py_string_lit_in(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  TSNode start = kl_py_null, end = kl_py_null;
  uint32_t k = ts_node_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(n, i);
    if (kl_py_is(c, "string_start"))
      start = c;
    else if (kl_py_is(c, "string_end"))
      end = c;
  }
  if (kl_node_null(start) || kl_node_null(end)) return kl_py_fail(b, n, "a broken string");
  bool raw = false, fstr = false;
  for (uint32_t i = ts_node_start_byte(start); i < ts_node_end_byte(start); i++) {
    char c = p->t[i];
    if (c == 'r' || c == 'R') raw = true;
    if (c == 'f' || c == 'F') fstr = true;
    if (c == 'b' || c == 'B') return kl_py_fail(b, n, "a bytes literal");
  }
  uint32_t run = ts_node_end_byte(start), stop = ts_node_start_byte(end);
  /* Text between fields is the file's; each field is its value, or opaque. */
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(n, i);
    if (!kl_py_is(c, "interpolation")) continue;
    uint32_t fs = ts_node_start_byte(c), fe = ts_node_end_byte(c);
    kl_py_decode(b, p->t, run, fs, raw, fstr);
    TSNode conv = kl_py_field(c, "type_conversion"), spec = kl_py_field(c, "format_specifier");
    enum kl_py_conv how = !kl_node_null(conv) && !kl_py_text_is(p, conv, "!s") ? KL_PY_CONV_NONE
                          : kl_node_null(spec) || kl_py_text_is(p, spec, ":")  ? KL_PY_CONV_STR
                          : kl_py_text_is(p, spec, ":d")                       ? KL_PY_CONV_INT
                                                                               : KL_PY_CONV_NONE;
    if (!kl_py_put(p, b, kl_py_field(c, "expression"), how, depth, fs, fe, p->t + fe,
                   stop > fe ? stop - fe : 0, "an f-string with replacement fields"))
      return false;
    run = fe;
  }
  kl_py_decode(b, p->t, run, stop, raw, fstr);
  return true;
}

/* Source text as written, on one line and cut at max bytes: what a message can quote. */
static const char *kl_py_short(struct kl_py *p, TSNode n, uint32_t max) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  char *q = kl_arena_strndup(p->a, p->t + s, e > s + max ? max : e - s);
  char *w = q;
  for (const char *r = q; *r; r++) {
    bool sp = *r == '\n' || *r == '\r' || *r == '\t' || *r == ' ';
    if (sp && (w == q || w[-1] == ' ')) continue;
    *w++ = sp ? ' ' : *r;
  }
  while (w > q && w[-1] == ' ') w--;
  *w = '\0';
  if (e > s + max) {
    while (w > q && ((unsigned char)w[-1] & 0xC0) == 0x80) w--;
    if (w > q) w--;
    return kl_arena_printf(p->a, "%.*s...", (int)(w - q), q);
  }
  return q;
}

/* Whether n adds to list `name`: name.append/extend/insert(...), name += [...]. */
static bool kl_py_grows(struct kl_py *p, TSNode n, const char *name) {
  if (kl_py_is(n, "augmented_assignment")) return kl_py_text_is(p, kl_py_field(n, "left"), name);
  if (!kl_py_is(n, "call")) return false;
  TSNode fn = kl_py_field(n, "function");
  if (!kl_py_is(fn, "attribute") || !kl_py_text_is(p, kl_py_field(fn, "object"), name))
    return false;
  TSNode a = kl_py_field(fn, "attribute");
  return kl_py_text_is(p, a, "append") || kl_py_text_is(p, a, "extend") ||
         kl_py_text_is(p, a, "insert");
}

/* The loop of scope s in which list `name` grows, searched depth-first under n. */
static TSNode kl_py_growing_loop(struct kl_py *p, TSNode n, TSNode s, const char *name, TSNode loop,
                                 int depth) {
  if (depth > 64) return kl_py_null;
  if (!kl_node_null(loop) && kl_py_grows(p, n, name)) return loop;
  if (kl_py_is(n, "function_definition") || kl_py_is(n, "class_definition")) return kl_py_null;
  if (kl_py_is(n, "for_statement") || kl_py_is(n, "while_statement")) loop = n;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode r = kl_py_growing_loop(p, kl_node_named_child(n, i), s, name, loop, depth + 1);
    if (!kl_node_null(r)) return r;
  }
  return kl_py_null;
}

/* The loop, before identifier `at` in its scope, in which the list or string it names grows. */
static TSNode kl_py_built_by_loop(struct kl_py *p, TSNode at) {
  const char *name = kl_py_text(p, at);
  TSNode s = kl_py_scope(p, at);
  TSNode body = ts_node_eq(s, p->root) ? s : kl_py_field(s, "body");
  uint32_t k = kl_node_null(body) ? 0 : ts_node_named_child_count(body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(body, i);
    if (ts_node_start_byte(c) >= ts_node_start_byte(at)) break;
    TSNode loop = kl_py_growing_loop(p, c, s, name, kl_py_null, 0);
    if (!kl_node_null(loop)) return loop;
  }
  return kl_py_null;
}

/* Whether n, or anything under it (not a nested function or class), binds or grows `name`. */
static bool kl_py_touches(struct kl_py *p, TSNode n, const char *name, int depth) {
  if (kl_node_null(n) || depth > 64) return depth > 64;
  if (kl_py_is(n, "function_definition") || kl_py_is(n, "class_definition")) return false;
  if (kl_py_grows(p, n, name)) return true;
  if (kl_py_is(n, "assignment") || kl_py_is(n, "for_statement")) {
    TSNode left = kl_py_field(n, "left");
    if (kl_py_text_is(p, left, name)) return true;
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_py_touches(p, kl_node_named_child(n, i), name, depth + 1)) return true;
  return false;
}

/* The one statement an expression statement holds, else null. */
static TSNode kl_py_stmt_expr(TSNode c) {
  if (!kl_py_is(c, "expression_statement") || ts_node_named_child_count(c) != 1) return kl_py_null;
  return kl_node_named_child(c, 0);
}

/* The values a loop takes from iterable n when kernlint can list them: range() of known
 * integers (ints[]), or the items of a list or tuple written out (items[]). Returns how many
 * (at most KL_PY_MAX_ITERS), or -1. */
static int kl_py_iter(struct kl_py *p, TSNode n, int depth, int64_t *ints, TSNode *items) {
  n = kl_py_resolve(p, n);
  if (kl_py_is(n, "list") || kl_py_is(n, "tuple")) {
    int k = 0;
    uint32_t m = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < m; i++) {
      TSNode e = kl_node_named_child(n, i);
      if (kl_py_is(e, "comment")) continue;
      if (k == KL_PY_MAX_ITERS || kl_py_is(e, "list_splat")) return -1;
      ints[k] = 0;
      items[k++] = e;
    }
    return k;
  }
  if (!kl_py_is(n, "call") || !kl_py_text_is(p, kl_py_field(n, "function"), "range")) return -1;
  TSNode args = kl_py_field(n, "arguments");
  uint32_t na = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  int64_t a[3] = {0, 0, 1};
  if (na < 1 || na > 3) return -1;
  for (uint32_t i = 0; i < na; i++) {
    TSNode x = kl_node_named_child(args, i);
    if (kl_py_is(x, "keyword_argument") || !kl_py_int(p, x, depth, &a[na == 1 ? 1 : i])) return -1;
  }
  if (a[2] == 0) return -1;
  int k = 0;
  for (int64_t v = a[0]; a[2] > 0 ? v < a[1] : v > a[1]; v += a[2]) {
    if (k == KL_PY_MAX_ITERS) return -1;
    items[k] = kl_py_null;
    ints[k++] = v;
    /* The next value would not fit: range() stops before it anyway. */
    if (a[2] > 0 ? v > INT64_MAX - a[2] : v < INT64_MIN - a[2]) break;
  }
  return k;
}

/* Whether n holds a statement that leaves an iteration or the function early. */
static bool kl_py_jumps(TSNode n, int depth) {
  if (kl_node_null(n) || depth > 64) return depth > 64;
  if (kl_py_is(n, "break_statement") || kl_py_is(n, "continue_statement") ||
      kl_py_is(n, "return_statement") || kl_py_is(n, "raise_statement"))
    return true;
  if (kl_py_is(n, "function_definition") || kl_py_is(n, "class_definition")) return false;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_py_jumps(kl_node_named_child(n, i), depth + 1)) return true;
  return false;
}

/* A name built by the statements of its scope, read in order up to identifier `at`: a string
 * (`src = "..."`, then `src += f"..."`) or a list of strings (`lines = [...]`, then
 * `lines.append(x)`, `lines += [...]`, `lines.extend([...])`, joined by sep), also in `for`
 * loops over range() of known integers or a list written out, which are unrolled (the loop
 * variable holds each value in turn). Anything else that binds or grows it (under an `if`, in
 * a `while`, a loop that breaks) depends on the run. */
/* Parts of one built text. */
enum { KL_PY_MAX_PARTS = 1024 };

struct kl_py_grow {
  const char *name;
  bool list;
  TSNode sep; /* list: the separator of the join */
  TSNode at;
  int depth;
  struct kl_py_buf cur; /* the text so far */
  bool started;
  int nparts, iters;
  struct kl_py_buf *b; /* where a part that cannot be read says why */
};

/* 1: done; 0: not built that way (nothing said); -1: a part cannot be read (b says why). */
static int kl_py_grow_part(struct kl_py *p, struct kl_py_grow *g, TSNode part) {
  if (g->nparts++ >= KL_PY_MAX_PARTS) return 0;
  if ((g->list && g->nparts > 1 && !kl_py_string(p, &g->cur, g->sep, g->depth + 1)) ||
      !kl_py_string(p, &g->cur, part, g->depth + 1)) {
    kl_py_fail(g->b, g->cur.why_node, g->cur.why);
    return -1;
  }
  return 1;
}

static int kl_py_grow_items(struct kl_py *p, struct kl_py_grow *g, TSNode items) {
  items = kl_py_unparen(items);
  if (!kl_py_is(items, "list") && !kl_py_is(items, "tuple")) return 0;
  uint32_t m = ts_node_named_child_count(items);
  for (uint32_t j = 0; j < m; j++) {
    TSNode e = kl_node_named_child(items, j);
    if (kl_py_is(e, "comment")) continue;
    if (kl_py_is(e, "list_splat")) return 0;
    int r = kl_py_grow_part(p, g, e);
    if (r != 1) return r;
  }
  return 1;
}

/* Whether p->t[s, e) assigns or grows name: `name =`, `name +=`, `name.append(`,
 * `name.extend(` (text only: a use inside a construct is then not read from before it). */
static bool kl_py_grows_in(struct kl_py *p, const char *name, uint32_t s, uint32_t e) {
  size_t n = strlen(name);
  for (uint32_t i = s; i + n <= e; i++) {
    if (memcmp(p->t + i, name, n) || (i > s && kl_lex_ident_char(p->t[i - 1])) ||
        (i + n < e && kl_lex_ident_char(p->t[i + n])))
      continue;
    uint32_t j = i + (uint32_t)n;
    while (j < e && p->t[j] == ' ') j++;
    if (j + 1 < e && p->t[j] == '+' && p->t[j + 1] == '=') return true;
    if (j < e && p->t[j] == '=' && (j + 1 >= e || p->t[j + 1] != '=')) return true;
    if (j + 7 < e && (!memcmp(p->t + j, ".append", 7) || !memcmp(p->t + j, ".extend", 7)))
      return true;
  }
  return false;
}

static int kl_py_grow_block(struct kl_py *p, struct kl_py_grow *g, TSNode body, bool top) {
  uint32_t k = kl_node_null(body) ? 0 : ts_node_named_child_count(body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(body, i);
    if (top && ts_node_end_byte(c) > ts_node_start_byte(g->at)) {
      /* The statement that holds the use (a loop, an if) may grow the name before it: its text
       * is not the one before the statement. */
      if (kl_py_grows_in(p, g->name, ts_node_start_byte(c), ts_node_start_byte(g->at))) return -1;
      break;
    }
    if (kl_py_is(c, "comment")) continue;
    TSNode x = kl_py_stmt_expr(c);
    TSNode left = kl_py_field(x, "left"), right = kl_py_field(x, "right");
    bool mine =
        !kl_node_null(left) && kl_py_is(left, "identifier") && kl_py_text_is(p, left, g->name);
    int r = 1;
    if (mine && kl_py_is(x, "assignment")) {
      if (!top) return 0;
      kl_py_buf_init(&g->cur, p->a);
      g->cur.skeleton = g->b->skeleton;
      g->cur.inner = g->b->inner;
      g->started = true;
      g->nparts = 0;
      r = g->list ? kl_py_grow_items(p, g, right) : kl_py_grow_part(p, g, right);
    } else if (mine && kl_py_is(x, "augmented_assignment")) {
      TSNode op = kl_py_field(x, "operator");
      if (!g->started || kl_node_null(op) || strcmp(ts_node_type(op), "+=")) return 0;
      r = g->list ? kl_py_grow_items(p, g, right) : kl_py_grow_part(p, g, right);
    } else if (g->list && kl_py_is(x, "call") && kl_py_grows(p, x, g->name)) {
      TSNode attr = kl_py_field(kl_py_field(x, "function"), "attribute");
      TSNode args = kl_py_field(x, "arguments");
      if (!g->started || kl_node_null(args) || ts_node_named_child_count(args) != 1) return 0;
      TSNode a = kl_node_named_child(args, 0);
      if (kl_py_text_is(p, attr, "append"))
        r = kl_py_grow_part(p, g, a);
      else if (kl_py_text_is(p, attr, "extend"))
        r = kl_py_grow_items(p, g, a);
      else
        return 0;
    } else if (kl_py_is(c, "for_statement") && kl_py_touches(p, c, g->name, 0)) {
      /* Unrolled: the body once per value, with the loop variable bound to it. */
      TSNode var = kl_py_field(c, "left"), loop_body = kl_py_field(c, "body");
      int64_t ints[KL_PY_MAX_ITERS];
      TSNode items[KL_PY_MAX_ITERS];
      int n = kl_py_is(var, "identifier") && kl_node_null(kl_py_field(c, "alternative")) &&
                      !kl_py_jumps(loop_body, 0) && p->nloopvars < KL_PY_MAX_LOOPS
                  ? kl_py_iter(p, kl_py_field(c, "right"), g->depth + 1, ints, items)
                  : -1;
      if (n < 0 || !g->started) return 0;
      for (int it = 0; it < n && r == 1; it++) {
        if (++g->iters > KL_PY_MAX_ITERS * 4) return 0;
        p->loopvars[p->nloopvars++] =
            (struct kl_py_loopvar){kl_py_text(p, var), c, items[it], ints[it]};
        r = kl_py_grow_block(p, g, loop_body, false);
        p->nloopvars--;
      }
    } else if (kl_py_touches(p, c, g->name, 0)) {
      return 0;
    }
    if (r != 1) return r;
  }
  return 1;
}

/* Reads name `at` as built by its scope's statements (struct kl_py_grow) into b: 1 when read,
 * 0 when it is not built that way (nothing said), -1 when a part cannot be read. */
static int kl_py_grow(struct kl_py *p, struct kl_py_buf *b, TSNode at, bool list, TSNode sep,
                      int depth) {
  TSNode s = kl_py_scope(p, at);
  TSNode body = ts_node_eq(s, p->root) ? s : kl_py_field(s, "body");
  struct kl_py_grow g = {kl_py_text(p, at), list, sep, at, depth, {0}, false, 0, 0, b};
  int r = kl_py_grow_block(p, &g, body, true);
  if (r != 1) return r;
  if (!g.started) return 0;
  kl_py_buf_append(b, &g.cur);
  return 1;
}

/* A string name whose last binding before `at` is `name += ...`: read by kl_py_grow. */
static int kl_py_grown_string(struct kl_py *p, struct kl_py_buf *b, TSNode at, int depth) {
  const char *name = kl_py_text(p, at);
  TSNode s = kl_py_scope(p, at);
  const struct kl_py_asg *best = NULL;
  for (size_t i = 0; i < p->nasgs; i++) {
    const struct kl_py_asg *g = &p->asgs[i];
    if (!ts_node_eq(g->scope, s) || strcmp(g->target, name) || g->end > ts_node_start_byte(at))
      continue;
    if (!best || g->end > best->end) best = g;
  }
  if (!best || !kl_py_is(best->stmt, "augmented_assignment")) return 0;
  return kl_py_grow(p, b, at, false, kl_py_null, depth);
}

/* sep.join(x for x in xs) over values kernlint can list (kl_py_iter), with no `if`: the element
 * read once per value, the loop variable bound to it. 1, 0 or -1 as kl_py_grow. */
static int kl_py_join_comprehension(struct kl_py *p, struct kl_py_buf *b, TSNode comp, TSNode sep,
                                    int depth) {
  TSNode elem = kl_py_field(comp, "body"), clause = kl_py_null;
  uint32_t m = ts_node_named_child_count(comp);
  for (uint32_t i = 0; i < m; i++) {
    TSNode c = kl_node_named_child(comp, i);
    if (kl_py_is(c, "for_in_clause")) {
      if (!kl_node_null(clause)) return 0;
      clause = c;
    } else if (kl_py_is(c, "if_clause")) {
      return 0;
    }
  }
  TSNode var = kl_py_field(clause, "left");
  if (kl_node_null(elem) || !kl_py_is(var, "identifier") || p->nloopvars >= KL_PY_MAX_LOOPS)
    return 0;
  int64_t ints[KL_PY_MAX_ITERS];
  TSNode items[KL_PY_MAX_ITERS];
  int n = kl_py_iter(p, kl_py_field(clause, "right"), depth + 1, ints, items);
  if (n < 0) return 0;
  for (int it = 0; it < n; it++) {
    p->loopvars[p->nloopvars++] =
        (struct kl_py_loopvar){kl_py_text(p, var), comp, items[it], ints[it]};
    bool ok = (!it || kl_py_string(p, b, sep, depth + 1)) && kl_py_string(p, b, elem, depth + 1);
    p->nloopvars--;
    if (!ok) return -1;
  }
  return 1;
}

/* sep.join(parts): a list or tuple of strings written out, a list built by the statements of
 * its scope (kl_py_grow) or a comprehension over values kernlint can list, each part read as a
 * string; else the text of a list built at run time, said with where it is built. */
static bool kl_py_join(struct kl_py *p, struct kl_py_buf *b, TSNode call, int depth) {
  TSNode args = kl_py_field(call, "arguments");
  TSNode sep = kl_py_field(kl_py_field(call, "function"), "object");
  /* sep.join(x for x in xs): the generator is the argument list itself. */
  TSNode arg = kl_py_is(args, "generator_expression") ? args
               : kl_node_null(args) || ts_node_named_child_count(args) != 1
                   ? kl_py_null
                   : kl_py_unparen(kl_node_named_child(args, 0));
  if (!kl_node_null(sep) && (kl_py_is(arg, "list") || kl_py_is(arg, "tuple"))) {
    struct kl_py_grow g = {"", true, sep, call, depth, {0}, true, 0, 0, b};
    kl_py_buf_init(&g.cur, p->a);
    g.cur.skeleton = b->skeleton;
    g.cur.inner = b->inner;
    int r = kl_py_grow_items(p, &g, arg);
    if (r < 0) return false;
    if (r == 1) {
      kl_py_buf_append(b, &g.cur);
      return true;
    }
  }
  if (!kl_node_null(sep) &&
      (kl_py_is(arg, "generator_expression") || kl_py_is(arg, "list_comprehension"))) {
    int r = kl_py_join_comprehension(p, b, arg, sep, depth);
    if (r != 0) return r == 1;
    return kl_py_fail(b, arg, "a `.join()` of a comprehension, built by a loop");
  }
  if (kl_py_is(arg, "identifier")) {
    int r = kl_node_null(sep) ? 0 : kl_py_grow(p, b, arg, true, sep, depth);
    if (r != 0) return r == 1;
    TSNode loop = kl_py_built_by_loop(p, arg);
    if (!kl_node_null(loop))
      return kl_py_fail(
          b, loop,
          kl_arena_printf(p->a, "a `.join()` of `%s`, built by a loop", kl_py_text(p, arg)));
  }
  return kl_py_fail(b, call, "a `.join()` call");
}

/* The class whose body holds n directly or in a method (null when none): where `self.name`
 * is looked up. */
static TSNode kl_py_class_of(TSNode n) {
  for (TSNode u = ts_node_parent(n); !kl_node_null(u); u = ts_node_parent(u))
    if (kl_py_is(u, "class_definition")) return u;
  return kl_py_null;
}

/* Whether the decorators of def (a function_definition) name `staticmethod` or `classmethod`:
 * a method called through its class's name, whose parameters line up with the arguments (with
 * `cls` bound implicitly, as for `cls.name`). */
static bool kl_py_class_callable(struct kl_py *p, TSNode def) {
  TSNode up = ts_node_parent(def);
  if (!kl_py_is(up, "decorated_definition")) return false;
  uint32_t k = ts_node_named_child_count(up);
  for (uint32_t i = 0; i < k; i++) {
    TSNode d = kl_node_named_child(up, i);
    if (!kl_py_is(d, "decorator") || !ts_node_named_child_count(d)) continue;
    TSNode e = kl_node_named_child(d, 0);
    if (kl_py_text_is(p, e, "staticmethod") || kl_py_text_is(p, e, "classmethod")) return true;
  }
  return false;
}

/* Whether call reaches function def through its callee: a bare name reaches a module function
 * or one defined in a function around the call; `self.name`/`cls.name` a method of the class
 * around the call; `Name.name` a static or class method of the module's class `Name`. */
static bool kl_py_reaches(struct kl_py *p, TSNode call, TSNode def) {
  TSNode callee = kl_py_field(call, "function");
  bool method = false;
  const char *klass = NULL;
  if (kl_py_is(callee, "attribute")) {
    TSNode obj = kl_py_field(callee, "object");
    if (kl_py_is(obj, "identifier") && !kl_py_text_is(p, obj, "self") &&
        !kl_py_text_is(p, obj, "cls"))
      klass = kl_py_text(p, obj);
    else if (!kl_py_text_is(p, obj, "self") && !kl_py_text_is(p, obj, "cls"))
      return false;
    callee = kl_py_field(callee, "attribute");
    method = true;
  }
  if (!kl_py_is(callee, "identifier") ||
      !kl_py_text_is(p, kl_py_field(def, "name"), kl_py_text(p, callee)) ||
      kl_py_contains(def, call))
    return false;
  /* A method: its definition (decorated or not) sits in a class body. */
  TSNode up = ts_node_parent(def);
  if (kl_py_is(up, "decorated_definition")) up = ts_node_parent(up);
  TSNode cls = kl_py_is(up, "block") ? ts_node_parent(up) : kl_py_null;
  bool in_method = kl_py_is(cls, "class_definition");
  TSNode outer = kl_py_scope(p, def);
  if (klass)
    return in_method && ts_node_eq(ts_node_parent(cls), p->root) &&
           kl_py_text_is(p, kl_py_field(cls, "name"), klass) && kl_py_class_callable(p, def);
  if (method) return in_method && ts_node_eq(kl_py_class_of(call), cls);
  if (in_method) return false;
  return ts_node_eq(outer, p->root) || kl_py_contains(outer, call);
}

/* The single expression a function of the file returns, for a call of it by name (or as
 * `self.name`); null when it returns in several places or is not the file's. */
static TSNode kl_py_returned(struct kl_py *p, TSNode call) {
  TSNode def = kl_py_null;
  for (size_t i = 0; i < p->nfns; i++)
    if (kl_py_reaches(p, call, p->fns[i])) def = p->fns[i];
  if (kl_node_null(def)) return kl_py_null;
  /* Its return statements, outside nested functions and classes: one, at any depth. */
  TSNode found = kl_py_null, stack[64];
  int nstack = 0, nret = 0;
  stack[nstack++] = kl_py_field(def, "body");
  while (nstack > 0) {
    TSNode x = stack[--nstack];
    if (kl_node_null(x)) continue;
    if (kl_py_is(x, "return_statement")) {
      nret++;
      found = ts_node_named_child_count(x) ? kl_node_named_child(x, 0) : kl_py_null;
      continue;
    }
    if (kl_py_is(x, "function_definition") || kl_py_is(x, "class_definition") ||
        kl_py_is(x, "lambda"))
      continue;
    uint32_t k = ts_node_named_child_count(x);
    for (uint32_t i = 0; i < k; i++) {
      if (nstack == 64) return kl_py_null;
      stack[nstack++] = kl_node_named_child(x, i);
    }
  }
  return nret == 1 ? found : kl_py_null;
}

/* tmpl.format(...): literal arguments are put in; the others are opaque fields. */
static bool kl_py_format(struct kl_py *p, struct kl_py_buf *b, TSNode call, int depth) {
  struct kl_py_buf t;
  kl_py_buf_init(&t, p->a);
  t.skeleton = b->skeleton;
  if (!kl_py_string(p, &t, kl_py_field(kl_py_field(call, "function"), "object"), depth + 1)) {
    if (!t.why) return kl_py_fail(b, call, "a `.format()` call");
    return kl_py_fail(b, t.why_node, t.why);
  }
  uint32_t run = 0;
  int autonum = 0;
  for (uint32_t i = 0; i < t.n; i++) {
    char c = t.p[i];
    if ((c == '{' || c == '}') && i + 1 < t.n && t.p[i + 1] == c) {
      kl_py_buf_copy(b, &t, run, i + 1);
      run = i += 2;
      i--;
      continue;
    }
    if (c != '{') continue;
    uint32_t e = i + 1, nest = 1;
    while (e < t.n && nest) {
      if (t.p[e] == '{') nest++;
      if (t.p[e] == '}') nest--;
      e++;
    }
    if (nest) break;
    kl_py_buf_copy(b, &t, run, i);
    /* {name}, {0}, {}, then !conversion and :spec. */
    uint32_t ne = i + 1;
    while (ne < e - 1 && t.p[ne] != '!' && t.p[ne] != ':') ne++;
    const char *key = kl_arena_strndup(p->a, t.p + i + 1, ne - i - 1);
    const char *tail = kl_arena_strndup(p->a, t.p + ne, e - 1 - ne);
    enum kl_py_conv how = !*tail || !strcmp(tail, "!s") ? KL_PY_CONV_STR
                          : !strcmp(tail, ":d")          ? KL_PY_CONV_INT
                                                         : KL_PY_CONV_NONE;
    TSNode arg = kl_py_null;
    if (!*key)
      arg = kl_py_arg(p, call, "", autonum++);
    else if (*key >= '0' && *key <= '9' && strspn(key, "0123456789") == strlen(key))
      arg = kl_py_arg(p, call, "", atoi(key));
    else if (kl_py_ident(key))
      arg = kl_py_arg(p, call, key, -1);
    uint32_t fs = kl_offmap_to_file(&t.map, i), fe = kl_offmap_end_to_file(&t.map, e);
    if (fe < fs) fe = fs; /* a field split across pieces written in another order */
    if (!kl_py_put(p, b, arg, how, depth, fs, fe, t.p + e, t.n - e,
                   "a `.format()` call with an argument known only at run time"))
      return false;
    run = i = e;
    i--;
  }
  kl_py_buf_copy(b, &t, run, t.n);
  return true;
}

/* tmpl % args: %s, %d and %i of literal arguments are put in; the others are opaque fields. */
static bool kl_py_percent(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  struct kl_py_buf t;
  kl_py_buf_init(&t, p->a);
  t.skeleton = b->skeleton;
  if (!kl_py_string(p, &t, kl_py_field(n, "left"), depth + 1)) {
    if (!t.why) return kl_py_fail(b, n, "`%` formatting");
    return kl_py_fail(b, t.why_node, t.why);
  }
  TSNode args = kl_py_resolve(p, kl_py_field(n, "right"));
  bool tuple = kl_py_is(args, "tuple");
  uint32_t run = 0, next = 0;
  for (uint32_t i = 0; i < t.n; i++) {
    if (t.p[i] != '%') continue;
    kl_py_buf_copy(b, &t, run, i);
    uint32_t e = i + 1;
    if (e < t.n && t.p[e] == '%') {
      kl_py_buf_copy(b, &t, e, e + 1);
      run = i = e + 1;
      i--;
      continue;
    }
    const char *key = NULL;
    if (e < t.n && t.p[e] == '(') {
      uint32_t ke = e;
      while (ke < t.n && t.p[ke] != ')') ke++;
      key = kl_arena_strndup(p->a, t.p + e + 1, ke > e ? ke - e - 1 : 0);
      e = ke < t.n ? ke + 1 : ke;
    }
    uint32_t flags = e;
    while (e < t.n && strchr("#0- +.123456789*", t.p[e])) e++;
    char conv = e < t.n ? t.p[e] : 's';
    if (e < t.n) e++;
    enum kl_py_conv how = flags + 1 != e ? KL_PY_CONV_NONE
                          : conv == 's'  ? KL_PY_CONV_STR
                          : conv == 'd' || conv == 'i' ? KL_PY_CONV_INT
                                                       : KL_PY_CONV_NONE;
    TSNode arg = kl_py_null;
    if (key && kl_py_is(args, "dictionary")) {
      uint32_t k = ts_node_named_child_count(args);
      for (uint32_t j = 0; j < k; j++) {
        TSNode pr = kl_node_named_child(args, j);
        const char *kk =
            kl_py_is(pr, "pair") ? kl_py_known_string(p, kl_py_field(pr, "key"), depth) : NULL;
        if (kk && !strcmp(kk, key)) arg = kl_py_field(pr, "value");
      }
    } else if (!key && tuple) {
      if (next < ts_node_named_child_count(args)) arg = kl_node_named_child(args, next);
      next++;
    } else if (!key && next++ == 0) {
      arg = kl_py_field(n, "right");
    }
    uint32_t fs = kl_offmap_to_file(&t.map, i), fe = kl_offmap_end_to_file(&t.map, e);
    if (fe < fs) fe = fs;
    if (!kl_py_put(p, b, arg, how, depth, fs, fe, t.p + e, t.n - e,
                   "`%` formatting with an argument known only at run time"))
      return false;
    run = i = e;
    i--;
  }
  kl_py_buf_copy(b, &t, run, t.n);
  return true;
}

/* text.replace(old, new): old must be known; new is put in, or is an opaque field. */
static bool kl_py_replace(struct kl_py *p, struct kl_py_buf *b, TSNode call, int depth) {
  TSNode olda = kl_py_arg(p, call, "", 0), newa = kl_py_arg(p, call, "", 1);
  const char *old = kl_node_null(olda) ? NULL : kl_py_known_string(p, olda, depth);
  if (!old || !*old || !kl_node_null(kl_py_arg(p, call, "", 2)))
    return kl_py_fail(b, call, "a `.replace()` call");
  struct kl_py_buf t;
  kl_py_buf_init(&t, p->a);
  t.skeleton = b->skeleton;
  if (!kl_py_string(p, &t, kl_py_field(kl_py_field(call, "function"), "object"), depth + 1)) {
    if (!t.why) return kl_py_fail(b, call, "a `.replace()` call");
    return kl_py_fail(b, t.why_node, t.why);
  }
  uint32_t run = 0, len = (uint32_t)strlen(old);
  for (const char *q = strstr(t.p, old); q; q = strstr(q, old)) {
    uint32_t i = (uint32_t)(q - t.p);
    kl_py_buf_copy(b, &t, run, i);
    uint32_t fs = kl_offmap_to_file(&t.map, i), fe = kl_offmap_end_to_file(&t.map, i + len);
    if (fe < fs) fe = fs;
    if (!kl_py_put(p, b, newa, KL_PY_CONV_STR, depth, fs, fe, t.p + i + len, t.n - i - len,
                   "a `.replace()` call with a value known only at run time"))
      return false;
    run = i + len;
    q = t.p + run;
  }
  kl_py_buf_copy(b, &t, run, t.n);
  return true;
}

/* Append the string value of expression n to b: literals, concatenation, names of constants.
 * Calls that only change whitespace (textwrap.dedent, .strip()) are read through: MSL does not
 * care, and positions stay those of the file. */
static bool kl_py_string(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (kl_node_null(n)) return kl_py_fail(b, n, "missing");
  if (depth > KL_PY_MAX_DEPTH || p->budget == 0)
    return kl_py_fail(b, n, "a chain of names too long to follow");
  /* Concatenation grows one text in place (`s1 = s0 + s0`, `s2 = s1 + s1`...): bounded too. */
  if (b->n > KL_PY_TEXT_BUDGET) return kl_py_fail(b, n, "a text longer than 1 MB");
  p->budget--;
  const char *ty = ts_node_type(n);
  if (!strcmp(ty, "string")) return kl_py_string_lit(p, b, n, depth);
  if (!strcmp(ty, "concatenated_string")) {
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(n, i);
      if (kl_py_is(c, "comment")) continue;
      if (!kl_py_string(p, b, c, depth + 1)) return false;
    }
    return true;
  }
  if (!strcmp(ty, "binary_operator")) {
    TSNode op = kl_py_field(n, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    if (!strcmp(o, "%")) return kl_py_percent(p, b, n, depth);
    if (strcmp(o, "+")) return kl_py_fail(b, n, "a value computed at run time");
    return kl_py_string(p, b, kl_py_field(n, "left"), depth + 1) &&
           kl_py_string(p, b, kl_py_field(n, "right"), depth + 1);
  }
  if (!strcmp(ty, "identifier")) {
    TSNode v;
    const char *name = kl_py_text(p, n);
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, n);
    if (lv && !kl_node_null(lv->node)) return kl_py_string(p, b, lv->node, depth + 1);
    if (lv) return kl_py_fail(b, n, kl_arena_printf(p->a, "`%s`, a number", name));
    if (!kl_py_lookup(p, name, n, &v)) {
      /* `src = "..."` then `src += f"..."`, in a row or in loops kernlint unrolls. */
      int grown = kl_py_grown_string(p, b, n, depth);
      if (grown != 0) return grown == 1;
      for (TSNode s = kl_py_scope(p, n); !ts_node_eq(s, p->root); s = kl_py_scope(p, s))
        if (kl_py_is_param(p, s, name))
          return kl_py_fail(b, s,
                            kl_arena_printf(p->a, "`%s`, a parameter of `%s`", name,
                                            kl_py_text(p, kl_py_field(s, "name"))));
      TSNode loop = kl_py_built_by_loop(p, n);
      if (!kl_node_null(loop))
        return kl_py_fail(b, loop, kl_arena_printf(p->a, "`%s`, built by a loop", name));
      /* Said as what binds it: a loop, an unpacking, an in-place update. */
      TSNode scope = kl_py_scope(p, n);
      for (size_t i = p->nasgs; i-- > 0;) {
        const struct kl_py_asg *g = &p->asgs[i];
        if (!kl_node_null(g->value) || strcmp(g->target, name) || g->end > ts_node_start_byte(n) ||
            (!ts_node_eq(g->scope, scope) && !ts_node_eq(g->scope, p->root)))
          continue;
        TSNode up = ts_node_parent(g->stmt);
        const char *how = kl_py_is(up, "for_statement")             ? "a loop variable"
                          : kl_py_is(g->stmt, "augmented_assignment") ? "changed in place"
                          : kl_py_is(g->stmt, "assignment")           ? "unpacked from a value"
                                                                      : NULL;
        if (how) return kl_py_fail(b, g->stmt, kl_arena_printf(p->a, "`%s`, %s", name, how));
      }
      return kl_py_fail(b, n, kl_arena_printf(p->a, "`%s`, not a constant of this file", name));
    }
    return kl_py_string(p, b, v, depth + 1);
  }
  if (!strcmp(ty, "call")) {
    TSNode fn = kl_py_field(n, "function");
    TSNode args = kl_py_field(n, "arguments");
    const char *d = kl_py_dotted(p, fn, 0);
    const char *attr = kl_py_is(fn, "attribute") ? kl_py_text(p, kl_py_field(fn, "attribute")) : "";
    if (!strcmp(attr, "format")) return kl_py_format(p, b, n, depth);
    if (!strcmp(attr, "replace")) return kl_py_replace(p, b, n, depth);
    if (kl_py_text_is(p, fn, "str") && !kl_node_null(args) && ts_node_named_child_count(args) == 1)
      return kl_py_value(p, b, kl_node_named_child(args, 0), depth + 1, ts_node_start_byte(n),
                         ts_node_end_byte(n));
    TSNode ret = kl_py_returned(p, n);
    if (!kl_node_null(ret)) {
      /* A helper of the file that returns the source: read with its parameters bound. */
      struct kl_py_env env = {kl_py_scope(p, ret), n, p->env, false};
      const struct kl_py_env *saved = p->env;
      p->env = &env;
      bool ok = kl_py_string(p, b, ret, depth + 1);
      p->env = saved;
      return ok;
    }
    if (!strcmp(attr, "join")) return kl_py_join(p, b, n, depth);
    if (d && (!strcmp(d, "textwrap.dedent") || !strcmp(d, "inspect.cleandoc")) &&
        !kl_node_null(args) && ts_node_named_child_count(args) >= 1)
      return kl_py_string(p, b, kl_node_named_child(args, 0), depth + 1);
    if (!strcmp(attr, "strip") || !strcmp(attr, "lstrip") || !strcmp(attr, "rstrip")) {
      if (!kl_node_null(args) && ts_node_named_child_count(args) == 0)
        return kl_py_string(p, b, kl_py_field(fn, "object"), depth + 1);
    }
    if (!strcmp(attr, "read") || !strcmp(attr, "read_text") || (d && !strcmp(d, "open")))
      return kl_py_fail(b, n, "text read from a file");
    return kl_py_fail(
        b, n,
        kl_arena_printf(p->a, "the result of calling `%s()`", kl_py_short(p, fn, KL_PY_MAX_SHOWN)));
  }
  if (!strcmp(ty, "subscript")) {
    TSNode e = kl_py_element(p, n, depth + 1);
    if (!kl_node_null(e)) return kl_py_string(p, b, e, depth + 1);
  }
  if (!strcmp(ty, "subscript"))
    return kl_py_fail(b, n,
                      kl_arena_printf(p->a, "an element of `%s`",
                                      kl_py_short(p, kl_py_field(n, "value"), KL_PY_MAX_SHOWN)));
  if (!strcmp(ty, "conditional_expression") && ts_node_named_child_count(n) == 3) {
    /* Each alternative is a candidate: the build is made once per choice (kl_py_build_mlx). */
    int t = kl_py_truth(p, kl_node_named_child(n, 1), depth + 1);
    int pick = t >= 0 ? !t : kl_py_choose(p, kl_node_named_child(n, 1));
    if (pick < 0) return kl_py_fail(b, n, "a conditional expression");
    return kl_py_string(p, b, kl_node_named_child(n, pick ? 2 : 0), depth + 1);
  }
  return kl_py_fail(b, n, "a value computed at run time");
}

/* A plain string constant (a kernel name, an input name); NULL when it is not one. */
/* The text of a string expression read at depth, with no opaque field; NULL when it is not
 * one. */
static const char *kl_py_string_at(struct kl_py *p, TSNode n, int depth) {
  struct kl_py_buf b;
  kl_py_buf_init(&b, p->a);
  if (!kl_py_string(p, &b, n, depth)) return NULL;
  kl_py_buf_raw(&b, "", 0);
  return b.p;
}

static const char *kl_py_const_string(struct kl_py *p, TSNode n) {
  return kl_py_string_at(p, n, 0);
}

/* ---- arguments ---- */

/* Value of keyword `name` in what a `**opts` argument unpacks: dict(name=...) or {"name": ...}. */
static TSNode kl_py_splat_arg(struct kl_py *p, TSNode splat, const char *name) {
  if (ts_node_named_child_count(splat) == 0) return kl_py_null;
  TSNode v = kl_py_resolve(p, kl_node_named_child(splat, 0));
  if (kl_py_is(v, "call") && kl_py_text_is(p, kl_py_field(v, "function"), "dict")) {
    TSNode args = kl_py_field(v, "arguments");
    uint32_t k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(args, i);
      if (kl_py_is(c, "keyword_argument") && kl_py_text_is(p, kl_py_field(c, "name"), name))
        return kl_py_field(c, "value");
    }
  } else if (kl_py_is(v, "dictionary")) {
    uint32_t k = ts_node_named_child_count(v);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(v, i);
      if (!kl_py_is(c, "pair")) continue;
      TSNode key = kl_py_field(c, "key");
      /* A plain "name" key: its text is the quoted name. */
      uint32_t s = ts_node_start_byte(key), e = ts_node_end_byte(key);
      if (kl_py_is(key, "string") && e - s == strlen(name) + 2 &&
          !memcmp(p->t + s + 1, name, strlen(name)))
        return kl_py_field(c, "value");
    }
  }
  return kl_py_null;
}

/* Value of keyword argument `name` (also inside a `**opts` it unpacks), or of the pos-th
 * positional argument (pos < 0: none). */
static TSNode kl_py_arg(struct kl_py *p, TSNode call, const char *name, int pos) {
  TSNode args = kl_py_field(call, "arguments");
  uint32_t k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  int seen = 0;
  TSNode from_splat = kl_py_null;
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(args, i);
    if (kl_py_is(c, "keyword_argument")) {
      if (kl_py_text_is(p, kl_py_field(c, "name"), name)) return kl_py_field(c, "value");
      continue;
    }
    if (kl_py_is(c, "dictionary_splat")) {
      if (kl_node_null(from_splat)) from_splat = kl_py_splat_arg(p, c, name);
      continue;
    }
    if (kl_py_is(c, "comment") || kl_py_is(c, "list_splat")) continue;
    if (seen++ == pos) return c;
  }
  return from_splat;
}

/* ---- sizes ---- */

static struct kl_dx *kl_py_int_lit(struct kl_py *p, TSNode n) {
  char *s = kl_py_text(p, n), *o = s;
  for (char *c = s; *c; c++)
    if (*c != '_') *o++ = *c;
  *o = '\0';
  int base = 10;
  const char *digits = s;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    base = 16, digits = s + 2;
  else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
    base = 8, digits = s + 2;
  else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
    base = 2, digits = s + 2;
  char *end;
  unsigned long long v = strtoull(digits, &end, base);
  if (*end || end == digits || v > INT64_MAX) return kl_dx_leaf(p->a, kl_py_text(p, n));
  return kl_dx_int(p->a, (int64_t)v);
}

static bool kl_py_name_has(const char *s, const char *const *words) {
  for (; *words; words++)
    if (strstr(s, *words)) return true;
  return false;
}

static struct kl_dx *kl_py_dx(struct kl_py *p, TSNode n, int depth);

static struct kl_dx *kl_py_dx_call(struct kl_py *p, TSNode n, int depth) {
  TSNode fn = kl_py_field(n, "function");
  TSNode args = kl_py_field(n, "arguments");
  TSNode av[4];
  uint32_t na = 0, k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  for (uint32_t i = 0; i < k && na < 4; i++) {
    TSNode c = kl_node_named_child(args, i);
    if (!kl_py_is(c, "keyword_argument") && !kl_py_is(c, "comment")) av[na++] = c;
  }
  const char *d = kl_py_dotted(p, fn, 0);
  if (!d) return kl_dx_leaf(p->a, kl_py_text(p, n));
  const char *last = strrchr(d, '.');
  last = last ? last + 1 : d;
  struct kl_arena *a = p->a;
  if (na == 1 && !strcmp(d, "int")) {
    /* int("32"), int(32.0): Python's conversions of a known literal. */
    TSNode v = kl_py_resolve(p, av[0]);
    const char *t = kl_py_is(v, "float")    ? kl_py_text(p, v)
                    : kl_py_is(v, "string") ? kl_py_const_string(p, v)
                                            : NULL;
    char *end;
    if (t && kl_py_is(v, "float")) {
      double x = strtod(t, &end);
      if (!*end && x > -9e18 && x < 9e18) return kl_dx_int(a, (int64_t)x);
    } else if (t) {
      while (*t == ' ') t++;
      long long x = strtoll(t, &end, 10);
      while (*end == ' ' || *end == '\n') end++;
      if (!*end && end != t) return kl_dx_int(a, x);
    }
  }
  if (na == 1 &&
      (!strcmp(d, "int") || !strcmp(d, "mlx.core.array") || !strcmp(d, "numpy.int32") ||
       !strcmp(d, "numpy.uint32") || !strcmp(d, "mlx.core.uint32") || !strcmp(d, "mlx.core.int32")))
    return kl_py_dx(p, av[0], depth + 1);
  if (na == 1 && (!strcmp(d, "math.ceil") || !strcmp(d, "numpy.ceil") || !strcmp(d, "ceil") ||
                  !strcmp(d, "mlx.core.ceil")))
    return kl_dx_op(a, KL_DX_CEIL, kl_py_dx(p, av[0], depth + 1), NULL);
  if (na >= 2 && (!strcmp(d, "min") || !strcmp(d, "max") || !strcmp(d, "mlx.core.minimum") ||
                  !strcmp(d, "mlx.core.maximum"))) {
    enum kl_dx_op op = strstr(d, "min") ? KL_DX_MIN : KL_DX_MAX;
    struct kl_dx *e = kl_py_dx(p, av[0], depth + 1);
    for (uint32_t i = 1; i < na; i++) e = kl_dx_op(a, op, e, kl_py_dx(p, av[i], depth + 1));
    return e;
  }
  static const struct {
    const char *name;
    enum kl_dx_op op;
  } mx_ops[] = {{"mlx.core.add", KL_DX_ADD},          {"mlx.core.subtract", KL_DX_SUB},
                {"mlx.core.multiply", KL_DX_MUL},     {"mlx.core.divide", KL_DX_DIV},
                {"mlx.core.floor_divide", KL_DX_DIV}, {"mlx.core.remainder", KL_DX_MOD}};
  for (size_t i = 0; na == 2 && i < sizeof mx_ops / sizeof mx_ops[0]; i++)
    if (!strcmp(d, mx_ops[i].name))
      return kl_dx_op(a, mx_ops[i].op, kl_py_dx(p, av[0], depth + 1),
                      kl_py_dx(p, av[1], depth + 1));
  static const char *const ceil_names[] = {"ceil_div", "ceildiv",      "cdiv", "div_up",
                                           "divup",    "div_round_up", NULL};
  static const char *const round_names[] = {"round_up", "roundup", "align_up", "next_multiple",
                                            NULL};
  if (na == 2 && kl_py_name_has(last, ceil_names))
    return kl_dx_op(a, KL_DX_CEILDIV, kl_py_dx(p, av[0], depth + 1), kl_py_dx(p, av[1], depth + 1));
  if (na == 2 && kl_py_name_has(last, round_names))
    return kl_dx_op(a, KL_DX_ROUNDUP, kl_py_dx(p, av[0], depth + 1), kl_py_dx(p, av[1], depth + 1));
  return kl_dx_leaf(a, kl_py_text(p, n));
}

/* An integer expression of the file as a kl_dx, following names to their values. */
static struct kl_dx *kl_py_dx(struct kl_py *p, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (kl_node_null(n)) return kl_dx_leaf(p->a, "?");
  if (depth > KL_PY_MAX_DEPTH || p->budget == 0) return kl_dx_leaf(p->a, kl_py_text(p, n));
  p->budget--;
  const char *ty = ts_node_type(n);
  struct kl_dx *e = NULL;
  if (!strcmp(ty, "integer")) {
    e = kl_py_int_lit(p, n);
  } else if (!strcmp(ty, "true") || !strcmp(ty, "false")) {
    e = kl_dx_int(p->a, ty[0] == 't');
  } else if (!strcmp(ty, "identifier")) {
    TSNode v;
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, n);
    if (lv && !kl_node_null(lv->node)) return kl_py_dx(p, lv->node, depth + 1);
    if (lv) return kl_dx_int(p->a, lv->value);
    if (kl_py_lookup(p, kl_py_text(p, n), n, &v)) return kl_py_dx(p, v, depth + 1);
    e = kl_dx_leaf(p->a, kl_py_text(p, n));
  } else if (!strcmp(ty, "unary_operator")) {
    TSNode op = kl_py_field(n, "operator");
    struct kl_dx *x = kl_py_dx(p, kl_py_field(n, "argument"), depth + 1);
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    if (!strcmp(o, "-"))
      e = kl_dx_op(p->a, KL_DX_NEG, x, NULL);
    else if (!strcmp(o, "+"))
      e = x;
    else
      e = kl_dx_leaf(p->a, kl_py_text(p, n));
  } else if (!strcmp(ty, "binary_operator")) {
    TSNode op = kl_py_field(n, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    static const struct {
      const char *op;
      enum kl_dx_op kind;
    } ops[] = {{"+", KL_DX_ADD},  {"-", KL_DX_SUB}, {"*", KL_DX_MUL},  {"//", KL_DX_DIV},
               {"/", KL_DX_TDIV}, {"%", KL_DX_MOD}, {"<<", KL_DX_SHL}, {">>", KL_DX_SHR}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !e; i++)
      if (!strcmp(o, ops[i].op))
        e = kl_dx_op(p->a, ops[i].kind, kl_py_dx(p, kl_py_field(n, "left"), depth + 1),
                     kl_py_dx(p, kl_py_field(n, "right"), depth + 1));
    if (!e && !strcmp(o, "**")) {
      struct kl_dx *x = kl_py_dx(p, kl_py_field(n, "left"), depth + 1);
      struct kl_dx *y = kl_py_dx(p, kl_py_field(n, "right"), depth + 1);
      int64_t b, k, r = 1;
      bool ok = kl_dx_value(x, &b) && kl_dx_value(y, &k) && k >= 0 && k < 63;
      for (int64_t i = 0; ok && i < k; i++) ok = !__builtin_mul_overflow(r, b, &r);
      e = ok ? kl_dx_int(p->a, r) : kl_dx_leaf(p->a, kl_py_text(p, n));
    }
    if (!e) e = kl_dx_leaf(p->a, kl_py_text(p, n));
  } else if (!strcmp(ty, "call")) {
    e = kl_py_dx_call(p, n, depth);
  } else {
    e = kl_dx_leaf(p->a, kl_py_text(p, n));
  }
  if (e && e->end == 0) {
    e->start = ts_node_start_byte(n);
    e->end = ts_node_end_byte(n);
  }
  return e;
}

/* Up to three dimensions of a resolved size argument: a tuple or list, or a single value. */
static size_t kl_py_dims(struct kl_py *p, TSNode n, struct kl_dx **out) {
  if (kl_py_is(n, "tuple") || kl_py_is(n, "list") || kl_py_is(n, "expression_list")) {
    size_t k = 0;
    uint32_t m = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < m && k < 3; i++) {
      TSNode c = kl_node_named_child(n, i);
      if (!kl_py_is(c, "comment")) out[k++] = kl_py_dx(p, c, 0);
    }
    return k;
  }
  out[0] = kl_py_dx(p, n, 0);
  return 1;
}

/* grid= / threads=: whether some dimension is rounded up to whole threadgroups. */
static void kl_py_grid(struct kl_py *p, struct kl_dispatch *d, TSNode arg) {
  if (kl_node_null(arg)) return;
  struct kl_dx *dims[3];
  size_t n = kl_py_dims(p, kl_py_resolve(p, arg), dims);
  kl_dispatch_set_grid(d, p->a, p->src, dims, n, false, ts_node_start_byte(arg),
                       ts_node_end_byte(arg));
}

/* threadgroup= / group_size=: the total when every dimension is known, and any runtime clamp. */
static void kl_py_threadgroup(struct kl_py *p, struct kl_dispatch *d, TSNode arg) {
  if (kl_node_null(arg)) return;
  /* Reported where the numbers are written: the tuple a name stands for. */
  TSNode at = kl_py_resolve(p, arg);
  struct kl_dx *dims[3];
  size_t n = kl_py_dims(p, at, dims);
  kl_dispatch_set_tg(d, dims, n, kl_py_span(p, at),
                     kl_dispatch_quote(p->a, p->src, ts_node_start_byte(at), ts_node_end_byte(at)));
}

/* ---- dtypes ---- */

/* MSL type of an MLX dtype path ("mlx.core.float16" -> "half"), or NULL. */
static const char *kl_py_mlx_type(const char *dotted) {
  static const char *const map[][2] = {
      {"float32", "float"},  {"float16", "half"},         {"bfloat16", "bfloat"},
      {"int32", "int"},      {"uint32", "uint"},          {"int64", "long"},
      {"uint64", "ulong"},   {"int16", "short"},          {"uint16", "ushort"},
      {"int8", "char"},      {"uint8", "uchar"},          {"bool_", "bool"},
      {"float64", "double"}, {"complex64", "complex64_t"}};
  if (!dotted || strncmp(dotted, "mlx.core.", 9)) return NULL;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(dotted + 9, map[i][0])) return map[i][1];
  return NULL;
}

static bool kl_py_is_bfloat(const char *dotted) {
  return dotted && (!strcmp(dotted, "mlx.core.bfloat16") || !strcmp(dotted, "torch.bfloat16"));
}

static void kl_py_bfloat_push(struct kl_py *p, struct kl_dispatch *d, TSNode n) {
  uint32_t s = ts_node_start_byte(n);
  for (size_t i = 0; i < d->nbfloat; i++)
    if (d->bfloat[i].start == s) return;
  KL_VEC_PUSH(p->a, d->bfloat, d->nbfloat, d->cap_bfloat);
  d->bfloat[d->nbfloat++] = kl_py_span(p, n);
}

struct kl_py_bfloat_scan {
  struct kl_py *p;
  struct kl_dispatch *d;
  int depth; /* names followed to get here */
};

static void kl_py_scan_bfloat(struct kl_py *p, struct kl_dispatch *d, TSNode n, int depth);

static enum kl_walk kl_py_bfloat_node(TSNode x, void *ctx) {
  struct kl_py_bfloat_scan *scan = ctx;
  struct kl_py *p = scan->p;
  if (kl_py_is(x, "attribute")) {
    if (kl_py_is_bfloat(kl_py_dotted(p, x, 0))) kl_py_bfloat_push(p, scan->d, x);
    return KL_WALK_SKIP;
  }
  if (kl_py_is(x, "identifier") && scan->depth == 0) {
    const char *dd = kl_py_dotted(p, x, 0);
    if (kl_py_is_bfloat(dd)) {
      kl_py_bfloat_push(p, scan->d, x);
    } else {
      TSNode v;
      if (kl_py_lookup(p, kl_py_text(p, x), x, &v))
        kl_py_scan_bfloat(p, scan->d, v, scan->depth + 1);
    }
  }
  return KL_WALK_DESCEND;
}

/* Record every mx.bfloat16 / torch.bfloat16 written inside n; a name given as the whole
 * argument is followed once to its value (`x = torch.zeros(n, dtype=torch.bfloat16)`). */
static void kl_py_scan_bfloat(struct kl_py *p, struct kl_dispatch *d, TSNode n, int depth) {
  if (kl_node_null(n) || depth > 1) return;
  struct kl_py_bfloat_scan scan = {p, d, depth};
  kl_dialect_walk(n, kl_py_bfloat_node, &scan, NULL);
}

/* ---- the walk ---- */

/* The name a call is made through (`metal_kernel` in `mx.fast.metal_kernel(...)`). */
static TSNode kl_py_callee_name(TSNode call) {
  TSNode fn = kl_py_field(call, "function");
  return kl_py_is(fn, "attribute") ? kl_py_field(fn, "attribute") : fn;
}

/* Whether some call may make a kernel: it goes through one of the three API names, or through a
 * name an import binds to one. Most files answer no, and skip everything after the walk. */
static bool kl_py_any_candidate(struct kl_py *p) {
  for (size_t i = 0; i < p->ncalls; i++) {
    TSNode nm = kl_py_callee_name(p->calls[i]);
    if (!kl_py_is(nm, "identifier")) continue;
    for (size_t k = 0; k < KL_PY_NAPI; k++)
      if (kl_py_text_is(p, nm, kl_py_api_names[k])) return true;
    for (size_t k = 0; k < p->naliases; k++) {
      const char *path = p->aliases[k].path, *dot = strrchr(path, '.');
      const char *last = dot ? dot + 1 : path;
      if (!kl_py_text_is(p, nm, p->aliases[k].name)) continue;
      for (size_t j = 0; j < KL_PY_NAPI; j++)
        if (!strcmp(last, kl_py_api_names[j])) return true;
    }
  }
  return false;
}

enum kl_py_sym {
  KL_PY_SYM_IMPORT,
  KL_PY_SYM_FROM,
  KL_PY_SYM_GLOBAL,
  KL_PY_SYM_ASSIGN,
  KL_PY_SYM_AUG,
  KL_PY_SYM_FOR,
  KL_PY_SYM_CALL,
  KL_PY_SYM_DEF,
  KL_PY_SYM_N
};

struct kl_py_frame {
  TSNode fn;
  uint32_t depth;
};

struct kl_py_walker {
  struct kl_py *p;
  TSSymbol sym[KL_PY_SYM_N]; /* compared by symbol: the walk visits every node of the file */
  struct kl_py_frame *stack; /* function definitions around the node, innermost last */
  size_t nstack, cap_stack;
  TSNode *scopes; /* the scope of each node in asg_nodes */
  size_t nscopes, cap_scopes;
  uint32_t depth; /* of the node being visited, kept by kl_dialect_walk */
};

static enum kl_walk kl_py_walk_node(TSNode n, void *ctx) {
  struct kl_py_walker *w = ctx;
  struct kl_py *p = w->p;
  while (w->nstack && w->stack[w->nstack - 1].depth >= w->depth) w->nstack--;
  TSNode scope = w->nstack ? w->stack[w->nstack - 1].fn : p->root;
  TSSymbol t = ts_node_symbol(n);
  if (t == w->sym[KL_PY_SYM_IMPORT]) {
    kl_py_import(p, n);
  } else if (t == w->sym[KL_PY_SYM_FROM]) {
    kl_py_import_from(p, n);
  } else if (t == w->sym[KL_PY_SYM_GLOBAL]) {
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
      TSNode id = kl_node_named_child(n, i);
      if (!kl_py_is(id, "identifier")) continue;
      KL_VEC_PUSH(p->a, p->globals, p->nglobals, p->cap_globals);
      p->globals[p->nglobals++] = (struct kl_py_global){scope, kl_py_text(p, id)};
    }
  } else if (t == w->sym[KL_PY_SYM_ASSIGN] || t == w->sym[KL_PY_SYM_AUG] ||
             t == w->sym[KL_PY_SYM_FOR]) {
    KL_VEC_PUSH(p->a, p->asg_nodes, p->nasg_nodes, p->cap_asg_nodes);
    p->asg_nodes[p->nasg_nodes++] = n;
    KL_VEC_PUSH(p->a, w->scopes, w->nscopes, w->cap_scopes);
    w->scopes[w->nscopes++] = scope;
  } else if (t == w->sym[KL_PY_SYM_CALL]) {
    KL_VEC_PUSH(p->a, p->calls, p->ncalls, p->cap_calls);
    p->calls[p->ncalls++] = n;
  } else if (t == w->sym[KL_PY_SYM_DEF]) {
    KL_VEC_PUSH(p->a, p->fns, p->nfns, p->cap_fns);
    p->fns[p->nfns++] = n;
    KL_VEC_PUSH(p->a, w->stack, w->nstack, w->cap_stack);
    w->stack[w->nstack++] = (struct kl_py_frame){n, w->depth};
  }
  return KL_WALK_DESCEND;
}

/* One walk; the enclosing function of each node comes from a stack kept on the way. */
static bool kl_py_walk(struct kl_py *p) {
  static const char *const names[KL_PY_SYM_N] = {[KL_PY_SYM_IMPORT] = "import_statement",
                                                 [KL_PY_SYM_FROM] = "import_from_statement",
                                                 [KL_PY_SYM_GLOBAL] = "global_statement",
                                                 [KL_PY_SYM_ASSIGN] = "assignment",
                                                 [KL_PY_SYM_AUG] = "augmented_assignment",
                                                 [KL_PY_SYM_FOR] = "for_statement",
                                                 [KL_PY_SYM_CALL] = "call",
                                                 [KL_PY_SYM_DEF] = "function_definition"};
  const TSLanguage *lang = kl_dialect_python();
  struct kl_py_walker w = {.p = p};
  for (int i = 0; i < KL_PY_SYM_N; i++)
    w.sym[i] = ts_language_symbol_for_name(lang, names[i], (uint32_t)strlen(names[i]), true);
  kl_dialect_walk(p->root, kl_py_walk_node, &w, &w.depth);
  if (!kl_py_any_candidate(p)) return false;
  /* Scopes depend on `global` declarations, which may come anywhere in a function. */
  for (size_t i = 0; i < p->nasg_nodes; i++) kl_py_asg_node(p, p->asg_nodes[i], w.scopes[i]);
  return true;
}

static void kl_py_bind(struct kl_py *p, const char *var, TSNode scope, uint32_t at, size_t def) {
  KL_VEC_PUSH(p->a, p->binds, p->nbinds, p->cap_binds);
  p->binds[p->nbinds++] = (struct kl_py_binding){var, scope, at, def};
}

static void kl_py_find_defs(struct kl_py *p) {
  for (size_t i = 0; i < p->ncalls; i++) {
    TSNode c = p->calls[i];
    const char *d = kl_py_dotted(p, kl_py_field(c, "function"), 0);
    if (!d) continue;
    enum kl_py_api api;
    if (!strcmp(d, "mlx.core.fast.metal_kernel"))
      api = KL_PY_MLX;
    else if (!strcmp(d, "mlx.core.fast.MetalKernel"))
      api = KL_PY_MLX_OLD;
    else if (!strcmp(d, "torch.mps.compile_shader"))
      api = KL_PY_TORCH;
    else
      continue;
    KL_VEC_PUSH(p->a, p->defs, p->ndefs, p->cap_defs);
    size_t di = p->ndefs++;
    struct kl_py_def *def = &p->defs[di];
    memset(def, 0, sizeof *def);
    def->api = api;
    def->call = c;
    TSNode parent = ts_node_parent(c);
    if (kl_py_is(parent, "assignment") && ts_node_eq(kl_py_field(parent, "right"), c)) {
      TSNode left = kl_py_field(parent, "left");
      if (kl_py_is(left, "identifier") || kl_py_is(left, "attribute")) {
        /* The assignment was recorded with its scope already decided. */
        for (size_t k = 0; k < p->nasgs; k++)
          if (ts_node_eq(p->asgs[k].stmt, parent))
            kl_py_bind(p, p->asgs[k].target, p->asgs[k].scope, p->asgs[k].end, di);
      }
    } else if (kl_py_is(parent, "return_statement")) {
      TSNode fn = kl_py_scope(p, parent);
      TSNode name = kl_py_field(fn, "name");
      if (!kl_node_null(name)) def->factory = kl_py_text(p, name);
    }
  }
  /* `k = make_kernel()` binds k to what make_kernel returns. */
  for (size_t i = 0; i < p->nasgs; i++) {
    TSNode v = kl_py_unparen(p->asgs[i].value);
    if (!kl_py_is(v, "call")) continue;
    TSNode fn = kl_py_field(v, "function");
    if (!kl_py_is(fn, "identifier")) continue;
    for (size_t di = 0; di < p->ndefs; di++)
      if (p->defs[di].factory && kl_py_text_is(p, fn, p->defs[di].factory))
        kl_py_bind(p, p->asgs[i].target, p->asgs[i].scope, p->asgs[i].end, di);
  }
}

/* The definition that name `var` refers to at call u: among bindings in scope, the latest one
 * made before u, else the earliest (a global assigned in a function that runs first). */
static long kl_py_owner(struct kl_py *p, const char *var, TSNode u, bool torch) {
  long best = -1, first = -1;
  uint32_t pos = ts_node_start_byte(u);
  for (size_t i = 0; i < p->nbinds; i++) {
    const struct kl_py_binding *b = &p->binds[i];
    if (strcmp(b->var, var) || !kl_py_contains(b->scope, u)) continue;
    if ((p->defs[b->def].api == KL_PY_TORCH) != torch) continue;
    if (b->at <= pos && (best < 0 || b->at > p->binds[best].at)) best = (long)i;
    if (first < 0 || b->at < p->binds[first].at) first = (long)i;
  }
  long pick = best >= 0 ? best : first;
  return pick < 0 ? -1 : (long)p->binds[pick].def;
}

static void kl_py_use(struct kl_py *p, size_t di, TSNode u, bool tmpl) {
  struct kl_py_def *def = &p->defs[di];
  if (tmpl) {
    KL_VEC_PUSH(p->a, def->tmpl, def->ntmpl, def->cap_tmpl);
    def->tmpl[def->ntmpl++] = u;
  } else {
    KL_VEC_PUSH(p->a, def->uses, def->nuses, def->cap_uses);
    def->uses[def->nuses++] = u;
  }
}

static void kl_py_find_uses(struct kl_py *p) {
  for (size_t i = 0; i < p->ncalls; i++) {
    TSNode u = p->calls[i];
    TSNode fn = kl_py_unparen(kl_py_field(u, "function"));
    if (kl_py_is(fn, "call")) {
      /* mx.fast.metal_kernel(...)(inputs=...) and make_kernel()(inputs=...) */
      TSNode inner = kl_py_field(fn, "function");
      for (size_t di = 0; di < p->ndefs; di++) {
        struct kl_py_def *def = &p->defs[di];
        if (def->api == KL_PY_TORCH) continue;
        if (ts_node_eq(fn, def->call) || (def->factory && kl_py_is(inner, "identifier") &&
                                          kl_py_text_is(p, inner, def->factory)))
          kl_py_use(p, di, u, false);
      }
      continue;
    }
    if (!kl_py_is(fn, "identifier") && !kl_py_is(fn, "attribute")) continue;
    long di = kl_py_owner(p, kl_py_text(p, fn), u, false);
    if (di >= 0 && !ts_node_eq(u, p->defs[di].call)) {
      kl_py_use(p, (size_t)di, u, false);
      continue;
    }
    if (!kl_py_is(fn, "attribute")) continue;
    TSNode obj = kl_py_field(fn, "object");
    const char *otext = kl_py_text(p, obj);
    di = kl_py_owner(p, otext, u, true);
    if (di >= 0) {
      kl_py_use(p, (size_t)di, u, false);
      continue;
    }
    di = kl_py_owner(p, otext, u, false);
    if (di >= 0 && p->defs[di].api == KL_PY_MLX_OLD &&
        kl_py_text_is(p, kl_py_field(fn, "attribute"), "template"))
      kl_py_use(p, (size_t)di, u, true);
  }
}

/* ---- MLX kernels ---- */

struct kl_py_tparam {
  const char *name;
  const char *kind; /* "typename", "int" or "bool", as MLX declares it */
};

/* What building one MLX kernel collects from its calls. */
struct kl_py_mlx {
  struct kl_py_tparam *tps;
  size_t ntps, cap_tps;
  const char **names; /* inputs (the old API names them at the call), then outputs */
  size_t nnames, cap_names;
};

static bool kl_py_has_name(const char *const *names, size_t n, const char *s) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], s)) return true;
  return false;
}

/* MSL type and template-parameter kind of a template value: a dtype, an int or a bool. */
static bool kl_py_tvalue(struct kl_py *p, TSNode value, const char **type, const char **kind) {
  TSNode v = kl_py_resolve(p, value);
  const char *t = kl_py_mlx_type(kl_py_dotted(p, v, 0));
  if (t) {
    *type = t;
    *kind = "typename";
    return true;
  }
  if (kl_py_is(v, "true") || kl_py_is(v, "false")) {
    *type = kl_py_is(v, "true") ? "true" : "false";
    *kind = "bool";
    return true;
  }
  int64_t k;
  if (kl_dx_value(kl_py_dx(p, v, 0), &k)) {
    *type = kl_arena_printf(p->a, "%lld", (long long)k);
    *kind = "int";
    return true;
  }
  return false;
}

/* How a message names a bound value: a dtype by its Python name (float16), else the value. */
static const char *kl_py_tshown(struct kl_py *p, TSNode value, const char *type, const char *kind) {
  if (strcmp(kind, "typename")) return type;
  const char *d = kl_py_dotted(p, kl_py_resolve(p, value), 0);
  const char *dot = d ? strrchr(d, '.') : NULL;
  return dot ? dot + 1 : d ? d : type;
}

static void kl_py_bind_add(struct kl_py *p, struct kl_py_mlx *m, struct kl_binding **items,
                           size_t *n, size_t *cap, const char **label, const char *name,
                           TSNode value) {
  const char *type, *kind;
  if (!name || !kl_py_ident(name) || !kl_py_tvalue(p, value, &type, &kind)) return;
  *label = kl_arena_printf(p->a, "%s%s%s = %s", *label ? *label : "", *label ? ", " : "", name,
                           kl_py_tshown(p, value, type, kind));
  KL_VEC_PUSH(p->a, *items, *n, *cap);
  (*items)[(*n)++] = (struct kl_binding){name, type};
  for (size_t i = 0; i < m->ntps; i++)
    if (!strcmp(m->tps[i].name, name)) return;
  KL_VEC_PUSH(p->a, m->tps, m->ntps, m->cap_tps);
  m->tps[m->ntps++] = (struct kl_py_tparam){name, kind};
}

/* template=[("T", mx.float16), ("N", 4)], or the old API's kernel.template(T=mx.float16). */
static void kl_py_templates(struct kl_py *p, struct kl_py_mlx *m, struct kl_dispatch *d, TSNode arg,
                            bool keywords) {
  if (kl_node_null(arg)) return;
  struct kl_binding *items = NULL;
  size_t n = 0, cap = 0;
  const char *label = NULL;
  TSNode span = arg;
  uint32_t ts = ts_node_start_byte(arg), te = ts_node_end_byte(arg);
  if (keywords) {
    TSNode args = kl_py_field(arg, "arguments");
    span = args;
    /* Named as the keywords, without the call's parentheses. */
    ts = ts_node_start_byte(args) + 1;
    te = ts_node_end_byte(args) > ts ? ts_node_end_byte(args) - 1 : ts;
    uint32_t k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(args, i);
      if (kl_py_is(c, "keyword_argument"))
        kl_py_bind_add(p, m, &items, &n, &cap, &label, kl_py_text(p, kl_py_field(c, "name")),
                       kl_py_field(c, "value"));
    }
  } else {
    TSNode list = kl_py_resolve(p, arg);
    uint32_t k = ts_node_named_child_count(list);
    for (uint32_t i = 0; i < k; i++) {
      TSNode pair = kl_py_resolve(p, kl_node_named_child(list, i));
      if (!kl_py_is(pair, "tuple") || ts_node_named_child_count(pair) != 2) continue;
      kl_py_bind_add(p, m, &items, &n, &cap, &label,
                     kl_py_const_string(p, kl_node_named_child(pair, 0)),
                     kl_node_named_child(pair, 1));
    }
  }
  kl_py_scan_bfloat(p, d, span, 0);
  if (!n) return;
  d->binds = items;
  d->nbinds = n;
  d->bind_span = kl_diag_span(p->src, ts, te);
  /* What the call binds, on one line (T = float16), not a multi-line template=[...] pasted. */
  d->bind_text = label;
}

static const char *const kl_py_call_options[] = {
    "grid",       "threadgroup", "output_shapes", "output_dtypes", "template",
    "init_value", "verbose",     "stream",        "inputs",        NULL};

static bool kl_py_is_option(const char *s) {
  for (const char *const *o = kl_py_call_options; *o; o++)
    if (!strcmp(*o, s)) return true;
  return false;
}

/* The calls' facts about one launch of an MLX kernel. */
static void kl_py_mlx_dispatch(struct kl_py *p, struct kl_py_def *def, struct kl_py_mlx *m,
                               struct kl_py_embed *em, TSNode u, const char *fname) {
  bool old = def->api == KL_PY_MLX_OLD;
  struct kl_dispatch *d = kl_dispatch_add(&em->calls);
  d->kernel = fname;
  d->path = p->src->path;
  d->local = true;
  d->call = kl_py_span(p, kl_py_field(u, "function"));
  const char *const keys[] = {"grid", "threadgroup", "output_dtypes"};
  TSNode v[3];
  for (int i = 0; i < 3; i++) {
    v[i] = kl_py_arg(p, u, keys[i], -1);
    if (kl_node_null(v[i]) && old) v[i] = kl_py_arg(p, def->call, keys[i], -1);
  }
  kl_py_grid(p, d, v[0]);
  kl_py_threadgroup(p, d, v[1]);
  kl_py_scan_bfloat(p, d, v[2], 0);
  if (!old) {
    kl_py_templates(p, m, d, kl_py_arg(p, u, "template", -1), false);
    kl_py_scan_bfloat(p, d, kl_py_arg(p, u, "inputs", -1), 0);
    return;
  }
  /* The old API: kernel.template(T=...) before the call, and inputs passed by name. */
  TSNode tcall = kl_py_null;
  for (size_t i = 0; i < def->ntmpl; i++) {
    TSNode t = def->tmpl[i];
    if (ts_node_start_byte(t) < ts_node_start_byte(u) || kl_node_null(tcall)) tcall = t;
  }
  if (!kl_node_null(tcall)) kl_py_templates(p, m, d, tcall, true);
  TSNode args = kl_py_field(u, "arguments");
  uint32_t k = ts_node_eq(u, def->call) || kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(args, i);
    if (!kl_py_is(c, "keyword_argument")) continue;
    const char *nm = kl_py_text(p, kl_py_field(c, "name"));
    if (kl_py_is_option(nm)) continue;
    kl_py_scan_bfloat(p, d, kl_py_field(c, "value"), 0);
    if (kl_py_ident(nm) && !kl_py_has_name(m->names, m->nnames, nm)) {
      KL_VEC_PUSH(p->a, m->names, m->nnames, m->cap_names);
      m->names[m->nnames++] = nm;
    }
  }
}

/* Names from a list of strings (input_names=) or the string keys of a dict (the old API's
 * output_shapes=). */
static void kl_py_names(struct kl_py *p, TSNode n, const char ***out, size_t *nout, size_t *cap) {
  n = kl_py_resolve(p, n);
  if (kl_node_null(n)) return;
  bool dict = kl_py_is(n, "dictionary");
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    if (dict) c = kl_py_is(c, "pair") ? kl_py_field(c, "key") : kl_py_null;
    if (kl_node_null(c) || kl_py_is(c, "comment")) continue;
    const char *s = kl_py_const_string(p, c);
    if (s && kl_py_ident(s) && !kl_py_has_name(*out, *nout, s)) {
      KL_VEC_PUSH(p->a, *out, *nout, *cap);
      (*out)[(*nout)++] = s;
    }
  }
}

/* Whether word appears in text as a whole identifier; with subscript, only as `word[` or
 * `*word` (used as a buffer rather than a value). */
static bool kl_py_mentions(const char *text, uint32_t len, const char *word, bool subscript) {
  size_t n = strlen(word);
  for (const char *q = text; q && q < text + len; q++) {
    q = strstr(q, word);
    if (!q || q + n > text + len) return false;
    if ((q > text && kl_py_idchar(q[-1])) || kl_py_idchar(q[n])) continue;
    if (!subscript) return true;
    const char *r = q + n;
    while (*r == ' ' || *r == '\t' || *r == '\n') r++;
    if (*r == '[') return true;
    const char *l = q;
    while (l > text && (l[-1] == ' ' || l[-1] == '\t')) l--;
    if (l > text && l[-1] == '*') {
      const char *m = l - 1;
      while (m > text && (m[-1] == ' ' || m[-1] == '\t' || m[-1] == '(')) m--;
      char pc = m > text ? m[-1] : '=';
      /* `a * x` multiplies; `= *x`, `(*x)` and `, *x` dereference. */
      if (!kl_py_idchar(pc) && pc != ')' && pc != ']') return true;
    }
  }
  return false;
}

/* MLX declares these coordinates as vectors; the rest are scalars. */
static bool kl_py_coord_vector(const char *name) {
  static const char *const vec[] = {"dispatch_threads_per_threadgroup",
                                    "grid_origin",
                                    "grid_size",
                                    "thread_position_in_grid",
                                    "thread_position_in_threadgroup",
                                    "threadgroup_position_in_grid",
                                    "threadgroups_per_grid",
                                    "threads_per_grid",
                                    "threads_per_threadgroup"};
  for (size_t i = 0; i < sizeof vec / sizeof vec[0]; i++)
    if (!strcmp(vec[i], name)) return true;
  return false;
}

static void kl_py_note(struct kl_py *p, TSNode at, const char *what, const struct kl_py_buf *b,
                       bool body_checked) {
  struct kl_python *o = p->out;
  KL_VEC_PUSH(p->a, o->notes, o->nnotes, o->cap_notes);
  struct kl_py_note *nt = &o->notes[o->nnotes++];
  nt->span = kl_py_span(p, at);
  /* The construction's own line: a source is often built far from the call. */
  TSNode w = kl_node_null(b->why_node) ? at : b->why_node;
  nt->message = kl_arena_printf(
      p->a,
      "cannot read %s: it is %s at line %u; %s",
      what, b->why ? b->why : "not a string", kl_py_span(p, w).line,
      body_checked ? "the body is checked, with what the header defines read as unknown names"
                   : "kernlint follows literals, module constants, parameters bound to literals "
                     "and the file's own helpers, so this kernel is not checked");
}

static struct kl_py_embed *kl_py_embed_new(struct kl_py *p) {
  struct kl_python *o = p->out;
  KL_VEC_PUSH(p->a, o->embeds, o->nembeds, o->cap_embeds);
  struct kl_py_embed *em = &o->embeds[o->nembeds++];
  memset(em, 0, sizeof *em);
  kl_dispatch_list_init(&em->calls, p->a);
  kl_offmap_init(&em->map, p->a);
  return em;
}

/* Keep the opaque fields of the build that made em (p->fields is reused by the next build). */
static void kl_py_embed_fields(struct kl_py *p, struct kl_py_embed *em) {
  if (!p->nfields) return;
  em->fields = kl_arena_alloc(p->a, p->nfields * sizeof *em->fields);
  memcpy(em->fields, p->fields, p->nfields * sizeof *em->fields);
  em->nfields = p->nfields;
}

/* Start one build: which alternatives it takes, how many conditionals it may enumerate, and a
 * fresh field list and evaluation budget. */
static void kl_py_build_start(struct kl_py *p, unsigned choice, unsigned nbits, bool first_alt) {
  p->choice = choice;
  p->nbits = nbits;
  p->first_alt = first_alt;
  p->nchoices = 0;
  p->nfields = 0;
  p->budget = KL_PY_BUDGET;
  p->text_budget = KL_PY_TEXT_BUDGET;
}

/* Output element type: the dtype every call gives it (bfloat excepted, which is reported at the
 * argument instead), else a name that resolves to nothing, so its size counts as unknown. */
static const char *kl_py_out_type(struct kl_py *p, struct kl_py_def *def, size_t index,
                                  const char *name) {
  const char *type = NULL;
  size_t n = def->nuses ? def->nuses : 1;
  for (size_t i = 0; i < n; i++) {
    TSNode u = def->nuses ? def->uses[i] : def->call;
    TSNode v = kl_py_arg(p, u, "output_dtypes", -1);
    if (kl_node_null(v) && def->api == KL_PY_MLX_OLD)
      v = kl_py_arg(p, def->call, "output_dtypes", -1);
    v = kl_py_resolve(p, v);
    TSNode el = kl_py_null;
    if (kl_py_is(v, "list") || kl_py_is(v, "tuple")) {
      if (index < ts_node_named_child_count(v)) el = kl_node_named_child(v, (uint32_t)index);
    } else if (kl_py_is(v, "dictionary")) {
      uint32_t k = ts_node_named_child_count(v);
      for (uint32_t j = 0; j < k; j++) {
        TSNode pr = kl_node_named_child(v, j);
        const char *key =
            kl_py_is(pr, "pair") ? kl_py_const_string(p, kl_py_field(pr, "key")) : NULL;
        if (key && !strcmp(key, name)) el = kl_py_field(pr, "value");
      }
    }
    const char *t =
        kl_node_null(el) ? NULL : kl_py_mlx_type(kl_py_dotted(p, kl_py_resolve(p, el), 0));
    if (!t || !strcmp(t, "bfloat") || (type && strcmp(type, t))) return "mlx_output_t";
    type = t;
  }
  return type ? type : "mlx_output_t";
}

/* A kernel name that is not a constant, as written: an f-string's text with its fields, else the
 * expression; empty when no name is given. */
static const char *kl_py_name_written(struct kl_py *p, TSNode n) {
  if (kl_node_null(n)) return "";
  TSNode v = kl_py_resolve(p, n);
  if (kl_py_is(v, "string")) {
    uint32_t k = ts_node_child_count(v);
    TSNode first = k ? ts_node_child(v, 0) : kl_py_null;
    TSNode last = k ? ts_node_child(v, k - 1) : kl_py_null;
    if (kl_py_is(first, "string_start") && kl_py_is(last, "string_end")) {
      uint32_t s = ts_node_end_byte(first), e = ts_node_start_byte(last);
      if (e - s <= KL_PY_MAX_SHOWN && !memchr(p->t + s, '\n', e - s))
        return kl_arena_strndup(p->a, p->t + s, e - s);
    }
  }
  return kl_py_short(p, n, KL_PY_MAX_SHOWN);
}

/* One build of an MLX kernel-making call, under the bindings and choices in force. noted: a
 * source that cannot be read was reported already (by an earlier build of the call). Returns
 * false when the source cannot be read. */
static bool kl_py_build_mlx_one(struct kl_py *p, struct kl_py_def *def, bool noted) {
  bool old = def->api == KL_PY_MLX_OLD;
  TSNode c = def->call;
  struct kl_py_embed *em = kl_py_embed_new(p);
  TSNode name_arg = kl_py_arg(p, c, "name", 0);
  const char *name = kl_py_const_string(p, name_arg);
  em->name = name ? name : kl_py_name_written(p, name_arg);
  /* The kernel's own name, made an identifier (MLX prefixes and hashes it anyway): runs of other
   * characters, an f-string's braces among them, become one underscore. */
  char *fname = kl_arena_printf(p->a, "%s", *em->name ? em->name : "mlx_kernel");
  char *w = fname;
  for (const char *q = fname; *q; q++) {
    bool id = kl_py_idchar(*q);
    if (!id && w > fname && w[-1] == '_') continue;
    *w++ = id ? *q : '_';
  }
  while (w > fname + 1 && w[-1] == '_') w--;
  *w = '\0';
  if (*fname >= '0' && *fname <= '9') fname = kl_arena_printf(p->a, "_%s", fname);
  struct kl_py_mlx m = {0};
  const char **outs = NULL;
  size_t nouts = 0, cap_outs = 0;
  if (!old) {
    kl_py_names(p, kl_py_arg(p, c, "input_names", 1), &m.names, &m.nnames, &m.cap_names);
    kl_py_names(p, kl_py_arg(p, c, "output_names", 2), &outs, &nouts, &cap_outs);
  } else {
    kl_py_names(p, kl_py_arg(p, c, "output_shapes", -1), &outs, &nouts, &cap_outs);
    for (size_t i = 0; i < def->nuses && !nouts; i++)
      kl_py_names(p, kl_py_arg(p, def->uses[i], "output_shapes", -1), &outs, &nouts, &cap_outs);
  }
  for (size_t i = 0; i < def->nuses; i++) kl_py_mlx_dispatch(p, def, &m, em, def->uses[i], fname);
  if (!def->nuses && old) kl_py_mlx_dispatch(p, def, &m, em, c, fname);

  TSNode src_arg = kl_py_arg(p, c, "source", old ? 1 : 3);
  struct kl_py_buf body;
  kl_py_buf_init(&body, p->a);
  body.skeleton = true;
  em->fname = fname;
  em->site = kl_py_span(p, c);
  TSNode cargs = kl_py_field(c, "arguments");
  for (uint32_t i = 0; kl_node_null(src_arg) && i < ts_node_named_child_count(cargs); i++) {
    TSNode sp = kl_node_named_child(cargs, i);
    if (kl_py_is(sp, "list_splat") || kl_py_is(sp, "dictionary_splat"))
      kl_py_fail(&body, sp,
                 kl_arena_printf(p->a, "in arguments spread from `%s`",
                                 kl_py_short(p, sp, KL_PY_MAX_SHOWN)));
  }
  if (!kl_py_string(p, &body, src_arg, 0)) {
    if (noted) {
      p->out->nembeds--;
      return false;
    }
    kl_py_note(p, kl_node_null(src_arg) ? kl_py_field(c, "function") : src_arg,
               *em->name ? kl_arena_printf(p->a, "the source of MLX kernel `%s`", em->name)
                         : "the source of an MLX kernel without a name",
               &body, false);
    return false;
  }
  kl_py_buf_raw(&body, "", 0);
  uint32_t anchor = ts_node_start_byte(src_arg);
  struct kl_py_buf out;
  kl_py_buf_init(&out, p->a);
  TSNode hdr_arg = old ? kl_py_null : kl_py_arg(p, c, "header", 4);
  if (!kl_node_null(hdr_arg)) {
    struct kl_py_buf hdr;
    kl_py_buf_init(&hdr, p->a);
    hdr.skeleton = true;
    if (kl_py_string(p, &hdr, hdr_arg, 0)) {
      kl_py_buf_append(&out, &hdr);
      kl_py_buf_synth(&out, "\n", anchor);
    } else {
      /* The body is still checked: what it takes from the header are unknown names to it. */
      em->partial = true;
      if (!p->hdr_noted)
        kl_py_note(p, hdr_arg,
                   *em->name ? kl_arena_printf(p->a, "the header of MLX kernel `%s`", em->name)
                             : "the header of an MLX kernel without a name",
                   &hdr, true);
      p->hdr_noted = true;
    }
  }
  /* The signature MLX generates (mlx/backend/metal/custom_kernel.cpp): inputs, with their
   * shape/strides/ndim when the body names them, then outputs, then the attributes used. */
  if (m.ntps) {
    kl_py_buf_synth(&out, "template <", anchor);
    for (size_t i = 0; i < m.ntps; i++)
      kl_py_buf_synth(&out,
                      kl_arena_printf(p->a, "%s%s %s", i ? ", " : "", m.tps[i].kind, m.tps[i].name),
                      anchor);
    kl_py_buf_synth(&out, ">\n", anchor);
  }
  kl_py_buf_synth(&out, kl_arena_printf(p->a, "[[kernel]] void %s(", fname), anchor);
  int slot = 0;
  bool first = true;
#define KL_PY_PARAM(...)                                                                           \
  do {                                                                                             \
    kl_py_buf_synth(&out, first ? "\n  " : ",\n  ", anchor);                                       \
    kl_py_buf_synth(&out, kl_arena_printf(p->a, __VA_ARGS__), anchor);                             \
    first = false;                                                                                 \
  } while (0)
  for (size_t i = 0; i < m.nnames; i++) {
    const char *nm = m.names[i];
    if (kl_py_has_name(outs, nouts, nm)) continue;
    if (kl_py_mentions(body.p, body.n, nm, true) || !kl_py_mentions(body.p, body.n, nm, false))
      KL_PY_PARAM("const device mlx_input_t* %s [[buffer(%d)]]", nm, slot++);
    else
      KL_PY_PARAM("const constant mlx_input_t& %s [[buffer(%d)]]", nm, slot++);
    static const char *const extra[][2] = {{"shape", "const constant int* %s_shape"},
                                           {"strides", "const constant int64_t* %s_strides"},
                                           {"ndim", "const constant int& %s_ndim"}};
    for (size_t k = 0; k < 3; k++) {
      if (!kl_py_mentions(body.p, body.n, kl_arena_printf(p->a, "%s_%s", nm, extra[k][0]), false))
        continue;
      KL_PY_PARAM("%s [[buffer(%d)]]", kl_arena_printf(p->a, extra[k][1], nm), slot++);
    }
  }
  bool atomic = kl_py_text_is(p, kl_py_resolve(p, kl_py_arg(p, c, "atomic_outputs", 6)), "True");
  for (size_t i = 0; i < nouts; i++) {
    const char *t = kl_py_out_type(p, def, i, outs[i]);
    if (atomic)
      KL_PY_PARAM("device atomic<%s>* %s [[buffer(%d)]]", t, outs[i], slot++);
    else
      KL_PY_PARAM("device %s* %s [[buffer(%d)]]", t, outs[i], slot++);
  }
  size_t ncoords;
  const struct kl_msl_coord *coords = kl_msl_coords(&ncoords);
  for (size_t i = 0; i < ncoords; i++) {
    if (!kl_py_mentions(body.p, body.n, coords[i].name, false)) continue;
    KL_PY_PARAM("%s %s [[%s]]", kl_py_coord_vector(coords[i].name) ? "uint3" : "uint",
                coords[i].name, coords[i].name);
  }
#undef KL_PY_PARAM
  kl_py_buf_synth(&out, ") {\n", anchor);
  kl_py_buf_append(&out, &body);
  kl_py_buf_synth(&out, "\n}\n", ts_node_end_byte(src_arg));
  em->text = out.p;
  em->len = out.n;
  em->map = out.map;
  kl_py_embed_fields(p, em);
  return true;
}

/* What a call binds fn's parameters to, as one key: each known value, or `?`. */
static const char *kl_py_env_key(struct kl_py *p, const struct kl_py_env *env) {
  TSNode params = kl_py_field(env->fn, "parameters");
  uint32_t k = kl_node_null(params) ? 0 : ts_node_named_child_count(params);
  const char *key = "";
  const struct kl_py_env *saved = p->env;
  p->env = env;
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(params, i), id = c, v;
    if (!kl_py_is(id, "identifier")) id = kl_py_field(c, "name");
    if (kl_node_null(id) && ts_node_named_child_count(c) > 0) id = kl_node_named_child(c, 0);
    if (!kl_py_is(id, "identifier")) continue;
    struct kl_py_buf t;
    kl_py_buf_init(&t, p->a);
    bool known = kl_py_param_value(p, env->fn, kl_py_text(p, id), &v) &&
                 kl_py_value(p, &t, v, 0, 0, 0);
    kl_py_buf_raw(&t, "", 0);
    key = kl_arena_printf(p->a, "%s\x1f%s", key, known ? t.p : "?");
  }
  p->env = saved;
  return key;
}

/* An MLX kernel-making call, built once per instance. Inside a function that the file calls
 * with literal arguments, each distinct set of them is an instance (up to 8); each instance is
 * built once per combination of the conditionals with unknown tests its source takes (up to 16
 * units in all, else those conditionals are opaque fields). */
static void kl_py_build_mlx(struct kl_py *p, struct kl_py_def *def, size_t group) {
  struct kl_py_env envs[KL_PY_MAX_ENVS];
  const char *keys[KL_PY_MAX_ENVS], *labels[KL_PY_MAX_ENVS];
  size_t calls[KL_PY_MAX_ENVS], nenv = 0;
  TSNode fn = kl_py_scope(p, def->call);
  for (size_t i = 0; !ts_node_eq(fn, p->root) && i < p->ncalls; i++) {
    TSNode u = p->calls[i];
    if (!kl_py_reaches(p, u, fn)) continue;
    struct kl_py_env env = {fn, u, NULL, false};
    const char *key = kl_py_env_key(p, &env);
    size_t k = 0;
    while (k < nenv && strcmp(keys[k], key)) k++;
    if (k < nenv) {
      calls[k]++;
      continue;
    }
    if (nenv == KL_PY_MAX_ENVS) {
      /* More instances than are worth building: one, with every parameter opaque. */
      envs[0] = (struct kl_py_env){fn, kl_py_null, NULL, true};
      labels[0] = NULL;
      calls[0] = 1;
      nenv = 1;
      break;
    }
    envs[nenv] = env;
    keys[nenv] = key;
    calls[nenv] = 1;
    labels[nenv] = kl_arena_printf(p->a, "`%s` at line %u", kl_py_short(p, u, KL_PY_MAX_SHOWN),
                                   kl_py_span(p, u).line);
    nenv++;
  }
  size_t first = p->out->nembeds, ninst = nenv ? nenv : 1;
  bool noted = false;
  p->hdr_noted = false;
  /* Bits each instance may enumerate: 16 builds in all. */
  unsigned maxbits = 0;
  while (maxbits < KL_PY_MAX_CHOICES && ninst << (maxbits + 1) <= KL_PY_MAX_INSTANCES) maxbits++;
  for (size_t i = 0; i < ninst; i++) {
    p->env = nenv ? &envs[i] : NULL;
    unsigned ncombo = 1;
    for (unsigned c = 0; c < ncombo; c++) {
      size_t before = p->out->nembeds;
      bool ok = false;
      /* Opaque past the enumerated bits; if that cannot be read, their first branches. */
      for (int pass = 0; pass < 2 && !ok; pass++) {
        kl_py_build_start(p, c, maxbits, pass == 1);
        ok = kl_py_build_mlx_one(p, def, true);
        if (!ok && p->nchoices <= maxbits) break;
      }
      unsigned nc = p->nchoices < maxbits ? p->nchoices : maxbits;
      if (ncombo < (1u << nc)) ncombo = 1u << nc;
      const char *label = NULL;
      if (nenv && labels[i])
        label = kl_arena_printf(p->a, "for %s%s", labels[i],
                                calls[i] > 1 ? kl_arena_printf(p->a, " and %zu more calls",
                                                               calls[i] - 1)
                                             : "");
      for (unsigned k = 0; k < nc; k++)
        label = kl_arena_printf(p->a, "%s%s`%s` %s", label ? label : "",
                                label ? (k ? " and " : ", when ") : "when ", p->choice_text[k],
                                (c >> k) & 1u ? "is false" : "is true");
      if (!ok) {
        /* One note per call, for the first build that cannot be read, said for its instance. */
        if (!noted) {
          p->out->nembeds = before;
          kl_py_build_start(p, c, maxbits, true);
          kl_py_build_mlx_one(p, def, false);
          if (label && p->out->nnotes)
            p->out->notes[p->out->nnotes - 1].message = kl_arena_printf(
                p->a, "%s (%s)", p->out->notes[p->out->nnotes - 1].message, label);
          noted = true;
        }
        continue;
      }
      /* A combination that sets a bit no conditional of this build read repeats another. */
      if (c >> nc) {
        p->out->nembeds = before;
        continue;
      }
      p->out->embeds[p->out->nembeds - 1].label = label;
    }
  }
  p->env = NULL;
  kl_py_build_start(p, 0, 0, false);
  /* A call whose every build failed keeps its noted unit (its dispatches are still checked); one
   * with a unit read drops it, or its dispatches would count twice. */
  bool read = false;
  for (size_t i = first; i < p->out->nembeds; i++) read |= p->out->embeds[i].text != NULL;
  size_t w = first;
  for (size_t i = first; i < p->out->nembeds; i++)
    if (!read || p->out->embeds[i].text) p->out->embeds[w++] = p->out->embeds[i];
  p->out->nembeds = w;
  for (size_t i = first; i < p->out->nembeds; i++) {
    p->out->embeds[i].group = group;
    p->out->embeds[i].ninstances = p->out->nembeds - first;
    if (p->out->nembeds - first == 1) p->out->embeds[i].label = NULL;
  }
}

/* ---- PyTorch libraries ---- */

static void kl_py_build_torch(struct kl_py *p, struct kl_py_def *def, size_t group) {
  struct kl_py_embed *em = kl_py_embed_new(p);
  em->group = group;
  for (size_t i = 0; i < def->nuses; i++) {
    TSNode u = def->uses[i];
    TSNode fn = kl_py_field(u, "function");
    struct kl_dispatch *d = kl_dispatch_add(&em->calls);
    d->kernel = kl_py_text(p, kl_py_field(fn, "attribute"));
    d->path = p->src->path;
    d->local = true;
    d->call = kl_py_span(p, fn);
    kl_py_grid(p, d, kl_py_arg(p, u, "threads", -1));
    kl_py_threadgroup(p, d, kl_py_arg(p, u, "group_size", -1));
    kl_py_scan_bfloat(p, d, kl_py_field(u, "arguments"), 0);
  }
  TSNode src_arg = kl_py_arg(p, def->call, "source", 0);
  struct kl_py_buf b;
  kl_py_buf_init(&b, p->a);
  b.skeleton = true;
  /* One build: a conditional with an unknown test is an opaque field. */
  kl_py_build_start(p, 0, 0, false);
  em->site = kl_py_span(p, def->call);
  bool ok = kl_py_string(p, &b, src_arg, 0);
  if (!ok) {
    kl_py_note(p, kl_node_null(src_arg) ? kl_py_field(def->call, "function") : src_arg,
               "the source passed to `torch.mps.compile_shader`", &b, false);
    return;
  }
  kl_py_buf_raw(&b, "", 0);
  em->text = b.p;
  em->len = b.n;
  em->map = b.map;
  em->ninstances = 1;
  kl_py_embed_fields(p, em);
}

/* ---- entry ---- */

/* Whether an API name occurs as code (an identifier) rather than inside a string: a module
 * that only mentions the API in its documentation needs no walk of its tree. */
static bool kl_py_code_names_api(const char *text, TSNode root) {
  for (size_t k = 0; k < KL_PY_NAPI; k++) {
    const char *api = kl_py_api_names[k];
    uint32_t len = (uint32_t)strlen(api);
    for (const char *q = strstr(text, api); q; q = strstr(q + 1, api)) {
      uint32_t off = (uint32_t)(q - text);
      TSNode n = ts_node_descendant_for_byte_range(root, off, off + len);
      if (kl_py_is(n, "identifier")) return true;
    }
  }
  return false;
}

/* Whether the text names one of the APIs outside a whole-line comment: the test that lets a file
 * with no kernel skip even its parse. */
static bool kl_py_names_api(const char *text) {
  for (size_t k = 0; k < KL_PY_NAPI; k++) {
    const char *api = kl_py_api_names[k];
    for (const char *q = strstr(text, api); q; q = strstr(q + 1, api)) {
      const char *l = q;
      while (l > text && l[-1] != '\n') l--;
      while (*l == ' ' || *l == '\t') l++;
      if (*l != '#') return true;
    }
  }
  return false;
}

int kl_python_extract(struct kl_arena *a, const struct kl_source *src, struct kl_python *out,
                      char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  /* Most Python files have no kernel; they cost a substring scan, not a parse. */
  if (!kl_py_names_api(src->text)) return 0;
  TSParser *parser = ts_parser_new();
  ts_parser_set_language(parser, kl_dialect_python());
  ts_parser_set_timeout_micros(parser, KL_PY_PARSE_TIMEOUT_US);
  TSTree *tree = ts_parser_parse_string(parser, NULL, src->text, src->len);
  ts_parser_delete(parser);
  if (!tree) {
    snprintf(err, errlen, "parsing timed out after %u s", KL_PY_PARSE_TIMEOUT_US / 1000000u);
    return -1;
  }
  struct kl_py p;
  memset(&p, 0, sizeof p);
  p.a = a;
  p.src = src;
  p.t = src->text;
  p.root = ts_tree_root_node(tree);
  p.out = out;
  p.budget = KL_PY_BUDGET;
  p.text_budget = KL_PY_TEXT_BUDGET;
  if (!kl_py_code_names_api(src->text, p.root) || !kl_py_walk(&p)) {
    kl_node_tree_delete(tree);
    return 0;
  }
  kl_py_find_defs(&p);
  kl_py_find_uses(&p);
  for (size_t i = 0; i < p.ndefs; i++) {
    if (p.defs[i].api == KL_PY_TORCH)
      kl_py_build_torch(&p, &p.defs[i], i);
    else
      kl_py_build_mlx(&p, &p.defs[i], i);
  }
  kl_node_tree_delete(tree);
  return 0;
}
