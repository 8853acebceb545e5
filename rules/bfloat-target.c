/* bfloat-target: two problems with bfloat, told apart.
 *
 * (a) Native bfloat outside an availability guard fails to compile before MSL 3.1, on any GPU:
 * a warning at each mention of a built-in bfloat spelling (an alias's definition included, its
 * uses not: one alias is one defect, its uses related), and at the first unguarded use of a name
 * the file defines only under a guard with no fallback; unless the build guarantees MSL 3.1
 * (`metal-version`, or the file `#error`s below it).
 * (b) Before Apple family 9 bfloat arithmetic is emulated: a note per operation computed in
 * bfloat (at the first instantiation or non-template kernel that computes at it, the others
 * related) and per Python template binding (guards do not help here). A math builtin on bfloat
 * computes in float: MSL has no bfloat overloads (MLX's bf16_math.h, ml-explore/mlx, says so,
 * quoting the MSL 3.1 conversion rules, and overloads them in float for that reason).
 *
 * Guards are decided from the preprocessor directives in the text, not from tree-sitter's
 * preproc_if nodes: a directive in the middle of a parameter list or an expression breaks the
 * tree into ERROR nodes, but the preprocessor is line based and so is this scan. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/input/bfguard.h"
#include "analyzer/core/node.h"
#include "grammar/expand.h"
#include "grammar/lex.h"
#include "grammar/msl.h"
#include "grammar/preproc.h"
#include "analyzer/core/config.h"
#include "rules/rules.h"

/* Apple GPU family where bfloat arithmetic is native (M3, A17). */
#define KL_BF_NATIVE_FAMILY 9
/* Symbols past the node layer's table are told by name (tree-sitter-cpp has 543). */
#define KL_BF_SYMS KL_KIND_SYMS

/* A span of the buffer: an instantiation, a kernel, a use. */
struct kl_bf_range {
  uint32_t start, end;
};

/* A type name the file defines: `typedef bfloat bf16;`, `using T4 = vec<bfloat, 4>;`,
 * `struct _BF16 {...}`, `#define BF bfloat`. */
struct kl_bf_def {
  const char *name;
  uint32_t at;      /* where the name is defined, in the buffer */
  TSNode type;      /* what it names (null for a struct or a macro) */
  const char *text; /* a macro's replacement text */
  bool bfloat;      /* the definition names a bfloat type */
};

/* A (b) finding: bfloat computed with, at one operation, under one or more instantiations (or
 * kernels): one finding at the first of them, the others its related locations. */
struct kl_bf_note {
  uint32_t line, start, end; /* buffer range */
  const char **names;
  size_t nnames, cap_names;
  size_t nkernels;          /* how many of the names are non-template kernels */
  TSNode op;                /* where they compute in bfloat: a related location */
  TSNode owner;             /* the function definition holding op (kl_bf_owner), or null */
  struct kl_bf_range *also; /* the other instantiations, on other lines */
  size_t nalso, cap_also;
  bool merged; /* told with the (a) warning of its line */
};

/* An (a) finding's fix: the whole file lines [from, to) of the construct holding it (a
 * declaration, a definition, an alias, an instantiation) go under a guard. */
struct kl_bf_guard {
  size_t diag; /* its index in the rule's output */
  uint32_t from, to;
};

/* A built-in bfloat spelling at buffer range [start, end); seq keeps equal starts in the order
 * they were found. */
struct kl_bf_mention {
  uint32_t start, end;
  const char *name;
  size_t n, seq;
};

struct kl_bf {
  struct kl_rule_ctx *ctx;
  const char *buf;
  uint32_t len;
  struct kl_bfguard guard; /* branches of bfloat-guarded #if groups */
  struct kl_bf_def *defs;
  size_t ndefs, cap_defs;
  uint32_t *lines; /* file lines already reported */
  size_t nlines, cap_lines;
  bool needs_msl31;         /* the file #errors in a build below MSL 3.1 */
  bool local_includes;      /* the file includes a project header (`#include "..."`) */
  struct kl_bf_note *notes; /* (b) findings, reported after (a) so that one line is one finding */
  size_t nnotes, cap_notes;
  struct kl_types_bfloat comp;    /* where functions compute in bfloat, for (b) */
  struct kl_bf_mention *mentions; /* (a) candidates, reported in buffer order */
  size_t nmentions, cap_mentions;
  struct kl_bf_guard *guards; /* (a) findings that a guard of whole lines can fix */
  size_t nguards, cap_guards;
  bool want_uses; /* (a) is checked: the definitions' walk keeps the nodes it may report */
  TSNode *uses;   /* those nodes, in the walk's order (kl_bf_use decides) */
  size_t nuses, cap_uses;
  struct kl_pp pp; /* buf's directives, once scanned (kl_bf_pp) */
  bool have_pp;
  struct kl_bf_typed *typed; /* whether a binding's type is bfloat, by type (kl_bf_binds_bfloat) */
  size_t ntyped, cap_typed;
  struct kl_bf *plain; /* the file as written, its guards scanned (kl_bf_macro_used_unguarded) */
  const TSLanguage *spec_lang; /* the language spec is for */
  uint8_t spec[KL_BF_SYMS];    /* per symbol: 0 not asked, 1 not a specifier, 2 a struct, class,
                                  union or enum specifier (kl_bf_is_specifier) */
  uint32_t *words;     /* where the words of kl_bf_defines_in start in buf, in order: 1 + the
                          word's index in the top byte (kl_bf_words_at) */
  size_t nwords;
  bool have_words;
  bool family10, have_family10; /* kl_bf_allowed's answer */
};

/* A binding type and whether it names a bfloat type: the instantiations of a file's templates
 * bind the same few types thousands of times. */
struct kl_bf_typed {
  const char *type; /* NULL for an empty slot */
  bool bfloat;
};

/* Whether n is a struct, class, union or enum specifier: asked of most nodes the definitions'
 * walk visits, so answered per symbol once. */
static bool kl_bf_is_specifier(struct kl_bf *bf, TSNode n) {
  TSSymbol sym = ts_node_symbol(n);
  const TSLanguage *lang = ts_tree_language(n.tree);
  if (sym >= KL_BF_SYMS || (bf->spec_lang && bf->spec_lang != lang)) {
    const char *t = ts_node_type(n);
    return !strcmp(t, "struct_specifier") || !strcmp(t, "class_specifier") ||
           !strcmp(t, "union_specifier") || !strcmp(t, "enum_specifier");
  }
  bf->spec_lang = lang;
  if (!bf->spec[sym]) {
    const char *t = ts_node_type(n);
    bf->spec[sym] = !strcmp(t, "struct_specifier") || !strcmp(t, "class_specifier") ||
                            !strcmp(t, "union_specifier") || !strcmp(t, "enum_specifier")
                        ? 2
                        : 1;
  }
  return bf->spec[sym] == 2;
}

/* Built-in spellings, with or without `metal::` (the qualifier is a separate node). */
static bool kl_bf_builtin(const char *s, size_t n) {
  return kl_bfguard_builtin(s, n);
}

/* `bfloat16_t` is the name projects give their bfloat alias (MLX's bf16.h): a file that uses it
 * without defining it uses a header's alias, and that alias is the one finding, where it is
 * defined. */
static bool kl_bf_is_alias_spelling(const char *s, size_t n) {
  return n == 10 && !memcmp(s, "bfloat16_t", 10);
}

static const struct kl_bf_def *kl_bf_find_def(const struct kl_bf *bf, const char *s, size_t n,
                                              bool want_bfloat) {
  for (size_t i = 0; i < bf->ndefs; i++)
    if (bf->defs[i].bfloat == want_bfloat && strlen(bf->defs[i].name) == n &&
        !memcmp(bf->defs[i].name, s, n))
      return &bf->defs[i];
  return NULL;
}

/* ---- Preprocessor guards ---------------------------------------------------------------- */

/* The directives of bf's buffer, scanned once for the rule's two questions about them. */
static const struct kl_pp *kl_bf_pp(struct kl_bf *bf) {
  if (!bf->have_pp) kl_preproc_scan(bf->ctx->arena, bf->buf, bf->len, &bf->pp);
  bf->have_pp = true;
  return &bf->pp;
}

