/* Inline suppressions. A small lexer finds where comments start (so a marker inside a string
 * literal of C code is not one); a PCRE2 pattern anchored at each comment start recognises the
 * directive; the rule ids after it are split here.
 *
 * Forms (ids are required and separated by commas or spaces; `all` means every rule; text after
 * ` -- ` is a free-form reason):
 *   kernlint-disable-line ID...       the comment's own line
 *   kernlint-disable-next-line ID...  the line after the comment
 *   kernlint-disable ID...            from this line through the matching kernlint-enable
 *   kernlint-enable ID...             (inclusive) or to the end of the file
 *   kernlint-disable-file ID...       the whole file
 * When several cover one diagnostic the most specific (line, region, file) is the one used; a
 * broader one left covering nothing is reported as unused. `all` never covers the
 * unused-suppression reports themselves: name `unused-suppression` explicitly for that. */
#include "analyzer/report/suppress.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/input/cstring.h"
#include "rules/rules.h"

#define KL_SUPP_UNKNOWN (-1) /* an id that names no rule */
#define KL_SUPP_ALL (-2)     /* the id `all` */

static const char kl_supp_pattern[] =
    "(?://+!?|/\\*+!?|#+!?)[ \\t]*(kernlint-(?:disable|enable)[A-Za-z0-9_-]*)";

enum kl_supp_kind { KL_SUPP_LINE, KL_SUPP_NEXT_LINE, KL_SUPP_REGION, KL_SUPP_ENABLE, KL_SUPP_FILE };

struct kl_supp_id {
  uint32_t start, end; /* the id as written, in the file */
  int rule;            /* registry index, KL_SUPP_ALL or KL_SUPP_UNKNOWN */
  enum kl_supp_kind kind;
  uint32_t line; /* the line it covers (line kinds) or where it stands (the others) */
  bool used;
  /* The comment it is written in (the bytes from its opener to its end) and the first id of
   * that comment, for the fix that removes it; diag is its report's index, or -1. */
  uint32_t cstart, cend;
  size_t first;
  long diag;
  long pair;      /* a region's kernlint-enable id, or -1 */
  unsigned closes; /* an enable id: the regions it closes */
};

/* A stretch of lines over which one region id disables one rule slot. */
struct kl_supp_range {
  size_t id;
  size_t slot;
  uint32_t from, to;
};

/* A malformed directive, reported as unused-suppression with its own message. */
struct kl_supp_problem {
  uint32_t start, end;
  char msg[256];
};

struct kl_supp {
  const struct kl_source *src;
  struct kl_arena *a; /* the file's arena: what is collected here goes with it */
  pcre2_code *re;
  pcre2_match_data *md;
  size_t nrules; /* slots 0..nrules-1 are registry rules; slot nrules is any other rule */
  struct kl_supp_id *ids;
  size_t nids, cap_ids;
  struct kl_supp_range *ranges;
  size_t nranges, cap_ranges;
  struct kl_supp_problem *problems;
  size_t nproblems, cap_problems;
};

static uint32_t kl_supp_line(const struct kl_supp *s, uint32_t off) {
  uint32_t line, col;
  kl_source_position(s->src, off, &line, &col);
  return line;
}

static void kl_supp_problem(struct kl_supp *s, uint32_t start, uint32_t end, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void kl_supp_problem(struct kl_supp *s, uint32_t start, uint32_t end, const char *fmt, ...) {
  KL_VEC_PUSH(s->a, s->problems, s->nproblems, s->cap_problems);
  struct kl_supp_problem *p = &s->problems[s->nproblems++];
  p->start = start;
  p->end = end;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->msg, sizeof p->msg, fmt, ap);
  va_end(ap);
}

static uint32_t kl_supp_eol(const char *t, uint32_t n, uint32_t i) {
  while (i < n && t[i] != '\n') i++;
  return i;
}

/* Read the directive, if any, of the comment whose opener is at `at` and which ends at `end`
 * (exclusive; for a block comment, past its closing delimiter). */
