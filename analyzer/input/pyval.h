/* The evaluator of the Python values that build a kernel's source and its launch sizes:
 * string literals and their concatenation, f-strings, format(), %, join(), replace(), strings
 * grown in loops, conditionals whose test is known, helpers that return a source, and integer
 * expressions as launch-size forms (kl_dx). Internal to the Python front end. */
#ifndef KL_PYVAL_H
#define KL_PYVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <tree_sitter/api.h>

#include "analyzer/input/dispatch.h"
#include "analyzer/input/py.h"

/* A plain string constant (a kernel name, an input name); NULL when it is not one. */
const char *kl_pyval_const_string(struct kl_py *p, TSNode n);
/* An integer expression of the file as a kl_dx, following names to their values. */
struct kl_dx *kl_pyval_dx(struct kl_py *p, TSNode n, int depth);
/* Whether call reaches function def through its callee: a bare name reaches a module function
 * or one defined in a function around the call; `self.name`/`cls.name` a method of the class
 * around the call; `Name.name` a static or class method of the module's class `Name`. */
bool kl_pyval_reaches(struct kl_py *p, TSNode call, TSNode def);
/* The word call's callee ends in (`f`, `self.f`'s and `K.f`'s `f`), or NULL when it ends in no
 * name: kl_pyval_reaches holds only for a function of that name. */
const char *kl_pyval_callee_word(struct kl_py *p, TSNode call);
/* Whether p->fns[fn] is named word (kl_pyval_reaches's necessary condition; the names are read
 * once, on the first call, after p->fns is complete). */
bool kl_pyval_may_reach(struct kl_py *p, const char *word, size_t fn);
/* Source text as written, on one line and cut at max bytes: what a message can quote. */
const char *kl_pyval_short(struct kl_py *p, TSNode n, uint32_t max);
/* Append the string value of expression n to b: literals, concatenation, names of constants.
 * Calls that only change whitespace (textwrap.dedent, .strip()) are read through: MSL does not
 * care, and positions stay those of the file. */
bool kl_pyval_string(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth);
/* str() of a value into b: a string, an integer, a bool; false (b untouched but for why) when it
 * is not known. The text of a number stands for the file range [fs, fe). */
bool kl_pyval_value(struct kl_py *p, struct kl_py_buf *b, TSNode n, int depth, uint32_t fs,
                    uint32_t fe);

#endif
