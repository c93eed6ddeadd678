"""Capture from a MongoDB deployment: the profiler (level 2, every op) and the oplog.

As Flashback's recorder did, one thread per database tails `<db>.system.profile` (a capped
collection, so a tailable await-data cursor) and one thread tails `local.oplog.rs` for inserts.
Unlike it, each op keeps its full command: the profiler of MongoDB 3.6+ records it under
`command` (3.2 under `query`, 2.x as separate `query`/`updateobj` fields, rebuilt here), so multi
updates and removes, count's query, findAndModify's sort/upsert/new/remove/fields and getMore's
cursor all survive. The oplog fills in inserted documents when the profiler left them out (a
command too large for a profile entry is truncated).

The profiler adds a write to every operation of the profiled server; capture on a system you
can afford to slow down, as Flashback's README also warned.
"""
from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

from .format import CaptureError, header, write_capture

# Fields a server adds to a command on the wire or in its profile entry; none belongs in a replay.
NOT_REPLAYED = {"$db", "lsid", "$clusterTime", "txnNumber", "$readPreference", "signature", "$audit",
                "$client", "$configServerState", "autocommit", "startTransaction", "$replData", "$gleStats"}
EXCLUDED_DBS = ("admin", "local", "config")


def _seconds(ts) -> float:
    if isinstance(ts, datetime):
        return (ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)).timestamp()
    return float(ts)


def _clean(command: dict) -> dict:
    return {k: v for k, v in command.items() if k not in NOT_REPLAYED}


def _legacy_command(doc: dict, collection: str) -> dict | None:
    """A 2.x/3.0 profile entry's separate fields as the command it stands for."""
    op, query = doc["op"], doc.get("query") or {}
    if op == "query":
        if "find" in query:  # 3.2: the find command itself
            return query
        flt = query.get("$query", query) if isinstance(query, dict) else {}
        cmd = {"find": collection, "filter": flt}
        if isinstance(query, dict) and "$orderby" in query:
            cmd["sort"] = query["$orderby"]
        if doc.get("ntoskip"):
            cmd["skip"] = doc["ntoskip"]
        if doc.get("ntoreturn"):
            cmd["limit"] = abs(doc["ntoreturn"])
        return cmd
    if op == "update":
        return {"update": collection, "updates": [{"q": query, "u": doc.get("updateobj", {}),
                                                   "multi": bool(doc.get("multi")), "upsert": bool(doc.get("upsert"))}]}
    if op == "remove":
        return {"delete": collection, "deletes": [{"q": query, "limit": 1 if doc.get("justOne") else 0}]}
    if op == "insert":
        return {"insert": collection, "documents": [doc["o"]] if "o" in doc else []}
    if op == "getmore":
        return {"getMore": doc.get("cursorid", 0), "collection": collection}
    return None


def _write_statement(command: dict, key: str, list_key: str) -> dict:
    """3.6+ profiles an update or delete per statement: {q, u, multi, upsert} at the top of
    `command`; as a replayable command it is one statement of an update/delete."""
    if list_key in command:
        return command
    statement = {k: v for k, v in command.items() if k in ("q", "u", "multi", "upsert", "limit", "hint",
                                                             "collation", "arrayFilters")}
    return {key: command.get(key), list_key: [statement]}


def from_profile(doc: dict) -> dict | None:
    """One system.profile document as an op record; None for what is not a client operation."""
    ns = doc.get("ns", "")
    if "." not in ns or ns.split(".", 1)[1].startswith("system.") or ns.split(".", 1)[0] in EXCLUDED_DBS:
        return None
    collection = ns.split(".", 1)[1]
    op = doc.get("op")
    command = _clean(doc["command"]) if isinstance(doc.get("command"), dict) else _legacy_command(doc, collection)
    if command is None:
        return None
    kind = op
    if op == "update":
        command = _write_statement({"update": collection, **command} if "update" not in command else command,
                                   "update", "updates")
    elif op == "remove":
        command = _write_statement({"delete": collection, **command} if "delete" not in command else command,
                                   "delete", "deletes")
    elif op == "command":
        name = next(iter(command)).lower()
        kind = {"count": "count", "findandmodify": "findandmodify"}.get(name, "command")
        if name == "$cmd":
            return None
    elif op not in ("query", "insert", "getmore"):
        return None
    record = {"ts": _seconds(doc["ts"]), "ns": ns, "op": kind, "command": command}
    scanned = doc.get("docsExamined", doc.get("nscannedObjects", doc.get("nscanned")))
    if scanned is not None:
        record["docs_scanned"] = int(scanned)
    if doc.get("cursorid"):
        record["cursor_id"] = int(doc["cursorid"])
    if doc.get("millis") is not None:
        record["millis"] = doc["millis"]
    if op == "insert" and doc.get("ninserted") is not None:
        record["ninserted"] = int(doc["ninserted"])  # how many documents a truncated insert wrote
    return record


