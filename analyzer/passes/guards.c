/* Bounds guards over the IR (analyzer/passes/guards.h). */
#include "analyzer/passes/guards.h"

#include <math.h>
#include <string.h>

#include "analyzer/passes/divergence.h"
#include "analyzer/passes/valnum.h"

static struct kl_affine kl_gd_form(const struct kl_guards *g, uint32_t v, int depth);

/* ---- Values computed from thread coordinates ------------------------------------------------ */

/* Whether an instruction of op defines a value other values are computed from. */
static bool kl_gd_valued(uint8_t op) {
  return op != KL_IR_IF && op != KL_IR_LOOP && op != KL_IR_STORE && op != KL_IR_BARRIER &&
         op != KL_IR_BREAK && op != KL_IR_CONTINUE && op != KL_IR_RETURN && op != KL_IR_NOP;
}

/* The thread's own ALLOC that address v points into (through INDEX, MEMBER, casts), or 0. An
 * array of pointers the lowering keeps as a value (`device const float *rows[4]`, an UNDEF its
 * elements are stored through) is one too. */
static uint32_t kl_gd_private(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; v && v < f->nins && d < 32; d++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if (in->op == KL_IR_ALLOC) return in->as == KL_AS_THREAD ? v : 0;
    if (in->op == KL_IR_UNDEF) return d > 0 ? v : 0;
    if ((in->op != KL_IR_INDEX && in->op != KL_IR_MEMBER && in->op != KL_IR_CAST) || !in->nops)
      return 0;
    v = in->ops[0];
  }
  return 0;
}

/* A field's name as kl_gd_fields compares it: a vector lane by its xyzw name, "" for a swizzle
 * of several lanes (the whole). */
static const char *kl_gd_lane_name(const char *nm) {
  static const char *const lanes[4] = {"x", "y", "z", "w"};
  if (strspn(nm, "xyzwrgba") != strlen(nm)) return nm;
  return nm[0] && !nm[1] ? lanes[(strchr("xyzwrgba", nm[0]) - "xyzwrgba") % 4] : "";
}

/* Number the fields of the structs in thread memory (kl_guards.field): `t.row` and `t.row`
 * elsewhere are one field, `t.col` another, so what one field holds is not read from another. */
static void kl_gd_fields(struct kl_guards *g, struct kl_arena *a) {
  const struct kl_ir_fn *f = g->f;
  uint32_t *first = kl_arena_alloc(a, (f->nins + 1) * sizeof *first);
  uint32_t *next = kl_arena_alloc(a, (f->nins + 1) * sizeof *next);
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *i = &f->ins[v];
    if (i->nops < 1 || !i->ops[0] || i->ops[0] >= f->nins) continue;
    uint32_t base = i->ops[0];
    if ((i->op == KL_IR_INDEX || i->op == KL_IR_MEMBER || i->op == KL_IR_CAST) && g->field[base]) {
      g->field[v] = g->field[base]; /* inside a field: `t.a[k]`, `t.a.x` */
      continue;
    }
    const struct kl_ir_ins *r = &f->ins[base];
    if (i->op != KL_IR_MEMBER || !i->name || r->op != KL_IR_ALLOC || r->as != KL_AS_THREAD)
      continue;
    const char *nm = kl_gd_lane_name(i->name);
    if (!*nm) continue;
    uint32_t m = first[base];
    while (m && strcmp(kl_gd_lane_name(f->ins[m].name), nm)) m = next[m];
    if (!m) {
      next[v] = first[base];
      first[base] = m = v;
    }
    g->field[v] = m;
  }
}

/* Where kl_guards.stored keeps what is stored at address addr, of a thread's own ALLOC al: its
 * field's first MEMBER when addr is in one, else al. */
static uint32_t kl_gd_slot(const struct kl_guards *g, uint32_t addr, uint32_t al) {
  return al && g->field[addr] ? g->field[addr] : al;
}

/* What value v, a load from a thread's own array, was stored there (kl_guards.stored), or 0: in
 * a field, what was stored in that field, or else in the whole struct; the whole, what was
 * stored in it, or else in any of its fields. */
static uint32_t kl_gd_carried(const struct kl_guards *g, uint32_t v) {
  const struct kl_ir_fn *f = g->f;
  /* An element of a pointer array kept as a value is the pointer itself. */
  if (v && f->ins[v].op == KL_IR_INDEX && f->ins[v].nops &&
      f->ins[f->ins[v].ops[0]].op == KL_IR_UNDEF)
    return g->stored[f->ins[v].ops[0]];
  if (!v || f->ins[v].op != KL_IR_LOAD || !f->ins[v].nops) return 0;
  uint32_t addr = f->ins[v].ops[0], al = kl_gd_private(f, addr);
  if (!al) return 0;
  uint32_t slot = kl_gd_slot(g, addr, al);
  if (slot != al) return g->stored[slot] ? g->stored[slot] : g->stored[al];
  return g->stored[al] ? g->stored[al] : g->anyfield[al];
}

static bool kl_gd_same_element(const struct kl_guards *g, uint32_t a, uint32_t b);
static bool kl_gd_unwritten(const struct kl_guards *g, uint32_t slot, uint32_t al, uint32_t a,
                            uint32_t b);

/* Whether loads a and b read one field (or array) of a thread's own memory stored once, so
 * hold the same value (`t.col` in a check and again in an index), or one element of a thread's
 * array with no store into the array after the first of them (`cols[i] < n ? x[cols[i]] : 0`). */
static bool kl_gd_same_load(const struct kl_guards *g, uint32_t a, uint32_t b) {
  const struct kl_ir_fn *f = g->f;
  if (!a || !b || f->ins[a].op != KL_IR_LOAD || f->ins[b].op != KL_IR_LOAD || !f->ins[a].nops ||
      !f->ins[b].nops)
    return false;
  uint32_t aa = f->ins[a].ops[0], ab = f->ins[b].ops[0];
  uint32_t al = kl_gd_private(f, aa);
  if (!al || al != kl_gd_private(f, ab) || g->escaped[al]) return false;
  if (f->ins[aa].op == KL_IR_INDEX || f->ins[ab].op == KL_IR_INDEX) {
    /* One element of an array (`offs[ii]` in a check and again in the index), with every store
     * into the array made before both: a later one could come between them. */
    return kl_gd_same_element(g, aa, ab) && kl_gd_unwritten(g, al, al, a < b ? a : b, f->nins);
  }
  uint32_t slot = kl_gd_slot(g, aa, al);
  return slot == kl_gd_slot(g, ab, al) && g->nstores[slot] == 1 && (slot == al || !g->nstores[al]);
}

/* dep of every value; a loop's back edge is followed by walking again until nothing changes. */
static void kl_gd_deps(struct kl_guards *g) {
  const struct kl_ir_fn *f = g->f;
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *in = &f->ins[v];
    /* An address of the thread's memory that leaves the loads and stores the pass sees: what is
     * stored there is no longer known from the stores alone. */
    for (uint32_t k = 0; k < in->nops; k++) {
      uint32_t o = in->ops[k];
      if (!o || o >= f->nins) continue;
      uint8_t oo = f->ins[o].op;
      if (oo != KL_IR_ALLOC && oo != KL_IR_INDEX && oo != KL_IR_MEMBER && oo != KL_IR_CAST)
        continue;
      bool through = k == 0 && (in->op == KL_IR_LOAD || in->op == KL_IR_STORE ||
                                in->op == KL_IR_INDEX || in->op == KL_IR_MEMBER ||
                                in->op == KL_IR_CAST);
      uint32_t al = through ? 0 : kl_gd_private(f, o);
      if (al && f->ins[al].op == KL_IR_ALLOC) g->escaped[al] = 1;
    }
    uint32_t al = in->op == KL_IR_STORE && in->nops == 2 ? kl_gd_private(f, in->ops[0]) : 0;
    uint32_t slot = al ? kl_gd_slot(g, in->ops[0], al) : 0;
    if (slot) g->next_store[v] = g->first_store[slot], g->first_store[slot] = v;
    if (slot && !g->stored[slot]) g->stored[slot] = in->ops[1];
    if (slot && g->nstores[slot] < 2) g->nstores[slot]++;
    if (slot != al && !g->anyfield[al]) g->anyfield[al] = in->ops[1];
  }
  bool changed = true;
  for (int round = 0; round < 4 && changed; round++) {
    changed = false;
    for (uint32_t v = 1; v < f->nins; v++) {
      const struct kl_ir_ins *in = &f->ins[v];
      uint8_t d = 0;
      if (in->op == KL_IR_COORD) {
        if (kl_scev_scope(g->s, v) != KL_SCOPE_UNIFORM) {
          d = KL_GUARDS_THREAD | (in->imm == 1   ? KL_GUARDS_Y
                                  : in->imm == 2 ? KL_GUARDS_Z
                                                 : KL_GUARDS_X);
          const char *cn = in->coord ? in->coord->name : NULL;
          if (!cn || (strcmp(cn, "thread_index_in_simdgroup") &&
                      strcmp(cn, "thread_index_in_quadgroup")))
            d |= KL_GUARDS_WIDE;
        }
      } else if (kl_gd_valued(in->op)) {
        for (uint32_t k = 0; k < in->nops; k++)
          if (in->ops[k] && in->ops[k] < f->nins) d |= g->dep[in->ops[k]];
        uint32_t c = kl_gd_carried(g, v);
        if (c) d |= g->dep[c];
        /* What another thread wrote, or a call returns, at a lane's own slot may be anything:
         * only a thread's own memory carries what was stored (above). */
        bool shared = ((in->op == KL_IR_LOAD || in->op == KL_IR_ATOMIC) && in->nops &&
                       !kl_gd_private(f, in->ops[0])) ||
                      in->op == KL_IR_CALL;
        if (shared && (d & KL_GUARDS_THREAD)) d |= KL_GUARDS_WIDE;
      } else if (in->op == KL_IR_STORE && in->nops == 2) {
        /* The first store of a thread-derived value into a thread's array is the one followed. */
        uint32_t al = kl_gd_private(f, in->ops[0]), slot = kl_gd_slot(g, in->ops[0], al);
        uint32_t *at[2] = {slot ? &g->stored[slot] : NULL, slot != al ? &g->anyfield[al] : NULL};
        for (int k = 0; k < 2; k++)
          if (at[k] && *at[k] != in->ops[1] && !(g->dep[*at[k]] & KL_GUARDS_THREAD) &&
              (g->dep[in->ops[1]] & KL_GUARDS_THREAD))
            *at[k] = in->ops[1], changed = true;
      }
      if (d != g->dep[v]) g->dep[v] = d, changed = true;
    }
  }
}

