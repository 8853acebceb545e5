#!/usr/bin/env bash
# make bench: time the pipeline against a bare parse on a ~1,000-line kernel file built from the
# bundled examples and clean fixtures (kernel names made unique so it is one translation unit).
set -euo pipefail
build=${1:-build/release}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
f=$out/bench_1000.metal
printf '#include <metal_stdlib>\nusing namespace metal;\n' >"$f"
n=0
while [ "$(wc -l <"$f")" -lt 1000 ]; do
  for src in examples/*.metal tests/fixtures/clean/*.metal; do
    [ -e "$src" ] || continue
    [ "$(wc -l <"$f")" -lt 1000 ] || break
    n=$((n + 1))
    grep -v -e '^#include' -e '^using namespace' "$src" |
      sed -E "s/\b(kernel void|\[\[kernel\]\] void) ([A-Za-z_][A-Za-z0-9_]*)/\1 \2_$n/" >>"$f"
  done
  [ "$n" -gt 0 ] || { echo "bench: no kernels to build the input from" >&2; exit 2; }
done
"$build/tools/bench" "$f" "${ROUNDS:-60}"
[ -z "${KEEP_BENCH:-}" ] || cp "$f" "$KEEP_BENCH"
