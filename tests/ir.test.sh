#!/usr/bin/env bash
# The IR lowering against its golden files: `kernlint --dump-ir tests/ir/NAME.metal` must print
# tests/ir/NAME.ir exactly (kernels of our own writing, one construct each: shadowed loop
# counters, if/else PHIs, break and continue, early returns, helpers inlined, reference
# parameters, struct members, threadgroup memory and barriers, SIMD reductions, template and
# function-constant specialisations, pointer arithmetic, switch, ?: and &&, vector components,
# lambdas handed to a helper and to a function defined elsewhere).
# UPDATE=1 rewrites the golden files from the current output instead (review the diff).
# Also: broken code lowers without a crash and --dump-ir stays out of --help.
# Run from the repo root with KERNLINT set, as tests/run.sh does.
. tests/lib.sh
for src in tests/ir/*.metal; do
  name=$(basename "$src" .metal)
  want="tests/ir/$name.ir"
  "$KERNLINT" --dump-ir "$src" >"$tmp/$name.ir" 2>"$tmp/$name.err"
  rc=$?
  if [ "${UPDATE:-0}" = 1 ]; then
    cp "$tmp/$name.ir" "$want"
    pass "ir-$name (updated)"
    continue
  fi
  if [ "$rc" -ne 0 ]; then
    fail "ir-$name" "exit $rc: $(head -3 "$tmp/$name.err")"
  elif [ ! -f "$want" ]; then
    fail "ir-$name" "no $want (UPDATE=1 bash tests/ir.test.sh writes it)"
  elif ! diff -u "$want" "$tmp/$name.ir" >"$tmp/$name.diff"; then
    fail "ir-$name" "output differs from $want:
$(head -30 "$tmp/$name.diff")"
  else
    pass "ir-$name"
  fi
done

# Broken code: lowered without a crash (ERROR nodes become OPAQUE), the kernel still printed.
cat >"$tmp/broken.metal" <<'EOS'
kernel void broken(device float *a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  for (int k = 0; k < ; k++) { a[i] = a[i] +* 2; }
  if (i > 3) {
    a[i] = ;
  }
  while (1) { a[i] = @ 3; break; }
  switch (i) { case 1: a[i] = (; default: }
}
EOS
if "$KERNLINT" --dump-ir "$tmp/broken.metal" >"$tmp/broken.ir" 2>&1 &&
  grep -q '^kernel broken' "$tmp/broken.ir"; then
  pass ir-broken-code
else
  fail ir-broken-code "$(head -5 "$tmp/broken.ir")"
fi

"$KERNLINT" --help >"$tmp/help" 2>&1
if ! grep -q '^Usage: kernlint' "$tmp/help"; then
  fail ir-hidden "no usage from --help"
elif grep -q -- '--dump-ir' "$tmp/help"; then
  fail ir-hidden "--help lists --dump-ir"
else
  pass ir-hidden
fi
[ "$failures" -eq 0 ]
