/* Lowering statements: declarations, if, loops, switch, jumps, and the inlining of same-file
 * helpers.
 *
 * switch is lowered to a chain of IFs: each case (with the empty cases right above it, whose
 * labels it shares) is `if (x == v1 || x == v2) { its statements, and the next case's while they
 * fall through, up to a break at the case's top level }`, default the last else. A break nested
 * deeper in a case (inside an if of the case) is not modelled: it is an OPAQUE and the case goes
 * on.
 *
 * A helper is inlined at each call: its parameters are new symbols bound to the arguments'
 * values (a `thread T &` parameter given a name is that name: the same symbol or memory), its
 * template value parameters are bound to the call's arguments folded in the caller. A helper
 * whose only return ends its body gives that value. One with an early return is lowered inside a
 * LOOP flagged KL_IR_F_REGION (one pass, no condition): its RETURNs and the BREAK that ends the
 * body are the region's exits, and PHI_EXITs after it join the return value (a symbol named
 * "return") and whatever the helper assigned of its caller's symbols. */
#include <stdlib.h>
#include <string.h>

#include "analyzer/ir/lower_int.h"

static const TSNode kl_null = {{0}, NULL, NULL};

/* ---- Declarations ---------------------------------------------------------------------------- */

static TSNode kl_lw_decl_name(TSNode d) {
  for (int guard = 0; guard < 32 && !kl_node_null(d); guard++) {
    if (kl_node_is_kind(d, KL_KIND_IDENTIFIER) || kl_node_is_kind(d, KL_KIND_FIELD_IDENTIFIER))
      return d;
    TSNode inner = kl_node_field(d, "declarator");
    if (kl_node_null(inner)) {
      if (ts_node_named_child_count(d) == 0) break;
      inner = kl_node_named_child(d, 0);
    }
    d = inner;
  }
  return kl_null;
}

/* The model's declaration whose name is the node at byte start, in the function being lowered. */
static const struct kl_var *kl_lw_var_at(struct kl_lower *L, uint32_t start) {
  const struct kl_function *fn = L->frames[L->nframes - 1].fn;
  if (!fn) return NULL;
  /* Locals are in source order: a binary search by name position. */
  size_t lo = 0, hi = fn->nlocals;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    uint32_t s =
        kl_node_null(fn->locals[mid].name_node) ? 0 : ts_node_start_byte(fn->locals[mid].name_node);
    if (s < start)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i < fn->nlocals && i < lo + 2; i++)
    if (!kl_node_null(fn->locals[i].name_node) &&
        ts_node_start_byte(fn->locals[i].name_node) == start)
      return &fn->locals[i];
  /* Not sorted after all (a macro's expansion): the slow way. */
  for (size_t i = 0; i < fn->nlocals; i++)
    if (!kl_node_null(fn->locals[i].name_node) &&
        ts_node_start_byte(fn->locals[i].name_node) == start)
      return &fn->locals[i];
  return NULL;
}

/* Whether a type names a struct the unit gives member functions (an object in memory). */
static bool kl_lw_struct_type(struct kl_lower *L, const char *type) {
  if (!type) return false;
  size_t tl = strcspn(type, "<");
  for (size_t i = 0; i < L->m->nfunctions; i++) {
    const char *o = L->m->functions[i].owner;
    if (o && strlen(o) == tl && !strncmp(o, type, tl)) return true;
  }
  return false;
}

static int32_t kl_lw_alias(struct kl_lower *L, const char *name, uint32_t len,
                           const struct kl_lbind *of) {
  int32_t b = kl_lw_bind(L, name, len, of->kind, of->var);
  struct kl_lbind *nb = &L->binds[b];
  /* The symbol made for it stays unused: the alias is the caller's. */
  nb->sym = of->sym;
  nb->mem = of->mem;
  memcpy(nb->comp, of->comp, sizeof nb->comp);
  return b;
}

/* Whether function declarator d, in a body, declares an object of a struct of the unit whose
 * constructor takes bare names (`Loader l(src, ld);`): every parameter is a type alone, and a
 * name in scope. */
static bool kl_lw_ctor_like(struct kl_lower *L, TSNode d, const char *type) {
  TSNode params = kl_node_field(d, "parameters");
  if (kl_node_null(params) || !kl_lw_struct_type(L, type)) return false;
  uint32_t k = ts_node_named_child_count(params);
  for (uint32_t i = 0; i < k; i++) {
    TSNode p = kl_node_named_child(params, i), t = kl_node_field(p, "type");
    if (kl_node_is_kind(p, KL_KIND_COMMENT)) continue;
    if (strcmp(ts_node_type(p), "parameter_declaration") || ts_node_named_child_count(p) != 1 ||
        !kl_node_is_kind(t, KL_KIND_TYPE_IDENTIFIER))
      return false;
    uint32_t s = ts_node_start_byte(t), e = ts_node_end_byte(t);
    if (kl_lw_lookup(L, L->buf + s, e - s) < 0) return false;
  }
  return true;
}

