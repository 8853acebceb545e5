/* The dialect layer: blank what is not C++ (address spaces, function qualifiers, _Pragma) without
 * moving a byte, parse with tree-sitter-cpp, and when that leaves ERROR nodes, expand the macros
 * the file and its local headers define and keep that parse if it is cleaner. */
#include "grammar/dialect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const TSLanguage *tree_sitter_cpp(void);
const TSLanguage *tree_sitter_python(void);

const TSLanguage *kl_dialect_cpp(void) {
  return tree_sitter_cpp();
}
const TSLanguage *kl_dialect_python(void) {
  return tree_sitter_python();
}

/* A pathological file must not stall a whole lint run; real kernels parse in milliseconds. */
#define KL_PARSE_TIMEOUT_US 10000000u
/* Expansion limits: nested argument prescans, header nesting, tokens produced, bytes produced. */
#define KL_EXP_MAX_DEPTH 64
#define KL_EXP_MAX_INCLUDE_DEPTH 16
#define KL_EXP_MAX_TOKENS 4000000u
#define KL_EXP_MAX_BYTES KL_SOURCE_MAX_BYTES
/* Ancestors kl_dialect_lead climbs before giving up: far beyond any real nesting. */
#define KL_LEAD_MAX_UP 512

static inline int kl_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static inline int kl_ident_char(char c) {
  return kl_ident_start(c) || (c >= '0' && c <= '9');
}
static inline int kl_digit(char c) {
  return c >= '0' && c <= '9';
}

/* End of a pp-number starting at i, so `1e5f` or `0x1fdevice` never look like identifiers. */
static uint32_t kl_skip_number(const char *t, uint32_t len, uint32_t i) {
  while (i < len) {
    char c = t[i];
    if ((c == '+' || c == '-') &&
        (t[i - 1] == 'e' || t[i - 1] == 'E' || t[i - 1] == 'p' || t[i - 1] == 'P')) {
      i++;
    } else if (kl_ident_char(c) || c == '.' || c == '\'') {
      i++;
    } else {
      break;
    }
  }
  return i;
}

uint32_t kl_dialect_skip_literal(const char *t, uint32_t len, uint32_t i) {
  char q = t[i];
  for (i++; i < len && t[i] != q && t[i] != '\n'; i++)
    if (t[i] == '\\' && i + 1 < len) i++;
  return i < len && t[i] == q ? i + 1 : i;
}

uint32_t kl_dialect_skip_comment(const char *t, uint32_t len, uint32_t i) {
  if (i + 1 >= len || t[i] != '/') return i;
  if (t[i + 1] == '/') {
    while (i < len && t[i] != '\n') i++;
    return i;
  }
  if (t[i + 1] == '*') {
    i += 2;
    while (i + 1 < len && !(t[i] == '*' && t[i + 1] == '/')) i++;
    return i + 1 < len ? i + 2 : len;
  }
  return i;
}

/* ---- Blanking ---------------------------------------------------------------------------- */

/* The MSL word at [s, s+n), if it is one; a switch on length keeps this off the profile. */
static int kl_dialect_word(const char *s, uint32_t n, enum kl_kw *kind) {
#define KL_IS(w) (!memcmp(s, w, n))
  switch (n) {
  case 6:
    if (KL_IS("device")) return *kind = KL_KW_DEVICE, 1;
    if (KL_IS("thread")) return *kind = KL_KW_THREAD, 1;
    if (KL_IS("kernel")) return *kind = KL_KW_KERNEL, 1;
    if (KL_IS("vertex")) return *kind = KL_KW_VERTEX, 1;
    return 0;
  case 8:
    if (KL_IS("constant")) return *kind = KL_KW_CONSTANT, 1;
    if (KL_IS("fragment")) return *kind = KL_KW_FRAGMENT, 1;
    if (KL_IS("ray_data")) return *kind = KL_KW_RAY_DATA, 1;
    return 0;
  case 11:
    if (KL_IS("threadgroup")) return *kind = KL_KW_THREADGROUP, 1;
    if (KL_IS("object_data")) return *kind = KL_KW_OBJECT_DATA, 1;
    return 0;
  case 22:
    if (KL_IS("threadgroup_imageblock")) return *kind = KL_KW_THREADGROUP_IMAGEBLOCK, 1;
    return 0;
  default:
    return 0;
  }
#undef KL_IS
}

/* End of a well-formed `_Pragma ( "..." )` whose name ends at i, or 0 when it is not one. */
static uint32_t kl_pragma_op_end(const char *t, uint32_t len, uint32_t i) {
  while (i < len && (t[i] == ' ' || t[i] == '\t')) i++;
  if (i >= len || t[i] != '(') return 0;
  for (i++; i < len && (t[i] == ' ' || t[i] == '\t');) i++;
  if (i >= len || t[i] != '"') return 0;
  uint32_t e = kl_dialect_skip_literal(t, len, i);
  if (e == i || t[e - 1] != '"' || e - i < 2) return 0;
  for (i = e; i < len && (t[i] == ' ' || t[i] == '\t');) i++;
  return i < len && t[i] == ')' ? i + 1 : 0;
}

static void kl_dialect_record(struct kl_arena *a, struct kl_unit *u, uint32_t off, uint32_t len,
                              enum kl_kw kind) {
  KL_VEC_PUSH(a, u->kws, u->nkws, u->cap_kws);
  u->kws[u->nkws++] = (struct kl_keyword){off, len, kind};
}

/* Blank MSL keywords in buf (a private copy) and record them. Words inside comments, string
 * literals and [[attributes]] are left alone: `[[kernel]]` and `[[threadgroup(0)]]` are C++. */
