/* uncoalesced-access: device accesses whose address jumps between adjacent SIMD lanes. Lane
 * strides come from the device-access table of the lowered kernels (analyzer/passes/access.h,
 * through the facts); the threadgroup shapes of the dispatches (analyzer/input/dispatch.h) say
 * which thread positions a SIMD group spans. */
#include <stdio.h>
#include <string.h>

#include "rules/rules.h"

/* Bytes of one element, or 0 when unknown (a struct, an unbound template parameter), under each
 * of the n binding sets of the access's function (no bindings when n is 0). */
static unsigned kl_ua_elem_size(struct kl_rule_ctx *ctx, const struct kl_access *x,
                                const struct kl_bindings *sets, size_t n) {
  if (!x->elem_type) return 0;
  unsigned best = 0;
  /* With several instantiations, the smallest element decides: a report must hold for all. */
  for (size_t i = 0; i < (n ? n : 1); i++) {
    const struct kl_msl_type *t =
        kl_types_builtin(ctx->arena, ctx->types, x->elem_type, n ? &sets[i] : NULL);
    if (!t) return 0;
    if (best == 0 || t->size < best) best = t->size;
  }
  return best;
}

/* A threadgroup narrower than a SIMD group that a dispatch of a function gives (x, y and z
 * sizes), and the first dispatch that gives it. */
struct kl_ua_shape {
  int64_t tg[3];
  bool clamped; /* narrower than the dispatch's own threadgroup: its grid is */
  const struct kl_dispatch *d;
};

/* A function's instantiations and launch shapes, looked up once: the lookups allocate, and a
 * function usually makes many accesses. wide: some launch is at least a SIMD group wide in x,
 * or of a shape not known, or nothing launches it; its lanes are then all x positions. */
struct kl_ua_owner {
  const struct kl_function *fn;
  struct kl_bindings *sets;
  size_t n;
  struct kl_ua_shape *shapes;
  size_t nshapes, cap_shapes;
  bool wide;
};

struct kl_ua {
  struct kl_ua_owner *owners;
  size_t nowners, cap_owners;
};

/* The accesses the rule judges: the facts' device-access table. */
struct kl_ua_in {
  const struct kl_access *v;
  size_t n;
};

static const struct kl_ua_owner *kl_ua_owner(struct kl_rule_ctx *ctx, struct kl_ua *ua,
                                             const struct kl_function *fn) {
  for (size_t i = 0; i < ua->nowners; i++)
    if (ua->owners[i].fn == fn) return &ua->owners[i];
  KL_VEC_PUSH(ctx->arena, ua->owners, ua->nowners, ua->cap_owners);
  struct kl_ua_owner *o = &ua->owners[ua->nowners++];
  memset(o, 0, sizeof *o);
  o->fn = fn;
  o->n = fn ? kl_types_instances(ctx->arena, ctx->model, fn, &o->sets) : 0;
  bool launched = false;
  for (size_t i = 0; fn && i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    if (!kl_rules_launches(ctx, d, fn)) continue;
    launched = true;
    /* A grid of threads smaller than the threadgroup along a dimension (MLX `grid=(1, n, 1)`
     * with `threadgroup=(256, 1, 1)`) gives it only the grid's threads there: MLX clamps the
     * threadgroup to the grid, and Metal's dispatchThreads trims the groups at its edge. */
    int64_t tg[3];
    bool clamped = false;
    for (int k = 0; k < 3; k++) {
      tg[k] = d->tg_size[k];
      if (d->grid_threads[k] > 0 && d->grid_threads[k] < tg[k]) {
        tg[k] = d->grid_threads[k];
        clamped = true;
      }
    }
    if (!d->tg_known || tg[0] >= 32 || tg[0] < 1 || tg[1] < 1 || tg[2] < 1) {
      o->wide = true;
      continue;
    }
    bool seen = false;
    for (size_t k = 0; k < o->nshapes && !seen; k++) seen = !memcmp(o->shapes[k].tg, tg, sizeof tg);
    if (seen) continue;
    KL_VEC_PUSH(ctx->arena, o->shapes, o->nshapes, o->cap_shapes);
    struct kl_ua_shape *s = &o->shapes[o->nshapes++];
    memcpy(s->tg, tg, sizeof s->tg);
    s->clamped = clamped;
    s->d = d;
  }
  if (!launched) o->wide = true;
  return o;
}

