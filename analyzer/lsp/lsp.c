/* The language server. One thread reads a message, handles it and answers before reading the
 * next: a lint takes milliseconds, and a client that sends several changes in a row gets each
 * one's diagnostics in order. Each lint has its own arena, freed once its diagnostics are out;
 * what codeAction needs of them is kept as JSON. Nothing but LSP messages goes to stdout. */
#include "analyzer/lsp/lsp.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/core/config.h"
#include "analyzer/engine.h"
#include "analyzer/input/project.h"
#include "analyzer/report/suppress.h"
#include "analyzer/core/version.h"
#include "analyzer/core/xdefs.h"
#include "grammar/expand.h"
#include "grammar/preproc.h"

/* JSON-RPC and LSP error codes. */
#define KL_RPC_PARSE_ERROR (-32700)
#define KL_RPC_INVALID_REQUEST (-32600)
#define KL_RPC_METHOD_NOT_FOUND (-32601)
#define KL_RPC_INVALID_PARAMS (-32602)
#define KL_RPC_NOT_INITIALIZED (-32002)

/* A message body larger than this is refused (and skipped): a document is at most
 * KL_SOURCE_MAX_BYTES, which JSON escaping can make up to six times longer. */
#define KL_LSP_MAX_BODY ((size_t)64 << 20)
/* Header lines longer than this are malformed. */
#define KL_LSP_MAX_HEADER 1024

static const char kl_lsp_cl[] = "Content-Length:";

/* One published diagnostic, as codeAction needs it after the lint's arena is gone. */
struct kl_lsp_pub {
  json_t *diag; /* the Diagnostic as published */
  json_t *fix;  /* WorkspaceEdit of its fix, or NULL */
  char *fix_title;
  uint32_t line; /* 1-based line a suppression must cover */
};

struct kl_lsp_doc {
  char *uri;
  char *path; /* NULL unless a file: URI */
  char *language;
  char *text;
  size_t len;
  struct kl_lsp_pub *pubs;
  size_t npubs;
};

struct kl_lsp {
  FILE *in, *out;
  const struct kl_lsp_options *o;
  struct kl_config *forced;
  enum kl_lsp_encoding enc;
  bool initialized, shutdown, exited, closed;
  const char *pending; /* bytes already consumed by a resync, read again before the stream */
  bool resync;         /* the last header was unusable: skip to the next Content-Length */
  struct kl_lsp_doc *docs;
  size_t ndocs, cap_docs;
  struct kl_projects *projects; /* read once per session: what each project says */
};

static void kl_lsp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void kl_lsp_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kernlint-lsp: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- positions ---- */

