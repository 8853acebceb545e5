/* Unit tests for the preprocessor module (grammar/preproc.c): chains, their evaluation under
 * assumptions about the build, and dead-branch stripping. */
#include <string.h>

#include "analyzer/arena.h"
#include "grammar/preproc.h"
#include "tests/unit/kl_test.h"

/* taken[] of the IF/ELIF/ELSE lines of text, as a string of '1', '0', '?'. */
static const char *branches(struct kl_arena *a, const char *text, const struct kl_pp_assume *as,
                            bool conds) {
  struct kl_pp pp;
  kl_preproc_scan(a, text, (uint32_t)strlen(text), &pp);
  int *taken = kl_arena_alloc(a, (pp.nlines + 1) * sizeof *taken);
  int *cond = kl_arena_alloc(a, (pp.nlines + 1) * sizeof *cond);
  kl_preproc_eval(a, &pp, as, taken, cond);
  char *out = kl_arena_alloc(a, pp.nlines + 1);
  size_t n = 0;
  for (size_t i = 0; i < pp.nlines; i++) {
    enum kl_pp_kind k = pp.lines[i].kind;
    if (k != KL_PP_IF && k != KL_PP_ELIF && k != KL_PP_ELSE) continue;
    int v = conds ? cond[i] : taken[i];
    out[n++] = v < 0 ? '?' : (char)('0' + v);
  }
  out[n] = '\0';
  return out;
}

