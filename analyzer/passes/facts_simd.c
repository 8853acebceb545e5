/* The facts module's question of two threadgroup accesses that only the lanes of one SIMD group
 * make: whether a SIMD-group-wide operation between them orders them (kl_facts_simd_ordered_ins
 * in facts.h). Part of the facts module, in a file of its own for its size. */
#include "analyzer/passes/facts.h"

#include <string.h>

/* ---- Two accesses that one SIMD group makes, ordered by a SIMD-group-wide operation ---------- */

/* Whether v is the thread's SIMD group index (through casts). */
static bool kl_facts_is_sg(const struct kl_ir_fn *f, uint32_t v) {
  for (int depth = 0; v && depth < 8 && f->ins[v].op == KL_IR_CAST; depth++) v = f->ins[v].ops[0];
  return v && f->ins[v].op == KL_IR_COORD && f->ins[v].coord &&
         !strcmp(f->ins[v].coord->name, "simdgroup_index_in_threadgroup");
}

/* Whether condition v holds only in SIMD group *c: `sg == c`, alone or a conjunct of `&&`. */
static bool kl_facts_pins(const struct kl_ir_fn *f, uint32_t v, int depth, int64_t *c) {
  if (!v || depth > 8) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_BINOP && in->sub == KL_IR_LAND)
    return kl_facts_pins(f, in->ops[0], depth + 1, c) || kl_facts_pins(f, in->ops[1], depth + 1, c);
  int64_t k;
  /* `a && b` lowered as a ? b : false. */
  if (in->op == KL_IR_SELECT && in->nops == 3 && kl_ir_const(f, in->ops[2], &k) && k == 0)
    return kl_facts_pins(f, in->ops[0], depth + 1, c) || kl_facts_pins(f, in->ops[1], depth + 1, c);
  if (in->op != KL_IR_BINOP || in->sub != KL_IR_EQ) return false;
  for (int side = 0; side < 2; side++)
    if (kl_facts_is_sg(f, in->ops[side]) && kl_ir_const(f, in->ops[1 - side], c)) return true;
  return false;
}

/* Whether instruction v runs only in SIMD group *c: the then block of an IF whose condition
 * pins it encloses v. */
static bool kl_facts_pinned(const struct kl_ir_fn *f, uint32_t v, int64_t *c) {
  for (uint32_t u = v, guard = 0; u && guard < f->nins; guard++) {
    uint32_t b = f->ins[u].block, p = f->blocks[b].parent;
    if (p && f->ins[p].op == KL_IR_IF && f->ins[p].blk[0] == b &&
        kl_facts_pins(f, f->ins[p].ops[0], 0, c))
      return true;
    u = p;
  }
  return false;
}

/* Whether an element offset names one slot per SIMD group: k * sg + c, k a nonzero constant. */
static bool kl_facts_per_sg(const struct kl_scev *s, struct kl_affine o) {
  if (!o.known || o.c0_symbolic || o.n != 1 || o.t[0].symbolic || !o.t[0].k) return false;
  const struct kl_scev_atom *at = kl_scev_atom(s, o.t[0].atom);
  return at && at->kind == KL_SCEV_COORD && at->coord &&
         !strcmp(at->coord->name, "simdgroup_index_in_threadgroup");
}

/* Whether every element that access a and access b both touch is touched, by both, only from
 * threads of one SIMD group: both run only in one SIMD group, or both use the slot of their own
 * SIMD group, or one runs in SIMD group c on the slot that only SIMD group c's slot is. */
static bool kl_facts_one_sg(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a,
                            uint32_t b) {
  int64_t ca, cb;
  bool pa = kl_facts_pinned(f, a, &ca), pb = kl_facts_pinned(f, b, &cb);
  if (pa && pb) return ca == cb;
  uint32_t ra, rb;
  struct kl_affine oa, ob;
  if (!kl_scev_address(s, f->ins[a].ops[0], &ra, &oa) ||
      !kl_scev_address(s, f->ins[b].ops[0], &rb, &ob) || ra != rb)
    return false;
  bool ia = kl_facts_per_sg(s, oa), ib = kl_facts_per_sg(s, ob);
  if (ia && ib) return kl_affine_equal(oa, ob);
  /* Pinned to SIMD group c at a constant slot that only SIMD group c's own slot is. */
  if (pb && ia) {
    struct kl_affine t = oa;
    oa = ob, ob = t, ca = cb, pa = pb, ia = ib;
  }
  return pa && !ia && kl_facts_per_sg(s, ob) && oa.known && !oa.c0_symbolic && oa.n == 0 &&
         oa.c0 == ob.c0 + ob.t[0].k * ca;
}

