/* The host front end reads a C-family token stream. A name's value is the last plain assignment
 * to it before the use, in the blocks that enclose the use (an assignment inside an earlier,
 * closed block, such as one branch of an if, makes it unknown), then file scope, then #define.
 * Pipelines are tied to kernels through the same assignments, searched file-wide, since a
 * pipeline is usually made once (in an init method) and used in another. */
#include "analyzer/input/host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names followed through names, and nested expressions, before a value counts as unknown. */
#define KL_HT_MAX_DEPTH 16
/* Name lookups per file, each a scan back through the tokens: a bound on pathological input. */
#define KL_HT_BUDGET 20000
/* Scans for what a name's assignments agree on (each a window of tokens back from the use). */
#define KL_HT_GRANULE_BUDGET 1000
#define KL_HT_GRANULE_WINDOW 4000

enum kl_ht_kind { KL_HT_IDENT, KL_HT_NUM, KL_HT_STR, KL_HT_PUNCT };

struct kl_ht_tok {
  enum kl_ht_kind kind;
  uint32_t s, e; /* file bytes */
  bool pp;       /* part of a preprocessor directive */
};

/* An object-like #define: its value is tokens [first, last). */
struct kl_ht_def {
  size_t name, first, last;
};

struct kl_host {
  struct kl_arena *a;  /* scratch */
  struct kl_arena *oa; /* what the dispatches keep */
  const struct kl_source *src;
  const char *t;
  uint32_t len;
  struct kl_ht_tok *tok;
  size_t n, cap;
  struct kl_ht_def *defs;
  size_t ndefs, cap_defs;
  unsigned budget; /* lookups left */
  bool swift;      /* Swift: a statement may end at a line break, with no semicolon */
  unsigned granule_budget; /* kl_ht_name_granule scans left */
};

static bool kl_ht_idstart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool kl_ht_idchar(char c) {
  return kl_ht_idstart(c) || (c >= '0' && c <= '9');
}

/* ---- tokens ---- */

static void kl_ht_push(struct kl_host *h, enum kl_ht_kind k, uint32_t s, uint32_t e, bool pp) {
  KL_VEC_PUSH(h->a, h->tok, h->n, h->cap);
  h->tok[h->n++] = (struct kl_ht_tok){k, s, e, pp};
}

static bool kl_ht_is(const struct kl_host *h, size_t i, const char *s) {
  if (i >= h->n) return false;
  const struct kl_ht_tok *k = &h->tok[i];
  return strlen(s) == k->e - k->s && !memcmp(h->t + k->s, s, k->e - k->s);
}

static bool kl_ht_ident_is(const struct kl_host *h, size_t i, const char *s) {
  return i < h->n && h->tok[i].kind == KL_HT_IDENT && kl_ht_is(h, i, s);
}

/* Whether token i is an identifier in the NULL-terminated list. */
static bool kl_ht_ident_in(const struct kl_host *h, size_t i, const char *const *list) {
  for (; *list; list++)
    if (kl_ht_ident_is(h, i, *list)) return true;
  return false;
}

/* Record `#define NAME value` for directive tokens [first, end) (first is the `#`). */
static void kl_ht_directive(struct kl_host *h, size_t first, size_t end) {
  if (end < first + 3 || !kl_ht_ident_is(h, first + 1, "define")) return;
  size_t name = first + 2;
  if (h->tok[name].kind != KL_HT_IDENT) return;
  /* `#define F(x)` with no space before the parenthesis is function-like: not a constant. */
  if (name + 1 < end && kl_ht_is(h, name + 1, "(") && h->tok[name + 1].s == h->tok[name].e) return;
  KL_VEC_PUSH(h->a, h->defs, h->ndefs, h->cap_defs);
  h->defs[h->ndefs++] = (struct kl_ht_def){name, name + 1, end};
}

static void kl_ht_lex(struct kl_host *h) {
  static const char *const ops[] = {
      "<<=", ">>=", "::", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&",
      "||",  "+=",  "-=", "*=", "/=", "%=", "&=", "|=", "^=", "++", "--"};
  const char *t = h->t;
  uint32_t n = h->len;
  bool line_start = true, pp = false;
  size_t pp_first = 0;
  for (uint32_t i = 0; i < n;) {
    char c = t[i];
    if (c == '\\' && i + 1 < n && (t[i + 1] == '\n' || t[i + 1] == '\r')) {
      i += 2; /* a continued line stays in its directive */
      continue;
    }
    if (c == '\n') {
      if (pp) kl_ht_directive(h, pp_first, h->n);
      pp = false;
      line_start = true;
      i++;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      i++;
      continue;
    }
    if (c == '/' && i + 1 < n && t[i + 1] == '/') {
      while (i < n && t[i] != '\n') i++;
      continue;
    }
    if (c == '/' && i + 1 < n && t[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(t[i] == '*' && t[i + 1] == '/')) i++;
      i = i + 1 < n ? i + 2 : n;
      continue;
    }
    uint32_t s = i;
    if (c == '#' && line_start) {
      pp = true;
      pp_first = h->n;
      kl_ht_push(h, KL_HT_PUNCT, s, s + 1, true);
      i++;
      line_start = false;
      continue;
    }
    line_start = false;
    if (c == '"' || c == '\'' || (c == '@' && i + 1 < n && t[i + 1] == '"')) {
      if (c == '@') i++;
      char q = t[i++];
      while (i < n && t[i] != q && t[i] != '\n') i += t[i] == '\\' ? 2 : 1;
      if (i < n && t[i] == q) i++;
      if (i > n) i = n;
      kl_ht_push(h, q == '"' ? KL_HT_STR : KL_HT_NUM, s, i, pp);
      continue;
    }
    if (kl_ht_idstart(c)) {
      while (i < n && kl_ht_idchar(t[i])) i++;
      kl_ht_push(h, KL_HT_IDENT, s, i, pp);
      continue;
    }
    if ((c >= '0' && c <= '9') || (c == '.' && i + 1 < n && t[i + 1] >= '0' && t[i + 1] <= '9')) {
      while (i < n && (kl_ht_idchar(t[i]) || t[i] == '.' || t[i] == '\'' ||
                       ((t[i] == '+' || t[i] == '-') && (t[i - 1] == 'e' || t[i - 1] == 'E' ||
                                                         t[i - 1] == 'p' || t[i - 1] == 'P'))))
        i++;
      kl_ht_push(h, KL_HT_NUM, s, i, pp);
      continue;
    }
    uint32_t len = 1;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
      size_t m = strlen(ops[k]);
      if (i + m <= n && !memcmp(t + i, ops[k], m)) {
        len = (uint32_t)m;
        break;
      }
    }
    kl_ht_push(h, KL_HT_PUNCT, s, s + len, pp);
    i += len;
  }
  if (pp) kl_ht_directive(h, pp_first, h->n);
}

