/* Projects: which files form the project of a linted file, what its build states about the
 * Metal language version, and what its code says where the build says nothing.
 *
 * The project of a file is the nearest folder at or above the file's that holds a project
 * marker (.git, .lintrc, CMakeLists.txt, a Makefile, Package.swift, an .xcodeproj, a Python or
 * Rust or Nix project file), not above the folder named on the command line. When no folder
 * has one, it is the first folder below the argument that holds the file (a folder of several
 * kernel projects is several projects), or the argument itself for files directly in it. A file
 * named on the command line has no such bound: its marker is looked for up to the root (as its
 * .lintrc is), and without one the project is the file's folder.
 *
 * The project's files are read as text, never parsed: build files and host code for explicit
 * statements of a version (the lowest one stated wins: the build compiles every kernel with
 * it), MSL files for their preprocessor directives (kl_bfguard_scan, as bfloat-target reads
 * them) and their built-in bfloat spellings. */
#include "analyzer/input/project.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/input/bfguard.h"
#include "analyzer/input/source.h"
#include "grammar/dialect.h"
#include "grammar/lex.h"
#include "grammar/msl.h"
#include "grammar/preproc.h"
#include "rules/rules.h"

/* A project walk stops after this many folder entries, and reads at most this many files of at
 * most KL_SOURCE_MAX_BYTES: a marker high above (a home folder's .git) must not make a lint
 * read a whole disk. */
enum { KL_PROJECT_MAX_ENTRIES = 50000, KL_PROJECT_MAX_READS = 5000, KL_PROJECT_MAX_DEPTH = 24 };

/* A bfloat census needs uses in at least this many files: one file is one author's choice, not
 * a project's. */
enum { KL_PROJECT_MIN_FILES = 2 };
/* Guard macros a project may make, at most. */
enum { KL_PROJECT_MAX_GUARDS = 64 };

struct kl_projects {
  struct kl_arena *a;
  struct kl_project **items;
  size_t n, cap;
  char *cwd;
  /* The last answer: inputs come sorted, so a folder's files ask in a row, and finding the root
   * (a stat per marker and level) is done once per folder. */
  const char *last_dir, *last_arg, *last_key;
  struct kl_project *last;
};

struct kl_projects *kl_projects_new(void) {
  struct kl_projects *ps = kl_arena_xmalloc(sizeof *ps);
  memset(ps, 0, sizeof *ps);
  ps->a = kl_arena_new();
  char cwd[PATH_MAX];
  ps->cwd = kl_arena_strdup(ps->a, getcwd(cwd, sizeof cwd) ? cwd : "/");
  return ps;
}

void kl_projects_delete(struct kl_projects *ps) {
  if (!ps) return;
  free(ps->items);
  kl_arena_delete(ps->a);
  free(ps);
}

/* ---- the project's folder ---- */

static const char *const kl_markers[] = {
    ".git",          ".lintrc",        "CMakeLists.txt", "Makefile",   "makefile",   "GNUmakefile",
    "Package.swift", "pyproject.toml", "setup.py",       "Cargo.toml", "build.toml", "flake.nix"};

static bool kl_project_exists(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = kl_arena_xmalloc(n);
  snprintf(p, n, "%s/%s", strcmp(dir, "/") ? dir : "", name);
  struct stat st;
  bool ok = stat(p, &st) == 0;
  free(p);
  return ok;
}

/* The marker dir holds (a name from kl_markers, or "*.xcodeproj"), or NULL. */
static const char *kl_project_marker(const char *dir) {
  for (size_t i = 0; i < sizeof kl_markers / sizeof kl_markers[0]; i++)
    if (kl_project_exists(dir, kl_markers[i])) return kl_markers[i];
  DIR *d = opendir(dir);
  if (!d) return NULL;
  const char *found = NULL;
  for (struct dirent *de; !found && (de = readdir(d)) != NULL;) {
    size_t n = strlen(de->d_name);
    if (n > 10 && !strcmp(de->d_name + n - 10, ".xcodeproj")) found = "*.xcodeproj";
  }
  closedir(d);
  return found;
}

/* The folder of an absolute path ("/" for a file at the root). */
static char *kl_project_dirname(struct kl_arena *a, const char *abs) {
  const char *slash = strrchr(abs, '/');
  if (!slash || slash == abs) return kl_arena_strdup(a, "/");
  return kl_arena_strndup(a, abs, (size_t)(slash - abs));
}

/* Whether dir holds a file kernlint lints, itself (not below): then it is one project with
 * subfolders, not a folder of projects. */
static bool kl_project_has_sources(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  for (struct dirent *de; !found && (de = readdir(d)) != NULL;) {
    if (de->d_name[0] == '.' || kl_source_lang(de->d_name) == KL_LANG_UNKNOWN) continue;
    size_t n = strlen(dir) + strlen(de->d_name) + 2;
    char *p = kl_arena_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, de->d_name);
    struct stat st;
    found = stat(p, &st) == 0 && S_ISREG(st.st_mode);
    free(p);
  }
  closedir(d);
  return found;
}

/* The project root of file (absolute) for the argument arg (absolute; arg_dir: a folder). */
static const char *kl_project_root(struct kl_arena *a, const char *file, const char *arg,
                                   bool arg_dir, const char **marker) {
  const char *fdir = kl_project_dirname(a, file);
  bool under = arg_dir && kl_source_subpath(fdir, arg);
  *marker = NULL;
  for (char *dir = kl_arena_strdup(a, fdir);;) {
    if (!strcmp(dir, "/")) break;
    const char *m = kl_project_marker(dir);
    if (m) {
      /* A CMakeLists.txt or Makefile whose parent folder has one too is a subdirectory of the
       * parent's build (add_subdirectory, recursive make): the project is the outermost. */
      bool nested = !strcmp(m, "CMakeLists.txt") || !strcmp(m, "Makefile");
      while (nested && strcmp(dir, "/") && !(under && !strcmp(dir, arg))) {
        char *up = kl_project_dirname(a, dir);
        if (!kl_project_exists(up, m)) break;
        dir = up;
        m = kl_project_marker(dir);
      }
      *marker = m;
      return dir;
    }
    if (under && !strcmp(dir, arg)) break;
    dir = kl_project_dirname(a, dir);
  }
  if (!under) return fdir;
  const char *rel = kl_source_subpath(fdir, arg);
  if (!rel || !*rel || kl_project_has_sources(arg)) return arg;
  size_t first = strcspn(rel, "/");
  return kl_arena_printf(a, "%s/%.*s", strcmp(arg, "/") ? arg : "", (int)first, rel);
}

/* ---- statements of a version ---- */

/* The MSL version a macOS release compiles with by default (MTLLanguageVersion availability). */
static unsigned kl_macos_msl(unsigned major, unsigned minor) {
  static const unsigned old[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 110, 120, 200, 210, 220};
  static const unsigned modern[] = {230, 240, 300, 310, 320};
  if (major == 10) return minor < sizeof old / sizeof old[0] ? old[minor] : 220;
  if (major >= 11 && major <= 15) return modern[major - 11];
  if (major == 26) return 400;
  if (major >= 27 && major < 100) return 410;
  return 0;
}

/* The same for iOS releases. */
static unsigned kl_ios_msl(unsigned major) {
  static const unsigned v[] = {110, 120, 200, 210, 220, 230, 240, 300, 310, 320};
  if (major >= 9 && major <= 18) return v[major - 9];
  if (major == 26) return 400;
  if (major >= 27 && major < 100) return 410;
  return 0;
}

