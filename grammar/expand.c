/* Macro expansion (see expand.h): a small C preprocessor, good enough for kernel libraries.
 * Local headers are read once per run; expansions may be kept for reuse (kept.h). */
#include "grammar/expand.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyzer/input/source.h"
#include "grammar/inst.h"
#include "grammar/kept.h"
#include "grammar/lex.h"

/* Expansion limits: nested argument prescans, header nesting, tokens produced, bytes produced. */
#define KL_EXP_MAX_DEPTH 64
#define KL_EXP_MAX_INCLUDE_DEPTH 16
#define KL_EXP_MAX_TOKENS 4000000u
#define KL_EXP_MAX_BYTES KL_SOURCE_MAX_BYTES

static inline int kl_pp_digit(char c) {
  return c >= '0' && c <= '9';
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
  const char *want; /* kl_expand_includes: the include path prefix looked for */
  bool found;
  struct kl_inst **insts; /* kl_expand_text: instantiations left out, or NULL */
  size_t *ninsts, cap_insts;
  /* Where a top-level expansion is written as it goes, and the last character written there:
   * one call can stamp out thousands of instantiations, held better as text than as tokens. */
  struct kl_outbuf *sink;
  char sink_prev;
  int cond_depth;     /* kl_expand_includes: #if groups open in the file being read */
  char guard[128];    /* and the name an opening `#ifndef X` may be the include guard of */
};

/* Room for one more token in tv, out of the way of the push that is taken millions of times. */
static void kl_tv_grow(struct kl_tv *tv) {
  tv->cap = tv->cap ? tv->cap * 2 : 32;
  tv->v = kl_arena_xrealloc(tv->v, tv->cap * sizeof *tv->v);
}

static inline void kl_tv_push(struct kl_tv *tv, struct kl_tok t) {
  if (tv->n == tv->cap) kl_tv_grow(tv);
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
      (c == '/' && kl_lex_skip_comment(t, len, i) > i)) {
    for (;;) {
      if (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r' || t[i] == '\f' ||
                      t[i] == '\v')) {
        i++;
      } else if (i + 1 < len && t[i] == '\\' && (t[i + 1] == '\n' || t[i + 1] == '\r')) {
        i += 2;
      } else if (i < len && t[i] == '/' && kl_lex_skip_comment(t, len, i) > i) {
        i = kl_lex_skip_comment(t, len, i);
      } else {
        break;
      }
    }
    if (i == s) return k; /* a lone backslash */
    k.kind = KL_TK_WS;
  } else if (kl_lex_ident_start(c)) {
    while (i < len && kl_lex_ident_char(t[i])) i++;
    k.kind = KL_TK_IDENT;
  } else if (kl_pp_digit(c) || (c == '.' && i + 1 < len && kl_pp_digit(t[i + 1]))) {
    i = kl_lex_skip_number(t, len, i + 1);
    k.kind = KL_TK_NUM;
  } else if (c == '"' || c == '\'') {
    i = kl_lex_skip_literal(t, len, i);
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

/* Parse `NAME[(params)] body` (one logical line, splices still in) into the arena; NULL when it
 * defines nothing usable. Name and body point into *dp, a spliced copy of *dn bytes. */
static struct kl_macro *kl_exp_parse(struct kl_arena *a, const char *t, uint32_t len, char **dp,
                                     uint32_t *dn) {
  /* A spliced copy: bodies outlive header buffers, and splices vanish from the token stream. */
  char *d = kl_arena_alloc(a, len + 1);
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
  *dp = d;
  *dn = n;
  uint32_t i = 0;
  while (i < n && (d[i] == ' ' || d[i] == '\t')) i++;
  if (i >= n || !kl_lex_ident_start(d[i])) return NULL;
  struct kl_macro *m = kl_arena_alloc(a, sizeof *m);
  m->name = d + i;
  while (i < n && kl_lex_ident_char(d[i])) i++;
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
      } else if (i < n && kl_lex_ident_start(d[i]) && m->nparams < 127) {
        params[m->nparams] = d + i;
        uint32_t s = i;
        while (i < n && kl_lex_ident_char(d[i])) i++;
        plen[m->nparams++] = i - s;
        if (i + 3 <= n && !memcmp(d + i, "...", 3)) { /* GNU named variadic: `args...` */
          m->variadic = true;
          i += 3;
        }
      } else {
        return NULL; /* malformed parameter list: not a macro we can use */
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
      return NULL;
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
  m->body = kl_arena_alloc(a, sizeof *m->body * (body.n ? body.n : 1));
  if (body.n) memcpy(m->body, body.v, sizeof *m->body * body.n);
  kl_tv_free(&body);
  return m;
}

/* Parse a `#define`'s `NAME[(params)] body` and install it. */
static void kl_exp_define(struct kl_exp *x, const char *t, uint32_t len) {
  char *d;
  uint32_t dn;
  struct kl_macro *m = kl_exp_parse(x->a, t, len, &d, &dn);
  if (m) kl_exp_install(x, m);
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
      i = kl_lex_skip_literal(t, len, i);
    } else if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') {
      /* A block comment may carry the directive over lines. */
      i = kl_lex_skip_comment(t, len, i);
    } else {
      i++;
    }
  }
  return i;
}

static void kl_exp_read_header(struct kl_exp *x, const char *dir, const char *name, uint32_t n,
                               int depth);

/* The word of the directive in [s, e) (s at '#') starts at *w; returns where it ends. */
static uint32_t kl_exp_word(const char *t, uint32_t s, uint32_t e, uint32_t *w) {
  uint32_t i = s + 1;
  while (i < e && (t[i] == ' ' || t[i] == '\t')) i++;
  *w = i;
  while (i < e && kl_lex_ident_char(t[i])) i++;
  return i;
}

