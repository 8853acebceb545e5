/* Each kernel's share of a unit's facts, kept across versions of a document (factkeep.h). */
#include "analyzer/passes/factkeep.h"

#include <stdlib.h>
#include <string.h>
#include <tree_sitter/api.h>

#include "analyzer/core/node.h"
#include "analyzer/core/xdefs.h"
#include "analyzer/ir/lower.h"
#include "analyzer/passes/facts.h"
#include "analyzer/passes/facts_int.h"
#include "analyzer/passes/race.h"
#include "grammar/inst.h"
#include "grammar/lex.h"

/* No function: a pointer kept that was NULL. */
#define KL_FK_NONE UINT32_MAX

/* A variable of the model as its function's index and its place there: arr 1 params, 2 locals,
 * 3 threadgroup declarations; 0 for NULL. */
struct kl_fk_var {
  uint32_t fn, idx;
  uint8_t arr;
};

/* The records a kernel added, with their model pointers as indices (the records' own pointers
 * are cleared: the model they named is gone). */
struct kl_fk_barrier {
  struct kl_facts_barrier x;
  uint32_t kernel;
};
struct kl_fk_race {
  struct kl_facts_race x;
  uint32_t kernel;
};
/* An access's kernel, the function whose code holds it, and the buffer it reaches. */
struct kl_fk_where {
  uint32_t kernel, owner;
  struct kl_fk_var buffer;
};
struct kl_fk_access {
  struct kl_access x;
  struct kl_fk_where w;
};
struct kl_fk_bg {
  struct kl_bgaccess x;
  struct kl_fk_where w;
  struct kl_facts_guard guard;
  struct kl_facts_bound bound;
  uint8_t covered;
};
struct kl_fk_run {
  struct kl_bgaccess_run x;
  uint32_t kernel;
};

/* One kernel's share of the facts. Record numbers (a barrier's run, an access's index_rep, a
 * bounds-guard record's run and a run's first record) count from the kernel's first. */
struct kl_fk_entry {
  bool kept; /* it may be taken (see kl_fk_close) */
  uint64_t ins;   /* instructions counted against the unit's budget */
  uint32_t pairs; /* race pairs decided */
  uint64_t cold;  /* race valuations tried, each pair's once (kl_race_memo_distinct) */
  uint64_t race_asked; /* race pairs asked (kl_race_memo_stats): a bound on what it remembers */
  uint32_t nfns;  /* lowerings */
  bool incomplete;
  uint16_t nlowered;
  struct kl_fk_barrier *barriers;
  size_t nbarriers;
  struct kl_fk_race *races;
  size_t nraces;
  struct kl_fk_access *access;
  size_t naccess;
  struct kl_fk_bg *bg;
  size_t nbg;
  struct kl_fk_run *runs;
  size_t nruns;
  /* The names it asked the headers' definitions of, in order, and their answers: asked again
   * before it is taken (kl_xdefs_order_free makes the answers independent of the order). */
  const char **asked;
  enum kl_scope *answers;
  size_t nasked;
};

/* What is kept of a version: its unit's text and tree (a copy, which keeps the nodes kept
 * readable), whether some function names threadgroup memory, the settings, and per function of
 * its model where its definition starts and its entry (kept false for any but a kernel). */
struct kl_fk_version {
  struct kl_arena *a;
  char *buf;
  uint32_t len;
  TSTree *tree;
  bool others;
  uint64_t settings;
  uint64_t insts; /* a hash of the unit's explicit instantiations (kl_fk_insts) */
  struct kl_keyword *kws; /* the unit's blanked keywords (a copy), by offset */
  size_t nkws;
  uint64_t cold; /* its race pairs' valuations, each kernel's pair once (kl_race_memo_distinct) */
  uint64_t asked; /* and the pairs asked */
  uint32_t *starts;
  struct kl_fk_entry *entries;
  size_t nfns;
};

struct kl_factkeep {
  struct kl_fk_version old, cur; /* the version kept (old.a NULL: none), the one being made */
  bool can;       /* kernels may be taken from old */
  bool replayed;  /* one was */
  bool fresh;     /* the next unit takes nothing (a unit lowered again whole) */
  uint32_t p, old_end, new_end; /* the edit: old bytes [p, old_end) are new [p, new_end) */
  uint32_t *to_old, *to_new;    /* function indices between the two models (KL_FK_NONE) */
  bool *reads;                  /* per function of the new model: it may read the edited one */
  TSNode *tops;                 /* the new tree's root children, for finding nodes */
  size_t ntops;
  /* The kernel being lowered, and where the tables stood when it began. */
  uint32_t kernel;
  const struct kl_fk_entry *taken; /* its entry when taken from old */
  uint64_t ins0, cold0, asked0;
  uint32_t pairs0, nfns0;
  size_t nb0, nt0, ng0, nr0;
  uint64_t cold, asked; /* the unit's races: valuations with nothing remembered, pairs asked */
  size_t stat_kept, stat_lowered;
  /* The race memo runs use (kl_fk_memo); warm: it held pairs when this run began. */
  struct kl_race_memo *memo;
  bool warm;
};

struct kl_factkeep *kl_factkeep_new(void) {
  struct kl_factkeep *k = kl_arena_xmalloc(sizeof *k);
  memset(k, 0, sizeof *k);
  return k;
}

static void kl_fk_version_free(struct kl_fk_version *v) {
  if (v->tree) kl_node_tree_delete(v->tree);
  if (v->a) kl_arena_delete(v->a);
  memset(v, 0, sizeof *v);
}

/* What a run leaves behind: its maps and lists. */
static void kl_fk_run_free(struct kl_factkeep *k) {
  free(k->to_old);
  free(k->to_new);
  free(k->reads);
  free(k->tops);
  k->to_old = k->to_new = NULL;
  k->reads = NULL;
  k->tops = NULL;
  k->ntops = 0;
}

void kl_factkeep_free(struct kl_factkeep *k) {
  if (!k) return;
  kl_fk_version_free(&k->old);
  kl_fk_version_free(&k->cur);
  kl_fk_run_free(k);
  kl_race_memo_delete(k->memo);
  free(k);
}

void kl_factkeep_stats(const struct kl_factkeep *k, size_t *kept, size_t *lowered) {
  *kept = k->stat_kept;
  *lowered = k->stat_lowered;
}

/* ---- Settings -------------------------------------------------------------------------------- */