int main(void) {
  struct kl_arena *a = kl_arena_new();
  check_str("preproc-if-zero", branches(a, "#if 0\nx\n#else\ny\n#endif\n", NULL, false), "01");
  check_str("preproc-unknown-macro",
            branches(a, "#ifdef FAST\nx\n#elif 1\ny\n#else\nz\n#endif\n", NULL, false), "??0");
  check_str("preproc-file-define",
            branches(a, "#define USE 0\n#if USE\nx\n#endif\n#ifndef USE\ny\n#endif\n", NULL, false),
            "00");
  check_str("preproc-nested-dead",
            branches(a, "#if 0\n#if 1\nx\n#else\ny\n#endif\n#endif\n", NULL, false), "000");
  check_str("preproc-continuation-comment",
            branches(a, "#if 1 && \\\n  0 /* off */\nx\n#endif\n", NULL, false), "0");
  check_str("preproc-directive-in-comment",
            branches(a, "/*\n#if 0\n*/\n#if 1\nx\n#endif\n", NULL, false), "1");

  /* The ggml shape: a macro #undef'd below MSL 3.1 is known undefined in a 3.0 build. */
  const char *undef = "#if __METAL_VERSION__ < 310 && defined(HAS_BF)\n#undef HAS_BF\n#endif\n"
                      "#if defined(HAS_BF)\nbf\n#endif\n";
  const char *v300[] = {"__METAL_VERSION__"}, *val300[] = {"300"}, *val310[] = {"310"};
  struct kl_pp_assume old = {v300, val300, 1, NULL, 0};
  struct kl_pp_assume new = {v300, val310, 1, NULL, 0};
  check_str("preproc-undef-below-310", branches(a, undef, &old, true), "?0");
  check_str("preproc-undef-not-at-310", branches(a, undef, &new, true), "0?");
  const char *gone[] = {"__HAVE_BFLOAT__"};
  struct kl_pp_assume nobf = {NULL, NULL, 0, gone, 1};
  check_str("preproc-assumed-undefined",
            branches(a, "#if defined(__HAVE_BFLOAT__)\nx\n#else\ny\n#endif\n", &nobf, false), "01");

  /* #if expressions in full: `defined X` without parentheses, ||, && and ! with an unknown
   * operand on the side that does not decide, and comparisons of the version. */
  const char *bf[] = {"__HAVE_BFLOAT__"};
  struct kl_pp_assume hasbf = {bf, NULL, 1, NULL, 0};
  check_str("preproc-defined-no-parens",
            branches(a, "#if defined __HAVE_BFLOAT__\nx\n#else\ny\n#endif\n", &hasbf, false),
            "10");
  check_str("preproc-or-unknown-true",
            branches(a, "#if defined(FAST) || defined __HAVE_BFLOAT__\nx\n#endif\n", &hasbf,
                     false),
            "1");
  check_str("preproc-or-unknown-false",
            branches(a, "#if defined(FAST) || defined(__HAVE_BFLOAT__)\nx\n#endif\n", &nobf,
                     false),
            "?");
  check_str("preproc-and-unknown-false",
            branches(a, "#if defined(FAST) && defined(__HAVE_BFLOAT__)\nx\n#endif\n", &nobf,
                     false),
            "0");
  check_str("preproc-not-defined",
            branches(a, "#if !defined(__HAVE_BFLOAT__)\nx\n#else\ny\n#endif\n", &nobf, false),
            "10");
  check_str("preproc-not-defined-no-parens",
            branches(a, "#if !defined __HAVE_BFLOAT__\nx\n#endif\n", &hasbf, false), "0");
  check_str("preproc-version-compare",
            branches(a,
                     "#if __METAL_VERSION__ >= 310\na\n#endif\n#if __METAL_VERSION__ < 310\nb\n"
                     "#endif\n#if __METAL_VERSION__ == 300 || !(__METAL_VERSION__ > 300)\nc\n"
                     "#endif\n",
                     &old, false),
            "011");
  check_str("preproc-version-and-defined",
            branches(a, "#if __METAL_VERSION__ >= 310 && defined __HAVE_BFLOAT__\nx\n#endif\n",
                     &new, false),
            "?");

  /* Includes every build reaches: not under #if, an include guard excepted. */
  {
    const char *mpp = "MetalPerformancePrimitives/";
    const char *direct = "#include <metal_stdlib>\n#include <MetalPerformancePrimitives/M.h>\n";
    const char *optional = "#ifdef HAS_TENSOR\n#include <MetalPerformancePrimitives/M.h>\n#endif\n";
    const char *guarded = "#ifndef K_H\n#define K_H\n#include <MetalPerformancePrimitives/M.h>\n"
                          "#endif\n";
    check_int("preproc-includes-direct",
              kl_preproc_includes(a, direct, (uint32_t)strlen(direct), NULL, mpp), 1);
    check_int("preproc-includes-under-if",
              kl_preproc_includes(a, optional, (uint32_t)strlen(optional), NULL, mpp), 0);
    check_int("preproc-includes-include-guard",
              kl_preproc_includes(a, guarded, (uint32_t)strlen(guarded), NULL, mpp), 1);
    struct kl_pp gp;
    kl_preproc_scan(a, guarded, (uint32_t)strlen(guarded), &gp);
    check_int("preproc-unconditional-guard", kl_preproc_unconditional(&gp, 30), 1);
    struct kl_pp op;
    kl_preproc_scan(a, optional, (uint32_t)strlen(optional), &op);
    check_int("preproc-unconditional-if", kl_preproc_unconditional(&op, 20), 0);
  }

  check_str("preproc-include-reopens",
            branches(a, "#undef TILE\n#include \"cfg.h\"\n#if TILE\nx\n#endif\n", NULL, false),
            "?");
  {
    /* A condition longer than the directive buffer is cut: unknown, never evaluated. */
    char long_if[2200] = "#if 0";
    for (int i = 0; i < 400; i++) strcat(long_if, " + 0");
    strcat(long_if, " + 1\nx\n#endif\n");
    check_str("preproc-cut-condition", branches(a, long_if, NULL, false), "?");
  }
  const char *src = "a\n#if 0\nbb\n#else\ncc\n#endif\n";
  char *live = kl_preproc_strip_dead(a, src, (uint32_t)strlen(src));
  check_str("preproc-strip-dead", live, "a\n#if 0\n  \n#else\ncc\n#endif\n");
  check("preproc-strip-none", kl_preproc_strip_dead(a, "a\n#ifdef X\nb\n#endif\n", 20) == NULL,
        "a file whose branches are all possible is not copied");
  {
    /* One call stamping out 8192 names with nothing between them: written out as it goes, in
     * pieces, and still a space between every two (a piece must not forget what ended the last). */
    const char *text = "#define L(x) x\n#define D1(x) L(x)L(x)\n#define D2(x) D1(x)D1(x)\n"
                       "#define D3(x) D2(x)D2(x)\n#define D4(x) D3(x)D3(x)\n"
                       "#define D5(x) D4(x)D4(x)\n#define D6(x) D5(x)D5(x)\n"
                       "#define D7(x) D6(x)D6(x)\n#define D8(x) D7(x)D7(x)\n"
                       "#define D9(x) D8(x)D8(x)\n#define D10(x) D9(x)D9(x)\n"
                       "#define D11(x) D10(x)D10(x)\n#define D12(x) D11(x)D11(x)\n"
                       "#define D13(x) D12(x)D12(x)\nint D13(v);\n";
    struct kl_offmap map;
    uint32_t n = 0;
    char *out = kl_preproc_expand(a, text, (uint32_t)strlen(text), NULL, &n, &map, NULL, NULL);
    size_t vs = 0;
    bool glued = false;
    for (uint32_t i = 0; out && i < n; i++) {
      if (out[i] != 'v') continue;
      vs++;
      glued = glued || (i + 1 < n && out[i + 1] == 'v');
    }
    check("preproc-expand-long", out && vs == 8192 && !glued, "%zu names, glued %d", vs, glued);
  }
  kl_arena_delete(a);
  return failures ? 1 : 0;
}