static void kl_dialect_blank(struct kl_arena *a, char *buf, uint32_t len, struct kl_unit *u) {
  int attr_depth = 0;
  for (uint32_t i = 0; i < len;) {
    char c = buf[i];
    if (c == '/') {
      uint32_t e = kl_dialect_skip_comment(buf, len, i);
      i = e > i ? e : i + 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      i = kl_dialect_skip_literal(buf, len, i);
      continue;
    }
    if (kl_digit(c)) {
      i = kl_skip_number(buf, len, i + 1);
      continue;
    }
    if (c == '[' && i + 1 < len && buf[i + 1] == '[') {
      attr_depth++;
      i += 2;
      continue;
    }
    if (c == ']' && i + 1 < len && buf[i + 1] == ']' && attr_depth > 0) {
      attr_depth--;
      i += 2;
      continue;
    }
    if (!kl_ident_start(c)) {
      i++;
      continue;
    }
    uint32_t s = i;
    while (i < len && kl_ident_char(buf[i])) i++;
    if (attr_depth > 0) continue;
    /* `metal::thread` or `x.device` are names, not qualifiers. */
    if (s >= 1 && (buf[s - 1] == '.' || buf[s - 1] == ':' || buf[s - 1] == '>')) continue;
    enum kl_kw kind;
    if (kl_dialect_word(buf + s, i - s, &kind)) {
      kl_dialect_record(a, u, s, i - s, kind);
      memset(buf + s, ' ', i - s);
    } else if (i - s == 7 && !memcmp(buf + s, "_Pragma", 7)) {
      uint32_t e = kl_pragma_op_end(buf, len, i);
      if (e) {
        kl_dialect_record(a, u, s, e - s, KL_KW_PRAGMA_OP);
        memset(buf + s, ' ', e - s);
        i = e;
      }
    }
  }
}

/* ---- Walking ----------------------------------------------------------------------------- */

/* A cursor, not recursion: a deep expression chain must not overflow the stack. */
void kl_dialect_walk(TSNode root, enum kl_walk (*visit)(TSNode n, void *ctx), void *ctx,
                     uint32_t *depth) {
  TSTreeCursor cur = ts_tree_cursor_new(root);
  uint32_t d = 0;
  for (;;) {
    if (depth) *depth = d;
    enum kl_walk next = visit(ts_tree_cursor_current_node(&cur), ctx);
    if (next == KL_WALK_STOP) break;
    if (next == KL_WALK_DESCEND && ts_tree_cursor_goto_first_child(&cur)) {
      d++;
      continue;
    }
    /* Climb to the nearest node with a next sibling. Back at root (depth 0) the walk is over:
     * root's siblings are not its descendants. A parent the cursor cannot reach (root seen only
     * through an alias) ends it too. */
    while (d > 0 && !ts_tree_cursor_goto_next_sibling(&cur))
      d = ts_tree_cursor_goto_parent(&cur) ? d - 1 : 0;
    if (d == 0) break;
  }
  ts_tree_cursor_delete(&cur);
}

/* ---- Parsing ----------------------------------------------------------------------------- */

/* Subtrees without an error are not entered: nothing in them can add to the count. */
static enum kl_walk kl_dialect_count_error(TSNode n, void *ctx) {
  unsigned *count = ctx;
  if (ts_node_is_missing(n)) {
    (*count)++;
    return KL_WALK_SKIP;
  }
  if (!ts_node_has_error(n)) return KL_WALK_SKIP;
  if (ts_node_symbol(n) == (TSSymbol)-1) (*count)++;
  return KL_WALK_DESCEND;
}

/* ERROR and MISSING nodes. */
static unsigned kl_dialect_count_errors(TSNode root) {
  if (!ts_node_has_error(root)) return 0;
  unsigned count = 0;
  kl_dialect_walk(root, kl_dialect_count_error, &count, NULL);
  return count;
}

/* Parse buf; with old (already edited to match buf) the parse reuses its unchanged subtrees. */
static TSTree *kl_dialect_ts_parse(const char *buf, uint32_t len, const TSTree *old) {
  TSParser *p = ts_parser_new();
  ts_parser_set_language(p, kl_dialect_cpp());
  ts_parser_set_timeout_micros(p, KL_PARSE_TIMEOUT_US);
  TSTree *t = ts_parser_parse_string(p, old, buf, len);
  ts_parser_delete(p);
  return t;
}

/* Row and byte column of offset off in t, continuing from a known point at offset from. */
static TSPoint kl_point_advance(const char *t, uint32_t from, TSPoint at, uint32_t off) {
  for (uint32_t i = from; i < off; i++) {
    if (t[i] == '\n') {
      at.row++;
      at.column = 0;
    } else {
      at.column++;
    }
  }
  return at;
}

/* The first tree, edited so that it describes the expanded buffer: every collapsed segment of
 * the expansion map is one replacement. The second parse then re-reads only the replaced text,
 * which keeps a file that needs its macros within a small margin of one parse. Returns NULL when
 * the untouched stretches differ between the two blanked buffers (an expansion changed how the
 * text around it is blanked), where reuse would be wrong. */
static TSTree *kl_dialect_edited_tree(const struct kl_unit *first, const char *nbuf, uint32_t nlen,
                                      const struct kl_offmap *emap) {
  for (size_t i = 0; i < emap->n; i++) {
    const struct kl_offmap_seg *g = &emap->segs[i];
    if (g->buf_len == g->file_len &&
        (g->file + g->file_len > first->len || g->buf + g->buf_len > nlen ||
         memcmp(first->buf + g->file, nbuf + g->buf, g->buf_len) != 0))
      return NULL;
  }
  /* Points of each replacement's start and old end in the first buffer, in one forward scan. */
  TSPoint *starts = kl_arena_xmalloc(sizeof *starts * (emap->n ? emap->n : 1));
  TSPoint *ends = kl_arena_xmalloc(sizeof *ends * (emap->n ? emap->n : 1));
  TSPoint at = {0, 0};
  uint32_t off = 0;
  for (size_t i = 0; i < emap->n; i++) {
    const struct kl_offmap_seg *g = &emap->segs[i];
    at = kl_point_advance(first->buf, off, at, g->file);
    starts[i] = at;
    at = kl_point_advance(first->buf, g->file, at, g->file + g->file_len);
    ends[i] = at;
    off = g->file + g->file_len;
  }
  TSTree *t = ts_tree_copy(first->tree);
  /* From the last replacement back, so each edit's offsets are still those of the first buffer. */
  for (size_t i = emap->n; i-- > 0;) {
    const struct kl_offmap_seg *g = &emap->segs[i];
    if (g->buf_len == g->file_len) continue;
    TSInputEdit e = {
        .start_byte = g->file,
        .old_end_byte = g->file + g->file_len,
        .new_end_byte = g->file + g->buf_len,
        .start_point = starts[i],
        .old_end_point = ends[i],
        .new_end_point = kl_point_advance(nbuf, g->buf, starts[i], g->buf + g->buf_len),
    };
    ts_tree_edit(t, &e);
  }
  free(starts);
  free(ends);
  return t;
}

