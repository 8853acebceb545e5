#!/usr/bin/env bash
# Baselines, end to end with the real program: --write-baseline records a tree's findings in a
# sorted, stable JSON file; --baseline then reports only new ones, across edits elsewhere in a file,
# from other working folders and on other machines; --baseline-unused lists stale entries.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
# run DIR ARGS...: kernlint run from DIR, with a time limit; sets $rc, output in $tmp/out, $tmp/err.
run() {
  local dir=$1
  shift
  (cd "$dir" && timeout 60 "$KERNLINT" "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# expect NAME WANT_RC CONDITION-STATUS: pass when the run exited WANT_RC and the condition held.
expect() {
  if [ "$rc" = 124 ]; then fail "$1" "timed out"
  elif [ "$rc" != "$2" ]; then
    fail "$1" "exit $rc, expected $2; stderr: $(head -c 400 "$tmp/err" | tr '\n' '|')"
  elif [ "$3" != 0 ]; then
    local o e
    o=$(head -c 400 "$tmp/out" | tr '\n' '|')
    e=$(head -c 400 "$tmp/err" | tr '\n' '|')
    fail "$1" "stdout: $o stderr: $e"
  else pass "$1"; fi
}
# Findings reported in text output, as "path:line [rule]".
reported() {
  sed -n 's/^\([^ :]*\):\([0-9]*\):[0-9]*: [a-z]*: .* \[\([a-z-]*\)\]$/\1:\2 [\3]/p' "$tmp/out"
}
# quiet_with LINE: 0 when nothing was reported and stderr has LINE; for expect's condition.
quiet_with() {
  [ ! -s "$tmp/out" ] && grep -qxF "$1" "$tmp/err"
  echo $?
}

repo="$tmp/repo"
mkdir -p "$repo/kernels/sub"
# a.metal: one bounds-guard error. b.metal: the same line twice (occurrences 1 and 2).
kernel_head='#include <metal_stdlib>
using namespace metal;

kernel void k(device const float* x [[buffer(0)]],
              device float* y [[buffer(1)]],
              constant uint& n [[buffer(2)]],
              uint gid [[thread_position_in_grid]]) {'
cat >"$repo/kernels/a.metal" <<EOF
$kernel_head
  y[gid] = x[gid];
  if (gid >= n) return;
  y[gid] = x[gid] * 2.0f;
}
EOF
cat >"$repo/kernels/b.metal" <<EOF
$kernel_head
  y[gid] = x[gid];
  y[gid] = x[gid];
  if (gid >= n) return;
}
EOF
# c.metal: an unused suppression, a note like any other finding.
cat >"$repo/kernels/sub/c.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void add_one(device const float *a [[buffer(0)]], device float *b [[buffer(1)]],
                    constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return; // kernlint-disable-line half-accumulator
  b[gid] = a[gid] + 1.0f;
}
EOF
cp examples/row_softmax.metal "$repo/kernels/tg.metal"
cp examples/saxpy.metal "$repo/kernels/clean.metal"
cp -r "$repo" "$tmp/pristine"

run "$repo" --help
expect help-lists-baseline-options 0 "$(for f in --write-baseline --baseline --baseline-unused \
  --baseline-strict; do grep -q -- "^  $f " "$tmp/out" || exit 1; done; echo 0)"

# ---- --write-baseline ----
run "$repo" --write-baseline kernlint-baseline.json kernels
expect write 0 "$([ ! -s "$tmp/out" ] &&
  [ "$(cat "$tmp/err")" = "kernlint: wrote 5 findings to kernlint-baseline.json" ]; echo $?)"
