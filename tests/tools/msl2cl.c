/* msl2cl: translate the MSL compute subset of the proof fixtures to OpenCL C, so that Oclgrind
 * can run a fixture kernel (tests/proofs.test.sh). Prints OpenCL C on stdout.
 *
 * Usage: msl2cl [--trace SITES] FILE.metal
 *
 * The text is spliced, not regenerated: every edit replaces a byte range found in the tree of
 * the dialect layer, and no edit adds a newline, so a line of the output is the same line of the
 * input. Oclgrind's "At line N" therefore names the fixture's own line. (When the file has no
 * #include line and uses half, the fp16 pragma goes on a new first line: lines shift by one.)
 *
 * The subset:
 *   kernel void f(...), [[kernel]] void f(...)    -> __kernel void f(...)
 *   device / threadgroup / constant / thread      -> __global / __local / __constant / (private)
 *   constant T& n [[buffer(k)]] (any T& param)    -> T n, passed by value
 *   [[attributes]]                                -> dropped
 *   thread-coordinate parameters                  -> dropped, declared at the top of the body:
 *     thread_position_in_grid          get_global_id(d)
 *     thread_position_in_threadgroup   get_local_id(d)
 *     threadgroup_position_in_grid     get_group_id(d)
 *     threads_per_threadgroup          get_local_size(d)  (also dispatch_threads_per_threadgroup)
 *     threadgroups_per_grid            get_num_groups(d)
 *     threads_per_grid                 get_global_size(d)
 *     (uint2/uint3 forms become vector literals of d = 0, 1, 2)
 *     thread_index_in_threadgroup      the linear local id, x fastest
 *     thread_index_in_simdgroup        linear local id % 32
 *     simdgroup_index_in_threadgroup   linear local id / 32
 *     threads_per_simdgroup, thread_execution_width   32
 *     simdgroups_per_threadgroup       ceil(local size / 32)
 *   The SIMD width is fixed at 32, Apple's width on every Apple GPU.
 *   threadgroup_barrier(mem_flags::...)           -> barrier(CLK_LOCAL_MEM_FENCE | ...)
 *   simdgroup_barrier(...)                        -> barrier(...): Oclgrind has no sub-groups, so
 *     a SIMD barrier becomes a work-group barrier. That is exact when every SIMD group of the
 *     threadgroup reaches it together (the fixtures' references); when only some lanes do, the
 *     work-group barrier diverges as well, which is the defect the proof looks for.
 *   metal:: fast:: precise:: prefixes             -> stripped
 *   static_cast<T>(x), T(x) for built-in T        -> ((T)(x))
 *   as_type<T>(x)                                 -> as_T(x)
 *   #include and `using namespace metal;`        -> dropped; the first #include line becomes
 *     `#pragma OPENCL EXTENSION cl_khr_fp16 : enable` when the file uses half.
 * Refused (exit 2): simd_* and quad_* functions, templates, references outside kernel
 * parameters, imageblock/ray/object memory, macro-expanded files.
 *
 * --trace SITES instruments every subscript of a device buffer parameter of a kernel: the index
 * of the first execution of each access site by each thread is stored in an extra last kernel
 * argument `__global uint* kl_trace` (slot = site * total threads + thread, threads numbered
 * threadgroup by threadgroup with the local id linear and x fastest, so 32 consecutive slots are
 * one SIMD group). Slots must start at 0xffffffff. SITES receives one line per site:
 * "site line buffer element_bytes". */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/source.h"
#include "grammar/dialect.h"

#define SIMD_WIDTH 32
#define LINEAR_LID                                                                                 \
  "(uint)((get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0) + "          \
  "get_local_id(0))"

struct edit {
  uint32_t start, end;
  const char *text;
  size_t seq;
};

struct buffer_param {
  const char *name;
  unsigned elem_bytes;
};

struct tr {
  struct kl_arena *a;
  const struct kl_unit *u;
  const char *path;
  struct edit *edits;
  size_t nedits, cap_edits;
  bool *kw_done; /* per side-table keyword: already translated by a parameter rule */
  bool uses_half;
  bool failed;
  FILE *sites; /* --trace: site table, or NULL */
  unsigned nsites;
  bool helper_done;
  struct buffer_param *bufs; /* device buffers of the kernel being translated */
  size_t nbufs, cap_bufs;
};

