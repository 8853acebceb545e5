/* msl2cl: translate the MSL compute subset of the proof fixtures to OpenCL C, so that Oclgrind
 * can run a fixture kernel (tests/proofs.test.sh). Prints OpenCL C on stdout.
 *
 * Usage: msl2cl [--trace SITES] [--instance HOST_NAME] [--function-constant NAME=VALUE]...
 *               [--included-by FILE] [--with FILE] FILE.metal
 *
 * The text is spliced, not regenerated: every edit replaces a byte range found in the tree of
 * the dialect layer, and no edit adds a newline, so a line of the output is the same line of the
 * input. Oclgrind's "At line N" therefore names the fixture's own line. (When the file has no
 * #include line and uses half, the fp16 pragma goes on a new first line: lines shift by one.)
 *
 * Local headers (`#include "x.h"` found beside the including file) are read: each, once, goes
 * before the file that includes it, and the joined text is translated as one (its macros
 * expand, its helpers are translated and called like the file's own). Each part starts with
 * `#line 1 "PATH"`, so Oclgrind's "At line N of PATH" still names the part's own line.
 * --included-by FILE (beside FILE.metal) translates FILE, which must include FILE.metal: the
 * file the build compiles, holding the instantiations of FILE.metal's template kernels.
 * --with FILE (a path of its own) goes after FILE.metal, translated with it under its own #line:
 * the definitions of the functions FILE.metal only declares, defined in another file of the
 * project (a proof gives a plausible one). A prototype `R f(P);` is then translated as f's
 * definition is (the same extra parameters); a function template only declared is blanked when
 * nothing instantiates its definition (its calls with a lambda are inlined), else declared with
 * the arguments of its instantiation.
 *
 * The subset:
 *   kernel void f(...), [[kernel]] void f(...)    -> __kernel void f(...)
 *   device / threadgroup / constant / thread      -> __global / __local / __constant / (private)
 *   constant T& n [[buffer(k)]] (any T& param)    -> T n, passed by value
 *   a helper's constant T& or const T& parameter  -> T, by value (it is only read through)
 *   a helper's other T& parameter (written through) -> T*, x in its body (*x), each call's
 *     argument a -> &(a) (an lvalue of the caller's; `thread` is private)
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
 *   simd_sum, simd_max, simd_min                  -> kl_simd_reduce over a __local scratch array
 *     that the kernel declares and hands down to every helper that needs it (an extra last
 *     parameter). Each lane stores its value and, after a work-group barrier, reads its SIMD
 *     group's: exact when the whole threadgroup calls together, as the fixtures do; where only
 *     some lanes call, the barrier diverges and Oclgrind says so. The value goes through float.
 *     The same way: simd_all, simd_any, simd_ballot(c).all() and .any() (kl_simd_vote),
 *     simd_prefix_{exclusive,inclusive}_{sum,product} (kl_simd_scan), simd_is_first and
 *     simd_shuffle_down (kl_simd_down).
 *   v.r, v.g, v.b, v.a and their swizzles (v.bgr) -> v.x, v.y, v.z, v.w (OpenCL 1.2 has only
 *     those), unless the file declares a struct field of that name.
 *   h(a, [&](P p) { BODY });  (h a helper template whose template parameters are its lambdas'
 *     types)                                    -> h's body inlined, each `f(x);` in it BODY with
 *     p declared from x, every copied part under a #line of its own lines: see
 *     msl2cl_lambda.inc.
 *   function templates                            -> the one instantiation a run needs: the
 *     `template <...>` head goes and every use of a parameter becomes its argument (a value in
 *     parentheses). A template kernel takes the arguments and the name of its
 *     `template [[host_name("H")]] ...` line, the one --instance H names or its only one; a
 *     helper template those of its calls (`f<float>(...)`, all alike). A template nothing
 *     instantiates, and every instantiation line, becomes blank lines.
 *   constant T c [[function_constant(i)]];        -> __constant T c = V; with V from
 *     --function-constant c=V, one specialisation per run (a constant without one is refused).
 *   struct S { static R f(...) {...} ... };       -> the free functions S_f (only static
 *     members; also in a struct template, each member then bound to the arguments of its calls
 *     as a helper template is). S::f(...), S<...>::f(...) and A::f(...) for an alias
 *     `using A = S<...>;` call S_f, and the alias goes.
 *   struct S { fields };                          -> typedef struct S { fields } S;
 *   struct S { fields; S(...) : f(x) {...} R m(...) {...} };  (not a template)
 *                                                 -> typedef struct S { fields } S; and the free
 *     functions void S_S(S* self, ...) { self->f = (x); {...} } and R S_m(S* self, ...), a field
 *     named in them read through self; `S o(a, b);` -> `S o; S_S(&o, a, b);`, o.m(x) ->
 *     S_m(&(o), x), and m(x) in another member function -> S_m(self, x).
 *   threadgroup T name[N]; in a helper          -> declared by every kernel as kl_tg_<f>_<name>
 *     (OpenCL C has __local variables at kernel scope only) and handed down to the helpers
 *     that reach the declaration as extra last parameters; there the declaration becomes a
 *     pointer to it.
 *   using A = T;                                  -> typedef T A;
 *   threadgroup atomic_uint / atomic_int          -> volatile uint / int, and their
 *     atomic_fetch_{add,sub,min,max,and,or,xor}_explicit, atomic_exchange_explicit -> OpenCL 1.2's
 *     atomic_add ... atomic_xchg (the memory order dropped), atomic_load_explicit(p, o) ->
 *     atomic_or(p, 0), atomic to Oclgrind, which has none of OpenCL 2.0's atomics;
 *     atomic_store_explicit(p, v, o) -> (*(p) = (v)), a plain store (see atomic_fn).
 *   simdgroup_float8x8 and its fill, multiply, load and store of threadgroup memory  -> see
 *     matrix_helper (float 8 x 8 only).
 *   macros                                        -> when the file parses only macro-expanded,
 *     the expanded text, if it keeps every line where it was; _Pragma loop hints are dropped.
 * Refused (exit 2): other simd_* functions (a ballot's bits), quad_* and atomic_* functions,
 * other struct templates and member functions, a template call that leaves its arguments to
 * deduction or two instantiations of one helper, other references (a member function's or an
 * inlined helper's written through), imageblock/ray/object
 * memory, an expansion that moves lines.
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

#include "analyzer/input/source.h"
#include "grammar/dialect.h"
#include "tests/tools/msl2cl/includes.h"

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

/* A template parameter and the argument text it stands for in the one instantiation kept. */
struct binding {
  const char *name, *text;
};

