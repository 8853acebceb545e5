#include "analyzer/passes/flow.h"
#include "analyzer/core/config.h"
#include "analyzer/ir/spec.h"
#include "analyzer/core/node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/consteval.h"
#include "grammar/lex.h"

/* What makes control diverge, kept with each construct on the control stack (a loop's condition,
 * a branch, an earlier return or exit). */
enum kl_flow_cause {
  KL_CAUSE_NONE,
  KL_CAUSE_BRANCH, /* an if/switch/ternary condition */
  KL_CAUSE_LOOP,   /* a loop condition */
  KL_CAUSE_RETURN, /* an earlier return under a condition */
  KL_CAUSE_EXIT    /* an earlier continue or break of the same loop iteration, under a condition */
};

/* Variables are tracked by name per function; names past this many share no dependency bits,
 * which only makes guards and evidence more lenient (fewer reports), never wrong the other way. */
enum { KL_FLOW_BITS = 256, KL_FLOW_MAX_DEPTH = 6, KL_FLOW_LOOP_PASSES = 4 };
/* Loops nested deeper than this (helpers' loops counted where they are called) are walked once,
 * and a second time, from the first's values joined and their forms widened, only when the first
 * raised a scope or left threads behind; loops inside a second pass are walked once. Each pass of
 * a loop walks its inner loops again, so the full walk doubles per level (16 levels: seconds);
 * this one is linear for uniform nests and at worst grows with the square of the depth. The
 * deepest nest of the development corpus is 5. */
enum { KL_FLOW_LOOP_NEST = 8 };
/* Names in one index that bring in an unguarded coordinate, each with its own dependencies; past
 * this many, the last entry holds the rest together. */
enum { KL_FLOW_PEND_NAMES = 8 };

/* Specialisations analysed per kernel at most, and bool function constants enumerated at most:
 * real kernels test one to three, and each doubles the work. */
enum { KL_FLOW_MAX_INSTS = 32, KL_FLOW_MAX_FCONSTS = 3, KL_FLOW_FOLD_CACHE = 256 };

struct kl_bits {
  uint64_t w[KL_FLOW_BITS / 64];
};

static void kl_bits_set(struct kl_bits *b, int i) {
  if (i >= 0 && i < KL_FLOW_BITS) b->w[i / 64] |= (uint64_t)1 << (i % 64);
}
static bool kl_bits_has(const struct kl_bits *b, int i) {
  return i >= 0 && i < KL_FLOW_BITS && (b->w[i / 64] >> (i % 64)) & 1;
}
static void kl_bits_or(struct kl_bits *a, const struct kl_bits *b) {
  for (int i = 0; i < KL_FLOW_BITS / 64; i++) a->w[i] |= b->w[i];
}
static void kl_bits_and(struct kl_bits *a, const struct kl_bits *b) {
  for (int i = 0; i < KL_FLOW_BITS / 64; i++) a->w[i] &= b->w[i];
}
static void kl_bits_clear(struct kl_bits *b, int i) {
  if (i >= 0 && i < KL_FLOW_BITS) b->w[i / 64] &= ~((uint64_t)1 << (i % 64));
}
static bool kl_bits_meet(const struct kl_bits *a, const struct kl_bits *b) {
  for (int i = 0; i < KL_FLOW_BITS / 64; i++)
    if (a->w[i] & b->w[i]) return true;
  return false;
}

/* Abstract value of an expression or variable. */
struct kl_val {
  enum kl_scope scope;
  struct kl_affine form;
  struct kl_bits deps;    /* variables it is computed from, itself included */
  struct kl_bits mention; /* variables named directly in the expression */
  bool clamped;           /* bounded by min/clamp against a uniform limit */
  bool sized;             /* derives from a problem size (a buffer argument, a shape) */
  int root;               /* for pointers: the buffer variable pointed into, else -1
                             (KL_ROOT_EMPTY: an array of pointers nothing is stored in yet) */
};
enum { KL_ROOT_EMPTY = -2 };

/* A tracked name of the function being analysed. */
struct kl_fvar {
  const char *name;
  size_t len;  /* strlen(name), compared before the bytes on every lookup; 0 out of scope */
  size_t full; /* strlen(name), always */
  int prev;    /* the variable of the same name declared before this one, or -1 */
  const struct kl_var *decl;
  bool coord;           /* a thread coordinate (or one component of one) that varies */
  bool lane;            /* steps by one between adjacent SIMD lanes */
  const struct kl_msl_coord *cdesc; /* for a coordinate: which one (a helper's parameter bound
                                       to one in the call takes it over) */
  char comp;                        /* and for a scalar one, its grid dimension: x, y or z */
  enum kl_addrspace as; /* for buffers and arrays */
  int parent;           /* for a struct member or vector component `s.a`: the id of `s`, else -1 */
  TSNode cond;          /* for a bool that holds a condition (`bool full = c + 4 <= n;`) and is
                           not assigned again: that condition, which testing the bool tests */
  bool sentinel;        /* cond is instead that of `cond ? x : -1` last stored in it: testing it
                           for a sign (`v >= 0`) tests cond (or its negation, when sentinel_not) */
  bool sentinel_not;
  int sentinel_branch; /* the if-nesting of that store: a test outside it does not know it ran */
  bool holder; /* a thread-local array of pointers (`device const T *rows[4]`): its value is that
                  of the pointers stored in it, and indexing it picks one, not an access */
  bool proxy;  /* in a helper: a parameter given a thread-derived value that is no coordinate
                  (`first = tgpig.x * 4`), an atom of its own standing for that value */
  uint32_t lam_param; /* a lambda's parameter: 1 + the start of its name (its frame variable is
                         found by name only while the lambda runs) */
  TSNode walk;      /* the loop that last stepped it from its own value (`bm += block`), while its
                       value is still the one that loop left */
};

struct kl_ctrl {
  enum kl_scope scope;
  TSNode node;
  enum kl_flow_cause kind;
};

enum { KL_CMP_WALKS = 4 };

/* A comparison of a thread-derived value against a problem size: the value's affine form says
 * which coordinate atoms it bounds, and by which coefficient. */
struct kl_cmp {
  struct kl_affine form;
  TSNode node;
  struct kl_bits counters; /* uniform loop counters in the compared value: it is evidence only
                              for an index that is computed from them too */
  bool any_counter;        /* lifted from a helper whose comparison had counters: evidence only
                              for an index computed from some loop counter of this frame */
  bool fixed_counter;      /* has a counter of a loop with a compile-time trip count (not in
                              counters: see kl_note_compare) */
  struct kl_bits names;    /* with fixed_counter: the thread-derived names compared, of which
                              the index must be computed from one (the same value) */
  /* The variables the compared value is computed from that hold the value a loop left by
   * stepping them (the tail of a blocked walk, `if (bm + tm < n)` after `bm += block` in a
   * loop), and the byte range of each one's loop: the comparison bounds where the walk ended,
   * not the values that loop's own accesses used. */
  int nwalk;
  int walk_var[KL_CMP_WALKS];
  uint32_t walk_lo[KL_CMP_WALKS], walk_hi[KL_CMP_WALKS];
};

/* An unguarded access and every thread-derived name in its index that no guard covers. */
struct kl_pending {
  struct kl_bits uncovered; /* coordinate atoms no guard covers */
  int named[KL_FLOW_BITS];  /* for each such atom, the name in the index that brings it in */
  uint8_t from[KL_FLOW_BITS]; /* and the entry of deps[] of that name */
  struct kl_bits deps[KL_FLOW_PEND_NAMES]; /* what those names are computed from at the access */
  int dep_var[KL_FLOW_PEND_NAMES];         /* the name of each entry */
  int ndeps;
};

/* A device access of the frame by the start byte of its node: where its fact is, and its
 * pending evidence, so re-walking a loop body finds both without a search. */
struct kl_slot {
  uint32_t key;    /* start byte + 1; 0 marks an empty slot */
  uint32_t access; /* index in the flow's accesses */
  int32_t pending; /* index in the frame's pending list, or -1 */
};

/* A value a specialisation gives a name: a template parameter or a function constant. */
struct kl_flow_bind {
  const char *name;
  const char *text;
};

/* kl_fld's cache in front of its map: a node, a field name, and the child. Small: with 4096
 * slots two threads' tables thrashed the cache they share, and -j 2 got slower. */
enum { KL_FLD_SLOTS = 512 };
struct kl_fld_slot {
  const void *id;
  const char *name;
  uint32_t start;
  TSNode child;
};

/* Per-function analysis state. */
struct kl_frame {
  struct kl_flow_ctx *fx;
  const struct kl_function *fn;
  struct kl_fvar *vars;
  int nvars, cap_vars;
  int *vslots; /* by hash of name: the last variable of that name, or -1 (kl_var_find) */
  int nvslots; /* a power of two, at least twice nvars */
  struct kl_val *env;
  struct kl_bits guards; /* variables bounded above on every path to here */
  struct kl_bits coords; /* ids that are varying thread coordinates */
  struct kl_bits atoms;  /* the coordinates that are atoms: scalars and vector components */
  struct kl_bits inductions; /* variables the update of an enclosing loop steps */
  struct kl_bits counters_seen; /* every variable some loop of the function steps */
  struct kl_bits fixed; /* inductions of enclosing loops with a compile-time trip count */
  struct kl_ctrl *ctrl; /* grows: a cap would lose constructs, or the loop a break leaves */
  int nctrl;
  size_t cap_ctrl;
  enum kl_scope ret_scope; /* widest condition under which an earlier return left */
  TSNode ret_cause;
  enum kl_scope exit_scope; /* break under thread-dependent control, this loop */
  TSNode exit_cause;        /* the condition of that break */
  /* A `continue` or `break` under thread-dependent control ends the current iteration for some
   * threads only: the rest of the body is reached under it (like ret_scope, for one iteration).
   * cont_depth is the depth of the ctrl stack inside the loop, where it ranks as a cause. */
  enum kl_scope cont_scope;
  TSNode cont_cause, cont_stmt;
  int cont_depth;
  enum kl_scope result;     /* widest scope of returned values (helpers) */
  struct kl_cmp *cmps;      /* comparisons against a problem size, one per expression */
  size_t ncmps, cap_cmps;
  size_t first_access;        /* this frame's accesses start here in the flow */
  struct kl_pending *pending; /* unguarded accesses awaiting the evidence of the whole body */
  size_t npending, cap_pending;
  struct kl_slot *slots; /* open addressing, a power of two in size */
  size_t nslots, cap_slots;
  int depth;
  TSNode call; /* in a helper: the call in the kernel that leads here (null in the kernel) */
  struct kl_flow_bind *macros; /* `#define`s met in the body so far (a kernel's own macros) */
  size_t nmacros, cap_macros;
  int branch; /* how many if branches enclose this point */
  int lambdas; /* lambda bodies being run, nested */
  TSNode stored;    /* the element whose address a store `*(T*)&x[i] = v` writes through */
  bool in_switch; /* the innermost loop or switch around this point is a switch: a break leaves
                     only it */
  bool dead; /* no path reaches here: after a return, break or continue, or in the branch a
                specialisation's constant condition does not take */
  uint32_t serial;              /* tells this frame's symbols and accesses from other calls' */
  /* The undo trail (kl_env_mark): values before writes, saved once per variable and innermost
   * open mark, so a branch or a loop pass need not copy the whole environment; a mark reads the
   * first entry of each variable past its start. saved_at is per variable the mark it was last
   * saved for; seen a scratch stamp per variable. */
  struct kl_undo *undo;
  size_t nundo, cap_undo;
  uint32_t *saved_at, *seen;
  uint32_t stamp; /* the innermost open mark, 0 for none */
  int mark_n0;    /* the variables it covers: those that existed when it was made */
  uint32_t stamps, ticks;
};

/* A variable's value before a write, on the trail. */
struct kl_undo {
  int id;
  struct kl_val old;
};

/* A name a run asked kl_fold_lookup about, and the text it stood for (NULL: none). */
struct kl_look {
  const char *name;
  size_t len;
  const char *text;
};

/* One run of a kernel as far as a later specialisation needs it: the names it looked up, and the
 * access records it made. */
struct kl_run_rec {
  struct kl_look *looks;
  size_t nlooks, cap_looks;
  size_t acc0, acc1;
};

/* One specialisation of a kernel. */
struct kl_flow_inst {
  struct kl_flow_bind *b;
  size_t n;
  const char *label;  /* "N = 2, has_mask = true"; NULL for none */
  const char **hosts; /* the host names of the instantiations it stands for */
  size_t nhosts, cap_hosts;
};

/* Names folded to constants under the current specialisation (file constants, bindings). */
struct kl_fold_entry {
  const char *name; /* NULL: empty */
  size_t len;
  bool known;
  int64_t value;
};

/* How a call argument binds a helper's parameter as a thread coordinate: which coordinate, the
 * component of a scalar one, whether it is a lane, and which components the caller's guards
 * bound at the call (bit 0 x or the scalar, 1 y, 2 z). c is NULL when it binds none. */
struct kl_coord_bind {
  const struct kl_msl_coord *c;
  char comp;
  bool lane, scalar;
  uint8_t guarded;
};

/* What a call gives a parameter that is no coordinate but a thread-derived value (a proxy): */
enum {
  KL_PROXY = 1,         /* it is one */
  KL_PROXY_GUARDED = 2, /* the caller bounded it before the call */
  KL_PROXY_CLAMPED = 8  /* min/clamp bounded it */
};

struct kl_memo;

/* What else of a call, beside its memo key, a helper's walk starts from: the kernel's call that
 * leads there, the depth, what each argument brings (a sized value, the address space and
 * threadgroup array it points into, a proxy's component) and the control the caller hands
 * down. Two calls alike in all of it, in the same state of the run (kl_share_fits checks the
 * rest), start the same walk. */
struct kl_call_ext {
  TSNode top;
  int depth;
  uint32_t nargs;
  bool sized[16];
  int8_t as[16]; /* the root's address space, -1 for none */
  char comp[16];
  bool pushed, ret, cont;
  enum kl_flow_cause kind;
  TSNode cause;
};

/* A name a helper's walk folded through the run's cache, and what the fold gave. */
struct kl_touch {
  const char *name;
  size_t len;
  bool known;
  int64_t value;
};

/* A helper's walk in one specialisation, as another specialisation of the kernel can take it
 * instead of walking again: every way the walk read the specialisation (names folded through
 * the cache, names looked up directly, summaries of other helpers it asked the memo for), and
 * what it added (access records, memo entries, frame serial numbers). Built while the walk runs
 * (kl_share_* below). None is kept for a walk that met a barrier, a full fold cache, a memo
 * answer still being made (recursion) or more than 64 memo questions. MLX instantiates a kernel
 * for every tile shape, and most helpers read none of them. */
struct kl_share {
  const struct kl_function *kernel;
  struct kl_call_ext ext;
  size_t mi; /* the helper's own memo entry; those after it, to memo1, the walk made */
  size_t memo1;
  size_t acc0; /* its first access record; the records, as the walk left them: */
  struct kl_flow_access *acc;
  size_t nacc;
  uint32_t serials; /* frame serial numbers the walk used */
  struct kl_look *looks;
  size_t nlooks, cap_looks;
  struct kl_touch *touches;
  size_t ntouches, cap_touches;
  /* Each memo question the walk asked, with the entry made before the walk that answered it,
   * or SIZE_MAX where none did (the walk made the answer, or walked the helper). */
  struct kl_memo *probes;
  size_t *probe_hit;
  size_t nprobes, cap_probes, cap_probe_hit;
  bool bad;
};

struct kl_memo {
  const struct kl_function *fn;
  const struct kl_flow_inst *inst;
  uint32_t nargs;
  enum kl_scope args[16];
  struct kl_coord_bind coords[16];
  uint8_t proxy[16];
  enum kl_scope ctrl;
  enum kl_scope result;
  /* The helper's comparisons against a size, over its atoms, and for each atom the parameter
   * it stands for (index * 4, plus 1 + the component of a vector coordinate), or -1: lifted into
   * each caller, they are evidence about the values the call passes. */
  const struct kl_cmp *cmps;
  size_t ncmps;
  const int16_t *param_of;
  int nparam_of;
  uint32_t run; /* the run it was made in */
  bool busy;              /* its walk is under way: result is not final */
  struct kl_share *share; /* how another specialisation may take it, or NULL */
};

/* The variables a function assigns anywhere in its body (`=`, `+=`, `++`): asked of every name
 * in a loop's start and bound, in every run, so it is collected once per function. */
struct kl_assigns {
  const struct kl_function *fn;
  const char **names;
  uint32_t *at;   /* where each assignment starts */
  uint32_t *lens; /* strlen of each name: a loop's questions scan the list on every pass */
  size_t n, cap, cap_at, cap_lens;
};

/* A loop by the start byte of its node, and the names it steps from their own value. */
struct kl_walked {
  uint32_t key; /* start byte + 1; 0 marks an empty slot */
  const char **names;
  size_t n, cap;
};

/* A struct constant a member function names, found once: a method walked in every loop pass
 * and specialisation names the same ones, and each lookup reads the whole struct body. */
struct kl_mconst {
  const void *owner; /* the struct body's node id; NULL for an empty slot */
  const char *name;  /* in the arena */
  size_t len;
  TSNode found;
};

struct kl_flow_ctx {
  struct kl_arena *a;
  const struct kl_model *m;
  const struct kl_unit *u;
  struct kl_flow *out;
  struct kl_memo *memo;
  size_t nmemo, cap_memo;
  const struct kl_flow_inst *inst; /* the specialisation being analysed, or NULL */
  uint16_t ninsts;
  uint32_t run; /* counts the runs (kernel and specialisation) analysed so far, from 1 */
  const struct kl_function *kernel; /* the kernel of the run */
  const struct kl_settings *settings;
  bool tg_runtime_x; /* every launch of the kernel sizes the threadgroup's x at run time (not a
                        constant, not clamped): see kl_tg_restated */
  uint8_t simd_dims; /* the y and z positions (bits 1, 2) the same in a SIMD group: every launch
                        of the kernel analysed gives a threadgroup whose rows (x 32 wide, or a
                        multiple) or planes (x times y) are whole SIMD groups */
  struct kl_fold_entry fold[KL_FLOW_FOLD_CACHE];
  struct kl_assigns *assigns; /* per function: the names it assigns (trip counts ask often) */
  size_t nassigns, cap_assigns;
  struct kl_walked *walked;   /* per loop, found once: loops are walked again on every pass */
  size_t nwalked, cap_walked; /* open addressing, a power of two in size */
  struct kl_node_map callees; /* the function a call's callee names, by callee node and caller */
  struct kl_node_map parents; /* each node's parent, as ts_node_parent found it (kl_parent) */
  struct kl_node_map inits;   /* a local's initialiser, by declaration (kl_var_init) */
  struct kl_node_map fields;  /* a node's child in a field, by node and field name (kl_fld) */
  struct kl_fld_slot *fld;    /* in front of fields: the last answer per slot (KL_FLD_SLOTS) */
  struct kl_node_map kids;    /* a node's named children (kl_kids) */
  struct kl_node_map texts;   /* a node's text (kl_text) */
  struct kl_mconst *mconsts;  /* kl_model_member_const by struct body and name (kl_member_const) */
  size_t nmconsts, cap_mconsts; /* open addressing, a power of two in size */
  uint32_t serial;
  /* What the current run asked of the names outside the function: a later specialisation that
   * answers every name alike walks the same way. */
  struct kl_run_rec rec;
  bool recording;
  /* The helper walks under way that are being recorded for other specialisations, outermost
   * first, and whether a fold of the cache is evaluating a name (its lookups are the fold's). */
  struct kl_share *active[KL_FLOW_MAX_DEPTH + 2];
  int nactive;
  bool in_fold;
  int loop_nest; /* the loops being walked, in any frame (KL_FLOW_LOOP_NEST) */
  int deep_second; /* the second passes of loops past KL_FLOW_LOOP_NEST being walked */
};

static enum kl_scope kl_max(enum kl_scope a, enum kl_scope b) {
  return a > b ? a : b;
}

static bool kl_is(TSNode n, const char *type) {
  return kl_node_is(n, type);
}

static TSNode kl_field(TSNode n, const char *name) {
  return kl_node_field(n, name);
}

/* kl_field, remembered: tree-sitter finds a field's child by scanning the children and the
 * grammar's field map, and the walk asks the same nodes for the same fields on every loop pass and
 * in every specialisation. name must be a literal (it is the key). */
static TSNode kl_fld(struct kl_frame *f, TSNode n, const char *name) {
  struct kl_flow_ctx *fx = f->fx;
  /* The same few nodes are asked on every pass: a slot per hash, overwritten, answers most
   * without the map's probing. */
  uint32_t start = ts_node_start_byte(n);
  size_t h = (size_t)((((uint64_t)(uintptr_t)n.id ^ (uint64_t)(uintptr_t)name * 31u) *
                       0x9E3779B97F4A7C15u) >>
                      40) &
             (KL_FLD_SLOTS - 1);
  struct kl_fld_slot *sl = &fx->fld[h];
  if (sl->id == n.id && sl->name == name && sl->start == start && n.id) return sl->child;
  const void *p;
  TSNode c;
  if (kl_node_map_get(&fx->fields, n, name, &p)) {
    c = *(const TSNode *)p;
  } else {
    TSNode *e = kl_arena_alloc(fx->a, sizeof *e);
    *e = kl_field(n, name);
    kl_node_map_put(fx->a, &fx->fields, n, name, e);
    c = *e;
  }
  *sl = (struct kl_fld_slot){n.id, name, start, c};
  return c;
}

/* The named children of n, remembered (kl_node_kids); *k is how many. */
struct kl_kids {
  const TSNode *kids;
  uint32_t n;
};

static const TSNode *kl_kids(struct kl_frame *f, TSNode n, uint32_t *k) {
  const void *p;
  if (!kl_node_map_get(&f->fx->kids, n, NULL, &p)) {
    struct kl_kids *e = kl_arena_alloc(f->fx->a, sizeof *e);
    /* Kept for the whole file: exactly as many as there are. */
    TSNode buf[16];
    const TSNode *got = kl_node_kids(f->fx->a, n, buf, 16, &e->n);
    e->kids = got == buf ? memcpy(kl_arena_alloc(f->fx->a, (e->n ? e->n : 1) * sizeof *buf), buf,
                                  e->n * sizeof *buf)
                         : got;
    kl_node_map_put(f->fx->a, &f->fx->kids, n, NULL, e);
    p = e;
  }
  *k = ((const struct kl_kids *)p)->n;
  return ((const struct kl_kids *)p)->kids;
}

/* A node's text, remembered: the walk asks for the same names on every loop pass and in every
 * specialisation, and a copy each time was a fifth of ggml's arena. */
static const char *kl_text(struct kl_frame *f, TSNode n) {
  const void *p;
  if (kl_node_map_get(&f->fx->texts, n, NULL, &p)) return p;
  const char *t = kl_dialect_node_text(f->fx->a, f->fx->u, n);
  kl_node_map_put(f->fx->a, &f->fx->texts, n, NULL, t);
  return t;
}


/* FNV-1a of s[0, len): the slots of the fold cache and of a frame's variables. */
static uint32_t kl_fnv(const char *s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h;
}

/* The slot of name among f's variables: the one holding the last of that name, or an empty one. */
static int *kl_var_slot(struct kl_frame *f, const char *name, size_t len) {
  size_t h = kl_fnv(name, len) & (uint32_t)(f->nvslots - 1);
  for (;; h = (h + 1) & (size_t)(f->nvslots - 1)) {
    int j = f->vslots[h];
    if (j < 0 || (f->vars[j].full == len && !memcmp(f->vars[j].name, name, len)))
      return &f->vslots[h];
  }
}

/* Enter variable i, the last of its name; the table doubles when half full. */
static void kl_var_index(struct kl_frame *f, int i) {
  if (2 * (f->nvars + 1) > f->nvslots) {
    int n = f->nvslots ? 2 * f->nvslots : 64;
    while (n < 2 * (f->nvars + 1)) n *= 2;
    free(f->vslots);
    f->vslots = kl_arena_xmalloc(sizeof *f->vslots * (size_t)n);
    memset(f->vslots, 0xff, sizeof *f->vslots * (size_t)n);
    f->nvslots = n;
    for (int j = 0; j < i; j++) {
      int *s = kl_var_slot(f, f->vars[j].name, f->vars[j].full);
      f->vars[j].prev = *s;
      *s = j;
    }
  }
  int *s = kl_var_slot(f, f->vars[i].name, f->vars[i].full);
  f->vars[i].prev = *s;
  *s = i;
}

/* The last variable named name[0, len) in scope (a later one shadows an earlier), or -1. Names
 * are hashed: this is asked for every identifier evaluated. */
static int kl_var_find(struct kl_frame *f, const char *name, size_t len) {
  if (!len || !f->nvslots) {
    for (int i = f->nvars - 1; i >= 0; i--)
      if (f->vars[i].len == len && !memcmp(f->vars[i].name, name, len)) return i;
    return -1;
  }
  for (int i = *kl_var_slot(f, name, len); i >= 0; i = f->vars[i].prev)
    if (f->vars[i].len == len) return i;
  return -1;
}

static int kl_var_node(struct kl_frame *f, TSNode n) {
  uint32_t st = ts_node_start_byte(n), en = ts_node_end_byte(n);
  return kl_var_find(f, f->fx->u->buf + st, en - st);
}

/* The form of a value the algebra cannot follow: a uniform one is still a symbolic constant. */
static struct kl_affine kl_opaque(enum kl_scope s) {
  return s == KL_SCOPE_UNIFORM ? kl_affine_symbol() : kl_affine_unknown();
}

static struct kl_val kl_val_uniform(void) {
  struct kl_val v;
  memset(&v, 0, sizeof v);
  v.scope = KL_SCOPE_UNIFORM;
  v.form = kl_affine_symbol();
  v.root = -1;
  return v;
}


/* Whether a is a uniform value fixed when the kernel is compiled: a constant, or a symbol made
 * of template parameters, macros and constants. */
static bool kl_form_ct(struct kl_affine a) {
  return a.known && !a.n && (!a.c0_symbolic || (a.sym & KL_AFFINE_SYM_CT));
}

/* The tag of a value that is one element's size in bytes (a unit-strides name). */
#define KL_FLOW_SYM_UNIT 1u

/* Whether the name n[0, len) (a variable, or the last field of `args.nb0`) matches a
 * unit-strides name or glob of the settings. */
static bool kl_unit_stride(struct kl_frame *f, const char *n, size_t len) {
  const struct kl_settings *s = f->fx->settings;
  for (size_t i = len; i-- > 0;)
    if (n[i] == '.' || n[i] == '>') {
      n += i + 1;
      len -= i + 1;
      break;
    }
  char name[128];
  if (len >= sizeof name) return false;
  memcpy(name, n, len);
  name[len] = '\0';
  for (size_t i = 0; s && i < s->nunit_strides; i++)
    if (kl_config_glob(s->unit_strides[i], name)) return true;
  return false;
}

