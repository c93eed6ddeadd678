"""A Store call as the MongoDB command it stands for.

A Store-level capture keeps the exact Store call (which replays exactly on any Store) and, next to
it, the command a mongod would have received for it, so the same ops file also replays against a
real deployment and reads like a profiler capture. The translation follows MongoStore
(stores/mongo.py): filters on an index's fields, sorted in index order, hinted to that index.
"""
from __future__ import annotations

from ..stores.base import IndexSpec
from ..stores import mongo_filters

ID_INDEX = IndexSpec("_id_", (("_id", 1),), unique=True)


def _spec(indexes: dict[str, IndexSpec], index: str | None) -> IndexSpec:
    if index is None:
        return ID_INDEX
    try:
        return indexes[index]
    except KeyError:
        raise KeyError(f"index {index!r} was not created through the capturing store") from None


def key_filter(spec: IndexSpec, key, where: dict | None = None) -> dict:
    flt = dict(zip(spec.field_names, key))
    flt.update(where or {})
    return flt


def range_filter(spec: IndexSpec, prefix=(), low=None, high=None) -> dict:
    return mongo_filters.range_filter(spec.field_names, prefix, low, high)


def _sort(spec: IndexSpec, reverse: bool) -> dict:
    return {f: (-d if reverse else d) for f, d in spec.fields}


def to_command(method: str, collection: str, args: dict, indexes: dict[str, IndexSpec]) -> tuple[str, dict]:
    """(op type, command document) for one Store call; `args` by parameter name."""
    if method == "insert_many":
        return "insert", {"insert": collection, "documents": list(args["docs"]), "ordered": False}
    if method in ("update", "delete", "get"):
        spec = _spec(indexes, args.get("index"))
        flt = key_filter(spec, args["key"], args.get("where"))
        hint = spec.name
        if method == "get":
            return "query", {"find": collection, "filter": flt, "limit": 1, "singleBatch": True, "hint": hint}
        if method == "delete":
            return "remove", {"delete": collection, "deletes": [{"q": flt, "limit": 1, "hint": hint}]}
        u = mongo_filters.update_document(args.get("set"), args.get("inc"), args.get("set_on_insert"))
        if args.get("return_before"):
            return "findandmodify", {"findAndModify": collection, "query": flt, "update": u, "new": False,
                                     "upsert": bool(args.get("upsert")), "hint": hint}
        return "update", {"update": collection, "updates": [{"q": flt, "u": u, "upsert": bool(args.get("upsert")),
                                                             "multi": False, "hint": hint}]}
    if method == "get_many":
        spec = _spec(indexes, args["index"])
        prefix = tuple(args["prefix"])
        flt = dict(zip(spec.field_names, prefix))
        flt[spec.field_names[len(prefix)]] = {"$in": list(args["last_values"])}
        return "query", {"find": collection, "filter": flt, "sort": _sort(spec, False), "hint": spec.name}
    if method == "scan":
        spec = _spec(indexes, args.get("index"))
        cmd = {"find": collection, "filter": range_filter(spec, args.get("prefix", ()), args.get("low"), args.get("high")),
               "sort": _sort(spec, bool(args.get("reverse"))), "hint": spec.name}
        if args.get("fields") is not None:
            cmd["projection"] = {**{f: 1 for f in args["fields"]}, "_id": 0}
        if args.get("skip"):
            cmd["skip"] = args["skip"]
        if args.get("limit"):
            cmd["limit"] = args["limit"]
        return "query", cmd
    if method == "count":
        spec = _spec(indexes, args.get("index"))
        cmd = {"count": collection, "query": range_filter(spec, args.get("prefix", ()), args.get("low"), args.get("high")),
               "hint": spec.name}
        if args.get("limit"):
            cmd["limit"] = args["limit"]
        return "count", cmd
    if method == "create_collection":
        cmd = {"create": collection}
        if args.get("capped_bytes"):
            cmd.update(capped=True, size=args["capped_bytes"])
        return "command", cmd
    if method == "create_index":
        spec = args["spec"]
        return "command", {"createIndexes": collection, "indexes": [
            {"key": dict(spec.fields), "name": spec.name, **({"unique": True} if spec.unique else {})}]}
    raise ValueError(f"no MongoDB command for Store method {method!r}")
