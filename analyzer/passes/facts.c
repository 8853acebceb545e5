/* Running the IR passes over a unit, and the questions rules ask of their results. */
#include "analyzer/passes/facts.h"

#include <stdlib.h>
#include <string.h>

#include "analyzer/core/xdefs.h"
#include "analyzer/ir/irhash.h"
#include "analyzer/passes/bgaccess.h"
#include "analyzer/passes/extent.h"
#include "analyzer/passes/facts_int.h"
#include "analyzer/passes/guards.h"
#include "analyzer/passes/ranges.h"
#include "analyzer/passes/replay.h"
#include "analyzer/passes/valnum.h"

static int kl_facts_cmp(const void *x, const void *y) {
  const struct kl_facts_barrier *p = x, *q = y;
  if (p->at != q->at) return (p->at > q->at) - (p->at < q->at);
  return (p->seq > q->seq) - (p->seq < q->seq);
}

/* The threadgroup size every launch of kernel k agrees on, per dimension (0 where a launch
 * leaves it unknown or two launches differ), and whether every one sizes x at run time; false
 * when no launch of k is seen. */
static bool kl_facts_launch(const struct kl_model *m, const struct kl_function *k,
                            const struct kl_dispatch *calls, size_t ncalls,
                            struct kl_uniformity_launch *out) {
  bool seen = false;
  memset(out, 0, sizeof *out);
  out->runtime_x = true;
  for (size_t i = 0; i < ncalls; i++) {
    const struct kl_dispatch *d = &calls[i];
    if (!d->kernel || !kl_model_names(m, d->kernel, d->kernel_prefix, k)) continue;
    if (!d->tg_present || (d->tg_dims & 1) || d->tg_known || d->tg_clamped || d->tg_grid ||
        d->tg_granule > 1)
      out->runtime_x = false;
    for (int c = 0; c < 3; c++) {
      int64_t v = d->tg_present && !d->tg_clamped && (d->tg_dims & (1u << c)) ? d->tg_size[c] : 0;
      /* A grid of threads that is not whole threadgroups along c ends in a narrower group: its
       * size along c is then not the same in every threadgroup. */
      if (v > 1 && !d->grid_groups && !(d->grid_multiple[c] > 0 && d->grid_multiple[c] % v == 0)) {
        v = 0;
        out->ragged = true;
      }
      if (!seen)
        out->tg[c] = v;
      else if (out->tg[c] != v)
        out->tg[c] = 0;
    }
    seen = true;
  }
  out->runtime_x = out->runtime_x && seen;
  return seen;
}

/* The kernel's [[max_total_threads_per_threadgroup(N)]] when N is a number or a file-scope
 * constant of one, else 0. */
static int64_t kl_facts_max_total(const struct kl_model *m, const struct kl_function *k) {
  const struct kl_attr *at = kl_model_attr(k, "max_total_threads_per_threadgroup");
  const char *t = at ? at->arg : NULL;
  for (int depth = 0; t && depth < 4; depth++) {
    char *end;
    long long v = strtoll(t, &end, 0);
    while (*end == 'u' || *end == 'U' || *end == ' ') end++;
    if (end != t && !*end) return v > 0 ? v : 0;
    t = kl_model_const(m, t, strlen(t));
  }
  return 0;
}

const struct kl_facts_barrier *kl_facts_barrier_at(const struct kl_facts *f, uint32_t at) {
  size_t lo = 0, hi = f->nbarriers;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (f->barriers[mid].at < at)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (f->incomplete || lo >= f->nbarriers || f->barriers[lo].at != at) return NULL;
  return &f->barriers[lo];
}

bool kl_facts_barrier(const struct kl_facts *f, uint32_t at, bool *divergent) {
  const struct kl_facts_barrier *b = kl_facts_barrier_at(f, at);
  *divergent = b && b->divergent;
  return b != NULL;
}

/* The threadgroup races of one lowering into the unit's list, each pair of nodes once: a pair in
 * one stretch of code that only the lanes of one SIMD group make around a SIMD-wide operation
 * is ordered (kl_facts_simd_ordered_ins). */
static void kl_facts_take_tg_races(struct kl_facts_run *r, const struct kl_ir_fn *fn,
                                   const struct kl_scev *sc,
                                   const struct kl_uniformity_launch *launch) {
  struct kl_tgrace_pair *p;
  /* Where nothing says the threadgroup's size, what the kernel's own arrays leave in bounds. */
  int64_t max_total = launch->max_total;
  if (!max_total && !launch->tg[0] && !launch->tg[1] && !launch->tg[2])
    max_total = kl_extent_max_threads(fn, sc);
  size_t n = kl_tgrace_run(fn->arena, fn, sc, r->m->unit->buf, launch->tg, max_total, &r->tg, &p);
  for (size_t i = 0; i < n; i++) {
    if (!p[i].back_edge && kl_facts_simd_ordered_ins(fn, sc, p[i].first, p[i].second, p[i].one_sg))
      continue;
    struct kl_facts_race x;
    memset(&x, 0, sizeof x);
    x.first = kl_tgrace_node(fn, p[i].first);
    x.second = kl_tgrace_node(fn, p[i].second);
    x.first_store = p[i].first_store;
    x.second_store = p[i].second_store;
    x.back_edge = p[i].back_edge;
    if (p[i].loop) x.loop = fn->ins[p[i].loop].node;
    if (p[i].fence) x.fence = fn->ins[p[i].fence].node;
    x.kernel = fn->kernel;
    kl_facts_add_race(r, &x);
  }
}

void kl_facts_add_race(struct kl_facts_run *r, const struct kl_facts_race *x) {
  struct kl_facts *out = r->out;
  if (r->keep) {
    KL_VEC_PUSH(r->a, r->found, r->nfound, r->cap_found);
    r->found[r->nfound++] = *x;
  }
  for (size_t k = 0; k < out->nraces; k++)
    if (ts_node_eq(out->races[k].first, x->first) && ts_node_eq(out->races[k].second, x->second))
      return;
  KL_VEC_PUSH(r->a, out->races, out->nraces, out->cap_races);
  out->races[out->nraces++] = *x;
}


/* ---- Accesses at the same index ------------------------------------------------------------ */

/* ---- Indices against the bounds the kernel sets ---------------------------------------------- */

/* Whether v is a uniform value that is not a constant: a size the kernel is given. */
static bool kl_facts_size(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v) {
  int64_t c;
  return v && !kl_ir_const(f, v, &c) && kl_scev_scope(s, v) == KL_SCOPE_UNIFORM;
}

/* The varying operand that instruction c clamps below a size (min(v, n - 1), clamp(v, lo, n)),
 * or 0 when c is no such clamp. */
static uint32_t kl_facts_clamp(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t c) {
  const struct kl_ir_ins *in = &f->ins[c];
  const char *nm = in->fn ? in->fn->name : in->name;
  nm = nm ? kl_msl_unprefix(nm) : "";
  bool min = (in->op == KL_IR_BINOP && in->sub == KL_IR_MIN && in->nops == 2) ||
             (in->op == KL_IR_CALL && !strcmp(nm, "min") && in->nops == 2);
  if (in->op == KL_IR_CALL && !strcmp(nm, "clamp") && in->nops == 3)
    return kl_scev_scope(s, in->ops[0]) != KL_SCOPE_UNIFORM && kl_facts_size(f, s, in->ops[2])
               ? in->ops[0]
               : 0;
  if (!min) return 0;
  for (int k = 0; k < 2; k++)
    if (kl_scev_scope(s, in->ops[k]) != KL_SCOPE_UNIFORM && kl_facts_size(f, s, in->ops[1 - k]))
      return in->ops[k];
  return 0;
}

/* Whether the clamped form m bounds offset o, of an access at p, as a comparison would: each of
 * m's atoms (thread coordinates and loop counters) is in o and unbounded at p, all scaled by one
 * factor where both coefficients are known (`min(row, n - 1)` is about
 * `w[row * ld + col]`, not about `out[tg]` for `min(tg * 256 + lid, n)`, nor about `out[lid]`
 * for a counter's `min(i + lid, n)`, nor about `x[row * n + c]` for `min(c + 1, n - 1)` under
 * `c < n`). */
static bool kl_facts_clamp_covers(const struct kl_scev *sc, struct kl_ranges *rg,
                                  struct kl_affine m, struct kl_affine o, uint32_t p) {
  /* Only the value itself clamped to the last element: `min(start + chunk, n)` clamps the end of
   * a chunk (a partial last chunk), `min(n - row * w, w)` a remaining count, neither a sign
   * that the index passes n. */
  if (!m.known || (!o.known && !o.partial) || !m.n || m.c0_symbolic || m.c0 > 0) return false;
  int64_t num = 0, den = 0;
  for (uint8_t i = 0; i < m.n; i++) {
    int64_t k;
    bool sym;
    const struct kl_scev_atom *at = kl_scev_atom(sc, m.t[i].atom);
    if (!kl_affine_part_coeff(o, m.t[i].atom, &k, &sym) || !at ||
        kl_ranges_bounded_above(rg, at->value, p, NULL))
      return false;
    if (m.t[i].symbolic || m.t[i].k <= 0 || (!sym && k <= 0)) return false;
    if (sym) continue;
    if (!den) {
      num = k, den = m.t[i].k;
    } else if (k * den != num * m.t[i].k) {
      return false;
    }
  }
  return true;
}

