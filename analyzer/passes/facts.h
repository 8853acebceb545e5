/* The facts the rules read, computed once per MSL unit: every kernel lowered into the IR per
 * specialisation (analyzer/ir/lower.h), and the passes over each (scalar evolution, uniformity),
 * whose answers are kept in tables by source position. A
 * rule asks these questions of a barrier, an access or a value; it never walks syntax for them. */
#ifndef KL_PASSES_FACTS_H
#define KL_PASSES_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/config.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/ir/ir.h"
#include "analyzer/core/model.h"
#include "analyzer/ir/lower.h"
#include "analyzer/passes/access.h"
#include "analyzer/passes/bgaccess.h"
#include "analyzer/passes/divergence.h"
#include "analyzer/passes/affine.h"
#include "analyzer/passes/ranges.h"
#include "analyzer/passes/scev.h"
#include "analyzer/passes/tgrace.h"
#include "analyzer/passes/uniformity.h"

/* One cause of a barrier's divergence, in the terms kl_facts_barrier gives its first in. */
struct kl_facts_cause {
  enum kl_divergence_kind kind;
  bool back_edge;
  TSNode node, exit_stmt, carried;
  const char *var;
};

/* A barrier of the lowered kernels: where its call starts, and whether any lowering reaches it
 * under control wider than its scope; when one does, why (analyzer/passes/divergence.h), as the
 * lowering with the widest control (the first of equals) explains it. */
struct kl_facts_barrier {
  uint32_t at;
  bool divergent;      /* some lowering reaches it under divergent control (dead code too) */
  bool dead;           /* (one lowering's record) in a branch its constants rule out */
  bool live_divergent; /* some lowering where it is live does: the rest below is its */
  uint32_t seq; /* order of recording: keeps the first of equals first */
  uint32_t run; /* the lowering it was recorded in */
  TSNode call;
  const struct kl_msl_fn *fn;
  enum kl_scope ctrl;
  enum kl_divergence_kind cause;
  bool back_edge;
  TSNode cause_node; /* the condition that diverges */
  TSNode exit_stmt;  /* KL_DIV_EXIT, and a LOOP through an earlier iteration: the exit */
  TSNode carried;    /* KL_DIV_LOOP: the previous iteration's assignment it diverges through */
  const char *cause_var;
  /* A cause of its own that the one above hides when that is an earlier return: what explains
   * the barrier with the return ruled out (a branch or loop around it, a later return), when it
   * still diverges then. */
  struct kl_facts_cause alt[1];
  uint8_t nalt;
  const struct kl_function *kernel; /* the kernel of the lowering explained */
  TSNode via; /* in a helper: the kernel's call that leads there, in that lowering */
  TSNode lambda_at; /* in a lambda: the call where it runs, in that lowering */
  /* Lowerings (a kernel in one specialisation) that reach it and those in which it diverges;
   * names: the latter's host names of instantiations, specialisation labels, or kernels. */
  uint32_t nreach, nflag;
  const char **names;
  size_t nnames;
};

/* A threadgroup race of the lowered kernels (analyzer/passes/tgrace.h), once per pair of nodes
 * however many lowerings find it: first is the access on the path before second. */
struct kl_facts_race {
  TSNode first, second; /* the accesses (their subscripts) */
  bool first_store, second_store;
  bool back_edge; /* the first is made in the previous iteration of loop */
  TSNode loop;
  TSNode fence; /* a threadgroup_barrier between them that orders no threadgroup memory */
  const struct kl_function *kernel;
};

/* What the ranges say of one access's index (a record of kl_facts.bg) against the bounds the
 * kernel sets (null nodes: nothing): see kl_facts_past_bound. */
struct kl_facts_bound {
  TSNode past_by, past_index;
  TSNode past_added; /* the part added that takes the index past (null: a constant) */
  const char *past_added_name; /* the name it goes by, or NULL */
  bool past_rounded; /* the bounded part counts tiles the kernel rounds up (kl_ranges_ceil_tiles) */
  TSNode past_row; /* a walk bounded by a constant in a row of a runtime length: the kernel's
                      comparison of the same position with that length (null: none) */
};

/* What the IR says of one access's index for bounds-guard (analyzer/passes/guards.h), over the
 * lowerings and instructions that hold it: a part unguarded in one is unguarded. */
