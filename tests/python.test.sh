#!/usr/bin/env bash
# Kernels embedded in Python and dispatched from host code, through the command line: exact
# line and column of findings inside Python strings (escapes, raw and multi-line strings, a body
# on the first line of a string, concatenated pieces), the call site as a related location, the
# unresolved-source note, a file without kernels, and one run over a folder that mixes .metal,
# .py, .mm and .cpp files. Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
# run ARGS...: kernlint; sets $rc, findings in $tmp/out, the summary and errors in $tmp/err.
# Text output folds the unresolved-source notes into one line unless --show-unresolved is given;
# these tests read the notes, so they ask for them (the folding is tested on its own below).
run() {
  timeout 60 "$KERNLINT" --no-color --show-unresolved "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# linted: whether the last run linted its files to the end: exit 0 or 1 (2 is an input error,
# anything else a crash), and the closing summary line, which a program that did nothing lacks.
linted() {
  { [ "$rc" = 0 ] || [ "$rc" = 1 ]; } &&
    grep -Eq '^(Found [0-9]+ problems? \(.*\)|No problems found) in [0-9]+ files?\.$' "$tmp/err"
}
# at NAME LOCATION RULE: a finding `path:line:col: ... [RULE]` exists.
at() {
  if ! linted; then fail "$1" "not linted (exit $rc): $(head -c 300 "$tmp/err")"
  elif grep -qF -- "$2: " "$tmp/out" && grep -F -- "$2: " "$tmp/out" | grep -qF "[$3]"; then
    pass "$1"
  else
    fail "$1" "no $3 at $2; got: $(grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning|note)' \
      "$tmp/out" | cut -c1-120 | tr '\n' '|')"
  fi
}
count() { # NAME PATTERN WANT
  local n
  n=$(grep -cE -- "$2" "$tmp/out")
  if ! linted; then fail "$1" "not linted (exit $rc): $(head -c 300 "$tmp/err")"
  elif [ "$n" = "$3" ]; then pass "$1"; else fail "$1" "$n lines match '$2', expected $3"; fi
}

d="$tmp/pos"
mkdir -p "$d"
# Columns are counted by hand in the comments; the rounded grid makes every unguarded access a
# bounds-guard finding, reported once per line at its first access in the line.
cat >"$d/pos.py" <<'EOF'
import mlx.core as mx

first_line = mx.fast.metal_kernel(
    name="first_line", input_names=["x"], output_names=["y"],
    source="uint i = thread_position_in_grid.x;\n\tfloat v = x[i] * 2.0f; y[i] = v;")
#           col 13: u of uint; \n is 2 bytes and \t 2 more, so x[i] is at col 62

MULTI = """uint i = thread_position_in_grid.x;\t\x20\u00e9
  float w = 1.0f;\
  y[i] = x[i] + w;
"""
#  line 10: the continuation joins lines in the value, not in the file: y at col 3, x at col 10
multi = mx.fast.metal_kernel(name="multi", input_names=["x"], output_names=["y"], source=MULTI)

pieces = mx.fast.metal_kernel(name="pieces", input_names=["x"], output_names=["y"],
    source=("uint i = thread_position_in_grid.x; "
            r"float z = x[i] * 3.0f; "  "\n"
            f"y[i] = z + {{1.0f}}.x;"))
#  line 17: x at col 25 after `r"`; line 18: y at col 15 after `f"`

RAW = r"""
    uint i = thread_position_in_grid.x; // \n stays two characters in a raw string
    y[i] = x[i] * 4.0f;
"""
raw = mx.fast.metal_kernel(name="raw", input_names=["x"], output_names=["y"], source=RAW)


def go(x, n):
    g = ((n + 31) // 32 * 32, 1, 1)
    kw = dict(grid=g, threadgroup=(32, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32])
    first_line(inputs=[x], **kw)
    multi(inputs=[x], **kw)
    pieces(inputs=[x], **kw)
    raw(inputs=[x], **kw)
EOF
run "$d/pos.py"
at first-line-column "$d/pos.py:5:62" bounds-guard
at multiline-escapes-column "$d/pos.py:10:3" bounds-guard
at raw-piece-column "$d/pos.py:17:25" bounds-guard
at fstring-piece-column "$d/pos.py:18:15" bounds-guard
at raw-triple-column "$d/pos.py:23:5" bounds-guard
count one-per-line '\[bounds-guard\]' 5
# The related location is the rounding expression the calls' grid names (line 29, column 10).
if grep -qF "$d/pos.py:29:10: note: the call of \`first_line\` on line 31 rounds the grid up here" \
  "$tmp/out"; then pass related-call-site
else fail related-call-site "$(grep -F note "$tmp/out" | head -2 | tr '\n' '|')"; fi

# JSON gives the same line and column, and an end column past the access.
timeout 60 "$KERNLINT" --format json --exit-zero "$d/pos.py" >"$tmp/json" 2>/dev/null
rc=$?
got="$("$JSON_GET" "$tmp/json" files.0.diagnostics.0.line):$("$JSON_GET" "$tmp/json" \
  files.0.diagnostics.0.column)-$("$JSON_GET" "$tmp/json" files.0.diagnostics.0.end_column)"
if [ "$rc" = 0 ] && [ "$got" = "5:62-66" ]; then pass json-position
else fail json-position "exit $rc, got $got"; fi

# A body whose float16 call site alone makes the finding: named in the message and related.
cat >"$d/half.py" <<'EOF'
import mlx.core as mx
SRC = """
    uint r = threadgroup_position_in_grid.x, lane = thread_index_in_simdgroup;
    T s = T(0);
    for (uint j = lane; j < cols; j += 32) { s += x[r * cols + j]; }
    if (lane == 0) { y[r] = s; }
"""
k = mx.fast.metal_kernel(name="rows", input_names=["x", "cols"], output_names=["y"], source=SRC)
def f32(x, r, c):
    return k(inputs=[x, c], template=[("T", mx.float32)], grid=(r * 32, 1, 1), threadgroup=(32, 1, 1))
def f16(x, r, c):
    return k(inputs=[x, c], template=[("T", mx.float16)], grid=(r * 32, 1, 1), threadgroup=(32, 1, 1))
EOF
run "$d/half.py"
at half-at-update "$d/half.py:5:46" half-accumulator
count half-once '\[half-accumulator\]' 1
if grep -qF "$d/half.py:12:38: note: the call of \`rows\` on line 12 binds \`T = float16\` here" \
  "$tmp/out"; then pass half-related-float16-call
else fail half-related-float16-call "$(grep -F note "$tmp/out" | tr '\n' '|')"; fi
# The binding is named as the call writes it, on one line, never the pasted template= text.
if grep -qF "is half in the call on line 12 (\`T = float16\`), and updated" "$tmp/out"; then
  pass half-names-binding
else fail half-names-binding "$(grep -F 'half-accumulator]' "$tmp/out")"; fi

# Sources only known at run time are a note, at the source argument (here a parameter no call
# binds; a .format() of one is read, with the unknown value as an opaque field).
cat >"$d/dyn.py" <<'EOF'
import mlx.core as mx
def make(body):
    return mx.fast.metal_kernel(name="u", input_names=["x"], output_names=["y"],
                                source=body)
EOF
run "$d/dyn.py"
at unresolved-note "$d/dyn.py:4:40" unresolved-source
run --fail-on warning "$d/dyn.py"
# A note does not reach --fail-on warning: exit 0, with the note printed all the same.
if [ "$rc" = 0 ] && grep -q "^$d/dyn\.py:4:40: note: .*\[unresolved-source\]$" "$tmp/out"; then
  pass unresolved-is-a-note
else fail unresolved-is-a-note "exit $rc, expected 0 and the note; got: $(head -c 300 "$tmp/out")"
fi

# By default text output prints no note per kernel but one closing line that counts them and
# names --show-unresolved; the notes still count (summary, --fail-on note), also under --quiet,
# and every other format keeps each note.
fold_run() {
  timeout 60 "$KERNLINT" --no-color "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
fold_line='kernlint: note: 1 embedded kernel is not checked in full: its source or header is built in'
fold_line+=' a way kernlint does not follow; --show-unresolved lists it [unresolved-source]'
fold_run "$d/dyn.py"
if [ "$rc" = 0 ] && ! grep -q 'dyn\.py:4:40: note' "$tmp/out" && [ "$(cat "$tmp/out")" = "$fold_line" ] &&
  grep -qF 'Found 1 problem (0 errors, 0 warnings, 1 note) in 1 file.' "$tmp/err"; then
  pass unresolved-folded
else fail unresolved-folded "exit $rc; out: $(head -c 300 "$tmp/out"); err: $(head -c 200 "$tmp/err")"
fi
fold_run --fail-on note -q "$d/dyn.py"
if [ "$rc" = 1 ] && [ "$(cat "$tmp/out")" = "$fold_line" ] && [ ! -s "$tmp/err" ]; then
  pass unresolved-folded-fail-on-note
else fail unresolved-folded-fail-on-note "exit $rc; out: $(head -c 300 "$tmp/out")"
fi
fold_run --format json "$d/dyn.py"
if [ "$rc" = 0 ] && grep -qF '"rule": "unresolved-source"' "$tmp/out"; then pass unresolved-json-keeps
else fail unresolved-json-keeps "exit $rc; $(head -c 300 "$tmp/out")"; fi
fold_run --format github "$d/dyn.py"
if [ "$rc" = 0 ] && grep -q '^::notice file=.*dyn\.py,line=4,.*title=kernlint (unresolved-source)::' "$tmp/out"; then
  pass unresolved-github-keeps
else fail unresolved-github-keeps "exit $rc; $(head -c 300 "$tmp/out")"; fi
# A level raised in .lintrc (error) asks for each finding: only notes fold.
mkdir -p "$tmp/raised"
cp "$d/dyn.py" "$tmp/raised/dyn.py"
printf '[rules]\nunresolved-source = error\n' >"$tmp/raised/.lintrc"
fold_run "$tmp/raised/dyn.py"
if [ "$rc" = 1 ] && grep -q 'dyn\.py:4:40: error: cannot read' "$tmp/out" &&
  ! grep -q '^kernlint: note:' "$tmp/out"; then
  pass unresolved-raised-not-folded
else fail unresolved-raised-not-folded "exit $rc; out: $(head -c 300 "$tmp/out")"; fi
fold_run tests/fixtures/unresolved-source/bad_built_sources.py
notes=$(timeout 60 "$KERNLINT" --no-color --show-unresolved tests/fixtures/unresolved-source/bad_built_sources.py |
  grep -c '\[unresolved-source\]$')
if [ "$notes" -gt 1 ] && ! grep -q ': note: cannot read' "$tmp/out" &&
  grep -q "^kernlint: note: $notes embedded kernels are not checked in full: .*--show-unresolved lists them \[unresolved-source\]$" "$tmp/out"; then
  pass unresolved-folded-count
else fail unresolved-folded-count "$notes notes; out: $(tail -c 300 "$tmp/out")"; fi

# Each note names how the source is built and the line it is built at, and the kernel's name as
# written (an f-string keeps its fields; a parameter is shown by its name), and ends by saying
# what kernlint follows.
run tests/fixtures/unresolved-source/bad_built_sources.py
for want in \
  'MLX kernel `unrolled_{n}`: it is a `.join()` of `lines`, built by a loop at line 12;' \
  'MLX kernel `comprehension`: it is a `.join()` of a comprehension, built by a loop at line 27;' \
  'MLX kernel `kernel_name`: it is `body`, a parameter of `passed_in` at line 31;' \
  'MLX kernel `stacked`: it is `text`, built by a loop at line 49;' \
  "kernlint follows literals, module constants, parameters bound to literals and the file's own \
helpers, so this kernel is not checked [unresolved-source]"; do
  if linted && grep -qF -- "$want" "$tmp/out"; then pass "unresolved-says: ${want:0:40}"
  else fail "unresolved-says: ${want:0:40}" "got: $(grep -o 'cannot read[^;]*' "$tmp/out" | tr '\n' '|')"
  fi
done
# Forms read since the sources built at run time are followed: none of them is a note any more.
count unresolved-read-forms 'it is (a `\.replace\(\)` call|`%` formatting|the result of calling)' 0

# Sources built at run time (tests/fixtures/python-runtime): each message says what kernlint
# assumed. says FILE NAME WANT: the findings of FILE hold WANT.
says() {
  run "$1"
  if linted && grep -qF -- "$3" "$tmp/out"; then pass "$2"
  else fail "$2" "no '$3' in: $(grep -E '\[[a-z-]+\]$' "$tmp/out" | cut -c1-200 | tr '\n' '|')"; fi
}
rt=tests/fixtures/python-runtime
says "$rt/bad_skeleton_fields.py" field-on-line \
  'at the end (this line holds `{scale}`, known only at run time and read as an opaque value)'
says "$rt/bad_factory_instances.py" factory-instance-label \
  'convert once at the end (for `make_reduce("half", 128)` at line 34) [half-accumulator]'
# The barrier finding holds for both instances: reported once, without a label.
if linted && [ "$(grep -cE '\[barrier-divergence\]$' "$tmp/out")" = 1 ] &&
  ! grep -F '[barrier-divergence]' "$tmp/out" | grep -qF '(for '; then
  pass factory-both-once-unlabelled
else fail factory-both-once-unlabelled "$(grep -F '[barrier-divergence]' "$tmp/out")"; fi
says "$rt/bad_conditional_fragments.py" conditional-label \
  'convert once at the end (when `fast` is true) [half-accumulator]'
says "$rt/bad_header_from_file.py" header-note \
  "it is text read from a file at line 7; the body is checked, with what the header defines read \
as unknown names [unresolved-source]"
at header-body-checked "$rt/bad_header_from_file.py:14:5" bounds-guard
says "$rt/bad_loop_built_join.py" loop-join-note \
  'it is a `.join()` of `lines`, built by a loop at line 8;'
says "$rt/bad_fstring_kernel_name.py" fstring-name-as-written \
  'threadgroup size 48 (`(48, 1, 1)`) for `scale_{width}` is not a multiple'
run "$rt/bad_skeleton_fields.py"
if linted && grep -qF '[half-accumulator]' "$tmp/out" && ! grep -qF '__kl_' "$tmp/out"; then
  pass no-synthetic-names
else fail no-synthetic-names "$(grep -E '__kl_|\[[a-z-]+\]$' "$tmp/out" | cut -c1-200)"; fi

# A multi-line template=[...] is named by what it binds, on one line, not pasted.
cat >"$d/tmpl.py" <<'EOF2'
import mlx.core as mx

k = mx.fast.metal_kernel(
    name=f"scale_{2}", input_names=["x"], output_names=["y"],
    source="uint i = thread_position_in_grid.x; T s = x[i]; y[i] = s * T(2);")


def run(x):
    return k(inputs=[x], template=[
        ("T", mx.bfloat16),
        ("N", 4),
    ], grid=(x.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[x.shape],
        output_dtypes=[mx.float32])
EOF2
run "$d/tmpl.py"
if linted && grep -qF -- '`T = bfloat16, N = 4` binds bfloat and kernel `scale_2`' "$tmp/out"; then
  pass template-label-one-line
else fail template-label-one-line "got: $(grep -F '[bfloat-target]' "$tmp/out" | cut -c1-200)"
fi

# A Python file without kernels: clean, and no parse error even when it is not valid Python.
printf 'def f(:\n    return "kernel void k() {}"\n' >"$d/plain.py"
run "$d/plain.py"
if [ "$rc" = 0 ] && [ "$(cat "$tmp/err")" = "No problems found in 1 file." ]; then
  pass no-kernels-clean
else fail no-kernels-clean "exit $rc, stderr: $(head -c 300 "$tmp/err")"; fi
if linted && [ ! -s "$tmp/out" ]; then pass no-kernels-quiet
else fail no-kernels-quiet "exit $rc: $(head -3 "$tmp/out")"; fi

# One command over a folder mixing MSL, Python, Objective-C and metal-cpp: each language is
# linted, and the host dispatch in the .mm feeds the .metal kernel's bounds check.
m="$tmp/mixed"
mkdir -p "$m/kernels" "$m/host" "$m/py"
cat >"$m/kernels/scale.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;
kernel void scale(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  x[i] *= 2.0f;
}
EOF
cat >"$m/host/run.mm" <<'EOF'
#import <Metal/Metal.h>
void run(id<MTLDevice> dev, id<MTLComputeCommandEncoder> enc, NSUInteger n) {
  id<MTLFunction> f = [[dev newDefaultLibrary] newFunctionWithName:@"scale"];
  id<MTLComputePipelineState> p = [dev newComputePipelineStateWithFunction:f error:nil];
  [enc setComputePipelineState:p];
  [enc dispatchThreadgroups:MTLSizeMake((n + 63) / 64, 1, 1)
      threadsPerThreadgroup:MTLSizeMake(72, 1, 1)];
}
EOF
cat >"$m/host/run.cpp" <<'EOF'
#include <Metal/Metal.hpp>
void run(MTL::ComputeCommandEncoder* enc, size_t n) {
  enc->dispatchThreads(MTL::Size(n, 1, 1), MTL::Size(2000, 1, 1));
}
EOF
cat >"$m/py/k.py" <<'EOF'
import torch
lib = torch.mps.compile_shader("kernel void neg(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = -x[i]; }")
def run(x, n):
    lib.neg(x, threads=n, group_size=20)
EOF
echo "notes" >"$m/README.txt"
run --format json --exit-zero "$m"
cp "$tmp/out" "$tmp/mixed.json"
files=""
n=$("$JSON_GET" "$tmp/mixed.json" 'files#')
for ((i = 0; i < n; i++)); do files="$files $("$JSON_GET" "$tmp/mixed.json" "files.$i.path")"; done
want=" $m/host/run.cpp $m/host/run.mm $m/kernels/scale.metal $m/py/k.py"
if [ "$rc" = 0 ] && [ "$files" = "$want" ]; then pass mixed-files
else fail mixed-files "exit $rc, got:$files"; fi
run "$m"
at mixed-metal-from-mm "$m/kernels/scale.metal:4:3" bounds-guard
at mixed-mm-size "$m/host/run.mm:7:29" threadgroup-size
at mixed-cpp-size "$m/host/run.cpp:3:44" threadgroup-size
at mixed-py-size "$m/py/k.py:4:38" threadgroup-size
# Linted alone, the kernel has no dispatch to say its grid is rounded.
run "$m/kernels/scale.metal"
count mixed-metal-alone '\[bounds-guard\]' 0

echo "python.test.sh: $failures failed"
[ "$failures" -eq 0 ]
