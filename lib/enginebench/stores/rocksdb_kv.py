"""RocksDB as a KVEngine, laid out as MongoRocks did it.

One key space; every table is a 4-byte prefix. A transaction buffers its writes in a WriteBatch
and commits them atomically. Every key a write transaction reads or writes is locked (no wait:
a key held by another transaction is a write conflict, retried by the record store), so
read-then-write sequences are serializable; MongoRocks likewise paired a lock manager with write
batches. Reads see committed data plus the transaction's own point writes. Block cache size and
snappy compression come from the params; the WAL is on and not synced per commit, as in the post.
"""
from __future__ import annotations

import threading
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Iterator

from .base import StoreError
from .keys import prefix_successor
from .kv import KVEngine, KVTxn, WriteConflict

from rocksdict import (BlockBasedOptions, Cache, DBCompressionType, Options, Rdict, ReadOptions,
                       WriteBatch, WriteOptions)

_META = b"\x00\x00\x00\x00"


class RocksTxn(KVTxn):
    def __init__(self, engine: "RocksDBKV", write: bool):
        self.e = engine
        self.write = write
        self.writes: dict[bytes, bytes | None] = {}
        self.held: list[bytes] = []

    def _lock(self, full_key: bytes) -> None:
        locks = self.e.row_locks
        owner = locks.get(full_key)
        if owner is self:
            return
        with self.e.lock_mutex:
            owner = locks.setdefault(full_key, self)
        if owner is not self:
            raise WriteConflict("key locked by another transaction")
        self.held.append(full_key)

    def get(self, table, key):
        full = table + key
        if self.write:
            self._lock(full)
        if full in self.writes:
            return self.writes[full]
        return self.e.db.get(full)

    def put(self, table, key, value):
        full = table + key
        self._lock(full)
        self.writes[full] = value

    def delete(self, table, key):
        full = table + key
        self._lock(full)
        self.writes[full] = None

    def scan(self, table, low, high, reverse=False) -> Iterator[tuple[bytes, bytes]]:
        # Committed data only: no workload scans a range it has written in the same transaction.
        start = table + low
        end = table + high if high is not None else prefix_successor(table)
        it = self.e.db.iter(self.e.read_options)
        cut = len(table)
        if not reverse:
            it.seek(start)
            while it.valid():
                key = it.key()
                if end is not None and key >= end:
                    return
                yield key[cut:], it.value()
                it.next()
        else:
            if end is None:
                it.seek_to_last()
            else:
                it.seek_for_prev(end)
                if it.valid() and it.key() >= end:
                    it.prev()
            while it.valid():
                key = it.key()
                if key < start:
                    return
                yield key[cut:], it.value()
                it.prev()

    def release(self) -> None:
        if self.held:
            locks = self.e.row_locks
            with self.e.lock_mutex:
                for key in self.held:
                    del locks[key]
            self.held.clear()


class RocksDBKV(KVEngine):
    name = "rocksdb"

    def __init__(self, path: str | Path, *, cache_size_mb: int = 256, compression: str = "snappy",
                 max_background_jobs: int = 2, write_buffer_mb: int = 64):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        compressors = {"none": DBCompressionType.none, "snappy": DBCompressionType.snappy,
                       "zstd": DBCompressionType.zstd, "lz4": DBCompressionType.lz4}
        if compression not in compressors:
            raise StoreError(f"compression must be one of {sorted(compressors)}, got {compression!r}")
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.set_compression_type(compressors[compression]())
        opts.set_max_background_jobs(max_background_jobs)
        # Memtables are memory outside the block cache: scaled-down runs under a memory limit
        # need them scaled down too (64 MB is RocksDB's default, as MongoRocks ran it).
        opts.set_write_buffer_size(write_buffer_mb << 20)
        opts.enable_statistics()
        table = BlockBasedOptions()
        table.set_block_cache(Cache(cache_size_mb << 20))
        opts.set_block_based_table_factory(table)
        try:
            self.db = Rdict(str(self.path), options=opts)
        except Exception as exc:
            raise StoreError(f"RocksDB could not open {self.path}: {exc}") from exc
        self.options = opts
        write_options = WriteOptions()
        write_options.sync = False
        self.write_options = write_options
        self.read_options = ReadOptions()
        self.row_locks: dict[bytes, RocksTxn] = {}
        self.lock_mutex = threading.Lock()
        self._ddl = threading.Lock()
        self._tables: dict[str, bytes] = {}
        self._settings = dict(cache_size_mb=cache_size_mb, compression=compression, wal=True,
                              wal_sync=False, max_background_jobs=max_background_jobs,
                              write_buffer_mb=write_buffer_mb,
                              layout="one key space, 4-byte table prefixes (MongoRocks)")

    def table(self, name: str) -> bytes:
        with self._ddl:
            if name in self._tables:
                return self._tables[name]
            meta_key = _META + name.encode()
            prefix = self.db.get(meta_key)
            if prefix is None:
                used = [v for k, v in self._meta_items()]
                prefix = (max((int.from_bytes(p, "big") for p in used), default=0) + 1).to_bytes(4, "big")
                self.db.put(meta_key, prefix)
            self._tables[name] = prefix
            return prefix

    def _meta_items(self):
        it = self.db.iter(self.read_options)
        it.seek(_META)
        while it.valid() and it.key().startswith(_META):
            yield it.key(), it.value()
            it.next()

    def begin(self, write: bool) -> KVTxn:
        return RocksTxn(self, write)

    def commit(self, txn: RocksTxn) -> None:
        try:
            if txn.writes:
                batch = WriteBatch(raw_mode=True)
                for key, value in txn.writes.items():
                    if value is None:
                        batch.delete(key)
                    else:
                        batch.put(key, value)
                self.db.write(batch, self.write_options)
        finally:
            txn.release()

    def abort(self, txn: RocksTxn) -> None:
        txn.writes.clear()
        txn.release()

    def version(self) -> str:
        return f"rocksdict {package_version('rocksdict')}"

    def config(self) -> dict:
        return dict(self._settings)

    _INT_PROPERTIES = ("rocksdb.block-cache-usage", "rocksdb.total-sst-files-size",
                       "rocksdb.estimate-pending-compaction-bytes", "rocksdb.num-running-compactions",
                       "rocksdb.cur-size-all-mem-tables", "rocksdb.num-live-versions")
    _TICKERS = ("rocksdb.block.cache.miss", "rocksdb.block.cache.hit", "rocksdb.bytes.written",
                "rocksdb.compact.read.bytes", "rocksdb.compact.write.bytes", "rocksdb.flush.write.bytes",
                "rocksdb.stall.micros", "rocksdb.wal.bytes")

    def stats(self) -> dict:
        out = {}
        for prop in self._INT_PROPERTIES:
            value = self.db.property_int_value(prop)
            if value is not None:
                out[prop] = int(value)
        text = self.options.get_statistics() or ""
        for line in text.splitlines():
            name, _, rest = line.partition(" COUNT : ")
            if name in self._TICKERS and rest:
                out[name] = int(rest.split()[0])
        return out

    def checkpoint(self) -> None:
        self.db.flush(True)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
