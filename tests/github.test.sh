#!/usr/bin/env bash
# --format github end to end: the real kernlint writes one GitHub workflow command per finding,
# with the fields the JSON report has (checked finding by finding), escaped as GitHub requires,
# paths relative to the working folder, exit statuses as in the other formats, an annotation for
# an input that cannot be linted, and a summary on stderr. Run from the repo root with KERNLINT
# (and BUILD) set.
. tests/lib.sh
run() { # ARGS...: kernlint from $tmp/w; sets $rc, output in $tmp/out and $tmp/err
  (cd "$tmp/w" && timeout 60 "$KERNLINT" "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
jget() { "$JSON_GET" "$@" 2>/dev/null; }
mkdir -p "$tmp/w/kernels" || exit 1

{
  sample_bad_metal
  cat <<'EOF'

[[max_total_threads_per_threadgroup(100)]]
kernel void odd(device float *a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  a[gid] = 0.0f; // kernlint-disable-line half-accumulator
}
EOF
} >"$tmp/w/kernels/bad.metal"
sample_good_metal >"$tmp/w/kernels/good.metal"
# A name GitHub's property syntax would split at ':' and ','.
cp "$tmp/w/kernels/bad.metal" "$tmp/w/kernels/odd, name: x.metal"

# ---- every annotation against the JSON report ----
esc() { # VALUE PROPERTY(0|1): GitHub's escaping, written independently of the C code
  local s=${1//%/%25}
  s=${s//$'\r'/%0D}
  s=${s//$'\n'/%0A}
  if [ "$2" = 1 ]; then s=${s//:/%3A}; s=${s//,/%2C}; fi
  printf '%s' "$s"
}
run --format json kernels
cp "$tmp/out" "$tmp/report.json"
run --format github kernels
if [ "$rc" = 1 ]; then pass github-exit-findings
else fail github-exit-findings "exit $rc, expected 1; stderr: $(head -c 300 "$tmp/err")"; fi
: >"$tmp/want"
nfiles=$(jget "$tmp/report.json" 'files#')
for ((f = 0; f < ${nfiles:-0}; f++)); do
  path=$(jget "$tmp/report.json" "files.$f.path")
  nd=$(jget "$tmp/report.json" "files.$f.diagnostics#")
  for ((i = 0; i < nd; i++)); do
    d="files.$f.diagnostics.$i"
    sev=$(jget "$tmp/report.json" "$d.severity")
    case $sev in error) level=error ;; warning) level=warning ;; *) level=notice ;; esac
    line=$(jget "$tmp/report.json" "$d.line") col=$(jget "$tmp/report.json" "$d.column")
    eline=$(jget "$tmp/report.json" "$d.end_line") ecol=$(jget "$tmp/report.json" "$d.end_column")
    msg=$(jget "$tmp/report.json" "$d.message")
    nr=$(jget "$tmp/report.json" "$d.related#")
    for ((k = 0; k < nr; k++)); do
      rpath=$(jget "$tmp/report.json" "$d.related.$k.path")
      msg+=$'\n'"${rpath:-$path}:$(jget "$tmp/report.json" "$d.related.$k.line"):$(
        jget "$tmp/report.json" "$d.related.$k.column"): note: $(
        jget "$tmp/report.json" "$d.related.$k.message")"
    done
    pos="line=$line,col=$col,endLine=$eline,endColumn=$((ecol > col ? ecol - 1 : col))"
    [ "$line" = "$eline" ] || pos="line=$line,endLine=$eline"
    printf '::%s file=%s,%s,title=%s::%s\n' "$level" "$(esc "$path" 1)" "$pos" \
      "$(esc "kernlint ($(jget "$tmp/report.json" "$d.rule"))" 1)" "$(esc "$msg" 0)" >>"$tmp/want"
  done
done
if [ "$(wc -l <"$tmp/want")" -lt 6 ]; then
  fail github-matches-json "the JSON report has too few findings to compare: $(wc -l <"$tmp/want")"
elif cmp -s "$tmp/out" "$tmp/want"; then pass github-matches-json
else fail github-matches-json "$(diff "$tmp/want" "$tmp/out" | head -6 | tr '\n' '|')"; fi
for level in error warning notice; do
  if grep -q "^::$level file=kernels/bad.metal," "$tmp/out"; then pass "github-level-$level"
  else fail "github-level-$level" "no ::$level annotation for kernels/bad.metal"; fi
done
re='^::error file=kernels/bad.metal,line=10,col=5,endLine=10,endColumn=51,'
re+='title=kernlint (barrier-divergence)::`threadgroup_barrier` inside a branch on `lid`.*'
re+='%0Akernels/bad.metal:9:6: note: the branch condition diverges here$'
if grep -q "$re" "$tmp/out"; then pass github-related-in-message
else fail github-related-in-message "$(grep barrier-divergence "$tmp/out" | head -1)"; fi
if grep -q '^::warning file=kernels/odd%2C name%3A x.metal,line=15,' "$tmp/out"; then
  pass github-path-escaped
else fail github-path-escaped "$(grep -v 'file=kernels/[bg]' "$tmp/out" | head -2)"; fi
if [ -s "$tmp/out" ] && ! grep -qv '^::\(error\|warning\|notice\) file=[^:]*::' "$tmp/out"; then
  pass github-only-commands
else fail github-only-commands "$(grep -v '^::' "$tmp/out" | head -2)"; fi
if grep -qx 'Found 6 problems (2 errors, 2 warnings, 2 notes) in 3 files.' "$tmp/err"; then
  pass github-summary-stderr
else fail github-summary-stderr "stderr: $(head -c 300 "$tmp/err")"; fi

# ---- a related location in another file: a host call's kernel, defined in an MSL file ----
mkdir -p "$tmp/w/pair"
printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' '' \
  'kernel void scale_rows(device float* x [[buffer(0)]],' \
  '                       uint i [[thread_position_in_grid]]) {' '  x[i] *= 2.0f;' '}' \
  >"$tmp/w/pair/rows.metal"
printf '%s\n' '#import <Metal/Metal.h>' \
  'void encode(id<MTLDevice> device, id<MTLComputeCommandEncoder> enc, NSUInteger n) {' \
  '  id<MTLFunction> fn = [[device newDefaultLibrary] newFunctionWithName:@"scale_rows"];' \
  '  [enc setComputePipelineState:[device newComputePipelineStateWithFunction:fn error:nil]];' \
  '  [enc dispatchThreads:MTLSizeMake(n, 1, 1) threadsPerThreadgroup:MTLSizeMake(100, 1, 1)];' \
  '}' >"$tmp/w/pair/rows.mm"
run --format github ./pair/rows.mm pair/rows.metal
re='^::warning file=pair/rows.mm,line=5,col=67,.*title=kernlint (threadgroup-size)::.*'
re+='%0Apair/rows.metal:4:13: note: the kernel `scale_rows` is defined here$'
if grep -q "$re" "$tmp/out"; then pass github-related-other-file
else fail github-related-other-file "$(head -c 400 "$tmp/out")"; fi
rm -r "$tmp/w/pair"

# ---- paths as given: "./", absolute under the working folder, outside it ----
run --format github ./kernels/bad.metal "$tmp/w/kernels/good.metal" "$tmp/w/../w/kernels/bad.metal"
if [ "$rc" = 1 ] && [ "$(grep -c '^::[a-z]* file=kernels/bad.metal,' "$tmp/out")" = 3 ]; then
  pass github-paths-relative
else fail github-paths-relative "exit $rc; $(cut -c1-60 "$tmp/out" | tr '\n' '|')"; fi
mkdir -p "$tmp/elsewhere"
cp "$tmp/w/kernels/bad.metal" "$tmp/elsewhere/x.metal"
run --format github "$tmp/elsewhere/x.metal"
if grep -q "^::error file=$tmp/elsewhere/x.metal,line=10," "$tmp/out"; then
  pass github-path-outside-kept
else fail github-path-outside-kept "$(head -1 "$tmp/out")"; fi

# ---- exit statuses, --quiet, --output, -j ----
run --format github kernels/good.metal
if [ "$rc" = 0 ] && [ ! -s "$tmp/out" ] && grep -q '^No problems found in 1 file' "$tmp/err"; then
  pass github-clean
else fail github-clean "exit $rc, stdout $(head -c 200 "$tmp/out")"; fi
run --format github --fail-on error "kernels/odd, name: x.metal"
if [ "$rc" = 1 ]; then pass github-fail-on-error; else fail github-fail-on-error "exit $rc"; fi
run --format github --exit-zero --quiet kernels
if [ "$rc" = 0 ] && [ "$(wc -l <"$tmp/out")" = 6 ] && [ ! -s "$tmp/err" ]; then
  pass github-exit-zero-quiet
else
  fail github-exit-zero-quiet \
    "exit $rc, $(wc -l <"$tmp/out") lines, stderr $(head -c 200 "$tmp/err")"
fi
run --format github --output ann.txt kernels
if [ "$rc" = 1 ] && [ ! -s "$tmp/out" ] && cmp -s "$tmp/w/ann.txt" "$tmp/want"; then
  pass github-output-file
else fail github-output-file "exit $rc, stdout $(head -c 100 "$tmp/out")"; fi
run --format github -j 1 kernels
if [ -s "$tmp/out" ] && cmp -s "$tmp/out" "$tmp/want"; then pass github-jobs-same
else fail github-jobs-same "-j 1 differs, or printed nothing"; fi

# ---- an input that cannot be linted ----
printf 'kernel void k(\0)' >"$tmp/w/kernels/blob.metal"
run --format github kernels/blob.metal kernels/good.metal
if [ "$rc" = 2 ] &&
  grep -qx '::error file=kernels/blob.metal,title=kernlint::binary file (NUL byte at offset 14)' \
    "$tmp/out" && grep -q '^kernlint: kernels/blob.metal: binary file' "$tmp/err" &&
  grep -q 'could not be linted' "$tmp/err"; then
  pass github-failure-annotation
else
  fail github-failure-annotation \
    "exit $rc; out $(head -c 200 "$tmp/out"); err $(head -c 200 "$tmp/err")"
fi
rm -f "$tmp/w/kernels/blob.metal"

# ---- the option itself ----
run --format nope kernels
if [ "$rc" = 2 ] && grep -q "expected text, json, sarif or github" "$tmp/err"; then
  pass github-usage-lists-format
else fail github-usage-lists-format "exit $rc: $(head -c 200 "$tmp/err")"; fi
run --help
if grep -q -- '--format F .*github' "$tmp/out"; then pass github-in-help
else fail github-in-help "--help does not list github"; fi
[ "$failures" -eq 0 ]
