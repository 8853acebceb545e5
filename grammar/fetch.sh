#!/usr/bin/env bash
# Fetch one pinned grammar with `npm pack`, verify its sha256 and unpack its src/ into DEST.
# Usage: grammar/fetch.sh NAME VERSION SHA256 DEST
set -euo pipefail
name=$1 version=$2 sha=$3 dest=$4
# make runs this when grammar/pins.mk is newer than the sources: touching them (they keep the
# tarball's old times) tells it they are current, so an unchanged pin costs one run, not a loop.
if [ -f "$dest/src/parser.c" ] && [ "$(cat "$dest/.version" 2>/dev/null)" = "$version" ]; then
  find "$dest/src" -type f -exec touch {} +
  exit 0
fi
command -v npm >/dev/null ||
  { echo "grammar/fetch.sh: npm is required (apt-get install npm; brew install node)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$name@$version" >/dev/null)
tgz="$tmp/$name-$version.tgz"
# macOS has shasum (Perl) and no sha256sum.
if command -v sha256sum >/dev/null; then got=$(sha256sum "$tgz" | cut -d' ' -f1)
else got=$(shasum -a 256 "$tgz" | cut -d' ' -f1); fi
if [ "$got" != "$sha" ]; then
  echo "grammar/fetch.sh: $name@$version sha256 mismatch: expected $sha, got $got" >&2
  exit 2
fi
rm -rf "$dest"
mkdir -p "$dest"
tar -xzf "$tgz" -C "$dest" --strip-components=1 package/src package/LICENSE 2>/dev/null ||
  tar -xzf "$tgz" -C "$dest" --strip-components=1 package/src
find "$dest/src" -type f -exec touch {} +
echo "$version" > "$dest/.version"
