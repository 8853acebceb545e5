/* The evaluator of Python values (see pyval.h). Values are followed through names the way
 * Python scopes them (py.h); a string is built into a buffer that maps each byte back to the
 * file, so a finding in an embedded kernel points into the .py file. */
#include "analyzer/input/pyval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/node.h"
#include "grammar/lex.h"

/* Bytes [s, e) of another buffer, with their map into the file. */
static void kl_py_buf_copy(struct kl_py_buf *b, const struct kl_py_buf *o, uint32_t s, uint32_t e) {
  if (e <= s) return;
  uint32_t base = b->n;
  for (size_t i = 0; i < o->map.n; i++) {
    const struct kl_offmap_seg *g = &o->map.segs[i];
    uint32_t lo = g->buf > s ? g->buf : s, hi = g->buf + g->buf_len < e ? g->buf + g->buf_len : e;
    if (lo >= hi) continue;
    if (g->buf_len == g->file_len)
      kl_offmap_add(&b->map, base + lo - s, hi - lo, g->file + (lo - g->buf), hi - lo);
    else
      kl_offmap_add(&b->map, base + lo - s, hi - lo, g->file, g->file_len);
  }
  kl_py_buf_raw(b, o->p + s, e - s);
}

/* Whether only blanks follow, up to the end of the line (or of the text). */
static bool kl_py_rest_blank(const char *t, uint32_t n) {
  for (uint32_t i = 0; i < n && t[i] != '\n'; i++)
    if (t[i] != ' ' && t[i] != '\t' && t[i] != '\r') return false;
  return true;
}

/* A field whose value is not known, at file bytes [fs, fe): an opaque identifier, uniform and of
 * no known type. A field alone on its line stands for generated statements, and becomes a comment
 * (an identifier there would glue onto the next statement as its type). after/nafter: the text
 * that follows the field. */
static bool kl_py_placeholder(struct kl_py *p, struct kl_py_buf *b, uint32_t fs, uint32_t fe,
                              const char *after, uint32_t nafter) {
  /* A unit of thousands of opaque fields is generated code, not a kernel written by hand. */
  if (!b->skeleton || p->nfields >= KL_PY_MAX_FIELDS) return false;
  if (fe < fs) fe = fs;
  uint32_t i = b->n;
  while (i > 0 && (b->p[i - 1] == ' ' || b->p[i - 1] == '\t')) i--;
  /* Statements: after `;`, `{` or `}` on its line, or first on a line that does not continue an
   * expression (`max(v,` above it does). */
  bool alone = false;
  if (!b->inner && kl_py_rest_blank(after, nafter)) {
    if (i > 0 && strchr(";{}", b->p[i - 1])) {
      alone = true;
    } else if (i == 0 || b->p[i - 1] == '\n') {
      uint32_t j = i;
      while (j > 0 && strchr(" \t\r\n", b->p[j - 1])) j--;
      alone = j == 0 || !strchr(",(+-*/%=<>&|?:[!^~", b->p[j - 1]);
    }
  }
  KL_VEC_PUSH(p->a, p->fields, p->nfields, p->cap_fields);
  struct kl_py_field *f = &p->fields[p->nfields];
  f->span = kl_diag_span(p->src, fs, fe);
  /* Quoted on one line: a field's expression can span several. */
  uint32_t shown = fe - fs > KL_PY_MAX_SHOWN ? KL_PY_MAX_SHOWN : fe - fs;
  char *q = kl_arena_strndup(p->a, p->t + fs, shown);
  for (char *c = q; *c; c++)
    if (*c == '\n' || *c == '\r' || *c == '\t') *c = ' ';
  f->text = fe <= fs                 ? "{...}"
            : fe - fs > KL_PY_MAX_SHOWN ? kl_arena_printf(p->a, "%s...", q)
                                        : q;
  /* The text of its line so far: a condition around it makes it part of a guard. */
  uint32_t ls = b->n;
  while (ls > 0 && b->p[ls - 1] != '\n') ls--;
  const char *line = b->n ? kl_arena_strndup(p->a, b->p + ls, b->n - ls) : "";
  f->control = alone || strstr(line, "if") || strstr(line, "while") || strchr(line, '?');
  const char *id = kl_arena_printf(p->a, alone ? "/*__kl_field_%zu*/" : "__kl_field_%zu",
                                   p->nfields);
  p->nfields++;
  kl_py_buf_collapsed(b, id, (uint32_t)strlen(id), fs, fe - fs);
  return true;
}

/* Which branch of a conditional whose test is unknown this build takes (0 the first, 1 the
 * else); -1 when the build has used up its choices and the value is opaque. */
static int kl_py_choose(struct kl_py *p, TSNode test) {
  const char *text = kl_pyval_short(p, test, 32);
  /* One test decides every fragment it guards: `x if has_mask else y` twice is one choice. */
  for (unsigned j = 0; j < p->nchoices && j < KL_PY_MAX_CHOICES; j++)
    if (!strcmp(p->choice_text[j], text)) return j < p->nbits ? (int)((p->choice >> j) & 1u) : -1;
  unsigned i = p->nchoices++;
  if (i < KL_PY_MAX_CHOICES) {
    p->choice_text[i] = text;
    p->choice_node[i] = test;
    p->choice_env[i] = p->env;
  }
  if (i < p->nbits) return (int)((p->choice >> i) & 1u);
  /* Past the combinations built: opaque inside a field, else the first alternative. */
  return p->first_alt ? 0 : -1;
}

static int kl_py_truth(struct kl_py *p, TSNode n, int depth);

/* The integer value of n when it is known. */
static bool kl_py_int(struct kl_py *p, TSNode n, int depth, int64_t *v) {
  n = kl_py_unparen(n);
  if (kl_py_is(n, "string") || kl_py_is(n, "concatenated_string")) return false;
  return kl_dx_value(kl_pyval_dx(p, n, depth + 1), v);
}

/* A string constant under the bindings in force (no opaque fields), or NULL. */
static const char *kl_py_string_at(struct kl_py *p, TSNode n, int depth);

static const char *kl_py_known_string(struct kl_py *p, TSNode n, int depth) {
  size_t nf = p->nfields;
  unsigned nc = p->nchoices;
  const char *v = kl_py_string_at(p, n, depth + 1);
  if (!v) {
    p->nfields = nf;
    p->nchoices = nc;
  }
  return v;
}

/* Truth of a test: 1, 0, or -1 when not known. */
static int kl_py_truth(struct kl_py *p, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (kl_node_null(n) || depth > KL_PY_MAX_DEPTH || p->budget == 0) return -1;
  p->budget--;
  const char *ty = ts_node_type(n);
  if (!strcmp(ty, "true")) return 1;
  if (!strcmp(ty, "false") || !strcmp(ty, "none")) return 0;
  if (!strcmp(ty, "identifier")) {
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, n);
    if (lv) return kl_node_null(lv->node) ? lv->value != 0 : kl_py_truth(p, lv->node, depth + 1);
    TSNode v = kl_py_resolve(p, n);
    return kl_py_is(v, "identifier") ? -1 : kl_py_truth(p, v, depth + 1);
  }
  if (!strcmp(ty, "not_operator")) {
    int t = kl_py_truth(p, kl_py_field(n, "argument"), depth + 1);
    return t < 0 ? -1 : !t;
  }
  if (!strcmp(ty, "boolean_operator")) {
    bool conj = kl_py_is(kl_py_field(n, "operator"), "and");
    int l = kl_py_truth(p, kl_py_field(n, "left"), depth + 1);
    if (l == (conj ? 0 : 1)) return l;
    int r = kl_py_truth(p, kl_py_field(n, "right"), depth + 1);
    if (r == (conj ? 0 : 1)) return r;
    return l < 0 || r < 0 ? -1 : r;
  }
  if (!strcmp(ty, "comparison_operator")) {
    if (ts_node_named_child_count(n) != 2 || ts_node_child_count(n) != 3) return -1;
    TSNode l = kl_node_named_child(n, 0), r = kl_node_named_child(n, 1);
    const char *op = ts_node_type(ts_node_child(n, 1));
    int64_t x, y;
    if (kl_py_int(p, l, depth, &x) && kl_py_int(p, r, depth, &y)) {
      if (!strcmp(op, "==")) return x == y;
      if (!strcmp(op, "!=")) return x != y;
      if (!strcmp(op, "<")) return x < y;
      if (!strcmp(op, "<=")) return x <= y;
      if (!strcmp(op, ">")) return x > y;
      if (!strcmp(op, ">=")) return x >= y;
      return -1;
    }
    if (strcmp(op, "==") && strcmp(op, "!=")) return -1;
    const char *sx = kl_py_known_string(p, l, depth);
    const char *sy = sx ? kl_py_known_string(p, r, depth) : NULL;
    if (!sx || !sy) return -1;
    return !strcmp(sx, sy) == !strcmp(op, "==");
  }
  int64_t v;
  if (!strcmp(ty, "integer") && kl_py_int(p, n, depth, &v)) return v != 0;
  if (!strcmp(ty, "string") || !strcmp(ty, "concatenated_string")) {
    const char *s = kl_py_known_string(p, n, depth);
    return s ? *s != '\0' : -1;
  }
  return -1;
}