/* A new variable named name, which shadows any other of that name. */
static int kl_var_new(struct kl_frame *f, const char *name, const struct kl_var *decl) {
  int i;
  if (f->nvars == f->cap_vars) {
    int nc = f->cap_vars ? f->cap_vars * 2 : 32;
    f->vars = kl_arena_xrealloc(f->vars, (size_t)nc * sizeof *f->vars);
    f->env = kl_arena_xrealloc(f->env, (size_t)nc * sizeof *f->env);
    f->saved_at = kl_arena_xrealloc(f->saved_at, (size_t)nc * sizeof *f->saved_at);
    f->seen = kl_arena_xrealloc(f->seen, (size_t)nc * sizeof *f->seen);
    f->cap_vars = nc;
  }
  i = f->nvars++;
  f->saved_at[i] = f->seen[i] = 0;
  memset(&f->vars[i], 0, sizeof f->vars[i]);
  f->vars[i].name = name;
  f->vars[i].len = f->vars[i].full = strlen(name);
  kl_var_index(f, i);
  f->vars[i].decl = decl;
  f->vars[i].as = decl ? decl->as : KL_AS_NONE;
  f->vars[i].parent = -1;
  f->env[i] = kl_val_uniform();
  kl_bits_set(&f->env[i].deps, i);
  return i;
}

static int kl_var_add(struct kl_frame *f, const char *name, const struct kl_var *decl) {
  int i = kl_var_find(f, name, strlen(name));
  if (i >= 0) {
    if (decl && !f->vars[i].decl) f->vars[i].decl = decl;
    return i;
  }
  return kl_var_new(f, name, decl);
}

/* Variable id's value, about to be written: saved on the trail first when an open mark covers
 * it and has not saved it yet. Every write to an existing variable's value goes through here,
 * except those that take back values the trail saved, those to variables no open mark covers
 * (added since the innermost), and those made before any mark is open (a frame's setup). */
static struct kl_val *kl_env_w(struct kl_frame *f, int id) {
  if (f->stamp && id < f->mark_n0 && f->saved_at[id] != f->stamp) {
    KL_XVEC_PUSH(f->undo, f->nundo, f->cap_undo);
    f->undo[f->nundo].id = id;
    f->undo[f->nundo++].old = f->env[id];
    f->saved_at[id] = f->stamp;
  }
  return &f->env[id];
}

/* Coordinates whose value steps by one from one SIMD lane to the next. */
static bool kl_coord_is_lane(const char *coord) {
  return !strcmp(coord, "thread_position_in_grid") ||
         !strcmp(coord, "thread_position_in_threadgroup") ||
         !strcmp(coord, "thread_index_in_threadgroup") ||
         !strcmp(coord, "thread_index_in_simdgroup") || !strcmp(coord, "thread_index_in_quadgroup");
}

/* Whether a parameter type is a vector (`uint3`, `ushort2`; not `uint32_t`). */
static bool kl_vector_type(const char *t) {
  size_t n = t ? strlen(t) : 0;
  return n >= 2 && t[n - 1] >= '2' && t[n - 1] <= '4' && t[n - 2] >= 'a' && t[n - 2] <= 'z';
}

/* Scope of component comp ('x', 'y', 'z') of thread coordinate c under the launches of the
 * kernel: with `threadgroup=(32, 1, nw)` each z plane is one SIMD group, so .z is the same in
 * it. */
static enum kl_scope kl_coord_scope(struct kl_frame *f, const struct kl_msl_coord *c, char comp) {
  bool pos = !strcmp(c->name, "thread_position_in_threadgroup") ||
             !strcmp(c->name, "thread_position_in_grid");
  if (c->scope == KL_SCOPE_THREAD && pos && comp >= 'y' && comp <= 'z' &&
      (f->fx->simd_dims & (1u << (comp - 'x'))))
    return KL_SCOPE_SIMDGROUP;
  return c->scope;
}

/* Set up a coordinate variable: scalar ones are atoms themselves, vector ones get .x/.y/.z. */
static void kl_frame_coord(struct kl_frame *f, int id, const struct kl_msl_coord *c,
                           const char *type) {
  kl_env_w(f, id)->scope = c->scope;
  if (c->scope == KL_SCOPE_UNIFORM) {
    f->vars[id].cdesc = c; /* not a coordinate that varies, but which one (kl_tg_restated) */
    return;
  }
  bool vec = kl_vector_type(type);
  f->vars[id].coord = true;
  f->vars[id].cdesc = c;
  kl_bits_set(&f->coords, id);
  if (!vec) {
    f->vars[id].comp = 'x';
    f->vars[id].lane = kl_coord_is_lane(c->name);
    kl_env_w(f, id)->form = kl_affine_atom((uint16_t)id);
    kl_bits_set(&f->atoms, id);
    return;
  }
  kl_env_w(f, id)->form = kl_affine_unknown();
  static const char *const comps[] = {"x", "y", "z"};
  for (int k = 0; k < 3; k++) {
    const char *nm = kl_arena_printf(f->fx->a, "%s.%s", f->vars[id].name, comps[k]);
    int cid = kl_var_add(f, nm, NULL);
    f->vars[cid].coord = true;
    f->vars[cid].cdesc = c;
    f->vars[cid].comp = comps[k][0];
    f->vars[cid].lane = k == 0 && kl_coord_is_lane(c->name);
    kl_bits_set(&f->coords, cid);
    kl_bits_set(&f->atoms, cid);
    struct kl_val *cv = kl_env_w(f, cid);
    cv->scope = kl_coord_scope(f, c, comps[k][0]);
    cv->form = kl_affine_atom((uint16_t)cid);
    kl_bits_set(&cv->deps, id);
  }
}

static enum kl_scope kl_frame_ctrl(struct kl_frame *f) {
  enum kl_scope s = kl_max(f->ret_scope, f->cont_scope);
  for (int i = 0; i < f->nctrl; i++) s = kl_max(s, f->ctrl[i].scope);
  return s;
}

static void kl_push_ctrl(struct kl_frame *f, enum kl_scope s, TSNode node, enum kl_flow_cause k) {
  KL_XVEC_PUSH(f->ctrl, (size_t)f->nctrl, f->cap_ctrl);
  f->ctrl[f->nctrl++] = (struct kl_ctrl){s, node, k};
}

static void kl_pop_ctrl(struct kl_frame *f) {
  if (f->nctrl > 0) f->nctrl--;
}

static bool kl_thread_derived(struct kl_frame *f, const struct kl_val *v) {
  return kl_bits_meet(&v->deps, &f->coords);
}

static struct kl_val kl_eval(struct kl_frame *f, TSNode n);
static void kl_exec(struct kl_frame *f, TSNode n);

/* ts_node_parent, remembered: tree-sitter finds a parent by descending from the root, through
 * every top-level declaration before it (thousands in a big file), and the checks climb from
 * each access and comparison on every pass. */
static TSNode kl_parent(struct kl_frame *f, TSNode n) {
  const void *p;
  if (!kl_node_map_get(&f->fx->parents, n, NULL, &p)) {
    TSNode *q = kl_arena_alloc(f->fx->a, sizeof *q);
    *q = ts_node_parent(n);
    kl_node_map_put(f->fx->a, &f->fx->parents, n, NULL, q);
    p = q;
  }
  return *(const TSNode *)p;
}

/* kl_model_callee, remembered: a call is met again on every pass of every loop around it and in
 * every specialisation. */
static const struct kl_function *kl_callee(struct kl_frame *f, TSNode fnode) {
  const void *c;
  if (kl_node_map_get(&f->fx->callees, fnode, f->fn, &c)) return c;
  c = kl_model_callee(f->fx->m, f->fn, fnode);
  kl_node_map_put(f->fx->a, &f->fx->callees, fnode, f->fn, c);
  return c;
}

/* ---- Constants of a specialisation ----------------------------------------------------------- */

/* The text a name stands for outside the function: a binding of the specialisation, then a
 * constant of the file. */
static const char *kl_fold_text(const struct kl_flow_ctx *fx, const struct kl_flow_inst *in,
                                const char *name, size_t len) {
  for (size_t i = 0; in && i < in->n; i++)
    if (strlen(in->b[i].name) == len && !memcmp(in->b[i].name, name, len)) return in->b[i].text;
  return kl_model_const(fx->m, name, len);
}

/* A name a recorded helper walk looked up outside the fold cache. */
static void kl_share_look(struct kl_flow_ctx *fx, struct kl_share *sh, const char *name, size_t len,
                          const char *text) {
  for (size_t i = 0; i < sh->nlooks; i++)
    if (sh->looks[i].len == len && !memcmp(sh->looks[i].name, name, len)) return;
  KL_VEC_PUSH(fx->a, sh->looks, sh->nlooks, sh->cap_looks);
  sh->looks[sh->nlooks++] = (struct kl_look){kl_arena_strndup(fx->a, name, len), len, text};
}

/* A name a recorded helper walk folded through the cache, first time only: the cache answers
 * the same until the run ends. */
static void kl_share_touch(struct kl_flow_ctx *fx, struct kl_share *sh, const char *name,
                           size_t len, bool known, int64_t value) {
  for (size_t i = 0; i < sh->ntouches; i++)
    if (sh->touches[i].len == len && !memcmp(sh->touches[i].name, name, len)) return;
  KL_VEC_PUSH(fx->a, sh->touches, sh->ntouches, sh->cap_touches);
  sh->touches[sh->ntouches++] =
      (struct kl_touch){kl_arena_strndup(fx->a, name, len), len, known, value};
}

static const char *kl_fold_lookup(void *ctx, const char *name, size_t len) {
  struct kl_flow_ctx *fx = ctx;
  const char *text = kl_fold_text(fx, fx->inst, name, len);
  if (!fx->in_fold)
    for (int i = 0; i < fx->nactive; i++) kl_share_look(fx, fx->active[i], name, len, text);
  if (fx->recording) {
    struct kl_run_rec *r = &fx->rec;
    for (size_t i = 0; i < r->nlooks; i++)
      if (r->looks[i].len == len && !memcmp(r->looks[i].name, name, len)) return text;
    KL_VEC_PUSH(fx->a, r->looks, r->nlooks, r->cap_looks);
    r->looks[r->nlooks++] = (struct kl_look){kl_arena_strndup(fx->a, name, len), len, text};
  }
  return text;
}

static bool kl_fold_name(struct kl_flow_ctx *fx, const char *name, size_t len, int64_t *v);

/* kl_model_member_const for the function being walked, remembered by struct body and name. */
static TSNode kl_member_const(struct kl_frame *f, const char *name, size_t len) {
  struct kl_flow_ctx *fx = f->fx;
  if (!f->fn || !f->fn->owner || kl_node_null(f->fn->owner_body))
    return kl_model_member_const(fx->m, f->fn, name, len);
  const void *owner = f->fn->owner_body.id;
  if (2 * (fx->nmconsts + 1) > fx->cap_mconsts) {
    size_t cap = fx->cap_mconsts ? 2 * fx->cap_mconsts : 64;
    struct kl_mconst *t = kl_arena_xmalloc(cap * sizeof *t);
    memset(t, 0, cap * sizeof *t);
    for (size_t i = 0; i < fx->cap_mconsts; i++) {
      const struct kl_mconst *e = &fx->mconsts[i];
      if (!e->owner) continue;
      size_t h = (kl_fnv(e->name, e->len) ^ (uint32_t)(uintptr_t)e->owner) & (cap - 1);
      while (t[h].owner) h = (h + 1) & (cap - 1);
      t[h] = *e;
    }
    free(fx->mconsts);
    fx->mconsts = t;
    fx->cap_mconsts = cap;
  }
  size_t h = (kl_fnv(name, len) ^ (uint32_t)(uintptr_t)owner) & (fx->cap_mconsts - 1);
  for (;; h = (h + 1) & (fx->cap_mconsts - 1)) {
    struct kl_mconst *e = &fx->mconsts[h];
    if (!e->owner) break;
    if (e->owner == owner && e->len == len && !memcmp(e->name, name, len)) return e->found;
  }
  struct kl_mconst *e = &fx->mconsts[h];
  e->owner = owner;
  e->name = kl_arena_strndup(fx->a, name, len);
  e->len = len;
  e->found = kl_model_member_const(fx->m, f->fn, name, len);
  fx->nmconsts++;
  return e->found;
}

/* A name that is not a variable of the function: a macro the body defined above (latest
 * first), else a name of the specialisation or the file. */
static bool kl_fold_global(struct kl_frame *f, const char *name, size_t len, int64_t *v) {
  for (size_t i = f->nmacros; i-- > 0;) {
    const struct kl_flow_bind *mc = &f->macros[i];
    if (strlen(mc->name) != len || memcmp(mc->name, name, len)) continue;
    if (!mc->text) return false; /* #undef */
    struct kl_consteval_env env = {kl_fold_lookup, NULL, NULL, f->fx, false};
    return kl_consteval_eval(mc->text, strlen(mc->text), &env, v);
  }
  /* A member function sees its struct's constants (their values are not cached: they are the
   * struct's). */
  TSNode mc = kl_member_const(f, name, len);
  if (!kl_node_null(mc)) {
    const char *t = kl_text(f, mc);
    struct kl_consteval_env env = {kl_fold_lookup, NULL, NULL, f->fx, false};
    return kl_consteval_eval(t, strlen(t), &env, v);
  }
  return kl_fold_name(f->fx, name, len, v);
}

/* A name that is not a variable of the function, folded (and remembered for the
 * specialisation). */
static bool kl_fold_name(struct kl_flow_ctx *fx, const char *name, size_t len, int64_t *v) {
  size_t slot = kl_fnv(name, len) & (KL_FLOW_FOLD_CACHE - 1);
  for (size_t probe = 0; probe < KL_FLOW_FOLD_CACHE; probe++) {
    struct kl_fold_entry *e = &fx->fold[(slot + probe) & (KL_FLOW_FOLD_CACHE - 1)];
    if (e->name && (e->len != len || memcmp(e->name, name, len))) continue;
    if (!e->name) {
      /* What the evaluation looks up is the fold's: a recorded walk keeps the name's value. */
      bool was = fx->in_fold;
      fx->in_fold = true;
      const char *text = kl_fold_lookup(fx, name, len);
      struct kl_consteval_env env = {kl_fold_lookup, NULL, NULL, fx, false};
      int64_t r = 0;
      e->known = text && kl_consteval_eval(text, strlen(text), &env, &r);
      e->value = r;
      e->name = kl_arena_strndup(fx->a, name, len);
      e->len = len;
      fx->in_fold = was;
    }
    for (int i = 0; i < fx->nactive; i++)
      kl_share_touch(fx, fx->active[i], name, len, e->known, e->value);
    *v = e->value;
    return e->known;
  }
  /* A full cache: unknown, which only loses precision; another run's cache may have room. */
  for (int i = 0; i < fx->nactive; i++) fx->active[i]->bad = true;
  return false;
}

static bool kl_form_const(struct kl_affine a, int64_t *v) {
  if (!a.known || a.n || a.c0_symbolic) return false;
  *v = a.c0;
  return true;
}

static bool kl_cop_of(const char *op, enum kl_cop *out) {
  static const struct {
    const char *op;
    enum kl_cop cop;
  } ops[] = {{"+", KL_COP_ADD},  {"-", KL_COP_SUB},     {"*", KL_COP_MUL},    {"/", KL_COP_DIV},
             {"%", KL_COP_MOD},  {"<<", KL_COP_SHL},    {">>", KL_COP_SHR},   {"&", KL_COP_BITAND},
             {"|", KL_COP_BITOR}, {"^", KL_COP_BITXOR}, {"<", KL_COP_LT},     {"<=", KL_COP_LE},
             {">", KL_COP_GT},   {">=", KL_COP_GE},     {"==", KL_COP_EQ},    {"!=", KL_COP_NE},
             {"&&", KL_COP_AND}, {"||", KL_COP_OR},     {"and", KL_COP_AND},  {"or", KL_COP_OR}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(ops[i].op, op)) {
      *out = ops[i].cop;
      return true;
    }
  return false;
}

static TSNode kl_unparen(TSNode n);
static const char *kl_op(struct kl_frame *f, TSNode n);
static const char *kl_op_of(TSNode n);

/* The names a constant function call binds while its body is folded: its template and value
 * parameters, then its constant locals. A NULL text hides a name the call leaves unknown. */
struct kl_cfn_env {
  struct kl_flow_ctx *fx;
  const char *names[24];
  const char *texts[24];
  size_t n;
};

static const char *kl_cfn_lookup(void *ctx, const char *name, size_t len) {
  struct kl_cfn_env *e = ctx;
  for (size_t i = e->n; i-- > 0;)
    if (strlen(e->names[i]) == len && !memcmp(e->names[i], name, len)) return e->texts[i];
  return kl_fold_lookup(e->fx, name, len);
}

static bool kl_fold(struct kl_frame *f, TSNode n, int64_t *v, int depth);

static bool kl_cfn_bind(struct kl_cfn_env *e, const char *name, const char *text) {
  if (e->n == sizeof e->names / sizeof e->names[0]) return false; /* too many: do not fold */
  e->names[e->n] = name;
  e->texts[e->n++] = text;
  return true;
}

/* A call of a same-file function whose body is constant declarations and one return
 * (`get_bytes_per_pack<bits>()`, a `constexpr` helper), folded with the call's template and
 * value arguments. Anything else in the body, or an argument that does not fold, is unknown. */
static bool kl_fold_call(struct kl_frame *f, TSNode n, int64_t *v, int depth) {
  if (depth > 8) return false;
  TSNode fnode = kl_fld(f, n, "function");
  TSNode targs = kl_node_is_kind(fnode, KL_KIND_TEMPLATE_FUNCTION) ? kl_fld(f, fnode, "arguments")
                                                                   : (TSNode){0};
  /* The same function the call runs (kl_eval_call), members through their struct. */
  const struct kl_function *c = kl_callee(f, fnode);
  if (!c || kl_node_null(c->body) || c == f->fn) return false;
  uint32_t nb = ts_node_named_child_count(c->body);
  if (nb == 0 || nb > 8) return false;
  struct kl_cfn_env *e = kl_arena_alloc(f->fx->a, sizeof *e);
  e->fx = f->fx;
  e->n = 0;
  uint32_t ntargs = kl_node_null(targs) ? 0 : ts_node_named_child_count(targs);
  TSNode cargs = kl_fld(f, n, "arguments");
  /* An overload of another arity is another function: do not fold with these parameters. */
  if (ntargs > c->ntparams ||
      (!kl_node_null(cargs) && ts_node_named_child_count(cargs) > c->nparams))
    return false;
  for (size_t i = 0; i < c->ntparams; i++) {
    if (!c->tvalue[i]) continue;
    const char *text = NULL;
    int64_t k;
    if (c->tpos[i] < ntargs) {
      if (kl_fold(f, kl_node_named_child(targs, (uint32_t)c->tpos[i]), &k, depth + 1))
        text = kl_arena_printf(f->fx->a, "%lld", (long long)k);
    } else {
      text = c->tdefaults[i];
    }
    if (!kl_cfn_bind(e, c->tparams[i], text)) return false;
  }
  TSNode args = kl_fld(f, n, "arguments");
  uint32_t nargs = kl_node_null(args) ? 0 : ts_node_named_child_count(args);
  for (size_t i = 0; i < c->nparams; i++) {
    int64_t k;
    const char *text = NULL;
    if (i < nargs && kl_fold(f, kl_node_named_child(args, (uint32_t)i), &k, depth + 1))
      text = kl_arena_printf(f->fx->a, "%lld", (long long)k);
    if (c->params[i].name && !kl_cfn_bind(e, c->params[i].name, text)) return false;
  }
  struct kl_consteval_env env = {kl_cfn_lookup, NULL, NULL, e, false};
  for (uint32_t i = 0; i < nb; i++) {
    TSNode s = kl_node_named_child(c->body, i);
    enum kl_kind ty = kl_node_kind(s);
    if (ty == KL_KIND_COMMENT || ty == KL_KIND_STATIC_ASSERT_DECLARATION) continue;
    if (ty == KL_KIND_RETURN_STATEMENT) {
      TSNode x = kl_node_named_child(s, 0);
      if (kl_node_null(x)) return false;
      const char *t = kl_text(f, x);
      return kl_consteval_eval(t, strlen(t), &env, v);
    }
    if (ty == KL_KIND_DECLARATION) {
      /* One declarator only: `const int a = 1, b = 2;` is not followed. */
      TSNode d = kl_fld(f, s, "declarator");
      if (!kl_node_is_kind(d, KL_KIND_INIT_DECLARATOR) || ts_node_named_child_count(s) > 3)
        return false;
      TSNode id = kl_fld(f, d, "declarator"), val = kl_fld(f, d, "value");
      if (!kl_node_is_kind(id, KL_KIND_IDENTIFIER) || kl_node_null(val)) return false;
      if (!kl_cfn_bind(e, kl_text(f, id), kl_text(f, val))) return false;
      continue;
    }
    return false;
  }
  return false;
}

/* The constant value of an expression under the specialisation, without evaluating it for its
 * facts: literals, names the specialisation or the file gives a value, variables whose value is
 * a constant here, and operators over those. */
static bool kl_fold(struct kl_frame *f, TSNode n, int64_t *v, int depth) {
  n = kl_unparen(n);
  if (kl_node_null(n) || depth > 32) return false;
  enum kl_kind ty = kl_node_kind(n);
  if (ty == KL_KIND_TRUE || ty == KL_KIND_FALSE) {
    *v = ty == KL_KIND_TRUE;
    return true;
  }
  if (ty == KL_KIND_NUMBER_LITERAL) {
    char *end = NULL;
    const char *txt = kl_text(f, n);
    long long c = strtoll(txt, &end, 0);
    if (!end || strspn(end, "uUlL") != strlen(end)) return false;
    *v = c;
    return true;
  }
  if (ty == KL_KIND_IDENTIFIER || ty == KL_KIND_FIELD_EXPRESSION) {
    int id = kl_var_node(f, n);
    if (id >= 0) return kl_form_const(f->env[id].form, v);
    if (ty == KL_KIND_FIELD_EXPRESSION) return false;
    uint32_t st = ts_node_start_byte(n), en = ts_node_end_byte(n);
    if (kl_msl_coord(kl_text(f, n))) return false;
    return kl_fold_global(f, f->fx->u->buf + st, en - st, v);
  }
  if (ty == KL_KIND_CAST_EXPRESSION) return kl_fold(f, kl_fld(f, n, "value"), v, depth + 1);
  if (ty == KL_KIND_CALL_EXPRESSION) return kl_fold_call(f, n, v, depth + 1);
  /* A template argument that is one name (`get_pack_factor<bits>()`) parses as a type. */
  if (ty == KL_KIND_TYPE_DESCRIPTOR && ts_node_named_child_count(n) == 1 &&
      kl_node_is_kind(kl_fld(f, n, "type"), KL_KIND_TYPE_IDENTIFIER)) {
    TSNode t = kl_fld(f, n, "type");
    uint32_t st = ts_node_start_byte(t), en = ts_node_end_byte(t);
    return kl_fold_global(f, f->fx->u->buf + st, en - st, v);
  }
  if (ty == KL_KIND_UNARY_EXPRESSION) {
    int64_t a;
    if (!kl_fold(f, kl_fld(f, n, "argument"), &a, depth + 1)) return false;
    const char *op = kl_op(f, n);
    if (!strcmp(op, "!") || !strcmp(op, "not")) return kl_consteval_apply(KL_COP_NOT, a, 0, v);
    if (!strcmp(op, "-")) return kl_consteval_apply(KL_COP_NEG, a, 0, v);
    if (!strcmp(op, "~")) return kl_consteval_apply(KL_COP_BITNOT, a, 0, v);
    if (!strcmp(op, "+")) return *v = a, true;
    return false;
  }
  if (ty == KL_KIND_BINARY_EXPRESSION) {
    enum kl_cop cop;
    if (!kl_cop_of(kl_op(f, n), &cop)) return false;
    int64_t a, b;
    bool ka = kl_fold(f, kl_fld(f, n, "left"), &a, depth + 1);
    /* && and || decide on one known operand. */
    if (ka && ((cop == KL_COP_AND && !a) || (cop == KL_COP_OR && a)))
      return *v = cop == KL_COP_OR, true;
    bool kb = kl_fold(f, kl_fld(f, n, "right"), &b, depth + 1);
    if (kb && ((cop == KL_COP_AND && !b) || (cop == KL_COP_OR && b)))
      return *v = cop == KL_COP_OR, true;
    return ka && kb && kl_consteval_apply(cop, a, b, v);
  }
  if (ty == KL_KIND_CONDITIONAL_EXPRESSION) {
    int64_t c;
    if (!kl_fold(f, kl_fld(f, n, "condition"), &c, depth + 1)) return false;
    return kl_fold(f, kl_fld(f, n, c ? "consequence" : "alternative"), v, depth + 1);
  }
  return false;
}

static void kl_join_into(struct kl_val *dst, const struct kl_val *v) {
  /* An array of pointers no path has stored into yet takes what the other path stored. */
  if (v->root == KL_ROOT_EMPTY || dst->root == KL_ROOT_EMPTY) {
    struct kl_val keep = v->root == KL_ROOT_EMPTY ? *dst : *v;
    kl_bits_or(&keep.deps, dst->root == KL_ROOT_EMPTY ? &dst->deps : &v->deps);
    keep.scope = kl_max(dst->scope, v->scope);
    *dst = keep;
    return;
  }
  dst->scope = kl_max(dst->scope, v->scope);
  dst->form = kl_affine_join(dst->form, v->form);
  kl_bits_or(&dst->deps, &v->deps);
  kl_bits_or(&dst->mention, &v->mention);
  dst->clamped = dst->clamped && v->clamped;
  dst->sized = dst->sized || v->sized;
  if (dst->root != v->root) dst->root = -1;
}

/* Combine operands of an arithmetic or other operator. */
static struct kl_val kl_combine(struct kl_frame *f, struct kl_val a, struct kl_val b) {
  struct kl_val r = a;
  r.scope = kl_max(a.scope, b.scope);
  kl_bits_or(&r.deps, &b.deps);
  kl_bits_or(&r.mention, &b.mention);
  r.sized = a.sized || b.sized;
  bool ta = kl_thread_derived(f, &a), tb = kl_thread_derived(f, &b);
  r.clamped = (a.clamped || b.clamped) && (!ta || a.clamped) && (!tb || b.clamped);
  r.root = -1;
  return r;
}

/* Variables named in an expression: identifiers and coordinate components. */
static void kl_mentions(struct kl_frame *f, TSNode n, struct kl_bits *out, int depth) {
  if (depth > 200) return;
  if (kl_node_is_kind(n, KL_KIND_IDENTIFIER)) {
    kl_bits_set(out, kl_var_node(f, n));
    return;
  }
  if (kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION)) {
    int id = kl_var_node(f, n);
    if (id >= 0) {
      kl_bits_set(out, id);
      return;
    }
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) kl_mentions(f, kl_node_named_child(n, i), out, depth + 1);
}

static TSNode kl_unparen(TSNode n) {
  for (enum kl_kind k = kl_node_kind(n);
       (k == KL_KIND_PARENTHESIZED_EXPRESSION || k == KL_KIND_CONDITION_CLAUSE) &&
       ts_node_named_child_count(n) > 0;
       k = kl_node_kind(n)) {
    /* Only a condition clause has fields in tree-sitter-cpp: a parenthesized expression's one
     * named child is its value, and asking for the field would scan its children for nothing. */
    TSNode v = k == KL_KIND_CONDITION_CLAUSE ? kl_field(n, "value") : (TSNode){{0}, NULL, NULL};
    n = kl_node_null(v) ? kl_node_named_child(n, 0) : v;
  }
  return n;
}

static const char *kl_op_of(TSNode n) {
  TSNode op = kl_field(n, "operator");
  return kl_node_null(op) ? "" : ts_node_type(op);
}