# The exact file, but for the messages (the rules' wording is not the format's business; that
# each entry has one, last, is checked below).
cat >"$tmp/want" <<'EOF'
{
  "version": 1,
  "tool": "kernlint",
  "entries": [
    {
      "path": "kernels/a.metal",
      "rule": "bounds-guard",
      "text": "y[gid] = x[gid];",
      "occurrence": 1,
    },
    {
      "path": "kernels/b.metal",
      "rule": "bounds-guard",
      "text": "y[gid] = x[gid];",
      "occurrence": 1,
    },
    {
      "path": "kernels/b.metal",
      "rule": "bounds-guard",
      "text": "y[gid] = x[gid];",
      "occurrence": 2,
    },
    {
      "path": "kernels/sub/c.metal",
      "rule": "unused-suppression",
      "text": "if (gid >= n) return; // kernlint-disable-line half-accumulator",
      "occurrence": 1,
    },
    {
      "path": "kernels/tg.metal",
      "rule": "threadgroup-size",
      "text": "[[max_total_threads_per_threadgroup(ROW + PAD)]]",
      "occurrence": 1,
    }
  ]
}
EOF
bl="$repo/kernlint-baseline.json"
grep -v '^      "message": ' "$bl" >"$tmp/got"
if [ -f "$bl" ] && diff -u "$tmp/want" "$tmp/got" >"$tmp/diff"; then pass write-content
else fail write-content "$(head -c 600 "$tmp/diff" 2>/dev/null)"; fi
# Each entry: five keys in the documented order, the message last and not empty.
if [ "$(grep -c '^      "message": ".\+"$' "$bl")" = 5 ] &&
  [ "$(grep -A1 '"occurrence"' "$bl" | grep -c '"message"')" = 5 ] &&
  [ "$(tail -c 1 "$bl" | od -An -c | tr -d ' ')" = '\n' ]; then pass write-messages-newline
else fail write-messages-newline "$(cat "$bl")"; fi
# The temporary file (hidden, beside the baseline) is renamed over it: nothing else is left.
if [ -f "$bl" ] && [ -z "$(ls -A "$repo" | grep -v '^kernels$\|^kernlint-baseline.json$')" ]; then
  pass write-no-temporary-left
else fail write-no-temporary-left "$(ls -A "$repo")"; fi

# Stable: the same tree gives the same bytes, whatever -j, the working folder or the path form.
cp "$bl" "$tmp/first.json"
run "$repo" --write-baseline kernlint-baseline.json -j 2 kernels
expect write-again-j2 0 "$(cmp -s "$bl" "$tmp/first.json"; echo $?)"
run "$repo/kernels" --write-baseline ../kernlint-baseline.json -j 1 .
expect write-from-subfolder 0 "$(cmp -s "$bl" "$tmp/first.json"; echo $?)"
run "$tmp" --write-baseline "$bl" "$repo/kernels/tg.metal" "$repo/kernels/a.metal" \
  "$repo/kernels/b.metal" "$repo/kernels/sub" "$repo/kernels/clean.metal"
expect write-absolute-paths 0 "$(cmp -s "$bl" "$tmp/first.json"; echo $?)"

# It honours .lintrc: a rule turned off is not recorded.
printf '[rules]\nthreadgroup-size = off\n' >"$repo/.lintrc"
run "$repo" --write-baseline "$tmp/cfg.json" kernels
expect write-honours-config 0 "$(grep -q 'kernels/tg.metal' "$tmp/cfg.json"
  [ $? = 1 ] && grep -q '"repo/kernels/a.metal"' "$tmp/cfg.json"
  echo $?)"
rm "$repo/.lintrc"

# An input error: the others are still recorded, and the status says so.
run "$repo" --write-baseline "$tmp/partial.json" kernels missing.metal
expect write-input-error 2 "$(grep -q 'missing.metal' "$tmp/err" &&
  grep -q 'kernels/a.metal' "$tmp/partial.json"; echo $?)"

