/* unused-suppression: reported by the engine (analyzer/report/suppress.c), listed here for docs. */
#include "rules/rules.h"

const struct kl_rule kl_rule_unused_suppression = {
    .id = "unused-suppression",
    .default_severity = KL_SEV_NOTE,
    .implemented = true,
    .summary = "A kernlint-disable comment that suppresses no diagnostic",
    .what = "Reports each rule id in a `kernlint-disable...` comment that suppressed nothing. "
            "Fix (`--fix`): the dead id goes from the comment, or the whole comment (its line, "
            "when it stands alone) when no id of it is left.",
    .why = "A stale suppression hides the next real finding on that line and misleads readers "
           "into thinking the code needs an exception.",
    .example = "float x = a[gid]; // kernlint-disable-line bounds-guard   (nothing to suppress)",
    .instead = "float x = a[gid];",
    .check = NULL,
};
