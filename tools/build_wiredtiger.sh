#!/usr/bin/env bash
# Build WiredTiger's Python binding from its PyPI sdist with the snappy and zstd block
# compressors compiled in (the plain pip build has none, and the posts ran snappy).
# Usage: tools/build_wiredtiger.sh <python> <build-dir>
# Installs the module into <python>'s site-packages as a .pth pointing at the build tree.
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
# cmake, ninja and swig come from PyPI into the same environment.
PATH="$BIN:$PATH" cmake -S src -B out -G Ninja \
  -DENABLE_PYTHON=1 -DENABLE_STRICT=0 \
  -DHAVE_BUILTIN_EXTENSION_SNAPPY=1 -DHAVE_BUILTIN_EXTENSION_ZSTD=1 \
  -DPython3_EXECUTABLE="$PY" -DCMAKE_BUILD_TYPE=RelWithDebInfo >cmake.log 2>&1 \
  || { tail -40 cmake.log; exit 1; }
PATH="$BIN:$PATH" ninja -C out lang/python/all >ninja.log 2>&1 || { tail -40 ninja.log; exit 1; }
echo "$BUILD"