/* A function defined at file scope: a plain function, or a function template (then `node` is
 * its template_declaration); or a static member S::f of a struct (template) that has nothing else
 * (`node` is the struct's definition), translated as the free function S_f. */
struct def {
  const char *name;
  TSNode node, fn;
  bool kernel, is_template;
  bool live;             /* translated; a template nothing instantiates is blanked */
  bool simd;             /* reaches a simd_* reduction: needs the scratch array */
  bool tg;               /* declares threadgroup memory, or calls a helper that does (hoisted) */
  const char *host_name; /* a template kernel: the host name of the instantiation kept */
  const char *flat_name; /* a static member S::f: S_f */
  const char *args;      /* a helper template: the argument list it is called with */
  struct binding *bind;
  size_t nbind;
};

/* `using A = S<...>;` in the body of caller, for a struct S of static members. */
struct alias {
  const struct def *caller;
  const char *name;
  TSNode type; /* template_type or type_identifier */
};

/* A call S::f(...) (or A::f through an alias), by where it starts. */
struct member_call {
  uint32_t at;
  struct def *callee;
};

struct hoist;
struct object;
struct lambda;

/* A call that hands a lambda to a helper template, inlined (msl2cl_lambda.inc), by where it
 * starts. */
struct inline_call {
  uint32_t at;
  struct def *helper;
};

