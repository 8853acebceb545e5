/* The dialect layer: blank what is not C++ (address spaces, function qualifiers and the macros
 * that spell them, coherence, _Pragma, unroll-hint macros before loops) without moving a byte,
 * parse with tree-sitter-cpp, and when that leaves ERROR nodes, expand the macros the file and its
 * local headers define and keep that parse if it is cleaner. */
#include "grammar/dialect.h"

#include "grammar/preproc.h"

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
/* Ancestors kl_dialect_lead climbs before giving up: far beyond any real nesting. */
#define KL_LEAD_MAX_UP 512

static inline int kl_digit(char c) {
  return c >= '0' && c <= '9';
}

uint32_t kl_dialect_skip_number(const char *t, uint32_t len, uint32_t i) {
  while (i < len) {
    char c = t[i];
    if ((c == '+' || c == '-') &&
        (t[i - 1] == 'e' || t[i - 1] == 'E' || t[i - 1] == 'p' || t[i - 1] == 'P')) {
      i++;
    } else if (kl_dialect_ident_char(c) || c == '.' || c == '\'') {
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

static bool kl_di_word(const char *t, uint32_t len, uint32_t i, const char *w);
static uint32_t kl_di_space(const char *t, uint32_t len, uint32_t i);

/* First byte at or after i that is not a space or tab. */
static uint32_t kl_di_blank_after(const char *t, uint32_t len, uint32_t i) {
  while (i < len && (t[i] == ' ' || t[i] == '\t')) i++;
  return i;
}

/* ---- Qualifier macros -------------------------------------------------------------------- */

/* Object-like macros that stand for function qualifiers only (`inline`, attributes): in front of
 * a declaration tree-sitter reads such a name as a type and the real type after it as an ERROR.
 * The names the file defines so, plus the MSL standard library's own `METAL_FUNC`, which every
 * Metal header may use without defining it. */
#define KL_QMACROS_MAX 32
struct kl_qmacros {
  const char *name[KL_QMACROS_MAX];
  uint32_t len[KL_QMACROS_MAX];
  size_t n;
};

/* End of the parenthesised group opening at t[i] ('('), or 0 when it does not close. */
static uint32_t kl_qm_group_end(const char *t, uint32_t len, uint32_t i) {
  int depth = 0;
  for (; i < len; i++) {
    if (t[i] == '\n' && (i == 0 || t[i - 1] != '\\')) return 0;
    if (t[i] == '(') depth++;
    if (t[i] == ')' && --depth == 0) return i + 1;
  }
  return 0;
}

/* Whether t[i, e) holds nothing but function qualifiers: `inline` spellings, `__attribute__((..))`
 * and `[[...]]`, or `_Pragma(...)`, which the blanking removes anyway. Address spaces and
 * `const`/`static` are not among them: blanking those would hide what the analyses read from the
 * buffer. */
static bool kl_qm_body(const char *t, uint32_t i, uint32_t e) {
  bool any = false;
  while (i < e) {
    if (t[i] == ' ' || t[i] == '\t' || t[i] == '\r' || (t[i] == '\\' && i + 1 < e)) {
      i++;
      continue;
    }
    if (t[i] == '[' && i + 1 < e && t[i + 1] == '[') {
      uint32_t j = i + 2;
      while (j + 1 < e && !(t[j] == ']' && t[j + 1] == ']')) j++;
      if (j + 1 >= e) return false;
      i = j + 2;
      any = true;
      continue;
    }
    if (!kl_dialect_ident_start(t[i])) return false;
    uint32_t s = i;
    while (i < e && kl_dialect_ident_char(t[i])) i++;
    uint32_t n = i - s;
    if ((n == 6 && !memcmp(t + s, "inline", 6)) || (n == 8 && !memcmp(t + s, "__inline", 8)) ||
        (n == 10 && !memcmp(t + s, "__inline__", 10))) {
      any = true;
      continue;
    }
    if ((n == 13 && !memcmp(t + s, "__attribute__", 13)) ||
        (n == 7 && !memcmp(t + s, "_Pragma", 7))) {
      while (i < e && (t[i] == ' ' || t[i] == '\t')) i++;
      uint32_t g = i < e && t[i] == '(' ? kl_qm_group_end(t, e, i) : 0;
      if (!g) return false;
      i = g;
      any = true;
      continue;
    }
    return false;
  }
  return any;
}

/* The qualifier macros of buf: its `#define NAME body` lines whose body passes kl_qm_body. */
static void kl_qm_scan(const char *t, uint32_t len, struct kl_qmacros *q) {
  q->n = 0;
  q->name[q->n] = "METAL_FUNC";
  q->len[q->n++] = 10;
  for (uint32_t i = 0; i < len; i++) {
    if (t[i] != '#' || !kl_di_word(t, len, kl_di_blank_after(t, len, i + 1), "define")) continue;
    uint32_t s = kl_di_blank_after(t, len, kl_di_blank_after(t, len, i + 1) + 6), e = s;
    while (e < len && kl_dialect_ident_char(t[e])) e++;
    if (e == s || e >= len) continue;
    if (t[e] == '(') { /* function-like */
      if (e - s == 10 && !memcmp(t + s, "METAL_FUNC", 10)) q->len[0] = 0;
      continue;
    }
    uint32_t end = e;
    while (end < len && !(t[end] == '\n' && t[end - 1] != '\\')) end++;
    if (kl_qm_body(t, e, end)) {
      if (q->n < KL_QMACROS_MAX) {
        q->name[q->n] = t + s;
        q->len[q->n++] = e - s;
      }
    } else if (e - s == 10 && !memcmp(t + s, "METAL_FUNC", 10)) {
      q->len[0] = 0; /* the file's own METAL_FUNC is something else: leave it to expansion */
    }
    i = end;
  }
}

/* Whether the word at t[s, s+n) is a qualifier macro used as one: not the name a directive
 * defines or tests (`#define X`, `#ifdef X`, `defined(X)`). */
static bool kl_qm_use(const struct kl_qmacros *q, const char *t, uint32_t s, uint32_t n) {
  size_t k = 0;
  while (k < q->n && (q->len[k] != n || memcmp(q->name[k], t + s, n))) k++;
  if (k == q->n) return false;
  uint32_t j = s;
  while (j > 0 && (t[j - 1] == ' ' || t[j - 1] == '\t' || t[j - 1] == '(')) j--;
  uint32_t w = j;
  while (w > 0 && kl_dialect_ident_char(t[w - 1])) w--;
  static const char *const directive[] = {"define", "undef", "ifdef", "ifndef", "defined"};
  for (size_t d = 0; d < sizeof directive / sizeof *directive; d++)
    if (j - w == strlen(directive[d]) && !memcmp(t + w, directive[d], j - w)) return false;
  return true;
}

/* End of the directive line whose text goes on at i: its newline, continuations and block
 * comments that span lines included. A block comment that spans no raw newline is blanked
 * (t is the private copy): tree-sitter's preproc_arg token stops where a block comment opens,
 * and the rest of a macro body (`f(x, <comment>false) \`) would parse as code. */
static uint32_t kl_dp_line_end(char *t, uint32_t len, uint32_t i) {
  while (i < len && t[i] != '\n') {
    if (t[i] == '\\' && i + 1 < len && (t[i + 1] == '\n' || t[i + 1] == '\r')) {
      i += t[i + 1] == '\r' && i + 2 < len && t[i + 2] == '\n' ? 3 : 2;
      continue;
    }
    if (t[i] == '"' || t[i] == '\'') {
      uint32_t e = kl_dialect_skip_literal(t, len, i);
      i = e > i ? e : i + 1;
      continue;
    }
    if (t[i] == '/' && i + 1 < len && t[i + 1] == '/') {
      while (i < len && t[i] != '\n') i++; /* a line comment ends the directive */
      break;
    }
    if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') {
      uint32_t e = kl_dialect_skip_comment(t, len, i);
      bool raw_newline = false;
      for (uint32_t k = i; k < e; k++)
        if (t[k] == '\n' && (k == 0 || t[k - 1] != '\\')) raw_newline = true;
      for (uint32_t k = i; k < e && !raw_newline; k++)
        if (t[k] != '\n' && !(t[k] == '\\' && k + 1 < e && t[k + 1] == '\n')) t[k] = ' ';
      i = e;
      continue;
    }
    i++;
  }
  return i;
}

/* Whether buf has a `#define` of the name t[s, e). */
static bool kl_lm_defined(const char *buf, uint32_t len, uint32_t s, uint32_t e) {
  for (uint32_t i = 0; i < len; i++) {
    if (buf[i] != '#') continue;
    uint32_t d = kl_di_blank_after(buf, len, i + 1);
    if (!kl_di_word(buf, len, d, "define")) continue;
    uint32_t n = kl_di_blank_after(buf, len, d + 6);
    if (n + (e - s) <= len && !memcmp(buf + n, buf + s, e - s) &&
        (n + (e - s) == len || !kl_dialect_ident_char(buf[n + (e - s)])))
      return true;
  }
  return false;
}

/* Whether the name t[s, e), first on its line, is a macro written as a statement of its own with
 * no semicolon right before a loop: `UNROLL` then `for (...)`. Without its definition
 * tree-sitter reads `UNROLL for (` as a declaration and loses the loop. With no semicolon before
 * a loop such a macro is a pragma or an attribute (an unroll hint); one the file defines is left
 * to macro expansion, and one whose definition is only `_Pragma` is a qualifier macro. prev is
 * the last significant character before it. */
static bool kl_lm_use(const char *t, uint32_t len, uint32_t s, uint32_t e, char prev) {
  if (prev != ';' && prev != '{' && prev != '}') return false;
  if ((e - s == 4 && !memcmp(t + s, "else", 4)) || (e - s == 2 && !memcmp(t + s, "do", 2)))
    return false;
  uint32_t j = kl_di_blank_after(t, len, e);
  if (j < len && t[j] != '\n' && t[j] != '\r' && !(t[j] == '/' && j + 1 < len && t[j + 1] == '/'))
    return false;
  j = kl_di_space(t, len, j);
  if (!kl_di_word(t, len, j, "for") && !kl_di_word(t, len, j, "while") &&
      !kl_di_word(t, len, j, "do"))
    return false;
  return !kl_lm_defined(t, len, s, e);
}

/* Blank MSL keywords in buf (a private copy) and record them. Words inside comments, string
 * literals and [[attributes]] are left alone: `[[kernel]]` and `[[threadgroup(0)]]` are C++. */
static void kl_dialect_blank(struct kl_arena *a, char *buf, uint32_t len, struct kl_unit *u) {
  int attr_depth = 0;
  struct kl_qmacros q;
  kl_qm_scan(buf, len, &q);
  bool line_start = true;
  char prev = ';'; /* the last significant character before i, outside comments */
  for (uint32_t i = 0; i < len;) {
    char c = buf[i];
    bool first = line_start;
    if (c == '\n') {
      line_start = true;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      /* A `#define` body is one preproc_arg token to tree-sitter and needs no blanking; blanked,
       * a body that was only `_Pragma(...)` or `device` leaves `#define X` and spaces, and the
       * grammar then takes the next line as the body, hiding it. */
      if (line_start && c == '#') {
        uint32_t d = kl_di_blank_after(buf, len, i + 1);
        if (kl_di_word(buf, len, d, "define")) {
          i = kl_dp_line_end(buf, len, d);
          continue;
        }
      }
      line_start = false;
    }
    if (c == '/') {
      uint32_t e = kl_dialect_skip_comment(buf, len, i);
      i = e > i ? e : i + 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      i = kl_dialect_skip_literal(buf, len, i);
      prev = c;
      continue;
    }
    if (kl_digit(c)) {
      i = kl_dialect_skip_number(buf, len, i + 1);
      prev = c;
      continue;
    }
    if (c == '[' && i + 1 < len && buf[i + 1] == '[') {
      attr_depth++;
      i += 2;
      prev = c;
      continue;
    }
    if (c == ']' && i + 1 < len && buf[i + 1] == ']' && attr_depth > 0) {
      attr_depth--;
      i += 2;
      prev = c;
      continue;
    }
    if (!kl_dialect_ident_start(c)) {
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') prev = c;
      i++;
      continue;
    }
    uint32_t s = i;
    char before = prev;
    prev = 'a';
    while (i < len && kl_dialect_ident_char(buf[i])) i++;
    if (attr_depth > 0) continue;
    if (first && kl_lm_use(buf, len, s, i, before)) {
      kl_dialect_record(a, u, s, i - s, KL_KW_LOOP_MACRO);
      memset(buf + s, ' ', i - s);
      prev = before;
      continue;
    }
    /* `x.operator T()` calls a conversion operator by name, which tree-sitter-cpp has no rule
     * for; without the word it reads as a call of a member `T`, the same call for the analyses. */
    if (i - s == 8 && !memcmp(buf + s, "operator", 8) && s >= 1 &&
        (buf[s - 1] == '.' || (buf[s - 1] == '>' && s >= 2 && buf[s - 2] == '-'))) {
      uint32_t t = kl_di_blank_after(buf, len, i);
      if (t > i && t < len && kl_dialect_ident_start(buf[t])) {
        kl_dialect_record(a, u, s, i - s, KL_KW_OPERATOR_CALL);
        memset(buf + s, ' ', i - s);
        continue;
      }
    }
    /* `coherent(device)`, `coherent(system)`: MSL 3.2's coherence qualifier on a pointer. */
    if (i - s == 8 && !memcmp(buf + s, "coherent", 8)) {
      uint32_t p = kl_di_blank_after(buf, len, i), e = p, w;
      if (p < len && buf[p] == '(') {
        w = kl_di_blank_after(buf, len, p + 1);
        e = w;
        while (e < len && kl_dialect_ident_char(buf[e])) e++;
        bool scope = (e - w == 6 && !memcmp(buf + w, "device", 6)) ||
                     (e - w == 6 && !memcmp(buf + w, "system", 6));
        e = kl_di_blank_after(buf, len, e);
        if (scope && e < len && buf[e] == ')') {
          kl_dialect_record(a, u, s, e + 1 - s, KL_KW_COHERENT);
          memset(buf + s, ' ', e + 1 - s);
          i = e + 1;
          continue;
        }
      }
    }
    /* `metal::thread` or `x.device` are names, not qualifiers. */
    if (s >= 1 && (buf[s - 1] == '.' || buf[s - 1] == ':' || buf[s - 1] == '>')) continue;
    enum kl_kw kind;
    if (kl_dialect_word(buf + s, i - s, &kind)) {
      kl_dialect_record(a, u, s, i - s, kind);
      memset(buf + s, ' ', i - s);
    } else if (kl_qm_use(&q, buf, s, i - s)) {
      kl_dialect_record(a, u, s, i - s, KL_KW_QUALIFIER);
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

/* Try the macro-expanded parse; adopt it into unit when it has fewer errors. */
static void kl_dialect_try_expand(struct kl_arena *a, const char *text, uint32_t len,
                                  const struct kl_offmap *base, const char *include_dir,
                                  struct kl_unit *unit) {
  struct kl_offmap emap;
  uint32_t n;
  char *buf = kl_preproc_expand(a, text, len, include_dir, &n, &emap);
  if (!buf || kl_dialect_nesting(buf, n) > KL_SOURCE_MAX_NESTING) return;
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
  /* Code no build compiles (`#if 0`) is not analysed: blanked, it keeps every position. */
  const char *live = kl_preproc_strip_dead(a, text, len);
  if (live) text = live;
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

/* ---- Explicit instantiations from text ------------------------------------------------------- */

static uint32_t kl_di_space(const char *t, uint32_t len, uint32_t i) {
  for (;;) {
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
    uint32_t c = kl_dialect_skip_comment(t, len, i);
    if (c == i) return i;
    i = c;
  }
}

static bool kl_di_word(const char *t, uint32_t len, uint32_t i, const char *w) {
  size_t n = strlen(w);
  return i + n <= len && !memcmp(t + i, w, n) && (i == 0 || !kl_dialect_ident_char(t[i - 1])) &&
         (i + n == len || !kl_dialect_ident_char(t[i + n]));
}

/* The string literals of `host_name(...)` in t[from, to), joined. */
static const char *kl_di_host_name(struct kl_arena *a, const char *t, uint32_t from, uint32_t to) {
  for (uint32_t i = from; i < to; i++) {
    if (!kl_di_word(t, to, i, "host_name")) continue;
    uint32_t j = kl_di_space(t, to, i + 9);
    if (j >= to || t[j] != '(') return NULL;
    char buf[256];
    size_t n = 0;
    for (j++; j < to && t[j] != ')';) {
      if (t[j] == '"') {
        uint32_t e = kl_dialect_skip_literal(t, to, j);
        for (uint32_t k = j + 1; k + 1 < e && n + 1 < sizeof buf; k++) buf[n++] = t[k];
        j = e;
      } else {
        j++;
      }
    }
    return kl_arena_strndup(a, buf, n);
  }
  return NULL;
}

size_t kl_dialect_instances(struct kl_arena *a, const char *text, uint32_t len,
                            const char *include_dir, struct kl_dialect_inst **out) {
  struct kl_offmap map;
  uint32_t n = len;
  const char *t = kl_preproc_expand(a, text, len, include_dir, &n, &map);
  if (!t) {
    t = text;
    n = len;
  }
  struct kl_dialect_inst *v = NULL;
  size_t nv = 0, cap = 0;
  uint32_t stmt = 0; /* where the statement holding i starts */
  for (uint32_t i = 0; i < n;) {
    uint32_t c = kl_dialect_skip_comment(t, n, i);
    if (c != i) {
      i = c;
      continue;
    }
    if (t[i] == '"' || t[i] == '\'') {
      i = kl_dialect_skip_literal(t, n, i);
      continue;
    }
    if (t[i] == ';' || t[i] == '{' || t[i] == '}') {
      stmt = ++i;
      continue;
    }
    if (t[i] == '#' && kl_di_space(t, n, stmt) == i) {
      /* A directive line ends no statement but starts none either. */
      while (i < n && t[i] != '\n') i += t[i] == '\\' && i + 1 < n ? 2 : 1;
      stmt = i;
      continue;
    }
    if (!kl_di_word(t, n, i, "decltype")) {
      i++;
      continue;
    }
    uint32_t at = i;
    i += 8;
    uint32_t j = kl_di_space(t, n, i);
    if (j >= n || t[j] != '(') continue;
    j = kl_di_space(t, n, j + 1);
    uint32_t ns = j;
    while (j < n && (kl_dialect_ident_char(t[j]) || t[j] == ':')) j++;
    uint32_t ne = j;
    j = kl_di_space(t, n, j);
    if (ne == ns || j >= n || t[j] != '<') continue;
    /* Only a statement that starts with `template` instantiates. */
    uint32_t s0 = kl_di_space(t, n, stmt);
    if (!kl_di_word(t, n, s0, "template")) continue;
    const char **args = NULL;
    size_t na = 0, acap = 0;
    int depth = 0;
    uint32_t as = j + 1;
    bool closed = false;
    for (j = j + 1; j < n && !closed; j++) {
      char ch = t[j];
      if (ch == '"' || ch == '\'') {
        j = kl_dialect_skip_literal(t, n, j) - 1;
        continue;
      }
      if (ch == ';' || ch == '{' || ch == '}') break;
      if (ch == '(' || ch == '[' || ch == '<') depth++;
      if ((ch == ')' || ch == ']' || ch == '>') && depth > 0) {
        depth--;
        continue;
      }
      if ((ch == ',' || ch == '>') && depth == 0) {
        uint32_t x = as, y = j;
        while (x < y && (t[x] == ' ' || t[x] == '\t' || t[x] == '\n' || t[x] == '\r')) x++;
        while (y > x && (t[y - 1] == ' ' || t[y - 1] == '\t' || t[y - 1] == '\n' || t[y - 1] == '\r'))
          y--;
        if (y > x) {
          KL_VEC_PUSH(a, args, na, acap);
          args[na++] = kl_arena_strndup(a, t + x, y - x);
        }
        as = j + 1;
        closed = ch == '>';
      }
    }
    if (!closed) continue;
    KL_VEC_PUSH(a, v, nv, cap);
    const char *name = t + ns;
    size_t nl = ne - ns;
    /* `ns::f` instantiates f. */
    for (uint32_t k = ns; k + 1 < ne; k++)
      if (t[k] == ':' && t[k + 1] == ':') name = t + k + 2, nl = ne - (k + 2);
    v[nv++] = (struct kl_dialect_inst){kl_arena_strndup(a, name, nl),
                                       kl_di_host_name(a, t, stmt, at), args, na};
    i = j;
  }
  *out = v;
  return nv;
}