/* Whether access x is reported when the lanes of a SIMD group are all x positions (a wide or
 * unknown threadgroup): its lane stride is a runtime value, or more than 16 bytes. *stride and
 * *size receive the stride in elements and the element size (0: unknown). */
static bool kl_ua_flagged(const struct kl_access *x, unsigned elem, int64_t *stride,
                          unsigned *size) {
  *stride = 0;
  *size = 0;
  if (!x->lane_known || (!x->lane_symbolic && x->lane_stride == 0)) return false;
  if (x->lane_symbolic) return true;
  *stride = x->lane_stride < 0 ? -x->lane_stride : x->lane_stride;
  /* Adjacent elements, however wide (`float4x4`): the lanes fill every line they touch. */
  if (*stride == 1) return false;
  *size = elem;
  /* Unknown element types are assumed to be at least one byte. */
  return *stride * (int64_t)(*size ? *size : 1) > 16;
}

/* One SIMD group of a threadgroup narrower than itself, at access x: the step of the address
 * along each thread position (the linear index counts x first, then y, then z), the 128-byte
 * lines its lanes touch, and the fewest lines their distinct elements would fill. */
struct kl_ua_group {
  int64_t step[3];
  uint8_t symbolic, compile_time; /* bit per dimension, as kl_access.dim_symbolic */
  int dims;                       /* thread positions it spans: 1 (.x), 2 (.y) or 3 (.z) */
  int64_t span[3];                /* and how many of each */
  int lines, need;
};

/* The lines the first SIMD group of a threadgroup of shape tg touches at access x (elements of
 * size bytes, 1 when unknown): its first 32 threads in x-fastest order (the whole threadgroup
 * when smaller), the first one at the start of a line, each at the offset its constant steps
 * give, and a runtime step placing each of its positions on lines of their own. False when a
 * step that matters is unknown. */
static bool kl_ua_count(const struct kl_access *x, const int64_t tg[3], unsigned size,
                        struct kl_ua_group *g) {
  memset(g, 0, sizeof *g);
  int64_t n = tg[0] * tg[1] * tg[2];
  if (n > 32) n = 32;
  const int64_t *s = x->dim_stride;
  int64_t mul[3] = {1, tg[0], tg[0] * tg[1]};
  uint8_t lin = (uint8_t)(1u << KL_ACCESS_DIM_LINEAR), unknown = 0;
  for (int d = 0; d < 3; d++) {
    uint8_t bit = (uint8_t)(1u << d);
    if (__builtin_mul_overflow(s[KL_ACCESS_DIM_LINEAR], mul[d], &g->step[d]) ||
        __builtin_add_overflow(g->step[d], s[d], &g->step[d]))
      return false;
    bool sym = (x->dim_symbolic & (bit | lin)) != 0;
    if (sym) g->symbolic |= bit;
    /* Compile-time only when every runtime part of the step is. */
    if (sym && !((x->dim_symbolic & ~x->dim_ct) & (bit | lin))) g->compile_time |= bit;
    if (x->dim_unknown & (bit | lin)) unknown |= bit;
  }
  g->dims = tg[0] * tg[1] < n && tg[2] > 1 ? 3 : tg[0] < n && tg[1] > 1 ? 2 : 1;
  for (int d = 0; d < 3; d++) {
    int64_t rows = (n + mul[d] - 1) / mul[d];
    g->span[d] = rows < tg[d] ? rows : tg[d];
  }
  if (x->few == KL_ACCESS_FEW_ALL) {
    g->lines = g->need = 1;
    return true;
  }
  /* Few x positions: few lines in each row, whatever the step along it. */
  uint8_t skip = x->few == KL_ACCESS_FEW_ROW ? 1 : 0;
  for (int d = 0; d < 3; d++)
    if ((unknown >> d & 1) && !(skip >> d & 1) && tg[d] > 1 && mul[d] < n) return false;
  int64_t key[32][4], addr[32][4];
  int nkeys = 0, naddr = 0;
  int64_t bytes = size ? size : 1;
  for (int64_t l = 0; l < n; l++) {
    int64_t c[3] = {l % tg[0], l / tg[0] % tg[1], l / (tg[0] * tg[1])};
    int64_t k[4] = {0, 0, 0, 0}, off = 0;
    for (int d = 0; d < 3; d++) {
      if (skip >> d & 1) continue;
      if (g->symbolic >> d & 1) {
        k[d] = c[d];
        continue;
      }
      int64_t t;
      if (__builtin_mul_overflow(g->step[d], c[d], &t) || __builtin_mul_overflow(t, bytes, &t) ||
          __builtin_add_overflow(off, t, &off))
        return false;
    }
    k[3] = off;
    bool seen = false;
    for (int i = 0; i < naddr && !seen; i++) seen = !memcmp(addr[i], k, sizeof k);
    if (!seen) memcpy(addr[naddr++], k, sizeof k);
    k[3] = off >= 0 ? off / 128 : -((-off + 127) / 128);
    seen = false;
    for (int i = 0; i < nkeys && !seen; i++) seen = !memcmp(key[i], k, sizeof k);
    if (!seen) memcpy(key[nkeys++], k, sizeof k);
  }
  g->lines = nkeys;
  g->need = (int)((naddr * bytes + 127) / 128);
  if (g->need < 1) g->need = 1;
  return true;
}

