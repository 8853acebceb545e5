#!/usr/bin/env bash
# SARIF 2.1.0 output: valid for Microsoft's SARIF validator (its SARIF rules and its GitHub
# ingestion rules), and shaped the way GitHub code scanning reads it.
# Run from the repo root with KERNLINT (and BUILD) set; needs tests/sarif-validator.sh --install.
. tests/lib.sh
jget() { "$JSON_GET" "$@" 2>/dev/null; }

# Validator findings at warning level or above that are accepted, as "ID reason". Notes are not
# counted (the validator's default report leaves them out). Each entry needs its reason:
allowed=(
  "SARIF2005 tool.driver has no informationUri: kernlint has no public home page yet, and an invented address would mislead (docs/output.md, SARIF)"
)
is_allowed() {
  local a
  for a in "${allowed[@]+"${allowed[@]}"}"; do [ "${a%% *}" = "$1" ] && return 0; done
  return 1
}

# validate NAME FILE: no errors or warnings from the SARIF rules nor the GitHub rules.
validate() {
  local name=$1 file=$2 kinds report bad=""
  if [ ! -x build/tools/sarif/node_modules/.bin/sarif-multitool ]; then
    fail "$name" "SARIF validator not installed (run: tests/sarif-validator.sh --install)"
    return
  fi
  # The default rule set, then with GitHub's ingestion rules added. (A lone kind such as "Sarif"
  # is refused by this validator version's option parser, so the default run stands for it.)
  # The inner quotes are meant: npm's wrapper passes its arguments through a shell.
  local args
  for kinds in default github; do
    args=()
    [ "$kinds" = github ] && args=(--rule-kind '"Gh;Sarif"')
    report=$(timeout 300 tests/sarif-validator.sh "${args[@]+"${args[@]}"}" "$file" 2>&1)
    if ! grep -q 'Analysis completed successfully' <<<"$report"; then
      fail "$name" "validator did not complete: $(tail -3 <<<"$report" | tr '\n' ' ')"
      return
    fi
    while IFS= read -r line; do
      id=$(sed -E 's/.*: (error|warning) ([A-Za-z]+[0-9]+): .*/\2/' <<<"$line")
      is_allowed "$id" || bad="$bad $id"
    done < <(grep -E ': (error|warning) [A-Za-z]+[0-9]+: ' <<<"$report")
  done
  if [ -z "$bad" ]; then pass "$name"
  else fail "$name" "validator reported:$bad (see: tests/sarif-validator.sh $file)"; fi
}

# ---- kernlint over the fixtures and examples ----
inputs=()
for d in tests/fixtures examples; do [ -d "$d" ] && inputs+=("$d"); done
# With neither folder present, lint an empty one: the log must still be valid.
[ "${#inputs[@]}" -eq 0 ] && mkdir -p "$tmp/empty" && inputs=("$tmp/empty")
timeout 120 "$KERNLINT" --format sarif --exit-zero "${inputs[@]}" >"$tmp/run.sarif" 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && [ "$(jget "$tmp/run.sarif" version)" = 2.1.0 ] &&
  [ "$(jget "$tmp/run.sarif" 'runs.0.results#')" -gt 0 ] 2>/dev/null; then pass sarif-run
else fail sarif-run "exit $rc, or no SARIF log with results: $(head -c 300 "$tmp/err")"; fi
validate sarif-valid-fixtures "$tmp/run.sarif"

# ---- made-up findings: related locations, repeats, a failure, odd file names ----
mkdir -p "$tmp/src"
printf '%s\n' \
  'kernel void k(device float *a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {' \
  '  bfloat x = 1;' \
  '  bfloat x = 1;' \
  '}' '#if defined(__HAVE_BFLOAT__)' '#endif' >"$tmp/src/k.metal"
cp "$tmp/src/k.metal" "$tmp/src/with space.metal"
(cd "$tmp" && "$SAMPLE" sarif file=src/k.metal 'bfloat-target:warning:bfloat:kernel' \
  'bounds-guard:error:a [[' 'file=src/with space.metal' 'unused-suppression:note:gid' \
  'fail=src/gone.metal:no such file or directory') >"$tmp/sample.sarif"
