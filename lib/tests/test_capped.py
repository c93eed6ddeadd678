"""Capped collections on every embedded engine: the byte budget holds, the oldest documents go
first (with their index entries), and the state survives a reopen. WiredTiger and RocksDB delete
from the oldest record on; the mmap stand-in (LMDB) overwrites a preallocated ring in place."""
import bson
import pytest

from enginebench.stores import IndexSpec, StoreError
from enginebench.stores.native import NativeStore
from conftest import EMBEDDED

CAP = 20_000


def _doc(i):
    return {"_id": i, "user": i % 7, "body": "x" * 180}


@pytest.mark.parametrize("engine,options", [(e, o) for _, e, o in EMBEDDED], ids=[i for i, _, _ in EMBEDDED])
def test_capped_keeps_newest_within_budget(tmp_path, engine, options):
    store = NativeStore(engine, tmp_path / "db", options)
    try:
        store.create_collection("log", capped_bytes=CAP)
        store.create_index("log", IndexSpec("user", (("user", 1),)))
        # _ids inserted out of order: the cap follows insertion order, not _id order.
        order = [(i * 37) % 500 for i in range(500)]
        for i in order:
            store.insert_many("log", [_doc(i)])
        size = len(bson.encode(_doc(0)))
        kept = {k[0] for k in store.iter_index("log", None)}
        assert kept == set(order[-(CAP // size):])
        assert store.count("log", "user") == len(kept)  # deleted documents left no index entries
        assert [d["_id"] for d in store.natural("log")] == order[-(CAP // size):]  # oldest first
        with pytest.raises(StoreError, match="capped"):
            store.delete("log", None, (order[-1],))
    finally:
        store.close()
    reopened = NativeStore(engine, tmp_path / "db", options)
    try:
        reopened.insert_many("log", [_doc(1000)])
        kept_after = {k[0] for k in reopened.iter_index("log", None)}
        assert 1000 in kept_after and order[-(CAP // size)] not in kept_after
        assert len(kept_after) == len(kept)
    finally:
        reopened.close()


def test_mmap_ring_overwrites_in_place(tmp_path):
    """On the mmap stand-in a full ring reuses the oldest document's slot: the record key space
    stays that of the ring (MMAPv1's preallocated extents), nothing grows."""
    store = NativeStore("lmdb", tmp_path / "db", {"map_size_gb": 1})
    try:
        store.create_collection("log", capped_bytes=CAP)
        for i in range(2000):
            store.insert_many("log", [_doc(i)])
        pages_before = store.stats()["lmdb.last_pgno"]
        for i in range(2000, 6000):
            store.insert_many("log", [_doc(i)])
        assert store.stats()["lmdb.last_pgno"] <= pages_before + 2
        assert store.count("log", None) == CAP // len(bson.encode(_doc(0)))
    finally:
        store.close()
