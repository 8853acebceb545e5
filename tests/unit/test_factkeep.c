/* Facts kept across versions of a document (analyzer/passes/factkeep.h): after each edit, the
 * kernels the edit cannot change are taken from the version before, the rest lowered, and the
 * facts are those lowered afresh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/input/source.h"
#include "analyzer/passes/factkeep.h"
#include "analyzer/passes/facts.h"
#include "grammar/dialect.h"

#include "tests/unit/kl_test.h"

/* Five kernels: two call a helper each, one a helper through a struct's operator, one is a
 * template instantiated at file scope; a struct's specialisation no kernel names calls a helper
 * too, and a constant and a struct typedef no kernel reads. */
static const char base[] =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "#define SCALE 2.0f\n"
    "// file-scope words: kernel_b helper_b\n"
    "inline float helper_a(device const float *x, uint i) { return x[i] * SCALE; }\n"
    "inline float helper_b(device const float *x, uint i) { return x[i + 1]; }\n"
    "inline float helper_c(float v) { return v * 2.0f; }\n"
    "struct Twice {\n"
    "  float operator()(float v) const { return helper_c(v); }\n"
    "};\n"
    "constant uint STRIDE = 4;\n"
    "typedef struct Pair { float a; float b; } PairT;\n"
    "template <typename T, int N> struct Pick { float get(float v) const { return v; } };\n"
    "template <typename T> struct Pick<T, 2> {\n"
    "  float get(float v) const { return helper_c(v); }\n"
    "};\n"
    "kernel void kernel_a(device float *out [[buffer(0)]], device const float *x [[buffer(1)]],\n"
    "                     uint gid [[thread_position_in_grid]],\n"
    "                     uint lid [[thread_position_in_threadgroup]]) {\n"
    "  threadgroup float tg[64];\n"
    "  uint big = 1'000; tg[lid] = helper_a(x, gid + big);\n"
    "  if (gid < 100) threadgroup_barrier(mem_flags::mem_threadgroup);\n"
    "  out[gid] = tg[(lid + 1) % 64];\n"
    "}\n"
    "kernel void kernel_b(device float *out [[buffer(0)]], device const float *x [[buffer(1)]],\n"
    "                     uint gid [[thread_position_in_grid]]) {\n"
    "  out[gid] = x[gid * 4 + 1];\n"
    "}\n"
    "kernel void kernel_c(device float *out [[buffer(0)]], device const float *x [[buffer(1)]],\n"
    "                     constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {\n"
    "  if (gid >= n) return;\n"
    "  out[gid] = helper_b(x, gid);\n"
    "}\n"
    "kernel void kernel_d(device float *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {\n"
    "  Twice f;\n"
    "  out[gid] = f(out[gid]);\n"
    "}\n"
    "template <typename T>\n"
    "kernel void kernel_t(device T *out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {\n"
    "  out[gid] = T(1);\n"
    "}\n"
    "#define KT_ARGS float\n"
    "typedef decltype(kernel_t<KT_ARGS>) kernel_t_t;\n"
    "template [[host_name(\"kernel_t_f32\")]] kernel kernel_t_t kernel_t<float>;\n"
    "template [[host_name(\"kernel_t_f16\")]] kernel kernel_t_t kernel_t<half>;\n";

/* Kernels a macro expansion makes: written by a macro call, or instantiated by one that stamps
 * out nothing else (kept beside the buffer), and a macro that names a kernel. */