/* Whether v is the same for every thread: as scalar evolution says, or a value the lowering does
 * not model (a field of a struct it cannot see, `args.ne01`) read from such values alone. */
static bool kl_gd_uniform_at(const struct kl_guards *g, uint32_t v, int depth) {
  if (!v || v >= g->f->nins) return true;
  if (kl_scev_scope(g->s, v) == KL_SCOPE_UNIFORM) return true;
  const struct kl_ir_ins *in = &g->f->ins[v];
  if ((g->dep[v] & KL_GUARDS_THREAD) || depth > 4) return false;
  if (in->op != KL_IR_OPAQUE && in->op != KL_IR_BINOP && in->op != KL_IR_CAST &&
      in->op != KL_IR_UNOP && in->op != KL_IR_LOAD)
    return false;
  if (in->op == KL_IR_LOAD && in->as != KL_AS_CONSTANT) return false;
  for (uint32_t k = 0; k < in->nops; k++)
    if (!kl_gd_uniform_at(g, in->ops[k], depth + 1)) return false;
  return true;
}

static bool kl_gd_uniform(const struct kl_guards *g, uint32_t v) {
  return kl_gd_uniform_at(g, v, 0);
}

/* ---- Conditions that guard something -------------------------------------------------------- */

/* Whether block b (and what nests in it) holds an instruction of op1 or op2 or op3. */
static bool kl_gd_holds(const struct kl_ir_fn *f, uint32_t b, uint8_t op1, uint8_t op2, uint8_t op3,
                        int depth) {
  if (!b || depth > 16) return false;
  const struct kl_ir_block *bl = &f->blocks[b];
  for (uint32_t i = 0; i < bl->n; i++) {
    const struct kl_ir_ins *in = &f->ins[bl->ins[i]];
    if (in->op == op1 || in->op == op2 || in->op == op3) return true;
    if (in->op == KL_IR_IF || in->op == KL_IR_LOOP)
      for (int k = 0; k < 3; k++)
        if (kl_gd_holds(f, in->blk[k], op1, op2, op3, depth + 1)) return true;
  }
  return false;
}

static bool kl_gd_exits(const struct kl_ir_fn *f, uint32_t b) {
  return kl_gd_holds(f, b, KL_IR_RETURN, KL_IR_BREAK, KL_IR_CONTINUE, 0);
}

/* Whether load v reads an element (`x[i]`, `*p`), not a field of a struct argument (`args.m0`):
 * only an element is what a bound check protects. */
static bool kl_gd_element_load(const struct kl_ir_fn *f, uint32_t v) {
  if (!v || f->ins[v].op != KL_IR_LOAD || !f->ins[v].nops) return false;
  uint32_t a = f->ins[v].ops[0];
  for (int d = 0; a && d < 16; d++) {
    const struct kl_ir_ins *in = &f->ins[a];
    if (in->op == KL_IR_INDEX) return true;
    if (in->op == KL_IR_ARG) return d == 0 && in->var && in->var->is_pointer;
    if ((in->op != KL_IR_MEMBER && in->op != KL_IR_CAST) || !in->nops) return true;
    a = in->ops[0];
  }
  return true;
}

/* Whether block b (and what nests in it) stores, or reads an element (kl_gd_element_load); of
 * the thread's own variables and arrays too when own is set. */
static bool kl_gd_accesses(const struct kl_ir_fn *f, uint32_t b, bool own, int depth) {
  if (!b || depth > 16) return false;
  const struct kl_ir_block *bl = &f->blocks[b];
  for (uint32_t i = 0; i < bl->n; i++) {
    const struct kl_ir_ins *in = &f->ins[bl->ins[i]];
    bool mine = (in->op == KL_IR_STORE || in->op == KL_IR_LOAD) && in->as == KL_AS_THREAD;
    if ((own || !mine) && (in->op == KL_IR_STORE || in->op == KL_IR_ATOMIC ||
                           (in->op == KL_IR_LOAD && kl_gd_element_load(f, bl->ins[i]))))
      return true;
    if (in->op == KL_IR_IF || in->op == KL_IR_LOOP)
      for (int k = 0; k < 3; k++)
        if (kl_gd_accesses(f, in->blk[k], own, depth + 1)) return true;
  }
  return false;
}

/* The addresses stored to in block b from position `from` on (nested too), at most 8, into at;
 * returns the count (8 when there are more). */
static int kl_gd_stores(const struct kl_ir_fn *f, uint32_t b, uint32_t from, uint32_t *at, int n,
                        int depth) {
  if (!b || depth > 16) return n;
  const struct kl_ir_block *bl = &f->blocks[b];
  for (uint32_t i = from; i < bl->n && n < 8; i++) {
    const struct kl_ir_ins *in = &f->ins[bl->ins[i]];
    if (in->op == KL_IR_STORE && in->nops) at[n++] = in->ops[0];
    if (in->op == KL_IR_IF || in->op == KL_IR_LOOP)
      for (int k = 0; k < 3; k++) n = kl_gd_stores(f, in->blk[k], 0, at, n, depth + 1);
  }
  return n;
}

/* Whether addresses a and b name the same element: equal values, or one root at offsets equal
 * once loop counters are read as their start plus a multiple of their step (two loops that walk
 * a row alike, `for (i = lid; i < n; i += tg) drow[i]`). */
static uint32_t kl_gd_step(const struct kl_guards *g, uint32_t a, uint32_t *idx);

/* Whether indices x and y take the same values: equal, or counters of two loops that start at
 * equal values and step by equal amounts (`for (i0 = lid; ...; i0 += ntg)` twice). */
static bool kl_gd_same_index(const struct kl_guards *g, uint32_t x, uint32_t y) {
  if (x == y || kl_valnum_equal(g->f, g->s, x, y)) return true;
  const struct kl_scev_atom *ax = kl_scev_rec(g->s, x), *ay = kl_scev_rec(g->s, y);
  if (!ax || !ay || !kl_valnum_equal(g->f, g->s, ax->start, ay->start)) return false;
  if (ax->step_value || ay->step_value)
    return ax->step_value && ay->step_value &&
           kl_valnum_equal(g->f, g->s, ax->step_value, ay->step_value);
  return kl_affine_equal(ax->step, ay->step);
}

/* Whether addresses a and b are made the same way, step by step down to one root, with indices
 * that take the same values (kl_gd_same_index). */
static bool kl_gd_same_chain(const struct kl_guards *g, uint32_t a, uint32_t b) {
  for (int d = 0; a && b && d < 32; d++) {
    if (a == b || kl_valnum_equal(g->f, g->s, a, b)) return true;
    uint32_t ia, ib;
    uint32_t na = kl_gd_step(g, a, &ia), nb = kl_gd_step(g, b, &ib);
    if (!na || !nb || !ia != !ib || (ia && !kl_gd_same_index(g, ia, ib))) return false;
    if (g->f->ins[a].op != g->f->ins[b].op) return false;
    a = na, b = nb;
  }
  return false;
}

static bool kl_gd_same_element(const struct kl_guards *g, uint32_t a, uint32_t b) {
  if (kl_valnum_equal(g->f, g->s, a, b) || kl_gd_same_chain(g, a, b)) return true;
  uint32_t ra, rb;
  struct kl_affine oa, ob;
  if (!kl_scev_address(g->s, a, &ra, &oa) || !kl_scev_address(g->s, b, &rb, &ob) || ra != rb)
    return false;
  oa = kl_scev_expand(g->s, oa);
  ob = kl_scev_expand(g->s, ob);
  return oa.known && ob.known && kl_affine_equal(oa, ob);
}

/* Whether every address of a[0..na) is one of b[0..nb), at the same element. */
static bool kl_gd_stores_in(const struct kl_guards *g, const uint32_t *a, int na, const uint32_t *b,
                            int nb) {
  for (int i = 0; i < na; i++) {
    bool same = false;
    for (int j = 0; j < nb && !same; j++) same = kl_gd_same_element(g, a[i], b[j]);
    if (!same) return false;
  }
  return true;
}

/* Whether IF v only picks what is stored: both ways out of it store to the same elements (`if (i
 * < n) dst[i] = src[i]; else dst[i] = 0;`); with no else, a then block that exits has the rest
 * of the enclosing block as its other way (a pad kernel's copy, return, then zero fill). */
static bool kl_gd_selects_value(const struct kl_guards *g, uint32_t v) {
  const struct kl_ir_fn *f = g->f;
  const struct kl_ir_ins *in = &f->ins[v];
  uint32_t a[8], b[8];
  int na = kl_gd_stores(f, in->blk[0], 0, a, 0, 0), nb = 0;
  bool other = in->blk[1] && f->blocks[in->blk[1]].n;
  if (!other) {
    if (!kl_gd_exits(f, in->blk[0])) return false;
    const struct kl_ir_block *bl = &f->blocks[in->block];
    uint32_t pos = 0;
    while (pos < bl->n && bl->ins[pos] != v) pos++;
    nb = kl_gd_stores(f, in->block, pos + 1, b, 0, 0);
  } else {
    if (kl_gd_exits(f, in->blk[0]) || kl_gd_exits(f, in->blk[1])) return false;
    nb = kl_gd_stores(f, in->blk[1], 0, b, 0, 0);
  }
  if (!na || !nb || na == 8 || nb == 8) return false;
  return kl_gd_stores_in(g, a, na, b, nb) && kl_gd_stores_in(g, b, nb, a, na);
}

/* Whether v is a value a mask gives what it leaves out (an infinity, FLT_MAX, a lowest). */
static bool kl_gd_sentinel(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; v && d < 4; d++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if (in->op == KL_IR_FCONST) return isinf(in->fimm) || fabs(in->fimm) >= 6.0e4;
    if (in->op == KL_IR_SYMBOL && in->name) {
      static const char *const names[] = {"INFINITY", "HUGE_VALF", "HUGE_VAL", "FLT_MAX",
                                          "HALF_MAX", "MAXFLOAT",  "MAXHALF"};
      for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(in->name, names[i])) return true;
      return false;
    }
    /* `numeric_limits<T>::infinity()`, `::lowest()`, `::max()`: no argument. */
    if (in->op == KL_IR_CALL && !in->nops && in->name) {
      size_t l = strlen(in->name);
      return (l > 10 && !strcmp(in->name + l - 10, "::infinity")) ||
             (l > 8 && !strcmp(in->name + l - 8, "::lowest")) ||
             (l > 5 && !strcmp(in->name + l - 5, "::max"));
    }
    if ((in->op == KL_IR_CAST || (in->op == KL_IR_UNOP && in->sub == KL_IR_NEG)) && in->nops)
      v = in->ops[0];
    else
      return false;
  }
  return false;
}

