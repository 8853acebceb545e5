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
