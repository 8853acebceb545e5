/* The inputs of a run: the paths named on the command line, and the files with a linted
 * extension in the folders among them, each once, in path order. */
#ifndef KL_INPUTS_H
#define KL_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "analyzer/cli/opts.h"
#include "analyzer/report/emit.h"

struct kl_input {
  char *path;
  bool named; /* named on the command line: linted even when a config excludes it */
  const char *arg; /* the command-line path it was found through (its project's bound) */
  bool is_stdin;
  bool has_id; /* dev/ino are known (the file exists) */
  dev_t dev;
  ino_t ino;
};

struct kl_dirid {
  dev_t dev;
  ino_t ino;
};

/* Folders walked per run, at most: a maze of symlinks that is not a loop can still multiply
 * paths, and a lint run must end. */
#define KL_WALK_MAX_DIRS 100000

struct kl_inputs {
  struct kl_input *items;
  size_t n, cap;
  struct kl_dirid *stack; /* the folders being walked, outermost first: a symlink loop leads
                             back to one of them */
  size_t depth, capstack;
  size_t walked;
  struct kl_emitter *emit; /* also counts the inputs and configs that could not be used */
  const char *arg;         /* the command-line path being collected */
};

/* Report an input that cannot be linted, on stderr and to the emitter. */
void kl_inputs_error(struct kl_inputs *in, const char *path, const char *problem);
/* Every input once, sorted by path. A file reached by several paths (symlinked folders, the
 * same folder named twice) is linted once, under its smallest path, so the result does not
 * depend on the order of the arguments. */
void kl_inputs_collect(struct kl_inputs *in, const struct kl_opts *o);
/* Free what kl_inputs_collect allocated. */
void kl_inputs_free(struct kl_inputs *in);
/* Standard input, read up to one byte past the size limit so the loader can refuse it. */
char *kl_inputs_read_stdin(size_t *len, char *err, size_t errlen);

#endif
