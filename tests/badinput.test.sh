#!/usr/bin/env bash
# Bad input: each gets one stderr line naming the file and the problem, exit 2, no crash, no
# hang, no stray writes, and a good file named alongside is still linted.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
lines() { if [ -s "$1" ]; then wc -l <"$1" | tr -d ' '; else echo 0; fi; }
# run ARGS...: kernlint (as the user $as_user names, when set); sets $rc, output in $tmp/out and
# $tmp/err. Counts the runs that printed nothing at all: every run here must print something.
as_user=()
runs=0 silent=0
run() {
  timeout 60 ${as_user[@]+"${as_user[@]}"} "$KERNLINT" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  runs=$((runs + 1))
  [ -s "$tmp/out" ] || [ -s "$tmp/err" ] || silent=$((silent + 1))
}

in="$tmp/in"
mkdir -p "$in"
cat >"$in/good.metal" <<'EOF'
kernel void k(device bfloat *b [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  b[gid] = bfloat(1.0f);
}
#if defined(__HAVE_BFLOAT__) // the project builds below MSL 3.1 too: it guards bfloat
typedef bfloat guarded_bf_t;
#endif
EOF

# The bad inputs, generated here: none of them is worth keeping in the repo.
printf 'kernel void k() {}\n\0\1\2binary' >"$in/binary.metal"
printf 'kernel void k() {}\n// caf\xe9 in Latin-1\n' >"$in/latin1.metal"
: >"$in/empty.metal"
: >"$in/empty.h"
: >"$in/empty.py"
mkdir -p "$in/withempty"
cp "$in/good.metal" "$in/withempty/a.metal"
cp "$in/empty.metal" "$in/empty.h" "$in/empty.py" "$in/withempty/"
# 50 MB of plausible text: the size check must refuse it without reading it all.
yes 'float x = 1.0f; // padding' | head -c 52428800 >"$in/huge.metal"
{
  printf 'kernel void k(device float *a [[buffer(0)]]) {\n  a[0] = '
  head -c 100000 /dev/zero | tr '\0' '('
  printf '1'
  head -c 100000 /dev/zero | tr '\0' ')'
  printf ';\n}\n'
} >"$in/nested.metal"
mkdir -p "$in/folder.metal"
ln -s "$in/gone.metal" "$in/dangling.metal"
mkfifo "$in/fifo.metal"
cp "$in/good.metal" "$in/secret.metal"
chmod 000 "$in/secret.metal"
mkdir -p "$in/walk" "$in/cfg"
cp "$in/good.metal" "$in/walk/a.metal"
cp "$in/binary.metal" "$in/walk/b.metal"
cp "$in/good.metal" "$in/walk/c.metal"
cp "$in/good.metal" "$in/cfg/k.metal"
printf '[rules\nthis is = not = valid\n' >"$in/cfg/.lintrc"
printf 'target = m1\n' >"$tmp/ok.lintrc"

# Root reads any file, so as root the unreadable-file check runs kernlint as an unprivileged
# user (nobody, through setpriv from util-linux), with the folders and the binary reachable for
# it. Set up here, before the snapshot below, so that nothing of it counts as a stray write.
unreadable_skip=""
unreadable_user=()
unreadable_kernlint="$KERNLINT"
if [ "$(id -u)" = 0 ]; then
  unreadable_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  if ! command -v setpriv >/dev/null; then
    unreadable_skip="running as root, and setpriv (util-linux) is not installed"
  else
    chmod o+x "$tmp" # $in and good.metal are already world-readable (umask)
    if ! "${unreadable_user[@]}" test -x "$KERNLINT"; then
      # Some folder above the binary is closed to nobody: run a copy that it can reach.
      cp "$KERNLINT" "$tmp/kernlint"
      chmod 755 "$tmp/kernlint"
      unreadable_kernlint="$tmp/kernlint"
    fi
    if ! "${unreadable_user[@]}" test -x "$unreadable_kernlint" ||
      ! "${unreadable_user[@]}" test -r "$in/good.metal"; then
      unreadable_skip="the unprivileged user cannot reach kernlint or the test folder"
    elif "${unreadable_user[@]}" test -r "$in/secret.metal"; then
      unreadable_skip="the unprivileged user can read a mode-000 file"
    fi
  fi
fi

snapshot() { (cd "$tmp" && find . -path ./out -prune -o -path ./err -prune -o -print | sort); }
# Kernlint's working folder is the checkout's top level, where a stray relative write would land
# as a new untracked file. Only that is compared: developers sharing a checkout edit the rest.
repo_state() { git status --porcelain --untracked-files=all 2>/dev/null | grep '^?? [^/]*$'; }
snapshot >"$tmp/before.list"
repo_state >"$tmp/before.git"

# check NAME PATH PATTERN: kernlint --format json good PATH must exit 2 with exactly one stderr
# line "kernlint: PATH: ..." matching PATTERN, and still report good.metal.
check() {
  local name=$1 path=$2 pattern=$3
  run --format json "$in/good.metal" "$path"
  if [ "$rc" = 124 ]; then fail "$name" "timed out"; return; fi
  if [ "$rc" -ge 128 ]; then fail "$name" "crashed (exit $rc)"; return; fi
  local line
  line=$(cat "$tmp/err")
  if [ "$rc" != 2 ]; then fail "$name" "exit $rc, expected 2"
  elif [ "$(lines "$tmp/err")" != 1 ]; then fail "$name" "expected one stderr line, got: $line"
  elif [[ "$line" != "kernlint: $path: "* ]]; then fail "$name" "line does not name the file: $line"
  elif ! grep -Eq -- "$pattern" "$tmp/err"; then fail "$name" "unclear reason: $line"
  elif ! "$JSON_GET" "$tmp/out" >/dev/null; then fail "$name" "JSON output does not parse"
  elif [ "$("$JSON_GET" "$tmp/out" files.0.path)" != "$in/good.metal" ]; then
    fail "$name" "good.metal was not linted"
  elif [ "$("$JSON_GET" "$tmp/out" errors.0.path)" != "$path" ]; then
    fail "$name" "JSON errors[] does not name the file"
  else pass "$name"; fi
  # The same in text mode: the one line, then only the summary.
  run -q "$in/good.metal" "$path"
  if [ "$rc" != 2 ] || [ "$(lines "$tmp/err")" != 1 ]; then
    fail "$name-text" "exit $rc, stderr: $(head -c 300 "$tmp/err")"
  else pass "$name-text"; fi
}

check missing-file "$in/missing.metal" 'no such file'
check binary-file "$in/binary.metal" 'binary'
check invalid-utf8 "$in/latin1.metal" 'UTF-8'
check huge-file "$in/huge.metal" 'too large'
check deep-nesting "$in/nested.metal" 'nesting'
check dangling-symlink "$in/dangling.metal" 'symbolic link|no such file'
# The loader tells a dangling link from a missing file for every caller, not only the CLI.
run "$in/dangling.metal" "$in/missing.metal"
if [ "$rc" = 2 ] && grep -q "dangling.metal: broken symbolic link$" "$tmp/err" &&
  grep -q "missing.metal: no such file or directory$" "$tmp/err"; then
  pass dangling-symlink-message
else fail dangling-symlink-message "exit $rc, stderr: $(cat "$tmp/err")"; fi
"$SAMPLE" text "file=$in/dangling.metal" >/dev/null 2>"$tmp/err"
if grep -q 'broken symbolic link' "$tmp/err"; then pass dangling-symlink-loader
else fail dangling-symlink-loader "emit-sample said: $(cat "$tmp/err")"; fi
check fifo "$in/fifo.metal" 'regular file'
if [ -n "$unreadable_skip" ]; then
  skip unreadable-file "$unreadable_skip"
  skip unreadable-file-text "$unreadable_skip"
else
  as_user=(${unreadable_user[@]+"${unreadable_user[@]}"})
  saved="$KERNLINT"
  KERNLINT="$unreadable_kernlint"
  check unreadable-file "$in/secret.metal" 'ermission'
  KERNLINT="$saved"
  as_user=()
fi

# An empty file (0 bytes) is clean, as it is to every linter: linted, counted, no error line,
# exit 0; in a folder among other files too.
run --format json "$in/empty.metal" "$in/empty.h" "$in/empty.py"
if [ "$rc" = 0 ] && [ ! -s "$tmp/err" ] && [ "$("$JSON_GET" "$tmp/out" 'files#')" = 3 ] &&
  [ "$("$JSON_GET" "$tmp/out" 'errors#')" = 0 ]; then pass empty-files-clean
else fail empty-files-clean "exit $rc, stderr: $(cat "$tmp/err")"; fi
run "$in/withempty"
# (Besides the `[*] N fixable` hint, when some finding has a fix.)
if [ "$rc" = 1 ] && [ "$(grep -vc '^\[\*\] ' "$tmp/err")" = 1 ] &&
  grep -Eq '^Found [0-9]+ problems? \(.*\) in 4 files\.$' "$tmp/err"; then
  pass empty-file-in-folder
else fail empty-file-in-folder "exit $rc, stderr: $(cat "$tmp/err")"; fi
printf '' | timeout 60 "$KERNLINT" --stdin-filename k.metal - >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" = 0 ] && grep -q '^No problems found in 1 file\.$' "$tmp/err"; then
  pass empty-stdin-clean
else fail empty-stdin-clean "exit $rc, stderr: $(cat "$tmp/err")"; fi

# A folder named on the command line is walked, not an error; a walked folder keeps going
# past its bad files.
run --format json "$in/walk"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && [ "$("$JSON_GET" "$tmp/out" 'files#')" = 2 ]
then pass walk-continues
else fail walk-continues "exit $rc, stderr: $(cat "$tmp/err")"; fi

# Every bad input at once: one line each, in path order, and the good file still linted.
run -q "$in/good.metal" "$in/missing.metal" "$in/binary.metal" "$in/latin1.metal" \
  "$in/empty.metal" "$in/huge.metal" "$in/nested.metal"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 5 ] && ! grep -q empty.metal "$tmp/err" &&
  [ "$(sed 's/: .*//' "$tmp/err" | sort -c 2>&1)" = "" ]; then pass all-at-once
