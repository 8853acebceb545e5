/* Lowering expressions: values, addresses, assignments and calls (built-ins, conversions and the
 * same-file helpers, which lower_stmt.c inlines). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/ir/lower_int.h"
#include "grammar/consteval.h"

static const TSNode kl_null = {{0}, NULL, NULL};

TSNode kl_lw_unparen(TSNode n) {
  for (int g = 0; g < 64 && kl_node_is_kind(n, KL_KIND_PARENTHESIZED_EXPRESSION); g++) {
    if (ts_node_named_child_count(n) != 1) break;
    n = kl_node_named_child(n, 0);
  }
  return n;
}

const char *kl_lw_op_text(struct kl_lower *L, TSNode n) {
  TSNode op = kl_node_field(n, "operator");
  return kl_node_null(op) ? "" : kl_lw_text(L, op);
}

static bool kl_lw_is_unsigned(const char *t) {
  if (!t) return false;
  const struct kl_msl_type *mt = kl_msl_type(t);
  const char *s = mt ? mt->scalar : t;
  return !strcmp(s, "uint") || !strcmp(s, "ushort") || !strcmp(s, "uchar") || !strcmp(s, "ulong") ||
         !strcmp(s, "size_t") || !strncmp(s, "uint", 4) || !strncmp(s, "unsigned", 8);
}

bool kl_lw_is_float(const char *t) {
  if (!t) return false;
  const struct kl_msl_type *mt = kl_msl_type(t);
  const char *s = mt ? mt->scalar : t;
  return !strcmp(s, "float") || !strcmp(s, "half") || !strcmp(s, "bfloat") || !strcmp(s, "double");
}

static bool kl_lw_is_int(struct kl_lower *L, const struct kl_rv *r) {
  if (r->v && L->f->ins[r->v].op == KL_IR_CONST) return true;
  if (!r->etype || r->ptr) return false;
  const struct kl_msl_type *mt = kl_msl_type(r->etype);
  if (mt)
    return mt->kind == KL_TYPE_SCALAR && !kl_lw_is_float(mt->scalar) && strcmp(mt->scalar, "bool");
  return kl_lw_type_size(r->etype) > 0;
}

/* A whole vector coordinate as one value (an aggregate the passes do not look into). */
static uint32_t kl_lw_val(struct kl_lower *L, struct kl_rv *r, TSNode n) {
  if (r->coordvec && !r->v) r->v = kl_lw_opaque(L, n, r->comp, 3);
  return r->v;
}

uint32_t kl_lw_value(struct kl_lower *L, TSNode n) {
  struct kl_rv r = kl_lw_expr(L, n);
  return kl_lw_val(L, &r, n);
}

/* Whether n reads no memory and changes nothing (so both arms of `?:`, `&&`, `||` may be
 * evaluated), judged within a small budget of nodes. */
static bool kl_lw_simple(TSNode n, int *budget) {
  if (kl_node_null(n)) return true;
  if (--*budget < 0) return false;
  switch (kl_node_kind(n)) {
  case KL_KIND_SUBSCRIPT_EXPRESSION:
  case KL_KIND_CALL_EXPRESSION:
  case KL_KIND_ASSIGNMENT_EXPRESSION:
  case KL_KIND_UPDATE_EXPRESSION:
  case KL_KIND_POINTER_EXPRESSION:
  case KL_KIND_LAMBDA_EXPRESSION:
    return false;
  case KL_KIND_FIELD_EXPRESSION:
    return kl_lw_simple(kl_node_field(n, "argument"), budget);
  default:
    break;
  }
  if (kl_lw_broken(n)) return false;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (!kl_lw_simple(kl_node_named_child(n, i), budget)) return false;
  return true;
}

/* ---- Operators ------------------------------------------------------------------------------- */

int kl_lw_binop_of(const char *op) {
  static const struct {
    const char *t;
    int b;
  } ops[] = {{"+", KL_IR_ADD},      {"-", KL_IR_SUB},    {"*", KL_IR_MUL},    {"/", KL_IR_DIV},
             {"%", KL_IR_REM},      {"<<", KL_IR_SHL},   {">>", KL_IR_SHR},   {"&", KL_IR_AND},
             {"|", KL_IR_OR},       {"^", KL_IR_XOR},    {"<", KL_IR_LT},     {"<=", KL_IR_LE},
             {">", KL_IR_GT},       {">=", KL_IR_GE},    {"==", KL_IR_EQ},    {"!=", KL_IR_NE},
             {"&&", KL_IR_LAND},    {"||", KL_IR_LOR},   {"and", KL_IR_LAND}, {"or", KL_IR_LOR},
             {"bitand", KL_IR_AND}, {"bitor", KL_IR_OR}, {"xor", KL_IR_XOR},  {"not_eq", KL_IR_NE}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(op, ops[i].t)) return ops[i].b;
  return 0;
}

static bool kl_lw_cop(int b, enum kl_cop *c) {
  static const enum kl_cop map[] = {
      [KL_IR_ADD] = KL_COP_ADD,    [KL_IR_SUB] = KL_COP_SUB,    [KL_IR_MUL] = KL_COP_MUL,
      [KL_IR_DIV] = KL_COP_DIV,    [KL_IR_REM] = KL_COP_MOD,    [KL_IR_SHL] = KL_COP_SHL,
      [KL_IR_SHR] = KL_COP_SHR,    [KL_IR_AND] = KL_COP_BITAND, [KL_IR_OR] = KL_COP_BITOR,
      [KL_IR_XOR] = KL_COP_BITXOR, [KL_IR_LT] = KL_COP_LT,      [KL_IR_LE] = KL_COP_LE,
      [KL_IR_GT] = KL_COP_GT,      [KL_IR_GE] = KL_COP_GE,      [KL_IR_EQ] = KL_COP_EQ,
      [KL_IR_NE] = KL_COP_NE,      [KL_IR_LAND] = KL_COP_AND,   [KL_IR_LOR] = KL_COP_OR,
      [KL_IR_MIN] = KL_COP_MIN,    [KL_IR_MAX] = KL_COP_MAX};
  if (b <= 0 || b > KL_IR_MAX) return false;
  *c = map[b];
  return true;
}

/* BINOP b of x and y, folded when both are constants. */
struct kl_rv kl_lw_binop(struct kl_lower *L, TSNode n, int b, struct kl_rv x, struct kl_rv y) {
  int64_t a, c, r;
  enum kl_cop cop;
  bool uns = kl_lw_is_unsigned(x.etype) || kl_lw_is_unsigned(y.etype);
  if (!uns && kl_ir_const(L->f, x.v, &a) && kl_ir_const(L->f, y.v, &c) && kl_lw_cop(b, &cop) &&
      kl_consteval_apply(cop, a, c, &r))
    return kl_rv_of(kl_lw_const(L, n, r), "int");
  uint32_t ops[2] = {kl_lw_val(L, &x, n), kl_lw_val(L, &y, n)};
  uint32_t v = kl_lw_emit(L, KL_IR_BINOP, n, ops, 2);
  const char *t = b >= KL_IR_LT && b <= KL_IR_LOR ? "bool" : x.etype ? x.etype : y.etype;
  if (v) {
    L->f->ins[v].sub = (uint8_t)b;
    if (uns) L->f->ins[v].flags |= KL_IR_F_UNSIGNED;
    L->f->ins[v].type = t;
  }
  return kl_rv_of(v, t);
}

/* p + k elements (or - k), an address. */
static struct kl_rv kl_lw_step(struct kl_lower *L, TSNode n, struct kl_rv p, uint32_t k) {
  uint32_t ops[2] = {p.v, k};
  uint32_t v = kl_lw_emit(L, KL_IR_INDEX, n, ops, 2);
  if (v) {
    L->f->ins[v].imm = p.esize;
    L->f->ins[v].as = p.as;
    L->f->ins[v].type = p.etype;
  }
  p.v = v;
  p.coordvec = false;
  return p;
}

/* ---- Names ----------------------------------------------------------------------------------- */

struct kl_rv kl_lw_load(struct kl_lower *L, TSNode n, struct kl_rv addr) {
  uint32_t v = kl_lw_emit(L, KL_IR_LOAD, n, &addr.v, 1);
  if (v) {
    L->f->ins[v].as = addr.as;
    L->f->ins[v].type = addr.etype;
  }
  return kl_rv_of(v, addr.etype);
}

/* The array dims after the first ("[4][8]" -> "[8]"), or NULL. */
static const char *kl_lw_dims_rest(const char *d) {
  if (!d || *d != '[') return NULL;
  const char *e = strchr(d, ']');
  return e && e[1] == '[' ? e + 1 : NULL;
}

/* Bytes of one element of an array with dims d (after the first) of base type t. */
static uint32_t kl_lw_elem_size(struct kl_lower *L, const char *t, const char *d) {
  uint64_t s = kl_lw_type_size(t);
  for (const char *p = kl_lw_dims_rest(d); p && s; p = kl_lw_dims_rest(p)) {
    const char *e = strchr(p, ']');
    int64_t k;
    if (!e || !kl_lw_fold_text(L, p + 1, (size_t)(e - p - 1), &k) || k <= 0 || k > (1 << 24))
      return 0;
    s *= (uint64_t)k;
  }
  return s < (1u << 31) ? (uint32_t)s : 0;
}