/* Whether v, through casts, is a load. */
static bool kl_gd_loaded(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; v && d < 4 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; d++)
    v = f->ins[v].ops[0];
  return kl_gd_element_load(f, v);
}

/* For v a choice `cond ? x : K` with K a negative constant (a sentinel for "not valid"), x, and
 * in *cond (may be NULL) cond; else 0. */
static uint32_t kl_gd_sentinel_arm(const struct kl_ir_fn *f, uint32_t v, uint32_t *cond) {
  int64_t k;
  for (int d = 0; v && d < 4 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; d++)
    v = f->ins[v].ops[0];
  const struct kl_ir_ins *in = &f->ins[v];
  if (!v || in->op != KL_IR_SELECT || in->nops != 3 || (in->flags & KL_IR_F_UNSIGNED)) return 0;
  if (!kl_ir_const(f, in->ops[2], &k) || k >= 0) return 0;
  if (cond) *cond = in->ops[0];
  return in->ops[1];
}

/* Whether v is fixed when the kernel is compiled and not folded: made of symbols (an unbound
 * template parameter, a function constant) and constants alone, one symbol at least. */
static bool kl_gd_compile_time(const struct kl_ir_fn *f, uint32_t v, int depth) {
  if (!v || depth > 6) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_SYMBOL) return true;
  if (in->op != KL_IR_BINOP && in->op != KL_IR_UNOP && in->op != KL_IR_CAST) return false;
  bool any = false;
  for (uint32_t k = 0; k < in->nops; k++) {
    int64_t c;
    if (kl_ir_const(f, in->ops[k], &c)) continue;
    if (!kl_gd_compile_time(f, in->ops[k], depth + 1)) return false;
    any = true;
  }
  return any;
}

/* The truth a condition has whatever the thread (1 true, 0 false), or -1. */
static int kl_gd_truth(const struct kl_ir_fn *f, uint32_t v, int depth) {
  int64_t c;
  if (!v || depth > 6) return -1;
  if (kl_ir_const(f, v, &c)) return c != 0;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_CAST && in->nops) return kl_gd_truth(f, in->ops[0], depth + 1);
  if (in->op == KL_IR_UNOP && in->sub == KL_IR_NOT && in->nops) {
    int t = kl_gd_truth(f, in->ops[0], depth + 1);
    return t < 0 ? -1 : !t;
  }
  if (in->op == KL_IR_BINOP && in->nops == 2 && (in->sub == KL_IR_LAND || in->sub == KL_IR_LOR)) {
    int a = kl_gd_truth(f, in->ops[0], depth + 1), b = kl_gd_truth(f, in->ops[1], depth + 1);
    int absorb = in->sub == KL_IR_LOR;
    if (a == absorb || b == absorb) return absorb;
    return a >= 0 && b >= 0 ? !absorb : -1;
  }
  return -1;
}

/* Whether v lies in a branch its function's constants rule out (`if (N > 1 && ...)` with N = 1). */
static bool kl_gd_dead(const struct kl_ir_fn *f, uint32_t v) {
  if (kl_divergence_dead(f, v)) return true;
  for (uint32_t u = v, guard = 0; u && guard < 64; guard++) {
    uint32_t b = f->ins[u].block, p = f->blocks[b].parent;
    if (p && f->ins[p].op == KL_IR_IF && f->ins[p].nops) {
      int t = kl_gd_truth(f, f->ins[p].ops[0], 0);
      if ((t == 0 && f->ins[p].blk[0] == b) || (t == 1 && f->ins[p].blk[1] == b)) return true;
    }
    u = p;
  }
  return false;
}

/* Mark condition v and the comparisons it is made of (through &&, ||, !, casts) as guarding. */
static void kl_gd_mark(struct kl_guards *g, uint32_t v, int depth) {
  const struct kl_ir_fn *f = g->f;
  if (!v || v >= f->nins || depth > 8) return;
  g->guarding[v] = 1;
  const struct kl_ir_ins *in = &f->ins[v];
  bool logic = in->op == KL_IR_CAST || (in->op == KL_IR_UNOP && in->sub == KL_IR_NOT) ||
               (in->op == KL_IR_BINOP && (in->sub == KL_IR_LAND || in->sub == KL_IR_LOR));
  int64_t c;
  /* `a && b` lowered as a ? b : false. */
  if (in->op == KL_IR_SELECT && in->nops == 3 &&
      (kl_ir_const(f, in->ops[1], &c) || kl_ir_const(f, in->ops[2], &c)))
    logic = true;
  if (!logic) return;
  /* `N > 1 && i + N > n` where the specialisation has N = 1: the comparison decides nothing;
   * with N unbound, it runs only in the specialisations where the else branch is bounded. */
  if (in->op == KL_IR_BINOP && in->nops == 2)
    for (int k = 0; k < 2; k++)
      if ((kl_ir_const(f, in->ops[k], &c) && (c != 0) == (in->sub == KL_IR_LOR)) ||
          kl_gd_compile_time(f, in->ops[k], 0))
        return;
  if (in->op == KL_IR_SELECT && kl_ir_const(f, in->ops[0], &c)) return;
  for (uint32_t k = 0; k < in->nops; k++) kl_gd_mark(g, in->ops[k], depth + 1);
}

static void kl_gd_guarding(struct kl_guards *g) {
  const struct kl_ir_fn *f = g->f;
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if (!in->nops || !in->ops[0]) continue;
    bool guards = false;
    if (in->op == KL_IR_LOOP) {
      guards = true;
    } else if (in->op == KL_IR_IF) {
      /* With both arms, what they do to the thread's own variables and arrays is a choice
       * between two values (`o[3]` of a local `int o[4]` read in one arm of a choice between
       * two sources), not work a bound protects; with one arm (`if (gid < n) acc[0] = v;`) it
       * is work done only in bounds. */
      bool own = !(in->blk[1] && f->blocks[in->blk[1]].n && in->blk[0] && f->blocks[in->blk[0]].n);
      guards = (kl_gd_exits(f, in->blk[0]) || kl_gd_exits(f, in->blk[1]) ||
                kl_gd_accesses(f, in->blk[0], own, 0) || kl_gd_accesses(f, in->blk[1], own, 0)) &&
               !kl_gd_selects_value(g, v);
    } else if (in->op == KL_IR_SELECT && in->nops == 3) {
      guards = kl_gd_loaded(f, in->ops[1]) || kl_gd_loaded(f, in->ops[2]) ||
               kl_gd_sentinel(f, in->ops[1]) || kl_gd_sentinel(f, in->ops[2]) ||
               kl_gd_sentinel_arm(f, v, NULL);
    }
    if (guards) kl_gd_mark(g, in->ops[0], 0);
  }
}

/* ---- Comparisons against a size ------------------------------------------------------------- */

/* Whether uniform value v is a size: computed from a kernel argument or a load, not a constant,
 * a compile-time symbol or a loop's counter. 1 a size, 0 nothing either way, -1 not one. */
static int kl_gd_size(const struct kl_guards *g, uint32_t v, int depth) {
  const struct kl_ir_fn *f = g->f;
  if (!v || v >= f->nins || depth > 8) return 0;
  const struct kl_ir_ins *in = &f->ins[v];
  switch (in->op) {
  case KL_IR_ARG:
  case KL_IR_LOAD:
    return 1;
  case KL_IR_PHI:
    if (in->sub == KL_IR_PHI_HEAD || in->sub == KL_IR_PHI_EXIT || in->sub == KL_IR_PHI_LATCH)
      return -1;
    break;
  case KL_IR_CONST:
  case KL_IR_FCONST:
  case KL_IR_SYMBOL:
  case KL_IR_COORD:
    return 0;
  default:
    break;
  }
  int r = 0;
  for (uint32_t k = 0; k < in->nops; k++) {
    int s = kl_gd_size(g, in->ops[k], depth + 1);
    if (s < 0) return -1;
    if (s > 0) r = 1;
  }
  return r;
}

/* Value v's form, or where scalar evolution has none, the affine part of the sum it is (`tid.x *
 * TM + lane / 8` is 4 * tid.x plus something), as a partial form. */
static struct kl_affine kl_gd_form(const struct kl_guards *g, uint32_t v, int depth) {
  struct kl_affine a = kl_scev_form(g->s, v);
  if (a.known || a.partial || !v || depth > 8) return a;
  if (kl_gd_uniform(g, v)) return kl_affine_symbol();
  uint32_t c = kl_gd_carried(g, v);
  if (c) {
    uint32_t x = kl_gd_sentinel_arm(g->f, c, NULL);
    return kl_gd_form(g, x ? x : c, depth + 1);
  }
  const struct kl_ir_ins *in = &g->f->ins[v];
  if (in->op == KL_IR_CAST && in->nops) return kl_gd_form(g, in->ops[0], depth + 1);
  if (in->op != KL_IR_BINOP || in->nops != 2) return a;
  struct kl_affine l = kl_gd_form(g, in->ops[0], depth + 1),
                   r = kl_gd_form(g, in->ops[1], depth + 1);
  if (in->sub == KL_IR_ADD || in->sub == KL_IR_SUB) {
    if (!l.known && !l.partial) {
      if (in->sub == KL_IR_SUB || (!r.known && !r.partial)) return a;
      struct kl_affine t = l;
      l = r, r = t;
    }
    return kl_affine_add(l, r, in->sub == KL_IR_SUB ? -1 : 1);
  }
  if (in->sub == KL_IR_MUL || in->sub == KL_IR_SHL) {
    /* A factor scalar evolution cannot read but the same for every thread (`args.nb01`). */
    if (!r.known && !r.partial && kl_gd_uniform(g, in->ops[1])) r = kl_affine_symbol();
    if (in->sub == KL_IR_MUL && !l.known && !l.partial && kl_gd_uniform(g, in->ops[0]))
      l = kl_affine_symbol();
    if (in->sub == KL_IR_SHL && !(r.known && !r.n && !r.c0_symbolic))
      r = kl_affine_symbol();
    else if (in->sub == KL_IR_SHL)
      r = kl_affine_const(r.c0 >= 0 && r.c0 < 62 ? (int64_t)1 << r.c0 : 0);
    if ((l.known || l.partial) && (r.known || r.partial)) return kl_affine_mul(l, r);
  }
  return a;
}

