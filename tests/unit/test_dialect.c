/* The dialect layer: exact blanking, what is left alone, _Pragma, qualifier and loop-hint macros,
 * #define bodies, macro expansion and its position mapping, and that hostile macros terminate. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/input/source.h"
#include "grammar/dialect.h"
#include "grammar/lex.h"

#include "tests/unit/kl_test.h"

struct fixture {
  struct kl_arena *a;
  struct kl_source src;
  struct kl_unit u;
  int rc;
};

static void parse_with(struct fixture *f, const char *text, const struct kl_offmap *base,
                       const char *dir) {
  char err[256];
  f->a = kl_arena_new();
  if (kl_source_from_memory(f->a, "t.metal", text, strlen(text), &f->src, err, sizeof err)) {
    printf("FAIL setup: %s\n", err);
    exit(1);
  }
  f->rc =
      kl_dialect_parse(f->a, &f->src, f->src.text, f->src.len, base, dir, &f->u, err, sizeof err);
}

static void parse(struct fixture *f, const char *text) {
  parse_with(f, text, NULL, NULL);
}

static void done(struct fixture *f) {
  kl_dialect_release(&f->u);
  kl_arena_delete(f->a);
}

/* First named node of a type whose text equals want (or any text when want is NULL). */
static bool find_node(const struct kl_unit *u, TSNode n, const char *type, const char *want,
                      TSNode *out) {
  TSTreeCursor cur = ts_tree_cursor_new(n);
  bool found = false;
  for (;;) {
    TSNode c = ts_tree_cursor_current_node(&cur);
    uint32_t s = ts_node_start_byte(c), e = ts_node_end_byte(c);
    if (!strcmp(ts_node_type(c), type) &&
        (!want || (strlen(want) == e - s && !memcmp(u->buf + s, want, e - s)))) {
      *out = c;
      found = true;
      break;
    }
    if (ts_tree_cursor_goto_first_child(&cur)) continue;
    bool end = false;
    while (!ts_tree_cursor_goto_next_sibling(&cur))
      if (!ts_tree_cursor_goto_parent(&cur)) {
        end = true;
        break;
      }
    if (end) break;
  }
  ts_tree_cursor_delete(&cur);
  return found;
}

static void test_blanking_exact(void) {
  const char *t = "kernel void f(device float* x [[buffer(0)]], constant uint& n [[buffer(1)]],\n"
                  "              threadgroup float* s [[threadgroup(0)]], uint i "
                  "[[thread_position_in_grid]]) {\n"
                  "  thread float* p = &x[i];\n  *p = s[0] + float(n);\n}\n";
  struct fixture f;
  parse(&f, t);
  size_t len = strlen(t);
  check("blank-parses-clean", f.rc == 0 && f.u.nerrors == 0, "rc %d, %u errors", f.rc, f.u.nerrors);
  check("blank-keeps-length", f.u.len == len && !f.u.expanded, "len %u vs %zu", f.u.len, len);
  static const struct {
    const char *word;
    enum kl_kw kind;
  } want[] = {{"kernel", KL_KW_KERNEL},
              {"device", KL_KW_DEVICE},
              {"constant", KL_KW_CONSTANT},
              {"threadgroup float", KL_KW_THREADGROUP},
              {"thread float", KL_KW_THREAD}};
  bool ok = f.u.nkws == 5;
  for (size_t i = 0; ok && i < 5; i++) {
    uint32_t off = (uint32_t)(strstr(t, want[i].word) - t);
    const struct kl_keyword *k = kl_dialect_keyword_at(&f.u, off);
    ok = k && k->kind == want[i].kind && k->off == off && k->len == strcspn(want[i].word, " ") &&
         f.u.buf[off] == ' ';
  }
  check("blank-records-offsets", ok, "%zu keywords", f.u.nkws);
  /* Every byte that is not a blanked keyword is unchanged. */
  bool same = true;
  for (size_t i = 0, k = 0; i < len && same; i++) {
    while (k < f.u.nkws && f.u.kws[k].off + f.u.kws[k].len <= i) k++;
    bool in_kw = k < f.u.nkws && f.u.kws[k].off <= i;
    same = in_kw ? f.u.buf[i] == ' ' : f.u.buf[i] == t[i];
  }
  check("blank-other-bytes-untouched", same, "buffer differs outside keywords");
  size_t n;
  const struct kl_keyword *in = kl_dialect_keywords_in(&f.u, 0, (uint32_t)(strchr(t, ',') - t), &n);
  check("keywords-in-range",
        in && n == 2 && in[0].kind == KL_KW_KERNEL && in[1].kind == KL_KW_DEVICE, "%zu in range",
        n);
  done(&f);
}

static void test_left_alone(void) {
  const char *t = "// device kernel thread\n"
                  "/* constant threadgroup */\n"
                  "const char* s = \"device thread\";\n"
                  "char c = 'k';\n"
                  "[[kernel]] void g(int a [[threadgroup(0)]]) {}\n"
                  "int h() { metal::thread x; y.device = 1; p->kernel = 2; return ::constant; }\n"
                  "int k = 0x1device;\n";
  struct fixture f;
  parse(&f, t);
  check("comments-strings-attrs-untouched", f.u.nkws == 0 && !memcmp(f.u.buf, t, strlen(t)),
        "%zu keywords blanked", f.u.nkws);
  done(&f);
}

