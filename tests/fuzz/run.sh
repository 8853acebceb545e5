#!/usr/bin/env bash
# Replays each harness's regression inputs (tests/fuzz/<harness>/), then fuzzes it for
# FUZZ_SECONDS from a corpus under BUILD_DIR seeded from tests/fixtures and tests/ir. Exits
# non-zero on any crash, hang, leak or sanitizer report; the input that set it off is left in
# BUILD_DIR/artifacts/<harness>/.
# Usage: tests/fuzz/run.sh BUILD_DIR HARNESS...    (FUZZ_SECONDS, default 60; FUZZ_FLAGS: more
#        libFuzzer options, e.g. -fork=1 -ignore_crashes=1 for a long campaign)
#        tests/fuzz/run.sh --probe CC   (exit 0 when CC can link a libFuzzer harness)
set -u
if [ "${1:-}" = --probe ]; then
  probe=$(mktemp -d)
  trap 'rm -rf "$probe"' EXIT
  printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return (int)(d && n) * 0; }' \
    >"$probe/p.c"
  "${2:-clang}" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1
  exit
fi
build=$1
shift
seconds=${FUZZ_SECONDS:-60}
rc=0

# Seeds: every fixture, behind the control byte that makes the harness read it as what it is.
seed() { # harness dir
  local h=$1 dir=$2 f ctl
  rm -rf "$dir"
  mkdir -p "$dir"
  while IFS= read -r f; do
    ctl=
    case "$h:$f" in
      fuzz_engine:*.metal) ctl='\000' ;;
      fuzz_engine:*.h | fuzz_engine:*.inc) ctl='\001' ;;
      fuzz_engine:*.py) ctl='\002' ;;
      fuzz_engine:*.mm | fuzz_engine:*.m | fuzz_engine:*.cpp | fuzz_engine:*.cc) ctl='\003' ;;
      fuzz_config:*.lintrc) ctl='\000' ;;
      fuzz_config:*.py) grep -q kernlint- "$f" && ctl='\002' ;;
      fuzz_config:*) grep -q kernlint- "$f" && ctl='\001' ;;
      fuzz_lsp:*.metal) ctl='\000' ;;
      fuzz_lsp:*.py) ctl='\001' ;;
    esac
    [ -n "$ctl" ] || continue
    { printf "$ctl"; cat "$f"; } >"$dir/$(printf '%s' "$f" | cksum | cut -d' ' -f1)"
  done < <(find tests/fixtures tests/ir -type f)
}

for h in "$@"; do
  bin=$build/$h
  corpus=$build/corpus/$h seeds=$build/seeds/$h art=$build/artifacts/$h/
  mkdir -p "$corpus" "$art"
  seed "$h" "$seeds"
  opts=(-rss_limit_mb=2048 -timeout=10 -artifact_prefix="$art" -print_final_stats=1)
  [ -f "tests/fuzz/$h.dict" ] && opts+=(-dict="tests/fuzz/$h.dict")
  regress=()
  [ -d "tests/fuzz/$h" ] && regress=("tests/fuzz/$h")
  if [ ${#regress[@]} -gt 0 ] && ls "tests/fuzz/$h"/* >/dev/null 2>&1; then
    if "$bin" "${opts[@]}" tests/fuzz/"$h"/* >"$build/$h.replay.log" 2>&1; then
      echo "PASS $h: regression inputs"
    else
      tail -40 "$build/$h.replay.log"
      echo "FAIL $h: a regression input under tests/fuzz/$h/ fails again"
      rc=1
      continue
    fi
  fi
  # The corpus folder comes first: libFuzzer adds new inputs only to it, never to tests/.
  # shellcheck disable=SC2086
  "$bin" "${opts[@]}" -max_total_time="$seconds" ${FUZZ_FLAGS:-} \
    "$corpus" "$seeds" "${regress[@]}" >"$build/$h.log" 2>&1
  st=$?
  grep -E '^(stat::|#[0-9]+[[:space:]]+DONE|Done )' "$build/$h.log" | sed "s/^/  [$h] /"
  if [ "$st" -ne 0 ]; then
    grep -vE '^(#[0-9]+|INFO:|stat::)' "$build/$h.log" | tail -40
    echo "FAIL $h: libFuzzer exited with status $st after a report (log: $build/$h.log," \
      "input: $art)"
    rc=1
  else
    echo "PASS $h: ${seconds}s of fuzzing, no crash, hang or leak"
  fi
done
exit $rc
