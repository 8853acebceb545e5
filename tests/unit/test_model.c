/* Unit tests for the kernel model: functions, kernels, parameters in every address space,
 * locals, attributes, template parameters, explicit instantiations and callees. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/core/model.h"
#include "analyzer/input/source.h"

#include "tests/unit/kl_test_unit.h"

static int build(struct fixture *fx, const char *text) {
  return kl_test_unit_build(fx, "model parse", text);
}

static void release(struct fixture *fx) {
  kl_test_unit_release(fx);
}

/* Check one variable's fields: "name type as const ptr ref dims attr index". */
static void check_var(const char *label, const struct kl_var *v, const char *type,
                      enum kl_addrspace as, int is_const, int is_ptr, int is_ref, const char *dims,
                      const char *attr, int index) {
  char n[128];
  if (!v) {
    check(label, 0, "not found");
    return;
  }
  snprintf(n, sizeof n, "%s type", label);
  check_str(n, v->type, type);
  snprintf(n, sizeof n, "%s address space", label);
  check_str(n, kl_model_addrspace_name(v->as), kl_model_addrspace_name(as));
  snprintf(n, sizeof n, "%s const/pointer/reference", label);
  check(n, v->is_const == is_const && v->is_pointer == is_ptr && v->is_reference == is_ref,
        "got const=%d pointer=%d reference=%d", v->is_const, v->is_pointer, v->is_reference);
  snprintf(n, sizeof n, "%s array dims", label);
  check_str(n, v->array_dims, dims);
  snprintf(n, sizeof n, "%s attribute", label);
  check_str(n, v->attr, attr);
  snprintf(n, sizeof n, "%s attribute index", label);
  check_int(n, v->attr_index, index);
  snprintf(n, sizeof n, "%s name node", label);
  check(n, !ts_node_is_null(v->name_node), "null");
}

