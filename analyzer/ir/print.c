/* The IR's text form (kl_ir_print in ir.h): one instruction a line, `%7 = binop add %5, %6`,
 * blocks nested under `if %3 {` and `loop {` with header/body/latch sections, and after `;` the
 * symbol it defines, its source line and the inlined call site (#n) it was lowered in. */
#include <stdio.h>
#include <string.h>

#include "analyzer/ir/ir.h"

static const char *const kl_unops[] = {"?", "neg", "not", "bitnot"};
static const char *const kl_binops[] = {"?",   "add", "sub", "mul",  "div", "rem", "shl",
                                        "shr", "and", "or",  "xor",  "lt",  "le",  "gt",
                                        "ge",  "eq",  "ne",  "land", "lor", "min", "max"};
static const char *const kl_phis[] = {"?", "if", "head", "latch", "exit"};
static const char *const kl_spaces[] = {"",       "device",     "constant", "threadgroup",
                                        "thread", "imageblock", "ray_data", "object_data"};

static const char *kl_pr_as(unsigned as) {
  return as < sizeof kl_spaces / sizeof kl_spaces[0] ? kl_spaces[as] : "?";
}

static void kl_pr_ops(char *b, size_t cap, size_t *o, const struct kl_ir_ins *i, uint32_t from) {
  for (uint32_t k = from; k < i->nops; k++) {
    int w = i->ops[k] ? snprintf(b + *o, cap - *o, "%s%%%u", k > from ? ", " : " ", i->ops[k])
                      : snprintf(b + *o, cap - *o, "%s-", k > from ? ", " : " ");
    if (w > 0) *o = *o + (size_t)w < cap ? *o + (size_t)w : cap - 1;
  }
}

#define KL_PR(...)                                                                                 \
  do {                                                                                             \
    int w_ = snprintf(b + o, sizeof b - o, __VA_ARGS__);                                           \
    if (w_ > 0) o = o + (size_t)w_ < sizeof b ? o + (size_t)w_ : sizeof b - 1;                     \
  } while (0)

static void kl_pr_block(const struct kl_ir_fn *f, uint32_t blk, int depth, FILE *out);

static void kl_pr_indent(int depth, FILE *out) {
  for (int k = 0; k < depth; k++) fputs("  ", out);
}

