#!/usr/bin/env bash
# docs/kernlint.schema.json (JSON Schema 2020-12) against real `--format json` output, with
# Debian's python3-jsonschema (make deps installs it; skipped without it):
#   - the schema is a valid 2020-12 schema, and each document below validates, with its counts
#     agreeing (summary.files, failures, diagnostics and by_severity with what it lists);
#   - the documents: the examples; each rule's fixture folder (a finding of that rule in it);
#     Python sources and host code (findings in .py and C++/Objective-C files); a related
#     location in another file (related[].path); fixes (fix.edits); a run under a baseline
#     (what it records left out); an empty run; inputs and a .lintrc that cannot be used
#     (errors[]);
#   - strict enough to catch a change: copies of a real document with a field renamed, one
#     missing, one added, a wrong type or an unknown severity must each fail.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
schema=docs/kernlint.schema.json
py=""
for c in /usr/bin/python3 python3; do
  if "$c" -c 'from jsonschema import Draft202012Validator' >/dev/null 2>&1; then py=$c; break; fi
done
if [ -z "$py" ]; then
  skip json-schema "no python3 with jsonschema 4 (apt-get install python3-jsonschema; make deps)"
  exit 0
fi
cat >"$tmp/validate.py" <<'EOF'
"""validate.py SCHEMA FILE [EXPECT]: exit 0 when FILE is a JSON document the schema accepts,
whose counts agree, and for which the Python expression EXPECT (over d, the document, and
diags, its findings) is true; else print why on one line and exit 1."""
import json
import sys

from jsonschema import Draft202012Validator

schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
try:
    d = json.load(open(sys.argv[2]))
except ValueError as e:
    sys.exit("not JSON: %s" % e)
errs = sorted(Draft202012Validator(schema).iter_errors(d), key=lambda e: list(e.path))
if errs:
    sys.exit("; ".join("%s at %s" % (e.message[:200], "/".join(map(str, e.path)))
                       for e in errs[:3]))
diags = [x for f in d["files"] for x in f["diagnostics"]]
s = d["summary"]
by = {k: sum(1 for x in diags if x["severity"] == k) for k in ("error", "warning", "note")}
counts = (s["files"], s["failures"], s["diagnostics"], s["by_severity"])
if counts != (len(d["files"]), len(d["errors"]), len(diags), by):
    sys.exit("summary %s, the document lists %s" % (counts, (len(d["files"]), len(d["errors"]),
                                                             len(diags), by)))
if len(sys.argv) > 3 and not eval(sys.argv[3], {"d": d, "diags": diags}):
    sys.exit("valid, but not: %s" % sys.argv[3])
EOF
# check NAME EXPECT KERNLINT-ARGS...: kernlint's JSON for the arguments, validated.
check() {
  local name=$1 expect=$2 why
  shift 2
  timeout 120 "$KERNLINT" --format json --exit-zero "$@" >"$tmp/$name.json" 2>"$tmp/$name.err"
  if why=$("$py" "$tmp/validate.py" "$schema" "$tmp/$name.json" "$expect" 2>&1); then pass "$name"
  else fail "$name" "kernlint --format json $*: $(tr '\n' ' ' <<<"$why" | cut -c1-700)"; fi
}
has_rule() { echo "any(x['rule'] == '$1' for x in diags)"; }

check json-schema-examples "len(diags) > 0" examples

# Each rule's fixtures: each rule kernlint lists that has a folder of them.
"$KERNLINT" --list-rules >"$tmp/rules" 2>/dev/null
n=0 why=""
while read -r id _; do
  [ -d "tests/fixtures/$id" ] || continue
  n=$((n + 1))
  check "json-schema-rule-$id" "$(has_rule "$id")" "tests/fixtures/$id" >"$tmp/rule.out"
  grep -q '^PASS' "$tmp/rule.out" || why="$why $(cat "$tmp/rule.out");"
done <"$tmp/rules"
if [ "$n" -ge 5 ] && [ -z "$why" ]; then pass json-schema-rules
else fail json-schema-rules "$n rule fixture folders;$why"; fi

check json-schema-python "any(f['path'].endswith('.py') and f['diagnostics'] for f in d['files'])" \
  tests/fixtures/python
check json-schema-host \
  "any(f['path'].endswith(('.cpp', '.mm', '.h')) and f['diagnostics'] for f in d['files'])" \
  tests/fixtures/host

# A host launch's threadgroup size names the kernel, defined in another file of the run.
mkdir -p "$tmp/pair"
printf '%s\n' '#include <metal_stdlib>' 'using namespace metal;' '' \
  'kernel void scale_rows(device float* x [[buffer(0)]],' \
  '                       uint i [[thread_position_in_grid]]) {' \
  '  x[i] *= 2.0f;' '}' >"$tmp/pair/rows.metal"
printf '%s\n' '#import <Metal/Metal.h>' \
  'void encode(id<MTLDevice> device, id<MTLComputeCommandEncoder> enc, NSUInteger n) {' \
  '  id<MTLFunction> fn = [[device newDefaultLibrary] newFunctionWithName:@"scale_rows"];' \
  '  [enc setComputePipelineState:[device newComputePipelineStateWithFunction:fn error:nil]];' \
  '  [enc dispatchThreads:MTLSizeMake(n, 1, 1) threadsPerThreadgroup:MTLSizeMake(100, 1, 1)];' \
  '}' >"$tmp/pair/rows.mm"
