"""LMDB as a KVEngine: the memory-mapped B+tree, standing in for the mmap engines of the posts.

One named sub-database per table. LMDB has a single writer at a time, so write transactions
never conflict; readers run on MVCC snapshots. Like MMAPv1 it has no cache of its own: what is
cached is what the OS page cache (and the memory profile) keeps. Commits are not synced.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import lmdb

from .base import StoreError
from .kv import KVEngine, KVTxn


class LMDBTxn(KVTxn):
    def __init__(self, txn: lmdb.Transaction):
        self.txn = txn

    def get(self, table, key):
        return self.txn.get(key, db=table)

    def put(self, table, key, value):
        self.txn.put(key, value, db=table)

    def delete(self, table, key):
        self.txn.delete(key, db=table)

    def scan(self, table, low, high, reverse=False) -> Iterator[tuple[bytes, bytes]]:
        cur = self.txn.cursor(db=table)
        if not reverse:
            if not cur.set_range(low):
                return
            for key, value in cur:
                if high is not None and key >= high:
                    return
                yield key, value
        else:
            positioned = cur.set_range(high) if high is not None else cur.last()
            if high is not None:
                positioned = cur.prev() if positioned else cur.last()
            if not positioned:
                return
            for key, value in cur.iterprev():
                if key < low:
                    return
                yield key, value


class LMDBKV(KVEngine):
    name = "lmdb"

    def __init__(self, path: str | Path, *, map_size_gb: int = 64, readahead: bool = False):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            # readahead off: random reads of an uncached database should not pull in neighbours.
            self.env = lmdb.open(str(self.path), map_size=map_size_gb << 30, max_dbs=256, sync=False,
                                 metasync=False, readahead=readahead, max_readers=1024)
        except lmdb.Error as exc:
            raise StoreError(f"LMDB could not open {self.path}: {exc}") from exc
        self._tables: dict[str, object] = {}
        self._settings = dict(map_size_gb=map_size_gb, readahead=readahead, sync=False,
                              cache="OS page cache only (memory-mapped)")

    def table(self, name: str):
        db = self._tables.get(name)
        if db is None:
            db = self._tables[name] = self.env.open_db(name.encode(), create=True)
        return db

    def begin(self, write: bool) -> KVTxn:
        return LMDBTxn(self.env.begin(write=write))

    def commit(self, txn: LMDBTxn) -> None:
        txn.txn.commit()

    def abort(self, txn: LMDBTxn) -> None:
        txn.txn.abort()

    def version(self) -> str:
        return "lmdb " + ".".join(str(v) for v in lmdb.version())

    def config(self) -> dict:
        return dict(self._settings)

    def stats(self) -> dict:
        info = self.env.info()
        stat = self.env.stat()
        return {"lmdb.last_pgno": info["last_pgno"], "lmdb.page_size": stat["psize"],
                "lmdb.map_size": info["map_size"]}

    def checkpoint(self) -> None:
        self.env.sync(True)

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None
