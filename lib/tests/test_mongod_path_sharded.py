"""A sharded load left on one shard is said on the first screen and its claims are not judged as
sharded; a same-shard moveChunk is recognised in every server line's terms (issue 47, "The mongod
path"). The companion (companion.py) runs against scripted servers (scripted.py) whose replies
are shaped as mongodb/mongo's sources have them:

  isMaster on mongos   {ismaster: true, msg: "isdbgrid", maxWireVersion, ...}
                       src/mongo/s/commands/cluster_is_master_cmd.cpp at
                       02ea85d348d4f03459fc2661f76992fff4ce48a7 (CmdHello/CmdIsMaster::run; hello
                       answers isWritablePrimary where isMaster answers ismaster)
  listShards           {shards: [{_id, host: "<set>/<host:port>"}]}: the config.shards documents
                       (src/mongo/s/commands/cluster_list_shards_cmd.cpp, `shardsArr.append(
                       shard.toBSON())`; src/mongo/s/catalog/type_shard.cpp, ShardType::name "_id",
                       ShardType::host "host")
  collStats on mongos  {sharded: true, ns, count, size, storageSize, totalIndexSize, indexSizes,
                       avgObjSize, nindexes, nchunks, shards: {<shard id>: that shard's own
                       collStats}}, where only the shards owning chunks of the collection are asked
                       and named (cm->getAllShardIds): src/mongo/s/commands/commands_public.cpp at
                       5290f5a62439f10aa6681f6253489cf87377a82e (CollectionStats::run)
  moveChunk            3.0/3.2: a chunk already on `to` is refused with errmsg "that chunk is
                       already on that shard" and no code (cluster_move_chunk_cmd.cpp of that era:
                       `if (from == to) { errmsg = "that chunk is already on that shard"; return
                       false; }`); from 3.4 every move, that one too, answers {millis} (cluster_
                       move_chunk_cmd.cpp at 01cb4a206af83bf49da4fa750aba4a3f4aeaea10: `result.append(
                       "millis", t.millis()); return true;`, the config server deeming a chunk already
                       on its destination moved: src/mongo/db/s/balancer/migration_manager.cpp at the
                       same commit; src/mongo/db/s/balancer/balancer.cpp at
                       0044527f9a34b3b37330bc03f3d2c97017ca261b, processManualMigrationOutcome); a
                       move to a shard that does not exist: ShardNotFound (70, error_codes.yml at
                       007ba93486927dc7162c9b0f9d719e86b87fd8fe), "Could not move chunk in {namespace}
                       to {toShardId} because that shard does not exist" (the same
                       cluster_move_chunk_cmd.cpp, LOGV2 22755 with UserAssertAfterLog), in the error
                       reply every command failure has, {ok: 0, errmsg, code, codeName}
                       (src/mongo/db/commands.cpp, CommandHelpers::appendCommandStatusNoThrow)
"""
import json
from pathlib import Path

import polars as pl
import pytest
from bson.max_key import MaxKey
from bson.min_key import MinKey
from pymongo.errors import OperationFailure

from enginebench import driver
from enginebench.mongod import sharding
from enginebench.mongod.companion import Companion
from enginebench.mongod.systems import ServerHandle
from enginebench.report import html, trust
from enginebench.report.claims import HOLDS, NOT_EVALUATED, load_claims
from enginebench.report.rundata import load_run
from scripted import ScriptedServer

# mongos's isMaster (cluster_is_master_cmd.cpp at 02ea85d3...); maxWireVersion 9 is 4.4's.
MONGOS_HELLO = {"ismaster": True, "msg": "isdbgrid", "maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000,
                "maxWriteBatchSize": 100000, "maxWireVersion": 9, "minWireVersion": 0, "ok": 1.0}


def _cursor(ns: str, docs=()):
    return {"cursor": {"firstBatch": list(docs), "id": 0, "ns": ns}, "ok": 1.0}


