/* One MSL text parsed for a unit test, with its model and type aliases, all in one arena: the
 * setup the model, trips and types tests share. */
#ifndef KL_TEST_UNIT_H
#define KL_TEST_UNIT_H

#include <string.h>

#include "analyzer/core/model.h"
#include "analyzer/input/source.h"
#include "analyzer/core/types.h"
#include "grammar/dialect.h"

#include "tests/unit/kl_test.h"

struct fixture {
  struct kl_arena *a;
  struct kl_source src;
  struct kl_unit unit;
  struct kl_model model;
  struct kl_types types;
};

/* Parse text into fx; on failure records the failed check `what` and returns -1. */
static inline int kl_test_unit_build(struct fixture *fx, const char *what, const char *text) {
  char err[256];
  fx->a = kl_arena_new();
  if (kl_source_from_memory(fx->a, "test.metal", text, strlen(text), &fx->src, err, sizeof err) !=
          0 ||
      kl_dialect_parse(fx->a, &fx->src, fx->src.text, fx->src.len, NULL, NULL, &fx->unit, err,
                       sizeof err) != 0) {
    check(what, 0, "%s", err);
    kl_arena_delete(fx->a);
    return -1;
  }
  kl_model_build(fx->a, &fx->unit, &fx->model);
  kl_types_collect(fx->a, &fx->unit, &fx->types);
  return 0;
}

/* Free what kl_test_unit_build made. */
static inline void kl_test_unit_release(struct fixture *fx) {
  kl_dialect_release(&fx->unit);
  kl_arena_delete(fx->a);
}

#endif
