/* The lowered form every analysis reads: one kernel in one specialisation, its same-file helpers
 * inlined at each call, in structured SSA. MSL has no recursion and no goto, so control stays as
 * the source wrote it: blocks, if, loops with explicit carried values, break, continue, return.
 *
 * Values and instructions are one thing: instruction i defines value i (0 is "no value"), and
 * passes keep their facts in arrays indexed by it. Every declaration is its own symbol, so a
 * nested `for (int i ...)` never stands for an outer `i`. A scalar local is promoted to SSA: each
 * assignment is a new value, joins are PHI instructions at the end of an IF and at the head and
 * exits of a LOOP. What lives in memory (arrays, structs, anything whose address is taken,
 * threadgroup and device memory) is an ALLOC or an ARG, read and written by LOAD and STORE
 * through addresses that INDEX and MEMBER compute. */
#ifndef KL_IR_H
#define KL_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/model.h"
#include "grammar/msl.h"

/* No value, no block. */
#define KL_IR_NONE 0u

enum kl_ir_op {
  KL_IR_NOP = 0,
  /* Leaves. */
  KL_IR_CONST,   /* an integer or boolean constant: imm */
  KL_IR_FCONST,  /* a floating constant: fimm */
  KL_IR_ARG,     /* a kernel parameter: a buffer's base address or a scalar; var */
  KL_IR_COORD,   /* a thread coordinate: coord, imm = component (0 x, 1 y, 2 z; 0 for a scalar) */
  KL_IR_SYMBOL,  /* a compile-time value that does not fold (an unbound template parameter, a
                    function constant, a macro of unknown text): name; uniform */
  KL_IR_UNDEF,   /* a local read before it is assigned */
  KL_IR_OPAQUE,  /* what the lowering does not model; ops are the values it reads */
  /* Arithmetic. */
  KL_IR_UNOP,    /* sub: enum kl_ir_unop; ops[0] */
  KL_IR_BINOP,   /* sub: enum kl_ir_binop; ops[0], ops[1] */
  KL_IR_SELECT,  /* ops[0] ? ops[1] : ops[2] (also && and || of side-effect-free operands) */
  KL_IR_CAST,    /* ops[0] converted to type */
  KL_IR_CALL,    /* an MSL built-in (fn) or a function the unit does not define (name): ops */
  KL_IR_SIMD,    /* a SIMD-group or quad collective (simd_sum, simd_shuffle, simd_broadcast...):
                    fn; its result_scope says how uniform the result is */
  /* Memory. */
  KL_IR_ALLOC,   /* a local that lives in memory (array, struct, address taken), or a
                    threadgroup declaration: var, as; imm = an array's first dimension's length
                    when it folds, else 0 */
  KL_IR_INDEX,   /* the address ops[0] + ops[1] elements; imm = element size in bytes (0 unknown) */
  KL_IR_MEMBER,  /* the address of field name of ops[0] (a vector component too: .x, .xy) */
  KL_IR_LOAD,    /* the value at address ops[0]; as */
  KL_IR_STORE,   /* store ops[1] at address ops[0]; as; sub = the compound operator
                    (enum kl_ir_binop) of `+=` and the like, 0 for `=` */
  KL_IR_ATOMIC,  /* an atomic built-in on address ops[0], operands ops[1..]: fn */
  KL_IR_BARRIER, /* threadgroup_barrier, simdgroup_barrier: fn; imm = KL_IR_MEM_* flags */
  /* Structured control. */
  KL_IR_IF,      /* if ops[0] then blk[0] else blk[1] (KL_IR_NONE: empty); its PHIs follow it */
  KL_IR_LOOP,    /* blk[0] header: header PHIs, then the condition, whose value is ops[0]
                    (KL_IR_NONE: none, `for (;;)`); blk[1] body; blk[2] latch (a for's update,
                    where continue goes). flags KL_IR_F_DO_WHILE: the body runs before the first
                    test; its condition is then lowered at the end of the latch (blk[2]), not
                    in the header. Its exit PHIs follow it. */
  KL_IR_BREAK,   /* leaves the innermost LOOP (a switch's break is lowered away) */
  KL_IR_CONTINUE,/* goes to the innermost LOOP's latch */
  KL_IR_RETURN,  /* leaves the kernel (in an inlined helper: the helper; ops[0] its value) */
  KL_IR_PHI,     /* a join, see kl_ir_phi_kind; ops are the incoming values, in edge order */
  KL_IR_NOPS
};

