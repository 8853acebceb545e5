/* The Python front end's state and scopes (see py.h). */
#include "analyzer/input/py.h"

#include <stdlib.h>
#include <string.h>

#include "analyzer/core/node.h"

const TSNode kl_py_null = {{0, 0, 0, 0}, NULL, NULL};

/* ---- small helpers ---- */

/* By symbol and field id (analyzer/core/node.h): type and name must be literals. */
bool kl_py_is(TSNode n, const char *type) {
  return !kl_node_null(n) && kl_node_is(n, type);
}

TSNode kl_py_field(TSNode n, const char *name) {
  if (kl_node_null(n)) return n;
  return kl_node_field(n, name);
}

char *kl_py_text(struct kl_py *p, TSNode n) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  return kl_arena_strndup(p->a, p->t + s, e - s);
}

/* Whether node n's text is exactly s. */
bool kl_py_text_is(struct kl_py *p, TSNode n, const char *s) {
  if (kl_node_null(n)) return false;
  uint32_t a = ts_node_start_byte(n), e = ts_node_end_byte(n);
  return strlen(s) == e - a && !memcmp(p->t + a, s, e - a);
}

bool kl_py_contains(TSNode outer, TSNode inner) {
  return ts_node_start_byte(outer) <= ts_node_start_byte(inner) &&
         ts_node_end_byte(inner) <= ts_node_end_byte(outer);
}

/* The loop variable identifier id names, while a loop that holds it is unrolled; else NULL. */
const struct kl_py_loopvar *kl_py_loopvar(struct kl_py *p, TSNode id) {
  if (!p->nloopvars || !kl_py_is(id, "identifier")) return NULL;
  const char *t = kl_py_text(p, id);
  for (int i = p->nloopvars; i-- > 0;)
    if (!strcmp(p->loopvars[i].name, t) && kl_py_contains(p->loopvars[i].loop, id))
      return &p->loopvars[i];
  return NULL;
}

TSNode kl_py_unparen(TSNode n) {
  for (int i = 0; i < KL_PY_MAX_DEPTH && kl_py_is(n, "parenthesized_expression") &&
                  ts_node_named_child_count(n) > 0;
       i++)
    n = kl_node_named_child(n, 0);
  return n;
}

/* The innermost function that holds n (not n itself), or the module. From the functions the
 * walk collected: ts_node_parent re-descends from the root, quadratic over a large module. */
TSNode kl_py_scope(struct kl_py *p, TSNode n) {
  /* The functions are in document order: those that start at or before n are a prefix, found by
   * bisection, and the last of them that holds n is the innermost. */
  uint32_t at = ts_node_start_byte(n);
  size_t lo = 0, hi = p->nfns;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ts_node_start_byte(p->fns[mid]) <= at)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (size_t i = lo; i-- > 0;)
    if (!ts_node_eq(p->fns[i], n) && kl_py_contains(p->fns[i], n)) return p->fns[i];
  return p->root;
}

bool kl_py_idchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool kl_py_ident(const char *s) {
  if (!s || !kl_py_idchar(*s) || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!kl_py_idchar(*s)) return false;
  return true;
}

struct kl_span kl_py_span(struct kl_py *p, TSNode n) {
  return kl_diag_span(p->src, ts_node_start_byte(n), ts_node_end_byte(n));
}

/* ---- buffers ---- */

void kl_py_buf_init(struct kl_py_buf *b, struct kl_arena *a) {
  memset(b, 0, sizeof *b);
  b->a = a;
  kl_offmap_init(&b->map, a);
}