/* Index of the bracket matching the opener at i, or end when unbalanced. */
static size_t kl_ht_match(const struct kl_host *h, size_t i, size_t end) {
  int depth = 0;
  for (size_t k = i; k < end; k++) {
    if (h->tok[k].kind != KL_HT_PUNCT) continue;
    char c = h->t[h->tok[k].s];
    if (h->tok[k].e - h->tok[k].s != 1) continue;
    if (c == '(' || c == '[' || c == '{') depth++;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) return k;
      if (depth < 0) return end;
    }
  }
  return end;
}

/* Split tokens [s, e) at top-level commas into at most max ranges; returns the count. */
static size_t kl_ht_split(const struct kl_host *h, size_t s, size_t e, size_t (*r)[2], size_t max) {
  size_t n = 0, start = s;
  for (size_t k = s; k <= e && n < max; k++) {
    if (k == e || kl_ht_is(h, k, ",")) {
      if (k > start) {
        r[n][0] = start;
        r[n][1] = k;
        n++;
      }
      start = k + 1;
      continue;
    }
    if (kl_ht_is(h, k, "(") || kl_ht_is(h, k, "[") || kl_ht_is(h, k, "{")) {
      size_t m = kl_ht_match(h, k, e);
      if (m >= e) break;
      k = m;
    }
  }
  return n;
}

/* Tokens [s, e) joined without spaces, for comparing and quoting. */
static char *kl_ht_text(const struct kl_host *h, struct kl_arena *a, size_t s, size_t e) {
  size_t len = 0;
  for (size_t k = s; k < e; k++) len += h->tok[k].e - h->tok[k].s;
  char *out = kl_arena_alloc(a, len + 1), *o = out;
  for (size_t k = s; k < e; k++) {
    memcpy(o, h->t + h->tok[k].s, h->tok[k].e - h->tok[k].s);
    o += h->tok[k].e - h->tok[k].s;
  }
  *o = '\0';
  return out;
}

/* The source text of tokens [s, e), for messages. */
static const char *kl_ht_quote(struct kl_host *h, size_t s, size_t e) {
  if (s >= e) return "";
  return kl_dispatch_quote(h->oa, h->src, h->tok[s].s, h->tok[e - 1].e);
}

static struct kl_span kl_ht_span(struct kl_host *h, size_t s, size_t e) {
  if (s >= e) return kl_diag_span(h->src, 0, 0);
  return kl_diag_span(h->src, h->tok[s].s, h->tok[e - 1].e);
}

/* ---- names ---- */

static bool kl_ht_keyword(const struct kl_host *h, size_t i) {
  static const char *const kw[] = {"return", "else", "case",      "throw",    "delete", "new",
                                   "sizeof", "goto", "co_return", "co_yield", NULL};
  return kl_ht_ident_in(h, i, kw);
}

/* Swift: whether a statement ends before token i, at a line break after a complete operand
 * (a name, literal or closing bracket) with no operator or `.` to continue it on the new line. */
static bool kl_ht_line_ends(const struct kl_host *h, size_t i) {
  const struct kl_ht_tok *p = &h->tok[i - 1], *k = &h->tok[i];
  if (!memchr(h->t + p->e, '\n', k->s - p->e)) return false;
  bool operand = p->kind != KL_HT_PUNCT || kl_ht_is(h, i - 1, ")") || kl_ht_is(h, i - 1, "]");
  bool continues = k->kind == KL_HT_PUNCT && !kl_ht_is(h, i, "(") && !kl_ht_is(h, i, "[") &&
                   !kl_ht_is(h, i, "{") && !kl_ht_is(h, i, "@") && !kl_ht_is(h, i, "#");
  return operand && !continues;
}

/* The end of the value that starts at token v: the `;`, `,` or closing bracket after it (or,
 * in Swift, the line break). */
static size_t kl_ht_value_end(const struct kl_host *h, size_t v) {
  size_t e = v;
  while (e < h->n && !h->tok[e].pp && !kl_ht_is(h, e, ";") && !kl_ht_is(h, e, ",") &&
         !kl_ht_is(h, e, "}") && !kl_ht_is(h, e, ")") && !kl_ht_is(h, e, "]") &&
         !(h->swift && e > v && kl_ht_line_ends(h, e))) {
    if (kl_ht_is(h, e, "(") || kl_ht_is(h, e, "[") || kl_ht_is(h, e, "{")) {
      size_t m = kl_ht_match(h, e, h->n);
      if (m >= h->n) break;
      e = m;
    }
    e++;
  }
  return e;
}

/* Value tokens [*vs, *ve) of name at token `at`: 1 found, 0 not assigned anywhere we can see,
 * -1 assigned in a way we do not follow. file_wide also searches closed blocks (for pipelines). */