# ---- --baseline ----
run "$repo" --baseline kernlint-baseline.json kernels
expect baseline-clean 0 "$([ ! -s "$tmp/out" ] &&
  [ "$(cat "$tmp/err")" = "No problems found in 5 files.
5 findings baselined." ]; echo $?)"

# Lines inserted above a finding: its line number changes, its key does not.
for f in a b; do
  { printf '// moved down\n\n// by three lines\n'; cat "$repo/kernels/$f.metal"; } >"$tmp/x"
  mv "$tmp/x" "$repo/kernels/$f.metal"
done
run "$repo" --baseline kernlint-baseline.json kernels
expect baseline-lines-inserted 0 "$(quiet_with '5 findings baselined.')"
# Re-indented, the line is the same line.
sed -i 's/^  y\[gid\] = x\[gid\];$/\t    y[gid] = x[gid];   /' "$repo/kernels/a.metal"
run "$repo" --baseline kernlint-baseline.json kernels
expect baseline-reindented 0 "$(quiet_with '5 findings baselined.')"

# A new defect: only it is reported, and it fails the run.
sed -i 's/^  if (gid >= n) return;$/  y[gid] = x[gid + 1];\n&/' "$repo/kernels/a.metal"
run "$repo" --baseline kernlint-baseline.json kernels
expect baseline-new-defect 1 "$([ "$(reported)" = "kernels/a.metal:12 [bounds-guard]" ] &&
  grep -qx '5 findings baselined.' "$tmp/err"; echo $?)"

# A baselined line duplicated: the baseline has it twice, the code three times: one is reported.
sed -i '0,/^  y\[gid\] = x\[gid\];$/s//&\n&/' "$repo/kernels/b.metal"
run "$repo" --baseline kernlint-baseline.json kernels/b.metal
expect baseline-duplicate 1 "$([ "$(reported)" = "kernels/b.metal:13 [bounds-guard]" ] &&
  grep -qx '2 findings baselined.' "$tmp/err"; echo $?)"

# --exit-zero and --fail-on count only what is reported.
run "$repo" --baseline kernlint-baseline.json --exit-zero kernels/b.metal
expect baseline-exit-zero 0 "$([ "$(reported)" = "kernels/b.metal:13 [bounds-guard]" ]; echo $?)"
cp "$tmp/pristine/kernels/b.metal" "$repo/kernels/b.metal"
cp "$tmp/pristine/kernels/tg.metal" "$repo/kernels/tg2.metal"
run "$repo" --baseline kernlint-baseline.json --fail-on error kernels/tg.metal kernels/tg2.metal
expect baseline-fail-on 0 "$([ "$(reported)" = "kernels/tg2.metal:10 [threadgroup-size]" ]
  echo $?)"
run "$repo" --baseline kernlint-baseline.json kernels/tg.metal kernels/tg2.metal
expect baseline-fail-on-default 1 "$([ "$(reported)" = "kernels/tg2.metal:10 [threadgroup-size]" ]
  echo $?)"
rm "$repo/kernels/tg2.metal"

# ---- --baseline-unused ----
# a.metal's baselined finding is fixed (its line guarded), and tg.metal is gone.
sed -i 's/^\t    y\[gid\] = x\[gid\];   $/  if (gid < n) y[gid] = x[gid];/' "$repo/kernels/a.metal"
sed -i '/^  y\[gid\] = x\[gid + 1\];$/d' "$repo/kernels/a.metal"
rm "$repo/kernels/tg.metal"
run "$repo" --baseline kernlint-baseline.json --baseline-unused kernels
expect unused-listed 0 "$([ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "\
kernlint: kernlint-baseline.json: unused entry: kernels/a.metal [bounds-guard] y[gid] = x[gid];
kernlint: kernlint-baseline.json: unused entry: kernels/tg.metal [threadgroup-size] \
[[max_total_threads_per_threadgroup(ROW + PAD)]]
No problems found in 4 files.
3 findings baselined; 2 baseline entries unused." ]; echo $?)"
# Without the flag they are not listed; with --baseline-strict they fail the run.
run "$repo" --baseline kernlint-baseline.json kernels
expect unused-not-listed 0 "$(grep -q 'unused entry' "$tmp/err"
  [ $? = 1 ] && grep -qx '3 findings baselined.' "$tmp/err"; echo $?)"
