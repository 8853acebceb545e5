/* STUB: replaced by the kernel model builder. */
#include "analyzer/model.h"

#include <string.h>

void kl_model_build(struct kl_arena *a, const struct kl_unit *unit, struct kl_model *out) {
  memset(out, 0, sizeof *out);
  out->unit = unit;
}
const struct kl_function *kl_model_function(const struct kl_model *m, const char *name) {
  return NULL;
}
const struct kl_attr *kl_model_attr(const struct kl_function *f, const char *name) { return NULL; }
const struct kl_var *kl_model_var(const struct kl_function *f, const char *name) { return NULL; }
const char *kl_model_addrspace_name(enum kl_addrspace as) { return ""; }