/* The guarded branches of bf's buffer, under the configured guard macros. */
static void kl_bf_scan_guards(struct kl_bf *bf) {
  const struct kl_settings *s = bf->ctx->settings;
  kl_bfguard_scan(bf->ctx->arena, kl_bf_pp(bf), bf->len, s ? s->bfloat_guards : NULL,
                  s ? s->nbfloat_guards : 0, &bf->guard);
  bf->needs_msl31 = bf->guard.needs_msl31;
}

static bool kl_bf_exempt(const struct kl_bf *bf, uint32_t off) {
  return kl_bfguard_covers(&bf->guard, off);
}

/* Whether the build without bfloat skips offset off: it is in a guarded branch (one nested in a
 * fallback included). */
static bool kl_bf_guarded(const struct kl_bf *bf, uint32_t off) {
  return kl_bfguard_skipped(&bf->guard, off);
}

/* ---- Type names the file defines --------------------------------------------------------- */

static bool kl_bf_is(TSNode n, const char *type) {
  return !kl_node_null(n) && kl_node_is(n, type);
}

static TSNode kl_bf_field(TSNode n, const char *name) {
  return kl_node_field(n, name);
}

static void kl_bf_add_def(struct kl_bf *bf, TSNode name, TSNode type, const char *text) {
  if (kl_node_null(name)) return;
  KL_VEC_PUSH(bf->ctx->arena, bf->defs, bf->ndefs, bf->cap_defs);
  struct kl_bf_def *d = &bf->defs[bf->ndefs++];
  memset(d, 0, sizeof *d);
  d->name = kl_dialect_node_text(bf->ctx->arena, bf->ctx->unit, name);
  d->at = ts_node_start_byte(name);
  d->type = type;
  d->text = text;
}

/* The type_identifier a typedef declarator introduces (`typedef bfloat *bfp;`). */
static TSNode kl_bf_typedef_name(TSNode d) {
  for (int i = 0; i < 16 && !kl_node_null(d) && !kl_bf_is(d, "type_identifier"); i++) {
    TSNode inner = kl_bf_field(d, "declarator");
    if (kl_node_null(inner) && ts_node_named_child_count(d)) inner = kl_node_named_child(d, 0);
    d = inner;
  }
  return d;
}

static const char *const kl_bf_def_words[] = {"bfloat", "typedef", "using", "struct",
                                               "class",  "union",   "enum",  "define"};

/* Buffer order of two entries of kl_bf_words_at's list (offset in the low 24 bits). */
static int kl_bf_offset_cmp(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x & 0xffffffu, b = *(const uint32_t *)y & 0xffffffu;
  return (a > b) - (a < b);
}

/* Where each word of kl_bf_def_words starts in buf (its index in the top byte), in buffer order:
 * found once, so that each definition asks a binary search instead of scanning its text for
 * eight words (a template's text twice: its declaration, then its function). Offsets past 2^24
 * do not fit: then there is no list, and kl_bf_defines_in scans the text. */
static void kl_bf_words_at(struct kl_bf *bf) {
  bf->have_words = true;
  if (bf->len >= (1u << 24)) return;
  size_t cap = 0;
  const char *end = bf->buf + bf->len;
  for (size_t i = 0; i < sizeof kl_bf_def_words / sizeof *kl_bf_def_words; i++) {
    const char *w = kl_bf_def_words[i];
    size_t n = strlen(w);
    for (const char *p = bf->buf; end - p >= (ptrdiff_t)n; p++) {
      p = memchr(p, w[0], (size_t)(end - p) - n + 1);
      if (!p) break;
      if (memcmp(p, w, n)) continue;
      KL_VEC_PUSH(bf->ctx->arena, bf->words, bf->nwords, cap);
      bf->words[bf->nwords++] = (uint32_t)(p - bf->buf) | (uint32_t)i << 24;
    }
  }
  /* No word is a prefix of another: one word per offset, and the order is by offset alone. */
  if (bf->nwords > 1) qsort(bf->words, bf->nwords, sizeof *bf->words, kl_bf_offset_cmp);
}

/* Whether the buffer range [start, end) holds a word the definitions' walk acts on: what every
 * node it keeps is spelled with (a built-in bfloat spelling; the keyword of a typedef, alias,
 * struct, class, union or enum; the `#define` of a macro, whose preproc_arg (a) reads). */
static bool kl_bf_defines_in(struct kl_bf *bf, uint32_t start, uint32_t end) {
  if (!bf->have_words) kl_bf_words_at(bf);
  if (bf->len >= (1u << 24)) {
    const char *s = bf->buf + start, *e = bf->buf + end;
    for (size_t i = 0; i < sizeof kl_bf_def_words / sizeof *kl_bf_def_words; i++) {
      size_t n = strlen(kl_bf_def_words[i]);
      for (const char *p = s; e - p >= (ptrdiff_t)n; p++) {
        p = memchr(p, kl_bf_def_words[i][0], (size_t)(e - p) - n + 1);
        if (!p) break;
        if (!memcmp(p, kl_bf_def_words[i], n)) return true;
      }
    }
    return false;
  }
  size_t lo = 0, hi = bf->nwords; /* the first word at or after start */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if ((bf->words[mid] & 0xffffffu) < start) lo = mid + 1;
    else hi = mid;
  }
  for (size_t k = lo; k < bf->nwords; k++) {
    uint32_t at = bf->words[k] & 0xffffffu;
    if (at >= end) break;
    if (at + strlen(kl_bf_def_words[bf->words[k] >> 24]) <= end) return true;
  }
  return false;
}

static enum kl_walk kl_bf_def_node(TSNode n, void *ctx) {
  struct kl_bf *bf = ctx;
  /* Kinds, not names: the walk visits every node of the definitions it does not skip. */
  enum kl_kind t = kl_node_kind(n);
  /* Most function bodies define nothing and mention no bfloat: their text says so, and the
   * walk need not visit their nodes (the tree-sitter cursor is most of its cost). A subtree
   * without an error spells each of its tokens in the text; one with an error may hold a
   * missing token the text does not have, and is walked. */
  if ((t == KL_KIND_FUNCTION_DEFINITION || t == KL_KIND_TEMPLATE_DECLARATION) &&
      !ts_node_has_error(n) && !kl_bf_defines_in(bf, ts_node_start_byte(n), ts_node_end_byte(n)))
    return KL_WALK_SKIP;
  /* A walk of the whole tree costs as much as everything else this rule does on a big file:
   * this one also keeps what the (a) check looks at, which needs all definitions first. A name
   * that is not a built-in spelling is never reported. */
  if (bf->want_uses &&
      (t == KL_KIND_PREPROC_ARG || ((t == KL_KIND_TYPE_IDENTIFIER || t == KL_KIND_IDENTIFIER) &&
                                     kl_bf_builtin(bf->buf + ts_node_start_byte(n),
                                                   ts_node_end_byte(n) - ts_node_start_byte(n))))) {
    KL_VEC_PUSH(bf->ctx->arena, bf->uses, bf->nuses, bf->cap_uses);
    bf->uses[bf->nuses++] = n;
  }
  if (t == KL_KIND_TYPE_DEFINITION) {
    TSNode type = kl_bf_field(n, "type");
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
      TSNode d = kl_node_named_child(n, i);
      if (ts_node_eq(d, type) || kl_bf_is(d, "type_qualifier") || kl_bf_is(d, "comment")) continue;
      kl_bf_add_def(bf, kl_bf_typedef_name(d), type, NULL);
    }
  } else if (t == KL_KIND_ALIAS_DECLARATION) {
    kl_bf_add_def(bf, kl_bf_field(n, "name"), kl_bf_field(n, "type"), NULL);
  } else if (t == KL_KIND_OTHER && kl_bf_is_specifier(bf, n) &&
             !kl_node_null(kl_bf_field(n, "body"))) {
    TSNode null = {{0, 0, 0, 0}, NULL, NULL};
    kl_bf_add_def(bf, kl_bf_field(n, "name"), null, NULL);
  } else if (t == KL_KIND_PREPROC_DEF) {
    TSNode v = kl_bf_field(n, "value");
    TSNode null = {{0, 0, 0, 0}, NULL, NULL};
    kl_bf_add_def(bf, kl_bf_field(n, "name"), null,
                  kl_node_null(v) ? "" : kl_dialect_node_text(bf->ctx->arena, bf->ctx->unit, v));
  }
  return KL_WALK_DESCEND;
}

