/* bounds-guard: device accesses indexed by thread position with no guard, when the grid may
 * exceed the data. Facts come from the lowered kernels: the accesses of bounds-guard's list
 * (analyzer/passes/bgaccess.h) and what the IR ranges say of each (analyzer/passes/guards.h,
 * kl_facts_find_guard). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/core/config.h"
#include "rules/rules.h"

/* One access the rule judges: one of bounds-guard's list from the lowered kernels (kl_facts.bg);
 * the facts' answers are keyed by its index there. */
struct kl_bg_acc {
  TSNode node; /* the element accessed (`x[i]` of `x[i].d`) */
  const struct kl_var *buffer;
  bool store;
  struct kl_affine form; /* index in elements from the buffer's start */
  uint32_t run; /* the lowering form's atoms belong to */
  const struct kl_function *owner;
  TSNode call; /* in a helper: the kernel's call whose context this is */
  const char *inst;
  uint16_t ninsts;
};

/* Whether the facts hold bounds-guard's access list (not for a unit with no kernel lowered). */
static bool kl_bg_ir(const struct kl_rule_ctx *ctx) {
  return ctx->facts && ctx->facts->has_bg;
}

/* The accesses the rule judges, in *out; returns how many. */
static size_t kl_bg_accesses(struct kl_rule_ctx *ctx, struct kl_bg_acc **out) {
  size_t n = kl_bg_ir(ctx) ? ctx->facts->nbg : 0;
  struct kl_bg_acc *v = kl_arena_alloc(ctx->arena, (n + 1) * sizeof *v);
  for (size_t i = 0; i < n; i++) {
    const struct kl_bgaccess *x = &ctx->facts->bg[i];
    v[i] = (struct kl_bg_acc){x->node,  x->buffer, x->store, x->form, x->run,
                              x->owner, x->call,   x->inst,  x->ninsts};
  }
  *out = v;
  return n;
}

/* What is known of access i's index: what the IR ranges say of it (kl_facts_find_guard), nothing
 * where no lowering answers. */
struct kl_bg_index {
  bool thread_indexed, unguarded, evidence, clamp, wide;
  uint8_t dims;
  const char *var;
  TSNode ev;
};

static struct kl_bg_index kl_bg_index(struct kl_rule_ctx *ctx, size_t i) {
  const struct kl_facts_guard *g = kl_bg_ir(ctx) ? kl_facts_find_guard(ctx->facts, i) : NULL;
  if (!g) return (struct kl_bg_index){0};
  const char *var = g->var;
  if (!var && !kl_node_null(g->part)) {
    var = kl_dialect_node_text(ctx->arena, ctx->unit, g->part);
    if (strlen(var) > 40) var = NULL;
  }
  return (struct kl_bg_index){g->thread_indexed, g->unguarded, g->evidence, g->clamp, g->wide,
                              g->dims,           var,          g->ev};
}

/* Evidence (a): the first dispatch of the access's kernel that rounds the grid up, if any. */
static const struct kl_dispatch *kl_bg_rounding(struct kl_rule_ctx *ctx,
                                                const struct kl_bg_acc *x, uint8_t dims) {
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    /* Only a dimension the grid is rounded in can run past the data. */
    if (d->grid_rounded && (d->grid_dims & dims) &&
        kl_rules_launches(ctx, d, x->owner))
      return d;
  }
  return NULL;
}

/* Evidence (a) reported: the first rounding dispatch names the place, and every local one is a
 * related location (each call site is checked on its own). */
static struct kl_diag *kl_bg_report_host(struct kl_rule_ctx *ctx,
                                         const struct kl_bg_acc *x, struct kl_span at,
                                         const struct kl_dispatch *first, const char *access,
                                         const char *var, const char *spec, uint8_t dims) {
  const char *where = kl_rules_dispatch_place(ctx->arena, first);
  struct kl_diag *d = kl_rules_report_span(
      ctx, at,
      "`%s` is indexed by `%s` with no bound check, and %s rounds the grid up past the data "
      "(`%s`); add `if (%s >= n) return;` or guard the access%s",
      access, var, where, first->grid_text ? first->grid_text : "rounded", var, spec);
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *o = &ctx->dispatches[i];
    if (o->local && o->grid_rounded && (o->grid_dims & dims) &&
        kl_rules_launches(ctx, o, x->owner))
      kl_rules_relate_span(ctx, d, o->grid_span, "%s rounds the grid up here",
                           kl_rules_dispatch_place(ctx->arena, o));
  }
  return d;
}

