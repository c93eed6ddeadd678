#!/usr/bin/env bash
# Builds the native runner (lib/native) into .build/native/release/enginebench-runner, against
# the WiredTiger build of tools/build_wiredtiger.sh and Debian's RocksDB and LMDB. Cargo is
# incremental: with nothing changed this takes a fraction of a second.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="$PWD/.build/native"
export EB_WIREDTIGER_BUILD="$PWD/.build/wiredtiger/out"
cargo build --release --quiet --manifest-path lib/native/Cargo.toml "$@"