static uint64_t kl_fk_mix(uint64_t h, const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

static uint64_t kl_fk_mix_str(uint64_t h, const char *s) {
  return s ? kl_fk_mix(h, s, strlen(s) + 1) : kl_fk_mix(h, "\xff", 1);
}

/* Whether the blanked keywords of the two versions (old o[0, no), new w[0, nw)) are the same
 * outside the edit, those past it moved; *in says whether either version has one inside it. The
 * buffer has them as blanks: `device` for `thread`, or `constant ` taken out, leaves it as it was
 * or changes only blanks. */
static bool kl_fk_same_keywords(const struct kl_factkeep *k, const struct kl_keyword *o,
                                size_t no, const struct kl_keyword *w, size_t nw, bool *in) {
  int64_t d = (int64_t)k->new_end - (int64_t)k->old_end;
  size_t i = 0, j = 0;
  *in = false;
  for (;;) {
    while (i < no && o[i].off < k->old_end && o[i].off + o[i].len > k->p) i++, *in = true;
    while (j < nw && w[j].off < k->new_end && w[j].off + w[j].len > k->p) j++, *in = true;
    if (i == no || j == nw) return i == no && j == nw;
    int64_t at = o[i].off >= k->old_end ? o[i].off + d : o[i].off;
    if (o[i].kind != w[j].kind || o[i].len != w[j].len || at != w[j].off) return false;
    i++, j++;
  }
}

/* A hash of the texts of u's explicit instantiations: a macro's are kept beside the buffer (one
 * space stands for the call), so an edit of its arguments leaves the buffer as it was. */
static uint64_t kl_fk_insts(const struct kl_unit *u) {
  uint64_t h = kl_fk_mix(1469598103934665603ull, &u->ninsts, sizeof u->ninsts);
  for (size_t i = 0; i < u->ninsts; i++) {
    const struct kl_inst *in = &u->insts[i];
    h = kl_fk_mix(h, &in->placeholder, sizeof in->placeholder);
    h = kl_fk_mix_str(h, in->function);
    h = kl_fk_mix_str(h, in->host_name);
    for (size_t j = 0; j < in->ntargs; j++) h = kl_fk_mix_str(h, in->targs[j]);
    h = in->text ? kl_fk_mix(h, in->text, in->textlen) : kl_fk_mix(h, "\xff", 1);
  }
  return h;
}

/* A hash of everything the settings say (a change of .lintrc takes nothing from before). */
static uint64_t kl_fk_settings(const struct kl_settings *s) {
  uint64_t h = 14695981039346656037ull;
  if (!s) return h;
  h = kl_fk_mix_str(h, s->target);
  h = kl_fk_mix(h, &s->apple_family, sizeof s->apple_family);
  h = kl_fk_mix(h, &s->assume_rounded_grid, sizeof s->assume_rounded_grid);
  h = kl_fk_mix(h, &s->metal_version, sizeof s->metal_version);
  h = kl_fk_mix(h, s->level, sizeof s->level);
  for (size_t i = 0; i < s->nbfloat_guards; i++) h = kl_fk_mix_str(h, s->bfloat_guards[i]);
  h = kl_fk_mix(h, "|", 1);
  for (size_t i = 0; i < s->nunit_strides; i++) h = kl_fk_mix_str(h, s->unit_strides[i]);
  return h;
}

/* ---- The two trees --------------------------------------------------------------------------- */

/* Whether subtree o of the old tree and n of the new are alike, n moved by d bytes: the same
 * subtree, or the same kinds over the same (moved) spans all the way down. */
static bool kl_fk_alike(TSNode o, TSNode n, int64_t d) {
  if ((int64_t)ts_node_start_byte(o) + d != ts_node_start_byte(n) ||
      (int64_t)ts_node_end_byte(o) + d != ts_node_end_byte(n))
    return false;
  if (o.id == n.id) return true;
  TSTreeCursor co = ts_tree_cursor_new(o), cn = ts_tree_cursor_new(n);
  bool same = true;
  for (;;) {
    TSNode x = ts_tree_cursor_current_node(&co), y = ts_tree_cursor_current_node(&cn);
    if (ts_node_symbol(x) != ts_node_symbol(y) || ts_node_is_missing(x) != ts_node_is_missing(y) ||
        (int64_t)ts_node_start_byte(x) + d != ts_node_start_byte(y) ||
        (int64_t)ts_node_end_byte(x) + d != ts_node_end_byte(y) ||
        ts_tree_cursor_current_field_id(&co) != ts_tree_cursor_current_field_id(&cn)) {
      same = false;
      break;
    }
    /* A shared subtree below is alike all the way down. */
    bool dx = x.id != y.id && ts_tree_cursor_goto_first_child(&co);
    bool dy = x.id != y.id && ts_tree_cursor_goto_first_child(&cn);
    if (dx != dy) {
      same = false;
      break;
    }
    if (dx) continue;
    bool done = false;
    for (;;) {
      bool sx = ts_tree_cursor_goto_next_sibling(&co), sy = ts_tree_cursor_goto_next_sibling(&cn);
      if (sx != sy) {
        same = false;
        done = true;
        break;
      }
      if (sx) break;
      bool px = ts_tree_cursor_goto_parent(&co);
      ts_tree_cursor_goto_parent(&cn);
      if (!px) {
        done = true;
        break;
      }
      /* Back at the roots of the two walks: done. */
      if (ts_node_eq(ts_tree_cursor_current_node(&co), o)) {
        done = true;
        break;
      }
    }
    if (done) break;
  }
  ts_tree_cursor_delete(&co);
  ts_tree_cursor_delete(&cn);
  return same;
}

/* The children of o (old) and n (new) side by side: each one before the edit or past it alike
 * (moved), their fields the same. *ho and *hn are the pair that holds the edit, when one does
 * (else null). False when a pair differs or the edit is held by no one child where it touches
 * one. */
static bool kl_fk_children(const struct kl_factkeep *k, TSNode o, TSNode n, TSNode *ho,
                           TSNode *hn) {
  int64_t d = (int64_t)k->new_end - (int64_t)k->old_end;
  *ho = *hn = (TSNode){{0}, NULL, NULL};
  if (ts_node_child_count(o) != ts_node_child_count(n)) return false;
  TSTreeCursor co = ts_tree_cursor_new(o), cn = ts_tree_cursor_new(n);
  bool ok = true;
  for (bool more = ts_tree_cursor_goto_first_child(&co) && ts_tree_cursor_goto_first_child(&cn);
       more && ok;
       more = ts_tree_cursor_goto_next_sibling(&co) && ts_tree_cursor_goto_next_sibling(&cn)) {
    TSNode x = ts_tree_cursor_current_node(&co), y = ts_tree_cursor_current_node(&cn);
    uint32_t xs = ts_node_start_byte(x), xe = ts_node_end_byte(x);
    if (ts_tree_cursor_current_field_id(&co) != ts_tree_cursor_current_field_id(&cn)) {
      ok = false;
    } else if (xe <= k->p && !(xs == xe && xs == k->p)) {
      ok = kl_fk_alike(x, y, 0);
    } else if (xs >= k->old_end && !(xs == xe && xs == k->p)) {
      ok = kl_fk_alike(x, y, d);
    } else if (xs < k->p && xe > k->old_end && kl_node_null(*ho) && ts_node_start_byte(y) == xs &&
               (int64_t)ts_node_end_byte(y) == (int64_t)xe + d) {
      *ho = x;
      *hn = y;
    } else {
      ok = false;
    }
  }
  ts_tree_cursor_delete(&co);
  ts_tree_cursor_delete(&cn);
  return ok;
}

/* The name a function definition declares (an identifier, a qualified or template name, an
 * operator's), or null. */
static TSNode kl_fk_fn_name(TSNode fn) {
  TSNode d = kl_node_field(fn, "declarator");
  for (int i = 0; i < 16 && !kl_node_null(d); i++) {
    if (!strcmp(ts_node_type(d), "function_declarator")) return kl_node_field(d, "declarator");
    d = kl_node_field(d, "declarator");
  }
  return (TSNode){{0}, NULL, NULL};
}

/* Down from o (old) and n (new), which both hold the edit, to the function whose body holds it:
 * every other child alike (moved past the edit); *body the new body. False when the edit is not
 * inside one function's body, or the trees differ elsewhere. Then *sig is the new function whose
 * definition holds the edit outside its body and its name (its signature, its template's
 * parameters), everything outside it alike, when there is one; else *strct is the outermost named
 * struct or class whose body holds the edit, everything outside that body alike, when there is
 * one (each null otherwise). */
static bool kl_fk_descend(const struct kl_factkeep *k, TSNode o, TSNode n, TSNode *body,
                          TSNode *strct, TSNode *sig) {
  TSNode none = {{0}, NULL, NULL}, up = none;
  bool outside = false; /* the outermost struct on the way holds the edit outside its body */
  *strct = none;
  *sig = none;
  for (int depth = 0; depth < 64; depth++) {
    if (ts_node_symbol(o) != ts_node_symbol(n) || ts_node_start_byte(o) != ts_node_start_byte(n))
      return false;
    bool fn = kl_node_is_kind(n, KL_KIND_FUNCTION_DEFINITION);
    const char *type = ts_node_type(n);
    bool sc = kl_node_null(*strct) && !outside &&
              (!strcmp(type, "struct_specifier") || !strcmp(type, "class_specifier"));
    TSNode nbody = fn ? kl_node_field(n, "body") : (TSNode){{0}, NULL, NULL};
    TSNode next_o, next_n;
    if (!kl_fk_children(k, o, n, &next_o, &next_n) || kl_node_null(next_o)) return false;
    if (sc) {
      /* Only a struct declared on its own: one that declares a variable or a typedef too
       * (`struct P {...} params;`) is read by that name as well. */
      const char *in = kl_node_null(up) ? "" : ts_node_type(up);
      bool alone = !strcmp(in, "translation_unit") || !strcmp(in, "template_declaration") ||
                   !strcmp(in, "declaration_list");
      if (alone && ts_node_eq(next_n, kl_node_field(n, "body")) &&
          !kl_node_null(kl_node_field(n, "name")))
        *strct = n;
      else
        outside = true;
    }
    if (fn) {
      /* The edit within the body's braces (strictly: the child found starts before it and ends
       * after it). */
      if (!ts_node_eq(next_n, nbody)) {
        TSNode name = kl_fk_fn_name(n);
        if (!kl_node_null(name) &&
            (ts_node_end_byte(name) <= k->p || ts_node_start_byte(name) >= k->new_end))
          *sig = n;
        return false;
      }
      *body = nbody;
      return true;
    }
    /* A template's parameters: the function it declares. */
    if (!strcmp(type, "template_declaration") &&
        ts_node_eq(next_n, kl_node_field(n, "parameters"))) {
      for (uint32_t i = 0, c = ts_node_named_child_count(n); i < c; i++) {
        TSNode x = ts_node_named_child(n, i);
        if (kl_node_is_kind(x, KL_KIND_FUNCTION_DEFINITION)) *sig = x;
      }
      return false;
    }
    up = n;
    o = next_o;
    n = next_n;
  }
  return false;
}

/* Whether the edit only adds or takes away blanks between two of the file's top-level items
 * (a line opened between two functions): every child of the new root is one of the old root's,
 * alike and moved past the edit, so no kernel reads anything new. */
static bool kl_fk_blank_between(const struct kl_factkeep *k, const char *ob, const char *nb,
                                TSNode o, TSNode n) {
  for (uint32_t i = k->p; i < k->old_end; i++)
    if (!strchr(" \t\n\r\f\v", ob[i]) || !ob[i]) return false;
  for (uint32_t i = k->p; i < k->new_end; i++)
    if (!strchr(" \t\n\r\f\v", nb[i]) || !nb[i]) return false;
  TSNode ho, hn;
  return ts_node_symbol(o) == ts_node_symbol(n) && kl_fk_children(k, o, n, &ho, &hn) &&
         kl_node_null(ho);
}

/* ---- What may read the edited function ------------------------------------------------------- */

/* An identifier of the new text: where it is, whether on a preprocessor line, and on a #define
 * or #undef line, 1 + the index of the name it defines (0 elsewhere). */
struct kl_fk_tok {
  uint32_t at, len;
  bool pp;
  uint32_t def;
};

/* The identifiers of t[0, n), comments, strings and character literals skipped (grammar/lex.h);
 * *unsure set when the scan may miss a name: some preprocessor line pastes tokens (##), or a
 * quote does not close on its line. In an expanded text (every macro call in it already
 * written out) a #define's pasting hides nothing. malloc'd. */
static struct kl_fk_tok *kl_fk_tokens(const char *t, uint32_t n, bool expanded, size_t *count,
                                      bool *unsure) {
  struct kl_fk_tok *v = NULL;
  size_t nv = 0, cap = 0;
  bool pp = false, line_start = true;
  /* On a #define or #undef line, 1 + the index of its name; want while that name is to come. */
  uint32_t def = 0;
  bool want = false;
  *unsure = false;
  for (uint32_t i = 0; i < n;) {
    char c = t[i];
    if (c == '\n') {
      /* A preprocessor line goes on past a backslash at its end (before a CR or not). */
      uint32_t b = i > 0 && t[i - 1] == '\r' ? i - 1 : i;
      if (!(b > 0 && t[b - 1] == '\\')) pp = want = false, def = 0;
      line_start = true;
      i++;
      continue;
    }
    uint32_t after = kl_lex_skip_comment(t, n, i);
    if (after != i) {
      i = after;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      i++;
      continue;
    }
    /* A directive starts a line that does not go on from one (there `##` may start it). */
    if (c == '#' && line_start && !pp) {
      pp = true;
      uint32_t w = i + 1;
      while (w < n && (t[w] == ' ' || t[w] == '\t')) w++;
      if ((n - w >= 6 && !memcmp(t + w, "define", 6)) || (n - w >= 5 && !memcmp(t + w, "undef", 5)))
        want = true;
      i = w;
      while (i < n && kl_lex_ident_char(t[i])) i++;
      line_start = false;
      continue;
    }
    line_start = false;
    if (c == '#' && pp && i + 1 < n && t[i + 1] == '#' && !(expanded && (def || want)))
      *unsure = true;
    if (c == '"' || c == '\'') {
      uint32_t e = kl_lex_skip_literal(t, n, i);
      /* A quote that does not close on its line hides what follows it from this scan. */
      if (e < i + 2 || t[e - 1] != c) *unsure = true;
      i = e;
      continue;
    }
    if (kl_lex_ident_start(c)) {
      uint32_t s = i;
      while (i < n && kl_lex_ident_char(t[i])) i++;
      KL_XVEC_PUSH(v, nv, cap);
      if (want) def = (uint32_t)nv + 1, want = false;
      v[nv++] = (struct kl_fk_tok){s, i - s, pp, def};
      continue;
    }
    i = c >= '0' && c <= '9' ? kl_lex_skip_number(t, n, i) : i + 1;
  }
  *count = nv;
  return v;
}

/* The first token at or after byte off. */
static size_t kl_fk_tok_at(const struct kl_fk_tok *v, size_t n, uint32_t off) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].at < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static bool kl_fk_tok_is(const char *buf, const struct kl_fk_tok *t, const char *s) {
  return s && strlen(s) == t->len && !memcmp(buf + t->at, s, t->len);
}