static const char expanded[] =
    "#include <metal_stdlib>\n"
    "using namespace metal;\n"
    "inline float helper_a(device const float *x, uint i) { return x[i] * 2.0f; }\n"
    "inline float helper_b(device const float *x, uint i) { return x[i + 1]; }\n"
    "constexpr int tile_n() { return 4; }\n"
    "template <typename T>\n"
    "kernel void kernel_a(device T *out [[buffer(0)]], device const float *x [[buffer(1)]],\n"
    "                     uint gid [[thread_position_in_grid]]) {\n"
    "  out[gid] = T(helper_a(x, gid));\n"
    "}\n"
    "template <typename T, int N>\n"
    "kernel void kernel_b(device T *out [[buffer(0)]], device const float *x [[buffer(1)]],\n"
    "                     uint gid [[thread_position_in_grid]]) {\n"
    "  out[gid * N] = T(helper_b(x, gid)) + T(1);\n"
    "}\n"
    "#define DEFINE_KERNEL(name, h)                                                   \\\n"
    "  kernel void name(device float *out [[buffer(0)]],                            \\\n"
    "                   device const float *x [[buffer(1)]],                        \\\n"
    "                   uint gid [[thread_position_in_grid]]) {                     \\\n"
    "    out[gid] = h(x, gid);                                                      \\\n"
    "  }\n"
    "DEFINE_KERNEL(kernel_c, helper_a)\n"
    "DEFINE_KERNEL(kernel_d, helper_b)\n"
    "#define instantiate_kernel(host, name, ...) \\\n"
    "  template [[host_name(host)]] [[kernel]] decltype(name<__VA_ARGS__>) name<__VA_ARGS__>;\n"
    "#define instantiate_a(type) instantiate_kernel(\"kernel_a_\" #type, kernel_a, type)\n"
    "#define instantiate_b(type, u) instantiate_kernel(\"kernel_b_\" #type, kernel_b, type, u)\n"
    "instantiate_a(float)\n"
    "instantiate_a(half)\n"
    "instantiate_b(float, tile_n())\n";

/* base with the first `from` replaced by `to`. */
static char *edited(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  if (!at) return NULL;
  size_t n = strlen(text), f = strlen(from), t = strlen(to);
  char *out = malloc(n - f + t + 1);
  memcpy(out, text, (size_t)(at - text));
  memcpy(out + (at - text), to, t);
  memcpy(out + (at - text) + t, at + f, n - (size_t)(at - text) - f + 1);
  return out;
}

/* The race valuations the last version() tried (kept run's, and the fresh run's), and the pairs
 * its kept run asked. */
static size_t tried_kept, tried_fresh, asked_kept;

/* Lint one version's facts with keep (parse reusing r when not NULL) and check them against a
 * fresh computation; the kernels kept and lowered in *kept, *lowered. */
static bool version(const char *name, struct kl_factkeep *keep, struct kl_dialect_reuse *r,
                    const char *text, size_t *kept, size_t *lowered) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_unit u;
  char err[256];
  bool ok = kl_source_from_memory(a, "t.metal", text, strlen(text), &src, err, sizeof err) == 0 &&
            kl_dialect_parse_next(a, &src, src.text, src.len, NULL, ".", r, &u, err,
                                  sizeof err) == 0;
  check(name, ok, "setup: %s", err);
  if (!ok) {
    kl_arena_delete(a);
    return false;
  }
  struct kl_model m;
  kl_model_build(a, &u, &m);
  struct kl_facts f, fresh;
  kl_facts_compute_kept(a, &m, NULL, 0, NULL, 0, NULL, NULL, keep, &f);
  kl_factkeep_stats(keep, kept, lowered);
  kl_facts_compute(a, &m, NULL, 0, NULL, 0, NULL, &fresh);
  tried_kept = f.race_valuations;
  asked_kept = f.race_asked;
  tried_fresh = fresh.race_valuations;
  char what[128];
  snprintf(what, sizeof what, "%s-same", name);
  check(what, kl_factkeep_same(&f, &fresh), "the kept facts differ from those lowered afresh");
  kl_dialect_release(&u);
  kl_arena_delete(a);
  return true;
}

/* One edit of text (of nk kernels) after text itself: want_kept kernels taken, the rest
 * lowered. */
