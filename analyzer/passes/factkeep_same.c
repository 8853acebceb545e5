/* The factkeep module's check that kept facts are those lowered afresh (kl_factkeep_same in
 * factkeep.h), which the trail-check build and the tests ask. Part of the factkeep module, in a
 * file of its own for its size. */
#include <string.h>

#include "analyzer/passes/factkeep.h"
#include "analyzer/passes/facts.h"

/* ---- The asan build's check ------------------------------------------------------------------ */

static bool kl_fk_str_eq(const char *x, const char *y) {
  return x == y || (x && y && !strcmp(x, y));
}

static bool kl_fk_barrier_eq(const struct kl_facts_barrier *x, const struct kl_facts_barrier *y) {
  if (x->at != y->at || x->divergent != y->divergent || x->dead != y->dead ||
      x->live_divergent != y->live_divergent || x->seq != y->seq || x->run != y->run ||
      !ts_node_eq(x->call, y->call) || x->fn != y->fn || x->ctrl != y->ctrl ||
      x->cause != y->cause || x->back_edge != y->back_edge ||
      !ts_node_eq(x->cause_node, y->cause_node) || !ts_node_eq(x->exit_stmt, y->exit_stmt) ||
      !ts_node_eq(x->carried, y->carried) || !kl_fk_str_eq(x->cause_var, y->cause_var) ||
      x->nalt != y->nalt || x->kernel != y->kernel || !ts_node_eq(x->via, y->via) ||
      !ts_node_eq(x->lambda_at, y->lambda_at) || x->nreach != y->nreach ||
      x->nflag != y->nflag || x->nnames != y->nnames)
    return false;
  for (uint8_t i = 0; i < x->nalt; i++)
    if (x->alt[i].kind != y->alt[i].kind || x->alt[i].back_edge != y->alt[i].back_edge ||
        !ts_node_eq(x->alt[i].node, y->alt[i].node) ||
        !ts_node_eq(x->alt[i].exit_stmt, y->alt[i].exit_stmt) ||
        !ts_node_eq(x->alt[i].carried, y->alt[i].carried) ||
        !kl_fk_str_eq(x->alt[i].var, y->alt[i].var))
      return false;
  for (size_t i = 0; i < x->nnames; i++)
    if (!kl_fk_str_eq(x->names[i], y->names[i])) return false;
  return true;
}

static bool kl_fk_affine_eq(const struct kl_affine *x, const struct kl_affine *y) {
  if (x->known != y->known || x->partial != y->partial || x->c0_symbolic != y->c0_symbolic ||
      x->sym != y->sym || x->c0 != y->c0 || x->n != y->n)
    return false;
  for (uint8_t i = 0; i < x->n && i < KL_AFFINE_MAX_TERMS; i++)
    if (x->t[i].atom != y->t[i].atom || x->t[i].symbolic != y->t[i].symbolic ||
        x->t[i].sym != y->t[i].sym || x->t[i].k != y->t[i].k)
      return false;
  return true;
}

static bool kl_fk_access_eq(const struct kl_access *x, const struct kl_access *y) {
  return x->ins == y->ins && x->address == y->address && ts_node_eq(x->node, y->node) &&
         x->buffer == y->buffer && kl_fk_str_eq(x->elem_type, y->elem_type) &&
         x->elem_size == y->elem_size && x->store == y->store && x->atomic == y->atomic &&
         kl_fk_affine_eq(&x->form, &y->form) && x->lane_known == y->lane_known &&
         x->lane_symbolic == y->lane_symbolic && x->lane_compile_time == y->lane_compile_time &&
         x->lane_stride == y->lane_stride && x->ct_not_one == y->ct_not_one &&
         x->dims_known == y->dims_known &&
         !memcmp(x->dim_stride, y->dim_stride, sizeof x->dim_stride) &&
         x->dim_symbolic == y->dim_symbolic && x->dim_ct == y->dim_ct &&
         x->dim_unknown == y->dim_unknown && x->few == y->few && x->kernel == y->kernel &&
         x->owner == y->owner && ts_node_eq(x->call, y->call) && kl_fk_str_eq(x->inst, y->inst) &&
         x->ninsts == y->ninsts && x->index_rep == y->index_rep && x->row_step == y->row_step;
}

static bool kl_fk_bg_eq(const struct kl_bgaccess *x, const struct kl_bgaccess *y) {
  return ts_node_eq(x->node, y->node) && x->kernel == y->kernel && x->owner == y->owner &&
         x->buffer == y->buffer && ts_node_eq(x->call, y->call) && kl_fk_str_eq(x->inst, y->inst) &&
         x->ninsts == y->ninsts && x->store == y->store && kl_fk_affine_eq(&x->form, &y->form) &&
         x->run == y->run;
}

static bool kl_fk_guard_eq(const struct kl_facts_guard *x, const struct kl_facts_guard *y) {
  return x->held == y->held && x->thread_indexed == y->thread_indexed &&
         x->unguarded == y->unguarded && x->dims == y->dims && x->wide == y->wide &&
         x->evidence == y->evidence && x->clamp == y->clamp && ts_node_eq(x->ev, y->ev) &&
         kl_fk_str_eq(x->var, y->var) && ts_node_eq(x->part, y->part);
}

static bool kl_fk_bound_eq(const struct kl_facts_bound *x, const struct kl_facts_bound *y) {
  return ts_node_eq(x->past_by, y->past_by) && ts_node_eq(x->past_index, y->past_index) &&
         ts_node_eq(x->past_added, y->past_added) &&
         kl_fk_str_eq(x->past_added_name, y->past_added_name) &&
         x->past_rounded == y->past_rounded && ts_node_eq(x->past_row, y->past_row);
}

bool kl_factkeep_same(const struct kl_facts *x, const struct kl_facts *y) {
  if (x->nfns != y->nfns || x->incomplete != y->incomplete || x->nbarriers != y->nbarriers ||
      x->nraces != y->nraces || x->naccesses != y->naccesses || x->ncovered != y->ncovered ||
      x->nguards != y->nguards || x->has_bg != y->has_bg || x->nbg != y->nbg ||
      x->has_access != y->has_access || x->naccess != y->naccess)
    return false;
  for (size_t i = 0; i < x->nbarriers; i++)
    if (!kl_fk_barrier_eq(&x->barriers[i], &y->barriers[i])) return false;
  for (size_t i = 0; i < x->nraces; i++) {
    const struct kl_facts_race *a = &x->races[i], *b = &y->races[i];
    if (!ts_node_eq(a->first, b->first) || !ts_node_eq(a->second, b->second) ||
        a->first_store != b->first_store || a->second_store != b->second_store ||
        a->back_edge != b->back_edge || !ts_node_eq(a->loop, b->loop) ||
        !ts_node_eq(a->fence, b->fence) || a->kernel != b->kernel)
      return false;
  }
  for (size_t i = 0; i < x->naccess; i++)
    if (!kl_fk_access_eq(&x->access[i], &y->access[i])) return false;
  for (size_t i = 0; i < x->nbg; i++)
    if (!kl_fk_bg_eq(&x->bg[i], &y->bg[i]) || !kl_fk_guard_eq(&x->guards[i], &y->guards[i]) ||
        !kl_fk_bound_eq(&x->bounds[i], &y->bounds[i]) ||
        (x->ncovered && x->covered[i] != y->covered[i]))
      return false;
  return true;
}
