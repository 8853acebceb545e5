/* The specialisations of a kernel (see spec.h). */
#include "grammar/lex.h"
#include "analyzer/ir/spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/core/node.h"
#include "grammar/consteval.h"

struct kl_spec_ctx {
  struct kl_arena *a;
  const struct kl_model *m;
};

/* FNV-1a of s[0, len). */
static uint32_t kl_fnv(const char *s, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
  return h;
}

/* An instantiation's argument names file constants only (no specialisation is bound yet). */
static const char *kl_spec_lookup(void *ctx, const char *name, size_t len) {
  return kl_model_const(ctx, name, len);
}

/* Which bool function constants of the unit fn, or a same-file function it calls up to three
 * calls deep, names as an identifier: hit[i] for m->fconsts[i]. The bodies are read once, their
 * identifiers matched against every name, rather than read again for each name. */
static void kl_spec_fn_mentions(struct kl_arena *a, const struct kl_model *m,
                                const struct kl_function *fn, bool *hit) {
  memset(hit, 0, m->nfconsts * sizeof *hit);
  if (kl_node_null(fn->body)) return;
  /* The functions within three calls, breadth first: each once. */
  size_t nf = m->nfunctions;
  uint8_t *seen = kl_arena_alloc(a, nf ? nf : 1);
  const struct kl_function **q = kl_arena_alloc(a, (nf + 1) * sizeof *q);
  uint8_t *depth = kl_arena_alloc(a, nf + 1);
  size_t nq = 0;
  q[nq] = fn, depth[nq++] = 0;
  if ((size_t)(fn - m->functions) < nf) seen[fn - m->functions] = 1;
  for (size_t k = 0; k < nq; k++) {
    if (depth[k] == 3 || kl_node_null(q[k]->body)) continue;
    for (size_t i = 0; i < q[k]->ncallees; i++) {
      size_t ci = q[k]->callee_index[i];
      if (seen[ci]) continue;
      seen[ci] = 1;
      q[nq] = &m->functions[ci], depth[nq++] = (uint8_t)(depth[k] + 1);
    }
  }
  size_t *len = kl_arena_alloc(a, (m->nfconsts + 1) * sizeof *len);
  for (size_t i = 0; i < m->nfconsts; i++)
    len[i] = m->fconsts[i].is_bool ? strlen(m->fconsts[i].name) : 0;
  const char *buf = m->unit->buf;
  for (size_t k = 0; k < nq; k++) {
    if (kl_node_null(q[k]->body)) continue;
    uint32_t p = ts_node_start_byte(q[k]->body), end = ts_node_end_byte(q[k]->body);
    while (p < end) {
      if (!kl_lex_ident_char(buf[p])) {
        p++;
        continue;
      }
      uint32_t s = p;
      while (p < end && kl_lex_ident_char(buf[p])) p++;
      for (size_t i = 0; i < m->nfconsts; i++)
        if (len[i] == p - s && !hit[i] && !memcmp(buf + s, m->fconsts[i].name, len[i]))
          hit[i] = true;
    }
  }
}

struct kl_inst_set {
  struct kl_spec *items;
  uint32_t *keys; /* a hash of each item's label (0: none), compared before the label */
  size_t n, cap, cap_keys;
};

/* Add the specialisation binding vals[i] to the value parameters of fn (NULL: not bound, so
 * symbolic), unless one with the same values is there. */
