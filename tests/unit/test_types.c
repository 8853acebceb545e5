/* Unit tests for the types of expressions (analyzer/core/types.c): which operations compute in
 * bfloat under a template binding, and which only convert. */
#include <string.h>

#include "analyzer/core/model.h"
#include "analyzer/input/source.h"
#include "analyzer/core/types.h"

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
  struct kl_types_env env = {a, &types, &unit, f, &b, math, NULL};
  struct ops o = {&env, ""};
  if (f) kl_dialect_walk(f->body, visit, &o, NULL);
  kl_dialect_release(&unit);
  return kl_arena_strdup(a, o.found);
}

/* What the questions of one text need: its unit, model and types, kernel k (or NULL). */
struct loaded {
  struct kl_unit unit;
  struct kl_model m;
  struct kl_types types;
  const struct kl_function *k;
};

/* Parse text into t; false on a parse error. */
static bool load(struct kl_arena *a, const char *text, struct loaded *t) {
  char err[256];
  struct kl_source src;
  if (kl_source_from_memory(a, "t.metal", text, strlen(text), &src, err, sizeof err) != 0 ||
      kl_dialect_parse(a, &src, src.text, src.len, NULL, NULL, &t->unit, err, sizeof err) != 0)
    return false;
  kl_model_build(a, &t->unit, &t->m);
  kl_types_collect(a, &t->unit, &t->types);
  t->k = kl_model_function(&t->m, "k");
  return true;
}

/* Where kernel k of text computes in bfloat: "call|op" as source text, or "" for nowhere; walks
 * receives how many function bodies the answer took. */
static const char *bf_site(struct kl_arena *a, const char *text, size_t *walks) {
  struct loaded t;
  if (!load(a, text, &t)) return "parse error";
  const struct kl_function *k = t.k;
  struct kl_types_bfloat c = {.a = a, .m = &t.m, .types = &t.types, .math_builtins = true};
  struct kl_types_bfloat_site site;
  const char *got = "";
  if (!k)
    got = "no kernel";
  else if (kl_types_bfloat_computes(&c, k, NULL, &site))
    got = kl_arena_printf(a, "%s|%s", kl_dialect_node_text(a, &t.unit, site.at),
                          kl_dialect_node_text(a, &t.unit, site.op));
  *walks = c.walks;
  kl_types_bfloat_free(&c);
  kl_dialect_release(&t.unit);
  return got;
}

/* Whether kernel k of text computes in bfloat under each of the binding sets in sets ("T=bfloat
 * N=4|T=half N=4"), asked in turn of one memo: "1" or "0" per set, then ":" and the bodies
 * walked. */
static const char *bf_sets(struct kl_arena *a, const char *text, const char *sets) {
  struct loaded t;
  if (!load(a, text, &t)) return "parse error";
  const struct kl_function *k = t.k;
  struct kl_types_bfloat c = {.a = a, .m = &t.m, .types = &t.types, .math_builtins = true};
  const char *got = "";
  for (const char *p = sets; k && *p;) {
    struct kl_binding *items = kl_arena_alloc(a, 8 * sizeof *items);
    struct kl_bindings b = {.items = items};
    while (*p && *p != '|' && b.n < 8) {
      const char *eq = strchr(p, '='), *end = eq + strcspn(eq, " |");
      items[b.n].name = kl_arena_strndup(a, p, (size_t)(eq - p));
      items[b.n++].type = kl_arena_strndup(a, eq + 1, (size_t)(end - eq - 1));
      p = *end == ' ' ? end + 1 : end;
    }
    if (*p == '|') p++;
    struct kl_types_bfloat_site site;
    got = kl_arena_printf(a, "%s%d", got, kl_types_bfloat_computes(&c, k, &b, &site));
  }
  got = k ? kl_arena_printf(a, "%s:%zu", got, c.walks) : "no kernel";
  kl_types_bfloat_free(&c);
  kl_dialect_release(&t.unit);
  return got;
}

/* The aliases kl_types_collect finds in text, "name=type" ';'-separated, and whether the parse
 * kept errors. */
static const char *aliases(struct kl_arena *a, const char *text, bool *errors) {
  struct loaded t;
  if (!load(a, text, &t)) return "parse error";
  *errors = t.unit.nerrors > 0;
  const char *got = "";
  for (size_t i = 0; i < t.types.n; i++)
    got = kl_arena_printf(a, "%s%s=%s;", got, t.types.aliases[i].name, t.types.aliases[i].type);
  kl_dialect_release(&t.unit);
  return got;
}

/* Aliases at file scope, in a namespace, a struct and a function body are found, as in a tree
 * with errors; words that merely contain the keywords find nothing. */
