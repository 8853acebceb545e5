/* The kernel model: what a parsed unit declares, in terms the analyses use. */
#ifndef KL_MODEL_H
#define KL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "grammar/dialect.h"
#include "grammar/msl.h"

enum kl_addrspace {
  KL_AS_NONE = 0, /* no address space written (a value, or thread by default) */
  KL_AS_DEVICE,
  KL_AS_CONSTANT,
  KL_AS_THREADGROUP,
  KL_AS_THREAD,
  KL_AS_THREADGROUP_IMAGEBLOCK,
  KL_AS_RAY_DATA,
  KL_AS_OBJECT_DATA
};

/* A parameter or local: name, declared type and where it lives. */
struct kl_var {
  const char *name;
  const char *type; /* base type as written, without address space, const, * or & ("half4") */
  enum kl_addrspace as;
  bool is_const;
  bool is_pointer;        /* `T*` (a buffer) */
  bool is_reference;      /* `T&` */
  const char *array_dims; /* "[32][33]" for arrays, else NULL */
  const char *attr;       /* attribute name without [[ ]]: "buffer", "thread_position_in_grid" */
  int attr_index;         /* N of [[buffer(N)]] / [[threadgroup(N)]], else -1 */
  const struct kl_msl_coord *coord; /* set when the attribute is a thread coordinate */
  TSNode node;                      /* the declaration (parameter_declaration or declaration) */
  TSNode name_node;                 /* the identifier */
};

/* A function attribute such as [[max_total_threads_per_threadgroup(1024)]] or [[host_name("x")]].
 */
struct kl_attr {
  const char *name;
  const char *arg; /* argument text, or NULL */
  TSNode node;     /* the attribute node */
  TSNode arg_node; /* the argument expression (null node when absent) */
};

/* An alias of a type name, at file scope or in a body: `using K = GEMVKernel<T, 4>;` names
 * GEMVKernel. */
struct kl_type_alias {
  const char *name;
  const char *target; /* the named type (a template's name), or NULL when it is no plain name */
  TSNode args;        /* the template arguments it gives that type (`<T, 4>`), or a null node */
};

struct kl_function {
  const char *name;
  const char *owner; /* for a member function, the struct or class it belongs to, else NULL */
  TSNode owner_body;  /* and, when defined in it, that struct's field_declaration_list */
  bool is_kernel;
  const char **tparams; /* template parameter names */
  const char **tdefaults; /* each one's default argument as written, or NULL */
  bool *tvalue;           /* each one is a value (`int N`, `bool B`), not a type */
  size_t *tpos;           /* each one's position in the list (unnamed ones are not listed) */
  size_t ntparams;
  const char **otparams; /* a member of a struct template: the struct's template parameters (a
                            member with none of its own takes them as its tparams too) */
  size_t notparams;
  struct kl_var *params;
  size_t nparams;
  struct kl_var *locals; /* every declaration in the body, in source order */
  size_t nlocals, cap_locals;
  struct kl_var *tg_decls; /* threadgroup-memory declarations (params and locals) */
  size_t ntg_decls, cap_tg_decls;
  struct kl_attr *attrs;
  size_t nattrs, cap_attrs;
  const char **callees; /* same-file functions this one calls, each once */
  size_t *callee_index; /* callees[i] is the model's functions[callee_index[i]] */
  size_t ncallees, cap_callees;
  TSNode node; /* function_definition (or template_declaration around it) */
  TSNode body; /* compound_statement */
  TSNode name_node;
  struct kl_type_alias *aliases; /* `using`/`typedef` names among the body's statements */
  size_t naliases, cap_aliases;
  TSNode *calls; /* every call_expression in the body, in preorder */
  const struct kl_function **call_targets; /* each one's same-file callee, or NULL */
  size_t ncalls, cap_calls;
};

/* An explicit instantiation: `template [[host_name("n")]] [[kernel]] decltype(f<half>) f<half>;`.
 */
struct kl_instance {
  const char *function; /* the template's name */
  const char *host_name;
  const char **targs; /* template arguments as written */
  size_t ntargs;
  uint32_t start, end; /* the statement in the unit's buffer */
  const struct kl_inst *text; /* read as text and not parsed (see kl_unit), or NULL */
};

/* A name with a constant meaning at file scope: `#define N 4`, `constant constexpr int N = 4;`,
 * `const uint N = 4;`, an enumerator. */
struct kl_const {
  const char *name;
  const char *text; /* the value as written */
  bool ambiguous;   /* defined twice with different text (#if/#else): no constant meaning */
  TSNode value;     /* a declared constant's initialiser; null for a macro, an enumerator */
  bool macro;       /* an object-like `#define` */
};

/* A function-like macro at file scope, `#define IDX(i) (i * 4 + lid)`. */
struct kl_fmacro {
  const char *name;
  TSNode def;     /* its preproc_function_def */
  bool ambiguous; /* defined twice with different text: no one meaning */
};

/* A `constant bool NAME [[function_constant(i)]];`: the host picks its value when it builds the
 * pipeline, so each value makes a different kernel. */
