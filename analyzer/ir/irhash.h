/* A fingerprint of a lowered function (analyzer/ir/irhash.c). */
#ifndef KL_IR_IRHASH_H
#define KL_IR_IRHASH_H

#include <stdint.h>

#include "analyzer/ir/ir.h"

/* A hash of everything in f the passes read: instructions, blocks, symbols, sites, aliases and
 * cuts, but not its specialisation's label or host names. */
uint64_t kl_ir_hash(const struct kl_ir_fn *f);

#endif