static void edit_of(const char *text0, size_t nk, const char *name, bool reuse, const char *from,
                    const char *to, size_t want_kept) {
  struct kl_factkeep *keep = kl_factkeep_new();
  struct kl_dialect_reuse r = {0};
  size_t kept, lowered;
  char what[128];
  snprintf(what, sizeof what, "%s%s-base", name, reuse ? "" : "-fresh");
  version(what, keep, reuse ? &r : NULL, text0, &kept, &lowered);
  check(what, kept == 0 && lowered == nk, "kept %zu lowered %zu, want 0 and %zu", kept, lowered,
        nk);
  char *text = from ? edited(text0, from, to) : strdup(text0);
  snprintf(what, sizeof what, "%s%s", name, reuse ? "" : "-fresh");
  if (text && version(what, keep, reuse ? &r : NULL, text, &kept, &lowered))
    check(what, kept == want_kept && (!kept || kept + lowered == nk),
          "kept %zu lowered %zu, want %zu kept", kept, lowered, want_kept);
  /* And back: the version before the edit again. */
  snprintf(what, sizeof what, "%s%s-back", name, reuse ? "" : "-fresh");
  if (text) version(what, keep, reuse ? &r : NULL, text0, &kept, &lowered);
  free(text);
  kl_dialect_reuse_end(&r);
  kl_factkeep_free(keep);
}

/* One edit of base (five kernels). */
static void edit(const char *name, bool reuse, const char *from, const char *to,
                 size_t want_kept) {
  edit_of(base, 5, name, reuse, from, to, want_kept);
}

/* A kernel lowered again after an edit that leaves its threadgroup accesses alone asks the race
 * pairs of the version before: the memo kept across versions answers them all, and the facts
 * are a fresh run's. An edit of an access's index asks a new pair, tried. */
static void test_memo_kept(void) {
  struct kl_factkeep *keep = kl_factkeep_new();
  size_t kept, lowered;
  const char *steps[][2] = {
      {NULL, NULL},
      {"uint big = 1'000;", "uint big = 2'000;"},
      {"tg[(lid + 1) % 64]", "tg[(lid + 2) % 64]"},
  };
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    char *text = steps[i][0] ? edited(base, steps[i][0], steps[i][1]) : strdup(base);
    char name[64];
    snprintf(name, sizeof name, "factkeep-memo-%zu", i + 1);
    if (!text || !version(name, keep, NULL, text, &kept, &lowered)) {
      check(name, false, "no text");
      free(text);
      continue;
    }
    check(name, tried_fresh > 0, "the fresh run tried no valuation: no race pair to ask");
    bool want_none = i == 1;
    check(name, want_none ? tried_kept == 0 : tried_kept > 0,
          "the kept run tried %zu valuations (fresh %zu), kept %zu lowered %zu", tried_kept,
          tried_fresh, kept, lowered);
    /* kernel_a itself lowered again, asking its pairs. */
    if (i > 0)
      check(name, lowered == 1 && asked_kept > 0, "lowered %zu, %zu pairs asked", lowered,
            asked_kept);
    free(text);
  }
  kl_factkeep_free(keep);
}

