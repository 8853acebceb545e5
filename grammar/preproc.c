/* The preprocessor's directives (see preproc.h): read line by line, and evaluated under stated
 * assumptions about the build. */
#include "grammar/preproc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/consteval.h"
#include "grammar/lex.h"

/* Directive text kept for a condition or a macro's value; a longer one is unknown. */
#define KL_PP_MAX_DIRECTIVE 1024

/* Copy a directive's text without comments and line continuations. Returns the offset of the
 * newline that ends its last line (a block comment can carry it over lines), or len. *outn is
 * outcap when the text did not fit: a cut condition must not be evaluated. */
static uint32_t kl_pp_directive(const char *buf, uint32_t len, uint32_t i, char *out, size_t outcap,
                                size_t *outn) {
  size_t o = 0;
  bool cut = false;
  while (i < len && buf[i] != '\n') {
    if (buf[i] == '\\' && i + 1 < len && (buf[i + 1] == '\n' || buf[i + 1] == '\r')) {
      i += buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n' ? 3 : 2;
      if (o + 1 < outcap)
        out[o++] = ' ';
      else
        cut = true;
      continue;
    }
    uint32_t e = kl_lex_skip_comment(buf, len, i);
    if (e > i && buf[i + 1] == '/') {
      i = e; /* a line comment ends the directive */
      break;
    }
    if (e > i) {
      i = e;
      if (o + 1 < outcap)
        out[o++] = ' ';
      else
        cut = true;
      continue;
    }
    if (o + 1 < outcap)
      out[o++] = buf[i];
    else
      cut = true;
    i++;
  }
  while (o > 0 && (out[o - 1] == ' ' || out[o - 1] == '\t' || out[o - 1] == '\r')) o--;
  out[o] = '\0';
  *outn = cut ? outcap : o;
  return i;
}

static bool kl_pp_word(const char *w, size_t n, const char *s) {
  return strlen(s) == n && !memcmp(w, s, n);
}

static void kl_pp_add(struct kl_arena *a, struct kl_pp *pp, enum kl_pp_kind kind, uint32_t start,
                      uint32_t end, const char *cond, const char *value, int group) {
  KL_VEC_PUSH(a, pp->lines, pp->nlines, pp->cap_lines);
  pp->lines[pp->nlines++] = (struct kl_pp_line){kind, start, end, cond, value, group};
}

/* The first identifier of s and what follows it. */
static const char *kl_pp_name(const char *s, size_t *n) {
  while (*s == ' ' || *s == '\t') s++;
  const char *w = s;
  while (kl_lex_ident_char(*s)) s++;
  *n = (size_t)(s - w);
  return w;
}

