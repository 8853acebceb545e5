#!/usr/bin/env bash
# Output formats: gcc-style text with carets, JSON that parses and follows docs/output.md, and
# output that is byte-for-byte the same across runs and argument orders.
# The emitters are driven with made-up findings (tools/emit-sample) so this does not depend on
# what the rules find; kernlint's own output is checked on what bfloat-target finds.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
same() { # NAME GOT_FILE WANT_FILE
  if cmp -s "$2" "$3"; then pass "$1"
  else fail "$1" "differs: $(diff "$3" "$2" | head -8 | tr '\n' '|')"; fi
}
jget() { "$JSON_GET" "$@" 2>/dev/null; }
cd "$tmp" || exit 1

printf '%s\n' \
  'kernel void k(device float *a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {' \
  $'\tbfloat x = 1;' \
  '  /*é*/ bfloat y = 2;' \
  '  float z = x +' \
  '      y;' \
  $'  float w = 3; // \033[31m' \
  '}' '#if defined(__HAVE_BFLOAT__)' '#endif' >k.metal

# ---- text ----
"$SAMPLE" text file=k.metal 'bfloat-target:warning:bfloat:kernel' \
  $'half-accumulator:note:x +\n      y' 'bounds-guard:error:w = 3' >got.txt
{
  printf '%s\n' 'k.metal:2:2: warning: found `bfloat` [bfloat-target]'
  printf '\tbfloat x = 1;\n\t^~~~~~\n'
  printf '%s\n' 'k.metal:1:1: note: related `kernel` here' \
    'k.metal:3:9: warning: found `bfloat` [bfloat-target]' \
    '  /*é*/ bfloat y = 2;' \
    '        ^~~~~~' \
    'k.metal:1:1: note: related `kernel` here' \
    'k.metal:4:13: note: found `x +       y` [half-accumulator]' \
    '  float z = x +' \
    '            ^~~' \
    'k.metal:6:9: error: found `w = 3` [bounds-guard]' \
    '  float w = 3; //  [31m' \
    '        ^~~~~'
} >want.txt
same text-format got.txt want.txt
if grep -q $'\033' got.txt; then fail text-no-escapes "escape bytes from the source reached output"
else pass text-no-escapes; fi

EMIT_COLOR=1 "$SAMPLE" text file=k.metal 'bfloat-target:warning:bfloat:kernel' \
  'bounds-guard:error:w = 3' 'half-accumulator:note:z' >color.txt
ok=1
for seq in $'\033[1mk.metal:2:2:\033[0m' $'\033[1;35mwarning:\033[0m' $'\033[1;31merror:\033[0m' \
  $'\033[1;36mnote:\033[0m' $'\t\033[1;32m^~~~~~\033[0m'; do
  grep -qF -- "$seq" color.txt || { ok=0; fail text-color "missing $(printf %q "$seq")"; }
done
[ "$ok" = 1 ] && pass text-color

# ---- JSON ----
"$SAMPLE" json file=k.metal 'bfloat-target:warning:bfloat:kernel' \
  $'half-accumulator:note:x +\n      y' 'fail=gone.metal:no such file or directory' >got.json
if jget got.json; then pass json-parses; else fail json-parses "$("$JSON_GET" got.json 2>&1)"; fi
check_json() { # NAME QUERY WANT [FILE]
  local got
  got=$(jget "${4:-got.json}" "$2")
  if [ "$got" = "$3" ]; then pass "$1"; else fail "$1" "$2 is '$got', expected '$3'"; fi
}
check_json json-version version "$(sed -n 's/^#define KL_VERSION "\(.*\)"$/\1/p' \
  "$OLDPWD/analyzer/core/version.h")"
check_json json-path files.0.path k.metal
check_json json-count 'files.0.diagnostics#' 3
check_json json-rule files.0.diagnostics.0.rule bfloat-target
check_json json-severity files.0.diagnostics.0.severity warning
check_json json-message files.0.diagnostics.0.message 'found `bfloat`'
check_json json-line files.0.diagnostics.0.line 2
check_json json-column files.0.diagnostics.0.column 2
check_json json-end-line files.0.diagnostics.0.end_line 2
check_json json-end-column files.0.diagnostics.0.end_column 8
check_json json-unicode-column files.0.diagnostics.1.column 9
check_json json-multiline-end files.0.diagnostics.2.end_line 5
check_json json-multiline-end-col files.0.diagnostics.2.end_column 8
check_json json-related-message files.0.diagnostics.0.related.0.message 'related `kernel` here'
check_json json-related-span files.0.diagnostics.0.related.0 \
  '{"message":"related `kernel` here","line":1,"column":1,"end_line":1,"end_column":7}'
check_json json-no-related 'files.0.diagnostics.2.related#' 0
check_json json-error errors.0 '{"path":"gone.metal","message":"no such file or directory"}'
check_json json-summary summary \
  '{"files":1,"failures":1,"diagnostics":3,"by_severity":{"error":0,"warning":2,"note":1}}'
