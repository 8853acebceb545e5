#include "grammar/consteval.h"

#include <stdlib.h>
#include <string.h>

/* Names resolving through names, and parentheses: deeper is a cycle or not worth following. */
#define KL_CONST_MAX_DEPTH 48
/* Names expanded in one evaluation: far more than any real size or #if needs. */
#define KL_CONST_MAX_EXPANSIONS 4096

static int64_t kl_const_floordiv(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) q--;
  return q;
}

bool kl_consteval_apply(enum kl_cop op, int64_t a, int64_t b, int64_t *out) {
  int64_t r = 0;
  bool divides = op == KL_COP_DIV || op == KL_COP_FLOORDIV || op == KL_COP_EXACTDIV ||
                 op == KL_COP_MOD || op == KL_COP_FLOORMOD;
  if (divides && (b == 0 || (a == INT64_MIN && b == -1))) return false;
  switch (op) {
  case KL_COP_ADD:
    if (__builtin_add_overflow(a, b, &r)) return false;
    break;
  case KL_COP_SUB:
    if (__builtin_sub_overflow(a, b, &r)) return false;
    break;
  case KL_COP_MUL:
    if (__builtin_mul_overflow(a, b, &r)) return false;
    break;
  case KL_COP_DIV:
    r = a / b;
    break;
  case KL_COP_FLOORDIV:
    r = kl_const_floordiv(a, b);
    break;
  case KL_COP_EXACTDIV:
    if (a % b) return false;
    r = a / b;
    break;
  case KL_COP_MOD:
    r = a % b;
    break;
  case KL_COP_FLOORMOD:
    r = a - kl_const_floordiv(a, b) * b;
    break;
  case KL_COP_SHL:
    if (b < 0 || b > 62 || a < 0 || a > (INT64_MAX >> b)) return false;
    r = a << b;
    break;
  case KL_COP_SHR:
    if (b < 0 || b > 63) return false;
    r = a >> b;
    break;
  case KL_COP_BITAND:
    r = a & b;
    break;
  case KL_COP_BITOR:
    r = a | b;
    break;
  case KL_COP_BITXOR:
    r = a ^ b;
    break;
  case KL_COP_LT:
    r = a < b;
    break;
  case KL_COP_LE:
    r = a <= b;
    break;
  case KL_COP_GT:
    r = a > b;
    break;
  case KL_COP_GE:
    r = a >= b;
    break;
  case KL_COP_EQ:
    r = a == b;
    break;
  case KL_COP_NE:
    r = a != b;
    break;
  case KL_COP_AND:
    r = a && b;
    break;
  case KL_COP_OR:
    r = a || b;
    break;
  case KL_COP_MIN:
    r = a < b ? a : b;
    break;
  case KL_COP_MAX:
    r = a > b ? a : b;
    break;
  case KL_COP_CEILDIV:
    if (b <= 0 || a < 0 || a > INT64_MAX - b) return false;
    r = (a + b - 1) / b;
    break;
  case KL_COP_ROUNDUP:
    if (b <= 0 || a < 0 || a > INT64_MAX - b) return false;
    if (__builtin_mul_overflow((a + b - 1) / b, b, &r)) return false;
    break;
  case KL_COP_NEG:
    if (a == INT64_MIN) return false;
    r = -a;
    break;
  case KL_COP_NOT:
    r = !a;
    break;
  case KL_COP_BITNOT:
    r = ~a;
    break;
  }
  *out = r;
  return true;
}

/* ---- The expression parser ------------------------------------------------------------------ */

enum kl_ctok { KL_CT_END, KL_CT_IDENT, KL_CT_NUM, KL_CT_PUNCT, KL_CT_BAD };

struct kl_cval {
  int64_t v;
  bool known;
  bool uns; /* of an unsigned type: a negative value would have wrapped, so it is unknown */
};

/* One evaluation, across the texts its names stand for: the names being expanded (a name inside
 * its own expansion is unknown, as cpp leaves it unexpanded), and a budget of expansions, so
 * `#define X (X+X+X)` chains cannot take exponential time. */
struct kl_crun {
  const char *active[KL_CONST_MAX_DEPTH + 1];
  size_t active_n[KL_CONST_MAX_DEPTH + 1];
  int nactive;
  unsigned budget;
};