void kl_preproc_scan(struct kl_arena *a, const char *buf, uint32_t len, struct kl_pp *pp) {
  memset(pp, 0, sizeof *pp);
  pp->len = len;
  int *stack = NULL;
  size_t depth = 0, cap = 0;
  char text[KL_PP_MAX_DIRECTIVE];
  for (uint32_t i = 0; i < len;) {
    uint32_t line = i, j = i;
    while (j < len && (buf[j] == ' ' || buf[j] == '\t')) j++;
    if (j < len && buf[j] == '#') {
      j++;
      while (j < len && (buf[j] == ' ' || buf[j] == '\t')) j++;
      uint32_t ws = j;
      while (j < len && kl_lex_ident_char(buf[j])) j++;
      size_t wn = j - ws, tn = 0;
      const char *w = buf + ws;
      i = kl_pp_directive(buf, len, j, text, sizeof text, &tn);
      size_t nn;
      const char *nm = kl_pp_name(text, &nn);
      bool cut = tn == sizeof text;
      if (kl_pp_word(w, wn, "if") || kl_pp_word(w, wn, "ifdef") || kl_pp_word(w, wn, "ifndef")) {
        const char *cond = cut       ? "(" /* cut: unknown */
                           : wn == 2 ? kl_arena_strdup(a, text)
                           : wn == 5 ? kl_arena_printf(a, "defined(%.*s)", (int)nn, nm)
                                     : kl_arena_printf(a, "!defined(%.*s)", (int)nn, nm);
        int g = (int)pp->ngroups++;
        KL_VEC_PUSH(a, stack, depth, cap);
        stack[depth++] = g;
        kl_pp_add(a, pp, KL_PP_IF, line, i, cond, NULL, g);
      } else if ((kl_pp_word(w, wn, "elif") || kl_pp_word(w, wn, "elifdef") ||
                  kl_pp_word(w, wn, "elifndef") || kl_pp_word(w, wn, "else")) &&
                 depth) {
        const char *cond = wn == 4 && w[2] == 's' ? ""
                           : cut                  ? "("
                           : wn == 4              ? kl_arena_strdup(a, text)
                           : wn == 7              ? kl_arena_printf(a, "defined(%.*s)", (int)nn, nm)
                                     : kl_arena_printf(a, "!defined(%.*s)", (int)nn, nm);
        kl_pp_add(a, pp, *cond ? KL_PP_ELIF : KL_PP_ELSE, line, i, cond, NULL, stack[depth - 1]);
      } else if (kl_pp_word(w, wn, "endif") && depth) {
        int g = stack[--depth];
        kl_pp_add(a, pp, KL_PP_ENDIF, line, i, NULL, NULL, g);
      } else if (kl_pp_word(w, wn, "define") && nn) {
        const char *rest = nm + nn;
        const char *value = NULL;
        if (*rest != '(' && !cut) { /* object-like: the rest of the line is its value */
          while (*rest == ' ' || *rest == '\t') rest++;
          value = kl_arena_strdup(a, rest);
        }
        kl_pp_add(a, pp, KL_PP_DEFINE, line, i, kl_arena_strndup(a, nm, nn), value, -1);
      } else if (kl_pp_word(w, wn, "include") || kl_pp_word(w, wn, "import")) {
        kl_pp_add(a, pp, KL_PP_INCLUDE, line, i, NULL, NULL, -1);
      } else if (kl_pp_word(w, wn, "error")) {
        kl_pp_add(a, pp, KL_PP_ERROR, line, i, NULL, NULL, -1);
      } else if (kl_pp_word(w, wn, "undef") && nn) {
        kl_pp_add(a, pp, KL_PP_UNDEF, line, i, kl_arena_strndup(a, nm, nn), NULL, -1);
      }
      if (i < len) i++;
      continue;
    }
    /* Ordinary line. A block comment is skipped whole, so no line inside it is taken for a
     * directive; a comment opener inside a literal is inert. */
    while (i < len && buf[i] != '\n') {
      uint32_t e = kl_lex_skip_comment(buf, len, i);
      if (e > i)
        i = e;
      else if (buf[i] == '"' || buf[i] == '\'')
        i = kl_lex_skip_literal(buf, len, i);
      else
        i++;
    }
    if (i < len) i++;
  }
}

size_t kl_preproc_branch_end(const struct kl_pp *pp, size_t i) {
  int g = pp->lines[i].group;
  for (size_t k = i + 1; k < pp->nlines; k++) {
    const struct kl_pp_line *l = &pp->lines[k];
    if (l->group == g && (l->kind == KL_PP_ELIF || l->kind == KL_PP_ELSE || l->kind == KL_PP_ENDIF))
      return k;
  }
  return pp->nlines;
}

/* The condition of chain g when it is `#if C` with at most an `#else` (no `#elif`) and C was
 * read whole, else NULL. */
static const char *kl_preproc_two_way(const struct kl_pp *pp, int g, size_t from) {
  const char *cond = NULL;
  for (size_t i = from; i < pp->nlines; i++) {
    const struct kl_pp_line *l = &pp->lines[i];
    if (l->group != g) continue;
    if (l->kind == KL_PP_ELIF) return NULL;
    if (l->kind == KL_PP_IF) cond = l->cond;
    if (l->kind == KL_PP_ENDIF) break;
  }
  /* A condition cut for its length reads "(": it names nothing two chains could share. */
  return cond && strcmp(cond, "(") ? cond : NULL;
}