enum { KL_LW_CONST_NODES = 32 }; /* the most nodes one use of a file constant expands to */

/* Whether n is arithmetic on names and numbers only: nothing that reads memory, calls or
 * assigns, so lowering it again at each use is the value it stands for. Counts its nodes into
 * *size, through the file constants it names that expand too, and fails past the cap: a
 * constant named several times in others' initialisers would otherwise grow at every level. */
static bool kl_lw_pure_expr(struct kl_lower *L, TSNode n, int depth, uint32_t *size) {
  if (depth > 16 || ++*size > KL_LW_CONST_NODES) return false;
  switch (kl_node_kind(n)) {
  case KL_KIND_IDENTIFIER: {
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    /* Lowered in the function, a name there must mean what it means at file scope. */
    const char *src = kl_lw_src(L, n);
    if (!kl_lw_file_name(L, src + s, e - s)) return false;
    TSNode v = kl_model_const_value(L->m, src + s, e - s);
    int64_t k;
    if (kl_node_null(v) || kl_lw_fold_name(L, src + s, e - s, &k)) return true;
    return kl_lw_pure_expr(L, v, depth + 1, size);
  }
  case KL_KIND_NUMBER_LITERAL:
  case KL_KIND_TRUE:
  case KL_KIND_FALSE:
  case KL_KIND_COMMENT:
    return true;
  case KL_KIND_BINARY_EXPRESSION:
  case KL_KIND_UNARY_EXPRESSION:
  case KL_KIND_PARENTHESIZED_EXPRESSION:
  case KL_KIND_CONDITIONAL_EXPRESSION:
    break;
  default:
    return false;
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (!kl_lw_pure_expr(L, kl_node_named_child(n, i), depth + 1, size)) return false;
  return k > 0;
}

/* A file-scope constant that does not fold (`constant ushort G = A * B;` over function
 * constants A and B) lowered as its initialiser, so passes see how it relates to A and B
 * rather than one opaque SYMBOL. Only when the name means that constant here (no macro,
 * template argument, specialisation or member of the same name), and small. */
static bool kl_lw_const_expr(struct kl_lower *L, const char *name, size_t len, struct kl_rv *out) {
  if (L->const_depth >= 8) return false;
  TSNode v = kl_model_const_value(L->m, name, len);
  if (kl_node_null(v)) return false;
  const char *t = kl_model_const(L->m, name, len);
  uint32_t size = 0;
  if (!t || !kl_lw_file_name(L, name, len) || kl_lw_lookup_text(L, name, len) != t ||
      !kl_lw_pure_expr(L, v, 0, &size))
    return false;
  L->const_depth++;
  *out = kl_lw_expr(L, v);
  L->const_depth--;
  return out->v != KL_IR_NONE;
}

/* ---- Fields promoted to SSA ------------------------------------------------------------------ */

static struct kl_rv kl_lw_member(struct kl_lower *L, TSNode n, struct kl_rv base, TSNode field);

/* The hidden name of field name of the object at address obj: a byte no source name has, then
 * the address's value id. */
static uint32_t kl_lw_field_key(char *buf, size_t cap, uint32_t obj, const char *name, size_t len) {
  int k = snprintf(buf, cap, "\x01%u.%.*s", obj, (int)len, name);
  return k > 0 && (size_t)k < cap ? (uint32_t)k : 0;
}

static int32_t kl_lw_field_bind(struct kl_lower *L, uint32_t obj, const char *name, size_t len) {
  char key[96];
  uint32_t kl = obj && L->npromoted ? kl_lw_field_key(key, sizeof key, obj, name, len) : 0;
  int32_t b = kl ? kl_lw_lookup(L, key, kl) : -1;
  return b >= 0 && L->binds[b].kind == KL_LB_VALUE ? b : -1;
}

void kl_lw_promote_fields(struct kl_lower *L, uint32_t obj, const char *objname,
                          const struct kl_function *fn) {
  struct kl_var *fs;
  size_t n = kl_model_fields(L->a, L->m, fn, &fs);
  for (size_t i = 0; i < n; i++) {
    const struct kl_var *v = &fs[i];
    const struct kl_msl_type *mt = kl_msl_type(v->type);
    bool scalar = mt && mt->kind == KL_TYPE_SCALAR;
    if (v->array_dims || v->is_reference || !(v->is_pointer || (v->is_const && scalar))) continue;
    char key[96];
    uint32_t kl = kl_lw_field_key(key, sizeof key, obj, v->name, strlen(v->name));
    if (!kl) continue;
    int32_t b = kl_lw_bind(L, key, kl, KL_LB_VALUE, v);
    struct kl_lbind *bb = &L->binds[b];
    /* Messages name it as the source does. */
    L->f->syms[bb->sym].name = kl_arena_printf(L->a, "%s.%s", objname, v->name);
    bb->mem.etype = v->type;
    if (v->is_pointer) {
      bb->mem.ptr = true;
      bb->mem.as = (uint8_t)v->as;
      bb->mem.esize = kl_lw_type_size(v->type);
    }
    L->npromoted++;
  }
}

int32_t kl_lw_field_of(struct kl_lower *L, TSNode n) {
  if (!L->npromoted) return -1;
  n = kl_lw_unparen(n);
  const struct kl_lframe *fr = &L->frames[L->nframes - 1];
  if (kl_node_is_kind(n, KL_KIND_IDENTIFIER)) {
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (!fr->self.v || kl_lw_lookup(L, kl_lw_src(L, n) + s, e - s) >= 0) return -1;
    return kl_lw_field_bind(L, fr->self.v, kl_lw_src(L, n) + s, e - s);
  }
  if (!kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION)) return -1;
  TSNode arg = kl_lw_unparen(kl_node_field(n, "argument")), fld = kl_node_field(n, "field");
  if (kl_node_null(fld)) return -1;
  uint32_t obj = 0;
  if (!strcmp(kl_lw_op_text(L, n), "->")) {
    if (!strcmp(ts_node_type(arg), "this")) obj = fr->self.v;
  } else if (kl_node_is_kind(arg, KL_KIND_IDENTIFIER)) {
    uint32_t s = ts_node_start_byte(arg), e = ts_node_end_byte(arg);
    int32_t b = kl_lw_lookup(L, kl_lw_src(L, arg) + s, e - s);
    if (b >= 0 && L->binds[b].kind == KL_LB_MEM) obj = L->binds[b].mem.v;
  }
  uint32_t s = ts_node_start_byte(fld), e = ts_node_end_byte(fld);
  return kl_lw_field_bind(L, obj, kl_lw_src(L, fld) + s, e - s);
}

/* The value of promoted field b, read at n. */
static struct kl_rv kl_lw_field_read(struct kl_lower *L, int32_t b, TSNode n) {
  struct kl_rv r = L->binds[b].mem;
  r.v = kl_lw_read(L, L->binds[b].sym, n);
  return r;
}

/* Assign r to promoted field b; a pointer the field's type says little of (a template's `T*`)
 * takes what the value says. */
static void kl_lw_field_set(struct kl_lower *L, int32_t b, struct kl_rv r, uint32_t v) {
  struct kl_lbind *bb = &L->binds[b];
  if (bb->mem.ptr && r.ptr && !bb->mem.esize && r.esize) {
    bb->mem.esize = r.esize;
    bb->mem.etype = r.etype;
    if (!bb->mem.as) bb->mem.as = r.as;
  }
  kl_lw_assign(L, bb->sym, v);
}

void kl_lw_field_inits(struct kl_lower *L, TSNode list, struct kl_rv self) {
  uint32_t k = ts_node_named_child_count(list);
  for (uint32_t i = 0; i < k && !L->stop; i++) {
    TSNode fi = kl_node_named_child(list, i);
    if (strcmp(ts_node_type(fi), "field_initializer")) continue;
    TSNode fld = kl_null, args = kl_null;
    for (uint32_t j = 0; j < ts_node_named_child_count(fi); j++) {
      TSNode c = kl_node_named_child(fi, j);
      if (kl_node_is_kind(c, KL_KIND_FIELD_IDENTIFIER)) fld = c;
      else if (kl_node_is_kind(c, KL_KIND_ARGUMENT_LIST) ||
               !strcmp(ts_node_type(c), "initializer_list"))
        args = c;
    }
    if (kl_node_null(fld) || kl_node_null(args)) continue;
    TSNode x = ts_node_named_child_count(args) == 1 ? kl_node_named_child(args, 0) : kl_null;
    uint32_t s = ts_node_start_byte(fld), e = ts_node_end_byte(fld);
    int32_t b = kl_lw_field_bind(L, self.v, kl_lw_src(L, fld) + s, e - s);
    if (kl_node_null(x)) {
      for (uint32_t j = 0; j < ts_node_named_child_count(args); j++)
        kl_lw_value(L, kl_node_named_child(args, j));
      continue;
    }
    struct kl_rv r = kl_lw_expr(L, x);
    uint32_t v = kl_lw_val(L, &r, x);
    if (b >= 0) {
      kl_lw_field_set(L, b, r, v);
      continue;
    }
    /* A field kept in memory: stored as `self.f = x` would store it. */
    struct kl_rv a = kl_lw_member(L, fi, self, fld);
    uint32_t ops[2] = {a.v, v};
    uint32_t st = kl_lw_emit(L, KL_IR_STORE, fi, ops, 2);
    if (st) {
      L->f->ins[st].as = a.as;
      L->f->ins[st].type = a.etype;
    }
  }
}

