#!/usr/bin/env bash
# Proves the fixtures of the analysis-core rules right (SPEC §4), so that a rule agreeing with its
# fixtures means something:
#   bounds-guard, barrier-divergence: each fixture is translated to OpenCL C (tests/tools/msl2cl)
#     and run by oclgrind-kernel on a grid rounded up past the data (tests/proofs/<rule>/*.sim).
#     A defective kernel must make Oclgrind report the out-of-bounds access ("Invalid read/write
#     of size") or the divergence ("Work-group divergence detected"), on exactly the lines its
#     `expect:` notes name. A reference must run with no Oclgrind message at all (data-race and
#     uninitialized-value checks on) and dump its expected output (tests/proofs/<rule>/*.expected).
#   half-accumulator: tests/proofs/half_sum.c replays each defective accumulation in _Float16 and
#     its reference in float against float64: half must exceed the tolerance, float stay within.
#   uncoalesced-access: both kernels of a pair run under Oclgrind with every device access traced
#     (msl2cl --trace); both must dump the expected output, and the distinct 128-byte lines one
#     32-lane SIMD group touches per access are counted: more than 4 exactly at the `expect:`
#     lines of the defective kernel, at most 4 everywhere in the reference.
#   mutations: a reference turned into its defective twin (guard deleted, early return added,
#     accumulator made half, chunk doubled) must make its proof fail.
# Run from the repo root with BUILD set (tests/run.sh does); needs $BUILD/tools/msl2cl and cc.
set -u
build=${BUILD:?BUILD is not set}
msl2cl="$build/tools/msl2cl"
fixtures=tests/fixtures
proofs=tests/proofs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; status=1; }

oclgrind_ok=1
command -v oclgrind-kernel >/dev/null 2>&1 || oclgrind_ok=0
if [ ! -x "$msl2cl" ]; then
  echo "FAIL proofs: $msl2cl is not built (make BUILD=$build $msl2cl)"
  exit 1
fi
# -cl-opt-disable: the kernel runs as written. Otherwise clang may sink a load that sits above
# its guard (bad_guard_after_access) below it, and Oclgrind would never see the access.
ocl_opts=(--build-options -cl-opt-disable --data-races --uninitialized)
simd=32

# Sorted line numbers of a fixture that carry `// expect: RULE`.
annotated() { grep -n -- "// expect: $2\$" "$1" | cut -d: -f1 | sort -n | uniq | tr '\n' ' '; }

# Sorted distinct line numbers Oclgrind gives ("At line N") for messages matching PATTERN.
reported() {
  awk -v pat="$2" '$0 ~ pat { want = 1 }
    want && match($0, /At line [0-9]+/) { print substr($0, RSTART + 8, RLENGTH - 8); want = 0 }' \
    "$1" | sort -n | uniq | tr '\n' ' '
}

# Number of work-items of a .sim file's NDRange (tokens 3..5 once comments are gone).
sim_threads() {
  sed 's/#.*//' "$1" | tr -s ' \t' '\n\n' | grep -v '^$' | sed -n 3,5p |
    awk 'BEGIN { n = 1 } { n *= $1 } END { print n }'
}

