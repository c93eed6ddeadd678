"""The embedded engines and every server executor (the Rust driver and the legacy pymongo 3
executor, against the stand-in servers and a mongod when one is available) must answer a long
random sequence of Store calls identically; a few explicit checks pin the semantics themselves."""
import random
import socket
import subprocess
import sys
import time

import pytest
from bson import ObjectId

from enginebench.stores import DuplicateKey, IndexSpec, open_embedded
from conftest import EMBEDDED, NO_MONGOD, mongod_binary

LINK_PK = IndexSpec("link_pk", (("link_type", 1), ("id1", 1), ("id2", 1)), unique=True)
LINK_LIST = IndexSpec("id1_type", (("id1", 1), ("link_type", 1), ("visibility", 1), ("time", 1), ("id2", 1)))
COUNT_PK = IndexSpec("count_pk", (("id", 1), ("link_type", 1)), unique=True)


def _normalise(value):
    """Store-generated ObjectIds differ between systems; everything else must match."""
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in sorted(value.items()) if not isinstance(v, ObjectId)}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    return value


def run_sequence(store, n_ops=1500, seed=11):
    rng = random.Random(seed)
    store.create_collection("link")
    store.create_collection("count")
    store.create_index("link", LINK_PK)
    store.create_index("link", LINK_LIST)
    store.create_index("count", COUNT_PK)
    out = []
    next_oid = iter(ObjectId(f"{i:024x}") for i in range(1, 10**6))
    docs = [{"_id": next(next_oid), "link_type": t, "id1": i, "id2": i + j, "visibility": 1,
             "time": rng.randint(0, 50), "data": bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 5)))}
            for i in range(1, 40) for t in (1, 2) for j in range(rng.randint(0, 4))]
    out.append(("insert", store.insert_many("link", docs)))
    for _ in range(n_ops):
        op = rng.random()
        id1, t = rng.randint(1, 45), rng.choice((1, 2))
        id2 = id1 + rng.randint(0, 5)
        if op < 0.15:
            res = store.update("link", "link_pk", (t, id1, id2), set={"visibility": rng.choice((0, 1)),
                               "time": rng.randint(0, 60)}, set_on_insert={"_id": next(next_oid), "data": b"n"},
                               upsert=True, return_before=True)
            out.append(("upsert", res.matched, res.upserted, _normalise(res.before)))
        elif op < 0.25:
            res = store.update("count", "count_pk", (id1, t), inc={"count": rng.choice((1, -1)), "version": 1},
                               set={"time": rng.randint(0, 9)}, upsert=True)
            out.append(("count+", res.matched, res.upserted))
        elif op < 0.3:
            out.append(("delete", store.delete("link", "link_pk", (t, id1, id2),
                                             where=rng.choice(({"visibility": 0}, None)))))
        elif op < 0.45:
            out.append(("get", _normalise(store.get("link", "link_pk", (t, id1, id2)))))
        elif op < 0.5:
            out.append(("get_many", _normalise(store.get_many("link", "link_pk", (t, id1),
                                                              [rng.randint(1, 50) for _ in range(4)]))))
        elif op < 0.8:
            low, high = sorted((rng.randint(0, 60), rng.randint(0, 60)))
            out.append(("scan", _normalise(store.scan(
                "link", "id1_type", (id1, t, 1), low=rng.choice((None, low)), high=rng.choice((None, high)),
                reverse=rng.random() < 0.5, skip=rng.choice((0, 1)), limit=rng.choice((None, 3))))))
        elif op < 0.9:
            out.append(("count", store.count("link", "id1_type", (id1, t, 1), limit=rng.choice((None, 2)))))
        elif op < 0.95:
            def move(a=id1, b=t):
                found = store.get("count", "count_pk", (a, b))
                store.update("count", "count_pk", (a, b), set={"count": (found or {}).get("count", 0) + 10},
                             upsert=True)
                return found is not None
            out.append(("txn", store.run_in_transaction(move)))
        else:
            try:
                store.insert_many("link", [{"_id": next(next_oid), "link_type": t, "id1": id1, "id2": id2,
                                            "visibility": 1, "time": 1, "data": b""}])
                out.append(("insert1", True))
            except DuplicateKey:
                out.append(("insert1", "dup"))
    out.append(("pk", list(store.iter_index("link", "link_pk"))))
    out.append(("list", list(store.iter_index("link", "id1_type"))))
    out.append(("counts", _normalise(store.scan("count", "count_pk"))))
    return out