/* Whether sum v (through ADD, a constant subtracted and casts) has a term scaled by w
 * (`row * w`, either order). */
static bool kl_facts_scaled_by(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v,
                               uint32_t w, int depth) {
  const struct kl_ir_ins *in = &f->ins[v];
  if (depth <= 0 || in->op == KL_IR_CONST) return false;
  if (in->op == KL_IR_CAST && in->nops) return kl_facts_scaled_by(f, s, in->ops[0], w, depth - 1);
  if (in->op != KL_IR_BINOP || in->nops != 2) return false;
  if (in->sub == KL_IR_ADD)
    return kl_facts_scaled_by(f, s, in->ops[0], w, depth - 1) ||
           kl_facts_scaled_by(f, s, in->ops[1], w, depth - 1);
  if (in->sub == KL_IR_SUB) return kl_facts_scaled_by(f, s, in->ops[0], w, depth - 1);
  return in->sub == KL_IR_MUL &&
         (kl_valnum_equal(f, s, in->ops[0], w) || kl_valnum_equal(f, s, in->ops[1], w));
}

/* Whether an index along address a steps by whole rows of w elements (`x + row * w`, `x[row * w
 * + c]`): then w is the length of the row the access reads in. */
static bool kl_facts_rows_of(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a,
                             uint32_t w) {
  for (uint32_t d = 0; a && a < f->nins && d < 32; d++) {
    const struct kl_ir_ins *in = &f->ins[a];
    if (in->op != KL_IR_INDEX && in->op != KL_IR_MEMBER && in->op != KL_IR_CAST) break;
    if (!in->nops) break;
    if (in->op == KL_IR_INDEX && in->nops > 1 && kl_facts_scaled_by(f, s, in->ops[1], w, 8))
      return true;
    a = in->ops[0];
  }
  return false;
}

uint32_t kl_facts_past_ins(const struct kl_ir_fn *f, const struct kl_scev *s, struct kl_ranges *r,
                           uint32_t access, uint32_t *index) {
  uint32_t added, size;
  bool rounded;
  return kl_facts_past_ins_by(f, s, r, access, index, &added, &size, &rounded);
}

uint32_t kl_facts_past_ins_by(const struct kl_ir_fn *f, const struct kl_scev *s,
                              struct kl_ranges *r, uint32_t access, uint32_t *index,
                              uint32_t *added, uint32_t *size, bool *rounded) {
  *added = 0, *size = 0, *rounded = false;
  if (!access || access >= f->nins || !f->ins[access].nops) return 0;
  uint32_t a = f->ins[access].ops[0];
  for (uint32_t ad = a, d = 0; ad && ad < f->nins && d < 32; d++) {
    const struct kl_ir_ins *in = &f->ins[ad];
    if (in->op != KL_IR_INDEX && in->op != KL_IR_MEMBER && in->op != KL_IR_CAST) break;
    if (!in->nops) break;
    struct kl_ranges_bound bd;
    /* Only a bound that is the length of the row read is the data's end: `offsets[i + 1]` under
     * `i < n` reads an array of n + 1 offsets, which nothing here says is shorter. */
    if (in->op == KL_IR_INDEX && in->nops > 1 &&
        kl_ranges_past_by(r, in->ops[1], access, &bd, added) && bd.by &&
        kl_facts_rows_of(f, s, a, bd.w)) {
      *index = in->ops[1];
      *size = bd.w;
      return bd.by;
    }
    /* A count of tiles the kernel rounds up itself, over rows of the length it rounds. */
    if (in->op == KL_IR_INDEX && in->nops > 1 &&
        kl_ranges_ceil_tiles(r, in->ops[1], access, added, &bd) && bd.by &&
        kl_facts_rows_of(f, s, a, bd.w)) {
      *index = in->ops[1];
      *size = bd.w;
      *rounded = true;
      return bd.by;
    }
    *added = 0;
    ad = in->ops[0];
  }
  return 0;
}

/* The clamp instructions of f (kl_facts_clamp), in order, into *out (in arena a); their count. */
static size_t kl_facts_clamps(struct kl_arena *a, const struct kl_ir_fn *f,
                              const struct kl_scev *s, uint32_t **out) {
  size_t n = 0, cap = 0;
  uint32_t *v = NULL;
  for (uint32_t i = 1; i < f->nins; i++) {
    if (!kl_facts_clamp(f, s, i)) continue;
    if (n == cap) {
      uint32_t *w = kl_arena_alloc(a, (cap = cap ? cap * 2 : 8) * sizeof *w);
      if (n) memcpy(w, v, n * sizeof *w);
      v = w;
    }
    v[n++] = i;
  }
  *out = v;
  return n;
}

/* kl_facts_clamp_ins over the clamps of f already found (kl_facts_clamps). */
static uint32_t kl_facts_clamp_among(const struct kl_ir_fn *f, const struct kl_scev *s,
                                     struct kl_ranges *r, uint32_t access, const uint32_t *cl,
                                     size_t ncl) {
  uint32_t root;
  struct kl_affine o;
  if (!ncl || !access || access >= f->nins || !f->ins[access].nops) return 0;
  uint32_t a = f->ins[access].ops[0];
  if (!kl_scev_address(s, a, &root, &o) || kl_ranges_address_bounded(r, a, access, NULL)) return 0;
  for (size_t i = 0; i < ncl; i++) {
    uint32_t m = kl_facts_clamp(f, s, cl[i]);
    if (m && kl_facts_clamp_covers(s, r, kl_scev_form(s, m), o, access)) return cl[i];
  }
  return 0;
}

uint32_t kl_facts_clamp_ins(const struct kl_ir_fn *f, const struct kl_scev *s, struct kl_ranges *r,
                            uint32_t access) {
  uint32_t *cl;
  size_t n = kl_facts_clamps(f->arena, f, s, &cl);
  return kl_facts_clamp_among(f, s, r, access, cl, n);
}

bool kl_facts_past_rounded(const struct kl_facts *f, size_t a) {
  return f->bounds && a < f->naccesses && f->bounds[a].past_rounded;
}

TSNode kl_facts_past_row(const struct kl_facts *f, size_t a) {
  if (!f->bounds || a >= f->naccesses) return (TSNode){{0}, NULL, NULL};
  return f->bounds[a].past_row;
}

/* The constant of form a on a loop's first trip: its own, plus each recurrence's start's
 * (scaled by its coefficient); false when one is not a known integer. */
static bool kl_facts_first_c0(const struct kl_scev *s, struct kl_affine a, int64_t *c0) {
  if ((!a.known && !a.partial) || a.c0_symbolic) return false;
  int64_t c = a.c0;
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(s, a.t[i].atom);
    if (!at || at->kind != KL_SCEV_REC) continue;
    const struct kl_affine *st = &at->start_form;
    if (a.t[i].symbolic || (!st->known && !st->partial) || st->c0_symbolic) return false;
    c += a.t[i].k * st->c0;
  }
  *c0 = c;
  return true;
}

/* Whether one of g's comparisons of value t is of the thread's position in form pf (expanded):
 * a coordinate of pf (through recurrences to their starts) is in t's form with a positive or
 * symbolic coefficient; with start, also from no later a first position than *start (a walk of
 * the rest of a row, `for (i = 64 + lane; i < n; ...)`, says the row is longer than its head). */
static bool kl_facts_same_place(const struct kl_scev *s, struct kl_affine pf, uint32_t t,
                                const int64_t *start) {
  struct kl_affine tf = kl_scev_expand(s, kl_scev_form(s, t));
  int64_t tc;
  if (!tf.known && !tf.partial) return false;
  if (start && (!kl_facts_first_c0(s, kl_scev_form(s, t), &tc) || tc > *start)) return false;
  for (uint8_t k = 0; k < pf.n; k++) {
    int64_t coeff;
    bool sym;
    if (kl_affine_part_coeff(tf, pf.t[k].atom, &coeff, &sym) && (sym || coeff > 0)) return true;
  }
  return false;
}

/* The comparison of g that shows access's walk, bounded by a constant (kl_ranges_const_walk),
 * reads a row that can be shorter: along its address an index steps by rows of w elements
 * (`x + row * n`), and the kernel compares the walk's own position with that w elsewhere (`for
 * (j = lid; j < n; j += tg)`), so w varies and the constant can pass it; 0 when none. The index
 * in *index and the walk's bound in *by. */
