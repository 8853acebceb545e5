/* Value numbering, a pair at a time: see valnum.h. */
#include "analyzer/passes/valnum.h"

#include <string.h>

/* How deep the comparison follows operands; a deeper pair is taken as different. */
#define KL_VALNUM_DEPTH 24

/* v with casts looked through. */
static uint32_t kl_valnum_uncast(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; v && v < f->nins && d < 16 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; d++)
    v = f->ins[v].ops[0];
  return v;
}

static bool kl_valnum_commutes(const struct kl_ir_ins *in) {
  if (in->op != KL_IR_BINOP) return false;
  switch (in->sub) {
  case KL_IR_ADD:
  case KL_IR_MUL:
  case KL_IR_AND:
  case KL_IR_OR:
  case KL_IR_XOR:
  case KL_IR_EQ:
  case KL_IR_NE:
  case KL_IR_MIN:
  case KL_IR_MAX:
    return true;
  default:
    return false;
  }
}

static bool kl_valnum_eq(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a, uint32_t b,
                         int depth) {
  a = kl_valnum_uncast(f, a);
  b = kl_valnum_uncast(f, b);
  if (!a || !b || a >= f->nins || b >= f->nins) return false;
  if (a == b) return true;
  if (depth <= 0) return false;
  const struct kl_ir_ins *x = &f->ins[a], *y = &f->ins[b];
  if (x->op != y->op) return false;
  switch (x->op) {
  case KL_IR_CONST:
    return x->imm == y->imm;
  case KL_IR_ARG:
    return x->var && x->var == y->var;
  case KL_IR_COORD:
    return x->coord && x->coord == y->coord && x->imm == y->imm;
  case KL_IR_SYMBOL:
    return x->name && y->name && !strcmp(x->name, y->name);
  case KL_IR_LOAD:
    return s && kl_scev_leader(s, a) == kl_scev_leader(s, b);
  case KL_IR_UNOP:
  case KL_IR_BINOP:
  case KL_IR_SELECT:
  case KL_IR_CALL:
    break;
  default:
    return false;
  }
  if (x->sub != y->sub || x->nops != y->nops ||
      (x->flags & KL_IR_F_VECTOR) != (y->flags & KL_IR_F_VECTOR))
    return false;
  /* A call is pure only when it is an MSL built-in (atomics and barriers are other ops). */
  if (x->op == KL_IR_CALL && (!x->fn || x->fn != y->fn)) return false;
  bool same = true;
  for (uint32_t k = 0; k < x->nops && same; k++)
    same = kl_valnum_eq(f, s, x->ops[k], y->ops[k], depth - 1);
  if (same || !kl_valnum_commutes(x) || x->nops != 2) return same;
  return kl_valnum_eq(f, s, x->ops[0], y->ops[1], depth - 1) &&
         kl_valnum_eq(f, s, x->ops[1], y->ops[0], depth - 1);
}

bool kl_valnum_equal(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a, uint32_t b) {
  return kl_valnum_eq(f, s, a, b, KL_VALNUM_DEPTH);
}

/* Whether the two chains of address steps from a and from b to their roots match step by step. */
static bool kl_valnum_chain(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a,
                            uint32_t b) {
  for (int d = 0; d < 16; d++) {
    a = kl_valnum_uncast(f, a);
    b = kl_valnum_uncast(f, b);
    if (!a || !b || a >= f->nins || b >= f->nins) return false;
    const struct kl_ir_ins *x = &f->ins[a], *y = &f->ins[b];
    bool ra = x->op == KL_IR_ARG || x->op == KL_IR_ALLOC,
         rb = y->op == KL_IR_ARG || y->op == KL_IR_ALLOC;
    if (ra || rb) return ra && rb;
    if (x->op != y->op || !x->nops || !y->nops) return false;
    if (x->op == KL_IR_INDEX) {
      if (x->nops < 2 || y->nops < 2 || x->imm != y->imm ||
          !kl_valnum_equal(f, s, x->ops[1], y->ops[1]))
        return false;
    } else if (x->op == KL_IR_MEMBER) {
      if (!x->name || !y->name || strcmp(x->name, y->name)) return false;
    } else {
      return false;
    }
    a = x->ops[0];
    b = y->ops[0];
  }
  return false;
}

/* Whether form a and b are the same, each symbolic part of them one named value. */
static bool kl_valnum_same_form(struct kl_affine a, struct kl_affine b) {
  const uint32_t tag = ~(uint32_t)KL_AFFINE_SYM_KNOWN;
  if (!a.known || !b.known || a.partial || b.partial || a.n != b.n) return false;
  if (a.c0_symbolic != b.c0_symbolic) return false;
  if (a.c0_symbolic ? !(a.sym & tag) || a.sym != b.sym : a.c0 != b.c0) return false;
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_affine_term *t = &a.t[i], *u = NULL;
    for (uint8_t j = 0; j < b.n && !u; j++)
      if (b.t[j].atom == t->atom) u = &b.t[j];
    if (!u || t->symbolic != u->symbolic) return false;
    if (t->symbolic ? !(t->sym & tag) || t->sym != u->sym : t->k != u->k) return false;
  }
  return true;
}

bool kl_valnum_same_offset(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a,
                           uint32_t b) {
  if (kl_valnum_chain(f, s, a, b)) return true;
  if (!s) return false;
  uint32_t ua = kl_valnum_uncast(f, a), ub = kl_valnum_uncast(f, b);
  if (!ua || !ub || ua >= f->nins || ub >= f->nins || f->ins[ua].op != KL_IR_INDEX ||
      f->ins[ub].op != KL_IR_INDEX || f->ins[ua].imm != f->ins[ub].imm)
    return false;
  uint32_t root_a, root_b;
  struct kl_affine oa, ob;
  return kl_scev_address(s, ua, &root_a, &oa) && kl_scev_address(s, ub, &root_b, &ob) &&
         kl_valnum_same_form(oa, ob);
}