static struct kl_rv kl_lw_ident(struct kl_lower *L, TSNode n, bool want_addr, bool *ok) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  const char *name = kl_lw_src(L, n) + s;
  struct kl_rv mr;
  /* In a macro's body, its parameters come first. */
  if (n.tree != L->u->tree && kl_lw_macro_name(L, n, want_addr, ok, &mr)) return mr;
  int32_t b = kl_lw_lookup(L, name, e - s);
  if (ok) *ok = false;
  if (b >= 0) {
    struct kl_lbind *bb = &L->binds[b];
    if (bb->kind == KL_LB_MEM) {
      struct kl_rv a = bb->mem;
      const struct kl_var *var = bb->var;
      if (want_addr || (var && var->array_dims)) {
        if (ok) *ok = true;
        return a;
      }
      return kl_lw_load(L, n, a);
    }
    if (bb->kind == KL_LB_COORD) {
      struct kl_rv r = {0};
      r.coordvec = true;
      memcpy(r.comp, bb->comp, sizeof r.comp);
      r.etype = bb->var ? bb->var->type : NULL;
      return r;
    }
    struct kl_rv r = bb->mem;
    r.v = kl_lw_read(L, bb->sym, n);
    if (!r.ptr) r.etype = bb->mem.etype ? bb->mem.etype : bb->var ? bb->var->type : NULL;
    if (want_addr && r.ptr && ok) *ok = false;
    return r;
  }
  /* A member of the object a method runs on. */
  const struct kl_lframe *fr = &L->frames[L->nframes - 1];
  int64_t k;
  if (kl_lw_fold_name(L, name, e - s, &k)) return kl_rv_of(kl_lw_const(L, n, k), "int");
  if (n.tree == L->u->tree && kl_lw_macro_name(L, n, want_addr, ok, &mr)) return mr;
  char nm[64];
  if (e - s < sizeof nm) {
    memcpy(nm, name, e - s);
    nm[e - s] = '\0';
    const struct kl_msl_coord *c = kl_msl_coord(nm);
    if (c) {
      /* MLX bodies name thread coordinates without declaring them. */
      uint32_t v = kl_lw_emit(L, KL_IR_COORD, n, NULL, 0);
      if (v) {
        L->f->ins[v].coord = c;
        L->f->ins[v].type = "uint";
      }
      return kl_rv_of(v, "uint");
    }
  }
  int32_t hb = fr->self.v ? kl_lw_field_bind(L, fr->self.v, name, e - s) : -1;
  if (hb >= 0) return kl_lw_field_read(L, hb, n);
  if (fr->self.v) {
    uint32_t v = kl_lw_emit(L, KL_IR_MEMBER, n, &fr->self.v, 1);
    struct kl_rv a = fr->self;
    a.v = v;
    a.etype = NULL;
    a.esize = 0;
    if (v) {
      L->f->ins[v].name = kl_arena_strndup(L->a, name, e - s);
      L->f->ins[v].as = a.as;
    }
    if (want_addr) {
      if (ok) *ok = true;
      return a;
    }
    return kl_lw_load(L, n, a);
  }
  struct kl_rv x;
  if (kl_lw_const_expr(L, name, e - s, &x)) return x;
  uint32_t v = kl_lw_emit(L, KL_IR_SYMBOL, n, NULL, 0);
  if (v) L->f->ins[v].name = kl_arena_strndup(L->a, name, e - s);
  return kl_rv_of(v, NULL);
}

/* ---- Addresses ------------------------------------------------------------------------------- */

int kl_lw_comp(char c) {
  switch (c) {
  case 'x':
  case 'r':
    return 0;
  case 'y':
  case 'g':
    return 1;
  case 'z':
  case 'b':
    return 2;
  case 'w':
  case 'a':
    return 3;
  default:
    return -1;
  }
}

static struct kl_rv kl_lw_member(struct kl_lower *L, TSNode n, struct kl_rv base, TSNode field) {
  const char *fname = kl_lw_text(L, field);
  uint32_t v = kl_lw_emit(L, KL_IR_MEMBER, n, &base.v, 1);
  struct kl_rv a = base;
  a.v = v;
  a.dims = NULL;
  const struct kl_msl_type *t = kl_msl_type(base.etype);
  bool comp = t && (t->kind == KL_TYPE_VECTOR) && strlen(fname) <= 4 && fname[0] &&
              kl_lw_comp(fname[0]) >= 0;
  a.etype = comp && strlen(fname) == 1 ? t->scalar : NULL;
  a.esize = a.etype ? kl_lw_type_size(a.etype) : 0;
  if (v) {
    L->f->ins[v].name = fname;
    L->f->ins[v].as = base.as;
    if (comp) L->f->ins[v].imm = kl_lw_comp(fname[0]);
    L->f->ins[v].type = a.etype;
  }
  return a;
}

struct kl_rv kl_lw_addr(struct kl_lower *L, TSNode n, bool *ok) {
  struct kl_rv none = {0};
  *ok = false;
  n = kl_lw_unparen(n);
  if (L->stop || kl_node_null(n)) return none;
  switch (kl_node_kind(n)) {
  case KL_KIND_IDENTIFIER: {
    struct kl_rv r = kl_lw_ident(L, n, true, ok);
    return r;
  }
  case KL_KIND_SUBSCRIPT_EXPRESSION: {
    TSNode base = kl_lw_unparen(kl_node_field(n, "argument"));
    TSNode idx = kl_node_field(n, "indices");
    if (kl_node_null(idx))
      idx = kl_node_field(n, "index");
    else if (ts_node_named_child_count(idx) > 0)
      idx = kl_node_named_child(idx, 0);
    bool bok;
    struct kl_rv b = kl_lw_addr(L, base, &bok);
    if (!bok) {
      /* A pointer value (`p[i]`, `(p + k)[i]`). */
      b = kl_lw_expr(L, base);
      if (!b.ptr) {
        uint32_t ops[2] = {kl_lw_val(L, &b, base), kl_lw_value(L, idx)};
        struct kl_rv r = {0};
        r.v = kl_lw_opaque(L, n, ops, 2);
        return r;
      }
    } else if (!b.ptr || (!b.dims && b.etype && kl_msl_type(b.etype) &&
                          kl_msl_type(b.etype)->kind == KL_TYPE_VECTOR && !b.esize)) {
      /* A vector or a struct in memory indexed (`v[0]`): its components. */
      const struct kl_msl_type *t = kl_msl_type(b.etype);
      b.esize = t && t->kind == KL_TYPE_VECTOR ? kl_lw_type_size(t->scalar) : 0;
      b.etype = t && t->kind == KL_TYPE_VECTOR ? t->scalar : NULL;
    }
    uint32_t i = kl_lw_value(L, idx);
    struct kl_rv r = kl_lw_step(L, n, b, i);
    r.dims = kl_lw_dims_rest(b.dims);
    if (r.dims)
      r.esize = kl_lw_elem_size(L, b.etype, r.dims);
    else if (b.dims)
      r.esize = kl_lw_type_size(b.etype);
    *ok = r.v != 0;
    return r;
  }
  case KL_KIND_FIELD_EXPRESSION: {
    /* A promoted field is a value, no address. */
    if (kl_lw_field_of(L, n) >= 0) return none;
    TSNode arg = kl_node_field(n, "argument"), field = kl_node_field(n, "field");
    bool arrow = !strcmp(kl_lw_op_text(L, n), "->");
    struct kl_rv b;
    bool bok = false;
    if (arrow) {
      b = kl_lw_expr(L, arg);
      bok = b.ptr;
    } else {
      b = kl_lw_addr(L, arg, &bok);
    }
    if (!bok) return none;
    struct kl_rv r = kl_lw_member(L, n, b, field);
    *ok = r.v != 0;
    return r;
  }
  case KL_KIND_CALL_EXPRESSION: {
    /* A function-like macro that stands for an element (`#define AT(i) t[i]`). */
    struct kl_rv r;
    return kl_lw_macro_call(L, n, true, ok, &r) ? r : none;
  }
  case KL_KIND_POINTER_EXPRESSION: {
    if (strcmp(kl_lw_op_text(L, n), "*")) return none;
    struct kl_rv p = kl_lw_expr(L, kl_node_field(n, "argument"));
    if (!p.ptr) {
      p.ptr = true;
      p.etype = NULL;
    }
    *ok = p.v != 0;
    return p;
  }
  default:
    return none;
  }
}

