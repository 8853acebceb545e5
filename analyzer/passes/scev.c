/* Scalar evolution: affine forms over coordinate and recurrence atoms (see scev.h). */
#include "analyzer/passes/scev.h"

#include <string.h>

/* A walk of a loop is repeated while candidate PHIs are demoted; after this many rounds every
 * PHI not yet proven a recurrence is unknown, so nested loops cost a bounded factor each. */
#define KL_SCEV_ROUNDS 3
/* How deep an invariance or expansion looks through operands. */
#define KL_SCEV_DEPTH 6

/* What a loop's header PHI is taken to be during a round. */
enum kl_scev_phi { KL_SCEV_CAND = 0, KL_SCEV_UNIFORM, KL_SCEV_UNKNOWN };

struct kl_scev_ctx {
  struct kl_scev *s;
  struct kl_arena *a;
  uint32_t *cand; /* a header PHI's candidate atom, plus one, kept across rounds */
  int64_t budget; /* values left to compute before loops stop repeating their walks */
};

static const struct kl_ir_ins *kl_scev_ins(const struct kl_scev *s, uint32_t v) {
  return &s->f->ins[v];
}

/* A uniform value is a symbol tagged with its value id while it is exactly that value. */
static struct kl_affine kl_scev_sym(const struct kl_ir_fn *f, uint32_t v) {
  uint32_t tag = v & ~KL_AFFINE_SYM_KNOWN;
  if (f->ins[v].op == KL_IR_SYMBOL) tag |= KL_AFFINE_SYM_CT;
  return kl_affine_symbol_id(tag);
}

static enum kl_scope kl_scev_max(enum kl_scope a, enum kl_scope b) {
  return a > b ? a : b;
}

static enum kl_scope kl_scev_ops_scope(const struct kl_scev *s, const struct kl_ir_ins *in) {
  enum kl_scope sc = KL_SCOPE_UNIFORM;
  for (uint32_t i = 0; i < in->nops; i++)
    if (in->ops[i]) sc = kl_scev_max(sc, (enum kl_scope)s->scope[in->ops[i]]);
  return sc;
}

static uint16_t kl_scev_new_atom(struct kl_scev_ctx *c, struct kl_scev_atom at) {
  struct kl_scev *s = c->s;
  KL_VEC_PUSH(c->a, s->atoms, s->natoms, s->cap_atoms);
  s->atoms[s->natoms] = at;
  return (uint16_t)s->natoms++;
}

/* Whether a name is a floating type, whose values have no integer form. */
static bool kl_scev_float_type(const char *t) {
  if (!t) return false;
  return !strncmp(t, "float", 5) || !strncmp(t, "half", 4) || !strncmp(t, "bfloat", 6) ||
         !strncmp(t, "double", 6);
}

static bool kl_scev_fold(uint8_t op, int64_t x, int64_t y, int64_t *r) {
  switch (op) {
  case KL_IR_ADD:
    return !__builtin_add_overflow(x, y, r);
  case KL_IR_SUB:
    return !__builtin_sub_overflow(x, y, r);
  case KL_IR_MUL:
    return !__builtin_mul_overflow(x, y, r);
  case KL_IR_DIV:
    if (!y || (x == INT64_MIN && y == -1)) return false;
    *r = x / y;
    return true;
  case KL_IR_REM:
    if (!y || (x == INT64_MIN && y == -1)) return false;
    *r = x % y;
    return true;
  case KL_IR_SHL:
    if (y < 0 || y > 62 || x < 0 || x > (INT64_MAX >> y)) return false;
    *r = x << y;
    return true;
  case KL_IR_SHR:
    if (y < 0 || y > 63 || x < 0) return false;
    *r = x >> y;
    return true;
  case KL_IR_AND:
    *r = x & y;
    return true;
  case KL_IR_OR:
    *r = x | y;
    return true;
  case KL_IR_XOR:
    *r = x ^ y;
    return true;
  case KL_IR_LT:
    *r = x < y;
    return true;
  case KL_IR_LE:
    *r = x <= y;
    return true;
  case KL_IR_GT:
    *r = x > y;
    return true;
  case KL_IR_GE:
    *r = x >= y;
    return true;
  case KL_IR_EQ:
    *r = x == y;
    return true;
  case KL_IR_NE:
    *r = x != y;
    return true;
  case KL_IR_LAND:
    *r = x && y;
    return true;
  case KL_IR_LOR:
    *r = x || y;
    return true;
  case KL_IR_MIN:
    *r = x < y ? x : y;
    return true;
  case KL_IR_MAX:
    *r = x > y ? x : y;
    return true;
  default:
    return false;
  }
}

static bool kl_scev_in_loop(const struct kl_ir_fn *f, uint32_t v, uint32_t loop) {
  const struct kl_ir_ins *l = &f->ins[loop];
  for (int b = 0; b < 3; b++)
    if (l->blk[b] && kl_ir_within(f, v, l->blk[b])) return true;
  return false;
}