static uint32_t kl_lsp_line_of(const struct kl_source *src, uint32_t off) {
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

json_t *kl_lsp_position(const struct kl_source *src, uint32_t off, enum kl_lsp_encoding enc) {
  if (off > src->len) off = src->len;
  uint32_t line = src->nlines ? kl_lsp_line_of(src, off) : 0;
  uint32_t ls = src->nlines ? src->line_starts[line] : 0, ch = 0;
  if (enc == KL_LSP_UTF8 || (src->nlines && src->line_ascii[line])) {
    ch = off - ls;
  } else {
    /* Count the characters that start before off; one past U+FFFF is two UTF-16 units. */
    for (uint32_t i = ls; i < off; i++) {
      unsigned char c = (unsigned char)src->text[i];
      if ((c & 0xC0) == 0x80) continue;
      ch += (enc == KL_LSP_UTF16 && c >= 0xF0) ? 2 : 1;
    }
  }
  return json_pack("{s:I, s:I}", "line", (json_int_t)line, "character", (json_int_t)ch);
}

json_t *kl_lsp_range(const struct kl_source *src, uint32_t start, uint32_t end,
                     enum kl_lsp_encoding enc) {
  if (end < start) end = start;
  return json_pack("{s:o, s:o}", "start", kl_lsp_position(src, start, enc), "end",
                   kl_lsp_position(src, end, enc));
}

static json_t *kl_lsp_text_edit(const struct kl_source *src, uint32_t start, uint32_t end,
                                const char *text, enum kl_lsp_encoding enc) {
  return json_pack("{s:o, s:s}", "range", kl_lsp_range(src, start, end, enc), "newText", text);
}

static json_t *kl_lsp_workspace_edit(const char *uri, json_t *edits) {
  json_t *changes = json_object();
  json_object_set_new(changes, uri, edits);
  return json_pack("{s:o}", "changes", changes);
}

json_t *kl_lsp_fix_edit(const struct kl_source *src, const struct kl_fix *f, const char *uri,
                        enum kl_lsp_encoding enc) {
  json_t *edits = json_array();
  for (size_t i = 0; i < f->nedits; i++)
    json_array_append_new(edits, kl_lsp_text_edit(src, f->edits[i].start, f->edits[i].end,
                                                  f->edits[i].text ? f->edits[i].text : "", enc));
  return kl_lsp_workspace_edit(uri, edits);
}

/* ---- URIs ---- */

static int kl_lsp_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

char *kl_lsp_uri_path(const char *uri) {
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
    int hi = i + 2 < n ? kl_lsp_hex(p[i + 1]) : -1;
    int lo = hi >= 0 ? kl_lsp_hex(p[i + 2]) : -1;
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
struct kl_lsp_lineinfo {
  uint32_t ls, le;     /* the line's first byte, and its newline (or the end of the file) */
  uint32_t opener;     /* first comment on the line that runs to its end; UINT32_MAX: none */
  bool opener_hash;    /* it is a Python # comment */
  uint32_t directive;  /* first kernlint-disable-line comment on the line; UINT32_MAX: none */
  bool start_in_token; /* the line starts inside a comment or literal */
  enum { KL_END_CODE, KL_END_TRIPLE, KL_END_OTHER } end; /* where the line's end is */
};

static uint32_t kl_lsp_eol(const char *t, uint32_t n, uint32_t i) {
  while (i < n && t[i] != '\n') i++;
  return i;
}

static bool kl_lsp_directive(const char *t, uint32_t n, uint32_t i, const char *name,
                             uint32_t *after);

/* Note a comment at i that ends at e (exclusive; the newline for a line comment). */
static void kl_lsp_opener(const struct kl_source *src, struct kl_lsp_lineinfo *li, uint32_t i,
                          uint32_t e, bool hash) {
  if (i < li->ls || i >= li->le) return;
  uint32_t after;
  if (li->directive == UINT32_MAX &&
      kl_lsp_directive(src->text, src->len, i, "kernlint-disable-line", &after))
    li->directive = i;
  if (li->opener == UINT32_MAX && e >= li->le) {
    li->opener = i;
    li->opener_hash = hash;
  }
}

/* Whether a token [from, to) hides the line's start. */
static void kl_lsp_token(struct kl_lsp_lineinfo *li, uint32_t from, uint32_t to) {
  if (from < li->ls && to > li->ls) li->start_in_token = true;
}

static void kl_lsp_scan_c(const struct kl_source *src, struct kl_lsp_lineinfo *li) {
  const char *t = src->text;
  uint32_t n = src->len;
  for (uint32_t i = 0; i < li->le; i++) {
    char c = t[i];
    uint32_t e; /* the token's end (exclusive) */
    if (c == '/' && i + 1 < n && (t[i + 1] == '/' || t[i + 1] == '*')) {
      e = t[i + 1] == '/' ? kl_lsp_eol(t, n, i) : kl_suppress_block_end(t, n, i);
      /* A block comment left open runs to the end of the file, the last line included. */
      if (t[i + 1] == '*' && !(e >= i + 4 && t[e - 2] == '*' && t[e - 1] == '/')) e = n + 1;
      kl_lsp_opener(src, li, i, e, false);
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
    kl_lsp_token(li, i, e);
    if (e > li->le) {
      li->end = KL_END_OTHER;
      return;
    }
    i = e > i ? e - 1 : i;
  }
}

static void kl_lsp_scan_python(const struct kl_source *src, struct kl_lsp_lineinfo *li) {
  const char *t = src->text;
  uint32_t n = src->len;
  for (uint32_t i = 0; i < li->le; i++) {
    char c = t[i];
    if (c == '#') {
      uint32_t e = kl_lsp_eol(t, n, i);
      kl_lsp_opener(src, li, i, e, true);
      kl_lsp_token(li, i, e);
      if (e >= li->le) return;
      i = e;
      continue;
    }
    if (c != '"' && c != '\'') continue;
    bool triple = i + 2 < n && t[i + 1] == c && t[i + 2] == c;
    uint32_t q = triple ? 3 : 1, body = i + q, close = n, after = n;
    /* Left open: past the end, as for C. */
    if (!kl_suppress_py_string(t, n, i, &close, &after)) close = n, after = n + 1;
    kl_lsp_token(li, i, after);
    /* MSL comments inside the string, as suppress.c finds them. */
    bool in_block = false;
    for (uint32_t k = body; k + 1 < close && k < li->le; k++) {
      if (t[k] != '/') continue;
      if (t[k + 1] == '/') {
        uint32_t e = kl_lsp_eol(t, close, k);
        /* A comment that the string's closing quote ends still ends the MSL line. */
        kl_lsp_opener(src, li, k, e == close ? li->le : e, false);
        k = e;
      } else if (t[k + 1] == '*') {
        uint32_t e = kl_suppress_block_end(t, close, k);
        if (!(e >= k + 4 && t[e - 2] == '*' && t[e - 1] == '/')) e = close + 1;
        kl_lsp_opener(src, li, k, e, false);
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
static uint32_t kl_lsp_opener_len(const char *t, uint32_t n, uint32_t i) {
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
static bool kl_lsp_directive(const char *t, uint32_t n, uint32_t i, const char *name,
                             uint32_t *after) {
  uint32_t j = i + kl_lsp_opener_len(t, n, i);
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
static uint32_t kl_lsp_ids_end(const char *t, uint32_t n, uint32_t i, uint32_t le) {
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

static char *kl_lsp_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *kl_lsp_printf(const char *fmt, ...) {
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

char *kl_lsp_suppress_edit(const struct kl_source *src, uint32_t line, const char *rule,
                           uint32_t *start, uint32_t *end) {
  if (line < 1 || line > src->nlines) return NULL;
  const char *t = src->text;
  uint32_t n = src->len;
  struct kl_lsp_lineinfo li = {0};
  li.ls = src->line_starts[line - 1];
  li.le = kl_lsp_eol(t, n, li.ls);
  li.opener = li.directive = UINT32_MAX;
  bool python = src->lang == KL_LANG_PYTHON;
  if (python)
    kl_lsp_scan_python(src, &li);
  else
    kl_lsp_scan_c(src, &li);
  uint32_t ins = li.le;
  if (ins > li.ls && t[ins - 1] == '\r') ins--;
  uint32_t after;
  if (li.directive != UINT32_MAX) {
    /* One comment per line names every rule it silences. */
    kl_lsp_directive(t, n, li.directive, "kernlint-disable-line", &after);
    uint32_t stop = li.le;
    if (t[li.directive] == '/' && t[li.directive + 1] == '*') {
      uint32_t be = kl_suppress_block_end(t, n, li.directive);
      if (be < stop) stop = be;
    }
    uint32_t at = kl_lsp_ids_end(t, n, after, stop);
    *start = *end = at;
    /* The new id must end where suppress.c ends one, or it takes in what follows. */
    char c = at < n ? t[at] : '\n';
    bool ends = strchr(" \t,\r\n\"'\\", c) || (c == '*' && at + 1 < n && t[at + 1] == '/');
    return kl_lsp_printf(at == after || t[at - 1] == ':' ? " %s%s" : ", %s%s", rule,
                         ends ? "" : " ");
  }
  if (li.opener != UINT32_MAX && !li.opener_hash) {
    /* A // comment runs to the end of the line: the directive goes before it, in a block. */
    *start = *end = li.opener;
    return kl_lsp_printf("/* kernlint-disable-line %s */ ", rule);
  }
  if (li.opener != UINT32_MAX && !kl_lsp_directive(t, n, li.opener, NULL, &after)) {
    /* Python has one comment per line: the one there becomes the directive's reason. */
    uint32_t j = li.opener + kl_lsp_opener_len(t, n, li.opener);
    while (j < li.le && (t[j] == ' ' || t[j] == '\t')) j++;
    *start = li.opener;
    *end = j;
    return kl_lsp_printf(j < ins ? "# kernlint-disable-line %s -- " : "# kernlint-disable-line %s",
                         rule);
  }
  if (li.opener == UINT32_MAX && li.end == KL_END_CODE) {
    *start = *end = ins;
    return kl_lsp_printf(python ? "  # kernlint-disable-line %s" : " // kernlint-disable-line %s",
                         rule);
  }
  if (li.opener == UINT32_MAX && li.end == KL_END_TRIPLE) {
    /* Inside a kernel string a # would be MSL text: the comment is MSL's, in the string. */
    *start = *end = ins;
    return kl_lsp_printf(" // kernlint-disable-line %s", rule);
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
  return kl_lsp_printf("%.*s%s kernlint-disable-next-line %s\n", (int)(ind - li.ls), t + li.ls,
                       python ? "#" : "//", rule);
}

/* ---- output ---- */

static void kl_lsp_send(struct kl_lsp *s, json_t *msg) {
  if (!msg) return;
  json_t *full = json_pack("{s:s}", "jsonrpc", "2.0");
  json_object_update(full, msg);
  json_decref(msg);
  char *body = json_dumps(full, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(full);
  if (!body) return;
  if (!s->closed) {
    size_t len = strlen(body);
    if (fprintf(s->out, "Content-Length: %zu\r\n\r\n", len) < 0 ||
        fwrite(body, 1, len, s->out) != len || fflush(s->out) != 0) {
      kl_lsp_log("cannot write to the client: %s", strerror(errno));
      s->closed = true;
    }
  }
  free(body);
}

static void kl_lsp_result(struct kl_lsp *s, json_t *id, json_t *result) {
  kl_lsp_send(s, json_pack("{s:O, s:o}", "id", id, "result", result ? result : json_null()));
}

static void kl_lsp_error(struct kl_lsp *s, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void kl_lsp_error(struct kl_lsp *s, json_t *id, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kl_lsp_log("%s", msg);
  json_t *err = json_pack("{s:i, s:s}", "code", code, "message", msg);
  kl_lsp_send(s, json_pack("{s:O, s:o}", "id", id ? id : json_null(), "error", err));
}

/* ---- documents ---- */

static struct kl_lsp_doc *kl_lsp_find(struct kl_lsp *s, const char *uri) {
  for (size_t i = 0; i < s->ndocs; i++)
    if (!strcmp(s->docs[i].uri, uri)) return &s->docs[i];
  return NULL;
}

static void kl_lsp_pubs_free(struct kl_lsp_doc *d) {
  for (size_t i = 0; i < d->npubs; i++) {
    json_decref(d->pubs[i].diag);
    json_decref(d->pubs[i].fix);
    free(d->pubs[i].fix_title);
  }
  free(d->pubs);
  d->pubs = NULL;
  d->npubs = 0;
}

static void kl_lsp_doc_free(struct kl_lsp_doc *d) {
  kl_lsp_pubs_free(d);
  free(d->uri);
  free(d->path);
  free(d->language);
  free(d->text);
}

/* The language of a document: by its name's extension, as the CLI picks, else by the client's
 * languageId; a document that is neither is taken for MSL, as a file named to the CLI is. */
static enum kl_lang kl_lsp_lang(const struct kl_lsp_doc *d, enum kl_lang by_name) {
  if (by_name != KL_LANG_UNKNOWN) return by_name;
  const char *id = d->language ? d->language : "";
  if (!strcmp(id, "python")) return KL_LANG_PYTHON;
  if (!strcmp(id, "objective-c") || !strcmp(id, "objective-cpp") || !strcmp(id, "objc") ||
      !strcmp(id, "objcpp") || !strcmp(id, "cpp"))
    return KL_LANG_HOST;
  return KL_LANG_METAL;
}

static const int kl_lsp_severity[] = {
    [KL_SEV_OFF] = 3, [KL_SEV_NOTE] = 3, [KL_SEV_WARNING] = 2, [KL_SEV_ERROR] = 1};

/* The file URI of a path (made absolute from the server's folder), percent-encoded; malloc'd. */
static char *kl_lsp_path_uri(const char *path) {
  static const char hex[] = "0123456789ABCDEF";
  char *cwd = getcwd(NULL, 0);
  char *abs = kl_source_abspath(path, cwd ? cwd : "/");
  free(cwd);
  size_t n = strlen(abs);
  char *out = kl_arena_xmalloc(7 + 3 * n + 1), *o = out;
  memcpy(o, "file://", 7);
  o += 7;
  for (const unsigned char *p = (const unsigned char *)abs; *p; p++) {
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
  free(abs);
  return out;
}

/* A related location in another file: its document's URI, and its range counted in that file's
 * text as the client counts (read from disk; from the span's line and column if it cannot be). */
static json_t *kl_lsp_other_location(const struct kl_related *x, enum kl_lsp_encoding enc) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source o;
  char err[256];
  json_t *range;
  if (kl_source_load(a, x->path, &o, err, sizeof err) == 0 && x->span.end <= o.len)
    range = kl_lsp_range(&o, x->span.start, x->span.end, enc);
  else
    range = json_pack("{s:{s:i,s:i},s:{s:i,s:i}}", "start", "line", (int)x->span.line - 1,
                      "character", (int)x->span.col - 1, "end", "line",
                      (int)x->span.end_line - 1, "character", (int)x->span.end_col - 1);
  kl_arena_delete(a);
  char *uri = kl_lsp_path_uri(x->path);
  json_t *loc = json_pack("{s:s, s:o}", "uri", uri, "range", range);
  free(uri);
  return loc;
}

static json_t *kl_lsp_diag_json(const struct kl_source *src, const struct kl_diag *d,
                                const char *uri, enum kl_lsp_encoding enc) {
  json_t *j = json_pack("{s:o, s:i, s:s, s:s, s:s}", "range",
                        kl_lsp_range(src, d->span.start, d->span.end, enc), "severity",
                        kl_lsp_severity[d->severity], "code", d->rule_id, "source", "kernlint",
                        "message", d->message);
  if (d->nrelated) {
    json_t *rel = json_array();
    for (size_t r = 0; r < d->nrelated; r++) {
      const struct kl_related *x = &d->related[r];
      json_t *loc = x->path ? kl_lsp_other_location(x, enc)
                            : json_pack("{s:s, s:o}", "uri", uri, "range",
                                        kl_lsp_range(src, x->span.start, x->span.end, enc));
      json_array_append_new(rel, json_pack("{s:o, s:s}", "location", loc, "message", x->message));
    }
    json_object_set_new(j, "relatedInformation", rel);
  }
  return j;
}

/* A problem with the document as a whole (its .lintrc, its bytes), shown on its first line. */
static json_t *kl_lsp_doc_problem(const char *message) {
  return json_pack("{s:{s:{s:i,s:i},s:{s:i,s:i}}, s:i, s:s, s:s}", "range", "start", "line", 0,
                   "character", 0, "end", "line", 0, "character", 0, "severity", 1, "source",
                   "kernlint", "message", message);
}

/* Settings for d: the forced --config, or the closest .lintrc of a file. Returns false, with
 * *problem set (malloc'd) when the .lintrc is broken, or with *problem NULL when the .lintrc
 * excludes the file (its findings would be noise the project asked not to see). */
static bool kl_lsp_settings(struct kl_lsp *s, const struct kl_lsp_doc *d, struct kl_settings *st,
                            char **problem) {
  *problem = NULL;
  kl_config_defaults(st);
  struct kl_config *own = NULL;
  const struct kl_config *cfg = NULL;
  if (d->path && s->forced) {
    cfg = s->forced;
  } else if (d->path) {
    char *cp = kl_config_find(d->path);
    if (cp) {
      char err[512] = "";
      own = kl_config_load(cp, err, sizeof err);
      if (!own) *problem = kl_lsp_printf("kernlint: %s", err[0] ? err : cp);
      free(cp);
      if (!own) return false;
      cfg = own;
    }
  }
  bool ok = true;
  if (cfg) {
    char *rel = kl_config_relpath(cfg, d->path);
    ok = kl_config_selects_rel(cfg, rel);
    kl_config_apply_rel(cfg, rel, st);
    free(rel);
  }
  if (d->path && s->projects)
    kl_project_apply(kl_project_for(s->projects, d->path, d->path, cfg), cfg, st);
  kl_config_delete(own);
  if (s->o->target) {
    st->target = s->o->target;
    st->apple_family = s->o->apple_family;
  }
  if (s->o->rounded) st->assume_rounded_grid = true;
  if (s->o->metal_version) st->metal_version = s->o->metal_version;
  return ok;
}

/* Lint d from its text in memory and publish the result, keeping what codeAction needs. */
static void kl_lsp_lint(struct kl_lsp *s, struct kl_lsp_doc *d) {
  kl_lsp_pubs_free(d);
  json_t *list = json_array();
  struct kl_settings st;
  char *problem = NULL;
  if (kl_lsp_settings(s, d, &st, &problem)) {
    /* The server outlives edits to the tree: a header made or removed since counts now. */
    kl_expand_forget_paths();
    kl_xdefs_forget();
    struct kl_arena *a = kl_arena_new();
    struct kl_source src;
    struct kl_diag_list diags;
    kl_diag_list_init(&diags, a);
    char err[512] = "";
    int rc = kl_source_from_memory(a, d->path ? d->path : d->uri, d->text, d->len, &src, err,
                                   sizeof err);
    if (rc == 0) {
      src.lang = kl_lsp_lang(d, src.lang);
      rc = kl_engine_lint(a, &src, &st, NULL, &diags, err, sizeof err);
    }
    if (rc != 0) {
      problem = kl_lsp_printf("kernlint cannot lint this file: %s", err[0] ? err : "unknown error");
    } else {
      d->pubs = kl_arena_xmalloc((diags.n ? diags.n : 1) * sizeof *d->pubs);
      for (size_t i = 0; i < diags.n; i++) {
        const struct kl_diag *x = &diags.items[i];
        struct kl_lsp_pub *p = &d->pubs[d->npubs++];
        memset(p, 0, sizeof *p);
        p->diag = kl_lsp_diag_json(&src, x, d->uri, s->enc);
        p->line = x->span.line;
        if (x->fix && x->fix->nedits) {
          p->fix = kl_lsp_fix_edit(&src, x->fix, d->uri, s->enc);
          p->fix_title = kl_arena_xstrdup(x->fix->title ? x->fix->title : "apply the fix");
        }
        json_array_append(list, p->diag);
      }
    }
    kl_arena_delete(a);
  }
  if (problem) {
    kl_lsp_log("%s: %s", d->uri, problem);
    json_array_append_new(list, kl_lsp_doc_problem(problem));
    free(problem);
  }
  kl_lsp_send(s, json_pack("{s:s, s:{s:s, s:o}}", "method", "textDocument/publishDiagnostics",
                           "params", "uri", d->uri, "diagnostics", list));
}

static void kl_lsp_publish_empty(struct kl_lsp *s, const char *uri) {
  kl_lsp_send(s, json_pack("{s:s, s:{s:s, s:[]}}", "method", "textDocument/publishDiagnostics",
                           "params", "uri", uri, "diagnostics"));
}

/* ---- methods ---- */

/* A handler returns 0, or a JSON-RPC error code with the message in why. */
typedef int (*kl_lsp_method_fn)(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                                size_t whylen);

static const char *kl_lsp_str(json_t *obj, const char *key) {
  return json_string_value(json_object_get(obj, key));
}

static int kl_lsp_bad(char *why, size_t whylen, const char *what) {
  snprintf(why, whylen, "invalid params: %s", what);
  return KL_RPC_INVALID_PARAMS;
}

/* The client's most preferred position encoding among the ones implemented; NULL when it
 * offers none (UTF-16 then, which every client and server must support). */
static const char *kl_lsp_pick_encoding(json_t *caps, enum kl_lsp_encoding *enc) {
  json_t *list = json_object_get(json_object_get(caps, "general"), "positionEncodings");
  size_t i;
  json_t *v;
  json_array_foreach(list, i, v) {
    const char *e = json_string_value(v);
    if (!e) continue;
    if (!strcmp(e, "utf-8"))
      *enc = KL_LSP_UTF8;
    else if (!strcmp(e, "utf-16"))
      *enc = KL_LSP_UTF16;
    else if (!strcmp(e, "utf-32"))
      *enc = KL_LSP_UTF32;
    else
      continue;
    return e;
  }
  if (json_is_array(list)) return "utf-16";
  return NULL;
}

static int kl_lsp_initialize(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                             size_t whylen) {
  if (s->initialized) {
    snprintf(why, whylen, "initialize was already received");
    return KL_RPC_INVALID_REQUEST;
  }
  if (!json_is_object(params)) return kl_lsp_bad(why, whylen, "initialize needs an object");
  json_t *caps = json_object_get(params, "capabilities");
  s->enc = KL_LSP_UTF16;
  const char *enc = kl_lsp_pick_encoding(caps, &s->enc);
  json_t *c =
      json_pack("{s:{s:b, s:i, s:{s:b}}, s:{s:[s]}}", "textDocumentSync", "openClose", 1, "change",
                1, "save", "includeText", 0, "codeActionProvider", "codeActionKinds", "quickfix");
  if (enc) json_object_set_new(c, "positionEncoding", json_string(enc));
  *result = json_pack("{s:o, s:{s:s, s:s}}", "capabilities", c, "serverInfo", "name", "kernlint",
                      "version", KL_VERSION);
  s->initialized = true;
  return 0;
}

static int kl_lsp_shutdown(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                           size_t whylen) {
  s->shutdown = true;
  return 0;
}

static int kl_lsp_exit(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                       size_t whylen) {
  s->exited = true;
  return 0;
}

static int kl_lsp_nothing(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                          size_t whylen) {
  return 0;
}

/* params.textDocument and its uri, checked. */
static json_t *kl_lsp_textdoc(json_t *params, const char **uri) {
  json_t *td = json_object_get(params, "textDocument");
  *uri = kl_lsp_str(td, "uri");
  return *uri ? td : NULL;
}

static int kl_lsp_did_open(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                           size_t whylen) {
  const char *uri;
  json_t *td = kl_lsp_textdoc(params, &uri);
  const char *text = kl_lsp_str(td, "text");
  if (!td || !text) return kl_lsp_bad(why, whylen, "didOpen needs textDocument.uri and .text");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (d) {
    kl_lsp_doc_free(d);
  } else {
    KL_XVEC_PUSH(s->docs, s->ndocs, s->cap_docs);
    d = &s->docs[s->ndocs++];
  }
  memset(d, 0, sizeof *d);
  d->uri = kl_arena_xstrdup(uri);
  d->path = kl_lsp_uri_path(uri);
  const char *lang = kl_lsp_str(td, "languageId");
  d->language = lang ? kl_arena_xstrdup(lang) : NULL;
  d->len = json_string_length(json_object_get(td, "text"));
  d->text = kl_arena_xstrndup(text, d->len);
  kl_lsp_lint(s, d);
  return 0;
}

static int kl_lsp_did_change(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                             size_t whylen) {
  const char *uri;
  json_t *changes = json_object_get(params, "contentChanges");
  if (!kl_lsp_textdoc(params, &uri) || !json_is_array(changes))
    return kl_lsp_bad(why, whylen, "didChange needs textDocument.uri and contentChanges");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d) return kl_lsp_bad(why, whylen, "didChange for a document that is not open");
  /* Full sync: the last whole text is the buffer (a ranged change would be incremental). */
  json_t *last = NULL, *ch;
  size_t i;
  json_array_foreach(changes, i, ch) {
    if (json_is_string(json_object_get(ch, "text")) && !json_object_get(ch, "range")) last = ch;
  }
  if (!last) return kl_lsp_bad(why, whylen, "didChange without a full text (sync is full)");
  json_t *text = json_object_get(last, "text");
  free(d->text);
  d->len = json_string_length(text);
  d->text = kl_arena_xstrndup(json_string_value(text), d->len);
  kl_lsp_lint(s, d);
  return 0;
}

static int kl_lsp_did_save(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                           size_t whylen) {
  const char *uri;
  if (!kl_lsp_textdoc(params, &uri)) return kl_lsp_bad(why, whylen, "didSave needs a uri");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d) return kl_lsp_bad(why, whylen, "didSave for a document that is not open");
  json_t *text = json_object_get(params, "text");
  if (json_is_string(text)) {
    free(d->text);
    d->len = json_string_length(text);
    d->text = kl_arena_xstrndup(json_string_value(text), d->len);
  }
  /* Saving is when a .lintrc edited alongside takes effect too: lint again. */
  kl_lsp_lint(s, d);
  return 0;
}

static int kl_lsp_did_close(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                            size_t whylen) {
  const char *uri;
  if (!kl_lsp_textdoc(params, &uri)) return kl_lsp_bad(why, whylen, "didClose needs a uri");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d) return kl_lsp_bad(why, whylen, "didClose for a document that is not open");
  kl_lsp_publish_empty(s, uri);
  kl_lsp_doc_free(d);
  *d = s->docs[--s->ndocs];
  return 0;
}

/* The published diagnostic a client's one stands for: same code and range, or failing that
 * (a client may round-trip a range through its own columns) same code and first line. */
static struct kl_lsp_pub *kl_lsp_match(struct kl_lsp_doc *d, json_t *cd) {
  const char *code = kl_lsp_str(cd, "code");
  json_t *range = json_object_get(cd, "range");
  if (!code || !json_is_object(range)) return NULL;
  for (size_t i = 0; i < d->npubs; i++) {
    json_t *p = d->pubs[i].diag;
    if (!strcmp(kl_lsp_str(p, "code"), code) && json_equal(json_object_get(p, "range"), range))
      return &d->pubs[i];
  }
  json_t *line = json_object_get(json_object_get(range, "start"), "line");
  for (size_t i = 0; i < d->npubs; i++) {
    json_t *p = d->pubs[i].diag;
    json_t *pl = json_object_get(json_object_get(json_object_get(p, "range"), "start"), "line");
    if (!strcmp(kl_lsp_str(p, "code"), code) && json_equal(pl, line)) return &d->pubs[i];
  }
  return NULL;
}

/* Whether a codeAction request's context.only lets quickfix actions through. */
static bool kl_lsp_wants_quickfix(json_t *only) {
  if (!json_is_array(only)) return true;
  size_t i;
  json_t *v;
  json_array_foreach(only, i, v) {
    const char *k = json_string_value(v);
    if (k && (!strcmp(k, "quickfix") || !k[0])) return true;
  }
  return false;
}

static int kl_lsp_code_action(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                              size_t whylen) {
  const char *uri;
  json_t *ctx = json_object_get(params, "context");
  json_t *cds = json_object_get(ctx, "diagnostics");
  if (!kl_lsp_textdoc(params, &uri) || !json_is_array(cds))
    return kl_lsp_bad(why, whylen, "codeAction needs textDocument.uri and context.diagnostics");
  json_t *actions = json_array();
  *result = actions;
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d || !kl_lsp_wants_quickfix(json_object_get(ctx, "only"))) return 0;
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  bool have_src = kl_source_from_memory(a, d->path ? d->path : d->uri, d->text, d->len, &src, err,
                                        sizeof err) == 0;
  if (have_src) src.lang = kl_lsp_lang(d, src.lang);
  /* One suppression per rule and line, however many findings it covers. */
  json_t *seen = json_object();
  size_t i;
  json_t *cd;
  json_array_foreach(cds, i, cd) {
    struct kl_lsp_pub *p = kl_lsp_match(d, cd);
    if (!p) continue;
    const char *rule = kl_lsp_str(p->diag, "code");
    if (p->fix)
      json_array_append_new(actions,
                            json_pack("{s:s+, s:s, s:[O], s:b, s:O}", "title",
                                      "kernlint: ", p->fix_title, "kind", "quickfix", "diagnostics",
                                      p->diag, "isPreferred", 1, "edit", p->fix));
    char key[160];
    snprintf(key, sizeof key, "%u %s", p->line, rule);
    if (!have_src || json_object_get(seen, key)) continue;
    json_object_set_new(seen, key, json_true());
    uint32_t start, end;
    char *text = kl_lsp_suppress_edit(&src, p->line, rule, &start, &end);
    if (!text) continue;
    json_t *edits = json_pack("[o]", kl_lsp_text_edit(&src, start, end, text, s->enc));
    free(text);
    json_array_append_new(actions,
                          json_pack("{s:s++, s:s, s:[O], s:o}", "title", "kernlint: suppress ",
                                    rule, " on this line", "kind", "quickfix", "diagnostics",
                                    p->diag, "edit", kl_lsp_workspace_edit(uri, edits)));
  }
  json_decref(seen);
  kl_arena_delete(a);
  return 0;
}

static const struct kl_lsp_method {
  const char *name;
  kl_lsp_method_fn fn;
  bool request;   /* answered (a notification sent with an id is answered too) */
  bool needs_obj; /* params must be an object */
} kl_lsp_methods[] = {
    {"initialize", kl_lsp_initialize, true, false},
    {"initialized", kl_lsp_nothing, false, false},
    {"shutdown", kl_lsp_shutdown, true, false},
    {"exit", kl_lsp_exit, false, false},
    {"textDocument/didOpen", kl_lsp_did_open, false, true},
    {"textDocument/didChange", kl_lsp_did_change, false, true},
    {"textDocument/didSave", kl_lsp_did_save, false, true},
    {"textDocument/didClose", kl_lsp_did_close, false, true},
    {"textDocument/codeAction", kl_lsp_code_action, true, true},
};

/* ---- messages ---- */

static void kl_lsp_handle(struct kl_lsp *s, const char *body, size_t len) {
  json_error_t je;
  json_t *m = json_loadb(body, len, 0, &je);
  if (!m) {
    kl_lsp_error(s, NULL, KL_RPC_PARSE_ERROR, "parse error: %s (at byte %d)", je.text, je.position);
    return;
  }
  json_t *id = json_object_get(m, "id");
  json_t *method = json_object_get(m, "method");
  json_t *params = json_object_get(m, "params");
  if (!json_is_object(m)) {
    kl_lsp_error(s, NULL, KL_RPC_INVALID_REQUEST, "invalid request: not a JSON object");
  } else if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id)) {
    kl_lsp_error(s, NULL, KL_RPC_INVALID_REQUEST, "invalid request: id is not a number or string");
  } else if (!method && (json_object_get(m, "result") || json_object_get(m, "error"))) {
    /* A response: the server sends no requests, so there is nothing waiting for it. */
  } else if (!json_is_string(method)) {
    if (id)
      kl_lsp_error(s, id, KL_RPC_INVALID_REQUEST, "invalid request: no method");
    else
      kl_lsp_error(s, NULL, KL_RPC_INVALID_REQUEST, "invalid request: no method and no id");
  } else {
    const char *name = json_string_value(method);
    const struct kl_lsp_method *mt = NULL;
    for (size_t i = 0; i < sizeof kl_lsp_methods / sizeof *kl_lsp_methods; i++)
      if (!strcmp(kl_lsp_methods[i].name, name)) mt = &kl_lsp_methods[i];
    const char *rpc = kl_lsp_str(m, "jsonrpc");
    char why[512] = "";
    json_t *result = NULL;
    int rc = 0;
    if (rpc && strcmp(rpc, "2.0") != 0) {
      rc = KL_RPC_INVALID_REQUEST;
      snprintf(why, sizeof why, "invalid request: jsonrpc is not \"2.0\"");
    } else if (mt && mt->fn == kl_lsp_exit) {
      s->exited = true;
    } else if (!s->initialized && !(mt && mt->fn == kl_lsp_initialize)) {
      rc = KL_RPC_NOT_INITIALIZED;
      snprintf(why, sizeof why, "%s before initialize", name);
    } else if (s->shutdown) {
      rc = KL_RPC_INVALID_REQUEST;
      snprintf(why, sizeof why, "%s after shutdown", name);
    } else if (!mt) {
      rc = KL_RPC_METHOD_NOT_FOUND;
      snprintf(why, sizeof why, "method not found: %s", name);
    } else if (params && !json_is_object(params) && !json_is_array(params)) {
      rc = kl_lsp_bad(why, sizeof why, "params must be an object or an array");
    } else if (mt->needs_obj && !json_is_object(params)) {
      rc = kl_lsp_bad(why, sizeof why, "params must be an object");
    } else {
      rc = mt->fn(s, params, &result, why, sizeof why);
    }
    if (id && rc) {
      json_decref(result);
      kl_lsp_error(s, id, rc, "%s", why);
    } else if (id) {
      kl_lsp_result(s, id, result);
    } else {
      json_decref(result);
      /* A notification gets no answer: an unknown one (or $/ one) is ignored, a bad one logged. */
      if (rc && rc != KL_RPC_METHOD_NOT_FOUND && !(rc == KL_RPC_NOT_INITIALIZED))
        kl_lsp_log("%s: %s", name, why);
    }
  }
  json_decref(m);
}

/* getc, after what a resync consumed. */
static int kl_lsp_getc(struct kl_lsp *s) {
  if (s->pending && *s->pending) return (unsigned char)*s->pending++;
  return getc(s->in);
}

/* Skip to just past the next "Content-Length:" (a resync after a header that cannot be used),
 * then read it again as the start of a header. Returns -1 at end of input. */
static int kl_lsp_resync(struct kl_lsp *s) {
  size_t got = 0, want = sizeof kl_lsp_cl - 1;
  int c;
  while (got < want && (c = kl_lsp_getc(s)) != EOF) {
    if (c == kl_lsp_cl[got])
      got++;
    else
      got = c == kl_lsp_cl[0];
  }
  if (got < want) return -1;
  s->pending = kl_lsp_cl;
  return 0;
}

enum kl_lsp_read { KL_READ_OK, KL_READ_EOF, KL_READ_BAD };

/* Read one header line (without its line break) into buf; -1 at end of input, 1 when too long. */
static int kl_lsp_header_line(struct kl_lsp *s, char *buf, size_t cap, size_t *len) {
  size_t n = 0;
  bool long_line = false;
  int c;
  while ((c = kl_lsp_getc(s)) != EOF && c != '\n') {
    if (n + 1 < cap)
      buf[n++] = (char)c;
    else
      long_line = true;
  }
  if (c == EOF && n == 0) return -1;
  if (n && buf[n - 1] == '\r') n--;
  buf[n] = '\0';
  *len = n;
  return long_line ? 1 : 0;
}

/* Read a message's headers and body (malloc'd). KL_READ_BAD says why; the stream is then past
 * the bad message: its body is skipped when its length is known, else the next read first skips
 * to the next Content-Length header. */
static enum kl_lsp_read kl_lsp_read(struct kl_lsp *s, char **body, size_t *len, char *why,
                                    size_t whylen) {
  if (s->resync) {
    s->resync = false;
    if (kl_lsp_resync(s) != 0) return KL_READ_EOF;
  }
  char line[KL_LSP_MAX_HEADER];
  size_t n, clen = 0;
  bool have_len = false, bad_len = false, bad_line = false;
  int lines = 0;
  for (;;) {
    int rc = kl_lsp_header_line(s, line, sizeof line, &n);
    if (rc < 0) return KL_READ_EOF;
    if (n == 0 && lines == 0) continue; /* stray line breaks between messages */
    if (n == 0) break;
    lines++;
    char *colon = strchr(line, ':');
    if (rc > 0 || !colon) {
      if (!bad_line && !bad_len) snprintf(why, whylen, "bad header line: '%.60s'", line);
      bad_line = true;
      continue;
    }
    if ((size_t)(colon - line) != sizeof kl_lsp_cl - 2 ||
        strncasecmp(line, kl_lsp_cl, sizeof kl_lsp_cl - 2) != 0)
      continue; /* Content-Type and the like */
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    while (*end == ' ' || *end == '\t') end++;
    if (*v < '0' || *v > '9' || *end || errno || (have_len && x != clen)) {
      if (!bad_line && !bad_len) snprintf(why, whylen, "bad Content-Length: '%.60s'", v);
      bad_len = true;
      continue;
    }
    clen = (size_t)x;
    have_len = true;
  }
  if (bad_len || !have_len) {
    if (!bad_len && !bad_line) snprintf(why, whylen, "missing Content-Length header");
    s->resync = true;
    return KL_READ_BAD;
  }
  if (bad_line || clen > KL_LSP_MAX_BODY) {
    if (!bad_line) snprintf(why, whylen, "message of %zu bytes is too large", clen);
    for (size_t i = 0; i < clen; i++)
      if (kl_lsp_getc(s) == EOF) return KL_READ_EOF;
    return KL_READ_BAD;
  }
  char *b = kl_arena_xmalloc(clen + 1);
  size_t got = fread(b, 1, clen, s->in);
  if (got < clen) {
    free(b);
    return KL_READ_EOF;
  }
  b[clen] = '\0';
  *body = b;
  *len = clen;
  return KL_READ_OK;
}

int kl_lsp_run(const struct kl_lsp_options *o, FILE *in, FILE *out) {
  struct kl_lsp s;
  memset(&s, 0, sizeof s);
  s.in = in;
  s.out = out;
  s.o = o;
  if (o->config) {
    char err[512] = "";
    s.forced = kl_config_load(o->config, err, sizeof err);
    if (!s.forced) {
      fprintf(stderr, "kernlint: %s\n", err[0] ? err : o->config);
      return 2;
    }
  }
  s.projects = kl_projects_new();
  /* A client that goes away mid-write is an error to log, not a signal that kills the server. */
  signal(SIGPIPE, SIG_IGN);
  while (!s.exited && !s.closed) {
    char *body = NULL, why[256] = "";
    size_t len = 0;
    enum kl_lsp_read r = kl_lsp_read(&s, &body, &len, why, sizeof why);
    if (r == KL_READ_EOF) break;
    if (r == KL_READ_BAD) {
      kl_lsp_error(&s, NULL, KL_RPC_PARSE_ERROR, "%s", why);
      continue;
    }
    kl_lsp_handle(&s, body, len);
    free(body);
  }
  for (size_t i = 0; i < s.ndocs; i++) kl_lsp_doc_free(&s.docs[i]);
  free(s.docs);
  kl_config_delete(s.forced);
  kl_projects_delete(s.projects);
  kl_expand_forget_headers();
  kl_xdefs_forget();
  return s.shutdown ? 0 : 1;
}
