/* The language server's text: LSP positions of a document's bytes and back, content changes
 * applied to a buffer, the edits of fixes and suppression comments, and file URIs. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/lsp/text.h"
#include "analyzer/report/suppress.h"

/* ---- positions ---- */

static uint32_t kl_text_line_of(const struct kl_source *src, uint32_t off) {
  uint32_t lo = 0, hi = src->nlines ? src->nlines - 1 : 0;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo + 1) / 2;
    if (src->line_starts[mid] <= off)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

json_t *kl_text_position(const struct kl_source *src, uint32_t off, enum kl_text_encoding enc) {
  if (off > src->len) off = src->len;
  uint32_t line = src->nlines ? kl_text_line_of(src, off) : 0;
  uint32_t ls = src->nlines ? src->line_starts[line] : 0, ch = 0;
  if (enc == KL_TEXT_UTF8 || (src->nlines && src->line_ascii[line])) {
    ch = off - ls;
  } else {
    /* Count the characters that start before off; one past U+FFFF is two UTF-16 units. */
    for (uint32_t i = ls; i < off; i++) {
      unsigned char c = (unsigned char)src->text[i];
      if ((c & 0xC0) == 0x80) continue;
      ch += (enc == KL_TEXT_UTF16 && c >= 0xF0) ? 2 : 1;
    }
  }
  return json_pack("{s:I, s:I}", "line", (json_int_t)line, "character", (json_int_t)ch);
}

json_t *kl_text_range(const struct kl_source *src, uint32_t start, uint32_t end,
                      enum kl_text_encoding enc) {
  if (end < start) end = start;
  return json_pack("{s:o, s:o}", "start", kl_text_position(src, start, enc), "end",
                   kl_text_position(src, end, enc));
}

json_t *kl_text_edit(const struct kl_source *src, uint32_t start, uint32_t end, const char *text,
                     enum kl_text_encoding enc) {
  return json_pack("{s:o, s:s}", "range", kl_text_range(src, start, end, enc), "newText", text);
}

json_t *kl_text_workspace_edit(const char *uri, json_t *edits) {
  json_t *changes = json_object();
  json_object_set_new(changes, uri, edits);
  return json_pack("{s:o}", "changes", changes);
}

json_t *kl_text_fix_edit(const struct kl_source *src, const struct kl_fix *f, const char *uri,
                         enum kl_text_encoding enc) {
  json_t *edits = json_array();
  for (size_t i = 0; i < f->nedits; i++)
    json_array_append_new(edits, kl_text_edit(src, f->edits[i].start, f->edits[i].end,
                                              f->edits[i].text ? f->edits[i].text : "", enc));
  return kl_text_workspace_edit(uri, edits);
}

/* ---- URIs ---- */

static int kl_text_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char *kl_text_uri_path(const char *uri) {
  if (strncmp(uri, "file://", 7) != 0) return NULL;
  const char *p = uri + 7;
  /* The authority: empty or localhost; a file on another host is not one we can read. */
  if (!strncmp(p, "localhost/", 10)) p += 9;
  if (*p != '/') return NULL;
  size_t n = strlen(p);
  char *out = kl_arena_xmalloc(n + 1), *o = out;
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '?' || p[i] == '#') break;
    if (p[i] != '%') {
      *o++ = p[i];
      continue;
    }
    int hi = i + 2 < n ? kl_text_hex(p[i + 1]) : -1;
    int lo = hi >= 0 ? kl_text_hex(p[i + 2]) : -1;
    if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
      free(out);
      return NULL;
    }
    *o++ = (char)(hi * 16 + lo);
    i += 2;
  }
  *o = '\0';
  return out;
}

/* ---- suppression comments ---- */

/* Where a line stands, from a scan of the file up to its end with the comment and literal rules
 * of suppress.c (C-like files, or Python with MSL comments inside its strings). */
