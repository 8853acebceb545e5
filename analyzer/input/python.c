/* The Python front end. One walk of the tree-sitter-python tree collects imports, assignments,
 * `global` declarations and calls; the kernel-making calls are then tied to the calls that
 * dispatch them, their sources are decoded with an offset map, and each becomes an MSL unit.
 *
 * Values are followed through names the way Python scopes them: a function's own assignments
 * made before the use, then the module's. A function parameter, a loop variable or anything
 * assigned by unpacking is a runtime value. The reader's state and scopes are in py.c, the
 * evaluation of strings and sizes in pyval.c; this file walks the tree, finds the kernels and
 * their dispatches, and builds each kernel's unit. */
#include "analyzer/input/python.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tree_sitter/api.h>

#include "analyzer/core/node.h"
#include "analyzer/input/py.h"
#include "analyzer/input/pypath.h"
#include "analyzer/input/pyval.h"
#include "grammar/dialect.h"
#include "grammar/lex.h"
#include "grammar/msl.h"

/* The last names of the three kernel-making APIs: what decides whether a file is looked at. */
static const char *const kl_py_api_names[] = {"metal_kernel", "MetalKernel", "compile_shader"};
#define KL_PY_NAPI (sizeof kl_py_api_names / sizeof kl_py_api_names[0])
/* The keyword of an MLX launch: a file that only launches kernels made in another module is read
 * for its calls' own sizes. */
static const char kl_py_launch_word[] = "threadgroup";

static size_t kl_py_dims(struct kl_py *p, TSNode n, struct kl_dx **out) {
  if (kl_py_is(n, "tuple") || kl_py_is(n, "list") || kl_py_is(n, "expression_list")) {
    size_t k = 0;
    uint32_t m = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < m && k < 3; i++) {
      TSNode c = kl_node_named_child(n, i);
      if (!kl_py_is(c, "comment")) out[k++] = kl_pyval_dx(p, c, 0);
    }
    return k;
  }
  out[0] = kl_pyval_dx(p, n, 0);
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
    TSNode args = kl_py_field(p->calls[i], "arguments");
    for (uint32_t k = 0; !kl_node_null(args) && k < ts_node_named_child_count(args); k++) {
      TSNode c = kl_node_named_child(args, k);
      if (kl_py_is(c, "dictionary_splat") ||
          (kl_py_is(c, "keyword_argument") &&
           kl_py_text_is(p, kl_py_field(c, "name"), kl_py_launch_word)))
        return true;
    }
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

/* What a named node is to the search for a function's returns (kl_py_find_returns). */
enum { KL_PY_RET_NONE, KL_PY_RET_DEF, KL_PY_RET_NEST, KL_PY_RET_STMT };

/* A function definition, class or lambda around the node: returns below it are its own. */
struct kl_py_nest {
  long fn;      /* index in fns, or -1 (a class, a lambda) */
  TSNode body;  /* the function's body */
  bool in_body; /* the node's ancestor one below is body */
  uint32_t depth;
};

struct kl_py_walker {
  struct kl_py *p;
  TSSymbol sym[KL_PY_SYM_N]; /* compared by symbol: the walk visits every node of the file */
  struct kl_py_frame *stack; /* function definitions around the node, innermost last */
  size_t nstack, cap_stack;
  TSNode *scopes; /* the scope of each node in asg_nodes */
  size_t nscopes, cap_scopes;
  uint8_t *ret_kind; /* per symbol: KL_PY_RET_*, by its name (as kl_py_is tests) */
  uint32_t nsyms;
  struct kl_py_nest *nests; /* innermost last */
  size_t nnests, cap_nests;
  uint32_t depth; /* of the node being visited, kept by kl_dialect_walk */
};

/* The named depth of n below body (its ancestor), or UINT32_MAX when an unnamed node lies
 * between: how far a search over named children from body reaches it. */
static uint32_t kl_py_named_depth(TSNode body, TSNode n) {
  uint32_t d = 0;
  for (; !kl_node_null(n) && !ts_node_eq(n, body); n = ts_node_parent(n), d++)
    if (!ts_node_is_named(n)) return UINT32_MAX;
  return kl_node_null(n) ? UINT32_MAX : d;
}