static void kl_lw_declarator(struct kl_lower *L, TSNode n, TSNode d, const char *type_text) {
  TSNode decl = d, value = kl_null;
  if (kl_node_is_kind(d, KL_KIND_INIT_DECLARATOR)) {
    decl = kl_node_field(d, "declarator");
    value = kl_node_field(d, "value");
  } else if (!strcmp(ts_node_type(d), "function_declarator")) {
    decl = kl_node_field(d, "declarator");
    value = kl_node_field(d, "parameters");
  }
  TSNode name = kl_lw_decl_name(decl);
  if (kl_node_null(name)) {
    if (!kl_node_null(value)) kl_lw_value(L, value);
    return;
  }
  uint32_t s = ts_node_start_byte(name), e = ts_node_end_byte(name);
  /* A local lambda runs where it is called (kl_lw_inline_lambda). */
  TSNode lv = kl_node_null(value) ? kl_null : kl_lw_unparen(value);
  if (!kl_node_null(lv) && kl_node_is_kind(lv, KL_KIND_LAMBDA_EXPRESSION)) {
    int32_t lb = kl_lw_bind(L, L->buf + s, e - s, KL_LB_LAMBDA, NULL);
    L->binds[lb].lam = lv;
    L->binds[lb].lam_home = L->nframes - 1;
    return;
  }
  const struct kl_var *var = kl_lw_var_at(L, s);
  bool array = var ? var->array_dims != NULL : kl_node_is_kind(decl, KL_KIND_ARRAY_DECLARATOR);
  bool ptr = var ? var->is_pointer : kl_node_is_kind(decl, KL_KIND_POINTER_DECLARATOR);
  bool ref = var ? var->is_reference : kl_node_is_kind(decl, KL_KIND_REFERENCE_DECLARATOR);
  enum kl_addrspace as = var ? var->as : KL_AS_NONE;
  const char *type = var && var->type ? var->type : type_text;
  const struct kl_msl_type *mt = kl_msl_type(type);
  /* `auto p = buf + off;` is a pointer when its initializer is one (MLX kernel bodies so name
   * their rows): the initializer is lowered once, here, and decides. */
  struct kl_rv pre = {0};
  bool lowered = false;
  if (!ptr && !array && !ref && type && !strcmp(type, "auto") && !kl_node_null(value) &&
      !kl_node_is_kind(value, KL_KIND_ARGUMENT_LIST) &&
      strcmp(ts_node_type(value), "initializer_list")) {
    pre = kl_lw_expr(L, value);
    lowered = true;
    ptr = pre.ptr && !pre.coordvec;
  }
  if (ref && !ptr && !array && !kl_node_null(value)) {
    TSNode v = kl_lw_unparen(value);
    if (kl_node_is_kind(v, KL_KIND_IDENTIFIER)) {
      uint32_t vs = ts_node_start_byte(v), ve = ts_node_end_byte(v);
      int32_t b = kl_lw_lookup(L, L->buf + vs, ve - vs);
      if (b >= 0) {
        struct kl_lbind of = L->binds[b];
        kl_lw_alias(L, L->buf + s, e - s, &of);
        return;
      }
    }
    bool ok;
    struct kl_rv a = kl_lw_addr(L, value, &ok);
    if (ok) {
      int32_t b = kl_lw_bind(L, L->buf + s, e - s, KL_LB_MEM, var);
      L->binds[b].mem = a;
      L->binds[b].mem.ptr = true;
      if (!a.etype) L->binds[b].mem.etype = type;
      return;
    }
    /* A reference to a value: the value. */
  }
  bool mem =
      !ptr &&
      (array || as == KL_AS_THREADGROUP || kl_lw_is_mem_name(L, L->buf + s, e - s) ||
       (mt && mt->kind != KL_TYPE_SCALAR) ||
       (!mt && (kl_lw_struct_type(L, type) || kl_lw_is_used_as_object(L, L->buf + s, e - s))));
  if (mem) {
    /* A threadgroup variable of a helper is one variable for every call of the helper (it has
     * static storage): the second call's accesses are to the first call's memory. */
    const char *targs = NULL;
    if (as == KL_AS_THREADGROUP && var && L->nframes > 1) {
      const struct kl_lframe *fr = &L->frames[L->nframes - 1];
      targs = "";
      for (size_t k = 0; k < fr->ntb; k++)
        /* An argument that does not fold keeps each call apart (its text is unknown). */
        targs = fr->tb[k].text
                    ? kl_arena_printf(L->a, "%s%s=%s;", targs, fr->tb[k].name, fr->tb[k].text)
                    : kl_arena_printf(L->a, "%s%s=?%u;", targs, fr->tb[k].name, s);
      for (uint32_t k = 0; k < L->ntgdecls; k++)
        if (L->tgdecls[k].var == var && !strcmp(L->tgdecls[k].targs, targs)) {
          int32_t b = kl_lw_bind(L, L->buf + s, e - s, KL_LB_MEM, var);
          L->binds[b].mem = L->tgdecls[k].mem;
          return;
        }
    }
    int32_t b = kl_lw_bind(L, L->buf + s, e - s, KL_LB_MEM, var);
    uint32_t al = kl_lw_emit(L, KL_IR_ALLOC, n, NULL, 0);
    struct kl_lbind *bb = &L->binds[b];
    uint8_t mas =
        as == KL_AS_THREADGROUP || as == KL_AS_THREADGROUP_IMAGEBLOCK ? (uint8_t)as : KL_AS_THREAD;
    bb->mem = (struct kl_rv){.v = al, .ptr = true, .as = mas, .etype = type};
    bb->mem.dims = array && var ? var->array_dims : NULL;
    if (array) {
      /* The first INDEX steps over what the first dimension holds. */
      uint32_t es = kl_lw_type_size(type);
      const char *rest = bb->mem.dims && bb->mem.dims[0] == '[' ? strchr(bb->mem.dims, ']') : NULL;
      for (const char *p = rest && rest[1] == '[' ? rest + 1 : NULL; p && es;) {
        const char *q = strchr(p, ']');
        int64_t k;
        if (!q || !kl_lw_fold_text(L, p + 1, (size_t)(q - p - 1), &k) || k <= 0 || k > (1 << 24)) {
          es = 0;
          break;
        }
        es *= (uint32_t)k;
        p = q[1] == '[' ? q + 1 : NULL;
      }
      bb->mem.esize = es;
    } else {
      bb->mem.esize = kl_lw_type_size(type);
    }
    if (al) {
      struct kl_ir_ins *ai = &L->f->ins[al];
      ai->var = var;
      ai->as = mas;
      ai->type = type;
      ai->sym = bb->sym;
      ai->name = bb->name;
      /* The first dimension's length, folded (0: not known): what the array's extent says of
       * the threads that index it (analyzer/passes/extent.h). */
      const char *d0 = array && bb->mem.dims && bb->mem.dims[0] == '[' ? bb->mem.dims : NULL;
      const char *q0 = d0 ? strchr(d0, ']') : NULL;
      int64_t len0;
      if (q0 && kl_lw_fold_text(L, d0 + 1, (size_t)(q0 - d0 - 1), &len0) && len0 > 0)
        ai->imm = len0;
    }
    if (targs && al) {
      KL_VEC_PUSH(L->a, L->tgdecls, L->ntgdecls, L->cap_tgdecls);
      L->tgdecls[L->ntgdecls].var = var;
      L->tgdecls[L->ntgdecls].targs = targs;
      L->tgdecls[L->ntgdecls++].mem = bb->mem;
    }
    /* An object of a struct of the unit: its pointer and const fields as values, and its
     * constructor run (`Loader l(a, b)`, or the parser's `Loader l(a, b)` of bare names, a
     * function declarator whose "parameters" are the arguments). */
    bool plist = !kl_node_null(value) && !strcmp(ts_node_type(value), "parameter_list");
    bool alist = !kl_node_null(value) && !strcmp(ts_node_type(value), "argument_list");
    /* A copy (`Loader b = a;`) keeps its fields in memory: what it copies is not followed. */
    if (!array && al && !mt && (kl_node_null(value) || alist || plist)) {
      uint32_t na = alist || plist ? ts_node_named_child_count(value) : 0, k = 0;
      TSNode *argn = kl_arena_alloc(L->a, (na + 1) * sizeof *argn);
      for (uint32_t j = 0; j < na; j++) {
        TSNode c = kl_node_named_child(value, j);
        if (kl_node_is_kind(c, KL_KIND_COMMENT)) continue;
        argn[k++] = plist ? kl_node_field(c, "type") : c;
      }
      const char *objname = kl_arena_strndup(L->a, L->buf + s, e - s);
      if (kl_lw_construct(L, kl_node_field(n, "type"), type, objname,
                          alist || plist ? value : kl_null, argn, k, bb->mem) &&
          (alist || plist))
        return;
    }
    if (plist) return;
    if (!kl_node_null(value)) {
      uint32_t v;
      if (!strcmp(ts_node_type(value), "argument_list")) {
        /* `Loader l(a, b)`: its constructor, a call the lowering does not follow. */
        uint32_t na = ts_node_named_child_count(value);
        uint32_t *ops = kl_arena_alloc(L->a, (na + 1) * sizeof *ops);
        for (uint32_t k = 0; k < na; k++) ops[k] = kl_lw_value(L, kl_node_named_child(value, k));
        v = kl_lw_emit(L, KL_IR_CALL, value, ops, na);
        if (v) {
          L->f->ins[v].name = type ? type : "?";
          L->f->ins[v].type = type;
        }
      } else {
        v = !lowered                    ? kl_lw_value(L, value)
            : pre.coordvec && !pre.v ? kl_lw_opaque(L, value, pre.comp, 3)
                                     : pre.v;
      }
      uint32_t ops[2] = {al, v};
      uint32_t st = kl_lw_emit(L, KL_IR_STORE, d, ops, 2);
      if (st) {
        L->f->ins[st].as = mas;
        L->f->ins[st].type = type;
      }
    }
    return;
  }
  struct kl_rv r = pre;
  if (!lowered && !kl_node_null(value)) r = kl_lw_expr(L, value);
  uint32_t v = r.v;
  if (r.coordvec && !v) v = kl_lw_opaque(L, value, r.comp, 3);
  int32_t b = kl_lw_bind(L, L->buf + s, e - s, KL_LB_VALUE, var);
  struct kl_lbind *bb = &L->binds[b];
  if (ptr) {
    bb->mem = r.ptr ? r : (struct kl_rv){.ptr = true};
    bb->mem.ptr = true;
    if (as) bb->mem.as = (uint8_t)as;
    if (type && kl_lw_type_size(type)) {
      bb->mem.etype = type;
      bb->mem.esize = kl_lw_type_size(type);
    }
    bb->mem.coordvec = false;
  } else {
    bb->mem.etype = type;
  }
  if (kl_node_null(value)) {
    v = kl_lw_emit(L, KL_IR_UNDEF, n, NULL, 0);
    if (v) L->f->ins[v].type = type;
  }
  kl_lw_assign(L, bb->sym, v);
}

