/* The language server's stream: LSP base-protocol framing (Content-Length headers) of JSON-RPC
 * messages on the client's pipes, read by one thread, written by any, one whole message at a
 * time. */
#ifndef KL_RPC_H
#define KL_RPC_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* JSON-RPC and LSP error codes. */
#define KL_RPC_PARSE_ERROR (-32700)
#define KL_RPC_INVALID_REQUEST (-32600)
#define KL_RPC_METHOD_NOT_FOUND (-32601)
#define KL_RPC_INVALID_PARAMS (-32602)
#define KL_RPC_NOT_INITIALIZED (-32002)
#define KL_RPC_REQUEST_CANCELLED (-32800)

/* The client's byte stream. Set in and out, and initialise out_lock, before use. */
struct kl_rpc {
  FILE *in, *out;
  const char *pending; /* bytes already consumed by a resync, read again before the stream */
  bool resync;         /* the last header was unusable: skip to the next Content-Length */
  bool closed;         /* a write failed: the client is gone (under out_lock) */
  pthread_mutex_t out_lock;
};

enum kl_rpc_status { KL_RPC_OK, KL_RPC_EOF, KL_RPC_BAD };

/* Read a message's body (malloc'd). KL_RPC_BAD says why in why; the stream is then past it. */
enum kl_rpc_status kl_rpc_read(struct kl_rpc *r, char **body, size_t *len, char *why,
                               size_t whylen);
/* Send msg (stolen) with "jsonrpc": "2.0"; a failed write marks the stream closed. */
void kl_rpc_send(struct kl_rpc *r, json_t *msg);
/* Whether a write to the client has failed. */
bool kl_rpc_closed(struct kl_rpc *r);
/* Answer request id with result (stolen; NULL is null). */
void kl_rpc_result(struct kl_rpc *r, json_t *id, json_t *result);
/* Answer request id (NULL: null) with an error, and log it. */
void kl_rpc_error(struct kl_rpc *r, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Log a line to standard error, which the client shows as the server's log. */
void kl_rpc_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
