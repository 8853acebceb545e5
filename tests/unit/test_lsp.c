/* Unit tests for the language server's conversions: byte offsets to LSP positions in each
 * encoding and back, content changes applied to a buffer, a hand-built kl_fix to a
 * WorkspaceEdit, file: URIs to paths, and the edit that adds or extends a
 * kernlint-disable-line comment in MSL, host and Python sources. */
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/lsp/lsp.h"
#include "analyzer/lsp/text.h"
#include "analyzer/input/source.h"
#include "kl_test.h"

static struct kl_source load(struct kl_arena *a, const char *path, const char *text) {
  struct kl_source src;
  char err[128];
  if (kl_source_from_memory(a, path, text, strlen(text), &src, err, sizeof err) != 0) {
    printf("FAIL load %s: %s\n", path, err);
    exit(1);
  }
  return src;
}

static void check_pos(const char *name, const struct kl_source *src, uint32_t off,
                      enum kl_text_encoding enc, long line, long ch) {
  json_t *p = kl_text_position(src, off, enc);
  long gl = (long)json_integer_value(json_object_get(p, "line"));
  long gc = (long)json_integer_value(json_object_get(p, "character"));
  check(name, gl == line && gc == ch, "got %ld:%ld, want %ld:%ld", gl, gc, line, ch);
  json_decref(p);
}

static void test_positions(void) {
  struct kl_arena *a = kl_arena_new();
  /* Line 1: "é" (2 bytes, 1 UTF-16 unit), "😀" (4 bytes, 2 units), "→" (3 bytes, 1 unit). */
  const char *text = "int x;\n/*\xc3\xa9\xf0\x9f\x98\x80\xe2\x86\x92*/ y\n";
  struct kl_source src = load(a, "p.metal", text);
  uint32_t y = (uint32_t)(strchr(text, 'y') - text);
  check_pos("lsp-pos-ascii", &src, 4, KL_TEXT_UTF16, 0, 4);
  check_pos("lsp-pos-utf16", &src, y, KL_TEXT_UTF16, 1, 2 + 1 + 2 + 1 + 3);
  check_pos("lsp-pos-utf8", &src, y, KL_TEXT_UTF8, 1, 2 + 2 + 4 + 3 + 3);
  check_pos("lsp-pos-utf32", &src, y, KL_TEXT_UTF32, 1, 2 + 1 + 1 + 1 + 3);
  check_pos("lsp-pos-line-start", &src, 7, KL_TEXT_UTF16, 1, 0);
  check_pos("lsp-pos-end-of-file", &src, (uint32_t)strlen(text), KL_TEXT_UTF16, 2, 0);
  check_pos("lsp-pos-past-end", &src, 9999, KL_TEXT_UTF16, 2, 0);
  kl_arena_delete(a);
}

static void test_fix(void) {
  struct kl_arena *a = kl_arena_new();
  const char *text = "kernel void k() {\n  half acc = 0; // \xc3\xa9\n  acc += 1;\n}\n";
  struct kl_source src = load(a, "f.metal", text);
  struct kl_diag_list l;
  kl_diag_list_init(&l, a);
  struct kl_diag *d = kl_diag_add(&l, "half-accumulator", KL_SEV_WARNING,
                                  kl_diag_span(&src, 20, 24), "accumulates in half");
  struct kl_fix *f = kl_diag_fix(&l, d, "declare 'acc' as float");
  uint32_t half = (uint32_t)(strstr(text, "half") - text);
  uint32_t eol = (uint32_t)(strstr(text, "\n  acc") - text);
  /* Added out of order: kl_diag_edit keeps them sorted. */
  kl_diag_edit(&l, f, eol, eol, " (was half)");
  kl_diag_edit(&l, f, half, half + 4, "float");
  json_t *we = kl_text_fix_edit(&src, f, "file:///w/f.metal", KL_TEXT_UTF16);
  char *got = json_dumps(we, JSON_COMPACT | JSON_SORT_KEYS);
  check_str("lsp-fix-edit", got,
            "{\"changes\":{\"file:///w/f.metal\":["
            "{\"newText\":\"float\",\"range\":{\"end\":{\"character\":6,\"line\":1},"
            "\"start\":{\"character\":2,\"line\":1}}},"
            "{\"newText\":\" (was half)\",\"range\":{\"end\":{\"character\":20,\"line\":1},"
            "\"start\":{\"character\":20,\"line\":1}}}]}}");
  free(got);
  json_decref(we);
  kl_arena_delete(a);
}

static void check_uri(const char *name, const char *uri, const char *want) {
  char *got = kl_text_uri_path(uri);
  check_str(name, got, want);
  free(got);
}

