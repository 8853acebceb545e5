#!/usr/bin/env bash
# Every fixture under tests/fixtures must produce exactly the findings its `expect:` notes name;
# then the runner's own contract, on fixtures made here: every expectation is checked whatever
# the rule, and `kernlint-xfail` is strict (XFAIL on a mismatch, FAIL once the fixture passes,
# FAIL when kernlint itself breaks). Run from the repo root with KERNLINT and BUILD set.
. tests/lib.sh
runner="$BUILD/tools/fixtures"
if [ ! -x "$runner" ]; then
  echo "FAIL fixtures: $runner is not built (make BUILD=$BUILD $runner)"
  exit 1
fi
"$runner" tests/fixtures || failures=$((failures + 1))

# ---- the runner itself ----
fx="$tmp/fx"
mkdir -p "$fx"
# runfx FILE...: the runner's output lines in $tmp/fx.out, its exit status in $rc.
runfx() {
  "$runner" "$@" >"$tmp/fx.out" 2>&1
  rc=$?
}
# line_is NAME WANT: the runner printed exactly the one line WANT and exited as that line says.
line_is() {
  local want_rc=0
  [[ "$2" == FAIL* ]] && want_rc=1
  if [ "$(cat "$tmp/fx.out")" = "$2" ] && [ "$rc" = "$want_rc" ]; then pass "$1"
  else fail "$1" "exit $rc, printed: $(head -c 400 "$tmp/fx.out"); wanted: $2"; fi
}
# A clean kernel, with TAIL appended to line 7 (the store) and the lines EXTRA after the body.
clean_kernel() { # FILE TAIL [EXTRA]
  cat >"$1" <<EOF
#include <metal_stdlib>
using namespace metal;

kernel void add_one(device const float *a [[buffer(0)]], device float *b [[buffer(1)]],
                    constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  b[gid] = a[gid] + 1.0f;$2
}
${3:-}
EOF
}
# An unguarded bfloat: bfloat-target reports lines 4 and 7 on the default target.
bf_kernel() { # FILE TAIL4 TAIL7 [EXTRA]
  cat >"$1" <<EOF
#include <metal_stdlib>
using namespace metal;

kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],$2
                  constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  b[gid] = bfloat(a[gid]);$3
}
${4:-}
EOF
}

# Every registered rule's expectation is checked: a clean kernel that expects all of them fails
# on each one. (A runner that skipped some rule would let that rule be switched off unnoticed.)
rules=$("$KERNLINT" --list-rules 2>/dev/null | awk 'NF { print $1 }' | tr '\n' ' ')
if [ -z "$rules" ]; then
  fail fixture-runner-checks-every-rule "kernlint --list-rules listed no rule"
else
  list=$(sed 's/ $//; s/ /, /g' <<<"$rules")
  clean_kernel "$fx/bad_every_rule.metal" " // expect: $list"
  want="FAIL $fx/bad_every_rule.metal: "
  for r in $rules; do want="${want}missing line 7 $r; "; done
  runfx "$fx/bad_every_rule.metal"
  line_is fixture-runner-checks-every-rule "${want%; }"
fi

# A known false negative: a mismatch is an XFAIL with the reason and the mismatch; exit 0.
clean_kernel "$fx/bad_xfail_negative.metal" " // expect: bfloat-target" \
  "// kernlint-xfail-missing: a made-up false negative"
runfx "$fx/bad_xfail_negative.metal"
line_is fixture-runner-xfail-negative "XFAIL $fx/bad_xfail_negative.metal: a made-up false \
negative (missing line 7 bfloat-target)"

# The marker names the way kernlint is wrong: one for false positives does not excuse a lost
# detection, and one for a false negative does not excuse an extra finding.
clean_kernel "$fx/bad_xfail_lost.metal" " // expect: bfloat-target" \
  "// kernlint-xfail: made-up false positives"
runfx "$fx/bad_xfail_lost.metal"
line_is fixture-runner-xfail-pins-kind "FAIL $fx/bad_xfail_lost.metal: marked kernlint-xfail \
(known false positives), but an expected finding is missing: missing line 7 bfloat-target"

