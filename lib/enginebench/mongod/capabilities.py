"""What a server can do for the workloads, probed once when a MongoStore opens, and what it
cannot, named: a feature a server lacks must show up in the report as a named gap, never as a
crash or as a number that silently went missing.

Probed from the server itself (the same code under pymongo 3.x and 4.x):
  identity      serverStatus.process: "mongod" or "mongos" for MongoDB's own servers; anything
                else (the stand-in wire-protocol server of the CI tests names itself there) is not
                a mongod, and the report says which server it was
  serverStatus  the sections and WiredTiger counters the interval tables read (serverstats.py)
  profiler      the `profile` command, read-only form {profile: -1} (Flashback's capture needs it)
  oplog         a replica-set member or mongos (a standalone has no oplog)
  hints         a find hinted at an index that does not exist must fail: mongod refuses it with
                BadValue "hint provided does not correspond to an existing index"; a server that
                answers it ignores hints, and the plans the workloads ask for are not the ones run
  capped        creating a small capped collection (the flashback mix's event log is one)
  unacknowledged  only when the client asks for w:0 (the TokuMX tests, as the post's shell loops
                sent): an unacknowledged insert, then an acknowledged read on the same client; a
                server that refuses the fire-and-forget message (the stand-in answers "flags=2 not
                yet supported" and drops the connection) gets acknowledged writes, named as a gap
Probe collections live in the store's own database and are dropped at once.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .serverstats import missing_counters

MONGODB_PROCESSES = ("mongod", "mongos", "mongod.exe", "mongos.exe")
PROBE = "_enginebench_probe"
NO_SUCH_INDEX = "_enginebench_no_such_index"
W0_WAIT_S = 2.0


@dataclass
class Capabilities:
    process: str | None
    profiler: bool
    oplog: bool
    hints: bool
    capped: bool
    unacknowledged: bool = True   # w:0 writes accepted (probed only when asked for)
    missing_stats: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)   # feature -> what the server answered

    @property
    def is_mongodb(self) -> bool:
        return self.process in MONGODB_PROCESSES

    def gaps(self, transactions: bool) -> list[str]:
        """One line per missing feature, for the report's banner."""
        out = []
        if not transactions:
            out.append("multi-document transactions (they need a 4.0+ replica set, or a 4.2+ mongos, with "
                       "wiredTiger or inMemory): LinkBench's count rows were written without them")
        if not self.profiler:
            out.append(f"the profiler ({self.notes.get('profiler', 'no profile command')}): no capture from it")
        if not self.oplog:
            out.append("an oplog (the server is no replica-set member): no replication lag, no stale-secondary "
                       "detection, no oplog writes beside the op1 systems' own")
        if not self.hints:
            out.append("index hints (a hint to an index that does not exist was answered, not refused): the "
                       "server chose its own plans")
        if not self.capped:
            out.append(f"capped collections ({self.notes.get('capped', 'refused')}): they were created as ordinary "
                       "collections, so their inserts are plain inserts")
        if not self.unacknowledged:
            out.append(f"unacknowledged writes ({self.notes.get('unacknowledged', 'refused')}): writes were "
                       "acknowledged (w:1) instead of the params' w:0, so rates count writes done, not sent")
        if self.missing_stats:
            out.append("serverStatus statistics: " + ", ".join(self.missing_stats) + " (their columns are absent, "
                       "not zero)")
        return out


def _error(exc: Exception) -> str:
    return str(getattr(exc, "details", None) and exc.details.get("errmsg") or exc)


def probe(client, db, hello: dict, status: dict, engine_status: dict | None = None) -> Capabilities:
    """Probe the server behind a pymongo client; `db` is the store's database, `hello` its
    handshake, `status` one serverStatus reply and `engine_status` the serverStatus the engine
    counters come from (a shard primary's behind mongos; else `status`)."""
    from pymongo.errors import OperationFailure, PyMongoError

    notes: dict[str, str] = {}
    unacknowledged = _unacknowledged_writes(client, db, notes)
    # Every other probe must see the server's answer, whatever write concern the store asks for.
    db = client.get_database(db.name, write_concern=_acknowledged())
    try:
        db.command("profile", -1)   # -1 reads the level and changes nothing
        profiler = True
    except PyMongoError as exc:
        profiler, notes["profiler"] = False, _error(exc)
    mongos = hello.get("msg") == "isdbgrid"
    oplog = "setName" in hello or mongos
    try:
        db[PROBE].insert_one({"_id": 0})
        try:
            list(db[PROBE].find({}).hint([(NO_SUCH_INDEX, 1)]))
            hints = False
        except OperationFailure:
            hints = True
    finally:
        db.drop_collection(PROBE)
    try:
        db.create_collection(PROBE + "_capped", capped=True, size=4096)
        capped = True
    except OperationFailure as exc:
        capped, notes["capped"] = False, _error(exc)
    finally:
        db.drop_collection(PROBE + "_capped")
    return Capabilities(process=status.get("process"), profiler=profiler, oplog=oplog, hints=hints, capped=capped,
                        unacknowledged=unacknowledged, missing_stats=missing_counters(engine_status or status),
                        notes=notes)


def _unacknowledged_writes(client, db, notes: dict) -> bool:
    """Whether w:0 writes work on this server; True when the client does not ask for them. The
    insert is fire-and-forget, so it is looked for with acknowledged reads for up to W0_WAIT_S: a
    server that dropped it (or the connection it came on) never shows it."""
    import time

    from pymongo.errors import PyMongoError
    if (client.write_concern.document or {}).get("w") != 0:
        return True
    probe = db[PROBE + "_w0"]
    try:
        probe.insert_one({"_id": 0})
        deadline = time.monotonic() + W0_WAIT_S
        while time.monotonic() < deadline:
            if probe.with_options(write_concern=_acknowledged()).find_one({"_id": 0}) is not None:
                return True
            time.sleep(0.05)
        notes["unacknowledged"] = f"an unacknowledged insert never arrived within {W0_WAIT_S:g} s"
    except PyMongoError as exc:
        notes["unacknowledged"] = _in_words(exc)
    finally:
        try:
            db.drop_collection(PROBE + "_w0")
        except PyMongoError:
            pass
    return False


def _in_words(exc) -> str:
    """What a failed fire-and-forget insert says of the server, in words: a server that does not
    take the message drops the connection, which a driver reports as a mismatched or missing
    reply ("Got response id ... but expected ...", a reset connection)."""
    from pymongo.errors import AutoReconnect, ProtocolError
    text = _error(exc) or type(exc).__name__
    if isinstance(exc, (AutoReconnect, ProtocolError)) or "but expected" in text:
        return ("the server does not take unacknowledged (fire-and-forget) writes: it dropped the connection "
                f"the insert came on (the driver said: {text})")
    return text


def _acknowledged():
    from pymongo.write_concern import WriteConcern
    return WriteConcern(w=1)