/* ---- Assignments ----------------------------------------------------------------------------- */

/* The binding a plain name on the left of an assignment is, or -1. */
static int32_t kl_lw_lhs_bind(struct kl_lower *L, TSNode lhs) {
  lhs = kl_lw_unparen(lhs);
  if (!kl_node_is_kind(lhs, KL_KIND_IDENTIFIER)) return kl_lw_field_of(L, lhs);
  uint32_t s = ts_node_start_byte(lhs), e = ts_node_end_byte(lhs);
  int32_t b = kl_lw_lookup(L, kl_lw_src(L, lhs) + s, e - s);
  if (b < 0) return kl_lw_field_of(L, lhs);
  return L->binds[b].kind == KL_LB_VALUE ? b : -1;
}

static struct kl_rv kl_lw_store(struct kl_lower *L, TSNode n, struct kl_rv addr, uint32_t v,
                                int op) {
  uint32_t ops[2] = {addr.v, v};
  uint32_t s = kl_lw_emit(L, KL_IR_STORE, n, ops, 2);
  if (s) {
    L->f->ins[s].as = addr.as;
    L->f->ins[s].sub = (uint8_t)op;
    L->f->ins[s].type = addr.etype;
  }
  return kl_rv_of(v, addr.etype);
}

static struct kl_rv kl_lw_assign_expr(struct kl_lower *L, TSNode n) {
  TSNode lhs = kl_node_field(n, "left"), rhs = kl_node_field(n, "right");
  const char *op = kl_lw_op_text(L, n);
  int bop = 0;
  if (strcmp(op, "=")) {
    char o[4] = {0};
    size_t ol = strlen(op);
    if (ol >= 2 && ol <= 4) memcpy(o, op, ol - 1);
    bop = kl_lw_binop_of(o);
  }
  int32_t b = kl_lw_lhs_bind(L, lhs);
  if (b >= 0) {
    struct kl_rv r = kl_lw_expr(L, rhs);
    uint32_t sym = L->binds[b].sym;
    struct kl_rv cur = L->binds[b].mem;
    if (bop) {
      cur.v = kl_lw_read(L, sym, lhs);
      if (!cur.ptr) cur.etype = L->binds[b].var ? L->binds[b].var->type : cur.etype;
      if (cur.ptr && (bop == KL_IR_ADD || bop == KL_IR_SUB)) {
        uint32_t k = kl_lw_val(L, &r, rhs);
        if (bop == KL_IR_SUB) {
          k = kl_lw_emit(L, KL_IR_UNOP, n, &k, 1);
          if (k) L->f->ins[k].sub = KL_IR_NEG;
        }
        r = kl_lw_step(L, n, cur, k);
      } else {
        r = kl_lw_binop(L, n, bop, cur, r);
      }
    }
    uint32_t v = kl_lw_val(L, &r, rhs);
    TSNode at0 = L->assign_at;
    L->assign_at = kl_lw_at(L, n);
    if (L->binds[b].name[0] == '\x01')
      kl_lw_field_set(L, b, r, v);
    else
      kl_lw_assign(L, sym, v);
    L->assign_at = at0;
    return r;
  }
  bool ok;
  struct kl_rv a = kl_lw_addr(L, lhs, &ok);
  struct kl_rv r = kl_lw_expr(L, rhs);
  uint32_t v = kl_lw_val(L, &r, rhs);
  if (!ok) {
    uint32_t ops[2] = {a.v, v};
    return kl_rv_of(kl_lw_opaque(L, n, ops, 2), NULL);
  }
  return kl_lw_store(L, n, a, v, bop);
}

static struct kl_rv kl_lw_update(struct kl_lower *L, TSNode n) {
  TSNode arg = kl_node_field(n, "argument");
  const char *op = kl_lw_op_text(L, n);
  int bop = strstr(op, "-") ? KL_IR_SUB : KL_IR_ADD;
  bool prefix = ts_node_start_byte(n) < ts_node_start_byte(arg);
  int32_t b = kl_lw_lhs_bind(L, arg);
  if (b >= 0) {
    uint32_t sym = L->binds[b].sym;
    struct kl_rv cur = L->binds[b].mem;
    cur.v = kl_lw_read(L, sym, arg);
    if (!cur.ptr) cur.etype = L->binds[b].var ? L->binds[b].var->type : cur.etype;
    struct kl_rv one = kl_rv_of(kl_lw_const(L, n, bop == KL_IR_SUB ? -1 : 1), "int");
    struct kl_rv nv;
    if (cur.ptr) {
      nv = kl_lw_step(L, n, cur, one.v);
    } else {
      one.v = one.v ? one.v : 0;
      if (one.v) L->f->ins[one.v].imm = 1;
      nv = kl_lw_binop(L, n, bop, cur, one);
    }
    kl_lw_assign(L, sym, nv.v);
    return prefix ? nv : cur;
  }
  bool ok;
  struct kl_rv a = kl_lw_addr(L, arg, &ok);
  uint32_t one = kl_lw_const(L, n, 1);
  if (!ok) return kl_rv_of(kl_lw_opaque(L, n, &a.v, 1), NULL);
  return kl_lw_store(L, n, a, one, bop);
}

/* ---- Control inside expressions -------------------------------------------------------------- */

/* `c ? x : y` (and `a && b`, `a || b`) whose arms read memory or change something: an IF that
 * assigns a temporary symbol, joined by its PHI. */
static struct kl_rv kl_lw_cond_if(struct kl_lower *L, TSNode n, uint32_t c, TSNode x, TSNode y,
                                  int64_t kx, int64_t ky) {
  uint32_t sym = kl_lw_temp(L, "?:");
  struct kl_lif st;
  kl_lw_if_begin(L, &st, n, c);
  uint32_t v = kl_node_null(x) ? kl_lw_const(L, n, kx) : kl_lw_value(L, x);
  kl_lw_assign(L, sym, v);
  kl_lw_if_else(L, &st);
  v = kl_node_null(y) ? kl_lw_const(L, n, ky) : kl_lw_value(L, y);
  kl_lw_assign(L, sym, v);
  kl_lw_if_end(L, &st);
  return kl_rv_of(L->live ? kl_lw_read(L, sym, n) : KL_IR_NONE, NULL);
}

static struct kl_rv kl_lw_binary(struct kl_lower *L, TSNode n) {
  const char *op = kl_lw_op_text(L, n);
  int b = kl_lw_binop_of(op);
  TSNode l = kl_node_field(n, "left"), r = kl_node_field(n, "right");
  if (!b) {
    uint32_t ops[2] = {kl_lw_value(L, l), kl_lw_value(L, r)};
    return kl_rv_of(kl_lw_opaque(L, n, ops, 2), NULL);
  }
  struct kl_rv x = kl_lw_expr(L, l);
  if (b == KL_IR_LAND || b == KL_IR_LOR) {
    int budget = 64;
    if (!kl_lw_simple(r, &budget)) {
      uint32_t c = kl_lw_val(L, &x, l);
      if (b == KL_IR_LAND) return kl_lw_cond_if(L, n, c, r, kl_null, 0, 0);
      return kl_lw_cond_if(L, n, c, kl_null, r, 1, 0);
    }
  }
  struct kl_rv y = kl_lw_expr(L, r);
  if ((b == KL_IR_ADD || b == KL_IR_SUB) && x.ptr && !y.ptr) {
    uint32_t k = kl_lw_val(L, &y, r);
    if (b == KL_IR_SUB) {
      k = kl_lw_emit(L, KL_IR_UNOP, n, &k, 1);
      if (k) L->f->ins[k].sub = KL_IR_NEG;
    }
    return kl_lw_step(L, n, x, k);
  }
  if (b == KL_IR_ADD && y.ptr && !x.ptr) return kl_lw_step(L, n, y, kl_lw_val(L, &x, l));
  return kl_lw_binop(L, n, b, x, y);
}

static struct kl_rv kl_lw_unary(struct kl_lower *L, TSNode n) {
  const char *op = kl_lw_op_text(L, n);
  struct kl_rv x = kl_lw_expr(L, kl_node_field(n, "argument"));
  int u = !strcmp(op, "-")                           ? KL_IR_NEG
          : !strcmp(op, "!") || !strcmp(op, "not")   ? KL_IR_NOT
          : !strcmp(op, "~") || !strcmp(op, "compl") ? KL_IR_BITNOT
                                                     : 0;
  if (!strcmp(op, "+")) return x;
  int64_t k, r;
  if (u && kl_ir_const(L->f, x.v, &k) &&
      kl_consteval_apply(u == KL_IR_NEG   ? KL_COP_NEG
                         : u == KL_IR_NOT ? KL_COP_NOT
                                          : KL_COP_BITNOT,
                         k, 0, &r))
    return kl_rv_of(kl_lw_const(L, n, r), "int");
  uint32_t a = kl_lw_val(L, &x, n);
  if (!u) return kl_rv_of(kl_lw_opaque(L, n, &a, 1), NULL);
  uint32_t v = kl_lw_emit(L, KL_IR_UNOP, n, &a, 1);
  if (v) {
    L->f->ins[v].sub = (uint8_t)u;
    L->f->ins[v].type = u == KL_IR_NOT ? "bool" : x.etype;
  }
  return kl_rv_of(v, u == KL_IR_NOT ? "bool" : x.etype);
}