void kl_lw_declaration(struct kl_lower *L, TSNode n) {
  TSNode ty = kl_node_field(n, "type");
  const char *type_text = kl_node_null(ty) ? NULL : kl_lw_text(L, ty);
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k && !L->stop; i++) {
    TSNode d = kl_node_named_child(n, i);
    switch (kl_node_kind(d)) {
    case KL_KIND_INIT_DECLARATOR:
    case KL_KIND_IDENTIFIER:
    case KL_KIND_ARRAY_DECLARATOR:
    case KL_KIND_POINTER_DECLARATOR:
    case KL_KIND_REFERENCE_DECLARATOR:
    case KL_KIND_ATTRIBUTED_DECLARATOR:
      if (!ts_node_eq(d, ty)) kl_lw_declarator(L, n, d, type_text);
      break;
    default:
      if (!strcmp(ts_node_type(d), "function_declarator") && kl_lw_ctor_like(L, d, type_text)) {
        kl_lw_declarator(L, n, d, type_text);
        break;
      }
      if (kl_lw_broken(d)) kl_lw_value(L, d);
      break;
    }
  }
}

/* ---- Statements ------------------------------------------------------------------------------ */

static void kl_lw_body_of(struct kl_lower *L, TSNode n) {
  uint32_t nb = L->nbinds;
  kl_lw_stmt(L, n);
  kl_lw_scope_pop(L, nb);
}

static void kl_lw_if_stmt(struct kl_lower *L, TSNode n) {
  uint32_t nb = L->nbinds;
  TSNode cond = kl_node_field(n, "condition");
  TSNode then_n = kl_node_field(n, "consequence"), else_n = kl_node_field(n, "alternative");
  if (kl_node_is_kind(else_n, KL_KIND_ELSE_CLAUSE))
    else_n = ts_node_named_child_count(else_n) ? kl_node_named_child(else_n, 0) : kl_null;
  uint32_t c = kl_lw_value(L, cond);
  int64_t k;
  if (kl_ir_const(L->f, c, &k)) {
    /* A condition the specialisation fixes: only its branch is this kernel's. */
    if (k)
      kl_lw_body_of(L, then_n);
    else if (!kl_node_null(else_n))
      kl_lw_body_of(L, else_n);
    kl_lw_scope_pop(L, nb);
    return;
  }
  struct kl_lif st;
  kl_lw_if_begin(L, &st, n, c);
  kl_lw_body_of(L, then_n);
  if (!kl_node_null(else_n)) {
    kl_lw_if_else(L, &st);
    kl_lw_body_of(L, else_n);
  }
  kl_lw_if_end(L, &st);
  kl_lw_scope_pop(L, nb);
}

