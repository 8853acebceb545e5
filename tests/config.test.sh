#!/usr/bin/env bash
# .lintrc and inline suppressions through the command line: discovery, [rules], target, [path]
# overrides, include/exclude, bfloat-guards, --config, config errors, and kernlint-disable
# comments. Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
# run DIR ARGS...: kernlint from DIR; sets $rc, findings in $tmp/out, the rest in $tmp/err.
run() {
  local dir=$1; shift
  (cd "$dir" && timeout 60 "$KERNLINT" --no-color "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# linted: whether the last run linted its files to the end: exit 0 or 1 (2 is an input or config
# error, anything else a crash), and the closing summary line. Without the summary, no findings
# would prove nothing: a program that does nothing prints none either.
summary_re='^(Found [0-9]+ problems? \(.*\)|No problems found) in [0-9]+ files?\.$'
linted() {
  { [ "$rc" = 0 ] || [ "$rc" = 1 ]; } && grep -Eq "$summary_re" "$tmp/err"
}
# has NAME PATTERN / lacks NAME PATTERN: whether the findings include a line matching PATTERN.
has() {
  if ! linted; then fail "$1" "not linted (exit $rc): $(head -c 300 "$tmp/err" | tr "\n" " ")"
  elif grep -qE -- "$2" "$tmp/out"; then pass "$1"
  else
    fail "$1" "no line matching '$2' (rc $rc); got: $(head -c 300 "$tmp/out" | tr "\n" " ")\
 $(head -c 200 "$tmp/err" | tr "\n" " ")"
  fi
}
lacks() {
  if ! linted; then fail "$1" "not linted (exit $rc): $(head -c 300 "$tmp/err" | tr "\n" " ")"
  elif ! grep -qE -- "$2" "$tmp/out"; then pass "$1"
  else fail "$1" "unexpected line matching '$2': $(grep -E -- "$2" "$tmp/out" | head -3)"; fi
}
# expect_rc NAME WANT: the exit status, with something printed (a summary or an error line).
expect_rc() {
  if [ "$rc" = "$2" ] && { [ -s "$tmp/out" ] || [ -s "$tmp/err" ]; }; then pass "$1"
  else fail "$1" "exit $rc, expected $2; stderr: $(head -c 300 "$tmp/err")"; fi
}

# A kernel with an unguarded bfloat: bfloat-target on the default target (m1).
bf_kernel() {
  mkdir -p "$(dirname "$1")"
  cat >"$1" <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],
                  constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  b[gid] = bfloat(a[gid]);
}
#if defined(__HAVE_BFLOAT__) // the project builds below MSL 3.1 too: it guards bfloat
typedef bfloat guarded_bf_t;
#endif
EOF
}

p="$tmp/p"
bf_kernel "$p/bf.metal"
run "$p" bf.metal
has baseline-reports-bfloat 'bf\.metal:4:[0-9]+: warning: .*\[bfloat-target\]'

# ---- [rules], target, discovery ----
printf '; kernlint settings\n[rules]\nbfloat-target = off\n' >"$p/.lintrc"
run "$p" bf.metal
lacks rules-off 'bfloat-target'
expect_rc rules-off-exit 0

printf '[rules]\nbfloat-target = error\n' >"$p/.lintrc"
run "$p" bf.metal
has rules-level 'bf\.metal:4:[0-9]+: error: .*\[bfloat-target\]'

