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

/* Bytes of a type by name, 0 when not known. */
static int64_t kl_access_size_of(const char *t) {
  static const struct {
    const char *n;
    int64_t s;
  } extra[] = {{"int32_t", 4}, {"uint32_t", 4}, {"int16_t", 2}, {"uint16_t", 2},
               {"uint8_t", 1}, {"int64_t", 8},  {"uint64_t", 8}, {"size_t", 8},
               {"unsigned", 4}};
  const struct kl_msl_type *m = t ? kl_msl_type(t) : NULL;
  if (m) return m->size;
  for (size_t i = 0; t && i < sizeof extra / sizeof extra[0]; i++)
    if (!strcmp(t, extra[i].n)) return extra[i].s;
  return 0;
}

/* The element size of INDEX in: its own, or when the lowering left it unknown after a pointer
 * cast (`(device char *)dst + off`), the cast's pointee's. */
static int64_t kl_access_index_size(struct kl_arena *a, const struct kl_ir_fn *f,
                                    const struct kl_ir_ins *in) {
  if (in->imm > 0) return in->imm;
  uint32_t b = in->ops[0];
  while (b && b < f->nins && f->ins[b].op == KL_IR_INDEX && !f->ins[b].imm && f->ins[b].nops)
    b = f->ins[b].ops[0];
  if (!b || b >= f->nins || f->ins[b].op != KL_IR_CAST || !f->ins[b].type) return 0;
  return kl_access_size_of(kl_access_pointee(a, f->ins[b].type));
}

/* The form of integer value v with each loop counter expanded where it is read (its start plus
 * a uniform multiple of its step) before it is combined: `(i - lid) * rows` with i counting from
 * lid by a uniform step is uniform, where scev's form, whose counter is an atom until the end,
 * keeps a symbolic coefficient on lid that cannot cancel. Deep expressions take scev's form. */
static struct kl_affine kl_access_eval(const struct kl_ir_fn *f, const struct kl_scev *s,
                                       uint32_t v, int depth) {
  if (!v || v >= f->nins) return kl_affine_unknown();
  const struct kl_ir_ins *in = &f->ins[v];
  struct kl_affine raw = kl_scev_form(s, v), whole = kl_scev_expand(s, raw);
  bool rec = false;
  for (uint8_t i = 0; i < raw.n && !rec; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(s, raw.t[i].atom);
    rec = at && at->kind == KL_SCEV_REC;
  }
  /* Only a form with a counter in it (not the counter itself) can gain. */
  if (depth <= 0 || !rec || kl_scev_rec(s, v)) return whole;
  switch (in->op) {
  case KL_IR_CAST:
    return in->nops ? kl_access_eval(f, s, in->ops[0], depth - 1) : whole;
  case KL_IR_UNOP:
    if (in->sub != KL_IR_NEG || !in->nops) return whole;
    return kl_affine_mul(kl_access_eval(f, s, in->ops[0], depth - 1), kl_affine_const(-1));
  case KL_IR_BINOP: {
    if (in->nops != 2) return whole;
    struct kl_affine x = kl_access_eval(f, s, in->ops[0], depth - 1);
    if (!x.known) return whole;
    struct kl_affine y = kl_access_eval(f, s, in->ops[1], depth - 1);
    if (!y.known) return whole;
    struct kl_affine r = whole;
    int64_t c;
    if (in->sub == KL_IR_ADD)
      r = kl_affine_add(x, y, 1);
    else if (in->sub == KL_IR_SUB)
      r = kl_affine_add(x, y, -1);
    else if (in->sub == KL_IR_MUL)
      r = kl_affine_mul(x, y);
    else if (in->sub == KL_IR_SHL && !y.n && !y.c0_symbolic && (c = y.c0) >= 0 && c < 62)
      r = kl_affine_mul(x, kl_affine_const((int64_t)1 << c));
    return r.known ? r : whole;
  }
  default:
    return whole;
  }
}

/* One INDEX step of an address: its index's form (recurrences expanded) and element size (0:
 * not known; -1: not known, under a cast to another element, so in units that cannot be
 * matched to the access's). */
struct kl_access_step {
  struct kl_affine form;
  struct kl_affine raw; /* the index's form as scev gives it, loop counters as atoms */
  int64_t size;
};