/* Whether every launch of the access's kernel in the run (one at least) is exact in each grid
 * dimension the access is unguarded in, the kernel's check is a plain bound and the index adds
 * nothing past it: a count rounded up to whole groups on a path where the
 * divisor divides it (grid_exact). The kernel's comparison elsewhere is then the check of a
 * partial last group these launches do not have, not evidence (b) that the grid passes the data. */
static bool kl_bg_exact_launches(struct kl_rule_ctx *ctx, const struct kl_bg_acc *x,
                                 uint8_t udims, TSNode cmp, bool clamp) {
  /* Only a plain bound (`row < rows`, or the clamp `min(row, rows - 1)`) is the check a partial
   * last group needs: `i < n - 1` checks less than the grid covers, and an index a constant past
   * the compared position (`x[i + 1]`) runs past the data under an exact grid too. (A symbolic
   * part, such as a loop's counter, is not known to be past it.) */
  if (kl_node_null(cmp)) return false;
  if (!clamp && strcmp(ts_node_type(cmp), "binary_expression")) return false;
  for (uint32_t k = 0; !clamp && k < ts_node_named_child_count(cmp); k++) {
    const char *t = ts_node_type(ts_node_named_child(cmp, k));
    if (strcmp(t, "identifier") && strcmp(t, "field_expression")) return false;
  }
  if ((x->form.known || x->form.partial) && !x->form.c0_symbolic && x->form.c0 > 0) return false;
  uint8_t dims = udims ? udims : 1;
  size_t n = 0;
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    if (!kl_rules_launches(ctx, d, x->owner)) continue;
    if ((d->grid_exact & dims) != dims) return false;
    n++;
  }
  return n > 0;
}

/* Why an access is reported: unguarded with evidence that the grid passes the data, or past the
 * bound its own check keeps a part of its index below (kl_facts_past_bound). */
enum kl_bg_why { KL_BG_NO = 0, KL_BG_GRID, KL_BG_PAST };

/* What access i is reported for: why, its evidence (b) (a comparison, or a clamp of the
 * unguarded part) or for KL_BG_PAST the check it passes, the index then, and the dispatch that
 * is its evidence (a) if that is why. */
struct kl_bg_verdict {
  enum kl_bg_why why;
  bool evidence;
  TSNode ev, index;
  const struct kl_dispatch *host;
};

static struct kl_bg_verdict kl_bg_flagged(struct kl_rule_ctx *ctx, const struct kl_bg_acc *xs,
                                          size_t i) {
  const struct kl_bg_acc *x = &xs[i];
  struct kl_bg_index ix = kl_bg_index(ctx, i);
  struct kl_bg_verdict v = {KL_BG_NO, false, {{0}, NULL, NULL}, {{0}, NULL, NULL}, NULL};
  if (!ix.thread_indexed) return v;
  /* The launches seen keep it in bounds (a grid counted from the kernel's bound, a threadgroup
   * within the stride of a guarded row): no grid runs past the data here. */
  if (ctx->facts && kl_facts_launch_covers(ctx->facts, i)) return v;
  if (ix.unguarded) {
    bool rounded = ctx->settings && ctx->settings->assume_rounded_grid, clamp = ix.clamp;
    v.evidence = ix.evidence;
    v.ev = ix.ev;
    v.why = KL_BG_GRID;
    /* A rounded-up grid adds whole threadgroups: a part that is a SIMD lane's index alone stays
     * below 32 in them as in any other, and is no part it takes past the data. */
    if ((rounded && ix.wide) ||
        (v.evidence && !kl_bg_exact_launches(ctx, x, ix.dims, v.ev, clamp)))
      return v;
    v.host = ix.wide ? kl_bg_rounding(ctx, x, ix.dims) : NULL;
    if (v.host) return v;
  }
  v = (struct kl_bg_verdict){KL_BG_NO, false, {{0}, NULL, NULL}, {{0}, NULL, NULL}, NULL};
  if (ctx->facts && kl_facts_past_bound(ctx->facts, i, &v.ev, &v.index)) v.why = KL_BG_PAST;
  return v;
}