class Shard:
    """One shard's primary (a one-member replica set) holding `docs` of the link collection."""

    def __init__(self, name: str, docs: int):
        self.name, self.docs = name, docs
        self.server = ScriptedServer(self.reply)

    def reply(self, command: dict, db: str) -> dict:
        name = next(iter(command)).lower()
        if name in ("ismaster", "hello"):
            # a primary's isMaster (src/mongo/db/repl/is_master_response.cpp at
            # 6dcdd23dd37ef12c87e71cf59ef01cd82432efe0: hosts, setName, setVersion, ismaster,
            # secondary, primary, me)
            return {"hosts": [self.server.address], "setName": self.name, "setVersion": 1, "ismaster": True,
                    "isWritablePrimary": True, "secondary": False, "primary": self.server.address,
                    "me": self.server.address, "maxWireVersion": 9, "minWireVersion": 0, "ok": 1.0}
        if name == "serverstatus":
            return {"process": "mongod", "opcounters": {"insert": self.docs}, "mem": {"resident": 10},
                    "storageEngine": {"name": "wiredTiger"}, "wiredTiger": {"cache": {}}, "ok": 1.0}
        return {"ok": 1.0}

    def collstats(self) -> dict:
        # the fields mongos's CollectionStats reads from each shard's reply (commands_public.cpp)
        return {"ns": "enginebench.link", "count": self.docs, "size": 100 * self.docs, "avgObjSize": 100,
                "storageSize": 4096, "nindexes": 3, "totalIndexSize": 8192, "indexSizes": {"_id_": 4096}, "ok": 1.0}


class Mongos:
    """mongos over `shards`; `owning`: the shards owning chunks of link (all when None);
    `same_shard`: how a move to the shard that has the chunk is answered ("3.2" or "3.4+")."""

    def __init__(self, shards: list[Shard], owning: list[str] | None = None, same_shard: str = "3.4+"):
        self.shards, self.owning, self.same_shard = shards, owning, same_shard
        self.server = ScriptedServer(self.reply)

    def reply(self, command: dict, db: str) -> dict:
        name = next(iter(command)).lower()
        if name in ("ismaster", "hello"):
            return {**MONGOS_HELLO, "isWritablePrimary": True} if name == "hello" else MONGOS_HELLO
        if name == "buildinfo":
            return {"version": "4.4.0", "versionArray": [4, 4, 0, 0], "gitVersion": "x", "ok": 1.0}
        if name == "serverstatus":
            return {"process": "mongos", "opcounters": {"insert": 10}, "mem": {"resident": 10}, "ok": 1.0}
        if name == "listshards":
            return {"shards": [{"_id": s.name, "host": f"{s.name}/{s.server.address}"} for s in self.shards],
                    "ok": 1.0}
        if name == "movechunk":
            first = command["bounds"][0]
            if any(isinstance(v, MinKey) for v in first.values()) and command["to"] == self.shards[0].name \
                    and self.same_shard == "3.2":
                return {"ok": 0.0, "errmsg": "that chunk is already on that shard"}
            if command["to"] not in [s.name for s in self.shards]:
                return {"ok": 0.0, "errmsg": f"Could not move chunk in {command['moveChunk']} to {command['to']} "
                                             "because that shard does not exist", "code": 70,
                        "codeName": "ShardNotFound"}
            return {"millis": 3, "ok": 1.0}
        if name == "collstats":
            owning = [s for s in self.shards if self.owning is None or s.name in self.owning]
            count = sum(s.docs for s in owning)
            return {"sharded": True, "ns": f"{db}.{command['collStats']}", "count": count, "size": 100 * count,
                    "storageSize": 4096 * len(owning), "totalIndexSize": 8192 * len(owning),
                    "indexSizes": {"_id_": 4096 * len(owning)}, "avgObjSize": 100.0, "nindexes": 3,
                    "nchunks": 4, "shards": {s.name: s.collstats() for s in owning}, "ok": 1.0}
        if name == "dbstats":
            return {"db": db, "collections": 1, "objects": 10, "dataSize": 1000, "storageSize": 4096, "ok": 1.0}
        if name == "listcollections":
            return _cursor(f"{db}.$cmd.listCollections", [{"name": "link", "type": "collection", "options": {}}])
        if name == "find":
            return _cursor(f"{db}.{command['find']}")
        if name in ("insert", "update", "delete"):
            return {"n": 1, "ok": 1.0}
        return {"ok": 1.0}


@pytest.fixture
def cluster():
    made = []

    def make(docs=(6, 4), **kw):
        shards = [Shard(f"sh{i}", n) for i, n in enumerate(docs)]
        mongos = Mongos(shards, **kw)
        made.extend([mongos.server] + [s.server for s in shards])
        return mongos, shards
    yield make
    for server in made:
        server.close()


