/* Unit tests for dispatch facts: the size expression recognisers (analyzer/input/dispatch.c), and
 * what the Python (analyzer/input/python.c) and host (analyzer/input/host.c) front ends read from
 * small sources: decoded MSL with its offset map, grids, threadgroups, template bindings and kernel
 * links. */
#include <stdio.h>
#include <string.h>

#include "analyzer/input/dispatch.h"
#include "analyzer/input/host.h"
#include "analyzer/input/python.h"
#include "kl_test.h"

static struct kl_arena *A;

static struct kl_dx *I(int64_t v) {
  return kl_dx_int(A, v);
}
static struct kl_dx *L(const char *s) {
  return kl_dx_leaf(A, s);
}
static struct kl_dx *op(enum kl_dx_op o, struct kl_dx *x, struct kl_dx *y) {
  return kl_dx_op(A, o, x, y);
}

static void test_recognisers(void) {
  struct kl_dx *n = L("n"), *tg = L("tg");
  const struct kl_dx *d;
  /* (n + tg - 1) // tg * tg */
  struct kl_dx *cd = op(KL_DX_DIV, op(KL_DX_SUB, op(KL_DX_ADD, n, tg), I(1)), tg);
  check("ceil-div-symbolic", kl_dx_is_ceil_div(cd, &d) && kl_dx_equal(d, tg), "not recognised");
  check("rounded-symbolic", kl_dx_rounded(op(KL_DX_MUL, cd, tg)) != NULL, "not recognised");
  check("rounded-commuted", kl_dx_rounded(op(KL_DX_MUL, tg, cd)) != NULL, "not recognised");
  /* (n + 255) / 256 * 256, all folded constants but the size */
  struct kl_dx *c256 = op(KL_DX_DIV, op(KL_DX_ADD, n, I(255)), I(256));
  check("rounded-constant", kl_dx_rounded(op(KL_DX_MUL, c256, I(256))) != NULL, "no");
  check("rounded-other-factor", kl_dx_rounded(op(KL_DX_MUL, c256, I(128))) == NULL,
        "a product with another factor is not a rounding");
  check("not-ceil-plus-d", !kl_dx_is_ceil_div(op(KL_DX_DIV, op(KL_DX_ADD, n, tg), tg), &d),
        "(n + tg) / tg is not a ceiling division");
  /* math.ceil(n / tg) * tg and -(-n // tg) * tg */
  struct kl_dx *ce = op(KL_DX_CEIL, op(KL_DX_TDIV, n, tg), NULL);
  check("rounded-ceil", kl_dx_rounded(op(KL_DX_MUL, ce, tg)) != NULL, "no");
  struct kl_dx *neg = op(KL_DX_NEG, op(KL_DX_DIV, op(KL_DX_NEG, n, NULL), tg), NULL);
  check("rounded-negdiv", kl_dx_rounded(op(KL_DX_MUL, neg, tg)) != NULL, "no");
  /* (n - 1) / tg + 1 */
  struct kl_dx *m1 = op(KL_DX_ADD, op(KL_DX_DIV, op(KL_DX_SUB, n, I(1)), tg), I(1));
  check("ceil-minus-one", kl_dx_is_ceil_div(m1, &d), "not recognised");
  /* an exact grid */
  check("exact-not-rounded", kl_dx_rounded(n) == NULL, "n alone is rounded");
  /* the structure survives folding: (1000 + 255) // 256 * 256 is 1024 and still a rounding */
  struct kl_dx *k = op(KL_DX_MUL, op(KL_DX_DIV, op(KL_DX_ADD, I(1000), I(255)), I(256)), I(256));
  int64_t v = 0;
  check("folded-value", kl_dx_value(k, &v) && v == 1024, "got %lld", (long long)v);
  check("folded-still-rounded", kl_dx_rounded(k) != NULL, "no");
  check("ceil-of-constants",
        kl_dx_value(op(KL_DX_CEIL, op(KL_DX_TDIV, I(1000), I(256)), NULL), &v) && v == 4,
        "got %lld", (long long)v);
  /* clamps and granules */
  struct kl_dx *mn = op(KL_DX_MIN, I(256), n);
  check("clamped", kl_dx_clamped(mn), "min(256, n) is a runtime clamp");
  check("not-clamped-const", !kl_dx_clamped(op(KL_DX_MIN, I(256), I(64))), "constant min");
  check_int("granule-clamp", (long)kl_dx_granule(mn), 1);
  check_int("granule-rounded-down",
            (long)kl_dx_granule(op(KL_DX_MUL, op(KL_DX_DIV, mn, I(32)), I(32))), 32);
  check_int("granule-constant", (long)kl_dx_granule(I(96)), 32);
  /* multiples: what decides whether a grid of threads is whole threadgroups */
  check_int("multiple-constant", (long)kl_dx_multiple(I(96)), 96);
  check_int("multiple-rounded", (long)kl_dx_multiple(op(KL_DX_MUL, op(KL_DX_CEILDIV, n, I(96)),
                                                           I(96))), 96);
  check_int("multiple-runtime", (long)kl_dx_multiple(n), 1);
  check_int("multiple-sum", (long)kl_dx_multiple(op(KL_DX_ADD, op(KL_DX_MUL, n, I(64)), I(96))),
            32);
}