/* kl_op_of, with the operator's node remembered: the walk asks it of every operator it meets
 * again, on every loop pass and in every specialisation. */
static const char *kl_op(struct kl_frame *f, TSNode n) {
  TSNode op = kl_fld(f, n, "operator");
  return kl_node_null(op) ? "" : ts_node_type(op);
}

/* Whether an expression is fixed when the kernel is compiled: literals, template parameters,
 * function constants and names the specialisation or the file folds. */
static bool kl_compile_time(struct kl_frame *f, TSNode n, int depth) {
  n = kl_unparen(n);
  if (kl_node_null(n) || depth > 32) return false;
  enum kl_kind ty = kl_node_kind(n);
  if (ty == KL_KIND_NUMBER_LITERAL || ty == KL_KIND_TRUE || ty == KL_KIND_FALSE ||
      ty == KL_KIND_SIZEOF_EXPRESSION)
    return true;
  if (ty == KL_KIND_IDENTIFIER) {
    if (kl_var_node(f, n) >= 0) return false;
    uint32_t st = ts_node_start_byte(n), en = ts_node_end_byte(n);
    const char *nm = f->fx->u->buf + st;
    for (size_t i = 0; i < f->fn->ntparams; i++)
      if (strlen(f->fn->tparams[i]) == en - st && !memcmp(f->fn->tparams[i], nm, en - st))
        return true;
    int64_t v;
    return kl_model_fconst(f->fx->m, nm, en - st) || kl_fold_global(f, nm, en - st, &v);
  }
  if (ty == KL_KIND_UNARY_EXPRESSION)
    return kl_compile_time(f, kl_fld(f, n, "argument"), depth + 1);
  if (ty == KL_KIND_BINARY_EXPRESSION)
    return kl_compile_time(f, kl_fld(f, n, "left"), depth + 1) &&
           kl_compile_time(f, kl_fld(f, n, "right"), depth + 1);
  return false;
}

/* The variable v names, through subscripts (`j`, `jump[h][w]`), or -1. */
static int kl_array_var(struct kl_frame *f, TSNode v) {
  v = kl_unparen(v);
  for (int i = 0; i < 4 && kl_node_is_kind(v, KL_KIND_SUBSCRIPT_EXPRESSION); i++)
    v = kl_unparen(kl_fld(f, v, "argument"));
  return kl_node_is_kind(v, KL_KIND_IDENTIFIER) ? kl_var_node(f, v) : -1;
}

/* The variable holding a sentinel selection that v reads, or -1. */
static int kl_sentinel_var(struct kl_frame *f, TSNode v) {
  int id = kl_array_var(f, v);
  return id >= 0 && f->vars[id].sentinel && !kl_node_null(f->vars[id].cond) &&
                 f->vars[id].sentinel_branch <= f->branch
             ? id
             : -1;
}

/* If v is `cond ? x : K` (or `cond ? K : x`) with K a negative constant, a sentinel for "not
 * valid": record that on variable id, for kl_bounds. */
static void kl_note_sentinel(struct kl_frame *f, int id, TSNode v) {
  v = kl_unparen(v);
  if (id < 0 || kl_node_null(v) || !kl_node_is_kind(v, KL_KIND_CONDITIONAL_EXPRESSION)) return;
  /* An unsigned -1 is no negative value: `v >= 0` always holds. */
  const char *ty = f->vars[id].decl ? f->vars[id].decl->type : NULL;
  if (ty && (ty[0] == 'u' || !strcmp(ty, "size_t"))) return;
  int64_t k;
  bool alt = kl_fold(f, kl_fld(f, v, "alternative"), &k, 0) && k < 0;
  bool con = !alt && kl_fold(f, kl_fld(f, v, "consequence"), &k, 0) && k < 0;
  if (!alt && !con) return;
  f->vars[id].cond = kl_fld(f, v, "condition");
  f->vars[id].sentinel = true;
  f->vars[id].sentinel_not = con;
  f->vars[id].sentinel_branch = f->branch;
}

/* Variables bounded above when condition n evaluates to `positive`. */
static void kl_bounds(struct kl_frame *f, TSNode n, bool positive, struct kl_bits *out, int depth) {
  n = kl_unparen(n);
  if (kl_node_null(n) || depth > 64) return;
  if (kl_node_is_kind(n, KL_KIND_IDENTIFIER)) {
    int id = kl_var_node(f, n);
    /* Followed once: `bool b = b && b;` would otherwise double at every level. */
    if (id >= 0 && depth < 32 && !f->vars[id].sentinel && !kl_node_null(f->vars[id].cond))
      kl_bounds(f, f->vars[id].cond, positive, out, depth + 32);
    return;
  }
  if (kl_node_is_kind(n, KL_KIND_UNARY_EXPRESSION) && !strcmp(kl_op(f, n), "!")) {
    kl_bounds(f, kl_fld(f, n, "argument"), !positive, out, depth + 1);
    return;
  }
  if (!kl_node_is_kind(n, KL_KIND_BINARY_EXPRESSION)) return;
  const char *op = kl_op(f, n);
  TSNode l = kl_fld(f, n, "left"), r = kl_fld(f, n, "right");
  bool and_op = !strcmp(op, "&&") || !strcmp(op, "and");
  if (and_op || !strcmp(op, "||") || !strcmp(op, "or")) {
    if (positive == and_op) {
      kl_bounds(f, l, positive, out, depth + 1);
      kl_bounds(f, r, positive, out, depth + 1);
      return;
    }
    /* `!(a && b)` with a known true is `!b`: the else branch of `N > 1 && i + N > n` bounds i
     * once the specialisation says N > 1. */
    int64_t k;
    if (kl_fold(f, l, &k, 0) && (k != 0) == and_op) kl_bounds(f, r, positive, out, depth + 1);
    if (kl_fold(f, r, &k, 0) && (k != 0) == and_op) kl_bounds(f, l, positive, out, depth + 1);
    /* Unfolded, `N > 1 && i + N > n` still splits by specialisation: where N > 1 its else
     * branch is bounded, and where not the comparison never runs, so it is evidence of
     * nothing. Either way the branch counts as guarded. */
    if (kl_compile_time(f, l, 0)) kl_bounds(f, r, positive, out, depth + 1);
    return;
  }
  bool lt = !strcmp(op, "<") || !strcmp(op, "<=");
  bool gt = !strcmp(op, ">") || !strcmp(op, ">=");
  if (!lt && !gt) return;
  /* `v >= 0` (or `v > -1`, or the else of `v < 0`) for v holding `cond ? x : -1`: cond held. */
  int sid = kl_sentinel_var(f, l);
  int64_t k;
  if (sid >= 0 && depth < 24 && kl_fold(f, r, &k, 0)) {
    bool nonneg = positive ? (!strcmp(op, ">=") && k == 0) || (!strcmp(op, ">") && k == -1)
                           : (!strcmp(op, "<") && k == 0) || (!strcmp(op, "<=") && k == -1);
    if (nonneg) {
      kl_bounds(f, f->vars[sid].cond, !f->vars[sid].sentinel_not, out, depth + 8);
      return;
    }
  }
  /* positive `l < r` and negative `l >= r` both bound l; the mirror cases bound r. */
  bool bound_left = lt == positive;
  kl_mentions(f, bound_left ? l : r, out, 0);
}

/* Record comparisons of thread-derived values against problem sizes (bounds-guard evidence).
 * Only a value with an affine part counts, and that part says what it bounds: a comparison of a
 * loaded or otherwise non-affine value bounds that value, not the thread index it was loaded
 * with. */
/* Whether the subtree holds a memory access (a subscript or a dereference). */
static bool kl_has_access(TSNode n, int depth) {
  if (kl_node_null(n) || depth > 64) return false;
  if (kl_node_is_kind(n, KL_KIND_SUBSCRIPT_EXPRESSION) ||
      (kl_node_is_kind(n, KL_KIND_POINTER_EXPRESSION) && !strcmp(kl_op_of(n), "*")))
    return true;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_has_access(kl_node_named_child(n, i), depth + 1)) return true;
  return false;
}

static bool kl_exits(TSNode n, int depth);

/* Collect the start and end bytes of the memory locations n stores to (`a[i] = ...`, `*p = ...`),
 * at most 8. */
static int kl_stores(TSNode n, uint32_t (*at)[2], int k, int depth) {
  if (kl_node_null(n) || depth > 24 || k >= 8) return k;
  if (kl_node_is_kind(n, KL_KIND_ASSIGNMENT_EXPRESSION)) {
    TSNode l = kl_unparen(kl_field(n, "left"));
    if (kl_node_is_kind(l, KL_KIND_SUBSCRIPT_EXPRESSION) ||
        kl_node_is_kind(l, KL_KIND_POINTER_EXPRESSION)) {
      at[k][0] = ts_node_start_byte(l);
      at[k][1] = ts_node_end_byte(l);
      return k + 1;
    }
    return k;
  }
  uint32_t c = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < c && k < 8; i++)
    k = kl_stores(kl_node_named_child(n, i), at, k, depth + 1);
  return k;
}

/* Whether every location one list of stores writes (start and end bytes in buf) is written the
 * same way in the other. */
static bool kl_stores_in(const char *buf, uint32_t (*a)[2], int na, uint32_t (*b)[2], int nb) {
  for (int i = 0; i < na; i++) {
    bool same = false;
    for (int j = 0; j < nb && !same; j++)
      same = a[i][1] - a[i][0] == b[j][1] - b[j][0] &&
             !memcmp(buf + a[i][0], buf + b[j][0], a[i][1] - a[i][0]);
    if (!same) return false;
  }
  return true;
}

/* Whether both ways out of if_statement p store to the same locations, written the same way: the
 * condition picks the value (`if (i < ne00) dst[i] = src[i]; else dst[i] = 0;`, padding), it
 * does not decide whether the store happens. With no else, a branch that ends in a return, break
 * or continue has the rest of its block as the other way (`if (r < ne01) { dst[i] = src[i];
 * return; } dst[i] = 0;`). */
static bool kl_selects_value(struct kl_frame *f, TSNode p) {
  TSNode cons = kl_fld(f, p, "consequence"), alt = kl_fld(f, p, "alternative");
  uint32_t a[8][2], b[8][2];
  int na = kl_stores(cons, a, 0, 0), nb = 0;
  if (kl_node_null(alt)) {
    TSNode blk = kl_parent(f, p);
    if (!kl_exits(cons, 0) || kl_node_null(blk) ||
        !kl_node_is_kind(blk, KL_KIND_COMPOUND_STATEMENT))
      return false;
    for (TSNode s = ts_node_next_named_sibling(p); !kl_node_null(s) && nb < 8;
         s = ts_node_next_named_sibling(s))
      nb = kl_stores(s, b, nb, 0);
  } else {
    if (kl_exits(cons, 0) || kl_exits(alt, 0)) return false;
    nb = kl_stores(alt, b, 0, 0);
  }
  if (!na || !nb || na == 8 || nb == 8) return false;
  const char *buf = f->fx->u->buf;
  return kl_stores_in(buf, a, na, b, nb) && kl_stores_in(buf, b, nb, a, na);
}

/* Whether n is the value a mask gives what it leaves out (`-INFINITY`, `FLT_MAX`,
 * `numeric_limits<T>::infinity()`): a `?:` that yields it when a comparison fails marks the
 * positions past the bound, as attention and max reductions do for keys past the end. */
static bool kl_mask_sentinel(struct kl_frame *f, TSNode n, int depth) {
  n = kl_unparen(n);
  if (kl_node_null(n) || depth > 4) return false;
  if (kl_is(n, "unary_expression")) {
    const char *op = kl_op(f, n);
    if (strcmp(op, "-") && strcmp(op, "+")) return false;
    return kl_mask_sentinel(f, kl_fld(f, n, "argument"), depth + 1);
  }
  if (kl_is(n, "call_expression")) {
    /* `metal::max(a, b)` is a formula; `numeric_limits<T>::max()` takes no argument. */
    TSNode args = kl_fld(f, n, "arguments");
    if (kl_node_null(args) || ts_node_named_child_count(args)) return false;
    const char *fn = kl_text(f, kl_fld(f, n, "function"));
    size_t l = strlen(fn);
    return (l > 10 && !strcmp(fn + l - 10, "::infinity")) ||
           (l > 8 && !strcmp(fn + l - 8, "::lowest")) || (l > 5 && !strcmp(fn + l - 5, "::max"));
  }
  if (!kl_is(n, "identifier")) return false;
  static const char *const names[] = {"INFINITY", "HUGE_VALF", "HUGE_VAL", "FLT_MAX",
                                      "HALF_MAX", "MAXFLOAT",  "MAXHALF"};
  const char *t = kl_text(f, n);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(t, names[i])) return true;
  return false;
}

/* Whether comparison n guards something: it decides a loop, or a branch or `?:` that exits or
 * makes a memory access, or a `?:` that masks (kl_mask_sentinel). `h < n_head ? a : b` choosing
 * between two formulas, or a bool kept for later, says nothing about the grid running past the
 * data. */
static bool kl_cmp_guards(struct kl_frame *f, TSNode n) {
  TSNode c = n, p = kl_parent(f, n);
  for (int d = 0; d < 32 && !kl_node_null(p); d++) {
    const char *pt = ts_node_type(p);
    if (!strcmp(pt, "parenthesized_expression") || !strcmp(pt, "condition_clause") ||
        (!strcmp(pt, "unary_expression") && !strcmp(kl_op(f, p), "!")) ||
        (!strcmp(pt, "binary_expression") &&
         (!strcmp(kl_op(f, p), "&&") || !strcmp(kl_op(f, p), "||")))) {
      /* The right side of && is guarded by the left: `i < n && x[i]` is a guard too. */
      if (!strcmp(pt, "binary_expression") && ts_node_eq(c, kl_fld(f, p, "left")) &&
          kl_has_access(kl_fld(f, p, "right"), 0))
        return true;
      c = p;
      p = kl_parent(f, p);
      continue;
    }
    if (!strcmp(pt, "for_statement") || !strcmp(pt, "while_statement") ||
        !strcmp(pt, "do_statement"))
      return true;
    if (!strcmp(pt, "if_statement")) {
      TSNode cons = kl_fld(f, p, "consequence"), alt = kl_fld(f, p, "alternative");
      if (kl_selects_value(f, p)) return false;
      return kl_exits(cons, 0) || kl_exits(alt, 0) || kl_has_access(cons, 0) ||
             kl_has_access(alt, 0);
    }
    if (!strcmp(pt, "conditional_expression")) {
      TSNode cons = kl_fld(f, p, "consequence"), alt = kl_fld(f, p, "alternative");
      return ts_node_eq(c, kl_fld(f, p, "condition")) &&
             (kl_has_access(cons, 0) || kl_has_access(alt, 0) || kl_mask_sentinel(f, cons, 0) ||
              kl_mask_sentinel(f, alt, 0));
    }
    return false;
  }
  return false;
}

/* Fill c's walks from the compared value t: the variables it is computed from whose value is
 * the one a loop left by stepping them, and the byte range of that loop. */
static void kl_note_walks(struct kl_frame *f, struct kl_cmp *c, const struct kl_val *t) {
  int n = 0;
  for (int v = 0; v < f->nvars && v < KL_FLOW_BITS; v++) {
    if (!kl_bits_has(&t->deps, v) || kl_node_null(f->vars[v].walk)) continue;
    if (n == KL_CMP_WALKS) return; /* too many to follow: c stays plain evidence */
    c->walk_var[n] = v;
    c->walk_lo[n] = ts_node_start_byte(f->vars[v].walk);
    c->walk_hi[n++] = ts_node_end_byte(f->vars[v].walk);
  }
  c->nwalk = n;
}

/* Whether comparison c is only about where a walk ended (kl_note_walks) for an access at byte
 * at, inside that walk's loop, whose index is computed from the stepped variable (deps): the
 * access used the loop's earlier values, which its bound keeps in range (kl_rounds_up). */
static bool kl_cmp_walk_end(const struct kl_cmp *c, uint32_t at, const struct kl_bits *deps) {
  for (int i = 0; i < c->nwalk; i++)
    if (at >= c->walk_lo[i] && at < c->walk_hi[i] && kl_bits_has(deps, c->walk_var[i])) return true;
  return false;
}

static void kl_note_compare(struct kl_frame *f, TSNode n, const struct kl_val *l,
                            const struct kl_val *r) {
  const struct kl_val *t = NULL;
  if (kl_thread_derived(f, l) && r->sized && !kl_thread_derived(f, r)) t = l;
  if (kl_thread_derived(f, r) && l->sized && !kl_thread_derived(f, l)) t = r;
  if (!t || (!t->form.known && !t->form.partial) || !t->form.n || !kl_cmp_guards(f, n)) return;
  /* A comparison with a uniform loop counter in it (`i2 + lane < n_tok`, `lane < step` in a
   * tree reduction) bounds the iterations, not the grid. A counter that starts at the thread
   * position (`for (i = lid; i < n; i += tg)`) is the thread's own index: that one counts. */
  const struct kl_val *b = t == l ? r : l;
  if (kl_bits_meet(&b->mention, &f->inductions)) return;
  struct kl_bits counters;
  memset(&counters, 0, sizeof counters);
  /* A counter is a variable a loop steps, or one computed from it (`ic = ic0 * C`). One of a
   * loop with a compile-time trip count (`row < NR0`: the rows a thread owns) is not: at its
   * start the compared value is the thread's own (`first_row + row < ne01` bounds first_row). */
  struct kl_bits steps = f->inductions;
  bool fixed = false;
  for (size_t w = 0; w < KL_FLOW_BITS / 64; w++) steps.w[w] &= ~f->fixed.w[w];
  struct kl_bits names;
  memset(&names, 0, sizeof names);
  for (int i = 0; i < f->nvars && i < KL_FLOW_BITS; i++) {
    if (kl_bits_has(&t->mention, i) && kl_thread_derived(f, &f->env[i])) kl_bits_set(&names, i);
    if (!kl_bits_has(&t->mention, i) || kl_thread_derived(f, &f->env[i])) continue;
    if (kl_bits_has(&steps, i) || kl_bits_meet(&f->env[i].deps, &steps))
      kl_bits_set(&counters, i);
    else if (kl_bits_has(&f->inductions, i) || kl_bits_meet(&f->env[i].deps, &f->inductions))
      fixed = true;
  }
  struct kl_cmp cmp = {t->form, n, counters, false, fixed, names, 0, {0}, {0}, {0}};
  kl_note_walks(f, &cmp, t);
  /* A loop body is walked until it settles: keep the last form of each comparison. */
  uint32_t start = ts_node_start_byte(n);
  for (size_t k = 0; k < f->ncmps; k++) {
    if (ts_node_start_byte(f->cmps[k].node) != start) continue;
    f->cmps[k] = cmp;
    return;
  }
  KL_VEC_PUSH(f->fx->a, f->cmps, f->ncmps, f->cap_cmps);
  f->cmps[f->ncmps++] = cmp;
}

/* Whether a comparison bounds a value the access's index is built from, through atom c: c is
 * among the compared atoms, and every compared atom appears in the index (its affine part, when
 * the rest is not affine) scaled by one common factor, as `row < n` bounds `w[row * ld + col]`.
 * A symbolic coefficient matches any factor. A check of `gid.x` says nothing of `gid.y`, and one
 * of `256 * tg + lid` nothing of a per-threadgroup slot `out[tg]`. */
static bool kl_cmp_bounds(const struct kl_affine *cmp, const struct kl_affine *idx, uint16_t c) {
  int64_t k, ck;
  bool sym, csym;
  if (!kl_affine_part_coeff(*cmp, c, &ck, &csym)) return false;
  bool ratio = false;
  int64_t num = 0, den = 1;
  for (uint8_t i = 0; i < cmp->n; i++) {
    const struct kl_affine_term *t = &cmp->t[i];
    if (!kl_affine_part_coeff(*idx, t->atom, &k, &sym)) return false;
    if (sym || t->symbolic || t->k == 0) continue;
    int64_t l, r;
    if (!ratio) {
      num = k, den = t->k, ratio = true;
    } else if (__builtin_mul_overflow(k, den, &l) || __builtin_mul_overflow(t->k, num, &r) ||
               l != r) {
      return false;
    }
  }
  return true;
}

/* The slot of the access starting at byte start; with add, created when absent. */
static struct kl_slot *kl_slot(struct kl_frame *f, uint32_t start, bool add) {
  if (add && (f->nslots + 1) * 2 > f->cap_slots) {
    size_t cap = f->cap_slots ? f->cap_slots * 2 : 64;
    struct kl_slot *old = f->slots;
    size_t oldcap = f->cap_slots;
    f->slots = kl_arena_xmalloc(cap * sizeof *f->slots);
    memset(f->slots, 0, cap * sizeof *f->slots);
    f->cap_slots = cap;
    for (size_t i = 0; i < oldcap; i++) {
      if (!old[i].key) continue;
      size_t h = (old[i].key * 2654435761u) & (cap - 1);
      while (f->slots[h].key) h = (h + 1) & (cap - 1);
      f->slots[h] = old[i];
    }
    free(old);
  }
  if (!f->cap_slots) return NULL;
  uint32_t key = start + 1;
  size_t h = (key * 2654435761u) & (f->cap_slots - 1);
  while (f->slots[h].key && f->slots[h].key != key) h = (h + 1) & (f->cap_slots - 1);
  if (f->slots[h].key) return &f->slots[h];
  if (!add) return NULL;
  f->slots[h] = (struct kl_slot){key, UINT32_MAX, -1};
  f->nslots++;
  return &f->slots[h];
}

static TSNode kl_decl_name(TSNode d);

/* What assignment or update n writes (`x` of `x += 1`, `++x`), or a null node for any other n. */
static TSNode kl_written_lvalue(struct kl_frame *f, TSNode n) {
  if (kl_node_is_kind(n, KL_KIND_ASSIGNMENT_EXPRESSION)) return kl_fld(f, n, "left");
  if (kl_node_is_kind(n, KL_KIND_UPDATE_EXPRESSION)) return kl_fld(f, n, "argument");
  return (TSNode){{0}, NULL, NULL};
}

/* Whether the guards at this point bound variable id (or one derived from it). */
static bool kl_guarded_here(struct kl_frame *f, int id) {
  if (id < 0) return false;
  if (kl_bits_has(&f->guards, id)) return true;
  for (int g = 0; g < f->nvars && g < KL_FLOW_BITS; g++)
    if (kl_bits_has(&f->guards, g) && kl_bits_has(&f->env[g].deps, id)) return true;
  return false;
}

/* What the variables added up in index expression n (through `+`, `-`, parentheses and casts)
 * are computed from, into out. */
static void kl_summands(struct kl_frame *f, TSNode n, struct kl_bits *out, int depth) {
  n = kl_unparen(n);
  if (kl_node_null(n) || depth > 16) return;
  if (kl_node_is_kind(n, KL_KIND_CAST_EXPRESSION)) {
    kl_summands(f, kl_fld(f, n, "value"), out, depth + 1);
  } else if (kl_node_is_kind(n, KL_KIND_BINARY_EXPRESSION) &&
             (!strcmp(kl_op(f, n), "+") || !strcmp(kl_op(f, n), "-"))) {
    kl_summands(f, kl_fld(f, n, "left"), out, depth + 1);
    kl_summands(f, kl_fld(f, n, "right"), out, depth + 1);
  } else if (kl_node_is_kind(n, KL_KIND_IDENTIFIER)) {
    int id = kl_var_node(f, n);
    if (id >= 0) kl_bits_or(out, &f->env[id].deps);
  }
}

/* How well variable v names the index for atom c: a count of rows or elements (a step per
 * coordinate known when the kernel is compiled, the whole value affine) before a byte offset
 * (`offset0 = (r0 + row) * nb01 + ...`, a step only known at run time). */
static int kl_name_rank(struct kl_frame *f, int v, int c) {
  int64_t k;
  bool sym = true;
  uint32_t tag = KL_AFFINE_SYM_CT;
  const struct kl_affine *a = &f->env[v].form;
  if (kl_affine_part_coeff(*a, (uint16_t)c, &k, &sym) && sym)
    for (uint8_t t = 0; t < a->n; t++)
      if (a->t[t].atom == c) tag = a->t[t].sym;
  return (!sym ? 4 : (tag & KL_AFFINE_SYM_CT) ? 2 : 0) + (a->known ? 1 : 0);
}

/* The name to show for a missing bound on atom c brought in by variable m: m itself, or for a
 * pointer (`sl = scales + row * ld`) the best non-pointer name it is computed from that brings
 * c in (`row`), so the message names the index, not the buffer. */
static int kl_index_name(struct kl_frame *f, int m, int c) {
  if (f->env[m].root < 0) return m;
  int best = -1, brank = -1;
  for (int v = 0; v < f->nvars && v < KL_FLOW_BITS; v++) {
    if (v == m || !kl_bits_has(&f->env[m].deps, v) || f->env[v].root >= 0) continue;
    if (!kl_bits_has(&f->env[v].deps, c) && v != c) continue;
    /* A value with no affine part in c (a bool holding a test, a loaded value) is no index. */
    int64_t k;
    bool sym;
    if (v != c && !kl_affine_part_coeff(f->env[v].form, (uint16_t)c, &k, &sym)) continue;
    /* A coordinate only when nothing derived from one is there; then the best rank, the latest. */
    int rank = (f->vars[v].coord ? 0 : 8) + kl_name_rank(f, v, c);
    if (rank >= brank) best = v, brank = rank;
  }
  return best >= 0 ? best : m;
}

static int kl_holder_of(struct kl_frame *f, TSNode n);

/* How a finding names the index lacking a bound through variable v: v, or when v is a raw
 * coordinate added to other terms in the subscript (`mask[ic + lane]`), that sum. */
static const char *kl_index_label(struct kl_frame *f, TSNode node, int v) {
  if (!f->vars[v].coord || f->vars[v].proxy || !kl_node_is_kind(node, KL_KIND_SUBSCRIPT_EXPRESSION))
    return f->vars[v].name;
  TSNode ixs = kl_fld(f, node, "indices");
  if (kl_node_null(ixs)) return f->vars[v].name;
  TSNode ix = ts_node_named_child_count(ixs) > 0 ? kl_unparen(kl_node_named_child(ixs, 0)) : ixs;
  struct kl_bits in;
  memset(&in, 0, sizeof in);
  kl_mentions(f, ix, &in, 0);
  if (!kl_bits_has(&in, v) || !kl_node_is_kind(ix, KL_KIND_BINARY_EXPRESSION) ||
      (strcmp(kl_op(f, ix), "+") != 0 && strcmp(kl_op(f, ix), "-") != 0))
    return f->vars[v].name;
  const char *t = kl_text(f, ix);
  return strlen(t) <= 32 && !strchr(t, '\n') ? t : f->vars[v].name;
}

/* The element whose address pointer expression e takes, through casts and parentheses
 * (`(device float4*)&x[i]`, `reinterpret_cast<device float4*>(&x[i])`), or a null node: a store
 * through e writes that element, so the subscript is a store, not a read. */
