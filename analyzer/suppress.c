/* STUB: replaced by the suppression matcher. */
#include "analyzer/suppress.h"

void kl_suppress_apply(const struct kl_source *src, struct kl_diag_list *diags,
                       enum kl_severity unused_level) {}