static struct kl_rv kl_lw_ternary(struct kl_lower *L, TSNode n) {
  TSNode c = kl_node_field(n, "condition"), x = kl_node_field(n, "consequence"),
         y = kl_node_field(n, "alternative");
  uint32_t cv = kl_lw_value(L, c);
  int64_t k;
  if (kl_ir_const(L->f, cv, &k)) return kl_lw_expr(L, k ? x : y);
  int bx = 64, by = 64;
  if (!kl_lw_simple(x, &bx) || !kl_lw_simple(y, &by)) return kl_lw_cond_if(L, n, cv, x, y, 0, 0);
  struct kl_rv a = kl_lw_expr(L, x), b = kl_lw_expr(L, y);
  uint32_t ops[3] = {cv, kl_lw_val(L, &a, x), kl_lw_val(L, &b, y)};
  uint32_t v = kl_lw_emit(L, KL_IR_SELECT, n, ops, 3);
  struct kl_rv r = a;
  r.v = v;
  r.coordvec = false;
  if (!(a.ptr && b.ptr)) r.ptr = false;
  if (v) L->f->ins[v].type = a.etype ? a.etype : b.etype;
  return r;
}

/* ---- Calls ----------------------------------------------------------------------------------- */

static uint32_t kl_lw_mem_flags(const char *t) {
  uint32_t f = KL_IR_MEM_NONE;
  if (strstr(t, "threadgroup")) f |= KL_IR_MEM_THREADGROUP;
  if (strstr(t, "device")) f |= KL_IR_MEM_DEVICE;
  if (strstr(t, "texture")) f |= KL_IR_MEM_TEXTURE;
  return f;
}

/* The template arguments of a call `f<4, T>(...)` bound to callee's value parameters, each folded
 * in the caller (decimal text), NULL when it does not fold. */
/* A template parameter's default (`short TCOLS = BCOLS / n_reads`) with the parameters before
 * it that are bound to values written as those values, so that it folds. */
static const char *kl_lw_subst_targs(struct kl_lower *L, const char *t,
                                     const struct kl_spec_bind *b, size_t n) {
  if (!t) return NULL;
  size_t len = strlen(t), cap = len + 1, o = 0;
  char *out = kl_arena_alloc(L->a, cap);
  for (size_t i = 0; i < len;) {
    size_t j = i;
    if (isalpha((unsigned char)t[i]) || t[i] == '_')
      while (j < len && (isalnum((unsigned char)t[j]) || t[j] == '_')) j++;
    const char *rep = NULL;
    for (size_t k = 0; j > i && k < n && !rep; k++)
      if (b[k].text && strlen(b[k].name) == j - i && !memcmp(b[k].name, t + i, j - i))
        rep = b[k].text;
    size_t add = rep ? strlen(rep) + 2 : j > i ? j - i : 1;
    if (o + add + 1 > cap) {
      size_t nc = 2 * (o + add + 1);
      char *g = kl_arena_alloc(L->a, nc);
      memcpy(g, out, o);
      out = g;
      cap = nc;
    }
    if (rep) {
      o += (size_t)sprintf(out + o, "(%s)", rep);
    } else {
      memcpy(out + o, t + i, j > i ? j - i : 1);
      o += j > i ? j - i : 1;
    }
    i = j > i ? j : i + 1;
  }
  out[o] = '\0';
  return out;
}

static void kl_lw_targs(struct kl_lower *L, const struct kl_function *callee, TSNode fnode,
                        struct kl_spec_bind **tb, size_t *ntb) {
  *tb = NULL;
  *ntb = 0;
  if (!callee->ntparams) return;
  TSNode targs = kl_null;
  TSNode fu = fnode;
  if (kl_node_is_kind(fu, KL_KIND_QUALIFIED_IDENTIFIER)) fu = kl_node_field(fu, "name");
  if (kl_node_is_kind(fu, KL_KIND_FIELD_EXPRESSION)) fu = kl_node_field(fu, "field");
  if (!kl_node_null(fu) && (kl_node_is_kind(fu, KL_KIND_TEMPLATE_FUNCTION) ||
                            !strcmp(ts_node_type(fu), "template_method")))
    targs = kl_node_field(fu, "arguments");
  /* `S<8>::run(...)`: a member of a struct template takes the struct's parameters. */
  /* A constructor's: the object's type (`S<8>`, or an alias `K`). */
  TSNode sc = kl_node_is_kind(fnode, KL_KIND_QUALIFIED_IDENTIFIER) ? kl_node_field(fnode, "scope")
              : kl_node_is_kind(fnode, KL_KIND_TYPE_IDENTIFIER) ||
                      !strcmp(ts_node_type(fnode), "template_type")
                  ? fnode
                  : kl_null;
  if (kl_node_null(targs) && !kl_node_null(sc) && !strcmp(ts_node_type(sc), "template_type"))
    targs = kl_node_field(sc, "arguments");
  /* `K::run(...)` with `using K = S<T, 8>;`: the alias's arguments, folded where it was declared
   * (a file-scope alias names no parameter of the caller). */
  bool file_alias = false;
  if (kl_node_null(targs) && !kl_node_null(sc) &&
      (kl_node_is_kind(sc, KL_KIND_TYPE_IDENTIFIER) ||
       !strcmp(ts_node_type(sc), "namespace_identifier")) &&
      callee->owner && !kl_node_null(callee->owner_body)) {
    bool in_body = false;
    targs = kl_model_alias_args(L->m, L->frames[L->nframes - 1].fn, kl_lw_text(L, sc), &in_body);
    file_alias = !kl_node_null(targs) && !in_body;
  }
  struct kl_spec_bind *b = kl_arena_alloc(L->a, (callee->ntparams + 1) * sizeof *b);
  uint32_t na = kl_node_null(targs) ? 0 : ts_node_named_child_count(targs);
  for (size_t i = 0; i < callee->ntparams; i++) {
    b[i].name = callee->tparams[i];
    b[i].text = NULL;
    if (!callee->tvalue[i]) continue;
    const char *t = NULL;
    if (callee->tpos[i] < na)
      t = kl_lw_text(L, kl_node_named_child(targs, (uint32_t)callee->tpos[i]));
    else
      t = kl_lw_subst_targs(L, callee->tdefaults[i], b, i);
    int64_t v;
    if (t && (file_alias ? kl_lw_fold_file_text(L, t, strlen(t), &v)
                         : kl_lw_fold_text(L, t, strlen(t), &v)))
      b[i].text = kl_arena_printf(L->a, "%lld", (long long)v);
  }
  *tb = b;
  *ntb = callee->ntparams;
}

/* A member function of the struct a type names (through aliases): its body's fields and
 * constructors are the struct's. With ctor, a constructor taking nargs arguments. */
static const struct kl_function *kl_lw_struct_fn(struct kl_lower *L, const char *type, bool ctor,
                                                 uint32_t nargs) {
  char owner[128];
  if (!kl_model_owner_of(L->m, L->frames[L->nframes - 1].fn, type, owner, sizeof owner))
    return NULL;
  for (size_t i = 0; i < L->m->nfunctions; i++) {
    const struct kl_function *f = &L->m->functions[i];
    if (!f->owner || strcmp(f->owner, owner) || kl_node_null(f->owner_body)) continue;
    if (!ctor) return f;
    if (!strcmp(f->name, owner) && f->nparams == nargs && !kl_node_null(f->body)) return f;
  }
  return NULL;
}

bool kl_lw_construct(struct kl_lower *L, TSNode tnode, const char *type, const char *objname,
                     TSNode call, const TSNode *argn, uint32_t nargs, struct kl_rv self) {
  const struct kl_function *sf = kl_lw_struct_fn(L, type, false, 0);
  if (!sf || !self.v) return false;
  kl_lw_promote_fields(L, self.v, objname, sf);
  struct kl_spec_bind *tb;
  size_t ntb;
  if (sf->notparams && sf->ntparams == sf->notparams && !kl_node_null(tnode)) {
    kl_lw_targs(L, sf, tnode, &tb, &ntb);
    KL_VEC_PUSH(L->a, L->objtb, L->nobjtb, L->cap_objtb);
    L->objtb[L->nobjtb].obj = self.v;
    L->objtb[L->nobjtb].tb = tb;
    L->objtb[L->nobjtb++].ntb = ntb;
  }
  if (kl_node_null(call)) return true;
  const struct kl_function *ctor = kl_lw_struct_fn(L, type, true, nargs);
  if (!ctor) return false;
  kl_lw_targs(L, ctor, tnode, &tb, &ntb);
  struct kl_rv out;
  return kl_lw_inline(L, ctor, call, argn, nargs, self, tb, ntb, &out);
}