static int kl_ht_lookup(struct kl_host *h, const char *name, size_t at, bool file_wide, size_t *vs,
                        size_t *ve) {
  if (h->budget == 0) return -1;
  h->budget--;
  size_t nlen = strlen(name);
  int skip = 0;
  bool conditional = false;
  for (size_t i = at; i-- > 0;) {
    const struct kl_ht_tok *k = &h->tok[i];
    if (k->pp) continue;
    if (k->kind == KL_HT_PUNCT && k->e - k->s == 1) {
      char c = h->t[k->s];
      if (c == '}') skip++;
      if (c == '{' && skip > 0) skip--;
      continue;
    }
    if (k->kind != KL_HT_IDENT || k->e - k->s != nlen || memcmp(h->t + k->s, name, nlen)) continue;
    if (i > 0 && (kl_ht_is(h, i - 1, ".") || kl_ht_is(h, i - 1, "->"))) {
      /* self.x and obj->x name the member x as well. */
      if (!(i > 1 && (kl_ht_ident_is(h, i - 2, "self") || kl_ht_ident_is(h, i - 2, "this"))))
        continue;
    }
    bool inner = skip > 0 && !file_wide;
    size_t nx = i + 1;
    if (kl_ht_is(h, nx, "=")) {
      size_t e = kl_ht_value_end(h, nx + 1);
      /* `nth = std::min(nth, n)` reads the value nth had before this assignment. */
      if (!inner && e > at) continue;
      if (inner) {
        conditional = true;
        continue;
      }
      if (conditional) return -1;
      *vs = nx + 1;
      *ve = e;
      return e > nx + 1 ? 1 : -1;
    }
    static const char *const compound[] = {
        "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "++", "--"};
    bool changed = i > 0 && (kl_ht_is(h, i - 1, "++") || kl_ht_is(h, i - 1, "--"));
    for (size_t c = 0; c < sizeof compound / sizeof compound[0] && !changed; c++)
      changed = kl_ht_is(h, nx, compound[c]);
    if (changed) {
      if (!inner) return -1;
      conditional = true;
      continue;
    }
    /* A declaration with a constructor: `MTL::Size tg(256, 1, 1);`, `MTLSize tg{...}`. */
    if ((kl_ht_is(h, nx, "(") || kl_ht_is(h, nx, "{")) && i > 0 &&
        h->tok[i - 1].kind == KL_HT_IDENT && !kl_ht_keyword(h, i - 1)) {
      size_t m = kl_ht_match(h, nx, h->n);
      if (m >= h->n) continue;
      if (inner) {
        conditional = true;
        continue;
      }
      if (conditional) return -1;
      *vs = nx;
      *ve = m + 1;
      return 1;
    }
  }
  for (size_t d = h->ndefs; d-- > 0;) {
    const struct kl_ht_def *df = &h->defs[d];
    if (kl_ht_ident_is(h, df->name, name) && df->first < df->last) {
      *vs = df->first;
      *ve = df->last;
      return 1;
    }
  }
  return 0;
}

/* ---- expressions ---- */

static struct kl_dx *kl_ht_dx(struct kl_host *h, size_t s, size_t e, int depth);

/* A power of two that name is a multiple of at token `at` whatever its runtime value, from
 * every assignment to it in a window of tokens before `at` (also in loops and branches, and
 * those of an earlier function in the window: the least of them): `nth = 32` then `nth *= 2`
 * in a loop stays a multiple of 32. 1 when any assignment is of another kind, or there is none
 * (a parameter). */
static int64_t kl_ht_name_granule(struct kl_host *h, const char *name, size_t at, int depth) {
  if (depth > KL_HT_MAX_DEPTH || h->budget == 0 || h->granule_budget == 0) return 1;
  h->budget--;
  h->granule_budget--;
  int64_t g = 0;
  /* A window back from the use: a function's own assignments, not a whole large file's. */
  size_t stop = at > KL_HT_GRANULE_WINDOW ? at - KL_HT_GRANULE_WINDOW : 0;
  for (size_t i = at; i-- > stop;) {
    if (h->tok[i].pp || !kl_ht_ident_is(h, i, name)) continue;
    if (i > 0 && (kl_ht_is(h, i - 1, ".") || kl_ht_is(h, i - 1, "->") || kl_ht_is(h, i - 1, "++") ||
                  kl_ht_is(h, i - 1, "--")))
      return 1;
    size_t nx = i + 1;
    int64_t v = 0;
    if (kl_ht_is(h, nx, "*=") || kl_ht_is(h, nx, "<<=")) continue; /* keeps the multiple */
    if (kl_ht_is(h, nx, "=") || kl_ht_is(h, nx, "+=") || kl_ht_is(h, nx, "-=")) {
      size_t e = kl_ht_value_end(h, nx + 1);
      if (e > at) continue; /* the assignment that reads it */
      if (e <= nx + 1) return 1;
      v = kl_dx_granule(kl_ht_dx(h, nx + 1, e, depth + 1));
    } else if (kl_ht_is(h, nx, "/=") || kl_ht_is(h, nx, ">>=") || kl_ht_is(h, nx, "%=") ||
               kl_ht_is(h, nx, "&=") || kl_ht_is(h, nx, "|=") || kl_ht_is(h, nx, "^=") ||
               kl_ht_is(h, nx, "++") || kl_ht_is(h, nx, "--") || kl_ht_is(h, nx, "(") ||
               kl_ht_is(h, nx, "{")) {
      return 1;
    } else {
      continue; /* a read */
    }
    if (v <= 1) return 1;
    if (!g || v < g) g = v;
  }
  return g ? g : 1;
}

struct kl_hp {
  struct kl_host *h;
  size_t i, end;
  int depth;
};

static struct kl_dx *kl_hp_expr(struct kl_hp *p, int minprec);

/* The expression in tokens [s, e), with names looked up before token s. */
static struct kl_dx *kl_ht_dx(struct kl_host *h, size_t s, size_t e, int depth) {
  if (s >= e || depth > KL_HT_MAX_DEPTH)
    return kl_dx_leaf(h->a, s < e ? kl_ht_text(h, h->a, s, e) : "?");
  struct kl_hp p = {h, s, e, depth};
  struct kl_dx *x = kl_hp_expr(&p, 0);
  if (!x || p.i != e) x = kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, e));
  x->start = h->tok[s].s;
  x->end = h->tok[e - 1].e;
  return x;
}

