/* Types: declared types resolved through typedef/using aliases and template bindings, down to
 * MSL built-in types (for element sizes and half/bfloat checks). */
#ifndef KL_TYPES_H
#define KL_TYPES_H

#include <stddef.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/model.h"
#include "analyzer/core/node.h"
#include "grammar/inst.h"
#include "grammar/msl.h"

/* Template parameter name bound to a type ("T" -> "half"). */
struct kl_binding {
  const char *name;
  const char *type;
};

/* One instantiation of a templated kernel: its bindings and how to name it in messages. */
struct kl_bindings {
  const struct kl_binding *items;
  size_t n;
  const char *label;  /* "gemv<half>" or the host name; NULL for a non-template */
  const char **names; /* every instantiation (host name) or kernel these bindings stand for */
  size_t nnames;
  const struct kl_instance **instances; /* the explicit instantiations among them, in file order
                                           (kl_types_instances) */
  size_t ninstances;
};

struct kl_alias {
  const char *name;
  const char *type;
};

/* File-wide alias table. */
struct kl_types {
  struct kl_alias *aliases;
  size_t n, cap;
  uint32_t *slots; /* by hash of name, 1 + the first alias of that name; set by kl_types_collect */
  size_t nslots;   /* 0 (search the list) or a power of two above n */
};

/* Collect `typedef` and `using X = Y;` aliases declared anywhere in the unit. */
void kl_types_collect(struct kl_arena *a, const struct kl_unit *unit, struct kl_types *out);
/* Canonical type name: strips const/volatile and `metal::`, follows bindings then aliases. */
const char *kl_types_resolve(struct kl_arena *a, const struct kl_types *t, const char *type,
                             const struct kl_bindings *b);
/* The built-in MSL type a declared type resolves to, or NULL (structs, unbound templates). */
const struct kl_msl_type *kl_types_builtin(struct kl_arena *a, const struct kl_types *t,
                                           const char *type, const struct kl_bindings *b);
/* kl_types_builtin, and in *bound whether a binding of b decided it: when none did, bindings
 * with the same names in the same order give the same answer. */
const struct kl_msl_type *kl_types_builtin_in(struct kl_arena *a, const struct kl_types *t,
                                              const char *type, const struct kl_bindings *b,
                                              bool *bound);
/* The template arguments of instantiation in, with a macro that stands for an argument list
 * (`#define FA_TYPES half, half4, ...`) spread in its place; returns their count. */
size_t kl_types_targs(struct kl_arena *a, const struct kl_model *m, const struct kl_instance *in,
                      const char ***out);
/* The distinct instantiations of function f: one empty set for a non-template, one per distinct
 * explicit instantiation for a template (none when it is never instantiated in the file). */
size_t kl_types_instances(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                          struct kl_bindings **out);
/* The distinct instantiations of template f that other files of the run make (xinsts: a
 * header's kernel, instantiated by the files including it), as kl_types_instances; their
 * instances are not in this unit, so each set has names but no instances. */
size_t kl_types_xinstances(struct kl_arena *a, const struct kl_function *f,
                           const struct kl_inst *xinsts, size_t nxinsts,
                           struct kl_bindings **out);

/* What typing an expression needs: where it is (f, under bindings b) and what names mean. */
struct kl_types_env {
  struct kl_arena *a;
  const struct kl_types *types;
  const struct kl_unit *unit;
  const struct kl_function *f; /* the function the expression is in (its locals and params) */
  const struct kl_bindings *b; /* template bindings in force, or NULL */
  bool math_builtins;    /* a math builtin (exp, max, fma) computes in its argument type (float
                            for bfloat, which MSL does not overload them for); false where a header
                            the unit does not see may overload it */
  unsigned char *looked; /* NULL, or one flag per binding of b, set where a type is resolved
                            through it: which bindings an answer depends on (types.c) */
};

/* The canonical type of an expression, or NULL when it is not known: a local or parameter, an
 * element of a buffer or vector, a cast or constructor, an arithmetic operation on operands of
 * one type, a math builtin (with math_builtins: float on bfloat). Fields of structs and calls
 * of functions are not followed. */
const char *kl_types_expr(struct kl_types_env *env, TSNode e);
/* Whether a type names a bfloat type (scalar, vector or matrix) under env's bindings. */
bool kl_types_is_bfloat(struct kl_types_env *env, const char *type);
/* Whether e computes in bfloat: + - * / (or their compound assignments) with both operands
 * bfloat, unary minus of bfloat. bfloat with float promotes to float, and a math builtin on
 * bfloat converts it to float (MSL has no bfloat overloads): conversions, not bfloat
 * arithmetic. */
bool kl_types_bfloat_op(struct kl_types_env *env, TSNode e);
/* Where a function computes in bfloat: at, the operation or the call of the helper that does, in
 * the function itself; op, the operation, in whichever function it is. */
struct kl_types_bfloat_site {
  TSNode at, op;
};

/* One function under one set of bindings (kl_types_bfloat's memo, private to types.c and
 * types_memo.c): its answer, or that it is being walked; and what the answer was read from, so
 * that other bindings can be shown to get it too. */