enum kl_text_kind { KL_TEXT_HASH, KL_TEXT_C };

struct kl_scan {
  struct kl_arena *a;
  const char *file;
  unsigned line;
  const char *ls, *le; /* the current line */
  struct kl_project *p;
};

/* A statement of version v at the scan's line, what it says being [s, e). */
static void kl_scan_state(struct kl_scan *sc, unsigned v, const char *s, const char *e) {
  if (!v || (sc->p->metal_version && sc->p->metal_version <= v)) return;
  sc->p->metal_version = v;
  sc->p->metal_fact =
      (struct kl_fact){sc->file, sc->line, kl_arena_strndup(sc->a, s, (size_t)(e - s))};
}

static unsigned kl_scan_num(const char **pp, const char *e) {
  unsigned v = 0;
  const char *p = *pp;
  while (p < e && *p >= '0' && *p <= '9' && v < 10000) v = v * 10 + (unsigned)(*p++ - '0');
  *pp = p;
  return v;
}

static bool kl_scan_at(const char *p, const char *e, const char *word) {
  size_t n = strlen(word);
  return (size_t)(e - p) >= n && !memcmp(p, word, n);
}

/* "MAJOR[.MINOR]" at *pp as an OS release; false when there is no number. */
static bool kl_scan_release(const char **pp, const char *e, unsigned *major, unsigned *minor) {
  const char *p = *pp;
  if (p >= e || *p < '0' || *p > '9') return false;
  *major = kl_scan_num(&p, e);
  *minor = 0;
  if (p + 1 < e && *p == '.' && p[1] >= '0' && p[1] <= '9') {
    p++;
    *minor = kl_scan_num(&p, e);
  }
  *pp = p;
  return true;
}

/* Whether the token at [s, e) of the line is compared or defined rather than stated (`v >= X`,
 * `case X:`, an enum's `X = 65536`, Python's `(X:=65536)`, a name in quotes). */
static bool kl_scan_compared(const struct kl_scan *sc, const char *s, const char *e) {
  if (s > sc->ls && e < sc->le && (s[-1] == '\'' || s[-1] == '"') && *e == s[-1]) return true;
  const char *b = s;
  while (b > sc->ls && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '(')) b--;
  if (b > sc->ls && (b[-1] == '<' || b[-1] == '>')) return true;
  if (b > sc->ls + 1 && b[-1] == '=' && strchr("=!<>", b[-2])) return true;
  if (b > sc->ls + 4 && !memcmp(b - 5, "case", 4) && b[-1] == ' ') return true;
  const char *f = e;
  while (f < sc->le && (*f == ' ' || *f == '\t' || *f == ')')) f++;
  if (f < sc->le && (*f == '<' || *f == '>')) return true;
  if (f < sc->le && (f[0] == '=' || f[0] == '!')) return true; /* ==, != and a definition */
  while (f < sc->le && kl_lex_ident_char(*f)) f++;             /* `X API_AVAILABLE(...) = 1` */
  if (f < sc->le && *f == '(') {
    while (f < sc->le && *f != ')') f++;
    while (f < sc->le && (*f == ')' || *f == ' ' || *f == '\t')) f++;
    if (f < sc->le && *f == '=') return true;
  }
  return f < sc->le && *f == ':' && (f + 1 >= sc->le || f[1] != ':');
}

/* Deployment-target keys and whether each names an iOS release. */
static const struct {
  const char *key;
  bool ios;
} kl_targets[] = {{"CMAKE_OSX_DEPLOYMENT_TARGET", false},
                  {"MACOSX_DEPLOYMENT_TARGET", false},
                  {"IPHONEOS_DEPLOYMENT_TARGET", true}};

/* The statements in one line [sc->ls, sc->le). */
static void kl_scan_line(struct kl_scan *sc) {
  const char *e = sc->le;
  for (const char *p = sc->ls; p < e; p++) {
    const char *s = p, *q;
    unsigned major, minor;
    if ((*p == '-' && kl_scan_at(p, e, "-std=")) || *p == '"' || *p == '\'') {
      /* -std=metal3.1, -std=macos-metal2.4, -std=ios-metal2.4 (osx- is an old spelling); or
       * the standard alone in a string, to be passed as -std= (tinygrad's "metal3.0"). */
      char quote = *p == '-' ? 0 : *p;
      q = p + (quote ? 1 : 5);
      if (kl_scan_at(q, e, "macos-"))
        q += 6;
      else if (kl_scan_at(q, e, "ios-") || kl_scan_at(q, e, "osx-"))
        q += 4;
      if (!kl_scan_at(q, e, "metal") || q + 8 > e || q[5] < '1' || q[5] > '9' || q[6] != '.' ||
          q[7] < '0' || q[7] > '9')
        continue;
      if (quote && (q + 8 >= e || q[8] != quote)) continue;
      kl_scan_state(sc, (unsigned)(q[5] - '0') * 100 + (unsigned)(q[7] - '0') * 10, s,
                    q + 8 + (quote != 0));
    } else if (*p == '-' && (kl_scan_at(p, e, "-mmacosx-version-min=") ||
                             kl_scan_at(p, e, "-mmacos-version-min=") ||
                             kl_scan_at(p, e, "-mios-version-min="))) {
      bool ios = p[2] == 'i';
      q = strchr(p, '=') + 1;
      if (kl_scan_release(&q, e, &major, &minor))
        kl_scan_state(sc, ios ? kl_ios_msl(major) : kl_macos_msl(major, minor), s, q);
    } else if (*p == 'M' && kl_scan_at(p, e, "MTL_LANGUAGE_REVISION")) {
      q = p + 21;
      while (q < e && (*q == ' ' || *q == '\t' || *q == '=')) q++;
      if (kl_scan_at(q, e, "Metal") && q + 7 <= e && q[5] >= '1' && q[5] <= '9' && q[6] >= '0' &&
          q[6] <= '9')
        kl_scan_state(sc, (unsigned)(q[5] - '0') * 100 + (unsigned)(q[6] - '0') * 10, s, q + 7);
    } else if (*p == '.' && (kl_scan_at(p, e, ".macOS(") || kl_scan_at(p, e, ".iOS("))) {
      /* Package.swift: .macOS(.v14), .macOS(.v10_15), .macOS("14.0"), .iOS(.v17). */
      bool ios = p[1] == 'i';
      q = p + (ios ? 5 : 7);
      if (kl_scan_at(q, e, ".v"))
        q += 2;
      else if (q < e && *q == '"')
        q++;
      else
        continue;
      if (!kl_scan_release(&q, e, &major, &minor)) continue;
      if (q < e && *q == '_') {
        q++;
        minor = kl_scan_num(&q, e);
      }
      if (q < e && *q == '"') q++;
      kl_scan_state(sc, ios ? kl_ios_msl(major) : kl_macos_msl(major, minor), s,
                    q + (q < e && *q == ')'));
    } else if ((*p == 'L' && kl_scan_at(p, e, "LanguageVersion")) ||
               (*p == '.' && kl_scan_at(p, e, ".version"))) {
      /* MTLLanguageVersion3_1, MTL::LanguageVersion3_1, MTLLanguageVersion::V3_1 (metal-rs),
       * .version3_1 (Swift); not one that is compared with. */
      q = p + (*p == 'L' ? 15 : 8);
      if (kl_scan_at(q, e, "::V") || kl_scan_at(q, e, "::v")) q += 3;
      if (q + 3 > e || q[0] < '1' || q[0] > '9' || q[1] != '_' || q[2] < '0' || q[2] > '9' ||
          (q + 3 < e && kl_lex_ident_char(q[3])))
        continue;
      while (s > sc->ls && kl_lex_ident_char(s[-1])) s--;
      if (s > sc->ls + 1 && s[-1] == ':' && s[-2] == ':') /* MTL::LanguageVersion3_1 */
        for (s -= 2; s > sc->ls && kl_lex_ident_char(s[-1]);) s--;
      if (!kl_scan_compared(sc, s, q + 3))
        kl_scan_state(sc, (unsigned)(q[0] - '0') * 100 + (unsigned)(q[2] - '0') * 10, s, q + 3);
      p = q + 2;
    } else {
      for (size_t k = 0; k < sizeof kl_targets / sizeof kl_targets[0]; k++) {
        if (*p != kl_targets[k].key[0] || !kl_scan_at(p, e, kl_targets[k].key)) continue;
        /* set(CMAKE_OSX_DEPLOYMENT_TARGET "14.0"), -DCMAKE_OSX_DEPLOYMENT_TARGET=14.0, the
         * cache's CMAKE_OSX_DEPLOYMENT_TARGET:STRING=14.0, MACOSX_DEPLOYMENT_TARGET = 14.0; */
        q = p + strlen(kl_targets[k].key);
        if (q < e && kl_lex_ident_char(*q)) break;
        while (q < e && strchr(" \t\"'=:", *q)) q++;
        if (kl_scan_at(q, e, "STRING=")) q += 7;
        if (kl_scan_release(&q, e, &major, &minor))
          kl_scan_state(sc, kl_targets[k].ios ? kl_ios_msl(major) : kl_macos_msl(major, minor), s,
                        q);
        break;
      }
    }
  }
}