/* Whether the variable a write or declaration target n names is one of names[0..nn): n itself
 * an identifier, or the one a declarator wraps (`*p`, `a[4]`, `&r`). Writing an element
 * (`y[i] = v`) changes no variable. */
static bool kl_bg_names(struct kl_rule_ctx *ctx, TSNode n, const char **names, size_t nn) {
  while (!kl_node_null(n) && strcmp(ts_node_type(n), "identifier")) {
    const char *ty = ts_node_type(n);
    if (strcmp(ty, "pointer_declarator") && strcmp(ty, "reference_declarator") &&
        strcmp(ty, "array_declarator") && strcmp(ty, "parenthesized_declarator"))
      return false;
    TSNode in = kl_node_field(n, "declarator");
    n = kl_node_null(in) && ts_node_named_child_count(n) ? ts_node_named_child(n, 0) : in;
  }
  if (kl_node_null(n)) return false;
  const char *t = kl_dialect_node_text(ctx->arena, ctx->unit, n);
  for (size_t i = 0; i < nn; i++)
    if (!strcmp(t, names[i])) return true;
  return false;
}

/* The identifiers of access node n (its buffer and index variables), at most max. */
static size_t kl_bg_idents(struct kl_rule_ctx *ctx, TSNode n, const char **out, size_t nout,
                           size_t max) {
  if (kl_node_null(n) || nout >= max) return nout;
  if (!strcmp(ts_node_type(n), "identifier")) {
    out[nout++] = kl_dialect_node_text(ctx->arena, ctx->unit, n);
    return nout;
  }
  uint32_t c = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < c; i++)
    nout = kl_bg_idents(ctx, ts_node_named_child(n, i), out, nout, max);
  return nout;
}

/* Whether code in n within bytes [lo, hi) assigns, steps or declares one of names. */
static bool kl_bg_written(struct kl_rule_ctx *ctx, TSNode n, uint32_t lo, uint32_t hi,
                          const char **names, size_t nn) {
  if (kl_node_null(n) || ts_node_end_byte(n) <= lo || ts_node_start_byte(n) >= hi) return false;
  const char *ty = ts_node_type(n);
  TSNode target = {0};
  if (!strcmp(ty, "assignment_expression"))
    target = kl_node_field(n, "left");
  else if (!strcmp(ty, "update_expression"))
    target = kl_node_field(n, "argument");
  else if (!strcmp(ty, "init_declarator"))
    target = kl_node_field(n, "declarator");
  if (!kl_node_null(target) && ts_node_start_byte(n) >= lo && kl_bg_names(ctx, target, names, nn))
    return true;
  uint32_t c = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < c; i++)
    if (kl_bg_written(ctx, ts_node_named_child(n, i), lo, hi, names, nn)) return true;
  return false;
}

/* Text with the white space taken out, so `x[ i ]` and `x[i]` compare equal. */
static const char *kl_bg_squeeze(struct kl_rule_ctx *ctx, TSNode n) {
  char *t = kl_dialect_node_text(ctx->arena, ctx->unit, n);
  char *w = t;
  for (const char *r = t; *r; r++)
    if (*r != ' ' && *r != '\t' && *r != '\n' && *r != '\r') *w++ = *r;
  *w = '\0';
  return t;
}

enum kl_bg_same { KL_BG_OTHER = 0, KL_BG_FIELD, KL_BG_BLOCK, KL_BG_PART };

/* The element access node n reaches, and in *field whether the access reads a field of it: n
 * itself under a field (`x[i]` of `x[i].d`), or for a field through a pointer (`xr->qs`, as the
 * lowered kernels record it) the pointer. */
static TSNode kl_bg_element(TSNode n, bool *field) {
  if (kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION)) {
    TSNode arg = kl_node_field(n, "argument");
    if (!kl_node_null(arg)) {
      *field = true;
      return arg;
    }
  }
  TSNode p = ts_node_parent(n);
  *field = !kl_node_null(p) && !strcmp(ts_node_type(p), "field_expression");
  return n;
}

/* Whether flagged access b is the same defect as the earlier a: one unguarded index into one
 * buffer, in one function and context, on the same evidence (the name the message gives the
 * unguarded part may differ: `4 * gid + 1` is named whole). Either another field of the same
 * struct element (a quantised block's `x[i].d` after `x[i].qs[j]`: the same index, whose
 * variables nothing between the two changes), or another element of the block each thread owns
 * (`out[4 * gid + 1]` after `out[4 * gid]`: the same thread-scaled form, the constants in one
 * multiple of the scale), both reads or both writes. A read and a write stay two findings, also
 * of one element: the write is the worse defect (it corrupts what lies past the buffer), and
 * each is fixed where it is. */
