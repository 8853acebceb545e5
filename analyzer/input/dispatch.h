/* Dispatch facts: what a host call says about one launch of a kernel (its grid, its threadgroup,
 * its template bindings and bfloat arguments), and the small integer expression form in which
 * the Python and C++/Objective-C front ends write launch sizes, with the recognisers for a grid
 * rounded up to whole threadgroups. */
#ifndef KL_DISPATCH_H
#define KL_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/core/arena.h"
#include "analyzer/report/diag.h"
#include "analyzer/core/types.h"
#include "grammar/dialect.h"

enum kl_dx_op {
  KL_DX_INT,  /* a known integer */
  KL_DX_LEAF, /* a runtime value, named by its text */
  KL_DX_ADD,
  KL_DX_SUB,
  KL_DX_MUL,
  KL_DX_DIV,  /* integer (floor) division: Python //, C / on integers, mx.divide */
  KL_DX_TDIV, /* true division: Python / */
  KL_DX_MOD,
  KL_DX_SHL,
  KL_DX_SHR,
  KL_DX_NEG,
  KL_DX_CEIL, /* math.ceil(a), ceil(a) */
  KL_DX_MIN,
  KL_DX_MAX,
  KL_DX_CEILDIV, /* a helper that divides rounding up: ceil_div(a, b), div_up(a, b) */
  KL_DX_ROUNDUP  /* a helper that rounds a up to a multiple of b: round_up(a, b) */
};

/* An integer expression. Values are folded as it is built, but the shape stays: the rounding
 * recognisers look at how a size was written, not only at what it comes to. */
struct kl_dx {
  enum kl_dx_op op;
  bool known; /* v holds the value */
  int64_t v;
  const char *text; /* KL_DX_LEAF */
  int64_t granule;  /* KL_DX_LEAF: a power of two the runtime value is always a multiple of
                       (`nth = 32; while (...) nth *= 2;`), 0 or 1 when none is known */
  struct kl_dx *a, *b;
  uint32_t start, end; /* file byte range it was written at (0, 0 when made up) */
};

/* A launch dimension counted from a value the kernel receives: floor((v + add) / div) threads or
 * threadgroups, where v is the scalar the host binds at buffer index `index` (setBytes) from the
 * name the count reads, unchanged between the binding and the call. */
struct kl_dispatch_count {
  bool known;
  int index;
  int64_t add, div; /* add >= 0, div >= 1 */
};