struct kl_cparse {
  const struct kl_consteval_env *env;
  struct kl_crun *run;
  const char *p, *end;
  enum kl_ctok tok;
  const char *t; /* the current token's text */
  size_t tn;
  int64_t num;
  bool num_uns; /* the number has a `u` suffix */
  bool err;     /* malformed: the whole result is unknown */
  int depth;
};

static bool kl_cident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void kl_cskip(struct kl_cparse *c) {
  while (c->p < c->end) {
    char ch = *c->p;
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\\' || ch == '\f') {
      c->p++;
    } else if (ch == '/' && c->p + 1 < c->end && c->p[1] == '/') {
      while (c->p < c->end && *c->p != '\n') c->p++;
    } else if (ch == '/' && c->p + 1 < c->end && c->p[1] == '*') {
      c->p += 2;
      while (c->p + 1 < c->end && !(c->p[0] == '*' && c->p[1] == '/')) c->p++;
      c->p = c->p + 1 < c->end ? c->p + 2 : c->end;
    } else {
      return;
    }
  }
}

static void kl_cnext(struct kl_cparse *c) {
  kl_cskip(c);
  c->t = c->p;
  if (c->p >= c->end) {
    c->tok = KL_CT_END;
    c->tn = 0;
    return;
  }
  char ch = *c->p;
  if (ch >= '0' && ch <= '9') {
    /* strtoull needs a terminated string: copy the literal (literals are short). */
    const char *s = c->p;
    while (c->p < c->end && (kl_cident_char(*c->p) || *c->p == '.' || *c->p == '\'')) c->p++;
    char buf[64];
    size_t n = (size_t)(c->p - s), o = 0;
    c->tok = KL_CT_BAD;
    if (n < sizeof buf) {
      for (size_t i = 0; i < n; i++)
        if (s[i] != '\'') buf[o++] = s[i]; /* C++14 digit separators */
      buf[o] = '\0';
      char *e;
      unsigned long long u = strtoull(buf, &e, 0);
      c->num_uns = false;
      for (; *e == 'u' || *e == 'U' || *e == 'l' || *e == 'L'; e++)
        if (*e == 'u' || *e == 'U') c->num_uns = true;
      if (!*e && u <= INT64_MAX) { /* floats, binary literals and huge values stay unknown */
        c->tok = KL_CT_NUM;
        c->num = (int64_t)u;
      }
    }
  } else if (kl_cident_char(ch)) {
    while (c->p < c->end && kl_cident_char(*c->p)) c->p++;
    c->tok = KL_CT_IDENT;
  } else if (ch == '\'' && c->p + 2 < c->end && c->p[1] != '\\' && c->p[2] == '\'') {
    c->num = (unsigned char)c->p[1];
    c->p += 3;
    c->tok = KL_CT_NUM;
  } else {
    static const char *const ops[] = {"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "::"};
    c->tok = KL_CT_PUNCT;
    c->p++;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
      if (c->end - c->t >= 2 && !memcmp(c->t, ops[i], 2)) c->p = c->t + 2;
  }
  c->tn = (size_t)(c->p - c->t);
}

static bool kl_cis(const struct kl_cparse *c, const char *s) {
  size_t n = strlen(s);
  return c->tok != KL_CT_END && c->tn == n && !memcmp(c->t, s, n);
}

static bool kl_caccept(struct kl_cparse *c, const char *s) {
  if (!kl_cis(c, s)) return false;
  kl_cnext(c);
  return true;
}

static struct kl_cval kl_cunknown(void) {
  return (struct kl_cval){0, false, false};
}

static struct kl_cval kl_cknown(int64_t v) {
  return (struct kl_cval){v, true, false};
}

static struct kl_cval kl_cexpr(struct kl_cparse *c);
static struct kl_cval kl_cternary(struct kl_cparse *c);
static struct kl_cval kl_cunary(struct kl_cparse *c);

static bool kl_ctext(const struct kl_consteval_env *env, struct kl_crun *run, const char *text,
                     size_t len, int depth, struct kl_cval *out);

/* Integer types a cast may name, with the range a value keeps through the cast. */
static const struct {
  const char *name;
  int64_t min, max;
  bool uns;
} kl_ctypes[] = {
    {"bool", 0, 1, false},
    {"char", INT8_MIN, INT8_MAX, false},
    {"uchar", 0, UINT8_MAX, true},
    {"short", INT16_MIN, INT16_MAX, false},
    {"ushort", 0, UINT16_MAX, true},
    {"int", INT32_MIN, INT32_MAX, false},
    {"uint", 0, UINT32_MAX, true},
    {"unsigned", 0, UINT32_MAX, true},
    {"long", INT64_MIN, INT64_MAX, false},
    {"ulong", 0, INT64_MAX, true},
    {"size_t", 0, INT64_MAX, true},
    {"int16_t", INT16_MIN, INT16_MAX, false},
    {"uint16_t", 0, UINT16_MAX, true},
    {"int32_t", INT32_MIN, INT32_MAX, false},
    {"uint32_t", 0, UINT32_MAX, true},
    {"int64_t", INT64_MIN, INT64_MAX, false},
    {"uint64_t", 0, INT64_MAX, true},
};

static int kl_ctype(const char *s, size_t n) {
  for (size_t i = 0; i < sizeof kl_ctypes / sizeof kl_ctypes[0]; i++)
    if (strlen(kl_ctypes[i].name) == n && !memcmp(kl_ctypes[i].name, s, n)) return (int)i;
  return -1;
}

/* A value converted to type t: bool normalises, and a value the type cannot hold (a wrap or a
 * truncation) is unknown rather than modelled. */
static struct kl_cval kl_ccast(int t, struct kl_cval v) {
  if (!v.known) return kl_cunknown();
  if (!strcmp(kl_ctypes[t].name, "bool")) return kl_cknown(v.v != 0);
  if (v.v < kl_ctypes[t].min || v.v > kl_ctypes[t].max) return kl_cunknown();
  v.uns = kl_ctypes[t].uns;
  return v;
}

static struct kl_cval kl_cname(struct kl_cparse *c, const char *s, size_t n) {
  const struct kl_consteval_env *env = c->env;
  if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5)))
    return kl_cknown(n == 4);
  const char *text = env && env->lookup ? env->lookup(env->ctx, s, n) : NULL;
  if (text) {
    struct kl_crun *run = c->run;
    for (int i = 0; i < run->nactive; i++)
      if (run->active_n[i] == n && !memcmp(run->active[i], s, n)) return kl_cunknown();
    if (run->budget == 0 || run->nactive > KL_CONST_MAX_DEPTH) {
      c->err = true;
      return kl_cunknown();
    }
    run->budget--;
    run->active[run->nactive] = s;
    run->active_n[run->nactive++] = n;
    struct kl_cval v;
    bool ok = kl_ctext(env, run, text, strlen(text), c->depth + 1, &v);
    run->nactive--;
    return ok ? v : kl_cunknown();
  }
  /* In #if, a name no one defines is 0; one the build may define is unknown. */
  if (env && env->preprocessor && env->defined && env->defined(env->ctx, s, n) == 0)
    return kl_cknown(0);
  return kl_cunknown();
}