/* Deepest bracket nesting of a buffer; an expansion past the engine's limit is not used. */
static unsigned kl_dialect_nesting(const char *t, uint32_t n) {
  unsigned depth = 0, max = 0;
  for (uint32_t i = 0; i < n;) {
    char c = t[i];
    if (c == '/') {
      uint32_t e = kl_dialect_skip_comment(t, n, i);
      i = e > i ? e : i + 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      i = kl_dialect_skip_literal(t, n, i);
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      if (++depth > max) max = depth;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      depth--;
    }
    i++;
  }
  return max;
}

/* ---- Macro expansion --------------------------------------------------------------------- *
 * A small C preprocessor, good enough for kernel libraries: object- and function-like macros,
 * __VA_ARGS__, # and ##, argument prescan, and rescanning with hide sets (a macro is never
 * re-expanded inside its own expansion). Directives other than #define/#undef/#include "x"
 * are left in place: tree-sitter-cpp parses #if branches itself. */

enum kl_tk { KL_TK_WS, KL_TK_IDENT, KL_TK_NUM, KL_TK_STR, KL_TK_PUNCT };

/* Macros a token may no longer expand to (Prosser's hide set), as a shared linked list. */
struct kl_hs {
  uint32_t macro;
  const struct kl_hs *next;
};

struct kl_tok {
  const char *p;
  uint32_t len;
  uint8_t kind;
  int16_t param; /* in a macro body: parameter index, else -1 */
  const struct kl_hs *hs;
};

struct kl_tv {
  struct kl_tok *v;
  size_t n, cap;
};

struct kl_macro {
  const char *name;
  uint32_t nlen, id;
  bool fn, variadic, defined;
  uint32_t nparams; /* including __VA_ARGS__ when variadic */
  struct kl_tok *body;
  uint32_t nbody;
};

struct kl_exp {
  struct kl_arena *a;
  const char *text; /* the file being expanded; pulled from while collecting arguments */
  const char *include_dir;
  uint32_t len, pos;
  struct kl_macro **slots; /* open-addressing hash by name */
  size_t cap, nmacros;
  size_t ndefined;
  char **seen; /* headers already read (include guards and cycles) */
  size_t nseen;
  size_t budget;
  bool failed;
};

static void kl_tv_push(struct kl_tv *tv, struct kl_tok t) {
  if (tv->n == tv->cap) {
    tv->cap = tv->cap ? tv->cap * 2 : 32;
    tv->v = kl_arena_xrealloc(tv->v, tv->cap * sizeof *tv->v);
  }
  tv->v[tv->n++] = t;
}

static void kl_tv_free(struct kl_tv *tv) {
  free(tv->v);
  tv->v = NULL;
  tv->n = tv->cap = 0;
}

/* One token at t[i] (i < len); whitespace, comments and line splices are one WS token. */
static struct kl_tok kl_lex(const char *t, uint32_t len, uint32_t i) {
  struct kl_tok k = {t + i, 1, KL_TK_PUNCT, -1, NULL};
  uint32_t s = i;
  char c = t[i];
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '\\' ||
      (c == '/' && kl_dialect_skip_comment(t, len, i) > i)) {
    for (;;) {
      if (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r' || t[i] == '\f' ||
                      t[i] == '\v')) {
        i++;
      } else if (i + 1 < len && t[i] == '\\' && (t[i + 1] == '\n' || t[i + 1] == '\r')) {
        i += 2;
      } else if (i < len && t[i] == '/' && kl_dialect_skip_comment(t, len, i) > i) {
        i = kl_dialect_skip_comment(t, len, i);
      } else {
        break;
      }
    }
    if (i == s) return k; /* a lone backslash */
    k.kind = KL_TK_WS;
  } else if (kl_ident_start(c)) {
    while (i < len && kl_ident_char(t[i])) i++;
    k.kind = KL_TK_IDENT;
  } else if (kl_digit(c) || (c == '.' && i + 1 < len && kl_digit(t[i + 1]))) {
    i = kl_skip_number(t, len, i + 1);
    k.kind = KL_TK_NUM;
  } else if (c == '"' || c == '\'') {
    i = kl_dialect_skip_literal(t, len, i);
    k.kind = KL_TK_STR;
  } else {
    static const char *const multi[] = {"...", "<<=", ">>=", "##", "::", "->", "++", "--",
                                        "<<",  ">>",  "<=",  ">=", "==", "!=", "&&", "||",
                                        "+=",  "-=",  "*=",  "/=", "%=", "&=", "|=", "^="};
    for (size_t m = 0; m < sizeof multi / sizeof multi[0]; m++) {
      size_t n = strlen(multi[m]);
      if (i + n <= len && !memcmp(t + i, multi[m], n)) {
        k.len = (uint32_t)n;
        return k;
      }
    }
    return k;
  }
  k.len = i - s;
  return k;
}

static bool kl_tok_is(const struct kl_tok *t, const char *s) {
  size_t n = strlen(s);
  return t->kind != KL_TK_WS && t->len == n && !memcmp(t->p, s, n);
}

