#!/usr/bin/env bash
# The suite, tested:
#   - Against a stub kernlint that prints nothing and exits 0, every check of every other
#     tests/*.test.sh (the fixture runner included, through fixtures.test.sh) must FAIL, and each
#     file must exit non-zero. A check that passes there would pass a kernlint that does nothing.
#     Exempt, by name: the checks that drive the emitters through their own tool, emit-sample,
#     and the proofs' self-checks and mutation checks, which test the proofs themselves and
#     never run kernlint; and whole files that never run kernlint (exempt_files).
#   - tests/run.sh counts PASS, FAIL, SKIP and XFAIL lines, and turns a non-zero exit without a
#     FAIL line, a test that prints no result and a sanitizer report into FAILs.
# Run from the repo root with KERNLINT and BUILD set (tests/run.sh does).
. tests/lib.sh
# This runs tests/run.sh, which runs the tests/*.test.sh it is given: never this file again.
if [ -n "${KL_SUITE_TEST:-}" ]; then
  skip suite "run from inside tests/suite.test.sh"
  exit 0
fi
export KL_SUITE_TEST=1
# It runs every test against a stub kernlint, the same in every build flavour: in make check's
# second flavour it has run already (see the Makefile's CHECK_AGAIN). `make asan` alone runs it.
if [ -n "${KL_CHECK_AGAIN:-}" ]; then
  skip suite "ran in this make check's release flavour (the stub is the same in every build)"
  exit 0
fi

# FILE:CHECK, for the test files' checks that never run kernlint: emit-sample output, the
# proofs' checks of themselves, action.yml's structure and the man page's rendering.
exempt=(
  proofs:selfcheck-compare-dump proofs:selfcheck-strided-reference proofs:mutation-bounds-guard
  proofs:mutation-bounds-guard-helper proofs:mutation-barrier-divergence
  proofs:mutation-barrier-divergence-defs
  proofs:mutation-uncoalesced-access proofs:mutation-half-accumulator proofs:selfcheck-race-pairs
  proofs:mutation-threadgroup-race-barrier proofs:mutation-threadgroup-race-loop-barrier
  proofs:mutation-threadgroup-race-same-value
  badinput:dangling-symlink-loader
  output:text-format output:text-no-escapes output:text-color output:json-parses
  output:json-version output:json-path output:json-count output:json-rule output:json-severity
  output:json-message output:json-line output:json-column output:json-end-line
  output:json-end-column output:json-unicode-column output:json-multiline-end
  output:json-multiline-end-col output:json-related-message output:json-related-span
  output:json-no-related output:json-error output:json-summary output:json-key-order
  output:deterministic-sample output:sarif-artifact-locations output:sarif-artifact-location-order
  output:json-as-whole-sample sarif:sarif-as-whole-sample
  sarif:sarif-valid-sample sarif:schema sarif:sarif-version sarif:one-run sarif:driver-name
  sarif:driver-version sarif:driver-semver sarif:driver-no-information-uri sarif:column-kind
  sarif:srcroot sarif:result-count sarif:results-shape sarif:result-uri sarif:result-uri-escaped
  sarif:result-level sarif:result-related sarif:result-related-message sarif:fingerprint-repeats
  sarif:artifacts sarif:execution-failed sarif:notification-count sarif:notification-level
  sarif:fingerprint-stable
  action:action-yml-valid action:action-scripts-parse action:action-fail-on-invalid
  manpage:manpage-renders
)
# Test files that never run kernlint at all: they check the source tree (layout: include cycles,
# file sizes, header comments; clang: the sources through clang's front end, the build's
# flags; links: the Markdown's relative links), so a stub cannot make them fail.
exempt_files=(layout clang links)
# Test files being made to fail under the stub by other work: their checks that still pass are
# XFAIL, not FAIL. Strict: once such a file fails entirely, its entry must go.
pending=()
member() { # WORD LIST...
  local w=$1 x
  shift
  for x in "$@"; do [ "$x" = "$w" ] && return 0; done
  return 1
}