struct kl_facts_guard {
  bool held;           /* some lowering holds it */
  bool thread_indexed; /* some index varies with a thread coordinate */
  bool unguarded;      /* some thread-derived part is bounded by nothing on its path */
  uint8_t dims;        /* grid dimensions of those parts: bit 0 x, 1 y, 2 z */
  bool wide;           /* one of those parts is no lane index alone (kl_guards_verdict.wide) */
  bool evidence;       /* the kernel compares that part against a size elsewhere, or clamps it */
  bool clamp;          /* the evidence is a clamp (min(v, n - 1)) */
  TSNode ev;           /* the comparison or clamp */
  const char *var;     /* the name of the unguarded part, or NULL (then part's text) */
  TSNode part;         /* the unguarded part's source */
};

/* What the rules may ask, kept after the lowered kernels are gone: the IR of one kernel lives
 * only while the passes run over it (kl_ir_lower_each), and each pass's answers are taken into
 * these tables then. */
struct kl_facts {
  size_t nfns;     /* kernels lowered, counting each specialisation */
  bool incomplete; /* some lowering was cut short: no question is answered (no veto) */
  struct kl_facts_barrier *barriers; /* one per call, by position */
  size_t nbarriers;
  struct kl_facts_race *races; /* threadgroup races, in the order the lowerings find them */
  size_t nraces, cap_races;
  /* The race analysis's cost, for tests: valuations tried and pairs of accesses decided (past
   * kl_race_meet's quick refusals). */
  size_t race_valuations, race_asked;
  struct kl_facts_bound *bounds; /* per access (NULL: none asked) */
  size_t naccesses;
  uint8_t *covered; /* per access: see kl_facts_launch_covers (NULL: none asked) */
  size_t ncovered;
  struct kl_facts_guard *guards; /* per access: see kl_facts_guard (NULL: none asked) */
  size_t nguards;
  /* bounds-guard's access list (analyzer/passes/bgaccess.h), every lowering's; bounds, covered
   * and guards above are keyed by it. */
  bool has_bg;
  struct kl_bgaccess *bg;
  size_t nbg;
  /* The device accesses of every lowering (analyzer/passes/access.h), in lowering order;
   * ninsts set, index_rep an index into this table. */
  bool has_access;
  struct kl_access *access;
  size_t naccess;
};

/* Lower the unit's kernels and run the passes; the same inputs as kl_ir_lower. Every kernel is
 * lowered (the device-access table and bounds-guard's list ask of each); the barriers, the
 * threadgroup races (analyzer/passes/tgrace.h) and bounds-guard's questions are answered while
 * each lowering is alive. */
void kl_facts_compute(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                      size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                      const struct kl_settings *s, struct kl_facts *out);
struct kl_xdefs;
/* kl_facts_compute, also reading the definitions of the functions the unit calls but does not
 * define from the headers it includes (xdefs, may be NULL). */
void kl_facts_compute_x(struct kl_arena *a, const struct kl_model *m,
                        const struct kl_dispatch *calls, size_t ncalls,
                        const struct kl_inst *xinsts, size_t nxinsts, const struct kl_settings *s,
                        struct kl_xdefs *xdefs, struct kl_facts *out);

struct kl_factkeep;
/* kl_facts_compute_x for one version of a document the language server keeps (keep, unless NULL,
 * from kl_factkeep_new): the kernels an edit since the version before cannot change are taken
 * from what keep holds of it, not lowered; keep then holds this version's. The facts are those
 * kl_facts_compute_x gives. */
void kl_facts_compute_kept(struct kl_arena *a, const struct kl_model *m,
                           const struct kl_dispatch *calls, size_t ncalls,
                           const struct kl_inst *xinsts, size_t nxinsts,
                           const struct kl_settings *s, struct kl_xdefs *xdefs,
                           struct kl_factkeep *keep, struct kl_facts *out);

/* How the lowered kernels judge the barrier call starting at byte `at`: returns false when no
 * lowered function holds it (kernlint could not lower it), else sets *divergent to whether any
 * of them reaches it under control wider than the barrier's scope. */
bool kl_facts_barrier(const struct kl_facts *f, uint32_t at, bool *divergent);
/* The barrier record of the call starting at byte `at`, or NULL when no lowering holds it or a
 * lowering was cut short (what it says might miss the code that makes the barrier diverge). */
const struct kl_facts_barrier *kl_facts_barrier_at(const struct kl_facts *f, uint32_t at);

