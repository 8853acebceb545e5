/* The language server. The thread that calls kl_lsp_run reads messages and handles them at once:
 * a change is applied to the document's buffer and marks it for linting; a request that needs the
 * document's findings (codeAction, hover) waits for them in a queue, where $/cancelRequest can
 * still reach it. A second thread lints: it takes the document marked first, lints a copy of its
 * text with no lock held, and publishes only if no change came meanwhile, so that a burst of
 * edits gets the diagnostics of its last version and a lint never holds up reading the next
 * message. Each lint has its own arena, freed once its diagnostics are out; what codeAction and
 * hover need of them is kept as JSON. Nothing but LSP messages goes to stdout.
 *
 * Locks: s->lock guards the documents, the queue and the session's state; the stream's out_lock
 * (rpc.c) is taken inside it, never the other way round. */
#include "analyzer/lsp/lsp.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/core/config.h"
#include "analyzer/core/version.h"
#include "analyzer/core/xdefs.h"
#include "analyzer/engine.h"
#include "analyzer/input/project.h"
#include "analyzer/lsp/rpc.h"
#include "analyzer/lsp/text.h"
#include "grammar/expand.h"
#include "grammar/preproc.h"
#include "rules/rules.h"

/* One published diagnostic, as codeAction and hover need it after the lint's arena is gone. */
struct kl_lsp_pub {
  json_t *diag; /* the Diagnostic as published */
  json_t *fix;  /* WorkspaceEdit of its fix, or NULL */
  char *fix_title;
  uint32_t line; /* 1-based line a suppression must cover */
};

struct kl_lsp_doc {
  char *uri;
  char *path; /* NULL unless a file: URI */
  char *language;
  char *text;
  size_t len;
  json_t *version; /* the client's version of text, or NULL */
  uint64_t gen;    /* which change made text: unique in the session */
  uint64_t marked; /* 0, or when it was marked for a lint (the lint thread takes the first) */
  uint64_t linted; /* the gen whose findings pubs hold (0: none yet) */
  struct kl_lsp_pub *pubs;
  size_t npubs;
  /* The tree of the text last linted, which the next lint's parse edits (lint thread only: a
   * lint takes it out of the document and puts it back). */
  struct kl_engine_reuse reuse;
};

/* A request that waits for its document's findings. */
struct kl_lsp_wait {
  json_t *id, *params;
  char *uri;
  const struct kl_lsp_method *method;
};

struct kl_lsp {
  struct kl_rpc rpc;
  const struct kl_lsp_options *o;
  struct kl_config *forced;
  enum kl_text_encoding enc;
  bool markdown;   /* the client reads Markdown hovers */
  char *rule_docs; /* initializationOptions.ruleDocs: an address with {rule}, or NULL */
  bool initialized, shutdown, exited;
  pthread_mutex_t lock;
  pthread_cond_t work; /* a document was marked, or the session ends */
  pthread_t linter;
  bool stop;      /* the lint thread is to end */
  uint64_t clock; /* gens and marks are taken from it */
  struct kl_lsp_doc **docs;
  size_t ndocs, cap_docs;
  struct kl_lsp_wait *waits;
  size_t nwaits, cap_waits;
  struct kl_projects *projects; /* read once per session, by the lint thread: each project's say */
};

/* A handler returns 0, or a JSON-RPC error code with the message in why. */
typedef int (*kl_lsp_method_fn)(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                                size_t whylen);

struct kl_lsp_method {
  const char *name;
  kl_lsp_method_fn fn;
  bool needs_obj; /* params must be an object */
  bool findings;  /* it reads the document's findings: it waits for them */
};

/* ---- documents ---- */

static struct kl_lsp_doc *kl_lsp_find(struct kl_lsp *s, const char *uri) {
  for (size_t i = 0; i < s->ndocs; i++)
    if (!strcmp(s->docs[i]->uri, uri)) return s->docs[i];
  return NULL;
}

static void kl_lsp_pubs_free(struct kl_lsp_doc *d) {
  for (size_t i = 0; i < d->npubs; i++) {
    json_decref(d->pubs[i].diag);
    json_decref(d->pubs[i].fix);
    free(d->pubs[i].fix_title);
  }
  free(d->pubs);
  d->pubs = NULL;
  d->npubs = 0;
}

static void kl_lsp_doc_free(struct kl_lsp_doc *d) {
  kl_lsp_pubs_free(d);
  kl_engine_reuse_end(&d->reuse);
  json_decref(d->version);
  free(d->uri);
  free(d->path);
  free(d->language);
  free(d->text);
  free(d);
}

/* Have the lint thread lint d (again) once it is done with the documents marked before it. */
static void kl_lsp_mark(struct kl_lsp *s, struct kl_lsp_doc *d) {
  d->marked = ++s->clock;
  pthread_cond_signal(&s->work);
}

/* The language of a document: by its name's extension, as the CLI picks, else by the client's
 * languageId; a document that is neither is taken for MSL, as a file named to the CLI is. */
static enum kl_lang kl_lsp_lang(const struct kl_lsp_doc *d, enum kl_lang by_name) {
  if (by_name != KL_LANG_UNKNOWN) return by_name;
  const char *id = d->language ? d->language : "";
  if (!strcmp(id, "python")) return KL_LANG_PYTHON;
  if (!strcmp(id, "objective-c") || !strcmp(id, "objective-cpp") || !strcmp(id, "objc") ||
      !strcmp(id, "objcpp") || !strcmp(id, "cpp"))
    return KL_LANG_HOST;
  return KL_LANG_METAL;
}

