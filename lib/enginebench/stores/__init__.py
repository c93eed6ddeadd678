"""Systems under test behind one Store interface: embedded engines and MongoDB."""
from __future__ import annotations

from pathlib import Path

from .base import DuplicateKey, IndexSpec, Store, StoreError, StoreInfo, UpdateResult

EMBEDDED_ENGINES = ("wiredtiger", "rocksdb", "lmdb")


def open_embedded(engine: str, path: str | Path, options: dict) -> Store:
    """Open an embedded engine with MongoDB's record-store layout on top.

    `options` are a system's engine options from the params (already validated); `oplog` and
    `oplog_size_mb` belong to the record store, the rest to the engine.
    """
    from .recordstore import RecordStore

    options = dict(options)
    oplog = options.pop("oplog", False)
    oplog_size_mb = options.pop("oplog_size_mb", 1024)
    if engine == "wiredtiger":
        from .wiredtiger_kv import WiredTigerKV
        kv = WiredTigerKV(path, **options)
    elif engine == "rocksdb":
        from .rocksdb_kv import RocksDBKV
        kv = RocksDBKV(path, **options)
    elif engine == "lmdb":
        from .lmdb_kv import LMDBKV
        kv = LMDBKV(path, **options)
    else:
        raise StoreError(f"unknown embedded engine {engine!r}; allowed: {', '.join(EMBEDDED_ENGINES)}")
    return RecordStore(kv, oplog=oplog, oplog_size_mb=oplog_size_mb)


__all__ = ["DuplicateKey", "IndexSpec", "Store", "StoreError", "StoreInfo", "UpdateResult",
           "EMBEDDED_ENGINES", "open_embedded"]
