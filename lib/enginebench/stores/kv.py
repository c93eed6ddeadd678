"""The small key-value contract an embedded engine adapter implements.

RecordStore (recordstore.py) builds MongoDB's record-store layout on top of it; an adapter only
maps tables, transactions and ordered scans onto its engine (WiredTiger, RocksDB, LMDB), the way
ClickBench's per-system scripts only wrap their system.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterator

from .base import StoreError


class WriteConflict(StoreError):
    """Two transactions wrote the same key; the caller aborts and retries."""


class KVTxn(ABC):
    """One transaction, used by one thread. Tables are the handles `KVEngine.table` returned."""

    @abstractmethod
    def get(self, table, key: bytes) -> bytes | None: ...

    def get_for_update(self, table, key: bytes) -> bytes | None:
        """Read a key the transaction is about to write (engines with row locks lock it here)."""
        return self.get(table, key)

    @abstractmethod
    def put(self, table, key: bytes, value: bytes) -> None: ...

    @abstractmethod
    def delete(self, table, key: bytes) -> None: ...

    @abstractmethod
    def scan(self, table, low: bytes, high: bytes | None, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) pairs with low <= key < high (high None: to the end of the table)."""


class KVEngine(ABC):
    name: str = "kv"

    @abstractmethod
    def table(self, name: str):
        """Create the table if needed and return a handle for it."""

    @abstractmethod
    def begin(self, write: bool) -> KVTxn: ...

    @abstractmethod
    def commit(self, txn: KVTxn) -> None:
        """Commit; raises WriteConflict when the engine detects one at commit time."""

    @abstractmethod
    def abort(self, txn: KVTxn) -> None: ...

    @abstractmethod
    def version(self) -> str: ...

    def config(self) -> dict:
        return {}

    def stats(self) -> dict:
        return {}

    def checkpoint(self) -> None:
        pass

    @abstractmethod
    def close(self) -> None: ...
