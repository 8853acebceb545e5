/* Explicit instantiations read from text (see inst.h). */
#include "grammar/inst.h"

#include <string.h>

#include "grammar/lex.h"

/* The name `host_name(...)` in t[from, to) gives: its string literals joined, or its argument
 * as written when that is no string, as the model reads the attribute. */
static const char *kl_inst_host_name(struct kl_arena *a, const char *t, uint32_t from,
                                     uint32_t to) {
  for (uint32_t i = from; i < to; i++) {
    if (t[i] == '"' || t[i] == '\'') {
      i = kl_lex_skip_literal(t, to, i) - 1;
      continue;
    }
    if (!kl_lex_word(t, to, i, "host_name")) continue;
    uint32_t j = kl_lex_space(t, to, i + 9);
    if (j >= to || t[j] != '(') return NULL;
    j = kl_lex_space(t, to, j + 1);
    if (j >= to || t[j] == ')') return NULL;
    if (t[j] != '"') {
      uint32_t s = j;
      for (int depth = 0; j < to; j++) {
        if (t[j] == '(') depth++;
        if ((t[j] == ')' && depth-- == 0) || (t[j] == ',' && depth == 0)) break;
      }
      return kl_lex_collapse(a, t, s, j);
    }
    char *out = kl_arena_alloc(a, to - j + 1);
    size_t n = 0;
    while (j < to && t[j] == '"') {
      uint32_t e = kl_lex_skip_literal(t, to, j);
      if (e < j + 2 || t[e - 1] != '"') break;
      memcpy(out + n, t + j + 1, e - j - 2);
      n += e - j - 2;
      j = kl_lex_space(t, to, e);
    }
    out[n] = '\0';
    return out;
  }
  return NULL;
}

/* The '>' that closes the template argument list opened at t[q], or 0. */
static uint32_t kl_inst_angle_end(const char *t, uint32_t n, uint32_t q) {
  int angle = 0, paren = 0;
  for (uint32_t k = q; k < n; k++) {
    char c = t[k];
    if (c == '"' || c == '\'') {
      k = kl_lex_skip_literal(t, n, k) - 1;
    } else if (c == ';' || c == '{' || c == '}' || kl_lex_skip_comment(t, n, k) > k) {
      return 0;
    } else if (c == '(' || c == '[') {
      paren++;
    } else if (c == ')' || c == ']') {
      if (paren-- == 0) return 0;
    } else if (paren == 0 && c == '<') {
      angle++;
    } else if (paren == 0 && c == '>' && --angle == 0) {
      return k;
    }
  }
  return 0;
}

/* The template arguments in t[s, e), split at top-level commas. */
static size_t kl_inst_targs(struct kl_arena *a, const char *t, uint32_t s, uint32_t e,
                          const char ***out) {
  const char **v = NULL;
  size_t n = 0, cap = 0;
  /* Brackets nest anywhere; `<` and `>` only outside them (`(1 << 3)` opens no list), as
   * kl_inst_angle_end reads the list's end. */
  int depth = 0, angle = 0;
  for (uint32_t k = s, from = s; k <= e; k++) {
    char c = k < e ? t[k] : ',';
    if (k < e && (c == '"' || c == '\'')) {
      k = kl_lex_skip_literal(t, e, k) - 1;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') depth++;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
    if (depth == 0 && c == '<') angle++;
    if (depth == 0 && c == '>' && angle > 0) angle--;
    if (c != ',' || ((depth > 0 || angle > 0) && k < e)) continue;
    const char *arg = kl_lex_collapse(a, t, from, k);
    if (*arg) {
      KL_VEC_PUSH(a, v, n, cap);
      v[n++] = arg;
    }
    from = k + 1;
  }
  *out = v;
  return n;
}

bool kl_inst_read(struct kl_arena *a, const char *t, uint32_t n, uint32_t i, struct kl_inst *out,
                  uint32_t *end) {
  if (!kl_lex_word(t, n, i, "template")) return false;
  uint32_t j = kl_lex_space(t, n, i + 8);
  if (j >= n || t[j] == '<') return false;
  /* The declarator is the last template-id outside brackets that a parameter list or the `;`
   * follows: `decltype(f<T>) f<T>;`, `K f<T>;`, `void f<T>(...)`, `ns::f<T>;`. */
  uint32_t name_s = 0, name_e = 0, args_s = 0, args_e = 0, decl = 0, semi = 0;
  uint32_t prev_s = 0, prev_e = 0;
  int depth = 0;
  for (uint32_t k = j; k < n && !semi;) {
    char c = t[k];
    uint32_t cm = kl_lex_skip_comment(t, n, k);
    if (cm > k) {
      /* A comment among the arguments is not worth the risk: the tree reads those. */
      k = cm;
      continue;
    }
    if (c == '"' || c == '\'') {
      k = kl_lex_skip_literal(t, n, k);
    } else if (c == '#') {
      return false; /* a directive inside the statement */
    } else if (c == '{' || c == '}') {
      return false;
    } else if (c == '(' || c == '[') {
      depth++;
      k++;
    } else if (c == ')' || c == ']') {
      if (depth-- == 0) return false;
      k++;
    } else if (c == ';') {
      if (depth != 0) return false;
      semi = k;
    } else if (depth == 0 && kl_lex_ident_start(c)) {
      uint32_t ws = k, last = k;
      while (k < n && kl_lex_ident_char(t[k])) k++;
      while (k + 2 < n && t[k] == ':' && t[k + 1] == ':' && kl_lex_ident_start(t[k + 2])) {
        last = k += 2;
        while (k < n && kl_lex_ident_char(t[k])) k++;
      }
      uint32_t we = k, q = kl_lex_space(t, n, k);
      if (q < n && t[q] == '<') {
        uint32_t close = kl_inst_angle_end(t, n, q);
        if (!close) return false;
        uint32_t after = kl_lex_space(t, n, close + 1);
        if (after < n && (t[after] == '(' || t[after] == ';')) {
          /* `template struct S<int>;` instantiates a class: the model wants functions. */
          static const char *const tags[] = {"struct", "class", "union", "enum"};
          for (size_t g = 0; g < 4 && prev_e; g++)
            if (prev_e - prev_s == strlen(tags[g]) && !memcmp(t + prev_s, tags[g], prev_e - prev_s))
              return false;
          name_s = last;
          name_e = we;
          args_s = q + 1;
          args_e = close;
          decl = ws;
        }
        k = close + 1;
      }
      prev_s = ws;
      prev_e = we;
    } else {
      k++;
    }
  }
  if (!semi || !name_e) return false;
  for (uint32_t k = args_s; k < args_e; k++)
    if (kl_lex_skip_comment(t, args_e, k) > k) return false;
  memset(out, 0, sizeof *out);
  out->function = kl_arena_strndup(a, t + name_s, name_e - name_s);
  out->host_name = kl_inst_host_name(a, t, j, decl);
  out->ntargs = kl_inst_targs(a, t, args_s, args_e, &out->targs);
  out->start = i;
  out->end = semi + 1;
  out->text = t + i;
  out->textlen = semi + 1 - i;
  *end = semi + 1;
  return true;
}
