"""MongoStore: the Store interface over a real MongoDB deployment, through pymongo.

Each Store call is one server request (or one transaction's worth of requests inside
run_in_transaction). Transactions need a replica set on MongoDB 4.0+ (through mongos 4.2+) with
an engine that has them (wiredTiger, inMemory); elsewhere `atomic` is False and the workload's
multi-document writes run without them, as LinkbenchX's did.

The same code runs under pymongo 4 (servers 4.4+) and pymongo 3.x (the legacy environment, for
3.0-4.2 servers): the handshake falls back to isMaster, and counts on servers before 3.6 (no
aggregate hints) use the cursor count that only pymongo 3 still has.
"""
from __future__ import annotations

import threading
from typing import Iterator, Sequence

from .base import DuplicateKey, IndexSpec, Store, StoreError, StoreInfo, UpdateResult
from .mongo_filters import range_filter, update_document

import pymongo
from pymongo import ReplaceOne, ReturnDocument, UpdateOne
from pymongo.errors import DuplicateKeyError, OperationFailure, PyMongoError

TRANSACTION_ENGINES = ("wiredTiger", "inMemory")


class MongoStore(Store):
    def __init__(self, uri: str, database: str = "enginebench", *, client=None):
        # No directConnection: pymongo 4 refuses None for it, and both generations' defaults
        # discover what a seed is (standalone, replica set member, mongos) from its handshake.
        self.client = client or pymongo.MongoClient(uri)
        self.db = self.client[database]
        self.database = database
        self._indexes: dict[tuple[str, str], IndexSpec] = {}
        self._local = threading.local()
        hello = _hello(self.client)
        self._build = self.client.admin.command("buildInfo")
        self.mongos = hello.get("msg") == "isdbgrid"
        self.replica_set = "setName" in hello or self.mongos
        self.server_version = tuple(int(x) for x in self._build.get("versionArray", [0, 0])[:2]) or (0, 0)
        if self.server_version == (0, 0):
            self.server_version = tuple(int(x) for x in self._build["version"].split(".")[:2])
        try:
            status = self.client.admin.command("serverStatus")
        except PyMongoError as exc:  # e.g. a user without clusterMonitor: every section is then missing
            status = {"process": f"unknown (serverStatus refused: {exc})"}
        self.engine = (status.get("storageEngine") or {}).get("name", "unknown")
        needed = (4, 2) if self.mongos else (4, 0)
        self.atomic = (self.replica_set and self.server_version >= needed
                       and (self.engine in TRANSACTION_ENGINES or self.mongos))
        # mongos has no engine section: engine counters come from the shards' primaries.
        self._shard_clients = self._open_shards() if self.mongos else []
        # What this server lacks is named in the report (mongod/capabilities.py), never skipped over.
        from ..mongod.capabilities import probe
        engine_status = self._shard_statuses()[0] if self._shard_clients else status
        self.capabilities = probe(self.client, self.db, hello, status, engine_status)
        self.gaps = self.capabilities.gaps(self.atomic)
        if not self.capabilities.unacknowledged and client is None:
            # Named in self.gaps: acknowledged writes instead, for every write the store and the
            # runner send (keyword options override the URI's w=0 in both pymongo generations).
            self.client.close()
            self.client = pymongo.MongoClient(uri, w=1)
            self.db = self.client[database]
        # StaleWatch objects the runner attaches (replication lag per secondary, per interval).
        self.watches: list = []

    # -- sharded clusters -------------------------------------------------------------------
    def _open_shards(self) -> list:
        from ..mongod.sharding import shard_uris
        uris = shard_uris(self.client.admin.command("listShards"))
        return [pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000) for uri in uris.values()]

    def _shard_statuses(self) -> list[dict]:
        return [c.admin.command("serverStatus") for c in self._shard_clients]

    # -- helpers --------------------------------------------------------------------------
    def _session(self):
        return getattr(self._local, "session", None)

    def _fields(self, collection: str, index: str | None) -> tuple[str, ...]:
        if index is None:
            return ("_id",)
        try:
            return self._indexes[(collection, index)].field_names
        except KeyError:
            spec = self._spec_from_server(collection, index)
            return spec.field_names

    def _spec_from_server(self, collection: str, index: str) -> IndexSpec:
        info = self.db[collection].index_information().get(index)
        if info is None:
            raise StoreError(f"collection {collection!r} has no index {index!r}")
        spec = IndexSpec(index, tuple((f, int(d)) for f, d in info["key"]), bool(info.get("unique")))
        self._indexes[(collection, index)] = spec
        return spec

    def _filter(self, collection: str, index: str | None, key: tuple, where: dict | None = None) -> dict:
        flt = dict(zip(self._fields(collection, index), key))
        if where:
            flt.update(where)
        return flt

    def _range_filter(self, collection, index, prefix, low, high):
        return range_filter(self._fields(collection, index), prefix, low, high)

    def _sort(self, collection, index, reverse):
        if index is None:
            return [("_id", -1 if reverse else 1)]
        spec = self._indexes.get((collection, index)) or self._spec_from_server(collection, index)
        return [(f, -d if reverse else d) for f, d in spec.fields]

    # -- schema ---------------------------------------------------------------------------
    def create_collection(self, name: str, capped_bytes: int | None = None) -> None:
        if name in self.db.list_collection_names():
            return
        # A server without capped collections gets an ordinary one; the gap is in self.gaps.
        capped = capped_bytes and self.capabilities.capped
        opts = {"capped": True, "size": capped_bytes} if capped else {}
        self.db.create_collection(name, **opts)
        if self.mongos and not capped:  # data spreads over the shards only once sharded
            from ..mongod.sharding import shard_collection
            shard_collection(self.client, self.database, name)

    def create_index(self, collection: str, spec: IndexSpec) -> None:
        self.db[collection].create_index(list(spec.fields), name=spec.name, unique=spec.unique)
        self._indexes[(collection, spec.name)] = spec

    # -- writes ---------------------------------------------------------------------------
    def insert_many(self, collection: str, docs: Sequence[dict]) -> int:
        try:
            self.db[collection].insert_many(list(docs), ordered=False, session=self._session())
        except DuplicateKeyError as exc:
            raise DuplicateKey(str(exc)) from exc
        except pymongo.errors.BulkWriteError as exc:
            if any(e.get("code") == 11000 for e in exc.details.get("writeErrors", [])):
                raise DuplicateKey(str(exc)) from exc
            raise
        return len(docs)

    def update(self, collection, index, key, *, set=None, inc=None, set_on_insert=None, where=None,
               upsert=False, return_before=False, replace=None) -> UpdateResult:
        spec = update_document(set, inc, set_on_insert)
        flt = self._filter(collection, index, key, where)
        coll = self.db[collection]
        try:
            if replace is not None:  # an update without operators: a replacement
                result = coll.replace_one(flt, replace, upsert=upsert, session=self._session())
                if not result.acknowledged:
                    return UpdateResult(matched=None)
                return UpdateResult(matched=result.matched_count == 1, upserted=result.upserted_id is not None)
            if return_before or upsert:
                before = coll.find_one_and_update(flt, spec, upsert=upsert, session=self._session(),
                                                  return_document=ReturnDocument.BEFORE)
                if before is None:
                    return UpdateResult(matched=False, upserted=upsert)
                return UpdateResult(matched=True, before=before if return_before else None)
            result = coll.update_one(flt, spec, session=self._session())
            return UpdateResult(matched=result.matched_count == 1 if result.acknowledged else None)
        except DuplicateKeyError as exc:
            raise DuplicateKey(str(exc)) from exc

    def upsert_many(self, collection, index, upserts) -> int:
        requests = []
        for key, arguments in upserts:
            flt = self._filter(collection, index, key)
            if arguments.get("replace") is not None:
                requests.append(ReplaceOne(flt, arguments["replace"], upsert=True))
            else:
                requests.append(UpdateOne(flt, update_document(arguments.get("set"), arguments.get("inc"),
                                                            arguments.get("set_on_insert")), upsert=True))
        if requests:
            self.db[collection].bulk_write(requests, ordered=False, session=self._session())
        return len(requests)

    def delete(self, collection, index, key, *, where=None) -> bool:
        result = self.db[collection].delete_one(self._filter(collection, index, key, where), session=self._session())
        return result.deleted_count == 1 if result.acknowledged else None

    # -- reads ----------------------------------------------------------------------------
    def get(self, collection, index, key):
        return self.db[collection].find_one(self._filter(collection, index, key), session=self._session())

    def get_many(self, collection, index, prefix, last_values):
        fields = self._fields(collection, index)
        flt = dict(zip(fields, prefix))
        flt[fields[len(prefix)]] = {"$in": list(last_values)}
        cursor = self.db[collection].find(flt, session=self._session()).sort(self._sort(collection, index, False))
        return list(cursor.hint(index))

    def scan(self, collection, index, prefix=(), *, low=None, high=None, reverse=False, skip=0, limit=None,
             fields=None):
        projection = None if fields is None else {**{f: 1 for f in fields}, "_id": 0}
        cursor = self.db[collection].find(self._range_filter(collection, index, prefix, low, high), projection,
                                          session=self._session())
        cursor = cursor.sort(self._sort(collection, index, reverse)).hint(index or [("_id", 1)])
        if skip:
            cursor = cursor.skip(skip)
        if limit:
            cursor = cursor.limit(limit)
        return list(cursor)

    def count(self, collection, index, prefix=(), *, low=None, high=None, limit=None):
        flt = self._range_filter(collection, index, prefix, low, high)
        if self.server_version < (3, 6):
            # count_documents is an aggregation, and aggregate takes a hint only from 3.6.
            cursor = self.db[collection].find(flt, session=self._session()).hint(index or [("_id", 1)])
            if limit:
                cursor = cursor.limit(limit)
            return cursor.count(with_limit_and_skip=True)
        kwargs = {"hint": index or "_id_"}
        if limit:
            kwargs["limit"] = limit
        return self.db[collection].count_documents(flt, session=self._session(), **kwargs)

    def iter_index(self, collection, index) -> Iterator[tuple]:
        fields = self._fields(collection, index)
        projection = {f: 1 for f in fields}
        if "_id" not in fields:
            projection["_id"] = 0
        cursor = self.db[collection].find({}, projection).sort(self._sort(collection, index, False))
        for doc in cursor.hint(index or [("_id", 1)]):
            yield tuple(doc.get(f) for f in fields)

    # -- transactions and lifecycle -------------------------------------------------------
    def run_in_transaction(self, fn, *args, **kwargs):
        if not self.atomic or self._session() is not None:
            return fn(*args, **kwargs)
        with self.client.start_session() as session:
            self._local.session = session
            try:
                # with_transaction retries on TransientTransactionError and commit uncertainty.
                return session.with_transaction(lambda _s: fn(*args, **kwargs))
            finally:
                self._local.session = None

    def info(self) -> StoreInfo:
        flavour = {k: self._build[k] for k in ("psmdbVersion", "tokumxVersion", "tokukvVersion") if k in self._build}
        return StoreInfo(engine=self.engine, version=self._build["version"],
                         config={"gitVersion": self._build.get("gitVersion"), "replica_set": self.replica_set,
                                 "mongos": self.mongos, "transactions": self.atomic,
                                 "write_concern": self.client.write_concern.document or {"w": "server default"},
                                 "server_process": self.capabilities.process, "gaps": self.gaps,
                                 "pymongo": pymongo.version, **flavour})

    def stats(self) -> dict:
        from ..mongod.serverstats import flatten_server_status
        try:
            out = flatten_server_status(self.client.admin.command("serverStatus"))
            if self._shard_clients:
                from ..mongod.sharding import sum_shard_counters
                out = sum_shard_counters(out, [flatten_server_status(s) for s in self._shard_statuses()])
        except PyMongoError:
            out = {}
        for watch in self.watches:
            out.update({f"repl.lag_s: {member}": lag for member, lag in watch.lag.items()})
        return out

    def phase_stats(self) -> dict:
        """dbStats and collStats, after each phase."""
        from ..mongod.serverstats import db_and_collection_stats
        return db_and_collection_stats(self.db)

    def checkpoint(self) -> None:
        # fsync makes the data durable (a WiredTiger checkpoint, an mmapv1 flush) before the quiesce.
        try:
            self.client.admin.command("fsync")
        except PyMongoError:
            pass  # e.g. inMemory has nothing to flush

    def close(self) -> None:
        for client in self._shard_clients:
            client.close()
        self.client.close()


def _hello(client) -> dict:
    """`hello` exists from 3.6.21, 4.0.21, 4.2.10 and 4.4.2 on; older servers (the posts' 3.0.7 and
    3.2.0, TokuMX) refuse it as an unknown command and answer isMaster."""
    try:
        return client.admin.command("hello")
    except OperationFailure:
        return client.admin.command("isMaster")


__all__ = ["MongoStore", "OperationFailure"]