/* A file-scope mention at token i (of v[0, nt), the tokens of buf[0, len)) that reads nothing into
 * a kernel's code: in an explicit instantiation of the function named there (`template
 * [[host_name("x")]] kernel T f<float>;`), in a type alias of a function's type (`typedef
 * decltype(f<float>) T;`), or a struct's name where it is declared. Else, for an instantiation
 * of another function g that names it (a template argument), *inst is g's token (g's
 * specialisations read it); else the mention counts for every kernel. */
static bool kl_fk_inert(const char *buf, uint32_t len, const struct kl_fk_tok *v, size_t nt,
                        size_t i, size_t *inst) {
  *inst = SIZE_MAX;
  /* A struct's own name where it is defined or declared (`struct Op {`, `struct Op;`, `struct
   * Op : Base`, a specialisation's `struct Op<T, 8> {`): a member that reads the function is
   * named by its struct where it is used. */
  if (i > 0 &&
      (kl_fk_tok_is(buf, &v[i - 1], "struct") || kl_fk_tok_is(buf, &v[i - 1], "class"))) {
    uint32_t c = v[i].at + v[i].len;
    while (c < len && (buf[c] == ' ' || buf[c] == '\t' || buf[c] == '\n' || buf[c] == '\r')) c++;
    if (c < len && buf[c] == '<') {
      int depth = 0;
      for (; c < len && buf[c] != ';' && buf[c] != '{' && buf[c] != '}'; c++)
        if (buf[c] == '<') depth++;
        else if (buf[c] == '>' && --depth == 0) break;
      c = depth || c >= len ? len : c + 1; /* unbalanced: none of the below */
      while (c < len && (buf[c] == ' ' || buf[c] == '\t' || buf[c] == '\n' || buf[c] == '\r')) c++;
    }
    bool scope = c + 1 < len && buf[c] == ':' && buf[c + 1] == ':';
    if (c < len && (buf[c] == '{' || buf[c] == ';' || (buf[c] == ':' && !scope))) return true;
  }
  /* The statement's start: after the ';', '{' or '}' before it. */
  uint32_t s = v[i].at;
  while (s > 0 && buf[s - 1] != ';' && buf[s - 1] != '{' && buf[s - 1] != '}') s--;
  size_t first = kl_fk_tok_at(v, i + 1, s);
  /* Preprocessor lines before it (a #define of its arguments) are not the statement. */
  while (first < i && v[first].pp) first++;
  if (first > i) return false;
  /* The model gives a decltype alias no target (kl_type_alias), so what names the alias reads
   * nothing through it; were the model to follow one, its name would join the names. */
  if (kl_fk_tok_is(buf, &v[first], "typedef") || kl_fk_tok_is(buf, &v[first], "using")) {
    for (size_t j = first; j < i; j++)
      if (kl_fk_tok_is(buf, &v[j], "decltype")) return true;
    return false;
  }
  if (!kl_fk_tok_is(buf, &v[first], "template")) return false;
  uint32_t after = v[first].at + v[first].len;
  while (after < len && (buf[after] == ' ' || buf[after] == '\t' || buf[after] == '\n' ||
                         buf[after] == '\r'))
    after++;
  if (after >= len || buf[after] == '<') return false; /* a template's declaration */
  /* The function instantiated: the identifier just before the first '<' outside [[...]]. */
  int attr = 0;
  for (uint32_t c = after; c + 1 < len && buf[c] != ';'; c++) {
    if (buf[c] == '[' && buf[c + 1] == '[') {
      attr++, c++;
    } else if (buf[c] == ']' && buf[c + 1] == ']') {
      attr--, c++;
    } else if (buf[c] == '<' && attr <= 0) {
      size_t g = kl_fk_tok_at(v, nt, c);
      if (g == 0 || g - 1 < first) return false;
      g--;
      for (uint32_t b = v[g].at + v[g].len; b < c; b++)
        if (buf[b] != ' ' && buf[b] != '\t') return false;
      if (g == i) return true;
      *inst = g;
      return false;
    }
  }
  return false;
}

