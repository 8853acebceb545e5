/* bfloat-target: bfloat types used, unguarded, on a target before Apple GPU family 9.
 *
 * Guards are decided from the preprocessor directives in the text, not from tree-sitter's
 * preproc_if nodes: a directive in the middle of a parameter list or an expression breaks the
 * tree into ERROR nodes, but the preprocessor is line based and so is this scan. */
#include <stdlib.h>
#include <string.h>

#include "grammar/msl.h"
#include "grammar/preproc.h"
#include "rules/rules.h"

/* Apple GPU family where bfloat arithmetic is native (M3, A17). */
#define KL_BF_NATIVE_FAMILY 9

struct kl_bf_range {
  uint32_t start, end;
};

/* A type name the file defines: `typedef bfloat bf16;`, `using T4 = vec<bfloat, 4>;`,
 * `struct _BF16 {...}`, `#define BF bfloat`. */
struct kl_bf_def {
  const char *name;
  TSNode type;      /* what it names (null for a struct or a macro) */
  const char *text; /* a macro's replacement text */
  bool bfloat;      /* the definition names a bfloat type */
};

struct kl_bf {
  struct kl_rule_ctx *ctx;
  const char *buf;
  uint32_t len;
  struct kl_bf_range *exempt; /* branches of bfloat-guarded #if groups */
  size_t nexempt, cap_exempt;
  struct kl_bf_def *defs;
  size_t ndefs, cap_defs;
  uint32_t *lines; /* file lines already reported */
  size_t nlines, cap_lines;
};

/* Built-in spellings: the catalogue's bfloat types (bfloat, bfloat2..4, packed_bfloat2..4,
 * bfloat16_t, simdgroup_bfloat8x8) and the bfloat2x2..4x4 matrices, which it does not list; with
 * or without `metal::` (the qualifier is a separate node). */
static bool kl_bf_builtin(const char *s, size_t n) {
  char name[64];
  if (n < 6 || n >= sizeof name) return false;
  memcpy(name, s, n);
  name[n] = '\0';
  if (!strstr(name, "bfloat")) return false; /* every identifier passes here: stay cheap */
  const struct kl_msl_type *t = kl_msl_type(name);
  if (t) return t->is_bfloat;
  return n == 9 && !strncmp(name, "bfloat", 6) && name[6] >= '2' && name[6] <= '4' &&
         name[7] == 'x' && name[8] >= '2' && name[8] <= '4';
}

static const struct kl_bf_def *kl_bf_find_def(const struct kl_bf *bf, const char *s, size_t n,
                                              bool want_bfloat) {
  for (size_t i = 0; i < bf->ndefs; i++)
    if (bf->defs[i].bfloat == want_bfloat && strlen(bf->defs[i].name) == n &&
        !memcmp(bf->defs[i].name, s, n))
      return &bf->defs[i];
  return NULL;
}

/* A bfloat name as the rest of the file sees it: built in or a bfloat alias, and not given a
 * portable definition anywhere (MLX's `typedef struct _MLX_BFloat16 bfloat16_t;` fallback makes
 * every use of bfloat16_t fine). */
static bool kl_bf_names_bfloat(const struct kl_bf *bf, const char *s, size_t n) {
  if (!kl_bf_builtin(s, n) && !kl_bf_find_def(bf, s, n, true)) return false;
  return !kl_bf_find_def(bf, s, n, false);
}

/* ---- Preprocessor guards ---------------------------------------------------------------- */

/* __HAVE_BFLOAT__ and the project's own guard macros (.lintrc bfloat-guards). */
static bool kl_bf_guard_macro(const struct kl_settings *s, const char *t, size_t n) {
  if (n == 15 && !memcmp(t, "__HAVE_BFLOAT__", 15)) return true;
  for (size_t i = 0; s && i < s->nbfloat_guards; i++)
    if (strlen(s->bfloat_guards[i]) == n && !memcmp(s->bfloat_guards[i], t, n)) return true;
  return false;
}

