"""The engine libraries the native runner links are the builds setup makes from Debian's sources.

RocksDB is a release build, as MongoRocks' was (tools/build_rocksdb.sh): Debian's librocksdb
defines no NDEBUG; linked in its place, the runner would carry RocksDB's test sync points (called
on the read path) and asserts, and measure RocksDB 1.3-1.5x slower (docs/running.md). LMDB is
linked statically from tools/build_lmdb.sh's build with frame pointers, so profiles name its
functions and follow its system calls back to it."""
import shutil
import subprocess

import pytest

from enginebench.paths import native_runner


def _symbols() -> str:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, "-C", str(native_runner())], capture_output=True, text=True, timeout=120, check=True)
    return out.stdout


def test_the_linked_rocksdb_has_no_test_sync_points():
    symbols = _symbols()
    assert "rocksdb::DBImpl::Get" in symbols, "RocksDB is not linked into the runner: the check below would prove nothing"
    # TEST_SYNC_POINT compiles to SyncPoint::Process calls unless NDEBUG is defined (test_util/sync_point.h).
    assert "rocksdb::SyncPoint" not in symbols



def test_lmdb_is_linked_from_its_frame_pointer_build_not_debian_s_library():
    symbols = _symbols()
    # Static functions of mdb.c are in the runner only when LMDB is compiled into it; Debian's
    # shared library is stripped of them.
    assert " t mdb_page_search" in symbols or " t mdb_page_search_root" in symbols
    ldd = shutil.which("ldd")
    if ldd:
        linked = subprocess.run([ldd, str(native_runner())], capture_output=True, text=True, timeout=60).stdout
        assert "liblmdb" not in linked