/* Whether the directive word t[w, i) is a `#define` whose operand follows at i. */
static bool kl_exp_is_define(const char *t, uint32_t w, uint32_t i, uint32_t e) {
  return i - w == 6 && !memcmp(t + w, "define", 6) && i < e && (t[i] == ' ' || t[i] == '\t');
}

/* The name in a `"name"` that opens at t[i]: [*ns, *ne); false when none is there, empty or
 * closed before e. */
static bool kl_exp_quoted(const char *t, uint32_t i, uint32_t e, uint32_t *ns, uint32_t *ne) {
  if (i >= e || t[i] != '"') return false;
  *ns = ++i;
  while (i < e && t[i] != '"') i++;
  *ne = i;
  return i < e && i > *ns;
}

/* Act on the directive in [s, e) (s at '#'): #define, #undef, and #include "x" for headers. */
static void kl_exp_directive(struct kl_exp *x, const char *t, uint32_t s, uint32_t e,
                             const char *dir, bool defines_only, int depth) {
  uint32_t w, i = kl_exp_word(t, s, e, &w);
  uint32_t wl = i - w;
  if (x->want) {
    /* Only an include every build of the file reaches counts: one under #if is optional. An
     * `#ifndef X` that the next directive answers with `#define X` is an include guard, not a
     * condition. */
    uint32_t k = i;
    while (k < e && (t[k] == ' ' || t[k] == '\t')) k++;
    uint32_t ks = k;
    while (k < e && kl_lex_ident_char(t[k])) k++;
    bool guard_def = wl == 6 && !memcmp(t + w, "define", 6) && x->guard[0] &&
                     strlen(x->guard) == k - ks && !memcmp(x->guard, t + ks, k - ks);
    if (guard_def) x->cond_depth--;
    x->guard[0] = '\0';
    if ((wl == 2 && !memcmp(t + w, "if", 2)) || (wl == 5 && !memcmp(t + w, "ifdef", 5))) {
      x->cond_depth++;
    } else if (wl == 6 && !memcmp(t + w, "ifndef", 6)) {
      x->cond_depth++;
      if (k - ks < sizeof x->guard) {
        memcpy(x->guard, t + ks, k - ks);
        x->guard[k - ks] = '\0';
      }
    } else if (wl == 5 && !memcmp(t + w, "endif", 5) && x->cond_depth > 0) {
      x->cond_depth--;
    }
    if (x->cond_depth > 0) return;
  }
  if (kl_exp_is_define(t, w, i, e)) {
    /* Looking for an include reads no macro: defining them would be wasted. */
    if (!x->want) kl_exp_define(x, t + i, e - i);
  } else if (wl == 5 && !memcmp(t + w, "undef", 5) && !defines_only) {
    while (i < e && (t[i] == ' ' || t[i] == '\t')) i++;
    uint32_t ns = i;
    while (i < e && kl_lex_ident_char(t[i])) i++;
    kl_exp_undef(x, t + ns, i - ns);
  } else if (wl == 7 && !memcmp(t + w, "include", 7) && dir) {
    while (i < e && (t[i] == ' ' || t[i] == '\t')) i++;
    size_t wn = x->want ? strlen(x->want) : 0;
    if (wn && i + 1 + wn <= e && (t[i] == '<' || t[i] == '"') && !memcmp(t + i + 1, x->want, wn))
      x->found = true;
    uint32_t ns, ne;
    if (kl_exp_quoted(t, i, e, &ns, &ne)) kl_exp_read_header(x, dir, t + ns, ne - ns, depth + 1);
  }
}

struct kl_outbuf {
  char *p;
  size_t n, cap;
};

/* Room for n more bytes and a NUL in o. */
static void kl_out_grow(struct kl_outbuf *o, size_t n) {
  while (o->n + n + 1 > o->cap) o->cap = o->cap ? o->cap * 2 : 4096;
  o->p = kl_arena_xrealloc(o->p, o->cap);
}

/* Called for every token an expansion writes: the common case is inline. */
static inline void kl_out_put(struct kl_outbuf *o, const char *s, size_t n) {
  if (o->n + n + 1 > o->cap) kl_out_grow(o, n);
  memcpy(o->p + o->n, s, n);
  o->n += n;
}

/* ---- Headers, read once per run --------------------------------------------------------- */

/* One step of reading a header into an expansion: install a copy of macro (a `#define`), or,
 * when macro is NULL, read the header that `#include "include"` names (n bytes). */
struct kl_hdr_step {
  const struct kl_macro *macro;
  const char *include;
  uint32_t n;
};

/* What expansion needs of a header is its directive lines, so that is all a run keeps of it:
 * every file of a project includes the same headers, often through several relative paths. An
 * entry is keyed by the header's real path and checked against its size and modification time,
 * once per generation; apart from that mark, entries are never changed once made, so a reader
 * needs the lock only to find one. */
struct kl_hdr {
  char *path; /* realpath */
  off_t size;
  struct timespec mtime;
  char *directives; /* the header's directive lines as written, each ended by '\n' */
  uint32_t len;
  bool too_big;
  /* Its lines as an expansion reads them, each #define parsed once per run, not once per
   * expansion: MLX's files include the same big headers. One block with the macros. */
  struct kl_hdr_step *steps;
  size_t nsteps;
  uint32_t checked; /* the generation in which its size and time were last found unchanged */
  struct kl_hdr *next;
};

