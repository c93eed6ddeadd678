#!/usr/bin/env bash
# Build the RocksDB release Debian ships as a release build, for the native runner to link.
# Usage: tools/build_rocksdb.sh <python> <build-dir>   (ROCKSDB_SOURCE=rocksdb=7.8.3-2 by default)
# Leaves <build-dir>/out/librocksdb.a and <build-dir>/out/include/rocksdb/.
#
# Why not Debian's librocksdb-dev: Debian builds RocksDB with CMake under the build type "None",
# which never defines NDEBUG, so its library runs every assert and test sync point
# (SyncPoint::Process is called on the read path). RocksDB's own release build, the one
# MongoRocks' instructions used (`make static_lib`: DEBUG_LEVEL=0, -O2 -DNDEBUG, frame pointers),
# defines it. Interleaved LinkBench runs at linkbench_cached's default scale, Debian's library
# against this one: 33,401 against 51,888 documents/s loaded, 26,107 against 33,109 requests/s.
#
# The source is Debian's source package of that same release, its patches applied (they touch
# other architectures, tests and the build's reproducibility), fetched by tools/debian_source.sh.
# Flags: Debian's -O2 and compressors (snappy, zlib, bzip2, lz4, zstd, all Debian's shared
# libraries), PORTABLE as Debian builds it, plus -DNDEBUG; RocksDB's CMake adds
# -fno-omit-frame-pointer for any build type but Debug, as its Makefile does for a release.
# No gflags (only RocksDB's tools use them) and none of its tools or tests.
#
# A unity build (CMake compiles the sources eight to a unit): RocksDB's own Makefile keeps its
# library buildable as one translation unit (its `unity` target, which its CI compiles), so the
# batches are safe, and they cut the build from 791 CPU-seconds (399 s) to 337 (171 s) on this
# machine kind (under three minutes on two cores), most of `make setup`'s time before. The flags
# are the same; the compiler sees eight files at once, so it may inline across them. The batches
# include their sources by paths relative to src/ (UNITY_BUILD_RELOCATABLE, CMake 3.32 or newer:
# the registry's), not by this clone's absolute paths, so another clone's compiles of them hit the
# compiler cache (tools/compiler_cache.sh): 51 of 52 (the batch with build_version.cc, which
# carries its build's time, compiles again), 6.7 s against 3 min 55 s.
set -euo pipefail
PY=${1:?python}; BUILD=${2:?build dir}
SCRIPT_SUM=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)
SOURCE=${ROCKSDB_SOURCE:-rocksdb=7.8.3-2}
BIN=$(dirname "$PY")
mkdir -p "$BUILD"; BUILD=$(cd "$BUILD" && pwd)

if [ ! -f "$BUILD/src/CMakeLists.txt" ]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/debian_source.sh" "$SOURCE" "$BUILD/src"
fi

cd "$BUILD"
rm -rf cmake  # a changed flag must reach every object
PATH="$BIN:$PATH" cmake -S src -B cmake -G Ninja \
  -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="-O2 -DNDEBUG" -DCMAKE_CXX_FLAGS="-O2 -DNDEBUG" \
  -DPORTABLE=ON -DFAIL_ON_WARNINGS=OFF -DWITH_GFLAGS=OFF \
  -DWITH_SNAPPY=ON -DWITH_ZLIB=ON -DWITH_BZ2=ON -DWITH_LZ4=ON -DWITH_ZSTD=ON \
  -DWITH_TESTS=OFF -DWITH_ALL_TESTS=OFF -DWITH_TOOLS=OFF -DWITH_CORE_TOOLS=OFF \
  -DWITH_BENCHMARK_TOOLS=OFF -DROCKSDB_BUILD_SHARED=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_RELOCATABLE=ON \
  >cmake.log 2>&1 || { tail -40 cmake.log; exit 1; }
PATH="$BIN:$PATH" ninja -C cmake rocksdb >ninja.log 2>&1 || { tail -40 ninja.log; exit 1; }
rm -rf out && mkdir -p out
cp cmake/librocksdb.a out/
cp -r src/include out/include
echo "Debian source $SOURCE, release build (-O2 -DNDEBUG, frame pointers, unity batches of 8)" >out/build-info
echo "$SCRIPT_SUM" >out/built-by.sha256
echo "$BUILD"