static void kl_supp_comment(struct kl_supp *s, uint32_t at, uint32_t end) {
  const char *t = s->src->text;
  uint32_t n = s->src->len;
  int rc = pcre2_match(s->re, (PCRE2_SPTR)t, n, at, PCRE2_ANCHORED, s->md, NULL);
  if (rc < 2) return;
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
  uint32_t ds = (uint32_t)ov[2], de = (uint32_t)ov[3];
  const char *name = t + ds + strlen("kernlint-");
  size_t nlen = de - ds - strlen("kernlint-");
  enum kl_supp_kind kind;
#define KL_IS(lit) (nlen == strlen(lit) && !strncmp(name, lit, nlen))
  if (KL_IS("disable-line")) {
    kind = KL_SUPP_LINE;
  } else if (KL_IS("disable-next-line")) {
    kind = KL_SUPP_NEXT_LINE;
  } else if (KL_IS("disable")) {
    kind = KL_SUPP_REGION;
  } else if (KL_IS("enable")) {
    kind = KL_SUPP_ENABLE;
  } else if (KL_IS("disable-file")) {
    kind = KL_SUPP_FILE;
  } else {
    kl_supp_problem(s, ds, de,
                    "unknown directive `%.*s` (expected kernlint-disable-line, "
                    "kernlint-disable-next-line, kernlint-disable, kernlint-enable or "
                    "kernlint-disable-file)",
                    (int)(de - ds), t + ds);
    return;
  }
#undef KL_IS
  uint32_t here = kl_supp_line(s, ds);
  uint32_t line = here;
  if (kind == KL_SUPP_NEXT_LINE) line = kl_supp_line(s, end > at ? end - 1 : at) + 1;

  /* Ids run to the end of the line, the comment, or a ` -- reason`; quotes and backslashes end
   * them too, for comments written inside a Python string. */
  uint32_t stop = kl_supp_eol(t, n, de);
  if (end < stop) stop = end;
  uint32_t i = de, found = 0;
  size_t first = s->nids;
  if (i < stop && t[i] == ':') i++;
  while (i < stop) {
    char c = t[i];
    if (c == ' ' || c == '\t' || c == ',' || c == '\r') {
      i++;
      continue;
    }
    /* A second comment opener ends the ids: `// kernlint-disable-line x // why` names x only. */
    if (c == '"' || c == '\'' || c == '\\' || (c == '*' && i + 1 < n && t[i + 1] == '/') ||
        (c == '-' && i + 1 < stop && t[i + 1] == '-') ||
        (c == '/' && i + 1 < stop && (t[i + 1] == '/' || t[i + 1] == '*')) || c == '#')
      break;
    uint32_t b = i;
    while (i < stop && t[i] != ' ' && t[i] != '\t' && t[i] != ',' && t[i] != '\r' && t[i] != '"' &&
           t[i] != '\'' && t[i] != '\\' && !(t[i] == '*' && t[i + 1] == '/'))
      i++;
    KL_VEC_PUSH(s->a, s->ids, s->nids, s->cap_ids);
    struct kl_supp_id *id = &s->ids[s->nids++];
    memset(id, 0, sizeof *id);
    id->start = b;
    id->end = i;
    id->kind = kind;
    id->line = line;
    id->cstart = at;
    id->cend = end;
    id->first = first;
    id->diag = -1;
    id->pair = -1;
    char buf[64];
    size_t len = i - b;
    if (len == 3 && !strncmp(t + b, "all", 3)) {
      id->rule = KL_SUPP_ALL;
    } else if (len < sizeof buf) {
      memcpy(buf, t + b, len);
      buf[len] = '\0';
      id->rule = kl_rules_index(buf);
    } else {
      id->rule = KL_SUPP_UNKNOWN;
    }
    found++;
  }
  if (!found)
    kl_supp_problem(s, ds, de, "`%.*s` needs a rule id, or `all`", (int)(de - ds), t + ds);
}

uint32_t kl_suppress_block_end(const char *t, uint32_t limit, uint32_t i) {
  for (uint32_t j = i + 2; j + 1 < limit; j++)
    if (t[j] == '*' && t[j + 1] == '/') return j + 2;
  return limit;
}