static TSNode kl_stored_element(struct kl_frame *f, TSNode e) {
  for (int d = 0; d < 8; d++) {
    e = kl_unparen(e);
    if (kl_node_is_kind(e, KL_KIND_CAST_EXPRESSION)) {
      e = kl_fld(f, e, "value");
      continue;
    }
    if (kl_node_is_kind(e, KL_KIND_CALL_EXPRESSION)) {
      TSNode args = kl_fld(f, e, "arguments");
      const char *nm = kl_text(f, kl_fld(f, e, "function"));
      if (ts_node_named_child_count(args) != 1 ||
          (strncmp(nm, "reinterpret_cast", 16) && strncmp(nm, "static_cast", 11)))
        break;
      e = kl_node_named_child(args, 0);
      continue;
    }
    if (kl_node_is_kind(e, KL_KIND_POINTER_EXPRESSION) && !strcmp(kl_op(f, e), "&")) {
      TSNode x = kl_unparen(kl_fld(f, e, "argument"));
      if (kl_node_is_kind(x, KL_KIND_SUBSCRIPT_EXPRESSION)) return x;
    }
    break;
  }
  return (TSNode){{0}, NULL, NULL};
}

static void kl_record_access(struct kl_frame *f, TSNode node, const struct kl_val *ptr,
                             struct kl_val idx, bool store) {
  if (ptr->root < 0 || f->vars[ptr->root].as != KL_AS_DEVICE) return;
  if (!store && !kl_node_null(f->stored) && ts_node_eq(node, f->stored)) store = true;
  struct kl_flow *out = f->fx->out;
  struct kl_flow_access *acc = NULL;
  uint32_t start = ts_node_start_byte(node);
  /* A loop body is walked until its values settle; the last walk has the settled facts. */
  struct kl_slot *slot = kl_slot(f, start, true);
  if (slot->access != UINT32_MAX) {
    acc = &out->accesses[slot->access];
  } else {
    KL_VEC_PUSH(f->fx->a, out->accesses, out->naccesses, out->cap_accesses);
    slot->access = (uint32_t)out->naccesses;
    acc = &out->accesses[out->naccesses++];
  }
  memset(acc, 0, sizeof *acc);
  acc->node = node;
  acc->owner = f->fn;
  acc->call = f->call;
  acc->inst = f->fx->inst ? f->fx->inst->label : NULL;
  acc->ninsts = f->fx->ninsts;
  acc->store = store;
  acc->buffer = f->vars[ptr->root].decl;
  int pid = -1;
  if (kl_node_is_kind(node, KL_KIND_SUBSCRIPT_EXPRESSION)) {
    TSNode arg = kl_unparen(kl_fld(f, node, "argument"));
    pid = kl_node_is_kind(arg, KL_KIND_SUBSCRIPT_EXPRESSION) ? kl_holder_of(f, arg)
                                                             : kl_var_node(f, arg);
  }
  acc->elem_type = pid >= 0 && f->vars[pid].decl ? f->vars[pid].decl->type
                                                 : (acc->buffer ? acc->buffer->type : NULL);
  struct kl_val whole = kl_combine(f, *ptr, idx);
  whole.form = kl_affine_add(ptr->form, idx.form, 1);
  acc->form = whole.form;
  acc->thread_indexed = kl_thread_derived(f, &whole);
  if (!acc->thread_indexed || whole.clamped) return;
  /* Every thread-derived name in the index must be covered by a guard on it, on something it
   * derives from, or on something derived from it. */
  struct kl_bits named = idx.mention;
  if (pid >= 0 && pid != ptr->root) kl_bits_set(&named, pid);
  /* Each coordinate atom the index depends on must be bounded: by a guard on a name that
   * mentions it, or by a clamp. A guard on gid.x says nothing about gid.y. */
  struct kl_pending pend;
  memset(&pend.uncovered, 0, sizeof pend.uncovered);
  struct kl_bits sums; /* of the index expression, found when first needed */
  bool have_sums = false;
  pend.ndeps = 0;
  for (int m = 0; m < f->nvars && m < KL_FLOW_BITS; m++) {
    if (!kl_bits_has(&named, m)) continue;
    const struct kl_val *mv = &f->env[m];
    if (!kl_thread_derived(f, mv) || mv->clamped || kl_bits_has(&f->guards, m)) continue;
    for (int c = 0; c < f->nvars && c < KL_FLOW_BITS; c++) {
      if (!kl_bits_has(&f->atoms, c) || !kl_bits_has(&mv->deps, c)) continue;
      if (kl_bits_has(&pend.uncovered, c) || kl_guarded_here(f, c)) continue;
      kl_bits_set(&pend.uncovered, c);
      int e = 0;
      while (e < pend.ndeps && pend.dep_var[e] != m) e++;
      if (e == pend.ndeps) {
        if (pend.ndeps < KL_FLOW_PEND_NAMES) {
          memset(&pend.deps[pend.ndeps++], 0, sizeof pend.deps[0]);
          pend.dep_var[e] = m;
        } else {
          e = KL_FLOW_PEND_NAMES - 1;
        }
      }
      /* A name of the index expression also moves with the other terms it is added to
       * (`i2 + lid`), not with those it is multiplied by (`i2 * d + lid`). */
      kl_bits_or(&pend.deps[e], &mv->deps);
      if (kl_bits_has(&idx.mention, m)) {
        if (!have_sums) {
          memset(&sums, 0, sizeof sums);
          TSNode ixs = kl_node_is_kind(node, KL_KIND_SUBSCRIPT_EXPRESSION)
                           ? kl_fld(f, node, "indices")
                           : (TSNode){{0}, NULL, NULL};
          if (!kl_node_null(ixs) && ts_node_named_child_count(ixs) > 0)
            kl_summands(f, kl_node_named_child(ixs, 0), &sums, 0);
          have_sums = true;
        }
        kl_bits_or(&pend.deps[e], &sums);
      }
      pend.named[c] = kl_index_name(f, m, c);
      pend.from[c] = (uint8_t)e;
      acc->unguarded = true;
      char comp = f->vars[c].comp;
      acc->unguarded_dims |= (uint8_t)(comp == 'y' ? 2 : comp == 'z' ? 4 : 1);
      if (!acc->unguarded_var) acc->unguarded_var = kl_index_label(f, node, pend.named[c]);
    }
  }
  if (!acc->unguarded) return;
  /* Evidence (b) is settled at the end of the function, once every comparison is seen. */
  if (slot->pending >= 0) {
    f->pending[slot->pending] = pend;
    return;
  }
  KL_XVEC_PUSH(f->pending, f->npending, f->cap_pending);
  slot->pending = (int32_t)f->npending;
  f->pending[f->npending++] = pend;
}

/* Evidence needs the whole function: a comparison after the access still counts. */
static void kl_settle_evidence(struct kl_frame *f) {
  struct kl_flow *out = f->fx->out;
  for (size_t i = f->first_access; i < out->naccesses; i++) {
    struct kl_flow_access *acc = &out->accesses[i];
    if (acc->owner != f->fn || !acc->unguarded) continue;
    const struct kl_slot *slot = kl_slot(f, ts_node_start_byte(acc->node), false);
    if (!slot || slot->pending < 0) continue;
    const struct kl_pending *p = &f->pending[slot->pending];
    /* An index with no affine part at all (a loaded or data-dependent value) gets no evidence
     * from comparisons; a rounding dispatch or assume-rounded-grid can still report it. */
    if (!acc->form.known && !acc->form.partial) continue;
    for (int c = 0; c < f->nvars && c < KL_FLOW_BITS && !acc->evidence; c++) {
      if (!kl_bits_has(&p->uncovered, c)) continue;
      for (size_t k = 0; k < f->ncmps && !acc->evidence; k++) {
        if (!kl_cmp_bounds(&f->cmps[k].form, &acc->form, (uint16_t)c)) continue;
        /* A comparison with a loop counter in it (`i2 + i0 < n_t`) bounds what moves with the
         * counter: evidence only for an index whose thread-derived part moves with it too. */
        struct kl_bits need = f->cmps[k].counters;
        kl_bits_and(&need, &p->deps[p->from[c]]);
        if (memcmp(&need, &f->cmps[k].counters, sizeof need)) continue;
        if (f->cmps[k].any_counter && !kl_bits_meet(&p->deps[p->from[c]], &f->counters_seen))
          continue;
        if (f->cmps[k].fixed_counter && !kl_bits_meet(&p->deps[p->from[c]], &f->cmps[k].names))
          continue;
        if (kl_cmp_walk_end(&f->cmps[k], ts_node_start_byte(acc->node), &p->deps[p->from[c]]))
          continue;
        acc->evidence = true;
        acc->unguarded_var = kl_index_label(f, acc->node, p->named[c]);
        acc->evidence_node = f->cmps[k].node;
      }
    }
  }
}

static enum kl_scope kl_call_helper(struct kl_frame *f, const struct kl_function *callee,
                                    TSNode call, const struct kl_val *args, uint32_t nargs);
static TSNode kl_var_init(struct kl_frame *f, int id);

static void kl_assign(struct kl_frame *f, int id, struct kl_val v);

/* Run a lambda's body in the frame that defines it (it captures its names) under the control of
 * the point where it runs (call); its returns leave the lambda only. Its parameters shadow the
 * frame's names: called by name, each holds its argument (args); passed to a call that runs it
 * (opaque), what that call gives it is not seen: no finding rests on it. Returns the scope of
 * what it returns. */
static enum kl_scope kl_run_lambda(struct kl_frame *f, TSNode lam, TSNode call,
                                   const struct kl_val *args, uint32_t nargs, bool opaque) {
  TSNode body = kl_fld(f, lam, "body");
  if (kl_node_null(body) || f->lambdas >= 4) return KL_SCOPE_UNIFORM;
  TSNode decl = kl_fld(f, lam, "declarator");
  TSNode plist = kl_node_null(decl) ? decl : kl_fld(f, decl, "parameters");
  uint32_t np = kl_node_null(plist) ? 0 : ts_node_named_child_count(plist);
  int ids[8];
  uint32_t nids = 0;
  /* Passed to a call: a uniform value when all the call's other arguments are; else one that
   * may or may not vary, which no finding is drawn from (uniform, with no form). */
  struct kl_val fed = kl_val_uniform();
  TSNode argl = kl_fld(f, call, "arguments");
  for (uint32_t i = 0; opaque && i < nargs && i < 16; i++)
    if (args[i].scope != KL_SCOPE_UNIFORM &&
        !kl_node_is_kind(kl_unparen(kl_node_named_child(argl, i)), KL_KIND_LAMBDA_EXPRESSION))
      fed.form = kl_affine_unknown();
  for (uint32_t k = 0; k < np && nids < 8; k++) {
    TSNode p = kl_node_named_child(plist, k);
    if (!kl_is(p, "parameter_declaration") && !kl_is(p, "optional_parameter_declaration"))
      continue;
    TSNode name = kl_decl_name(kl_fld(f, p, "declarator"));
    if (kl_node_null(name)) continue;
    uint32_t key = ts_node_start_byte(name) + 1;
    const char *nm = kl_text(f, name);
    int id = -1;
    for (int i = 0; i < f->nvars && id < 0; i++)
      if (f->vars[i].lam_param == key) id = i;
    if (id < 0) {
      id = kl_var_new(f, nm, NULL);
      f->vars[id].lam_param = key;
    }
    f->vars[id].len = strlen(nm);
    kl_bits_clear(&f->guards, id);
    struct kl_val v = fed;
    if (!opaque) v = k < nargs && k < 16 ? args[k] : kl_val_uniform();
    kl_assign(f, id, v);
    ids[nids++] = id;
  }
  enum kl_scope ret0 = f->ret_scope, res0 = f->result;
  TSNode retc0 = f->ret_cause;
  bool dead0 = f->dead;
  f->result = KL_SCOPE_UNIFORM;
  f->lambdas++;
  kl_exec(f, body);
  f->lambdas--;
  enum kl_scope res = f->result;
  f->ret_scope = ret0;
  f->ret_cause = retc0;
  f->dead = dead0;
  f->result = res0;
  for (uint32_t k = 0; k < nids; k++) f->vars[ids[k]].len = 0; /* out of scope */
  return res;
}

/* Whether min or clamp of argv (n arguments) clamps a thread position itself below a size:
 * an argument of positive coefficients and nothing added, the bound (the other of min's, the
 * third of clamp's) uniform and not a constant (`min(gid, n - 1)`; not `min(BM, M - row)`). */
static bool kl_clamps_position(const struct kl_val *argv, uint32_t n, bool clamp) {
  if (n != (clamp ? 3u : 2u)) return false;
  for (uint32_t k = 0; k < (clamp ? 1u : 2u); k++) {
    const struct kl_affine *v = &argv[k].form;
    const struct kl_val *b = &argv[clamp ? 2 : 1 - k];
    int64_t c;
    bool ok = v->known && v->n && !v->c0_symbolic && v->c0 <= 0 &&
              b->scope == KL_SCOPE_UNIFORM && !kl_form_const(b->form, &c);
    for (uint8_t i = 0; ok && i < v->n; i++) ok = !v->t[i].symbolic && v->t[i].k > 0;
    if (ok) return true;
  }
  return false;
}

static struct kl_val kl_eval_call(struct kl_frame *f, TSNode n) {
  TSNode fnode = kl_fld(f, n, "function");
  TSNode args = kl_fld(f, n, "arguments");
  uint32_t nargs;
  const TSNode *kids = kl_kids(f, args, &nargs);
  struct kl_val argv[16];
  struct kl_val r = kl_val_uniform();
  bool any_uniform_arg = false;
  for (uint32_t i = 0; i < nargs; i++) {
    struct kl_val v = kl_eval(f, kids[i]);
    if (i < 16) argv[i] = v;
    r = i == 0 ? v : kl_combine(f, r, v);
    if (v.scope == KL_SCOPE_UNIFORM) any_uniform_arg = true;
  }
  r.root = -1;
  TSNode name = kl_model_name_of(fnode);
  if (kl_node_null(name)) name = fnode; /* a broken tree: keep the whole callee's text */
  const char *nm = kl_text(f, name);
  const struct kl_msl_fn *bf = kl_msl_fn(nm);
  if (bf) {
    if (bf->kind == KL_FN_BARRIER) {
      return kl_val_uniform();
    }
    /* A SIMD reduction is the same on every lane of the group, but no wider than its input. */
    if (bf->result_scope < r.scope) r.scope = bf->result_scope;
    if (bf->result_scope == KL_SCOPE_THREAD) r.scope = kl_max(r.scope, KL_SCOPE_SIMDGROUP);
    r.form = kl_opaque(r.scope);
    return r;
  }
  if ((!strcmp(nm, "min") || !strcmp(nm, "max")) && nargs == 2) {
    int64_t x, y;
    if (kl_form_const(argv[0].form, &x) && kl_form_const(argv[1].form, &y)) {
      r.form = kl_affine_const(nm[1] == 'i' ? (x < y ? x : y) : (x > y ? x : y));
      return r;
    }
  }
  if (!strcmp(nm, "min") || !strcmp(nm, "clamp")) {
    r.form = kl_opaque(r.scope);
    if (any_uniform_arg && kl_thread_derived(f, &r)) r.clamped = true;
    if (r.clamped && kl_clamps_position(argv, nargs, nm[0] == 'c')) {
      struct kl_flow *o = f->fx->out;
      if (!o->nclamps || o->clamps[o->nclamps - 1] != f->fx->kernel) {
        KL_VEC_PUSH(f->fx->a, o->clamps, o->nclamps, o->cap_clamps);
        o->clamps[o->nclamps++] = f->fx->kernel;
      }
    }
    return r;
  }
  int64_t folded;
  if (kl_fold_call(f, n, &folded, 0)) {
    r = kl_val_uniform();
    r.form = kl_affine_const(folded);
    return r;
  }
  /* A function that is not a built-in may change what it is given by reference: a constant
   * passed to it is a constant no more. */
  for (uint32_t i = 0; i < nargs; i++) {
    TSNode arg = kl_unparen(kids[i]);
    if (kl_node_is_kind(arg, KL_KIND_POINTER_EXPRESSION))
      arg = kl_unparen(kl_fld(f, arg, "argument"));
    int id = kl_node_is_kind(arg, KL_KIND_IDENTIFIER) ? kl_var_node(f, arg) : -1;
    int64_t k;
    if (id >= 0 && kl_form_const(f->env[id].form, &k))
      kl_env_w(f, id)->form = kl_opaque(f->env[id].scope);
  }
  /* A lambda passed to a call (MLX's `dispatch_bool(c, [&](auto) {...})`) runs where it is
   * passed; one held in a local (`auto step = [&]() {...}; step();`) where it is called. */
  for (uint32_t i = 0; i < nargs; i++) {
    TSNode arg = kl_unparen(kids[i]);
    if (kl_node_is_kind(arg, KL_KIND_LAMBDA_EXPRESSION))
      kl_run_lambda(f, arg, n, argv, nargs, true);
  }
  TSNode fn_un = kl_unparen(fnode);
  if (kl_node_is_kind(fn_un, KL_KIND_IDENTIFIER)) {
    int id = kl_var_node(f, fn_un);
    TSNode lam = id >= 0 ? kl_unparen(kl_var_init(f, id)) : (TSNode){{0}, NULL, NULL};
    if (!kl_node_null(lam) && kl_node_is_kind(lam, KL_KIND_LAMBDA_EXPRESSION)) {
      r.scope = kl_max(r.scope, kl_run_lambda(f, lam, n, argv, nargs, false));
      r.form = kl_opaque(r.scope);
      return r;
    }
  }
  const struct kl_function *callee = kl_callee(f, fnode);
  /* `obj.method(...)`: the member of obj's struct. */
  if (!callee && kl_node_is_kind(fn_un, KL_KIND_FIELD_EXPRESSION)) {
    TSNode obj = kl_unparen(kl_fld(f, fn_un, "argument")), fld = kl_fld(f, fn_un, "field");
    int id = kl_node_is_kind(obj, KL_KIND_IDENTIFIER) ? kl_var_node(f, obj) : -1;
    if (id >= 0 && f->vars[id].decl && !kl_node_null(fld)) {
      uint32_t s0 = ts_node_start_byte(fld), s1 = ts_node_end_byte(fld);
      callee =
          kl_model_method(f->fx->m, f->fn, f->vars[id].decl->type, f->fx->u->buf + s0, s1 - s0);
    }
  }
  if (callee && callee != f->fn && !kl_node_null(callee->body)) {
    enum kl_scope s = kl_call_helper(f, callee, n, argv, nargs < 16 ? nargs : 16);
    r.scope = kl_max(r.scope, s);
    r.form = kl_opaque(r.scope);
    r.clamped = false;
    return r;
  }
  /* Type conversions keep the index algebra; other calls only keep uniformity. */
  bool conversion = kl_is(fnode, "primitive_type") ||
                    kl_node_is_kind(fnode, KL_KIND_TYPE_IDENTIFIER) || kl_msl_type(nm) != NULL ||
                    !strcmp(nm, "as_type") || !strcmp(nm, "static_cast");
  if (conversion && nargs == 1) return r;
  r.form = kl_opaque(r.scope);
  return r;
}

/* The array of pointers subscript n picks from (`rows` of `rows[r]`), or -1. */
static int kl_holder_of(struct kl_frame *f, TSNode n) {
  if (!kl_node_is_kind(n, KL_KIND_SUBSCRIPT_EXPRESSION)) return -1;
  TSNode a = kl_unparen(kl_fld(f, n, "argument"));
  int id = kl_node_is_kind(a, KL_KIND_IDENTIFIER) ? kl_var_node(f, a) : -1;
  return id >= 0 && f->vars[id].holder ? id : -1;
}

static struct kl_val kl_eval_subscript(struct kl_frame *f, TSNode n, bool store) {
  int holder = kl_holder_of(f, n);
  if (holder >= 0) {
    /* One of the pointers stored: their common buffer and offset, whichever element. */
    struct kl_val e = f->env[holder];
    TSNode hi = kl_fld(f, n, "indices");
    if (!kl_node_null(hi) && ts_node_named_child_count(hi) > 0) {
      struct kl_val iv = kl_eval(f, kl_node_named_child(hi, 0));
      e.scope = kl_max(e.scope, iv.scope);
      kl_bits_or(&e.deps, &iv.deps);
    }
    return e;
  }
  struct kl_val base = kl_eval(f, kl_fld(f, n, "argument"));
  TSNode idxs = kl_fld(f, n, "indices");
  struct kl_val idx = kl_val_uniform();
  idx.form = kl_affine_const(0);
  if (!kl_node_null(idxs) && ts_node_named_child_count(idxs) > 0) {
    idx = kl_eval(f, kl_node_named_child(idxs, 0));
  } else if (!kl_node_null(idxs)) {
    idx = kl_eval(f, idxs);
  }
  kl_record_access(f, n, &base, idx, store);
  struct kl_val r = kl_combine(f, base, idx);
  if (base.root >= 0) {
    enum kl_addrspace as = f->vars[base.root].as;
    if (as == KL_AS_THREADGROUP && r.scope < KL_SCOPE_THREADGROUP) r.scope = KL_SCOPE_THREADGROUP;
  }
  r.form = kl_opaque(r.scope);
  r.clamped = false;
  if (base.root >= 0 && f->vars[base.root].as != KL_AS_THREAD &&
      f->vars[base.root].as != KL_AS_NONE)
    r.sized = base.sized || f->vars[base.root].as == KL_AS_CONSTANT ||
              f->vars[base.root].as == KL_AS_DEVICE;
  r.root = -1;
  return r;
}

static void kl_assign(struct kl_frame *f, int id, struct kl_val v) {
  if (id < 0) return;
  f->vars[id].cond = (TSNode){{0}, NULL, NULL};
  f->vars[id].walk = (TSNode){{0}, NULL, NULL};
  f->vars[id].sentinel = false;
  struct kl_val nv = v;
  nv.scope = kl_max(v.scope, kl_frame_ctrl(f));
  if (nv.scope != KL_SCOPE_UNIFORM && !kl_affine_has_atoms(nv.form) && nv.form.known &&
      !kl_thread_derived(f, &nv))
    nv.form = kl_affine_unknown();
  kl_bits_set(&nv.deps, id);
  memset(&nv.mention, 0, sizeof nv.mention);
  /* A coordinate stays an atom of its own, whatever it is reassigned to. */
  if (f->vars[id].coord) nv.form = kl_affine_unknown();
  *kl_env_w(f, id) = nv;
}

/* The variable an lvalue names: x, x.y (when tracked) or the base of x.y. */
static int kl_lvalue_var(struct kl_frame *f, TSNode n) {
  n = kl_unparen(n);
  if (kl_node_is_kind(n, KL_KIND_IDENTIFIER)) return kl_var_node(f, n);
  if (kl_node_is_kind(n, KL_KIND_FIELD_EXPRESSION)) {
    int id = kl_var_node(f, n);
    if (id >= 0) return id;
    TSNode base = kl_unparen(kl_fld(f, n, "argument"));
    int bid = kl_lvalue_var(f, base);
    /* A member of a local struct or vector (`s.sum`, `acc.x`) gets a scope of its own; members
     * reached through pointers are left to their base. */
    if (bid >= 0 && kl_node_is_kind(base, KL_KIND_IDENTIFIER) && !strcmp(kl_op(f, n), ".") &&
        f->env[bid].root < 0 && !f->vars[bid].coord) {
      id = kl_var_add(f, kl_text(f, n), NULL);
      f->vars[id].parent = bid;
      *kl_env_w(f, id) = f->env[bid];
      return id;
    }
    return bid;
  }
  return -1;
}

/* After a member is assigned, the whole struct is at least as varying as the member. */
static void kl_assign_parent(struct kl_frame *f, int id) {
  int p = id >= 0 ? f->vars[id].parent : -1;
  if (p < 0 || f->vars[id].coord) return;
  struct kl_val *pv = kl_env_w(f, p);
  pv->scope = kl_max(pv->scope, f->env[id].scope);
  kl_bits_or(&pv->deps, &f->env[id].deps);
  if (pv->scope != KL_SCOPE_UNIFORM) pv->form = kl_affine_unknown();
}

/* The form of `a op b` for the operators the algebra follows (+, -, *, << by a constant);
 * false for any other operator. */
static bool kl_form_op(const char *op, struct kl_affine a, struct kl_affine b,
                       struct kl_affine *out) {
  if (!strcmp(op, "+") || !strcmp(op, "-")) {
    *out = kl_affine_add(a, b, op[0] == '-' ? -1 : 1);
    return true;
  }
  if (!strcmp(op, "*")) {
    *out = kl_affine_mul(a, b);
    return true;
  }
  if (!strcmp(op, "<<") && kl_affine_is_uniform(b) && !b.c0_symbolic && b.c0 >= 0 && b.c0 < 32) {
    *out = kl_affine_mul(a, kl_affine_const((int64_t)1 << b.c0));
    return true;
  }
  return false;
}

static struct kl_val kl_eval_assign(struct kl_frame *f, TSNode n) {
  TSNode l = kl_unparen(kl_fld(f, n, "left"));
  const char *op = kl_op(f, n);
  struct kl_val rv = kl_eval(f, kl_fld(f, n, "right"));
  int holder = kl_holder_of(f, l);
  if (holder >= 0) {
    kl_eval_subscript(f, l, true);
    /* The pointers stored must agree on their buffer, and their offsets merge as at a join. */
    struct kl_val nv = rv;
    if (nv.root < 0) nv.root = -1; /* not a pointer into a buffer: the array no longer says */
    kl_join_into(&nv, &f->env[holder]);
    kl_bits_set(&nv.deps, holder);
    nv.scope = kl_max(nv.scope, kl_frame_ctrl(f));
    memset(&nv.mention, 0, sizeof nv.mention);
    *kl_env_w(f, holder) = nv;
    return rv;
  }
  if (kl_node_is_kind(l, KL_KIND_SUBSCRIPT_EXPRESSION)) {
    kl_eval_subscript(f, l, true);
    /* Stores into thread-local arrays (`int offs[4]`, also nested ones) carry the value's scope
     * into the array. A declared array is its own root, which the merge must keep. */
    int sarr = kl_array_var(f, l);
    int arr = kl_lvalue_var(f, kl_fld(f, l, "argument"));
    if (arr < 0) arr = sarr;
    /* A store through a pointer an array of pointers holds (`rows[r][c] = v`) writes memory,
     * not the array: the pointers keep their value. */
    if ((arr >= 0 && f->vars[arr].holder) || (sarr >= 0 && f->vars[sarr].holder)) return rv;
    TSNode prev = sarr >= 0 && f->vars[sarr].sentinel ? f->vars[sarr].cond
                                                      : (TSNode){{0}, NULL, NULL};
    if (arr >= 0 && (f->env[arr].root < 0 || f->vars[arr].as == KL_AS_THREAD)) {
      int root = f->env[arr].root;
      struct kl_val merged = kl_combine(f, f->env[arr], rv);
      kl_assign(f, arr, merged);
      kl_env_w(f, arr)->root = root;
    }
    /* An element stored `valid ? x : -1` makes the array a sentinel until a store that is not. */
    if (sarr >= 0 && (f->vars[sarr].as == KL_AS_THREAD || f->vars[sarr].as == KL_AS_NONE)) {
      f->vars[sarr].sentinel = false;
      f->vars[sarr].cond = (TSNode){{0}, NULL, NULL};
      if (!strcmp(op, "=")) kl_note_sentinel(f, sarr, kl_fld(f, n, "right"));
      /* Elements stored under different conditions: a test of one says nothing of the other. */
      if (!kl_node_null(prev) && f->vars[sarr].sentinel && !ts_node_eq(prev, f->vars[sarr].cond))
        f->vars[sarr].sentinel = false;
    }
    return rv;
  }
  if (kl_node_is_kind(l, KL_KIND_POINTER_EXPRESSION)) {
    TSNode held = f->stored;
    f->stored = kl_stored_element(f, kl_fld(f, l, "argument"));
    struct kl_val p = kl_eval(f, kl_fld(f, l, "argument"));
    f->stored = held;
    struct kl_val z = kl_val_uniform();
    z.form = kl_affine_const(0);
    kl_record_access(f, l, &p, z, true);
    return rv;
  }
  int id = kl_lvalue_var(f, l);
  if (id < 0) return rv;
  struct kl_val nv = rv;
  if (strcmp(op, "=") != 0) {
    struct kl_val cur = f->env[id];
    nv = kl_combine(f, cur, rv);
    /* `x op= e` is `x = x op e`: the operator without its `=`. */
    char bop[4] = "";
    size_t ol = strlen(op);
    if (ol >= 2 && ol <= sizeof bop) memcpy(bop, op, ol - 1);
    if (!kl_form_op(bop, cur.form, rv.form, &nv.form)) nv.form = kl_opaque(nv.scope);
    if ((!strcmp(op, "+=") || !strcmp(op, "-=")) && cur.root >= 0) nv.root = cur.root;
    if (!strcmp(op, "+=") || !strcmp(op, "-=") || !strcmp(op, "*=")) nv.clamped = false;
  }
  kl_assign(f, id, nv);
  if (!strcmp(op, "=")) kl_note_sentinel(f, id, kl_fld(f, n, "right"));
  kl_assign_parent(f, id);
  return f->env[id];
}