int main(void) {
  test_memo_kept();
  for (int reuse = 1; reuse >= 0; reuse--) {
    /* Nothing changed: every kernel taken. */
    edit("factkeep-same-text", reuse, NULL, NULL, 5);
    /* Inside one kernel's body: the others taken. */
    edit("factkeep-kernel-body", reuse, "x[gid * 4 + 1]", "x[gid * 8 + 3] + 1.0f", 4);
    edit("factkeep-kernel-statement", reuse, "  out[gid] = x[gid * 4 + 1];\n",
         "  out[gid] = x[gid * 4 + 1];\n  out[gid + 1] = 0;\n", 4);
    /* Inside a helper: the kernel that calls it lowered. */
    edit("factkeep-helper-body", reuse, "return x[i + 1];", "return x[i + 2] * 3.0f;", 4);
    /* Inside a helper called after a digit separator (not a character literal). */
    edit("factkeep-helper-after-separator", reuse, "return x[i] * SCALE;",
         "return x[i + 1] * SCALE;", 4);
    /* Inside a helper only a struct's operator calls: the kernel that names the struct. */
    edit("factkeep-operator-helper", reuse, "return v * 2.0f;", "return v * 3.0f;", 4);
    /* Inside a struct's operator: the kernel that names the struct. */
    edit("factkeep-operator-body", reuse, "return helper_c(v);", "return helper_c(v) + 1.0f;", 4);
    /* Inside a struct's body, outside its members: the kernel that names the struct; the
     * struct's name: nothing taken. */
    edit("factkeep-struct-body", reuse, "struct Twice {\n", "struct Twice {\n  float pad;\n", 4);
    edit("factkeep-struct-name", reuse, "struct Twice {\n", "struct Thrice {\n", 0);
    /* A keyword the buffer blanks, taken out at file scope or swapped for one as long in a
     * signature; a struct that a typedef names too: nothing taken. */
    edit("factkeep-keyword-out", reuse, "constant uint STRIDE", "uint STRIDE", 0);
    edit("factkeep-keyword-swap", reuse, "helper_b(device const float *x",
         "helper_b(thread const float *x", 0);
    edit("factkeep-struct-typedef", reuse, "float a; float b;", "float a, c; float b;", 0);
    /* A token pasted on a continuation line: nothing taken. */
    {
      size_t n = strlen(base);
      char *pasted = malloc(n + 64);
      memcpy(pasted, base, n);
      strcpy(pasted + n, "#define CALL_IMPL(f, x) f \\\n  ## _impl(x)\n");
      edit_of(pasted, 5, "factkeep-paste-continued", reuse, "return x[i + 1];",
              "return x[i + 2];", 0);
      free(pasted);
    }
    /* Inside a template kernel instantiated and aliased at file scope. */
    edit("factkeep-template-body", reuse, "out[gid] = T(1);", "out[gid + 1] = T(2);", 4);
    /* A comment at file scope that names a kernel, a macro, an unbalanced brace, a function's
     * name: nothing taken. */
    edit("factkeep-file-comment", reuse, "kernel_b helper_b", "kernel_b helper_b edited", 0);
    edit("factkeep-macro", reuse, "#define SCALE 2.0f", "#define SCALE 4.0f", 0);
    edit("factkeep-helper-name", reuse, "inline float helper_b(", "inline float helper_bb(", 0);
    /* A signature, a template's parameters: that function edited. */
    edit("factkeep-signature", reuse, "uint gid [[thread_position_in_grid]]) {\n  out[gid] = x",
         "uint gid [[thread_position_in_grid]], uint k [[thread_index_in_simdgroup]]) {\n"
         "  out[gid] = x",
         4);
    edit("factkeep-helper-signature", reuse, "helper_b(device const float *x, uint i)",
         "helper_b(device const float *x, uint i, uint j = 0)", 4);
    edit("factkeep-template-parameters", reuse, "template <typename T>\nkernel",
         "template <typename T, int U = 1>\nkernel", 4);
    edit("factkeep-unbalanced", reuse, "  out[gid] = x[gid * 4 + 1];\n", "  out[gid] = x[gid {\n",
         0);
    /* Blank lines opened between two kernels: every kernel taken; blanks inside a signature:
     * that kernel lowered. */
    edit("factkeep-blank-line", reuse, "}\nkernel void kernel_b", "}\n\n  \t\nkernel void kernel_b",
         5);
    edit("factkeep-blank-signature", reuse,
         "uint gid [[thread_position_in_grid]]) {\n  out[gid] = x",
         "uint gid  [[thread_position_in_grid]]) {\n  out[gid] = x", 4);
    /* An expanded unit: a helper a macro-written kernel calls lowers that kernel and the one that
     * names it; a kernel the #defines name lowers itself only. */
    edit_of(expanded, 4, "factkeep-expanded-helper", reuse, "return x[i] * 2.0f;",
            "return x[i] * 3.0f;", 2);
    edit_of(expanded, 4, "factkeep-expanded-kernel", reuse, "T(helper_b(x, gid)) + T(1)",
            "T(helper_b(x, gid)) + T(2)", 3);
    /* A macro call's arguments (its instantiations kept beside an unchanged buffer): nothing
     * taken. */
    edit_of(expanded, 4, "factkeep-expanded-inst-args", reuse, "instantiate_a(half)",
            "instantiate_a(int)", 0);
    /* A macro's instantiation whose template argument calls the edited function: the kernel
     * it instantiates lowered. */
    edit_of(expanded, 4, "factkeep-expanded-targ", reuse, "{ return 4; }", "{ return 8; }", 3);
  }
  return failures != 0;
}