struct kl_text_lineinfo {
  uint32_t ls, le;     /* the line's first byte, and its newline (or the end of the file) */
  uint32_t opener;     /* first comment on the line that runs to its end; UINT32_MAX: none */
  bool opener_hash;    /* it is a Python # comment */
  uint32_t directive;  /* first kernlint-disable-line comment on the line; UINT32_MAX: none */
  bool start_in_token; /* the line starts inside a comment or literal */
  enum { KL_END_CODE, KL_END_TRIPLE, KL_END_OTHER } end; /* where the line's end is */
};

static uint32_t kl_text_eol(const char *t, uint32_t n, uint32_t i) {
  while (i < n && t[i] != '\n') i++;
  return i;
}

static bool kl_text_directive(const char *t, uint32_t n, uint32_t i, const char *name,
                              uint32_t *after);

/* Note a comment at i that ends at e (exclusive; the newline for a line comment). */
static void kl_text_opener(const struct kl_source *src, struct kl_text_lineinfo *li, uint32_t i,
                           uint32_t e, bool hash) {
  if (i < li->ls || i >= li->le) return;
  uint32_t after;
  if (li->directive == UINT32_MAX &&
      kl_text_directive(src->text, src->len, i, "kernlint-disable-line", &after))
    li->directive = i;
  if (li->opener == UINT32_MAX && e >= li->le) {
    li->opener = i;
    li->opener_hash = hash;
  }
}

/* Whether a token [from, to) hides the line's start. */
static void kl_text_token(struct kl_text_lineinfo *li, uint32_t from, uint32_t to) {
  if (from < li->ls && to > li->ls) li->start_in_token = true;
}

static void kl_text_scan_c(const struct kl_source *src, struct kl_text_lineinfo *li) {
  const char *t = src->text;
  uint32_t n = src->len;
  for (uint32_t i = 0; i < li->le; i++) {
    char c = t[i];
    uint32_t e; /* the token's end (exclusive) */
    if (c == '/' && i + 1 < n && (t[i + 1] == '/' || t[i + 1] == '*')) {
      e = t[i + 1] == '/' ? kl_text_eol(t, n, i) : kl_suppress_block_end(t, n, i);
      /* A block comment left open runs to the end of the file, the last line included. */
      if (t[i + 1] == '*' && !(e >= i + 4 && t[e - 2] == '*' && t[e - 1] == '/')) e = n + 1;
      kl_text_opener(src, li, i, e, false);
    } else if (c == '"') {
      e = kl_suppress_raw_string(t, n, i, n + 1);
      if (!e) {
        for (e = i + 1; e < n && t[e] != '"' && t[e] != '\n'; e++)
          if (t[e] == '\\') e++;
        /* Left open, the literal runs to the end of the line: a comment there is its text. */
        e = e < n && t[e] == '"' ? e + 1 : e + 1 + (e >= li->le);
      }
    } else if (c == '\'') {
      /* A quote inside a number is a C++14 digit separator, not a character literal. */
      uint32_t b = i;
      while (b > 0 && (kl_suppress_ident(t[b - 1]) || t[b - 1] == '\'' || t[b - 1] == '.')) b--;
      if (b < i && t[b] >= '0' && t[b] <= '9') continue;
      for (e = i + 1; e < n && t[e] != '\'' && t[e] != '\n'; e++)
        if (t[e] == '\\') e++;
      e = e < n && t[e] == '\'' ? e + 1 : e + 1 + (e >= li->le);
    } else {
      continue;
    }
    kl_text_token(li, i, e);
    if (e > li->le) {
      li->end = KL_END_OTHER;
      return;
    }
    i = e > i ? e - 1 : i;
  }
}

