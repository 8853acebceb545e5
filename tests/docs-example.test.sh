#!/usr/bin/env bash
# The documented example is what kernlint prints: the three files of the worked example in
# docs/python-and-host.md (its first python, objc and metal blocks) are written out as the page
# lays them out; `kernlint .` must print, byte for byte, the text block after "`kernlint .`
# prints:" there, and `kernlint kernels/ app/` the block README.md shows under that command.
# Then the page's claim that blur.metal linted alone has no finding.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
page=docs/python-and-host.md
if [ ! -f "$page" ] || [ ! -f README.md ]; then
  fail docs-example-pages "no $page or README.md"
  exit 1
fi
py=$(command -v python3) || { skip docs-example "python3 is missing"; exit 0; }
mkdir -p "$tmp/ex/kernels" "$tmp/ex/app"
# The page's blocks, and the two expected outputs, one file each.
"$py" - "$page" README.md "$tmp" <<'EOF'
import re, sys
page, readme, tmp = sys.argv[1:]
s = open(page).read()
blocks = re.findall(r'^```(\w*)\n(.*?)^```$', s, re.S | re.M)
names = {'python': 'kernels/norms.py', 'objc': 'app/encode.mm', 'metal': 'kernels/blur.metal'}
seen = set()
for lang, body in blocks:
    if lang in names and lang not in seen:
        open(f'{tmp}/ex/{names[lang]}', 'w').write(body)
        seen.add(lang)
m = re.search(r'`kernlint \.` prints:\n\n```\n(.*?)^```$', s, re.S | re.M)
open(f'{tmp}/page.out', 'w').write(m.group(1) if m else '')
r = open(readme).read()
m = re.search(r'^```\n\$ kernlint kernels/ app/\n(.*?)^```$', r, re.S | re.M)
open(f'{tmp}/readme.out', 'w').write(m.group(1) if m else '')
sys.exit(0 if len(seen) == 3 else 1)
EOF
[ $? -eq 0 ] || fail docs-example-blocks "the worked example's python, objc and metal blocks"
for doc in page readme; do
  if [ "$doc" = page ]; then args=(.); else args=(kernels/ app/); fi
  (cd "$tmp/ex" && "$KERNLINT" --no-color "${args[@]}" >"$tmp/got" 2>&1)
  rc=$?
  [ "$rc" -eq 1 ] || fail "docs-example-$doc-status" "exit $rc, expected 1 (findings)"
  if [ -s "$tmp/$doc.out" ] && cmp -s "$tmp/got" "$tmp/$doc.out"; then
    pass "docs-example-$doc"
  else
    fail "docs-example-$doc" "the $doc's example output differs from kernlint's: $(diff \
      "$tmp/$doc.out" "$tmp/got" | head -c 600)"
  fi
done
# "Linted alone, blur.metal has no such evidence and is not reported."
(cd "$tmp/ex" && "$KERNLINT" --no-color kernels/blur.metal >"$tmp/alone" 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^No problems found in 1 file\.$' "$tmp/alone"; then
  pass docs-example-alone
else
  fail docs-example-alone "exit $rc: $(head -c 300 "$tmp/alone")"
fi
[ "$failures" -eq 0 ]
