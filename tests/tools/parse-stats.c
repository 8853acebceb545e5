/* Developer tool: how much of each file the MSL parse leaves in ERROR nodes, after the dialect
 * layer, exactly as the engine parses it (macro expansion included). Python files count the MSL
 * they embed; host code and Python without kernels count nothing.
 * Usage: parse-stats [-v] FILE...
 * Prints one line per file: path, parsed bytes, bytes inside ERROR nodes, ERROR nodes, TAB
 * separated; a file that cannot be read or parsed gets "-" counts and its reason on stderr.
 * With -v first, each outermost ERROR node is also shown on stderr: its line in the parsed
 * buffer and its first bytes, to find what the parser choked on; and each MISSING node (a token
 * error recovery made up, which counts in neither figure but may have cost a statement). */
#include <stdio.h>
#include <string.h>

#include "analyzer/input/host.h"
#include "analyzer/input/python.h"
#include "analyzer/input/source.h"
#include "grammar/dialect.h"

struct kl_ps_count {
  uint64_t bytes; /* inside outermost ERROR nodes */
  uint64_t nodes;
  const char *buf; /* the parsed buffer, when -v shows the errors */
  const char *path;
};

static int kl_ps_verbose;

/* Outermost ERROR nodes only, so nested errors are not counted twice. */
static enum kl_walk kl_ps_visit(TSNode n, void *ctx) {
  struct kl_ps_count *c = ctx;
  if (c->buf && ts_node_is_missing(n)) {
    uint32_t s = ts_node_start_byte(n), from = s > 60 ? s - 60 : 0;
    fprintf(stderr, "%s:%u: MISSING %s after ", c->path, ts_node_start_point(n).row + 1,
            ts_node_type(n));
    for (uint32_t i = from; i < s; i++) fputc(c->buf[i] == '\n' ? ' ' : c->buf[i], stderr);
    fputc('\n', stderr);
  }
  if (strcmp(ts_node_type(n), "ERROR"))
    return ts_node_has_error(n) ? KL_WALK_DESCEND : KL_WALK_SKIP;
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  c->bytes += e - s;
  c->nodes++;
  if (c->buf) {
    uint32_t from = s > 40 ? s - 40 : 0, to = e - s > 80 ? s + 80 : e;
    fprintf(stderr, "%s:%u: [%u] ", c->path, ts_node_start_point(n).row + 1, e - s);
    for (uint32_t i = from; i < to; i++) {
      if (i == s) fputs("\u00bb", stderr);
      fputc(c->buf[i] == '\n' || c->buf[i] == '\t' ? ' ' : c->buf[i], stderr);
    }
    fputc('\n', stderr);
  }
  return KL_WALK_SKIP;
}

static char *kl_ps_dirname(struct kl_arena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? kl_arena_strndup(a, path, (size_t)(slash - path)) : kl_arena_strdup(a, ".");
}

/* Parse one MSL text; adds its length and error counts. */
static int kl_ps_unit(struct kl_arena *a, const struct kl_source *src, const char *text,
                      uint32_t len, const struct kl_offmap *map, uint64_t *total,
                      struct kl_ps_count *c, char *err, size_t errlen) {
  struct kl_unit u;
  if (kl_dialect_parse(a, src, text, len, map, kl_ps_dirname(a, src->path), &u, err, errlen))
    return -1;
  *total += u.len;
  c->buf = kl_ps_verbose ? u.buf : NULL;
  c->path = src->path;
  kl_dialect_walk(ts_tree_root_node(u.tree), kl_ps_visit, c, NULL);
  kl_dialect_release(&u);
  return 0;
}

static int kl_ps_file(const char *path) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256] = "";
  uint64_t total = 0;
  struct kl_ps_count c = {0, 0, NULL, NULL};
  int rc = kl_source_load(a, path, &src, err, sizeof err);
  if (rc == 0 && src.lang == KL_LANG_PYTHON) {
    struct kl_python py;
    rc = kl_python_extract(a, &src, &py, err, sizeof err);
    for (size_t i = 0; rc == 0 && i < py.nembeds; i++)
      if (py.embeds[i].text)
        rc = kl_ps_unit(a, &src, py.embeds[i].text, py.embeds[i].len, &py.embeds[i].map, &total, &c,
                        err, sizeof err);
  } else if (rc == 0 && src.lang != KL_LANG_HOST && !kl_host_is_host(&src)) {
    rc = kl_ps_unit(a, &src, src.text, src.len, NULL, &total, &c, err, sizeof err);
  }
  if (rc != 0) {
    fprintf(stderr, "%s: %s\n", path, err);
    printf("%s\t-\t-\t-\n", path);
  } else {
    printf("%s\t%llu\t%llu\t%llu\n", path, (unsigned long long)total, (unsigned long long)c.bytes,
           (unsigned long long)c.nodes);
  }
  kl_arena_delete(a);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: parse-stats [-v] FILE...\n");
    return 2;
  }
  int rc = 0, first = 1;
  if (!strcmp(argv[1], "-v")) kl_ps_verbose = 1, first = 2;
  for (int i = first; i < argc; i++)
    if (kl_ps_file(argv[i]) != 0) rc = 1;
  return rc;
}
