/* What the Python front end gives for a .py file (kl_python_extract in python.h): the MSL
 * units embedded in it, each with its offset map, opaque fields and dispatches, and a note for
 * each kernel whose source is out of reach. Types only, so that the reader's parts (py.h,
 * pyval.h) fill them in without depending on the reader. */
#ifndef KL_PYEMBED_H
#define KL_PYEMBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/input/dispatch.h"
#include "analyzer/input/offmap.h"
#include "analyzer/report/diag.h"

/* A replacement field of the source (f-string, `.format()`, `%`, `.replace()`) whose value is
 * not known: the MSL reads it as the opaque identifier `__kl_field_N`. */
struct kl_py_field {
  struct kl_span span; /* the field in the .py file */
  const char *text;    /* the field as written, on one line */
  bool control;        /* it may decide which threads go on: generated statements, or part of an
                          `if`/`while` condition or a `?:` */
};

/* One MSL translation unit embedded in the file, with the calls that dispatch its kernels. A
 * kernel built at run time can give several units, one per instance: each distinct set of
 * literal arguments its factory is called with, each choice of its conditional fragments. */
struct kl_py_embed {
  const char *name;  /* MLX kernel name as written (with an f-string's fields), or NULL for a
                        PyTorch library */
  const char *fname; /* the kernel function kernlint declares for an MLX body (an identifier made
                        of name), which messages show as name */
  const char *text;  /* MSL to parse; NULL when the source could not be resolved */
  uint32_t len;
  struct kl_offmap map;          /* text offset -> .py file offset */
  struct kl_dispatch_list calls; /* local dispatches (spans in the .py file) */
  struct kl_span site;           /* the call that makes the kernel */
  size_t group;                  /* embeds of one kernel-making call share a group */
  size_t ninstances;             /* how many embeds the group has */
  const char *label;             /* which instance this is, for a message ("for `f(True)` at
                                    line 40"); NULL when the group has one */
  struct kl_py_field *fields;    /* opaque fields in this instance's source */
  size_t nfields;
  bool partial; /* the header could not be read: its names are opaque to the body */
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
  /* Calls that read as MLX launches of no kernel of the file (a kernel chosen at run time, kept
   * in a dict, made in another module): their own sizes are still checked. */
  struct kl_dispatch_list calls;
};

#endif
