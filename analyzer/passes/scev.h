/* Scalar evolution over the IR: the affine form of every integer value, and of every address the
 * element offset from the buffer or local it points into.
 *
 * What it computes. A form is kl_affine's c0 + sum k_i*atom_i, whose coefficients and constant
 * part are integers or symbolic uniform values. The atoms are the pass's own, listed in a table
 * per function: a thread coordinate's component that varies across threads (thread_position_in_
 * grid.x, thread_index_in_simdgroup, threadgroup_position_in_grid.y...), and a loop recurrence,
 * LLVM's add recurrence {start, +, step}: a LOOP's header PHI whose back edge is the PHI plus a
 * loop-invariant step. Inside its loop a recurrence is its atom; its start and step are in the
 * table, so a caller that wants the per-thread part of `i` in `for (i = lid; ...; i += 32)` asks
 * kl_scev_expand. Values that are the same for every thread (a scalar argument, a uniform
 * coordinate, a load from a uniform address of a buffer, a compile-time symbol, anything computed
 * from those alone) are symbolic constants, tagged with their value id (kl_affine.sym below the
 * known bits) while they are exactly that value.
 *
 * Where the facts come from. One walk in block order: ADD, SUB, MUL, SHL by a constant, NEG,
 * CAST, SELECT and the PHI after an IF keep forms (a join of different forms only under a uniform
 * condition, when it is a uniform value); INDEX adds its index, in elements, to its base's offset
 * (scaled when the base steps by a whole row of the element: `float a[4][33]`). DIV, REM, AND and
 * the rest are not affine; they are unknown here and the ranges pass reads them. At a LOOP every
 * header PHI starts as a candidate recurrence, the loop is walked, and a PHI whose back edge is
 * not itself plus an invariant step is demoted (to a uniform value when what it carries stays
 * uniform, else unknown) and the loop walked again: a few rounds at most, then everything left
 * unproven is unknown. A PHI after the loop keeps its incoming form only if it is not a
 * recurrence of the loop (whose final value the atom does not name).
 *
 * A load of read-only memory (constant space, a const buffer) at an address computed the same
 * way as an earlier one's is that load's value (kl_scev_leader), since the lowering reads a
 * struct field again at each use. Loops walk at most a few rounds each; past a budget of 64
 * values per instruction a loop walks once and keeps only the recurrences written plainly
 * (`i += c`, `i += uniform value from before the loop`), so nesting never multiplies the cost.
 *
 * Uniformity here is the pass's own coarse view (the scope a value is the same over), only used
 * to decide when a join or a load is a uniform value; the uniformity pass is the reference. */
#ifndef KL_PASSES_SCEV_H
#define KL_PASSES_SCEV_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/passes/affine.h"
#include "analyzer/core/arena.h"
#include "analyzer/ir/ir.h"
#include "grammar/msl.h"

enum kl_scev_atom_kind { KL_SCEV_COORD = 1, KL_SCEV_REC };

/* One atom of the function's forms. */
struct kl_scev_atom {
  enum kl_scev_atom_kind kind;
  uint32_t value;      /* COORD: the first value read of this component; REC: the header PHI */
  enum kl_scope scope; /* the widest group it is the same over (a REC: its start's) */
  const struct kl_msl_coord *coord; /* COORD */
  int comp;                         /* COORD: 0 x, 1 y, 2 z */
  uint32_t loop;                    /* REC: its LOOP */
  uint32_t start;                   /* REC: the value on entry */
  uint32_t step_value; /* REC: the value added each iteration, when one is (0: a constant) */
  struct kl_affine start_form, step; /* REC: the start's form; the step's (uniform) */
};

/* The pass's result for one function: per-value arrays indexed by value id. */
struct kl_scev {
  const struct kl_ir_fn *f;
  struct kl_affine *form;   /* the integer form of each value (unknown for what is not one) */
  uint32_t *root;           /* an address's ARG or ALLOC, KL_IR_NONE for a value */
  struct kl_affine *offset; /* an address's offset from root, in its own elements */
  uint8_t *scope;           /* enum kl_scope: how far each value is the same (coarse) */
  uint32_t *atom_of;        /* the atom a COORD or recurrence PHI is, plus one; 0 none */
  uint32_t *leader;         /* a read-only load: the first load of the same address, else 0 */
  uint32_t *table;          /* read-only loads by address hash (open addressing), ntable slots */
  uint32_t ntable;
  struct kl_scev_atom *atoms;
  uint32_t natoms, cap_atoms;
};

/* Run the pass over f; everything lives in arena a. */
struct kl_scev *kl_scev_run(struct kl_arena *a, const struct kl_ir_fn *f);
/* The form of value v (unknown for KL_IR_NONE or a value out of range). */
struct kl_affine kl_scev_form(const struct kl_scev *s, uint32_t v);
/* The atom with id atom, or NULL. */
const struct kl_scev_atom *kl_scev_atom(const struct kl_scev *s, uint16_t atom);
/* The atom id that value v is (a COORD or a recurrence PHI) in *atom; false when none. */
bool kl_scev_atom_of(const struct kl_scev *s, uint32_t v, uint16_t *atom);
/* The recurrence that the header PHI v is, or NULL. */
const struct kl_scev_atom *kl_scev_rec(const struct kl_scev *s, uint32_t v);
/* For an address v: its root ARG or ALLOC in *root and its element offset in *offset (which may
 * be unknown); false when v is not an address the pass followed to a root. */
bool kl_scev_address(const struct kl_scev *s, uint32_t v, uint32_t *root, struct kl_affine *offset);
/* form with each recurrence atom replaced by its start plus a uniform multiple of its step (the
 * iteration count, the same for the threads running it): only coordinate atoms are left. */
struct kl_affine kl_scev_expand(const struct kl_scev *s, struct kl_affine form);
/* The coefficient of coordinate comp of coord (by name) in form, after kl_scev_expand: false
 * when the form is unknown; *k 0 when the coordinate does not appear; *symbolic when the
 * coefficient is a uniform value not known statically. */
bool kl_scev_coord_coeff(const struct kl_scev *s, struct kl_affine form, const char *coord,
                         int comp, int64_t *k, bool *symbolic);
/* v, or for a load of read-only memory (constant space, a const buffer) the first load of the
 * same address: `size.x` read twice is one value, so a guard on one bounds the other. */
uint32_t kl_scev_leader(const struct kl_scev *s, uint32_t v);
/* Whether an ARG is a buffer or struct in memory (an address), not a value: a pointer, an array,
 * a reference to anything but a scalar (as the lowering binds them). */
bool kl_scev_arg_is_memory(const struct kl_var *var);
/* The coarse scope value v is the same over (KL_SCOPE_THREAD when not known to be more). */
enum kl_scope kl_scev_scope(const struct kl_scev *s, uint32_t v);
/* Print every value's form and the atom table (for tests and debugging). */
void kl_scev_dump(const struct kl_scev *s, FILE *out);

#endif
