/* The MSL dialect layer over tree-sitter-cpp: hides what is not C++ without moving positions
 * (address spaces and function qualifiers become spaces, recorded in a side table), expands
 * file-local macros where that turns an ERROR node into a clean parse, and parses. */
#ifndef KL_DIALECT_H
#define KL_DIALECT_H

#include <stdbool.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"
#include "analyzer/input/source.h"
#include "grammar/inst.h"

enum kl_kw {
  KL_KW_DEVICE,
  KL_KW_CONSTANT,
  KL_KW_THREADGROUP,
  KL_KW_THREAD,
  KL_KW_THREADGROUP_IMAGEBLOCK,
  KL_KW_RAY_DATA,
  KL_KW_OBJECT_DATA,
  KL_KW_KERNEL, /* `kernel` qualifier (the `[[kernel]]` attribute stays in the tree) */
  KL_KW_VERTEX,
  KL_KW_FRAGMENT,
  KL_KW_PRAGMA_OP,  /* a blanked _Pragma("...") */
  KL_KW_QUALIFIER,  /* a macro that spells function qualifiers only (`METAL_FUNC`) */
  KL_KW_LOOP_MACRO, /* a macro standing alone, no semicolon, right before a loop (an unroll hint) */
  KL_KW_COHERENT,   /* `coherent(device)` or `coherent(system)` */
  KL_KW_OPERATOR_CALL /* `operator` in `x.operator T()`, a conversion operator called by name */
};

/* One blanked keyword: its buffer offset and length, and what it was. */
struct kl_keyword {
  uint32_t off, len;
  enum kl_kw kind;
};

/* A parsed MSL translation unit (a .metal file, a PyTorch source, or an MLX header+body). */
struct kl_unit {
  const struct kl_source *src; /* the file positions are reported in */
  const char *buf; /* what tree-sitter parsed; same length as file text unless expanded */
  uint32_t len;
  struct kl_offmap map;   /* buf offset -> src file offset */
  struct kl_keyword *kws; /* sorted by off */
  size_t nkws, cap_kws;
  TSTree *tree;
  /* Explicit instantiations read as text and left out of the parse (blanked, or, when a macro
   * stamps them out, never written into buf): in buffer order. */
  struct kl_inst *insts;
  size_t ninsts, cap_insts;
  unsigned nerrors; /* ERROR and MISSING nodes left after the dialect layer */
  bool expanded;    /* macros were expanded to get this parse */
};

/* Parse MSL text (bytes that map to src through base, or identity when base is NULL).
 * include_dir is where `#include "x.h"` headers are looked up for macro definitions (may be NULL).
 * Returns -1 with a reason in err when parsing is impossible (timeout); unit->tree owned by unit.
 */
int kl_dialect_parse(struct kl_arena *a, const struct kl_source *src, const char *text,
                     uint32_t len, const struct kl_offmap *base, const char *include_dir,
                     struct kl_unit *unit, char *err, size_t errlen);
/* A text and the tree parsed of it, kept for the next parse to edit. */
struct kl_dialect_kept {
  char *text; /* what the tree parsed (malloc'd; kl_dialect_reuse_end frees it) */
  uint32_t len;
  TSTree *tree;
  long nerrors; /* the tree's ERROR and MISSING nodes; -1: not counted yet */
};
/* The last trees of a run of units (the MLX kernels of one Python file, the versions of one
 * document in the language server), which the next unit's parses edit when the two texts begin
 * or end alike: its first parse's, and its macros' expansion's. A clean tree is kept over one
 * with errors. Zeroed by its owner; kl_dialect_reuse_end frees it. */
struct kl_dialect_reuse {
  struct kl_dialect_kept first, expanded;
  /* The last unit's first parse had errors and its expansion parsed clean: where no edit of a
   * kept first tree is taken, the next first parse stops at its first error, which is all the
   * choice of the expansion asks of it then. */
  bool probe;
};
/* buf parsed in language lang within timeout_us (NULL when it runs out): as an edit of the tree k
 * keeps where the edit's result may be taken for a fresh parse's (the two texts share a long start
 * or end, and the edit keeps the errors of the tree before), else afresh; k then keeps it. k NULL:
 * afresh, nothing kept. */
