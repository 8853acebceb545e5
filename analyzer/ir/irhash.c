/* A fingerprint of a lowered function: everything the passes read of it except its
 * specialisation's label and host names. */
#include "analyzer/ir/irhash.h"

#include <string.h>

/* One word into the hash. For a given h the step is a bijection of w, and every step a
 * bijection of h: two functions whose words differ in one place always hash apart. */
static inline uint64_t kl_h_mix(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 32);
}

/* The texts of one function's instructions, hashed once per address: most are a handful of
 * type names shared by every instruction of that type. */
struct kl_h_texts {
  const char *p[64];
  uint64_t h[64];
};

static uint64_t kl_h_str(struct kl_h_texts *c, const char *s) {
  if (!s) return 0x5bd1e995u;
  size_t k = ((uintptr_t)s >> 3 ^ (uintptr_t)s >> 9) & 63;
  if (c->p[k] != s) {
    uint64_t x = 1469598103934665603ull;
    for (const char *q = s; *q; q++) x = (x ^ (uint8_t)*q) * 1099511628211ull;
    c->p[k] = s;
    c->h[k] = x;
  }
  return c->h[k];
}

static inline uint64_t kl_h_node(uint64_t h, TSNode n) {
  h = kl_h_mix(h, (uint64_t)(uintptr_t)n.id);
  /* The start and the alias; the row and column follow from the start. */
  return kl_h_mix(h, n.context[0] | (uint64_t)n.context[3] << 32);
}

static inline uint64_t kl_h_ptr(const void *p) {
  return (uint64_t)(uintptr_t)p;
}

uint64_t kl_ir_hash(const struct kl_ir_fn *f) {
  struct kl_h_texts c;
  memset(c.p, 0, sizeof c.p);
  uint64_t h = kl_h_mix(0, kl_h_ptr(f->kernel));
  h = kl_h_mix(h, f->nins | (uint64_t)f->body << 32);
  h = kl_h_mix(h, f->truncated);
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *i = &f->ins[v];
    h = kl_h_mix(h, i->op | (uint64_t)i->sub << 8 | (uint64_t)i->as << 16 |
                        (uint64_t)i->flags << 24 | (uint64_t)i->nops << 32);
    for (uint32_t k = 0; k < i->nops; k++) h = kl_h_mix(h, i->ops[k]);
    h = kl_h_mix(h, i->block | (uint64_t)i->blk[0] << 32);
    h = kl_h_mix(h, i->blk[1] | (uint64_t)i->blk[2] << 32);
    h = kl_h_mix(h, i->ref_ins | (uint64_t)i->sym << 32);
    h = kl_h_mix(h, i->site);
    h = kl_h_mix(h, (uint64_t)i->imm);
    uint64_t fb;
    memcpy(&fb, &i->fimm, sizeof fb);
    h = kl_h_mix(h, fb);
    h = kl_h_mix(h, kl_h_str(&c, i->name));
    h = kl_h_mix(h, kl_h_str(&c, i->type));
    h = kl_h_mix(h, kl_h_ptr(i->var));
    h = kl_h_mix(h, kl_h_ptr(i->coord));
    h = kl_h_mix(h, kl_h_ptr(i->fn));
    h = kl_h_node(h, i->node);
  }
  h = kl_h_mix(h, f->nblocks);
  for (uint32_t b = 1; b < f->nblocks; b++) {
    h = kl_h_mix(h, f->blocks[b].parent | (uint64_t)f->blocks[b].n << 32);
    for (uint32_t k = 0; k < f->blocks[b].n; k++) h = kl_h_mix(h, f->blocks[b].ins[k]);
  }
  h = kl_h_mix(h, f->nsyms);
  for (uint32_t s = 1; s < f->nsyms; s++) {
    h = kl_h_mix(h, kl_h_str(&c, f->syms[s].name));
    h = kl_h_mix(h, kl_h_ptr(f->syms[s].var));
    h = kl_h_mix(h, f->syms[s].site);
  }
  h = kl_h_mix(h, f->nsites);
  for (uint32_t s = 1; s < f->nsites; s++) {
    h = kl_h_node(h, f->sites[s].call);
    h = kl_h_mix(h, kl_h_ptr(f->sites[s].callee));
    h = kl_h_mix(h, f->sites[s].parent | (uint64_t)f->sites[s].lambda << 32);
  }
  h = kl_h_mix(h, f->nalias);
  for (uint32_t k = 0; k < f->nalias; k++) {
    h = kl_h_mix(h, f->alias_val[k] | (uint64_t)f->alias_sym[k] << 32);
    if (f->alias_at) h = kl_h_node(h, f->alias_at[k]);
  }
  h = kl_h_mix(h, f->ncut | (uint64_t)f->cut_other << 32);
  for (uint32_t k = 0; k < f->ncut; k++) h = kl_h_mix(h, kl_h_ptr(f->cut[k]));
  return h;
}