/* Whether access x is reported under threadgroup shape tg: one SIMD group touches more than 4
 * lines, the most that 32 lanes 16 bytes apart touch (the limit of kl_ua_flagged). */
static bool kl_ua_flagged_shape(const struct kl_access *x, const int64_t tg[3], unsigned elem,
                                struct kl_ua_group *g) {
  return x->dims_known && kl_ua_count(x, tg, elem, g) && g->lines > 4;
}

/* Why access x is reported: under the wide model (shape NULL), or under the first shape of its
 * function that makes it touch more than 4 lines (*g then describes it). */
struct kl_ua_why {
  bool flagged;
  const struct kl_ua_shape *shape;
  struct kl_ua_group g;
  int64_t stride;
  unsigned size;
};

static struct kl_ua_why kl_ua_judge(struct kl_rule_ctx *ctx, struct kl_ua *ua,
                                    const struct kl_access *x) {
  struct kl_ua_why w;
  memset(&w, 0, sizeof w);
  bool lane = x->lane_known && (x->lane_symbolic || x->lane_stride);
  const int64_t *s = x->dim_stride;
  bool dims = x->dims_known && (s[0] || s[1] || s[2] || s[3] || x->dim_symbolic || x->dim_unknown);
  if (!lane && !dims) return w;
  const struct kl_ua_owner *o = kl_ua_owner(ctx, ua, x->owner);
  if (!o->nshapes && !lane) return w;
  /* The element size is looked up only when a stride needs it. */
  unsigned elem = lane && x->lane_symbolic && (!o->nshapes || !x->dims_known)
                      ? 0
                      : kl_ua_elem_size(ctx, x, o->sets, o->n);
  /* Steps by dimension not known (a quadgroup index): judged as when the lanes are all x. */
  if (lane && (o->wide || !x->dims_known) && kl_ua_flagged(x, elem, &w.stride, &w.size)) {
    w.flagged = true;
    return w;
  }
  for (size_t i = 0; i < o->nshapes && x->dims_known; i++) {
    if (kl_ua_flagged_shape(x, o->shapes[i].tg, elem, &w.g)) {
      w.flagged = true;
      w.shape = &o->shapes[i];
      w.size = elem;
      return w;
    }
  }
  return w;
}

/* The step along one thread position for a message: "0", "4 elements (16 bytes)", "a runtime
 * stride". */
static const char *kl_ua_step(struct kl_rule_ctx *ctx, const struct kl_ua_group *g, int d,
                              unsigned size) {
  if (g->symbolic >> d & 1)
    return g->compile_time >> d & 1 ? "a product of compile-time sizes" : "a runtime stride";
  int64_t k = g->step[d] < 0 ? -g->step[d] : g->step[d];
  if (k == 0) return "0";
  const char *unit = k == 1 ? "element" : "elements";
  if (!size) return kl_arena_printf(ctx->arena, "%lld %s", (long long)k, unit);
  return kl_arena_printf(ctx->arena, "%lld %s (%lld bytes)", (long long)k, unit,
                         (long long)(k * size));
}