/* Whether a condition names a guard macro at all: the fallback for one the evaluator cannot
 * read. */
static bool kl_bf_names_guard(const struct kl_settings *s, const char *cond) {
  for (const char *p = cond; *p;) {
    if (!kl_dialect_ident_char(*p)) {
      p++;
      continue;
    }
    const char *w = p;
    while (kl_dialect_ident_char(*p)) p++;
    if (kl_bf_guard_macro(s, w, (size_t)(p - w))) return true;
  }
  return false;
}

/* The builds a guard tells apart: MSL 3.0 without bfloat, and MSL 3.1 or later with it (several
 * versions, so that `== 310`, `== 320` and `>= 330` all tell them apart). */
static const char *const kl_bf_versions[] = {"300", "310", "320", "330", "400"};
enum { KL_BF_BUILDS = sizeof kl_bf_versions / sizeof kl_bf_versions[0] };

static void kl_bf_assume(struct kl_bf *bf, int build, struct kl_pp_assume *as) {
  const struct kl_settings *s = bf->ctx->settings;
  size_t ng = s ? s->nbfloat_guards : 0;
  const char **names = kl_arena_alloc(bf->ctx->arena, (ng + 2) * sizeof *names);
  const char **values = kl_arena_alloc(bf->ctx->arena, (ng + 2) * sizeof *values);
  memset(as, 0, sizeof *as);
  names[0] = "__METAL_VERSION__";
  values[0] = kl_bf_versions[build];
  names[1] = "__HAVE_BFLOAT__";
  values[1] = NULL;
  for (size_t i = 0; i < ng; i++) names[2 + i] = s->bfloat_guards[i], values[2 + i] = NULL;
  as->defined = names;
  as->values = values;
  if (build == 0) {
    as->ndefined = 1;
    as->undefined = names + 1;
    as->nundefined = ng + 1;
  } else {
    as->ndefined = ng + 2;
  }
}

/* Every branch that bfloat availability decides becomes an exempt range: one the MSL 3.0 build
 * without bfloat never compiles (the guarded code), and one that some build with bfloat skips
 * (the #else fallback of a guard). The builds are evaluated by the preprocessor module, which
 * replays #define and #undef: a macro the file #undefs below MSL 3.1 is therefore a guard with
 * no configuration. A condition the evaluator cannot read still guards when it names a guard
 * macro. */
static void kl_bf_scan_guards(struct kl_bf *bf) {
  struct kl_arena *a = bf->ctx->arena;
  struct kl_pp pp;
  kl_preproc_scan(a, bf->buf, bf->len, &pp);
  if (!pp.ngroups) return;
  int *taken[KL_BF_BUILDS], *cond[KL_BF_BUILDS];
  for (int b = 0; b < KL_BF_BUILDS; b++) {
    struct kl_pp_assume as;
    kl_bf_assume(bf, b, &as);
    taken[b] = kl_arena_alloc(a, pp.nlines * sizeof *taken[b]);
    cond[b] = kl_arena_alloc(a, pp.nlines * sizeof *cond[b]);
    kl_preproc_eval(a, &pp, &as, taken[b], cond[b]);
  }
  bool *unread = kl_arena_alloc(a, pp.ngroups * sizeof *unread);
  memset(unread, 0, pp.ngroups * sizeof *unread);
  for (size_t i = 0; i < pp.nlines; i++) {
    const struct kl_pp_line *l = &pp.lines[i];
    if (l->kind != KL_PP_IF && l->kind != KL_PP_ELIF && l->kind != KL_PP_ELSE) continue;
    bool some_yes_skipped = false, any_known = false;
    for (int b = 1; b < KL_BF_BUILDS; b++) some_yes_skipped = some_yes_skipped || taken[b][i] == 0;
    for (int b = 0; b < KL_BF_BUILDS; b++) any_known = any_known || cond[b][i] >= 0;
    /* Not compiled without bfloat (the guarded code), or skipped by some build with it (the
     * fallback of a guard). */
    bool decided = taken[0][i] == 0 || some_yes_skipped;
    if (l->kind != KL_PP_ELSE && !any_known && kl_bf_names_guard(bf->ctx->settings, l->cond))
      unread[l->group] = true;
    if (!decided && !unread[l->group]) continue;
    size_t e = kl_preproc_branch_end(&pp, i);
    uint32_t end = e == pp.nlines                    ? bf->len
                   : pp.lines[e].kind == KL_PP_ENDIF ? pp.lines[e].end
                                                     : pp.lines[e].start;
    KL_VEC_PUSH(a, bf->exempt, bf->nexempt, bf->cap_exempt);
    bf->exempt[bf->nexempt++] = (struct kl_bf_range){l->start, end};
  }
}