/* The element `x[k]` stands for when x is a dict, list or tuple written out (through names) and
 * k a known string or integer: the value of the pair whose key is k (a dict with `**` spread
 * in has keys kernlint cannot see), or the k-th item; null otherwise. */
static TSNode kl_py_element(struct kl_py *p, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (!kl_py_is(n, "subscript") || depth > KL_PY_MAX_DEPTH) return kl_py_null;
  TSNode base = kl_py_unparen(kl_py_field(n, "value"));
  /* A table the file changes anywhere (`T[k] = v`, `T += ...`, unpacked into) may not hold what
   * its literal says where it is read: a function can run after the change. */
  if (kl_py_is(base, "identifier")) {
    const char *name = kl_py_text(p, base);
    for (size_t i = 0; i < p->nasgs; i++)
      if (kl_node_null(p->asgs[i].value) && !strcmp(p->asgs[i].target, name)) return kl_py_null;
  }
  TSNode c = kl_py_resolve(p, base);
  TSNode key = kl_py_field(n, "subscript");
  if (kl_node_null(key) || kl_py_is(key, "slice")) return kl_py_null;
  int64_t ki = 0;
  const char *ks = NULL;
  bool kint = kl_py_int(p, key, depth, &ki);
  if (!kint && !(ks = kl_py_known_string(p, key, depth))) return kl_py_null;
  uint32_t m = kl_node_null(c) ? 0 : ts_node_named_child_count(c);
  if (kl_py_is(c, "dictionary")) {
    TSNode found = kl_py_null;
    for (uint32_t i = 0; i < m; i++) {
      TSNode pr = kl_node_named_child(c, i);
      if (kl_py_is(pr, "comment")) continue;
      if (!kl_py_is(pr, "pair")) return kl_py_null;
      TSNode k = kl_py_field(pr, "key");
      int64_t vi;
      const char *vs;
      bool same = kint ? kl_py_int(p, k, depth, &vi) && vi == ki
                       : (vs = kl_py_known_string(p, k, depth)) && !strcmp(vs, ks);
      if (same) found = kl_py_field(pr, "value"); /* the last of repeated keys wins */
    }
    return found;
  }
  if (!kint || (!kl_py_is(c, "list") && !kl_py_is(c, "tuple"))) return kl_py_null;
  TSNode items[256];
  uint32_t ni = 0;
  for (uint32_t i = 0; i < m && ni < 256; i++) {
    TSNode e = kl_node_named_child(c, i);
    if (kl_py_is(e, "comment")) continue;
    if (kl_py_is(e, "list_splat")) return kl_py_null;
    items[ni++] = e;
  }
  if (ni == 256 && m > 256) return kl_py_null;
  if (ki < 0) ki += ni;
  return ki >= 0 && ki < ni ? items[ki] : kl_py_null;
}

/* str() of a value into b: a string, an integer, a bool; false (b untouched but for why) when it
 * is not known. The text of a number stands for the file range [fs, fe). */
bool kl_pyval_value(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth, uint32_t fs,
                    uint32_t fe) {
  TSNode v = kl_py_unparen(n);
  for (int i = 0; i < KL_PY_MAX_DEPTH; i++) {
    TSNode w;
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, v);
    if (lv && kl_node_null(lv->node)) {
      const char *t = kl_arena_printf(p->a, "%lld", (long long)lv->value);
      kl_py_buf_collapsed(b, t, (uint32_t)strlen(t), fs, fe - fs);
      return true;
    }
    if (lv) {
      w = lv->node;
    } else if (kl_py_is(v, "identifier")) {
      if (!kl_py_lookup(p, kl_py_text(p, v), v, &w)) break;
    } else if (kl_py_is(v, "subscript")) {
      w = kl_py_element(p, v, depth + 1);
      if (kl_node_null(w)) break;
    } else {
      break;
    }
    v = kl_py_unparen(w);
  }
  const char *ty = kl_node_null(v) ? "" : ts_node_type(v);
  const char *text = NULL;
  int64_t k;
  if (!strcmp(ty, "true") || !strcmp(ty, "false") || !strcmp(ty, "none")) {
    text = ty[0] == 't' ? "True" : ty[0] == 'f' ? "False" : "None";
  } else if (!strcmp(ty, "float")) {
    char *f = kl_py_text(p, v), *o = f;
    for (char *c = f; *c; c++)
      if (*c != '_') *o++ = *c;
    *o = '\0';
    text = f;
  } else if ((!strcmp(ty, "integer") || !strcmp(ty, "unary_operator") ||
              !strcmp(ty, "binary_operator") || !strcmp(ty, "call")) &&
             kl_py_int(p, v, depth, &k)) {
    text = kl_arena_printf(p->a, "%lld", (long long)k);
  } else if (!strcmp(ty, "call")) {
    TSNode fn = kl_py_field(v, "function");
    TSNode args = kl_py_field(v, "arguments");
    if (kl_py_text_is(p, fn, "str") && !kl_node_null(args) && ts_node_named_child_count(args) == 1)
      return kl_pyval_value(p, b, kl_node_named_child(args, 0), depth + 1, fs, fe);
  }
  if (text) {
    kl_py_buf_collapsed(b, text, (uint32_t)strlen(text), fs, fe - fs);
    return true;
  }
  return kl_pyval_string(p, b, v, depth + 1);
}

/* How a value becomes text where it is put: str(), an integer conversion (`%d`, `{:d}`: True is
 * 1), or a format kernlint does not apply (the value is then opaque). */
enum kl_py_conv { KL_PY_CONV_NONE, KL_PY_CONV_STR, KL_PY_CONV_INT };

/* One value put into a text (an f-string field, a `.format()` or `%` argument, a `.replace()`
 * replacement), at file bytes [fs, fe): its text when known, else an opaque field when the
 * build allows one. */
static bool kl_py_put(struct kl_py *p, struct kl_py_buf *b, TSNode n, enum kl_py_conv conv,
                      int depth, uint32_t fs, uint32_t fe, const char *after, uint32_t nafter,
                      const char *what) {
  struct kl_py_buf v;
  kl_py_buf_init(&v, p->a);
  v.skeleton = b->skeleton;
  v.inner = true;
  size_t nf = p->nfields;
  unsigned nc = p->nchoices;
  int64_t k;
  if (conv == KL_PY_CONV_INT && !kl_node_null(n) && kl_py_int(p, n, depth, &k)) {
    const char *t = kl_arena_printf(p->a, "%lld", (long long)k);
    kl_py_buf_collapsed(b, t, (uint32_t)strlen(t), fs, fe - fs);
    return true;
  }
  if (conv == KL_PY_CONV_STR && !kl_node_null(n) && p->text_budget &&
      kl_pyval_value(p, &v, n, depth, fs, fe)) {
    /* Past the budget a value is not known, as if it could not be read. */
    size_t cost = v.n + v.map.n * sizeof *v.map.segs;
    if (cost <= p->text_budget) {
      p->text_budget -= (uint32_t)cost;
      kl_py_buf_append(b, &v);
      return true;
    }
    p->text_budget = 0;
  }
  p->nfields = nf;
  p->nchoices = nc;
  if (kl_py_placeholder(p, b, fs, fe, after, nafter)) return true;
  return kl_py_fail(b, kl_node_null(n) ? p->root : n, what);
}

static bool kl_py_string_lit_in(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth);

/* A string literal's text. One whose fields reach back to itself under the same bindings
 * (`s = t = f"{t}..."`) has none: read, it would double at every turn until the budgets ran out. */
