#!/usr/bin/env bash
# --fix and --diff, against the real programs: the --diff of every bad_ fixture of the rules with
# fixes (half-accumulator, bfloat-target, unused-suppression; not the half-accumulator pairs
# tests/proofs/half-accumulator/nofix lists, which get none) applied by `patch -p1` and by
# `git apply` gives the bytes --fix writes; --fix leaves no finding of the rule and no ERROR node,
# and a second --fix changes nothing; writes are atomic (mode kept, no temporary file left); a
# read-only file is an error that spares the others; standard input; the [*] mark and the JSON
# fix object. Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
dump_tree="$TOOLS/dump-tree"
for prog in patch git; do
  if ! command -v "$prog" >/dev/null 2>&1; then
    fail "fix-$prog" "$prog is not installed (make deps)"
    exit 1
  fi
done

# The fixtures, with a Python kernel's stale suppressions, one comment that keeps a live id, and
# a last line without a newline.
work="$tmp/work"
mkdir -p "$work/extra"
for d in half-accumulator bfloat-target unused-suppression; do
  mkdir -p "$work/$d"
  (cd tests/fixtures && find "$d" -name 'bad_*' \( -name '*.metal' -o -name '*.h' \)) |
    while read -r f; do
      mkdir -p "$work/$(dirname "$f")"
      cp "tests/fixtures/$f" "$work/$f"
    done
done
cat >"$work/extra/bad_kept_id.metal" <<'EOF'
// kernlint-args: --assume-rounded-grid
#include <metal_stdlib>
using namespace metal;

kernel void copy(device const float* x [[buffer(0)]],
                 device float* y [[buffer(1)]],
                 constant uint& n [[buffer(2)]],
                 uint gid [[thread_position_in_grid]]) {
  y[gid] = x[gid]; // kernlint-disable-line half-accumulator, bounds-guard -- checked by the host
}
EOF
printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' '' \
  'kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {' \
  '  y[i] = 1.0f;' '} // kernlint-disable-line bounds-guard' | head -c -1 >"$work/extra/bad_eof.metal"
# A region: its kernlint-enable goes with it, or it would be left matching nothing.
cat >"$work/extra/bad_region.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;
// kernlint-disable bounds-guard -- checked by the caller
kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  y[i] = 1.0f;
}
// kernlint-enable bounds-guard
EOF
cat >"$work/extra/bad_mlx.py" <<'EOF'
import mlx.core as mx

# kernlint-disable-next-line bounds-guard
source = """
    uint i = thread_position_in_grid.x;
    // kernlint-disable-next-line half-accumulator
    out[i] = inp[i] * 2.0f;
"""
kernel = mx.fast.metal_kernel(name="double", input_names=["inp"], output_names=["out"],
                              source=source)
EOF

# The fixture's `kernlint-args:` note, as the fixture test reads it, without its `@NAME` files
# (linted in the same run by the fixture runner; a bad_ fixture's fix is its own).
args_of() { sed -n 's/.*kernlint-args:[[:space:]]*//p' "$1" | head -1 | sed 's/@[^[:space:]]*//g'; }
# The files a fixture's `@NAME` arguments name, beside it: the run that makes an emulation note
# of a header's kernel instantiated by another file (FILE and those files).
with_of() {
  local d
  d=$(dirname "$1")
  echo "$1"
  sed -n 's/.*kernlint-args:[[:space:]]*//p' "$1" | head -1 | grep -o '@[^[:space:]]*' |
    sed "s|^@|$d/|"
}
# The rule a bad_ file's fix is for: its folder's name.
rule_of() {
  case $1 in
  extra/*) echo unused-suppression ;;
  *) echo "${1%%/*}" ;;
  esac
}
# Findings of RULE in FILE that a fix is for (bfloat-target: the availability ones, (a)).
findings() {
  local file=$1 rule=$2 args
  read -ra args <<<"$(args_of "$file")"
  "$KERNLINT" --no-color -q --exit-zero "${args[@]}" "$file" 2>/dev/null |
    grep -E "\[$rule\]\$" | { if [ "$rule" = bfloat-target ]; then grep 'availability guard'; else cat; fi; } |
    grep -c .
}
# ERROR and MISSING nodes of an MSL file's parse (Python has none of its own to count).
errors_of() {
  case $1 in
  *.py) echo 0 ;;
  *) "$dump_tree" "$1" 2>/dev/null | sed -n 's/^errors: \([0-9]*\).*/\1/p' ;;
  esac
}

