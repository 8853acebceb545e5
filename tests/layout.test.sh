#!/usr/bin/env bash
# The source layout's rules, checked on the tree as committed:
# - no include cycle among the project's own modules (x.c and x.h are one module; an edge is an
#   #include "..." of another module's header), so each layer only reads the ones below it;
# - no source file over 1,500 lines, but for the exemptions listed below;
# - every function declared at file scope of a header has a comment right above it;
# - no line over 100 columns (the house style; .clang-format says the same).
# Run from the repo root (tests/run.sh does).
. tests/lib.sh
mapfile -t srcs < <(find analyzer grammar rules -name '*.[ch]' 2>/dev/null | sort)
if [ ${#srcs[@]} -eq 0 ]; then
  fail layout-sources "no sources found under analyzer/, grammar/, rules/"
  exit 1
fi

# ---- include cycles ----
for f in "${srcs[@]}"; do
  [ -f "$f" ] || continue
  m=${f%.*}
  inc_re='s/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p'
  sed -n "$inc_re" "$f" | while read -r inc; do
    [ -f "$inc" ] || continue
    t=${inc%.*}
    [ "$t" = "$m" ] || echo "$m $t"
  done
done | sort -u >"$tmp/edges"
if tsort "$tmp/edges" >/dev/null 2>"$tmp/loops"; then
  pass layout-no-include-cycle
else
  loop=$(sed -n 's/^tsort: \([^:]*\)$/\1/p' "$tmp/loops" | sort -u | tr '\n' ' ')
  fail layout-no-include-cycle "modules that include each other: $loop"
fi

# ---- file size ----
# No exemption: a file that outgrows the limit is split along a seam.
big=""
for f in "${srcs[@]}"; do
  [ -f "$f" ] || continue
  n=$(wc -l <"$f")
  if [ "$n" -gt 1500 ]; then big="$big $f ($n lines)"; fi
done
if [ -z "$big" ]; then pass layout-file-size; else fail layout-file-size "over 1,500 lines:$big"; fi

# ---- line length ----
long=$(for f in "${srcs[@]}"; do awk -v f="$f" 'length > 100 { printf "%s:%d ", f, FNR }' "$f"; done)
if [ -z "$long" ]; then pass layout-line-length; else fail layout-line-length "over 100 columns: $long"; fi

# ---- doc comments ----
# A declaration starts at file scope (brace depth 0, not inside a statement) on a line that
# begins with an identifier and has a '(' before any '=', '{' or ';': a function, not a struct,
# enum, typedef or variable. The line above it must end a comment.
mapfile -t headers < <(printf '%s\n' "${srcs[@]}" | grep '\.h$')
awk '
function strip(s) {
  gsub(/"([^"\\]|\\.)*"/, "\"\"", s); gsub(/'"'"'([^'"'"'\\]|\\.)*'"'"'/, "x", s); return s
}
FNR == 1 { depth = 0; prev = ""; incomment = 0; cont = 0; stmt = 0 }
{
  line = $0
  if (incomment) { if (line ~ /\*\//) incomment = 0; prev = line; next }
  if (line ~ /^[[:space:]]*\/\*/ && line !~ /\*\//) { incomment = 1; prev = line; next }
  if (cont || line ~ /^[[:space:]]*#/) { cont = (line ~ /\\$/); prev = line; next }
  code = strip(line); sub(/\/\/.*/, "", code); gsub(/\/\*.*\*\//, "", code)
  if (depth == 0 && !stmt && code ~ /^[A-Za-z_]/ && code ~ /^[^={;]*\(/ &&
      code !~ /^(typedef|enum|union|struct [A-Za-z_0-9]+ *\{)/ && prev !~ /\*\/[[:space:]]*$/) {
    printf "%s:%d ", FILENAME, FNR; bad++
  }
  if (depth == 0 && code ~ /[^[:space:]]/) stmt = (code !~ /[;{}][[:space:]]*$/)
  o = gsub(/\{/, "{", code); c = gsub(/\}/, "}", code); depth += o - c
  prev = line
}
END { exit bad > 0 }' "${headers[@]}" >"$tmp/undoc"
if [ $? -eq 0 ]; then
  pass layout-header-docs
else
  fail layout-header-docs "declarations without a comment above: $(cat "$tmp/undoc")"
fi
[ "$failures" -eq 0 ]
