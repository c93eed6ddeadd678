"""The ops file: the reader on the sample files (every op type), its errors, the profiler and
oplog conversion that produced the mongod sample, and the round trip of a Store-level capture."""
from pathlib import Path

import pytest
from bson import ObjectId

from enginebench.flashback import format as F
from enginebench.flashback.capture_mongo import from_profile, merge_oplog

DATA = Path(__file__).parent / "data" / "flashback"


def _lines(name):
    return [F.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def test_profiler_sample_has_every_op_type_with_its_full_command():
    capture = F.read_capture(DATA / "profiler_ops.jsonl")
    assert capture.header["version"] == F.VERSION and capture.header["source"] == "profiler"
    ops = list(capture.ops())
    assert {o["op"] for o in ops} == set(F.OP_TYPES)
    by = lambda op: [o for o in ops if o["op"] == op]
    find, = [o for o in by("query") if o["ns"] == "app.posts"]
    assert find["command"]["sort"] == {"created": -1} and find["cursor_id"] == 7431903 and find["docs_scanned"] == 2
    assert by("getmore")[0]["command"]["getMore"] == 7431903
    multi, single = by("update")[0], by("update")[1]
    assert multi["command"]["updates"][0]["multi"] is True and single["command"]["updates"][0]["upsert"] is True
    removes = by("remove")
    assert [r["command"]["deletes"][0]["limit"] for r in removes] == [0, 1]  # a multi remove, then one
    assert by("count")[0]["command"]["query"] == {"user": 7}
    fam, fam_remove = by("findandmodify")
    assert {k: fam["command"][k] for k in ("sort", "upsert", "new", "fields")} == {
        "sort": {"_id": 1}, "upsert": True, "new": True, "fields": {"seq": 1}}
    assert fam_remove["command"]["remove"] is True
    assert by("command")[0]["command"]["distinct"] == "posts"
    # Session and routing fields the server added are not part of a replayable command.
    assert all("$db" not in o["command"] and "lsid" not in o["command"] for o in ops)


def test_conversion_of_profile_and_oplog_matches_the_sample():
    records = [r for d in _lines("system_profile.jsonl") if (r := from_profile(d))]
    records, counts = merge_oplog(records, _lines("oplog.jsonl"))
    assert counts == {"filled_from_oplog": 1, "inserts_without_documents": 0}
    assert records == list(F.read_capture(DATA / "profiler_ops.jsonl").ops())
    # The truncated insert got both its documents back from the oplog, in order.
    events = next(r for r in records if r["ns"] == "app.events")
    assert [d["_id"] for d in events["command"]["documents"]] == [1, 2]
    # system.* namespaces are the server's own traffic, not the application's.
    assert not any(r["ns"].startswith("app.system.") for r in records)
    legacy = [r for r in records if r["ns"].startswith("legacy.")]
    assert legacy[0]["command"] == {"find": "users", "filter": {"name": "ann"}, "sort": {"age": 1}, "skip": 5, "limit": 10}
    assert legacy[1]["command"]["updates"][0] == {"q": {"age": {"$gt": 60}}, "u": {"$set": {"senior": True}},
                                                   "multi": True, "upsert": False}


def test_select_keeps_only_the_named_types():
    capture = F.read_capture(DATA / "profiler_ops.jsonl")
    assert {o["op"] for o in capture.ops(select=("count", "getmore"))} == {"count", "getmore"}
    assert F.summary(capture)["findandmodify"] == 2


def test_types_survive_the_round_trip(tmp_path):
    oid = ObjectId()
    record = {"ts": 1.25, "ns": "d.c", "op": "insert", "command": {"insert": "c", "documents": [
        {"_id": oid, "b": b"\x00\x01", "f": 2.0, "big": 2**40}]}}
    F.write_capture(tmp_path / "x.jsonl", F.header("store", {"c": {"capped_bytes": None, "indexes": []}}), [record])
    (back,) = F.read_capture(tmp_path / "x.jsonl").ops()
    doc = back["command"]["documents"][0]
    assert doc == record["command"]["documents"][0] and isinstance(doc["f"], float) and isinstance(doc["_id"], ObjectId)


@pytest.mark.parametrize("first,line,message", [
    ('{"format": "other", "version": 1}', None, "not an ops file"),
    ('{"format": "enginebench.flashback", "version": 99, "source": "store", "collections": {}}', None, "version 99"),
    ('{"format": "enginebench.flashback", "version": 1, "source": "store", "collections": {}}',
     '{"ts": 1, "ns": "d.c", "op": "upsert", "command": {"x": 1}}', ":2: op 'upsert' is not allowed"),
    ('{"format": "enginebench.flashback", "version": 1, "source": "store", "collections": {}}',
     '{"ts": "soon", "ns": "d.c", "op": "query", "command": {"find": "c"}}', ":2: ts must be"),
    ('{"format": "enginebench.flashback", "version": 1, "source": "store", "collections": {}}',
     '{"ts": 1, "ns": "nodot", "op": "query", "command": {"find": "c"}}', ":2: ns must be"),
])
def test_bad_files_are_named_with_line_and_field(tmp_path, first, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(first + "\n" + (line + "\n" if line else ""))
    with pytest.raises(F.CaptureError, match=message.replace("(", r"\(").replace(".", r"\.")) as info:
        list(F.read_capture(path).ops())
    assert str(path) in str(info.value)