static enum kl_bg_same kl_bg_same(struct kl_rule_ctx *ctx, const struct kl_bg_acc *xs,
                                  const struct kl_rules_group *ga, const struct kl_bg_verdict *va,
                                  const struct kl_rules_group *gb,
                                  const struct kl_bg_verdict *vb) {
  const struct kl_bg_acc *a = &xs[ga->first], *b = &xs[gb->first];
  if (va->why != KL_BG_GRID || vb->why != KL_BG_GRID) return KL_BG_OTHER;
  if (a->owner != b->owner || !a->buffer || a->buffer != b->buffer || a->store != b->store ||
      strcmp(ga->where, gb->where) || va->evidence != vb->evidence ||
      kl_node_null(va->ev) != kl_node_null(vb->ev) ||
      (!kl_node_null(va->ev) && !ts_node_eq(va->ev, vb->ev)) ||
      kl_node_null(a->call) != kl_node_null(b->call) ||
      (!kl_node_null(a->call) && !ts_node_eq(a->call, b->call)))
    return KL_BG_OTHER;
  bool fda, fdb;
  TSNode ea = kl_bg_element(a->node, &fda), eb = kl_bg_element(b->node, &fdb);
  if (!strcmp(kl_bg_squeeze(ctx, ea), kl_bg_squeeze(ctx, eb))) {
    const char *names[16];
    size_t nn = kl_bg_idents(ctx, ea, names, 0, 16);
    uint32_t sa = ts_node_start_byte(ea), sb = ts_node_start_byte(eb);
    uint32_t lo = sa < sb ? ts_node_end_byte(ea) : ts_node_end_byte(eb);
    uint32_t hi = sa < sb ? sb : sa;
    if (nn < 16 && !kl_bg_written(ctx, a->owner->body, lo, hi, names, nn))
      return fda && fdb ? KL_BG_FIELD : KL_BG_OTHER;
    return KL_BG_OTHER;
  }
  /* From the lowered kernels: two accesses whose unguarded part is one value (`qb->d` and
   * `qs[i]` of one row pointer `qb = x + row * nb`) are fixed by one guard of it. */
  if (kl_bg_ir(ctx)) {
    const struct kl_facts_guard *pa = kl_facts_find_guard(ctx->facts, ga->first);
    const struct kl_facts_guard *pb = kl_facts_find_guard(ctx->facts, gb->first);
    if (pa && pb && !kl_node_null(pa->part) && !kl_node_null(pb->part) &&
        ts_node_eq(pa->part, pb->part))
      return KL_BG_PART;
  }
  const struct kl_affine *fa = &a->form, *fb = &b->form;
  /* Atoms of two lowerings are not comparable. */
  if (a->run != b->run) return KL_BG_OTHER;
  if (!fa->known || !fb->known || fa->c0_symbolic || fb->c0_symbolic || fa->n != fb->n || !fa->n)
    return KL_BG_OTHER;
  int64_t scale = INT64_MAX;
  for (uint8_t i = 0; i < fa->n; i++) {
    const struct kl_affine_term *ta = &fa->t[i], *tb = &fb->t[i];
    if (ta->symbolic || tb->symbolic || ta->atom != tb->atom || ta->k != tb->k) return KL_BG_OTHER;
    int64_t k = ta->k < 0 ? -ta->k : ta->k;
    if (k < scale) scale = k;
  }
  int64_t d = fa->c0 - fb->c0;
  if (d < 0) d = -d;
  return scale >= 2 && d < scale && fa->c0 / scale == fb->c0 / scale ? KL_BG_BLOCK : KL_BG_OTHER;
}

/* The index of subscript n (`i` of `xr[i]`), or a null node. */
static TSNode kl_bg_subscript(TSNode n) {
  if (!kl_node_is_kind(n, KL_KIND_SUBSCRIPT_EXPRESSION)) return (TSNode){{0}, NULL, NULL};
  TSNode idx = kl_node_field(n, "indices");
  if (kl_node_null(idx)) return kl_node_field(n, "index");
  return ts_node_named_child_count(idx) > 0 ? ts_node_named_child(idx, 0) : idx;
}