/* Keep what kl_py_find_returns needs of n: the nesting around it, and a return statement of a
 * function's body (at most 64 named levels down, as a recursive search would go). */
static void kl_py_walk_returns(struct kl_py_walker *w, TSNode n, TSSymbol t) {
  struct kl_py *p = w->p;
  while (w->nnests && w->nests[w->nnests - 1].depth >= w->depth) w->nnests--;
  struct kl_py_nest *top = w->nnests ? &w->nests[w->nnests - 1] : NULL;
  if (top && top->depth + 1 == w->depth) top->in_body = ts_node_eq(n, top->body);
  uint8_t k = t < w->nsyms ? w->ret_kind[t] : KL_PY_RET_NONE;
  if (k == KL_PY_RET_NONE || !ts_node_is_named(n)) return;
  if (k == KL_PY_RET_STMT) {
    if (!top || top->fn < 0 || !top->in_body) return;
    uint32_t d = w->depth - top->depth - 1;
    if (d > 64 && kl_py_named_depth(top->body, n) > 64) return;
    KL_VEC_PUSH(p->a, p->rets, p->nrets, p->cap_rets);
    p->rets[p->nrets++] = (struct kl_py_ret){n, (size_t)top->fn};
    return;
  }
  bool fn = k == KL_PY_RET_DEF && p->nfns && ts_node_eq(p->fns[p->nfns - 1], n);
  KL_VEC_PUSH(p->a, w->nests, w->nnests, w->cap_nests);
  w->nests[w->nnests++] = (struct kl_py_nest){fn ? (long)p->nfns - 1 : -1,
                                              fn ? kl_py_field(n, "body") : kl_py_null, false,
                                              w->depth};
}

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
  kl_py_walk_returns(w, n, t);
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
  w.nsyms = ts_language_symbol_count(lang);
  w.ret_kind = kl_arena_alloc(p->a, w.nsyms + 1);
  for (uint32_t s = 0; s < w.nsyms; s++) {
    const char *nm = ts_language_symbol_name(lang, (TSSymbol)s);
    if (!nm) continue;
    if (!strcmp(nm, "function_definition"))
      w.ret_kind[s] = KL_PY_RET_DEF;
    else if (!strcmp(nm, "class_definition") || !strcmp(nm, "lambda"))
      w.ret_kind[s] = KL_PY_RET_NEST;
    else if (!strcmp(nm, "return_statement"))
      w.ret_kind[s] = KL_PY_RET_STMT;
  }
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

static long kl_py_owner(struct kl_py *p, const char *var, TSNode u, bool torch);

/* The return at n of function fname: one of a name that stands for one kernel there makes
 * fname that kernel's factory. */
static void kl_py_factory_return(struct kl_py *p, TSNode n, const char *fname) {
  TSNode v = ts_node_named_child_count(n) ? kl_py_unparen(kl_node_named_child(n, 0)) : n;
  if (!kl_py_is(v, "identifier")) return;
  const char *var = kl_py_text(p, v);
  for (int torch = 0; torch < 2; torch++) {
    long di = kl_py_owner(p, var, n, torch);
    if (di >= 0 && !p->defs[di].factory) p->defs[di].factory = fname;
  }
}

/* The returns of each function of fns in its body (not those of functions, classes or lambdas
 * nested in it), function by function, each's in document order: the walk kept them, so no
 * function body is walked again. */
