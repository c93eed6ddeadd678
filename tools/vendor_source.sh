#!/usr/bin/env bash
# Unpack one release of a third-party source tree, its integrity checked, into a folder.
# Usage: tools/vendor_source.sh <sources-file> <release> <destination>
#
# <sources-file> (tools/*.sources) lists, one release a line: the release, the archive's name,
# its sha256, the public repository and the commit its tag names. The tree comes from the first
# of:
#   1. $EB_VENDOR_DIR/<archive> (a folder of archives you name);
#   2. shared/vendor/<project>/<archive> in the repository's parent folder or any folder above it,
#      or above the local checkout it was cloned from (where the project's machines keep the
#      archives they cannot download);
#   3. the public repository, cloned at the tag: the clone's commit must be the one listed.
# An archive's sha256 must match the list, or nothing is unpacked and the error names the file,
# the checksum found and the one expected.
set -euo pipefail
SOURCES=${1:?sources file}; RELEASE=${2:?release}; DEST=${3:?destination}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
line=$(awk -v r="$RELEASE" '$1 == r' "$SOURCES")
if [ -z "$line" ]; then
  echo "vendor_source: $SOURCES lists no release $RELEASE; listed: $(awk '!/^#/ && NF {print $1}' "$SOURCES" | tr '\n' ' ')" >&2
  exit 2
fi
read -r _ ARCHIVE SHA256 REPO COMMIT <<<"$line"
PROJECT=$(basename "$SOURCES" .sources)

archive=""
if [ -n "${EB_VENDOR_DIR:-}" ] && [ -f "$EB_VENDOR_DIR/$ARCHIVE" ]; then
  archive="$EB_VENDOR_DIR/$ARCHIVE"
else
  # The folders above the repository, and above the one it was cloned from when that is a local
  # checkout (a fresh clone made elsewhere on the same machine).
  origin=$(git -C "$ROOT" config --get remote.origin.url 2>/dev/null || true)
  starts=("$ROOT")
  [ -n "$origin" ] && [ -d "$origin" ] && starts+=("$(cd "$origin" && pwd)")
  for start in "${starts[@]}"; do
    dir=$(dirname "$start")
    while [ -z "$archive" ]; do
      if [ -f "$dir/shared/vendor/$PROJECT/$ARCHIVE" ]; then archive="$dir/shared/vendor/$PROJECT/$ARCHIVE"; fi
      [ "$dir" = / ] && break
      dir=$(dirname "$dir")
    done
    [ -n "$archive" ] && break
  done
fi

rm -rf "$DEST.unpack" && mkdir -p "$DEST.unpack"
if [ -n "$archive" ]; then
  found=$(sha256sum "$archive" | cut -d' ' -f1)
  if [ "$found" != "$SHA256" ]; then
    echo "vendor_source: $archive: sha256 $found, but $SOURCES expects $SHA256 for $RELEASE; the archive is corrupt or not the release's: replace it (or remove it to clone $REPO at its tag)" >&2
    rm -rf "$DEST.unpack"
    exit 1
  fi
  tar -xzf "$archive" -C "$DEST.unpack"
  tree=$(find "$DEST.unpack" -mindepth 1 -maxdepth 1 -type d | head -1)
else
  echo "vendor_source: no $ARCHIVE under \$EB_VENDOR_DIR or a shared/vendor/$PROJECT folder; cloning $REPO at $RELEASE" >&2
  git clone --quiet --depth 1 --branch "$RELEASE" "$REPO" "$DEST.unpack/tree" \
    || { echo "vendor_source: could not clone $REPO at $RELEASE; put $ARCHIVE in a folder and name it with EB_VENDOR_DIR" >&2; exit 1; }
  got=$(git -C "$DEST.unpack/tree" rev-parse HEAD)
  if [ "$got" != "$COMMIT" ]; then
    echo "vendor_source: $REPO's tag $RELEASE is commit $got, but $SOURCES expects $COMMIT" >&2
    exit 1
  fi
  rm -rf "$DEST.unpack/tree/.git"
  tree="$DEST.unpack/tree"
fi
rm -rf "$DEST"
mv "$tree" "$DEST"
rm -rf "$DEST.unpack"
echo "${archive:-$REPO@$COMMIT} sha256:$SHA256"