static uint32_t kl_hash(const char *s, uint32_t n) {
  uint32_t h = 2166136261u;
  for (uint32_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

static struct kl_macro **kl_exp_slot(struct kl_exp *x, const char *name, uint32_t n) {
  size_t i = kl_hash(name, n) & (x->cap - 1);
  while (x->slots[i] && !(x->slots[i]->nlen == n && !memcmp(x->slots[i]->name, name, n)))
    i = (i + 1) & (x->cap - 1);
  return &x->slots[i];
}

static const struct kl_macro *kl_exp_lookup(const struct kl_exp *x, const char *name, uint32_t n) {
  if (!x->ndefined) return NULL;
  size_t i = kl_hash(name, n) & (x->cap - 1);
  for (; x->slots[i]; i = (i + 1) & (x->cap - 1))
    if (x->slots[i]->nlen == n && !memcmp(x->slots[i]->name, name, n))
      return x->slots[i]->defined ? x->slots[i] : NULL;
  return NULL;
}

static void kl_exp_undef(struct kl_exp *x, const char *name, uint32_t n) {
  if (!x->cap) return;
  struct kl_macro **s = kl_exp_slot(x, name, n);
  if (*s && (*s)->defined) {
    (*s)->defined = false;
    x->ndefined--;
  }
}

/* Install (or replace) a macro; its id stays stable across redefinitions for hide sets. */
static void kl_exp_install(struct kl_exp *x, struct kl_macro *m) {
  if ((x->nmacros + 1) * 2 > x->cap) {
    size_t oc = x->cap;
    struct kl_macro **old = x->slots;
    x->cap = oc ? oc * 2 : 64;
    x->slots = calloc(x->cap, sizeof *x->slots);
    if (!x->slots) abort();
    for (size_t i = 0; i < oc; i++)
      if (old[i]) *kl_exp_slot(x, old[i]->name, old[i]->nlen) = old[i];
    free(old);
  }
  struct kl_macro **s = kl_exp_slot(x, m->name, m->nlen);
  if (*s) {
    m->id = (*s)->id;
    if (!(*s)->defined) x->ndefined++;
  } else {
    m->id = (uint32_t)x->nmacros++;
    x->ndefined++;
  }
  m->defined = true;
  *s = m;
}

/* Parse `NAME[(params)] body` (one logical line, splices still in) and install it. */
static void kl_exp_define(struct kl_exp *x, const char *t, uint32_t len) {
  /* A spliced copy: bodies outlive header buffers, and splices vanish from the token stream. */
  char *d = kl_arena_alloc(x->a, len + 1);
  uint32_t n = 0;
  for (uint32_t i = 0; i < len; i++) {
    if (t[i] == '\\' && i + 1 < len && t[i + 1] == '\n') {
      d[n++] = ' ';
      i++;
    } else if (t[i] == '\\' && i + 2 < len && t[i + 1] == '\r' && t[i + 2] == '\n') {
      d[n++] = ' ';
      i += 2;
    } else {
      d[n++] = t[i];
    }
  }
  uint32_t i = 0;
  while (i < n && (d[i] == ' ' || d[i] == '\t')) i++;
  if (i >= n || !kl_ident_start(d[i])) return;
  struct kl_macro *m = kl_arena_alloc(x->a, sizeof *m);
  m->name = d + i;
  while (i < n && kl_ident_char(d[i])) i++;
  m->nlen = (uint32_t)(d + i - m->name);
  const char *params[128];
  uint32_t plen[128];
  if (i < n && d[i] == '(') {
    m->fn = true;
    i++;
    for (;;) {
      while (i < n && (d[i] == ' ' || d[i] == '\t')) i++;
      if (i < n && d[i] == ')') {
        i++;
        break;
      }
      if (i + 3 <= n && !memcmp(d + i, "...", 3)) {
        params[m->nparams] = "__VA_ARGS__";
        plen[m->nparams++] = 11;
        m->variadic = true;
        i += 3;
      } else if (i < n && kl_ident_start(d[i]) && m->nparams < 127) {
        params[m->nparams] = d + i;
        uint32_t s = i;
        while (i < n && kl_ident_char(d[i])) i++;
        plen[m->nparams++] = i - s;
        if (i + 3 <= n && !memcmp(d + i, "...", 3)) { /* GNU named variadic: `args...` */
          m->variadic = true;
          i += 3;
        }
      } else {
        return; /* malformed parameter list: not a macro we can use */
      }
      while (i < n && (d[i] == ' ' || d[i] == '\t')) i++;
      if (i < n && d[i] == ',' && !m->variadic) {
        i++;
        continue;
      }
      if (i < n && d[i] == ')') {
        i++;
        break;
      }
      return;
    }
  }
  struct kl_tv body = {0};
  while (i < n) {
    struct kl_tok k = kl_lex(d, n, i);
    i += k.len;
    if (k.kind == KL_TK_WS) {
      if (!body.n || body.v[body.n - 1].kind == KL_TK_WS) continue;
      k.p = " ";
      k.len = 1;
    } else if (k.kind == KL_TK_IDENT) {
      for (uint32_t p = 0; p < m->nparams; p++)
        if (plen[p] == k.len && !memcmp(params[p], k.p, k.len)) k.param = (int16_t)p;
    }
    kl_tv_push(&body, k);
  }
  if (body.n && body.v[body.n - 1].kind == KL_TK_WS) body.n--;
  m->nbody = (uint32_t)body.n;
  m->body = kl_arena_alloc(x->a, sizeof *m->body * (body.n ? body.n : 1));
  if (body.n) memcpy(m->body, body.v, sizeof *m->body * body.n);
  kl_tv_free(&body);
  kl_exp_install(x, m);
}

/* End of the logical line starting at i (splices continue it); points at the '\n' or len. */
static uint32_t kl_logical_line_end(const char *t, uint32_t len, uint32_t i) {
  /* After a line comment opener, neither a block opener nor a quote opens anything. */
  bool line_comment = false;
  while (i < len && t[i] != '\n') {
    if (t[i] == '\\' && i + 1 < len && t[i + 1] == '\n') {
      i += 2;
    } else if (t[i] == '\\' && i + 2 < len && t[i + 1] == '\r' && t[i + 2] == '\n') {
      i += 3;
    } else if (line_comment) {
      i++;
    } else if (t[i] == '/' && i + 1 < len && t[i + 1] == '/') {
      line_comment = true;
      i += 2;
    } else if (t[i] == '"' || t[i] == '\'') {
      i = kl_dialect_skip_literal(t, len, i);
    } else if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') {
      /* A block comment may carry the directive over lines. */
      i = kl_dialect_skip_comment(t, len, i);
    } else {
      i++;
    }
  }
  return i;
}

static void kl_exp_read_header(struct kl_exp *x, const char *dir, const char *name, uint32_t n,
                               int depth);

/* Act on the directive in [s, e) (s at '#'): #define, #undef, and #include "x" for headers. */
static void kl_exp_directive(struct kl_exp *x, const char *t, uint32_t s, uint32_t e,
                             const char *dir, bool defines_only, int depth) {
  uint32_t i = s + 1;
  while (i < e && (t[i] == ' ' || t[i] == '\t')) i++;
  uint32_t w = i;
  while (i < e && kl_ident_char(t[i])) i++;
  uint32_t wl = i - w;
  if (wl == 6 && !memcmp(t + w, "define", 6) && i < e && (t[i] == ' ' || t[i] == '\t')) {
    kl_exp_define(x, t + i, e - i);
  } else if (wl == 5 && !memcmp(t + w, "undef", 5) && !defines_only) {
    while (i < e && (t[i] == ' ' || t[i] == '\t')) i++;
    uint32_t ns = i;
    while (i < e && kl_ident_char(t[i])) i++;
    kl_exp_undef(x, t + ns, i - ns);
  } else if (wl == 7 && !memcmp(t + w, "include", 7) && dir) {
    while (i < e && (t[i] == ' ' || t[i] == '\t')) i++;
    if (i >= e || t[i] != '"') return;
    uint32_t ns = ++i;
    while (i < e && t[i] != '"') i++;
    if (i < e && i > ns) kl_exp_read_header(x, dir, t + ns, i - ns, depth + 1);
  }
}

/* Read the #define lines of a local header (and of the local headers it includes). */
static void kl_exp_read_header(struct kl_exp *x, const char *dir, const char *name, uint32_t n,
                               int depth) {
  if (depth > KL_EXP_MAX_INCLUDE_DEPTH || n > 1024 || strlen(dir) > 2048) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/%.*s", dir, (int)n, name);
  FILE *f = fopen(path, "rb");
  if (!f && x->include_dir && strcmp(dir, x->include_dir) && strlen(x->include_dir) <= 2048) {
    snprintf(path, sizeof path, "%s/%.*s", x->include_dir, (int)n, name);
    f = fopen(path, "rb");
  }
  if (!f) return;
  for (size_t k = 0; k < x->nseen; k++) {
    if (!strcmp(x->seen[k], path)) {
      fclose(f);
      return;
    }
  }
  x->seen = kl_arena_xrealloc(x->seen, (x->nseen + 1) * sizeof *x->seen);
  x->seen[x->nseen++] = kl_arena_strdup(x->a, path);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  bool too_big = false;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 16384;
      buf = kl_arena_xrealloc(buf, cap);
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    if (!got) break;
    len += got;
    if (len > KL_SOURCE_MAX_BYTES) {
      too_big = true;
      break;
    }
  }
  fclose(f);
  if (too_big) {
    free(buf);
    return;
  }
  /* Nested includes resolve next to this header. */
  const char *slash = strrchr(path, '/');
  char *hdir = kl_arena_strndup(x->a, path, (size_t)(slash - path));
  uint32_t L = (uint32_t)len;
  bool line_start = true;
  for (uint32_t i = 0; i < L;) {
    char c = buf[i];
    if (c == '\n') {
      line_start = true;
      i++;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      i++;
    } else if (c == '/' && kl_dialect_skip_comment(buf, L, i) > i) {
      i = kl_dialect_skip_comment(buf, L, i);
    } else if (c == '#' && line_start) {
      uint32_t e = kl_logical_line_end(buf, L, i);
      kl_exp_directive(x, buf, i, e, hdir, true, depth);
      i = e;
    } else {
      line_start = false;
      i = (c == '"' || c == '\'') ? kl_dialect_skip_literal(buf, L, i) : i + 1;
    }
  }
  free(buf);
}

