"""Capped collections on every embedded engine: the byte budget holds, the oldest documents go
first (with their index entries), and the state survives a reopen. WiredTiger and RocksDB delete
from the oldest record on; the mmap stand-in (LMDB) overwrites a preallocated ring in place."""
import bson
import pytest

from enginebench.resources import space
from enginebench.stores import IndexSpec, StoreError
from enginebench.stores.native import NativeStore
from conftest import EMBEDDED

CAP = 20_000
LAPS = 8


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


def test_mmap_ring_is_preallocated_and_overwritten_in_place(tmp_path):
    """On the mmap stand-in the ring holds its whole size from creation (MMAPv1 allocated a capped
    collection's extents up front) and inserts overwrite it in place: after a few laps the
    engine's file no longer grows, the documents fit the size and read back newest, oldest first."""
    cap = 256 << 10
    store = NativeStore("lmdb", tmp_path / "db", {"map_size_gb": 1, "mmap_lock": "collection"})
    try:
        empty = store.stats()["lmdb.last_pgno"]
        store.create_collection("log", capped_bytes=cap)
        stats = store.stats()
        preallocated = (stats["lmdb.last_pgno"] - empty) * stats["lmdb.page_size"]
        assert preallocated >= cap and store.count("log", None) == 0 and store.natural("log") == []
        # Sizes that do not divide the ring: each lap wraps with a slack before its end.
        docs = [{"_id": i, "body": "x" * (100 + (i * 53) % 900)} for i in range(LAPS * cap // 500)]
        pages = []
        for lap in range(LAPS):
            for doc in docs[lap * len(docs) // LAPS:(lap + 1) * len(docs) // LAPS]:
                store.insert_many("log", [doc])
            pages.append(store.stats()["lmdb.last_pgno"])
        # LMDB rewrites B-tree pages copy-on-write and documents fill its pages less densely
        # than 16 KB fillers: the file settles a little above the ring's size within a few laps,
        # then stays there however many more laps are written.
        assert pages[-1] <= pages[LAPS // 2 - 1] * 1.05, pages
        kept = [d["_id"] for d in store.natural("log")]
        assert kept == [d["_id"] for d in docs[-len(kept):]]  # the newest, in insertion order
        assert sum(len(bson.encode(d)) for d in docs[-len(kept):]) <= cap < sum(
            len(bson.encode(d)) for d in docs[-len(kept) - 1:]) + 1000  # full, to within the wrap slack
        assert store.count("log", None) == len(kept)  # overwritten documents left no _id entries
    finally:
        store.close()


def test_a_document_larger_than_the_ring_is_refused(tmp_path):
    """MMAPv1 refused a document larger than the capped collection (error 16328)."""
    store = NativeStore("lmdb", tmp_path / "db", {"map_size_gb": 1})
    try:
        store.create_collection("log", capped_bytes=4096)
        with pytest.raises(StoreError, match="does not fit capped collection"):
            store.insert_many("log", [{"_id": 1, "body": "x" * 5000}])
        assert store.natural("log") == []
    finally:
        store.close()


@pytest.mark.parametrize("data_mb", [10, 100])
def test_the_space_check_counts_the_mmap_oplog_ring_in_full(data_mb):
    """The ring takes its whole 64 MB at creation, however little a load writes into it."""
    system = {"engine": "lmdb", "options": {"oplog": True, "oplog_size_mb": 64}}
    estimate = space.expected_size({"documents": 1, "bytes": data_mb << 20}, system)
    assert estimate["bytes"] == (data_mb + 64) << 20
    assert ("ring" in estimate["how"]) is (data_mb < 64)  # past 64 MB the oplog's copy was counted
