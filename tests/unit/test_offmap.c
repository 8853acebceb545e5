/* Unit tests for the offset map (analyzer/input/offmap.c): buffer offsets back to file offsets. */
#include <stdio.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"

static int failures;

static void check_u(const char *name, uint32_t got, uint32_t want) {
  if (got == want) {
    printf("PASS %s\n", name);
  } else {
    printf("FAIL %s: got %u, want %u\n", name, got, want);
    failures++;
  }
}

/* The map's segments, compared with an expected list of (buf, buf_len, file, file_len). */
static void check_segs(const char *name, const struct kl_offmap *m, const uint32_t *want,
                       size_t nwant) {
  if (m->n != nwant) {
    printf("FAIL %s: %zu segments, want %zu\n", name, m->n, nwant);
    failures++;
    return;
  }
  for (size_t i = 0; i < nwant; i++) {
    const struct kl_offmap_seg *s = &m->segs[i];
    const uint32_t *w = want + 4 * i;
    if (s->buf != w[0] || s->buf_len != w[1] || s->file != w[2] || s->file_len != w[3]) {
      printf("FAIL %s: segment %zu is (%u,%u,%u,%u), want (%u,%u,%u,%u)\n", name, i, s->buf,
             s->buf_len, s->file, s->file_len, w[0], w[1], w[2], w[3]);
      failures++;
      return;
    }
  }
  printf("PASS %s\n", name);
}

static void test_identity(struct kl_arena *a) {
  struct kl_offmap m;
  kl_offmap_identity(&m, a, 100);
  check_segs("identity-one-segment", &m, (const uint32_t[]){0, 100, 0, 100}, 1);
  check_u("identity-start", kl_offmap_to_file(&m, 0), 0);
  check_u("identity-middle", kl_offmap_to_file(&m, 57), 57);
  check_u("identity-end", kl_offmap_end_to_file(&m, 100), 100);
  check_u("identity-empty-end", kl_offmap_end_to_file(&m, 0), 0);
  struct kl_offmap empty;
  kl_offmap_init(&empty, a);
  check_u("empty-map-is-identity", kl_offmap_to_file(&empty, 42), 42);
  check_u("empty-map-end-is-identity", kl_offmap_end_to_file(&empty, 42), 42);
  check_u("null-map-is-identity", kl_offmap_to_file(NULL, 7), 7);
}

static void test_add_merge(struct kl_arena *a) {
  struct kl_offmap m;
  kl_offmap_init(&m, a);
  kl_offmap_add(&m, 0, 10, 0, 10);
  kl_offmap_add(&m, 10, 5, 10, 5);
  check_segs("add-merges-contiguous-linear", &m, (const uint32_t[]){0, 15, 0, 15}, 1);
  kl_offmap_add(&m, 15, 5, 30, 5);
  check_segs("add-keeps-file-jump", &m, (const uint32_t[]){0, 15, 0, 15, 15, 5, 30, 5}, 2);
  kl_offmap_add(&m, 20, 4, 35, 10);
  kl_offmap_add(&m, 24, 6, 45, 6);
  check_segs("add-never-merges-collapsed", &m,
             (const uint32_t[]){0, 15, 0, 15, 15, 5, 30, 5, 20, 4, 35, 10, 24, 6, 45, 6}, 4);
  check_u("add-after-jump", kl_offmap_to_file(&m, 17), 32);
  /* Many appends stay sorted and searchable (exercises the binary search and vector growth). */
  struct kl_offmap big;
  kl_offmap_init(&big, a);
  for (uint32_t i = 0; i < 1000; i++) kl_offmap_add(&big, i * 10, 10, i * 20, 10);
  check_u("add-many-count", (uint32_t)big.n, 1000);
  check_u("add-many-lookup", kl_offmap_to_file(&big, 5553), 555 * 20 + 3);
}

