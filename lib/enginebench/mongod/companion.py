"""The server's companion: what the native runner needs of a server besides the workload's own
commands, answered with pymongo (3.x for the posts' old servers, 4.x for today's).

    python -m enginebench.mongod.companion [--table-type lsm] [--refusal-file PATH] [--splits JSON]

The native runner starts one companion per server system and speaks JSON lines to it
(jsonlines.py). The workload's commands go from the runner to the server directly, through the
Rust driver, or through the legacy executor (legacy_executor.py) for servers older than that
driver; everything else stays here, where pymongo already speaks every server generation:

  open          connect, probe what the server can do (capabilities.py), drop a borrowed
                deployment's database, start the stale-secondary watches; answers the server's
                identity, engine, version, gaps and whether it has transactions
  stats         serverStatus flattened for the interval tables (serverstats.py), the shards'
                engines summed behind mongos, replication lag; and a stale secondary, once found
  phase_stats   dbStats and collStats after a phase, with each sharded collection's share per shard
  checkpoint    fsync before the quiesce
  stale         the stale secondary the watches found, or null (polled every second)
  created       a collection the workload created: sharded on a sharded deployment (sharding.py); the
                first one's WiredTiger table type checked when the system asks for LSM (tabletype.py).
                A server that refuses the tables (at open or here) answers with the error, and the
                refusal (the server's words, its version) goes to --refusal-file, from which the
                driver records the system as skipped, not failed
  slow_ops_start / slow_ops_count
                the server's profiler records operations at or above a threshold, then counts
                them (slowops.py: iibench's Nslow as the post counted it)
  close         stop the watches, drop a borrowed database (unless keep_data), disconnect
"""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager

import pymongo
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.write_concern import WriteConcern

from . import jsonlines

TRANSACTION_ENGINES = ("wiredTiger", "inMemory")


def hello(client) -> dict:
    """`hello` exists from 3.6.21, 4.0.21, 4.2.10 and 4.4.2 on; older servers (the posts' 3.0.7 and
    3.2.0, TokuMX) refuse it as an unknown command and answer isMaster."""
    try:
        return client.admin.command("hello")
    except OperationFailure:
        return client.admin.command("isMaster")