static uint32_t kl_facts_short_row(const struct kl_ir_fn *f, const struct kl_scev *s,
                                   struct kl_ranges *r, const struct kl_guards *g,
                                   uint32_t access, uint32_t *index, uint32_t *by) {
  if (!access || access >= f->nins || !f->ins[access].nops || !g->ncmps) return 0;
  uint32_t a = f->ins[access].ops[0];
  for (uint32_t ad = a, d = 0; ad && ad < f->nins && d < 32; d++) {
    const struct kl_ir_ins *in = &f->ins[ad];
    if (in->op != KL_IR_INDEX && in->op != KL_IR_MEMBER && in->op != KL_IR_CAST) break;
    if (!in->nops) break;
    uint32_t part;
    struct kl_ranges_bound bd;
    if (in->op == KL_IR_INDEX && in->nops > 1 &&
        kl_ranges_const_walk(r, in->ops[1], access, &part, &bd) && bd.by) {
      struct kl_affine pf = kl_scev_expand(s, kl_scev_form(s, part));
      int64_t pc;
      if ((!pf.known && !pf.partial) || !kl_facts_first_c0(s, kl_scev_form(s, part), &pc))
        return 0;
      for (uint32_t i = 0; i < g->ncmps; i++) {
        const struct kl_ir_ins *c = &f->ins[g->cmps[i]];
        uint32_t t = g->cmp_side[i], w = c->ops[0] == t ? c->ops[1] : c->ops[0];
        if (kl_facts_rows_of(f, s, a, w) && kl_facts_same_place(s, pf, t, &pc)) {
          *index = in->ops[1];
          *by = bd.by;
          return g->cmps[i];
        }
      }
      return 0;
    }
    ad = in->ops[0];
  }
  return 0;
}

TSNode kl_facts_past_added(const struct kl_facts *f, size_t a, const char **name) {
  if (name) *name = NULL;
  if (!f->bounds || a >= f->naccesses) return (TSNode){{0}, NULL, NULL};
  if (name) *name = f->bounds[a].past_added_name;
  return f->bounds[a].past_added;
}

/* Whether the kernel shows that its rows need not be a whole number of tiles, for an index that
 * the thread's place `added` in a tile takes past a row of w elements (kl_ranges_past_by): one of
 * its comparisons (guards' list) sets a value computed from that place against w, the row's
 * length (`for (i = lid; i < n; i += tg)`, `if (lid < n)`, `if (i0 + lid < n)`). A kernel that
 * only ever walks whole tiles (a tiled GEMM's `for (t = 0; t < n; t += TS) A[row * n + t + tx]`)
 * states no more than its contract that n is a multiple of the tile: it is not reported. */
static bool kl_facts_ragged(const struct kl_ir_fn *f, const struct kl_scev *s,
                            const struct kl_guards *g, uint32_t w, uint32_t added) {
  struct kl_affine af = kl_scev_expand(s, kl_scev_form(s, added));
  if (!af.known && !af.partial) return false;
  for (uint32_t i = 0; i < g->ncmps; i++) {
    const struct kl_ir_ins *c = &f->ins[g->cmps[i]];
    uint32_t t = g->cmp_side[i], b = c->ops[0] == t ? c->ops[1] : c->ops[0];
    if (kl_valnum_equal(f, s, b, w) && kl_facts_same_place(s, af, t, NULL)) return true;
  }
  return false;
}

bool kl_facts_past_bound(const struct kl_facts *f, size_t a, TSNode *by, TSNode *index) {
  /* A record is of the lowerings that answered for it: one cut short answers nothing
   * (kl_facts_take_bg), so no lowering's cut vetoes another's answer. */
  if (!f->bounds || a >= f->naccesses || kl_node_null(f->bounds[a].past_by))
    return false;
  *by = f->bounds[a].past_by;
  *index = f->bounds[a].past_index;
  return true;
}

/* ---- Guards of bounds-guard, from the IR ---------------------------------------------------- */

/* The name a value goes by in the source: its symbol's, an alias's, a coordinate parameter's
 * (with its component), or NULL. */
static const char *kl_facts_value_name(struct kl_arena *a, const struct kl_ir_fn *fn, uint32_t v) {
  const struct kl_ir_ins *in = &fn->ins[v];
  if (in->sym && in->sym < fn->nsyms && fn->syms[in->sym].name) return fn->syms[in->sym].name;
  for (uint32_t i = 0; i < fn->nalias; i++)
    if (fn->alias_val[i] == v && fn->alias_sym[i] < fn->nsyms && fn->syms[fn->alias_sym[i]].name)
      return fn->syms[fn->alias_sym[i]].name;
  if (in->op != KL_IR_COORD || !fn->kernel) return NULL;
  for (size_t i = 0; i < fn->kernel->nparams; i++) {
    const struct kl_var *p = &fn->kernel->params[i];
    if (!p->name || !ts_node_eq(p->node, in->node)) continue;
    return in->name ? kl_arena_printf(a, "%s.%s", p->name, in->name) : p->name;
  }
  return NULL;
}

/* The value that names an unguarded part: the part itself when it has a name, else its thread-
 * varying factor (`row` of `row * ld`), through casts. */
static const char *kl_facts_part_name(struct kl_arena *a, const struct kl_ir_fn *fn,
                                      const struct kl_guards *g, uint32_t v) {
  for (int d = 0; v && d < 8; d++) {
    const char *nm = kl_facts_value_name(a, fn, v);
    if (nm) return nm;
    const struct kl_ir_ins *in = &fn->ins[v];
    uint32_t next = 0;
    if (in->op == KL_IR_CAST && in->nops) next = in->ops[0];
    if (in->op == KL_IR_BINOP && in->nops == 2 &&
        (in->sub == KL_IR_MUL || in->sub == KL_IR_SHL || in->sub == KL_IR_DIV ||
         in->sub == KL_IR_SHR || in->sub == KL_IR_REM || in->sub == KL_IR_AND)) {
      bool l = g->dep[in->ops[0]] & KL_GUARDS_THREAD, r = g->dep[in->ops[1]] & KL_GUARDS_THREAD;
      if (l != r) next = l ? in->ops[0] : in->ops[1];
    }
    v = next;
  }
  return NULL;
}

/* The name the comparison ev gives the unguarded part: a named value among its operands (through
 * sums, differences and casts, left first) whose form holds one of the part's thread-varying
 * terms and that the address of access p is computed from -- `row` of `row < n` for the `tg.x`
 * of `row = 2 * tg.x + 1`, `first_row` of `first_row + r < n` -- so that the message names what
 * the kernel itself checks; NULL when none does. */
/* Whether value v is among what the address of access p is computed from (a bounded walk). */
static bool kl_facts_feeds(const struct kl_ir_fn *fn, uint32_t p, uint32_t v) {
  uint32_t stack[64];
  int n = 0, steps = 0;
  if (fn->ins[p].nops) stack[n++] = fn->ins[p].ops[0];
  while (n && steps++ < 256) {
    uint32_t x = stack[--n];
    if (x == v) return true;
    if (!x || x >= fn->nins) continue;
    const struct kl_ir_ins *in = &fn->ins[x];
    if (in->op == KL_IR_LOAD || in->op == KL_IR_PHI) continue;
    for (uint32_t k = 0; k < in->nops && n < 64; k++) stack[n++] = in->ops[k];
  }
  return false;
}

static const char *kl_facts_ev_name(struct kl_arena *a, const struct kl_ir_fn *fn,
                                    const struct kl_scev *sc, uint32_t ev, uint32_t part,
                                    uint32_t p) {
  const struct kl_ir_ins *c = &fn->ins[ev];
  if (c->op != KL_IR_BINOP || c->nops != 2 || c->sub < KL_IR_LT || c->sub > KL_IR_NE) return NULL;
  struct kl_affine pf = kl_scev_form(sc, part);
  if (!pf.known && !pf.partial) return NULL;
  uint32_t stack[16];
  int n = 0;
  stack[n++] = c->ops[1];
  stack[n++] = c->ops[0];
  for (int steps = 0; n && steps < 32; steps++) {
    uint32_t v = stack[--n];
    if (!v || v >= fn->nins) continue;
    const char *nm = kl_facts_value_name(a, fn, v);
    if (nm && kl_facts_feeds(fn, p, v)) {
      struct kl_affine vf = kl_scev_form(sc, v);
      for (uint8_t i = 0; i < pf.n; i++) {
        int64_t k;
        bool sym;
        if (kl_affine_part_coeff(vf, pf.t[i].atom, &k, &sym)) return nm;
      }
      continue;
    }
    const struct kl_ir_ins *in = &fn->ins[v];
    if (in->op == KL_IR_CAST && in->nops && n < 16) {
      stack[n++] = in->ops[0];
    } else if (in->op == KL_IR_BINOP && in->nops == 2 &&
               (in->sub == KL_IR_ADD || in->sub == KL_IR_SUB) && n < 15) {
      stack[n++] = in->ops[1];
      stack[n++] = in->ops[0];
    }
  }
  return NULL;
}

