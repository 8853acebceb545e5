#include "analyzer/core/arena.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

/* Blocks are chained; big requests get a block of their own so small ones never waste a tail. */
struct kl_block {
  struct kl_block *next;
  size_t used, size;
  max_align_t data[];
};

struct kl_arena {
  struct kl_block *head;
};

enum { KL_BLOCK_SIZE = 64 * 1024 };

static void kl_oom(void) {
  fputs("kernlint: out of memory\n", stderr);
  abort();
}

void *kl_arena_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) kl_oom();
  return p;
}

void *kl_arena_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) kl_oom();
  return q;
}

char *kl_arena_xstrndup(const char *s, size_t n) {
  char *d = kl_arena_xmalloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *kl_arena_xstrdup(const char *s) {
  return kl_arena_xstrndup(s, strlen(s));
}

/* Page faults are dear where kernlint runs in a virtual machine: a page first touched costs
 * 11 us on the development machines, one populated by madvise 0.7 us, and a lint's memory is
 * mostly pages touched once (the corpus run's 11.6k faults were some 8% of its time). So a
 * file's heap is made resident ahead, in one call, and kept for the next file rather than handed
 * back. What is made resident ahead is a guess, so it is bounded: 24 MB shared by the threads. */
enum { KL_PREFAULT_TOTAL = 24 << 20, KL_PREFAULT_MIN = 1 << 20 };

/* Each thread's bound, set once before any thread starts (0: none is made resident; without
 * kl_arena_tune a big block would be mapped and unmapped). */
static size_t kl_arena_prefault_max;

void kl_arena_tune(unsigned nthreads) {
#if defined(__GLIBC__) && defined(MADV_POPULATE_WRITE)
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) && mallopt(M_TRIM_THRESHOLD, 64 << 20))
    kl_arena_prefault_max = KL_PREFAULT_TOTAL / (nthreads ? nthreads : 1);
#else
  (void)nthreads;
#endif
}

void kl_arena_prefault(size_t n) {
#if defined(__GLIBC__) && defined(MADV_POPULATE_WRITE)
  if (n > kl_arena_prefault_max) n = kl_arena_prefault_max;
  if (n < KL_PREFAULT_MIN) return;
  char *p = malloc(n);
  if (!p) return;
  long ps = sysconf(_SC_PAGESIZE);
  const uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
  uintptr_t s = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + n) & ~(page - 1);
  /* Memory already resident is walked, not touched; a kernel without the advice refuses it. */
  if (e > s) (void)madvise((void *)s, e - s, MADV_POPULATE_WRITE);
  free(p);
#else
  (void)n;
#endif
}

struct kl_arena *kl_arena_new(void) {
  struct kl_arena *a = kl_arena_xmalloc(sizeof *a);
  a->head = NULL;
  return a;
}

void kl_arena_delete(struct kl_arena *a) {
  if (!a) return;
  struct kl_block *b = a->head;
  while (b) {
    struct kl_block *next = b->next;
    free(b);
    b = next;
  }
  free(a);
}

static struct kl_block *kl_block_new(size_t size) {
  if (size > SIZE_MAX - sizeof(struct kl_block)) kl_oom();
  struct kl_block *b = kl_arena_xmalloc(sizeof *b + size);
  b->used = 0;
  b->size = size;
  b->next = NULL;
  return b;
}

/* n bytes (rounded up to the alignment) from the arena, not cleared: *size is what was taken. */
static void *kl_arena_take(struct kl_arena *a, size_t n, size_t *size) {
  const size_t align = sizeof(max_align_t);
  if (n > SIZE_MAX - align) kl_oom();
  n = (n + align - 1) / align * align;
  if (n == 0) n = align;
  *size = n;
  struct kl_block *b = a->head;
  if (!b || b->size - b->used < n) {
    if (n > KL_BLOCK_SIZE / 4) {
      /* Keep the current block as head so its free tail stays usable. */
      struct kl_block *big = kl_block_new(n);
      big->used = n;
      if (b) {
        big->next = b->next;
        b->next = big;
      } else {
        a->head = big;
      }
      return big->data;
    }
    b = kl_block_new(KL_BLOCK_SIZE);
    b->next = a->head;
    a->head = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  return p;
}

void *kl_arena_alloc(struct kl_arena *a, size_t n) {
  size_t size;
  void *p = kl_arena_take(a, n, &size);
  memset(p, 0, size);
  return p;
}

void *kl_arena_alloc_raw(struct kl_arena *a, size_t n) {
  size_t size;
  return kl_arena_take(a, n, &size);
}

/* The block of a's whose data is old, by the link that points at it, or NULL. */
static struct kl_block **kl_arena_owner(struct kl_arena *a, const void *old) {
  for (struct kl_block **p = &a->head; *p; p = &(*p)->next)
    if ((const void *)(*p)->data == old) return p;
  return NULL;
}

void *kl_arena_grow(struct kl_arena *a, void *old, size_t old_n, size_t new_n, size_t elem) {
  if (elem && new_n > SIZE_MAX / elem) kl_oom();
  /* A vector past a block's size has a block of its own (no smaller request fits in it), which
   * grows by realloc: a doubling copy left in the arena kept every smaller copy alive, as much
   * again as the vector, and one kernel's IR runs to megabytes. */
  const size_t align = sizeof(max_align_t);
  struct kl_block **own = old && old_n * elem > KL_BLOCK_SIZE && new_n >= old_n &&
                                  new_n * elem <= SIZE_MAX - align - sizeof(struct kl_block)
                              ? kl_arena_owner(a, old)
                              : NULL;
  if (own) {
    size_t n = (new_n * elem + align - 1) / align * align, had = old_n * elem;
    struct kl_block *b = kl_arena_xrealloc(*own, sizeof *b + n);
    b->size = b->used = n;
    *own = b;
    memset((char *)b->data + had, 0, n - had);
    return b->data;
  }
  size_t size, keep = old ? (old_n < new_n ? old_n : new_n) * elem : 0;
  char *p = kl_arena_take(a, new_n * elem, &size);
  /* Only the new room is cleared: vectors double, and clearing what is copied over doubled the
   * bytes written. */
  if (keep) memcpy(p, old, keep);
  memset(p + keep, 0, size - keep);
  return p;
}

void *kl_arena_fit(struct kl_arena *a, void *p, size_t cap, size_t n, size_t elem) {
  /* Only a vector with a block of its own (kl_arena_grow) has room to give back; a doubling
   * leaves up to half of it unused, and the block is shrunk in place by realloc, its tail free
   * for what the arena or anything else allocates next. */
  const size_t align = sizeof(max_align_t);
  if (!p || n >= cap || cap * elem <= KL_BLOCK_SIZE || n * elem <= KL_BLOCK_SIZE) return NULL;
  struct kl_block **own = kl_arena_owner(a, p);
  if (!own) return NULL;
  size_t size = (n * elem + align - 1) / align * align;
  struct kl_block *b = kl_arena_xrealloc(*own, sizeof *b + size);
  b->size = b->used = size;
  *own = b;
  return b->data;
}

char *kl_arena_strndup(struct kl_arena *a, const char *s, size_t n) {
  size_t size;
  char *p = kl_arena_take(a, n + 1, &size);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *kl_arena_strdup(struct kl_arena *a, const char *s) {
  return kl_arena_strndup(a, s, strlen(s));
}

char *kl_arena_printf(struct kl_arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  char *p = kl_arena_alloc(a, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}