static void test_uris(void) {
  check_uri("lsp-uri-plain", "file:///home/u/k.metal", "/home/u/k.metal");
  check_uri("lsp-uri-escapes", "file:///a%20b/%C3%A9%2Bc.metal", "/a b/\xc3\xa9+c.metal");
  check_uri("lsp-uri-localhost", "file://localhost/x.py", "/x.py");
  check_uri("lsp-uri-other-host", "file://server/x.py", NULL);
  check_uri("lsp-uri-untitled", "untitled:Untitled-1", NULL);
  check_uri("lsp-uri-bad-escape", "file:///a%2", NULL);
  check_uri("lsp-uri-nul", "file:///a%00b", NULL);
}

/* Apply the suppression edit for rule on line to text and compare the whole result. */
static void check_supp(const char *name, const char *path, const char *text, uint32_t line,
                       const char *rule, const char *want) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source src = load(a, path, text);
  uint32_t s = 0, e = 0;
  char *ins = kl_text_suppress_edit(&src, line, rule, &s, &e);
  char *got = NULL;
  if (ins) {
    size_t n = strlen(text), m = strlen(ins);
    got = malloc(n + m + 1);
    memcpy(got, text, s);
    memcpy(got + s, ins, m);
    memcpy(got + s + m, text + e, n - e + 1);
  }
  check_str(name, got, want);
  free(got);
  free(ins);
  kl_arena_delete(a);
}