static bool kl_py_string_lit(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  for (int i = 0; i < p->nin_text; i++)
    if (p->in_text[i].id == n.id && p->in_text[i].env == p->env)
      return kl_py_fail(b, n, "a string that contains itself");
  if (p->nin_text > KL_PY_MAX_DEPTH) return kl_py_fail(b, n, "a chain of names too long to follow");
  p->in_text[p->nin_text].id = n.id;
  p->in_text[p->nin_text++].env = p->env;
  bool ok = kl_py_string_lit_in(p, b, n, depth);
  p->nin_text--;
  return ok;
}

static bool kl_py_string_lit_in(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  TSNode start = kl_py_null, end = kl_py_null;
  uint32_t k = ts_node_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(n, i);
    if (kl_py_is(c, "string_start"))
      start = c;
    else if (kl_py_is(c, "string_end"))
      end = c;
  }
  if (kl_node_null(start) || kl_node_null(end)) return kl_py_fail(b, n, "a broken string");
  bool raw = false, fstr = false;
  for (uint32_t i = ts_node_start_byte(start); i < ts_node_end_byte(start); i++) {
    char c = p->t[i];
    if (c == 'r' || c == 'R') raw = true;
    if (c == 'f' || c == 'F') fstr = true;
    if (c == 'b' || c == 'B') return kl_py_fail(b, n, "a bytes literal");
  }
  uint32_t run = ts_node_end_byte(start), stop = ts_node_start_byte(end);
  /* Text between fields is the file's; each field is its value, or opaque. */
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(n, i);
    if (!kl_py_is(c, "interpolation")) continue;
    uint32_t fs = ts_node_start_byte(c), fe = ts_node_end_byte(c);
    kl_py_decode(b, p->t, run, fs, raw, fstr);
    TSNode conv = kl_py_field(c, "type_conversion"), spec = kl_py_field(c, "format_specifier");
    enum kl_py_conv how = !kl_node_null(conv) && !kl_py_text_is(p, conv, "!s") ? KL_PY_CONV_NONE
                          : kl_node_null(spec) || kl_py_text_is(p, spec, ":")  ? KL_PY_CONV_STR
                          : kl_py_text_is(p, spec, ":d")                       ? KL_PY_CONV_INT
                                                                               : KL_PY_CONV_NONE;
    if (!kl_py_put(p, b, kl_py_field(c, "expression"), how, depth, fs, fe, p->t + fe,
                   stop > fe ? stop - fe : 0, "an f-string with replacement fields"))
      return false;
    run = fe;
  }
  kl_py_decode(b, p->t, run, stop, raw, fstr);
  return true;
}

/* Source text as written, on one line and cut at max bytes: what a message can quote. */
const char *kl_pyval_short(struct kl_py *p, TSNode n, uint32_t max) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  char *q = kl_arena_strndup(p->a, p->t + s, e > s + max ? max : e - s);
  char *w = q;
  for (const char *r = q; *r; r++) {
    bool sp = *r == '\n' || *r == '\r' || *r == '\t' || *r == ' ';
    if (sp && (w == q || w[-1] == ' ')) continue;
    *w++ = sp ? ' ' : *r;
  }
  while (w > q && w[-1] == ' ') w--;
  *w = '\0';
  if (e > s + max) {
    while (w > q && ((unsigned char)w[-1] & 0xC0) == 0x80) w--;
    if (w > q) w--;
    return kl_arena_printf(p->a, "%.*s...", (int)(w - q), q);
  }
  return q;
}

/* Whether n adds to list `name`: name.append/extend/insert(...), name += [...]. */
static bool kl_py_grows(struct kl_py *p, TSNode n, const char *name) {
  if (kl_py_is(n, "augmented_assignment")) return kl_py_text_is(p, kl_py_field(n, "left"), name);
  if (!kl_py_is(n, "call")) return false;
  TSNode fn = kl_py_field(n, "function");
  if (!kl_py_is(fn, "attribute") || !kl_py_text_is(p, kl_py_field(fn, "object"), name))
    return false;
  TSNode a = kl_py_field(fn, "attribute");
  return kl_py_text_is(p, a, "append") || kl_py_text_is(p, a, "extend") ||
         kl_py_text_is(p, a, "insert");
}

/* The loop of scope s in which list `name` grows, searched depth-first under n. */
static TSNode kl_py_growing_loop(struct kl_py *p, TSNode n, TSNode s, const char *name, TSNode loop,
                                 int depth) {
  if (depth > 64) return kl_py_null;
  if (!kl_node_null(loop) && kl_py_grows(p, n, name)) return loop;
  if (kl_py_is(n, "function_definition") || kl_py_is(n, "class_definition")) return kl_py_null;
  if (kl_py_is(n, "for_statement") || kl_py_is(n, "while_statement")) loop = n;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode r = kl_py_growing_loop(p, kl_node_named_child(n, i), s, name, loop, depth + 1);
    if (!kl_node_null(r)) return r;
  }
  return kl_py_null;
}

/* The loop, before identifier `at` in its scope, in which the list or string it names grows. */
static TSNode kl_py_built_by_loop(struct kl_py *p, TSNode at) {
  const char *name = kl_py_text(p, at);
  TSNode s = kl_py_scope(p, at);
  TSNode body = ts_node_eq(s, p->root) ? s : kl_py_field(s, "body");
  uint32_t k = kl_node_null(body) ? 0 : ts_node_named_child_count(body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(body, i);
    if (ts_node_start_byte(c) >= ts_node_start_byte(at)) break;
    TSNode loop = kl_py_growing_loop(p, c, s, name, kl_py_null, 0);
    if (!kl_node_null(loop)) return loop;
  }
  return kl_py_null;
}

/* Whether n, or anything under it (not a nested function or class), binds or grows `name`. */
static bool kl_py_touches(struct kl_py *p, TSNode n, const char *name, int depth) {
  if (kl_node_null(n) || depth > 64) return depth > 64;
  if (kl_py_is(n, "function_definition") || kl_py_is(n, "class_definition")) return false;
  if (kl_py_grows(p, n, name)) return true;
  if (kl_py_is(n, "assignment") || kl_py_is(n, "for_statement")) {
    TSNode left = kl_py_field(n, "left");
    if (kl_py_text_is(p, left, name)) return true;
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_py_touches(p, kl_node_named_child(n, i), name, depth + 1)) return true;
  return false;
}

/* The one statement an expression statement holds, else null. */
static TSNode kl_py_stmt_expr(TSNode c) {
  if (!kl_py_is(c, "expression_statement") || ts_node_named_child_count(c) != 1) return kl_py_null;
  return kl_node_named_child(c, 0);
}

/* The values a loop takes from iterable n when kernlint can list them: range() of known
 * integers (ints[]), or the items of a list or tuple written out (items[]). Returns how many
 * (at most KL_PY_MAX_ITERS), or -1. */
static int kl_py_iter(struct kl_py *p, TSNode n, int depth, int64_t *ints, TSNode *items) {
  n = kl_py_resolve(p, n);
  if (kl_py_is(n, "list") || kl_py_is(n, "tuple")) {
    int k = 0;
    uint32_t m = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < m; i++) {
      TSNode e = kl_node_named_child(n, i);
      if (kl_py_is(e, "comment")) continue;
      if (k == KL_PY_MAX_ITERS || kl_py_is(e, "list_splat")) return -1;
      ints[k] = 0;
      items[k++] = e;
    }
    return k;
  }
  if (!kl_py_is(n, "call") || !kl_py_text_is(p, kl_py_field(n, "function"), "range")) return -1;
  TSNode args = kl_py_field(n, "arguments");
  uint32_t na = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  int64_t a[3] = {0, 0, 1};
  if (na < 1 || na > 3) return -1;
  for (uint32_t i = 0; i < na; i++) {
    TSNode x = kl_node_named_child(args, i);
    if (kl_py_is(x, "keyword_argument") || !kl_py_int(p, x, depth, &a[na == 1 ? 1 : i])) return -1;
  }
  if (a[2] == 0) return -1;
  int k = 0;
  for (int64_t v = a[0]; a[2] > 0 ? v < a[1] : v > a[1]; v += a[2]) {
    if (k == KL_PY_MAX_ITERS) return -1;
    items[k] = kl_py_null;
    ints[k++] = v;
    /* The next value would not fit: range() stops before it anyway. */
    if (a[2] > 0 ? v > INT64_MAX - a[2] : v < INT64_MIN - a[2]) break;
  }
  return k;
}