static void kl_lw_loop_stmt(struct kl_lower *L, TSNode n, TSNode init, TSNode cond, TSNode body,
                            TSNode update, bool do_while) {
  uint32_t nb = L->nbinds;
  int sw = L->in_switch;
  L->in_switch = 0;
  if (!kl_node_null(init)) {
    if (kl_node_is_kind(init, KL_KIND_DECLARATION))
      kl_lw_declaration(L, init);
    else
      kl_lw_value(L, init);
  }
  kl_lw_loop_begin(L, KL_LOOP_REAL, n, do_while ? KL_IR_F_DO_WHILE : 0);
  uint32_t c = KL_IR_NONE;
  bool has = !kl_node_null(cond);
  if (has && !do_while) c = kl_lw_value(L, cond);
  kl_lw_loop_body(L);
  kl_lw_body_of(L, body);
  kl_lw_loop_latch(L);
  if (L->live && !kl_node_null(update)) kl_lw_value(L, update);
  if (has && do_while && L->live) c = kl_lw_value(L, cond);
  kl_lw_loop_end(L, c, has);
  L->in_switch = sw;
  kl_lw_scope_pop(L, nb);
}

/* One case of a switch: its label values (NULL node: default) and where its statements start. */
struct kl_case {
  TSNode node;
  bool dflt;
};

/* The statements of a case up to a break at its top level (or at the top level of a block
 * that is the case's body, `case 1: { ...; break; }`); true when it stopped at a break. */
static bool kl_lw_case_list(struct kl_lower *L, TSNode cs, TSNode skip) {
  uint32_t k = ts_node_named_child_count(cs);
  for (uint32_t j = 0; j < k && L->live && !L->stop; j++) {
    TSNode s = kl_node_named_child(cs, j);
    if (ts_node_eq(s, skip)) continue;
    if (kl_node_is_kind(s, KL_KIND_BREAK_STATEMENT)) return true;
    if (kl_node_is_kind(s, KL_KIND_COMPOUND_STATEMENT) && L->nest < KL_LOWER_MAX_NEST) {
      uint32_t nb = L->nbinds;
      L->nest++;
      bool br = kl_lw_case_list(L, s, kl_null);
      L->nest--;
      kl_lw_scope_pop(L, nb);
      if (br) return true;
      continue;
    }
    kl_lw_stmt(L, s);
  }
  return false;
}

static void kl_lw_case_stmts(struct kl_lower *L, const TSNode *cases, uint32_t ncases,
                             uint32_t from) {
  uint32_t nb = L->nbinds;
  for (uint32_t i = from; i < ncases && L->live && !L->stop; i++)
    if (kl_lw_case_list(L, cases[i], kl_node_field(cases[i], "value"))) break;
  kl_lw_scope_pop(L, nb);
}

static bool kl_lw_case_empty(TSNode cs) {
  TSNode val = kl_node_field(cs, "value");
  uint32_t k = ts_node_named_child_count(cs);
  for (uint32_t j = 0; j < k; j++) {
    TSNode s = kl_node_named_child(cs, j);
    if (!ts_node_eq(s, val) && !kl_node_is_kind(s, KL_KIND_COMMENT)) return false;
  }
  return true;
}

static void kl_lw_switch(struct kl_lower *L, TSNode n) {
  uint32_t x = kl_lw_value(L, kl_node_field(n, "condition"));
  TSNode body = kl_node_field(n, "body");
  uint32_t k = kl_node_null(body) ? 0 : ts_node_named_child_count(body), nc = 0;
  TSNode *cases = kl_arena_alloc(L->a, (k + 1) * sizeof *cases);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(body, i);
    if (kl_node_is_kind(c, KL_KIND_CASE_STATEMENT)) cases[nc++] = c;
  }
  L->in_switch++;
  int64_t xk;
  bool xconst = kl_ir_const(L->f, x, &xk);
  /* The chain: each group's condition, its IF's state; default's statements start at dflt. */
  struct kl_lif *ifs = kl_arena_alloc(L->a, (nc + 1) * sizeof *ifs);
  uint32_t nifs = 0, dflt = nc;
  bool taken = false;
  for (uint32_t i = 0; i < nc && !L->stop && L->live; i++) {
    uint32_t g0 = i;
    while (i + 1 < nc && kl_lw_case_empty(cases[i])) i++;
    uint32_t cond = KL_IR_NONE;
    bool is_default = false;
    for (uint32_t j = g0; j <= i; j++) {
      TSNode v = kl_node_field(cases[j], "value");
      if (kl_node_null(v)) {
        is_default = true;
        continue;
      }
      uint32_t ops[2] = {x, kl_lw_value(L, v)};
      int64_t vk;
      if (xconst && kl_ir_const(L->f, ops[1], &vk) && vk == xk) taken = true;
      uint32_t eq = kl_lw_emit(L, KL_IR_BINOP, v, ops, 2);
      if (eq) L->f->ins[eq].sub = KL_IR_EQ;
      if (cond) {
        uint32_t o2[2] = {cond, eq};
        eq = kl_lw_emit(L, KL_IR_BINOP, v, o2, 2);
        if (eq) L->f->ins[eq].sub = KL_IR_LOR;
      }
      cond = eq;
    }
    if (is_default) {
      dflt = g0;
      continue;
    }
    if (xconst) {
      /* A switch the specialisation fixes: only the case taken. */
      if (taken) {
        kl_lw_case_stmts(L, cases, nc, g0);
        dflt = nc + 1;
        break;
      }
      continue;
    }
    kl_lw_if_begin(L, &ifs[nifs], cases[g0], cond);
    kl_lw_case_stmts(L, cases, nc, g0);
    kl_lw_if_else(L, &ifs[nifs]);
    nifs++;
  }
  if (dflt < nc && !(xconst && taken)) kl_lw_case_stmts(L, cases, nc, dflt);
  while (nifs > 0) kl_lw_if_end(L, &ifs[--nifs]);
  L->in_switch--;
}

