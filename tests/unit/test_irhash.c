/* Unit tests for the fingerprint of a lowered function (kl_ir_hash, analyzer/ir/irhash.h) and
 * what a repeat of a lowering takes again (analyzer/passes/replay.h): the same program built
 * twice hashes alike whatever its label, text held at other addresses included; one constant,
 * one operand, one type or one block apart hashes apart; a repeat's device-access entries keep
 * their index among its own entries and take its label; its barrier names are its own. */
#include "analyzer/input/source.h"
#include "analyzer/ir/irhash.h"
#include "analyzer/ir/lower.h"
#include "analyzer/passes/facts.h"
#include "analyzer/passes/replay.h"

#include "tests/unit/ir_prog.h"
#include "tests/unit/kl_test.h"

static struct kl_arena *A;

/* A loop over x[i] += i * k, typed by type (copied into the arena), the loop's bound n. */
static uint64_t prog(int64_t k, const char *type, int64_t n, bool branch, const char *label) {
  prog_new(A);
  P->inst = label;
  uint32_t b = P->body, x = p_arg(b, true, "float"), lid = p_coord(b, "thread_position_in_grid", 0);
  uint32_t hdr, body, latch, loop = p_loop(b, &hdr, &body, &latch);
  uint32_t i = p_head(hdr, loop, lid);
  p_loop_cond(loop, p_bin(hdr, KL_IR_LT, i, p_const(hdr, n)));
  uint32_t where = body, e;
  if (branch) p_if(body, p_bin(body, KL_IR_LT, i, p_const(body, 4)), &where, &e);
  uint32_t v = p_bin(where, KL_IR_MUL, i, p_const(where, k));
  P->ins[v].type = kl_arena_strdup(A, type);
  p_op(where, KL_IR_STORE, p_index(where, x, i, 4), v, 0);
  p_back(i, p_bin(latch, KL_IR_ADD, i, p_const(latch, 1)));
  return kl_ir_hash(P);
}

static void test_hash(void) {
  uint64_t h = prog(3, "float", 16, false, "N = 1");
  check("irhash-same-program", prog(3, "float", 16, false, "N = 2") == h,
        "the label or a copy of a type name changed the hash");
  check("irhash-other-constant", prog(4, "float", 16, false, NULL) != h, "k 3 and 4 alike");
  check("irhash-other-bound", prog(3, "float", 17, false, NULL) != h, "bound 16 and 17 alike");
  check("irhash-other-type", prog(3, "half", 16, false, NULL) != h, "float and half alike");
  check("irhash-other-blocks", prog(3, "float", 16, true, NULL) != h, "a branch more alike");
}

static void test_replay(void) {
  struct kl_access_table t = {NULL, 0, 0};
  for (int i = 0; i < 3; i++) {
    KL_VEC_PUSH(A, t.v, t.n, t.cap);
    memset(&t.v[t.n], 0, sizeof t.v[0]);
    t.v[t.n].index_rep = (uint32_t)(i == 2 ? 1 : i);
    t.v[t.n++].inst = "N = 1";
  }
  /* The entry of a lowering whose accesses are entries 1 and 2 (2 at 1's offset). */
  struct kl_replay_entry e = {.access = t.v + 1, .naccess = 2, .access_first = 1};
  kl_replay_access(A, &e, &t, "N = 2");
  check("replay-access-count", t.n == 5, "%zu entries", t.n);
  check("replay-access-rep", t.n == 5 && t.v[3].index_rep == 3 && t.v[4].index_rep == 3,
        "index_rep %u %u", t.v[3].index_rep, t.v[4].index_rep);
  check_str("replay-access-label", t.n == 5 ? t.v[4].inst : NULL, "N = 2");
  struct kl_function k = {.name = "kern"};
  const char *hosts[2] = {"kern_f32", "kern_f16"};
  struct kl_ir_fn *f = kl_ir_fn_new(A, &k, "T = float");
  size_t n;
  const char **names = kl_replay_names(A, f, &n);
  check("replay-names-label", n == 1 && !strcmp(names[0], "T = float"), "%zu names", n);
  f->hosts = hosts, f->nhosts = 2;
  names = kl_replay_names(A, f, &n);
  check("replay-names-hosts", n == 2 && !strcmp(names[1], "kern_f16"), "%zu names", n);
  f->inst = NULL;
  names = kl_replay_names(A, f, &n);
  check("replay-names-kernel", n == 1 && !strcmp(names[0], "kern"), "%zu names", n);
}