/* Whether n holds a statement that leaves an iteration or the function early. */
static bool kl_py_jumps(TSNode n, int depth) {
  if (kl_node_null(n) || depth > 64) return depth > 64;
  if (kl_py_is(n, "break_statement") || kl_py_is(n, "continue_statement") ||
      kl_py_is(n, "return_statement") || kl_py_is(n, "raise_statement"))
    return true;
  if (kl_py_is(n, "function_definition") || kl_py_is(n, "class_definition")) return false;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_py_jumps(kl_node_named_child(n, i), depth + 1)) return true;
  return false;
}

/* A name built by the statements of its scope, read in order up to identifier `at`: a string
 * (`src = "..."`, then `src += f"..."`) or a list of strings (`lines = [...]`, then
 * `lines.append(x)`, `lines += [...]`, `lines.extend([...])`, joined by sep), also in `for`
 * loops over range() of known integers or a list written out, which are unrolled (the loop
 * variable holds each value in turn). Anything else that binds or grows it (under an `if`, in
 * a `while`, a loop that breaks) depends on the run. */
/* Parts of one built text. */
enum { KL_PY_MAX_PARTS = 1024 };

struct kl_py_grow {
  const char *name;
  bool list;
  TSNode sep; /* list: the separator of the join */
  TSNode at;
  int depth;
  struct kl_py_buf cur; /* the text so far */
  bool started;
  int nparts, iters;
  struct kl_py_buf *b; /* where a part that cannot be read says why */
};

/* 1: done; 0: not built that way (nothing said); -1: a part cannot be read (b says why). */
static int kl_py_grow_part(struct kl_py *p, struct kl_py_grow *g, TSNode part) {
  if (g->nparts++ >= KL_PY_MAX_PARTS) return 0;
  if ((g->list && g->nparts > 1 && !kl_pyval_string(p, &g->cur, g->sep, g->depth + 1)) ||
      !kl_pyval_string(p, &g->cur, part, g->depth + 1)) {
    kl_py_fail(g->b, g->cur.why_node, g->cur.why);
    return -1;
  }
  return 1;
}

static int kl_py_grow_items(struct kl_py *p, struct kl_py_grow *g, TSNode items) {
  items = kl_py_unparen(items);
  if (!kl_py_is(items, "list") && !kl_py_is(items, "tuple")) return 0;
  uint32_t m = ts_node_named_child_count(items);
  for (uint32_t j = 0; j < m; j++) {
    TSNode e = kl_node_named_child(items, j);
    if (kl_py_is(e, "comment")) continue;
    if (kl_py_is(e, "list_splat")) return 0;
    int r = kl_py_grow_part(p, g, e);
    if (r != 1) return r;
  }
  return 1;
}

/* Whether p->t[s, e) assigns or grows name: `name =`, `name +=`, `name.append(`,
 * `name.extend(` (text only: a use inside a construct is then not read from before it). */
static bool kl_py_grows_in(struct kl_py *p, const char *name, uint32_t s, uint32_t e) {
  size_t n = strlen(name);
  for (uint32_t i = s; i + n <= e; i++) {
    if (memcmp(p->t + i, name, n) || (i > s && kl_lex_ident_char(p->t[i - 1])) ||
        (i + n < e && kl_lex_ident_char(p->t[i + n])))
      continue;
    uint32_t j = i + (uint32_t)n;
    while (j < e && p->t[j] == ' ') j++;
    if (j + 1 < e && p->t[j] == '+' && p->t[j + 1] == '=') return true;
    if (j < e && p->t[j] == '=' && (j + 1 >= e || p->t[j + 1] != '=')) return true;
    if (j + 7 < e && (!memcmp(p->t + j, ".append", 7) || !memcmp(p->t + j, ".extend", 7)))
      return true;
  }
  return false;
}

static int kl_py_grow_block(struct kl_py *p, struct kl_py_grow *g, TSNode body, bool top) {
  uint32_t k = kl_node_null(body) ? 0 : ts_node_named_child_count(body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(body, i);
    if (top && ts_node_end_byte(c) > ts_node_start_byte(g->at)) {
      /* The statement that holds the use (a loop, an if) may grow the name before it: its text
       * is not the one before the statement. */
      if (kl_py_grows_in(p, g->name, ts_node_start_byte(c), ts_node_start_byte(g->at))) return -1;
      break;
    }
    if (kl_py_is(c, "comment")) continue;
    TSNode x = kl_py_stmt_expr(c);
    TSNode left = kl_py_field(x, "left"), right = kl_py_field(x, "right");
    bool mine =
        !kl_node_null(left) && kl_py_is(left, "identifier") && kl_py_text_is(p, left, g->name);
    int r = 1;
    if (mine && kl_py_is(x, "assignment")) {
      if (!top) return 0;
      kl_py_buf_init(&g->cur, p->a);
      g->cur.skeleton = g->b->skeleton;
      g->cur.inner = g->b->inner;
      g->started = true;
      g->nparts = 0;
      r = g->list ? kl_py_grow_items(p, g, right) : kl_py_grow_part(p, g, right);
    } else if (mine && kl_py_is(x, "augmented_assignment")) {
      TSNode op = kl_py_field(x, "operator");
      if (!g->started || kl_node_null(op) || strcmp(ts_node_type(op), "+=")) return 0;
      r = g->list ? kl_py_grow_items(p, g, right) : kl_py_grow_part(p, g, right);
    } else if (g->list && kl_py_is(x, "call") && kl_py_grows(p, x, g->name)) {
      TSNode attr = kl_py_field(kl_py_field(x, "function"), "attribute");
      TSNode args = kl_py_field(x, "arguments");
      if (!g->started || kl_node_null(args) || ts_node_named_child_count(args) != 1) return 0;
      TSNode a = kl_node_named_child(args, 0);
      if (kl_py_text_is(p, attr, "append"))
        r = kl_py_grow_part(p, g, a);
      else if (kl_py_text_is(p, attr, "extend"))
        r = kl_py_grow_items(p, g, a);
      else
        return 0;
    } else if (kl_py_is(c, "for_statement") && kl_py_touches(p, c, g->name, 0)) {
      /* Unrolled: the body once per value, with the loop variable bound to it. */
      TSNode var = kl_py_field(c, "left"), loop_body = kl_py_field(c, "body");
      int64_t ints[KL_PY_MAX_ITERS];
      TSNode items[KL_PY_MAX_ITERS];
      int n = kl_py_is(var, "identifier") && kl_node_null(kl_py_field(c, "alternative")) &&
                      !kl_py_jumps(loop_body, 0) && p->nloopvars < KL_PY_MAX_LOOPS
                  ? kl_py_iter(p, kl_py_field(c, "right"), g->depth + 1, ints, items)
                  : -1;
      if (n < 0 || !g->started) return 0;
      for (int it = 0; it < n && r == 1; it++) {
        if (++g->iters > KL_PY_MAX_ITERS * 4) return 0;
        p->loopvars[p->nloopvars++] =
            (struct kl_py_loopvar){kl_py_text(p, var), c, items[it], ints[it]};
        r = kl_py_grow_block(p, g, loop_body, false);
        p->nloopvars--;
      }
    } else if (kl_py_touches(p, c, g->name, 0)) {
      return 0;
    }
    if (r != 1) return r;
  }
  return 1;
}

/* Reads name `at` as built by its scope's statements (struct kl_py_grow) into b: 1 when read,
 * 0 when it is not built that way (nothing said), -1 when a part cannot be read. */
static int kl_py_grow(struct kl_py *p, struct kl_py_buf *b, TSNode at, bool list, TSNode sep,
                      int depth) {
  TSNode s = kl_py_scope(p, at);
  TSNode body = ts_node_eq(s, p->root) ? s : kl_py_field(s, "body");
  struct kl_py_grow g = {kl_py_text(p, at), list, sep, at, depth, {0}, false, 0, 0, b};
  int r = kl_py_grow_block(p, &g, body, true);
  if (r != 1) return r;
  if (!g.started) return 0;
  kl_py_buf_append(b, &g.cur);
  return 1;
}

/* A string name whose last binding before `at` is `name += ...`: read by kl_py_grow. */
static int kl_py_grown_string(struct kl_py *p, struct kl_py_buf *b, TSNode at, int depth) {
  const char *name = kl_py_text(p, at);
  TSNode s = kl_py_scope(p, at);
  const struct kl_py_asg *best = NULL;
  for (size_t i = 0; i < p->nasgs; i++) {
    const struct kl_py_asg *g = &p->asgs[i];
    if (!ts_node_eq(g->scope, s) || strcmp(g->target, name) || g->end > ts_node_start_byte(at))
      continue;
    if (!best || g->end > best->end) best = g;
  }
  if (!best || !kl_py_is(best->stmt, "augmented_assignment")) return 0;
  return kl_py_grow(p, b, at, false, kl_py_null, depth);
}

