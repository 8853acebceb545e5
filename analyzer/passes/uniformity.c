/* Uniformity over the IR: value scopes, control scopes and their causes (see uniformity.h). */
#include "analyzer/passes/uniformity.h"

#include <string.h>

#include "analyzer/passes/loopexit.h"

enum { KL_SIMD_WIDTH = 32 };

/* Value facts beside the scope: a range [lo, hi] the value is known to lie in, and whether it
 * is the linear thread index laid out as SIMD groups are (32 consecutive values per group). */
/* KL_U_NOTLANE: the value is not known to be one function of the lane index alone (plus values
 * uniform over the threadgroup), so two SIMD groups may hold it differently lane for lane. */
/* KL_U_TEMPORAL: the value depends on one read out of a loop that threads leave at different
 * iterations, so per-thread parts that cancel in it prove nothing. */
enum { KL_U_RANGE = 1, KL_U_ALIGNED = 2, KL_U_NOTLANE = 4, KL_U_TEMPORAL = 8 };

/* A control scope with its explanation. */
struct kl_ctlv {
  uint8_t s;
  uint32_t br, src;
};

/* An exit seen in a block and not yet consumed by its target: local is its control relative to
 * the block being walked, full its control in the function with the exit as the branch. */
/* KL_EXIT_LAST: a break that can fire only in its loop's last iteration (loopexit.h). */
enum { KL_EXIT_BREAK, KL_EXIT_CONTINUE, KL_EXIT_RETURN, KL_EXIT_LAST };
enum { KL_EXITS_MAX = 16 };
struct kl_exit {
  uint8_t kind, local;
  uint32_t site;
  struct kl_ctlv full;
};
struct kl_exits {
  struct kl_exit e[KL_EXITS_MAX];
  uint32_t n;
};

/* The per-thread part of a value as a sum of coordinates with constant coefficients, plus a rest
 * that is the same over `rest` (a scope no wider than THREADGROUP): enough to see that
 * `t < end` cancels when t = start + tid stepping by a uniform amount and end = base + tid. */
enum { KL_TP_TERMS = 4, KL_TP_UNSET = 0, KL_TP_VALID, KL_TP_INVALID };
struct kl_tp {
  uint8_t state, n, rest;
  uint16_t key[KL_TP_TERMS]; /* coordinate table index * 3 + component */
  int32_t k[KL_TP_TERMS];
};

struct kl_uniformity_work {
  const struct kl_scev *scev;
  const struct kl_uniformity_ext *ext;
  uint8_t *ext_thread; /* per CALL the unit does not define: its header's body makes it THREAD */
  struct kl_tp *tp;
  int64_t tg[3];
  int64_t max_total;
  bool ragged; /* some launch ends in narrower threadgroups (kl_uniformity_launch.ragged) */
  bool tg_known;
  bool one_simd;  /* at most 32 threads in a threadgroup: one SIMD group is all of it */
  bool runtime_x; /* kl_uniformity_launch.runtime_x */
  uint8_t *raise;    /* per instruction: control added by earlier exits in its own block */
  uint8_t *loop_div; /* per LOOP: its divergence relative to its enclosing block */
  uint32_t *loop_br, *loop_src;
  uint8_t *brk_rel;  /* per LOOP: control of its breaks relative to the loop */
  uint8_t *last_rel; /* per LOOP: control of its last-iteration breaks (KL_EXIT_LAST) */
  uint32_t *last_br, *last_src;
  struct kl_loopexit *last; /* per BREAK: what makes it a last-iteration one (loop 0: not) */
  uint8_t *cont_rel;        /* per LOOP: control of its continues relative to the loop */
  uint32_t *brk_src, *cont_src;
  uint8_t *mem; /* per ALLOC of thread memory: the scope of what is stored in it */
  uint32_t *mem_src;
  uint8_t any_mem; /* stores into thread memory whose ALLOC is not known */
  uint32_t any_mem_src;
  uint8_t *escaped; /* per ALLOC: its address reaches what the pass cannot follow (escapes) */
  /* Fields of a struct in thread memory, each kept apart: per address into one (a MEMBER of the
   * ALLOC, and addresses inside it), the first MEMBER naming that field, whose mem and mem_src
   * hold what is stored in the field; per ALLOC, fmem the join of its fields'. */
  uint32_t *field;
  uint8_t *fmem;
  uint32_t *fmem_src;
  int64_t *lo, *hi;
  uint8_t *facts;
  uint32_t *loop_of; /* per block: the innermost LOOP that holds it, 0 for none */
  bool any_loop_div; /* some LOOP's loop_div is above UNIFORM (it only grows) */
  bool changed;
};

static uint8_t max8(uint8_t a, uint8_t b) {
  return a > b ? a : b;
}

static struct kl_ctlv ctl_max(struct kl_ctlv a, struct kl_ctlv b) {
  return b.s > a.s ? b : a;
}

static uint8_t sc(const struct kl_uniformity *u, uint32_t v) {
  return v ? u->scope[v] : 0;
}

/* Whether inlined call site s is site anc or nested in it. */
static bool site_within(const struct kl_ir_fn *f, uint32_t s, uint32_t anc) {
  for (uint32_t depth = 0; depth < f->nsites; depth++) {
    if (s == anc) return true;
    if (s == 0 || s >= f->nsites) return false;
    s = f->sites[s].parent;
  }
  return false;
}

/* The ALLOC or ARG an address is computed from, or 0. */
static uint32_t addr_root(const struct kl_ir_fn *f, uint32_t v) {
  for (int steps = 0; v && steps < 256; steps++) {
    const struct kl_ir_ins *i = &f->ins[v];
    if (i->op == KL_IR_ALLOC || i->op == KL_IR_ARG) return v;
    if ((i->op != KL_IR_INDEX && i->op != KL_IR_MEMBER && i->op != KL_IR_CAST) || !i->nops)
      return 0;
    v = i->ops[0];
  }
  return 0;
}

static uint8_t use_sc(const struct kl_uniformity *u, uint32_t user, uint32_t v);
static uint8_t if_sc(const struct kl_uniformity *u, uint32_t i);

/* Control of instruction i relative to block stop: the raises from exits and the conditions of
 * every IF and LOOP between them (the whole function's when stop does not enclose i). */
static uint8_t rel_ctl(const struct kl_uniformity *u, uint32_t i, uint32_t stop, uint32_t *src) {
  const struct kl_ir_fn *f = u->fn;
  const struct kl_uniformity_work *w = u->work;
  uint8_t s = w->raise[i];
  uint32_t b = f->ins[i].block;
  for (uint32_t depth = 0; depth < f->nblocks && b != KL_IR_NONE && b != stop; depth++) {
    uint32_t o = f->blocks[b].parent;
    if (o == KL_IR_NONE) break;
    const struct kl_ir_ins *oi = &f->ins[o];
    uint8_t add = oi->op == KL_IR_IF ? if_sc(u, o) : w->loop_div[o];
    s = max8(s, max8(add, w->raise[o]));
    b = oi->block;
  }
  if (src) *src = s ? u->ctl_source[i] : 0;
  return s;
}

static void set_value(struct kl_uniformity *u, uint32_t v, uint8_t s, uint32_t src) {
  /* In a threadgroup of one SIMD group, what its lanes hold alike the threadgroup holds alike. */
  if (s == KL_SCOPE_SIMDGROUP && u->work->one_simd) s = KL_SCOPE_THREADGROUP;
  if (s > u->scope[v]) {
    u->scope[v] = s;
    u->source[v] = src;
    u->work->changed = true;
  }
}

/* Join operand v into (*s, *src). */
static void join(const struct kl_uniformity *u, uint32_t v, uint8_t *s, uint32_t *src) {
  if (v && u->scope[v] > *s) {
    *s = u->scope[v];
    *src = u->source[v];
  }
}

/* Whether LOOP l holds instruction i. */
static bool loop_holds(const struct kl_uniformity *u, uint32_t l, uint32_t i) {
  const uint32_t *of = u->work->loop_of;
  for (uint32_t m = of[u->fn->ins[i].block]; m; m = of[u->fn->ins[m].block])
    if (m == l) return true;
  return false;
}

/* Join operand v of instruction user. Temporal divergence (LLVM's GenericUniformityImpl): a
 * value made in a loop and read after it, even through the header's PHI when the loop has no
 * break, differs between threads that left at different iterations, however uniform it is in
 * each; so every loop it is read out of adds its divergence. */
static void join_use(const struct kl_uniformity *u, uint32_t user, uint32_t v, uint8_t *s,
                     uint32_t *src) {
  join(u, v, s, src);
  const struct kl_uniformity_work *w = u->work;
  if (!v || !w->any_loop_div) return; /* no loop diverges: reading out of one adds nothing */
  for (uint32_t l = w->loop_of[u->fn->ins[v].block]; l; l = w->loop_of[u->fn->ins[l].block]) {
    if (loop_holds(u, l, user)) break;
    if (w->loop_div[l] > *s) {
      *s = w->loop_div[l];
      *src = w->loop_src[l];
    }
  }
}

/* Whether operand v, as user reads it, may differ between SIMD groups lane for lane: it is not
 * lane-wise, or it comes out of a loop whose trip count differs within the threadgroup. */
