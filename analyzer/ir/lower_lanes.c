/* Lowering any() and all() of a comparison of integer vectors lane by lane (lower_int.h). */
#include <string.h>

#include "analyzer/ir/lower_int.h"

static const TSNode kl_null = {{0}, NULL, NULL};

/* The lanes of one side of a vector comparison, decided from its syntax before anything is
 * lowered: a vector coordinate or a swizzle of one (comp[]), a vector constructor of integers
 * (`uint3(w, h, n)`, or `uint2(n)` for every lane), a local integer vector or a conversion of
 * one (`ushort3(size)`: co->ptr, its address in co), or a name or literal of scalar type
 * (every lane). 0 for anything else. */
static unsigned kl_lw_lanes(struct kl_lower *L, TSNode e, struct kl_rv *co, const char **st) {
  e = kl_lw_unparen(e);
  TSNode id = e, fl = kl_null;
  if (kl_node_is_kind(e, KL_KIND_FIELD_EXPRESSION)) {
    id = kl_lw_unparen(kl_node_field(e, "argument"));
    fl = kl_node_field(e, "field");
  }
  *st = "uint";
  if (kl_node_is_kind(id, KL_KIND_IDENTIFIER)) {
    uint32_t s = ts_node_start_byte(id), t = ts_node_end_byte(id);
    int32_t b = kl_lw_lookup(L, kl_lw_src(L, id) + s, t - s);
    if (b < 0) return 0;
    if (L->binds[b].kind == KL_LB_COORD) {
      const struct kl_msl_type *mt = L->binds[b].var ? kl_msl_type(L->binds[b].var->type) : NULL;
      const char *f = kl_node_null(fl) ? (mt && mt->lanes == 2 ? "xy" : "xyz") : kl_lw_text(L, fl);
      unsigned k = 0;
      for (; f[k]; k++) {
        int c = k < 3 ? kl_lw_comp(f[k]) : -1;
        if (c < 0 || c > 2) return 0;
        co->comp[k] = L->binds[b].comp[c];
      }
      co->coordvec = true;
      return k;
    }
    const struct kl_msl_type *mt = L->binds[b].var ? kl_msl_type(L->binds[b].var->type) : NULL;
    if (!kl_node_null(fl) || !mt) return 0;
    *st = mt->scalar;
    /* A local vector: each lane read where the comparison is (`size.x`, `size.y`). */
    if (L->binds[b].kind == KL_LB_MEM && L->binds[b].mem.as == KL_AS_THREAD &&
        !L->binds[b].var->array_dims && mt->kind == KL_TYPE_VECTOR && mt->lanes <= 4 &&
        !kl_lw_is_float(mt->scalar) && strcmp(mt->scalar, "bool")) {
      *co = L->binds[b].mem;
      co->ptr = true;
      co->etype = mt->name;
      return mt->lanes;
    }
    return mt->kind == KL_TYPE_SCALAR;
  }
  if (kl_node_is_kind(e, KL_KIND_NUMBER_LITERAL)) {
    *st = NULL; /* the other side's type, as C converts it */
    return 1;
  }
  if (!kl_node_is_kind(e, KL_KIND_CALL_EXPRESSION)) return 0;
  const struct kl_msl_type *mt = kl_msl_type(kl_lw_text(L, kl_node_field(e, "function")));
  TSNode args = kl_node_field(e, "arguments");
  uint32_t na = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  if (!mt || mt->kind != KL_TYPE_VECTOR || mt->lanes > 4 || (na != 1 && na != mt->lanes) ||
      !strcmp(mt->scalar, "bool") || kl_lw_is_float(mt->scalar))
    return 0;
  for (uint32_t i = 0; i < na; i++)
    if (kl_node_is_kind(kl_node_named_child(args, i), KL_KIND_COMMENT)) return 0;
  /* One argument fills every lane only when it is a scalar (`uint2(n)`; not `uint2(v.xy)`), or
   * converts a local vector of as many lanes lane by lane. */
  struct kl_rv one = {0};
  const char *ost;
  unsigned ow = na == 1 ? kl_lw_lanes(L, kl_node_named_child(args, 0), &one, &ost) : 1;
  if (ow != 1 && !(one.ptr && ow == mt->lanes)) return 0;
  if (one.ptr) *co = one;
  *st = mt->scalar;
  return mt->lanes;
}