void kl_py_buf_raw(struct kl_py_buf *b, const char *s, uint32_t n) {
  if (b->n + n + 1 > b->cap) {
    uint32_t nc = b->cap ? b->cap : 256;
    while (nc < b->n + n + 1) nc *= 2;
    b->p = kl_arena_grow(b->a, b->p, b->cap, nc, 1);
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

/* Bytes copied from the file at file_off, one for one. */
static void kl_py_buf_linear(struct kl_py_buf *b, const char *s, uint32_t n, uint32_t file_off) {
  if (!n) return;
  kl_offmap_add(&b->map, b->n, n, file_off, n);
  kl_py_buf_raw(b, s, n);
}

/* Bytes that stand for the file range [file_off, file_off + file_len): an escape, or (with
 * file_len 0) text made up at that place. */
void kl_py_buf_collapsed(struct kl_py_buf *b, const char *s, uint32_t n, uint32_t file_off,
                         uint32_t file_len) {
  if (!n) return;
  kl_offmap_add(&b->map, b->n, n, file_off, file_len);
  kl_py_buf_raw(b, s, n);
}

void kl_py_buf_synth(struct kl_py_buf *b, const char *s, uint32_t anchor) {
  kl_py_buf_collapsed(b, s, (uint32_t)strlen(s), anchor, 0);
}

void kl_py_buf_append(struct kl_py_buf *b, const struct kl_py_buf *o) {
  uint32_t base = b->n;
  for (size_t i = 0; i < o->map.n; i++) {
    const struct kl_offmap_seg *s = &o->map.segs[i];
    kl_offmap_add(&b->map, base + s->buf, s->buf_len, s->file, s->file_len);
  }
  if (o->n) kl_py_buf_raw(b, o->p, o->n);
}

bool kl_py_fail(struct kl_py_buf *b, TSNode at, const char *why) {
  if (!b->why) {
    b->why = why;
    b->why_node = at;
  }
  return false;
}

/* ---- imports and names ---- */

static void kl_py_alias_add(struct kl_py *p, const char *name, const char *path) {
  KL_VEC_PUSH(p->a, p->aliases, p->naliases, p->cap_aliases);
  p->aliases[p->naliases++] = (struct kl_py_alias){name, path};
}

void kl_py_import(struct kl_py *p, TSNode n) {
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    if (kl_py_is(c, "aliased_import")) {
      kl_py_alias_add(p, kl_py_text(p, kl_py_field(c, "alias")),
                      kl_py_text(p, kl_py_field(c, "name")));
    } else if (kl_py_is(c, "dotted_name") && ts_node_named_child_count(c) > 0) {
      /* `import mlx.core` binds `mlx`, which then resolves to itself. */
      char *first = kl_py_text(p, kl_node_named_child(c, 0));
      kl_py_alias_add(p, first, first);
    }
  }
}

void kl_py_import_from(struct kl_py *p, TSNode n) {
  TSNode mod = kl_py_field(n, "module_name");
  if (kl_node_null(mod)) return;
  const char *m = kl_py_text(p, mod);
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    if (ts_node_eq(c, mod)) continue;
    if (kl_py_is(c, "aliased_import")) {
      kl_py_alias_add(p, kl_py_text(p, kl_py_field(c, "alias")),
                      kl_arena_printf(p->a, "%s.%s", m, kl_py_text(p, kl_py_field(c, "name"))));
    } else if (kl_py_is(c, "dotted_name")) {
      const char *nm = kl_py_text(p, c);
      kl_py_alias_add(p, nm, kl_arena_printf(p->a, "%s.%s", m, nm));
    } else if (kl_py_is(c, "wildcard_import")) {
      static const char *const api[] = {"metal_kernel", "MetalKernel", "compile_shader", "fast",
                                        "mps"};
      for (size_t j = 0; j < sizeof api / sizeof api[0]; j++)
        kl_py_alias_add(p, api[j], kl_arena_printf(p->a, "%s.%s", m, api[j]));
    }
  }
}

/* Dotted path of a name or attribute chain under the file's imports: `mx.fast.metal_kernel`
 * after `import mlx.core as mx` is "mlx.core.fast.metal_kernel". */
