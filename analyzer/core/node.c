#include "analyzer/core/node.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Names are literals, so their address is a key; each thread keeps its own table (no locks), and
 * a name that finds no slot is answered the slow way. */
enum { KL_NODE_SLOTS = 512, KL_NODE_PROBES = 8, KL_NODE_SYMS = 4 };

struct kl_node_kind {
  const char *type;
  const TSLanguage *lang;
  uint8_t nsyms; /* KL_NODE_SYMS + 1: more symbols carry the name than fit, compare strings */
  TSSymbol syms[KL_NODE_SYMS];
};

struct kl_node_field {
  const char *name;
  const TSLanguage *lang;
  TSFieldId id;
};

static _Thread_local struct kl_node_kind kl_node_kinds[KL_NODE_SLOTS];
static _Thread_local struct kl_node_field kl_node_fields[KL_NODE_SLOTS];

static size_t kl_node_slot(const void *p) {
  uintptr_t h = (uintptr_t)p;
  h ^= h >> 9;
  return (size_t)(h * 0x9E3779B97F4A7C15u >> 40) % KL_NODE_SLOTS;
}

/* Every symbol named type, aliases included: ts_node_symbol gives the grammar's public symbol of
 * a node, which carries the node's own name, so membership is the same test as the names'. */
static void kl_node_kind_fill(struct kl_node_kind *k, const TSLanguage *lang, const char *type) {
  k->type = type;
  k->lang = lang;
  k->nsyms = 0;
  uint32_t count = ts_language_symbol_count(lang);
  const TSSymbol builtin[] = {(TSSymbol)-1, (TSSymbol)-2}; /* ERROR and its repeat */
  for (uint32_t i = 0; i < count + 2; i++) {
    TSSymbol s = i < count ? (TSSymbol)i : builtin[i - count];
    const char *name = ts_language_symbol_name(lang, s);
    if (!name || strcmp(name, type)) continue;
    if (k->nsyms == KL_NODE_SYMS) {
      k->nsyms = KL_NODE_SYMS + 1;
      return;
    }
    k->syms[k->nsyms++] = s;
  }
}

bool kl_node_is(TSNode n, const char *type) {
  if (!n.tree) return !strcmp(ts_node_type(n), type);
  const TSLanguage *lang = ts_tree_language(n.tree);
  size_t h = kl_node_slot(type);
  struct kl_node_kind *k = NULL;
  for (size_t i = 0; i < KL_NODE_PROBES; i++) {
    struct kl_node_kind *e = &kl_node_kinds[(h + i) % KL_NODE_SLOTS];
    if (e->type == type && e->lang == lang) {
      k = e;
      break;
    }
    if (!e->type) {
      kl_node_kind_fill(e, lang, type);
      k = e;
      break;
    }
  }
  if (!k || k->nsyms > KL_NODE_SYMS) return !strcmp(ts_node_type(n), type);
  TSSymbol s = ts_node_symbol(n);
  for (uint8_t i = 0; i < k->nsyms; i++)
    if (k->syms[i] == s) return true;
  return false;
}

enum { KL_KIND_LANGS = 2 };

#define KL_KIND_NAME(k, name) name,
static const char *const kl_kind_names[KL_KIND_COUNT] = {NULL, KL_NODE_KINDS(KL_KIND_NAME)};
#undef KL_KIND_NAME

/* Per thread, like the tables above. */
static _Thread_local struct kl_kind_table kl_kind_tables[KL_KIND_LANGS];
_Thread_local const struct kl_kind_table *kl_node_kind_last;

static enum kl_kind kl_kind_by_name(const char *type) {
  for (int k = 1; type && k < KL_KIND_COUNT; k++)
    if (!strcmp(kl_kind_names[k], type)) return (enum kl_kind)k;
  return KL_KIND_OTHER;
}

static const struct kl_kind_table *kl_kind_table(const TSLanguage *lang) {
  for (int i = 0; i < KL_KIND_LANGS; i++) {
    struct kl_kind_table *t = &kl_kind_tables[i];
    if (t->lang == lang) return t;
    if (t->lang) continue;
    uint32_t count = ts_language_symbol_count(lang);
    for (uint32_t s = 0; s < count && s < KL_KIND_SYMS; s++)
      t->kind[s] = (uint8_t)kl_kind_by_name(ts_language_symbol_name(lang, (TSSymbol)s));
    t->lang = lang;
    return t;
  }
  return NULL;
}

enum kl_kind kl_node_kind_slow(TSNode n) {
  if (!n.id) return KL_KIND_OTHER;
  const struct kl_kind_table *t = n.tree ? kl_kind_table(ts_tree_language(n.tree)) : NULL;
  if (t) kl_node_kind_last = t;
  TSSymbol s = t ? ts_node_symbol(n) : 0;
  if (!t || s >= KL_KIND_SYMS) return kl_kind_by_name(ts_node_type(n));
  return (enum kl_kind)t->kind[s];
}

/* Children remembered per thread, in a table of slots each holding one child of one node,
 * overwritten on a collision: the same few thousand nodes are asked about again and again while a
 * kernel is walked, and a miss costs what the question cost before. A slot is good while
 * kl_node_gen is what it was when the slot was filled; deleting any tree moves it on. */
enum { KL_KID_SLOTS = 8192, KL_KID_FIELD = 0x80000000u };

struct kl_kid_slot {
  const void *id;
  const void *tree;
  uint32_t start, which;
  uint64_t gen;
  TSNode child;
};

static _Thread_local struct kl_kid_slot kl_kid_slots[KL_KID_SLOTS];
static atomic_ullong kl_node_gen = 1; /* 64 bits: never wraps back to a slot's value */