static const struct kl_hs *kl_hs_add(struct kl_exp *x, const struct kl_hs *hs, uint32_t id) {
  struct kl_hs *h = kl_arena_alloc(x->a, sizeof *h);
  h->macro = id;
  h->next = hs;
  return h;
}

static bool kl_hs_has(const struct kl_hs *hs, uint32_t id) {
  for (; hs; hs = hs->next)
    if (hs->macro == id) return true;
  return false;
}

static const struct kl_hs *kl_hs_union(struct kl_exp *x, const struct kl_hs *a,
                                       const struct kl_hs *b) {
  for (; a; a = a->next)
    if (!kl_hs_has(b, a->macro)) b = kl_hs_add(x, b, a->macro);
  return b;
}

/* Push tokens onto the pending stack (kept reversed, so the first token is popped first). */
static void kl_exp_push_front(struct kl_exp *x, struct kl_tv *pend, const struct kl_tok *v,
                              size_t n) {
  if (n > x->budget) {
    x->failed = true;
    return;
  }
  x->budget -= n;
  for (size_t i = n; i-- > 0;) kl_tv_push(pend, v[i]);
}

/* Next token from pend, else (when pull) from the file; false at the end. */
static bool kl_exp_take(struct kl_exp *x, struct kl_tv *pend, bool pull, struct kl_tok *out) {
  if (pend->n) {
    *out = pend->v[--pend->n];
    return true;
  }
  if (!pull || x->pos >= x->len) return false;
  *out = kl_lex(x->text, x->len, x->pos);
  x->pos += out->len;
  return true;
}

/* Whether the next non-space token is '(' (looking through pend, then the file when pull). */
static bool kl_exp_lparen_next(struct kl_exp *x, const struct kl_tv *pend, bool pull) {
  for (size_t i = pend->n; i-- > 0;)
    if (pend->v[i].kind != KL_TK_WS) return kl_tok_is(&pend->v[i], "(");
  if (!pull) return false;
  for (uint32_t i = x->pos; i < x->len;) {
    struct kl_tok k = kl_lex(x->text, x->len, i);
    if (k.kind != KL_TK_WS) return kl_tok_is(&k, "(");
    i += k.len;
  }
  return false;
}

static void kl_exp_run(struct kl_exp *x, struct kl_tv *pend, bool pull, struct kl_tv *out,
                       int depth);

static void kl_tv_trim(const struct kl_tv *tv, size_t *s, size_t *e) {
  *s = 0;
  *e = tv->n;
  while (*s < *e && tv->v[*s].kind == KL_TK_WS) (*s)++;
  while (*e > *s && tv->v[*e - 1].kind == KL_TK_WS) (*e)--;
}

/* `#arg`: the argument's spelling as a string literal, spaces collapsed, quotes escaped. */
static struct kl_tok kl_exp_stringize(struct kl_exp *x, const struct kl_tv *arg) {
  size_t s, e, n = 3;
  kl_tv_trim(arg, &s, &e);
  for (size_t i = s; i < e; i++) n += 2 * arg->v[i].len + 1;
  char *d = kl_arena_alloc(x->a, n);
  size_t k = 0;
  d[k++] = '"';
  for (size_t i = s; i < e; i++) {
    const struct kl_tok *t = &arg->v[i];
    if (t->kind == KL_TK_WS) {
      d[k++] = ' ';
      continue;
    }
    for (uint32_t j = 0; j < t->len; j++) {
      if (t->kind == KL_TK_STR && (t->p[j] == '"' || t->p[j] == '\\')) d[k++] = '\\';
      d[k++] = t->p[j];
    }
  }
  d[k++] = '"';
  return (struct kl_tok){d, (uint32_t)k, KL_TK_STR, -1, NULL};
}