static void test_pragma_op(void) {
  const char *t = "void f(device float* x) {\n"
                  "  _Pragma(\"clang loop unroll(full)\") for (int i = 0; i < 4; i++) x[i] = 0;\n"
                  "  _Pragma ( \"unroll\" )\n  while (x[0] > 1) x[0] -= 1;\n"
                  "  const char* s = \"_Pragma(\\\"no\\\")\";\n}\n";
  struct fixture f;
  parse(&f, t);
  uint32_t off = (uint32_t)(strstr(t, "_Pragma") - t);
  const struct kl_keyword *k = kl_dialect_keyword_at(&f.u, off);
  uint32_t end = (uint32_t)(strstr(t, ") for") - t) + 1;
  check("pragma-op-blanked", k && k->kind == KL_KW_PRAGMA_OP && k->len == end - off, "keyword %p",
        (const void *)k);
  uint32_t off2 = (uint32_t)(strstr(t, "_Pragma (") - t);
  k = kl_dialect_keyword_at(&f.u, off2);
  check("pragma-op-spaced", k && k->kind == KL_KW_PRAGMA_OP && f.u.nkws == 3, "%zu keywords",
        f.u.nkws);
  check("pragma-op-parses", f.u.nerrors == 0 && !f.u.expanded && f.u.len == strlen(t), "%u errors",
        f.u.nerrors);
  TSNode loop;
  check("pragma-op-for-position",
        find_node(&f.u, ts_tree_root_node(f.u.tree), "for_statement", NULL, &loop) &&
            ts_node_start_byte(loop) == end + 1,
        "for statement not at its file offset");
  done(&f);
}

static void test_clean_not_expanded(void) {
  const char *t = "#define N 4\n#define F(x) ((x) + 1)\n"
                  "kernel void f(device float* x [[buffer(0)]]) { x[N] = F(2); }\n";
  struct fixture f;
  parse(&f, t);
  check("clean-file-not-expanded",
        f.u.nerrors == 0 && !f.u.expanded && f.u.len == strlen(t) && f.u.map.n == 1,
        "errors %u expanded %d", f.u.nerrors, f.u.expanded);
  done(&f);
}

/* A clean parse whose file-scope statements call a macro (`INST(half);`, which tree-sitter takes
 * for an expression statement, `INST(float);` for a declaration) is expanded when that reads
 * explicit instantiations; one with no such statement, or whose macro stamps out none, is not. */
static void test_clean_macro_instances(void) {
  const char *t = "template <typename T>\n"
                  "kernel void k(device T* x [[buffer(0)]]) { x[0] = T(1); }\n"
                  "#define INST(T) template [[host_name(\"k_\" #T)]] [[kernel]] void "
                  "k<T>(device T*);\n"
                  "INST(float);\nINST(half);\n";
  struct fixture f;
  parse(&f, t);
  check("clean-macro-instances-expanded",
        f.u.nerrors == 0 && f.u.expanded && f.u.ninsts == 2 &&
            !strcmp(f.u.insts[1].host_name, "k_half") && !strcmp(f.u.insts[1].targs[0], "half"),
        "errors %u expanded %d instantiations %zu", f.u.nerrors, f.u.expanded, f.u.ninsts);
  done(&f);
  const char *g = "template <typename T>\n"
                  "kernel void k(device T* x [[buffer(0)]]) { x[0] = T(1); }\n"
                  "#define INST(T) template [[host_name(\"k_\" #T)]] [[kernel]] void "
                  "k<T>(device T*);\n"
                  "#if __METAL_VERSION__ >= 310\nINST(bfloat);\n#else\nINST(half);\n#endif\n";
  parse(&f, g);
  check("clean-macro-instances-in-if-group", f.u.nerrors == 0 && f.u.expanded && f.u.ninsts == 2,
        "errors %u expanded %d instantiations %zu", f.u.nerrors, f.u.expanded, f.u.ninsts);
  done(&f);
  const char *u = "#define ZERO(p) p[0] = 0\n"
                  "kernel void k(device float* x [[buffer(0)]]) { ZERO(x); }\n";
  parse(&f, u);
  check("clean-macro-call-in-body-not-expanded", f.u.nerrors == 0 && !f.u.expanded,
        "errors %u expanded %d", f.u.nerrors, f.u.expanded);
  done(&f);
}

static const char *kl_macro_text =
    "#define FOR_UNROLL(x) _Pragma(\"clang loop unroll(full)\") for (x)\n"
    "#define MLX_MTL_CONST static constant constexpr const\n"
    "#define STR(x) #x\n"
    "#define CAT(a, b) a##b\n"
    "#define instantiate_kernel(name, func, ...) \\\n"
    "  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;\n"
    "MLX_MTL_CONST int kN = 4;\n"
    "template <typename T, int N>\n"
    "[[kernel]] void k(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
    "  FOR_UNROLL(int j = 0; j < kN; j++) { x[i] += T(j); }\n"
    "  int CAT(after, _marker) = 1;\n"
    "}\n"
    "instantiate_kernel(\"k_\" STR(float), k, float, 2)\n"
    "int tail_marker = 0;\n";

