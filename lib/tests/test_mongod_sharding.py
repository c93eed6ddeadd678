"""A sharded LinkBench spread over every shard, its spread recorded, the engines' counters read
from each shard's primary, and LSM tables checked on the server: the companion (companion.py)
against scripted servers (scripted.py) answering with reply shapes from mongodb r3.2.0's sources:

  listShards    {shards: [{_id, host: "<set>/<host:port>"}]}   s/commands/cluster_list_shards_cmd.cpp
  shardCollection {collectionsharded: ns}                     s/commands/cluster_shard_collection_cmd.cpp
  split         {split: ns, middle: {...}} -> {ok: 1}         s/commands/cluster_split_collection_cmd.cpp
  moveChunk     {moveChunk: ns, bounds: [min, max], to} -> {millis}; a chunk already there:
                errmsg "that chunk is already on that shard"  s/commands/cluster_move_chunk_cmd.cpp
  collStats     through mongos: {sharded, ns, count, ..., nchunks, shards: {<id>: its collStats}}
                (only shards owning chunks)                    s/commands/commands_public.cpp
                on a mongod: wiredTiger {metadata, creationString, type: "lsm"|"file"}
                                                               db/storage/wiredtiger/wiredtiger_record_store.cpp
  serverStatus  mongos has no storage engine section; a shard's has wiredTiger.cache, ...
and a server refusing LSM tables with code 6627201 (mongodb/mongo's jstest asserting it for
createCollection with configString "type=lsm")."""
import json
import re
from pathlib import Path

import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey

from enginebench.mongod import sharding, tabletype
from enginebench.mongod.companion import Companion
from scripted import ScriptedServer

HANDSHAKE = {"ismaster": True, "maxWireVersion": 9, "minWireVersion": 0, "maxBsonObjectSize": 16777216,
             "maxMessageSizeBytes": 48000000, "maxWriteBatchSize": 100000, "ok": 1.0}
NATIVE = Path(__file__).parents[1] / "native" / "src" / "workloads" / "linkbench"


def _cursor(ns: str, docs=()):
    return {"cursor": {"firstBatch": list(docs), "id": 0, "ns": ns}, "ok": 1.0}


def _common(name: str, command: dict, db: str):
    """What every server answers alike here (the capability probes' inserts, finds and drops)."""
    if name in ("ismaster", "hello"):
        return HANDSHAKE
    if name == "buildinfo":
        return {"version": "4.4.0", "versionArray": [4, 4, 0, 0], "gitVersion": "x", "ok": 1.0}
    if name == "find":
        return _cursor(f"{db}.{command['find']}")
    if name in ("insert", "update", "delete"):
        return {"n": 1, "ok": 1.0}
    if name == "listcollections":
        return _cursor(f"{db}.$cmd.listCollections")
    return {"ok": 1.0}


class Shard:
    """One shard's primary: a one-member replica set whose serverStatus has a WiredTiger section."""

    def __init__(self, name: str, docs: int, table_type: str = "file"):
        self.name, self.docs, self.table_type = name, docs, table_type
        self.server = ScriptedServer(self.reply)

    def reply(self, command: dict, db: str) -> dict:
        name = next(iter(command)).lower()
        if name in ("ismaster", "hello"):
            return {**HANDSHAKE, "setName": self.name, "hosts": [self.server.address], "primary": self.server.address,
                    "me": self.server.address, "isWritablePrimary": True, "secondary": False}
        if name == "serverstatus":
            return {"process": "mongod", "opcounters": {"insert": 10}, "mem": {"resident": 100},
                    "storageEngine": {"name": "wiredTiger"},
                    "wiredTiger": {"cache": {"bytes read into cache": 1000}}, "ok": 1.0}
        return _common(name, command, db)

    def collstats(self) -> dict:
        return {"ns": "enginebench.link", "count": self.docs, "size": 100 * self.docs, "storageSize": 4096,
                "capped": False, "wiredTiger": {"metadata": {"formatVersion": 1}, "creationString":
                                                f"type={self.table_type}", "type": self.table_type},
                "nindexes": 3, "totalIndexSize": 8192, "indexSizes": {"_id_": 4096}, "ok": 1.0}


