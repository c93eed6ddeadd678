#!/usr/bin/env bash
# Build WiredTiger as one of the posts' MongoDB releases shipped it, for the native runner.
# Usage: tools/build_wiredtiger_tag.sh <release> <build-dir>   (a release of tools/wiredtiger.sources)
# Leaves <build-dir>/out/: libwiredtiger.so, libwiredtiger_snappy.so (these releases build their
# compressors as extensions, which the runner loads: src/engines/wiredtiger.rs), include/wiredtiger.h,
# `release` (the tag: build.rs names the shim by it, since two tags can carry one WiredTiger
# version) and build-info.
#
# The source is the tag's tree (tools/vendor_source.sh: a local archive with its sha256 checked,
# or the public repository at the tag). The build is the tree's own autotools build of the
# library and the snappy extension only (the `wt` utility and the tests are not needed: about
# 30 CPU-seconds a tree on the 2-core VM), configure's -O3 with frame pointers, as mongod built its
# WiredTiger (tools/build_wiredtiger.sh says why), and one change of ours:
#  - gcc 12 refuses an alignment attribute written before `struct` in a typedef of an anonymous
#    struct ("size of array element is not a multiple of its alignment"); the 2.5 and 2.6 trees
#    write WT_SPINLOCK (mutex.h) and WT_LOGSLOT (log.h) that way. Moved after `struct`, the
#    attribute pads the struct to a cache line as those releases meant (later releases moved it
#    there themselves). Trees without the construct are left as they are.
set -euo pipefail
RELEASE=${1:?release}; BUILD=${2:?build dir}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCRIPT_SUM=$(cat "${BASH_SOURCE[0]}" "$HERE/wiredtiger.sources" | sha256sum | cut -d' ' -f1)
mkdir -p "$BUILD"; BUILD=$(cd "$BUILD" && pwd)

origin=$(bash "$HERE/vendor_source.sh" "$HERE/wiredtiger.sources" "$RELEASE" "$BUILD/src")
sed -i 's/^typedef WT_COMPILER_TYPE_ALIGN(WT_CACHE_LINE_ALIGNMENT) struct {$/typedef struct WT_COMPILER_TYPE_ALIGN(WT_CACHE_LINE_ALIGNMENT) {/' \
  "$BUILD/src/src/include/mutex.h" "$BUILD/src/src/include/log.h"

(cd "$BUILD/src/build_posix" && sh reconf) >"$BUILD/reconf.log" 2>&1 || { tail -30 "$BUILD/reconf.log"; exit 1; }
rm -rf "$BUILD/posix" && mkdir "$BUILD/posix"
(cd "$BUILD/posix" && CFLAGS="-O3 -fno-omit-frame-pointer" ../src/configure --disable-static --enable-snappy) \
  >"$BUILD/configure.log" 2>&1 || { tail -30 "$BUILD/configure.log"; exit 1; }
{ make -C "$BUILD/posix" -j"$(nproc)" libwiredtiger.la && make -C "$BUILD/posix/ext/compressors/snappy"; } \
  >"$BUILD/make.log" 2>&1 || { grep -E "error|Error" "$BUILD/make.log" | tail -30; exit 1; }

rm -rf "$BUILD/out" && mkdir -p "$BUILD/out/include"
version=$(sed -n 's/^#define[[:space:]]*WIREDTIGER_VERSION_STRING[[:space:]]*"\(.*\)"/\1/p' "$BUILD/posix/wiredtiger.h")
cp "$BUILD/posix/wiredtiger.h" "$BUILD/out/include/"
# The library under its soname (what a shim linked with -lwiredtiger asks for), and the link name.
soname=$(basename "$(readlink -f "$BUILD/posix/.libs/libwiredtiger.so")")
cp "$BUILD/posix/.libs/$soname" "$BUILD/out/" && ln -s "$soname" "$BUILD/out/libwiredtiger.so"
cp -L "$BUILD/posix/ext/compressors/snappy/.libs/libwiredtiger_snappy.so" "$BUILD/out/"
printf '%s (tag %s) from %s, autotools, CFLAGS -O3 -fno-omit-frame-pointer, snappy as an extension\n' \
  "$version" "$RELEASE" "$origin" >"$BUILD/out/build-info"
echo "$RELEASE" >"$BUILD/out/release"
echo "$SCRIPT_SUM" >"$BUILD/out/built-by.sha256"
echo "$BUILD"