/* Whether v is an address: a buffer, an element's or field's address, a pointer cast or one
 * kept in a thread's array. */
static bool kl_gd_pointer(const struct kl_guards *g, uint32_t v) {
  const struct kl_ir_ins *in = &g->f->ins[v];
  return in->op == KL_IR_INDEX || in->op == KL_IR_MEMBER || kl_gd_carried(g, v) ||
         (in->op == KL_IR_ARG && kl_scev_arg_is_memory(in->var)) ||
         (in->op == KL_IR_CAST && in->type && strchr(in->type, '*'));
}

/* Whether loop runs a count fixed when the kernel is compiled: its condition compares with a
 * constant or a compile-time value (`k < steps_per_thread`). A pointer it steps (`sl++`) moves
 * by a bounded amount from where it entered, so the entry is what an access through it indexes;
 * a pointer a loop bounded by a size steps (`for (i = 0; i < n; i += B) { *x; x += B; }`) walks
 * in step with that bound instead. */
static bool kl_gd_fixed_loop(const struct kl_ir_fn *f, uint32_t loop) {
  if (!loop || f->ins[loop].op != KL_IR_LOOP || !f->ins[loop].nops) return false;
  uint32_t c = f->ins[loop].ops[0];
  if (!c || f->ins[c].op != KL_IR_BINOP || f->ins[c].nops != 2 || f->ins[c].sub < KL_IR_LT ||
      f->ins[c].sub > KL_IR_NE)
    return false;
  for (int k = 0; k < 2; k++) {
    int64_t x;
    uint32_t b = f->ins[c].ops[k];
    for (int d = 0; b && d < 4 && f->ins[b].op == KL_IR_CAST && f->ins[b].nops; d++)
      b = f->ins[b].ops[0];
    if (kl_ir_const(f, b, &x) || kl_gd_compile_time(f, b, 0)) return true;
  }
  return false;
}

/* One step down address a towards its root: the address it is computed from (0 at the root),
 * and in *idx the index it adds there, or 0. A pointer plus an integer is an index too (`ax[row]
 * + off` of a pointer the lowering does not type), and a pointer kept in a thread's array
 * continues at the address stored there. */
static uint32_t kl_gd_step(const struct kl_guards *g, uint32_t a, uint32_t *idx) {
  const struct kl_ir_ins *in = &g->f->ins[a];
  *idx = 0;
  uint32_t c = kl_gd_carried(g, a);
  if (c) return c;
  if (!in->nops) return 0;
  if (in->op == KL_IR_PHI && in->sub == KL_IR_PHI_HEAD && in->ops[0] &&
      kl_gd_fixed_loop(g->f, in->ref_ins) && kl_gd_pointer(g, in->ops[0]))
    return in->ops[0];
  if (in->op == KL_IR_INDEX) {
    if (in->nops > 1) *idx = in->ops[1];
    return in->ops[0];
  }
  if (in->op == KL_IR_MEMBER || in->op == KL_IR_CAST) return in->ops[0];
  if (in->op == KL_IR_BINOP && in->sub == KL_IR_ADD && in->nops == 2)
    for (int k = 0; k < 2; k++)
      if (kl_gd_pointer(g, in->ops[k]) && !kl_gd_pointer(g, in->ops[1 - k])) {
        *idx = in->ops[1 - k];
        return in->ops[k];
      }
  return 0;
}

/* The offset of address addr from its root, or where scalar evolution has none, the sum of the
 * affine parts of its indices (kl_gd_form). */
static struct kl_affine kl_gd_offset(const struct kl_guards *g, uint32_t addr) {
  uint32_t root;
  struct kl_affine o;
  if (kl_scev_address(g->s, addr, &root, &o) && o.known) return o;
  const struct kl_ir_fn *f = g->f;
  struct kl_affine sum = kl_affine_const(0);
  bool any = false;
  for (uint32_t a = addr, d = 0, ix; a && a < f->nins && d < 32; d++) {
    a = kl_gd_step(g, a, &ix);
    if (!ix) continue;
    struct kl_affine x = kl_gd_form(g, ix, 0);
    if (!x.known && !x.partial) x = kl_affine_unknown();
    sum = kl_affine_add(x.known || x.partial ? x : sum, x.known || x.partial ? sum : x, 1);
    any = true;
  }
  return any ? sum : kl_affine_unknown();
}

/* Whether form a has a counter of a loop that starts at a thread's own position. */
static bool kl_gd_walks(const struct kl_guards *g, struct kl_affine a) {
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(g->s, a.t[i].atom);
    if (at && at->kind == KL_SCEV_REC && !kl_gd_uniform(g, at->value)) return true;
  }
  return false;
}

/* Whether every counter of a loop that starts at a thread's own position in form a indexes
 * memory in its loop: some access there has an offset that moves with it. A walk whose counter
 * only counts (`for (i = sg; i < n; i += BN)` stepping pointers of its own) bounds how often it
 * runs, not a position in any data: it is no sign of how far a thread's position may go. */
static bool kl_gd_walk_indexes(const struct kl_guards *g, struct kl_affine a) {
  const struct kl_ir_fn *f = g->f;
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(g->s, a.t[i].atom);
    if (!at || at->kind != KL_SCEV_REC || kl_gd_uniform(g, at->value) || !at->loop) continue;
    uint32_t body = f->ins[at->loop].blk[1];
    bool used = false;
    for (uint32_t v = at->loop + 1; v < f->nins && !used; v++) {
      const struct kl_ir_ins *in = &f->ins[v];
      if ((in->op != KL_IR_LOAD && in->op != KL_IR_STORE && in->op != KL_IR_ATOMIC) ||
          !in->nops || !body || !kl_ir_within(f, v, body))
        continue;
      struct kl_affine o = kl_gd_offset(g, in->ops[0]);
      int64_t k;
      bool sym;
      used = (o.known || o.partial) && kl_affine_part_coeff(o, a.t[i].atom, &k, &sym);
    }
    if (!used) return false;
  }
  return true;
}

static void kl_gd_compares(struct kl_guards *g, struct kl_arena *a) {
  const struct kl_ir_fn *f = g->f;
  uint32_t n = 0;
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if (in->op != KL_IR_BINOP || in->nops != 2 || !g->guarding[v] || in->sub < KL_IR_LT ||
        in->sub > KL_IR_GE)
      continue;
    /* In a branch the specialisation's constants rule out, it never runs. */
    if (kl_gd_dead(f, v)) continue;
    for (int side = 0; side < 2; side++) {
      uint32_t t = in->ops[side], b = in->ops[1 - side];
      if (!(g->dep[t] & KL_GUARDS_THREAD) || !kl_gd_uniform(g, b) || kl_gd_size(g, b, 0) <= 0)
        continue;
      struct kl_affine tf = kl_gd_form(g, t, 0);
      if ((!tf.known && !tf.partial) || !tf.n) continue;
      /* A helper's walk from the thread's position (`for (i = lane; i < n; i += W)`) bounds the
       * data the helper reads, not what its caller indexes by that position. */
      if (in->site && kl_gd_walks(g, tf)) continue;
      if (kl_gd_walks(g, tf) && !kl_gd_walk_indexes(g, tf)) continue;
      if (!g->cmps) {
        g->cmps = kl_arena_alloc(a, f->nins * sizeof *g->cmps);
        g->cmp_side = kl_arena_alloc(a, f->nins * sizeof *g->cmp_side);
      }
      g->cmps[n] = v;
      g->cmp_side[n++] = t;
      break;
    }
  }
  g->ncmps = n;
}

struct kl_guards *kl_guards_run(struct kl_arena *a, const struct kl_ir_fn *f,
                                const struct kl_scev *s, struct kl_ranges *r) {
  struct kl_guards *g = kl_arena_alloc(a, sizeof *g); /* cleared, as are the tables below */
  g->f = f, g->s = s, g->r = r;
  g->a = a;
  g->dep = kl_arena_alloc(a, f->nins + 1);
  g->guarding = kl_arena_alloc(a, f->nins + 1);
  g->stored = kl_arena_alloc(a, (f->nins + 1) * sizeof *g->stored);
  g->anyfield = kl_arena_alloc(a, (f->nins + 1) * sizeof *g->anyfield);
  g->field = kl_arena_alloc(a, (f->nins + 1) * sizeof *g->field);
  g->nstores = kl_arena_alloc(a, f->nins + 1);
  g->first_store = kl_arena_alloc(a, (f->nins + 1) * sizeof *g->first_store);
  g->next_store = kl_arena_alloc(a, (f->nins + 1) * sizeof *g->next_store);
  g->escaped = kl_arena_alloc(a, f->nins + 1);
  kl_gd_fields(g, a);
  kl_gd_deps(g);
  kl_gd_guarding(g);
  kl_gd_compares(g, a);
  return g;
}

/* ---- One access ----------------------------------------------------------------------------- */

/* Whether value form ff grows with every atom of form vf and falls with none: a bound on ff
 * (`b = gid * 8`, `b < n`) then bounds vf's atoms too (`out[gid]`), as a guard on a value
 * derived from the index guards the index. */
static bool kl_gd_grows_with(const struct kl_guards *g, struct kl_affine ff, struct kl_affine vf) {
  (void)g;
  if ((!ff.known && !ff.partial) || (!vf.known && !vf.partial) || !vf.n) return false;
  for (uint8_t i = 0; i < ff.n; i++)
    if (!ff.t[i].symbolic && ff.t[i].k < 0) return false;
  for (uint8_t i = 0; i < vf.n; i++) {
    int64_t k;
    bool sym;
    if (!kl_affine_part_coeff(ff, vf.t[i].atom, &k, &sym) || (!sym && k <= 0)) return false;
    if (!vf.t[i].symbolic && vf.t[i].k < 0) return false;
  }
  return true;
}

/* Whether w is a count remaining past v (`n = axis_size - lid * N`, through casts): a bound
 * `i < w` keeps v + i below the uniform size, so v is guarded with it. */