static void test_collapsed(struct kl_arena *a) {
  /* Buffer bytes 10..13 stand for file bytes 10..30 (a macro name expanded shorter). */
  struct kl_offmap m;
  kl_offmap_init(&m, a);
  kl_offmap_add(&m, 0, 10, 0, 10);
  kl_offmap_add(&m, 10, 3, 10, 20);
  kl_offmap_add(&m, 13, 7, 30, 7);
  check_u("collapsed-start", kl_offmap_to_file(&m, 10), 10);
  check_u("collapsed-inside-maps-to-run-start", kl_offmap_to_file(&m, 12), 10);
  check_u("collapsed-end-maps-to-run-end", kl_offmap_end_to_file(&m, 13), 30);
  check_u("collapsed-partial-end-maps-to-run-end", kl_offmap_end_to_file(&m, 11), 30);
  check_u("collapsed-after", kl_offmap_to_file(&m, 15), 32);
  check_u("collapsed-after-end", kl_offmap_end_to_file(&m, 20), 37);
  /* Buffer bytes 10..30 stand for file bytes 10..13 (an expansion longer than its name). */
  struct kl_offmap x;
  kl_offmap_init(&x, a);
  kl_offmap_add(&x, 0, 10, 0, 10);
  kl_offmap_add(&x, 10, 20, 10, 3);
  kl_offmap_add(&x, 30, 5, 13, 5);
  check_u("expansion-inside", kl_offmap_to_file(&x, 25), 10);
  check_u("expansion-end", kl_offmap_end_to_file(&x, 30), 13);
  check_u("expansion-range-into-next", kl_offmap_end_to_file(&x, 32), 15);
}

static void test_end(struct kl_arena *a) {
  struct kl_offmap m;
  kl_offmap_init(&m, a);
  kl_offmap_add(&m, 0, 10, 100, 10);
  check_u("end-linear", kl_offmap_end_to_file(&m, 10), 110);
  check_u("end-linear-inside", kl_offmap_end_to_file(&m, 4), 104);
  /* At a jump, an end belongs to the run before it while a start belongs to the run after. */
  struct kl_offmap j;
  kl_offmap_init(&j, a);
  kl_offmap_add(&j, 0, 10, 0, 10);
  kl_offmap_add(&j, 10, 10, 50, 10);
  check_u("end-at-jump-stays-left", kl_offmap_end_to_file(&j, 10), 10);
  check_u("start-at-jump-goes-right", kl_offmap_to_file(&j, 10), 50);
  check_u("end-past-jump", kl_offmap_end_to_file(&j, 11), 51);
}

static void test_gaps(struct kl_arena *a) {
  /* Buffer bytes 10..20 are synthetic (a wrapper signature, say): they snap to a mapped byte. */
  struct kl_offmap m;
  kl_offmap_init(&m, a);
  kl_offmap_add(&m, 0, 10, 0, 10);
  kl_offmap_add(&m, 20, 10, 40, 10);
  check_u("gap-start-snaps-to-previous-end", kl_offmap_to_file(&m, 15), 10);
  check_u("gap-end-snaps-to-previous-end", kl_offmap_end_to_file(&m, 15), 10);
  check_u("gap-range-into-next", kl_offmap_end_to_file(&m, 25), 45);
  check_u("past-last-snaps-to-last-end", kl_offmap_to_file(&m, 35), 50);
  check_u("past-last-end", kl_offmap_end_to_file(&m, 99), 50);
  struct kl_offmap late;
  kl_offmap_init(&late, a);
  kl_offmap_add(&late, 5, 5, 100, 5);
  check_u("before-first-snaps-to-first", kl_offmap_to_file(&late, 2), 100);
  check_u("before-first-end-snaps-to-first", kl_offmap_end_to_file(&late, 3), 100);
}

