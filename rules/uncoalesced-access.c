/* uncoalesced-access: device accesses whose address jumps between adjacent SIMD lanes. Lane
 * strides come from the index algebra (analyzer/flow.h, analyzer/affine.h). */
#include <stdio.h>
#include <string.h>

#include "rules/rules.h"

/* Bytes of one element, or 0 when unknown (a struct, an unbound template parameter), under each
 * of the n binding sets of the access's function (no bindings when n is 0). */
static unsigned kl_ua_elem_size(struct kl_rule_ctx *ctx, const struct kl_flow_access *x,
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

/* The instantiations of one function, looked up once: the lookup allocates, and a function
 * usually makes many accesses. */
struct kl_ua_owner {
  const struct kl_function *fn;
  struct kl_bindings *sets;
  size_t n;
};

struct kl_ua {
  struct kl_ua_owner *owners;
  size_t nowners, cap_owners;
};

static const struct kl_ua_owner *kl_ua_owner(struct kl_rule_ctx *ctx, struct kl_ua *ua,
                                             const struct kl_function *fn) {
  for (size_t i = 0; i < ua->nowners; i++)
    if (ua->owners[i].fn == fn) return &ua->owners[i];
  KL_VEC_PUSH(ctx->arena, ua->owners, ua->nowners, ua->cap_owners);
  struct kl_ua_owner *o = &ua->owners[ua->nowners++];
  o->fn = fn;
  o->sets = NULL;
  o->n = kl_types_instances(ctx->arena, ctx->model, fn, &o->sets);
  return o;
}

/* Whether access x is reported: its lane stride is a runtime value, or more than 16 bytes.
 * *stride and *size receive the stride in elements and the element size (0: unknown). */
static bool kl_ua_flagged(struct kl_rule_ctx *ctx, struct kl_ua *ua, const struct kl_flow_access *x,
                          int64_t *stride, unsigned *size) {
  *stride = 0;
  *size = 0;
  if (!x->lane_known || (!x->lane_symbolic && x->lane_stride == 0)) return false;
  if (x->lane_symbolic) return true;
  *stride = x->lane_stride < 0 ? -x->lane_stride : x->lane_stride;
  const struct kl_ua_owner *o = x->elem_type && x->owner ? kl_ua_owner(ctx, ua, x->owner) : NULL;
  *size = kl_ua_elem_size(ctx, x, o ? o->sets : NULL, o ? o->n : 0);
  /* Unknown element types are assumed to be at least one byte. */
  return *stride * (int64_t)(*size ? *size : 1) > 16;
}

static void kl_ua_check(struct kl_rule_ctx *ctx) {
  struct kl_ua ua = {0};
  const struct kl_flow *fl = ctx->flow;
  bool *flagged = kl_arena_alloc(ctx->arena, fl->naccesses + 1);
  int64_t stride;
  unsigned size;
  for (size_t i = 0; i < fl->naccesses; i++)
    flagged[i] = kl_ua_flagged(ctx, &ua, &fl->accesses[i], &stride, &size);
  struct kl_rules_group *groups;
  size_t ng = kl_rules_group_accesses(ctx, flagged, &groups);
  for (size_t gi = 0; gi < ng; gi++) {
    const struct kl_flow_access *x = &fl->accesses[groups[gi].first];
    const char *where = groups[gi].where;
    struct kl_span sp = groups[gi].span;
    kl_ua_flagged(ctx, &ua, x, &stride, &size);
    const char *buf = x->buffer && x->buffer->name ? x->buffer->name : "buffer";
    struct kl_diag *d;
    if (x->lane_symbolic) {
      d = kl_rules_report_span(ctx, sp,
                               "adjacent SIMD lanes %s `%s` %s apart, so one SIMD group "
                               "touches up to 32 cache lines per access; make the thread index "
                               "the fastest-varying (stride-1) part of the index, or stage "
                               "through threadgroup memory%s",
                               x->store ? "write" : "read", buf,
                               x->lane_compile_time ? "a product of compile-time sizes"
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
    kl_rules_relate_call(ctx, d, x);
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
            "constant with stride times element size above 16 bytes. A stride of 0 (every "
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
            "`b + k < n`): only the lane whose chunk straddles n gets there. Names listed in the `.lintrc` key `unit-strides` (ggml's "
            "`nb0`) are one element's size in bytes. Threadgroup and constant "
            "memory are not reported. An index the algebra cannot express (`%`, "
            "data-dependent values) is never reported, and neither is a stride that is one "
            "compile-time value kernlint cannot see (a template parameter no instantiation "
            "binds, a macro of a header it cannot read, an MLX `template=` value the host "
            "computes): such a value is mostly a small per-lane chunk (taps, heads, items per "
            "thread). A product of two of them (`n_per_t * D`, a row per lane) is reported. "
            "Reported at the access.",
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