run "$repo" --baseline kernlint-baseline.json --baseline-strict kernels
expect unused-strict 1 "$([ "$(grep -c 'unused entry' "$tmp/err")" = 2 ]; echo $?)"
run "$repo" --baseline kernlint-baseline.json --baseline-strict --exit-zero kernels
expect unused-strict-exit-zero 0 "$([ "$(grep -c 'unused entry' "$tmp/err")" = 2 ]; echo $?)"
# Entries of files that exist but were not linted this run are not judged.
run "$repo" --baseline kernlint-baseline.json --baseline-unused kernels/b.metal
expect unused-only-linted 0 "$([ "$(grep 'unused entry' "$tmp/err")" = "\
kernlint: kernlint-baseline.json: unused entry: kernels/tg.metal [threadgroup-size] \
[[max_total_threads_per_threadgroup(ROW + PAD)]]" ]; echo $?)"
# In JSON and SARIF the list goes to stderr, and stdout stays one valid document.
run "$repo" --baseline kernlint-baseline.json --baseline-unused --format json kernels
expect unused-json 0 "$([ "$(grep -c 'unused entry' "$tmp/err")" = 2 ] &&
  [ "$("$JSON_GET" "$tmp/out" summary.diagnostics)" = 0 ] &&
  ! grep -q baselined "$tmp/err"; echo $?)"

# ---- other working folders, other machines, standard input ----
rm -rf "$repo"
cp -r "$tmp/pristine" "$repo"
run "$repo" --write-baseline kernlint-baseline.json kernels
run "$tmp" --baseline repo/kernlint-baseline.json repo/kernels
expect other-cwd-parent 0 "$(quiet_with '5 findings baselined.')"
run "$repo/kernels/sub" --baseline ../../kernlint-baseline.json --baseline-strict ../
expect other-cwd-child 0 "$(quiet_with '5 findings baselined; 0 baseline entries unused.')"
mkdir -p "$tmp/elsewhere/deeper"
cp -r "$repo" "$tmp/elsewhere/deeper/clone"
run "$tmp/elsewhere" --baseline deeper/clone/kernlint-baseline.json --baseline-strict \
  "$tmp/elsewhere/deeper/clone/kernels"
expect other-machine 0 "$(quiet_with '5 findings baselined; 0 baseline entries unused.')"
# A baseline outside the tree stores paths with "..", and they match too.
run "$repo/kernels" --write-baseline "$tmp/outside/bl.json" .
expect outside-folder-missing 2 "$([ "$(wc -l <"$tmp/err")" = 1 ] &&
  grep -q "$tmp/outside/bl.json" "$tmp/err"; echo $?)"
mkdir -p "$tmp/outside"
run "$repo/kernels" --write-baseline "$tmp/outside/bl.json" .
grep -q '"path": "\.\./repo/kernels/a.metal"' "$tmp/outside/bl.json"
expect outside-write 0 $?
run "$repo" --baseline "$tmp/outside/bl.json" kernels
expect outside-read 0 "$(quiet_with '5 findings baselined.')"
# Standard input is matched under its --stdin-filename.
(cd "$repo" && timeout 60 "$KERNLINT" --baseline kernlint-baseline.json \
  --stdin-filename kernels/b.metal - <kernels/b.metal) >"$tmp/out" 2>"$tmp/err"
rc=$?
expect stdin-named 0 "$(quiet_with '2 findings baselined.')"
(cd "$repo" && timeout 60 "$KERNLINT" --baseline kernlint-baseline.json \
  --stdin-filename kernels/new.metal - <kernels/b.metal) >"$tmp/out" 2>"$tmp/err"
rc=$?
expect stdin-other-name 1 "$([ "$(reported | wc -l)" = 2 ]; echo $?)"

# ---- -j N: byte-identical output ----
cp -r "$tmp/pristine/kernels" "$repo/more"
sed -i 's/^  if (gid >= n) return;$/  y[gid] = x[gid + 1];\n&/' "$repo/more/a.metal" \
  "$repo/kernels/b.metal"