static const int kl_lsp_severity[] = {
    [KL_SEV_OFF] = 3, [KL_SEV_NOTE] = 3, [KL_SEV_WARNING] = 2, [KL_SEV_ERROR] = 1};

/* The file URI of a path (made absolute from the server's folder), percent-encoded; malloc'd. */
static char *kl_lsp_path_uri(const char *path) {
  char *cwd = getcwd(NULL, 0);
  char *abs = kl_source_abspath(path, cwd ? cwd : "/");
  free(cwd);
  char *esc = kl_source_uri_escape(abs);
  char *out = kl_text_printf("file://%s", esc);
  free(esc);
  free(abs);
  return out;
}

/* A related location in another file: its document's URI, and its range counted in that file's
 * text as the client counts (read from disk; from the span's line and column if it cannot be). */
static json_t *kl_lsp_other_location(const struct kl_related *x, enum kl_text_encoding enc) {
  struct kl_arena *a = kl_arena_new();
  struct kl_source o;
  char err[256];
  json_t *range;
  if (kl_source_load(a, x->path, &o, err, sizeof err) == 0 && x->span.end <= o.len)
    range = kl_text_range(&o, x->span.start, x->span.end, enc);
  else
    range = json_pack("{s:{s:i,s:i},s:{s:i,s:i}}", "start", "line", (int)x->span.line - 1,
                      "character", (int)x->span.col - 1, "end", "line",
                      (int)x->span.end_line - 1, "character", (int)x->span.end_col - 1);
  kl_arena_delete(a);
  char *uri = kl_lsp_path_uri(x->path);
  json_t *loc = json_pack("{s:s, s:o}", "uri", uri, "range", range);
  free(uri);
  return loc;
}

static json_t *kl_lsp_diag_json(const struct kl_source *src, const struct kl_diag *d,
                                const char *uri, enum kl_text_encoding enc) {
  json_t *j = json_pack("{s:o, s:i, s:s, s:s, s:s}", "range",
                        kl_text_range(src, d->span.start, d->span.end, enc), "severity",
                        kl_lsp_severity[d->severity], "code", d->rule_id, "source", "kernlint",
                        "message", d->message);
  if (d->nrelated) {
    json_t *rel = json_array();
    for (size_t r = 0; r < d->nrelated; r++) {
      const struct kl_related *x = &d->related[r];
      json_t *loc = x->path ? kl_lsp_other_location(x, enc)
                            : json_pack("{s:s, s:o}", "uri", uri, "range",
                                        kl_text_range(src, x->span.start, x->span.end, enc));
      json_array_append_new(rel, json_pack("{s:o, s:s}", "location", loc, "message", x->message));
    }
    json_object_set_new(j, "relatedInformation", rel);
  }
  return j;
}

/* A problem with the document as a whole (its .lintrc, its bytes), shown on its first line. */
static json_t *kl_lsp_doc_problem(const char *message) {
  return json_pack("{s:{s:{s:i,s:i},s:{s:i,s:i}}, s:i, s:s, s:s}", "range", "start", "line", 0,
                   "character", 0, "end", "line", 0, "character", 0, "severity", 1, "source",
                   "kernlint", "message", message);
}

/* Settings for d: the forced --config, or the closest .lintrc of a file. Returns false, with
 * *problem set (malloc'd) when the .lintrc is broken, or with *problem NULL when the .lintrc
 * excludes the file (its findings would be noise the project asked not to see). */
static bool kl_lsp_settings(struct kl_lsp *s, const struct kl_lsp_doc *d, struct kl_settings *st,
                            char **problem) {
  *problem = NULL;
  kl_config_defaults(st);
  struct kl_config *own = NULL;
  const struct kl_config *cfg = NULL;
  if (d->path && s->forced) {
    cfg = s->forced;
  } else if (d->path) {
    char *cp = kl_config_find(d->path);
    if (cp) {
      char err[512] = "";
      own = kl_config_load(cp, err, sizeof err);
      if (!own) *problem = kl_text_printf("kernlint: %s", err[0] ? err : cp);
      free(cp);
      if (!own) return false;
      cfg = own;
    }
  }
  bool ok = true;
  if (cfg) {
    char *rel = kl_config_relpath(cfg, d->path);
    ok = kl_config_selects_rel(cfg, rel);
    kl_config_apply_rel(cfg, rel, st);
    free(rel);
  }
  if (d->path && s->projects)
    kl_project_apply(kl_project_for(s->projects, d->path, d->path, cfg), cfg, st);
  kl_config_delete(own);
  if (s->o->target) {
    st->target = s->o->target;
    st->apple_family = s->o->apple_family;
  }
  if (s->o->rounded) st->assume_rounded_grid = true;
  if (s->o->metal_version) st->metal_version = s->o->metal_version;
  return ok;
}

/* The Diagnostic of finding x, in src of the document uri. */
static json_t *kl_lsp_pub_json(struct kl_lsp *s, const struct kl_source *src,
                               const struct kl_diag *x, const char *uri) {
  json_t *j = kl_lsp_diag_json(src, x, uri, s->enc);
  const char *at = s->rule_docs ? strstr(s->rule_docs, "{rule}") : NULL;
  if (at) {
    char *href =
        kl_text_printf("%.*s%s%s", (int)(at - s->rule_docs), s->rule_docs, x->rule_id, at + 6);
    json_object_set_new(j, "codeDescription", json_pack("{s:s}", "href", href));
    free(href);
  }
  return j;
}

