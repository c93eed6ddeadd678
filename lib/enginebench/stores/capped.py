"""Capped collections in the record store: a byte budget, oldest documents deleted first.

MongoDB keeps a capped collection in insertion ("natural") order and, when an insert takes it
past its size, deletes the oldest documents in the same write. The record store keys documents
by `_id`, so a capped collection adds one table in insertion order: key = an 8-byte sequence,
value = the document's size (4 bytes) + its encoded `_id`. Each insert that overflows opens a
cursor at the start of that table and deletes from the front, as mongod's capped delete does on
every engine; on an LSM the cursor has to step over the deleted entries still waiting for
compaction, which is what made capped inserts expensive on RocksDB (seed 003).
"""
from __future__ import annotations

import itertools
import struct
import threading

from .base import StoreError
from .kv import KVEngine, KVTxn

_SEQ = struct.Struct(">Q")
_SIZE = struct.Struct(">I")


class Capped:
    def __init__(self, engine: KVEngine, collection: str, cap_bytes: int):
        if cap_bytes < 1:
            raise StoreError(f"capped collection {collection!r}: size must be positive (got {cap_bytes})")
        self.cap_bytes = cap_bytes
        self.table = engine.table(f"cap:{collection}")
        # mongod serialises inserts into one capped collection, so the front and the byte count
        # are never raced; the record store does the same with this lock.
        self.lock = threading.Lock()
        self.bytes, last = self._restore(engine)
        self._seq = itertools.count(last + 1)

    def _restore(self, engine: KVEngine) -> tuple[int, int]:
        """The bytes held and the last sequence used, from the table (after a reopen)."""
        txn = engine.begin(write=False)
        try:
            total, last = 0, 0
            for key, value in txn.scan(self.table, b"", None):
                total += _SIZE.unpack_from(value)[0]
                last = _SEQ.unpack(key)[0]
            return total, last
        finally:
            engine.abort(txn)

    def append(self, txn: KVTxn, id_key: bytes, size: int) -> None:
        if size > self.cap_bytes:
            raise StoreError(f"a document of {size} bytes does not fit a capped collection of {self.cap_bytes}")
        txn.put(self.table, _SEQ.pack(next(self._seq)), _SIZE.pack(size) + id_key)

    def oldest(self, txn: KVTxn, excess: int) -> tuple[list[tuple[bytes, bytes]], int]:
        """The oldest (natural key, encoded _id) pairs whose sizes add up to at least `excess`,
        and that total. Collected before deleting: not every engine allows deletes under a live
        cursor."""
        victims, freed = [], 0
        for key, value in txn.scan(self.table, b"", None):
            if freed >= excess:
                break
            victims.append((key, value[_SIZE.size:]))
            freed += _SIZE.unpack_from(value)[0]
        return victims, freed
