"""The RocksDB the native runner links is a release build, as MongoRocks' was (tools/build_rocksdb.sh).

Debian's librocksdb defines no NDEBUG: linked in its place, the runner would carry RocksDB's test
sync points (called on the read path) and asserts, and measure RocksDB 1.3-1.5x slower
(docs/running.md)."""
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