static void fail(struct tr *t, TSNode n, const char *what) {
  fprintf(stderr, "msl2cl: %s:%u: unsupported: %s\n", t->path, ts_node_start_point(n).row + 1,
          what);
  t->failed = true;
}

static struct edit *add_edit(struct tr *t, uint32_t start, uint32_t end, const char *text) {
  KL_VEC_PUSH(t->a, t->edits, t->nedits, t->cap_edits);
  struct edit *e = &t->edits[t->nedits];
  *e = (struct edit){start, end, text, t->nedits};
  t->nedits++;
  return e;
}

static char *text_of(struct tr *t, TSNode n) {
  return kl_dialect_node_text(t->a, t->u, n);
}

static bool is_type(TSNode n, const char *type) {
  return !strcmp(ts_node_type(n), type);
}

static TSNode field(TSNode n, const char *name) {
  return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name));
}

/* Bytes of one element of a built-in scalar or vector type (3-vectors are padded to 4); 0 when
 * the name is not one we know. */
static unsigned type_bytes(const char *name) {
  static const struct {
    const char *scalar;
    unsigned bytes;
  } scalars[] = {{"char", 1},   {"uchar", 1}, {"bool", 1},   {"short", 2},
                 {"ushort", 2}, {"half", 2},  {"bfloat", 2}, {"int", 4},
                 {"uint", 4},   {"float", 4}, {"long", 8},   {"ulong", 8}};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
    size_t l = strlen(scalars[i].scalar);
    if (strncmp(name, scalars[i].scalar, l)) continue;
    const char *rest = name + l;
    if (!*rest) return scalars[i].bytes;
    if ((rest[0] == '2' || rest[0] == '3' || rest[0] == '4') && !rest[1])
      return scalars[i].bytes * (rest[0] == '3' ? 4u : (unsigned)(rest[0] - '0'));
  }
  return 0;
}

static bool is_half_type(const char *name) {
  return !strncmp(name, "half", 4) && type_bytes(name);
}

/* The OpenCL expression of a thread coordinate, or NULL when `attr` is not one. */
static const char *coord_expr(struct tr *t, const char *attr, const char *type) {
  static const struct {
    const char *attr, *fn;
  } dims[] = {
      {"thread_position_in_grid", "get_global_id"},
      {"thread_position_in_threadgroup", "get_local_id"},
      {"threadgroup_position_in_grid", "get_group_id"},
      {"threads_per_threadgroup", "get_local_size"},
      {"dispatch_threads_per_threadgroup", "get_local_size"},
      {"threadgroups_per_grid", "get_num_groups"},
      {"threads_per_grid", "get_global_size"},
  };
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    if (strcmp(attr, dims[i].attr)) continue;
    size_t l = strlen(type);
    unsigned lanes =
        l && type[l - 1] >= '2' && type[l - 1] <= '3' ? (unsigned)(type[l - 1] - '0') : 1;
    if (lanes == 1) return kl_arena_printf(t->a, "(%s)%s(0)", type, dims[i].fn);
    char *scalar = kl_arena_strndup(t->a, type, l - 1);
    if (lanes == 2)
      return kl_arena_printf(t->a, "(%s)((%s)%s(0), (%s)%s(1))", type, scalar, dims[i].fn, scalar,
                             dims[i].fn);
    return kl_arena_printf(t->a, "(%s)((%s)%s(0), (%s)%s(1), (%s)%s(2))", type, scalar, dims[i].fn,
                           scalar, dims[i].fn, scalar, dims[i].fn);
  }
  if (!strcmp(attr, "thread_index_in_threadgroup"))
    return kl_arena_printf(t->a, "(%s)%s", type, LINEAR_LID);
  if (!strcmp(attr, "thread_index_in_simdgroup"))
    return kl_arena_printf(t->a, "(%s)(%s %% %d)", type, LINEAR_LID, SIMD_WIDTH);
  if (!strcmp(attr, "simdgroup_index_in_threadgroup"))
    return kl_arena_printf(t->a, "(%s)(%s / %d)", type, LINEAR_LID, SIMD_WIDTH);
  if (!strcmp(attr, "threads_per_simdgroup") || !strcmp(attr, "thread_execution_width"))
    return kl_arena_printf(t->a, "(%s)%d", type, SIMD_WIDTH);
  if (!strcmp(attr, "simdgroups_per_threadgroup"))
    return kl_arena_printf(t->a,
                           "(%s)((get_local_size(0) * get_local_size(1) * get_local_size(2) + "
                           "%d) / %d)",
                           type, SIMD_WIDTH - 1, SIMD_WIDTH);
  return NULL;
}

