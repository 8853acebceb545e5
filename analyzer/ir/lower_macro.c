/* Names and calls that are the file's macros (`#define tid lid.x`, `#define IDX(i) (i * 4 +
 * lid)`), lowered as what they expand to. The grammar layer expands a file's macros only when
 * its text as written does not parse, so in a file that parses a macro use is a plain name or
 * call in the tree; without this, a thread index spelled through a macro would be an opaque,
 * uniform symbol, and races and divergent branches through it would go unseen. A body is parsed
 * on its own (once per kernel lowering) and lowered in place of the use; every instruction it
 * makes is placed at the use (kl_lw_at), so the passes never see a node of the body's tree. */
#include <stdlib.h>
#include <string.h>

#include "analyzer/ir/lower_int.h"
#include "grammar/dialect.h"

enum { KL_LW_MAX_MX = 8 }; /* macro uses lowered inside one another */

/* Whether a macro of this name is being expanded (the preprocessor's hide set). */
static bool kl_lw_mx_active(const struct kl_lower *L, const char *name, size_t len) {
  for (uint32_t i = 0; i < L->nmx; i++)
    if (L->mx[i].len == len && !memcmp(L->mx[i].name, name, len)) return true;
  return false;
}

/* The expression a macro body is, parsed on its own (cached by the body's text), or NULL. A body
 * that is not one expression (statements, `#` or `##`, a lambda) is left alone. */
static const struct kl_lw_mtree *kl_lw_mx_parse(struct kl_lower *L, const char *text, size_t n) {
  struct kl_lw_mcache *c = L->mc;
  for (uint32_t i = 0; i < c->n; i++)
    if (!strcmp(c->t[i].text, text)) return kl_node_null(c->t[i].expr) ? NULL : &c->t[i];
  KL_VEC_PUSH(c->a, c->t, c->n, c->cap);
  struct kl_lw_mtree *t = &c->t[c->n++];
  memset(t, 0, sizeof *t);
  t->text = kl_arena_strdup(c->a, text);
  const char *cm = strstr(text, "//"); /* `#define TID lid // the thread`: the comment is no part */
  if (cm && (size_t)(cm - text) < n) n = (size_t)(cm - text);
  while (n && strchr(" \t\r\n", text[n - 1])) n--;
  if (n && text[n - 1] == ';') n--; /* a statement macro used as `SYNC;` */
  bool plain = n > 0;
  for (size_t i = 0; plain && i < n; i++)
    if (text[i] == '#' || text[i] == ';' || text[i] == '{' ||
        (text[i] == '[' && i + 1 < n && strchr("&=]", text[i + 1])))
      plain = false;
  if (!plain) return NULL;
  static const char pre[] = "void kl_m(){(", post[] = ");}";
  size_t len = sizeof pre - 1 + n + sizeof post - 1;
  t->buf = kl_arena_alloc(c->a, len + 1);
  memcpy(t->buf, pre, sizeof pre - 1);
  memcpy(t->buf + sizeof pre - 1, text, n);
  memcpy(t->buf + sizeof pre - 1 + n, post, sizeof post);
  if (!c->parser) {
    c->parser = ts_parser_new();
    ts_parser_set_language(c->parser, kl_dialect_cpp());
    ts_parser_set_timeout_micros(c->parser, 100000);
  }
  t->tree = ts_parser_parse_string(c->parser, NULL, t->buf, (uint32_t)len);
  if (!t->tree) return NULL;
  TSNode root = ts_tree_root_node(t->tree);
  if (ts_node_has_error(root) || ts_node_named_child_count(root) != 1) return NULL;
  TSNode body = kl_node_field(kl_node_named_child(root, 0), "body");
  if (kl_node_null(body) || ts_node_named_child_count(body) != 1) return NULL;
  TSNode st = kl_node_named_child(body, 0);
  if (!kl_node_is_kind(st, KL_KIND_EXPRESSION_STATEMENT) || ts_node_named_child_count(st) != 1)
    return NULL;
  TSNode par = kl_node_named_child(st, 0);
  if (!kl_node_is_kind(par, KL_KIND_PARENTHESIZED_EXPRESSION) ||
      ts_node_named_child_count(par) != 1)
    return NULL;
  t->expr = kl_node_named_child(par, 0);
  return t;
}