@pytest.fixture(scope="module")
def reference_results(tmp_path_factory):
    _, engine, options = EMBEDDED[0]
    store = open_embedded(engine, tmp_path_factory.mktemp("ref") / "db", options)  # the native WiredTiger
    try:
        return run_sequence(store)
    finally:
        store.close()


def test_embedded_engines_agree(embedded_store, reference_results):
    results = run_sequence(embedded_store)
    assert len(results) == len(reference_results)
    for i, (got, want) in enumerate(zip(results, reference_results)):
        assert got == want, f"call {i} differs: {got!r} != {want!r}"


def test_sequence_exercises_every_outcome(reference_results):
    kinds = {(r[0], r[1] if r[0] in ("upsert", "delete", "insert1", "txn") else None) for r in reference_results}
    for expected in [("upsert", True), ("upsert", False), ("delete", True), ("delete", False),
                     ("insert1", "dup"), ("insert1", True), ("txn", True), ("txn", False)]:
        assert expected in kinds, f"the sequence never produced {expected}"


def test_semantics(embedded_store):
    s = embedded_store
    s.create_collection("c")
    s.create_index("c", IndexSpec("ab", (("a", 1), ("b", 1))))
    s.insert_many("c", [{"_id": i, "a": i % 3, "b": i} for i in range(10)])
    assert [d["_id"] for d in s.scan("c", "ab", (1,))] == [1, 4, 7]
    assert [d["_id"] for d in s.scan("c", "ab", (1,), reverse=True, limit=2)] == [7, 4]
    assert [d["_id"] for d in s.scan("c", "ab", (2,), low=3, high=8)] == [5, 8]
    assert s.count("c", None) == 10
    res = s.update("c", None, (4,), set={"a": 2}, inc={"n": 5}, return_before=True)
    assert res.matched and res.before["a"] == 1
    assert [d["_id"] for d in s.scan("c", "ab", (2,))] == [2, 4, 5, 8]
    assert s.get("c", None, (4,))["n"] == 5
    assert s.delete("c", None, (4,), where={"a": 0}) is False
    assert s.delete("c", None, (4,)) is True
    assert s.get("c", None, (4,)) is None
    with pytest.raises(DuplicateKey):
        s.insert_many("c", [{"_id": 5, "a": 0, "b": 0}])


