#!/usr/bin/env bash
# action.yml, the composite GitHub Action: it must parse as YAML, be a composite action whose
# inputs are all used (and only declared ones), pass inputs to its scripts through env only, and
# upload SARIF with github/codeql-action/upload-sarif; the workflow in docs/integrations.md must
# use it right.
# Its bash steps are then run as GitHub's runner runs them (bash --noprofile --norc -eo pipefail,
# inputs and step outputs substituted into env, GITHUB_OUTPUT and GITHUB_PATH files) with the
# real kernlint, in a scratch workspace: annotations, the SARIF log, exit-code for each fail-on,
# and the final step's verdict.
# The build step runs too when it has nothing to install or build here.
# YAML is read with python3's yaml module (pre-commit's PyYAML); skips without one.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
root=$(pwd)
py=""
pc_py=$(sed -n '1s/^#! *//p' "$(command -v pre-commit 2>/dev/null || echo /dev/null)" 2>/dev/null)
for c in python3 /usr/bin/python3 $pc_py; do
  if "$c" -c 'import yaml' >/dev/null 2>&1; then py=$c; break; fi
done
if [ -z "$py" ]; then
  skip action "no python3 with the yaml module (python3-yaml; pre-commit brings it)"
  exit 0
fi

cat >"$tmp/action.py" <<'EOF'
"""check ACTION: the structure, as one PASS or FAIL line naming every problem; exit 1 on FAIL.
step ACTION ID OUTDIR SCRIPT ENVFILE [NAME=VALUE...]: the step's run script and its env
(NUL-separated NAME=VALUE), with ${{ inputs.X }}, ${{ github.action_path }} and
${{ steps.ID.outputs.K }} (from OUTDIR/ID, a GITHUB_OUTPUT file) substituted."""
import os, re, sys, yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
problems = []


def check(name, ok, why):
    if not ok:
        problems.append("%s: %s" % (name, why))


def texts(node):
    """Every string in the steps (values and if: conditions)."""
    if isinstance(node, dict):
        for v in node.values():
            yield from texts(v)
    elif isinstance(node, list):
        for v in node:
            yield from texts(v)
    elif isinstance(node, str):
        yield node


