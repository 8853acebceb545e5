#!/usr/bin/env bash
# Proves the fixtures of the analysis-core rules right (SPEC §4), so that a rule agreeing with its
# fixtures means something:
#   bounds-guard (with the classes of tests/fixtures/real/bounds-guard), barrier-divergence: each
#     fixture is translated to OpenCL C (tests/tools/msl2cl) and run by oclgrind-kernel on a grid
#     rounded up past the data, or on the exact grid a reference says it is dispatched on
#     (tests/proofs/<path>.sim, or <path>.<run>.sim for each of several kernels or
#     specialisations). A defective kernel must make Oclgrind report the out-of-bounds access
#     ("Invalid read/write of size") or the divergence ("Work-group divergence detected"), on
#     exactly the lines its `expect:` (and `expect-also:`) notes name. A reference must run with
#     no Oclgrind message at all (data-race and uninitialized-value checks on) and dump its
#     expected output (tests/proofs/<path>[.<run>].expected). tests/proofs/exempt lists the
#     fixtures that cannot be run, each with the reason; any other without a proof fails.
#   threadgroup-race: the same translation and run, with Oclgrind's race detector: a defective
#     kernel must make it report data races in local memory and nothing else, each between a
#     pair of accesses its .sim lists (`# race: FIRST SECOND`), every listed pair at least once,
#     and the SECOND accesses (where the rule reports) must be exactly the `expect:` lines
#     (race_run). A reference runs clean and dumps its expected output, as above.
#   half-accumulator: every fixture kernel is compiled as C++ with half as _Float16
#     (tests/proofs/half-accumulator/: msl.hh emulates the MSL it uses, proof.cc feeds each pair
#     long reductions): the defective kernel's error against float64 must exceed the tolerance,
#     the reference's stay within it.
#   uncoalesced-access: both kernels of a pair run under Oclgrind with every device access traced
#     (msl2cl --trace); both must dump the expected output, and the 128-byte lines one 32-lane SIMD
#     group touches per access are counted against the fewest its data could fit in (see
#     line_counts): over that at exactly the `expect:` lines of the defective kernel, within it
#     everywhere in the reference.
#   half-accumulator fixes: each defective kernel as `kernlint --fix` rewrites it takes its
#     reference's place in the same numeric proof, and must pass it as the reference does; one
#     that tests/proofs/half-accumulator/nofix lists (with the reason) must get no fix at all.
#   mutations: a reference turned into its defective twin (guard deleted, also before a helper
#     call, early return added, a helper from another file handed the thread's item, chunk
#     doubled, bad_ and good_ half-accumulator kernels swapped, a threadgroup-race reference's
#     barrier deleted or its same-value store made per-thread) must make its proof fail.
#   self-checks: the proof machinery itself must reject what it exists to reject (a NaN or
#     incomplete dump, a strided reference, race pairs a .sim misdescribes).
# Each fixture's check also holds kernlint to the proof: its findings in the fixture must be the
# `expect:` notes the proof just showed right (for bounds-guard and barrier-divergence, the lines
# where Oclgrind sees the defect; for threadgroup-race, the second accesses of the races it
# sees), nothing for a reference. So every fixture check fails under a kernlint that prints
# nothing. Exempt, since they never run kernlint: the self-checks (selfcheck-compare-dump,
# selfcheck-strided-reference, selfcheck-race-pairs) and the mutations (mutation-*), which prove
# that the proofs catch a defect, not that kernlint does.
# Run from the repo root with KERNLINT and BUILD set (tests/run.sh does); needs
# $BUILD/tools/msl2cl, $BUILD/tools/json-get, c++ (g++ 12 or later, for _Float16 and C++20) and
# oclgrind-kernel.
set -u
# In make check's second flavour (ASan+UBSan) the proofs have run already: Oclgrind's verdicts on
# the fixtures do not depend on how kernlint was built, and kernlint's findings on every fixture
# are checked in each flavour by fixtures.test.sh. `make asan` alone still runs them.
if [ -n "${KL_CHECK_AGAIN:-}" ]; then
  echo "SKIP proofs: ran in this make check's release flavour (Oclgrind's verdicts do not" \
    "depend on the build)"
  exit 0
fi
build=${BUILD:?BUILD is not set}
kernlint=${KERNLINT:?KERNLINT is not set}
msl2cl="$build/tools/msl2cl"
json_get="$build/tools/json-get"
fixtures=tests/fixtures
proofs=tests/proofs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; status=1; }

oclgrind_ok=1
command -v oclgrind-kernel >/dev/null 2>&1 || oclgrind_ok=0
for tool in "$msl2cl" "$json_get"; do
  if [ ! -x "$tool" ]; then
    echo "FAIL proofs: $tool is not built (make BUILD=$build $tool)"
    exit 1
  fi
done
# -cl-opt-disable: the kernel runs as written. Otherwise clang may sink a load that sits above
# its guard (bad_guard_after_access) below it, and Oclgrind would never see the access.
ocl_opts=(--build-options -cl-opt-disable --data-races --uninitialized)
simd=32

# ---- half-accumulator builds, started first so that they overlap the Oclgrind runs -------------
# half_kernels SRCDIR OUT: every kernel of SRCDIR as C++ for msl.hh, in a namespace named after
# its file. Token edits only, so that each line stays its fixture's line (#line names the
# fixture in compiler messages): <metal_stdlib> and the address-space keywords go (a buffer is a
# plain pointer, `constant T&` a reference), attributes go except thread coordinates, which
# become default arguments reading the running lane's, and 0.5h becomes half(0.5). One sed and
# one awk for all the files: a process per file costs more than the compiler.
half_kernels() {
  local num='([0-9]+[.][0-9]*|[.][0-9]+|[0-9]+)([eE][-+]?[0-9]+)?'
  sed -s -E -e '1i @@kl-file@@' \
    -e 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*<metal_stdlib>.*$||' \
    -e 's/\[\[[[:space:]]*kernel[[:space:]]*\]\]//g' \
    -e 's/\[\[[[:space:]]*([a-z_]+)[[:space:]]*\]\]/= ::kl::lane->\1/g' \
    -e 's/\[\[[^]]*\]\]//g' \
    -e 's/\b(device|constant|thread|kernel)\b//g' \
    -e "s/(^|[^A-Za-z0-9_.])$num[hH]\\b/\\1half(\\2\\3)/g" \
    "$1"/*.metal |
    awk -v list="$(printf '%s\n' "$1"/*.metal)" '
      BEGIN { nf = split(list, files, "\n") }
      $0 == "@@kl-file@@" {
        if (n) print "}"
        f = files[++n]; name = f; sub(/.*\//, "", name); sub(/\.metal$/, "", name)
        printf "namespace %s {\n#line 1 \"%s\"\n", name, f
        next
      }
      { code = $0; sub(/\/\/.*/, "", code) }
      code ~ /(^|[^A-Za-z0-9_])threadgroup([^A-Za-z0-9_]|$)/ {
        printf "%s: uses threadgroup memory, which msl.hh does not emulate\n", f >"/dev/stderr"
        refused = 1
        exit 1
      }
      { print }
      END {
        if (refused) exit 1
        if (n) print "}"
        if (n != nf) { print "an empty .metal file in the way" >"/dev/stderr"; exit 1 }
      }' >"$2"
}

# half_build SRCDIR OUTDIR: OUTDIR/proof from the kernels of SRCDIR; messages in OUTDIR/build.err,
# and "built" in OUTDIR/status once it is.
# Runs in the background, niced so as not to hold up the Oclgrind runs in the foreground. -O0:
# quickest to build and run. The fixtures are kernels, not C++ written to be warning-free, hence
# the unused-entity warnings off.
half_build() {
  mkdir -p "$2" &&
    half_kernels "$1" "$2/kernels.inc" 2>"$2/build.err" &&
    nice c++ -std=c++20 -O0 -pthread -Wall -Wextra -Werror -Wno-unused-parameter \
      -Wno-unused-variable -Wno-unused-but-set-variable -I"$2" \
      "$proofs/half-accumulator/proof.cc" -o "$2/proof" 2>>"$2/build.err" &&
    echo built >"$2/status"
}

