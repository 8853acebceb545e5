/* Unit tests for bounds-guard's access list (analyzer/passes/bgaccess.h) on IR programs built by
 * hand over the nodes of a small parsed kernel: the element a record is known by (`x[gid]` of
 * `x[gid].d`, a field of an element bound by reference, the target of `*p = v`), the load and
 * store of `y[gid] += 1` as one record, a thread's own array of device pointers (its slot is no
 * device access, a read through it is, of the buffer stored there), threadgroup memory and dead
 * code left out, fields read through one pointer kept apart, records joined across two
 * lowerings of one label and not across labels, and the count of labels per kernel; and the
 * facts keyed by the list (a store guarded in one specialisation only). */
#include "analyzer/passes/bgaccess.h"

#include <stdlib.h>

#include "analyzer/passes/facts.h"
#include "analyzer/passes/guards.h"
#include "analyzer/passes/ranges.h"
#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test_unit.h"

static const char *const SRC =
    "struct blk { half d; uchar qs[16]; };\n"
    "kernel void k(device const blk *x [[buffer(0)]], device float *y [[buffer(1)]],\n"
    "              uint gid [[thread_position_in_grid]]) {\n"
    "  float s = x[gid].d;\n"
    "  y[gid] += 1;\n"
    "  device float *p = y + gid;\n"
    "  *p = s;\n"
    "  device const blk &xb = x[gid];\n"
    "  s = xb.d;\n"
    "  device const blk *xr = x + gid;\n"
    "  s = xr->d;\n"
    "  s = rows[0][gid];\n"
    "}\n";

static struct fixture FX;
static struct kl_arena *A;

/* The smallest node of the source spanning the n-th occurrence (from 0) of text. */
static TSNode node_of(const char *text, int nth) {
  const char *at = SRC;
  for (int i = 0; at && i <= nth; i++) at = strstr(i ? at + 1 : at, text);
  if (!at) return (TSNode){{0}, NULL, NULL};
  uint32_t s = (uint32_t)(at - SRC), e = s + (uint32_t)strlen(text);
  return ts_node_named_descendant_for_byte_range(ts_tree_root_node(FX.unit.tree), s, e);
}

static const char *text_of(TSNode n) {
  if (kl_node_null(n)) return "(null)";
  uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
  return kl_arena_strndup(A, SRC + s, e - s);
}

static uint32_t at(uint32_t v, TSNode n) {
  P->ins[v].node = n;
  return v;
}

static struct kl_var XV = {.name = "x", .type = "blk", .as = KL_AS_DEVICE, .is_pointer = true,
                           .attr_index = 0};
static struct kl_var YV = {.name = "y", .type = "float", .as = KL_AS_DEVICE, .is_pointer = true,
                           .attr_index = 1};

static uint32_t arg(uint32_t b, struct kl_var *v) {
  uint32_t a = kl_ir_emit(P, b, KL_IR_ARG, NULL, 0);
  P->ins[a].var = v;
  return a;
}

static uint32_t member(uint32_t b, uint32_t base, const char *name, TSNode n) {
  uint32_t v = at(p_op(b, KL_IR_MEMBER, base, 0, 0), n);
  P->ins[v].name = name;
  return v;
}

static uint32_t mem(uint32_t b, enum kl_ir_op op, uint32_t addr, uint32_t val, uint8_t as,
                    TSNode n) {
  uint32_t v = at(p_op(b, op, addr, val, 0), n);
  P->ins[v].as = as;
  return v;
}