# A known false positive, with the marker in a Python-style comment of a .py file.
cat >"$fx/good_xfail_positive.py" <<'EOF'
import mlx.core as mx
# kernlint-xfail: a made-up false positive
k = mx.fast.metal_kernel(name="k", input_names=["x"], output_names=["y"],
                         source="uint i = thread_position_in_grid.x; y[i] = x[i];")
def f(x, n):
    return k(inputs=[x], grid=((n + 31) // 32 * 32, 1, 1), threadgroup=(32, 1, 1))
EOF
runfx "$fx/good_xfail_positive.py"
if [ "$rc" = 0 ] && grep -qxE "XFAIL $fx/good_xfail_positive\.py: a made-up false positive \
\(unexpected line 4 bounds-guard \(.+\)\)" "$tmp/fx.out" && [ "$(wc -l <"$tmp/fx.out")" = 1 ]; then
  pass fixture-runner-xfail-positive-python
else fail fixture-runner-xfail-positive-python "exit $rc, printed: $(head -c 400 "$tmp/fx.out")"; fi

# Strict: a marked fixture that matches its annotations fails, in MSL and in Python.
bf_kernel "$fx/bad_xfail_fixed.metal" " // expect: bfloat-target" " // expect: bfloat-target" \
  "// kernlint-xfail: fixed since"
runfx "$fx/bad_xfail_fixed.metal"
line_is fixture-runner-xfail-strict \
  "FAIL $fx/bad_xfail_fixed.metal: marked kernlint-xfail but passes now; remove the marker"
printf 'import math\n# kernlint-xfail: fixed since\n' >"$fx/good_xfail_fixed.py"
runfx "$fx/good_xfail_fixed.py"
line_is fixture-runner-xfail-strict-python \
  "FAIL $fx/good_xfail_fixed.py: marked kernlint-xfail but passes now; remove the marker"

# A marker must give its reason: the same clean fixture passes without the marker, fails with
# an empty one.
clean_kernel "$fx/good_plain.metal" ""
clean_kernel "$fx/good_no_reason.metal" "" "// kernlint-xfail:   "
runfx "$fx/good_plain.metal"
if [ "$(cat "$tmp/fx.out")" = "PASS $fx/good_plain.metal" ]; then
  runfx "$fx/good_no_reason.metal"
  line_is fixture-runner-xfail-needs-reason \
    "FAIL $fx/good_no_reason.metal: line 9: kernlint-xfail gives no reason"
else fail fixture-runner-xfail-needs-reason "the unmarked fixture: $(head -c 300 "$tmp/fx.out")"
fi

# The marker covers wrong findings only, never a broken kernlint: the XFAIL fixture above FAILs
# when kernlint (wrapped here) crashes or exits with a sanitizer's status after its report.
real="$KERNLINT"
printf '#!/bin/sh\n"%s" "$@"\nkill -SEGV $$\n' "$real" >"$tmp/segv-kernlint"
printf '#!/bin/sh\n"%s" "$@"\nexit 86\n' "$real" >"$tmp/exit86-kernlint"
chmod +x "$tmp/segv-kernlint" "$tmp/exit86-kernlint"
runfx "$fx/bad_xfail_negative.metal"
if grep -q '^XFAIL ' "$tmp/fx.out"; then
  KERNLINT="$tmp/segv-kernlint" runfx "$fx/bad_xfail_negative.metal"
  segv="$rc $(cat "$tmp/fx.out")"
  KERNLINT="$tmp/exit86-kernlint" runfx "$fx/bad_xfail_negative.metal"
  ex86="$rc $(cat "$tmp/fx.out")"
  if [[ "$segv" == "1 FAIL $fx/bad_xfail_negative.metal: kernlint was killed by signal 11:"* ]] &&
    [[ "$ex86" == "1 FAIL $fx/bad_xfail_negative.metal: kernlint exited with status 86:"* ]]; then
    pass fixture-runner-xfail-not-crashes
  else fail fixture-runner-xfail-not-crashes "got: $segv | $ex86"; fi
else fail fixture-runner-xfail-not-crashes "no XFAIL to start from: $(head -c 300 "$tmp/fx.out")"
fi

[ "$failures" -eq 0 ]
