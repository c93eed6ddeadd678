"""Slow operations as the server records them: its profiler, at a slowms threshold.

The iibench post counted Nslow from the server's log of slow operations, i.e. the server's own
time per insert, not the client's. Profiling level 1 records exactly the operations at or above
`slowms` (the same threshold that puts them in the log) in the capped `system.profile`, which a
client can read back under TARGET=mongod and TARGET=uri alike (the log file may be elsewhere).
MongoDB manual, "Database Profiler": `{profile: 1, slowms: n}`; a larger `system.profile` is made
by turning profiling off, dropping it and creating it capped at the new size.
"""
from __future__ import annotations

import pymongo.errors

PROFILE = "system.profile"
# Room for ~100k profile entries of an insert of 10 iibench documents (about 1 KB each without
# the documents, which the profiler leaves out): far more slow inserts than any run had.
PROFILE_MB = 64
# system.profile is capped: once this full, its oldest entries may have been overwritten.
FULL_SHARE = 0.95


class SlowOpsUnavailable(RuntimeError):
    """The server cannot record slow operations (a mongos, or a server without the profiler);
    the message says why, for the report."""


def start(store, threshold_ms: int) -> None:
    """Record operations of at least threshold_ms in the server's system.profile, from an empty
    one. `store`: the companion (companion.py), connected to the server."""
    if store.mongos:
        raise SlowOpsUnavailable("a mongos has no profiler of its own (each shard keeps one)")
    if not store.capabilities.profiler:
        raise SlowOpsUnavailable(f"the server has no profiler: {store.capabilities.notes.get('profiler', 'no profile command')}")
    db = store.db
    try:
        db.command("profile", 0)
        db.drop_collection(PROFILE)
        db.create_collection(PROFILE, capped=True, size=PROFILE_MB << 20)
        db.command("profile", 1, slowms=threshold_ms)
    except pymongo.errors.PyMongoError as exc:
        raise SlowOpsUnavailable(f"the server refused its profiler ({exc})") from exc


def count(store, collection: str, op: str, threshold_ms: int) -> dict:
    """How many `op` operations on `collection` took at least threshold_ms, by the server's clock;
    profiling stops first so that the count is final."""
    db = store.db
    try:
        db.command("profile", 0)
        found = db[PROFILE].count_documents({"ns": f"{db.name}.{collection}", "op": op,
                                             "millis": {"$gte": threshold_ms}})
        stats = db.command("collStats", PROFILE)
    except pymongo.errors.PyMongoError as exc:
        raise SlowOpsUnavailable(f"the server's profile could not be read ({exc})") from exc
    full = stats.get("size", 0) >= FULL_SHARE * (stats.get("maxSize") or PROFILE_MB << 20)
    return {"count": found, "threshold_ms": threshold_ms, "profile_full": full}