/* sep.join(x for x in xs) over values kernlint can list (kl_py_iter), with no `if`: the element
 * read once per value, the loop variable bound to it. 1, 0 or -1 as kl_py_grow. */
static int kl_py_join_comprehension(struct kl_py *p, struct kl_py_buf *b, TSNode comp, TSNode sep,
                                    int depth) {
  TSNode elem = kl_py_field(comp, "body"), clause = kl_py_null;
  uint32_t m = ts_node_named_child_count(comp);
  for (uint32_t i = 0; i < m; i++) {
    TSNode c = kl_node_named_child(comp, i);
    if (kl_py_is(c, "for_in_clause")) {
      if (!kl_node_null(clause)) return 0;
      clause = c;
    } else if (kl_py_is(c, "if_clause")) {
      return 0;
    }
  }
  TSNode var = kl_py_field(clause, "left");
  if (kl_node_null(elem) || !kl_py_is(var, "identifier") || p->nloopvars >= KL_PY_MAX_LOOPS)
    return 0;
  int64_t ints[KL_PY_MAX_ITERS];
  TSNode items[KL_PY_MAX_ITERS];
  int n = kl_py_iter(p, kl_py_field(clause, "right"), depth + 1, ints, items);
  if (n < 0) return 0;
  for (int it = 0; it < n; it++) {
    p->loopvars[p->nloopvars++] =
        (struct kl_py_loopvar){kl_py_text(p, var), comp, items[it], ints[it]};
    bool ok =
        (!it || kl_pyval_string(p, b, sep, depth + 1)) && kl_pyval_string(p, b, elem, depth + 1);
    p->nloopvars--;
    if (!ok) return -1;
  }
  return 1;
}

/* sep.join(parts): a list or tuple of strings written out, a list built by the statements of
 * its scope (kl_py_grow) or a comprehension over values kernlint can list, each part read as a
 * string; else the text of a list built at run time, said with where it is built. */
static bool kl_py_join(struct kl_py *p, struct kl_py_buf *b, TSNode call, int depth) {
  TSNode args = kl_py_field(call, "arguments");
  TSNode sep = kl_py_field(kl_py_field(call, "function"), "object");
  /* sep.join(x for x in xs): the generator is the argument list itself. */
  TSNode arg = kl_py_is(args, "generator_expression") ? args
               : kl_node_null(args) || ts_node_named_child_count(args) != 1
                   ? kl_py_null
                   : kl_py_unparen(kl_node_named_child(args, 0));
  if (!kl_node_null(sep) && (kl_py_is(arg, "list") || kl_py_is(arg, "tuple"))) {
    struct kl_py_grow g = {"", true, sep, call, depth, {0}, true, 0, 0, b};
    kl_py_buf_init(&g.cur, p->a);
    g.cur.skeleton = b->skeleton;
    g.cur.inner = b->inner;
    int r = kl_py_grow_items(p, &g, arg);
    if (r < 0) return false;
    if (r == 1) {
      kl_py_buf_append(b, &g.cur);
      return true;
    }
  }
  if (!kl_node_null(sep) &&
      (kl_py_is(arg, "generator_expression") || kl_py_is(arg, "list_comprehension"))) {
    int r = kl_py_join_comprehension(p, b, arg, sep, depth);
    if (r != 0) return r == 1;
    return kl_py_fail(b, arg, "a `.join()` of a comprehension, built by a loop");
  }
  if (kl_py_is(arg, "identifier")) {
    int r = kl_node_null(sep) ? 0 : kl_py_grow(p, b, arg, true, sep, depth);
    if (r != 0) return r == 1;
    TSNode loop = kl_py_built_by_loop(p, arg);
    if (!kl_node_null(loop))
      return kl_py_fail(
          b, loop,
          kl_arena_printf(p->a, "a `.join()` of `%s`, built by a loop", kl_py_text(p, arg)));
  }
  return kl_py_fail(b, call, "a `.join()` call");
}

/* The class whose body holds n directly or in a method (null when none): where `self.name`
 * is looked up. */
static TSNode kl_py_class_of(TSNode n) {
  for (TSNode u = ts_node_parent(n); !kl_node_null(u); u = ts_node_parent(u))
    if (kl_py_is(u, "class_definition")) return u;
  return kl_py_null;
}

/* Whether the decorators of def (a function_definition) name `staticmethod` or `classmethod`:
 * a method called through its class's name, whose parameters line up with the arguments (with
 * `cls` bound implicitly, as for `cls.name`). */
static bool kl_py_class_callable(struct kl_py *p, TSNode def) {
  TSNode up = ts_node_parent(def);
  if (!kl_py_is(up, "decorated_definition")) return false;
  uint32_t k = ts_node_named_child_count(up);
  for (uint32_t i = 0; i < k; i++) {
    TSNode d = kl_node_named_child(up, i);
    if (!kl_py_is(d, "decorator") || !ts_node_named_child_count(d)) continue;
    TSNode e = kl_node_named_child(d, 0);
    if (kl_py_text_is(p, e, "staticmethod") || kl_py_text_is(p, e, "classmethod")) return true;
  }
  return false;
}

const char *kl_pyval_callee_word(struct kl_py *p, TSNode call) {
  TSNode callee = kl_py_field(call, "function");
  if (kl_py_is(callee, "attribute")) callee = kl_py_field(callee, "attribute");
  return kl_py_is(callee, "identifier") ? kl_py_text(p, callee) : NULL;
}

bool kl_pyval_may_reach(struct kl_py *p, const char *word, size_t fn) {
  if (!p->fn_words || p->nfn_words != p->nfns) {
    p->fn_words = kl_arena_alloc(p->a, (p->nfns + 1) * sizeof *p->fn_words);
    p->nfn_words = p->nfns;
    for (size_t i = 0; i < p->nfns; i++) {
      TSNode name = kl_py_field(p->fns[i], "name");
      p->fn_words[i] = kl_node_null(name) ? NULL : kl_py_text(p, name);
    }
  }
  return p->fn_words[fn] && !strcmp(p->fn_words[fn], word);
}

/* Whether call reaches function def through its callee: a bare name reaches a module function
 * or one defined in a function around the call; `self.name`/`cls.name` a method of the class
 * around the call; `Name.name` a static or class method of the module's class `Name`. */
bool kl_pyval_reaches(struct kl_py *p, TSNode call, TSNode def) {
  TSNode callee = kl_py_field(call, "function");
  bool method = false;
  const char *klass = NULL;
  if (kl_py_is(callee, "attribute")) {
    TSNode obj = kl_py_field(callee, "object");
    if (kl_py_is(obj, "identifier") && !kl_py_text_is(p, obj, "self") &&
        !kl_py_text_is(p, obj, "cls"))
      klass = kl_py_text(p, obj);
    else if (!kl_py_text_is(p, obj, "self") && !kl_py_text_is(p, obj, "cls"))
      return false;
    callee = kl_py_field(callee, "attribute");
    method = true;
  }
  if (!kl_py_is(callee, "identifier") ||
      !kl_py_text_is(p, kl_py_field(def, "name"), kl_py_text(p, callee)) ||
      kl_py_contains(def, call))
    return false;
  /* A method: its definition (decorated or not) sits in a class body. */
  TSNode up = ts_node_parent(def);
  if (kl_py_is(up, "decorated_definition")) up = ts_node_parent(up);
  TSNode cls = kl_py_is(up, "block") ? ts_node_parent(up) : kl_py_null;
  bool in_method = kl_py_is(cls, "class_definition");
  TSNode outer = kl_py_scope(p, def);
  if (klass)
    return in_method && ts_node_eq(ts_node_parent(cls), p->root) &&
           kl_py_text_is(p, kl_py_field(cls, "name"), klass) && kl_py_class_callable(p, def);
  if (method) return in_method && ts_node_eq(kl_py_class_of(call), cls);
  if (in_method) return false;
  return ts_node_eq(outer, p->root) || kl_py_contains(outer, call);
}

/* The single expression a function of the file returns, for a call of it by name (or as
 * `self.name`); null when it returns in several places or is not the file's. */