/* First attribute_declaration at or under n (parameters carry theirs in the declarator). */
static TSNode find_attribute(TSNode n) {
  if (is_type(n, "attribute_declaration")) return n;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode r = find_attribute(ts_node_named_child(n, i));
    if (!ts_node_is_null(r)) return r;
  }
  return (TSNode){0};
}

static TSNode find_type(TSNode n, const char *type) {
  if (is_type(n, type)) return n;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode r = find_type(ts_node_named_child(n, i), type);
    if (!ts_node_is_null(r)) return r;
  }
  return (TSNode){0};
}

/* The declared name: the identifier at the bottom of a declarator chain. */
static TSNode declarator_name(TSNode d) {
  while (!ts_node_is_null(d) && !is_type(d, "identifier")) {
    TSNode next = field(d, "declarator");
    if (ts_node_is_null(next)) next = ts_node_named_child(d, 0);
    d = next;
  }
  return d;
}

static const char *attribute_name(struct tr *t, TSNode attr_decl) {
  TSNode attr = ts_node_named_child(attr_decl, 0);
  TSNode name = ts_node_is_null(attr) ? attr : field(attr, "name");
  return ts_node_is_null(name) ? "" : text_of(t, name);
}

/* Blanked keywords are spaces, so the node they qualify starts after them: a declaration's
 * keywords lie between the end of its previous sibling and its own end. */
static const struct kl_keyword *keywords_of(struct tr *t, TSNode n, size_t *k) {
  TSNode prev = ts_node_prev_sibling(n);
  uint32_t from = ts_node_is_null(prev) ? 0 : ts_node_end_byte(prev);
  return kl_dialect_keywords_in(t->u, from, ts_node_end_byte(n), k);
}

/* Keywords of the side table for n, marked as handled with the given translation. */
static void keywords_as(struct tr *t, TSNode n, const char *text) {
  size_t k;
  const struct kl_keyword *kw = keywords_of(t, n, &k);
  for (size_t i = 0; i < k; i++) {
    size_t idx = (size_t)(kw + i - t->u->kws);
    if (t->kw_done[idx]) continue;
    t->kw_done[idx] = true;
    add_edit(t, kw[i].off, kw[i].off + kw[i].len, text);
  }
}

/* Keywords inside n that vanish with it (a dropped parameter). */
static void keywords_skip(struct tr *t, TSNode n) {
  size_t k;
  const struct kl_keyword *kw = keywords_of(t, n, &k);
  for (size_t i = 0; i < k; i++) t->kw_done[(size_t)(kw + i - t->u->kws)] = true;
}

static bool has_keyword(struct tr *t, TSNode n, enum kl_kw kind) {
  size_t k;
  const struct kl_keyword *kw = keywords_of(t, n, &k);
  for (size_t i = 0; i < k; i++)
    if (kw[i].kind == kind) return true;
  return false;
}

static void walk(struct tr *t, TSNode n);

static void walk_children(struct tr *t, TSNode n) {
  uint32_t k = ts_node_child_count(n);
  for (uint32_t i = 0; i < k; i++) walk(t, ts_node_child(n, i));
}

static const char *barrier_text(struct tr *t, TSNode call) {
  const char *args = text_of(t, field(call, "arguments"));
  bool local = strstr(args, "mem_threadgroup") != NULL;
  bool global = strstr(args, "mem_device") != NULL || strstr(args, "mem_texture") != NULL;
  /* mem_none still synchronises execution; OpenCL spells that with a fence flag. */
  if (!local && !global) local = true;
  return kl_arena_printf(t->a, "barrier(%s%s%s)", local ? "CLK_LOCAL_MEM_FENCE" : "",
                         local && global ? " | " : "", global ? "CLK_GLOBAL_MEM_FENCE" : "");
}