static void kl_lw_return(struct kl_lower *L, TSNode n) {
  uint32_t v = KL_IR_NONE;
  if (ts_node_named_child_count(n) > 0) v = kl_lw_value(L, kl_node_named_child(n, 0));
  struct kl_lframe *fr = &L->frames[L->nframes - 1];
  if (L->nframes > 1 && !fr->region) {
    fr->ret_val = v;
    L->live = false;
    return;
  }
  if (L->nframes > 1) {
    kl_lw_assign(L, fr->ret_sym, v);
    kl_lw_jump(L, n, KL_IR_RETURN);
  }
  kl_lw_emit(L, KL_IR_RETURN, n, &v, v ? 1 : 0);
  L->live = false;
}

static void kl_lw_macro(struct kl_lower *L, TSNode n, bool undef) {
  struct kl_lframe *fr = &L->frames[L->nframes - 1];
  struct kl_spec_bind b = {0};
  if (!undef) {
    TSNode name = kl_node_field(n, "name"), value = kl_node_field(n, "value");
    if (kl_node_null(name)) return;
    b.name = kl_lw_text(L, name);
    b.text = kl_node_null(value) ? "" : kl_lw_text(L, value);
  } else {
    TSNode arg = kl_node_field(n, "argument");
    const char *nm = kl_node_null(arg) ? "" : kl_lw_text(L, arg);
    b.name = kl_arena_strndup(L->a, nm, strcspn(nm, " \t\r\n"));
  }
  KL_VEC_PUSH(L->a, fr->macros, fr->nmacros, fr->cap_macros);
  fr->macros[fr->nmacros++] = b;
}

static void kl_lw_stmt_kind(struct kl_lower *L, TSNode n) {
  enum kl_kind ty = kl_node_kind(n);
  switch (ty) {
  case KL_KIND_COMPOUND_STATEMENT:
  case KL_KIND_PREPROC_IF:
  case KL_KIND_PREPROC_IFDEF:
  case KL_KIND_PREPROC_ELSE:
  case KL_KIND_PREPROC_ELIF:
  case KL_KIND_PREPROC_ELIFDEF:
  case KL_KIND_LABELED_STATEMENT: {
    /* Directive conditions and labels are not statements. Each #if branch is one build's code:
     * a return in one does not end the others. */
    TSNode skip[3] = {kl_node_field(n, "condition"), kl_node_field(n, "name"),
                      kl_node_field(n, "label")};
    bool pp = ty != KL_KIND_COMPOUND_STATEMENT && ty != KL_KIND_LABELED_STATEMENT;
    bool live0 = L->live;
    uint32_t nb = L->nbinds;
    /* The statements at once, by a cursor: asking for the i-th of a long block walks it from
     * its start each time. */
    TSNode buf[16];
    uint32_t k;
    const TSNode *kids = kl_node_kids(L->a, n, buf, 16, &k);
    for (uint32_t i = 0; i < k && !L->stop; i++) {
      TSNode c = kids[i];
      if (ts_node_eq(c, skip[0]) || ts_node_eq(c, skip[1]) || ts_node_eq(c, skip[2])) continue;
      if (pp && !strncmp(ts_node_type(c), "preproc_", 8)) L->live = live0;
      if (!L->live) continue;
      kl_lw_stmt(L, c);
    }
    if (pp) L->live = live0;
    if (ty == KL_KIND_COMPOUND_STATEMENT) kl_lw_scope_pop(L, nb);
    return;
  }
  case KL_KIND_DECLARATION:
    kl_lw_declaration(L, n);
    return;
  case KL_KIND_EXPRESSION_STATEMENT:
    if (ts_node_named_child_count(n) > 0) kl_lw_value(L, kl_node_named_child(n, 0));
    return;
  case KL_KIND_IF_STATEMENT:
    kl_lw_if_stmt(L, n);
    return;
  case KL_KIND_FOR_STATEMENT:
    kl_lw_loop_stmt(L, n, kl_node_field(n, "initializer"), kl_node_field(n, "condition"),
                    kl_node_field(n, "body"), kl_node_field(n, "update"), false);
    return;
  case KL_KIND_WHILE_STATEMENT:
    kl_lw_loop_stmt(L, n, kl_null, kl_node_field(n, "condition"), kl_node_field(n, "body"), kl_null,
                    false);
    return;
  case KL_KIND_DO_STATEMENT:
    kl_lw_loop_stmt(L, n, kl_null, kl_node_field(n, "condition"), kl_node_field(n, "body"), kl_null,
                    true);
    return;
  case KL_KIND_FOR_RANGE_LOOP: {
    uint32_t nb = L->nbinds;
    uint32_t r = kl_lw_value(L, kl_node_field(n, "right"));
    kl_lw_loop_begin(L, KL_LOOP_REAL, n, 0);
    uint32_t c = kl_lw_opaque(L, n, &r, 1);
    kl_lw_loop_body(L);
    TSNode d = kl_lw_decl_name(kl_node_field(n, "declarator"));
    if (!kl_node_null(d)) {
      uint32_t s = ts_node_start_byte(d), e = ts_node_end_byte(d);
      int32_t b = kl_lw_bind(L, L->buf + s, e - s, KL_LB_VALUE, NULL);
      kl_lw_assign(L, L->binds[b].sym, kl_lw_opaque(L, d, &r, 1));
    }
    int sw = L->in_switch;
    L->in_switch = 0;
    kl_lw_body_of(L, kl_node_field(n, "body"));
    L->in_switch = sw;
    kl_lw_loop_latch(L);
    kl_lw_loop_end(L, c, true);
    kl_lw_scope_pop(L, nb);
    return;
  }
  case KL_KIND_SWITCH_STATEMENT:
    kl_lw_switch(L, n);
    return;
  case KL_KIND_RETURN_STATEMENT:
    kl_lw_return(L, n);
    return;
  case KL_KIND_BREAK_STATEMENT:
  case KL_KIND_CONTINUE_STATEMENT: {
    enum kl_ir_op op = ty == KL_KIND_BREAK_STATEMENT ? KL_IR_BREAK : KL_IR_CONTINUE;
    if ((op == KL_IR_BREAK && L->in_switch) || !kl_lw_jump(L, n, op)) {
      kl_lw_opaque(L, n, NULL, 0);
      return;
    }
    kl_lw_emit(L, op, n, NULL, 0);
    L->live = false;
    return;
  }
  case KL_KIND_PREPROC_DEF:
    kl_lw_macro(L, n, false);
    return;
  case KL_KIND_PREPROC_CALL: {
    TSNode dn = kl_node_field(n, "directive");
    if (!kl_node_null(dn) && !strcmp(kl_lw_text(L, dn), "#undef")) kl_lw_macro(L, n, true);
    return;
  }
  case KL_KIND_COMMENT:
  case KL_KIND_PREPROC_FUNCTION_DEF:
  case KL_KIND_TYPE_DEFINITION:
  case KL_KIND_ALIAS_DECLARATION:
  case KL_KIND_STATIC_ASSERT_DECLARATION:
    return;
  default:
    break;
  }
  if (!ts_node_is_named(n)) return;
  const char *t = ts_node_type(n);
  if (!strcmp(t, "using_declaration") || !strcmp(t, "namespace_alias_definition") ||
      !strcmp(t, "empty_statement") || !strcmp(t, "preproc_include"))
    return;
  /* Statements not modelled, broken trees: their parts, then an OPAQUE of them. */
  uint32_t k = ts_node_named_child_count(n), ops[16], m = 0;
  for (uint32_t i = 0; i < k && !L->stop && L->live; i++) {
    TSNode c = kl_node_named_child(n, i);
    if (strstr(ts_node_type(c), "statement") || kl_node_is_kind(c, KL_KIND_DECLARATION)) {
      kl_lw_stmt(L, c);
      continue;
    }
    uint32_t v = kl_lw_value(L, c);
    if (v && m < 16) ops[m++] = v;
  }
  kl_lw_opaque(L, n, ops, m);
}

