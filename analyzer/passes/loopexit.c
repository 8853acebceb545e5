/* Breaks that can only leave a loop in its last iteration (see loopexit.h). */
#include "analyzer/passes/loopexit.h"

#include <string.h>

#include "grammar/msl.h"

enum { LIN_TERMS = 8, LIN_DEPTH = 12 };
#define LIN_MAX_K ((int64_t)1 << 24)

/* A sum of terms k * value plus a constant. */
struct lin {
  uint32_t n;
  uint32_t t[LIN_TERMS];
  int64_t k[LIN_TERMS];
  int64_t c;
  bool ok;
};

static uint32_t uncast(const struct kl_ir_fn *f, uint32_t v) {
  for (int depth = 0; v && depth < 8 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; depth++)
    v = f->ins[v].ops[0];
  return v;
}

/* Whether v is nested in one of loop l's blocks. */
static bool inside(const struct kl_ir_fn *f, uint32_t v, uint32_t l) {
  for (uint32_t u = v, guard = 0; u && guard < f->nins; guard++) {
    uint32_t p = f->blocks[f->ins[u].block].parent;
    if (p == l) return true;
    u = p;
  }
  return false;
}

/* The value a LOAD of one component of a thread-memory vector reads, when the whole vector is
 * stored once, from a constructor call, and its address is used for nothing but that store and
 * component loads; else v. */
static uint32_t forward(const struct kl_ir_fn *f, uint32_t v) {
  const struct kl_ir_ins *ld = &f->ins[v];
  if (ld->op != KL_IR_LOAD || ld->nops < 1) return v;
  const struct kl_ir_ins *m = &f->ins[ld->ops[0]];
  if (m->op != KL_IR_MEMBER || m->nops < 1 || !m->name || strlen(m->name) != 1 || m->imm < 0)
    return v;
  uint32_t a = m->ops[0];
  const struct kl_ir_ins *al = &f->ins[a];
  if (al->op != KL_IR_ALLOC || al->as != KL_AS_THREAD || !al->type) return v;
  uint32_t st = 0;
  for (uint32_t i = 1; i < f->nins; i++) {
    const struct kl_ir_ins *in = &f->ins[i];
    for (uint32_t k = 0; k < in->nops; k++) {
      if (in->ops[k] != a) continue;
      if (in->op == KL_IR_STORE && k == 0 && !st && in->nops == 2) {
        st = i;
        continue;
      }
      if (in->op != KL_IR_MEMBER) return v;
      /* A component address only loaded from. */
      for (uint32_t x = 1; x < f->nins; x++)
        for (uint32_t y = 0; y < f->ins[x].nops; y++)
          if (f->ins[x].ops[y] == i && (f->ins[x].op != KL_IR_LOAD || y != 0)) return v;
    }
  }
  if (!st || st > v || f->ins[st].sub) return v;
  const struct kl_ir_ins *c = &f->ins[f->ins[st].ops[1]];
  const struct kl_msl_type *t = kl_msl_type(al->type);
  if (c->op != KL_IR_CALL || !c->name || strcmp(c->name, al->type) || !t ||
      t->kind != KL_TYPE_VECTOR || c->nops != t->lanes || (uint64_t)m->imm >= c->nops)
    return v;
  /* The store runs before the load: its block holds the load, at any depth. */
  for (uint32_t u = v, guard = 0; u && guard < f->nins; guard++) {
    if (f->ins[u].block == f->ins[st].block) return c->ops[m->imm];
    u = f->blocks[f->ins[u].block].parent;
  }
  return v;
}

/* v through casts and forwarded vector components. */
static uint32_t see(const struct kl_ir_fn *f, uint32_t v) {
  for (int depth = 0; v && depth < 4; depth++) {
    uint32_t w = forward(f, uncast(f, v));
    if (w == v) break;
    v = w;
  }
  return uncast(f, v);
}

/* Whether a and b are one value in every iteration of loop l: the same instruction, or the same
 * pure expression of constants, symbols and values defined outside l. */
