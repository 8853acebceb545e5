/* Whether two accesses to threadgroup memory can touch one element from two different threads of
 * a threadgroup. The flow analysis describes each access by the index of every array dimension
 * as a linear form over the threadgroup's thread coordinates and over named uniform values, with
 * the conditions it runs under; this module decides the pair by running both descriptions over
 * every thread of a sample threadgroup, for sampled values of the uniform names. A form it cannot
 * read is "unknown", and a pair with one never meets. */
#ifndef KL_RACE_H
#define KL_RACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The thread coordinates a form can name, as they are within one threadgroup: its x, y and z
 * position (thread_position_in_grid too: both threads share the threadgroup's origin), the
 * linear index, the SIMD lane and group, the quad lane and group. Other ids are symbols. */
enum {
  KL_RACE_X,
  KL_RACE_Y,
  KL_RACE_Z,
  KL_RACE_LINEAR,
  KL_RACE_LANE,
  KL_RACE_SIMD,
  KL_RACE_QLANE,
  KL_RACE_QUAD,
  KL_RACE_NATOMS
};

enum { KL_RACE_MAX_TERMS = 6, KL_RACE_MAX_DIMS = 3, KL_RACE_MAX_CONS = 8 };

/* Variables at KL_RACE_DERIVED and above are derived coordinates (kl_race_derived). */
#define KL_RACE_DERIVED 0x4000

struct kl_race_term {
  uint16_t var; /* an atom below KL_RACE_NATOMS, KL_RACE_NATOMS + a symbol's index below
                   KL_RACE_DERIVED, else KL_RACE_DERIVED + a derived coordinate's index */
  int64_t k;
};

/* c + sum of k * var. */
struct kl_race_form {
  bool known;
  uint8_t n;
  int64_t c;
  struct kl_race_term t[KL_RACE_MAX_TERMS];
};

enum kl_race_op { KL_RACE_EQ, KL_RACE_NE, KL_RACE_LT, KL_RACE_LE };

/* A condition an access runs under: e op 0, or with mod set, (e mod mod) - off op 0 (a test of
 * the low bits, `(lane & 1) == 0`, `lid % 4 == 3`). */
struct kl_race_cons {
  struct kl_race_form e;
  enum kl_race_op op;
  int64_t mod, off;
};

/* A uniform name. A loop's induction variable also says how the loop steps it, so that two
 * iterations in a row can be given the values they take. */
struct kl_race_sym {
  bool loop;
  uint32_t lo, hi;     /* the loop's bytes: a loop nested in the one crossed runs anew */
  bool init_known;     /* its first value */
  int64_t init;
  char step;           /* '+', '-', '*', '/', '<', '>' (shifts), or 0 when not known */
  int64_t by;
  bool bound_known;    /* the loop runs while `v op bound` */
  enum kl_race_op bound_op;
  bool bound_flip;     /* the comparison is `bound op v` */
  int64_t bound;
};

/* A coordinate divided or reduced by a constant (`tid / 32`, `lid % 4`, `x >> 2`, `x & 7`): a
 * form over the coordinates alone, the operator ('/' or '%') and the constant (positive). */
struct kl_race_derived {
  struct kl_race_form base;
  char op;
  int64_t c;
};

/* One access: the index of each dimension, the conditions it runs under, and whether it writes
 * (same_value: the text of a value every thread stores alike, or NULL). ranged: an index known
 * only by its range (a value loaded from memory, `perm[gid] & 7`): each thread touches some
 * element in [lo, hi] of one dimension, idx[0] unused. certain: every thread that passes cons
 * makes the access (no condition around it, nor a way out before it, was left unread). */
struct kl_race_side {
  struct kl_race_form idx[KL_RACE_MAX_DIMS];
  uint8_t ndims;
  struct kl_race_cons cons[KL_RACE_MAX_CONS];
  uint8_t ncons;
  bool store;
  const char *same_value;
  bool ranged, certain;
  int64_t lo, hi;
};

/* How the second access of a pair follows the first. */
struct kl_race_order {
  bool crossed;       /* the first is from an earlier iteration of the loop at bytes [lo, hi) */
  uint32_t lo, hi;
  bool simd_ordered;  /* a simdgroup_barrier orders them: only threads of two SIMD groups race */
  int64_t tg[3];      /* the threadgroup's size per dimension every launch agrees on, 0 where not
                         known: the sample threadgroup is no larger */
  int64_t max_total;  /* the most threads a threadgroup has (the kernel's
                         [[max_total_threads_per_threadgroup]], or what its arrays allow), 0 when
                         not known: a ranged pair counts, and a one-dimensional sample holds, no
                         thread past it */
};

/* The symbol form of one variable: 1 * var. */
struct kl_race_form kl_race_var(uint16_t var);
/* The constant c. */
struct kl_race_form kl_race_const(int64_t c);
/* a + sign * b; unknown when either is or the terms overflow. */
struct kl_race_form kl_race_add(struct kl_race_form a, struct kl_race_form b, int sign);
/* k * a. */
struct kl_race_form kl_race_scale(struct kl_race_form a, int64_t k);
/* Whether a is a constant, and which. */
bool kl_race_is_const(struct kl_race_form a, int64_t *c);
/* Whether two threads can meet: the first access (a) and the second (b), ordered as o, touch one
 * element from two different threads, one of them writing, for some values of the symbols (syms)
 * and with the derived coordinates der. A ranged side meets only where that is certain, both
 * sides certain: a store with itself (a == b, not crossed) when more threads make it than its
 * range has elements (two of them store to one element), or a ranged access against an indexed
 * one when some thread's every possible element is the other access's element of another
 * thread; two ranged accesses otherwise never meet. budget, unless NULL, is how many
 * valuations of the symbols are left to try (a pair tries up to 256): each tried is spent, and
 * with none left no pair meets. */
bool kl_race_meet(const struct kl_race_side *a, const struct kl_race_side *b,
                  const struct kl_race_order *o, const struct kl_race_sym *syms, size_t nsyms,
                  const struct kl_race_derived *der, size_t nder, uint32_t *budget);

/* The pairs one unit has decided, so that a pair asked again costs a lookup, not its
 * valuations. Made by kl_race_memo_new, freed (with NULL allowed) by kl_race_memo_delete. */
struct kl_race_memo;
/* An empty memo. */
struct kl_race_memo *kl_race_memo_new(void);
/* Free a memo; NULL is allowed. */
void kl_race_memo_delete(struct kl_race_memo *m);
/* kl_race_meet, answering from memo (unless NULL) a pair it has decided before, and remembering
 * each pair it decides; a pair the budget stopped is not remembered. */
bool kl_race_meet_memo(const struct kl_race_side *a, const struct kl_race_side *b,
                       const struct kl_race_order *o, const struct kl_race_sym *syms,
                       size_t nsyms, const struct kl_race_derived *der, size_t nder,
                       uint32_t *budget, struct kl_race_memo *memo);
/* What a memo has seen, for tests and the cost check: the valuations tried, the pairs asked
 * (past kl_race_meet's quick refusals) and those answered from the memo. NULL skips one. */
void kl_race_memo_stats(const struct kl_race_memo *m, uint64_t *valuations, uint64_t *asked,
                        uint64_t *answered);
/* Start a new epoch of m (NULL allowed): a kernel's lowering. */
void kl_race_memo_epoch(struct kl_race_memo *m);
/* The valuations m's pairs tried, each pair counted once in each epoch that asked it (its cost
 * when first decided). While m remembers every pair and no budget stops one, the pairs of any
 * subset of the epochs, asked in any order, try no more than the sum of what those epochs count. */
uint64_t kl_race_memo_distinct(const struct kl_race_memo *m);
/* Whether a memo asked that many pairs (kl_race_memo_stats) remembers every one it decides: then
 * whether it has room never depends on the order they come in. */
bool kl_race_memo_holds(uint64_t asked);
/* Whether m still remembers every pair it decides (it stops past a bound). */
bool kl_race_memo_room(const struct kl_race_memo *m);
/* How many pairs m remembers. */
size_t kl_race_memo_size(const struct kl_race_memo *m);
/* Whether m is under half its bound: room for the pairs of another unit's run as a fresh memo
 * would have (kl_race_memo_holds). */
bool kl_race_memo_spare(const struct kl_race_memo *m);

/* The atom of thread coordinate name (an MSL attribute such as thread_position_in_threadgroup),
 * of its component 0, 1 or 2 (x, y, z) where it has several; -1 for another id or NULL. */
int kl_race_coord_atom(const char *name, int64_t component);

#endif