files=$(cd "$work" && find . -name 'bad_*' -type f | sed 's|^\./||' | sort)
mkdir -p "$tmp/fixed" "$tmp/patch" "$tmp/git"
cp -r "$work/." "$tmp/fixed/"
cp -r "$work/." "$tmp/patch/"
cp -r "$work/." "$tmp/git/"
git -C "$tmp/git" init -q 2>/dev/null
nfix=0
for f in $files; do
  rule=$(rule_of "$f")
  read -ra args <<<"$(args_of "$work/$f")"
  before=$(findings "$work/$f" "$rule")
  errs=$(errors_of "$work/$f")
  if [ "$before" -eq 0 ] && [ "$rule" = bfloat-target ]; then
    # Only emulation notes (b), under the fixture's arguments: they have no fix.
    # In the fixtures' own folder, where its `@NAME` files are (--diff writes nothing).
    mapfile -t run < <(cd tests/fixtures && with_of "$f")
    (cd tests/fixtures && "$KERNLINT" --diff "${args[@]}" "${run[@]}" >"$tmp/d.patch" 2>/dev/null)
    drc=$?
    notes=$(cd tests/fixtures && "$KERNLINT" --no-color -q --exit-zero "${args[@]}" "${run[@]}" \
      2>/dev/null | grep -c "^$f:.*note: .*emulated.*\[bfloat-target\]\$")
    if [ $drc -eq 0 ] && [ ! -s "$tmp/d.patch" ] && [ "$notes" -gt 0 ]; then
      pass "no-fix-$f: $notes emulation note(s), which have no fix"
    else
      fail "no-fix-$f" "--diff exit $drc, $notes emulation notes, for a fixture with no availability finding"
    fi
    continue
  fi
  pair=${f##*/bad_}
  pair=${pair%.metal}
  if [ "$rule" = half-accumulator ] &&
    grep -q "^$pair:" tests/proofs/half-accumulator/nofix; then
    # A pair whose defect has no accurate fix (tests/proofs/half-accumulator/nofix says why):
    # reported, and no fix offered.
    (cd "$tmp/patch" && timeout 60 "$KERNLINT" --diff "${args[@]}" "$f" >"$tmp/d.patch" 2>/dev/null)
    drc=$?
    if [ $drc -eq 0 ] && [ ! -s "$tmp/d.patch" ] && [ "$before" -gt 0 ]; then
      pass "no-fix-$f: $before finding(s), with no fix, as tests/proofs/half-accumulator/nofix says"
    else
      fail "no-fix-$f" "--diff exit $drc, $before findings, for a pair listed in nofix"
    fi
    continue
  fi
  if [ "$before" -eq 0 ]; then
    fail "fix-$f" "no $rule finding to fix in the fixture"
    continue
  fi
  (cd "$tmp/patch" && timeout 60 "$KERNLINT" --diff "${args[@]}" "$f" >"$tmp/d.patch" 2>"$tmp/d.err")
  drc=$?
  (cd "$tmp/fixed" && timeout 60 "$KERNLINT" --fix -q "${args[@]}" "$f" >/dev/null 2>"$tmp/f.err")
  if [ $drc -ne 1 ] || [ ! -s "$tmp/d.patch" ]; then
    fail "diff-$f" "--diff exit $drc (want 1) with $(wc -l <"$tmp/d.patch") lines: $(head -c 200 "$tmp/d.err")"
    continue
  fi
  if ! cmp -s "$work/$f" "$tmp/patch/$f"; then
    fail "diff-$f" "--diff wrote to the file"
    continue
  fi
  nfix=$((nfix + 1))
  # The real programs users apply a diff with.
  if (cd "$tmp/patch" && patch -p1 --quiet --no-backup-if-mismatch <"$tmp/d.patch" >"$tmp/p.out" 2>&1) &&
    cmp -s "$tmp/patch/$f" "$tmp/fixed/$f"; then
    pass "patch-$f"
  else
    fail "patch-$f" "patch -p1 did not give --fix's bytes: $(head -c 300 "$tmp/p.out")"
  fi
  if (cd "$tmp/git" && git apply "$tmp/d.patch" >"$tmp/g.out" 2>&1) &&
    cmp -s "$tmp/git/$f" "$tmp/fixed/$f"; then
    pass "git-apply-$f"
  else
    fail "git-apply-$f" "git apply did not give --fix's bytes: $(head -c 300 "$tmp/g.out")"
  fi
  after=$(findings "$tmp/fixed/$f" "$rule")
  errs_after=$(errors_of "$tmp/fixed/$f")
  if [ "$after" -eq 0 ] && [ "$errs_after" -le "$errs" ] && [ "$errs_after" -eq 0 ]; then
    pass "fix-$f: $before $rule finding(s) gone, parses cleanly"
  else
    fail "fix-$f" "$after of $before $rule findings left, $errs_after ERROR nodes (before: $errs)"
  fi
  cp "$tmp/fixed/$f" "$tmp/once"
  (cd "$tmp/fixed" && "$KERNLINT" --fix "${args[@]}" "$f" >/dev/null 2>"$tmp/f2.err")
  if cmp -s "$tmp/once" "$tmp/fixed/$f" && grep -q '^kernlint: fixed 0 findings in 0 files$' "$tmp/f2.err"; then
    pass "idempotent-$f"
  else
    fail "idempotent-$f" "a second --fix changed it: $(head -1 "$tmp/f2.err")"
  fi
done
if [ $nfix -lt 20 ]; then fail fix-count "only $nfix fixable files (the fixtures went missing?)"; fi

# What the fixes are, checked on the text: the live id stays, the dead one goes with its comma.
if grep -q '// kernlint-disable-line bounds-guard -- checked by the host' "$tmp/fixed/extra/bad_kept_id.metal"; then
  pass fix-keeps-live-id
else
  fail fix-keeps-live-id "$(grep kernlint "$tmp/fixed/extra/bad_kept_id.metal")"
fi
if grep -q 'kernlint' "$tmp/fixed/extra/bad_mlx.py" || ! grep -q 'out\[i\] = inp\[i\] \* 2.0f;' "$tmp/fixed/extra/bad_mlx.py"; then
  fail fix-python-comments "$(cat "$tmp/fixed/extra/bad_mlx.py")"
else
  pass fix-python-comments
fi
if grep -q kernlint "$tmp/fixed/extra/bad_region.metal"; then
  fail fix-region "$(grep kernlint "$tmp/fixed/extra/bad_region.metal")"
else
  pass fix-region
fi
if grep -q 'No newline at end of file' <(cd "$work" && "$KERNLINT" --diff extra/bad_eof.metal 2>/dev/null); then
  pass diff-no-newline-marker
else
  fail diff-no-newline-marker "the diff of a file without a final newline does not say so"
fi

# --diff exit status and output when there is nothing to fix.
cp tests/fixtures/half-accumulator/good_dot_loop.metal "$tmp/good.metal"
"$KERNLINT" --diff "$tmp/good.metal" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && [ ! -s "$tmp/out" ] && grep -q 'would fix 0 findings' "$tmp/err"; then
  pass diff-nothing
else
  fail diff-nothing "exit $rc, $(wc -c <"$tmp/out") bytes of diff"
fi

# Atomic write: the mode is kept, nothing is left beside the file.
mkdir -p "$tmp/atomic"
cp tests/fixtures/half-accumulator/bad_dot_loop.metal "$tmp/atomic/k.metal"
chmod 640 "$tmp/atomic/k.metal"
"$KERNLINT" --fix "$tmp/atomic/k.metal" >/dev/null 2>"$tmp/err"
rc=$?
mode=$(stat -c %a "$tmp/atomic/k.metal")
left=$(find "$tmp/atomic" -mindepth 1 | wc -l)
if [ $rc -eq 0 ] && [ "$mode" = 640 ] && [ "$left" -eq 1 ] && grep -q 'float acc' "$tmp/atomic/k.metal"; then
  pass fix-atomic
else
  fail fix-atomic "exit $rc, mode $mode, $left entries in the folder: $(ls -a "$tmp/atomic" | tr '\n' ' ')"
fi

# A read-only file: one line naming it, exit 2, its findings still reported; the other file is
# fixed.
mkdir -p "$tmp/ro"
cp tests/fixtures/half-accumulator/bad_dot_loop.metal "$tmp/ro/a.metal"
cp tests/fixtures/half-accumulator/bad_fma_gemv.metal "$tmp/ro/b.metal"
chmod 444 "$tmp/ro/a.metal"
cp "$tmp/ro/a.metal" "$tmp/ro.orig"
"$KERNLINT" --fix --no-color "$tmp/ro" >"$tmp/out" 2>"$tmp/err"
rc=$?
nerr=$(grep -c "^kernlint: $tmp/ro/a.metal: cannot write fixes" "$tmp/err")
if [ $rc -eq 2 ] && [ "$nerr" -eq 1 ] && cmp -s "$tmp/ro.orig" "$tmp/ro/a.metal" &&
  grep -q 'float acc' "$tmp/ro/b.metal" && grep -q 'a.metal:.*half-accumulator' "$tmp/out"; then
  pass fix-read-only
else
  fail fix-read-only "exit $rc, $nerr error lines: $(head -c 300 "$tmp/err")"
fi
chmod 644 "$tmp/ro/a.metal"

# Standard input: the fixed text on stdout, the report on stderr.
"$KERNLINT" --fix --stdin-filename k.metal - <tests/fixtures/half-accumulator/bad_dot_loop.metal \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/fixed/half-accumulator/bad_dot_loop.metal" &&
  grep -q 'fixed 1 finding in 1 file' "$tmp/err"; then
  pass fix-stdin
else
  fail fix-stdin "exit $rc; stderr: $(head -c 300 "$tmp/err")"
fi
"$KERNLINT" --fix --stdin-filename k.metal - <"$tmp/good.metal" >"$tmp/out" 2>"$tmp/err"
if cmp -s "$tmp/out" "$tmp/good.metal"; then pass fix-stdin-unchanged; else
  fail fix-stdin-unchanged "the text with nothing to fix did not come back as it was"
fi

# The [*] mark and its hint; the JSON fix object.
"$KERNLINT" --no-color tests/fixtures/half-accumulator/bad_dot_loop.metal >"$tmp/out" 2>"$tmp/err"
if grep -q 'warning: \[\*\] accumulator `acc`' "$tmp/out" &&
  grep -q '^\[\*\] 1 fixable with the --fix option\.$' "$tmp/err"; then
  pass fix-mark
else
  fail fix-mark "$(head -1 "$tmp/out"); $(tail -1 "$tmp/err")"
fi
"$KERNLINT" --format json tests/fixtures/half-accumulator/bad_dot_loop.metal >"$tmp/out" 2>/dev/null
title=$("$JSON_GET" "$tmp/out" 'files.0.diagnostics.0.fix.title' 2>/dev/null)
text=$("$JSON_GET" "$tmp/out" 'files.0.diagnostics.0.fix.edits.0.text' 2>/dev/null)
if [ "$title" = 'declare `acc` as float' ] && [ "$text" = float ]; then
  pass fix-json
else
  fail fix-json "title '$title', first edit '$text'"
fi

# SARIF 2.1.0 fixes: one artifactChange, a replacement per edit (valid for Microsoft's SARIF
# validator: sarif.test.sh validates the fixtures' log, fixes and all).
"$KERNLINT" --format sarif tests/fixtures/half-accumulator/bad_dot_loop.metal >"$tmp/out" 2>/dev/null
f0=runs.0.results.0.fixes.0
desc=$("$JSON_GET" "$tmp/out" "$f0.description.text" 2>/dev/null)
nrep=$("$JSON_GET" "$tmp/out" "$f0.artifactChanges.0.replacements#" 2>/dev/null)
uri=$("$JSON_GET" "$tmp/out" "$f0.artifactChanges.0.artifactLocation.uri" 2>/dev/null)
if [ "$desc" = 'declare `acc` as float.' ] && [ "${nrep:-0}" -ge 3 ] 2>/dev/null &&
  [ "${uri##*/}" = bad_dot_loop.metal ]; then
  pass fix-sarif
else
  fail fix-sarif "description '$desc', $nrep replacements, uri '$uri'"
fi

# Review regressions. A CRLF file whose construct sits right after a blank first line (the guard
# search once read before the buffer); a comment between two tokens keeps them apart; a Python
# kernel whose accumulator type is an interpolated value gets no fix (rewriting the shared literal
# changes the other kernels made from it).
printf '\r\nusing bf = bfloat;\r\n' >"$tmp/crlf.metal"
"$KERNLINT" --diff "$tmp/crlf.metal" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 1 ] && grep -q '^+#if defined(__HAVE_BFLOAT__)' "$tmp/out"; then pass fix-crlf-first-line; else
  fail fix-crlf-first-line "exit $rc: $(head -c 200 "$tmp/err")"