struct function_constant {
  const char *name, *value;
  bool used;
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
  bool prelude_done; /* the helpers the translation calls are placed before the first function */
  bool any_simd;
  bool any_matrix;           /* the file uses SIMD-group matrices (simdgroup_float8x8) */
  struct buffer_param *bufs; /* device buffers of the kernel being translated */
  size_t nbufs, cap_bufs;
  struct def *defs;
  size_t ndefs, cap_defs;
  const struct binding *bind; /* template arguments of the function being translated */
  size_t nbind;
  const char *rename;            /* the host name of the template kernel being translated */
  const char *instance;          /* --instance */
  struct function_constant *fcs; /* --function-constant */
  size_t nfcs, cap_fcs;
  struct alias *aliases;
  size_t naliases, cap_aliases;
  struct member_call *mcalls;
  size_t nmcalls, cap_mcalls;
  struct hoist *hoists;
  size_t nhoists, cap_hoists;
  struct object *objs;
  size_t nobjs, cap_objs;
  const struct object *self; /* the struct whose member function is being translated */
  const char **self_locals;  /* its parameters' and locals' names, which hide fields */
  size_t nself_locals, cap_self_locals;
  const char **fields; /* the names of every struct field the file declares */
  size_t nfields, cap_fields;
  struct inline_call *inlines; /* see msl2cl_lambda.inc */
  size_t ninlines, cap_inlines;
  unsigned ninlined;
  const struct lambda *lambdas; /* the lambdas of the helper whose copy is being made */
  size_t nlambdas;
  const struct binding *lambda_bind; /* the template arguments where those lambdas are */
  size_t nlambda_bind;
  const char **constants; /* lambda parameters that stand for an integral constant */
  size_t nconstants, cap_constants;
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
  while (!ts_node_is_null(d) && !is_type(d, "identifier") && !is_type(d, "field_identifier")) {
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

/* What a template parameter stands for in the function being translated, or NULL. */
static const char *bound(struct tr *t, const char *name) {
  for (size_t i = 0; i < t->nbind; i++)
    if (!strcmp(t->bind[i].name, name)) return t->bind[i].text;
  return NULL;
}

/* The definition named `name` that is translated, or NULL. */
static struct def *def_named(struct tr *t, const char *name) {
  for (size_t i = 0; i < t->ndefs; i++)
    if (t->defs[i].live && !strcmp(t->defs[i].name, name)) return &t->defs[i];
  return NULL;
}

/* Replace [start, end) by its line breaks alone, so that every later line stays put; keywords in
 * it vanish with it. */
static void keep_newlines(struct tr *t, uint32_t start, uint32_t end) {
  size_t n = 0;
  for (uint32_t i = start; i < end; i++) n += t->u->buf[i] == '\n';
  char *nl = kl_arena_alloc(t->a, n + 1);
  memset(nl, '\n', n);
  nl[n] = 0;
  size_t k;
  const struct kl_keyword *kw = kl_dialect_keywords_in(t->u, start, end, &k);
  for (size_t i = 0; i < k; i++) t->kw_done[(size_t)(kw + i - t->u->kws)] = true;
  add_edit(t, start, end, nl);
}

static void walk(struct tr *t, TSNode n);
static void walk_children(struct tr *t, TSNode n);
static struct def *member_call_at(struct tr *t, TSNode n);
static struct def *find_def(struct tr *t, const char *name);
static bool is_member_struct(struct tr *t, const char *s);
static const char *callee_name(struct tr *t, TSNode fn);
static void helper_params(struct tr *t, TSNode params, const struct def *d, bool out_refs);
static void ref_args(struct tr *t, const struct def *d, TSNode args);

#include "tests/tools/msl2cl_structs.inc"

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

/* The callee's name without metal::, fast:: or precise:: scopes; a template parameter's is its
 * argument's (`T(2)` is a cast to T). */
static const char *callee_name(struct tr *t, TSNode fn) {
  while (is_type(fn, "qualified_identifier")) fn = field(fn, "name");
  if (is_type(fn, "identifier") || is_type(fn, "primitive_type") ||
      is_type(fn, "type_identifier")) {
    const char *name = text_of(t, fn);
    const char *arg = bound(t, name);
    return arg ? arg : name;
  }
  return "";
}

/* A call of a function that reaches a SIMD reduction hands it the caller's scratch array. */
static void pass_scratch(struct tr *t, const struct def *callee, TSNode args) {
  uint32_t close = ts_node_end_byte(args) - 1;
  bool any = ts_node_named_child_count(args);
  if (callee->simd) add_edit(t, close, close, any ? ", kl_simd" : "kl_simd"), any = true;
  for (size_t i = 0; callee->tg && i < t->nhoists; i++, any = true)
    add_edit(t, close, close, kl_arena_printf(t->a, "%s%s", any ? ", " : "", t->hoists[i].param));
}

/* An atomic function of <metal_atomic> on threadgroup memory, as OpenCL 1.2's atomic function
 * (Oclgrind has none of OpenCL 2.0's): its name, or NULL. The memory-order argument goes; a load
 * becomes atomic_or with 0, atomic to Oclgrind's race detector. A store becomes a plain store
 * through the volatile pointer, (*(p) = (v)), not an atomic_xchg: Oclgrind's uninitialized-value
 * check takes an atomic_xchg into memory not yet written for a store of an uninitialized value
 * (and every atomic after it). So two threads storing to one atomic at once would be a race to
 * Oclgrind; the kernels translated clear a counter from one thread, before a barrier. */
static const char *atomic_fn(const char *name) {
  static const char *const map[][2] = {
      {"atomic_fetch_add_explicit", "atomic_add"}, {"atomic_fetch_sub_explicit", "atomic_sub"},
      {"atomic_fetch_min_explicit", "atomic_min"}, {"atomic_fetch_max_explicit", "atomic_max"},
      {"atomic_fetch_and_explicit", "atomic_and"}, {"atomic_fetch_or_explicit", "atomic_or"},
      {"atomic_fetch_xor_explicit", "atomic_xor"}, {"atomic_exchange_explicit", "atomic_xchg"},
      {"atomic_store_explicit", "atomic_xchg"},    {"atomic_load_explicit", "atomic_or"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (!strcmp(name, map[i][0])) return map[i][1];
  return NULL;
}

/* TEXT followed by the line breaks of [start, end), which an edit replacing that range by TEXT
 * keeps, so that every later line stays put. */
static const char *text_keeping_lines(struct tr *t, uint32_t start, uint32_t end,
                                      const char *text) {
  size_t n = 0;
  for (uint32_t i = start; i < end; i++) n += t->u->buf[i] == '\n';
  size_t len = strlen(text);
  char *s = kl_arena_alloc(t->a, len + n + 1);
  memcpy(s, text, len);
  memset(s + len, '\n', n);
  s[len + n] = 0;
  return s;
}

#include "tests/tools/msl2cl_helpers.inc"

static void walk_call(struct tr *t, TSNode n) {
  TSNode fn = field(n, "function");
  TSNode args = field(n, "arguments");
  if (ts_node_is_null(fn) || ts_node_is_null(args)) {
    walk_children(t, n);
    return;
  }
  struct def *member = member_call_at(t, n);
  if (member) {
    add_edit(t, ts_node_start_byte(fn), ts_node_end_byte(fn), member->flat_name);
    walk(t, args);
    pass_scratch(t, member, args);
    return;
  }
  uint32_t nargs = ts_node_named_child_count(args);
  if (ballot_vote(t, n, fn, args)) return;
  if (is_type(fn, "field_expression") && object_of_method(t, text_of(t, field(fn, "field")))) {
    /* o.m(x): S_m(&(o), x). */
    const struct object *o = object_of_method(t, text_of(t, field(fn, "field")));
    TSNode obj = field(fn, "argument");
    add_edit(t, ts_node_start_byte(obj), ts_node_start_byte(obj),
             kl_arena_printf(t->a, "%s_%s(&(", o->name, text_of(t, field(fn, "field"))));
    walk(t, obj);
    add_edit(t, ts_node_end_byte(obj), ts_node_start_byte(args) + 1, nargs ? "), " : ")");
    walk_children(t, args);
    return;
  }
  if (t->self && is_type(fn, "identifier") &&
      in_list(t->self->methods, t->self->nmethods, text_of(t, fn))) {
    /* A member function calling another of its struct's, on the same object. */
    add_edit(
        t, ts_node_start_byte(fn), ts_node_start_byte(args) + 1,
        kl_arena_printf(t->a, "%s_%s(self%s", t->self->name, text_of(t, fn), nargs ? ", " : ""));
    walk_children(t, args);
    return;
  }
  const char *name = callee_name(t, fn);
  if (!strcmp(name, "threadgroup_barrier") || !strcmp(name, "simdgroup_barrier")) {
    add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n), barrier_text(t, n));
    return;
  }
  if (matrix_call(t, n, name, args)) return;
  const char *atomic = atomic_fn(name);
  if (atomic || !strncmp(name, "atomic_", 7)) {
    uint32_t k = ts_node_named_child_count(args);
    bool load = !strcmp(name, "atomic_load_explicit");
    if (!atomic || k != (load ? 2u : 3u)) {
      fail(t, n,
           kl_arena_printf(t->a, "%s (only the explicit fetch, exchange, load and store)", name));
      return;
    }
    TSNode order = ts_node_named_child(args, k - 1);
    if (!strcmp(name, "atomic_store_explicit")) {
      /* (*(p) = (v)): see atomic_fn. */
      TSNode p = ts_node_named_child(args, 0), v = ts_node_named_child(args, 1);
      add_edit(t, ts_node_start_byte(n), ts_node_start_byte(p), "(*(");
      walk(t, p);
      add_edit(t, ts_node_end_byte(p), ts_node_start_byte(v), ") = (");
      walk(t, v);
      add_edit(t, ts_node_end_byte(v), ts_node_end_byte(n),
               text_keeping_lines(t, ts_node_end_byte(v), ts_node_end_byte(n), "))"));
      return;
    }
    add_edit(t, ts_node_start_byte(fn), ts_node_end_byte(fn), atomic);
    if (load)
      add_edit(t, ts_node_start_byte(order), ts_node_end_byte(order), "0");
    else {
      uint32_t from = ts_node_end_byte(ts_node_named_child(args, k - 2));
      add_edit(t, from, ts_node_end_byte(order),
               text_keeping_lines(t, from, ts_node_end_byte(order), ""));
    }
    for (uint32_t i = 0; i + 1 < k; i++) walk(t, ts_node_named_child(args, i));
    return;
  }
  if (!strncmp(name, "simd_", 5) || !strncmp(name, "quad_", 5)) {
    int op = simd_op(name);
    if (op < 0 || !simd_calls[op].call) {
      fail(t, n, kl_arena_printf(t->a, "%s (Oclgrind has no sub-groups)", name));
      return;
    }
    add_edit(t, ts_node_start_byte(n), ts_node_start_byte(args) + 1,
             kl_arena_printf(t->a, "%s%s", simd_calls[op].call, nargs ? ", " : ""));
    walk_children(t, args);
    return;
  }
  if (is_type(fn, "template_function")) {
    const char *tname = text_of(t, field(fn, "name"));
    struct def *d = def_named(t, tname);
    if (d && d->is_template && !d->kernel) {
      /* The helper is translated with these arguments bound (every call gives the same). */
      TSNode targs = field(fn, "arguments");
      add_edit(t, ts_node_start_byte(targs), ts_node_end_byte(targs), "");
      ref_args(t, d, args);
      walk(t, args);
      pass_scratch(t, d, args);
      return;
    }
    TSNode targs = field(fn, "arguments");
    if (!strcmp(tname, "make_filled_simdgroup_matrix")) { /* float 8 x 8 only */
      add_edit(t, ts_node_start_byte(n), ts_node_start_byte(args), "kl_sg_fill");
      walk(t, args);
      return;
    }
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
  struct def *d = *name ? def_named(t, name) : NULL;
  if (d) ref_args(t, d, args);
  walk_children(t, n);
  if (d) pass_scratch(t, d, args);
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

/* The scratch array of a kernel that reaches a SIMD reduction: one float per thread of the
 * largest threadgroup Metal allows. */
#define SIMD_SCRATCH " __local float kl_simd[1024];"

/* Before the first function translated: the helpers the translation calls. */
static void prelude(struct tr *t, uint32_t at) {
  if (t->prelude_done) return;
  t->prelude_done = true;
  const char *simd = kl_arena_printf(t->a, simd_helper, SIMD_WIDTH, SIMD_WIDTH, SIMD_WIDTH,
                                     SIMD_WIDTH, SIMD_WIDTH, SIMD_WIDTH, SIMD_WIDTH, SIMD_WIDTH);
  const char *text = kl_arena_printf(t->a, "%s%s%s", t->sites ? trace_helper : "",
                                     t->any_simd ? simd : "", t->any_matrix ? matrix_helper : "");
  if (*text) add_edit(t, at, at, text);
}

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
    if (bound(t, tyname)) tyname = bound(t, tyname);
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
      walk(t, type);
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

/* 0 when parameter p is no reference, 1 when a reference it only reads through (constant T&,
 * const T&), 2 when one it may write through (thread T& out). */
static int reference_kind(struct tr *t, TSNode p, TSNode *ref) {
  *ref = is_type(p, "parameter_declaration")
             ? find_type(field(p, "declarator"), "reference_declarator")
             : (TSNode){0};
  if (ts_node_is_null(*ref)) return 0;
  bool read_only = has_keyword(t, p, KL_KW_CONSTANT);
  for (uint32_t j = 0; j < ts_node_named_child_count(p); j++) {
    TSNode q = ts_node_named_child(p, j);
    read_only = read_only || (is_type(q, "type_qualifier") && !strcmp(text_of(t, q), "const"));
  }
  return read_only ? 1 : 2;
}

/* A helper's parameter list: a reference it only reads through becomes a value (a copy reads the
 * same); with out_refs, one it may write through a pointer (its uses in the body are (*x), the
 * caller hands &(arg): out_ref_binds, ref_args). One that reaches a SIMD reduction takes the
 * scratch array last, one that reaches hoisted threadgroup memory those arrays. */
static void helper_params(struct tr *t, TSNode params, const struct def *d, bool out_refs) {
  uint32_t k = ts_node_named_child_count(params);
  for (uint32_t i = 0; i < k; i++) {
    TSNode p = ts_node_named_child(params, i), ref;
    int kind = reference_kind(t, p, &ref);
    if (!kind) {
      walk(t, p);
      continue;
    }
    if (kind == 2 && !out_refs) {
      fail(t, p, "reference parameter of a helper that may write through it");
      continue;
    }
    add_edit(t, ts_node_start_byte(ref), ts_node_start_byte(ref) + 1, kind == 2 ? "*" : "");
    if (kind == 1) keywords_as(t, p, "");
    walk(t, field(p, "type"));
  }
  uint32_t close = ts_node_end_byte(params) - 1;
  bool any = k;
  if (d && d->simd) {
    add_edit(t, close, close, any ? ", __local float* kl_simd" : "__local float* kl_simd");
    any = true;
  }
  for (size_t i = 0; d && d->tg && i < t->nhoists; i++, any = true)
    add_edit(t, close, close,
             kl_arena_printf(t->a, "%s__local void* %s", any ? ", " : "", t->hoists[i].param));
}

/* The parameters of function definition fn. */
static TSNode params_of(TSNode fn) {
  TSNode decl = find_type(field(fn, "declarator"), "function_declarator");
  return ts_node_is_null(decl) ? decl : field(decl, "parameters");
}

/* The bindings of the body of a helper with parameters params: those already in force, and each
 * reference parameter it may write through as (*x), a pointer now (helper_params). */
static void out_ref_binds(struct tr *t, TSNode params) {
  struct binding *v = NULL;
  size_t nv = 0, cap = 0;
  for (uint32_t i = 0; i < ts_node_named_child_count(params); i++) {
    TSNode p = ts_node_named_child(params, i), ref;
    if (reference_kind(t, p, &ref) != 2) continue;
    if (!nv)
      for (size_t j = 0; j < t->nbind; j++) {
        KL_VEC_PUSH(t->a, v, nv, cap);
        v[nv++] = t->bind[j];
      }
    const char *name = text_of(t, declarator_name(ref));
    KL_VEC_PUSH(t->a, v, nv, cap);
    v[nv++] = (struct binding){name, kl_arena_printf(t->a, "(*%s)", name)};
  }
  if (nv) t->bind = v, t->nbind = nv;
}

/* A call of helper d hands each reference parameter it may write through the address of its
 * argument, an lvalue of the caller's (private, as `thread` is). */
static void ref_args(struct tr *t, const struct def *d, TSNode args) {
  TSNode params = params_of(d->fn);
  for (uint32_t i = 0; !ts_node_is_null(params) && i < ts_node_named_child_count(params); i++) {
    TSNode ref, a = ts_node_named_child(args, i);
    if (reference_kind(t, ts_node_named_child(params, i), &ref) != 2 || ts_node_is_null(a))
      continue;
    add_edit(t, ts_node_start_byte(a), ts_node_start_byte(a), "&(");
    add_edit(t, ts_node_end_byte(a), ts_node_end_byte(a), ")");
  }
}

/* A function declared, not defined (`R f(P);`, its definition further on or in the --with file):
 * its parameters as d's, the definition's, are translated. */
static void walk_prototype(struct tr *t, TSNode n, const struct def *d) {
  TSNode fdecl = field(n, "declarator"), params = field(fdecl, "parameters");
  for (uint32_t i = 0; i < ts_node_child_count(n); i++) {
    TSNode c = ts_node_child(n, i);
    if (!ts_node_eq(c, fdecl)) {
      walk(t, c);
      continue;
    }
    for (uint32_t j = 0; j < ts_node_child_count(fdecl); j++) {
      TSNode dc = ts_node_child(fdecl, j);
      if (ts_node_eq(dc, params))
        helper_params(t, params, d, true);
      else
        walk(t, dc);
    }
  }
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
  prelude(t, first);
  const struct def *d = NULL;
  for (size_t i = 0; i < t->ndefs && !d; i++)
    if (ts_node_eq(t->defs[i].fn, n)) d = &t->defs[i];
  bool simd = d && d->simd;
  t->nbufs = 0;
  if (kernel) {
    kernel_params(t, params, body);
    if (simd) add_edit(t, ts_node_start_byte(body) + 1, ts_node_start_byte(body) + 1, SIMD_SCRATCH);
    for (size_t i = 0; i < t->nhoists; i++)
      add_edit(t, ts_node_start_byte(body) + 1, ts_node_start_byte(body) + 1,
               kl_arena_printf(t->a, " __local %s %s%s;", t->hoists[i].type, t->hoists[i].param,
                               t->hoists[i].dims));
  } else {
    helper_params(t, params, d, true);
  }
  const struct binding *outer = t->bind;
  size_t nouter = t->nbind;
  if (!kernel) out_ref_binds(t, params);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = ts_node_child(n, i);
    if (is_type(c, "attribute_declaration")) continue;
    if (ts_node_eq(c, decl)) {
      /* Everything in the declarator but its parameter list, which kernel_params has done. */
      uint32_t dk = ts_node_child_count(fdecl);
      TSNode fname = field(fdecl, "declarator");
      for (uint32_t j = 0; j < dk; j++) {
        TSNode dc = ts_node_child(fdecl, j);
        if (t->rename && ts_node_eq(dc, fname))
          add_edit(t, ts_node_start_byte(dc), ts_node_end_byte(dc), t->rename);
        else if (!ts_node_eq(dc, params))
          walk(t, dc);
      }
      continue;
    }
    walk(t, c);
  }
  t->bind = outer, t->nbind = nouter;
  t->nbufs = 0;
}

static void walk_struct(struct tr *t, TSNode top, TSNode st) {
  TSNode body = field(st, "body"), name = field(st, "name");
  for (size_t i = 0; i < t->nobjs; i++)
    if (ts_node_eq(t->objs[i].st, st)) {
      walk_object(t, &t->objs[i]);
      return;
    }
  bool members = false;
  for (size_t i = 0; i < t->ndefs; i++) members = members || ts_node_eq(t->defs[i].node, top);
  if (!members) {
    if (!ts_node_is_null(body) && !ts_node_is_null(name) &&
        is_type(ts_node_parent(st), "translation_unit")) {
      add_edit(t, ts_node_start_byte(st), ts_node_start_byte(st), "typedef ");
      add_edit(t, ts_node_end_byte(st), ts_node_end_byte(st),
               kl_arena_printf(t->a, " %s", text_of(t, name)));
    }
    walk_children(t, st);
    return;
  }
  keep_newlines(t, ts_node_start_byte(top), ts_node_start_byte(body) + 1);
  uint32_t k = ts_node_named_child_count(body);
  for (uint32_t i = 0; i < k; i++) {
    TSNode m = ts_node_named_child(body, i);
    const struct def *d = NULL;
    for (size_t j = 0; j < t->ndefs && !d; j++)
      if (ts_node_eq(t->defs[j].fn, m)) d = &t->defs[j];
    if (!d) continue;
    if (!d->live) {
      keep_newlines(t, ts_node_start_byte(m), ts_node_end_byte(m));
      continue;
    }
    t->bind = d->bind;
    t->nbind = d->nbind;
    t->rename = d->flat_name;
    walk_function(t, m);
    t->bind = NULL;
    t->nbind = 0;
    t->rename = NULL;
  }
  keep_newlines(t, ts_node_end_byte(body) - 1, ts_node_end_byte(top));
}

/* A function template: translated with the arguments of its one instantiation bound (the
 * `template <...>` head goes), or blanked when nothing instantiates it. */
static void walk_template(struct tr *t, TSNode n) {
  const struct def *d = NULL;
  for (size_t i = 0; i < t->ndefs && !d; i++)
    if (ts_node_eq(t->defs[i].node, n)) d = &t->defs[i];
  if (d && d->flat_name) {
    walk_struct(t, n, find_type(n, "struct_specifier"));
    return;
  }
  TSNode proto = ts_node_named_child(n, ts_node_named_child_count(n) - 1);
  if (!d && is_type(proto, "declaration") &&
      is_type(field(proto, "declarator"), "function_declarator")) {
    /* Declared only: its definition (a def) follows or is in the --with file. */
    TSNode name = declarator_name(field(proto, "declarator"));
    d = ts_node_is_null(name) ? NULL : find_def(t, text_of(t, name));
    if (!d || !d->is_template) {
      fail(t, n, "a function template declared and not defined (msl2cl --with FILE defines it)");
    } else if (!d->live) { /* not instantiated, or each call inlined */
      keep_newlines(t, ts_node_start_byte(n), ts_node_end_byte(n));
    } else {
      keep_newlines(t, ts_node_start_byte(n), ts_node_end_byte(field(n, "parameters")));
      t->bind = d->bind, t->nbind = d->nbind;
      walk_prototype(t, proto, d);
      t->bind = NULL, t->nbind = 0;
    }
    return;
  }
  if (!d) {
    fail(t, n, "template other than a function template");
    return;
  }
  if (!d->live) {
    keep_newlines(t, ts_node_start_byte(n), ts_node_end_byte(n));
    return;
  }
  keep_newlines(t, ts_node_start_byte(n), ts_node_end_byte(field(n, "parameters")));
  t->bind = d->bind;
  t->nbind = d->nbind;
  t->rename = d->host_name;
  walk_function(t, d->fn);
  t->bind = NULL;
  t->nbind = 0;
  t->rename = NULL;
}

/* `using A = T;` is `typedef T A;`, or nothing when T is a struct of static members: its calls
 * through A name the members' free functions. */
static void walk_alias(struct tr *t, TSNode n) {
  TSNode type = field(n, "type");
  TSNode st = field(type, "type");
  TSNode s = is_type(st, "template_type") ? field(st, "name") : st;
  if (is_member_struct(t, text_of(t, s))) {
    keep_newlines(t, ts_node_start_byte(n), ts_node_end_byte(n));
    return;
  }
  add_edit(t, ts_node_start_byte(n), ts_node_start_byte(type), "typedef ");
  walk(t, type);
  add_edit(t, ts_node_end_byte(type), ts_node_end_byte(type),
           kl_arena_printf(t->a, " %s", text_of(t, field(n, "name"))));
}

/* `constant T name [[function_constant(i)]];` takes the value given for this run. */
static void function_constant(struct tr *t, TSNode attr) {
  const char *name = text_of(t, declarator_name(ts_node_parent(attr)));
  for (size_t i = 0; i < t->nfcs; i++) {
    if (strcmp(t->fcs[i].name, name)) continue;
    t->fcs[i].used = true;
    add_edit(t, ts_node_start_byte(attr), ts_node_end_byte(attr),
             kl_arena_printf(t->a, "= %s", t->fcs[i].value));
    return;
  }
  fail(t, attr,
       kl_arena_printf(t->a, "function constant %s without a value (--function-constant %s=V)",
                       name, name));
}

/* Every struct field name declared under n, into t->fields. */
static void collect_fields(struct tr *t, TSNode n) {
  if (is_type(n, "field_declaration")) {
    for (uint32_t i = 0; i < ts_node_named_child_count(n); i++) {
      TSNode d = ts_node_named_child(n, i);
      if (ts_node_eq(d, field(n, "type"))) continue;
      TSNode name = declarator_name(d);
      if (ts_node_is_null(name) || !is_type(name, "field_identifier")) continue;
      KL_VEC_PUSH(t->a, t->fields, t->nfields, t->cap_fields);
      t->fields[t->nfields++] = text_of(t, name);
    }
  }
  for (uint32_t i = 0; i < ts_node_named_child_count(n); i++)
    collect_fields(t, ts_node_named_child(n, i));
}

/* A vector's lanes named r, g, b, a (MSL's colour swizzles, `v.g`, `c.bgra`): OpenCL C 1.2 has
 * only x, y, z, w, the same lanes. A struct field of such a name is left alone: a file that
 * declares one keeps every access of that name as it is. */
static void swizzle(struct tr *t, TSNode n) {
  TSNode f = field(n, "field");
  if (ts_node_is_null(f) || !is_type(f, "field_identifier")) return;
  const char *name = text_of(t, f);
  size_t len = strlen(name);
  if (!len || len > 4 || strspn(name, "rgba") != len || in_list(t->fields, t->nfields, name))
    return;
  TSNode op = ts_node_child(n, 1);
  if (ts_node_is_null(op) || strcmp(ts_node_type(op), ".")) return;
  char *xyzw = kl_arena_strndup(t->a, name, len);
  for (size_t i = 0; i < len; i++) xyzw[i] = "xyzw"[strchr("rgba", name[i]) - "rgba"];
  add_edit(t, ts_node_start_byte(f), ts_node_end_byte(f), xyzw);
}

static bool lambda_statement(struct tr *t, TSNode stmt);
static bool inline_statement(struct tr *t, TSNode stmt);
static bool constant_value(struct tr *t, TSNode n);

static void walk(struct tr *t, TSNode n) {
  const char *type = ts_node_type(n);
  if (!strcmp(type, "expression_statement") && (lambda_statement(t, n) || inline_statement(t, n)))
    return;
  if (!strcmp(type, "preproc_include") || !strcmp(type, "using_declaration")) {
    /* Keep the newline a preproc_include owns, so lines stay put. */
    uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
    while (e > s && (t->u->buf[e - 1] == '\n' || t->u->buf[e - 1] == '\r')) e--;
    add_edit(t, s, e, "")->seq = (size_t)-1; /* marked: the first include may get the pragma */
    return;
  }
  if (t->self && !strcmp(type, "identifier") &&
      in_list(t->self->fields, t->self->nfields, text_of(t, n)) &&
      !in_list(t->self_locals, t->nself_locals, text_of(t, n))) {
    add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n),
             kl_arena_printf(t->a, "self->%s", text_of(t, n)));
    return;
  }
  if (!strcmp(type, "declaration") && is_type(ts_node_parent(n), "translation_unit") &&
      is_type(field(n, "declarator"), "function_declarator")) {
    TSNode name = declarator_name(field(n, "declarator"));
    walk_prototype(t, n, ts_node_is_null(name) ? NULL : def_named(t, text_of(t, name)));
    return;
  }
  if (!strcmp(type, "declaration") && object_named(t, text_of(t, field(n, "type")))) {
    object_declaration(t, n, object_named(t, text_of(t, field(n, "type"))));
    return;
  }
  if ((!strcmp(type, "identifier") || !strcmp(type, "type_identifier")) && t->nbind) {
    const char *arg = bound(t, text_of(t, n));
    if (arg) {
      add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n), arg);
      return;
    }
  }
  if (!strcmp(type, "template_declaration")) {
    walk_template(t, n);
    return;
  }
  if (!strcmp(type, "template_instantiation")) {
    keep_newlines(t, ts_node_start_byte(n), ts_node_end_byte(n));
    return;
  }
  if (!strcmp(type, "struct_specifier")) {
    walk_struct(t, n, n);
    return;
  }
  if (!strcmp(type, "alias_declaration")) {
    walk_alias(t, n);
    return;
  }
  if (!strcmp(type, "function_definition")) {
    if (is_type(ts_node_parent(n), "field_declaration_list"))
      fail(t, n, "member function (OpenCL C has none)");
    else
      walk_function(t, n);
    return;
  }
  if (!strcmp(type, "attribute_declaration")) {
    if (!strcmp(attribute_name(t, n), "function_constant"))
      function_constant(t, n);
    else
      add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n), "");
    return;
  }
  if (!strcmp(type, "call_expression")) {
    walk_call(t, n);
    return;
  }
  const struct hoist *h = !strcmp(type, "declaration") ? hoist_at(t, n) : NULL;
  if (h) {
    keywords_skip(t, n);
    add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n),
             kl_arena_printf(t->a, "__local %s (*%s)%s = (__local %s (*)%s)%s;", h->type, h->name,
                             h->rest, h->type, h->rest, h->param));
    return;
  }
  if (!strcmp(type, "subscript_expression")) {
    walk_subscript(t, n);
    return;
  }
  if (!strcmp(type, "field_expression")) {
    if (constant_value(t, n)) return;
    swizzle(t, n);
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
  if (!strcmp(type, "type_identifier") &&
      (!strcmp(text_of(t, n), "atomic_uint") || !strcmp(text_of(t, n), "atomic_int"))) {
    /* OpenCL 1.2's atomic functions take a volatile pointer to the plain integer. */
    add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n),
             text_of(t, n)[7] == 'u' ? "volatile uint" : "volatile int");
    return;
  }
  if ((!strcmp(type, "primitive_type") || !strcmp(type, "type_identifier")) &&
      is_half_type(text_of(t, n)))
    t->uses_half = true;
  /* OpenCL has no bool vectors: a vector comparison is an int vector, -1 where true, which is
   * what its select() and any() read, as MSL's do a boolN. */
  if (!strcmp(type, "type_identifier")) {
    const char *b = text_of(t, n);
    if (!strncmp(b, "bool", 4) && b[4] >= '2' && b[4] <= '4' && !b[5]) {
      static const char *const ints[] = {"int2", "int3", "int4"};
      add_edit(t, ts_node_start_byte(n), ts_node_end_byte(n), ints[b[4] - '2']);
      return;
    }
  }
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
  case KL_KW_PRAGMA_OP:
    return ""; /* a loop hint (`clang loop unroll`): no result depends on it */
  default:
    return NULL;
  }
}

