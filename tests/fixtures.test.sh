#!/usr/bin/env bash
# Every fixture under tests/fixtures must produce exactly the findings its `expect:` notes name.
# Run from the repo root with KERNLINT and BUILD set (tests/run.sh does).
set -u
runner="${BUILD:?BUILD is not set}/tools/fixtures"
if [ ! -x "$runner" ]; then
  echo "FAIL fixtures: $runner is not built (make BUILD=$BUILD $runner)"
  exit 1
fi
exec "$runner" tests/fixtures