bool kl_suppress_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool kl_suppress_py_string(const char *t, uint32_t n, uint32_t i, uint32_t *close,
                           uint32_t *after) {
  char c = t[i];
  bool triple = i + 2 < n && t[i + 1] == c && t[i + 2] == c;
  uint32_t q = triple ? 3 : 1;
  for (uint32_t j = i + q; j < n;) {
    if (t[j] == '\\') {
      j += 2;
      continue;
    }
    if (!triple && t[j] == '\n') {
      *close = *after = j;
      return true;
    }
    if (t[j] == c && (!triple || (j + 2 < n && t[j + 1] == c && t[j + 2] == c))) {
      *close = j;
      *after = j + q;
      return true;
    }
    j++;
  }
  return false;
}

uint32_t kl_suppress_raw_string(const char *t, uint32_t n, uint32_t q, uint32_t open_end) {
  if (q == 0 || t[q - 1] != 'R') return 0;
  uint32_t p = q - 1;
  while (p > 0 && (t[p - 1] == 'u' || t[p - 1] == 'U' || t[p - 1] == 'L' || t[p - 1] == '8') &&
         q - p < 4)
    p--;
  if (p > 0 && kl_suppress_ident(t[p - 1])) return 0;
  uint32_t d = q + 1, dl = 0;
  /* C++: at most 16 bytes, none of them a parenthesis, backslash, quote or space of any kind. */
  while (d + dl < n && t[d + dl] != '(' && dl < 16) {
    char c = t[d + dl];
    if (c == ')' || c == '\\' || c == '"' || c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
        c == '\v' || c == '\f')
      return 0;
    dl++;
  }
  if (d + dl >= n || t[d + dl] != '(') return 0;
  for (uint32_t j = d + dl + 1; j + dl + 1 < n; j++)
    if (t[j] == ')' && !memcmp(t + j + 1, t + d, dl) && t[j + 1 + dl] == '"') return j + dl + 2;
  return open_end;
}

/* The // and block comments of MSL written inside a string literal's text t[from, to). */
static void kl_supp_comments_in(struct kl_supp *s, uint32_t from, uint32_t to) {
  const char *t = s->src->text;
  for (uint32_t k = from; k + 1 < to; k++) {
    if (t[k] != '/') continue;
    if (t[k + 1] == '/') {
      uint32_t e = kl_supp_eol(t, to, k);
      kl_supp_comment(s, k, e);
      k = e;
    } else if (t[k + 1] == '*') {
      uint32_t e = kl_suppress_block_end(t, to, k);
      kl_supp_comment(s, k, e);
      k = e - 1;
    }
  }
}

/* MSL comments inside a string literal's text t[from, to) that holds a kernel (host code keeps
 * kernels there, analyzer/input/cstring.h): their comments are the kernel's. Any other literal's
 * text is no comment. */
static void kl_supp_scan_in(struct kl_supp *s, const struct kl_cstring *ks, size_t nks,
                            size_t *at, uint32_t from, uint32_t to) {
  /* Literals come in file order, and so do the kernels' runs: *at is the first run not yet
   * passed. */
  while (*at < nks && ks[*at].end <= from) (*at)++;
  if (*at >= nks || from < ks[*at].start) return;
  kl_supp_comments_in(s, from, to);
}

/* Comments of C, C++, Objective-C and MSL: // and block comments outside literals, and MSL
 * comments inside the literals that hold a kernel. */
static void kl_supp_scan_c(struct kl_supp *s) {
  const char *t = s->src->text;
  uint32_t n = s->src->len;
  const char *dot = strrchr(s->src->path, '.');
  struct kl_cstring *ks = NULL;
  size_t nks = dot && !strcmp(dot, ".metal") ? 0 : kl_cstring_find(s->a, s->src, &ks), at = 0;
  for (uint32_t i = 0; i < n; i++) {
    char c = t[i];
    if (c == '/' && i + 1 < n && t[i + 1] == '/') {
      uint32_t e = kl_supp_eol(t, n, i);
      kl_supp_comment(s, i, e);
      i = e;
    } else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
      uint32_t e = kl_suppress_block_end(t, n, i);
      kl_supp_comment(s, i, e);
      i = e - 1;
    } else if (c == '"') {
      uint32_t raw = kl_suppress_raw_string(t, n, i, n);
      if (raw) {
        kl_supp_scan_in(s, ks, nks, &at, i + 1, raw);
        i = raw - 1;
        continue;
      }
      uint32_t open = i + 1;
      for (i++; i < n && t[i] != '"' && t[i] != '\n'; i++)
        if (t[i] == '\\') i++;
      kl_supp_scan_in(s, ks, nks, &at, open, i < n ? i : n);
    } else if (c == '\'') {
      /* A quote inside a number is a C++14 digit separator, not a character literal. */
      uint32_t b = i;
      while (b > 0 && (kl_suppress_ident(t[b - 1]) || t[b - 1] == '\'' || t[b - 1] == '.')) b--;
      if (b < i && t[b] >= '0' && t[b] <= '9') continue;
      for (i++; i < n && t[i] != '\'' && t[i] != '\n'; i++)
        if (t[i] == '\\') i++;
    }
  }
}