static void test_expansion_maps_back(void) {
  const char *t = kl_macro_text;
  struct fixture f;
  parse(&f, t);
  check("expand-makes-clean", f.rc == 0 && f.u.nerrors == 0 && f.u.expanded,
        "rc %d errors %u expanded %d", f.rc, f.u.nerrors, f.u.expanded);
  TSNode root = ts_tree_root_node(f.u.tree), n;
  uint32_t inv = (uint32_t)(strstr(t, "FOR_UNROLL(int") - t);
  bool ok = find_node(&f.u, root, "for_statement", NULL, &n);
  check("expand-maps-to-invocation",
        ok && kl_offmap_to_file(&f.u.map, ts_node_start_byte(n)) == inv &&
            kl_offmap_end_to_file(&f.u.map, ts_node_end_byte(n)) > inv,
        "for statement maps to %u, invocation at %u",
        ok ? kl_offmap_to_file(&f.u.map, ts_node_start_byte(n)) : 0, inv);
  uint32_t tail = (uint32_t)(strstr(t, "tail_marker") - t);
  ok = find_node(&f.u, root, "identifier", "tail_marker", &n);
  check("expand-linear-after", ok && kl_offmap_to_file(&f.u.map, ts_node_start_byte(n)) == tail,
        "identifier after expansions maps to %u, want %u",
        ok ? kl_offmap_to_file(&f.u.map, ts_node_start_byte(n)) : 0, tail);
  ok = find_node(&f.u, root, "identifier", "after_marker", &n);
  check("expand-token-paste", ok, "after_marker not found");
  /* The instantiation the macro stamps out is read as text, never parsed: one space stands for
   * the call, and maps to it. */
  uint32_t inst = (uint32_t)(strstr(t, "instantiate_kernel(\"") - t);
  const struct kl_inst *in = f.u.ninsts == 1 ? &f.u.insts[0] : NULL;
  check("expand-instantiation-maps",
        in && in->placeholder && kl_offmap_to_file(&f.u.map, in->start) == inst &&
            !find_node(&f.u, root, "template_instantiation", NULL, &n),
        "instantiation not read as text at the invocation (%zu read)", f.u.ninsts);
  check("expand-stringize-variadic",
        in && !strcmp(in->function, "k") && in->host_name && !strcmp(in->host_name, "k_float") &&
            in->ntargs == 2 && !strcmp(in->targs[0], "float") && !strcmp(in->targs[1], "2") &&
            strstr(in->text, "decltype(k<"),
        "instantiation read wrong");
  /* The keywords of the expanded buffer are recorded at buffer offsets. */
  bool kws = true;
  for (size_t i = 0; i < f.u.nkws; i++)
    for (uint32_t j = 0; j < f.u.kws[i].len; j++)
      if (f.u.buf[f.u.kws[i].off + j] != ' ' && f.u.buf[f.u.kws[i].off + j] != '\n') kws = false;
  check("expand-keywords-buffer-offsets", kws, "a keyword offset is not blank in the buffer");
  done(&f);
}

static void test_expansion_composes_base(void) {
  const char *t = kl_macro_text;
  struct kl_arena *ba = kl_arena_new();
  struct kl_offmap base;
  kl_offmap_init(&base, ba);
  uint32_t len = (uint32_t)strlen(t);
  kl_offmap_add(&base, 0, len, 1000, len); /* the text sits at offset 1000 of an outer file */
  struct fixture f;
  parse_with(&f, t, &base, NULL);
  TSNode n;
  uint32_t inv = (uint32_t)(strstr(t, "FOR_UNROLL(int") - t);
  bool ok = f.u.expanded && find_node(&f.u, ts_tree_root_node(f.u.tree), "for_statement", NULL, &n);
  check("expand-composes-base-map",
        ok && kl_offmap_to_file(&f.u.map, ts_node_start_byte(n)) == 1000 + inv,
        "maps to %u, want %u", ok ? kl_offmap_to_file(&f.u.map, ts_node_start_byte(n)) : 0,
        1000 + inv);
  done(&f);
  kl_arena_delete(ba);
}

