#include "analyzer/passes/affine.h"

#include <string.h>

struct kl_affine kl_affine_const(int64_t c) {
  struct kl_affine a;
  memset(&a, 0, sizeof a);
  a.known = true;
  a.c0 = c;
  return a;
}

struct kl_affine kl_affine_symbol(void) {
  struct kl_affine a = kl_affine_const(0);
  a.c0_symbolic = true;
  return a;
}

struct kl_affine kl_affine_symbol_id(uint32_t sym) {
  struct kl_affine a = kl_affine_symbol();
  a.sym = sym;
  return a;
}

struct kl_affine kl_affine_atom(uint16_t atom) {
  struct kl_affine a = kl_affine_const(0);
  a.n = 1;
  a.t[0].atom = atom;
  a.t[0].k = 1;
  return a;
}

struct kl_affine kl_affine_unknown(void) {
  struct kl_affine a;
  memset(&a, 0, sizeof a);
  return a;
}

bool kl_affine_is_uniform(struct kl_affine a) {
  return a.known && a.n == 0;
}

bool kl_affine_has_atoms(struct kl_affine a) {
  return a.known && a.n > 0;
}

/* Overflowing constants are not worth modelling: the form gives up instead. */
static bool kl_affine_add_ok(int64_t x, int64_t y, int64_t *r) {
  return !__builtin_add_overflow(x, y, r);
}

static bool kl_affine_mul_ok(int64_t x, int64_t y, int64_t *r) {
  return !__builtin_mul_overflow(x, y, r);
}

/* The affine part of a partial form as a known one; an unknown form's part is 0. */
static struct kl_affine kl_affine_part(struct kl_affine a) {
  if (a.known) return a;
  if (!a.partial) return kl_affine_const(0);
  a.known = true;
  a.partial = false;
  return a;
}

static struct kl_affine kl_affine_partial(struct kl_affine r) {
  if (!r.known) return r;
  r.known = false;
  r.partial = true;
  return r;
}

/* Whether a's constant part is fixed at compile time: a constant, or a compile-time symbol. */
static bool kl_affine_ct_part(struct kl_affine a) {
  return !a.c0_symbolic || (a.sym & KL_AFFINE_SYM_CT);
}

/* The same for one coefficient. */
static bool kl_affine_ct_term(struct kl_affine_term t) {
  return !t.symbolic || (t.sym & KL_AFFINE_SYM_CT);
}

struct kl_affine kl_affine_add(struct kl_affine a, struct kl_affine b, int sign) {
  if (!a.known || !b.known) {
    if (!a.known && !a.partial && !b.known && !b.partial) return kl_affine_unknown();
    return kl_affine_partial(kl_affine_add(kl_affine_part(a), kl_affine_part(b), sign));
  }
  struct kl_affine r = a;
  int64_t bc = b.c0;
  if (sign < 0 && !kl_affine_mul_ok(bc, -1, &bc)) return kl_affine_unknown();
  if (!kl_affine_add_ok(r.c0, bc, &r.c0)) return kl_affine_unknown();
  r.c0_symbolic = a.c0_symbolic || b.c0_symbolic;
  /* Adding a constant part of 0 keeps the other side's tag; otherwise only compile-time-ness
   * survives. */
  r.sym = !b.c0_symbolic && !b.c0                 ? a.sym
          : !a.c0_symbolic && !a.c0 && sign > 0   ? b.sym
          : kl_affine_ct_part(a) && kl_affine_ct_part(b)
              ? KL_AFFINE_SYM_CT | ((a.sym | b.sym) & KL_AFFINE_SYM_PRODUCT)
              : 0;
  for (uint8_t i = 0; i < b.n; i++) {
    struct kl_affine_term t = b.t[i];
    if (sign < 0 && !kl_affine_mul_ok(t.k, -1, &t.k)) return kl_affine_unknown();
    uint8_t j = 0;
    while (j < r.n && r.t[j].atom != t.atom) j++;
    if (j < r.n) {
      r.t[j].sym = kl_affine_ct_term(r.t[j]) && kl_affine_ct_term(t)
                       ? KL_AFFINE_SYM_CT | ((r.t[j].sym | t.sym) & KL_AFFINE_SYM_PRODUCT)
                       : 0;
      r.t[j].symbolic = r.t[j].symbolic || t.symbolic;
      if (!kl_affine_add_ok(r.t[j].k, t.k, &r.t[j].k)) return kl_affine_unknown();
      if (!r.t[j].symbolic && r.t[j].k == 0) {
        r.t[j] = r.t[r.n - 1];
        r.n--;
      }
    } else {
      if (r.n == KL_AFFINE_MAX_TERMS) return kl_affine_unknown();
      r.t[r.n++] = t;
    }
  }
  return r;
}