enum { KL_HDR_BUCKETS = 512 };
static struct kl_hdr *kl_hdr_table[KL_HDR_BUCKETS];
static pthread_mutex_t kl_hdr_lock = PTHREAD_MUTEX_INITIALIZER;
/* A run, or one lint of the language server: within one, a header checked once is not checked
 * again (kl_expand_forget_paths starts the next). */
static uint32_t kl_hdr_gen = 1;

/* The next directive line of t at or after *pos: [*s, *e), *e at its newline or len, past
 * comments and literals; false when there is none. *line_start says whether *pos starts a line;
 * both go on after the line. */
static bool kl_pp_next_directive(const char *t, uint32_t len, uint32_t *pos, bool *line_start,
                                 uint32_t *s, uint32_t *e) {
  for (uint32_t i = *pos; i < len;) {
    char c = t[i];
    if (c == '\n') {
      *line_start = true;
      i++;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      i++;
    } else if (c == '/' && kl_lex_skip_comment(t, len, i) > i) {
      i = kl_lex_skip_comment(t, len, i);
    } else if (c == '#' && *line_start) {
      *s = i;
      *pos = *e = kl_logical_line_end(t, len, i);
      return true;
    } else {
      *line_start = false;
      i = (c == '"' || c == '\'') ? kl_lex_skip_literal(t, len, i) : i + 1;
    }
  }
  *pos = len;
  return false;
}

/* The directive lines of buf[0, len), in the order and form the header holds them. */
static char *kl_hdr_directives(const char *buf, uint32_t L, uint32_t *outlen) {
  struct kl_outbuf o = {0};
  uint32_t pos = 0, s, e;
  bool line_start = true;
  while (kl_pp_next_directive(buf, L, &pos, &line_start, &s, &e)) {
    kl_out_put(&o, buf + s, e - s);
    kl_out_put(&o, "\n", 1);
  }
  kl_out_put(&o, "", 0); /* room for the NUL, even for a header without directives */
  o.p[o.n] = '\0';
  *outlen = (uint32_t)o.n;
  return o.p;
}

/* The steps of reading a header's directive lines buf[0, len), taken as kl_exp_read_header takes
 * them (a header's #undef and #if lines do nothing there): one block holds the steps, their
 * macros, bodies and spliced text, in that order. */
static struct kl_hdr_step *kl_hdr_steps(const char *buf, uint32_t len, size_t *nsteps) {
  struct kl_arena *tmp = kl_arena_new();
  struct kl_hdr_step *v = NULL;
  struct {
    const char *d;
    uint32_t n;
  } *texts = NULL; /* each macro's spliced text, in order */
  size_t n = 0, cap = 0, tcap = 0, nmacros = 0, ntoks = 0, nchars = 0;
  for (uint32_t s = 0; s < len;) {
    uint32_t e = kl_logical_line_end(buf, len, s);
    uint32_t w, i = kl_exp_word(buf, s, e, &w), ns, ne;
    struct kl_hdr_step step = {NULL, NULL, 0};
    if (kl_exp_is_define(buf, w, i, e)) {
      char *d;
      uint32_t dn;
      step.macro = kl_exp_parse(tmp, buf + i, e - i, &d, &dn);
      if (step.macro) {
        KL_XVEC_PUSH(texts, nmacros, tcap);
        texts[nmacros].d = d;
        texts[nmacros++].n = dn;
        ntoks += step.macro->nbody;
        nchars += dn;
      }
    } else if (i - w == 7 && !memcmp(buf + w, "include", 7)) {
      while (i < e && (buf[i] == ' ' || buf[i] == '\t')) i++;
      if (kl_exp_quoted(buf, i, e, &ns, &ne)) {
        step.include = buf + ns;
        step.n = ne - ns;
      }
    }
    if (step.macro || step.include) {
      KL_XVEC_PUSH(v, n, cap);
      v[n++] = step;
    }
    s = e + 1;
  }
  struct kl_hdr_step *out = NULL;
  if (n) {
    out = kl_arena_xmalloc(n * sizeof *out + nmacros * sizeof(struct kl_macro) +
                           ntoks * sizeof(struct kl_tok) + nchars);
    struct kl_macro *macros = (struct kl_macro *)(out + n);
    struct kl_tok *toks = (struct kl_tok *)(macros + nmacros);
    char *chars = (char *)(toks + ntoks);
    for (size_t k = 0, t = 0; k < n; k++) {
      out[k] = v[k];
      if (!v[k].macro) continue;
      /* Move the macro into the block: what pointed into its spliced text points into the copy
       * (a body's spaces are a static " "). */
      const char *d = texts[t].d;
      uint32_t dn = texts[t++].n;
      memcpy(chars, d, dn);
      struct kl_macro *m = macros++;
      *m = *v[k].macro;
      m->name = chars + (m->name - d);
      memcpy(toks, v[k].macro->body, m->nbody * sizeof *toks);
      for (uint32_t b = 0; b < m->nbody; b++)
        if ((uintptr_t)toks[b].p - (uintptr_t)d < dn) toks[b].p = chars + (toks[b].p - d);
      m->body = toks;
      toks += m->nbody;
      chars += dn;
      out[k].macro = m;
    }
  }
  free(v);
  free(texts);
  kl_arena_delete(tmp);
  *nsteps = n;
  return out;
}

static void kl_hdr_free(struct kl_hdr *e) {
  free(e->path);
  free(e->directives);
  free(e->steps);
  free(e);
}