static void test_hostile_macros(void) {
  /* Each needs expansion (FOR_UNROLL) so the expander runs over the recursive ones too. */
  const char *t = "#undef NOT_YET_DEFINED\n"
                  "#define FOR_UNROLL(x) _Pragma(\"unroll\") for (x)\n"
                  "#define f(x) f(x) + 1\n"
                  "#define A B\n#define B A\n"
                  "#define SELF SELF\n"
                  "void g(device int* p) {\n"
                  "  FOR_UNROLL(int i = 0; i < 2; i++) p[i] = f(2) + A + SELF;\n"
                  "}\n";
  struct fixture f;
  parse(&f, t);
  TSNode n;
  check("recursive-macros-terminate",
        f.rc == 0 && f.u.expanded && f.u.nerrors == 0 &&
            find_node(&f.u, ts_tree_root_node(f.u.tree), "identifier", "SELF", &n),
        "rc %d expanded %d errors %u", f.rc, f.u.expanded, f.u.nerrors);
  check("recursive-macros-hidden", strstr(f.u.buf, "f(2) + 1") && strstr(f.u.buf, " A") != NULL,
        "self references were re-expanded");
  done(&f);
  /* Exponential growth hits the budget; the unexpanded parse is kept. */
  char big[4096];
  size_t o = (size_t)snprintf(big, sizeof big, "#define FOR_UNROLL(x) for (x)\n#define X0 a a\n");
  for (int i = 1; i < 40; i++)
    o += (size_t)snprintf(big + o, sizeof big - o, "#define X%d X%d X%d\n", i, i - 1, i - 1);
  snprintf(big + o, sizeof big - o, "void g() { FOR_UNROLL(;;) {} int v = X39; }\n");
  parse(&f, big);
  check("exponential-macro-bounded", f.rc == 0 && !f.u.expanded, "rc %d expanded %d", f.rc,
        f.u.expanded);
  done(&f);
  /* An unterminated call must not swallow the file. */
  parse(&f, "#define F(x) x\nvoid g() { F(1 }\n");
  check("unterminated-call", f.rc == 0 && !f.u.expanded, "rc %d", f.rc);
  done(&f);
}

static void test_header_macros(void) {
  char dir[] = "/tmp/kl-dialect-XXXXXX";
  if (!mkdtemp(dir)) {
    check("header-macros", false, "mkdtemp failed");
    return;
  }
  char p1[256], p2[256];
  snprintf(p1, sizeof p1, "%s/a.h", dir);
  snprintf(p2, sizeof p2, "%s/b.h", dir);
  FILE *fa = fopen(p1, "w"), *fb = fopen(p2, "w");
  if (!fa || !fb) abort();
  fputs("#include \"b.h\"\n#define DECL static constant constexpr const\n int junk(;\n", fa);
  fputs("#include \"a.h\"\n#define LOOP(x) _Pragma(\"unroll\") for (x)\n", fb);
  fclose(fa);
  fclose(fb);
  const char *t = "#include \"a.h\"\nDECL int n = 2;\n"
                  "void g(device int* p) { LOOP(int i = 0; i < n; i++) p[i] = 0; }\n";
  struct fixture f;
  parse_with(&f, t, NULL, dir);
  check("header-macros-cyclic-include", f.rc == 0 && f.u.expanded && f.u.nerrors == 0,
        "expanded %d errors %u", f.u.expanded, f.u.nerrors);
  done(&f);
  parse_with(&f, t, NULL, NULL);
  check("header-macros-no-include-dir", f.rc == 0 && !f.u.expanded && f.u.nerrors > 0,
        "expanded %d", f.u.expanded);
  done(&f);
  unlink(p1);
  unlink(p2);
  rmdir(dir);
}

/* The comment and literal skippers the rules share, and where a node's blanked keywords start. */
static void test_skips_and_lead(void) {
  const char *t = "a // x /* y\nb /* c\n d */ e \"s\\\"/*\" 'q' \"open\n/* never";
  uint32_t len = (uint32_t)strlen(t);
  uint32_t lc = (uint32_t)(strstr(t, "//") - t), bc = (uint32_t)(strstr(t, "/* c") - t);
  check_int("line comment ends at its newline", kl_lex_skip_comment(t, len, lc),
            strchr(t, '\n') - t);
  check_int("block comment ends past */", kl_lex_skip_comment(t, len, bc), strstr(t, "*/") + 2 - t);
  check_int("no comment at a plain slash", kl_lex_skip_comment("a / b", 5, 2), 2);
  uint32_t unclosed = (uint32_t)(strstr(t, "/* never") - t);
  check_int("unclosed block comment runs to the end", kl_lex_skip_comment(t, len, unclosed), len);
  uint32_t sq = (uint32_t)(strchr(t, '"') - t);
  check_int("string with an escaped quote", kl_lex_skip_literal(t, len, sq),
            strstr(t, "/*\" ") + 3 - t);
  uint32_t cq = (uint32_t)(strchr(t, '\'') - t);
  check_int("character literal", kl_lex_skip_literal(t, len, cq), cq + 3);
  uint32_t op = (uint32_t)(strstr(t, "\"open") - t);
  check_int("unclosed string stops at the newline", kl_lex_skip_literal(t, len, op),
            strstr(t, "\n/*") - t);

  const char *k = "kernel void f(device float* x) {}\n";
  struct fixture f;
  parse(&f, k);
  TSNode p;
  if (find_node(&f.u, ts_tree_root_node(f.u.tree), "parameter_declaration", NULL, &p)) {
    uint32_t lead = kl_dialect_lead(p);
    check_int("lead of a first parameter starts after its (", lead, strchr(k, '(') + 1 - k);
    size_t n = 0;
    const struct kl_keyword *kw = kl_dialect_keywords_in(&f.u, lead, ts_node_start_byte(p), &n);
    check("blanked device lies in the lead", n == 1 && kw[0].kind == KL_KW_DEVICE, "%zu keywords",
          n);
  } else {
    check("parameter found", false, "no parameter_declaration");
  }
  TSNode def;
  if (find_node(&f.u, ts_tree_root_node(f.u.tree), "function_definition", NULL, &def))
    check_int("lead of the first definition is the file start", kl_dialect_lead(def), 0);
  done(&f);
}