/* Scale a form by a uniform factor u (no atoms). */
static struct kl_affine kl_affine_scale(struct kl_affine a, struct kl_affine u) {
  if (!u.c0_symbolic && u.c0 == 0) return kl_affine_const(0);
  struct kl_affine r = a;
  if (u.c0_symbolic) {
    /* atom * S keeps S's tag as the coefficient's: `nb0 * i0`. A product of compile-time values
     * is compile-time, and when two of them are symbols, a product. */
    bool pure = !u.n && !u.c0;
    uint32_t ct = u.sym & KL_AFFINE_SYM_CT ? u.sym & KL_AFFINE_SYM_KNOWN : 0;
    r.sym = !kl_affine_ct_part(a) ? 0 : ct | (ct && r.c0_symbolic ? KL_AFFINE_SYM_PRODUCT : 0);
    r.c0_symbolic = r.c0_symbolic || r.c0 != 0;
    r.c0 = 0;
    for (uint8_t i = 0; i < r.n; i++) {
      r.t[i].sym = pure && !r.t[i].symbolic && r.t[i].k == 1 ? u.sym
                   : !kl_affine_ct_term(r.t[i])               ? 0
                   : r.t[i].symbolic && ct                    ? ct | KL_AFFINE_SYM_PRODUCT
                                                              : ct;
      r.t[i].symbolic = true;
      r.t[i].k = 0;
    }
    return r;
  }
  if (!kl_affine_mul_ok(r.c0, u.c0, &r.c0)) return kl_affine_unknown();
  /* 2 * nb0 is not one element's size: only a factor of 1 keeps a tag; a compile-time value
   * stays one. */
  if (u.c0 != 1) {
    r.sym &= KL_AFFINE_SYM_KNOWN;
    for (uint8_t i = 0; i < r.n; i++) r.t[i].sym &= KL_AFFINE_SYM_KNOWN;
  }
  for (uint8_t i = 0; i < r.n; i++)
    if (!r.t[i].symbolic && !kl_affine_mul_ok(r.t[i].k, u.c0, &r.t[i].k))
      return kl_affine_unknown();
  return r;
}

struct kl_affine kl_affine_mul(struct kl_affine a, struct kl_affine b) {
  if (a.partial && kl_affine_is_uniform(b))
    return kl_affine_partial(kl_affine_scale(kl_affine_part(a), b));
  if (b.partial && kl_affine_is_uniform(a))
    return kl_affine_partial(kl_affine_scale(kl_affine_part(b), a));
  if (!a.known || !b.known) return kl_affine_unknown();
  if (a.n == 0) return kl_affine_scale(b, a);
  if (b.n == 0) return kl_affine_scale(a, b);
  return kl_affine_unknown();
}

/* Whether a and b (both known) have the same atoms with the same coefficients. */
static bool kl_affine_same_terms(struct kl_affine a, struct kl_affine b) {
  if (a.n != b.n) return false;
  for (uint8_t i = 0; i < a.n; i++) {
    int64_t k;
    bool sym;
    if (!kl_affine_coeff(b, a.t[i].atom, &k, &sym)) return false;
    if (sym != a.t[i].symbolic || (!sym && k != a.t[i].k)) return false;
  }
  return true;
}

bool kl_affine_equal(struct kl_affine a, struct kl_affine b) {
  if (a.known != b.known || a.partial != b.partial) return false;
  if (!a.known && !a.partial) return true;
  a = kl_affine_part(a);
  b = kl_affine_part(b);
  if (a.c0_symbolic != b.c0_symbolic || (!a.c0_symbolic && a.c0 != b.c0)) return false;
  return kl_affine_same_terms(a, b);
}

struct kl_affine kl_affine_join(struct kl_affine a, struct kl_affine b) {
  if ((a.partial || b.partial) && (a.known || a.partial) && (b.known || b.partial))
    return kl_affine_partial(kl_affine_join(kl_affine_part(a), kl_affine_part(b)));
  if (!a.known || !b.known || !kl_affine_same_terms(a, b)) return kl_affine_unknown();
  struct kl_affine r = a;
  if (a.c0_symbolic || b.c0_symbolic || a.c0 != b.c0) {
    r.c0_symbolic = true;
    r.c0 = 0;
  }
  if (a.sym != b.sym || a.c0 != b.c0) r.sym = 0;
  for (uint8_t i = 0; i < r.n; i++)
    for (uint8_t j = 0; j < b.n; j++)
      if (b.t[j].atom == r.t[i].atom && b.t[j].sym != r.t[i].sym) r.t[i].sym = 0;
  return r;
}

bool kl_affine_coeff(struct kl_affine a, uint16_t atom, int64_t *k, bool *symbolic) {
  if (!a.known) return false;
  for (uint8_t i = 0; i < a.n; i++) {
    if (a.t[i].atom == atom) {
      *k = a.t[i].k;
      *symbolic = a.t[i].symbolic;
      return true;
    }
  }
  return false;
}

bool kl_affine_part_coeff(struct kl_affine a, uint16_t atom, int64_t *k, bool *symbolic) {
  return kl_affine_coeff(kl_affine_part(a), atom, k, symbolic);
}

int64_t kl_affine_gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}
