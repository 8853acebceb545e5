/* The flow analyses over each kernel and the same-file helpers it calls: uniformity (scope of
 * every value and of the control at every point), index algebra for device-memory accesses, and
 * guards (which comparisons dominate an access). They produce facts that rules read. */
#ifndef KL_FLOW_H
#define KL_FLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/passes/affine.h"
#include "analyzer/core/arena.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/core/model.h"
#include "grammar/msl.h"

/* The file's settings (analyzer/core/config.h); only passed through here. */
struct kl_settings;

enum kl_flow_cause {
  KL_CAUSE_NONE,
  KL_CAUSE_BRANCH, /* an if/switch/ternary condition */
  KL_CAUSE_LOOP,   /* a loop condition */
  KL_CAUSE_RETURN, /* an earlier return under a condition */
  KL_CAUSE_EXIT    /* an earlier continue or break of the same loop iteration, under a condition */
};

/* A barrier call and the control it is reached under. */
struct kl_flow_barrier {
  TSNode call;
  const struct kl_msl_fn *fn;
  enum kl_scope ctrl;       /* widest scope of the control that reaches it */
  enum kl_flow_cause cause; /* why, when ctrl is wider than the barrier allows */
  TSNode cause_node;        /* the condition that diverges */
  const char *cause_var;    /* a thread-dependent name in that condition, or NULL */
  bool back_edge;           /* KL_CAUSE_LOOP: the cause is a break in an earlier iteration */
  TSNode exit_stmt;         /* KL_CAUSE_EXIT: the continue or break */
  TSNode carried; /* KL_CAUSE_LOOP: the assignment of the previous iteration through which the
                     condition diverges, when it does only through the back edge */
  const struct kl_function *owner;
  TSNode via; /* in a helper: the call in the kernel that leads there (in the run that set ctrl) */
  const struct kl_function *kernel; /* the kernel of that run */
  TSNode lambda_at; /* in a lambda: the call where it runs (in that run) */
  /* Runs (a kernel in one specialisation) that reach the barrier, and those in which it
   * diverges; when not all, insts names the latter: host names of the instantiations, the
   * specialisation ("N = 2") where there are none, or the kernel for a run with neither. */
  uint32_t nreach, nflag, last_reach, last_flag;
  const char **insts;
  size_t ninsts, cap_insts;
};

/* A device-memory load or store. */
struct kl_flow_access {
  TSNode node;                 /* subscript_expression or `*ptr` expression */
  const struct kl_var *buffer; /* the device buffer (parameter) it reaches */
  const char *elem_type;       /* element type of the pointer indexed */
  bool store;
  struct kl_affine form;     /* index in elements from the buffer start */
  bool thread_indexed;       /* index derives from a thread coordinate */
  bool unguarded;            /* some thread-derived part is bounded by no dominating guard */
  uint8_t unguarded_dims;    /* grid dimensions of those parts: bit 0 x (and scalar coordinates),
                                bit 1 y, bit 2 z */
  bool evidence;             /* the kernel compares that part against a size elsewhere */
  const char *unguarded_var; /* the thread-derived name lacking a guard */
  TSNode evidence_node;      /* the comparison that is the evidence */
  const struct kl_function *owner;
  TSNode call;      /* in a helper: the call in the kernel whose context this record is (null in
                       the kernel itself) */
  const char *inst; /* the specialisation of its kernel it was found in ("N = 2, has_mask =
                       true"), or NULL when the kernel is analysed once, unspecialised */
  uint16_t ninsts;  /* how many specialisations of that kernel were analysed */
};

/* Two accesses to one element of threadgroup memory that two threads of a threadgroup can make,
 * one of them a write, with no barrier ordering threadgroup memory between them on some path. */
struct kl_flow_race {
  TSNode first, second; /* the accesses (subscript expressions), in path order */
  bool first_store, second_store;
  bool back_edge; /* the first is made in the previous iteration of loop */
  TSNode loop;
  TSNode fence;   /* a threadgroup_barrier between them that orders no threadgroup memory */
  const struct kl_function *kernel;
};

struct kl_flow {
  struct kl_flow_barrier *barriers;
  size_t nbarriers, cap_barriers;
  struct kl_flow_access *accesses;
  size_t naccesses, cap_accesses;
  struct kl_flow_race *races;
  size_t nraces, cap_races;
  size_t shared; /* helper walks taken from another specialisation's (kl_flow_share_walks) */
  /* The kernels that clamp a thread position itself below a size (`min(gid, n - 1)`), in their
   * runs (a kernel may be listed more than once): bounds-guard's question about clamps. */
  const struct kl_function **clamps;
  size_t nclamps, cap_clamps;
  /* The race analysis's cost, for tests: valuations tried, pairs of accesses it was asked
   * (past its quick refusals), and those of them answered from the pairs already decided. */
  size_t race_valuations, race_asked, race_answered;
};

/* Analyse every kernel of the model (and the helpers they call), once per specialisation: each
 * distinct set of values its value template parameters take in the file's explicit
 * instantiations and in the template bindings of calls (MLX template=) (for a kernel the unit
 * never instantiates, in xinsts: those other files of the run make), times each value of the
 * bool function constants it tests. An access is recorded once per specialisation. Settings (may
 * be NULL) name the values that are one element's size in bytes (unit-strides). */
void kl_flow_analyze(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                     size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                     const struct kl_settings *s, struct kl_flow *out);

/* Whether a specialisation takes a helper's walk from another one whose walk read the same
 * (default on; tests compare the two, whose facts must be equal). Set before any analysis. */
void kl_flow_share_walks(bool on);

#endif
