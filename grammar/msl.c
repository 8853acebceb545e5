/* STUB: replaced by the MSL catalogue. */
#include "grammar/msl.h"

#include <string.h>

const struct kl_msl_coord *kl_msl_coord(const char *name) { return NULL; }
const struct kl_msl_coord *kl_msl_coords(size_t *n) { *n = 0; return NULL; }
const struct kl_msl_type *kl_msl_type(const char *name) { return NULL; }
const struct kl_msl_fn *kl_msl_fn(const char *name) { return NULL; }
static const struct kl_msl_family kl_families[] = {{"m1", 7, "M1"}};
const struct kl_msl_family *kl_msl_family(const char *name) {
  return strcmp(name, "m1") ? NULL : &kl_families[0];
}
const struct kl_msl_family *kl_msl_families(size_t *n) { *n = 1; return kl_families; }
const char *kl_msl_scope_name(enum kl_scope s) { return "?"; }