/* Whether v has the same value in every iteration of LOOP loop. */
static bool kl_scev_invariant(const struct kl_scev *s, uint32_t v, uint32_t loop, int depth) {
  if (!kl_scev_in_loop(s->f, v, loop)) return true;
  const struct kl_ir_ins *in = kl_scev_ins(s, v);
  switch (in->op) {
  case KL_IR_CONST:
  case KL_IR_ARG:
  case KL_IR_COORD:
  case KL_IR_SYMBOL:
    return true;
  case KL_IR_UNOP:
  case KL_IR_BINOP:
  case KL_IR_CAST:
    if (depth <= 0) return false;
    for (uint32_t i = 0; i < in->nops; i++)
      if (!kl_scev_invariant(s, in->ops[i], loop, depth - 1)) return false;
    return true;
  default:
    return false;
  }
}

/* The value that back adds to phi each iteration: back is phi + s (through casts, and the same s
 * at every continue). 0 when not of that shape. */
static uint32_t kl_scev_step_value(const struct kl_scev *s, uint32_t back, uint32_t phi,
                                   int depth) {
  if (!back || depth <= 0) return 0;
  const struct kl_ir_ins *in = kl_scev_ins(s, back);
  if (in->op == KL_IR_CAST) return kl_scev_step_value(s, in->ops[0], phi, depth - 1);
  if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_LATCH) {
    uint32_t step = 0;
    for (uint32_t i = 0; i < in->nops; i++) {
      uint32_t st = kl_scev_step_value(s, in->ops[i], phi, depth - 1);
      if (!st || (step && st != step)) return 0;
      step = st;
    }
    return step;
  }
  if (in->op != KL_IR_BINOP || in->sub != KL_IR_ADD || in->nops != 2) return 0;
  struct kl_affine p = s->form[phi];
  if (kl_affine_equal(s->form[in->ops[0]], p)) return in->ops[1];
  if (kl_affine_equal(s->form[in->ops[1]], p)) return in->ops[0];
  return 0;
}

/* Whether back is, as written, phi plus a constant or a uniform value from before the loop (the
 * recurrences a loop keeps when the budget allows no second walk). */
static bool kl_scev_plain_step(const struct kl_scev *s, uint32_t back, uint32_t phi, uint32_t loop,
                               int depth) {
  if (!back || depth <= 0) return false;
  const struct kl_ir_ins *in = kl_scev_ins(s, back);
  if (in->op == KL_IR_CAST && in->nops)
    return kl_scev_plain_step(s, in->ops[0], phi, loop, depth - 1);
  if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_LATCH) {
    for (uint32_t i = 0; i < in->nops; i++)
      if (!kl_scev_plain_step(s, in->ops[i], phi, loop, depth - 1)) return false;
    return in->nops > 0;
  }
  if (in->op != KL_IR_BINOP || in->sub != KL_IR_ADD || in->nops != 2) return false;
  uint32_t st = in->ops[0] == phi ? in->ops[1] : in->ops[1] == phi ? in->ops[0] : 0;
  if (!st) return false;
  if (s->f->ins[st].op == KL_IR_CONST) return true;
  return !kl_scev_in_loop(s->f, st, loop) && s->scope[st] == KL_SCOPE_UNIFORM &&
         s->form[st].known && !s->form[st].n;
}

static void kl_scev_walk(struct kl_scev_ctx *c, uint32_t block);

/* An address v derived from base: same root; the offset from base's offset plus idx elements
 * (idx may be 0 for none), or unknown when the units cannot be matched. */
static void kl_scev_derive(struct kl_scev *s, uint32_t v, uint32_t base, struct kl_affine idx,
                           bool has_idx) {
  s->root[v] = s->root[base];
  const struct kl_ir_ins *in = kl_scev_ins(s, v), *b = kl_scev_ins(s, base);
  struct kl_affine off = s->offset[base];
  if (b->op == KL_IR_INDEX && in->op == KL_IR_INDEX && b->imm != in->imm) {
    /* A row of a 2-D array steps a whole number of the inner element. */
    if (in->imm > 0 && b->imm > 0 && b->imm % in->imm == 0)
      off = kl_affine_mul(off, kl_affine_const(b->imm / in->imm));
    else
      off = kl_affine_unknown();
  } else if (b->op == KL_IR_MEMBER ||
             (b->op == KL_IR_CAST && !(off.known && !off.n && !off.c0_symbolic && !off.c0))) {
    /* A field, or a pointer cast to another element type past its start: other units. */
    off = kl_affine_unknown();
  }
  s->offset[v] = has_idx ? kl_affine_add(off, idx, 1) : off;
}