/* The first argument that is a flag, a truth value computed at the call (`sg == 0`, `!aligned`,
 * `a || b`) or a `bool` local, whose value is not a constant; -1 when there is none. */
static int32_t kl_lw_flag_arg(struct kl_lower *L, const TSNode *argn, uint32_t nargs,
                              const uint32_t *ops) {
  static const char *const truth[] = {"==", "!=", "<", ">", "<=", ">=", "&&", "||", "!", NULL};
  for (uint32_t i = 0; i < nargs; i++) {
    TSNode a = kl_lw_unparen(argn[i]);
    int64_t k;
    if (!ops[i] || kl_ir_const(L->f, ops[i], &k)) continue;
    bool flag = false;
    if (kl_node_is_kind(a, KL_KIND_BINARY_EXPRESSION) ||
        kl_node_is_kind(a, KL_KIND_UNARY_EXPRESSION)) {
      const char *op = kl_lw_op_text(L, a);
      for (int t = 0; truth[t] && !flag; t++) flag = !strcmp(op, truth[t]);
    } else if (kl_node_is_kind(a, KL_KIND_IDENTIFIER)) {
      uint32_t s = ts_node_start_byte(a), e = ts_node_end_byte(a);
      int32_t b = kl_lw_lookup(L, kl_lw_src(L, a) + s, e - s);
      flag = b >= 0 && L->binds[b].var && L->binds[b].var->type &&
             !strcmp(L->binds[b].var->type, "bool");
    }
    if (flag) return (int32_t)i;
  }
  return -1;
}

/* The lambdas handed to a function the unit does not define (MLX's `dispatch_bool(c, [&](auto
 * k) {...})` from a header): run there, once, under the control of the call, with parameters
 * made of the call's arguments ops (only a kernel's parameters carry thread positions, so what
 * the function hands over comes from what it is handed). That the function calls it at all is
 * taken on trust. Handed a flag beside it, a dispatcher runs it in one branch or the other on
 * that flag: threads that disagree on the flag reach different copies of its barriers, so a
 * generic one runs under a branch on the flag (one copy: what it computes is the same either
 * way). */
/* Whether lambda lam is generic (a parameter of type `auto`): a dispatcher handed one with a
 * flag instantiates it per value of the flag (`dispatch_bool(c, [&](auto k) {...})`); a plain
 * lambda is more likely just run. */
static bool kl_lw_generic_lambda(struct kl_lower *L, TSNode lam) {
  TSNode d = kl_node_field(lam, "declarator");
  TSNode ps = kl_node_null(d) ? kl_null : kl_node_field(d, "parameters");
  uint32_t np = kl_node_null(ps) ? 0 : ts_node_named_child_count(ps);
  for (uint32_t j = 0; j < np; j++) {
    TSNode t = kl_node_field(kl_node_named_child(ps, j), "type");
    if (!kl_node_null(t) && !strcmp(kl_lw_text(L, t), "auto")) return true;
  }
  return false;
}

static void kl_lw_handed_lambdas(struct kl_lower *L, TSNode call, const TSNode *argn,
                                 uint32_t nargs, const uint32_t *ops, uint32_t nops) {
  int32_t flag = nargs > 1 ? kl_lw_flag_arg(L, argn, nargs, ops) : -1;
  for (uint32_t i = 0; i < nargs && L->live && !L->stop; i++) {
    TSNode a = kl_lw_unparen(argn[i]), lam = kl_null;
    uint32_t home = L->nframes - 1;
    if (kl_node_is_kind(a, KL_KIND_LAMBDA_EXPRESSION)) {
      lam = a;
    } else if (kl_node_is_kind(a, KL_KIND_IDENTIFIER)) {
      uint32_t s = ts_node_start_byte(a), e = ts_node_end_byte(a);
      int32_t b = kl_lw_lookup(L, kl_lw_src(L, a) + s, e - s);
      if (b >= 0 && L->binds[b].kind == KL_LB_LAMBDA) {
        lam = L->binds[b].lam;
        home = L->binds[b].lam_home;
      }
    }
    if (kl_node_null(lam)) continue;
    uint32_t given = kl_lw_opaque(L, call, ops, nops);
    struct kl_rv out;
    struct kl_lif st;
    bool branch = flag >= 0 && kl_lw_generic_lambda(L, lam);
    if (branch) kl_lw_if_begin(L, &st, argn[flag], ops[flag]);
    kl_lw_inline_lambda(L, lam, home, call, NULL, 0, given, &out);
    if (branch) kl_lw_if_end(L, &st);
  }
}

/* The parameters (bit i: the i-th, below 32) of function name, declared in the unit and defined
 * elsewhere, that are non-const references (`thread uint& out`): the call writes through them. */
static uint32_t kl_lw_out_params(struct kl_lower *L, const char *name) {
  struct kl_arena *pa;
  struct kl_lw_protos *pt = kl_lw_protos_of(L, &pa);
  if (!pt->read) {
    pt->read = true;
    TSNode root = ts_tree_root_node(L->m->unit->tree), buf[16];
    uint32_t nk;
    const TSNode *kids = kl_node_kids(L->a, root, buf, 16, &nk);
    size_t cap = 0;
    for (uint32_t i = 0; i < nk; i++) {
      TSNode d = kids[i];
      if (!kl_node_is_kind(d, KL_KIND_DECLARATION)) continue;
      TSNode fd = kl_node_field(d, "declarator");
      if (!kl_node_is(fd, "function_declarator")) continue;
      TSNode id = kl_node_field(fd, "declarator"), ps = kl_node_field(fd, "parameters");
      if (kl_node_null(id) || kl_node_null(ps)) continue;
      uint32_t np = ts_node_named_child_count(ps), k = 0, bits = 0;
      for (uint32_t j = 0; j < np && k < 32; j++) {
        TSNode p = kl_node_named_child(ps, j);
        if (kl_node_is_kind(p, KL_KIND_COMMENT)) continue;
        const char *t = kl_lw_text(L, p);
        const char *c = strstr(t, "const");
        bool konst = c && (c == t || !isalnum((unsigned char)c[-1])) &&
                     !isalnum((unsigned char)c[5]) && c[5] != '_';
        if (strchr(t, '&') && !strstr(t, "&&") && !konst) bits |= 1u << k;
        k++;
      }
      size_t cap2 = cap;
      KL_VEC_PUSH(pa, pt->names, pt->n, cap);
      KL_VEC_PUSH(pa, pt->bits, pt->n, cap2);
      const char *t = kl_lw_text(L, id);
      pt->names[pt->n] = pa == L->a ? t : kl_arena_strdup(pa, t);
      pt->bits[pt->n++] = bits;
    }
  }
  /* The first prototype of that name, as the scan of the file met it. */
  for (uint32_t i = 0; i < pt->n; i++)
    if (!strcmp(pt->names[i], name)) return pt->bits[i];
  return 0;
}