/* `a ## b`: one token spelled as both; its kind comes from its first character. */
static struct kl_tok kl_exp_paste(struct kl_exp *x, const struct kl_tok *l,
                                  const struct kl_tok *r) {
  char *d = kl_arena_alloc(x->a, (size_t)l->len + r->len + 1);
  memcpy(d, l->p, l->len);
  memcpy(d + l->len, r->p, r->len);
  struct kl_tok t = {d, l->len + r->len, KL_TK_PUNCT, -1, NULL};
  if (kl_ident_start(d[0]))
    t.kind = KL_TK_IDENT;
  else if (kl_digit(d[0]))
    t.kind = KL_TK_NUM;
  else if (d[0] == '"' || d[0] == '\'')
    t.kind = KL_TK_STR;
  return t;
}

/* Append to a substitution, charging the token budget (a macro can be exponential). */
static void kl_exp_emit(struct kl_exp *x, struct kl_tv *out, struct kl_tok t) {
  if (!x->budget) {
    x->failed = true;
    return;
  }
  x->budget--;
  kl_tv_push(out, t);
}

static bool kl_body_next_is_paste(const struct kl_macro *m, uint32_t i) {
  for (i++; i < m->nbody && m->body[i].kind == KL_TK_WS; i++) {
  }
  return i < m->nbody && kl_tok_is(&m->body[i], "##");
}

/* Substitute args into m's body (appended to out), then add hs to every token it produced. */
static void kl_exp_subst(struct kl_exp *x, const struct kl_macro *m, struct kl_tv *args,
                         const struct kl_hs *hs, struct kl_tv *out, int depth) {
  size_t start = out->n;
  struct kl_tv *expanded = NULL;
  if (m->nparams) {
    expanded = calloc(m->nparams, sizeof *expanded);
    if (!expanded) abort();
  }
  bool *have = m->nparams ? calloc(m->nparams, 1) : NULL;
  bool placemarker = false;
  for (uint32_t i = 0; i < m->nbody && !x->failed; i++) {
    const struct kl_tok *b = &m->body[i];
    if (m->fn && kl_tok_is(b, "#")) {
      uint32_t j = i + 1;
      while (j < m->nbody && m->body[j].kind == KL_TK_WS) j++;
      if (j < m->nbody && m->body[j].param >= 0) {
        kl_exp_emit(x, out, kl_exp_stringize(x, &args[m->body[j].param]));
        placemarker = false;
        i = j;
        continue;
      }
    }
    if (kl_tok_is(b, "##")) {
      while (out->n > start && out->v[out->n - 1].kind == KL_TK_WS) out->n--;
      uint32_t j = i + 1;
      while (j < m->nbody && m->body[j].kind == KL_TK_WS) j++;
      if (j >= m->nbody) break;
      const struct kl_tok *rt = &m->body[j];
      size_t rs = 0, re = 1;
      const struct kl_tok *rv = rt;
      if (rt->param >= 0) {
        kl_tv_trim(&args[rt->param], &rs, &re);
        rv = args[rt->param].v;
        if (rs == re) {
          /* GNU `, ## __VA_ARGS__` drops the comma when there are no variadic arguments. */
          if (m->variadic && (uint32_t)rt->param == m->nparams - 1 && out->n > start &&
              kl_tok_is(&out->v[out->n - 1], ","))
            out->n--;
          i = j;
          continue;
        }
      }
      if (out->n > start && !placemarker) {
        out->v[out->n - 1] = kl_exp_paste(x, &out->v[out->n - 1], &rv[rs]);
        rs++;
      }
      for (size_t k = rs; k < re; k++) kl_exp_emit(x, out, rv[k]);
      placemarker = false;
      i = j;
      continue;
    }
    placemarker = false;
    if (b->param >= 0) {
      struct kl_tv *arg = &args[b->param];
      if (kl_body_next_is_paste(m, i)) {
        size_t s, e;
        kl_tv_trim(arg, &s, &e);
        for (size_t k = s; k < e; k++) kl_exp_emit(x, out, arg->v[k]);
        placemarker = s == e;
        continue;
      }
      if (!have[b->param]) {
        /* Arguments are fully expanded before substitution, without reaching past themselves. */
        struct kl_tv pend = {0};
        kl_exp_push_front(x, &pend, arg->v, arg->n);
        kl_exp_run(x, &pend, false, &expanded[b->param], depth + 1);
        kl_tv_free(&pend);
        have[b->param] = true;
      }
      const struct kl_tv *ex = &expanded[b->param];
      for (size_t k = 0; k < ex->n; k++) kl_exp_emit(x, out, ex->v[k]);
      continue;
    }
    kl_exp_emit(x, out, *b);
  }
  for (uint32_t p = 0; p < m->nparams; p++) kl_tv_free(&expanded[p]);
  free(expanded);
  free(have);
  /* Tokens from one argument share a hide set, so one cached union serves them all. */
  const struct kl_hs *last_in = NULL, *last_out = hs;
  for (size_t k = start; k < out->n; k++) {
    struct kl_tok *t = &out->v[k];
    if (!t->hs) {
      t->hs = hs;
    } else if (t->hs == last_in) {
      t->hs = last_out;
    } else {
      last_in = t->hs;
      last_out = t->hs = kl_hs_union(x, t->hs, hs);
    }
  }
}

/* Collect the arguments of a call whose '(' is next; false (tokens in raw) when unbalanced. */
static bool kl_exp_collect(struct kl_exp *x, struct kl_tv *pend, bool pull,
                           const struct kl_macro *m, struct kl_tv *raw, struct kl_tv *args,
                           uint32_t *nargs) {
  struct kl_tok t;
  while (kl_exp_take(x, pend, pull, &t)) {
    kl_tv_push(raw, t);
    if (t.kind != KL_TK_WS) break;
  }
  int level = 0;
  uint32_t n = 0;
  while (kl_exp_take(x, pend, pull, &t)) {
    kl_tv_push(raw, t);
    if (kl_tok_is(&t, "(")) {
      level++;
    } else if (kl_tok_is(&t, ")")) {
      if (level-- == 0) {
        *nargs = n + 1;
        return true;
      }
    } else if (kl_tok_is(&t, ",") && level == 0 && !(m->variadic && n + 1 >= m->nparams)) {
      if (++n >= 128) return false;
      continue;
    }
    /* Spaces around an argument are not part of it. */
    if (n < (m->nparams ? m->nparams : 1) && (args[n].n || t.kind != KL_TK_WS))
      kl_tv_push(&args[n], t);
  }
  return false;
}

