/* MSL in host string literals: a scan of the file's tokens that only tells literals, comments
 * and the rest apart, as the suppression scanner does; a tree is never built for host code. */
#include "analyzer/input/cstring.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/lex.h"

/* What starts at a literal's first byte: where its quote is, and how its text reads. */
enum kl_cs_kind { KL_CS_NONE, KL_CS_PLAIN, KL_CS_RAW, KL_CS_TRIPLE };

struct kl_cs_scan {
  const char *t;
  uint32_t n;
  bool swift;
};

/* A decoded text growing, with its map to the file. */
struct kl_cs_out {
  char *buf;
  uint32_t len, cap;
  struct kl_offmap map;
  bool template; /* a field the host fills in (Swift's `\(x)`) was met */
};

/* The kind of literal starting at i (a quote, or a prefix before one), its quote in *q. C++'s
 * encoding prefixes are whole identifiers before the quote (`u8R"`, `L"`), so `FOOR"` is no raw
 * string. */
static enum kl_cs_kind kl_cs_start(const struct kl_cs_scan *s, uint32_t i, uint32_t *q) {
  const char *t = s->t;
  if (i >= s->n) return KL_CS_NONE;
  if (t[i] == '"') {
    *q = i;
    if (s->swift && i + 2 < s->n && t[i + 1] == '"' && t[i + 2] == '"') return KL_CS_TRIPLE;
    return KL_CS_PLAIN;
  }
  if (!kl_lex_ident_start(t[i]) || (i > 0 && kl_lex_ident_char(t[i - 1]))) return KL_CS_NONE;
  uint32_t e = i;
  while (e < s->n && kl_lex_ident_char(t[e])) e++;
  if (e >= s->n || t[e] != '"' || s->swift) return KL_CS_NONE;
  uint32_t w = e - i;
  const char *p = t + i;
  *q = e;
  bool raw = p[w - 1] == 'R';
  uint32_t pre = raw ? w - 1 : w; /* the encoding prefix's length */
  if (pre == 0) return raw ? KL_CS_RAW : KL_CS_NONE;
  bool enc = (pre == 2 && p[0] == 'u' && p[1] == '8') ||
             (pre == 1 && (p[0] == 'u' || p[0] == 'U' || p[0] == 'L'));
  if (!enc) return KL_CS_NONE;
  return raw ? KL_CS_RAW : KL_CS_PLAIN;
}

/* A raw literal's delimiter after its quote at q: its length in *dl, false when none is
 * well-formed (at most 16 bytes, none of them a space, backslash or parenthesis). */
static bool kl_cs_raw_delim(const struct kl_cs_scan *s, uint32_t q, uint32_t *dl) {
  uint32_t d = q + 1, k = 0;
  while (d + k < s->n && s->t[d + k] != '(' && k < 16) {
    char c = s->t[d + k];
    if (c == ')' || c == '\\' || c == '"' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
        c == '\v' || c == '\f')
      return false;
    k++;
  }
  if (d + k >= s->n || s->t[d + k] != '(') return false;
  *dl = k;
  return true;
}

/* Where the literal of kind k with its quote at q ends (past its closing quote), and its text
 * [*cs, *ce). An unterminated one ends where the scan stops reading it (a plain one at its line's
 * end, a raw or triple one at the file's). */
static uint32_t kl_cs_end(const struct kl_cs_scan *s, enum kl_cs_kind k, uint32_t q, uint32_t *cs,
                          uint32_t *ce) {
  const char *t = s->t;
  uint32_t n = s->n;
  if (k == KL_CS_RAW) {
    uint32_t dl;
    if (!kl_cs_raw_delim(s, q, &dl)) {
      *cs = *ce = q + 1;
      return q + 1;
    }
    *cs = q + 2 + dl;
    for (uint32_t j = *cs; j + dl + 1 < n; j++)
      if (t[j] == ')' && !memcmp(t + j + 1, t + q + 1, dl) && t[j + 1 + dl] == '"') {
        *ce = j;
        return j + dl + 2;
      }
    *ce = n;
    return n;
  }
  if (k == KL_CS_TRIPLE) {
    *cs = q + 3;
    for (uint32_t j = *cs; j + 2 < n; j++) {
      if (t[j] == '\\') {
        j++;
        continue;
      }
      if (t[j] == '"' && t[j + 1] == '"' && t[j + 2] == '"') {
        *ce = j;
        return j + 3;
      }
    }
    *ce = n;
    return n;
  }
  uint32_t j = q + 1;
  *cs = j;
  while (j < n && t[j] != '"' && t[j] != '\n') {
    /* A backslash before a line break continues the literal on the next line. */
    if (t[j] == '\\' && j + 1 < n) j++;
    j++;
  }
  *ce = j;
  return j < n && t[j] == '"' ? j + 1 : j;
}