static struct kl_rv kl_lw_call(struct kl_lower *L, TSNode n) {
  TSNode fnode = kl_node_field(n, "function"), args = kl_node_field(n, "arguments");
  uint32_t nk = kl_node_null(args) ? 0 : ts_node_named_child_count(args), nargs = 0;
  TSNode argn_buf[16];
  TSNode *argn = nk <= 16 ? argn_buf : kl_arena_alloc(L->a, nk * sizeof *argn);
  /* Comments between the arguments are no arguments. */
  for (uint32_t i = 0; i < nk; i++) {
    TSNode c = kl_node_named_child(args, i);
    if (!kl_node_is_kind(c, KL_KIND_COMMENT)) argn[nargs++] = c;
  }
  struct kl_rv mr;
  if (kl_lw_macro_call(L, n, false, NULL, &mr)) return mr;
  TSNode name = kl_model_name_of(fnode);
  if (kl_node_null(name)) name = fnode;
  const char *nm = kl_lw_text(L, name);
  const char *bare = kl_msl_unprefix(nm);
  /* Same-file helpers: functions, static members (`Q::run`), methods of an object. */
  const struct kl_lframe *fr = &L->frames[L->nframes - 1];
  TSNode fu = kl_lw_unparen(fnode);
  const struct kl_function *callee = NULL;
  struct kl_rv self = {0};
  if (kl_node_is_kind(fu, KL_KIND_FIELD_EXPRESSION)) {
    TSNode obj = kl_lw_unparen(kl_node_field(fu, "argument")), fld = kl_node_field(fu, "field");
    if (kl_node_is_kind(obj, KL_KIND_IDENTIFIER) && !kl_node_null(fld)) {
      uint32_t s = ts_node_start_byte(obj), e = ts_node_end_byte(obj);
      int32_t b = kl_lw_lookup(L, kl_lw_src(L, obj) + s, e - s);
      TSNode fn2 = kl_model_name_of(fld);
      if (kl_node_null(fn2)) fn2 = fld;
      uint32_t s0 = ts_node_start_byte(fn2), s1 = ts_node_end_byte(fn2);
      const char *ot = b < 0                                     ? NULL
                       : L->binds[b].var && L->binds[b].var->type ? L->binds[b].var->type
                       : L->binds[b].kind == KL_LB_MEM             ? L->binds[b].mem.etype
                                                                  : NULL;
      if (ot) callee = kl_model_method(L->m, fr->fn, ot, kl_lw_src(L, fn2) + s0, s1 - s0);
      if (callee && b >= 0 && L->binds[b].kind == KL_LB_MEM) self = L->binds[b].mem;
    }
  } else {
    callee = kl_model_callee(L->m, fr->fn, fnode);
    /* A method calling another of its struct's runs on the same object. */
    if (callee && callee->owner && fr->fn && fr->fn->owner && !strcmp(callee->owner, fr->fn->owner))
      self = fr->self;
  }
  if (!callee && kl_node_is_kind(fu, KL_KIND_IDENTIFIER)) {
    uint32_t s = ts_node_start_byte(fu), e = ts_node_end_byte(fu);
    int32_t b = kl_lw_lookup(L, kl_lw_src(L, fu) + s, e - s);
    struct kl_rv out;
    if (b >= 0 && L->binds[b].kind == KL_LB_LAMBDA &&
        kl_lw_inline_lambda(L, L->binds[b].lam, L->binds[b].lam_home, n, argn, nargs, 0, &out))
      return out;
  }
  if (callee && !kl_node_null(callee->body)) {
    struct kl_spec_bind *tb;
    size_t ntb;
    kl_lw_targs(L, callee, fnode, &tb, &ntb);
    /* A member function of an object of a struct template, with no parameters of its own:
     * the object's arguments. */
    for (uint32_t i = 0; self.v && callee->ntparams == callee->notparams && i < L->nobjtb; i++)
      if (L->objtb[i].obj == self.v && L->objtb[i].ntb == callee->ntparams) {
        tb = L->objtb[i].tb;
        ntb = L->objtb[i].ntb;
      }
    struct kl_rv out;
    if (kl_lw_inline(L, callee, n, argn, nargs, self, tb, ntb, &out)) return out;
  }
  struct kl_rv lw;
  if (!callee && nargs == 1 && (!strcmp(bare, "any") || !strcmp(bare, "all")) &&
      kl_lw_lanewise(L, n, argn[0], !strcmp(bare, "all"), &lw))
    return lw;
  const struct kl_msl_fn *bf = kl_msl_fn(nm);
  if (bf && bf->kind == KL_FN_BARRIER) {
    /* Its arguments are flags, not values. */
    uint32_t v = kl_lw_emit(L, KL_IR_BARRIER, n, NULL, 0);
    if (v) {
      L->f->ins[v].fn = bf;
      L->f->ins[v].imm = nargs ? kl_lw_mem_flags(kl_lw_text(L, args)) : 0;
    }
    return kl_rv_of(v, NULL);
  }
  /* Built-ins and the rest: the arguments' values first. */
  uint32_t *ops = kl_arena_alloc(L->a, (nargs + 1) * sizeof *ops);
  struct kl_rv rv0 = {0}, rv1 = {0};
  for (uint32_t i = 0; i < nargs; i++) {
    struct kl_rv r = kl_lw_expr(L, argn[i]);
    ops[i] = kl_lw_val(L, &r, argn[i]);
    if (i == 0) rv0 = r;
    if (i == 1) rv1 = r;
  }
  if (bf) {
    uint32_t v = kl_lw_emit(L, KL_IR_SIMD, n, ops, nargs);
    if (v) {
      L->f->ins[v].fn = bf;
      L->f->ins[v].type = rv0.etype;
    }
    return kl_rv_of(v, rv0.etype);
  }
  if (!strncmp(bare, "atomic_", 7) && nargs >= 1) {
    uint32_t v = kl_lw_emit(L, KL_IR_ATOMIC, n, ops, nargs);
    if (v) {
      L->f->ins[v].name = bare;
      L->f->ins[v].as = rv0.as;
    }
    return kl_rv_of(v, NULL);
  }
  if ((!strcmp(bare, "min") || !strcmp(bare, "max")) && nargs == 2 &&
      (kl_lw_is_int(L, &rv0) || kl_lw_is_int(L, &rv1)) && !kl_lw_is_float(rv0.etype) &&
      !kl_lw_is_float(rv1.etype) && !rv0.ptr && !rv1.ptr)
    return kl_lw_binop(L, n, bare[1] == 'i' ? KL_IR_MIN : KL_IR_MAX, rv0, rv1);
  /* Conversions: `float(x)`, `static_cast<int>(x)`, `as_type<half2>(x)`. */
  const char *ctype = NULL;
  if (kl_msl_type(bare) || !strcmp(ts_node_type(fu), "primitive_type") ||
      kl_node_is_kind(fu, KL_KIND_TYPE_IDENTIFIER))
    ctype = bare;
  else if (!strcmp(bare, "static_cast") || !strcmp(bare, "as_type") ||
           !strcmp(bare, "reinterpret_cast") || !strcmp(bare, "const_cast")) {
    TSNode ta =
        kl_node_is_kind(fu, KL_KIND_TEMPLATE_FUNCTION) ? kl_node_field(fu, "arguments") : kl_null;
    ctype = kl_node_null(ta) ? bare : kl_lw_text(L, ta);
    if (ctype[0] == '<') {
      size_t l = strlen(ctype);
      ctype = kl_arena_strndup(L->a, ctype + 1, l >= 2 ? l - 2 : 0);
    }
  }
  if (ctype && nargs == 1) {
    uint32_t v = kl_lw_emit(L, KL_IR_CAST, n, ops, 1);
    if (v) L->f->ins[v].type = ctype;
    struct kl_rv r = kl_rv_of(v, ctype);
    if (rv0.ptr && strchr(ctype, '*')) {
      r = rv0;
      r.v = v;
    }
    return r;
  }
  /* A method the unit does not define (`rw.load()`, `c->elements()`) reads and may write its
   * object: its address (or pointer) is an operand too. */
  uint32_t nops = nargs;
  if (kl_node_is_kind(fu, KL_KIND_FIELD_EXPRESSION)) {
    TSNode obj = kl_node_field(fu, "argument");
    bool ok = false;
    struct kl_rv o = {0};
    if (strcmp(kl_lw_op_text(L, fu), "->")) o = kl_lw_addr(L, obj, &ok);
    if (!ok && !o.v) o = kl_lw_expr(L, obj);
    uint32_t ov = kl_lw_val(L, &o, obj);
    if (ov) {
      uint32_t *more = kl_arena_alloc(L->a, (nargs + 2) * sizeof *more);
      if (nargs) memcpy(more, ops, nargs * sizeof *ops);
      more[nops++] = ov;
      ops = more;
    }
  }
  uint32_t v = kl_lw_emit(L, KL_IR_CALL, n, ops, nops);
  if (v) {
    L->f->ins[v].name = bare;
    L->f->ins[v].type = ctype;
  }
  /* A local handed to a reference out-parameter holds, after the call, what the call made of
   * everything it was handed. */
  uint32_t outs =
      v && !callee && kl_node_is_kind(fu, KL_KIND_IDENTIFIER) ? kl_lw_out_params(L, bare) : 0;
  for (uint32_t i = 0; outs && i < nargs && i < 32; i++) {
    TSNode a = kl_lw_unparen(argn[i]);
    if (!(outs & (1u << i)) || !kl_node_is_kind(a, KL_KIND_IDENTIFIER)) continue;
    uint32_t s = ts_node_start_byte(a), e = ts_node_end_byte(a);
    int32_t b = kl_lw_lookup(L, kl_lw_src(L, a) + s, e - s);
    if (b < 0) continue;
    if (L->binds[b].kind == KL_LB_VALUE) kl_lw_assign(L, L->binds[b].sym, v);
    else if (L->binds[b].kind == KL_LB_MEM) kl_lw_store(L, a, L->binds[b].mem, v, 0);
  }
  kl_lw_handed_lambdas(L, n, argn, nargs, ops, nops);
  return kl_rv_of(v, ctype);
}

/* ---- Expressions ----------------------------------------------------------------------------- */

static struct kl_rv kl_lw_number(struct kl_lower *L, TSNode n) {
  const char *t = kl_lw_text(L, n);
  char *end = NULL;
  long long c = strtoll(t, &end, 0);
  if (end && end != t && strspn(end, "uUlL") == strlen(end))
    return kl_rv_of(kl_lw_const(L, n, c), strpbrk(end, "uU") ? "uint" : "int");
  double d = strtod(t, &end);
  uint32_t v = kl_lw_emit(L, KL_IR_FCONST, n, NULL, 0);
  if (v) {
    L->f->ins[v].fimm = d;
    L->f->ins[v].type = end && strpbrk(end, "hH") ? "half" : "float";
  }
  return kl_rv_of(v, "float");
}