/* A set of names, by hash (open addressing; malloc'd): each a pointer and a length. */
struct kl_fk_names {
  uint64_t *h;
  const char **s;
  size_t *len;
  size_t cap, n;
};

static uint64_t kl_fk_hash(const char *p, size_t n) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h | 1;
}

static bool kl_fk_names_has(const struct kl_fk_names *t, const char *p, size_t n) {
  if (!t->cap) return false;
  uint64_t h = kl_fk_hash(p, n);
  for (size_t i = (size_t)h & (t->cap - 1); t->h[i]; i = (i + 1) & (t->cap - 1))
    if (t->h[i] == h && t->len[i] == n && !memcmp(t->s[i], p, n)) return true;
  return false;
}

static void kl_fk_names_add(struct kl_fk_names *t, const char *s, size_t n) {
  if (!n || kl_fk_names_has(t, s, n)) return;
  if ((t->n + 1) * 2 > t->cap) {
    struct kl_fk_names o = *t;
    t->cap = o.cap ? o.cap * 2 : 64;
    t->h = kl_arena_xmalloc(t->cap * sizeof *t->h);
    t->s = kl_arena_xmalloc(t->cap * sizeof *t->s);
    t->len = kl_arena_xmalloc(t->cap * sizeof *t->len);
    memset(t->h, 0, t->cap * sizeof *t->h);
    t->n = 0;
    for (size_t i = 0; i < o.cap; i++)
      if (o.h[i]) kl_fk_names_add(t, o.s[i], o.len[i]);
    free(o.h);
    free(o.s);
    free(o.len);
  }
  uint64_t h = kl_fk_hash(s, n);
  size_t i = (size_t)h & (t->cap - 1);
  while (t->h[i]) i = (i + 1) & (t->cap - 1);
  t->h[i] = h;
  t->s[i] = s;
  t->len[i] = n;
  t->n++;
}

/* Function f's names as a reader: its own, and for a member its struct's (`Op` of `Op<T>`), which
 * is how a kernel names an operator or a constructor it calls. */
static void kl_fk_names_of(struct kl_fk_names *t, const struct kl_function *f) {
  if (f->name) kl_fk_names_add(t, f->name, strlen(f->name));
  if (f->owner) kl_fk_names_add(t, f->owner, strcspn(f->owner, "< \t"));
}

/* A placeholder instantiation's tokens (a macro's, its text out of the buffer). */
struct kl_fk_itoks {
  struct kl_fk_tok *v;
  size_t n;
  bool unsure;
};

/* Whether placeholder instantiation in (tokens it) names one of names other than the function
 * it instantiates: then that function's specialisations read it. */
static bool kl_fk_inst_names(const struct kl_inst *in, const struct kl_fk_itoks *it,
                             const struct kl_fk_names *names) {
  bool hit = it->unsure;
  for (size_t t = 0; t < it->n && !hit; t++)
    hit = !kl_fk_tok_is(in->text, &it->v[t], in->function) &&
          kl_fk_names_has(names, in->text + it->v[t].at, it->v[t].len);
  return hit;
}

/* Per function of the new model, whether it may read function f (reads[f] itself set), or, f
 * SIZE_MAX, struct strct (its members set): it names f (strct, a member) or a function that may
 * (a call, a template argument, a pointer), or an instantiation of it names one. A file-scope
 * mention other than those of kl_fk_inert, text the scan may misread (kl_fk_tokens), or an f
 * that is a free operator (called without its name) reads it into every function.
 *
 * A mention on a preprocessor line reads it into every function, but in an expanded unit: there
 * every macro call is written out where it is made, or, stamping out instantiations, kept
 * beside the buffer (scanned too), so a #define that names it reads nothing itself; its own
 * name is one more name, for a call the expansion left as written. */
static void kl_fk_readers(const struct kl_model *m, const char *buf, uint32_t len, size_t f,
                          TSNode strct, bool *reads) {
  size_t nf = m->nfunctions;
  memset(reads, 0, nf * sizeof *reads);
  const struct kl_function *ff = f < nf ? &m->functions[f] : NULL;
  const struct kl_unit *u = m->unit;
  bool expanded = u && u->expanded;
  /* An edit in a struct's body: the struct read as a whole, by its name and its members. */
  uint32_t ss = 0, se = 0;
  TSNode sname = {{0}, NULL, NULL};
  if (!ff) {
    sname = kl_node_field(strct, "name");
    ss = ts_node_start_byte(strct);
    se = ts_node_end_byte(strct);
    if (kl_node_null(sname) || strcmp(ts_node_type(sname), "type_identifier")) {
      for (size_t i = 0; i < nf; i++) reads[i] = true;
      return;
    }
  }
  /* A member is called by its name, or, an operator or a constructor, on a value its struct's
   * name declares (kl_fk_names_of names both); a free operator is called by neither. */
  bool all = ff && (!ff->name || (!ff->owner && !strncmp(ff->name, "operator", 8)));
  size_t nt = 0;
  bool unsure = false;
  struct kl_fk_tok *v = all ? NULL : kl_fk_tokens(buf, len, expanded, &nt, &unsure);
  if (!all && unsure) all = true;
  if (all) {
    for (size_t i = 0; i < nf; i++) reads[i] = true;
    free(v);
    return;
  }
  struct kl_fk_names names = {0};
  if (ff) {
    reads[f] = true;
    kl_fk_names_of(&names, ff);
  } else {
    const char *sn = buf + ts_node_start_byte(sname);
    size_t sl = ts_node_end_byte(sname) - ts_node_start_byte(sname);
    kl_fk_names_add(&names, sn, sl);
    for (size_t i = 0; i < nf; i++) {
      const char *o = m->functions[i].owner;
      if (o && strcspn(o, "< \t") == sl && !memcmp(o, sn, sl)) {
        reads[i] = true;
        kl_fk_names_of(&names, &m->functions[i]);
      }
    }
  }
  /* Each function's tokens, [lo, hi). */
  size_t *lo = kl_arena_xmalloc((nf + 1) * sizeof *lo);
  size_t *hi = kl_arena_xmalloc((nf + 1) * sizeof *hi);
  bool *inside = kl_arena_xmalloc(nt + 1);
  memset(inside, 0, nt + 1);
  /* The placeholder instantiations' tokens, read once. */
  struct kl_fk_itoks *itoks = NULL;
  if (expanded && u->ninsts) {
    itoks = kl_arena_xmalloc(u->ninsts * sizeof *itoks);
    memset(itoks, 0, u->ninsts * sizeof *itoks);
    for (size_t j = 0; j < u->ninsts; j++) {
      const struct kl_inst *in = &u->insts[j];
      if (in->placeholder && in->function && in->text)
        itoks[j].v = kl_fk_tokens(in->text, in->textlen, false, &itoks[j].n, &itoks[j].unsure);
    }
  }
  for (size_t i = 0; i < nf; i++) {
    TSNode d = m->functions[i].node;
    lo[i] = kl_fk_tok_at(v, nt, ts_node_start_byte(d));
    hi[i] = kl_fk_tok_at(v, nt, ts_node_end_byte(d));
    for (size_t t = lo[i]; t < hi[i]; t++) inside[t] = true;
  }
  for (bool changed = true; changed && !all;) {
    changed = false;
    if (expanded) {
      for (size_t t = 0; t < nt; t++) {
        size_t d = v[t].def;
        if (!d || d - 1 == t || !kl_fk_names_has(&names, buf + v[t].at, v[t].len)) continue;
        if (d - 1 < t && !kl_fk_names_has(&names, buf + v[d - 1].at, v[d - 1].len)) {
          kl_fk_names_add(&names, buf + v[d - 1].at, v[d - 1].len);
          changed = true;
        }
      }
      for (size_t j = 0; j < u->ninsts; j++) {
        const struct kl_inst *in = &u->insts[j];
        if (!in->placeholder || !in->function || !in->text ||
            !kl_fk_inst_names(in, &itoks[j], &names))
          continue;
        for (size_t i = 0; i < nf; i++)
          if (!reads[i] && m->functions[i].name && !strcmp(m->functions[i].name, in->function)) {
            reads[i] = changed = true;
            kl_fk_names_of(&names, &m->functions[i]);
          }
      }
    }
    for (size_t i = 0; i < nf && !all; i++) {
      if (reads[i]) continue;
      for (size_t t = lo[i]; t < hi[i]; t++) {
        if (expanded && v[t].def) continue;
        if (!kl_fk_names_has(&names, buf + v[t].at, v[t].len)) continue;
        /* A preprocessor line inside a function may define what calls it anywhere after. */
        if (v[t].pp) all = true;
        reads[i] = changed = true;
        kl_fk_names_of(&names, &m->functions[i]);
        break;
      }
    }
    /* File-scope text: an instantiation reads into the function it instantiates. */
    for (size_t t = 0; t < nt && !all; t++) {
      if (inside[t] || (expanded && v[t].def) || (!v[t].pp && v[t].at >= ss && v[t].at < se) ||
          !kl_fk_names_has(&names, buf + v[t].at, v[t].len))
        continue;
      size_t g;
      if (v[t].pp || (!kl_fk_inert(buf, len, v, nt, t, &g) && g == SIZE_MAX)) {
        all = true;
        break;
      }
      if (g == SIZE_MAX) continue;
      for (size_t i = 0; i < nf; i++)
        if (!reads[i] && kl_fk_tok_is(buf, &v[g], m->functions[i].name)) {
          reads[i] = changed = true;
          kl_fk_names_of(&names, &m->functions[i]);
        }
    }
  }
  if (all)
    for (size_t i = 0; i < nf; i++) reads[i] = true;
  free(names.h);
  free(names.s);
  free(names.len);
  for (size_t j = 0; itoks && j < u->ninsts; j++) free(itoks[j].v);
  free(itoks);
  free(lo);
  free(hi);
  free(inside);
  free(v);
}