/* Python: # comments outside strings, and MSL // and block comments inside strings (MLX and
 * PyTorch kernels are Python strings, so their comments live there). */
static void kl_supp_scan_python(struct kl_supp *s) {
  const char *t = s->src->text;
  uint32_t n = s->src->len;
  for (uint32_t i = 0; i < n; i++) {
    char c = t[i];
    if (c == '#') {
      uint32_t e = kl_supp_eol(t, n, i);
      kl_supp_comment(s, i, e);
      i = e;
      continue;
    }
    if (c != '"' && c != '\'') continue;
    bool triple = i + 2 < n && t[i + 1] == c && t[i + 2] == c;
    uint32_t q = triple ? 3 : 1, body = i + q, close = n, after = n;
    if (!kl_suppress_py_string(t, n, i, &close, &after)) close = after = n;
    kl_supp_comments_in(s, body, close);
    i = after - 1;
  }
}

static void kl_supp_range(struct kl_supp *s, size_t id, size_t slot, uint32_t from, uint32_t to) {
  KL_VEC_PUSH(s->a, s->ranges, s->nranges, s->cap_ranges);
  s->ranges[s->nranges++] = (struct kl_supp_range){id, slot, from, to};
}

/* Turn disable/enable pairs into per-slot line ranges. */
static void kl_supp_regions(struct kl_supp *s) {
  size_t nslots = s->nrules + 1;
  long *open = kl_arena_alloc(s->a, nslots * sizeof *open);
  for (size_t k = 0; k < nslots; k++) open[k] = -1;
  for (size_t i = 0; i < s->nids; i++) {
    struct kl_supp_id *id = &s->ids[i];
    if (id->rule == KL_SUPP_UNKNOWN) continue;
    size_t lo = id->rule == KL_SUPP_ALL ? 0 : (size_t)id->rule;
    size_t hi = id->rule == KL_SUPP_ALL ? nslots : lo + 1;
    if (id->kind == KL_SUPP_REGION) {
      for (size_t k = lo; k < hi; k++)
        if (open[k] < 0) open[k] = (long)i;
    } else if (id->kind == KL_SUPP_ENABLE) {
      bool closed = false;
      for (size_t k = lo; k < hi; k++) {
        if (open[k] < 0) continue;
        kl_supp_range(s, (size_t)open[k], k, s->ids[open[k]].line, id->line);
        s->ids[open[k]].pair = (long)i;
        id->closes++;
        open[k] = -1;
        closed = true;
      }
      id->used = true;
      if (!closed)
        kl_supp_problem(s, id->start, id->end,
                        "`kernlint-enable %.*s` has no matching "
                        "kernlint-disable",
                        (int)(id->end - id->start), s->src->text + id->start);
    }
  }
  for (size_t k = 0; k < nslots; k++)
    if (open[k] >= 0) kl_supp_range(s, (size_t)open[k], k, s->ids[open[k]].line, UINT32_MAX);
}

static bool kl_supp_covers(const struct kl_supp_id *id, size_t slot, bool explicit_only) {
  if (id->rule == KL_SUPP_ALL) return !explicit_only;
  return id->rule >= 0 && (size_t)id->rule == slot;
}

