/* Unit tests for the arena (analyzer/core/arena.c): vectors that grow past a block keep their
 * contents, clear their new room, leave the other allocations alone, and shrink to fit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analyzer/core/arena.h"
#include "tests/unit/kl_test.h"

/* Two vectors grown side by side past a block's size, with small allocations between them: each
 * keeps its values, its new room reads zero, and the small allocations are untouched. */
static void grow_side_by_side(void) {
  struct kl_arena *a = kl_arena_new();
  uint32_t *x = NULL, *y = NULL;
  size_t nx = 0, cx = 0, ny = 0, cy = 0;
  char *small[64];
  size_t nsmall = 0;
  bool ok = true;
  for (uint32_t i = 0; i < 200000; i++) {
    KL_VEC_PUSH(a, x, nx, cx);
    x[nx++] = i;
    if (i % 3 == 0) {
      KL_VEC_PUSH(a, y, ny, cy);
      y[ny++] = ~i;
    }
    if (i % 4096 == 0 && nsmall < 64) {
      small[nsmall] = kl_arena_printf(a, "s%zu", nsmall);
      nsmall++;
    }
  }
  for (size_t i = 0; i < nx; i++) ok = ok && x[i] == i;
  for (size_t i = 0; i < ny; i++) ok = ok && y[i] == ~(uint32_t)(3 * i);
  for (size_t i = nx; i < cx; i++) ok = ok && x[i] == 0;
  for (size_t i = ny; i < cy; i++) ok = ok && y[i] == 0;
  check("arena-grow-contents", ok, "a grown vector lost a value or has dirty room");
  bool same = true;
  char want[32];
  for (size_t i = 0; i < nsmall; i++) {
    snprintf(want, sizeof want, "s%zu", i);
    same = same && !strcmp(small[i], want);
  }
  check("arena-grow-neighbours", same, "an allocation beside a grown vector changed");
  kl_arena_delete(a);
}

/* A vector made with kl_arena_alloc_raw past a block's size, then grown: its values stay. */
static void grow_from_raw(void) {
  struct kl_arena *a = kl_arena_new();
  size_t cap = 40000, n = cap;
  uint64_t *v = kl_arena_alloc_raw(a, cap * sizeof *v);
  for (size_t i = 0; i < n; i++) v[i] = i * 7;
  KL_VEC_PUSH(a, v, n, cap);
  v[n++] = 1;
  bool ok = cap == 80000 && v[n - 1] == 1;
  for (size_t i = 0; i + 1 < n; i++) ok = ok && v[i] == i * 7;
  for (size_t i = n; i < cap; i++) ok = ok && v[i] == 0;
  check("arena-grow-raw", ok, "a raw vector grown past a block lost a value");
  kl_arena_delete(a);
}

/* A vector grown past a block's size, fitted to its length and grown again: its values stay,
 * and a small vector or a null one is left as it is. */
static void fit_then_grow(void) {
  struct kl_arena *a = kl_arena_new();
  uint32_t *v = NULL;
  size_t n = 0, cap = 0;
  for (uint32_t i = 0; i < 70000; i++) {
    KL_VEC_PUSH(a, v, n, cap);
    v[n++] = i * 3;
  }
  uint32_t *w = kl_arena_fit(a, v, cap, n, sizeof *v);
  bool ok = w != NULL && cap == 131072;
  if (w) v = w, cap = n;
  for (size_t i = 0; i < n; i++) ok = ok && v[i] == i * 3;
  for (uint32_t i = 0; i < 1000; i++) {
    KL_VEC_PUSH(a, v, n, cap);
    v[n++] = 7;
  }
  ok = ok && cap == 140000 && v[69999] == 69999 * 3 && v[70000] == 7 && v[n - 1] == 7;
  for (size_t i = n; i < cap; i++) ok = ok && v[i] == 0;
  check("arena-fit-grow", ok, "a fitted vector lost a value or did not grow again");
  uint32_t *s = kl_arena_alloc(a, 64 * sizeof *s);
  bool kept = !kl_arena_fit(a, s, 64, 10, sizeof *s) && !kl_arena_fit(a, NULL, 0, 0, 4);
  check("arena-fit-small", kept, "a vector inside a block was fitted");
  kl_arena_delete(a);
}

int main(void) {
  grow_side_by_side();
  grow_from_raw();
  fit_then_grow();
  return failures != 0;
}