static void kl_scev_binop(struct kl_scev *s, uint32_t v, const struct kl_ir_ins *in) {
  uint32_t x = in->ops[0], y = in->ops[1];
  struct kl_affine fx = s->form[x], fy = s->form[y];
  int64_t cx, cy, r;
  s->scope[v] = kl_scev_ops_scope(s, in);
  if ((in->sub == KL_IR_ADD || in->sub == KL_IR_SUB) && (s->root[x] || s->root[y])) {
    /* Pointer arithmetic: p + i, i + p, p - i step the pointer in its own elements. */
    if (s->root[x] && !s->root[y])
      kl_scev_derive(s, v, x, in->sub == KL_IR_SUB ? kl_affine_mul(fy, kl_affine_const(-1)) : fy,
                     true);
    else if (s->root[y] && in->sub == KL_IR_ADD)
      kl_scev_derive(s, v, y, fx, true);
    return;
  }
  if (kl_ir_const(s->f, x, &cx) && kl_ir_const(s->f, y, &cy) && kl_scev_fold(in->sub, cx, cy, &r)) {
    s->form[v] = kl_affine_const(r);
    return;
  }
  switch (in->sub) {
  case KL_IR_ADD:
    s->form[v] = kl_affine_add(fx, fy, 1);
    break;
  case KL_IR_SUB:
    s->form[v] = kl_affine_add(fx, fy, -1);
    break;
  case KL_IR_MUL:
    s->form[v] = kl_affine_mul(fx, fy);
    break;
  case KL_IR_SHL:
    if (kl_ir_const(s->f, y, &cy) && cy >= 0 && cy < 62)
      s->form[v] = kl_affine_mul(fx, kl_affine_const((int64_t)1 << cy));
    break;
  default:
    break;
  }
  /* A partial sum is an affine part plus what is not affine; keep only whole forms. */
  if (s->form[v].partial) s->form[v] = kl_affine_unknown();
}

/* The join of incoming forms at a PHI after an IF or at a latch; cond_scope is how uniform the
 * choice between them is. */
static void kl_scev_join(struct kl_scev *s, uint32_t v, const struct kl_ir_ins *in,
                         enum kl_scope cond_scope) {
  bool first = true, equal = true;
  struct kl_affine j = kl_affine_unknown();
  enum kl_scope sc = KL_SCOPE_UNIFORM;
  for (uint32_t i = 0; i < in->nops; i++) {
    uint32_t o = in->ops[i];
    if (!o) continue;
    sc = kl_scev_max(sc, (enum kl_scope)s->scope[o]);
    if (first) {
      j = s->form[o];
      first = false;
    } else {
      if (!kl_affine_equal(j, s->form[o])) equal = false;
      j = kl_affine_join(j, s->form[o]);
    }
  }
  if (first) {
    s->scope[v] = KL_SCOPE_THREAD;
    return;
  }
  if (!equal) {
    if (cond_scope != KL_SCOPE_UNIFORM) {
      s->form[v] = kl_affine_unknown();
      s->scope[v] = kl_scev_max(sc, cond_scope);
      return;
    }
    if (!j.known && sc == KL_SCOPE_UNIFORM) j = kl_scev_sym(s->f, v);
  }
  s->form[v] = j;
  s->scope[v] = sc;
}

/* Whether a form names a recurrence of loop or of a loop inside it (out of scope after it). */
static bool kl_scev_names_loop(const struct kl_scev *s, struct kl_affine a, uint32_t loop) {
  if (!a.known) return false;
  const struct kl_ir_ins *l = kl_scev_ins(s, loop);
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = &s->atoms[a.t[i].atom];
    if (at->kind != KL_SCEV_REC) continue;
    if (at->loop == loop) return true;
    for (int b = 0; b < 3; b++)
      if (l->blk[b] && kl_ir_within(s->f, at->loop, l->blk[b])) return true;
  }
  return false;
}

/* The scope of the choice of exit: the condition's and that of every IF a break or return in the
 * loop is under (inside the loop). */
static enum kl_scope kl_scev_exit_scope(const struct kl_scev *s, uint32_t block, uint32_t loop) {
  const struct kl_ir_fn *f = s->f;
  const struct kl_ir_block *b = &f->blocks[block];
  enum kl_scope sc = KL_SCOPE_UNIFORM;
  for (uint32_t i = 0; i < b->n; i++) {
    const struct kl_ir_ins *in = &f->ins[b->ins[i]];
    if (in->op == KL_IR_BREAK || in->op == KL_IR_RETURN) {
      /* Every IF between this block and the loop. */
      uint32_t bb = block;
      while (bb && f->blocks[bb].parent && f->blocks[bb].parent != loop) {
        const struct kl_ir_ins *o = &f->ins[f->blocks[bb].parent];
        if (o->op == KL_IR_IF && o->nops) sc = kl_scev_max(sc, (enum kl_scope)s->scope[o->ops[0]]);
        bb = o->block;
      }
    } else if (in->op == KL_IR_IF || in->op == KL_IR_LOOP) {
      for (int k = 0; k < 3; k++)
        if (in->blk[k]) sc = kl_scev_max(sc, kl_scev_exit_scope(s, in->blk[k], loop));
    }
  }
  return sc;
}

