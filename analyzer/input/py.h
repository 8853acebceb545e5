/* The Python front end's shared state and scopes, internal to analyzer/input/python.c (the
 * reader of kernel-making calls) and analyzer/input/pyval.c (the evaluator of the values that
 * build their sources and sizes): the per-file reader state, small node helpers, the buffer a
 * source is built in with its offset map, string-literal decoding, imports, assignments and the
 * lookup of a name as Python scopes it, and call arguments. */
#ifndef KL_PY_H
#define KL_PY_H

#include <stdbool.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"
#include "analyzer/input/pyembed.h"
#include "analyzer/input/source.h"
#include "analyzer/report/diag.h"

#ifndef KL_PY_PARSE_TIMEOUT_US /* a profiling build under valgrind may set a longer one */
#define KL_PY_PARSE_TIMEOUT_US 10000000u
#endif
/* Names followed through names, and expression depth, before a value counts as unknown. */
#define KL_PY_MAX_DEPTH 24
/* Longest expression a message quotes as written. */
#define KL_PY_MAX_SHOWN 48
/* Expressions evaluated per file: names that each refer to several others could otherwise make
 * the work exponential in the depth limit. */
#define KL_PY_BUDGET 200000
/* Bytes of values put into texts (kl_py_put) per build: a text made of a name's text twice, made
 * of the next name's twice and so on, doubles at every name (22 names took 6 s and 660 MB before
 * this bound); a real kernel source is a few KB. */
#define KL_PY_TEXT_BUDGET (1u << 20)

enum kl_py_api { KL_PY_MLX, KL_PY_MLX_OLD, KL_PY_TORCH };

struct kl_py_alias {
  const char *name, *path;
};

/* A name (or attribute text such as `self.k`) bound to a value in a scope. */
struct kl_py_asg {
  const char *target;
  TSNode value; /* null when not a plain value (loop target, +=, unpacking) */
  TSNode stmt;  /* the assignment (its scope is decided once globals are known) */
  TSNode scope; /* function_definition or the module */
  uint32_t end; /* the value is visible from here on */
};

struct kl_py_global {
  TSNode fn;
  const char *name;
};

/* A name through which code reaches a kernel object. */
struct kl_py_binding {
  const char *var;
  TSNode scope;
  uint32_t at;
  size_t def;
};

/* The parameters of a function bound by one call of it, while a value inside it is read: a
 * factory instance, or a helper that returns a source. Its arguments are read where the call is,
 * through the rest of the chain. */
struct kl_py_env {
  TSNode fn, call; /* call null: only the parameters' defaults are known */
  const struct kl_py_env *up;
  bool opaque; /* too many calls to tell apart: every parameter is unknown */
};

/* Conditionals with an unknown test that one build may choose between (2^4 = 16 combinations). */
#define KL_PY_MAX_CHOICES 4
/* Instances of one kernel-making call: factory argument sets times choices. */
#define KL_PY_MAX_INSTANCES 16
/* Distinct factory argument sets built apart; more fall back to one opaque instance. */
#define KL_PY_MAX_ENVS 8
/* Loops unrolled one inside another while a text is built, and iterations of one loop. */
#define KL_PY_MAX_LOOPS 4
#define KL_PY_MAX_ITERS 64
/* Opaque fields in one unit before its source counts as out of reach. */
#define KL_PY_MAX_FIELDS 1024

struct kl_py_def {
  enum kl_py_api api;
  TSNode call;
  const char *factory; /* the function that returns it, when it is returned */
  TSNode *uses;        /* calls that dispatch it */
  size_t nuses, cap_uses;
  TSNode *tmpl; /* MetalKernel: `kernel.template(T=...)` calls */
  size_t ntmpl, cap_tmpl;
};