const char *kl_py_dotted(struct kl_py *p, TSNode n, int depth) {
  if (kl_node_null(n) || depth > KL_PY_MAX_DEPTH) return NULL;
  if (kl_py_is(n, "identifier")) {
    const char *name = kl_py_text(p, n);
    for (size_t i = p->naliases; i-- > 0;)
      if (!strcmp(p->aliases[i].name, name)) return p->aliases[i].path;
    /* Snippets often leave the import out; these names mean one thing in practice. */
    if (!strcmp(name, "mx")) return "mlx.core";
    if (!strcmp(name, "np")) return "numpy";
    return name;
  }
  if (kl_py_is(n, "attribute")) {
    const char *obj = kl_py_dotted(p, kl_py_field(n, "object"), depth + 1);
    TSNode at = kl_py_field(n, "attribute");
    if (!obj || kl_node_null(at)) return NULL;
    return kl_arena_printf(p->a, "%s.%s", obj, kl_py_text(p, at));
  }
  return NULL;
}

static bool kl_py_declares_global(struct kl_py *p, TSNode fn, const char *name) {
  for (size_t i = 0; i < p->nglobals; i++)
    if (ts_node_eq(p->globals[i].fn, fn) && !strcmp(p->globals[i].name, name)) return true;
  return false;
}

/* The parameter of function fn named name (null when none), with its place among the positional
 * parameters (-1: keyword-only or a splat) and its default value (null when none). */
static TSNode kl_py_param(struct kl_py *p, TSNode fn, const char *name, int *pos, TSNode *dflt) {
  TSNode params = kl_py_field(fn, "parameters");
  uint32_t k = kl_node_null(params) ? 0 : ts_node_named_child_count(params);
  int at = 0;
  bool kwonly = false;
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(params, i);
    if (kl_py_is(c, "keyword_separator") || kl_py_is(c, "list_splat_pattern")) kwonly = true;
    if (kl_py_is(c, "positional_separator") || kl_py_is(c, "keyword_separator")) continue;
    TSNode id = c;
    if (!kl_py_is(id, "identifier")) id = kl_py_field(c, "name");
    if (kl_node_null(id) && ts_node_named_child_count(c) > 0) id = kl_node_named_child(c, 0);
    bool splat = kl_py_is(c, "list_splat_pattern") || kl_py_is(c, "dictionary_splat_pattern");
    if (kl_py_is(id, "identifier") && kl_py_text_is(p, id, name)) {
      if (pos) *pos = kwonly || splat ? -1 : at;
      if (dflt) *dflt = splat ? kl_py_null : kl_py_field(c, "value");
      return c;
    }
    at++;
  }
  return kl_py_null;
}

/* Whether name is a parameter of function fn (a runtime value there). */
bool kl_py_is_param(struct kl_py *p, TSNode fn, const char *name) {
  return !kl_node_null(kl_py_param(p, fn, name, NULL, NULL));
}

/* What parameter name of fn holds: the argument of the call that binds fn in the chain in force,
 * else its default. A method's call does not pass `self`. */
bool kl_py_param_value(struct kl_py *p, TSNode fn, const char *name, TSNode *value) {
  int pos = -1;
  TSNode dflt = kl_py_null;
  if (kl_node_null(kl_py_param(p, fn, name, &pos, &dflt))) return false;
  for (const struct kl_py_env *e = p->env; e; e = e->up) {
    if (ts_node_eq(e->fn, fn) && e->opaque) return false;
    if (!ts_node_eq(e->fn, fn) || kl_node_null(e->call)) continue;
    TSNode callee = kl_py_field(e->call, "function");
    TSNode params = kl_py_field(fn, "parameters");
    TSNode first = kl_node_null(params) || !ts_node_named_child_count(params)
                       ? kl_py_null
                       : kl_node_named_child(params, 0);
    if (kl_py_is(callee, "attribute") &&
        (kl_py_text_is(p, first, "self") || kl_py_text_is(p, first, "cls")))
      pos--;
    /* f(*args): which argument lands on which parameter is not known. */
    TSNode args = kl_py_field(e->call, "arguments");
    for (uint32_t i = 0; i < ts_node_named_child_count(args); i++)
      if (kl_py_is(kl_node_named_child(args, i), "list_splat")) return false;
    TSNode arg = kl_py_arg(p, e->call, name, pos);
    if (!kl_node_null(arg)) {
      *value = arg;
      return true;
    }
    break;
  }
  if (kl_node_null(dflt)) return false;
  *value = dflt;
  return true;
}

