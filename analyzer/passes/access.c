/* The device-access table (see access.h). */
#include "analyzer/passes/access.h"

#include <string.h>

#include "analyzer/passes/divergence.h"
#include "analyzer/passes/valnum.h"

/* How many INDEX steps of one address are followed; an address built deeper is unknown. */
#define KL_ACCESS_STEPS 8

/* Whether a thread coordinate steps by one between adjacent SIMD lanes. */
static bool kl_access_coord_lane(const char *name) {
  return !strcmp(name, "thread_position_in_grid") ||
         !strcmp(name, "thread_position_in_threadgroup") ||
         !strcmp(name, "thread_index_in_threadgroup") ||
         !strcmp(name, "thread_index_in_simdgroup") || !strcmp(name, "thread_index_in_quadgroup");
}

/* The coordinate atom id of s, or NULL for anything else. */
static const struct kl_scev_atom *kl_access_coord(const struct kl_scev *s, uint16_t atom) {
  const struct kl_scev_atom *at = kl_scev_atom(s, atom);
  return at && at->kind == KL_SCEV_COORD && at->coord ? at : NULL;
}

static bool kl_access_quad(const struct kl_scev_atom *at) {
  return at && !strcmp(at->coord->name, "thread_index_in_quadgroup");
}

/* Whether atom steps by one between adjacent lanes (the x component of a lane coordinate). */
static bool kl_access_lane(const struct kl_scev_atom *at) {
  return at && at->comp == 0 && kl_access_coord_lane(at->coord->name);
}

/* Whether a lane atom counts the threads in one line (`thread_index_in_simdgroup`,
 * `thread_index_in_threadgroup`): it steps across the rows of a narrow threadgroup too. */
static bool kl_access_linear(const struct kl_scev_atom *at) {
  return kl_access_lane(at) && !strncmp(at->coord->name, "thread_index_in_", 16) &&
         !kl_access_quad(at);
}

/* The thread position atom steps along (KL_ACCESS_DIM_*), -1 for one the same for every lane
 * of a SIMD group (a threadgroup position, a SIMD group index), -2 for an atom whose steps are
 * not known (a recurrence left after expansion). */
static int kl_access_dim(const struct kl_scev *s, uint16_t atom) {
  const struct kl_scev_atom *at = kl_scev_atom(s, atom);
  if (!at || at->kind != KL_SCEV_COORD) return -2;
  if (!at->coord) return -1;
  if (kl_access_lane(at)) return kl_access_linear(at) ? KL_ACCESS_DIM_LINEAR : KL_ACCESS_DIM_X;
  if (strncmp(at->coord->name, "thread_position_in_", 19)) return -1;
  return at->comp == 1 ? KL_ACCESS_DIM_Y : at->comp == 2 ? KL_ACCESS_DIM_Z : -1;
}

/* The element type a pointer type as written points to: "const device float4*" -> "float4". */
static const char *kl_access_pointee(struct kl_arena *a, const char *t) {
  static const char *const quals[] = {"const", "device", "constant", "volatile", "thread",
                                      "threadgroup", "metal::", NULL};
  char buf[128];
  size_t n = 0;
  for (const char *p = t; *p && n + 1 < sizeof buf;) {
    while (*p == ' ' || *p == '*' || *p == '&') p++;
    bool q = false;
    for (const char *const *k = quals; *k && !q; k++) {
      size_t l = strlen(*k);
      if (!strncmp(p, *k, l) && (p[l] == ' ' || p[l] == '*' || !p[l] || (*k)[l - 1] == ':')) {
        p += l;
        q = true;
      }
    }
    if (q) continue;
    while (*p && *p != ' ' && *p != '*' && *p != '&' && n + 1 < sizeof buf) buf[n++] = *p++;
    break;
  }
  buf[n] = '\0';
  return n ? kl_arena_strdup(a, buf) : NULL;
}