@pytest.fixture(scope="module")
def mongod_uri(tmp_path_factory):
    binary = mongod_binary()
    if binary is None:
        pytest.skip(NO_MONGOD)
    dbpath = tmp_path_factory.mktemp("mongod")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([binary, "--dbpath", str(dbpath), "--bind_ip", "127.0.0.1", "--port", str(port),
                             "--replSet", "rs0", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import pymongo
    client = pymongo.MongoClient(f"mongodb://127.0.0.1:{port}/?directConnection=true")
    deadline = time.time() + 30
    while True:
        try:
            client.admin.command("replSetInitiate", {"_id": "rs0", "members": [{"_id": 0, "host": f"127.0.0.1:{port}"}]})
            break
        except Exception:
            if time.time() > deadline:
                proc.kill()
                raise
            time.sleep(0.5)
    while not client.admin.command("hello").get("isWritablePrimary"):
        time.sleep(0.2)
    client.close()
    yield f"mongodb://127.0.0.1:{port}/?directConnection=true"
    proc.terminate()
    proc.wait(30)


def _server_store(uri: str, executor: str, old_server: bool = False):
    """The runner's Store over a server, through one of its executors (enginebench-runner serve);
    the companion speaks pymongo 3 to a server older than 4.4 (`old_server`), 4 to the others."""
    from enginebench.mongod.legacy import legacy_python
    from enginebench.stores.native import NativeStore
    companion = str(legacy_python()) if old_server else sys.executable
    spec = {"uri": uri, "database": "equivalence", "executor": executor, "drop_database": True,
            "companion": [companion, "-m", "enginebench.mongod.companion"],
            "legacy": [str(legacy_python()), "-m", "enginebench.mongod.legacy_executor"]}
    return NativeStore("server", None, {}, server=spec)


@pytest.mark.parametrize("executor", ["legacy", "driver"])
def test_the_standin_through_each_executor_agrees(standin_uri, executor, reference_results):
    store = _server_store(standin_uri, executor, old_server=True)  # it announces wire version 8
    try:
        assert run_sequence(store) == reference_results
    finally:
        store.close()


def test_ferretdb_through_the_driver_agrees(ferretdb_uri, reference_results):
    store = _server_store(ferretdb_uri, "driver")
    try:
        assert run_sequence(store) == reference_results
    finally:
        store.close()


def test_mongod_through_the_driver_agrees(mongod_uri, reference_results):
    store = _server_store(mongod_uri, "driver")
    try:
        assert run_sequence(store) == reference_results
    finally:
        store.close()


def test_tuple_bounds_and_covered_scans(embedded_store):
    """iibench's "seek to a tuple in a composite index and scan forward", and index-only reads."""
    s = embedded_store
    s.create_collection("p")
    s.create_index("p", IndexSpec("pc", (("price", 1), ("customer", 1))))
    docs = [{"_id": i, "price": float(i % 7), "customer": i, "pad": "x" * 10} for i in range(50)]
    s.insert_many("p", docs)
    rows = s.scan("p", "pc", low=(3.0, 20), limit=4, fields=("price", "customer"))
    expected = sorted((d["price"], d["customer"]) for d in docs if (d["price"], d["customer"]) >= (3.0, 20))[:4]
    assert [(r["price"], r["customer"]) for r in rows] == expected
    assert all(set(r) == {"price", "customer"} for r in rows)
    upper = s.scan("p", "pc", high=(1.0, 15))
    assert [d["_id"] for d in upper] == [d["_id"] for d in sorted(docs, key=lambda d: (d["price"], d["customer"]))
                                         if (d["price"], d["customer"]) <= (1.0, 15)]
    assert s.scan("p", "pc", low=(3.0, 20), limit=1, fields=("pad",))[0] == {"pad": "x" * 10}


@pytest.mark.parametrize("engine,options", [(e, o) for _, e, o in EMBEDDED], ids=[i for i, _, _ in EMBEDDED])
def test_a_reopened_store_keeps_its_collections_and_indexes(tmp_path, engine, options):
    """The cold start closes and reopens the engine: the catalog (collections, indexes, the next
    record id) must come back whole."""
    from enginebench.stores.native import NativeStore
    store = NativeStore(engine, tmp_path / "db", options)
    store.create_collection("c")
    store.create_index("c", IndexSpec("a", (("a", 1),), unique=True))
    store.insert_many("c", [{"_id": i, "a": i} for i in range(10)])
    store.close()
    store = NativeStore(engine, tmp_path / "db", options)
    try:
        store.create_collection("c")  # as a workload's setup does again after a reopen
        store.create_index("c", IndexSpec("a", (("a", 1),), unique=True))
        assert store.count("c", "a") == 10 and store.get("c", "a", (3,)) == {"_id": 3, "a": 3}
        store.insert_many("c", [{"_id": 10, "a": 10}])
        assert [d["_id"] for d in store.scan("c", "a", low=8)] == [8, 9, 10]
        with pytest.raises(DuplicateKey):
            store.insert_many("c", [{"_id": 11, "a": 4}])
    finally:
        store.close()
