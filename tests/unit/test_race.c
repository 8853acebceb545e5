/* Unit tests for the threadgroup-race meeting test (analyzer/passes/race.h): own slots, a broadcast
 * slot, a tree step within one iteration and across the back edge, a store of one value by every
 * thread, a SIMD-group-ordered exchange, derived coordinates, names that do not cancel, and
 * indices known only by their range. */
#include "analyzer/passes/race.h"

#include "tests/unit/kl_test.h"

static struct kl_race_side side1(struct kl_race_form idx, bool store) {
  struct kl_race_side s = {0};
  s.idx[0] = idx;
  s.ndims = 1;
  s.store = store;
  return s;
}

static void add_cons(struct kl_race_side *s, struct kl_race_form e, enum kl_race_op op) {
  s->cons[s->ncons].e = e;
  s->cons[s->ncons++].op = op;
}

static struct kl_race_form lin(int64_t k, int64_t c) {
  return kl_race_add(kl_race_scale(kl_race_var(KL_RACE_LINEAR), k), kl_race_const(c), 1);
}

/* A memo answers a pair it has decided without trying a valuation, and the same as a fresh
 * decision; a pair of accesses to each thread's own element is decided with none tried. */
static void test_memo(void) {
  struct kl_race_memo *m = kl_race_memo_new();
  /* s from 32 while 0 < s, halving, in the loop at bytes [10, 90); n a uniform name. */
  struct kl_race_sym tree[1] = {{0}}, free_name[1] = {{0}};
  tree->loop = true;
  tree->lo = 10;
  tree->hi = 90;
  tree->init_known = true;
  tree->init = 32;
  tree->step = '>';
  tree->by = 1;
  tree->bound_known = true;
  tree->bound_op = KL_RACE_LT;
  tree->bound_flip = true;
  struct kl_race_order same = {0}, back = {true, 10, 90, false, {0, 0, 0}, 0};
  /* The tree step of main(): read tg[lid + s] and write tg[lid] under lid < s, s halving. */
  struct kl_race_form sv = kl_race_var(KL_RACE_NATOMS + 0);
  struct kl_race_side rd = side1(kl_race_add(lin(1, 0), sv, 1), false), wr = side1(lin(1, 0), true);
  add_cons(&rd, kl_race_add(lin(1, 0), sv, -1), KL_RACE_LT);
  add_cons(&wr, kl_race_add(lin(1, 0), sv, -1), KL_RACE_LT);
  uint64_t vals = 0, asked = 0, answered = 0;
  uint32_t left = 100000;
  bool first = kl_race_meet_memo(&rd, &wr, &same, tree, 1, NULL, 0, &left, m);
  uint32_t spent = 100000 - left;
  kl_race_memo_stats(m, &vals, &asked, &answered);
  check("memo-first", !first && spent > 0 && vals == spent && asked == 1 && answered == 0,
        "met %d, %u spent, %llu counted, %llu asked, %llu answered", first, spent,
        (unsigned long long)vals, (unsigned long long)asked, (unsigned long long)answered);
  bool again = kl_race_meet_memo(&rd, &wr, &same, tree, 1, NULL, 0, &left, m);
  kl_race_memo_stats(m, &vals, &asked, &answered);
  check("memo-again", !again && 100000 - left == spent && answered == 1,
        "met %d, %u spent in all (%u the first time), %llu answered", again, 100000 - left, spent,
        (unsigned long long)answered);
  /* Across the back edge the pair meets; the memo keeps the two orders apart. */
  bool crossed = kl_race_meet_memo(&wr, &rd, &back, tree, 1, NULL, 0, &left, m);
  bool crossed2 = kl_race_meet_memo(&wr, &rd, &back, tree, 1, NULL, 0, &left, m);
  check("memo-order", crossed && crossed2, "back edge missed: %d, then %d", crossed, crossed2);
  /* A pair the budget stopped is not remembered: asked again with valuations, it is decided. */
  uint32_t none = 1;
  struct kl_race_side rd2 = rd;
  rd2.idx[0] = kl_race_add(rd2.idx[0], kl_race_const(7), 1);
  bool stopped = kl_race_meet_memo(&rd2, &wr, &same, tree, 1, NULL, 0, &none, m);
  left = 100000;
  bool decided = kl_race_meet_memo(&rd2, &wr, &same, tree, 1, NULL, 0, &left, m);
  check("memo-budget", !stopped && none == 0 && decided == kl_race_meet(&rd2, &wr, &same, tree, 1,
                                                                        NULL, 0, NULL) &&
                           left < 100000,
        "stopped %d, decided %d with %u spent", stopped, decided, 100000 - left);
  /* tg[lid + n] written under lid < s + n and lid < 2 * n by both: each thread its own element
   * whatever n and s are, so no valuation is tried. */
  struct kl_race_sym syms[2] = {*free_name, *tree};
  struct kl_race_form nv = kl_race_var(KL_RACE_NATOMS + 0), s1 = kl_race_var(KL_RACE_NATOMS + 1);
  struct kl_race_side o1 = side1(kl_race_add(lin(1, 0), nv, 1), true), o2 = o1;
  add_cons(&o1, kl_race_add(lin(1, 0), kl_race_add(s1, nv, 1), -1), KL_RACE_LT);
  add_cons(&o2, kl_race_add(lin(1, 0), kl_race_scale(nv, 2), -1), KL_RACE_LT);
  left = 100000;
  check("own-elements", !kl_race_meet_memo(&o1, &o2, &same, syms, 2, NULL, 0, &left, m) &&
                            left == 100000,
        "met, or %u valuations tried", 100000 - left);
  /* The same pair across the back edge of the loop of s: s is independent there, still each
   * thread's own element (the index does not name s). */
  check("own-elements-crossed", !kl_race_meet_memo(&o1, &o2, &back, syms, 2, NULL, 0, &left, m) &&
                                    left == 100000,
        "met, or %u valuations tried", 100000 - left);
  /* tg[lid / 2]: two threads share each element, so the pair is tried and meets. */
  struct kl_race_derived half = {lin(1, 0), '/', 2};
  struct kl_race_side h1 = side1(kl_race_var(KL_RACE_DERIVED), true), h2 = h1;
  check("shared-elements", kl_race_meet_memo(&h1, &h2, &same, NULL, 0, &half, 1, NULL, m),
        "tg[lid / 2] from two threads missed");
  /* The index names s, which the back edge steps: one side is the next iteration's. */
  struct kl_race_side sw = side1(kl_race_add(lin(1, 0), s1, 1), true), sr = sw;
  sr.store = false;
  check("shifted-elements", kl_race_meet_memo(&sw, &sr, &back, syms, 2, NULL, 0, NULL, m),
        "tg[lid + s] across the step missed");
  kl_race_memo_delete(m);
}

