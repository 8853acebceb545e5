/* bounds-guard's access list from the lowered kernels (see bgaccess.h). */
#include "analyzer/passes/bgaccess.h"

#include <stdlib.h>
#include <string.h>

#include "analyzer/core/node.h"
#include "analyzer/passes/divergence.h"
#include "analyzer/passes/guards.h"

TSNode kl_bgaccess_node(const struct kl_ir_fn *f, uint32_t v) {
  const struct kl_ir_ins *in = &f->ins[v];
  uint32_t s = ts_node_start_byte(in->node), e = ts_node_end_byte(in->node);
  uint32_t a = in->nops ? in->ops[0] : 0;
  /* Down the address past the fields and the subscripts of array fields (`.qs[j]`) and casts,
   * to the first subscript of a pointer. */
  bool field = false;
  for (int d = 0; a && a < f->nins && d < 32; d++) {
    const struct kl_ir_ins *x = &f->ins[a];
    if (x->op == KL_IR_INDEX && x->nops && f->ins[x->ops[0]].op != KL_IR_MEMBER) {
      /* Made elsewhere (`p = x + i` read as `*p`): the access is its own node -- but a field of
       * an element bound by reference (`xb.qs` after `device const T & xb = x[i]`) is of that
       * element. */
      if (kl_node_null(x->node)) break;
      bool within = ts_node_start_byte(x->node) >= s && ts_node_end_byte(x->node) <= e;
      /* A scalar bound by reference (`device float& r = y[i]; r = v; r += w;`): each use is
       * the element. */
      bool ref = !d && kl_node_is_kind(x->node, KL_KIND_SUBSCRIPT_EXPRESSION) &&
                 (kl_node_is_kind(in->node, KL_KIND_IDENTIFIER) ||
                  (kl_node_is_kind(in->node, KL_KIND_ASSIGNMENT_EXPRESSION) &&
                   kl_node_is_kind(kl_node_field(in->node, "left"), KL_KIND_IDENTIFIER)));
      if (!within && !ref && !(field && kl_node_is_kind(x->node, KL_KIND_SUBSCRIPT_EXPRESSION)))
        break;
      return x->node;
    }
    field |= x->op == KL_IR_MEMBER;
    if ((x->op != KL_IR_INDEX && x->op != KL_IR_MEMBER && x->op != KL_IR_CAST) || !x->nops) break;
    a = x->ops[0];
  }
  /* A store is lowered at its assignment (`*y = v`): the access is the target written. */
  if (kl_node_is_kind(in->node, KL_KIND_ASSIGNMENT_EXPRESSION)) {
    TSNode left = kl_node_field(in->node, "left");
    if (!kl_node_null(left)) return left;
  }
  return in->node;
}

/* The kernel's own call that leads to site (0: the kernel itself): its outermost site's. */
static TSNode kl_bgaccess_top_call(const struct kl_ir_fn *f, uint32_t site) {
  for (uint32_t guard = 0; site && site < f->nsites && guard < f->nsites; guard++) {
    if (!f->sites[site].parent) return f->sites[site].call;
    site = f->sites[site].parent;
  }
  return (TSNode){{0}, NULL, NULL};
}

static bool kl_bgaccess_same_call(TSNode a, TSNode b) {
  return kl_node_null(a) ? kl_node_null(b) : !kl_node_null(b) && ts_node_eq(a, b);
}

static bool kl_bgaccess_same_inst(const char *a, const char *b) {
  return a && b ? !strcmp(a, b) : a == b;
}

/* The function whose code holds an instruction of site: the innermost helper (a lambda's is the
 * code that defines it), or the kernel. */
static const struct kl_function *kl_bgaccess_owner(const struct kl_ir_fn *f, uint32_t site) {
  for (uint32_t guard = 0; site && site < f->nsites && guard < f->nsites; guard++) {
    if (f->sites[site].callee && !f->sites[site].lambda) return f->sites[site].callee;
    site = f->sites[site].parent;
  }
  return f->kernel;
}

/* The kernel's device buffer address a points into: down its subscripts, fields, casts and
 * pointer sums, and through a thread's own array to what was stored there (g, may be NULL);
 * NULL when it is not found. */
