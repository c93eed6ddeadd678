"""MongoDB's record-store layout over an embedded key-value engine.

Per collection one table keyed by the encoded `_id` holding the BSON document; per secondary index
one table. A unique index maps its encoded fields to the encoded `_id`; a non-unique index appends
the encoded `_id` to the key (so duplicates stay distinct) and also keeps it as the value, so a scan
fetches the document without decoding the key. Each Store call is one engine transaction, as a
mongod write of a document and its index entries is one WiredTiger transaction.

With `oplog=True` every write also appends an entry to a capped `oplog` table, which is what a
member of a replica set does (the posts' op1 setups); op0 is the standalone server.
"""
from __future__ import annotations

import itertools
import json
import random
import struct
import threading
import time
from typing import Any, Iterator, Sequence

import bson
from bson import ObjectId
from bson.raw_bson import RawBSONDocument

from .base import DuplicateKey, IndexSpec, Store, StoreError, StoreInfo, UpdateResult
from .capped import Capped
from .keys import decode_key, encode_key, encode_value, prefix_successor
from .kv import KVEngine, KVTxn, WriteConflict

_CATALOG = "_catalog"
_OPLOG = "_oplog"
_OPLOG_KEY = struct.Struct(">Q")
MAX_CONFLICT_RETRIES = 1000
# Documents per storage transaction when a batch is inserted outside one (see insert_many).
INSERT_GROUP = 64
OPLOG_TRIM_BATCH = 1000


class _Collection:
    def __init__(self, name: str, table, indexes: dict[str, tuple[IndexSpec, Any]]):
        self.name = name
        self.table = table
        self.indexes = indexes  # name -> (spec, table handle)
        self.capped: Capped | None = None