static void test_kernel_params(void) {
  static const char text[] = "#include <metal_stdlib>\n"
                             "using namespace metal;\n"
                             "struct Params { uint n; };\n"
                             "[[max_total_threads_per_threadgroup(32 * 8)]]\n"
                             "kernel void k(device const float* in [[buffer(0)]],\n"
                             "              const device half4* in4 [[buffer(1)]],\n"
                             "              device float* out [[buffer(2)]],\n"
                             "              constant Params& p [[buffer(3)]],\n"
                             "              constant float* table [[buffer(4)]],\n"
                             "              threadgroup float* scratch [[threadgroup(0)]],\n"
                             "              device atomic_uint* counter [[buffer(5)]],\n"
                             "              uint2 gid [[thread_position_in_grid]],\n"
                             "              ushort lid [[thread_index_in_threadgroup]],\n"
                             "              uint tg [[threadgroup_position_in_grid]]) {\n"
                             "  threadgroup float tile[32][33];\n"
                             "  threadgroup atomic_uint hits;\n"
                             "  float acc = 0.0f, partial[4];\n"
                             "  thread float& r = acc;\n"
                             "  for (uint i = gid.x; i < p.n; i += 32) acc += in[i];\n"
                             "  out[gid.x] = acc;\n"
                             "}\n";
  struct fixture fx;
  if (build(&fx, text) != 0) return;
  const struct kl_function *k = kl_model_function(&fx.model, "k");
  check("kernel found", k != NULL, "no function k");
  if (!k) {
    release(&fx);
    return;
  }
  check("kernel keyword makes a kernel", k->is_kernel, "is_kernel false");
  check_int("kernel params", (long)k->nparams, 10);
  check_var("device const float*", kl_model_var(k, "in"), "float", KL_AS_DEVICE, 1, 1, 0, NULL,
            "buffer", 0);
  check_var("const device half4*", kl_model_var(k, "in4"), "half4", KL_AS_DEVICE, 1, 1, 0, NULL,
            "buffer", 1);
  check_var("device float*", kl_model_var(k, "out"), "float", KL_AS_DEVICE, 0, 1, 0, NULL, "buffer",
            2);
  check_var("constant struct&", kl_model_var(k, "p"), "Params", KL_AS_CONSTANT, 0, 0, 1, NULL,
            "buffer", 3);
  check_var("constant float*", kl_model_var(k, "table"), "float", KL_AS_CONSTANT, 0, 1, 0, NULL,
            "buffer", 4);
  check_var("threadgroup float*", kl_model_var(k, "scratch"), "float", KL_AS_THREADGROUP, 0, 1, 0,
            NULL, "threadgroup", 0);
  check_var("device atomic*", kl_model_var(k, "counter"), "atomic_uint", KL_AS_DEVICE, 0, 1, 0,
            NULL, "buffer", 5);
  check_var("thread position", kl_model_var(k, "gid"), "uint2", KL_AS_NONE, 0, 0, 0, NULL,
            "thread_position_in_grid", -1);
  check_var("thread index", kl_model_var(k, "lid"), "ushort", KL_AS_NONE, 0, 0, 0, NULL,
            "thread_index_in_threadgroup", -1);
  const struct kl_var *gid = kl_model_var(k, "gid");
  const struct kl_var *tg = kl_model_var(k, "tg");
  const struct kl_var *in = kl_model_var(k, "in");
  if (gid && tg && in) {
    check("thread coordinate from the catalogue",
          gid->coord != NULL && !strcmp(gid->coord->name, "thread_position_in_grid") &&
              gid->coord->scope == KL_SCOPE_THREAD,
          "coord %s", gid->coord ? gid->coord->name : "(null)");
    check("threadgroup position is threadgroup-uniform",
          tg->coord != NULL && tg->coord->scope == KL_SCOPE_THREADGROUP, "coord missing or wrong");
    check("a buffer is not a coordinate", in->coord == NULL, "coord set");
  }
  check_var("threadgroup 2-D array", kl_model_var(k, "tile"), "float", KL_AS_THREADGROUP, 0, 0, 0,
            "[32][33]", NULL, -1);
  check_var("threadgroup atomic", kl_model_var(k, "hits"), "atomic_uint", KL_AS_THREADGROUP, 0, 0,
            0, NULL, NULL, -1);
  check_var("local scalar", kl_model_var(k, "acc"), "float", KL_AS_NONE, 0, 0, 0, NULL, NULL, -1);
  check_var("second declarator", kl_model_var(k, "partial"), "float", KL_AS_NONE, 0, 0, 0, "[4]",
            NULL, -1);
  check_var("thread reference", kl_model_var(k, "r"), "float", KL_AS_THREAD, 0, 0, 1, NULL, NULL,
            -1);
  check_var("loop variable", kl_model_var(k, "i"), "uint", KL_AS_NONE, 0, 0, 0, NULL, NULL, -1);
  check_int("locals in source order", (long)k->nlocals, 6);
  if (k->nlocals == 6) {
    check_str("first local", k->locals[0].name, "tile");
    check_str("last local", k->locals[5].name, "i");
  }
  check_int("threadgroup declarations", (long)k->ntg_decls, 3);
  if (k->ntg_decls == 3) {
    check_str("threadgroup parameter first", k->tg_decls[0].name, "scratch");
    check_str("threadgroup local", k->tg_decls[1].name, "tile");
  }
  const struct kl_attr *mt = kl_model_attr(k, "max_total_threads_per_threadgroup");
  check("max_total_threads attribute", mt != NULL, "missing");
  if (mt) {
    check_str("max_total_threads argument", mt->arg, "32 * 8");
    check("max_total_threads argument node",
          !ts_node_is_null(mt->arg_node) &&
              !strcmp(ts_node_type(mt->arg_node), "binary_expression"),
          "type %s", ts_node_is_null(mt->arg_node) ? "(null)" : ts_node_type(mt->arg_node));
  }
  check("missing attribute", kl_model_attr(k, "host_name") == NULL, "found");
  check("missing variable", kl_model_var(k, "nothing") == NULL, "found");
  check_str("function body", ts_node_type(k->body), "compound_statement");
  check_str("function name node", ts_node_type(k->name_node), "identifier");
  release(&fx);
}