enum kl_ir_unop { KL_IR_NEG = 1, KL_IR_NOT, KL_IR_BITNOT };

enum kl_ir_binop {
  KL_IR_ADD = 1, KL_IR_SUB, KL_IR_MUL, KL_IR_DIV, KL_IR_REM,
  KL_IR_SHL, KL_IR_SHR, KL_IR_AND, KL_IR_OR, KL_IR_XOR,
  KL_IR_LT, KL_IR_LE, KL_IR_GT, KL_IR_GE, KL_IR_EQ, KL_IR_NE,
  KL_IR_LAND, KL_IR_LOR, /* && and || (both sides evaluated in the IR) */
  KL_IR_MIN, KL_IR_MAX   /* min() and max() of integers, lowered so ranges read them */
};

/* Where a PHI joins (kl_ir_ins.sub). */
enum kl_ir_phi_kind {
  KL_IR_PHI_IF = 1, /* after an IF (ref_ins): ops[0] from the then block, ops[1] from the else
                       block; KL_IR_NONE for a branch that does not fall through */
  KL_IR_PHI_HEAD,   /* a LOOP's header (in blk[0]): ops[0] the value on entry, ops[1] the value at
                       the end of the latch (the back edge) */
  KL_IR_PHI_LATCH,  /* the start of a LOOP's latch: ops are the values at the end of the body and
                       at each continue, in source order */
  KL_IR_PHI_EXIT    /* after a LOOP: ops[0] the value when its condition fails (KL_IR_NONE for
                       none), then the value at each break, in source order */
};

/* KL_IR_BARRIER imm: which memory the barrier orders. */
enum { KL_IR_MEM_NONE = 0, KL_IR_MEM_THREADGROUP = 1, KL_IR_MEM_DEVICE = 2, KL_IR_MEM_TEXTURE = 4 };

/* kl_ir_ins.flags */
enum {
  KL_IR_F_DO_WHILE = 1, /* LOOP: do { } while (c) */
  KL_IR_F_UNSIGNED = 2, /* arithmetic on an unsigned type */
  KL_IR_F_VECTOR = 4,   /* a vector value */
  KL_IR_F_REGION = 8    /* LOOP: no loop but an inlined helper with an early return, run once:
                           no condition, no back edge; its exits are the helper's RETURNs (site
                           of that helper) and the BREAK that ends its body, in source order,
                           and its exit PHIs join the return value and what the helper
                           assigned of its caller's symbols */
};

/* One instruction, which is also the value it defines. */
struct kl_ir_ins {
  uint8_t op;      /* enum kl_ir_op */
  uint8_t sub;     /* UNOP, BINOP, STORE: the operator; PHI: enum kl_ir_phi_kind */
  uint8_t as;      /* ALLOC, LOAD, STORE, INDEX: enum kl_addrspace of the memory */
  uint8_t flags;   /* KL_IR_F_* */
  uint32_t block;  /* the block it is in */
  uint32_t nops;
  uint32_t *ops;   /* operand values */
  uint32_t blk[3]; /* IF, LOOP: their blocks */
  uint32_t ref_ins; /* PHI: its IF or LOOP */
  uint32_t sym;    /* the symbol this value is the new definition of (an assignment, a PHI), or 0 */
  uint32_t site;   /* the inlined call it was lowered in (kl_ir_fn.sites), 0 in the kernel */
  int64_t imm;
  double fimm;
  const char *name;                   /* SYMBOL, MEMBER, CALL of an undefined function */
  const char *type;                   /* the value's type as written ("float", "half4"), or NULL */
  const struct kl_var *var;           /* ARG, ALLOC */
  const struct kl_msl_coord *coord;   /* COORD */
  const struct kl_msl_fn *fn;         /* CALL, SIMD, ATOMIC, BARRIER of a built-in */
  TSNode node;                        /* the source it was lowered from (span for messages) */
};

/* A straight-line list of instructions; control nests through IF and LOOP. */
struct kl_ir_block {
  uint32_t *ins;
  uint32_t n, cap;
  uint32_t parent; /* the IF or LOOP it belongs to (KL_IR_NONE: the function's body) */
};