static uint32_t kl_access_phi_base(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v,
                                   uint32_t stop, int depth);

/* v with its uniform steps taken off (INDEX by a uniform index, casts, joins of one pointer so
 * moved): the pointer it moves; stop is returned as soon as it is met. */
static uint32_t kl_access_base(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v,
                               uint32_t stop, int depth) {
  for (int d = 0; v && v < f->nins && d < 64; d++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if (v == stop) return v;
    if (in->op == KL_IR_CAST && in->nops) {
      v = in->ops[0];
    } else if (in->op == KL_IR_INDEX && in->nops == 2) {
      struct kl_affine k = kl_scev_form(s, in->ops[1]);
      if (!k.known || !kl_affine_is_uniform(k)) return v;
      v = in->ops[0];
    } else if (in->op == KL_IR_PHI && depth < 6) {
      uint32_t b = kl_access_phi_base(f, s, v, stop, depth + 1);
      if (!b) return v;
      v = b;
    } else {
      return v;
    }
  }
  return v;
}

/* The pointer a PHI of pointers moves by uniform steps only: every incoming value is that one
 * moved (for a loop's header PHI, its back edge is the PHI itself moved, and the entry is the
 * pointer); 0 when there is none. */
static uint32_t kl_access_phi_base(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v,
                                   uint32_t stop, int depth) {
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->sub == KL_IR_PHI_HEAD) {
    if (in->nops != 2 || kl_access_base(f, s, in->ops[1], v, depth) != v) return 0;
    return in->ops[0];
  }
  uint32_t base = 0;
  for (uint32_t i = 0; i < in->nops; i++) {
    if (!in->ops[i]) continue;
    uint32_t b = kl_access_base(f, s, in->ops[i], stop, depth);
    if (b == v || (base && b != base)) return 0;
    base = b;
  }
  return base;
}

/* The steps of address ad back to its root ARG, outermost first, and the element the access
 * reads: false when the address is not followed to a kernel buffer. */
static bool kl_access_steps(struct kl_arena *a, const struct kl_ir_fn *f, const struct kl_scev *s,
                            uint32_t ad, struct kl_access_step *st, size_t *nst, uint32_t *root,
                            const char **etype, int64_t *esize) {
  *nst = 0;
  *etype = NULL;
  *esize = -1;
  const char *cast_to = NULL; /* the element of the last cast met, outside the steps below */
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
      if (in->type) cast_to = kl_access_pointee(a, in->type);
      if (!*etype && in->type) {
        *etype = kl_access_pointee(a, in->type);
        *esize = kl_access_size_of(*etype);
      }
      ad = in->ops[0];
      continue;
    case KL_IR_PHI:
      /* A pointer moved in a loop or a branch by amounts the same for every thread: the
       * pointer's steps. */
      ad = kl_access_phi_base(f, s, ad, 0, 0);
      continue;
    case KL_IR_INDEX:
      if (in->nops < 2 || *nst == KL_ACCESS_STEPS) return false;
      int64_t size = kl_access_index_size(a, f, in);
      if (*esize < 0) *esize = size;
      if (!*etype && in->type && *in->type) *etype = in->type;
      st[*nst].form = kl_access_eval(f, s, in->ops[1], 12);
      st[*nst].raw = kl_scev_form(s, in->ops[1]);
      bool other = cast_to && (!in->type || strcmp(in->type, cast_to));
      st[(*nst)++].size = !size && other ? -1 : size;
      ad = in->ops[0];
      continue;
    default:
      return false;
    }
  }
  return false;
}

/* The name of compile-time symbol v (through casts), or NULL. */
static const char *kl_access_symbol(const struct kl_ir_fn *f, uint32_t v) {
  for (int d = 0; v && v < f->nins && d < 8 && f->ins[v].op == KL_IR_CAST && f->ins[v].nops; d++)
    v = f->ins[v].ops[0];
  return v && v < f->nins && f->ins[v].op == KL_IR_SYMBOL ? f->ins[v].name : NULL;
}

/* Whether instruction v runs only where compile-time symbol name is not 1: in the else block of
 * `name == 1`, or the then block of `name != 1` or `name > 1`. The kernel then tells a stride
 * from a chunk itself (`if (stride == 1) { contiguous } else { strided }`). */
