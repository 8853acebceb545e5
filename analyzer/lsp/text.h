/* The language server's text: LSP positions of a document's bytes and back, content changes
 * applied to a buffer, the edits of fixes and suppression comments, and file URIs. */
#ifndef KL_TEXT_H
#define KL_TEXT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/input/source.h"
#include "analyzer/report/diag.h"

/* How LSP positions count characters: UTF-16 code units unless the client offers another. */
enum kl_text_encoding { KL_TEXT_UTF16, KL_TEXT_UTF8, KL_TEXT_UTF32 };

/* The LSP Position {line, character} of byte offset off of src, characters counted in enc. */
json_t *kl_text_position(const struct kl_source *src, uint32_t off, enum kl_text_encoding enc);
/* The LSP Range of src's bytes [start, end). */
json_t *kl_text_range(const struct kl_source *src, uint32_t start, uint32_t end,
                      enum kl_text_encoding enc);
/* A TextEdit replacing src's bytes [start, end) by text. */
json_t *kl_text_edit(const struct kl_source *src, uint32_t start, uint32_t end, const char *text,
                     enum kl_text_encoding enc);
/* A WorkspaceEdit of edits (stolen) to the document uri. */
json_t *kl_text_workspace_edit(const char *uri, json_t *edits);
/* A WorkspaceEdit that applies fix f to the document uri whose text is src. */
json_t *kl_text_fix_edit(const struct kl_source *src, const struct kl_fix *f, const char *uri,
                         enum kl_text_encoding enc);
/* The edit that makes a kernlint-disable-line comment on line (1-based) of src cover rule: the
 * bytes [*start, *end) are replaced by the returned text (malloc'd). NULL when no comment can
 * be put on that line (it starts inside a comment or string that goes on past its end). */
char *kl_text_suppress_edit(const struct kl_source *src, uint32_t line, const char *rule,
                            uint32_t *start, uint32_t *end);
/* The byte offset *off in text (len bytes) of the LSP Position pos, characters counted in enc:
 * a line past the last is the text's end, a character past its line's end is that end (as the
 * protocol's reference TextDocument clamps them), and one inside a character is its start. -1
 * when pos is no Position (a field missing, negative or not an integer). */
int kl_text_offset(const char *text, size_t len, json_t *pos, enum kl_text_encoding enc,
                   size_t *off);
/* Apply one TextDocumentContentChangeEvent (a range and its new text, or a whole text) to the
 * malloc'd buffer *text of *len bytes, replaced by a new one. -1, with why, when the change is
 * malformed; the buffer is then as it was. */
int kl_text_apply_change(char **text, size_t *len, json_t *change, enum kl_text_encoding enc,
                         char *why, size_t whylen);
/* The path of a file:// URI, percent-escapes decoded (malloc'd); NULL for any other URI. */
char *kl_text_uri_path(const char *uri);
/* A printf into a malloc'd string. */
char *kl_text_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
