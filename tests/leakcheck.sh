#!/usr/bin/env bash
# make leakcheck: kernlint under valgrind over everything the suite lints, the bad inputs and
# every CLI mode. A run passes only when kernlint printed something, exited with the status
# stated for that run (0, 1 or 2), was not ended by a signal, and valgrind reported nothing at
# all: valgrind writes to a log of its own, so its reports are never mixed with kernlint's
# stderr. First the harness proves itself on canaries: a crash, a wrong status, a leak, an
# invalid read and a missing binary must each be caught, and a clean program must pass.
# Prints PASS/FAIL per run and the closing count line.
set -u
bin=${1:-build/debug/kernlint}
if ! command -v valgrind >/dev/null; then
  echo "FAIL leakcheck: valgrind not installed (make deps)"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

# vg_run WANT EXE ARGS...: EXE under valgrind; 0 when the run is clean and exits WANT, else 1
# with the reasons in $why. Output in $tmp/out and $tmp/err (or the file $report names, when a run
# writes its report there), valgrind's own report in $tmp/vg.log.
report=""
vg_run() {
  local want=$1 exe=$2 rc
  shift 2
  why=""
  if [ ! -f "$exe" ] || [ ! -x "$exe" ]; then
    why="$exe is not an executable file"
    return 1
  fi
  : >"$tmp/vg.log"
  [ -n "$report" ] && rm -f "$report"
  # The outer redirection only silences bash's own "Segmentation fault" notice: $why says it.
  {
    valgrind -q --log-file="$tmp/vg.log" --leak-check=full \
      --show-leak-kinds=definite,indirect,possible \
      --errors-for-leak-kinds=definite,indirect,possible \
      --error-exitcode=99 "$exe" "$@" >"$tmp/out" 2>"$tmp/err"
  } 2>/dev/null
  rc=$?
  if [ "$rc" -ge 128 ]; then why="killed by signal $((rc - 128)); "
  elif [ "$rc" != "$want" ]; then why="exit $rc, expected $want; "; fi
  [ -s "$tmp/vg.log" ] && why="${why}valgrind reported: $(head -c 3000 "$tmp/vg.log"); "
  if [ -n "$report" ]; then
    [ -s "$report" ] || why="${why}no report in $report; "
  elif [ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ]; then why="${why}no output at all; "; fi
  [ -n "$why" ] && why="$why$(head -c 500 "$tmp/err" | sed 's/^/stderr: /')"
  [ -z "$why" ]
}
ok() { echo "PASS leakcheck-$1"; pass=$((pass + 1)); }
ko() { echo "FAIL leakcheck-$1: $2" | head -40; fail=$((fail + 1)); }
# vg NAME WANT ARGS...: one kernlint run that must exit WANT.
vg() {
  local name=$1 want=$2
  shift 2
  if vg_run "$want" "$bin" "$@"; then ok "$name"; else ko "$name" "$why"; fi
}

# ---- the harness, on canaries ----
cat >"$tmp/canary.c" <<'EOF'
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (strcmp(mode, "silent")) fprintf(stderr, "canary: %s\n", mode); /* not valgrind's */
  if (!strcmp(mode, "segv")) raise(SIGSEGV);
  if (!strcmp(mode, "exit1")) return 1;
  if (!strcmp(mode, "leak")) {
    char *p = malloc(64);
    p[0] = 'x';
    p = NULL;
  }
  if (!strcmp(mode, "read")) {
    char *p = malloc(4);
    volatile char c = p[4];
    free(p);
    return c == 7;
  }
  return 0;
}
EOF
if ! ${CC:-cc} -g -O0 -o "$tmp/canary" "$tmp/canary.c" 2>"$tmp/cc.err"; then
  ko harness "cannot build the canary: $(head -3 "$tmp/cc.err")"
else
  if vg_run 0 "$tmp/canary" clean; then ok harness-passes-clean
  else ko harness-passes-clean "$why"; fi
  # catches NAME REASON-PATTERN MODE: the canary in MODE must fail, for the reason given.
  catches() {
    if vg_run 0 "$tmp/canary" "$3"; then ko "harness-catches-$1" "the harness passed it"
    elif grep -qE -- "$2" <<<"$why"; then ok "harness-catches-$1"
    else ko "harness-catches-$1" "failed for another reason: $why"; fi
  }
  catches segv '^killed by signal 11; ' segv
  catches wrong-exit '^exit 1, expected 0; ' exit1
  catches leak 'valgrind reported: .*definitely lost' leak
  catches invalid-read 'valgrind reported: .*Invalid read' read
  catches no-output 'no output at all' silent
  if vg_run 0 "$tmp/no-such-kernlint" --help; then
    ko harness-catches-missing "the harness passed it"
  else ok harness-catches-missing; fi
fi

# ---- kernlint ----
if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then
  ko binary "$bin is not an executable file (make BUILD=build/debug build/debug/kernlint)"
