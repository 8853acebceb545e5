#!/usr/bin/env bash
# Settings the project itself states or implies, and --show-settings: the project's folder, the
# lowest Metal language version its build states (CMake, Makefile, Xcode, Package.swift, host
# code, Python), the version its code requires when it never guards bfloat, guard macros its code
# makes, and .lintrc and command-line overrides. Each scratch project is checked both through
# --show-settings and through the bfloat-target findings it gets. Run from the repo root with
# KERNLINT (and BUILD) set.
. tests/lib.sh
# show NAME FILE [PATH] / lint NAME ARGS...: from $tmp; output in $tmp/out, stderr in $tmp/err.
show() {
  local name=$1; shift
  (cd "$tmp" && timeout 60 "$KERNLINT" --show-settings "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
lint() {
  (cd "$tmp" && timeout 60 "$KERNLINT" --no-color --exit-zero "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
# linted: the last run got to its summary line (no findings from a run that did nothing proves
# nothing).
summary_re='^(Found [0-9]+ problems? \(.*\)|No problems found) in [0-9]+ files?\.$'
linted() { [ "$rc" = 0 ] && grep -Eq "$summary_re" "$tmp/err"; }
# says NAME PATTERN: the last output has a line matching PATTERN (and the command exited 0).
says() {
  if [ "$rc" = 0 ] && grep -qE -- "$2" "$tmp/out"; then pass "$1"
  else fail "$1" "exit $rc, no line matching '$2' in: $(head -c 600 "$tmp/out" | tr '\n' '|')\
 $(head -c 200 "$tmp/err")"; fi
}
silent() {
  if linted && ! grep -qE -- "$2" "$tmp/out"; then pass "$1"
  else fail "$1" "exit $rc, unexpected line matching '$2': $(grep -E -- "$2" "$tmp/out" | head -3)\
 $(head -c 200 "$tmp/err")"; fi
}
# An unguarded bfloat kernel (bfloat-target (a) on line 4 when the build may be below MSL 3.1).
bf() {
  mkdir -p "$(dirname "$tmp/$1")"
  cat >"$tmp/$1" <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],
                  constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  b[gid] = bfloat(a[gid]);
}
EOF
}
# The same kernel under an availability guard.
guarded() {
  mkdir -p "$(dirname "$tmp/$1")"
  cat >"$tmp/$1" <<'EOF'
#include <metal_stdlib>
using namespace metal;
#if defined(__HAVE_BFLOAT__)
kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
  b[gid] = bfloat(a[gid]);
}
#endif
EOF
}
unguarded_re='bf[0-9]*\.metal:4:[0-9]+: warning: .*native `bfloat`.*\[bfloat-target\]'

# ---- the build states a version ----
bf cm/bf1.metal; bf cm/bf2.metal
printf 'project(k)\nadd_custom_command(COMMAND xcrun metal -std=metal3.0 -c k.metal)\n' \
  >"$tmp/cm/CMakeLists.txt"
show x cm/bf1.metal
says cmake-std-shown '^metal-version = 3\.0  \(stated in the build: cm/CMakeLists\.txt:2: -std=metal3\.0\)$'
says cmake-project-marker '^project = cm  \(marker: CMakeLists\.txt\)$'
lint cm
says cmake-std-keeps-warning "cm/$unguarded_re"

bf cmd/bf1.metal; bf cmd/bf2.metal
printf 'set(CMAKE_OSX_DEPLOYMENT_TARGET "14.0" CACHE STRING "")\n' >"$tmp/cmd/CMakeLists.txt"
show x cmd/bf1.metal
says cmake-deployment-target '^metal-version = 3\.1  \(stated in the build: cmd/CMakeLists\.txt:1: CMAKE_OSX_DEPLOYMENT_TARGET "14\.0\)$'
lint cmd
silent cmake-deployment-target-silences 'bfloat-target'

bf cmc/bf1.metal
mkdir -p "$tmp/cmc/build"
printf 'project(k)\n' >"$tmp/cmc/CMakeLists.txt"
printf '# comment -std=metal2.0\nCMAKE_OSX_DEPLOYMENT_TARGET:STRING=13.0\n' \
  >"$tmp/cmc/build/CMakeCache.txt"
show x cmc/bf1.metal
says cmake-cache '^metal-version = 3\.0  \(stated in the build: cmc/build/CMakeCache\.txt:2: '

# A CMakeLists.txt in a subfolder of another's is part of the parent's project.
bf nest/kernels/bf1.metal
printf 'add_subdirectory(kernels)\nset(METAL_FLAGS -std=macos-metal2.4)\n' \
  >"$tmp/nest/CMakeLists.txt"
printf 'add_library(k)\n' >"$tmp/nest/kernels/CMakeLists.txt"
show x nest/kernels/bf1.metal
says cmake-nested-outermost '^project = nest  \(marker: CMakeLists\.txt\)$'
says cmake-nested-std '^metal-version = 2\.4  '

bf mk/bf1.metal; bf mk/bf2.metal
printf 'METALFLAGS = -std=ios-metal2.4\n# old: -std=metal1.0\n' >"$tmp/mk/Makefile"
show x mk/bf1.metal
says makefile-std '^metal-version = 2\.4  \(stated in the build: mk/Makefile:1: -std=ios-metal2\.4\)$'
bf mkv/bf1.metal; bf mkv/bf2.metal
printf 'all:\n\txcrun metal -mmacosx-version-min=14.0 -c bf1.metal\n' >"$tmp/mkv/Makefile"
show x mkv/bf1.metal
says makefile-version-min '^metal-version = 3\.1  \(stated in the build: mkv/Makefile:2: -mmacosx-version-min=14\.0\)$'
lint mkv
silent makefile-version-min-silences 'bfloat-target'

# ---- Xcode, Swift Package Manager ----
bf xc/bf1.metal; bf xc/bf2.metal
mkdir -p "$tmp/xc/App.xcodeproj"
printf '\t\t\t\tMTL_LANGUAGE_REVISION = Metal31;\n\t\t\t\tMACOSX_DEPLOYMENT_TARGET = 13.0;\n' \
  >"$tmp/xc/App.xcodeproj/project.pbxproj"
show x xc/bf1.metal
says xcode-marker '^project = xc  \(marker: \*\.xcodeproj\)$'
says xcode-lowest-wins '^metal-version = 3\.0  \(stated in the build: xc/App\.xcodeproj/project\.pbxproj:2: MACOSX_DEPLOYMENT_TARGET = 13\.0\)$'
printf '\t\t\t\tMTL_LANGUAGE_REVISION = Metal31;\n' >"$tmp/xc/App.xcodeproj/project.pbxproj"
show x xc/bf1.metal
says xcode-language-revision '^metal-version = 3\.1  \(stated in the build: .*project\.pbxproj:1: MTL_LANGUAGE_REVISION = Metal31\)$'

bf spm/Sources/K/bf1.metal; bf spm/Sources/K/bf2.metal
printf 'let package = Package(\n  name: "K",\n  platforms: [.macOS(.v14), .iOS(.v17)],\n)\n' \
  >"$tmp/spm/Package.swift"
show x spm/Sources/K/bf1.metal
says swiftpm-platforms '^metal-version = 3\.1  \(stated in the build: spm/Package\.swift:3: \.macOS\(\.v14\)\)$'
lint spm
silent swiftpm-silences 'bfloat-target'

# ---- host code ----
bf mm/bf1.metal; bf mm/bf2.metal
cat >"$tmp/mm/host.mm" <<'EOF'
// options.languageVersion = MTLLanguageVersion2_0;  (old)
MTLCompileOptions *options = [MTLCompileOptions new];
if (device.supportsBFloat && version >= MTLLanguageVersion3_1) { }
options.languageVersion = MTLLanguageVersion3_0;
EOF
show x mm/bf1.metal mm
says host-objc '^metal-version = 3\.0  \(stated in the build: mm/host\.mm:4: MTLLanguageVersion3_0\)$'
lint mm
says host-objc-keeps-warning "mm/$unguarded_re"

bf py/bf1.metal; bf py/bf2.metal
cat >"$tmp/py/build.py" <<'EOF'
# subprocess.run(["xcrun", "metal", "-std=metal2.0"])  is history
import subprocess
subprocess.run(["xcrun", "metal", "-std=metal3.1", "-c", "bf1.metal"])
EOF
show x py/bf1.metal py
says host-python '^metal-version = 3\.1  \(stated in the build: py/build\.py:3: -std=metal3\.1\)$'
lint py
silent host-python-silences 'bfloat-target'

bf cpp/bf1.metal; bf cpp/bf2.metal
cat >"$tmp/cpp/device.cpp" <<'EOF'
enum class LanguageVersion { LanguageVersion1_0 = 65536 };
auto opts = MTL::CompileOptions::alloc()->init();
opts->setLanguageVersion(MTL::LanguageVersion3_1);
EOF
show x cpp/bf1.metal cpp
says host-metal-cpp '^metal-version = 3\.1  \(stated in the build: cpp/device\.cpp:3: MTL::LanguageVersion3_1\)$'

# ---- #error below MSL 3.1: the file's own statement ----
mkdir -p "$tmp/er"
cat >"$tmp/er/needs31.metal" <<'EOF'
#if __METAL_VERSION__ < 310
#error "needs MSL 3.1"
#endif
kernel void to_bf(device bfloat *b [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  b[gid] = bfloat(1.0f);
}
EOF
show x er/needs31.metal
says error-shown '^metal-version \(this file\) = 3\.1  \(stated in the file: er/needs31\.metal:2: #error "needs MSL 3\.1"\)$'
lint er
silent error-silences 'bfloat-target'

# ---- the code's intent where the build says nothing ----
bf all/bf1.metal; bf all/sub/bf2.metal
show x all/bf1.metal all
says all-unguarded-inferred '^metal-version = 3\.1  \(inferred from code: all/bf1\.metal:4: none of 4 bfloat uses in the project.s 2 files that use bfloat is guarded\)$'
lint all
silent all-unguarded-silences 'bfloat-target'
# Branches no MSL 3.0 or 3.1 build tells apart (host code in a shared header, a later version's
# feature) do not show a project that builds below 3.1.
bf shared/bf1.metal; bf shared/bf2.metal
printf '#if !defined(__METAL_VERSION__)\n#include <stdint.h>\n#endif\n' >"$tmp/shared/args.h"
printf '#if __METAL_VERSION__ >= 320\nconstant int logs = 1;\n#endif\n' >"$tmp/shared/log.h"
show x shared/bf1.metal shared
says shared-header-still-inferred '^metal-version = 3\.1  \(inferred from code: '
printf '#if __METAL_VERSION__ >= 310\nconstant int fast = 1;\n#endif\n' >"$tmp/shared/fast.h"
show x shared/bf1.metal shared
says version-branch-not-inferred '^metal-version = unknown  '
# One file is one author's choice, not a project's: no inference.
bf one/bf1.metal
show x one/bf1.metal one
says one-file-not-inferred '^metal-version = unknown  '
lint one
says one-file-keeps-warning "one/$unguarded_re"
# Mostly guarded: the unguarded one is the defect.
guarded most/g1.metal; guarded most/g2.metal; guarded most/g3.metal; bf most/bf4.metal
show x most/bf4.metal most
says mostly-guarded-census '^bfloat census = 6 of 8 native bfloat uses guarded, in 4 files  '
says mostly-guarded-no-version '^metal-version = unknown  '
lint most
says mostly-guarded-outlier "most/$unguarded_re"
silent mostly-guarded-rest 'most/g[0-9]\.metal'

# A folder of independent projects is several projects: the first folder level below it.
bf many/p1/bf1.metal; bf many/p1/bf2.metal; guarded many/p2/g1.metal; bf many/p2/bf3.metal
lint many
silent many-p1-inferred 'many/p1/.*bfloat-target'
says many-p2-outlier "many/p2/$unguarded_re"
show x many/p1/bf1.metal many
says many-project-default '^project = many/p1  \(no project marker'

# A file named alone, in a folder with no marker, is that folder's project: its own files only
# (the folder may be a home or /tmp), not its subfolders'.
bf shallow/bf1.metal; bf shallow/sub/bf2.metal
show x shallow/bf1.metal
says named-file-folder-only '^bfloat census = 0 of 2 native bfloat uses guarded, in 1 file  '
show x shallow/bf1.metal shallow
says named-file-through-folder '^metal-version = 3\.1  \(inferred from code: '

# ---- guard macros the project's code makes ----
mkdir -p "$tmp/pg"
cat >"$tmp/pg/config.metal" <<'EOF'
#if __METAL_VERSION__ < 310 && defined(PROJ_BF16)
#undef PROJ_BF16
#endif
EOF
cat >"$tmp/pg/k.metal" <<'EOF'
#include <metal_stdlib>
using namespace metal;
#ifdef PROJ_BF16
kernel void to_bf(device bfloat *b [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  b[gid] = bfloat(1.0f);
}
#endif
EOF
bf pg/bf9.metal
show x pg/k.metal pg
says project-guard-shown '^bfloat-guards = __HAVE_BFLOAT__, PROJ_BF16  \(__HAVE_BFLOAT__: built in; PROJ_BF16: inferred from code: pg/config\.metal:2: #undef PROJ_BF16\)$'
lint pg
silent project-guard-silences 'pg/k\.metal.*bfloat-target'
says project-guard-outlier "pg/$unguarded_re"
# A macro the project also #undefs on another condition is no guard.
printf '#if defined(OLD_TOOLCHAIN)\n#undef PROJ_BF16\n#endif\n' >"$tmp/pg/other.metal"
show x pg/k.metal pg
says project-guard-denied '^bfloat-guards = __HAVE_BFLOAT__  '
lint pg
says project-guard-denied-reports 'pg/k\.metal:4:.*bfloat-target'

# ---- overrides: .lintrc, then the command line ----
printf '[kernlint]\nmetal-version = 3.0\n' >"$tmp/all/.lintrc"
show x all/bf1.metal all
says lintrc-overrides-inferred '^metal-version = 3\.0  \(\.lintrc: all/\.lintrc:2\)$'
lint all
says lintrc-overrides-findings "all/$unguarded_re"
show x all/bf1.metal all --metal-version 3.1
says cli-overrides-lintrc '^metal-version = 3\.1  \(command line: --metal-version\)$'
printf 'bfloat-guards = MY_BF\n[rules]\nbfloat-target = error\n' >"$tmp/pg/.lintrc"
show x pg/k.metal
says lintrc-guards-add '^bfloat-guards = __HAVE_BFLOAT__, MY_BF  \(__HAVE_BFLOAT__: built in; MY_BF: \.lintrc: pg/\.lintrc:1\)$'
says lintrc-rule-level '^rules\.bfloat-target = error  \(\.lintrc: pg/\.lintrc:3\)$'
says default-rule-level '^rules\.bounds-guard = error  \(default\)$'
says default-target '^target = m1  \(default\)$'

# ---- byte strides: a stride the project divides another of the same tensor by ----
# Lanes step the dimension-0 byte stride while a counter walks each lane's floats; without the
# project's evidence that stride is a runtime row (uncoalesced-access); with `nb01 / nb00` in the
# project, every `nb*0` is one element.
strided() {
  mkdir -p "$(dirname "$tmp/$1")"
  cat >"$tmp/$1" <<'EOF2'
#include <metal_stdlib>
using namespace metal;

kernel void copy_row(device const char *src [[buffer(0)]], device char *dst [[buffer(1)]],
                     constant ulong &nb00 [[buffer(2)]], constant ulong &nb10 [[buffer(3)]],
                     uint tid [[thread_position_in_threadgroup]]) {
  for (uint j = 0; j < 2; j++) ((device float *)(dst + tid * nb10))[j] = ((device const float *)(src + tid * nb00))[j];
}
EOF2
}
strided us/copy.metal
lint us
says unit-strides-none-reports 'us/copy\.metal:7:.*uncoalesced-access'
show x us/copy.metal us
says unit-strides-none-shown '^unit-strides = none  \(default\)$'
# Sizes divide too: `ne01 / ne00` with ne00 scaling an index, not a byte address, is no evidence.
cat >"$tmp/us/sizes.metal" <<'EOF2'
#include <metal_stdlib>
using namespace metal;

kernel void rows(device const float *src [[buffer(0)]], device float *out [[buffer(1)]],
                 constant int &ne00 [[buffer(2)]], constant int &ne01 [[buffer(3)]],
                 uint tid [[thread_position_in_grid]]) {
  for (int j = 0; j < 2; j++) out[tid] += src[tid * ne00 + j] * float(ne01 / ne00);
}
EOF2
show x us/copy.metal us
says unit-strides-sizes-no-evidence '^unit-strides = none  \(default\)$'
lint us
says unit-strides-sizes-reports 'us/sizes\.metal:7:.*uncoalesced-access'
rm "$tmp/us/sizes.metal"
cat >"$tmp/us/rows.metal" <<'EOF2'
#include <metal_stdlib>
using namespace metal;

kernel void row_len(device const char *src [[buffer(0)]], constant ulong &nb00 [[buffer(1)]],
                    constant ulong &nb01 [[buffer(2)]], device uint *out [[buffer(3)]]) {
  // the row's length in elements: nb11 / nb10 in a comment is no evidence
  out[0] = uint(nb01 / nb00) + uint(*((device const float *)(src + 3 * nb00)));
}
EOF2
show x us/copy.metal us
says unit-strides-inferred '^unit-strides = nb\*0  \(inferred from code: us/rows\.metal:7: `nb01 / nb00` divides a stride by `nb00`, one element.s size\)$'
lint us
silent unit-strides-inferred-silences 'uncoalesced-access'
printf '[kernlint]\nunit-strides = nb00\n' >"$tmp/us/.lintrc"
show x us/copy.metal us
says unit-strides-lintrc-wins '^unit-strides = nb00  \(\.lintrc: us/\.lintrc:2\)$'
lint us
says unit-strides-lintrc-reports 'us/copy\.metal:7:.*uncoalesced-access'
printf '[kernlint]\nunit-strides =\n' >"$tmp/us/.lintrc"
show x us/copy.metal us
says unit-strides-lintrc-empty-wins '^unit-strides = none  \(\.lintrc: us/\.lintrc:2\)$'

# A typed element pointer made from the outer strides only, then indexed by element, says the
# same: rows are contiguous. A byte pointer, or one with the dimension-0 term, says nothing.
mkdir -p "$tmp/rp"
strided rp/copy.metal
cat >"$tmp/rp/rows.metal" <<'EOF2'
#include <metal_stdlib>
using namespace metal;

kernel void row_sum(device const char *src0 [[buffer(0)]], device float *dst [[buffer(1)]],
                    constant ulong &nb00 [[buffer(2)]], constant ulong &nb01 [[buffer(3)]],
                    constant ulong &nb02 [[buffer(4)]], uint2 tg [[threadgroup_position_in_grid]]) {
  device const char *bytes = (device const char *)(src0 + tg.x * nb01 + tg.y * nb02);
  device const float *with0 = (device const float *)(src0 + tg.x * nb01 + 2 * nb00);
  dst[tg.x] = float(bytes[0]) + with0[0];
}
EOF2
show x rp/copy.metal rp
says unit-strides-byte-pointer-no-evidence '^unit-strides = none  \(default\)$'
cat >>"$tmp/rp/rows.metal" <<'EOF2'

kernel void row_first(device const char *src0 [[buffer(0)]], device float *dst [[buffer(1)]],
                      constant ulong &nb01 [[buffer(2)]], constant ulong &nb02 [[buffer(3)]],
                      uint2 tg [[threadgroup_position_in_grid]]) {
  device const float *row = (device const float *)(src0 + tg.x * nb01 + tg.y * nb02);
  dst[tg.x] = row[0];
}
EOF2
show x rp/copy.metal rp
says unit-strides-row-pointer '^unit-strides = nb\*0  \(inferred from code: rp/rows\.metal:15: `\(device const float \*\)\(src0 \+ tg\.x \* nb01 \+ tg\.y \* nb02\)` makes an element pointer from the outer strides only\)$'
lint rp
silent unit-strides-row-pointer-silences 'uncoalesced-access'

# ---- errors ----
show x nope.metal
if [ "$rc" = 2 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = \
  "kernlint: nope.metal: no such file or directory" ]; then pass show-missing-file
else fail show-missing-file "exit $rc, stderr: $(cat "$tmp/err")"; fi
show x all/bf1.metal all one
if [ "$rc" = 2 ] && grep -q 'takes at most one PATH' "$tmp/err"; then pass show-two-paths
else fail show-two-paths "exit $rc, stderr: $(cat "$tmp/err")"; fi

exit $((failures > 0))
