#!/usr/bin/env bash
# The command line: information flags, exit codes, --fail-on/--exit-zero, stdin, folder walks,
# --output, --quiet/--stats and colour. Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
# run ARGS...: kernlint with a time limit; sets $rc, output in $tmp/out and $tmp/err.
run() {
  timeout 60 "$KERNLINT" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# expect_rc NAME WANT_RC: checks $rc, that nothing hung, and that kernlint printed something
# (every run here prints a report, a summary or an error: silence is a program that did nothing).
expect_rc() {
  if [ "$rc" = 124 ]; then fail "$1" "timed out"
  elif [ "$rc" != "$2" ]; then fail "$1" "exit $rc, expected $2; stderr: $(head -c 300 "$tmp/err")"
  elif [ ! -s "$tmp/out" ] && [ ! -s "$tmp/err" ]; then fail "$1" "exit $rc but printed nothing"
  else pass "$1"; fi
}
# rc_is WANT: quietly, whether the last run exited WANT (for checks that test more than that).
rc_is() { [ "$rc" = "$1" ]; }
lines() { if [ -s "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }

ids="bounds-guard threadgroup-size half-accumulator barrier-divergence uncoalesced-access
bfloat-target threadgroup-race unused-suppression unresolved-source"

sample_good_metal >"$tmp/clean.metal"
cat >"$tmp/bf.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],
                  constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  bfloat v = bfloat(a[gid]);
  b[gid] = v;
}
#if defined(__HAVE_BFLOAT__) // the project builds below MSL 3.1 too: it guards bfloat
typedef bfloat guarded_bf_t;
#endif
EOF

# ---- information flags ----
run --version
want=$(sed -n 's/^#define KL_VERSION "\(.*\)"$/\1/p' analyzer/core/version.h)
expect_rc version-exit 0
if rc_is 0 && [ "$(cat "$tmp/out")" = "kernlint $want" ]; then pass version-text
else fail version-text "exit $rc, got '$(cat "$tmp/out")', expected 'kernlint $want'"; fi

run --help
expect_rc help-exit 0
missing=""
for f in --list-rules --explain --target --format --output --config --fail-on --exit-zero \
  --assume-rounded-grid --quiet --stats --no-color --color --version --help --stdin-filename; do
  grep -q -- "$f" "$tmp/out" || missing="$missing $f"
done
if grep -q '^Usage: kernlint' "$tmp/out" && [ -z "$missing" ]; then pass help-text
else fail help-text "missing:$missing"; fi
cp "$tmp/out" "$tmp/help"
run -h
if rc_is 0 && [ -s "$tmp/out" ] && cmp -s "$tmp/help" "$tmp/out"; then pass help-short
else fail help-short "exit $rc, or -h printed other than --help"; fi

run --list-rules
expect_rc list-rules-exit 0
cp "$tmp/out" "$tmp/rules"
for id in $ids; do
  if grep -Eq "^$id +(note|warning|error) " "$tmp/rules"; then pass "list-rules-$id"
  else fail "list-rules-$id" "no '$id LEVEL' line"; fi
done
# Every rule is implemented: none may be listed as a placeholder.
if [ ! -s "$tmp/rules" ]; then fail list-rules-all-implemented "no rule listed"
elif grep -q 'not yet implemented' "$tmp/rules"; then
  fail list-rules-all-implemented "$(grep 'not yet implemented' "$tmp/rules" | tr '\n' '|')"
else pass list-rules-all-implemented; fi

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
# -q leaves out the summary and nothing else: silent on a clean file, findings on a bad one.
run -q "$tmp/clean.metal"
quiet_clean="$rc $(wc -c <"$tmp/out") $(wc -c <"$tmp/err")"
run -q "$tmp/bf.metal"
if [ "$quiet_clean" = "0 0 0" ] && rc_is 1 && [ ! -s "$tmp/err" ] &&
  grep -q '\[bfloat-target\]$' "$tmp/out"; then pass quiet-clean
else fail quiet-clean "clean: exit, stdout, stderr bytes $quiet_clean; bad: exit $rc"; fi

run "$tmp/clean.metal" "$tmp/missing.metal"
expect_rc missing-file-exit 2
run --exit-zero "$tmp/missing.metal"
expect_rc exit-zero-keeps-errors 2
run --bogus "$tmp/clean.metal"
expect_rc usage-exit 2
run
expect_rc no-paths-exit 2

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
if rc_is 1 && [ ! -s "$tmp/err" ] && grep -q '\[bfloat-target\]$' "$tmp/out"; then
  pass quiet-findings
else fail quiet-findings "exit $rc, stderr: $(cat "$tmp/err")"; fi
# apple9 (M3) has bfloat arithmetic and MSL 3.1 always has bfloat: together they silence the rule
# ((a) holds on every target, (b) only before apple9).
run --target apple9 --metal-version 3.1 "$tmp/bf.metal"
expect_rc target-apple9 0
if [ ! -s "$tmp/out" ] && grep -qx 'No problems found in 1 file\.' "$tmp/err"; then
  pass target-apple9-clean
else fail target-apple9-clean "stdout: $(head -c 200 "$tmp/out") stderr: $(cat "$tmp/err")"; fi
# bfloat arithmetic on M1 with MSL 3.1 is only the (b) note: a note alone does not fail a default
# run (--fail-on warning), and does with --fail-on note.
cat >"$tmp/bfnote.metal" <<'EOF2'
#include <metal_stdlib>
using namespace metal;
kernel void sq(device bfloat *x [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  x[gid] = x[gid] * x[gid];
}
EOF2
run --metal-version 3.1 "$tmp/bfnote.metal"
expect_rc note-alone-passes 0
if grep -q 'bfnote\.metal:4:[0-9]*: note: .*emulated on m1.*\[bfloat-target\]$' "$tmp/out"; then
  pass note-alone-reported
else fail note-alone-reported "stdout: $(head -c 300 "$tmp/out")"; fi
run --metal-version 3.1 --fail-on note "$tmp/bfnote.metal"
expect_rc note-fail-on-note 1
run --metal-version 3.0 "$tmp/bfnote.metal"
expect_rc metal-version-30-warns 1
run --metal-version 3 "$tmp/bfnote.metal"
expect_rc metal-version-invalid 2
# Colour: escapes only when asked, and the findings are there either way.
finding=$'bf\\.metal:[0-9]+:[0-9]+:.*warning:.*bfloat-target'
colored() { # NAME WANT(yes|no) WHY
  local esc=no
  grep -q $'\033\\[' "$tmp/out" && esc=yes
  if ! rc_is 1 || ! grep -Eq "$finding" "$tmp/out"; then fail "$1" "exit $rc, no finding reported"
  elif [ "$esc" != "$2" ]; then fail "$1" "$3"
  else pass "$1"; fi
}
run --color=always "$tmp/bf.metal"
colored color-always yes "no escape sequence"
NO_COLOR=1 timeout 60 "$KERNLINT" --color always "$tmp/bf.metal" >"$tmp/out" 2>"$tmp/err"
rc=$?
colored color-always-beats-no-color yes "no escape sequence"
run --color=always --no-color "$tmp/bf.metal"
colored no-color no "escape sequence present"
run "$tmp/bf.metal"
colored color-auto-pipe no "escape sequence on a pipe"
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
rc1=$rc
run --format json "$tmp/clean.metal"
if [ "$rc1 $rc" = "0 0" ] && cmp -s "$tmp/eq1" "$tmp/out" && [ -s "$tmp/out" ]; then
  pass flag-equals-form
else fail flag-equals-form "exits $rc1 $rc, or the outputs differ"; fi

# ---- stdin ----
timeout 60 "$KERNLINT" --format json --stdin-filename kern/k.metal - <"$tmp/bf.metal" \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" = 1 ] && [ "$("$JSON_GET" "$tmp/out" files.0.path)" = kern/k.metal ]; then
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
timeout 60 "$KERNLINT" --stdin-filename kern/k.metal - <"$tmp/bf.metal" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q '^kern/k\.metal:7:' "$tmp/out"; then pass stdin-positions
else fail stdin-positions "exit $rc, $(head -c 300 "$tmp/out")"; fi
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
rc2=$rc
run --format json "$tree/top.metal" "$tree/a" "$tree/b" "$tree/c"
if [ "$rc2 $rc" = "0 0" ] && [ "$("$JSON_GET" "$tmp/walk2" 'files#')" = 7 ] &&
  cmp -s "$tmp/walk2" "$tmp/out"; then pass walk-order-independent
else fail walk-order-independent "exits $rc2 $rc, or argument order changed the output"; fi
(cd "$tree" && timeout 60 "$KERNLINT" --format json . >"$tmp/out" 2>"$tmp/err")
rc=$?
if rc_is 0 && [ "$("$JSON_GET" "$tmp/out" files.0.path)" = a/k.h ]; then pass walk-dot-relative
else fail walk-dot-relative "exit $rc, first path $("$JSON_GET" "$tmp/out" files.0.path)"; fi
run --format json "$tree/a/readme.txt" "$tree/c/host.mm"
if rc_is 0 && [ "$("$JSON_GET" "$tmp/out" 'files#')" = 2 ]; then pass named-any-extension
else fail named-any-extension "exit $rc, $(cat "$tmp/err")"; fi
run --format json "$tree/a/z.metal" "$tree/a"
if rc_is 0 && [ "$("$JSON_GET" "$tmp/out" 'files#')" = 2 ]; then pass named-and-walked-once
else fail named-and-walked-once "exit $rc, files: $("$JSON_GET" "$tmp/out" 'files#')"; fi

# ---- --output ----
outdir="$tmp/outdir"
mkdir -p "$outdir"
for fmt in text json sarif; do
  timeout 60 "$KERNLINT" --format $fmt -q "$tree" "$tmp/bf.metal" >"$tmp/stdout.$fmt" 2>/dev/null
  rc1=$?
  run --format $fmt -q --output "$outdir/report.$fmt" "$tree" "$tmp/bf.metal"
  if [ "$rc1 $rc" = "1 1" ] && [ ! -s "$tmp/out" ] && [ -s "$tmp/stdout.$fmt" ] &&
    cmp -s "$tmp/stdout.$fmt" "$outdir/report.$fmt"; then
    pass "output-$fmt"
  else fail "output-$fmt" "exits $rc1 $rc (expected 1 1), or the file differs from stdout"; fi
done
echo old >"$outdir/report.json"
run --format json --output="$outdir/report.json" "$tmp/clean.metal"
if rc_is 0 && [ "$("$JSON_GET" "$outdir/report.json" files.0.path)" = "$tmp/clean.metal" ]; then
  pass output-replaces
else fail output-replaces "exit $rc, or old content kept"; fi
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
# Only meaningful when the reports above were written through the links.
left=$(ls -A "$links" "$links/sub" | tr '\n' ' ')
if [ "$("$JSON_GET" "$links/real.json" 'files#')" != 1 ] ||
  [ "$("$JSON_GET" "$links/sub/r.json" 'files#')" != 1 ]; then
  fail output-symlink-no-temp-files "no report was written through the links"
else
  case "$left" in *.XXXXXX* | *.json.*) fail output-symlink-no-temp-files "left: $left" ;;
  *) pass output-symlink-no-temp-files ;; esac
fi

# ---- --stats ----
# The file count, the totals, one line per registered rule whose count is the number of findings
# printed with that rule, and the time.
run --stats "$tmp/clean.metal" "$tmp/bf.metal"
why=""
rc_is 1 || why="exit $rc, expected 1; "
grep -qx '  files: 2 linted, 0 failed, 0 skipped by config' "$tmp/err" || why="${why}files line; "
total=$(grep -c '\]$' "$tmp/out")
[ "$total" -ge 1 ] || why="${why}no findings printed; "
grep -qx "  findings: $total (0 error, $total warning, 0 note)" "$tmp/err" ||
  why="${why}no 'findings: $total (0 error, $total warning, 0 note)' line; "
for id in $(awk 'NF { print $1 }' "$tmp/rules"); do
  n=$(grep -c "\[$id\]\$" "$tmp/out")
  grep -Eq "^    $id +$n\$" "$tmp/err" || why="${why}no '$id $n' line; "
done
[ -s "$tmp/rules" ] || why="${why}no rules listed; "
grep -Eq '^  time: [0-9]+\.[0-9]+ s$' "$tmp/err" || why="${why}no 'time: N.NNN s' line; "
if [ -z "$why" ]; then pass stats
else fail stats "$why stderr: $(head -c 600 "$tmp/err" | tr '\n' '|')"; fi

# ---- --config ----
run --config "$tmp/no.lintrc" "$tmp/clean.metal"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q 'no\.lintrc' "$tmp/err"; then
  pass config-missing
else fail config-missing "exit $rc, stderr: $(cat "$tmp/err")"; fi
run --config "$tmp" "$tmp/clean.metal"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && grep -q 'directory' "$tmp/err"; then
  pass config-directory
else fail config-directory "exit $rc, stderr: $(cat "$tmp/err")"; fi

# A finding that holds in some specialisations of a kernel only is reported once and names them.
"$KERNLINT" -q tests/fixtures/real/bounds-guard/bad_one_specialisation.metal >"$tmp/spec" 2>&1
if [ "$(grep -c ' \[bounds-guard\]$' "$tmp/spec")" = 1 ] && grep -qF '(where W = 4) [bounds-guard]' "$tmp/spec"
then pass specialisation-named
else fail specialisation-named "$(head -c 400 "$tmp/spec")"; fi

# A barrier that diverges in some instantiations is reported once, naming those (host names).
"$KERNLINT" -q tests/fixtures/real/barrier-divergence/bad_some_instantiations.metal >"$tmp/bd" 2>&1
if [ "$(grep -c ' \[barrier-divergence\]$' "$tmp/bd")" = 1 ] &&
  grep -qF '`threadgroup_barrier` (in dot_rows4_f32 and dot_rows4_f16) after' "$tmp/bd" &&
  ! grep -q 'dot_rows1' "$tmp/bd"; then pass barrier-instantiations-named
else fail barrier-instantiations-named "$(head -c 400 "$tmp/bd")"; fi

# A (b) note at an instantiation or a Python binding has the bfloat arithmetic, in a helper or in
# the kernel's source string, as its related location.
"$KERNLINT" -q --metal-version 3.1 tests/fixtures/bfloat-target/bad_emulated_instantiation.metal \
  tests/fixtures/python/bad_bfloat_arguments.py >"$tmp/bfop" 2>&1
here='note: computes in bfloat here'
if grep -qx ".*/bad_emulated_instantiation\.metal:9:32: $here" "$tmp/bfop" &&
  grep -qx ".*/bad_bfloat_arguments\.py:13:41: $here" "$tmp/bfop"
then pass bfloat-op-related
else fail bfloat-op-related "$(head -c 600 "$tmp/bfop")"; fi

# A host name written as adjacent literals (`"rsum_" "f16"`, as macros that stamp out
# instantiations write it) is named as the host sees it: the model joins them.
printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' 'template <typename T>' \
  'kernel void rsum(device const T* x [[buffer(0)]], device T* y [[buffer(1)]],' \
  '                 constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {' \
  '  T acc = 0;' '  for (uint j = 0; j < n; ++j) acc += x[j * 64 + i];' '  y[i] = acc;' '}' \
  'template [[host_name("rsum_" "f32")]] kernel decltype(rsum<float>) rsum<float>;' \
  'template [[host_name("rsum_" "f16")]] kernel decltype(rsum<half>) rsum<half>;' >"$tmp/hn.metal"
"$KERNLINT" -q "$tmp/hn.metal" >"$tmp/hn" 2>&1
if grep -qF '`acc` is half in rsum_f16 (' "$tmp/hn" && ! grep -qF '"rsum_"' "$tmp/hn"
then pass host-name-joined
else fail host-name-joined "$(head -c 400 "$tmp/hn")"; fi

# One divergent return is one finding, at the first barrier it reaches: the next barrier it
# reaches is in the message and a SARIF related location, after the return itself.
"$KERNLINT" --format sarif --exit-zero \
  tests/fixtures/barrier-divergence/bad_attention_early_return.metal >"$tmp/bd.sarif" 2>/dev/null
r=runs.0.results
line=physicalLocation.region.startLine
got=$("$JSON_GET" "$tmp/bd.sarif" "$r#" "$r.0.locations.0.$line" "$r.0.relatedLocations.0.$line" \
  "$r.0.relatedLocations.1.$line" | tr '\n' ' ')
got=${got% }
if [ "$got" = "1 28 19 39" ] &&
  "$JSON_GET" "$tmp/bd.sarif" "$r.0.message.text" | grep -qF 'also reaches the barrier at line 39'
then pass barrier-one-per-return
else fail barrier-one-per-return "results, line, related lines: $got"; fi

# A loop condition that diverges through the back edge names the assignment of the previous
# iteration; one that a break of the previous iteration leaves names the break.
"$KERNLINT" -q tests/fixtures/real/barrier-divergence/bad_simdgroup_trip_count.metal \
  tests/fixtures/real/barrier-divergence/bad_break_after_last_barrier.metal >"$tmp/bd" 2>&1
if grep -qF 'depends on `n`, from the previous iteration (line 19): threads' "$tmp/bd" &&
  grep -qF 'depends on `v`, from the previous iteration (line 19): threads' "$tmp/bd"
then pass barrier-back-edge-named
else fail barrier-back-edge-named "$(head -c 600 "$tmp/bd")"; fi

# A header's templated kernel is specialised by the instantiations the run's other files make.
mkdir -p "$tmp/hdr"
sed -n '/^#include/,/^}/p' tests/fixtures/real/bounds-guard/bad_one_specialisation.metal \
  | sed 's|^template <int W>|template <int W>|; s| // expect: bounds-guard||' >"$tmp/hdr/fill.h"
printf '%s\n' '#include "fill.h"' \
  'template [[host_name("fill1")]] [[kernel]] decltype(fill_blocks<1>) fill_blocks<1>;' \
  >"$tmp/hdr/fill.metal"
alone=$("$KERNLINT" -q "$tmp/hdr/fill.h" 2>&1 | grep -c ' \[bounds-guard\]$')
both=$("$KERNLINT" -q "$tmp/hdr" 2>&1 | grep -c ' \[bounds-guard\]$')
if [ "$alone" = 1 ] && [ "$both" = 0 ]; then pass header-specialised
else fail header-specialised "alone: $alone findings (want 1), with its includer: $both (want 0)"; fi

# An empty include name before the header's (here in a comment) does not end the includer's list
# of includes: the header is still specialised by it.
mkdir -p "$tmp/hdr_empty"
cp "$tmp/hdr/fill.h" "$tmp/hdr_empty/fill.h"
printf '%s\n' '// #include ""' '#include "fill.h"' \
  'template [[host_name("fill1")]] [[kernel]] decltype(fill_blocks<1>) fill_blocks<1>;' \
  >"$tmp/hdr_empty/fill.metal"
alone=$("$KERNLINT" -q "$tmp/hdr_empty/fill.h" 2>&1 | grep -c ' \[bounds-guard\]$')
n=$("$KERNLINT" -q "$tmp/hdr_empty" 2>&1 | grep -c ' \[bounds-guard\]$')
if [ "$alone" = 1 ] && [ "$n" = 0 ]; then pass header-specialised-after-empty-include
else
  fail header-specialised-after-empty-include \
    "alone: $alone findings (want 1), with its includer: $n (want 0: W = 1 only)"
fi

# An include by a path from the project root (MLX: "mlx/backend/metal/kernels/defines.h")
# resolves from a folder above the file, so the instantiation macro it defines is known.
mkdir -p "$tmp/root/proj/kernels"
cp "$tmp/hdr/fill.h" "$tmp/root/proj/kernels/fill.h"
printf '%s\n' '#define instantiate_fill(w) \' \
  '  template [[host_name("fill" #w)]] [[kernel]] decltype(fill_blocks<w>) fill_blocks<w>;' \
  >"$tmp/root/proj/kernels/defines.h"
printf '%s\n' '#include "proj/kernels/defines.h"' '#include "proj/kernels/fill.h"' \
  'instantiate_fill(1)' >"$tmp/root/proj/kernels/fill.metal"
alone=$("$KERNLINT" -q "$tmp/root/proj/kernels/fill.h" 2>&1 | grep -c ' \[bounds-guard\]$')
n=$("$KERNLINT" -q "$tmp/root/proj/kernels" 2>&1 | grep -c ' \[bounds-guard\]$')
if [ "$alone" = 1 ] && [ "$n" = 0 ]; then pass root-path-include
else fail root-path-include "alone: $alone findings (want 1), with its includer: $n (want 0: W = 1 only)"; fi

# Only the bindings that decide a finding are named: bits, not group_size.
"$KERNLINT" -q tests/fixtures/real/uncoalesced-access/bad_constexpr_helper_wide.metal >"$tmp/where" 2>&1
if grep -qF '(where bits = 8) [uncoalesced-access]' "$tmp/where"; then pass where-minimal
else fail where-minimal "$(head -c 400 "$tmp/where")"; fi

# A lane-owned block is one finding that names its other lines, and a store through the
# address of an element (`*reinterpret_cast<device float4*>(&dst[b]) = v`) is a write.
"$KERNLINT" -q tests/fixtures/real/uncoalesced-access/bad_lane_block.metal >"$tmp/block" 2>&1
if grep -qF 'also lines 15-21, the same lane-owned block [uncoalesced-access]' "$tmp/block" &&
  grep -q ':71:.*lanes write `dst`.*also line 72, the same lane-owned block' "$tmp/block"; then
  pass lane-owned-block
else fail lane-owned-block "$(grep -F '[uncoalesced-access]' "$tmp/block" | head -c 600)"; fi

# A finding names the index that lacks the bound, also when a pointer carries it (`p = out + row *
# ld; p[c]`), and a finding in a helper names the call that gives it the coordinates.
printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' \
  'void put(device float* out, int ld, int n, uint3 tg, ushort lane) {' \
  '  const int row = 2 * tg.x + 1;' '  device float* p = out + row * ld;' \
  '  if (row < n) p[lane] = 1.0f;' '  p[lane + 32] = 0.0f;' '}' \
  'kernel void k(device float* out [[buffer(0)]], constant int& ld [[buffer(1)]],' \
  '              constant int& n [[buffer(2)]], uint3 tg [[threadgroup_position_in_grid]],' \
  '              ushort lane [[thread_index_in_simdgroup]]) {' '  put(out, ld, n, tg, lane);' '}' \
  >"$tmp/names.metal"
"$KERNLINT" "$tmp/names.metal" >"$tmp/names" 2>&1
if grep -qF '`p[lane + 32]` is indexed by `row`' "$tmp/names" &&
  grep -qF 'names.metal:12:3: note: the call whose arguments give the index' "$tmp/names"; then
  pass index-named
else fail index-named "$(head -c 600 "$tmp/names")"; fi

# One accumulator is one finding, at its loop update: its declaration and the simd_sum that sums
# it across lanes afterwards are related locations of it (SARIF relatedLocations), not findings.
"$KERNLINT" --format sarif --exit-zero -q \
  tests/fixtures/real/half-accumulator/bad_half_dot_simd_sum.metal >"$tmp/ha.sarif" 2>"$tmp/err"
r=runs.0.results
got="$("$JSON_GET" "$tmp/ha.sarif" "$r#") $("$JSON_GET" "$tmp/ha.sarif" \
  "$r.0.locations.0.physicalLocation.region.startLine")"
for i in 0 1; do
  rl="$r.0.relatedLocations.$i.physicalLocation.region.startLine"
  got="$got $("$JSON_GET" "$tmp/ha.sarif" "$rl")"
done
if [ "$got" = "1 12 10 14" ] &&
  "$JSON_GET" "$tmp/ha.sarif" "$r.0.relatedLocations.1.message.text" | grep -qF '`simd_sum`'; then
  pass half-related-simd-sum
else fail half-related-simd-sum "results, line, related lines: $got"; fi

# A finding that holds in several instantiations is one, naming them and the binding; a variable
# declared half outright names none, whatever the template binds.
"$KERNLINT" -q tests/fixtures/real/half-accumulator/bad_several_instantiations.metal >"$tmp/ha" 2>&1
printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' 'template <typename T>' \
  'kernel void s(device const T* x [[buffer(0)]], device T* y [[buffer(1)]],' \
  '              constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {' \
  '  half a = 0;' '  for (uint j = 0; j < n; ++j) a += half(x[j * 64 + i]);' '  y[i] = T(a);' '}' \
  'template [[host_name("s_f32")]] kernel decltype(s<float>) s<float>;' \
  'template [[host_name("s_f16")]] kernel decltype(s<half>) s<half>;' >"$tmp/ha_plain.metal"
"$KERNLINT" -q "$tmp/ha_plain.metal" >"$tmp/ha_plain" 2>&1
if [ "$(grep -c '\[half-accumulator\]' "$tmp/ha")" = 1 ] &&
  grep -qF 'is half in col_sum_f16 and col_sum_f16x4 (`T` = half or half4),' "$tmp/ha" &&
  [ "$(grep -c '\[half-accumulator\]' "$tmp/ha_plain")" = 1 ] &&
  grep -qF 'accumulator `a` is half and updated' "$tmp/ha_plain"; then
  pass half-names-instantiations
else fail half-names-instantiations "$(grep -h 'half-accumulator\]' "$tmp/ha" "$tmp/ha_plain")"; fi

# -j N: files are linted in parallel and output in the same order, byte for byte, as with -j 1:
# findings, errors and the summary, in every format, over every fixture and example (host files
# feeding MSL files, Python, bad inputs among them), and with a bad .lintrc in the walk.
mkdir -p "$tmp/jobs/badcfg"
cp "$tmp/clean.metal" "$tmp/jobs/badcfg/k.metal"
printf '[rules\n' >"$tmp/jobs/badcfg/.lintrc"
printf 'kernel void k() {}\n\0' >"$tmp/jobs/binary.metal"
: >"$tmp/jobs/empty.metal"
for fmt in text json sarif; do
  same=1
  timeout 120 "$KERNLINT" -j 1 --format "$fmt" --exit-zero tests/fixtures examples "$tmp/jobs" \
    >"$tmp/j1.out" 2>"$tmp/j1.err"
  rc1=$?
  for j in 2 3 8; do
    timeout 120 "$KERNLINT" -j "$j" --format "$fmt" --exit-zero tests/fixtures examples \
      "$tmp/jobs" >"$tmp/jn.out" 2>"$tmp/jn.err"
    rcn=$?
    if [ "$rcn" != "$rc1" ] || ! cmp -s "$tmp/j1.out" "$tmp/jn.out" ||
      ! cmp -s "$tmp/j1.err" "$tmp/jn.err"; then
      same=0
      fail "jobs-identical-$fmt" "-j $j: exit $rcn (-j 1: $rc1); $(diff "$tmp/j1.err" "$tmp/jn.err" |
        head -5) $(diff "$tmp/j1.out" "$tmp/jn.out" | head -5)"
      break
    fi
  done
  if [ "$same" = 1 ] && [ "$rc1" = 2 ] && [ -s "$tmp/j1.out" ]; then pass "jobs-identical-$fmt"
  elif [ "$same" = 1 ]; then
    fail "jobs-identical-$fmt" "-j 1 exited $rc1 (expected 2) or printed nothing"
  fi
done
# Standard input among files: read by the main thread, output in its place.
timeout 60 "$KERNLINT" -j 1 "$tmp/bf.metal" - "$tmp/clean.metal" <"$tmp/bf.metal" \
  >"$tmp/j1.out" 2>"$tmp/j1.err"
timeout 60 "$KERNLINT" -j 2 "$tmp/bf.metal" - "$tmp/clean.metal" <"$tmp/bf.metal" \
  >"$tmp/jn.out" 2>"$tmp/jn.err"
if cmp -s "$tmp/j1.out" "$tmp/jn.out" && cmp -s "$tmp/j1.err" "$tmp/jn.err" &&
  grep -q '^<stdin>:' "$tmp/jn.out"; then pass jobs-stdin
else fail jobs-stdin "$(diff "$tmp/j1.out" "$tmp/jn.out" | head -5)"; fi
run -j2 --format json "$tmp/clean.metal"
expect_rc jobs-attached 0
run --jobs=2 "$tmp/clean.metal"
expect_rc jobs-long 0
for bad in 0 x -1 2x ''; do
  run -j "$bad" "$tmp/clean.metal"
  if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ]; then
    pass "jobs-usage-'$bad'"
  else fail "jobs-usage-'$bad'" "exit $rc, stderr: $(cat "$tmp/err")"; fi
done

# A header several files of one run ask about is parsed once and its summary shared (kl_xdefs):
# the run's findings, at -j1 and -j2, are those of one run per file.
hh=tests/fixtures/barrier-divergence/header-helper
: >"$tmp/each.out"
for f in "$hh"/*.metal; do
  timeout 60 "$KERNLINT" -q --exit-zero "$f" >>"$tmp/each.out" 2>/dev/null
done
sort "$tmp/each.out" -o "$tmp/each.out"
for j in 1 2; do
  run -q --exit-zero -j "$j" "$hh"
  sort "$tmp/out" -o "$tmp/out"
  if [ "$rc" = 0 ] && grep -q barrier-divergence "$tmp/each.out" && cmp -s "$tmp/each.out" "$tmp/out"
  then pass "xdefs-shared-headers-j$j"
  else fail "xdefs-shared-headers-j$j" "exit $rc; $(diff "$tmp/each.out" "$tmp/out" | head -5)"; fi
done

[ "$failures" -eq 0 ]
