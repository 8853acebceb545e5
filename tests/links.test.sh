#!/usr/bin/env bash
# Every relative link in the project's Markdown resolves, as GitHub would follow it:
#   - the files: README.md, ARCHITECTURE.md, CONTRIBUTING.md and docs/**/*.md, those that exist;
#   - the links: inline [text](target) and ![alt](target), and the targets of reference
#     definitions ([label]: target), outside code blocks and code spans; a [text][label] with no
#     definition of label is broken too;
#   - a target's file (or folder) exists, relative to the linking file; a #anchor in a Markdown
#     target (or alone: the same file) is a heading's GitHub slug there (the rendered text
#     lowercased, punctuation but - and _ dropped, spaces to -, a repeat given -1, -2...) or an
#     HTML id/name; http(s), mailto and other schemes are not fetched (no network here).
# The self-checks run the checker on files made in the scratch folder: a broken file link and a
# broken anchor must each fail, and links that resolve must pass. This file never runs kernlint.
# Run from the repo root.
. tests/lib.sh
py=""
for c in python3 /usr/bin/python3; do
  if "$c" -c 'import re, sys' >/dev/null 2>&1; then py=$c; break; fi
done
if [ -z "$py" ]; then
  skip links "no python3"
  exit 0
fi
cat >"$tmp/links.py" <<'EOF'
"""links.py ROOT FILE...: a PASS or FAIL line per file (FILE relative to ROOT), naming each
broken link; exit 1 when any fails."""
import os
import re
import sys
from urllib.parse import unquote

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
REFDEF = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)")
HTML_ID = re.compile(r"""<[a-zA-Z][^>]*?\b(?:id|name)=["']([^"']+)["']""")


def blocks(text):
    """The file's lines with fenced code blocks blanked (kept as empty lines: numbers stay)."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
        elif m:
            fence = m.group(1)
            out.append("")
        else:
            out.append(line)
    return out


def no_code_spans(line):
    """The line with each code span's contents removed (a run of n backticks to the next)."""
    return re.sub(r"(`+)(.+?)\1", "", line)