/* Lint d (a copy: no lock is held) from its text in memory: its diagnostics to publish, and in
 * *pubs what codeAction and hover need of them. Runs on the lint thread only, which alone
 * touches the engine's caches and s->projects. */
static json_t *kl_lsp_lint(struct kl_lsp *s, struct kl_lsp_doc *d, struct kl_lsp_pub **pubs,
                           size_t *npubs) {
  json_t *list = json_array();
  struct kl_settings st;
  char *problem = NULL;
  *pubs = NULL;
  *npubs = 0;
  if (kl_lsp_settings(s, d, &st, &problem)) {
    /* The server outlives edits to the tree: a header made, edited or removed since counts
     * now. The headers' summaries (kl_xdefs) are kept: each is keyed by its header's text and
     * checked once per lint against what its parse read of other headers (they were a sixth
     * of a keystroke's lint in a file that calls header functions). */
    kl_expand_forget_paths();
    kl_xdefs_sweep();
    struct kl_arena *a = kl_arena_new();
    struct kl_source src;
    struct kl_diag_list diags;
    kl_diag_list_init(&diags, a);
    char err[512] = "";
    int rc = kl_source_from_memory(a, d->path ? d->path : d->uri, d->text, d->len, &src, err,
                                   sizeof err);
    if (rc == 0) {
      src.lang = kl_lsp_lang(d, src.lang);
      rc = kl_engine_lint_reuse(a, &src, &st, NULL, &d->reuse, &diags, err, sizeof err);
    }
    if (rc != 0) {
      problem =
          kl_text_printf("kernlint cannot lint this file: %s", err[0] ? err : "unknown error");
    } else {
      *pubs = kl_arena_xmalloc((diags.n ? diags.n : 1) * sizeof **pubs);
      for (size_t i = 0; i < diags.n; i++) {
        const struct kl_diag *x = &diags.items[i];
        /* A message jansson refuses (not UTF-8) has no Diagnostic: it is left out, not kept
         * as a hole that codeAction and hover would trip on. */
        json_t *dj = kl_lsp_pub_json(s, &src, x, d->uri);
        if (!dj) continue;
        struct kl_lsp_pub *p = &(*pubs)[(*npubs)++];
        memset(p, 0, sizeof *p);
        p->diag = dj;
        p->line = x->span.line;
        if (x->fix && x->fix->nedits) {
          p->fix = kl_text_fix_edit(&src, x->fix, d->uri, s->enc);
          p->fix_title = kl_arena_xstrdup(x->fix->title ? x->fix->title : "apply the fix");
        }
        json_array_append(list, p->diag);
      }
    }
    kl_arena_delete(a);
  }
  if (problem) {
    kl_rpc_log("%s: %s", d->uri, problem);
    json_array_append_new(list, kl_lsp_doc_problem(problem));
    free(problem);
  }
  return list;
}

/* Publish list (stolen) as the diagnostics of uri at version (NULL: none given). */
static void kl_lsp_publish(struct kl_lsp *s, const char *uri, json_t *version, json_t *list) {
  json_t *params = json_pack("{s:s}", "uri", uri);
  if (json_is_integer(version)) json_object_set(params, "version", version);
  json_object_set_new(params, "diagnostics", list);
  kl_rpc_send(&s->rpc, json_pack("{s:s, s:o}", "method", "textDocument/publishDiagnostics",
                                 "params", params));
}

static void kl_lsp_publish_empty(struct kl_lsp *s, const char *uri) {
  kl_lsp_publish(s, uri, NULL, json_array());
}

/* ---- methods ---- */

static const char *kl_lsp_str(json_t *obj, const char *key) {
  return json_string_value(json_object_get(obj, key));
}

static int kl_lsp_bad(char *why, size_t whylen, const char *what) {
  snprintf(why, whylen, "invalid params: %s", what);
  return KL_RPC_INVALID_PARAMS;
}

/* The client's most preferred position encoding among the ones implemented; NULL when it
 * offers none (UTF-16 then, which every client and server must support). */
static const char *kl_lsp_pick_encoding(json_t *caps, enum kl_text_encoding *enc) {
  json_t *list = json_object_get(json_object_get(caps, "general"), "positionEncodings");
  size_t i;
  json_t *v;
  json_array_foreach(list, i, v) {
    const char *e = json_string_value(v);
    if (!e) continue;
    if (!strcmp(e, "utf-8"))
      *enc = KL_TEXT_UTF8;
    else if (!strcmp(e, "utf-16"))
      *enc = KL_TEXT_UTF16;
    else if (!strcmp(e, "utf-32"))
      *enc = KL_TEXT_UTF32;
    else
      continue;
    return e;
  }
  if (json_is_array(list)) return "utf-16";
  return NULL;
}

