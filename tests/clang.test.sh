#!/usr/bin/env bash
# kernlint builds with clang as well as gcc (macOS has only Apple clang), checked cheaply:
#   - every C source, tools, unit tests and fuzz harnesses included, passes clang's front end
#     with the build's flags, -Werror among them (`make CC=clang syntax-check`);
#   - the commands `make CC=clang` would run to build kernlint (release flavour, LTO) carry none
#     of gcc's own flags (its LTO job count, its warnings, its profile options), which clang
#     rejects or, under -Werror, fails on.
# Skipped where clang or make is missing. Neither check runs kernlint.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
clang=${CLANG:-clang}
if ! command -v "$clang" >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1; then
  skip clang-syntax "$clang or make is not installed (apt-get install clang; make deps)"
  skip clang-flags "$clang or make is not installed"
  exit 0
fi
# The suite may run under make: its command-line variables (CC, BUILD, OPT, SAN...) must not
# reach these runs, which say what they build. make puts them in the environment of the recipes
# as well as in MAKEFLAGS (`make asan` runs the suite with OPT="-O1 -g" and SAN set there).
unset MAKEFLAGS MFLAGS MAKELEVEL OPT SAN BUILD CFLAGS LDFLAGS PGO CHECK_AGAIN
if make -s --no-print-directory CC="$clang" syntax-check >"$tmp/syntax.log" 2>&1; then
  pass clang-syntax
else
  fail clang-syntax "make CC=$clang syntax-check: $(grep -m5 -E 'error|warning' "$tmp/syntax.log" |
    tr '\n' '|' | cut -c1-800)"
fi

# -B -n: every command of a full release build, printed, nothing run or written (the flags
# stamp's recipe included). PGO=1 as by default: the profile must stay gcc's alone.
make -B -n --no-print-directory CC="$clang" BUILD=build/release PGO=1 build/release/kernlint \
  >"$tmp/cmds" 2>&1
rc=$?
gcc_only='-flto=auto|-Wno-maybe-uninitialized|-fprofile-[a-z-]+|-dumpbase|-Wno-missing-profile'
gcc_only="$gcc_only|-Wno-coverage-mismatch"
gccisms=$(grep -oE -- "$gcc_only" "$tmp/cmds" | sort -u | tr '\n' ' ')
if [ "$rc" = 0 ] && grep -q -- '-flto' "$tmp/cmds" && [ -z "$gccisms" ]; then pass clang-flags
else
  fail clang-flags "make -n CC=$clang exit $rc; gcc-only flags: ${gccisms:-none}; \
$(grep -c -- -flto "$tmp/cmds") commands with -flto"
fi
[ "$failures" -eq 0 ]