/* The cached header at real path real, read now if it is new or changed; NULL if unreadable. */
static const struct kl_hdr *kl_hdr_get(const char *real) {
  struct kl_hdr **slot = &kl_hdr_table[kl_hash(real, (uint32_t)strlen(real)) % KL_HDR_BUCKETS];
  pthread_mutex_lock(&kl_hdr_lock);
  for (struct kl_hdr *e = *slot; e; e = e->next) {
    if (e->checked != kl_hdr_gen || strcmp(e->path, real)) continue;
    pthread_mutex_unlock(&kl_hdr_lock);
    return e;
  }
  pthread_mutex_unlock(&kl_hdr_lock);
  struct stat st;
  if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return NULL;
  pthread_mutex_lock(&kl_hdr_lock);
  for (struct kl_hdr *e = *slot; e; e = e->next) {
    if (strcmp(e->path, real) || e->size != st.st_size || e->mtime.tv_sec != st.st_mtim.tv_sec ||
        e->mtime.tv_nsec != st.st_mtim.tv_nsec)
      continue;
    e->checked = kl_hdr_gen;
    pthread_mutex_unlock(&kl_hdr_lock);
    return e;
  }
  pthread_mutex_unlock(&kl_hdr_lock);
  FILE *f = fopen(real, "rb");
  if (!f) return NULL;
  struct kl_hdr *e = kl_arena_xmalloc(sizeof *e);
  memset(e, 0, sizeof *e);
  e->path = kl_arena_xstrdup(real);
  e->size = st.st_size;
  e->mtime = st.st_mtim;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 16384;
      buf = kl_arena_xrealloc(buf, cap);
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    if (!got) break;
    len += got;
    if (len > KL_SOURCE_MAX_BYTES) {
      e->too_big = true;
      break;
    }
  }
  fclose(f);
  e->directives = e->too_big ? kl_arena_xstrndup("", 0)
                             : kl_hdr_directives(buf, (uint32_t)len, &e->len);
  free(buf);
  e->steps = kl_hdr_steps(e->directives, e->len, &e->nsteps);
  /* Two threads may read one header at once: both entries are the same, and both are kept. One
   * of this path from an earlier generation is out of date: a long-lived server frees it, as no
   * expansion of that generation still runs (kl_expand_forget_paths). */
  pthread_mutex_lock(&kl_hdr_lock);
  for (struct kl_hdr **p = slot; *p;) {
    struct kl_hdr *o = *p;
    if (o->checked != kl_hdr_gen && !strcmp(o->path, real)) {
      *p = o->next;
      kl_hdr_free(o);
    } else {
      p = &o->next;
    }
  }
  e->checked = kl_hdr_gen;
  e->next = *slot;
  *slot = e;
  pthread_mutex_unlock(&kl_hdr_lock);
  return e;
}

/* Where a path written in an #include leads: realpath costs a readlink per component, and every
 * file of a project asks for the same headers, each through the folders above it, so a run asks
 * the file system once per path. real is NULL when there is no such file. */
struct kl_hdr_path {
  char *path;
  char *real;
  struct kl_hdr_path *next;
};

static struct kl_hdr_path *kl_hdr_paths[KL_HDR_BUCKETS];

/* Whether an expansion installs a header's parsed steps, or parses its lines again as a search
 * for includes does (kl_expand_cache_headers: tests compare the two). */
static bool kl_hdr_replay = true;

void kl_expand_cache_headers(bool on) {
  kl_hdr_replay = on;
}

static void kl_hdr_paths_forget(void) {
  for (size_t i = 0; i < KL_HDR_BUCKETS; i++) {
    for (struct kl_hdr_path *e = kl_hdr_paths[i], *next; e; e = next) {
      next = e->next;
      free(e->path);
      free(e->real);
      free(e);
    }
    kl_hdr_paths[i] = NULL;
  }
}

void kl_expand_forget_paths(void) {
  pthread_mutex_lock(&kl_hdr_lock);
  kl_hdr_paths_forget();
  /* Kept expansions read headers that may have changed since. */
  kl_kept_forget();
  kl_hdr_gen++;
  pthread_mutex_unlock(&kl_hdr_lock);
}

void kl_expand_forget_headers(void) {
  pthread_mutex_lock(&kl_hdr_lock);
  kl_hdr_paths_forget();
  kl_kept_forget();
  for (size_t i = 0; i < KL_HDR_BUCKETS; i++) {
    for (struct kl_hdr *e = kl_hdr_table[i], *next; e; e = next) {
      next = e->next;
      kl_hdr_free(e);
    }
    kl_hdr_table[i] = NULL;
  }
  pthread_mutex_unlock(&kl_hdr_lock);
}

/* The recording of this thread's expansions (kl_expand_record), or NULL. */
static _Thread_local struct kl_expand_deps *kl_exp_rec;

void kl_expand_record(struct kl_expand_deps *d) {
  kl_exp_rec = d;
}

/* Note, once per recording, that the expansion took path to lead to real (NULL: nowhere), or
 * (header) read the header at real path path as of size and time mtime. */
static void kl_dep_note(const char *path, const char *real, bool header, int64_t size,
                        const struct timespec *mtime) {
  struct kl_expand_deps *r = kl_exp_rec;
  for (size_t i = 0; i < r->n; i++)
    if (r->items[i].header == header && !strcmp(r->items[i].path, path)) return;
  KL_XVEC_PUSH(r->items, r->n, r->cap);
  r->items[r->n++] = (struct kl_expand_dep){kl_arena_xstrdup(path),
                                            real ? kl_arena_xstrdup(real) : NULL, header, size,
                                            mtime ? (int64_t)mtime->tv_sec : 0,
                                            mtime ? (int64_t)mtime->tv_nsec : 0};
}

static bool kl_hdr_resolve_at(const char *path, char *real);