static bool kl_gd_remaining(const struct kl_guards *g, uint32_t w, uint32_t v,
                            struct kl_affine vf) {
  const struct kl_ir_fn *f = g->f;
  for (int d = 0; w && d < 4 && f->ins[w].op == KL_IR_CAST && f->ins[w].nops; d++)
    w = f->ins[w].ops[0];
  if (!w || f->ins[w].op != KL_IR_BINOP || f->ins[w].sub != KL_IR_SUB || f->ins[w].nops != 2 ||
      !kl_gd_uniform(g, f->ins[w].ops[0]))
    return false;
  uint32_t x = f->ins[w].ops[1];
  if (x == v || kl_valnum_equal(f, g->s, x, v)) return true;
  /* The same thread atoms, scaled alike or not (`w_stride * lid * N` beside `lid * N`). */
  struct kl_affine xf = kl_gd_form(g, x, 0);
  return kl_gd_grows_with(g, xf, vf) && kl_gd_grows_with(g, vf, xf);
}

/* Whether v is the value of a local declared with an unsigned integer type (`const ushort r =
 * tg.x * 8;`): the declaration converts it, so it is not negative, whatever the lowering kept of
 * the conversion. */
static bool kl_gd_declared_unsigned(const struct kl_ir_fn *f, uint32_t v) {
  uint32_t s = f->ins[v].sym;
  const struct kl_var *var = s && s < f->nsyms ? f->syms[s].var : NULL;
  if (!var || !var->type || var->is_pointer || var->array_dims) return false;
  const char *t = var->type;
  if (!strncmp(t, "metal::", 7)) t += 7;
  static const char *const names[] = {"uint",     "ushort",   "uchar",    "ulong",   "size_t",
                                      "uint8_t",  "uint16_t", "uint32_t", "uint64_t"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(t, names[i])) return true;
  return !strncmp(t, "unsigned", 8);
}

/* Whether every value v sums (through casts) that is not affine is at least 0 at p. */
static bool kl_gd_rest_nonneg(const struct kl_guards *g, uint32_t v, uint32_t p, int depth) {
  const struct kl_ir_fn *f = g->f;
  if (!v || depth > 8) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  struct kl_affine a = kl_scev_form(g->s, v);
  if (a.known || kl_gd_uniform(g, v)) return true;
  if (in->op == KL_IR_CAST && in->nops) return kl_gd_rest_nonneg(g, in->ops[0], p, depth + 1);
  if (in->op == KL_IR_BINOP && in->sub == KL_IR_ADD && in->nops == 2)
    return kl_gd_rest_nonneg(g, in->ops[0], p, depth + 1) &&
           kl_gd_rest_nonneg(g, in->ops[1], p, depth + 1);
  return kl_gd_declared_unsigned(f, v) || kl_ranges_at(g->r, v, p).lo >= 0;
}

/* Whether s is v plus parts the ranges keep non-negative at p (through casts and nested sums):
 * a bound on s bounds v (`column + i < n` for column, i >= 0). */
static bool kl_gd_sum_over(const struct kl_guards *g, uint32_t s, uint32_t v, uint32_t p,
                           int depth) {
  const struct kl_ir_fn *f = g->f;
  for (int d = 0; s && d < 4 && f->ins[s].op == KL_IR_CAST && f->ins[s].nops; d++)
    s = f->ins[s].ops[0];
  if (!s || depth > 3 || f->ins[s].op != KL_IR_BINOP || f->ins[s].sub != KL_IR_ADD ||
      f->ins[s].nops != 2)
    return false;
  for (int k = 0; k < 2; k++) {
    uint32_t x = f->ins[s].ops[k], y = f->ins[s].ops[1 - k];
    if (kl_ranges_at(g->r, y, p).lo < 0) continue;
    uint32_t u = x;
    for (int d = 0; u && d < 4 && f->ins[u].op == KL_IR_CAST && f->ins[u].nops; d++)
      u = f->ins[u].ops[0];
    if (x == v || u == v || kl_valnum_equal(f, g->s, x, v) || kl_valnum_equal(f, g->s, u, v) ||
        kl_gd_sum_over(g, x, v, p, depth + 1))
      return true;
  }
  return false;
}

/* kl_gd_form at depth 0, remembered in a small table by value: every access asks each fact at
 * its point (tens of them, the same few values) again, with the pass done and g fixed. A slot
 * another value takes is computed again. */
struct kl_gd_memo {
  uint32_t v; /* 0 for an empty slot */
  struct kl_affine form;
};
enum { KL_GD_FORMS = 512 };

static struct kl_affine kl_gd_form0(struct kl_guards *g, uint32_t v) {
  if (!v) return kl_gd_form(g, v, 0);
  if (!g->forms) g->forms = kl_arena_alloc(g->a, KL_GD_FORMS * sizeof *g->forms);
  struct kl_gd_memo *e = &g->forms[(v * 2654435761u) >> 23 & (KL_GD_FORMS - 1)];
  if (e->v != v) {
    e->v = v;
    e->form = kl_gd_form(g, v, 0);
  }
  return e->form;
}

/* Whether a fact at p bounds v from above (v < w + k), with v the same computation as the fact's
 * value written again (`first_row + r` in the check and again in the index): equal by value
 * numbering, or by scalar evolution to one known form. */
static bool kl_gd_fact_bounded(struct kl_guards *g, uint32_t v, uint32_t p) {
  const struct kl_ranges_fact *fs;
  uint32_t n = kl_ranges_facts_at(g->r, p, &fs);
  struct kl_affine vf = kl_scev_form(g->s, v);
  for (uint32_t i = 0; i < n; i++) {
    if ((fs[i].op != KL_IR_LT && fs[i].op != KL_IR_EQ) || !fs[i].v) continue;
    if (fs[i].w && kl_gd_remaining(g, fs[i].w, v, vf)) return true;
    if (fs[i].w && !kl_gd_uniform(g, fs[i].w)) continue;
    if (fs[i].v == v || kl_valnum_equal(g->f, g->s, fs[i].v, v) || kl_gd_same_load(g, fs[i].v, v))
      return true;
    if (kl_gd_sum_over(g, fs[i].v, v, p, 0)) return true;
    struct kl_affine ff = kl_scev_form(g->s, fs[i].v);
    if (vf.known && ff.known && vf.n && kl_affine_equal(vf, ff)) return true;
    if (kl_gd_grows_with(g, ff, vf)) return true;
    /* Forms through narrowing casts and non-affine parts (`short j = jj * NSG + sg`), when the
     * bounded value adds to v only parts the ranges keep non-negative. */
    if (kl_gd_grows_with(g, kl_gd_form0(g, fs[i].v), kl_gd_form0(g, v)) &&
        kl_gd_rest_nonneg(g, fs[i].v, p, 0))
      return true;
  }
  return false;
}

/* ---- Remainders written out ----------------------------------------------------------------- */

static int kl_gd_stores_read(const struct kl_guards *g, uint32_t v, uint32_t st[4]);
static bool kl_gd_stores_bounded(struct kl_guards *g, uint32_t v, uint32_t p, int depth);

/* The slot of a thread's own memory that load v reads whole (a local, or a field of one, not an
 * element by index), or 0. */
static uint32_t kl_gd_whole_slot(const struct kl_guards *g, uint32_t v) {
  const struct kl_ir_fn *f = g->f;
  if (!v || v >= f->nins || (f->ins[v].op != KL_IR_LOAD && f->ins[v].op != KL_IR_STORE) ||
      !f->ins[v].nops)
    return 0;
  uint32_t addr = f->ins[v].ops[0], al = kl_gd_private(f, addr);
  if (!al || f->ins[al].op != KL_IR_ALLOC || g->escaped[al] || f->ins[addr].op == KL_IR_INDEX)
    return 0;
  return kl_gd_slot(g, addr, al);
}

/* Whether no store into slot (of ALLOC al), nor into the whole of al, comes after instruction a
 * and before b in program order (the whole of a local some field of which is stored: not
 * known). */
static bool kl_gd_unwritten(const struct kl_guards *g, uint32_t slot, uint32_t al, uint32_t a,
                            uint32_t b) {
  if (slot == al && g->anyfield[al]) return false;
  uint32_t lists[2] = {g->first_store[slot], slot != al ? g->first_store[al] : 0};
  for (int k = 0; k < 2; k++)
    for (uint32_t s = lists[k]; s; s = g->next_store[s])
      if (s > a && s < b) return false;
  return true;
}

/* v with casts looked through, and a load of a thread's own local that one plain store before
 * it fills (`int4 q = i / n;` read back as q) read as the value stored. */
static uint32_t kl_gd_see(const struct kl_guards *g, uint32_t v) {
  const struct kl_ir_fn *f = g->f;
  for (int d = 0; v && v < f->nins && d < 16; d++) {
    const struct kl_ir_ins *in = &f->ins[v];
    uint32_t st[4];
    if (in->op == KL_IR_CAST && in->nops) {
      v = in->ops[0];
    } else if (kl_gd_whole_slot(g, v) && kl_gd_stores_read(g, v, st) == 1 && !f->ins[st[0]].sub &&
               kl_gd_whole_slot(g, st[0]) == kl_gd_whole_slot(g, v)) {
      v = f->ins[st[0]].ops[1];
    } else {
      break;
    }
  }
  return v;
}

/* v with casts looked through. */
static uint32_t kl_gd_uncast(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; v && v < f->nins && d < 16 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; d++)
    v = f->ins[v].ops[0];
  return v;
}

/* Whether a and b hold the same value: one computation (kl_valnum_equal), two loads of one
 * local with no store into it between them in the same block (`i / n` and `i - q * n` read i
 * once each), or so once locals stored once are read as what was stored. */
static bool kl_gd_same_value(const struct kl_guards *g, uint32_t a, uint32_t b) {
  const struct kl_ir_fn *f = g->f;
  a = kl_gd_uncast(f, a), b = kl_gd_uncast(f, b);
  if (!a || !b) return false;
  if (a == b || kl_valnum_equal(f, g->s, a, b) || kl_gd_same_load(g, a, b)) return true;
  uint32_t slot = kl_gd_whole_slot(g, a);
  if (slot && f->ins[a].op == KL_IR_LOAD && f->ins[b].op == KL_IR_LOAD &&
      slot == kl_gd_whole_slot(g, b) && f->ins[a].block == f->ins[b].block &&
      kl_gd_unwritten(g, slot, kl_gd_private(f, f->ins[a].ops[0]), a < b ? a : b, a < b ? b : a))
    return true;
  uint32_t sa = kl_gd_see(g, a), sb = kl_gd_see(g, b);
  return (sa != a || sb != b) && sa && sb && (sa == sb || kl_valnum_equal(f, g->s, sa, sb));
}

/* The factors of product v (through casts and locals stored once), at most max, into t[n..);
 * returns the count, or max + 1 when there are more. */
