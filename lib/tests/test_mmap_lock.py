"""The mmap stand-in's emulated MMAPv1 lock, seen from a client of the native store: a transaction
open on one session holds readers of its database back under the database and collection locks
(a transaction may span collections, so it locks its database), and under none they read beside
it as LMDB lets them. Each call's own lock, per granularity, is tested in the runner
(lib/native/src/layouts/mongod_kv/lock.rs)."""
import threading
from types import SimpleNamespace

import pytest

from enginebench.report.mmap import mmap_lock_lines
from enginebench.stores.native import NativeStore

WAIT_S = 0.5


def _reader_waits(store) -> bool:
    """Whether a read of another collection waits while a transaction is open on `a`."""
    inside, release = threading.Event(), threading.Event()

    def open_transaction():
        def body():
            store.insert_many("a", [{"_id": 2}])
            inside.set()
            release.wait(10)
        store.run_in_transaction(body)

    writer = threading.Thread(target=open_transaction)
    writer.start()
    assert inside.wait(10)
    read = threading.Event()
    reader = threading.Thread(target=lambda: store.get("b", None, (1,)) and read.set())
    reader.start()
    waited = not read.wait(WAIT_S)
    release.set()
    writer.join(10)
    reader.join(10)
    assert read.is_set()  # once the transaction ended, the reader got through
    return waited


@pytest.mark.parametrize("mode,waits", [("database", True), ("collection", True), ("none", False)])
def test_an_open_transaction_holds_readers_back_only_under_an_emulated_lock(tmp_path, mode, waits):
    store = NativeStore("lmdb", tmp_path / "db", {"map_size_gb": 1, "mmap_lock": mode})
    try:
        for name in ("a", "b"):
            store.create_collection(name)
            store.insert_many(name, [{"_id": 1}])
        assert _reader_waits(store) is waits
        assert store.info().config["emulated_lock"] == mode  # what the manifest records
        assert store.get("a", None, (2,))["_id"] == 2
    finally:
        store.close()


def test_the_report_says_the_lock_is_emulated_and_which_ran(tmp_path):
    configs = {}
    for mode in ("database", "none"):
        store = NativeStore("lmdb", tmp_path / mode, {"map_size_gb": 1, "mmap_lock": mode})
        configs[mode] = store.info().config  # what the runner records in the manifest
        store.close()
    run = SimpleNamespace(systems=[
        {"label": "lmdb.a", "engine": "lmdb", "status": "complete", "engine_config": configs["database"]},
        {"label": "lmdb.b", "engine": "lmdb", "status": "failed", "engine_config": configs["none"]},
        {"label": "wt", "engine": "wiredtiger", "status": "complete", "engine_config": {}},
        # Under TARGET=mongod the lmdb role ran a real MMAPv1 server: nothing was emulated.
        {"label": "mmapv1", "engine": "lmdb", "status": "complete", "engine_config": {"server_process": "mongod"}},
    ])
    lines = mmap_lock_lines(run)
    assert len(lines) == 2
    assert "(lmdb.a): database, one reader-writer lock per database" in lines[0] and "emulated" in lines[0]
    assert "(lmdb.b): none, no lock" in lines[1]
    assert not any("mmapv1" in line or "wt" in line for line in lines)
