/* The C++/Objective-C host front end: finds `dispatchThreads` and `dispatchThreadgroups` in
 * metal-cpp (`encoder->dispatchThreads(MTL::Size(...), ...)`) and Objective-C (`[encoder
 * dispatchThreads:MTLSizeMake(...) threadsPerThreadgroup:...]`) code, folds their sizes with
 * simple constant propagation, and ties each to the kernel whose name string made the pipeline
 * it runs, where that string is visible in the same file. Objective-C message sends are not C++,
 * so this reads a token stream rather than a tree. */
#ifndef KL_HOST_H
#define KL_HOST_H

#include <stdbool.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/dispatch.h"
#include "analyzer/input/source.h"

/* Whether path names a header (.h, .hpp), which may hold MSL or host code. */
bool kl_host_is_header(const char *path);
/* Whether src is host code: a .mm/.m/.cpp/.cc file, or a header (.h, .hpp) that dispatches. */
bool kl_host_is_host(const struct kl_source *src);
/* Append the dispatches src makes to out, marked local, with every string in out's arena;
 * scratch memory comes from a. */
void kl_host_dispatches(struct kl_arena *a, const struct kl_source *src,
                        struct kl_dispatch_list *out);

#endif