/* Blank the comments of text (kind k) to spaces, line breaks kept; strings stay, since a build
 * passes its flags in them. */
static void kl_blank_comments(char *t, size_t n, enum kl_text_kind k) {
  for (size_t i = 0; i < n; i++) {
    char c = t[i];
    if (c == '"' || c == '\'') {
      for (i++; i < n && t[i] != c && t[i] != '\n'; i++)
        if (t[i] == '\\') i++;
    } else if (k == KL_TEXT_HASH ? c == '#' : c == '/' && i + 1 < n && t[i + 1] == '/') {
      for (; i < n && t[i] != '\n'; i++) t[i] = ' ';
    } else if (k != KL_TEXT_HASH && c == '/' && i + 1 < n && t[i + 1] == '*') {
      for (; i < n && !(t[i] == '*' && i + 1 < n && t[i + 1] == '/'); i++)
        if (t[i] != '\n') t[i] = ' ';
      if (i + 1 < n) t[i] = t[i + 1] = ' ';
      i++;
    }
  }
}

/* Every statement of a version in text, a line at a time (comments blanked). */
static void kl_scan_text(struct kl_scan *sc, const char *text, size_t len) {
  const char *t = text, *end = text + len;
  for (sc->line = 1; t < end; sc->line++) {
    const char *nl = memchr(t, '\n', (size_t)(end - t));
    sc->ls = t;
    sc->le = nl ? nl : end;
    t = nl ? nl + 1 : end;
    const char *p = sc->ls;
    /* Most lines state nothing: the patterns all hold one of these bytes. */
    if (memchr(p, '-', (size_t)(sc->le - p)) || memchr(p, '.', (size_t)(sc->le - p)) ||
        memchr(p, '_', (size_t)(sc->le - p)) || memchr(p, 'L', (size_t)(sc->le - p)))
      kl_scan_line(sc);
  }
}

/* ---- the project's files ---- */

enum kl_file_kind {
  KL_FILE_NONE,
  KL_FILE_BUILD_HASH,
  KL_FILE_BUILD_C,
  KL_FILE_HOST,
  KL_FILE_PY,
  KL_FILE_MSL,
  KL_FILE_HEADER
};