/* Report access x under the threadgroup shape that makes it touch too many lines. */
static struct kl_diag *kl_ua_report_shape(struct kl_rule_ctx *ctx, const struct kl_access *x,
                                          struct kl_span sp, const struct kl_ua_why *w,
                                          const char *buf, const char *where) {
  const struct kl_dispatch *d = w->shape->d;
  const int64_t *tg = w->shape->tg;
  const struct kl_ua_group *g = &w->g;
  static const char *const axis[] = {".x", ".y", ".z"};
  char steps[400] = "", spans[200] = "";
  for (int k = 0; k < g->dims; k++) {
    size_t sl = strlen(steps), pl = strlen(spans);
    const char *sep = k == 0 ? "" : k + 1 == g->dims ? " and " : ", ";
    snprintf(steps + sl, sizeof steps - sl, "%s%s in %s", sep, kl_ua_step(ctx, g, k, w->size),
             axis[k]);
    snprintf(spans + pl, sizeof spans - pl, "%s%lld%s in %s", sep, (long long)g->span[k],
             k ? "" : " threads", axis[k]);
  }
  const char *call = kl_rules_dispatch_place(ctx->arena, d);
  struct kl_diag *r = kl_rules_report_span(
      ctx, sp,
      "one SIMD group %s `%s` stepping by %s: the threadgroup (%lld, %lld, %lld)%s of %s "
      "gives it %s, so it touches %d 128-byte lines per access where %d would do; "
      "give the threadgroup 32 threads or more in .x, with .x the stride-1 part of the "
      "index%s",
      x->store ? "writes" : "reads", buf, steps, (long long)tg[0], (long long)tg[1],
      (long long)tg[2], w->shape->clamped ? " (as the grid trims it)" : "", call, spans, g->lines,
      g->need, where);
  if (d->local)
    kl_rules_relate_span(ctx, r, d->tg_span, "%s sets the threadgroup here",
                         kl_rules_dispatch_place(ctx->arena, d));
  return r;
}

/* Whether steps ka and kb of elements of sizes sa and sb are one distance: the same bytes when
 * both sizes are known (a float4 read and a float read of one 32-byte chunk), else the same
 * count of the same element. */
static bool kl_ua_same_step(int64_t ka, unsigned sa, int64_t kb, unsigned sb) {
  if (sa && sb && sa != sb) return ka * (int64_t)sa == kb * (int64_t)sb;
  return sa == sb && ka == kb;
}

/* Whether reported accesses a and b, judged wa and wb, step alike between lanes: the same
 * threadgroup shape and steps, or under the wide model the same lane stride, in bytes. */
static bool kl_ua_same_stride(const struct kl_access *a, const struct kl_ua_why *wa,
                              const struct kl_access *b, const struct kl_ua_why *wb) {
  if (wa->shape != wb->shape) return false;
  if (wa->shape) {
    for (int d = 0; d < 3; d++)
      if (!kl_ua_same_step(wa->g.step[d], wa->size, wb->g.step[d], wb->size)) return false;
    return wa->g.symbolic == wb->g.symbolic && wa->g.dims == wb->g.dims;
  }
  if (a->lane_symbolic != b->lane_symbolic) return false;
  return a->lane_symbolic ? a->lane_compile_time == b->lane_compile_time && wa->size == wb->size
                          : kl_ua_same_step(wa->stride, wa->size, wb->stride, wb->size);
}

/* Whether reported accesses a and b were made in the same run of one function: the same
 * function and call of it, and flagged in the same specialisations (wha, whb). */
static bool kl_ua_same_run(const struct kl_access *a, const char *wha,
                           const struct kl_access *b, const char *whb) {
  if (a->owner != b->owner || strcmp(wha, whb)) return false;
  bool ca = !kl_node_null(a->call), cb = !kl_node_null(b->call);
  return ca == cb && (!ca || ts_node_eq(a->call, b->call));
}