static struct kl_cval kl_cprimary(struct kl_cparse *c) {
  if (c->tok == KL_CT_NUM) {
    struct kl_cval v = kl_cknown(c->num);
    v.uns = c->num_uns;
    kl_cnext(c);
    return v;
  }
  if (kl_caccept(c, "(")) {
    /* `(int)x` is a cast; `(x)` a parenthesised expression. */
    int t = c->tok == KL_CT_IDENT ? kl_ctype(c->t, c->tn) : -1;
    if (t >= 0) {
      struct kl_cparse save = *c;
      kl_cnext(c);
      if (kl_caccept(c, ")")) return kl_ccast(t, kl_cunary(c));
      *c = save;
    }
    struct kl_cval v = kl_cexpr(c);
    if (!kl_caccept(c, ")")) c->err = true;
    return v;
  }
  if (c->tok != KL_CT_IDENT) {
    c->err = true;
    return kl_cunknown();
  }
  const char *s = c->t;
  size_t n = c->tn;
  kl_cnext(c);
  if (c->env && c->env->preprocessor && n == 7 && !memcmp(s, "defined", 7)) {
    bool paren = kl_caccept(c, "(");
    if (c->tok != KL_CT_IDENT) {
      c->err = true;
      return kl_cunknown();
    }
    int d = c->env->defined ? c->env->defined(c->env->ctx, c->t, c->tn) : -1;
    kl_cnext(c);
    if (paren && !kl_caccept(c, ")")) c->err = true;
    return d < 0 ? kl_cunknown() : kl_cknown(d);
  }
  if (n == 6 && !memcmp(s, "sizeof", 6) && kl_caccept(c, "(")) {
    const char *ts = c->t;
    while (c->tok == KL_CT_IDENT || kl_cis(c, "::")) kl_cnext(c);
    size_t tn = (size_t)(c->t - ts);
    while (tn && (ts[tn - 1] == ' ' || ts[tn - 1] == '\t')) tn--;
    if (!kl_caccept(c, ")")) {
      c->err = true;
      return kl_cunknown();
    }
    unsigned sz = c->env && c->env->size_of ? c->env->size_of(c->env->ctx, ts, tn) : 0;
    return sz ? kl_cknown(sz) : kl_cunknown();
  }
  if (kl_cis(c, "::")) { /* metal::min, std::max: the last name is the one that counts */
    kl_cnext(c);
    return kl_cprimary(c);
  }
  if (kl_caccept(c, "(")) {
    /* `uint(x)`, `min(a, b)`, `max(a, b)`; any other call is unknown. */
    struct kl_cval a = kl_cexpr(c), b = kl_cknown(0);
    bool two = kl_caccept(c, ",");
    if (two) b = kl_cexpr(c);
    if (!kl_caccept(c, ")")) c->err = true;
    int t = two ? -1 : kl_ctype(s, n);
    bool mm = two && n == 3 && (!memcmp(s, "min", 3) || !memcmp(s, "max", 3));
    if (t >= 0) return kl_ccast(t, a);
    if (!mm || !a.known || !b.known || a.uns != b.uns) return kl_cunknown();
    return kl_cknown(s[1] == 'i' ? (a.v < b.v ? a.v : b.v) : (a.v > b.v ? a.v : b.v));
  }
  return kl_cname(c, s, n);
}

