/* Explicit instantiations of function templates read from text, without a parse: what the
 * preprocessor keeps of a macro call that stamps out nothing but instantiations, and what the
 * dialect layer reads of a header's instantiations for the files that include it. */
#ifndef KL_INST_H
#define KL_INST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"

/* An explicit instantiation read from text: `template [[host_name("n")]] [[kernel]]
 * decltype(f<A, 2>) f<A, 2>;`, `template [[host_name("n")]] kernel K f<A>;` or
 * `template [[host_name("n")]] [[kernel]] void f<A>(params);`. */
struct kl_inst {
  const char *function;
  const char *host_name; /* the string literals of host_name(...) joined, or NULL */
  const char **targs;    /* the template arguments as written, whitespace collapsed */
  size_t ntargs;
  uint32_t start, end; /* the statement in the unit's buffer (0, 0 when read from another file) */
  const char *text;    /* the statement's text, textlen bytes */
  uint32_t textlen;
  bool placeholder; /* made by a macro and left out of the buffer: [start, end) is the one
                       byte that stands for the macro call */
};
/* Read the explicit instantiation of a function template whose `template` keyword is at t[i]
 * (the start of a statement); its text is not copied. Returns false, leaving out untouched,
 * for anything else (a template declaration, a class instantiation, a statement the reader
 * cannot split), which tree-sitter then parses. *end is the offset after its `;`. */
bool kl_inst_read(struct kl_arena *a, const char *t, uint32_t n, uint32_t i, struct kl_inst *out,
                  uint32_t *end);

#endif