/* Whether reported accesses a and b (judged wa and wb, in specialisations wha and whb) are one
 * lane-owned block: the same buffer, direction and lane stride in the same run of one function.
 * Each lane then reads or writes its own chunk of the buffer in several pieces (`out[b + 0]` ...
 * `out[b + 7]`, two float4 halves of one 8-float chunk): one defect, fixed once, so reported
 * once. */
static bool kl_ua_same_block(const struct kl_access *a, const struct kl_ua_why *wa,
                             const char *wha, const struct kl_access *b,
                             const struct kl_ua_why *wb, const char *whb) {
  if (!a->buffer || a->buffer != b->buffer || a->store != b->store) return false;
  return kl_ua_same_run(a, wha, b, whb) && kl_ua_same_stride(a, wa, b, wb);
}

/* Whether the flagged records of groups ga and gb are made at one index in each of their
 * specialisations: `h[elem]`, `c[elem]`, whatever buffers they are. Each record of ga needs one
 * of gb in the same specialisation and call at the same offset (the table's index_rep). */
static bool kl_ua_same_index(struct kl_rule_ctx *ctx, const struct kl_ua_in *in,
                             const bool *flagged, const struct kl_rules_group *ga,
                             const struct kl_rules_group *gb) {
  const struct kl_access *v = in->v;
  uint32_t sa = ts_node_start_byte(v[ga->first].node), sb = ts_node_start_byte(v[gb->first].node);
  bool any = false;
  for (size_t i = 0; i < in->n; i++) {
    const struct kl_access *y = &v[i];
    if (!flagged[i] || ts_node_start_byte(y->node) != sa) continue;
    bool match = false;
    for (size_t k = 0; k < in->n && !match; k++) {
      const struct kl_access *z = &v[k];
      if (!flagged[k] || ts_node_start_byte(z->node) != sb || z->owner != y->owner) continue;
      if (y->inst ? !z->inst || strcmp(y->inst, z->inst) : z->inst != NULL) continue;
      match = y->index_rep == z->index_rep && ts_node_eq(y->call, z->call);
    }
    if (!match) return false;
    any = true;
  }
  return any;
}

/* "; also lines 52-58 and 61, the same lane-owned block" for the n sorted lines of a block's
 * other accesses, or "" when there are none. */
static const char *kl_ua_also(struct kl_rule_ctx *ctx, const uint32_t *lines, size_t n) {
  if (!n) return "";
  const char *s = "";
  size_t runs = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && lines[j + 1] == lines[j] + 1) j++;
    size_t k = j + 1;
    const char *sep = !runs ? "" : k == n ? " and " : ", ";
    s = i == j ? kl_arena_printf(ctx->arena, "%s%s%u", s, sep, lines[i])
               : kl_arena_printf(ctx->arena, "%s%s%u-%u", s, sep, lines[i], lines[j]);
    runs++;
    i = k;
  }
  return kl_arena_printf(ctx->arena, "; also line%s %s, the same lane-owned block",
                         n > 1 ? "s" : "", s);
}