bool kl_expand_deps_hold(const struct kl_expand_deps *d) {
  /* Asked through the generation's caches, as an expansion asks: every record checked in one
   * generation sees the same answers (a summary and its header's pooled parse never disagree),
   * and a path or header shared by many records costs one system call per generation. */
  for (size_t i = 0; d && i < d->n; i++) {
    const struct kl_expand_dep *o = &d->items[i];
    if (o->header) {
      const struct kl_hdr *h = kl_hdr_get(o->path);
      if ((h ? (int64_t)h->size : -1) != o->size ||
          (h && ((int64_t)h->mtime.tv_sec != o->sec || (int64_t)h->mtime.tv_nsec != o->nsec)))
        return false;
      continue;
    }
    char real[PATH_MAX];
    bool found = kl_hdr_resolve_at(o->path, real);
    if (found != (o->real != NULL) || (found && strcmp(real, o->real))) return false;
  }
  return true;
}

void kl_expand_deps_free(struct kl_expand_deps *d) {
  for (size_t i = 0; d && i < d->n; i++) {
    free(d->items[i].path);
    free(d->items[i].real);
  }
  if (d) free(d->items);
}

uint32_t kl_expand_generation(void) {
  pthread_mutex_lock(&kl_hdr_lock);
  uint32_t g = kl_hdr_gen;
  pthread_mutex_unlock(&kl_hdr_lock);
  return g;
}

/* kl_hdr_resolve_at, noted when this thread records. */
static bool kl_hdr_resolve(const char *path, char *real) {
  bool found = kl_hdr_resolve_at(path, real);
  if (kl_exp_rec) kl_dep_note(path, found ? real : NULL, false, 0, NULL);
  return found;
}

/* The real path of path into real[PATH_MAX], or false when there is no such file or folder. */
static bool kl_hdr_resolve_at(const char *path, char *real) {
  uint32_t plen = (uint32_t)strlen(path);
  struct kl_hdr_path **slot = &kl_hdr_paths[kl_hash(path, plen) % KL_HDR_BUCKETS];
  pthread_mutex_lock(&kl_hdr_lock);
  for (struct kl_hdr_path *e = *slot; e; e = e->next) {
    if (strcmp(e->path, path)) continue;
    bool found = e->real != NULL;
    if (found) snprintf(real, PATH_MAX, "%s", e->real);
    pthread_mutex_unlock(&kl_hdr_lock);
    return found;
  }
  pthread_mutex_unlock(&kl_hdr_lock);
  bool found = realpath(path, real) != NULL;
  struct kl_hdr_path *e = kl_arena_xmalloc(sizeof *e);
  e->path = kl_arena_xstrdup(path);
  e->real = found ? kl_arena_xstrdup(real) : NULL;
  /* Two threads may resolve one path at once: both entries say the same, and both are kept. */
  pthread_mutex_lock(&kl_hdr_lock);
  e->next = *slot;
  *slot = e;
  pthread_mutex_unlock(&kl_hdr_lock);
  return found;
}

/* The real path of dir/name, or false when there is no such file. */
static bool kl_hdr_find(const char *dir, const char *name, uint32_t n, char *path, size_t cap,
                        char *real) {
  snprintf(path, cap, "%s/%.*s", dir, (int)n, name);
  return kl_hdr_resolve(path, real);
}