static void kl_text_scan_python(const struct kl_source *src, struct kl_text_lineinfo *li) {
  const char *t = src->text;
  uint32_t n = src->len;
  for (uint32_t i = 0; i < li->le; i++) {
    char c = t[i];
    if (c == '#') {
      uint32_t e = kl_text_eol(t, n, i);
      kl_text_opener(src, li, i, e, true);
      kl_text_token(li, i, e);
      if (e >= li->le) return;
      i = e;
      continue;
    }
    if (c != '"' && c != '\'') continue;
    bool triple = i + 2 < n && t[i + 1] == c && t[i + 2] == c;
    uint32_t q = triple ? 3 : 1, body = i + q, close = n, after = n;
    /* Left open: past the end, as for C. */
    if (!kl_suppress_py_string(t, n, i, &close, &after)) close = n, after = n + 1;
    kl_text_token(li, i, after);
    /* MSL comments inside the string, as suppress.c finds them. */
    bool in_block = false;
    for (uint32_t k = body; k + 1 < close && k < li->le; k++) {
      if (t[k] != '/') continue;
      if (t[k + 1] == '/') {
        uint32_t e = kl_text_eol(t, close, k);
        /* A comment that the string's closing quote ends still ends the MSL line. */
        kl_text_opener(src, li, k, e == close ? li->le : e, false);
        k = e;
      } else if (t[k + 1] == '*') {
        uint32_t e = kl_suppress_block_end(t, close, k);
        if (!(e >= k + 4 && t[e - 2] == '*' && t[e - 1] == '/')) e = close + 1;
        kl_text_opener(src, li, k, e, false);
        if (e > li->le) in_block = true;
        k = e - 1;
      }
    }
    /* A string left open (at the end of the file, or of its line) holds the line's end too. */
    bool open = close == n || t[close] != c;
    if (close > li->le || (open && close >= li->le)) {
      li->end = triple && !in_block ? KL_END_TRIPLE : KL_END_OTHER;
      return;
    }
    i = after - 1;
  }
}

/* Length of the opener of the comment at i: slashes, a block opener or hashes, and a `!`. */
static uint32_t kl_text_opener_len(const char *t, uint32_t n, uint32_t i) {
  uint32_t j = i;
  if (t[j] == '#') {
    while (j < n && t[j] == '#') j++;
  } else if (j + 1 < n && t[j + 1] == '*') {
    j++;
    while (j < n && t[j] == '*') j++;
  } else {
    while (j < n && t[j] == '/') j++;
  }
  if (j < n && t[j] == '!') j++;
  return j - i;
}

/* Whether the comment at i starts with the directive name (kernlint-disable-line, or with
 * name NULL any kernlint directive); *after is past the name. */
static bool kl_text_directive(const char *t, uint32_t n, uint32_t i, const char *name,
                              uint32_t *after) {
  uint32_t j = i + kl_text_opener_len(t, n, i);
  while (j < n && (t[j] == ' ' || t[j] == '\t')) j++;
  if (!name)
    return n - j >= 16 &&
           (!strncmp(t + j, "kernlint-disable", 16) || !strncmp(t + j, "kernlint-enable", 15));
  size_t len = strlen(name);
  if (n - j < len || strncmp(t + j, name, len) != 0) return false;
  j += (uint32_t)len;
  if (j < n && (kl_suppress_ident(t[j]) || t[j] == '-')) return false;
  *after = j;
  return true;
}

/* End of the last rule id of the directive whose name ends at i, on the line ending at le (or at
 * a block comment's end), read the way suppress.c reads ids; i itself when there are none. */
static uint32_t kl_text_ids_end(const char *t, uint32_t n, uint32_t i, uint32_t le) {
  uint32_t last = i;
  if (i < le && t[i] == ':') last = ++i;
  while (i < le) {
    char c = t[i];
    if (c == ' ' || c == '\t' || c == ',' || c == '\r') {
      i++;
      continue;
    }
    if (c == '"' || c == '\'' || c == '\\' || (c == '*' && i + 1 < n && t[i + 1] == '/') ||
        (c == '-' && i + 1 < le && t[i + 1] == '-') ||
        (c == '/' && i + 1 < le && (t[i + 1] == '/' || t[i + 1] == '*')) || c == '#')
      break;
    while (i < le && t[i] != ' ' && t[i] != '\t' && t[i] != ',' && t[i] != '\r' && t[i] != '"' &&
           t[i] != '\'' && t[i] != '\\' && !(t[i] == '*' && i + 1 < n && t[i + 1] == '/'))
      i++;
    last = i;
  }
  return last;
}

