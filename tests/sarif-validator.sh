#!/usr/bin/env bash
# Microsoft's SARIF validator, from the npm registry, installed under build/tools/sarif.
#   tests/sarif-validator.sh --install      install the pinned version (make deps)
#   tests/sarif-validator.sh FILE.sarif...  validate; prints the validator's report
set -euo pipefail
version=5.7.0
dir=build/tools/sarif
bin=$dir/node_modules/.bin/sarif-multitool
export DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1 DOTNET_CLI_TELEMETRY_OPTOUT=1
if [ "${1:-}" = "--install" ]; then
  if [ -x "$bin" ] && [ "$(cat "$dir/.version" 2>/dev/null)" = "$version" ]; then exit 0; fi
  mkdir -p "$dir"
  (cd "$dir" && npm install --silent --no-audit --no-fund --no-save "@microsoft/sarif-multitool@$version" >/dev/null)
  # The binary's own postinstall chmod may be skipped by npm's install-script policy.
  chmod u+x "$dir"/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool 2>/dev/null || true
  echo "$version" > "$dir/.version"
  exit 0
fi
[ -x "$bin" ] || { echo "sarif validator not installed: run make deps" >&2; exit 2; }
exec "$bin" validate "$@"