static struct kl_dx *kl_hp_number(struct kl_host *h, size_t i) {
  const char *s = h->t + h->tok[i].s;
  size_t n = h->tok[i].e - h->tok[i].s;
  char buf[64];
  size_t o = 0;
  for (size_t k = 0; k < n && o + 1 < sizeof buf; k++)
    if (s[k] != '\'') buf[o++] = s[k];
  buf[o] = '\0';
  bool hex = o > 1 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X');
  char *end;
  int base = 0;
  const char *digits = buf;
  if (o > 1 && buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B')) base = 2, digits = buf + 2;
  unsigned long long v = strtoull(digits, &end, base);
  while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L') end++;
  if (*end || end == digits || v > INT64_MAX || (!hex && strpbrk(buf, ".eE")))
    return kl_dx_leaf(h->a, kl_ht_text(h, h->a, i, i + 1));
  return kl_dx_int(h->a, (int64_t)v);
}

static bool kl_ht_name_in(const char *name, const char *const *list) {
  const char *last = strrchr(name, ':');
  last = last ? last + 1 : name;
  for (; *list; list++)
    if (!strcmp(last, *list)) return true;
  return false;
}

/* Scalar types whose function-style cast, `size_t(n)`, keeps the value. */
static const char *const kl_ht_casts[] = {
    "size_t", "uint32_t", "int32_t",    "int64_t",   "uint64_t", "int",    "unsigned",
    "uint",   "long",     "NSUInteger", "NSInteger", "float",    "double", "Int",
    "UInt",   "Int32",    "UInt32",     "Int64",     "UInt64",   NULL};

/* A call of a known function in tokens: name [s, open), arguments (open, close). */
static struct kl_dx *kl_hp_call(struct kl_hp *p, const char *name, size_t open, size_t close) {
  struct kl_host *h = p->h;
  static const char *const mins[] = {"min", "MIN", "fmin", "fminf", NULL};
  static const char *const maxs[] = {"max", "MAX", "fmax", "fmaxf", NULL};
  static const char *const ceils[] = {"ceil", "ceilf", NULL};
  static const char *const ceildiv[] = {"ceil_div",     "ceildiv",  "cdiv",
                                        "div_up",       "divup",    "DIV_ROUND_UP",
                                        "div_round_up", "CEIL_DIV", NULL};
  static const char *const roundup[] = {"round_up", "roundup",  "align_up",
                                        "ROUND_UP", "ALIGN_UP", NULL};
  static const struct {
    const char *const *names;
    size_t nargs;
    enum kl_dx_op op;
    bool cast; /* the value of its argument; op is unused */
  } known[] = {{mins, 2, KL_DX_MIN, false},        {maxs, 2, KL_DX_MAX, false},
               {ceils, 1, KL_DX_CEIL, false},      {kl_ht_casts, 1, KL_DX_INT, true},
               {ceildiv, 2, KL_DX_CEILDIV, false}, {roundup, 2, KL_DX_ROUNDUP, false}};
  /* The name first: arguments of an unknown function are not worth their lookups. */
  size_t k = 0;
  while (k < sizeof known / sizeof known[0] && !kl_ht_name_in(name, known[k].names)) k++;
  if (k == sizeof known / sizeof known[0]) return NULL;
  size_t r[4][2];
  if (kl_ht_split(h, open + 1, close, r, 4) != known[k].nargs) return NULL;
  struct kl_dx *a0 = kl_ht_dx(h, r[0][0], r[0][1], p->depth + 1);
  if (known[k].cast) return a0;
  struct kl_dx *a1 = known[k].nargs > 1 ? kl_ht_dx(h, r[1][0], r[1][1], p->depth + 1) : NULL;
  return kl_dx_op(h->a, known[k].op, a0, a1);
}

/* Whether tokens (s, e) of a parenthesis hold only a type name: `(size_t)`, `(unsigned int)`. */
static bool kl_hp_is_type(struct kl_host *h, size_t s, size_t e) {
  if (s >= e) return false;
  for (size_t k = s; k < e; k++) {
    if (h->tok[k].kind == KL_HT_IDENT) continue;
    if (kl_ht_is(h, k, "::") || kl_ht_is(h, k, "*")) continue;
    return false;
  }
  /* A lone name is a type only when nothing gives it a value (`(tg) - 1` is arithmetic). */
  if (e == s + 1) {
    size_t vs, ve;
    char *nm = kl_ht_text(h, h->a, s, e);
    if (kl_ht_name_in(nm, kl_ht_casts) || !strcmp(nm, "uint16_t")) return true;
    return kl_ht_lookup(h, nm, s, false, &vs, &ve) == 0 && nm[0] >= 'A' && nm[0] <= 'Z';
  }
  return true;
}

static bool kl_hp_starts_operand(struct kl_host *h, size_t i, size_t end) {
  if (i >= end) return false;
  enum kl_ht_kind k = h->tok[i].kind;
  return k == KL_HT_IDENT || k == KL_HT_NUM || kl_ht_is(h, i, "(") || kl_ht_is(h, i, "[");
}

static struct kl_dx *kl_hp_unary(struct kl_hp *p) {
  struct kl_host *h = p->h;
  if (p->i >= p->end || p->depth > KL_HT_MAX_DEPTH) return NULL;
  size_t s = p->i;
  if (kl_ht_is(h, s, "-")) {
    p->i++;
    return kl_dx_op(h->a, KL_DX_NEG, kl_hp_unary(p), NULL);
  }
  if (kl_ht_is(h, s, "+")) {
    p->i++;
    return kl_hp_unary(p);
  }
  if (kl_ht_is(h, s, "!") || kl_ht_is(h, s, "~") || kl_ht_is(h, s, "*") || kl_ht_is(h, s, "&")) {
    p->i++;
    struct kl_dx *x = kl_hp_unary(p);
    return x ? kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, p->i)) : NULL;
  }
  struct kl_dx *x = NULL;
  if (kl_ht_is(h, s, "(")) {
    size_t m = kl_ht_match(h, s, p->end);
    if (m >= p->end) return NULL;
    if (kl_hp_is_type(h, s + 1, m) && kl_hp_starts_operand(h, m + 1, p->end)) {
      p->i = m + 1;
      return kl_hp_unary(p); /* a cast keeps the value */
    }
    x = kl_ht_dx(h, s + 1, m, p->depth + 1);
    p->i = m + 1;
  } else if (kl_ht_is(h, s, "[") || kl_ht_is(h, s, "{")) {
    size_t m = kl_ht_match(h, s, p->end);
    if (m >= p->end) return NULL;
    p->i = m + 1;
    x = kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, p->i)); /* an Objective-C message: runtime */
  } else if (h->tok[s].kind == KL_HT_NUM) {
    x = kl_hp_number(h, s);
    p->i++;
  } else if (h->tok[s].kind == KL_HT_STR) {
    x = kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, s + 1));
    p->i++;
  } else if (h->tok[s].kind == KL_HT_IDENT) {
    size_t e = s + 1;
    while (e + 1 < p->end && kl_ht_is(h, e, "::") && h->tok[e + 1].kind == KL_HT_IDENT) e += 2;
    char *name = kl_ht_text(h, h->a, s, e);
    if ((!strcmp(name, "static_cast") || !strcmp(name, "std::static_cast")) &&
        kl_ht_is(h, e, "<")) {
      size_t k = e;
      while (k < p->end && !kl_ht_is(h, k, ">")) k++;
      if (k + 1 < p->end && kl_ht_is(h, k + 1, "(")) {
        size_t m = kl_ht_match(h, k + 1, p->end);
        if (m >= p->end) return NULL;
        p->i = m + 1;
        return kl_ht_dx(h, k + 2, m, p->depth + 1);
      }
    }
    /* std::min<size_t>(a, b): the explicit template argument does not change the value. */
    if (kl_ht_is(h, e, "<") && (!strcmp(name, "std::min") || !strcmp(name, "std::max"))) {
      size_t k = e + 1;
      while (k < p->end && !kl_ht_is(h, k, ">") && !kl_ht_is(h, k, "(") && !kl_ht_is(h, k, ";"))
        k++;
      if (k + 1 < p->end && kl_ht_is(h, k, ">") && kl_ht_is(h, k + 1, "(")) e = k + 1;
    }
    if (kl_ht_is(h, e, "(")) {
      size_t m = kl_ht_match(h, e, p->end);
      if (m >= p->end) return NULL;
      x = kl_hp_call(p, name, e, m);
      p->i = m + 1;
      if (!x) x = kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, p->i));
    } else if (!strcmp(name, "true") || !strcmp(name, "YES")) {
      x = kl_dx_int(h->a, 1);
      p->i = e;
    } else if (!strcmp(name, "false") || !strcmp(name, "NO")) {
      x = kl_dx_int(h->a, 0);
      p->i = e;
    } else {
      p->i = e;
      size_t vs, ve;
      bool member = kl_ht_is(h, e, ".") || kl_ht_is(h, e, "->");
      if (!member && e == s + 1 && kl_ht_lookup(h, name, s, false, &vs, &ve) == 1) {
        x = kl_ht_dx(h, vs, ve, p->depth + 1);
      } else {
        x = kl_dx_leaf(h->a, name);
        if (!member && e == s + 1) x->granule = kl_ht_name_granule(h, name, s, p->depth + 1);
      }
    }
  } else {
    return NULL;
  }
  /* Members, subscripts and calls on them are runtime values. */
  bool post = false;
  while (p->i < p->end) {
    if ((kl_ht_is(h, p->i, ".") || kl_ht_is(h, p->i, "->")) && p->i + 1 < p->end &&
        h->tok[p->i + 1].kind == KL_HT_IDENT) {
      p->i += 2;
      post = true;
    } else if (kl_ht_is(h, p->i, "[") || kl_ht_is(h, p->i, "(")) {
      size_t m = kl_ht_match(h, p->i, p->end);
      if (m >= p->end) return NULL;
      p->i = m + 1;
      post = true;
    } else {
      break;
    }
  }
  if (post) x = kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, p->i));
  return x;
}