check json-schema-related-other-file \
  "any(r.get('path', '').endswith('rows.metal') for x in diags for r in x['related'])" \
  "$tmp/pair/rows.mm" "$tmp/pair/rows.metal"
check json-schema-fix "any(x.get('fix') for x in diags)" tests/fixtures/half-accumulator

# Under a baseline that records every finding: the files, none of their findings.
timeout 120 "$KERNLINT" -q --write-baseline "$tmp/base.json" tests/fixtures/barrier-divergence \
  >/dev/null 2>&1
check json-schema-baseline "len(d['files']) > 0 and not diags" --baseline "$tmp/base.json" \
  tests/fixtures/barrier-divergence

mkdir -p "$tmp/empty" "$tmp/lintrc"
check json-schema-empty "d['files'] == [] and d['errors'] == []" "$tmp/empty"
sample_good_metal >"$tmp/lintrc/k.metal"
printf 'no-such-key = 1\n' >"$tmp/lintrc/.lintrc"
check json-schema-errors "len(d['errors']) == 2" "$tmp/lintrc" "$tmp/no-such-file.metal"

# ---- mutations: a real document, changed, must fail ----
# The base is the fix check's document with the related-location one's findings added: every
# optional part (fix, related[].path) is there to change.
cat >"$tmp/mutate.py" <<'EOF'
"""mutate.py BASE FIX RELATED OUT: writes OUT/NAME.json, one change each, and OUT/base.json."""
import copy
import json
import os
import sys

d = json.load(open(sys.argv[1]))
fixd = json.load(open(sys.argv[2]))
rel = json.load(open(sys.argv[3]))
d["files"] += fixd["files"] + rel["files"]
diags = [x for f in d["files"] for x in f["diagnostics"]]
d["summary"]["files"] = len(d["files"])
d["summary"]["diagnostics"] = len(diags)
for k in d["summary"]["by_severity"]:
    d["summary"]["by_severity"][k] = sum(1 for x in diags if x["severity"] == k)
fix = next(x for x in diags if "fix" in x)
other = next(r for x in diags for r in x["related"] if "path" in r)
out = sys.argv[4]
json.dump(d, open(os.path.join(out, "base.json"), "w"))


def mutant(name, change):
    m = copy.deepcopy(d)
    diags = [x for f in m["files"] for x in f["diagnostics"]]
    change(m, diags, next(x for x in diags if "fix" in x),
           next(r for x in diags for r in x["related"] if "path" in r))
    json.dump(m, open(os.path.join(out, name + ".json"), "w"))


def rename(o, old, new):
    o[new] = o.pop(old)


mutant("renamed-end-column", lambda m, ds, f, r: rename(ds[0], "end_column", "endColumn"))
mutant("renamed-errors", lambda m, ds, f, r: rename(m, "errors", "failures"))
mutant("missing-related", lambda m, ds, f, r: ds[0].pop("related"))
mutant("missing-edit-text", lambda m, ds, f, r: f["fix"]["edits"][0].pop("text"))
mutant("missing-by-severity-note", lambda m, ds, f, r: m["summary"]["by_severity"].pop("note"))
mutant("added-diagnostic-field", lambda m, ds, f, r: ds[0].update(code="E1"))
mutant("added-related-field", lambda m, ds, f, r: r.update(file=r["path"]))
mutant("added-top-field", lambda m, ds, f, r: m.update(tool="kernlint"))
mutant("line-as-string", lambda m, ds, f, r: ds[0].update(line=str(ds[0]["line"])))
mutant("column-zero", lambda m, ds, f, r: r.update(column=0))
mutant("severity-unknown", lambda m, ds, f, r: ds[0].update(severity="fatal"))
mutant("version-number", lambda m, ds, f, r: m.update(version=1))
mutant("fix-no-edits", lambda m, ds, f, r: f["fix"].update(edits=[]))
mutant("message-period", lambda m, ds, f, r: ds[0].update(message=ds[0]["message"] + "."))
EOF
mkdir -p "$tmp/mut"
if "$py" "$tmp/mutate.py" "$tmp/json-schema-examples.json" "$tmp/json-schema-fix.json" \
  "$tmp/json-schema-related-other-file.json" "$tmp/mut" >"$tmp/mut.log" 2>&1 &&
  "$py" "$tmp/validate.py" "$schema" "$tmp/mut/base.json" >>"$tmp/mut.log" 2>&1; then
  missed="" nm=0
  for m in "$tmp"/mut/*.json; do
    [ "$(basename "$m")" = base.json ] && continue
    nm=$((nm + 1))
    "$py" "$tmp/validate.py" "$schema" "$m" >/dev/null 2>&1 &&
      missed="$missed $(basename "$m" .json)"
  done
  if [ "$nm" -ge 10 ] && [ -z "$missed" ]; then pass json-schema-mutations
  else fail json-schema-mutations "$nm changed copies; the schema accepts:$missed"; fi
else
  fail json-schema-mutations "no base document to change: $(tail -2 "$tmp/mut.log" | tr '\n' ' ')"
fi
[ "$failures" -eq 0 ]