#include "tests/tools/msl2cl_lambda.inc"
#include "tests/tools/msl2cl_defs.inc"

/* Whether every line of the macro-expanded buffer is the file's line of the same number (its k-th
 * line break comes from the file's k-th), so that the translation of the expanded text keeps
 * Oclgrind's line numbers. The #define lines stay in it; the OpenCL compiler finds their macros
 * used nowhere any more. */
static bool lines_kept(const struct kl_unit *u, const struct kl_source *src) {
  uint32_t nbuf = 0, nfile = 0, last = 0;
  for (uint32_t i = 0; i < u->len; i++) {
    if (u->buf[i] != '\n') continue;
    uint32_t f = kl_offmap_to_file(&u->map, i);
    if (f >= src->len || src->text[f] != '\n' || (nbuf && f <= last)) return false;
    last = f;
    nbuf++;
  }
  for (uint32_t i = 0; i < src->len; i++) nfile += src->text[i] == '\n';
  return nbuf == nfile;
}

/* The text to translate: path's own, or joined with the local headers it includes (see
 * includes.h) and with the file of definitions `with`, after it; with includer, that of the file
 * beside path that includes it (the file the build compiles, which may hold the instantiations
 * of path's template kernels). */
static int load(struct kl_arena *a, const char *path, const char *includer, const char *with,
                struct kl_source *src, char *err, size_t errlen) {
  if (includer) {
    const char *slash = strrchr(path, '/');
    if (slash && includer[0] != '/')
      includer = kl_arena_printf(a, "%.*s/%s", (int)(slash - path), path, includer);
  }
  uint32_t len;
  bool joined, found;
  const char *text = kl_m2c_includes_join(a, includer ? includer : path, with, path, &len, &joined,
                                          &found, err, errlen);
  if (!text) return -1;
  if (includer && !found) {
    snprintf(err, errlen, "%s does not include it", includer);
    return -1;
  }
  if (!joined) return kl_source_load(a, path, src, err, errlen);
  return kl_source_from_memory(a, path, text, len, src, err, errlen);
}

