/* Developer tool: print the flow facts (barriers, device accesses) of a file's kernels.
 * Usage: dump-flow FILE.metal */
#include <stdio.h>

#include "analyzer/passes/facts.h"
#include "analyzer/passes/flow.h"
#include "analyzer/input/source.h"

static void kl_pos(const struct kl_source *s, const struct kl_unit *u, TSNode n, uint32_t *line,
                   uint32_t *col) {
  kl_source_position(s, kl_offmap_to_file(&u->map, ts_node_start_byte(n)), line, col);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: dump-flow FILE\n");
    return 2;
  }
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  struct kl_unit u;
  if (kl_source_load(a, argv[1], &src, err, sizeof err) != 0 ||
      kl_dialect_parse(a, &src, src.text, src.len, NULL, ".", &u, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", argv[1], err);
    kl_arena_delete(a);
    return 2;
  }
  struct kl_model m;
  kl_model_build(a, &u, &m);
  struct kl_flow fl;
  kl_flow_analyze(a, &m, NULL, 0, NULL, 0, NULL, &fl);
  uint32_t line, col;
  /* Barriers: as the lowered kernels judge them (analyzer/passes/facts.h). */
  struct kl_facts fc;
  kl_facts_compute(a, &m, NULL, 0, NULL, 0, NULL, NULL, &fc);
  for (size_t i = 0; i < fc.nbarriers; i++) {
    const struct kl_facts_barrier *b = &fc.barriers[i];
    if (!b->fn) continue;
    kl_pos(&src, &u, b->call, &line, &col);
    printf("barrier %u:%u %s ctrl=%s cause=%d var=%s\n", line, col, b->fn->name,
           kl_msl_scope_name(b->ctrl), (int)b->cause, b->cause_var ? b->cause_var : "-");
  }
  for (size_t i = 0; i < fl.naccesses; i++) {
    const struct kl_flow_access *x = &fl.accesses[i];
    kl_pos(&src, &u, x->node, &line, &col);
    printf("access %u:%u %s %s elem=%s known=%d partial=%d terms=%u thread=%d "
           "unguarded=%d(%s) evidence=%d inst=%s\n",
           line, col, x->store ? "store" : "load", x->buffer ? x->buffer->name : "?",
           x->elem_type ? x->elem_type : "?", x->form.known, x->form.partial, x->form.n,
           x->thread_indexed, x->unguarded, x->unguarded_var ? x->unguarded_var : "-",
           x->evidence, x->inst ? x->inst : "-");
  }
  kl_dialect_release(&u);
  kl_arena_delete(a);
  return 0;
}