/* The callee's name without metal::, fast:: or precise:: scopes. */
static const char *callee_name(struct tr *t, TSNode fn) {
  while (is_type(fn, "qualified_identifier")) fn = field(fn, "name");
  if (is_type(fn, "identifier") || is_type(fn, "primitive_type") || is_type(fn, "type_identifier"))
    return text_of(t, fn);
  return "";
}

static void walk_call(struct tr *t, TSNode n) {
  TSNode fn = field(n, "function");
  TSNode args = field(n, "arguments");
  if (ts_node_is_null(fn) || ts_node_is_null(args)) {
    walk_children(t, n);
    return;
  }
  const char *name = callee_name(t, fn);
  if (!strcmp(name, "threadgroup_barrier") || !strcmp(name, "simdgroup_barrier")) {
    add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n), barrier_text(t, n));
    return;
  }
  if (!strncmp(name, "simd_", 5) || !strncmp(name, "quad_", 5)) {
    fail(t, n, kl_arena_printf(t->a, "%s (Oclgrind has no sub-groups)", name));
    return;
  }
  if (is_type(fn, "template_function")) {
    const char *tname = text_of(t, field(fn, "name"));
    TSNode targs = field(fn, "arguments");
    TSNode ty = ts_node_named_child(targs, 0);
    if (ts_node_is_null(ty) || ts_node_named_child_count(targs) != 1) {
      fail(t, n, "template call");
      return;
    }
    const char *tyname = text_of(t, ty);
    if (!strcmp(tname, "static_cast")) {
      add_edit(t, ts_node_start_byte(n), ts_node_start_byte(args),
               kl_arena_printf(t->a, "((%s)", tyname));
      walk(t, args);
      add_edit(t, ts_node_end_byte(n), ts_node_end_byte(n), ")");
      return;
    }
    if (!strcmp(tname, "as_type")) {
      add_edit(t, ts_node_start_byte(n), ts_node_start_byte(args),
               kl_arena_printf(t->a, "as_%s", tyname));
      walk(t, args);
      return;
    }
    fail(t, n, kl_arena_printf(t->a, "template call %s", tname));
    return;
  }
  if (type_bytes(name)) {
    /* A functional cast or vector constructor: OpenCL writes (T)(x) and (float4)(a, b, c, d). */
    if (is_half_type(name)) t->uses_half = true;
    add_edit(t, ts_node_start_byte(n), ts_node_start_byte(args),
             kl_arena_printf(t->a, "((%s)", name));
    walk(t, args);
    add_edit(t, ts_node_end_byte(n), ts_node_end_byte(n), ")");
    return;
  }
  walk_children(t, n);
}

static const struct buffer_param *traced_buffer(struct tr *t, TSNode subscript) {
  if (!t->sites) return NULL;
  TSNode arg = field(subscript, "argument");
  if (ts_node_is_null(arg) || !is_type(arg, "identifier")) return NULL;
  const char *name = text_of(t, arg);
  for (size_t i = 0; i < t->nbufs; i++)
    if (!strcmp(t->bufs[i].name, name)) return &t->bufs[i];
  return NULL;
}

static void walk_subscript(struct tr *t, TSNode n) {
  const struct buffer_param *b = traced_buffer(t, n);
  TSNode idx = field(n, "indices");
  if (!ts_node_is_null(idx) && ts_node_named_child_count(idx) == 1)
    idx = ts_node_named_child(idx, 0);
  else if (ts_node_is_null(idx))
    idx = field(n, "index");
  if (!b || ts_node_is_null(idx)) {
    walk_children(t, n);
    return;
  }
  unsigned site = t->nsites++;
  fprintf(t->sites, "%u %u %s %u\n", site, ts_node_start_point(n).row + 1, b->name, b->elem_bytes);
  /* Opened before and closed after the index's own edits, so that they nest inside. */
  add_edit(t, ts_node_start_byte(idx), ts_node_start_byte(idx),
           kl_arena_printf(t->a, "kl_trace_rec(kl_trace, %uu, (", site));
  walk_children(t, n);
  add_edit(t, ts_node_end_byte(idx), ts_node_end_byte(idx), "))");
}