/* The id that suppresses a finding of rule slot on line, most specific first; -1 if none. */
static long kl_supp_match(const struct kl_supp *s, uint32_t line, size_t slot, bool explicit_only) {
  for (size_t i = 0; i < s->nids; i++) {
    const struct kl_supp_id *id = &s->ids[i];
    if ((id->kind == KL_SUPP_LINE || id->kind == KL_SUPP_NEXT_LINE) && id->line == line &&
        kl_supp_covers(id, slot, explicit_only))
      return (long)i;
  }
  for (size_t i = 0; i < s->nranges; i++) {
    const struct kl_supp_range *r = &s->ranges[i];
    if (r->slot == slot && r->from <= line && line <= r->to &&
        (!explicit_only || s->ids[r->id].rule != KL_SUPP_ALL))
      return (long)r->id;
  }
  for (size_t i = 0; i < s->nids; i++) {
    const struct kl_supp_id *id = &s->ids[i];
    if (id->kind == KL_SUPP_FILE && kl_supp_covers(id, slot, explicit_only)) return (long)i;
  }
  return -1;
}

/* Add an unused-suppression report unless an explicit unused-suppression id covers it; returns
 * its index in diags, or -1. */
static long kl_supp_report(struct kl_supp *s, struct kl_diag_list *diags, enum kl_severity level,
                           int unused_rule, uint32_t start, uint32_t end, const char *msg) {
  struct kl_span sp = kl_diag_span(s->src, start, end);
  if (unused_rule >= 0) {
    long m = kl_supp_match(s, sp.line, (size_t)unused_rule, true);
    if (m >= 0) {
      s->ids[m].used = true;
      return -1;
    }
  }
  kl_diag_add(diags, "unused-suppression", level, sp, msg);
  return (long)diags->n - 1;
}

static bool kl_supp_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

/* The bytes that remove id i from its comment: the id with the separator after it (before it,
 * for the last), or with whole the comment itself: its whole line when it stands alone, else
 * with the blanks before it. False when that cannot be done safely. */
static bool kl_supp_cut(const struct kl_supp *s, size_t i, bool whole, uint32_t *from,
                        uint32_t *to) {
  const struct kl_supp_id *id = &s->ids[i];
  const char *t = s->src->text;
  uint32_t n = s->src->len;
  size_t last = id->first;
  while (last + 1 < s->nids && s->ids[last + 1].first == id->first) last++;
  if (!whole) {
    if (id->first == last) return false;
    *from = i < last ? id->start : s->ids[i - 1].end;
    *to = i < last ? s->ids[i + 1].start : id->end;
    return true;
  }
  /* Inside a Python string an escape (\n) may end the comment's line: its bytes are not the
   * comment's. */
  if (memchr(t + id->cstart, '\\', id->cend - id->cstart)) return false;
  uint32_t ls = id->cstart;
  while (ls > 0 && t[ls - 1] != '\n') ls--;
  uint32_t eol = kl_supp_eol(t, n, id->cend);
  bool alone = true;
  for (uint32_t k = ls; k < id->cstart && alone; k++) alone = kl_supp_blank(t[k]);
  for (uint32_t k = id->cend; k < eol && alone; k++) alone = kl_supp_blank(t[k]);
  *from = ls;
  *to = eol < n ? eol + 1 : eol;
  if (!alone) {
    *from = id->cstart;
    while (*from > ls && kl_supp_blank(t[*from - 1])) (*from)--;
    *to = id->cend;
    /* Code on both sides (`float/ * ... * /y`): keep a blank between them, or the cut would
     * join two tokens into one. */
    if (*from > ls && *to < eol && !kl_supp_blank(t[*to])) {
      if (*from == id->cstart) return false;
      (*from)++;
    }
  }
  return true;
}

/* The fix of the report of dead id i: the id goes from its comment, or the whole comment when
 * every id of it is reported. A region's kernlint-enable goes with it (its id, or its comment
 * when that is all it says), unless it closes other regions too: left alone it would have no
 * matching kernlint-disable. */