static bool lane_use(const struct kl_uniformity *u, uint32_t user, uint32_t v) {
  if (!v) return false;
  const struct kl_uniformity_work *w = u->work;
  if (w->facts[v] & KL_U_NOTLANE) return true;
  if (!w->any_loop_div) return false;
  for (uint32_t l = w->loop_of[u->fn->ins[v].block]; l; l = w->loop_of[u->fn->ins[l].block]) {
    if (loop_holds(u, l, user)) break;
    if (w->loop_div[l] > KL_SCOPE_THREADGROUP) return true;
  }
  return false;
}

/* Whether operand v, as user reads it, comes out of a loop whose trip count differs within the
 * threadgroup or SIMD group. */
static bool lane_exit(const struct kl_uniformity *u, uint32_t user, uint32_t v) {
  const struct kl_uniformity_work *w = u->work;
  if (!w->any_loop_div) return false;
  for (uint32_t l = v ? w->loop_of[u->fn->ins[v].block] : 0; l;
       l = w->loop_of[u->fn->ins[l].block]) {
    if (loop_holds(u, l, user)) break;
    if (w->loop_div[l] > KL_SCOPE_UNIFORM) return true;
  }
  return false;
}

/* Mark v KL_U_TEMPORAL when one of its operands is read out of a divergent loop or is itself
 * so marked (the mark only grows). */
static void mark_temporal_ops(struct kl_uniformity *u, uint32_t v) {
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *i = &u->fn->ins[v];
  for (uint32_t k = 0; k < i->nops; k++) {
    uint32_t o = i->ops[k];
    if (o && ((w->facts[o] & KL_U_TEMPORAL) || lane_exit(u, v, o))) {
      w->facts[v] |= KL_U_TEMPORAL;
      w->changed = true;
      return;
    }
  }
}

/* The test that settles most calls, made where mark_temporal is called (every evaluation). */
static inline void mark_temporal(struct kl_uniformity *u, uint32_t v) {
  const struct kl_uniformity_work *w = u->work;
  /* Until some loop diverges no operand is read out of one, and no value is marked yet. */
  if (!w->any_loop_div || (w->facts[v] & KL_U_TEMPORAL)) return;
  mark_temporal_ops(u, v);
}

/* Mark v not lane-wise (the mark only grows, as scopes do). */
static void set_notlane(struct kl_uniformity *u, uint32_t v) {
  if (!(u->work->facts[v] & KL_U_NOTLANE)) {
    u->work->facts[v] |= KL_U_NOTLANE;
    u->work->changed = true;
  }
}

/* The scope of operand v as instruction user reads it (join_use). */
static uint8_t use_sc(const struct kl_uniformity *u, uint32_t user, uint32_t v) {
  uint8_t s = 0;
  uint32_t src = 0;
  join_use(u, user, v, &s, &src);
  return s;
}

static void set_range(struct kl_uniformity_work *w, uint32_t v, int64_t lo, int64_t hi) {
  w->facts[v] |= KL_U_RANGE;
  w->lo[v] = lo;
  w->hi[v] = hi;
}

static bool small_range(const struct kl_uniformity_work *w, uint32_t v) {
  const int64_t lim = (int64_t)1 << 30;
  return v && (w->facts[v] & KL_U_RANGE) && w->lo[v] > -lim && w->hi[v] < lim;
}

/* A coordinate's scope, range and alignment from the catalogue and the threadgroup size. */
static uint8_t coord_scope(struct kl_uniformity *u, uint32_t v) {
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *i = &u->fn->ins[v];
  if (!i->coord) return KL_SCOPE_THREAD;
  const char *name = i->coord->name;
  uint8_t s = (uint8_t)i->coord->scope;
  int c = i->imm >= 0 && i->imm < 3 ? (int)i->imm : 0;
  bool k = w->tg_known;
  int64_t X = w->tg[0], Y = w->tg[1], Z = w->tg[2], n = X * Y * Z;
  bool lid = !strcmp(name, "thread_position_in_threadgroup");
  if (lid || !strcmp(name, "thread_position_in_grid")) {
    /* Each dimension counts on its own: `(32, 1, nw)` knows x and y, which is all lid.z needs. */
    if (w->tg[c] == 1)
      s = lid ? KL_SCOPE_UNIFORM : KL_SCOPE_THREADGROUP;
    else if ((c == 1 && X > 0 && X % KL_SIMD_WIDTH == 0) ||
             (c == 2 && X > 0 && Y > 0 && (X * Y) % KL_SIMD_WIDTH == 0))
      s = KL_SCOPE_SIMDGROUP;
    if (lid && w->tg[c] > 0) set_range(w, v, 0, w->tg[c] - 1);
    if (c == 0 && X > 0 && (X % KL_SIMD_WIDTH == 0 || (lid && k && Y == 1 && Z == 1)))
      w->facts[v] |= KL_U_ALIGNED;
    return s;
  }
  /* Without the size, the kernel's cap on it still bounds the indices. */
  int64_t cap = k ? n : w->max_total;
  if (!strcmp(name, "thread_index_in_threadgroup")) {
    w->facts[v] |= KL_U_ALIGNED;
    if (cap > 0) set_range(w, v, 0, cap - 1);
  } else if (!strcmp(name, "simdgroup_index_in_threadgroup")) {
    if (cap > 0) set_range(w, v, 0, (cap + KL_SIMD_WIDTH - 1) / KL_SIMD_WIDTH - 1);
  } else if (!strcmp(name, "thread_index_in_simdgroup")) {
    set_range(w, v, 0, (k && n < KL_SIMD_WIDTH ? n : KL_SIMD_WIDTH) - 1);
  } else if (!strcmp(name, "quadgroup_index_in_threadgroup")) {
    if (k) set_range(w, v, 0, (n + 3) / 4 - 1);
  } else if (!strcmp(name, "thread_index_in_quadgroup")) {
    set_range(w, v, 0, (k && n < 4 ? n : 4) - 1);
  } else if (k && !strcmp(name, "threads_per_threadgroup")) {
    set_range(w, v, w->tg[c], w->tg[c]);
  }
  return s;
}

/* Arithmetic on known ranges and the SIMD-group alignment of the linear index. */
static void binop_facts(struct kl_uniformity *u, uint32_t v, uint8_t *s) {
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *i = &u->fn->ins[v];
  if (i->nops < 2) return;
  uint32_t a = i->ops[0], b = i->ops[1];
  int64_t kc;
  bool bk = kl_ir_const(u->fn, b, &kc);
  if (bk && (w->facts[a] & KL_U_ALIGNED) &&
      ((i->sub == KL_IR_DIV && kc > 0 && kc % KL_SIMD_WIDTH == 0) ||
       (i->sub == KL_IR_SHR && kc >= 5 && kc < 63)) &&
      *s > KL_SCOPE_SIMDGROUP)
    *s = KL_SCOPE_SIMDGROUP;
  if (!small_range(w, a)) return;
  int64_t alo = w->lo[a], ahi = w->hi[a];
  if (bk && alo >= 0) {
    if (i->sub == KL_IR_DIV && kc > 0) set_range(w, v, alo / kc, ahi / kc);
    if (i->sub == KL_IR_SHR && kc >= 0 && kc < 63) set_range(w, v, alo >> kc, ahi >> kc);
    if (i->sub == KL_IR_REM && kc > 0) set_range(w, v, ahi < kc ? alo : 0, ahi < kc ? ahi : kc - 1);
    if (i->sub == KL_IR_AND && kc >= 0) set_range(w, v, 0, ahi < kc ? ahi : kc);
  }
  if (small_range(w, b)) {
    int64_t blo = w->lo[b], bhi = w->hi[b];
    /* Unsigned arithmetic that may pass below 0 wraps to the top of the type: no range. */
    bool wraps = (i->flags & KL_IR_F_UNSIGNED) &&
                 ((i->sub == KL_IR_ADD && alo + blo < 0) || (i->sub == KL_IR_SUB && alo - bhi < 0));
    if (i->sub == KL_IR_ADD && !wraps) set_range(w, v, alo + blo, ahi + bhi);
    if (i->sub == KL_IR_SUB && !wraps) set_range(w, v, alo - bhi, ahi - blo);
    if (i->sub == KL_IR_MUL && alo >= 0 && blo >= 0) set_range(w, v, alo * blo, ahi * bhi);
    if (i->sub == KL_IR_MIN) set_range(w, v, alo < blo ? alo : blo, ahi < bhi ? ahi : bhi);
    if (i->sub == KL_IR_MAX) set_range(w, v, alo > blo ? alo : blo, ahi > bhi ? ahi : bhi);
    /* A comparison the ranges decide is one value for every thread (lid < 256 in a threadgroup
     * of 256); unsigned ones only over values that are not negative. */
    if ((i->flags & KL_IR_F_UNSIGNED) && (alo < 0 || blo < 0)) return;
    int r = -1;
    switch (i->sub) {
    case KL_IR_LT:
      r = ahi < blo ? 1 : alo >= bhi ? 0 : -1;
      break;
    case KL_IR_LE:
      r = ahi <= blo ? 1 : alo > bhi ? 0 : -1;
      break;
    case KL_IR_GT:
      r = alo > bhi ? 1 : ahi <= blo ? 0 : -1;
      break;
    case KL_IR_GE:
      r = alo >= bhi ? 1 : ahi < blo ? 0 : -1;
      break;
    case KL_IR_EQ:
    case KL_IR_NE:
      r = alo == ahi && blo == bhi && alo == blo ? 1 : ahi < blo || bhi < alo ? 0 : -1;
      if (r >= 0 && i->sub == KL_IR_NE) r = !r;
      break;
    default:
      break;
    }
    if (r >= 0) set_range(w, v, r, r);
  }
}