/* Load Python or host text as a source named path. */
static int load(const char *path, const char *text, struct kl_source *src) {
  char err[128];
  return kl_source_from_memory(A, path, text, strlen(text), src, err, sizeof err);
}

/* Exactness: a rounding of a count some fact says the divisor divides adds nothing. */
static void test_exact(void) {
  struct kl_dx *n = L("n"), *g = L("g");
  struct kl_dx *cd = op(KL_DX_DIV, op(KL_DX_SUB, op(KL_DX_ADD, n, g), I(1)), g);
  const struct kl_dx *fn[] = {n}, *fg[] = {g}, *f8[] = {I(8)}, *f4[] = {I(4)}, *fm[] = {L("m")};
  check("exact-symbolic", kl_dx_exact(op(KL_DX_MUL, cd, g), fn, fg, 1, 0), "not exact");
  check("exact-other-factor", kl_dx_exact(op(KL_DX_MUL, cd, I(64)), fn, fg, 1, 64), "not exact");
  check("exact-no-fact", !kl_dx_exact(op(KL_DX_MUL, cd, g), fn, fg, 0, 0), "exact with no fact");
  check("exact-other-count", !kl_dx_exact(op(KL_DX_MUL, cd, g), fm, fg, 1, 0),
        "a fact about m makes n's rounding exact");
  /* (n + 3) // 4 under n % 8 == 0 (8 is a multiple of 4), not under n % 4 for a divisor of 8 */
  struct kl_dx *c4 = op(KL_DX_DIV, op(KL_DX_ADD, n, I(3)), I(4));
  struct kl_dx *c8 = op(KL_DX_DIV, op(KL_DX_ADD, n, I(7)), I(8));
  check("exact-multiple-divisor", kl_dx_exact(op(KL_DX_MUL, c4, I(128)), fn, f8, 1, 128), "no");
  check("exact-smaller-divisor", !kl_dx_exact(op(KL_DX_MUL, c8, I(64)), fn, f4, 1, 64),
        "n %% 4 == 0 makes (n + 7) // 8 exact");
  check("exact-ceildiv", kl_dx_exact(op(KL_DX_CEILDIV, n, I(4)), fn, f8, 1, 0), "no");
  check("exact-roundup", kl_dx_exact(op(KL_DX_ROUNDUP, n, I(8)), fn, f8, 1, 0), "no");
  check("exact-minus-one", kl_dx_exact(op(KL_DX_ADD, op(KL_DX_DIV, op(KL_DX_SUB, n, I(1)), I(4)),
                                          I(1)),
                                       fn, f4, 1, 0),
        "no");
  /* a grid with no rounding in it is not `exact`: nothing was rounded */
  check("exact-none", !kl_dx_exact(op(KL_DX_MUL, n, I(64)), fn, f4, 1, 64), "plain n * 64");
  /* one rounding of another count spoils the dimension */
  struct kl_dx *cm = op(KL_DX_DIV, op(KL_DX_ADD, L("m"), I(3)), I(4));
  check("exact-mixed", !kl_dx_exact(op(KL_DX_MUL, c4, cm), fn, f4, 1, 0), "m's rounding unproven");
  /* the rounding must be the whole dimension: one group more, or twice the groups, runs past */
  struct kl_dx *c64 = op(KL_DX_MUL, cd, I(64));
  check("exact-plus-group", !kl_dx_exact(op(KL_DX_ADD, c64, I(64)), fn, fg, 1, 64), "+ 64");
  check("exact-times-two", !kl_dx_exact(op(KL_DX_MUL, c64, I(2)), fn, fg, 1, 64), "* 2");
  check("exact-other-group", !kl_dx_exact(c64, fn, fg, 1, 32), "64 threads per d, groups of 32");
  check("exact-unknown-group", !kl_dx_exact(c64, fn, fg, 1, 0), "threadgroup unknown");
}

