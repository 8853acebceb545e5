/* Unit tests for the preprocessor module (grammar/preproc.c): chains, their evaluation under
 * assumptions about the build, and dead-branch stripping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/core/arena.h"
#include "grammar/dialect.h"
#include "grammar/expand.h"
#include "grammar/preproc.h"
#include "tests/unit/kl_test.h"

/* taken[] of the IF/ELIF/ELSE lines of text, as a string of '1', '0', '?'. */
static const char *branches(struct kl_arena *a, const char *text, const struct kl_pp_assume *as,
                            bool conds) {
  struct kl_pp pp;
  kl_preproc_scan(a, text, (uint32_t)strlen(text), &pp);
  int *taken = kl_arena_alloc(a, (pp.nlines + 1) * sizeof *taken);
  int *cond = kl_arena_alloc(a, (pp.nlines + 1) * sizeof *cond);
  kl_preproc_eval(a, &pp, as, taken, cond);
  char *out = kl_arena_alloc(a, pp.nlines + 1);
  size_t n = 0;
  for (size_t i = 0; i < pp.nlines; i++) {
    enum kl_pp_kind k = pp.lines[i].kind;
    if (k != KL_PP_IF && k != KL_PP_ELIF && k != KL_PP_ELSE) continue;
    int v = conds ? cond[i] : taken[i];
    out[n++] = v < 0 ? '?' : (char)('0' + v);
  }
  out[n] = '\0';
  return out;
}

/* What one expansion gave, for comparing two. */
struct expansion {
  char *out;
  uint32_t n;
  struct kl_offmap map;
  struct kl_inst *insts;
  size_t ninsts;
};

static struct expansion expand(struct kl_arena *a, const char *text, const char *dir, bool keep) {
  struct expansion e = {0};
  uint32_t len = (uint32_t)strlen(text);
  e.out = keep ? kl_expand_keep(a, text, len, dir, &e.n, &e.map, &e.insts, &e.ninsts)
               : kl_expand_text(a, text, len, dir, &e.n, &e.map, &e.insts, &e.ninsts);
  return e;
}

