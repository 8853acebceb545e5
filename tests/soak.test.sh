#!/usr/bin/env bash
# The language server through a day of editing (tests/lsp_soak.py): random edits across several
# open documents, each version's diagnostics against a fresh kernlint run, the server alive and
# its memory flat. The suite runs a short form (SOAK_EDITS, 300 by default); `make soak` runs
# 10,000 edits on the release and ASan builds. Memory is not judged under a sanitizer, whose
# quarantine holds freed memory on purpose. SOAK_SEED picks another sequence of edits.
. "$(dirname "$0")/lib.sh"
if ! command -v python3 >/dev/null; then
  skip soak "python3 is not installed"
  exit 0
fi
rss=()
case "${BUILD:-}" in *asan* | *ubsan* | *tsan*) rss=(--no-rss) ;; esac
timeout 3000 python3 tests/lsp_soak.py "$KERNLINT" tests/fixtures "$tmp" "${SOAK_EDITS:-300}" \
  "${SOAK_SEED:-1}" "${rss[@]}"
rc=$?
[ $rc = 0 ] || [ $rc = 1 ] || fail soak "the soak client ended with status $rc"
exit $rc
