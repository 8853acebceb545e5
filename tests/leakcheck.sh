#!/usr/bin/env bash
# make leakcheck: run kernlint under valgrind over everything the suite lints, plus the bad inputs;
# any leak or memory error fails. Prints PASS/FAIL per run and the closing count line.
set -u
bin=${1:-build/debug/kernlint}
command -v valgrind >/dev/null || { echo "FAIL leakcheck: valgrind not installed (make deps)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
vg() { # name args...
  local name=$1; shift
  if valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
       --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 \
       "$bin" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; [ $rc -ne 99 ]; then
    echo "PASS leakcheck-$name"; pass=$((pass + 1))
  else
    echo "FAIL leakcheck-$name"; sed 's/^/    /' "$tmp/err" | head -40; fail=$((fail + 1))
  fi
}
printf '' >"$tmp/empty.metal"
printf 'kernel void k(\x00)' >"$tmp/binary.metal"
printf 'kernel void k(\xff\xfe)' >"$tmp/utf8.metal"
{ printf 'kernel void k() { int x = '; head -c 5000 /dev/zero | tr '\0' '('; } >"$tmp/deep.metal"
printf '[rules]\nno-such-rule = off\n' >"$tmp/bad.lintrc"
for fmt in text json sarif; do
  vg "fixtures-$fmt" --format "$fmt" --exit-zero tests/fixtures examples
done
vg corpus --exit-zero grammar/tests/corpus
vg badinput --exit-zero "$tmp/empty.metal" "$tmp/binary.metal" "$tmp/utf8.metal" "$tmp/deep.metal" \
  "$tmp/missing.metal" examples
vg badconfig --config "$tmp/bad.lintrc" examples
vg stdin --stdin-filename stdin.metal - <examples/"$(ls examples | head -1)"
vg output --format sarif --output "$tmp/out.sarif" --exit-zero examples
vg help --help
vg list-rules --list-rules
vg explain --explain bfloat-target
echo "leakcheck: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