static void test_templates_and_instances(void) {
  static const char text[] =
      "#include <metal_stdlib>\n"
      "using namespace metal;\n"
      "template <typename T, int N, typename U = float>\n"
      "[[kernel]] void scale(device T* x [[buffer(0)]],\n"
      "                      uint i [[thread_position_in_grid]])\n"
      "    [[max_total_threads_per_threadgroup(N)]] {\n"
      "  x[i] = T(U(x[i]) * U(N));\n"
      "}\n"
      "template [[host_name(\"scale_f16_4\")]] [[kernel]] decltype(scale<half, 4>) "
      "scale<half, 4>;\n"
      "template [[host_name(\"scale_f32_8\")]] [[kernel]] void scale<float, 8>(device float*, "
      "uint);\n"
      "namespace detail {\n"
      "template <typename T> T twice(T v) { return v + v; }\n"
      "}\n";
  struct fixture fx;
  if (build(&fx, text) != 0) return;
  const struct kl_function *f = kl_model_function(&fx.model, "scale");
  check("templated kernel found", f != NULL, "no function scale");
  if (f) {
    check("[[kernel]] attribute makes a kernel", f->is_kernel, "is_kernel false");
    check_int("template parameters", (long)f->ntparams, 3);
    if (f->ntparams == 3) {
      check_str("type parameter", f->tparams[0], "T");
      check_str("value parameter", f->tparams[1], "N");
      check_str("defaulted parameter", f->tparams[2], "U");
    }
    check_str("templated node is the template_declaration", ts_node_type(f->node),
              "template_declaration");
    const struct kl_attr *mt = kl_model_attr(f, "max_total_threads_per_threadgroup");
    check("trailing attribute", mt && mt->arg && !strcmp(mt->arg, "N"), "missing or wrong");
    check_var("template-typed buffer", kl_model_var(f, "x"), "T", KL_AS_DEVICE, 0, 1, 0, NULL,
              "buffer", 0);
  }
  check_int("explicit instantiations", (long)fx.model.ninstances, 2);
  if (fx.model.ninstances == 2) {
    const struct kl_instance *a = &fx.model.instances[0], *b = &fx.model.instances[1];
    check_str("decltype instantiation function", a->function, "scale");
    check_str("decltype instantiation host name", a->host_name, "scale_f16_4");
    check("decltype instantiation arguments",
          a->ntargs == 2 && !strcmp(a->targs[0], "half") && !strcmp(a->targs[1], "4"),
          "got %zu arguments", a->ntargs);
    check_str("signature instantiation host name", b->host_name, "scale_f32_8");
    check("signature instantiation arguments",
          b->ntargs == 2 && !strcmp(b->targs[0], "float") && !strcmp(b->targs[1], "8"),
          "got %zu arguments", b->ntargs);
  }
  const struct kl_function *t = kl_model_function(&fx.model, "twice");
  check("function template in a namespace", t != NULL && !t->is_kernel && t->ntparams == 1,
        "missing or wrong");
  release(&fx);
}

static void test_callees_and_scopes(void) {
  static const char text[] =
      "#include <metal_stdlib>\n"
      "using namespace metal;\n"
      "static inline float sq(float v) { return v * v; }\n"
      "float norm2(float2 v) { return sq(v.x) + sq(v.y); }\n"
      "#if defined(USE_FAST)\n"
      "float fast(float v) { return v; }\n"
      "#else\n"
      "float slow(float v) { return sq(v); }\n"
      "#endif\n"
      "extern \"C\" { float plain(float v) { return v; } }\n"
      "struct Op { float operator()(float a) const { return a; } };\n"
      "kernel void k(device float2* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  float a = norm2(x[i]) + sq(1.0f) + norm2(x[0]) + slow(2.0f);\n"
      "  if (i == 0) { float a = Op{}(plain(a)); x[0].x = metal::sqrt(a); }\n"
      "}\n"
      "vertex float4 vs(uint vid [[vertex_id]]) { return float4(0.0f); }\n";
  struct fixture fx;
  if (build(&fx, text) != 0) return;
  const char *names[] = {"sq", "norm2", "fast", "slow", "plain", "k", "vs"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char n[64];
    snprintf(n, sizeof n, "function %s found", names[i]);
    check(n, kl_model_function(&fx.model, names[i]) != NULL, "missing");
  }
  const struct kl_function *k = kl_model_function(&fx.model, "k");
  const struct kl_function *vs = kl_model_function(&fx.model, "vs");
  const struct kl_function *sq = kl_model_function(&fx.model, "sq");
  check("helpers are not kernels", sq && !sq->is_kernel, "sq marked kernel");
  check("a vertex function is not a kernel", vs && !vs->is_kernel, "vs marked kernel");
  if (k) {
    check("kernel is a kernel", k->is_kernel, "not marked");
    check_int("callees, each once, same file only", (long)k->ncallees, 4);
    int seen = 0;
    for (size_t i = 0; i < k->ncallees; i++) {
      if (!strcmp(k->callees[i], "norm2")) seen |= 1;
      if (!strcmp(k->callees[i], "sq")) seen |= 2;
      if (!strcmp(k->callees[i], "slow")) seen |= 4;
      if (!strcmp(k->callees[i], "plain")) seen |= 8;
    }
    check("callee names", seen == 15, "got mask %d", seen);
    const struct kl_var *a = kl_model_var(k, "a");
    check("innermost declaration wins", a && k->nlocals == 2 && a == &k->locals[1],
          "got %p of %zu locals", (const void *)a, k->nlocals);
  }
  const struct kl_function *n2 = kl_model_function(&fx.model, "norm2");
  check("helper callees", n2 && n2->ncallees == 1 && !strcmp(n2->callees[0], "sq"),
        "wrong callees");
  bool same = k != NULL;
  for (size_t i = 0; k && i < k->ncallees; i++)
    same = same &&
           &fx.model.functions[k->callee_index[i]] == kl_model_function(&fx.model, k->callees[i]);
  check("callee indices name the callees", same, "an index names another function");
  release(&fx);
}

