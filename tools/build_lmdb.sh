#!/usr/bin/env bash
# Build LMDB, the release Debian ships, from Debian's source with frame pointers, for the native
# runner to link statically.
# Usage: tools/build_lmdb.sh <build-dir>   (LMDB_SOURCE=lmdb=0.9.24-1 by default)
# Leaves <build-dir>/out/liblmdb.a, lmdb.h and build-info.
#
# Why not Debian's liblmdb: the library is the same, but Debian's is stripped and built without
# frame pointers, so a profile of an LMDB run names none of its functions and cannot follow a
# system call or a memcmp back to LMDB: `make bench` then charged LMDB's own commits (pwrite)
# and key comparisons to nobody. This build is Debian's: its source package (tools/debian_source.sh),
# its Makefile and compiler flags (dpkg-buildflags, hardening=+all, as debian/rules sets them;
# -fPIC as its shared library's objects), plus -fno-omit-frame-pointer. A few seconds.
set -euo pipefail
BUILD=${1:?build dir}
SCRIPT_SUM=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)
SOURCE=${LMDB_SOURCE:-lmdb=0.9.24-1}
mkdir -p "$BUILD"; BUILD=$(cd "$BUILD" && pwd)

if [ ! -f "$BUILD/src/libraries/liblmdb/mdb.c" ]; then
  bash "$(dirname "${BASH_SOURCE[0]}")/debian_source.sh" "$SOURCE" "$BUILD/src"
fi

cd "$BUILD/src/libraries/liblmdb"
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
CFLAGS_DEBIAN=$(dpkg-buildflags --get CFLAGS)
CPPFLAGS_DEBIAN=$(dpkg-buildflags --get CPPFLAGS)
make clean >/dev/null
make liblmdb.a XCFLAGS="$CFLAGS_DEBIAN -fPIC -fno-omit-frame-pointer" CPPFLAGS="$CPPFLAGS_DEBIAN" \
  >"$BUILD/make.log" 2>&1 || { tail -40 "$BUILD/make.log"; exit 1; }
rm -rf "$BUILD/out" && mkdir -p "$BUILD/out"
cp liblmdb.a lmdb.h "$BUILD/out/"
echo "Debian source $SOURCE, Debian's flags with frame pointers" >"$BUILD/out/build-info"
echo "$SCRIPT_SUM" >"$BUILD/out/built-by.sha256"
echo "$BUILD"