static void kl_py_find_returns(struct kl_py *p) {
  size_t *first = kl_arena_alloc(p->a, (p->nfns + 1) * sizeof *first);
  for (size_t r = 0; r < p->nrets; r++) first[p->rets[r].fn + 1]++;
  for (size_t i = 0; i < p->nfns; i++) first[i + 1] += first[i];
  TSNode *by_fn = kl_arena_alloc(p->a, (p->nrets + 1) * sizeof *by_fn);
  size_t *fill = kl_arena_alloc(p->a, (p->nfns + 1) * sizeof *fill);
  memcpy(fill, first, (p->nfns + 1) * sizeof *fill);
  for (size_t r = 0; r < p->nrets; r++) by_fn[fill[p->rets[r].fn]++] = p->rets[r].node;
  for (size_t i = 0; i < p->nfns; i++) {
    TSNode name = kl_py_field(p->fns[i], "name"), body = kl_py_field(p->fns[i], "body");
    if (first[i] == first[i + 1] || kl_node_null(name) || kl_node_null(body)) continue;
    const char *fname = kl_py_text(p, name);
    for (size_t r = first[i]; r < first[i + 1]; r++) kl_py_factory_return(p, by_fn[r], fname);
  }
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
  /* A function that returns a name bound to a kernel is its factory as well: the memoising
   * builder (`global _k; if _k is None: _k = mx.fast.metal_kernel(...); return _k`, or one under
   * functools.cache that returns a local). */
  if (p->ndefs) kl_py_find_returns(p);
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
  if (kl_dx_value(kl_pyval_dx(p, v, 0), &k)) {
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
                     kl_pyval_const_string(p, kl_node_named_child(pair, 0)),
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
  /* The kernel object is made in this file, by the call that owns this launch: its name. */
  TSNode at = kl_py_arg(p, def->call, "name", 0);
  d->kernel_file = p->src->path;
  d->kernel_at = kl_py_span(p, kl_node_null(at) ? kl_py_field(def->call, "function") : at);
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
    const char *s = kl_pyval_const_string(p, c);
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
            kl_py_is(pr, "pair") ? kl_pyval_const_string(p, kl_py_field(pr, "key")) : NULL;
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
  return kl_pyval_short(p, n, KL_PY_MAX_SHOWN);
}

/* One build of an MLX kernel-making call, under the bindings and choices in force. noted: a
 * source that cannot be read was reported already (by an earlier build of the call). Returns
 * false when the source cannot be read. */
static bool kl_py_build_mlx_one(struct kl_py *p, struct kl_py_def *def, bool noted) {
  bool old = def->api == KL_PY_MLX_OLD;
  TSNode c = def->call;
  struct kl_py_embed *em = kl_py_embed_new(p);
  TSNode name_arg = kl_py_arg(p, c, "name", 0);
  const char *name = kl_pyval_const_string(p, name_arg);
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
                                 kl_pyval_short(p, sp, KL_PY_MAX_SHOWN)));
  }
  if (!kl_pyval_string(p, &body, src_arg, 0)) {
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
  /* The build's choices are known now: the launches on their path may be exact. */
  for (size_t i = 0; i < em->calls.n; i++) {
    TSNode u = def->nuses ? def->uses[i] : c;
    TSNode g = kl_py_arg(p, u, "grid", -1);
    if (kl_node_null(g) && old) g = kl_py_arg(p, c, "grid", -1);
    kl_pypath_refine(p, &em->calls.items[i], u, g);
  }
  uint32_t anchor = ts_node_start_byte(src_arg);
  struct kl_py_buf out;
  kl_py_buf_init(&out, p->a);
  TSNode hdr_arg = old ? kl_py_null : kl_py_arg(p, c, "header", 4);
  if (!kl_node_null(hdr_arg)) {
    struct kl_py_buf hdr;
    kl_py_buf_init(&hdr, p->a);
    hdr.skeleton = true;
    if (kl_pyval_string(p, &hdr, hdr_arg, 0)) {
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
                 kl_pyval_value(p, &t, v, 0, 0, 0);
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
  /* Only a call whose callee ends in fn's name can reach it: each call's word is read once. */
  TSNode fname = kl_py_field(fn, "name");
  const char *fword = kl_node_null(fname) ? NULL : kl_py_text(p, fname);
  if (!ts_node_eq(fn, p->root) && !p->call_words) {
    p->call_words = kl_arena_alloc(p->a, (p->ncalls + 1) * sizeof *p->call_words);
    for (size_t i = 0; i < p->ncalls; i++) p->call_words[i] = kl_pyval_callee_word(p, p->calls[i]);
  }
  for (size_t i = 0; !ts_node_eq(fn, p->root) && i < p->ncalls; i++) {
    TSNode u = p->calls[i];
    if (!fword || !p->call_words[i] || strcmp(p->call_words[i], fword)) continue;
    if (!kl_pyval_reaches(p, u, fn)) continue;
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
    labels[nenv] = kl_arena_printf(p->a, "`%s` at line %u", kl_pyval_short(p, u, KL_PY_MAX_SHOWN),
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
    kl_pypath_refine(p, d, u, kl_py_arg(p, u, "threads", -1));
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
  bool ok = kl_pyval_string(p, &b, src_arg, 0);
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

/* ---- MLX calls tied to no kernel of the file ---- */

/* Whether call u reads as a launch of an MLX kernel: grid= and threadgroup= with the inputs or
 * outputs of one (directly or in a `**opts` it unpacks). A call that merely passes a
 * threadgroup= keyword is something else's. */
static bool kl_py_mlx_call_shape(struct kl_py *p, TSNode u) {
  if (kl_node_null(kl_py_arg(p, u, "grid", -1)) || kl_node_null(kl_py_arg(p, u, "threadgroup", -1)))
    return false;
  static const char *const io[] = {"inputs", "output_shapes", "output_dtypes"};
  for (size_t k = 0; k < sizeof io / sizeof io[0]; k++)
    if (!kl_node_null(kl_py_arg(p, u, io[k], -1))) return true;
  return false;
}

/* The MLX name of the kernel that name `var` holds at call u, or NULL. */
static const char *kl_py_held_kernel(struct kl_py *p, TSNode v, TSNode u, long *def) {
  v = kl_py_unparen(v);
  if (!kl_py_is(v, "identifier") && !kl_py_is(v, "attribute")) return NULL;
  long di = kl_py_owner(p, kl_py_text(p, v), u, false);
  if (di < 0) return NULL;
  *def = di;
  return kl_pyval_const_string(p, kl_py_arg(p, p->defs[di].call, "name", 0));
}

/* How a message names the kernel a call launches through a value that may hold one of several:
 * another name for one, `k = ka if c else kb`, a dict or list of kernels indexed at the call. Each
 * candidate is named when every one is a kernel of the file with a constant name; else NULL.
 * *only receives the kernel-making call's index in p->defs when every candidate is that one
 * kernel object, else -1. */
static const char *kl_py_candidates(struct kl_py *p, TSNode fn, TSNode u, long *only) {
  *only = -1;
  TSNode v = kl_py_null;
  if (kl_py_is(fn, "identifier")) {
    if (!kl_py_lookup(p, kl_py_text(p, fn), u, &v)) return NULL;
    v = kl_py_unparen(v);
  } else if (kl_py_is(fn, "subscript")) {
    v = kl_py_resolve(p, kl_py_field(fn, "value"));
  }
  TSNode c[16];
  uint32_t n = 0;
  if (kl_py_is(v, "identifier") || kl_py_is(v, "attribute")) {
    c[n++] = v; /* an alias: `kernel = _gla_kernel` */
  } else if (kl_py_is(v, "conditional_expression") && ts_node_named_child_count(v) == 3) {
    c[n++] = kl_node_named_child(v, 0);
    c[n++] = kl_node_named_child(v, 2);
  } else if (kl_py_is(v, "dictionary") || kl_py_is(v, "list") || kl_py_is(v, "tuple")) {
    bool dict = kl_py_is(v, "dictionary");
    for (uint32_t i = 0; i < ts_node_named_child_count(v); i++) {
      TSNode e = kl_node_named_child(v, i);
      if (kl_py_is(e, "comment")) continue;
      if (dict && !kl_py_is(e, "pair")) return NULL;
      if (n == 16) return NULL;
      c[n++] = dict ? kl_py_field(e, "value") : e;
    }
  }
  const char *out = NULL;
  long one = -1;
  for (uint32_t i = 0; i < n; i++) {
    long di = -1;
    const char *name = kl_py_held_kernel(p, c[i], u, &di);
    if (!name) return NULL;
    one = i == 0 || one == di ? di : -2;
    if (out && strstr(out, kl_arena_printf(p->a, "`%s`", name))) continue;
    out = kl_arena_printf(p->a, "%s%s`%s`", out ? out : "", out ? " or " : "", name);
  }
  if (one >= 0) *only = one;
  return out;
}

/* Calls that read as MLX launches but that no kernel of the file owns: the callable comes from
 * a conditional, a dict or cache, a getter, or another module. What the call itself says (its
 * grid and threadgroup) is still checked, as a launch of an unknown kernel. */
static void kl_py_orphans(struct kl_py *p) {
  for (size_t i = 0; i < p->ncalls; i++) {
    TSNode u = p->calls[i];
    bool owned = false;
    for (size_t di = 0; di < p->ndefs && !owned; di++) {
      const struct kl_py_def *def = &p->defs[di];
      owned = ts_node_eq(u, def->call);
      for (size_t k = 0; k < def->nuses && !owned; k++) owned = ts_node_eq(u, def->uses[k]);
    }
    if (owned || !kl_py_mlx_call_shape(p, u)) continue;
    TSNode fn = kl_py_unparen(kl_py_field(u, "function"));
    struct kl_dispatch *d = kl_dispatch_add(&p->out->calls);
    d->path = p->src->path;
    d->local = true;
    d->call = kl_py_span(p, fn);
    long only;
    const char *cand = kl_py_candidates(p, fn, u, &only);
    d->kernel_shown = cand ? cand
                           : kl_arena_printf(p->a, "an MLX kernel (`%s`)",
                                             kl_pyval_short(p, fn, KL_PY_MAX_SHOWN));
    if (only >= 0) {
      /* Every name the callable may hold is one kernel object: the call that makes it. */
      d->kernel_file = p->src->path;
      d->kernel_at = kl_py_span(p, kl_py_arg(p, p->defs[only].call, "name", 0));
    }
    kl_py_grid(p, d, kl_py_arg(p, u, "grid", -1));
    kl_py_threadgroup(p, d, kl_py_arg(p, u, "threadgroup", -1));
    /* A size a launch of a known kernel shares (`tg = (100, 1, 1)` used by both) is judged
     * there, in that kernel's words. */
    bool shared = false;
    for (size_t k = 0; k < p->out->nembeds && !shared; k++) {
      const struct kl_dispatch_list *l = &p->out->embeds[k].calls;
      for (size_t j = 0; j < l->n && !shared; j++)
        shared = l->items[j].tg_present && l->items[j].tg_span.start == d->tg_span.start;
    }
    if (shared) p->out->calls.n--;
  }
}

/* ---- entry ---- */

/* Whether an API name occurs as code (an identifier) rather than inside a string: a module
 * that only mentions the API in its documentation needs no walk of its tree. */
static bool kl_py_code_names_api(const char *text, TSNode root) {
  for (size_t k = 0; k < KL_PY_NAPI + 1; k++) {
    const char *api = k < KL_PY_NAPI ? kl_py_api_names[k] : kl_py_launch_word;
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
  for (size_t k = 0; k < KL_PY_NAPI + 1; k++) {
    const char *api = k < KL_PY_NAPI ? kl_py_api_names[k] : kl_py_launch_word;
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
  return kl_python_extract_kept(a, src, NULL, out, err, errlen);
}

int kl_python_extract_kept(struct kl_arena *a, const struct kl_source *src,
                           struct kl_dialect_kept *k, struct kl_python *out, char *err,
                           size_t errlen) {
  memset(out, 0, sizeof *out);
  kl_dispatch_list_init(&out->calls, a);
  /* Most Python files have no kernel; they cost a substring scan, not a parse. */
  if (!kl_py_names_api(src->text)) return 0;
  TSTree *tree =
      kl_dialect_parse_kept(kl_dialect_python(), KL_PY_PARSE_TIMEOUT_US, src->text, src->len, k);
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
  kl_py_orphans(&p);
  kl_node_tree_delete(tree);
  return 0;
}
