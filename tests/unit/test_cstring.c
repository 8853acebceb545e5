/* Unit tests for MSL in host string literals (analyzer/input/cstring.c): which literal runs are
 * kernels, how they decode, and where their bytes map back to in the file. */
#include <stdio.h>
#include <string.h>

#include "analyzer/core/arena.h"
#include "analyzer/input/cstring.h"
#include "analyzer/input/source.h"

static int failures;

static void check(const char *name, int ok, const char *detail) {
  if (ok) {
    printf("PASS %s\n", name);
  } else {
    printf("FAIL %s: %s\n", name, detail);
    failures++;
  }
}

/* The kernels found in text, read as a file at path. */
static size_t find(struct kl_arena *a, const char *path, const char *text, struct kl_cstring **v) {
  struct kl_source src;
  char err[256];
  if (kl_source_from_memory(a, path, text, strlen(text), &src, err, sizeof err) != 0) {
    printf("FAIL %s: %s\n", path, err);
    failures++;
    *v = NULL;
    return 0;
  }
  return kl_cstring_find(a, &src, v);
}

/* One kernel found, decoded to want. */
static void check_one(struct kl_arena *a, const char *name, const char *path, const char *text,
                      const char *want) {
  struct kl_cstring *v;
  size_t n = find(a, path, text, &v);
  char detail[512];
  snprintf(detail, sizeof detail, "%zu found, first `%s`, want `%s`", n, n ? v[0].text : "",
           want);
  check(name, n == 1 && !strcmp(v[0].text, want) && v[0].len == strlen(want), detail);
}

static void check_none(struct kl_arena *a, const char *name, const char *path, const char *text) {
  struct kl_cstring *v;
  size_t n = find(a, path, text, &v);
  char detail[512];
  snprintf(detail, sizeof detail, "%zu found, first `%s`", n, n ? v[0].text : "");
  check(name, n == 0, detail);
}

static void test_forms(struct kl_arena *a) {
  check_one(a, "raw", "a.mm", "static const char *s = R\"metal(kernel void k() {})metal\";",
            "kernel void k() {}");
  check_one(a, "raw-prefixed", "a.cpp", "auto s = u8R\"(kernel void k() {})\";",
            "kernel void k() {}");
  check_one(a, "raw-keeps-escapes", "a.cpp", "auto s = R\"(kernel void k() { /* \\n */ })\";",
            "kernel void k() { /* \\n */ }");
  check_one(a, "concatenated", "a.cpp",
            "const char *s =\n  \"kernel void k(\\n\"\n  // a comment between\n"
            "  \"  uint i) {}\\n\";",
            "kernel void k(\n  uint i) {}\n");
  check_one(a, "escapes", "a.cpp",
            "const char *s = \"kernel void k() { \\\"q\\\" \\t\\101 \\x42 }\";",
            "kernel void k() { \"q\" \tA B }");
  check_one(a, "objc", "a.m", "NSString *s = @\"kernel void \" @\"k() {}\";", "kernel void k() {}");
  check_one(a, "attribute", "a.cpp", "const char *s = \"[[ kernel ]] void k() {}\";",
            "[[ kernel ]] void k() {}");
  check_one(a, "swift", "a.swift", "let s = \"\"\"\nkernel void k() {}\n\"\"\"\n",
            "\nkernel void k() {}\n");
  /* No raw string: `FOOR` is a name before a plain literal. */
  check_one(a, "not-raw", "a.cpp", "const char *s = FOOR\"x(kernel void k() {})x\";",
            "x(kernel void k() {})x");
  check_none(a, "message", "a.cpp", "puts(\"the kernel failed to launch\");");
  check_none(a, "comment", "a.cpp", "// const char *s = \"kernel void k() {}\";\nint x;");
  check_none(a, "char-literal", "a.cpp", "char q = '\"'; int kernel_void;");
}