static void test_suppress(void) {
  const char *bg = "bounds-guard";
  /* A line above a continued line would join what the backslash continues: no edit. */
  check_supp("lsp-supp-continued-string", "s.py", "x = \"a\\\n\n*b\n", 2, bg, NULL);
  check_supp("lsp-supp-continued-macro-eol", "k.metal", "#define A(x) \\\n  /* y[i] */ x\n", 2, bg,
             "#define A(x) \\\n  /* y[i] */ x // kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-metal-plain", "k.metal", "a;\n  y[i] = x[i];\nb;\n", 2, bg,
             "a;\n  y[i] = x[i]; // kernlint-disable-line bounds-guard\nb;\n");
  check_supp("lsp-supp-crlf", "k.metal", "a;\r\ny[i] = x[i];\r\n", 2, bg,
             "a;\r\ny[i] = x[i]; // kernlint-disable-line bounds-guard\r\n");
  check_supp("lsp-supp-last-line", "k.metal", "y[i] = x[i];", 1, bg,
             "y[i] = x[i]; // kernlint-disable-line bounds-guard");
  check_supp("lsp-supp-existing-comment", "k.metal", "y[i] = x[i]; // why\n", 1, bg,
             "y[i] = x[i]; /* kernlint-disable-line bounds-guard */ // why\n");
  check_supp("lsp-supp-closed-block", "k.metal", "y[i] = /* a */ x[i];\n", 1, bg,
             "y[i] = /* a */ x[i]; // kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-merge", "k.metal", "y[i] = x[i]; // kernlint-disable-line a-b\n", 1, bg,
             "y[i] = x[i]; // kernlint-disable-line a-b, bounds-guard\n");
  check_supp("lsp-supp-merge-reason", "k.metal",
             "y = x[i]; // kernlint-disable-line a, b -- known\n", 1, bg,
             "y = x[i]; // kernlint-disable-line a, b, bounds-guard -- known\n");
  check_supp("lsp-supp-merge-block", "k.metal", "y = x[i]; /* kernlint-disable-line a */\n", 1, bg,
             "y = x[i]; /* kernlint-disable-line a, bounds-guard */\n");
  check_supp("lsp-supp-merge-no-ids", "k.metal", "y = x[i]; // kernlint-disable-line\n", 1, bg,
             "y = x[i]; // kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-not-a-comment", "k.metal", "s = \"// kernlint-disable-line a\"; y = x[i];\n",
             1, bg,
             "s = \"// kernlint-disable-line a\"; y = x[i]; // kernlint-disable-line "
             "bounds-guard\n");
  check_supp("lsp-supp-open-block", "k.metal", "  y = x[i]; /* starts\n ends */\n", 1, bg,
             "  y = x[i]; /* kernlint-disable-line bounds-guard */ /* starts\n ends */\n");
  check_supp("lsp-supp-after-block", "k.metal", "/* a\n b */ y = x[i];\n", 2, bg,
             "/* a\n b */ y = x[i]; // kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-raw-string", "k.mm", "  auto s = R\"(kernel\nvoid)\";\n", 1, bg,
             "  // kernlint-disable-next-line bounds-guard\n  auto s = R\"(kernel\nvoid)\";\n");
  check_supp("lsp-supp-inside-raw-string", "k.mm", "auto s = R\"(kernel\nvoid\n)\";\n", 2, bg,
             NULL);
  /* Comments and literals left open (found by fuzzing against suppress.c). */
  check_supp("lsp-supp-open-block-at-eof", "k.metal", "x;\n/* open\n", 3, bg, NULL);
  check_supp("lsp-supp-open-string", "k.metal", "a;\n  s = \"open, x[i];\nb;\n", 2, bg,
             "a;\n  // kernlint-disable-next-line bounds-guard\n  s = \"open, x[i];\nb;\n");
  check_supp("lsp-supp-directive-then-hash", "k.metal", "y = x[i]; // kernlint-disable-line#why\n",
             1, bg, "y = x[i]; // kernlint-disable-line bounds-guard #why\n");
  check_supp("lsp-supp-bad-line", "k.metal", "x;\n", 7, bg, NULL);

  /* Python: a line of a kernel string takes MSL's comment, inside the string. */
  check_supp("lsp-supp-py-triple", "k.py", "src = \"\"\"\n  y[i] = x[i];\n\"\"\"\n", 2, bg,
             "src = \"\"\"\n  y[i] = x[i]; // kernlint-disable-line bounds-guard\n\"\"\"\n");
  check_supp("lsp-supp-py-triple-opens", "k.py", "src = '''kernel void f() {\n}'''\n", 1, bg,
             "src = '''kernel void f() { // kernlint-disable-line bounds-guard\n}'''\n");
  check_supp("lsp-supp-py-triple-closes", "k.py", "src = \"\"\"\n  y[i] = x[i];\"\"\"\n", 2, bg,
             "src = \"\"\"\n  y[i] = x[i];\"\"\"  # kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-py-one-line-string", "k.py", "src = \"y[i] = x[i];\"\n", 1, bg,
             "src = \"y[i] = x[i];\"  # kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-py-code", "k.py", "k(grid=(n + 255) // 256)\n", 1, bg,
             "k(grid=(n + 255) // 256)  # kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-py-hash-comment", "k.py", "k(grid=g)  # rounded up\n", 1, bg,
             "k(grid=g)  # kernlint-disable-line bounds-guard -- rounded up\n");
  check_supp("lsp-supp-py-hash-in-string", "k.py", "s = \"#x\"; k(g)\n", 1, bg,
             "s = \"#x\"; k(g)  # kernlint-disable-line bounds-guard\n");
  check_supp("lsp-supp-py-msl-comment", "k.py", "src = \"\"\"\n  y = x[i]; // why\n\"\"\"\n", 2, bg,
             "src = \"\"\"\n  y = x[i]; /* kernlint-disable-line bounds-guard */ // why\n\"\"\"\n");
  check_supp("lsp-supp-py-merge-msl", "k.py",
             "src = \"\"\"\n  y = x[i]; // kernlint-disable-line a\n\"\"\"\n", 2, bg,
             "src = \"\"\"\n  y = x[i]; // kernlint-disable-line a, bounds-guard\n\"\"\"\n");
  check_supp("lsp-supp-py-merge-hash", "k.py", "k(g)  # kernlint-disable-line a\n", 1, bg,
             "k(g)  # kernlint-disable-line a, bounds-guard\n");
  check_supp(
      "lsp-supp-py-other-directive", "k.py", "  k(g)  # kernlint-disable-next-line a\n", 1, bg,
      "  # kernlint-disable-next-line bounds-guard\n  k(g)  # kernlint-disable-next-line a\n");
  check_supp("lsp-supp-py-open-string", "k.py", "k(\n    'open x[i],\n)\n", 2, bg,
             "k(\n    # kernlint-disable-next-line bounds-guard\n    'open x[i],\n)\n");
  check_supp("lsp-supp-py-open-triple-at-eof", "k.py", "src = \"\"\"\n  y[i] = x[i];\n", 3, bg,
             "src = \"\"\"\n  y[i] = x[i];\n // kernlint-disable-line bounds-guard");
  check_supp("lsp-supp-py-open-triple", "k.py", "src = \"\"\"\n  y[i] = x[i];", 2, bg,
             "src = \"\"\"\n  y[i] = x[i]; // kernlint-disable-line bounds-guard");
  /* A string continued by a backslash: a // would swallow the next line's MSL. */
  check_supp("lsp-supp-py-continued-string", "k.py", "s = \"a\\\ny[i];\"\n", 1, bg,
             "# kernlint-disable-next-line bounds-guard\ns = \"a\\\ny[i];\"\n");
  check_supp("lsp-supp-py-continued-closes", "k.py", "s = \"a\\\ny[i];\"\n", 2, bg,
             "s = \"a\\\ny[i];\"  # kernlint-disable-line bounds-guard\n");
}

