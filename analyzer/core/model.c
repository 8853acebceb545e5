/* The kernel model builder: one pass over the unit's tree collects functions, their parameters,
 * locals, attributes and callees, and the file's explicit template instantiations.
 *
 * Every walk here is iterative (kl_dialect_walk, or a bounded loop down a declarator chain), so
 * tree depth never turns into C stack depth. Field lookups go through kl_node_field (a field id,
 * as ts_node_child_by_field_name) or the cursor: ts_node_field_name_for_child is wrong in
 * tree-sitter 0.20.7 when a node has unnamed-field children such as `static` or `const`. */
#include "analyzer/core/model.h"

#include <stdlib.h>
#include <string.h>

#include "analyzer/core/node.h"
#include "grammar/lex.h"

/* Declarator chains are short (`* const & name [4][4]`); the bound only guards against a
 * pathological or broken tree. */
#define KL_MODEL_MAX_CHAIN 64

struct kl_model_builder {
  struct kl_arena *a;
  const struct kl_unit *u;
  struct kl_model *m;
};

static bool kl_model_is(TSNode n, const char *type) {
  return !kl_node_null(n) && kl_node_is(n, type);
}

static TSNode kl_model_field(TSNode n, const char *name) {
  return kl_node_field(n, name);
}

/* Node text with each whitespace run collapsed to one space: blanked keywords leave runs of
 * spaces inside types (`const        float`). */
static char *kl_model_text(struct kl_model_builder *b, TSNode n) {
  return kl_lex_collapse(b->a, b->u->buf, ts_node_start_byte(n), ts_node_end_byte(n));
}

static enum kl_addrspace kl_model_kw_addrspace(enum kl_kw k) {
  switch (k) {
  case KL_KW_DEVICE:
    return KL_AS_DEVICE;
  case KL_KW_CONSTANT:
    return KL_AS_CONSTANT;
  case KL_KW_THREADGROUP:
    return KL_AS_THREADGROUP;
  case KL_KW_THREAD:
    return KL_AS_THREAD;
  case KL_KW_THREADGROUP_IMAGEBLOCK:
    return KL_AS_THREADGROUP_IMAGEBLOCK;
  case KL_KW_RAY_DATA:
    return KL_AS_RAY_DATA;
  case KL_KW_OBJECT_DATA:
    return KL_AS_OBJECT_DATA;
  default:
    return KL_AS_NONE;
  }
}

/* First address-space keyword blanked in [start, end). */
static enum kl_addrspace kl_model_addrspace_in(const struct kl_unit *u, uint32_t start,
                                               uint32_t end) {
  size_t n = 0;
  const struct kl_keyword *k = start < end ? kl_dialect_keywords_in(u, start, end, &n) : NULL;
  for (size_t i = 0; i < n; i++) {
    enum kl_addrspace as = kl_model_kw_addrspace(k[i].kind);
    if (as != KL_AS_NONE) return as;
  }
  return KL_AS_NONE;
}

TSNode kl_model_name_of(TSNode n) {
  for (int i = 0; i < KL_MODEL_MAX_CHAIN && !kl_node_null(n); i++) {
    if (kl_model_is(n, "qualified_identifier") || kl_model_is(n, "template_function") ||
        kl_model_is(n, "template_method"))
      n = kl_model_field(n, "name");
    else
      return n;
  }
  return n;
}

/* One step down a declarator chain, or a null node at the name. */
static TSNode kl_model_inner_declarator(TSNode n) {
  TSNode d = kl_model_field(n, "declarator");
  if (!kl_node_null(d)) return d;
  /* reference_declarator, attributed_declarator and parenthesized_declarator keep the inner
   * declarator in an unnamed field. */
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    const char *t = ts_node_type(c);
    if (strcmp(t, "attribute_declaration") && strcmp(t, "type_qualifier") && strcmp(t, "comment") &&
        strcmp(t, "ms_pointer_modifier"))
      return c;
  }
  TSNode null = {{0, 0, 0, 0}, NULL, NULL};
  return null;
}

/* The value of a string literal as the host sees it, escapes as written: adjacent literals
 * joined (`"rms_" "bf16"` is rms_bf16, as macros that stamp out instantiations write it), and a
 * macro between them (`"k_" SUFFIX`) left out, as its value is not known here. */
static const char *kl_model_string(struct kl_model_builder *b, TSNode s) {
  uint32_t start = ts_node_start_byte(s), end = ts_node_end_byte(s);
  char *out = kl_arena_alloc(b->a, end - start + 1);
  size_t o = 0;
  bool one = kl_model_is(s, "string_literal");
  uint32_t k = one ? 1 : ts_node_named_child_count(s);
  for (uint32_t i = 0; i < k; i++) {
    TSNode lit = one ? s : kl_node_named_child(s, i);
    if (!kl_model_is(lit, "string_literal")) continue;
    uint32_t nk = ts_node_named_child_count(lit);
    for (uint32_t j = 0; j < nk; j++) {
      TSNode c = kl_node_named_child(lit, j);
      if (!kl_model_is(c, "string_content") && !kl_model_is(c, "escape_sequence")) continue;
      uint32_t cs = ts_node_start_byte(c), ce = ts_node_end_byte(c);
      memcpy(out + o, b->u->buf + cs, ce - cs);
      o += ce - cs;
    }
  }
  out[o] = '\0';
  return out;
}

static void kl_model_add_attrs(struct kl_model_builder *b, struct kl_function *f, TSNode decl) {
  uint32_t k = ts_node_named_child_count(decl);
  for (uint32_t i = 0; i < k; i++) {
    TSNode at = kl_node_named_child(decl, i);
    if (!kl_model_is(at, "attribute")) continue;
    TSNode name = kl_model_field(at, "name");
    if (kl_node_null(name)) continue;
    struct kl_attr attr = {0};
    attr.name = kl_model_text(b, name);
    attr.node = at;
    uint32_t na = ts_node_named_child_count(at);
    TSNode args = na ? kl_node_named_child(at, na - 1) : name;
    if (kl_model_is(args, "argument_list") && ts_node_named_child_count(args) > 0) {
      attr.arg_node = kl_node_named_child(args, 0);
      /* host_name("x") is wanted as the name, not as a C string. */
      if (kl_model_is(attr.arg_node, "string_literal") ||
          kl_model_is(attr.arg_node, "concatenated_string")) {
        attr.arg = kl_model_string(b, attr.arg_node);
      } else {
        attr.arg = kl_model_text(b, attr.arg_node);
      }
    }
    KL_VEC_PUSH(b->a, f->attrs, f->nattrs, f->cap_attrs);
    f->attrs[f->nattrs++] = attr;
  }
}

