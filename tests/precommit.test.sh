#!/usr/bin/env bash
# The pre-commit hooks (.pre-commit-hooks.yaml), run by the real pre-commit: `pre-commit
# try-repo` against this checkout (with its uncommitted changes, as try-repo takes them) in
# scratch git repositories, and the .pre-commit-config.yaml snippet of docs/integrations.md
# installed as a git hook and run by real commits. Checks exit statuses and output: a bad kernel
# fails with its finding, a good one passes, host code and kernels reach one kernlint
# (require_serial), the hooks take the files kernlint walks, and kernlint's status 2 fails the
# hook too.
# Offline: the hooks are `language: system`, so pre-commit only clones this checkout. Skips when
# pre-commit or git is missing (make deps installs both) or this is not a git checkout.
# Run from the repo root with KERNLINT (and BUILD) set.
. tests/lib.sh
root=$(pwd)
if ! command -v pre-commit >/dev/null 2>&1; then
  skip precommit "pre-commit is not installed (make deps installs it)"
  exit 0
fi
if ! command -v git >/dev/null 2>&1; then
  skip precommit "git is not installed (make deps installs it)"
  exit 0
fi
if ! git -C "$root" rev-parse -q --verify HEAD >/dev/null 2>&1; then
  skip precommit "$root is not a git checkout with a commit, which pre-commit needs to clone"
  exit 0
fi
# pre-commit and git write under HOME: keep everything in the scratch folder, whoever runs this
# (CI runs as root), and leave no git variable of a calling hook pointing elsewhere.
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY PRE_COMMIT PRE_COMMIT_COLOR
export HOME="$tmp/home" PRE_COMMIT_HOME="$tmp/home/pre-commit" XDG_CACHE_HOME="$tmp/home/.cache"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME="kernlint test" GIT_AUTHOR_EMAIL=test@kernlint.invalid
export GIT_COMMITTER_NAME="kernlint test" GIT_COMMITTER_EMAIL=test@kernlint.invalid
mkdir -p "$HOME" "$tmp/bin" || exit 1
# The checkout may belong to another user than the one running the tests.
git config --global safe.directory '*'
git config --global init.defaultBranch main
git config --global commit.gpgsign false
# `language: system`: the hook runs the kernlint on PATH, here the one under test.
ln -s "$KERNLINT" "$tmp/bin/kernlint"
export PATH="$tmp/bin:$PATH"

# new_repo NAME: an empty git repository $tmp/NAME, made the current project ($proj).
new_repo() {
  proj="$tmp/$1"
  mkdir -p "$proj" && git -C "$proj" init -q
}
# put PATH: write stdin to PATH in the project and stage it.
put() {
  mkdir -p "$(dirname "$proj/$1")" && cat >"$proj/$1" && git -C "$proj" add -- "$1"
}
# pc ARGS...: pre-commit in the project; sets $rc, its output (stdout and stderr) in $tmp/out.
pc() {
  (cd "$proj" && timeout 300 pre-commit "$@" --color never) >"$tmp/out" 2>&1
  rc=$?
}
# expect NAME RC REGEX...: $rc is RC and every extended regex matches a line of $tmp/out.
expect() {
  local name=$1 want=$2 re why=""
  shift 2
  [ "$rc" = "$want" ] || why="exit $rc, expected $want; "
  for re in "$@"; do grep -Eq -- "$re" "$tmp/out" || why="${why}no line matches /$re/; "; done
  if [ -z "$why" ]; then pass "$name"
  else fail "$name" "$why$(grep -v '^=\|^Using config\|^repos:\|^ \|^-   ' "$tmp/out" |
    head -12 | cut -c1-160 | tr '\n' '|')"; fi
}
summaries() { grep -c '^Found \|^No problems found' "$tmp/out"; }


# ---- try-repo: a bad kernel fails, a good one passes ----
new_repo try
sample_bad_metal | put kernels/bad.metal
pc try-repo "$root" kernlint
expect precommit-bad-kernel-fails 1 '^kernlint\.+Failed$' '^- hook id: kernlint$' \
  '^- exit code: 1$' \
  '^kernels/bad\.metal:10:5: error: `threadgroup_barrier` inside a branch on `lid`.*\]$' \
  '^kernels/bad\.metal:10:5: error: .*\[barrier-divergence\]$' \
  '^kernels/bad\.metal:9:6: note: the branch condition diverges here$' \
  '^Found 1 problem \(1 error, 0 warnings, 0 notes\) in 1 file\.$'