void kl_preproc_arms(struct kl_arena *a, const struct kl_pp *pp, struct kl_pp_arms *out) {
  memset(out, 0, sizeof *out);
  size_t n = 0;
  for (size_t i = 0; i < pp->nlines; i++)
    n += pp->lines[i].kind == KL_PP_IF || pp->lines[i].kind == KL_PP_ELIF ||
         pp->lines[i].kind == KL_PP_ELSE;
  if (!n) return;
  out->v = kl_arena_alloc(a, n * sizeof *out->v);
  const char **two = kl_arena_alloc(a, (pp->ngroups + 1) * sizeof *two);
  long *stack = kl_arena_alloc(a, n * sizeof *stack);
  size_t depth = 0;
  for (size_t i = 0; i < pp->nlines; i++) {
    const struct kl_pp_line *l = &pp->lines[i];
    if (l->kind == KL_PP_IF && l->group >= 0 && (size_t)l->group < pp->ngroups)
      two[l->group] = kl_preproc_two_way(pp, l->group, i);
    if (l->kind != KL_PP_IF && l->kind != KL_PP_ELIF && l->kind != KL_PP_ELSE) continue;
    size_t e = kl_preproc_branch_end(pp, i);
    struct kl_pp_arm *r = &out->v[out->n];
    r->from = l->end;
    r->to = e < pp->nlines ? pp->lines[e].start : pp->len;
    r->group = l->group;
    r->if_arm = l->kind == KL_PP_IF;
    r->cond = l->group >= 0 && (size_t)l->group < pp->ngroups ? two[l->group] : NULL;
    /* Branches nest or follow one another, in the order they open. */
    while (depth && out->v[stack[depth - 1]].to <= r->from) depth--;
    r->parent = depth ? stack[depth - 1] : -1;
    stack[depth++] = (long)out->n;
    out->n++;
  }
}

/* The innermost branch holding offset off, or -1. */
static long kl_preproc_arm_at(const struct kl_pp_arms *arms, uint32_t off) {
  size_t lo = 0, hi = arms->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (arms->v[mid].from <= off)
      lo = mid + 1;
    else
      hi = mid;
  }
  long k = (long)lo - 1;
  while (k >= 0 && !(off >= arms->v[k].from && off < arms->v[k].to)) k = arms->v[k].parent;
  return k;
}

bool kl_preproc_exclusive(const struct kl_pp_arms *arms, uint32_t a, uint32_t b) {
  if (!arms->n) return false;
  for (long x = kl_preproc_arm_at(arms, a); x >= 0; x = arms->v[x].parent) {
    const struct kl_pp_arm *ra = &arms->v[x];
    for (long y = kl_preproc_arm_at(arms, b); y >= 0; y = arms->v[y].parent) {
      const struct kl_pp_arm *rb = &arms->v[y];
      if (ra->group == rb->group) {
        if (x != y) return true;
        continue;
      }
      /* Two chains on one condition (`#if ALIGNED` around a load, and again around the
       * store): the `#if` branch of one and the `#else` of the other are never built
       * together. */
      if (ra->cond && rb->cond && ra->if_arm != rb->if_arm && !strcmp(ra->cond, rb->cond))
        return true;
    }
  }
  return false;
}

/* ---- Evaluation ------------------------------------------------------------------------------ */

/* What the build has for one macro name at a point of the file. */
struct kl_pp_macro {
  const char *name;
  size_t n;
  int state;         /* 1 defined, 0 not defined, -1 unknown */
  bool assumed;      /* stated by the assumptions, which no header overrides */
  const char *value; /* when defined: an object-like macro's text, else NULL */
};

struct kl_pp_state {
  struct kl_arena *a;
  struct kl_pp_macro *macros;
  size_t nmacros, cap_macros;
};

static struct kl_pp_macro *kl_pp_find(struct kl_pp_state *st, const char *s, size_t n) {
  for (size_t i = st->nmacros; i-- > 0;)
    if (st->macros[i].n == n && !memcmp(st->macros[i].name, s, n)) return &st->macros[i];
  return NULL;
}