static bool same(const struct kl_ir_fn *f, uint32_t a, uint32_t b, uint32_t l, int depth) {
  a = see(f, a), b = see(f, b);
  if (a == b) return a != 0;
  if (!a || !b || depth > LIN_DEPTH) return false;
  const struct kl_ir_ins *x = &f->ins[a], *y = &f->ins[b];
  if (x->op != y->op || x->nops != y->nops) return false;
  switch (x->op) {
  case KL_IR_CONST:
    return x->imm == y->imm;
  case KL_IR_SYMBOL:
    return x->name && y->name && !strcmp(x->name, y->name);
  case KL_IR_UNOP:
  case KL_IR_BINOP:
    if (x->sub != y->sub || (x->flags & KL_IR_F_VECTOR) || (y->flags & KL_IR_F_VECTOR))
      return false;
    break;
  default:
    return false;
  }
  bool ok = true;
  for (uint32_t k = 0; k < x->nops && ok; k++) ok = same(f, x->ops[k], y->ops[k], l, depth + 1);
  if (!ok && x->op == KL_IR_BINOP && x->nops == 2 && (x->sub == KL_IR_ADD || x->sub == KL_IR_MUL))
    ok = same(f, x->ops[0], y->ops[1], l, depth + 1) && same(f, x->ops[1], y->ops[0], l, depth + 1);
  return ok;
}

/* Whether v has one value in every iteration of loop l. */
static bool invariant(const struct kl_ir_fn *f, uint32_t v, uint32_t l, int depth) {
  v = see(f, v);
  if (!v || depth > LIN_DEPTH) return false;
  if (!inside(f, v, l)) return true;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_CONST || in->op == KL_IR_SYMBOL) return true;
  if (in->op != KL_IR_BINOP && in->op != KL_IR_UNOP && in->op != KL_IR_SELECT) return false;
  for (uint32_t k = 0; k < in->nops; k++)
    if (!invariant(f, in->ops[k], l, depth + 1)) return false;
  return true;
}

static void lin_term(const struct kl_ir_fn *f, struct lin *s, uint32_t v, int64_t k, uint32_t l) {
  for (uint32_t i = 0; i < s->n; i++)
    if (same(f, s->t[i], v, l, 0)) {
      s->k[i] += k;
      return;
    }
  if (s->n == LIN_TERMS) {
    s->ok = false;
    return;
  }
  s->t[s->n] = v;
  s->k[s->n++] = k;
}

/* Add k * v to s. */
static void lin_add(const struct kl_ir_fn *f, struct lin *s, uint32_t v, int64_t k, uint32_t l,
                    int depth) {
  v = see(f, v);
  if (!s->ok || !v) {
    s->ok = false;
    return;
  }
  const struct kl_ir_ins *in = &f->ins[v];
  int64_t c;
  if (k > LIN_MAX_K || k < -LIN_MAX_K) {
    s->ok = false;
    return;
  }
  if (in->op == KL_IR_CONST) {
    if (in->imm > LIN_MAX_K || in->imm < -LIN_MAX_K) s->ok = false;
    s->c += k * in->imm;
    return;
  }
  bool arith = depth < LIN_DEPTH && !(in->flags & KL_IR_F_VECTOR) && in->nops >= 1;
  if (arith && in->op == KL_IR_UNOP && in->sub == KL_IR_NEG) {
    lin_add(f, s, in->ops[0], -k, l, depth + 1);
    return;
  }
  if (arith && in->op == KL_IR_BINOP && in->nops == 2) {
    if (in->sub == KL_IR_ADD || in->sub == KL_IR_SUB) {
      lin_add(f, s, in->ops[0], k, l, depth + 1);
      lin_add(f, s, in->ops[1], in->sub == KL_IR_ADD ? k : -k, l, depth + 1);
      return;
    }
    for (int side = 0; side < 2 && in->sub == KL_IR_MUL; side++)
      if (kl_ir_const(f, see(f, in->ops[side]), &c) && c <= LIN_MAX_K && c >= -LIN_MAX_K) {
        lin_add(f, s, in->ops[1 - side], k * c, l, depth + 1);
        return;
      }
  }
  lin_term(f, s, v, k, l);
}

/* Whether v is never negative: a constant >= 0, a coordinate, arithmetic on an unsigned type
 * (integers are taken not to wrap, so an unsigned value is its mathematical value). */
static bool nonneg(const struct kl_ir_fn *f, uint32_t v) {
  v = see(f, v);
  int64_t c;
  if (!v) return false;
  if (kl_ir_const(f, v, &c)) return c >= 0;
  return f->ins[v].op == KL_IR_COORD ||
         (f->ins[v].op == KL_IR_BINOP && (f->ins[v].flags & KL_IR_F_UNSIGNED));
}

/* Whether operand k of an unsigned operation, or the value itself, is never negative. */
static bool nonneg_operand(const struct kl_ir_fn *f, uint32_t op, uint32_t k) {
  return (f->ins[op].flags & KL_IR_F_UNSIGNED) || nonneg(f, f->ins[op].ops[k]);
}