/* Expand the pending tokens into out. With pull, calls may take their arguments from the file
 * beyond the pending tokens (`CAT(instantiate_, gemv)(half)`). */
static void kl_exp_run(struct kl_exp *x, struct kl_tv *pend, bool pull, struct kl_tv *out,
                       int depth) {
  if (depth > KL_EXP_MAX_DEPTH) {
    x->failed = true;
    return;
  }
  while (pend->n && !x->failed) {
    struct kl_tok t = pend->v[--pend->n];
    const struct kl_macro *m = NULL;
    if (t.kind == KL_TK_IDENT) m = kl_exp_lookup(x, t.p, t.len);
    if (!m || kl_hs_has(t.hs, m->id)) {
      kl_tv_push(out, t);
      continue;
    }
    struct kl_tv sub = {0};
    if (!m->fn) {
      kl_exp_subst(x, m, NULL, kl_hs_add(x, t.hs, m->id), &sub, depth);
      kl_exp_push_front(x, pend, sub.v, sub.n);
      kl_tv_free(&sub);
      continue;
    }
    if (!kl_exp_lparen_next(x, pend, pull)) {
      kl_tv_push(out, t);
      continue;
    }
    struct kl_tv raw = {0};
    struct kl_tv args[128];
    memset(args, 0, sizeof args);
    uint32_t nargs = 0;
    bool ok = kl_exp_collect(x, pend, pull, m, &raw, args, &nargs);
    if (!ok) x->failed = true; /* an unterminated call would swallow the rest of the file */
    /* `F()` passes one empty argument; a variadic tail may be absent altogether. */
    for (size_t k = 0; k < nargs && k < 128; k++)
      while (args[k].n && args[k].v[args[k].n - 1].kind == KL_TK_WS) args[k].n--;
    if (ok && nargs == 1 && m->nparams == 0) {
      size_t s, e;
      kl_tv_trim(&args[0], &s, &e);
      ok = s == e;
    } else if (ok) {
      ok = nargs == m->nparams || (m->variadic && nargs + 1 == m->nparams);
    }
    if (ok) {
      kl_exp_subst(x, m, args, kl_hs_add(x, t.hs, m->id), &sub, depth);
      kl_exp_push_front(x, pend, sub.v, sub.n);
    } else {
      /* Not a call we understand: leave the name and its tokens as they were. */
      kl_tv_push(out, t);
      for (size_t k = 0; k < raw.n; k++) kl_tv_push(out, raw.v[k]);
    }
    for (size_t k = 0; k < 128; k++) kl_tv_free(&args[k]);
    kl_tv_free(&raw);
    kl_tv_free(&sub);
  }
}

struct kl_outbuf {
  char *p;
  size_t n, cap;
};

static void kl_out_put(struct kl_outbuf *o, const char *s, size_t n) {
  if (o->n + n + 1 > o->cap) {
    while (o->n + n + 1 > o->cap) o->cap = o->cap ? o->cap * 2 : 4096;
    o->p = kl_arena_xrealloc(o->p, o->cap);
  }
  memcpy(o->p + o->n, s, n);
  o->n += n;
}

static int kl_gluey(char c) {
  return c && strchr("+-*/%&|^<>=!:.#", c) != NULL;
}

/* Write expanded tokens; a space goes between two that would otherwise lex as one. */
static void kl_out_tokens(struct kl_outbuf *o, const struct kl_tv *tv) {
  char prev = 0;
  for (size_t i = 0; i < tv->n; i++) {
    const struct kl_tok *t = &tv->v[i];
    if (t->kind == KL_TK_WS) {
      /* A comment from an argument must not swallow the rest of the expansion's line. */
      bool nl = memchr(t->p, '\n', t->len) != NULL;
      bool comment = memchr(t->p, '/', t->len) != NULL;
      if (comment)
        kl_out_put(o, nl ? "\n" : " ", 1);
      else
        kl_out_put(o, t->p, t->len);
      prev = ' ';
      continue;
    }
    char first = t->p[0];
    if (prev &&
        ((kl_ident_char(prev) && kl_ident_char(first)) || (kl_gluey(prev) && kl_gluey(first)) ||
         ((prev == '"' || prev == '\'') && kl_ident_start(first))))
      kl_out_put(o, " ", 1);
    kl_out_put(o, t->p, t->len);
    prev = t->p[t->len - 1];
  }
}

/* Build the expanded buffer and its map to text. Returns false when nothing was expanded or
 * a limit was hit. */
static bool kl_exp_file(struct kl_exp *x, const char *include_dir, struct kl_outbuf *o,
                        struct kl_offmap *map) {
  const char *t = x->text;
  uint32_t len = x->len, run = 0, pos = 0;
  bool line_start = true;
  unsigned count = 0;
  struct kl_tv pend = {0}, out = {0};
  while (pos < len && !x->failed) {
    char c = t[pos];
    if (c == '\n') {
      line_start = true;
      pos++;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      pos++;
    } else if (c == '/' && kl_dialect_skip_comment(t, len, pos) > pos) {
      pos = kl_dialect_skip_comment(t, len, pos);
    } else if (c == '#' && line_start) {
      /* Directives stay as written; definitions take effect from here on, as in cpp. */
      uint32_t e = kl_logical_line_end(t, len, pos);
      kl_exp_directive(x, t, pos, e, include_dir, false, 0);
      pos = e;
    } else if (c == '"' || c == '\'') {
      line_start = false;
      pos = kl_dialect_skip_literal(t, len, pos);
    } else if (kl_digit(c)) {
      line_start = false;
      pos = kl_skip_number(t, len, pos + 1);
    } else if (!kl_ident_start(c)) {
      line_start = false;
      pos++;
    } else {
      line_start = false;
      uint32_t s = pos;
      while (pos < len && kl_ident_char(t[pos])) pos++;
      const struct kl_macro *m = kl_exp_lookup(x, t + s, pos - s);
      if (!m) continue;
      x->pos = pos;
      if (m->fn && !kl_exp_lparen_next(x, &pend, true)) continue;
      if (s > run) {
        kl_out_put(o, t + run, s - run);
        kl_offmap_add(map, (uint32_t)(o->n - (s - run)), s - run, run, s - run);
      }
      struct kl_tok name = {t + s, pos - s, KL_TK_IDENT, -1, NULL};
      kl_tv_push(&pend, name);
      out.n = 0;
      kl_exp_run(x, &pend, true, &out, 0);
      size_t b0 = o->n;
      kl_out_tokens(o, &out);
      if (o->n > KL_EXP_MAX_BYTES) x->failed = true;
      if (o->n > b0) kl_offmap_add(map, (uint32_t)b0, (uint32_t)(o->n - b0), s, x->pos - s);
      pos = run = x->pos;
      count++;
    }
  }
  kl_tv_free(&pend);
  kl_tv_free(&out);
  if (x->failed || !count) return false;
  if (len > run) {
    kl_out_put(o, t + run, len - run);
    kl_offmap_add(map, (uint32_t)(o->n - (len - run)), len - run, run, len - run);
  }
  return true;
}