static void test_templates(struct kl_arena *a) {
  check_none(a, "format-field", "a.cpp",
             "auto s = R\"(kernel void k{0}(device {1}* x) {{ }})\";");
  check_none(a, "format-quoted", "a.cpp",
             "auto s = R\"(template [[host_name(\"{0}\")]] [[kernel]] void k();\n"
             "kernel void j() {})\";");
  check_none(a, "printf", "a.cpp", "const char *s = \"kernel void fill(device %s *y) {}\";");
  check_none(a, "dollar-field", "a.cpp",
             "auto s = R\"(kernel void k(device $T *y) { y[0] = ${zero}; })\";");
  check_none(a, "mustache", "a.cpp", "auto s = R\"(kernel void k(device {{ type }} *y) {})\";");
  check_none(a, "swift-interpolation", "a.swift",
             "let s = \"\"\"\nkernel void k(device \\(t) *y) {}\n\"\"\"\n");
  /* Braced initializers and a modulo by a name are code. */
  check_one(a, "brace-init", "a.cpp",
            "auto s = R\"(kernel void k() { float acc{0}; float4 z{}; vec<float, 4>{0}; })\";",
            "kernel void k() { float acc{0}; float4 z{}; vec<float, 4>{0}; }");
  check_one(a, "nested-init", "a.cpp",
            "auto s = R\"(kernel void k() { float2x2 m = {{a, b}, {c, d}}; })\";",
            "kernel void k() { float2x2 m = {{a, b}, {c, d}}; }");
  check_one(a, "modulo-by-name", "a.cpp", "auto s = R\"(kernel void k() { uint m = i%d; })\";",
            "kernel void k() { uint m = i%d; }");
  check_one(a, "raw-delimiter-16", "a.cpp",
            "auto s = R\"abcdefghijklmnop(kernel void k() {})abcdefghijklmnop\";",
            "kernel void k() {}");
  check_none(a, "raw-delimiter-17", "a.cpp",
             "auto s = R\"abcdefghijklmnopq(kernel void k() {})abcdefghijklmnopq\";");
  check_one(a, "escaped-code-point", "a.cpp", "const char *s = \"kernel void k\\u00e9dead() {}\";",
            "kernel void k?dead() {}");
  check_one(a, "initializer-is-code", "a.cpp",
            "auto s = R\"(kernel void k() { float a[4] = {0}; int b = i%dim; })\";",
            "kernel void k() { float a[4] = {0}; int b = i%dim; }");
}

static void test_map(struct kl_arena *a) {
  const char *text = "const char *s =\n  \"kernel void k(\\n\"\n  \"  uint i) {}\\n\";";
  struct kl_cstring *v;
  size_t n = find(a, "a.cpp", text, &v);
  if (n != 1) {
    check("map-found", 0, "no kernel");
    return;
  }
  /* `k` of the first piece, the escape's newline (its backslash), and `u` of the second. */
  const char *k = strstr(v[0].text, "k("), *u = strchr(v[0].text, 'u');
  char detail[128];
  uint32_t fk = kl_offmap_to_file(&v[0].map, (uint32_t)(k - v[0].text));
  snprintf(detail, sizeof detail, "maps to %u, want %u", fk,
           (uint32_t)(strstr(text, "k(") - text));
  check("map-k", fk == (uint32_t)(strstr(text, "k(") - text), detail);
  uint32_t nl = kl_offmap_to_file(&v[0].map, (uint32_t)(strchr(v[0].text, '\n') - v[0].text));
  snprintf(detail, sizeof detail, "maps to %u", nl);
  check("map-escape", nl == (uint32_t)(strstr(text, "\\n") - text), detail);
  uint32_t fu = kl_offmap_to_file(&v[0].map, (uint32_t)(u - v[0].text));
  snprintf(detail, sizeof detail, "maps to %u", fu);
  check("map-second-piece", fu == (uint32_t)(strstr(text, "uint") - text), detail);
}

int main(void) {
  struct kl_arena *a = kl_arena_new();
  test_forms(a);
  test_templates(a);
  test_map(a);
  kl_arena_delete(a);
  return failures ? 1 : 0;
}