/* A unit-strides name of the settings: v's name (an argument, or the field a load reads). */
static bool kl_access_unit(const struct kl_ir_fn *f, uint32_t v, const struct kl_settings *st) {
  if (!st || !st->nunit_strides || !v || v >= f->nins) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  for (int d = 0; d < 4 && in->op == KL_IR_CAST && in->nops; d++) in = &f->ins[in->ops[0]];
  const char *name = NULL;
  if (in->op == KL_IR_ARG && in->var) name = in->var->name;
  if (in->op == KL_IR_LOAD && in->nops && f->ins[in->ops[0]].op == KL_IR_MEMBER)
    name = f->ins[in->ops[0]].name;
  if (in->op == KL_IR_LOAD && in->nops && f->ins[in->ops[0]].op == KL_IR_ARG &&
      f->ins[in->ops[0]].var)
    name = f->ins[in->ops[0]].var->name;
  for (size_t i = 0; name && i < st->nunit_strides; i++)
    if (kl_config_glob(st->unit_strides[i], name)) return true;
  return false;
}

/* One INDEX step of an address: its index's form (recurrences expanded) and element size. */
struct kl_access_step {
  struct kl_affine form;
  int64_t size;
};

/* The steps of address ad back to its root ARG, outermost first, and the element the access
 * reads: false when the address is not followed to a kernel buffer. */
static bool kl_access_steps(struct kl_arena *a, const struct kl_ir_fn *f, const struct kl_scev *s,
                            uint32_t ad, struct kl_access_step *st, size_t *nst, uint32_t *root,
                            const char **etype, int64_t *esize) {
  *nst = 0;
  *etype = NULL;
  *esize = -1;
  for (int d = 0; ad && ad < f->nins && d < 64; d++) {
    const struct kl_ir_ins *in = &f->ins[ad];
    switch (in->op) {
    case KL_IR_ARG:
      *root = ad;
      if (!*etype && in->var) *etype = in->var->type;
      return true;
    case KL_IR_MEMBER:
      /* A component of the element (`p[i].x`): the element's offset. A struct's field is not. */
      if (!in->nops || f->ins[in->ops[0]].op == KL_IR_ARG) return false;
      ad = in->ops[0];
      continue;
    case KL_IR_CAST:
      if (!in->nops) return false;
      if (!*etype && in->type) {
        *etype = kl_access_pointee(a, in->type);
        const struct kl_msl_type *t = *etype ? kl_msl_type(*etype) : NULL;
        *esize = t ? t->size : 0;
      }
      ad = in->ops[0];
      continue;
    case KL_IR_INDEX:
      if (in->nops < 2 || *nst == KL_ACCESS_STEPS) return false;
      if (!*etype) {
        *etype = in->type;
        *esize = in->imm;
      }
      st[*nst].form = kl_scev_expand(s, kl_scev_form(s, in->ops[1]));
      st[(*nst)++].size = in->imm;
      ad = in->ops[0];
      continue;
    default:
      return false;
    }
  }
  return false;
}

/* The strides of access x from the steps of its address (x->elem_size bytes per element, 0
 * when not known): each term of each step in bytes, then in elements. */