/* Fill v from a declaration-like node (parameter_declaration, declaration, field_declaration)
 * and one of its declarators (may be null for an unnamed parameter); lead is the node's
 * kl_dialect_lead. */
static void kl_model_fill_var(struct kl_model_builder *b, struct kl_var *v, TSNode decl,
                              TSNode declarator, uint32_t lead) {
  memset(v, 0, sizeof *v);
  v->name = "";
  v->attr_index = -1;
  v->node = decl;
  TSNode type = kl_model_field(decl, "type");
  v->type = kl_node_null(type) ? "" : kl_model_text(b, type);
  uint32_t k = ts_node_named_child_count(decl);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(decl, i);
    if (!kl_model_is(c, "type_qualifier")) continue;
    char *q = kl_model_text(b, c);
    if (!strcmp(q, "const") || !strcmp(q, "constexpr")) v->is_const = true;
  }
  uint32_t arr_end = 0;
  TSNode n = declarator;
  for (int i = 0; i < KL_MODEL_MAX_CHAIN && !kl_node_null(n); i++) {
    const char *t = ts_node_type(n);
    if (!strcmp(t, "identifier") || !strcmp(t, "field_identifier")) {
      v->name = kl_model_text(b, n);
      v->name_node = n;
      if (arr_end) {
        /* Dimensions as written, without spaces: "[32][33]". */
        uint32_t s = ts_node_end_byte(n);
        char *dims = kl_arena_alloc(b->a, arr_end - s + 1);
        size_t o = 0;
        for (uint32_t j = s; j < arr_end; j++)
          if (b->u->buf[j] != ' ' && b->u->buf[j] != '\t' && b->u->buf[j] != '\n')
            dims[o++] = b->u->buf[j];
        dims[o] = '\0';
        v->array_dims = dims;
      }
      break;
    }
    if (!strcmp(t, "pointer_declarator") || !strcmp(t, "abstract_pointer_declarator")) {
      v->is_pointer = true;
    } else if (!strcmp(t, "reference_declarator") || !strcmp(t, "abstract_reference_declarator")) {
      v->is_reference = true;
    } else if (!strcmp(t, "array_declarator") || !strcmp(t, "abstract_array_declarator")) {
      if (!arr_end) arr_end = ts_node_end_byte(n);
    } else if (!strcmp(t, "attributed_declarator")) {
      uint32_t na = ts_node_named_child_count(n);
      for (uint32_t j = 0; j < na && !v->attr; j++) {
        TSNode ad = kl_node_named_child(n, j);
        if (!kl_model_is(ad, "attribute_declaration")) continue;
        TSNode at = kl_node_named_child(ad, 0);
        TSNode an = kl_model_is(at, "attribute") ? kl_model_field(at, "name") : at;
        if (kl_node_null(an)) continue;
        v->attr = kl_model_text(b, an);
        uint32_t nc = ts_node_named_child_count(at);
        TSNode args = nc ? kl_node_named_child(at, nc - 1) : an;
        if (kl_model_is(args, "argument_list") && ts_node_named_child_count(args) > 0) {
          TSNode num = kl_node_named_child(args, 0);
          if (kl_model_is(num, "number_literal"))
            v->attr_index = (int)strtol(b->u->buf + ts_node_start_byte(num), NULL, 0);
        }
        v->coord = kl_msl_coord(v->attr);
      }
    } else if (strcmp(t, "init_declarator") && strcmp(t, "parenthesized_declarator") &&
               strcmp(t, "abstract_parenthesized_declarator")) {
      break; /* a function declarator or something this model does not describe */
    }
    n = kl_model_inner_declarator(n);
  }
  uint32_t stop =
      kl_node_null(v->name_node) ? ts_node_end_byte(decl) : ts_node_start_byte(v->name_node);
  v->as = kl_model_addrspace_in(b->u, lead, stop);
}

static bool kl_model_is_declarator(TSNode decl, TSNode c) {
  if (!ts_node_is_named(c)) return false;
  TSNode type = kl_model_field(decl, "type");
  if (!kl_node_null(type) && ts_node_eq(type, c)) return false;
  const char *t = ts_node_type(c);
  return strcmp(t, "type_qualifier") && strcmp(t, "storage_class_specifier") &&
         strcmp(t, "attribute_declaration") && strcmp(t, "attribute_specifier") &&
         strcmp(t, "comment") && strcmp(t, "virtual") && strcmp(t, "explicit_function_specifier");
}

static void kl_model_add_local(struct kl_model_builder *b, struct kl_function *f, TSNode decl,
                               TSNode declarator, uint32_t lead) {
  KL_VEC_PUSH(b->a, f->locals, f->nlocals, f->cap_locals);
  struct kl_var *v = &f->locals[f->nlocals++];
  kl_model_fill_var(b, v, decl, declarator, lead);
  if (v->as == KL_AS_THREADGROUP) {
    KL_VEC_PUSH(b->a, f->tg_decls, f->ntg_decls, f->cap_tg_decls);
    f->tg_decls[f->ntg_decls++] = *v;
  }
}

static void kl_model_add_callee(struct kl_model_builder *b, struct kl_function *f, TSNode fn) {
  TSNode name = kl_model_name_of(fn);
  if (!kl_model_is(name, "identifier")) return; /* member calls and functors are not ours */
  uint32_t s = ts_node_start_byte(name), len = ts_node_end_byte(name) - s;
  const char *text = b->u->buf + s;
  for (size_t i = 0; i < f->ncallees; i++)
    if (strlen(f->callees[i]) == len && !memcmp(f->callees[i], text, len)) return;
  /* The first definition of the name, as kl_model_function finds it (overloads share a name). */
  for (size_t i = 0; i < b->m->nfunctions; i++) {
    const char *fname = b->m->functions[i].name;
    if (strlen(fname) == len && !memcmp(fname, text, len)) {
      size_t cap = f->cap_callees;
      KL_VEC_PUSH(b->a, f->callees, f->ncallees, f->cap_callees);
      if (f->cap_callees != cap)
        f->callee_index =
            kl_arena_grow(b->a, f->callee_index, cap, f->cap_callees, sizeof *f->callee_index);
      f->callee_index[f->ncallees] = i;
      f->callees[f->ncallees++] = fname;
      return;
    }
  }
}