/* The largest value v can take, when a constant bounds it: a constant, a remainder by a
 * positive constant (of a value not negative), an AND with a constant mask not negative, the lane
 * index (SIMD groups of 32). */
static bool upper(const struct kl_ir_fn *f, uint32_t v, int64_t *out) {
  v = see(f, v);
  const struct kl_ir_ins *in = &f->ins[v];
  int64_t k;
  if (kl_ir_const(f, v, out)) return true;
  if (in->op == KL_IR_COORD && in->coord && !strcmp(in->coord->name, "thread_index_in_simdgroup"))
    return *out = 31, true;
  if (in->op != KL_IR_BINOP || in->nops != 2 || (in->flags & KL_IR_F_VECTOR)) return false;
  if (in->sub == KL_IR_REM && kl_ir_const(f, see(f, in->ops[1]), &k) && k > 0 &&
      nonneg_operand(f, v, 0))
    return *out = k - 1, true;
  for (int side = 0; side < 2 && in->sub == KL_IR_AND; side++)
    if (kl_ir_const(f, see(f, in->ops[side]), &k) && k >= 0) return *out = k, true;
  return false;
}

/* Whether x <= step - slack for a slack >= *need: x = a % step, or x = (a % S) * K with
 * step = K * S (slack K, when K is a constant, else 0). */
static bool below_step(const struct kl_ir_fn *f, uint32_t x, uint32_t step, uint32_t l,
                       int64_t need) {
  x = see(f, x);
  const struct kl_ir_ins *in = &f->ins[x];
  if (in->op != KL_IR_BINOP || in->nops != 2 || (in->flags & KL_IR_F_VECTOR)) return false;
  /* a % S <= S - 1 when S >= 1 (a remainder by 0 is undefined). */
  if (in->sub == KL_IR_REM)
    return need <= 1 && nonneg_operand(f, x, 1) && same(f, in->ops[1], step, l, 0);
  if (in->sub != KL_IR_MUL) return false;
  uint32_t st = see(f, step);
  const struct kl_ir_ins *si = &f->ins[st];
  if (si->op != KL_IR_BINOP || si->sub != KL_IR_MUL || si->nops != 2) return false;
  for (int side = 0; side < 2; side++) {
    uint32_t q = see(f, in->ops[side]), kk = in->ops[1 - side];
    const struct kl_ir_ins *qi = &f->ins[q];
    if (qi->op != KL_IR_BINOP || qi->sub != KL_IR_REM || qi->nops != 2) continue;
    if (!nonneg_operand(f, q, 1) || !nonneg_operand(f, x, 1 - side)) continue;
    uint32_t s = qi->ops[1];
    bool match = (same(f, si->ops[0], kk, l, 0) && same(f, si->ops[1], s, l, 0)) ||
                 (same(f, si->ops[1], kk, l, 0) && same(f, si->ops[0], s, l, 0));
    if (!match) continue;
    int64_t kc;
    int64_t slack = kl_ir_const(f, see(f, kk), &kc) ? kc : 0;
    if (slack >= need) return true;
  }
  return false;
}

/* Whether comparison v implies j + step >= bound. */
static bool implies_exit(const struct kl_ir_fn *f, uint32_t v, const struct kl_loopexit *e) {
  v = see(f, v);
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op != KL_IR_BINOP || in->nops != 2 || (in->flags & KL_IR_F_VECTOR)) return false;
  uint32_t hi, lo;
  int64_t m;
  switch (in->sub) {
  case KL_IR_LT:
  case KL_IR_LE:
    hi = in->ops[1], lo = in->ops[0], m = in->sub == KL_IR_LT;
    break;
  case KL_IR_GT:
  case KL_IR_GE:
    hi = in->ops[0], lo = in->ops[1], m = in->sub == KL_IR_GT;
    break;
  default:
    return false;
  }
  /* hi - lo >= m, and hi - lo = j - bound + rest: then j + step - bound >= m + step - rest. */
  struct lin s = {.ok = true};
  lin_add(f, &s, hi, 1, e->loop, 0);
  lin_add(f, &s, lo, -1, e->loop, 0);
  lin_add(f, &s, e->j, -1, e->loop, 0);
  lin_add(f, &s, e->bound, 1, e->loop, 0);
  if (!s.ok) return false;
  /* rest = terms + c <= step + m. A term left with a negative coefficient only lowers it when
   * it is not negative. With a constant step, each term k * t by t's largest value. */
  int64_t kstep, sum = s.c;
  bool cstep = kl_ir_const(f, see(f, e->step), &kstep);
  uint32_t pos = 0, npos = 0;
  for (uint32_t i = 0; i < s.n; i++) {
    int64_t top;
    if (!s.k[i] || (s.k[i] < 0 && nonneg(f, s.t[i]))) continue;
    if (cstep && s.k[i] > 0 && upper(f, s.t[i], &top) && top <= LIN_MAX_K) {
      sum += s.k[i] * top;
      continue;
    }
    if (s.k[i] != 1) return false;
    pos = s.t[i], npos++;
  }
  if (!npos) return cstep ? sum <= kstep + m : sum <= m && nonneg(f, e->step);
  return npos == 1 && sum == s.c && below_step(f, pos, e->step, e->loop, s.c - m);
}