static TSNode kl_py_returned(struct kl_py *p, TSNode call) {
  TSNode def = kl_py_null;
  const char *word = kl_pyval_callee_word(p, call);
  for (size_t i = 0; word && i < p->nfns; i++)
    if (kl_pyval_may_reach(p, word, i) && kl_pyval_reaches(p, call, p->fns[i])) def = p->fns[i];
  if (kl_node_null(def)) return kl_py_null;
  /* Its return statements, outside nested functions and classes: one, at any depth. */
  TSNode found = kl_py_null, stack[64];
  int nstack = 0, nret = 0;
  stack[nstack++] = kl_py_field(def, "body");
  while (nstack > 0) {
    TSNode x = stack[--nstack];
    if (kl_node_null(x)) continue;
    if (kl_py_is(x, "return_statement")) {
      nret++;
      found = ts_node_named_child_count(x) ? kl_node_named_child(x, 0) : kl_py_null;
      continue;
    }
    if (kl_py_is(x, "function_definition") || kl_py_is(x, "class_definition") ||
        kl_py_is(x, "lambda"))
      continue;
    uint32_t k = ts_node_named_child_count(x);
    for (uint32_t i = 0; i < k; i++) {
      if (nstack == 64) return kl_py_null;
      stack[nstack++] = kl_node_named_child(x, i);
    }
  }
  return nret == 1 ? found : kl_py_null;
}

/* tmpl.format(...): literal arguments are put in; the others are opaque fields. */
static bool kl_py_format(struct kl_py *p, struct kl_py_buf *b, TSNode call, int depth) {
  struct kl_py_buf t;
  kl_py_buf_init(&t, p->a);
  t.skeleton = b->skeleton;
  if (!kl_pyval_string(p, &t, kl_py_field(kl_py_field(call, "function"), "object"), depth + 1)) {
    if (!t.why) return kl_py_fail(b, call, "a `.format()` call");
    return kl_py_fail(b, t.why_node, t.why);
  }
  uint32_t run = 0;
  int autonum = 0;
  for (uint32_t i = 0; i < t.n; i++) {
    char c = t.p[i];
    if ((c == '{' || c == '}') && i + 1 < t.n && t.p[i + 1] == c) {
      kl_py_buf_copy(b, &t, run, i + 1);
      run = i += 2;
      i--;
      continue;
    }
    if (c != '{') continue;
    uint32_t e = i + 1, nest = 1;
    while (e < t.n && nest) {
      if (t.p[e] == '{') nest++;
      if (t.p[e] == '}') nest--;
      e++;
    }
    if (nest) break;
    kl_py_buf_copy(b, &t, run, i);
    /* {name}, {0}, {}, then !conversion and :spec. */
    uint32_t ne = i + 1;
    while (ne < e - 1 && t.p[ne] != '!' && t.p[ne] != ':') ne++;
    const char *key = kl_arena_strndup(p->a, t.p + i + 1, ne - i - 1);
    const char *tail = kl_arena_strndup(p->a, t.p + ne, e - 1 - ne);
    enum kl_py_conv how = !*tail || !strcmp(tail, "!s") ? KL_PY_CONV_STR
                          : !strcmp(tail, ":d")          ? KL_PY_CONV_INT
                                                         : KL_PY_CONV_NONE;
    TSNode arg = kl_py_null;
    if (!*key)
      arg = kl_py_arg(p, call, "", autonum++);
    else if (*key >= '0' && *key <= '9' && strspn(key, "0123456789") == strlen(key))
      arg = kl_py_arg(p, call, "", atoi(key));
    else if (kl_py_ident(key))
      arg = kl_py_arg(p, call, key, -1);
    uint32_t fs = kl_offmap_to_file(&t.map, i), fe = kl_offmap_end_to_file(&t.map, e);
    if (fe < fs) fe = fs; /* a field split across pieces written in another order */
    if (!kl_py_put(p, b, arg, how, depth, fs, fe, t.p + e, t.n - e,
                   "a `.format()` call with an argument known only at run time"))
      return false;
    run = i = e;
    i--;
  }
  kl_py_buf_copy(b, &t, run, t.n);
  return true;
}

/* tmpl % args: %s, %d and %i of literal arguments are put in; the others are opaque fields. */
static bool kl_py_percent(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  struct kl_py_buf t;
  kl_py_buf_init(&t, p->a);
  t.skeleton = b->skeleton;
  if (!kl_pyval_string(p, &t, kl_py_field(n, "left"), depth + 1)) {
    if (!t.why) return kl_py_fail(b, n, "`%` formatting");
    return kl_py_fail(b, t.why_node, t.why);
  }
  TSNode args = kl_py_resolve(p, kl_py_field(n, "right"));
  bool tuple = kl_py_is(args, "tuple");
  uint32_t run = 0, next = 0;
  for (uint32_t i = 0; i < t.n; i++) {
    if (t.p[i] != '%') continue;
    kl_py_buf_copy(b, &t, run, i);
    uint32_t e = i + 1;
    if (e < t.n && t.p[e] == '%') {
      kl_py_buf_copy(b, &t, e, e + 1);
      run = i = e + 1;
      i--;
      continue;
    }
    const char *key = NULL;
    if (e < t.n && t.p[e] == '(') {
      uint32_t ke = e;
      while (ke < t.n && t.p[ke] != ')') ke++;
      key = kl_arena_strndup(p->a, t.p + e + 1, ke > e ? ke - e - 1 : 0);
      e = ke < t.n ? ke + 1 : ke;
    }
    uint32_t flags = e;
    while (e < t.n && strchr("#0- +.123456789*", t.p[e])) e++;
    char conv = e < t.n ? t.p[e] : 's';
    if (e < t.n) e++;
    enum kl_py_conv how = flags + 1 != e ? KL_PY_CONV_NONE
                          : conv == 's'  ? KL_PY_CONV_STR
                          : conv == 'd' || conv == 'i' ? KL_PY_CONV_INT
                                                       : KL_PY_CONV_NONE;
    TSNode arg = kl_py_null;
    if (key && kl_py_is(args, "dictionary")) {
      uint32_t k = ts_node_named_child_count(args);
      for (uint32_t j = 0; j < k; j++) {
        TSNode pr = kl_node_named_child(args, j);
        const char *kk =
            kl_py_is(pr, "pair") ? kl_py_known_string(p, kl_py_field(pr, "key"), depth) : NULL;
        if (kk && !strcmp(kk, key)) arg = kl_py_field(pr, "value");
      }
    } else if (!key && tuple) {
      if (next < ts_node_named_child_count(args)) arg = kl_node_named_child(args, next);
      next++;
    } else if (!key && next++ == 0) {
      arg = kl_py_field(n, "right");
    }
    uint32_t fs = kl_offmap_to_file(&t.map, i), fe = kl_offmap_end_to_file(&t.map, e);
    if (fe < fs) fe = fs;
    if (!kl_py_put(p, b, arg, how, depth, fs, fe, t.p + e, t.n - e,
                   "`%` formatting with an argument known only at run time"))
      return false;
    run = i = e;
    i--;
  }
  kl_py_buf_copy(b, &t, run, t.n);
  return true;
}

/* text.replace(old, new): old must be known; new is put in, or is an opaque field. */
static bool kl_py_replace(struct kl_py *p, struct kl_py_buf *b, TSNode call, int depth) {
  TSNode olda = kl_py_arg(p, call, "", 0), newa = kl_py_arg(p, call, "", 1);
  const char *old = kl_node_null(olda) ? NULL : kl_py_known_string(p, olda, depth);
  if (!old || !*old || !kl_node_null(kl_py_arg(p, call, "", 2)))
    return kl_py_fail(b, call, "a `.replace()` call");
  struct kl_py_buf t;
  kl_py_buf_init(&t, p->a);
  t.skeleton = b->skeleton;
  if (!kl_pyval_string(p, &t, kl_py_field(kl_py_field(call, "function"), "object"), depth + 1)) {
    if (!t.why) return kl_py_fail(b, call, "a `.replace()` call");
    return kl_py_fail(b, t.why_node, t.why);
  }
  uint32_t run = 0, len = (uint32_t)strlen(old);
  for (const char *q = strstr(t.p, old); q; q = strstr(q, old)) {
    uint32_t i = (uint32_t)(q - t.p);
    kl_py_buf_copy(b, &t, run, i);
    uint32_t fs = kl_offmap_to_file(&t.map, i), fe = kl_offmap_end_to_file(&t.map, i + len);
    if (fe < fs) fe = fs;
    if (!kl_py_put(p, b, newa, KL_PY_CONV_STR, depth, fs, fe, t.p + i + len, t.n - i - len,
                   "a `.replace()` call with a value known only at run time"))
      return false;
    run = i + len;
    q = t.p + run;
  }
  kl_py_buf_copy(b, &t, run, t.n);
  return true;
}