static bool kl_ends(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

static enum kl_file_kind kl_file_kind(const char *name) {
  if (!strcmp(name, "CMakeLists.txt") || !strcmp(name, "CMakeCache.txt") ||
      kl_ends(name, ".cmake") || !strcmp(name, "Makefile") || !strcmp(name, "makefile") ||
      !strcmp(name, "GNUmakefile") || kl_ends(name, ".mk"))
    return KL_FILE_BUILD_HASH;
  if (!strcmp(name, "project.pbxproj") || !strcmp(name, "Package.swift")) return KL_FILE_BUILD_C;
  if (kl_ends(name, ".metal")) return KL_FILE_MSL;
  if (kl_ends(name, ".h") || kl_ends(name, ".hpp") || kl_ends(name, ".hh")) return KL_FILE_HEADER;
  if (kl_ends(name, ".py")) return KL_FILE_PY;
  /* Metal host code is Objective-C, C++, Swift, Rust or Python; plain C cannot call Metal. */
  static const char *const host[] = {".m", ".mm", ".cc", ".cpp", ".cxx", ".swift", ".rs"};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
    if (kl_ends(name, host[i])) return KL_FILE_HOST;
  return KL_FILE_NONE;
}

/* A guard macro the project's code makes, and where. */
struct kl_pwalk_guard {
  const char *name;
  struct kl_fact fact; /* its first guard's directive (any directive while denied) */
  bool denied;         /* some directive of it is not a guard's */
};

/* An MSL file kept for the census's second round. */
struct kl_msl_file {
  const char *path, *text;
  uint32_t len;
  struct kl_pp pp;
};

struct kl_pwalk {
  struct kl_project *p;
  struct kl_arena *a;   /* the project's: what the project keeps */
  struct kl_arena *tmp; /* texts and directives, gone after the census */
  const struct kl_config *cfg;
  size_t entries, reads;
  struct kl_msl_file *msl; /* read, naming bfloat: the census's */
  size_t nmsl, cap_msl;
  struct kl_msl_file *rest; /* not read yet, with a #define or #undef */
  size_t nrest, cap_rest;
  bool any_guard;                /* some file has a branch that bfloat availability decides */
  int max_depth;                 /* how deep below the root the walk goes */
  struct kl_pwalk_guard *guards; /* inferred */
  size_t nguards, cap_guards, cap_errors;
};

static unsigned kl_line_of(const char *text, uint32_t off) {
  unsigned line = 1;
  for (uint32_t i = 0; i < off; i++) line += text[i] == '\n';
  return line;
}

/* kl_line_of for offsets met mostly in order: counted on from the last one asked. */
struct kl_line_cursor {
  uint32_t off;
  unsigned line;
};

static unsigned kl_line_next(struct kl_line_cursor *c, const char *text, uint32_t off) {
  if (!c->line || off < c->off) *c = (struct kl_line_cursor){0, 1};
  for (uint32_t i = c->off; i < off; i++) c->line += text[i] == '\n';
  c->off = off;
  return c->line;
}

/* The directive line at off, trimmed, for a fact's text. */
static const char *kl_line_text(struct kl_arena *a, const char *text, uint32_t len, uint32_t off) {
  uint32_t e = off;
  while (e < len && text[e] != '\n') e++;
  while (e > off && (text[e - 1] == ' ' || text[e - 1] == '\t' || text[e - 1] == '\r')) e--;
  return kl_arena_strndup(a, text + off, e - off > 120 ? 120 : e - off);
}

/* Read an MSL file's directives for the guard macros it makes (or denies), and keep it for the
 * census when it names bfloat. */
static void kl_walk_scan(struct kl_pwalk *w, const char *path, const char *text, uint32_t len) {
  bool bf = strstr(text, "bfloat") != NULL;
  struct kl_msl_file f = {path, text, len, {0}};
  kl_preproc_scan(w->tmp, text, len, &f.pp);
  struct kl_bfguard g;
  const struct kl_config *c = w->cfg;
  kl_bfguard_scan(w->tmp, &f.pp, len, c ? (const char *const *)c->bfloat_guards : NULL,
                  c ? c->nbfloat_guards : 0, &g);
  /* Any branch that bfloat availability decides, bfloat in it or not, shows a project that
   * builds below MSL 3.1. */
  w->any_guard = w->any_guard || g.nsplits > 0;
  /* A macro is a guard when the project's every #define and #undef of it says so: one that is
   * #undef'd on some other condition (or #defined for every build) somewhere is not. */
  struct kl_line_cursor lines = {0, 0};
  for (size_t i = 0; i < g.nmacros; i++) {
    struct kl_pwalk_guard *seen = NULL;
    for (size_t k = 0; k < w->nguards && !seen; k++)
      if (!strcmp(w->guards[k].name, g.macros[i].name)) seen = &w->guards[k];
    if (seen) {
      seen->denied = seen->denied || !g.macros[i].guard;
      continue;
    }
    /* As many as one buffer may make (kl_bfguard_scan's bound): more are not a project's habit. */
    if (w->nguards == KL_PROJECT_MAX_GUARDS) continue;
    KL_VEC_PUSH(w->a, w->guards, w->nguards, w->cap_guards);
    w->guards[w->nguards++] = (struct kl_pwalk_guard){
        kl_arena_strdup(w->a, g.macros[i].name),
        {kl_arena_strdup(w->a, path), kl_line_next(&lines, text, g.macros[i].at),
         kl_line_text(w->a, text, len, g.macros[i].at)},
        !g.macros[i].guard};
  }
  if (!bf) return;
  KL_VEC_PUSH(w->tmp, w->msl, w->nmsl, w->cap_msl);
  w->msl[w->nmsl++] = f;
}

/* Past the string literal or comment at t[k], or k when code starts there. */
static uint32_t kl_skip_noncode(const char *t, uint32_t n, uint32_t k) {
  if (t[k] == '"' || t[k] == '\'') return kl_lex_skip_literal(t, n, k);
  return kl_lex_skip_comment(t, n, k);
}

/* Split a name into its letters and its trailing digits: `nb01` is `nb` and `01`. Returns the
 * digits' length, 0 when the name does not end in a digit or is digits only. */
static size_t kl_stride_digits(const char *s, size_t n) {
  size_t d = 0;
  while (d < n && s[n - 1 - d] >= '0' && s[n - 1 - d] <= '9') d++;
  return d < n ? d : 0;
}

/* The name that ends at t[e] (exclusive), member access included (`args.nb00` gives `nb00`):
 * its start, or e when there is none. */
static uint32_t kl_name_before(const char *t, uint32_t e) {
  uint32_t s = e;
  while (s > 0 && kl_lex_ident_char(t[s - 1])) s--;
  return s < e && kl_lex_ident_start(t[s]) ? s : e;
}

/* Whether t[s, e) names a byte type: a pointer to it is still byte-addressed. */
static bool kl_byte_type(const char *t, uint32_t s, uint32_t e) {
  static const char *const bytes[] = {"char", "uchar", "int8_t", "uint8_t", "void"};
  for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++)
    if (strlen(bytes[i]) == e - s && !memcmp(t + s, bytes[i], e - s)) return true;
  return false;
}

/* The answers of kl_uniform_input's search of one file, by name: a file asks of its few stride
 * names at every product in every pointer cast, and each answer is a search of the whole file. */
enum { KL_UNIFORM_MEMO = 32 };
struct kl_uniform_memo {
  struct {
    uint32_t s, len; /* the name, in the file */
    bool declared;
  } e[KL_UNIFORM_MEMO];
  size_t n;
};

static bool kl_uniform_declared(const char *t, uint32_t n, uint32_t s, uint32_t len);

/* Whether the name at t[s, e) is a kernel's uniform input: read through a member (`args.nb01`,
 * `p->nb01`) or declared in the file as a `constant` reference (`constant ulong &nb01`). An index
 * (`i01`, `tid`) is neither, so a scheme of strides is not confused with one of indices. m holds
 * the file's answers so far. */
static bool kl_uniform_input(const char *t, uint32_t n, uint32_t s, uint32_t e,
                             struct kl_uniform_memo *m) {
  if (s > 0 && (t[s - 1] == '.' || (s > 1 && t[s - 1] == '>' && t[s - 2] == '-'))) return true;
  uint32_t len = e - s;
  if (!len) return false;
  for (size_t i = 0; i < m->n; i++)
    if (m->e[i].len == len && !memcmp(t + m->e[i].s, t + s, len)) return m->e[i].declared;
  bool declared = kl_uniform_declared(t, n, s, len);
  if (m->n < KL_UNIFORM_MEMO) {
    m->e[m->n].s = s, m->e[m->n].len = len, m->e[m->n].declared = declared;
    m->n++;
  }
  return declared;
}

/* Whether the file declares the name at t[s, s + len) as a `constant` reference. */
static bool kl_uniform_declared(const char *t, uint32_t n, uint32_t s, uint32_t len) {
  /* Each occurrence of the name, its first byte found by memchr: a memcmp at every byte of the
   * file was most of a project walk. */
  for (const char *at = t; at + len <= t + n; at++) {
    at = memchr(at, t[s], (size_t)(t + n - len + 1 - at));
    if (!at) break;
    uint32_t i = (uint32_t)(at - t);
    if (memcmp(at, t + s, len) || (i > 0 && kl_lex_ident_char(t[i - 1])) ||
        (i + len < n && kl_lex_ident_char(t[i + len])))
      continue;
    uint32_t j = i;
    while (j > 0 && (t[j - 1] == ' ' || t[j - 1] == '\t')) j--;
    if (j == 0 || t[j - 1] != '&') continue;
    uint32_t ls = j;
    while (ls > 0 && t[ls - 1] != '\n') ls--;
    for (uint32_t q = ls; q + 8 <= j; q++)
      if (!memcmp(t + q, "constant", 8)) return true;
  }
  return false;
}

/* The name (its last member: `args.nb01` gives `nb01`) that starts at or after t[i] within
 * [i, lim), spaces skipped: its span in [*s, *e), false when none starts there. */
static bool kl_name_after(const char *t, uint32_t i, uint32_t lim, uint32_t *s, uint32_t *e) {
  while (i < lim && (t[i] == ' ' || t[i] == '\t')) i++;
  if (i >= lim || !kl_lex_ident_start(t[i])) return false;
  for (uint32_t q = i;;) {
    uint32_t b = q;
    while (q < lim && kl_lex_ident_char(t[q])) q++;
    *s = b, *e = q;
    if (q < lim && t[q] == '.') q++;
    else if (q + 1 < lim && t[q] == '-' && t[q + 1] == '>') q += 2;
    else return true;
    if (q >= lim || !kl_lex_ident_start(t[q])) return true;
  }
}

