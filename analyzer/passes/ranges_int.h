/* What ranges.c shares with ranges_past.c (the questions of an index past its bound), for
 * those two files only. */
#ifndef KL_PASSES_RANGES_INT_H
#define KL_PASSES_RANGES_INT_H

#include <stdbool.h>
#include <stdint.h>

struct kl_ir_fn;
struct kl_ranges;
struct kl_ranges_bound;

/* How deep a query evaluates through operands and the bounds of facts; the walk uses 1. */
#define KL_RANGES_QDEPTH 4
/* An addend below this counts in a sum's bound; above, it is a type's range, not a bound. */
#define KL_RANGES_SMALL ((int64_t)1 << 24)

/* x + y, saturating at the unbounded ends. */
int64_t kl_ranges_sadd(int64_t x, int64_t y);
/* Whether type text t is a floating-point type. */
bool kl_ranges_is_float(const char *t);
/* v without added constants and casts: its base value, and what was added in *off. */
uint32_t kl_ranges_strip(const struct kl_ranges *r, uint32_t v, int64_t *off);
/* v through integer casts. */
uint32_t kl_ranges_uncast(const struct kl_ir_fn *f, uint32_t v);
/* An upper bound of v under fact chain ctx (kl_ranges_upper at a chain, not an instruction). */
bool kl_ranges_upper_in(struct kl_ranges *r, uint32_t v, uint32_t ctx,
                        struct kl_ranges_bound *out);

#endif