static int kl_ua_by_line(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* How a reported access joins the finding of an earlier one (kl_ua_check). */
enum kl_ua_join { KL_UA_LEAD = 0, KL_UA_BLOCK, KL_UA_INDEX };

/* "; also `cell` (line 119) and `cell_state` (lines 120 and 124) at the same index, the same
 * defect" for the n accesses (buffer names bufs, sorted lines) of other buffers that share the
 * finding's index, or "". */
static const char *kl_ua_also_index(struct kl_rule_ctx *ctx, const char *const *bufs,
                                    const uint32_t *lines, size_t n) {
  if (!n) return "";
  const char **items = kl_arena_alloc(ctx->arena, (n + 1) * sizeof *items);
  bool *done = kl_arena_alloc(ctx->arena, n + 1);
  size_t ni = 0;
  for (size_t i = 0; i < n; i++) {
    if (done[i]) continue;
    const char **ls = kl_arena_alloc(ctx->arena, (n + 1) * sizeof *ls);
    size_t nl = 0;
    for (size_t k = i; k < n; k++) {
      if (done[k] || strcmp(bufs[k], bufs[i])) continue;
      done[k] = true;
      ls[nl++] = kl_arena_printf(ctx->arena, "%u", lines[k]);
    }
    items[ni++] = kl_arena_printf(ctx->arena, "`%s` (line%s %s)", bufs[i], nl > 1 ? "s" : "",
                                  kl_rules_list(ctx->arena, ls, nl, 6));
  }
  return kl_arena_printf(ctx->arena, "; also %s at the same index, the same defect",
                         kl_rules_list(ctx->arena, items, ni, 6));
}

static const char *kl_ua_buf(const struct kl_access *x) {
  return x->buffer && x->buffer->name ? x->buffer->name : "buffer";
}

static void kl_ua_check(struct kl_rule_ctx *ctx) {
  struct kl_ua ua = {0};
  struct kl_ua_in in = {NULL, 0};
  if (ctx->facts && ctx->facts->has_access) in = (struct kl_ua_in){ctx->facts->access,
                                                                   ctx->facts->naccess};
  const struct kl_access *acc = in.v;
  bool *flagged = kl_arena_alloc(ctx->arena, in.n + 1);
  struct kl_rules_record *recs = kl_arena_alloc(ctx->arena, (in.n + 1) * sizeof *recs);
  for (size_t i = 0; i < in.n; i++) {
    flagged[i] = kl_ua_judge(ctx, &ua, &acc[i]).flagged;
    recs[i] = (struct kl_rules_record){acc[i].node, acc[i].inst, acc[i].owner, acc[i].ninsts};
  }
  struct kl_rules_group *groups;
  size_t ng = kl_rules_group_records(ctx, recs, in.n, flagged, &groups);
  struct kl_ua_why *why = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *why);
  /* lead[gi]: the group whose finding reports group gi (itself for the first of a defect);
   * join[gi]: how gi is the same defect as an earlier group: one lane-owned block of a buffer,
   * or the same index into another buffer, stepping alike between lanes (one layout, fixed
   * once). Reads and writes stay apart, as a block's two directions do. */
  size_t *lead = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *lead);
  enum kl_ua_join *join = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *join);
  for (size_t gi = 0; gi < ng; gi++) {
    const struct kl_access *x = &acc[groups[gi].first];
    why[gi] = kl_ua_judge(ctx, &ua, x);
    lead[gi] = gi;
    join[gi] = KL_UA_LEAD;
    for (size_t k = 0; k < gi && join[gi] == KL_UA_LEAD; k++) {
      const struct kl_access *y = &acc[groups[k].first];
      if (kl_ua_same_block(y, &why[k], groups[k].where, x, &why[gi], groups[gi].where))
        join[gi] = KL_UA_BLOCK;
      else if (y->store == x->store && kl_ua_same_run(y, groups[k].where, x, groups[gi].where) &&
               kl_ua_same_stride(y, &why[k], x, &why[gi]) &&
               kl_ua_same_index(ctx, &in, flagged, &groups[k], &groups[gi]))
        join[gi] = KL_UA_INDEX;
      if (join[gi] != KL_UA_LEAD) lead[gi] = lead[k];
    }
  }
  uint32_t *lines = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *lines);
  uint32_t *ilines = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *ilines);
  const char **ibufs = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *ibufs);
  for (size_t gi = 0; gi < ng; gi++) {
    if (lead[gi] != gi) continue;
    const struct kl_access *x = &acc[groups[gi].first];
    size_t nl = 0, ni = 0;
    for (size_t k = gi + 1; k < ng; k++) {
      if (lead[k] != gi) continue;
      if (join[k] == KL_UA_BLOCK) {
        lines[nl++] = groups[k].span.line;
      } else {
        ibufs[ni] = kl_ua_buf(&acc[groups[k].first]);
        ilines[ni++] = groups[k].span.line;
      }
    }
    qsort(lines, nl, sizeof *lines, kl_ua_by_line);
    const char *where =
        kl_arena_printf(ctx->arena, "%s%s%s", groups[gi].where, kl_ua_also(ctx, lines, nl),
                        kl_ua_also_index(ctx, ibufs, ilines, ni));
    struct kl_span sp = groups[gi].span;
    const struct kl_ua_why *w = &why[gi];
    int64_t stride = w->stride;
    unsigned size = w->size;
    const char *buf = kl_ua_buf(x);
    struct kl_diag *d;
    if (w->shape) {
      d = kl_ua_report_shape(ctx, x, sp, w, buf, where);
    } else if (x->lane_symbolic) {
      d = kl_rules_report_span(
          ctx, sp,
          "adjacent SIMD lanes %s `%s` %s apart, so one SIMD group "
          "touches up to 32 cache lines per access; make the thread index "
          "the fastest-varying (stride-1) part of the index, or stage "
          "through threadgroup memory%s",
          x->store ? "write" : "read", buf,
          x->ct_not_one          ? "a compile-time stride (not 1 on this path)"
          : x->lane_compile_time ? "a product of compile-time sizes"
                                 : "a runtime stride",
          where);
    } else if (size) {
      int64_t bytes = stride * (int64_t)size;
      d = kl_rules_report_span(
          ctx, sp,
          "adjacent SIMD lanes %s `%s` %lld elements (%lld bytes) apart, so one SIMD "
          "group touches %lld bytes instead of %u; make the thread index the "
          "stride-1 part of the index%s",
          x->store ? "write" : "read", buf, (long long)stride, (long long)bytes,
          (long long)(bytes * 32), 32 * size, where);
    } else {
      d = kl_rules_report_span(ctx, sp,
                               "adjacent SIMD lanes %s `%s` %lld elements apart; make the thread "
                               "index the stride-1 part of the index%s",
                               x->store ? "write" : "read", buf, (long long)stride, where);
    }
    for (size_t k = gi + 1; k < ng; k++) {
      if (lead[k] != gi) continue;
      const struct kl_access *y = &acc[groups[k].first];
      if (join[k] == KL_UA_BLOCK)
        kl_rules_relate_span(ctx, d, groups[k].span, "the same lane-owned block of `%s`",
                             kl_ua_buf(y));
      else
        kl_rules_relate_span(ctx, d, groups[k].span, "`%s` %s at the same index", kl_ua_buf(y),
                             y->store ? "written" : "read");
    }
    kl_rules_relate_call_at(ctx, d, x->call);
  }
}