static struct kl_cval kl_cunary(struct kl_cparse *c) {
  if (++c->depth > KL_CONST_MAX_DEPTH) {
    c->err = true;
    c->depth--;
    return kl_cunknown();
  }
  struct kl_cval v;
  enum kl_cop op = KL_COP_NEG;
  bool un = true;
  if (kl_caccept(c, "-"))
    op = KL_COP_NEG;
  else if (kl_caccept(c, "!"))
    op = KL_COP_NOT;
  else if (kl_caccept(c, "~"))
    op = KL_COP_BITNOT;
  else if (kl_caccept(c, "+"))
    op = KL_COP_ADD; /* unary plus: the operand itself */
  else
    un = false;
  if (!un) {
    v = kl_cprimary(c);
  } else {
    v = kl_cunary(c);
    /* -u and ~u wrap around in an unsigned type: not modelled. */
    if (v.uns && v.v != 0 && (op == KL_COP_NEG || op == KL_COP_BITNOT)) v.known = false;
    if (op == KL_COP_NOT) v.uns = false;
    if (v.known && op != KL_COP_ADD && !kl_consteval_apply(op, v.v, 0, &v.v)) v.known = false;
  }
  c->depth--;
  return v;
}

/* Binary operators by C precedence, lowest first. */
static const struct {
  const char *tok;
  enum kl_cop op;
  int level;
} kl_cbinops[] = {
    {"||", KL_COP_OR, 0},    {"&&", KL_COP_AND, 1}, {"|", KL_COP_BITOR, 2}, {"^", KL_COP_BITXOR, 3},
    {"&", KL_COP_BITAND, 4}, {"==", KL_COP_EQ, 5},  {"!=", KL_COP_NE, 5},   {"<", KL_COP_LT, 6},
    {"<=", KL_COP_LE, 6},    {">", KL_COP_GT, 6},   {">=", KL_COP_GE, 6},   {"<<", KL_COP_SHL, 7},
    {">>", KL_COP_SHR, 7},   {"+", KL_COP_ADD, 8},  {"-", KL_COP_SUB, 8},   {"*", KL_COP_MUL, 9},
    {"/", KL_COP_DIV, 9},    {"%", KL_COP_MOD, 9},
};
enum { KL_CLEVELS = 10 };