/* Whether instruction c makes the lanes of a SIMD group meet: a simdgroup_barrier, or a SIMD
 * collective (not a quad one, which joins four lanes only) whose result is read -- one nothing
 * reads may be compiled away. */
static bool kl_facts_meets(const struct kl_ir_fn *f, uint32_t c) {
  const struct kl_ir_ins *in = &f->ins[c];
  if (in->op == KL_IR_BARRIER) return in->fn && in->fn->barrier_scope == KL_SCOPE_SIMDGROUP;
  if (in->op != KL_IR_SIMD || !in->fn || !strncmp(in->fn->name, "quad_", 5)) return false;
  for (uint32_t v = c + 1; v < f->nins; v++)
    for (uint32_t k = 0; k < f->ins[v].nops; k++)
      if (f->ins[v].ops[k] == c) return true;
  return false;
}

/* The ancestor of v (v itself or the IF or LOOP around it) that sits in block b, or 0. */
static uint32_t kl_facts_anc(const struct kl_ir_fn *f, uint32_t v, uint32_t b) {
  for (uint32_t u = v, guard = 0; u && guard < f->nins; guard++) {
    if (f->ins[u].block == b) return u;
    u = f->blocks[f->ins[u].block].parent;
  }
  return 0;
}

/* Position of instruction u in block b. */
static uint32_t kl_facts_pos(const struct kl_ir_fn *f, uint32_t b, uint32_t u) {
  for (uint32_t i = 0; i < f->blocks[b].n; i++)
    if (f->blocks[b].ins[i] == u) return i;
  return UINT32_MAX;
}

/* Whether exit r (RETURN, BREAK, CONTINUE) can take a thread out of block b from positions
 * [lo, hi) of it: it sits there and nothing nested in b catches it (a loop for a break or
 * continue, an inlined helper's region for a return). */
static bool kl_facts_escapes(const struct kl_ir_fn *f, uint32_t r, uint32_t b, uint32_t lo,
                             uint32_t hi) {
  bool ret = f->ins[r].op == KL_IR_RETURN;
  for (uint32_t u = r, guard = 0; u && guard < f->nins; guard++) {
    uint32_t blk = f->ins[u].block;
    if (blk == b) {
      uint32_t p = kl_facts_pos(f, b, u);
      return p >= lo && p < hi;
    }
    uint32_t p = f->blocks[blk].parent;
    if (p && f->ins[p].op == KL_IR_LOOP && (!ret || (f->ins[p].flags & KL_IR_F_REGION)))
      return false;
    u = p;
  }
  return false;
}

/* Whether exit r could take a thread out of block b from positions [lo, hi) (kl_facts_escapes)
 * for any exit of f. */
static bool kl_facts_leaves(const struct kl_ir_fn *f, uint32_t b, uint32_t lo, uint32_t hi) {
  for (uint32_t r = 1; r < f->nins; r++) {
    uint8_t op = f->ins[r].op;
    if ((op == KL_IR_RETURN || op == KL_IR_BREAK || op == KL_IR_CONTINUE) &&
        kl_facts_escapes(f, r, b, lo, hi))
      return true;
  }
  return false;
}

/* Whether construct u (an IF or LOOP) is taken alike by every lane of a SIMD group: its
 * condition is the same in each (an inlined helper's region has none), so the lanes that run
 * one access inside it and those that ran the other outside go through it together. */
static bool kl_facts_sg_alike(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t u) {
  const struct kl_ir_ins *in = &f->ins[u];
  if (in->op != KL_IR_IF && in->op != KL_IR_LOOP) return false;
  if (in->flags & KL_IR_F_REGION) return true;
  return in->nops && in->ops[0] && kl_scev_scope(s, in->ops[0]) <= KL_SCOPE_SIMDGROUP;
}

/* The block of construct u that holds v (v nested in u), its position there in *q and the
 * ancestor of v there in *anc; 0 when none does. */
static uint32_t kl_facts_arm(const struct kl_ir_fn *f, uint32_t u, uint32_t v, uint32_t *anc,
                             uint32_t *q) {
  for (int t = 0; t < 3; t++) {
    uint32_t b = f->ins[u].blk[t];
    if (!b || b >= f->nblocks) continue;
    uint32_t x = kl_facts_anc(f, v, b);
    if (!x) continue;
    *anc = x;
    *q = kl_facts_pos(f, b, x);
    return *q == UINT32_MAX ? 0 : b;
  }
  return 0;
}