static void test_collect(struct kl_arena *a) {
  const char *t = "namespace n { typedef float f32; }\n"
                  "struct S { using T = half; int typedef_count; };\n"
                  "kernel void k(device float* y, uint i) {\n"
                  "  int usings = 1;\n"
                  "  if (i) { using V = float4; y[i] = V(usings).x; }\n"
                  "}\n"
                  "using U = uint;\n";
  bool errors = true;
  check_str("aliases everywhere", aliases(a, t, &errors), "f32=float;T=half;V=float4;U=uint;");
  check("a clean parse", !errors, "errors");
  const char *e = "kernel void k(device float* y) {\n"
                  "  using V = float4;\n"
                  "  y[0] = ) V(1).x;\n"
                  "}\n"
                  "typedef uint W;\n";
  check_str("aliases in a tree with errors", aliases(a, e, &errors), "V=float4;W=uint;");
  check("the parse kept errors", errors, "no errors");
  check_str("no keyword, no aliases", aliases(a, "kernel void k() { int used = 0; }\n", &errors),
            "");
}

/* The template spellings of MSL types take their arguments from the bindings and aliases
 * (`simdgroup_matrix<T, 8, 8>` is simdgroup_half8x8 for T = half); a struct template's are not
 * touched. */
static void test_template_spelling(struct kl_arena *a) {
  struct kl_types t = {0};
  struct kl_alias al[] = {{"acc_t", "half"}, {"R", "4"}};
  t.aliases = al;
  t.n = 2;
  struct kl_binding bind[] = {{"T", "half"}, {"N", "8"}};
  struct kl_bindings b = {.items = bind, .n = 2};
  const struct kl_msl_type *m = kl_types_builtin(a, &t, "simdgroup_matrix<T, N, 8>", &b);
  check_str("simdgroup_matrix of a bound T", m ? m->name : "none", "simdgroup_half8x8");
  m = kl_types_builtin(a, &t, "vec<acc_t, R>", NULL);
  check_str("vec of aliases", m ? m->name : "none", "half4");
  check_str("struct template untouched", kl_types_resolve(a, &t, "Tile<T, 8>", &b), "Tile<T,8>");
  check("unbound T stays unknown", !kl_types_builtin(a, &t, "simdgroup_matrix<T, 8, 8>", NULL),
        "resolved");
}

/* The sets kl_types_xinstances gathers from instantiations read in other files, spelt
 * "types=names|..." in order: the same types are one set, each name once. */
static const char *x_sets(struct kl_arena *a) {
  const char *tparams[] = {"T", "N"};
  const char *tdefaults[] = {NULL, "4"};
  size_t tpos[] = {0, 1};
  struct kl_function f = {.name = "k", .tparams = tparams, .tdefaults = tdefaults,
                          .tpos = tpos, .ntparams = 2};
  const char *h1[] = {"half", "8"}, *h2[] = {"const half", "8"}, *b1[] = {"bfloat"},
             *f1[] = {"float", "8"};
  struct kl_inst in[] = {
      {.function = "k", .host_name = "k_h8", .targs = h1, .ntargs = 2},
      {.function = "other", .host_name = "o", .targs = h1, .ntargs = 2},
      {.function = "k", .host_name = "k_b", .targs = b1, .ntargs = 1},
      {.function = "k", .host_name = "k_h8_again", .targs = h2, .ntargs = 2},
      {.function = "k", .host_name = "k_h8", .targs = h1, .ntargs = 2},
      {.function = "k", .host_name = NULL, .targs = f1, .ntargs = 2},
      {.function = "k", .host_name = "k_b2", .targs = b1, .ntargs = 1},
  };
  struct kl_bindings *sets;
  size_t n = kl_types_xinstances(a, &f, in, sizeof in / sizeof in[0], &sets);
  const char *out = "";
  for (size_t s = 0; s < n; s++) {
    out = kl_arena_printf(a, "%s%s", out, s ? "|" : "");
    for (size_t k = 0; k < sets[s].n; k++)
      out = kl_arena_printf(a, "%s%s%s", out, k ? "," : "", sets[s].items[k].type);
    out = kl_arena_printf(a, "%s=", out);
    for (size_t k = 0; k < sets[s].nnames; k++)
      out = kl_arena_printf(a, "%s%s%s", out, k ? "," : "", sets[s].names[k]);
  }
  return out;
}