struct kl_model_body_scan {
  struct kl_model_builder *b;
  struct kl_function *f;
};

static enum kl_walk kl_model_scan_node(TSNode n, const struct kl_walk_trail *trail, void *ctx) {
  struct kl_model_body_scan *scan = ctx;
  struct kl_model_builder *b = scan->b;
  struct kl_function *f = scan->f;
  enum kl_kind t = kl_node_kind(n);
  if (t == KL_KIND_DECLARATION) {
    uint32_t k = ts_node_named_child_count(n), lead = 0;
    bool led = false;
    for (uint32_t i = 0; i < k; i++) {
      TSNode d = kl_node_named_child(n, i);
      if (!kl_model_is_declarator(n, d)) continue;
      if (!led) lead = kl_dialect_trail_lead(trail);
      led = true;
      kl_model_add_local(b, f, n, d, lead);
    }
  } else if (t == KL_KIND_FOR_RANGE_LOOP) {
    TSNode d = kl_model_field(n, "declarator");
    if (!kl_node_null(d)) kl_model_add_local(b, f, n, d, kl_dialect_trail_lead(trail));
  } else if (t == KL_KIND_CALL_EXPRESSION) {
    kl_model_add_callee(b, f, kl_model_field(n, "function"));
    KL_VEC_PUSH(b->a, f->calls, f->ncalls, f->cap_calls);
    f->calls[f->ncalls++] = n;
  }
  return KL_WALK_DESCEND;
}

/* Locals, callees and calls: one walk over the body. */
static void kl_model_scan_body(struct kl_model_builder *b, struct kl_function *f) {
  if (kl_node_null(f->body)) return;
  struct kl_model_body_scan scan = {b, f};
  kl_dialect_walk_trail(f->body, kl_model_scan_node, &scan);
}

static void kl_model_tparams(struct kl_model_builder *b, struct kl_function *f, TSNode tmpl) {
  TSNode list = kl_model_field(tmpl, "parameters");
  if (kl_node_null(list)) return;
  uint32_t k = ts_node_named_child_count(list);
  f->tparams = kl_arena_alloc(b->a, (k ? k : 1) * sizeof *f->tparams);
  f->tdefaults = kl_arena_alloc(b->a, (k ? k : 1) * sizeof *f->tdefaults);
  f->tvalue = kl_arena_alloc(b->a, (k ? k : 1) * sizeof *f->tvalue);
  f->tpos = kl_arena_alloc(b->a, (k ? k : 1) * sizeof *f->tpos);
  size_t pos = 0;
  for (uint32_t i = 0; i < k; i++) {
    TSNode p = kl_node_named_child(list, i);
    if (kl_model_is(p, "comment")) continue;
    pos++;
    TSNode name = kl_model_field(p, "name");
    if (kl_node_null(name)) name = kl_model_field(p, "declarator");
    if (kl_node_null(name)) {
      /* `typename T` and `typename... Ts` keep the name as their only named child. */
      for (uint32_t j = 0; j < ts_node_named_child_count(p); j++) {
        TSNode c = kl_node_named_child(p, j);
        if (kl_model_is(c, "type_identifier") || kl_model_is(c, "identifier")) name = c;
      }
    }
    /* `int... Ns` nests the name in a variadic_declarator. */
    for (int d = 0; d < KL_MODEL_MAX_CHAIN && !kl_node_null(name) &&
                    !kl_model_is(name, "identifier") && !kl_model_is(name, "type_identifier");
         d++)
      name = kl_model_inner_declarator(name);
    if (kl_node_null(name)) continue;
    TSNode def = kl_model_field(p, "default_value");
    if (kl_node_null(def)) def = kl_model_field(p, "default_type");
    f->tdefaults[f->ntparams] = kl_node_null(def) ? NULL : kl_model_text(b, def);
    f->tvalue[f->ntparams] =
        kl_model_is(p, "parameter_declaration") || kl_model_is(p, "optional_parameter_declaration");
    f->tpos[f->ntparams] = pos - 1;
    f->tparams[f->ntparams++] = kl_model_text(b, name);
  }
}

struct kl_model_param_scan {
  struct kl_model_builder *b;
  struct kl_function *f;
  uint32_t cap; /* the list's named children, for which f->params has room */
  bool in;      /* past the list itself: each visit is one of its children */
};

/* A walk over the list's children only, for their leads. */
static enum kl_walk kl_model_param_node(TSNode p, const struct kl_walk_trail *trail, void *ctx) {
  struct kl_model_param_scan *scan = ctx;
  if (!scan->in) {
    scan->in = true;
    return KL_WALK_DESCEND;
  }
  const char *t = ts_node_type(p);
  if (!ts_node_is_named(p) ||
      (strcmp(t, "parameter_declaration") && strcmp(t, "optional_parameter_declaration") &&
       strcmp(t, "variadic_parameter_declaration")))
    return KL_WALK_SKIP;
  struct kl_function *f = scan->f;
  if (f->nparams == scan->cap) return KL_WALK_STOP;
  struct kl_var *v = &f->params[f->nparams++];
  kl_model_fill_var(scan->b, v, p, kl_model_field(p, "declarator"), kl_dialect_trail_lead(trail));
  if (v->as == KL_AS_THREADGROUP) {
    KL_VEC_PUSH(scan->b->a, f->tg_decls, f->ntg_decls, f->cap_tg_decls);
    f->tg_decls[f->ntg_decls++] = *v;
  }
  return KL_WALK_SKIP;
}

static void kl_model_params(struct kl_model_builder *b, struct kl_function *f, TSNode fdecl) {
  TSNode list = kl_model_field(fdecl, "parameters");
  if (kl_node_null(list)) return;
  uint32_t k = ts_node_named_child_count(list);
  f->params = kl_arena_alloc(b->a, (k ? k : 1) * sizeof *f->params);
  struct kl_model_param_scan scan = {b, f, k, false};
  kl_dialect_walk_trail(list, kl_model_param_node, &scan);
}