def cmd_check(path):
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except yaml.YAMLError as e:
        check("yaml", False, str(e).replace("\n", " "))
        return
    if not isinstance(doc, dict):
        check("yaml", False, "not a mapping")
        return
    for key in ("name", "description", "inputs", "runs"):
        check("has-" + key, key in doc, "no top-level " + key)
    runs, inputs = doc.get("runs") or {}, doc.get("inputs") or {}
    steps = runs.get("steps") or []
    check("composite", runs.get("using") == "composite", "runs.using is not composite")
    want = {"paths", "args", "fail-on", "upload-sarif", "sarif-file"}
    check("inputs-declared", want <= set(inputs), "missing inputs: %s" % (want - set(inputs)))
    bad = [n for n, v in inputs.items()
           if not isinstance(v, dict) or not v.get("description") or
           ("default" in v and not isinstance(v["default"], str))]
    check("inputs-described", not bad,
          "no description, or a default that is not a string: %s" % bad)
    used = set()
    for t in list(texts(steps)) + list(texts(doc.get("outputs") or {})):
        used |= set(re.findall(r"\binputs\.([A-Za-z0-9_-]+)", t))
    check("inputs-used", set(inputs) <= used, "declared, never used: %s" % (set(inputs) - used))
    check("inputs-known", used <= set(inputs), "used, never declared: %s" % (used - set(inputs)))
    ids, late = set(), []
    for s in steps:
        for t in texts(s):
            late += [r for r in re.findall(r"\bsteps\.([A-Za-z0-9_-]+)\.", t) if r not in ids]
        if "id" in s:
            ids.add(s["id"])
    for t in texts(doc.get("outputs") or {}):
        late += [r for r in re.findall(r"\bsteps\.([A-Za-z0-9_-]+)\.", t) if r not in ids]
    check("step-refs", not late, "refers to steps not run before: %s" % late)
    runsteps = [s for s in steps if "run" in s]
    check("run-shell", all(s.get("shell") == "bash" for s in runsteps),
          "a run step without shell: bash (a composite action must name its shell)")
    spliced = [s.get("name") for s in runsteps if "${{" in s["run"]]
    check("no-expressions-in-scripts", not spliced,
          "expressions spliced into scripts (pass them through env): %s" % spliced)
    up = [s for s in steps
          if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    check("uploads-sarif", len(up) == 1 and "sarif_file" in (up[0].get("with") or {}) and
          "upload-sarif" in str(up[0].get("if", "")),
          "no github/codeql-action/upload-sarif step with sarif_file, conditional on upload-sarif")
    lint = " ".join(s["run"] for s in runsteps)
    check("runs-formats", "--format github" in lint and "--format sarif" in lint,
          "no kernlint --format github and --format sarif runs")
    build = " ".join(s["run"] for s in runsteps if s.get("id") == "build")
    check("builds", "make" in build and "deps" in build and "all" in build and
          "GITHUB_PATH" in build,
          "the build step does not make deps and all and add kernlint to PATH")


def cmd_readme(action, readme):
    """The documented workflow (docs/integrations.md): YAML, with the permission to upload, a
    checkout before the action, and only inputs the action declares."""
    with open(action) as f:
        inputs = set((yaml.safe_load(f).get("inputs") or {}))
    blocks = re.findall(r"^```yaml\n(.*?)^```$", open(readme).read(), re.M | re.S)
    flows = [b for b in blocks if re.search(r"uses: OWNER/kernlint@", b) and "jobs:" in b]
    check("readme-workflow", len(flows) == 1,
          "no docs/integrations.md yaml block with jobs: and uses: OWNER/kernlint@")
    if len(flows) != 1:
        return
    try:
        wf = yaml.safe_load(flows[0])
    except yaml.YAMLError as e:
        check("readme-workflow-yaml", False, str(e).replace("\n", " "))
        return
    perms = wf.get("permissions") or {}
    check("readme-workflow-permission", perms.get("security-events") == "write",
          "permissions.security-events is not write")
    steps = [s for j in (wf.get("jobs") or {}).values() for s in (j.get("steps") or [])]
    uses = [str(s.get("uses", "")) for s in steps]
    at = [i for i, u in enumerate(uses) if u.startswith("OWNER/kernlint@")]
    co = [i for i, u in enumerate(uses) if u.startswith("actions/checkout@")]
    check("readme-workflow-steps", at and co and co[0] < at[0],
          "no actions/checkout before the action")
    given = set(k for s in steps if str(s.get("uses", "")).startswith("OWNER/kernlint@")
                for k in (s.get("with") or {}))
    check("readme-workflow-inputs", given <= inputs,
          "inputs the action does not declare: %s" % (given - inputs))


def cmd_step(path, sid, outdir, script, envfile, given):
    with open(path) as f:
        doc = yaml.safe_load(f)
    inputs = {n: (v or {}).get("default", "") for n, v in doc["inputs"].items()}
    inputs.update(given)

    def value(m):
        e = m.group(1)
        if e == "github.action_path":
            return os.environ["ACTION_PATH"]
        m2 = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)", e)
        if m2:
            return inputs[m2.group(1)]
        m2 = re.fullmatch(r"steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)", e)
        if m2:
            out = {}
            p = os.path.join(outdir, m2.group(1))
            if os.path.exists(p):
                for line in open(p):
                    k, _, v = line.rstrip("\n").partition("=")
                    out[k] = v
            return out.get(m2.group(2), "")
        sys.exit("unknown expression: " + e)

    step = [s for s in doc["runs"]["steps"] if s.get("id") == sid or s.get("name") == sid][0]
    with open(script, "w") as f:
        f.write(step["run"])
    with open(envfile, "w") as f:
        for k, v in (step.get("env") or {}).items():
            f.write("%s=%s\0" % (k, EXPR.sub(value, str(v))))


if sys.argv[1] == "check":
    cmd_check(sys.argv[2])
    cmd_readme(sys.argv[2], sys.argv[3])
    if problems:
        print("FAIL action-yml-valid: " + "; ".join(problems))
    else:
        print("PASS action-yml-valid")
    sys.exit(1 if problems else 0)
given = dict(a.split("=", 1) for a in sys.argv[7:])
cmd_step(*sys.argv[2:7], given)
EOF

