/* Lexical scanning of C-family text, below the parse: identifier bytes, pp-numbers, literals,
 * comments and whitespace. The preprocessor, the dialect layer and the text readers of the
 * analyses and rules all skip literals and comments the same way through these. */
#ifndef KL_LEX_H
#define KL_LEX_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/core/arena.h"

/* Whether c can start a C identifier. */
static inline bool kl_lex_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
/* Whether c can continue a C identifier. */
static inline bool kl_lex_ident_char(char c) {
  return kl_lex_ident_start(c) || (c >= '0' && c <= '9');
}
/* End of the pp-number starting at t[i], so `1e5f` or `0x1fdevice` never look like identifiers. */
uint32_t kl_lex_skip_number(const char *t, uint32_t len, uint32_t i);
/* End of the string or character literal whose quote is at t[i]; it stops at a newline. */
uint32_t kl_lex_skip_literal(const char *t, uint32_t len, uint32_t i);
/* kl_lex_skip_comment where t[i] is a '/' with a byte after it. */
uint32_t kl_lex_skip_comment_slow(const char *t, uint32_t len, uint32_t i);
/* End of the comment starting at t[i] (a line comment's newline; len if unclosed), or i if none.
 * Inline: scanners ask at every byte, and almost none is a '/'. */
static inline uint32_t kl_lex_skip_comment(const char *t, uint32_t len, uint32_t i) {
  return i + 1 < len && t[i] == '/' ? kl_lex_skip_comment_slow(t, len, i) : i;
}
/* First offset at or after i past whitespace (line breaks included) and comments. */
uint32_t kl_lex_space(const char *t, uint32_t len, uint32_t i);
/* Whether the word w is at t[i] as a whole identifier (no identifier byte on either side). */
bool kl_lex_word(const char *t, uint32_t len, uint32_t i, const char *w);
/* t[s, e) copied into the arena with each whitespace run one space and none at the ends: how
 * the model writes the text of a node (blanked keywords leave runs of spaces inside types), and
 * how an instantiation read as text gives its arguments, so both read alike. */
char *kl_lex_collapse(struct kl_arena *a, const char *t, uint32_t s, uint32_t e);

#endif
