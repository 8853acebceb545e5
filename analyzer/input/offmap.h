/* Offset map: from a byte offset in the buffer tree-sitter parses to the byte offset in the file.
 * The buffer can differ from the file (expanded macros, Python string escapes, MLX bodies wrapped
 * in a synthetic signature), so every stage reports positions through one of these. */
#ifndef KL_OFFMAP_H
#define KL_OFFMAP_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"

/* A run of buffer bytes [buf, buf+buf_len) that came from file bytes [file, file+file_len).
 * Equal lengths map byte for byte; unequal lengths (a macro expansion, an escape) map every
 * buffer byte inside to the start of the file run. */
struct kl_offmap_seg {
  uint32_t buf, buf_len, file, file_len;
};

struct kl_offmap {
  struct kl_arena *arena;
  struct kl_offmap_seg *segs; /* sorted by buf, non-overlapping */
  size_t n, cap;
};

/* Start an empty map whose segments live in the arena. */
void kl_offmap_init(struct kl_offmap *m, struct kl_arena *a);
/* A map where buffer and file are the same len bytes. */
void kl_offmap_identity(struct kl_offmap *m, struct kl_arena *a, uint32_t len);
/* Append a segment; segments must be added in increasing buffer order. Adjacent linear runs merge.
 */
void kl_offmap_add(struct kl_offmap *m, uint32_t buf, uint32_t buf_len, uint32_t file,
                   uint32_t file_len);
/* File offset of a buffer offset; an offset in an unmapped gap snaps to the end of the previous
 * segment (before the first segment, to its start). */
uint32_t kl_offmap_to_file(const struct kl_offmap *m, uint32_t buf_off);
/* File offset for the end (exclusive) of a buffer range ending at buf_end. */
uint32_t kl_offmap_end_to_file(const struct kl_offmap *m, uint32_t buf_end);
/* Compose: inner maps buffer->middle, outer maps middle->file; the result maps buffer->file. */
void kl_offmap_compose(struct kl_offmap *out, struct kl_arena *a, const struct kl_offmap *inner,
                       const struct kl_offmap *outer);

#endif
