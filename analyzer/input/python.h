/* The Python front end: finds the MLX `mx.fast.metal_kernel` / `mx.fast.MetalKernel` and PyTorch
 * `torch.mps.compile_shader` calls of a .py file under any import alias, recovers their MSL source
 * with an offset map back into the file (escapes, raw strings, concatenation, module constants),
 * builds the translation unit each one compiles (an MLX body gets MLX's generated signature), and
 * reads the calls that dispatch each kernel (grid, threadgroup, template, bfloat arguments). */
#ifndef KL_PYTHON_H
#define KL_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/pyembed.h"
#include "analyzer/input/source.h"

/* Find every embedded kernel of a Python source. A file that names none of the three APIs is not
 * even parsed. Returns -1 with a reason in err when parsing is impossible (timeout). */
int kl_python_extract(struct kl_arena *a, const struct kl_source *src, struct kl_python *out,
                      char *err, size_t errlen);
struct kl_dialect_kept;
/* kl_python_extract of the next version of a document: its parse edits the tree k kept of the
 * version before (grammar/dialect.h, kl_dialect_parse_kept), and k then keeps this version's. */
int kl_python_extract_kept(struct kl_arena *a, const struct kl_source *src,
                           struct kl_dialect_kept *k, struct kl_python *out, char *err,
                           size_t errlen);

#endif
