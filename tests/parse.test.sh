#!/usr/bin/env bash
# Parse quality: every fixture under tests/fixtures/parse shows a class of MSL that the dialect
# layer must bring to tree-sitter-cpp as clean C++, so each must parse with no ERROR node, as the
# engine parses it (dialect layer and macro expansion). The findings they must (not) produce are
# the fixture runner's business. Run from the repo root with KERNLINT and BUILD set.
. tests/lib.sh
stats="$BUILD/tools/parse-stats"
if [ ! -x "$stats" ]; then
  echo "FAIL parse: $stats is not built (make BUILD=$BUILD $stats)"
  exit 1
fi
n=0
for f in tests/fixtures/parse/*.metal tests/fixtures/parse/*.h; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  name="parse-clean-$(basename "$f")"
  line=$("$stats" "$f" 2>&1)
  IFS=$'\t' read -r _ bytes ebytes enodes <<<"$line"
  if [ "${enodes:-}" = 0 ] && [ "${bytes:-0}" != - ] && [ "${bytes:-0}" -gt 0 ]; then pass "$name"
  else
    why=$("$stats" -v "$f" 2>&1 >/dev/null | head -3 | tr '\n' ' ')
    fail "$name" "${enodes:-?} ERROR node(s), ${ebytes:-?} bytes: ${why:-$line}"
  fi
done
[ "$n" -gt 0 ] || fail parse-fixtures "no fixture under tests/fixtures/parse"
[ "$failures" -eq 0 ]
