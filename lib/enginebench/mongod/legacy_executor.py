"""The legacy executor: the workloads' commands sent to servers older than the Rust driver speaks
to (the posts' MongoDB 3.0 and 3.2), through pymongo 3.

    .venv-legacy/bin/python -m enginebench.mongod.legacy_executor

The native runner generates every operation and builds its command document once
(lib/native/src/executors/server/commands.rs); for a server the Rust driver cannot reach, each
worker thread hands its commands to one of these processes over JSON lines (jsonlines.py). Each
command kind maps to the pymongo 3 call that sends it the way that server understands: pymongo
3 uses the write commands and `find` where the server has them and the older wire messages
where it does not (3.0 has no `find` command), which a raw `command` could not.

  open     {uri, database}: connect
  command  {cmd}: run one command document; the reply as the server's own command reply shape
           (a find's documents under cursor.firstBatch, its cursor exhausted)
  close    disconnect
"""
from __future__ import annotations

import sys

import pymongo
from pymongo import DeleteOne, ReplaceOne, UpdateOne
from pymongo.errors import BulkWriteError

from . import jsonlines

WRITE_KINDS = ("insert", "update", "delete")


def _collection(db, cmd: dict, kind: str):
    write_concern = cmd.get("writeConcern")
    coll = db[cmd[kind]]
    if write_concern is not None:
        from pymongo.write_concern import WriteConcern
        coll = coll.with_options(write_concern=WriteConcern(**write_concern))
    return coll


def _write_reply(result, upserts: bool) -> dict:
    """A BulkWriteResult as the write command's reply: n, nModified, upserted."""
    if not result.acknowledged:
        return {"ok": 1}
    details = result.bulk_api_result
    reply = {"ok": 1, "n": details.get("nInserted", 0) + details.get("nMatched", 0) + details.get("nRemoved", 0)
             + details.get("nUpserted", 0), "nModified": details.get("nModified", 0)}
    if upserts and details.get("upserted"):
        reply["upserted"] = details["upserted"]
    return reply


def _find(db, cmd: dict) -> dict:
    kwargs = {"filter": cmd.get("filter") or {}, "projection": cmd.get("projection")}
    if cmd.get("sort"):
        kwargs["sort"] = list(cmd["sort"].items())
    for field in ("skip", "limit"):
        if cmd.get(field):
            kwargs[field] = int(cmd[field])
    cursor = db[cmd["find"]].find(**kwargs)
    if cmd.get("hint"):
        cursor = cursor.hint(cmd["hint"])
    docs = list(cursor)
    return {"ok": 1, "cursor": {"id": 0, "ns": f"{db.name}.{cmd['find']}", "firstBatch": docs}}


def _bulk(db, cmd: dict, kind: str) -> dict:
    coll = _collection(db, cmd, kind)
    ordered = cmd.get("ordered", True)
    if kind == "insert":
        requests = [pymongo.InsertOne(doc) for doc in cmd["documents"]]
    elif kind == "update":
        requests = [ReplaceOne(u["q"], u["u"], upsert=u.get("upsert", False))
                    if not any(k.startswith("$") for k in u["u"]) else
                    UpdateOne(u["q"], u["u"], upsert=u.get("upsert", False)) for u in cmd["updates"]]
    else:
        requests = [DeleteOne(d["q"]) for d in cmd["deletes"]]
    try:
        return _write_reply(coll.bulk_write(requests, ordered=ordered), upserts=kind == "update")
    except BulkWriteError as exc:  # the command's own reply shape: the runner reads writeErrors
        details = exc.details
        return {"ok": 1, "n": details.get("nInserted", 0) + details.get("nMatched", 0),
                "writeErrors": [{"index": e.get("index"), "code": e.get("code"), "errmsg": e.get("errmsg")}
                                for e in details.get("writeErrors", [])]}


class LegacyExecutor:
    def __init__(self):
        self.client = None
        self.db = None

    def open(self, request: dict) -> dict:
        # Acknowledged by default whatever the URI says: the runner puts w:0 into the commands that
        # may take it (only where the server accepts unacknowledged writes).
        self.client = pymongo.MongoClient(request["uri"], w=1, serverSelectionTimeoutMS=int(request.get("timeout_ms", 10000)))
        self.db = self.client[request["database"]]
        return {"pymongo": pymongo.version}

    def command(self, cmd: dict) -> dict:
        kind = next(iter(cmd))
        if kind == "find":
            return _find(self.db, cmd)
        if kind in WRITE_KINDS:
            return _bulk(self.db, cmd, kind)
        # count, findAndModify, create, createIndexes and the rest: commands every server has
        return self.db.command(cmd)

    def handle(self, op: str, request: dict):
        if op == "open":
            return self.open(request)
        if op == "command":
            return self.command(request["cmd"])
        if op == "close":
            if self.client is not None:
                self.client.close()
            return None
        raise ValueError(f"unknown legacy executor request {op!r}; allowed: open, command, close")


def main() -> int:
    return jsonlines.serve(LegacyExecutor().handle)


if __name__ == "__main__":
    sys.exit(main())