static void kl_pp_set(struct kl_pp_state *st, const char *name, int state, const char *value) {
  size_t n = strlen(name);
  struct kl_pp_macro *m = kl_pp_find(st, name, n);
  if (!m) {
    KL_VEC_PUSH(st->a, st->macros, st->nmacros, st->cap_macros);
    m = &st->macros[st->nmacros++];
    m->name = name;
    m->n = n;
  }
  m->state = state;
  m->value = state == 1 ? value : NULL;
}

static const char *kl_pp_lookup(void *ctx, const char *s, size_t n) {
  struct kl_pp_macro *m = kl_pp_find(ctx, s, n);
  return m && m->state == 1 ? m->value : NULL;
}

static int kl_pp_defined(void *ctx, const char *s, size_t n) {
  struct kl_pp_macro *m = kl_pp_find(ctx, s, n);
  return m ? m->state : -1;
}

static int kl_and3(int x, int y) {
  if (x == 0 || y == 0) return 0;
  return x == 1 && y == 1 ? 1 : -1;
}

static int kl_or3(int x, int y) {
  if (x == 1 || y == 1) return 1;
  return x == 0 && y == 0 ? 0 : -1;
}

static int kl_not3(int x) {
  return x < 0 ? -1 : !x;
}

/* One open #if chain during evaluation: whether its enclosing branch is reached, whether an
 * earlier condition of the chain held, and whether the current branch is taken. */
struct kl_pp_frame {
  int reach, prior, cur;
  int before;  /* prior as it stood before the current branch */
  size_t line; /* the line that opened the current branch */
};

/* `#if ... && defined(M)` around `#undef M`: whether M is sure to be undefined after it, since
 * the branch is taken whenever M is defined (and when M is not defined, it stays so). The
 * three-valued state alone would only say "unknown". */
static bool kl_pp_undef_always(struct kl_pp_state *st, const struct kl_consteval_env *env,
                               const struct kl_pp *pp, const struct kl_pp_line *l,
                               const struct kl_pp_frame *f) {
  if (l->kind != KL_PP_UNDEF || !f || f->reach != 1) return false;
  const struct kl_pp_line *open = &pp->lines[f->line];
  if (open->kind == KL_PP_ELSE || (open->kind == KL_PP_ELIF && f->before != 0)) return false;
  struct kl_pp_macro *m = kl_pp_find(st, l->cond, strlen(l->cond));
  int state = m ? m->state : -1;
  const char *value = m ? m->value : NULL;
  kl_pp_set(st, l->cond, 1, NULL);
  int t = kl_consteval_truth(open->cond, strlen(open->cond), env);
  kl_pp_set(st, l->cond, state, value);
  return t == 1;
}