/* How far a - b is the same, from scev's forms with loop recurrences expanded (the iteration
 * count is the same for the threads running it): its coordinates' scopes, THREADGROUP for a
 * symbolic part (scev's uniform values may be loads of threadgroup memory); THREAD unknown.
 * Wrap-around of unsigned values is not modelled. */
static uint8_t affine_diff_scope(const struct kl_scev *sc, uint32_t a, uint32_t b) {
  struct kl_affine fa = kl_scev_expand(sc, kl_scev_form(sc, a));
  struct kl_affine fb = kl_scev_expand(sc, kl_scev_form(sc, b));
  if (!fa.known || !fb.known) return KL_SCOPE_THREAD;
  struct kl_affine d = kl_affine_add(fa, fb, -1);
  if (!d.known || d.partial) return KL_SCOPE_THREAD;
  uint8_t s = d.c0_symbolic ? KL_SCOPE_THREADGROUP : KL_SCOPE_UNIFORM;
  for (uint8_t k = 0; k < d.n; k++) {
    const struct kl_scev_atom *at = kl_scev_atom(sc, d.t[k].atom);
    if (!at || at->kind != KL_SCEV_COORD) return KL_SCOPE_THREAD;
    s = max8(s, max8((uint8_t)at->scope, d.t[k].symbolic ? KL_SCOPE_THREADGROUP : 0));
  }
  return s;
}

static struct kl_tp tp_invalid(void) {
  return (struct kl_tp){.state = KL_TP_INVALID};
}

/* a + sign * scale * b, or invalid when a term overflows or there are too many. */
static struct kl_tp tp_add(struct kl_tp a, struct kl_tp b, int64_t scale) {
  if (a.state != KL_TP_VALID || b.state != KL_TP_VALID) return tp_invalid();
  a.rest = max8(a.rest, b.rest);
  for (uint8_t j = 0; j < b.n; j++) {
    int64_t add = (int64_t)b.k[j] * scale;
    uint8_t i = 0;
    while (i < a.n && a.key[i] != b.key[j]) i++;
    if (i == a.n) {
      if (a.n == KL_TP_TERMS) return tp_invalid();
      a.key[a.n] = b.key[j];
      a.k[a.n++] = 0;
    }
    int64_t k = a.k[i] + add;
    if (k > INT32_MAX || k < INT32_MIN) return tp_invalid();
    a.k[i] = (int32_t)k;
    if (!k) {
      a.key[i] = a.key[a.n - 1];
      a.k[i] = a.k[--a.n];
    }
  }
  return a;
}

static bool tp_same_terms(const struct kl_tp *a, const struct kl_tp *b) {
  if (a->n != b->n) return false;
  struct kl_tp d = tp_add(*a, *b, -1);
  return d.state == KL_TP_VALID && d.n == 0;
}

/* Whether v is read out of a loop that threads leave at different iterations (marked so, or
 * an operand comes out of one): then it is no function of the coordinates alone. */
static bool tp_exited(const struct kl_uniformity *u, uint32_t v) {
  const struct kl_ir_ins *i = &u->fn->ins[v];
  if (u->work->facts[v] & KL_U_TEMPORAL) return true;
  for (uint32_t k = 0; k < i->nops; k++)
    if (lane_exit(u, v, i->ops[k])) return true;
  return false;
}

static void tp_eval(struct kl_uniformity *u, uint32_t v) {
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *i = &u->fn->ins[v];
  struct kl_tp r = {.state = KL_TP_VALID};
  const struct kl_tp *old = &w->tp[v];
  uint32_t a = i->nops ? i->ops[0] : 0, b = i->nops > 1 ? i->ops[1] : 0;
  int64_t c;
  if (u->scope[v] <= KL_SCOPE_THREADGROUP) {
    r.rest = u->scope[v];
  } else if (old->state == KL_TP_INVALID || tp_exited(u, v)) {
    r = tp_invalid();
  } else if (i->op == KL_IR_COORD && i->coord) {
    size_t n;
    const struct kl_msl_coord *base = kl_msl_coords(&n);
    size_t idx = (size_t)(i->coord - base);
    if (idx >= n || i->imm < 0 || i->imm > 2) {
      r = tp_invalid();
    } else {
      r.n = 1;
      r.key[0] = (uint16_t)(idx * 3 + (size_t)i->imm);
      r.k[0] = 1;
    }
  } else if (i->op == KL_IR_CAST && a) {
    r = w->tp[a];
  } else if (i->op == KL_IR_UNOP && i->sub == KL_IR_NEG && a) {
    r = tp_add(r, w->tp[a], -1);
  } else if (i->op == KL_IR_BINOP && a && b) {
    if (i->sub == KL_IR_ADD || i->sub == KL_IR_SUB)
      r = tp_add(w->tp[a], w->tp[b], i->sub == KL_IR_ADD ? 1 : -1);
    else if (i->sub == KL_IR_MUL && kl_ir_const(u->fn, a, &c) && c > -65536 && c < 65536)
      r = tp_add(r, w->tp[b], c);
    else if (i->sub == KL_IR_MUL && kl_ir_const(u->fn, b, &c) && c > -65536 && c < 65536)
      r = tp_add(r, w->tp[a], c);
    else if (i->sub == KL_IR_SHL && kl_ir_const(u->fn, b, &c) && c >= 0 && c < 16)
      r = tp_add(r, w->tp[a], (int64_t)1 << c);
    else
      r = tp_invalid();
  } else if (i->op == KL_IR_PHI && i->sub == KL_IR_PHI_HEAD && a) {
    /* A recurrence stepping by a uniform amount keeps its start's per-thread part; the back
     * edge is not known on the first pass, so it is taken to agree until it does not. */
    r = w->tp[a];
    const struct kl_tp *back = b ? &w->tp[b] : NULL;
    if (r.state == KL_TP_VALID && back && back->state != KL_TP_UNSET) {
      if (back->state != KL_TP_VALID || !tp_same_terms(&r, back))
        r = tp_invalid();
      else
        r.rest = max8(r.rest, back->rest);
    }
  } else {
    r = tp_invalid();
  }
  if (r.state == KL_TP_UNSET) r = tp_invalid();
  if (old->state == KL_TP_VALID && r.state == KL_TP_VALID) r.rest = max8(r.rest, old->rest);
  bool same = old->state == r.state && old->n == r.n && old->rest == r.rest;
  for (uint8_t k = 0; same && k < r.n; k++) same = old->key[k] == r.key[k] && old->k[k] == r.k[k];
  if (!same) {
    w->tp[v] = r;
    w->changed = true;
  }
}

static bool idempotent_reduction(const char *name) {
  static const char *const names[] = {"simd_min", "simd_max", "simd_and",
                                      "simd_or",  "simd_all", "simd_any"};
  for (size_t k = 0; k < sizeof names / sizeof *names; k++)
    if (!strcmp(name, names[k])) return true;
  return false;
}

/* v through casts. */
static uint32_t uncast(const struct kl_ir_fn *f, uint32_t v) {
  for (int depth = 0; v && depth < 8 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; depth++)
    v = f->ins[v].ops[0];
  return v;
}

/* Whether v is (a cast of) the thread coordinate called name. */
static bool is_coord(const struct kl_ir_fn *f, uint32_t v, const char *name) {
  v = uncast(f, v);
  return v && f->ins[v].op == KL_IR_COORD && f->ins[v].coord &&
         !strcmp(f->ins[v].coord->name, name);
}

/* Whether value v depends (through its operands, a few levels deep) on a coordinate that is a
 * count of threads (threads_per_threadgroup, threads_per_simdgroup...); true when it cannot
 * tell. */
static bool counts_threads(const struct kl_ir_fn *f, uint32_t v, int depth, int *budget) {
  if (!v) return false;
  if (depth > 16 || --*budget < 0) return true;
  const struct kl_ir_ins *i = &f->ins[v];
  if (i->op == KL_IR_COORD)
    return !i->coord || strstr(i->coord->name, "per_threadgroup") ||
           strstr(i->coord->name, "per_simdgroup");
  if (i->op == KL_IR_PHI || i->op == KL_IR_CALL || i->op == KL_IR_OPAQUE) return true;
  for (uint32_t k = 0; k < i->nops; k++)
    if (counts_threads(f, i->ops[k], depth + 1, budget)) return true;
  return false;
}

/* Whether IF i restates a threadgroup size the host gives at run time (see uniformity.h): its
 * then block is a lone RETURN, it has no else block, and its condition is `lid.x >= lim` (or
 * `>`, or the same mirrored) with lim uniform over the grid, not constant, and no count of
 * threads. */
static bool restated_size(const struct kl_uniformity *u, uint32_t i) {
  const struct kl_ir_fn *f = u->fn;
  const struct kl_ir_ins *ii = &f->ins[i];
  if (!u->work->runtime_x || !ii->nops || ii->blk[1] || !ii->blk[0]) return false;
  const struct kl_ir_block *t = &f->blocks[ii->blk[0]];
  if (t->n != 1 || f->ins[t->ins[0]].op != KL_IR_RETURN) return false;
  const struct kl_ir_ins *c = &f->ins[ii->ops[0]];
  if (!ii->ops[0] || c->op != KL_IR_BINOP || c->nops != 2) return false;
  uint32_t idx, lim;
  if (c->sub == KL_IR_GE || c->sub == KL_IR_GT)
    idx = c->ops[0], lim = c->ops[1];
  else if (c->sub == KL_IR_LE || c->sub == KL_IR_LT)
    idx = c->ops[1], lim = c->ops[0];
  else
    return false;
  uint32_t x = uncast(f, idx);
  bool lane_x = is_coord(f, x, "thread_index_in_threadgroup") ||
                (is_coord(f, x, "thread_position_in_threadgroup") && f->ins[x].imm == 0);
  int64_t k;
  int budget = 64;
  return lane_x && lim && u->scope[lim] == KL_SCOPE_UNIFORM &&
         !kl_ir_const(f, uncast(f, lim), &k) && !counts_threads(f, lim, 0, &budget);
}