static int kl_lsp_initialize(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                             size_t whylen) {
  if (s->initialized) {
    snprintf(why, whylen, "initialize was already received");
    return KL_RPC_INVALID_REQUEST;
  }
  if (!json_is_object(params)) return kl_lsp_bad(why, whylen, "initialize needs an object");
  json_t *caps = json_object_get(params, "capabilities");
  s->enc = KL_TEXT_UTF16;
  const char *enc = kl_lsp_pick_encoding(caps, &s->enc);
  json_t *td = json_object_get(caps, "textDocument");
  json_t *fmts = json_object_get(json_object_get(td, "hover"), "contentFormat");
  size_t i;
  json_t *v;
  json_array_foreach(fmts, i, v) {
    /* The first format the client names is the one it prefers. */
    s->markdown = !strcmp(json_string_value(v) ? json_string_value(v) : "", "markdown");
    break;
  }
  /* codeDescription needs an address to point at: the project publishes none, so only one the
   * user gives (initializationOptions.ruleDocs, "{rule}" standing for the rule's id). */
  const char *docs = kl_lsp_str(json_object_get(params, "initializationOptions"), "ruleDocs");
  bool described = json_is_true(
      json_object_get(json_object_get(td, "publishDiagnostics"), "codeDescriptionSupport"));
  if (docs && described && strstr(docs, "{rule}")) s->rule_docs = kl_arena_xstrdup(docs);
  /* Incremental sync (2): a keystroke sends its range and text, not the whole file. */
  json_t *c = json_pack("{s:{s:b, s:i, s:{s:b}}, s:{s:[s]}, s:b}", "textDocumentSync", "openClose",
                        1, "change", 2, "save", "includeText", 0, "codeActionProvider",
                        "codeActionKinds", "quickfix", "hoverProvider", 1);
  if (enc) json_object_set_new(c, "positionEncoding", json_string(enc));
  *result = json_pack("{s:o, s:{s:s, s:s}}", "capabilities", c, "serverInfo", "name", "kernlint",
                      "version", KL_VERSION);
  s->initialized = true;
  return 0;
}

static int kl_lsp_shutdown(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                           size_t whylen) {
  s->shutdown = true;
  return 0;
}

static int kl_lsp_exit(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                       size_t whylen) {
  s->exited = true;
  return 0;
}

static int kl_lsp_nothing(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                          size_t whylen) {
  return 0;
}

/* params.textDocument and its uri, checked. */
static json_t *kl_lsp_textdoc(json_t *params, const char **uri) {
  json_t *td = json_object_get(params, "textDocument");
  *uri = kl_lsp_str(td, "uri");
  return *uri ? td : NULL;
}

static int kl_lsp_did_open(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                           size_t whylen) {
  const char *uri;
  json_t *td = kl_lsp_textdoc(params, &uri);
  const char *text = kl_lsp_str(td, "text");
  if (!td || !text) return kl_lsp_bad(why, whylen, "didOpen needs textDocument.uri and .text");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (d) {
    /* Opened again without a close: the new text replaces the old, findings and all. */
    kl_lsp_pubs_free(d);
    json_decref(d->version);
    kl_engine_reuse_end(&d->reuse);
    free(d->path);
    free(d->language);
    free(d->text);
    char *keep = d->uri;
    memset(d, 0, sizeof *d);
    d->uri = keep;
  } else {
    d = kl_arena_xmalloc(sizeof *d);
    memset(d, 0, sizeof *d);
    d->uri = kl_arena_xstrdup(uri);
    KL_XVEC_PUSH(s->docs, s->ndocs, s->cap_docs);
    s->docs[s->ndocs++] = d;
  }
  d->path = kl_text_uri_path(uri);
  const char *lang = kl_lsp_str(td, "languageId");
  d->language = lang ? kl_arena_xstrdup(lang) : NULL;
  d->len = json_string_length(json_object_get(td, "text"));
  d->text = kl_arena_xstrndup(text, d->len);
  d->version = json_incref(json_object_get(td, "version"));
  d->gen = ++s->clock;
  kl_lsp_mark(s, d);
  return 0;
}

static int kl_lsp_did_change(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                             size_t whylen) {
  const char *uri;
  json_t *changes = json_object_get(params, "contentChanges");
  json_t *td = kl_lsp_textdoc(params, &uri);
  if (!td || !json_is_array(changes))
    return kl_lsp_bad(why, whylen, "didChange needs textDocument.uri and contentChanges");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d) return kl_lsp_bad(why, whylen, "didChange for a document that is not open");
  /* The changes apply in order, each to the text the one before it made; one that is malformed
   * drops the whole notification, so that the buffer stays a text the client once had. */
  size_t len = d->len;
  char *text = kl_arena_xstrndup(d->text, len);
  size_t i;
  json_t *ch;
  char what[200];
  json_array_foreach(changes, i, ch) {
    if (kl_text_apply_change(&text, &len, ch, s->enc, what, sizeof what) != 0) {
      free(text);
      snprintf(why, whylen, "invalid params: didChange: change %zu: %s", i, what);
      /* A notification has no answer, and the buffer no longer follows the editor's: the user
       * is told, as a log line would go unseen. */
      char *msg = kl_text_printf("kernlint: an edit of %s could not be applied (%s); its "
                                 "findings may be stale until the file is closed and reopened",
                                 uri, what);
      kl_rpc_send(&s->rpc, json_pack("{s:s, s:{s:i, s:s}}", "method", "window/showMessage",
                                     "params", "type", 1, "message", msg));
      free(msg);
      return KL_RPC_INVALID_PARAMS;
    }
  }
  free(d->text);
  d->text = text;
  d->len = len;
  json_decref(d->version);
  d->version = json_incref(json_object_get(td, "version"));
  d->gen = ++s->clock;
  kl_lsp_mark(s, d);
  return 0;
}

