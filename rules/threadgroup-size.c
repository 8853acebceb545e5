/* threadgroup-size: STUB, replaced by the rule. */
#include "rules/rules.h"

const struct kl_rule kl_rule_threadgroup_size = {
    .id = "threadgroup-size",
    .default_severity = KL_SEV_WARNING,
    .implemented = false,
    .summary = "TODO",
    .what = "TODO",
    .why = "TODO",
    .example = "TODO",
    .instead = "TODO",
    .check = NULL,
};
