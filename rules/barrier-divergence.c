/* barrier-divergence: documented here; its check arrives with the analysis core (uniformity, index algebra). */
#include "rules/rules.h"

const struct kl_rule kl_rule_barrier_divergence = {
    .id = "barrier-divergence",
    .default_severity = KL_SEV_ERROR,
    .implemented = false,
    .summary = "TODO",
    .what = "TODO",
    .why = "TODO",
    .example = "TODO",
    .instead = "TODO",
    .check = NULL,
};
