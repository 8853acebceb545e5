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

# The slower path: a file whose macros must be expanded before it parses cleanly (stamped-out
# instantiations, FOR_UNROLL, MLX_MTL_CONST), so the dialect layer parses it twice.
m=$out/macro_1000.metal
{
  printf '#include <metal_stdlib>\nusing namespace metal;\n'
  printf '#define FOR_UNROLL(x) _Pragma("clang loop unroll(full)") for (x)\n'
  printf '#define MLX_MTL_CONST static constant constexpr const\n'
  printf '#define instantiate_kernel(name, func, T) template [[host_name(#name "_" #T)]] '
  printf '[[kernel]] decltype(func<T>) func<T>;\n'
  for i in $(seq 1 84); do
    cat <<KERNEL
MLX_MTL_CONST int N$i = 4;
template <typename T>
[[kernel]] void scale$i(device const T* x [[buffer(0)]], device T* y [[buffer(1)]],
                  constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  float acc = 0.0f;
  FOR_UNROLL(int k = 0; k < N$i; k++) { acc += float(x[gid]) * k; }
  y[gid] = T(acc);
}
instantiate_kernel(scale$i, scale$i, float)
instantiate_kernel(scale$i, scale$i, half)

KERNEL
  done
} >"$m"
echo
"$build/tools/bench" "$m" "${ROUNDS:-60}"