/* The scope of IF i's condition as its branches run under it. */
static uint8_t if_sc(const struct kl_uniformity *u, uint32_t i) {
  const struct kl_ir_ins *ii = &u->fn->ins[i];
  if (restated_size(u, i)) return KL_SCOPE_UNIFORM;
  return use_sc(u, i, ii->nops ? ii->ops[0] : 0);
}

/* The threadgroup array (an ALLOC, or a threadgroup pointer ARG) that LOAD or STORE m reaches
 * at its element `coord` (an INDEX of it directly), or 0. */
static uint32_t slot_of(const struct kl_ir_fn *f, uint32_t m, const char *coord) {
  uint32_t a = f->ins[m].nops ? f->ins[m].ops[0] : 0;
  if (f->ins[m].as != KL_AS_THREADGROUP || !a || f->ins[a].op != KL_IR_INDEX || f->ins[a].nops != 2)
    return 0;
  uint32_t t = f->ins[a].ops[0];
  if (!t || (f->ins[t].op != KL_IR_ARG &&
             (f->ins[t].op != KL_IR_ALLOC || f->ins[t].as != KL_AS_THREADGROUP)))
    return 0;
  return is_coord(f, f->ins[a].ops[1], coord) ? t : 0;
}

/* Whether condition c holds in lane sgid of every SIMD group: `lane < n` with n the count of
 * SIMD groups, or a number no smaller than any the threadgroup can have. */
static bool covers_own_lane(const struct kl_uniformity *u, uint32_t c) {
  const struct kl_ir_fn *f = u->fn;
  const struct kl_uniformity_work *w = u->work;
  if (!c || f->ins[c].op != KL_IR_BINOP || f->ins[c].nops != 2) return false;
  uint32_t lane = f->ins[c].ops[0], n = f->ins[c].ops[1];
  if (f->ins[c].sub == KL_IR_GT)
    lane = f->ins[c].ops[1], n = f->ins[c].ops[0];
  else if (f->ins[c].sub != KL_IR_LT)
    return false;
  if (!is_coord(f, lane, "thread_index_in_simdgroup")) return false;
  if (is_coord(f, n, "simdgroups_per_threadgroup")) return true;
  int64_t k, cap = w->tg_known ? w->tg[0] * w->tg[1] * w->tg[2] : w->max_total;
  return kl_ir_const(f, uncast(f, n), &k) && cap > 0 &&
         k >= (cap + KL_SIMD_WIDTH - 1) / KL_SIMD_WIDTH;
}

/* Whether some lane of every whole SIMD group runs instruction v of block b: v is in b, or in
 * the then block of an IF in b on `lane == k` (k < 32) or simd_is_first(). Sets *anc to the
 * instruction of b that holds v. */
static bool some_lane_runs(const struct kl_ir_fn *f, uint32_t v, uint32_t b, uint32_t *anc) {
  *anc = v;
  if (f->ins[v].block == b) return true;
  uint32_t p = f->blocks[f->ins[v].block].parent;
  if (!p || f->ins[p].op != KL_IR_IF || f->ins[p].block != b || f->ins[p].blk[0] != f->ins[v].block)
    return false;
  *anc = p;
  uint32_t c = f->ins[p].nops ? f->ins[p].ops[0] : 0;
  if (!c) return false;
  const struct kl_ir_ins *ci = &f->ins[c];
  if (ci->op == KL_IR_SIMD && ci->fn && !strcmp(ci->fn->name, "simd_is_first")) return true;
  int64_t k;
  if (ci->op != KL_IR_BINOP || ci->sub != KL_IR_EQ || ci->nops != 2) return false;
  for (int side = 0; side < 2; side++)
    if (is_coord(f, ci->ops[side], "thread_index_in_simdgroup") &&
        kl_ir_const(f, uncast(f, ci->ops[1 - side]), &k) && k >= 0 && k < KL_SIMD_WIDTH)
      return true;
  return false;
}

/* Whether an instruction of block b (nested blocks too), other than keep, may write ALLOC t:
 * a store or atomic into it or through an address the pass cannot trace, or a call or opaque
 * expression handed its address. */
static bool writes_alloc(const struct kl_ir_fn *f, uint32_t b, uint32_t from, uint32_t to,
                         uint32_t t, uint32_t keep, int depth) {
  if (!b || b >= f->nblocks || depth > 64) return true;
  const struct kl_ir_block *blk = &f->blocks[b];
  for (uint32_t k = from; k < blk->n && k <= to; k++) {
    uint32_t i = blk->ins[k];
    const struct kl_ir_ins *ii = &f->ins[i];
    if (ii->op == KL_IR_IF || ii->op == KL_IR_LOOP) {
      for (int x = 0; x < 3; x++)
        if (ii->blk[x] && writes_alloc(f, ii->blk[x], 0, UINT32_MAX, t, keep, depth + 1))
          return true;
      continue;
    }
    if (i == keep) continue;
    if (ii->op == KL_IR_STORE || ii->op == KL_IR_ATOMIC) {
      uint32_t r = addr_root(f, ii->nops ? ii->ops[0] : 0);
      if (!r || r == t) return true;
    } else if (ii->op == KL_IR_CALL || ii->op == KL_IR_OPAQUE || ii->op == KL_IR_SIMD) {
      for (uint32_t o = 0; o < ii->nops; o++)
        if (addr_root(f, ii->ops[o]) == t) return true;
    }
  }
  return false;
}

/* The second step of a two-level SIMD reduction that pads with the SIMD group's own partial:
 * x, the operand of reduction v, is `lane < n ? T[lane] : own` (a PHI after an IF or a
 * SELECT, in v's block), where this SIMD group stored own into T[sgid] before a threadgroup
 * barrier and nothing else writes T until the load. Lane sgid (< n) loads own back, so the
 * lanes past n only repeat a value the others hold: an idempotent reduction (min, max, and, or)
 * of x is that of T[0..n) in every SIMD group, whereas a sum counts own once more per padded
 * lane. Returns the lane-wise parts to judge (the load and the condition), or false. */
static bool own_slot_fill(const struct kl_uniformity *u, uint32_t v, uint32_t x, uint32_t *load,
                          uint32_t *cond) {
  const struct kl_ir_fn *f = u->fn;
  if (!x || f->ins[x].block != f->ins[v].block || f->ins[x].nops < 2) return false;
  const struct kl_ir_ins *xi = &f->ins[x];
  uint32_t a, own, c, at; /* at: the instruction of v's block that makes the choice */
  if (xi->op == KL_IR_SELECT && xi->nops == 3) {
    c = xi->ops[0], a = xi->ops[1], own = xi->ops[2], at = x;
  } else if (xi->op == KL_IR_PHI && xi->sub == KL_IR_PHI_IF && xi->nops == 2) {
    at = xi->ref_ins;
    if (!at || f->ins[at].op != KL_IR_IF || !f->ins[at].nops) return false;
    c = f->ins[at].ops[0], a = xi->ops[0], own = xi->ops[1];
    if (!a || f->ins[a].block != f->ins[at].blk[0]) return false;
  } else {
    return false;
  }
  uint32_t b = f->ins[at].block;
  if (!a || f->ins[a].op != KL_IR_LOAD || !covers_own_lane(u, c)) return false;
  uint32_t t = slot_of(f, a, "thread_index_in_simdgroup");
  if (!t || !own || use_sc(u, x, own) > KL_SCOPE_SIMDGROUP) return false;
  /* This SIMD group's store of own into T[sgid], a barrier, then the choice, all in b. */
  uint32_t st = 0, anc = 0;
  for (uint32_t i = 1; i < f->nins && !st; i++) {
    const struct kl_ir_ins *ii = &f->ins[i];
    if (ii->op == KL_IR_STORE && ii->nops == 2 && ii->ops[1] == own && !ii->sub &&
        slot_of(f, i, "simdgroup_index_in_threadgroup") == t &&
        f->ins[ii->ops[0]].imm == f->ins[f->ins[a].ops[0]].imm && some_lane_runs(f, i, b, &anc))
      st = i;
  }
  /* A narrower slot (`half` for a float own, `uchar` for a uint) keeps a converted own, which
   * the lowering records as no CAST: lane sgid then reads back another value than the padded
   * lanes keep. Only a slot of own's very type (as the IR records both) reads own back. */
  const char *ot = f->ins[own].type, *lt = f->ins[a].type, *stt = f->ins[st].type;
  if (!ot || !lt || !stt || strcmp(ot, lt) || strcmp(ot, stt)) return false;
  const struct kl_ir_block *blk = &f->blocks[b];
  uint32_t p0 = 0, p1 = UINT32_MAX, p3 = UINT32_MAX, bar = UINT32_MAX;
  for (uint32_t k = 0; k < blk->n; k++) {
    uint32_t i = blk->ins[k];
    if (i == anc) p1 = k;
    if (i == at) p3 = k;
    const struct kl_ir_ins *ii = &f->ins[i];
    if (ii->op == KL_IR_BARRIER && ii->fn && ii->fn->barrier_scope == KL_SCOPE_THREADGROUP &&
        (ii->imm & KL_IR_MEM_THREADGROUP)) {
      if (p1 == UINT32_MAX)
        p0 = k + 1; /* what is written before it is ordered before the store */
      else if (p3 == UINT32_MAX && bar == UINT32_MAX)
        bar = k;
    }
  }
  if (p1 == UINT32_MAX || p3 == UINT32_MAX || bar == UINT32_MAX || !(p1 < bar && bar < p3))
    return false;
  /* Another write of T from the last barrier before the store to the load (another SIMD group
   * filling T[0] unordered with SIMD group 0's own slot) may leave a slot that is not own. */
  if (writes_alloc(f, b, p0, p3, t, st, 0)) return false;
  *load = a;
  *cond = c;
  return true;
}