/* def, with its kl_dialect_lead. */
static void kl_model_add_function(struct kl_model_builder *b, TSNode def,
                                  const struct kl_walk_trail *trail) {
  uint32_t lead = kl_dialect_trail_lead(trail);
  /* Find the function_declarator, collecting attributes that trail the declarator
   * (`void f(...) [[max_total_threads_per_threadgroup(64)]]`) on the way down. */
  struct kl_function f = {0};
  TSNode fdecl = kl_model_field(def, "declarator");
  for (int i = 0; i < KL_MODEL_MAX_CHAIN && !kl_node_null(fdecl); i++) {
    if (kl_model_is(fdecl, "function_declarator")) break;
    if (kl_model_is(fdecl, "attributed_declarator")) {
      uint32_t k = ts_node_named_child_count(fdecl);
      for (uint32_t j = 0; j < k; j++) {
        TSNode c = kl_node_named_child(fdecl, j);
        if (kl_model_is(c, "attribute_declaration")) kl_model_add_attrs(b, &f, c);
      }
    }
    fdecl = kl_model_inner_declarator(fdecl);
  }
  if (!kl_model_is(fdecl, "function_declarator")) return;
  f.name_node = kl_model_name_of(kl_model_field(fdecl, "declarator"));
  if (kl_node_null(f.name_node)) return;
  f.name = kl_model_text(b, f.name_node);
  uint32_t k = ts_node_named_child_count(def);
  for (uint32_t j = 0; j < k; j++) {
    TSNode c = kl_node_named_child(def, j);
    if (kl_model_is(c, "attribute_declaration")) kl_model_add_attrs(b, &f, c);
  }
  k = ts_node_named_child_count(fdecl);
  for (uint32_t j = 0; j < k; j++) {
    TSNode c = kl_node_named_child(fdecl, j);
    if (kl_model_is(c, "attribute_declaration")) kl_model_add_attrs(b, &f, c);
  }
  for (size_t j = 0; j < f.nattrs; j++)
    if (!strcmp(f.attrs[j].name, "kernel")) f.is_kernel = true;
  size_t nkw = 0;
  uint32_t stop = ts_node_start_byte(fdecl);
  const struct kl_keyword *kw = lead < stop ? kl_dialect_keywords_in(b->u, lead, stop, &nkw) : NULL;
  for (size_t j = 0; j < nkw; j++)
    if (kw[j].kind == KL_KW_KERNEL) f.is_kernel = true;
  TSNode parent = kl_dialect_trail_parent(trail, def);
  f.node = def;
  if (kl_model_is(parent, "template_declaration")) {
    f.node = parent;
    kl_model_tparams(b, &f, parent);
  }
  /* A member: defined in the body of a struct (whose template parameters are compile-time values
   * in it too), or out of it as `S::run`. */
  TSNode list = kl_dialect_trail_parent(trail, f.node);
  TSNode spec =
      kl_model_is(list, "field_declaration_list") ? kl_dialect_trail_parent(trail, list) : list;
  if (kl_model_is(spec, "struct_specifier") || kl_model_is(spec, "class_specifier")) {
    TSNode sn = kl_model_field(spec, "name");
    if (kl_model_is(sn, "template_type")) sn = kl_model_field(sn, "name");
    if (!kl_node_null(sn)) f.owner = kl_model_text(b, sn);
    if (kl_model_is(list, "field_declaration_list")) f.owner_body = list;
    TSNode st = kl_dialect_trail_parent(trail, spec);
    if (kl_model_is(st, "template_declaration")) {
      struct kl_function of = {0};
      kl_model_tparams(b, &of, st);
      f.otparams = of.tparams;
      f.notparams = of.ntparams;
      if (!f.ntparams) kl_model_tparams(b, &f, st);
    }
  } else {
    TSNode q = kl_model_field(fdecl, "declarator");
    if (kl_model_is(q, "qualified_identifier")) {
      TSNode sc = kl_model_field(q, "scope");
      if (kl_model_is(sc, "template_type")) sc = kl_model_field(sc, "name");
      if (!kl_node_null(sc)) f.owner = kl_model_text(b, sc);
    }
  }
  kl_model_params(b, &f, fdecl);
  f.body = kl_model_field(def, "body");
  KL_VEC_PUSH(b->a, b->m->functions, b->m->nfunctions, b->m->cap_functions);
  b->m->functions[b->m->nfunctions++] = f;
}

static void kl_model_add_instance(struct kl_model_builder *b, TSNode inst) {
  struct kl_instance in = {0};
  in.start = ts_node_start_byte(inst);
  in.end = ts_node_end_byte(inst);
  TSNode d = kl_model_field(inst, "declarator");
  if (kl_model_is(d, "function_declarator")) d = kl_model_field(d, "declarator");
  if (kl_model_is(d, "qualified_identifier")) d = kl_model_field(d, "name");
  if (!kl_model_is(d, "template_function")) return;
  TSNode name = kl_model_field(d, "name");
  TSNode args = kl_model_field(d, "arguments");
  if (kl_node_null(name)) return;
  in.function = kl_model_text(b, name);
  uint32_t k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  in.targs = kl_arena_alloc(b->a, (k ? k : 1) * sizeof *in.targs);
  for (uint32_t i = 0; i < k; i++) {
    TSNode a = kl_node_named_child(args, i);
    if (!kl_model_is(a, "comment")) in.targs[in.ntargs++] = kl_model_text(b, a);
  }
  struct kl_function attrs = {0};
  k = ts_node_named_child_count(inst);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(inst, i);
    if (kl_model_is(c, "attribute_declaration")) kl_model_add_attrs(b, &attrs, c);
  }
  const struct kl_attr *hn = kl_model_attr(&attrs, "host_name");
  in.host_name = hn ? hn->arg : NULL;
  KL_VEC_PUSH(b->a, b->m->instances, b->m->ninstances, b->m->cap_instances);
  b->m->instances[b->m->ninstances++] = in;
}

static void kl_model_add_const(struct kl_model_builder *b, TSNode name, const char *text,
                               TSNode value, bool macro) {
  if (kl_node_null(name) || !text) return;
  char *n = kl_model_text(b, name);
  for (size_t i = 0; i < b->m->nconsts; i++) {
    struct kl_const *c = &b->m->consts[i];
    if (strcmp(c->name, n)) continue;
    if (strcmp(c->text, text)) c->ambiguous = true;
    return;
  }
  KL_VEC_PUSH(b->a, b->m->consts, b->m->nconsts, b->m->cap_consts);
  b->m->consts[b->m->nconsts++] = (struct kl_const){n, text, false, value, macro};
}