static struct kl_val kl_eval_binary(struct kl_frame *f, TSNode n) {
  const char *op = kl_op(f, n);
  TSNode ln = kl_fld(f, n, "left"), rn = kl_fld(f, n, "right");
  struct kl_val l = kl_eval(f, ln);
  struct kl_val r;
  /* The right side of && / || runs only where the left side allows: it is guarded by it. */
  bool and_op = !strcmp(op, "&&"), or_op = !strcmp(op, "||");
  int64_t lk, rk, vk;
  if ((and_op || or_op) && kl_form_const(l.form, &lk) && (lk != 0) == or_op) {
    /* The specialisation decides: the right side never runs, and its comparisons are none. */
    l.form = kl_affine_const(or_op);
    return l;
  }
  if (and_op || or_op) {
    struct kl_bits saved = f->guards;
    kl_bounds(f, ln, and_op, &f->guards, 0);
    r = kl_eval(f, rn);
    f->guards = saved;
  } else {
    r = kl_eval(f, rn);
  }
  struct kl_val v = kl_combine(f, l, r);
  bool ct = kl_form_ct(l.form) && kl_form_ct(r.form);
  if (kl_form_op(op, l.form, r.form, &v.form)) {
    if (ct && v.form.known && !v.form.n && v.form.c0_symbolic && !v.form.sym)
      v.form.sym = KL_AFFINE_SYM_CT;
    /* Pointer arithmetic keeps pointing into the same buffer. */
    if (l.root >= 0 && r.root < 0 && (op[0] == '+' || op[0] == '-') && op[1] == '\0')
      v.root = l.root;
    if (r.root >= 0 && l.root < 0 && !strcmp(op, "+")) v.root = r.root;
    return v;
  }
  enum kl_cop cop;
  /* A pointer's form is its offset in its own buffer: two pointers into different buffers
   * (`mask != q`, testing for a bound optional input) are not compared by their offsets. */
  bool other_buffers = (l.root >= 0 || r.root >= 0) && l.root != r.root;
  if (!other_buffers && kl_form_const(l.form, &lk) && kl_form_const(r.form, &rk) &&
      kl_cop_of(op, &cop) && kl_consteval_apply(cop, lk, rk, &vk)) {
    v.form = kl_affine_const(vk);
    return v;
  }
  if (!strcmp(op, "<") || !strcmp(op, "<=") || !strcmp(op, ">") || !strcmp(op, ">="))
    kl_note_compare(f, n, &l, &r);
  v.form = kl_opaque(v.scope);
  if (ct) v.form = kl_affine_symbol_id(KL_AFFINE_SYM_CT);
  if (!strcmp(op, "/") || !strcmp(op, "%") || !strcmp(op, ">>") || !strcmp(op, "&")) {
    /* A quotient or remainder of a bounded value is still bounded. */
    v.clamped = l.clamped;
  } else {
    v.clamped = false;
  }
  v.sized = v.sized && v.scope == KL_SCOPE_UNIFORM;
  return v;
}

/* A uniform unit-strides name (`nb0`, `args.nb00`) read at n: one element's size. */
static struct kl_val kl_unit_val(struct kl_frame *f, TSNode n, struct kl_val v) {
  if (!f->fx->settings || !f->fx->settings->nunit_strides || v.scope != KL_SCOPE_UNIFORM ||
      !v.form.known || v.form.n || !v.form.c0_symbolic)
    return v;
  uint32_t st = ts_node_start_byte(n), en = ts_node_end_byte(n);
  if (kl_unit_stride(f, f->fx->u->buf + st, en - st))
    v.form = kl_affine_symbol_id(KL_FLOW_SYM_UNIT);
  return v;
}

static struct kl_val kl_eval(struct kl_frame *f, TSNode n) {
  if (kl_node_null(n)) return kl_val_uniform();
  enum kl_kind ty = kl_node_kind(n);
  if (ty == KL_KIND_NUMBER_LITERAL) {
    struct kl_val v = kl_val_uniform();
    char *end = NULL;
    const char *txt = kl_text(f, n);
    long long c = strtoll(txt, &end, 0);
    if (end && (*end == '\0' || strspn(end, "uUlL") == strlen(end))) v.form = kl_affine_const(c);
    return v;
  }
  if (ty == KL_KIND_IDENTIFIER) {
    int id = kl_var_node(f, n);
    if (id < 0) {
      const struct kl_msl_coord *c = kl_msl_coord(kl_text(f, n));
      if (c) {
        /* MLX bodies name thread coordinates without declaring them. */
        id = kl_var_add(f, kl_text(f, n), NULL);
        kl_frame_coord(f, id, c, "uint");
      } else {
        struct kl_val v = kl_val_uniform();
        int64_t k;
        uint32_t st = ts_node_start_byte(n), en = ts_node_end_byte(n);
        /* A name that is no variable: a template parameter or macro, fixed at compile time. */
        if (kl_fold_global(f, f->fx->u->buf + st, en - st, &k))
          v.form = kl_affine_const(k);
        else
          v.form = kl_affine_symbol_id(KL_AFFINE_SYM_CT);
        return v;
      }
    }
    struct kl_val v = f->env[id];
    memset(&v.mention, 0, sizeof v.mention);
    kl_bits_set(&v.mention, id);
    return kl_unit_val(f, n, v);
  }
  if (ty == KL_KIND_FIELD_EXPRESSION) {
    int id = kl_var_node(f, n);
    if (id >= 0) {
      struct kl_val v = f->env[id];
      memset(&v.mention, 0, sizeof v.mention);
      kl_bits_set(&v.mention, id);
      return kl_unit_val(f, n, v);
    }
    struct kl_val v = kl_eval(f, kl_fld(f, n, "argument"));
    v.form = kl_opaque(v.scope);
    v.root = -1;
    return kl_unit_val(f, n, v);
  }
  if (ty == KL_KIND_PARENTHESIZED_EXPRESSION || ty == KL_KIND_CONDITION_CLAUSE) {
    struct kl_val v = kl_val_uniform();
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(n, i);
      if (kl_node_is_kind(c, KL_KIND_DECLARATION)) {
        kl_exec(f, c);
        continue;
      }
      v = kl_eval(f, c);
    }
    return v;
  }
  if (ty == KL_KIND_BINARY_EXPRESSION) return kl_eval_binary(f, n);
  if (ty == KL_KIND_ASSIGNMENT_EXPRESSION) return kl_eval_assign(f, n);
  if (ty == KL_KIND_UPDATE_EXPRESSION) {
    TSNode arg = kl_fld(f, n, "argument");
    if (kl_node_is_kind(kl_unparen(arg), KL_KIND_SUBSCRIPT_EXPRESSION))
      return kl_eval_subscript(f, kl_unparen(arg), true);
    int id = kl_lvalue_var(f, arg);
    struct kl_val v = kl_eval(f, arg);
    if (id >= 0) {
      struct kl_val nv = f->env[id];
      nv.form = kl_affine_add(nv.form, kl_affine_const(strstr(kl_op(f, n), "-") ? -1 : 1), 1);
      nv.clamped = false;
      kl_assign(f, id, nv);
    }
    return v;
  }
  if (ty == KL_KIND_SUBSCRIPT_EXPRESSION) return kl_eval_subscript(f, n, false);
  if (ty == KL_KIND_CALL_EXPRESSION) return kl_eval_call(f, n);
  if (ty == KL_KIND_CONDITIONAL_EXPRESSION) {
    TSNode c = kl_fld(f, n, "condition");
    struct kl_val cv = kl_eval(f, c);
    int64_t ck;
    if (kl_form_const(cv.form, &ck))
      return kl_eval(f, kl_fld(f, n, ck ? "consequence" : "alternative"));
    struct kl_bits saved = f->guards;
    kl_bounds(f, c, true, &f->guards, 0);
    struct kl_val a = kl_eval(f, kl_fld(f, n, "consequence"));
    f->guards = saved;
    kl_bounds(f, c, false, &f->guards, 0);
    struct kl_val b = kl_eval(f, kl_fld(f, n, "alternative"));
    f->guards = saved;
    struct kl_val v = kl_combine(f, kl_combine(f, cv, a), b);
    v.form = kl_opaque(v.scope);
    v.root = a.root == b.root ? a.root : -1;
    return v;
  }
  if (ty == KL_KIND_CAST_EXPRESSION) return kl_eval(f, kl_fld(f, n, "value"));
  if (ty == KL_KIND_POINTER_EXPRESSION) {
    struct kl_val p = kl_eval(f, kl_fld(f, n, "argument"));
    if (!strcmp(kl_op(f, n), "*")) {
      struct kl_val z = kl_val_uniform();
      z.form = kl_affine_const(0);
      kl_record_access(f, n, &p, z, false);
      struct kl_val r = p;
      r.root = -1;
      r.form = kl_opaque(r.scope);
      return r;
    }
    return p;
  }
  if (ty == KL_KIND_UNARY_EXPRESSION) {
    struct kl_val v = kl_eval(f, kl_fld(f, n, "argument"));
    const char *op = kl_op(f, n);
    int64_t k;
    bool lnot = !strcmp(op, "!") || !strcmp(op, "not");
    if ((lnot || !strcmp(op, "~")) && kl_form_const(v.form, &k) &&
        kl_consteval_apply(lnot ? KL_COP_NOT : KL_COP_BITNOT, k, 0, &k)) {
      v.form = kl_affine_const(k);
      v.root = -1;
      return v;
    }
    if (!strcmp(op, "-"))
      v.form = kl_affine_mul(v.form, kl_affine_const(-1));
    else if (strcmp(op, "+"))
      v.form = kl_opaque(v.scope);
    v.root = -1;
    return v;
  }
  if (ty == KL_KIND_COMMA_EXPRESSION) {
    kl_eval(f, kl_fld(f, n, "left"));
    return kl_eval(f, kl_fld(f, n, "right"));
  }
  if (ty == KL_KIND_TRUE || ty == KL_KIND_FALSE) {
    struct kl_val v = kl_val_uniform();
    v.form = kl_affine_const(ty == KL_KIND_TRUE);
    return v;
  }
  if (ty == KL_KIND_LAMBDA_EXPRESSION || ty == KL_KIND_STRING_LITERAL ||
      ty == KL_KIND_CHAR_LITERAL || ty == KL_KIND_SIZEOF_EXPRESSION ||
      ty == KL_KIND_QUALIFIED_IDENTIFIER || ty == KL_KIND_NULLPTR)
    return kl_val_uniform();
  /* Anything else (initializer lists, compound literals, ...): the join of its parts. */
  struct kl_val v = kl_val_uniform();
  uint32_t k;
  const TSNode *kids = kl_kids(f, n, &k);
  for (uint32_t i = 0; i < k; i++) {
    struct kl_val c = kl_eval(f, kids[i]);
    v = i == 0 ? c : kl_combine(f, v, c);
  }
  if (k > 1 || !v.form.known) v.form = kl_opaque(v.scope);
  v.root = -1;
  return v;
}

/* The declared name inside a declarator (through pointers, arrays, references, attributes). */
static TSNode kl_decl_name(TSNode d) {
  for (int guard = 0; guard < 32 && !kl_node_null(d); guard++) {
    if (kl_node_is_kind(d, KL_KIND_IDENTIFIER) || kl_node_is_kind(d, KL_KIND_FIELD_IDENTIFIER))
      return d;
    TSNode inner = kl_field(d, "declarator");
    if (kl_node_null(inner)) {
      if (ts_node_named_child_count(d) == 0) break;
      inner = kl_node_named_child(d, 0);
    }
    d = inner;
  }
  TSNode none = {{0}, NULL, NULL};
  return none;
}

static void kl_exec_declaration(struct kl_frame *f, TSNode n) {
  uint32_t k;
  const TSNode *kids = kl_kids(f, n, &k);
  for (uint32_t i = 0; i < k; i++) {
    TSNode d = kids[i];
    if (kl_node_null(d)) continue;
    bool init = kl_node_is_kind(d, KL_KIND_INIT_DECLARATOR);
    if (!init && !kl_node_is_kind(d, KL_KIND_IDENTIFIER) &&
        !kl_node_is_kind(d, KL_KIND_ARRAY_DECLARATOR) &&
        !kl_node_is_kind(d, KL_KIND_POINTER_DECLARATOR) &&
        !kl_node_is_kind(d, KL_KIND_REFERENCE_DECLARATOR) &&
        !kl_node_is_kind(d, KL_KIND_ATTRIBUTED_DECLARATOR))
      continue;
    TSNode name = kl_decl_name(init ? kl_fld(f, d, "declarator") : d);
    if (kl_node_null(name)) continue;
    int id = kl_var_node(f, name);
    if (id < 0) id = kl_var_add(f, kl_text(f, name), NULL);
    const struct kl_var *decl = f->vars[id].decl;
    bool array = decl && decl->array_dims;
    if (array && decl->is_pointer) {
      /* Each element is a pointer into some buffer: the array takes the value of the pointers
       * stored in it (kl_eval_assign), so `rows[r][c]` reaches the buffer with their offsets. */
      f->vars[id].holder = true;
      f->vars[id].as = KL_AS_THREAD;
      struct kl_val v = kl_val_uniform();
      v.root = KL_ROOT_EMPTY;
      v.scope = kl_frame_ctrl(f);
      kl_bits_set(&v.deps, id);
      *kl_env_w(f, id) = v;
      if (init) kl_eval(f, kl_fld(f, d, "value"));
      continue;
    }
    if (array &&
        (decl->as == KL_AS_THREADGROUP || decl->as == KL_AS_THREAD || decl->as == KL_AS_NONE)) {
      struct kl_val v = kl_val_uniform();
      v.root = id;
      if (f->vars[id].as == KL_AS_NONE) f->vars[id].as = KL_AS_THREAD;
      if (init) {
        struct kl_val iv = kl_eval(f, kl_fld(f, d, "value"));
        v.scope = iv.scope;
      }
      v.scope = kl_max(v.scope, kl_frame_ctrl(f));
      kl_bits_set(&v.deps, id);
      *kl_env_w(f, id) = v;
      continue;
    }
    struct kl_val v = kl_val_uniform();
    TSNode val = init ? kl_fld(f, d, "value") : (TSNode){{0}, NULL, NULL};
    if (init) v = kl_eval(f, val);
    kl_assign(f, id, v);
    kl_note_sentinel(f, id, val);
    /* `const bool full = col + 4 <= n;`, tested later: the test is the comparison's. */
    TSNode cv = kl_unparen(val);
    if (!kl_node_null(cv) && decl && decl->type && !strcmp(decl->type, "bool") &&
        (kl_node_is_kind(cv, KL_KIND_BINARY_EXPRESSION) ||
         kl_node_is_kind(cv, KL_KIND_UNARY_EXPRESSION)))
      f->vars[id].cond = cv;
  }
}

static bool kl_exits(TSNode n, int depth) {
  if (kl_node_null(n) || depth > 64) return false;
  if (kl_node_is_kind(n, KL_KIND_RETURN_STATEMENT) || kl_node_is_kind(n, KL_KIND_BREAK_STATEMENT) ||
      kl_node_is_kind(n, KL_KIND_CONTINUE_STATEMENT))
    return true;
  if (kl_node_is_kind(n, KL_KIND_COMPOUND_STATEMENT)) {
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = k; i-- > 0;) {
      TSNode c = kl_node_named_child(n, i);
      if (kl_node_is_kind(c, KL_KIND_COMMENT)) continue;
      return kl_exits(c, depth + 1);
    }
    return false;
  }
  if (kl_node_is_kind(n, KL_KIND_IF_STATEMENT)) {
    TSNode alt = kl_field(n, "alternative");
    if (kl_node_null(alt)) return false;
    if (kl_node_is_kind(alt, KL_KIND_ELSE_CLAUSE) && ts_node_named_child_count(alt) > 0)
      alt = kl_node_named_child(alt, 0);
    return kl_exits(kl_field(n, "consequence"), depth + 1) && kl_exits(alt, depth + 1);
  }
  return false;
}

/* Whether two forms are the same in every field a reader may look at (their padding and the
 * terms past n are never set). */
static bool kl_form_same(const struct kl_affine *a, const struct kl_affine *b) {
  if (a->known != b->known || a->partial != b->partial || a->c0_symbolic != b->c0_symbolic ||
      a->sym != b->sym || a->c0 != b->c0 || a->n != b->n)
    return false;
  for (uint8_t i = 0; i < a->n && i < KL_AFFINE_MAX_TERMS; i++)
    if (a->t[i].atom != b->t[i].atom || a->t[i].symbolic != b->t[i].symbolic ||
        a->t[i].sym != b->t[i].sym || a->t[i].k != b->t[i].k)
      return false;
  return true;
}

/* kl_join_noop of a value with itself: whether its form survives a join. A symbolic constant
 * part is joined to 0 (kl_affine_join), so only a 0 is kept as it is. */
static bool kl_join_self_noop(const struct kl_val *d) {
  const struct kl_affine *f = &d->form;
  return (f->known && !f->partial && (!f->c0_symbolic || !f->c0)) ||
         (!f->known && !f->partial && !f->c0_symbolic && !f->sym && !f->c0 && !f->n);
}

/* Whether joining o into d leaves d as it is: most variables leave a branch or a pass as they
 * entered it, and a value joined with itself is itself when its form is known and whole (with a
 * symbolic constant part of 0), or the plain unknown (kl_affine_unknown, all zero). */
static bool kl_join_noop(const struct kl_val *d, const struct kl_val *o) {
  if (d->scope != o->scope || d->clamped != o->clamped || d->sized != o->sized ||
      d->root != o->root || memcmp(&d->deps, &o->deps, sizeof d->deps) ||
      memcmp(&d->mention, &o->mention, sizeof d->mention) || !kl_form_same(&d->form, &o->form))
    return false;
  return kl_join_self_noop(d);
}

#ifdef KL_TRAIL_CHECK
static struct kl_val *kl_env_copy(struct kl_frame *f) {
  struct kl_val *e = kl_arena_xmalloc(sizeof *e * (size_t)(f->nvars ? f->nvars : 1));
  if (f->nvars) memcpy(e, f->env, sizeof *e * (size_t)f->nvars);
  return e;
}
/* The joins of whole copies that the trail replaces, kept as the check of it (kl_chk_cmp).
 * Variables added while walking a branch are absent from older copies; they keep their value. */
static void kl_env_join(struct kl_frame *f, const struct kl_val *other, int nother) {
  for (int i = 0; i < nother && i < f->nvars; i++)
    if (!kl_join_noop(&f->env[i], &other[i])) kl_join_into(&f->env[i], &other[i]);
}

/* The environment f had (saved, its first nsaved variables) joined with the one it has (its
 * first nnow variables), as restoring saved and joining the present into it would give. */
static void kl_env_join_before(struct kl_frame *f, const struct kl_val *saved, int nsaved,
                               int nnow) {
  for (int i = 0; i < nnow && i < f->nvars; i++) {
    struct kl_val *d = &f->env[i];
    struct kl_val now = *d;
    if (i < nsaved) *d = saved[i];
    if (!kl_join_noop(d, &now)) kl_join_into(d, &now);
  }
}

static void kl_env_restore(struct kl_frame *f, const struct kl_val *saved, int nsaved) {
  if (nsaved && f->nvars)
    memcpy(f->env, saved, sizeof *saved * (size_t)(nsaved < f->nvars ? nsaved : f->nvars));
}

static bool kl_env_same(const struct kl_val *a, const struct kl_val *b, int n) {
  for (int i = 0; i < n; i++) {
    if (a[i].scope != b[i].scope || !kl_affine_equal(a[i].form, b[i].form) ||
        memcmp(&a[i].deps, &b[i].deps, sizeof a[i].deps) || a[i].clamped != b[i].clamped)
      return false;
  }
  return true;
}

#endif

/* ---- The undo trail ------------------------------------------------------------------------ */

/* A point the environment may be taken back to, or joined with: an if statement's entry, a loop
 * pass's start. The values it had then are the first trail entry (kl_env_w) of each variable
 * past at, whichever mark saved it; every other variable below n0 still has its value. A branch
 * writes a few variables of a function with hundreds, so this costs what is written, not the
 * environment. */
struct kl_mark {
  size_t at;
  uint32_t stamp, prev_stamp;
  int n0, prev_n0;
};

static struct kl_mark kl_env_mark(struct kl_frame *f) {
  struct kl_mark m = {f->nundo, ++f->stamps, f->stamp, f->nvars, f->mark_n0};
  f->stamp = m.stamp;
  f->mark_n0 = m.n0;
  return m;
}

/* Close mark m: writes are saved for the enclosing mark again, if there is one. */
static void kl_env_unmark(struct kl_frame *f, const struct kl_mark *m) {
  f->stamp = m->prev_stamp;
  f->mark_n0 = m->prev_n0;
}

/* Once no mark is open, nothing reads the trail. */
static void kl_env_trim(struct kl_frame *f) {
  if (!f->stamp) f->nundo = 0;
}

/* The trail entries in [from, to) that are the first of their variable (below n, and not
 * stamped skip in f->seen), in order; their variables get stamp *tick. The caller frees the
 * list. */
static size_t *kl_env_firsts(struct kl_frame *f, size_t from, size_t to, int n, uint32_t skip,
                             uint32_t *tick, size_t *count) {
  size_t *out = NULL, cap = 0;
  *count = 0;
  *tick = ++f->ticks;
  for (size_t k = from; k < to; k++) {
    int id = f->undo[k].id;
    if (id >= n || f->seen[id] == *tick || (skip && f->seen[id] == skip)) continue;
    f->seen[id] = *tick;
    KL_XVEC_PUSH(out, *count, cap);
    out[(*count)++] = k;
  }
  return out;
}

/* Put back the values the variables below n had when the trail stood at from. */
static void kl_env_undo(struct kl_frame *f, size_t from, int n) {
  for (size_t k = f->nundo; k-- > from;)
    if (f->undo[k].id < n) f->env[f->undo[k].id] = f->undo[k].old;
}

/* kl_env_same for one variable. */
static bool kl_val_same(const struct kl_val *a, const struct kl_val *b) {
  return a->scope == b->scope && kl_affine_equal(a->form, b->form) &&
         !memcmp(&a->deps, &b->deps, sizeof a->deps) && a->clamped == b->clamped;
}

/* Join variable id's value with o (kl_env_join for one variable); whether it stayed o's. */
static bool kl_env_join1(struct kl_frame *f, int id, const struct kl_val *o) {
  if (!kl_join_noop(&f->env[id], o)) kl_join_into(kl_env_w(f, id), o);
  return kl_val_same(o, &f->env[id]);
}

/* Join each variable of a function that nothing wrote with itself (kl_join_noop says when that
 * changes it): those below n that f->seen does not stamp tick. Whether all stayed as they were. */
static bool kl_env_join_self(struct kl_frame *f, int n, uint32_t tick) {
  bool same = true;
  for (int i = 0; i < n && i < f->nvars; i++) {
    if (f->seen[i] == tick || kl_join_self_noop(&f->env[i])) continue;
    struct kl_val o = f->env[i];
    same = kl_env_join1(f, i, &o) && same;
  }
  return same;
}

/* A loop pass's end: the environment joined with the one at the pass's start (mark m, closed
 * here), as kl_env_join of a copy taken then would; whether it is what it was (kl_env_same). */
static bool kl_env_join_mark(struct kl_frame *f, const struct kl_mark *m) {
  uint32_t tick;
  size_t nf;
  size_t *firsts = kl_env_firsts(f, m->at, f->nundo, m->n0, 0, &tick, &nf);
  kl_env_unmark(f, m);
  bool same = true;
  for (size_t k = 0; k < nf; k++) {
    struct kl_val o = f->undo[firsts[k]].old; /* the trail may grow as this writes */
    same = kl_env_join1(f, f->undo[firsts[k]].id, &o) && same;
  }
  same = kl_env_join_self(f, m->n0, tick) && same;
  free(firsts);
  kl_env_trim(f);
  return same;
}

#ifdef KL_TRAIL_CHECK
/* The asan flavour (-DKL_TRAIL_CHECK) also takes the whole copies the trail replaces, joins them
 * as the copies were joined (kl_env_join and the rest, above), and aborts where the two differ:
 * the suite's every kernel checks the trail. */
static bool kl_chk_eq(const struct kl_val *a, const struct kl_val *b) {
  return a->scope == b->scope && kl_form_same(&a->form, &b->form) &&
         !memcmp(&a->deps, &b->deps, sizeof a->deps) &&
         !memcmp(&a->mention, &b->mention, sizeof a->mention) && a->clamped == b->clamped &&
         a->sized == b->sized && a->root == b->root;
}
static void kl_chk_cmp(const struct kl_val *got, const struct kl_val *want, int n, const char *w) {
  for (int i = 0; i < n; i++)
    if (!kl_chk_eq(&got[i], &want[i])) {
      fprintf(stderr, "TRAIL MISMATCH %s var %d\n", w, i);
      abort();
    }
}
#endif

/* Whether the early exit `if (cond) return;` leaves the threads whose x index in the threadgroup
 * is past a runtime uniform value, while every launch sizes the threadgroup's x at run time
 * (`threadgroup=(half, 1, 1)` against `if (tid >= params[3] / 2) return;`). The kernel then
 * restates, as far as anything shows, the size the host gave: no thread is presumed to leave,
 * and the test is not a divergence. Not so for a constant threadgroup, for a limit derived from
 * the threadgroup's own size (`threads_per_threadgroup.x / 2` leaves half), or for work done
 * inside the branch. */
