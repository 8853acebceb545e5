/* The lowering's state, shared by its three files (lower.c: names, SSA and the driver;
 * lower_expr.c: expressions; lower_stmt.c: statements and inlining). Not a public header. */
#ifndef KL_IR_LOWER_INT_H
#define KL_IR_LOWER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <tree_sitter/api.h>

#include "analyzer/core/config.h"
#include "analyzer/ir/ir.h"
#include "analyzer/ir/spec.h"
#include "analyzer/core/model.h"
#include "analyzer/core/node.h"

/* Caps: instructions per kernel (then it stops, flagged truncated), nesting of the recursive
 * walk (deeper trees are OPAQUE), switch cases lowered. */
enum { KL_LOWER_MAX_INS = 200000, KL_LOWER_MAX_NEST = 400 };
/* Inlined calls per kernel (more are CALLs: helpers that call helpers several times each grow
 * as a power), and instructions per unit (every specialisation of every kernel). */
enum { KL_LOWER_MAX_SITES = 4096, KL_LOWER_UNIT_INS = 4000000 };

/* How a name is bound. */
enum kl_lb_kind {
  KL_LB_VALUE = 1, /* an SSA scalar or pointer: its value is cur[sym] */
  KL_LB_MEM,       /* memory (ALLOC, or a reference/aggregate ARG): addr is its address */
  KL_LB_COORD,     /* a vector thread coordinate: comp[0..2] are its x, y, z */
  KL_LB_LAMBDA     /* a local lambda (`auto f = [&](uint k) {...};`): lam is its expression */
};

/* A value with what the lowering knows of its type. */
struct kl_rv {
  uint32_t v;
  bool ptr;          /* v is an address */
  uint8_t as;        /* of the memory it points into */
  uint32_t esize;    /* element size in bytes, 0 unknown */
  const char *etype; /* pointee type (ptr), or the value's type */
  const char *dims;  /* an array's dimensions after this one ("[33]"), or NULL */
  bool coordvec;     /* a whole vector coordinate: comp[] */
  uint32_t comp[3];
};

struct kl_lbind {
  const char *name;
  uint32_t len;
  uint8_t kind;
  uint32_t sym;
  uint32_t frame;   /* the inlining frame it belongs to */
  int32_t prev;     /* the binding of the same name it shadows, or -1 */
  uint32_t slot;    /* its name's slot in the table */
  struct kl_rv mem; /* KL_LB_MEM: the address; KL_LB_VALUE: type facts (ptr, as, esize) */
  uint32_t comp[3]; /* KL_LB_COORD */
  const struct kl_var *var;
  TSNode lam; /* KL_LB_LAMBDA */
  uint32_t lam_home; /* KL_LB_LAMBDA: the frame whose names its body sees (where it is written) */
};

/* An entry of the undo log: a symbol's value before an assignment. */
struct kl_undo_e {
  uint32_t sym, old;
  uint32_t old_depth;
};

/* A snapshot at a break, continue or return: the symbols assigned since the loop began. */
struct kl_snap {
  uint32_t *syms, *vals;
  uint32_t n;
};

enum { KL_LOOP_REAL = 0, KL_LOOP_REGION = 1 };

struct kl_lloop {
  uint8_t kind;
  uint32_t ins, hdr;
  uint32_t mark;      /* undo log position at entry */
  uint32_t nsyms0;    /* symbols declared before it */
  uint32_t depth;     /* its loop depth (1 outermost) */
  uint32_t frame;     /* a region: the frame of the helper it wraps */
  uint32_t outer;     /* the block it is in */
  uint32_t body_mark; /* undo log position at the start of the body */
  struct kl_snap *breaks, *conts;
  uint32_t nbreaks, cap_breaks, nconts, cap_conts;
};

/* One inlined call (frame 0 is the kernel). */
struct kl_lframe {
  const struct kl_function *fn;
  uint32_t site;
  const struct kl_spec_bind *tb; /* the call's template arguments, folded to decimal text */
  size_t ntb;
  struct kl_rv self;           /* a method's object (address), or v = 0 */
  uint32_t ret_sym;            /* the symbol its return value is assigned to */
  uint32_t ret_val;            /* with no region: the value of its final return */
  bool region;                 /* it has an early return: lowered inside a region loop */
  bool lambda; /* a lambda's body, run where it is called: it sees the names of the frame below */
  TSNode lam;  /* and that lambda */
  uint32_t home; /* a lambda's: the frame it is written in, whose names it sees */
  struct kl_spec_bind *macros; /* #define in its body */
  size_t nmacros, cap_macros;
};