/* Append the string value of expression n to b: literals, concatenation, names of constants.
 * Calls that only change whitespace (textwrap.dedent, .strip()) are read through: MSL does not
 * care, and positions stay those of the file. */
bool kl_pyval_string(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (kl_node_null(n)) return kl_py_fail(b, n, "missing");
  if (depth > KL_PY_MAX_DEPTH || p->budget == 0)
    return kl_py_fail(b, n, "a chain of names too long to follow");
  /* Concatenation grows one text in place (`s1 = s0 + s0`, `s2 = s1 + s1`...): bounded too. */
  if (b->n > KL_PY_TEXT_BUDGET) return kl_py_fail(b, n, "a text longer than 1 MB");
  p->budget--;
  const char *ty = ts_node_type(n);
  if (!strcmp(ty, "string")) return kl_py_string_lit(p, b, n, depth);
  if (!strcmp(ty, "concatenated_string")) {
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(n, i);
      if (kl_py_is(c, "comment")) continue;
      if (!kl_pyval_string(p, b, c, depth + 1)) return false;
    }
    return true;
  }
  if (!strcmp(ty, "binary_operator")) {
    TSNode op = kl_py_field(n, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    if (!strcmp(o, "%")) return kl_py_percent(p, b, n, depth);
    if (strcmp(o, "+")) return kl_py_fail(b, n, "a value computed at run time");
    return kl_pyval_string(p, b, kl_py_field(n, "left"), depth + 1) &&
           kl_pyval_string(p, b, kl_py_field(n, "right"), depth + 1);
  }
  if (!strcmp(ty, "identifier")) {
    TSNode v;
    const char *name = kl_py_text(p, n);
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, n);
    if (lv && !kl_node_null(lv->node)) return kl_pyval_string(p, b, lv->node, depth + 1);
    if (lv) return kl_py_fail(b, n, kl_arena_printf(p->a, "`%s`, a number", name));
    if (!kl_py_lookup(p, name, n, &v)) {
      /* `src = "..."` then `src += f"..."`, in a row or in loops kernlint unrolls. */
      int grown = kl_py_grown_string(p, b, n, depth);
      if (grown != 0) return grown == 1;
      for (TSNode s = kl_py_scope(p, n); !ts_node_eq(s, p->root); s = kl_py_scope(p, s))
        if (kl_py_is_param(p, s, name))
          return kl_py_fail(b, s,
                            kl_arena_printf(p->a, "`%s`, a parameter of `%s`", name,
                                            kl_py_text(p, kl_py_field(s, "name"))));
      TSNode loop = kl_py_built_by_loop(p, n);
      if (!kl_node_null(loop))
        return kl_py_fail(b, loop, kl_arena_printf(p->a, "`%s`, built by a loop", name));
      /* Said as what binds it: a loop, an unpacking, an in-place update. */
      TSNode scope = kl_py_scope(p, n);
      for (size_t i = p->nasgs; i-- > 0;) {
        const struct kl_py_asg *g = &p->asgs[i];
        if (!kl_node_null(g->value) || strcmp(g->target, name) || g->end > ts_node_start_byte(n) ||
            (!ts_node_eq(g->scope, scope) && !ts_node_eq(g->scope, p->root)))
          continue;
        TSNode up = ts_node_parent(g->stmt);
        const char *how = kl_py_is(up, "for_statement")             ? "a loop variable"
                          : kl_py_is(g->stmt, "augmented_assignment") ? "changed in place"
                          : kl_py_is(g->stmt, "assignment")           ? "unpacked from a value"
                                                                      : NULL;
        if (how) return kl_py_fail(b, g->stmt, kl_arena_printf(p->a, "`%s`, %s", name, how));
      }
      return kl_py_fail(b, n, kl_arena_printf(p->a, "`%s`, not a constant of this file", name));
    }
    return kl_pyval_string(p, b, v, depth + 1);
  }
  if (!strcmp(ty, "call")) {
    TSNode fn = kl_py_field(n, "function");
    TSNode args = kl_py_field(n, "arguments");
    const char *d = kl_py_dotted(p, fn, 0);
    const char *attr = kl_py_is(fn, "attribute") ? kl_py_text(p, kl_py_field(fn, "attribute")) : "";
    if (!strcmp(attr, "format")) return kl_py_format(p, b, n, depth);
    if (!strcmp(attr, "replace")) return kl_py_replace(p, b, n, depth);
    if (kl_py_text_is(p, fn, "str") && !kl_node_null(args) && ts_node_named_child_count(args) == 1)
      return kl_pyval_value(p, b, kl_node_named_child(args, 0), depth + 1, ts_node_start_byte(n),
                            ts_node_end_byte(n));
    TSNode ret = kl_py_returned(p, n);
    if (!kl_node_null(ret)) {
      /* A helper of the file that returns the source: read with its parameters bound. */
      struct kl_py_env env = {kl_py_scope(p, ret), n, p->env, false};
      const struct kl_py_env *saved = p->env;
      p->env = &env;
      bool ok = kl_pyval_string(p, b, ret, depth + 1);
      p->env = saved;
      return ok;
    }
    if (!strcmp(attr, "join")) return kl_py_join(p, b, n, depth);
    if (d && (!strcmp(d, "textwrap.dedent") || !strcmp(d, "inspect.cleandoc")) &&
        !kl_node_null(args) && ts_node_named_child_count(args) >= 1)
      return kl_pyval_string(p, b, kl_node_named_child(args, 0), depth + 1);
    if (!strcmp(attr, "strip") || !strcmp(attr, "lstrip") || !strcmp(attr, "rstrip")) {
      if (!kl_node_null(args) && ts_node_named_child_count(args) == 0)
        return kl_pyval_string(p, b, kl_py_field(fn, "object"), depth + 1);
    }
    if (!strcmp(attr, "read") || !strcmp(attr, "read_text") || (d && !strcmp(d, "open")))
      return kl_py_fail(b, n, "text read from a file");
    return kl_py_fail(b, n,
                      kl_arena_printf(p->a, "the result of calling `%s()`",
                                      kl_pyval_short(p, fn, KL_PY_MAX_SHOWN)));
  }
  if (!strcmp(ty, "subscript")) {
    TSNode e = kl_py_element(p, n, depth + 1);
    if (!kl_node_null(e)) return kl_pyval_string(p, b, e, depth + 1);
  }
  if (!strcmp(ty, "subscript"))
    return kl_py_fail(b, n,
                      kl_arena_printf(p->a, "an element of `%s`",
                                      kl_pyval_short(p, kl_py_field(n, "value"), KL_PY_MAX_SHOWN)));
  if (!strcmp(ty, "conditional_expression") && ts_node_named_child_count(n) == 3) {
    /* Each alternative is a candidate: the build is made once per choice (kl_py_build_mlx). */
    int t = kl_py_truth(p, kl_node_named_child(n, 1), depth + 1);
    int pick = t >= 0 ? !t : kl_py_choose(p, kl_node_named_child(n, 1));
    if (pick < 0) return kl_py_fail(b, n, "a conditional expression");
    return kl_pyval_string(p, b, kl_node_named_child(n, pick ? 2 : 0), depth + 1);
  }
  return kl_py_fail(b, n, "a value computed at run time");
}

/* A plain string constant (a kernel name, an input name); NULL when it is not one. */
/* The text of a string expression read at depth, with no opaque field; NULL when it is not
 * one. */
static const char *kl_py_string_at(struct kl_py *p, TSNode n, int depth) {
  struct kl_py_buf b;
  kl_py_buf_init(&b, p->a);
  if (!kl_pyval_string(p, &b, n, depth)) return NULL;
  kl_py_buf_raw(&b, "", 0);
  return b.p;
}

const char *kl_pyval_const_string(struct kl_py *p, TSNode n) {
  return kl_py_string_at(p, n, 0);
}

/* ---- sizes ---- */

static struct kl_dx *kl_py_int_lit(struct kl_py *p, TSNode n) {
  char *s = kl_py_text(p, n), *o = s;
  for (char *c = s; *c; c++)
    if (*c != '_') *o++ = *c;
  *o = '\0';
  int base = 10;
  const char *digits = s;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    base = 16, digits = s + 2;
  else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
    base = 8, digits = s + 2;
  else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
    base = 2, digits = s + 2;
  char *end;
  unsigned long long v = strtoull(digits, &end, base);
  if (*end || end == digits || v > INT64_MAX) return kl_dx_leaf(p->a, kl_py_text(p, n));
  return kl_dx_int(p->a, (int64_t)v);
}

