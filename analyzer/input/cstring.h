/* MSL held in the string literals of host code: C, C++ and Objective-C (`R"metal(...)metal"`,
 * `"kernel void f(...)\n" "{\n"`, `@"..."`) and Swift (`"""` blocks), which a host program hands
 * to `newLibraryWithSource:` at run time. Each run of adjacent literals that spells an MSL
 * kernel is decoded (escapes undone, the pieces joined) with a map back to the file, so the
 * engine lints it as a unit of its own and every finding lands on the file's own line. */
#ifndef KL_CSTRING_H
#define KL_CSTRING_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/offmap.h"
#include "analyzer/input/source.h"

/* One MSL source a run of literals spells. */
struct kl_cstring {
  const char *text; /* the decoded MSL, NUL-terminated, in the arena */
  uint32_t len;
  struct kl_offmap map; /* text offsets to the file's */
  uint32_t start, end;  /* the file bytes of the literals, first quote (or prefix) to last */
};

/* The literal runs of src that hold an MSL kernel (a `kernel void` or `[[kernel]]` function),
 * in file order, in *out; returns how many. A text with fields a host program fills in before
 * it compiles (`{0}`, `%s`, Swift's `\(x)`) is a template, not MSL, and is left out. */
size_t kl_cstring_find(struct kl_arena *a, const struct kl_source *src, struct kl_cstring **out);

#endif