static void kl_cs_put(struct kl_cs_out *o, char c, uint32_t file, uint32_t file_len) {
  if (o->len + 1 >= o->cap) {
    o->cap = o->cap ? o->cap * 2 : 1024;
    o->buf = kl_arena_xrealloc(o->buf, o->cap);
  }
  kl_offmap_add(&o->map, o->len, 1, file, file_len);
  o->buf[o->len++] = c;
  o->buf[o->len] = '\0'; /* the text is searched as a C string as it grows */
}

static int kl_cs_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Append the text [cs, ce) of a literal, its escapes undone unless raw. */
static void kl_cs_decode(const struct kl_cs_scan *s, enum kl_cs_kind k, uint32_t cs, uint32_t ce,
                         struct kl_cs_out *o) {
  const char *t = s->t;
  for (uint32_t j = cs; j < ce;) {
    if (k == KL_CS_RAW || t[j] != '\\' || j + 1 >= ce) {
      kl_cs_put(o, t[j], j, 1);
      j++;
      continue;
    }
    char e = t[j + 1], c = e;
    uint32_t end = j + 2;
    switch (e) {
    case 'n': c = '\n'; break;
    case 't': c = '\t'; break;
    case 'r': c = '\r'; break;
    case 'a': c = '\a'; break;
    case 'b': c = '\b'; break;
    case 'f': c = '\f'; break;
    case 'v': c = '\v'; break;
    case '\n':
      /* A line continued: nothing of it is in the text. */
      j += 2;
      continue;
    case '(':
      if (s->swift) o->template = true;
      break;
    case 'x': {
      int v = 0, d;
      while (end < ce && (d = kl_cs_hex(t[end])) >= 0) v = (v * 16 + d) & 0xff, end++;
      c = (char)v;
      break;
    }
    case 'u':
    case 'U': {
      /* A code point: MSL reads none outside comments; a byte stands in for it. C takes 4 or 8
       * hex digits, Swift `\u{...}`. */
      if (s->swift && end < ce && t[end] == '{') {
        while (end < ce && t[end] != '}') end++;
        if (end < ce) end++;
      } else {
        uint32_t want = e == 'u' ? 4 : 8;
        while (end < ce && end < j + 2 + want && kl_cs_hex(t[end]) >= 0) end++;
      }
      c = '?';
      break;
    }
    default:
      if ((unsigned char)e >= 0x80) {
        /* A backslash before a character past ASCII: the whole character is the escape. */
        while (end < ce && ((unsigned char)t[end] & 0xc0) == 0x80) end++;
        c = '?';
        break;
      }
      if (e >= '0' && e <= '7') {
        int v = 0;
        end = j + 1;
        while (end < ce && end < j + 4 && t[end] >= '0' && t[end] <= '7')
          v = v * 8 + t[end++] - '0';
        c = (char)v;
      }
      break;
    }
    /* A NUL or a byte past ASCII spelled as an escape is no MSL a compiler would read as
     * code: a space or a stand-in keeps the text a C string of valid UTF-8. */
    if (c == 0) c = ' ';
    if ((unsigned char)c >= 0x80) c = '?';
    kl_cs_put(o, c, j, end - j);
    j = end;
  }
}

/* Whether c, beside a `{...}` or a `%` conversion, makes it a field of a format: code never puts
 * an initializer's braces against a name, a quote or a template's angle brackets. */
static bool kl_cs_field_side(char c) {
  return kl_lex_ident_char(c) || c == '"' || c == '<' || c == '>' || c == '*' || c == '&';
}

/* Whether c, after `}`, ends a braced initializer (`float acc{0};`, `vec<float, 4>{0})`). */
static bool kl_cs_init_end(char c) {
  return c == ';' || c == ',' || c == ')' || c == '.' || c == '}' || c == ']';
}

/* Whether text is a template the host fills in before it compiles: a `{0}`/`{name}` field of
 * std::format against a name (`gather{0}_{1}`, `device {1}*`, `"{0}"`), not a braced
 * initializer (`acc{0};`); a mustache `{{name}}`; a `$name`, `${name}` or `$0$` of a template
 * engine (MSL has no `$`); or a printf conversion (`%s`, `%d`, `%@`) where no operand stands
 * before it (`device %s *y`, not the modulo `i%d`). */
