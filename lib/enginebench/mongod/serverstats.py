"""The server's own counters, flattened for the interval tables, and its sizes after a phase.

serverStatus per interval: opcounters, WiredTiger cache traffic, eviction and checkpoints,
RocksDB's and TokuMX's sections where the build has them. Each value is cumulative as the server
reports it; the tables difference them per interval. dbStats and collStats after each phase.

WiredTiger renames and moves statistics between releases (its dist/stat_data.py, which
serverStatus.wiredTiger mirrors: a statistic's class prefix is its section, its description the
key). Each counter we keep has one name here, the spelling of the posts' 3.x servers, and lists
every later spelling; a counter a server reports under none of them is named by
`missing_counters`, so that the report says it is missing instead of showing nothing.
"""
from __future__ import annotations

# Our key -> the (section, statistic) spellings, oldest first. Sources, WiredTiger's
# dist/stat_data.py at these tags:
#   mongodb-3.0.0 .. mongodb-7.0.0  TxnStat 'transaction checkpoints' and 'transaction checkpoint
#                                   {total,most recent,max} time (msecs)' (section transaction)
#   mongodb-7.1.0, mongodb-7.2.0    CheckpointStat 'number of checkpoints started', '{total,most
#                                   recent,max} time (msecs)' (section checkpoint; WT-11171)
#   mongodb-7.3.0, mongodb-8.0.0+   CheckpointStat 'number of checkpoints started by api' (and by
#                                   compaction, counted apart), same time statistics
#   mongodb-8.1.0                   no CacheStat 'pages evicted by application threads' (only
#                                   EvictStat 'page evict attempts/failures by application threads')
WT_COUNTERS: dict[str, tuple[tuple[str, str], ...]] = {
    **{f"wt.cache: {name}": (("cache", name),) for name in (
        "bytes read into cache", "bytes written from cache", "bytes currently in the cache",
        "maximum bytes configured", "pages evicted by application threads", "unmodified pages evicted",
        "modified pages evicted", "pages read into cache", "pages written from cache")},
    "wt.txn: transaction checkpoints": (("transaction", "transaction checkpoints"),
                                        ("checkpoint", "number of checkpoints started"),
                                        ("checkpoint", "number of checkpoints started by api")),
    **{f"wt.txn: transaction checkpoint {what} time (msecs)": (
        ("transaction", f"transaction checkpoint {what} time (msecs)"), ("checkpoint", f"{what} time (msecs)"))
       for what in ("total", "most recent", "max")},
}
# Sections every mongod's serverStatus has (MongoDB 2.4 to 8.x), and the engine's own section.
COMMON_SECTIONS = ("opcounters", "mem", "storageEngine")
ENGINE_SECTIONS = {"wiredTiger": "wiredTiger", "rocksdb": "rocksdb", "PerconaFT": "PerconaFT", "tokuft": "tokuft"}


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
    for key, spellings in WT_COUNTERS.items():
        for section, name in spellings:
            value = (wt.get(section) or {}).get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = value
                break
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


def missing_counters(status: dict) -> list[str]:
    """What this serverStatus lacks of what the reports read: whole sections, and WiredTiger
    counters under none of their spellings. Empty for a complete mongod."""
    missing = [f"serverStatus.{section}" for section in COMMON_SECTIONS if not isinstance(status.get(section), dict)]
    engine = (status.get("storageEngine") or {}).get("name")
    section = ENGINE_SECTIONS.get(engine)
    if section and not isinstance(status.get(section), dict):
        missing.append(f"serverStatus.{section}")
    elif engine == "wiredTiger":
        found = flatten_server_status(status)
        missing += [f"serverStatus.wiredTiger counter {key.split(': ', 1)[1]!r}" for key in WT_COUNTERS
                    if key not in found]
    return missing


COLL_KEYS = ("count", "size", "storageSize", "totalIndexSize", "nindexes", "avgObjSize")
DB_KEYS = ("collections", "objects", "dataSize", "storageSize", "indexes", "indexSize", "fileSize", "totalSize")


def db_and_collection_stats(db, cluster_shards: list[str] | None = None) -> dict:
    """dbStats and per-collection sizes of a pymongo Database (3.x or 4.x). Behind mongos
    (`cluster_shards` named), a sharded collection's row also has `shards` ({shard: {count,
    share}}, sharding.spread) and `spread_ok`: whether every shard holds some of it."""
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
        out["collections"][name] = _collection_row(stats, cluster_shards)
    return out


def _collection_row(stats: dict, cluster_shards: list[str] | None) -> dict:
    from .sharding import spread
    from .tabletype import table_type
    row = {k: stats.get(k) for k in COLL_KEYS if k in stats}
    row["indexSizes"] = stats.get("indexSizes", {})
    kind = table_type(stats)
    if kind:
        row["wt_type"] = kind
    shares = spread(stats, cluster_shards) if cluster_shards else None
    if shares is not None:
        row["shards"] = shares
        row["spread_ok"] = all(s["count"] > 0 for s in shares.values())
    return row