static int kl_hp_prec(struct kl_host *h, size_t i, enum kl_dx_op *op, bool *arith) {
  static const struct {
    const char *s;
    int prec;
    enum kl_dx_op op;
    bool arith;
  } ops[] = {{"||", 1, KL_DX_ADD, false}, {"&&", 2, KL_DX_ADD, false}, {"|", 3, KL_DX_ADD, false},
             {"^", 4, KL_DX_ADD, false},  {"&", 5, KL_DX_ADD, false},  {"==", 6, KL_DX_ADD, false},
             {"!=", 6, KL_DX_ADD, false}, {"<", 7, KL_DX_ADD, false},  {">", 7, KL_DX_ADD, false},
             {"<=", 7, KL_DX_ADD, false}, {">=", 7, KL_DX_ADD, false}, {"<<", 8, KL_DX_SHL, true},
             {">>", 8, KL_DX_SHR, true},  {"+", 9, KL_DX_ADD, true},   {"-", 9, KL_DX_SUB, true},
             {"*", 10, KL_DX_MUL, true},  {"/", 10, KL_DX_DIV, true},  {"%", 10, KL_DX_MOD, true}};
  if (i >= h->n || h->tok[i].kind != KL_HT_PUNCT) return -1;
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    if (!kl_ht_is(h, i, ops[k].s)) continue;
    *op = ops[k].op;
    *arith = ops[k].arith;
    return ops[k].prec;
  }
  return -1;
}

static struct kl_dx *kl_hp_expr(struct kl_hp *p, int minprec) {
  struct kl_host *h = p->h;
  size_t s = p->i;
  struct kl_dx *x = kl_hp_unary(p);
  if (!x) return NULL;
  for (;;) {
    if (p->i >= p->end) return x;
    if (kl_ht_is(h, p->i, "?")) {
      /* A conditional size is a runtime choice. */
      p->i = p->end;
      return kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, p->end));
    }
    enum kl_dx_op op;
    bool arith;
    int prec = kl_hp_prec(h, p->i, &op, &arith);
    if (prec < 0 || prec < minprec) return x;
    p->i++;
    struct kl_dx *y = kl_hp_expr(p, prec + 1);
    if (!y) return NULL;
    x = arith ? kl_dx_op(h->a, op, x, y) : kl_dx_leaf(h->a, kl_ht_text(h, h->a, s, p->i));
    if (x && x->end == 0 && p->i > s) {
      x->start = h->tok[s].s;
      x->end = h->tok[p->i - 1].e;
    }
  }
}

/* ---- sizes ---- */

/* Dimensions of an MTLSize written in tokens [s, e): MTL::Size(a, b, c), MTL::Size::Make(...),
 * MTLSizeMake(...), {a, b, c}, a name bound to one of those, or a single value. [*ws, *we) is
 * where it is written (the name's value, for a name). */
static size_t kl_ht_size(struct kl_host *h, size_t s, size_t e, struct kl_dx **dims, int depth,
                         size_t *ws, size_t *we) {
  if (s >= e || depth > KL_HT_MAX_DEPTH) return 0;
  *ws = s;
  *we = e;
  size_t open = s;
  while (open < e && (h->tok[open].kind == KL_HT_IDENT || kl_ht_is(h, open, "::"))) open++;
  bool ctor = open > s && open < e && (kl_ht_is(h, open, "(") || kl_ht_is(h, open, "{"));
  if (ctor) {
    char *name = kl_ht_text(h, h->a, s, open);
    ctor = strstr(name, "Size") != NULL;
  }
  if (!ctor && (kl_ht_is(h, s, "{") || kl_ht_is(h, s, "("))) {
    open = s;
    ctor = true;
  }
  if (ctor && kl_ht_match(h, open, e) == e - 1) {
    size_t r[3][2];
    size_t n = kl_ht_split(h, open + 1, e - 1, r, 3);
    if (n > 1 || !kl_ht_is(h, open, "(") || open > s) {
      for (size_t k = 0; k < n; k++) {
        /* Swift labels its sizes: MTLSize(width: n, height: 1, depth: 1). */
        if (r[k][1] > r[k][0] + 2 && h->tok[r[k][0]].kind == KL_HT_IDENT &&
            kl_ht_is(h, r[k][0] + 1, ":"))
          r[k][0] += 2;
        dims[k] = kl_ht_dx(h, r[k][0], r[k][1], depth + 1);
      }
      return n;
    }
  }
  if (e == s + 1 && h->tok[s].kind == KL_HT_IDENT) {
    size_t vs, ve;
    if (kl_ht_lookup(h, kl_ht_text(h, h->a, s, e), s, false, &vs, &ve) == 1)
      return kl_ht_size(h, vs, ve, dims, depth + 1, ws, we);
  }
  dims[0] = kl_ht_dx(h, s, e, depth + 1);
  return 1;
}

/* ---- kernels ---- */

/* The first argument of a call to get_kernel in tokens [s, e), in [*as, *ae): MLX's
 * `d.get_kernel(name, lib)` also names a library, which is no kernel. */
static bool kl_ht_get_kernel_arg(struct kl_host *h, size_t s, size_t e, size_t *as, size_t *ae) {
  for (size_t k = s; k + 1 < e; k++) {
    if (!kl_ht_ident_is(h, k, "get_kernel") || !kl_ht_is(h, k + 1, "(")) continue;
    size_t m = kl_ht_match(h, k + 1, e);
    size_t r[1][2];
    if (m >= e || kl_ht_split(h, k + 2, m, r, 1) != 1) return false;
    *as = r[0][0];
    *ae = r[0][1];
    return true;
  }
  return false;
}

/* The first token before `at` where name is appended to (`name += ...`, `name << ...`), or `at`:
 * a name built in steps starts from the value it had before the first step. */
static size_t kl_ht_first_append(struct kl_host *h, const char *name, size_t at) {
  size_t first = at;
  for (size_t k = at; k-- > 0;) {
    if (h->tok[k].pp || !kl_ht_ident_is(h, k, name)) continue;
    if (k > 0 && (kl_ht_is(h, k - 1, ".") || kl_ht_is(h, k - 1, "->"))) continue;
    if (kl_ht_is(h, k + 1, "+=") || kl_ht_is(h, k + 1, "<<")) first = k;
  }
  return first;
}

/* The kernel name a pipeline expression leads to: a string in it, or in what the names in it
 * were assigned (pso <- [device newComputePipelineStateWithFunction:fn] <- fn <- @"name").
 * *prefix is set when the string only starts the name (`"axpby_" + type_to_name(out)`, or a
 * name appended to after it was given the string). */
