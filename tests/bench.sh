#!/usr/bin/env bash
# make bench: how kernlint's time and memory compare with a bare tree-sitter parse of the same
# files, on the development corpus when there is one (../corpus, or CORPUS=dir, as
# `make corpus-report` finds it) and on the bundled examples and clean fixtures otherwise. The
# three figures of the speed targets, each beside its target and marked OVER TARGET when it
# misses:
#   - whole-run CPU (user+sys) of `kernlint -j 1` against a bare single-thread parse (<= 1.2x);
#   - every file linted alone (`-j 1`, CPU) within max(50 ms, 2x its own bare parse, run the
#     same way): the files over, worst first, with their count;
#   - peak memory (max RSS) of the `-j 1` run (< 64 MB);
#   - the language server's latency per file, from a one-character edit's didChange to its
#     publishDiagnostics (<= 50 ms; tests/lsp_latency.py);
# and beside them the wall time of `kernlint -j 2` against the bare parse, its peak memory, and
# the synthetic ~1,000-line files.
# Rounds are interleaved (lint -j 1, parse, lint -j 2, ...) so machine noise hits all alike, and
# the single-thread runs (lint -j 1, the bare parses, the single files) share one CPU (taskset):
# the CPUs of a virtual machine can differ in speed by half, and a median otherwise depends on
# where the scheduler put each run. Medians are reported, with each side's best round and the
# range of the rounds' ratios. ROUNDS (default 3) sets the rounds; KERNLINT=path measures another
# binary (one without -j is run without it, and has no -j 2 figure).
# Usage: tests/bench.sh BUILD_DIR [CORPUS_DIR]
set -euo pipefail
build=${1:-build/release}
corpus=${2:-${CORPUS:-../corpus}}
rounds=${ROUNDS:-3}
repo=$PWD
bench=$repo/$build/tools/bench
kernlint=${KERNLINT:-$repo/$build/kernlint}
case $kernlint in /*) ;; *) kernlint=$PWD/$kernlint ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

jflag() { if [ "$has_j" = 1 ]; then echo "-j $1"; fi; }
has_j=0
"$kernlint" -j 1 --version >/dev/null 2>&1 && has_j=1

# What is linted: every corpus entry in one run, from inside the corpus folder (paths read
# ENTRY/PATH as in the corpus report, but with no per-entry .lintrc: one run has one config
# search), or the bundled examples and clean fixtures from the checkout.
if [ -d "$corpus" ] && [ -n "$(ls -A "$corpus" 2>/dev/null)" ]; then
  cd "$corpus"
  mapfile -t targets < <(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%P\n' | sort)
  where="the development corpus ($corpus: ${#targets[@]} entries)"
else
  targets=(examples tests/fixtures/clean)
  where="the bundled examples and clean fixtures (no corpus at $corpus)"
fi
# The files kernlint walks: its extensions, hidden files and folders skipped.
mapfile -t files < <(find "${targets[@]}" -name '.*' -prune -o -type f \( -name '*.metal' \
  -o -name '*.h' -o -name '*.hpp' -o -name '*.py' -o -name '*.mm' -o -name '*.m' \
  -o -name '*.cpp' -o -name '*.cc' \) -print | sort)
[ "${#files[@]}" -gt 0 ] || { echo "bench: no files to measure in $where" >&2; exit 2; }
bytes=$(cat "${files[@]}" | wc -c)

# measure NAME ARGV...: one run, appended to $out/NAME as "cpu wall maxrss status".
measure() {
  local name=$1
  shift
  "$bench" exec -- "$@" >>"$out/$name"
}
lint=("$kernlint" --exit-zero -q --format sarif)
# The first CPU this process may run on, for the single-thread runs; none without taskset.
pin=()
cpu=$(awk '/^Cpus_allowed_list/ { split($2, a, /[-,]/); print a[1] }' /proc/self/status \
  2>/dev/null || true)
# A taskset that may not set the affinity (a container's policy) leaves the runs free.
if [ -n "$cpu" ] && command -v taskset >/dev/null 2>&1 && taskset -c "$cpu" true 2>/dev/null; then
  pin=(taskset -c "$cpu")
fi
for ((r = 0; r < rounds; r++)); do
  # shellcheck disable=SC2046
  measure lint1 ${pin[@]+"${pin[@]}"} "${lint[@]}" $(jflag 1) "${targets[@]}"
  measure parse ${pin[@]+"${pin[@]}"} "$bench" parse "${files[@]}"
  if [ "$has_j" = 1 ]; then measure lint2 "${lint[@]}" -j 2 "${targets[@]}"; fi
done
# A run that did not exit 0 measured an error, not a lint.
for f in "$out"/lint* "$out/parse"; do
  if awk '$4 != 0 { bad = 1 } END { exit !bad }' "$f"; then
    echo "bench: $(basename "$f") exited non-zero: $(awk '{ print $4 }' "$f" | tr '\n' ' ')" >&2
    exit 1
  fi
done
# median FILE COLUMN
median() {
  awk -v c="$2" '{ print $c }' "$1" | sort -g |
    awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
maxof() { awk -v c="$2" 'BEGIN { m = 0 } $c > m { m = $c } END { print m }' "$1"; }
minof() { awk -v c="$2" 'NR == 1 || $c < m { m = $c } END { print m }' "$1"; }
# spread A B COLUMN: the lowest and highest of the rounds' ratios A/B (lines paired by round). On a
# shared machine a neighbour can slow one side of a round; a wide spread says the medians are
# noise, and the best of the rounds (each side's fastest) is then the better estimate.
spread() {
  paste -d ' ' "$1" "$2" | awk -v c="$3" '{ r = $c / $(c + 4); if (NR == 1 || r < lo) lo = r
    if (NR == 1 || r > hi) hi = r } END { printf "%.2f-%.2fx", lo, hi }'
}

echo "kernlint bench on $where"
echo "  ${#files[@]} files, $((bytes / 1024)) KB; kernlint: one run over ${#targets[@]} paths" \
  "(${targets[*]:0:6}$([ "${#targets[@]}" -gt 6 ] && echo ' ...')), --format sarif;" \
  "median of $rounds interleaved rounds"
echo "  binary: $kernlint"
echo
# verdict VALUE TARGET: "" when VALUE is within TARGET (a ceiling), else a loud mark.
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { if (v > t) printf "  OVER TARGET" }'; }
# ratio LABEL RUNS COLUMN UNIT TARGET: RUNS against the bare parse in COLUMN (1 CPU, 2 wall),
# as medians, then as each side's best round with the range of the rounds' ratios.
ratio() {
  local a b r
  a=$(median "$2" "$3")
  b=$(median "$out/parse" "$3")
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')
  printf '  %-26s %7.3f s %-4s vs bare parse %7.3f s: %5.2fx  (target <= %sx)%s\n' \
    "$1" "$a" "$4" "$b" "$r" "$5" "$(verdict "$r" "$5")"
  a=$(minof "$2" "$3")
  b=$(minof "$out/parse" "$3")
  printf '  %-26s %7.3f s %-4s vs bare parse %7.3f s: %5.2fx  (rounds %s)\n' \
    "  best of $rounds" "$a" "$4" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')" \
    "$(spread "$2" "$out/parse" "$3")"
}
# peak LABEL RUNS [none]: the largest max RSS of RUNS against the 64 MB target, which is the
# -j 1 run's alone (with "none", the figure is printed with no target).
peak() {
  local mb
  mb=$(awk -v k="$(maxof "$2" 3)" 'BEGIN { print k / 1024 }')
  if [ "${3:-}" = none ]; then
    printf '  %-26s %7.1f MB                                    (no target)\n' "$1" "$mb"
    return
  fi
  printf '  %-26s %7.1f MB                                    (target < 64 MB)%s\n' "$1" "$mb" \
    "$(awk -v m="$mb" 'BEGIN { if (m >= 64) printf "  OVER TARGET" }')"
}
ratio "whole-run CPU (-j 1)" "$out/lint1" 1 CPU 1.2
peak "peak memory (-j 1)" "$out/lint1"
if [ "$has_j" = 1 ]; then
  ratio "wall time (-j 2)" "$out/lint2" 2 wall 0.8
  peak "peak memory (-j 2)" "$out/lint2" none
else
  printf '  %-26s this binary has no -j\n' "wall time (-j 2)"
fi

# Every file, linted alone and parsed alone, each a process of its own (both sides pay the
# start-up), interleaved file by file over the rounds; CPU (user+sys), as the machine is shared.
# A file is over when its median exceeds max(50 ms, 2x its bare parse's median).
for ((r = 0; r < rounds; r++)); do
  for i in "${!files[@]}"; do
    # shellcheck disable=SC2046
    printf '%s %s\n' "$i" "$("$bench" exec -- ${pin[@]+"${pin[@]}"} "${lint[@]}" $(jflag 1) \
      "${files[$i]}" | awk '{ print $1, $4 }')" >>"$out/onelint"
    printf '%s %s\n' "$i" "$("$bench" exec -- ${pin[@]+"${pin[@]}"} "$bench" parse \
      "${files[$i]}" | awk '{ print $1, $4 }')" >>"$out/oneparse"
  done
done
if awk '$3 != 0 { bad = 1 } END { exit !bad }' "$out/onelint" "$out/oneparse"; then
  echo "bench: a single-file run exited non-zero" >&2
  exit 1
fi
# Per file: "lint/limit lint_ms parse_ms limit_ms path", worst first.
awk 'function med(s, a, c, i, j, x) {
       c = split(s, a, " ")
       for (i = 2; i <= c; i++) {
         x = a[i]
         for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]
         a[j + 1] = x
       }
       return a[int((c + 1) / 2)] * 1e3
     }
     FNR == 1 { side++ }
     { v[side, $1] = v[side, $1] " " $2; if ($1 + 1 > n) n = $1 + 1 }
     END { for (i = 0; i < n; i++) print i, med(v[1, i]), med(v[2, i]) }' \
  "$out/onelint" "$out/oneparse" |
  while read -r i l p; do printf '%s %s %s\n' "$l" "$p" "${files[$i]}"; done |
  awk '{ lim = $2 * 2; if (lim < 50) lim = 50; path = $0; sub(/^[^ ]+ [^ ]+ /, "", path)
         printf "%.4f %.1f %.1f %.1f %s\n", $1 / lim, $1, $2, lim, path }' |
  sort -gr >"$out/perfile"
nover=$(awk '$1 > 1' "$out/perfile" | wc -l)
printf '  %-26s %d of %d over max(50 ms, 2x own bare parse)  (target: none over)%s\n' \
  "single files (-j 1, CPU)" "$nover" "${#files[@]}" \
  "$([ "$nover" -eq 0 ] || echo '  OVER TARGET')"
show=${SHOW_FILES:-12}
# One line per file: lint median, bare parse median, limit, lint over the limit, path.
fmt='    %8.1f ms  parse %7.1f ms  limit %6.1f ms  %5.2fx  %s\n'
awk -v show="$show" -v fmt="$fmt" '$1 > 1 && n++ < show { path = $0
  sub(/^[^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", path); printf fmt, $2, $3, $4, $1, path }' "$out/perfile"
[ "$nover" -le "$show" ] || echo "    ... and $((nover - show)) more (SHOW_FILES=N lists more)"
if [ "$nover" -eq 0 ]; then
  echo "    nearest its limit:"
  awk -v fmt="$fmt" 'NR == 1 { path = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ [^ ]+ /, "", path)
    printf fmt, $2, $3, $4, $1, path }' "$out/perfile"
fi

# The language server as an editor sees it (tests/lsp_latency.py): every file opened in one
# server, then one-character edits in the middle of it, each timed (wall) from didChange to the
# publishDiagnostics of its version; a file's figure is its slowest edit (target: 50 ms).
if command -v python3 >/dev/null 2>&1 && "$kernlint" --help 2>/dev/null | grep -q -- --lsp; then
  echo "  language server (didChange -> publishDiagnostics, wall; target: every file <= 50 ms):"
  LIMIT_MS=50 SHOW_FILES=$show python3 "$repo/tests/lsp_latency.py" "$kernlint" \
    "${LSP_EDITS:-4}" "${files[@]}" | sed 's/^/  /'
else
  printf '  %-26s not measured (no python3, or this binary has no --lsp)\n' "language server"
fi
cd "$repo"

# The synthetic files: ~1,000 lines built from the bundled examples and clean fixtures (kernel
# names made unique so it is one translation unit), and the same size of kernels whose macros
# must be expanded before they parse cleanly (stamped-out instantiations, FOR_UNROLL,
# MLX_MTL_CONST), so the dialect layer parses twice. In one process, without start-up.
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
[ -z "${KEEP_BENCH:-}" ] || cp "$f" "$KEEP_BENCH"
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
echo "  synthetic files (in-process, median of ${SYNTH_ROUNDS:-40}):"
printf '  '
"$bench" synth "$f" "${SYNTH_ROUNDS:-40}"
printf '  '
"$bench" synth "$m" "${SYNTH_ROUNDS:-40}"
