/* A fingerprint of a lowered function: everything the passes read of it except its
 * specialisation's label and host names. */
#include "analyzer/ir/irhash.h"

#include <string.h>

static uint64_t kl_h_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}

static uint64_t kl_h_str(uint64_t h, const char *s) {
  if (!s) return kl_h_mix(h, 0x5bd1e995u);
  uint64_t x = 1469598103934665603ull;
  for (; *s; s++) x = (x ^ (uint8_t)*s) * 1099511628211ull;
  return kl_h_mix(h, x);
}

static uint64_t kl_h_node(uint64_t h, TSNode n) {
  h = kl_h_mix(h, (uint64_t)(uintptr_t)n.id);
  h = kl_h_mix(h, ((uint64_t)n.context[0] << 32) | n.context[1]);
  return kl_h_mix(h, ((uint64_t)n.context[2] << 32) | n.context[3]);
}

uint64_t kl_ir_hash(const struct kl_ir_fn *f) {
  uint64_t h = kl_h_mix(0, (uint64_t)(uintptr_t)f->kernel);
  h = kl_h_mix(h, f->nins);
  h = kl_h_mix(h, f->body);
  h = kl_h_mix(h, f->truncated);
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *i = &f->ins[v];
    h = kl_h_mix(h, i->op | (uint64_t)i->sub << 8 | (uint64_t)i->as << 16 |
                        (uint64_t)i->flags << 24 | (uint64_t)i->block << 32);
    h = kl_h_mix(h, i->nops);
    for (uint32_t k = 0; k < i->nops; k++) h = kl_h_mix(h, i->ops[k]);
    h = kl_h_mix(h, i->blk[0] | (uint64_t)i->blk[1] << 32);
    h = kl_h_mix(h, i->blk[2] | (uint64_t)i->ref_ins << 32);
    h = kl_h_mix(h, i->sym | (uint64_t)i->site << 32);
    h = kl_h_mix(h, (uint64_t)i->imm);
    uint64_t fb;
    memcpy(&fb, &i->fimm, sizeof fb);
    h = kl_h_mix(h, fb);
    h = kl_h_str(h, i->name);
    h = kl_h_str(h, i->type);
    h = kl_h_mix(h, (uint64_t)(uintptr_t)i->var);
    h = kl_h_mix(h, (uint64_t)(uintptr_t)i->coord);
    h = kl_h_mix(h, (uint64_t)(uintptr_t)i->fn);
    h = kl_h_node(h, i->node);
  }
  h = kl_h_mix(h, f->nblocks);
  for (uint32_t b = 1; b < f->nblocks; b++) {
    h = kl_h_mix(h, f->blocks[b].parent | (uint64_t)f->blocks[b].n << 32);
    for (uint32_t k = 0; k < f->blocks[b].n; k++) h = kl_h_mix(h, f->blocks[b].ins[k]);
  }
  h = kl_h_mix(h, f->nsyms);
  for (uint32_t s = 1; s < f->nsyms; s++) {
    h = kl_h_str(h, f->syms[s].name);
    h = kl_h_mix(h, (uint64_t)(uintptr_t)f->syms[s].var);
    h = kl_h_mix(h, f->syms[s].site);
  }
  h = kl_h_mix(h, f->nsites);
  for (uint32_t s = 1; s < f->nsites; s++) {
    h = kl_h_node(h, f->sites[s].call);
    h = kl_h_mix(h, (uint64_t)(uintptr_t)f->sites[s].callee);
    h = kl_h_mix(h, f->sites[s].parent | (uint64_t)f->sites[s].lambda << 32);
  }
  h = kl_h_mix(h, f->nalias);
  for (uint32_t k = 0; k < f->nalias; k++) {
    h = kl_h_mix(h, f->alias_val[k] | (uint64_t)f->alias_sym[k] << 32);
    if (f->alias_at) h = kl_h_node(h, f->alias_at[k]);
  }
  h = kl_h_mix(h, f->ncut | (uint64_t)f->cut_other << 32);
  for (uint32_t k = 0; k < f->ncut; k++) h = kl_h_mix(h, (uint64_t)(uintptr_t)f->cut[k]);
  return h;
}