static bool kl_bf_exempt(const struct kl_bf *bf, uint32_t off) {
  for (size_t i = 0; i < bf->nexempt; i++)
    if (off >= bf->exempt[i].start && off < bf->exempt[i].end) return true;
  return false;
}

/* ---- Type names the file defines --------------------------------------------------------- */

static bool kl_bf_is(TSNode n, const char *type) {
  return !ts_node_is_null(n) && !strcmp(ts_node_type(n), type);
}

static TSNode kl_bf_field(TSNode n, const char *name) {
  return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name));
}

static void kl_bf_add_def(struct kl_bf *bf, TSNode name, TSNode type, const char *text) {
  if (ts_node_is_null(name)) return;
  KL_VEC_PUSH(bf->ctx->arena, bf->defs, bf->ndefs, bf->cap_defs);
  struct kl_bf_def *d = &bf->defs[bf->ndefs++];
  memset(d, 0, sizeof *d);
  d->name = kl_dialect_node_text(bf->ctx->arena, bf->ctx->unit, name);
  d->type = type;
  d->text = text;
}

/* The type_identifier a typedef declarator introduces (`typedef bfloat *bfp;`). */
static TSNode kl_bf_typedef_name(TSNode d) {
  for (int i = 0; i < 16 && !ts_node_is_null(d) && !kl_bf_is(d, "type_identifier"); i++) {
    TSNode inner = kl_bf_field(d, "declarator");
    if (ts_node_is_null(inner) && ts_node_named_child_count(d)) inner = ts_node_named_child(d, 0);
    d = inner;
  }
  return d;
}

static enum kl_walk kl_bf_def_node(TSNode n, void *ctx) {
  struct kl_bf *bf = ctx;
  const char *t = ts_node_type(n);
  if (!strcmp(t, "type_definition")) {
    TSNode type = kl_bf_field(n, "type");
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
      TSNode d = ts_node_named_child(n, i);
      if (ts_node_eq(d, type) || kl_bf_is(d, "type_qualifier") || kl_bf_is(d, "comment")) continue;
      kl_bf_add_def(bf, kl_bf_typedef_name(d), type, NULL);
    }
  } else if (!strcmp(t, "alias_declaration")) {
    kl_bf_add_def(bf, kl_bf_field(n, "name"), kl_bf_field(n, "type"), NULL);
  } else if ((!strcmp(t, "struct_specifier") || !strcmp(t, "class_specifier") ||
              !strcmp(t, "union_specifier") || !strcmp(t, "enum_specifier")) &&
             !ts_node_is_null(kl_bf_field(n, "body"))) {
    TSNode null = {{0, 0, 0, 0}, NULL, NULL};
    kl_bf_add_def(bf, kl_bf_field(n, "name"), null, NULL);
  } else if (!strcmp(t, "preproc_def")) {
    TSNode v = kl_bf_field(n, "value");
    TSNode null = {{0, 0, 0, 0}, NULL, NULL};
    kl_bf_add_def(bf, kl_bf_field(n, "name"), null,
                  ts_node_is_null(v) ? "" : kl_dialect_node_text(bf->ctx->arena, bf->ctx->unit, v));
  }
  return KL_WALK_DESCEND;
}

