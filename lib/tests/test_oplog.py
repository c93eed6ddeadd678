"""The op1 setups: every write also appends to a capped oplog, trimmed from its front."""
import bson
import pytest

from enginebench.stores import open_embedded
from conftest import EMBEDDED


def oplog_entries(store):
    txn = store.engine.begin(write=False)
    try:
        return [bson.decode(v) for _, v in txn.scan(store._oplog_table, b"", None)]
    finally:
        store.engine.abort(txn)


@pytest.mark.parametrize("engine,options", [(e, o) for _, e, o in EMBEDDED], ids=[i for i, _, _ in EMBEDDED])
def test_writes_are_logged_in_order(tmp_path, engine, options):
    store = open_embedded(engine, tmp_path / "db", {**options, "oplog": True, "oplog_size_mb": 1})
    try:
        store.create_collection("c")
        store.insert_many("c", [{"_id": 1, "v": "a"}, {"_id": 2, "v": "b"}])
        store.update("c", None, (1,), set={"v": "z"})
        store.delete("c", None, (2,))
        entries = oplog_entries(store)
        assert [(e["op"], e["ns"]) for e in entries] == [("i", "c"), ("i", "c"), ("u", "c"), ("d", "c")]
        assert entries[0]["o"] == {"_id": 1, "v": "a"} and entries[2]["o"]["$set"] == {"v": "z"}
        # Past the 1 MB cap the oldest entries go, as from a capped collection.
        for i in range(3, 3000):
            store.insert_many("c", [{"_id": i, "v": "x" * 500}])
        kept = oplog_entries(store)
        size = sum(len(bson.encode(e)) for e in kept)
        assert size <= (1 << 20) * 1.05 and kept[-1]["o"]["_id"] == 2999 and kept[0]["o"]["_id"] > 3
    finally:
        store.close()