static const char *kl_ht_kernel(struct kl_host *h, size_t s, size_t e, int depth, bool *prefix) {
  if (depth > 4) return NULL;
  size_t as, ae;
  if (kl_ht_get_kernel_arg(h, s, e, &as, &ae)) {
    s = as;
    e = ae;
  }
  for (size_t k = s; k < e; k++) {
    if (h->tok[k].kind != KL_HT_STR) continue;
    const char *q = h->t + h->tok[k].s;
    size_t n = h->tok[k].e - h->tok[k].s;
    if (*q == '@') q++, n--;
    if (n < 2 || q[0] != '"' || q[n - 1] != '"') continue;
    /* `std::string("axpby_") + ...` continues the string too. */
    size_t after = k + 1;
    while (after < e && kl_ht_is(h, after, ")")) after++;
    if (after < e && (kl_ht_is(h, after, "+") || kl_ht_is(h, after, "<<"))) *prefix = true;
    return kl_arena_strndup(h->oa, q + 1, n - 2);
  }
  for (size_t k = s; k < e; k++) {
    if (h->tok[k].kind != KL_HT_IDENT) continue;
    /* Selector parts and members name methods, not values. */
    if (kl_ht_is(h, k + 1, ":") || kl_ht_is(h, k + 1, "(")) continue;
    if (k > s && (kl_ht_is(h, k - 1, ".") || kl_ht_is(h, k - 1, "->")) &&
        !(k > s + 1 && (kl_ht_ident_is(h, k - 2, "self") || kl_ht_ident_is(h, k - 2, "this"))))
      continue;
    char *name = kl_ht_text(h, h->a, k, k + 1);
    size_t vs, ve;
    size_t first = kl_ht_first_append(h, name, k);
    bool built = first < k;
    if (kl_ht_lookup(h, name, first, false, &vs, &ve) != 1 &&
        (built || kl_ht_lookup(h, name, h->n, true, &vs, &ve) != 1)) {
      /* A stream declared empty starts with its first insertion: `kname << "axpby_";`. */
      if (!built || !kl_ht_is(h, first + 1, "<<")) continue;
      vs = first + 2;
      for (ve = vs; ve < h->n && !kl_ht_is(h, ve, ";");) ve++;
    }
    const char *r = kl_ht_kernel(h, vs, ve, depth + 1, prefix);
    if (r && built) *prefix = true;
    if (r) return r;
  }
  return NULL;
}

/* The one function name the file makes pipelines from, when there is exactly one. */
static const char *kl_ht_only_function(struct kl_host *h) {
  static const char *const makers[] = {"newFunctionWithName",
                                       "newFunction",
                                       "functionWithName",
                                       "get_kernel",
                                       "newFunctionWithDescriptor",
                                       "makeFunction",
                                       NULL};
  const char *only = NULL;
  for (size_t k = 0; k < h->n; k++) {
    if (!kl_ht_ident_in(h, k, makers)) continue;
    size_t end = k + 8, as, ae;
    if (kl_ht_get_kernel_arg(h, k, h->n, &as, &ae)) end = ae;
    for (size_t j = k + 1; j < h->n && j < end; j++) {
      if (h->tok[j].kind != KL_HT_STR) continue;
      bool pre = false;
      const char *nm = kl_ht_kernel(h, j, end < h->n ? end : h->n, 0, &pre);
      if (pre) return NULL;
      if (only && nm && strcmp(only, nm)) return NULL;
      if (nm) only = nm;
      break;
    }
  }
  return only;
}

/* The pipeline the encoder has at token i: the argument of the closest setComputePipelineState
 * before it in the blocks that enclose it (one in an earlier closed block, such as another
 * function or one branch of an if, may not be the one in effect). */
static const char *kl_ht_pipeline(struct kl_host *h, size_t i, bool *prefix) {
  int skip = 0;
  for (size_t k = i; k-- > 0;) {
    if (kl_ht_is(h, k, "}")) skip++;
    if (kl_ht_is(h, k, "{") && skip > 0) skip--;
    if (skip > 0 || (!kl_ht_ident_is(h, k, "setComputePipelineState") &&
                     !kl_ht_ident_is(h, k, "set_compute_pipeline_state")))
      continue;
    size_t s = k + 2, e;
    if (kl_ht_is(h, k + 1, "(")) {
      e = kl_ht_match(h, k + 1, h->n);
    } else if (kl_ht_is(h, k + 1, ":")) {
      e = s;
      while (e < h->n && !kl_ht_is(h, e, "]") && !kl_ht_is(h, e, ";")) {
        if (kl_ht_is(h, e, "[") || kl_ht_is(h, e, "(")) e = kl_ht_match(h, e, h->n);
        if (e < h->n) e++;
      }
    } else {
      continue;
    }
    return e <= h->n ? kl_ht_kernel(h, s, e, 0, prefix) : NULL;
  }
  return NULL;
}

/* ---- bindings ---- */

/* Whether token k starts a call that binds an encoder's buffer index: metal-cpp's setBytes or
 * setBuffer (the index last), Objective-C's [enc setBytes:p length:n atIndex:i] and the like,
 * MLX's set_bytes (index last) and set_input_array / set_output_array (index second). [*vs, *ve)
 * is the value bound (its first argument), *index the index (-1 when it is not a constant: it
 * may be any), *end the call's last token. */
static bool kl_ht_binding(struct kl_host *h, size_t k, size_t *vs, size_t *ve, int64_t *index,
                          size_t *end) {
  static const char *const names[] = {"setBytes",        "setBuffer",        "setBuffers",
                                      "setBufferOffset", "set_bytes",        "set_buffer",
                                      "set_input_array", "set_output_array", NULL};
  if (h->tok[k].pp || !kl_ht_ident_in(h, k, names)) return false;
  if (k > 0 && kl_ht_is(h, k - 1, "::")) return false; /* a declaration, not a call */
  *index = -1;
  size_t is = 0, ie = 0;
  if (kl_ht_is(h, k + 1, "(")) {
    size_t m = kl_ht_match(h, k + 1, h->n), r[4][2];
    if (m >= h->n) return false;
    size_t n = kl_ht_split(h, k + 2, m, r, 4);
    *end = m;
    *vs = *ve = k;
    if (n < 2) return true;
    *vs = r[0][0];
    *ve = r[0][1];
    size_t at = kl_ht_ident_is(h, k, "set_input_array") || kl_ht_ident_is(h, k, "set_output_array")
                    ? 1
                    : n - 1;
    is = r[at][0];
    ie = r[at][1];
  } else if (kl_ht_is(h, k + 1, ":")) {
    /* Selector parts `name:` split the message; the value runs to the next one. */
    size_t e = k + 2;
    *vs = e;
    *ve = 0;
    while (e < h->n && !kl_ht_is(h, e, "]") && !kl_ht_is(h, e, ";")) {
      if (h->tok[e].kind == KL_HT_IDENT && kl_ht_is(h, e + 1, ":")) {
        if (!*ve) *ve = e;
        if (kl_ht_ident_is(h, e, "atIndex")) is = e + 2;
        if (is && is < e) ie = e;
        e += 2;
        continue;
      }
      if (kl_ht_is(h, e, "[") || kl_ht_is(h, e, "(")) e = kl_ht_match(h, e, h->n);
      if (e < h->n) e++;
    }
    if (!*ve) *ve = e;
    if (is && !ie) ie = e;
    *end = e < h->n ? e : h->n - 1;
  } else {
    return false;
  }
  if (is && ie > is) {
    int64_t v;
    if (kl_dx_value(kl_ht_dx(h, is, ie, 0), &v) && v >= 0) *index = v;
  }
  return true;
}