/* A dispatch under `if n % 64 == 0:`, past an early return on odd n, under a name assigned the
 * test on one path only, and a factory variant chosen by `ok = n % 8 == 0`: which grids the
 * Python reader sees as exact. */
static void test_python_exact(void) {
  const char *py =
      "import mlx.core as mx\n"
      "k = mx.fast.metal_kernel(name=\"cp\", input_names=[\"x\"], output_names=[\"out\"],\n"
      "    source=\"uint i = thread_position_in_grid.x; out[i] = x[i];\")\n"
      "def f(x):\n"
      "    n = x.shape[0]\n"
      "    if n % 64 == 0:\n"
      "        return k(inputs=[x], grid=((n + 63) // 64 * 64, 1, 1), threadgroup=(64, 1, 1))\n"
      "    if n % 2:\n"
      "        return None\n"
      "    return k(inputs=[x], grid=((n + 63) // 64 * 64, 1, 1), threadgroup=(64, 1, 1))\n"
      "def h(x):\n"
      "    n = x.shape[0]\n"
      "    if x.ndim > 1:\n"
      "        ok = True\n"
      "    else:\n"
      "        ok = n % 64 == 0\n"
      "    if ok:\n"
      "        return k(inputs=[x], grid=((n + 63) // 64 * 64, 1, 1), threadgroup=(64, 1, 1))\n"
      "def make(aligned):\n"
      "    src = \"uint i = thread_position_in_grid.x; if (C) out[i] = x[i];\"\n"
      "    return mx.fast.metal_kernel(name=\"v\", input_names=[\"x\"], output_names=[\"out\"],\n"
      "        source=src.replace(\"C\", \"true\" if aligned else \"i < x_shape[0]\"))\n"
      "def g(x):\n"
      "    n = x.shape[0]\n"
      "    ok = n % 8 == 0\n"
      "    kv = make(ok)\n"
      "    return kv(inputs=[x], grid=((n + 7) // 8 * 64, 1, 1), threadgroup=(64, 1, 1))\n";
  struct kl_source src;
  struct kl_python out;
  char err[128];
  if (load("e.py", py, &src) != 0 || kl_python_extract(A, &src, &out, err, sizeof err) != 0) {
    check("pyx-extract", false, "could not extract");
    return;
  }
  const struct kl_py_embed *cp = NULL, *vt = NULL, *vf = NULL;
  for (size_t i = 0; i < out.nembeds; i++) {
    const struct kl_py_embed *em = &out.embeds[i];
    if (!em->text) continue;
    if (!strcmp(em->fname, "cp")) cp = em;
    if (!strcmp(em->fname, "v") && strstr(em->text, "if (true)")) vt = em;
    if (!strcmp(em->fname, "v") && strstr(em->text, "i < x_shape[0]")) vf = em;
  }
  check("pyx-embeds", cp && vt && vf, "cp %p, v true %p, v false %p", (const void *)cp,
        (const void *)vt, (const void *)vf);
  if (!cp || !vt || !vf || cp->calls.n != 3 || vt->calls.n != 1 || vf->calls.n != 1) {
    check("pyx-calls", false, "wrong number of calls");
    return;
  }
  check("pyx-if-exact", cp->calls.items[0].grid_exact == 1 && !cp->calls.items[0].grid_rounded,
        "exact %u rounded %d", cp->calls.items[0].grid_exact, cp->calls.items[0].grid_rounded);
  /* past `if n % 2: return`, n is even: no proof that 64 divides it */
  check("pyx-even-rounded", !cp->calls.items[1].grid_exact && cp->calls.items[1].grid_rounded,
        "exact %u", cp->calls.items[1].grid_exact);
  /* `ok` is True on one path and the test on the other: no fact */
  check("pyx-two-assignments", !cp->calls.items[2].grid_exact, "exact %u",
        cp->calls.items[2].grid_exact);
  check("pyx-variant-true", vt->calls.items[0].grid_exact == 1, "exact %u",
        vt->calls.items[0].grid_exact);
  check("pyx-variant-false", vf->calls.items[0].grid_exact == 0, "exact %u",
        vf->calls.items[0].grid_exact);
}