def slug(heading):
    """GitHub's anchor for a heading's Markdown source (github-slugger on the rendered text)."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    t = re.sub(r"<[^>]+>", "", t)                          # inline HTML
    t = t.replace("`", "")
    t = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", t)          # emphasis, not snake_case
    t = t.strip().lower()
    t = re.sub(r"[^\w\- ]", "", t)                         # \w: letters, digits, _ (Unicode)
    return t.replace(" ", "-")


anchor_cache = {}


def anchors(path):
    if path in anchor_cache:
        return anchor_cache[path]
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = blocks(f.read())
    seen, found = {}, set()
    prev = ""
    for line in lines:
        m = ATX.match(line)
        s = None
        if m:
            s = slug(m.group(2))
        elif SETEXT.match(line) and prev.strip() and not ATX.match(prev):
            s = slug(prev)
        if s is not None:
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else "%s-%d" % (s, n))
        for m in HTML_ID.finditer(line):
            found.add(m.group(1))
        prev = line
    anchor_cache[path] = found
    return found


def inline_targets(line):
    """(target) of each [text](target) and ![alt](target) in the line, code spans removed."""
    line = no_code_spans(line)
    out = []
    i = 0
    while True:
        j = line.find("](", i)
        if j < 0:
            return out
        # The target runs to the matching parenthesis (targets may hold balanced ones).
        k, depth = j + 2, 1
        while k < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            k += 1
        if depth == 0 and "[" in line[:j]:
            t = line[j + 2:k - 1].strip()
            if t.startswith("<"):
                t = t[1:t.find(">")] if ">" in t else t[1:]
            else:
                t = t.split()[0] if t.split() else ""
            out.append(t)
        i = j + 2


def check(root, rel):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = blocks(f.read())
    bad = []
    defs = {}
    for n, line in enumerate(lines, 1):
        m = REFDEF.match(line)
        if m:
            defs[m.group(1).strip().lower()] = (n, m.group(2).strip("<>"))
    uses = []
    for n, line in enumerate(lines, 1):
        if REFDEF.match(line):
            continue
        for t in inline_targets(line):
            uses.append((n, t))
        for m in re.finditer(r"\[([^\]]+)\]\[([^\]]*)\]", no_code_spans(line)):
            label = (m.group(2) or m.group(1)).strip().lower()
            if label not in defs:
                bad.append("%d: [%s][%s] has no definition" % (n, m.group(1), m.group(2)))
    uses += list(defs.values())
    for n, t in uses:
        if not t or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", t) or t.startswith("//"):
            continue  # external (http:, mailto:...) or empty
        file_part, _, frag = t.partition("#")
        file_part = unquote(file_part.split("?")[0])
        target = path if not file_part else os.path.normpath(
            os.path.join(os.path.dirname(path), file_part))
        if file_part.startswith("/"):
            target = os.path.normpath(os.path.join(root, file_part.lstrip("/")))
        if not os.path.exists(target):
            bad.append("%d: %s: no such file %s" % (n, t, os.path.relpath(target, root)))
            continue
        if frag and os.path.isfile(target) and target.endswith(".md"):
            if unquote(frag) not in anchors(target):
                bad.append("%d: %s: no heading with anchor #%s in %s"
                           % (n, t, frag, os.path.relpath(target, root)))
    name = "links-" + re.sub(r"[^A-Za-z0-9_.-]+", "-", rel)
    if bad:
        print("FAIL %s: %d broken: %s" % (name, len(bad), "; ".join(bad)[:1500]))
        return False
    print("PASS %s" % name)
    return True


def main():
    root, files = sys.argv[1], sys.argv[2:]
    ok = True
    for rel in files:
        ok = check(root, rel) and ok
    sys.exit(0 if ok else 1)


main()
EOF

# ---- the project's Markdown ----
files=()
for f in README.md ARCHITECTURE.md CONTRIBUTING.md; do [ -f "$f" ] && files+=("$f"); done
while IFS= read -r f; do files+=("$f"); done < <(find docs -name '*.md' 2>/dev/null | sort)
if [ ! -f README.md ]; then fail links-readme "no README.md: run from the repo root"; fi
"$py" "$tmp/links.py" . "${files[@]}" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
if [ "$rc" != 0 ] && ! grep -q '^FAIL' "$tmp/out"; then
  fail links-checker "exit $rc: $(tail -3 "$tmp/out" | tr '\n' '|')"
fi
grep -q '^FAIL' "$tmp/out" && failures=$((failures + 1))

# ---- self-checks: the checker fails on what is broken, passes what resolves ----
sc="$tmp/selfcheck"
mkdir -p "$sc/docs/sub"
cat >"$sc/docs/sub/target.md" <<'EOF'
# The target

## Output (`--format json`)

## Output (`--format json`)

Setext heading, `kl_rule` fields
---------------------------------

<a name="by-hand"></a>

```sh
# not a heading
```
EOF
cat >"$sc/good.md" <<'EOF'
# Good: links that resolve

See [the target](docs/sub/target.md), [JSON](docs/sub/target.md#output---format-json), its
repeat [again](docs/sub/target.md#output---format-json-1),
[setext](docs/sub/target.md#setext-heading-kl_rule-fields), [by hand](docs/sub/target.md#by-hand),
a [folder](docs/sub/), [here](#good-links-that-resolve), [ref][r], [external](https://example.com/x)
and code that is no link: `x[i](y)`, and in a block:

```c
a[i](b);
```

[r]: <docs/sub/target.md#the-target>
EOF
printf '# Broken\n\nA [link](docs/sub/missing.md) to a file that is not there.\n' >"$sc/file.md"
printf '# Broken\n\nA [link](docs/sub/target.md#not-a-heading) to a heading that is not.\n' \
  >"$sc/anchor.md"
printf '# Broken\n\nA [reference][nowhere] with no definition, [and](#broken-1).\n' >"$sc/ref.md"
selfcheck() { # NAME WANT(PASS|FAIL) FILE PATTERN: the checker's verdict on FILE
  local got
  got=$("$py" "$tmp/links.py" "$sc" "$3" 2>&1)
  if grep -q "^$2 " <<<"$got" && grep -q -- "$4" <<<"$got"; then pass "$1"
  else fail "$1" "wanted $2 matching '$4', got: $(tr '\n' '|' <<<"$got" | cut -c1-600)"; fi
}
selfcheck links-selfcheck-resolves PASS good.md 'links-good.md'
selfcheck links-selfcheck-broken-file FAIL file.md 'no such file docs/sub/missing.md'
selfcheck links-selfcheck-broken-anchor FAIL anchor.md 'no heading with anchor #not-a-heading'
selfcheck links-selfcheck-broken-ref FAIL ref.md 'has no definition.*#broken-1'
[ "$failures" -eq 0 ]
