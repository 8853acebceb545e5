#!/usr/bin/env bash
# make corpus-report: measure kernlint on the development corpus (real kernels, kept outside the
# repository) and print findings per rule and entry, parse quality, time, precision over the
# judged findings in tests/corpus/ledger.tsv, and every finding not judged yet.
# Usage: tests/corpus/report.sh BUILD_DIR [CORPUS_DIR]   (CORPUS_DIR defaults to ../corpus)
set -euo pipefail
build=${1:-build/release}
corpus=${2:-../corpus}
ledger=$PWD/tests/corpus/ledger.tsv
if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus" 2>/dev/null)" ]; then
  cat >&2 <<MSG
corpus-report: no corpus at $corpus. Build it once per machine, beside the checkout:
  1. for each repository in ../shared/corpus/MANIFEST.tsv, get a bare git snapshot of OWNER/NAME
     (the project's search tool: fetch github:OWNER/NAME);
  2. for each row: ../shared/corpus/extract.sh GIT_DIR ../corpus/NAME KIND PATHS...
  3. make corpus-report   (or: make corpus-report CORPUS=/some/other/dir)
The corpus is other people's code: never commit it or copy from it.
MSG
  exit 2
fi
kernlint=$PWD/$build/kernlint
tools=$PWD/$build/tools
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$corpus"
# Each entry in one run, as a user lints a project (host files feed the MSL files beside them),
# from the corpus folder so SARIF paths read ENTRY/PATH, the ledger's form.
mapfile -t entries < <(find . -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%P\n' | sort)
start=$EPOCHREALTIME
sarifs=()
for e in "${entries[@]}"; do
  rc=0
  # Default settings, as a new user lints the project: no .lintrc, only what kernlint infers.
  "$kernlint" --format sarif --exit-zero -q "$e" >"$out/$e.sarif" 2>"$out/$e.err" || rc=$?
  # Exit 2 is a file kernlint refused (reported below); anything else is a crash.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; then
    echo "corpus-report: kernlint exited $rc on $e" >&2
    cat "$out/$e.err" >&2
    exit 1
  fi
  sarifs+=("$out/$e.sarif")
done
total=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
mapfile -t files < <(find "${entries[@]}" -type f \( -name '*.metal' -o -name '*.h' \
  -o -name '*.hpp' -o -name '*.py' -o -name '*.mm' -o -name '*.m' -o -name '*.cpp' \
  -o -name '*.cc' \) | sort)
for f in "${files[@]}"; do
  t0=$EPOCHREALTIME
  "$kernlint" --exit-zero -q "$f" >/dev/null 2>&1 || true
  printf '%s\t%s\n' "$f" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }')"
done >"$out/times.tsv"
"$tools/parse-stats" "${files[@]}" >"$out/parse.tsv" 2>"$out/parse.err" || true
echo "# kernlint on the development corpus ($corpus: ${#entries[@]} entries, ${#files[@]} files)"
echo
if [ -s "$out/parse.err" ] || cat "$out"/*.err 2>/dev/null | grep -q .; then
  echo "## Files kernlint refused"
  echo
  sort -u "$out"/*.err | sed 's/^/  /'
  echo
fi
"$tools/corpus-report" "$ledger" "$out/parse.tsv" "$out/times.tsv" "$total" "${sarifs[@]}"
# How far each Python kernel's source is read: exact, skeleton (opaque fields), body only (the
# header is out of reach), or unresolved (not analysed).
mapfile -t pys < <(printf '%s\n' "${files[@]}" | grep '\.py$' || true)
if [ "${#pys[@]}" -gt 0 ]; then
  "$tools/py-kernels" "${pys[@]}" >"$out/py.tsv" 2>/dev/null || true
  echo
  echo "## Python kernel-making calls: how their sources are read ($(wc -l <"$out/py.tsv") calls)"
  echo
  for how in exact skeleton body unresolved; do
    printf '%-11s %4d\n' "$how" "$(awk -F'\t' -v h="$how" '$3 == h' "$out/py.tsv" | wc -l)"
  done
  echo
  echo "exact: every value known; skeleton: some fields opaque; body: the header is out of reach."
  if awk -F'\t' '$3 == "unresolved"' "$out/py.tsv" | grep -q .; then
    echo
    echo "unresolved:"
    awk -F'\t' '$3 == "unresolved" { printf "  %s:%s\n", $1, $2 }' "$out/py.tsv"
  fi
fi