key_order='s/^\{"version":"[^"]*","files":\[.*\],"errors":\[.*\],"summary":\{.*\}\}$/ok/'
if [ "$(jget got.json . | sed -E "$key_order")" = ok ]; then
  pass json-key-order
else fail json-key-order "top-level keys are not version, files, errors, summary"; fi

# kernlint's own JSON, over a folder.
mkdir -p tree/sub
cp k.metal tree/b.metal
cp k.metal tree/sub/a.metal
cp k.metal tree/a.h
timeout 60 "$KERNLINT" --format json --exit-zero tree >run.json 2>run.err
rc=$?
if [ "$rc" = 0 ] && jget run.json &&
  [ "$(jget run.json 'files#')" = "$(jget run.json summary.files)" ] &&
  [ "$(jget run.json 'files#')" = 3 ]; then pass json-kernlint
else fail json-kernlint "exit $rc: $(head -c 300 run.err)"; fi
# Written a file at a time, the document is still the text jansson writes for it whole.
# (emit-sample's document under its own name: it runs no kernlint.)
for f in got.json run.json; do
  name=json-as-whole
  [ "$f" = got.json ] && name=json-as-whole-sample
  if "$JSON_GET" --indent "$f" >whole.json && cmp -s "$f" whole.json; then
    pass "$name $f"
  else fail "$name $f" "differs: $(diff whole.json "$f" | head -4 | tr '\n' '|')"; fi
done

# ---- determinism: the same report, and the same exit status, whatever the argument order ----
for fmt in text json sarif; do
  timeout 60 "$KERNLINT" --format $fmt tree k.metal >run1.$fmt 2>/dev/null
  rcs=$?
  timeout 60 "$KERNLINT" --format $fmt k.metal tree/sub tree >run2.$fmt 2>/dev/null
  rcs="$rcs $?"
  timeout 60 "$KERNLINT" --format $fmt tree k.metal >run3.$fmt 2>/dev/null
  rcs="$rcs $?"
  # Each file has bfloat-target warnings, so each run exits 1.
  if [ "$rcs" != "1 1 1" ]; then fail "deterministic-$fmt" "exits $rcs, expected 1 1 1"
  elif ! grep -q 'bfloat-target' run1.$fmt; then fail "deterministic-$fmt" "no finding reported"
  elif cmp -s run1.$fmt run2.$fmt && cmp -s run1.$fmt run3.$fmt; then pass "deterministic-$fmt"
  else fail "deterministic-$fmt" "runs differ"; fi
done
"$SAMPLE" sarif file=k.metal 'bfloat-target:warning:bfloat:kernel' >s1.sarif
"$SAMPLE" sarif file=k.metal 'bfloat-target:warning:bfloat:kernel' >s2.sarif
if cmp -s s1.sarif s2.sarif; then pass deterministic-sample
else fail deterministic-sample "differ"; fi

# ---- SARIF locations: every location in a file names its artifact the same way ----
cp k.metal k2.metal
"$SAMPLE" sarif file=k.metal 'bfloat-target:warning:bfloat:kernel' \
  file=k2.metal 'bounds-guard:error:w = 3:float' >loc.sarif
r=runs.0
want="k.metal %SRCROOT% 0|k.metal %SRCROOT% 0|k.metal %SRCROOT% 0|k2.metal %SRCROOT% 1"
got=""
for q in "$r.results.0.locations.0" "$r.results.0.relatedLocations.0" \
  "$r.results.1.relatedLocations.0" "$r.results.2.locations.0"; do
  al="$q.physicalLocation.artifactLocation"
  one="$(jget loc.sarif "$al.uri") $(jget loc.sarif "$al.uriBaseId") $(jget loc.sarif "$al.index")"
  got="$got${got:+|}$one"
