/* Value ranges over the IR, split at every comparison (smatch's idea, design-anchors.md section 1).
 *
 * What it computes. An interval [lo, hi] of int64 per integer value (KL_RANGE_NEG_INF and
 * KL_RANGE_POS_INF for an unbounded end), valid wherever the value is defined; and, on demand, the
 * range of a value at an instruction p, narrowed by the conditions that hold on every path to p;
 * and whether a value is bounded above at p by a comparison, a loop bound or a clamp, and by
 * which instruction (what bounds-guard asks: "is this index compared with a bound?").
 *
 * Where the facts come from. Leaves: constants; the types' ranges (a uint is in [0, 2^32-1]);
 * thread coordinates from the launch when it is known (thread_position_in_threadgroup.x in
 * [0, tg.x-1], thread_index_in_simdgroup in [0, 31], simdgroup_index_in_threadgroup in
 * [0, ceil(T/32)-1], threads_per_simdgroup 32, a threadgroup of at most 1024 threads) and >= 0
 * always. Arithmetic is interval arithmetic (add, sub, mul, div and rem by a positive divisor,
 * and, shr, shl, min, max, select, casts), an unsigned result that may pass below 0 wraps to the
 * whole type. A loop recurrence from scev.h, {a, +, s} with s > 0 under `i < n`, is in
 * [a, max(a, n-1+s)] (the value that fails the test included); other header PHIs join their entry
 * and back edge for a few rounds and then widen to the type. Each value's range is also narrowed
 * by the facts at its definition, so `if (gid < n) { idx = gid * 4; }` bounds idx.
 *
 * How queries narrow. Facts are kept per program point as a chain (a persistent list, one node
 * per branch taken), built in the same walk: an IF's condition is true in its then block and
 * false in its else block; a loop's condition is true in its body and latch (not for do-while);
 * after an IF whose then block never falls through (`if (x >= n) return;`, `continue`, `break`)
 * its condition is false for the rest of the enclosing block, and the same for the else block;
 * after a loop without a break its condition is false. A return inside an inlined helper leaves
 * only the helper, so its facts hold to the end of that helper's code (its call site), and a loop
 * the helper returns from is left by more than its test. &&, || and ! split as
 * smatch_conditions.c does, and so does && lowered as an IF and a PHI (an operand with a load). A
 * comparison becomes facts "v op w + k" (op <, >, ==, !=) on both sides, after moving constants
 * across (`i + 4 <= n` is `i < n - 3`), casts looked through, and loads of one read-only address
 * taken as one value (kl_scev_leader: `size.x` read by the guard and again by the index); a bound
 * by a constant narrows the interval, a bound by a value stays a symbolic relation that
 * kl_ranges_upper reports with its comparison.
 *
 * Cost. Per-value arrays; queries walk the chain at p with a depth of 4. Loops take up to five
 * walks; past a budget of 64 values per instruction a loop walks once, its non-recurrence PHIs
 * anything of their type, so nesting never multiplies the cost. */
#ifndef KL_PASSES_RANGES_H
#define KL_PASSES_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/ir/ir.h"
#include "analyzer/passes/scev.h"

#define KL_RANGE_NEG_INF INT64_MIN
#define KL_RANGE_POS_INF INT64_MAX

/* An interval; lo > hi is empty (a path that cannot run). */
struct kl_range {
  int64_t lo, hi;
};

/* A grid dimension the host counts from a value the kernel receives: floor((n + add) / div)
 * threadgroups (groups) or threads, n the kernel's argument (an ARG value); n 0 when none. */
struct kl_ranges_count {
  uint32_t n;
  int64_t add, div; /* add >= 0, div >= 1 */
  bool groups;
};

/* What the dispatch is known to be; 0 is unknown. grid counts threads, not threadgroups. */
struct kl_ranges_launch {
  int64_t tg[3];
  int64_t grid[3];
  int64_t max_total_threads;
};

/* A fact "v op w + k" (w KL_IR_NONE: "v op k") holding on a path, from comparison by. */
struct kl_ranges_fact {
  uint32_t v, w, by;
  uint8_t op; /* KL_IR_LT, KL_IR_GT, KL_IR_EQ or KL_IR_NE */
  int64_t k;
};