def merge_oplog(records: list[dict], oplog: list[dict]) -> tuple[list[dict], dict]:
    """Fill profiler inserts that lack their documents from the oplog's inserts, matched by
    namespace in order (Flashback's pairing, per namespace). Returns the records and counts."""
    queues: dict[str, list] = {}
    for entry in oplog:
        if entry.get("op") == "i":
            queues.setdefault(entry["ns"], []).append(entry)
    filled = unmatched = 0
    for record in records:
        if record["op"] != "insert":
            continue
        docs = record["command"].get("documents")
        truncated = "$truncated" in record["command"] or not docs
        pending = queues.get(record["ns"], [])
        n = len(docs) if docs and not truncated else (record.get("ninserted") or 1)
        taken, pending[:] = pending[:n], pending[n:]
        if truncated:
            if taken:
                record["command"] = {"insert": record["ns"].split(".", 1)[1], "documents": [e["o"] for e in taken],
                                     "ordered": record["command"].get("ordered", True)}
                filled += 1
            else:
                unmatched += 1
    return records, {"filled_from_oplog": filled, "inserts_without_documents": unmatched}


def set_profiling(client, databases: list[str], profile_mb: int = 16) -> None:
    """Level 2 on each database, with a fresh system.profile of `profile_mb` (Flashback's default 16 MB)."""
    for name in databases:
        db = client[name]
        db.command("profile", 0)
        db.drop_collection("system.profile")
        db.create_collection("system.profile", capped=True, size=profile_mb << 20)
        db.command("profile", 2)


def _tail(collection, query: dict, sink: list, stop: threading.Event, errors: list, *, retry_s: float = 0.2) -> None:
    """Tail a capped collection until `stop`. mongod answers a tailable find on an empty capped
    collection (a freshly recreated system.profile) with cursor id 0, a dead cursor
    (SERVER-13955), and a tailable cursor also dies when its position is overwritten; so the
    cursor is re-opened until stopped, resuming after the last `ts` seen."""
    import pymongo
    last_ts = None
    try:
        while not stop.is_set():
            resume = dict(query) if last_ts is None else {**query, "ts": {"$gt": last_ts}}
            cursor = collection.find(resume, cursor_type=pymongo.CursorType.TAILABLE_AWAIT).max_await_time_ms(500)
            while cursor.alive and not stop.is_set():
                for doc in cursor:
                    sink.append(doc)
                    last_ts = doc.get("ts", last_ts)
                    if stop.is_set():
                        break
            cursor.close()
            stop.wait(retry_s)  # a dead cursor on an empty collection: ask again shortly
    except Exception as exc:  # a failing tail (not an empty one): the capped collection was probably too small
        errors.append(f"{collection.full_name}: {type(exc).__name__}: {exc} (is the capped collection too small?)")


def capture(client, databases: list[str], duration_s: float, path, *, profile_mb: int = 16,
            oplog: bool = True) -> dict:
    """Profile `databases` at level 2 for `duration_s`, tail the oplog, write the ops file; returns counts."""
    from bson.timestamp import Timestamp
    set_profiling(client, databases, profile_mb)
    start = datetime.now(timezone.utc)
    stop, errors = threading.Event(), []
    profiles = {name: [] for name in databases}
    entries: list = []
    threads = [threading.Thread(target=_tail, args=(client[name]["system.profile"], {"ts": {"$gte": start}},
                                                    profiles[name], stop, errors), daemon=True) for name in databases]
    from ..mongod.companion import hello as _hello
    is_replica_set = "setName" in _hello(client)   # hello only from 4.4.2/5.0; isMaster before
    if oplog and is_replica_set:
        query = {"ts": {"$gte": Timestamp(int(start.timestamp()), 0)}, "op": "i",
                 "ns": {"$regex": "^(" + "|".join(databases) + r")\."}}
        threads.append(threading.Thread(target=_tail, args=(client.local["oplog.rs"], query, entries, stop, errors),
                                        daemon=True))
    for t in threads:
        t.start()
    time.sleep(duration_s)
    stop.set()
    for t in threads:
        t.join(timeout=5)
    for name in databases:
        client[name].command("profile", 0)
    if errors:
        raise CaptureError("; ".join(errors))
    records = sorted((r for docs in profiles.values() for d in docs if (r := from_profile(d))), key=lambda r: r["ts"])
    records, counts = merge_oplog(records, entries)
    collections = {r["ns"].split(".", 1)[1]: {"capped_bytes": None, "indexes": []} for r in records}
    head = header("profiler", collections, origin={"databases": databases, "replica_set": is_replica_set,
                                                   "version": client.server_info().get("version")},
                  created_at=start.isoformat())
    written = write_capture(path, head, records)
    return {"ops": written, "profile_entries": sum(len(v) for v in profiles.values()), "oplog_inserts": len(entries),
            **counts}