static void kl_supp_fix(struct kl_supp *s, struct kl_diag_list *diags, size_t i) {
  const struct kl_supp_id *id = &s->ids[i];
  const char *t = s->src->text;
  size_t last = id->first;
  bool all = true;
  while (last + 1 < s->nids && s->ids[last + 1].first == id->first) last++;
  for (size_t k = id->first; k <= last; k++) all &= s->ids[k].diag >= 0;
  uint32_t from, to, efrom = 0, eto = 0;
  if (!kl_supp_cut(s, i, all, &from, &to)) return;
  bool enable = id->kind == KL_SUPP_REGION && id->pair >= 0 && s->ids[id->pair].closes == 1;
  if (enable) {
    const struct kl_supp_id *e = &s->ids[id->pair];
    bool alone = e->first + 1 >= s->nids || s->ids[e->first + 1].first != e->first;
    if (!kl_supp_cut(s, (size_t)id->pair, alone, &efrom, &eto) || efrom < to) return;
  }
  const char *title = all ? "remove the unused suppression comment"
                          : kl_arena_printf(diags->arena, "remove `%.*s` from the comment",
                                            (int)(id->end - id->start), t + id->start);
  struct kl_fix *f = kl_diag_fix(diags, &diags->items[id->diag], title);
  kl_diag_edit(diags, f, from, to, "");
  if (enable) kl_diag_edit(diags, f, efrom, eto, "");
}

void kl_suppress_apply(const struct kl_source *src, struct kl_diag_list *diags,
                       enum kl_severity unused_level) {
  if (!src || !src->text || !diags) return;
  /* Cheap exit for the common file with no directive at all. */
  if (!strstr(src->text, "kernlint-disable") && !strstr(src->text, "kernlint-enable")) return;

  struct kl_supp s;
  memset(&s, 0, sizeof s);
  s.src = src;
  s.a = diags->arena;
  kl_rules_all(&s.nrules);
  int errcode;
  PCRE2_SIZE erroff;
  s.re =
      pcre2_compile((PCRE2_SPTR)kl_supp_pattern, PCRE2_ZERO_TERMINATED, 0, &errcode, &erroff, NULL);
  if (!s.re) {
    fprintf(stderr, "kernlint: internal error: bad suppression pattern at %zu\n", (size_t)erroff);
    abort();
  }
  s.md = pcre2_match_data_create_from_pattern(s.re, NULL);
  if (src->lang == KL_LANG_PYTHON)
    kl_supp_scan_python(&s);
  else
    kl_supp_scan_c(&s);
  pcre2_match_data_free(s.md);
  pcre2_code_free(s.re);
  kl_supp_regions(&s);

  /* Drop what is covered, keeping order. */
  size_t keep = 0;
  for (size_t i = 0; i < diags->n; i++) {
    struct kl_diag *d = &diags->items[i];
    int r = kl_rules_index(d->rule_id);
    size_t slot = r >= 0 ? (size_t)r : s.nrules;
    long m = kl_supp_match(&s, d->span.line, slot, false);
    if (m >= 0) {
      s.ids[m].used = true;
      continue;
    }
    if (keep != i) diags->items[keep] = *d;
    keep++;
  }
  diags->n = keep;

  if (unused_level != KL_SEV_OFF) {
    int unused_rule = kl_rules_index("unused-suppression");
    char msg[200];
    for (size_t i = 0; i < s.nproblems; i++)
      kl_supp_report(&s, diags, unused_level, unused_rule, s.problems[i].start, s.problems[i].end,
                     s.problems[i].msg);
    /* Reports about unused-suppression ids themselves come last: the reports above may use
     * them. */
    for (int pass = 0; pass < 2; pass++) {
      for (size_t i = 0; i < s.nids; i++) {
        struct kl_supp_id *id = &s.ids[i];
        bool self = unused_rule >= 0 && id->rule == unused_rule;
        if (self != (pass == 1)) continue;
        int len = (int)(id->end - id->start);
        if (len > 80) len = 80;
        const char *txt = src->text + id->start;
        if (id->rule == KL_SUPP_UNKNOWN) {
          snprintf(msg, sizeof msg, "unknown rule '%.*s'", len, txt);
        } else if (!id->used) {
          snprintf(msg, sizeof msg, "suppression of `%.*s` is unused", len, txt);
        } else {
          continue;
        }
        if (self) {
          kl_diag_add(diags, "unused-suppression", unused_level,
                      kl_diag_span(src, id->start, id->end), msg);
          id->diag = (long)diags->n - 1;
        } else {
          id->diag = kl_supp_report(&s, diags, unused_level, unused_rule, id->start, id->end, msg);
        }
      }
    }
    for (size_t i = 0; i < s.nids; i++)
      if (s.ids[i].diag >= 0) kl_supp_fix(&s, diags, i);
  }
}