static void kl_scev_loop(struct kl_scev_ctx *c, uint32_t loop) {
  struct kl_scev *s = c->s;
  const struct kl_ir_fn *f = s->f;
  const struct kl_ir_ins *l = &f->ins[loop];
  const struct kl_ir_block *hdr = &f->blocks[l->blk[0]];
  uint32_t nphis = 0;
  for (uint32_t i = 0; i < hdr->n; i++) {
    const struct kl_ir_ins *p = &f->ins[hdr->ins[i]];
    if (p->op == KL_IR_PHI && p->sub == KL_IR_PHI_HEAD) nphis++;
  }
  uint32_t *phis = kl_arena_alloc(c->a, (nphis + 1) * sizeof *phis);
  uint8_t *state = kl_arena_alloc(c->a, nphis + 1);
  nphis = 0;
  for (uint32_t i = 0; i < hdr->n; i++) {
    const struct kl_ir_ins *p = &f->ins[hdr->ins[i]];
    if (p->op == KL_IR_PHI && p->sub == KL_IR_PHI_HEAD) phis[nphis++] = hdr->ins[i];
  }
  /* Out of budget (loops nested deep, each needing rounds): one walk, keeping only the
   * recurrences written plainly, so the cost stays linear in the nesting. */
  bool cheap = c->budget <= 0;
  if (cheap)
    for (uint32_t i = 0; i < nphis; i++) {
      const struct kl_ir_ins *pi = &f->ins[phis[i]];
      bool plain = pi->nops > 1 && kl_scev_plain_step(s, pi->ops[1], phis[i], loop, KL_SCEV_DEPTH);
      state[i] = plain ? KL_SCEV_CAND : KL_SCEV_UNKNOWN;
    }
  for (int round = 0;; round++) {
    for (uint32_t i = 0; i < nphis; i++) {
      uint32_t p = phis[i], entry = f->ins[p].nops ? f->ins[p].ops[0] : 0;
      s->atom_of[p] = 0;
      s->root[p] = 0;
      if (state[i] == KL_SCEV_CAND) {
        if (!c->cand[p]) {
          struct kl_scev_atom at = {0};
          at.kind = KL_SCEV_REC;
          at.value = p;
          at.loop = loop;
          c->cand[p] = (uint32_t)kl_scev_new_atom(c, at) + 1;
        }
        struct kl_scev_atom *at = &s->atoms[c->cand[p] - 1];
        at->kind = KL_SCEV_REC;
        at->start = entry;
        at->start_form = entry ? s->form[entry] : kl_affine_unknown();
        at->scope = entry ? (enum kl_scope)s->scope[entry] : KL_SCOPE_THREAD;
        s->form[p] = kl_affine_atom((uint16_t)(c->cand[p] - 1));
        s->scope[p] = (uint8_t)at->scope;
        s->atom_of[p] = c->cand[p];
      } else if (state[i] == KL_SCEV_UNIFORM) {
        s->form[p] = kl_scev_sym(f, p);
        s->scope[p] = KL_SCOPE_UNIFORM;
      } else {
        s->form[p] = kl_affine_unknown();
        s->scope[p] = KL_SCOPE_THREAD;
      }
    }
    for (int b = 0; b < 3; b++)
      if (l->blk[b]) kl_scev_walk(c, l->blk[b]);
    bool changed = false;
    for (uint32_t i = 0; i < nphis; i++) {
      uint32_t p = phis[i];
      const struct kl_ir_ins *pi = &f->ins[p];
      uint32_t entry = pi->nops > 0 ? pi->ops[0] : 0, back = pi->nops > 1 ? pi->ops[1] : 0;
      bool ok;
      if (state[i] == KL_SCEV_CAND) {
        struct kl_scev_atom *at = &s->atoms[c->cand[p] - 1];
        struct kl_affine d =
            back ? kl_affine_add(s->form[back], s->form[p], -1) : kl_affine_unknown();
        ok = entry && d.known && d.n == 0;
        at->step_value = 0;
        if (ok && d.c0_symbolic) {
          uint32_t st = kl_scev_step_value(s, back, p, KL_SCEV_DEPTH);
          ok = st && kl_scev_invariant(s, st, loop, KL_SCEV_DEPTH);
          at->step_value = st;
        }
        if (ok) at->step = d;
      } else if (state[i] == KL_SCEV_UNIFORM) {
        ok = round < KL_SCEV_ROUNDS && back && s->scope[back] == KL_SCOPE_UNIFORM;
      } else {
        ok = true;
      }
      if (ok) continue;
      if (cheap) {
        /* No second walk: what was computed from it stays, but names no atom. */
        if (state[i] == KL_SCEV_CAND) s->atoms[c->cand[p] - 1].kind = 0;
        continue;
      }
      changed = true;
      if (state[i] == KL_SCEV_CAND) {
        s->atoms[c->cand[p] - 1].kind = 0;
        state[i] = entry && s->scope[entry] == KL_SCOPE_UNIFORM && round < KL_SCEV_ROUNDS
                       ? KL_SCEV_UNIFORM
                       : KL_SCEV_UNKNOWN;
      } else {
        state[i] = KL_SCEV_UNKNOWN;
      }
    }
    if (!changed) break;
  }
}

static void kl_scev_exit_phi(struct kl_scev *s, uint32_t v, const struct kl_ir_ins *in) {
  uint32_t loop = in->ref_ins;
  for (uint32_t i = 0; i < in->nops; i++) {
    if (in->ops[i] && kl_scev_names_loop(s, s->form[in->ops[i]], loop)) {
      s->form[v] = kl_affine_unknown();
      bool uni = true;
      for (uint32_t k = 0; k < in->nops; k++)
        if (in->ops[k] && s->scope[in->ops[k]] != KL_SCOPE_UNIFORM) uni = false;
      const struct kl_ir_ins *l = kl_scev_ins(s, loop);
      enum kl_scope sc =
          l->ops && l->nops && l->ops[0] ? (enum kl_scope)s->scope[l->ops[0]] : KL_SCOPE_UNIFORM;
      for (int b = 0; b < 3; b++)
        if (l->blk[b]) sc = kl_scev_max(sc, kl_scev_exit_scope(s, l->blk[b], loop));
      /* The final count of a loop every thread leaves together is one uniform value. */
      if (uni && sc == KL_SCOPE_UNIFORM) {
        s->form[v] = kl_scev_sym(s->f, v);
        s->scope[v] = KL_SCOPE_UNIFORM;
      } else {
        s->scope[v] = KL_SCOPE_THREAD;
      }
      return;
    }
  }
  kl_scev_join(s, v, in, KL_SCOPE_THREAD);
}