static int kl_lsp_did_save(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                           size_t whylen) {
  const char *uri;
  if (!kl_lsp_textdoc(params, &uri)) return kl_lsp_bad(why, whylen, "didSave needs a uri");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d) return kl_lsp_bad(why, whylen, "didSave for a document that is not open");
  json_t *text = json_object_get(params, "text");
  if (json_is_string(text)) {
    free(d->text);
    d->len = json_string_length(text);
    d->text = kl_arena_xstrndup(json_string_value(text), d->len);
  }
  /* Saving is when a .lintrc edited alongside takes effect too: lint again. */
  d->gen = ++s->clock;
  kl_lsp_mark(s, d);
  return 0;
}

static void kl_lsp_answer_waits(struct kl_lsp *s, const char *uri);

static int kl_lsp_did_close(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                            size_t whylen) {
  const char *uri;
  if (!kl_lsp_textdoc(params, &uri)) return kl_lsp_bad(why, whylen, "didClose needs a uri");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d) return kl_lsp_bad(why, whylen, "didClose for a document that is not open");
  kl_lsp_publish_empty(s, uri);
  size_t k = 0;
  while (s->docs[k] != d) k++;
  s->docs[k] = s->docs[--s->ndocs];
  /* A lint of it under way finds it gone, and publishes nothing; a request waiting for its
   * findings is answered now, as one about a closed document. */
  char *keep = kl_arena_xstrdup(uri);
  kl_lsp_doc_free(d);
  kl_lsp_answer_waits(s, keep);
  free(keep);
  return 0;
}

/* The published diagnostic a client's one stands for: same code and range, or failing that
 * (a client may round-trip a range through its own columns) same code and first line. */
static struct kl_lsp_pub *kl_lsp_match(struct kl_lsp_doc *d, json_t *cd) {
  const char *code = kl_lsp_str(cd, "code");
  json_t *range = json_object_get(cd, "range");
  if (!code || !json_is_object(range)) return NULL;
  for (size_t i = 0; i < d->npubs; i++) {
    json_t *p = d->pubs[i].diag;
    if (!strcmp(kl_lsp_str(p, "code"), code) && json_equal(json_object_get(p, "range"), range))
      return &d->pubs[i];
  }
  json_t *line = json_object_get(json_object_get(range, "start"), "line");
  for (size_t i = 0; i < d->npubs; i++) {
    json_t *p = d->pubs[i].diag;
    json_t *pl = json_object_get(json_object_get(json_object_get(p, "range"), "start"), "line");
    if (!strcmp(kl_lsp_str(p, "code"), code) && json_equal(pl, line)) return &d->pubs[i];
  }
  return NULL;
}

/* Whether a codeAction request's context.only lets quickfix actions through. */
static bool kl_lsp_wants_quickfix(json_t *only) {
  if (!json_is_array(only)) return true;
  size_t i;
  json_t *v;
  json_array_foreach(only, i, v) {
    const char *k = json_string_value(v);
    if (k && (!strcmp(k, "quickfix") || !k[0])) return true;
  }
  return false;
}

static int kl_lsp_code_action(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                              size_t whylen) {
  const char *uri;
  json_t *ctx = json_object_get(params, "context");
  json_t *cds = json_object_get(ctx, "diagnostics");
  if (!kl_lsp_textdoc(params, &uri) || !json_is_array(cds))
    return kl_lsp_bad(why, whylen, "codeAction needs textDocument.uri and context.diagnostics");
  json_t *actions = json_array();
  *result = actions;
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d || !kl_lsp_wants_quickfix(json_object_get(ctx, "only"))) return 0;
  struct kl_arena *a = kl_arena_new();
  struct kl_source src;
  char err[256];
  bool have_src = kl_source_from_memory(a, d->path ? d->path : d->uri, d->text, d->len, &src, err,
                                        sizeof err) == 0;
  if (have_src) src.lang = kl_lsp_lang(d, src.lang);
  /* One suppression per rule and line, however many findings it covers. */
  json_t *seen = json_object();
  size_t i;
  json_t *cd;
  json_array_foreach(cds, i, cd) {
    struct kl_lsp_pub *p = kl_lsp_match(d, cd);
    if (!p) continue;
    const char *rule = kl_lsp_str(p->diag, "code");
    if (p->fix)
      json_array_append_new(actions,
                            json_pack("{s:s+, s:s, s:[O], s:b, s:O}", "title",
                                      "kernlint: ", p->fix_title, "kind", "quickfix", "diagnostics",
                                      p->diag, "isPreferred", 1, "edit", p->fix));
    char key[160];
    snprintf(key, sizeof key, "%u %s", p->line, rule);
    if (!have_src || json_object_get(seen, key)) continue;
    json_object_set_new(seen, key, json_true());
    uint32_t start, end;
    char *text = kl_text_suppress_edit(&src, p->line, rule, &start, &end);
    if (!text) continue;
    json_t *edits = json_pack("[o]", kl_text_edit(&src, start, end, text, s->enc));
    free(text);
    json_array_append_new(actions,
                          json_pack("{s:s++, s:s, s:[O], s:o}", "title", "kernlint: suppress ",
                                    rule, " on this line", "kind", "quickfix", "diagnostics",
                                    p->diag, "edit", kl_text_workspace_edit(uri, edits)));
  }
  json_decref(seen);
  kl_arena_delete(a);
  return 0;
}

