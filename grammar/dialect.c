/* STUB: replaced by the dialect layer. Parses the text as plain C++. */
#include "grammar/dialect.h"

#include <stdio.h>
#include <string.h>

const TSLanguage *tree_sitter_cpp(void);
const TSLanguage *tree_sitter_python(void);

const TSLanguage *kl_dialect_cpp(void) { return tree_sitter_cpp(); }
const TSLanguage *kl_dialect_python(void) { return tree_sitter_python(); }

int kl_dialect_parse(struct kl_arena *a, const struct kl_source *src, const char *text,
                     uint32_t len, const struct kl_offmap *base, const char *include_dir,
                     struct kl_unit *unit, char *err, size_t errlen) {
  memset(unit, 0, sizeof *unit);
  unit->src = src;
  unit->buf = text;
  unit->len = len;
  if (base)
    unit->map = *base;
  else
    kl_offmap_identity(&unit->map, a, len);
  TSParser *p = ts_parser_new();
  ts_parser_set_language(p, kl_dialect_cpp());
  unit->tree = ts_parser_parse_string(p, NULL, text, len);
  ts_parser_delete(p);
  if (!unit->tree) {
    snprintf(err, errlen, "parser failed");
    return -1;
  }
  return 0;
}

void kl_dialect_release(struct kl_unit *unit) {
  if (unit->tree) ts_tree_delete(unit->tree);
  unit->tree = NULL;
}

const struct kl_keyword *kl_dialect_keyword_at(const struct kl_unit *unit, uint32_t off) {
  return NULL;
}

const struct kl_keyword *kl_dialect_keywords_in(const struct kl_unit *unit, uint32_t start,
                                                uint32_t end, size_t *n) {
  *n = 0;
  return NULL;
}

char *kl_dialect_node_text(struct kl_arena *a, const struct kl_unit *unit, TSNode node) {
  uint32_t s = ts_node_start_byte(node), e = ts_node_end_byte(node);
  return kl_arena_strndup(a, unit->buf + s, e - s);
}