static const char *trace_helper =
    "uint kl_trace_rec(__global uint* t, uint site, uint idx) { "
    "size_t lx = get_local_size(0), ly = get_local_size(1), lz = get_local_size(2); "
    "size_t lin = (get_local_id(2) * ly + get_local_id(1)) * lx + get_local_id(0); "
    "size_t grp = (get_group_id(2) * get_num_groups(1) + get_group_id(1)) * get_num_groups(0) "
    "+ get_group_id(0); "
    "size_t all = get_global_size(0) * get_global_size(1) * get_global_size(2); "
    "size_t slot = site * all + grp * lx * ly * lz + lin; "
    "if (t[slot] == 0xffffffffu) t[slot] = idx; return idx; } ";

/* A kernel's parameter list: coordinates become body declarations, references become values,
 * device buffers are remembered for --trace. */
static void kernel_params(struct tr *t, TSNode params, TSNode body) {
  enum { DROP, KEEP, KEEP_DONE };
  uint32_t k = ts_node_child_count(params);
  int *keep = kl_arena_alloc(t->a, k * sizeof *keep);
  char *decls = "";
  for (uint32_t i = 0; i < k; i++) {
    TSNode p = ts_node_child(params, i);
    if (!is_type(p, "parameter_declaration")) continue;
    keep[i] = KEEP;
    TSNode attr = find_attribute(p);
    TSNode type = field(p, "type");
    TSNode decl = field(p, "declarator");
    TSNode name = declarator_name(decl);
    if (ts_node_is_null(type) || ts_node_is_null(name)) {
      fail(t, p, "parameter form");
      continue;
    }
    const char *tyname = text_of(t, type);
    if (is_half_type(tyname)) t->uses_half = true;
    const char *expr =
        ts_node_is_null(attr) ? NULL : coord_expr(t, attribute_name(t, attr), tyname);
    if (expr) {
      keep[i] = DROP;
      keywords_skip(t, p);
      decls = kl_arena_printf(t->a, "%s %s %s = %s;", decls, tyname, text_of(t, name), expr);
      continue;
    }
    TSNode ref = find_type(decl, "reference_declarator");
    if (!ts_node_is_null(ref)) {
      /* OpenCL C has no references; a kernel argument by value carries the same value. */
      keep[i] = KEEP_DONE;
      add_edit(t, ts_node_start_byte(ref), ts_node_start_byte(ref) + 1, "");
      keywords_as(t, p, "");
      if (!ts_node_is_null(attr)) add_edit(t, ts_node_start_byte(attr), ts_node_end_byte(attr), "");
      continue;
    }
    if (t->sites && has_keyword(t, p, KL_KW_DEVICE) &&
        !ts_node_is_null(find_type(decl, "pointer_declarator"))) {
      unsigned bytes = type_bytes(tyname);
      if (!bytes) {
        fail(t, p, kl_arena_printf(t->a, "element type %s of a traced buffer", tyname));
        continue;
      }
      KL_VEC_PUSH(t->a, t->bufs, t->nbufs, t->cap_bufs);
      t->bufs[t->nbufs++] = (struct buffer_param){text_of(t, name), bytes};
    }
  }
  /* A comma survives when the parameter after it survives and one before it did: this keeps
   * the list well formed without touching the newlines between parameters. */
  bool seen_kept = false;
  int pending_comma = -1;
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(params, i);
    if (!strcmp(ts_node_type(c), ",")) {
      pending_comma = (int)i;
      continue;
    }
    if (!is_type(c, "parameter_declaration")) continue;
    if (keep[i] == DROP) {
      add_edit(t, ts_node_start_byte(c), ts_node_end_byte(c), "");
      if (pending_comma >= 0) {
        TSNode comma = ts_node_child(params, (uint32_t)pending_comma);
        add_edit(t, ts_node_start_byte(comma), ts_node_end_byte(comma), "");
      }
    } else {
      if (pending_comma >= 0 && !seen_kept) {
        TSNode comma = ts_node_child(params, (uint32_t)pending_comma);
        add_edit(t, ts_node_start_byte(comma), ts_node_end_byte(comma), "");
      }
      seen_kept = true;
      if (keep[i] == KEEP) walk(t, c);
    }
    pending_comma = -1;
  }
  if (t->sites) {
    uint32_t close = ts_node_end_byte(params) - 1;
    add_edit(t, close, close, seen_kept ? ", __global uint* kl_trace" : "__global uint* kl_trace");
  }
  if (*decls) add_edit(t, ts_node_start_byte(body) + 1, ts_node_start_byte(body) + 1, decls);
}