/* Whether name is written in tokens [s, e): assigned, stepped, or its address taken outside
 * the binding at token skip (which copies it). */
static bool kl_ht_written(struct kl_host *h, const char *name, size_t s, size_t e, size_t skip) {
  static const char *const ops[] = {"=",  "+=", "-=",  "*=",  "/=", "%=", "<<=",
                                    ">>=", "&=", "|=", "^=", "++", "--", NULL};
  for (size_t k = s; k < e && k < h->n; k++) {
    if (h->tok[k].pp || !kl_ht_ident_is(h, k, name)) continue;
    if (k > 0 && (kl_ht_is(h, k - 1, ".") || kl_ht_is(h, k - 1, "->"))) continue;
    for (const char *const *o = ops; *o; o++)
      if (kl_ht_is(h, k + 1, *o)) return true;
    if (k > 0 && (kl_ht_is(h, k - 1, "++") || kl_ht_is(h, k - 1, "--"))) return true;
    if (k > 0 && kl_ht_is(h, k - 1, "&") && k != skip) return true;
    /* Handed alone to a call made for its effect (`round_rows(nrows);`): a C++ reference
     * parameter may write it. */
    if (k > 1 && (kl_ht_is(h, k - 1, "(") || kl_ht_is(h, k - 1, ",")) &&
        (kl_ht_is(h, k + 1, ")") || kl_ht_is(h, k + 1, ","))) {
      size_t o = k - 1;
      for (int depth = 0; o > s; o--) {
        if (kl_ht_is(h, o, ")")) depth++;
        if (kl_ht_is(h, o, "(") && depth-- == 0) break;
      }
      size_t close = kl_ht_match(h, o, e);
      bool call = o > s && h->tok[o - 1].kind == KL_HT_IDENT && kl_ht_is(h, o, "(");
      bool stmt = o > 1 && (kl_ht_is(h, o - 2, ";") || kl_ht_is(h, o - 2, "{") ||
                            kl_ht_is(h, o - 2, "}"));
      if (call && stmt && kl_ht_is(h, close + 1, ";")) return true;
    }
  }
  return false;
}

/* The receiver of method token k (`enc` of `[enc setBytes:...]`, `enc->setBytes(...)`,
 * `enc.set_bytes(...)`): its identifier token, or SIZE_MAX. */
static size_t kl_ht_receiver(const struct kl_host *h, size_t k) {
  if (k >= 2 && (kl_ht_is(h, k - 1, "->") || kl_ht_is(h, k - 1, ".")) &&
      h->tok[k - 2].kind == KL_HT_IDENT)
    return k - 2;
  if (k >= 2 && kl_ht_is(h, k - 2, "[") && h->tok[k - 1].kind == KL_HT_IDENT) return k - 1;
  return SIZE_MAX;
}

/* Whether method tokens a and b are sent to one receiver, named alike. */
static bool kl_ht_same_receiver(const struct kl_host *h, size_t a, size_t b) {
  size_t ra = kl_ht_receiver(h, a), rb = kl_ht_receiver(h, b);
  if (ra == SIZE_MAX || rb == SIZE_MAX) return false;
  const struct kl_ht_tok *x = &h->tok[ra], *y = &h->tok[rb];
  return x->e - x->s == y->e - y->s && !memcmp(h->t + x->s, h->t + y->s, x->e - x->s);
}

/* The buffer index at which the encoder holds name's value when the dispatch at token `at`
 * runs: the closest setBytes of `&name` (MLX: set_bytes(name, i)) in the blocks enclosing the
 * call, with a constant index no later binding (in any block) may replace, and name never
 * written in the function; -1 when there is none. */
static int kl_ht_bound_index(struct kl_host *h, const char *name, size_t at) {
  int skip = 0;
  size_t top = h->n; /* the outermost block enclosing the call: its function's body */
  for (size_t k = at; k-- > 0;) {
    if (kl_ht_is(h, k, "}")) skip++;
    if (kl_ht_is(h, k, "{")) {
      if (skip > 0)
        skip--;
      else
        top = k;
    }
  }
  if (top >= h->n) return -1; /* a call outside any function body is none we follow */
  skip = 0;
  for (size_t k = at; k-- > top;) {
    if (kl_ht_is(h, k, "}")) skip++;
    if (kl_ht_is(h, k, "{") && skip > 0) skip--;
    size_t vs, ve, end;
    int64_t idx;
    if (skip > 0 || !kl_ht_binding(h, k, &vs, &ve, &idx, &end)) continue;
    bool bytes = kl_ht_ident_is(h, k, "setBytes") || kl_ht_ident_is(h, k, "set_bytes");
    bool amp = ve == vs + 2 && kl_ht_is(h, vs, "&") && kl_ht_ident_is(h, vs + 1, name);
    bool plain =
        ve == vs + 1 && kl_ht_ident_is(h, vs, name) && kl_ht_ident_is(h, k, "set_bytes");
    if (!bytes || !(amp || plain)) continue;
    /* Another encoder's binding says nothing of this one's. */
    if (!kl_ht_same_receiver(h, k, at)) continue;
    if (idx < 0 || idx > 30) return -1;
    for (size_t j = end + 1; j < at; j++) {
      size_t s2, e2, end2;
      int64_t i2;
      if (kl_ht_binding(h, j, &s2, &e2, &i2, &end2) && (i2 < 0 || i2 == idx)) return -1;
    }
    size_t last = kl_ht_match(h, top, h->n);
    if (kl_ht_written(h, name, top, last, amp ? vs + 1 : h->n)) return -1;
    return (int)idx;
  }
  return -1;
}