/* The unit's function prototypes (declared, not defined): each name, and the bits of its
 * non-const reference parameters (kl_lw_out_params); read once. */
struct kl_lw_protos {
  const char **names;
  uint32_t *bits;
  uint32_t n;
  bool read;
};

struct kl_lower {
  struct kl_arena *a;
  /* The unit's function prototypes when no keep holds them (kl_lw_protos_of). */
  struct kl_lw_protos own_protos;
  const struct kl_model *m;
  const struct kl_unit *u;
  const char *buf;
  const struct kl_settings *s;
  const struct kl_spec *spec;
  struct kl_ir_fn *f;
  uint32_t blk;      /* the block being appended to */
  bool live;         /* the current point is reachable */
  bool stop;         /* the instruction cap was reached */
  TSNode assign_at;  /* the assignment expression being lowered (for kl_ir_fn.alias_at) */
  int nest;          /* recursion depth */
  int const_depth;   /* file-scope constants being expanded (kl_lw_ident) */
  int in_switch;     /* switches around the point, inside the innermost loop */
  uint32_t max_ins;  /* this kernel's cap: KL_LOWER_MAX_INS, or what the unit has left */
  uint64_t unit_ins; /* instructions of the unit's kernels lowered so far */
  /* Names. */
  struct kl_lbind *binds;
  uint32_t nbinds, cap_binds;
  struct {
    const char *name;
    uint32_t len;
    int32_t top;
  } * names;
  uint32_t cap_names, nnames;
  /* SSA. */
  uint32_t *cur, *defd, *seen;
  uint32_t cap_syms, stamp;
  struct kl_undo_e *log;
  uint32_t nlog, cap_log;
  struct kl_lloop *loops;
  uint32_t nloops, cap_loops;
  /* Header PHIs by (loop, symbol), open addressing. */
  struct {
    uint32_t loop, sym, phi;
  } * hphi;
  uint32_t cap_hphi, nhphi;
  uint32_t *repl; /* trivial PHIs replaced: value -> replacement */
  uint32_t cap_repl;
  struct kl_lframe *frames;
  uint32_t nframes, cap_frames;
  uint32_t entry_n; /* instructions at the start of the body (parameters, coordinates) */
  /* Names whose declarations live in memory (address taken, `x.f`, `x[i]`), per function. */
  const struct kl_function *memfn;
  struct {
    const char *name;
    uint32_t len;
  } * memnames;
  uint32_t nmem, cap_mem;
  struct {
    const char *name;
    uint32_t len;
  } * used; /* names indexed or with fields read */
  uint32_t nused, cap_used;
  const struct kl_function **scanned;
  uint32_t nscanned, cap_scanned;
  const struct kl_function *scanned_for; /* the kernel the scans were made for */
  /* Helpers with an early return, found once: (function, answer). */
  struct {
    const struct kl_function *fn;
    bool early;
  } * early;
  uint32_t nearly, cap_early;
  /* Threadgroup variables declared in helpers, by declaration and the frame's template
   * arguments: every call of a helper names one variable (static storage, one per threadgroup). */
  struct {
    const struct kl_var *var;
    const char *targs;
    struct kl_rv mem;
  } * tgdecls;
  uint32_t ntgdecls, cap_tgdecls;
  /* Fields of local objects promoted to SSA (kl_lw_promote_fields): none, no lookups. */
  uint32_t npromoted;
  /* The template arguments of each local object of a struct template, by its address: what
   * its member functions' names of the struct's parameters stand for. */
  struct {
    uint32_t obj;
    struct kl_spec_bind *tb;
    size_t ntb;
  } * objtb;
  uint32_t nobjtb, cap_objtb;
  /* What a function's scans found, kept over the unit's kernels and specialisations
   * (kl_ir_lower_each lowers each in an arena of its own); NULL where each lowering scans. */
  struct kl_lw_keep *keep;
  /* Macro expansions being lowered, outermost first, and the bodies parsed (lower_macro.c). */
  struct kl_lw_mx *mx;
  uint32_t nmx, cap_mx;
  struct kl_lw_mcache *mc;
  /* The names the lowering asked of its specialisation and what it answered (NULL: no value),
   * each once, in ask_a; no record when ask_a is NULL (kl_ir_lower_some). */
  struct kl_spec_bind *ask;
  uint32_t nask, cap_ask;
  struct kl_arena *ask_a;
};

