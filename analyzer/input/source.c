#include "analyzer/input/source.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum kl_lang kl_source_lang(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot) return KL_LANG_UNKNOWN;
  if (!strcmp(dot, ".metal") || !strcmp(dot, ".h") || !strcmp(dot, ".hpp")) return KL_LANG_METAL;
  if (!strcmp(dot, ".py")) return KL_LANG_PYTHON;
  if (!strcmp(dot, ".mm") || !strcmp(dot, ".m") || !strcmp(dot, ".cpp") || !strcmp(dot, ".cc") ||
      !strcmp(dot, ".swift"))
    return KL_LANG_HOST;
  return KL_LANG_UNKNOWN;
}

size_t kl_source_utf8_seq(const unsigned char *s, size_t avail) {
  if (avail == 0) return 0;
  unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t n;
  unsigned lo = 0x80, hi = 0xBF;
  /* Overlongs, surrogates and code points past U+10FFFF are invalid, as in the standard. */
  if (c >= 0xC2 && c <= 0xDF) {
    n = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (avail <= n || s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k <= n; k++)
    if ((s[k] & 0xC0) != 0x80) return 0;
  return n + 1;
}

/* Bits that are set in a word of 8 bytes when one of them is not ASCII. */
#define KL_SOURCE_HIGH 0x8080808080808080u

/* Offset of the first invalid UTF-8 sequence, or len when the text is valid. */
static size_t kl_utf8_invalid_at(const unsigned char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    /* Source text is mostly ASCII: 8 bytes at a time until a word holds a byte that is not. */
    uint64_t w;
    if (i + 8 <= len && (memcpy(&w, s + i, 8), !(w & KL_SOURCE_HIGH))) {
      i += 8;
      continue;
    }
    size_t k = kl_source_utf8_seq(s + i, len - i);
    if (k == 0) return i;
    i += k;
  }
  return len;
}

/* Whether t[0, n) is all ASCII. */
static bool kl_source_ascii(const char *t, size_t n) {
  uint64_t acc = 0, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, t + i, 8);
    acc |= w;
  }
  for (; i < n; i++) acc |= (unsigned char)t[i];
  return !(acc & KL_SOURCE_HIGH);
}

static void kl_source_index_lines(struct kl_arena *a, struct kl_source *s) {
  const char *t = s->text, *end = t + s->len;
  uint32_t n = 1;
  for (const char *p = t; (p = memchr(p, '\n', (size_t)(end - p))); p++) n++;
  s->line_starts = kl_arena_alloc(a, sizeof(uint32_t) * n);
  s->nlines = n;
  s->line_ascii = kl_arena_alloc(a, n);
  uint32_t k = 0;
  const char *line = t;
  for (const char *p; (p = memchr(line, '\n', (size_t)(end - line))); line = p + 1) {
    s->line_starts[k] = (uint32_t)(line - t);
    s->line_ascii[k++] = kl_source_ascii(line, (size_t)(p - line));
  }
  s->line_starts[k] = (uint32_t)(line - t);
  s->line_ascii[k] = kl_source_ascii(line, (size_t)(end - line));
}

int kl_source_from_memory(struct kl_arena *a, const char *path, const char *bytes, size_t len,
                          struct kl_source *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  out->path = kl_arena_strdup(a, path);
  out->lang = kl_source_lang(path);
  if (len > KL_SOURCE_MAX_BYTES) {
    snprintf(err, errlen, "file too large (%.1f MB; the limit is %u MB)",
             (double)len / (1024.0 * 1024.0), KL_SOURCE_MAX_BYTES / (1024u * 1024u));
    return -1;
  }
  const void *nul = memchr(bytes, '\0', len);
  if (nul) {
    snprintf(err, errlen, "binary file (NUL byte at offset %zu)",
             (size_t)((const char *)nul - bytes));
    return -1;
  }
  size_t bad = kl_utf8_invalid_at((const unsigned char *)bytes, len);
  if (bad < len) {
    size_t line = 1;
    for (size_t i = 0; i < bad; i++)
      if (bytes[i] == '\n') line++;
    snprintf(err, errlen, "invalid UTF-8 at line %zu (byte offset %zu)", line, bad);
    return -1;
  }
  /* An empty file is valid, as it is to every linter: it has one empty line and no findings. */
  out->text = len ? kl_arena_strndup(a, bytes, len) : kl_arena_strdup(a, "");
  out->len = (uint32_t)len;
  kl_source_index_lines(a, out);
  return 0;
}