done
if [ "$got" = "$want" ] && [ "$(jget loc.sarif "$r.artifacts.1.location.uri")" = k2.metal ] &&
  ! jget loc.sarif "$r.artifacts.0.location.index" >/dev/null &&
  [ "$(jget loc.sarif "$r.artifacts.0.location#")" = 2 ]; then pass sarif-artifact-locations
else fail sarif-artifact-locations "got: $got"; fi
# Key order is part of the bytes: uri, uriBaseId, then index.
order='"uri":"k.metal","uriBaseId":"%SRCROOT%","index":0'
if grep -A3 '"artifactLocation"' loc.sarif | tr -d ' \n' | grep -q "$order"; then
  pass sarif-artifact-location-order
else fail sarif-artifact-location-order "$(grep -A3 '"artifactLocation"' loc.sarif | head -4)"; fi

# ---- kernlint's own text ----
timeout 60 "$KERNLINT" -q k.metal >own.txt 2>&1
rc=$?
if [ "$rc" = 1 ] && grep -q '^k\.metal:2:2: warning: .* \[bfloat-target\]$' own.txt &&
  grep -q $'^\t^~~~~~$' own.txt; then pass text-kernlint-caret
else fail text-kernlint-caret "exit $rc: $(head -c 400 own.txt)"; fi
# Findings come in (line, column) order: the two bfloat declarations (a), line 2 then line 3, then
# the bfloat sum on line 4 (b, a note).
order=$(grep -E '^k\.metal:[0-9]+:[0-9]+: .*\]$' own.txt | awk -F: '{ printf "%s:%s ", $2, $3 }')
if [ "$rc" = 1 ] && [ "$order" = "2:2 3:9 4:13 " ]; then pass text-kernlint-order
else fail text-kernlint-order "exit $rc, findings at: '$order', expected '2:2 3:9 4:13 '"; fi

# ---- related locations: a helper's barrier names the call of the kernel it diverges in ----
# good_k calls the helper from every thread first; bad_k calls it on line 11 under `lid < 7`.
printf '%s\n' \
  'void sync_stage(threadgroup float *s, uint i) {' \
  '  s[i] = 0;' \
  '  threadgroup_barrier(mem_flags::mem_threadgroup);' \
  '}' \
  'kernel void good_k(uint lid [[thread_position_in_threadgroup]]) {' \
  '  threadgroup float s[64];' \
  '  sync_stage(s, lid);' \
  '}' \
  'kernel void bad_k(uint lid [[thread_position_in_threadgroup]]) {' \
  '  threadgroup float s[64];' \
  '  if (lid < 7) sync_stage(s, lid);' \
  '}' >via.metal
timeout 60 "$KERNLINT" -q via.metal >via.txt 2>&1
if grep -q '^via\.metal:3:3: error: `threadgroup_barrier` (in bad_k) inside a branch' via.txt &&
  grep -q '^via\.metal:11:16: note: called from `bad_k` here$' via.txt &&
  ! grep -q '^via\.metal:7:' via.txt; then pass related-helper-call
else fail related-helper-call "$(head -c 600 via.txt)"; fi

# ---- related locations in another file: a host call's threadgroup size names its kernel ----
# The kernel is defined in an MSL file of the run; the finding stays at the host line, and its
# note names the other file with the kernel's position there, in every format.
mkdir -p pair
printf '%s\n' \
  '#include <metal_stdlib>' \
  'using namespace metal;' \
  '' \
  'kernel void scale_rows(device float* x [[buffer(0)]],' \
  '                       uint i [[thread_position_in_grid]]) {' \
  '  x[i] *= 2.0f;' \
  '}' >pair/rows.metal
printf '%s\n' \
  '#import <Metal/Metal.h>' \
  'void encode(id<MTLDevice> device, id<MTLComputeCommandEncoder> enc, NSUInteger n) {' \
  '  id<MTLFunction> fn = [[device newDefaultLibrary] newFunctionWithName:@"scale_rows"];' \
  '  [enc setComputePipelineState:[device newComputePipelineStateWithFunction:fn error:nil]];' \
  '  [enc dispatchThreads:MTLSizeMake(n, 1, 1) threadsPerThreadgroup:MTLSizeMake(100, 1, 1)];' \
  '}' >pair/rows.mm
timeout 60 "$KERNLINT" -q pair/rows.mm pair/rows.metal >pair.txt 2>&1
if grep -q '^pair/rows\.mm:5:67: warning: threadgroup size 100 .* for `scale_rows`' pair.txt &&
  grep -q '^pair/rows\.metal:4:13: note: the kernel `scale_rows` is defined here$' pair.txt
then pass related-other-file-text
else fail related-other-file-text "$(head -c 600 pair.txt)"; fi
timeout 60 "$KERNLINT" --format json --exit-zero pair/rows.mm pair/rows.metal >pair.json 2>&1
want='{"message":"the kernel `scale_rows` is defined here","path":"pair/rows.metal",'
want+='"line":4,"column":13,"end_line":4,"end_column":23}'
check_json json-related-other-file files.1.diagnostics.0.related.0 "$want" pair.json
# Alone, the host file knows the kernel only by name: the message names it, no note.
timeout 60 "$KERNLINT" --format json --exit-zero pair/rows.mm >alone.json 2>&1
check_json json-related-unknown-kernel 'files.0.diagnostics.0.related#' 0 alone.json
# The related location is not part of the finding's identity: a baseline written without the
# kernel file in the run holds the finding when it is.
timeout 60 "$KERNLINT" -q --write-baseline pair.base pair/rows.mm >/dev/null 2>&1
timeout 60 "$KERNLINT" -q --baseline pair.base pair/rows.mm pair/rows.metal >based.txt 2>&1
rc=$?
timeout 60 "$KERNLINT" -q pair/rows.mm pair/rows.metal >unbased.txt 2>&1
if [ "$rc" = 0 ] && ! grep -q 'threadgroup-size' based.txt &&
  grep -q 'threadgroup-size' unbased.txt; then pass related-other-file-baseline
else fail related-other-file-baseline "exit $rc: $(head -c 300 based.txt)"; fi

[ "$failures" -eq 0 ]
