#!/usr/bin/env bash
# Build the engine libraries the native runner links, side by side, each only when its build
# script changed since it built it (its flags): LMDB from Debian's source with frame pointers
# (seconds), RocksDB's release build of Debian's source (about three minutes on two cores) and
# WiredTiger 11.3.1 (about two), which every experiment runs.
# The releases only some systems name are built when EB_BUILDS names them (space- or
# newline-separated, `enginebench builds <experiment>` prints an experiment's; `all` for every one,
# as `make test`, whose tests open every release offered, asks): PerconaFT's three releases
# (perconaft-<release>, tools/build_perconaft.sh, about 35 CPU-seconds each), the posts' WiredTiger
# trees (wiredtiger-tag-<tag>, tools/build_wiredtiger_tag.sh, about 30) and WiredTiger 2.9.2
# (wiredtiger-2.9.2, MongoDB 3.4's release, the oldest the package registry serves, about 90).
# Usage: tools/build_engines.sh <python>
set -euo pipefail
PY=${1:?python}
cd "$(dirname "$0")/.."
source tools/compiler_cache.sh

wanted() {  # wanted BUILD: EB_BUILDS names it
  [ "${EB_BUILDS:-}" = all ] || [[ " $(echo ${EB_BUILDS:-}) " == *" $1 "* ]]
}
built_by() {  # built_by SCRIPT LIBRARY
  [ -f "$2" ] && [ "$(cat "$(dirname "$2")/built-by.sha256" 2>/dev/null)" = "$(sha256sum "$1" | cut -d' ' -f1)" ]
}
wt_built() { built_by tools/build_wiredtiger.sh "$1/out/libwiredtiger.so"; }
built=()
build() {  # build LABEL COMMAND...: in the background; says how long it took when it ends
  local label=$1; shift
  ( start=$SECONDS; "$@" >/dev/null; echo "setup: $label built in $((SECONDS - start)) s" ) & built+=($!)
}
if ! built_by tools/build_lmdb.sh .build/lmdb/out/liblmdb.a; then
  echo "setup: building LMDB 0.9.24 (Debian's source) with frame pointers (seconds)"
  build "LMDB" bash tools/build_lmdb.sh .build/lmdb
fi
if ! built_by tools/build_rocksdb.sh .build/rocksdb/out/librocksdb.a; then
  echo "setup: building RocksDB 7.8.3 (Debian's source) as a release build (about three minutes)"
  build "RocksDB" bash tools/build_rocksdb.sh "$PY" .build/rocksdb
fi
if ! wt_built .build/wiredtiger; then
  echo "setup: building WiredTiger 11.3.1 with snappy and zstd (about two minutes)"
  build "WiredTiger 11.3.1" bash tools/build_wiredtiger.sh "$PY" .build/wiredtiger
fi
# PerconaFT, the fractal tree, at the releases the posts ran (lib/enginebench/engines.py
# FRACTAL_RELEASES): its two libraries each, about 35 CPU-seconds a release.
for release in tokumx-1.0.4 tokumx-2.0.1 tokumxse-1.0.0-rc.6; do
  out=.build/perconaft-$release/out
  wanted "perconaft-$release" || continue
  if [ ! -f "$out/libtokufractaltree_static.a" ] \
     || [ "$(cat "$out/built-by.sha256" 2>/dev/null)" != "$(cat tools/build_perconaft.sh tools/patches/fractal/*.patch tools/perconaft.sources | sha256sum | cut -d' ' -f1)" ]; then
    echo "setup: building PerconaFT $release (the fractal tree; about half a minute)"
    build "PerconaFT $release" bash tools/build_perconaft.sh "$release" ".build/perconaft-$release"
  fi
done
# WiredTiger as the posts' MongoDB releases shipped it (tools/wiredtiger.sources): the release
# claims compare them. The library and its snappy extension only, about 30 CPU-seconds a tree.
for release in mongodb-3.0.4 2.6.1 mongodb-3.0.7 mongodb-3.2.0-rc1; do
  out=.build/wiredtiger-tag-$release/out
  wanted "wiredtiger-tag-$release" || continue
  if [ ! -f "$out/libwiredtiger.so" ] \
     || [ "$(cat "$out/built-by.sha256" 2>/dev/null)" != "$(cat tools/build_wiredtiger_tag.sh tools/wiredtiger.sources | sha256sum | cut -d' ' -f1)" ]; then
    echo "setup: building WiredTiger as tagged $release (the posts' MongoDB trees; about half a minute)"
    build "WiredTiger $release" bash tools/build_wiredtiger_tag.sh "$release" ".build/wiredtiger-tag-$release"
  fi
done
if wanted wiredtiger-2.9.2 && ! wt_built .build/wiredtiger-2.9.2; then
  echo "setup: building WiredTiger 2.9.2 with snappy and zstd as extensions (about a minute)"
  build "WiredTiger 2.9.2" env WT_VERSION=2.9.2 bash tools/build_wiredtiger.sh "$PY" .build/wiredtiger-2.9.2
fi
for pid in "${built[@]}"; do wait "$pid" || { echo "setup: a library's build failed (its log is in .build/)" >&2; exit 1; }; done
