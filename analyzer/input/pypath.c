/* Divisibility facts on the path of a Python dispatch, and the grid dimensions they make exact.
 * A fact is `n % d == 0` (also `not n % d`, `n % d != 0` known false, through `and`, `not` and
 * the names that hold a test); it is taken from the tests that dominate the call (an enclosing
 * `if`, `elif` or `else`, an earlier `if ...: return` in an enclosing block), from those that
 * dominate the call making the kernel of this build, and from the build's choices (the branch of
 * `"true" if aligned else "i < n"` it took), a parameter's test read as the argument the
 * instance's call passes. */
#include "analyzer/input/pypath.h"

#include <string.h>

#include "analyzer/core/node.h"
#include "analyzer/input/pyval.h"

#define KL_PYPATH_MAX 16

struct kl_pypath {
  struct kl_dx *n[KL_PYPATH_MAX], *d[KL_PYPATH_MAX];
  size_t k;
};

/* How many times name is assigned in scope. */
static size_t kl_pypath_assigned(struct kl_py *p, const char *name, TSNode scope) {
  size_t n = 0;
  for (size_t i = 0; i < p->nasgs; i++)
    n += ts_node_eq(p->asgs[i].scope, scope) && !strcmp(p->asgs[i].target, name);
  return n;
}

/* Facts from test t when it is known to be truth, read under bindings env. */
static void kl_pypath_test(struct kl_py *p, TSNode t, bool truth, const struct kl_py_env *env,
                           struct kl_pypath *out, int depth) {
  t = kl_py_unparen(t);
  if (kl_node_null(t) || depth > KL_PY_MAX_DEPTH || out->k == KL_PYPATH_MAX) return;
  const struct kl_py_env *saved = p->env;
  p->env = env;
  if (kl_py_is(t, "identifier")) {
    const char *name = kl_py_text(p, t);
    TSNode v = kl_py_null;
    const struct kl_py_env *at = env;
    /* A parameter of the function the bindings are for: the argument, read where the call is. */
    if (env && !kl_node_null(env->call) && kl_py_is_param(p, env->fn, name) &&
        ts_node_start_byte(t) >= ts_node_start_byte(env->fn) &&
        ts_node_end_byte(t) <= ts_node_end_byte(env->fn)) {
      if (kl_py_param_value(p, env->fn, name, &v)) at = env->up;
    } else if (kl_pypath_assigned(p, name, kl_py_scope(p, t)) > 1 ||
               !kl_py_lookup(p, name, t, &v)) {
      /* A name assigned more than once may hold another test on some path to here (`ok = True`
       * in one branch, `ok = n % 8 == 0` in the other): the lookup takes one of them. */
      v = kl_py_null;
    }
    p->env = saved;
    if (!kl_node_null(v) && !ts_node_eq(v, t)) kl_pypath_test(p, v, truth, at, out, depth + 1);
    return;
  }
  if (kl_py_is(t, "not_operator")) {
    p->env = saved;
    kl_pypath_test(p, kl_py_field(t, "argument"), !truth, env, out, depth + 1);
    return;
  }
  if (kl_py_is(t, "boolean_operator")) {
    bool conj = kl_py_is(kl_py_field(t, "operator"), "and");
    p->env = saved;
    /* Both sides hold when `a and b` is true, and neither when `a or b` is false. */
    if (conj == truth) {
      kl_pypath_test(p, kl_py_field(t, "left"), truth, env, out, depth + 1);
      kl_pypath_test(p, kl_py_field(t, "right"), truth, env, out, depth + 1);
    }
    return;
  }
  TSNode mod = kl_py_null;
  if (kl_py_is(t, "comparison_operator") && ts_node_named_child_count(t) == 2 &&
      ts_node_child_count(t) == 3) {
    const char *op = ts_node_type(ts_node_child(t, 1));
    bool eq = !strcmp(op, "==");
    if ((eq && truth) || (!strcmp(op, "!=") && !truth)) {
      for (uint32_t s = 0; s < 2 && kl_node_null(mod); s++) {
        int64_t z;
        TSNode zero = kl_node_named_child(t, s),
               other = kl_py_unparen(kl_node_named_child(t, 1 - s));
        if (kl_dx_value(kl_pyval_dx(p, zero, 0), &z) && z == 0 &&
            kl_py_is(other, "binary_operator"))
          mod = other;
      }
    }
  } else if (kl_py_is(t, "binary_operator") && !truth) {
    mod = t; /* `if not n % d:` */
  }
  if (!kl_node_null(mod) && kl_py_is(kl_py_field(mod, "operator"), "%")) {
    struct kl_dx *n = kl_pyval_dx(p, kl_py_field(mod, "left"), 0);
    struct kl_dx *d = kl_pyval_dx(p, kl_py_field(mod, "right"), 0);
    int64_t v;
    if (n && d && !(kl_dx_value(d, &v) && v <= 0)) {
      out->n[out->k] = n;
      out->d[out->k++] = d;
    }
  }
  p->env = saved;
}

/* Whether statement s ends every way through it by leaving its block (return, raise, continue,
 * break). */
static bool kl_pypath_leaves(TSNode s) {
  if (kl_node_null(s)) return false;
  if (kl_py_is(s, "return_statement") || kl_py_is(s, "raise_statement") ||
      kl_py_is(s, "continue_statement") || kl_py_is(s, "break_statement"))
    return true;
  if (kl_py_is(s, "block")) {
    uint32_t k = ts_node_named_child_count(s);
    for (uint32_t i = k; i-- > 0;) {
      TSNode c = kl_node_named_child(s, i);
      if (kl_py_is(c, "comment")) continue;
      return kl_pypath_leaves(c);
    }
  }
  return false;
}