static void kl_model_add_fmacro(struct kl_model_builder *b, TSNode def) {
  TSNode name = kl_model_field(def, "name");
  if (kl_node_null(name)) return;
  char *n = kl_model_text(b, name);
  for (size_t i = 0; i < b->m->nfmacros; i++) {
    struct kl_fmacro *f = &b->m->fmacros[i];
    if (strcmp(f->name, n)) continue;
    if (strcmp(kl_model_text(b, f->def), kl_model_text(b, def))) f->ambiguous = true;
    return;
  }
  KL_VEC_PUSH(b->a, b->m->fmacros, b->m->nfmacros, b->m->cap_fmacros);
  b->m->fmacros[b->m->nfmacros++] = (struct kl_fmacro){n, def, false};
}

/* `constant constexpr uint N = 256;`, `constexpr int N = 256;`, `const uint N = 256;`, and
 * `constant bool B [[function_constant(0)]];`. */
static void kl_model_file_declaration(struct kl_model_builder *b, TSNode d, uint32_t lead) {
  const struct kl_unit *u = b->u;
  bool is_const = false;
  uint32_t k = ts_node_named_child_count(d);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(d, i);
    if (!kl_model_is(c, "type_qualifier")) continue;
    uint32_t s = ts_node_start_byte(c), n = ts_node_end_byte(c) - s;
    if ((n == 5 && !memcmp(u->buf + s, "const", 5)) ||
        (n == 9 && !memcmp(u->buf + s, "constexpr", 9)))
      is_const = true;
  }
  /* A blanked `constant` is whitespace to tree-sitter, so it lies before the node. */
  size_t nkw = 0;
  const struct kl_keyword *kw = kl_dialect_keywords_in(u, lead, ts_node_end_byte(d), &nkw);
  for (size_t i = 0; i < nkw; i++)
    if (kw[i].kind == KL_KW_CONSTANT) is_const = true;
  if (!is_const) return;
  TSNode type = kl_model_field(d, "type");
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(d, i);
    if (kl_model_is(c, "attributed_declarator")) {
      TSNode name = kl_node_named_child(c, 0);
      struct kl_function attrs = {0};
      for (uint32_t j = 1; j < ts_node_named_child_count(c); j++)
        if (kl_model_is(kl_node_named_child(c, j), "attribute_declaration"))
          kl_model_add_attrs(b, &attrs, kl_node_named_child(c, j));
      if (!kl_model_is(name, "identifier") || !kl_model_attr(&attrs, "function_constant")) continue;
      KL_VEC_PUSH(b->a, b->m->fconsts, b->m->nfconsts, b->m->cap_fconsts);
      struct kl_fconst *fc = &b->m->fconsts[b->m->nfconsts++];
      fc->name = kl_model_text(b, name);
      fc->is_bool = !kl_node_null(type) && !strcmp(kl_model_text(b, type), "bool");
      fc->node = d;
      continue;
    }
    if (!kl_model_is(c, "init_declarator")) continue;
    TSNode name = kl_model_field(c, "declarator"), value = kl_model_field(c, "value");
    if (!kl_model_is(name, "identifier") || kl_node_null(value)) continue;
    /* `= {256}` and `(256)` initialisers carry the value one level down. */
    if ((kl_model_is(value, "initializer_list") || kl_model_is(value, "argument_list")) &&
        ts_node_named_child_count(value) == 1)
      value = kl_node_named_child(value, 0);
    kl_model_add_const(b, name, kl_model_text(b, value), value, false);
  }
}

/* Constants outside function bodies: class members (reached as S::N) and templated constants
 * are not plain names at file scope, so their bodies are skipped. */
static enum kl_walk kl_model_const_node(TSNode n, const struct kl_walk_trail *trail, void *ctx) {
  struct kl_model_builder *b = ctx;
  enum kl_kind t = kl_node_kind(n);
  if (t == KL_KIND_PREPROC_DEF) {
    TSNode v = kl_model_field(n, "value");
    kl_model_add_const(b, kl_model_field(n, "name"), kl_node_null(v) ? "" : kl_model_text(b, v),
                       (TSNode){0}, true);
    return KL_WALK_SKIP;
  }
  if (t == KL_KIND_PREPROC_FUNCTION_DEF) {
    kl_model_add_fmacro(b, n);
    return KL_WALK_SKIP;
  }
  if (t == KL_KIND_DECLARATION) {
    kl_model_file_declaration(b, n, kl_dialect_trail_lead(trail));
    return KL_WALK_SKIP;
  }
  if (t == KL_KIND_ENUMERATOR) {
    TSNode v = kl_model_field(n, "value");
    if (!kl_node_null(v))
      kl_model_add_const(b, kl_model_field(n, "name"), kl_model_text(b, v), (TSNode){0}, false);
    return KL_WALK_SKIP;
  }
  if (t == KL_KIND_COMPOUND_STATEMENT || t == KL_KIND_FIELD_DECLARATION_LIST ||
      t == KL_KIND_TEMPLATE_DECLARATION || t == KL_KIND_COMMENT ||
      t == KL_KIND_FUNCTION_DEFINITION)
    return KL_WALK_SKIP;
  return KL_WALK_DESCEND;
}

/* Functions are never nested, so their bodies are skipped here and scanned once every function
 * is known (callees name only functions of this unit). */
static enum kl_walk kl_model_top_node(TSNode n, const struct kl_walk_trail *trail, void *ctx) {
  struct kl_model_builder *b = ctx;
  enum kl_kind t = kl_node_kind(n);
  if (t == KL_KIND_FUNCTION_DEFINITION) {
    kl_model_add_function(b, n, trail);
    return KL_WALK_SKIP;
  }
  if (t == KL_KIND_TEMPLATE_INSTANTIATION) {
    kl_model_add_instance(b, n);
    return KL_WALK_SKIP;
  }
  if (t == KL_KIND_COMPOUND_STATEMENT || t == KL_KIND_PREPROC_ARG ||
      t == KL_KIND_STRING_LITERAL || t == KL_KIND_COMMENT)
    return KL_WALK_SKIP;
  return ts_node_is_named(n) ? KL_WALK_DESCEND : KL_WALK_SKIP;
}

/* The alias a declaration introduces: its name node, the type it names and the template
 * arguments it gives that type (a null node for none), or false. */
