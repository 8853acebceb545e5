/* The dialect layer. (Macro expansion and _Pragma: in progress.) */
#include "grammar/dialect.h"

#include <stdio.h>
#include <string.h>

const TSLanguage *tree_sitter_cpp(void);
const TSLanguage *tree_sitter_python(void);

const TSLanguage *kl_dialect_cpp(void) { return tree_sitter_cpp(); }
const TSLanguage *kl_dialect_python(void) { return tree_sitter_python(); }

static const struct {
  const char *word;
  enum kl_kw kind;
} kl_dialect_words[] = {
    {"device", KL_KW_DEVICE},
    {"constant", KL_KW_CONSTANT},
    {"threadgroup", KL_KW_THREADGROUP},
    {"thread", KL_KW_THREAD},
    {"threadgroup_imageblock", KL_KW_THREADGROUP_IMAGEBLOCK},
    {"ray_data", KL_KW_RAY_DATA},
    {"object_data", KL_KW_OBJECT_DATA},
    {"kernel", KL_KW_KERNEL},
    {"vertex", KL_KW_VERTEX},
    {"fragment", KL_KW_FRAGMENT},
};

static int kl_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Blank MSL keywords in buf (a private copy) and record them. Words inside comments, string
 * literals and [[attributes]] are left alone: `[[kernel]]` and `[[threadgroup(0)]]` are C++. */
static void kl_dialect_blank(struct kl_arena *a, char *buf, uint32_t len, struct kl_unit *u) {
  int attr_depth = 0;
  for (uint32_t i = 0; i < len;) {
    char c = buf[i];
    if (c == '/' && i + 1 < len && buf[i + 1] == '/') {
      while (i < len && buf[i] != '\n') i++;
      continue;
    }
    if (c == '/' && i + 1 < len && buf[i + 1] == '*') {
      i += 2;
      while (i + 1 < len && !(buf[i] == '*' && buf[i + 1] == '/')) i++;
      i += 2;
      continue;
    }
    if (c == '"' || c == '\'') {
      for (i++; i < len && buf[i] != c && buf[i] != '\n'; i++)
        if (buf[i] == '\\') i++;
      i++;
      continue;
    }
    if (c == '[' && i + 1 < len && buf[i + 1] == '[') {
      attr_depth++;
      i += 2;
      continue;
    }
    if (c == ']' && i + 1 < len && buf[i + 1] == ']' && attr_depth > 0) {
      attr_depth--;
      i += 2;
      continue;
    }
    if (kl_ident_char(c) && !(c >= '0' && c <= '9')) {
      uint32_t s = i;
      while (i < len && kl_ident_char(buf[i])) i++;
      if (attr_depth > 0) continue;
      /* `metal::thread` or `x.device` are names, not qualifiers. */
      if (s >= 1 && (buf[s - 1] == '.' || buf[s - 1] == ':' || buf[s - 1] == '>')) continue;
      for (size_t k = 0; k < sizeof kl_dialect_words / sizeof kl_dialect_words[0]; k++) {
        const char *w = kl_dialect_words[k].word;
        if (strlen(w) == i - s && !memcmp(buf + s, w, i - s)) {
          KL_VEC_PUSH(a, u->kws, u->nkws, u->cap_kws);
          u->kws[u->nkws++] = (struct kl_keyword){s, i - s, kl_dialect_words[k].kind};
          memset(buf + s, ' ', i - s);
          break;
        }
      }
      continue;
    }
    i++;
  }
}

static unsigned kl_dialect_count_errors(TSNode n) {
  if (ts_node_is_missing(n)) return 1;
  if (!ts_node_has_error(n)) return 0;
  unsigned c = !strcmp(ts_node_type(n), "ERROR");
  uint32_t k = ts_node_child_count(n);
  for (uint32_t i = 0; i < k; i++) c += kl_dialect_count_errors(ts_node_child(n, i));
  return c;
}

int kl_dialect_parse(struct kl_arena *a, const struct kl_source *src, const char *text,
                     uint32_t len, const struct kl_offmap *base, const char *include_dir,
                     struct kl_unit *unit, char *err, size_t errlen) {
  memset(unit, 0, sizeof *unit);
  unit->src = src;
  char *buf = kl_arena_strndup(a, text, len);
  kl_dialect_blank(a, buf, len, unit);
  unit->buf = buf;
  unit->len = len;
  if (base)
    unit->map = *base;
  else
    kl_offmap_identity(&unit->map, a, len);
  TSParser *p = ts_parser_new();
  ts_parser_set_language(p, kl_dialect_cpp());
  unit->tree = ts_parser_parse_string(p, NULL, buf, len);
  ts_parser_delete(p);
  if (!unit->tree) {
    snprintf(err, errlen, "parser failed");
    return -1;
  }
  unit->nerrors = kl_dialect_count_errors(ts_tree_root_node(unit->tree));
  return 0;
}

void kl_dialect_release(struct kl_unit *unit) {
  if (unit->tree) ts_tree_delete(unit->tree);
  unit->tree = NULL;
}

/* Index of the first keyword at or after off. */
static size_t kl_dialect_kw_lower(const struct kl_unit *unit, uint32_t off) {
  size_t lo = 0, hi = unit->nkws;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (unit->kws[mid].off < off)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

const struct kl_keyword *kl_dialect_keyword_at(const struct kl_unit *unit, uint32_t off) {
  size_t i = kl_dialect_kw_lower(unit, off);
  return i < unit->nkws && unit->kws[i].off == off ? &unit->kws[i] : NULL;
}

const struct kl_keyword *kl_dialect_keywords_in(const struct kl_unit *unit, uint32_t start,
                                                uint32_t end, size_t *n) {
  size_t i = kl_dialect_kw_lower(unit, start), j = i;
  while (j < unit->nkws && unit->kws[j].off < end) j++;
  *n = j - i;
  return *n ? &unit->kws[i] : NULL;
}

char *kl_dialect_node_text(struct kl_arena *a, const struct kl_unit *unit, TSNode node) {
  uint32_t s = ts_node_start_byte(node), e = ts_node_end_byte(node);
  return kl_arena_strndup(a, unit->buf + s, e - s);
}