/* Layers of helpers, each calling every helper of the next layer: a search that repeats what it
 * already searched walks 5^7 call paths; the reduction sits at the last helper it tries, exactly
 * KL_MODEL_MAX_CALL_DEPTH calls below the kernel and one call too deep below `outer`. */
static void test_reduction_fan_out(void) {
  enum { LAYERS = KL_MODEL_MAX_CALL_DEPTH, WIDTH = 5 };
  static char text[16384];
  size_t o = 0;
  for (int l = LAYERS - 1; l >= 0; l--) {
    for (int w = 0; w < WIDTH; w++) {
      o += (size_t)snprintf(text + o, sizeof text - o, "float h%d_%d(float v) {\n", l, w);
      for (int c = 0; l + 1 < LAYERS && c < WIDTH; c++)
        o += (size_t)snprintf(text + o, sizeof text - o, "  v += h%d_%d(v);\n", l + 1, c);
      if (l == LAYERS - 1 && w == WIDTH - 1)
        o += (size_t)snprintf(text + o, sizeof text - o, "  v = simd_max(v);\n");
      o += (size_t)snprintf(text + o, sizeof text - o, "  return v;\n}\n");
    }
  }
  snprintf(text + o, sizeof text - o,
           "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           "  x[i] = h0_0(x[i]);\n}\n"
           "float mid(float v) { return h0_0(v); }\n"
           "float outer(float v) { return mid(v); }\n");
  struct fixture fx;
  if (build(&fx, text) != 0) return;
  const struct kl_function *k = kl_model_function(&fx.model, "k");
  const struct kl_function *outer = kl_model_function(&fx.model, "outer");
  check_str("reduction at the call depth limit, through fan-out",
            k ? kl_model_simd_reduction(fx.a, &fx.model, k) : NULL, "simd_max");
  check_str("reduction past the call depth limit, through fan-out",
            outer ? kl_model_simd_reduction(fx.a, &fx.model, outer) : "no outer", NULL);
  release(&fx);
}

/* The name inside a callee or declarator, however it is qualified or templated. */
static void test_name_of(void) {
  struct fixture fx;
  if (build(&fx, "void f() { metal::simd_sum(1.0f); ::metal::g<int>(2); h(3); }\n") != 0) return;
  const struct kl_function *f = kl_model_function(&fx.model, "f");
  static const char *const want[] = {"simd_sum", "g", "h"};
  size_t n = 0;
  for (uint32_t i = 0; f && i < ts_node_named_child_count(f->body) && n < 3; i++) {
    TSNode call = ts_node_named_child(ts_node_named_child(f->body, i), 0);
    TSNode name = kl_model_name_of(ts_node_child_by_field_name(call, "function", 8));
    char label[64];
    snprintf(label, sizeof label, "name of callee %zu", n);
    check_str(label, kl_dialect_node_text(fx.a, &fx.unit, name), want[n++]);
  }
  check_int("callees named", (long)n, 3);
  release(&fx);
}