static bool kl_tg_restated(struct kl_frame *f, TSNode cond, TSNode cons) {
  cond = kl_unparen(cond);
  if (!f->fx->tg_runtime_x || !kl_node_is_kind(cond, KL_KIND_BINARY_EXPRESSION) ||
      !kl_exits(cons, 0))
    return false;
  TSNode op = kl_fld(f, cond, "operator");
  const char *o = kl_node_null(op) ? "" : ts_node_type(op);
  /* idx >= lim, idx > lim, lim <= idx, lim < idx: the threads past the limit leave. */
  int side;
  if (!strcmp(o, ">=") || !strcmp(o, ">"))
    side = 0;
  else if (!strcmp(o, "<=") || !strcmp(o, "<"))
    side = 1;
  else
    return false;
  struct kl_val l = kl_eval(f, kl_fld(f, cond, "left")), r = kl_eval(f, kl_fld(f, cond, "right"));
  const struct kl_val *idx = side ? &r : &l, *lim = side ? &l : &r;
  int64_t k;
  if (lim->scope != KL_SCOPE_UNIFORM || kl_form_const(lim->form, &k)) return false;
  for (int i = 0; i < f->nvars; i++) {
    const struct kl_fvar *v = &f->vars[i];
    if (kl_bits_has(&lim->deps, i) && v->cdesc && !v->coord &&
        (strstr(v->cdesc->name, "per_threadgroup") || strstr(v->cdesc->name, "per_simdgroup")))
      return false;
  }
  for (int i = 0; i < f->nvars; i++) {
    const struct kl_fvar *v = &f->vars[i];
    if (!v->coord || !v->cdesc || v->comp != 'x' ||
        (strcmp(v->cdesc->name, "thread_index_in_threadgroup") &&
         strcmp(v->cdesc->name, "thread_position_in_threadgroup")))
      continue;
    if (kl_affine_equal(idx->form, kl_affine_atom((uint16_t)i))) return true;
  }
  return false;
}

static void kl_exec_if(struct kl_frame *f, TSNode n) {
  TSNode cond = kl_fld(f, n, "condition");
  struct kl_val cv = kl_eval(f, cond);
  if (cv.scope != KL_SCOPE_UNIFORM && kl_tg_restated(f, cond, kl_fld(f, n, "consequence")))
    cv.scope = KL_SCOPE_UNIFORM;
  TSNode cons = kl_fld(f, n, "consequence");
  TSNode alt = kl_fld(f, n, "alternative");
  if (!kl_node_null(alt) && kl_node_is_kind(alt, KL_KIND_ELSE_CLAUSE) &&
      ts_node_named_child_count(alt) > 0)
    alt = kl_node_named_child(alt, 0);
  int64_t ck;
  if (kl_form_const(cv.form, &ck)) {
    /* The specialisation compiles one branch only (`if (has_mask)`, `if (N > 1)`). */
    kl_exec(f, ck ? cons : alt);
    return;
  }
  struct kl_bits g0 = f->guards, bt = g0, bf = g0;
  kl_bounds(f, cond, true, &bt, 0);
  kl_bounds(f, cond, false, &bf, 0);
  int n0 = f->nvars;
  struct kl_mark env0 = kl_env_mark(f);
#ifdef KL_TRAIL_CHECK
  struct kl_val *chk_env0 = kl_env_copy(f);
#endif
  enum kl_scope ret0 = f->ret_scope, cont0 = f->cont_scope;
  TSNode retc0 = f->ret_cause, contc0 = f->cont_cause, conts0 = f->cont_stmt;
  kl_push_ctrl(f, cv.scope, cond, KL_CAUSE_BRANCH);
  f->guards = bt;
  bool dead0 = f->dead;
  f->branch++;
  kl_exec(f, cons);
  bool dead_then = f->dead;
  f->dead = dead0;
  struct kl_bits gthen = f->guards;
  int nthen = f->nvars;
  /* Without an else the environment after the branch is the one it left. With one, what the
   * branch left is kept aside (the variables it wrote, and those it added), and those it wrote
   * are taken back for the else. */
  bool has_alt = !kl_node_null(alt);
#ifdef KL_TRAIL_CHECK
  struct kl_val *chk_then = has_alt ? kl_env_copy(f) : NULL;
#endif
  size_t at_else = f->nundo, nthen_w = 0;
  uint32_t tick_then = 0;
  size_t *then_w = NULL;
  struct kl_val *then_v = NULL;
  if (has_alt) {
    then_w = kl_env_firsts(f, env0.at, at_else, n0, 0, &tick_then, &nthen_w);
    then_v = kl_arena_xmalloc(sizeof *then_v * (nthen_w + (size_t)(nthen - n0) + 1));
    for (size_t k = 0; k < nthen_w; k++) then_v[k] = f->env[f->undo[then_w[k]].id];
    for (int i = n0; i < nthen; i++) then_v[nthen_w + (size_t)(i - n0)] = f->env[i];
    kl_env_undo(f, env0.at, n0);
#ifdef KL_TRAIL_CHECK
    kl_chk_cmp(f->env, chk_env0, n0, "else");
#endif
  }
  enum kl_scope ret_then = f->ret_scope, cont_then = f->cont_scope;
  TSNode retc_then = f->ret_cause, contc_then = f->cont_cause, conts_then = f->cont_stmt;
  f->ret_scope = ret0;
  f->ret_cause = retc0;
  f->cont_scope = cont0;
  f->cont_cause = contc0;
  f->cont_stmt = conts0;
  f->guards = bf;
  if (!kl_node_null(alt)) kl_exec(f, alt);
  f->branch--;
  f->dead = f->dead && dead_then;
  struct kl_bits gelse = f->guards;
  kl_pop_ctrl(f);
  bool then_exits = kl_exits(cons, 0), else_exits = has_alt && kl_exits(alt, 0);
#ifdef KL_TRAIL_CHECK
  struct kl_val *chk_pre = kl_env_copy(f);
  int chk_n = f->nvars;
#endif
  /* What each variable the branches wrote held at the if: the first trail entry of the branch
   * (the else's only for those the then did not write, as the then's was taken back). Every
   * other variable below n0 was written by neither. */
  uint32_t tick_else = 0;
  size_t nelse_w = 0;
  size_t *else_w = NULL;
  if (has_alt) {
    /* The else's walk stamped f->seen for its own branches and loops: stamp the then's again. */
    tick_then = ++f->ticks;
    for (size_t k = 0; k < nthen_w; k++) f->seen[f->undo[then_w[k]].id] = tick_then;
    else_w = kl_env_firsts(f, at_else, f->nundo, n0, tick_then, &tick_else, &nelse_w);
  }
  size_t nall_w = 0;
  uint32_t tick_all = 0;
  size_t *all_w = has_alt ? NULL : kl_env_firsts(f, env0.at, f->nundo, n0, 0, &tick_all, &nall_w);
  kl_env_unmark(f, &env0);
  if (then_exits && !else_exits) {
    if (!has_alt) kl_env_undo(f, env0.at, n0);
    f->guards = gelse;
  } else if (else_exits && !then_exits) {
    /* An else that exits is an else: the then's environment, as it left it. */
    for (size_t k = 0; k < nelse_w; k++) f->env[f->undo[else_w[k]].id] = f->undo[else_w[k]].old;
    for (size_t k = 0; k < nthen_w; k++) f->env[f->undo[then_w[k]].id] = then_v[k];
    for (int i = n0; i < nthen && i < f->nvars; i++) f->env[i] = then_v[nthen_w + (size_t)(i - n0)];
    f->guards = gthen;
  } else {
    if (has_alt) {
      /* kl_env_join of the then's environment: its writes, the if's values where only the else
       * wrote, and each variable with itself where neither did. */
      for (size_t k = 0; k < nthen_w; k++) kl_env_join1(f, f->undo[then_w[k]].id, &then_v[k]);
      for (size_t k = 0; k < nelse_w; k++) {
        struct kl_val o = f->undo[else_w[k]].old; /* the trail may grow as this writes */
        kl_env_join1(f, f->undo[else_w[k]].id, &o);
      }
      for (int i = 0; i < n0; i++) /* one stamp for both lists: what neither wrote */
        if (f->seen[i] == tick_then) f->seen[i] = tick_else;
      kl_env_join_self(f, n0, tick_else);
      for (int i = n0; i < nthen && i < f->nvars; i++)
        kl_env_join1(f, i, &then_v[nthen_w + (size_t)(i - n0)]);
    } else {
      /* kl_env_join_before: the if's values joined with what the branch left. */
      for (size_t k = 0; k < nall_w; k++) {
        int id = f->undo[all_w[k]].id;
        struct kl_val now = f->env[id];
        struct kl_val *d = kl_env_w(f, id);
        *d = f->undo[all_w[k]].old;
        if (!kl_join_noop(d, &now)) kl_join_into(d, &now);
      }
      /* The rest, those the branch added too, with themselves (no stamp reaches past n0). */
      kl_env_join_self(f, nthen, tick_all);
    }
    f->guards = gthen;
    kl_bits_and(&f->guards, &gelse);
  }
  free(then_w);
  free(then_v);
  free(else_w);
  free(all_w);
  kl_env_trim(f);
#ifdef KL_TRAIL_CHECK
  {
    struct kl_val *got = f->env;
    f->env = chk_pre;
    if (then_exits && !else_exits) {
      if (!has_alt) kl_env_restore(f, chk_env0, n0);
    } else if (else_exits && !then_exits) {
      kl_env_restore(f, chk_then, nthen);
    } else if (has_alt) {
      kl_env_join(f, chk_then, nthen);
    } else {
      kl_env_join_before(f, chk_env0, n0, nthen);
    }
    kl_chk_cmp(got, chk_pre, chk_n, "if");
    f->env = got;
    free(chk_pre);
    free(chk_env0);
    free(chk_then);
  }
#endif
  if (ret_then > f->ret_scope) {
    f->ret_scope = ret_then;
    f->ret_cause = retc_then;
  }
  if (cont_then > f->cont_scope) {
    f->cont_scope = cont_then;
    f->cont_cause = contc_then;
    f->cont_stmt = conts_then;
  }
}

/* Walk a loop until the values it carries around settle (scopes only widen, so this ends). */
/* Mark the variables an update expression (`i += 4`, `s >>= 1`, `++i, ++j`) steps. */
static void kl_mark_inductions(struct kl_frame *f, TSNode u, int depth) {
  u = kl_unparen(u);
  if (kl_node_null(u) || depth > 16) return;
  if (kl_node_is_kind(u, KL_KIND_COMMA_EXPRESSION)) {
    kl_mark_inductions(f, kl_fld(f, u, "left"), depth + 1);
    kl_mark_inductions(f, kl_fld(f, u, "right"), depth + 1);
    return;
  }
  TSNode lv = kl_node_is_kind(u, KL_KIND_UPDATE_EXPRESSION)       ? kl_fld(f, u, "argument")
              : kl_node_is_kind(u, KL_KIND_ASSIGNMENT_EXPRESSION) ? kl_fld(f, u, "left")
                                                                  : (TSNode){{0}, NULL, NULL};
  if (!kl_node_null(lv)) kl_bits_set(&f->inductions, kl_lvalue_var(f, lv));
}

/* Mark the inductions that condition c (an && chain) bounds by a compile-time value from above
 * (`row < NR0`): their loop runs the same few times on every thread. */
static void kl_mark_fixed(struct kl_frame *f, TSNode c, int depth) {
  c = kl_unparen(c);
  if (kl_node_null(c) || depth > 8 || !kl_node_is_kind(c, KL_KIND_BINARY_EXPRESSION)) return;
  const char *op = kl_op(f, c);
  if (!strcmp(op, "&&")) {
    kl_mark_fixed(f, kl_fld(f, c, "left"), depth + 1);
    kl_mark_fixed(f, kl_fld(f, c, "right"), depth + 1);
    return;
  }
  if (strcmp(op, "<") && strcmp(op, "<=")) return;
  TSNode v = kl_unparen(kl_fld(f, c, "left")), e = kl_fld(f, c, "right");
  int id = kl_node_is_kind(v, KL_KIND_IDENTIFIER) ? kl_var_node(f, v) : -1;
  if (id < 0 || !kl_bits_has(&f->inductions, id)) return;
  int64_t k;
  int eid = kl_node_is_kind(kl_unparen(e), KL_KIND_IDENTIFIER) ? kl_var_node(f, kl_unparen(e)) : -1;
  if (kl_compile_time(f, e, 0) || kl_fold(f, e, &k, 0) ||
      (eid >= 0 && f->env[eid].scope == KL_SCOPE_UNIFORM && kl_form_ct(f->env[eid].form)))
    kl_bits_set(&f->fixed, id);
}

/* ---- Trip counts ----------------------------------------------------------------------------- */

/* Whether node n is the identifier name[0, len). */
static bool kl_names(struct kl_frame *f, TSNode n, const char *name, size_t len) {
  n = kl_unparen(n);
  if (kl_node_null(n) || !kl_node_is_kind(n, KL_KIND_IDENTIFIER)) return false;
  uint32_t st = ts_node_start_byte(n), en = ts_node_end_byte(n);
  return en - st == len && !memcmp(f->fx->u->buf + st, name, len);
}

/* Whether n names the variable name[0, len) anywhere. */
static bool kl_names_in(struct kl_frame *f, TSNode n, const char *name, size_t len, int depth) {
  if (kl_node_null(n) || depth > 64) return false;
  if (kl_names(f, n, name, len)) return true;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_names_in(f, kl_node_named_child(n, i), name, len, depth + 1)) return true;
  return false;
}

/* Collect the names n steps from their own value (`v += s`, `v = v + s`, `++v`). */
static void kl_collect_walks(struct kl_frame *f, TSNode n, struct kl_walked *w, int depth) {
  if (kl_node_null(n) || depth > 200) return;
  TSNode lv = kl_written_lvalue(f, n);
  lv = kl_node_null(lv) ? lv : kl_unparen(lv);
  if (!kl_node_null(lv) && kl_node_is_kind(lv, KL_KIND_IDENTIFIER)) {
    uint32_t st = ts_node_start_byte(lv), en = ts_node_end_byte(lv);
    const char *name = f->fx->u->buf + st;
    if (kl_node_is_kind(n, KL_KIND_UPDATE_EXPRESSION) || strcmp(kl_op(f, n), "=") ||
        kl_names_in(f, kl_fld(f, n, "right"), name, en - st, 0)) {
      KL_VEC_PUSH(f->fx->a, w->names, w->n, w->cap);
      w->names[w->n++] = kl_text(f, lv);
    }
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) kl_collect_walks(f, kl_node_named_child(n, i), w, depth + 1);
}

static bool kl_rounds_up(struct kl_frame *f, TSNode n, int depth);

/* The names loop (a statement with a body) steps from their own value, found once per loop. */
static const struct kl_walked *kl_loop_walks(struct kl_frame *f, TSNode loop, TSNode cond,
                                             TSNode body, TSNode update) {
  struct kl_flow_ctx *fx = f->fx;
  if (2 * (fx->nwalked + 1) > fx->cap_walked) {
    size_t cap = fx->cap_walked ? 2 * fx->cap_walked : 64;
    struct kl_walked *t = kl_arena_alloc(fx->a, cap * sizeof *t);
    memset(t, 0, cap * sizeof *t);
    for (size_t i = 0; i < fx->cap_walked; i++) {
      if (!fx->walked[i].key) continue;
      size_t h = (fx->walked[i].key * 2654435761u) & (cap - 1);
      while (t[h].key) h = (h + 1) & (cap - 1);
      t[h] = fx->walked[i];
    }
    fx->walked = t;
    fx->cap_walked = cap;
  }
  uint32_t key = ts_node_start_byte(loop) + 1;
  size_t h = (key * 2654435761u) & (fx->cap_walked - 1);
  while (fx->walked[h].key && fx->walked[h].key != key) h = (h + 1) & (fx->cap_walked - 1);
  struct kl_walked *w = &fx->walked[h];
  if (!w->key) {
    w->key = key;
    fx->nwalked++;
    kl_collect_walks(f, body, w, 0);
    kl_collect_walks(f, update, w, 0);
    kl_collect_walks(f, cond, w, 0);
  }
  return w;
}

/* Whether the variable name[0, len) is assigned in n (`=`, `+=`, `++`), its declaration aside. */
static bool kl_assigned_in(struct kl_frame *f, TSNode n, const char *name, size_t len, int depth) {
  if (kl_node_null(n) || depth > 200) return false;
  TSNode lv = kl_written_lvalue(f, n);
  if (!kl_node_null(lv) && kl_names(f, lv, name, len)) return true;
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_assigned_in(f, kl_node_named_child(n, i), name, len, depth + 1)) return true;
  return false;
}

static void kl_collect_assigns(struct kl_frame *f, TSNode n, struct kl_assigns *as, int depth) {
  if (kl_node_null(n) || depth > 200) return;
  TSNode lv = kl_written_lvalue(f, n);
  lv = kl_node_null(lv) ? lv : kl_unparen(lv);
  if (!kl_node_null(lv) && kl_node_is_kind(lv, KL_KIND_IDENTIFIER)) {
    size_t na = as->n;
    KL_VEC_PUSH(f->fx->a, as->at, na, as->cap_at);
    as->at[as->n] = ts_node_start_byte(n);
    const char *name = kl_text(f, lv);
    KL_VEC_PUSH(f->fx->a, as->lens, na, as->cap_lens);
    as->lens[as->n] = (uint32_t)strlen(name);
    KL_VEC_PUSH(f->fx->a, as->names, as->n, as->cap);
    as->names[as->n++] = name;
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++) kl_collect_assigns(f, kl_node_named_child(n, i), as, depth + 1);
}

/* Whether the function of frame f assigns the variable name[0, len) in the byte range
 * [from, to) of its body (all of it: 0, UINT32_MAX). */
static bool kl_fn_assigns_in(struct kl_frame *f, const char *name, size_t len, uint32_t from,
                             uint32_t to) {
  struct kl_flow_ctx *fx = f->fx;
  struct kl_assigns *as = NULL;
  for (size_t i = 0; i < fx->nassigns && !as; i++)
    if (fx->assigns[i].fn == f->fn) as = &fx->assigns[i];
  if (!as) {
    KL_VEC_PUSH(fx->a, fx->assigns, fx->nassigns, fx->cap_assigns);
    as = &fx->assigns[fx->nassigns++];
    memset(as, 0, sizeof *as);
    as->fn = f->fn;
    kl_collect_assigns(f, f->fn->body, as, 0);
  }
  for (size_t i = 0; i < as->n; i++)
    if (as->lens[i] == len && as->at[i] >= from && as->at[i] < to &&
        !memcmp(as->names[i], name, len))
      return true;
  return false;
}

static bool kl_fn_assigns(struct kl_frame *f, const char *name, size_t len) {
  return kl_fn_assigns_in(f, name, len, 0, UINT32_MAX);
}

/* Whether no variable n mentions is assigned in the function after its declaration: n has the
 * same value wherever it is evaluated. */
static bool kl_fixed_value(struct kl_frame *f, TSNode n, int depth) {
  if (kl_node_null(n) || depth > 64) return true;
  if (kl_node_is_kind(n, KL_KIND_IDENTIFIER)) {
    if (kl_var_node(f, n) < 0) return true; /* a constant, a template parameter, a callee */
    uint32_t st = ts_node_start_byte(n), en = ts_node_end_byte(n);
    return !kl_fn_assigns(f, f->fx->u->buf + st, en - st);
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (!kl_fixed_value(f, kl_node_named_child(n, i), depth + 1)) return false;
  return true;
}

/* The initialiser of local variable id in its declaration, or a null node. */
/* A local's initialiser, as kl_var_init finds it: remembered by declaration and name. */
struct kl_var_init_memo {
  const char *name;
  TSNode init;
};

static TSNode kl_var_init_find(struct kl_frame *f, int id);

static TSNode kl_var_init(struct kl_frame *f, int id) {
  const struct kl_var *d = f->vars[id].decl;
  if (!d || kl_node_null(d->node)) return kl_var_init_find(f, id);
  /* Asked for every name a rounding or a lambda call reaches, on every pass. */
  const void *p;
  const struct kl_var_init_memo *m = NULL;
  if (kl_node_map_get(&f->fx->inits, d->node, d, &p)) m = p;
  if (m && !strcmp(m->name, f->vars[id].name) && m->name[f->vars[id].len] == '\0') return m->init;
  struct kl_var_init_memo *e = kl_arena_alloc(f->fx->a, sizeof *e);
  e->name = f->vars[id].name;
  e->init = kl_var_init_find(f, id);
  if (!m && f->vars[id].len == strlen(e->name))
    kl_node_map_put(f->fx->a, &f->fx->inits, d->node, d, e);
  return e->init;
}

static TSNode kl_var_init_find(struct kl_frame *f, int id) {
  TSNode none = {{0}, NULL, NULL};
  const struct kl_var *d = f->vars[id].decl;
  if (!d || kl_node_null(d->node) || !kl_node_is_kind(d->node, KL_KIND_DECLARATION)) return none;
  /* Names are tracked per function: one declared in two blocks has no one initialiser. */
  size_t decls = 0;
  for (size_t i = 0; i < f->fn->nlocals; i++)
    if (f->fn->locals[i].name && !strcmp(f->fn->locals[i].name, f->vars[id].name)) decls++;
  if (decls != 1) return none;
  uint32_t k = ts_node_named_child_count(d->node);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kl_node_named_child(d->node, i);
    if (!kl_node_is_kind(c, KL_KIND_INIT_DECLARATOR)) continue;
    if (kl_names(f, kl_decl_name(kl_fld(f, c, "declarator")), f->vars[id].name, f->vars[id].len))
      return kl_fld(f, c, "value");
  }
  return none;
}

/* Whether n, with the locals it names replaced by their initialisers where those never change,
 * divides rounding up: `(a + b - 1) / b`, or a ceil-division helper. */
static bool kl_rounds_up(struct kl_frame *f, TSNode n, int depth) {
  n = kl_unparen(n);
  if (kl_node_null(n) || depth > 32) return false;
  if (kl_node_is_kind(n, KL_KIND_BINARY_EXPRESSION) && !strcmp(kl_op(f, n), "/")) {
    TSNode l = kl_unparen(kl_fld(f, n, "left"));
    TSNode one = kl_node_is_kind(l, KL_KIND_BINARY_EXPRESSION) && !strcmp(kl_op(f, l), "-")
                     ? kl_unparen(kl_fld(f, l, "right"))
                     : (TSNode){{0}, NULL, NULL};
    if (!kl_node_null(one) && kl_node_is_kind(one, KL_KIND_NUMBER_LITERAL) &&
        ts_node_end_byte(one) - ts_node_start_byte(one) == 1 &&
        f->fx->u->buf[ts_node_start_byte(one)] == '1')
      return true;
    /* Folded: `(a + 127) / 128`. */
    int64_t add, div;
    if (kl_node_is_kind(l, KL_KIND_BINARY_EXPRESSION) && !strcmp(kl_op(f, l), "+") &&
        kl_fold(f, kl_fld(f, l, "right"), &add, 0) && kl_fold(f, kl_fld(f, n, "right"), &div, 0) &&
        div > 1 && add == div - 1)
      return true;
  }
  if (kl_node_is_kind(n, KL_KIND_CALL_EXPRESSION)) {
    static const char *const ceils[] = {"ceil",         "ceil_div", "ceildiv",
                                        "cdiv",         "div_up",   "div_round_up",
                                        "DIV_ROUND_UP", "CEIL_DIV", NULL};
    TSNode fn = kl_fld(f, n, "function");
    for (int i = 0; ceils[i] && kl_node_is_kind(fn, KL_KIND_IDENTIFIER); i++)
      if (kl_names(f, fn, ceils[i], strlen(ceils[i]))) return true;
  }
  if (kl_node_is_kind(n, KL_KIND_IDENTIFIER)) {
    int id = kl_var_node(f, n);
    TSNode init = id >= 0 ? kl_var_init(f, id) : (TSNode){{0}, NULL, NULL};
    return !kl_node_null(init) && kl_fixed_value(f, n, 0) && kl_rounds_up(f, init, depth + 1);
  }
  uint32_t k = ts_node_named_child_count(n);
  for (uint32_t i = 0; i < k; i++)
    if (kl_rounds_up(f, kl_node_named_child(n, i), depth + 1)) return true;
  return false;
}

enum { KL_TRIP_TERMS = 16 };
/* A sum of terms, each a node and its sign, with the locals it names replaced by their
 * initialisers where those never change. */
struct kl_trip {
  TSNode t[KL_TRIP_TERMS];
  int sign[KL_TRIP_TERMS];
  int n;
  bool bad;
};

static void kl_trip_terms(struct kl_frame *f, TSNode e, int sign, struct kl_trip *out, int depth) {
  e = kl_unparen(e);
  if (kl_node_null(e) || depth > 8) {
    out->bad = true;
    return;
  }
  if (kl_node_is_kind(e, KL_KIND_BINARY_EXPRESSION) &&
      (!strcmp(kl_op(f, e), "+") || !strcmp(kl_op(f, e), "-"))) {
    kl_trip_terms(f, kl_fld(f, e, "left"), sign, out, depth + 1);
    kl_trip_terms(f, kl_fld(f, e, "right"), !strcmp(kl_op(f, e), "-") ? -sign : sign, out,
                  depth + 1);
    return;
  }
  if (kl_node_is_kind(e, KL_KIND_IDENTIFIER)) {
    int id = kl_var_node(f, e);
    TSNode init = id >= 0 ? kl_var_init(f, id) : (TSNode){{0}, NULL, NULL};
    if (!kl_node_null(init) && kl_fixed_value(f, e, 0)) {
      kl_trip_terms(f, init, sign, out, depth + 1);
      return;
    }
  }
  if (out->n == KL_TRIP_TERMS) {
    out->bad = true;
    return;
  }
  out->t[out->n] = e;
  out->sign[out->n++] = sign;
}

