#!/usr/bin/env bash
# Build a WiredTiger release from its PyPI source distribution for the native runner.
# Usage: tools/build_wiredtiger.sh <python> <build-dir>   (WT_VERSION=11.3.1 by default)
# Leaves <build-dir>/out/libwiredtiger.so and <build-dir>/out/include/wiredtiger.h.
#
# 11.x builds with CMake, the snappy and zstd block compressors compiled in (the posts ran
# snappy). The 2.x source distributions (2.9.2 is the oldest the registry serves; MongoDB 3.4
# shipped 2.9) build with autotools, their compressors as extension libraries beside the
# library, which the runner loads (src/engines/wiredtiger.rs compressor_extensions).
set -euo pipefail
PY=${1:?python}; BUILD=${2:?build dir}
# What built the library: tools/setup.sh rebuilds one this script's current text did not build.
SCRIPT_SUM=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)
WT_VERSION=${WT_VERSION:-11.3.1}
BIN=$(dirname "$PY")
mkdir -p "$BUILD"; BUILD=$(cd "$BUILD" && pwd)
if [ ! -d "$BUILD/src" ]; then
  if ! "$PY" -m pip download --no-deps --no-binary :all: -d "$BUILD/sdist" "wiredtiger==$WT_VERSION" >"$BUILD/pip.log" 2>&1; then
    # 2.x: its setup.py refuses Python 3 before pip saves the archive; take it from pip's index.
    "$PY" - "$WT_VERSION" "$BUILD/sdist" <<'PYTHON' || { tail -20 "$BUILD/pip.log"; exit 1; }
import os, re, sys, urllib.parse, urllib.request
from pip._internal.models.index import PyPI
version, folder = sys.argv[1], sys.argv[2]
page = (os.environ.get("PIP_INDEX_URL") or PyPI.simple_url).rstrip("/") + "/wiredtiger/"
html = urllib.request.urlopen(page).read().decode()
name = f"wiredtiger-{version}.tar.gz"
href = next(h for h in re.findall(r'href="([^"]+)"', html) if h.split("#")[0].endswith("/" + name))
os.makedirs(folder, exist_ok=True)
urllib.request.urlretrieve(urllib.parse.urljoin(page, href.split("#")[0]), os.path.join(folder, name))
PYTHON
  fi
  mkdir -p "$BUILD/src"
  tar -xzf "$BUILD"/sdist/wiredtiger-*.tar.gz -C "$BUILD/src" --strip-components=1
fi
cd "$BUILD"
if [ -d src/build_posix ]; then
  (cd src/build_posix && sh reconf) >reconf.log 2>&1 || { tail -40 reconf.log; exit 1; }
  rm -rf posix && mkdir posix && cd posix  # make does not rebuild objects for changed CFLAGS
  # CFLAGS: configure's own optimisation (-O3) without -g (see the note on debug info below),
  # with frame pointers (see below).
  CFLAGS="-O3 -fno-omit-frame-pointer" ../src/configure --prefix="$BUILD/out" --libdir="$BUILD/out" --disable-static --enable-snappy --enable-zstd \
    >../configure.log 2>&1 || { tail -40 ../configure.log; exit 1; }
  make -j"$(nproc)" >../make.log 2>&1 && make install >>../make.log 2>&1 || { tail -40 ../make.log; exit 1; }
  cd "$BUILD"
  rm -rf out/bin out/share out/pkgconfig
else
  # cmake and ninja come from PyPI into the same environment. No debug information (WiredTiger's
  # RelWithDebInfo adds -g3 -ggdb3): the same machine code (the .text sections of the two builds
  # are byte for byte equal with gcc 12), the symbols perf names samples by are kept, and the
  # build takes about a fifth less CPU (140 s against 179 s on this 2-core VM).
  # Frame pointers, as mongod compiles WiredTiger (mongod 3.2's SConstruct adds
  # -fno-omit-frame-pointer to every POSIX build, its third-party WiredTiger included): perf then
  # walks from the C library and the kernel back into WiredTiger, so the engine's share "with the
  # C library and system calls it makes" (metrics/perfshare.py) sees WiredTiger's page reads.
  # Interleaved runs with and without them could not tell their cost from the VM's noise.
  PATH="$BIN:$PATH" cmake -S src -B out -G Ninja \
    -DENABLE_PYTHON=0 -DENABLE_STRICT=0 -DENABLE_STATIC=0 -DENABLE_DEBUG_INFO=0 \
    -DHAVE_BUILTIN_EXTENSION_SNAPPY=1 -DHAVE_BUILTIN_EXTENSION_ZSTD=1 \
    -DCMAKE_C_FLAGS=-fno-omit-frame-pointer -DCMAKE_BUILD_TYPE=RelWithDebInfo >cmake.log 2>&1 \
    || { tail -40 cmake.log; exit 1; }
  PATH="$BIN:$PATH" ninja -C out libwiredtiger.so >ninja.log 2>&1 || { tail -40 ninja.log; exit 1; }
fi
echo "$SCRIPT_SUM" >"$BUILD/out/built-by.sha256"
echo "$BUILD"