static int kl_gd_factors(const struct kl_guards *g, uint32_t v, uint32_t *t, int n, int max,
                         int depth) {
  const struct kl_ir_fn *f = g->f;
  v = kl_gd_see(g, v);
  if (!v || n > max) return max + 1;
  const struct kl_ir_ins *in = &f->ins[v];
  if (depth < 6 && in->op == KL_IR_BINOP && in->sub == KL_IR_MUL && in->nops == 2)
    return kl_gd_factors(g, in->ops[1], t, kl_gd_factors(g, in->ops[0], t, n, max, depth + 1),
                         max, depth + 1);
  if (n == max) return max + 1;
  t[n++] = v;
  return n;
}

/* Whether m is (x / d) * d, the factors of d in any order (`(i / (w * h)) * h * w`): then
 * x - m is x % d, which C's truncating division makes exact whatever the signs. x is the
 * dividend's value, or when 0 what STORE st's own slot holds just before st (its `-=` reads it:
 * `i -= (i / d) * d`). The divisor goes to *d. */
static bool kl_gd_takes_quotient(const struct kl_guards *g, uint32_t x, uint32_t m, uint32_t st,
                                 uint32_t *d) {
  const struct kl_ir_fn *f = g->f;
  uint32_t fm[6], fd[6];
  int nm = kl_gd_factors(g, m, fm, 0, 6, 0);
  if (nm < 2 || nm > 6) return false;
  for (int i = 0; i < nm; i++) {
    const struct kl_ir_ins *q = &f->ins[fm[i]];
    if (q->op != KL_IR_BINOP || q->sub != KL_IR_DIV || q->nops != 2) continue;
    if (x && !kl_gd_same_value(g, q->ops[0], x)) continue;
    if (!x) {
      /* The dividend reads st's slot, nothing stored there between that read and st. */
      uint32_t ld = kl_gd_uncast(f, q->ops[0]), slot = kl_gd_whole_slot(g, st);
      if (!slot || ld >= st || kl_gd_whole_slot(g, ld) != slot ||
          !kl_gd_unwritten(g, slot, kl_gd_private(f, f->ins[st].ops[0]), ld, st))
        continue;
    }
    int nd = kl_gd_factors(g, q->ops[1], fd, 0, 6, 0);
    if (nd != nm - 1) continue;
    /* Each other factor of m matches a factor of d not matched yet. */
    bool used[6] = {false}, all = true;
    for (int j = 0; j < nm && all; j++) {
      if (j == i) continue;
      bool hit = false;
      for (int k = 0; k < nd && !hit; k++)
        if (!used[k] && kl_gd_same_value(g, fm[j], fd[k])) used[k] = hit = true;
      all = hit;
    }
    if (all) {
      *d = q->ops[1];
      return true;
    }
  }
  return false;
}

/* Whether v is bounded above at p with each of its thread-varying terms bounded on its own: a
 * fact on v itself (or on the same value computed again, kl_gd_fact_bounded), or each term of a
 * sum bounded, or the varying factor of a product (or quotient) by a uniform value, or a bound
 * the ranges give a value of another shape (a clamp, a remainder, a loop's counter). A sum's
 * bound that only adds a small term's range (`i2 + lid` under `i2 < n`) leaves that term
 * unguarded: it is not taken. */
static bool kl_gd_bounded(struct kl_guards *g, uint32_t v, uint32_t p, int depth) {
  const struct kl_ir_fn *f = g->f;
  if (!v || v >= f->nins) return false;
  if (kl_gd_uniform(g, v)) return true;
  if (kl_gd_fact_bounded(g, v, p)) return true;
  const struct kl_ir_ins *in = &f->ins[v];
  if (depth > 0 && in->op == KL_IR_CAST && in->nops)
    return kl_gd_bounded(g, in->ops[0], p, depth - 1);
  if (depth > 0 && in->op == KL_IR_BINOP && in->nops == 2) {
    bool ul = kl_gd_uniform(g, in->ops[0]);
    bool ur = kl_gd_uniform(g, in->ops[1]);
    switch (in->sub) {
    case KL_IR_ADD:
      return kl_gd_bounded(g, in->ops[0], p, depth - 1) &&
             kl_gd_bounded(g, in->ops[1], p, depth - 1);
    case KL_IR_SUB: {
      /* x - (x / d) * d is x % d: below a uniform d, as for REM below. */
      uint32_t d;
      if (kl_gd_takes_quotient(g, in->ops[0], in->ops[1], 0, &d) && kl_gd_uniform(g, d))
        return true;
      /* x - y is below x's bound when y is not negative. */
      struct kl_range ry = kl_ranges_at(g->r, in->ops[1], p);
      if (ur || ry.lo >= 0) return kl_gd_bounded(g, in->ops[0], p, depth - 1);
      return kl_ranges_bounded_above(g->r, v, p, NULL);
    }
    case KL_IR_MUL:
    case KL_IR_SHL:
      if (ur) return kl_gd_bounded(g, in->ops[0], p, depth - 1);
      if (ul && in->sub == KL_IR_MUL) return kl_gd_bounded(g, in->ops[1], p, depth - 1);
      break;
    case KL_IR_DIV:
    case KL_IR_SHR:
      if (ur && kl_gd_bounded(g, in->ops[0], p, depth - 1)) return true;
      break;
    case KL_IR_REM:
    case KL_IR_AND:
      /* Below a uniform divisor or mask (`(tid / L) % C`), or below what bounds the value. */
      if (ur || ul || kl_gd_bounded(g, in->ops[0], p, depth - 1)) return true;
      break;
    default:
      break;
    }
  }
  if (depth > 0 && kl_gd_stores_bounded(g, v, p, depth - 1)) return true;
  if (in->op == KL_IR_BINOP && (in->sub == KL_IR_ADD || in->sub == KL_IR_SUB)) return false;
  return kl_ranges_bounded_above(g->r, v, p, NULL);
}

/* Whether load v of a thread's own local reads only values bounded at p: every store it can
 * read (kl_gd_stores_read) bounded, a `+=` adding a bounded value, a `-=` taking away one not
 * negative or the quotient's multiple that leaves a remainder (`i -= (i / d) * d`). Stores are
 * taken last first: one of the whole local before the load in its block, a plain store or such
 * a remainder, hides the ones before it. */
static bool kl_gd_stores_bounded(struct kl_guards *g, uint32_t v, uint32_t p, int depth) {
  const struct kl_ir_fn *f = g->f;
  uint32_t st[4], d;
  int ns = kl_gd_stores_read(g, v, st);
  for (int i = 1; i < ns; i++)
    for (int j = i; j > 0 && st[j] > st[j - 1]; j--) d = st[j], st[j] = st[j - 1], st[j - 1] = d;
  uint32_t slot = kl_gd_whole_slot(g, v);
  for (int k = 0; k < ns; k++) {
    const struct kl_ir_ins *s = &f->ins[st[k]];
    bool last = slot && s->block == f->ins[v].block && kl_gd_whole_slot(g, st[k]) == slot;
    if (s->sub == KL_IR_SUB) {
      if (kl_gd_takes_quotient(g, 0, s->ops[1], st[k], &d) && kl_gd_uniform(g, d)) {
        if (last) return true;
        continue;
      }
      if (kl_gd_uniform(g, s->ops[1]) || kl_ranges_at(g->r, s->ops[1], p).lo >= 0) continue;
      return false;
    }
    if ((s->sub && s->sub != KL_IR_ADD) || !kl_gd_bounded(g, s->ops[1], p, depth)) return false;
    if (last && !s->sub) return true;
  }
  return ns > 0;
}

/* Whether condition c, or a conjunct of it, compares a value that grows with t below a uniform
 * value (`r0 < rows` in `inside = r0 < rows && c0 + w < cols` for r0). */
static bool kl_gd_cond_bounds(const struct kl_guards *g, uint32_t c, uint32_t t, int depth) {
  const struct kl_ir_fn *f = g->f;
  if (!c || depth > 6) return false;
  const struct kl_ir_ins *in = &f->ins[c];
  int64_t k;
  if (in->op == KL_IR_CAST && in->nops) return kl_gd_cond_bounds(g, in->ops[0], t, depth + 1);
  if ((in->op == KL_IR_BINOP && in->sub == KL_IR_LAND && in->nops == 2) ||
      (in->op == KL_IR_SELECT && in->nops == 3 && kl_ir_const(f, in->ops[2], &k) && !k))
    return kl_gd_cond_bounds(g, in->ops[0], t, depth + 1) ||
           kl_gd_cond_bounds(g, in->ops[1], t, depth + 1);
  if (in->op != KL_IR_BINOP || in->nops != 2 || in->sub < KL_IR_LT || in->sub > KL_IR_GE)
    return false;
  bool lt = in->sub == KL_IR_LT || in->sub == KL_IR_LE;
  uint32_t a = lt ? in->ops[0] : in->ops[1], b = lt ? in->ops[1] : in->ops[0];
  if (!kl_gd_uniform(g, b)) return false;
  return a == t || kl_valnum_equal(f, g->s, a, t) ||
         kl_gd_grows_with(g, kl_gd_form(g, a, 0), kl_gd_form(g, t, 0));
}

/* Whether a sentinel test holds at p for a value t depends on: a fact there says a value loaded
 * from a thread's array is not negative (`offs[w] >= 0`), what was stored there is `cond ? x :
 * -1`, so cond held, and cond bounds t (kl_gd_cond_bounds). */
static bool kl_gd_sentinel_guarded(struct kl_guards *g, uint32_t t, uint32_t p) {
  const struct kl_ir_fn *f = g->f;
  const struct kl_ranges_fact *fs;
  uint32_t n = kl_ranges_facts_at(g->r, p, &fs);
  for (uint32_t i = 0; i < n; i++) {
    bool nonneg = (fs[i].op == KL_IR_GT && fs[i].k >= -1) || (fs[i].op == KL_IR_EQ && fs[i].k >= 0);
    uint32_t c = nonneg && !fs[i].w ? kl_gd_carried(g, fs[i].v) : 0, cond = 0;
    if (!c || !kl_gd_sentinel_arm(f, c, &cond)) continue;
    /* The value tested itself, loaded again: chosen under cond. */
    uint32_t u = t;
    for (int d = 0; u && d < 4 && f->ins[u].op == KL_IR_CAST && f->ins[u].nops; d++)
      u = f->ins[u].ops[0];
    if (kl_gd_carried(g, u) == c || kl_gd_cond_bounds(g, cond, t, 0)) return true;
  }
  return false;
}