def _phase_stats(mongos: Mongos) -> dict:
    companion = Companion()
    companion.open({"uri": f"mongodb://{mongos.server.address}/", "database": "enginebench", "timeout_ms": 5000})
    try:
        return companion.phase_stats()
    finally:
        companion.close()


def _load_event(stats: dict) -> dict:
    """The runner's event of the companion's phase_stats after the load (plan.rs after_phase)."""
    return {"event": "db_stats", "phase": "load", **stats}


# -- the finding -----------------------------------------------------------------------------------
def test_a_load_left_on_one_shard_is_found_and_a_spread_one_is_not(cluster):
    mongos, _ = cluster(docs=(6, 4), owning=["sh0"])
    one_shard = _phase_stats(mongos)
    assert one_shard["collections"]["link"]["spread_ok"] is False
    found = sharding.unspread([_load_event(one_shard)])
    assert found == [{"collection": "link", "phase": "load", "on": ["sh0"], "shards": {"sh0": 6, "sh1": 0}}]
    assert sharding.unspread_text("rx.sh", found[0]) == "rx.sh's link sat on one shard (sh0 of sh0, sh1) after the load"

    spread, _ = cluster(docs=(6, 4))
    assert sharding.unspread([_load_event(_phase_stats(spread))]) == []
    # only the load's spread counts: a later phase's rows are not read as the load's
    assert sharding.unspread([{**_load_event(one_shard), "phase": "run"}]) == []


def test_the_driver_records_it_and_says_so(cluster, capsys):
    mongos, _ = cluster(docs=(6, 4), owning=["sh0"])
    result = {"label": "rx.sh", "status": "complete", "error": None,
              "events": [{"event": "phase_end", "phase": "load"}, _load_event(_phase_stats(mongos))]}
    server = ServerHandle(f"mongodb://{mongos.server.address}/", {"python": "python3", "executor": "driver"},
                          "enginebench")
    driver._server_findings(result, server)
    assert result["status"] == "complete"   # measured: the numbers stay, their reading changes
    assert result["unspread"][0]["on"] == ["sh0"]
    assert "[rx.sh] rx.sh's link sat on one shard (sh0 of sh0, sh1) after the load: its claims are not judged " \
           "as sharded" in capsys.readouterr().err

    folder = _Folder({"rx.sh": {"status": "complete"}})
    driver._record_findings(folder, result)
    assert folder.systems["rx.sh"]["unspread"] == result["unspread"] and folder.written == 1


class _Folder:
    """What _record_findings uses of a RunFolder: its systems' entries and write_manifest."""

    def __init__(self, systems: dict):
        self.systems, self.written = systems, 0

    def write_manifest(self) -> None:
        self.written += 1