class Mongos:
    def __init__(self, shards: list[Shard], owning: list[str] | None = None):
        self.shards, self.owning = shards, owning
        self.server = ScriptedServer(self.reply)

    def reply(self, command: dict, db: str) -> dict:
        name = next(iter(command)).lower()
        if name in ("ismaster", "hello"):
            return {**HANDSHAKE, "msg": "isdbgrid"}
        if name == "serverstatus":
            return {"process": "mongos", "opcounters": {"insert": 20}, "mem": {"resident": 10}, "ok": 1.0}
        if name == "listshards":
            return {"shards": [{"_id": s.name, "host": f"{s.name}/{s.server.address}", "state": 1}
                               for s in self.shards], "ok": 1.0}
        if name == "shardcollection":
            return {"collectionsharded": command["shardCollection"], "ok": 1.0}
        if name == "movechunk" and command["to"] == self.shards[0].name:
            return {"ok": 0.0, "errmsg": "that chunk is already on that shard"}   # the primary shard's chunk
        if name == "movechunk":
            return {"millis": 12, "ok": 1.0}
        if name == "collstats":
            owning = [s for s in self.shards if self.owning is None or s.name in self.owning]
            count = sum(s.docs for s in owning)
            return {"sharded": True, "ns": f"{db}.{command['collStats']}", "count": count, "size": 100 * count,
                    "storageSize": 4096 * len(owning), "totalIndexSize": 8192, "indexSizes": {"_id_": 4096},
                    "avgObjSize": 100.0, "nindexes": 3, "nchunks": 4, "shards": {s.name: s.collstats() for s in owning},
                    "ok": 1.0}
        if name == "dbstats":
            return {"db": db, "collections": 1, "objects": 10, "dataSize": 1000, "storageSize": 4096, "ok": 1.0}
        if name == "listcollections":
            return _cursor(f"{db}.$cmd.listCollections", [{"name": "link", "type": "collection", "options": {}}])
        return _common(name, command, db)


@pytest.fixture
def cluster():
    made = []

    def make(docs=(6, 4), owning=None, table_type="file"):
        shards = [Shard(f"sh{i}", n, table_type) for i, n in enumerate(docs)]
        mongos = Mongos(shards, owning)
        made.extend([mongos.server] + [s.server for s in shards])
        return mongos, shards
    yield make
    for server in made:
        server.close()


def _open(mongos: Mongos, **kw) -> Companion:
    companion = Companion(**kw)
    companion.open({"uri": f"mongodb://{mongos.server.address}/", "database": "enginebench", "timeout_ms": 5000})
    return companion


def test_link_and_count_are_split_at_quantiles_and_moved_to_every_shard(cluster):
    mongos, shards = cluster()
    splits = sharding.split_points({"name": "linkbench", "maxid1": 5001, "link_type_count": 2}, len(shards))
    companion = _open(mongos, splits=json.loads(json.dumps(splits)))   # as the command line passes them
    try:
        assert companion.created({"collection": "link"}) == {"link_type": 1, "id1": 1}
        companion.created({"collection": "count"})
    finally:
        companion.close()
    middles = [c["middle"] for c in mongos.server.commands("split")]
    t0, t1 = sharding.DEFAULT_LINK_TYPE, sharding.DEFAULT_LINK_TYPE + 1
    assert middles == [{"link_type": t0, "id1": 2501}, {"link_type": t1, "id1": 1}, {"link_type": t1, "id1": 2501},
                       {"id": 2501}]
    moves = mongos.server.commands("moveChunk")
    # one chunk per link type and shard, alternating; count's two halves on the two shards
    assert [(m["moveChunk"], m["to"]) for m in moves] == [
        ("enginebench.link", "sh0"), ("enginebench.link", "sh1"), ("enginebench.link", "sh0"),
        ("enginebench.link", "sh1"), ("enginebench.count", "sh0"), ("enginebench.count", "sh1")]
    first = moves[0]["bounds"]
    assert first[0] == {"link_type": MinKey(), "id1": MinKey()} and first[1] == {"link_type": t0, "id1": 2501}
    assert moves[3]["bounds"][1] == {"link_type": MaxKey(), "id1": MaxKey()}