/* The value of lane k of a side kl_lw_lanes accepted; vals[] holds what was lowered so far. */
static struct kl_rv kl_lw_lane(struct kl_lower *L, TSNode e, const struct kl_rv *co,
                               const char *st, unsigned k, uint32_t *vals, bool *done) {
  e = kl_lw_unparen(e);
  if (co->coordvec) return kl_rv_of(co->comp[k], st);
  if (co->ptr) {
    /* Lane k of a local vector: a load of its field, as `size.x` is lowered. */
    static const char *const lane[4] = {"x", "y", "z", "w"};
    const struct kl_msl_type *t = kl_msl_type(co->etype);
    uint32_t m = kl_lw_emit(L, KL_IR_MEMBER, e, &co->v, 1);
    struct kl_rv a = *co;
    a.v = m;
    a.dims = NULL;
    a.etype = t ? t->scalar : NULL;
    a.esize = a.etype ? kl_lw_type_size(a.etype) : 0;
    if (m) {
      L->f->ins[m].name = lane[k];
      L->f->ins[m].as = co->as;
      L->f->ins[m].imm = k;
      L->f->ins[m].type = a.etype;
    }
    return kl_rv_of(kl_lw_load(L, e, a).v, st);
  }
  TSNode args = kl_node_field(e, "arguments");
  bool ctor = kl_node_is_kind(e, KL_KIND_CALL_EXPRESSION);
  uint32_t i = ctor && ts_node_named_child_count(args) > 1 ? k : 0;
  if (!done[i]) vals[i] = kl_lw_value(L, ctor ? kl_node_named_child(args, i) : e), done[i] = true;
  return kl_rv_of(vals[i], st);
}

/* any(a OP b) and all(a OP b) over integer vectors, lowered as the OR (AND) of the lanes'
 * comparisons, so that `if (any(gid >= uint3(w, h, n))) return;` bounds each coordinate as
 * `if (gid.x >= w || gid.y >= h || gid.z >= n) return;` does. False, with nothing lowered,
 * for any other argument. */
bool kl_lw_lanewise(struct kl_lower *L, TSNode n, TSNode arg, bool all, struct kl_rv *out) {
  TSNode c = kl_lw_unparen(arg);
  if (!kl_node_is_kind(c, KL_KIND_BINARY_EXPRESSION)) return false;
  int b = kl_lw_binop_of(kl_lw_op_text(L, c));
  if (b < KL_IR_LT || b > KL_IR_NE) return false;
  TSNode side[2] = {kl_node_field(c, "left"), kl_node_field(c, "right")};
  struct kl_rv co[2] = {{0}, {0}};
  const char *st[2];
  unsigned w[2] = {kl_lw_lanes(L, side[0], &co[0], &st[0]),
                   kl_lw_lanes(L, side[1], &co[1], &st[1])};
  unsigned lanes = w[0] > w[1] ? w[0] : w[1];
  if (!w[0] || !w[1] || lanes < 2 || (w[0] > 1 && w[1] > 1 && w[0] != w[1])) return false;
  for (int i = 0; i < 2; i++)
    if (!st[i]) st[i] = st[1 - i];
  uint32_t vals[2][4] = {{0}};
  bool done[2][4] = {{false}};
  struct kl_rv acc = {0};
  for (unsigned k = 0; k < lanes; k++) {
    struct kl_rv x = kl_lw_lane(L, side[0], &co[0], st[0], w[0] > 1 ? k : 0, vals[0], done[0]);
    struct kl_rv y = kl_lw_lane(L, side[1], &co[1], st[1], w[1] > 1 ? k : 0, vals[1], done[1]);
    struct kl_rv t = kl_lw_binop(L, c, b, x, y);
    acc = k ? kl_lw_binop(L, n, all ? KL_IR_LAND : KL_IR_LOR, acc, t) : t;
  }
  *out = acc;
  return true;
}