static bool kl_py_name_has(const char *s, const char *const *words) {
  for (; *words; words++)
    if (strstr(s, *words)) return true;
  return false;
}

static struct kl_dx *kl_py_dx_call(struct kl_py *p, TSNode n, int depth) {
  TSNode fn = kl_py_field(n, "function");
  TSNode args = kl_py_field(n, "arguments");
  TSNode av[4];
  uint32_t na = 0, k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  for (uint32_t i = 0; i < k && na < 4; i++) {
    TSNode c = kl_node_named_child(args, i);
    if (!kl_py_is(c, "keyword_argument") && !kl_py_is(c, "comment")) av[na++] = c;
  }
  const char *d = kl_py_dotted(p, fn, 0);
  if (!d) return kl_dx_leaf(p->a, kl_py_text(p, n));
  const char *last = strrchr(d, '.');
  last = last ? last + 1 : d;
  struct kl_arena *a = p->a;
  if (na == 1 && !strcmp(d, "int")) {
    /* int("32"), int(32.0): Python's conversions of a known literal. */
    TSNode v = kl_py_resolve(p, av[0]);
    const char *t = kl_py_is(v, "float")    ? kl_py_text(p, v)
                    : kl_py_is(v, "string") ? kl_pyval_const_string(p, v)
                                            : NULL;
    char *end;
    if (t && kl_py_is(v, "float")) {
      double x = strtod(t, &end);
      if (!*end && x > -9e18 && x < 9e18) return kl_dx_int(a, (int64_t)x);
    } else if (t) {
      while (*t == ' ') t++;
      long long x = strtoll(t, &end, 10);
      while (*end == ' ' || *end == '\n') end++;
      if (!*end && end != t) return kl_dx_int(a, x);
    }
  }
  if (na == 1 &&
      (!strcmp(d, "int") || !strcmp(d, "mlx.core.array") || !strcmp(d, "numpy.int32") ||
       !strcmp(d, "numpy.uint32") || !strcmp(d, "mlx.core.uint32") || !strcmp(d, "mlx.core.int32")))
    return kl_pyval_dx(p, av[0], depth + 1);
  if (na == 1 && (!strcmp(d, "math.ceil") || !strcmp(d, "numpy.ceil") || !strcmp(d, "ceil") ||
                  !strcmp(d, "mlx.core.ceil")))
    return kl_dx_op(a, KL_DX_CEIL, kl_pyval_dx(p, av[0], depth + 1), NULL);
  if (na >= 2 && (!strcmp(d, "min") || !strcmp(d, "max") || !strcmp(d, "mlx.core.minimum") ||
                  !strcmp(d, "mlx.core.maximum"))) {
    enum kl_dx_op op = strstr(d, "min") ? KL_DX_MIN : KL_DX_MAX;
    struct kl_dx *e = kl_pyval_dx(p, av[0], depth + 1);
    for (uint32_t i = 1; i < na; i++) e = kl_dx_op(a, op, e, kl_pyval_dx(p, av[i], depth + 1));
    return e;
  }
  static const struct {
    const char *name;
    enum kl_dx_op op;
  } mx_ops[] = {{"mlx.core.add", KL_DX_ADD},          {"mlx.core.subtract", KL_DX_SUB},
                {"mlx.core.multiply", KL_DX_MUL},     {"mlx.core.divide", KL_DX_DIV},
                {"mlx.core.floor_divide", KL_DX_DIV}, {"mlx.core.remainder", KL_DX_MOD}};
  for (size_t i = 0; na == 2 && i < sizeof mx_ops / sizeof mx_ops[0]; i++)
    if (!strcmp(d, mx_ops[i].name))
      return kl_dx_op(a, mx_ops[i].op, kl_pyval_dx(p, av[0], depth + 1),
                      kl_pyval_dx(p, av[1], depth + 1));
  static const char *const ceil_names[] = {"ceil_div", "ceildiv",      "cdiv", "div_up",
                                           "divup",    "div_round_up", NULL};
  static const char *const round_names[] = {"round_up", "roundup", "align_up", "next_multiple",
                                            NULL};
  if (na == 2 && kl_py_name_has(last, ceil_names))
    return kl_dx_op(a, KL_DX_CEILDIV, kl_pyval_dx(p, av[0], depth + 1),
                    kl_pyval_dx(p, av[1], depth + 1));
  if (na == 2 && kl_py_name_has(last, round_names))
    return kl_dx_op(a, KL_DX_ROUNDUP, kl_pyval_dx(p, av[0], depth + 1),
                    kl_pyval_dx(p, av[1], depth + 1));
  return kl_dx_leaf(a, kl_py_text(p, n));
}

/* An integer expression of the file as a kl_dx, following names to their values. */
struct kl_dx *kl_pyval_dx(struct kl_py *p, TSNode n, int depth) {
  n = kl_py_unparen(n);
  if (kl_node_null(n)) return kl_dx_leaf(p->a, "?");
  if (depth > KL_PY_MAX_DEPTH || p->budget == 0) return kl_dx_leaf(p->a, kl_py_text(p, n));
  p->budget--;
  const char *ty = ts_node_type(n);
  struct kl_dx *e = NULL;
  if (!strcmp(ty, "integer")) {
    e = kl_py_int_lit(p, n);
  } else if (!strcmp(ty, "true") || !strcmp(ty, "false")) {
    e = kl_dx_int(p->a, ty[0] == 't');
  } else if (!strcmp(ty, "identifier")) {
    TSNode v;
    const struct kl_py_loopvar *lv = kl_py_loopvar(p, n);
    if (lv && !kl_node_null(lv->node)) return kl_pyval_dx(p, lv->node, depth + 1);
    if (lv) return kl_dx_int(p->a, lv->value);
    if (kl_py_lookup(p, kl_py_text(p, n), n, &v)) return kl_pyval_dx(p, v, depth + 1);
    e = kl_dx_leaf(p->a, kl_py_text(p, n));
  } else if (!strcmp(ty, "unary_operator")) {
    TSNode op = kl_py_field(n, "operator");
    struct kl_dx *x = kl_pyval_dx(p, kl_py_field(n, "argument"), depth + 1);
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    if (!strcmp(o, "-"))
      e = kl_dx_op(p->a, KL_DX_NEG, x, NULL);
    else if (!strcmp(o, "+"))
      e = x;
    else
      e = kl_dx_leaf(p->a, kl_py_text(p, n));
  } else if (!strcmp(ty, "binary_operator")) {
    TSNode op = kl_py_field(n, "operator");
    const char *o = kl_node_null(op) ? "" : ts_node_type(op);
    static const struct {
      const char *op;
      enum kl_dx_op kind;
    } ops[] = {{"+", KL_DX_ADD},  {"-", KL_DX_SUB}, {"*", KL_DX_MUL},  {"//", KL_DX_DIV},
               {"/", KL_DX_TDIV}, {"%", KL_DX_MOD}, {"<<", KL_DX_SHL}, {">>", KL_DX_SHR}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0] && !e; i++)
      if (!strcmp(o, ops[i].op))
        e = kl_dx_op(p->a, ops[i].kind, kl_pyval_dx(p, kl_py_field(n, "left"), depth + 1),
                     kl_pyval_dx(p, kl_py_field(n, "right"), depth + 1));
    if (!e && !strcmp(o, "**")) {
      struct kl_dx *x = kl_pyval_dx(p, kl_py_field(n, "left"), depth + 1);
      struct kl_dx *y = kl_pyval_dx(p, kl_py_field(n, "right"), depth + 1);
      int64_t b, k, r = 1;
      bool ok = kl_dx_value(x, &b) && kl_dx_value(y, &k) && k >= 0 && k < 63;
      for (int64_t i = 0; ok && i < k; i++) ok = !__builtin_mul_overflow(r, b, &r);
      e = ok ? kl_dx_int(p->a, r) : kl_dx_leaf(p->a, kl_py_text(p, n));
    }
    if (!e) e = kl_dx_leaf(p->a, kl_py_text(p, n));
  } else if (!strcmp(ty, "call")) {
    e = kl_py_dx_call(p, n, depth);
  } else {
    e = kl_dx_leaf(p->a, kl_py_text(p, n));
  }
  if (e && e->end == 0) {
    e->start = ts_node_start_byte(n);
    e->end = ts_node_end_byte(n);
  }
  return e;
}

/* Up to three dimensions of a resolved size argument: a tuple or list, or a single value. */
