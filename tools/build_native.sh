#!/usr/bin/env bash
# Builds the native runner (lib/native) into .build/native/release/enginebench-runner, against
# the WiredTiger builds of tools/build_wiredtiger.sh (11.3.1, and 2.9.2 where built), the RocksDB
# build of tools/build_rocksdb.sh, the LMDB build of tools/build_lmdb.sh and Debian's WiredTiger 3.2.1. Cargo is incremental: with nothing changed this takes a
# fraction of a second. `tools/build_native.sh test` runs the runner's tests with the same builds.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="$PWD/.build/native"
export EB_WIREDTIGER_BUILD="$PWD/.build/wiredtiger/out:$PWD/.build/wiredtiger-2.9.2/out"
export EB_ROCKSDB_BUILD="$PWD/.build/rocksdb/out"
export EB_LMDB_BUILD="$PWD/.build/lmdb/out"
command=${1:-build}
cargo "$command" --release --quiet --manifest-path lib/native/Cargo.toml "${@:2}"