/* What the IR says of access instruction p of fn (kl_guards_access) joined into o, with what
 * other instructions and lowerings holding the same access said: a part unguarded in one is
 * unguarded. *v receives p's own verdict, and *clamp (when asked) the clamp kl_facts_clamp_ins
 * finds of an unguarded index with no comparison as evidence, 0 when none. False when p is no
 * access the pass judges. */
static bool kl_facts_guard_join(struct kl_facts_run *r, const struct kl_ir_fn *fn,
                                const struct kl_scev *sc, struct kl_ranges *rg,
                                struct kl_guards *g, uint32_t p, struct kl_facts_guard *o,
                                struct kl_guards_verdict *v, uint32_t *clamp) {
  if (clamp) *clamp = 0;
  if (!kl_guards_access(g, p, v)) return false;
  o->held = true;
  o->thread_indexed |= v->thread_indexed;
  if (!v->unguarded) return true;
  o->unguarded = true;
  o->dims |= v->dims;
  o->wide |= v->wide;
  uint32_t ev = v->evidence, cl = 0;
  if (!ev && (clamp || !o->evidence)) {
    if (!r->clamps_found) {
      r->nclamps = kl_facts_clamps(fn->arena, fn, sc, &r->clamps);
      r->clamps_found = true;
    }
    cl = kl_facts_clamp_among(fn, sc, rg, p, r->clamps, r->nclamps);
  }
  if (clamp) *clamp = cl;
  if (o->evidence) return true;
  bool by_clamp = false;
  if (!ev && (ev = cl)) {
    /* A clamp of another part (`min(n - 8, out_row)` beside an unchecked batch index) is no
     * evidence for this one. */
    struct kl_affine pf = kl_scev_form(sc, v->part);
    struct kl_affine mf = kl_scev_form(sc, kl_facts_clamp(fn, sc, ev));
    bool shared = false;
    for (uint8_t i = 0; i < pf.n && !shared; i++) {
      int64_t kk;
      bool sym;
      shared = kl_affine_part_coeff(mf, pf.t[i].atom, &kk, &sym);
    }
    if (shared)
      by_clamp = true;
    else
      ev = 0;
  }
  if (ev || kl_node_null(o->part)) {
    o->part = fn->ins[v->part].node;
    o->var = ev && !by_clamp ? kl_facts_ev_name(r->a, fn, sc, ev, v->part, p) : NULL;
    if (!o->var) o->var = kl_facts_part_name(r->a, fn, g, v->part);
    if (o->var) o->var = kl_arena_strdup(r->a, o->var);
  }
  if (!ev) return true;
  o->evidence = true;
  o->clamp = by_clamp;
  o->ev = fn->ins[ev].node;
  return true;
}

/* kl_arena_grow clears the new answers: unasked. */
void kl_facts_grow_bg(struct kl_facts_run *r, size_t n) {
  struct kl_facts *out = r->out;
  if (n <= r->cap_bg) return;
  size_t cap = r->cap_bg ? r->cap_bg : 64;
  while (cap < n) cap *= 2;
  out->guards = kl_arena_grow(r->a, out->guards, r->cap_bg, cap, sizeof *out->guards);
  out->bounds = kl_arena_grow(r->a, out->bounds, r->cap_bg, cap, sizeof *out->bounds);
  out->covered = kl_arena_grow(r->a, out->covered, r->cap_bg, cap, sizeof *out->covered);
  r->cap_bg = cap;
}

static void kl_facts_cover_one(uint8_t *c, struct kl_ranges *with, struct kl_ranges *without,
                               uint32_t a);
static bool kl_facts_ranges_launch(const struct kl_facts_run *r, const struct kl_ir_fn *fn,
                                   struct kl_ranges_launch *out, struct kl_ranges_count *counts);

/* Whether ranges pass r ran under launch l. */
static bool kl_facts_same_launch(const struct kl_ranges_launch *l, const struct kl_ranges *r) {
  const struct kl_ranges_launch *m = &r->launch;
  for (int c = 0; c < 3; c++)
    if (l->tg[c] != m->tg[c] || l->grid[c] != m->grid[c]) return false;
  return l->max_total_threads == m->max_total_threads;
}

/* Lowering fn's device accesses into bounds-guard's access list (analyzer/passes/bgaccess.h),
 * t[0, nt) its entries of the device-access table, and the rule's questions asked of each
 * instruction making one (a lowering cut short answers none): what the IR says of its index
 * (kl_facts_find_guard, a clamp sharing its unguarded part taken as evidence), whether it passes
 * its part's bound (kl_facts_past_bound: an index with a constant added), and whether the launch
 * keeps it in bounds (kl_facts_launch_covers, where some launch of the run is known). */
static void kl_facts_take_bg(struct kl_facts_run *r, const struct kl_ir_fn *fn,
                             const struct kl_scev *sc, const struct kl_uniformity_launch *l,
                             const struct kl_access *t, size_t nt) {
  struct kl_ranges *rg = NULL;
  struct kl_guards *g = NULL;
  r->clamps_found = false;
  if (!fn->truncated) {
    struct kl_ranges_launch rl = {{l->tg[0], l->tg[1], l->tg[2]}, {0, 0, 0}, l->max_total};
    rg = kl_ranges_run(fn->arena, fn, sc, &rl);
    g = kl_guards_run(fn->arena, fn, sc, rg);
    g->arms = &r->arms;
    g->tree = r->m->unit ? r->m->unit->tree : NULL;
  }
  struct kl_bgaccess_pair *p;
  size_t np = kl_bgaccess_take(r->a, r->bg, fn, sc, t, nt, g, &p);
  kl_facts_grow_bg(r, r->bg->n);
  if (fn->truncated || !np) return;
  struct kl_ranges *with = NULL, *without = NULL;
  struct kl_ranges_launch cl;
  struct kl_ranges_count counts[3];
  if (r->cover_bg && fn->kernel && kl_facts_ranges_launch(r, fn, &cl, counts)) {
    with = kl_ranges_run(fn->arena, fn, sc, &cl);
    kl_ranges_set_counts(with, counts);
    /* The kernel's own attribute is no launch: kept in both. */
    struct kl_ranges_launch none = {{0, 0, 0}, {0, 0, 0}, cl.max_total_threads};
    /* A pass's answers follow from its launch alone (its counts are read by the launch-cover
     * question only, and set on `with` alone): the same launch is the same pass. */
    without = rg && kl_facts_same_launch(&none, rg) ? rg : kl_ranges_run(fn->arena, fn, sc, &none);
  }
  for (size_t i = 0; i < np; i++) {
    uint32_t k = p[i].rec, ins = p[i].ins;
    const struct kl_bgaccess *x = &r->bg->v[k];
    struct kl_guards_verdict v;
    if (!kl_facts_guard_join(r, fn, sc, rg, g, ins, &r->out->guards[k], &v, NULL)) continue;
    if (with) kl_facts_cover_one(&r->out->covered[k], with, without, fn->ins[ins].ops[0]);
    /* Past its bound: asked of a thread-indexed index (a constant added, or the thread's place
     * in a tile). */
    if (!v.thread_indexed || (!x->form.known && !x->form.partial)) continue;
    struct kl_facts_bound *b = &r->out->bounds[k];
    uint32_t idx = 0, by, added = 0, size = 0;
    bool rounded;
    if (kl_node_null(b->past_by) &&
        (by = kl_facts_past_ins_by(fn, sc, rg, ins, &idx, &added, &size, &rounded)) &&
        (!added || rounded || kl_facts_ragged(fn, sc, g, size, added))) {
      b->past_by = fn->ins[by].node;
      b->past_index = fn->ins[idx].node;
      b->past_rounded = rounded;
      if (added) {
        b->past_added = fn->ins[added].node;
        /* The name may be the lowering's, whose arena goes before the rules run. */
        const char *nm = kl_facts_value_name(r->a, fn, added);
        b->past_added_name = nm ? kl_arena_strdup(r->a, nm) : NULL;
      }
    }
    uint32_t row;
    if (kl_node_null(b->past_by) &&
        (row = kl_facts_short_row(fn, sc, rg, g, ins, &idx, &by))) {
      b->past_by = fn->ins[by].node;
      b->past_index = fn->ins[idx].node;
      b->past_row = fn->ins[row].node;
    }
  }
}

const struct kl_facts_guard *kl_facts_find_guard(const struct kl_facts *f, size_t access) {
  if (!f->guards || access >= f->nguards || !f->guards[access].held)
    return NULL;
  return &f->guards[access];
}