static bool kl_access_not_one(const struct kl_ir_fn *f, uint32_t v, const char *name) {
  for (uint32_t u = v, guard = 0; u && name && guard < f->nins; guard++) {
    uint32_t b = f->ins[u].block, p = f->blocks[b].parent;
    if (!p) return false;
    const struct kl_ir_ins *pi = &f->ins[p];
    const struct kl_ir_ins *c = pi->op == KL_IR_IF && pi->nops ? &f->ins[pi->ops[0]] : NULL;
    if (c && c->op == KL_IR_BINOP && c->nops == 2) {
      for (int side = 0; side < 2; side++) {
        const char *n = kl_access_symbol(f, c->ops[side]);
        int64_t k;
        if (!n || strcmp(n, name) || !kl_ir_const(f, c->ops[1 - side], &k) || k != 1) continue;
        bool then = pi->blk[0] == b;
        uint8_t op = c->sub;
        if ((op == KL_IR_EQ && !then) || (op == KL_IR_NE && then) ||
            (then && op == (side ? KL_IR_LT : KL_IR_GT)))
          return true;
      }
    }
    u = p;
  }
  return false;
}

/* Whether the index walks memory one fixed step at a time along some axis other than atom's:
 * another thread position, or a loop counter, with a constant
 * coefficient in some step of the address (`x[gid * D + j]`, `x[row * ld + tid.y]`). A runtime
 * lane stride is then a row length, the lanes on rows of their own; without such an axis the
 * runtime value scales the whole index (`w[w_stride * i]`), the element stride of the one axis
 * the lanes walk. */
static bool kl_access_walks(const struct kl_ir_fn *f, const struct kl_scev *s,
                            const struct kl_settings *settings, const struct kl_access_step *st,
                            size_t nst, uint16_t atom) {
  for (size_t i = 0; i < nst; i++) {
    const struct kl_affine *a = &st[i].raw;
    if (!a->known && !a->partial) continue;
    for (uint8_t t = 0; t < a->n; t++) {
      const struct kl_affine_term *tm = &a->t[t];
      bool unit = tm->symbolic && kl_access_unit(f, tm->sym & ~KL_AFFINE_SYM_KNOWN, settings);
      if (tm->symbolic ? !unit : !tm->k) continue;
      const struct kl_scev_atom *at = kl_scev_atom(s, tm->atom);
      if (tm->atom != atom && at && (at->kind == KL_SCEV_REC || at->coord)) return true;
    }
  }
  return false;
}

/* The strides of access x from the steps of its address (x->elem_size bytes per element, 0
 * when not known): each term of each step in bytes, then in elements. */
