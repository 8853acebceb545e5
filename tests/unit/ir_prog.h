/* Small IR programs for the passes' unit tests, written with the builder (analyzer/ir/ir.h):
 * one function at a time, built in the block given, loops and ifs with their PHIs. */
#ifndef KL_TEST_IR_PROG_H
#define KL_TEST_IR_PROG_H

#include "analyzer/ir/ir.h"

/* The function being built. */
static struct kl_ir_fn *P;

/* A fresh function in arena a. */
static inline void prog_new(struct kl_arena *a) {
  P = kl_ir_fn_new(a, NULL, NULL);
}

static inline uint32_t p_const(uint32_t b, int64_t k) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_CONST, NULL, 0);
  P->ins[v].imm = k;
  P->ins[v].type = "int";
  return v;
}

/* A thread coordinate's component, by attribute name. */
static inline uint32_t p_coord(uint32_t b, const char *name, int comp) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_COORD, NULL, 0);
  P->ins[v].coord = kl_msl_coord(name);
  P->ins[v].imm = comp;
  P->ins[v].type = "uint";
  P->ins[v].flags = KL_IR_F_UNSIGNED;
  return v;
}

/* A kernel parameter: a device buffer when ptr, else a scalar of type. */
static inline uint32_t p_arg(uint32_t b, bool ptr, const char *type) {
  static struct kl_var bufvar = {
      .name = "buf", .type = "float", .as = KL_AS_DEVICE, .is_pointer = true, .attr_index = -1};
  static struct kl_var scalar = {.name = "n", .type = "int", .attr_index = -1};
  uint32_t v = kl_ir_emit(P, b, KL_IR_ARG, NULL, 0);
  P->ins[v].var = ptr ? &bufvar : &scalar;
  P->ins[v].type = type;
  return v;
}

static inline uint32_t p_bin(uint32_t b, enum kl_ir_binop op, uint32_t x, uint32_t y) {
  uint32_t ops[2] = {x, y};
  uint32_t v = kl_ir_emit(P, b, KL_IR_BINOP, ops, 2);
  P->ins[v].sub = (uint8_t)op;
  return v;
}

/* The same, on unsigned operands. */
static inline uint32_t p_ubin(uint32_t b, enum kl_ir_binop op, uint32_t x, uint32_t y) {
  uint32_t v = p_bin(b, op, x, y);
  P->ins[v].flags = KL_IR_F_UNSIGNED;
  return v;
}

static inline uint32_t p_op(uint32_t b, enum kl_ir_op op, uint32_t x, uint32_t y, uint32_t z) {
  uint32_t ops[3] = {x, y, z};
  uint32_t n = z ? 3 : y ? 2 : x ? 1 : 0;
  return kl_ir_emit(P, b, op, ops, n);
}

static inline uint32_t p_not(uint32_t b, uint32_t x) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_UNOP, &x, 1);
  P->ins[v].sub = KL_IR_NOT;
  return v;
}

/* base[idx] with elements of size bytes. */
static inline uint32_t p_index(uint32_t b, uint32_t base, uint32_t idx, int64_t size) {
  uint32_t v = p_op(b, KL_IR_INDEX, base, idx, 0);
  P->ins[v].imm = size;
  return v;
}

/* An IF on cond with its two blocks (in *then_b and *else_b). */
static inline uint32_t p_if(uint32_t b, uint32_t cond, uint32_t *then_b, uint32_t *else_b) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_IF, &cond, 1);
  uint32_t t = kl_ir_block_new(P, v), e = kl_ir_block_new(P, v);
  P->ins[v].blk[0] = t;
  P->ins[v].blk[1] = e;
  *then_b = t;
  *else_b = e;
  return v;
}

/* A PHI of kind after (or in) ins. */
static inline uint32_t p_phi(uint32_t b, enum kl_ir_phi_kind kind, uint32_t ref, uint32_t x,
                             uint32_t y) {
  uint32_t v = p_op(b, KL_IR_PHI, x, y, 0);
  P->ins[v].sub = (uint8_t)kind;
  P->ins[v].ref_ins = ref;
  if (!y && x) kl_ir_set_ops(P, v, (uint32_t[]){x, 0}, kind == KL_IR_PHI_EXIT ? 1 : 2);
  return v;
}

/* A LOOP with its header, body and latch blocks; its condition is set with p_loop_cond. */
static inline uint32_t p_loop(uint32_t b, uint32_t *hdr, uint32_t *body, uint32_t *latch) {
  uint32_t v = kl_ir_emit(P, b, KL_IR_LOOP, NULL, 0);
  *hdr = P->ins[v].blk[0] = kl_ir_block_new(P, v);
  *body = P->ins[v].blk[1] = kl_ir_block_new(P, v);
  *latch = P->ins[v].blk[2] = kl_ir_block_new(P, v);
  return v;
}

static inline void p_loop_cond(uint32_t loop, uint32_t cond) {
  kl_ir_set_ops(P, loop, &cond, 1);
}

/* A header PHI of loop in hdr with entry value start; its back edge is set by p_back. */
static inline uint32_t p_head(uint32_t hdr, uint32_t loop, uint32_t start) {
  return p_phi(hdr, KL_IR_PHI_HEAD, loop, start, 0);
}

static inline void p_back(uint32_t phi, uint32_t back) {
  kl_ir_set_ops(P, phi, (uint32_t[]){P->ins[phi].ops[0], back}, 2);
}

/* A `for (i = start; i < bound; i += step)` loop in b: its PHI in *i, body in *body; returns the
 * LOOP. op is the comparison (KL_IR_LT). */
static inline uint32_t p_for(uint32_t b, uint32_t start, enum kl_ir_binop op, uint32_t bound,
                             uint32_t step, uint32_t *i, uint32_t *body) {
  uint32_t hdr, latch;
  uint32_t l = p_loop(b, &hdr, body, &latch);
  *i = p_head(hdr, l, start);
  p_loop_cond(l, p_bin(hdr, op, *i, bound));
  p_back(*i, p_bin(latch, KL_IR_ADD, *i, step));
  return l;
}

#endif