else fail all-at-once "exit $rc, stderr: $(cat "$tmp/err")"; fi
if grep -q "^$in/good.metal:[0-9]*:[0-9]*: warning: .*\[bfloat-target\]$" "$tmp/out"; then
  pass good-file-findings
else fail good-file-findings "no bfloat-target finding for good.metal"; fi

# A bad .lintrc: one "path:line: problem" line, its files skipped, other files linted.
run --format json "$in/good.metal" "$in/cfg"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] &&
  grep -Eq '^kernlint: .*\.lintrc:[0-9]+: ' "$tmp/err" &&
  [ "$("$JSON_GET" "$tmp/out" 'files#')" = 1 ] &&
  [ "$("$JSON_GET" "$tmp/out" files.0.path)" = "$in/good.metal" ]; then pass bad-lintrc
else fail bad-lintrc "exit $rc, stderr: $(cat "$tmp/err")"; fi
run --config "$in/cfg/.lintrc" "$in/good.metal"
if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ]; then
  pass bad-config-flag
else fail bad-config-flag "exit $rc, stderr: $(cat "$tmp/err")"; fi

# Usage errors: one line, exit 2, no output at all.
usage() {
  local name=$1
  shift
  run "$@"
  if [ "$rc" = 2 ] && [ "$(lines "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ]; then pass "$name"
  else fail "$name" "exit $rc, stdout $(lines "$tmp/out") lines, stderr: $(cat "$tmp/err")"; fi
}
usage unknown-flag --frobnicate "$in/good.metal"
usage unknown-short-flag -Z "$in/good.metal"
usage missing-value "$in/good.metal" --format
usage empty-value --format= "$in/good.metal"
usage bad-format --format xml "$in/good.metal"
usage bad-target --target=m0 "$in/good.metal"
usage bad-fail-on --fail-on=never "$in/good.metal"
usage value-on-switch --quiet=yes "$in/good.metal"
usage config-directory --config "$in" "$in/good.metal"
usage config-missing --config "$in/none.lintrc" "$in/good.metal"
usage output-directory --output "$in" "$in/good.metal"
usage output-directory-slash --output "$tmp/newdir/" "$in/good.metal"