static void walk_function(struct tr *t, TSNode n) {
  TSNode decl = field(n, "declarator");
  TSNode body = field(n, "body");
  bool kernel = false;
  uint32_t first = ts_node_start_byte(n); /* where the definition begins, qualifier included */
  uint32_t k = ts_node_child_count(n);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(n, i);
    if (is_type(c, "attribute_declaration")) {
      bool is_kernel = !strcmp(attribute_name(t, c), "kernel");
      kernel = kernel || is_kernel;
      add_edit(t, ts_node_start_byte(c), ts_node_end_byte(c), is_kernel ? "__kernel" : "");
    }
  }
  if (!ts_node_is_null(decl)) {
    TSNode prev = ts_node_prev_sibling(n);
    size_t nk;
    const struct kl_keyword *kw = kl_dialect_keywords_in(
        t->u, ts_node_is_null(prev) ? 0 : ts_node_end_byte(prev), ts_node_start_byte(decl), &nk);
    for (size_t i = 0; i < nk; i++) {
      if (kw[i].kind != KL_KW_KERNEL) continue;
      kernel = true;
      if (kw[i].off < first) first = kw[i].off;
    }
  }
  TSNode fdecl = ts_node_is_null(decl) ? decl : find_type(decl, "function_declarator");
  TSNode params = ts_node_is_null(fdecl) ? fdecl : field(fdecl, "parameters");
  if (ts_node_is_null(body) || ts_node_is_null(params)) {
    walk_children(t, n);
    return;
  }
  if (!kernel) {
    if (!ts_node_is_null(find_type(params, "reference_declarator")))
      fail(t, params, "reference parameter of a helper function");
    walk_children(t, n);
    return;
  }
  if (t->sites && !t->helper_done) {
    add_edit(t, first, first, trace_helper);
    t->helper_done = true;
  }
  t->nbufs = 0;
  kernel_params(t, params, body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(n, i);
    if (is_type(c, "attribute_declaration")) continue;
    if (ts_node_eq(c, decl)) {
      /* Everything in the declarator but its parameter list, which kernel_params has done. */
      uint32_t dk = ts_node_child_count(fdecl);
      for (uint32_t j = 0; j < dk; j++) {
        TSNode dc = ts_node_child(fdecl, j);
        if (!ts_node_eq(dc, params)) walk(t, dc);
      }
      continue;
    }
    walk(t, c);
  }
  t->nbufs = 0;
}

static void walk(struct tr *t, TSNode n) {
  const char *type = ts_node_type(n);
  if (!strcmp(type, "preproc_include") || !strcmp(type, "using_declaration")) {
    /* Keep the newline a preproc_include owns, so lines stay put. */
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    while (e > s && (t->u->buf[e - 1] == '\n' || t->u->buf[e - 1] == '\r')) e--;
    add_edit(t, s, e, "")->seq = (size_t)-1; /* marked: the first include may get the pragma */
    return;
  }
  if (!strcmp(type, "template_declaration")) {
    fail(t, n, "template");
    return;
  }
  if (!strcmp(type, "function_definition")) {
    walk_function(t, n);
    return;
  }
  if (!strcmp(type, "attribute_declaration")) {
    add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n), "");
    return;
  }
  if (!strcmp(type, "call_expression")) {
    walk_call(t, n);
    return;
  }
  if (!strcmp(type, "subscript_expression")) {
    walk_subscript(t, n);
    return;
  }
  if (!strcmp(type, "qualified_identifier")) {
    TSNode scope = field(n, "scope");
    const char *s = ts_node_is_null(scope) ? "" : text_of(t, scope);
    if (!strcmp(s, "metal") || !strcmp(s, "fast") || !strcmp(s, "precise")) {
      TSNode name = field(n, "name");
      add_edit(t, ts_node_start_byte(n), ts_node_start_byte(name), "");
      walk(t, name);
      return;
    }
  }
  if (!strcmp(type, "reference_declarator")) {
    fail(t, n, "reference");
    return;
  }
  if ((!strcmp(type, "primitive_type") || !strcmp(type, "type_identifier")) &&
      is_half_type(text_of(t, n)))
    t->uses_half = true;
  walk_children(t, n);
}