/* PHI_EXIT's loop: whether all incoming values are one value defined outside it. */
static bool one_outside(const struct kl_ir_fn *f, const struct kl_ir_ins *phi, bool check_loop) {
  uint32_t one = 0;
  for (uint32_t k = 0; k < phi->nops; k++) {
    uint32_t o = phi->ops[k];
    if (!o) continue;
    if (one && o != one) return false;
    one = o;
  }
  if (!one || !check_loop) return true;
  const struct kl_ir_ins *l = &f->ins[phi->ref_ins];
  for (int b = 0; b < 3; b++)
    if (l->blk[b] && kl_ir_within(f, one, l->blk[b])) return false;
  return true;
}

static void eval_phi(struct kl_uniformity *u, uint32_t v) {
  const struct kl_ir_fn *f = u->fn;
  const struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *i = &f->ins[v];
  uint8_t s = 0;
  uint32_t src = 0;
  for (uint32_t k = 0; k < i->nops; k++) join_use(u, v, i->ops[k], &s, &src);
  uint32_t r = i->ref_ins;
  if (!r || r >= f->nins) {
    set_notlane(u, v);
    set_value(u, v, s, src);
    return;
  }
  const struct kl_ir_ins *ri = &f->ins[r];
  bool notlane = false;
  for (uint32_t k = 0; k < i->nops; k++) notlane |= lane_use(u, v, i->ops[k]);
  if (i->sub == KL_IR_PHI_IF && ri->op == KL_IR_IF && ri->nops && !one_outside(f, i, false))
    notlane |= lane_use(u, v, ri->ops[0]);
  if (i->sub == KL_IR_PHI_EXIT || i->sub == KL_IR_PHI_LATCH) notlane = true;
  if (notlane) set_notlane(u, v);
  switch (i->sub) {
  case KL_IR_PHI_IF:
    /* Which branch a thread came through matters only when they bring different values. */
    if (ri->op == KL_IR_IF && ri->nops && !one_outside(f, i, false)) join(u, ri->ops[0], &s, &src);
    break;
  case KL_IR_PHI_LATCH:
    if (ri->op == KL_IR_LOOP && !one_outside(f, i, false) && w->cont_rel[r] > s) {
      s = w->cont_rel[r];
      src = w->cont_src[r];
    }
    break;
  case KL_IR_PHI_EXIT:
    /* Temporal divergence: threads leave at different iterations or through different exits. */
    if (ri->op == KL_IR_LOOP && !one_outside(f, i, true)) {
      uint32_t cond = ri->nops ? ri->ops[0] : 0;
      join(u, cond, &s, &src);
      if (w->brk_rel[r] > s) {
        s = w->brk_rel[r];
        src = w->brk_src[r];
      }
    }
    break;
  default:
    break;
  }
  set_value(u, v, s, src);
}

/* Mark the ALLOCs whose address escapes: it, or an address computed from it, is used other than
 * as the address a LOAD or STORE goes through or the base of an INDEX, MEMBER or CAST (handed
 * to a call, stored, joined in a PHI or SELECT, returned). Only those can be what a store
 * through an address the pass cannot trace writes. */
static void mark_escapes(const struct kl_ir_fn *f, uint8_t *escaped) {
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *i = &f->ins[v];
    for (uint32_t k = 0; k < i->nops; k++) {
      uint32_t r = addr_root(f, i->ops[k]);
      if (!r || f->ins[r].op != KL_IR_ALLOC) continue;
      bool addr = k == 0 && (i->op == KL_IR_LOAD || i->op == KL_IR_STORE || i->op == KL_IR_INDEX ||
                             i->op == KL_IR_MEMBER || i->op == KL_IR_CAST);
      if (!addr) escaped[r] = 1;
    }
  }
}

/* A field's name as number_fields compares it: a vector lane by its xyzw name. */
static const char *kl_uniformity_lane_name(const char *nm) {
  static const char *const lanes[4] = {"x", "y", "z", "w"};
  if (nm[0] && !nm[1] && strchr("xyzwrgba", nm[0]))
    return lanes[(strchr("xyzwrgba", nm[0]) - "xyzwrgba") % 4];
  return nm;
}

/* Number the fields of the structs in thread memory (kl_uniformity_work.field): `p.a` and `p.a`
 * elsewhere are one field, `p.b` another, `p` itself none. */
static void number_fields(struct kl_uniformity *u) {
  const struct kl_ir_fn *f = u->fn;
  struct kl_uniformity_work *w = u->work;
  uint32_t *first = kl_arena_alloc(f->arena, f->nins * sizeof *first);
  uint32_t *next = kl_arena_alloc(f->arena, f->nins * sizeof *next);
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *i = &f->ins[v];
    if (i->nops < 1 || !i->ops[0]) continue;
    uint32_t base = i->ops[0];
    if ((i->op == KL_IR_INDEX || i->op == KL_IR_MEMBER || i->op == KL_IR_CAST) && w->field[base]) {
      w->field[v] = w->field[base]; /* inside a field: `p.a[k]`, `p.a.x` */
      continue;
    }
    const struct kl_ir_ins *r = &f->ins[base];
    if (i->op != KL_IR_MEMBER || !i->name || r->op != KL_IR_ALLOC ||
        (r->as != KL_AS_NONE && r->as != KL_AS_THREAD))
      continue;
    /* A vector's swizzle names its lanes two ways (`.r` is `.x`), and one of several lanes
     * (`.xy`, `.yx`) overlaps the single ones: each lane goes by its xyzw name, and a swizzle of
     * more than one is the whole. A struct member of such a name merges, or is taken whole: more
     * divergence, never less. */
    char lane[2] = {0, 0};
    const char *nm = i->name;
    if (strspn(nm, "xyzwrgba") == strlen(nm)) {
      if (strlen(nm) != 1) continue;
      lane[0] = "xyzwxyzw"[strchr("xyzwrgba", nm[0]) - "xyzwrgba"];
      nm = lane;
    }
    uint32_t m = first[base];
    while (m && strcmp(kl_uniformity_lane_name(f->ins[m].name), nm)) m = next[m];
    if (!m) {
      next[v] = first[base];
      first[base] = m = v;
    }
    w->field[v] = m;
  }
}

/* What a load at address addr, in thread memory of ALLOC root, reads: what was stored in the
 * whole, and in its field when addr is in one, else in any of its fields. */
static uint8_t mem_read(const struct kl_uniformity *u, uint32_t root, uint32_t addr,
                        uint32_t *src) {
  const struct kl_uniformity_work *w = u->work;
  uint32_t fld = addr ? w->field[addr] : 0;
  uint8_t s = w->mem[root];
  *src = w->mem_src[root];
  uint8_t part = fld ? w->mem[fld] : w->fmem[root];
  if (part > s) {
    s = part;
    *src = fld ? w->mem_src[fld] : w->fmem_src[root];
  }
  if (w->any_mem > s && w->escaped[root]) {
    s = w->any_mem;
    *src = w->any_mem_src;
  }
  return s;
}

/* A store of scope s at address addr into thread memory of ALLOC root: into its field when addr
 * is in one, else into the whole. */
static void mem_write(struct kl_uniformity *u, uint32_t root, uint32_t addr, uint8_t s,
                      uint32_t src) {
  struct kl_uniformity_work *w = u->work;
  uint32_t fld = addr ? w->field[addr] : 0, at = fld ? fld : root;
  if (s > w->mem[at]) {
    w->mem[at] = s;
    w->mem_src[at] = src;
    w->changed = true;
  }
  if (fld && s > w->fmem[root]) {
    w->fmem[root] = s;
    w->fmem_src[root] = src;
  }
}