static void kl_pr_ins(const struct kl_ir_fn *f, uint32_t v, int depth, FILE *out) {
  const struct kl_ir_ins *i = &f->ins[v];
  char b[512];
  size_t o = 0;
  b[0] = '\0';
  switch (i->op) {
  case KL_IR_IF:
    KL_PR("if %%%u {", i->nops ? i->ops[0] : 0);
    break;
  case KL_IR_LOOP:
    KL_PR("%s {", i->flags & KL_IR_F_REGION     ? "region"
                  : i->flags & KL_IR_F_DO_WHILE ? "loop do-while"
                                                : "loop");
    break;
  case KL_IR_STORE:
  case KL_IR_BREAK:
  case KL_IR_CONTINUE:
  case KL_IR_RETURN:
  case KL_IR_BARRIER:
    KL_PR("%s", kl_ir_op_name(i->op));
    break;
  default:
    KL_PR("%%%u = %s", v, kl_ir_op_name(i->op));
    break;
  }
  switch (i->op) {
  case KL_IR_CONST:
    KL_PR(" %lld", (long long)i->imm);
    break;
  case KL_IR_FCONST:
    KL_PR(" %g", i->fimm);
    break;
  case KL_IR_ARG:
    KL_PR(" %s", i->var && i->var->name ? i->var->name : "?");
    break;
  case KL_IR_COORD:
    KL_PR(" %s%s%s", i->coord ? i->coord->name : "?", i->name ? "." : "", i->name ? i->name : "");
    break;
  case KL_IR_SYMBOL:
    KL_PR(" %s", i->name ? i->name : "?");
    break;
  case KL_IR_OPAQUE:
    KL_PR(" <%s>", ts_node_is_null(i->node) ? "?" : ts_node_type(i->node));
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_UNOP:
    KL_PR(" %s", kl_unops[i->sub < 4 ? i->sub : 0]);
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_BINOP:
    KL_PR("%s %s", i->flags & KL_IR_F_UNSIGNED ? ".u" : "",
          kl_binops[i->sub < sizeof kl_binops / sizeof kl_binops[0] ? i->sub : 0]);
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_CAST:
    KL_PR(" %s", i->type ? i->type : "?");
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_CALL:
    KL_PR(" %s", i->name ? i->name : "?");
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_SIMD:
  case KL_IR_BARRIER:
  case KL_IR_ATOMIC:
    KL_PR(" %s", i->fn ? i->fn->name : i->name ? i->name : "?");
    if (i->op == KL_IR_BARRIER)
      KL_PR(" mem(%s%s%s%s)", i->imm & KL_IR_MEM_THREADGROUP ? "threadgroup" : "",
            i->imm & KL_IR_MEM_DEVICE ? (i->imm & 1 ? ",device" : "device") : "",
            i->imm & KL_IR_MEM_TEXTURE ? (i->imm & 3 ? ",texture" : "texture") : "",
            i->imm ? "" : "none");
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_ALLOC:
    KL_PR(" %s %s%s", kl_pr_as(i->as), i->type ? i->type : "?",
          i->var && i->var->array_dims ? i->var->array_dims : "");
    if (i->imm > 0) KL_PR(" len %lld", (long long)i->imm);
    break;
  case KL_IR_INDEX:
    kl_pr_ops(b, sizeof b, &o, i, 0);
    KL_PR(" x%lld", (long long)i->imm);
    break;
  case KL_IR_MEMBER:
    kl_pr_ops(b, sizeof b, &o, i, 0);
    KL_PR(" .%s", i->name ? i->name : "?");
    break;
  case KL_IR_LOAD:
    KL_PR(" %s", kl_pr_as(i->as));
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_STORE:
    if (i->sub)
      KL_PR(".%s", kl_binops[i->sub < sizeof kl_binops / sizeof kl_binops[0] ? i->sub : 0]);
    KL_PR(" %s", kl_pr_as(i->as));
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_RETURN:
  case KL_IR_SELECT:
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  case KL_IR_PHI:
    o = 0;
    KL_PR("%%%u = phi.%s", v, kl_phis[i->sub < 5 ? i->sub : 0]);
    kl_pr_ops(b, sizeof b, &o, i, 0);
    break;
  default:
    break;
  }
  /* The comment: symbol, line, site. */
  char c[256];
  size_t co = 0;
  c[0] = '\0';
  if (i->sym && i->sym < f->nsyms && f->syms[i->sym].name)
    co += (size_t)snprintf(c + co, sizeof c - co, " %s", f->syms[i->sym].name);
  if (!ts_node_is_null(i->node) && co < sizeof c)
    co += (size_t)snprintf(c + co, sizeof c - co, " @%u", ts_node_start_point(i->node).row + 1);
  if (i->site && co < sizeof c) snprintf(c + co, sizeof c - co, " #%u", i->site);
  kl_pr_indent(depth, out);
  int pad = 48 - 2 * depth;
  if (c[0])
    fprintf(out, "%-*s ;%s\n", pad > 0 ? pad : 0, b, c);
  else
    fprintf(out, "%s\n", b);
  if (i->op == KL_IR_IF) {
    kl_pr_block(f, i->blk[0], depth + 1, out);
    if (i->blk[1]) {
      kl_pr_indent(depth, out);
      fputs("} else {\n", out);
      kl_pr_block(f, i->blk[1], depth + 1, out);
    }
    kl_pr_indent(depth, out);
    fputs("}\n", out);
  } else if (i->op == KL_IR_LOOP) {
    static const char *const sec[] = {"header", "body", "latch"};
    for (int k = 0; k < 3; k++) {
      if (!i->blk[k]) continue;
      if (k == 0 && (i->flags & KL_IR_F_REGION) && !f->blocks[i->blk[0]].n) continue;
      if (k == 2 && (i->flags & KL_IR_F_REGION) && !f->blocks[i->blk[2]].n) continue;
      kl_pr_indent(depth, out);
      fprintf(out, "%s:\n", sec[k]);
      kl_pr_block(f, i->blk[k], depth + 1, out);
      if (k == 0 && !(i->flags & KL_IR_F_DO_WHILE) && !(i->flags & KL_IR_F_REGION)) {
        kl_pr_indent(depth + 1, out);
        if (i->nops && i->ops[0])
          fprintf(out, "cond %%%u\n", i->ops[0]);
        else
          fputs("cond -\n", out);
      }
      if (k == 2 && (i->flags & KL_IR_F_DO_WHILE)) {
        kl_pr_indent(depth + 1, out);
        if (i->nops && i->ops[0])
          fprintf(out, "cond %%%u\n", i->ops[0]);
        else
          fputs("cond -\n", out);
      }
    }
    kl_pr_indent(depth, out);
    fputs("}\n", out);
  }
}

static void kl_pr_block(const struct kl_ir_fn *f, uint32_t blk, int depth, FILE *out) {
  if (!blk || blk >= f->nblocks) return;
  const struct kl_ir_block *bl = &f->blocks[blk];
  for (uint32_t k = 0; k < bl->n; k++) kl_pr_ins(f, bl->ins[k], depth, out);
}

void kl_ir_print(const struct kl_ir_fn *f, const char *buf, FILE *out) {
  (void)buf;
  const char *name = f->kernel && f->kernel->name ? f->kernel->name : "?";
  fprintf(out, "kernel %s", name);
  if (f->inst) fprintf(out, " [%s]", f->inst);
  if (f->truncated) fputs(" (truncated)", out);
  fputs(" {\n", out);
  kl_pr_block(f, f->body, 1, out);
  for (uint32_t s = 1; s < f->nsites; s++) {
    const struct kl_ir_site *st = &f->sites[s];
    fprintf(out, "  ; #%u = %s @%u", s, st->callee && st->callee->name ? st->callee->name : "?",
            ts_node_is_null(st->call) ? 0 : ts_node_start_point(st->call).row + 1);
    if (st->parent) fprintf(out, " in #%u", st->parent);
    fputc('\n', out);
  }
  fputs("}\n", out);
}