/* Where LSP position p stands against position q: <0 before, 0 at, >0 after. */
static int kl_lsp_cmp_pos(json_t *p, json_t *q) {
  json_int_t pl = json_integer_value(json_object_get(p, "line"));
  json_int_t ql = json_integer_value(json_object_get(q, "line"));
  if (pl != ql) return pl < ql ? -1 : 1;
  json_int_t pc = json_integer_value(json_object_get(p, "character"));
  json_int_t qc = json_integer_value(json_object_get(q, "character"));
  return pc < qc ? -1 : pc > qc;
}

/* textDocument/hover: over a finding (its range, ends included), the rule's summary and why,
 * once per rule found there, and where to read the rest. */
static int kl_lsp_hover(struct kl_lsp *s, json_t *params, json_t **result, char *why,
                        size_t whylen) {
  const char *uri;
  json_t *pos = json_object_get(params, "position");
  if (!kl_lsp_textdoc(params, &uri) || !json_is_integer(json_object_get(pos, "line")) ||
      !json_is_integer(json_object_get(pos, "character")))
    return kl_lsp_bad(why, whylen, "hover needs textDocument.uri and a position");
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  if (!d) return 0;
  char *text = NULL;
  json_t *range = NULL, *seen = json_object();
  const char *sep = s->markdown ? "\n\n---\n\n" : "\n\n";
  for (size_t i = 0; i < d->npubs; i++) {
    json_t *r = json_object_get(d->pubs[i].diag, "range");
    const char *code = kl_lsp_str(d->pubs[i].diag, "code");
    const struct kl_rule *rule = code ? kl_rules_find(code) : NULL;
    if (!rule || kl_lsp_cmp_pos(json_object_get(r, "start"), pos) > 0 ||
        kl_lsp_cmp_pos(pos, json_object_get(r, "end")) > 0 || json_object_get(seen, code))
      continue;
    json_object_set_new(seen, code, json_true());
    if (!range) range = r;
    char *one = s->markdown
                    ? kl_text_printf("**kernlint: %s**: %s\n\n%s\n\n`kernlint --explain %s` says "
                                     "what it checks, with an example and what to write instead.",
                                     rule->id, rule->summary ? rule->summary : "",
                                     rule->why ? rule->why : "", rule->id)
                    : kl_text_printf("kernlint: %s: %s\n\n%s\n\n`kernlint --explain %s` says "
                                     "what it checks, with an example and what to write instead.",
                                     rule->id, rule->summary ? rule->summary : "",
                                     rule->why ? rule->why : "", rule->id);
    char *both = text ? kl_text_printf("%s%s%s", text, sep, one) : NULL;
    free(text);
    text = both ? both : one;
    if (both) free(one);
  }
  json_decref(seen);
  if (!text) return 0;
  *result = json_pack("{s:{s:s, s:s}, s:O}", "contents", "kind",
                      s->markdown ? "markdown" : "plaintext", "value", text, "range", range);
  free(text);
  return 0;
}

static const struct kl_lsp_method kl_lsp_methods[] = {
    {"initialize", kl_lsp_initialize, false, false},
    {"initialized", kl_lsp_nothing, false, false},
    {"shutdown", kl_lsp_shutdown, false, false},
    {"exit", kl_lsp_exit, false, false},
    {"textDocument/didOpen", kl_lsp_did_open, true, false},
    {"textDocument/didChange", kl_lsp_did_change, true, false},
    {"textDocument/didSave", kl_lsp_did_save, true, false},
    {"textDocument/didClose", kl_lsp_did_close, true, false},
    {"textDocument/codeAction", kl_lsp_code_action, true, true},
    {"textDocument/hover", kl_lsp_hover, true, true},
};

/* ---- requests that wait for findings ---- */

/* Run method mt for the message id (NULL: a notification) and answer it. */
static void kl_lsp_call(struct kl_lsp *s, const struct kl_lsp_method *mt, json_t *id,
                        json_t *params) {
  char why[512] = "";
  json_t *result = NULL;
  int rc = mt->fn(s, params, &result, why, sizeof why);
  if (id && rc) {
    json_decref(result);
    kl_rpc_error(&s->rpc, id, rc, "%s", why);
  } else if (id) {
    kl_rpc_result(&s->rpc, id, result);
  } else {
    json_decref(result);
    if (rc) kl_rpc_log("%s: %s", mt->name, why);
  }
}

static void kl_lsp_wait_free(struct kl_lsp_wait *w) {
  json_decref(w->id);
  json_decref(w->params);
  free(w->uri);
}

/* Answer the requests waiting on uri, now that its findings are those of its text (or it is
 * closed). */
static void kl_lsp_answer_waits(struct kl_lsp *s, const char *uri) {
  for (size_t i = 0; i < s->nwaits;) {
    struct kl_lsp_wait w = s->waits[i];
    if (strcmp(w.uri, uri) != 0) {
      i++;
      continue;
    }
    /* In the order they came. */
    memmove(&s->waits[i], &s->waits[i + 1], (s->nwaits - i - 1) * sizeof *s->waits);
    s->nwaits--;
    kl_lsp_call(s, w.method, w.id, w.params);
    kl_lsp_wait_free(&w);
  }
}