/* One launch of a kernel, from a Python call or a host dispatchThreads/dispatchThreadgroups. */
struct kl_dispatch {
  const char *kernel;       /* kernel name (MLX name, PyTorch attribute, pipeline function string);
                               NULL when the call could not be tied to a kernel */
  const char *kernel_shown; /* when kernel is NULL: how a message names what the call launches
                               (`ka` or `kb`, an MLX kernel (`self._k[key]`)), or NULL */
  bool kernel_prefix;       /* kernel only starts the name (`"axpby_" + type_to_name(out)`): the
                               call launches every kernel or host_name that starts with it */
  const char *kernel_file;  /* where the kernel the call launches is defined: the file (the
                               call's own for a Python kernel object, an MSL file of the run for
                               host code), NULL when it is not known or not one place */
  struct kl_span kernel_at; /* when kernel_file is set: the kernel's name (MSL) or the call that
                               makes it (`mx.fast.metal_kernel(name=...)`) there */
  const char *path;         /* file of the call */
  bool local;               /* the call is in the file being linted: its spans are usable there */
  struct kl_span call;      /* the call */
  bool grid_rounded;        /* the grid is rounded up to whole threadgroups */
  uint8_t grid_dims;        /* which dimensions are: bit 0 x, bit 1 y, bit 2 z */
  uint8_t grid_exact;       /* dimensions written as a count rounded up to whole groups (or
                               divided rounding up) on a path where a test says the divisor
                               divides the count: exactly the count's groups, nothing past it
                               (the Python reader, analyzer/input/pypath.h) */
  struct kl_span grid_span; /* the rounding expression */
  const char *grid_text;
  bool grid_known;      /* the grid is a constant number of threads (not of threadgroups) */
  int64_t grid_size[3]; /* then its threads per dimension (1 where not given) */
  int64_t grid_threads[3]; /* threads along each dimension where that one is a constant count
                              of threads (not of threadgroups), 0 where not known */
  bool grid_groups;     /* the grid counts threadgroups (dispatchThreadgroups): all are whole */
  bool grid_one_group;  /* it counts exactly one: the constant 1 in every dimension given */
  int64_t grid_multiple[3]; /* else a number each dimension's threads are a multiple of (1 where
                               nothing is known, 0 when no grid was given) */
  struct kl_dispatch_count grid_count[3]; /* dimensions counted from a kernel argument */
  bool tg_known;        /* the total threads per threadgroup is a constant */
  int64_t tg_total;
  int64_t tg_size[3];     /* when known: per dimension (1 where not given) */
  uint8_t tg_dims;        /* which of tg_size are constants, also when the total is not (bit 0
                             x, 1 y, 2 z): `(32, 1, nw)` knows x and y */
  bool tg_clamped;        /* the threadgroup size is clamped to a runtime value: min(256, n) */
  int64_t tg_granule;     /* a power of two the size is always a multiple of (32 for
                             `min(n, cap) / 32 * 32`), 1 when nothing is known */
  const char *reduces;    /* for a clamped size: the simd_* reduction the kernel makes, when the
                             kernel is in another file of the run (filled in by the engine) */
  bool tg_grid;           /* the threadgroup size is not constant and reads as the grid (host
                             arguments swapped): what the grid clamps, or a count rounded up to
                             whole groups of the grid's constant size */
  int64_t tg_max;         /* when not known and two or more dimensions are runtime values: the
                             most threads it can reach past 1024 (from bounds such as min(n,
                             64)), -1 when two or more are unclamped data sizes (tensor
                             dimensions) with no bound, else 0 */
  bool tg_present;        /* a threadgroup size was given */
  struct kl_span tg_span; /* the threadgroup size expression */
  const char *tg_text;
  const struct kl_binding *binds; /* template bindings, to MSL types: T -> half */
  size_t nbinds;
  struct kl_span bind_span; /* the template argument */
  const char *bind_text;
  struct kl_span *bfloat; /* bfloat dtype and template arguments */
  size_t nbfloat, cap_bfloat;
};

struct kl_dispatch_list {
  struct kl_arena *arena;
  struct kl_dispatch *items;
  size_t n, cap;
  /* Explicit instantiations that the run's MSL files make of templated kernels they include from
   * a header of the run: how the header's kernels are specialised (analyzer/ir/spec.c). */
  struct kl_inst *insts;
  size_t ninsts, cap_insts;
  /* Per instantiation: the path of the file of the run that makes it. A header takes only those
   * of the files that include it, directly or through other files of the run (edges below). */
  const char **inst_from;
  size_t cap_inst_from;
  /* The quoted includes between files of the run: edge_from[k] includes edge_to[k] (paths,
   * interned with inst_from's: one pointer per path). */
  const char **edge_from, **edge_to;
  size_t nedges, cap_edge_from, cap_edge_to;
  /* The host files whose dispatches are already among items (the facts pass read them): linting
   * one takes its calls from here instead of reading it a second time. */
  const char **hosts;
  size_t nhosts, cap_hosts;
  /* The headers of the run that only files for Apple GPU family 10 include, directly or through
   * other headers (kl_expand_family10): code that never runs on an older GPU. */
  const char **family10;
  size_t nfamily10, cap_family10;
  /* The MSL files of the run, whatever their extension, that other files of the run include:
   * linted as headers, so specialised by the instantiations their includers make. */
  const char **included;
  size_t nincluded, cap_included;
};