static bool kl_model_alias_decl(TSNode c, TSNode *an, TSNode *ty, TSNode *args) {
  if (kl_model_is(c, "alias_declaration")) {
    *an = kl_model_field(c, "name");
    *ty = kl_model_field(kl_model_field(c, "type"), "type");
  } else if (kl_model_is(c, "type_definition")) {
    *an = kl_model_field(c, "declarator");
    *ty = kl_model_field(c, "type");
  } else {
    return false;
  }
  if (kl_node_null(*an) || kl_node_null(*ty)) return false;
  *args = (TSNode){{0}, NULL, NULL};
  if (kl_model_is(*ty, "template_type")) {
    *args = kl_model_field(*ty, "arguments");
    *ty = kl_model_field(*ty, "name");
  }
  return true;
}

/* The aliases among the children of n (the file, or a function body), into *v: a call's scope is
 * looked up in them at every call, and walking the top level of a large file (or a long body)
 * each time dominated whole runs. */
static void kl_model_collect_aliases(struct kl_model_builder *b, TSNode n, int depth,
                                     struct kl_type_alias **v, size_t *nv, size_t *cap) {
  TSTreeCursor cur = ts_tree_cursor_new(n);
  for (bool more = ts_tree_cursor_goto_first_child(&cur); more;
       more = ts_tree_cursor_goto_next_sibling(&cur)) {
    TSNode c = ts_tree_cursor_current_node(&cur), an, ty, args;
    if (!ts_node_is_named(c)) continue;
    if (depth < 2 && (kl_model_is(c, "namespace_definition") ||
                      kl_model_is(c, "declaration_list") || kl_model_is(c, "preproc_if") ||
                      kl_model_is(c, "preproc_ifdef"))) {
      kl_model_collect_aliases(b, c, depth + 1, v, nv, cap);
      continue;
    }
    if (!kl_model_alias_decl(c, &an, &ty, &args)) continue;
    KL_VEC_PUSH(b->a, *v, *nv, *cap);
    struct kl_type_alias *al = &(*v)[(*nv)++];
    al->name = kl_dialect_node_text(b->a, b->u, an);
    al->target = kl_model_is(ty, "type_identifier") ? kl_dialect_node_text(b->a, b->u, ty) : NULL;
    al->args = args;
  }
  ts_tree_cursor_delete(&cur);
}

/* The template an alias name names (the first alias of that name in v), into out (cap bytes);
 * false when there is none, or it names no plain template. */
static bool kl_model_alias(const struct kl_type_alias *v, size_t n, const char *name, char *out,
                           size_t cap) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].name, name)) continue;
    const char *t = v[i].target;
    if (!t || strlen(t) >= cap) return false;
    memcpy(out, t, strlen(t) + 1);
    return true;
  }
  return false;
}

/* The first alias of that name in v, or NULL. */
static const struct kl_type_alias *kl_model_alias_of(const struct kl_type_alias *v, size_t n,
                                                     const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i].name, name)) return &v[i];
  return NULL;
}

TSNode kl_model_alias_args(const struct kl_model *m, const struct kl_function *caller,
                           const char *name, bool *in_body) {
  for (int hop = 0; name && hop < 4; hop++) {
    const struct kl_type_alias *al =
        caller ? kl_model_alias_of(caller->aliases, caller->naliases, name) : NULL;
    *in_body = al != NULL;
    if (!al) al = kl_model_alias_of(m->aliases, m->naliases, name);
    if (!al) break;
    if (!kl_node_null(al->args)) return al->args;
    if (!al->target || !strcmp(al->target, name)) break;
    name = al->target;
  }
  *in_body = false;
  return (TSNode){{0}, NULL, NULL};
}

/* The instantiations read as text joined to those in the tree, in buffer order. */
static void kl_model_text_instances(struct kl_model_builder *b) {
  const struct kl_unit *u = b->u;
  struct kl_model *m = b->m;
  if (!u->ninsts) return;
  size_t nt = m->ninstances, n = nt + u->ninsts;
  struct kl_instance *all = kl_arena_alloc(b->a, n * sizeof *all);
  size_t i = 0, j = 0, k = 0;
  while (i < nt || j < u->ninsts) {
    if (j >= u->ninsts || (i < nt && m->instances[i].start <= u->insts[j].start)) {
      all[k++] = m->instances[i++];
      continue;
    }
    const struct kl_inst *t = &u->insts[j++];
    all[k++] =
        (struct kl_instance){t->function, t->host_name, t->targs, t->ntargs, t->start, t->end, t};
  }
  m->instances = all;
  m->ninstances = m->cap_instances = n;
}

void kl_model_build(struct kl_arena *a, const struct kl_unit *unit, struct kl_model *out) {
  memset(out, 0, sizeof *out);
  out->unit = unit;
  if (!unit->tree) return;
  struct kl_model_builder b = {a, unit, out};
  kl_dialect_walk_trail(ts_tree_root_node(unit->tree), kl_model_top_node, &b);
  kl_model_text_instances(&b);
  kl_dialect_walk_trail(ts_tree_root_node(unit->tree), kl_model_const_node, &b);
  kl_model_collect_aliases(&b, ts_tree_root_node(unit->tree), 0, &out->aliases, &out->naliases,
                           &out->cap_aliases);
  for (size_t i = 0; i < out->nfunctions; i++) {
    kl_model_scan_body(&b, &out->functions[i]);
    struct kl_function *f = &out->functions[i];
    if (kl_node_null(f->body)) continue;
    kl_model_collect_aliases(&b, f->body, 0, &f->aliases, &f->naliases, &f->cap_aliases);
  }
  /* Resolved once all functions are known: resolving searches them all. */
  for (size_t i = 0; i < out->nfunctions; i++) {
    struct kl_function *f = &out->functions[i];
    if (!f->ncalls) continue;
    f->call_targets = kl_arena_alloc(a, f->ncalls * sizeof *f->call_targets);
    for (size_t k = 0; k < f->ncalls; k++) {
      TSNode callee = kl_model_field(f->calls[k], "function");
      f->call_targets[k] = kl_node_null(callee) ? NULL : kl_model_callee(out, f, callee);
    }
  }
}

const struct kl_function *kl_model_function(const struct kl_model *m, const char *name) {
  for (size_t i = 0; i < m->nfunctions; i++)
    if (!strcmp(m->functions[i].name, name)) return &m->functions[i];
  return NULL;
}