else
  printf '' >"$tmp/empty.metal"
  printf 'kernel void k(\x00)' >"$tmp/binary.metal"
  printf 'kernel void k(\xff\xfe)' >"$tmp/utf8.metal"
  { printf 'kernel void k() { int x = '; head -c 5000 /dev/zero | tr '\0' '('; } \
    >"$tmp/deep.metal"
  printf '[rules]\nno-such-rule = off\n' >"$tmp/bad.lintrc"
  for fmt in text json sarif github; do
    vg "fixtures-$fmt" 0 --format "$fmt" --exit-zero tests/fixtures examples
  done
  vg corpus 0 --exit-zero grammar/tests/corpus
  vg findings 1 examples
  vg badinput 2 --exit-zero "$tmp/empty.metal" "$tmp/binary.metal" "$tmp/utf8.metal" \
    "$tmp/deep.metal" "$tmp/missing.metal" examples
  vg badconfig 2 --config "$tmp/bad.lintrc" examples
  vg stdin 1 --stdin-filename stdin.metal - <examples/bf16_gelu.metal
  # Fixes: --diff over every fixture, --fix on copies (in parallel and one after the other), on
  # standard input, and on a read-only file.
  vg diff 1 --diff tests/fixtures
  mkdir -p "$tmp/fix1" "$tmp/fix2"
  cp -r tests/fixtures/half-accumulator tests/fixtures/bfloat-target \
    tests/fixtures/unused-suppression "$tmp/fix1/"
  cp -r "$tmp/fix1/." "$tmp/fix2/"
  vg fix 0 --fix --exit-zero "$tmp/fix1"
  vg fix-j1 0 --fix --exit-zero -j 1 "$tmp/fix2"
  vg fix-stdin 0 --fix --stdin-filename k.metal - <tests/fixtures/half-accumulator/bad_dot_loop.metal
  cp tests/fixtures/half-accumulator/bad_fma_gemv.metal "$tmp/ro.metal"
  chmod 444 "$tmp/ro.metal"
  vg fix-read-only 2 --fix "$tmp/ro.metal"
  report="$tmp/out.sarif"
  vg output 0 --format sarif --output "$tmp/out.sarif" --exit-zero examples
  report=""
  cp examples/row_softmax.metal "$tmp/gone.metal"
  vg write-baseline 0 --write-baseline "$tmp/bl.json" -j 2 examples tests/fixtures/bounds-guard \
    "$tmp/gone.metal"
  rm -f "$tmp/gone.metal"
  vg baseline 1 --baseline "$tmp/bl.json" --baseline-unused -j 2 examples tests/fixtures
  vg baseline-strict 1 --baseline "$tmp/bl.json" --baseline-strict --format sarif examples
  printf '{"version": 1, "tool": "kernlint", "entries": [{"path": 1}]}' >"$tmp/bad-bl.json"
  vg baseline-bad 2 --baseline "$tmp/bad-bl.json" examples
  vg baseline-missing 2 --baseline "$tmp/no-such-bl.json" examples
  vg help 0 --help
  vg list-rules 0 --list-rules
  vg explain 0 --explain bfloat-target
  vg usage 2 --no-such-option examples
  # A language server session from a file: every method, malformed messages, then shutdown and
  # exit (status 0); the same session cut off before shutdown ends at end of input (status 1).
  if command -v python3 >/dev/null; then
    python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def frame(o):
    b = json.dumps(o).encode() if not isinstance(o, bytes) else o
    return b"Content-Length: %d\r\n\r\n" % len(b) + b
def read(p):
    return open(p, encoding="utf-8").read()
metal = read("tests/fixtures/bounds-guard/bad_guard_after_access.metal")
py = read("tests/fixtures/python/bad_literal_rounded_grid.py")
uri, puri = "file://%s/lsp/k.metal" % tmp, "file://%s/lsp/k.py" % tmp
def doc(u, t, lang):
    return {"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": u, "languageId": lang, "version": 1, "text": t}}}
msgs = [{"id": 0, "method": "shutdown"},
        {"id": 1, "method": "initialize", "params": {"capabilities": {}}},
        {"method": "initialized", "params": {}},
        doc(uri, metal, "metal"), doc(puri, py, "python"), doc("untitled:1", "\xff", "metal"),
        {"method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 2},
         "contentChanges": [{"text": metal.replace("x[gid]", "x[gid] /* \u00e9 */")}]}},
        b"Content-Length: x\r\n\r\n{}", b"{\"id\": 2,", [1],
        {"id": 3, "method": "textDocument/hover", "params": {}},
        {"id": 4, "method": "textDocument/codeAction", "params": 7}]
for u in (uri, puri):
    for line in range(40):
        r = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 99}}
        msgs.append({"id": 10 + line, "method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": u}, "range": r, "context": {"diagnostics": [
                {"range": r, "code": "bounds-guard"}, {"range": r, "code": "unused-suppression"}]}}})
# Ranged changes (one malformed), a hover on the finding and elsewhere, and a request cancelled
# while it may still wait for its document's lint.
rg = lambda l1, c1, l2, c2: {"start": {"line": l1, "character": c1},
                             "end": {"line": l2, "character": c2}}
msgs += [{"method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 3},
          "contentChanges": [{"range": rg(0, 0, 0, 0), "text": "// \U0001F600\n"},
                             {"range": rg(99, 0, 99, 9), "text": "\n"}]}},
         {"method": "textDocument/didChange", "params": {"textDocument": {"uri": uri, "version": 4},
          "contentChanges": [{"range": {"start": {"line": -1}}, "text": "x"}]}},
         {"id": 50, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri},
          "position": {"line": 12, "character": 13}}},
         {"method": "$/cancelRequest", "params": {"id": 50}},
         {"id": 51, "method": "textDocument/hover", "params": {"textDocument": {"uri": uri},
          "position": {"line": 0, "character": 0}}}]
msgs += [{"method": "textDocument/didSave", "params": {"textDocument": {"uri": uri}}},
         {"method": "textDocument/didClose", "params": {"textDocument": {"uri": puri}}}]
cut = b"".join(frame(m) for m in msgs)
open(tmp + "/lsp-eof.in", "wb").write(cut)
rest = [{"id": 90, "method": "shutdown"}, {"method": "exit"}]
open(tmp + "/lsp.in", "wb").write(cut + b"".join(frame(m) for m in rest))
PY
    vg lsp 0 --lsp <"$tmp/lsp.in"
    vg lsp-eof 1 --lsp --target m3 <"$tmp/lsp-eof.in"
  else
    ko lsp "python3 is needed to write the language server session"
  fi
fi
echo "leakcheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
