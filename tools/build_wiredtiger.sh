#!/usr/bin/env bash
# Build the WiredTiger library (release 11.3.1) from its PyPI source distribution, with the
# snappy and zstd block compressors compiled in (the posts ran snappy), for the native runner.
# Usage: tools/build_wiredtiger.sh <python> <build-dir>
# Leaves <build-dir>/out/libwiredtiger.so and <build-dir>/out/include/wiredtiger.h.
set -euo pipefail
PY=${1:?python}; BUILD=${2:?build dir}
WT_VERSION=${WT_VERSION:-11.3.1}
BIN=$(dirname "$PY")
mkdir -p "$BUILD"; BUILD=$(cd "$BUILD" && pwd)
if [ ! -d "$BUILD/src" ]; then
  "$PY" -m pip download --no-deps --no-binary :all: -d "$BUILD/sdist" "wiredtiger==$WT_VERSION" >/dev/null
  mkdir -p "$BUILD/src"
  tar -xzf "$BUILD"/sdist/wiredtiger-*.tar.gz -C "$BUILD/src" --strip-components=1
fi
cd "$BUILD"
# cmake and ninja come from PyPI into the same environment.
PATH="$BIN:$PATH" cmake -S src -B out -G Ninja \
  -DENABLE_PYTHON=0 -DENABLE_STRICT=0 -DENABLE_STATIC=0 \
  -DHAVE_BUILTIN_EXTENSION_SNAPPY=1 -DHAVE_BUILTIN_EXTENSION_ZSTD=1 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >cmake.log 2>&1 \
  || { tail -40 cmake.log; exit 1; }
PATH="$BIN:$PATH" ninja -C out libwiredtiger.so >ninja.log 2>&1 || { tail -40 ninja.log; exit 1; }
echo "$BUILD"
