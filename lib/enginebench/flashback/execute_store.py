"""Running captured ops through the Store interface (embedded engines, or MongoStore).

An op captured at the Store level carries its exact Store call and replays exactly. An op captured
from a mongod carries only its command; the Store interface has no query planner, so only the
shapes that name one document by `_id` (or a whole collection) translate. Everything else is
not replayable here and is counted per type with the reason, never silently dropped: multi-document
updates and removes, filters on other fields, sorts, getMore, and commands other than count and
findAndModify on `_id`. Those replay in full against a mongod (execute_mongo).
"""
from __future__ import annotations

from typing import Callable

from ..stores.base import IndexSpec, Store
from .format import collection_of


class NotReplayable(Exception):
    """This op cannot be expressed as Store calls; the message says why."""


def _tuple(value):
    return tuple(value) if isinstance(value, list) else value


def _store_call(method: str, collection: str, args: dict) -> Callable[[Store], int]:
    """The exact Store call of a Store-level capture; returns documents scanned or written."""
    a = dict(args)
    for name in ("key", "prefix", "fields"):
        if name in a and a[name] is not None:
            a[name] = tuple(a[name])
    for name in ("low", "high"):  # a list bound was a tuple bound (JSON has no tuples)
        if name in a:
            a[name] = _tuple(a[name])
    if method == "insert_many":
        docs = a["docs"]
        return lambda store: store.insert_many(collection, docs)
    if method == "get":
        return lambda store: int(store.get(collection, a["index"], a["key"]) is not None)
    if method == "get_many":
        return lambda store: len(store.get_many(collection, a["index"], a["prefix"], a["last_values"]))
    if method == "scan":
        kwargs = {k: v for k, v in a.items() if k not in ("index", "prefix")}
        return lambda store: len(store.scan(collection, a.get("index"), a.get("prefix", ()), **kwargs))
    if method == "count":
        kwargs = {k: v for k, v in a.items() if k not in ("index", "prefix")}
        return lambda store: store.count(collection, a.get("index"), a.get("prefix", ()), **kwargs)
    if method == "update":
        kwargs = {k: v for k, v in a.items() if k not in ("index", "key")}
        return lambda store: int(store.update(collection, a["index"], a["key"], **kwargs).matched)
    if method == "delete":
        return lambda store: int(store.delete(collection, a["index"], a["key"], where=a.get("where")))
    if method == "create_collection":
        return lambda store: store.create_collection(collection, a.get("capped_bytes")) or 0
    if method == "create_index":
        s = a["spec"]
        spec = IndexSpec(s["name"], tuple((f, d) for f, d in s["fields"]), bool(s.get("unique")))
        return lambda store: store.create_index(collection, spec) or 0
    raise NotReplayable(f"unknown Store method {method!r}")


def _id_only(flt: dict, what: str):
    """The _id value of a filter that names exactly one document by _id."""
    if set(flt) != {"_id"} or isinstance(flt["_id"], dict):
        raise NotReplayable(f"{what}: the filter {sorted(flt)} is not an _id equality (the Store has no query planner)")
    return flt["_id"]


def _update_parts(u: dict, what: str) -> dict:
    if not u or not all(k.startswith("$") for k in u):
        raise NotReplayable(f"{what}: replacement documents are not Store updates")
    unknown = sorted(set(u) - {"$set", "$inc", "$setOnInsert"})
    if unknown:
        raise NotReplayable(f"{what}: update operators {unknown} have no Store equivalent")
    return {"set": u.get("$set"), "inc": u.get("$inc"), "set_on_insert": u.get("$setOnInsert")}


def store_call_args(record: dict) -> dict:
    """The Store call ({"method", "args"}) a mongod-captured command stands for, where it names
    one document by _id or a whole collection; raises NotReplayable saying why not."""
    op, cmd = record["op"], record["command"]
    if op == "insert":
        if not cmd.get("documents"):
            raise NotReplayable("insert: the capture has no documents (profiler truncated them and no oplog entry matched)")
        return {"method": "insert_many", "args": {}}  # the documents stay in the command
    if op == "query":
        flt = cmd.get("filter", {})
        if cmd.get("sort"):
            raise NotReplayable("query: sorted finds need a query planner")
        if not flt:
            return {"method": "scan", "args": {"index": None, "skip": cmd.get("skip", 0), "limit": cmd.get("limit") or None}}
        return {"method": "get", "args": {"index": None, "key": [_id_only(flt, "query")]}}
    if op == "count":
        flt = cmd.get("query") or {}
        if flt:
            return {"method": "get", "args": {"index": None, "key": [_id_only(flt, "count")]}}
        return {"method": "count", "args": {"index": None, "limit": cmd.get("limit") or None}}
    if op == "update":
        (u,) = cmd["updates"] if len(cmd.get("updates", [])) == 1 else (None,)
        if u is None:
            raise NotReplayable("update: only single-statement updates translate")
        if u.get("multi"):
            raise NotReplayable("update: multi-document updates need a query planner")
        return {"method": "update", "args": {"index": None, "key": [_id_only(u["q"], "update")],
                                             "upsert": bool(u.get("upsert")), **_update_parts(u["u"], "update")}}
    if op == "remove":
        (d,) = cmd["deletes"] if len(cmd.get("deletes", [])) == 1 else (None,)
        if d is None or d.get("limit") != 1:
            raise NotReplayable("remove: multi-document removes need a query planner")
        return {"method": "delete", "args": {"index": None, "key": [_id_only(d["q"], "remove")]}}
    if op == "findandmodify":
        if cmd.get("remove") or cmd.get("sort") or cmd.get("fields"):
            raise NotReplayable("findandmodify: remove, sort and fields have no Store equivalent")
        return {"method": "update", "args": {"index": None, "key": [_id_only(cmd.get("query", {}), "findandmodify")],
                                             "upsert": bool(cmd.get("upsert")), "return_before": True,
                                             **_update_parts(cmd.get("update", {}), "findandmodify")}}
    raise NotReplayable(f"{op}: replays only against a mongod")


def prepare(record: dict) -> Callable[[Store], int]:
    """A function store -> documents scanned (reads) or affected (writes); raises NotReplayable."""
    collection = collection_of(record)
    store = record.get("store") or store_call_args(record)
    args = store["args"]
    if store["method"] == "insert_many" and "docs" not in args:
        args = {**args, "docs": record["command"]["documents"]}
    return _store_call(store["method"], collection, args)
