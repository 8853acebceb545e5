/* STUB: replaced by the .lintrc reader. */
#include "analyzer/config.h"

#include <stdio.h>
#include <string.h>

struct kl_config *kl_config_load(const char *path, char *err, size_t errlen) {
  snprintf(err, errlen, "%s: config not supported yet", path);
  return NULL;
}
void kl_config_delete(struct kl_config *c) {}
char *kl_config_find(const char *file_path) { return NULL; }
void kl_config_defaults(struct kl_settings *s) {
  memset(s, 0, sizeof *s);
  s->target = "m1";
  s->apple_family = 7;
  for (int i = 0; i < KL_CONFIG_MAX_RULES; i++) s->level[i] = -1;
}
void kl_config_apply(const struct kl_config *c, const char *file_path, struct kl_settings *s) {}
bool kl_config_selects(const struct kl_config *c, const char *file_path) { return true; }
bool kl_config_glob(const char *glob, const char *path) { return false; }