/* Whether a lowering cut short may lack a barrier that orders a pair of its accesses: something
 * other than a helper was left out (a lambda, the rest of the body at the instruction cap), or
 * a helper that may reach a barrier was. A pair it finds is then no evidence of a race. */
static bool kl_facts_cut_barrier(const struct kl_facts_run *r, const struct kl_ir_fn *fn) {
  if (!fn->truncated) return false;
  if (fn->cut_other || !r->reach) return true;
  const struct kl_function *fs = r->m->functions;
  for (uint32_t i = 0; i < fn->ncut; i++) {
    const struct kl_function *k = fn->cut[i];
    if (k < fs || k >= fs + r->m->nfunctions || r->reach[k - fs]) return true;
  }
  return false;
}

/* Whether kernel k takes the passes besides the device-access table and bounds-guard's list
 * when nothing else asks of every kernel: it may reach a barrier. */
static bool kl_facts_want(void *ctx, const struct kl_function *k) {
  const struct kl_facts_run *r = ctx;
  const struct kl_function *fs = r->m->functions;
  return r->reach && k >= fs && k < fs + r->m->nfunctions && r->reach[k - fs];
}

/* ---- Accesses the launch keeps in bounds ---------------------------------------------------- */

enum { KL_FACTS_COVER_UNHELD = 0, KL_FACTS_COVER_YES, KL_FACTS_COVER_NO };

/* The kernel's scalar integer argument bound at [[buffer(index)]] in fn, or 0. */
static uint32_t kl_facts_scalar_arg(const struct kl_ir_fn *fn, int index) {
  static const char *const ints[] = {"uint",    "int",      "uint32_t", "int32_t", "unsigned",
                                     "ushort",  "short",    "uint16_t", "int16_t", "ulong",
                                     "long",    "uint64_t", "int64_t",  "size_t",  NULL};
  for (uint32_t v = 1; v < fn->nins; v++) {
    const struct kl_ir_ins *in = &fn->ins[v];
    const struct kl_var *x = in->var;
    if (in->op != KL_IR_ARG || !x || x->is_pointer || x->array_dims || !x->attr || !x->type ||
        strcmp(x->attr, "buffer") || x->attr_index != index)
      continue;
    for (const char *const *t = ints; *t; t++)
      if (!strcmp(x->type, *t)) return v;
    return 0;
  }
  return 0;
}

/* The ranges pass's launch for fn's kernel: each threadgroup dimension that every launch of it
 * gives as a constant, the largest (a ragged last group is narrower, never wider), and each grid
 * dimension every launch counts alike from one kernel argument (kl_dispatch_count), as fn's ARG
 * bound at that buffer index. False when no launch of the kernel is seen. */
static bool kl_facts_ranges_launch(const struct kl_facts_run *r, const struct kl_ir_fn *fn,
                                   struct kl_ranges_launch *out, struct kl_ranges_count *counts) {
  memset(out, 0, sizeof *out);
  memset(counts, 0, 3 * sizeof *counts);
  bool seen = false, tg_ok[3] = {true, true, true}, count_ok[3] = {true, true, true};
  struct kl_dispatch_count count[3];
  bool groups[3] = {false, false, false};
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < r->ncalls; i++) {
    const struct kl_dispatch *d = &r->calls[i];
    if (!d->kernel || !kl_model_names(r->m, d->kernel, d->kernel_prefix, fn->kernel)) continue;
    for (int c = 0; c < 3; c++) {
      int64_t v = d->tg_present && !d->tg_clamped && !d->tg_grid && (d->tg_dims & (1u << c))
                      ? d->tg_size[c]
                      : 0;
      if (v < 1)
        tg_ok[c] = false;
      else if (v > out->tg[c])
        out->tg[c] = v;
      const struct kl_dispatch_count *g = &d->grid_count[c];
      if (!g->known) {
        count_ok[c] = false;
      } else if (!seen) {
        count[c] = *g;
        groups[c] = d->grid_groups;
      } else if (count[c].index != g->index || count[c].add != g->add ||
                 count[c].div != g->div || groups[c] != d->grid_groups) {
        count_ok[c] = false;
      }
    }
    seen = true;
  }
  if (!seen) return false;
  for (int c = 0; c < 3; c++) {
    if (!tg_ok[c]) out->tg[c] = 0;
    uint32_t n = count_ok[c] ? kl_facts_scalar_arg(fn, count[c].index) : 0;
    if (n) counts[c] = (struct kl_ranges_count){n, count[c].add, count[c].div, groups[c]};
  }
  out->max_total_threads = kl_facts_max_total(r->m, fn->kernel);
  return true;
}

/* Whether the launch keeps the access at address a in bounds, joined into *c: covered with it
 * (the ranges `with`), not without it, here and wherever else *c was asked. */
static void kl_facts_cover_one(uint8_t *c, struct kl_ranges *with, struct kl_ranges *without,
                               uint32_t a) {
  bool yes = kl_ranges_address_covered(with, a, a, NULL) &&
             !kl_ranges_address_covered(without, a, a, NULL);
  *c = yes && *c != KL_FACTS_COVER_NO ? KL_FACTS_COVER_YES : KL_FACTS_COVER_NO;
}

bool kl_facts_launch_covers(const struct kl_facts *f, size_t access) {
  return f->covered && access < f->ncovered &&
         f->covered[access] == KL_FACTS_COVER_YES;
}

/* The condition of an IF or LOOP node as the source writes it (`(gid >= n)`), else the node. */
static TSNode kl_facts_cond_node(TSNode n) {
  if (ts_node_is_null(n)) return n;
  TSNode c = ts_node_child_by_field_name(n, "condition", 9);
  return ts_node_is_null(c) ? n : c;
}

/* Why barrier v of u's function diverges, in b (kl_facts_barrier), with the names of its
 * lowering copied into the unit's arena (the lowering's memory goes before the rules run). */
static void kl_facts_explain(struct kl_arena *a, const char *buf, const struct kl_uniformity *u,
                             uint32_t v, struct kl_facts_barrier *b, struct kl_divergence *dout) {
  const struct kl_ir_fn *fn = u->fn;
  b->nflag = 1;
  enum kl_scope allowed = b->fn ? b->fn->barrier_scope : KL_SCOPE_THREADGROUP;
  struct kl_divergence d;
  kl_divergence_explain(u, v, allowed, buf, &d);
  *dout = d;
  b->cause = d.kind;
  b->back_edge = d.back_edge;
  if (d.cond_at) b->cause_node = kl_facts_cond_node(fn->ins[d.cond_at].node);
  if (d.kind == KL_DIV_EXIT || (d.kind == KL_DIV_LOOP && d.back_edge))
    b->exit_stmt = fn->ins[d.branch].node;
  if (d.var) b->cause_var = kl_arena_strdup(a, d.var);
  if (d.carried) b->carried = d.carried_at;
  /* The kernel's own call that leads into the helper holding the barrier, and the call of the
   * innermost lambda it is in. */
  for (uint32_t s = fn->ins[v].site, depth = 0; s && s < fn->nsites && depth < fn->nsites;
       depth++) {
    if (fn->sites[s].lambda) {
      if (kl_node_null(b->lambda_at)) b->lambda_at = fn->sites[s].call;
    } else {
      b->via = fn->sites[s].call;
    }
    s = fn->sites[s].parent;
  }
  /* Named by its instantiations' host names, or its specialisation, or its kernel. */
  b->names = kl_replay_names(a, fn, &b->nnames);
}

/* A pass's working memory in an arena of its own, deleted by kl_facts_scratch_end once its
 * answers are taken into the unit's arena: a specialisation of tens of thousands of instructions
 * takes megabytes per pass, and the passes then peak at the largest of them, not their sum. The
 * passes allocate from fn->arena, which stands for the scratch arena meanwhile; fn's own tables
 * must not grow then (nothing emits). Returns the arena fn had. */
static struct kl_arena *kl_facts_scratch(struct kl_ir_fn *fn) {
  struct kl_arena *had = fn->arena;
  fn->arena = kl_arena_new();
  return had;
}

/* Delete the scratch arena kl_facts_scratch gave fn and give fn back had. */
static void kl_facts_scratch_end(struct kl_ir_fn *fn, struct kl_arena *had) {
  kl_arena_delete(fn->arena);
  fn->arena = had;
}

/* A barrier of one lowering that an earlier return explains: its record and instruction, and
 * that RETURN. */
struct kl_facts_behind {
  size_t rec;
  uint32_t v, ret, cond_at;
};

/* A CONST of fn that is false (want_true: true) as a condition: one of its own, else one made
 * at the end of its body (the lowering is handed over whole and goes after this pass). */