git -C "$proj" rm -q --cached kernels/bad.metal
sample_good_metal | put kernels/good.metal
# Both hooks of the manifest, as try-repo runs them without a hook id; --verbose shows what
# kernlint said.
pc try-repo "$root" --verbose
expect precommit-good-kernel-passes 0 '^kernlint\.+Passed$' '^kernlint \(Metal\)\.+Passed$' \
  '^No problems found in 1 file\.$'

# ---- one kernlint for all the changed files: a dispatch in host code meets its kernel ----
new_repo serial
put app/encode.mm <<'EOF'
#import <Metal/Metal.h>

@implementation Blur {
  id<MTLComputePipelineState> _blur;
}

- (instancetype)initWithDevice:(id<MTLDevice>)device {
  self = [super init];
  id<MTLFunction> fn = [[device newDefaultLibrary] newFunctionWithName:@"blur_row"];
  _blur = [device newComputePipelineStateWithFunction:fn error:nil];
  return self;
}

- (void)encode:(id<MTLComputeCommandEncoder>)enc width:(NSUInteger)w {
  [enc setComputePipelineState:_blur];
  [enc dispatchThreadgroups:MTLSizeMake((w + 63) / 64, 1, 1)
      threadsPerThreadgroup:MTLSizeMake(64, 1, 1)];
}
@end
EOF
put kernels/blur.metal <<'EOF'
#include <metal_stdlib>
using namespace metal;

kernel void blur_row(device const float* in [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     uint x [[thread_position_in_grid]]) {
  out[x] = 0.25f * in[x] + 0.5f * in[x + 1] + 0.25f * in[x + 2];
}
EOF
# Unrelated files too, so pre-commit has enough to split across processes if it were allowed.
for i in 1 2 3 4 5 6; do sample_good_metal | put "kernels/more$i.metal"; done
pc try-repo "$root"
expect precommit-host-and-kernel-together 1 '^kernlint\.+Failed$' \
  '^kernels/blur\.metal:7:3: error: .*dispatch of `blur_row` in app/encode\.mm:16 .*' \
  '^kernels/blur\.metal:7:3: error: .*\[bounds-guard\]$'
if [ "$(summaries)" = 1 ] && grep -q '^Found 1 problem .* in 8 files\.$' "$tmp/out"; then
  pass precommit-one-process
else fail precommit-one-process "expected one kernlint run over 8 files (require_serial): $(
  grep '^Found \|^No problems found' "$tmp/out" | tr '\n' '|')"; fi
# kernlint-metal sees the kernel alone, without its dispatch: no evidence, no finding.
expect precommit-metal-hook-kernels-only 1 '^kernlint \(Metal\)\.+Passed$'

# ---- which files each hook takes: those kernlint walks, by extension ----
new_repo files
for f in a.metal a.h a.hpp a.py a.mm a.m a.cpp a.cc a.c a.txt a.METAL a.metallib a.hh a.pyi \
  Makefile h metal.txt a.metal.orig; do
  put "src/$f" </dev/null
done
git -C "$proj" commit -q -m files
walked=$(cd "$proj" && "$KERNLINT" --format json src 2>/dev/null | "$JSON_GET" /dev/stdin \
  summary.files 2>/dev/null)
pc try-repo "$root" --all-files --verbose
# --verbose shows each hook's output, kernlint's first.
if [ "$walked" = 8 ] && [ "$(grep '^No problems found' "$tmp/out" | head -1)" = \
  "No problems found in $walked files." ]; then
  pass precommit-files-as-walked
else fail precommit-files-as-walked "kernlint walks ${walked:-?} of the files, the hook passed: $(
  grep '^No problems\|^Found' "$tmp/out" | head -1)"; fi
if [ "$(grep '^No problems found' "$tmp/out" | sed -n 2p)" = "No problems found in 3 files." ]
then pass precommit-metal-files
else
  fail precommit-metal-files "kernlint-metal: $(grep '^No problems\|^Found' "$tmp/out" | sed -n 2p)"
fi
# Files of no interest to either hook are skipped; a Python kernel is the kernlint hook's, not
# kernlint-metal's.
new_repo python
echo notes | put notes.txt
put k.py <<'EOF'
import mlx.core as mx

