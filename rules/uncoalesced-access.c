/* uncoalesced-access: documented here; its check arrives with the analysis core (uniformity, index algebra). */
#include "rules/rules.h"

const struct kl_rule kl_rule_uncoalesced_access = {
    .id = "uncoalesced-access",
    .default_severity = KL_SEV_WARNING,
    .implemented = false,
    .summary = "TODO",
    .what = "TODO",
    .why = "TODO",
    .example = "TODO",
    .instead = "TODO",
    .check = NULL,
};