static void test_addrspace_names(void) {
  check_str("device name", kl_model_addrspace_name(KL_AS_DEVICE), "device");
  check_str("constant name", kl_model_addrspace_name(KL_AS_CONSTANT), "constant");
  check_str("threadgroup name", kl_model_addrspace_name(KL_AS_THREADGROUP), "threadgroup");
  check_str("thread name", kl_model_addrspace_name(KL_AS_THREAD), "thread");
  check_str("imageblock name", kl_model_addrspace_name(KL_AS_THREADGROUP_IMAGEBLOCK),
            "threadgroup_imageblock");
  check_str("ray_data name", kl_model_addrspace_name(KL_AS_RAY_DATA), "ray_data");
  check_str("object_data name", kl_model_addrspace_name(KL_AS_OBJECT_DATA), "object_data");
  check_str("no address space", kl_model_addrspace_name(KL_AS_NONE), "");
}

/* A broken file still yields what can be read, and one without code yields nothing. */
static void test_robustness(void) {
  struct fixture fx;
  if (build(&fx, "// nothing to see\n") == 0) {
    check("comment-only unit", fx.model.nfunctions == 0 && fx.model.ninstances == 0, "not empty");
    release(&fx);
  }
  static const char broken[] =
      "kernel void ok(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  x[i] = 1.0f;\n"
      "}\n"
      "kernel void bad(device float* x [[buffer(0)]] {\n"
      "  x[0] = ;\n";
  if (build(&fx, broken) == 0) {
    const struct kl_function *ok = kl_model_function(&fx.model, "ok");
    check("function before a syntax error", ok && ok->is_kernel && ok->nparams == 2,
          "missing or wrong");
    release(&fx);
  }
}

/* A struct's data fields (for the lowering's objects), and the struct a type or alias names. */
static void test_struct_fields(void) {
  static const char text[] =
      "#include <metal_stdlib>\n"
      "using namespace metal;\n"
      "struct Loader {\n"
      "  const int ld;\n"
      "  static constant constexpr int N = 4;\n"
      "  const device float* src;\n"
      "  threadgroup float* dst;\n"
      "  float acc[4];\n"
      "  Loader(const device float* s, int l, threadgroup float* d) : ld(l), src(s), dst(d) {}\n"
      "  void load() { dst[0] = src[0]; }\n"
      "};\n"
      "using L2 = Loader;\n"
      "kernel void k(device float* x [[buffer(0)]]) {}\n";
  struct fixture fx;
  if (build(&fx, text) != 0) return;
  const struct kl_function *load = NULL;
  for (size_t i = 0; i < fx.model.nfunctions; i++)
    if (!strcmp(fx.model.functions[i].name, "load")) load = &fx.model.functions[i];
  struct kl_var *fs = NULL;
  size_t n = load ? kl_model_fields(fx.a, &fx.model, load, &fs) : 0;
  check_int("fields, constants left out", (long)n, 4);
  if (n == 4) {
    check_var("field ld", &fs[0], "int", KL_AS_NONE, 1, 0, 0, NULL, NULL, -1);
    check_var("field src", &fs[1], "float", KL_AS_DEVICE, 1, 1, 0, NULL, NULL, -1);
    check_var("field dst", &fs[2], "float", KL_AS_THREADGROUP, 0, 1, 0, NULL, NULL, -1);
    check_var("field acc", &fs[3], "float", KL_AS_NONE, 0, 0, 0, "[4]", NULL, -1);
  }
  const struct kl_function *k = kl_model_function(&fx.model, "k");
  char owner[128] = "";
  check("owner of an alias", kl_model_owner_of(&fx.model, k, "L2", owner, sizeof owner) &&
                                 !strcmp(owner, "Loader"),
        "got %s", owner);
  check("owner of a template type", kl_model_owner_of(&fx.model, k, "Loader<float, 4>", owner,
                                                      sizeof owner) &&
                                        !strcmp(owner, "Loader"),
        "got %s", owner);
  release(&fx);
}

int main(void) {
  test_struct_fields();
  test_kernel_params();
  test_templates_and_instances();
  test_callees_and_scopes();
  test_reduction_fan_out();
  test_name_of();
  test_addrspace_names();
  test_robustness();
  return failures ? 1 : 0;
}