validate sarif-valid-sample "$tmp/sample.sarif"
# Written a file at a time, the log is still the text jansson writes for it whole.
# (emit-sample's log under its own name: it runs no kernlint.)
for f in run.sarif sample.sarif; do
  name=sarif-as-whole
  [ "$f" = sample.sarif ] && name=sarif-as-whole-sample
  if "$JSON_GET" --indent "$tmp/$f" >"$tmp/whole.sarif" && cmp -s "$tmp/$f" "$tmp/whole.sarif"
  then pass "$name $f"
  else fail "$name $f" "differs: $(diff "$tmp/whole.sarif" "$tmp/$f" | head -4 |
    tr '\n' '|')"; fi
done
timeout 60 "$KERNLINT" --format sarif "$tmp/src/k.metal" "$tmp/src/gone.metal" \
  >"$tmp/fail.sarif" 2>/dev/null
rc=$?
if [ "$rc" = 2 ]; then validate sarif-valid-with-failure "$tmp/fail.sarif"
else fail sarif-valid-with-failure "exit $rc, expected 2 (a missing input)"; fi
# With --baseline the baselined results are left out, and the log stays valid.
timeout 120 "$KERNLINT" --write-baseline "$tmp/baseline.json" "${inputs[@]}" 2>/dev/null
timeout 120 "$KERNLINT" --baseline "$tmp/baseline.json" --format sarif "${inputs[@]}" \
  "$tmp/src/k.metal" >"$tmp/baselined.sarif" 2>/dev/null
rc=$?
n=$(jget "$tmp/baselined.sarif" 'runs.0.results#')
if [ "$rc" = 1 ] && [ "$n" -gt 0 ] 2>/dev/null &&
  [ "$n" -lt "$(jget "$tmp/run.sarif" 'runs.0.results#')" ]; then
  validate sarif-valid-baselined "$tmp/baselined.sarif"
else fail sarif-valid-baselined "exit $rc, expected 1 with k.metal's results only, got ${n:-none}"; fi

# ---- structure ----
s="$tmp/sample.sarif"
check() { # NAME FILE QUERY WANT
  local got
  got=$(jget "$2" "$3")
  if [ "$got" = "$4" ]; then pass "$1"; else fail "$1" "$3 is '$got', expected '$4'"; fi
}
match() { # NAME FILE QUERY REGEX
  local got
  got=$(jget "$2" "$3")
  if [[ "$got" =~ $4 ]]; then pass "$1"; else fail "$1" "$3 is '$got', expected /$4/"; fi
}
version=$(sed -n 's/^#define KL_VERSION "\(.*\)"$/\1/p' analyzer/core/version.h)
check schema "$s" '$schema' https://json.schemastore.org/sarif-2.1.0.json
check sarif-version "$s" version 2.1.0
check one-run "$s" 'runs#' 1
d=runs.0.tool.driver
check driver-name "$s" $d.name kernlint
check driver-version "$s" $d.version "$version"
check driver-semver "$s" $d.semanticVersion "$version"
check driver-no-information-uri "$s" $d.informationUri ''
check column-kind "$s" runs.0.columnKind unicodeCodePoints
match srcroot "$s" 'runs.0.originalUriBaseIds.%SRCROOT%.uri' '^file:///.*/$'

