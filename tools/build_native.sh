#!/usr/bin/env bash
# Builds the native runner (lib/native) into .build/native/release/enginebench-runner, against
# the WiredTiger builds of tools/build_wiredtiger.sh (11.3.1, and 2.9.2 where built) and
# tools/build_wiredtiger_tag.sh (the posts' MongoDB trees), the RocksDB
# build of tools/build_rocksdb.sh, the LMDB build of tools/build_lmdb.sh and Debian's WiredTiger
# 3.2.1. Cargo is incremental: with nothing changed this takes a fraction of a second.
#   tools/build_native.sh test    runs the runner's tests with the same builds;
#   tools/build_native.sh deps    compiles only the crates the runner depends on, which need none
#                                 of the engines: setup runs it beside the engines' builds.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/compiler_cache.sh  # the cc crate's compiles (the shims, ring's C)
export CARGO_TARGET_DIR="$PWD/.build/native"
EB_WIREDTIGER_BUILD="$PWD/.build/wiredtiger/out"
# The older release only where it was built (make wiredtiger-2.9.2): build.rs links what is listed.
if [ -f .build/wiredtiger-2.9.2/out/libwiredtiger.so ]; then
  EB_WIREDTIGER_BUILD="$EB_WIREDTIGER_BUILD:$PWD/.build/wiredtiger-2.9.2/out"
fi
# The posts' MongoDB trees (tools/build_wiredtiger_tag.sh), each named by its tag.
for built in .build/wiredtiger-tag-*/out; do
  [ -f "$built/release" ] && EB_WIREDTIGER_BUILD="$EB_WIREDTIGER_BUILD:$PWD/$built"
done
export EB_WIREDTIGER_BUILD
# PerconaFT: every release tools/build_perconaft.sh built (tools/build_engines.sh).
EB_PERCONAFT_BUILDS=""
for built in .build/perconaft-*/out; do
  [ -f "$built/release" ] && EB_PERCONAFT_BUILDS="$EB_PERCONAFT_BUILDS:$PWD/$built"
done
export EB_PERCONAFT_BUILDS
export EB_ROCKSDB_BUILD="$PWD/.build/rocksdb/out"
export EB_LMDB_BUILD="$PWD/.build/lmdb/out"
manifest=lib/native/Cargo.toml
command=${1:-build}
if [ "$command" = deps ]; then
  # The runner's direct dependencies at their locked versions (`name@version`): building them
  # builds everything below them, with the features the runner's build resolves, so the runner's
  # own build then compiles only its crate.
  specs=()
  for dep in $(cargo tree --manifest-path "$manifest" -e normal --depth 1 --prefix none \
                 --format '{p}' | tail -n +2 | awk '{sub(/^v/, "", $2); print $1 "@" $2}' | sort -u); do
    specs+=(-p "$dep")
  done
  exec cargo build --release --quiet --manifest-path "$manifest" "${specs[@]}"
fi
cargo "$command" --release --quiet --manifest-path "$manifest" "${@:2}"