/* The offset of {line, ch} in text, or -1 when the position is refused. */
static long offset_of(const char *text, enum kl_text_encoding enc, long line, long ch) {
  json_t *pos = json_pack("{s:i, s:i}", "line", (int)line, "character", (int)ch);
  size_t off = 0;
  int rc = kl_text_offset(text, strlen(text), pos, enc, &off);
  json_decref(pos);
  return rc ? -1 : (long)off;
}

/* Positions back to offsets, clamped as the protocol's reference TextDocument clamps them. */
static void test_offsets(void) {
  /* \xf0\x9f\x98\x80 is one character past U+FFFF: two UTF-16 units, four UTF-8 bytes. */
  const char *t = "ab\r\nx\xf0\x9f\x98\x80y\n\xc3\xa9z";
  check_int("lsp-off-ascii", offset_of(t, KL_TEXT_UTF16, 0, 1), 1);
  check_int("lsp-off-past-line-end", offset_of(t, KL_TEXT_UTF16, 0, 40), 2);
  check_int("lsp-off-after-pair", offset_of(t, KL_TEXT_UTF16, 1, 3), 9);
  check_int("lsp-off-inside-pair", offset_of(t, KL_TEXT_UTF16, 1, 2), 5);
  check_int("lsp-off-utf8", offset_of(t, KL_TEXT_UTF8, 1, 5), 9);
  check_int("lsp-off-utf8-inside", offset_of(t, KL_TEXT_UTF8, 1, 3), 5);
  check_int("lsp-off-utf32", offset_of(t, KL_TEXT_UTF32, 1, 2), 9);
  check_int("lsp-off-two-bytes", offset_of(t, KL_TEXT_UTF16, 2, 1), 13);
  check_int("lsp-off-past-last-line", offset_of(t, KL_TEXT_UTF16, 7, 0), (long)strlen(t));
  check_int("lsp-off-negative", offset_of(t, KL_TEXT_UTF16, -1, 0), -1);
  json_t *half = json_pack("{s:i}", "line", 0);
  size_t off;
  check_int("lsp-off-missing", kl_text_offset(t, strlen(t), half, KL_TEXT_UTF16, &off), -1);
  json_decref(half);
}

/* Apply the change in JSON to a copy of text and compare with want (NULL: refused). */
static void check_change(const char *name, const char *text, const char *change,
                         const char *want) {
  json_t *c = json_loads(change, 0, NULL);
  size_t len = strlen(text);
  char *buf = malloc(len + 1), why[128] = "";
  memcpy(buf, text, len + 1);
  int rc = kl_text_apply_change(&buf, &len, c, KL_TEXT_UTF16, why, sizeof why);
  if (!want)
    check(name, rc != 0 && !strcmp(buf, text) && why[0], "rc %d, text '%s'", rc, buf);
  else
    check(name, rc == 0 && len == strlen(want) && !strcmp(buf, want), "rc %d (%s), got '%s'", rc,
          why, buf);
  free(buf);
  json_decref(c);
}

static void test_changes(void) {
  const char *t = "one\ntwo\n";
  check_change("lsp-change-insert", t,
               "{\"range\": {\"start\": {\"line\": 1, \"character\": 0}, "
               "\"end\": {\"line\": 1, \"character\": 0}}, \"text\": \"2 \"}",
               "one\n2 two\n");
  check_change("lsp-change-replace-across-lines", t,
               "{\"range\": {\"start\": {\"line\": 0, \"character\": 2}, "
               "\"end\": {\"line\": 1, \"character\": 1}}, \"text\": \"-\"}",
               "on-wo\n");
  check_change("lsp-change-reversed-range", t,
               "{\"range\": {\"start\": {\"line\": 1, \"character\": 1}, "
               "\"end\": {\"line\": 0, \"character\": 2}}, \"text\": \"-\"}",
               "on-wo\n");
  check_change("lsp-change-whole", t, "{\"text\": \"new\"}", "new");
  check_change("lsp-change-at-end", t,
               "{\"range\": {\"start\": {\"line\": 9, \"character\": 9}, "
               "\"end\": {\"line\": 9, \"character\": 9}}, \"text\": \"!\"}",
               "one\ntwo\n!");
  check_change("lsp-change-no-text", t, "{\"range\": null}", NULL);
  check_change("lsp-change-bad-range", t,
               "{\"range\": {\"start\": {\"line\": \"a\"}}, \"text\": \"x\"}", NULL);
}

int main(void) {
  test_positions();
  test_offsets();
  test_changes();
  test_fix();
  test_uris();
  test_suppress();
  return failures ? 1 : 0;
}
