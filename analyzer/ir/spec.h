/* The specialisations of a kernel: the values its value template parameters take in the file's
 * explicit instantiations, in the template bindings of calls (MLX template=) and, for a header's
 * kernel, in the instantiations other files of the run make, times each value of the bool
 * function constants it tests. The flow analysis and the IR lowering enumerate them alike. */
#ifndef KL_IR_SPEC_H
#define KL_IR_SPEC_H

#include <stddef.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/core/model.h"

/* At most this many specialisations of one kernel, and bool function constants enumerated. */
enum { KL_SPEC_MAX_INSTS = 32, KL_SPEC_MAX_FCONSTS = 3 };

/* A value a specialisation gives a name: a template parameter or a function constant ("1"). */
struct kl_spec_bind {
  const char *name;
  const char *text;
};

/* One specialisation of a kernel. */
struct kl_spec {
  struct kl_spec_bind *b;
  size_t n;
  const char *label;  /* "N = 2, has_mask = true"; NULL for none */
  const char **hosts; /* the host names of the instantiations it stands for */
  size_t nhosts, cap_hosts;
};

/* The specialisations of kernel fn in *out (at least one: a kernel with neither template values
 * nor function constants is one specialisation with no label); returns how many. */
size_t kl_spec_enumerate(struct kl_arena *a, const struct kl_model *m, const struct kl_function *fn,
                         const struct kl_dispatch *calls, size_t ncalls,
                         const struct kl_inst *xinsts, size_t nxinsts,
                         struct kl_spec **out);

#endif