static void kl_access_strides(const struct kl_ir_fn *f, const struct kl_scev *s,
                              const struct kl_settings *settings, const struct kl_access_step *st,
                              size_t nst, struct kl_access *x) {
  /* The unit: bytes when every step's size is known, else every step must be of one size. */
  bool bytes = x->elem_size > 0;
  for (size_t i = 0; i < nst && bytes; i++) bytes = st[i].size > 0;
  for (size_t i = 1; i < nst && !bytes; i++)
    if (st[i].size != st[0].size) return;
  int64_t lane = 0, dim[4] = {0, 0, 0, 0};
  x->lane_known = x->dims_known = true;
  for (size_t i = 0; i < nst; i++) {
    const struct kl_affine *a = &st[i].form;
    if (!a->known) {
      x->lane_known = x->dims_known = false;
      return;
    }
    int64_t scale = bytes ? st[i].size : 1;
    for (uint8_t t = 0; t < a->n; t++) {
      const struct kl_affine_term *tm = &a->t[t];
      const struct kl_scev_atom *co = kl_access_coord(s, tm->atom);
      int d = kl_access_dim(s, tm->atom);
      bool unit = tm->symbolic && kl_access_unit(f, tm->sym & ~KL_AFFINE_SYM_KNOWN, settings);
      /* A compile-time value kernlint cannot see: mostly a small chunk per lane. */
      bool one_ct = tm->symbolic && !unit && (tm->sym & KL_AFFINE_SYM_CT) &&
                    !(tm->sym & KL_AFFINE_SYM_PRODUCT);
      int64_t k = 0;
      if (unit)
        k = bytes ? (int64_t)x->elem_size : 1;
      else if (!tm->symbolic && __builtin_mul_overflow(tm->k, scale, &k))
        x->lane_known = x->dims_known = false;
      /* Lane stride. */
      if (x->lane_known && kl_access_lane(co)) {
        if (one_ct) {
          x->lane_known = x->lane_symbolic = x->lane_compile_time = false;
          lane = 0;
        } else if (tm->symbolic && !unit) {
          bool ct = (tm->sym & KL_AFFINE_SYM_CT) != 0;
          x->lane_compile_time = x->lane_symbolic ? x->lane_compile_time && ct : ct;
          x->lane_symbolic = true;
        } else if (__builtin_add_overflow(lane, k, &lane)) {
          x->lane_known = false;
        }
      } else if (!co && d == -2) {
        /* A value varying by thread that is no coordinate: no lane stride known. */
        x->lane_known = false;
      }
      /* Steps per thread position. */
      if (!x->dims_known) continue;
      if (d == -2 || kl_access_quad(co)) {
        x->dims_known = false;
        continue;
      }
      if (d < 0) continue;
      uint8_t bit = (uint8_t)(1u << d);
      if (one_ct) {
        x->dim_unknown |= bit;
      } else if (tm->symbolic && !unit) {
        if ((tm->sym & KL_AFFINE_SYM_CT) && (!(x->dim_symbolic & bit) || (x->dim_ct & bit)))
          x->dim_ct |= bit;
        else
          x->dim_ct &= (uint8_t)~bit;
        x->dim_symbolic |= bit;
      } else if (__builtin_add_overflow(dim[d], k, &dim[d])) {
        x->dims_known = false;
      }
    }
  }
  /* Bytes back to elements (a part of an element rounds up: lanes still that far apart). */
  int64_t e = bytes ? x->elem_size : 1;
  if (!x->lane_known) x->lane_symbolic = x->lane_compile_time = false;
  x->lane_stride = x->lane_known ? (lane >= 0 ? (lane + e - 1) / e : -((-lane + e - 1) / e)) : 0;
  for (int d = 0; d < 4; d++)
    x->dim_stride[d] = dim[d] >= 0 ? (dim[d] + e - 1) / e : -((-dim[d] + e - 1) / e);
}

/* The value v read through casts. */
static uint32_t kl_access_uncast(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; v && v < f->nins && d < 8 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; d++)
    v = f->ins[v].ops[0];
  return v;
}

/* Whether v is the count of SIMD groups or quadgroups in the threadgroup (one staging lane per
 * SIMD group). */
static bool kl_access_group_count(const struct kl_ir_fn *f, uint32_t v) {
  v = kl_access_uncast(f, v);
  if (!v || v >= f->nins) return false;
  const struct kl_ir_ins *in = &f->ins[v];
  const char *n = in->op == KL_IR_COORD && in->coord ? in->coord->name
                  : in->op == KL_IR_ARG && in->var   ? in->var->attr
                                                     : NULL;
  return n && (!strcmp(n, "simdgroups_per_threadgroup") ||
               !strcmp(n, "quadgroups_per_threadgroup"));
}

/* How few lanes comparison c admits in each SIMD group: `lane < K` (or `K > lane`, `lane <= K`,
 * `lane == K`) with the lane index a thread coordinate from 0 up and K a constant up to 8 or
 * the count of SIMD groups in the threadgroup. */