struct kl_fconst {
  const char *name;
  bool is_bool;
  TSNode node;
};


struct kl_model {
  const struct kl_unit *unit;
  struct kl_function *functions; /* every function definition in the unit, kernels included */
  size_t nfunctions, cap_functions;
  struct kl_instance *instances;
  size_t ninstances, cap_instances;
  struct kl_const *consts;
  size_t nconsts, cap_consts;
  struct kl_fconst *fconsts;
  size_t nfconsts, cap_fconsts;
  struct kl_fmacro *fmacros;
  size_t nfmacros, cap_fmacros;
  struct kl_type_alias *aliases; /* file-scope `using`/`typedef` names, in source order */
  size_t naliases, cap_aliases;
};

/* How many calls deep the searches through same-file helpers go (call chains are short). */
#define KL_MODEL_MAX_CALL_DEPTH 8

/* Build the model of a parsed unit; allocation goes to the arena. */
void kl_model_build(struct kl_arena *a, const struct kl_unit *unit, struct kl_model *out);
/* Function by name, or NULL. */
const struct kl_function *kl_model_function(const struct kl_model *m, const char *name);
/* The initializer of `static constexpr T name = ...;` in member function f's struct (MLX's
 * `needs_tgp_reduction = BM > 1`), or a null node. */
TSNode kl_model_member_const(const struct kl_model *m, const struct kl_function *f,
                                  const char *name, size_t len);
/* The struct or class a type names (`S`, `S<T, 4>`, or an alias of either in caller's body or
 * at file scope), in owner (cap at most 128); false when it names none. */
bool kl_model_owner_of(const struct kl_model *m, const struct kl_function *caller,
                       const char *type, char *owner, size_t cap);
/* The data fields of the struct whose member functions f is one of (one declarator each, the
 * first of a declaration), in a, in *out; their count (0 when f has no struct body). */
size_t kl_model_fields(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                       struct kl_var **out);
/* The function a call's callee node names in caller: for `Q::run` (Q a struct, a template of one,
 * or an alias of either in the caller's body or at file scope), the member run of that struct;
 * else a function that is no member. NULL when the unit defines none. */
const struct kl_function *kl_model_callee(const struct kl_model *m,
                                          const struct kl_function *caller, TSNode callee);
/* The template arguments (a template_argument_list) an alias name gives the template it names,
 * `<T, BM>` of `using kernel_t = GEMVKernel<T, BM>;`, found as kl_model_callee finds a scope's
 * alias (the caller's body first, then the file, aliases of aliases a few deep); *in_body says
 * whether the alias holding them is the caller's. A null node when there is none. */
TSNode kl_model_alias_args(const struct kl_model *m, const struct kl_function *caller,
                           const char *name, bool *in_body);
/* The member function name[0, len) of the struct a variable of declared type type is (`Reducer`,
 * `Reducer<T, 4>`, or an alias of either, as for kl_model_callee), or NULL. */
const struct kl_function *kl_model_method(const struct kl_model *m,
                                          const struct kl_function *caller, const char *type,
                                          const char *name, size_t len);
/* Whether kernel f is the one a launch names: f's name, or the host name of one of its
 * instantiations (with prefix, any that starts with kernel). */
bool kl_model_names(const struct kl_model *m, const char *kernel, bool prefix,
                    const struct kl_function *f);
/* The text a file-scope constant stands for, or NULL (unknown, or defined two ways). */
const char *kl_model_const(const struct kl_model *m, const char *name, size_t len);
/* The initialiser expression of a file-scope declared constant (not a macro or enumerator), or
 * a null node (unknown, or defined two ways). */
TSNode kl_model_const_value(const struct kl_model *m, const char *name, size_t len);
/* Whether a file-scope constant of this name (kl_model_const) is an object-like macro. */
bool kl_model_const_is_macro(const struct kl_model *m, const char *name, size_t len);
/* The definition (a preproc_function_def) of the file's function-like macro of this name, or a
 * null node (none, or defined two ways). */
TSNode kl_model_fmacro(const struct kl_model *m, const char *name, size_t len);
/* Function constant by name, or NULL. */
const struct kl_fconst *kl_model_fconst(const struct kl_model *m, const char *name, size_t len);
/* Attribute of a function by name, or NULL. */
const struct kl_attr *kl_model_attr(const struct kl_function *f, const char *name);
/* Local or parameter of f by name (innermost declaration first), or NULL. */
const struct kl_var *kl_model_var(const struct kl_function *f, const char *name);
/* The first `simd_*` reduction (simd_sum, simd_max, ...) f makes, directly or through the
 * same-file helpers it calls, or NULL. */
const char *kl_model_simd_reduction(struct kl_arena *a, const struct kl_model *m,
                                    const struct kl_function *f);
/* The name inside a declarator or a call's callee: `f` of `f`, `S::f`, `f<T>`, `metal::f`. */
TSNode kl_model_name_of(TSNode n);
/* Name of an address space as written in MSL ("device"), or "" for none. */
const char *kl_model_addrspace_name(enum kl_addrspace as);

#endif
