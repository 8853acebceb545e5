/* Inline suppressions (kernlint-disable...), matched with PCRE2 in comments of the source. */
#ifndef KL_SUPPRESS_H
#define KL_SUPPRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/report/diag.h"
#include "analyzer/input/source.h"

/* Drop diagnostics that a suppression comment in src covers, then add an `unused-suppression`
 * note (at level unused_level; KL_SEV_OFF adds none) for each rule id in a comment that
 * suppressed nothing. Works for // comments and for # comments in Python. */
void kl_suppress_apply(const struct kl_source *src, struct kl_diag_list *diags,
                       enum kl_severity unused_level);

/* Index just past the block comment whose opener is at i, or limit when it is not closed before. */
uint32_t kl_suppress_block_end(const char *t, uint32_t limit, uint32_t i);
/* Whether c can be part of a C++ identifier. */
bool kl_suppress_ident(char c);
/* The Python string literal whose quote is at t[i]: *close where its body ends (the closing
 * quote, or the end of the line of an unclosed one-line string) and *after just past it; false
 * when it runs to the end of t. */
bool kl_suppress_py_string(const char *t, uint32_t n, uint32_t i, uint32_t *close,
                           uint32_t *after);
/* Index just past the C++ raw string R"d(...)d" whose quote is at q in t[0, n); 0 when q starts no
 * raw string, open_end when it is not closed. */
uint32_t kl_suppress_raw_string(const char *t, uint32_t n, uint32_t q, uint32_t open_end);

#endif