static size_t kl_inst_add(struct kl_spec_ctx *fx, struct kl_inst_set *set,
                          const struct kl_function *fn, const char *const *vals,
                          const char *const *texts, const bool *ignore) {
  size_t n = 0;
  char label[256] = "";
  size_t ll = 0;
  /* Pieces are appended, cut at the label's end as one snprintf of them would be: this runs
   * for every instantiation, times every parameter tried unbound. */
  for (size_t i = 0; i < fn->ntparams; i++) {
    if (!texts[i] || ignore[i]) continue;
    const char *parts[4] = {n ? ", " : "", fn->tparams[i], " = ",
                            !strcmp(vals[i], "true") || !strcmp(vals[i], "false") ? vals[i]
                                                                                  : texts[i]};
    for (size_t k = 0; k < 4; k++) {
      size_t w = strlen(parts[k]);
      if (w > sizeof label - 1 - ll) w = sizeof label - 1 - ll;
      memcpy(label + ll, parts[k], w);
      ll += w;
    }
    label[ll] = '\0';
    n++;
  }
  uint32_t key = n ? kl_fnv(label, ll) | 1 : 0;
  for (size_t i = 0; i < set->n; i++) {
    const char *o = set->items[i].label;
    if (set->keys[i] == key && ((!o && !n) || (o && n && !strcmp(o, label)))) return i;
  }
  /* Only a new specialisation is kept: the search below tries the rows many times over. */
  struct kl_spec_bind *b = kl_arena_alloc(fx->a, (n + 1) * sizeof *b);
  n = 0;
  for (size_t i = 0; i < fn->ntparams; i++)
    if (texts[i] && !ignore[i]) b[n++] = (struct kl_spec_bind){fn->tparams[i], texts[i]};
  size_t nk = set->n;
  KL_VEC_PUSH(fx->a, set->keys, nk, set->cap_keys);
  set->keys[set->n] = key;
  KL_VEC_PUSH(fx->a, set->items, set->n, set->cap);
  set->items[set->n++] =
      (struct kl_spec){b, n, n ? kl_arena_strdup(fx->a, label) : NULL, NULL, 0, 0};
  return set->n - 1;
}

/* Arguments already folded for one kernel's rows: the argument, and its folded text or NULL. */
enum { KL_INST_TEXTS = 256 };
struct kl_inst_texts {
  const char *vals[KL_INST_TEXTS];
  const char *texts[KL_INST_TEXTS];
  size_t n;
};

/* Each row's value arguments folded once, as kl_inst_add reads them: the decimal text of a
 * value parameter's constant, or NULL where it has none. */
static const char **kl_inst_fold(struct kl_spec_ctx *fx, const struct kl_function *fn,
                                 const char *const *vals, struct kl_inst_texts *seen) {
  const char **texts = kl_arena_alloc(fx->a, (fn->ntparams + 1) * sizeof *texts);
  struct kl_consteval_env env = {kl_spec_lookup, NULL, NULL, (void *)fx->m, false};
  for (size_t i = 0; i < fn->ntparams; i++) {
    if (!fn->tvalue[i] || !vals[i]) continue;
    /* Rows repeat the same few arguments ("64", "4"): each is folded once. */
    size_t h = kl_fnv(vals[i], strlen(vals[i])) & (KL_INST_TEXTS - 1);
    while (seen->vals[h] && strcmp(seen->vals[h], vals[i])) h = (h + 1) & (KL_INST_TEXTS - 1);
    if (seen->vals[h]) {
      texts[i] = seen->texts[h];
      continue;
    }
    int64_t v;
    if (kl_consteval_eval(vals[i], strlen(vals[i]), &env, &v))
      texts[i] = kl_arena_printf(fx->a, "%lld", (long long)v);
    if (seen->n + 1 < KL_INST_TEXTS / 2) {
      seen->vals[h] = vals[i];
      seen->texts[h] = texts[i];
      seen->n++;
    }
  }
  return texts;
}

/* The specialisations of kernel fn: the values its instantiations and calls give its value
 * template parameters, times both values of each bool function constant it (or a helper it
 * calls) tests. A kernel with neither is analysed once, unspecialised. */