for fmt in text json sarif; do
  run "$repo" --baseline kernlint-baseline.json --baseline-unused --format "$fmt" -j 1 kernels more
  cp "$tmp/out" "$tmp/j1.out"
  cp "$tmp/err" "$tmp/j1.err"
  rc1=$rc
  run "$repo" --baseline kernlint-baseline.json --baseline-unused --format "$fmt" -j 2 kernels more
  expect "jobs-identical-$fmt" "$rc1" "$(cmp -s "$tmp/out" "$tmp/j1.out" &&
    cmp -s "$tmp/err" "$tmp/j1.err" && [ -s "$tmp/out" ]; echo $?)"
done
# SARIF: the baselined results are left out, as in every format.
run "$repo" --format sarif kernels more
all=$("$JSON_GET" "$tmp/out" 'runs.0.results#')
cp "$tmp/out" "$tmp/all.sarif"
run "$repo" --baseline kernlint-baseline.json --format sarif kernels more
expect sarif-only-new 1 "$([ "$("$JSON_GET" "$tmp/out" 'runs.0.results#')" = $((all - 5)) ] &&
  ! grep -q baselined "$tmp/err"; echo $?)"
# A new finding keeps the fingerprint it has without a baseline (more/, b.metal's new line).
fp() {
  "$JSON_GET" "$1" runs.0.results | tr '{' '\n' |
    grep -o '"primaryLocationLineHash":"[^"]*"' | sort
}
if [ -n "$(fp "$tmp/out")" ] && [ -z "$(comm -23 <(fp "$tmp/out") <(fp "$tmp/all.sarif"))" ]; then
  pass sarif-fingerprints-kept
else fail sarif-fingerprints-kept "$(comm -23 <(fp "$tmp/out") <(fp "$tmp/all.sarif"))"; fi

# ---- bad baselines and bad combinations: one line naming the file, exit 2 ----
bad() { # NAME CONTENT WANT-PATTERN
  printf '%s' "$2" >"$tmp/bad.json"
  run "$repo" --baseline "$tmp/bad.json" kernels
  expect "$1" 2 "$([ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
    grep -q "^kernlint: $tmp/bad.json.*$3" "$tmp/err"; echo $?)"
}
bad malformed-json '{"version": 1, "tool": "kernlint", "entries": [' 'malformed'
bad malformed-empty '' 'malformed'
bad malformed-not-object '[]' 'malformed'
bad malformed-tool '{"version": 1, "tool": "ruff", "entries": []}' 'not a kernlint baseline'
bad malformed-version '{"version": 2, "tool": "kernlint", "entries": []}' 'version'
bad malformed-entries '{"version": 1, "tool": "kernlint", "entries": {}}' 'entries'
head='{"version": 1, "tool": "kernlint", "entries": '
bad malformed-entry "$head"'[{"path": "a.metal", "rule": "r", "text": "x", "occurrence": 0}]}' \
  'occurrence'
bad malformed-entry-rule "$head"'[{"path": "a.metal", "text": "x", "occurrence": 1}]}' 'rule'
run "$repo" --baseline no-such-baseline.json kernels
expect missing-baseline 2 "$([ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = \
  "kernlint: no-such-baseline.json: cannot read baseline: No such file or directory" ]; echo $?)"
run "$repo" --baseline kernels kernels
expect baseline-is-folder 2 "$([ "$(wc -l <"$tmp/err")" = 1 ] && grep -q 'kernels' "$tmp/err"
  echo $?)"
run "$repo" --baseline-unused kernels
expect unused-needs-baseline 2 "$(grep -q -- '--baseline FILE' "$tmp/err"; echo $?)"
run "$repo" --baseline kernlint-baseline.json --write-baseline x.json kernels
expect baseline-and-write 2 "$([ ! -e "$repo/x.json" ]; echo $?)"
run "$repo" --write-baseline x.json --output report.txt kernels
expect write-and-output 2 "$([ ! -e "$repo/x.json" ] && [ ! -e "$repo/report.txt" ]; echo $?)"
cp "$repo/kernels/a.metal" "$tmp/a.copy"
run "$repo" --write-baseline kernels/a.metal kernels
expect write-over-input 2 "$(cmp -s "$repo/kernels/a.metal" "$tmp/a.copy"; echo $?)"

[ "$failures" -eq 0 ]