struct trail_check {
  const char *buf;
  unsigned nodes, differ;
  uint32_t after_comment; /* lead of the declaration that follows the comment */
  uint32_t after_inst;    /* lead of the function after the blanked instantiation */
};

static enum kl_walk trail_node(TSNode n, const struct kl_walk_trail *t, void *ctx) {
  struct trail_check *c = ctx;
  uint32_t lead = kl_dialect_trail_lead(t);
  c->nodes++;
  if (lead != kl_dialect_lead(n)) c->differ++;
  uint32_t s = ts_node_start_byte(n);
  if (!strcmp(ts_node_type(n), "declaration") && !strncmp(c->buf + s, "float b", 7))
    c->after_comment = lead;
  if (!strcmp(ts_node_type(n), "function_definition") && !strncmp(c->buf + s, "float* g", 8))
    c->after_inst = lead;
  return KL_WALK_DESCEND;
}

/* A trail walk's lead is kl_dialect_lead's for every node: first children (which climb), nodes
 * after a comment, after a blanked instantiation, and a walk rooted below the tree's root. */
static void test_trail_lead(void) {
  const char *t = "constant float k = 1;\n"
                  "template <typename T> kernel void f(device T* x, uint i) {\n"
                  "  float a = x[i]; // note\n"
                  "  float b = a;\n"
                  "  for (uint j = 0; j < 4; j++) { threadgroup float s[4]; x[j] = s[j] + b; }\n"
                  "}\n"
                  "template [[host_name(\"f_float\")]] kernel void f<float>(device float*, uint);\n"
                  "device float* g(device float* p) { return p; }\n";
  struct fixture f;
  parse(&f, t);
  struct trail_check c = {f.u.buf, 0, 0, 0, 0};
  kl_dialect_walk_trail(ts_tree_root_node(f.u.tree), trail_node, &c);
  check("every node visited", c.nodes > 50, "%u nodes", c.nodes);
  check_int("trail leads equal kl_dialect_lead", c.differ, 0);
  check_int("lead after a comment is the comment's end", c.after_comment,
            strstr(t, "// note") + 7 - t);
  check_int("lead after a blanked instantiation is the previous definition's end", c.after_inst,
            strstr(t, "}\ntemplate [[") + 1 - t);
  TSNode body;
  if (find_node(&f.u, ts_tree_root_node(f.u.tree), "compound_statement", NULL, &body)) {
    c.nodes = c.differ = 0;
    kl_dialect_walk_trail(body, trail_node, &c);
    check("body visited", c.nodes > 10, "%u nodes", c.nodes);
    check_int("leads in a walk below the root", c.differ, 0);
  } else {
    check("body found", false, "no compound_statement");
  }
  done(&f);
}

/* A block-comment opener or a quote inside a directive's line comment swallows nothing. */
static void test_directive_comment(void) {
  const char *t =
      "#define SCALE 2 // see /* the note\n"
      "#define UNROLL(x) _Pragma(\"unroll\") for (x)\n"
      "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  UNROLL(int j = 0; j < SCALE; j++) { a[i] += j; }\n"
      "}\n";
  struct fixture f;
  parse(&f, t);
  /* tree-sitter-cpp itself marks that #define line as an ERROR; what matters here is that the
   * macro on the next line is still defined and expanded into a loop. */
  TSNode loop;
  bool found =
      f.rc == 0 && find_node(&f.u, ts_tree_root_node(f.u.tree), "for_statement", NULL, &loop);
  check("directive-line-comment", found && f.u.expanded, "rc %d expanded %d, loop found %d", f.rc,
        f.u.expanded, found);
  done(&f);
}

/* One statement read by kl_inst_read: function, host name and arguments joined
 * with '|', or "-" when it is not read. */
static const char *read_one(struct kl_arena *a, const char *t) {
  struct kl_inst in;
  uint32_t end;
  if (!kl_inst_read(a, t, (uint32_t)strlen(t), 0, &in, &end)) return "-";
  const char *out = kl_arena_printf(a, "%s %s", in.function, in.host_name ? in.host_name : "?");
  for (size_t i = 0; i < in.ntargs; i++) out = kl_arena_printf(a, "%s|%s", out, in.targs[i]);
  return end == strlen(t) ? out : "bad end";
}