static void test_python(void) {
  const char *py = "import mlx.core as mx\n"
                   "S = \"uint i = thread_position_in_grid.x;\\n\\tout[i] = x[i];\"\n"
                   "k = mx.fast.metal_kernel(name=\"cp\", input_names=[\"x\", \"n\"],\n"
                   "    output_names=[\"out\"], source=S)\n"
                   "def f(x, n):\n"
                   "    tg = 64\n"
                   "    k(inputs=[x, n], template=[(\"T\", mx.float16)],\n"
                   "      grid=((n + tg - 1) // tg * tg, 1, 1), threadgroup=(tg, 2, 1),\n"
                   "      output_dtypes=[mx.bfloat16])\n";
  struct kl_source src;
  struct kl_python out;
  char err[128];
  if (load("t.py", py, &src) != 0 || kl_python_extract(A, &src, &out, err, sizeof err) != 0) {
    check("py-extract", false, "could not extract");
    return;
  }
  check_int("py-one-embed", (long)out.nembeds, 1);
  if (out.nembeds != 1) return;
  const struct kl_py_embed *em = &out.embeds[0];
  check("py-text",
        em->text && strstr(em->text, "[[kernel]] void cp(") &&
            strstr(em->text, "uint3 thread_position_in_grid [[thread_position_in_grid]]") &&
            strstr(em->text, "template <typename T>") &&
            strstr(em->text, "const constant mlx_input_t& n [[buffer(1)]]") == NULL,
        "synthesised signature:\n%s", em->text ? em->text : "(none)");
  /* `x[i]` in the decoded body maps back past the \n and \t escapes of line 2. */
  const char *xi = em->text ? strstr(em->text, "x[i]") : NULL;
  uint32_t line = 0, col = 0;
  if (xi)
    kl_source_position(&src, kl_offmap_to_file(&em->map, (uint32_t)(xi - em->text)), &line, &col);
  check("py-escape-position", line == 2 && col == 54, "x[i] at %u:%u, want 2:54", line, col);
  check_int("py-one-call", (long)em->calls.n, 1);
  if (em->calls.n != 1) return;
  const struct kl_dispatch *d = &em->calls.items[0];
  check_str("py-kernel", d->kernel, "cp");
  check("py-grid-rounded", d->grid_rounded, "grid not seen as rounded");
  check("py-tg", d->tg_known && d->tg_total == 128, "tg %d %lld", d->tg_known,
        (long long)d->tg_total);
  check("py-binding",
        d->nbinds == 1 && !strcmp(d->binds[0].name, "T") && !strcmp(d->binds[0].type, "half"),
        "bindings");
  check_int("py-bfloat", (long)d->nbfloat, 1);
}

