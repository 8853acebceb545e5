/* The threadgroup size a kernel's array extents imply (extent.h). */
#include "analyzer/passes/extent.h"

#include <stdbool.h>
#include <string.h>

#include "analyzer/core/model.h"

/* Whether block b, or a block nested in it, holds a RETURN: threads may leave there. */
static bool kl_extent_leaves(const struct kl_ir_fn *f, uint32_t b, int depth) {
  if (b == KL_IR_NONE || b >= f->nblocks || depth > 64) return depth > 64;
  const struct kl_ir_block *bl = &f->blocks[b];
  for (uint32_t i = 0; i < bl->n; i++) {
    const struct kl_ir_ins *in = &f->ins[bl->ins[i]];
    if (in->op == KL_IR_RETURN) return true;
    if (in->op == KL_IR_IF || in->op == KL_IR_LOOP)
      for (int k = 0; k < 3; k++)
        if (kl_extent_leaves(f, in->blk[k], depth + 1)) return true;
  }
  return false;
}

/* The threads an access allows: the count n with k * (n - 1) + c <= len - 1, or 0. */
static int64_t kl_extent_allows(const struct kl_ir_fn *f, const struct kl_scev *sc,
                                const struct kl_ir_ins *in) {
  uint32_t root;
  struct kl_affine off;
  if (!in->nops || !kl_scev_address(sc, in->ops[0], &root, &off) || !off.known ||
      off.c0_symbolic || off.c0 < 0 || off.n != 1 || off.t[0].symbolic || off.t[0].k <= 0)
    return 0;
  const struct kl_ir_ins *al = root < f->nins ? &f->ins[root] : NULL;
  /* A subscript of the array itself: through a cast (`((threadgroup float *)t4)[i]`) the
   * offset would count another type's elements than the length does. */
  const struct kl_ir_ins *ix = in->ops[0] < f->nins ? &f->ins[in->ops[0]] : NULL;
  if (!ix || ix->op != KL_IR_INDEX || !ix->nops || ix->ops[0] != root) return 0;
  /* One dimension only: the offset is then in the array's own elements. */
  if (!al || al->op != KL_IR_ALLOC || al->as != KL_AS_THREADGROUP || al->imm <= 0 || !al->var ||
      !al->var->array_dims || strchr(strchr(al->var->array_dims, '[') + 1, '['))
    return 0;
  const struct kl_scev_atom *at = kl_scev_atom(sc, off.t[0].atom);
  if (!at || at->kind != KL_SCEV_COORD || !at->coord ||
      strcmp(at->coord->name, "thread_index_in_threadgroup"))
    return 0;
  int64_t last = al->imm - 1 - off.c0;
  return last < 0 ? 0 : last / off.t[0].k + 1;
}

int64_t kl_extent_max_threads(const struct kl_ir_fn *f, const struct kl_scev *sc) {
  if (!f || !sc || f->body == KL_IR_NONE || f->body >= f->nblocks) return 0;
  const struct kl_ir_block *b = &f->blocks[f->body];
  int64_t best = 0;
  for (uint32_t i = 0; i < b->n; i++) {
    const struct kl_ir_ins *in = &f->ins[b->ins[i]];
    if (in->op == KL_IR_RETURN) break;
    if (in->op == KL_IR_IF || in->op == KL_IR_LOOP) {
      bool leaves = false;
      for (int k = 0; k < 3 && !leaves; k++) leaves = kl_extent_leaves(f, in->blk[k], 0);
      if (leaves) break;
      continue;
    }
    if ((in->op != KL_IR_LOAD && in->op != KL_IR_STORE) || in->as != KL_AS_THREADGROUP) continue;
    int64_t n = kl_extent_allows(f, sc, in);
    if (n > 0 && (!best || n < best)) best = n;
  }
  return best;
}
