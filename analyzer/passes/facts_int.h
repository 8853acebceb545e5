/* What facts.c shares with factkeep.c, which keeps a kernel's share of the facts across
 * versions of a document: the state of one unit's lowering (kl_facts_compute_x), and the
 * calls between the two. For those two files only. */
#ifndef KL_PASSES_FACTS_INT_H
#define KL_PASSES_FACTS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/core/model.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/passes/access.h"
#include "analyzer/passes/bgaccess.h"
#include "analyzer/passes/replay.h"
#include "analyzer/passes/tgrace.h"
#include "analyzer/passes/uniformity.h"
#include "grammar/preproc.h"

struct kl_xdefs;
struct kl_factkeep;
struct kl_facts;
struct kl_facts_race;

/* Valuations and pairs of accesses the race analysis may decide per unit (kl_race_meet): some
 * hundred times what the development corpus needs, and a bound on error-recovered loops. */
enum { KL_FACTS_RACE_VALUATIONS = 65536, KL_FACTS_RACE_PAIRS = 65536 };

/* What the lowering of one unit is run with, and where the answers go. */
struct kl_facts_run {
  struct kl_arena *a;
  const struct kl_model *m;
  const struct kl_dispatch *calls;
  size_t ncalls;
  struct kl_facts *out;
  size_t cap_barriers;
  struct kl_tgrace_budget tg; /* threadgroup races' budgets */
  const bool *reach; /* per function of the model: it may reach a barrier */
  struct kl_bgaccess_list *bg; /* bounds-guard's access list being filled; its answers' arrays
                                  hold cap_bg */
  size_t cap_bg;
  bool cover_bg; /* kl_facts_launch_covers is asked of its records */
  const struct kl_settings *settings;
  struct kl_access_table *access; /* the device-access table being filled, or NULL */
  const struct kl_function **lowered; /* the kernels lowered, nlowered; per kernel, how many */
  uint16_t *nlowered_of;
  size_t nlowered, cap_lowered, cap_nlowered;
  bool others; /* some question besides the device-access table is asked */
  struct kl_uniformity_ext ext; /* the headers' definitions of the functions called (ctx NULL:
                                   none are read) */
  /* The clamps of the function kl_facts_take_bg is at (kl_facts_clamps), found once it first
   * asks: every unguarded access asks, and a scan per access is quadratic in a large kernel. */
  uint32_t *clamps;
  size_t nclamps;
  bool clamps_found;
  struct kl_replay replay; /* what the lowerings of the kernel being lowered added */
  struct kl_pp_arms arms;  /* the #if branches of the unit's buffer (kl_guards.arms) */
  struct kl_xdefs *xdefs;  /* the headers' definitions (NULL: none are read) */
  /* The language server's facts kept from the document's version before (factkeep.h), or NULL,
   * and what it needs of the kernel being lowered: the threadgroup races its lowerings found
   * (before dropping those found already), whether one was cut short. */
  struct kl_factkeep *keep;
  struct kl_facts_race *found;
  size_t nfound, cap_found;
  bool k_incomplete;
  /* The names whose headers' definitions the kernel being lowered asked of (kl_xdefs_result_scope),
   * in order, and the answers (kept when r->keep is set). */
  const char **asked;
  enum kl_scope *answers;
  size_t nasked, cap_asked, cap_answers;
};

/* Grow the answers keyed by bounds-guard's access list to its n records (cleared: unasked). */
void kl_facts_grow_bg(struct kl_facts_run *r, size_t n);
/* Add the threadgroup race x, as a lowering of its kernel found it, unless an earlier lowering
 * found the pair; kept among the races the kernel found. */
void kl_facts_add_race(struct kl_facts_run *r, const struct kl_facts_race *x);
/* One more lowering of kernel k counted (kl_access.ninsts), n times. */
void kl_facts_count_kernel(struct kl_facts_run *r, const struct kl_function *k, uint16_t n);

/* Start a unit's lowering (r->keep set, r's tables empty, nxinsts the instantiations read from
 * other files): what of the version before can be taken. */
void kl_factkeep_begin(struct kl_facts_run *r, size_t nxinsts);
/* kl_ir_lower_skip for the run ctx: ends what the kernel before added, and takes kernel k from
 * the version before when it can. */
bool kl_factkeep_kernel(void *ctx, const struct kl_function *k, uint64_t unit_ins,
                        uint64_t *ins);
/* End the unit's lowering, unit_ins the instructions counted: false when a kernel was taken that
 * this version may decide otherwise (the unit is then lowered again whole: the next begin takes
 * nothing); else the keep holds this version. */
bool kl_factkeep_end(struct kl_facts_run *r, uint64_t unit_ins);

#endif
