# Shared preamble for the shell tests (sourced, not run): absolute paths to kernlint and the test
# tools, a scratch folder removed at exit, and the PASS/FAIL reporting that tests/run.sh counts.
# Run the tests from the repo root with KERNLINT (and BUILD) set, as tests/run.sh does.
set -u
: "${KERNLINT:=build/release/kernlint}"
: "${BUILD:=$(dirname "$KERNLINT")}"
# Absolute, so tests can run it from other folders.
KERNLINT="$(cd "$(dirname "$KERNLINT")" && pwd)/$(basename "$KERNLINT")"
TOOLS="$(cd "$BUILD/tools" 2>/dev/null && pwd)"
JSON_GET="$TOOLS/json-get"
SAMPLE="$TOOLS/emit-sample"
tmp=$(mktemp -d)
# Tests may leave unreadable files behind (permission checks): make them removable first.
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
failures=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; failures=$((failures + 1)); }
# A check that cannot run on this machine says so; tests/run.sh counts it apart, never as a PASS.
skip() { echo "SKIP $1: $2"; }

# Two small kernels the CLI-facing tests (pre-commit, the action, GitHub annotations) lint: one
# with a barrier under thread-dependent control (a barrier-divergence error on line 10), and a
# guarded elementwise kernel that is clean.
sample_bad_metal() {
  cat <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void tile_sum(device const float *in [[buffer(0)]], device float *out [[buffer(1)]],
                     threadgroup float *tile [[threadgroup(0)]],
                     uint gid [[thread_position_in_grid]],
                     uint lid [[thread_position_in_threadgroup]]) {
  tile[lid] = in[gid];
  if (lid < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = tile[lid] + tile[lid + 16];
  }
}
EOF
}
sample_good_metal() {
  cat <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void add_one(device const float *a [[buffer(0)]], device float *b [[buffer(1)]],
                    constant uint &n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
  if (gid >= n) return;
  b[gid] = a[gid] + 1.0f;
}
EOF
}