/* The stride operand of the product whose `*` is at t[j] within [lo, hi): the one side that is a
 * uniform input named by a scheme (letters, then digits); false when neither or both are. */
static bool kl_scaled_stride(const char *t, uint32_t n, uint32_t lo, uint32_t hi, uint32_t j,
                             struct kl_uniform_memo *m, uint32_t *s, uint32_t *e) {
  uint32_t rs, re, le = j;
  bool right = kl_name_after(t, j + 1, hi, &rs, &re) &&
               kl_stride_digits(t + rs, re - rs) && kl_uniform_input(t, n, rs, re, m);
  while (le > lo && (t[le - 1] == ' ' || t[le - 1] == '\t')) le--;
  uint32_t ls = kl_name_before(t, le);
  bool left = ls < le && ls >= lo && kl_stride_digits(t + ls, le - ls) &&
              kl_uniform_input(t, n, ls, le, m);
  if (left == right) return false;
  *s = right ? rs : ls, *e = right ? re : le;
  return true;
}

/* At t[k], the start of `device`: a typed (not byte) device pointer cast. Its parenthesised
 * address, on one statement, in [*open, *close); false when t[k] starts no such cast. */
static bool kl_typed_cast(const char *t, uint32_t n, uint32_t k, uint32_t *open, uint32_t *close) {
  uint32_t i = k + 6;
  if (k > 0 && kl_lex_ident_char(t[k - 1])) return false;
  if (i > n || memcmp(t + k, "device", 6) || (i < n && kl_lex_ident_char(t[i]))) return false;
  while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
  if (i + 5 <= n && !memcmp(t + i, "const", 5) && !kl_lex_ident_char(t[i + 5])) i += 5;
  while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
  uint32_t ts = i;
  while (i < n && kl_lex_ident_char(t[i])) i++;
  if (ts == i || kl_byte_type(t, ts, i)) return false;
  while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
  if (i >= n || t[i++] != '*') return false;
  while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
  if (i >= n || t[i++] != ')') return false;
  while (i < n && (t[i] == ' ' || t[i] == '\t')) i++;
  if (i >= n || t[i] != '(') return false;
  uint32_t depth = 0;
  for (uint32_t q = i; q < n && t[q] != ';' && t[q] != '{'; q++) {
    depth += t[q] == '(';
    if (t[q] == ')' && --depth == 0) {
      *open = i, *close = q;
      return true;
    }
  }
  return false;
}

/* At t[k], the start of `device`: a typed element pointer made from a byte address that steps
 * only the outer strides of one scheme, `(device const float *)(src0 + i1*nb01 + i2*nb02)`,
 * which the code then indexes by element: its rows are contiguous, so the scheme's dimension-0
 * stride is one element. Returns the scheme's letters' length (at *pre), 0 when not such a cast;
 * *at is where the address starts. */
static size_t kl_row_pointer(const char *t, uint32_t n, uint32_t k, struct kl_uniform_memo *m,
                             uint32_t *pre, uint32_t *at) {
  uint32_t open, close;
  if (!kl_typed_cast(t, n, k, &open, &close)) return 0;
  /* The scaled strides (`i1 * nb01`, `args.nb02*i2`) of one scheme: two or more, none of
   * dimension 0. */
  uint32_t ps = 0, plen = 0, terms = 0;
  for (uint32_t j = open; j < close; j++) {
    uint32_t s, e;
    if (t[j] != '*' || !kl_scaled_stride(t, n, open + 1, close, j, m, &s, &e)) continue;
    uint32_t l = (uint32_t)(e - s - kl_stride_digits(t + s, e - s));
    if (terms && (l != plen || memcmp(t + s, t + ps, l))) return 0;
    if (t[e - 1] == '0') return 0;
    ps = s, plen = l, terms++;
  }
  if (terms < 2) return 0;
  *pre = ps;
  *at = open;
  return plen;
}

/* Whether the file scales by the name t[s, e) in the address of a typed device pointer cast
 * (`(device const float *)(src0 + i00*nb00)`): it is a byte stride there, not a count. */
static bool kl_byte_stride_use(const char *t, uint32_t n, uint32_t s, uint32_t e,
                               struct kl_uniform_memo *m) {
  for (const char *d = t; (d = strstr(d, "device")) != NULL && d < t + n; d += 6) {
    uint32_t open, close, k = (uint32_t)(d - t);
    if (!kl_typed_cast(t, n, k, &open, &close)) continue;
    for (uint32_t j = open; j < close; j++) {
      uint32_t ss, se;
      if (t[j] == '*' && kl_scaled_stride(t, n, open + 1, close, j, m, &ss, &se) &&
          se - ss == e - s && !memcmp(t + ss, t + s, e - s))
        return true;
    }
  }
  return false;
}

/* A byte stride that the project's code divides another stride of the same tensor by
 * (`args.nb01 / args.nb00`: the quotient is the row's length in elements) is one element's size
 * by the project's own arithmetic. Stride names that follow one scheme (letters, the tensor's
 * digits, the dimension's digit last) say so for every tensor: the glob `nb*0`, as the ggml
 * recipe of .lintrc.example spells it by hand. */
static void kl_walk_unit_strides(struct kl_pwalk *w, const char *path, const char *t, uint32_t n) {
  struct kl_project *p = w->p;
  struct kl_uniform_memo memo = {.n = 0};
  for (uint32_t k = 0; k < n && !p->unit_stride;) {
    uint32_t c = kl_skip_noncode(t, n, k);
    if (c > k) {
      k = c;
      continue;
    }
    uint32_t pre, at;
    size_t plen = t[k] == 'd' ? kl_row_pointer(t, n, k, &memo, &pre, &at) : 0;
    if (plen) {
      uint32_t e = at, b = k > 0 && t[k - 1] == '(' ? k - 1 : k;
      while (e < n && t[e] != ';' && t[e] != '\n') e++;
      p->unit_stride = kl_arena_alloc(w->a, sizeof *p->unit_stride);
      p->unit_stride[0] = kl_arena_printf(w->a, "%.*s*0", (int)plen, t + pre);
      p->unit_fact = (struct kl_fact){
          kl_arena_strdup(w->a, path), kl_line_of(t, k),
          kl_arena_printf(w->a, "`%.*s` makes an element pointer from the outer strides only",
                          (int)(e - b > 100 ? 100 : e - b), t + b)};
      continue;
    }
    if (t[k++] != '/') continue;
    uint32_t le = k - 1;
    while (le > 0 && (t[le - 1] == ' ' || t[le - 1] == '\t')) le--;
    uint32_t ls = kl_name_before(t, le);
    uint32_t rs = k;
    while (rs < n && (t[rs] == ' ' || t[rs] == '\t')) rs++;
    uint32_t re = rs;
    for (;;) { /* the last member of `args.nb00` or `p->nb00` */
      uint32_t s = re;
      while (re < n && kl_lex_ident_char(t[re])) re++;
      if (re == s || !kl_lex_ident_start(t[s])) break;
      rs = s;
      if (re < n && t[re] == '.') re++;
      else if (re + 1 < n && t[re] == '-' && t[re + 1] == '>') re += 2;
      else break;
    }
    while (re > rs && !kl_lex_ident_char(t[re - 1])) re--;
    if (ls == le || re <= rs) continue;
    size_t ld = kl_stride_digits(t + ls, le - ls), rd = kl_stride_digits(t + rs, re - rs);
    size_t lp = le - ls - ld, rp = re - rs - rd;
    /* Same letters, same tensor digits; the divisor is dimension 0, the dividend another. */
    if (!ld || ld != rd || lp != rp || memcmp(t + ls, t + rs, lp) ||
        memcmp(t + ls + lp, t + rs + rp, ld - 1) || t[re - 1] != '0' || t[le - 1] == '0')
      continue;
    /* Sizes divide too (`ne01 / ne00`): the divisor must be a byte stride in this file. */
    if (!kl_byte_stride_use(t, n, rs, re, &memo)) continue;
    uint32_t qs = ls; /* the fact shows `args.nb01`, not `nb01` */
    while (qs > 1 && (t[qs - 1] == '.' || (t[qs - 1] == '>' && t[qs - 2] == '-'))) {
      uint32_t q = kl_name_before(t, t[qs - 1] == '.' ? qs - 1 : qs - 2);
      if (q == (t[qs - 1] == '.' ? qs - 1 : qs - 2)) break;
      qs = q;
    }
    p->unit_stride = kl_arena_alloc(w->a, sizeof *p->unit_stride);
    p->unit_stride[0] = kl_arena_printf(w->a, "%.*s*0", (int)rp, t + rs);
    p->unit_fact = (struct kl_fact){
        kl_arena_strdup(w->a, path), kl_line_of(t, ls),
        kl_arena_printf(w->a, "`%.*s` divides a stride by `%.*s`, one element's size",
                        (int)(re - qs), t + qs, (int)(re - rs), t + rs)};
  }
}

