/* Path facts of a Python launch: the divisibility tests that hold where a kernel is dispatched
 * (an `if n % 64 == 0:` around the call, an early return past it, or a factory argument such as
 * `aligned=n % 8 == 0` whose branch of the kernel's source the build took), and the grid
 * dimensions they make exact: a count rounded up to whole groups is the count itself when the
 * group's share divides it. Internal to the Python front end. */
#ifndef KL_PYPATH_H
#define KL_PYPATH_H

#include <tree_sitter/api.h>

#include "analyzer/input/dispatch.h"
#include "analyzer/input/py.h"

/* Mark the dimensions of d's grid (written at grid, of the call use) that the facts on the
 * current build's path make exact (grid_exact), and take them out of its rounded ones. Call it
 * once the build's source is read, so that its choices are known. */
void kl_pypath_refine(struct kl_py *p, struct kl_dispatch *d, TSNode use, TSNode grid);

#endif