struct kl_py {
  struct kl_arena *a;
  const struct kl_source *src;
  const char *t;
  TSNode root;
  struct kl_py_alias *aliases;
  size_t naliases, cap_aliases;
  TSNode *asg_nodes;
  size_t nasg_nodes, cap_asg_nodes;
  struct kl_py_asg *asgs;
  size_t nasgs, cap_asgs;
  /* asgs[0, asg_indexed) chained by target (kl_py_lookup): per slot the first and last (index
   * + 1), per assignment the next one in its slot, in order. */
  uint32_t *asg_head, *asg_tail, *asg_next;
  size_t asg_nslots, asg_indexed;
  struct kl_py_global *globals;
  size_t nglobals, cap_globals;
  TSNode *calls;
  size_t ncalls, cap_calls;
  struct kl_py_def *defs;
  size_t ndefs, cap_defs;
  struct kl_py_binding *binds;
  size_t nbinds, cap_binds;
  TSNode *fns; /* every function_definition, in document order */
  size_t nfns, cap_fns;
  /* The return statements of functions of fns (not of a function, class or lambda nested in
   * one), in document order, each with its function's index in fns. */
  struct kl_py_ret {
    TSNode node;
    size_t fn;
  } *rets;
  size_t nrets, cap_rets;
  /* Per call of calls and function of fns, the word its callee ends in or its name
   * (kl_pyval_reaches's necessary condition), once; NULL until asked. */
  const char **call_words, **fn_words;
  size_t nfn_words;
  struct kl_python *out;
  unsigned budget;
  uint32_t text_budget; /* what is left of KL_PY_TEXT_BUDGET */
  /* The string literals being read, outermost first, each with the parameter bindings it is read
   * under (a helper's literal is read again, with its own bindings, by a nested call of it). */
  struct {
    const void *id;
    const struct kl_py_env *env;
  } in_text[KL_PY_MAX_DEPTH + 1];
  int nin_text;
  const struct kl_py_env *env; /* parameter bindings in force */
  unsigned choice;             /* bit i: take the else branch of the i-th unknown conditional */
  unsigned nbits;              /* how many of those bits the builds of this call enumerate */
  bool first_alt;              /* a conditional past them takes its first branch, not opaque */
  bool hdr_noted;              /* the call's header was said to be out of reach */
  unsigned nchoices;           /* unknown conditionals met by this build */
  const char *choice_text[KL_PY_MAX_CHOICES];
  TSNode choice_node[KL_PY_MAX_CHOICES];                  /* their tests */
  const struct kl_py_env *choice_env[KL_PY_MAX_CHOICES]; /* the bindings each was read under */
  struct kl_py_field *fields; /* opaque fields of the unit being built */
  size_t nfields, cap_fields;
  /* Loop variables of the loops being unrolled (kl_py_grow), innermost last. */
  struct kl_py_loopvar {
    const char *name;
    TSNode loop; /* the for statement or comprehension: names inside it only */
    TSNode node; /* the item it holds, or null for an integer of range() */
    int64_t value;
  } loopvars[KL_PY_MAX_LOOPS];
  int nloopvars;
};

/* Text built from pieces of the file and made-up pieces, with its map back into the file. */
struct kl_py_buf {
  struct kl_arena *a;
  char *p;
  uint32_t n, cap;
  struct kl_offmap map;
  const char *why; /* set when a source could not be resolved */
  TSNode why_node;
  bool skeleton; /* a field whose value is unknown becomes an opaque identifier */
  bool inner;    /* the text is a value put into another text: never a line of its own */
};

/* The null node: what a lookup that finds nothing gives. */
extern const TSNode kl_py_null;

/* Value of keyword argument `name` (also inside a `**opts` it unpacks), or of the pos-th
 * positional argument (pos < 0: none). */
TSNode kl_py_arg(struct kl_py *p, TSNode call, const char *name, int pos);
/* Record the assignments statement n makes (targets and values) in scope. */
void kl_py_asg_node(struct kl_py *p, TSNode n, TSNode scope);
/* Append another buffer's bytes to b, with their map into the file. */
void kl_py_buf_append(struct kl_py_buf *b, const struct kl_py_buf *o);
/* Bytes that stand for the file range [file_off, file_off + file_len): an escape, or (with
 * file_len 0) text made up at that place. */
