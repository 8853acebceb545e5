/* The IR's containers: functions, blocks, instructions, symbols and call sites, all in the
 * arena of the file being linted. */
#include "analyzer/ir/ir.h"

#include <string.h>

static const char *const kl_op_names[KL_IR_NOPS] = {
    [KL_IR_NOP] = "nop",         [KL_IR_CONST] = "const",   [KL_IR_FCONST] = "fconst",
    [KL_IR_ARG] = "arg",         [KL_IR_COORD] = "coord",   [KL_IR_SYMBOL] = "symbol",
    [KL_IR_UNDEF] = "undef",     [KL_IR_OPAQUE] = "opaque", [KL_IR_UNOP] = "unop",
    [KL_IR_BINOP] = "binop",     [KL_IR_SELECT] = "select", [KL_IR_CAST] = "cast",
    [KL_IR_CALL] = "call",       [KL_IR_SIMD] = "simd",     [KL_IR_ALLOC] = "alloc",
    [KL_IR_INDEX] = "index",     [KL_IR_MEMBER] = "member", [KL_IR_LOAD] = "load",
    [KL_IR_STORE] = "store",     [KL_IR_ATOMIC] = "atomic", [KL_IR_BARRIER] = "barrier",
    [KL_IR_IF] = "if",           [KL_IR_LOOP] = "loop",     [KL_IR_BREAK] = "break",
    [KL_IR_CONTINUE] = "continue", [KL_IR_RETURN] = "return", [KL_IR_PHI] = "phi",
};

struct kl_ir_fn *kl_ir_fn_new(struct kl_arena *a, const struct kl_function *kernel,
                              const char *inst) {
  struct kl_ir_fn *f = kl_arena_alloc(a, sizeof *f);
  f->arena = a;
  f->kernel = kernel;
  f->inst = inst;
  f->hosts = NULL;
  f->nhosts = 0;
  /* Index 0 of every table is "none". */
  KL_VEC_PUSH(a, f->ins, f->nins, f->cap_ins);
  memset(&f->ins[f->nins++], 0, sizeof *f->ins);
  KL_VEC_PUSH(a, f->blocks, f->nblocks, f->cap_blocks);
  memset(&f->blocks[f->nblocks++], 0, sizeof *f->blocks);
  KL_VEC_PUSH(a, f->syms, f->nsyms, f->cap_syms);
  memset(&f->syms[f->nsyms++], 0, sizeof *f->syms);
  KL_VEC_PUSH(a, f->sites, f->nsites, f->cap_sites);
  memset(&f->sites[f->nsites++], 0, sizeof *f->sites);
  f->body = kl_ir_block_new(f, KL_IR_NONE);
  return f;
}

uint32_t kl_ir_block_new(struct kl_ir_fn *f, uint32_t parent) {
  KL_VEC_PUSH(f->arena, f->blocks, f->nblocks, f->cap_blocks);
  struct kl_ir_block *b = &f->blocks[f->nblocks];
  memset(b, 0, sizeof *b);
  b->parent = parent;
  return f->nblocks++;
}

void kl_ir_set_ops(struct kl_ir_fn *f, uint32_t ins, const uint32_t *ops, uint32_t nops) {
  struct kl_ir_ins *i = &f->ins[ins];
  i->ops = NULL;
  i->nops = nops;
  if (nops) {
    i->ops = kl_arena_alloc_raw(f->arena, nops * sizeof *ops);
    memcpy(i->ops, ops, nops * sizeof *ops);
  }
}

uint32_t kl_ir_emit(struct kl_ir_fn *f, uint32_t block, enum kl_ir_op op, const uint32_t *ops,
                    uint32_t nops) {
  KL_VEC_PUSH(f->arena, f->ins, f->nins, f->cap_ins);
  uint32_t v = f->nins++;
  struct kl_ir_ins *i = &f->ins[v];
  memset(i, 0, sizeof *i);
  i->op = (uint8_t)op;
  i->block = block;
  kl_ir_set_ops(f, v, ops, nops);
  struct kl_ir_block *b = &f->blocks[block];
  KL_VEC_PUSH(f->arena, b->ins, b->n, b->cap);
  b->ins[b->n++] = v;
  return v;
}

void kl_ir_fn_fit(struct kl_ir_fn *f) {
  struct kl_ir_ins *ins = kl_arena_fit(f->arena, f->ins, f->cap_ins, f->nins, sizeof *f->ins);
  if (!ins) return;
  f->ins = ins;
  f->cap_ins = f->nins;
}

uint32_t kl_ir_sym_new(struct kl_ir_fn *f, const char *name, const struct kl_var *var,
                       uint32_t site) {
  KL_VEC_PUSH(f->arena, f->syms, f->nsyms, f->cap_syms);
  f->syms[f->nsyms] = (struct kl_ir_sym){name, var, site};
  return f->nsyms++;
}

uint32_t kl_ir_site_new(struct kl_ir_fn *f, TSNode call, const struct kl_function *callee,
                        uint32_t parent) {
  KL_VEC_PUSH(f->arena, f->sites, f->nsites, f->cap_sites);
  f->sites[f->nsites] = (struct kl_ir_site){call, callee, parent, false};
  return f->nsites++;
}

bool kl_ir_const(const struct kl_ir_fn *f, uint32_t v, int64_t *out) {
  if (v == KL_IR_NONE || v >= f->nins || f->ins[v].op != KL_IR_CONST) return false;
  *out = f->ins[v].imm;
  return true;
}

bool kl_ir_within(const struct kl_ir_fn *f, uint32_t v, uint32_t outer) {
  uint32_t b = f->ins[v].block;
  /* Blocks nest through the IF or LOOP that owns them; the walk is as deep as the nesting. */
  while (b != KL_IR_NONE) {
    if (b == outer) return true;
    uint32_t owner = f->blocks[b].parent;
    if (owner == KL_IR_NONE) return false;
    b = f->ins[owner].block;
  }
  return false;
}

const char *kl_ir_op_name(enum kl_ir_op op) {
  return (unsigned)op < KL_IR_NOPS && kl_op_names[op] ? kl_op_names[op] : "?";
}