# Whether the background build in $tmp/DIR succeeded (it must have ended: wait for builds_pid).
built() { [ "$(cat "$tmp/$1/status" 2>/dev/null)" = built ]; }

# The first compiler error (or refusal) of the build in $tmp/DIR.
build_error() { grep -m1 -E 'error|msl.hh' "$tmp/$1/build.err" || head -1 "$tmp/$1/build.err"; }

half_ok=1
command -v c++ >/dev/null 2>&1 || half_ok=0
if [ $half_ok -eq 1 ]; then
  # The mutation: copies of the fixtures with every pair's bad_ and good_ kernels exchanged.
  mkdir -p "$tmp/half_swapped.src"
  for f in "$fixtures/half-accumulator"/*.metal; do
    b=${f##*/}
    case $b in
    bad_*) cp "$f" "$tmp/half_swapped.src/good_${b#bad_}" ;;
    good_*) cp "$f" "$tmp/half_swapped.src/bad_${b#good_}" ;;
    esac
  done
  # The fixes: each pair's good_ kernel replaced by what `kernlint --fix` makes of its bad_ one,
  # so that the fix is proven as accurate as a reference, not only lint-clean. A pair that
  # half-accumulator/nofix lists gets no fix: its reference stays, and a copy of its bad_ kernel
  # must come back from --fix unchanged.
  half_nofix=$(sed -n 's/^\([A-Za-z0-9_]*\):.*/\1/p' "$proofs/half-accumulator/nofix")
  mkdir -p "$tmp/half_fixed.src" "$tmp/half_nofix"
  for f in "$fixtures/half-accumulator"/bad_*.metal; do
    b=${f##*/}
    pair=${b#bad_}
    pair=${pair%.metal}
    cp "$f" "$tmp/half_fixed.src/$b"
    if grep -qx "$pair" <<<"$half_nofix"; then
      cp "$f" "$tmp/half_nofix/$b"
      cp "$fixtures/half-accumulator/good_$pair.metal" "$tmp/half_fixed.src/good_$pair.metal"
    else
      cp "$f" "$tmp/half_fixed.src/good_$pair.metal"
    fi
  done
  timeout 120 "$kernlint" --fix -q --exit-zero "$tmp/half_fixed.src"/good_*.metal \
    >"$tmp/half_fixed.lint" 2>&1
  half_fixed_rc=$?
  if [ -n "$half_nofix" ]; then
    timeout 120 "$kernlint" --fix -q --exit-zero "$tmp/half_nofix"/*.metal \
      >"$tmp/half_nofix.lint" 2>&1 || half_fixed_rc=$?
  fi
  # One after the other, so as to take one core from the Oclgrind runs, not two.
  (
    half_build "$fixtures/half-accumulator" "$tmp/half"
    half_build "$tmp/half_swapped.src" "$tmp/half_swapped"
    half_build "$tmp/half_fixed.src" "$tmp/half_fixed"
  ) &
  builds_pid=$!
fi

# Sorted line numbers of a fixture that carry `// expect: RULE`, or `// expect-also: RULE` (a
# further barrier a finding names as related): the run must show the defect on both. A race's
# related location is the FIRST access of its pair, which race_run holds to the .sim, so for
# threadgroup-race only the `expect:` lines are where the run must show the (SECOND) accesses.
annotated() {
  local also='(-also)?'
  [ "$2" != threadgroup-race ] || also=''
  grep -n -E -- "// expect$also: $2\$" "$1" | cut -d: -f1 | sort -n | uniq | tr '\n' ' '
}

# Sorted distinct line numbers Oclgrind gives ("At line N of FILE:") for messages matching
# PATTERN in ERR. A line of another file than FIXTURE or the translated input.cl (a local header
# msl2cl joined, under its own #line) is given as FILE:N, so that it never passes for the
# fixture's line N.
at_line='function at_line(s, fixture,   l, f) {
    match(s, /At line [0-9]+/); l = substr(s, RSTART + 8, RLENGTH - 8)
    if (match(s, / of [^ ]+:$/)) {
      f = substr(s, RSTART + 4, RLENGTH - 5)
      if (f != fixture && f != "input.cl") return f ":" l
    }
    return l + 0
  }'
reported() { # ERR PATTERN FIXTURE
  awk -v pat="$2" -v fixture="$3" "$at_line"'
    $0 ~ pat { want = 1 }
    want && /At line [0-9]+/ { print at_line($0, fixture); want = 0 }' \
    "$1" | sort -n | uniq | tr '\n' ' '
}

# Number of work-items of a .sim file's NDRange (tokens 3..5 once comments are gone).
sim_threads() {
  sed 's/#.*//' "$1" | tr -s ' \t' '\n\n' | grep -v '^$' | sed -n 3,5p |
    awk 'BEGIN { n = 1 } { n *= $1 } END { print n }'
}

# Translate METAL and run it under Oclgrind with the .sim SIM; files go to $tmp/TAG.*.
# With TRACE set, device accesses are traced into an extra last argument kl_trace. A
# `# msl2cl: ARGS` line of the .sim gives msl2cl more arguments (the template instantiation, the
# function-constant values of the run). A fixture that calls functions defined in another file
# (declared only in it) has their definitions beside its .sim, $proofs/<path>.defs.metal, which
# msl2cl translates after it (--with); a mutated copy of such a fixture names them in $with_defs.
# Returns non-zero with the reason in $why when the kernel could not be run at all.
run_kernel() {
  local metal=$1 sim=$2 tag=$3 trace=${4:-}
  local base="$tmp/$tag"
  local targs=() opts=() defs=${with_defs:-}
  [ -n "$trace" ] && targs=(--trace "$base.sites")
  if [ -z "$defs" ]; then
    defs="$proofs/${metal#"$fixtures/"}"
    defs="${defs%.metal}.defs.metal"
  fi
  [ -f "$defs" ] && targs+=(--with "$defs")
  read -ra opts <<<"$(sed -n 's/^#[[:space:]]*msl2cl:[[:space:]]*//p' "$sim" | tr '\n' ' ')"
  if ! "$msl2cl" "${targs[@]}" "${opts[@]}" "$metal" >"$base.cl" 2>"$base.msl2cl"; then
    why="msl2cl failed: $(head -1 "$base.msl2cl")"
    return 1
  fi
  sed "s|@CL@|$base.cl|" "$sim" >"$base.sim"
  if [ -n "$trace" ]; then
    # msl2cl's helper keeps each thread's first index at each site. Keep the first `depth`
    # instead, enough executions for a lane to cover 16 bytes (a float4) with its smallest
    # element, so that line_counts can see a lane's consecutive scalar accesses as one chunk.
    local nsites threads depth cl
    nsites=$(wc -l <"$base.sites")
    threads=$(sim_threads "$sim")
    depth=$(awk 'BEGIN { m = 16 } $4 > 0 && $4 < m { m = $4 } END { print int(16 / m) }' \
      "$base.sites")
    echo "$depth" >"$base.depth"
    local once='if (t[slot] == 0xffffffffu) t[slot] = idx;'
    local many="if (t[slot * ${depth}u + ${depth}u - 1] == 0xffffffffu)"
    many="$many for (uint k = 0; k < ${depth}u; k++) if (t[slot * ${depth}u + k] == 0xffffffffu)"
    many="$many { t[slot * ${depth}u + k] = idx; break; }"
    cl=$(<"$base.cl")
    if [[ "$cl" != *"$once"* ]]; then
      why="the trace helper of msl2cl changed: no \"$once\" to record $depth executions per site"
      return 1
    fi
    printf '%s\n' "${cl/"$once"/"$many"}" >"$base.cl"
    [ "$nsites" -gt 0 ] || nsites=1
    echo "<size=$((nsites * threads * depth * 4)) uint fill=4294967295 dump>  # kl_trace" \
      >>"$base.sim"
  fi
  timeout 120 oclgrind-kernel "${ocl_opts[@]}" "$base.sim" >"$base.out" 2>"$base.err"
  local rc=$?
  if [ $rc -ne 0 ] || grep -qE 'OCLGRIND FATAL|Build failure|Unable to|Failed to|Line [0-9]+:' \
    "$base.err"; then
    why="oclgrind-kernel did not run the kernel (status $rc): $(grep -m1 -vE '^\s*$' "$base.err")"
    return 1
  fi
  return 0
}

# Compare the dump in OUT with EXPECTED ("name[i] = v" lines): every expected element must be
# dumped exactly once, as a finite decimal number within 1e-5 relative (Oclgrind prints 6
# significant digits), and nothing else dumped under that name. NaN, inf and anything else that is
# not a plain number fail, on either side: awk's `d > tol` is false for NaN, so the test is written
# `!(d <= tol)` and the numbers are checked by their spelling first. Prints "N values" or the
# first problem; returns non-zero on any.
compare_dump() {
  awk 'function num(v) { return v ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ }
    FNR == NR {
      if (NF != 3 || $2 != "=" || $1 !~ /^[A-Za-z_0-9]+\[[0-9]+\]$/ || !num($3) || ($1 in want)) {
        printf "bad expected line %d: %s\n", FNR, $0; bad = 1; exit 1
      }
      want[$1] = $3; name = $1; sub(/\[.*/, "", name); names[name] = 1; n++; next
    }
    /^  [A-Za-z_0-9]+\[[0-9]+\] = / {
      nm = $1; sub(/\[.*/, "", nm)
      if (!(nm in names)) next
      if (!($1 in want)) { printf "unexpected %s = %s\n", $1, $3; bad = 1; exit 1 }
      if ($1 in got) { printf "%s dumped twice\n", $1; bad = 1; exit 1 }
      if (NF != 3 || !num($3)) {
        printf "%s = %s is not a finite number\n", $1, $3; bad = 1; exit 1
      }
      got[$1] = $3
      d = $3 - want[$1]; if (d < 0) d = -d
      w = want[$1]; if (w < 0) w = -w
      if (!(d <= 1e-5 * w + 1e-6)) {
        printf "%s = %s, expected %s\n", $1, $3, want[$1]; bad = 1; exit 1
      }
    }
    END { if (bad) exit 1
      if (n == 0) { print "nothing expected"; exit 1 }
      for (k in want) if (!(k in got)) { printf "%s missing from the dump\n", k; exit 1 }
      printf "%d values\n", n }' "$2" "$1"
}

# The reference proof: runs clean (no Oclgrind message) and dumps the expected output.
prove_clean() {
  local metal=$1 sim=$2 expected=$3 tag=$4 trace=${5:-}
  run_kernel "$metal" "$sim" "$tag" "$trace" || return 1
  if [ -s "$tmp/$tag.err" ]; then
    why="Oclgrind reports: $(grep -m1 -vE '^\s*$' "$tmp/$tag.err")"
    return 1
  fi
  local cmp
  if ! cmp=$(compare_dump "$tmp/$tag.out" "$expected"); then
    why="output differs from $expected: $cmp"
    return 1
  fi
  why="$clean_head$cmp"
  return 0
}
clean_head="runs clean under Oclgrind (data races and uninitialized values checked); output \
matches "

# One defect run: Oclgrind reports PATTERN, and only at lines annotated with RULE. Sets
# $defect_count and $defect_lines (sorted, space-separated) for the caller to add up.
# threadgroup-race runs go to race_run instead.
defect_run() {
  local metal=$1 sim=$2 tag=$3 rule=$4 pattern=$5 what=$6
  if [ "$rule" = threadgroup-race ]; then
    race_run "$metal" "$sim" "$tag"
    return
  fi
  run_kernel "$metal" "$sim" "$tag" || return 1
  local want l
  defect_count=$(grep -cE "$pattern" "$tmp/$tag.err")
  want=" $(annotated "$metal" "$rule")"
  defect_lines=$(reported "$tmp/$tag.err" "$pattern" "$metal")
  if [ "$defect_count" -eq 0 ]; then
    why="Oclgrind reports no $what"
    return 1
  fi
  for l in $defect_lines; do
    if [[ "$want" != *" $l "* ]]; then
      why="Oclgrind reports $what at lines [ $defect_lines] but the expect: notes are at [$want]"
      return 1
    fi
  done
  return 0
}

# One threadgroup-race defect run. A data race has two accesses, and Oclgrind names both (two
# "At line" lines per message, in no particular order), so the run is held to pairs, not lines:
# the .sim lists the race its kernel has, one `# race: FIRST SECOND` line per pair of racing
# accesses (FIRST the access earlier in program order, SECOND the later one: after it in the
# same pass, or in the next iteration across a loop's back edge, or in the helper's next call;
# the same line twice for a statement that races with itself from one iteration to the next).
# The run must show:
#   - every Oclgrind message a data race in local memory ("Read-write data race at local
#     memory" or "Write-write ..."; nothing else, apart from the notice that Oclgrind stops
#     printing after 1000 errors);
#   - the two lines of every message, as an unordered pair, one of the listed pairs;
#   - every listed pair at least once;
# and the listed pairs must agree with the fixture: the SECOND lines, where the rule reports,
# are exactly its `expect:` lines (FIRST is the finding's related location, which the proof
# reads from the .sim, since the fixture annotates the reported line only). So the race Oclgrind
# sees is the one annotated, between the two accesses named, and no other.
# Sets $defect_count, $defect_lines (the SECOND lines seen) and $race_pairs ("F-S xN" each).
race_pattern='^(Read-write|Write-write) data race at local memory'
race_run() {
  local metal=$1 sim=$2 tag=$3 verdict
  run_kernel "$metal" "$sim" "$tag" || return 1
  if ! verdict=$(awk -v pat="$race_pattern" -v fixture="$metal" "$at_line"'
    FILENAME == ARGV[1] {
      if ($0 ~ /^#[[:space:]]*race:/) {
        if (!match($0, /^#[[:space:]]*race:[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]*$/)) {
          printf "bad race line in the .sim: %s\n", $0; bad = 1; exit 1
        }
        split($0, w, /[^0-9]+/); f = w[2] + 0; s = w[3] + 0
        key = f < s ? f " " s : s " " f
        if (key in pair) { printf "pair %s listed twice\n", key; bad = 1; exit 1 }
        pair[key] = f "-" s; second[s] = 1; first[f] = 1; npairs++; order[npairs] = key
      }
      next
    }
    FILENAME == ARGV[2] {
      if ($0 ~ /\/\/ expect: threadgroup-race$/) expect[FNR] = 1
      if ($0 ~ /\/\/ expect-also: threadgroup-race$/) also[FNR] = 1
      next
    }
    # Oclgrind output: a message starts at column 0; its lines below are indented.
    /^[^[:space:]]/ {
      if ($0 ~ /^Oclgrind: [0-9]+ errors generated - suppressing further errors$/) next
      if (inmsg) close_msg()
      if ($0 !~ pat) { printf "Oclgrind reports something else: %s\n", $0; bad = 1; exit 1 }
      inmsg = 1; nl = 0; nmsg++
      next
    }
    inmsg && /At line [0-9]+/ { nl++; at[nl] = at_line($0, fixture) }
    function close_msg(   key) {
      inmsg = 0
      if (nl != 2) { printf "a race message with %d lines, not 2\n", nl; bad = 1; exit 1 }
      key = at[1] < at[2] ? at[1] " " at[2] : at[2] " " at[1]
      if (!(key in pair)) {
        printf "a race between lines %d and %d, which the .sim does not list\n", at[1], at[2]
        bad = 1; exit 1
      }
      seen[key]++
    }
    END {
      if (bad) exit 1
      if (inmsg) close_msg()
      if (bad) exit 1
      if (!npairs) { print "the .sim lists no race (# race: FIRST SECOND)"; exit 1 }
      for (l in expect) if (!(l in second)) {
        printf "the .sim lists no race whose second access is the expect: line %d\n", l; exit 1
      }
      for (l in also) if (!(l in first)) {
        printf "the .sim lists no race whose first access is the expect-also: line %d\n", l; exit 1
      }
      for (l in second) if (!(l in expect)) {
        printf "line %d, second access of a race the .sim lists, has no expect: note\n", l; exit 1
      }
      if (!nmsg) { print "Oclgrind reports no data race in local memory"; exit 1 }
      for (i = 1; i <= npairs; i++) if (!(order[i] in seen)) {
        printf "Oclgrind reports no race between lines %s, which the .sim lists\n", pair[order[i]]
        exit 1
      }
      printf "%d|", nmsg
      for (i = 1; i <= npairs; i++) { split(pair[order[i]], w, "-"); printf "%s ", w[2] }
      printf "|"
      for (i = 1; i <= npairs; i++)
        printf "%s%s x%d", (i > 1 ? ", " : ""), pair[order[i]], seen[order[i]]
      print ""
    }' "$sim" "$metal" "$tmp/$tag.err"); then
    why=$verdict
    return 1
  fi
  defect_count=${verdict%%|*}
  verdict=${verdict#*|}
  defect_lines=$(tr ' ' '\n' <<<"${verdict%%|*}" | grep -v '^$' | sort -n | uniq | tr '\n' ' ')
  race_pairs=${verdict#*|}
  return 0
}

# The Oclgrind proof of the fixture METAL (REL: its path under $fixtures, without .metal). Its
# runs are $proofs/REL.sim, or $proofs/REL.RUN.sim for each of several (a kernel of the file, a
# specialisation, ...). A run with a .expected of the same name must run clean and dump it
# (prove_clean); a run without one, only in a defective fixture, must show the defect, at
# `expect:` lines only; and a defective fixture's defect runs together must show it at every one.
# Sets $why.
prove_oclgrind() {
  local metal=$1 rel=$2 rule=$3 pattern=$4 what=$5
  local base="$proofs/$rel" sims=() sim run tag expected
  local bad=0 want got="" count=0 first="" clean="" ndefect=0 pairs=""
  [[ ${rel##*/} == bad_* ]] && bad=1
  [ -f "$base.sim" ] && sims+=("$base.sim")
  for sim in "$base".*.sim; do [ -f "$sim" ] && sims+=("$sim"); done
  if [ ${#sims[@]} -eq 0 ]; then
    why="no proof: $base.sim is missing"
    return 1
  fi
  want=$(annotated "$metal" "$rule")
  for sim in "${sims[@]}"; do
    run=${sim#"$base"}
    run=${run%.sim}
    run=${run#.}
    tag=${rel//\//_}${run:+.$run}
    expected=${sim%.sim}.expected
    if [ -f "$expected" ]; then
      if ! prove_clean "$metal" "$sim" "$expected" "$tag"; then
        why="${run:+run $run: }$why"
        return 1
      fi
      clean="$clean;${run:+ $run:} ${why#"$clean_head"}"
    elif [ $bad -eq 0 ]; then
      why="no proof: $expected is missing"
      return 1
    elif ! defect_run "$metal" "$sim" "$tag" "$rule" "$pattern" "$what"; then
      why="${run:+run $run: }$why"
      return 1
    else
      got="$got $defect_lines"
      count=$((count + defect_count))
      ndefect=$((ndefect + 1))
      [ -n "$first" ] || first=$(grep -m1 -E "$pattern" "$tmp/$tag.err")
      [ "$rule" != threadgroup-race ] || pairs="$pairs${pairs:+; }$race_pairs"
    fi
  done
  if [ $bad -eq 1 ]; then
    got=$(tr ' ' '\n' <<<"$got" | grep -v '^$' | sort -n | uniq | tr '\n' ' ')
    if [ $ndefect -eq 0 ]; then
      why="no defect run: every .sim of $base has a .expected"
      return 1
    fi
    if [ "$want" != "$got" ]; then
      why="Oclgrind reports $what at lines [ $got] but the expect: notes are at [ $want]"
      return 1
    fi
    why="Oclgrind reports $count x $what (\"$first\"), at exactly the annotated line(s) ${want% }"
    [ -z "$pairs" ] || why="$why, between the accesses (first-second line) $pairs"
    [ -z "$clean" ] || why="$why; runs clean where no defect is expected:${clean#;}"
  else
    why="$clean_head${clean#; }"
  fi
  [ ${#sims[@]} -eq 1 ] || why="${#sims[@]} runs: $why"
  return 0
}

# Per access site of a traced run: "site line buffer lines allowed" for the SIMD group that
# exceeds its allowance most (or comes closest). For each 32-lane group and site:
#   - the access is the group's first execution of the site, or its first r executions when every
#     lane spends them on r consecutive elements (in any order) and r * element size <= 16 bytes:
#     a lane's chunk of up to 16 bytes is one vector access however it is spelled (the compiler
#     can merge it, and a float4 is the widest load). good_dequant_chunk writes its 16-byte
#     chunks this way.
#   - lines: the distinct 128-byte lines the access touches.
#   - allowed: the fewest lines the distinct bytes it uses could fit in, ceil(bytes / 128), plus
#     one. The one extra line is for data that is contiguous but not where a line starts: a row
#     of 160 bytes (good_row_dot) or a group spanning two rows of a 16-wide tile (good_transpose)
#     touches two lines for 128 bytes. So 32 lanes of floats are allowed 2 lines (1 for the
#     data), of float4s 5 (4): lanes 16 bytes apart touch 4 and fail, as 32-byte chunks (8 lines
#     for 512 bytes) do. The price is that lanes 8 bytes apart (2 lines) pass when aligned.
line_counts() {
  local tag=$1 threads=$2
  awk -v T="$threads" -v W="$simd" -v D="$(cat "$tmp/$tag.depth")" '
    FNR == NR { line[$1] = $2; buf[$1] = $3; bytes[$1] = $4; n++; next }
    /^  kl_trace\[[0-9]+\] = / {
      slot = $1; gsub(/[^0-9]/, "", slot); v = $3 + 0
      if (v == 4294967295) next
      k = slot % D; slot = int(slot / D)
      at[int(slot / T), slot % T, k] = v
    }
    # Whether every lane of [first, last) that ran site s spent its first r executions on r
    # distinct consecutive elements, in whatever order.
    function chunks(s, first, last, r,   t, k, e, lo, hi, seen) {
      for (t = first; t < last; t++) {
        if (!((s, t, 0) in at)) continue
        split("", seen); lo = hi = at[s, t, 0]
        for (k = 0; k < r; k++) {
          if (!((s, t, k) in at)) return 0
          e = at[s, t, k]
          if (e in seen) return 0
          seen[e] = 1; if (e < lo) lo = e; if (e > hi) hi = e
        }
        if (hi - lo != r - 1) return 0
      }
      return 1
    }
    END {
      for (s = 0; s < n; s++) {
        found = 0; wl = 0; wa = 0
        for (g = 0; g * W < T; g++) {
          last = (g + 1) * W < T ? (g + 1) * W : T
          lanes = 0
          for (t = g * W; t < last; t++) if ((s, t, 0) in at) lanes++
          if (!lanes) continue
          r = int(16 / bytes[s]); if (r > D) r = D; if (r < 1) r = 1
          while (r > 1 && !chunks(s, g * W, last, r)) r--
          split("", lines); split("", elems); nl = 0; ne = 0
          for (t = g * W; t < last; t++)
            for (k = 0; k < r; k++) {
              if (!((s, t, k) in at)) continue
              e = at[s, t, k]
              if (!(e in elems)) { elems[e] = 1; ne++ }
              l = int(e * bytes[s] / 128)
              if (!(l in lines)) { lines[l] = 1; nl++ }
            }
          allowed = int((ne * bytes[s] + 127) / 128) + 1
          if (!found || nl - allowed > wl - wa) { found = 1; wl = nl; wa = allowed }
        }
        print s, line[s], buf[s], wl, wa
      }
    }' "$tmp/$tag.sites" "$tmp/$tag.out"
}

# The coalescing proof of one kernel: MODE bad requires more lines than allowed at some site of
# every annotated line and no more elsewhere; MODE good requires no more anywhere.
prove_lines() {
  local metal=$1 sim=$2 tag=$3 mode=$4
  local want threads counts
  want=" $(annotated "$metal" uncoalesced-access)"
  threads=$(sim_threads "$sim")
  counts=$(line_counts "$tag" "$threads")
  if [ -z "$counts" ]; then
    why="no device access was traced"
    return 1
  fi
  local figures="" problem="" site line buf n allowed
  while read -r site line buf n allowed; do
    figures="$figures $buf@$line=$n/$allowed"
    if [ "$mode" = good ] || [[ "$want" != *" $line "* ]]; then
      [ "$n" -le "$allowed" ] || problem="$problem $buf at line $line touches $n > $allowed;"
    fi
  done <<<"$counts"
  if [ "$mode" = bad ]; then
    local l
    for l in $want; do
      awk -v L="$l" '$2 == L && $4 > $5 { over = 1 } END { exit !over }' <<<"$counts" ||
        problem="$problem no access at annotated line $l touches more than allowed;"
    done
  fi
  local head="128-byte lines per SIMD group per access (buffer@line=lines/allowed):"
  if [ -n "$problem" ]; then
    why="$head$figures; but$problem"
    return 1
  fi
  why="$head$figures"
  return 0
}

# ---- kernlint on every fixture proven here, one run per set of arguments ---------------------
# For each fixture, whether kernlint's findings ("rule@line") are exactly its `expect:` notes:
# kl_verdict[path] is 1 or 0, kl_want and kl_got list both. Empty when kernlint gave no report
# covering every fixture, with the reason in $kl_why. A fixture's `kernlint-args:` note (as
# tests/tools/fixtures.c reads it) holds for its run, so the fixtures are linted in groups of
# equal notes. (Worked out once, in one awk: a few processes per fixture would cost more than
# kernlint itself.)
mapfile -t kl_fixtures < <(find "$fixtures/bounds-guard" "$fixtures/real/bounds-guard" \
  "$fixtures/barrier-divergence" "$fixtures/threadgroup-race" "$fixtures/uncoalesced-access" \
  "$fixtures/half-accumulator" \
  -name '*.metal' \( -name 'bad_*' -o -name 'good_*' \) | sort)
declare -A kl_verdict=() kl_want=() kl_got=() kl_groups=()
while IFS=$'\t' read -r path args; do
  kl_groups["args:$args"]+="$path"$'\n'
done < <(awk '
  # An argument `@NAME` is the file NAME beside the fixture, as tests/tools/fixtures.c reads it.
  function args(a, f,   d, n, w, i, r) {
    d = f; sub(/[^\/]*$/, "", d); n = split(a, w, /[ \t]+/); r = ""
    for (i = 1; i <= n; i++) r = r (i > 1 ? " " : "") (w[i] ~ /^@/ ? d substr(w[i], 2) : w[i])
    return r
  }
  FNR == 1 { if (f != "") print f "\t" args(a, f); f = FILENAME; a = "" }
  a == "" && match($0, /kernlint-args:/) {
    a = substr($0, RSTART + 14); gsub(/^[ \t]+|[ \t]+$/, "", a)
  }
  END { if (f != "") print f "\t" args(a, f) }' "${kl_fixtures[@]}")
: >"$tmp/kl.counts"
: >"$tmp/kl.found"
kl_why=""
g=0
for key in "${!kl_groups[@]}"; do
  read -ra kl_args <<<"${key#args:}"
  mapfile -t group < <(printf '%s' "${kl_groups[$key]}")
  g=$((g + 1))
  timeout 120 "$kernlint" --format json --exit-zero "${kl_args[@]}" "${group[@]}" \
    >"$tmp/kl.$g.json" 2>"$tmp/kl.$g.err"
  kl_rc=$?
  kl_n=$("$json_get" "$tmp/kl.$g.json" 'files#' 2>/dev/null)
  # The files an `@NAME` argument adds are reported too; kernlint_agrees finds any fixture left out.
  if ! [ "${kl_n:-0}" -ge "${#group[@]}" ] 2>/dev/null; then
    kl_why="kernlint${kl_args[*]:+ ${kl_args[*]}} gave no report on ${#group[@]} proven \
fixtures (exit $kl_rc, ${kl_n:-no JSON} files reported): $(head -c 200 "$tmp/kl.$g.err")"
    break
  fi
  queries=()
  for ((i = 0; i < kl_n; i++)); do queries+=("files.$i.path" "files.$i.diagnostics#"); done
  "$json_get" "$tmp/kl.$g.json" "${queries[@]}" | paste - - >"$tmp/kl.$g.counts"
  queries=()
  i=0
  while IFS=$'\t' read -r path count; do
    for ((j = 0; j < count; j++)); do
      queries+=("files.$i.path" "files.$i.diagnostics.$j.rule" "files.$i.diagnostics.$j.line")
    done
    i=$((i + 1))
  done <"$tmp/kl.$g.counts"
  cat "$tmp/kl.$g.counts" >>"$tmp/kl.counts"
  [ ${#queries[@]} -eq 0 ] || "$json_get" "$tmp/kl.$g.json" "${queries[@]}" |
    paste -d' ' - - - >>"$tmp/kl.found"
done
if [ -z "$kl_why" ]; then
  while IFS='|' read -r path verdict want got; do
    kl_verdict[$path]=$verdict kl_want[$path]=$want kl_got[$path]=$got
  done < <(awk -v counts="$tmp/kl.counts" -v found="$tmp/kl.found" '
    BEGIN {
      while ((getline l <counts) > 0) { split(l, c, "\t"); reported[c[1]] = 1 }
      while ((getline l <found) > 0) {
        split(l, d, " "); k = d[1] SUBSEP d[2] "@" d[3]
        if (!(k in got)) { got[k] = 1; g[d[1]] = g[d[1]] " " d[2] "@" d[3]; ng[d[1]]++ }
      }
    }
    FNR == 1 { files[++nf] = FILENAME }
    match($0, /\/\/ expect: [a-z-]+$/) {
      r = substr($0, RSTART + 11) "@" FNR; k = FILENAME SUBSEP r
      if (!(k in want)) { want[k] = 1; w[FILENAME] = w[FILENAME] " " r; nw[FILENAME]++ }
    }
    END {
      for (i = 1; i <= nf; i++) {
        f = files[i]
        if (!(f in reported)) continue
        ok = nw[f] + 0 == ng[f] + 0
        for (k in want) { split(k, p, SUBSEP); if (p[1] == f && !(k in got)) ok = 0 }
        printf "%s|%d|%s|%s\n", f, ok, substr(w[f], 2), substr(g[f], 2)
      }
    }' "${kl_fixtures[@]}")
fi

# kernlint_agrees FILE: kernlint's findings in FILE are exactly its `expect:` notes (none for a
# reference). Sets $kl_note to say so, or $why to say how they differ.
kernlint_agrees() {
  local file=$1
  if [ ${#kl_verdict[@]} -eq 0 ]; then
    why=$kl_why
    return 1
  fi
  if [ -z "${kl_verdict[$file]:-}" ]; then
    why="kernlint's report leaves out $file"
    return 1
  fi
  if [ "${kl_verdict[$file]}" != 1 ]; then
    why="kernlint reports ${kl_got[$file]:-nothing} where the proven notes are \
${kl_want[$file]:-none (a reference)}"
    return 1
  fi
  kl_note="kernlint reports exactly its expect: notes, ${kl_want[$file]}"
  [ -n "${kl_want[$file]}" ] || kl_note="kernlint reports nothing"
  return 0
}

# kernlint_verdict NAME FILE PROOF: the line for FILE, whose proof (PROOF says what it showed)
# has held. PASS when kernlint's findings are its notes. A fixture marked `kernlint-xfail:` (or
# `kernlint-xfail-missing:`, as tests/tools/fixtures.c reads them: a class today's kernlint gets
# wrong) is XFAIL while they differ and FAILs once they agree, so the marker goes with the fix,
# as in the fixture test. A kernlint that gave no report FAILs, marked or not.
kernlint_verdict() {
  local name=$1 file=$2 proof=$3 reason
  reason=$(sed -n 's/.*kernlint-xfail\(-missing\)\{0,1\}:[[:space:]]*//p' "$file" | head -1)
  if kernlint_agrees "$file"; then
    if [ -n "$reason" ]; then
      fail "$name" "marked kernlint-xfail but kernlint agrees with the proof now; remove the marker"
    else
      pass "$name" "$proof; $kl_note"
    fi
  elif [ -n "$reason" ] && [ -n "${kl_verdict[$file]:-}" ]; then
    echo "XFAIL $name: $reason ($proof; but $why)"
  else
    fail "$name" "$why"
  fi
}

# ---- self-checks: the proof machinery rejects what it exists to reject ----------------------
# compare_dump against dumps that must fail: NaN (a reference rewritten to produce NaN everywhere
# passed before), inf, text, missing, extra or repeated elements, a wrong value, nothing at all.
cmpdir="$tmp/selfcheck_dump"
mkdir -p "$cmpdir"
printf 'y[0] = 1\ny[1] = -2.5\n' >"$cmpdir/expected"
dump_of() { printf "\nArgument 'y': 8 bytes\n"; [ $# -eq 0 ] || printf '  %s\n' "$@"; }
problems=""
dump_of 'y[0] = 1' 'y[1] = -2.5' >"$cmpdir/dump"
compare_dump "$cmpdir/dump" "$cmpdir/expected" >/dev/null ||
  problems="$problems rejects a right dump;"
rejects() { # WHAT DUMP-LINES...: compare_dump must fail on them
  local what=$1
  shift
  dump_of "$@" >"$cmpdir/dump"
  if compare_dump "$cmpdir/dump" "$cmpdir/expected" >/dev/null; then
    problems="$problems accepts $what;"
  fi
}
rejects "NaN everywhere" 'y[0] = nan' 'y[1] = nan'
rejects "-nan" 'y[0] = 1' 'y[1] = -nan'
rejects "NaN spelled NAN" 'y[0] = NAN' 'y[1] = -2.5'
rejects "inf" 'y[0] = inf' 'y[1] = -2.5'
rejects "-inf" 'y[0] = 1' 'y[1] = -inf'
rejects "an overflowing number" 'y[0] = 1e999' 'y[1] = -2.5'
rejects "text" 'y[0] = 1' 'y[1] = abc'
rejects "an empty value" 'y[0] = 1' 'y[1] = '
rejects "a missing element" 'y[0] = 1'
rejects "an extra element" 'y[0] = 1' 'y[1] = -2.5' 'y[2] = 0'
rejects "a repeated element" 'y[0] = 1' 'y[0] = 1' 'y[1] = -2.5'
rejects "a wrong value" 'y[0] = 1' 'y[1] = -2.6'
rejects "an empty dump"
printf 'y[0] = nan\n' >"$cmpdir/expected"
rejects "NaN expected and dumped" 'y[0] = nan'
: >"$cmpdir/expected"
rejects "an empty expected file" 'y[0] = 1'
if [ -n "$problems" ]; then
  fail selfcheck-compare-dump "compare_dump$problems"
else
  pass selfcheck-compare-dump "compare_dump rejects NaN, inf, text, missing, extra, repeated and \
wrong values, and empty dumps or expectations"
fi

# The coalescing proof against a reference whose lanes are 4 floats (16 bytes) apart: 4 lines for
# 128 bytes used. It passed when references were allowed 4 lines whatever their element size.
# One run covers three accesses: y, lanes 16 bytes apart; z, each lane writing half its 16 bytes
# (not a whole chunk); x, consecutive lanes, the control, which must stay within its allowance.
if [ $oclgrind_ok -eq 0 ]; then
  fail selfcheck-strided-reference "oclgrind not installed (make deps)"
else
  smetal="$tmp/selfcheck_strided.metal"
  ssim="$tmp/selfcheck_strided.sim"
  printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' \
    'kernel void scale(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],' \
    '                  device float* z [[buffer(2)]], uint gid [[thread_position_in_grid]]) {' \
    '  y[gid * 4] = 2.0f * x[gid];' \
    '  for (uint i = 0; i < 2; ++i) { z[gid * 4 + i] = 1.0f; }' '}' >"$smetal"
  printf '%s\n' '@CL@' scale '64 1 1' '32 1 1' '<size=256 float range=0:1:63>' \
    '<size=1024 float fill=0>' '<size=1024 float fill=0>' >"$ssim"
  if ! run_kernel "$smetal" "$ssim" strided trace; then
    fail selfcheck-strided-reference "$why"
  elif prove_lines "$smetal" "$ssim" strided good; then
    fail selfcheck-strided-reference "the coalescing proof accepts strided accesses: $why"
  else
    over=$(line_counts strided 64 | awk '$4 > $5 { printf "%s ", $3 }')
    figures=$(sed 's/^[^:]*: //; s/;$//' <<<"$why")
    if [ "$over" != "y z " ]; then
      fail selfcheck-strided-reference "expected y and z over their allowance, not [ $over]: $why"
    else
      pass selfcheck-strided-reference "the coalescing proof rejects lanes 16 bytes apart, also \
when each lane covers half its chunk, and accepts consecutive lanes: $figures"
    fi
  fi
fi

# The race proof against .sim files that misdescribe a race: bad_gemm_refill's races listed
# without the one at tileB (a race Oclgrind reports that the .sim does not list), with a pair
# that never races, and with the pairs' accesses swapped (the second accesses are then not the
# expect: lines). Each must be rejected; the control, the fixture's own .sim, accepted.
if [ $oclgrind_ok -eq 0 ]; then
  fail selfcheck-race-pairs "oclgrind not installed (make deps)"
else
  rmetal="$fixtures/threadgroup-race/bad_gemm_refill.metal"
  rsim="$proofs/threadgroup-race/bad_gemm_refill.sim"
  problems=""
  race_case() { # WHAT WANT(accept|reject) SED-SCRIPT
    sed "$3" "$rsim" >"$tmp/selfcheck_race_in.sim"
    if race_run "$rmetal" "$tmp/selfcheck_race_in.sim" selfcheck_race; then
      [ "$2" = accept ] || problems="$problems accepts $1;"
    elif [ "$2" = accept ]; then
      problems="$problems rejects $1 ($why);"
    fi
  }
  race_case "the fixture's own pairs" accept ''
  race_case "a reported race left out" reject '/^# race: 28 25$/d'
  race_case "a pair that never races" reject '/^# race: 28 25$/a # race: 24 25'
  race_case "swapped accesses" reject 's/^# race: 28 \(2[45]\)$/# race: \1 28/'
  if [ -n "$problems" ]; then
    fail selfcheck-race-pairs "race_run$problems"
  else
    pass selfcheck-race-pairs "the race proof rejects a reported race its .sim does not list, a \
listed pair Oclgrind does not report, and pairs whose second access is not the expect: line"
  fi
fi

# ---- bounds-guard, barrier-divergence and threadgroup-race: Oclgrind ------------------------
# The fixtures of the rule, and for bounds-guard those of tests/fixtures/real/ as well (the
# classes of judged corpus findings). $proofs/exempt lists fixtures that have no Oclgrind proof,
# each with the reason; any other fixture without one fails.
declare -A exempt=()
while IFS= read -r line; do
  exempt[${line%%:*}]=${line#*: }
done < <(sed -e 's/^#.*//' -e '/^[[:space:]]*$/d' "$proofs/exempt")
for key in "${!exempt[@]}"; do
  if [ ! -f "$fixtures/$key.metal" ]; then
    fail "$key" "exempt in $proofs/exempt, but there is no $fixtures/$key.metal"
  elif compgen -G "$proofs/$key.sim" >/dev/null || compgen -G "$proofs/$key.*.sim" >/dev/null; then
    fail "$key" "exempt in $proofs/exempt, but it has a proof: drop the exemption"
  fi
done
# The definitions a fixture's proof gives the functions it only declares (run_kernel) are its
# own: one whose fixture is gone, or exempt, fails.
while read -r defs; do
  key=${defs#"$proofs/"}
  key=${key%.defs.metal}
  if [ ! -f "$fixtures/$key.metal" ]; then
    fail "$key" "$defs defines functions for $fixtures/$key.metal, which is not there"
  elif [ -n "${exempt[$key]:-}" ]; then
    fail "$key" "exempt in $proofs/exempt, but $defs gives it the definitions it lacks"
  fi
done < <(find "$proofs" -name '*.defs.metal' | sort)
for rule in bounds-guard barrier-divergence threadgroup-race; do
  if [ "$rule" = bounds-guard ]; then
    pattern='^Invalid (read|write) of size'
    what="invalid accesses"
    dirs=("$fixtures/$rule" "$fixtures/real/$rule")
  elif [ "$rule" = threadgroup-race ]; then
    pattern=$race_pattern
    what="local-memory data races"
    dirs=("$fixtures/$rule")
  else
    pattern='^Work-group divergence detected'
    what="work-group divergences"
    dirs=("$fixtures/$rule")
  fi
  while read -r metal; do
    rel=${metal#"$fixtures/"}
    rel=${rel%.metal}
    name=$rel
    if [ -n "${exempt[$rel]:-}" ]; then
      echo "SKIP $name: exempt from its Oclgrind proof: ${exempt[$rel]}"
      continue
    fi
    if [ $oclgrind_ok -eq 0 ]; then
      fail "$name" "oclgrind not installed (make deps)"
      continue
    fi
    if prove_oclgrind "$metal" "$rel" "$rule" "$pattern" "$what"; then
      kernlint_verdict "$name" "$metal" "$why"
    else
      fail "$name" "$why"
    fi
  done < <(find "${dirs[@]}" -name '*.metal' \( -name 'bad_*' -o -name 'good_*' \) | sort)
done

# ---- uncoalesced-access: same results, cache lines per SIMD group ----------------------------
while read -r bad; do
  dir=$(dirname "$bad")
  pair=$(basename "$bad" .metal)
  pair=${pair#bad_}
  good="$dir/good_$pair.metal"
  rel=${dir#"$fixtures/"}
  name="$rel/$pair"
  if [ -n "${exempt[$rel/bad_$pair]:-}" ]; then
    echo "SKIP $name: exempt from its Oclgrind proof: ${exempt[$rel/bad_$pair]}"
    continue
  fi
  expected="$proofs/$rel/good_$pair.expected"
  missing=""
  for f in "$good" "$proofs/$rel/bad_$pair.sim" "$proofs/$rel/good_$pair.sim" "$expected"; do
    [ -f "$f" ] || missing="$missing $f"
  done
  if [ -n "$missing" ]; then
    fail "$name" "no proof: missing$missing"
    continue
  fi
  if [ $oclgrind_ok -eq 0 ]; then
    fail "$name" "oclgrind not installed (make deps)"
    continue
  fi
  for side in bad good; do
    metal="$dir/${side}_$pair.metal"
    sim="$proofs/$rel/${side}_$pair.sim"
    tag="uncoalesced_${side}_$pair"
    if ! prove_clean "$metal" "$sim" "$expected" "$tag" trace; then
      fail "$rel/${side}_$pair" "$why"
      continue
    fi
    result="$why (the pair computes the same result)"
    if prove_lines "$metal" "$sim" "$tag" "$side"; then
      kernlint_verdict "$rel/${side}_$pair" "$metal" "$result; $why"
    else
      fail "$rel/${side}_$pair" "$why"
    fi
  done
done < <(find "$fixtures/uncoalesced-access" -name 'bad_*.metal' | sort)

# ---- half-accumulator: the fixture kernels in _Float16 against float64 ------------------------
[ $half_ok -eq 0 ] || wait "$builds_pid"
if [ $half_ok -eq 0 ]; then
  fail half-accumulator "no C++ compiler (c++; make deps installs build-essential)"
elif ! built half; then
  fail half-accumulator "the fixture kernels do not build with $proofs/half-accumulator: \
$(build_error half)"
else
  half_out="$tmp/half/proof.out"
  timeout 120 "$tmp/half/proof" >"$half_out" 2>&1
  half_rc=$?
  # The program's verdict on a pair stands only if kernlint agrees on both its kernels.
  while read -r verdict line; do
    pair=${line%%:*}
    pair=${pair#half-accumulator/}
    if [ "$verdict" = FAIL ]; then
      fail "${line%%:*}" "${line#*: }"
    elif kernlint_agrees "$fixtures/half-accumulator/bad_$pair.metal" &&
      kernlint_agrees "$fixtures/half-accumulator/good_$pair.metal"; then
      pass "${line%%:*}" "${line#*: }; kernlint reports exactly the expect: notes of both"
    else
      fail "${line%%:*}" "$why"
    fi
  done < <(grep -E '^(PASS|FAIL) half-accumulator/' "$half_out")
  if [ $half_rc -ne 0 ] && ! grep -q '^FAIL ' "$half_out"; then
    fail half-accumulator "the proof stops with status $half_rc: $(tail -1 "$half_out")"
  fi
  # Every defective fixture must have its numeric proof, and a reference beside it.
  while read -r bad; do
    pair=$(basename "$bad" .metal)
    pair=${pair#bad_}
    [ -f "$(dirname "$bad")/good_$pair.metal" ] ||
      fail "half-accumulator/$pair" "no reference good_$pair.metal"
    grep -qE "^(PASS|FAIL) half-accumulator/$pair:" "$half_out" ||
      fail "half-accumulator/$pair" "no numeric proof in $proofs/half-accumulator/proof.cc"
  done < <(find "$fixtures/half-accumulator" -name 'bad_*.metal' | sort)
fi

# ---- mutations: a reference made defective must fail its proof -----------------------------
# mutate NAME SRC DST SED-SCRIPT: apply, and check the mutation really changed the kernel.
mutate() {
  sed "$4" "$2" >"$3"
  if cmp -s "$2" "$3"; then
    fail "$1" "the mutation no longer applies to $2"
    return 1
  fi
}
if [ $oclgrind_ok -eq 0 ]; then
  fail mutation-bounds-guard "oclgrind not installed (make deps)"
  fail mutation-bounds-guard-helper "oclgrind not installed (make deps)"
  fail mutation-barrier-divergence "oclgrind not installed (make deps)"
  fail mutation-barrier-divergence-defs "oclgrind not installed (make deps)"
  fail mutation-uncoalesced-access "oclgrind not installed (make deps)"
else
  src="$fixtures/bounds-guard/good_guard_after_access.metal"
  mut="$tmp/mut_guard.metal"
  if mutate mutation-bounds-guard "$src" "$mut" '/if (gid >= n) return;/d'; then
    if prove_clean "$mut" "$proofs/bounds-guard/good_guard_after_access.sim" \
      "$proofs/bounds-guard/good_guard_after_access.expected" mut_guard; then
      fail mutation-bounds-guard "the reference with its guard deleted still passes its proof"
    else
      pass mutation-bounds-guard "the reference with its guard deleted fails its proof: $why"
    fi
  fi
  # The same through a helper template and its SIMD reduction (msl2cl's translation of both):
  # the check before the call deleted, the helper's accesses run past the rows.
  src="$fixtures/real/bounds-guard/good_helper_guarded_call.metal"
  mut="$tmp/mut_helper.metal"
  if mutate mutation-bounds-guard-helper "$src" "$mut" '/if (int(tgpig.x) >= n_rows) return;/d'
  then
    if prove_clean "$mut" "$proofs/real/bounds-guard/good_helper_guarded_call.sim" \
      "$proofs/real/bounds-guard/good_helper_guarded_call.expected" mut_helper; then
      fail mutation-bounds-guard-helper "the reference without its check before the helper call \
still passes its proof"
    else
      pass mutation-bounds-guard-helper "the reference without its check before the helper call \
fails its proof: $why"
    fi
  fi
  src="$fixtures/barrier-divergence/good_attention_early_return.metal"
  mut="$tmp/mut_return.metal"
  if mutate mutation-barrier-divergence "$src" "$mut" '/float qv = /i\  if (q >= N) return;'; then
    if prove_clean "$mut" "$proofs/barrier-divergence/good_attention_early_return.sim" \
      "$proofs/barrier-divergence/good_attention_early_return.expected" mut_return; then
      fail mutation-barrier-divergence "the reference with an early return still passes"
    else
      pass mutation-barrier-divergence "the reference with an early return fails its proof: $why"
    fi
  fi
  # The same through a helper defined in another file (the proof's .defs.metal): handed the
  # thread's item instead of the threadgroup's, its answer differs between threads.
  src="$fixtures/barrier-divergence/good_external_helper_lane.metal"
  mut="$tmp/mut_helper_lane.metal"
  if mutate mutation-barrier-divergence-defs "$src" "$mut" \
    's/bucket_of(tg, buckets)/bucket_of(tg * 128 + lid, buckets)/'; then
    if with_defs="$proofs/barrier-divergence/good_external_helper_lane.defs.metal" \
      prove_clean "$mut" "$proofs/barrier-divergence/good_external_helper_lane.sim" \
      "$proofs/barrier-divergence/good_external_helper_lane.expected" mut_helper_lane; then
      fail mutation-barrier-divergence-defs "the reference with the thread's item handed to the \
helper still passes"
    elif [[ "$why" != *"Work-group divergence detected"* ]]; then
      fail mutation-barrier-divergence-defs "the reference with the thread's item handed to the \
helper fails its proof, but not by a divergence: $why"
    else
      pass mutation-barrier-divergence-defs "the reference with the thread's item handed to the \
helper fails its proof: $why"
    fi
  fi
  src="$fixtures/uncoalesced-access/good_dequant_chunk.metal"
  mut="$tmp/mut_chunk.metal"
  chunk8='s/index \*= 4;/index *= 8;/; s/i < 4;/i < 8;/'
  if mutate mutation-uncoalesced-access "$src" "$mut" "$chunk8"; then
    sim="$proofs/uncoalesced-access/good_dequant_chunk.sim"
    if run_kernel "$mut" "$sim" mut_chunk trace && prove_lines "$mut" "$sim" mut_chunk good; then
      fail mutation-uncoalesced-access "the reference with 32-byte chunks still passes its proof"
    else
      pass mutation-uncoalesced-access "the reference with 32-byte chunks fails its proof: $why"
    fi
  fi
fi
# threadgroup-race: references made racy must fail their proof with Oclgrind reporting the race:
# the barrier between the mean's read and the clearing store deleted, the barrier after the
# GEMM's inner loop deleted, and every thread of good_same_value storing a value of its own to
# the flag instead of the constant 1 (so Oclgrind's race detector does see those stores; the
# reference is clean because their values agree, as Oclgrind leaves out write-write races of one
# value unless --uniform-writes).
if [ $oclgrind_ok -eq 0 ]; then
  fail mutation-threadgroup-race "oclgrind not installed (make deps)"
else
  while IFS='|' read -r mname fixture script; do
    src="$fixtures/threadgroup-race/$fixture.metal"
    mut="$tmp/mut_$fixture.metal"
    mutate "$mname" "$src" "$mut" "$script" || continue
    if prove_clean "$mut" "$proofs/threadgroup-race/$fixture.sim" \
      "$proofs/threadgroup-race/$fixture.expected" "mut_$fixture"; then
      fail "$mname" "the reference made racy ($script) still passes its proof"
    elif ! grep -qE "$race_pattern" "$tmp/mut_$fixture.err"; then
      fail "$mname" "the reference made racy ($script) fails, but with no race reported: $why"
    else
      pass "$mname" "the reference made racy ($script) fails its proof: $why"
    fi
  done <<'EOF_MUT'
mutation-threadgroup-race-barrier|good_zero_after_mean|/float mean = sum\[0\]/{n;d}
mutation-threadgroup-race-loop-barrier|good_gemm_refill|/acc += tileA/{n;n;d}
mutation-threadgroup-race-same-value|good_same_value|s/flag\[0\] = 1;/flag[0] = lid + 1;/
EOF_MUT
fi
# The swapped copies run the same proof program: every pair must fail (its bad_ kernel is now
# accurate, its good_ one not), and nothing may pass.
if [ $half_ok -eq 1 ]; then
  npairs=$(find "$fixtures/half-accumulator" -name 'bad_*.metal' | wc -l)
  if ! built half_swapped; then
    fail mutation-half-accumulator "the swapped copies do not build: $(build_error half_swapped)"
  else
    timeout 120 "$tmp/half_swapped/proof" >"$tmp/half_swapped/proof.out" 2>&1
    swap_rc=$?
    nfail=$(grep -c '^FAIL half-accumulator/' "$tmp/half_swapped/proof.out")
    if [ $swap_rc -eq 0 ] || grep -q '^PASS' "$tmp/half_swapped/proof.out" ||
      [ "$nfail" -ne "$npairs" ]; then
      fail mutation-half-accumulator "with bad_ and good_ kernels swapped, $nfail of $npairs \
pairs fail their proof (status $swap_rc): $(grep -m1 '^PASS' "$tmp/half_swapped/proof.out")"
    else
      pass mutation-half-accumulator "with every pair's bad_ and good_ kernels swapped (copies), \
all $npairs pairs fail their proof, e.g. $(sed -n '1s/^FAIL half-accumulator\///p' \
        "$tmp/half_swapped/proof.out")"
    fi
  fi
else
  fail mutation-half-accumulator "no C++ compiler (c++; make deps installs build-essential)"
fi

# ---- half-accumulator fixes: kernlint --fix's kernels pass the numeric proof ------------------
# Each bad_ kernel, fixed, stands in its pair's good_ place: the pair must pass as with the
# reference (the fixed kernel within the tolerance), and kernlint must find nothing left in it.
if [ $half_ok -eq 1 ]; then
  npairs=$(find "$fixtures/half-accumulator" -name 'bad_*.metal' | wc -l)
  if [ "$half_fixed_rc" -ne 0 ]; then
    fail fixed-half-accumulator "kernlint --fix exits $half_fixed_rc: $(head -1 "$tmp/half_fixed.lint")"
  elif grep -q 'half-accumulator' "$tmp/half_fixed.lint"; then
    fail fixed-half-accumulator "findings left after --fix: $(grep -m1 half-accumulator "$tmp/half_fixed.lint")"
  elif ! built half_fixed; then
    fail fixed-half-accumulator "the fixed kernels do not build: $(build_error half_fixed)"
  else
    timeout 120 "$tmp/half_fixed/proof" >"$tmp/half_fixed/proof.out" 2>&1
    npass=0
    while read -r verdict line; do
      pair=${line%%:*}
      pair=${pair#half-accumulator/}
      if grep -qx "$pair" <<<"$half_nofix"; then
        why=$(sed -n "s/^$pair: *//p" "$proofs/half-accumulator/nofix")
        if ! cmp -s "$tmp/half_nofix/bad_$pair.metal" \
          "$fixtures/half-accumulator/bad_$pair.metal"; then
          fail "fixed-half-accumulator/$pair" "kernlint --fix now changes bad_$pair.metal: prove \
the fix here (take the pair off $proofs/half-accumulator/nofix)"
        elif ! grep -q "bad_$pair\.metal:.*half-accumulator" "$tmp/half_nofix.lint"; then
          fail "fixed-half-accumulator/$pair" "kernlint --fix does not report bad_$pair.metal's \
finding, which it leaves unfixed"
        else
          npass=$((npass + 1))
          pass "fixed-half-accumulator/$pair" "no fix offered, as nofix says ($why)"
        fi
      elif [ "$verdict" = PASS ] && ! cmp -s "$tmp/half_fixed.src/good_$pair.metal" \
        "$fixtures/half-accumulator/bad_$pair.metal"; then
        npass=$((npass + 1))
        pass "fixed-half-accumulator/$pair" "kernlint --fix of bad_$pair.metal: ${line#*: }"
      else
        fail "fixed-half-accumulator/$pair" "kernlint --fix of bad_$pair.metal: ${line#*: }"
      fi
    done < <(grep -E '^(PASS|FAIL) half-accumulator/' "$tmp/half_fixed/proof.out")
    [ "$npass" -eq "$npairs" ] ||
      fail fixed-half-accumulator "$npass of $npairs fixed kernels pass their numeric proof"
    for pair in $half_nofix; do
      [ -f "$fixtures/half-accumulator/bad_$pair.metal" ] ||
        fail fixed-half-accumulator "$proofs/half-accumulator/nofix lists $pair, which has no \
bad_$pair.metal"
    done
  fi
else
  fail fixed-half-accumulator "no C++ compiler (c++; make deps installs build-essential)"
fi
exit $status