int kl_source_read(FILE *f, size_t size_hint, char **bytes, size_t *len) {
  /* One byte past the limit is enough for the validator to refuse an input that is too big,
   * even a file that grew since it was stat'ed. */
  size_t n = 0, cap = size_hint ? size_hint : 1;
  char *buf = kl_arena_xmalloc(cap);
  for (;;) {
    if (n == cap) {
      if (cap > KL_SOURCE_MAX_BYTES) break;
      cap *= 2;
      buf = kl_arena_xrealloc(buf, cap);
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int saved = errno; /* the caller reports the read's errno, not free's */
    free(buf);
    errno = saved;
    return -1;
  }
  *bytes = buf;
  *len = n;
  return 0;
}

int kl_source_load(struct kl_arena *a, const char *path, struct kl_source *out, char *err,
                   size_t errlen) {
  memset(out, 0, sizeof *out);
  struct stat st;
  if (stat(path, &st) != 0) {
    int saved = errno;
    struct stat lst;
    if (saved == ENOENT && lstat(path, &lst) == 0)
      snprintf(err, errlen, "broken symbolic link");
    else
      snprintf(err, errlen, "%s", saved == ENOENT ? "no such file or directory" : strerror(saved));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "is a directory, expected a file");
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file");
    return -1;
  }
  if ((unsigned long long)st.st_size > KL_SOURCE_MAX_BYTES) {
    snprintf(err, errlen, "file too large (%.1f MB; the limit is %u MB)",
             (double)st.st_size / (1024.0 * 1024.0), KL_SOURCE_MAX_BYTES / (1024u * 1024u));
    return -1;
  }
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open: %s", strerror(errno));
    return -1;
  }
  char *buf;
  size_t len;
  int ioerr = kl_source_read(f, (size_t)st.st_size + 1, &buf, &len);
  fclose(f);
  if (ioerr) {
    snprintf(err, errlen, "read error");
    return -1;
  }
  int rc = kl_source_from_memory(a, path, buf, len, out, err, errlen);
  free(buf);
  return rc;
}

char *kl_source_abspath(const char *path, const char *base) {
  char *joined = NULL;
  const char *p = path;
  if (path[0] != '/') {
    size_t blen = strlen(base), plen = strlen(path);
    joined = kl_arena_xmalloc(blen + plen + 2);
    memcpy(joined, base, blen);
    joined[blen] = '/';
    memcpy(joined + blen + 1, path, plen + 1);
    p = joined;
  }
  /* Rebuild component by component; out never grows past the input. */
  char *out = kl_arena_xmalloc(strlen(p) + 2);
  size_t o = 0;
  while (*p) {
    while (*p == '/') p++;
    const char *e = p;
    while (*e && *e != '/') e++;
    size_t n = (size_t)(e - p);
    if (n == 0 || (n == 1 && p[0] == '.')) {
      /* nothing */
    } else if (n == 2 && p[0] == '.' && p[1] == '.') {
      while (o > 0 && out[o - 1] != '/') o--;
      if (o > 0) o--;
    } else {
      out[o++] = '/';
      memcpy(out + o, p, n);
      o += n;
    }
    p = e;
  }
  if (o == 0) out[o++] = '/';
  out[o] = '\0';
  free(joined);
  return out;
}

const char *kl_source_subpath(const char *abs, const char *dir) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/') return abs + 1;
  if (strncmp(abs, dir, n) == 0 && abs[n] == '/') return abs + n + 1;
  return NULL;
}

void kl_source_position(const struct kl_source *s, uint32_t off, uint32_t *line, uint32_t *col) {
  if (off > s->len) off = s->len;
  uint32_t lo = 0, hi = s->nlines;
  while (hi - lo > 1) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (s->line_starts[mid] <= off)
      lo = mid;
    else
      hi = mid;
  }
  /* On an ASCII line a byte is a code point; a kernel written on one long line (a Python
   * string with \n escapes) would otherwise be counted from its start for every position. */
  uint32_t c = 1;
  if (s->line_ascii && s->line_ascii[lo])
    c += off - s->line_starts[lo];
  else
    for (uint32_t i = s->line_starts[lo]; i < off; i++)
      if (((unsigned char)s->text[i] & 0xC0) != 0x80) c++;
  *line = lo + 1;
  *col = c;
}

const char *kl_source_line(const struct kl_source *s, uint32_t line, uint32_t *len) {
  if (line < 1 || line > s->nlines) {
    *len = 0;
    return "";
  }
  uint32_t start = s->line_starts[line - 1];
  uint32_t end = line < s->nlines ? s->line_starts[line] - 1 : s->len;
  if (end > start && s->text[end - 1] == '\r') end--;
  *len = end - start;
  return s->text + start;
}

char *kl_source_uri_escape(const char *path) {
  static const char hex[] = "0123456789ABCDEF";
  char *out = kl_arena_xmalloc(3 * strlen(path) + 1), *o = out;
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    unsigned char c = *p;
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~' || c == '/') {
      *o++ = (char)c;
    } else {
      *o++ = '%';
      *o++ = hex[c >> 4];
      *o++ = hex[c & 15];
    }
  }
  *o = '\0';
  return out;
}