# ---- structure ----
# (These two checks never run kernlint.)
"$py" "$tmp/action.py" check action.yml docs/integrations.md || failures=$((failures + 1))
bad=""
for id in build lint "Fail on kernlint findings"; do
  if ! ACTION_PATH="$root" "$py" "$tmp/action.py" step action.yml "$id" "$tmp" "$tmp/s.sh" \
    "$tmp/s.env" 2>"$tmp/err" || ! bash -n "$tmp/s.sh" 2>>"$tmp/err"; then
    bad="$bad $id: $(head -c 300 "$tmp/err" | tr '\n' '|');"
  fi
done
if [ -z "$bad" ]; then pass action-scripts-parse; else fail action-scripts-parse "$bad"; fi

# ---- the steps, run as the runner runs them ----
ws="$tmp/ws"
mkdir -p "$ws/kernels" "$tmp/bin" "$tmp/outputs" || exit 1
ln -s "$KERNLINT" "$tmp/bin/kernlint"
# run_step ID [INPUT=VALUE...]: one step in the workspace; sets $rc, stdout and stderr in
# $tmp/out and $tmp/err, its outputs in $tmp/outputs/ID, what it added to PATH in $tmp/path.
run_step() {
  local id=$1 envs
  shift
  : >"$tmp/outputs/$id"
  : >"$tmp/path"
  if ! ACTION_PATH="$root" "$py" "$tmp/action.py" step action.yml "$id" "$tmp/outputs" \
    "$tmp/step.sh" "$tmp/step.env" "$@" 2>"$tmp/err"; then
    rc=99
    return
  fi
  mapfile -d '' envs <"$tmp/step.env"
  # A runner's environment, not that of the make running this suite (its BUILD, SAN, -j).
  (cd "$ws" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "${envs[@]}" \
    GITHUB_OUTPUT="$tmp/outputs/$id" GITHUB_PATH="$tmp/path" GITHUB_WORKSPACE="$ws" \
    PATH="$tmp/bin:$PATH" \
    timeout 300 bash --noprofile --norc -eo pipefail "$tmp/step.sh") >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
output() { sed -n "s/^$1=//p" "$tmp/outputs/lint"; }
outputs() { tr '\n' ' ' <"$tmp/outputs/lint"; }
# verdict: the last step, given the lint step's outputs; sets $rc.
verdict() { run_step "Fail on kernlint findings" "$@"; }

sample_bad_metal >"$ws/kernels/bad.metal"
cat >"$ws/kernels/warn.metal" <<'EOF'
[[max_total_threads_per_threadgroup(100)]]
kernel void odd(device float *a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  a[gid] = 0.0f;
}
EOF
printf '[rules]\nbarrier-divergence = off\n' >"$ws/ci.lintrc"

# Defaults: every finding annotated, the SARIF log written, the step failed at the end.
run_step lint
if [ "$rc" = 0 ] && [ "$(output exit-code)" = 1 ] && [ "$(output sarif-file)" = kernlint.sarif ]
then pass action-defaults-outputs
else fail action-defaults-outputs "exit $rc, outputs $(outputs); $(head -c 300 "$tmp/err")"; fi
lint_ok=$([ "$(output exit-code)" = 1 ] && echo yes)
if grep -q '^::error file=kernels/bad.metal,line=10,col=5,.*title=kernlint (barrier-divergence)::' \
  "$tmp/out" && grep -q '^::warning file=kernels/warn.metal,line=1,' "$tmp/out"; then
  pass action-annotations
else fail action-annotations "$(head -c 300 "$tmp/out")"; fi
if [ "$("$JSON_GET" "$ws/kernlint.sarif" runs.0.results# 2>/dev/null)" = 2 ] &&
  [ "$("$JSON_GET" "$ws/kernlint.sarif" runs.0.tool.driver.name 2>/dev/null)" = kernlint ]; then
  pass action-sarif-written
else fail action-sarif-written "no SARIF log with 2 results at $ws/kernlint.sarif"; fi
verdict
if [ "$lint_ok" = yes ] && [ "$rc" = 1 ] &&
  grep -q "^::error title=kernlint::kernlint found problems at or above 'warning'" "$tmp/out"
then pass action-fails-on-findings
else fail action-fails-on-findings "exit $rc: $(head -c 200 "$tmp/out")"; fi

# fail-on error: a warning alone passes; the SARIF log still has it.
# The last step passes then.
run_step lint fail-on=error paths=kernels/warn.metal
why=""
[ "$rc" = 0 ] && [ "$(output exit-code)" = 0 ] ||
  why="lint step exit $rc, exit-code $(output exit-code); "
grep -q '^::warning ' "$tmp/out" || why="${why}no ::warning; "
[ "$("$JSON_GET" "$ws/kernlint.sarif" runs.0.results# 2>/dev/null)" = 1 ] ||
  why="${why}no SARIF result; "
verdict fail-on=error
[ "$rc" = 0 ] || why="${why}the last step exited $rc; "
if [ -z "$why" ]; then pass action-fail-on-error; else fail action-fail-on-error "$why"; fi
# fail-on never: errors are reported, and pass.
run_step lint fail-on=never
if [ "$rc" = 0 ] && [ "$(output exit-code)" = 0 ] && grep -q '^::error file=kernels/bad' "$tmp/out"
then pass action-fail-on-never
else fail action-fail-on-never "exit $rc, outputs $(outputs)"; fi
run_step lint fail-on=sometimes
# (This check never runs kernlint.)
if [ "$rc" != 0 ] && grep -q "^::error title=kernlint::fail-on is 'sometimes'" "$tmp/out"; then
  pass action-fail-on-invalid
else fail action-fail-on-invalid "exit $rc: $(head -c 200 "$tmp/out")"; fi

# args and a list of paths on several lines; no SARIF log when sarif-file is empty.
rm -f "$ws/kernlint.sarif"
run_step lint args="--config ci.lintrc --target m3" \
  paths=$'kernels/bad.metal\n  kernels/warn.metal' fail-on=error sarif-file=
if [ "$rc" = 0 ] && [ "$(output exit-code)" = 0 ] && [ -z "$(output sarif-file)" ] &&
  [ ! -e "$ws/kernlint.sarif" ] && ! grep -q barrier-divergence "$tmp/out" &&
  grep -q '^::warning file=kernels/warn.metal' "$tmp/out"; then
  pass action-args-and-paths
else fail action-args-and-paths "exit $rc, outputs $(outputs); $(head -c 300 "$tmp/out")"; fi

# An input that cannot be linted fails the step whatever fail-on says; a usage error too, and
# then no SARIF log is offered for upload.
run_step lint fail-on=never paths="kernels missing.metal"
if [ "$rc" = 0 ] && [ "$(output exit-code)" = 2 ] &&
  grep -q '^::error file=missing.metal,title=kernlint::' "$tmp/out"; then pass action-input-error
else fail action-input-error "exit $rc, outputs $(outputs)"; fi
lint_ok=$([ "$(output exit-code)" = 2 ] && echo yes)
verdict fail-on=never
if [ "$lint_ok" = yes ] && [ "$rc" = 1 ] &&
  grep -q '^::error title=kernlint::kernlint could not lint every input' "$tmp/out"
then pass action-fails-on-input-error
else fail action-fails-on-input-error "exit $rc: $(head -c 200 "$tmp/out")"; fi
run_step lint args=--no-such-option
if [ "$(output exit-code)" = 2 ] && [ -z "$(output sarif-file)" ] &&
  grep -q "unknown option '--no-such-option'" "$tmp/err"; then pass action-usage-error
else fail action-usage-error "exit $rc, outputs $(outputs)"; fi

# ---- the build step, where it installs and builds nothing (CI after make deps all) ----
pkgs=$(make -s --no-print-directory --eval 'kl-deb-pkgs: ; @echo $(DEB_PKGS)' kl-deb-pkgs)
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  skip action-build-step "not root and no sudo"
elif [ -n "$missing" ] || ! command -v npm >/dev/null; then
  skip action-build-step "it would install packages here:$missing"
elif ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -q --no-print-directory build/release/kernlint \
  2>/dev/null; then
  skip action-build-step \
    "build/release/kernlint is not up to date (make all), and a test builds nothing"
else
  run_step build
  # The kernlint it built is the one under test (in the release flavour) or its twin.
  want=$("$KERNLINT" --version 2>/dev/null)
  if [ "$rc" = 0 ] && [ "$(cat "$tmp/path")" = "$root/build/release" ] && [ -n "$want" ] &&
    grep -qx "$want" "$tmp/out"; then pass action-build-step
  else
    fail action-build-step "exit $rc, PATH += '$(cat "$tmp/path")'; $(tail -c 300 "$tmp/err")"
  fi
fi
[ "$failures" -eq 0 ]
