/* The language server, `kernlint --lsp`: LSP 3.17 (JSON-RPC 2.0 with Content-Length framing) on
 * standard input and output. Open documents follow the client's edits (incremental sync) and are
 * linted from memory by a thread of their own, each with its own .lintrc; findings go out as
 * textDocument/publishDiagnostics, textDocument/codeAction offers each finding's fix and a
 * suppression comment, and textDocument/hover explains the rule of the finding under the cursor.
 * The stream is rpc.h's, positions and edits text.h's. */
#ifndef KL_LSP_H
#define KL_LSP_H

#include <stdbool.h>
#include <stdio.h>

/* Command-line settings that hold for every document, as they do for every file of a CLI run. */
struct kl_lsp_options {
  const char *target;     /* --target name, NULL when not given */
  unsigned apple_family;  /* with target */
  bool rounded;           /* --assume-rounded-grid */
  unsigned metal_version; /* --metal-version, 0 when not given */
  const char *config;     /* --config FILE instead of each document's closest .lintrc; NULL */
};

/* Serve in/out until `exit` or end of input: 0 after `shutdown`, 1 otherwise, 2 when --config
 * cannot be read. */
int kl_lsp_run(const struct kl_lsp_options *o, FILE *in, FILE *out);

#endif