/* The program over SRC: every access of the source, and a threadgroup load and a dead store. */
static struct kl_ir_fn *program(const char *inst) {
  prog_new(A);
  P->inst = inst;
  uint32_t b = P->body, x = arg(b, &XV), y = arg(b, &YV);
  uint32_t gid = at(p_coord(b, "thread_position_in_grid", 0), node_of("gid", 1));
  /* s = x[gid].d */
  uint32_t e = at(p_index(b, x, gid, 18), node_of("x[gid]", 0));
  uint32_t s = mem(b, KL_IR_LOAD, member(b, e, "d", node_of("x[gid].d", 0)), 0, KL_AS_DEVICE,
                   node_of("x[gid].d", 0));
  /* y[gid] += 1: a load and a store at one node */
  uint32_t ya = at(p_index(b, y, gid, 4), node_of("y[gid]", 0));
  uint32_t old = mem(b, KL_IR_LOAD, ya, 0, KL_AS_DEVICE, node_of("y[gid]", 0));
  mem(b, KL_IR_STORE, ya, p_bin(b, KL_IR_ADD, old, p_const(b, 1)), KL_AS_DEVICE,
      node_of("y[gid] += 1", 0));
  /* p = y + gid; *p = s: the store is lowered at its assignment, its address made elsewhere */
  uint32_t pa = at(p_index(b, y, gid, 4), node_of("y + gid", 0));
  mem(b, KL_IR_STORE, pa, s, KL_AS_DEVICE, node_of("*p = s", 0));
  /* xb = x[gid]; xb.d */
  uint32_t xb = at(p_index(b, x, gid, 18), node_of("x[gid]", 1));
  mem(b, KL_IR_LOAD, member(b, xb, "d", node_of("xb.d", 0)), 0, KL_AS_DEVICE,
      node_of("xb.d", 0));
  /* xr = x + gid; xr->d */
  uint32_t xr = at(p_index(b, x, gid, 18), node_of("x + gid", 0));
  mem(b, KL_IR_LOAD, member(b, xr, "d", node_of("xr->d", 0)), 0, KL_AS_DEVICE,
      node_of("xr->d", 0));
  /* rows[0] = y + gid (a slot of a thread's array of pointers), then rows[0][gid] */
  uint32_t rows = p_op(b, KL_IR_UNDEF, 0, 0, 0);
  uint32_t slot = at(p_index(b, rows, p_const(b, 0), 8), node_of("rows[0]", 0));
  mem(b, KL_IR_STORE, slot, at(p_index(b, y, gid, 4), node_of("y + gid", 0)), KL_AS_DEVICE,
      node_of("rows[0]", 0));
  uint32_t slot2 = at(p_index(b, rows, p_const(b, 0), 8), node_of("rows[0]", 0));
  mem(b, KL_IR_LOAD, at(p_index(b, slot2, gid, 4), node_of("rows[0][gid]", 0)), 0, KL_AS_DEVICE,
      node_of("rows[0][gid]", 0));
  /* A threadgroup load, and a device store in a branch no thread takes: not listed. */
  uint32_t tg = p_op(b, KL_IR_ALLOC, 0, 0, 0);
  P->ins[tg].as = KL_AS_THREADGROUP;
  mem(b, KL_IR_LOAD, at(p_index(b, tg, gid, 4), node_of("y[gid]", 0)), 0, KL_AS_THREADGROUP,
      node_of("y[gid]", 0));
  uint32_t then_b, else_b;
  p_if(b, p_const(b, 0), &then_b, &else_b);
  mem(then_b, KL_IR_STORE, at(p_index(then_b, y, gid, 4), node_of("y[gid]", 0)), s,
      KL_AS_DEVICE, node_of("y[gid] += 1", 0));
  return P;
}

/* Take f into l with the guards pass (for the array of pointers); returns its pairs' count. */
static size_t take(struct kl_bgaccess_list *l, struct kl_ir_fn *f,
                   struct kl_bgaccess_pair **pairs) {
  struct kl_scev *s = kl_scev_run(A, f);
  struct kl_ranges *r = kl_ranges_run(A, f, s, NULL);
  struct kl_guards *g = kl_guards_run(A, f, s, r);
  return kl_bgaccess_take(A, l, f, s, NULL, 0, g, pairs);
}

/* The record at the node whose text is t, or NULL. */
static const struct kl_bgaccess *find(const struct kl_bgaccess_list *l, const char *t) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(text_of(l->v[i].node), t)) return &l->v[i];
  return NULL;
}

static void test_records(void) {
  struct kl_bgaccess_list l;
  memset(&l, 0, sizeof l);
  struct kl_bgaccess_pair *p;
  size_t np = take(&l, program(NULL), &p);
  const char *want[] = {"x[gid]", "y[gid]", "*p", "xr->d", "rows[0][gid]"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    char name[64];
    snprintf(name, sizeof name, "bgaccess-node %s", want[i]);
    check(name, find(&l, want[i]) != NULL, "no record at `%s`", want[i]);
  }
  /* x[gid].d and xb.d (bound to x[gid]) are two records: two source elements. */
  size_t nx = 0;
  for (size_t i = 0; i < l.n; i++) nx += !strcmp(text_of(l.v[i].node), "x[gid]");
  check_int("bgaccess-reference-element", (long)nx, 2);
  check_int("bgaccess-records", (long)l.n, 6);
  /* y[gid] += 1: load and store, one record that writes. */
  const struct kl_bgaccess *y = find(&l, "y[gid]");
  size_t ny = 0;
  for (size_t i = 0; i < np; i++) ny += y && &l.v[p[i].rec] == y;
  check_int("bgaccess-load-store-pairs", (long)ny, 2);
  check("bgaccess-load-store-writes", y && y->store, "`y[gid] += 1` not a store");
  const struct kl_bgaccess *st = find(&l, "*p");
  check("bgaccess-assignment-target", st && st->store && st->buffer == &YV,
        "`*p = s` not a store into y");
  const struct kl_bgaccess *rows = find(&l, "rows[0][gid]");
  check("bgaccess-pointer-array", rows && rows->buffer == &YV && !rows->store,
        "a read through a thread's array of pointers not of the buffer stored there");
  check("bgaccess-pointer-slot", !find(&l, "rows[0]"), "the slot of a thread's array listed");
  check_int("bgaccess-pairs", (long)np, 7);
  const struct kl_bgaccess *xr = find(&l, "xr->d");
  check("bgaccess-owner", xr && xr->buffer == &XV && xr->run == 1 && !xr->inst,
        "`xr->d` not of x, in the first lowering, unspecialised");
}