/* Whether term t of an index is bounded at access p: by the ranges, or for a loaded value by a
 * bound on the address it was loaded from (the load is what a guard covers). */
static bool kl_gd_term_guarded(struct kl_guards *g, uint32_t t, uint32_t p) {
  const struct kl_ir_fn *f = g->f;
  if (kl_gd_bounded(g, t, p, 8)) return true;
  if (kl_gd_sentinel_guarded(g, t, p)) return true;
  for (int d = 0; t && d < 4 && f->ins[t].op == KL_IR_CAST && f->ins[t].nops; d++)
    t = f->ins[t].ops[0];
  if (!t || f->ins[t].op != KL_IR_LOAD || !f->ins[t].nops) return false;
  return kl_ranges_address_bounded(g->r, f->ins[t].ops[0], t, NULL);
}

/* Whether name constructs an integer scalar or vector from its arguments (`int4(a, b, c, d)`). */
static bool kl_gd_int_ctor(const char *name) {
  const struct kl_msl_type *mt = kl_msl_type(name);
  return mt && (mt->kind == KL_TYPE_VECTOR || mt->kind == KL_TYPE_SCALAR) &&
         strcmp(mt->scalar, "float") && strcmp(mt->scalar, "half") &&
         strcmp(mt->scalar, "bfloat") && strcmp(mt->scalar, "bool");
}

/* The stores load v can read, when it reads a thread's own memory that at most 4 stores fill
 * (a vector of indices built once, `int4 idx = base * 4 + int4(0, 1, 2, 3)`, read back as
 * `idx[k]` or `idx.z`, perhaps masked after, `idx = select(int4(0), idx, ok)`): into st[], the
 * count; 0 for anything else. A lane of a vector has its stored value's thread-varying terms; a
 * load of the whole, or by index, also reads what was stored into a field, so those count too. */
static int kl_gd_stores_read(const struct kl_guards *g, uint32_t v, uint32_t st[4]) {
  const struct kl_ir_fn *f = g->f;
  if (!v || f->ins[v].op != KL_IR_LOAD || !f->ins[v].nops) return 0;
  uint32_t addr = f->ins[v].ops[0], al = kl_gd_private(f, addr);
  if (!al || f->ins[al].op != KL_IR_ALLOC || g->escaped[al]) return 0;
  uint32_t slot = kl_gd_slot(g, addr, al);
  if (slot == al && g->anyfield[al]) return 0;
  /* A store after the load is read only in a loop's next trip: not followed there. */
  bool looped = false;
  for (uint32_t b = f->ins[v].block, d = 0; b && b < f->nblocks && d < 64 && !looped; d++) {
    uint32_t owner = f->blocks[b].parent;
    if (!owner || owner >= f->nins) break;
    looped = f->ins[owner].op == KL_IR_LOOP && !(f->ins[owner].flags & KL_IR_F_REGION);
    b = f->ins[owner].block;
  }
  int n = 0;
  uint32_t lists[2] = {g->first_store[slot], slot != al ? g->first_store[al] : 0};
  for (int k = 0; k < 2; k++)
    for (uint32_t s = lists[k]; s; s = g->next_store[s]) {
      if (s > v && looped) return 0;
      if (s > v) continue;
      if (n == 4) return 0;
      st[n++] = s;
    }
  return n;
}

/* The terms of index v that nothing bounds at access p, at most 8, into t[n..); returns the
 * count. A sum is split into its terms and a product by a uniform value into its varying factor,
 * down to what is bounded (skipped) or cannot be split: `(row * m + tile) * w + lane` under a
 * check of tile gives row * m and lane. */
static int kl_gd_terms(struct kl_guards *g, uint32_t v, uint32_t p, uint32_t *t, int n, int depth) {
  const struct kl_ir_fn *f = g->f;
  if (!v || n >= 8 || !(g->dep[v] & KL_GUARDS_THREAD) || kl_gd_uniform(g, v) ||
      kl_gd_term_guarded(g, v, p))
    return n;
  const struct kl_ir_ins *in = &f->ins[v];
  if (depth < 8 && in->op == KL_IR_CAST && in->nops)
    return kl_gd_terms(g, in->ops[0], p, t, n, depth + 1);
  uint32_t st[4];
  int ns = depth < 8 ? kl_gd_stores_read(g, v, st) : 0;
  if (ns) {
    for (int k = 0; k < ns; k++) {
      /* `i -= (i / d) * d` leaves i % d: below a uniform d, no term of its own. */
      uint32_t d;
      if (f->ins[st[k]].sub == KL_IR_SUB &&
          kl_gd_takes_quotient(g, 0, f->ins[st[k]].ops[1], st[k], &d) && kl_gd_uniform(g, d))
        continue;
      n = kl_gd_terms(g, f->ins[st[k]].ops[1], p, t, n, depth + 1);
    }
    return n;
  }
  /* Either arm: `c ? a : b`, MSL's `select(a, b, c)`; a vector built of values: each. */
  if (depth < 8 && in->op == KL_IR_SELECT && in->nops == 3) {
    n = kl_gd_terms(g, in->ops[1], p, t, n, depth + 1);
    return kl_gd_terms(g, in->ops[2], p, t, n, depth + 1);
  }
  /* A join of an if's arms, or of an inlined helper's returns (`if (p.blocked) return a; return
   * b;`, a one-pass region): the value is one of them, each bounded or not on its own path. A
   * loop's values stay whole: they step with it. */
  if (depth < 8 && in->op == KL_IR_PHI &&
      (in->sub == KL_IR_PHI_IF ||
       (in->sub == KL_IR_PHI_EXIT && in->ref_ins && in->ref_ins < f->nins &&
        (f->ins[in->ref_ins].flags & KL_IR_F_REGION)))) {
    for (uint32_t k = 0; k < in->nops; k++)
      if (in->ops[k]) n = kl_gd_terms(g, in->ops[k], p, t, n, depth + 1);
    return n;
  }
  if (depth < 8 && in->op == KL_IR_CALL && !in->fn && in->name &&
      ((!strcmp(in->name, "select") && in->nops == 3) || kl_gd_int_ctor(in->name))) {
    for (uint32_t k = 0; k < (strcmp(in->name, "select") ? in->nops : 2); k++)
      n = kl_gd_terms(g, in->ops[k], p, t, n, depth + 1);
    return n;
  }
  if (depth < 8 && in->op == KL_IR_BINOP && in->nops == 2) {
    if (in->sub == KL_IR_ADD || in->sub == KL_IR_SUB) {
      n = kl_gd_terms(g, in->ops[0], p, t, n, depth + 1);
      return kl_gd_terms(g, in->ops[1], p, t, n, depth + 1);
    }
    bool ul = kl_gd_uniform(g, in->ops[0]);
    bool ur = kl_gd_uniform(g, in->ops[1]);
    if ((in->sub == KL_IR_MUL || in->sub == KL_IR_SHL) && ur)
      return kl_gd_terms(g, in->ops[0], p, t, n, depth + 1);
    /* No larger than a value already bounded: its quotient, remainder, shift right or mask by
     * a value the same for every thread (`(gid.z % slices) / 4`). */
    if ((in->sub == KL_IR_DIV || in->sub == KL_IR_REM || in->sub == KL_IR_SHR ||
         (in->sub == KL_IR_AND && (in->flags & KL_IR_F_UNSIGNED))) && ur)
      return kl_gd_terms(g, in->ops[0], p, t, n, depth + 1);
    if (in->sub == KL_IR_MUL && ul) return kl_gd_terms(g, in->ops[1], p, t, n, depth + 1);
  }
  t[n++] = v;
  return n;
}

/* Whether atom id is a counter of a loop with a bounded range (`for (row = 0; row < NR0; ...)`):
 * at its start the value compared with it is the thread's own. */
static bool kl_gd_fixed_counter(const struct kl_guards *g, uint16_t id) {
  const struct kl_scev_atom *at = kl_scev_atom(g->s, id);
  if (!at || at->kind != KL_SCEV_REC) return false;
  /* A count the source fixes, not one bounded only by its type. */
  struct kl_range rg = kl_ranges_of(g->r, at->value);
  return rg.lo > -65536 && rg.hi < 65536 && kl_gd_uniform(g, at->value);
}

/* Whether comparison form c bounds a value of term form t in offset o: c shares an atom with t,
 * and each of c's atoms (a bounded loop's counter aside) is in o, all scaled by one factor where
 * both coefficients are known. */
static bool kl_gd_bounds(const struct kl_guards *g, struct kl_affine c, struct kl_affine t,
                         struct kl_affine o, bool walk) {
  bool shared = false, ratio = false;
  int64_t num = 0, den = 1;
  for (uint8_t i = 0; i < c.n; i++) {
    const struct kl_affine_term *ct = &c.t[i];
    int64_t k, tk;
    bool sym, tsym;
    if (kl_gd_fixed_counter(g, ct->atom)) continue;
    if (!kl_affine_part_coeff(o, ct->atom, &k, &sym)) return false;
    if (kl_affine_part_coeff(t, ct->atom, &tk, &tsym)) {
      shared = true;
      /* A walk from the thread's position (`for (i = sg; i < n; i += BN)`) bounds positions
       * spaced as it steps them: an index of that position by another map (`out[sg * V + k]`)
       * is of other data. */
      if (walk && (sym || ct->symbolic || k != ct->k)) return false;
    }
    /* A loop's counter in the comparison bounds what moves with it: the index must add it as
     * the comparison does (`i2 + lid < n` says nothing of `snap[i2 * d + lid]`). */
    const struct kl_scev_atom *at = kl_scev_atom(g->s, ct->atom);
    if (at && at->kind == KL_SCEV_REC && kl_gd_uniform(g, at->value) && (sym || ct->symbolic))
      return false;
    if (sym || ct->symbolic || ct->k == 0) continue;
    int64_t l, r;
    if (!ratio) {
      num = k, den = ct->k, ratio = true;
    } else if (__builtin_mul_overflow(k, den, &l) || __builtin_mul_overflow(ct->k, num, &r) ||
               l != r) {
      return false;
    }
  }
  return shared;
}

/* Form a with each counter of a loop that starts at a thread's own position (`for (i = lid; ...;
 * i += tg)`) read as its start plus a uniform multiple of its step: the thread part it carries
 * (kl_scev_expand); counters the same for every thread stay atoms. */