/* Source text of n without blanks, into buf (cap bytes); false when it does not fit. */
static bool kl_squeeze(struct kl_frame *f, TSNode n, char *buf, size_t cap) {
  size_t k = 0;
  for (uint32_t i = ts_node_start_byte(n); i < ts_node_end_byte(n); i++) {
    char c = f->fx->u->buf[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (k + 1 >= cap) return false;
    buf[k++] = c;
  }
  buf[k] = '\0';
  return true;
}

/* The scope of a loop's trip count, when the loop steps one counter by a uniform amount from a
 * start to a bound (`for (t = base + tid; t < base + n * C + tid; t += C)`) and nothing else
 * assigns it: the scope of bound minus start, after the terms both share cancel (the same
 * names, which never change). A counter that starts and ends with the same per-thread offset
 * runs the same number of iterations in every thread. False when the loop is not of that
 * form. */
static bool kl_trip_scope(struct kl_frame *f, TSNode init, TSNode cond, TSNode body, TSNode update,
                          enum kl_scope *out) {
  cond = kl_unparen(cond);
  update = kl_unparen(update);
  if (kl_node_null(init) || kl_node_null(update) ||
      !kl_node_is_kind(cond, KL_KIND_BINARY_EXPRESSION))
    return false;
  /* The counter and its step. */
  TSNode ctr, step = {{0}, NULL, NULL};
  if (kl_node_is_kind(update, KL_KIND_UPDATE_EXPRESSION)) {
    ctr = kl_fld(f, update, "argument");
  } else if (kl_node_is_kind(update, KL_KIND_ASSIGNMENT_EXPRESSION) &&
             (!strcmp(kl_op(f, update), "+=") || !strcmp(kl_op(f, update), "-="))) {
    ctr = kl_fld(f, update, "left");
    step = kl_fld(f, update, "right");
  } else {
    return false;
  }
  ctr = kl_unparen(ctr);
  if (!kl_node_is_kind(ctr, KL_KIND_IDENTIFIER)) return false;
  const char *cn = f->fx->u->buf + ts_node_start_byte(ctr);
  size_t cl = ts_node_end_byte(ctr) - ts_node_start_byte(ctr);
  /* The function's assignments answer for a body inside it; any other is walked. */
  uint32_t bs = ts_node_start_byte(body), be = ts_node_end_byte(body);
  bool inside = !kl_node_null(f->fn->body) && bs >= ts_node_start_byte(f->fn->body) &&
                be <= ts_node_end_byte(f->fn->body);
  if (inside ? kl_fn_assigns_in(f, cn, cl, bs, be) : kl_assigned_in(f, body, cn, cl, 0))
    return false;
  /* Its start: `T t = start` or `t = start`. */
  TSNode start = {{0}, NULL, NULL};
  if (kl_node_is_kind(init, KL_KIND_DECLARATION)) {
    uint32_t k = ts_node_named_child_count(init);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kl_node_named_child(init, i);
      if (kl_node_is_kind(c, KL_KIND_INIT_DECLARATOR) &&
          kl_names(f, kl_decl_name(kl_fld(f, c, "declarator")), cn, cl))
        start = kl_fld(f, c, "value");
    }
  } else if (kl_node_is_kind(init, KL_KIND_ASSIGNMENT_EXPRESSION) && !strcmp(kl_op(f, init), "=") &&
             kl_names(f, kl_fld(f, init, "left"), cn, cl)) {
    start = kl_fld(f, init, "right");
  }
  if (kl_node_null(start)) return false;
  /* Its bound: `t < bound` and the like, either way round. */
  const char *op = kl_op(f, cond);
  if (strcmp(op, "<") && strcmp(op, "<=") && strcmp(op, ">") && strcmp(op, ">=") &&
      strcmp(op, "!="))
    return false;
  TSNode bound;
  if (kl_names(f, kl_fld(f, cond, "left"), cn, cl))
    bound = kl_fld(f, cond, "right");
  else if (kl_names(f, kl_fld(f, cond, "right"), cn, cl))
    bound = kl_fld(f, cond, "left");
  else
    return false;
  struct kl_trip d = {0};
  kl_trip_terms(f, bound, 1, &d, 0);
  kl_trip_terms(f, start, -1, &d, 0);
  if (d.bad) return false;
  /* Cancel the terms start and bound share; the rest is the distance the counter runs. */
  char a[256], b[256];
  bool gone[KL_TRIP_TERMS] = {false};
  for (int i = 0; i < d.n; i++) {
    if (gone[i] || !kl_squeeze(f, d.t[i], a, sizeof a)) continue;
    for (int j = i + 1; j < d.n; j++) {
      if (gone[j] || d.sign[j] == d.sign[i] || !kl_squeeze(f, d.t[j], b, sizeof b) || strcmp(a, b))
        continue;
      if (!kl_fixed_value(f, d.t[i], 0)) break;
      gone[i] = gone[j] = true;
      break;
    }
  }
  enum kl_scope sc = KL_SCOPE_UNIFORM;
  for (int i = 0; i < d.n; i++) {
    if (gone[i]) continue;
    if (!kl_fixed_value(f, d.t[i], 0)) return false; /* its scope here may not be its scope there */
    struct kl_bits m;
    memset(&m, 0, sizeof m);
    kl_mentions(f, d.t[i], &m, 0);
    for (int v = 0; v < f->nvars && v < KL_FLOW_BITS; v++)
      if (kl_bits_has(&m, v)) sc = kl_max(sc, f->env[v].scope);
  }
  if (!kl_node_null(step)) {
    struct kl_bits m;
    memset(&m, 0, sizeof m);
    kl_mentions(f, step, &m, 0);
    for (int v = 0; v < f->nvars && v < KL_FLOW_BITS; v++)
      if (kl_bits_has(&m, v)) sc = kl_max(sc, f->env[v].scope);
  }
  *out = sc;
  return true;
}

static void kl_exec_loop(struct kl_frame *f, TSNode init, TSNode cond, TSNode body, TSNode update,
                         bool cond_first) {
  struct kl_bits ind0 = f->inductions, fixed0 = f->fixed;
  kl_mark_inductions(f, update, 0);
  struct kl_flow_ctx *fx = f->fx;
  kl_bits_or(&f->counters_seen, &f->inductions);
  kl_mark_fixed(f, cond, 0);
  struct kl_bits g0 = f->guards;
  bool dead0 = f->dead;
  enum kl_scope exit0 = f->exit_scope, cont0 = f->cont_scope;
  TSNode exitc0 = f->exit_cause, contc0 = f->cont_cause, conts0 = f->cont_stmt;
  int contd0 = f->cont_depth;
  bool sw0 = f->in_switch;
  f->in_switch = false;
  f->exit_scope = KL_SCOPE_UNIFORM;
  f->exit_cause = (TSNode){{0}, NULL, NULL};
  /* A do-while's condition is only seen after its body: later passes start from it. */
  enum kl_scope carried = KL_SCOPE_UNIFORM;
  bool deep = fx->loop_nest >= KL_FLOW_LOOP_NEST;
  int passes = !deep ? KL_FLOW_LOOP_PASSES : fx->deep_second ? 1 : 2;
  fx->loop_nest++;
  for (int pass = 0; pass < passes; pass++) {
    int n0 = f->nvars;
    if (deep && pass == 1) fx->deep_second++;
    struct kl_mark before = kl_env_mark(f);
#ifdef KL_TRAIL_CHECK
    struct kl_val *chk_before = kl_env_copy(f);
#endif
    enum kl_scope cs = carried;
    if (cond_first && !kl_node_null(cond)) {
      enum kl_scope c = kl_eval(f, cond).scope, trip;
      /* A thread-dependent condition can still give every thread the same trip count. */
      if (c > KL_SCOPE_UNIFORM && kl_trip_scope(f, init, cond, body, update, &trip) && trip < c)
        c = trip;
      cs = kl_max(cs, c);
    }
    /* A thread that broke out of an earlier iteration misses this one's barriers. */
    bool back = f->exit_scope > cs && !kl_node_null(f->exit_cause);
    kl_push_ctrl(f, kl_max(cs, f->exit_scope),
                 back                 ? f->exit_cause
                 : kl_node_null(cond) ? body
                                      : cond,
                 KL_CAUSE_LOOP);
    f->cont_scope = KL_SCOPE_UNIFORM;
    f->cont_cause = f->cont_stmt = (TSNode){{0}, NULL, NULL};
    f->cont_depth = f->nctrl;
    if (!kl_node_null(cond) && cond_first) kl_bounds(f, cond, true, &f->guards, 0);
    kl_exec(f, body);
    f->dead = dead0; /* the next iteration, or the code after the loop */
    /* The update and the next iteration start with every thread that continued. */
    f->cont_scope = KL_SCOPE_UNIFORM;
    f->cont_cause = f->cont_stmt = (TSNode){{0}, NULL, NULL};
    if (!kl_node_null(update)) kl_eval(f, update);
    if (!cond_first && !kl_node_null(cond)) carried = kl_max(carried, kl_eval(f, cond).scope);
    kl_pop_ctrl(f);
    f->guards = g0;
#ifdef KL_TRAIL_CHECK
    struct kl_val *chk_pre = kl_env_copy(f);
#endif
    /* Past the nesting cap the second pass is the last: what the first pass changed is widened
     * to the scope its join reached with a form the algebra does not follow, so a value carried
     * round the back edge (`if (v > 0) barrier; v = lid;`) reaches the body's start as it would
     * after more passes, and a guess of its form from one pass is not taken for a fact. */
    size_t nwide = 0;
    struct { int id; enum kl_scope was; } *wide = NULL;
    if (deep && pass == 0 && passes > 1) {
      uint32_t tick;
      size_t *fs = kl_env_firsts(f, before.at, f->nundo, before.n0, 0, &tick, &nwide);
      wide = malloc(sizeof *wide * (nwide ? nwide : 1));
      if (!wide) nwide = 0;
      for (size_t k = 0; k < nwide; k++)
        wide[k].id = f->undo[fs[k]].id, wide[k].was = f->undo[fs[k]].old.scope;
      free(fs);
    }
    bool same = kl_env_join_mark(f, &before);
#ifdef KL_TRAIL_CHECK
    {
      struct kl_val *got = f->env;
      f->env = chk_pre;
      kl_env_join(f, chk_before, n0);
      bool want = n0 == f->nvars && kl_env_same(chk_before, f->env, n0);
      kl_chk_cmp(got, chk_pre, f->nvars, "loop");
      if (want != (same && n0 == f->nvars)) {
        fprintf(stderr, "TRAIL MISMATCH loop same\n");
        abort();
      }
      f->env = got;
      free(chk_pre);
      free(chk_before);
    }
#endif
    if (deep && pass == 0 && passes > 1) {
      /* Only a scope the pass raised, or threads that left the loop under divergent control,
       * can change what the next pass says of the body's barriers: without either, one pass
       * stands (a nest of uniform loops stays linear). */
      bool again = (f->exit_scope > cs && !kl_node_null(f->exit_cause)) || carried > cs;
      for (size_t k = 0; k < nwide && !again; k++) again = f->env[wide[k].id].scope > wide[k].was;
      for (size_t k = 0; k < nwide && again; k++) {
        struct kl_val *w = kl_env_w(f, wide[k].id);
        w->form = kl_opaque(w->scope);
      }
      free(wide);
      if (!again) break;
    }
    same = same && n0 == f->nvars && carried <= cs;
    if (deep && pass == 1) fx->deep_second--;
    if (same && pass > 0) break;
  }
  fx->loop_nest--;
  f->exit_scope = exit0;
  f->exit_cause = exitc0;
  f->cont_scope = cont0;
  f->cont_cause = contc0;
  f->cont_stmt = conts0;
  f->cont_depth = contd0;
  f->in_switch = sw0;
  f->inductions = ind0;
  f->fixed = fixed0;
  /* A variable the loop steps from its own value leaves it with the value of the last step:
   * a later comparison of it is about where the walk ended (kl_note_walks). */
  TSNode loop = kl_node_null(body) ? body : kl_parent(f, body);
  if (!kl_node_null(loop)) {
    /* Unless its bound is rounded up (`(n + B - 1) / B`): its last step can run past the data,
     * and a check of where the walk ended is evidence for the walk too. Folded per
     * specialisation, so not kept with the names. */
    const struct kl_walked *w = kl_loop_walks(f, loop, cond, body, update);
    bool rounds_up = w->n && kl_rounds_up(f, cond, 0);
    for (size_t i = 0; i < w->n && !rounds_up; i++) {
      int id = kl_var_find(f, w->names[i], strlen(w->names[i]));
      if (id >= 0) f->vars[id].walk = loop;
    }
  }
}

static void kl_exec(struct kl_frame *f, TSNode n) {
  if (kl_node_null(n)) return;
  enum kl_kind ty = kl_node_kind(n);
  if (ty == KL_KIND_COMPOUND_STATEMENT || ty == KL_KIND_PREPROC_IF || ty == KL_KIND_PREPROC_IFDEF ||
      ty == KL_KIND_PREPROC_ELSE || ty == KL_KIND_PREPROC_ELIF || ty == KL_KIND_CASE_STATEMENT ||
      ty == KL_KIND_LABELED_STATEMENT || ty == KL_KIND_PREPROC_ELIFDEF) {
    /* Directive conditions and case labels are not statements (ts_node_field_name_for_child
     * is unreliable in tree-sitter 0.20.7, so compare against the field nodes instead). */
    TSNode skip[3] = {kl_fld(f, n, "condition"), kl_fld(f, n, "name"), kl_fld(f, n, "value")};
    uint32_t k;
    /* A case or a label is reached by a jump, whatever came before it. */
    if (ty == KL_KIND_CASE_STATEMENT || ty == KL_KIND_LABELED_STATEMENT) f->dead = false;
    /* Each #if branch is one build's code: a return in one does not end the others, nor the
     * code after #endif. */
    bool pp = ty == KL_KIND_PREPROC_IF || ty == KL_KIND_PREPROC_IFDEF ||
              ty == KL_KIND_PREPROC_ELSE || ty == KL_KIND_PREPROC_ELIF ||
              ty == KL_KIND_PREPROC_ELIFDEF;
    bool dead_pp = f->dead;
    const TSNode *kids = kl_kids(f, n, &k);
    for (uint32_t i = 0; i < k; i++) {
      TSNode c = kids[i];
      if (ts_node_eq(c, skip[0]) || ts_node_eq(c, skip[1]) || ts_node_eq(c, skip[2])) continue;
      if (pp && !strncmp(ts_node_type(c), "preproc_", 8)) f->dead = dead_pp;
      if (f->dead && !kl_node_is_kind(c, KL_KIND_CASE_STATEMENT) &&
          !kl_node_is_kind(c, KL_KIND_LABELED_STATEMENT))
        continue;
      kl_exec(f, c);
    }
    if (pp) f->dead = dead_pp;
    return;
  }
  if (ty == KL_KIND_DECLARATION) {
    kl_exec_declaration(f, n);
    return;
  }
  if (ty == KL_KIND_EXPRESSION_STATEMENT) {
    if (ts_node_named_child_count(n) > 0) kl_eval(f, kl_node_named_child(n, 0));
    return;
  }
  if (ty == KL_KIND_IF_STATEMENT) {
    kl_exec_if(f, n);
    return;
  }
  if (ty == KL_KIND_FOR_STATEMENT) {
    TSNode init = kl_fld(f, n, "initializer");
    if (!kl_node_null(init)) {
      if (kl_node_is_kind(init, KL_KIND_DECLARATION))
        kl_exec_declaration(f, init);
      else
        kl_eval(f, init);
    }
    kl_exec_loop(f, init, kl_fld(f, n, "condition"), kl_fld(f, n, "body"), kl_fld(f, n, "update"),
                 true);
    return;
  }
  if (ty == KL_KIND_WHILE_STATEMENT) {
    kl_exec_loop(f, (TSNode){{0}, NULL, NULL}, kl_fld(f, n, "condition"), kl_fld(f, n, "body"),
                 (TSNode){{0}, NULL, NULL}, true);
    return;
  }
  if (ty == KL_KIND_DO_STATEMENT) {
    kl_exec_loop(f, (TSNode){{0}, NULL, NULL}, kl_fld(f, n, "condition"), kl_fld(f, n, "body"),
                 (TSNode){{0}, NULL, NULL}, false);
    return;
  }
  if (ty == KL_KIND_FOR_RANGE_LOOP) {
    struct kl_val r = kl_eval(f, kl_fld(f, n, "right"));
    TSNode d = kl_decl_name(kl_fld(f, n, "declarator"));
    if (!kl_node_null(d)) kl_assign(f, kl_var_node(f, d), r);
    kl_exec_loop(f, (TSNode){{0}, NULL, NULL}, kl_fld(f, n, "right"), kl_fld(f, n, "body"),
                 (TSNode){{0}, NULL, NULL}, true);
    return;
  }
  if (ty == KL_KIND_SWITCH_STATEMENT) {
    TSNode cond = kl_fld(f, n, "condition");
    struct kl_val cv = kl_eval(f, cond);
    kl_push_ctrl(f, cv.scope, cond, KL_CAUSE_BRANCH);
    bool dead0 = f->dead, sw0 = f->in_switch;
    f->in_switch = true;
    kl_exec(f, kl_fld(f, n, "body"));
    f->in_switch = sw0;
    f->dead = dead0; /* a break leaves the switch, not the function */
    kl_pop_ctrl(f);
    return;
  }
  if (ty == KL_KIND_RETURN_STATEMENT) {
    enum kl_scope ctrl = kl_frame_ctrl(f);
    if (ts_node_named_child_count(n) > 0) {
      struct kl_val v = kl_eval(f, kl_node_named_child(n, 0));
      f->result = kl_max(f->result, kl_max(v.scope, ctrl));
    }
    if (ctrl > f->ret_scope) {
      f->ret_scope = ctrl;
      for (int i = f->nctrl - 1; i >= 0; i--)
        if (f->ctrl[i].scope == ctrl || i == 0) {
          f->ret_cause = f->ctrl[i].node;
          break;
        }
    }
    f->dead = true;
    return;
  }
  if (ty == KL_KIND_BREAK_STATEMENT && f->in_switch) {
    f->dead = true; /* the code after the switch is reached again */
    return;
  }
  if (ty == KL_KIND_BREAK_STATEMENT || ty == KL_KIND_CONTINUE_STATEMENT) {
    /* Only the ctrl inside the loop decides which threads leave this iteration. */
    enum kl_scope ctrl = f->cont_scope;
    int inner = -1;
    for (int i = f->cont_depth; i < f->nctrl; i++)
      if (f->ctrl[i].scope > ctrl) ctrl = f->ctrl[i].scope, inner = i;
    if (ctrl > f->cont_scope && inner >= 0) {
      f->cont_scope = ctrl;
      f->cont_cause = f->ctrl[inner].node;
      f->cont_stmt = n;
    }
    /* A break also leaves the later iterations, so their barriers too (a continue does not: the
     * loop condition decides whether a thread runs the next one). */
    if (ty == KL_KIND_BREAK_STATEMENT && ctrl > f->exit_scope) {
      f->exit_scope = ctrl;
      f->exit_cause = inner >= 0 ? f->ctrl[inner].node : f->exit_cause;
    }
    f->dead = true;
    return;
  }
  if (ty == KL_KIND_PREPROC_DEF || ty == KL_KIND_PREPROC_CALL) {
    /* A kernel's own `#define FC_CNT FC_unary_cnt`, up to its `#undef`. */
    TSNode name = kl_fld(f, n, "name"), value = kl_fld(f, n, "value");
    TSNode dn = kl_fld(f, n, "directive");
    bool undef =
        ty == KL_KIND_PREPROC_CALL && !kl_node_null(dn) && !strcmp(kl_text(f, dn), "#undef");
    if (ty == KL_KIND_PREPROC_DEF && !kl_node_null(name)) {
      KL_VEC_PUSH(f->fx->a, f->macros, f->nmacros, f->cap_macros);
      f->macros[f->nmacros++] =
          (struct kl_flow_bind){kl_text(f, name), kl_node_null(value) ? "" : kl_text(f, value)};
    } else if (undef) {
      TSNode arg = kl_fld(f, n, "argument");
      const char *nm = kl_node_null(arg) ? "" : kl_text(f, arg);
      size_t l = strcspn(nm, " \t\r\n");
      KL_VEC_PUSH(f->fx->a, f->macros, f->nmacros, f->cap_macros);
      f->macros[f->nmacros++] = (struct kl_flow_bind){kl_arena_strndup(f->fx->a, nm, l), NULL};
    }
    return;
  }
  if (ty == KL_KIND_COMMENT || ty == KL_KIND_PREPROC_FUNCTION_DEF ||
      ty == KL_KIND_TYPE_DEFINITION || ty == KL_KIND_ALIAS_DECLARATION ||
      ty == KL_KIND_STATIC_ASSERT_DECLARATION)
    return;
  /* Statements we do not model: evaluate their expressions for their facts. */
  uint32_t k;
  const TSNode *kids = kl_kids(f, n, &k);
  for (uint32_t i = 0; i < k; i++) {
    TSNode c = kids[i];
    if (ts_node_is_named(c) && strstr(ts_node_type(c), "statement"))
      kl_exec(f, c);
    else
      kl_eval(f, c);
  }
}

static void kl_frame_init(struct kl_frame *f, struct kl_flow_ctx *fx, const struct kl_function *fn,
                          int depth) {
  memset(f, 0, sizeof *f);
  f->fx = fx;
  f->fn = fn;
  f->depth = depth;
  f->serial = ++fx->serial;
  f->first_access = fx->out->naccesses;
  for (size_t i = 0; i < fn->nparams; i++) {
    const struct kl_var *p = &fn->params[i];
    if (!p->name) continue;
    int id = kl_var_add(f, p->name, p);
    if (p->coord) {
      kl_frame_coord(f, id, p->coord, p->type);
    } else if (p->is_pointer || p->array_dims) {
      f->env[id].root = id;
      f->env[id].form = kl_affine_const(0);
      if (f->vars[id].as == KL_AS_NONE) f->vars[id].as = KL_AS_DEVICE;
    } else if (p->as == KL_AS_CONSTANT || p->as == KL_AS_DEVICE || p->attr_index >= 0) {
      f->env[id].sized = true;
    }
  }
  for (size_t i = 0; i < fn->nlocals; i++) {
    const struct kl_var *l = &fn->locals[i];
    if (l->name) kl_var_add(f, l->name, l);
  }
}

static void kl_frame_run(struct kl_frame *f) {
  kl_exec(f, f->fn->body);
  kl_settle_evidence(f);
}

/* Free a frame that has run. Its tables are malloc'd, not in the arena: a file analyses thousands
 * of frames (ggml: every kernel, specialisation and helper call), and none outlives its run. What
 * the flow and the helper memos keep (accesses, barriers, cmps, names) is in the arena. */
static void kl_frame_delete(struct kl_frame *f) {
  free(f->vars);
  free(f->env);
  free(f->ctrl);
  free(f->undo);
  free(f->saved_at);
  free(f->seen);
  free(f->vslots);
  free(f->slots);
  free(f->pending);
  free(f);
}

/* How argument node a binds parameter p as a thread coordinate (`tgpig`, `lid.x`, `(uint)lid`):
 * only when the caller's value is one and is a scalar exactly when p is (MSL would splat a
 * scalar into a vector parameter). */
static struct kl_coord_bind kl_coord_arg(struct kl_frame *f, TSNode a, const struct kl_var *p) {
  struct kl_coord_bind b = {0};
  a = kl_unparen(a);
  if (kl_node_is_kind(a, KL_KIND_CAST_EXPRESSION)) a = kl_unparen(kl_fld(f, a, "value"));
  if (!p ||
      (!kl_node_is_kind(a, KL_KIND_IDENTIFIER) && !kl_node_is_kind(a, KL_KIND_FIELD_EXPRESSION)))
    return b;
  int id = kl_var_node(f, a);
  if (id < 0 || !f->vars[id].coord || !f->vars[id].cdesc) return b;
  bool scalar = kl_bits_has(&f->atoms, id);
  if (scalar == kl_vector_type(p->type)) return b;
  b.c = f->vars[id].cdesc;
  b.scalar = scalar;
  if (scalar) {
    b.comp = f->vars[id].comp;
    b.lane = f->vars[id].lane;
    b.guarded = kl_guarded_here(f, id);
    return b;
  }
  for (int k = 0; k < 3; k++) {
    const char *cn = kl_arena_printf(f->fx->a, "%s.%c", f->vars[id].name, "xyz"[k]);
    if (kl_guarded_here(f, kl_var_find(f, cn, strlen(cn)))) b.guarded |= (uint8_t)(1u << k);
  }
  return b;
}

/* How value v, given to parameter p, binds it as a proxy (KL_PROXY...), or 0: a thread-derived
 * scalar that is no coordinate (`first = tgpig.x * 4`, `row`). */
static uint8_t kl_proxy_arg(struct kl_frame *f, const struct kl_val *v, const struct kl_var *p) {
  if (!p || p->is_pointer || p->array_dims || v->root >= 0 || !kl_thread_derived(f, v))
    return 0;
  if (!v->form.known && !v->form.partial) return 0; /* a loaded value: no index algebra */
  uint8_t r = KL_PROXY;
  if (v->clamped) r |= KL_PROXY_CLAMPED;
  /* Bounded when every thread-derived name it is computed from is. */
  bool all = true, any = false;
  for (int m = 0; m < f->nvars && m < KL_FLOW_BITS; m++) {
    if (!kl_bits_has(&v->mention, m) || !kl_thread_derived(f, &f->env[m])) continue;
    any = true;
    if (!kl_bits_has(&f->guards, m) && !kl_guarded_here(f, m) && !f->env[m].clamped) all = false;
  }
  if (any && all) r |= KL_PROXY_GUARDED;
  return r;
}

/* The caller's form of the value helper atom m stands for (see kl_memo.param_of), given the call's
 * argument nodes and values; unknown when there is none. */
static struct kl_affine kl_lift_atom(struct kl_frame *f, const struct kl_memo *mm, TSNode argl,
                                     const struct kl_val *args, uint32_t nargs, uint16_t m,
                                     struct kl_bits *names, struct kl_bits *counters) {
  int code = m < mm->nparam_of ? mm->param_of[m] : -1;
  uint32_t k = code >= 0 ? (uint32_t)code / 4 : UINT32_MAX;
  if (k >= nargs || k >= 16 || kl_node_null(argl)) return kl_affine_unknown();
  if (mm->proxy[k]) {
    /* The caller's thread-derived names in it, and its loop counters (`tg * 4 + j` in a loop
     * over j): a lifted comparison with those is evidence as one made here would be. */
    for (int i = 0; i < f->nvars && i < KL_FLOW_BITS; i++) {
      if (!kl_bits_has(&args[k].mention, i)) continue;
      if (kl_thread_derived(f, &f->env[i])) {
        kl_bits_set(names, i);
      } else if (kl_bits_has(&f->inductions, i) ||
                 kl_bits_meet(&f->env[i].deps, &f->inductions)) {
        kl_bits_set(counters, i);
      }
    }
    return args[k].form;
  }
  TSNode a = kl_unparen(kl_node_named_child(argl, k));
  if (kl_node_is_kind(a, KL_KIND_CAST_EXPRESSION)) a = kl_unparen(kl_fld(f, a, "value"));
  int id = kl_var_node(f, a);
  if (id >= 0 && code % 4) {
    const char *cn = kl_arena_printf(f->fx->a, "%s.%c", f->vars[id].name, "xyz"[code % 4 - 1]);
    id = kl_var_find(f, cn, strlen(cn));
  }
  if (id < 0 || !kl_bits_has(&f->atoms, id)) return kl_affine_unknown();
  kl_bits_set(names, id);
  return kl_affine_atom((uint16_t)id);
}

/* Lift the helper's comparisons into the caller: `first + r < nrows` in the helper, given
 * `first = tgpig.x * 4`, is `4 * tgpig.x + r < nrows` here, evidence that the grid can overrun
 * what the caller indexes with tgpig.x. */
static void kl_lift_cmps(struct kl_frame *f, const struct kl_memo *mm, TSNode call,
                         const struct kl_val *args, uint32_t nargs) {
  TSNode argl = kl_fld(f, call, "arguments");
  for (size_t i = 0; i < mm->ncmps; i++) {
    const struct kl_cmp *c = &mm->cmps[i];
    bool any = c->any_counter;
    for (size_t w = 0; w < KL_FLOW_BITS / 64; w++) any = any || c->counters.w[w];
    /* The parameter plus a uniform amount of the helper's own (`i + t * m < n / radix`) bounds a
     * sub-range the helper computes, not the caller's value; plus a loop counter
     * (`r0 + row < ne01`) it bounds the value itself, at the counter's start. */
    if (c->form.c0_symbolic && !any && !c->fixed_counter) continue;
    struct kl_affine out =
        c->form.c0_symbolic ? kl_affine_symbol() : kl_affine_const(c->form.known ? c->form.c0 : 0);
    bool ok = true;
    struct kl_bits names, counters;
    memset(&names, 0, sizeof names);
    memset(&counters, 0, sizeof counters);
    for (uint8_t t = 0; t < c->form.n && ok; t++) {
      struct kl_affine up =
          kl_lift_atom(f, mm, argl, args, nargs, c->form.t[t].atom, &names, &counters);
      if (!up.known && !up.partial) {
        ok = false;
        break;
      }
      struct kl_affine k = c->form.t[t].symbolic ? kl_affine_symbol_id(c->form.t[t].sym)
                                                 : kl_affine_const(c->form.t[t].k);
      out = kl_affine_add(out, kl_affine_mul(k, up), 1);
    }
    if (!ok || (!out.known && !out.partial) || !out.n) continue;
    bool dup = false;
    for (size_t k = 0; k < f->ncmps && !dup; k++)
      dup = ts_node_eq(f->cmps[k].node, c->node) && kl_affine_equal(f->cmps[k].form, out);
    if (dup) continue;
    KL_VEC_PUSH(f->fx->a, f->cmps, f->ncmps, f->cap_cmps);
    struct kl_cmp *nc = &f->cmps[f->ncmps++];
    memset(nc, 0, sizeof *nc);
    nc->form = out;
    nc->node = c->node;
    nc->any_counter = any;
    nc->fixed_counter = c->fixed_counter;
    nc->names = names;
    nc->counters = counters;
  }
}