static void test_host(void) {
  const char *mm = "#define G 128\n"
                   "void f(id<MTLDevice> dev, id<MTLComputeCommandEncoder> enc, NSUInteger n) {\n"
                   "  id<MTLFunction> fn = [[dev newDefaultLibrary] newFunctionWithName:@\"k\"];\n"
                   "  id<MTLComputePipelineState> p = [dev newComputePipelineStateWithFunction:fn"
                   " error:nil];\n"
                   "  [enc setComputePipelineState:p];\n"
                   "  [enc dispatchThreadgroups:MTLSizeMake((n + G - 1) / G, 1, 1)\n"
                   "      threadsPerThreadgroup:MTLSizeMake(G, 1, 1)];\n"
                   "}\n";
  struct kl_source src;
  struct kl_dispatch_list l;
  kl_dispatch_list_init(&l, A);
  if (load("h.mm", mm, &src) != 0) {
    check("host-load", false, "could not load");
    return;
  }
  kl_host_dispatches(A, &src, &l);
  check_int("host-one", (long)l.n, 1);
  if (l.n != 1) return;
  check_str("host-kernel", l.items[0].kernel, "k");
  check("host-rounded", l.items[0].grid_rounded, "ceil-divided groups not seen");
  check("host-tg", l.items[0].tg_known && l.items[0].tg_total == 128, "tg");
  const char *cpp =
      "void g(MTL::ComputeCommandEncoder* e, MTL::ComputePipelineState* pso, size_t n) {\n"
      "  e->setComputePipelineState(pso);\n"
      "  MTL::Size tg(std::min(n, (size_t)256), 1, 1);\n"
      "  e->dispatchThreads(MTL::Size(n, 1, 1), tg);\n"
      "}\n";
  kl_dispatch_list_init(&l, A);
  if (load("h.cpp", cpp, &src) != 0) return;
  kl_host_dispatches(A, &src, &l);
  check("host-cpp",
        l.n == 1 && !l.items[0].grid_rounded && l.items[0].tg_clamped && l.items[0].kernel == NULL,
        "n=%zu", l.n);
  /* MLX's CommandEncoder: a name built from a prefix, the library argument ignored, (grid, group)
   * in that order, and a swapped pair read as a grid-sized threadgroup. */
  const char *mlx =
      "void Op::eval_gpu(const std::vector<array>& in, array& out) {\n"
      "  std::string lib = \"ext\";\n"
      "  std::string kname = \"op_\";\n"
      "  kname += type_to_name(out);\n"
      "  auto kernel = d.get_kernel(kname, lib);\n"
      "  auto& enc = d.get_command_encoder(s.index);\n"
      "  enc.set_compute_pipeline_state(kernel);\n"
      "  size_t n = out.size();\n"
      "  enc.dispatch_threadgroups(MTL::Size((n + 63) / 64, 1, 1), MTL::Size(64, 1, 1));\n"
      "  enc.dispatch_threads(MTL::Size(std::min(n, (size_t)256), 1, 1),\n"
      "                       MTL::Size(n, 1, 1));\n"
      "}\n";
  kl_dispatch_list_init(&l, A);
  if (load("ext.cpp", mlx, &src) != 0) return;
  check("mlx-is-host", kl_host_is_host(&src), "not host");
  kl_host_dispatches(A, &src, &l);
  check_int("mlx-two", (long)l.n, 2);
  if (l.n != 2) return;
  check_str("mlx-kernel", l.items[0].kernel, "op_");
  check("mlx-prefix", l.items[0].kernel_prefix, "a built name is a prefix");
  check("mlx-groups", l.items[0].grid_groups && l.items[0].grid_rounded, "ceil-divided groups");
  check("mlx-tg", l.items[0].tg_known && l.items[0].tg_total == 64 && !l.items[0].tg_grid, "tg");
  check("mlx-swapped", !l.items[1].tg_known && l.items[1].tg_grid, "swapped pair not seen");
  /* The stream form of a built name, and a real threadgroup rounded to whole SIMD groups. */
  const char *stream = "void Op::eval_gpu(const std::vector<array>& in, array& out) {\n"
                       "  std::ostringstream kname;\n"
                       "  kname << \"op_\";\n"
                       "  kname << type_to_name(out);\n"
                       "  auto kernel = d.get_kernel(kname.str(), \"ext\");\n"
                       "  compute_encoder.set_compute_pipeline_state(kernel);\n"
                       "  MTL::Size tg((ncols + 31) / 32 * 32, 1, 1);\n"
                       "  compute_encoder.dispatch_threadgroups(MTL::Size(nrows, 1, 1), tg);\n"
                       "}\n";
  kl_dispatch_list_init(&l, A);
  if (load("ext2.cpp", stream, &src) != 0) return;
  kl_host_dispatches(A, &src, &l);
  check_int("stream-one", (long)l.n, 1);
  if (l.n != 1) return;
  check("stream-prefix",
        l.items[0].kernel && !strcmp(l.items[0].kernel, "op_") && l.items[0].kernel_prefix,
        "got %s", l.items[0].kernel ? l.items[0].kernel : "NULL");
  check("aligned-tg-not-grid", !l.items[0].tg_grid, "a row-sized threadgroup is no grid");
  if (load("enc.h", "void ggml_encoder_dispatch_threadgroups(void *e, int n);\n", &src) == 0)
    check("wrapper-not-host", !kl_host_is_host(&src), "a name ending in dispatch_threadgroups");
}