static void kl_py_asg_add(struct kl_py *p, TSNode target, TSNode value, TSNode stmt, TSNode scope) {
  if (kl_py_is(target, "subscript")) {
    /* a[i] = v changes what a holds; the index is only read. */
    kl_py_asg_add(p, kl_py_field(target, "value"), kl_py_null, stmt, scope);
    return;
  }
  if (!kl_py_is(target, "identifier") && !kl_py_is(target, "attribute")) {
    /* Unpacking: a, b = 1, 2 pairs up; anything else is a runtime value per name. */
    uint32_t k = ts_node_named_child_count(target);
    TSNode v = kl_py_unparen(value);
    bool pair = (kl_py_is(v, "expression_list") || kl_py_is(v, "tuple")) &&
                ts_node_named_child_count(v) == k;
    for (uint32_t i = 0; i < k; i++)
      kl_py_asg_add(p, kl_node_named_child(target, i),
                    pair ? kl_node_named_child(v, i) : kl_py_null, stmt, scope);
    return;
  }
  KL_VEC_PUSH(p->a, p->asgs, p->nasgs, p->cap_asgs);
  struct kl_py_asg *g = &p->asgs[p->nasgs++];
  g->target = kl_py_text(p, target);
  g->value = value;
  g->stmt = stmt;
  g->end = ts_node_end_byte(stmt);
  if (!ts_node_eq(scope, p->root) &&
      (kl_py_is(target, "attribute") || kl_py_declares_global(p, scope, g->target)))
    scope = p->root;
  g->scope = scope;
}

void kl_py_asg_node(struct kl_py *p, TSNode n, TSNode scope) {
  if (kl_py_is(n, "assignment")) {
    TSNode left = kl_py_field(n, "left"), right = kl_py_field(n, "right");
    /* a = b = value: every target gets the final value. */
    TSNode v = right;
    for (int i = 0; i < KL_PY_MAX_DEPTH && kl_py_is(v, "assignment"); i++)
      v = kl_py_field(v, "right");
    if (!kl_node_null(left)) kl_py_asg_add(p, left, v, n, scope);
  } else if (kl_py_is(n, "augmented_assignment")) {
    TSNode left = kl_py_field(n, "left");
    if (!kl_node_null(left)) kl_py_asg_add(p, left, kl_py_null, n, scope);
  } else if (kl_py_is(n, "for_statement")) {
    TSNode left = kl_py_field(n, "left");
    if (!kl_node_null(left)) kl_py_asg_add(p, left, kl_py_null, left, scope);
  }
}

static uint32_t kl_py_slot(const char *s, size_t nslots) {
  uint64_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211u;
  return (uint32_t)(h & (nslots - 1));
}

/* Chain the assignments recorded since the last lookup by target (they are only appended, and
 * never change): a lookup then visits those of its name alone, in the same order, where it
 * compared every assignment of the file. */
static void kl_py_index_asgs(struct kl_py *p) {
  if (p->asg_indexed == p->nasgs) return;
  if (p->nasgs > p->asg_nslots) {
    size_t n = 64;
    while (n < 2 * p->nasgs) n <<= 1;
    p->asg_nslots = n;
    p->asg_head = kl_arena_alloc(p->a, n * sizeof *p->asg_head);
    p->asg_tail = kl_arena_alloc(p->a, n * sizeof *p->asg_tail);
    p->asg_next = kl_arena_alloc(p->a, n * sizeof *p->asg_next);
    p->asg_indexed = 0;
  }
  for (size_t i = p->asg_indexed; i < p->nasgs; i++) {
    uint32_t h = kl_py_slot(p->asgs[i].target, p->asg_nslots);
    p->asg_next[i] = 0;
    if (p->asg_tail[h]) p->asg_next[p->asg_tail[h] - 1] = (uint32_t)i + 1;
    else p->asg_head[h] = (uint32_t)i + 1;
    p->asg_tail[h] = (uint32_t)i + 1;
  }
  p->asg_indexed = p->nasgs;
}

