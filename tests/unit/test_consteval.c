/* Unit tests for the shared constant evaluator (grammar/consteval.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/consteval.h"
#include "tests/unit/kl_test.h"

/* A tiny environment: N = 4, HALF = N / 2, LOOP = LOOP, macro DEFINED defined, GONE known
 * undefined, anything else unknown; sizeof(float) = 4. */
static const char *lookup(void *ctx, const char *s, size_t n) {
  (void)ctx;
  if (n == 1 && s[0] == 'N') return "4";
  if (n == 4 && !memcmp(s, "HALF", 4)) return "N / 2";
  if (n == 4 && !memcmp(s, "LOOP", 4)) return "LOOP + 1";
  if (n == 4 && !memcmp(s, "SELF", 4)) return "(SELF)";
  if (n == 4 && !memcmp(s, "BOMB", 4)) return "(B1+B1+B1+B1)";
  if (n == 2 && s[0] == 'B' && s[1] >= '1' && s[1] <= '8') {
    static const char *const next[] = {"(B2+B2+B2+B2)", "(B3+B3+B3+B3)", "(B4+B4+B4+B4)",
                                       "(B5+B5+B5+B5)", "(B6+B6+B6+B6)", "(B7+B7+B7+B7)",
                                       "(B8+B8+B8+B8)", "(B9+B9+B9+B9)"};
    return next[s[1] - '1'];
  }
  return NULL;
}

static int defined(void *ctx, const char *s, size_t n) {
  (void)ctx;
  if (n == 7 && !memcmp(s, "DEFINED", 7)) return 1;
  if (n == 4 && !memcmp(s, "GONE", 4)) return 0;
  return -1;
}

static unsigned size_of(void *ctx, const char *s, size_t n) {
  (void)ctx;
  return n == 5 && !memcmp(s, "float", 5) ? 4 : 0;
}

static const struct kl_consteval_env code = {lookup, NULL, size_of, NULL, false};
static const struct kl_consteval_env pp = {lookup, defined, NULL, NULL, true};

static void value(const char *name, const char *text, const struct kl_consteval_env *env,
                  long want) {
  int64_t v = -12345;
  bool ok = kl_consteval_eval(text, strlen(text), env, &v);
  check(name, ok && v == want, "`%s`: %s %ld, want %ld", text, ok ? "got" : "unknown", (long)v,
        want);
}

static void unknown(const char *name, const char *text, const struct kl_consteval_env *env) {
  /* Set: the failure message reads it, and an unknown leaves it unwritten. Reading it
   * uninitialised let clang assume the evaluation succeeded, so every check here failed. */
  int64_t v = 0;
  bool ok = kl_consteval_eval(text, strlen(text), env, &v);
  check(name, !ok, "`%s`: got %ld, want unknown", text, (long)v);
}

static void truth(const char *name, const char *text, int want) {
  int got = kl_consteval_truth(text, strlen(text), &pp);
  check(name, got == want, "`%s`: got %d, want %d", text, got, want);
}

int main(void) {
  value("consteval-precedence", "2 + 3 * 4 - (1 << 2)", &code, 10);
  value("consteval-names", "HALF * N + 1", &code, 9);
  value("consteval-suffixes-hex", "0x20u * 2UL + 010", &code, 72);
  value("consteval-digit-separator", "1'024", &code, 1024);
  value("consteval-comparisons", "(3 < 4) + (4 <= 4) + (5 > 6) + (1 == 1) + (1 != 1)", &code, 3);
  value("consteval-ternary", "N > 2 ? 16 : 8", &code, 16);
  value("consteval-sizeof", "16 / sizeof(float)", &code, 4);
  value("consteval-casts", "uint(N) * (int)2 + int(1)", &code, 9);
  value("consteval-min-max", "metal::min(N, 3) + max(1, 2)", &code, 5);
  value("consteval-c-division", "-7 / 2", &code, -3);
  value("consteval-bool-literals", "true + true", &code, 2);
  value("consteval-comments", "4 /* lanes */ * 8 // rows", &code, 32);
  unknown("consteval-runtime-name", "n * 4", &code);
  unknown("consteval-division-by-zero", "4 / (N - 4)", &code);
  unknown("consteval-overflow", "9223372036854775807 + 1", &code);
  unknown("consteval-float", "1.5 * 2", &code);
  unknown("consteval-cycle", "LOOP", &code);
  unknown("consteval-left-over", "4 4", &code);
  unknown("consteval-call", "f(4)", &code);
  unknown("consteval-empty", "", &code);
  unknown("consteval-unsigned-wrap-compare", "-1 < 0u", &code);
  unknown("consteval-unsigned-cast-negative", "uint(-1) > 0", &code);
  unknown("consteval-c-cast-negative", "(uint)-1 / 2", &code);
  unknown("consteval-narrowing-cast", "ushort(70000)", &code);
  unknown("consteval-unsigned-negate", "-1u", &code);
  value("consteval-unsigned-in-range", "256u / 32u + (uint)3", &code, 11);
  value("consteval-c-cast-bool", "(bool)2 == 1", &code, 1);
  unknown("consteval-self-reference", "SELF", &code);
  unknown("consteval-exponential", "BOMB", &code);
  {
    /* 300,000 nested conditionals must not overflow the stack. */
    size_t n = 300000;
    char *deep = malloc(n * 6 + 8);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += (size_t)sprintf(deep + o, "0?1:");
    strcpy(deep + o, "256");
    unknown("consteval-deep-ternary", deep, &code);
    free(deep);
  }

  truth("consteval-if-zero", "0", 0);
  truth("consteval-defined-paren", "defined(DEFINED)", 1);
  truth("consteval-defined-bare", "defined DEFINED && !defined GONE", 1);
  truth("consteval-defined-unknown", "defined(OTHER)", -1);
  truth("consteval-and-short-circuit", "0 && defined(OTHER)", 0);
  truth("consteval-and-unknown-false", "defined(OTHER) && GONE", 0);
  truth("consteval-or-short-circuit", "defined(OTHER) || 1", 1);
  truth("consteval-or-unknown", "defined(OTHER) || 0", -1);
  truth("consteval-undefined-name-is-zero", "GONE >= 310", 0);
  truth("consteval-unknown-name", "__METAL_VERSION__ >= 310", -1);
  truth("consteval-malformed", "defined(", -1);

  int64_t r = 0;
  check("consteval-apply-floordiv", kl_consteval_apply(KL_COP_FLOORDIV, -7, 2, &r) && r == -4,
        "%ld", (long)r);
  check("consteval-apply-floormod", kl_consteval_apply(KL_COP_FLOORMOD, -7, 2, &r) && r == 1, "%ld",
        (long)r);
  check("consteval-apply-exactdiv", !kl_consteval_apply(KL_COP_EXACTDIV, 7, 2, &r), "7/2 is exact");
  check("consteval-apply-roundup", kl_consteval_apply(KL_COP_ROUNDUP, 1000, 256, &r) && r == 1024,
        "%ld", (long)r);
  check("consteval-apply-shift", !kl_consteval_apply(KL_COP_SHL, 1, 63, &r), "1 << 63 overflows");
  return failures ? 1 : 0;
}