static bool kl_scev_simd_width(const char *name) {
  /* Every Apple GPU runs SIMD groups of 32 threads. */
  return !strcmp(name, "threads_per_simdgroup") || !strcmp(name, "thread_execution_width");
}

bool kl_scev_arg_is_memory(const struct kl_var *var) {
  if (!var) return false;
  if (var->is_pointer || var->array_dims) return true;
  const struct kl_msl_type *t = kl_msl_type(var->type);
  return var->is_reference && !(t && t->kind == KL_TYPE_SCALAR);
}

uint32_t kl_scev_leader(const struct kl_scev *s, uint32_t v) {
  return v && v < s->f->nins && s->leader[v] ? s->leader[v] : v;
}

/* A hash of the address a computes (ARG, MEMBER, INDEX by a constant or a value, CAST). */
static uint64_t kl_scev_addr_hash(const struct kl_scev *s, uint32_t a, int depth) {
  const struct kl_ir_ins *in = kl_scev_ins(s, a);
  uint64_t h = 1469598103934665603ull ^ in->op;
  int64_t k;
  if (depth <= 0 || !in->nops || in->op == KL_IR_ARG || in->op == KL_IR_ALLOC)
    return h * 1099511628211ull ^ a;
  h = (h ^ kl_scev_addr_hash(s, in->ops[0], depth - 1)) * 1099511628211ull;
  if (in->op == KL_IR_MEMBER && in->name)
    for (const char *p = in->name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
  if (in->op == KL_IR_INDEX && in->nops > 1)
    h = (h ^ (kl_ir_const(s->f, in->ops[1], &k) ? (uint64_t)k * 31 + 7
                                                : kl_scev_leader(s, in->ops[1]))) *
        1099511628211ull;
  return h ^ (uint64_t)in->imm;
}

/* Whether addresses a and b are the same computation (by kl_scev_addr_hash's parts). */
static bool kl_scev_addr_same(const struct kl_scev *s, uint32_t a, uint32_t b, int depth) {
  if (a == b) return true;
  const struct kl_ir_ins *x = kl_scev_ins(s, a), *y = kl_scev_ins(s, b);
  if (depth <= 0 || x->op != y->op || x->nops != y->nops || !x->nops || x->imm != y->imm)
    return false;
  if (x->op != KL_IR_MEMBER && x->op != KL_IR_INDEX && x->op != KL_IR_CAST) return false;
  if (x->op == KL_IR_MEMBER && (!x->name || !y->name || strcmp(x->name, y->name))) return false;
  if (x->op == KL_IR_CAST && (!x->type || !y->type || strcmp(x->type, y->type))) return false;
  if (x->op == KL_IR_INDEX) {
    int64_t i, j;
    bool ci = kl_ir_const(s->f, x->ops[1], &i), cj = kl_ir_const(s->f, y->ops[1], &j);
    if (ci != cj || (ci && i != j) ||
        (!ci && kl_scev_leader(s, x->ops[1]) != kl_scev_leader(s, y->ops[1])))
      return false;
  }
  return kl_scev_addr_same(s, x->ops[0], y->ops[0], depth - 1);
}

/* The first load of read-only memory at load v's address (v itself when it is the first). */
static uint32_t kl_scev_find_leader(struct kl_scev_ctx *c, uint32_t v) {
  struct kl_scev *s = c->s;
  if (!s->table) {
    uint32_t n = 64;
    while (n < 2 * s->f->nins && n < (1u << 30)) n <<= 1;
    s->table = kl_arena_alloc(c->a, n * sizeof *s->table);
    s->ntable = n;
  }
  uint32_t addr = s->f->ins[v].ops[0];
  uint64_t h = kl_scev_addr_hash(s, addr, 8);
  for (uint32_t i = (uint32_t)(h & (s->ntable - 1)), probes = 0; probes < s->ntable;
       i = (i + 1) & (s->ntable - 1), probes++) {
    uint32_t w = s->table[i];
    if (!w) {
      s->table[i] = v;
      return v;
    }
    if (w == v) return v; /* a loop's body walked again */
    const struct kl_ir_ins *wi = kl_scev_ins(s, w);
    const char *tv = s->f->ins[v].type;
    if ((wi->type == tv || (wi->type && tv && !strcmp(wi->type, tv))) &&
        kl_scev_addr_same(s, wi->ops[0], addr, 8))
      return w;
  }
  return v;
}

static void kl_scev_value(struct kl_scev_ctx *c, uint32_t v) {
  struct kl_scev *s = c->s;
  c->budget--;
  const struct kl_ir_fn *f = s->f;
  const struct kl_ir_ins *in = &f->ins[v];
  s->form[v] = kl_affine_unknown();
  s->root[v] = 0;
  s->scope[v] = KL_SCOPE_THREAD;
  switch (in->op) {
  case KL_IR_CONST:
    s->form[v] = kl_affine_const(in->imm);
    s->scope[v] = KL_SCOPE_UNIFORM;
    return;
  case KL_IR_FCONST:
    s->scope[v] = KL_SCOPE_UNIFORM;
    return;
  case KL_IR_ARG:
    s->scope[v] = KL_SCOPE_UNIFORM;
    if (kl_scev_arg_is_memory(in->var)) {
      s->root[v] = v;
      s->offset[v] = kl_affine_const(0);
    } else if (in->var && in->var->coord && kl_scev_simd_width(in->var->coord->name)) {
      s->form[v] = kl_affine_const(32);
    } else {
      s->form[v] = kl_scev_sym(f, v);
    }
    return;
  case KL_IR_SYMBOL:
    s->form[v] = kl_scev_sym(f, v);
    s->scope[v] = KL_SCOPE_UNIFORM;
    return;
  case KL_IR_COORD: {
    const struct kl_msl_coord *co = in->coord;
    if (in->flags & KL_IR_F_VECTOR) {
      /* A whole uint3 is no one component: only its uniformity is known. */
      s->scope[v] = co ? co->scope : KL_SCOPE_THREAD;
      if (s->scope[v] == KL_SCOPE_UNIFORM) s->form[v] = kl_scev_sym(f, v);
      return;
    }
    if (co && co->scope == KL_SCOPE_UNIFORM) {
      /* Every Apple GPU runs SIMD groups of 32 threads. */
      if (kl_scev_simd_width(co->name))
        s->form[v] = kl_affine_const(32);
      else
        s->form[v] = kl_scev_sym(f, v);
      s->scope[v] = KL_SCOPE_UNIFORM;
      return;
    }
    uint32_t id = 0;
    for (uint32_t i = 0; i < s->natoms && co; i++)
      if (s->atoms[i].kind == KL_SCEV_COORD && s->atoms[i].coord == co &&
          s->atoms[i].comp == (int)in->imm)
        id = i + 1;
    if (!id) {
      struct kl_scev_atom at = {0};
      at.kind = KL_SCEV_COORD;
      at.value = v;
      at.coord = co;
      at.comp = (int)in->imm;
      at.scope = co ? co->scope : KL_SCOPE_THREAD;
      id = (uint32_t)kl_scev_new_atom(c, at) + 1;
    }
    s->atom_of[v] = id;
    s->form[v] = kl_affine_atom((uint16_t)(id - 1));
    s->scope[v] = (uint8_t)s->atoms[id - 1].scope;
    return;
  }
  case KL_IR_UNOP:
    if (!in->nops) return;
    s->scope[v] = kl_scev_ops_scope(s, in);
    if (in->sub == KL_IR_NEG) s->form[v] = kl_affine_mul(s->form[in->ops[0]], kl_affine_const(-1));
    break;
  case KL_IR_BINOP:
    if (in->nops < 2) return;
    kl_scev_binop(s, v, in);
    break;
  case KL_IR_SELECT: {
    if (in->nops < 3) return;
    int64_t k;
    if (kl_ir_const(f, in->ops[0], &k)) {
      uint32_t o = in->ops[k ? 1 : 2];
      s->form[v] = s->form[o];
      s->scope[v] = s->scope[o];
      return;
    }
    struct kl_ir_ins arms = *in;
    arms.ops = in->ops + 1;
    arms.nops = 2;
    kl_scev_join(s, v, &arms, (enum kl_scope)s->scope[in->ops[0]]);
    break;
  }
  case KL_IR_CAST:
    if (!in->nops) return;
    s->scope[v] = s->scope[in->ops[0]];
    if (s->root[in->ops[0]]) {
      kl_scev_derive(s, v, in->ops[0], kl_affine_const(0), false);
      return;
    }
    if (!kl_scev_float_type(in->type)) s->form[v] = s->form[in->ops[0]];
    break;
  case KL_IR_CALL:
    s->scope[v] = kl_scev_ops_scope(s, in);
    break;
  case KL_IR_SIMD:
    s->scope[v] =
        kl_scev_max(kl_scev_ops_scope(s, in), in->fn ? in->fn->result_scope : KL_SCOPE_THREAD);
    break;
  case KL_IR_ALLOC:
    s->scope[v] = KL_SCOPE_UNIFORM;
    s->root[v] = v;
    s->offset[v] = kl_affine_const(0);
    return;
  case KL_IR_INDEX:
    if (in->nops < 2) return;
    s->scope[v] = kl_scev_ops_scope(s, in);
    if (s->root[in->ops[0]]) kl_scev_derive(s, v, in->ops[0], s->form[in->ops[1]], true);
    return;
  case KL_IR_MEMBER:
    if (!in->nops) return;
    s->scope[v] = s->scope[in->ops[0]];
    if (s->root[in->ops[0]]) {
      s->root[v] = s->root[in->ops[0]];
      s->offset[v] = kl_affine_unknown(); /* a field's offset is the layout's */
    }
    return;
  case KL_IR_LOAD: {
    if (!in->nops) return;
    uint32_t r = s->root[in->ops[0]];
    const struct kl_ir_ins *ri = r ? &f->ins[r] : NULL;
    /* One address of a kernel's buffer holds one value for every thread that reads it. */
    if (ri && ri->op == KL_IR_ARG && (in->as == KL_AS_CONSTANT || (ri->var && ri->var->is_const)))
      s->leader[v] = kl_scev_find_leader(c, v);
    if (ri && ri->op == KL_IR_ARG && s->scope[in->ops[0]] == KL_SCOPE_UNIFORM &&
        in->as != KL_AS_THREADGROUP && in->as != KL_AS_THREAD) {
      s->scope[v] = KL_SCOPE_UNIFORM;
      if (!kl_scev_float_type(in->type))
        s->form[v] = kl_scev_sym(f, s->leader[v] ? s->leader[v] : v);
    }
    return;
  }
  case KL_IR_IF:
    for (int b = 0; b < 2; b++)
      if (in->blk[b]) kl_scev_walk(c, in->blk[b]);
    return;
  case KL_IR_LOOP:
    kl_scev_loop(c, v);
    return;
  case KL_IR_PHI:
    switch (in->sub) {
    case KL_IR_PHI_IF: {
      const struct kl_ir_ins *ifi = &f->ins[in->ref_ins];
      enum kl_scope cs = ifi->nops ? (enum kl_scope)s->scope[ifi->ops[0]] : KL_SCOPE_THREAD;
      kl_scev_join(s, v, in, cs);
      break;
    }
    case KL_IR_PHI_LATCH:
      kl_scev_join(s, v, in, KL_SCOPE_THREAD);
      break;
    case KL_IR_PHI_EXIT:
      kl_scev_exit_phi(s, v, in);
      break;
    default:
      break;
    }
    for (uint32_t i = 0; i < in->nops; i++)
      if (in->ops[i] && s->root[in->ops[i]]) {
        /* A pointer chosen between two of one buffer keeps the buffer, not the offset. */
        if (s->root[v] && s->root[v] != s->root[in->ops[i]]) {
          s->root[v] = 0;
          break;
        }
        s->root[v] = s->root[in->ops[i]];
        s->offset[v] = kl_affine_unknown();
      }
    return;
  default:
    return;
  }
  /* A value computed from uniform values alone is one uniform value; from compile-time values
   * alone (`Dk / 32` of a template value), a compile-time one. */
  if (!s->form[v].known && s->scope[v] == KL_SCOPE_UNIFORM && !kl_scev_float_type(in->type)) {
    s->form[v] = kl_scev_sym(f, v);
    uint32_t ct = in->nops ? KL_AFFINE_SYM_CT : 0;
    for (uint32_t i = 0; i < in->nops && ct; i++) {
      struct kl_affine o = s->form[in->ops[i]];
      if (!o.known || o.n || (o.c0_symbolic && !(o.sym & KL_AFFINE_SYM_CT)))
        ct = 0;
      else if (o.c0_symbolic)
        ct |= o.sym & KL_AFFINE_SYM_PRODUCT;
    }
    s->form[v].sym |= ct;
  }
}

static void kl_scev_walk(struct kl_scev_ctx *c, uint32_t block) {
  const struct kl_ir_block *b = &c->s->f->blocks[block];
  for (uint32_t i = 0; i < b->n; i++) {
    uint32_t v = b->ins[i];
    const struct kl_ir_ins *in = &c->s->f->ins[v];
    if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_HEAD) continue; /* set by its loop */
    kl_scev_value(c, v);
  }
}