static const struct kl_var *kl_bgaccess_root(const struct kl_ir_fn *f, const struct kl_guards *g,
                                             uint32_t a) {
  for (int d = 0; a && a < f->nins && d < 32; d++) {
    const struct kl_ir_ins *x = &f->ins[a];
    if (x->op == KL_IR_ARG)
      return x->var && x->var->is_pointer && x->var->as == KL_AS_DEVICE ? x->var : NULL;
    uint32_t next = 0;
    /* A slot of a thread's own array of pointers kept as values: the access's own address is
     * the slot (thread memory), an address made from it the pointer stored there. */
    bool slot = x->op == KL_IR_INDEX && x->nops && f->ins[x->ops[0]].op == KL_IR_UNDEF;
    if (slot && !d) return NULL;
    if (slot)
      next = g ? kl_guards_find_carried(g, a) : 0;
    else if ((x->op == KL_IR_INDEX || x->op == KL_IR_MEMBER || x->op == KL_IR_CAST) && x->nops)
      next = x->ops[0];
    else if (x->op == KL_IR_BINOP && (x->sub == KL_IR_ADD || x->sub == KL_IR_SUB) && x->nops == 2)
      next = x->ops[0];
    else if (x->op == KL_IR_LOAD && g)
      next = kl_guards_find_carried(g, a);
    /* A pointer a loop steps (`sl++`) stays in the buffer it entered the loop with. */
    else if (x->op == KL_IR_PHI && x->sub == KL_IR_PHI_HEAD && x->nops)
      next = x->ops[0];
    a = next;
  }
  return NULL;
}

/* An access instruction of one lowering, by the record it makes: its node and kernel call. */
struct kl_bgaccess_cand {
  uint32_t start, end, call, ins;
};

static int kl_bgaccess_by_key(const void *x, const void *y) {
  const struct kl_bgaccess_cand *p = x, *q = y;
  if (p->start != q->start) return (p->start > q->start) - (p->start < q->start);
  if (p->end != q->end) return (p->end > q->end) - (p->end < q->end);
  if (p->call != q->call) return (p->call > q->call) - (p->call < q->call);
  return (p->ins > q->ins) - (p->ins < q->ins);
}

/* The device-access table's entry for instruction v (its node's start and call), or NULL. */
static const struct kl_access *kl_bgaccess_entry(const struct kl_ir_fn *f, uint32_t v,
                                                 const struct kl_access *t, size_t nt) {
  uint32_t s = ts_node_start_byte(f->ins[v].node);
  TSNode call = kl_bgaccess_top_call(f, f->ins[v].site);
  for (size_t i = 0; i < nt; i++)
    if (ts_node_start_byte(t[i].node) == s && kl_bgaccess_same_call(t[i].call, call)) return &t[i];
  return NULL;
}

/* The record of an earlier lowering of the same kernel and label (the run `join`) at node n and
 * call c, or l->n. */
static size_t kl_bgaccess_find(const struct kl_bgaccess_list *l, const struct kl_bgaccess_run *join,
                               TSNode n, TSNode c) {
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  for (size_t i = join->first; i < l->n; i++) {
    const struct kl_bgaccess *r = &l->v[i];
    if (r->kernel == join->kernel && kl_bgaccess_same_inst(r->inst, join->inst) &&
        ts_node_start_byte(r->node) == s && ts_node_end_byte(r->node) == e &&
        kl_bgaccess_same_call(r->call, c))
      return i;
  }
  return l->n;
}