static uint32_t kl_facts_const_cond(struct kl_ir_fn *fn, bool want_true) {
  for (uint32_t v = 1; v < fn->nins; v++) {
    int64_t c;
    if (kl_ir_const(fn, v, &c) && (c != 0) == want_true) return v;
  }
  uint32_t v = kl_ir_emit(fn, fn->body, KL_IR_CONST, NULL, 0);
  if (v) fn->ins[v].imm = want_true;
  return v;
}

/* The causes an earlier return hides. A barrier that a thread-dependent return explains first
 * (kl_divergence_explain cites the return before anything around the barrier) may also diverge
 * for a reason of its own: a branch or loop around it, or another return. Asked as the question
 * a reviewer asks, would it still diverge with those returns fixed: the IF around each return
 * that explains a barrier first is made a constant that rules the return out, uniformity is
 * computed again (once per lowering), and what then explains the barrier is a cause of its own
 * (kl_facts_barrier.alt). Values that differ only because a return made the code after it
 * divergent (a join after it, a struct updated under it) are uniform again in that computation,
 * so they are not taken for causes of their own. */
static void kl_facts_behind_returns(struct kl_facts_run *r, struct kl_ir_fn *fn,
                                    const struct kl_uniformity_launch *launch,
                                    const struct kl_scev *sc, const struct kl_facts_behind *bh,
                                    size_t nbh) {
  struct kl_facts *out = r->out;
  const char *buf = r->m->unit->buf;
  /* Each IF once, with its condition as it was. */
  uint32_t *ifs = kl_arena_alloc(fn->arena, (2 * nbh + 1) * sizeof *ifs), nifs = 0;
  for (size_t i = 0; i < nbh; i++) {
    uint32_t at = bh[i].cond_at;
    bool seen = false;
    for (uint32_t k = 0; k < nifs && !seen; k++) seen = ifs[2 * k] == at;
    if (seen || !at || fn->ins[at].op != KL_IR_IF || !fn->ins[at].nops) continue;
    /* The return in the IF's then block: a false condition rules it out; in its else block, a
     * true one. */
    bool in_then = kl_ir_within(fn, bh[i].ret, fn->ins[at].blk[0]);
    uint32_t k0 = kl_facts_const_cond(fn, !in_then);
    if (!k0) continue;
    ifs[2 * nifs] = at;
    ifs[2 * nifs + 1] = fn->ins[at].ops[0];
    nifs++;
    fn->ins[at].ops[0] = k0;
  }
  if (!nifs) return;
  struct kl_arena *ir = kl_facts_scratch(fn);
  struct kl_uniformity *u = kl_uniformity_compute_ext(fn, launch, sc, r->ext.ctx ? &r->ext : NULL);
  for (size_t i = 0; i < nbh; i++) {
    struct kl_facts_barrier *b = &out->barriers[bh[i].rec];
    enum kl_scope allowed = b->fn ? b->fn->barrier_scope : KL_SCOPE_THREADGROUP;
    if (!kl_uniformity_barrier_divergent(u, bh[i].v) || kl_divergence_dead(fn, bh[i].v) ||
        kl_uniformity_control(u, bh[i].v) <= allowed)
      continue;
    struct kl_divergence e;
    kl_divergence_explain(u, bh[i].v, allowed, buf, &e);
    if (e.kind == KL_DIV_NONE || !e.cond_at || e.branch == bh[i].ret ||
        b->nalt >= sizeof b->alt / sizeof b->alt[0])
      continue;
    struct kl_facts_cause *x = &b->alt[b->nalt++];
    memset(x, 0, sizeof *x);
    x->kind = e.kind;
    x->back_edge = e.back_edge;
    x->node = kl_facts_cond_node(fn->ins[e.cond_at].node);
    if (e.kind == KL_DIV_EXIT || (e.kind == KL_DIV_LOOP && e.back_edge))
      x->exit_stmt = fn->ins[e.branch].node;
    if (e.var) x->var = kl_arena_strdup(r->a, e.var);
    if (e.carried) x->carried = e.carried_at;
  }
  kl_facts_scratch_end(fn, ir);
  for (uint32_t k = 0; k < nifs; k++) fn->ins[ifs[2 * k]].ops[0] = ifs[2 * k + 1];
}

/* The device accesses of lowering fn into the table, and one more lowering of its kernel. */
/* One more lowering of fn's kernel. */
static void kl_facts_count(struct kl_facts_run *r, const struct kl_ir_fn *fn) {
  kl_facts_count_kernel(r, fn->kernel, 1);
}

void kl_facts_count_kernel(struct kl_facts_run *r, const struct kl_function *kernel, uint16_t n) {
  size_t k = 0;
  while (k < r->nlowered && r->lowered[k] != kernel) k++;
  if (k == r->nlowered) {
    KL_VEC_PUSH(r->a, r->lowered, r->nlowered, r->cap_lowered);
    KL_VEC_PUSH(r->a, r->nlowered_of, k, r->cap_nlowered);
    r->lowered[r->nlowered++] = kernel;
    r->nlowered_of[k] = 0;
  }
  r->nlowered_of[k] = r->nlowered_of[k] + n < UINT16_MAX ? r->nlowered_of[k] + n : UINT16_MAX;
}

static void kl_facts_take_access(struct kl_facts_run *r, const struct kl_ir_fn *fn,
                                 const struct kl_scev *sc) {
  kl_access_collect(r->a, fn, sc, r->settings, r->access);
  kl_facts_count(r, fn);
}

/* One kernel in one specialisation, alive only in this call: run the passes over it and keep
 * what the rules will ask, in the unit's arena. */
/* The device-access table's entries from index `first` on, or NULL while it is empty (no
 * offset may be applied to its null array). */
static const struct kl_access *kl_facts_table_at(const struct kl_facts_run *r, size_t first) {
  return r->access->v ? r->access->v + first : NULL;
}

/* The launch the passes over fn assume (zeroed where none is seen); whether one is known. */
static bool kl_facts_launch_of(const struct kl_facts_run *r, const struct kl_ir_fn *fn,
                               struct kl_uniformity_launch *launch) {
  bool known = fn->kernel && kl_facts_launch(r->m, fn->kernel, r->calls, r->ncalls, launch);
  if (!known) memset(launch, 0, sizeof *launch);
  launch->max_total = fn->kernel ? kl_facts_max_total(r->m, fn->kernel) : 0;
  return known || launch->max_total > 0;
}

/* Take fn, whose IR is that of the earlier lowering e was kept of, as kl_facts_take_new would:
 * e's additions again under fn's name, and the threadgroup races asked anew (their budgets and
 * the pairs already decided are the unit's, which an earlier lowering changed) -- or, when fn
 * was not lowered (bare), their budget spent as e's run spent it. False, with nothing taken,
 * when bounds-guard's list cannot take it so, or a bare fn's races would not go as e's. */
static bool kl_facts_again(struct kl_facts_run *r, struct kl_ir_fn *fn,
                           const struct kl_replay_entry *e, bool bare) {
  struct kl_facts *out = r->out;
  bool races = r->others || kl_facts_want(r, fn->kernel);
  if (bare && races && (!e->races_kept || r->tg.pairs < e->pairs)) return false;
  if (!r->access || !r->bg || !kl_bgaccess_again(r->a, r->bg, fn, e->bg, e->nbg)) return false;
  kl_facts_grow_bg(r, r->bg->n);
  size_t b0 = r->bg->n - e->nbg;
  if (e->nbg) {
    memcpy(out->guards + b0, e->guards, e->nbg * sizeof *e->guards);
    memcpy(out->bounds + b0, e->bounds, e->nbg * sizeof *e->bounds);
    if (e->covered) memcpy(out->covered + b0, e->covered, e->nbg);
  }
  struct kl_uniformity_launch launch;
  kl_facts_launch_of(r, fn, &launch);
  out->nfns++;
  kl_replay_access(r->a, e, r->access, fn->inst);
  kl_facts_count(r, fn);
  if (!races) return true;
  if (fn->truncated) out->incomplete = r->k_incomplete = true;
  if (bare)
    r->tg.pairs -= e->pairs;
  else if (!kl_facts_cut_barrier(r, fn))
    kl_facts_take_tg_races(r, fn, kl_scev_run(fn->arena, fn), &launch);
  for (size_t i = 0; i < e->nbarriers; i++) {
    KL_VEC_PUSH(r->a, out->barriers, out->nbarriers, r->cap_barriers);
    struct kl_facts_barrier *b = &out->barriers[out->nbarriers];
    *b = e->barriers[i];
    b->seq = (uint32_t)out->nbarriers++;
    b->run = (uint32_t)out->nfns;
    if (b->names) b->names = kl_replay_names(r->a, fn, &b->nnames);
  }
  return true;
}