static void kl_ht_dispatch(struct kl_host *h, struct kl_dispatch_list *out, size_t at, bool groups,
                           size_t a0s, size_t a0e, size_t a1s, size_t a1e, const char *only) {
  struct kl_dispatch *d = kl_dispatch_add(out);
  d->kernel = kl_ht_pipeline(h, at, &d->kernel_prefix);
  if (!d->kernel) d->kernel = only;
  d->path = kl_arena_strdup(out->arena, h->src->path);
  d->local = true;
  d->call = kl_ht_span(h, at, at + 1);
  struct kl_dx *dims[3];
  size_t ws, we;
  size_t n = kl_ht_size(h, a0s, a0e, dims, 0, &ws, &we);
  kl_dispatch_set_grid(d, h->oa, h->src, dims, n, groups, h->tok[a0s].s, h->tok[a0e - 1].e);
  /* A dimension counted from a value the kernel also receives bounds its coordinate by it. */
  for (size_t k = 0; k < n && k < 3; k++) {
    const char *nm;
    int64_t add, div;
    if (!kl_dx_count(dims[k], &nm, &add, &div)) continue;
    int idx = kl_ht_bound_index(h, nm, at);
    if (idx >= 0) d->grid_count[k] = (struct kl_dispatch_count){true, idx, add, div};
  }
  if (a1s >= a1e) return;
  struct kl_dx *grid[3] = {NULL, NULL, NULL};
  size_t ngrid = n;
  for (size_t k = 0; k < n; k++) grid[k] = dims[k];
  n = kl_ht_size(h, a1s, a1e, dims, 0, &ws, &we);
  kl_dispatch_set_tg(d, dims, n, kl_ht_span(h, ws, we), kl_ht_quote(h, ws, we));
  if (d->tg_known) return;
  /* A swapped (group, grid) pair: the threadgroup is what the grid argument clamps (`min(n,
   * max)` against `n`), rounds up to whole groups of the grid argument's size (`ceil_div(n,
   * 256) * 256` against 256), or counts those groups (`(n + 255) / 256` against 256). Any
   * alone can be a real threadgroup (align_up(ncols, 32)). */
  for (size_t k = 0; k < n && k < ngrid && !d->tg_grid; k++) {
    const struct kl_dx *g = grid[k];
    int64_t v;
    if (!g || !dims[k]) continue;
    if (g->op == KL_DX_MIN && !g->known &&
        (kl_dx_equal(g->a, dims[k]) || kl_dx_equal(g->b, dims[k])))
      d->tg_grid = true;
    if (kl_dx_rounded(dims[k]) && kl_dx_value(g, &v) && v > 1 && kl_dx_multiple(dims[k]) == v)
      d->tg_grid = true;
    /* Or it counts the groups of the grid argument's size: `dispatch_threadgroups(group_dims,
     * grid_dims)` with (1024) and ((n + 1023) / 1024), 1024 groups of ceil(n / 1024) threads. */
    const struct kl_dx *div;
    int64_t dv;
    if (kl_dx_is_ceil_div(dims[k], &div) && kl_dx_value(div, &dv) && kl_dx_value(g, &v) && v > 1 &&
        dv == v)
      d->tg_grid = true;
  }
}

/* Whether text calls dispatchThreads/dispatchThreadgroups: the name followed by `(` (metal-cpp)
 * or `:` (Objective-C), or MLX's CommandEncoder dispatch_threads/dispatch_threadgroups. */
static bool kl_ht_calls_dispatch(const char *text) {
  static const char *const names[] = {"dispatchThreads", "dispatchThreadgroups", "dispatch_threads",
                                      "dispatch_threadgroups"};
  for (size_t k = 0; k < 4; k++) {
    size_t n = strlen(names[k]);
    for (const char *q = strstr(text, names[k]); q; q = strstr(q + 1, names[k])) {
      /* ggml_metal_encoder_dispatch_threadgroups( is another function. */
      if (q > text && kl_ht_idchar(q[-1])) continue;
      const char *r = q + n;
      while (*r == ' ' || *r == '\t') r++;
      if (*r == '(' || *r == ':') return true;
    }
  }
  return false;
}

bool kl_host_is_header(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash + 1 : path, '.');
  return dot && (!strcmp(dot, ".h") || !strcmp(dot, ".hpp"));
}

bool kl_host_is_host(const struct kl_source *src) {
  if (src->lang == KL_LANG_HOST) return true;
  if (!kl_host_is_header(src->path)) return false;
  /* MSL makes no dispatch calls, and host code declares no kernels: a header that dispatches
   * and declares none is host code. */
  return kl_ht_calls_dispatch(src->text) && !strstr(src->text, "[[kernel]]") &&
         !strstr(src->text, "kernel void");
}

void kl_host_dispatches(struct kl_arena *a, const struct kl_source *src,
                        struct kl_dispatch_list *out) {
  if (!strstr(src->text, "dispatchThread") && !strstr(src->text, "dispatch_thread")) return;
  struct kl_host h;
  memset(&h, 0, sizeof h);
  h.a = a;
  h.oa = out->arena;
  h.src = src;
  h.t = src->text;
  h.len = src->len;
  h.budget = KL_HT_BUDGET;
  h.granule_budget = KL_HT_GRANULE_BUDGET;
  size_t plen = strlen(src->path);
  h.swift = plen > 6 && !strcmp(src->path + plen - 6, ".swift");
  kl_ht_lex(&h);
  const char *only = NULL;
  bool only_done = false;
  for (size_t i = 0; i < h.n; i++) {
    if (h.tok[i].pp || h.tok[i].kind != KL_HT_IDENT) continue;
    /* MLX's CommandEncoder wrappers take (grid, group) in the same order as metal-cpp. */
    bool threads = kl_ht_is(&h, i, "dispatchThreads") || kl_ht_is(&h, i, "dispatch_threads");
    bool groups =
        kl_ht_is(&h, i, "dispatchThreadgroups") || kl_ht_is(&h, i, "dispatch_threadgroups");
    if (!threads && !groups) continue;
    size_t a0s, a0e, a1s = 0, a1e = 0;
    if (kl_ht_is(&h, i + 1, "(")) {
      size_t m = kl_ht_match(&h, i + 1, h.n);
      if (m >= h.n) continue;
      size_t r[2][2];
      size_t n = kl_ht_split(&h, i + 2, m, r, 2);
      if (n == 0) continue;
      a0s = r[0][0];
      a0e = r[0][1];
      if (n > 1) {
        a1s = r[1][0];
        a1e = r[1][1];
        /* Swift-style labels are not ours, but `threadsPerThreadgroup: x` reads the same. */
        if (a1e > a1s + 2 && kl_ht_is(&h, a1s + 1, ":")) a1s += 2;
      }
    } else if (kl_ht_is(&h, i + 1, ":")) {
      /* [enc dispatchThreads:grid threadsPerThreadgroup:tg] */
      size_t k = i + 2;
      a0s = k;
      while (k < h.n && !kl_ht_is(&h, k, "]") && !kl_ht_is(&h, k, ";") &&
             !(kl_ht_ident_is(&h, k, "threadsPerThreadgroup") && kl_ht_is(&h, k + 1, ":"))) {
        if (kl_ht_is(&h, k, "[") || kl_ht_is(&h, k, "(")) k = kl_ht_match(&h, k, h.n);
        if (k < h.n) k++;
      }
      a0e = k;
      if (kl_ht_ident_is(&h, k, "threadsPerThreadgroup")) {
        a1s = k + 2;
        k = a1s;
        while (k < h.n && !kl_ht_is(&h, k, "]") && !kl_ht_is(&h, k, ";")) {
          if (kl_ht_is(&h, k, "[") || kl_ht_is(&h, k, "(")) k = kl_ht_match(&h, k, h.n);
          if (k < h.n) k++;
        }
        a1e = k;
      }
      if (a0e <= a0s || a0e > h.n || a1e > h.n) continue;
    } else {
      continue;
    }
    if (!only_done) {
      only = kl_ht_only_function(&h);
      only_done = true;
    }
    kl_ht_dispatch(&h, out, i, groups, a0s, a0e, a1s, a1e, only);
  }
}
