#!/usr/bin/env bash
# Runs the tests of one build flavour and prints the closing count lines:
#   skipped: N SKIP, N XFAIL
#   <flavour>: N passed, N failed, N skipped
# Each test program prints "PASS name", "FAIL name: why", "SKIP name: why" (a check that cannot
# run on this machine) or "XFAIL name: why" (a known bug; see tests/tools/fixtures.c) lines, and
# this counts them; "skipped" is SKIP and XFAIL together. A test program that exits non-zero
# without a FAIL line, prints no result at all, or sets off a sanitizer adds a FAIL of its own.
# Usage: tests/run.sh BUILD_DIR [TEST...]   (default: the unit tests, then tests/*.test.sh)
set -u
build=${1:-build/release}
[ $# -gt 0 ] && shift
export KERNLINT="$build/kernlint" BUILD="$build"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# A sanitizer report must never read as "findings" (exit 1): it gets a status of its own, 86,
# which no kernlint run expects, and a copy in a log per test, which fails the suite even where
# a test let the status go. The caller's own options come after, so they win.
san_asan="exitcode=86${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
san_ubsan="exitcode=86:halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
run() { # name command...
  local name=$1 rc san
  shift
  local log="$out/$name.log" detail="$out/$name.detail"
  ASAN_OPTIONS="log_path=$out/$name.san:$san_asan" \
    UBSAN_OPTIONS="log_path=$out/$name.san:$san_ubsan" "$@" >"$log" 2>&1
  rc=$?
  : >"$detail"
  for san in "$out/$name".san.*; do
    [ -e "$san" ] || continue
    echo "FAIL $name: a sanitizer reported an error in process ${san##*.}" >>"$log"
    # The first report in full is enough to start from; the others are often the same one.
    [ -s "$detail" ] || sed 's/^/    /' "$san" | head -40 >>"$detail"
  done
  if [ "$rc" -ne 0 ] && ! grep -q '^FAIL' "$log"; then
    echo "FAIL $name: exited with status $rc without a FAIL line" >>"$log"
  fi
  if ! grep -qE '^(PASS|FAIL|SKIP|XFAIL)' "$log"; then
    tail -20 "$log" | sed 's/^/    /' >>"$detail"
    echo "FAIL $name: produced no results" >>"$log"
  fi
  grep -E '^(FAIL|SKIP|XFAIL)' "$log" | sed "s|^|[$name] |"
  cat "$detail"
}
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  for t in "$build"/tests/*; do [ -x "$t" ] && tests+=("$t"); done
  for t in tests/*.test.sh; do [ -e "$t" ] && tests+=("$t"); done
fi
for t in "${tests[@]}"; do
  case "$t" in
    *.test.sh) run "$(basename "$t" .test.sh)" bash "$t" ;;
    *) run "unit-$(basename "$t")" "$t" ;;
  esac
done
count() { cat "$out"/*.log 2>/dev/null | grep -c "^$1 " || true; }
passed=$(count PASS) failed=$(count FAIL) skip=$(count SKIP) xfail=$(count XFAIL)
echo "skipped: $skip SKIP, $xfail XFAIL"
echo "$(basename "$build"): $passed passed, $failed failed, $((skip + xfail)) skipped"
[ "$failed" -eq 0 ]
