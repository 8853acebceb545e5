/* Loading source text (analyzer/input/source.c): UTF-8 validation with its ASCII fast path, and the
 * line index. */
#include <stdio.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/source.h"

#include "tests/unit/kl_test.h"

static int load(struct kl_arena *a, const char *text, size_t len, struct kl_source *src, char *err,
                size_t errlen) {
  err[0] = '\0';
  return kl_source_from_memory(a, "t.metal", text, len, src, err, errlen);
}

/* Bad bytes where the 8-byte ASCII steps end, and valid sequences across a step's edge. */
static void test_utf8(struct kl_arena *a) {
  struct kl_source src;
  char err[128];
  const char after8[] = "abcdefgh\xff rest";
  check_int("bad byte right after 8 ASCII bytes",
            load(a, after8, sizeof after8 - 1, &src, err, sizeof err), -1);
  check_str("its offset", err, "invalid UTF-8 at line 1 (byte offset 8)");
  const char in8[] = "ab\ncdefg\xc3(more text here";
  check_int("bad continuation inside a word", load(a, in8, sizeof in8 - 1, &src, err, sizeof err),
            -1);
  check_str("its line and offset", err, "invalid UTF-8 at line 2 (byte offset 8)");
  const char tail[] = "0123456789abcdef\n\xe2\x82";
  check_int("truncated sequence at the end", load(a, tail, sizeof tail - 1, &src, err, sizeof err),
            -1);
  check_str("its offset", err, "invalid UTF-8 at line 2 (byte offset 17)");
  const char edge[] = "abcdefg\xe2\x82\xac"
                      "abcdefgh\xf0\x9f\x98\x80!";
  check_int("sequences across 8-byte edges are valid",
            load(a, edge, sizeof edge - 1, &src, err, sizeof err), 0);
  const char over[] = "abcdefgh\xc0\xaf";
  check_int("an overlong after 8 ASCII bytes",
            load(a, over, sizeof over - 1, &src, err, sizeof err), -1);
  check_str("its offset", err, "invalid UTF-8 at line 1 (byte offset 8)");
}

/* Line starts and which lines are ASCII, the last line with or without a newline. */
static void test_lines(struct kl_arena *a) {
  struct kl_source src;
  char err[128];
  const char t[] = "first line\n\nsecond caf\xc3\xa9 line is long\nlast";
  check_int("loads", load(a, t, sizeof t - 1, &src, err, sizeof err), 0);
  check_int("lines", src.nlines, 4);
  check_int("line 2 starts", src.line_starts[1], 11);
  check_int("line 3 starts", src.line_starts[2], 12);
  check_int("line 4 starts", src.line_starts[3], (long)(strstr(t, "last") - t));
  check("ascii flags",
        src.line_ascii[0] && src.line_ascii[1] && !src.line_ascii[2] && src.line_ascii[3],
        "%d %d %d %d", src.line_ascii[0], src.line_ascii[1], src.line_ascii[2], src.line_ascii[3]);
  const char nl[] = "x\n";
  check_int("loads with a final newline", load(a, nl, 2, &src, err, sizeof err), 0);
  check("an empty last line", src.nlines == 2 && src.line_starts[1] == 2 && src.line_ascii[1],
        "%u lines", src.nlines);
  check_int("loads empty", load(a, "", 0, &src, err, sizeof err), 0);
  check("one empty line", src.nlines == 1 && src.line_starts[0] == 0 && src.line_ascii[0],
        "%u lines", src.nlines);
  const char hi[] = "0123456789\xc3\xa9";
  check_int("loads a line ending in a 2-byte sequence",
            load(a, hi, sizeof hi - 1, &src, err, sizeof err), 0);
  check("not ASCII past 8 bytes", src.nlines == 1 && !src.line_ascii[0], "%u lines", src.nlines);
}

int main(void) {
  struct kl_arena *a = kl_arena_new();
  test_utf8(a);
  test_lines(a);
  kl_arena_delete(a);
  return failures ? 1 : 0;
}
