#!/usr/bin/env bash
# kernlint.1 against the real program and the real man tools: every option `kernlint --help`
# lists has an entry in the man page's OPTIONS with the same short form and value name, and
# every option the man page names is one --help names; the page has the usual sections and
# kernlint's version; groff and man render it without a warning (skipped where they are
# missing: make deps installs groff-base and man-db); `make install` puts it under
# $(DESTDIR)$(PREFIX)/share/man/man1, where man finds it by name.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
page=kernlint.1
if [ ! -f "$page" ]; then
  fail manpage-exists "no $page"
  exit 1
fi
"$KERNLINT" --help >"$tmp/help" 2>&1 || fail manpage-help "kernlint --help failed"

# ---- the options on each side ----
# --help's option column, one form per line: "-o, --output FILE" gives "--output -o FILE".
awk '/^  -/ {
  sub(/^  /, ""); col = $0; sub(/   .*$/, "", col)
  n = split(col, forms, /, /); long = ""; short = ""; meta = ""
  for (i = 1; i <= n; i++) {
    if (forms[i] ~ /^--/) { long = forms[i]; sub(/ .*/, "", long); meta = forms[i]
      if (meta ~ / /) sub(/^[^ ]* /, "", meta); else meta = "" }
    else { short = forms[i]; sub(/ .*/, "", short) }
  }
  if (long != "") print long, (short == "" ? "-" : short), (meta == "" ? "-" : meta)
}' "$tmp/help" | sort >"$tmp/help.opts"
# The man page's OPTIONS entries: the tag line after each .TP at the section's own level (not
# the nested .RS list of --format values), as text: macros (.B, .BR, ...) joined, font escapes
# dropped and \- read as -.
awk '
function plain(line,   macro, rest, args, n, j, a, out, i, sep) {
  if (line ~ /^\.[A-Z][A-Z]?( |$)/) {
    macro = line; sub(/ .*/, "", macro); rest = substr(line, length(macro) + 2)
    n = 0
    while (1) {
      sub(/^ +/, "", rest)
      if (rest == "") break
      if (substr(rest, 1, 1) == "\"") { j = index(substr(rest, 2), "\""); if (!j) j = length(rest)
        a = substr(rest, 2, j - 1); rest = substr(rest, j + 2) }
      else { j = index(rest " ", " "); a = substr(rest, 1, j - 1); rest = substr(rest, j + 1) }
      args[++n] = a
    }
    sep = length(macro) == 3 ? "" : " "   # .BR, .IR, .BI...: alternating fonts, no spaces
    out = ""; for (i = 1; i <= n; i++) out = out (i > 1 ? sep : "") args[i]
    line = out
  }
  gsub(/\\f(\[[^]]*\]|\(..|.)/, "", line); gsub(/\\-/, "-", line); gsub(/\\&|\\c/, "", line)
  return line
}
/^\.SH/ { in_opts = ($0 ~ /^\.SH "?OPTIONS"?$/); depth = 0; next }
!in_opts { next }
/^\.RS/ { depth++; next }
/^\.RE/ { depth--; next }
/^\.TP/ { if (depth == 0) want = 1; next }
want { print plain($0); want = 0 }' "$page" >"$tmp/man.tags"
awk '{
  n = split($0, forms, /, /); long = ""; short = ""; meta = ""
  for (i = 1; i <= n; i++) {
    if (forms[i] ~ /^--/) { long = forms[i]; sub(/ .*/, "", long); meta = forms[i]
      if (meta ~ / /) sub(/^[^ ]* /, "", meta); else meta = "" }
    else { short = forms[i]; sub(/ .*/, "", short) }
  }
  if (long != "") print long, (short == "" ? "-" : short), (meta == "" ? "-" : meta)
}' "$tmp/man.tags" | sort >"$tmp/man.opts"

nhelp=$(wc -l <"$tmp/help.opts")
if [ "$nhelp" -ge 15 ]; then pass manpage-help-parsed
else
  fail manpage-help-parsed "read only $nhelp options from kernlint --help; has its layout changed?"
fi
missing=$(join -v1 "$tmp/help.opts" "$tmp/man.opts" | cut -d' ' -f1 | tr '\n' ' ')
if [ "$nhelp" -ge 15 ] && [ -z "$missing" ]; then pass manpage-documents-every-help-option
else
  fail manpage-documents-every-help-option "in kernlint --help but not in $page (OPTIONS): \
$missing- add a .TP entry for each, tagged like \\fB\\-\\-name\\fR \\fIVALUE\\fR"
fi
extra=$(join -v2 "$tmp/help.opts" "$tmp/man.opts" | cut -d' ' -f1 | tr '\n' ' ')
if [ -z "$extra" ]; then pass manpage-options-in-help
else fail manpage-options-in-help "in $page (OPTIONS) but not in kernlint --help: $extra"; fi
differ=$(join "$tmp/help.opts" "$tmp/man.opts" | awk '$2 != $4 || $3 != $5 {
  for (i = 2; i <= 5; i++) if ($i == "-") $i = "none"
  printf "%s: --help has short form %s and value %s, %s has %s and %s; ", $1, $2, $3, page, $4, $5
}' page="$page")
if [ "$nhelp" -ge 15 ] && [ -z "$differ" ]; then pass manpage-option-forms-agree
else fail manpage-option-forms-agree "$differ"; fi
# Every option named anywhere in the page (examples, prose) is one --help names.
grep -o -- '--[a-z][a-z0-9-]*' "$tmp/help" | sort -u >"$tmp/help.words"
sed 's/\\-/-/g' "$page" | grep -v '^\.\\"' | grep -o -- '--[a-z][a-z0-9-]*' |
  sort -u >"$tmp/man.words"
