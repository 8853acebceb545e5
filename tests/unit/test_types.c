/* Unit tests for the types of expressions (analyzer/types.c): which operations compute in
 * bfloat under a template binding, and which only convert. */
#include <string.h>

#include "analyzer/model.h"
#include "analyzer/source.h"
#include "analyzer/types.h"

#include "tests/unit/kl_test.h"

struct ops {
  struct kl_types_env *env;
  char found[256]; /* the source text of each bfloat operation, ';'-separated */
};

static enum kl_walk visit(TSNode n, void *ctx) {
  struct ops *o = ctx;
  if (!kl_types_bfloat_op(o->env, n)) return KL_WALK_DESCEND;
  const char *t = kl_dialect_node_text(o->env->a, o->env->unit, n);
  size_t have = strlen(o->found);
  if (have + strlen(t) + 2 < sizeof o->found) {
    strcat(o->found, t);
    strcat(o->found, ";");
  }
  return KL_WALK_SKIP;
}

/* The bfloat operations of function fn in text, with T bound to type (NULL: unbound). */
static const char *bf_ops(struct kl_arena *a, const char *text, const char *fn, const char *type,
                          bool math) {
  char err[256];
  struct kl_source src;
  struct kl_unit unit;
  if (kl_source_from_memory(a, "t.metal", text, strlen(text), &src, err, sizeof err) != 0 ||
      kl_dialect_parse(a, &src, src.text, src.len, NULL, NULL, &unit, err, sizeof err) != 0)
    return "parse error";
  struct kl_model m;
  kl_model_build(a, &unit, &m);
  struct kl_types types;
  kl_types_collect(a, &unit, &types);
  const struct kl_function *f = kl_model_function(&m, fn);
  struct kl_binding bind = {"T", type};
  struct kl_bindings b = {.items = &bind, .n = type ? 1 : 0};
  struct kl_types_env env = {a, &types, &unit, f, &b, math};
  struct ops o = {&env, ""};
  if (f) kl_dialect_walk(f->body, visit, &o, NULL);
  kl_dialect_release(&unit);
  return kl_arena_strdup(a, o.found);
}

int main(void) {
  struct kl_arena *a = kl_arena_new();
  const char *k = "template <typename T>\n"
                  "kernel void k(device const T* x, device T* y, constant float& s, uint i) {\n"
                  "  T v = x[i];\n"
                  "  float acc = 0.0f;\n"
                  "  acc += x[i] * s;\n" /* bfloat with float: float */
                  "  acc += float(v);\n" /* a conversion */
                  "  y[i] = v * T(2);\n" /* bfloat by bfloat */
                  "  y[i] += -v;\n"      /* compound, and a unary minus */
                  "  y[i] = T(acc);\n"
                  "}\n";
  check_str("types-bfloat-ops", bf_ops(a, k, "k", "bfloat", false), "v * T(2);y[i] += -v;");
  check_str("types-half-no-ops", bf_ops(a, k, "k", "half", false), "");
  check_str("types-unbound-no-ops", bf_ops(a, k, "k", NULL, false), "");
  const char *alias = "typedef bfloat bf16_t;\n"
                      "kernel void k(device bf16_t* y, uint i) {\n"
                      "  bf16_t a = y[i];\n"
                      "  bfloat4 q = bfloat4(a);\n"
                      "  y[i] = max(a, y[i + 1]) + q.x;\n"
                      "}\n";
  check_str("types-alias-vector-math", bf_ops(a, alias, "k", NULL, true),
            "max(a, y[i + 1]) + q.x;");
  check_str("types-math-off", bf_ops(a, alias, "k", NULL, false), "");
  kl_arena_delete(a);
  return failures ? 1 : 0;
}