size_t kl_bgaccess_take(struct kl_arena *a, struct kl_bgaccess_list *l, const struct kl_ir_fn *f,
                        const struct kl_scev *s, const struct kl_access *t, size_t nt,
                        const struct kl_guards *g, struct kl_bgaccess_pair **pairs) {
  uint32_t run = (uint32_t)l->nruns + 1;
  *pairs = NULL;
  /* An earlier lowering of the same kernel under the same label: its records are joined. */
  const struct kl_bgaccess_run *join = NULL;
  for (size_t i = 0; i < l->nruns && !join; i++)
    if (!l->runs[i].joined && l->runs[i].kernel == f->kernel &&
        kl_bgaccess_same_inst(l->runs[i].inst, f->inst))
      join = &l->runs[i];
  size_t first = l->n, j = join ? (size_t)(join - l->runs) : 0;
  KL_VEC_PUSH(a, l->runs, l->nruns, l->cap_runs);
  if (join) join = &l->runs[j];
  l->runs[l->nruns++] = (struct kl_bgaccess_run){
      f->kernel, f->inst ? kl_arena_strdup(a, f->inst) : NULL, first, 0, join != NULL};
  const char *inst = l->runs[l->nruns - 1].inst;
  /* The device accesses: those reaching a kernel's device buffer; where this lowering's
   * constants send no thread, nothing is accessed. */
  struct kl_bgaccess_cand *c = NULL;
  size_t nc = 0, cap = 0;
  for (uint32_t v = 1; v < f->nins; v++) {
    const struct kl_ir_ins *in = &f->ins[v];
    if ((in->op != KL_IR_LOAD && in->op != KL_IR_STORE && in->op != KL_IR_ATOMIC) || !in->nops)
      continue;
    /* (A thread's own array of device pointers is typed device by its elements: its root
     * tells.) */
    if ((in->as != KL_AS_DEVICE && in->as != KL_AS_NONE) || !kl_bgaccess_root(f, g, in->ops[0]))
      continue;
    if (kl_divergence_dead(f, v)) continue;
    TSNode n = kl_bgaccess_node(f, v), call = kl_bgaccess_top_call(f, in->site);
    KL_VEC_PUSH(f->arena, c, nc, cap);
    c[nc++] = (struct kl_bgaccess_cand){ts_node_start_byte(n), ts_node_end_byte(n),
                                        kl_node_null(call) ? 0 : ts_node_start_byte(call) + 1, v};
  }
  if (nc) qsort(c, nc, sizeof *c, kl_bgaccess_by_key);
  struct kl_bgaccess_pair *p = kl_arena_alloc(f->arena, (nc + 1) * sizeof *p);
  for (size_t i = 0, k = l->n; i < nc; i++) {
    uint32_t v = c[i].ins;
    const struct kl_ir_ins *in = &f->ins[v];
    bool same = i && c[i].start == c[i - 1].start && c[i].end == c[i - 1].end &&
                c[i].call == c[i - 1].call;
    if (!same) {
      TSNode n = kl_bgaccess_node(f, v), call = kl_bgaccess_top_call(f, in->site);
      k = join ? kl_bgaccess_find(l, join, n, call) : l->n;
      if (k == l->n) {
        KL_VEC_PUSH(a, l->v, l->n, l->cap);
        struct kl_bgaccess *r = &l->v[l->n++];
        memset(r, 0, sizeof *r);
        r->node = n;
        r->kernel = f->kernel;
        r->owner = kl_bgaccess_owner(f, in->site);
        r->call = call;
        r->inst = inst;
        r->run = run;
        /* Buffer and offset as the device-access table finds them, else walked here. */
        const struct kl_access *e = kl_bgaccess_entry(f, v, t, nt);
        uint32_t root;
        r->buffer = e ? e->buffer : kl_bgaccess_root(f, g, in->ops[0]);
        if (e)
          r->form = e->form;
        else if (s && kl_scev_address(s, in->ops[0], &root, &r->form))
          r->form = kl_scev_expand(s, r->form);
        else
          r->form = kl_affine_unknown();
      }
    }
    l->v[k].store |= in->op != KL_IR_LOAD;
    p[i] = (struct kl_bgaccess_pair){(uint32_t)k, v};
  }
  l->runs[l->nruns - 1].n = l->n - first;
  *pairs = p;
  return nc;
}

bool kl_bgaccess_again(struct kl_arena *a, struct kl_bgaccess_list *l, const struct kl_ir_fn *f,
                       const struct kl_bgaccess *recs, size_t n) {
  for (size_t i = 0; i < l->nruns; i++)
    if (!l->runs[i].joined && l->runs[i].kernel == f->kernel &&
        kl_bgaccess_same_inst(l->runs[i].inst, f->inst))
      return false;
  uint32_t run = (uint32_t)l->nruns + 1;
  size_t first = l->n;
  KL_VEC_PUSH(a, l->runs, l->nruns, l->cap_runs);
  const char *inst = f->inst ? kl_arena_strdup(a, f->inst) : NULL;
  l->runs[l->nruns++] = (struct kl_bgaccess_run){f->kernel, inst, first, n, false};
  for (size_t i = 0; i < n; i++) {
    KL_VEC_PUSH(a, l->v, l->n, l->cap);
    struct kl_bgaccess *r = &l->v[l->n++];
    *r = recs[i];
    r->inst = inst;
    r->run = run;
  }
  return true;
}

void kl_bgaccess_finish(struct kl_bgaccess_list *l) {
  const struct kl_function *last = NULL;
  uint16_t n = 0;
  for (size_t i = 0; i < l->n; i++) {
    struct kl_bgaccess *r = &l->v[i];
    if (r->kernel != last || i == 0) {
      last = r->kernel;
      n = 0;
      for (size_t k = 0; k < l->nruns; k++)
        if (l->runs[k].kernel == last && !l->runs[k].joined && n < UINT16_MAX) n++;
    }
    r->ninsts = n;
  }
}