/* Whether any assignment (of any form: `=`, `+=`, a loop target) is made inside node n. */
static bool kl_pypath_assigns_in(const struct kl_py *p, TSNode n) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  for (size_t i = 0; i < p->nasgs; i++) {
    TSNode a = p->asgs[i].stmt;
    if (!kl_node_null(a) && ts_node_start_byte(a) >= s && ts_node_end_byte(a) <= e) return true;
  }
  return false;
}

/* Facts from the tests that dominate node u in its function, under bindings env. */
static void kl_pypath_dominators(struct kl_py *p, TSNode u, const struct kl_py_env *env,
                                 struct kl_pypath *out) {
  TSNode c = u;
  for (int depth = 0; depth < 64; depth++) {
    TSNode up = ts_node_parent(c);
    if (kl_node_null(up) || kl_py_is(up, "function_definition") || kl_py_is(up, "module") ||
        kl_py_is(up, "class_definition"))
      return;
    /* A loop that assigns any name may change the tested count between one trip's launch and
     * the next (`n = n + 1` after the call): the tests outside it say nothing here. */
    if ((kl_py_is(up, "for_statement") || kl_py_is(up, "while_statement")) &&
        kl_pypath_assigns_in(p, up))
      return;
    if (kl_py_is(up, "if_statement") || kl_py_is(up, "elif_clause")) {
      TSNode cond = kl_py_field(up, "condition");
      if (ts_node_eq(c, kl_py_field(up, "consequence"))) kl_pypath_test(p, cond, true, env, out, 0);
    }
    if (kl_py_is(up, "if_statement") &&
        (kl_py_is(c, "else_clause") || kl_py_is(c, "elif_clause"))) {
      /* Past the if's test and every elif before this clause, each false. */
      kl_pypath_test(p, kl_py_field(up, "condition"), false, env, out, 0);
      for (TSNode s = ts_node_prev_named_sibling(c); !kl_node_null(s);
           s = ts_node_prev_named_sibling(s))
        if (kl_py_is(s, "elif_clause"))
          kl_pypath_test(p, kl_py_field(s, "condition"), false, env, out, 0);
    }
    if (kl_py_is(up, "conditional_expression") && ts_node_named_child_count(up) == 3) {
      TSNode test = kl_node_named_child(up, 1);
      if (ts_node_eq(c, kl_node_named_child(up, 0))) kl_pypath_test(p, test, true, env, out, 0);
      if (ts_node_eq(c, kl_node_named_child(up, 2))) kl_pypath_test(p, test, false, env, out, 0);
    }
    if (kl_py_is(up, "block")) {
      /* `if not aligned: return ...` earlier in the block: its test is false here. */
      for (TSNode s = ts_node_prev_named_sibling(c); !kl_node_null(s);
           s = ts_node_prev_named_sibling(s))
        if (kl_py_is(s, "if_statement") && kl_node_null(kl_py_field(s, "alternative")) &&
            kl_pypath_leaves(kl_py_field(s, "consequence")))
          kl_pypath_test(p, kl_py_field(s, "condition"), false, env, out, 0);
    }
    c = up;
  }
}

void kl_pypath_refine(struct kl_py *p, struct kl_dispatch *d, TSNode use, TSNode grid) {
  if (kl_node_null(grid) || kl_node_null(use)) return;
  struct kl_pypath facts = {0};
  const struct kl_py_env *env = p->env;
  bool inside = env && ts_node_start_byte(use) >= ts_node_start_byte(env->fn) &&
                ts_node_end_byte(use) <= ts_node_end_byte(env->fn);
  kl_pypath_dominators(p, use, inside ? env : NULL, &facts);
  /* The call that made this build's kernel (a factory's instance), and the tests of the choices
   * it took; only from the dispatch's own function, where a name is the value the grid reads
   * (another function's `n` is another value). */
  TSNode scope = kl_py_scope(p, use);
  bool here = env && !kl_node_null(env->call) && ts_node_eq(kl_py_scope(p, env->call), scope);
  if (here && !ts_node_eq(env->call, use)) kl_pypath_dominators(p, env->call, env->up, &facts);
  unsigned nc = p->nchoices < p->nbits ? p->nchoices : p->nbits;
  for (unsigned k = 0; k < nc && k < KL_PY_MAX_CHOICES; k++) {
    /* A choice read under other bindings (a helper's, gone with its call) is not used. */
    if (p->choice_env[k] != env) continue;
    if (env ? !here : !ts_node_eq(kl_py_scope(p, p->choice_node[k]), scope)) continue;
    kl_pypath_test(p, p->choice_node[k], !((p->choice >> k) & 1u), env, &facts, 0);
  }
  p->env = env;
  if (!facts.k) return;
  struct kl_dx *dims[3];
  TSNode g = kl_py_resolve(p, grid);
  size_t n = 0;
  if (kl_py_is(g, "tuple") || kl_py_is(g, "list") || kl_py_is(g, "expression_list")) {
    uint32_t m = ts_node_named_child_count(g);
    for (uint32_t i = 0; i < m && n < 3; i++) {
      TSNode c = kl_node_named_child(g, i);
      if (!kl_py_is(c, "comment")) dims[n++] = kl_pyval_dx(p, c, 0);
    }
  } else {
    dims[n++] = kl_pyval_dx(p, g, 0);
  }
  for (size_t i = 0; i < n; i++) {
    int64_t tg = d->tg_dims & (1u << i) ? d->tg_size[i] : 0;
    if (!kl_dx_exact(dims[i], (const struct kl_dx *const *)facts.n,
                     (const struct kl_dx *const *)facts.d, facts.k, tg))
      continue;
    d->grid_exact |= (uint8_t)(1u << i);
    d->grid_dims &= (uint8_t) ~(1u << i);
  }
  if (!d->grid_dims) d->grid_rounded = false;
}