static int kl_access_few_cmp(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t c) {
  const struct kl_ir_ins *in = &f->ins[c];
  if (in->op != KL_IR_BINOP || in->nops != 2) return 0;
  uint32_t x = in->ops[0], k = in->ops[1];
  uint8_t op = in->sub;
  if (op == KL_IR_GT) {
    uint32_t t = x;
    x = k, k = t;
    op = KL_IR_LT;
  } else if (op != KL_IR_LT && op != KL_IR_LE && op != KL_IR_EQ) {
    return 0;
  }
  struct kl_affine fx = kl_scev_form(s, x);
  if (!fx.known || fx.c0_symbolic || fx.c0 < 0) return 0;
  int few = 0;
  for (uint8_t i = 0; i < fx.n; i++) {
    const struct kl_scev_atom *at = kl_access_coord(s, fx.t[i].atom);
    if (kl_access_lane(at))
      few = fx.t[i].symbolic || fx.t[i].k != 1 ? 0
            : kl_access_linear(at)            ? KL_ACCESS_FEW_ALL
                                              : KL_ACCESS_FEW_ROW;
  }
  /* The index in a quadgroup is the same in every fourth lane: only `== K` leaves few. */
  for (uint8_t i = 0; few && i < fx.n; i++)
    if (kl_access_quad(kl_access_coord(s, fx.t[i].atom)))
      few = op == KL_IR_EQ ? KL_ACCESS_FEW_ALL : 0;
  if (!few) return 0;
  int64_t kv;
  struct kl_affine fk = kl_scev_form(s, k);
  if (fk.known && !fk.n && !fk.c0_symbolic) return fk.c0 <= 8 ? few : 0;
  if (kl_ir_const(f, kl_access_uncast(f, k), &kv)) return kv <= 8 ? few : 0;
  return kl_access_group_count(f, k) ? few : 0;
}

/* How few lanes condition c (an && chain) admits: the fewest any conjunct admits. */
static int kl_access_few_cond(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t c,
                              int depth) {
  c = kl_access_uncast(f, c);
  if (!c || c >= f->nins || depth > 8) return 0;
  const struct kl_ir_ins *in = &f->ins[c];
  int64_t z;
  if ((in->op == KL_IR_BINOP && in->sub == KL_IR_LAND && in->nops == 2) ||
      (in->op == KL_IR_SELECT && in->nops == 3 && kl_ir_const(f, in->ops[2], &z) && z == 0)) {
    uint32_t l = in->op == KL_IR_SELECT ? in->ops[0] : in->ops[0];
    uint32_t r = in->op == KL_IR_SELECT ? in->ops[1] : in->ops[1];
    int a = kl_access_few_cond(f, s, l, depth + 1), b = kl_access_few_cond(f, s, r, depth + 1);
    return a > b ? a : b;
  }
  return kl_access_few_cmp(f, s, c);
}

/* How few lanes of each SIMD group run instruction v: it is in the then block of an IF whose
 * condition admits few lanes. */
static int kl_access_few(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v) {
  int few = 0;
  for (uint32_t u = v, guard = 0; u && guard < f->nins && few < KL_ACCESS_FEW_ALL; guard++) {
    uint32_t b = f->ins[u].block, p = f->blocks[b].parent;
    if (p && f->ins[p].op == KL_IR_IF && f->ins[p].blk[0] == b && f->ins[p].nops) {
      int k = kl_access_few_cond(f, s, f->ins[p].ops[0], 0);
      if (k > few) few = k;
    }
    u = p;
  }
  return few;
}

/* The kernel's own call that inlined site (null in the kernel): its outermost site's. */
static TSNode kl_access_top_call(const struct kl_ir_fn *f, uint32_t site) {
  for (uint32_t guard = 0; site && site < f->nsites && guard < f->nsites; guard++) {
    if (!f->sites[site].parent) return f->sites[site].call;
    site = f->sites[site].parent;
  }
  return (TSNode){{0}, NULL, NULL};
}

/* The function whose code holds an instruction of site: the innermost helper (a lambda's is the
 * code that defines it), or the kernel. */