scale = mx.fast.metal_kernel(
    name="scale", input_names=["x"], output_names=["y"],
    source="uint i = thread_position_in_grid.x;\n    y[i] = 2.0f * x[i];",
)


def scale2(x, tg=256):
    n = x.size
    return scale(inputs=[x], grid=((n + tg - 1) // tg * tg, 1, 1), threadgroup=(tg, 1, 1),
                 output_shapes=[x.shape], output_dtypes=[x.dtype])[0]
EOF
pc try-repo "$root"
expect precommit-python-kernel 1 '^kernlint\.+Failed$' '^k\.py:5:54: error: .*\[bounds-guard\]$' \
  '^kernlint \(Metal\)\.+\(no files to check\)Skipped$'

# ---- kernlint's status 2 (a file it cannot lint) fails the hook too ----
new_repo broken
printf 'kernel void k(\0)' | put blob.metal
sample_good_metal | put good.metal
pc try-repo "$root" kernlint
expect precommit-exit-2-fails 1 '^kernlint\.+Failed$' '^- exit code: 2$' \
  '^kernlint: blob\.metal: binary file' 'could not be linted'

# ---- the documented .pre-commit-config.yaml, installed, on real commits ----
# The snippet names the repository by URL and a release as rev; here they are this checkout and
# its HEAD, which only has the hooks as committed.
if ! git -C "$root" diff --quiet HEAD -- .pre-commit-hooks.yaml 2>/dev/null ||
  ! git -C "$root" cat-file -e HEAD:.pre-commit-hooks.yaml 2>/dev/null; then
  skip precommit-readme-config "HEAD has no or another .pre-commit-hooks.yaml than the work tree\
 (commit it); try-repo checked the work tree's"
else
  awk '/^```yaml$/ { on = 1; buf = ""; next }
       on && /^```$/ { on = 0
                        if (buf ~ /repo: https:/ && buf ~ /id: kernlint/) { printf "%s", buf; exit }
                        next }
       on { buf = buf $0 "\n" }' docs/integrations.md >"$tmp/snippet.yaml"
  new_repo commits
  head=$(git -C "$root" rev-parse HEAD)
  sed -e "s|^\( *- repo: \)https:.*|\1$root|" -e "s|^\( *rev: \).*|\1$head|" "$tmp/snippet.yaml" \
    >"$proj/.pre-commit-config.yaml"
  if ! grep -q "repo: $root\$" "$proj/.pre-commit-config.yaml" ||
    ! grep -q "rev: $head\$" "$proj/.pre-commit-config.yaml"; then
    fail precommit-readme-config \
      "no snippet with '- repo: https:...', 'rev:' and 'id: kernlint' in docs/integrations.md"
  else
    git -C "$proj" add .pre-commit-config.yaml
    (cd "$proj" && pre-commit install) >"$tmp/out" 2>&1 ||
      fail precommit-readme-install "pre-commit install: $(tail -3 "$tmp/out" | tr '\n' '|')"
    sample_bad_metal | put kernels/bad.metal
    (cd "$proj" && timeout 300 git commit -q -m bad) >"$tmp/out" 2>&1
    rc=$?
    expect precommit-commit-bad-refused 1 '^kernlint\.+Failed$' \
      '^kernels/bad\.metal:10:5: error: .*\[barrier-divergence\]$'
    refused=no
    git -C "$proj" rev-parse -q --verify HEAD >/dev/null || refused=yes
    git -C "$proj" rm -q --cached kernels/bad.metal
    sample_good_metal | put kernels/good.metal
    (cd "$proj" && timeout 300 git commit -q -m good) >"$tmp/out" 2>&1
    rc=$?
    # Only after the bad commit was refused: a hook that passes everything passes this too.
    if [ "$refused" = yes ] && [ "$rc" = 0 ] && grep -Eq '^kernlint\.+Passed$' "$tmp/out" &&
      [ "$(git -C "$proj" log --format=%s 2>/dev/null)" = good ]; then
      pass precommit-commit-good-made
    else
      fail precommit-commit-good-made "bad commit refused: $refused; good commit: exit $rc, log: $(
        git -C "$proj" log --format=%s 2>/dev/null | tr '\n' ' ')"
    fi
  fi
fi
[ "$failures" -eq 0 ]