void kl_py_buf_collapsed(struct kl_py_buf *b, const char *s, uint32_t n, uint32_t file_off,
                         uint32_t file_len);
/* Start an empty buffer in arena a. */
void kl_py_buf_init(struct kl_py_buf *b, struct kl_arena *a);
/* Append n bytes of s with no map into the file (the caller maps them). */
void kl_py_buf_raw(struct kl_py_buf *b, const char *s, uint32_t n);
/* Append made-up text s, mapped to the empty file range at anchor. */
void kl_py_buf_synth(struct kl_py_buf *b, const char *s, uint32_t anchor);
/* Whether node inner lies within node outer's bytes. */
bool kl_py_contains(TSNode outer, TSNode inner);
/* Decode the body of one string literal, file bytes [s, e), into b. Every escape maps its
 * decoded bytes onto the escape's own file range; everything else maps byte for byte. */
void kl_py_decode(struct kl_py_buf *b, const char *t, uint32_t s, uint32_t e, bool raw,
                  bool fstr);
/* Dotted path of a name or attribute chain under the file's imports: `mx.fast.metal_kernel`
 * after `import mlx.core as mx` is "mlx.core.fast.metal_kernel". */
const char *kl_py_dotted(struct kl_py *p, TSNode n, int depth);
/* Record why b's source cannot be read (the first reason wins), at node at; false. */
bool kl_py_fail(struct kl_py_buf *b, TSNode at, const char *why);
/* The child of n in field name (a literal), by field id. */
TSNode kl_py_field(TSNode n, const char *name);
/* Whether c can be part of a Python identifier (ASCII). */
bool kl_py_idchar(char c);
/* Whether s is a whole Python identifier. */
bool kl_py_ident(const char *s);
/* Record the aliases an `import a.b as c` statement makes. */
void kl_py_import(struct kl_py *p, TSNode n);
/* Record the aliases a `from m import a as b` statement makes. */
void kl_py_import_from(struct kl_py *p, TSNode n);
/* By symbol and field id (analyzer/core/node.h): type and name must be literals. */
bool kl_py_is(TSNode n, const char *type);
/* Whether name is a parameter of function fn (a runtime value there). */
bool kl_py_is_param(struct kl_py *p, TSNode fn, const char *name);
/* The value bound to name (an identifier or attribute text) where `at` is. */
bool kl_py_lookup(struct kl_py *p, const char *name, TSNode at, TSNode *value);
/* The loop variable identifier id names, while a loop that holds it is unrolled; else NULL. */
const struct kl_py_loopvar *kl_py_loopvar(struct kl_py *p, TSNode id);
/* What parameter name of fn holds: the argument of the call that binds fn in the chain in force,
 * else its default. A method's call does not pass `self`. */
bool kl_py_param_value(struct kl_py *p, TSNode fn, const char *name, TSNode *value);
/* Follow a name to the expression it stands for (through at most KL_PY_MAX_DEPTH names). */
TSNode kl_py_resolve(struct kl_py *p, TSNode n);
/* The innermost function that holds n (not n itself), or the module. From the functions the
 * walk collected: ts_node_parent re-descends from the root, quadratic over a large module. */
TSNode kl_py_scope(struct kl_py *p, TSNode n);
/* The file span of node n. */
struct kl_span kl_py_span(struct kl_py *p, TSNode n);
/* Node n's text, copied into the arena. */
char *kl_py_text(struct kl_py *p, TSNode n);
/* Whether node n's text is exactly s. */
bool kl_py_text_is(struct kl_py *p, TSNode n, const char *s);
/* n without the parentheses around it. */
TSNode kl_py_unparen(TSNode n);

#endif