static bool kl_cs_template(const char *x, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    if (x[i] == '$' && ((i > 0 && kl_lex_ident_char(x[i - 1])) ||
                        (i + 1 < n && (kl_lex_ident_char(x[i + 1]) || x[i + 1] == '{'))))
      return true;
    if (x[i] == '{' && i + 1 < n && x[i + 1] == '{') {
      uint32_t j = i + 2;
      while (j < n && x[j] == ' ') j++;
      uint32_t w = j;
      while (j < n && kl_lex_ident_char(x[j])) j++;
      while (j < n && x[j] == ' ') j++;
      if (j > w && j + 1 < n && x[j] == '}' && x[j + 1] == '}' && kl_lex_ident_start(x[w]))
        return true;
    }
    if (x[i] == '{') {
      uint32_t j = i + 1;
      while (j < n && kl_lex_ident_char(x[j])) j++;
      if (j == i + 1 || j >= n || x[j] != '}') continue;
      char before = i > 0 ? x[i - 1] : ' ', after = j + 1 < n ? x[j + 1] : ' ';
      if ((kl_lex_ident_char(before) || before == '>') && kl_cs_init_end(after)) continue;
      if (kl_cs_field_side(before) || kl_cs_field_side(after)) return true;
    } else if (x[i] == '%' && i + 1 < n) {
      uint32_t j = i + 1;
      while (j < n && (x[j] == 'l' || x[j] == 'z')) j++;
      if (j >= n || !strchr("sdui@", x[j]) || (j + 1 < n && kl_lex_ident_char(x[j + 1])))
        continue;
      char before = i > 0 ? x[i - 1] : ' ';
      if (x[j] == '@' || !(kl_lex_ident_char(before) || before == ')' || before == ']'))
        return true;
    }
  }
  return false;
}

/* Whether text declares a kernel: the word `kernel` before `void`, or as the attribute
 * `[[kernel]]`. */
static bool kl_cs_kernel(const char *x, uint32_t n) {
  for (const char *p = x; (p = strstr(p, "kernel")) != NULL; p += 6) {
    uint32_t i = (uint32_t)(p - x);
    if (!kl_lex_word(x, n, i, "kernel")) continue;
    uint32_t a = kl_lex_space(x, n, i + 6);
    if (kl_lex_word(x, n, a, "void")) return true;
    uint32_t b = i;
    while (b > 0 && (x[b - 1] == ' ' || x[b - 1] == '\t')) b--;
    if (b >= 2 && x[b - 1] == '[' && x[b - 2] == '[' && a + 1 < n && x[a] == ']' &&
        x[a + 1] == ']')
      return true;
  }
  return false;
}

/* Whether the file bytes [s, e) hold the word `kernel` at all: most literals of host code are
 * messages and names, and are never decoded. */
static bool kl_cs_mentions(const char *t, uint32_t s, uint32_t e) {
  for (uint32_t i = s; i + 6 <= e; i++)
    if (t[i] == 'k' && !memcmp(t + i, "kernel", 6)) return true;
  return false;
}

size_t kl_cstring_find(struct kl_arena *a, const struct kl_source *src, struct kl_cstring **out) {
  const char *dot = strrchr(src->path, '.');
  struct kl_cs_scan s = {src->text, src->len, dot && !strcmp(dot, ".swift")};
  const char *t = s.t;
  uint32_t n = s.n;
  struct kl_cstring *v = NULL;
  size_t nv = 0, cap = 0;
  for (uint32_t i = 0; i < n;) {
    char c = t[i];
    if (c == '/') {
      uint32_t j = kl_lex_skip_comment(t, n, i);
      i = j > i ? j : i + 1;
      continue;
    }
    if (c == '\'') {
      i = kl_lex_skip_literal(t, n, i);
      continue;
    }
    if (c >= '0' && c <= '9') {
      i = kl_lex_skip_number(t, n, i);
      continue;
    }
    uint32_t q;
    enum kl_cs_kind k = kl_cs_start(&s, i, &q);
    if (k == KL_CS_NONE) {
      if (kl_lex_ident_start(c))
        while (i < n && kl_lex_ident_char(t[i])) i++;
      else
        i++;
      continue;
    }
    /* A run of literals with only space, comments and Objective-C's `@` between them is one
     * text (C's concatenation of adjacent literals). */
    uint32_t first = i, end = i, cs, ce;
    for (;;) {
      end = kl_cs_end(&s, k, q, &cs, &ce);
      uint32_t j = kl_lex_space(t, n, end);
      if (j < n && t[j] == '@') j++;
      k = kl_cs_start(&s, j, &q);
      if (k == KL_CS_NONE) break;
    }
    if (kl_cs_mentions(t, first, end)) {
      struct kl_cs_out o = {0};
      kl_offmap_init(&o.map, a);
      uint32_t j = first;
      while ((k = kl_cs_start(&s, j, &q)) != KL_CS_NONE && j < end) {
        uint32_t e = kl_cs_end(&s, k, q, &cs, &ce);
        kl_cs_decode(&s, k, cs, ce, &o);
        j = kl_lex_space(t, n, e);
        if (j < n && t[j] == '@') j++;
      }
      if (o.len && !o.template && kl_cs_kernel(o.buf, o.len) && !kl_cs_template(o.buf, o.len)) {
        KL_VEC_PUSH(a, v, nv, cap);
        v[nv++] = (struct kl_cstring){kl_arena_strndup(a, o.buf, o.len), o.len, o.map, first, end};
      }
      free(o.buf);
    }
    i = end > i ? end : i + 1;
  }
  *out = v;
  return nv;
}
