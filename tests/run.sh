#!/usr/bin/env bash
# Runs every test of one build flavour and prints the closing "N passed, N failed" line.
# Each test program prints "PASS name" / "FAIL name: why" lines; this counts them.
# Usage: tests/run.sh BUILD_DIR
set -u
build=${1:-build/release}
export KERNLINT="$build/kernlint" BUILD="$build"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
status=0
run() { # name command...
  local name=$1; shift
  if ! "$@" >"$out/$name.log" 2>&1; then status=1; fi
  grep -E '^(PASS|FAIL)' "$out/$name.log" | sed "s|^|[$name] |" | grep FAIL || true
  if ! grep -qE '^(PASS|FAIL)' "$out/$name.log"; then
    echo "FAIL $name: produced no results" >>"$out/$name.log"; cat "$out/$name.log" | tail -20
  fi
}
for t in "$build"/tests/*; do
  [ -x "$t" ] || continue
  run "unit-$(basename "$t")" "$t"
done
for t in tests/*.test.sh; do
  [ -e "$t" ] || continue
  run "$(basename "$t" .test.sh)" bash "$t"
done
passed=$(cat "$out"/*.log 2>/dev/null | grep -c '^PASS' || true)
failed=$(cat "$out"/*.log 2>/dev/null | grep -c '^FAIL' || true)
echo "$(basename "$build"): $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$status" -eq 0 ]