static void test_instances_as_text(void) {
  struct kl_arena *a = kl_arena_new();
  static const char *const cases[][2] = {
      {"template [[host_name(\"a\")]] [[kernel]] decltype(f<float, 2>) f<float, 2>;",
       "f a|float|2"},
      {"template [[host_name(\"k_\" \"f32\")]] kernel kt k<float,   vec<float, 4>>;",
       "k k_f32|float|vec<float, 4>"},
      {"template [[host_name(\"g\")]] [[kernel]] void g<half>(device half* x [[buffer(0)]]);",
       "g g|half"},
      {"template [[kernel]] void ns::h<int>(int);", "h ?|int"},
      {"template [[host_name(NAME)]] kernel kt k<>;", "k NAME"},
      {"template <typename T> void f(T);", "-"},
      {"template struct S<int>;", "-"},
      {"template void f<float>(int) { }", "-"},
      {"template kernel kt k<float /* why */>;", "-"},
      {"template [[host_name(\"s\")]] void k<(1 << 11), float>(int);", "k s|(1 << 11)|float"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *got = read_one(a, cases[i][0]);
    check("instance-read", !strcmp(got, cases[i][1]), "%s: got \"%s\", want \"%s\"", cases[i][0],
          got, cases[i][1]);
  }
  /* Written out, an instantiation stays in the buffer (positions, messages) but not in the
   * tree; the model reads it from the unit. */
  const char *t = "template <typename T> kernel void k(device T* x) { x[0] = T(1); }\n"
                  "template [[host_name(\"k_f\")]] [[kernel]] decltype(k<float>) k<float>;\n";
  struct fixture f;
  parse(&f, t);
  TSNode n;
  check("instance-written-out",
        f.u.ninsts == 1 && !f.u.insts[0].placeholder &&
            f.u.insts[0].start == strchr(t, '\n') + 1 - t && f.u.nerrors == 0 &&
            !find_node(&f.u, ts_tree_root_node(f.u.tree), "template_instantiation", NULL, &n) &&
            strstr(f.u.buf, "host_name(\"k_f\")"),
        "%zu read, %u errors", f.u.ninsts, f.u.nerrors);
  done(&f);
  kl_arena_delete(a);
}

/* Qualifier macros: the Metal library's METAL_FUNC (never defined in the file) and a macro the
 * file defines as only `inline` and attributes are blanked where used, not where a directive
 * names them. */
static void test_qualifier_macros(void) {
  const char *t = "#define FORCE inline __attribute__((always_inline))\n"
                  "#ifdef METAL_FUNC\n#endif\n"
                  "template <typename T> METAL_FUNC T sq(T x) { return x * x; }\n"
                  "struct S { static METAL_FUNC int one() { return 1; } };\n"
                  "FORCE float two() { return 2.0f; }\n";
  struct fixture f;
  parse(&f, t);
  uint32_t use = (uint32_t)(strstr(t, "METAL_FUNC T") - t);
  uint32_t named = (uint32_t)(strstr(t, "METAL_FUNC\n") - t);
  uint32_t force = (uint32_t)(strstr(t, "FORCE float") - t);
  const struct kl_keyword *k = kl_dialect_keyword_at(&f.u, use);
  const struct kl_keyword *k2 = kl_dialect_keyword_at(&f.u, force);
  check("qualifier-macro-blanked",
        k && k->kind == KL_KW_QUALIFIER && k->len == 10 && k2 && k2->kind == KL_KW_QUALIFIER &&
            k2->len == 5,
        "keywords %p %p", (const void *)k, (const void *)k2);
  check("qualifier-macro-directive-kept",
        !kl_dialect_keyword_at(&f.u, named) && !memcmp(f.u.buf + named, "METAL_FUNC", 10) &&
            !memcmp(f.u.buf, "#define FORCE inline", 20),
        "a directive's name was blanked");
  check("qualifier-macro-parses", f.u.nerrors == 0 && !f.u.expanded, "%u errors, expanded %d",
        f.u.nerrors, f.u.expanded);
  done(&f);
}

/* A macro alone on its line right before a loop, which the file does not define, is blanked so
 * the loop stays a loop; one the file defines (a barrier here) is left for expansion to show. */
static void test_loop_macros(void) {
  const char *t = "void f(device float* x) {\n"
                  "  UNROLL_HINT\n"
                  "  for (short i = 0; i < 4; ++i) x[i] = 0;\n"
                  "}\n";
  struct fixture f;
  parse(&f, t);
  uint32_t off = (uint32_t)(strstr(t, "UNROLL_HINT") - t);
  const struct kl_keyword *k = kl_dialect_keyword_at(&f.u, off);
  TSNode loop;
  check("loop-macro-blanked", k && k->kind == KL_KW_LOOP_MACRO && k->len == 11, "keyword %p",
        (const void *)k);
  check("loop-macro-loop",
        f.u.nerrors == 0 && !f.u.expanded &&
            find_node(&f.u, ts_tree_root_node(f.u.tree), "for_statement", NULL, &loop) &&
            ts_node_start_byte(loop) == (uint32_t)(strstr(t, "for") - t),
        "%u errors", f.u.nerrors);
  done(&f);
  const char *d = "#define SYNC threadgroup_barrier(mem_flags::mem_threadgroup);\n"
                  "void g(device float* x) {\n"
                  "  SYNC\n"
                  "  for (short i = 0; i < 4; ++i) x[i] = 0;\n"
                  "}\n";
  parse(&f, d);
  TSNode call;
  check("loop-macro-defined-expanded",
        f.u.expanded &&
            find_node(&f.u, ts_tree_root_node(f.u.tree), "call_expression", NULL, &call),
        "expanded %d", f.u.expanded);
  done(&f);
}

/* A #define body is left as written: blanked to nothing, `#define X` and spaces would make the
 * grammar take the next line as the body. A block comment in a body is blanked, a line comment
 * ends the directive. */
static void test_define_bodies(void) {
  const char *t = "#define AS device\n"
                  "#define HINT _Pragma(\"unroll\")\n"
                  "#define CALL(a) f(a, /*flag=*/1) // see here\n"
                  "kernel void k(device float* x [[buffer(0)]]) { x[0] = 1; }\n";
  struct fixture f;
  parse(&f, t);
  uint32_t kw = (uint32_t)(strstr(t, "kernel") - t);
  const struct kl_keyword *k = kl_dialect_keyword_at(&f.u, kw);
  TSNode fn;
  check("define-body-kept",
        !memcmp(f.u.buf, "#define AS device\n#define HINT _Pragma", 38) && k &&
            k->kind == KL_KW_KERNEL,
        "buffer starts %.40s", f.u.buf);
  check("define-body-comment",
        strstr(f.u.buf, "f(a,          1) // see here") != NULL && f.u.nerrors == 0 &&
            find_node(&f.u, ts_tree_root_node(f.u.tree), "function_definition", NULL, &fn),
        "%u errors", f.u.nerrors);
  done(&f);
}

/* The tree of text parsed after the run r (NULL: alone), as an S-expression with the root's
 * byte range and error count. */
static char *tree_after(struct kl_arena *a, struct kl_dialect_reuse *r, const char *text) {
  struct kl_source src;
  struct kl_unit u;
  char err[256];
  if (kl_source_from_memory(a, "t.metal", text, strlen(text), &src, err, sizeof err) ||
      kl_dialect_parse_next(a, &src, src.text, src.len, NULL, NULL, r, &u, err, sizeof err)) {
    printf("FAIL setup: %s\n", err);
    exit(1);
  }
  TSNode root = ts_tree_root_node(u.tree);
  char *s = ts_node_string(root);
  char *out = kl_arena_printf(a, "%u-%u %u %s", ts_node_start_byte(root), ts_node_end_byte(root),
                              u.nerrors, s);
  free(s);
  kl_dialect_release(&u);
  return out;
}

/* The id of the first child of the third declaration of t. */
static const void *deep_id(const TSTree *t) {
  return ts_node_child(ts_node_child(ts_tree_root_node(t), 2), 0).id;
}

/* Units that begin with the same long text (an MLX header) are parsed as edits of the one
 * before, and give the tree a fresh parse gives; one with errors gets a fresh parse, and the
 * run keeps the last clean tree. */
static void test_reuse_prefix(void) {
  struct kl_arena *a = kl_arena_new();
  char *hdr = kl_arena_printf(a, "#include <metal_stdlib>\nusing namespace metal;\n");
  for (int i = 0; i < 24; i++)
    hdr = kl_arena_printf(a, "%sinline float helper_%d(float x) { return x * %d.0f + 1.0f; }\n",
                          hdr, i, i);
  const char *bodies[] = {
      "[[kernel]] void k1(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  o[i] = helper_1(o[i]);\n}\n",
      "[[kernel]] void k2(device float* o [[buffer(0)]], device float* p [[buffer(1)]],\n"
      "  uint i [[thread_position_in_grid]]) {\n  for (uint k = 0; k < 4; ++k) o[i] += p[k];\n}\n",
      "[[kernel]] void k3(device float* o [[buffer(0)]] uint i) {\n  o[i] = = 1;\n}\n",
      "[[kernel]] void k4(device float* o [[buffer(0)]]) { o[0] = helper_2(1.0f); }\n",
  };
  struct kl_dialect_reuse r = {0};
  for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
    char *text = kl_arena_printf(a, "%s%s", hdr, bodies[i]);
    uint32_t before = r.first.len;
    /* A node of a helper of the header, as the kept tree holds it: an edit reuses the helper,
     * and with it the array its children sit in, which a node's id points into. */
    const void *first = r.first.tree ? deep_id(r.first.tree) : NULL;
    char *got = tree_after(a, &r, text);
    char *want = tree_after(a, NULL, text);
    char name[32];
    snprintf(name, sizeof name, "reuse-prefix-%zu", i + 1);
    check(name, !strcmp(got, want), "edited parse\n%s\nfresh parse\n%s", got, want);
    /* k3 has errors: it is not what the next unit edits. */
    uint32_t kept = i == 2 ? before : (uint32_t)strlen(text);
    snprintf(name, sizeof name, "reuse-kept-%zu", i + 1);
    check(name, r.first.tree && r.first.len == kept, "kept %u bytes, want %u", r.first.len, kept);
    if (first && i != 2) {
      snprintf(name, sizeof name, "reuse-edited-%zu", i + 1);
      check(name, deep_id(r.first.tree) == first, "the header was parsed again");
    }
  }
  kl_dialect_reuse_end(&r);
  check("reuse-end", r.first.tree == NULL, "tree still kept");
  kl_arena_delete(a);
}