/* One node of a fact chain: its facts and the chain above it. */
struct kl_ranges_node {
  uint32_t parent;   /* 0: none */
  uint32_t first, n; /* facts[first .. first+n) */
  uint32_t from;     /* the instruction whose branch made it (cache key), with kind */
  uint8_t kind;
  /* The values its facts are on, as bits of a hash of each value: its own, and its own with
   * every ancestor's, so that a value with no fact on the chain is answered without a walk. */
  uint64_t own, all;
};

/* An upper bound v < w + k (w KL_IR_NONE: v < k) and the instruction that shows it. */
struct kl_ranges_bound {
  uint32_t w;
  int64_t k;
  uint32_t by;
};

/* The pass's result for one function. */
struct kl_ranges {
  const struct kl_ir_fn *f;
  const struct kl_scev *scev;
  struct kl_arena *arena;
  struct kl_ranges_launch launch;
  struct kl_ranges_count count[3]; /* the grid's counts (kl_ranges_set_counts), per dimension */
  struct kl_range *base; /* per value: its range where it is defined */
  uint32_t *ctx;         /* per value: the fact chain at it */
  uint32_t *cache;       /* per value, 4 slots: the chain node made for each of its branches */
  struct kl_ranges_node *nodes;
  uint32_t nnodes, cap_nodes;
  struct kl_ranges_fact *facts;
  uint32_t nfacts, cap_facts;
  uint8_t *named; /* per value: whether a fact is on it yet (most values have none to look for) */
  /* Per value, kl_strip's answer (ranges.c) once asked (stripped value + 1, 0: not yet) and its
   * offset: every fact lookup strips, hundreds of thousands of times in a large kernel. */
  uint32_t *strip_of;
  int64_t *strip_off;
  size_t nstrip;
  /* Per LOOP, whether a break leaves its body or latch (0 not asked yet, 1 no, 2 yes): asked
   * at every walk of an enclosing loop again. */
  uint8_t *has_brk;
  /* Per chain node, the facts kl_ranges_facts_at gave for it (NULL: not asked yet), cap_chain
   * of them: every instruction under a node holds the same facts. */
  const struct kl_ranges_fact **chain;
  uint32_t cap_chain;
  struct kl_ranges_tyslot {
    const char *type;
    uint8_t flags;
    struct kl_range range;
  } tyslot[64]; /* type ranges by type text, asked about millions of times in a large kernel */
  int64_t budget; /* values left to walk before loops stop repeating their walks */
};

/* Run the pass over f, whose scalar evolution is s; launch may be NULL (all unknown). */
struct kl_ranges *kl_ranges_run(struct kl_arena *a, const struct kl_ir_fn *f,
                                const struct kl_scev *s, const struct kl_ranges_launch *launch);
/* Tell the pass how the launch counts its grid, per dimension (n 0 where it does not): what
 * kl_ranges_address_covered reads of it. */
void kl_ranges_set_counts(struct kl_ranges *r, const struct kl_ranges_count count[3]);
/* Value v's range wherever it is defined. */
struct kl_range kl_ranges_of(const struct kl_ranges *r, uint32_t v);
/* Value v's range at instruction p, narrowed by the facts on every path to p. */
struct kl_range kl_ranges_at(struct kl_ranges *r, uint32_t v, uint32_t p);
/* An upper bound of v at p from a dominating comparison, a loop's condition or a clamp (min,
 * %, &, a select), in *out; a bound by a value is preferred to one by a constant. False when
 * none is known (a launch's bound on a coordinate is not one: nothing in the code compares). */
bool kl_ranges_upper(struct kl_ranges *r, uint32_t v, uint32_t p, struct kl_ranges_bound *out);
/* Whether v is bounded above at p as kl_ranges_upper says; *by_ins (may be NULL) the
 * instruction that bounds it. */
bool kl_ranges_bounded_above(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *by_ins);
/* Whether every part of v that varies across threads is bounded above at p: v itself, or the
 * terms of a sum (a uniform term needs no bound) and the varying factor of a product by a uniform
 * value, each bounded; false when no part varies. *by_ins the first part's bound. */