/* Whether n (unparenthesised) can have an address: a name, an element, a field, `*p`. */
static bool kl_lw_mx_lvalue(TSNode n) {
  while (kl_node_is_kind(n, KL_KIND_PARENTHESIZED_EXPRESSION) && ts_node_named_child_count(n) == 1)
    n = kl_node_named_child(n, 0);
  return kl_node_is_kind(n, KL_KIND_IDENTIFIER) ||
         kl_node_is_kind(n, KL_KIND_SUBSCRIPT_EXPRESSION) ||
         kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION) ||
         kl_node_is_kind(n, KL_KIND_POINTER_EXPRESSION);
}

/* Lower expression e (a macro body, or an argument) as a value or, want_addr, an address. */
static struct kl_rv kl_lw_mx_lower(struct kl_lower *L, TSNode e, bool want_addr, bool *ok) {
  if (ok) *ok = false;
  if (!want_addr) return kl_lw_expr(L, e);
  struct kl_rv none = {0};
  if (!kl_lw_mx_lvalue(e)) return none; /* the caller takes its value instead */
  bool k = false;
  struct kl_rv r = kl_lw_addr(L, e, &k);
  if (ok) *ok = k;
  return r;
}

/* Lower the body t of macro name[0, len) in place of use. */
static struct kl_rv kl_lw_mx_run(struct kl_lower *L, const struct kl_lw_mtree *t, const char *name,
                                 size_t len, TSNode use, TSNode params, const TSNode *args,
                                 uint32_t nargs, bool want_addr, bool *ok) {
  KL_VEC_PUSH(L->a, L->mx, L->nmx, L->cap_mx);
  L->mx[L->nmx++] = (struct kl_lw_mx){name, (uint32_t)len, use, t->tree, params, args, nargs};
  struct kl_rv r = kl_lw_mx_lower(L, t->expr, want_addr, ok);
  L->nmx--;
  return r;
}

/* A parameter of the innermost expansion whose body n is in: its argument, lowered where the
 * call is, outside that expansion (arguments are expanded before they are substituted). */
static bool kl_lw_mx_param(struct kl_lower *L, TSNode n, const char *name, size_t len,
                           bool want_addr, bool *ok, struct kl_rv *out) {
  for (uint32_t i = L->nmx; i-- > 0;) {
    struct kl_lw_mx *x = &L->mx[i];
    if (x->tree != n.tree) continue;
    if (kl_node_null(x->params)) return false;
    uint32_t k = ts_node_named_child_count(x->params), j = 0;
    for (uint32_t p = 0; p < k; p++) {
      TSNode pn = kl_node_named_child(x->params, p);
      if (!kl_node_is_kind(pn, KL_KIND_IDENTIFIER)) continue;
      const char *pt = kl_lw_text(L, pn);
      if (strlen(pt) == len && !memcmp(pt, name, len)) {
        if (j >= x->nargs) return false;
        uint32_t keep = L->nmx;
        struct kl_lw_mx *saved = kl_arena_alloc(L->a, (keep - i) * sizeof *saved);
        memcpy(saved, &L->mx[i], (keep - i) * sizeof *saved);
        TSNode arg = x->args[j];
        L->nmx = i;
        *out = kl_lw_mx_lower(L, arg, want_addr, ok);
        memcpy(&L->mx[i], saved, (keep - i) * sizeof *saved);
        L->nmx = keep;
        return true;
      }
      j++;
    }
    return false;
  }
  return false;
}