/* A macro use being lowered as its expansion (lower_macro.c). */
struct kl_lw_mx {
  const char *name;
  uint32_t len;
  TSNode use;          /* the name or call it stands for */
  const TSTree *tree;  /* its body's own parse */
  TSNode params;       /* a function-like macro's preproc_params, else null */
  const TSNode *args;  /* the call's arguments, in the use's tree */
  uint32_t nargs;
};

/* A macro body parsed on its own, once per kernel lowering. */
struct kl_lw_mtree {
  const char *text; /* the body as the file writes it (the key) */
  char *buf;        /* what was parsed */
  TSTree *tree;
  TSNode expr;      /* the expression it is, or null when it is none */
};

/* The macro bodies parsed: per unit when the lowering keeps what it finds across kernels
 * (kl_ir_lower_some), else per kernel. */
struct kl_lw_mcache {
  struct kl_arena *a; /* where the parsed texts live */
  struct kl_lw_mtree *t;
  uint32_t n, cap;
  TSParser *parser;
};

/* An IF being lowered. */
struct kl_lif {
  uint32_t ins, outer, mark, nsyms0;
  bool live0, live_t, has_else;
  uint32_t *tsyms, *tvals, nt;
};

/* An ERROR node of the parser's recovery, or a MISSING one. */
static inline bool kl_lw_broken(TSNode n) {
  const char *t = ts_node_type(n);
  return (t && t[0] == 'E' && !strcmp(t, "ERROR")) || ts_node_is_missing(n);
}

/* The text n's offsets index: the unit's, or a macro body's (lower_macro.c). */
static inline const char *kl_lw_src(const struct kl_lower *L, TSNode n) {
  if (n.tree == L->u->tree || !L->mc) return L->buf;
  for (uint32_t i = 0; i < L->mc->n; i++)
    if (L->mc->t[i].tree == n.tree) return L->mc->t[i].buf;
  return L->buf;
}

/* Where what is lowered from n is placed: n, or inside a macro body, the use it expands. */
static inline TSNode kl_lw_at(const struct kl_lower *L, TSNode n) {
  return L->nmx && n.tree != L->u->tree ? L->mx[0].use : n;
}

/* lower_macro.c */
/* Lower a name that is a parameter of the macro body being lowered (its argument, lowered
 * where the call is) or one of the file's object-like macros (its body); want_addr and ok as
 * for an address. False when it is neither, or the body is not an expression. */
bool kl_lw_macro_name(struct kl_lower *L, TSNode n, bool want_addr, bool *ok, struct kl_rv *out);
/* Lower a call of one of the file's function-like macros as its body, its parameters standing
 * for the call's arguments; false when it names none (or the body is not an expression). */
bool kl_lw_macro_call(struct kl_lower *L, TSNode call, bool want_addr, bool *ok,
                      struct kl_rv *out);
/* Free the macro bodies parsed (the parser and trees of c; its texts go with its arena). */
void kl_lw_macro_free(struct kl_lw_mcache *c);

/* lower.c */
/* Append an instruction of op lowered from n to the current block; returns its value. */
uint32_t kl_lw_emit(struct kl_lower *L, enum kl_ir_op op, TSNode n, const uint32_t *ops,
                    uint32_t nops);
/* A CONST of k lowered from n. */
uint32_t kl_lw_const(struct kl_lower *L, TSNode n, int64_t k);
/* An OPAQUE of n reading ops. */
uint32_t kl_lw_opaque(struct kl_lower *L, TSNode n, const uint32_t *ops, uint32_t nops);
/* The text of n, collapsed to one line. */
const char *kl_lw_text(struct kl_lower *L, TSNode n);
/* The innermost binding of a name in scope, or -1. */
int32_t kl_lw_lookup(struct kl_lower *L, const char *name, uint32_t len);
/* Declare a name in the innermost scope: a new symbol and its binding; returns the binding. */
int32_t kl_lw_bind(struct kl_lower *L, const char *name, uint32_t len, uint8_t kind,
                   const struct kl_var *var);
