/* Rule ids in registry order (see rule_ids.h). */
#include "rules/rule_ids.h"

#include <string.h>

static const char *const kl_ids[KL_RULE_IDS_COUNT] = {
    "bounds-guard",       "threadgroup-size",   "half-accumulator",
    "barrier-divergence", "uncoalesced-access", "bfloat-target",
    "threadgroup-race",   "unused-suppression", "unresolved-source",
};

int kl_rule_ids_index(const char *id) {
  for (size_t i = 0; i < KL_RULE_IDS_COUNT; i++)
    if (!strcmp(kl_ids[i], id)) return (int)i;
  return -1;
}

const char *kl_rule_ids_name(size_t i) {
  return kl_ids[i];
}