struct kl_types_bf_memo {
  const struct kl_function *f;
  const char *key; /* the bindings, "T=bfloat;N=4;" */
  bool walking, found;
  struct kl_types_bfloat_site site;
  const struct kl_binding *items; /* the bindings themselves */
  size_t n;
  const unsigned char *looked; /* per binding, whether the walk resolved a type through it */
  bool may, cut;               /* the walk's kl_types_bf_may; whether it cut a call short */
  const struct kl_function *const *callees;
  size_t ncallees;
};

struct kl_types_bf_index;
struct kl_types_bf_ext;
struct kl_xdefs;

/* What kl_types_bfloat_computes needs, kept for one check run: it remembers each answer, so a
 * function is walked once per distinct bindings however many calls reach it, and once for
 * bindings that differ only where its walk never resolved a type. Zero the fields after
 * math_builtins. */
struct kl_types_bfloat {
  struct kl_arena *a;
  const struct kl_model *m;
  const struct kl_types *types;
  bool math_builtins;            /* as in kl_types_env */
  struct kl_xdefs *xdefs;        /* the headers' definitions the unit sees, or NULL */
  struct kl_types_bf_ext **ext;  /* the aliases of the headers walked into (types.c); each
                                    entry apart, since callers keep pointers into it */
  size_t next, cap_ext;
  size_t walks;                  /* function bodies walked so far */
  struct kl_types_bf_memo *memo; /* the answers, private to analyzer/core/types*.c */
  size_t nmemo, cap_memo;
  struct kl_types_bf_index *index; /* the answers by function and key, and the walks that other
                                      bindings can share by what they depend on (types_memo.c) */
  struct kl_node_map callees; /* the function each call met names (types.c) */
  struct kl_node_map exprs;   /* the types of expressions, by node and walk (types.c) */
  struct kl_node_map may;     /* per function, its kl_types_bf_may without bindings (types.c) */
  struct kl_node_map flat;    /* per function, the nodes of its body a walk can stop at or
                                 prune (types_memo.c): collected once, not per bindings */
  struct kl_node_map ops;      /* per operation, whether it is in bfloat, by what it depends on */
  struct kl_node_map branches; /* per if_statement, the branch its condition folds to, likewise */
  struct kl_node_map targets;  /* per call, the helper and bindings it is followed with, likewise:
                                  each answer kept with the bindings it looked at (types_memo.c),
                                  so a walk under other bindings that agree on those reuses it */
  struct kl_types_bf_spelt *spelt; /* the words of each bindings key met, hashed (types.c) */
  size_t nspelt, cap_spelt;
  struct kl_types_bf_spelt *grown; /* per binding type met, whether it has one of words in it
                                      (n 1 or 0), hashed (types.c) */
  size_t ngrown, cap_grown;
  const char **words; /* what a bfloat type is spelled with, without bindings (types.c) */
  size_t nwords;
  bool *words_in; /* per alias of types, whether its name is one of words (types.c) */
  bool have_words;
  const struct kl_function **walking; /* the functions being walked, outermost first */
  size_t nwalking, cap_walking;
};

/* Where, if anywhere, f computes in bfloat under bindings b (NULL for none), itself or in the
 * helpers it calls, each followed with what its call binds (explicit template arguments, then
 * the types of the arguments passed to parameters of a template parameter's type), a functor
 * (`op(a, b)`, `op.scan(x)`, op of type `Op = CumSum<T>`: the struct's parameters bound from
 * that type; a temporary `Op{}(a, b)`); not into a branch b's constants rule out. A function or
 * struct the unit does not define is looked up in the headers it sees (c->xdefs), when the call
 * passes a bfloat value or names a bfloat type. Not followed: a call nothing resolves, nor one
 * back into a function being walked. c remembers b's items: they must live as long as c. */
bool kl_types_bfloat_computes(struct kl_types_bfloat *c, const struct kl_function *f,
                              const struct kl_bindings *b, struct kl_types_bfloat_site *out);
/* Free the tables c keeps its answers in (the answers themselves live in c->a). */
void kl_types_bfloat_free(struct kl_types_bfloat *c);
/* Whether a call_expression calls a Metal math builtin by name (exp, metal::max, fast::exp). */
bool kl_types_is_math_call(const struct kl_unit *unit, TSNode call);
/* The bindings a templated helper or struct member f that the unit never instantiates takes
 * from its calls in the unit's other functions, under each binding of those (their
 * instantiations, or their own callers', a few calls deep): `h<T, 4>(...)`,
 * `GEMVKernel<T, BM>::run(...)` (also through `using K = GEMVKernel<T, BM>;`), and a sibling
 * member's unqualified call. names gives the kernels each set comes from. */
size_t kl_types_callers(struct kl_arena *a, const struct kl_model *m, const struct kl_types *t,
                        const struct kl_function *f, struct kl_bindings **out);
/* What kl_types_callers_in keeps over one unit (zero it first; it lives in the arena passed):
 * the functions that call each name, found once, and each function's answer at each depth, so
 * that the callers of a helper's callers are not searched for again per helper. */
struct kl_types_callers_memo {
  struct kl_types_callers_index *index; /* private to types_calls.c */
};
/* kl_types_callers for a unit's functions asked in turn, remembering in memo (the same a, m and
 * t every call). */
size_t kl_types_callers_in(struct kl_types_callers_memo *memo, struct kl_arena *a,
                           const struct kl_model *m, const struct kl_types *t,
                           const struct kl_function *f, struct kl_bindings **out);

#endif