void kl_lw_stmt(struct kl_lower *L, TSNode n) {
  if (kl_node_null(n) || L->stop || !L->live) return;
  if (L->nest >= KL_LOWER_MAX_NEST) {
    kl_lw_opaque(L, n, NULL, 0);
    return;
  }
  L->nest++;
  kl_lw_stmt_kind(L, n);
  L->nest--;
}

/* ---- Inlining -------------------------------------------------------------------------------- */

/* Whether fn has a return before the end of its body (so its returns join in a region). */
static bool kl_lw_early_return_scan(const struct kl_function *fn) {
  TSNode body = fn->body;
  uint32_t k = ts_node_named_child_count(body);
  TSNode last = kl_null;
  for (uint32_t i = k; i-- > 0;) {
    TSNode c = kl_node_named_child(body, i);
    if (!kl_node_is_kind(c, KL_KIND_COMMENT)) {
      last = c;
      break;
    }
  }
  TSTreeCursor c = ts_tree_cursor_new(body);
  bool early = false;
  if (ts_tree_cursor_goto_first_child(&c)) {
    for (;;) {
      TSNode n = ts_tree_cursor_current_node(&c);
      if (kl_node_is_kind(n, KL_KIND_RETURN_STATEMENT) && !ts_node_eq(n, last)) {
        early = true;
        break;
      }
      /* Lambdas' returns are their own. */
      if (!kl_node_is_kind(n, KL_KIND_LAMBDA_EXPRESSION) && ts_tree_cursor_goto_first_child(&c))
        continue;
      bool up = false;
      while (!ts_tree_cursor_goto_next_sibling(&c)) {
        if (!ts_tree_cursor_goto_parent(&c) || ts_node_eq(ts_tree_cursor_current_node(&c), body)) {
          up = true;
          break;
        }
      }
      if (up) break;
    }
  }
  ts_tree_cursor_delete(&c);
  return early;
}

static bool kl_lw_early_return(struct kl_lower *L, const struct kl_function *fn) {
  for (uint32_t i = 0; i < L->nearly; i++)
    if (L->early[i].fn == fn) return L->early[i].early;
  bool e;
  if (!kl_lw_early_kept(L, fn, &e)) {
    e = kl_lw_early_return_scan(fn);
    kl_lw_early_keep(L, fn, e);
  }
  KL_VEC_PUSH(L->a, L->early, L->nearly, L->cap_early);
  L->early[L->nearly].fn = fn;
  L->early[L->nearly++].early = e;
  return e;
}

/* Lower body as the region of frame fi (a helper with an early return, a lambda): a loop run
 * once, whose returns are its breaks and assign the frame's return symbol. Returns the value it
 * returns where control joins after it, or none. */
static uint32_t kl_lw_region(struct kl_lower *L, uint32_t fi, TSNode call, TSNode body) {
  uint32_t rs = kl_lw_temp(L, "return");
  L->frames[fi].ret_sym = rs;
  kl_lw_assign(L, rs, KL_IR_NONE);
  kl_lw_loop_begin(L, KL_LOOP_REGION, call, KL_IR_F_REGION);
  kl_lw_loop_body(L);
  kl_lw_stmt(L, body);
  if (L->live && !L->stop) {
    kl_lw_jump(L, call, KL_IR_RETURN);
    kl_lw_emit(L, KL_IR_BREAK, call, NULL, 0);
    L->live = false;
  }
  kl_lw_loop_latch(L);
  L->live = false;
  kl_lw_loop_end(L, KL_IR_NONE, false);
  return L->live ? kl_lw_read(L, L->frames[fi].ret_sym, call) : KL_IR_NONE;
}