/* ERROR and MISSING nodes under n. */
static unsigned count_errors(TSNode n) {
  if (ts_node_is_missing(n)) return 1;
  if (!ts_node_has_error(n)) return 0;
  unsigned c = ts_node_symbol(n) == (TSSymbol)-1;
  for (uint32_t i = 0; i < ts_node_child_count(n); i++) c += count_errors(ts_node_child(n, i));
  return c;
}

/* A run whose first parses have errors that the expansion mends, each text over the bytes an
 * edit of a kept tree needs: after one such unit, the next first parse is an edit of the kept
 * first tree where that has few errors, else a probe that stops at its first error (the kept
 * first tree then stays as it was). Every unit still gets the tree, and the error count, of a
 * fresh parse: where the expansion mends all, where it mends only some (the count decides), and
 * where the text has no error left. */
static void test_reuse_probe(void) {
  struct kl_arena *a = kl_arena_new();
  const char *define = "#define DECL(name, v) inline float name(float x) { return x * v; }\n";
  char *many = kl_arena_printf(a, "%s", define), *few = kl_arena_printf(a, "%s", define);
  for (int i = 0; i < 48; i++) many = kl_arena_printf(a, "%sDECL(f_%d, %d.0f)\n", many, i, i);
  few = kl_arena_printf(a, "%sDECL(f_1, 1.0f)\nDECL(f_2, 2.0f)\n", few);
  const char *pad = "// a line of comment, for the length an edit of a tree needs\n";
  for (int i = 0; i < 24; i++) few = kl_arena_printf(a, "%s%s", few, pad);
  char *plain = kl_arena_printf(a, "inline float f_1(float x) { return x; }\n");
  for (int i = 0; i < 24; i++) plain = kl_arena_printf(a, "%s%s", plain, pad);
  const char *kernels[] = {
      "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  o[i] = f_1(o[i]);\n}\n",
      "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  o[i] = f_2(o[i]) + 1.0f;\n}\n",
      "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
      "  o[i] = = f_2(o[i]);\n}\n",
  };
  struct {
    const char *head;
    int kernel;
    bool probe_after; /* r.probe once the unit is parsed */
    /* The first tree kept is the one before: a probe stopped (2, 7), or a clean tree is kept
     * over one with errors (6; at 7 its edit is not taken, and the probe stops). 3's probe
     * stopped too, but the count its expansion asked for parsed it whole. A new run (8) keeps
     * a tree of few errors, and 9 edits it. */
    bool kept_old;
  } steps[] = {
      {many, 0, true, false},  {many, 1, true, true},  {many, 2, false, false},
      {many, 0, true, false},  {plain, 1, false, false}, {many, 1, true, true},
      {many, 0, true, true},   {few, 0, true, false},  {few, 1, true, false},
  };
  struct kl_dialect_reuse r = {0};
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    if (i == 7) kl_dialect_reuse_end(&r);
    char *text = kl_arena_printf(a, "%s%s", steps[i].head, kernels[steps[i].kernel]);
    char *before = r.first.text ? kl_arena_strndup(a, r.first.text, r.first.len) : NULL;
    char *got = tree_after(a, &r, text);
    char *want = tree_after(a, NULL, text);
    char name[32];
    snprintf(name, sizeof name, "probe-tree-%zu", i + 1);
    check(name, !strcmp(got, want), "run's parse\n%s\nfresh parse\n%s", got, want);
    snprintf(name, sizeof name, "probe-after-%zu", i + 1);
    check(name, r.probe == steps[i].probe_after, "probe %d", r.probe);
    snprintf(name, sizeof name, "probe-kept-%zu", i + 1);
    bool kept_old = before && r.first.text && !strcmp(before, r.first.text) && strcmp(before, text);
    check(name, kept_old == steps[i].kept_old, "kept the %s tree", kept_old ? "old" : "new");
    /* The probe is what is tried: the kept tree of `many` has errors enough. */
    if (i == 0) {
      snprintf(name, sizeof name, "probe-many-errors");
      unsigned n = r.first.tree ? count_errors(ts_tree_root_node(r.first.tree)) : 0;
      check(name, n >= 32, "%u errors kept", n);
    }
  }
  kl_dialect_reuse_end(&r);
  check("probe-end", !r.probe, "still probing");
  kl_arena_delete(a);
}

int main(void) {
  alarm(60); /* a hang is a failure, not a stuck test run */
  test_blanking_exact();
  test_left_alone();
  test_pragma_op();
  test_clean_not_expanded();
  test_clean_macro_instances();
  test_expansion_maps_back();
  test_expansion_composes_base();
  test_hostile_macros();
  test_header_macros();
  test_skips_and_lead();
  test_trail_lead();
  test_directive_comment();
  test_instances_as_text();
  test_qualifier_macros();
  test_loop_macros();
  test_define_bodies();
  test_reuse_prefix();
  test_reuse_probe();
  return failures ? 1 : 0;
}