/* An MSL file of the project: read now when it may concern bfloat availability, else kept in
 * case it #defines or #undefs a guard macro another file makes (kl_walk_denials). */
static void kl_walk_msl(struct kl_pwalk *w, const char *path, const char *text, uint32_t len) {
  path = kl_arena_strdup(w->tmp, path);
  if (!w->p->unit_stride) kl_walk_unit_strides(w, path, text, len);
  if (strstr(text, "bfloat") || strstr(text, "__METAL_VERSION__") ||
      strstr(text, "__HAVE_BFLOAT__")) {
    kl_walk_scan(w, path, text, len);
    return;
  }
  if (!strstr(text, "#define") && !strstr(text, "#undef")) return;
  KL_VEC_PUSH(w->tmp, w->rest, w->nrest, w->cap_rest);
  w->rest[w->nrest++] = (struct kl_msl_file){path, text, len, {0}};
}

/* The files not read yet that name a guard macro found: their directives may deny it. */
static void kl_walk_denials(struct kl_pwalk *w) {
  for (size_t i = 0; i < w->nrest; i++) {
    bool names = false;
    for (size_t k = 0; k < w->nguards && !names; k++)
      names = !w->guards[k].denied && strstr(w->rest[i].text, w->guards[k].name);
    if (names) kl_walk_scan(w, w->rest[i].path, w->rest[i].text, w->rest[i].len);
  }
}

static void kl_walk_file(struct kl_pwalk *w, const char *path, const char *name) {
  enum kl_file_kind k = kl_file_kind(name);
  if (k == KL_FILE_NONE || w->reads >= KL_PROJECT_MAX_READS) return;
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > KL_SOURCE_MAX_BYTES) return;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  w->reads++;
  char *text = kl_arena_alloc(w->tmp, (size_t)st.st_size + 1);
  size_t len = fread(text, 1, (size_t)st.st_size, f);
  fclose(f);
  text[len] = '\0';
  if (memchr(text, '\0', len)) return; /* not text */
  /* Statements are read from a copy without comments; the census reads the file as it is. */
  if (k != KL_FILE_MSL) {
    char *code = kl_arena_alloc(w->tmp, len + 1);
    memcpy(code, text, len + 1);
    kl_blank_comments(code, len,
                      k == KL_FILE_BUILD_HASH || k == KL_FILE_PY ? KL_TEXT_HASH : KL_TEXT_C);
    struct kl_scan sc = {.a = w->a, .file = kl_arena_strdup(w->a, path), .p = w->p};
    kl_scan_text(&sc, code, len);
  }
  if (k == KL_FILE_MSL || k == KL_FILE_HEADER) kl_walk_msl(w, path, text, (uint32_t)len);
}

static int kl_walk_cmp(const void *x, const void *y) {
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Read the files below dir, in name order; hidden entries and symlinked folders are skipped. */
static void kl_walk_dir(struct kl_pwalk *w, const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) return;
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *de; (de = readdir(d)) != NULL && w->entries < KL_PROJECT_MAX_ENTRIES;) {
    if (de->d_name[0] == '.') continue;
    w->entries++;
    KL_XVEC_PUSH(names, n, cap);
    names[n++] = kl_arena_xstrdup(de->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, kl_walk_cmp);
  for (size_t i = 0; i < n; i++) {
    size_t plen = strlen(dir) + strlen(names[i]) + 2;
    char *child = kl_arena_xmalloc(plen);
    snprintf(child, plen, "%s/%s", strcmp(dir, "/") ? dir : "", names[i]);
    struct stat st;
    if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) {
      if (depth < w->max_depth) kl_walk_dir(w, child, depth + 1);
    } else {
      kl_walk_file(w, child, names[i]);
    }
    free(child);
    free(names[i]);
  }
  free(names);
}

/* The census: every built-in bfloat spelling in the project's MSL files outside comments and
 * strings, guarded (bfloat-target's reading, with the configured and inferred guards, or in a
 * file that #errors below MSL 3.1) or not. */
static void kl_census(struct kl_pwalk *w, bool *any_guard, struct kl_fact *example) {
  struct kl_project *p = w->p;
  *any_guard = false;
  for (size_t i = 0; i < w->nmsl; i++) {
    const struct kl_msl_file *f = &w->msl[i];
    struct kl_bfguard g;
    kl_bfguard_scan(w->tmp, &f->pp, f->len, p->guards, p->nguards, &g);
    if (g.needs_msl31) {
      KL_VEC_PUSH(w->a, p->errors, p->nerrors, w->cap_errors);
      p->errors[p->nerrors++] =
          (struct kl_fact){kl_arena_strdup(w->a, f->path), kl_line_of(f->text, g.error_at),
                           kl_line_text(w->a, f->text, f->len, g.error_at)};
    }
    *any_guard = *any_guard || w->any_guard || g.nsplits > 0 || g.needs_msl31;
    const char *t = f->text;
    uint32_t n = f->len;
    size_t uses = 0;
    for (uint32_t k = 0; k < n;) {
      uint32_t c = kl_skip_noncode(t, n, k);
      if (c > k) {
        k = c;
        continue;
      }
      if (!kl_lex_ident_start(t[k])) {
        k++;
        continue;
      }
      uint32_t s = k;
      while (k < n && kl_lex_ident_char(t[k])) k++;
      /* `bfloat16_t` is the name projects give their alias: its definition is the use. */
      if (!kl_bfguard_builtin(t + s, k - s) || (k - s == 10 && !memcmp(t + s, "bfloat16_t", 10)))
        continue;
      uses++;
      p->nbf++;
      if (g.needs_msl31 || kl_bfguard_covers(&g, s)) {
        p->nbf_guarded++;
      } else if (!example->file) {
        *example = (struct kl_fact){kl_arena_strdup(w->a, f->path), kl_line_of(t, s), NULL};
      }
    }
    if (uses) p->nbf_files++;
  }
}