bool kl_lw_inline(struct kl_lower *L, const struct kl_function *callee, TSNode call,
                  const TSNode *argn, uint32_t nargs, struct kl_rv self,
                  const struct kl_spec_bind *tb, size_t ntb, struct kl_rv *out) {
  memset(out, 0, sizeof *out);
  if (L->nframes > KL_MODEL_MAX_CALL_DEPTH || L->f->nsites > KL_LOWER_MAX_SITES) {
    /* The helper's code is missing from this lowering: it is not the whole kernel. */
    L->f->truncated = true;
    KL_VEC_PUSH(L->a, L->f->cut, L->f->ncut, L->f->cap_cut);
    L->f->cut[L->f->ncut++] = callee;
    return false;
  }
  for (uint32_t i = 0; i < L->nframes; i++)
    if (L->frames[i].fn == callee) return false;
  /* The arguments, in the caller. */
  size_t np = callee->nparams;
  struct kl_lbind *pb = kl_arena_alloc(L->a, (np + 1) * sizeof *pb);
  for (size_t i = 0; i < np; i++) {
    const struct kl_var *p = &callee->params[i];
    struct kl_lbind *b = &pb[i];
    b->kind = KL_LB_VALUE;
    b->var = p;
    b->sym = 0;
    if (i >= nargs) continue;
    TSNode a = kl_lw_unparen(argn[i]);
    /* A lambda handed over runs where the helper calls it, under the helper's control there,
     * seeing the names of the code that wrote it. */
    if (kl_node_is_kind(a, KL_KIND_LAMBDA_EXPRESSION)) {
      b->kind = KL_LB_LAMBDA;
      b->lam = a;
      b->lam_home = L->nframes - 1;
      continue;
    }
    if (kl_node_is_kind(a, KL_KIND_IDENTIFIER)) {
      uint32_t s = ts_node_start_byte(a), e = ts_node_end_byte(a);
      int32_t cb = kl_lw_lookup(L, L->buf + s, e - s);
      if (cb >= 0 && L->binds[cb].kind == KL_LB_LAMBDA) {
        b->kind = KL_LB_LAMBDA;
        b->lam = L->binds[cb].lam;
        b->lam_home = L->binds[cb].lam_home;
        continue;
      }
    }
    if (p->is_reference && !p->is_pointer) {
      if (kl_node_is_kind(a, KL_KIND_IDENTIFIER)) {
        uint32_t s = ts_node_start_byte(a), e = ts_node_end_byte(a);
        int32_t cb = kl_lw_lookup(L, L->buf + s, e - s);
        if (cb >= 0) {
          *b = L->binds[cb];
          b->sym = b->sym | 0x80000000u; /* an alias: the caller's symbol */
          continue;
        }
      }
      bool ok;
      struct kl_rv ad = kl_lw_addr(L, a, &ok);
      if (ok && !ad.dims) {
        b->kind = KL_LB_MEM;
        b->mem = ad;
        b->mem.ptr = true;
        if (!ad.etype) b->mem.etype = p->type;
        continue;
      }
      if (ok) {
        b->mem = ad;
        b->mem.v = ad.v;
        b->comp[0] = ad.v;
        continue;
      }
    }
    struct kl_rv r = kl_lw_expr(L, a);
    if (r.coordvec) {
      const struct kl_msl_type *t = kl_msl_type(p->type);
      if (t && t->kind == KL_TYPE_VECTOR) {
        b->kind = KL_LB_COORD;
        memcpy(b->comp, r.comp, sizeof b->comp);
        continue;
      }
      r.v = kl_lw_opaque(L, a, r.comp, 3);
    }
    b->mem = r;
    if (p->is_pointer || p->array_dims) {
      b->mem.ptr = true;
      if (p->as) b->mem.as = (uint8_t)p->as;
      if (kl_lw_type_size(p->type)) {
        b->mem.etype = p->type;
        b->mem.esize = kl_lw_type_size(p->type);
      }
    } else if (!r.ptr) {
      b->mem.etype = p->type;
    }
    b->comp[0] = r.v;
  }
  for (uint32_t i = (uint32_t)np; i < nargs; i++) kl_lw_value(L, argn[i]);
  if (L->stop) return true;
  uint32_t site = kl_ir_site_new(L->f, kl_lw_at(L, call), callee, L->frames[L->nframes - 1].site);
  KL_VEC_PUSH(L->a, L->frames, L->nframes, L->cap_frames);
  uint32_t fi = L->nframes++;
  struct kl_lframe *fr = &L->frames[fi];
  memset(fr, 0, sizeof *fr);
  fr->fn = callee;
  fr->site = site;
  fr->tb = tb;
  fr->ntb = ntb;
  fr->self = self;
  uint32_t nb0 = L->nbinds;
  for (size_t i = 0; i < np; i++) {
    const struct kl_var *p = &callee->params[i];
    if (!p->name) continue;
    uint32_t len = (uint32_t)strlen(p->name);
    struct kl_lbind *b = &pb[i];
    if (b->sym & 0x80000000u) {
      b->sym &= 0x7fffffffu;
      kl_lw_alias(L, p->name, len, b);
      continue;
    }
    const struct kl_msl_type *pt = kl_msl_type(p->type);
    bool aggregate = b->kind == KL_LB_VALUE && !b->mem.ptr && !p->is_pointer && !p->array_dims &&
                     ((pt && pt->kind != KL_TYPE_SCALAR) || (!pt && kl_lw_struct_type(L, p->type)));
    if (aggregate) {
      /* A vector or struct by value: a copy in thread memory, read through its components. */
      int32_t nb = kl_lw_bind(L, p->name, len, KL_LB_MEM, p);
      uint32_t al = kl_lw_emit(L, KL_IR_ALLOC, call, NULL, 0);
      struct kl_lbind *bb = &L->binds[nb];
      bb->mem = (struct kl_rv){.v = al,
                               .ptr = true,
                               .as = KL_AS_THREAD,
                               .etype = p->type,
                               .esize = kl_lw_type_size(p->type)};
      if (al) {
        struct kl_ir_ins *ai = &L->f->ins[al];
        ai->var = p;
        ai->as = KL_AS_THREAD;
        ai->type = p->type;
        ai->sym = bb->sym;
        ai->name = bb->name;
      }
      uint32_t ops[2] = {al, b->comp[0]};
      uint32_t st = kl_lw_emit(L, KL_IR_STORE, call, ops, 2);
      if (st) {
        L->f->ins[st].as = KL_AS_THREAD;
        L->f->ins[st].type = p->type;
      }
      continue;
    }
    int32_t nb = kl_lw_bind(L, p->name, len, b->kind, p);
    struct kl_lbind *bb = &L->binds[nb];
    bb->mem = b->mem;
    bb->lam = b->lam;
    bb->lam_home = b->lam_home;
    if (b->kind == KL_LB_COORD) {
      memcpy(bb->comp, b->comp, sizeof bb->comp);
    } else if (b->kind == KL_LB_VALUE) {
      uint32_t v = b->comp[0];
      if (!v) {
        v = kl_lw_emit(L, KL_IR_UNDEF, call, NULL, 0);
        if (v) L->f->ins[v].type = p->type;
      }
      kl_lw_assign(L, bb->sym, v);
    }
  }
  kl_lw_scan_mem(L, callee);
  /* A constructor's field initializers run first. */
  TSNode inits = callee->owner && self.v && !strcmp(callee->name, callee->owner)
                     ? ts_node_prev_named_sibling(callee->body)
                     : kl_null;
  if (!kl_node_null(inits) && !strcmp(ts_node_type(inits), "field_initializer_list"))
    kl_lw_field_inits(L, inits, self);
  bool live0 = L->live;
  int sw = L->in_switch;
  L->in_switch = 0;
  fr->region = kl_lw_early_return(L, callee);
  if (fr->region) {
    out->v = kl_lw_region(L, fi, call, callee->body);
  } else {
    kl_lw_stmt(L, callee->body);
    out->v = L->frames[fi].ret_val;
    L->live = live0;
  }
  L->in_switch = sw;
  kl_lw_scope_pop(L, nb0);
  L->nframes--;
  return true;
}