/* ---- Records in and out ---------------------------------------------------------------------- */

/* Every node field of an entry's records, to visit. */
typedef void (*kl_fk_node_fn)(void *ctx, TSNode *n);

static void kl_fk_nodes(struct kl_fk_entry *e, kl_fk_node_fn f, void *ctx) {
  for (size_t i = 0; i < e->nbarriers; i++) {
    struct kl_facts_barrier *b = &e->barriers[i].x;
    f(ctx, &b->call), f(ctx, &b->cause_node), f(ctx, &b->exit_stmt), f(ctx, &b->carried);
    f(ctx, &b->via), f(ctx, &b->lambda_at);
    for (uint8_t j = 0; j < b->nalt; j++)
      f(ctx, &b->alt[j].node), f(ctx, &b->alt[j].exit_stmt), f(ctx, &b->alt[j].carried);
  }
  for (size_t i = 0; i < e->nraces; i++) {
    struct kl_facts_race *x = &e->races[i].x;
    f(ctx, &x->first), f(ctx, &x->second), f(ctx, &x->loop), f(ctx, &x->fence);
  }
  for (size_t i = 0; i < e->naccess; i++)
    f(ctx, &e->access[i].x.node), f(ctx, &e->access[i].x.call);
  for (size_t i = 0; i < e->nbg; i++) {
    struct kl_fk_bg *g = &e->bg[i];
    f(ctx, &g->x.node), f(ctx, &g->x.call), f(ctx, &g->guard.ev), f(ctx, &g->guard.part);
    f(ctx, &g->bound.past_by), f(ctx, &g->bound.past_index), f(ctx, &g->bound.past_added);
    f(ctx, &g->bound.past_row);
  }
}

/* Every string field of an entry's records, copied into arena a. */
static void kl_fk_strings(struct kl_fk_entry *e, struct kl_arena *a) {
#define KL_FK_DUP(s) ((s) = (s) ? kl_arena_strdup(a, (s)) : NULL)
  for (size_t i = 0; i < e->nbarriers; i++) {
    struct kl_facts_barrier *b = &e->barriers[i].x;
    KL_FK_DUP(b->cause_var);
    for (uint8_t j = 0; j < b->nalt; j++) KL_FK_DUP(b->alt[j].var);
    if (b->names) {
      const char **names = kl_arena_alloc(a, (b->nnames + 1) * sizeof *names);
      for (size_t j = 0; j < b->nnames; j++)
        names[j] = b->names[j] ? kl_arena_strdup(a, b->names[j]) : NULL;
      b->names = names;
    }
  }
  for (size_t i = 0; i < e->naccess; i++) {
    KL_FK_DUP(e->access[i].x.elem_type);
    KL_FK_DUP(e->access[i].x.inst);
  }
  for (size_t i = 0; i < e->nbg; i++) {
    KL_FK_DUP(e->bg[i].x.inst);
    KL_FK_DUP(e->bg[i].guard.var);
    KL_FK_DUP(e->bg[i].bound.past_added_name);
  }
  for (size_t i = 0; i < e->nruns; i++) KL_FK_DUP(e->runs[i].x.inst);
#undef KL_FK_DUP
}

/* A kept node's tree, for checking it is the unit's. */
struct kl_fk_check {
  const TSTree *tree;
  bool ok;
};

static void kl_fk_check_node(void *ctx, TSNode *n) {
  struct kl_fk_check *c = ctx;
  if (!kl_node_null(*n) && n->tree != c->tree) c->ok = false;
}

static void kl_fk_set_tree(void *ctx, TSNode *n) {
  if (!kl_node_null(*n)) n->tree = ctx;
}

/* A function of model m by pointer, as its index (KL_FK_NONE for NULL); false for one that is
 * not m's (a header's). */
static bool kl_fk_fn_index(const struct kl_model *m, const struct kl_function *f, uint32_t *out) {
  *out = KL_FK_NONE;
  if (!f) return true;
  if (f < m->functions || f >= m->functions + m->nfunctions) return false;
  *out = (uint32_t)(f - m->functions);
  return true;
}

static bool kl_fk_var_in(const struct kl_var *v, const struct kl_var *arr, size_t n, uint32_t fn,
                         uint8_t which, struct kl_fk_var *out) {
  if (!arr || v < arr || v >= arr + n) return false;
  *out = (struct kl_fk_var){fn, (uint32_t)(v - arr), which};
  return true;
}

/* A variable of model m by pointer, looked for first in function hint; false when it is none of
 * m's functions'. */
static bool kl_fk_var_index(const struct kl_model *m, const struct kl_var *v, uint32_t hint,
                            struct kl_fk_var *out) {
  memset(out, 0, sizeof *out);
  if (!v) return true;
  for (size_t pass = 0; pass < 2; pass++) {
    for (size_t i = pass ? 0 : hint; i < m->nfunctions; i++) {
      const struct kl_function *f = &m->functions[i];
      if (kl_fk_var_in(v, f->params, f->nparams, (uint32_t)i, 1, out) ||
          kl_fk_var_in(v, f->locals, f->nlocals, (uint32_t)i, 2, out) ||
          kl_fk_var_in(v, f->tg_decls, f->ntg_decls, (uint32_t)i, 3, out))
        return true;
      if (!pass) break;
    }
    if (hint >= m->nfunctions) pass = 1;
  }
  return false;
}

/* The new model's function for old index i (NULL for KL_FK_NONE); false when it has none. */
static bool kl_fk_fn_back(const struct kl_factkeep *k, const struct kl_model *m, uint32_t i,
                          const struct kl_function **out) {
  *out = NULL;
  if (i == KL_FK_NONE) return true;
  if (i >= k->old.nfns || k->to_new[i] == KL_FK_NONE) return false;
  *out = &m->functions[k->to_new[i]];
  return true;
}

static bool kl_fk_var_back(const struct kl_factkeep *k, const struct kl_model *m,
                           struct kl_fk_var v, const struct kl_var **out) {
  *out = NULL;
  if (!v.arr) return true;
  const struct kl_function *f;
  if (!kl_fk_fn_back(k, m, v.fn, &f) || !f) return false;
  const struct kl_var *arr = v.arr == 1 ? f->params : v.arr == 2 ? f->locals : f->tg_decls;
  size_t n = v.arr == 1 ? f->nparams : v.arr == 2 ? f->nlocals : f->ntg_decls;
  if (v.idx >= n) return false;
  *out = &arr[v.idx];
  return true;
}