static void kl_bf_collect_defs(struct kl_bf *bf) {
  kl_dialect_walk(ts_tree_root_node(bf->ctx->unit->tree), kl_bf_def_node, bf, NULL);
}

/* Whether any identifier in a macro's replacement text names a bfloat type; returns its start. */
static const char *kl_bf_text_names(const struct kl_bf *bf, const char *s, size_t *n) {
  for (const char *p = s; *p;) {
    if (kl_lex_ident_char(*p) && !(*p >= '0' && *p <= '9')) {
      const char *w = p;
      while (kl_lex_ident_char(*p)) p++;
      if (kl_bf_builtin(w, (size_t)(p - w)) || kl_bf_find_def(bf, w, (size_t)(p - w), true)) {
        *n = (size_t)(p - w);
        return w;
      }
    } else if (*p >= '0' && *p <= '9') {
      while (kl_lex_ident_char(*p)) p++;
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
  if (kl_node_null(type)) return false;
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
  if (kl_node_null(p)) return false;
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

/* The (b) finding already collected on a line, if any. */
static struct kl_bf_note *kl_bf_note_at(struct kl_bf *bf, uint32_t line) {
  for (size_t i = 0; i < bf->nnotes; i++)
    if (bf->notes[i].line == line) return &bf->notes[i];
  return NULL;
}

/* What (b) says, for a note or appended to the (a) warning of the same line. */
static const char *kl_bf_note_text(const struct kl_bf *bf, const struct kl_bf_note *nt) {
  const struct kl_settings *s = bf->ctx->settings;
  const char *who = kl_rules_list(bf->ctx->arena, nt->names, nt->nnames, 3);
  if (nt->nkernels == nt->nnames)
    who = kl_arena_printf(bf->ctx->arena, "%s %s", nt->nnames > 1 ? "kernels" : "kernel", who);
  return kl_arena_printf(bf->ctx->arena,
                         "%s %s in bfloat, which is emulated on %s (Apple GPU family %u; "
                         "native from M3, family %d): compute in float and convert once",
                         who, nt->nnames > 1 ? "compute" : "computes",
                         s && s->target ? s->target : "this target", s ? s->apple_family : 0,
                         KL_BF_NATIVE_FAMILY);
}

/* The arithmetic as a related location of a (b) finding, unless the finding is at it already. */
static void kl_bf_relate_op(struct kl_bf *bf, struct kl_diag *d, uint32_t start, TSNode op) {
  /* An operation in a header the unit includes is in another tree: the call here stands for it. */
  if (!d || kl_node_null(op) || op.tree != bf->ctx->unit->tree || ts_node_start_byte(op) == start)
    return;
  kl_rules_relate(bf->ctx, d, op, "computes in bfloat here");
}

/* A (b) finding's related locations: its arithmetic, and the other instantiations that compute
 * with it (the same defect, fixed once). */
static void kl_bf_relate_note(struct kl_bf *bf, struct kl_diag *d, uint32_t start,
                              const struct kl_bf_note *nt) {
  kl_bf_relate_op(bf, d, start, nt->op);
  for (size_t i = 0; d && i < nt->nalso; i++)
    kl_rules_relate_range(bf->ctx, d, nt->also[i].start, nt->also[i].end,
                          "also instantiated here, computing in bfloat at the same operation");
}

static bool kl_bf_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

/* Whether the line at file offset ls is a conditional directive (#if... #else, #endif): a guard
 * around it would cut its group in two. */
static bool kl_bf_cond_line(const char *t, uint32_t len, uint32_t ls) {
  while (ls < len && kl_bf_blank(t[ls])) ls++;
  if (ls >= len || t[ls] != '#') return false;
  ls++;
  while (ls < len && kl_bf_blank(t[ls])) ls++;
  return (len - ls >= 2 && !strncmp(t + ls, "if", 2)) ||
         (len - ls >= 4 && (!strncmp(t + ls, "elif", 4) || !strncmp(t + ls, "else", 4))) ||
         (len - ls >= 5 && !strncmp(t + ls, "endif", 5));
}

/* Record (part of) the fix of the (a) finding d, for the mention at buffer range [start, end):
 * the construct holding the mention, taken to whole lines of the file, when those lines hold
 * nothing else (blanks and a trailing comment aside), continue no macro, and cut no #if group.
 * Returns whether it could. */
static bool kl_bf_guard_add(struct kl_bf *bf, const struct kl_diag *d, uint32_t start,
                            uint32_t end) {
  struct kl_rule_ctx *ctx = bf->ctx;
  const struct kl_source *src = ctx->src;
  const struct kl_unit *u = ctx->unit;
  if (!src || src->lang != KL_LANG_METAL || !u->tree) return false;
  uint32_t at = kl_offmap_to_file(&u->map, start); /* the mention, in the file */
  uint32_t bs = 0, be = 0;
  for (size_t i = 0; i < u->ninsts && be == 0; i++) {
    const struct kl_inst *in = &u->insts[i];
    /* A macro's instantiation stands in the buffer as one byte, mapped to the whole call. */
    bool holds = in->placeholder
                     ? kl_offmap_to_file(&u->map, in->start) <= at &&
                           at < kl_offmap_end_to_file(&u->map, in->end)
                     : in->start <= start && start < in->end;
    if (holds && in->end > in->start) {
      bs = in->start;
      be = in->end;
    }
  }
  if (be == 0) {
    TSNode n = ts_node_descendant_for_byte_range(ts_tree_root_node(u->tree), start, end);
    for (;;) {
      TSNode p = ts_node_parent(n);
      if (kl_node_null(p)) return false;
      const char *pt = ts_node_type(p);
      if (!strcmp(pt, "translation_unit") || !strcmp(pt, "preproc_if") ||
          !strcmp(pt, "preproc_ifdef") || !strcmp(pt, "preproc_else") ||
          !strcmp(pt, "preproc_elif") || !strcmp(pt, "declaration_list"))
        break;
      n = p;
    }
    if (ts_node_has_error(n) || !strncmp(ts_node_type(n), "preproc_if", 10) ||
        !strncmp(ts_node_type(n), "preproc_el", 10))
      return false;
    bs = ts_node_start_byte(n);
    be = ts_node_end_byte(n);
    /* Qualifiers the dialect layer blanked (`kernel`) belong to the construct. */
    uint32_t bl = bs;
    while (bl > 0 && u->buf[bl - 1] != '\n' && kl_bf_blank(u->buf[bl - 1])) bl--;
    size_t nk;
    const struct kl_keyword *kw = kl_dialect_keywords_in(u, bl, bs, &nk);
    if (kw && nk) bs = kw[0].off;
  }
  const char *t = src->text;
  uint32_t len = src->len;
  uint32_t fs = kl_offmap_to_file(&u->map, bs), fe = kl_offmap_end_to_file(&u->map, be);
  /* The construct must hold the finding: a macro's definition is not where it is used. */
  if (fe <= fs || fe > len || at < fs || at >= fe) return false;
  uint32_t ls = fs, le = fe - 1;
  while (ls > 0 && t[ls - 1] != '\n') ls--;
  while (le < len && t[le] != '\n') le++;
  for (uint32_t k = ls; k < fs; k++)
    if (!kl_bf_blank(t[k])) return false;
  uint32_t k = fe;
  while (k < le && kl_bf_blank(t[k])) k++;
  if (k < le && !(t[k] == '/' && k + 1 < le && t[k + 1] == '/')) return false;
  /* A line continued from the one before (a macro's body) cannot be guarded on its own. */
  if (ls >= 1) {
    uint32_t p = ls - 1; /* the previous line's '\n' */
    while (p > 0 && t[p - 1] == '\r') p--;
    if (p > 0 && t[p - 1] == '\\') return false;
  }
  for (uint32_t l = ls; l <= le && l < len; l++) {
    if (kl_bf_cond_line(t, len, l)) return false;
    while (l < len && t[l] != '\n') l++;
  }
  KL_VEC_PUSH(ctx->arena, bf->guards, bf->nguards, bf->cap_guards);
  bf->guards[bf->nguards++] =
      (struct kl_bf_guard){(size_t)(d - ctx->out->items), ls, le < len ? le + 1 : len};
  return true;
}

static int kl_bf_guard_cmp(const void *pa, const void *pb) {
  const struct kl_bf_guard *a = pa, *b = pb;
  if (a->from != b->from) return a->from < b->from ? -1 : 1;
  return a->to < b->to ? -1 : a->to > b->to;
}

/* One guard per run of adjacent constructs: each of their findings gets the same fix, so the
 * first applied fixes them all. */
static void kl_bf_guard_fixes(struct kl_bf *bf) {
  struct kl_rule_ctx *ctx = bf->ctx;
  if (bf->nguards > 1) qsort(bf->guards, bf->nguards, sizeof *bf->guards, kl_bf_guard_cmp);
  const char *t = ctx->src ? ctx->src->text : NULL;
  for (size_t i = 0; i < bf->nguards;) {
    size_t j = i + 1;
    uint32_t to = bf->guards[i].to;
    while (j < bf->nguards && bf->guards[j].from <= to) {
      if (bf->guards[j].to > to) to = bf->guards[j].to;
      j++;
    }
    bool nl = to > 0 && t[to - 1] == '\n';
    for (size_t k = i; k < j; k++) {
      struct kl_diag *d = &ctx->out->items[bf->guards[k].diag];
      bool again = false; /* a finding with two mentions in the run takes its guard once */
      for (size_t m = i; m < k && !again; m++) again = bf->guards[m].diag == bf->guards[k].diag;
      if (again) continue;
      /* A finding whose mentions are in several runs (a name's uses) has one fix guarding all. */
      struct kl_fix *f =
          d->fix ? d->fix : kl_diag_fix(ctx->out, d, "guard with `#if defined(__HAVE_BFLOAT__)`");
      kl_diag_edit(ctx->out, f, bf->guards[i].from, bf->guards[i].from,
                   "#if defined(__HAVE_BFLOAT__)\n");
      kl_diag_edit(ctx->out, f, to, to, nl ? "#endif\n" : "\n#endif\n");
    }
    i = j;
  }
}

/* (a) at buffer range [start, end), saying what, unless its line has an (a) finding already; the
 * (b) finding of the line is told with it. Returns the finding. */
static struct kl_diag *kl_bf_report_at(struct kl_bf *bf, uint32_t start, uint32_t end,
                                       const char *what) {
  struct kl_rule_ctx *ctx = bf->ctx;
  uint32_t line = kl_rules_line(ctx, start);
  for (size_t i = 0; i < bf->nlines; i++)
    if (bf->lines[i] == line) return NULL;
  KL_VEC_PUSH(ctx->arena, bf->lines, bf->nlines, bf->cap_lines);
  bf->lines[bf->nlines++] = line;
  struct kl_bf_note *nt = kl_bf_note_at(bf, line);
  const char *also = "";
  if (nt) {
    nt->merged = true;
    also = kl_arena_printf(ctx->arena, "; also, %s", kl_bf_note_text(bf, nt));
  }
  struct kl_diag *d = kl_rules_report_range(ctx, start, end, "%s%s", what, also);
  if (nt) kl_bf_relate_note(bf, d, start, nt);
  return d;
}

/* (a) at one mention of a built-in bfloat spelling. */
static void kl_bf_report(struct kl_bf *bf, uint32_t start, uint32_t end, const char *name,
                         size_t n) {
  if (kl_bf_exempt(bf, start)) return;
  struct kl_diag *d = kl_bf_report_at(
      bf, start, end,
      kl_arena_printf(bf->ctx->arena,
                      "native `%.*s` outside an availability guard does not compile before MSL 3.1 "
                      "(macOS 13 and older), on any GPU: guard it with `#if "
                      "defined(__HAVE_BFLOAT__)` with a fallback, or set `metal-version = 3.1` if "
                      "the build requires it",
                      (int)n, name));
  if (d) (void)kl_bf_guard_add(bf, d, start, end);
}

/* ---- (b): bfloat computed with ----------------------------------------------------------- */

/* Whether f, under bindings b, computes in bfloat, itself or in a helper it calls: site says
 * where. */
static bool kl_bf_computes(struct kl_bf *bf, const struct kl_function *f,
                           const struct kl_bindings *b, struct kl_types_bfloat_site *site) {
  return kl_types_bfloat_computes(&bf->comp, f, b, site);
}

/* The function definition holding node n, or a null node. */
static TSNode kl_bf_owner(TSNode n) {
  while (!kl_node_null(n) && !kl_bf_is(n, "function_definition")) n = ts_node_parent(n);
  return n;
}

/* The (b) finding of the instantiations that compute in bfloat at op, or elsewhere in the
 * function holding op, if any: instantiations whose constants take different branches of one
 * helper (`if (bits == 2) ... else if (bits == 3) ...`) compute in bfloat at different lines
 * of it, one defect fixed once there. */
static struct kl_bf_note *kl_bf_note_of(struct kl_bf *bf, TSNode op) {
  if (kl_node_null(op)) return NULL;
  for (size_t i = 0; i < bf->nnotes; i++)
    if (!kl_node_null(bf->notes[i].op) && ts_node_eq(bf->notes[i].op, op)) return &bf->notes[i];
  TSNode fn = kl_bf_owner(op);
  for (size_t i = 0; !kl_node_null(fn) && i < bf->nnotes; i++) {
    TSNode o = bf->notes[i].op;
    if (!kl_node_null(o) && ts_node_eq(bf->notes[i].owner, fn)) return &bf->notes[i];
  }
  return NULL;
}

/* One (b) finding per operation computed in bfloat: an instantiation (or kernel) that computes at
 * the operation of an earlier one is the same defect, named in its finding and related to it. */
static void kl_bf_add_note(struct kl_bf *bf, uint32_t start, uint32_t end, const char *name,
                           bool kernel, TSNode op) {
  struct kl_arena *a = bf->ctx->arena;
  uint32_t line = kl_rules_line(bf->ctx, start);
  struct kl_bf_note *nt = kl_bf_note_of(bf, op);
  if (nt && nt->line != line) {
    /* The finding stays at the first instantiation in the file; the others are related. */
    struct kl_bf_range at = {start, end};
    if (start < nt->start) {
      at = (struct kl_bf_range){nt->start, nt->end};
      nt->line = line;
      nt->start = start;
      nt->end = end;
      size_t w = 0; /* the new first one is no longer one of the others */
      for (size_t i = 0; i < nt->nalso; i++)
        if (kl_rules_line(bf->ctx, nt->also[i].start) != line) nt->also[w++] = nt->also[i];
      nt->nalso = w;
    }
    bool dup = false;
    for (size_t i = 0; i < nt->nalso && !dup; i++)
      dup = kl_rules_line(bf->ctx, nt->also[i].start) == kl_rules_line(bf->ctx, at.start);
    if (!dup) {
      KL_VEC_PUSH(a, nt->also, nt->nalso, nt->cap_also);
      nt->also[nt->nalso++] = at;
    }
  }
  if (!nt) nt = kl_bf_note_at(bf, line);
  if (!nt) {
    KL_VEC_PUSH(a, bf->notes, bf->nnotes, bf->cap_notes);
    nt = &bf->notes[bf->nnotes++];
    memset(nt, 0, sizeof *nt);
    nt->line = line;
    nt->start = start;
    nt->end = end;
    nt->op = op;
    nt->owner = kl_bf_owner(op); /* found once, not by every later note's search */
  }
  KL_VEC_PUSH(a, nt->names, nt->nnames, nt->cap_names);
  nt->names[nt->nnames++] = name;
  nt->nkernels += kernel;
}

static uint64_t kl_bf_hash(const char *s) {
  uint64_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

/* Whether type names a bfloat type, asked once per type. */
static bool kl_bf_type_is_bfloat(struct kl_bf *bf, const char *type) {
  struct kl_arena *a = bf->ctx->arena;
  if (2 * (bf->ntyped + 1) > bf->cap_typed) {
    size_t cap = bf->cap_typed ? 2 * bf->cap_typed : 64;
    struct kl_bf_typed *t = kl_arena_alloc(a, cap * sizeof *t);
    memset(t, 0, cap * sizeof *t);
    for (size_t i = 0; i < bf->cap_typed; i++) {
      if (!bf->typed[i].type) continue;
      size_t k = kl_bf_hash(bf->typed[i].type) & (cap - 1);
      while (t[k].type) k = (k + 1) & (cap - 1);
      t[k] = bf->typed[i];
    }
    bf->typed = t;
    bf->cap_typed = cap;
  }
  size_t k = kl_bf_hash(type) & (bf->cap_typed - 1);
  for (; bf->typed[k].type; k = (k + 1) & (bf->cap_typed - 1))
    if (!strcmp(bf->typed[k].type, type)) return bf->typed[k].bfloat;
  struct kl_types_env env = {.a = a, .types = bf->ctx->types, .unit = bf->ctx->unit};
  bool r = kl_types_is_bfloat(&env, type);
  bf->typed[k] = (struct kl_bf_typed){type, r};
  bf->ntyped++;
  return r;
}

static bool kl_bf_binds_bfloat(struct kl_bf *bf, const struct kl_bindings *b) {
  for (size_t i = 0; i < b->n; i++)
    if (b->items[i].type && kl_bf_type_is_bfloat(bf, b->items[i].type)) return true;
  return false;
}

/* (b) per explicit instantiation that binds a bfloat type and computes with it, at the
 * instantiation; per non-template kernel that computes in bfloat, at the operation. */
static void kl_bf_collect_notes(struct kl_bf *bf) {
  struct kl_rule_ctx *ctx = bf->ctx;
  const struct kl_model *m = ctx->model;
  struct kl_arena *a = ctx->arena;
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *f = &m->functions[i];
    /* Two templates of one name (overloads) would both claim its instantiations: the first takes
     * them, as kl_model_function does. */
    if (!f->ntparams || kl_model_function(m, f->name) != f) continue;
    struct kl_bindings *sets;
    size_t n = kl_types_instances(a, m, f, &sets);
    /* A header's kernel instantiated only by the files including it: the finding is at the
     * operation here, since its instantiations are in the other files. */
    bool other = false;
    if (n == 0 && f->is_kernel)
      other = (n = kl_types_xinstances(a, f, ctx->xinsts, ctx->nxinsts, &sets)) > 0;
    for (size_t s = 0; s < n; s++) {
      struct kl_types_bfloat_site site;
      if (!kl_bf_binds_bfloat(bf, &sets[s]) || !kl_bf_computes(bf, f, &sets[s], &site)) continue;
      for (size_t k = 0; other && k < sets[s].nnames; k++) {
        uint32_t at = ts_node_start_byte(site.at);
        kl_bf_add_note(bf, at, at + 1, kl_arena_printf(a, "`%s`", sets[s].names[k]), false,
                       site.op);
      }
      for (size_t k = 0; k < sets[s].ninstances; k++) {
        const struct kl_instance *in = sets[s].instances[k];
        const char *name = in->host_name ? kl_arena_printf(a, "`%s`", in->host_name)
                                         : kl_arena_printf(a, "`%s<...>`", f->name);
        kl_bf_add_note(bf, in->start, in->end, name, false, site.op);
      }
    }
  }
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *f = &m->functions[i];
    struct kl_types_bfloat_site site;
    if (!f->is_kernel || f->ntparams || !kl_bf_computes(bf, f, NULL, &site)) continue;
    uint32_t at = ts_node_start_byte(site.at);
    kl_bf_add_note(bf, at, at + 1, kl_arena_printf(a, "`%s`", f->name), true, site.op);
  }
}

static bool kl_bf_allowed(struct kl_bf *bf);

/* (b) per MLX template binding (`template=[("T", mx.bfloat16)]`) whose kernel computes in T. */
static void kl_bf_binding_notes(struct kl_bf *bf) {
  struct kl_rule_ctx *ctx = bf->ctx;
  for (size_t i = 0; i < ctx->ndispatches; i++) {
    const struct kl_dispatch *d = &ctx->dispatches[i];
    if (!d->local || !d->nbinds || !d->kernel) continue;
    struct kl_bindings b = {.items = d->binds, .n = d->nbinds};
    if (!kl_bf_binds_bfloat(bf, &b)) continue;
    for (size_t k = 0; k < ctx->model->nfunctions; k++) {
      const struct kl_function *f = &ctx->model->functions[k];
      struct kl_types_bfloat_site site;
      if (!f->is_kernel || !kl_model_names(ctx->model, d->kernel, d->kernel_prefix, f) ||
          !kl_bf_computes(bf, f, &b, &site))
        continue;
      bool dup = false;
      for (size_t j = 0; j < bf->nlines && !dup; j++) dup = bf->lines[j] == d->bind_span.line;
      if (dup) break;
      if (!kl_bf_allowed(bf)) return;
      KL_VEC_PUSH(ctx->arena, bf->lines, bf->nlines, bf->cap_lines);
      bf->lines[bf->nlines++] = d->bind_span.line;
      const struct kl_settings *s = ctx->settings;
      enum kl_severity sev = ctx->severity;
      ctx->severity = KL_SEV_NOTE;
      struct kl_diag *diag = kl_rules_report_span(
          ctx, d->bind_span,
          "`%s` binds bfloat and kernel `%s` computes with it, which is emulated "
          "on %s (Apple GPU family %u; native from M3, family %d): bind float16 "
          "or float32, or compute in float inside",
          d->bind_text ? d->bind_text : "template", d->kernel,
          s && s->target ? s->target : "this target", s ? s->apple_family : 0, KL_BF_NATIVE_FAMILY);
      kl_bf_relate_op(bf, diag, UINT32_MAX, site.op); /* the binding is in the host file */
      ctx->severity = sev;
      break;
    }
  }
}

static void kl_bf_report_notes(struct kl_bf *bf) {
  struct kl_rule_ctx *ctx = bf->ctx;
  enum kl_severity sev = ctx->severity;
  ctx->severity = KL_SEV_NOTE;
  for (size_t i = 0; i < bf->nnotes; i++) {
    const struct kl_bf_note *nt = &bf->notes[i];
    if (nt->merged) continue;
    const char *text = kl_bf_note_text(bf, nt);
    kl_bf_relate_note(bf, kl_rules_report_range(ctx, nt->start, nt->end, "%s", text), nt->start,
                      nt);
  }
  ctx->severity = sev;
}

/* Whether macro name is used where no guard covers it, in the file as written (a unit whose
 * macros were expanded no longer shows the uses): a `#define` naming bfloat whose every use is
 * guarded (ggml's FA_TYPES_BF) compiles nothing unguarded. */
static bool kl_bf_macro_used_unguarded(struct kl_bf *bf, const char *name) {
  const struct kl_source *src = bf->ctx->src;
  if (!src || src->lang == KL_LANG_PYTHON) return true; /* a body in a string: no directives */
  /* The file's guards, scanned once however many macros ask. */
  if (!bf->plain) {
    bf->plain = kl_arena_alloc(bf->ctx->arena, sizeof *bf->plain);
    memset(bf->plain, 0, sizeof *bf->plain);
    bf->plain->ctx = bf->ctx;
    bf->plain->buf = src->text;
    bf->plain->len = src->len;
    kl_bf_scan_guards(bf->plain);
  }
  const struct kl_bf *plain = bf->plain;
  size_t n = strlen(name);
  for (const char *p = strstr(src->text, name); p; p = strstr(p + 1, name)) {
    if ((p > src->text && kl_lex_ident_char(p[-1])) || kl_lex_ident_char(p[n])) continue;
    const char *ls = p;
    while (ls > src->text && ls[-1] != '\n') ls--;
    while (*ls == ' ' || *ls == '\t') ls++;
    if (*ls == '#') continue; /* the definition, an #undef or an #ifdef: not a use */
    /* A continuation line of a #define is part of the definition too. */
    const char *prev = ls;
    while (prev > src->text && prev[-1] != '\n') prev--;
    if (prev > src->text + 1 && prev[-2] == '\\') continue;
    if (!kl_bf_exempt(plain, (uint32_t)(p - src->text))) return true;
  }
  return false;
}

/* Whether the word w is a built-in bfloat spelling this rule reports where it is used: not the
 * spelling an alias stands for, which is reported at the alias. */
static bool kl_bf_builtin_use(const struct kl_bf *bf, const char *w, size_t n) {
  return kl_bf_builtin(w, n) && !kl_bf_is_alias_spelling(w, n) && !kl_bf_find_def(bf, w, n, true) &&
         !kl_bf_find_def(bf, w, n, false);
}

static void kl_bf_mention(struct kl_bf *bf, uint32_t start, uint32_t end, const char *name,
                          size_t n) {
  KL_VEC_PUSH(bf->ctx->arena, bf->mentions, bf->nmentions, bf->cap_mentions);
  bf->mentions[bf->nmentions] = (struct kl_bf_mention){start, end, name, n, bf->nmentions};
  bf->nmentions++;
}

/* Whether t[0, n) has "bfloat" in it. */
static bool kl_bf_in_text(const char *t, uint32_t n) {
  const char *end = t + n;
  for (const char *p = memchr(t, 'b', n); p && end - p >= 6;
       p = memchr(p + 1, 'b', (size_t)(end - p - 1)))
    if (!memcmp(p, "bfloat", 6)) return true;
  return false;
}

/* The mentions in the explicit instantiations the unit read as text (no tree holds them): at
 * the word, or at the macro call that stamped the instantiation out. */
static void kl_bf_instance_mentions(struct kl_bf *bf) {
  const struct kl_unit *u = bf->ctx->unit;
  for (size_t i = 0; i < u->ninsts; i++) {
    const struct kl_inst *in = &u->insts[i];
    const char *t = in->text;
    uint32_t n = in->textlen;
    /* Every spelling kl_bf_builtin takes has "bfloat" in it: most instantiations have none. */
    if (!t || !kl_bf_in_text(t, n)) continue;
    for (uint32_t k = 0; k < n;) {
      if (t[k] == '"' || t[k] == '\'') {
        k = kl_lex_skip_literal(t, n, k);
        continue;
      }
      if (kl_lex_skip_comment(t, n, k) > k) {
        k = kl_lex_skip_comment(t, n, k);
        continue;
      }
      if (!kl_lex_ident_start(t[k]) || (k > 0 && kl_lex_ident_char(t[k - 1]))) {
        k++;
        continue;
      }
      uint32_t s = k;
      while (k < n && kl_lex_ident_char(t[k])) k++;
      if (!kl_bf_builtin_use(bf, t + s, k - s)) continue;
      if (in->placeholder)
        kl_bf_mention(bf, in->start, in->end, t + s, k - s);
      else
        kl_bf_mention(bf, in->start + s, in->start + k, t + s, k - s);
    }
  }
}

static int kl_bf_range_cmp(const void *x, const void *y) {
  const struct kl_bf_range *a = x, *b = y;
  return (a->start > b->start) - (a->start < b->start);
}

/* The unguarded uses of name (wn bytes) into *out, in buffer order: where the tree holds the word
 * as a use of a name, and in the instantiations the unit read as text. */
static size_t kl_bf_unguarded_uses(struct kl_bf *bf, const char *name, size_t wn,
                                   struct kl_bf_range **out) {
  struct kl_arena *a = bf->ctx->arena;
  const struct kl_unit *u = bf->ctx->unit;
  TSNode root = ts_tree_root_node(u->tree);
  struct kl_bf_range *v = NULL;
  size_t n = 0, cap = 0;
  for (const char *p = strstr(bf->buf, name); p; p = strstr(p + 1, name)) {
    uint32_t off = (uint32_t)(p - bf->buf);
    if ((off > 0 && kl_lex_ident_char(p[-1])) || kl_lex_ident_char(p[wn]) || kl_bf_exempt(bf, off))
      continue;
    /* Not a comment, a string or a directive's text: a name the code uses. */
    TSNode nd = ts_node_descendant_for_byte_range(root, off, off + (uint32_t)wn);
    if ((!kl_bf_is(nd, "identifier") && !kl_bf_is(nd, "type_identifier")) ||
        ts_node_start_byte(nd) != off || ts_node_end_byte(nd) != off + wn ||
        kl_bf_is_definition_name(nd))
      continue;
    KL_VEC_PUSH(a, v, n, cap);
    v[n++] = (struct kl_bf_range){off, off + (uint32_t)wn};
  }
  for (size_t i = 0; i < u->ninsts; i++) {
    const struct kl_inst *in = &u->insts[i];
    const char *t = in->text;
    uint32_t tn = in->textlen;
    if (!t || kl_bf_exempt(bf, in->start)) continue;
    for (uint32_t k = 0; k + wn <= tn; k++) {
      if (memcmp(t + k, name, wn) || (k > 0 && kl_lex_ident_char(t[k - 1])) ||
          (k + wn < tn && kl_lex_ident_char(t[k + wn])))
        continue;
      KL_VEC_PUSH(a, v, n, cap);
      v[n++] = in->placeholder
                   ? (struct kl_bf_range){in->start, in->end}
                   : (struct kl_bf_range){in->start + k, in->start + k + (uint32_t)wn};
      break; /* one use per instantiation */
    }
  }
  if (n > 1) qsort(v, n, sizeof *v, kl_bf_range_cmp);
  *out = v;
  return n;
}

/* The uses of an unguarded bfloat alias are the defect its (a) finding reports at the alias:
 * related locations of that finding (up to 8 lines), within the alias's scope (the function
 * body holding it, else the file). first is the index of the rule's first finding in the output. */
static void kl_bf_relate_alias_uses(struct kl_bf *bf, size_t first) {
  struct kl_rule_ctx *ctx = bf->ctx;
  TSNode root = ts_tree_root_node(ctx->unit->tree);
  for (size_t i = 0; i < bf->ndefs; i++) {
    const struct kl_bf_def *d = &bf->defs[i];
    if (!d->bfloat || kl_bf_exempt(bf, d->at)) continue;
    uint32_t line = kl_rules_line(ctx, d->at);
    struct kl_diag *diag = NULL;
    for (size_t k = first; k < ctx->out->n && !diag; k++)
      if (ctx->out->items[k].span.line == line &&
          !strcmp(ctx->out->items[k].rule_id, ctx->rule->id))
        diag = &ctx->out->items[k];
    if (!diag) continue;
    uint32_t from = 0, to = bf->len;
    for (TSNode p = ts_node_descendant_for_byte_range(root, d->at, d->at); !kl_node_null(p);
         p = ts_node_parent(p))
      if (kl_bf_is(p, "compound_statement")) {
        from = ts_node_start_byte(p);
        to = ts_node_end_byte(p);
        break;
      }
    struct kl_bf_range *uses;
    size_t n = kl_bf_unguarded_uses(bf, d->name, strlen(d->name), &uses);
    uint32_t last = line;
    for (size_t k = 0, shown = 0; k < n && shown < 8; k++) {
      uint32_t ul = kl_rules_line(ctx, uses[k].start);
      if (uses[k].start < from || uses[k].start >= to || ul == last) continue;
      last = ul;
      shown++;
      kl_rules_relate_range(ctx, diag, uses[k].start, uses[k].end,
                            "the alias is used here: the same defect, fixed at the alias");
    }
  }
}

/* (a) for a bfloat type name the file defines only where bfloat is available (a typedef under
 * `#if defined(__HAVE_BFLOAT__)` with no `#else` definition) and uses outside a guard: without
 * bfloat the name is undefined there. One finding per name, at its first unguarded use; the
 * definition and the other uses are related locations. */
static void kl_bf_guard_only(struct kl_bf *bf) {
  struct kl_rule_ctx *ctx = bf->ctx;
  for (size_t i = 0; i < bf->ndefs; i++) {
    const struct kl_bf_def *d = &bf->defs[i];
    if (!d->bfloat || !kl_bf_guarded(bf, d->at)) continue;
    bool only = true, first = true;
    for (size_t k = 0; k < bf->ndefs && only; k++) {
      if (strcmp(bf->defs[k].name, d->name)) continue;
      first = first && k >= i;
      only = kl_bf_guarded(bf, bf->defs[k].at);
    }
    if (!only || !first) continue;
    size_t wn = strlen(d->name);
    struct kl_bf_range *uses;
    size_t n = kl_bf_unguarded_uses(bf, d->name, wn, &uses);
    if (!n) continue;
    struct kl_diag *diag = kl_bf_report_at(
        bf, uses[0].start, uses[0].end,
        kl_arena_printf(ctx->arena,
                        "`%s` is defined only where bfloat is available (under a guard, with no "
                        "`#else` fallback), and used here outside an availability guard: this "
                        "does not compile "
                        "before MSL 3.1 (macOS 13 and older), on any GPU: define a fallback "
                        "under `#else`, or guard its uses",
                        d->name));
    if (!diag) continue;
    /* The fix guards every use, or none: a fix that guards some leaves the build broken. */
    size_t saved = bf->nguards;
    for (size_t k = 0; k < n; k++)
      if (!kl_bf_guard_add(bf, diag, uses[k].start, uses[k].end)) {
        bf->nguards = saved;
        break;
      }
    kl_rules_relate_range(ctx, diag, d->at, d->at + (uint32_t)wn,
                          "defined here, only where bfloat is available");
    uint32_t last = kl_rules_line(ctx, uses[0].start);
    for (size_t k = 1, shown = 0; k < n && shown < 8; k++) {
      uint32_t line = kl_rules_line(ctx, uses[k].start);
      if (line == last) continue;
      last = line;
      shown++;
      kl_rules_relate_range(ctx, diag, uses[k].start, uses[k].end,
                            "also used here, outside a guard");
    }
  }
}

static int kl_bf_mention_cmp(const void *x, const void *y) {
  const struct kl_bf_mention *a = x, *b = y;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Whether the unit mentions bfloat at all, in its buffer or in the instantiations it left out. */
static bool kl_bf_mentions_any(const struct kl_unit *u) {
  if (strstr(u->buf, "bfloat")) return true; /* buf is NUL-terminated */
  for (size_t i = 0; i < u->ninsts; i++)
    if (u->insts[i].placeholder && strstr(u->insts[i].text, "bfloat")) return true;
  return false;
}

/* (a) at node n, if it mentions a built-in bfloat spelling. */
static void kl_bf_use(struct kl_bf *bf, TSNode n) {
  const char *t = ts_node_type(n);
  uint32_t s0 = ts_node_start_byte(n), e0 = ts_node_end_byte(n);
  if (!strcmp(t, "type_identifier") || !strcmp(t, "identifier")) {
    /* A built-in spelling, not a name the file aliases: the alias is reported at its
     * definition (where a built-in spelling stands), its uses are the same defect. */
    const char *w = bf->buf + s0;
    if (kl_bf_builtin_use(bf, w, e0 - s0) && !kl_bf_is_definition_name(n))
      kl_bf_mention(bf, s0, e0, w, e0 - s0);
  } else if (!strcmp(t, "preproc_arg") && kl_bf_is(ts_node_parent(n), "preproc_def")) {
    /* `#define BF bfloat` names the type just as `using BF = bfloat;` does. */
    char *text = kl_dialect_node_text(bf->ctx->arena, bf->ctx->unit, n);
    size_t wn;
    const char *w = kl_bf_text_names(bf, text, &wn);
    TSNode mname = kl_bf_field(ts_node_parent(n), "name");
    if (w && kl_bf_builtin(w, wn) && !kl_bf_find_def(bf, w, wn, false) && !kl_node_null(mname) &&
        kl_bf_macro_used_unguarded(bf,
                                   kl_dialect_node_text(bf->ctx->arena, bf->ctx->unit, mname))) {
      uint32_t off = s0 + (uint32_t)(w - text);
      kl_bf_mention(bf, off, off + (uint32_t)wn, w, wn);
    }
  }
}

/* Whether text has an `#include "..."` of a project header. */
static bool kl_bf_local_includes(const char *text) {
  for (const char *p = strstr(text, "#include"); p; p = strstr(p + 8, "#include")) {
    const char *q = p + 8;
    while (*q == ' ' || *q == '\t') q++;
    if (*q == '"') return true;
  }
  return false;
}

/* Files that can only run on Apple family 10 (Metal Performance Primitives, directly or through
 * a project header, or its tensor ops), where bfloat is native and MSL is 4; and headers that
 * only such files of the run include (the engine's include graph says which). */
static bool kl_bf_family10_only(struct kl_bf *bf) {
  if (bf->ctx->family10_only) return true;
  const char *path = bf->ctx->src ? bf->ctx->src->path : NULL;
  const char *slash = path ? strrchr(path, '/') : NULL;
  const char *dir = slash ? kl_arena_strndup(bf->ctx->arena, path, (size_t)(slash - path)) : ".";
  return kl_expand_family10(bf->ctx->arena, bf->buf, bf->len, kl_bf_pp(bf), dir);
}

/* Whether the rule may report on bf's file: not one that only Apple family 10 runs (asked once,
 * at the first finding). */
static bool kl_bf_allowed(struct kl_bf *bf) {
  if (!bf->have_family10) bf->family10 = kl_bf_family10_only(bf);
  bf->have_family10 = true;
  return !bf->family10;
}

static void kl_bf_check(struct kl_rule_ctx *ctx) {
  const struct kl_settings *s = ctx->settings;
  if (!ctx->unit || !ctx->unit->tree || !ctx->model) return;
  bool emulated = !s || s->apple_family < KL_BF_NATIVE_FAMILY;
  struct kl_bf bf = {0};
  bf.ctx = ctx;
  bf.buf = ctx->unit->buf;
  bf.len = ctx->unit->len;
  /* Every name this rule reports, aliases and bindings included, is spelled with "bfloat"
   * somewhere in the unit or in a Python binding, so most files need no walk at all. */
  bool binds = false;
  for (size_t i = 0; i < ctx->ndispatches && !binds; i++) binds = ctx->dispatches[i].nbfloat > 0;
  for (size_t i = 0; i < ctx->nxinsts && !binds; i++)
    for (size_t k = 0; k < ctx->xinsts[i].ntargs && !binds; k++)
      binds = strstr(ctx->xinsts[i].targs[k], "bfloat") != NULL;
  if (!kl_bf_mentions_any(ctx->unit) && !binds) return;
  /* A header only family-10 files include is known for free; whether the file itself needs
   * family 10 reads its headers, and is asked only when there is something to report. */
  if (ctx->family10_only) return;
  bf.local_includes = kl_bf_local_includes(ctx->unit->buf);
  /* A project header may overload exp or max for bfloat, computing in float and returning
   * bfloat (MLX's bf16_math.h does), and the unit does not see it: a math call's result is
   * typed (float, on bfloat) only in a file that includes none. */
  bf.comp = (struct kl_types_bfloat){
      .a = ctx->arena,
      .m = ctx->model,
      .types = ctx->types,
      .math_builtins = !bf.local_includes,
      .xdefs = ctx->xdefs};
  kl_bf_scan_guards(&bf);
  bool msl31 = (s && s->metal_version >= 310) || bf.needs_msl31;
  bf.want_uses = !msl31;
  kl_bf_collect_defs(&bf);
  kl_bf_resolve_defs(&bf);
  if (emulated) {
    kl_bf_binding_notes(&bf);
    kl_bf_collect_notes(&bf);
  }
  if (!msl31) {
    for (size_t i = 0; i < bf.nuses; i++) kl_bf_use(&bf, bf.uses[i]);
    kl_bf_instance_mentions(&bf);
    if (bf.nmentions > 1) qsort(bf.mentions, bf.nmentions, sizeof *bf.mentions, kl_bf_mention_cmp);
    /* Up to here nothing is reported: a file with nothing to report is not asked whether only
     * family 10 runs it (its headers are read for that). */
    bool any = bf.nmentions > 0;
    for (size_t i = 0; i < bf.ndefs && !any; i++)
      any = bf.defs[i].bfloat && kl_bf_guarded(&bf, bf.defs[i].at);
    if (!any || !kl_bf_allowed(&bf)) msl31 = true;
  }
  if (!msl31) {
    size_t first = ctx->out->n;
    for (size_t i = 0; i < bf.nmentions; i++) {
      const struct kl_bf_mention *mt = &bf.mentions[i];
      kl_bf_report(&bf, mt->start, mt->end, mt->name, mt->n);
    }
    kl_bf_guard_only(&bf);
    kl_bf_relate_alias_uses(&bf, first);
    kl_bf_guard_fixes(&bf);
  }
  if (bf.nnotes && kl_bf_allowed(&bf)) kl_bf_report_notes(&bf);
  kl_types_bfloat_free(&bf.comp);
}

const struct kl_rule kl_rule_bfloat_target = {
    .id = "bfloat-target",
    .default_severity = KL_SEV_WARNING,
    .implemented = true,
    .summary = "Native bfloat that does not compile before MSL 3.1 (a), or bfloat arithmetic "
               "emulated before Apple family 9 (b)",
    .what =
        "Two problems, told apart in the message. (a) A warning, on every target: a mention of "
        "native `bfloat`, `bfloat2`/`bfloat3`/`bfloat4`, a bfloat matrix or "
        "`simdgroup_bfloat8x8` outside an availability guard. A bfloat alias (`typedef`, "
        "`using`, `#define`; `bfloat16_t` from a header) is one finding, at the alias; its uses "
        "in the file are its related locations, not findings. An explicit "
        "instantiation with a bfloat argument is one finding, at the instantiation. A type name "
        "the file defines only under a guard, with no `#else` fallback (`#if "
        "defined(__HAVE_BFLOAT__)` `typedef bfloat bf16_t;` `#endif`), and uses outside one is "
        "undefined without bfloat: one finding, at its first unguarded use (the definition and "
        "the other uses related). Guards: "
        "`#if defined(__HAVE_BFLOAT__)` (or `defined __HAVE_BFLOAT__`, `#ifdef`), `#if "
        "__METAL_VERSION__ >= 310` or later, any `#if` whose value those decide (`&&`, `||`, "
        "`!` are evaluated), a macro the file or its project `#undef`s when "
        "`__METAL_VERSION__ < 310` (as ggml does) or `#define`s only under a guard, and the "
        "project macros listed in `.lintrc` as `bfloat-guards = NAME, ...`; the "
        "`#else` fallback of a guard is clean too, and so is every use of a type the file "
        "defines under a guard with a portable fallback. A guard on any other macro (`#ifndef "
        "METAL_3_0`, `__METAL_VERSION__ >= 300`) does not count. (a) is off where the build "
        "requires MSL 3.1: `metal-version = 3.1` in `.lintrc` (or `--metal-version 3.1`), a "
        "project whose build states 3.1 or later (`-std=metal3.1`, a macOS 14 deployment "
        "target, `MTLLanguageVersion3_1`) or, stating nothing, guards none of its bfloat in two "
        "files or more, a "
        "file that `#error`s when `__METAL_VERSION__ < 310`, and MLX `metal_kernel` sources "
        "(MLX compiles them with MSL 3.1 or later); `kernlint --show-settings FILE` shows "
        "which applies. (b) A note, under the target in force "
        "(default `m1`; `--target` or `target =` in `.lintrc`) when it is before Apple family "
        "9: once per operation computed in bfloat, at the first explicit instantiation (a macro "
        "that stands for a list of template arguments, `#define BF_TYPES bfloat, bfloat4`, is "
        "spread) or non-template kernel that computes at it, naming them all (the others are "
        "related locations: one defect, fixed once; a kernel template defined in a header and "
        "instantiated by the files that include it is reported in the header, at its operation, "
        "naming those instantiations), and once per MLX template binding "
        "(`template=[(\"T\", "
        "mx.bfloat16)]`) whose kernel computes in bfloat: `+ - * /`, their "
        "compound assignments or unary minus, with both operands bfloat, "
        "followed into the helpers it calls with T and into the functors it calls (`Op op; "
        "op(a, b)` with `Op = Sum<T>`, `op.apply(x)`, a temporary `Op{}(a, b)`; a struct's "
        "fields and member types such as `typename K::loader_t` are typed under its "
        "arguments), in the file or in the local headers it includes (for a header, also "
        "those the files including it include before it: found as the preprocessor finds "
        "them, read only for a call that passes a bfloat value or names a bfloat type), and "
        "not into a branch the instantiation's "
        "constants rule out (`if (kScale)` with kScale = false). Loading, storing and "
        "converting bfloat are "
        "not computing, and neither is bfloat with float (MSL promotes it to float) nor a math "
        "builtin on bfloat (`exp`, `tanh`, `sqrt`, `max`: MSL has no bfloat overloads, so the "
        "argument converts to float and the call computes and returns float); a call "
        "the analysis cannot follow (a function no file it sees defines) does not count. "
        "The arithmetic is a related "
        "location of the note, where the note is not at it. Guards do not help (b). Where "
        "(a) and (b) fall on one line, one warning says both. Files that can only run on Apple "
        "family 10 (they include `<MetalPerformancePrimitives/...>`, directly or through a "
        "project header, or use `mpp::tensor_ops`), and headers that only such files of the run "
        "include (directly or through other headers), are not reported for targets below Apple "
        "family 10, which cannot run them (and family 10 has native bfloat and MSL 4); a header "
        "that another file also includes keeps its findings. One finding per "
        "line. Fix (`--fix`, (a) only): the whole lines of the unguarded construct (an alias, "
        "a `#define`, an instantiation, a kernel) go under `#if defined(__HAVE_BFLOAT__)` ... "
        "`#endif`, adjacent ones under one guard; the `#else` fallback is yours to write.",
    .why = "(a) bfloat exists from MSL 3.1 (macOS 14): a build with MSL 3.0 or older (macOS 13, "
           "or a host that asks for metal3.0) fails to compile the whole library, on any GPU, "
           "float kernels included. (b) Apple GPUs before family 9 (M1, M2, A14 to A16) have no "
           "bfloat arithmetic: the compiler emulates each bfloat operation in float with extra "
           "conversions, so a kernel that computes in bfloat runs slower than the same kernel "
           "in half or float, while it looks native in the source. Storing bfloat and "
           "computing in float costs only the conversions, on every GPU.",
    .example = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "// (a) and (b): unguarded, and the multiply is in bfloat.\n"
               "kernel void scale(device const bfloat* x [[buffer(0)]],\n"
               "                  device bfloat* y [[buffer(1)]],\n"
               "                  uint i [[thread_position_in_grid]]) {\n"
               "  y[i] = x[i] * bfloat(2.0f);\n"
               "}\n",
    .instead = "#include <metal_stdlib>\n"
               "using namespace metal;\n"
               "\n"
               "// (a) guarded, with a fallback; (b) stored in bfloat, computed in float.\n"
               "#if defined(__HAVE_BFLOAT__)\n"
               "typedef bfloat store_t;\n"
               "#else\n"
               "typedef half store_t;\n"
               "#endif\n"
               "kernel void scale(device const store_t* x [[buffer(0)]],\n"
               "                  device store_t* y [[buffer(1)]],\n"
               "                  uint i [[thread_position_in_grid]]) {\n"
               "  y[i] = store_t(float(x[i]) * 2.0f);\n"
               "}\n",
    .check = kl_bf_check,
    .reads_calls = true,
};