/* Leave a scope: drop the bindings made since there were nb. */
void kl_lw_scope_pop(struct kl_lower *L, uint32_t nb);
/* Run the body of lambda lam where call calls it, its parameters holding argn (past them: value
 * given, or unknown when 0), its other names those of frame home, where it is written
 * (lower_stmt.c); false when it cannot (nesting caps): the call stays a CALL. */
bool kl_lw_inline_lambda(struct kl_lower *L, TSNode lam, uint32_t home, TSNode call,
                         const TSNode *argn, uint32_t nargs, uint32_t given, struct kl_rv *out);
/* A new symbol for a value the lowering holds (a helper's return value). */
uint32_t kl_lw_temp(struct kl_lower *L, const char *name);
/* The current value of a symbol, read at n (UNDEF before any assignment). */
uint32_t kl_lw_read(struct kl_lower *L, uint32_t sym, TSNode n);
/* Make v the current value of a symbol, logged for the PHIs of enclosing joins. */
void kl_lw_assign(struct kl_lower *L, uint32_t sym, uint32_t v);
/* The text a name stands for outside the function (macros and template arguments of the frame,
 * the specialisation, its struct's constants, the file's constants), or NULL; ctx is the
 * struct kl_lower. */
const char *kl_lw_lookup_text(void *ctx, const char *name, size_t len);
/* Whether a name means the file's declaration of it here (or the specialisation's value of it):
 * no local, macro or template argument of the frame, no member of the object a method runs on. */
bool kl_lw_file_name(struct kl_lower *L, const char *name, size_t len);
/* Fold a name to an integer: a template value of the specialisation or a constant. */
bool kl_lw_fold_name(struct kl_lower *L, const char *name, size_t len, int64_t *v);
/* Fold an expression's text to an integer through the constant evaluator. */
bool kl_lw_fold_text(struct kl_lower *L, const char *text, size_t len, int64_t *v);
/* Fold text written at file scope: the file's constants only, none of the function's names. */
bool kl_lw_fold_file_text(struct kl_lower *L, const char *text, size_t len, int64_t *v);
/* Whether a local of this name lives in memory (an array, a struct, its address taken). */
bool kl_lw_is_mem_name(struct kl_lower *L, const char *name, uint32_t len);
/* The prototype table of L's unit, kept across its lowerings (else L's own), and in *a the
 * arena its entries live in. */