int main(int argc, char **argv) {
  const char *sites_path = NULL, *path = NULL, *instance = NULL, *includer = NULL, *with = NULL;
  struct kl_arena *a = kl_arena_new();
  struct function_constant *fcs = NULL;
  size_t nfcs = 0, cap_fcs = 0;
  for (int i = 1; i < argc; i++) {
    const char *eq = i + 1 < argc ? strchr(argv[i + 1], '=') : NULL;
    if (!strcmp(argv[i], "--trace") && i + 1 < argc) {
      sites_path = argv[++i];
    } else if (!strcmp(argv[i], "--instance") && i + 1 < argc) {
      instance = argv[++i];
    } else if (!strcmp(argv[i], "--included-by") && i + 1 < argc) {
      includer = argv[++i];
    } else if (!strcmp(argv[i], "--with") && i + 1 < argc) {
      with = argv[++i];
    } else if (!strcmp(argv[i], "--function-constant") && eq && eq > argv[i + 1] && eq[1]) {
      KL_VEC_PUSH(a, fcs, nfcs, cap_fcs);
      i++;
      fcs[nfcs++] = (struct function_constant){kl_arena_strndup(a, argv[i], (size_t)(eq - argv[i])),
                                               eq + 1, false};
    } else if (!path && argv[i][0] != '-') {
      path = argv[i];
    } else {
      path = NULL, i = argc;
    }
  }
  if (!path) {
    fprintf(stderr, "usage: msl2cl [--trace SITES] [--instance HOST_NAME] "
                    "[--function-constant NAME=VALUE]... [--included-by FILE] [--with FILE] "
                    "FILE.metal\n");
    kl_arena_delete(a);
    return 2;
  }
  struct kl_source src;
  struct kl_unit u;
  char err[512];
  int status = 0;
  if (load(a, path, includer, with, &src, err, sizeof err) != 0 ||
      kl_dialect_parse_whole(a, &src, src.text, src.len, NULL, NULL, &u, err, sizeof err) != 0) {
    fprintf(stderr, "msl2cl: %s: %s\n", path, err);
    kl_arena_delete(a);
    return 2;
  }
  struct tr t = {.a = a, .u = &u, .path = path, .instance = instance, .fcs = fcs, .nfcs = nfcs};
  if (u.nerrors || (u.expanded && !lines_kept(&u, &src))) {
    fprintf(stderr, "msl2cl: %s: %s\n", path,
            u.nerrors ? "does not parse cleanly" : "macro expansion moves lines");
    status = 2;
    goto out;
  }
  if (sites_path && !(t.sites = fopen(sites_path, "w"))) {
    fprintf(stderr, "msl2cl: cannot write %s\n", sites_path);
    status = 2;
    goto out;
  }
  t.kw_done = kl_arena_alloc(a, (u.nkws + 1) * sizeof *t.kw_done);
  for (size_t i = 0; i + 18 <= u.len && !t.any_matrix; i++)
    t.any_matrix = !memcmp(u.buf + i, "simdgroup_float8x8", 18);
  collect_fields(&t, ts_tree_root_node(u.tree));
  collect_defs(&t, ts_tree_root_node(u.tree));
  bool walked = !t.failed; /* else the constants were never looked for */
  if (walked) walk(&t, ts_tree_root_node(u.tree));
  for (size_t i = 0; i < t.nfcs && walked; i++) {
    if (t.fcs[i].used) continue;
    fprintf(stderr, "msl2cl: %s: no function constant %s\n", path, t.fcs[i].name);
    t.failed = true;
  }
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