class Companion:
    def __init__(self, table_type: str | None = None, splits: dict | None = None, refusal_file: str | None = None):
        self.table_type = table_type   # the WiredTiger table type the system asks for (LSM runs)
        self.refusal_file = refusal_file   # where a server's refusal of those tables is written down
        self.version: str | None = None
        self.table_checked = False
        self.splits = splits or {}     # collection -> split points (sharding.split_points)
        self.shard_names: list[str] = []
        self.client = None
        self.db = None
        self.shard_clients: list = []
        self.watches: list = []
        self.stale: dict | None = None
        self.mongos = False
        self.capabilities = None
        self.drop = False
        self.keep_data = False

    # -- open ---------------------------------------------------------------------------------
    def open(self, request: dict) -> dict:
        uri, database = request["uri"], request["database"]
        self.drop, self.keep_data = bool(request.get("drop_database")), bool(request.get("keep_data"))
        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=int(request.get("timeout_ms", 10000)))
        self.db = self.client[database]
        greeting = hello(self.client)
        build = self.client.admin.command("buildInfo")
        self.mongos = greeting.get("msg") == "isdbgrid"
        replica_set = "setName" in greeting or self.mongos
        self.version = build.get("version")
        version = tuple(int(x) for x in (build.get("versionArray") or build["version"].split("."))[:2])
        try:
            status = self.client.admin.command("serverStatus")
        except PyMongoError as exc:  # a user without clusterMonitor: every section is then missing
            status = {"process": f"unknown (serverStatus refused: {exc})"}
        engine = (status.get("storageEngine") or {}).get("name", "unknown")
        needed = (4, 2) if self.mongos else (4, 0)
        atomic = replica_set and version >= needed and (engine in TRANSACTION_ENGINES or self.mongos)
        if self.mongos:
            from .sharding import shard_uris
            shards = shard_uris(self.client.admin.command("listShards"))
            self.shard_names = list(shards)
            # each shard's replica set through its own client: engine counters from its primary
            self.shard_clients = [pymongo.MongoClient(u, serverSelectionTimeoutMS=5000) for u in shards.values()]
        if self.drop:  # a borrowed deployment: start from an empty database
            self._drop_database()
        from .capabilities import probe
        engine_status = self.shard_clients[0].admin.command("serverStatus") if self.shard_clients else status
        capabilities = self.capabilities = probe(self.client, self.db, greeting, status, engine_status)
        if self.table_type:  # before the workload: a server refusing LSM skips the system now
            from . import tabletype
            with self._refusal():
                tabletype.probe(self.client.get_database(self.db.name, write_concern=WriteConcern(w=1)),
                                self.table_type, self.version)
        self.watches = self._watch(request.get("watch") or {})
        flavour = {k: build[k] for k in ("psmdbVersion", "tokumxVersion", "tokukvVersion") if k in build}
        return {"engine": engine, "version": build["version"], "atomic": atomic,
                "max_wire_version": greeting.get("maxWireVersion", 0),
                "unacknowledged": capabilities.unacknowledged, "capped": capabilities.capped,
                "config": {"gitVersion": build.get("gitVersion"), "replica_set": replica_set, "mongos": self.mongos,
                           "transactions": atomic, "server_process": capabilities.process,
                           "gaps": capabilities.gaps(atomic), "companion_pymongo": pymongo.version, **flavour}}

    def _watch(self, watch: dict) -> list:
        """One StaleWatch per multi-member replica set of a launched deployment: a too-stale
        secondary is a finding (the TokuMX post's RS102), reported by the next `stats`."""
        if not watch.get("replsets"):
            return []
        from .replication import StaleWatch

        def on_stale(event: dict) -> None:
            self.stale = event
        return [StaleWatch(pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000), watch.get("lag_sample_s", 1.0),
                           on_stale).start() for uri in watch["replsets"].values()]

    # -- while the workload runs --------------------------------------------------------------
    def stats(self) -> dict:
        from .serverstats import flatten_server_status
        try:
            out = flatten_server_status(self.client.admin.command("serverStatus"))
            if self.shard_clients:
                from .sharding import sum_shard_counters
                out = sum_shard_counters(out, [flatten_server_status(c.admin.command("serverStatus"))
                                               for c in self.shard_clients])
        except PyMongoError:
            out = {}
        for watch in self.watches:
            out.update({f"repl.lag_s: {member}": lag for member, lag in watch.lag.items()})
        return {"counters": out, "stale_secondary": self.stale}

    def phase_stats(self) -> dict:
        from .serverstats import db_and_collection_stats
        return db_and_collection_stats(self.db, self.shard_names)

    def checkpoint(self) -> None:
        # fsync makes the data durable (a WiredTiger checkpoint, an mmapv1 flush) before the quiesce.
        try:
            self.client.admin.command("fsync")
        except PyMongoError:
            pass  # e.g. inMemory has nothing to flush

    def created(self, request: dict) -> dict | None:
        """Shards a new, empty collection on a sharded deployment (capped ones cannot be), and
        checks the first one's table type where the system asks for one."""
        key = None
        if self.mongos and not request.get("capped"):
            from .sharding import shard_collection
            key = shard_collection(self.client, self.db.name, request["collection"],
                                   self.splits.get(request["collection"]), self.shard_names)
        if self.table_type and not self.table_checked:
            from . import tabletype
            with self._refusal():
                tabletype.check(self.db, request["collection"], self.table_type, self.version)
            self.table_checked = True
        return key

    @contextmanager
    def _refusal(self):
        """A TableTypeRefused goes on to the runner as the error it is, and is written down for the
        driver, which skips the system on it (tabletype.refusal_file)."""
        from . import tabletype
        try:
            yield
        except tabletype.TableTypeRefused as refused:
            tabletype.write_refusal(self.refusal_file, refused)
            raise

    def _drop_database(self) -> None:
        # As a command, acknowledged whatever write concern the URI asks the writes for (a w:0
        # client's dropDatabase returns before the database is gone).
        self.client[self.db.name].command("dropDatabase")

    def close(self) -> None:
        for watch in self.watches:
            watch.stop()
            watch.client.close()
        if self.client is None:
            return
        if self.drop and not self.keep_data:
            self._drop_database()
        for client in self.shard_clients:
            client.close()
        self.client.close()

    def handle(self, op: str, request: dict):
        if op == "open":
            return self.open(request)
        if op in ("stats", "phase_stats", "checkpoint", "close"):
            return getattr(self, op)()
        if op == "stale":
            return self.stale
        if op == "created":
            return self.created(request)
        if op in ("slow_ops_start", "slow_ops_count"):
            from . import slowops
            try:
                if op == "slow_ops_start":
                    return slowops.start(self, int(request["threshold_ms"]))
                return slowops.count(self, request["collection"], request["op"], int(request["threshold_ms"]))
            except slowops.SlowOpsUnavailable as why:  # for the report: why only the client counted
                return {"unavailable": str(why)}
        raise ValueError(f"unknown companion request {op!r}; allowed: open, stats, stale, phase_stats, checkpoint, "
                         "created, slow_ops_start, slow_ops_count, close")


def main(argv: list[str] | None = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(prog="enginebench.mongod.companion")
    parser.add_argument("--table-type", choices=("lsm",), help="the WiredTiger table type the system asks for")
    parser.add_argument("--refusal-file", default=None,
                        help="where to write a server's refusal of that table type (JSON), for the driver")
    parser.add_argument("--splits", type=json.loads, default=None,
                        help="JSON {collection: [split point, ...]}: pre-split chunks, one per shard")
    args = parser.parse_args(argv)
    return jsonlines.serve(Companion(args.table_type, args.splits, args.refusal_file).handle)


if __name__ == "__main__":
    sys.exit(main())