/* Whether condition v implies the exit: itself or one conjunct of `&&`. */
static bool cond_implies(const struct kl_ir_fn *f, uint32_t v, const struct kl_loopexit *e,
                         int depth) {
  v = see(f, v);
  if (!v || depth > 8) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  int64_t k;
  if (in->op == KL_IR_BINOP && in->sub == KL_IR_LAND && in->nops == 2)
    return cond_implies(f, in->ops[0], e, depth + 1) || cond_implies(f, in->ops[1], e, depth + 1);
  /* `a && b` lowered as a ? b : false. */
  if (in->op == KL_IR_SELECT && in->nops == 3 && kl_ir_const(f, in->ops[2], &k) && k == 0)
    return cond_implies(f, in->ops[0], e, depth + 1) || cond_implies(f, in->ops[1], e, depth + 1);
  return implies_exit(f, v, e);
}

bool kl_loopexit_last(const struct kl_ir_fn *f, uint32_t brk, struct kl_loopexit *out) {
  if (!brk || brk >= f->nins || f->ins[brk].op != KL_IR_BREAK) return false;
  /* The IF conditions that hold where the break is, up to its loop's body. */
  enum { CONDS = 8 };
  uint32_t conds[CONDS], nc = 0, l = 0;
  for (uint32_t b = f->ins[brk].block, guard = 0; b && guard < f->nins; guard++) {
    uint32_t p = f->blocks[b].parent;
    if (!p) return false;
    const struct kl_ir_ins *pi = &f->ins[p];
    if (pi->op == KL_IR_LOOP) {
      if (pi->blk[1] != b) return false;
      l = p;
      break;
    }
    if (pi->op != KL_IR_IF) return false;
    if (pi->blk[0] == b && pi->nops && nc < CONDS) conds[nc++] = pi->ops[0];
    b = pi->block;
  }
  if (!l || !nc) return false;
  const struct kl_ir_ins *li = &f->ins[l];
  if ((li->flags & (KL_IR_F_DO_WHILE | KL_IR_F_REGION)) || !li->nops || !li->ops[0]) return false;
  /* The loop's test j < bound, j its header PHI stepping by step. */
  const struct kl_ir_ins *c = &f->ins[li->ops[0]];
  if (c->op != KL_IR_BINOP || c->nops != 2 || (c->sub != KL_IR_LT && c->sub != KL_IR_GT))
    return false;
  struct kl_loopexit e = {l, c->ops[c->sub == KL_IR_GT], c->ops[c->sub == KL_IR_LT], 0};
  const struct kl_ir_ins *j = &f->ins[e.j];
  if (j->op != KL_IR_PHI || j->sub != KL_IR_PHI_HEAD || j->ref_ins != l || j->nops != 2)
    return false;
  const struct kl_ir_ins *next = &f->ins[j->ops[1]];
  if (next->op != KL_IR_BINOP || next->sub != KL_IR_ADD || next->nops != 2 ||
      (next->flags & KL_IR_F_VECTOR))
    return false;
  if (next->ops[0] == e.j)
    e.step = next->ops[1];
  else if (next->ops[1] == e.j)
    e.step = next->ops[0];
  else
    return false;
  if (!invariant(f, e.bound, l, 0) || !invariant(f, e.step, l, 0)) return false;
  for (uint32_t i = 0; i < nc; i++)
    if (cond_implies(f, conds[i], &e, 0)) {
      *out = e;
      return true;
    }
  return false;
}

bool kl_loopexit_leaves(const struct kl_ir_fn *f, uint32_t l) {
  for (uint32_t r = 1; r < f->nins; r++) {
    uint8_t op = f->ins[r].op;
    if (op != KL_IR_BREAK && op != KL_IR_CONTINUE && op != KL_IR_RETURN) continue;
    for (uint32_t u = r, guard = 0; u && guard < f->nins; guard++) {
      uint32_t p = f->blocks[f->ins[u].block].parent;
      if (p == l) return true;
      u = p;
    }
  }
  return false;
}