static void kl_bg_check(struct kl_rule_ctx *ctx) {
  struct kl_bg_acc *xs;
  size_t nx = kl_bg_accesses(ctx, &xs);
  bool *flagged = kl_arena_alloc(ctx->arena, nx + 1);
  struct kl_rules_record *recs = kl_arena_alloc(ctx->arena, (nx + 1) * sizeof *recs);
  for (size_t i = 0; i < nx; i++) {
    flagged[i] = kl_bg_flagged(ctx, xs, i).why != KL_BG_NO;
    recs[i] = (struct kl_rules_record){xs[i].node, xs[i].inst, xs[i].owner, xs[i].ninsts};
  }
  struct kl_rules_group *groups;
  size_t ng = kl_rules_group_records(ctx, recs, nx, flagged, &groups);
  struct kl_bg_verdict *vs = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *vs);
  for (size_t gi = 0; gi < ng; gi++) vs[gi] = kl_bg_flagged(ctx, xs, groups[gi].first);
  /* into[g]: the earlier group whose finding g joins as a related location (the same defect),
   * or g itself; how[g] says why. */
  size_t *into = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *into);
  enum kl_bg_same *how = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *how);
  for (size_t gi = 0; gi < ng; gi++) {
    into[gi] = gi;
    how[gi] = KL_BG_OTHER;
    for (size_t h = 0; h < gi && into[gi] == gi; h++) {
      if (into[h] != h) continue;
      enum kl_bg_same w = kl_bg_same(ctx, xs, &groups[h], &vs[h], &groups[gi], &vs[gi]);
      if (w != KL_BG_OTHER) into[gi] = h, how[gi] = w;
    }
  }
  for (size_t gi = 0; gi < ng; gi++) {
    if (into[gi] != gi) continue;
    const struct kl_bg_acc *x = &xs[groups[gi].first];
    const char *where = groups[gi].where;
    struct kl_span sp = groups[gi].span;
    /* The lines of the accesses that are this same defect, for the message. */
    const char **lines = kl_arena_alloc(ctx->arena, (ng + 1) * sizeof *lines);
    size_t nlines = 0;
    for (size_t k = gi + 1; k < ng; k++)
      if (into[k] == gi) lines[nlines++] = kl_arena_printf(ctx->arena, "%u", groups[k].span.line);
    const char *same = nlines ? kl_arena_printf(ctx->arena,
                                                "; the access%s on line%s %s, through the "
                                                "same unguarded index, %s the same defect",
                                                nlines > 1 ? "es" : "", nlines > 1 ? "s" : "",
                                                kl_rules_list(ctx->arena, lines, nlines, 8),
                                                nlines > 1 ? "are" : "is")
                              : "";
    const struct kl_bg_verdict *v = &vs[gi];
    struct kl_bg_index ix = kl_bg_index(ctx, groups[gi].first);
    const char *var = ix.var ? ix.var : "the thread position";
    const char *access = kl_dialect_node_text(ctx->arena, ctx->unit, x->node);
    if (strlen(access) > 60) access = x->buffer && x->buffer->name ? x->buffer->name : "buffer";
    where = kl_arena_printf(ctx->arena, "%s%s", where, same);
    struct kl_diag *d;
    const char *cmp = kl_node_null(v->ev) ? "" : kl_dialect_node_text(ctx->arena, ctx->unit, v->ev);
    if (v->why == KL_BG_PAST) {
      const char *idx = kl_dialect_node_text(ctx->arena, ctx->unit, v->index);
      /* The index value's node may be the statement that makes it (a loop's counter): the
       * subscript's own text then says it. */
      TSNode sub = kl_bg_subscript(x->node);
      const char *ty = kl_node_null(v->index) ? "" : ts_node_type(v->index);
      if ((strlen(idx) > 60 || strstr(ty, "statement") || strstr(ty, "declaration")) &&
          !kl_node_null(sub))
        idx = kl_dialect_node_text(ctx->arena, ctx->unit, sub);
      if (strlen(idx) > 60) idx = "its index";
      if (strlen(cmp) > 60) cmp = "the bound check";
      /* What takes it past: a constant, or a part of the thread's (its place in a tile, which
       * the row's last tile can pass) or of the threadgroup's (its width). */
      const char *name;
      TSNode add = kl_facts_past_added(ctx->facts, groups[gi].first, &name);
      const char *added = "the constant added";
      if (!kl_node_null(add) || name) {
        const char *at = name ? name : kl_dialect_node_text(ctx->arena, ctx->unit, add);
        added = strlen(at) > 40 ? "what is added"
                                : kl_arena_printf(ctx->arena, "the `%s` added", at);
      }
      TSNode row = kl_facts_past_row(ctx->facts, groups[gi].first);
      if (!kl_node_null(row)) {
        const char *rc = kl_dialect_node_text(ctx->arena, ctx->unit, row);
        if (strlen(rc) > 60) rc = "a comparison with the row's length";
        d = kl_rules_report_span(
            ctx, sp,
            "`%s` is indexed by `%s`, which `%s` on line %u keeps below a constant, not below "
            "its row's length: the kernel checks `%s` on line %u, so a row can be shorter and "
            "the index can pass its last element; bound it by the row's length too%s",
            access, idx, cmp, kl_rules_line(ctx, ts_node_start_byte(v->ev)), rc,
            kl_rules_line(ctx, ts_node_start_byte(row)), where);
        kl_rules_relate(ctx, d, v->ev, "the constant bound of the walk");
        kl_rules_relate(ctx, d, row, "the comparison with the row's length");
      } else {
        bool rounded = kl_facts_past_rounded(ctx->facts, groups[gi].first);
        d = kl_rules_report_span(
            ctx, sp,
            "`%s` is indexed by `%s`, which can reach the end of its row: `%s` on line %u keeps "
            "only a part of the index in range%s, and %s takes it past the row's "
            "last element on this path; clamp the index or check it too%s",
            access, idx, cmp, kl_rules_line(ctx, ts_node_start_byte(v->ev)),
            rounded ? " (a count of tiles rounded up past the row)" : "", added, where);
        kl_rules_relate(ctx, d, v->ev, "the bound check the index passes");
      }
    } else if (v->evidence && !kl_node_null(v->ev)) {
      if (strlen(cmp) > 60) cmp = var;
      bool clamp = !ix.evidence || ix.clamp;
      d = kl_rules_report_span(
          ctx, sp,
          "`%s` is indexed by `%s` with no bound check on this path, but the kernel %s "
          "`%s` on line %u, so the grid can run past the data; guard this access too%s",
          access, var, clamp ? "clamps it with" : "checks", cmp,
          kl_rules_line(ctx, ts_node_start_byte(v->ev)), where);
      kl_rules_relate(ctx, d, v->ev,
                      clamp ? "the clamp that does not cover the access"
                            : "the bound check that does not cover the access");
    } else if (v->host) {
      d = kl_bg_report_host(ctx, x, sp, v->host, access, var, where, ix.dims);
    } else {
      d = kl_rules_report_span(
          ctx, sp,
          "`%s` is indexed by `%s` with no bound check, and the grid is rounded up "
          "past the data (assume-rounded-grid); add `if (%s >= n) return;` or guard "
          "the access%s",
          access, var, var, where);
    }
    kl_rules_relate_call_at(ctx, d, x->call);
    for (size_t k = gi + 1; k < ng; k++) {
      if (into[k] != gi) continue;
      const char *what = how[k] == KL_BG_FIELD   ? "another field of the same element"
                         : how[k] == KL_BG_BLOCK ? "another element of the block each thread owns"
                                                 : "another access of the same row";
      const char *msg = kl_arena_printf(ctx->arena, "%s, %s", what,
                                        "through the same unguarded index: the same defect");
      kl_diag_relate(ctx->out, d, groups[k].span, msg);
    }
  }
}