/* Each named child's value, joined in an OPAQUE (what the lowering does not model). */
static struct kl_rv kl_lw_parts(struct kl_lower *L, TSNode n) {
  uint32_t k = ts_node_named_child_count(n), ops[16], m = 0;
  for (uint32_t i = 0; i < k && !L->stop; i++) {
    TSNode c = kl_node_named_child(n, i);
    const char *t = ts_node_type(c);
    /* Types and comments have no value. */
    if (kl_node_is_kind(c, KL_KIND_COMMENT) || strstr(t, "type") ||
        !strcmp(t, "template_argument_list"))
      continue;
    uint32_t v = kl_lw_value(L, c);
    if (m < 16 && v) ops[m++] = v;
  }
  return kl_rv_of(kl_lw_opaque(L, n, ops, m), NULL);
}

static struct kl_rv kl_lw_expr_kind(struct kl_lower *L, TSNode n) {
  if (kl_lw_broken(n)) return kl_lw_parts(L, n);
  switch (kl_node_kind(n)) {
  case KL_KIND_NUMBER_LITERAL:
    return kl_lw_number(L, n);
  case KL_KIND_TRUE:
  case KL_KIND_FALSE:
    return kl_rv_of(kl_lw_const(L, n, kl_node_is_kind(n, KL_KIND_TRUE)), "bool");
  case KL_KIND_NULLPTR:
    return kl_rv_of(kl_lw_const(L, n, 0), NULL);
  case KL_KIND_COMMENT:
    return kl_rv_of(KL_IR_NONE, NULL);
  case KL_KIND_IDENTIFIER:
    return kl_lw_ident(L, n, false, NULL);
  case KL_KIND_TYPE_IDENTIFIER: {
    /* A constructor's argument the parser took for a type (`Loader l(src, ld);`). */
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (kl_lw_lookup(L, kl_lw_src(L, n) + s, e - s) >= 0) return kl_lw_ident(L, n, false, NULL);
    return kl_lw_parts(L, n);
  }
  case KL_KIND_QUALIFIED_IDENTIFIER: {
    const char *t = kl_lw_text(L, n);
    int64_t k;
    if (kl_lw_fold_text(L, t, strlen(t), &k)) return kl_rv_of(kl_lw_const(L, n, k), "int");
    TSNode last = kl_model_name_of(n);
    if (!kl_node_null(last)) {
      const char *lt = kl_lw_text(L, last);
      if (kl_lw_fold_text(L, lt, strlen(lt), &k)) return kl_rv_of(kl_lw_const(L, n, k), "int");
    }
    uint32_t v = kl_lw_emit(L, KL_IR_SYMBOL, n, NULL, 0);
    if (v) L->f->ins[v].name = t;
    return kl_rv_of(v, NULL);
  }
  case KL_KIND_PARENTHESIZED_EXPRESSION:
  case KL_KIND_CONDITION_CLAUSE: {
    struct kl_rv r = {0};
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(n, i);
      if (kl_node_is_kind(c, KL_KIND_COMMENT)) continue;
      if (kl_node_is_kind(c, KL_KIND_DECLARATION)) {
        kl_lw_declaration(L, c);
        /* `if (T x = e)`: the condition is x. */
        TSNode d = kl_node_field(c, "declarator");
        TSNode nm = kl_node_field(d, "declarator");
        if (!kl_node_null(nm)) r = kl_lw_expr(L, nm);
        continue;
      }
      r = kl_lw_expr(L, c);
    }
    return r;
  }
  case KL_KIND_BINARY_EXPRESSION:
    return kl_lw_binary(L, n);
  case KL_KIND_UNARY_EXPRESSION:
    return kl_lw_unary(L, n);
  case KL_KIND_ASSIGNMENT_EXPRESSION:
    return kl_lw_assign_expr(L, n);
  case KL_KIND_UPDATE_EXPRESSION:
    return kl_lw_update(L, n);
  case KL_KIND_CONDITIONAL_EXPRESSION:
    return kl_lw_ternary(L, n);
  case KL_KIND_COMMA_EXPRESSION:
    kl_lw_expr(L, kl_node_field(n, "left"));
    return kl_lw_expr(L, kl_node_field(n, "right"));
  case KL_KIND_CALL_EXPRESSION:
    return kl_lw_call(L, n);
  case KL_KIND_CAST_EXPRESSION: {
    struct kl_rv x = kl_lw_expr(L, kl_node_field(n, "value"));
    TSNode ty = kl_node_field(n, "type");
    const char *t = kl_lw_text(L, ty);
    uint32_t a = kl_lw_val(L, &x, n);
    uint32_t v = kl_lw_emit(L, KL_IR_CAST, n, &a, 1);
    if (v) L->f->ins[v].type = t;
    if (x.ptr && strchr(t, '*')) {
      x.v = v;
      x.coordvec = false;
      /* `(device float4 *)p`: the new element type. */
      char base[64];
      size_t l = strcspn(t, "*");
      const char *p = t;
      for (const char *q; (q = strchr(p, ' ')) && q < t + l;) p = q + 1;
      size_t bl = (size_t)(t + l - p);
      while (bl && p[bl - 1] == ' ') bl--;
      if (bl < sizeof base) {
        memcpy(base, p, bl);
        base[bl] = '\0';
        x.etype = kl_arena_strdup(L->a, base);
        x.esize = kl_lw_type_size(base);
      }
      return x;
    }
    return kl_rv_of(v, t);
  }
  case KL_KIND_SUBSCRIPT_EXPRESSION:
  case KL_KIND_FIELD_EXPRESSION: {
    if (kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION)) {
      /* A component of a vector coordinate. */
      TSNode arg = kl_lw_unparen(kl_node_field(n, "argument"));
      if (kl_node_is_kind(arg, KL_KIND_IDENTIFIER)) {
        uint32_t s = ts_node_start_byte(arg), e = ts_node_end_byte(arg);
        int32_t b = kl_lw_lookup(L, kl_lw_src(L, arg) + s, e - s);
        if (b >= 0 && L->binds[b].kind == KL_LB_COORD) {
          const char *fl = kl_lw_text(L, kl_node_field(n, "field"));
          int c = strlen(fl) == 1 ? kl_lw_comp(fl[0]) : -1;
          if (c >= 0 && c < 3) return kl_rv_of(L->binds[b].comp[c], "uint");
          uint32_t ops[4] = {0}, m = 0;
          for (const char *p = fl; *p && m < 4; p++) {
            int cc = kl_lw_comp(*p);
            if (cc >= 0 && cc < 3) ops[m++] = L->binds[b].comp[cc];
          }
          return kl_rv_of(kl_lw_opaque(L, n, ops, m), NULL);
        }
      }
    }
    int32_t hb = kl_lw_field_of(L, n);
    if (hb >= 0) return kl_lw_field_read(L, hb, n);
    bool ok;
    struct kl_rv a = kl_lw_addr(L, n, &ok);
    if (!ok) {
      if (kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION) && !a.v) {
        /* A field of a value (a call's result, an SSA local of struct type). */
        uint32_t b = kl_lw_value(L, kl_node_field(n, "argument"));
        return kl_rv_of(kl_lw_opaque(L, n, &b, 1), NULL);
      }
      return a;
    }
    /* An array inside (`a[i]` of `float a[4][8]`) stays an address. */
    if (a.dims) return a;
    return kl_lw_load(L, n, a);
  }
  case KL_KIND_POINTER_EXPRESSION: {
    const char *op = kl_lw_op_text(L, n);
    if (!strcmp(op, "&")) {
      bool ok;
      struct kl_rv a = kl_lw_addr(L, kl_node_field(n, "argument"), &ok);
      if (ok) {
        a.ptr = true;
        return a;
      }
      return kl_rv_of(kl_lw_opaque(L, n, &a.v, 1), NULL);
    }
    bool ok;
    struct kl_rv a = kl_lw_addr(L, n, &ok);
    if (!ok) return kl_rv_of(kl_lw_opaque(L, n, &a.v, 1), NULL);
    return kl_lw_load(L, n, a);
  }
  case KL_KIND_SIZEOF_EXPRESSION: {
    TSNode ty = kl_node_field(n, "type");
    uint32_t s = kl_node_null(ty) ? 0 : kl_lw_type_size(kl_lw_text(L, ty));
    if (s) return kl_rv_of(kl_lw_const(L, n, s), "size_t");
    return kl_rv_of(kl_lw_opaque(L, n, NULL, 0), "size_t");
  }
  case KL_KIND_STRING_LITERAL:
  case KL_KIND_CHAR_LITERAL:
  case KL_KIND_LAMBDA_EXPRESSION:
    return kl_rv_of(kl_lw_opaque(L, n, NULL, 0), NULL);
  default:
    if (!strcmp(ts_node_type(n), "null")) return kl_rv_of(kl_lw_const(L, n, 0), NULL);
    return kl_lw_parts(L, n);
  }
}

struct kl_rv kl_lw_expr(struct kl_lower *L, TSNode n) {
  struct kl_rv none = {0};
  if (kl_node_null(n) || L->stop) return none;
  if (L->nest >= KL_LOWER_MAX_NEST) return kl_rv_of(kl_lw_opaque(L, n, NULL, 0), NULL);
  L->nest++;
  struct kl_rv r = kl_lw_expr_kind(L, n);
  L->nest--;
  return r;
}
