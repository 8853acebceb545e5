/* Expansions kept for reuse: what one kl_expand_keep gave for a text, kept for the next
 * kl_expand_text of the same text from the same include folder in the same generation, which
 * takes it instead of expanding again. Entries are bounded in bytes, and compact. */
#ifndef KL_KEPT_H
#define KL_KEPT_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"
#include "grammar/inst.h"

/* One kept expansion. */
struct kl_kept;

/* Keep what kl_expand_keep gave for text from include_dir (out: outlen bytes, or NULL; the
 * map's segments; the instantiations); nothing when the entries kept are at their budget. */
void kl_kept_put(const char *text, uint32_t len, const char *include_dir, const char *out,
                 uint32_t outlen, const struct kl_offmap *map, const struct kl_inst *insts,
                 size_t ninsts);
/* The kept expansion of text from include_dir in this generation, unlinked; NULL if none. */
struct kl_kept *kl_kept_take(const char *text, uint32_t len, const char *include_dir);
/* Give back what the kept expansion gave, copied into the arena, as kl_expand_text would. */
char *kl_kept_give(struct kl_arena *a, const struct kl_kept *k, uint32_t *outlen,
                   struct kl_offmap *map, struct kl_inst **insts, size_t *ninsts);
/* Free one kept expansion (taken, or never linked). */
void kl_kept_free(struct kl_kept *k);
/* Free every kept expansion and start a new generation: the headers they read may have
 * changed. */
void kl_kept_forget(void);

#endif