void kl_node_tree_delete(TSTree *t) {
  atomic_fetch_add_explicit(&kl_node_gen, 1, memory_order_relaxed);
  ts_tree_delete(t);
}

/* n's child `which` (an index, or KL_KID_FIELD | a field id), from the table or asked. */
static TSNode kl_kid(TSNode n, uint32_t which) {
  uint32_t start = ts_node_start_byte(n);
  uint64_t h = ((uint64_t)(uintptr_t)n.id ^ (uint64_t)which * 0x9E3779B1u) * 0x9E3779B97F4A7C15u;
  struct kl_kid_slot *s = &kl_kid_slots[(h >> 40) & (KL_KID_SLOTS - 1)];
  uint64_t gen = atomic_load_explicit(&kl_node_gen, memory_order_relaxed);
  if (s->id == n.id && s->tree == n.tree && s->start == start && s->which == which &&
      s->gen == gen)
    return s->child;
  TSNode c = which & KL_KID_FIELD ? ts_node_child_by_field_id(n, (TSFieldId)(which & 0xffff))
                                  : ts_node_named_child(n, which);
  *s = (struct kl_kid_slot){n.id, n.tree, start, which, gen, c};
  return c;
}

TSNode kl_node_named_child(TSNode n, uint32_t i) {
  if (!n.id || !n.tree || i >= KL_KID_FIELD) return ts_node_named_child(n, i);
  return kl_kid(n, i);
}

TSNode kl_node_field(TSNode n, const char *name) {
  if (!n.tree) return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name));
  const TSLanguage *lang = ts_tree_language(n.tree);
  size_t h = kl_node_slot(name);
  for (size_t i = 0; i < KL_NODE_PROBES; i++) {
    struct kl_node_field *e = &kl_node_fields[(h + i) % KL_NODE_SLOTS];
    if (!e->name) {
      e->name = name;
      e->lang = lang;
      e->id = ts_language_field_id_for_name(lang, name, (uint32_t)strlen(name));
    } else if (e->name != name || e->lang != lang) {
      continue;
    }
    return n.id ? kl_kid(n, KL_KID_FIELD | e->id) : ts_node_child_by_field_id(n, e->id);
  }
  return ts_node_child_by_field_name(n, name, (uint32_t)strlen(name));
}

const TSNode *kl_node_kids(struct kl_arena *a, TSNode n, TSNode *buf, uint32_t cap, uint32_t *k) {
  uint32_t count = ts_node_is_null(n) ? 0 : ts_node_named_child_count(n);
  *k = count;
  TSNode *out = count <= cap ? buf : kl_arena_alloc(a, count * sizeof *out);
  if (count <= 2) {
    for (uint32_t i = 0; i < count; i++) out[i] = ts_node_named_child(n, i);
    return out;
  }
  TSTreeCursor c = ts_tree_cursor_new(n);
  uint32_t i = 0;
  if (ts_tree_cursor_goto_first_child(&c)) {
    do {
      TSNode x = ts_tree_cursor_current_node(&c);
      if (ts_node_is_named(x) && i < count) out[i++] = x;
    } while (ts_tree_cursor_goto_next_sibling(&c));
  }
  ts_tree_cursor_delete(&c);
  /* The two ways of counting agree on every tree seen; should they not, the slow way decides. */
  for (; i < count; i++) out[i] = ts_node_named_child(n, i);
  return out;
}

void kl_node_map_free(struct kl_node_map *m) {
  free(m->slots);
  memset(m, 0, sizeof *m);
}

struct kl_node_map_slot {
  const void *id; /* the node's, NULL for an empty slot */
  uint32_t start;
  const void *key, *value;
};

static size_t kl_node_map_hash(const void *id, uint32_t start, const void *k, size_t mask) {
  uint64_t h = (uint64_t)(uintptr_t)id ^ ((uint64_t)start << 32) ^ (uint64_t)(uintptr_t)k * 31u;
  return (size_t)((h * 0x9E3779B97F4A7C15u) >> 29) & mask;
}

bool kl_node_map_get(const struct kl_node_map *m, TSNode n, const void *k, const void **v) {
  if (!m->cap || !n.id) return false;
  uint32_t start = ts_node_start_byte(n);
  for (size_t h = kl_node_map_hash(n.id, start, k, m->cap - 1); m->slots[h].id;
       h = (h + 1) & (m->cap - 1)) {
    const struct kl_node_map_slot *s = &m->slots[h];
    if (s->id == n.id && s->start == start && s->key == k) {
      *v = s->value;
      return true;
    }
  }
  return false;
}

static void kl_node_map_insert(struct kl_node_map *m, const struct kl_node_map_slot *s) {
  size_t h = kl_node_map_hash(s->id, s->start, s->key, m->cap - 1);
  while (m->slots[h].id) h = (h + 1) & (m->cap - 1);
  m->slots[h] = *s;
  m->n++;
}

void kl_node_map_put(struct kl_arena *a, struct kl_node_map *m, TSNode n, const void *k,
                     const void *v) {
  (void)a;
  if (!n.id) return;
  if (4 * (m->n + 1) > 3 * m->cap) { /* three quarters full: a big file's tables are MBs */
    /* The slots are malloc'd, not the arena's: a big file's maps double many times, and the
     * arena would keep every outgrown table until the file is done. */
    struct kl_node_map old = *m;
    m->cap = old.cap ? 2 * old.cap : 256;
    m->n = 0;
    m->slots = kl_arena_xmalloc(m->cap * sizeof *m->slots);
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    for (size_t i = 0; i < old.cap; i++)
      if (old.slots[i].id) kl_node_map_insert(m, &old.slots[i]);
    free(old.slots);
  }
  struct kl_node_map_slot s = {n.id, ts_node_start_byte(n), k, v};
  kl_node_map_insert(m, &s);
}