/* An access's pointers into model m as indices in *w, cleared; false when one is not m's. */
static bool kl_fk_where_of(const struct kl_model *m, const struct kl_function **kernel,
                           const struct kl_function **owner, const struct kl_var **buffer,
                           struct kl_fk_where *w) {
  bool ok = kl_fk_fn_index(m, *kernel, &w->kernel) && kl_fk_fn_index(m, *owner, &w->owner) &&
            kl_fk_var_index(m, *buffer, w->kernel, &w->buffer);
  *kernel = *owner = NULL;
  *buffer = NULL;
  return ok;
}

/* kl_fk_where_of back: w's pointers into the new model m; false when one has no counterpart. */
static bool kl_fk_where_back(const struct kl_factkeep *k, const struct kl_model *m,
                             const struct kl_fk_where *w, const struct kl_function **kernel,
                             const struct kl_function **owner, const struct kl_var **buffer) {
  return kl_fk_fn_back(k, m, w->kernel, kernel) && kl_fk_fn_back(k, m, w->owner, owner) &&
         kl_fk_var_back(k, m, w->buffer, buffer);
}

/* Copy n records of size sz at p into arena a. */
static void *kl_fk_copy(struct kl_arena *a, const void *p, size_t n, size_t sz) {
  if (!n) return NULL;
  void *c = kl_arena_alloc_raw(a, n * sz);
  memcpy(c, p, n * sz);
  return c;
}

/* End the kernel being lowered: keep what it added in the version being made. */
static void kl_fk_close(struct kl_facts_run *r, uint64_t unit_ins) {
  struct kl_factkeep *k = r->keep;
  if (k->kernel == KL_FK_NONE) return;
  const struct kl_model *m = r->m;
  struct kl_fk_entry *e = &k->cur.entries[k->kernel];
  struct kl_arena *a = k->cur.a;
  struct kl_facts *out = r->out;
  memset(e, 0, sizeof *e);
  bool ok = true;
  const struct kl_fk_entry *t = k->taken;
  e->ins = unit_ins - k->ins0;
  e->nfns = (uint32_t)(out->nfns - k->nfns0);
  e->incomplete = r->k_incomplete;
  if (t) {
    e->pairs = t->pairs;
    e->cold = t->cold;
    e->race_asked = t->race_asked;
    ok = t->kept;
    e->nasked = t->nasked;
    e->asked = kl_fk_copy(a, t->asked, t->nasked, sizeof *t->asked);
    e->answers = kl_fk_copy(a, t->answers, t->nasked, sizeof *t->answers);
  } else {
    e->pairs = k->pairs0 - r->tg.pairs;
    e->cold = kl_race_memo_distinct(r->tg.memo) - k->cold0;
    uint64_t asked = 0;
    kl_race_memo_stats(r->tg.memo, NULL, &asked, NULL);
    e->race_asked = asked - k->asked0;
    /* Budgets that ran out while it ran may have cut its decisions short; a header's answer
     * that depends on the questions before it is not asked again alike. */
    ok = r->tg.pairs > 0 && r->tg.valuations > 0 &&
         (!r->nasked || kl_xdefs_order_free(r->xdefs));
    e->nasked = r->nasked;
    e->asked = kl_fk_copy(a, r->asked, r->nasked, sizeof *r->asked);
    e->answers = kl_fk_copy(a, r->answers, r->nasked, sizeof *r->answers);
  }
  for (size_t i = 0; i < e->nasked; i++) e->asked[i] = kl_arena_strdup(a, e->asked[i]);
  k->cold += e->cold;
  k->asked += e->race_asked;
  ok = ok && kl_ir_lower_full_room(unit_ins);
  for (size_t i = 0; i < r->nlowered; i++)
    if (r->lowered[i] == &m->functions[k->kernel]) e->nlowered = r->nlowered_of[i];
  e->nbarriers = out->nbarriers - k->nb0;
  e->barriers = kl_arena_alloc(a, (e->nbarriers + 1) * sizeof *e->barriers);
  for (size_t i = 0; i < e->nbarriers && ok; i++) {
    struct kl_fk_barrier *b = &e->barriers[i];
    b->x = out->barriers[k->nb0 + i];
    b->x.run -= k->nfns0;
    ok = kl_fk_fn_index(m, b->x.kernel, &b->kernel);
    b->x.kernel = NULL;
  }
  e->nraces = r->nfound;
  e->races = kl_arena_alloc(a, (e->nraces + 1) * sizeof *e->races);
  for (size_t i = 0; i < e->nraces && ok; i++) {
    e->races[i].x = r->found[i];
    ok = kl_fk_fn_index(m, r->found[i].kernel, &e->races[i].kernel);
    e->races[i].x.kernel = NULL;
  }
  e->naccess = r->access->n - k->nt0;
  e->access = kl_arena_alloc(a, (e->naccess + 1) * sizeof *e->access);
  for (size_t i = 0; i < e->naccess && ok; i++) {
    struct kl_fk_access *x = &e->access[i];
    x->x = r->access->v[k->nt0 + i];
    x->x.index_rep -= (uint32_t)k->nt0;
    ok = kl_fk_where_of(m, &x->x.kernel, &x->x.owner, &x->x.buffer, &x->w);
  }
  e->nbg = r->bg->n - k->ng0;
  e->bg = kl_arena_alloc(a, (e->nbg + 1) * sizeof *e->bg);
  for (size_t i = 0; i < e->nbg && ok; i++) {
    struct kl_fk_bg *x = &e->bg[i];
    size_t at = k->ng0 + i;
    x->x = r->bg->v[at];
    x->x.run -= (uint32_t)k->nr0;
    x->guard = out->guards[at];
    x->bound = out->bounds[at];
    x->covered = out->covered[at];
    ok = kl_fk_where_of(m, &x->x.kernel, &x->x.owner, &x->x.buffer, &x->w);
  }
  e->nruns = r->bg->nruns - k->nr0;
  e->runs = kl_arena_alloc(a, (e->nruns + 1) * sizeof *e->runs);
  for (size_t i = 0; i < e->nruns && ok; i++) {
    e->runs[i].x = r->bg->runs[k->nr0 + i];
    e->runs[i].x.first -= k->ng0;
    ok = kl_fk_fn_index(m, e->runs[i].x.kernel, &e->runs[i].kernel);
    e->runs[i].x.kernel = NULL;
  }
  struct kl_fk_check c = {m->unit->tree, ok};
  if (c.ok) kl_fk_nodes(e, kl_fk_check_node, &c);
  e->kept = c.ok;
  k->kernel = KL_FK_NONE;
  if (e->kept)
    kl_fk_strings(e, a);
  else
    memset(e, 0, sizeof *e);
}

/* The new tree, and whether every node looked for was found (kl_fk_find_visit). */
struct kl_fk_find {
  const struct kl_factkeep *k;
  bool ok;
};

/* Find node o of the old tree (its tree the kept copy) in the new one: moved past the edit, the
 * same kind over the same span, the same subtree when it is shared, else the only one of its
 * kind there. */
static TSNode kl_fk_find_node(const struct kl_factkeep *k, TSNode o, bool *ok) {
  TSNode none = {{0}, NULL, NULL};
  if (kl_node_null(o)) return o;
  uint32_t s = ts_node_start_byte(o), e = ts_node_end_byte(o);
  bool before = e <= k->p && s < k->p, after = s >= k->old_end && e > k->old_end;
  /* With no edit, every node is where it was. */
  bool none_edited = k->p == k->old_end && k->p == k->new_end;
  if (!before && !after && !none_edited) {
    *ok = false;
    return none;
  }
  if (after && !none_edited) {
    s = s - k->old_end + k->new_end;
    e = e - k->old_end + k->new_end;
  }
  TSSymbol sym = ts_node_symbol(o);
  /* The root child holding it. */
  size_t lo = 0, hi = k->ntops;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ts_node_end_byte(k->tops[mid]) <= s && !(s == e && ts_node_end_byte(k->tops[mid]) == s))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == k->ntops || ts_node_start_byte(k->tops[lo]) > s || ts_node_end_byte(k->tops[lo]) < e) {
    *ok = false;
    return none;
  }
  TSNode found = none;
  size_t like = 0;
  TSTreeCursor c = ts_tree_cursor_new(k->tops[lo]);
  for (;;) {
    TSNode cur = ts_tree_cursor_current_node(&c);
    if (ts_node_start_byte(cur) == s && ts_node_end_byte(cur) == e && ts_node_symbol(cur) == sym) {
      found = cur;
      if (cur.id == o.id) {
        like = 1;
        break;
      }
      like++;
    }
    /* Down to the child that holds the span. */
    if (ts_tree_cursor_goto_first_child_for_byte(&c, s) < 0) break;
    bool down = false;
    do {
      TSNode ch = ts_tree_cursor_current_node(&c);
      if (ts_node_start_byte(ch) > s) break;
      down = ts_node_end_byte(ch) >= e && ts_node_end_byte(ch) > s;
    } while (!down && ts_tree_cursor_goto_next_sibling(&c));
    if (!down) break;
  }
  ts_tree_cursor_delete(&c);
  if (like != 1) {
    *ok = false;
    return none;
  }
  return found;
}