static void eval_mem(struct kl_uniformity *u, uint32_t v) {
  const struct kl_ir_fn *f = u->fn;
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *i = &f->ins[v];
  uint32_t addr = i->nops ? i->ops[0] : 0, root = addr_root(f, addr);
  uint8_t as = i->as;
  if (!as && root && f->ins[root].op == KL_IR_ALLOC) as = f->ins[root].as;
  bool local = as == KL_AS_NONE || as == KL_AS_THREAD;
  uint8_t s = 0;
  uint32_t src = 0;
  join_use(u, v, addr, &s, &src);
  if (i->op == KL_IR_STORE) {
    if (!local || (root && f->ins[root].op == KL_IR_ARG)) return;
    join_use(u, v, i->nops > 1 ? i->ops[1] : 0, &s, &src);
    bool alloc = root && f->ins[root].op == KL_IR_ALLOC;
    uint32_t csrc;
    uint8_t c = rel_ctl(u, v, alloc ? f->ins[root].block : KL_IR_NONE, &csrc);
    if (c > s) {
      s = c;
      src = csrc;
    }
    if (alloc) {
      mem_write(u, root, addr, s, src);
    } else if (s > w->any_mem) {
      w->any_mem = s;
      w->any_mem_src = src;
      w->changed = true;
    }
    return;
  }
  /* LOAD: shared memory at a lane-wise address holds one value per lane-wise address. */
  if (lane_use(u, v, addr) || local) set_notlane(u, v);
  if (as == KL_AS_THREADGROUP || as == KL_AS_THREADGROUP_IMAGEBLOCK) {
    if (s < KL_SCOPE_THREADGROUP) {
      s = KL_SCOPE_THREADGROUP;
      src = v;
    }
  } else if (local && root && f->ins[root].op == KL_IR_ALLOC) {
    uint32_t msrc;
    uint8_t m = mem_read(u, root, addr, &msrc);
    if (m > s) {
      s = m;
      src = msrc;
    }
  } else if (local && !root) {
    s = KL_SCOPE_THREAD; /* memory the pass cannot follow */
    src = v;
  }
  set_value(u, v, s, src);
}

/* The scope of what a call of a function the unit does not define returns, given its operands'
 * joined in *s: also what it may read through the addresses it is handed -- thread memory holds
 * what was stored there, threadgroup memory what any thread of the group stored (device memory
 * at an address as wide as the address); and it may write that into the thread memory it is
 * handed (a method's object, `&x`). */
static void call_summary(struct kl_uniformity *u, uint32_t v, uint8_t *s, uint32_t *src) {
  const struct kl_ir_fn *f = u->fn;
  const struct kl_ir_ins *i = &f->ins[v];
  for (uint32_t k = 0; k < i->nops; k++) {
    uint32_t a = i->ops[k], r = addr_root(f, a);
    if (!r) continue;
    /* An atomic's result differs between the threads that make it. */
    const struct kl_var *var = f->ins[r].var;
    if (var && var->type && strstr(var->type, "atomic")) *s = KL_SCOPE_THREAD, *src = v;
    uint8_t as = f->ins[a].as ? f->ins[a].as : f->ins[r].as;
    if (f->ins[r].op == KL_IR_ARG && f->ins[r].var && f->ins[r].var->as)
      as = (uint8_t)f->ins[r].var->as;
    if (as == KL_AS_THREADGROUP || as == KL_AS_THREADGROUP_IMAGEBLOCK) {
      if (*s < KL_SCOPE_THREADGROUP) *s = KL_SCOPE_THREADGROUP, *src = v;
    } else if (f->ins[r].op == KL_IR_ALLOC && (as == KL_AS_NONE || as == KL_AS_THREAD)) {
      uint32_t msrc;
      uint8_t m = mem_read(u, r, a, &msrc);
      if (m > *s) *s = m, *src = msrc;
    }
  }
  for (uint32_t k = 0; k < i->nops; k++) {
    uint32_t r = addr_root(f, i->ops[k]);
    if (!r || f->ins[r].op != KL_IR_ALLOC ||
        (f->ins[r].as != KL_AS_NONE && f->ins[r].as != KL_AS_THREAD))
      continue;
    /* A write under control wider than the value's (as a STORE). */
    uint32_t csrc;
    uint8_t c = rel_ctl(u, v, f->ins[r].block, &csrc), m = *s;
    uint32_t msrc = *src ? *src : v;
    if (c > m) m = c, msrc = csrc;
    mem_write(u, r, i->ops[k], m, msrc);
  }
}

static void eval(struct kl_uniformity *u, uint32_t v) {
  const struct kl_ir_fn *f = u->fn;
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *i = &f->ins[v];
  mark_temporal(u, v);
  uint8_t s = 0;
  uint32_t src = 0;
  switch (i->op) {
  case KL_IR_CONST:
    set_range(w, v, i->imm, i->imm);
    return;
  case KL_IR_COORD:
    s = coord_scope(u, v);
    src = v;
    if (s > KL_SCOPE_THREADGROUP &&
        !(i->coord && !strcmp(i->coord->name, "thread_index_in_simdgroup")))
      set_notlane(u, v);
    break;
  case KL_IR_ATOMIC:
    s = KL_SCOPE_THREAD;
    src = v;
    set_notlane(u, v);
    break;
  case KL_IR_PHI:
    eval_phi(u, v);
    return;
  case KL_IR_LOAD:
  case KL_IR_STORE:
    eval_mem(u, v);
    return;
  case KL_IR_SIMD: {
    for (uint32_t k = 0; k < i->nops; k++) join_use(u, v, i->ops[k], &s, &src);
    uint8_t r = i->fn ? (uint8_t)i->fn->result_scope : KL_SCOPE_THREAD;
    if (i->fn && i->fn->kind == KL_FN_SIMD_SHUFFLE) {
      /* Moving a value between lanes spreads no wider than the value. */
      s = 0;
      src = 0;
      join_use(u, v, i->nops ? i->ops[0] : 0, &s, &src);
    } else if (!(i->fn && r < KL_SCOPE_THREAD && idempotent_reduction(i->fn->name))) {
      s = r;
      src = v;
    }
    if (s > r) {
      s = r;
      src = v;
    }
    bool notlane = false;
    uint32_t load, cond;
    if (i->nops == 1 && i->fn && r == KL_SCOPE_SIMDGROUP && idempotent_reduction(i->fn->name) &&
        own_slot_fill(u, v, i->ops[0], &load, &cond))
      notlane = lane_use(u, v, load) || lane_use(u, v, cond);
    else
      for (uint32_t k = 0; k < i->nops; k++) notlane |= lane_use(u, v, i->ops[k]);
    /* A reduction over the SIMD group of a value every SIMD group holds alike lane for lane
     * (each reads the same slots of threadgroup memory by its lane index) is the same in every
     * SIMD group of the threadgroup -- when every SIMD group is full: a threadgroup of a known
     * size that is no multiple of 32 has a shorter last one (an unknown size is taken as whole
     * SIMD groups, as kernels that reduce this way are launched). */
    bool full =
        !w->ragged && (!w->tg_known || (w->tg[0] * w->tg[1] * w->tg[2]) % KL_SIMD_WIDTH == 0);
    if (!notlane && full && s == KL_SCOPE_SIMDGROUP && r == KL_SCOPE_SIMDGROUP &&
        !(i->fn && i->fn->kind == KL_FN_SIMD_SHUFFLE))
      s = KL_SCOPE_THREADGROUP;
    if (notlane) set_notlane(u, v);
    break;
  }
  case KL_IR_UNOP:
  case KL_IR_BINOP:
  case KL_IR_SELECT:
  case KL_IR_CAST:
  case KL_IR_CALL:
  case KL_IR_OPAQUE:
  case KL_IR_INDEX:
  case KL_IR_MEMBER:
    for (uint32_t k = 0; k < i->nops; k++) {
      join_use(u, v, i->ops[k], &s, &src);
      if (lane_use(u, v, i->ops[k])) set_notlane(u, v);
    }
    if (i->op == KL_IR_OPAQUE && s > KL_SCOPE_THREADGROUP) set_notlane(u, v);
    /* A function defined in another file (a same-file helper left out at the cap leaves the
     * lowering truncated: its barriers are not answered for, nor its races where the helper may
     * reach a barrier). In MSL only a kernel's parameters carry thread positions: a
     * helper sees what it is handed, so what it returns is no wider than its arguments and what
     * it reads through them (a built-in type's constructor, `uint2(x, 0)`, gathers its
     * operands alike). */
    if (i->op == KL_IR_CALL && !i->fn && !(i->type && kl_msl_type(i->type))) {
      call_summary(u, v, &s, &src);
      /* Its definition, where a header the unit includes holds it: a per-lane SIMD built-in or
       * an atomic in its body makes its result per thread with no thread-varying argument. */
      if (w->ext_thread[v] && s < KL_SCOPE_THREAD) s = KL_SCOPE_THREAD, src = v;
      set_notlane(u, v);
    }
    if (i->op == KL_IR_BINOP) {
      binop_facts(u, v, &s);
      bool cmp = i->sub == KL_IR_SUB || (i->sub >= KL_IR_LT && i->sub <= KL_IR_NE);
      mark_temporal(u, v);
      if (w->facts[v] & KL_U_TEMPORAL) cmp = false;
      /* scev's forms are trusted only as far as its scopes agree with ours: an operand this
       * pass finds wider (a call the unit does not define, read through what it is handed) is
       * one scev took for a uniform symbol. */
      bool trusted = w->scev && i->nops == 2;
      for (uint32_t k = 0; trusted && k < 2; k++)
        trusted = u->scope[i->ops[k]] <= kl_scev_scope(w->scev, i->ops[k]);
      if (trusted && cmp && s > KL_SCOPE_THREADGROUP) {
        uint8_t d = affine_diff_scope(w->scev, i->ops[0], i->ops[1]);
        if (d < s) s = d;
      }
      if (cmp && i->nops == 2) {
        struct kl_tp d = tp_add(w->tp[i->ops[0]], w->tp[i->ops[1]], -1);
        if (d.state == KL_TP_VALID && !d.n && d.rest < s) s = d.rest;
      }
    }
    if (i->op == KL_IR_CAST && i->nops && i->ops[0]) {
      uint32_t a = i->ops[0];
      w->facts[v] |= w->facts[a] & KL_U_ALIGNED;
      if (w->facts[a] & KL_U_RANGE) set_range(w, v, w->lo[a], w->hi[a]);
    }
    break;
  default:
    return; /* leaves that are uniform, and instructions that are not values */
  }
  if ((w->facts[v] & KL_U_RANGE) && w->lo[v] == w->hi[v]) s = KL_SCOPE_UNIFORM;
  set_value(u, v, s, s ? src : 0);
}