static int cmp_edit(const void *pa, const void *pb) {
  const struct edit *a = pa, *b = pb;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  /* At one offset: insertions first, in the order they were made. */
  bool ia = a->start == a->end, ib = b->start == b->end;
  if (ia != ib) return ia ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static const char *keyword_text(enum kl_kw kind) {
  switch (kind) {
  case KL_KW_DEVICE:
    return "__global";
  case KL_KW_CONSTANT:
    return "__constant";
  case KL_KW_THREADGROUP:
    return "__local";
  case KL_KW_THREAD:
    return "";
  case KL_KW_KERNEL:
    return "__kernel";
  default:
    return NULL;
  }
}

int main(int argc, char **argv) {
  const char *sites_path = NULL, *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trace") && i + 1 < argc)
      sites_path = argv[++i];
    else if (!path && argv[i][0] != '-')
      path = argv[i];
    else
      path = NULL, i = argc;
  }
  if (!path) {
    fprintf(stderr, "usage: msl2cl [--trace SITES] FILE.metal\n");
    return 2;
  }
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_unit u;
  char err[512];
  int status = 0;
  if (kl_source_load(a, path, &src, err, sizeof err) != 0 ||
      kl_dialect_parse(a, &src, src.text, src.len, NULL, NULL, &u, err, sizeof err) != 0) {
    fprintf(stderr, "msl2cl: %s: %s\n", path, err);
    kl_arena_delete(a);
    return 2;
  }
  struct tr t = {.a = a, .u = &u, .path = path};
  if (u.nerrors || u.expanded) {
    fprintf(stderr, "msl2cl: %s: %s\n", path,
            u.nerrors ? "does not parse cleanly" : "needs macro expansion");
    status = 2;
    goto out;
  }
  if (sites_path && !(t.sites = fopen(sites_path, "w"))) {
    fprintf(stderr, "msl2cl: cannot write %s\n", sites_path);
    status = 2;
    goto out;
  }
  t.kw_done = kl_arena_alloc(a, (u.nkws + 1) * sizeof *t.kw_done);
  walk(&t, ts_tree_root_node(u.tree));
  for (size_t i = 0; i < u.nkws; i++) {
    if (t.kw_done[i]) continue;
    const char *kt = keyword_text(u.kws[i].kind);
    if (!kt) {
      fprintf(stderr, "msl2cl: %s: unsupported address space or qualifier at byte %u\n", path,
              u.kws[i].off);
      t.failed = true;
      continue;
    }
    add_edit(&t, u.kws[i].off, u.kws[i].off + u.kws[i].len, kt);
  }
  const char *pragma = t.uses_half ? "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" : "";
  bool pragma_placed = !t.uses_half;
  for (size_t i = 0; i < t.nedits; i++) {
    if (t.edits[i].seq != (size_t)-1) continue;
    t.edits[i].seq = i;
    if (!pragma_placed && u.buf[t.edits[i].start] == '#') {
      t.edits[i].text = pragma;
      pragma_placed = true;
    }
  }
  if (!pragma_placed) add_edit(&t, 0, 0, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n");
  if (t.failed) {
    status = 2;
    goto out;
  }
  qsort(t.edits, t.nedits, sizeof *t.edits, cmp_edit);
  uint32_t at = 0;
  for (size_t i = 0; i < t.nedits; i++) {
    const struct edit *e = &t.edits[i];
    if (e->start < at) {
      fprintf(stderr, "msl2cl: %s: overlapping edits at byte %u\n", path, e->start);
      status = 2;
      goto out;
    }
    fwrite(u.buf + at, 1, e->start - at, stdout);
    fputs(e->text, stdout);
    at = e->end;
  }
  fwrite(u.buf + at, 1, u.len - at, stdout);
out:
  if (t.sites && fclose(t.sites) != 0) status = 2;
  kl_dialect_release(&u);
  kl_arena_delete(a);
  return status;
}