/* What of a config the project depends on (its guards), as a string to find it again by. */
static const char *kl_project_key(struct kl_arena *a, const struct kl_config *cfg) {
  const char *key = "";
  for (size_t i = 0; cfg && i < cfg->nbfloat_guards; i++)
    key = kl_arena_printf(a, "%s%s,", key, cfg->bfloat_guards[i]);
  return key;
}

static struct kl_project *kl_project_make(struct kl_projects *ps, const char *root,
                                          const char *marker, bool shallow,
                                          const struct kl_config *cfg) {
  struct kl_project *p = kl_arena_alloc(ps->a, sizeof *p);
  memset(p, 0, sizeof *p);
  p->root = kl_arena_strdup(ps->a, root);
  p->marker = marker;
  p->key = kl_project_key(ps->a, cfg);
  struct kl_pwalk w = {.p = p, .a = ps->a, .tmp = kl_arena_new(), .cfg = cfg};
  /* A named file's folder without a marker may be any folder (a home, /tmp): its own files are
   * the project, not everything below it. */
  w.max_depth = shallow ? 0 : KL_PROJECT_MAX_DEPTH;
  p->shallow = shallow;
  kl_walk_dir(&w, root, 0);
  kl_walk_denials(&w);
  /* The guards: the configured ones, then those the project's code makes. */
  size_t nc = cfg ? cfg->nbfloat_guards : 0;
  const char **all = kl_arena_alloc(ps->a, (nc + w.nguards + 1) * sizeof *all);
  /* Copies: the project may outlive the config (the language server loads it per lint). */
  for (size_t i = 0; i < nc; i++) all[i] = kl_arena_strdup(ps->a, cfg->bfloat_guards[i]);
  p->guard_facts = kl_arena_alloc(ps->a, (w.nguards + 1) * sizeof *p->guard_facts);
  size_t ng = 0;
  for (size_t i = 0; i < w.nguards; i++) {
    if (w.guards[i].denied) continue;
    all[nc + ng] = w.guards[i].name;
    p->guard_facts[ng++] = w.guards[i].fact;
  }
  p->guards = all;
  p->nguards = nc + ng;
  p->nconfig_guards = nc;
  bool any_guard;
  struct kl_fact example = {0};
  kl_census(&w, &any_guard, &example);
  /* Deviance (Engler): where some bfloat is guarded, the unguarded rest are the defects. Where
   * the project never guards bfloat availability at all, in two files or more, and states no
   * version, it evidently requires MSL 3.1. */
  if (!p->metal_version && p->nbf && !p->nbf_guarded && !any_guard &&
      p->nbf_files >= KL_PROJECT_MIN_FILES) {
    p->metal_version = 310;
    p->metal_inferred = true;
    p->metal_fact = (struct kl_fact){
        example.file, example.line,
        kl_arena_printf(ps->a,
                        "none of %zu bfloat uses in the project's %zu files that use "
                        "bfloat is guarded",
                        p->nbf, p->nbf_files)};
  }
  kl_arena_delete(w.tmp);
  return p;
}

const struct kl_project *kl_project_for(struct kl_projects *ps, const char *file, const char *arg,
                                        const struct kl_config *cfg) {
  const char *slash = strrchr(file, '/');
  size_t dlen = slash ? (size_t)(slash - file) + 1 : 0;
  const char *key0 = kl_project_key(ps->a, cfg);
  if (ps->last && strlen(ps->last_dir) == dlen && !strncmp(ps->last_dir, file, dlen) &&
      !strcmp(ps->last_arg, arg ? arg : "") && !strcmp(ps->last_key, key0))
    return ps->last;
  ps->last_dir = kl_arena_strndup(ps->a, file, dlen);
  ps->last_arg = kl_arena_strdup(ps->a, arg ? arg : "");
  ps->last_key = key0;
  struct kl_arena *a = kl_arena_new();
  char *fabs = kl_source_abspath(file, ps->cwd);
  char *aabs = arg ? kl_source_abspath(arg, ps->cwd) : NULL;
  struct stat st;
  bool arg_dir = aabs && stat(aabs, &st) == 0 && S_ISDIR(st.st_mode);
  const char *marker;
  const char *root = kl_project_root(a, fabs, aabs ? aabs : fabs, arg_dir, &marker);
  free(fabs);
  struct kl_project *p = NULL;
  const char *key = kl_project_key(a, cfg);
  bool shallow = !marker && !arg_dir;
  for (size_t i = 0; i < ps->n && !p; i++)
    if (!strcmp(ps->items[i]->key, key) && !strcmp(ps->items[i]->root, root) &&
        ps->items[i]->shallow == shallow)
      p = ps->items[i];
  if (!p) {
    p = kl_project_make(ps, root, marker, shallow, cfg);
    KL_XVEC_PUSH(ps->items, ps->n, ps->cap);
    ps->items[ps->n++] = p;
  }
  ps->last = p;
  free(aabs);
  kl_arena_delete(a);
  return p;
}

void kl_project_apply(const struct kl_project *p, const struct kl_config *cfg,
                      struct kl_settings *s) {
  if (!p) return;
  if (p->metal_version && !(cfg && cfg->metal_version)) s->metal_version = p->metal_version;
  /* A .lintrc's unit-strides replace what the code shows. */
  if (p->unit_stride && !(cfg && cfg->line_unit_strides)) { /* even an empty list replaces it */
    s->unit_strides = p->unit_stride;
    s->nunit_strides = 1;
  }
  /* Guards add up: a configured list does not make the project's own guards less so. */
  if (p->nguards > p->nconfig_guards) {
    s->bfloat_guards = p->guards;
    s->nbfloat_guards = p->nguards;
  }
}

/* ---- --show-settings ---- */

/* A path as the user would name it: relative to the working folder when below it. */
static const char *kl_show_path(struct kl_arena *a, const char *abs) {
  char cwd[PATH_MAX];
  if (!abs || !getcwd(cwd, sizeof cwd)) return abs;
  const char *rel = kl_source_subpath(abs, cwd);
  return rel && *rel ? kl_arena_strdup(a, rel) : abs;
}

static const char *kl_show_fact(struct kl_arena *a, const char *how, const struct kl_fact *f) {
  if (!f->file) return kl_arena_printf(a, "%s: %s", how, f->text);
  if (!f->text) return kl_arena_printf(a, "%s: %s:%u", how, kl_show_path(a, f->file), f->line);
  return kl_arena_printf(a, "%s: %s:%u: %s", how, kl_show_path(a, f->file), f->line, f->text);
}

static const char *kl_show_lintrc(struct kl_arena *a, const struct kl_config *c, int line,
                                  const char *section) {
  return kl_arena_printf(a, ".lintrc: %s:%d%s%s%s", c->path, line, section ? " [path \"" : "",
                         section ? section : "", section ? "\"]" : "");
}