/* Try the macro-expanded parse; adopt it into unit when it has fewer errors. */
static void kl_dialect_try_expand(struct kl_arena *a, const char *text, uint32_t len,
                                  const struct kl_offmap *base, const char *include_dir,
                                  struct kl_unit *unit) {
  struct kl_exp x = {
      .a = a, .text = text, .len = len, .include_dir = include_dir, .budget = KL_EXP_MAX_TOKENS};
  struct kl_outbuf o = {0};
  struct kl_offmap emap;
  kl_offmap_init(&emap, a);
  bool ok = kl_exp_file(&x, include_dir, &o, &emap);
  free(x.slots);
  free(x.seen);
  if (!ok || o.n > UINT32_MAX - 1 ||
      kl_dialect_nesting(o.p, (uint32_t)o.n) > KL_SOURCE_MAX_NESTING) {
    free(o.p);
    return;
  }
  uint32_t n = (uint32_t)o.n;
  char *buf = kl_arena_strndup(a, o.p, n);
  free(o.p);
  struct kl_unit e = {.src = unit->src};
  kl_dialect_blank(a, buf, n, &e);
  /* Reusing the first tree is exact only where it parses clean: error recovery may settle
   * differently when it starts from the first tree's errors, so anything less gets a fresh
   * parse and the result is always that of parsing the expanded buffer alone. */
  TSTree *edited = kl_dialect_edited_tree(unit, buf, n, &emap);
  e.tree = edited ? kl_dialect_ts_parse(buf, n, edited) : NULL;
  if (edited) ts_tree_delete(edited);
  if (e.tree && kl_dialect_count_errors(ts_tree_root_node(e.tree)) != 0) {
    ts_tree_delete(e.tree);
    e.tree = NULL;
  }
  if (!e.tree) e.tree = kl_dialect_ts_parse(buf, n, NULL);
  if (!e.tree) return;
  e.nerrors = kl_dialect_count_errors(ts_tree_root_node(e.tree));
  if (e.nerrors >= unit->nerrors) {
    ts_tree_delete(e.tree);
    return;
  }
  ts_tree_delete(unit->tree);
  e.buf = buf;
  e.len = n;
  e.expanded = true;
  if (base)
    kl_offmap_compose(&e.map, a, &emap, base);
  else
    e.map = emap;
  *unit = e;
}

int kl_dialect_parse(struct kl_arena *a, const struct kl_source *src, const char *text,
                     uint32_t len, const struct kl_offmap *base, const char *include_dir,
                     struct kl_unit *unit, char *err, size_t errlen) {
  memset(unit, 0, sizeof *unit);
  unit->src = src;
  char *buf = kl_arena_strndup(a, text, len);
  kl_dialect_blank(a, buf, len, unit);
  unit->buf = buf;
  unit->len = len;
  if (base)
    unit->map = *base;
  else
    kl_offmap_identity(&unit->map, a, len);
  unit->tree = kl_dialect_ts_parse(buf, len, NULL);
  if (!unit->tree) {
    snprintf(err, errlen, "parsing timed out after %u s", KL_PARSE_TIMEOUT_US / 1000000u);
    return -1;
  }
  unit->nerrors = kl_dialect_count_errors(ts_tree_root_node(unit->tree));
  if (unit->nerrors) kl_dialect_try_expand(a, text, len, base, include_dir, unit);
  return 0;
}

void kl_dialect_release(struct kl_unit *unit) {
  if (unit->tree) ts_tree_delete(unit->tree);
  unit->tree = NULL;
}

/* Index of the first keyword at or after off. */
static size_t kl_dialect_kw_lower(const struct kl_unit *unit, uint32_t off) {
  size_t lo = 0, hi = unit->nkws;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (unit->kws[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const struct kl_keyword *kl_dialect_keyword_at(const struct kl_unit *unit, uint32_t off) {
  size_t i = kl_dialect_kw_lower(unit, off);
  return i < unit->nkws && unit->kws[i].off == off ? &unit->kws[i] : NULL;
}

const struct kl_keyword *kl_dialect_keywords_in(const struct kl_unit *unit, uint32_t start,
                                                uint32_t end, size_t *n) {
  size_t i = kl_dialect_kw_lower(unit, start), j = i;
  while (j < unit->nkws && unit->kws[j].off < end) j++;
  *n = j - i;
  return *n ? &unit->kws[i] : NULL;
}

uint32_t kl_dialect_lead(TSNode n) {
  /* A first child starts where its parent's own leading bytes start: the root itself begins at
   * the first token, after any keyword blanked at the top of the file. The bound only guards
   * against a pathological tree (each step up is linear in tree-sitter 0.20.7). */
  for (int i = 0; i < KL_LEAD_MAX_UP && !ts_node_is_null(n); i++) {
    TSNode prev = ts_node_prev_sibling(n);
    if (!ts_node_is_null(prev)) return ts_node_end_byte(prev);
    n = ts_node_parent(n);
  }
  return 0;
}

char *kl_dialect_node_text(struct kl_arena *a, const struct kl_unit *unit, TSNode node) {
  uint32_t s = ts_node_start_byte(node), e = ts_node_end_byte(node);
  return kl_arena_strndup(a, unit->buf + s, e - s);
}