TSTree *kl_dialect_parse_kept(const TSLanguage *lang, uint32_t timeout_us, const char *buf,
                              uint32_t len, struct kl_dialect_kept *k);
/* Free the tree and text k keeps; k can be used again. */
void kl_dialect_kept_end(struct kl_dialect_kept *k);
/* kl_dialect_parse, reusing and then updating r (NULL: as kl_dialect_parse). */
int kl_dialect_parse_next(struct kl_arena *a, const struct kl_source *src, const char *text,
                          uint32_t len, const struct kl_offmap *base, const char *include_dir,
                          struct kl_dialect_reuse *r, struct kl_unit *unit, char *err,
                          size_t errlen);
/* Free the tree and text a run of kl_dialect_parse_next kept; r can be used again. */
void kl_dialect_reuse_end(struct kl_dialect_reuse *r);
/* kl_dialect_parse, with the explicit instantiations left in the tree (unit->insts stays
 * empty): for tools that translate the tree back into source. */
int kl_dialect_parse_whole(struct kl_arena *a, const struct kl_source *src, const char *text,
                           uint32_t len, const struct kl_offmap *base, const char *include_dir,
                           struct kl_unit *unit, char *err, size_t errlen);
/* Delete the unit's tree (its arena memory goes with the arena). */
void kl_dialect_release(struct kl_unit *unit);
/* The blanked keyword starting at buffer offset off, or NULL. */
const struct kl_keyword *kl_dialect_keyword_at(const struct kl_unit *unit, uint32_t off);
/* Blanked keywords within buffer range [start, end): index of the first, count in *n. */
const struct kl_keyword *kl_dialect_keywords_in(const struct kl_unit *unit, uint32_t start,
                                                uint32_t end, size_t *n);
/* Start of n's bytes, blanked keywords before it included (tree-sitter sees them as spaces). */
uint32_t kl_dialect_lead(TSNode n);
/* What a walk's visitor wants next: the node's children, the nodes after its subtree, or none. */
enum kl_walk { KL_WALK_DESCEND, KL_WALK_SKIP, KL_WALK_STOP };
/* Visit root and its descendants in preorder without recursion, never above root; depth, when
 * not NULL, holds the visited node's depth below root (root is 0) during each visit. */
void kl_dialect_walk(TSNode root, enum kl_walk (*visit)(TSNode n, void *ctx), void *ctx,
                     uint32_t *depth);
/* Where a kl_dialect_walk_trail is: what kl_dialect_trail_lead reads. */
struct kl_walk_trail;
/* kl_dialect_walk, with the walk's trail handed to each visit. */
void kl_dialect_walk_trail(TSNode root,
                           enum kl_walk (*visit)(TSNode n, const struct kl_walk_trail *t,
                                                 void *ctx),
                           void *ctx);
/* kl_dialect_lead of the node being visited, from what the walk has seen. */
uint32_t kl_dialect_trail_lead(const struct kl_walk_trail *t);
/* ts_node_parent(n), read from the walk's trail when n is on it (the node visited or one of its
 * ancestors below the walk's root): tree-sitter finds a parent by descending from the root. */
TSNode kl_dialect_trail_parent(const struct kl_walk_trail *t, TSNode n);
/* Text of a node from the parsed buffer, copied into the arena. */
char *kl_dialect_node_text(struct kl_arena *a, const struct kl_unit *unit, TSNode node);
/* The explicit instantiations in text once its macros (and those of the local headers it
 * includes from include_dir) are expanded, without parsing it: how a header's templated
 * kernels learn the instantiations that the files including it make. The expansion is kept
 * for the parse of the same text (kl_expand_keep). */
size_t kl_dialect_instances(struct kl_arena *a, const char *text, uint32_t len,
                            const char *include_dir, struct kl_inst **out);
/* The tree-sitter-cpp language (compiled in from the pinned grammar). */
const TSLanguage *kl_dialect_cpp(void);
/* The tree-sitter-python language (compiled in from the pinned grammar). */
const TSLanguage *kl_dialect_python(void);

#endif