static bool same_next(const struct kl_ir_fn *f, uint32_t a, uint32_t b, uint32_t l, bool next,
                      int depth);

/* Whether addresses a and b name one element of constant memory (which no thread writes), their
 * subscripts compared as same_next does. */
static bool same_place(const struct kl_ir_fn *f, uint32_t a, uint32_t b, uint32_t l, bool next,
                       int depth) {
  a = uncast(f, a), b = uncast(f, b);
  if (!a || !b || depth > LIN_DEPTH) return false;
  if (a == b && (!next || !inside(f, a, l))) return true;
  const struct kl_ir_ins *x = &f->ins[a], *y = &f->ins[b];
  if (x->op != y->op || !x->nops || !y->nops) return false;
  if (x->op == KL_IR_MEMBER)
    return x->name && y->name && !strcmp(x->name, y->name) &&
           same_place(f, x->ops[0], y->ops[0], l, next, depth + 1);
  return x->op == KL_IR_INDEX && x->nops == 2 && y->nops == 2 && x->imm == y->imm &&
         same_next(f, x->ops[1], y->ops[1], l, next, depth + 1) &&
         same_place(f, x->ops[0], y->ops[0], l, next, depth + 1);
}

/* Whether a, a value of loop l's body, is b (a value of l's test) with, when next, each header
 * PHI of l read as what it takes round the back edge, so a equals b in l's next iteration (else
 * in this one: a do-while's test). A value b computed from none of l's header PHIs is a itself,
 * or the same pure expression; constant memory read again is the same value. */
static bool same_next(const struct kl_ir_fn *f, uint32_t a, uint32_t b, uint32_t l, bool next,
                      int depth) {
  a = see(f, a), b = see(f, b);
  if (!a || !b || depth > LIN_DEPTH) return false;
  const struct kl_ir_ins *x = &f->ins[a], *y = &f->ins[b];
  if (next && y->op == KL_IR_PHI && y->sub == KL_IR_PHI_HEAD && y->ref_ins == l && y->nops == 2)
    return same(f, a, y->ops[1], l, 0);
  if ((!next && a == b) || (invariant(f, b, l, 0) && same(f, a, b, l, 0))) return true;
  if (x->op == KL_IR_LOAD && y->op == KL_IR_LOAD && x->as == KL_AS_CONSTANT &&
      y->as == KL_AS_CONSTANT && x->nops && y->nops)
    return same_place(f, x->ops[0], y->ops[0], l, next, depth + 1);
  if (x->op != y->op || x->nops != y->nops || (x->op != KL_IR_BINOP && x->op != KL_IR_UNOP) ||
      (x->flags & KL_IR_F_VECTOR) || (y->flags & KL_IR_F_VECTOR))
    return false;
  /* `a < b` is `b > a`, and + and * commute. */
  static const uint8_t mirror[] = {[KL_IR_LT] = KL_IR_GT, [KL_IR_GT] = KL_IR_LT,
                                   [KL_IR_LE] = KL_IR_GE, [KL_IR_GE] = KL_IR_LE,
                                   [KL_IR_ADD] = KL_IR_ADD, [KL_IR_MUL] = KL_IR_MUL,
                                   [KL_IR_EQ] = KL_IR_EQ, [KL_IR_NE] = KL_IR_NE};
  bool ok = x->sub == y->sub;
  for (uint32_t k = 0; k < x->nops && ok; k++)
    ok = same_next(f, x->ops[k], y->ops[k], l, next, depth + 1);
  if (ok || x->op != KL_IR_BINOP || x->nops != 2 || x->sub >= sizeof mirror ||
      !mirror[x->sub] || mirror[x->sub] != y->sub)
    return ok;
  return same_next(f, x->ops[0], y->ops[1], l, next, depth + 1) &&
         same_next(f, x->ops[1], y->ops[0], l, next, depth + 1);
}

bool kl_loopexit_next_test(const struct kl_ir_fn *f, uint32_t l, uint32_t cond) {
  if (!l || l >= f->nins || !cond || cond >= f->nins) return false;
  const struct kl_ir_ins *li = &f->ins[l];
  if (li->op != KL_IR_LOOP || (li->flags & KL_IR_F_REGION) || !li->nops || !li->ops[0] ||
      !inside(f, cond, l))
    return false;
  /* A do-while tests the values its trip ends with; a loop, its header PHIs' next values. */
  return same_next(f, cond, li->ops[0], l, !(li->flags & KL_IR_F_DO_WHILE), 0);
}
