/* Developer tool: how far kernlint reads each kernel that a Python file makes.
 * Usage: py-kernels [--text] FILE...
 * Prints one line per kernel-making call: path, line, how its source was read, units built,
 * opaque fields, TAB separated. How: `exact` (every value known), `skeleton` (some fields opaque),
 * `body` (the header could not be read; the body is analysed), `unresolved` (not analysed).
 * With --text, each unit's MSL follows its call's line, between `----` lines. */
#include <stdio.h>
#include <string.h>

#include "analyzer/input/python.h"
#include "analyzer/input/source.h"

static bool kl_pk_text;

static void kl_pk_file(const char *path) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256] = "";
  struct kl_python py;
  if (kl_source_load(a, path, &src, err, sizeof err) != 0 || src.lang != KL_LANG_PYTHON ||
      kl_python_extract(a, &src, &py, err, sizeof err) != 0) {
    if (*err) fprintf(stderr, "py-kernels: %s: %s\n", path, err);
    kl_arena_delete(a);
    return;
  }
  for (size_t i = 0; i < py.nembeds; i++) {
    const struct kl_py_embed *em = &py.embeds[i];
    if (i > 0 && py.embeds[i - 1].group == em->group) continue;
    size_t units = 0, fields = 0;
    bool partial = false;
    for (size_t k = i; k < py.nembeds && py.embeds[k].group == em->group; k++) {
      if (py.embeds[k].text) units++;
      if (py.embeds[k].nfields > fields) fields = py.embeds[k].nfields;
      partial |= py.embeds[k].partial;
    }
    const char *how = !units ? "unresolved" : partial ? "body" : fields ? "skeleton" : "exact";
    printf("%s\t%u\t%s\t%zu\t%zu\n", path, em->site.line, how, units, fields);
    for (size_t k = i; kl_pk_text && k < py.nembeds && py.embeds[k].group == em->group; k++)
      if (py.embeds[k].text) printf("----\n%.*s\n----\n", (int)py.embeds[k].len, py.embeds[k].text);
  }
  kl_arena_delete(a);
}

int main(int argc, char **argv) {
  int i = 1;
  if (i < argc && !strcmp(argv[i], "--text")) kl_pk_text = true, i++;
  for (; i < argc; i++) kl_pk_file(argv[i]);
  return 0;
}