/* ---- Helper summaries shared between specialisations --------------------------------------- */

static bool kl_flow_share = true;

void kl_flow_share_walks(bool on) {
  kl_flow_share = on;
}

/* Whether memo entry mm is for question p's helper, control and first p->nargs arguments (in
 * any run). */
static bool kl_memo_key_same(const struct kl_memo *mm, const struct kl_memo *p) {
  if (mm->fn != p->fn || mm->ctrl != p->ctrl) return false;
  for (uint32_t k = 0; k < p->nargs && k < 16; k++)
    if (mm->args[k] != p->args[k] || mm->coords[k].c != p->coords[k].c ||
        mm->coords[k].comp != p->coords[k].comp || mm->coords[k].lane != p->coords[k].lane ||
        mm->coords[k].guarded != p->coords[k].guarded || mm->proxy[k] != p->proxy[k])
      return false;
  return true;
}

/* Whether memo entry mm answers question p (fn, ctrl and the first p->nargs arguments) in the
 * current run, as kl_call_helper's lookup decides. */
static bool kl_memo_answers(const struct kl_flow_ctx *fx, const struct kl_memo *mm,
                            const struct kl_memo *p) {
  if (mm->inst != fx->inst) return false;
  return kl_memo_key_same(mm, p);
}

/* The first memo entry that answers p, or SIZE_MAX. */
static size_t kl_memo_find(const struct kl_flow_ctx *fx, const struct kl_memo *p) {
  for (size_t i = 0; i < fx->nmemo; i++)
    if (kl_memo_answers(fx, &fx->memo[i], p)) return i;
  return SIZE_MAX;
}

/* Note memo question p, answered by entry hit (or SIZE_MAX), in every walk being recorded. */
static void kl_share_probe(struct kl_flow_ctx *fx, const struct kl_memo *p, size_t hit) {
  for (int a = 0; a < fx->nactive; a++) {
    struct kl_share *sh = fx->active[a];
    if (sh->bad) continue;
    /* An answer still being made (recursion) is not what a finished summary would give. */
    if (hit != SIZE_MAX && fx->memo[hit].busy) {
      sh->bad = true;
      continue;
    }
    size_t before = hit != SIZE_MAX && hit < sh->mi ? hit : SIZE_MAX;
    bool dup = false;
    for (size_t k = 0; k < sh->nprobes && !dup; k++)
      dup = sh->probe_hit[k] == before && sh->probes[k].nargs == p->nargs &&
            kl_memo_key_same(&sh->probes[k], p);
    if (dup) continue;
    if (sh->nprobes >= 64) { /* checking more would cost what the walk does */
      sh->bad = true;
      continue;
    }
    KL_VEC_PUSH(fx->a, sh->probes, sh->nprobes, sh->cap_probes);
    KL_VEC_PUSH(fx->a, sh->probe_hit, sh->nprobes, sh->cap_probe_hit);
    sh->probes[sh->nprobes] = *p;
    sh->probe_hit[sh->nprobes++] = before;
  }
}

/* The rest of the call's starting point (struct kl_call_ext). */
static void kl_call_ext(struct kl_frame *f, TSNode call, const struct kl_val *args, uint32_t nargs,
                        const TSNode *kids, uint32_t nkids, const uint8_t *proxy,
                        enum kl_scope ctrl, struct kl_call_ext *e) {
  memset(e, 0, sizeof *e);
  e->top = kl_node_null(f->call) ? call : f->call;
  e->depth = f->depth;
  e->nargs = nargs;
  for (uint32_t i = 0; i < nargs && i < 16; i++) {
    e->sized[i] = args[i].sized;
    e->as[i] = -1;
    char comp = 'x';
    if (proxy[i])
      for (uint8_t t = 0; t < args[i].form.n; t++)
        if (f->vars[args[i].form.t[t].atom].comp > comp)
          comp = f->vars[args[i].form.t[t].atom].comp;
    e->comp[i] = comp;
    if (args[i].root < 0) continue;
    e->as[i] = (int8_t)f->vars[args[i].root].as;
  }
  if (ctrl <= KL_SCOPE_UNIFORM) return;
  e->pushed = true;
  e->ret = f->ret_scope >= ctrl || f->nctrl == 0;
  e->cont = !e->ret && f->cont_scope >= ctrl;
  e->cause = e->ret ? f->ret_cause : e->cont ? f->cont_cause : f->ctrl[f->nctrl - 1].node;
  e->kind = e->ret ? KL_CAUSE_RETURN : e->cont ? KL_CAUSE_EXIT : f->ctrl[f->nctrl - 1].kind;
}

static bool kl_call_ext_same(const struct kl_call_ext *a, const struct kl_call_ext *b) {
  if (!ts_node_eq(a->top, b->top) || a->depth != b->depth || a->nargs != b->nargs ||
      a->pushed != b->pushed || a->ret != b->ret || a->cont != b->cont || a->kind != b->kind ||
      !ts_node_eq(a->cause, b->cause))
    return false;
  for (uint32_t i = 0; i < a->nargs && i < 16; i++)
    if (a->sized[i] != b->sized[i] || a->as[i] != b->as[i] || a->comp[i] != b->comp[i])
      return false;
  return true;
}

/* The fold of name the current run would give, without touching the cache or the records. */
static const char *kl_fold_peek(void *ctx, const char *name, size_t len) {
  struct kl_flow_ctx *fx = ctx;
  return kl_fold_text(fx, fx->inst, name, len);
}

static bool kl_fold_would(struct kl_flow_ctx *fx, const struct kl_touch *t, size_t *room) {
  size_t slot = kl_fnv(t->name, t->len) & (KL_FLOW_FOLD_CACHE - 1);
  for (size_t probe = 0; probe < KL_FLOW_FOLD_CACHE; probe++) {
    const struct kl_fold_entry *e = &fx->fold[(slot + probe) & (KL_FLOW_FOLD_CACHE - 1)];
    if (e->name && (e->len != t->len || memcmp(e->name, t->name, t->len))) continue;
    if (e->name) return e->known == t->known && (!t->known || e->value == t->value);
    break;
  }
  if (!*room) return false;
  --*room;
  const char *text = kl_fold_text(fx, fx->inst, t->name, t->len);
  struct kl_consteval_env env = {kl_fold_peek, NULL, NULL, fx, false};
  int64_t r = 0;
  bool known = text && kl_consteval_eval(text, strlen(text), &env, &r);
  return known == t->known && (!known || r == t->value);
}

/* Whether summary sh, made in another specialisation of the kernel, is what walking the helper
 * here would make, step for step: the same starting point, every name it read answered alike,
 * every memo question answered alike, and room for what it adds. */
static bool kl_share_fits(struct kl_flow_ctx *fx, const struct kl_share *sh,
                          const struct kl_call_ext *ext) {
  if (sh->kernel != fx->kernel || !kl_call_ext_same(&sh->ext, ext)) return false;
  for (size_t i = 0; i < sh->nlooks; i++) {
    const char *t = kl_fold_text(fx, fx->inst, sh->looks[i].name, sh->looks[i].len);
    if (t != sh->looks[i].text && (!t || !sh->looks[i].text || strcmp(t, sh->looks[i].text)))
      return false;
  }
  size_t room = 0;
  for (size_t i = 0; i < KL_FLOW_FOLD_CACHE; i++) room += !fx->fold[i].name;
  for (size_t i = 0; i < sh->ntouches; i++)
    if (!kl_fold_would(fx, &sh->touches[i], &room)) return false;
  for (size_t i = 0; i < sh->nprobes; i++) {
    size_t h = kl_memo_find(fx, &sh->probes[i]);
    if (sh->probe_hit[i] == SIZE_MAX) {
      if (h != SIZE_MAX) return false;
      continue;
    }
    if (h == SIZE_MAX) return false;
    const struct kl_memo *was = &fx->memo[sh->probe_hit[i]], *is = &fx->memo[h];
    if (is->busy || is->result != was->result || is->cmps != was->cmps ||
        is->ncmps != was->ncmps || is->param_of != was->param_of)
      return false;
  }
  return true;
}

/* Take summary sh here: the memo entries its walk made, its access records under this
 * specialisation's name, its folds and lookups (into this run's cache and records), and the
 * frame serial numbers it used. Returns the helper's own new entry. */
static size_t kl_share_take(struct kl_flow_ctx *fx, const struct kl_share *sh) {
  size_t own = fx->nmemo;
  for (size_t i = sh->mi; i < sh->memo1; i++) {
    KL_VEC_PUSH(fx->a, fx->memo, fx->nmemo, fx->cap_memo);
    struct kl_memo *c = &fx->memo[fx->nmemo++];
    *c = fx->memo[i];
    c->inst = fx->inst;
    c->run = fx->run;
    c->share = NULL;
    c->busy = false;
  }
  struct kl_flow *out = fx->out;
  for (size_t k = 0; k < sh->nacc; k++) {
    KL_VEC_PUSH(fx->a, out->accesses, out->naccesses, out->cap_accesses);
    struct kl_flow_access *acc = &out->accesses[out->naccesses++];
    *acc = sh->acc[k];
    acc->inst = fx->inst ? fx->inst->label : NULL;
    acc->ninsts = fx->ninsts;
  }
  fx->serial += sh->serials;
  for (size_t i = 0; i < sh->ntouches; i++) {
    int64_t v;
    kl_fold_name(fx, sh->touches[i].name, sh->touches[i].len, &v);
  }
  for (size_t i = 0; i < sh->nlooks; i++) kl_fold_lookup(fx, sh->looks[i].name, sh->looks[i].len);
  /* An outer walk being recorded asked the same memo questions. */
  for (size_t i = 0; i < sh->nprobes; i++) {
    const struct kl_memo *p = &sh->probes[i];
    kl_share_probe(fx, p, sh->probe_hit[i] == SIZE_MAX ? SIZE_MAX : kl_memo_find(fx, p));
  }
  return own;
}

static enum kl_scope kl_call_helper(struct kl_frame *f, const struct kl_function *callee,
                                    TSNode call, const struct kl_val *args, uint32_t nargs) {
  struct kl_flow_ctx *fx = f->fx;
  enum kl_scope ctrl = kl_frame_ctrl(f);
  enum kl_scope widest = KL_SCOPE_UNIFORM;
  for (uint32_t i = 0; i < nargs; i++) widest = kl_max(widest, args[i].scope);
  if (f->depth >= KL_FLOW_MAX_DEPTH) return widest;
  TSNode argl = kl_fld(f, call, "arguments");
  struct kl_coord_bind coords[16];
  uint8_t proxy[16];
  memset(coords, 0, sizeof coords);
  memset(proxy, 0, sizeof proxy);
  uint32_t nkids;
  const TSNode *kids = kl_kids(f, argl, &nkids);
  for (uint32_t k = 0; k < nargs && k < 16 && k < callee->nparams && k < nkids; k++) {
    coords[k] = kl_coord_arg(f, kids[k], &callee->params[k]);
    if (!coords[k].c) proxy[k] = kl_proxy_arg(f, &args[k], &callee->params[k]);
  }
  /* Per-function summaries keyed by the scopes of the arguments, the coordinates they bind (with
   * the caller's bounds on them), and the calling control. */
  struct kl_memo key;
  memset(&key, 0, sizeof key);
  key.fn = callee;
  key.inst = fx->inst;
  key.ctrl = ctrl;
  key.nargs = nargs;
  for (uint32_t k = 0; k < nargs && k < 16; k++) key.args[k] = args[k].scope;
  memcpy(key.coords, coords, sizeof coords);
  memcpy(key.proxy, proxy, sizeof proxy);
  size_t hit = kl_memo_find(fx, &key);
  if (fx->nactive) kl_share_probe(fx, &key, hit);
  if (hit != SIZE_MAX) {
    struct kl_memo *mm = &fx->memo[hit];
    kl_lift_cmps(f, mm, call, args, nargs);
    return mm->result;
  }
  struct kl_call_ext ext;
  kl_call_ext(f, call, args, nargs, kids, nkids, proxy, ctrl, &ext);
  /* Another specialisation of the kernel may have walked this helper just so. */
  bool share = kl_flow_share && fx->inst && fx->ninsts > 1 && fx->kernel;
  for (size_t i = 0; share && i < fx->nmemo; i++) {
    struct kl_memo *mm = &fx->memo[i];
    if (!mm->share || mm->inst == fx->inst || mm->nargs != nargs || !kl_memo_key_same(mm, &key) ||
        !kl_share_fits(fx, mm->share, &ext))
      continue;
    size_t own = kl_share_take(fx, mm->share);
    fx->out->shared++;
    kl_lift_cmps(f, &fx->memo[own], call, args, nargs);
    return fx->memo[own].result;
  }
  KL_VEC_PUSH(fx->a, fx->memo, fx->nmemo, fx->cap_memo);
  size_t mi = fx->nmemo++;
  fx->memo[mi] = key;
  fx->memo[mi].result = widest; /* what a recursive call sees while this one is in progress */
  fx->memo[mi].run = fx->run;
  fx->memo[mi].busy = true;
  uint32_t serial0 = fx->serial;
  struct kl_share *sh = NULL;
  if (share && fx->nactive < (int)(sizeof fx->active / sizeof fx->active[0])) {
    sh = kl_arena_alloc(fx->a, sizeof *sh);
    sh->kernel = fx->kernel;
    sh->ext = ext;
    sh->mi = mi;
    sh->acc0 = fx->out->naccesses;
    fx->active[fx->nactive++] = sh;
  }
  ++fx->serial;
  struct kl_frame *g = kl_arena_xmalloc(sizeof *g);
  kl_frame_init(g, fx, callee, f->depth + 1);
  g->call = kl_node_null(f->call) ? call : f->call;
  for (size_t i = 0; i < callee->nparams && i < nargs; i++) {
    if (!callee->params[i].name) continue;
    int id = kl_var_find(g, callee->params[i].name, strlen(callee->params[i].name));
    if (id < 0) continue;
    /* A thread coordinate passed down keeps its meaning (ggml's `_impl(..., tgpig, tiisg)`),
     * and a bound the caller checked before the call still holds. */
    const struct kl_coord_bind *cb = i < 16 ? &coords[i] : NULL;
    if (cb && cb->c) {
      kl_frame_coord(g, id, cb->c, cb->scalar ? "uint" : "uint3");
      if (cb->scalar) {
        /* Maybe one component (`tpitg.y`): a lane only if the caller's is, and of its dimension. */
        g->vars[id].lane = cb->lane;
        g->vars[id].comp = cb->comp;
        g->env[id].scope = kl_coord_scope(g, cb->c, cb->comp);
        if (cb->guarded) kl_bits_set(&g->guards, id);
        continue;
      }
      for (int k = 0; k < 3; k++) {
        const char *gn = kl_arena_printf(fx->a, "%s.%c", g->vars[id].name, "xyz"[k]);
        int gc = kl_var_find(g, gn, strlen(gn));
        if (gc >= 0 && (cb->guarded & (1u << k))) kl_bits_set(&g->guards, gc);
      }
      continue;
    }
    if (i < 16 && proxy[i]) {
      /* A thread-derived value passed down (`first`, `row`) is an atom of the helper standing for
       * it: the helper's accesses with it are checked, and its comparisons lifted back. */
      g->vars[id].coord = g->vars[id].proxy = true;
      kl_bits_set(&g->coords, id);
      kl_bits_set(&g->atoms, id);
      g->env[id].scope = args[i].scope;
      g->env[id].sized = args[i].sized;
      g->env[id].form = kl_affine_atom((uint16_t)id);
      g->env[id].clamped = (proxy[i] & KL_PROXY_CLAMPED) != 0;
      char comp = 'x';
      for (uint8_t t = 0; t < args[i].form.n; t++)
        if (f->vars[args[i].form.t[t].atom].comp > comp)
          comp = f->vars[args[i].form.t[t].atom].comp;
      g->vars[id].comp = comp;
      if (proxy[i] & KL_PROXY_GUARDED) kl_bits_set(&g->guards, id);
      continue;
    }
    g->env[id].scope = args[i].scope;
    g->env[id].sized = args[i].sized;
    if (args[i].root >= 0) {
      g->env[id].root = id;
      g->vars[id].as = f->vars[args[i].root].as;
      g->env[id].form = kl_affine_unknown();
    } else {
      g->env[id].form = kl_opaque(args[i].scope);
    }
  }
  /* The caller's control reaches every barrier in the helper (kl_call_ext read it). */
  if (ext.pushed) {
    kl_push_ctrl(g, ctrl, ext.cause, ext.kind);
  }
  kl_frame_run(g);
  enum kl_scope res = kl_max(g->result, widest);
  struct kl_memo *mm = &fx->memo[mi]; /* the helper may have grown the memo */
  mm->result = res;
  mm->busy = false;
  int16_t *param_of = kl_arena_alloc(fx->a, sizeof *param_of * (size_t)(g->nvars ? g->nvars : 1));
  for (int v = 0; v < g->nvars; v++) param_of[v] = -1;
  for (size_t i = 0; i < callee->nparams && i < nargs && i < 16; i++) {
    if (!callee->params[i].name) continue;
    int id = kl_var_find(g, callee->params[i].name, strlen(callee->params[i].name));
    if (id < 0) continue;
    if (proxy[i] || (coords[i].c && coords[i].scalar)) {
      param_of[id] = (int16_t)(i * 4);
    } else if (coords[i].c) {
      for (int k = 0; k < 3; k++) {
        const char *gn = kl_arena_printf(fx->a, "%s.%c", g->vars[id].name, "xyz"[k]);
        int gc = kl_var_find(g, gn, strlen(gn));
        if (gc >= 0) param_of[gc] = (int16_t)(i * 4 + 1 + k);
      }
    }
  }
  mm->cmps = g->cmps;
  mm->ncmps = g->ncmps;
  mm->param_of = param_of;
  mm->nparam_of = g->nvars;
  kl_frame_delete(g);
  if (sh) {
    fx->nactive--;
    bool ok = !sh->bad;
    if (ok) {
      sh->memo1 = fx->nmemo;
      /* The records as the walk left them: an enclosing frame of the same helper (h calls g
       * calls h) settles its evidence on them later. */
      sh->nacc = fx->out->naccesses - sh->acc0;
      sh->acc = kl_arena_alloc(fx->a, (sh->nacc + 1) * sizeof *sh->acc);
      if (sh->nacc) memcpy(sh->acc, fx->out->accesses + sh->acc0, sh->nacc * sizeof *sh->acc);
      sh->serials = fx->serial - serial0;
      mm->share = sh;
    }
  }
  kl_lift_cmps(f, mm, call, args, nargs);
  return res;
}

/* ---- Specialisations ------------------------------------------------------------------------ */

/* Whether the identifier name occurs in the bytes [start, end) of the unit. */
/* The specialisations of kernel fn (analyzer/ir/spec.h, which the IR lowering shares). */
static size_t kl_flow_insts(struct kl_flow_ctx *fx, const struct kl_function *fn,
                            const struct kl_dispatch *calls, size_t ncalls,
                            const struct kl_inst *xinsts, size_t nxinsts,
                            struct kl_flow_inst **out) {
  struct kl_spec *sp = NULL;
  size_t n = kl_spec_enumerate(fx->a, fx->m, fn, calls, ncalls, xinsts, nxinsts, &sp);
  struct kl_flow_inst *all = kl_arena_alloc(fx->a, (n + 1) * sizeof *all);
  for (size_t i = 0; i < n; i++) {
    struct kl_flow_bind *b = kl_arena_alloc(fx->a, (sp[i].n + 1) * sizeof *b);
    for (size_t k = 0; k < sp[i].n; k++)
      b[k] = (struct kl_flow_bind){sp[i].b[k].name, sp[i].b[k].text};
    all[i] = (struct kl_flow_inst){b, sp[i].n, sp[i].label, sp[i].hosts, sp[i].nhosts,
                                   sp[i].cap_hosts};
  }
  fx->inst = NULL;
  *out = all;
  return n;
}

/* Whether every threadgroup of launch d is whole along dimension i (0 x, 1 y): a grid of
 * threads (dispatchThreads, MLX, torch) not a multiple of the threadgroup leaves a narrower one at
 * the edge. */
static bool kl_flow_tg_whole(const struct kl_dispatch *d, int i) {
  if (d->grid_groups) return true;
  int64_t t = d->tg_size[i];
  if (t < 1) return false;
  if (d->grid_known) return d->grid_size[i] % t == 0;
  return d->grid_multiple[i] >= 1 && d->grid_multiple[i] % t == 0;
}

/* The y and z thread positions (bits 1, 2) that are the same across each SIMD group in every
 * launch of kernel fn: rows are whole SIMD groups when x is a multiple of 32, planes when x times
 * y is, in every threadgroup of the launch (the edge ones too). None when no launch is known. */
static uint8_t kl_flow_simd_dims(const struct kl_model *m, const struct kl_function *fn,
                                 const struct kl_dispatch *calls, size_t ncalls) {
  uint8_t dims = 6;
  bool any = false;
  for (size_t i = 0; i < ncalls; i++) {
    const struct kl_dispatch *d = &calls[i];
    if (!kl_model_names(m, d->kernel, d->kernel_prefix, fn)) continue;
    any = true;
    uint8_t k = 0;
    if (!d->tg_present || !(d->tg_dims & 1) || d->tg_size[0] < 1 || !kl_flow_tg_whole(d, 0))
      k = 0;
    else if (d->tg_size[0] % 32 == 0)
      k = 6;
    else if ((d->tg_dims & 2) && d->tg_size[1] >= 1 && d->tg_size[0] * d->tg_size[1] % 32 == 0 &&
             kl_flow_tg_whole(d, 1))
      k = 4;
    dims &= k;
  }
  return any ? dims : 0;
}

/* Whether kernel fn has launches and every one gives a threadgroup whose x is a runtime value
 * (neither constant, nor clamped, nor the grid by mistake). */
static bool kl_flow_tg_runtime_x(const struct kl_model *m, const struct kl_function *fn,
                                 const struct kl_dispatch *calls, size_t ncalls) {
  bool any = false;
  for (size_t i = 0; i < ncalls; i++) {
    const struct kl_dispatch *d = &calls[i];
    if (!kl_model_names(m, d->kernel, d->kernel_prefix, fn)) continue;
    if (!d->tg_present || (d->tg_dims & 1) || d->tg_known || d->tg_clamped || d->tg_grid ||
        d->tg_granule > 1)
      return false;
    any = true;
  }
  return any;
}

/* Whether the current run's specialisation answers every name an earlier run recs[i] of the
 * kernel asked about as that run's did: then its walk would be that walk, step for step, and
 * what it would add is added from the record instead (its access records again, under this
 * specialisation's name). MLX instantiates a
 * kernel for every tile shape, and most of a kernel's code reads none of them. */
static bool kl_flow_replay(struct kl_flow_ctx *fx, const struct kl_run_rec *recs, size_t nrecs) {
  struct kl_flow *out = fx->out;
  for (size_t i = 0; i < nrecs; i++) {
    const struct kl_run_rec *r = &recs[i];
    bool same = true;
    for (size_t k = 0; k < r->nlooks && same; k++) {
      const char *t = kl_fold_text(fx, fx->inst, r->looks[k].name, r->looks[k].len);
      same = t == r->looks[k].text || (t && r->looks[k].text && !strcmp(t, r->looks[k].text));
    }
    if (!same) continue;
    for (size_t k = r->acc0; k < r->acc1; k++) {
      KL_VEC_PUSH(fx->a, out->accesses, out->naccesses, out->cap_accesses);
      struct kl_flow_access *acc = &out->accesses[out->naccesses++];
      *acc = out->accesses[k];
      acc->inst = fx->inst ? fx->inst->label : NULL;
    }
    return true;
  }
  return false;
}

void kl_flow_analyze(struct kl_arena *a, const struct kl_model *m, const struct kl_dispatch *calls,
                     size_t ncalls, const struct kl_inst *xinsts, size_t nxinsts,
                     const struct kl_settings *s, struct kl_flow *out) {
  memset(out, 0, sizeof *out);
  struct kl_flow_ctx *fx = kl_arena_alloc(a, sizeof *fx);
  fx->a = a;
  fx->m = m;
  fx->u = m->unit;
  fx->out = out;
  fx->settings = s;
  fx->fld = kl_arena_alloc(a, KL_FLD_SLOTS * sizeof *fx->fld);
  for (size_t i = 0; i < m->nfunctions; i++) {
    const struct kl_function *fn = &m->functions[i];
    if (!fn->is_kernel || kl_node_null(fn->body)) continue;
    struct kl_flow_inst *insts = NULL;
    size_t n = kl_flow_insts(fx, fn, calls, ncalls, xinsts, nxinsts, &insts);
    fx->simd_dims = kl_flow_simd_dims(m, fn, calls, ncalls);
    fx->tg_runtime_x = kl_flow_tg_runtime_x(m, fn, calls, ncalls);
    fx->kernel = fn;
    struct kl_run_rec *recs = n > 1 ? kl_arena_alloc(a, n * sizeof *recs) : NULL;
    size_t nrecs = 0;
    for (size_t k = 0; k < n; k++) {
      fx->inst = insts[k].label ? &insts[k] : NULL;
      fx->ninsts = (uint16_t)n;
      fx->run++;
      /* A run with no name shares its helper summaries with other kernels' unnamed runs (the
       * memo is keyed by specialisation), so it may skip a helper walk a named run makes: it is
       * neither replayed nor kept for replay. */
      if (fx->inst && kl_flow_replay(fx, recs, nrecs)) continue;
      memset(fx->fold, 0, sizeof fx->fold);
      memset(&fx->rec, 0, sizeof fx->rec);
      fx->rec.acc0 = out->naccesses;
      fx->recording = recs != NULL && fx->inst != NULL;
      struct kl_frame *f = kl_arena_xmalloc(sizeof *f);
      kl_frame_init(f, fx, fn, 0);
      kl_frame_run(f);
      kl_frame_delete(f);
      fx->rec.acc1 = out->naccesses;
      if (fx->recording) recs[nrecs++] = fx->rec;
      fx->recording = false;
    }
  }
  memset(fx->fold, 0, sizeof fx->fold);
  fx->inst = NULL;
  fx->kernel = NULL;
  /* The memos serve the walks only: the facts the rules read hold no reference to them. */
  kl_node_map_free(&fx->callees);
  kl_node_map_free(&fx->parents);
  kl_node_map_free(&fx->inits);
  kl_node_map_free(&fx->fields);
  kl_node_map_free(&fx->kids);
  kl_node_map_free(&fx->texts);
  free(fx->mconsts);
}