/* Counts read from one name: what a grid counted from a kernel argument bounds. */
static void test_count(void) {
  const char *nm = NULL;
  int64_t add = -1, div = -1;
  bool ok = kl_dx_count(op(KL_DX_DIV, op(KL_DX_ADD, L("nrows"), I(3)), I(4)), &nm, &add, &div);
  check("count-ceil-div", ok && nm && !strcmp(nm, "nrows") && add == 3 && div == 4,
        "got %d %s %lld %lld", ok, nm ? nm : "-", (long long)add, (long long)div);
  ok = kl_dx_count(op(KL_DX_CEILDIV, L("n"), I(32)), &nm, &add, &div);
  check("count-helper", ok && add == 31 && div == 32, "ceil_div(n, 32)");
  ok = kl_dx_count(L("n"), &nm, &add, &div);
  check("count-plain", ok && add == 0 && div == 1, "n alone");
  ok = kl_dx_count(op(KL_DX_DIV, op(KL_DX_SUB, op(KL_DX_ADD, L("n"), I(4)), I(1)), I(4)), &nm,
                   &add, &div);
  check("count-plus-minus", ok && add == 3 && div == 4, "(n + 4 - 1) / 4");
  check("count-negative",
        !kl_dx_count(op(KL_DX_DIV, op(KL_DX_SUB, L("n"), I(1)), I(4)), &nm, &add, &div),
        "(n - 1) / 4 can wrap below zero");
  check("count-rounded-times",
        !kl_dx_count(op(KL_DX_MUL, op(KL_DX_DIV, op(KL_DX_ADD, L("n"), I(31)), I(32)), I(8)), &nm,
                     &add, &div),
        "a count times 8 is no count of n");
  check("count-two-names", !kl_dx_count(op(KL_DX_ADD, L("n"), L("m")), &nm, &add, &div),
        "two runtime names");
  check("count-member", !kl_dx_count(L("x.size()"), &nm, &add, &div), "not a plain name");
}

