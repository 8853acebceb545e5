/* The dialect layer: blank what is not C++ (address spaces, function qualifiers and the macros
 * that spell them, coherence, _Pragma, unroll-hint macros before loops) without moving a byte,
 * parse with tree-sitter-cpp, and when that leaves ERROR nodes, expand the macros the file and its
 * local headers define and keep that parse if it is cleaner. */
#include "grammar/dialect.h"

#include "analyzer/core/node.h"
#include "grammar/expand.h"
#include "grammar/lex.h"
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
#ifndef KL_PARSE_TIMEOUT_US /* a profiling build under valgrind may set a longer one */
#define KL_PARSE_TIMEOUT_US 10000000u
#endif
/* Ancestors kl_dialect_lead climbs before giving up: far beyond any real nesting. */
#define KL_LEAD_MAX_UP 512

static inline int kl_digit(char c) {
  return c >= '0' && c <= '9';
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
  uint32_t e = kl_lex_skip_literal(t, len, i);
  if (e == i || t[e - 1] != '"' || e - i < 2) return 0;
  for (i = e; i < len && (t[i] == ' ' || t[i] == '\t');) i++;
  return i < len && t[i] == ')' ? i + 1 : 0;
}

static void kl_dialect_record(struct kl_arena *a, struct kl_unit *u, uint32_t off, uint32_t len,
                              enum kl_kw kind) {
  KL_VEC_PUSH(a, u->kws, u->nkws, u->cap_kws);
  u->kws[u->nkws++] = (struct kl_keyword){off, len, kind};
}

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
    if (!kl_lex_ident_start(t[i])) return false;
    uint32_t s = i;
    while (i < e && kl_lex_ident_char(t[i])) i++;
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
    if (t[i] != '#' || !kl_lex_word(t, len, kl_di_blank_after(t, len, i + 1), "define")) continue;
    uint32_t s = kl_di_blank_after(t, len, kl_di_blank_after(t, len, i + 1) + 6), e = s;
    while (e < len && kl_lex_ident_char(t[e])) e++;
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
  while (w > 0 && kl_lex_ident_char(t[w - 1])) w--;
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
      uint32_t e = kl_lex_skip_literal(t, len, i);
      i = e > i ? e : i + 1;
      continue;
    }
    if (t[i] == '/' && i + 1 < len && t[i + 1] == '/') {
      while (i < len && t[i] != '\n') i++; /* a line comment ends the directive */
      break;
    }
    if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') {
      uint32_t e = kl_lex_skip_comment(t, len, i);
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

/* Loop-hint names already looked up for one buffer, and whether they are defined. */
struct kl_lm_memo {
  char name[16][64];
  bool def[16];
  size_t n;
};

/* Whether the file or a local header it includes (from include_dir) defines the name t[s, e):
 * such a hint is left to expansion, since it may stand for a statement (a barrier, an early
 * return) that blanked, the rules would never see. Asked once per name: a file repeats its
 * hint. */
static bool kl_lm_defined(struct kl_arena *a, const char *t, uint32_t len, const char *include_dir,
                          struct kl_lm_memo *m, uint32_t s, uint32_t e) {
  size_t n = e - s, k = 0;
  while (k < m->n && (strlen(m->name[k]) != n || memcmp(m->name[k], t + s, n))) k++;
  if (k < m->n) return m->def[k];
  bool def = kl_expand_defines(a, t, len, include_dir, t + s, n);
  if (n < sizeof m->name[0] && m->n < sizeof m->name / sizeof m->name[0]) {
    memcpy(m->name[m->n], t + s, n);
    m->name[m->n][n] = '\0';
    m->def[m->n++] = def;
  }
  return def;
}

/* Whether the name t[s, e), first on its line, is a macro written as a statement of its own with
 * no semicolon right before a loop: `UNROLL` then `for (...)`. Without its definition
 * tree-sitter reads `UNROLL for (` as a declaration and loses the loop. With no semicolon before
 * a loop such a macro is a pragma or an attribute (an unroll hint); one the file or a local
 * header defines is left to macro expansion, and one whose definition is only `_Pragma` is a
 * qualifier macro. prev is the last significant character before it. */
static bool kl_lm_use(struct kl_arena *a, const char *t, uint32_t len, const char *include_dir,
                      struct kl_lm_memo *m, uint32_t s, uint32_t e, char prev) {
  if (prev != ';' && prev != '{' && prev != '}') return false;
  if ((e - s == 4 && !memcmp(t + s, "else", 4)) || (e - s == 2 && !memcmp(t + s, "do", 2)))
    return false;
  uint32_t j = kl_di_blank_after(t, len, e);
  if (j < len && t[j] != '\n' && t[j] != '\r' && !(t[j] == '/' && j + 1 < len && t[j + 1] == '/'))
    return false;
  j = kl_lex_space(t, len, j);
  if (!kl_lex_word(t, len, j, "for") && !kl_lex_word(t, len, j, "while") &&
      !kl_lex_word(t, len, j, "do"))
    return false;
  return !kl_lm_defined(a, t, len, include_dir, m, s, e);
}

/* Blank MSL keywords in buf (a private copy) and record them. Words inside comments, string
 * literals and [[attributes]] are left alone: `[[kernel]]` and `[[threadgroup(0)]]` are C++.
 * include_dir is where the local headers that may define a loop hint are found. */