void kl_preproc_eval(struct kl_arena *a, const struct kl_pp *pp, const struct kl_pp_assume *as,
                     int *taken, int *cond) {
  struct kl_pp_state st = {a, NULL, 0, 0};
  for (size_t i = 0; as && i < as->ndefined; i++)
    kl_pp_set(&st, as->defined[i], 1, as->values && as->values[i] ? as->values[i] : "1");
  for (size_t i = 0; as && i < as->nundefined; i++) kl_pp_set(&st, as->undefined[i], 0, NULL);
  for (size_t i = 0; i < st.nmacros; i++) st.macros[i].assumed = true;
  struct kl_consteval_env env = {kl_pp_lookup, kl_pp_defined, NULL, &st, true};
  struct kl_pp_frame *stack = NULL;
  size_t depth = 0, cap = 0;
  for (size_t i = 0; i < pp->nlines; i++) {
    const struct kl_pp_line *l = &pp->lines[i];
    int reach = depth ? stack[depth - 1].cur : 1;
    int c = -1, t = reach;
    switch (l->kind) {
    case KL_PP_IF:
      c = kl_consteval_truth(l->cond, strlen(l->cond), &env);
      t = kl_and3(reach, c);
      KL_VEC_PUSH(a, stack, depth, cap);
      stack[depth++] = (struct kl_pp_frame){reach, c, t, 0, i};
      break;
    case KL_PP_ELIF:
    case KL_PP_ELSE: {
      if (!depth) break;
      struct kl_pp_frame *f = &stack[depth - 1];
      c = l->kind == KL_PP_ELSE ? 1 : kl_consteval_truth(l->cond, strlen(l->cond), &env);
      t = kl_and3(f->reach, kl_and3(kl_not3(f->prior), c));
      f->before = f->prior;
      f->line = i;
      f->prior = kl_or3(f->prior, c);
      f->cur = t;
      break;
    }
    case KL_PP_ENDIF:
      if (depth) depth--;
      t = depth ? stack[depth - 1].cur : 1;
      break;
    case KL_PP_INCLUDE:
      /* A header may define or undefine anything: what the file said before is open again. */
      for (size_t k = 0; reach != 0 && k < st.nmacros; k++)
        if (!st.macros[k].assumed) st.macros[k].state = -1;
      break;
    case KL_PP_DEFINE:
    case KL_PP_UNDEF:
      /* A definition on a path the build may or may not take leaves the macro unknown. */
      if (reach == 1)
        kl_pp_set(&st, l->cond, l->kind == KL_PP_DEFINE, l->value);
      else if (reach < 0)
        kl_pp_set(&st, l->cond,
                  kl_pp_undef_always(&st, &env, pp, l, depth ? &stack[depth - 1] : NULL) ? 0 : -1,
                  NULL);
      break;
    case KL_PP_ERROR: /* taken[i] says whether the build reaches it */
      break;
    }
    if (taken) taken[i] = t;
    if (cond) cond[i] = c;
  }
}

char *kl_preproc_strip_dead(struct kl_arena *a, const char *text, uint32_t len) {
  /* Most files have no `#if` at all: no scan, no copy. */
  bool any = false;
  for (const char *p = text; !any && (p = memchr(p, '#', (size_t)(text + len - p))) != NULL; p++) {
    const char *q = p + 1;
    while (q < text + len && (*q == ' ' || *q == '\t')) q++;
    any = q + 2 <= text + len && q[0] == 'i' && q[1] == 'f';
  }
  if (!any) return NULL;
  struct kl_pp pp;
  kl_preproc_scan(a, text, len, &pp);
  if (!pp.ngroups) return NULL;
  int *taken = kl_arena_alloc(a, pp.nlines * sizeof *taken);
  kl_preproc_eval(a, &pp, NULL, taken, NULL);
  char *out = NULL;
  for (size_t i = 0; i < pp.nlines; i++) {
    const struct kl_pp_line *l = &pp.lines[i];
    if (taken[i] != 0 || (l->kind != KL_PP_IF && l->kind != KL_PP_ELIF && l->kind != KL_PP_ELSE))
      continue;
    size_t e = kl_preproc_branch_end(&pp, i);
    uint32_t from = l->end, to = e < pp.nlines ? pp.lines[e].start : len;
    if (!out) out = kl_arena_strndup(a, text, len);
    for (uint32_t k = from; k < to; k++)
      if (out[k] != '\n' && out[k] != '\r') out[k] = ' ';
  }
  return out;
}

bool kl_preproc_unconditional(const struct kl_pp *pp, uint32_t off) {
  for (size_t i = 0; i < pp->nlines; i++) {
    const struct kl_pp_line *l = &pp->lines[i];
    if (l->kind != KL_PP_IF || l->start > off) continue;
    /* `#ifndef X` answered by `#define X` on the next directive line: an include guard. */
    const struct kl_pp_line *n = i + 1 < pp->nlines ? &pp->lines[i + 1] : NULL;
    if (n && n->kind == KL_PP_DEFINE && !strncmp(l->cond, "!defined(", 9) &&
        strlen(l->cond) == 10 + strlen(n->cond) && !strncmp(l->cond + 9, n->cond, strlen(n->cond)))
      continue;
    size_t e = i;
    while (e < pp->nlines && !(pp->lines[e].kind == KL_PP_ENDIF && pp->lines[e].group == l->group))
      e++;
    uint32_t end = e < pp->nlines ? pp->lines[e].end : pp->len;
    if (off < end) return false;
  }
  return true;
}
