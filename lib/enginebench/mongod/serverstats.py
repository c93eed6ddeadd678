"""The server's own counters, flattened for the interval tables, and its sizes after a phase.

serverStatus per interval: opcounters, WiredTiger cache traffic, eviction and checkpoints,
RocksDB's and TokuMX's sections where the build has them. Each value is cumulative as the server
reports it; the tables difference them per interval. dbStats and collStats after each phase.
"""
from __future__ import annotations

WT_CACHE = ("bytes read into cache", "bytes written from cache", "bytes currently in the cache",
            "maximum bytes configured", "pages evicted by application threads", "unmodified pages evicted",
            "modified pages evicted", "pages read into cache", "pages written from cache")
WT_TXN = ("transaction checkpoints", "transaction checkpoint total time (msecs)",
          "transaction checkpoint most recent time (msecs)", "transaction checkpoint max time (msecs)")


def _numbers(prefix: str, section: dict, depth: int = 2) -> dict:
    out = {}
    for key, value in section.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            out[f"{prefix}.{key}"] = value
        elif isinstance(value, dict) and depth > 1:
            out.update(_numbers(f"{prefix}.{key}", value, depth - 1))
    return out


def flatten_server_status(status: dict) -> dict:
    out = {f"opcounters.{k}": v for k, v in status.get("opcounters", {}).items() if isinstance(v, (int, float))}
    if "opcountersRepl" in status:
        out.update({f"opcountersRepl.{k}": v for k, v in status["opcountersRepl"].items()
                    if isinstance(v, (int, float))})
    wt = status.get("wiredTiger") or {}
    for name in WT_CACHE:
        if name in wt.get("cache", {}):
            out[f"wt.cache: {name}"] = wt["cache"][name]
    for name in WT_TXN:
        if name in wt.get("transaction", {}):
            out[f"wt.txn: {name}"] = wt["transaction"][name]
    for section in ("rocksdb", "ft", "PerconaFT", "tokuft"):
        # MongoRocks/Percona RocksDB and the fractal-tree engines report their own sections;
        # nested maps (compaction stats, cachetable, checkpoint) are kept two levels deep.
        if isinstance(status.get(section), dict):
            out.update(_numbers(section, status[section]))
    mem = status.get("mem") or {}
    for key in ("resident", "virtual", "mapped"):
        if isinstance(mem.get(key), (int, float)):
            out[f"mem.{key}_mb"] = mem[key]
    return out


COLL_KEYS = ("count", "size", "storageSize", "totalIndexSize", "nindexes", "avgObjSize")
DB_KEYS = ("collections", "objects", "dataSize", "storageSize", "indexes", "indexSize", "fileSize", "totalSize")


def db_and_collection_stats(db) -> dict:
    """dbStats and per-collection sizes of a pymongo Database (3.x or 4.x)."""
    out = {"db": {k: v for k, v in db.command("dbStats").items() if k in DB_KEYS}, "collections": {}}
    for name in db.list_collection_names():
        try:
            stats = db.command("collStats", name)
        except Exception as exc:  # collStats gave way to $collStats in new servers
            try:
                agg = next(db[name].aggregate([{"$collStats": {"storageStats": {}}}]))["storageStats"]
                stats = agg
            except Exception:
                out["collections"][name] = {"error": str(exc)}
                continue
        row = {k: stats.get(k) for k in COLL_KEYS if k in stats}
        row["indexSizes"] = stats.get("indexSizes", {})
        creation = (stats.get("wiredTiger") or {}).get("creationString", "")
        if creation:
            row["wt_type"] = "lsm" if "type=lsm" in creation else "file"
        out["collections"][name] = row
    return out
