/* The language server, `kernlint --lsp`: LSP 3.17 (JSON-RPC 2.0 with Content-Length framing) on
 * standard input and output. Open documents are linted from memory on open, change (full sync)
 * and save, each with its own .lintrc; findings go out as textDocument/publishDiagnostics, and
 * textDocument/codeAction offers each finding's fix and a suppression comment. */
#ifndef KL_LSP_H
#define KL_LSP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/report/diag.h"
#include "analyzer/input/source.h"

/* Command-line settings that hold for every document, as they do for every file of a CLI run. */
struct kl_lsp_options {
  const char *target;     /* --target name, NULL when not given */
  unsigned apple_family;  /* with target */
  bool rounded;           /* --assume-rounded-grid */
  unsigned metal_version; /* --metal-version, 0 when not given */
  const char *config;     /* --config FILE instead of each document's closest .lintrc; NULL */
};

/* How LSP positions count characters: UTF-16 code units unless the client offers another. */
enum kl_lsp_encoding { KL_LSP_UTF16, KL_LSP_UTF8, KL_LSP_UTF32 };

/* Serve in/out until `exit` or end of input: 0 after `shutdown`, 1 otherwise, 2 when --config
 * cannot be read. */
int kl_lsp_run(const struct kl_lsp_options *o, FILE *in, FILE *out);
/* The LSP Position {line, character} of byte offset off of src, characters counted in enc. */
json_t *kl_lsp_position(const struct kl_source *src, uint32_t off, enum kl_lsp_encoding enc);
/* The LSP Range of src's bytes [start, end). */
json_t *kl_lsp_range(const struct kl_source *src, uint32_t start, uint32_t end,
                     enum kl_lsp_encoding enc);
/* A WorkspaceEdit that applies fix f to the document uri whose text is src. */
json_t *kl_lsp_fix_edit(const struct kl_source *src, const struct kl_fix *f, const char *uri,
                        enum kl_lsp_encoding enc);
/* The edit that makes a kernlint-disable-line comment on line (1-based) of src cover rule: the
 * bytes [*start, *end) are replaced by the returned text (malloc'd). NULL when no comment can
 * be put on that line (it starts inside a comment or string that goes on past its end). */
char *kl_lsp_suppress_edit(const struct kl_source *src, uint32_t line, const char *rule,
                           uint32_t *start, uint32_t *end);
/* The path of a file:// URI, percent-escapes decoded (malloc'd); NULL for any other URI. */
char *kl_lsp_uri_path(const char *uri);

#endif
