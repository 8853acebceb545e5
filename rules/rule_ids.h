/* Rule ids in registry order (kl_rules_all): the names .lintrc files address rules by, and the
 * index of kl_settings.level. A leaf of its own so that settings are read without the rules,
 * which read settings; tests/unit/test_config.c checks that it matches the registry. */
#ifndef KL_RULE_IDS_H
#define KL_RULE_IDS_H

#include <stddef.h>

/* How many rules the registry holds. */
enum { KL_RULE_IDS_COUNT = 9 };

/* Registry index of a rule id, or -1. */
int kl_rule_ids_index(const char *id);
/* The id of the rule at registry index i (i < KL_RULE_IDS_COUNT). */
const char *kl_rule_ids_name(size_t i);

#endif