static bool same_expansion(const struct expansion *x, const struct expansion *y) {
  if (!x->out || !y->out || x->n != y->n || memcmp(x->out, y->out, x->n) || x->out[x->n] ||
      y->out[y->n] || x->map.n != y->map.n || x->ninsts != y->ninsts)
    return false;
  if (memcmp(x->map.segs, y->map.segs, x->map.n * sizeof *x->map.segs)) return false;
  for (size_t i = 0; i < x->ninsts; i++) {
    const struct kl_inst *p = &x->insts[i], *q = &y->insts[i];
    if (strcmp(p->function, q->function) || !p->host_name != !q->host_name ||
        (p->host_name && strcmp(p->host_name, q->host_name)) || p->ntargs != q->ntargs ||
        p->start != q->start || p->end != q->end || p->textlen != q->textlen ||
        p->placeholder != q->placeholder || memcmp(p->text, q->text, p->textlen) ||
        p->text[p->textlen])
      return false;
    for (size_t j = 0; j < p->ntargs; j++)
      if (strcmp(p->targs[j], q->targs[j])) return false;
  }
  return true;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* An expansion kept for the lint is taken only by the same text, from the same folder, in the
 * same generation: a header from another folder, or one edited for a new generation, gives
 * another expansion. */
static void kept_expansions(struct kl_arena *a) {
  char root[] = "/tmp/kl-preproc-XXXXXX";
  if (!mkdtemp(root)) {
    check("preproc-kept", false, "mkdtemp failed");
    return;
  }
  char d1[64], d2[64], h1[80], h2[80];
  snprintf(d1, sizeof d1, "%s/one", root);
  snprintf(d2, sizeof d2, "%s/two", root);
  snprintf(h1, sizeof h1, "%s/inst.h", d1);
  snprintf(h2, sizeof h2, "%s/inst.h", d2);
  mkdir(d1, 0700);
  mkdir(d2, 0700);
  write_file(h1, "#define INST(T) template [[host_name(\"k_\" #T)]] [[kernel]] void k<T>(device "
                 "T *);\n#define W 1\n");
  write_file(h2, "#define INST(T) template [[host_name(\"j_\" #T)]] [[kernel]] void j<T>(device "
                 "T *);\n#define W 2\n");
  const char *text = "#include \"inst.h\"\nint w = W;\nINST(float)\nINST(half)\n";
  const char *other = "#include \"inst.h\"\nint v = W;\nINST(float)\nINST(half)\n";
  struct expansion fresh = expand(a, text, d1, false);
  check("preproc-kept-setup",
        fresh.out && strstr(fresh.out, "w = 1") && fresh.ninsts == 2 &&
            !strcmp(fresh.insts[1].host_name, "k_half"),
        "%s", fresh.out ? fresh.out : "(null)");
  expand(a, text, d1, true);
  struct expansion taken = expand(a, text, d1, false);
  check("preproc-kept-same", same_expansion(&fresh, &taken), "the kept expansion differs");
  expand(a, text, d1, true);
  struct expansion two = expand(a, text, d2, false);
  check("preproc-kept-other-folder",
        two.out && strstr(two.out, "w = 2") && two.ninsts == 2 &&
            !strcmp(two.insts[0].function, "j"),
        "%s", two.out ? two.out : "(null)");
  struct expansion v = expand(a, other, d1, false);
  check("preproc-kept-other-text", v.out && strstr(v.out, "v = 1"), "%s", v.out ? v.out : "(null)");
  /* The entry of d1 is still there: an edit and a new generation must not see it. */
  write_file(h1, "#define INST(T) template [[host_name(\"m_\" #T)]] [[kernel]] void m<T>(device "
                 "T *);\n#define W 33\n");
  kl_expand_forget_paths();
  struct expansion edited = expand(a, text, d1, false);
  check("preproc-kept-new-generation",
        edited.out && strstr(edited.out, "w = 33") && edited.ninsts == 2 &&
            !strcmp(edited.insts[0].function, "m"),
        "%s", edited.out ? edited.out : "(null)");
  kl_expand_forget_headers();
  unlink(h1);
  unlink(h2);
  rmdir(d1);
  rmdir(d2);
  rmdir(root);
}

/* Expand text from dir with the headers' parsed steps and by parsing their lines again: the
 * two must give the same expansion, twice over. The expansion with the steps is returned. */
static struct expansion expand_both(struct kl_arena *a, const char *name, const char *text,
                                    const char *dir) {
  kl_expand_cache_headers(false);
  struct expansion lines = expand(a, text, dir, false);
  kl_expand_cache_headers(true);
  struct expansion steps = expand(a, text, dir, false);
  struct expansion again = expand(a, text, dir, false);
  check(name, same_expansion(&lines, &steps) && same_expansion(&steps, &again),
        "with steps \"%s\", from lines \"%s\"", steps.out ? steps.out : "(null)",
        lines.out ? lines.out : "(null)");
  return steps;
}

/* Whether e expanded to text that has needle. */
static bool has(const struct expansion *e, const char *needle) {
  return e->out && strstr(e->out, needle);
}

/* What a header defines is parsed once per run and installed by each expansion that reads it;
 * each expansion still resolves the header's includes and skips the headers it has seen. */
static void header_steps(struct kl_arena *a) {
  char root[] = "/tmp/kl-preproc-XXXXXX";
  if (!mkdtemp(root)) {
    check("preproc-steps", false, "mkdtemp failed");
    return;
  }
  char p[8][128];
  const char *dirs[] = {"a", "b", "inc", "a/lib", "b/lib"};
  for (size_t i = 0; i < 5; i++) {
    snprintf(p[0], sizeof p[0], "%s/%s", root, dirs[i]);
    mkdir(p[0], 0700);
  }
  /* Spliced bodies, parameters, # and ##, and both branches of a header's #if read. */
  const char *files[][2] = {
      {"inc/h.h", "#ifndef H_H\n#define H_H\n#if FAST\n#define T 1\n#else\n#define T 2\n#endif\n"
                  "#define CAT(a, b) a ## \\\n  b\n#define STR(x) #x\n"
                  "#define INST(T) template [[host_name(\"k_\" #T)]] [[kernel]] void k<T>(device "
                  "T *);\n#include \"lib/n.h\"\n#endif\n"},
      {"a/lib/n.h", "#define N 1\n"},
      {"b/lib/n.h", "#define N 2\n"},
      {"a/u.h", "#define X 1\n#undef X\n#define Y X\n"},
      {"a/s.h", "#define V 1\n"},
      {"a/t.h", "#define V 2\n#include \"s.h\"\n"},
      {"a/x.h", "#define C CX\n#include \"c.h\"\n"},
      {"b/x.h", "#define C CY\n#include \"c.h\"\n"},
  };
  const char *more[][2] = {{"a/c.h", "#define CX 10\n"}, {"b/c.h", "#define CY 20\n"}};
  for (size_t i = 0; i < 8; i++) {
    snprintf(p[0], sizeof p[0], "%s/%s", root, files[i][0]);
    write_file(p[0], files[i][1]);
  }
  for (size_t i = 0; i < 2; i++) {
    snprintf(p[0], sizeof p[0], "%s/%s", root, more[i][0]);
    write_file(p[0], more[i][1]);
  }
  char da[64], db[64];
  snprintf(da, sizeof da, "%s/a", root);
  snprintf(db, sizeof db, "%s/b", root);
  const char *h =
      "#include \"../inc/h.h\"\nint t = T, n = N, CAT(x, y);\nconst char *s = STR(a b);\n"
      "INST(float)\n";
  struct expansion ha = expand_both(a, "preproc-steps-same", h, da);
  check("preproc-steps-macros",
        has(&ha, "t = 2, n = 1, xy;") && has(&ha, "\"a b\"") && ha.ninsts == 1 &&
            !strcmp(ha.insts[0].host_name, "k_float"),
        "%s", ha.out ? ha.out : "(null)");
  /* One header, its include found through the include folder: another folder, another N. */
  struct expansion hb = expand_both(a, "preproc-steps-same-other-dir", h, db);
  check("preproc-steps-include-dir", has(&hb, "t = 2, n = 2,"), "%s", hb.out ? hb.out : "(null)");
  /* Headers of one name in two folders, each including its own c.h. */
  const char *x = "#include \"x.h\"\nint c = C;\n";
  struct expansion xa = expand_both(a, "preproc-steps-folder-a", x, da);
  struct expansion xb = expand_both(a, "preproc-steps-folder-b", x, db);
  check("preproc-steps-folders", has(&xa, "c = 10;") && has(&xb, "c = 20;"), "%s | %s",
        xa.out ? xa.out : "(null)", xb.out ? xb.out : "(null)");
  /* A header's #undef does nothing; the file's own does. */
  struct expansion u =
      expand_both(a, "preproc-steps-undef-same",
                  "#include \"u.h\"\nint x = X, y = Y;\n#undef X\nint z = X;\n", da);
  check("preproc-steps-undef", has(&u, "x = 1, y = 1;") && has(&u, "z = X;"), "%s",
        u.out ? u.out : "(null)");
  /* A header seen before is skipped, whoever includes it again. */
  struct expansion st =
      expand_both(a, "preproc-steps-seen-same",
                  "#include \"s.h\"\n#include \"t.h\"\n#include \"s.h\"\nint v = V;\n", da);
  struct expansion ts = expand_both(a, "preproc-steps-seen-same-2",
                                    "#include \"t.h\"\n#include \"s.h\"\nint v = V;\n", da);
  check("preproc-steps-seen", has(&st, "v = 2;") && has(&ts, "v = 1;"), "%s | %s",
        st.out ? st.out : "(null)", ts.out ? ts.out : "(null)");
  check("preproc-steps-defines",
        kl_expand_defines(a, h, (uint32_t)strlen(h), da, "INST", 4) &&
            !kl_expand_defines(a, h, (uint32_t)strlen(h), da, "NONE", 4),
        "a header's macro is a definition the file can see");
  /* An edit seen in a new generation: the header is read and parsed again, nested one too. */
  snprintf(p[0], sizeof p[0], "%s/a/lib/n.h", root);
  write_file(p[0], "#define N 333\n");
  snprintf(p[1], sizeof p[1], "%s/a/c.h", root);
  write_file(p[1], "#define CX 4444\n");
  kl_expand_forget_paths();
  struct expansion ea = expand_both(a, "preproc-steps-edited-same", h, da);
  struct expansion ex = expand_both(a, "preproc-steps-edited-same-2", x, da);
  check("preproc-steps-edited", has(&ea, "n = 333,") && has(&ex, "c = 4444;"), "%s | %s",
        ea.out ? ea.out : "(null)", ex.out ? ex.out : "(null)");
  kl_expand_forget_paths();
  struct expansion eb = expand_both(a, "preproc-steps-edited-kept", h, db);
  check("preproc-steps-edited-other", has(&eb, "n = 2,"), "%s", eb.out ? eb.out : "(null)");
  /* What an expansion read of the file system is recorded, and holds until a header it read
   * is edited, or one is made where an include found none. */
  const char *z = "#include \"zz.h\"\n#define Q 1\nint q = Q, z = ZZ;\n";
  struct kl_expand_deps dz = {NULL, 0, 0}, dh = {NULL, 0, 0};
  kl_expand_record(&dz);
  struct expansion z0 = expand(a, z, da, false);
  kl_expand_record(&dh);
  struct expansion z1 = expand(a, h, da, false);
  kl_expand_record(NULL);
  struct expansion z2 = expand(a, z, da, false);
  size_t nz = dz.n;
  check("preproc-record", has(&z0, "z = ZZ;") && has(&z1, "n = 333,") && has(&z2, "q = 1") &&
            nz >= 1 && dh.n >= 4 && kl_expand_deps_hold(&dz) && kl_expand_deps_hold(&dh),
        "%zu %zu", nz, dh.n);
  char zz[160];
  snprintf(zz, sizeof zz, "%s/a/zz.h", root);
  write_file(zz, "#define ZZ 7\n");
  /* Asked through the generation's caches: a change counts from the next generation on. */
  kl_expand_forget_paths();
  check("preproc-record-made", !kl_expand_deps_hold(&dz) && kl_expand_deps_hold(&dh) &&
            dz.n == nz, "%s", "zz.h made");
  unlink(zz);
  write_file(p[0], "#define N 44\n");
  kl_expand_forget_paths();
  check("preproc-record-edited", kl_expand_deps_hold(&dz) && !kl_expand_deps_hold(&dh), "%s",
        "n.h edited");
  kl_expand_deps_free(&dz);
  kl_expand_deps_free(&dh);
  kl_expand_forget_headers();
  for (size_t i = 0; i < 8; i++) {
    snprintf(p[0], sizeof p[0], "%s/%s", root, files[i][0]);
    unlink(p[0]);
  }
  for (size_t i = 0; i < 2; i++) {
    snprintf(p[0], sizeof p[0], "%s/%s", root, more[i][0]);
    unlink(p[0]);
  }
  for (size_t i = 5; i-- > 0;) {
    snprintf(p[0], sizeof p[0], "%s/%s", root, dirs[i]);
    rmdir(p[0]);
  }
  rmdir(root);
}

int main(void) {
  struct kl_arena *a = kl_arena_new();
  kept_expansions(a);
  header_steps(a);
  {
    /* A macro that ends each instantiation with `;`, called with one of its own: the empty
     * declarations between them do not keep the instantiations in the buffer. */
    const char *t = "#define ONE(T, N) template [[host_name(\"k_\" #T)]] [[kernel]] void "
                    "k<T, N>(device T *x);\n#define ALL(T) ONE(T, 1); ONE(T, 2);\n"
                    "ALL(float);\nALL(half);\n";
    struct expansion e = expand(a, t, NULL, false);
    check("preproc-divert-empty-declarations",
          e.out && !strstr(strstr(e.out, "k<") + 2, "k<") && e.ninsts == 4 &&
              !strcmp(e.insts[3].targs[1], "2"),
          "%zu instantiations: %s", e.ninsts, e.out ? e.out : "(null)");
  }
  check_str("preproc-if-zero", branches(a, "#if 0\nx\n#else\ny\n#endif\n", NULL, false), "01");
  check_str("preproc-unknown-macro",
            branches(a, "#ifdef FAST\nx\n#elif 1\ny\n#else\nz\n#endif\n", NULL, false), "??0");
  check_str("preproc-file-define",
            branches(a, "#define USE 0\n#if USE\nx\n#endif\n#ifndef USE\ny\n#endif\n", NULL, false),
            "00");
  check_str("preproc-nested-dead",
            branches(a, "#if 0\n#if 1\nx\n#else\ny\n#endif\n#endif\n", NULL, false), "000");
  check_str("preproc-continuation-comment",
            branches(a, "#if 1 && \\\n  0 /* off */\nx\n#endif\n", NULL, false), "0");
  check_str("preproc-directive-in-comment",
            branches(a, "/*\n#if 0\n*/\n#if 1\nx\n#endif\n", NULL, false), "1");

  /* The ggml shape: a macro #undef'd below MSL 3.1 is known undefined in a 3.0 build. */
  const char *undef = "#if __METAL_VERSION__ < 310 && defined(HAS_BF)\n#undef HAS_BF\n#endif\n"
                      "#if defined(HAS_BF)\nbf\n#endif\n";
  const char *v300[] = {"__METAL_VERSION__"}, *val300[] = {"300"}, *val310[] = {"310"};
  struct kl_pp_assume old = {v300, val300, 1, NULL, 0};
  struct kl_pp_assume new = {v300, val310, 1, NULL, 0};
  check_str("preproc-undef-below-310", branches(a, undef, &old, true), "?0");
  check_str("preproc-undef-not-at-310", branches(a, undef, &new, true), "0?");
  const char *gone[] = {"__HAVE_BFLOAT__"};
  struct kl_pp_assume nobf = {NULL, NULL, 0, gone, 1};
  check_str("preproc-assumed-undefined",
            branches(a, "#if defined(__HAVE_BFLOAT__)\nx\n#else\ny\n#endif\n", &nobf, false), "01");

  /* #if expressions in full: `defined X` without parentheses, ||, && and ! with an unknown
   * operand on the side that does not decide, and comparisons of the version. */
  const char *bf[] = {"__HAVE_BFLOAT__"};
  struct kl_pp_assume hasbf = {bf, NULL, 1, NULL, 0};
  check_str("preproc-defined-no-parens",
            branches(a, "#if defined __HAVE_BFLOAT__\nx\n#else\ny\n#endif\n", &hasbf, false),
            "10");
  check_str("preproc-or-unknown-true",
            branches(a, "#if defined(FAST) || defined __HAVE_BFLOAT__\nx\n#endif\n", &hasbf,
                     false),
            "1");
  check_str("preproc-or-unknown-false",
            branches(a, "#if defined(FAST) || defined(__HAVE_BFLOAT__)\nx\n#endif\n", &nobf,
                     false),
            "?");
  check_str("preproc-and-unknown-false",
            branches(a, "#if defined(FAST) && defined(__HAVE_BFLOAT__)\nx\n#endif\n", &nobf,
                     false),
            "0");
  check_str("preproc-not-defined",
            branches(a, "#if !defined(__HAVE_BFLOAT__)\nx\n#else\ny\n#endif\n", &nobf, false),
            "10");
  check_str("preproc-not-defined-no-parens",
            branches(a, "#if !defined __HAVE_BFLOAT__\nx\n#endif\n", &hasbf, false), "0");
  check_str("preproc-version-compare",
            branches(a,
                     "#if __METAL_VERSION__ >= 310\na\n#endif\n#if __METAL_VERSION__ < 310\nb\n"
                     "#endif\n#if __METAL_VERSION__ == 300 || !(__METAL_VERSION__ > 300)\nc\n"
                     "#endif\n",
                     &old, false),
            "011");
  check_str("preproc-version-and-defined",
            branches(a, "#if __METAL_VERSION__ >= 310 && defined __HAVE_BFLOAT__\nx\n#endif\n",
                     &new, false),
            "?");

  /* Includes every build reaches: not under #if, an include guard excepted. */
  {
    const char *mpp = "MetalPerformancePrimitives/";
    const char *direct = "#include <metal_stdlib>\n#include <MetalPerformancePrimitives/M.h>\n";
    const char *optional = "#ifdef HAS_TENSOR\n#include <MetalPerformancePrimitives/M.h>\n#endif\n";
    const char *guarded = "#ifndef K_H\n#define K_H\n#include <MetalPerformancePrimitives/M.h>\n"
                          "#endif\n";
    check_int("preproc-includes-direct",
              kl_expand_includes(a, direct, (uint32_t)strlen(direct), NULL, mpp), 1);
    check_int("preproc-includes-under-if",
              kl_expand_includes(a, optional, (uint32_t)strlen(optional), NULL, mpp), 0);
    check_int("preproc-includes-include-guard",
              kl_expand_includes(a, guarded, (uint32_t)strlen(guarded), NULL, mpp), 1);
    struct kl_pp gp;
    kl_preproc_scan(a, guarded, (uint32_t)strlen(guarded), &gp);
    check_int("preproc-unconditional-guard", kl_preproc_unconditional(&gp, 30), 1);
    struct kl_pp op;
    kl_preproc_scan(a, optional, (uint32_t)strlen(optional), &op);
    check_int("preproc-unconditional-if", kl_preproc_unconditional(&op, 20), 0);
  }

  {
    /* Two branches of one chain, and the `#if` and `#else` of two chains on one condition, are
     * never built together; a branch and the code outside it, or chains on two conditions, are. */
    const char *t = "0\n#if X\n1\n#else\n2\n#endif\n3\n#if X\n4\n#else\n5\n#endif\n"
                    "#if Y\n6\n#endif\n";
    struct kl_pp pp;
    kl_preproc_scan(a, t, (uint32_t)strlen(t), &pp);
    struct kl_pp_arms p;
    kl_preproc_arms(a, &pp, &p);
    uint32_t at[7];
    for (int k = 0; k < 7; k++) at[k] = (uint32_t)(strchr(t, '0' + k) - t);
    check_int("preproc-exclusive-chain", kl_preproc_exclusive(&p, at[1], at[2]), 1);
    check_int("preproc-exclusive-same-cond", kl_preproc_exclusive(&p, at[1], at[5]), 1);
    check_int("preproc-exclusive-same-cond-back", kl_preproc_exclusive(&p, at[5], at[1]), 1);
    check_int("preproc-exclusive-same-branch-kind", kl_preproc_exclusive(&p, at[1], at[4]), 0);
    check_int("preproc-exclusive-outside", kl_preproc_exclusive(&p, at[1], at[3]), 0);
    check_int("preproc-exclusive-outside-back", kl_preproc_exclusive(&p, at[0], at[2]), 0);
    check_int("preproc-exclusive-other-cond", kl_preproc_exclusive(&p, at[2], at[6]), 0);
  }

  check_str("preproc-include-reopens",
            branches(a, "#undef TILE\n#include \"cfg.h\"\n#if TILE\nx\n#endif\n", NULL, false),
            "?");
  {
    /* A condition longer than the directive buffer is cut: unknown, never evaluated. */
    char long_if[2200] = "#if 0";
    for (int i = 0; i < 400; i++) strcat(long_if, " + 0");
    strcat(long_if, " + 1\nx\n#endif\n");
    check_str("preproc-cut-condition", branches(a, long_if, NULL, false), "?");
  }
  const char *src = "a\n#if 0\nbb\n#else\ncc\n#endif\n";
  char *live = kl_preproc_strip_dead(a, src, (uint32_t)strlen(src));
  check_str("preproc-strip-dead", live, "a\n#if 0\n  \n#else\ncc\n#endif\n");
  check("preproc-strip-none", kl_preproc_strip_dead(a, "a\n#ifdef X\nb\n#endif\n", 20) == NULL,
        "a file whose branches are all possible is not copied");
  {
    /* One call stamping out 8192 names with nothing between them: written out as it goes, in
     * pieces, and still a space between every two (a piece must not forget what ended the last). */
    const char *text = "#define L(x) x\n#define D1(x) L(x)L(x)\n#define D2(x) D1(x)D1(x)\n"
                       "#define D3(x) D2(x)D2(x)\n#define D4(x) D3(x)D3(x)\n"
                       "#define D5(x) D4(x)D4(x)\n#define D6(x) D5(x)D5(x)\n"
                       "#define D7(x) D6(x)D6(x)\n#define D8(x) D7(x)D7(x)\n"
                       "#define D9(x) D8(x)D8(x)\n#define D10(x) D9(x)D9(x)\n"
                       "#define D11(x) D10(x)D10(x)\n#define D12(x) D11(x)D11(x)\n"
                       "#define D13(x) D12(x)D12(x)\nint D13(v);\n";
    struct kl_offmap map;
    uint32_t n = 0;
    char *out = kl_expand_text(a, text, (uint32_t)strlen(text), NULL, &n, &map, NULL, NULL);
    size_t vs = 0;
    bool glued = false;
    for (uint32_t i = 0; out && i < n; i++) {
      if (out[i] != 'v') continue;
      vs++;
      glued = glued || (i + 1 < n && out[i + 1] == 'v');
    }
    check("preproc-expand-long", out && vs == 8192 && !glued, "%zu names, glued %d", vs, glued);
  }
  kl_arena_delete(a);
  return failures ? 1 : 0;
}