struct kl_scev *kl_scev_run(struct kl_arena *a, const struct kl_ir_fn *f) {
  struct kl_scev *s = kl_arena_alloc(a, sizeof *s);
  s->f = f;
  size_t n = f->nins ? f->nins : 1;
  s->form = kl_arena_alloc(a, n * sizeof *s->form);
  s->root = kl_arena_alloc(a, n * sizeof *s->root);
  s->offset = kl_arena_alloc(a, n * sizeof *s->offset);
  s->scope = kl_arena_alloc(a, n);
  s->atom_of = kl_arena_alloc(a, n * sizeof *s->atom_of);
  s->leader = kl_arena_alloc(a, n * sizeof *s->leader);
  memset(s->scope, KL_SCOPE_THREAD, n);
  /* Enough for every loop's rounds in ordinary kernels; past it, loops walk once. */
  struct kl_scev_ctx c = {s, a, kl_arena_alloc(a, n * sizeof(uint32_t)), 64 * (int64_t)n + 4096};
  if (f->body) kl_scev_walk(&c, f->body);
  /* Atoms are 16-bit in kl_affine; a function with more is not followed past them. */
  if (s->natoms > UINT16_MAX) {
    for (size_t v = 0; v < n; v++) s->form[v] = kl_affine_unknown();
  }
  return s;
}