static bool kl_access_strides(const struct kl_ir_fn *f, const struct kl_scev *s,
                              const struct kl_settings *settings, const struct kl_access_step *st,
                              size_t nst, uint32_t v, bool row, struct kl_access *x) {
  bool took = false; /* a runtime lane step taken for an element stride */
  /* The unit: bytes when every step's size is known, else every step must be of one size. */
  bool bytes = x->elem_size > 0;
  for (size_t i = 0; i < nst && bytes; i++) bytes = st[i].size > 0;
  for (size_t i = 0; i < nst && !bytes; i++)
    if (st[i].size != st[0].size || st[i].size < 0) return false;
  int64_t lane = 0, dim[4] = {0, 0, 0, 0};
  bool quad = false, others = false;
  x->lane_known = x->dims_known = true;
  for (size_t i = 0; i < nst; i++) {
    const struct kl_affine *a = &st[i].form;
    if (!a->known) {
      x->lane_known = x->dims_known = false;
      return false;
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
      /* A runtime value scaling every varying part of the index: the element stride of the
       * axis the lanes walk, which the host hands in (1 for contiguous data), not a row. */
      bool elem_stride = tm->symbolic && !unit && !(tm->sym & KL_AFFINE_SYM_CT) && !row &&
                         !kl_access_walks(f, s, settings, st, nst, tm->atom);
      /* Not where the kernel has set it apart from 1: a stride there. */
      if (one_ct &&
          kl_access_not_one(f, v, kl_access_symbol(f, tm->sym & ~KL_AFFINE_SYM_KNOWN))) {
        one_ct = false;
        x->ct_not_one = true;
      }
      if (kl_access_quad(co))
        quad = true;
      else if (!co ? d == -2 : co->scope == KL_SCOPE_THREAD)
        others = true;
      int64_t k = 0;
      if (unit)
        k = bytes ? (int64_t)x->elem_size : 1;
      else if (!tm->symbolic && __builtin_mul_overflow(tm->k, scale, &k))
        x->lane_known = x->dims_known = false;
      /* Lane stride. */
      if (x->lane_known && kl_access_lane(co)) {
        took |= elem_stride;
        if (one_ct || elem_stride) {
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
      if (one_ct || elem_stride) {
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
  /* Indexed by the position in a quadgroup alone, the 32 lanes make 4 addresses, repeated by
   * each quadgroup: as few lines as a few lanes make. */
  if (quad && !others) x->few = KL_ACCESS_FEW_ALL;
  /* Bytes back to elements (a part of an element rounds up: lanes still that far apart). */
  int64_t e = bytes ? x->elem_size : 1;
  if (!x->lane_known) x->lane_symbolic = x->lane_compile_time = false;
  x->lane_stride = x->lane_known ? (lane >= 0 ? (lane + e - 1) / e : -((-lane + e - 1) / e)) : 0;
  for (int d = 0; d < 4; d++)
    x->dim_stride[d] = dim[d] >= 0 ? (dim[d] + e - 1) / e : -((-dim[d] + e - 1) / e);
  return took;
}

/* The index of address v (an INDEX) split into a part and a constant added to it: *part is 0
 * when the index is a constant. False when v is no INDEX. */
static bool kl_access_split(const struct kl_ir_fn *f, uint32_t v, uint32_t *base, uint32_t *part,
                            int64_t *c) {
  if (!v || v >= f->nins || f->ins[v].op != KL_IR_INDEX || f->ins[v].nops < 2) return false;
  *base = f->ins[v].ops[0];
  uint32_t i = f->ins[v].ops[1];
  *part = i;
  *c = 0;
  if (kl_ir_const(f, i, c)) {
    *part = 0;
    return true;
  }
  const struct kl_ir_ins *in = &f->ins[i];
  int64_t k;
  if (in->op == KL_IR_BINOP && in->nops == 2 && (in->sub == KL_IR_ADD || in->sub == KL_IR_SUB)) {
    if (kl_ir_const(f, in->ops[1], &k)) {
      *part = in->ops[0];
      *c = in->sub == KL_IR_ADD ? k : -k;
    } else if (in->sub == KL_IR_ADD && kl_ir_const(f, in->ops[0], &k)) {
      *part = in->ops[1];
      *c = k;
    }
  }
  return true;
}

/* Elements of one row a thread reads one after another (`x[r * ld]`, `x[r * ld + 1]`) lie at
 * most this far apart. */
#define KL_ACCESS_ROW_NEAR 16

/* The constant factor of a product v (`2 * gid * s`: 2), 1 when none. */
static int64_t kl_access_factor(const struct kl_ir_fn *f, uint32_t v, int depth) {
  if (!v || v >= f->nins || depth > 8) return 1;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op == KL_IR_CAST && in->nops) return kl_access_factor(f, in->ops[0], depth + 1);
  if (in->op != KL_IR_BINOP || in->nops != 2 || in->sub != KL_IR_MUL) return 1;
  int64_t k, r = 1;
  for (int i = 0; i < 2; i++) {
    int64_t m = kl_ir_const(f, in->ops[i], &k) ? (k < 0 ? -k : k)
                                                 : kl_access_factor(f, in->ops[i], depth + 1);
    if (m > 1 << 20 || __builtin_mul_overflow(r, m, &r)) return 1;
  }
  return r ? r : 1;
}

/* Whether access x has a neighbour among t's entries [first, n) in its call context: an access
 * of the same base whose index is x's plus a constant 1 to KL_ACCESS_ROW_NEAR elements either
 * way (`x[gid * ld]` beside `x[gid * ld + 1]`), and no less than a constant factor of x's own
 * step. A thread reading elements next to each other holds a row of its own, so a runtime step
 * between lanes is that row's length. */
static bool kl_access_row_neighbour(const struct kl_ir_fn *f, const struct kl_access_table *t,
                                    size_t first, const struct kl_access *x) {
  uint32_t xb, xp, yb, yp;
  int64_t xc, yc;
  if (!kl_access_split(f, x->address, &xb, &xp, &xc)) return false;
  /* `x[2 * gid * s]` beside `x[2 * gid * s + 1]`: the pairs of an interleaved layout, each
   * thread's record k elements wide at the host's element stride -- no row. */
  int64_t k = xp ? kl_access_factor(f, xp, 0) : 1;
  for (size_t j = first; j < t->n; j++) {
    const struct kl_access *y = &t->v[j];
    if (y == x || y->buffer != x->buffer || !ts_node_eq(y->call, x->call)) continue;
    if (!kl_access_split(f, y->address, &yb, &yp, &yc)) continue;
    int64_t d = yc > xc ? yc - xc : xc - yc;
    if (d < 1 || d > KL_ACCESS_ROW_NEAR || d < k) continue;
    if (!kl_valnum_equal(f, NULL, xb, yb)) continue;
    if (xp == yp || (xp && yp && kl_valnum_equal(f, NULL, xp, yp))) return true;
  }
  return false;
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

/* ---- Scalar tails ----
 * Lanes that own chunks of a range (chunk start x, s elements apart from lane to lane) and test
 * `x + w <= d` split into those whose chunk fits and the others (the tail). A lane of the tail
 * has x > d - w; if it reaches an access only while some y >= x is below d (a loop from x while
 * `i < d`, a check `x + k < d`), it also has x < d, so x lies in [d - w + 1, d - 1]: when those
 * w - 1 values are no more than s, at most one lane (per row of x positions) makes the access,
 * the one whose chunk straddles d. The same for the code after `if (x + w <= d) { ...; return; }`
 * and for `lane * per + per <= d`, whose chunk width is the lane step whatever its value. */

/* A chunk test: its chunk start x (a value), bound d, and how few lanes its tail leaves. */
struct kl_access_tail {
  uint32_t x, d;
  int few;
};

/* The step of form a from one lane to the next (its lane coefficients, each a constant), and
 * how few lanes an interval shorter than it holds: all when every lane term counts the threads
 * in one line and no other thread position takes part, else few per row. */
static bool kl_access_lane_step(const struct kl_scev *s, struct kl_affine a, int64_t *step,
                                int *few) {
  if (!a.known) return false;
  bool lane = false, rows = false;
  *step = 0;
  for (uint8_t i = 0; i < a.n; i++) {
    const struct kl_scev_atom *at = kl_access_coord(s, a.t[i].atom);
    if (!at) {
      if (!kl_scev_atom(s, a.t[i].atom)) return false;
      continue;
    }
    if (!kl_access_lane(at)) {
      rows = rows || at->scope == KL_SCOPE_THREAD;
      continue;
    }
    if (a.t[i].symbolic || kl_access_quad(at) || __builtin_add_overflow(*step, a.t[i].k, step))
      return false;
    lane = true;
    rows = rows || !kl_access_linear(at);
  }
  *few = rows ? KL_ACCESS_FEW_ROW : KL_ACCESS_FEW_ALL;
  return lane;
}

/* v as `x + w` with w a constant (w 0 and x = v when it is no such sum). */
static uint32_t kl_access_plus(const struct kl_ir_fn *f, uint32_t v, int64_t *w) {
  v = kl_access_uncast(f, v);
  *w = 0;
  const struct kl_ir_ins *in = &f->ins[v];
  if (in->op != KL_IR_BINOP || in->sub != KL_IR_ADD || in->nops != 2) return v;
  if (kl_ir_const(f, in->ops[1], w)) return kl_access_uncast(f, in->ops[0]);
  if (kl_ir_const(f, in->ops[0], w)) return kl_access_uncast(f, in->ops[1]);
  return v;
}

/* Whether comparison c, on the side taken (or not), is a chunk test (see above) into *t. */
static bool kl_access_tail_test(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t c,
                                bool taken, struct kl_access_tail *t) {
  c = kl_access_uncast(f, c);
  const struct kl_ir_ins *in = &f->ins[c];
  if (in->op != KL_IR_BINOP || in->nops != 2 || in->sub < KL_IR_LT || in->sub > KL_IR_GE)
    return false;
  uint32_t a = in->ops[0], b = in->ops[1];
  uint8_t op = in->sub;
  if (kl_affine_has_atoms(kl_scev_form(s, b))) {
    uint32_t x = a;
    a = b, b = x;
    op = op == KL_IR_LT   ? KL_IR_GT
         : op == KL_IR_LE ? KL_IR_GE
         : op == KL_IR_GT ? KL_IR_LT
                          : KL_IR_LE;
  }
  /* Where the side holds: a > b or a >= b. */
  bool gt = op == (taken ? KL_IR_GT : KL_IR_LE), ge = op == (taken ? KL_IR_GE : KL_IR_LT);
  if ((!gt && !ge) || kl_scev_scope(s, b) > KL_SCOPE_SIMDGROUP) return false;
  int64_t w, step;
  uint32_t x = kl_access_plus(f, a, &w);
  if (kl_access_lane_step(s, kl_scev_form(s, x), &step, &t->few)) {
    if (step <= 0 || (gt ? w - 1 : w) > step) return false;
  } else {
    /* `lane * per + per <= d`. */
    const struct kl_ir_ins *ai = &f->ins[kl_access_uncast(f, a)];
    if (ai->op != KL_IR_BINOP || ai->sub != KL_IR_ADD || ai->nops != 2) return false;
    bool ok = false;
    for (int side = 0; side < 2 && !ok; side++) {
      uint32_t m = kl_access_uncast(f, ai->ops[side]), per = ai->ops[1 - side];
      const struct kl_ir_ins *mi = &f->ins[m];
      if (mi->op != KL_IR_BINOP || mi->sub != KL_IR_MUL || mi->nops != 2) continue;
      for (int k = 0; k < 2 && !ok; k++)
        ok = kl_valnum_equal(f, s, mi->ops[k], per) &&
             kl_access_lane_step(s, kl_scev_form(s, mi->ops[1 - k]), &step, &t->few) &&
             step == 1;
      if (ok) x = m;
    }
    if (!ok) return false;
  }
  t->x = x;
  t->d = b;
  return true;
}

/* Whether form y is at least form x wherever it is read: y - x is a constant of 0 or more plus
 * counters that count up from 0 or more. */
static bool kl_access_at_least(const struct kl_scev *s, struct kl_affine y, struct kl_affine x) {
  struct kl_affine d = kl_affine_add(y, x, -1);
  if (!d.known || d.c0_symbolic || d.c0 < 0) return false;
  for (uint8_t i = 0; i < d.n; i++) {
    const struct kl_scev_atom *at = kl_scev_atom(s, d.t[i].atom);
    if (!at || at->kind != KL_SCEV_REC || d.t[i].symbolic || d.t[i].k < 0) return false;
    struct kl_affine st = at->start_form, sp = at->step;
    if (!st.known || st.n || st.c0_symbolic || st.c0 < 0 || !sp.known || sp.n ||
        sp.c0_symbolic || sp.c0 <= 0)
      return false;
  }
  return true;
}

/* Whether value y is at least the tail's chunk start: its form, or for a loop's counter, its
 * start's, when it counts up. */
static bool kl_access_from(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t y,
                           const struct kl_access_tail *t) {
  y = kl_access_uncast(f, y);
  struct kl_affine fx = kl_scev_form(s, t->x);
  const struct kl_scev_atom *rec = kl_scev_rec(s, y);
  if (rec) {
    struct kl_affine sp = rec->step;
    return sp.known && !sp.n && !sp.c0_symbolic && sp.c0 > 0 &&
           kl_access_at_least(s, rec->start_form, fx);
  }
  return kl_access_at_least(s, kl_scev_form(s, y), fx);
}

/* Whether d is the tail's bound: the same value, or min(.., bound). */
static bool kl_access_same_bound(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t d,
                                 const struct kl_access_tail *t) {
  if (kl_valnum_equal(f, s, d, t->d)) return true;
  const struct kl_ir_ins *in = &f->ins[kl_access_uncast(f, d)];
  return in->op == KL_IR_BINOP && in->sub == KL_IR_MIN && in->nops == 2 &&
         (kl_valnum_equal(f, s, in->ops[0], t->d) || kl_valnum_equal(f, s, in->ops[1], t->d));
}

/* Whether condition c (an && chain) has a conjunct `y < d` (or `d > y`, or `y + k <= d` with k
 * a constant of 1 or more) with the tail's bound and a y at least its chunk start. */
static bool kl_access_tail_cond(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t c,
                                const struct kl_access_tail *t, int depth) {
  c = kl_access_uncast(f, c);
  if (!c || depth > 8) return false;
  const struct kl_ir_ins *in = &f->ins[c];
  int64_t z;
  if ((in->op == KL_IR_BINOP && in->sub == KL_IR_LAND && in->nops == 2) ||
      (in->op == KL_IR_SELECT && in->nops == 3 && kl_ir_const(f, in->ops[2], &z) && z == 0))
    return kl_access_tail_cond(f, s, in->ops[0], t, depth + 1) ||
           kl_access_tail_cond(f, s, in->ops[1], t, depth + 1);
  if (in->op != KL_IR_BINOP || in->nops != 2) return false;
  uint32_t y = in->ops[0], d = in->ops[1];
  uint8_t op = in->sub;
  if (op == KL_IR_GT || op == KL_IR_GE) {
    uint32_t x = y;
    y = d, d = x;
    op = op == KL_IR_GT ? KL_IR_LT : KL_IR_LE;
  } else if (op != KL_IR_LT && op != KL_IR_LE) {
    return false;
  }
  if (op == KL_IR_LE) {
    int64_t k;
    y = kl_access_plus(f, y, &k);
    if (k < 1) return false;
  }
  return kl_access_same_bound(f, s, d, t) && kl_access_from(f, s, y, t);
}

/* Whether instruction v, inside the tail that holds in block region, runs only under a check
 * that its lane's chunk starts below the bound: an IF it is in the then block of, or a LOOP it
 * is in the body of, between it and region. */
static bool kl_access_tail_bounded(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v,
                                   uint32_t region, const struct kl_access_tail *t) {
  for (uint32_t u = v, guard = 0; u && guard < f->nins; guard++) {
    uint32_t b = f->ins[u].block;
    if (b == region) return false;
    uint32_t p = f->blocks[b].parent;
    if (!p) return false;
    const struct kl_ir_ins *pi = &f->ins[p];
    if (pi->op == KL_IR_IF && pi->blk[0] == b && pi->nops &&
        kl_access_tail_cond(f, s, pi->ops[0], t, 0))
      return true;
    if (pi->op == KL_IR_LOOP && pi->blk[1] == b && pi->nops && pi->ops[0] &&
        !(pi->flags & (KL_IR_F_DO_WHILE | KL_IR_F_REGION)) &&
        kl_access_tail_cond(f, s, pi->ops[0], t, 0))
      return true;
    u = p;
  }
  return false;
}

/* How few lanes run v when it is in block region where chunk test c holds (taken) or not. */
static int kl_access_tail(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v,
                          uint32_t c, bool taken, uint32_t region) {
  struct kl_access_tail t;
  if (!kl_access_tail_test(f, s, c, taken, &t) || !kl_access_tail_bounded(f, s, v, region, &t))
    return 0;
  return t.few;
}

/* Whether block b ends by leaving: its last instruction is a return, break or continue. */
static bool kl_access_exits(const struct kl_ir_fn *f, uint32_t b) {
  if (!b || !f->blocks[b].n) return false;
  uint8_t op = f->ins[f->blocks[b].ins[f->blocks[b].n - 1]].op;
  return op == KL_IR_RETURN || op == KL_IR_BREAK || op == KL_IR_CONTINUE;
}

/* How few lanes of each SIMD group run instruction v: it is in the then block of an IF whose
 * condition admits few lanes, or in the tail of a chunk test (an IF's else block, its then
 * block for the reversed test, or the code after an IF whose then block leaves). */
static int kl_access_few(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v) {
  int few = 0;
  for (uint32_t u = v, guard = 0; u && guard < f->nins && few < KL_ACCESS_FEW_ALL; guard++) {
    uint32_t b = f->ins[u].block, p = f->blocks[b].parent;
    int k = 0;
    /* The code after `if (x + w <= d) { ...; return; }` in this block. */
    const struct kl_ir_block *bl = &f->blocks[b];
    for (uint32_t i = 0; i < bl->n && bl->ins[i] != u && k < KL_ACCESS_FEW_ALL; i++) {
      const struct kl_ir_ins *q = &f->ins[bl->ins[i]];
      if (q->op == KL_IR_IF && q->nops && kl_access_exits(f, q->blk[0]) && !q->blk[1]) {
        int e = kl_access_tail(f, s, v, q->ops[0], false, b);
        if (e > k) k = e;
      }
    }
    if (p && f->ins[p].op == KL_IR_IF && f->ins[p].nops) {
      bool then = f->ins[p].blk[0] == b;
      int e = then ? kl_access_few_cond(f, s, f->ins[p].ops[0], 0) : 0;
      if (!e) e = kl_access_tail(f, s, v, f->ins[p].ops[0], then, b);
      if (e > k) k = e;
    }
    if (k > few) few = k;
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

/* Few lanes make a strided access (kl_access_few): it has no lane stride then. */
static void kl_access_few_lanes(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t v,
                                struct kl_access *x) {
  if (!kl_access_is_strided(x)) return;
  int few = kl_access_few(f, s, v);
  if (few > x->few) x->few = (uint8_t)few;
  if (x->few) {
    x->lane_known = x->lane_symbolic = x->lane_compile_time = false;
    x->lane_stride = 0;
  }
}

bool kl_access_is_strided(const struct kl_access *x) {
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
    for (size_t i = first; i < t->n && dup == t->n && !ts_node_is_null(in->node); i++)
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
    /* The lowering's own strings go with it: the table keeps a copy. */
    x->elem_type = etype ? kl_arena_strdup(a, etype) : NULL;
    x->elem_size = esize > 0 ? (unsigned)esize : 0;
    x->store = store;
    x->atomic = in->op == KL_IR_ATOMIC;
    uint32_t r;
    if (!kl_scev_address(s, in->ops[0], &r, &x->form) || r != root)
      x->form = kl_affine_unknown();
    else
      x->form = kl_scev_expand(s, x->form);
    x->row_step = kl_access_strides(f, s, settings, st, nst, v, false, x);
    kl_access_few_lanes(f, s, v, x);
    x->kernel = f->kernel;
    x->owner = kl_access_owner(f, in->site);
    x->call = call;
    x->inst = inst;
    x->index_rep = (uint32_t)t->n;
    t->n++;
  }
  /* A runtime lane step taken for an element stride is a row length where the thread reads the
   * elements beside the one it steps to. */
  for (size_t j = first; j < t->n; j++) {
    struct kl_access *x = &t->v[j];
    if (!x->row_step || !kl_access_row_neighbour(f, t, first, x)) continue;
    struct kl_access_step st[KL_ACCESS_STEPS];
    size_t nst;
    uint32_t root = 0;
    const char *etype;
    int64_t esize;
    if (!kl_access_steps(a, f, s, x->address, st, &nst, &root, &etype, &esize)) continue;
    struct kl_access again = *x;
    again.lane_known = again.lane_symbolic = again.lane_compile_time = false;
    again.dims_known = false;
    again.lane_stride = 0;
    memset(again.dim_stride, 0, sizeof again.dim_stride);
    again.dim_symbolic = again.dim_ct = again.dim_unknown = 0;
    again.few = 0;
    kl_access_strides(f, s, settings, st, nst, x->ins, true, &again);
    kl_access_few_lanes(f, s, x->ins, &again);
    again.row_step = false;
    *x = again;
  }
  /* The same offset, among the strided accesses of one call context (the rule asks of those). */
  for (size_t j = first; j < t->n; j++) {
    struct kl_access *y = &t->v[j];
    if (!kl_access_is_strided(y)) continue;
    for (size_t i = first; i < j; i++) {
      const struct kl_access *x = &t->v[i];
      if (x->index_rep != i || !kl_access_is_strided(x) || !ts_node_eq(x->call, y->call)) continue;
      if (kl_valnum_same_offset(f, s, x->address, y->address)) {
        y->index_rep = (uint32_t)i;
        break;
      }
    }
  }
  return t->n - first;
}
