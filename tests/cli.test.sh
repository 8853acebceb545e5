#!/usr/bin/env bash
# The command line: information flags, exit codes, --fail-on/--exit-zero, stdin, folder walks,
# --output, --quiet/--stats and colour. Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
# run ARGS...: kernlint with a time limit; sets $rc, output in $tmp/out and $tmp/err.
run() {
  timeout 60 "$KERNLINT" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# expect NAME WANT_RC: checks $rc, and that nothing hung.
expect_rc() {
  if [ "$rc" = 124 ]; then fail "$1" "timed out"
  elif [ "$rc" = "$2" ]; then pass "$1"
  else fail "$1" "exit $rc, expected $2; stderr: $(head -c 300 "$tmp/err")"; fi
}
lines() { if [ -s "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }

ids="bounds-guard threadgroup-size half-accumulator barrier-divergence uncoalesced-access
bfloat-target unused-suppression"

cat >"$tmp/clean.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void add_one(device const float *a [[buffer(0)]], device float *b [[buffer(1)]],
                    constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  b[gid] = a[gid] + 1.0f;
}
EOF
cat >"$tmp/bf.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],
                  constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  bfloat v = bfloat(a[gid]);
  b[gid] = v;
}
EOF

# ---- information flags ----
run --version
want=$(sed -n 's/^#define KL_VERSION "\(.*\)"$/\1/p' analyzer/version.h)
expect_rc version-exit 0
if [ "$(cat "$tmp/out")" = "kernlint $want" ]; then pass version-text
else fail version-text "got '$(cat "$tmp/out")', expected 'kernlint $want'"; fi

run --help
expect_rc help-exit 0
missing=""
for f in --list-rules --explain --target --format --output --config --fail-on --exit-zero \
  --assume-rounded-grid --quiet --stats --no-color --color --version --help --stdin-filename; do
  grep -q -- "$f" "$tmp/out" || missing="$missing $f"
done
if grep -q '^Usage: kernlint' "$tmp/out" && [ -z "$missing" ]; then pass help-text
else fail help-text "missing:$missing"; fi
run -h
expect_rc help-short 0

run --list-rules
expect_rc list-rules-exit 0
cp "$tmp/out" "$tmp/rules"
for id in $ids; do
  if grep -Eq "^$id +(note|warning|error) " "$tmp/rules"; then pass "list-rules-$id"
  else fail "list-rules-$id" "no '$id LEVEL' line"; fi
done
implemented() { grep -E "^$1 " "$tmp/rules" | grep -vq 'not yet implemented'; }

for id in $ids; do
  run --explain "$id"
  ok=1
  for h in "# $id" "## What it does" "## Why is this bad?" "## Example" "## Use instead"; do
    grep -qF -- "$h" "$tmp/out" || ok=0
  done
  if [ "$rc" = 0 ] && [ "$ok" = 1 ]; then pass "explain-$id"
  else fail "explain-$id" "exit $rc or a section is missing"; fi
done
run --explain=no-such-rule
expect_rc explain-unknown 2
if [ "$(lines "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ] && grep -q 'no-such-rule' "$tmp/err"; then
  pass explain-unknown-message
else fail explain-unknown-message "stderr: $(cat "$tmp/err")"; fi

# ---- exit codes ----
run "$tmp/clean.metal"
expect_rc clean-exit 0
if [ ! -s "$tmp/out" ] && grep -q '^No problems found in 1 file\.$' "$tmp/err"; then
  pass clean-summary
else fail clean-summary "stdout: $(head -c 200 "$tmp/out") stderr: $(cat "$tmp/err")"; fi
run -q "$tmp/clean.metal"
if [ "$rc" = 0 ] && [ ! -s "$tmp/err" ] && [ ! -s "$tmp/out" ]; then pass quiet-clean
else fail quiet-clean "exit $rc, stderr: $(cat "$tmp/err")"; fi

run "$tmp/clean.metal" "$tmp/missing.metal"
expect_rc missing-file-exit 2
run --exit-zero "$tmp/missing.metal"
expect_rc exit-zero-keeps-errors 2
run --bogus "$tmp/clean.metal"
expect_rc usage-exit 2
run
expect_rc no-paths-exit 2

if implemented bfloat-target; then
  run "$tmp/bf.metal"
  expect_rc findings-exit 1
  if grep -q 'bf\.metal:[0-9]*:[0-9]*: warning: .*\[bfloat-target\]$' "$tmp/out" &&
    grep -Eq '^Found [0-9]+ problems? \(0 errors, [0-9]+ warnings?, 0 notes\) in 1 file\.$' \
      "$tmp/err"; then pass findings-output
  else fail findings-output "stdout: $(head -c 300 "$tmp/out") stderr: $(cat "$tmp/err")"; fi
  run --exit-zero "$tmp/bf.metal"
  expect_rc exit-zero 0
  run --fail-on error "$tmp/bf.metal"
  expect_rc fail-on-error 0
  run --fail-on=warning "$tmp/bf.metal"
  expect_rc fail-on-warning 1
  run --fail-on note "$tmp/bf.metal"
  expect_rc fail-on-note 1
  run "$tmp/bf.metal" "$tmp/missing.metal"
  expect_rc error-beats-findings 2
  run -q "$tmp/bf.metal"
  if [ ! -s "$tmp/err" ] && [ -s "$tmp/out" ]; then pass quiet-findings
  else fail quiet-findings "stderr: $(cat "$tmp/err")"; fi
  # apple9 (M3) has bfloat: a later target silences the rule, when the catalogue knows it.
  run --target apple9 "$tmp/bf.metal"
  if grep -q "unknown target" "$tmp/err"; then pass "skipped-target-apple9 (catalogue lacks it)"
  else expect_rc target-apple9 0; fi
  run --color=always "$tmp/bf.metal"
  if grep -q $'\033\\[' "$tmp/out"; then pass color-always
  else fail color-always "no escape sequence"; fi
  NO_COLOR=1 timeout 60 "$KERNLINT" --color always "$tmp/bf.metal" >"$tmp/out" 2>/dev/null
  if grep -q $'\033\\[' "$tmp/out"; then pass color-always-beats-no-color
  else fail color-always-beats-no-color "no escape sequence"; fi
  run --color=always --no-color "$tmp/bf.metal"
  if grep -q $'\033' "$tmp/out"; then fail no-color "escape sequence present"
  else pass no-color; fi
  run "$tmp/bf.metal"
  if grep -q $'\033' "$tmp/out"; then fail color-auto-pipe "escape sequence on a pipe"
  else pass color-auto-pipe; fi
else
  for t in findings-exit exit-zero fail-on-error fail-on-warning fail-on-note \
    error-beats-findings quiet-findings color-always no-color; do
    pass "skipped-$t (bfloat-target is not yet implemented)"
  done
fi

for bad in "--fail-on fatal" "--format xml" "--target m99" "--color sometimes"; do
  # shellcheck disable=SC2086
  run $bad "$tmp/clean.metal"
  name="bad-value-${bad%% *}"
  name=${name//--/}
  if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ]; then pass "$name"
  else fail "$name" "exit $rc, stderr: $(cat "$tmp/err")"; fi
done

# --flag=value and --flag value are the same thing.
run --format=json "$tmp/clean.metal"
cp "$tmp/out" "$tmp/eq1"
run --format json "$tmp/clean.metal"
if cmp -s "$tmp/eq1" "$tmp/out" && [ -s "$tmp/out" ]; then pass flag-equals-form
else fail flag-equals-form "outputs differ"; fi

# ---- stdin ----
timeout 60 "$KERNLINT" --format json --stdin-filename kern/k.metal - <"$tmp/bf.metal" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" != 2 ] && [ "$("$JSON_GET" "$tmp/out" files.0.path)" = kern/k.metal ]; then
  pass stdin-filename
else fail stdin-filename "exit $rc, $(head -c 300 "$tmp/out")"; fi
timeout 60 "$KERNLINT" --format json - <"$tmp/clean.metal" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && [ "$("$JSON_GET" "$tmp/out" files.0.path)" = "<stdin>" ]; then pass stdin-dash
else fail stdin-dash "exit $rc, $(head -c 300 "$tmp/out")"; fi
timeout 60 "$KERNLINT" --format json --stdin-filename only.metal <"$tmp/clean.metal" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && [ "$("$JSON_GET" "$tmp/out" files.0.path)" = only.metal ]; then
  pass stdin-filename-alone
else fail stdin-filename-alone "exit $rc"; fi
if implemented bfloat-target; then
  timeout 60 "$KERNLINT" --stdin-filename kern/k.metal - <"$tmp/bf.metal" >"$tmp/out" 2>&1
  if grep -q '^kern/k\.metal:7:' "$tmp/out"; then pass stdin-positions
  else fail stdin-positions "$(head -c 300 "$tmp/out")"; fi
fi
run - -
expect_rc stdin-twice 2

# ---- folder walks ----
tree="$tmp/tree"
mkdir -p "$tree/b/deep" "$tree/a" "$tree/.git" "$tree/.hidden" "$tree/c"
for f in a/z.metal a/k.h b/x.hpp b/deep/y.metal c/m.metal top.metal .git/no.metal \
  .hidden/no.metal a/.dot.metal; do cp "$tmp/clean.metal" "$tree/$f"; done
echo "not a kernel" >"$tree/a/readme.txt"
cp "$tmp/clean.metal" "$tree/c/host.mm"
ln -s .. "$tree/c/loop"
ln -s ../a "$tree/c/alias"
run --format json "$tree"
expect_rc walk-exit 0
got=""
n=$("$JSON_GET" "$tmp/out" 'files#')
for ((i = 0; i < n; i++)); do got="$got $("$JSON_GET" "$tmp/out" "files.$i.path")"; done
want=""
for f in a/k.h a/z.metal b/deep/y.metal b/x.hpp c/host.mm c/m.metal top.metal; do
  want="$want $tree/$f"
done
if [ "$got" = "$want" ]; then pass walk-sorted-filtered
else fail walk-sorted-filtered "got:$got want:$want"; fi
run --format json "$tree/c" "$tree/b" "$tree/a" "$tree/top.metal"
cp "$tmp/out" "$tmp/walk2"
run --format json "$tree/top.metal" "$tree/a" "$tree/b" "$tree/c"
if cmp -s "$tmp/walk2" "$tmp/out"; then pass walk-order-independent
else fail walk-order-independent "argument order changed the output"; fi
(cd "$tree" && timeout 60 "$KERNLINT" --format json . >"$tmp/out" 2>"$tmp/err")
if [ "$("$JSON_GET" "$tmp/out" files.0.path)" = a/k.h ]; then pass walk-dot-relative
else fail walk-dot-relative "first path $("$JSON_GET" "$tmp/out" files.0.path)"; fi
run --format json "$tree/a/readme.txt" "$tree/c/host.mm"
if [ "$("$JSON_GET" "$tmp/out" 'files#')" = 2 ]; then pass named-any-extension
else fail named-any-extension "$(cat "$tmp/err")"; fi
run --format json "$tree/a/z.metal" "$tree/a"
if [ "$("$JSON_GET" "$tmp/out" 'files#')" = 2 ]; then pass named-and-walked-once
else fail named-and-walked-once "files: $("$JSON_GET" "$tmp/out" 'files#')"; fi

# ---- --output ----
outdir="$tmp/outdir"
mkdir -p "$outdir"
for fmt in text json sarif; do
  timeout 60 "$KERNLINT" --format $fmt -q "$tree" "$tmp/bf.metal" >"$tmp/stdout.$fmt" 2>/dev/null
  run --format $fmt -q --output "$outdir/report.$fmt" "$tree" "$tmp/bf.metal"
  if [ ! -s "$tmp/out" ] && cmp -s "$tmp/stdout.$fmt" "$outdir/report.$fmt"; then
    pass "output-$fmt"
  else fail "output-$fmt" "file differs from stdout (exit $rc)"; fi
done
echo old >"$outdir/report.json"
run --format json --output="$outdir/report.json" "$tmp/clean.metal"
if [ "$("$JSON_GET" "$outdir/report.json" files.0.path)" = "$tmp/clean.metal" ]; then
  pass output-replaces
else fail output-replaces "old content kept"; fi
left=$(ls -A "$outdir" | tr '\n' ' ')
if [ "$left" = "report.json report.sarif report.text " ]; then pass output-no-temp-files
else fail output-no-temp-files "folder has: $left"; fi
run --output "$tmp/nowhere/r.json" "$tmp/clean.metal"
if [ "$rc" = 2 ] && [ ! -e "$tmp/nowhere" ] && [ "$(lines "$tmp/err")" = 1 ]; then
  pass output-bad-folder
else fail output-bad-folder "exit $rc, stderr: $(cat "$tmp/err")"; fi
run --format json --output "$outdir/part.json" "$tmp/clean.metal" "$tmp/missing.metal"
if [ "$rc" = 2 ] && [ "$("$JSON_GET" "$outdir/part.json" 'errors#')" = 1 ]; then
  pass output-with-errors
else fail output-with-errors "exit $rc"; fi

cp "$tmp/clean.metal" "$outdir/src.metal"
run --output "$outdir/src.metal" "$outdir"
if [ "$rc" = 2 ] && cmp -s "$tmp/clean.metal" "$outdir/src.metal" &&
  grep -q 'overwrite' "$tmp/err"; then pass output-not-an-input
else fail output-not-an-input "exit $rc, stderr: $(cat "$tmp/err")"; fi
run --format json --output /dev/stdout "$tmp/clean.metal"
if [ "$rc" = 0 ] && [ "$("$JSON_GET" "$tmp/out" files.0.path)" = "$tmp/clean.metal" ]; then
  pass output-to-device
else fail output-to-device "exit $rc, stderr: $(cat "$tmp/err")"; fi
# A symlink is written through, even a dangling one (the report is what it points at); a
# relative link is read from its own folder, not the working one.
links="$tmp/links"
mkdir -p "$links/sub"
ln -s "$links/real.json" "$links/abs.json"
ln -s sub/r.json "$links/rel.json"
run --format json --output "$links/abs.json" "$tmp/clean.metal"
if [ "$rc" = 0 ] && [ -L "$links/abs.json" ] &&
  [ "$("$JSON_GET" "$links/real.json" files.0.path)" = "$tmp/clean.metal" ]; then
  pass output-dangling-symlink
else fail output-dangling-symlink "exit $rc, $(ls -l "$links"), stderr: $(cat "$tmp/err")"; fi
run --format json --output "$links/rel.json" "$tmp/clean.metal"
if [ "$rc" = 0 ] && [ -L "$links/rel.json" ] &&
  [ "$("$JSON_GET" "$links/sub/r.json" files.0.path)" = "$tmp/clean.metal" ]; then
  pass output-dangling-relative-symlink
else fail output-dangling-relative-symlink "exit $rc, $(ls -lR "$links")"; fi
echo old >"$links/real.json"
run --format json --output "$links/abs.json" "$tmp/clean.metal"
if [ "$rc" = 0 ] && [ -L "$links/abs.json" ] &&
  [ "$("$JSON_GET" "$links/real.json" files.0.path)" = "$tmp/clean.metal" ]; then
  pass output-symlink
else fail output-symlink "exit $rc, $(ls -l "$links")"; fi
ln -s loop2 "$links/loop1"
ln -s loop1 "$links/loop2"
run --output "$links/loop1" "$tmp/clean.metal"
if [ "$rc" = 2 ] && [ -L "$links/loop1" ] && [ "$(lines "$tmp/err")" = 1 ]; then
  pass output-symlink-loop
else fail output-symlink-loop "exit $rc, stderr: $(cat "$tmp/err")"; fi
left=$(ls -A "$links" "$links/sub" | tr '\n' ' ')
case "$left" in *.XXXXXX* | *.json.*) fail output-symlink-no-temp-files "left: $left" ;;
*) pass output-symlink-no-temp-files ;; esac

# ---- --stats ----
run --stats "$tmp/clean.metal"
if [ "$rc" = 0 ] && grep -q 'files: 1 linted' "$tmp/err" && grep -q 'time: ' "$tmp/err" &&
  grep -q 'bounds-guard' "$tmp/err"; then pass stats
else fail stats "$(cat "$tmp/err")"; fi

# ---- --config ----
run --config "$tmp/no.lintrc" "$tmp/clean.metal"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q 'no\.lintrc' "$tmp/err"; then
  pass config-missing
else fail config-missing "exit $rc, stderr: $(cat "$tmp/err")"; fi
run --config "$tmp" "$tmp/clean.metal"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q 'directory' "$tmp/err"; then
  pass config-directory
else fail config-directory "exit $rc, stderr: $(cat "$tmp/err")"; fi

[ "$failures" -eq 0 ]