char *kl_text_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = kl_arena_xmalloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(s, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return s;
}

char *kl_text_suppress_edit(const struct kl_source *src, uint32_t line, const char *rule,
                            uint32_t *start, uint32_t *end) {
  if (line < 1 || line > src->nlines) return NULL;
  const char *t = src->text;
  uint32_t n = src->len;
  struct kl_text_lineinfo li = {0};
  li.ls = src->line_starts[line - 1];
  li.le = kl_text_eol(t, n, li.ls);
  li.opener = li.directive = UINT32_MAX;
  bool python = src->lang == KL_LANG_PYTHON;
  if (python)
    kl_text_scan_python(src, &li);
  else
    kl_text_scan_c(src, &li);
  uint32_t ins = li.le;
  if (ins > li.ls && t[ins - 1] == '\r') ins--;
  uint32_t after;
  if (li.directive != UINT32_MAX) {
    /* One comment per line names every rule it silences. */
    kl_text_directive(t, n, li.directive, "kernlint-disable-line", &after);
    uint32_t stop = li.le;
    if (t[li.directive] == '/' && t[li.directive + 1] == '*') {
      uint32_t be = kl_suppress_block_end(t, n, li.directive);
      if (be < stop) stop = be;
    }
    uint32_t at = kl_text_ids_end(t, n, after, stop);
    *start = *end = at;
    /* The new id must end where suppress.c ends one, or it takes in what follows. */
    char c = at < n ? t[at] : '\n';
    bool ends = strchr(" \t,\r\n\"'\\", c) || (c == '*' && at + 1 < n && t[at + 1] == '/');
    return kl_text_printf(at == after || t[at - 1] == ':' ? " %s%s" : ", %s%s", rule,
                          ends ? "" : " ");
  }
  if (li.opener != UINT32_MAX && !li.opener_hash) {
    /* A // comment runs to the end of the line: the directive goes before it, in a block. */
    *start = *end = li.opener;
    return kl_text_printf("/* kernlint-disable-line %s */ ", rule);
  }
  if (li.opener != UINT32_MAX && !kl_text_directive(t, n, li.opener, NULL, &after)) {
    /* Python has one comment per line: the one there becomes the directive's reason. */
    uint32_t j = li.opener + kl_text_opener_len(t, n, li.opener);
    while (j < li.le && (t[j] == ' ' || t[j] == '\t')) j++;
    *start = li.opener;
    *end = j;
    return kl_text_printf(j < ins ? "# kernlint-disable-line %s -- " : "# kernlint-disable-line %s",
                          rule);
  }
  if (li.opener == UINT32_MAX && li.end == KL_END_CODE) {
    *start = *end = ins;
    return kl_text_printf(python ? "  # kernlint-disable-line %s" : " // kernlint-disable-line %s",
                          rule);
  }
  if (li.opener == UINT32_MAX && li.end == KL_END_TRIPLE) {
    /* Inside a kernel string a # would be MSL text: the comment is MSL's, in the string. */
    *start = *end = ins;
    return kl_text_printf(" // kernlint-disable-line %s", rule);
  }
  if (li.start_in_token) return NULL;
  /* A line a backslash continues (a string's escaped newline, a macro's, Python's explicit
   * joining) takes the line put above it into what it continues: no edit. */
  uint32_t pe = li.ls;
  if (pe > 0 && t[pe - 1] == '\n') pe--;
  if (pe > 0 && t[pe - 1] == '\r') pe--;
  if (pe < li.ls && pe > 0 && t[pe - 1] == '\\') return NULL;
  /* The line ends inside a comment or literal, or has another directive: say it from above. */
  uint32_t ind = li.ls;
  while (ind < li.le && (t[ind] == ' ' || t[ind] == '\t')) ind++;
  *start = *end = li.ls;
  return kl_text_printf("%.*s%s kernlint-disable-next-line %s\n", (int)(ind - li.ls), t + li.ls,
                        python ? "#" : "//", rule);
}