/* Whether the lanes of a SIMD group meet on every way into construct u up to v inside it: an
 * operation that makes them meet stands before v (or before the construct in u that holds it,
 * or so on inward) in a block every lane takes alike, and no lane leaves before it. */
static bool kl_facts_meet_into(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t u,
                               uint32_t v, int depth) {
  uint32_t anc, q;
  uint32_t b = depth > 0 && kl_facts_sg_alike(f, s, u) ? kl_facts_arm(f, u, v, &anc, &q) : 0;
  if (!b) return false;
  for (uint32_t i = 0; i < q; i++)
    if (kl_facts_meets(f, f->blocks[b].ins[i])) return !kl_facts_leaves(f, b, 0, i);
  return anc != v && kl_facts_meet_into(f, s, anc, v, depth - 1);
}

/* Whether the lanes of a SIMD group meet on every way from v out of construct u that holds it:
 * after v (or after the construct in u that holds it, or so on inward), in a block every lane
 * takes alike, with no way out before it. */
static bool kl_facts_meet_out(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t u,
                              uint32_t v, int depth) {
  uint32_t anc, q;
  uint32_t b = depth > 0 && kl_facts_sg_alike(f, s, u) ? kl_facts_arm(f, u, v, &anc, &q) : 0;
  if (!b) return false;
  if (anc != v && kl_facts_meet_out(f, s, anc, v, depth - 1)) return true;
  for (uint32_t i = q + 1; i < f->blocks[b].n; i++)
    if (kl_facts_meets(f, f->blocks[b].ins[i])) return !kl_facts_leaves(f, b, q, i);
  return false;
}

bool kl_facts_simd_ordered_ins(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a,
                               uint32_t b, bool one_sg) {
  if (!a || !b || a == b || a >= f->nins || b >= f->nins || f->truncated) return false;
  if (!one_sg && !kl_facts_one_sg(f, s, a, b)) return false;
  /* The innermost block holding both. */
  uint32_t blk = KL_IR_NONE, xa = 0, xb = 0;
  for (uint32_t u = a, guard = 0; u && guard < f->nins && !blk; guard++) {
    uint32_t here = f->ins[u].block, other = kl_facts_anc(f, b, here);
    if (other) blk = here, xa = u, xb = other;
    u = f->blocks[here].parent;
  }
  if (!blk || xa == xb) return false;
  bool looped = false;
  for (uint32_t p = f->blocks[blk].parent, guard = 0; p && guard < f->nins && !looped; guard++) {
    looped = f->ins[p].op == KL_IR_LOOP && !(f->ins[p].flags & KL_IR_F_REGION);
    p = f->blocks[f->ins[p].block].parent;
  }
  uint32_t pa = kl_facts_pos(f, blk, xa), pb = kl_facts_pos(f, blk, xb);
  /* Around a loop, every path from the first access to the second (in this iteration or a
   * later one) passes the operation between them only when the first comes first in the block:
   * the other way round, the path goes over the back edge and skips it. */
  if (looped && pa > pb) return false;
  /* e and l: the access first in the block and the one after it, each held by the construct of
   * the block at its position (itself when it sits in the block). */
  uint32_t e = a, xe = xa, l = b, xl = xb;
  if (pa > pb) {
    uint32_t t = pa;
    pa = pb, pb = t;
    e = b, xe = xb, l = a, xl = xa;
  }
  uint32_t pc = UINT32_MAX;
  for (uint32_t i = pa + 1; i < pb && pc == UINT32_MAX; i++)
    if (kl_facts_meets(f, f->blocks[blk].ins[i])) pc = i;
  /* A thread that leaves between its access and the operation does not meet the others there. */
  if (pc != UINT32_MAX) return !kl_facts_leaves(f, blk, pa, pc);
  /* The operation may stand inside the construct that holds an access: after the first access
   * on its way out, or before the second on the way in (llama.cpp's flash attention: a lane's
   * mask value stored, then read by another lane in a loop of keys after its shuffles). */
  if (kl_facts_leaves(f, blk, pa, pb)) return false;
  return (xe != e && kl_facts_meet_out(f, s, xe, e, 8)) ||
         (xl != l && kl_facts_meet_into(f, s, xl, l, 8));
}