static struct kl_race_side ranged(int64_t lo, int64_t hi, bool store) {
  struct kl_race_side s = side1(kl_race_const(0), store);
  s.ranged = s.certain = true;
  s.lo = lo;
  s.hi = hi;
  return s;
}

/* An index known only by its range: a store with itself meets when more threads make it than
 * the range has elements (not for a permutation's range, not under lid < 8, not when a
 * condition was left unread); a ranged read meets an indexed store when some reader's every
 * element is another thread's (not its own slot among them, as tg[lid] gives each thread);
 * two ranged accesses never meet. */
static void test_ranged(void) {
  struct kl_race_order same = {0};
  struct kl_race_side h = ranged(0, 15, true);
  check("ranged-crowd", kl_race_meet(&h, &h, &same, NULL, 0, NULL, 0, NULL), "16 of 64 missed");
  struct kl_race_side p = ranged(0, 63, true);
  check("ranged-perm", !kl_race_meet(&p, &p, &same, NULL, 0, NULL, 0, NULL), "a permutation met");
  struct kl_race_order big = {false, 0, 0, false, {256, 1, 1}, 0};
  check("ranged-launch", kl_race_meet(&p, &p, &big, NULL, 0, NULL, 0, NULL),
        "256 threads into 64 missed");
  struct kl_race_side few = ranged(0, 15, true);
  add_cons(&few, lin(1, -8), KL_RACE_LT);
  check("ranged-few", !kl_race_meet(&few, &few, &same, NULL, 0, NULL, 0, NULL), "8 of 16 met");
  struct kl_race_side unsure = h;
  unsure.certain = false;
  check("ranged-unsure", !kl_race_meet(&unsure, &unsure, &same, NULL, 0, NULL, 0, NULL),
        "an uncertain store met");
  struct kl_race_side two = h;
  check("ranged-two", !kl_race_meet(&h, &two, &same, NULL, 0, NULL, 0, NULL), "two ranged met");
  /* book[lid] under lid < 16, read at code & 15 by all: thread 40 reads another's entry. */
  struct kl_race_side wb = side1(lin(1, 0), true), rd = ranged(0, 15, false);
  wb.certain = true;
  add_cons(&wb, lin(1, -16), KL_RACE_LT);
  check("ranged-cover", kl_race_meet(&wb, &rd, &same, NULL, 0, NULL, 0, NULL), "gather missed");
  /* tg[lid] by all, read at any of 0..63: each reader may read its own slot. */
  struct kl_race_side wall = side1(lin(1, 0), true), rall = ranged(0, 63, false);
  wall.certain = true;
  check("ranged-own", !kl_race_meet(&wall, &rall, &same, NULL, 0, NULL, 0, NULL),
        "own slot counted");
  wb.certain = false;
  check("ranged-cover-unsure", !kl_race_meet(&wb, &rd, &same, NULL, 0, NULL, 0, NULL),
        "an uncertain writer met");
  /* [[max_total_threads_per_threadgroup(16)]]: 16 threads over 16 elements need not meet, and
   * with 8 the entries 8..15 that a gather may read are never written. */
  struct kl_race_order at16 = {false, 0, 0, false, {0, 0, 0}, 16};
  check("ranged-crowd-max-total", !kl_race_meet(&h, &h, &at16, NULL, 0, NULL, 0, NULL),
        "16 threads counted as more than 16");
  struct kl_race_order at8 = {false, 0, 0, false, {0, 0, 0}, 8};
  wb.certain = true;
  check("ranged-cover-max-total", !kl_race_meet(&wb, &rd, &at8, NULL, 0, NULL, 0, NULL),
        "a thread past the kernel's maximum counted");
}