/* ---- content changes ---- */

/* A Position's field: a non-negative integer that fits, or -1. */
static long long kl_text_field(json_t *pos, const char *key) {
  json_t *v = json_object_get(pos, key);
  if (!json_is_integer(v)) return -1;
  json_int_t x = json_integer_value(v);
  return x < 0 || x > (json_int_t)UINT32_MAX ? -1 : (long long)x;
}

int kl_text_offset(const char *text, size_t len, json_t *pos, enum kl_text_encoding enc,
                   size_t *off) {
  long long line = kl_text_field(pos, "line"), ch = kl_text_field(pos, "character");
  if (!json_is_object(pos) || line < 0 || ch < 0) return -1;
  /* Lines end at \n, as the source's lines (and so every position published) do. */
  size_t i = 0;
  for (long long l = 0; l < line; l++) {
    const char *nl = memchr(text + i, '\n', len - i);
    if (!nl) {
      *off = len;
      return 0;
    }
    i = (size_t)(nl - text) + 1;
  }
  const char *nl = memchr(text + i, '\n', len - i);
  size_t le = nl ? (size_t)(nl - text) : len;
  if (le > i && text[le - 1] == '\r') le--;
  unsigned long long units = 0;
  while (i < le && units < (unsigned long long)ch) {
    unsigned char c = (unsigned char)text[i];
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (n > le - i) n = le - i;
    unsigned w = enc == KL_TEXT_UTF8 ? (unsigned)n : (enc == KL_TEXT_UTF16 && n == 4) ? 2 : 1;
    /* A position inside a character (between a surrogate pair's halves, or inside a UTF-8
     * sequence) is taken at the character's start. */
    if (units + w > (unsigned long long)ch) break;
    units += w;
    i += n;
    while (enc != KL_TEXT_UTF8 && i < le && ((unsigned char)text[i] & 0xC0) == 0x80) i++;
  }
  *off = i;
  return 0;
}

int kl_text_apply_change(char **text, size_t *len, json_t *change, enum kl_text_encoding enc,
                         char *why, size_t whylen) {
  json_t *t = json_object_get(change, "text");
  if (!json_is_object(change) || !json_is_string(t)) {
    snprintf(why, whylen, "a content change needs a text");
    return -1;
  }
  const char *nt = json_string_value(t);
  size_t nlen = json_string_length(t);
  json_t *range = json_object_get(change, "range");
  size_t a = 0, b = *len;
  if (range) {
    if (!json_is_object(range) ||
        kl_text_offset(*text, *len, json_object_get(range, "start"), enc, &a) != 0 ||
        kl_text_offset(*text, *len, json_object_get(range, "end"), enc, &b) != 0) {
      snprintf(why, whylen, "a content change's range is not a Range");
      return -1;
    }
    /* An end before its start is the same span, as an editor's selection may be. */
    if (b < a) {
      size_t x = a;
      a = b;
      b = x;
    }
  }
  if (*len - (b - a) > SIZE_MAX - nlen - 1) {
    snprintf(why, whylen, "a content change makes the document too large");
    return -1;
  }
  size_t n = *len - (b - a) + nlen;
  char *out = kl_arena_xmalloc(n + 1);
  memcpy(out, *text, a);
  memcpy(out + a, nt, nlen);
  memcpy(out + a + nlen, *text + b, *len - b);
  out[n] = '\0';
  free(*text);
  *text = out;
  *len = n;
  return 0;
}
