"""Whether a WiredTiger server really made the tables a system asked for (its LSM runs).

MongoDB has no LSM switch: the launch sets the collection and index config strings to `type=lsm`
(options.py). A server with SERVER-66272 refuses a `type=lsm` config string outright:
WiredTigerUtil::checkTableCreationOptions (mongodb/mongo src/mongo/db/storage/wiredtiger/
wiredtiger_util.cpp at 1a5cebdcd68691ce7e3f4e7b1caf367033000e7a) returns
`{ErrorCodes::Error(6627201), "Configuration 'type=lsm' is not supported."}`, which its jstest
("Verify that collections cannot be created with the WiredTiger 'type=lsm' option") asserts for
createCollection. That check reads a collection's own `configString` (parseOptionsField); the
startup strings the launch sets reach the engine another way (setRecordStoreExtraOptions,
wiredtiger_init.cpp), so whatever a server does with those, collStats says what it made: `wiredTiger.type` is "lsm" or "file"
(WiredTigerRecordStore::appendCustomStats, mongodb r3.2.0 wiredtiger_record_store.cpp: "Type can
be "lsm" or "file"", beside `creationString`). 8.1's WiredTiger has no LSM at all (systems.py
skips those before anything starts).

A server that refuses LSM tables, or makes anything but LSM tables, does not fail the run: the
system is skipped with the server's words and its version (driver.py reads the refusal the
companion writes down, `refusal_file`), and the systems after it run.
"""
from __future__ import annotations

import json
from pathlib import Path

LSM_REFUSED = 6627201
PROBE = "_enginebench_table_type"


class TableTypeRefused(RuntimeError):
    """The server did not make the tables the system asked for; the system is skipped with the reason.
    `details`: what the driver records (server_code, server_said, version, collection, reason)."""

    def __init__(self, reason: str, **details):
        super().__init__(reason)
        self.details = {"reason": reason, **details}


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


def _server(version: str | None) -> str:
    return f"the server (version {version})" if version else "the server"


def check(db, collection: str, expected: str, version: str | None = None) -> str:
    """The table type collStats reports for `collection`; TableTypeRefused when it is not `expected`."""
    found = table_type(db.command("collStats", collection))
    if found != expected:
        made = f"{found} tables" if found else "an unknown kind of table"
        said = f"collStats wiredTiger.type: {found!r}"
        raise TableTypeRefused(f"it asks for WiredTiger {expected.upper()} tables (type={expected}), but "
                               f"{_server(version)} made {collection} as {made} ({said}); its numbers would not be "
                               "LSM's", server_said=said, version=version, collection=collection)
    return found


def probe(db, expected: str, version: str | None = None) -> str:
    """Create a collection with the server's default config string, read its type, drop it:
    before the workload, so that a server refusing LSM (code 6627201) skips the system at once."""
    from pymongo.errors import OperationFailure
    try:
        db.command("create", PROBE)
    except OperationFailure as exc:
        if exc.code == LSM_REFUSED:
            said = (exc.details or {}).get("errmsg") or str(exc)
            raise TableTypeRefused(f"{_server(version)} refuses WiredTiger {expected.upper()} "
                                   f"tables (code {LSM_REFUSED}: {said}); SERVER-66272, and WiredTiger has no LSM "
                                   "from 8.1", server_code=LSM_REFUSED, server_said=said, version=version,
                                   collection=PROBE) from None
        raise
    try:
        return check(db, PROBE, expected, version)
    finally:
        db.drop_collection(PROBE)


def write_refusal(path: str | Path | None, refused: TableTypeRefused) -> None:
    """The refusal as the driver reads it after the runner ends (refusal_file)."""
    if path:
        Path(path).write_text(json.dumps(refused.details, indent=2, default=str))


def refusal_file(path: Path) -> dict | None:
    """What a companion wrote when the server refused the system's tables, or None."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