/* The atoms thread coordinates name. */
static void test_coord_atom(void) {
  check("coord-atom",
        kl_race_coord_atom("thread_position_in_threadgroup", 1) == KL_RACE_Y &&
            kl_race_coord_atom("thread_position_in_grid", 0) == KL_RACE_X &&
            kl_race_coord_atom("thread_index_in_simdgroup", 0) == KL_RACE_LANE &&
            kl_race_coord_atom("quadgroup_index_in_threadgroup", 0) == KL_RACE_QUAD,
        "coordinates and their components");
  check("coord-atom-none",
        kl_race_coord_atom("threadgroup_position_in_grid", 0) < 0 &&
            kl_race_coord_atom(NULL, 0) < 0,
        "a threadgroup's position, or no coordinate");
}

int main(void) {
  test_coord_atom();
  struct kl_race_order same = {0};
  /* tg[lid] written, tg[lid] read: each thread its own slot. */
  struct kl_race_side w = side1(lin(1, 0), true), r = side1(lin(1, 0), false);
  check("own-slot", !kl_race_meet(&w, &r, &same, NULL, 0, NULL, 0, NULL), "own slots met");
  /* tg[lid + 1] read after tg[lid] written: the neighbour's slot. */
  r = side1(lin(1, 1), false);
  check("neighbour", kl_race_meet(&w, &r, &same, NULL, 0, NULL, 0, NULL), "neighbour not met");
  /* A budget of valuations: one is enough here and is spent; with none left, nothing meets. */
  uint32_t left = 1;
  check("budget-one", kl_race_meet(&w, &r, &same, NULL, 0, NULL, 0, &left) && left == 0,
        "one valuation not enough, or not spent");
  check("budget-spent", !kl_race_meet(&w, &r, &same, NULL, 0, NULL, 0, &left) && left == 0,
        "met with no valuation left");
  /* Two reads never race. */
  struct kl_race_side r2 = side1(lin(1, 0), false);
  check("two-reads", !kl_race_meet(&r2, &r, &same, NULL, 0, NULL, 0, NULL), "reads met");
  /* sum[0] written by thread 0, read by all. */
  struct kl_race_side w0 = side1(kl_race_const(0), true), rall = side1(kl_race_const(0), false);
  add_cons(&w0, lin(1, 0), KL_RACE_EQ);
  check("broadcast", kl_race_meet(&rall, &w0, &same, NULL, 0, NULL, 0, NULL),
        "thread 0's write missed");
  /* Both by thread 0 only: one thread. */
  add_cons(&rall, lin(1, 0), KL_RACE_EQ);
  check("one-thread", !kl_race_meet(&rall, &w0, &same, NULL, 0, NULL, 0, NULL), "one thread met");
  /* Every thread stores the same value: benign; a different value: a race. */
  struct kl_race_side a = side1(kl_race_const(0), true), b = side1(kl_race_const(0), true);
  a.same_value = b.same_value = "1.0f";
  check("same-value", !kl_race_meet(&a, &b, &same, NULL, 0, NULL, 0, NULL), "same value met");
  b.same_value = "x";
  check("other-value", kl_race_meet(&a, &b, &same, NULL, 0, NULL, 0, NULL), "values missed");
  /* Tree step: read tg[lid + s], write tg[lid], both under lid < s, s halving from 32. */
  struct kl_race_sym s = {0};
  s.loop = true;
  s.lo = 10;
  s.hi = 90;
  s.init_known = true;
  s.init = 32;
  s.step = '>';
  s.by = 1;
  s.bound_known = true;
  s.bound_op = KL_RACE_LT; /* 0 < s */
  s.bound_flip = true;
  s.bound = 0;
  struct kl_race_form sv = kl_race_var(KL_RACE_NATOMS + 0);
  struct kl_race_side rd = side1(kl_race_add(lin(1, 0), sv, 1), false), wr = side1(lin(1, 0), true);
  add_cons(&rd, kl_race_add(lin(1, 0), sv, -1), KL_RACE_LT);
  add_cons(&wr, kl_race_add(lin(1, 0), sv, -1), KL_RACE_LT);
  check("tree-step", !kl_race_meet(&rd, &wr, &same, &s, 1, NULL, 0, NULL), "one step met");
  struct kl_race_order back = {true, 10, 90, false, {0, 0, 0}, 0};
  check("tree-back-edge", kl_race_meet(&wr, &rd, &back, &s, 1, NULL, 0, NULL),
        "the next step's read missed");
  /* The same loop with a step kernlint cannot read: the next value is unknown, never reported. */
  s.step = 0;
  check("tree-unknown-step", !kl_race_meet(&wr, &rd, &back, &s, 1, NULL, 0, NULL),
        "unknown step met");
  /* A uniform name that is no loop's must cancel out of the index. */
  struct kl_race_sym n = {0};
  struct kl_race_side wn = side1(lin(1, 0), true);
  struct kl_race_side rn = side1(kl_race_add(lin(1, 0), kl_race_var(KL_RACE_NATOMS), 1), false);
  check("free-name", !kl_race_meet(&wn, &rn, &same, &n, 1, NULL, 0, NULL), "tg[lid + n] met");
  wn = side1(kl_race_add(lin(1, 0), kl_race_var(KL_RACE_NATOMS), 1), true);
  rn = side1(kl_race_add(lin(1, 1), kl_race_var(KL_RACE_NATOMS), 1), false);
  check("free-name-cancels", kl_race_meet(&wn, &rn, &same, &n, 1, NULL, 0, NULL),
        "tg[n + lid + 1] missed");
  /* Lane exchange in one SIMD group, ordered by a simdgroup_barrier: no other group meets it. */
  struct kl_race_form slot = kl_race_add(kl_race_scale(kl_race_var(KL_RACE_SIMD), 32),
                                         kl_race_var(KL_RACE_LANE), 1);
  struct kl_race_side ws = side1(slot, true);
  struct kl_race_side rs = side1(kl_race_add(slot, kl_race_const(1), 1), false);
  struct kl_race_cons even = {kl_race_var(KL_RACE_LANE), KL_RACE_EQ, 2, 0};
  rs.cons[rs.ncons++] = even;
  struct kl_race_order simd = {false, 0, 0, true, {0, 0, 0}, 0};
  check("simd-ordered", !kl_race_meet(&ws, &rs, &simd, NULL, 0, NULL, 0, NULL), "SIMD group met");
  check("simd-unordered", kl_race_meet(&ws, &rs, &same, NULL, 0, NULL, 0, NULL), "exchange missed");
  /* A derived coordinate: warp = lid / 32 writes scratch[warp], lane = lid % 32 reads it. */
  struct kl_race_derived der[2] = {{lin(1, 0), '/', 32}, {lin(1, 0), '%', 32}};
  struct kl_race_side wd = side1(kl_race_var(KL_RACE_DERIVED + 0), true);
  struct kl_race_side rdv = side1(kl_race_var(KL_RACE_DERIVED + 1), false);
  add_cons(&wd, kl_race_var(KL_RACE_DERIVED + 1), KL_RACE_EQ);
  check("derived", kl_race_meet(&rdv, &wd, &same, NULL, 0, der, 2, NULL), "scratch[warp] missed");
  /* Two dimensions: row ty, column k (a loop counter 0..7) against column tx. */
  struct kl_race_sym k = {0};
  k.loop = true;
  k.lo = 20;
  k.hi = 40;
  k.init_known = true;
  k.step = '+';
  k.by = 1;
  k.bound_known = true;
  k.bound_op = KL_RACE_LT;
  k.bound = 8;
  struct kl_race_side tile_r = {0}, tile_w = {0};
  tile_r.ndims = tile_w.ndims = 2;
  tile_r.idx[0] = tile_w.idx[0] = kl_race_var(KL_RACE_Y);
  tile_r.idx[1] = kl_race_var(KL_RACE_NATOMS);
  tile_w.idx[1] = kl_race_var(KL_RACE_X);
  tile_w.store = true;
  struct kl_race_order outer = {true, 0, 100, false, {0, 0, 0}, 0};
  check("tile-refill", kl_race_meet(&tile_r, &tile_w, &outer, &k, 1, NULL, 0, NULL),
        "refill missed");
  test_memo();
  test_ranged();
  return failures ? 1 : 0;
}
