#!/usr/bin/env bash
# Build one PerconaFT release's two libraries for the native runner's fractal engine.
# Usage: tools/build_perconaft.sh <release> <build-dir>   (a release of tools/perconaft.sources)
# Leaves <build-dir>/out/: libtokufractaltree_static.a, libtokuportability_static.a, include/ (the
# release's generated db.h and what it includes) and build-info. build.rs links each release into a
# shim of its own (shim/ft_shim.c), so several releases live in one runner as WiredTiger's do.
#
# The source is the release tag's tree (tools/vendor_source.sh: a local archive with its sha256
# checked, or the public repository at the tag), with the project's patches in
# tools/patches/fractal (each says why). The build is the servers' own CMake build of just the two
# libraries, with these differences, all from the command line:
#  - a build type of our own ("Runner"): the Release type hard-codes -flto and -g, and LTO would
#    move the code generation into every link of the shim (about 20 CPU-s each) and drop the frame
#    pointers; -O3 as Release, and -fno-omit-frame-pointer, so perf can follow the engine's calls
#    (mongod compiled its engines with frame pointers; TokuMX's own build did not);
#  - -Wno-error: gcc 12 warns where the compilers of 2013-2015 did not (-Werror is hard-coded);
#  - TOKU_DEBUG_PARANOID off, as TokuMX's and TokuMXse's release builds set it;
#  - pthread_yield declared present: glibc 2.34 keeps it only as sched_yield's alias, which its
#    header still maps the call to, but CMake's link test no longer finds it.
# Debian's cmake (package cmake): the 4.x the package registry serves refuses these releases'
# cmake_minimum_required. About 35 CPU-seconds per release on the 2-core VM.
set -euo pipefail
RELEASE=${1:?release}; BUILD=${2:?build dir}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCRIPT_SUM=$(cat "${BASH_SOURCE[0]}" "$HERE"/patches/fractal/*.patch "$HERE/perconaft.sources" | sha256sum | cut -d' ' -f1)
CMAKE=/usr/bin/cmake
[ -x "$CMAKE" ] || { echo "build_perconaft: Debian's cmake is missing (apt-get install cmake)" >&2; exit 1; }
mkdir -p "$BUILD"; BUILD=$(cd "$BUILD" && pwd)

origin=$(bash "$HERE/vendor_source.sh" "$HERE/perconaft.sources" "$RELEASE" "$BUILD/src")
for patch in "$HERE"/patches/fractal/0001-*.patch; do patch -d "$BUILD/src" -p1 --quiet --fuzz=0 <"$patch"; done
case "$RELEASE" in
  tokumx-1.*) patch -d "$BUILD/src" -p1 --quiet --fuzz=0 <"$HERE/patches/fractal/0002-os-malloc-no-jemalloc-header.patch" ;;
esac

FLAGS="-O3 -fno-omit-frame-pointer -Wno-error -w"
rm -rf "$BUILD/cmake"
"$CMAKE" -S "$BUILD/src" -B "$BUILD/cmake" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Runner \
  -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" -DBUILD_TESTING=OFF -DUSE_VALGRIND=OFF -DUSE_BDB=OFF \
  -DTOKU_DEBUG_PARANOID=OFF -DHAVE_PTHREAD_YIELD=1 -DPTHREAD_YIELD_RETURNS_INT=1 >"$BUILD/cmake.log" 2>&1 \
  || { tail -30 "$BUILD/cmake.log"; exit 1; }
make -C "$BUILD/cmake" -j"$(nproc)" tokufractaltree_static tokuportability_static >"$BUILD/make.log" 2>&1 \
  || { grep -E "error|Error" "$BUILD/make.log" | tail -30; exit 1; }

rm -rf "$BUILD/out" && mkdir -p "$BUILD/out/include"
cp "$BUILD/cmake/src/libtokufractaltree_static.a" "$BUILD/cmake/portability/libtokuportability_static.a" "$BUILD/out/"
cp "$BUILD/cmake/buildheader/db.h" "$BUILD/out/include/"
# The 1.x db.h includes two headers of the source tree.
for header in include/tdb-internal.h toku_include/toku_list.h; do
  [ -f "$BUILD/src/$header" ] && cp "$BUILD/src/$header" "$BUILD/out/include/"
done
printf 'PerconaFT %s from %s, patches %s, CMake build type Runner (%s)\n' "$RELEASE" "$origin" \
  "$(cd "$HERE/patches/fractal" && ls *.patch | tr '\n' ' ' | sed 's/ $//')" "$FLAGS" >"$BUILD/out/build-info"
echo "$RELEASE" >"$BUILD/out/release"
echo "$SCRIPT_SUM" >"$BUILD/out/built-by.sha256"
echo "$BUILD"