static void kl_bf_collect_defs(struct kl_bf *bf) {
  kl_dialect_walk(ts_tree_root_node(bf->ctx->unit->tree), kl_bf_def_node, bf, NULL);
}

/* Whether any identifier in a macro's replacement text names a bfloat type; returns its start. */
static const char *kl_bf_text_names(const struct kl_bf *bf, const char *s, size_t *n) {
  for (const char *p = s; *p;) {
    if (kl_dialect_ident_char(*p) && !(*p >= '0' && *p <= '9')) {
      const char *w = p;
      while (kl_dialect_ident_char(*p)) p++;
      if (kl_bf_builtin(w, (size_t)(p - w)) || kl_bf_find_def(bf, w, (size_t)(p - w), true)) {
        *n = (size_t)(p - w);
        return w;
      }
    } else if (*p >= '0' && *p <= '9') {
      while (kl_dialect_ident_char(*p)) p++;
    } else if (p[0] == '/' && p[1] == '/') {
      break;
    } else {
      p++;
    }
  }
  return NULL;
}

struct kl_bf_name_scan {
  const struct kl_bf *bf;
  bool found;
};

static enum kl_walk kl_bf_name_node(TSNode n, void *ctx) {
  struct kl_bf_name_scan *scan = ctx;
  if (!kl_bf_is(n, "type_identifier") && !kl_bf_is(n, "identifier")) return KL_WALK_DESCEND;
  const char *buf = scan->bf->buf;
  uint32_t s = ts_node_start_byte(n), len = ts_node_end_byte(n) - s;
  if (kl_bf_builtin(buf + s, len) || kl_bf_find_def(scan->bf, buf + s, len, true)) {
    scan->found = true;
    return KL_WALK_STOP;
  }
  return KL_WALK_DESCEND;
}

/* Whether a type subtree mentions a bfloat name (built in or an alias found so far). */
static bool kl_bf_subtree_names(const struct kl_bf *bf, TSNode type) {
  if (ts_node_is_null(type)) return false;
  struct kl_bf_name_scan scan = {bf, false};
  kl_dialect_walk(type, kl_bf_name_node, &scan, NULL);
  return scan.found;
}

