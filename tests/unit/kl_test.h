/* Shared checks for the unit tests: each prints "PASS name" or "FAIL name: why" and counts
 * failures, so tests/run.sh can total every test program the same way. */
#ifndef KL_TEST_H
#define KL_TEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Failures so far in this test program; main returns non-zero when any. */
static int failures;

/* Record one check; fmt explains a failure. */
static inline void check(const char *name, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void check(const char *name, bool ok, const char *fmt, ...) {
  /* Flushed per line: a crash later in the program (a sanitizer's abort) must not take the
   * lines of the checks already run with it, or the log cannot say where it stopped. */
  if (ok) {
    printf("PASS %s\n", name);
    fflush(stdout);
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL %s: ", name);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  failures++;
}

/* Check two strings (either may be NULL) are equal. */
static inline void check_str(const char *name, const char *got, const char *want) {
  bool ok = got && want ? !strcmp(got, want) : got == want;
  check(name, ok, "got \"%s\", want \"%s\"", got ? got : "(null)", want ? want : "(null)");
}

/* Check two integers are equal. */
static inline void check_int(const char *name, long got, long want) {
  check(name, got == want, "got %ld, want %ld", got, want);
}

#endif