printf 'target = m3\nmetal-version = 3.1\n' >"$p/.lintrc"
run "$p" bf.metal
lacks target-m3 'bfloat-target'
printf 'target = m3\n' >"$tmp/m3only.lintrc"
run "$p" --config "$tmp/m3only.lintrc" bf.metal
has target-m3-still-msl30 'bf\.metal:4:[0-9]+: warning: (\[\*\] )?native `bfloat` .*\[bfloat-target\]'
printf 'metal-version = 3.1\n' >"$tmp/msl31.lintrc"
run "$p" --config "$tmp/msl31.lintrc" bf.metal
lacks metal-version-31 'bfloat-target'
run "$p" --config "$tmp/m3only.lintrc" --metal-version 3.1 bf.metal
lacks metal-version-flag 'bfloat-target'
printf 'metal-version = 3\n' >"$tmp/badver.lintrc"
run "$p" --config "$tmp/badver.lintrc" bf.metal
if [ "$rc" = 2 ] && grep -qF "badver.lintrc:1: invalid value '3' for 'metal-version'" "$tmp/err"; then
  pass metal-version-invalid
else fail metal-version-invalid "exit $rc, stderr: $(head -c 300 "$tmp/err")"; fi

bf_kernel "$p/sub/deep/bf.metal"
printf 'target = m1\n' >"$p/sub/.lintrc"
run "$p" sub/deep/bf.metal
has closest-lintrc-wins 'sub/deep/bf\.metal:4:.*\[bfloat-target\]'
run "$p/sub/deep" bf.metal
has found-from-inside 'bf\.metal:4:.*\[bfloat-target\]'
rm "$p/sub/.lintrc"
run "$p/sub/deep" bf.metal
lacks found-upward 'bfloat-target'

printf 'target = m1\n' >"$tmp/other.lintrc"
run "$p" --config "$tmp/other.lintrc" bf.metal
has explicit-config-wins 'bf\.metal:4:.*\[bfloat-target\]'

# ---- [path] overrides ----
bf_kernel "$p/legacy/old/bf.metal"
cat >"$p/.lintrc" <<'EOF'
[rules]
bfloat-target = warning

[path "legacy/**"]
bfloat-target = error

[path "old"]          ; a glob without a slash matches a folder or file name anywhere
bfloat-target = note
EOF
bf_kernel "$p/legacy/bf.metal"
run "$p" bf.metal legacy/bf.metal legacy/old/bf.metal
has path-no-match '^bf\.metal:4:[0-9]+: warning: .*\[bfloat-target\]'
has path-override '^legacy/bf\.metal:4:[0-9]+: error: .*\[bfloat-target\]'
has path-later-section-wins '^legacy/old/bf\.metal:4:[0-9]+: note: .*\[bfloat-target\]'

# ---- include / exclude on folder walks ----
w="$tmp/w"
bf_kernel "$w/kernels/a.metal"
bf_kernel "$w/vendor/b.metal"
bf_kernel "$w/c.metal"
printf 'exclude = vendor\n' >"$w/.lintrc"
run "$w" .
has exclude-keeps 'kernels/a\.metal:4:'
lacks exclude-drops 'vendor/b\.metal'
printf 'include = kernels/**\n' >"$w/.lintrc"
run "$w" .
has include-keeps 'kernels/a\.metal:4:'
lacks include-drops-others '(^|/)c\.metal|vendor/b\.metal'

