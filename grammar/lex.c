/* Lexical scanning of C-family text (see lex.h). */
#include "grammar/lex.h"

#include <string.h>

uint32_t kl_lex_skip_number(const char *t, uint32_t len, uint32_t i) {
  while (i < len) {
    char c = t[i];
    if ((c == '+' || c == '-') &&
        (t[i - 1] == 'e' || t[i - 1] == 'E' || t[i - 1] == 'p' || t[i - 1] == 'P')) {
      i++;
    } else if (kl_lex_ident_char(c) || c == '.' || c == '\'') {
      i++;
    } else {
      break;
    }
  }
  return i;
}

uint32_t kl_lex_skip_literal(const char *t, uint32_t len, uint32_t i) {
  char q = t[i];
  for (i++; i < len && t[i] != q && t[i] != '\n'; i++)
    if (t[i] == '\\' && i + 1 < len) i++;
  return i < len && t[i] == q ? i + 1 : i;
}

uint32_t kl_lex_skip_comment_slow(const char *t, uint32_t len, uint32_t i) {
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

uint32_t kl_lex_space(const char *t, uint32_t len, uint32_t i) {
  for (;;) {
    while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
    uint32_t c = kl_lex_skip_comment(t, len, i);
    if (c == i) return i;
    i = c;
  }
}

bool kl_lex_word(const char *t, uint32_t len, uint32_t i, const char *w) {
  size_t n = strlen(w);
  return i + n <= len && !memcmp(t + i, w, n) && (i == 0 || !kl_lex_ident_char(t[i - 1])) &&
         (i + n == len || !kl_lex_ident_char(t[i + n]));
}

char *kl_lex_collapse(struct kl_arena *a, const char *t, uint32_t s, uint32_t e) {
  char *out = kl_arena_alloc(a, e - s + 1);
  size_t k = 0;
  bool space = false;
  for (uint32_t i = s; i < e; i++) {
    char c = t[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = k > 0;
      continue;
    }
    if (space) out[k++] = ' ';
    space = false;
    out[k++] = c;
  }
  out[k] = '\0';
  return out;
}