bool kl_lw_macro_name(struct kl_lower *L, TSNode n, bool want_addr, bool *ok, struct kl_rv *out) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  const char *name = kl_lw_src(L, n) + s;
  size_t len = e - s;
  if (L->nmx && n.tree != L->u->tree &&
      kl_lw_mx_param(L, n, name, len, want_addr, ok, out))
    return true;
  if (L->nmx >= KL_LW_MAX_MX || kl_lw_mx_active(L, name, len)) return false;
  /* The frame's own `#define`s, then the file's (not one that is an enumerator or a declared
   * constant, nor one defined two ways). */
  const struct kl_lframe *fr = &L->frames[L->nframes - 1];
  const char *text = NULL;
  for (size_t i = fr->nmacros; i-- > 0 && !text;)
    if (strlen(fr->macros[i].name) == len && !memcmp(fr->macros[i].name, name, len)) {
      text = fr->macros[i].text;
      if (!text || !*text) return false; /* #undef */
    }
  if (!text && kl_model_const_is_macro(L->m, name, len)) text = kl_model_const(L->m, name, len);
  if (!text) return false;
  const struct kl_lw_mtree *t = kl_lw_mx_parse(L, text, strlen(text));
  if (!t) return false;
  char *nm = kl_arena_strndup(L->a, name, len);
  *out = kl_lw_mx_run(L, t, nm, len, n, (TSNode){0}, NULL, 0, want_addr, ok);
  return true;
}

bool kl_lw_macro_call(struct kl_lower *L, TSNode call, bool want_addr, bool *ok,
                      struct kl_rv *out) {
  TSNode callee = kl_node_field(call, "function"), al = kl_node_field(call, "arguments");
  if (!kl_node_is_kind(callee, KL_KIND_IDENTIFIER) || L->nmx >= KL_LW_MAX_MX ||
      kl_node_null(al))
    return false;
  uint32_t s = ts_node_start_byte(callee), e = ts_node_end_byte(callee);
  const char *name = kl_lw_src(L, callee) + s;
  size_t len = e - s;
  if (kl_lw_mx_active(L, name, len) || kl_lw_lookup(L, name, (uint32_t)len) >= 0) return false;
  TSNode def = kl_model_fmacro(L->m, name, len);
  if (kl_node_null(def)) return false;
  TSNode params = kl_node_field(def, "parameters"), value = kl_node_field(def, "value");
  if (kl_node_null(params) || kl_node_null(value)) return false;
  uint32_t np = 0, k = ts_node_named_child_count(params);
  for (uint32_t i = 0; i < k; i++) {
    TSNode p = kl_node_named_child(params, i);
    if (!kl_node_is_kind(p, KL_KIND_IDENTIFIER)) return false; /* `...` */
    np++;
  }
  uint32_t na = ts_node_named_child_count(al), nargs = 0;
  TSNode *args = kl_arena_alloc(L->a, (na + 1) * sizeof *args);
  for (uint32_t i = 0; i < na; i++) {
    TSNode c = kl_node_named_child(al, i);
    if (!kl_node_is_kind(c, KL_KIND_COMMENT)) args[nargs++] = c;
  }
  if (np != nargs) return false;
  const char *text = kl_lw_text(L, value);
  const struct kl_lw_mtree *t = kl_lw_mx_parse(L, text, strlen(text));
  if (!t) return false;
  char *nm = kl_arena_strndup(L->a, name, len);
  *out = kl_lw_mx_run(L, t, nm, len, call, params, args, nargs, want_addr, ok);
  return true;
}

void kl_lw_macro_free(struct kl_lw_mcache *c) {
  /* kl_node_tree_delete: the node tables must not answer for a later tree at the same address. */
  for (uint32_t i = 0; i < c->n; i++)
    if (c->t[i].tree) kl_node_tree_delete(c->t[i].tree);
  c->n = 0;
  if (c->parser) ts_parser_delete(c->parser);
  c->parser = NULL;
}
