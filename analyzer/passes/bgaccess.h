/* bounds-guard's access list, read from the lowered kernels: what the rule reports on
 * (analyzer/passes/facts.h builds it and keeps the answers to the rule's questions beside it,
 * keyed by the record).
 *
 * What it holds. One record per device access -- a LOAD, STORE or ATOMIC whose address reaches a
 * kernel's device buffer (through subscripts, fields, casts, pointer sums, and a thread's own
 * array of row pointers; the device-access table, analyzer/passes/access.h, gives buffer and
 * offset where it lists the access) -- per source node, kernel call and specialisation: the
 * grain at which bounds-guard names the specialisations a finding holds for ("where N = 2"). A
 * record is joined across the lowerings that hold it (a kernel lowered twice under one label),
 * and across the instructions of one lowering that make it (the load and store of `x[i] += v`,
 * a helper inlined twice under one call of the kernel): the facts ask their questions of each
 * instruction (kl_bgaccess_pair) and join the answers.
 *
 * The node. A record is known by the element it reaches, as the message shows it: the subscript
 * of the buffer's pointer (`x[i]` of `x[i].qs[j]`, `dst[b]` of
 * `*reinterpret_cast<device float4*>(&dst[b])`, `ax[row][ib]` of `ax[row][ib].d`), or the access
 * itself where its address is made elsewhere (`*p`; for a field through a pointer, `xr->qs`);
 * a field of an element bound by reference (`xb.qs` after `device const T & xb = x[i]`) is of
 * that element. */
#ifndef KL_PASSES_BGACCESS_H
#define KL_PASSES_BGACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/core/arena.h"
#include "analyzer/core/model.h"
#include "analyzer/ir/ir.h"
#include "analyzer/passes/access.h"
#include "analyzer/passes/affine.h"
#include "analyzer/passes/guards.h"
#include "analyzer/passes/scev.h"

/* One device access of the unit's kernels for bounds-guard. */
struct kl_bgaccess {
  TSNode node;                      /* the element reached (see above) */
  const struct kl_function *kernel; /* the kernel of the lowerings holding it */
  const struct kl_function *owner;  /* the function whose code holds it (a helper, or kernel) */
  const struct kl_var *buffer;      /* the kernel buffer it reaches */
  TSNode call;       /* in a helper: the kernel's own call that leads there (null in the kernel) */
  const char *inst;  /* the specialisation label ("N = 2"), NULL when lowered unspecialised */
  uint16_t ninsts;   /* how many specialisations of the kernel were lowered (kl_bgaccess_finish) */
  bool store;        /* some instruction making it writes (a store or an atomic) */
  struct kl_affine form; /* element offset from the buffer, in the atoms of lowering `run` */
  uint32_t run;          /* the first lowering holding it, counted from 1 (kl_bgaccess_take) */
};

/* An instruction of one lowering that makes record rec. */
struct kl_bgaccess_pair {
  uint32_t rec, ins;
};

/* A lowering taken: its kernel, label, and the records it made (first, n); joined when an
 * earlier lowering of the kernel had its label (its records are that one's). */
struct kl_bgaccess_run {
  const struct kl_function *kernel;
  const char *inst;
  size_t first, n;
  bool joined;
};

/* The list of a unit, growing as its kernels are lowered. */
struct kl_bgaccess_list {
  struct kl_bgaccess *v;
  size_t n, cap;
  struct kl_bgaccess_run *runs; /* every lowering taken, in order */
  size_t nruns, cap_runs;
};

/* The node record an access instruction v of f is known by (see above): the subscript of a
 * pointer along its address, within v's own node, else v's node. */
TSNode kl_bgaccess_node(const struct kl_ir_fn *f, uint32_t v);

/* Take lowering f into l: each live device access instruction of f (a LOAD, STORE or ATOMIC of
 * device memory, or reaching a kernel's device buffer) makes a record, or joins the one made at
 * the same node and call by another instruction of f or by an earlier lowering of the same
 * kernel and label. Buffer and offset come from f's entries of the device-access table t[0, nt)
 * (kl_access_collect), else are walked here (through a thread's own array by g, which may be
 * NULL; s may be NULL: no offset). *pairs (in f's arena) receives each such instruction with its
 * record; returns how many. */
size_t kl_bgaccess_take(struct kl_arena *a, struct kl_bgaccess_list *l, const struct kl_ir_fn *f,
                        const struct kl_scev *s, const struct kl_access *t, size_t nt,
                        const struct kl_guards *g, struct kl_bgaccess_pair **pairs);

/* Take lowering f as kl_bgaccess_take would when its IR is that of an earlier lowering of the
 * same kernel whose own run joined none and made records recs[0, n): a new run under f's label
 * whose records are copies of those. False, with nothing taken, when f's label would join an
 * earlier run (then only kl_bgaccess_take knows its records). */
bool kl_bgaccess_again(struct kl_arena *a, struct kl_bgaccess_list *l, const struct kl_ir_fn *f,
                       const struct kl_bgaccess *recs, size_t n);

/* Set each record's ninsts once every kernel is lowered: the labels its kernel was lowered
 * under. */
void kl_bgaccess_finish(struct kl_bgaccess_list *l);

#endif