# A full disk is an error, not a silent success.
if [ -w /dev/full ]; then
  timeout 60 "$KERNLINT" --format json "$in/good.metal" >/dev/full 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 2 ] && grep -q 'cannot write' "$tmp/err"; then pass write-error
  else fail write-error "exit $rc, stderr: $(cat "$tmp/err")"; fi
else skip write-error "no writable /dev/full on this machine"; fi

# No writes anywhere but --output: the temp tree and the checkout are unchanged. That means
# something only if kernlint ran: every run above must have printed something.
ran() {
  if [ "$runs" -gt 0 ] && [ "$silent" = 0 ]; then pass "$1"
  else fail "$1" "$silent of $runs kernlint runs printed nothing, so nothing may have run"; fi
}
snapshot | grep -v -e '/before\.' -e '/after\.' >"$tmp/after.list"
grep -v -e '/before\.' -e '/after\.' "$tmp/before.list" >"$tmp/before.clean"
new=$(diff "$tmp/before.clean" "$tmp/after.list" | tr '\n' ' ')
if [ -n "$new" ]; then fail no-stray-files "new: $new"
else ran no-stray-files; fi
if [ "$(repo_state)" = "$(cat "$tmp/before.git")" ]; then ran no-repo-writes
else fail no-repo-writes "git status changed: $(diff <(repo_state) "$tmp/before.git" | head -5)"
fi

[ "$failures" -eq 0 ]