static void kl_fk_find_visit(void *ctx, TSNode *n) {
  struct kl_fk_find *f = ctx;
  if (f->ok) *n = kl_fk_find_node(f->k, *n, &f->ok);
}

/* Kernel k (new index nk) as the version before lowered it, entry e: its records added to the
 * run's tables with the new model's pointers and the new tree's nodes. False, with nothing
 * added, when one cannot be found. */
static bool kl_fk_take(struct kl_facts_run *r, uint32_t nk, const struct kl_fk_entry *e) {
  struct kl_factkeep *k = r->keep;
  const struct kl_model *m = r->m;
  struct kl_arena *a = r->a;
  struct kl_facts *out = r->out;
  /* A working copy: its nodes found, its pointers set, its strings in the unit's arena. */
  struct kl_fk_entry c = *e;
  c.barriers = kl_fk_copy(a, e->barriers, e->nbarriers, sizeof *e->barriers);
  c.races = kl_fk_copy(a, e->races, e->nraces, sizeof *e->races);
  c.access = kl_fk_copy(a, e->access, e->naccess, sizeof *e->access);
  c.bg = kl_fk_copy(a, e->bg, e->nbg, sizeof *e->bg);
  c.runs = kl_fk_copy(a, e->runs, e->nruns, sizeof *e->runs);
  struct kl_fk_find f = {k, true};
  kl_fk_nodes(&c, kl_fk_find_visit, &f);
  bool ok = f.ok;
  for (size_t i = 0; i < c.nbarriers && ok; i++)
    ok = kl_fk_fn_back(k, m, c.barriers[i].kernel, &c.barriers[i].x.kernel);
  for (size_t i = 0; i < c.nraces && ok; i++)
    ok = kl_fk_fn_back(k, m, c.races[i].kernel, &c.races[i].x.kernel);
  for (size_t i = 0; i < c.naccess && ok; i++) {
    struct kl_fk_access *x = &c.access[i];
    ok = kl_fk_where_back(k, m, &x->w, &x->x.kernel, &x->x.owner, &x->x.buffer);
  }
  for (size_t i = 0; i < c.nbg && ok; i++) {
    struct kl_fk_bg *x = &c.bg[i];
    ok = kl_fk_where_back(k, m, &x->w, &x->x.kernel, &x->x.owner, &x->x.buffer);
  }
  for (size_t i = 0; i < c.nruns && ok; i++)
    ok = kl_fk_fn_back(k, m, c.runs[i].kernel, &c.runs[i].x.kernel);
  if (!ok) return false;
  kl_fk_strings(&c, a);
  uint32_t nfns0 = (uint32_t)out->nfns;
  for (size_t i = 0; i < c.nbarriers; i++) {
    KL_VEC_PUSH(a, out->barriers, out->nbarriers, r->cap_barriers);
    struct kl_facts_barrier *b = &out->barriers[out->nbarriers];
    *b = c.barriers[i].x;
    b->seq = (uint32_t)out->nbarriers++;
    b->run += nfns0;
    /* Where its call starts, moved as the call was. */
    b->at = ts_node_start_byte(b->call);
  }
  out->nfns += c.nfns;
  if (c.incomplete) out->incomplete = r->k_incomplete = true;
  for (size_t i = 0; i < c.nraces; i++) kl_facts_add_race(r, &c.races[i].x);
  size_t t0 = r->access->n;
  for (size_t i = 0; i < c.naccess; i++) {
    KL_VEC_PUSH(a, r->access->v, r->access->n, r->access->cap);
    struct kl_access *x = &r->access->v[r->access->n++];
    *x = c.access[i].x;
    x->index_rep += (uint32_t)t0;
  }
  size_t g0 = r->bg->n, r0 = r->bg->nruns;
  for (size_t i = 0; i < c.nruns; i++) {
    KL_VEC_PUSH(a, r->bg->runs, r->bg->nruns, r->bg->cap_runs);
    struct kl_bgaccess_run *x = &r->bg->runs[r->bg->nruns++];
    *x = c.runs[i].x;
    x->first += g0;
  }
  for (size_t i = 0; i < c.nbg; i++) {
    KL_VEC_PUSH(a, r->bg->v, r->bg->n, r->bg->cap);
    struct kl_bgaccess *x = &r->bg->v[r->bg->n++];
    *x = c.bg[i].x;
    x->run += (uint32_t)r0;
  }
  kl_facts_grow_bg(r, r->bg->n);
  for (size_t i = 0; i < c.nbg; i++) {
    out->guards[g0 + i] = c.bg[i].guard;
    out->bounds[g0 + i] = c.bg[i].bound;
    out->covered[g0 + i] = c.bg[i].covered;
  }
  if (c.nlowered) kl_facts_count_kernel(r, &m->functions[nk], c.nlowered);
  r->tg.pairs = r->tg.pairs > e->pairs ? r->tg.pairs - e->pairs : 0;
  return true;
}

/* ---- A unit's lowering ----------------------------------------------------------------------- */