struct kl_affine kl_scev_form(const struct kl_scev *s, uint32_t v) {
  if (!v || v >= s->f->nins) return kl_affine_unknown();
  return s->form[v];
}

const struct kl_scev_atom *kl_scev_atom(const struct kl_scev *s, uint16_t atom) {
  return atom < s->natoms && s->atoms[atom].kind ? &s->atoms[atom] : NULL;
}

bool kl_scev_atom_of(const struct kl_scev *s, uint32_t v, uint16_t *atom) {
  if (!v || v >= s->f->nins || !s->atom_of[v]) return false;
  *atom = (uint16_t)(s->atom_of[v] - 1);
  return true;
}

const struct kl_scev_atom *kl_scev_rec(const struct kl_scev *s, uint32_t v) {
  uint16_t id;
  if (!kl_scev_atom_of(s, v, &id)) return NULL;
  const struct kl_scev_atom *at = kl_scev_atom(s, id);
  return at && at->kind == KL_SCEV_REC ? at : NULL;
}

bool kl_scev_address(const struct kl_scev *s, uint32_t v, uint32_t *root,
                     struct kl_affine *offset) {
  if (!v || v >= s->f->nins || !s->root[v]) return false;
  *root = s->root[v];
  *offset = s->offset[v];
  return true;
}