# -- the report --------------------------------------------------------------------------------------
def _run_dir(tmp_path: Path, unspread: list[dict] | None, events: list[dict] | None = None) -> Path:
    """A linkbench_cached run on TARGET=mongod, sharded: wt.sh (btree) spread over both shards,
    rx.sh (lsm) as `unspread` says (the manifest's record), or from its events when None."""
    run = tmp_path / "run"
    for label in ("wt.sh", "rx.sh"):
        (run / label).mkdir(parents=True)
    if events is not None:
        (run / "rx.sh" / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    rx = {"status": "complete", "error": None, "engine_config": {"mongos": True}}
    if unspread is not None:
        rx["unspread"] = unspread
    manifest = {"run_id": "20270101-000000-host", "experiment": "linkbench_cached", "scale": "default",
                "status": "complete", "target": {"kind": "mongod"}, "banner": [],
                "params": {"systems": [{"label": "wt.sh", "role": "btree", "engine": "wiredtiger"},
                                       {"label": "rx.sh", "role": "lsm", "engine": "rocksdb"}]},
                "systems": {"wt.sh": {"status": "complete", "error": None, "engine_config": {"mongos": True}},
                            "rx.sh": rx}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def _claims_with_verdicts() -> pl.DataFrame:
    """linkbench_cached's claims, each as if its ratio held: what withhold() then leaves of them."""
    claims = load_claims("linkbench_cached")
    return pl.DataFrame([{"id": c["id"], "claim": c["claim"], "metric": c["metric"], "published_ratio": 2.0,
                          "measured_ratio": 2.0, "expect": c["expect"], "verdict": HOLDS, "from": "x", "reason": ""}
                         for c in claims.iter_rows(named=True)])


def test_the_first_screen_says_so_and_no_claim_on_that_system_is_judged(tmp_path, cluster):
    mongos, _ = cluster(docs=(6, 4), owning=["sh0"])
    found = sharding.unspread([_load_event(_phase_stats(mongos))])
    run = load_run(_run_dir(tmp_path, found))

    page = html.banner(run)
    line = ("rx.sh's link sat on one shard (sh0 of sh0, sh1) after the load: the cluster did not spread the "
            "load, so rx.sh measured fewer shards than it names; its claims are not judged as sharded.")
    assert f"<b>{line.replace(chr(39), '&#x27;')}</b>" in page
    assert "<div class='eb-banner'>" in page   # a complete run, but not one to read as it stands (no eb-ok)

    table = trust.withhold(run, _claims_with_verdicts())
    rows = {r["id"]: r for r in table.iter_rows(named=True)}
    why = "not judged: rx.sh's link sat on one shard (sh0 of sh0, sh1) after the load"
    # every claim comparing the LSM system (rx.sh) ...
    assert rows["lb.load.btree_vs_lsm"]["verdict"] == NOT_EVALUATED and rows["lb.load.btree_vs_lsm"]["reason"] == why
    assert rows["lb.query.cached.btree_vs_lsm"]["verdict"] == NOT_EVALUATED
    assert rows["lb.p99.getlinkslist.cached"]["reason"] == why
    # ... and only those: the oplog claim compares two b-tree systems, spread over both shards
    assert rows["lb.oplog.wkb"]["verdict"] == HOLDS and rows["lb.oplog.wkb"]["reason"] == ""


def test_a_run_recorded_before_the_manifest_kept_it_is_read_from_its_events(tmp_path, cluster):
    mongos, _ = cluster(docs=(6, 4), owning=["sh0"])
    run = load_run(_run_dir(tmp_path, None, events=[_load_event(_phase_stats(mongos))]))
    assert sharding.run_unspread(run)["rx.sh"][0]["on"] == ["sh0"]
    table = trust.withhold(run, _claims_with_verdicts())
    assert table.filter(pl.col("id") == "lb.load.btree_vs_lsm")["verdict"][0] == NOT_EVALUATED


def test_a_spread_cluster_keeps_its_verdicts_and_a_plain_first_screen(tmp_path):
    run = load_run(_run_dir(tmp_path, []))
    assert sharding.banner_lines(run) == [] and "eb-banner eb-ok" in html.banner(run)
    table = trust.withhold(run, _claims_with_verdicts())
    assert set(table["verdict"]) == {HOLDS}


# -- same-shard moves ------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", ["3.2", "3.4+"])
def test_a_chunk_already_on_its_shard_is_placed_on_every_server_line(cluster, line):
    mongos, shards = cluster(same_shard=line)
    from pymongo import MongoClient
    client = MongoClient(f"mongodb://{mongos.server.address}/", serverSelectionTimeoutMS=5000)
    try:
        placed = sharding.presplit(client, "enginebench.count", {"id": 1}, [{"id": 2501}], ["sh0", "sh1"])
    finally:
        client.close()
    assert placed == ["sh0", "sh1"]
    moves = mongos.server.commands("moveChunk")
    assert [m["to"] for m in moves] == ["sh0", "sh1"]
    assert moves[0]["bounds"] == [{"id": MinKey()}, {"id": 2501}] and moves[1]["bounds"] == [{"id": 2501},
                                                                                              {"id": MaxKey()}]


def test_any_other_refused_move_still_stops_the_presplit(cluster):
    mongos, _ = cluster()
    from pymongo import MongoClient
    client = MongoClient(f"mongodb://{mongos.server.address}/", serverSelectionTimeoutMS=5000)
    try:
        with pytest.raises(OperationFailure, match="because that shard does not exist"):
            sharding.presplit(client, "enginebench.count", {"id": 1}, [{"id": 2501}], ["sh0", "nosuchshard"])
    finally:
        client.close()