static void kl_facts_take_new(struct kl_facts_run *r, struct kl_ir_fn *fn) {
  struct kl_facts *out = r->out;
  struct kl_uniformity_launch launch;
  bool known = kl_facts_launch_of(r, fn, &launch);
  struct kl_scev *sc = kl_scev_run(fn->arena, fn);
  out->nfns++;
  struct kl_arena *ir = fn->arena;
  if (r->access && !r->others && !kl_facts_want(r, fn->kernel)) {
    /* Only the device-access table (and bounds-guard's list) is asked: no uniformity, no
     * barriers. */
    size_t tfirst = r->access->n;
    kl_facts_take_access(r, fn, sc);
    if (r->bg) {
      kl_facts_scratch(fn);
      kl_facts_take_bg(r, fn, sc, &launch, kl_facts_table_at(r, tfirst), r->access->n - tfirst);
      kl_facts_scratch_end(fn, ir);
    }
    return;
  }
  /* The uniformity pass's tables are read until the barriers are explained; only they read
   * them, so a lowering with no barrier takes no uniformity pass. */
  bool any_barrier = false;
  for (uint32_t v = 1; v < fn->nins && !any_barrier; v++)
    any_barrier = fn->ins[v].op == KL_IR_BARRIER;
  kl_facts_scratch(fn);
  struct kl_arena *ua = fn->arena;
  struct kl_uniformity *u =
      any_barrier
          ? kl_uniformity_compute_ext(fn, known ? &launch : NULL, sc, r->ext.ctx ? &r->ext : NULL)
          : NULL;
  fn->arena = ir;
  /* A lowering cut short (a cap, a helper left un-inlined) has not seen the whole kernel: what
   * it says of a barrier or a pair may miss the code that makes it divergent or racy. */
  if (fn->truncated) out->incomplete = r->k_incomplete = true;
  if (!kl_facts_cut_barrier(r, fn)) {
    kl_facts_scratch(fn);
    kl_facts_take_tg_races(r, fn, sc, &launch);
    kl_facts_scratch_end(fn, ir);
  }
  size_t tfirst = r->access ? r->access->n : 0;
  if (r->access) kl_facts_take_access(r, fn, sc);
  if (r->bg) {
    kl_facts_scratch(fn);
    kl_facts_take_bg(r, fn, sc, &launch, kl_facts_table_at(r, tfirst), r->access->n - tfirst);
    kl_facts_scratch_end(fn, ir);
  }
  fn->arena = ua;
  struct kl_facts_behind *bh = NULL;
  size_t nbh = 0, cap_bh = 0;
  for (uint32_t v = 1; v < fn->nins; v++) {
    if (fn->ins[v].op != KL_IR_BARRIER) continue;
    KL_VEC_PUSH(r->a, out->barriers, out->nbarriers, r->cap_barriers);
    struct kl_facts_barrier *b = &out->barriers[out->nbarriers];
    memset(b, 0, sizeof *b);
    b->at = ts_node_start_byte(fn->ins[v].node);
    b->seq = (uint32_t)out->nbarriers++;
    b->run = (uint32_t)out->nfns;
    b->call = fn->ins[v].node;
    b->fn = fn->ins[v].fn;
    b->kernel = fn->kernel;
    b->nreach = 1;
    b->ctrl = kl_uniformity_control(u, v);
    b->divergent = kl_uniformity_barrier_divergent(u, v);
    /* In a branch this lowering's constants rule out, no thread reaches it. */
    b->dead = kl_divergence_dead(fn, v);
    if (!b->divergent || b->dead) continue;
    b->live_divergent = true;
    struct kl_divergence d;
    kl_facts_explain(r->a, r->m->unit->buf, u, v, b, &d);
    if (d.kind == KL_DIV_RETURN && !d.back_edge) {
      KL_VEC_PUSH(ir, bh, nbh, cap_bh);
      bh[nbh++] = (struct kl_facts_behind){(size_t)(b - out->barriers), v, d.branch, d.cond_at};
    }
  }
  /* The first uniformity pass is gone before the second (behind the returns) runs. */
  fn->arena = ir;
  kl_arena_delete(ua);
  if (nbh) kl_facts_behind_returns(r, fn, known ? &launch : NULL, sc, bh, nbh);
}

/* One kernel in one specialisation: a lowering whose IR an earlier one of its kernel had adds
 * what that one added; any other takes the passes, and what it adds is kept. */
static void kl_facts_take(void *ctx, struct kl_ir_fn *fn) {
  struct kl_facts_run *r = ctx;
  uint32_t ord = kl_replay_next(&r->replay, fn->kernel);
  uint64_t h = kl_ir_hash(fn);
  const struct kl_replay_entry *e = kl_replay_find(&r->replay, fn->kernel, h);
  if (e && kl_facts_again(r, fn, e, false)) {
    kl_replay_alias(&r->replay, ord, e);
    return;
  }
  struct kl_facts *out = r->out;
  struct kl_replay_mark m = {out->nbarriers, r->access ? r->access->n : 0, r->bg ? r->bg->n : 0,
                             r->bg ? r->bg->nruns : 0};
  uint32_t pairs = r->tg.pairs;
  kl_facts_take_new(r, fn);
  struct kl_replay_entry *k =
      e ? NULL : kl_replay_keep(&r->replay, fn->kernel, h, ord, m, r->access, r->bg);
  if (!k) return;
  k->nbarriers = out->nbarriers - m.nbarriers;
  if (k->nbarriers)
    k->barriers = kl_replay_copy(&r->replay, out->barriers + m.nbarriers, k->nbarriers,
                                 sizeof *k->barriers);
  if (k->nbg) {
    k->guards = kl_replay_copy(&r->replay, out->guards + m.nbg, k->nbg, sizeof *k->guards);
    k->bounds = kl_replay_copy(&r->replay, out->bounds + m.nbg, k->nbg, sizeof *k->bounds);
    k->covered = kl_replay_copy(&r->replay, out->covered + m.nbg, k->nbg, 1);
  }
  /* Run whole: no budget ran out, and the memo kept every pair decided. */
  k->pairs = pairs - r->tg.pairs;
  k->races_kept = !fn->truncated && r->tg.pairs && r->tg.valuations &&
                  kl_race_memo_room(r->tg.memo);
}

/* A specialisation whose lowering would repeat lowering `of` of its kernel, not lowered
 * (kl_ir_lower_again_fn). */
static bool kl_facts_take_again(void *ctx, struct kl_ir_fn *fn, uint32_t of) {
  struct kl_facts_run *r = ctx;
  const struct kl_replay_entry *e = kl_replay_of(&r->replay, fn->kernel, of);
  if (!e || !kl_facts_again(r, fn, e, true)) return false;
  kl_replay_alias(&r->replay, kl_replay_next(&r->replay, fn->kernel), e);
  return true;
}

/* The callee name of call c of the unit (`f`, `obj.run`'s `run`, `Q::f`'s `f`) in buf[0, cap),
 * or false. */
static bool kl_facts_callee_name(const struct kl_model *m, TSNode c, char *buf, size_t cap) {
  TSNode fu = kl_node_field(c, "function");
  if (kl_node_is_kind(fu, KL_KIND_FIELD_EXPRESSION)) fu = kl_node_field(fu, "field");
  TSNode name = kl_model_name_of(fu);
  if (kl_node_null(name)) return false;
  uint32_t s = ts_node_start_byte(name), e = ts_node_end_byte(name);
  if (e - s >= cap) return false;
  memcpy(buf, m->unit->buf + s, e - s);
  buf[e - s] = 0;
  return true;
}

/* Per function of the unit, whether running it may reach a barrier: it calls one, or a function
 * that may (its resolved callee, or for a call the model leaves unresolved, a method called on
 * an object, any function of the unit of that name). Returns whether any kernel may. */
static bool kl_facts_barrier_reach(struct kl_arena *a, const struct kl_model *m, bool **out) {
  size_t n = m->nfunctions;
  bool *reach = kl_arena_alloc(a, n + 1);
  memset(reach, 0, n + 1);
  *out = reach;
  char nm[96];
  for (size_t i = 0; i < n; i++) {
    const struct kl_function *fn = &m->functions[i];
    for (size_t k = 0; k < fn->ncalls && !reach[i]; k++) {
      if (!kl_facts_callee_name(m, fn->calls[k], nm, sizeof nm)) continue;
      const struct kl_msl_fn *bf = kl_msl_fn(nm);
      reach[i] = bf && bf->kind == KL_FN_BARRIER;
    }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; i++) {
      if (reach[i]) continue;
      const struct kl_function *fn = &m->functions[i];
      for (size_t k = 0; k < fn->ncalls && !reach[i]; k++) {
        const struct kl_function *t = fn->call_targets ? fn->call_targets[k] : NULL;
        if (t) {
          reach[i] = reach[t - m->functions];
          continue;
        }
        if (!kl_facts_callee_name(m, fn->calls[k], nm, sizeof nm)) continue;
        for (size_t j = 0; j < n && !reach[i]; j++)
          reach[i] = reach[j] && m->functions[j].name && !strcmp(m->functions[j].name, nm);
      }
      changed |= reach[i];
    }
  }
  bool any = false;
  for (size_t i = 0; i < n; i++) any |= reach[i] && m->functions[i].is_kernel;
  return any;
}