static struct kl_affine kl_scev_expand_d(const struct kl_scev *s, struct kl_affine form,
                                         int depth) {
  if (!form.known) return form;
  struct kl_affine r = form;
  r.n = 0;
  for (uint8_t i = 0; i < form.n; i++) {
    struct kl_affine_term t = form.t[i];
    const struct kl_scev_atom *at = kl_scev_atom(s, t.atom);
    if (!at || at->kind != KL_SCEV_REC) {
      struct kl_affine one = kl_affine_atom(t.atom);
      one = kl_affine_mul(one, t.symbolic ? kl_affine_symbol_id(t.sym) : kl_affine_const(t.k));
      r = kl_affine_add(r, one, 1);
      continue;
    }
    if (depth <= 0) return kl_affine_unknown();
    struct kl_affine v = kl_scev_expand_d(s, at->start_form, depth - 1);
    if (at->step.c0_symbolic || at->step.c0) v = kl_affine_add(v, kl_affine_symbol(), 1);
    v = kl_affine_mul(v, t.symbolic ? kl_affine_symbol_id(t.sym) : kl_affine_const(t.k));
    r = kl_affine_add(r, v, 1);
  }
  return r;
}

struct kl_affine kl_scev_expand(const struct kl_scev *s, struct kl_affine form) {
  return kl_scev_expand_d(s, form, KL_SCEV_DEPTH);
}

bool kl_scev_coord_coeff(const struct kl_scev *s, struct kl_affine form, const char *coord,
                         int comp, int64_t *k, bool *symbolic) {
  struct kl_affine e = kl_scev_expand(s, form);
  if (!e.known) return false;
  *k = 0;
  *symbolic = false;
  for (uint8_t i = 0; i < e.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(s, e.t[i].atom);
    if (at && at->kind == KL_SCEV_COORD && at->coord && !strcmp(at->coord->name, coord) &&
        at->comp == comp) {
      *k = e.t[i].k;
      *symbolic = e.t[i].symbolic;
    }
  }
  return true;
}

enum kl_scope kl_scev_scope(const struct kl_scev *s, uint32_t v) {
  if (!v || v >= s->f->nins) return KL_SCOPE_THREAD;
  return (enum kl_scope)s->scope[v];
}

static void kl_scev_print(FILE *out, struct kl_affine a) {
  if (!a.known) {
    fputs("?", out);
    return;
  }
  if (a.c0_symbolic)
    fprintf(out, "S%u", a.sym & ~KL_AFFINE_SYM_KNOWN);
  else
    fprintf(out, "%lld", (long long)a.c0);
  for (uint8_t i = 0; i < a.n; i++) {
    if (a.t[i].symbolic)
      fprintf(out, " + S%u*a%u", a.t[i].sym & ~KL_AFFINE_SYM_KNOWN, a.t[i].atom);
    else
      fprintf(out, " + %lld*a%u", (long long)a.t[i].k, a.t[i].atom);
  }
}

void kl_scev_dump(const struct kl_scev *s, FILE *out) {
  for (uint32_t i = 0; i < s->natoms; i++) {
    const struct kl_scev_atom *at = &s->atoms[i];
    if (at->kind == KL_SCEV_COORD) {
      fprintf(out, "a%u: %s.%d (v%u)\n", i, at->coord ? at->coord->name : "?", at->comp, at->value);
    } else if (at->kind == KL_SCEV_REC) {
      fprintf(out, "a%u: {", i);
      kl_scev_print(out, at->start_form);
      fputs(", +, ", out);
      kl_scev_print(out, at->step);
      fprintf(out, "} (v%u in loop v%u)\n", at->value, at->loop);
    }
  }
  for (uint32_t v = 1; v < s->f->nins; v++) {
    fprintf(out, "v%u %s: ", v, kl_ir_op_name((enum kl_ir_op)s->f->ins[v].op));
    if (s->root[v]) {
      fprintf(out, "&v%u[", s->root[v]);
      kl_scev_print(out, s->offset[v]);
      fputs("]", out);
    } else {
      kl_scev_print(out, s->form[v]);
    }
    fprintf(out, " (%s)\n", kl_msl_scope_name((enum kl_scope)s->scope[v]));
  }
}