static void kl_dialect_blank(struct kl_arena *a, char *buf, uint32_t len, struct kl_unit *u,
                             const char *include_dir) {
  int attr_depth = 0;
  struct kl_lm_memo hints = {.n = 0};
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
        if (kl_lex_word(buf, len, d, "define")) {
          i = kl_dp_line_end(buf, len, d);
          continue;
        }
      }
      line_start = false;
    }
    if (c == '/') {
      uint32_t e = kl_lex_skip_comment(buf, len, i);
      i = e > i ? e : i + 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      i = kl_lex_skip_literal(buf, len, i);
      prev = c;
      continue;
    }
    if (kl_digit(c)) {
      i = kl_lex_skip_number(buf, len, i + 1);
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
    if (!kl_lex_ident_start(c)) {
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') prev = c;
      i++;
      continue;
    }
    uint32_t s = i;
    char before = prev;
    prev = 'a';
    while (i < len && kl_lex_ident_char(buf[i])) i++;
    if (attr_depth > 0) continue;
    bool hint = first && kl_lm_use(a, buf, len, include_dir, &hints, s, i, before);
    if (hint) {
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
      if (t > i && t < len && kl_lex_ident_start(buf[t])) {
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
        while (e < len && kl_lex_ident_char(buf[e])) e++;
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

/* One level of a trail walk. */
struct kl_trail_step {
  TSNode node, prev; /* the node visited at this depth, and the sibling visited before it */
  bool has_prev;
};

struct kl_walk_trail {
  TSNode root;
  struct kl_trail_step *steps; /* by depth below root */
  uint32_t depth, cap;
};

void kl_dialect_walk_trail(TSNode root,
                           enum kl_walk (*visit)(TSNode n, const struct kl_walk_trail *t,
                                                 void *ctx),
                           void *ctx) {
  struct kl_walk_trail t = {root, NULL, 0, 16};
  t.steps = kl_arena_xrealloc(NULL, t.cap * sizeof *t.steps);
  t.steps[0] = (struct kl_trail_step){root, root, false};
  TSTreeCursor cur = ts_tree_cursor_new(root);
  for (;;) {
    struct kl_trail_step *s = &t.steps[t.depth];
    enum kl_walk next = visit(s->node, &t, ctx);
    if (next == KL_WALK_STOP) break;
    if (next == KL_WALK_DESCEND && ts_tree_cursor_goto_first_child(&cur)) {
      if (++t.depth == t.cap) {
        t.cap *= 2;
        t.steps = kl_arena_xrealloc(t.steps, t.cap * sizeof *t.steps);
      }
      t.steps[t.depth].node = ts_tree_cursor_current_node(&cur);
      t.steps[t.depth].has_prev = false;
      continue;
    }
    /* As in kl_dialect_walk; the node left behind at a level is the next one's previous. */
    while (t.depth > 0 && !ts_tree_cursor_goto_next_sibling(&cur))
      t.depth = ts_tree_cursor_goto_parent(&cur) ? t.depth - 1 : 0;
    if (t.depth == 0) break;
    s = &t.steps[t.depth];
    s->prev = s->node;
    s->has_prev = true;
    s->node = ts_tree_cursor_current_node(&cur);
  }
  ts_tree_cursor_delete(&cur);
  free(t.steps);
}

/* ---- Parsing ----------------------------------------------------------------------------- */

static void kl_di_scan(struct kl_arena *a, const char *t, uint32_t n, struct kl_inst **v,
                       size_t *nv, size_t *cap);
static struct kl_inst *kl_di_merge(struct kl_arena *a, struct kl_inst *v, size_t made, size_t n);

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

/* ERROR and MISSING nodes of a tree that touch no replaced stretch of an expansion map: the
 * ones an expansion cannot mend. */
struct kl_kept_errors {
  const struct kl_offmap *emap;
  uint32_t *at; /* where each starts in the expanded buffer (malloc'd) */
  size_t n, cap;
};

static enum kl_walk kl_dialect_kept_error(TSNode n, void *ctx) {
  struct kl_kept_errors *k = ctx;
  if (!ts_node_has_error(n) && !ts_node_is_missing(n)) return KL_WALK_SKIP;
  if (!ts_node_is_missing(n) && ts_node_symbol(n) != (TSSymbol)-1) return KL_WALK_DESCEND;
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  for (size_t i = 0; i < k->emap->n; i++) {
    const struct kl_offmap_seg *g = &k->emap->segs[i];
    if (g->buf_len != g->file_len && g->file <= e && s <= g->file + g->file_len)
      return KL_WALK_SKIP;
  }
  /* Untouched text keeps its bytes: the error's start in the expanded buffer. */
  for (size_t i = 0; i < k->emap->n; i++) {
    const struct kl_offmap_seg *g = &k->emap->segs[i];
    if (g->buf_len != g->file_len || s < g->file || s >= g->file + g->file_len) continue;
    KL_XVEC_PUSH(k->at, k->n, k->cap);
    k->at[k->n++] = g->buf + (s - g->file);
    break;
  }
  return KL_WALK_SKIP;
}

/* kl_kept_errors as a question of the reparse: whether each of its errors is one of them. */
static enum kl_walk kl_dialect_same_error(TSNode n, void *ctx) {
  struct kl_kept_errors *k = ctx;
  if (!ts_node_has_error(n) && !ts_node_is_missing(n)) return KL_WALK_SKIP;
  if (!ts_node_is_missing(n) && ts_node_symbol(n) != (TSSymbol)-1) return KL_WALK_DESCEND;
  uint32_t s = ts_node_start_byte(n);
  for (size_t i = 0; i < k->n; i++)
    if (k->at[i] == s) return KL_WALK_SKIP;
  k->emap = NULL; /* an error the first parse did not have */
  return KL_WALK_STOP;
}

/* ERROR and MISSING nodes. */
static unsigned kl_dialect_count_errors(TSNode root) {
  if (!ts_node_has_error(root)) return 0;
  unsigned count = 0;
  kl_dialect_walk(root, kl_dialect_count_error, &count, NULL);
  return count;
}

/* Parse buf; with old (already edited to match buf) the parse reuses its unchanged subtrees. */
/* Parse buf in language lang within timeout_us (NULL when it runs out); with old (already edited
 * to match buf) the parse reuses its unchanged subtrees. */
static TSTree *kl_dialect_ts_parse_in(const TSLanguage *lang, uint32_t timeout_us,
                                      const char *buf, uint32_t len, const TSTree *old) {
  TSParser *p = ts_parser_new();
  ts_parser_set_language(p, lang);
  ts_parser_set_timeout_micros(p, timeout_us);
  TSTree *t = ts_parser_parse_string(p, old, buf, len);
  ts_parser_delete(p);
  return t;
}

static TSTree *kl_dialect_ts_parse(const char *buf, uint32_t len, const TSTree *old) {
  return kl_dialect_ts_parse_in(kl_dialect_cpp(), KL_PARSE_TIMEOUT_US, buf, len, old);
}

/* A probe stops a parse at its first error. tree-sitter (0.20.7, as pinned) begins error
 * recovery only once every version of its parse stack has failed on a token, and logs that as
 * "resume version:N"; from there every version it keeps carries an ERROR or a MISSING node, so
 * the tree it would finish has one, unless a version had already accepted a clean tree (logged
 * "accept"), which the probe then lets finish. */
struct kl_probe {
  size_t cancel; /* tree-sitter's cancellation flag */
  bool error, accepted;
};

static void kl_dialect_probe_log(void *payload, TSLogType type, const char *msg) {
  struct kl_probe *pr = payload;
  if (type != TSLogTypeParse) return;
  if (!strcmp(msg, "accept")) pr->accepted = true;
  if (!pr->accepted && !strncmp(msg, "resume version:", 15)) {
    pr->error = true;
    pr->cancel = 1;
  }
}

/* buf parsed afresh, as kl_dialect_ts_parse does, or NULL with *error set as soon as the parse
 * meets an error: most of the time of a parse with errors is their recovery, and a first parse
 * with an error is often only asked whether it has one (the expansion's clean parse then wins).
 * NULL without *error: it ran out of time (its log makes it slower than a plain parse). */
static TSTree *kl_dialect_probe_parse(const char *buf, uint32_t len, bool *error) {
  struct kl_probe pr = {0};
  TSParser *p = ts_parser_new();
  ts_parser_set_language(p, kl_dialect_cpp());
  ts_parser_set_timeout_micros(p, KL_PARSE_TIMEOUT_US);
  ts_parser_set_cancellation_flag(p, &pr.cancel);
  ts_parser_set_logger(p, (TSLogger){&pr, kl_dialect_probe_log});
  TSTree *t = ts_parser_parse_string(p, NULL, buf, len);
  ts_parser_delete(p);
  /* Recovery began too near the end for the flag to be read: the tree is whole. */
  if (t) pr.error = false;
  *error = pr.error;
#ifdef KL_TRAIL_CHECK
  TSTree *whole = pr.error ? kl_dialect_ts_parse(buf, len, NULL) : NULL;
  if (whole && !ts_node_has_error(ts_tree_root_node(whole))) {
    fprintf(stderr, "kernlint: probe check: a probe stopped at an error a whole parse lacks\n");
    abort();
  }
  if (whole) kl_node_tree_delete(whole);
#endif
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
 * the untouched stretches differ between the two parsed buffers (an expansion changed how the
 * text around it is blanked), where reuse would be wrong. first is what the first tree parsed. */
static TSTree *kl_dialect_edited_tree(const struct kl_unit *unit, const char *first,
                                      const char *nbuf, uint32_t nlen,
                                      const struct kl_offmap *emap,
                                      struct kl_kept_errors *kept) {
  for (size_t i = 0; i < emap->n; i++) {
    const struct kl_offmap_seg *g = &emap->segs[i];
    if (g->buf_len == g->file_len &&
        (g->file + g->file_len > unit->len || g->buf + g->buf_len > nlen ||
         memcmp(first + g->file, nbuf + g->buf, g->buf_len) != 0))
      return NULL;
  }
  /* Points of each replacement's start and old end in the first buffer, in one forward scan. */
  TSPoint *starts = kl_arena_xmalloc(sizeof *starts * (emap->n ? emap->n : 1));
  TSPoint *ends = kl_arena_xmalloc(sizeof *ends * (emap->n ? emap->n : 1));
  TSPoint at = {0, 0};
  uint32_t off = 0;
  for (size_t i = 0; i < emap->n; i++) {
    const struct kl_offmap_seg *g = &emap->segs[i];
    at = kl_point_advance(first, off, at, g->file);
    starts[i] = at;
    at = kl_point_advance(first, g->file, at, g->file + g->file_len);
    ends[i] = at;
    off = g->file + g->file_len;
  }
  kept->emap = emap;
  kl_dialect_walk(ts_tree_root_node(unit->tree), kl_dialect_kept_error, kept, NULL);
  /* A copy: an edit changes a tree in place, and the node cache (analyzer/core/node.h) may hold
   * answers about unit->tree. */
  TSTree *t = ts_tree_copy(unit->tree);
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
      uint32_t e = kl_lex_skip_comment(t, n, i);
      i = e > i ? e : i + 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      i = kl_lex_skip_literal(t, n, i);
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

/* Runs of at least this many bytes of nothing but numeric literals and commas (lookup tables)
 * are left out of the parse: tree-sitter spends longest on them, above all in the error
 * recovery of a table that a macro opens, and no analysis reads the values of a table. */
#define KL_TABLE_MIN_BYTES 2048

/* End of the run of numbers and commas (signs, spaces and comments between) starting at t[i]. */
static uint32_t kl_dialect_table_end(const char *t, uint32_t n, uint32_t i) {
  uint32_t end = i;
  for (uint32_t k = i; k < n;) {
    char c = t[k];
    uint32_t cm = kl_lex_skip_comment(t, n, k);
    if (cm > k) {
      k = cm;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '-' || c == '+') {
      k++;
    } else if (c == ',') {
      end = ++k;
    } else if (kl_digit(c) || (c == '.' && k + 1 < n && kl_digit(t[k + 1]))) {
      end = k = kl_lex_skip_number(t, n, k + 1);
    } else {
      break;
    }
  }
  return end;
}

/* Blank a[s, e) in *copy (made from t on first use), newlines kept. */
static void kl_dialect_blank_range(struct kl_arena *a, const char *t, uint32_t n, char **copy,
                                   uint32_t s, uint32_t e) {
  if (!*copy) *copy = kl_arena_strndup(a, t, n);
  for (uint32_t k = s; k < e; k++)
    if ((*copy)[k] != '\n') (*copy)[k] = ' ';
}

/* Blank the long numeric tables of t in *copy (made on first use). */
static void kl_dialect_blank_tables(struct kl_arena *a, const char *t, uint32_t n, char **copy) {
  for (uint32_t i = 0; i < n;) {
    char c = t[i];
    uint32_t cm = kl_lex_skip_comment(t, n, i);
    if (cm > i) {
      i = cm;
    } else if (c == '"' || c == '\'') {
      i = kl_lex_skip_literal(t, n, i);
    } else if (kl_lex_ident_start(c)) {
      while (i < n && kl_lex_ident_char(t[i])) i++;
    } else if (kl_digit(c)) {
      uint32_t e = kl_dialect_table_end(t, n, i);
      if (e - i >= KL_TABLE_MIN_BYTES) kl_dialect_blank_range(a, t, n, copy, i, e);
      i = e > i ? e : i + 1;
    } else {
      i++;
    }
  }
}

/* What tree-sitter is given: buf without what no analysis needs parsed, or buf itself when it
 * has none of it. Explicit instantiations are blanked (read as text into u->insts, after those
 * already there): a large file is mostly such lines, and the model only wants what they name.
 * So are long numeric tables. Positions do not move: the tree indexes buf. */
static const char *kl_dialect_parse_copy(struct kl_arena *a, const char *buf, uint32_t len,
                                         struct kl_unit *u) {
  char *copy = NULL; /* made only when something is left out */
  size_t made = u->ninsts;
  if (strstr(buf, "template")) { /* buf is NUL-terminated */
    kl_di_scan(a, buf, len, &u->insts, &u->ninsts, &u->cap_insts);
    for (size_t i = made; i < u->ninsts; i++)
      kl_dialect_blank_range(a, buf, len, &copy, u->insts[i].start, u->insts[i].end);
    u->insts = kl_di_merge(a, u->insts, made, u->ninsts);
    u->cap_insts = u->ninsts;
  }
  kl_dialect_blank_tables(a, buf, len, &copy);
  return copy ? copy : buf;
}

/* Whether a clean parse has, at file scope (in a namespace or an #if group too), a statement that
 * begins with a call of a macro the file or a local header defines (`INST(half);`, which
 * tree-sitter reads as an expression statement or as a declaration of `(half)`): no C++
 * statement stands there, so it is a macro use, most often one that stamps out explicit
 * instantiations. */
static bool kl_dialect_macro_stmt(struct kl_arena *a, const char *text, uint32_t len,
                                  const char *include_dir, const struct kl_unit *u, TSNode n,
                                  int depth) {
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(n, i);
    if (depth < 4 && (kl_node_is(c, "namespace_definition") || kl_node_is(c, "declaration_list") ||
                      kl_node_is(c, "preproc_if") || kl_node_is(c, "preproc_ifdef") ||
                      kl_node_is(c, "preproc_else") || kl_node_is(c, "preproc_elif"))) {
      if (kl_dialect_macro_stmt(a, text, len, include_dir, u, c, depth + 1)) return true;
      continue;
    }
    if (!kl_node_is(c, "expression_statement") && !kl_node_is(c, "declaration")) continue;
    uint32_t s = ts_node_start_byte(c), e = ts_node_end_byte(c), w = s;
    while (w < e && kl_lex_ident_char(u->buf[w])) w++;
    uint32_t p = kl_lex_space(u->buf, e, w);
    if (w == s || !kl_lex_ident_start(u->buf[s]) || p >= e || u->buf[p] != '(') continue;
    if (kl_expand_defines(a, text, len, include_dir, u->buf + s, w - s)) return true;
  }
  return false;
}

/* A unit that shares at least this many leading bytes with the one before is parsed as an edit. */
#define KL_REUSE_MIN_BYTES 1024
/* A kept first tree with this many errors is not edited where a probe may be made instead
 * (kl_dialect_parse_first). */
#define KL_PROBE_EDIT_MAX_ERRORS 32

#ifdef KL_TRAIL_CHECK
/* Whether two trees have the same nodes over the same bytes and points (edited, fresh). */
static bool kl_dialect_same_tree(TSNode x, TSNode y) {
  TSTreeCursor cx = ts_tree_cursor_new(x), cy = ts_tree_cursor_new(y);
  bool same = true;
  for (;;) {
    TSNode nx = ts_tree_cursor_current_node(&cx), ny = ts_tree_cursor_current_node(&cy);
    TSPoint px = ts_node_start_point(nx), py = ts_node_start_point(ny);
    TSPoint qx = ts_node_end_point(nx), qy = ts_node_end_point(ny);
    if (ts_node_symbol(nx) != ts_node_symbol(ny) ||
        ts_node_start_byte(nx) != ts_node_start_byte(ny) ||
        ts_node_end_byte(nx) != ts_node_end_byte(ny) || px.row != py.row ||
        px.column != py.column || qx.row != qy.row || qx.column != qy.column ||
        ts_tree_cursor_current_field_id(&cx) != ts_tree_cursor_current_field_id(&cy)) {
      same = false;
      break;
    }
    bool dx = ts_tree_cursor_goto_first_child(&cx), dy = ts_tree_cursor_goto_first_child(&cy);
    if (dx != dy) {
      same = false;
      break;
    }
    if (dx) continue;
    bool moved = false;
    for (;;) {
      bool sx = ts_tree_cursor_goto_next_sibling(&cx), sy = ts_tree_cursor_goto_next_sibling(&cy);
      if (sx != sy) {
        same = false;
        break;
      }
      if (sx) {
        moved = true;
        break;
      }
      if (!ts_tree_cursor_goto_parent(&cx)) break;
      ts_tree_cursor_goto_parent(&cy);
    }
    if (!same || !moved) break;
  }
  ts_tree_cursor_delete(&cx);
  ts_tree_cursor_delete(&cy);
  return same;
}
#endif

/* The ERROR and MISSING nodes of a tree, in the walk's order, each as its start, its end and
 * whether it is missing (malloc'd triples). */
struct kl_reuse_errors {
  uint32_t *v;
  size_t n, cap;
};

static enum kl_walk kl_dialect_list_error(TSNode n, void *ctx) {
  struct kl_reuse_errors *l = ctx;
  bool missing = ts_node_is_missing(n);
  if (!ts_node_has_error(n) && !missing) return KL_WALK_SKIP;
  if (missing || ts_node_symbol(n) == (TSSymbol)-1) {
    uint32_t x[3] = {ts_node_start_byte(n), ts_node_end_byte(n), missing};
    for (int i = 0; i < 3; i++) {
      KL_XVEC_PUSH(l->v, l->n, l->cap);
      l->v[l->n++] = x[i];
    }
  }
  return KL_WALK_DESCEND;
}

/* Whether none of the errors in old errors a (kl_dialect_list_error's triples) touches the old
 * bytes [p, old_end) that an edit replaces. */
static bool kl_dialect_errors_clear(const struct kl_reuse_errors *a, uint32_t p, uint32_t old_end) {
  for (size_t i = 0; i < a->n; i += 3)
    if (a->v[i + 1] >= p && a->v[i] <= old_end) return false;
  return true;
}

/* Whether an edited parse t of the text that replaced old bytes [p, old_end) by new bytes
 * [p, new_end) may be taken for a fresh one: its errors are a, those of the tree it was edited
 * from (each clear of the edit: kl_dialect_errors_clear), unchanged, so error recovery ran where
 * it ran before, over the same text. Where an edit makes, mends or touches an error, the recovery
 * may settle differently from a fresh parse's when it starts from the old tree, and the fresh
 * parse is made. */
static bool kl_dialect_same_errors(const struct kl_reuse_errors *a, TSNode t, uint32_t old_end,
                                   uint32_t new_end) {
  struct kl_reuse_errors b = {0};
  if (ts_node_has_error(t)) kl_dialect_walk(t, kl_dialect_list_error, &b, NULL);
  bool same = a->n == b.n;
  for (size_t i = 0; same && i < a->n; i += 3) {
    uint32_t s = a->v[i], e = a->v[i + 1];
    if (s > old_end) s = s - old_end + new_end, e = e - old_end + new_end;
    same = s == b.v[i] && e == b.v[i + 1] && a->v[i + 2] == b.v[i + 2];
  }
  free(b.v);
  return same;
}

/* The parse of buf as an edit of the tree kept in k, where the two texts share a long start or
 * end: MLX puts a kernel's header before its generated signature, and the kernels of a file
 * often share one header, so a fresh parse of each read it again; an editor's keystroke leaves
 * all but a few bytes of the document as they were. The edit is the span between the shared
 * start and the shared end, and tree-sitter re-reads only around it. Its result is taken when it
 * keeps the errors of the tree before as they were (kl_dialect_same_errors): a file that needs
 * its macros expanded has errors in its first parse, and a keystroke away from them reparses
 * only around itself. NULL when none is taken; *timeout when the edit ran out of time, which is
 * the unit's timeout (a fresh parse would only take longer). */
static TSTree *kl_dialect_edit_parse_in(const TSLanguage *lang, uint32_t timeout_us,
                                        const char *buf, uint32_t len,
                                        const struct kl_dialect_kept *k, bool *timeout) {
  *timeout = false;
  if (!k->tree) return NULL;
  TSTree *t = NULL;
  uint32_t n = len < k->len ? len : k->len, p = 0, q = 0;
  while (p < n && buf[p] == k->text[p]) p++;
  while (q < n - p && buf[len - 1 - q] == k->text[k->len - 1 - q]) q++;
  if (p + q < KL_REUSE_MIN_BYTES) return NULL;
  /* An edit in an error's span is parsed afresh at once: its edited parse is not taken. */
  struct kl_reuse_errors was = {0};
  if (ts_node_has_error(ts_tree_root_node(k->tree)))
    kl_dialect_walk(ts_tree_root_node(k->tree), kl_dialect_list_error, &was, NULL);
  if (kl_dialect_errors_clear(&was, p, k->len - q)) {
    TSPoint at = kl_point_advance(buf, 0, (TSPoint){0, 0}, p);
    TSInputEdit e = {
        .start_byte = p,
        .old_end_byte = k->len - q,
        .new_end_byte = len - q,
        .start_point = at,
        .old_end_point = kl_point_advance(k->text, p, at, k->len - q),
        .new_end_point = kl_point_advance(buf, p, at, len - q),
    };
    TSTree *old = ts_tree_copy(k->tree);
    ts_tree_edit(old, &e);
    t = kl_dialect_ts_parse_in(lang, timeout_us, buf, len, old);
    kl_node_tree_delete(old);
    *timeout = t == NULL;
    if (t && !kl_dialect_same_errors(&was, ts_tree_root_node(t), k->len - q, len - q)) {
      kl_node_tree_delete(t);
      t = NULL;
    }
#ifdef KL_TRAIL_CHECK
    if (t) {
      /* A fresh parse that runs out of time (slow under sanitizers) has nothing to compare. */
      TSTree *fresh = kl_dialect_ts_parse_in(lang, timeout_us, buf, len, NULL);
      if (fresh && !kl_dialect_same_tree(ts_tree_root_node(t), ts_tree_root_node(fresh))) {
        fprintf(stderr, "kernlint: reuse check: the edited parse differs from a fresh one\n");
        abort();
      }
      if (fresh) kl_node_tree_delete(fresh);
    }
#endif
  }
  free(was.v);
  return t;
}

static TSTree *kl_dialect_edit_parse(const char *buf, uint32_t len,
                                     const struct kl_dialect_kept *k, bool *timeout) {
  return kl_dialect_edit_parse_in(kl_dialect_cpp(), KL_PARSE_TIMEOUT_US, buf, len, k, timeout);
}

/* Keep t, parsed of buf, in slot k for the next parse to edit. A tree with errors does not
 * replace a clean one: the next unit of an MLX file, which shares the header, edits the clean
 * one as well. */
static void kl_dialect_keep_tree(struct kl_dialect_kept *k, const char *buf, uint32_t len,
                                 const TSTree *t) {
  if (k->tree && ts_node_has_error(ts_tree_root_node(t)) &&
      !ts_node_has_error(ts_tree_root_node(k->tree)))
    return;
  if (k->tree) kl_node_tree_delete(k->tree);
  k->tree = ts_tree_copy(t);
  k->nerrors = -1;
  /* A copy: the buffer is the unit's, and the next text may come after its arena is gone. */
  free(k->text);
  k->text = kl_arena_xstrndup(buf, len);
  k->len = len;
}

/* The errors of the tree k keeps, counted once. */
static unsigned kl_dialect_kept_errors(struct kl_dialect_kept *k) {
  if (k->nerrors < 0) k->nerrors = (long)kl_dialect_count_errors(ts_tree_root_node(k->tree));
  return (unsigned)k->nerrors;
}

/* The first parse of a unit: an edit of the tree r keeps where it may be (kl_dialect_parse_kept).
 * Where the unit before took a clean expansion over a first parse with errors (r->probe), and
 * no edit of a kept tree is taken, it is a probe instead: if it has errors again, the expansion's
 * clean parse settles the unit without their count, or their recovery. Kept trees with many
 * errors are not edited then: an edit reparses every error's span (tree-sitter reuses no
 * subtree with an error), often the whole file, where the probe reads up to the first one. NULL
 * with *stopped set: the probe stopped; NULL alone: it ran out of time. */
static TSTree *kl_dialect_parse_first(const char *buf, uint32_t len, struct kl_dialect_reuse *r,
                                      bool *stopped) {
  *stopped = false;
  if (!r || !r->probe)
    return kl_dialect_parse_kept(kl_dialect_cpp(), KL_PARSE_TIMEOUT_US, buf, len,
                                 r ? &r->first : NULL);
  TSTree *t = NULL;
  bool timeout = false;
  if (r->first.tree && kl_dialect_kept_errors(&r->first) < KL_PROBE_EDIT_MAX_ERRORS)
    t = kl_dialect_edit_parse_in(kl_dialect_cpp(), KL_PARSE_TIMEOUT_US, buf, len, &r->first,
                                 &timeout);
  if (timeout) return NULL;
  if (!t) t = kl_dialect_probe_parse(buf, len, stopped);
  /* A probe that ran out of time (its log slows it) gets the time a plain parse has. */
  if (!t && !*stopped) t = kl_dialect_ts_parse(buf, len, NULL);
  if (t) kl_dialect_keep_tree(&r->first, buf, len, t);
  return t;
}

/* The first parse in full where a probe stopped it at its first error (unit->tree NULL): the
 * count of its errors decides between it and the expansion. False when it runs out of time. */
static bool kl_dialect_first_whole(struct kl_unit *unit, const char *first,
                                   struct kl_dialect_reuse *r) {
  if (unit->tree) return true;
  unit->tree = kl_dialect_parse_kept(kl_dialect_cpp(), KL_PARSE_TIMEOUT_US, first, unit->len,
                                     r ? &r->first : NULL);
  if (!unit->tree) return false;
  unit->nerrors = kl_dialect_count_errors(ts_tree_root_node(unit->tree));
  return true;
}

/* Try the macro-expanded parse; adopt it into unit when it has fewer errors, or, for a clean
 * parse, when it parses clean too and reads more explicit instantiations (stamped out by macro
 * calls that tree-sitter took for statements). first is what the unit's tree parsed; a unit
 * without a tree has a probe's error, not yet counted, that only a clean expansion beats
 * without the count. -1 when the count was needed and its parse ran out of time. */
static int kl_dialect_try_expand(struct kl_arena *a, const char *text, uint32_t len,
                                 const struct kl_offmap *base, const char *include_dir,
                                 struct kl_unit *unit, const char *first, bool take,
                                 struct kl_dialect_reuse *r) {
  struct kl_offmap emap;
  uint32_t n;
  struct kl_unit e = {.src = unit->src};
  char *buf =
      kl_expand_text(a, text, len, include_dir, &n, &emap, take ? &e.insts : NULL, &e.ninsts);
  if (!buf || kl_dialect_nesting(buf, n) > KL_SOURCE_MAX_NESTING) return 0;
  e.cap_insts = e.ninsts;
  kl_dialect_blank(a, buf, n, &e, include_dir);
  const char *parsed = take ? kl_dialect_parse_copy(a, buf, n, &e) : buf;
  /* A clean first parse gives way only to more instantiations, and their count is known before
   * any parse: without more, the expansion is dropped whatever its tree, so it is not parsed. */
  if (!unit->nerrors && e.ninsts <= unit->ninsts) return 0;
  /* Reusing the first tree is exact only where it parses clean, apart from the errors of the
   * first parse that no replacement touches (`__embed_x__` on a line of its own): those are
   * in the text alike, and the reparse is kept when each of its errors starts where one of them
   * does. Error recovery may settle differently when it starts from the first tree's errors,
   * so any other error gets a fresh parse, and the result is that of parsing the expanded
   * buffer alone. */
  /* The language server's next version: an edit of the last version's expansion (one that runs
   * out of time is left for the parses below, as a unit alone gets them). */
  bool timeout = false;
  e.tree = r ? kl_dialect_edit_parse(parsed, n, &r->expanded, &timeout) : NULL;
  struct kl_kept_errors kept = {0};
  /* Where the expansion is over twice the text (stamped-out instantiations), an edit reuses
   * little of the first tree, and a new error anywhere in all that new text costs a second parse:
   * the fresh parse, whose tree an edit that is kept equals, is made at once. */
  TSTree *edited = e.tree || n / 2 > len || !unit->tree
                       ? NULL
                       : kl_dialect_edited_tree(unit, first, parsed, n, &emap, &kept);
  if (edited) {
    e.tree = kl_dialect_ts_parse(parsed, n, edited);
    kl_node_tree_delete(edited);
    bool same = false;
    if (e.tree) {
      kept.emap = &emap;
      kl_dialect_walk(ts_tree_root_node(e.tree), kl_dialect_same_error, &kept, NULL);
      same = kept.emap != NULL;
    }
    if (e.tree && !same) {
      kl_node_tree_delete(e.tree);
      e.tree = NULL;
    }
  }
  free(kept.at);
  if (!e.tree) e.tree = kl_dialect_ts_parse(parsed, n, NULL);
  if (!e.tree) return 0;
  if (r) kl_dialect_keep_tree(&r->expanded, parsed, n, e.tree);
  e.nerrors = kl_dialect_count_errors(ts_tree_root_node(e.tree));
  if (e.nerrors && !kl_dialect_first_whole(unit, first, r)) {
    kl_node_tree_delete(e.tree);
    return -1;
  }
  bool more = !unit->nerrors && !e.nerrors && e.ninsts > unit->ninsts;
  if (e.nerrors >= unit->nerrors && !more) {
    kl_node_tree_delete(e.tree);
    return 0;
  }
  if (unit->tree) kl_node_tree_delete(unit->tree);
  e.buf = buf;
  e.len = n;
  e.expanded = true;
  if (base)
    kl_offmap_compose(&e.map, a, &emap, base);
  else
    e.map = emap;
  *unit = e;
  return 0;
}

TSTree *kl_dialect_parse_kept(const TSLanguage *lang, uint32_t timeout_us, const char *buf,
                              uint32_t len, struct kl_dialect_kept *k) {
  bool timeout = false;
  TSTree *t = k ? kl_dialect_edit_parse_in(lang, timeout_us, buf, len, k, &timeout) : NULL;
  if (timeout) return NULL;
  if (!t) t = kl_dialect_ts_parse_in(lang, timeout_us, buf, len, NULL);
  if (t && k) kl_dialect_keep_tree(k, buf, len, t);
  return t;
}

void kl_dialect_kept_end(struct kl_dialect_kept *k) {
  if (k->tree) kl_node_tree_delete(k->tree);
  free(k->text);
  memset(k, 0, sizeof *k);
}

void kl_dialect_reuse_end(struct kl_dialect_reuse *r) {
  kl_dialect_kept_end(&r->first);
  kl_dialect_kept_end(&r->expanded);
  r->probe = false;
}

static int kl_dialect_parse_as(struct kl_arena *a, const struct kl_source *src, const char *text,
                               uint32_t len, const struct kl_offmap *base, const char *include_dir,
                               struct kl_dialect_reuse *r, struct kl_unit *unit, char *err,
                               size_t errlen, bool take) {
  memset(unit, 0, sizeof *unit);
  unit->src = src;
  /* Code no build compiles (`#if 0`) is not analysed: blanked, it keeps every position. */
  const char *live = kl_preproc_strip_dead(a, text, len);
  if (live) text = live;
  char *buf = kl_arena_strndup(a, text, len);
  kl_dialect_blank(a, buf, len, unit, include_dir);
  unit->buf = buf;
  unit->len = len;
  if (base)
    unit->map = *base;
  else
    kl_offmap_identity(&unit->map, a, len);
  const char *parsed = take ? kl_dialect_parse_copy(a, buf, len, unit) : buf;
  bool stopped = false;
  unit->tree = kl_dialect_parse_first(parsed, len, r, &stopped);
  if (!unit->tree && !stopped) {
    snprintf(err, errlen, "parsing timed out after %u s", KL_PARSE_TIMEOUT_US / 1000000u);
    return -1;
  }
  /* A probe's error stands for at least one until they are counted. */
  unit->nerrors = stopped ? 1 : kl_dialect_count_errors(ts_tree_root_node(unit->tree));
  bool first_errors = unit->nerrors > 0;
  bool expand = unit->nerrors || (take && kl_dialect_macro_stmt(a, text, len, include_dir, unit,
                                                                ts_tree_root_node(unit->tree), 0));
  if ((!expand || kl_dialect_try_expand(a, text, len, base, include_dir, unit, parsed, take, r) ==
                      0) &&
      kl_dialect_first_whole(unit, parsed, r)) {
    if (r) r->probe = first_errors && unit->expanded && !unit->nerrors;
    return 0;
  }
  snprintf(err, errlen, "parsing timed out after %u s", KL_PARSE_TIMEOUT_US / 1000000u);
  return -1;
}

int kl_dialect_parse(struct kl_arena *a, const struct kl_source *src, const char *text,
                     uint32_t len, const struct kl_offmap *base, const char *include_dir,
                     struct kl_unit *unit, char *err, size_t errlen) {
  return kl_dialect_parse_as(a, src, text, len, base, include_dir, NULL, unit, err, errlen, true);
}

int kl_dialect_parse_next(struct kl_arena *a, const struct kl_source *src, const char *text,
                          uint32_t len, const struct kl_offmap *base, const char *include_dir,
                          struct kl_dialect_reuse *r, struct kl_unit *unit, char *err,
                          size_t errlen) {
  return kl_dialect_parse_as(a, src, text, len, base, include_dir, r, unit, err, errlen, true);
}

int kl_dialect_parse_whole(struct kl_arena *a, const struct kl_source *src, const char *text,
                           uint32_t len, const struct kl_offmap *base, const char *include_dir,
                           struct kl_unit *unit, char *err, size_t errlen) {
  return kl_dialect_parse_as(a, src, text, len, base, include_dir, NULL, unit, err, errlen, false);
}

void kl_dialect_release(struct kl_unit *unit) {
  if (unit->tree) kl_node_tree_delete(unit->tree);
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

/* kl_dialect_lead with up ancestors to climb at most. */
static uint32_t kl_dialect_lead_climb(TSNode n, int up) {
  for (int i = 0; i < up && !ts_node_is_null(n); i++) {
    TSNode prev = ts_node_prev_sibling(n);
    if (!ts_node_is_null(prev)) return ts_node_end_byte(prev);
    n = ts_node_parent(n);
  }
  return 0;
}

uint32_t kl_dialect_lead(TSNode n) {
  /* A first child starts where its parent's own leading bytes start: the root itself begins at
   * the first token, after any keyword blanked at the top of the file. The bound only guards
   * against a pathological tree (each step up is linear in tree-sitter 0.20.7). */
  return kl_dialect_lead_climb(n, KL_LEAD_MAX_UP);
}

TSNode kl_dialect_trail_parent(const struct kl_walk_trail *t, TSNode n) {
  for (uint32_t d = t->depth; d > 0; d--)
    if (ts_node_eq(t->steps[d].node, n)) return t->steps[d - 1].node;
  return ts_node_parent(n);
}

uint32_t kl_dialect_trail_lead(const struct kl_walk_trail *t) {
  const struct kl_trail_step *s = t->steps;
  TSNode n = s[t->depth].node;
  /* An empty node may share its place with empty siblings, where tree-sitter's previous sibling
   * is not simply the one visited before. */
  if (ts_node_start_byte(n) == ts_node_end_byte(n)) return kl_dialect_lead(n);
  /* The same climb as kl_dialect_lead, reading the walk's previous siblings instead of searching
   * each parent's children (tree-sitter 0.20.7 finds a parent by descending from the root). */
  for (uint32_t i = 0; i < KL_LEAD_MAX_UP; i++) {
    if (i == t->depth) return kl_dialect_lead_climb(t->root, KL_LEAD_MAX_UP - (int)i);
    if (s[t->depth - i].has_prev) return ts_node_end_byte(s[t->depth - i].prev);
  }
  return 0;
}

char *kl_dialect_node_text(struct kl_arena *a, const struct kl_unit *unit, TSNode node) {
  uint32_t s = ts_node_start_byte(node), e = ts_node_end_byte(node);
  return kl_arena_strndup(a, unit->buf + s, e - s);
}

/* ---- Explicit instantiations from text ------------------------------------------------------- */

/* The explicit instantiations among the statements of t[0, n), appended in order. */
static void kl_di_scan(struct kl_arena *a, const char *t, uint32_t n, struct kl_inst **v,
                       size_t *nv, size_t *cap) {
  uint32_t stmt = 0; /* where the statement holding i starts */
  for (uint32_t i = 0; i < n;) {
    uint32_t c = kl_lex_skip_comment(t, n, i);
    if (c != i) {
      i = c;
      continue;
    }
    char ch = t[i];
    if (ch == '"' || ch == '\'') {
      i = kl_lex_skip_literal(t, n, i);
      continue;
    }
    if (ch == ';' || ch == '{' || ch == '}') {
      stmt = ++i;
      continue;
    }
    if (ch == '#' && kl_lex_space(t, n, stmt) == i) {
      /* A directive line ends no statement but starts none either. */
      while (i < n && t[i] != '\n') i += t[i] == '\\' && i + 1 < n ? 2 : 1;
      stmt = i;
      continue;
    }
    if (!kl_lex_ident_start(ch)) {
      i++;
      continue;
    }
    uint32_t s = i;
    while (i < n && kl_lex_ident_char(t[i])) i++;
    if (i - s != 8 || memcmp(t + s, "template", 8) || kl_lex_space(t, n, stmt) != s) continue;
    struct kl_inst in;
    uint32_t end;
    if (!kl_inst_read(a, t, n, s, &in, &end)) continue;
    KL_VEC_PUSH(a, *v, *nv, *cap);
    (*v)[(*nv)++] = in;
    stmt = i = end;
  }
}

/* v[0, made) (stamped out by macros) and v[made, n) (written out) merged in buffer order; the
 * instantiations of one macro call share its start and keep their order. */
static struct kl_inst *kl_di_merge(struct kl_arena *a, struct kl_inst *v, size_t made, size_t n) {
  if (made == 0 || made == n) return v;
  struct kl_inst *w = kl_arena_alloc(a, n * sizeof *w);
  size_t i = 0, j = made, k = 0;
  while (i < made || j < n)
    w[k++] = (j >= n || (i < made && v[i].start <= v[j].start)) ? v[i++] : v[j++];
  return w;
}

size_t kl_dialect_instances(struct kl_arena *a, const char *text, uint32_t len,
                            const char *include_dir, struct kl_inst **out) {
  struct kl_offmap map;
  uint32_t n = len;
  struct kl_inst *v = NULL;
  size_t nv = 0, cap = 0;
  /* The lint of the file expands it again, as it is: it takes this expansion instead. */
  const char *t = kl_expand_keep(a, text, len, include_dir, &n, &map, &v, &nv);
  if (!t) {
    t = text;
    n = len;
    nv = 0;
  }
  cap = nv;
  size_t made = nv;
  kl_di_scan(a, t, n, &v, &nv, &cap);
  *out = kl_di_merge(a, v, made, nv);
  return nv;
}