# ---- bfloat-guards ----
g="$tmp/g"
mkdir -p "$g"
cat >"$g/g.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;
kernel void k(device float *b [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
#ifdef MY_BF16
  bfloat v = bfloat(b[gid]);
  b[gid] = float(v);
#endif
}
EOF
run "$g" g.metal
has guard-unknown-macro-reported 'g\.metal:5:.*\[bfloat-target\]'
printf 'bfloat-guards = MY_BF16, OTHER_BF16\n' >"$g/.lintrc"
run "$g" g.metal
lacks guard-macro-from-lintrc 'g\.metal:5:.*\[bfloat-target\]'

# ---- unit-strides ----
u="$tmp/u"
mkdir -p "$u"
cat >"$u/u.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;
struct a_t { int ne0; ulong nb0; ulong nb1; };
kernel void k(constant a_t& args [[buffer(0)]], device char* d [[buffer(1)]],
              constant ulong& nb_x0 [[buffer(2)]], uint r [[threadgroup_position_in_grid]],
              ushort t [[thread_position_in_threadgroup]], ushort n [[threads_per_threadgroup]]) {
  for (int i = t; i < args.ne0; i += n) for (int j = 0; j < 2; j++) ((device float*)(d + r * args.nb1 + i * args.nb0))[j] = 1.0f;
  for (int i = t; i < args.ne0; i += n) for (int j = 0; j < 2; j++) ((device float*)(d + r * args.nb1 + i * nb_x0))[j] = 2.0f;
}
EOF
run "$u" u.metal
has unit-strides-unset-reported 'u\.metal:7:.*\[uncoalesced-access\]'
printf 'unit-strides = nb0\n' >"$u/.lintrc"
run "$u" u.metal
lacks unit-strides-name 'u\.metal:7:.*\[uncoalesced-access\]'
has unit-strides-other-name-reported 'u\.metal:8:.*\[uncoalesced-access\]'
printf 'unit-strides = nb*0\n' >"$u/.lintrc"
run "$u" u.metal
lacks unit-strides-glob 'uncoalesced-access'
printf 'unit-strides = nb-0\n' >"$u/.lintrc"
run "$u" u.metal
if [ "$rc" = 2 ] && grep -qF ".lintrc:1: invalid name 'nb-0' in unit-strides" "$tmp/err"; then
  pass unit-strides-bad-name
else fail unit-strides-bad-name "exit $rc, stderr: $(head -c 300 "$tmp/err")"; fi

# ---- configuration errors ----
e="$tmp/e"
bf_kernel "$e/bf.metal"
printf 'target = m1\n[rules]\nno-such-rule = off\n' >"$e/.lintrc"
run "$e" bf.metal
expect_rc bad-rule-exit 2
want=".lintrc:3: unknown rule 'no-such-rule' in [rules]"
if [ "$rc" = 2 ] && grep -qF "$want" "$tmp/err"; then pass bad-rule-message
else fail bad-rule-message "stderr: $(head -c 300 "$tmp/err")"; fi
printf 'tarrget = m1\n' >"$e/.lintrc"
run "$e" bf.metal
if [ "$rc" = 2 ] && grep -qF ".lintrc:1: unknown key 'tarrget'" "$tmp/err"; then
  pass bad-key-message
else fail bad-key-message "exit $rc, stderr: $(head -c 300 "$tmp/err")"; fi
printf 'target = m7\n' >"$e/.lintrc"
run "$e" bf.metal
if [ "$rc" = 2 ] && grep -qF ".lintrc:1: unknown target 'm7'" "$tmp/err"; then
  pass bad-target-message
else fail bad-target-message "exit $rc, stderr: $(head -c 300 "$tmp/err")"; fi
run "$e" --config "$tmp/missing.lintrc" bf.metal
expect_rc missing-config-exit 2
run "$e" --config "$tmp" bf.metal
expect_rc directory-config-exit 2

# ---- inline suppressions ----
s="$tmp/s"
mkdir -p "$s"
cat >"$s/s.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;

// kernlint-disable-next-line bfloat-target
kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],
                  constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  b[gid] = bfloat(a[gid]); // kernlint-disable-line bfloat-target
  b[0] = b[1]; // kernlint-disable-line half-accumulator
}
EOF
run "$s" s.metal
lacks suppress-next-line 's\.metal:5:.*\[bfloat-target\]'
lacks suppress-line 's\.metal:8:.*\[bfloat-target\]'
has unused-reported \
  's\.metal:9:[0-9]+: note: \[\*\] suppression of `half-accumulator` is unused \[unused-suppression\]'
printf '[rules]\nunused-suppression = off\n' >"$s/.lintrc"
run "$s" s.metal
lacks unused-off 'unused-suppression'
expect_rc unused-off-exit 0

echo "config.test.sh: $failures failed"
[ "$failures" -eq 0 ]
