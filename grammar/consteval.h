/* The one integer constant evaluator. Every fold kernlint makes goes through it: `#if`
 * conditions (grammar/preproc.h), `[[max_total_threads_per_threadgroup(N)]]` sizes and template
 * arguments (rules), and the launch sizes the Python and host front ends read
 * (analyzer/input/dispatch.h, which builds expression trees and folds each node with
 * kl_consteval_apply).
 *
 * Values are three-valued: known, or unknown (a runtime value, a macro the build may define, an
 * overflow, an unsigned wrap-around, a cast that truncates, a name inside its own expansion).
 * `&&`, `||` and `?:` short-circuit on a known operand, so `0 && X` is known false whatever X
 * is; every other operator is unknown when an operand is. */
#ifndef KL_CONSTEVAL_H
#define KL_CONSTEVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kl_cop {
  KL_COP_ADD,
  KL_COP_SUB,
  KL_COP_MUL,
  KL_COP_DIV,      /* C: truncates toward zero */
  KL_COP_FLOORDIV, /* Python //: rounds toward minus infinity */
  KL_COP_EXACTDIV, /* Python /: only an exact quotient is an integer */
  KL_COP_MOD,      /* C % */
  KL_COP_FLOORMOD, /* Python %: the sign of the divisor */
  KL_COP_SHL,
  KL_COP_SHR,
  KL_COP_BITAND,
  KL_COP_BITOR,
  KL_COP_BITXOR,
  KL_COP_LT,
  KL_COP_LE,
  KL_COP_GT,
  KL_COP_GE,
  KL_COP_EQ,
  KL_COP_NE,
  KL_COP_AND, /* logical */
  KL_COP_OR,
  KL_COP_MIN,
  KL_COP_MAX,
  KL_COP_CEILDIV, /* (a + b - 1) / b for a >= 0, b > 0 */
  KL_COP_ROUNDUP, /* a rounded up to a multiple of b */
  KL_COP_NEG,     /* unary: b is ignored */
  KL_COP_NOT,
  KL_COP_BITNOT
};

/* a op b (b ignored for unary operators); false on overflow, division by zero or a bad shift. */
bool kl_consteval_apply(enum kl_cop op, int64_t a, int64_t b, int64_t *out);

/* Where the names of an expression get their meaning. Every callback may be NULL. */
struct kl_consteval_env {
  /* The text a name stands for (a macro body, a constant's initialiser, a template argument),
   * or NULL when the name has no constant meaning. Texts are evaluated in turn, to a depth. */
  const char *(*lookup)(void *ctx, const char *name, size_t n);
  /* `defined NAME`: 1 defined, 0 known undefined, -1 unknown (the build may define it). */
  int (*defined)(void *ctx, const char *name, size_t n);
  /* sizeof(TYPE) in bytes, or 0 when unknown. */
  unsigned (*size_of)(void *ctx, const char *type, size_t n);
  void *ctx;
  /* #if rules: `defined` is an operator, and a name the build is known not to define is 0.
   * (`true` and `false` are 1 and 0 everywhere, as in C++.) */
  bool preprocessor;
};

/* Evaluate the C expression in text[0, len). True with *out set when the value is known and
 * the whole text is one expression; false when anything is unknown or left over. */
bool kl_consteval_eval(const char *text, size_t len, const struct kl_consteval_env *env,
                       int64_t *out);

/* Three-valued form of kl_consteval_eval for conditions: 1 true, 0 false, -1 unknown. */
int kl_consteval_truth(const char *text, size_t len, const struct kl_consteval_env *env);

#endif