void kl_project_show(FILE *out, const char *file, const struct kl_project *p,
                     const struct kl_config *cfg, const struct kl_cli_settings *cli) {
  struct kl_arena *a = kl_arena_new();
  struct kl_settings s;
  kl_config_defaults(&s);
  char *rel = kl_config_relpath(cfg, file);
  const char *w_target = "default", *w_rounded = "default", *w_mv = "default";
  size_t nrules;
  const struct kl_rule *const *rules = kl_rules_all(&nrules);
  const char **w_level = kl_arena_alloc(a, (nrules + 1) * sizeof *w_level);
  for (size_t i = 0; i < nrules; i++) w_level[i] = "default";
  /* The layers in the engine's order: project, .lintrc and its [path] sections, command line. */
  if (p && p->metal_version)
    w_mv = kl_show_fact(a, p->metal_inferred ? "inferred from code" : "stated in the build",
                        &p->metal_fact);
  kl_project_apply(p, cfg, &s);
  kl_config_apply_rel(cfg, rel, &s);
  kl_project_apply(p, cfg, &s);
  if (cfg) {
    if (cfg->target) w_target = kl_show_lintrc(a, cfg, cfg->line_target, NULL);
    if (cfg->assume_rounded_grid >= 0) w_rounded = kl_show_lintrc(a, cfg, cfg->line_rounded, NULL);
    if (cfg->metal_version) w_mv = kl_show_lintrc(a, cfg, cfg->line_metal_version, NULL);
    for (size_t i = 0; i < nrules && i < KL_CONFIG_MAX_RULES; i++)
      if (cfg->level[i] >= 0) w_level[i] = kl_show_lintrc(a, cfg, cfg->line_level[i], NULL);
    for (size_t k = 0; rel && k < cfg->nsections; k++) {
      const struct kl_config_section *sec = &cfg->sections[k];
      if (!kl_config_section_applies(cfg, k, rel)) continue;
      if (sec->target) w_target = kl_show_lintrc(a, cfg, sec->line_target, sec->glob);
      if (sec->assume_rounded_grid >= 0)
        w_rounded = kl_show_lintrc(a, cfg, sec->line_rounded, sec->glob);
      for (size_t i = 0; i < nrules && i < KL_CONFIG_MAX_RULES; i++)
        if (sec->level[i] >= 0) w_level[i] = kl_show_lintrc(a, cfg, sec->line_level[i], sec->glob);
    }
  }
  free(rel);
  /* A file that #errors below MSL 3.1 requires it, whatever the project's lowest version. */
  char cwd[PATH_MAX];
  char *fabs = kl_source_abspath(file, getcwd(cwd, sizeof cwd) ? cwd : "/");
  const struct kl_fact *err = NULL;
  for (size_t i = 0; p && i < p->nerrors && !err; i++)
    if (!strcmp(p->errors[i].file, fabs)) err = &p->errors[i];
  free(fabs);
  if (cli && cli->target) {
    const struct kl_msl_family *fam = kl_msl_family(cli->target);
    if (fam) s.target = fam->name, s.apple_family = fam->apple;
    w_target = "command line: --target";
  }
  if (cli && cli->rounded) {
    s.assume_rounded_grid = true;
    w_rounded = "command line: --assume-rounded-grid";
  }
  if (cli && cli->metal_version) {
    s.metal_version = cli->metal_version;
    w_mv = "command line: --metal-version";
  }
  fprintf(out, "file = %s\n", file);
  if (p)
    fprintf(out, "project = %s  (%s%s)\n", kl_show_path(a, p->root),
            p->marker ? "marker: "
                      : "no project marker: the folder the argument names or the "
                        "first folder below it",
            p->marker ? p->marker : "");
  fprintf(out, "target = %s  (%s)\n", s.target, w_target);
  fprintf(out, "assume-rounded-grid = %s  (%s)\n", s.assume_rounded_grid ? "true" : "false",
          w_rounded);
  if (s.metal_version)
    fprintf(out, "metal-version = %u.%u  (%s)\n", s.metal_version / 100, s.metal_version / 10 % 10,
            w_mv);
  else
    fprintf(out, "metal-version = unknown  (default: the build states none)\n");
  if (err && s.metal_version < 310)
    fprintf(out, "metal-version (this file) = 3.1  (%s)\n",
            kl_show_fact(a, "stated in the file", err));
  fprintf(out, "bfloat-guards = __HAVE_BFLOAT__");
  for (size_t i = 0; i < s.nbfloat_guards; i++) fprintf(out, ", %s", s.bfloat_guards[i]);
  fprintf(out, "  (__HAVE_BFLOAT__: built in");
  for (size_t i = 0; i < s.nbfloat_guards; i++) {
    const char *name = s.bfloat_guards[i], *how = NULL;
    for (size_t k = 0; p && k < p->nguards && !how; k++) {
      if (strcmp(p->guards[k], name)) continue;
      how = k < p->nconfig_guards
                ? kl_show_lintrc(a, cfg, cfg->line_bfloat_guards, NULL)
                : kl_show_fact(a, "inferred from code", &p->guard_facts[k - p->nconfig_guards]);
    }
    if (!how && cfg) how = kl_show_lintrc(a, cfg, cfg->line_bfloat_guards, NULL);
    fprintf(out, "; %s: %s", name, how ? how : "default");
  }
  fprintf(out, ")\n");
  fprintf(out, "unit-strides = ");
  for (size_t i = 0; i < s.nunit_strides; i++)
    fprintf(out, "%s%s", i ? ", " : "", s.unit_strides[i]);
  const char *us = "default";
  if (cfg && cfg->line_unit_strides)
    us = kl_show_lintrc(a, cfg, cfg->line_unit_strides, NULL);
  else if (s.nunit_strides && p && p->unit_stride)
    us = kl_show_fact(a, "inferred from code", &p->unit_fact);
  fprintf(out, "%s  (%s)\n", s.nunit_strides ? "" : "none", us);
  if (p && p->nbf)
    fprintf(out,
            "bfloat census = %zu of %zu native bfloat uses guarded, in %zu %s  "
            "(inferred from code)\n",
            p->nbf_guarded, p->nbf, p->nbf_files, p->nbf_files == 1 ? "file" : "files");
  for (size_t i = 0; i < nrules; i++) {
    enum kl_severity sev = kl_rules_level(&s, i);
    fprintf(out, "rules.%s = %s  (%s)\n", rules[i]->id, kl_diag_severity_name(sev), w_level[i]);
  }
  kl_arena_delete(a);
}

int kl_project_show_file(const char *file, const char *arg, const struct kl_cli_settings *cli) {
  struct stat st;
  int rc = stat(file, &st);
  if (rc != 0 || S_ISDIR(st.st_mode)) {
    fprintf(stderr, "kernlint: %s: %s\n", file,
            rc == 0           ? "is a directory, expected a file"
            : errno == ENOENT ? "no such file or directory"
                              : strerror(errno));
    return 2;
  }
  char *path = cli && cli->config ? kl_arena_xstrdup(cli->config) : kl_config_find(file);
  struct kl_config *cfg = NULL;
  char err[512] = "";
  if (path && !(cfg = kl_config_load(path, err, sizeof err))) {
    fprintf(stderr, "kernlint: %s\n", err[0] ? err : path);
    free(path);
    return 2;
  }
  free(path);
  struct kl_projects *ps = kl_projects_new();
  const struct kl_project *p = kl_project_for(ps, file, arg ? arg : file, cfg);
  kl_project_show(stdout, file, p, cfg, cli);
  kl_projects_delete(ps);
  kl_config_delete(cfg);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "kernlint: cannot write output: %s\n", strerror(errno));
    return 2;
  }
  return 0;
}