bool kl_lw_inline_lambda(struct kl_lower *L, TSNode lam, uint32_t home, TSNode call,
                         const TSNode *argn, uint32_t nargs, uint32_t given, struct kl_rv *out) {
  memset(out, 0, sizeof *out);
  TSNode body = kl_node_field(lam, "body");
  if (kl_node_null(body)) return false;
  if (L->nframes > KL_MODEL_MAX_CALL_DEPTH || L->f->nsites > KL_LOWER_MAX_SITES) {
    L->f->truncated = true;
    L->f->cut_other = true;
    return false;
  }
  for (uint32_t i = 0; i < L->nframes; i++)
    if (L->frames[i].lambda && ts_node_eq(L->frames[i].lam, lam)) return false;
  /* Its parameters' names, and the arguments' values, in the caller. */
  TSNode decl = kl_node_field(lam, "declarator");
  TSNode params = kl_node_null(decl) ? kl_null : kl_node_field(decl, "parameters");
  uint32_t np = kl_node_null(params) ? 0 : ts_node_named_child_count(params);
  TSNode *pname = kl_arena_alloc(L->a, (np + 1) * sizeof *pname);
  struct kl_rv *pv = kl_arena_alloc(L->a, (np + 1) * sizeof *pv);
  uint32_t n = 0;
  for (uint32_t i = 0; i < np; i++) {
    TSNode pd = kl_node_named_child(params, i);
    if (kl_node_is_kind(pd, KL_KIND_COMMENT)) continue;
    pname[n] = kl_lw_decl_name(kl_node_field(pd, "declarator"));
    memset(&pv[n], 0, sizeof pv[n]);
    if (n < nargs) pv[n] = kl_lw_expr(L, argn[n]);
    n++;
  }
  for (uint32_t i = n; i < nargs; i++) kl_lw_value(L, argn[i]);
  if (L->stop) return true;
  if (home >= L->nframes) home = L->nframes - 1;
  uint32_t site = kl_ir_site_new(L->f, kl_lw_at(L, call), NULL, L->frames[L->nframes - 1].site);
  L->f->sites[site].lambda = true;
  KL_VEC_PUSH(L->a, L->frames, L->nframes, L->cap_frames);
  uint32_t fi = L->nframes++;
  struct kl_lframe *fr = &L->frames[fi];
  const struct kl_lframe *at = &L->frames[home];
  memset(fr, 0, sizeof *fr);
  fr->fn = at->fn;
  fr->tb = at->tb;
  fr->ntb = at->ntb;
  fr->self = at->self;
  fr->site = site;
  fr->lambda = true;
  fr->lam = lam;
  fr->home = home;
  uint32_t nb0 = L->nbinds;
  for (uint32_t i = 0; i < n; i++) {
    if (kl_node_null(pname[i])) continue;
    uint32_t s = ts_node_start_byte(pname[i]), e = ts_node_end_byte(pname[i]);
    if (pv[i].coordvec) {
      int32_t nb = kl_lw_bind(L, L->buf + s, e - s, KL_LB_COORD, kl_lw_var_at(L, s));
      memcpy(L->binds[nb].comp, pv[i].comp, sizeof pv[i].comp);
      continue;
    }
    int32_t nb = kl_lw_bind(L, L->buf + s, e - s, KL_LB_VALUE, kl_lw_var_at(L, s));
    L->binds[nb].mem = pv[i];
    uint32_t v = i < nargs ? pv[i].v : given;
    if (!v) v = kl_lw_emit(L, KL_IR_UNDEF, call, NULL, 0);
    kl_lw_assign(L, L->binds[nb].sym, v);
  }
  /* Its returns leave the lambda only: a region, run once. */
  int sw = L->in_switch;
  L->in_switch = 0;
  fr->region = true;
  out->v = kl_lw_region(L, fi, call, body);
  L->in_switch = sw;
  kl_lw_scope_pop(L, nb0);
  L->nframes--;
  return true;
}