/* Read the #define lines of a local header (and of the local headers it includes). */
static void kl_exp_read_header(struct kl_exp *x, const char *dir, const char *name, uint32_t n,
                               int depth) {
  if (depth > KL_EXP_MAX_INCLUDE_DEPTH || n > 1024 || strlen(dir) > 2048) return;
  char path[4096], real[PATH_MAX];
  bool found = kl_hdr_find(dir, name, n, path, sizeof path, real);
  if (!found && x->include_dir && strcmp(dir, x->include_dir) && strlen(x->include_dir) <= 2048)
    found = kl_hdr_find(x->include_dir, name, n, path, sizeof path, real);
  /* Projects include by a path from their root (MLX: "mlx/backend/metal/kernels/utils.h"), a
   * folder the build names with -I: try the folders above the file, nearest first. */
  if (!found && x->include_dir && memchr(name, '/', n) && strlen(x->include_dir) <= 2048) {
    char up[2100], rdir[PATH_MAX];
    bool resolved = kl_hdr_resolve(x->include_dir, rdir);
    const char *from = resolved && strlen(rdir) < sizeof up ? rdir : x->include_dir;
    size_t fl = strlen(from); /* include_dir is at most 2048 bytes (above) */
    if (fl >= sizeof up) fl = sizeof up - 1;
    memcpy(up, from, fl);
    up[fl] = '\0';
    for (int level = 0; level < 8 && !found; level++) {
      char *slash = strrchr(up, '/');
      if (!slash || slash == up) break;
      *slash = '\0';
      found = kl_hdr_find(up, name, n, path, sizeof path, real);
    }
  }
  if (!found) return;
  /* One header reached by two relative paths is one header (include guards, cycles). */
  for (size_t k = 0; k < x->nseen; k++)
    if (!strcmp(x->seen[k], real)) return;
  x->seen = kl_arena_xrealloc(x->seen, (x->nseen + 1) * sizeof *x->seen);
  x->seen[x->nseen++] = kl_arena_strdup(x->a, real);
  const struct kl_hdr *h = kl_hdr_get(real);
  if (kl_exp_rec) kl_dep_note(real, NULL, true, h ? (int64_t)h->size : -1, h ? &h->mtime : NULL);
  if (!h || h->too_big) return;
  /* A header's #if groups are its own: it is read from depth 0, and the includer's resumes. */
  int outer_depth = x->cond_depth;
  x->cond_depth = 0;
  x->guard[0] = '\0';
  /* Nested includes resolve next to this header, by the path it was found at. */
  const char *slash = strrchr(path, '/');
  char *hdir = kl_arena_strndup(x->a, path, (size_t)(slash - path));
  if (!x->want && kl_hdr_replay) {
    /* The header's lines, parsed once: the same macros installed, the same includes read. */
    for (size_t k = 0; k < h->nsteps; k++) {
      const struct kl_hdr_step *st = &h->steps[k];
      if (st->macro) {
        struct kl_macro *m = kl_arena_alloc_raw(x->a, sizeof *m);
        *m = *st->macro;
        kl_exp_install(x, m);
      } else {
        kl_exp_read_header(x, hdir, st->include, st->n, depth + 1);
      }
    }
  } else {
    const char *buf = h->directives;
    for (uint32_t i = 0; i < h->len;) {
      uint32_t e = kl_logical_line_end(buf, h->len, i);
      kl_exp_directive(x, buf, i, e, hdir, true, depth);
      i = e + 1;
    }
  }
  x->cond_depth = outer_depth;
  x->guard[0] = '\0';
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
  if (pend->n + n > pend->cap) {
    while (pend->n + n > pend->cap) pend->cap = pend->cap ? pend->cap * 2 : 32;
    pend->v = kl_arena_xrealloc(pend->v, pend->cap * sizeof *pend->v);
  }
  for (size_t i = n; i-- > 0;) pend->v[pend->n++] = v[i];
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

static void kl_out_tokens(struct kl_outbuf *o, const struct kl_tv *tv, char *last);
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
  if (kl_lex_ident_start(d[0]))
    t.kind = KL_TK_IDENT;
  else if (kl_pp_digit(d[0]))
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
  /* Each argument is expanded once, where the body first uses it; most macros take a few. */
  struct kl_tv expanded_few[16];
  bool have_few[16];
  struct kl_tv *expanded = expanded_few;
  bool *have = have_few;
  if (m->nparams > 16) {
    expanded = kl_arena_xmalloc(m->nparams * sizeof *expanded);
    have = kl_arena_xmalloc(m->nparams);
  }
  memset(expanded, 0, m->nparams * sizeof *expanded);
  memset(have, 0, m->nparams);
  struct kl_tv pend = {0}; /* one argument's tokens as they are expanded, for each in turn */
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
        pend.n = 0;
        kl_exp_push_front(x, &pend, arg->v, arg->n);
        kl_exp_run(x, &pend, false, &expanded[b->param], depth + 1);
        have[b->param] = true;
      }
      const struct kl_tv *ex = &expanded[b->param];
      for (size_t k = 0; k < ex->n; k++) kl_exp_emit(x, out, ex->v[k]);
      continue;
    }
    kl_exp_emit(x, out, *b);
  }
  kl_tv_free(&pend);
  for (uint32_t p = 0; p < m->nparams; p++) kl_tv_free(&expanded[p]);
  if (expanded != expanded_few) {
    free(expanded);
    free(have);
  }
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

/* Collect the arguments of a call whose '(' is next; false (tokens in raw) when unbalanced. Each
 * argument is a stretch of raw, from its first token that is not a space to the comma or
 * parenthesis that ends it: args[k] are views into raw, set once raw stops growing, never freed. */
static bool kl_exp_collect(struct kl_exp *x, struct kl_tv *pend, bool pull,
                           const struct kl_macro *m, struct kl_tv *raw, struct kl_tv *args,
                           uint32_t *nargs) {
  struct kl_tok t;
  while (kl_exp_take(x, pend, pull, &t)) {
    kl_tv_push(raw, t);
    if (t.kind != KL_TK_WS) break;
  }
  size_t cap = m->nparams ? m->nparams : 1;
  size_t start[128], end[128]; /* start == SIZE_MAX: the argument has no token yet */
  start[0] = SIZE_MAX;
  int level = 0;
  uint32_t n = 0;
  bool closed = false;
  while (kl_exp_take(x, pend, pull, &t)) {
    kl_tv_push(raw, t);
    if (kl_tok_is(&t, "(")) {
      level++;
    } else if (kl_tok_is(&t, ")")) {
      if (level-- == 0) {
        closed = true;
        break;
      }
    } else if (kl_tok_is(&t, ",") && level == 0 && !(m->variadic && n + 1 >= m->nparams)) {
      if (n < cap) end[n] = raw->n - 1;
      if (++n >= 128) return false;
      if (n < cap) start[n] = SIZE_MAX;
      continue;
    }
    /* Spaces around an argument are not part of it. */
    if (n < cap && start[n] == SIZE_MAX && t.kind != KL_TK_WS) start[n] = raw->n - 1;
  }
  if (!closed) return false;
  if (n < cap) end[n] = raw->n - 1;
  for (uint32_t k = 0; k <= n && k < cap; k++)
    args[k] = start[k] == SIZE_MAX ? (struct kl_tv){NULL, 0, 0}
                                   : (struct kl_tv){raw->v + start[k], end[k] - start[k], 0};
  *nargs = n + 1;
  return true;
}

/* Expand the pending tokens into out. With pull, calls may take their arguments from the file
 * beyond the pending tokens (`CAT(instantiate_, gemv)(half)`). */