const struct kl_rule kl_rule_uncoalesced_access = {
    .id = "uncoalesced-access",
    .default_severity = KL_SEV_WARNING,
    .implemented = true,
    .summary = "Adjacent SIMD lanes access device memory far apart",
    .what = "Reports a device-memory load or store whose index has a lane stride (the "
            "coefficient of the fastest-varying thread coordinate, found by the index "
            "algebra) that is a runtime value, such as `x[gid * D + j]` with `D` a buffer "
            "argument, or "
            "constant with stride times element size above 16 bytes. A runtime lane stride "
            "is a row length only where the index also walks another axis one fixed step at "
            "a time (a loop counter or another thread position with a constant, or "
            "`unit-strides`, coefficient: the `j` of `x[gid * D + j]`, the `tid.y` of "
            "`x[tid.x * ld + tid.y]`), or where the thread also reads the elements beside "
            "the one it steps to (`x[gid * ld]` next to `x[gid * ld + 1]`: a record of its "
            "own); a runtime value that scales every varying part of the "
            "index (`w[w_stride * i]`, `in[i * in_stride]` with i counting from the lane) is "
            "the element stride of the one axis the lanes walk, as the host hands it in (1 "
            "for contiguous data), and is not reported. A stride of 0 (every "
            "lane reads the same element) or 1 is fine, and so are vector element types "
            "(`float4*` with stride 1) and a small per-thread chunk: each thread handling N "
            "consecutive elements with N times the element size at most 16 bytes (`index *= "
            "4; for (i = 0; i < 4; i++) out[index + i]` on floats). Template "
            "values, `constexpr` locals and constant helpers (`get_bytes<bits>()`) fold per "
            "instantiation, and a finding that holds for some instantiations names them. A "
            "branch only a few lanes enter (`lane < 4`, `lane < simdgroups_per_threadgroup`) "
            "is not reported, nor is a scalar tail: with each lane owning a chunk `b = lane "
            "* 8`, the else branch of `b + 8 <= n` (or the code after it returns) where the "
            "access runs only while an index from b is below n (`for (i = b; i < n; ++i)`, "
            "`b + k < n`, or a float4 tail `else if (b + 4 <= n)`): only the lane whose chunk "
            "straddles n gets there. The lanes of a "
            "SIMD group are the x positions of the threadgroup, unless a dispatch gives a "
            "threadgroup narrower than 32 in x (MLX `threadgroup=(8, 8, 4)`, PyTorch "
            "`group_size=`, a host `threadsPerThreadgroup:`): its 32 lanes then span .x, then "
            ".y and .z (the order of `thread_index_in_threadgroup`), and the access is reported "
            "when one SIMD group touches more than 4 128-byte lines (what 32 lanes 16 bytes "
            "apart touch), counted from the steps of its index along each thread position. An "
            "access that does not depend on .y is then the same address for every row (a "
            "broadcast), and one with a runtime step along .y puts each row on lines of its "
            "own. Each such dispatch is checked, and the first that makes the access touch too "
            "many lines is named; one that gives no shape, or one 32 wide or more, keeps the "
            "model above; a grid of a constant number of threads smaller than the threadgroup "
            "trims it (`grid=(1, n, 1)` with `threadgroup=(256, 1, 1)` is one thread per "
            "threadgroup, with no adjacent lanes). Names listed in the `.lintrc` key "
            "`unit-strides` (ggml's `nb0`) are one element's size in bytes. Threadgroup and "
            "constant "
            "memory are not reported. An index the algebra cannot express (`%`, "
            "data-dependent values) is never reported, and neither is a stride that is one "
            "compile-time value kernlint cannot see (a template parameter no instantiation "
            "binds, a macro of a header it cannot read, an MLX `template=` value the host "
            "computes): such a value is mostly a small per-lane chunk (taps, heads, items per "
            "thread). A product of two of them (`n_per_t * D`, a row per lane) is reported. "
            "Reported at the access; the accesses of one lane-owned block (one kernel, buffer, "
            "direction and lane stride: `out[b + 0]` ... `out[b + 7]`, two float4 halves of a "
            "lane's chunk) are one finding, at the first, naming the others, and so are the "
            "reads (or the writes) of one kernel run at one index into several buffers, "
            "stepping alike between lanes (`h[elem]`, `c[elem]`: one layout, fixed at once). "
            "Another index (a mask at its own row pitch) is another finding.",
    .why = "The 32 lanes of a SIMD group issue their memory accesses together, and the "
           "hardware serves them in 128-byte lines. Consecutive lanes reading consecutive "
           "elements share a few lines; lanes a row apart touch 32 different lines for "
           "the same amount of useful data, so a bandwidth-bound kernel (a row-wise dot "
           "product, a normalisation) runs several times slower. The fix is usually to "
           "let the lanes of a SIMD group cooperate on one row, striding by the lane "
           "count, and reduce with `simd_sum`.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void row_dot(device const float* a [[buffer(0)]],\n"
               "                    device const float* v [[buffer(1)]],\n"
               "                    device float* out [[buffer(2)]],\n"
               "                    constant uint& cols [[buffer(3)]],\n"
               "                    uint row [[thread_position_in_grid]]) {\n"
               "  float s = 0.0f;\n"
               "  for (uint j = 0; j < cols; j++)\n"
               "    s += a[row * cols + j] * v[j]; // lanes are `cols` floats apart\n"
               "  out[row] = s;\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "// One SIMD group per row: lanes read consecutive floats, then reduce.\n"
               "kernel void row_dot(device const float* a [[buffer(0)]],\n"
               "                    device const float* v [[buffer(1)]],\n"
               "                    device float* out [[buffer(2)]],\n"
               "                    constant uint& cols [[buffer(3)]],\n"
               "                    uint row [[threadgroup_position_in_grid]],\n"
               "                    uint lane [[thread_index_in_simdgroup]]) {\n"
               "  float s = 0.0f;\n"
               "  for (uint j = lane; j < cols; j += 32)\n"
               "    s += a[row * cols + j] * v[j];\n"
               "  s = simd_sum(s);\n"
               "  if (lane == 0) out[row] = s;\n"
               "}\n",
    .check = kl_ua_check,
};