/* Whether accesses a and b (LOAD, STORE or ATOMIC instructions of f) are ordered for every pair
 * of threads that can make them on one element: on each element they touch, only threads of
 * one SIMD group make them (one_sg: the caller knows it; else both run under `sg == c`, or both
 * index the slot of their own SIMD group, k * sg + c), and a SIMD-group-wide operation whose
 * result is read (simd_sum, simd_shuffle..., not a quad one) or a simdgroup_barrier lies between
 * them on every path, in the innermost block holding both, with no exit between the first and
 * it (and, inside a loop, the first before the second in that block): the lanes of one SIMD
 * group all run it together, so the first access is done before the second starts. False when
 * it cannot say. */
bool kl_facts_simd_ordered_ins(const struct kl_ir_fn *f, const struct kl_scev *s, uint32_t a,
                               uint32_t b, bool one_sg);

/* In what follows an access is an index into bounds-guard's list kl_facts.bg.
 *
 * Whether access `access` is kept in bounds by the
 * launches of its kernel seen in the run, in every lowering that holds it (one at least): its
 * address is bounded as kl_ranges_address_covered says under the launch (threadgroup sizes,
 * grids counted from a kernel argument) and not without it. Asked of unguarded thread-indexed
 * accesses where some launch of the run is known; false for any other. */
bool kl_facts_launch_covers(const struct kl_facts *f, size_t access);

/* What the IR says of access `access` for bounds-guard, or NULL when no lowering answers for
 * it. */
const struct kl_facts_guard *kl_facts_find_guard(const struct kl_facts *f, size_t access);

/* The comparison (or clamp) instruction of f whose bound w an index along the address of access
 * (a LOAD, STORE or ATOMIC) can pass on its path (kl_ranges_past_bound), that index in *index,
 * when the address steps by rows of w elements (`x + row * w`), so that w is the row's length;
 * 0 when none can. */
uint32_t kl_facts_past_ins(const struct kl_ir_fn *f, const struct kl_scev *s, struct kl_ranges *r,
                           uint32_t access, uint32_t *index);
/* As kl_facts_past_ins, also for a part added that is not a constant (kl_ranges_past_by): that
 * part in *added (0 for a constant), and the row's length in *size; *rounded when the bounded
 * part is a count of tiles the kernel rounds up itself (kl_ranges_ceil_tiles). */
uint32_t kl_facts_past_ins_by(const struct kl_ir_fn *f, const struct kl_scev *s,
                              struct kl_ranges *r, uint32_t access, uint32_t *index,
                              uint32_t *added, uint32_t *size, bool *rounded);
/* A clamp instruction of f below a size (min(v, n - 1), clamp(v, lo, n)) of a value that access's
 * offset is made of, which the ranges leave unbounded at the access: each of v's thread
 * coordinates and loop counters is in the offset with a positive coefficient, all scaled by one
 * factor, and v adds nothing past them (not `min(start + chunk, n)`, a chunk's end); 0 when
 * none. */
uint32_t kl_facts_clamp_ins(const struct kl_ir_fn *f, const struct kl_scev *s, struct kl_ranges *r,
                            uint32_t access);

/* Whether access a, thread-indexed, has in its lowering an
 * index that can reach the bound the kernel keeps a part of it below on its path
 * in a row of that bound's length (kl_facts_past_ins: `xr[c + 1]` in `for (c = lid; c < cols;
 * c += tg)`, xr = x + row * cols, can be xr[cols], past the row): then
 * *by is the comparison (or clamp) and *index the index. */
bool kl_facts_past_bound(const struct kl_facts *f, size_t a, TSNode *by, TSNode *index);
/* The part added that takes access a past its bound, when it is not a constant (the thread's
 * place in a tile, `lid` of `xr[i0 + lid]`; the threadgroup's width, `tg` of `xr[c + tg]`), or a
 * null node; *name (may be NULL) the name it goes by, or NULL. */
TSNode kl_facts_past_added(const struct kl_facts *f, size_t a, const char **name);
/* For access a reported past its bound: the kernel's comparison of the walk's position with the
 * row's length when the bound is a constant of the walk's own (`for (i = lid; i < 128; i +=
 * tg) xr[i]`, `xr = x + row * n`, beside `for (j = lid; j < n; j += tg)`), else a null node. */
TSNode kl_facts_past_row(const struct kl_facts *f, size_t a);
/* Whether access a is reported past its bound in a count of tiles the kernel rounds up itself
 * (`b * tg + lid` under `b < (n + tg - 1) / tg`). */
bool kl_facts_past_rounded(const struct kl_facts *f, size_t a);

#endif
