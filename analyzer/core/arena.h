/* Region allocator: one arena per input file holds its text, model, messages and diagnostics. */
#ifndef KL_ARENA_H
#define KL_ARENA_H

#include <stddef.h>

struct kl_arena;

/* Create an empty arena; aborts on out-of-memory like every allocation here. */
struct kl_arena *kl_arena_new(void);
/* Free an arena and everything allocated from it; NULL is allowed. */
void kl_arena_delete(struct kl_arena *a);
/* Allocate n zeroed bytes, aligned for any type, that live as long as the arena. */
void *kl_arena_alloc(struct kl_arena *a, size_t n);
/* Allocate n bytes like kl_arena_alloc, not cleared: for a buffer the caller fills at once. */
void *kl_arena_alloc_raw(struct kl_arena *a, size_t n);
/* Grow an arena array from old_n to new_n elements of size elem, copying the old contents. */
void *kl_arena_grow(struct kl_arena *a, void *old, size_t old_n, size_t new_n, size_t elem);
/* Shrink an arena array grown to cap elements of size elem down to its first n, and return where
 * it now is; NULL when it stays as it was (only a vector kl_arena_grow gave a block of its own
 * shrinks). */
void *kl_arena_fit(struct kl_arena *a, void *p, size_t cap, size_t n, size_t elem);
/* Copy n bytes of s into the arena and NUL-terminate the copy. */
char *kl_arena_strndup(struct kl_arena *a, const char *s, size_t n);
/* Copy a NUL-terminated string into the arena. */
char *kl_arena_strdup(struct kl_arena *a, const char *s);
/* printf into a fresh arena string. */
char *kl_arena_printf(struct kl_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* malloc that aborts with a message instead of returning NULL, for memory outside arenas. */
void *kl_arena_xmalloc(size_t n);
/* Set this process's malloc up for kl_arena_prefault on nthreads threads, before any thread
 * starts: heap memory a file freed stays for the next one, and blocks up to 32 MB come from the
 * heap. */
void kl_arena_tune(unsigned nthreads);
/* Make about n bytes of this thread's malloc heap resident in one call, for a file about to use
 * them (at most 24 MB over all the threads); does nothing where the system cannot. */
void kl_arena_prefault(size_t n);
/* realloc that aborts on failure. */
void *kl_arena_xrealloc(void *p, size_t n);
/* Copy n bytes of s into a fresh malloc'd, NUL-terminated string; aborts on out-of-memory. */
char *kl_arena_xstrndup(const char *s, size_t n);
/* Copy a NUL-terminated string into a fresh malloc'd one; aborts on out-of-memory. */
char *kl_arena_xstrdup(const char *s);

/* Append-one helper for arena vectors: ensures room for one more item in (*items, *n, *cap). */
#define KL_VEC_PUSH(arena, items, n, cap)                                                          \
  do {                                                                                             \
    if ((n) == (cap)) {                                                                            \
      size_t kl_nc_ = (cap) ? (cap)*2 : 8;                                                         \
      (items) = kl_arena_grow((arena), (items), (cap), kl_nc_, sizeof *(items));                   \
      (cap) = kl_nc_;                                                                              \
    }                                                                                              \
  } while (0)

/* KL_VEC_PUSH for malloc'd vectors (memory outside arenas, freed by the owner). */
#define KL_XVEC_PUSH(items, n, cap)                                                                \
  do {                                                                                             \
    if ((n) == (cap)) {                                                                            \
      size_t kl_nc_ = (cap) ? (cap)*2 : 8;                                                         \
      (items) = kl_arena_xrealloc((items), kl_nc_ * sizeof *(items));                              \
      (cap) = kl_nc_;                                                                              \
    }                                                                                              \
  } while (0)

#endif