/* Aliases of aliases: repeat until no definition changes (at most once per definition). */
static void kl_bf_resolve_defs(struct kl_bf *bf) {
  for (size_t round = 0; round <= bf->ndefs; round++) {
    bool changed = false;
    for (size_t i = 0; i < bf->ndefs; i++) {
      struct kl_bf_def *d = &bf->defs[i];
      if (d->bfloat) continue;
      size_t n;
      if ((d->text && kl_bf_text_names(bf, d->text, &n)) || kl_bf_subtree_names(bf, d->type)) {
        d->bfloat = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
}

/* ---- Reporting ----------------------------------------------------------------------------- */

/* Whether n is the name a definition introduces rather than a use of a type. */
static bool kl_bf_is_definition_name(TSNode n) {
  TSNode p = ts_node_parent(n);
  if (ts_node_is_null(p)) return false;
  const char *t = ts_node_type(p);
  if (!strcmp(t, "type_definition")) return !ts_node_eq(kl_bf_field(p, "type"), n);
  if (!strcmp(t, "alias_declaration") || !strcmp(t, "struct_specifier") ||
      !strcmp(t, "class_specifier") || !strcmp(t, "union_specifier") ||
      !strcmp(t, "enum_specifier") || !strcmp(t, "preproc_def") ||
      !strcmp(t, "preproc_function_def"))
    return ts_node_eq(kl_bf_field(p, "name"), n);
  /* `#ifdef bfloat16_t` and `defined(bfloat16_t)` test a macro; they do not use a type. */
  return !strcmp(t, "preproc_defined") || !strcmp(t, "preproc_ifdef");
}

static void kl_bf_report(struct kl_bf *bf, uint32_t start, uint32_t end, const char *name,
                         size_t n) {
  struct kl_rule_ctx *ctx = bf->ctx;
  if (kl_bf_exempt(bf, start)) return;
  uint32_t line = kl_rules_line(ctx, start);
  for (size_t i = 0; i < bf->nlines; i++)
    if (bf->lines[i] == line) return;
  KL_VEC_PUSH(ctx->arena, bf->lines, bf->nlines, bf->cap_lines);
  bf->lines[bf->nlines++] = line;
  const char *alias = kl_bf_builtin(name, n) ? "" : " (a bfloat alias)";
  const struct kl_settings *s = ctx->settings;
  kl_rules_report_range(ctx, start, end,
                        "`%.*s`%s is emulated on %s (Apple GPU family %u); bfloat is native from "
                        "M3 (family %d): guard it with `#if defined(__HAVE_BFLOAT__)` or use "
                        "half/float",
                        (int)n, name, alias, s->target ? s->target : "this target", s->apple_family,
                        KL_BF_NATIVE_FAMILY);
}

/* bfloat dtypes and template arguments the file's calls pass (mx.bfloat16, torch.bfloat16). */
static void kl_bf_calls(struct kl_bf *bf) {
  struct kl_rule_ctx *ctx = bf->ctx;
  const struct kl_settings *s = ctx->settings;
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    if (!d->local) continue;
    for (size_t k = 0; k < d->nbfloat; k++) {
      const struct kl_span *sp = &d->bfloat[k];
      bool dup = false;
      for (size_t j = 0; j < bf->nlines && !dup; j++) dup = bf->lines[j] == sp->line;
      if (dup) continue;
      KL_VEC_PUSH(ctx->arena, bf->lines, bf->nlines, bf->cap_lines);
      bf->lines[bf->nlines++] = sp->line;
      const char *arg =
          kl_arena_strndup(ctx->arena, ctx->src->text + sp->start, sp->end - sp->start);
      kl_rules_report_span(ctx, *sp,
                           "`%s` passed to `%s`: bfloat is emulated on %s (Apple GPU family %u) "
                           "and native only from M3 (family %d); use float16 or float32 on this "
                           "target",
                           arg, d->kernel ? d->kernel : "the kernel",
                           s && s->target ? s->target : "this target", s ? s->apple_family : 0,
                           KL_BF_NATIVE_FAMILY);
    }
  }
}

static enum kl_walk kl_bf_use_node(TSNode n, void *ctx) {
  struct kl_bf *bf = ctx;
  const char *t = ts_node_type(n);
  uint32_t s0 = ts_node_start_byte(n), e0 = ts_node_end_byte(n);
  if (!strcmp(t, "type_identifier") || !strcmp(t, "identifier")) {
    if (kl_bf_names_bfloat(bf, bf->buf + s0, e0 - s0) && !kl_bf_is_definition_name(n))
      kl_bf_report(bf, s0, e0, bf->buf + s0, e0 - s0);
  } else if (!strcmp(t, "preproc_arg") && kl_bf_is(ts_node_parent(n), "preproc_def")) {
    /* `#define BF bfloat` names the type just as `using BF = bfloat;` does. */
    char *text = kl_dialect_node_text(bf->ctx->arena, bf->ctx->unit, n);
    size_t wn;
    const char *w = kl_bf_text_names(bf, text, &wn);
    if (w && kl_bf_names_bfloat(bf, w, wn)) {
      uint32_t off = s0 + (uint32_t)(w - text);
      kl_bf_report(bf, off, off + (uint32_t)wn, w, wn);
    }
  }
  return KL_WALK_DESCEND;
}

static void kl_bf_check(struct kl_rule_ctx *ctx) {
  const struct kl_settings *s = ctx->settings;
  if (s && s->apple_family >= KL_BF_NATIVE_FAMILY) return;
  struct kl_bf bf = {0};
  bf.ctx = ctx;
  kl_bf_calls(&bf);
  if (!ctx->unit || !ctx->unit->tree) return;
  /* Every name this rule reports, aliases included, is spelled with "bfloat" somewhere in the
   * unit, so most files need no walk at all. */
  if (!strstr(ctx->unit->buf, "bfloat")) return; /* buf is NUL-terminated, without NULs */
  bf.buf = ctx->unit->buf;
  bf.len = ctx->unit->len;
  kl_bf_scan_guards(&bf);
  kl_bf_collect_defs(&bf);
  kl_bf_resolve_defs(&bf);
  kl_dialect_walk(ts_tree_root_node(ctx->unit->tree), kl_bf_use_node, &bf, NULL);
}

const struct kl_rule kl_rule_bfloat_target = {
    .id = "bfloat-target",
    .default_severity = KL_SEV_WARNING,
    .implemented = true,
    .summary = "A bfloat type used, unguarded, on a GPU before Apple family 9 (M1, M2, A14-A16)",
    .what =
        "Reports every declaration, cast, alias or explicit template instantiation that names "
        "`bfloat`, `bfloat2`/`bfloat3`/`bfloat4`, a bfloat matrix, `simdgroup_bfloat8x8` or "
        "`bfloat16_t` when the target is older than Apple GPU family 9 (the default target is "
        "`m1`; set it with `--target` or `target =` in `.lintrc`). Code under a bfloat "
        "availability guard is not reported, and neither is its `#else`/`#elif` fallback: "
        "`#if defined(__HAVE_BFLOAT__)`, `#ifdef __HAVE_BFLOAT__`, `#if __METAL_VERSION__ >= "
        "310` (or any later version), a condition that `&&`-combines one of those, a macro the "
        "file itself `#undef`s when `__METAL_VERSION__ < 310` (as ggml does), and the "
        "project macros listed in `.lintrc` as `bfloat-guards = NAME, ...`. A guard on any other "
        "macro (`#ifndef METAL_3_0`, `__METAL_VERSION__ >= 300`) does not count. Code under "
        "`#if 0` is not read at all. Aliases are "
        "followed: `typedef bfloat bf16;` is reported, and so is each later use of `bf16`, unless "
        "the file also gives the name a portable definition (such as MLX's emulated "
        "`typedef struct _MLX_BFloat16 bfloat16_t;` fallback). In Python it also reports "
        "`mx.bfloat16` and `torch.bfloat16` passed to a compiled kernel: an MLX `template=` or "
        "`output_dtypes=` argument, an input converted with it, or a PyTorch tensor made with "
        "that dtype and passed to a `compile_shader` kernel, at the dtype. One finding per "
        "line.",
    .why = "Apple GPUs before family 9 (M1, M2, A14 to A16) have no bfloat arithmetic: the "
           "compiler emulates every bfloat operation in float with extra conversions, so the "
           "kernel runs slower than the same kernel in half or float, while it looks native in "
           "the source. Projects that ship bfloat kernels guard them, and the real bug is the one "
           "unguarded use among guarded ones, or a guard on the wrong macro, which still builds "
           "the emulated path for every older GPU.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "kernel void scale(device const bfloat* x [[buffer(0)]],\n"
               "                  device bfloat* y [[buffer(1)]],\n"
               "                  uint i [[thread_position_in_grid]]) {\n"
               "  y[i] = x[i] * bfloat(2.0f);\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "#if defined(__HAVE_BFLOAT__)\n"
               "kernel void scale(device const bfloat* x [[buffer(0)]],\n"
               "                  device bfloat* y [[buffer(1)]],\n"
               "                  uint i [[thread_position_in_grid]]) {\n"
               "  y[i] = x[i] * bfloat(2.0f);\n"
               "}\n"
               "#endif\n"
               "\n"
               "// Or, for every GPU, the same kernel in half:\n"
               "kernel void scale_half(device const half* x [[buffer(0)]],\n"
               "                       device half* y [[buffer(1)]],\n"
               "                       uint i [[thread_position_in_grid]]) {\n"
               "  y[i] = x[i] * half(2.0f);\n"
               "}\n",
    .check = kl_bf_check,
    .reads_calls = true,
};
