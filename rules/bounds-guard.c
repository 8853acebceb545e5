/* bounds-guard: documented here; its check arrives with the analysis core (uniformity, index algebra). */
#include "rules/rules.h"

const struct kl_rule kl_rule_bounds_guard = {
    .id = "bounds-guard",
    .default_severity = KL_SEV_ERROR,
    .implemented = false,
    .summary = "TODO",
    .what = "TODO",
    .why = "TODO",
    .example = "TODO",
    .instead = "TODO",
    .check = NULL,
};
