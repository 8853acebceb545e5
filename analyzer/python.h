/* The Python front end: finds the MLX `mx.fast.metal_kernel` / `mx.fast.MetalKernel` and PyTorch
 * `torch.mps.compile_shader` calls of a .py file under any import alias, recovers their MSL source
 * with an offset map back into the file (escapes, raw strings, concatenation, module constants),
 * builds the translation unit each one compiles (an MLX body gets MLX's generated signature), and
 * reads the calls that dispatch each kernel (grid, threadgroup, template, bfloat arguments). */
#ifndef KL_PYTHON_H
#define KL_PYTHON_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/arena.h"
#include "analyzer/diag.h"
#include "analyzer/dispatch.h"
#include "analyzer/offmap.h"
#include "analyzer/source.h"

/* One MSL translation unit embedded in the file, with the calls that dispatch its kernels. */
struct kl_py_embed {
  const char *name; /* MLX kernel name, or NULL for a PyTorch library */
  const char *text; /* MSL to parse; NULL when the source could not be resolved */
  uint32_t len;
  struct kl_offmap map;          /* text offset -> .py file offset */
  struct kl_dispatch_list calls; /* local dispatches (spans in the .py file) */
};

/* A kernel whose source kernlint could not recover, and why. */
struct kl_py_note {
  struct kl_span span;
  const char *message;
};

struct kl_python {
  struct kl_py_embed *embeds;
  size_t nembeds, cap_embeds;
  struct kl_py_note *notes;
  size_t nnotes, cap_notes;
};

/* Find every embedded kernel of a Python source. A file that names none of the three APIs is not
 * even parsed. Returns -1 with a reason in err when parsing is impossible (timeout). */
int kl_python_extract(struct kl_arena *a, const struct kl_source *src, struct kl_python *out,
                      char *err, size_t errlen);

#endif