# Translate METAL and run it under Oclgrind with the .sim SIM; files go to $tmp/TAG.*.
# With TRACE set, device accesses are traced into an extra last argument kl_trace.
# Returns non-zero with the reason in $why when the kernel could not be run at all.
run_kernel() {
  local metal=$1 sim=$2 tag=$3 trace=${4:-}
  local base="$tmp/$tag"
  local targs=()
  [ -n "$trace" ] && targs=(--trace "$base.sites")
  if ! "$msl2cl" "${targs[@]}" "$metal" >"$base.cl" 2>"$base.msl2cl"; then
    why="msl2cl failed: $(head -1 "$base.msl2cl")"
    return 1
  fi
  sed "s|@CL@|$base.cl|" "$sim" >"$base.sim"
  if [ -n "$trace" ]; then
    local nsites threads
    nsites=$(wc -l <"$base.sites")
    threads=$(sim_threads "$sim")
    [ "$nsites" -gt 0 ] || nsites=1
    echo "<size=$((nsites * threads * 4)) uint fill=4294967295 dump>  # kl_trace" >>"$base.sim"
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
# there within 1e-5 relative (Oclgrind prints 6 significant digits), and nothing else dumped
# under that name. Prints "N values" or the first mismatch; returns non-zero on mismatch.
compare_dump() {
  awk 'FNR == NR { want[$1] = $3; name = $1; sub(/\[.*/, "", name); names[name] = 1; n++; next }
    /^  [A-Za-z_0-9]+\[[0-9]+\] = / {
      nm = $1; sub(/\[.*/, "", nm)
      if (!(nm in names)) next
      if (!($1 in want)) { printf "unexpected %s = %s\n", $1, $3; bad = 1; exit 1 }
      got[$1] = $3
      d = $3 - want[$1]; if (d < 0) d = -d
      w = want[$1]; if (w < 0) w = -w
      if (d > 1e-5 * w + 1e-6) {
        printf "%s = %s, expected %s\n", $1, $3, want[$1]; bad = 1; exit 1
      }
    }
    END { if (bad) exit 1
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
  why="runs clean under Oclgrind (data races and uninitialized values checked);"
  why="$why output matches $cmp"
  return 0
}

# The defect proof: Oclgrind reports PATTERN, and at exactly the lines annotated with RULE.
prove_defect() {
  local metal=$1 sim=$2 tag=$3 rule=$4 pattern=$5 what=$6
  run_kernel "$metal" "$sim" "$tag" || return 1
  local count want got
  count=$(grep -cE "$pattern" "$tmp/$tag.err")
  want=$(annotated "$metal" "$rule")
  got=$(reported "$tmp/$tag.err" "$pattern")
  if [ "$count" -eq 0 ]; then
    why="Oclgrind reports no $what"
    return 1
  fi
  if [ "$want" != "$got" ]; then
    why="Oclgrind reports $what at lines [ $got] but the expect: notes are at [ $want]"
    return 1
  fi
  why="Oclgrind reports $count x $what (\"$(grep -m1 -E "$pattern" "$tmp/$tag.err")\"),"
  why="$why at exactly the annotated line(s) ${want% }"
  return 0
}

# Per access site of a traced run: "site line buffer max_lines", max_lines being the most
# distinct 128-byte lines any 32-lane SIMD group touched at its first execution of the site.
line_counts() {
  local tag=$1 threads=$2
  awk -v T="$threads" -v W="$simd" '
    FNR == NR { line[$1] = $2; buf[$1] = $3; bytes[$1] = $4; n++; next }
    /^  kl_trace\[[0-9]+\] = / {
      slot = $1; gsub(/[^0-9]/, "", slot); v = $3
      if (v == 4294967295) next
      s = int(slot / T); g = int((slot % T) / W)
      key = s SUBSEP g SUBSEP int(v * bytes[s] / 128)
      if (!(key in seen)) { seen[key] = 1; c = ++cnt[s SUBSEP g]; if (c > mx[s]) mx[s] = c }
    }
    END { for (s = 0; s < n; s++) print s, line[s], buf[s], mx[s] + 0 }' \
    "$tmp/$tag.sites" "$tmp/$tag.out"
}

# The coalescing proof of one kernel: MODE bad requires > 4 lines at some site of every
# annotated line and <= 4 at every other site; MODE good requires <= 4 everywhere.
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
  local figures="" problem="" site line buf n
  while read -r site line buf n; do
    figures="$figures $buf@$line=$n"
    if [ "$mode" = good ] || [[ "$want" != *" $line "* ]]; then
      [ "$n" -le 4 ] || problem="$problem $buf at line $line touches $n lines;"
    fi
  done <<<"$counts"
  if [ "$mode" = bad ]; then
    local l
    for l in $want; do
      local worst
      worst=$(awk -v L="$l" '$2 == L && $4 > m { m = $4 } END { print m + 0 }' <<<"$counts")
      [ "$worst" -gt 4 ] || problem="$problem annotated line $l touches only $worst lines;"
    done
  fi
  if [ -n "$problem" ]; then
    why="128-byte lines per SIMD group per access (buffer@line=count):$figures; but$problem"
    return 1
  fi
  why="128-byte lines per SIMD group per access (buffer@line=count):$figures"
  return 0
}

# ---- bounds-guard and barrier-divergence: Oclgrind ----------------------------------------
for rule in bounds-guard barrier-divergence; do
  if [ "$rule" = bounds-guard ]; then
    pattern='^Invalid (read|write) of size'
    what="invalid accesses"
  else
    pattern='^Work-group divergence detected'
    what="work-group divergences"
  fi
  while read -r metal; do
    rel=${metal#"$fixtures/"}
    rel=${rel%.metal}
    name=$rel
    sim="$proofs/$rel.sim"
    tag=$(echo "$rel" | tr / _)
    if [ ! -f "$sim" ]; then
      fail "$name" "no proof: $sim is missing"
      continue
    fi
    if [ $oclgrind_ok -eq 0 ]; then
      fail "$name" "oclgrind not installed (make deps)"
      continue
    fi
    case $(basename "$rel") in
    bad_*)
      if prove_defect "$metal" "$sim" "$tag" "$rule" "$pattern" "$what"; then
        pass "$name" "$why"
      else
        fail "$name" "$why"
      fi
      ;;
    good_*)
      expected="$proofs/$rel.expected"
      if [ ! -f "$expected" ]; then
        fail "$name" "no proof: $expected is missing"
      elif prove_clean "$metal" "$sim" "$expected" "$tag"; then
        pass "$name" "grid rounded up past the data; $why"
      else
        fail "$name" "$why"
      fi
      ;;
    esac
  done < <(find "$fixtures/$rule" -name '*.metal' \( -name 'bad_*' -o -name 'good_*' \) | sort)
done

# ---- uncoalesced-access: same results, cache lines per SIMD group ----------------------------
while read -r bad; do
  dir=$(dirname "$bad")
  pair=$(basename "$bad" .metal)
  pair=${pair#bad_}
  good="$dir/good_$pair.metal"
  rel=${dir#"$fixtures/"}
  name="$rel/$pair"
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
    if prove_clean "$metal" "$sim" "$expected" "$tag" trace; then
      pass "$rel/${side}_$pair result" "$why (the pair computes the same result)"
      if prove_lines "$metal" "$sim" "$tag" "$side"; then
        pass "$rel/${side}_$pair lines" "$why"
      else
        fail "$rel/${side}_$pair lines" "$why"
      fi
    else
      fail "$rel/${side}_$pair result" "$why"
    fi
  done
done < <(find "$fixtures/uncoalesced-access" -name 'bad_*.metal' | sort)

# ---- half-accumulator: half against float against float64 ---------------------------------
half_out="$tmp/half_sum.out"
if ! command -v cc >/dev/null 2>&1; then
  fail half-accumulator "no C compiler (cc) to build $proofs/half_sum.c"
elif ! cc -std=c11 -O2 -Wall -Wextra -Werror "$proofs/half_sum.c" -o "$tmp/half_sum" -lm \
  2>"$tmp/half_sum.cc"; then
  fail half-accumulator "$proofs/half_sum.c does not build: $(head -1 "$tmp/half_sum.cc")"
else
  "$tmp/half_sum" >"$half_out"
  half_rc=$?
  grep -E '^(PASS|FAIL) ' "$half_out"
  grep -q '^FAIL ' "$half_out" && status=1
  [ $half_rc -eq 0 ] || status=1
  # Every defective fixture must have its numeric proof, and a reference beside it.
  while read -r bad; do
    pair=$(basename "$bad" .metal)
    pair=${pair#bad_}
    [ -f "$(dirname "$bad")/good_$pair.metal" ] ||
      fail "half-accumulator/$pair" "no reference good_$pair.metal"
    grep -qE "^(PASS|FAIL) half-accumulator/$pair:" "$half_out" ||
      fail "half-accumulator/$pair" "no numeric proof in $proofs/half_sum.c"
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
  fail mutation-barrier-divergence "oclgrind not installed (make deps)"
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
if [ -x "$tmp/half_sum" ]; then
  if cc -std=c11 -O2 -DKL_REF_ACC=_Float16 "$proofs/half_sum.c" -o "$tmp/half_mut" -lm; then
    if "$tmp/half_mut" >"$tmp/half_mut.out" && ! grep -q '^FAIL' "$tmp/half_mut.out"; then
      fail mutation-half-accumulator "the references accumulating in half still pass"
    else
      pass mutation-half-accumulator "the references accumulating in half fail all \
$(grep -c '^FAIL' "$tmp/half_mut.out") numeric checks"
    fi
  else
    fail mutation-half-accumulator "half_sum.c does not build with -DKL_REF_ACC=_Float16"
  fi
fi
exit $status