/* The value bound to name (an identifier or attribute text) where `at` is. */
bool kl_py_lookup(struct kl_py *p, const char *name, TSNode at, TSNode *value) {
  uint32_t pos = ts_node_start_byte(at);
  TSNode s = kl_py_scope(p, at);
  for (int guard = 0; guard < KL_PY_MAX_DEPTH; guard++) {
    bool module = ts_node_eq(s, p->root);
    bool global = !module && kl_py_declares_global(p, s, name);
    /* A parameter holds its argument until the function assigns it (`tg = min(tg, 1024)`). */
    bool param = !module && !global && kl_py_is_param(p, s, name);
    const struct kl_py_asg *best = NULL, *last = NULL;
    bool later = false;
    if (!global) {
      kl_py_index_asgs(p);
      uint32_t first = p->asg_nslots ? p->asg_head[kl_py_slot(name, p->asg_nslots)] : 0;
      for (uint32_t k = first; k; k = p->asg_next[k - 1]) {
        const struct kl_py_asg *g = &p->asgs[k - 1];
        if (!ts_node_eq(g->scope, s) || strcmp(g->target, name)) continue;
        if (g->end <= pos) {
          if (!best || g->end > best->end) best = g;
        } else {
          later = true;
        }
        last = g;
      }
    }
    /* A module global read from a function may be assigned after the function. */
    if (!best && module) best = last;
    if (best) {
      *value = best->value;
      return !kl_node_null(best->value);
    }
    if (param) return kl_py_param_value(p, s, name, value);
    if (module) return false;
    if (later) return false; /* a local assigned only afterwards */
    s = kl_py_scope(p, s);
  }
  return false;
}

/* Follow a name to the expression it stands for (through at most KL_PY_MAX_DEPTH names). */
TSNode kl_py_resolve(struct kl_py *p, TSNode n) {
  n = kl_py_unparen(n);
  for (int i = 0; i < KL_PY_MAX_DEPTH && kl_py_is(n, "identifier"); i++) {
    TSNode v;
    if (!kl_py_lookup(p, kl_py_text(p, n), n, &v)) break;
    n = kl_py_unparen(v);
  }
  return n;
}

/* ---- string sources ---- */