/* $/cancelRequest: a request still waiting is answered as cancelled; one answered is not. */
static void kl_lsp_cancel(struct kl_lsp *s, json_t *params) {
  json_t *id = json_object_get(params, "id");
  for (size_t i = 0; id && i < s->nwaits; i++) {
    if (!json_equal(s->waits[i].id, id)) continue;
    struct kl_lsp_wait w = s->waits[i];
    memmove(&s->waits[i], &s->waits[i + 1], (s->nwaits - i - 1) * sizeof *s->waits);
    s->nwaits--;
    kl_rpc_error(&s->rpc, w.id, KL_RPC_REQUEST_CANCELLED, "%s: cancelled", w.method->name);
    kl_lsp_wait_free(&w);
    return;
  }
}

/* Whether a request of method mt on params must wait: its document has changes not yet linted. */
static bool kl_lsp_must_wait(struct kl_lsp *s, const struct kl_lsp_method *mt, json_t *params) {
  const char *uri;
  if (!mt->findings || !kl_lsp_textdoc(params, &uri)) return false;
  struct kl_lsp_doc *d = kl_lsp_find(s, uri);
  return d && (d->marked || d->linted != d->gen);
}

/* ---- the lint thread ---- */

static void *kl_lsp_linter(void *arg) {
  struct kl_lsp *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    struct kl_lsp_doc *d = NULL;
    for (size_t i = 0; i < s->ndocs; i++)
      if (s->docs[i]->marked && (!d || s->docs[i]->marked < d->marked)) d = s->docs[i];
    /* The session's end still lints what is marked: a client that opens a file and exits at
     * once is told its findings, as before it left. */
    if (!d && s->stop) break;
    if (!d) {
      pthread_cond_wait(&s->work, &s->lock);
      continue;
    }
    struct kl_lsp_doc job;
    memset(&job, 0, sizeof job);
    job.uri = kl_arena_xstrdup(d->uri);
    job.path = d->path ? kl_arena_xstrdup(d->path) : NULL;
    job.language = d->language ? kl_arena_xstrdup(d->language) : NULL;
    job.text = kl_arena_xstrndup(d->text, d->len);
    job.len = d->len;
    job.gen = d->gen;
    job.reuse = d->reuse;
    memset(&d->reuse, 0, sizeof d->reuse);
    json_t *version = json_incref(d->version);
    d->marked = 0;
    pthread_mutex_unlock(&s->lock);
    struct kl_lsp_pub *pubs;
    size_t npubs;
    json_t *list = kl_lsp_lint(s, &job, &pubs, &npubs);
    pthread_mutex_lock(&s->lock);
    d = kl_lsp_find(s, job.uri);
    /* The tree goes back to the document even when the text has moved on: it keeps the text it
     * parsed, and the next lint's parse edits it from there. */
    if (d && !d->reuse.parse.first.tree && !d->reuse.parse.expanded.tree && !d->reuse.facts &&
        !d->reuse.py.tree)
      d->reuse = job.reuse;
    else
      kl_engine_reuse_end(&job.reuse);
    if (d && d->gen == job.gen) {
      kl_lsp_pubs_free(d);
      d->pubs = pubs;
      d->npubs = npubs;
      d->linted = job.gen;
      kl_lsp_publish(s, job.uri, version, list);
      kl_lsp_answer_waits(s, job.uri);
    } else {
      /* Changed or closed meanwhile: a newer lint (or none) speaks for it. */
      struct kl_lsp_doc gone = {.pubs = pubs, .npubs = npubs};
      kl_lsp_pubs_free(&gone);
      json_decref(list);
    }
    json_decref(version);
    free(job.uri);
    free(job.path);
    free(job.language);
    free(job.text);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* ---- messages ---- */

static void kl_lsp_handle(struct kl_lsp *s, const char *body, size_t len) {
  json_error_t je;
  json_t *m = json_loadb(body, len, 0, &je);
  if (!m) {
    kl_rpc_error(&s->rpc, NULL, KL_RPC_PARSE_ERROR, "parse error: %s (at byte %d)", je.text,
                 je.position);
    return;
  }
  json_t *id = json_object_get(m, "id");
  json_t *method = json_object_get(m, "method");
  json_t *params = json_object_get(m, "params");
  /* JSON-RPC wants params structured or absent, but clients send null for a request that takes
   * none (eglot's shutdown): null is absent. */
  if (json_is_null(params)) params = NULL;
  if (!json_is_object(m)) {
    kl_rpc_error(&s->rpc, NULL, KL_RPC_INVALID_REQUEST, "invalid request: not a JSON object");
  } else if (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id)) {
    kl_rpc_error(&s->rpc, NULL, KL_RPC_INVALID_REQUEST,
                 "invalid request: id is not a number or string");
  } else if (!method && (json_object_get(m, "result") || json_object_get(m, "error"))) {
    /* A response: the server sends no requests, so there is nothing waiting for it. */
  } else if (!json_is_string(method)) {
    if (id)
      kl_rpc_error(&s->rpc, id, KL_RPC_INVALID_REQUEST, "invalid request: no method");
    else
      kl_rpc_error(&s->rpc, NULL, KL_RPC_INVALID_REQUEST, "invalid request: no method and no id");
  } else {
    const char *name = json_string_value(method);
    const struct kl_lsp_method *mt = NULL;
    for (size_t i = 0; i < sizeof kl_lsp_methods / sizeof *kl_lsp_methods; i++)
      if (!strcmp(kl_lsp_methods[i].name, name)) mt = &kl_lsp_methods[i];
    const char *rpc = kl_lsp_str(m, "jsonrpc");
    char why[512] = "";
    int rc = 0;
    if (rpc && strcmp(rpc, "2.0") != 0) {
      rc = KL_RPC_INVALID_REQUEST;
      snprintf(why, sizeof why, "invalid request: jsonrpc is not \"2.0\"");
    } else if (mt && mt->fn == kl_lsp_exit) {
      s->exited = true;
    } else if (!s->initialized && !(mt && mt->fn == kl_lsp_initialize)) {
      rc = KL_RPC_NOT_INITIALIZED;
      snprintf(why, sizeof why, "%s before initialize", name);
    } else if (s->shutdown) {
      rc = KL_RPC_INVALID_REQUEST;
      snprintf(why, sizeof why, "%s after shutdown", name);
    } else if (!mt && !strcmp(name, "$/cancelRequest")) {
      kl_lsp_cancel(s, params);
    } else if (!mt) {
      rc = KL_RPC_METHOD_NOT_FOUND;
      snprintf(why, sizeof why, "method not found: %s", name);
    } else if (params && !json_is_object(params) && !json_is_array(params)) {
      rc = kl_lsp_bad(why, sizeof why, "params must be an object or an array");
    } else if (mt->needs_obj && !json_is_object(params)) {
      rc = kl_lsp_bad(why, sizeof why, "params must be an object");
    } else if (id && kl_lsp_must_wait(s, mt, params)) {
      const char *uri;
      kl_lsp_textdoc(params, &uri);
      KL_XVEC_PUSH(s->waits, s->nwaits, s->cap_waits);
      s->waits[s->nwaits++] =
          (struct kl_lsp_wait){json_incref(id), json_incref(params), kl_arena_xstrdup(uri), mt};
      json_decref(m);
      return;
    } else {
      kl_lsp_call(s, mt, id, params);
      json_decref(m);
      return;
    }
    if (id && rc) {
      kl_rpc_error(&s->rpc, id, rc, "%s", why);
    } else if (id) {
      kl_rpc_result(&s->rpc, id, NULL);
    } else if (rc && rc != KL_RPC_METHOD_NOT_FOUND && rc != KL_RPC_NOT_INITIALIZED) {
      /* A notification gets no answer: an unknown one (or $/ one) is ignored, a bad one logged. */
      kl_rpc_log("%s: %s", name, why);
    }
  }
  json_decref(m);
}

