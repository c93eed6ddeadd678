"""Paths no stand-in server covers, replayed by a scripted server (scripted.py) with reply shapes
from the servers' sources: another member winning the election, a RECOVERING member with empty
messages, a tailable find on an empty capped collection answered with cursor id 0, `hello`
refused by a 3.2 server. (The replayed find whose getMore had to stay in its session went with the
Python replayer: the runner's replay is checked in its own tests.)"""
import datetime

import pymongo
import pytest
from bson.timestamp import Timestamp

from scripted import ScriptedServer

# isMaster/hello as a 4.4+ server answers it (mongod's src/mongo/db/repl/hello_response.cpp:
# ismaster, secondary, setName, primary, hosts; maxWireVersion 9 is 4.4's), enough for pymongo 4.
HANDSHAKE = {"ismaster": True, "maxWireVersion": 9, "minWireVersion": 0, "maxBsonObjectSize": 16777216,
             "maxMessageSizeBytes": 48000000, "maxWriteBatchSize": 100000, "ok": 1.0}
# An unknown command on MongoDB 3.2 (the posts' 3.2.0): {ok: 0, errmsg: "no such command: 'hello', bad
# cmd: ...", code: 59, codeName CommandNotFound only from 3.4}; what matters is ok 0 with code 59.
NO_SUCH_HELLO = {"ok": 0.0, "errmsg": "no such command: 'hello', bad cmd: '{ hello: 1 }'", "code": 59}


def _client(server, **kw):
    return pymongo.MongoClient(f"mongodb://{server.address}/?directConnection=true", serverSelectionTimeoutMS=5000,
                               **kw)


def test_any_member_may_win_the_election():
    """Protocol version 1 (3.2+): after replSetInitiate through member 0, member 1 may win."""
    from enginebench.mongod.launch import wait_for_primary
    winner = ScriptedServer(lambda c, db: {**HANDSHAKE, "ismaster": True, "secondary": False, "setName": "rs0"})
    loser = ScriptedServer(lambda c, db: {**HANDSHAKE, "ismaster": False, "secondary": True, "setName": "rs0",
                                          "primary": winner.address})
    with winner, loser:
        assert wait_for_primary("rs0", [loser.address, winner.address], timeout_s=10) == winner.address


def _recovering_set(member_log: list[str], oldest_ts: Timestamp):
    """A primary whose replSetGetStatus shows member 2 only as RECOVERING with no message (3.2+:
    maintenance mode, no heartbeat message), and that member answering getLog "global"."""
    recovering = ScriptedServer(lambda c, db: {"totalLinesWritten": len(member_log), "log": member_log, "ok": 1.0}
                                if "getLog" in c else HANDSHAKE)
    optime = {"ts": Timestamp(1000, 1), "t": 1}

    def primary_reply(command, db):
        if "replSetGetStatus" in command:
            # Member fields as replSetGetStatus lists them (mongod's topology_coordinator.cpp
            # prepareStatusResponse: name, health, state, stateStr, optime {ts, t}, optimeDate).
            members = [
                {"_id": 0, "name": "127.0.0.1:1", "health": 1.0, "state": 1, "stateStr": "PRIMARY", "optime": optime,
                 "optimeDate": datetime.datetime(1970, 1, 1, 0, 16, 40), "self": True},
                {"_id": 1, "name": recovering.address, "health": 1.0, "state": 3, "stateStr": "RECOVERING",
                 "optime": {"ts": Timestamp(100, 1), "t": 1}, "optimeDate": datetime.datetime(1970, 1, 1, 0, 1, 40),
                 "lastHeartbeatMessage": ""}]
            return {"set": "rs0", "myState": 1, "members": members, "ok": 1.0}
        if command.get("find") == "oplog.rs":
            return {"cursor": {"firstBatch": [{"ts": oldest_ts}], "id": 0, "ns": "local.oplog.rs"}, "ok": 1.0}
        return HANDSHAKE
    return ScriptedServer(primary_reply), recovering


@pytest.mark.parametrize("line", [
    # 3.2-4.2: error() << "too stale to catch up -- entering maintenance mode" (bgsync.cpp)
    "2016-06-14T12:31:16.696+0300 E REPL     [rsBackgroundSync] too stale to catch up -- entering maintenance mode",
    # 4.4+: the same event in a structured log line, capitalised "Too stale to catch up"
    '{"t":{"$date":"2021-01-01T00:00:00.000+00:00"},"s":"E","c":"REPL","id":21799,"ctx":"BackgroundSync",'
    '"msg":"Too stale to catch up"}',
])
def test_recovering_member_with_empty_messages_is_found_from_its_log(line):
    from enginebench.mongod.replication import StaleWatch
    primary, recovering = _recovering_set(["a line before", line], oldest_ts=Timestamp(50, 1))
    with primary, recovering:
        found = []
        client = _client(primary)
        StaleWatch(client, 1.0, found.append).check()
        client.close()
    assert found and found[0]["members"][0]["member"] == recovering.address
    assert "stale" in found[0]["members"][0]["message"].lower()


def test_recovering_member_behind_the_oldest_oplog_entry_is_stale():
    from enginebench.mongod.replication import StaleWatch
    primary, recovering = _recovering_set(["nothing about staleness"], oldest_ts=Timestamp(500, 1))
    with primary, recovering:
        found = []
        client = _client(primary)
        StaleWatch(client, 1.0, found.append).check()
        client.close()
    assert found and "older than the primary's oldest oplog entry" in found[0]["members"][0]["message"]


def test_capture_survives_the_empty_profile_cursor_and_a_refused_hello(tmp_path):
    """SERVER-13955: a tailable find on an empty capped collection returns cursor id 0; the tail
    must re-open (resuming after the last ts) rather than end. The server refuses `hello` as 3.2
    does, so capture falls back to isMaster."""
    from enginebench.flashback import format as F
    from enginebench.flashback.capture_mongo import capture
    entry = {"op": "insert", "ns": "app.posts", "command": {"insert": "posts", "documents": [{"_id": 1}],
                                                            "ordered": True},
             "ninserted": 1, "ts": datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1),
             "millis": 0}
    finds = []

    def reply(command, db):
        name = next(iter(command))
        if name == "hello":
            return NO_SUCH_HELLO
        if name == "find" and command["find"] == "system.profile":
            finds.append(command)
            batch = [entry] if len(finds) == 3 else []   # empty (dead cursor) twice, then one entry
            return {"cursor": {"firstBatch": batch, "id": 0, "ns": "app.system.profile"}, "ok": 1.0}
        if name == "listCollections":   # create_collection checks first: none there yet
            return {"cursor": {"firstBatch": [], "id": 0, "ns": "app.$cmd.listCollections"}, "ok": 1.0}
        if name.lower() == "buildinfo":
            return {"version": "3.2.0", "versionArray": [3, 2, 0, 0], "ok": 1.0}
        return HANDSHAKE if name.lower() in ("ismaster", "hello") else {"ok": 1.0}

    with ScriptedServer(reply) as server:
        client = _client(server)
        counts = capture(client, ["app"], duration_s=2.0, path=tmp_path / "ops.jsonl")
        client.close()
    assert len(finds) >= 3 and counts["ops"] == 1
    assert [o["op"] for o in F.read_capture(tmp_path / "ops.jsonl").ops()] == ["insert"]
    assert any(next(iter(c)).lower() == "ismaster" for _, c in server.received[1:]), "isMaster after hello refused"