static void kl_exp_run(struct kl_exp *x, struct kl_tv *pend, bool pull, struct kl_tv *out,
                       int depth) {
  if (depth > KL_EXP_MAX_DEPTH) {
    x->failed = true;
    return;
  }
  /* One call's arguments and substitution at a time: their buffers serve every call of the run
   * (the substitution is copied onto pend, and the arguments are views read before the next). */
  struct kl_tv raw = {0}, sub = {0};
  while (pend->n && !x->failed) {
    if (depth == 0 && x->sink && out->n >= 4096) {
      kl_out_tokens(x->sink, out, &x->sink_prev);
      out->n = 0;
    }
    struct kl_tok t = pend->v[--pend->n];
    const struct kl_macro *m = NULL;
    if (t.kind == KL_TK_IDENT) m = kl_exp_lookup(x, t.p, t.len);
    if (!m || kl_hs_has(t.hs, m->id)) {
      kl_tv_push(out, t);
      continue;
    }
    sub.n = 0;
    if (!m->fn) {
      kl_exp_subst(x, m, NULL, kl_hs_add(x, t.hs, m->id), &sub, depth);
      kl_exp_push_front(x, pend, sub.v, sub.n);
      continue;
    }
    if (!kl_exp_lparen_next(x, pend, pull)) {
      kl_tv_push(out, t);
      continue;
    }
    raw.n = 0;
    struct kl_tv args[128];
    /* Arguments the call leaves out (an absent variadic tail) are empty; a call site is hot, and
     * kl_exp_collect sets no more than max(nparams, 1), so none past them is cleared. */
    size_t used = m->nparams ? m->nparams : 1;
    memset(args, 0, used * sizeof *args);
    uint32_t nargs = 0;
    bool ok = kl_exp_collect(x, pend, pull, m, &raw, args, &nargs);
    if (!ok) x->failed = true; /* an unterminated call would swallow the rest of the file */
    /* `F()` passes one empty argument; a variadic tail may be absent altogether. */
    for (size_t k = 0; k < nargs && k < used; k++)
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
  }
  kl_tv_free(&raw);
  kl_tv_free(&sub);
}

/* Operator characters that lex as one token with their neighbour; asked twice for every token
 * written, so a table, not a string search. */
static const bool kl_glue[256] = {
    ['+'] = 1, ['-'] = 1, ['*'] = 1, ['/'] = 1, ['%'] = 1, ['&'] = 1, ['|'] = 1, ['^'] = 1,
    ['<'] = 1, ['>'] = 1, ['='] = 1, ['!'] = 1, [':'] = 1, ['.'] = 1, ['#'] = 1};

static int kl_gluey(char c) {
  return kl_glue[(unsigned char)c];
}

/* Write expanded tokens; a space goes between two that would otherwise lex as one. *last is the
 * last character written before them (0 for none), and is left at the last one written. */
static void kl_out_tokens(struct kl_outbuf *o, const struct kl_tv *tv, char *last) {
  char prev = *last;
  for (size_t i = 0; i < tv->n; i++) {
    const struct kl_tok *t = &tv->v[i];
    if (t->kind == KL_TK_WS) {
      /* A comment from an argument must not swallow the rest of the expansion's line. Most
       * spaces are a byte or two: one pass, no library call. */
      bool nl = false, comment = false;
      for (uint32_t j = 0; j < t->len; j++) {
        nl |= t->p[j] == '\n';
        comment |= t->p[j] == '/';
      }
      if (comment)
        kl_out_put(o, nl ? "\n" : " ", 1);
      else
        kl_out_put(o, t->p, t->len);
      prev = ' ';
      continue;
    }
    char first = t->p[0];
    if (prev && ((kl_lex_ident_char(prev) && kl_lex_ident_char(first)) ||
                 (kl_gluey(prev) && kl_gluey(first)) ||
                 ((prev == '"' || prev == '\'') && kl_lex_ident_start(first))))
      kl_out_put(o, " ", 1);
    kl_out_put(o, t->p, t->len);
    prev = t->p[t->len - 1];
  }
  *last = prev;
}

/* Whether the expansion just written at o[b0, n) is nothing but explicit instantiations; then
 * they are kept as text in x->insts and one space replaces them in o. */