static const struct kl_function *kl_access_owner(const struct kl_ir_fn *f, uint32_t site) {
  for (uint32_t guard = 0; site && site < f->nsites && guard < f->nsites; guard++) {
    if (f->sites[site].callee && !f->sites[site].lambda) return f->sites[site].callee;
    site = f->sites[site].parent;
  }
  return f->kernel;
}

bool kl_access_strided(const struct kl_access *x) {
  const int64_t *d = x->dim_stride;
  return (x->lane_known && (x->lane_symbolic || x->lane_stride)) ||
         (x->dims_known && (d[0] || d[1] || d[2] || d[3] || x->dim_symbolic || x->dim_unknown));
}

size_t kl_access_collect(struct kl_arena *a, const struct kl_ir_fn *f, const struct kl_scev *s,
                         const struct kl_settings *settings, struct kl_access_table *t) {
  size_t first = t->n;
  const char *inst = f->inst ? kl_arena_strdup(a, f->inst) : NULL;
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if ((in->op != KL_IR_LOAD && in->op != KL_IR_STORE && in->op != KL_IR_ATOMIC) || !in->nops)
      continue;
    if (in->op != KL_IR_ATOMIC && in->as != KL_AS_DEVICE) continue;
    /* Where this lowering's constants send no thread, nothing is accessed. */
    if (kl_divergence_dead(f, v)) continue;
    struct kl_access_step st[KL_ACCESS_STEPS];
    size_t nst;
    uint32_t root = 0;
    const char *etype;
    int64_t esize;
    if (!kl_access_steps(a, f, s, in->ops[0], st, &nst, &root, &etype, &esize)) continue;
    const struct kl_var *buf = f->ins[root].var;
    if (!buf || !kl_scev_arg_is_memory(buf) || buf->as != KL_AS_DEVICE) continue;
    TSNode call = kl_access_top_call(f, in->site);
    uint32_t at = ts_node_start_byte(in->node);
    bool store = in->op != KL_IR_LOAD;
    /* One record per node and call: a store wins over the load of `x[i] += v`. */
    size_t dup = t->n;
    for (size_t i = first; i < t->n && dup == t->n; i++)
      if (ts_node_start_byte(t->v[i].node) == at && ts_node_eq(t->v[i].call, call)) dup = i;
    if (dup != t->n) {
      if (store && !t->v[dup].store) t->v[dup].store = true, t->v[dup].ins = v;
      continue;
    }
    KL_VEC_PUSH(a, t->v, t->n, t->cap);
    struct kl_access *x = &t->v[t->n];
    memset(x, 0, sizeof *x);
    x->ins = v;
    x->address = in->ops[0];
    x->node = in->node;
    x->buffer = buf;
    x->elem_type = etype;
    x->elem_size = esize > 0 ? (unsigned)esize : 0;
    x->store = store;
    x->atomic = in->op == KL_IR_ATOMIC;
    uint32_t r;
    if (!kl_scev_address(s, in->ops[0], &r, &x->form) || r != root)
      x->form = kl_affine_unknown();
    else
      x->form = kl_scev_expand(s, x->form);
    kl_access_strides(f, s, settings, st, nst, x);
    if (kl_access_strided(x)) {
      x->few = (uint8_t)kl_access_few(f, s, v);
      if (x->few) {
        x->lane_known = x->lane_symbolic = x->lane_compile_time = false;
        x->lane_stride = 0;
      }
    }
    x->kernel = f->kernel;
    x->owner = kl_access_owner(f, in->site);
    x->call = call;
    x->inst = inst;
    x->index_rep = (uint32_t)t->n;
    t->n++;
  }
  /* The same offset, among the strided accesses of one call context (the rule asks of those). */
  for (size_t j = first; j < t->n; j++) {
    struct kl_access *y = &t->v[j];
    if (!kl_access_strided(y)) continue;
    for (size_t i = first; i < j; i++) {
      const struct kl_access *x = &t->v[i];
      if (x->index_rep != i || !kl_access_strided(x) || !ts_node_eq(x->call, y->call)) continue;
      if (kl_valnum_same_offset(f, s, x->address, y->address)) {
        y->index_rep = (uint32_t)i;
        break;
      }
    }
  }
  return t->n - first;
}