struct kl_lw_protos *kl_lw_protos_of(struct kl_lower *L, struct kl_arena **a);
/* Whether fn's early-return answer is kept from an earlier lowering of the unit (in *early). */
bool kl_lw_early_kept(struct kl_lower *L, const struct kl_function *fn, bool *early);
/* Keep fn's early-return answer for the unit's later lowerings. */
void kl_lw_early_keep(struct kl_lower *L, const struct kl_function *fn, bool early);
/* Whether a name is used as an object (fields read, indexed, a method called on it). */
bool kl_lw_is_used_as_object(struct kl_lower *L, const char *name, uint32_t len);
/* Find the locals of fn and its helpers that live in memory (once per kernel). */
void kl_lw_scan_mem(struct kl_lower *L, const struct kl_function *fn);
/* The values of the symbols assigned since log position mark, for a join. */
struct kl_snap kl_lw_snapshot(struct kl_lower *L, uint32_t mark, uint32_t nsyms0);
/* The size in bytes of an MSL type as written, 0 when not known. */
uint32_t kl_lw_type_size(const char *type);
/* Open an IF on condition c and enter its then block. */
void kl_lw_if_begin(struct kl_lower *L, struct kl_lif *st, TSNode n, uint32_t c);
/* Leave the then block of an IF for its else block. */
void kl_lw_if_else(struct kl_lower *L, struct kl_lif *st);
/* Close an IF: the PHIs of the symbols its branches assigned. */
void kl_lw_if_end(struct kl_lower *L, struct kl_lif *st);
/* Open a LOOP and enter its header block; returns the LOOP. */
uint32_t kl_lw_loop_begin(struct kl_lower *L, uint8_t kind, TSNode n, uint8_t flags);
/* Leave a loop's header for its body. */
void kl_lw_loop_body(struct kl_lower *L);
/* Leave a loop's body for its latch (where continues meet). */
void kl_lw_loop_latch(struct kl_lower *L);
/* Close a LOOP: its condition, header PHIs' back edges and exit PHIs. */
void kl_lw_loop_end(struct kl_lower *L, uint32_t cond, bool has_cond);
/* Lower a break, continue or return at n; false when it has no target. */
bool kl_lw_jump(struct kl_lower *L, TSNode n, enum kl_ir_op op);
/* lower_expr.c */
/* Lower an expression: its value, or the address of what it names. */
struct kl_rv kl_lw_expr(struct kl_lower *L, TSNode n);
/* The address an lvalue expression names; *ok false when it is not one. */
struct kl_rv kl_lw_addr(struct kl_lower *L, TSNode n, bool *ok);
/* Lower an expression to a value (an lvalue is loaded). */
uint32_t kl_lw_value(struct kl_lower *L, TSNode n);
/* n without its enclosing parentheses. */
TSNode kl_lw_unparen(TSNode n);
/* The operator's text of a binary, unary or assignment expression n, "" when none. */
const char *kl_lw_op_text(struct kl_lower *L, TSNode n);
/* Whether type name t, or its vector's scalar, is a floating-point type. */
bool kl_lw_is_float(const char *t);
/* The BINOP of an operator's text (`+`, `<=`, `and`), 0 for none. */
int kl_lw_binop_of(const char *op);
/* BINOP b of x and y at n, folded when both are constants. */
struct kl_rv kl_lw_binop(struct kl_lower *L, TSNode n, int b, struct kl_rv x, struct kl_rv y);
/* A LOAD at n through address addr, of its element type. */
struct kl_rv kl_lw_load(struct kl_lower *L, TSNode n, struct kl_rv addr);
/* The lane a component letter names (x or r: 0 ... w or a: 3), -1 for another letter. */
int kl_lw_comp(char c);
/* any(arg) (all(arg) when all) at n as the OR (AND) of its lanes' comparisons, into *out; false,
 * with nothing lowered, unless arg compares integer vectors whose lanes show (lower_lanes.c). */
bool kl_lw_lanewise(struct kl_lower *L, TSNode n, TSNode arg, bool all, struct kl_rv *out);

/* A value v of type type. */
static inline struct kl_rv kl_rv_of(uint32_t v, const char *type) {
  struct kl_rv r = {0};
  r.v = v;
  r.etype = type;
  return r;
}
/* Promote the fields of the object at address obj (a local of the struct whose member function
 * fn is) that are pointers or const scalars to SSA values: each a hidden binding, named from
 * objname for messages. What a member function reads or moves of them (`dst[i]`, `src +=
 * stride`) is then the value stored, as for a local. */
void kl_lw_promote_fields(struct kl_lower *L, uint32_t obj, const char *objname,
                          const struct kl_function *fn);
/* The hidden binding of a promoted field that expression n names (`l.src`, `this->src`, or
 * `src` in a member function of the object), or -1. Emits nothing. */
int32_t kl_lw_field_of(struct kl_lower *L, TSNode n);
/* A local object of type (written as tnode) at address self, named objname: its fields
 * promoted (kl_lw_promote_fields) and, unless call is null, its constructor taking the nargs
 * arguments argn inlined; false when the type is no struct of the unit or has no such
 * constructor. */
bool kl_lw_construct(struct kl_lower *L, TSNode tnode, const char *type, const char *objname,
                     TSNode call, const TSNode *argn, uint32_t nargs, struct kl_rv self);
/* Lower a constructor's field initializer list (`: src(src_ + k), dst(d)`), in its frame. */
void kl_lw_field_inits(struct kl_lower *L, TSNode list, struct kl_rv self);
/* lower_stmt.c */
/* Lower a statement into the current block. */
void kl_lw_stmt(struct kl_lower *L, TSNode n);
/* Lower a declaration: its symbols, initialisers and memory. */
void kl_lw_declaration(struct kl_lower *L, TSNode n);
/* Inline a same-file helper at a call with its arguments; *out is its return value. */
bool kl_lw_inline(struct kl_lower *L, const struct kl_function *callee, TSNode call,
                  const TSNode *argn, uint32_t nargs, struct kl_rv self,
                  const struct kl_spec_bind *tb, size_t ntb, struct kl_rv *out);

#endif
