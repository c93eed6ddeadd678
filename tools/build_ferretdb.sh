#!/usr/bin/env bash
# Build FerretDB, the second stand-in wire-protocol server (a Go server announcing wire version 21,
# on its SQLite backend), from the Go module proxy with nothing but the Go toolchain: download the
# module at $VERSION, copy it to a writable .build/ferretdb/src (the module cache is read-only),
# write the build/version/version.txt the served module lacks (the binary panics at start without
# it), and build cmd/ferretdb. Idempotent (the copy is refreshed, Go's build cache does the rest).
# Prints the path of the binary.
# Time here (2 busy CPUs, modules already downloaded): 5 min with an empty Go build cache (2m15s
# of CPU); 15-30 s with .build/ferretdb deleted but Go's build cache warm; 5 s when nothing changed.
# Usage: tools/build_ferretdb.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MODULE=github.com/FerretDB/FerretDB
VERSION=v1.24.2
OUT=$PWD/.build/ferretdb
SRC=$OUT/src

if ! command -v go >/dev/null; then
  if [ -x /usr/local/go/bin/go ]; then
    PATH=/usr/local/go/bin:$PATH
  else
    echo "ferretdb: no go on PATH (nor /usr/local/go/bin/go): install Debian's golang package" \
         "(apt-get install golang) or Go from its site into /usr/local/go" >&2
    exit 1
  fi
fi
# The build runs inside this checkout's git work tree: no VCS stamping (with commit.txt absent,
# FerretDB would report the checkout's commit as its own), and no go.work from above.
export GOWORK=off GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false"

echo "ferretdb: downloading $MODULE@$VERSION" >&2
json=$(cd "${TMPDIR:-/tmp}" && GOFLAGS=-mod=mod go mod download -json "$MODULE@$VERSION") || {
  echo "ferretdb: go mod download $MODULE@$VERSION failed (is the Go module proxy reachable? see GOPROXY)" >&2
  exit 1
}
dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' <<<"$json")
if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
  echo "ferretdb: go mod download reported no module folder for $MODULE@$VERSION:" >&2
  echo "$json" >&2
  exit 1
fi

echo "ferretdb: copying $dir to $SRC" >&2
[ -d "$SRC" ] && chmod -R u+w "$SRC"
rm -rf "$SRC"
mkdir -p "$OUT"
cp -R "$dir" "$SRC"
chmod -R u+w "$SRC"
echo "$VERSION" >"$SRC/build/version/version.txt"

# The toolchain go.mod asks for when the installed one is older: its `toolchain` line, else `go`.
have=$(go env GOVERSION | sed 's/^go//')
want=$(sed -n 's/^toolchain go\([0-9.]*\)$/\1/p' "$SRC/go.mod")
[ -n "$want" ] || want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$SRC/go.mod")
older() { [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }
if [ -n "$want" ] && older "$have" "$want"; then
  if older "$have" 1.21; then   # GOTOOLCHAIN (fetching another toolchain) arrived in Go 1.21
    echo "ferretdb: Go $have is too old: FerretDB needs go$want, and Go before 1.21 cannot fetch it;" \
         "install a newer Debian golang package or Go from its site into /usr/local/go" >&2
    exit 1
  fi
  echo "ferretdb: Go $have is older than the go$want FerretDB's go.mod asks for; fetching that toolchain" >&2
  export GOTOOLCHAIN=go$want
fi

echo "ferretdb: building $OUT/ferretdb with $(go version) (a few minutes on the first build)" >&2
(cd "$SRC" && go build -o "$OUT/ferretdb" ./cmd/ferretdb) || {
  echo "ferretdb: go build failed in $SRC" >&2
  exit 1
}
echo "$OUT/ferretdb"