# ---- every test file against the stub ----
stub="$tmp/stub/kernlint"
mkdir -p "$tmp/stub"
printf '#!/bin/sh\nexit 0\n' >"$stub"
chmod +x "$stub"
names=()
for t in tests/*.test.sh; do
  n=$(basename "$t" .test.sh)
  [ "$n" = suite ] || member "$n" "${exempt_files[@]}" || names+=("$n")
done
# In parallel: the files are independent, and run one after the other they would add the time
# of the slow ones (Oclgrind, the SARIF validator) a second time.
for n in "${names[@]}"; do
  (
    KERNLINT="$stub" timeout 600 bash "tests/$n.test.sh" >"$tmp/$n.log" 2>&1
    echo $? >"$tmp/$n.rc"
  ) &
done
wait
for n in "${names[@]}"; do
  rc=$(cat "$tmp/$n.rc")
  leaked=() count=0
  while read -r name; do
    member "$n:$name" "${exempt[@]}" || leaked+=("$name")
  done < <(awk '/^PASS / { sub(/:$/, "", $2); print $2 }' "$tmp/$n.log")
  nfail=$(grep -c '^FAIL' "$tmp/$n.log")
  count=${#leaked[@]}
  shown=$(printf ' %s' "${leaked[@]+"${leaked[@]}"}" | cut -c1-600)
  if member "$n" "${pending[@]}"; then
    if [ "$count" -gt 0 ]; then
      echo "XFAIL suite-stub-$n: $count check(s) still pass under a stub kernlint:$shown"
    else fail "suite-stub-$n" "fails under the stub now: remove it from pending in $0"; fi
  elif [ "$count" -gt 0 ]; then
    fail "suite-stub-$n" "$count check(s) pass under a stub kernlint that prints nothing:$shown"
  elif [ "$rc" = 0 ] || [ "$nfail" = 0 ]; then
    fail "suite-stub-$n" "under the stub: exit $rc, $nfail FAIL lines; $(tail -3 "$tmp/$n.log")"
  else pass "suite-stub-$n"; fi
done
# The exemptions stay true: each names a check that exists and passes under the stub.
stale=""
for e in "${exempt[@]}"; do
  f=${e%%:*} c=${e#*:}
  awk -v c="$c" '/^PASS / { sub(/:$/, "", $2); if ($2 == c) found = 1 } END { exit !found }' \
    "$tmp/$f.log" 2>/dev/null || stale="$stale $e"
done
if [ -z "$stale" ]; then pass suite-stub-exemptions
else fail suite-stub-exemptions "not a check that passes under the stub:$stale"; fi

# ---- tests/run.sh ----
rs="$tmp/run-sh"
mkdir -p "$rs/flavour"
# runsh NAME WANT_RC WANT_OUTPUT TEST...: tests/run.sh on made-up tests, output compared whole.
# The caller's sanitizer options are dropped: run.sh's own must be the ones that act.
runsh() {
  local name=$1 want_rc=$2 want=$3 got rc
  shift 3
  got=$(env -u ASAN_OPTIONS -u UBSAN_OPTIONS tests/run.sh "$rs/flavour" "$@" 2>&1)
  rc=$?
  if [ "$rc" = "$want_rc" ] && [ "$got" = "$want" ]; then pass "$name"
  else fail "$name" "exit $rc, printed: $(tr '\n' '|' <<<"$got") wanted: $(tr '\n' '|' <<<"$want")"
  fi
}
cat >"$rs/mixed.test.sh" <<'EOF'
echo "PASS a"
echo "  PASS indented lines are not results"
echo "PASS b: detail"
echo "SKIP c: no such device here"
echo "XFAIL d: a known bug"
echo "XFAIL e: another"
EOF
runsh run-sh-counts 0 "[mixed] SKIP c: no such device here
[mixed] XFAIL d: a known bug
[mixed] XFAIL e: another
skipped: 1 SKIP, 2 XFAIL
flavour: 2 passed, 0 failed, 3 skipped" "$rs/mixed.test.sh"
printf 'echo "PASS a"\nexit 3\n' >"$rs/status.test.sh"
printf 'echo "a line that is no result"\n' >"$rs/silent.test.sh"
runsh run-sh-status-and-silence 1 "[status] FAIL status: exited with status 3 without a FAIL line
[silent] FAIL silent: produced no results
    a line that is no result
skipped: 0 SKIP, 0 XFAIL
flavour: 1 passed, 2 failed, 0 skipped" "$rs/status.test.sh" "$rs/silent.test.sh"

# A sanitizer report is a FAIL even when the test lets it go, and its exit status is 86, which
# no kernlint run expects (1 would read as "findings").
cat >"$rs/asan.c" <<'EOF'
#include <stdlib.h>
int main(void) {
  volatile char *p = malloc(8);
  free((void *)p);
  return p[0]; /* use after free */
}
EOF
cat >"$rs/ubsan.c" <<'EOF'
#include <limits.h>
int main(int argc, char **argv) {
  int x = INT_MAX;
  x += argc; /* signed overflow */
  return x == 0 && argv;
}
EOF
cc=${CC:-cc}
if $cc -g -fsanitize=address -o "$rs/asan" "$rs/asan.c" 2>/dev/null &&
  $cc -g -fsanitize=undefined -fno-sanitize-recover=all -o "$rs/ubsan" "$rs/ubsan.c" 2>/dev/null
then
  cat >"$rs/san.test.sh" <<EOF
for p in asan ubsan; do
  "$rs/\$p" >/dev/null 2>&1
  rc=\$?
  if [ "\$rc" = 86 ]; then echo "PASS \$p-status"; else echo "FAIL \$p-status: exit \$rc"; fi
done
EOF
  got=$(env -u ASAN_OPTIONS -u UBSAN_OPTIONS tests/run.sh "$rs/flavour" "$rs/san.test.sh" 2>&1)
  rc=$?
  if [ "$rc" = 1 ] && [ "$(grep -c '^\[san\] FAIL san: a sanitizer reported' <<<"$got")" = 2 ] &&
    grep -Eq 'AddressSanitizer: heap-use-after-free|runtime error: signed integer overflow' \
      <<<"$got" &&
    [ "$(tail -1 <<<"$got")" = "flavour: 2 passed, 2 failed, 0 skipped" ]; then
    pass run-sh-sanitizer
  else fail run-sh-sanitizer "exit $rc, printed: $(head -c 1500 <<<"$got" | tr '\n' '|')"; fi
else skip run-sh-sanitizer "$cc cannot build with -fsanitize=address,undefined here"; fi

[ "$failures" -eq 0 ]
