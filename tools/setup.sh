#!/usr/bin/env bash
# Install everything enginebench needs into ENV_DIR (a conda env, or a venv created here):
# Debian build packages, the Python dependencies, the WiredTiger libraries (11.3.1, 2.9.2) built with snappy and
# zstd, RocksDB built from Debian's source as a release build, LMDB from Debian's source with frame pointers, the native runner (lib/native, built with Rust), and a Jupyter kernel named "enginebench".
# Usage: tools/setup.sh ENV_DIR "DEBIAN PACKAGES"
set -euo pipefail
ENV_DIR=$1; PACKAGES=$2
cd "$(dirname "$0")/.."

missing=()
for pkg in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages: ${missing[*]}; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -x "$ENV_DIR/bin/python" ]; then
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "setup: Python 3.11 or newer is needed (found $(python3 --version))" >&2; exit 1; }
  echo "setup: creating $ENV_DIR"
  python3 -m venv "$ENV_DIR"
fi
PY="$ENV_DIR/bin/python"
"$PY" -m pip install -q --upgrade pip
echo "setup: installing the enginebench package and its dependencies"
"$PY" -m pip install -q -e lib cmake ninja

# Rust for the native runner: a cargo on PATH that is recent enough, else Debian's current
# toolchain (cargo-web / rustc-web, bookworm's updates).
if ! bash tools/rust_ok.sh; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian's Rust toolchain (cargo-web)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo-web >/dev/null
  fi
  bash tools/rust_ok.sh || { echo "setup: the native runner needs Rust 1.80 or newer (Debian: apt-get install cargo-web)" >&2; exit 1; }
fi

# The engines built from source, side by side: WiredTiger's release the engines run by default
# and the oldest the package registry serves (MongoDB 3.4's), about two minutes each on two cores,
# RocksDB's release build of Debian's source, about five, and LMDB's, with frame pointers, seconds.
# A library is rebuilt when its build script changed since it built it (its flags).
built_by() {  # built_by SCRIPT LIBRARY
  [ -f "$2" ] && [ "$(cat "$(dirname "$2")/built-by.sha256" 2>/dev/null)" = "$(sha256sum "$1" | cut -d' ' -f1)" ]
}
wt_built() { built_by tools/build_wiredtiger.sh "$1/out/libwiredtiger.so"; }
built=()
if ! built_by tools/build_lmdb.sh .build/lmdb/out/liblmdb.a; then
  echo "setup: building LMDB 0.9.24 (Debian's source) with frame pointers (seconds)"
  bash tools/build_lmdb.sh .build/lmdb >/dev/null & built+=($!)
fi
if ! built_by tools/build_rocksdb.sh .build/rocksdb/out/librocksdb.a; then
  echo "setup: building RocksDB 7.8.3 (Debian's source) as a release build (about five minutes)"
  bash tools/build_rocksdb.sh "$PY" .build/rocksdb >/dev/null & built+=($!)
fi
if ! wt_built .build/wiredtiger; then
  echo "setup: building WiredTiger 11.3.1 with snappy and zstd (about two minutes)"
  bash tools/build_wiredtiger.sh "$PY" .build/wiredtiger >/dev/null & built+=($!)
fi
if ! wt_built .build/wiredtiger-2.9.2; then
  echo "setup: building WiredTiger 2.9.2 with snappy and zstd as extensions (about two minutes)"
  WT_VERSION=2.9.2 bash tools/build_wiredtiger.sh "$PY" .build/wiredtiger-2.9.2 >/dev/null & built+=($!)
fi
for pid in "${built[@]}"; do wait "$pid" || { echo "setup: a library's build failed (its log is in .build/)" >&2; exit 1; }; done
echo "setup: building the native runner (lib/native)"
bash tools/build_native.sh

"$PY" -m ipykernel install --sys-prefix --name enginebench --display-name "Python (enginebench)" >/dev/null
echo "setup: done ($ENV_DIR)"