bool kl_ranges_parts_bounded(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *by_ins);
/* Whether every index along address addr (each INDEX of it down to its buffer or local) whose
 * value varies across threads is bounded at p as kl_ranges_parts_bounded says: `x[gid].qs[j]`
 * needs gid bounded, not j. False when no index varies. *by_ins the first bound. */
bool kl_ranges_address_bounded(struct kl_ranges *r, uint32_t addr, uint32_t p, uint32_t *by_ins);
/* As kl_ranges_address_bounded, also counting what the launch and the index's shape show (a
 * part is then bounded when it cannot pass the bound the kernel or the host gives it):
 * - under a grid counted from n (kl_ranges_set_counts), div times the counted coordinate (the
 *   threadgroup position under groups, else the thread position) plus t, t in [0, T] at p (or
 *   plus nothing), is below n when add - div + 1 + T <= 0: (nrows + 3) / 4 groups make
 *   r0 * 4 < nrows, not r0 * 4 + 1 < nrows; past that bound such a part is not bounded, whatever
 *   bounds its pieces;
 * - s * g + t with g bounded, s a constant and t in [0, s - 1] at p is below s times g's bound:
 *   `row * 256 + pos.x` in threadgroups 256 wide, whatever bounds row.
 * Nothing else of the launch bounds a part: a coordinate below a constant is no guard. */
bool kl_ranges_address_covered(struct kl_ranges *r, uint32_t addr, uint32_t p, uint32_t *by_ins);

/* Whether index v, a sum with a positive constant (`c + 1`, `row * ld + c + 1`), can reach at p
 * the uniform bound w that keeps its one varying part below it there: that part (not scaled by
 * a factor, as a row's start `row * ld` is; uniform parts need no bound) is below w + k, k <= 0,
 * by a comparison, a loop's condition or a clamp, and the constant takes it to w or past, while
 * v itself is not known below w (`if (c + 1 < cols)`) and no fact there compares another value
 * computed from that part (`t + 1 < L` for `t = tid % L`). *out (may be NULL) is v's bound then
 * (v < w + k, k > 0), by that part's comparison. */
bool kl_ranges_past_bound(struct kl_ranges *r, uint32_t v, uint32_t p, struct kl_ranges_bound *out);
/* As kl_ranges_past_bound, also for a part a sum adds past its bounded part that varies across
 * threads over a small range, non-negative and compared with no size on the path (`i0 + lid`
 * under `i0 < n`, i0 the same in every thread: the thread's place in a tile, which the last tile
 * of a row can pass; it adds its most). *added (may be NULL) is that part when the constant
 * alone does not take the index past, else 0. */
bool kl_ranges_past_by(struct kl_ranges *r, uint32_t v, uint32_t p, struct kl_ranges_bound *out,
                       uint32_t *added);
/* Whether index v at p is a sum whose one unscaled part that varies across threads is a walk of
 * the thread's own (a loop recurrence, `i` of `for (i = lid; i < 128; i += tg)`) that only a
 * constant bounds there, the sum compared with no value either: that part in *part, and *out
 * (may be NULL) the sum's bound (w 0, v < k), by the walk's comparison. What the constant is to
 * the row the index reads in is the caller's question. */
bool kl_ranges_const_walk(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *part,
                          struct kl_ranges_bound *out);
/* Whether index v at p is a tile's start counted in tiles of s, below the count rounded up to
 * cover w ((w + s - 1) / s, s the tile: a constant or a uniform value), times s, plus the thread's
 * place in the tile (as kl_ranges_past_by has it): `b * tg + lid` under `b < (n + tg - 1) / tg`
 * reaches past n in the last tile whenever s does not divide n. *added is that place, *out (may
 * be NULL) the bound w (k 1), by the counter's comparison. */
bool kl_ranges_ceil_tiles(struct kl_ranges *r, uint32_t v, uint32_t p, uint32_t *added,
                          struct kl_ranges_bound *out);
/* The facts holding at instruction p, innermost first, in *out (arena memory, the same for
 * every instruction under one chain node: not to be written); returns their count. */
uint32_t kl_ranges_facts_at(struct kl_ranges *r, uint32_t p, const struct kl_ranges_fact **out);

/* Print every value's range and the facts made (for tests and debugging). */
void kl_ranges_dump(const struct kl_ranges *r, FILE *out);

#endif