# Every registered rule, in registry order, with the level --list-rules shows.
"$KERNLINT" --list-rules >"$tmp/rules"
rc=$?
nrules=$(wc -l <"$tmp/rules" | tr -d ' ')
[ "$rc" = 0 ] && [ "$nrules" -gt 0 ] || fail rules-metadata "kernlint --list-rules: exit $rc"
check rules-count "$s" "$d.rules#" "$nrules"
i=0
rules_ok=1
while read -r id level _; do
  r=$d.rules.$i
  name=$(sed -E 's/(^|-)([a-z])/\U\2/g' <<<"$id")
  [ "$(jget "$s" $r.id)" = "$id" ] || { rules_ok=0; fail "rule-$id" "rules[$i].id"; }
  [ "$(jget "$s" $r.name)" = "$name" ] || { rules_ok=0; fail "rule-$id" "name is not $name"; }
  [ "$(jget "$s" $r.defaultConfiguration.level)" = "$level" ] ||
    { rules_ok=0; fail "rule-$id" "level is not $level"; }
  for q in shortDescription.text fullDescription.text help.text help.markdown; do
    [ -n "$(jget "$s" $r.$q)" ] || { rules_ok=0; fail "rule-$id" "$q missing"; }
  done
  [ "$(jget "$s" "$r.properties.tags#")" -ge 1 ] 2>/dev/null ||
    { rules_ok=0; fail "rule-$id" "no tags"; }
  i=$((i + 1))
done <"$tmp/rules"
[ "$rules_ok" = 1 ] && [ "$rc" = 0 ] && [ "$nrules" -gt 0 ] && pass rules-metadata

# Results: rule index agrees with rule id, locations are relative to %SRCROOT%, fingerprints
# are GitHub-shaped and count repeats of the same line.
n=$(jget "$s" 'runs.0.results#')
check result-count "$s" 'runs.0.results#' 4
res_ok=1
for ((k = 0; k < n; k++)); do
  r=runs.0.results.$k
  ri=$(jget "$s" $r.ruleIndex)
  [ "$(jget "$s" "$d.rules.$ri.id")" = "$(jget "$s" $r.ruleId)" ] ||
    { res_ok=0; fail result-rule-index "result $k"; }
  [ "$(jget "$s" $r.locations.0.physicalLocation.artifactLocation.uriBaseId)" = "%SRCROOT%" ] ||
    { res_ok=0; fail result-uri-base "result $k"; }
  [[ "$(jget "$s" $r.partialFingerprints.primaryLocationLineHash)" =~ ^[0-9a-f]{16}:[0-9]+$ ]] ||
    { res_ok=0; fail result-fingerprint "result $k"; }
  for q in level message.text locations.0.physicalLocation.region.startLine \
    locations.0.physicalLocation.region.startColumn locations.0.physicalLocation.region.endLine \
    locations.0.physicalLocation.region.endColumn; do
    [ -n "$(jget "$s" $r.$q)" ] || { res_ok=0; fail "result-$k" "$q missing"; }
  done
done
[ "$res_ok" = 1 ] && pass results-shape
check result-uri "$s" runs.0.results.0.locations.0.physicalLocation.artifactLocation.uri \
  src/k.metal
check result-uri-escaped "$s" runs.0.results.3.locations.0.physicalLocation.artifactLocation.uri \
  'src/with%20space.metal'
check result-level "$s" runs.0.results.0.level error
check result-related "$s" runs.0.results.1.relatedLocations.0.id 1
check result-related-message "$s" runs.0.results.1.relatedLocations.0.message.text \
  'related `kernel` here.'
h2=$(jget "$s" runs.0.results.1.partialFingerprints.primaryLocationLineHash)
h3=$(jget "$s" runs.0.results.2.partialFingerprints.primaryLocationLineHash)
if [ "${h2%:*}" = "${h3%:*}" ] && [ "${h2#*:}" = 1 ] && [ "${h3#*:}" = 2 ]; then
  pass fingerprint-repeats
else fail fingerprint-repeats "$h2 / $h3"; fi
check artifacts "$s" 'runs.0.artifacts#' 2
check execution-failed "$s" runs.0.invocations.0.executionSuccessful false
check notification-count "$s" 'runs.0.invocations.0.toolExecutionNotifications#' 1
check notification-level "$s" runs.0.invocations.0.toolExecutionNotifications.0.level error
check execution-ok "$tmp/run.sarif" runs.0.invocations.0.executionSuccessful true

# Fingerprints survive edits elsewhere: shift the file down two lines.
{ printf '// a comment\n\n'; cat "$tmp/src/k.metal"; } >"$tmp/src/moved.metal"
(cd "$tmp" && "$SAMPLE" sarif file=src/moved.metal 'bfloat-target:warning:bfloat') >"$tmp/m.sarif"
(cd "$tmp" && "$SAMPLE" sarif file=src/k.metal 'bfloat-target:warning:bfloat') >"$tmp/k.sarif"
fp() { jget "$1" runs.0.results.0.partialFingerprints.primaryLocationLineHash; }
if [ "$(fp "$tmp/m.sarif")" = "$(fp "$tmp/k.sarif")" ] &&
  [ "$(jget "$tmp/m.sarif" runs.0.results.0.locations.0.physicalLocation.region.startLine)" = 4 ]
then pass fingerprint-stable
else fail fingerprint-stable "$(fp "$tmp/m.sarif") vs $(fp "$tmp/k.sarif")"; fi

# A file outside the working folder gets an absolute file URI and no uriBaseId.
u=$(jget "$tmp/fail.sarif" runs.0.artifacts.0.location.uri)
b=$(jget "$tmp/fail.sarif" runs.0.artifacts.0.location.uriBaseId)
if [[ "$u" == file:///*/src/k.metal ]] && [ -z "$b" ]; then pass absolute-uri
else fail absolute-uri "uri '$u', base '$b'"; fi

# ---- kernlint: a host finding whose kernel is in another file of the run ----
# The related location names the kernel's file, relative like the result's own (and without an
# index: the artifacts list only the run's targets in the order they are written), and the log
# still validates; the fingerprint is the one the host file alone gives.
mkdir -p "$tmp/pair/src"
printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' '' \
  'kernel void scale_rows(device float* x [[buffer(0)]],' \
  '                       uint i [[thread_position_in_grid]]) {' '  x[i] *= 2.0f;' '}' \
  >"$tmp/pair/src/rows.metal"
printf '%s\n' '#import <Metal/Metal.h>' \
  'void encode(id<MTLDevice> device, id<MTLComputeCommandEncoder> enc, NSUInteger n) {' \
  '  id<MTLFunction> fn = [[device newDefaultLibrary] newFunctionWithName:@"scale_rows"];' \
  '  [enc setComputePipelineState:[device newComputePipelineStateWithFunction:fn error:nil]];' \
  '  [enc dispatchThreads:MTLSizeMake(n, 1, 1) threadsPerThreadgroup:MTLSizeMake(100, 1, 1)];' \
  '}' >"$tmp/pair/src/rows.mm"
(cd "$tmp/pair" && timeout 60 "$KERNLINT" --format sarif --exit-zero src/rows.mm \
  src/rows.metal) >"$tmp/pair.sarif" 2>"$tmp/pair.err"
(cd "$tmp/pair" && timeout 60 "$KERNLINT" --format sarif --exit-zero src/rows.mm) \
  >"$tmp/alone.sarif" 2>>"$tmp/pair.err"
p=runs.0.results.0
check related-other-uri "$tmp/pair.sarif" \
  $p.relatedLocations.0.physicalLocation.artifactLocation.uri src/rows.metal
check related-other-base "$tmp/pair.sarif" \
  $p.relatedLocations.0.physicalLocation.artifactLocation.uriBaseId '%SRCROOT%'
check related-other-line "$tmp/pair.sarif" $p.relatedLocations.0.physicalLocation.region.startLine 4
check related-other-message "$tmp/pair.sarif" $p.relatedLocations.0.message.text \
  'the kernel `scale_rows` is defined here.'
check related-other-primary "$tmp/pair.sarif" \
  $p.locations.0.physicalLocation.artifactLocation.uri src/rows.mm
alone_fp=$(jget "$tmp/alone.sarif" $p.partialFingerprints.primaryLocationLineHash)
if [ -n "$alone_fp" ]; then
  check related-other-fingerprint "$tmp/pair.sarif" $p.partialFingerprints.primaryLocationLineHash \
    "$alone_fp"
else
  fail related-other-fingerprint "the host file alone has no finding with a fingerprint"
fi
validate sarif-valid-related-other-file "$tmp/pair.sarif"

[ "$failures" -eq 0 ]