/* A declaration: a parameter, a local, a helper's parameter in one inlining. */
struct kl_ir_sym {
  const char *name;
  const struct kl_var *var; /* its declaration in the model, or NULL */
  uint32_t site;            /* the inlined call it belongs to, 0 in the kernel */
};

/* One inlined call of a same-file helper. */
struct kl_ir_site {
  TSNode call;                      /* the call expression */
  const struct kl_function *callee;
  uint32_t parent;                  /* the site of the call itself, 0 in the kernel */
  bool lambda;                      /* a call of a local lambda (callee NULL): its body runs
                                       with the names of the code that defines it */
};

/* A kernel in one specialisation. Index 0 of ins, blocks, syms and sites is unused. */
struct kl_ir_fn {
  struct kl_arena *arena;
  const struct kl_function *kernel;
  const char *inst;   /* "N = 2, has_mask = true", or NULL when analysed once, unspecialised */
  const char *const *hosts; /* the host names of the instantiations the specialisation stands
                               for (the specialisation's memory: valid while f is) */
  size_t nhosts;
  uint32_t body;      /* the top block */
  struct kl_ir_ins *ins;
  uint32_t nins, cap_ins;
  struct kl_ir_block *blocks;
  uint32_t nblocks, cap_blocks;
  struct kl_ir_sym *syms;
  uint32_t nsyms, cap_syms;
  struct kl_ir_site *sites;
  uint32_t nsites, cap_sites;
  /* Names bound to a value defined under another name or none (`const uint row = gid.z;`): the
   * value alias_val[i] is also symbol alias_sym[i]; messages name values by them. */
  uint32_t *alias_val, *alias_sym;
  uint32_t nalias, cap_alias;
  TSNode *alias_at; /* where each was made when an assignment made it (`n = end;`), else null */
  bool truncated; /* the lowering stopped at a cap (instructions, inlined calls, call depth): the
                    body is partial */
  /* When truncated: the helpers left out at a call (ncut of them), and whether something else
   * was (a lambda, or the rest of the body at the instruction cap). */
  const struct kl_function **cut;
  uint32_t ncut, cap_cut;
  bool cut_other;
};

/* Every kernel of a unit, lowered. */
struct kl_ir_module {
  struct kl_ir_fn **fns;
  size_t nfns, cap_fns;
};

/* An empty function whose body block exists; allocation goes to the arena. */
struct kl_ir_fn *kl_ir_fn_new(struct kl_arena *a, const struct kl_function *kernel,
                              const char *inst);
/* A new empty block belonging to parent (an IF or LOOP, or KL_IR_NONE). */
uint32_t kl_ir_block_new(struct kl_ir_fn *f, uint32_t parent);
/* Append an instruction of op with nops operands (copied) to block; returns its value. */
uint32_t kl_ir_emit(struct kl_ir_fn *f, uint32_t block, enum kl_ir_op op, const uint32_t *ops,
                    uint32_t nops);
/* Give back the instruction table's unused room once the lowering is done: a doubling leaves up
 * to half of it, and the passes that follow allocate per instruction many times over. */
void kl_ir_fn_fit(struct kl_ir_fn *f);
/* Replace the operands of an instruction (a PHI whose back edge is known only later). */
void kl_ir_set_ops(struct kl_ir_fn *f, uint32_t ins, const uint32_t *ops, uint32_t nops);
/* A new symbol; returns its index. */
uint32_t kl_ir_sym_new(struct kl_ir_fn *f, const char *name, const struct kl_var *var,
                       uint32_t site);
/* A new inlined call site; returns its index. */
uint32_t kl_ir_site_new(struct kl_ir_fn *f, TSNode call, const struct kl_function *callee,
                        uint32_t parent);
/* The constant of a CONST value in *v; false for any other value. */
bool kl_ir_const(const struct kl_ir_fn *f, uint32_t v, int64_t *out);
/* Whether a value's instruction is nested (at any depth) in block outer. */
bool kl_ir_within(const struct kl_ir_fn *f, uint32_t v, uint32_t outer);
/* The op's name as printed ("binop", "phi"). */
const char *kl_ir_op_name(enum kl_ir_op op);
/* Print f readably and stably (one instruction a line, blocks nested) to out; buf is the unit's
 * text its nodes point into (analyzer/ir/print.c). */
void kl_ir_print(const struct kl_ir_fn *f, const char *buf, FILE *out);

#endif
