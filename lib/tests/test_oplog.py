"""The op1 setups: every write also appends to a capped oplog in the same transaction, trimmed
from its front (in the background on WiredTiger and RocksDB, as mongod 3.2 and MongoRocks did;
a ring on the mmap stand-in)."""
import time

import bson
import pytest

from enginebench.stores.native import NativeStore
from conftest import EMBEDDED


@pytest.mark.parametrize("engine,options", [(e, o) for _, e, o in EMBEDDED], ids=[i for i, _, _ in EMBEDDED])
def test_writes_are_logged_in_order(tmp_path, engine, options):
    store = NativeStore(engine, tmp_path / "db", {**options, "oplog": True, "oplog_size_mb": 1})
    try:
        store.create_collection("c")
        store.insert_many("c", [{"_id": 1, "v": "a"}, {"_id": 2, "v": "b"}])
        store.update("c", None, (1,), set={"v": "z"})
        store.delete("c", None, (2,))
        entries = store.natural("oplog.rs")
        assert [(e["op"], e["ns"]) for e in entries] == [("i", "enginebench.c"), ("i", "enginebench.c"),
                                                         ("u", "enginebench.c"), ("d", "enginebench.c")]
        assert entries[0]["o"] == {"_id": 1, "v": "a"} and entries[2]["o"]["$set"] == {"v": "z"}
        assert entries[2]["o2"] == {"_id": 1}
        # Past the 1 MB cap the oldest entries go, as from a capped collection.
        for i in range(3, 3000):
            store.insert_many("c", [{"_id": i, "v": "x" * 500}])
        deadline = time.time() + 10  # the trimmer wakes at least once a second
        while True:
            kept = store.natural("oplog.rs")
            size = sum(len(bson.encode(e)) for e in kept)
            if size <= (1 << 20) * 1.05 or time.time() > deadline:
                break
            time.sleep(0.2)
        assert size <= (1 << 20) * 1.05 and kept[-1]["o"]["_id"] == 2999 and kept[0]["o"]["_id"] > 3
    finally:
        store.close()
