/* Inline suppressions (kernlint-disable...), matched with PCRE2 in comments of the source. */
#ifndef KL_SUPPRESS_H
#define KL_SUPPRESS_H

#include "analyzer/diag.h"
#include "analyzer/source.h"

/* Drop diagnostics that a suppression comment in src covers, then add an `unused-suppression`
 * note (at level unused_level; KL_SEV_OFF adds none) for each rule id in a comment that
 * suppressed nothing. Works for // comments and for # comments in Python. */
void kl_suppress_apply(const struct kl_source *src, struct kl_diag_list *diags,
                       enum kl_severity unused_level);

#endif