def test_the_link_types_and_ids_are_the_runners():
    """The split points stand on the runner's LinkBench: its link types and its unique keys."""
    source = (NATIVE / "mod.rs").read_text()
    assert re.search(r"pub const DEFAULT_LINK_TYPE: i64 = (\d+);", source)[1] == str(sharding.DEFAULT_LINK_TYPE)
    ops = (NATIVE / "ops.rs").read_text()
    for collection, index in (("LINK", "LINK_PK"), ("COUNT", "COUNT_PK")):
        fields = re.findall(r'\("(\w+)", 1\)', re.search(rf"IndexSpec::new\({index}, &\[(.*?)\]", ops)[1])
        key = list(sharding.shard_key(collection.lower()))
        assert key == fields[:len(key)], collection   # the shard key prefixes the unique index
    assert sharding.shard_key("node") == {"_id": "hashed"}
    assert sharding.split_points({"name": "iibench"}, 2) == {}


@pytest.mark.parametrize("owning, ok", [(None, True), (["sh0"], False)])
def test_each_shards_share_is_recorded_after_a_phase(cluster, owning, ok):
    mongos, _ = cluster(docs=(6, 4), owning=owning)
    companion = _open(mongos)
    try:
        row = companion.phase_stats()["collections"]["link"]
    finally:
        companion.close()
    if ok:
        assert row["shards"] == {"sh0": {"count": 6, "share": 0.6}, "sh1": {"count": 4, "share": 0.4}}
    else:  # a collection left on one shard: the other shard is named with none of it
        assert row["shards"] == {"sh0": {"count": 6, "share": 1.0}, "sh1": {"count": 0, "share": 0.0}}
    assert row["spread_ok"] is ok and row["wt_type"] == "file"


def test_engine_counters_come_from_each_shards_primary(cluster):
    mongos, shards = cluster()
    companion = _open(mongos)
    try:
        counters = companion.stats()["counters"]
    finally:
        companion.close()
    assert all(s.server.commands("serverStatus") for s in shards)
    assert counters["wt.cache: bytes read into cache"] == 2000          # summed over the two shards
    assert counters["opcounters.insert"] == 20 and counters["shards.opcounters.insert"] == 20


def test_a_server_refusing_lsm_stops_the_system_before_the_workload():
    def reply(command, db):
        name = next(iter(command)).lower()
        if name == "create" and command["create"] == tabletype.PROBE:
            return {"ok": 0.0, "errmsg": "Configuration 'type=lsm' is not supported", "code": tabletype.LSM_REFUSED}
        if name == "serverstatus":
            return {"process": "mongod", "storageEngine": {"name": "wiredTiger"}, "ok": 1.0}
        return _common(name, command, db)
    with ScriptedServer(reply) as server:
        with pytest.raises(tabletype.TableTypeRefused, match=r"refuses WiredTiger LSM tables \(code 6627201"):
            Companion(table_type="lsm").open({"uri": f"mongodb://{server.address}/?directConnection=true",
                                              "database": "enginebench"})


@pytest.mark.parametrize("made, refused", [("file", True), ("lsm", False)])
def test_the_first_collection_is_checked_for_lsm(cluster, made, refused):
    mongos, shards = cluster(table_type=made)

    def reply(command, db, base=mongos.reply):
        if next(iter(command)).lower() == "collstats":
            return shards[0].collstats()   # an unsharded collection: the primary shard's collStats
        return base(command, db)
    mongos.server.reply = reply
    companion = _open(mongos, table_type="lsm") if not refused else None
    if refused:
        with pytest.raises(tabletype.TableTypeRefused, match=r"made _enginebench_table_type as file tables"):
            _open(mongos, table_type="lsm")
        return
    try:
        companion.created({"collection": "link"})
        assert companion.table_checked
    finally:
        companion.close()
