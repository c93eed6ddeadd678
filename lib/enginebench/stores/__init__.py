"""The native runner's targets behind one Store interface, driven from Python through
`enginebench-runner serve` (the tests' contract): the embedded engines' record store, and servers
through the runner's own executors."""
from __future__ import annotations

from pathlib import Path

from ..engines import ENGINES
from .base import DuplicateKey, IndexSpec, Store, StoreError, StoreInfo, UpdateResult



def open_embedded(engine: str, path: str | Path, options: dict) -> Store:
    """An embedded engine with mongod's record-store layout on top (lib/native), as a Store.

    `options` are a system's options from the params (engine options plus `oplog`,
    `oplog_size_mb` and, for lmdb, `mmap_lock`)."""
    if engine not in ENGINES:
        raise StoreError(f"unknown embedded engine {engine!r}; allowed: {', '.join(ENGINES)}")
    from .native import NativeStore
    return NativeStore(engine, path, options)


__all__ = ["DuplicateKey", "IndexSpec", "Store", "StoreError", "StoreInfo", "UpdateResult",
           "open_embedded"]
