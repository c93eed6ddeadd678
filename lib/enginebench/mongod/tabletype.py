"""Whether a WiredTiger server really made the tables a system asked for (its LSM runs).

MongoDB has no LSM switch: the launch sets the collection and index config strings to `type=lsm`
(options.py). Servers from the 6.x line refuse such a table outright: mongodb/mongo's jstest
"Verify that collections cannot be created with the WiredTiger 'type=lsm' option" asserts that
createCollection with configString "type=lsm" fails with code 6627201 (a SERVER-66272 code); 8.1's
WiredTiger has no LSM at all (systems.py skips those before anything starts). Whatever a server
does with the string, collStats says what it made: `wiredTiger.type` is "lsm" or "file"
(WiredTigerRecordStore::appendCustomStats, mongodb r3.2.0 wiredtiger_record_store.cpp: "Type can
be "lsm" or "file"", beside `creationString`). A server that made anything but LSM tables ends the
system with the reason, before its numbers could be read as LSM's.
"""
from __future__ import annotations

LSM_REFUSED = 6627201
PROBE = "_enginebench_table_type"


class TableTypeRefused(RuntimeError):
    """The server did not make the tables the system asked for; the system stops with the reason."""


def table_type(collstats: dict) -> str | None:
    """collStats' wiredTiger.type ("lsm" or "file"), else what its creationString says."""
    wt = collstats.get("wiredTiger")
    if wt is None and isinstance(collstats.get("shards"), dict):
        # through mongos: a sharded collection's stats are per shard (each a mongod's collStats)
        wt = next((s.get("wiredTiger") for s in collstats["shards"].values() if isinstance(s, dict)), None)
    wt = wt or {}
    if isinstance(wt.get("type"), str):
        return wt["type"]
    creation = wt.get("creationString")
    if isinstance(creation, str):
        return "lsm" if "type=lsm" in creation else "file"
    return None


def check(db, collection: str, expected: str) -> str:
    """The table type collStats reports for `collection`; TableTypeRefused when it is not `expected`."""
    found = table_type(db.command("collStats", collection))
    if found != expected:
        made = f"{found} tables" if found else "an unknown kind of table"
        raise TableTypeRefused(f"system skipped: it asks for WiredTiger {expected.upper()} tables (type={expected}), "
                               f"but the server made {collection} as {made} (collStats wiredTiger.type); its "
                               "numbers would not be LSM's")
    return found


def probe(db, expected: str) -> str:
    """Create a collection with the server's default config string, read its type, drop it:
    before the workload, so that a server refusing LSM (code 6627201) stops the system at once."""
    from pymongo.errors import OperationFailure
    try:
        db.command("create", PROBE)
    except OperationFailure as exc:
        if exc.code == LSM_REFUSED:
            raise TableTypeRefused(f"system skipped: the server refuses WiredTiger {expected.upper()} tables "
                                   f"(code {LSM_REFUSED}: {(exc.details or {}).get('errmsg', exc)}); LSM was refused "
                                   "from the 6.x line and removed in 8.1") from None
        raise
    try:
        return check(db, PROBE, expected)
    finally:
        db.drop_collection(PROBE)