static void test_compose(struct kl_arena *a) {
  struct kl_offmap inner, outer, out;

  kl_offmap_identity(&inner, a, 20);
  kl_offmap_init(&outer, a);
  kl_offmap_add(&outer, 0, 20, 100, 20);
  kl_offmap_compose(&out, a, &inner, &outer);
  check_segs("compose-identity-linear", &out, (const uint32_t[]){0, 20, 100, 20}, 1);
  check_u("compose-identity-linear-lookup", kl_offmap_to_file(&out, 5), 105);

  /* Collapsed through linear: the collapsed run keeps its shape at the outer offset. */
  kl_offmap_init(&inner, a);
  kl_offmap_add(&inner, 0, 10, 0, 10);
  kl_offmap_add(&inner, 10, 4, 10, 12);
  kl_offmap_add(&inner, 14, 6, 22, 6);
  kl_offmap_init(&outer, a);
  kl_offmap_add(&outer, 0, 30, 100, 30);
  kl_offmap_compose(&out, a, &inner, &outer);
  check_segs("compose-collapsed-through-linear", &out,
             (const uint32_t[]){0, 10, 100, 10, 10, 4, 110, 12, 14, 6, 122, 6}, 3);
  check_u("compose-collapsed-through-linear-inside", kl_offmap_to_file(&out, 12), 110);
  check_u("compose-collapsed-through-linear-end", kl_offmap_end_to_file(&out, 14), 122);
  check_u("compose-collapsed-through-linear-after", kl_offmap_to_file(&out, 15), 123);

  /* Linear through collapsed: the linear run is cut where the outer map changes segment. */
  kl_offmap_identity(&inner, a, 30);
  kl_offmap_init(&outer, a);
  kl_offmap_add(&outer, 0, 10, 0, 10);
  kl_offmap_add(&outer, 10, 5, 10, 20);
  kl_offmap_add(&outer, 15, 15, 30, 15);
  kl_offmap_compose(&out, a, &inner, &outer);
  check_segs("compose-linear-through-collapsed", &out,
             (const uint32_t[]){0, 10, 0, 10, 10, 5, 10, 20, 15, 15, 30, 15}, 3);
  check_u("compose-linear-through-collapsed-inside", kl_offmap_to_file(&out, 12), 10);
  check_u("compose-linear-through-collapsed-end", kl_offmap_end_to_file(&out, 15), 30);
  check_u("compose-linear-through-collapsed-after", kl_offmap_to_file(&out, 20), 35);

  /* A linear run with an offset, split across two outer runs. */
  kl_offmap_init(&inner, a);
  kl_offmap_add(&inner, 0, 20, 5, 20);
  kl_offmap_init(&outer, a);
  kl_offmap_add(&outer, 0, 10, 0, 10);
  kl_offmap_add(&outer, 10, 20, 100, 20);
  kl_offmap_compose(&out, a, &inner, &outer);
  check_segs("compose-linear-split", &out, (const uint32_t[]){0, 5, 5, 5, 5, 15, 100, 15}, 2);
  check_u("compose-linear-split-left", kl_offmap_to_file(&out, 3), 8);
  check_u("compose-linear-split-right", kl_offmap_to_file(&out, 19), 114);

  /* Middle bytes the outer map leaves synthetic become an empty file run at the snap point. */
  kl_offmap_identity(&inner, a, 30);
  kl_offmap_init(&outer, a);
  kl_offmap_add(&outer, 0, 10, 0, 10);
  kl_offmap_add(&outer, 20, 10, 50, 10);
  kl_offmap_compose(&out, a, &inner, &outer);
  check_segs("compose-through-gap", &out,
             (const uint32_t[]){0, 10, 0, 10, 10, 10, 10, 0, 20, 10, 50, 10}, 3);
  check_u("compose-through-gap-inside", kl_offmap_to_file(&out, 15), 10);
  check_u("compose-through-gap-after", kl_offmap_to_file(&out, 25), 55);

  /* Collapsed through collapsed: the run covers the outer image of its whole middle range. */
  kl_offmap_init(&inner, a);
  kl_offmap_add(&inner, 0, 3, 0, 8);
  kl_offmap_init(&outer, a);
  kl_offmap_add(&outer, 0, 4, 0, 40);
  kl_offmap_add(&outer, 4, 10, 40, 10);
  kl_offmap_compose(&out, a, &inner, &outer);
  check_segs("compose-collapsed-through-collapsed", &out, (const uint32_t[]){0, 3, 0, 44}, 1);
}

int main(void) {
  struct kl_arena *a = kl_arena_new();
  test_identity(a);
  test_add_merge(a);
  test_collapsed(a);
  test_end(a);
  test_gaps(a);
  test_compose(a);
  kl_arena_delete(a);
  return failures ? 1 : 0;
}