int main(void) {
  struct kl_arena *a = kl_arena_new();
  test_collect(a);
  test_template_spelling(a);
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
                      "  y[i] = max(a, y[i + 1]) + q.x;\n" /* max is float: float + bfloat */
                      "  y[i] = exp(a);\n"                 /* computed in float */
                      "  y[i] = a * q.x;\n"
                      "}\n";
  /* MSL has no bfloat overloads of its math builtins: on bfloat they compute in float. */
  check_str("types-alias-vector-math", bf_ops(a, alias, "k", NULL, true), "a * q.x;");
  check_str("types-math-off", bf_ops(a, alias, "k", NULL, false), "a * q.x;");

  /* Seven helpers, each calling the next six times: every one is walked once, not 6^6 times. */
  const char *fan = "float h0(float x) { return x * 2.0f; }\n"
                    "float h1(float x) { return h0(x)+h0(x)+h0(x)+h0(x)+h0(x)+h0(x); }\n"
                    "float h2(float x) { return h1(x)+h1(x)+h1(x)+h1(x)+h1(x)+h1(x); }\n"
                    "float h3(float x) { return h2(x)+h2(x)+h2(x)+h2(x)+h2(x)+h2(x); }\n"
                    "float h4(float x) { return h3(x)+h3(x)+h3(x)+h3(x)+h3(x)+h3(x); }\n"
                    "float h5(float x) { return h4(x)+h4(x)+h4(x)+h4(x)+h4(x)+h4(x); }\n"
                    "float h6(float x) { return h5(x)+h5(x)+h5(x)+h5(x)+h5(x)+h5(x); }\n"
                    "kernel void k(device float* y, uint i) { y[i] = h6(y[i]) + h6(1.0f); }\n";
  size_t walks = 0;
  check_str("types-bfloat-fan-out", bf_site(a, fan, &walks), "");
  check_int("types-bfloat-fan-out-walks", (long)walks, 8);
  /* Through helpers, one taking T from its argument: the call in k, and the operation. */
  const char *chain = "template <typename T> T sq(T v) { return v * v; }\n"
                      "bfloat h1(bfloat x) { return sq(x); }\n"
                      "bfloat h2(bfloat x) { return h1(x); }\n"
                      "kernel void k(device bfloat* y, uint i) {\n"
                      "  float s = float(y[i]);\n"
                      "  y[i] = h2(y[i]);\n"
                      "}\n";
  check_str("types-bfloat-through-helpers", bf_site(a, chain, &walks), "h2(y[i])|v * v");
  check_int("types-bfloat-through-helpers-walks", (long)walks, 4);
  /* A cycle (no MSL program has one; a model that confuses two functions may) stops. */
  const char *cycle = "float f(float x);\n"
                      "float g(float x) { return f(x) + g(x); }\n"
                      "float f(float x) { return g(x); }\n"
                      "kernel void k(device bfloat* y, uint i) {\n"
                      "  y[i] = bfloat(f(float(y[i])));\n"
                      "}\n";
  check_str("types-bfloat-cycle", bf_site(a, cycle, &walks), "");
  check_int("types-bfloat-cycle-walks", (long)walks, 3);
  /* Bindings that differ only where no type is resolved (a size) share a walk, its helper's
   * included; one that names a type the walk resolves (U) does not. */
  const char *sized = "template <typename T, short N> T sq(T v) { return v * T(N); }\n"
                      "template <typename T, short N, typename U>\n"
                      "kernel void k(device T* y, uint i) {\n"
                      "  U a = U(y[i * N]);\n"
                      "  y[i] = T(a * a) + sq<T, 4>(y[i]);\n"
                      "}\n";
  check_str("types-bfloat-shared-walks",
            bf_sets(a, sized,
                    "T=half N=4 U=float|T=half N=8 U=float|T=half N=8 U=bfloat|"
                    "T=bfloat N=2 U=float|T=bfloat N=4 U=float|T=half N=2 U=float"),
            "001110:5");
  /* A functor call runs the declaration in scope at the call: not a later one of that name
   * (1), nor an outer one an inner block shadows (0), nor one of a block already closed (0). */
  const char *functors = "template <typename U> struct Mul {\n"
                         "  U operator()(U a, U b) const thread { return a * b; }\n"
                         "};\n"
                         "struct Widen {\n"
                         "  float operator()(float a, float b) const thread { return a * b; }\n"
                         "};\n"
                         "template <typename T, typename Op>\n"
                         "kernel void k(device T* y, device float* z, uint i) {\n"
                         "  { Op op; y[i] = op(y[i], y[i]); }\n"
                         "  Widen op;\n"
                         "  z[i] = op(z[i], 2.0f);\n"
                         "}\n";
  check_str("types-bfloat-functor-scope-later", bf_sets(a, functors, "T=bfloat Op=Mul<bfloat>"),
            "1:2");
  const char *inner = "template <typename U> struct Mul {\n"
                      "  U operator()(U a, U b) const thread { return a * b; }\n"
                      "};\n"
                      "struct Widen {\n"
                      "  float operator()(float a, float b) const thread { return a * b; }\n"
                      "};\n"
                      "template <typename T, typename Op>\n"
                      "kernel void k(device T* y, device float* z, uint i) {\n"
                      "  Op op;\n"
                      "  { Widen op; z[i] = op(z[i], 2.0f); }\n"
                      "  { Op f; }\n"
                      "  y[i] = T(float(y[i]) * 2.0f);\n"
                      "}\n";
  check_str("types-bfloat-functor-scope-inner", bf_sets(a, inner, "T=bfloat Op=Mul<bfloat>"),
            "0:2");
  check_str("types-xinstances-gathered", x_sets(a),
            "half,8=k_h8,k_h8_again|bfloat,4=k_b,k_b2|float,8=k<...>");
  kl_arena_delete(a);
  return failures ? 1 : 0;
}