static struct kl_cval kl_cbinary(struct kl_cparse *c, int level) {
  if (level == KL_CLEVELS) return kl_cunary(c);
  struct kl_cval v = kl_cbinary(c, level + 1);
  for (;;) {
    int hit = -1;
    for (size_t i = 0; i < sizeof kl_cbinops / sizeof kl_cbinops[0] && hit < 0; i++)
      if (kl_cbinops[i].level == level && kl_cis(c, kl_cbinops[i].tok)) hit = (int)i;
    if (hit < 0 || c->err) return v;
    kl_cnext(c);
    struct kl_cval r = kl_cbinary(c, level + 1);
    enum kl_cop op = kl_cbinops[hit].op;
    /* A known operand decides && and || whatever the other one is. */
    if (op == KL_COP_AND && ((v.known && !v.v) || (r.known && !r.v))) {
      v = kl_cknown(0);
    } else if (op == KL_COP_OR && ((v.known && v.v) || (r.known && r.v))) {
      v = kl_cknown(1);
    } else if (v.known && r.known) {
      /* The usual conversions make the operation unsigned when either side is; a negative
       * operand or result would wrap, and wrapping is not modelled. */
      bool uns = op == KL_COP_SHL || op == KL_COP_SHR ? v.uns : v.uns || r.uns;
      bool wraps = uns && (v.v < 0 || r.v < 0);
      v.known = !wraps && kl_consteval_apply(op, v.v, r.v, &v.v);
      bool boolean = op >= KL_COP_LT && op <= KL_COP_OR;
      v.uns = uns && !boolean;
      if (v.uns && v.v < 0) v.known = false;
    } else {
      v = kl_cunknown();
    }
  }
}

static struct kl_cval kl_cexpr(struct kl_cparse *c) {
  if (++c->depth > KL_CONST_MAX_DEPTH) { /* `a ? b : c ? d : ...` nests through here */
    c->err = true;
    c->depth--;
    return kl_cunknown();
  }
  struct kl_cval r = kl_cternary(c);
  c->depth--;
  return r;
}

static struct kl_cval kl_cternary(struct kl_cparse *c) {
  struct kl_cval cond = kl_cbinary(c, 0);
  if (!kl_caccept(c, "?")) return cond;
  struct kl_cval a = kl_cexpr(c);
  if (!kl_caccept(c, ":")) {
    c->err = true;
    return kl_cunknown();
  }
  struct kl_cval b = kl_cexpr(c);
  if (cond.known) return cond.v ? a : b;
  return a.known && b.known && a.v == b.v ? a : kl_cunknown();
}

/* Evaluate a whole text; false when it is malformed or has text left over. */
static bool kl_ctext(const struct kl_consteval_env *env, struct kl_crun *run, const char *text,
                     size_t len, int depth, struct kl_cval *out) {
  if (depth > KL_CONST_MAX_DEPTH) return false;
  struct kl_cparse c = {env, run, text, text + len, KL_CT_END, NULL, 0, 0, false, false, depth};
  kl_cnext(&c);
  if (c.tok == KL_CT_END) return false;
  *out = kl_cexpr(&c);
  return !c.err && c.tok == KL_CT_END;
}

bool kl_consteval_eval(const char *text, size_t len, const struct kl_consteval_env *env,
                       int64_t *out) {
  struct kl_crun run = {.budget = KL_CONST_MAX_EXPANSIONS};
  struct kl_cval v;
  if (!kl_ctext(env, &run, text, len, 0, &v) || !v.known) return false;
  *out = v.v;
  return true;
}

int kl_consteval_truth(const char *text, size_t len, const struct kl_consteval_env *env) {
  struct kl_crun run = {.budget = KL_CONST_MAX_EXPANSIONS};
  struct kl_cval v;
  if (!kl_ctext(env, &run, text, len, 0, &v) || !v.known) return -1;
  return v.v != 0;
}