TSNode kl_model_member_const(const struct kl_model *m, const struct kl_function *f,
                             const char *name, size_t len) {
  TSNode none = {{0}, NULL, NULL};
  if (!f || !f->owner || kl_node_null(f->owner_body)) return none;
  const char *buf = m->unit->buf;
  TSNode found = none;
  /* One pass with a cursor, as kl_model_collect_aliases. */
  TSTreeCursor cur = ts_tree_cursor_new(f->owner_body);
  for (bool more = ts_tree_cursor_goto_first_child(&cur); more;
       more = ts_tree_cursor_goto_next_sibling(&cur)) {
    TSNode c = ts_tree_cursor_current_node(&cur);
    if (!kl_model_is(c, "field_declaration")) continue;
    TSNode d = kl_model_field(c, "declarator"), v = kl_model_field(c, "default_value");
    if (kl_node_null(v) || !kl_model_is(d, "field_identifier")) continue;
    uint32_t s = ts_node_start_byte(d), e = ts_node_end_byte(d);
    if (e - s != len || memcmp(buf + s, name, len)) continue;
    /* Only a constant: `static` and `const`/`constexpr` among the declaration's words, or a
     * project macro that spells them (MLX's `MLX_MTL_CONST`, `STEEL_CONST`). */
    uint32_t cs = ts_node_start_byte(c);
    bool st = false, cn = false;
    for (uint32_t j = cs; j + 5 <= s; j++) {
      if (j + 6 <= s && !memcmp(buf + j, "static", 6)) st = true;
      if (!memcmp(buf + j, "const", 5)) cn = true;
      if (!memcmp(buf + j, "CONST", 5)) st = cn = true;
    }
    if (st && cn) found = v;
    break;
  }
  ts_tree_cursor_delete(&cur);
  return found;
}

size_t kl_model_fields(struct kl_arena *a, const struct kl_model *m, const struct kl_function *f,
                       struct kl_var **out) {
  *out = NULL;
  if (!f || !f->owner || kl_node_null(f->owner_body)) return 0;
  struct kl_model_builder b = {a, m->unit, NULL};
  size_t n = 0, cap = 0;
  uint32_t k = ts_node_named_child_count(f->owner_body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(f->owner_body, i);
    TSNode d = kl_model_field(c, "declarator");
    if (!kl_model_is(c, "field_declaration") || kl_node_null(d) ||
        !kl_node_null(kl_model_field(c, "default_value")))
      continue;
    KL_VEC_PUSH(a, *out, n, cap);
    kl_model_fill_var(&b, &(*out)[n], c, d, kl_dialect_lead(c));
    if ((*out)[n].name[0]) n++;
  }
  return n;
}

const struct kl_function *kl_model_callee(const struct kl_model *m,
                                          const struct kl_function *caller, TSNode callee) {
  TSNode name = kl_model_name_of(callee);
  if (kl_node_null(name)) return NULL;
  const char *buf = m->unit->buf;
  uint32_t ns = ts_node_start_byte(name), ne = ts_node_end_byte(name);
  TSNode sc = kl_model_is(callee, "qualified_identifier") ? kl_model_field(callee, "scope")
                                                          : (TSNode){{0}, NULL, NULL};
  if (kl_model_is(sc, "template_type")) sc = kl_model_field(sc, "name");
  char owner[128] = "";
  if (kl_model_is(sc, "type_identifier") || kl_model_is(sc, "namespace_identifier")) {
    uint32_t s = ts_node_start_byte(sc), e = ts_node_end_byte(sc);
    if (e - s < sizeof owner) memcpy(owner, buf + s, e - s), owner[e - s] = '\0';
  }
  /* Follow aliases of the scope (`using gemv_kernel = GEMVKernel<T, ...>;`), a few deep. */
  for (int hop = 0; owner[0] && hop < 4; hop++) {
    char t[sizeof owner];
    bool found = caller && kl_model_alias(caller->aliases, caller->naliases, owner, t, sizeof t);
    if (!found) found = kl_model_alias(m->aliases, m->naliases, owner, t, sizeof t);
    if (!found || !strcmp(t, owner)) break;
    memcpy(owner, t, strlen(t) + 1);
  }
  /* An unqualified call in a member reaches its sibling members first (`load_safe(...)`). */
  if (!owner[0] && kl_node_null(sc) && caller && caller->owner &&
      strlen(caller->owner) < sizeof owner)
    memcpy(owner, caller->owner, strlen(caller->owner) + 1);
  bool is_struct = false;
  for (size_t i = 0; i < m->nfunctions && owner[0]; i++)
    if (m->functions[i].owner && !strcmp(m->functions[i].owner, owner)) is_struct = true;
  const struct kl_function *plain = NULL;
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *f = &m->functions[i];
    /* Every call asks of every function: the first byte sends most away before strlen. */
    if ((ne > ns && f->name[0] != buf[ns]) || strlen(f->name) != ne - ns ||
        memcmp(f->name, buf + ns, ne - ns))
      continue;
    if (is_struct && f->owner && !strcmp(f->owner, owner)) return f;
    if (!f->owner && !plain) plain = f;
  }
  /* A qualified call to a struct this unit defines names only its members. */
  return is_struct && !kl_node_null(sc) ? NULL : plain;
}

bool kl_model_owner_of(const struct kl_model *m, const struct kl_function *caller,
                       const char *type, char *owner, size_t cap) {
  size_t n = strcspn(type ? type : "", "< \t");
  if (!n || n >= cap || cap > 128) return false;
  memcpy(owner, type, n);
  owner[n] = '\0';
  /* Through aliases, as a qualified call's scope. */
  for (int hop = 0; hop < 4; hop++) {
    char t[128];
    bool found = caller && kl_model_alias(caller->aliases, caller->naliases, owner, t, cap);
    if (!found) found = kl_model_alias(m->aliases, m->naliases, owner, t, cap);
    if (!found || !strcmp(t, owner)) break;
    memcpy(owner, t, strlen(t) + 1);
  }
  return true;
}

const struct kl_function *kl_model_method(const struct kl_model *m,
                                          const struct kl_function *caller, const char *type,
                                          const char *name, size_t len) {
  char owner[128];
  if (!kl_model_owner_of(m, caller, type, owner, sizeof owner)) return NULL;
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *f = &m->functions[i];
    if (f->owner && !strcmp(f->owner, owner) && strlen(f->name) == len &&
        !memcmp(f->name, name, len))
      return f;
  }
  return NULL;
}