static int kl_py_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static uint32_t kl_py_utf8(uint32_t cp, char *out) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = '?';
  if (cp == 0) cp = ' '; /* a NUL would end the text early for C string helpers */
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xE0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (char)(0xF0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Decode the body of one string literal, file bytes [s, e), into b. Every escape maps its
 * decoded bytes onto the escape's own file range; everything else maps byte for byte. */
void kl_py_decode(struct kl_py_buf *b, const char *t, uint32_t s, uint32_t e, bool raw,
                  bool fstr) {
  uint32_t run = s;
  for (uint32_t i = s; i < e;) {
    char c = t[i];
    if (fstr && (c == '{' || c == '}') && i + 1 < e && t[i + 1] == c) {
      kl_py_buf_linear(b, t + run, i - run, run);
      kl_py_buf_collapsed(b, t + i, 1, i, 2);
      i += 2;
      run = i;
      continue;
    }
    if (raw || c != '\\' || i + 1 >= e) {
      i++;
      continue;
    }
    kl_py_buf_linear(b, t + run, i - run, run);
    char out[8];
    uint32_t n = 0, len = 2;
    char x = t[i + 1];
    switch (x) {
    case '\n':
      n = 0;
      break; /* a line continuation */
    case '\r':
      len = i + 2 < e && t[i + 2] == '\n' ? 3 : 2;
      break;
    case '\\':
    case '\'':
    case '"':
      out[n++] = x;
      break;
    case 'a':
      out[n++] = '\a';
      break;
    case 'b':
      out[n++] = '\b';
      break;
    case 'f':
      out[n++] = '\f';
      break;
    case 'n':
      out[n++] = '\n';
      break;
    case 'r':
      out[n++] = '\r';
      break;
    case 't':
      out[n++] = '\t';
      break;
    case 'v':
      out[n++] = '\v';
      break;
    case 'x':
    case 'u':
    case 'U': {
      uint32_t want = x == 'x' ? 2 : x == 'u' ? 4 : 8, cp = 0, k = 0;
      for (; k < want && i + 2 + k < e && kl_py_hex(t[i + 2 + k]) >= 0; k++)
        cp = cp * 16 + (uint32_t)kl_py_hex(t[i + 2 + k]);
      if (k == want) {
        len = 2 + want;
        n = kl_py_utf8(cp, out);
      } else {
        out[n++] = '\\';
        out[n++] = x;
      }
      break;
    }
    case 'N': { /* \N{NAME}: the character is not needed, only its place */
      uint32_t k = i + 2;
      if (k < e && t[k] == '{') {
        while (k < e && t[k] != '}') k++;
        len = k < e ? k + 1 - i : 2;
      }
      out[n++] = '?';
      break;
    }
    default:
      if (x >= '0' && x <= '7') {
        uint32_t cp = 0, k = 0;
        for (; k < 3 && i + 1 + k < e && t[i + 1 + k] >= '0' && t[i + 1 + k] <= '7'; k++)
          cp = cp * 8 + (uint32_t)(t[i + 1 + k] - '0');
        len = 1 + k;
        n = kl_py_utf8(cp, out);
      } else {
        /* Python keeps an unknown escape as written. */
        out[n++] = '\\';
        out[n++] = x;
      }
    }
    if (n == 2 && out[0] == '\\' && len == 2)
      kl_py_buf_linear(b, t + i, 2, i);
    else
      kl_py_buf_collapsed(b, out, n, i, len);
    i += len;
    run = i;
  }
  kl_py_buf_linear(b, t + run, e - run, run);
}

/* ---- arguments ---- */

/* Value of keyword `name` in what a `**opts` argument unpacks: dict(name=...) or {"name": ...}. */
static TSNode kl_py_splat_arg(struct kl_py *p, TSNode splat, const char *name) {
  if (ts_node_named_child_count(splat) == 0) return kl_py_null;
  TSNode v = kl_py_resolve(p, kl_node_named_child(splat, 0));
  if (kl_py_is(v, "call") && kl_py_text_is(p, kl_py_field(v, "function"), "dict")) {
    TSNode args = kl_py_field(v, "arguments");
    uint32_t k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(args, i);
      if (kl_py_is(c, "keyword_argument") && kl_py_text_is(p, kl_py_field(c, "name"), name))
        return kl_py_field(c, "value");
    }
  } else if (kl_py_is(v, "dictionary")) {
    uint32_t k = ts_node_named_child_count(v);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(v, i);
      if (!kl_py_is(c, "pair")) continue;
      TSNode key = kl_py_field(c, "key");
      /* A plain "name" key: its text is the quoted name. */
      uint32_t s = ts_node_start_byte(key), e = ts_node_end_byte(key);
      if (kl_py_is(key, "string") && e - s == strlen(name) + 2 &&
          !memcmp(p->t + s + 1, name, strlen(name)))
        return kl_py_field(c, "value");
    }
  }
  return kl_py_null;
}

/* Value of keyword argument `name` (also inside a `**opts` it unpacks), or of the pos-th
 * positional argument (pos < 0: none). */
TSNode kl_py_arg(struct kl_py *p, TSNode call, const char *name, int pos) {
  TSNode args = kl_py_field(call, "arguments");
  uint32_t k = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  int seen = 0;
  TSNode from_splat = kl_py_null;
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(args, i);
    if (kl_py_is(c, "keyword_argument")) {
      if (kl_py_text_is(p, kl_py_field(c, "name"), name)) return kl_py_field(c, "value");
      continue;
    }
    if (kl_py_is(c, "dictionary_splat")) {
      if (kl_node_null(from_splat)) from_splat = kl_py_splat_arg(p, c, name);
      continue;
    }
    if (kl_py_is(c, "comment") || kl_py_is(c, "list_splat")) continue;
    if (seen++ == pos) return c;
  }
  return from_splat;
}