static void exits_add(struct kl_exits *x, uint8_t kind, uint32_t site, uint8_t local,
                      struct kl_ctlv full) {
  /* Past the room, a return is kept until the kernel's end: later than it holds, never less. */
  if (x->n >= KL_EXITS_MAX - 3 && kind == KL_EXIT_RETURN) site = 0;
  for (uint32_t k = 0; k < x->n; k++) {
    struct kl_exit *e = &x->e[k];
    if (e->kind == kind && e->site == site) {
      e->local = max8(e->local, local);
      e->full = ctl_max(e->full, full);
      return;
    }
  }
  x->e[x->n++] = (struct kl_exit){kind, local, site, full};
}

static void set_ctl(struct kl_uniformity *u, uint32_t i, struct kl_ctlv c, uint8_t raise) {
  if (u->ctl[i] != c.s || u->work->raise[i] != raise) u->work->changed = true;
  u->ctl[i] = c.s;
  u->ctl_branch[i] = c.s ? c.br : 0;
  u->ctl_source[i] = c.s ? c.src : 0;
  u->work->raise[i] = raise;
}

static void walk_block(struct kl_uniformity *u, uint32_t b, struct kl_ctlv entry,
                       struct kl_exits *out);

/* Whether BREAK i fires only in its loop's last iteration in every thread alike: loopexit.h
 * proves it fires only when the loop's test is to fail next, and the counter, bound and step
 * are the same in every thread of the threadgroup, so the threads that stay leave at that test. */
static bool last_break(const struct kl_uniformity *u, uint32_t i) {
  const struct kl_loopexit *e = &u->work->last[i];
  return e->loop && sc(u, e->j) <= KL_SCOPE_THREADGROUP &&
         sc(u, e->bound) <= KL_SCOPE_THREADGROUP && sc(u, e->step) <= KL_SCOPE_THREADGROUP;
}

/* A loop: its blocks run under its divergence (its condition, and the control of every break
 * and return in it, relative to the loop: threads that left miss later iterations). Its breaks
 * and continues end here; its returns go on to the enclosing block, raised by the loop. */
static void walk_loop(struct kl_uniformity *u, uint32_t l, struct kl_ctlv cur, uint8_t local,
                      struct kl_exits *x) {
  const struct kl_ir_fn *f = u->fn;
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_ins *li = &f->ins[l];
  struct kl_ctlv inner =
      ctl_max(cur, (struct kl_ctlv){w->loop_div[l], w->loop_br[l], w->loop_src[l]});
  /* Threads that left by a last-iteration break miss that iteration's latch and the test after
   * it, which the others run; the iterations before it they all ran. */
  struct kl_ctlv edge =
      ctl_max(inner, (struct kl_ctlv){w->last_rel[l], w->last_br[l], w->last_src[l]});
  uint32_t cond = li->nops ? li->ops[0] : 0;
  struct kl_ctlv div = {sc(u, cond), l, cond ? u->source[cond] : 0};
  struct kl_exits rets = {.n = 0};
  uint32_t order[3] = {0, 1, 2};
  if (li->flags & KL_IR_F_DO_WHILE) order[0] = 1, order[1] = 2, order[2] = 0;
  bool region = li->flags & KL_IR_F_REGION;
  for (int k = 0; k < 3; k++) {
    uint32_t blk = li->blk[order[k]];
    if (!blk) continue;
    struct kl_exits q;
    walk_block(u, blk, order[k] == 1 ? inner : edge, &q);
    for (uint32_t e = 0; e < q.n; e++) {
      struct kl_exit *ex = &q.e[e];
      if (ex->kind == KL_EXIT_LAST) {
        if (ex->local > w->brk_rel[l]) {
          w->brk_rel[l] = ex->local;
          w->brk_src[l] = ex->full.src;
          w->changed = true;
        }
        if (ex->local > w->last_rel[l]) {
          w->last_rel[l] = ex->local;
          w->last_br[l] = ex->full.br;
          w->last_src[l] = ex->full.src;
          w->changed = true;
        }
        continue;
      }
      if (ex->kind == KL_EXIT_CONTINUE) {
        if (ex->local > w->cont_rel[l]) {
          w->cont_rel[l] = ex->local;
          w->cont_src[l] = ex->full.src;
          w->changed = true;
        }
        continue;
      }
      /* A region (an inlined helper with an early return) runs once: its returns are its
       * breaks, and no exit makes a later iteration. */
      bool brk = ex->kind == KL_EXIT_BREAK || (region && ex->site == li->site);
      if (brk) {
        if (ex->local > w->brk_rel[l]) {
          w->brk_rel[l] = ex->local;
          w->brk_src[l] = ex->full.src;
          w->changed = true;
        }
        if (region) continue;
      } else if (site_within(f, li->site, ex->site)) {
        exits_add(&rets, ex->kind, ex->site, ex->local, ex->full);
      } else {
        continue; /* it leaves a helper called in the loop, not the loop */
      }
      div = ctl_max(div, (struct kl_ctlv){ex->local, ex->full.br, ex->full.src});
    }
  }
  if (div.s > w->loop_div[l]) {
    w->loop_div[l] = div.s;
    w->any_loop_div = true;
    w->loop_br[l] = div.br;
    w->loop_src[l] = div.src;
    w->changed = true;
  }
  for (uint32_t e = 0; e < rets.n; e++)
    exits_add(x, KL_EXIT_RETURN, rets.e[e].site, max8(max8(rets.e[e].local, w->loop_div[l]), local),
              rets.e[e].full);
}

static void walk_block(struct kl_uniformity *u, uint32_t b, struct kl_ctlv entry,
                       struct kl_exits *out) {
  const struct kl_ir_fn *f = u->fn;
  struct kl_exits *x = out;
  x->n = 0;
  if (!b || b >= f->nblocks) return;
  u->block_ctl[b] = entry.s;
  const struct kl_ir_block *blk = &f->blocks[b];
  for (uint32_t k = 0; k < blk->n; k++) {
    uint32_t i = blk->ins[k];
    const struct kl_ir_ins *ii = &f->ins[i];
    /* A helper's return holds only until the helper's code ends. */
    for (uint32_t e = 0; e < x->n;) {
      if (x->e[e].kind == KL_EXIT_RETURN && !site_within(f, ii->site, x->e[e].site))
        x->e[e] = x->e[--x->n];
      else
        e++;
    }
    struct kl_ctlv cur = entry;
    uint8_t local = 0;
    for (uint32_t e = 0; e < x->n; e++) {
      cur = ctl_max(cur, x->e[e].full);
      local = max8(local, x->e[e].local);
    }
    set_ctl(u, i, cur, local);
    struct kl_ctlv here = {cur.s, i, cur.src};
    switch (ii->op) {
    case KL_IR_IF: {
      uint32_t cond = ii->nops ? ii->ops[0] : 0;
      uint8_t cs = if_sc(u, i);
      /* The innermost divergent branch explains best: it wins a tie. */
      struct kl_ctlv inner = cur;
      if (cs && cs >= cur.s) inner = (struct kl_ctlv){cs, i, cond ? u->source[cond] : 0};
      for (int t = 0; t < 2; t++) {
        if (!ii->blk[t]) continue;
        struct kl_exits q;
        walk_block(u, ii->blk[t], inner, &q);
        for (uint32_t e = 0; e < q.n; e++)
          exits_add(x, q.e[e].kind, q.e[e].site, max8(max8(q.e[e].local, cs), local), q.e[e].full);
      }
      break;
    }
    case KL_IR_LOOP: {
      walk_loop(u, i, cur, local, x);
      break;
    }
    case KL_IR_BREAK:
      exits_add(x, last_break(u, i) ? KL_EXIT_LAST : KL_EXIT_BREAK, 0, local, here);
      break;
    case KL_IR_CONTINUE:
      exits_add(x, KL_EXIT_CONTINUE, 0, local, here);
      break;
    case KL_IR_RETURN:
      exits_add(x, KL_EXIT_RETURN, ii->site, local, here);
      break;
    default:
      eval(u, i);
      tp_eval(u, i);
      break;
    }
  }
}

struct kl_uniformity *kl_uniformity_compute(const struct kl_ir_fn *f,
                                            const struct kl_uniformity_launch *launch) {
  return kl_uniformity_compute_scev(f, launch, NULL);
}

struct kl_uniformity *kl_uniformity_compute_scev(const struct kl_ir_fn *f,
                                                 const struct kl_uniformity_launch *launch,
                                                 const struct kl_scev *scev) {
  return kl_uniformity_compute_ext(f, launch, scev, NULL);
}

/* After a fixpoint: the calls of functions the unit does not define whose result is still
 * narrower than THREAD are asked of the headers (kl_uniformity_ext) -- only those, since a
 * definition can only widen a result to THREAD, and asking reads and parses a header. True
 * when one widened, so that the passes run again. */
