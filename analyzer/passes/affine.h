/* Index algebra: affine forms c0 + k1*a1 + k2*a2 + ... over thread-coordinate atoms, where each
 * coefficient is a known integer or a symbolic uniform value. Anything else is "unknown", and
 * an unknown form is never reported. */
#ifndef KL_AFFINE_H
#define KL_AFFINE_H

#include <stdbool.h>
#include <stdint.h>

#define KL_AFFINE_MAX_TERMS 4

/* What is known of a symbolic value (kl_affine.sym): the bits below, and in the others a tag the
 * caller gives (0: none), kept only while the value is exactly the tagged one. The first bit says
 * it is fixed when the kernel is compiled (a template parameter, a macro, a constant of those). */
#define KL_AFFINE_SYM_CT 0x80000000u
/* With KL_AFFINE_SYM_CT: a product of two or more compile-time symbols (`n_per_t * D`), which is
 * a whole row or more, where one symbol is usually a small count (taps, items per thread). */
#define KL_AFFINE_SYM_PRODUCT 0x40000000u
#define KL_AFFINE_SYM_KNOWN (KL_AFFINE_SYM_CT | KL_AFFINE_SYM_PRODUCT)

struct kl_affine_term {
  uint16_t atom; /* caller's id for a thread coordinate (component) */
  bool symbolic; /* coefficient is a uniform value not known statically */
  uint32_t sym;  /* when symbolic: what is known of it, as kl_affine.sym */
  int64_t k;     /* the coefficient when not symbolic */
};

struct kl_affine {
  bool known;
  bool partial; /* not known, but a sum whose affine part is t[] (the rest is not affine) */
  bool c0_symbolic;
  uint32_t sym; /* when the constant part is symbolic: KL_AFFINE_SYM_CT when compile-time, and
                   when it is exactly one tagged value, its tag (bits below the CT bit) */
  int64_t c0;
  uint8_t n;
  struct kl_affine_term t[KL_AFFINE_MAX_TERMS];
};

/* The constant c. */
struct kl_affine kl_affine_const(int64_t c);
/* A uniform value whose value is not known statically. */
struct kl_affine kl_affine_symbol(void);
/* The same, with what is known of it (see kl_affine.sym). */
struct kl_affine kl_affine_symbol_id(uint32_t sym);
/* 1 * atom. */
struct kl_affine kl_affine_atom(uint16_t atom);
/* A value the algebra cannot express. */
struct kl_affine kl_affine_unknown(void);
/* a + b (sign -1 gives a - b). A known or partial form plus anything is at least partial. */
struct kl_affine kl_affine_add(struct kl_affine a, struct kl_affine b, int sign);
/* a * b: affine only when at most one side has atoms; a partial form times a known uniform
 * value stays partial. */
struct kl_affine kl_affine_mul(struct kl_affine a, struct kl_affine b);
/* Join at a control-flow merge: same atoms and coefficients keep the form, a differing constant
 * part becomes symbolic (a loop induction variable), anything else is unknown. */
struct kl_affine kl_affine_join(struct kl_affine a, struct kl_affine b);
/* Whether the form has no atoms (a uniform value). */
bool kl_affine_is_uniform(struct kl_affine a);
/* Whether the form has any atom. */
bool kl_affine_has_atoms(struct kl_affine a);
/* Whether two forms are identical. */
bool kl_affine_equal(struct kl_affine a, struct kl_affine b);
/* Coefficient of one atom: returns false when absent; *symbolic set when not a constant. */
bool kl_affine_coeff(struct kl_affine a, uint16_t atom, int64_t *k, bool *symbolic);
/* The same for a known form or the affine part of a partial one. */
bool kl_affine_part_coeff(struct kl_affine a, uint16_t atom, int64_t *k, bool *symbolic);
/* The greatest common divisor of a and b (gcd(a, 0) is a). */
int64_t kl_affine_gcd(int64_t a, int64_t b);

#endif