static size_t kl_spec_insts(struct kl_spec_ctx *fx, const struct kl_function *fn,
                            const struct kl_dispatch *calls, size_t ncalls,
                            const struct kl_inst *xinsts, size_t nxinsts,
                            struct kl_spec **out) {
  const struct kl_model *m = fx->m;
  struct kl_inst_set set = {0};
  bool values = false;
  for (size_t i = 0; i < fn->ntparams; i++) values = values || fn->tvalue[i];
  /* Each instantiation's values, as written; then the distinct specialisations among them. */
  const char ***rows = NULL;
  size_t nrows = 0, cap_rows = 0;
  const size_t np = fn->ntparams;
  if (values) {
    for (size_t i = 0; i < m->ninstances; i++) {
      const struct kl_instance *in = &m->instances[i];
      /* Asked for every kernel of files with thousands of instantiations: the first byte first. */
      if (in->function[0] != fn->name[0] || strcmp(in->function, fn->name)) continue;
      const char **vals = kl_arena_alloc(fx->a, (np + 2) * sizeof *vals);
      for (size_t k = 0; k < np; k++)
        vals[k] = fn->tpos[k] < in->ntargs ? in->targs[fn->tpos[k]] : fn->tdefaults[k];
      vals[np] = in->host_name;
      KL_VEC_PUSH(fx->a, rows, nrows, cap_rows);
      rows[nrows++] = vals;
    }
    for (size_t i = 0; i < ncalls; i++) {
      const struct kl_dispatch *d = &calls[i];
      if (!d->local || !d->nbinds || !kl_model_names(m, d->kernel, d->kernel_prefix, fn)) continue;
      const char **vals = kl_arena_alloc(fx->a, (np + 2) * sizeof *vals);
      vals[np] = NULL;
      for (size_t k = 0; k < np; k++) {
        vals[k] = NULL;
        for (size_t j = 0; j < d->nbinds; j++)
          if (!strcmp(d->binds[j].name, fn->tparams[k])) vals[k] = d->binds[j].type;
      }
      KL_VEC_PUSH(fx->a, rows, nrows, cap_rows);
      rows[nrows++] = vals;
    }
    /* A header's kernel, instantiated by the files of the run that include the header. */
    bool own = false;
    for (size_t i = 0; i < m->ninstances && !own; i++)
      own =
          m->instances[i].function[0] == fn->name[0] && !strcmp(m->instances[i].function, fn->name);
    for (size_t i = 0; !own && i < nxinsts; i++) {
      if (xinsts[i].function[0] != fn->name[0] || strcmp(xinsts[i].function, fn->name)) continue;
      const char **vals = kl_arena_alloc(fx->a, (np + 2) * sizeof *vals);
      for (size_t k = 0; k < np; k++)
        vals[k] = fn->tpos[k] < xinsts[i].ntargs ? xinsts[i].targs[fn->tpos[k]] : fn->tdefaults[k];
      vals[np] = xinsts[i].host_name;
      KL_VEC_PUSH(fx->a, rows, nrows, cap_rows);
      rows[nrows++] = vals;
    }
  }
  /* Too many specialisations: leave a parameter unbound, the one whose loss keeps the most
   * specialisations that still fit (else loses the most), until they fit. `bits` times
   * `group_size` is 18 kernels; `bits` alone is 6, `group_size` alone 3. */
  bool *ignore = kl_arena_alloc(fx->a, np + 1);
  memset(ignore, 0, np + 1);
  const char ***texts = kl_arena_alloc(fx->a, (nrows + 1) * sizeof *texts);
  struct kl_inst_texts *seen = kl_arena_xmalloc(sizeof *seen);
  memset(seen, 0, sizeof *seen);
  for (size_t r = 0; r < nrows; r++) texts[r] = kl_inst_fold(fx, fn, rows[r], seen);
  free(seen);
  for (;;) {
    set.n = 0;
    for (size_t r = 0; r < nrows; r++) {
      /* Each row's host name (after the values) goes to the specialisation it falls in. */
      size_t at = kl_inst_add(fx, &set, fn, rows[r], texts[r], ignore);
      struct kl_spec *it = &set.items[at];
      if (!rows[r][np]) continue;
      KL_VEC_PUSH(fx->a, it->hosts, it->nhosts, it->cap_hosts);
      it->hosts[it->nhosts++] = rows[r][np];
    }
    if (set.n <= KL_SPEC_MAX_INSTS) break;
    size_t best = np, best_n = 0;
    for (size_t k = 0; k < np; k++) {
      if (ignore[k] || !fn->tvalue[k]) continue;
      ignore[k] = true;
      struct kl_inst_set trial = {0};
      for (size_t r = 0; r < nrows; r++) kl_inst_add(fx, &trial, fn, rows[r], texts[r], ignore);
      ignore[k] = false;
      bool fits = trial.n <= KL_SPEC_MAX_INSTS, best_fits = best_n && best_n <= KL_SPEC_MAX_INSTS;
      if (best == np || (fits && (!best_fits || trial.n > best_n)) ||
          (!fits && !best_fits && trial.n < best_n))
        best = k, best_n = trial.n;
    }
    if (best == np) {
      set.n = KL_SPEC_MAX_INSTS;
      break;
    }
    ignore[best] = true;
  }
  if (!set.n) {
    KL_VEC_PUSH(fx->a, set.items, set.n, set.cap);
    set.items[set.n++] = (struct kl_spec){NULL, 0, NULL, NULL, 0, 0};
  }
  /* Bool function constants the kernel tests: each value is a kernel of its own. */
  const struct kl_fconst *fcs[KL_SPEC_MAX_FCONSTS];
  size_t nfc = 0;
  bool *named = kl_arena_alloc(fx->a, (m->nfconsts + 1) * sizeof *named);
  if (m->nfconsts) kl_spec_fn_mentions(fx->a, m, fn, named);
  for (size_t i = 0; i < m->nfconsts; i++) {
    if (!m->fconsts[i].is_bool || !named[i]) continue;
    if (nfc == KL_SPEC_MAX_FCONSTS) {
      nfc = 0; /* too many to enumerate: all of them stay unknown */
      break;
    }
    fcs[nfc++] = &m->fconsts[i];
  }
  size_t combos = (size_t)1 << nfc;
  if (nfc && set.n * combos <= KL_SPEC_MAX_INSTS) {
    struct kl_spec *all = kl_arena_alloc(fx->a, set.n * combos * sizeof *all);
    size_t n = 0;
    for (size_t i = 0; i < set.n; i++) {
      for (size_t c = 0; c < combos; c++) {
        const struct kl_spec *t = &set.items[i];
        struct kl_spec_bind *b = kl_arena_alloc(fx->a, (t->n + nfc) * sizeof *b);
        if (t->n) memcpy(b, t->b, t->n * sizeof *b);
        const char *lab = t->label ? t->label : "";
        for (size_t k = 0; k < nfc; k++) {
          bool on = (c >> k) & 1;
          b[t->n + k] = (struct kl_spec_bind){fcs[k]->name, on ? "1" : "0"};
          lab = kl_arena_printf(fx->a, "%s%s%s = %s", lab, *lab ? ", " : "", fcs[k]->name,
                                on ? "true" : "false");
        }
        /* One host name stands for every value of the function constants: the label says
         * which. */
        all[n++] = (struct kl_spec){b, t->n + nfc, lab, NULL, 0, 0};
      }
    }
    *out = all;
    return n;
  }
  *out = set.items;
  return set.n;
}

size_t kl_spec_enumerate(struct kl_arena *a, const struct kl_model *m, const struct kl_function *fn,
                         const struct kl_dispatch *calls, size_t ncalls,
                         const struct kl_inst *xinsts, size_t nxinsts,
                         struct kl_spec **out) {
  struct kl_spec_ctx fx = {a, m};
  return kl_spec_insts(&fx, fn, calls, ncalls, xinsts, nxinsts, out);
}
