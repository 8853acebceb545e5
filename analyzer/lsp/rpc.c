/* The language server's stream: LSP base-protocol framing (Content-Length headers) of JSON-RPC
 * messages on the client's pipes, read by one thread, written by any under a lock. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyzer/core/arena.h"
#include "analyzer/lsp/rpc.h"

/* A message body larger than this is refused (and skipped): a document is at most
 * KL_SOURCE_MAX_BYTES, which JSON escaping can make up to six times longer. */
#define KL_LSP_MAX_BODY ((size_t)64 << 20)
/* Header lines longer than this are malformed. */
#define KL_LSP_MAX_HEADER 1024

static const char kl_rpc_cl[] = "Content-Length:";

void kl_rpc_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  /* One line at a time: both threads log. */
  flockfile(stderr);
  fputs("kernlint-lsp: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  funlockfile(stderr);
  va_end(ap);
}

/* ---- output ---- */

void kl_rpc_send(struct kl_rpc *s, json_t *msg) {
  if (!msg) return;
  json_t *full = json_pack("{s:s}", "jsonrpc", "2.0");
  json_object_update(full, msg);
  json_decref(msg);
  char *body = json_dumps(full, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(full);
  if (!body) return;
  pthread_mutex_lock(&s->out_lock);
  if (!s->closed) {
    size_t len = strlen(body);
    if (fprintf(s->out, "Content-Length: %zu\r\n\r\n", len) < 0 ||
        fwrite(body, 1, len, s->out) != len || fflush(s->out) != 0) {
      kl_rpc_log("cannot write to the client: %s", strerror(errno));
      s->closed = true;
    }
  }
  pthread_mutex_unlock(&s->out_lock);
  free(body);
}

bool kl_rpc_closed(struct kl_rpc *s) {
  pthread_mutex_lock(&s->out_lock);
  bool c = s->closed;
  pthread_mutex_unlock(&s->out_lock);
  return c;
}

void kl_rpc_result(struct kl_rpc *s, json_t *id, json_t *result) {
  kl_rpc_send(s, json_pack("{s:O, s:o}", "id", id, "result", result ? result : json_null()));
}

void kl_rpc_error(struct kl_rpc *s, json_t *id, int code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kl_rpc_log("%s", msg);
  json_t *err = json_pack("{s:i, s:s}", "code", code, "message", msg);
  kl_rpc_send(s, json_pack("{s:O, s:o}", "id", id ? id : json_null(), "error", err));
}

/* getc, after what a resync consumed. */
static int kl_rpc_getc(struct kl_rpc *s) {
  if (s->pending && *s->pending) return (unsigned char)*s->pending++;
  return getc(s->in);
}

/* Skip to just past the next "Content-Length:" (a resync after a header that cannot be used),
 * then read it again as the start of a header. Returns -1 at end of input. */
static int kl_rpc_resync(struct kl_rpc *s) {
  size_t got = 0, want = sizeof kl_rpc_cl - 1;
  int c;
  while (got < want && (c = kl_rpc_getc(s)) != EOF) {
    if (c == kl_rpc_cl[got])
      got++;
    else
      got = c == kl_rpc_cl[0];
  }
  if (got < want) return -1;
  s->pending = kl_rpc_cl;
  return 0;
}

/* Read one header line (without its line break) into buf; -1 at end of input, 1 when too long. */
static int kl_rpc_header_line(struct kl_rpc *s, char *buf, size_t cap, size_t *len) {
  size_t n = 0;
  bool long_line = false;
  int c;
  while ((c = kl_rpc_getc(s)) != EOF && c != '\n') {
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

/* Read a message's headers and body (malloc'd). KL_RPC_BAD says why; the stream is then past
 * the bad message: its body is skipped when its length is known, else the next read first skips
 * to the next Content-Length header. */
enum kl_rpc_status kl_rpc_read(struct kl_rpc *s, char **body, size_t *len, char *why,
                               size_t whylen) {
  if (s->resync) {
    s->resync = false;
    if (kl_rpc_resync(s) != 0) return KL_RPC_EOF;
  }
  char line[KL_LSP_MAX_HEADER];
  size_t n, clen = 0;
  bool have_len = false, bad_len = false, bad_line = false;
  int lines = 0;
  for (;;) {
    int rc = kl_rpc_header_line(s, line, sizeof line, &n);
    if (rc < 0) return KL_RPC_EOF;
    if (n == 0 && lines == 0) continue; /* stray line breaks between messages */
    if (n == 0) break;
    lines++;
    char *colon = strchr(line, ':');
    if (rc > 0 || !colon) {
      if (!bad_line && !bad_len) snprintf(why, whylen, "bad header line: '%.60s'", line);
      bad_line = true;
      continue;
    }
    if ((size_t)(colon - line) != sizeof kl_rpc_cl - 2 ||
        strncasecmp(line, kl_rpc_cl, sizeof kl_rpc_cl - 2) != 0)
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
    return KL_RPC_BAD;
  }
  if (bad_line || clen > KL_LSP_MAX_BODY) {
    if (!bad_line) snprintf(why, whylen, "message of %zu bytes is too large", clen);
    for (size_t i = 0; i < clen; i++)
      if (kl_rpc_getc(s) == EOF) return KL_RPC_EOF;
    return KL_RPC_BAD;
  }
  char *b = kl_arena_xmalloc(clen + 1);
  size_t got = fread(b, 1, clen, s->in);
  if (got < clen) {
    free(b);
    return KL_RPC_EOF;
  }
  b[clen] = '\0';
  *body = b;
  *len = clen;
  return KL_RPC_OK;
}