/* Lowerings made and offered as repeats, per kernel name's first letter (a or b). */
struct kl_counts {
  int lowered[2], offered[2];
};

static void count_lowered(void *ctx, struct kl_ir_fn *f) {
  ((struct kl_counts *)ctx)->lowered[f->kernel->name[0] == 'b']++;
}

static bool count_offered(void *ctx, struct kl_ir_fn *f, uint32_t of) {
  check("repeat-of-earlier", of == 1 && f->nins == 1 && f->inst, "of %u", of);
  ((struct kl_counts *)ctx)->offered[f->kernel->name[0] == 'b']++;
  return true;
}

/* A kernel instantiated for N = 1, 2, 3 that never reads N is lowered once, the others offered
 * as repeats; one that reads N is lowered for each. */
static void test_lower_repeats(void) {
  static const char text[] =
      "template <int N>\n"
      "kernel void a(device float *x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  x[i] = 1.0f;\n"
      "}\n"
      "template <int N>\n"
      "kernel void b(device float *x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  x[i * N] = 1.0f;\n"
      "}\n"
      "template [[host_name(\"a1\")]] kernel void a<1>(device float *, uint);\n"
      "template [[host_name(\"a2\")]] kernel void a<2>(device float *, uint);\n"
      "template [[host_name(\"a3\")]] kernel void a<3>(device float *, uint);\n"
      "template [[host_name(\"b1\")]] kernel void b<1>(device float *, uint);\n"
      "template [[host_name(\"b2\")]] kernel void b<2>(device float *, uint);\n";
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  struct kl_unit u;
  char err[256];
  if (kl_source_from_memory(a, "t.metal", text, sizeof text - 1, &src, err, sizeof err) != 0 ||
      kl_dialect_parse(a, &src, src.text, src.len, NULL, ".", &u, err, sizeof err) != 0) {
    check("lower-repeats-setup", false, "%s", err);
    kl_arena_delete(a);
    return;
  }
  struct kl_model m;
  kl_model_build(a, &u, &m);
  struct kl_counts c = {{0, 0}, {0, 0}};
  kl_ir_lower_some(&m, NULL, 0, NULL, 0, NULL, NULL, count_lowered, count_offered, &c);
  check("lower-repeats-unread", c.lowered[0] == 1 && c.offered[0] == 2, "a: lowered %d, offered %d",
        c.lowered[0], c.offered[0]);
  check("lower-repeats-read", c.lowered[1] == 2 && c.offered[1] == 0, "b: lowered %d, offered %d",
        c.lowered[1], c.offered[1]);
  struct kl_facts fa;
  kl_facts_compute(a, &m, NULL, 0, NULL, 0, NULL, &fa);
  size_t labels = 0;
  for (size_t i = 0; i < fa.naccess; i++) labels += fa.access[i].inst != NULL;
  check("lower-repeats-facts", fa.nfns == 5 && fa.naccess == 5 && labels == 5,
        "%zu lowerings, %zu accesses, %zu labelled", fa.nfns, fa.naccess, labels);
  kl_dialect_release(&u);
  kl_arena_delete(a);
}

int main(void) {
  A = kl_arena_new();
  test_hash();
  test_replay();
  test_lower_repeats();
  kl_arena_delete(A);
  return failures ? 1 : 0;
}