/* kl_uniformity_ext's question, of the headers' definitions (ctx the run). */
static enum kl_scope kl_facts_ext_scope(void *ctx, const char *name) {
  struct kl_facts_run *r = ctx;
  bool found;
  enum kl_scope sc = kl_xdefs_result_scope(r->xdefs, name, &found);
  if (r->keep) {
    KL_VEC_PUSH(r->a, r->asked, r->nasked, r->cap_asked);
    KL_VEC_PUSH(r->a, r->answers, r->nasked, r->cap_answers);
    r->asked[r->nasked] = kl_arena_strdup(r->a, name);
    r->answers[r->nasked++] = sc;
  }
  return sc;
}

void kl_facts_compute(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                      size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                      const struct kl_settings *s, struct kl_facts *out) {
  kl_facts_compute_x(a, m, calls, ncalls, xinsts, nxinsts, s, NULL, out);
}

void kl_facts_compute_x(struct kl_arena *a, const struct kl_model *m,
                        const struct kl_dispatch *calls, size_t ncalls,
                        const struct kl_inst *xinsts, size_t nxinsts, const struct kl_settings *s,
                        struct kl_xdefs *xdefs, struct kl_facts *out) {
  kl_facts_compute_kept(a, m, calls, ncalls, xinsts, nxinsts, s, xdefs, NULL, out);
}

void kl_facts_compute_kept(struct kl_arena *a, const struct kl_model *m,
                           const struct kl_dispatch *calls, size_t ncalls,
                           const struct kl_inst *xinsts, size_t nxinsts,
                           const struct kl_settings *s, struct kl_xdefs *xdefs,
                           struct kl_factkeep *keep, struct kl_facts *out) {
  memset(out, 0, sizeof *out);
  /* barrier-divergence asks of every barrier: the kernels that may reach one take the
   * uniformity pass. threadgroup-race asks of every kernel of a unit that names threadgroup
   * memory. bounds-guard's list asks of every kernel, but none of these passes. */
  bool asked = false;
  for (size_t i = 0; i < m->nfunctions && !asked; i++) {
    const struct kl_function *fn = &m->functions[i];
    for (size_t k = 0; k < fn->nparams; k++) asked |= fn->params[k].as == KL_AS_THREADGROUP;
    for (size_t k = 0; k < fn->nlocals; k++) asked |= fn->locals[k].as == KL_AS_THREADGROUP;
  }
  struct kl_facts_run run = {.a = a, .m = m, .calls = calls, .ncalls = ncalls, .out = out,
                             .settings = s, .xdefs = xdefs};
  run.ext = (struct kl_uniformity_ext){kl_facts_ext_scope, xdefs ? &run : NULL};
  /* Only a buffer with a conditional has branches to tell apart. */
  bool conditional = false;
  for (uint32_t i = 0; m->unit && m->unit->buf && i + 3 <= m->unit->len && !conditional; i++)
    conditional = m->unit->buf[i] == '#' && m->unit->buf[i + 1] == 'i' &&
                  m->unit->buf[i + 2] == 'f';
  if (conditional) {
    struct kl_pp pp;
    kl_preproc_scan(a, m->unit->buf, m->unit->len, &pp);
    kl_preproc_arms(a, &pp, &run.arms);
  }
  bool *reach;
  kl_facts_barrier_reach(a, m, &reach);
  run.reach = reach;
  /* The device-access table asks of every kernel. */
  struct kl_access_table table = {NULL, 0, 0};
  run.access = &table;
  out->has_access = true;
  /* bounds-guard asks whether the launch keeps an unguarded access in bounds: only where some
   * launch in the run says something of a threadgroup's size or counts its grid. */
  bool launches = false;
  for (size_t i = 0; i < ncalls && !launches; i++) {
    launches = calls[i].tg_present && calls[i].tg_dims;
    for (int c = 0; c < 3; c++) launches |= calls[i].grid_count[c].known;
  }
  /* bounds-guard's own list, with whether the launch keeps each access in bounds asked only
   * where some launch says something of a threadgroup's size or counts its grid. */
  struct kl_bgaccess_list list;
  memset(&list, 0, sizeof list);
  run.bg = &list;
  run.cover_bg = launches;
  /* Every kernel is lowered for the table; the other questions are asked of those a question
   * is asked in (kl_facts_want). */
  run.others = asked;
  run.tg.pairs = KL_FACTS_RACE_PAIRS;
  run.tg.valuations = KL_FACTS_RACE_VALUATIONS;
  /* The language server's runs keep theirs (kl_factkeep_begin). */
  run.tg.memo = keep ? NULL : kl_race_memo_new();
  if (keep) {
    run.keep = keep;
    kl_factkeep_begin(&run, nxinsts);
  }
  uint64_t vals0 = 0, asked0 = 0;
  kl_race_memo_stats(run.tg.memo, &vals0, &asked0, NULL);
  uint64_t ins = kl_ir_lower_some(m, calls, ncalls, xinsts, nxinsts, s,
                                  keep ? kl_factkeep_kernel : NULL, kl_facts_take,
                                  kl_facts_take_again, &run);
  kl_replay_free(&run.replay);
  if (keep && !kl_factkeep_end(&run, ins)) {
    /* A kernel taken from the version before, or a pair the memo of the versions before
     * answered, may have been decided otherwise in a fresh run (a budget the unit shares ran
     * short, a memo full): the whole unit again, lowered with an empty memo. */
    kl_facts_compute_kept(a, m, calls, ncalls, xinsts, nxinsts, s, xdefs, keep, out);
    return;
  }
  uint64_t vals = 0, asked_pairs = 0;
  kl_race_memo_stats(run.tg.memo, &vals, &asked_pairs, NULL);
  out->race_valuations = (size_t)(vals - vals0);
  out->race_asked = (size_t)(asked_pairs - asked0);
  if (!keep) kl_race_memo_delete(run.tg.memo);
  struct kl_facts_barrier *bs = out->barriers;
  size_t n = out->nbarriers;
  if (n) qsort(bs, n, sizeof *bs, kl_facts_cmp);
  /* One entry per call: divergent when any lowering says so, explained by the lowering with
   * the widest control (the first of equals); each lowering counted once, however many times it
   * inlines the helper holding the call. */
  size_t w = 0;
  uint32_t last_reach = UINT32_MAX, last_flag = UINT32_MAX;
  for (size_t i = 0; i < n; i++) {
    /* A copy: the merged entry may be written over this very slot. */
    const struct kl_facts_barrier xv = bs[i], *x = &xv;
    if (!w || bs[w - 1].at != x->at) {
      bs[w] = *x;
      bs[w].nreach = bs[w].nflag = 0;
      bs[w].nnames = 0;
      bs[w].live_divergent = false;
      last_reach = last_flag = UINT32_MAX;
      w++;
    }
    struct kl_facts_barrier *g = &bs[w - 1];
    g->divergent |= x->divergent;
    if (x->dead) continue;
    if (x->run != last_reach) g->nreach++, last_reach = x->run;
    if (!x->live_divergent) continue;
    /* The explanation of the lowering with the widest control, the first of equals. */
    if (!g->live_divergent || x->ctrl > g->ctrl) {
      struct kl_facts_barrier had = *g;
      *g = *x;
      g->seq = had.seq, g->divergent = had.divergent;
      g->nreach = had.nreach, g->nflag = had.nflag;
      g->names = had.names, g->nnames = had.nnames;
    }
    g->live_divergent = true;
    if (x->run == last_flag) continue;
    last_flag = x->run;
    g->nflag++;
    const char **all = kl_arena_alloc(a, (g->nnames + x->nnames + 1) * sizeof *all);
    if (g->nnames) memcpy(all, g->names, g->nnames * sizeof *all);
    if (x->nnames) memcpy(all + g->nnames, x->names, x->nnames * sizeof *all);
    g->names = all;
    g->nnames += x->nnames;
  }
  out->nbarriers = w;
  for (size_t i = 0; i < table.n; i++) {
    struct kl_access *x = &table.v[i];
    for (size_t k = 0; k < run.nlowered; k++)
      if (run.lowered[k] == x->kernel) x->ninsts = run.nlowered_of[k];
  }
  out->access = table.v;
  out->naccess = table.n;
  kl_bgaccess_finish(&list);
  out->has_bg = true;
  out->bg = list.v;
  out->nbg = out->nguards = out->naccesses = list.n;
  out->ncovered = launches ? list.n : 0;
  if (!list.n) out->guards = NULL, out->bounds = NULL, out->covered = NULL;
}