static bool kl_exp_divert(struct kl_exp *x, struct kl_outbuf *o, size_t b0) {
  if (!x->insts || o->n == b0 || o->n > UINT32_MAX) return false;
  const char *t = o->p + b0;
  uint32_t n = (uint32_t)(o->n - b0), i = 0;
  size_t first = *x->ninsts;
  while (i < n) {
    /* A macro that ends its instantiation with `;` and is itself called with one leaves empty
     * declarations between them: nothing to parse either. */
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r' || t[i] == ';'))
      i++;
    if (i == n) break;
    struct kl_inst in;
    uint32_t end;
    if (!kl_inst_read(x->a, t, n, i, &in, &end)) {
      *x->ninsts = first;
      return false;
    }
    /* The text outlives the output buffer; the place is the space that stands for the call. */
    in.text = kl_arena_strndup(x->a, t + i, end - i);
    in.start = (uint32_t)b0;
    in.end = (uint32_t)b0 + 1;
    in.placeholder = true;
    KL_VEC_PUSH(x->a, *x->insts, *x->ninsts, x->cap_insts);
    (*x->insts)[(*x->ninsts)++] = in;
    i = end;
  }
  if (*x->ninsts == first) return false;
  o->n = b0;
  kl_out_put(o, " ", 1);
  return true;
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
    } else if (c == '/' && kl_lex_skip_comment(t, len, pos) > pos) {
      pos = kl_lex_skip_comment(t, len, pos);
    } else if (c == '#' && line_start) {
      /* Directives stay as written; definitions take effect from here on, as in cpp. */
      uint32_t e = kl_logical_line_end(t, len, pos);
      kl_exp_directive(x, t, pos, e, include_dir, false, 0);
      pos = e;
    } else if (c == '"' || c == '\'') {
      line_start = false;
      pos = kl_lex_skip_literal(t, len, pos);
    } else if (kl_pp_digit(c)) {
      line_start = false;
      pos = kl_lex_skip_number(t, len, pos + 1);
    } else if (!kl_lex_ident_start(c)) {
      line_start = false;
      pos++;
    } else {
      line_start = false;
      uint32_t s = pos;
      while (pos < len && kl_lex_ident_char(t[pos])) pos++;
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
      size_t b0 = o->n;
      x->sink = o;
      x->sink_prev = 0;
      kl_exp_run(x, &pend, true, &out, 0);
      kl_out_tokens(o, &out, &x->sink_prev);
      x->sink = NULL;
      if (kl_exp_divert(x, o, b0)) {
        kl_offmap_add(map, (uint32_t)b0, 1, s, x->pos - s);
        pos = run = x->pos;
        count++;
        continue;
      }
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

static char *kl_preproc_expand_as(struct kl_arena *a, const char *text, uint32_t len,
                                  const char *include_dir, uint32_t *outlen, struct kl_offmap *map,
                                  struct kl_inst **insts, size_t *ninsts, bool keep) {
  /* Only a call that starts with no instantiations of its own may give or take a kept one. */
  bool fresh = insts && ninsts && !*ninsts;
  /* A recording must see the headers read: a kept expansion would record nothing. */
  struct kl_kept *k =
      fresh && !keep && !kl_exp_rec ? kl_kept_take(text, len, include_dir) : NULL;
  if (k) {
    char *buf = kl_kept_give(a, k, outlen, map, insts, ninsts);
    kl_kept_free(k);
    return buf;
  }
  struct kl_exp x = {.a = a,
                     .text = text,
                     .len = len,
                     .include_dir = include_dir,
                     .budget = KL_EXP_MAX_TOKENS,
                     .insts = insts,
                     .ninsts = ninsts,
                     .cap_insts = ninsts ? *ninsts : 0};
  struct kl_outbuf o = {0};
  kl_offmap_init(map, a);
  bool ok = kl_exp_file(&x, include_dir, &o, map);
  free(x.slots);
  free(x.seen);
  char *buf = NULL;
  if (ok && o.n <= UINT32_MAX - 1) {
    *outlen = (uint32_t)o.n;
    buf = kl_arena_strndup(a, o.p, o.n);
  }
  free(o.p);
  if (keep && fresh)
    kl_kept_put(text, len, include_dir, buf, buf ? *outlen : 0, map, *insts, *ninsts);
  return buf;
}

char *kl_expand_text(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                     uint32_t *outlen, struct kl_offmap *map, struct kl_inst **insts,
                     size_t *ninsts) {
  return kl_preproc_expand_as(a, text, len, include_dir, outlen, map, insts, ninsts, false);
}

char *kl_expand_keep(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                     uint32_t *outlen, struct kl_offmap *map, struct kl_inst **insts,
                     size_t *ninsts) {
  return kl_preproc_expand_as(a, text, len, include_dir, outlen, map, insts, ninsts, true);
}

/* Act on the directives of x->text as a header's are read (defines and includes only), until
 * x->found. */
static void kl_exp_directives(struct kl_exp *x, const char *dir) {
  uint32_t pos = 0, s, e;
  bool line_start = true;
  while (!x->found && kl_pp_next_directive(x->text, x->len, &pos, &line_start, &s, &e))
    kl_exp_directive(x, x->text, s, e, dir, true, 0);
}

bool kl_expand_defines(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                       const char *name, size_t n) {
  struct kl_exp x = {.a = a, .text = text, .len = len, .include_dir = include_dir};
  kl_exp_directives(&x, include_dir ? include_dir : ".");
  bool found = n <= UINT32_MAX && kl_exp_lookup(&x, name, (uint32_t)n) != NULL;
  free(x.slots);
  free(x.seen);
  return found;
}

size_t kl_expand_headers(struct kl_arena *a, const char *text, uint32_t len,
                         const char *include_dir, const char ***out) {
  struct kl_exp x = {.a = a, .text = text, .len = len, .include_dir = include_dir};
  kl_exp_directives(&x, include_dir ? include_dir : ".");
  const char **v = kl_arena_alloc(a, (x.nseen + 1) * sizeof *v);
  for (size_t i = 0; i < x.nseen; i++) v[i] = x.seen[i]; /* in the arena already */
  size_t n = x.nseen;
  free(x.slots);
  free(x.seen);
  *out = v;
  return n;
}

bool kl_expand_includes(struct kl_arena *a, const char *text, uint32_t len, const char *include_dir,
                        const char *prefix) {
  struct kl_exp x = {.a = a, .text = text, .len = len, .include_dir = include_dir, .want = prefix};
  kl_exp_directives(&x, include_dir ? include_dir : ".");
  free(x.slots);
  free(x.seen);
  return x.found;
}

bool kl_expand_family10(struct kl_arena *a, const char *text, uint32_t len, const struct kl_pp *pp,
                        const char *include_dir) {
  const char *use = strstr(text, "mpp::tensor_ops");
  if (use) {
    struct kl_pp own;
    if (!pp) {
      kl_preproc_scan(a, text, len, &own);
      pp = &own;
    }
    for (; use; use = strstr(use + 1, "mpp::tensor_ops"))
      if (kl_preproc_unconditional(pp, (uint32_t)(use - text))) return true;
  }
  return strstr(text, "#include") &&
         kl_expand_includes(a, text, len, include_dir, "MetalPerformancePrimitives/");
}