fi
cat >"$tmp/between.metal" <<'EOF2'
kernel void k(device float *a [[buffer(0)]]) {
  float/* kernlint-disable-line bounds-guard */y = 2.0f;
  float z = 1.0f; /* kernlint-disable-line bounds-guard */a[0] = y + z;
}
EOF2
cp "$tmp/between.metal" "$tmp/between.orig"
"$KERNLINT" --fix -q "$tmp/between.metal" >/dev/null 2>&1
# The second comment goes, leaving a blank; the first, with no blank to keep, stays.
if grep -q 'float z = 1.0f; a\[0\] = y + z;' "$tmp/between.metal" &&
  grep -q 'float/\* kernlint-disable-line bounds-guard \*/y' "$tmp/between.metal"; then
  pass fix-comment-between-tokens
else
  fail fix-comment-between-tokens "$(cat "$tmp/between.metal")"
fi
cat >"$tmp/factory.py" <<'EOF2'
import mlx.core as mx


def make(acc_t):
    src = f"""
    uint r = threadgroup_position_in_grid.x;
    {acc_t} acc = 0;
    for (uint j = 0; j < cols; j++) {{
        acc += x[r * cols + j];
    }}
    out[r] = acc;
    """
    return mx.fast.metal_kernel(name=f"rowsum_{acc_t}", input_names=["x", "cols"],
                                output_names=["out"], source=src)


rowsum_f32 = make("float")
rowsum_f16 = make("half")
EOF2
"$KERNLINT" --diff "$tmp/factory.py" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 0 ] && ! grep -q '^[-+].*make(' "$tmp/out" &&
  grep -q 'would fix 0 findings' "$tmp/out"; then pass fix-python-interpolated-type; else
  fail fix-python-interpolated-type "exit $rc: $(head -c 300 "$tmp/out")"
fi

# Usage errors.
for combo in "--fix --diff" "--diff --format json" "--diff --output $tmp/rep.txt" \
  "--diff --baseline $tmp/b.json" "--diff --write-baseline $tmp/b.json"; do
  read -ra a <<<"$combo"
  "$KERNLINT" "${a[@]}" "$tmp/good.metal" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ]; then pass "usage $combo"; else
    fail "usage $combo" "exit $rc: $(head -c 200 "$tmp/err")"
  fi
done
exit $((failures > 0))