static void test_join(void) {
  struct kl_bgaccess_list l;
  memset(&l, 0, sizeof l);
  struct kl_bgaccess_pair *p;
  take(&l, program("N = 2"), &p);
  size_t n = l.n;
  take(&l, program("N = 2"), &p);
  check_int("bgaccess-join-same-label", (long)l.n, (long)n);
  check("bgaccess-join-pairs", p[0].rec < n, "the second lowering's pairs not of the first's");
  take(&l, program("N = 4"), &p);
  check_int("bgaccess-other-label", (long)l.n, (long)(2 * n));
  kl_bgaccess_finish(&l);
  check_int("bgaccess-ninsts", (long)l.v[0].ninsts, 2);
  check_str("bgaccess-label", l.v[n].inst, "N = 4");
  check("bgaccess-run", l.v[0].run == 1 && l.v[n].run == 3, "runs %u and %u", l.v[0].run,
        l.v[n].run);
}

/* The facts keyed by the list: over a kernel in two
 * specialisations, a store guarded in one and not in the other is two records with their own
 * verdicts, each of its label, and the flow is not asked for. */
static void test_facts(void) {
  static const char *const src =
      "template <int W>\n"
      "kernel void fill(device uint *c [[buffer(0)]], constant uint &n [[buffer(1)]],\n"
      "                 uint gid [[thread_position_in_grid]]) {\n"
      "  if (W == 1 && gid >= n) return;\n"
      "  if (gid < n) c[gid + n] = 0;\n"
      "  c[gid] = W;\n"
      "}\n"
      "template [[host_name(\"f1\")]] [[kernel]] decltype(fill<1>) fill<1>;\n"
      "template [[host_name(\"f4\")]] [[kernel]] decltype(fill<4>) fill<4>;\n";
  struct fixture fx;
  if (kl_test_unit_build(&fx, "bgaccess facts parse", src) != 0) return;
  struct kl_facts f;
  kl_facts_compute(fx.a, &fx.model, NULL, 0, NULL, 0, NULL, &f);
  check("bgaccess-facts-list", f.has_bg && f.nbg == 4, "%zu records", f.nbg);
  int seen = 0;
  for (size_t i = 0; i < f.nbg; i++) {
    const struct kl_bgaccess *x = &f.bg[i];
    uint32_t s = ts_node_start_byte(x->node), e = ts_node_end_byte(x->node);
    if (e - s != 6 || strncmp(src + s, "c[gid]", 6) || !x->inst) continue;
    const struct kl_facts_guard *g = kl_facts_find_guard(&f, i);
    bool one = !strcmp(x->inst, "W = 1");
    char name[64];
    snprintf(name, sizeof name, "bgaccess-facts-%s", one ? "guarded" : "unguarded");
    check(name, g && g->thread_indexed && g->unguarded == !one && x->ninsts == 2 && x->store,
          "c[gid] where %s: held %d, unguarded %d, ninsts %u", x->inst, g != NULL,
          g && g->unguarded, x->ninsts);
    if (!one)
      check("bgaccess-facts-evidence", g && g->evidence && !kl_node_null(g->ev),
            "the check `gid < n` not evidence for c[gid] where W = 4");
    seen |= one ? 1 : 2;
  }
  check_int("bgaccess-facts-both", seen, 3);
  kl_test_unit_release(&fx);
}

int main(void) {
  if (kl_test_unit_build(&FX, "bgaccess parse", SRC) != 0) return 1;
  A = FX.a;
  test_records();
  test_join();
  kl_test_unit_release(&FX);
  test_facts();
  return failures != 0;
}
