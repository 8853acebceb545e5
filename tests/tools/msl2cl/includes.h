/* msl2cl's reading of local includes: the text it translates is a file with the local headers it
 * includes put before it, each part led by a #line directive so that Oclgrind's "At line N" still
 * names a line of the file it comes from. */
#ifndef KL_M2C_INCLUDES_H
#define KL_M2C_INCLUDES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"

/* The text of path with the local headers (`#include "x.h"` found beside the including file)
 * it reaches, each once and before what includes it, their include lines and `#pragma once`
 * blanked; with none, path's own text. with, when not NULL, is a file that goes after path (with
 * its own headers not read yet): the definitions of functions path only declares. *joined says
 * whether any part was added; want, when not NULL, is a file that must be among those read
 * (*found says whether it was). NULL with a reason in err when a file cannot be read. */
const char *kl_m2c_includes_join(struct kl_arena *a, const char *path, const char *with,
                                 const char *want, uint32_t *len, bool *joined, bool *found,
                                 char *err, size_t errlen);

#endif