/* The host front end ties a counted grid to the buffer index its name is bound at. */
static void test_host_count(void) {
  const char *mm =
      "void f(id<MTLComputeCommandEncoder> enc, id<MTLComputePipelineState> p, uint32_t nrows,\n"
      "       uint32_t ncols) {\n"
      "  [enc setComputePipelineState:p];\n"
      "  [enc setBytes:&ncols length:sizeof(ncols) atIndex:4];\n"
      "  [enc setBytes:&nrows length:sizeof(nrows) atIndex:5];\n"
      "  [enc dispatchThreadgroups:MTLSizeMake((nrows + 3) / 4, ncols, 1)\n"
      "      threadsPerThreadgroup:MTLSizeMake(32, 1, 1)];\n"
      "}\n";
  struct kl_source src;
  struct kl_dispatch_list l;
  kl_dispatch_list_init(&l, A);
  if (load("c.mm", mm, &src) != 0) return;
  kl_host_dispatches(A, &src, &l);
  if (l.n != 1) {
    check("count-host-one", false, "n=%zu", l.n);
    return;
  }
  const struct kl_dispatch_count *c = l.items[0].grid_count;
  check("count-host-objc", c[0].known && c[0].index == 5 && c[0].add == 3 && c[0].div == 4,
        "got %d %d", c[0].known, c[0].index);
  check("count-host-objc-y", c[1].known && c[1].index == 4 && c[1].div == 1, "ncols at 4");
  check("count-host-objc-z", !c[2].known, "a constant is no count");
  /* metal-cpp and MLX spellings; a later binding of the index, a write of the name, a binding
   * in a closed block before the call: none is a count. */
  static const struct {
    const char *name, *body;
    bool known;
  } cases[] = {
      {"count-host-cpp", "  e->setBytes(&n, sizeof(n), 2);\n", true},
      {"count-host-mlx", "  e.set_bytes(n, 2);\n", true},
      {"count-host-rebound", "  e->setBytes(&n, 4, 2);\n  e->setBuffer(b, 0, 2);\n", false},
      {"count-host-rebound-any", "  e->setBytes(&n, 4, 2);\n  e->setBuffer(b, 0, k);\n", false},
      {"count-host-written", "  e->setBytes(&n, 4, 2);\n  n += 1;\n", false},
      {"count-host-written-before", "  n = n / 2;\n  e->setBytes(&n, 4, 2);\n", false},
      {"count-host-closed", "  if (c) { e->setBytes(&n, 4, 2); }\n", false},
      {"count-host-none", "", false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char buf[512];
    snprintf(buf, sizeof buf,
             "void g(MTL::ComputeCommandEncoder* e, MTL::ComputePipelineState* pso, uint32_t n,\n"
             "       MTL::Buffer* b, bool c, int k) {\n"
             "  e->setComputePipelineState(pso);\n%s"
             "  e->dispatchThreadgroups(MTL::Size((n + 7) / 8, 1, 1), MTL::Size(64, 1, 1));\n"
             "}\n",
             cases[i].body);
    kl_dispatch_list_init(&l, A);
    if (load("c.cpp", buf, &src) != 0) continue;
    kl_host_dispatches(A, &src, &l);
    bool got = l.n == 1 && l.items[0].grid_count[0].known;
    bool right = got == cases[i].known &&
                 (!got || (l.items[0].grid_count[0].index == 2 &&
                           l.items[0].grid_count[0].add == 7 && l.items[0].grid_count[0].div == 8));
    check(cases[i].name, right, "count %s", got ? "seen" : "not seen");
  }
}

/* The helpers both front ends record launch sizes through. */
static void test_shared(void) {
  struct kl_source src;
  /* 58 ASCII bytes, then a 3-byte character that straddles the 60-byte quote limit. */
  const char *text =
      "a\tb\ncccccccccccccccccccccccccccccccccccccccccccccccccccccc\xe2\x82\xac tail\n";
  if (load("q.py", text, &src) != 0) {
    check("shared-load", false, "could not load");
    return;
  }
  const char *q = kl_dispatch_quote(A, &src, 0, src.len);
  check_int("quote-cut-before-character", (long)strlen(q), 58);
  check("quote-one-line", q[1] == ' ' && q[3] == ' ', "got `%s`", q);
  check("header",
        kl_host_is_header("a/b.hpp") && kl_host_is_header("x.h") &&
            !kl_host_is_header("h.d/x.mm") && !kl_host_is_header("hpp"),
        "header extensions");

  struct kl_dispatch d;
  memset(&d, 0, sizeof d);
  struct kl_dx *n = L("n"), *g = I(64);
  struct kl_dx *groups[2] = {I(4), op(KL_DX_CEILDIV, n, g)};
  kl_dispatch_set_grid(&d, A, &src, groups, 2, true, 0, 1);
  check("grid-groups", d.grid_rounded && d.grid_dims == 2 && strstr(d.grid_text, " threadgroups"),
        "dims %u text %s", d.grid_dims, d.grid_text ? d.grid_text : "(none)");
  memset(&d, 0, sizeof d);
  kl_dispatch_set_grid(&d, A, &src, groups, 2, false, 0, 1);
  check("grid-threads-not-rounded", !d.grid_rounded && d.grid_dims == 0, "a ceil-div alone");

  struct kl_dx *tg[3] = {I(256), op(KL_DX_MIN, I(4), n), I(1)};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, tg, 3, kl_diag_span(&src, 0, 1), "tg");
  check("tg-clamped", d.tg_present && !d.tg_known && d.tg_clamped && d.tg_granule == 256,
        "known %d clamped %d granule %lld", d.tg_known, d.tg_clamped, (long long)d.tg_granule);
  /* (32, 1, nw): the total is not known, x and y are (each z plane is one SIMD group). */
  struct kl_dx *planes[3] = {I(32), I(1), L("nw")};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, planes, 3, kl_diag_span(&src, 0, 1), "planes");
  check("tg-dims-known", !d.tg_known && d.tg_dims == 3 && d.tg_size[0] == 32 && d.tg_size[1] == 1,
        "known %d dims %u x %lld y %lld", d.tg_known, d.tg_dims, (long long)d.tg_size[0],
        (long long)d.tg_size[1]);
  struct kl_dx *big[2] = {I((int64_t)1 << 62), I(4)};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, big, 2, kl_diag_span(&src, 0, 1), "big");
  check("tg-overflow-unknown", !d.tg_known && d.tg_total == 0 && d.tg_granule == 1024,
        "known %d granule %lld", d.tg_known, (long long)d.tg_granule);
  /* A clamp to the pipeline's own limit keeps whole SIMD groups; one to the data does not. */
  struct kl_dx *lim = L("p->maxTotalThreadsPerThreadgroup()"), *nth = L("nth");
  nth->granule = 32; /* nth = 32; while (...) nth *= 2; */
  struct kl_dx *limited[1] = {op(KL_DX_MIN, nth, lim)};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, limited, 1, kl_diag_span(&src, 0, 1), "limited");
  check("tg-clamp-limit", d.tg_clamped && d.tg_granule == 32, "granule %lld",
        (long long)d.tg_granule);
  struct kl_dx *both[1] = {op(KL_DX_MIN, op(KL_DX_MIN, nth, lim), L("ne00"))};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, both, 1, kl_diag_span(&src, 0, 1), "both");
  check("tg-clamp-data", d.tg_clamped && d.tg_granule == 1, "granule %lld",
        (long long)d.tg_granule);
  /* Several runtime dimensions: tensor dimensions multiply with no bound, clamps to their most. */
  struct kl_dx *data[3] = {L("src1->ne[2]"), L("src0->ne[1]"), L("src0->ne[0]")};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, data, 3, kl_diag_span(&src, 0, 1), "data");
  check("tg-max-unbounded", d.tg_max == -1, "max %lld", (long long)d.tg_max);
  struct kl_dx *tiles[3] = {op(KL_DX_MIN, L("w"), I(64)), op(KL_DX_MIN, L("h"), I(32)), I(1)};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, tiles, 3, kl_diag_span(&src, 0, 1), "tiles");
  check("tg-max-bounded", d.tg_max == 2048, "max %lld", (long long)d.tg_max);
  struct kl_dx *fits[3] = {op(KL_DX_MIN, L("w"), I(32)), op(KL_DX_MIN, L("h"), I(32)), I(1)};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, fits, 3, kl_diag_span(&src, 0, 1), "fits");
  check("tg-max-fits", d.tg_max == 0, "max %lld", (long long)d.tg_max);
  /* Names that may be tile sizes (parameters, values set in branches) are not data sizes. */
  struct kl_dx *named[3] = {L("nth0"), L("nth1"), I(1)};
  memset(&d, 0, sizeof d);
  kl_dispatch_set_tg(&d, named, 3, kl_diag_span(&src, 0, 1), "named");
  check("tg-max-names", d.tg_max == 0, "max %lld", (long long)d.tg_max);
}

int main(void) {
  A = kl_arena_new();
  test_recognisers();
  test_exact();
  test_python();
  test_python_exact();
  test_host();
  test_count();
  test_host_count();
  test_shared();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
