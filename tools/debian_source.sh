#!/usr/bin/env bash
# Fetch one of Debian's source packages, its patches applied, into a folder.
# Usage: tools/debian_source.sh <package>=<version> <destination>
# The machine's own apt sources are read as deb-src into a private apt state (nothing of the
# system's is changed, root is not needed), so the source's checksums are checked against
# Debian's signed index.
set -euo pipefail
SOURCE=${1:?package=version}; DEST=${2:?destination}
mkdir -p "$(dirname "$DEST")"
APT=$(mktemp -d "$(dirname "$DEST")/apt.XXXXXX")
trap 'rm -rf "$APT"' EXIT
mkdir -p "$APT/parts" "$APT/lists/partial" "$APT/cache/archives/partial" "$APT/fetch"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -e "$f" ] && sed -E 's/^Types:.*/Types: deb-src/' "$f" >"$APT/parts/$(basename "$f")"
done
touch "$APT/sources.list"
[ -f /etc/apt/sources.list ] && sed -n -E 's/^deb([[:space:]])/deb-src\1/p' /etc/apt/sources.list >"$APT/sources.list"
for f in /etc/apt/sources.list.d/*.list; do
  [ -e "$f" ] && sed -n -E 's/^deb([[:space:]])/deb-src\1/p' "$f" >"$APT/parts/$(basename "$f")"
done
apt_opts=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/parts"
          -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache" -o "APT::Sandbox::User=$(id -un)")
LOG="$DEST.apt.log"
apt-get "${apt_opts[@]}" update >"$LOG" 2>&1 || { tail -20 "$LOG" >&2; exit 1; }
(cd "$APT/fetch" && apt-get "${apt_opts[@]}" source "$SOURCE") >>"$LOG" 2>&1 \
  || { tail -20 "$LOG" >&2; echo "debian_source: Debian's source package $SOURCE could not be fetched" >&2; exit 1; }
rm -rf "$DEST"
mv "$(find "$APT/fetch" -mindepth 1 -maxdepth 1 -type d | head -1)" "$DEST"