/* Start an empty list backed by the arena. */
void kl_dispatch_list_init(struct kl_dispatch_list *l, struct kl_arena *a);
/* Append a zeroed dispatch and return it. */
struct kl_dispatch *kl_dispatch_add(struct kl_dispatch_list *l);
/* A known integer. */
struct kl_dx *kl_dx_int(struct kl_arena *a, int64_t v);
/* A runtime value named by text. */
struct kl_dx *kl_dx_leaf(struct kl_arena *a, const char *text);
/* op applied to x (and y for binary ops), folded when every operand is known; NULL operands
 * (an expression the front end could not read) give NULL. */
struct kl_dx *kl_dx_op(struct kl_arena *a, enum kl_dx_op op, struct kl_dx *x, struct kl_dx *y);
/* Whether e is a known integer, and which. */
bool kl_dx_value(const struct kl_dx *e, int64_t *v);
/* Whether two expressions are the same (structurally, leaves by text). */
bool kl_dx_equal(const struct kl_dx *x, const struct kl_dx *y);
/* Whether e divides rounding up: (n + d - 1) / d, (n + 255) / 256, ceil(n / d), -(-n // d),
 * ceil_div(n, d); *div receives d. */
bool kl_dx_is_ceil_div(const struct kl_dx *e, const struct kl_dx **div);
/* Whether grid dimension e is a rounding of a count num[i] that div[i] is known to divide (a
 * divisor equal to div[i], or a known one div[i] is a multiple of), so it adds nothing: e is the
 * round-up or ceiling division itself, or that division times its divisor or times tg (the
 * threadgroup's constant extent in that dimension, 0 when unknown); not a larger expression. */
bool kl_dx_exact(const struct kl_dx *e, const struct kl_dx *const *num,
                 const struct kl_dx *const *div, size_t n, int64_t tg);
/* Whether e is a count read from one runtime name: v, (v + a) / d, ceil_div(v, d) (a = d - 1),
 * with a >= 0 and d >= 1 known; *name is v's text, a plain identifier. */
bool kl_dx_count(const struct kl_dx *e, const char **name, int64_t *add, int64_t *div);
/* The subexpression of e that rounds up to a whole number of groups: ceil_div(n, d) * d or
 * round_up(n, d); NULL when there is none. */
const struct kl_dx *kl_dx_rounded(const struct kl_dx *e);
/* Whether e clamps a value to a runtime bound (min with an operand not known statically). */
bool kl_dx_clamped(const struct kl_dx *e);
/* The largest power of two (up to 2^20) that e is a multiple of whatever its runtime parts are:
 * 32 for `min(n, 256) / 32 * 32`, 1 when nothing is known. */
int64_t kl_dx_granule(const struct kl_dx *e);
/* A positive number e is a multiple of whatever its runtime parts are: 96 for
 * `ceil_div(n, 96) * 96`, 1 when nothing is known. */
int64_t kl_dx_multiple(const struct kl_dx *e);
/* File text [s, e) of src for a message: one line, at most 60 bytes cut between characters. */
const char *kl_dispatch_quote(struct kl_arena *a, const struct kl_source *src, uint32_t s,
                              uint32_t e);
/* Record which of the n grid dimensions are rounded up (with groups, dimensions count
 * threadgroups and a ceiling division is the rounding), quoting the first; [fs, fe) is where the
 * size is written, for a rounding not tied to one place of the file. */
void kl_dispatch_set_grid(struct kl_dispatch *d, struct kl_arena *a, const struct kl_source *src,
                          struct kl_dx *const *dims, size_t n, bool groups, uint32_t fs,
                          uint32_t fe);
/* Record a threadgroup size of n dimensions, written at span as text: its total when known, any
 * runtime clamp, and its granule. */
void kl_dispatch_set_tg(struct kl_dispatch *d, struct kl_dx *const *dims, size_t n,
                        struct kl_span span, const char *text);
#endif