static struct kl_affine kl_gd_thread_form(const struct kl_guards *g, struct kl_affine a) {
  if (!a.known && !a.partial) return a;
  struct kl_affine out = a;
  out.n = 0;
  bool changed = false;
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(g->s, a.t[i].atom);
    if (at && at->kind == KL_SCEV_REC && !kl_gd_uniform(g, at->value)) {
      changed = true;
      continue;
    }
    out.t[out.n++] = a.t[i];
  }
  if (!changed) return a;
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(g->s, a.t[i].atom);
    if (!at || at->kind != KL_SCEV_REC || kl_gd_uniform(g, at->value)) continue;
    struct kl_affine one = kl_affine_const(0);
    one.n = 1;
    one.t[0] = a.t[i];
    out = kl_affine_add(out, kl_scev_expand(g->s, one), 1);
  }
  return out;
}

/* The constant sum v adds to its other terms (`size + 128 - 1`: 127), through casts. */
static int64_t kl_gd_added(const struct kl_ir_fn *f, uint32_t v, int depth) {
  int64_t c;
  if (!v || depth > 6) return 0;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_CAST && in->nops) return kl_gd_added(f, in->ops[0], depth + 1);
  if (in->op != KL_IR_BINOP || in->nops != 2) return 0;
  if (in->sub == KL_IR_ADD) {
    if (kl_ir_const(f, in->ops[1], &c)) return c + kl_gd_added(f, in->ops[0], depth + 1);
    if (kl_ir_const(f, in->ops[0], &c)) return c + kl_gd_added(f, in->ops[1], depth + 1);
    return kl_gd_added(f, in->ops[0], depth + 1) + kl_gd_added(f, in->ops[1], depth + 1);
  }
  if (in->sub == KL_IR_SUB && kl_ir_const(f, in->ops[1], &c))
    return kl_gd_added(f, in->ops[0], depth + 1) - c;
  return 0;
}

/* Whether loop's condition counts whole blocks rounded up (`i < (size + 127) / 128`): its last
 * block runs past the data, so a check of where it ended is evidence for it too. */
static bool kl_gd_rounds_up(const struct kl_ir_fn *f, uint32_t loop) {
  uint32_t c = f->ins[loop].nops ? f->ins[loop].ops[0] : 0;
  if (!c || f->ins[c].op != KL_IR_BINOP || f->ins[c].nops != 2) return false;
  uint32_t b = f->ins[c].sub == KL_IR_LT || f->ins[c].sub == KL_IR_LE   ? f->ins[c].ops[1]
               : f->ins[c].sub == KL_IR_GT || f->ins[c].sub == KL_IR_GE ? f->ins[c].ops[0]
                                                                        : 0;
  for (int d = 0; b && d < 4 && f->ins[b].op == KL_IR_CAST && f->ins[b].nops; d++)
    b = f->ins[b].ops[0];
  if (!b || f->ins[b].op != KL_IR_BINOP || f->ins[b].sub != KL_IR_DIV || f->ins[b].nops != 2)
    return false;
  return kl_gd_added(f, f->ins[b].ops[0], 0) > 0;
}

/* Whether value v (a compared value) is computed from where a loop left a value it steps (its
 * exit PHI of a recurrence) whose loop holds access p, with p's offset o stepping with it: the
 * check is of where the walk ended (a tail after a blocked walk), and the walk's own accesses
 * used its earlier values, which its bound keeps in range. */
static bool kl_gd_walk_end(const struct kl_guards *g, uint32_t v, uint32_t cmp, uint32_t p,
                           struct kl_affine o, int depth) {
  const struct kl_ir_fn *f = g->f;
  if (!v || depth > 6) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  uint32_t loop =
      in->op == KL_IR_PHI && in->ref_ins && f->ins[in->ref_ins].op == KL_IR_LOOP ? in->ref_ins : 0;
  /* The value a loop leaves: its exit PHI, or a header PHI read after the loop. */
  if (loop && in->sub == KL_IR_PHI_HEAD) {
    bool within = false;
    for (int k = 0; k < 3 && !within; k++)
      within = f->ins[loop].blk[k] && kl_ir_within(f, cmp, f->ins[loop].blk[k]);
    if (within) loop = 0;
  }
  if (loop && (in->sub == KL_IR_PHI_EXIT || in->sub == KL_IR_PHI_HEAD)) {
    if (kl_gd_rounds_up(f, loop)) return false;
    bool inside = false;
    for (int k = 0; k < 3 && !inside; k++)
      inside = f->ins[loop].blk[k] && kl_ir_within(f, p, f->ins[loop].blk[k]);
    if (!inside) return false;
    for (uint8_t i = 0; i < o.n; i++) {
      const struct kl_scev_atom *at = kl_scev_atom(g->s, o.t[i].atom);
      if (at && at->kind == KL_SCEV_REC && at->loop == loop) return true;
    }
    return false;
  }
  if (in->op != KL_IR_BINOP && in->op != KL_IR_CAST && in->op != KL_IR_UNOP) return false;
  for (uint32_t k = 0; k < in->nops; k++)
    if (kl_gd_walk_end(g, in->ops[k], cmp, p, o, depth + 1)) return true;
  return false;
}

/* A comparison of g that is evidence for unguarded term t of an access p at offset o, or 0. */
/* Whether instructions x and y come from two #if branches no build compiles together. */
static bool kl_gd_exclusive(const struct kl_guards *g, uint32_t x, uint32_t y) {
  if (!g->arms || !g->arms->n) return false;
  TSNode a = g->f->ins[x].node, b = g->f->ins[y].node;
  /* A helper read from a header has offsets of another buffer. */
  if (ts_node_is_null(a) || ts_node_is_null(b) || a.tree != g->tree || b.tree != g->tree)
    return false;
  return kl_preproc_exclusive(g->arms, ts_node_start_byte(a), ts_node_start_byte(b));
}

static uint32_t kl_gd_evidence(const struct kl_guards *g, uint32_t t, uint32_t p,
                               struct kl_affine o) {
  struct kl_affine tf = kl_gd_thread_form(g, kl_gd_form(g, t, 0));
  if ((!tf.known && !tf.partial) || !tf.n) return 0;
  struct kl_affine raw = o;
  o = kl_gd_thread_form(g, o);
  for (uint32_t i = 0; i < g->ncmps; i++) {
    if (kl_gd_exclusive(g, g->cmps[i], p)) continue;
    struct kl_affine cf = kl_gd_form(g, g->cmp_side[i], 0);
    if (!kl_gd_walk_end(g, g->cmp_side[i], g->cmps[i], p, raw, 0) &&
        kl_gd_bounds(g, kl_gd_thread_form(g, cf), tf, o, kl_gd_walks(g, cf)))
      return g->cmps[i];
  }
  return 0;
}

/* The terms of sum v (through ADD and casts), at most max, into t[n..); returns the count. */
static int kl_gd_sum_terms(const struct kl_ir_fn *f, uint32_t v, uint32_t *t, int n, int max,
                           int depth) {
  if (!v || v >= f->nins || n >= max) return n;
  const struct kl_ir_ins *in = &f->ins[v];
  if (depth < 8 && in->op == KL_IR_CAST && in->nops)
    return kl_gd_sum_terms(f, in->ops[0], t, n, max, depth + 1);
  if (depth < 8 && in->op == KL_IR_BINOP && in->nops == 2 && in->sub == KL_IR_ADD)
    return kl_gd_sum_terms(f, in->ops[1], t, kl_gd_sum_terms(f, in->ops[0], t, n, max, depth + 1),
                           max, depth + 1);
  t[n++] = v;
  return n;
}

/* Whether unbounded term x of index v is kept in range at p by the room another term's bound
 * leaves: that term u is below a size w less a margin (`i0 + 32 <= n`, i0 < n - 31) and x stays
 * in [0, margin] there (lane, up to 31), so u + x < w: a loop over whole tiles of a row. */
static bool kl_gd_room(struct kl_guards *g, uint32_t v, uint32_t x, uint32_t p) {
  uint32_t t[8];
  int n = kl_gd_sum_terms(g->f, v, t, 0, 8, 0);
  struct kl_range rx = kl_ranges_at(g->r, x, p);
  if (rx.lo < 0) return false;
  for (int i = 0; i < n; i++) {
    struct kl_ranges_bound b;
    if (t[i] == x || !kl_ranges_upper(g->r, t[i], p, &b) || !b.w || !kl_gd_uniform(g, b.w) ||
        b.k > 0)
      continue;
    if (rx.hi <= -b.k) return true;
  }
  return false;
}

bool kl_guards_access(struct kl_guards *g, uint32_t access, struct kl_guards_verdict *out) {
  const struct kl_ir_fn *f = g->f;
  memset(out, 0, sizeof *out);
  if (!access || access >= f->nins || !f->ins[access].nops) return false;
  uint8_t op = f->ins[access].op;
  if (op != KL_IR_LOAD && op != KL_IR_STORE && op != KL_IR_ATOMIC) return false;
  /* No thread makes an access in a branch the specialisation's constants rule out. */
  if (kl_gd_dead(f, access)) return true;
  uint32_t addr = f->ins[access].ops[0];
  struct kl_affine off = kl_gd_offset(g, addr);
  bool have = off.known || off.partial;
  for (uint32_t a = addr, d = 0, idx; a && a < f->nins && d < 32; d++) {
    a = kl_gd_step(g, a, &idx);
    if (!idx) continue;
    if (!(g->dep[idx] & KL_GUARDS_THREAD) || kl_gd_uniform(g, idx)) continue;
    out->thread_indexed = true;
    if (kl_gd_bounded(g, idx, access, 8)) continue;
    uint32_t t[8];
    int nt = kl_gd_terms(g, idx, access, t, 0, 0);
    for (int i = 0; i < nt; i++) {
      if (kl_gd_room(g, idx, t[i], access)) continue;
      out->unguarded = true;
      uint8_t dims = g->dep[t[i]] & (KL_GUARDS_X | KL_GUARDS_Y | KL_GUARDS_Z);
      out->dims |= dims ? dims : KL_GUARDS_X;
      /* The part named is one a launch can take past the data, a lane's index only if none. */
      bool wide = (g->dep[t[i]] & KL_GUARDS_WIDE) != 0;
      if (!out->part || (wide && !out->wide && !out->evidence)) out->part = t[i];
      out->wide |= wide;
      if (!out->evidence && have) {
        out->evidence = kl_gd_evidence(g, t[i], access, off);
        if (out->evidence) out->part = t[i];
      }
    }
  }
  return true;
}

uint32_t kl_guards_find_carried(const struct kl_guards *g, uint32_t v) {
  return kl_gd_carried(g, v);
}
