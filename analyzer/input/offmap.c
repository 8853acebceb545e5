#include "analyzer/input/offmap.h"

void kl_offmap_init(struct kl_offmap *m, struct kl_arena *a) {
  m->arena = a;
  m->segs = NULL;
  m->n = m->cap = 0;
}

void kl_offmap_identity(struct kl_offmap *m, struct kl_arena *a, uint32_t len) {
  kl_offmap_init(m, a);
  kl_offmap_add(m, 0, len, 0, len);
}

void kl_offmap_add(struct kl_offmap *m, uint32_t buf, uint32_t buf_len, uint32_t file,
                   uint32_t file_len) {
  if (m->n) {
    struct kl_offmap_seg *last = &m->segs[m->n - 1];
    /* Merging contiguous linear runs keeps identity-like maps at one segment. */
    if (last->buf_len == last->file_len && buf_len == file_len &&
        last->buf + last->buf_len == buf && last->file + last->file_len == file) {
      last->buf_len += buf_len;
      last->file_len += file_len;
      return;
    }
  }
  KL_VEC_PUSH(m->arena, m->segs, m->n, m->cap);
  m->segs[m->n++] = (struct kl_offmap_seg){buf, buf_len, file, file_len};
}

/* Index of the last segment starting at or before off, or -1 when off precedes them all. */
static long kl_offmap_find(const struct kl_offmap *m, uint32_t off) {
  long lo = 0, hi = (long)m->n - 1, best = -1;
  while (lo <= hi) {
    long mid = lo + (hi - lo) / 2;
    if (m->segs[mid].buf <= off) {
      best = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

uint32_t kl_offmap_to_file(const struct kl_offmap *m, uint32_t off) {
  if (!m || m->n == 0) return off;
  long i = kl_offmap_find(m, off);
  if (i < 0) return m->segs[0].file;
  const struct kl_offmap_seg *s = &m->segs[i];
  if (off >= s->buf + s->buf_len) return s->file + s->file_len; /* in a synthetic gap: snap */
  if (s->buf_len == s->file_len) return s->file + (off - s->buf);
  return s->file;
}

uint32_t kl_offmap_end_to_file(const struct kl_offmap *m, uint32_t end) {
  if (!m || m->n == 0) return end;
  if (end == 0) return kl_offmap_to_file(m, 0);
  /* The end is exclusive: map the last byte inside the range and step past its file run. */
  long i = kl_offmap_find(m, end - 1);
  if (i < 0) return m->segs[0].file;
  const struct kl_offmap_seg *s = &m->segs[i];
  if (end - 1 >= s->buf + s->buf_len) return s->file + s->file_len;
  if (s->buf_len == s->file_len) return s->file + (end - s->buf);
  return s->file + s->file_len;
}

void kl_offmap_compose(struct kl_offmap *out, struct kl_arena *a, const struct kl_offmap *inner,
                       const struct kl_offmap *outer) {
  kl_offmap_init(out, a);
  for (size_t i = 0; i < inner->n; i++) {
    const struct kl_offmap_seg *s = &inner->segs[i];
    if (s->buf_len != s->file_len) {
      /* A collapsed run stays collapsed onto the outer image of its middle range. */
      uint32_t f0 = kl_offmap_to_file(outer, s->file);
      uint32_t f1 = s->file_len ? kl_offmap_end_to_file(outer, s->file + s->file_len) : f0;
      kl_offmap_add(out, s->buf, s->buf_len, f0, f1 - f0);
      continue;
    }
    /* A linear run is cut wherever the outer map changes segment. */
    uint32_t done = 0;
    while (done < s->buf_len) {
      uint32_t mid = s->file + done;
      long j = kl_offmap_find(outer, mid);
      uint32_t take = s->buf_len - done;
      if (j >= 0 && mid < outer->segs[j].buf + outer->segs[j].buf_len) {
        const struct kl_offmap_seg *o = &outer->segs[j];
        uint32_t left = o->buf + o->buf_len - mid;
        if (take > left) take = left;
        if (o->buf_len == o->file_len) {
          kl_offmap_add(out, s->buf + done, take, o->file + (mid - o->buf), take);
        } else {
          kl_offmap_add(out, s->buf + done, take, o->file, o->file_len);
        }
      } else {
        /* Middle bytes the outer map does not cover: up to the next outer segment. */
        long nx = j + 1;
        if (nx < (long)outer->n && outer->segs[nx].buf > mid) {
          uint32_t gap = outer->segs[nx].buf - mid;
          if (take > gap) take = gap;
        }
        uint32_t f = kl_offmap_to_file(outer, mid);
        kl_offmap_add(out, s->buf + done, take, f, 0);
      }
      done += take;
    }
  }
}
