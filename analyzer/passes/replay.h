/* What one lowering added to a unit's facts (analyzer/passes/facts.h), kept so that a later
 * lowering of the same kernel whose IR is the same (kl_ir_hash) adds it again without running
 * the passes: specialisations that differ only in what the kernel never reads lower alike, and
 * the passes answer alike of the same IR. Only what names the lowering differs: its
 * specialisation's label and host names, its place among the lowerings. */
#ifndef KL_PASSES_REPLAY_H
#define KL_PASSES_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/passes/access.h"
#include "analyzer/passes/bgaccess.h"

/* The facts' own records (analyzer/passes/facts.h), which the facts copy in and out. */
struct kl_facts_barrier;
struct kl_facts_guard;
struct kl_facts_bound;

/* One lowering's additions: its barrier records, device-access entries (table index first
 * when taken), bounds-guard records and the answers kept beside them (covered: NULL when the
 * unit keeps none). */
struct kl_replay_entry {
  uint64_t hash;
  struct kl_facts_barrier *barriers;
  size_t nbarriers;
  struct kl_access *access;
  size_t naccess, access_first;
  struct kl_bgaccess *bg;
  struct kl_facts_guard *guards;
  struct kl_facts_bound *bounds;
  uint8_t *covered;
  size_t nbg;
  /* The threadgroup race pass's pairs decided (its budget spent) and whether it ran whole
   * with every decision remembered: then a repeat decides the same pairs alike and finds no
   * race the unit lacks, and needs no IR to be taken. */
  uint32_t pairs;
  bool races_kept;
};

/* The entries of the kernel being lowered (a unit lowers its kernels one after another: an
 * entry of another kernel is never asked for again, and goes with its arena). */
struct kl_replay {
  struct kl_arena *a; /* NULL until the first entry */
  const struct kl_function *kernel;
  struct kl_replay_entry *v;
  size_t n, cap;
  /* The kernel's lowerings taken so far, and per lowering (from 1) the entry it added or
   * repeated, plus one (0: none). */
  uint32_t nlow;
  uint32_t *entry_of;
  size_t cap_of;
};

/* How long the unit's tables were before a lowering was taken: the facts' barrier records, the
 * device-access table, bounds-guard's records and runs. */
struct kl_replay_mark {
  size_t nbarriers, naccess, nbg, nruns;
};

/* A lowering of kernel k is taken: returns its place among k's lowerings (from 1). The
 * entries of another kernel go. */
uint32_t kl_replay_next(struct kl_replay *r, const struct kl_function *k);
/* The entry of an earlier lowering of kernel k with IR hash h, or NULL. */
const struct kl_replay_entry *kl_replay_find(const struct kl_replay *r,
                                             const struct kl_function *k, uint64_t h);
/* The entry lowering `of` (from 1) of kernel k added or repeated, or NULL. */
const struct kl_replay_entry *kl_replay_of(const struct kl_replay *r, const struct kl_function *k,
                                           uint32_t of);
/* Lowering `ord` of the kernel repeated entry e. */
void kl_replay_alias(struct kl_replay *r, uint32_t ord, const struct kl_replay_entry *e);
/* Keep what lowering `ord` of kernel k (the kernel of kl_replay_next), with IR hash h, added
 * since mark m to the device-access table t and bounds-guard's list l; returns its entry, whose
 * barrier records and answers the facts fill (kl_replay_copy). Nothing is kept (NULL) when its
 * bounds-guard run joined an earlier one (its answers went to that run's records). */
struct kl_replay_entry *kl_replay_keep(struct kl_replay *r, const struct kl_function *k,
                                       uint64_t h, uint32_t ord, struct kl_replay_mark m,
                                       const struct kl_access_table *t,
                                       const struct kl_bgaccess_list *l);
/* A copy of n elements of size sz at p among r's entries, or NULL for none. */
void *kl_replay_copy(struct kl_replay *r, const void *p, size_t n, size_t sz);
/* Append entry e's device-access entries to t for a lowering named by label inst (may be
 * NULL), kept in arena a. */
void kl_replay_access(struct kl_arena *a, const struct kl_replay_entry *e,
                      struct kl_access_table *t, const char *inst);
/* The names a divergent barrier record of lowering f carries (kl_facts_barrier.names): its
 * instantiations' host names, or its specialisation's label, or its kernel's name; *n their
 * count. */
const char **kl_replay_names(struct kl_arena *a, const struct kl_ir_fn *f, size_t *n);
/* Free r's entries. */
void kl_replay_free(struct kl_replay *r);

#endif