class RecordStore(Store):
    def __init__(self, engine: KVEngine, *, oplog: bool = False, oplog_size_mb: int = 1024):
        self.engine = engine
        self._local = threading.local()
        self._catalog = engine.table(_CATALOG)
        self._collections: dict[str, _Collection] = {}
        self._ddl_lock = threading.Lock()
        self.oplog = oplog
        self.oplog_cap_bytes = oplog_size_mb << 20
        self._oplog_table = engine.table(_OPLOG) if oplog else None
        self._oplog_seq = itertools.count(int(time.time() * 1000) << 20)
        self._oplog_lock = threading.Lock()
        self._oplog_trim_lock = threading.Lock()
        self._oplog_bytes = 0
        self._oplog_oldest: bytes | None = None
        self.conflicts = 0  # write conflicts retried, for the manifest and stats
        self._load_catalog()

    # -- catalog --------------------------------------------------------------------------
    def _load_catalog(self) -> None:
        txn = self.engine.begin(write=False)
        try:
            entries = list(txn.scan(self._catalog, b"", None))
        finally:
            self.engine.abort(txn)
        for key, value in entries:
            meta = json.loads(value)
            specs = [IndexSpec(i["name"], tuple((f, d) for f, d in i["fields"]), i["unique"]) for i in meta["indexes"]]
            coll = self._open_collection(key.decode())
            if meta.get("capped_bytes"):
                coll.capped = Capped(self.engine, coll.name, meta["capped_bytes"])
            for spec in specs:
                coll.indexes[spec.name] = (spec, self.engine.table(f"idx:{coll.name}:{spec.name}"))

    def _open_collection(self, name: str) -> _Collection:
        coll = _Collection(name, self.engine.table(f"coll:{name}"), {})
        self._collections[name] = coll
        return coll

    def _save_catalog(self, coll: _Collection) -> None:
        meta = {"indexes": [{"name": s.name, "fields": [list(f) for f in s.fields], "unique": s.unique}
                            for s, _ in coll.indexes.values()]}
        if coll.capped is not None:
            meta["capped_bytes"] = coll.capped.cap_bytes
        self._write(lambda txn: txn.put(self._catalog, coll.name.encode(), json.dumps(meta).encode()))

    def create_collection(self, name: str, capped_bytes: int | None = None) -> None:
        with self._ddl_lock:
            if name not in self._collections:
                coll = self._open_collection(name)
                if capped_bytes is not None:
                    coll.capped = Capped(self.engine, name, capped_bytes)
                self._save_catalog(coll)

    def create_index(self, collection: str, spec: IndexSpec) -> None:
        with self._ddl_lock:
            coll = self._coll(collection)
            if spec.name in coll.indexes:
                return
            table = self.engine.table(f"idx:{collection}:{spec.name}")
            coll.indexes[spec.name] = (spec, table)
            # Build entries for documents already present (the workloads create indexes first).
            def build(txn: KVTxn):
                for _, raw in txn.scan(coll.table, b"", None):
                    self._put_index_entry(txn, spec, table, bson.decode(raw))
            self._write(build)
            self._save_catalog(coll)

    def _coll(self, name: str) -> _Collection:
        try:
            return self._collections[name]
        except KeyError:
            raise StoreError(f"collection {name!r} does not exist") from None

    # -- transactions ---------------------------------------------------------------------
    def _current(self) -> KVTxn | None:
        return getattr(self._local, "txn", None)

    def _write(self, fn):
        """Run fn(txn) in the caller's transaction, or in a new one retried on conflicts."""
        txn = self._current()
        if txn is not None:
            return fn(txn)
        return self._retrying(fn)

    def _retrying(self, fn):
        result = self._retrying_once(fn)
        if self.oplog and self._oplog_bytes > self.oplog_cap_bytes:
            self._truncate_oplog()
        return result

    def _retrying_once(self, fn):
        for attempt in range(MAX_CONFLICT_RETRIES):
            txn = self.engine.begin(write=True)
            self._local.txn = txn
            self._local.oplog = [] if self.oplog else None
            try:
                result = fn(txn)
                if self.oplog and self._local.oplog:
                    self._append_oplog(txn, self._local.oplog)
                self.engine.commit(txn)
                return result
            except WriteConflict:
                self.engine.abort(txn)
                self.conflicts += 1
                # Back off a little, growing, so the winner can finish.
                time.sleep(random.random() * min(0.0001 * (2 ** min(attempt, 10)), 0.05))
            except BaseException:
                self.engine.abort(txn)
                raise
            finally:
                self._local.txn = None
        raise StoreError(f"gave up after {MAX_CONFLICT_RETRIES} write conflicts")

    def _read(self, fn):
        txn = self._current()
        if txn is not None:
            return fn(txn)
        txn = self.engine.begin(write=False)
        try:
            return fn(txn)
        finally:
            self.engine.abort(txn)

    def run_in_transaction(self, fn, *args, **kwargs):
        if self._current() is not None:
            return fn(*args, **kwargs)
        return self._retrying(lambda _txn: fn(*args, **kwargs))

    # -- oplog ----------------------------------------------------------------------------
    def _log(self, op: str, ns: str, entry: dict) -> None:
        if self.oplog:
            self._local.oplog.append({"op": op, "ns": ns, "o": entry})

    def _append_oplog(self, txn: KVTxn, entries: list[dict]) -> None:
        now = int(time.time() * 1000)
        added = 0
        for entry in entries:
            entry["ts"] = now
            raw = bson.encode(entry)
            key = _OPLOG_KEY.pack(next(self._oplog_seq))
            txn.put(self._oplog_table, key, raw)
            added += len(raw) + len(key)
        with self._oplog_lock:
            self._oplog_bytes += added

    def _truncate_oplog(self) -> None:
        """Delete the oldest tenth of the cap, as a capped collection deletes from its front.
        Runs after the writer's own commit, in its own transaction; one writer at a time."""
        if not self._oplog_trim_lock.acquire(blocking=False):
            return  # another writer is already trimming
        try:
            target = self.oplog_cap_bytes // 10
            freed_total = 0
            while freed_total < target:
                state = {"freed": 0, "last": None}

                def trim(txn: KVTxn):
                    # Small transactions: one huge delete would pin the engine's cache.
                    state["freed"], state["last"] = 0, None
                    entries = txn.scan(self._oplog_table, self._oplog_oldest or b"", None)
                    for key, value in itertools.islice(entries, OPLOG_TRIM_BATCH):
                        txn.delete(self._oplog_table, key)
                        state["freed"] += len(key) + len(value)
                        state["last"] = key
                self._retrying_once(trim)
                if state["last"] is None:
                    break
                self._oplog_oldest = state["last"]
                freed_total += state["freed"]
                with self._oplog_lock:
                    self._oplog_bytes -= state["freed"]
        finally:
            self._oplog_trim_lock.release()

    # -- document helpers -----------------------------------------------------------------
    @staticmethod
    def _index_key(spec: IndexSpec, doc: dict) -> bytes:
        get = doc.get
        return encode_key([get(f) for f in spec.field_names], spec.directions)

    def _put_index_entry(self, txn: KVTxn, spec: IndexSpec, table, doc: dict, *, check_unique: bool = True) -> None:
        id_key = encode_value(doc["_id"])
        key = self._index_key(spec, doc)
        if spec.unique:
            if check_unique and txn.get_for_update(table, key) is not None:
                raise DuplicateKey(f"duplicate key in unique index {spec.name}")
            txn.put(table, key, id_key)
        else:
            txn.put(table, key + id_key, id_key)

    def _delete_index_entry(self, txn: KVTxn, spec: IndexSpec, table, doc: dict) -> None:
        key = self._index_key(spec, doc)
        txn.delete(table, key if spec.unique else key + encode_value(doc["_id"]))

    def _locate(self, txn: KVTxn, coll: _Collection, index: str | None, key: tuple, for_update: bool):
        """Return (encoded _id, raw document) of the document with this key, or (None, None)."""
        get = txn.get_for_update if for_update else txn.get
        if index is None:
            id_key = encode_value(key[0])
            raw = get(coll.table, id_key)
            return (id_key, raw) if raw is not None else (None, None)
        spec, table = self._index(coll, index)
        encoded = encode_key(key, spec.directions[:len(key)])
        if spec.unique and len(key) == len(spec.fields):
            id_key = get(table, encoded)
        else:
            id_key = next((v for _, v in txn.scan(table, encoded, prefix_successor(encoded))), None)
        if id_key is None:
            return None, None
        raw = get(coll.table, id_key)
        return (id_key, raw) if raw is not None else (None, None)

    @staticmethod
    def _index(coll: _Collection, name: str):
        try:
            return coll.indexes[name]
        except KeyError:
            raise StoreError(f"collection {coll.name!r} has no index {name!r}") from None

    @staticmethod
    def _matches(doc: dict, where: dict | None) -> bool:
        return not where or all(doc.get(k) == v for k, v in where.items())

    # -- writes ---------------------------------------------------------------------------
    def insert_many(self, collection: str, docs: Sequence[dict]) -> int:
        coll = self._coll(collection)
        if coll.capped is not None:
            return self._insert_capped(coll, docs)

        def insert_group(group: Sequence[dict]):
            def insert(txn: KVTxn) -> int:
                for doc in group:
                    self._insert_one(txn, coll, doc)
                return len(group)
            return insert
        if self._current() is not None:  # inside the caller's transaction: all of it there
            return insert_group(docs)(self._current())
        # As mongod does (internalInsertMaxBatchSize): a batch commits in groups of at most 64
        # documents, so a batch is not atomic (insertMany is not) and one transaction never
        # pins more dirty pages than a small cache can hold. A whole 1000-document batch per
        # transaction, each insert dirtying a random leaf of the k index, outgrew a 16 MB
        # WiredTiger cache and was rolled back over and over: the load stopped.
        inserted = 0
        for start in range(0, len(docs), INSERT_GROUP):
            inserted += self._retrying(insert_group(docs[start:start + INSERT_GROUP]))
        return inserted

    def _insert_capped(self, coll: _Collection, docs: Sequence[dict]) -> int:
        """Insert, then delete the oldest documents past the cap, in the same transaction."""
        capped = coll.capped
        delta = {}

        def insert(txn: KVTxn) -> int:
            added = 0  # recomputed on every attempt: a conflict retry starts over
            for doc in docs:
                id_key, size = self._insert_one(txn, coll, doc)
                capped.append(txn, id_key, size)
                added += size
            freed = 0
            excess = capped.bytes + added - capped.cap_bytes
            if excess > 0:
                victims, freed = capped.oldest(txn, excess)
                for natural_key, id_key in victims:
                    self._delete_by_id(txn, coll, id_key)
                    txn.delete(capped.table, natural_key)
            delta["bytes"] = added - freed
            return len(docs)
        with capped.lock:
            inserted = self._write(insert)
            capped.bytes += delta["bytes"]
        return inserted

    def _delete_by_id(self, txn: KVTxn, coll: _Collection, id_key: bytes) -> None:
        raw = txn.get_for_update(coll.table, id_key)
        if raw is None:
            return
        doc = bson.decode(raw)
        for spec, table in coll.indexes.values():
            self._delete_index_entry(txn, spec, table, doc)
        txn.delete(coll.table, id_key)
        self._log("d", coll.name, {"_id": doc["_id"]})

    def _insert_one(self, txn: KVTxn, coll: _Collection, doc: dict) -> tuple[bytes, int]:
        """Returns the encoded _id and the document's size (what a capped collection counts)."""
        if "_id" not in doc:
            doc = {"_id": ObjectId(), **doc}
        id_key = encode_value(doc["_id"])
        if txn.get_for_update(coll.table, id_key) is not None:
            raise DuplicateKey(f"duplicate _id in {coll.name}")
        for spec, table in coll.indexes.values():
            self._put_index_entry(txn, spec, table, doc)
        raw = bson.encode(doc)
        txn.put(coll.table, id_key, raw)
        if self.oplog:  # the oplog entry embeds the encoded document rather than encoding it again
            self._log("i", coll.name, RawBSONDocument(raw))
        return id_key, len(raw)

    def update(self, collection: str, index: str | None, key: tuple, *, set: dict | None = None,
               inc: dict | None = None, set_on_insert: dict | None = None, where: dict | None = None,
               upsert: bool = False, return_before: bool = False) -> UpdateResult:
        coll = self._coll(collection)
        if coll.capped is not None and upsert:
            raise StoreError(f"upserts into capped collection {coll.name!r} are not supported; insert instead")

        def apply(txn: KVTxn) -> UpdateResult:
            id_key, raw = self._locate(txn, coll, index, key, for_update=True)
            before = bson.decode(raw) if raw is not None else None
            if before is None or not self._matches(before, where):
                if not upsert:
                    return UpdateResult(matched=False)
                doc = self._upsert_document(coll, index, key, set, inc, set_on_insert, where)
                self._insert_one(txn, coll, doc)
                return UpdateResult(matched=False, upserted=True)
            after = dict(before)
            if set:
                after.update(set)
            for field, delta in (inc or {}).items():
                after[field] = after.get(field, 0) + delta
            for spec, table in coll.indexes.values():
                if self._index_key(spec, before) != self._index_key(spec, after):
                    self._delete_index_entry(txn, spec, table, before)
                    self._put_index_entry(txn, spec, table, after)
            encoded = bson.encode(after)
            if coll.capped is not None and len(encoded) != len(raw):
                # As MongoDB before 3.2 required: a capped document keeps its size, so the
                # collection's byte count stays exact.
                raise StoreError(f"an update may not change the size of a document in capped collection {coll.name!r}")
            txn.put(coll.table, id_key, encoded)
            self._log("u", coll.name, {"_id": before["_id"], "$set": set or {}, "$inc": inc or {}})
            return UpdateResult(matched=True, before=before if return_before else None)
        return self._write(apply)

    def _upsert_document(self, coll, index, key, set, inc, set_on_insert, where) -> dict:
        doc: dict = {}
        names = ("_id",) if index is None else self._index(coll, index)[0].field_names
        doc.update(zip(names, key))
        doc.update(where or {})
        doc.update(set_on_insert or {})
        doc.update(set or {})
        for field, delta in (inc or {}).items():
            doc[field] = delta
        doc.setdefault("_id", ObjectId())
        return {"_id": doc.pop("_id"), **doc}

    def delete(self, collection: str, index: str | None, key: tuple, *, where: dict | None = None) -> bool:
        coll = self._coll(collection)
        if coll.capped is not None:
            raise StoreError(f"cannot delete from capped collection {coll.name!r} (as MongoDB before 5.0 refused)")

        def remove(txn: KVTxn) -> bool:
            id_key, raw = self._locate(txn, coll, index, key, for_update=True)
            if raw is None:
                return False
            doc = bson.decode(raw)
            if not self._matches(doc, where):
                return False
            for spec, table in coll.indexes.values():
                self._delete_index_entry(txn, spec, table, doc)
            txn.delete(coll.table, id_key)
            self._log("d", coll.name, {"_id": doc["_id"]})
            return True
        return self._write(remove)

    # -- reads ----------------------------------------------------------------------------
    def get(self, collection: str, index: str | None, key: tuple) -> dict | None:
        coll = self._coll(collection)

        def read(txn: KVTxn):
            _, raw = self._locate(txn, coll, index, key, for_update=False)
            return bson.decode(raw) if raw is not None else None
        return self._read(read)

    def get_many(self, collection: str, index: str, prefix: tuple, last_values: Sequence) -> list[dict]:
        coll = self._coll(collection)
        spec, _ = self._index(coll, index)
        keys = sorted(set(last_values), reverse=spec.directions[len(prefix)] < 0)

        def read(txn: KVTxn):
            out = []
            for value in keys:
                _, raw = self._locate(txn, coll, index, tuple(prefix) + (value,), for_update=False)
                if raw is not None:
                    out.append(bson.decode(raw))
            return out
        return self._read(read)

    def _range(self, coll: _Collection, index: str | None, prefix: tuple, low, high):
        """The table and [start, end) byte range of an equality prefix plus bounds on what follows.

        A bound is a value for the next field, or a tuple over the next fields (compared as a
        tuple: "seek to this key in a composite index"), both inclusive."""
        if index is None:
            spec, table, directions = None, coll.table, (1,)
        else:
            spec, table = self._index(coll, index)
            directions = spec.directions
        base = encode_key(prefix, directions[:len(prefix)])
        if low is None and high is None:
            return table, spec, base, prefix_successor(base)
        lo_vals = low if isinstance(low, tuple) or low is None else (low,)
        hi_vals = high if isinstance(high, tuple) or high is None else (high,)
        rest = directions[len(prefix):]
        width = max(len(lo_vals or ()), len(hi_vals or ()))
        if any(d < 0 for d in rest[:width]):
            if width > 1:
                raise StoreError("tuple bounds over descending index fields are not supported")
            lo_vals, hi_vals = hi_vals, lo_vals  # a descending field stores high values first
        start = base if lo_vals is None else base + encode_key(lo_vals, rest[:len(lo_vals)])
        end = prefix_successor(base if hi_vals is None else base + encode_key(hi_vals, rest[:len(hi_vals)]))
        return table, spec, start, end

    def _entries(self, txn: KVTxn, coll, index, prefix, low, high, reverse, keys: bool = False):
        """(entry, document bytes or None) in range, in order. The entry is the encoded _id (or,
        with keys=True, the index key itself); a scan of the collection itself has the document
        at hand, an index scan fetches it only if asked."""
        table, spec, start, end = self._range(coll, index, prefix, low, high)
        for key, value in txn.scan(table, start, end, reverse):
            if spec is None:
                yield key, value
            else:
                yield (key if keys else value), None

    def scan(self, collection: str, index: str | None, prefix: tuple = (), *, low=None, high=None,
             reverse: bool = False, skip: int = 0, limit: int | None = None,
             fields: tuple[str, ...] | None = None) -> list[dict]:
        coll = self._coll(collection)
        names = ("_id",) if index is None else self._index(coll, index)[0].field_names
        # A projection inside the index is answered from the index alone, as a covered query is.
        covered = index is not None and fields is not None and set(fields) <= set(names) and "_id" not in fields

        def read(txn: KVTxn):
            out = []
            entries = self._entries(txn, coll, index, prefix, low, high, reverse, keys=covered)
            for entry, raw in itertools.islice(entries, skip, None if limit is None else skip + limit):
                if covered:
                    values = dict(zip(names, decode_key(entry)))
                    out.append({f: values[f] for f in fields})
                    continue
                if raw is None:
                    raw = txn.get(coll.table, entry)
                if raw is not None:
                    doc = bson.decode(raw)
                    out.append(doc if fields is None else {f: doc[f] for f in fields if f in doc})
            return out
        return self._read(read)

    def count(self, collection: str, index: str | None, prefix: tuple = (), *, low=None, high=None,
              limit: int | None = None) -> int:
        coll = self._coll(collection)

        def read(txn: KVTxn):
            entries = self._entries(txn, coll, index, prefix, low, high, False)
            return sum(1 for _ in itertools.islice(entries, limit))
        return self._read(read)

    def iter_index(self, collection: str, index: str | None, batch: int = 10000) -> Iterator[tuple]:
        """Decoded keys in order, read in short transactions of `batch` keys each, so callers may
        issue other Store calls on this thread while they iterate."""
        coll = self._coll(collection)
        if index is None:
            table, width = coll.table, 1
        else:
            spec, table = self._index(coll, index)
            width = len(spec.fields)
        start = b""
        while True:
            keys = self._read(lambda txn: list(itertools.islice((k for k, _ in txn.scan(table, start, None)), batch)))
            for key in keys:
                yield decode_key(key)[:width]
            if len(keys) < batch:
                return
            start = keys[-1] + b"\x00"  # the smallest key after the last one read

    # -- lifecycle ------------------------------------------------------------------------
    def info(self) -> StoreInfo:
        config = dict(self.engine.config())
        config.update(oplog=self.oplog, oplog_size_mb=self.oplog_cap_bytes >> 20)
        return StoreInfo(engine=self.engine.name, version=self.engine.version(), config=config)

    def stats(self) -> dict:
        out = dict(self.engine.stats())
        out["write_conflicts_retried"] = self.conflicts
        return out

    def checkpoint(self) -> None:
        self.engine.checkpoint()

    def close(self) -> None:
        self.engine.close()