static bool ask_headers(struct kl_uniformity *u) {
  struct kl_uniformity_work *w = u->work;
  const struct kl_ir_fn *f = u->fn;
  if (!w->ext || !w->ext->result_scope) return false;
  bool any = false;
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *i = &f->ins[v];
    if (i->op != KL_IR_CALL || i->fn || (i->type && kl_msl_type(i->type)) || !i->name ||
        w->ext_thread[v] || u->scope[v] >= KL_SCOPE_THREAD)
      continue;
    if (w->ext->result_scope(w->ext->ctx, i->name) >= KL_SCOPE_THREAD) {
      w->ext_thread[v] = 1;
      any = true;
    }
  }
  return any;
}

struct kl_uniformity *kl_uniformity_compute_ext(const struct kl_ir_fn *f,
                                                const struct kl_uniformity_launch *launch,
                                                const struct kl_scev *scev,
                                                const struct kl_uniformity_ext *ext) {
  struct kl_arena *a = f->arena;
  size_t n = f->nins;
  struct kl_uniformity *u = kl_arena_alloc(a, sizeof *u);
  struct kl_uniformity_work *w = kl_arena_alloc(a, sizeof *w);
  u->fn = f;
  u->work = w;
  w->scev = scev;
  w->ext = ext;
  u->scope = kl_arena_alloc(a, n);
  u->source = kl_arena_alloc(a, n * sizeof *u->source);
  u->ctl = kl_arena_alloc(a, n);
  u->ctl_branch = kl_arena_alloc(a, n * sizeof *u->ctl_branch);
  u->ctl_source = kl_arena_alloc(a, n * sizeof *u->ctl_source);
  /* Explaining a divergent barrier asks of the exits before it, once per enclosing construct
   * and inlined frame: listed once here, not searched for in every instruction each time. */
  for (uint32_t v = 1; v < n; v++) {
    uint8_t op = f->ins[v].op;
    u->nexits += op == KL_IR_RETURN || op == KL_IR_BREAK || op == KL_IR_CONTINUE;
  }
  u->exits = kl_arena_alloc_raw(a, (u->nexits + 1) * sizeof *u->exits);
  u->nexits = 0;
  for (uint32_t v = 1; v < n; v++) {
    uint8_t op = f->ins[v].op;
    if (op == KL_IR_RETURN || op == KL_IR_BREAK || op == KL_IR_CONTINUE) u->exits[u->nexits++] = v;
  }
  u->block_ctl = kl_arena_alloc(a, f->nblocks ? f->nblocks : 1);
  w->raise = kl_arena_alloc(a, n);
  w->loop_div = kl_arena_alloc(a, n);
  w->loop_br = kl_arena_alloc(a, n * sizeof *w->loop_br);
  w->loop_src = kl_arena_alloc(a, n * sizeof *w->loop_src);
  w->brk_rel = kl_arena_alloc(a, n);
  w->last_rel = kl_arena_alloc(a, n);
  w->last_br = kl_arena_alloc(a, n * sizeof *w->last_br);
  w->last_src = kl_arena_alloc(a, n * sizeof *w->last_src);
  w->last = kl_arena_alloc(a, n * sizeof *w->last);
  for (uint32_t i = 1; i < n; i++)
    if (f->ins[i].op == KL_IR_BREAK && !kl_loopexit_last(f, i, &w->last[i])) w->last[i].loop = 0;
  w->cont_rel = kl_arena_alloc(a, n);
  w->brk_src = kl_arena_alloc(a, n * sizeof *w->brk_src);
  w->cont_src = kl_arena_alloc(a, n * sizeof *w->cont_src);
  w->mem = kl_arena_alloc(a, n);
  w->mem_src = kl_arena_alloc(a, n * sizeof *w->mem_src);
  w->escaped = kl_arena_alloc(a, n);
  mark_escapes(f, w->escaped);
  w->field = kl_arena_alloc(a, n * sizeof *w->field);
  w->fmem = kl_arena_alloc(a, n);
  w->fmem_src = kl_arena_alloc(a, n * sizeof *w->fmem_src);
  number_fields(u);
  w->lo = kl_arena_alloc(a, n * sizeof *w->lo);
  w->hi = kl_arena_alloc(a, n * sizeof *w->hi);
  w->facts = kl_arena_alloc(a, n);
  w->loop_of = kl_arena_alloc(a, (f->nblocks ? f->nblocks : 1) * sizeof *w->loop_of);
  /* A block's IF or LOOP is emitted before the block is made, into a block made earlier. */
  for (uint32_t b = 1; b < f->nblocks; b++) {
    uint32_t p = f->blocks[b].parent;
    if (p && p < n && f->ins[p].block < b)
      w->loop_of[b] = f->ins[p].op == KL_IR_LOOP ? p : w->loop_of[f->ins[p].block];
  }
  w->tp = kl_arena_alloc(a, n * sizeof *w->tp);
  /* A dimension is known alone (0: not known); the whole size only when all three are. */
  for (int c = 0; launch && c < 3; c++)
    w->tg[c] = launch->tg[c] > 0 && launch->tg[c] <= 65536 ? launch->tg[c] : 0;
  w->tg_known = w->tg[0] > 0 && w->tg[1] > 0 && w->tg[2] > 0;
  w->ragged = launch && launch->ragged;
  w->runtime_x = launch && launch->runtime_x;
  w->max_total =
      launch && launch->max_total > 0 && launch->max_total <= 65536 ? launch->max_total : 0;
  int64_t cap = w->tg_known ? w->tg[0] * w->tg[1] * w->tg[2] : w->max_total;
  w->one_simd = cap > 0 && cap <= KL_SIMD_WIDTH;
  /* Every fact only grows, and each pass that changes one grows at least one scope of a small
   * lattice, so the bound is never the reason to stop on a well-formed function. */
  size_t bound = 4 * (n + f->nblocks) + 8;
  w->ext_thread = kl_arena_alloc(a, n ? n : 1);
  u->converged = false;
  u->passes = 0;
  for (int round = 0; round < 8; round++) {
    u->converged = false;
    for (size_t p = 1; p <= bound; p++) {
      u->passes++;
      w->changed = false;
      struct kl_exits top;
      walk_block(u, f->body, (struct kl_ctlv){0, 0, 0}, &top);
      if (!w->changed) {
        u->converged = true;
        break;
      }
    }
    if (!u->converged || !ask_headers(u)) break;
  }
  if (!u->converged) {
    memset(u->scope, KL_SCOPE_THREAD, n);
    memset(u->ctl, KL_SCOPE_THREAD, n);
    memset(u->block_ctl, KL_SCOPE_THREAD, f->nblocks ? f->nblocks : 1);
  }
  return u;
}

enum kl_scope kl_uniformity_value(const struct kl_uniformity *u, uint32_t v) {
  return v && v < u->fn->nins ? (enum kl_scope)u->scope[v] : KL_SCOPE_UNIFORM;
}

uint32_t kl_uniformity_source(const struct kl_uniformity *u, uint32_t v) {
  return v && v < u->fn->nins ? u->source[v] : 0;
}

enum kl_scope kl_uniformity_control(const struct kl_uniformity *u, uint32_t ins) {
  return ins && ins < u->fn->nins ? (enum kl_scope)u->ctl[ins] : KL_SCOPE_UNIFORM;
}

struct kl_uniformity_cause kl_uniformity_cause(const struct kl_uniformity *u, uint32_t ins) {
  struct kl_uniformity_cause c = {KL_SCOPE_UNIFORM, 0, 0};
  if (!ins || ins >= u->fn->nins) return c;
  c.scope = (enum kl_scope)u->ctl[ins];
  c.branch = u->ctl_branch[ins];
  c.source = u->ctl_source[ins];
  return c;
}

bool kl_uniformity_barrier_divergent(const struct kl_uniformity *u, uint32_t ins) {
  if (!ins || ins >= u->fn->nins || u->fn->ins[ins].op != KL_IR_BARRIER) return false;
  const struct kl_msl_fn *fn = u->fn->ins[ins].fn;
  enum kl_scope need = fn ? fn->barrier_scope : KL_SCOPE_THREADGROUP;
  return u->ctl[ins] > need;
}

static void dump_block(FILE *out, const struct kl_uniformity *u, uint32_t b, int depth) {
  const struct kl_ir_fn *f = u->fn;
  if (!b || b >= f->nblocks || depth > 64) return;
  const struct kl_ir_block *blk = &f->blocks[b];
  for (uint32_t k = 0; k < blk->n; k++) {
    uint32_t i = blk->ins[k];
    const struct kl_ir_ins *ii = &f->ins[i];
    fprintf(out, "%*sv%u %s", 2 * depth, "", i, kl_ir_op_name((enum kl_ir_op)ii->op));
    for (uint32_t o = 0; o < ii->nops; o++) fprintf(out, "%sv%u", o ? ", " : " ", ii->ops[o]);
    fprintf(out, "  [%s", kl_msl_scope_name((enum kl_scope)u->scope[i]));
    if (u->source[i]) fprintf(out, " from v%u", u->source[i]);
    fprintf(out, "; ctl %s", kl_msl_scope_name((enum kl_scope)u->ctl[i]));
    if (u->ctl_branch[i]) fprintf(out, " by v%u from v%u", u->ctl_branch[i], u->ctl_source[i]);
    fprintf(out, "]\n");
    if (ii->op == KL_IR_IF || ii->op == KL_IR_LOOP)
      for (int t = 0; t < 3; t++) dump_block(out, u, ii->blk[t], depth + 1);
  }
}

void kl_uniformity_dump(FILE *out, const struct kl_uniformity *u) {
  fprintf(out, "uniformity: %u passes%s\n", u->passes, u->converged ? "" : " (not converged)");
  dump_block(out, u, u->fn->body, 0);
}