int kl_lsp_run(const struct kl_lsp_options *o, FILE *in, FILE *out) {
  struct kl_lsp s;
  memset(&s, 0, sizeof s);
  s.rpc.in = in;
  s.rpc.out = out;
  s.o = o;
  if (o->config) {
    char err[512] = "";
    s.forced = kl_config_load(o->config, err, sizeof err);
    if (!s.forced) {
      fprintf(stderr, "kernlint: %s\n", err[0] ? err : o->config);
      return 2;
    }
  }
  s.projects = kl_projects_new();
  pthread_mutex_init(&s.rpc.out_lock, NULL);
  pthread_mutex_init(&s.lock, NULL);
  pthread_cond_init(&s.work, NULL);
  /* The lint thread recurses as deep as the command line's main thread (macOS gives a new
   * thread 512 KB by default). */
  pthread_attr_t at;
  kl_engine_attr_init(&at);
  /* The headers' summaries are kept from lint to lint while what their parse read holds. */
  kl_xdefs_track();
  int started = pthread_create(&s.linter, &at, kl_lsp_linter, &s);
  pthread_attr_destroy(&at);
  if (started != 0) {
    fprintf(stderr, "kernlint: --lsp: cannot start the lint thread\n");
    abort();
  }
  /* A client that goes away mid-write is an error to log, not a signal that kills the server. */
  signal(SIGPIPE, SIG_IGN);
  while (!s.exited && !kl_rpc_closed(&s.rpc)) {
    char *body = NULL, why[256] = "";
    size_t len = 0;
    enum kl_rpc_status r = kl_rpc_read(&s.rpc, &body, &len, why, sizeof why);
    if (r == KL_RPC_EOF) break;
    pthread_mutex_lock(&s.lock);
    if (r == KL_RPC_BAD)
      kl_rpc_error(&s.rpc, NULL, KL_RPC_PARSE_ERROR, "%s", why);
    else
      kl_lsp_handle(&s, body, len);
    pthread_mutex_unlock(&s.lock);
    free(body);
  }
  pthread_mutex_lock(&s.lock);
  s.stop = true;
  pthread_cond_signal(&s.work);
  pthread_mutex_unlock(&s.lock);
  pthread_join(s.linter, NULL);
  for (size_t i = 0; i < s.nwaits; i++) kl_lsp_wait_free(&s.waits[i]);
  free(s.waits);
  for (size_t i = 0; i < s.ndocs; i++) kl_lsp_doc_free(s.docs[i]);
  free(s.docs);
  free(s.rule_docs);
  kl_config_delete(s.forced);
  kl_projects_delete(s.projects);
  pthread_cond_destroy(&s.work);
  pthread_mutex_destroy(&s.lock);
  pthread_mutex_destroy(&s.rpc.out_lock);
  kl_expand_forget_headers();
  kl_xdefs_forget();
  return s.shutdown ? 0 : 1;
}