const struct kl_rule kl_rule_bounds_guard = {
    .id = "bounds-guard",
    .default_severity = KL_SEV_ERROR,
    .implemented = true,
    .summary = "A device-memory access indexed by thread position with no bounds guard, on a grid "
               "that may exceed the data",
    .what = "Reports each device-memory load or store whose index derives from a thread "
            "coordinate (`thread_position_in_grid`, and also the threadgroup position and the "
            "lane or SIMD-group index, as in `row = 2 * tgid.x + sgid`) and that no "
            "comparison dominates on every path (`if (gid >= n) return;`, `if (gid < n) { ... "
            "}`, `gid < n ? x[gid] : 0`, `min(gid, n - 1)`, the lanes of a vector test, "
            "`if (any(gid >= uint2(w, h))) return;` or `if (all(gid < uint3(w, h, d))) { ... }` "
            "(the sizes written in the test, or one scalar for every lane), a loop condition "
            "`i < n`, a bound "
            "that leaves room for the rest of the index (`x[i0 + lane]` in `for (i0 = 0; i0 + "
            "32 <= n; i0 += 32)`, lane at most 31: whole tiles), or the "
            "sign test of an offset stored as `valid ? off : -1`). It "
            "reports only when there is evidence that the grid may be larger than the data: "
            "(a) a host dispatch in the same run rounds the grid up: an MLX `grid=` or "
            "PyTorch `threads=` written `(n + tg - 1) // tg * tg`, `math.ceil(n / tg) * tg`, "
            "`-(-n // tg) * tg` or their `mx.add`/`mx.divide`/`mx.multiply` spellings, a "
            "metal-cpp or Objective-C `dispatchThreads` with such a size, or a "
            "`dispatchThreadgroups` with a ceiling-divided count (`(n + 255) / 256`), tied to "
            "the kernel by the function name its pipeline was made from; (b) the kernel itself "
            "compares the same value against a bound somewhere else, so it knows the grid can "
            "pass the data, yet this access is outside the comparison's reach. The same value "
            "means the comparison's thread coordinates all appear in the index scaled by one "
            "factor (`row < n` is evidence for `w[row * ld + col]`); a comparison of a value "
            "loaded from memory, of a larger offset that only contains the index (`tg * 256 + "
            "lid < n` says nothing of `out[tg]`), of another coordinate, or of a token a loop "
            "counter moves (`i2 + lid < n_t`) for an index that does not move with it is not, "
            "nor one that only picks between two formulas (`h < n ? a : b`) or between two "
            "stores of the same locations (a pad kernel's `if (r < n_src) { copy; return; } "
            "zero-fill`), nor one in another branch of an `#if` chain than the access (`#if "
            "ALIGNED` reads unchecked, its `#else` checks: no build has both); one that masks "
            "what fails it with an infinity (`k < n ? 0.0f : -INFINITY`, `FLT_MAX`) is, and so "
            "is a clamp of the value itself below a size (`min(gid, n - 1)` for an unclamped "
            "`x[gid]`; not the end of a chunk, `min(start + chunk, n)`, nor a remaining count); "
            "or (c) "
            "`.lintrc` says so with "
            "`assume-rounded-grid = true` (or `--assume-rounded-grid`). A rounded grid, (a) or "
            "(c), adds whole threadgroups, in which a SIMD lane's index stays below 32: an "
            "index whose unchecked part is a lane's index alone (`r[lane]` after `if (row >= "
            "rows) return;`) is no access it takes past the data. With no evidence it "
            "stays silent, because an exact grid (as MLX dispatches by default) needs no "
            "guard. A rounding is exact where a divisibility test holds (`(n + 63) // 64 * 64` "
            "under `if n % 64 == 0:`, or a factory variant built only for `rows % 8 == 0`): it "
            "is no evidence (a), and when every launch of the kernel is exact in the access's "
            "dimensions the kernel's comparison elsewhere is no evidence (b) either. What "
            "every launch seen keeps in bounds is not reported, whatever the evidence: an "
            "index a grid counted from the kernel's own argument keeps below it "
            "(`row_scale[r0 * 4]` under "
            "`(nrows + 3) / 4` threadgroups whose `nrows` the host binds with `setBytes` at "
            "that argument's buffer index, on the encoder that dispatches, and neither writes "
            "nor hands alone to a call made for its effect; `r0 * 4 + 1` and `r0 * 8` are "
            "not kept below it), and a thread "
            "part within the stride of a guarded row (`x[row * 256 + pos.x]` after `if (row "
            ">= rows) return;`, threadgroups 256 x 2 wide; the linear thread index, up to 511 "
            "there, and `pos.x + 1` are not). Accesses "
            "in a same-file helper or static member (`kernel_t::run(...)`, "
            "through the alias) are analysed at each call, with the thread coordinates and "
            "thread-derived values the call passes it (`_impl(..., tgpig, tiisg, sgitg)`, "
            "`store_rows(out, sums, first_row, ne01)`), and the call is a related location; a "
            "helper's comparison of such a value is evidence (b) in the caller too. Row "
            "pointers kept in an array (`ax[row] = src0 + (r0 + row) * nb01`) carry their rows "
            "into `ax[row][i]`, an element of the thread's own array checked and then read "
            "again as the index (`cols[i] < n ? x[cols[i]] : 0`) is checked, a helper's "
            "value that joins early returns (`if (blocked) return a; return b;`) is each of "
            "them, and a vector of indices built once (`int4 idx = p * 4 + "
            "int4(0, 1, 2, 3)`) carries p's coordinates into each lane read back (`idx[1]`, "
            "`idx.z`). Reported at the access; with evidence (a) the message names the "
            "dispatch, and each rounding call in the same file is a related location. One "
            "unguarded index is one finding: the other fields read from the same struct element "
            "(`x[i].d` after `x[i].qs[j]`) and the other elements of the block a thread owns "
            "(`out[4 * gid + 1]` after `out[4 * gid]`) are related locations of the first access, "
            "which the message names as the same defect (reads and writes apart). Whatever the "
            "grid, an index a constant past a part that its check keeps in range, in a row of the "
            "check's length, is reported when the value ranges cannot rule it out on that path: "
            "`xr[c + 1]` in `for (c = lid; c < cols; c += tg)` with `xr = x + row * cols` "
            "reaches `xr[cols]`, one past the row; `xr[min(c + 1, cols - 1)]`, a check of "
            "`c + 1 < cols`, or a bound that leaves room (`c < cols - 1`) keeps it in range, "
            "and the check is a related location. (`offsets[i + 1]` under `i < n`, with no row "
            "of n, may read an array of n + 1: not reported.) The same holds of a thread's "
            "place in a tile added to the tile's start: `xr[i0 + lid]` in `for (i0 = 0; i0 < "
            "cols; i0 += tg)` reaches past the row in its last, partial tile (with a threadgroup "
            "wider than the row, in its only tile), when the kernel shows that a row may end "
            "inside a tile, by comparing a value of lid with `cols` elsewhere (`if (i0 + lid >= "
            "cols) break;` in another pass, `for (i = lid; i < cols; i += tg)`); a kernel that "
            "only walks whole tiles (a tiled GEMM's K loop) relies on `cols` being a multiple of "
            "the tile, and is not reported. So is a walk of the thread's position bounded by a "
            "constant in a row of a runtime length: `for (i = lane; i < 64; i += 32) xr[i]`, "
            "`xr = x + row * n`, passes a row shorter than 64 when the kernel itself walks or "
            "checks that position against `n` elsewhere (`for (j = lane; j < n; j += 32)`), "
            "its sign that `n` varies; the walk's bound and that comparison are related "
            "locations. A fixed walk in rows of its own fixed length (`out[row * 64 + d]`) is "
            "not reported, nor one beside a walk of the rest of the row (`for (j = 64 + lane; "
            "j < n; j += 32)`: rows longer than the head). A count of tiles the kernel rounds "
            "up itself is its own evidence: `xr[t * 32 + lane]` in `for (t = 0; t < (n + 31) / "
            "32; t++)` passes the row in the last tile whenever 32 does not divide n (`n / 32` "
            "whole tiles do not).",
    .why = "When the grid is rounded up to a whole number of threadgroups, the threads "
           "past the end of the data still run. Without a guard they read past the buffer "
           "(garbage, or a GPU fault) and, worse, write past it, silently corrupting "
           "whatever the allocator placed next. The bug only shows for sizes that are not "
           "a multiple of the threadgroup size, so it passes most tests.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void relu(device const float* x [[buffer(0)]],\n"
               "                 device float* y [[buffer(1)]],\n"
               "                 constant uint& n [[buffer(2)]],\n"
               "                 uint gid [[thread_position_in_grid]]) {\n"
               "  if (gid < n) y[gid] = max(x[gid], 0.0f);\n"
               "  y[gid] += 1.0f; // outside the guard: runs for gid >= n too\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void relu(device const float* x [[buffer(0)]],\n"
               "                 device float* y [[buffer(1)]],\n"
               "                 constant uint& n [[buffer(2)]],\n"
               "                 uint gid [[thread_position_in_grid]]) {\n"
               "  if (gid >= n) return;\n"
               "  y[gid] = max(x[gid], 0.0f) + 1.0f;\n"
               "}\n",
    .check = kl_bg_check,
};