static void kl_fk_begin(struct kl_facts_run *r, size_t nxinsts) {
  struct kl_factkeep *k = r->keep;
  const struct kl_model *m = r->m;
  const struct kl_unit *u = m->unit;
  kl_fk_run_free(k);
  kl_fk_version_free(&k->cur);
  k->can = k->replayed = false;
  k->kernel = KL_FK_NONE;
  k->taken = NULL;
  k->cold = k->asked = 0;
  k->stat_kept = k->stat_lowered = 0;
  k->cur.a = kl_arena_new();
  k->cur.nfns = m->nfunctions;
  k->cur.entries = kl_arena_alloc(k->cur.a, (m->nfunctions + 1) * sizeof *k->cur.entries);
  k->cur.starts = kl_arena_alloc(k->cur.a, (m->nfunctions + 1) * sizeof *k->cur.starts);
  for (size_t i = 0; i < m->nfunctions; i++)
    k->cur.starts[i] = ts_node_start_byte(m->functions[i].node);
  k->cur.others = r->others;
  k->cur.settings = kl_fk_settings(r->settings);
  k->cur.insts = u ? kl_fk_insts(u) : 0;
  if (u && u->nkws) {
    k->cur.nkws = u->nkws;
    k->cur.kws = kl_fk_copy(k->cur.a, u->kws, u->nkws, sizeof *u->kws);
  }
  bool fresh = k->fresh;
  k->fresh = false;
  /* A unit whose race pairs could spend their budget in some order is lowered whole: were it
   * taken in part, its end would find so and lower it again. */
  if (fresh || !k->old.a || !u || !u->buf || !u->tree || r->ncalls || nxinsts ||
      k->cur.settings != k->old.settings || k->cur.others != k->old.others ||
      k->cur.insts != k->old.insts ||
      k->old.cold >= KL_FACTS_RACE_VALUATIONS || !kl_race_memo_holds(k->old.asked))
    return;
  /* The edit: what the two texts share at the start and at the end. */
  const char *ob = k->old.buf, *nb = u->buf;
  uint32_t on = k->old.len, nn = u->len, n = on < nn ? on : nn, p = 0, q = 0;
  while (p < n && ob[p] == nb[p]) p++;
  while (q < n - p && ob[on - 1 - q] == nb[nn - 1 - q]) q++;
  k->p = p;
  k->old_end = on - q;
  k->new_end = nn - q;
  /* An edit of a preprocessor line may change what every kernel reads. */
  for (uint32_t i = p; i < k->old_end; i++)
    if (ob[i] == '#') return;
  for (uint32_t i = p; i < k->new_end; i++)
    if (nb[i] == '#') return;
  /* A keyword the buffer blanks, swapped for another or taken out, is an edit it does not show. */
  bool kw_in;
  if (!kl_fk_same_keywords(k, k->old.kws, k->old.nkws, u->kws, u->nkws, &kw_in)) return;
  TSNode ro = ts_tree_root_node(k->old.tree), rn = ts_tree_root_node(u->tree);
  size_t edited = SIZE_MAX;
  bool same = p == on && p == nn;
  TSNode strct = {{0}, NULL, NULL};
  /* Blanks only, between two top-level items: no function edited, every kernel may be taken. */
  bool blank = !same && !kw_in && kl_fk_blank_between(k, ob, nb, ro, rn);
  if (same) {
    if (!kl_fk_alike(ro, rn, 0)) return;
  } else if (!blank) {
    TSNode body, sig;
    if (kl_fk_descend(k, ro, rn, &body, &strct, &sig)) {
      strct = (TSNode){{0}, NULL, NULL};
    } else if (!kl_node_null(sig)) {
      /* A signature: that function edited. */
      body = kl_node_field(sig, "body");
      strct = (TSNode){{0}, NULL, NULL};
    } else if (!kl_node_null(strct)) {
      body = (TSNode){{0}, NULL, NULL};
    } else {
      return;
    }
    for (size_t i = 0; i < m->nfunctions && edited == SIZE_MAX && !kl_node_null(body); i++)
      if (ts_node_eq(m->functions[i].body, body)) edited = i;
    if (edited == SIZE_MAX && kl_node_null(strct)) return;
  }
  /* Functions across the two models, by where their definitions start (moved past the edit),
   * which the models list in order. */
  for (size_t i = 1; i < k->old.nfns; i++)
    if (k->old.starts[i] < k->old.starts[i - 1]) return;
  k->to_old = kl_arena_xmalloc((m->nfunctions + 1) * sizeof *k->to_old);
  k->to_new = kl_arena_xmalloc((k->old.nfns + 1) * sizeof *k->to_new);
  for (size_t i = 0; i < k->old.nfns; i++) k->to_new[i] = KL_FK_NONE;
  size_t j = 0;
  for (size_t i = 0; i < m->nfunctions; i++) {
    uint32_t s = k->cur.starts[i];
    uint32_t was = s >= k->new_end && !same ? s - k->new_end + k->old_end : s;
    k->to_old[i] = KL_FK_NONE;
    if (s >= p && s < k->new_end) continue; /* inside the edit */
    while (j < k->old.nfns && k->old.starts[j] < was) j++;
    if (j < k->old.nfns && k->old.starts[j] == was && k->to_new[j] == KL_FK_NONE) {
      k->to_old[i] = (uint32_t)j;
      k->to_new[j] = (uint32_t)i;
    }
  }
  k->reads = kl_arena_xmalloc(m->nfunctions + 1);
  if (edited != SIZE_MAX || !kl_node_null(strct))
    kl_fk_readers(m, u->buf, u->len, edited, strct, k->reads);
  else
    memset(k->reads, 0, m->nfunctions + 1);
  /* The new tree's root children, for finding nodes. */
  size_t cap = 0;
  TSTreeCursor c = ts_tree_cursor_new(rn);
  if (ts_tree_cursor_goto_first_child(&c)) {
    do {
      KL_XVEC_PUSH(k->tops, k->ntops, cap);
      k->tops[k->ntops++] = ts_tree_cursor_current_node(&c);
    } while (ts_tree_cursor_goto_next_sibling(&c));
  }
  ts_tree_cursor_delete(&c);
  k->can = true;
}

/* The race memo of a run. Where kernels may be taken from the version before, it is the memo of
 * the versions before, so that a kernel lowered again finds its unchanged pairs decided: a pair's
 * answer is a function of its key, and kl_factkeep_end checks that no budget could have stopped a
 * pair of a fresh run, nor the memo lacked room for one. Elsewhere (and past half its bound) an
 * empty one, as a fresh run has. */
static void kl_fk_memo(struct kl_facts_run *r) {
  struct kl_factkeep *k = r->keep;
  if (!k->can || !kl_race_memo_spare(k->memo)) {
    kl_race_memo_delete(k->memo);
    k->memo = NULL;
  }
  if (!k->memo) k->memo = kl_race_memo_new();
  r->tg.memo = k->memo;
  k->warm = kl_race_memo_size(k->memo) > 0;
}

void kl_factkeep_begin(struct kl_facts_run *r, size_t nxinsts) {
  kl_fk_begin(r, nxinsts);
  kl_fk_memo(r);
}

/* Whether the headers' definitions answer what entry e's kernel asked of them as they did. */
static bool kl_fk_asked(struct kl_facts_run *r, const struct kl_fk_entry *e) {
  if (!e->nasked) return true;
  if (!r->xdefs || !kl_xdefs_order_free(r->xdefs)) return false;
  for (size_t i = 0; i < e->nasked; i++) {
    bool found;
    if (kl_xdefs_result_scope(r->xdefs, e->asked[i], &found) != e->answers[i]) return false;
  }
  return true;
}

bool kl_factkeep_kernel(void *ctx, const struct kl_function *fn, uint64_t unit_ins,
                        uint64_t *ins) {
  struct kl_facts_run *r = ctx;
  struct kl_factkeep *k = r->keep;
  const struct kl_model *m = r->m;
  kl_fk_close(r, unit_ins);
  uint32_t nk = (uint32_t)(fn - m->functions);
  k->kernel = nk;
  k->taken = NULL;
  k->ins0 = unit_ins;
  k->nfns0 = (uint32_t)r->out->nfns;
  k->nb0 = r->out->nbarriers;
  k->nt0 = r->access->n;
  k->ng0 = r->bg->n;
  k->nr0 = r->bg->nruns;
  k->pairs0 = r->tg.pairs;
  kl_race_memo_epoch(r->tg.memo);
  k->cold0 = kl_race_memo_distinct(r->tg.memo);
  kl_race_memo_stats(r->tg.memo, NULL, &k->asked0, NULL);
  r->nfound = 0;
  r->nasked = 0;
  r->k_incomplete = false;
  uint32_t was = k->can ? k->to_old[nk] : KL_FK_NONE;
  const struct kl_fk_entry *e = was != KL_FK_NONE && !k->reads[nk] ? &k->old.entries[was] : NULL;
  if (e && e->kept && kl_ir_lower_full_room(unit_ins + e->ins) && kl_fk_asked(r, e) &&
      kl_fk_take(r, nk, e)) {
    k->taken = e;
    k->replayed = true;
    k->stat_kept++;
    *ins = e->ins;
    return true;
  }
  k->stat_lowered++;
  return false;
}

/* Every kept node's tree set to the version's copy. */
static void kl_fk_commit(struct kl_factkeep *k, const struct kl_unit *u) {
  kl_fk_version_free(&k->old);
  k->old = k->cur;
  memset(&k->cur, 0, sizeof k->cur);
  k->old.buf = kl_arena_strndup(k->old.a, u->buf, u->len);
  k->old.len = u->len;
  k->old.tree = ts_tree_copy(u->tree);
  for (size_t i = 0; i < k->old.nfns; i++)
    if (k->old.entries[i].kept) kl_fk_nodes(&k->old.entries[i], kl_fk_set_tree, k->old.tree);
}

bool kl_factkeep_end(struct kl_facts_run *r, uint64_t unit_ins) {
  struct kl_factkeep *k = r->keep;
  kl_fk_close(r, unit_ins);
  kl_fk_run_free(k);
  const struct kl_unit *u = r->m->unit;
  /* Were a budget the unit's kernels share spent in this version, a kernel taken from the one
   * before might have been decided otherwise: its pairs, each kernel's counted once, bound what
   * they cost in any order while the memo remembers them all. And were the pairs remembered to
   * fill the memo in some order, a repeated specialisation's races might be taken from its first
   * lowering in one run and not in another. */
  bool bound =
      !r->tg.pairs || k->cold >= KL_FACTS_RACE_VALUATIONS || !kl_race_memo_holds(k->asked);
  /* A memo kept from the versions before answers pairs a fresh run decides, and tries fewer
   * valuations: the same decisions while no budget stops one and every pair decided is
   * remembered, as a fresh run's memo would. One that filled up may have had no room for a pair
   * a fresh one keeps, or turned a repeated specialisation's replay down (kl_facts_take). */
  if ((k->replayed && bound) || (k->warm && (bound || !kl_race_memo_room(k->memo)))) {
    kl_fk_version_free(&k->cur);
    k->fresh = true;
    return false;
  }
  if (!u || !u->buf || !u->tree) {
    kl_fk_version_free(&k->cur);
    kl_fk_version_free(&k->old);
    return true;
  }
  k->cur.cold = k->cold;
  k->cur.asked = k->asked;
  kl_fk_commit(k, u);
  return true;
}
