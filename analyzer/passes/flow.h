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

struct kl_flow {
  struct kl_flow_access *accesses;
  size_t naccesses, cap_accesses;
  size_t shared; /* helper walks taken from another specialisation's (kl_flow_share_walks) */
  /* The kernels that clamp a thread position itself below a size (`min(gid, n - 1)`), in their
   * runs (a kernel may be listed more than once): bounds-guard's question about clamps. */
  const struct kl_function **clamps;
  size_t nclamps, cap_clamps;
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