stale=$(comm -13 "$tmp/help.words" "$tmp/man.words" | tr '\n' ' ')
if [ -z "$stale" ]; then pass manpage-mentions-only-real-options
else
  fail manpage-mentions-only-real-options "$page names options kernlint --help does not: $stale"
fi
# The --format values, from the help line, each have an entry.
formats=$(sed -n 's/^  --format F .*output format: //p' "$tmp/help" | tr -d ',' |
  sed 's/(default)//; s/ or / /')
nf=0 nofmt=""
for f in $formats; do
  nf=$((nf + 1))
  grep -Eq "^\.B $f\$" "$page" || nofmt="$nofmt $f"
done
if [ "$nf" -ge 4 ] && [ -z "$nofmt" ]; then pass manpage-formats
else fail manpage-formats "formats in --help: '$formats'; without an entry in $page:$nofmt"; fi

# ---- sections and version ----
nosec=""
for s in NAME SYNOPSIS DESCRIPTION OPTIONS '"EXIT STATUS"' FILES EXAMPLES '"SEE ALSO"'; do
  grep -qx "\.SH $s" "$page" || grep -qx "\.SH ${s//\"/}" "$page" || nosec="$nosec $s"
done
version=$("$KERNLINT" --version 2>/dev/null)
if [ -n "$version" ] && grep -q "^\.TH KERNLINT 1 [^ ]* \"$version\"" "$page" && [ -z "$nosec" ]
then pass manpage-header
else
  fail manpage-header "'.TH KERNLINT 1 DATE \"$version\"' expected, found: $(grep '^\.TH' "$page");\
 sections missing:${nosec:- none}"
fi
if grep -qx '\.B 2' "$page" && grep -q 'Exit status: 0 .* 1 findings, 2 usage' "$tmp/help"; then
  pass manpage-exit-status
else fail manpage-exit-status "EXIT STATUS or --help's exit status line changed"; fi

# ---- rendering: groff and man, no warnings (this check never runs kernlint) ----
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
  groff -man -ww -z "$page" 2>"$tmp/groff.err"
  grc=$?
  LC_ALL=C.UTF-8 MANWIDTH=80 MANPAGER=cat PAGER=cat man --warnings=all -l "./$page" \
    >"$tmp/man.txt" 2>"$tmp/man.err"
  mrc=$?
  if [ "$grc" = 0 ] && [ ! -s "$tmp/groff.err" ] && [ "$mrc" = 0 ] && [ ! -s "$tmp/man.err" ] &&
    grep -q '^KERNLINT(1)' "$tmp/man.txt" &&
    grep -q '^ *kernlint - a static analyzer' "$tmp/man.txt" &&
    grep -q '^ *-o, --output FILE$' "$tmp/man.txt"; then
    pass manpage-renders
  else
    fail manpage-renders "groff -man -ww exit $grc: $(head -5 "$tmp/groff.err" | tr '\n' '|');\
 man --warnings exit $mrc: $(head -5 "$tmp/man.err" | tr '\n' '|')"
  fi
else
  skip manpage-renders \
    "man or groff is not installed (apt-get install man-db groff-base; make deps)"
fi

# ---- make install ----
# Only where the binary is up to date: a test installs what was built, it does not build.
if ! command -v make >/dev/null 2>&1 ||
  ! make -q --no-print-directory BUILD="$BUILD" "$BUILD/kernlint" 2>/dev/null; then
  skip manpage-make-install "$BUILD/kernlint is not up to date (make), and a test builds nothing"
else
  dest="$tmp/dest"
  make --no-print-directory install DESTDIR="$dest" PREFIX=/usr/local BUILD="$BUILD" \
    >"$tmp/install.log" 2>&1
  irc=$?
  m="$dest/usr/local/share/man/man1/kernlint.1"
  why=""
  [ "$irc" = 0 ] || why="exit $irc: $(tail -3 "$tmp/install.log" | tr '\n' '|'); "
  # The installed program is the one under test.
  [ -n "$version" ] && [ "$("$dest/usr/local/bin/kernlint" --version 2>/dev/null)" = "$version" ] ||
    why="${why}no working bin/kernlint of version '$version'; "
  cmp -s "$m" "$page" && [ "$(stat -c %a "$m")" = 644 ] ||
    why="${why}no share/man/man1/kernlint.1 (644); "
  more=$(find "$dest" -type f ! -path "$dest/usr/local/bin/kernlint" ! -path "$m")
  [ -z "$more" ] || why="${why}installed more: $more; "
  if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1 &&
    ! MANPAGER=cat PAGER=cat MANWIDTH=80 man -M "$dest/usr/local/share/man" kernlint 2>/dev/null |
    grep -q '^KERNLINT(1)'; then
    why="${why}man -M DEST/usr/local/share/man kernlint shows no page; "
  fi
  if [ -z "$why" ]; then pass manpage-make-install; else fail manpage-make-install "$why"; fi
fi
[ "$failures" -eq 0 ]