/* Whether name is kernel, or starts with it when kernel is a prefix. */
static bool kl_model_name_is(const char *name, const char *kernel, bool prefix) {
  return prefix ? !strncmp(name, kernel, strlen(kernel)) : !strcmp(name, kernel);
}

bool kl_model_names(const struct kl_model *m, const char *kernel, bool prefix,
                    const struct kl_function *f) {
  if (!kernel || !f->is_kernel) return false;
  if (kl_model_name_is(f->name, kernel, prefix)) return true;
  for (size_t i = 0; i < m->ninstances; i++)
    if (m->instances[i].host_name && kl_model_name_is(m->instances[i].host_name, kernel, prefix) &&
        !strcmp(m->instances[i].function, f->name))
      return true;
  return false;
}

const char *kl_model_const(const struct kl_model *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nconsts; i++) {
    const struct kl_const *c = &m->consts[i];
    if (strlen(c->name) == len && !memcmp(c->name, name, len)) return c->ambiguous ? NULL : c->text;
  }
  return NULL;
}

TSNode kl_model_const_value(const struct kl_model *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nconsts; i++) {
    const struct kl_const *c = &m->consts[i];
    if (strlen(c->name) == len && !memcmp(c->name, name, len))
      return c->ambiguous ? (TSNode){0} : c->value;
  }
  return (TSNode){0};
}

bool kl_model_const_is_macro(const struct kl_model *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nconsts; i++) {
    const struct kl_const *c = &m->consts[i];
    if (strlen(c->name) == len && !memcmp(c->name, name, len)) return c->macro;
  }
  return false;
}

TSNode kl_model_fmacro(const struct kl_model *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nfmacros; i++) {
    const struct kl_fmacro *f = &m->fmacros[i];
    if (strlen(f->name) == len && !memcmp(f->name, name, len))
      return f->ambiguous ? (TSNode){0} : f->def;
  }
  return (TSNode){0};
}

const struct kl_fconst *kl_model_fconst(const struct kl_model *m, const char *name, size_t len) {
  for (size_t i = 0; i < m->nfconsts; i++)
    if (strlen(m->fconsts[i].name) == len && !memcmp(m->fconsts[i].name, name, len))
      return &m->fconsts[i];
  return NULL;
}

const struct kl_attr *kl_model_attr(const struct kl_function *f, const char *name) {
  for (size_t i = 0; i < f->nattrs; i++)
    if (!strcmp(f->attrs[i].name, name)) return &f->attrs[i];
  return NULL;
}

const struct kl_var *kl_model_var(const struct kl_function *f, const char *name) {
  for (size_t i = f->nlocals; i-- > 0;)
    if (!strcmp(f->locals[i].name, name)) return &f->locals[i];
  for (size_t i = 0; i < f->nparams; i++)
    if (!strcmp(f->params[i].name, name)) return &f->params[i];
  return NULL;
}

struct kl_model_reduction_scan {
  struct kl_arena *a;
  const struct kl_model *m;
  const char *found;
};

static enum kl_walk kl_model_reduction_node(TSNode n, void *ctx) {
  struct kl_model_reduction_scan *scan = ctx;
  if (!kl_model_is(n, "call_expression")) return KL_WALK_DESCEND;
  TSNode fn = kl_model_name_of(kl_model_field(n, "function"));
  if (!kl_model_is(fn, "identifier")) return KL_WALK_DESCEND;
  char *name = kl_dialect_node_text(scan->a, scan->m->unit, fn);
  const struct kl_msl_fn *mf = kl_msl_fn(name);
  if (mf && mf->kind == KL_FN_SIMD_REDUCE && !strncmp(name, "simd_", 5)) {
    scan->found = name;
    return KL_WALK_STOP;
  }
  return KL_WALK_DESCEND;
}

static size_t kl_model_index(const struct kl_model *m, const struct kl_function *f) {
  for (size_t i = 0; f && i < m->nfunctions; i++)
    if (&m->functions[i] == f) return i;
  return SIZE_MAX;
}

struct kl_model_reduction_search {
  struct kl_arena *a;
  const struct kl_model *m;
  uint8_t *done; /* per function: the shallowest depth a search from it found nothing at */
};

/* Depth-first, callees in call order, at most KL_MODEL_MAX_CALL_DEPTH calls deep. What a search
 * from g at depth d finds shrinks as d grows, so a function that found nothing at depth <= d is
 * not searched again: the first reduction in that order is still the one found, and fan-out no
 * longer multiplies the work at every level. */
static const char *kl_model_reduction_at(struct kl_model_reduction_search *s,
                                         const struct kl_function *f, size_t fi, int depth) {
  if (!f || kl_node_null(f->body) || depth > KL_MODEL_MAX_CALL_DEPTH) return NULL;
  if (fi != SIZE_MAX && s->done[fi] <= depth) return NULL;
  struct kl_model_reduction_scan scan = {s->a, s->m, NULL};
  kl_dialect_walk(f->body, kl_model_reduction_node, &scan, NULL);
  const char *found = scan.found;
  for (size_t i = 0; !found && i < f->ncallees; i++) {
    size_t gi = f->callee_index[i];
    const struct kl_function *g = &s->m->functions[gi];
    if (g != f) found = kl_model_reduction_at(s, g, gi, depth + 1);
  }
  if (!found && fi != SIZE_MAX && s->done[fi] > depth) s->done[fi] = (uint8_t)depth;
  return found;
}

const char *kl_model_simd_reduction(struct kl_arena *a, const struct kl_model *m,
                                    const struct kl_function *f) {
  struct kl_model_reduction_search s = {a, m, kl_arena_xmalloc(m->nfunctions + 1)};
  memset(s.done, UINT8_MAX, m->nfunctions + 1);
  const char *found = kl_model_reduction_at(&s, f, kl_model_index(m, f), 0);
  free(s.done);
  return found;
}

const char *kl_model_addrspace_name(enum kl_addrspace as) {
  switch (as) {
  case KL_AS_DEVICE:
    return "device";
  case KL_AS_CONSTANT:
    return "constant";
  case KL_AS_THREADGROUP:
    return "threadgroup";
  case KL_AS_THREAD:
    return "thread";
  case KL_AS_THREADGROUP_IMAGEBLOCK:
    return "threadgroup_imageblock";
  case KL_AS_RAY_DATA:
    return "ray_data";
  case KL_AS_OBJECT_DATA:
    return "object_data";
  case KL_AS_NONE:
    break;
  }
  return "";
}
