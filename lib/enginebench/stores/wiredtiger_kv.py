"""WiredTiger tables (b-tree or LSM) as a KVEngine.

Configured the way the posts' mongod ran it: snappy block compression, a write-ahead log that is
not synced on commit ("Fsync is not done on commit"), snapshot isolation per transaction, and a
cache size from the params. Each thread gets its own session, since sessions are single-threaded.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

from .base import StoreError
from .kv import KVEngine, KVTxn, WriteConflict

try:
    import wiredtiger
except ImportError as exc:  # pragma: no cover - depends on the build
    wiredtiger = None
    _IMPORT_ERROR = exc


# Tables use key_format=u,value_format=u, for which WiredTiger's packed form of a byte string is
# the string itself: setting and reading raw items skips the binding's pure-Python packer, which
# otherwise costs more than the engine call. The attributes pin the bytes while WiredTiger holds
# a pointer to them, as the binding's own set_key does.
def _set_key(cur, key: bytes) -> None:
    cur._key = key
    cur._set_key(key)


def _set_value(cur, value: bytes) -> None:
    cur._value = value
    cur._set_value(value)


def _is_rollback(exc: Exception) -> bool:
    return "WT_ROLLBACK" in str(exc) or "conflict" in str(exc).lower()


class _Session:
    def __init__(self, conn):
        self.session = conn.open_session()
        self.cursors: dict[str, object] = {}
        self.scan_cursors: dict[str, list] = {}

    def cursor(self, uri: str):
        cur = self.cursors.get(uri)
        if cur is None:
            cur = self.cursors[uri] = self.session.open_cursor(uri)
        return cur

    # Scan cursors are pooled, not opened per scan: the Python binding keeps ~160 bytes for
    # every cursor it ever opened, so a query loop opening one per scan grew the runner by
    # hundreds of MB over an iibench load (and got it OOM-killed under a memory limit).
    def take_scan_cursor(self, uri: str):
        free = self.scan_cursors.get(uri)
        return free.pop() if free else self.session.open_cursor(uri)

    def give_back(self, uri: str, cur) -> None:
        cur.reset()
        self.scan_cursors.setdefault(uri, []).append(cur)


def _translated(exc: Exception) -> Exception:
    """WiredTiger reports a write conflict (or a transaction rolled back to relieve cache
    pressure) as WT_ROLLBACK; the record store retries those as WriteConflict. (Plain
    try/except at each call site: a context manager here cost a fifth of the load's time.)"""
    return WriteConflict(str(exc)) if _is_rollback(exc) else exc


class WTTxn(KVTxn):
    def __init__(self, sess: _Session):
        self.s = sess

    def get(self, table, key):
        cur = self.s.cursor(table)
        _set_key(cur, key)
        try:
            return cur._get_value() if cur.search() == 0 else None
        except wiredtiger.WiredTigerError as exc:
            raise _translated(exc) from None
        finally:
            cur.reset()

    def put(self, table, key, value):
        cur = self.s.cursor(table)
        _set_key(cur, key)
        _set_value(cur, value)
        try:
            cur.insert()
        except wiredtiger.WiredTigerError as exc:
            raise _translated(exc) from None
        finally:
            cur.reset()

    def delete(self, table, key):
        cur = self.s.cursor(table)
        _set_key(cur, key)
        try:
            cur.remove()  # a missing key returns WT_NOTFOUND, which is fine here
        except wiredtiger.WiredTigerError as exc:
            raise _translated(exc) from None
        finally:
            cur.reset()

    def scan(self, table, low, high, reverse=False) -> Iterator[tuple[bytes, bytes]]:
        try:
            yield from self._scan(table, low, high, reverse)
        except wiredtiger.WiredTigerError as exc:
            raise _translated(exc) from None

    def _scan(self, table, low, high, reverse):
        # A dedicated cursor, so a scan can run while the cached cursor does point operations.
        cur = self.s.take_scan_cursor(table)
        try:
            if not reverse:
                if low:  # WiredTiger does not allow an empty key
                    _set_key(cur, low)
                    exact = cur.search_near()
                    if exact == wiredtiger.WT_NOTFOUND or (exact < 0 and cur.next() != 0):
                        return
                elif cur.next() != 0:
                    return
                while True:
                    key = cur._get_key()
                    if high is not None and key >= high:
                        return
                    yield key, cur._get_value()
                    if cur.next() != 0:
                        return
            else:
                if high is None:
                    if cur.prev() != 0:
                        return
                else:
                    _set_key(cur, high)
                    exact = cur.search_near()
                    if exact == wiredtiger.WT_NOTFOUND:
                        return
                    if exact >= 0 and cur.prev() != 0:
                        return
                while True:
                    key = cur._get_key()
                    if key < low:
                        return
                    yield key, cur._get_value()
                    if cur.prev() != 0:
                        return
        finally:
            self.s.give_back(table, cur)


class WiredTigerKV(KVEngine):
    def __init__(self, path: str | Path, *, table_type: str = "btree", cache_size_mb: int = 256,
                 block_compressor: str = "snappy", log: bool = True, checkpoint_s: int = 60,
                 extra_table_config: str = ""):
        if wiredtiger is None:
            raise StoreError(f"the WiredTiger Python module is not installed ({_IMPORT_ERROR}); run `make setup`")
        if table_type not in ("btree", "lsm"):
            raise StoreError(f"table_type must be btree or lsm, got {table_type!r}")
        self.name = "wiredtiger" if table_type == "btree" else "wiredtiger-lsm"
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        # A b-tree table is WiredTiger's default ("type=file"); LSM is asked for by name.
        lsm = ",type=lsm" if table_type == "lsm" else ""
        self._table_config = (f"key_format=u,value_format=u{lsm},block_compressor={block_compressor}"
                              + (f",{extra_table_config}" if extra_table_config else ""))
        self._conn_config = (f"create,cache_size={cache_size_mb}M,session_max=1024,statistics=(fast),"
                             f"checkpoint=(wait={checkpoint_s}),"
                             f"log=(enabled={'true' if log else 'false'}),transaction_sync=(enabled=false)")
        if block_compressor not in ("none", "snappy", "zstd"):
            raise StoreError(f"block_compressor must be none, snappy or zstd, got {block_compressor!r}")
        try:
            self.conn = wiredtiger.wiredtiger_open(str(self.path), self._conn_config)
        except wiredtiger.WiredTigerError as exc:
            raise StoreError(f"WiredTiger could not open {self.path}: {exc}") from exc
        self._local = threading.local()
        self._ddl = threading.Lock()
        self._tables: set[str] = set()
        self._settings = dict(table_type=table_type, cache_size_mb=cache_size_mb,
                              block_compressor=block_compressor, log=log, transaction_sync=False,
                              checkpoint_s=checkpoint_s, table_config=self._table_config,
                              connection_config=self._conn_config)

    def _session(self) -> _Session:
        sess = getattr(self._local, "sess", None)
        if sess is None:
            sess = self._local.sess = _Session(self.conn)
        return sess

    def table(self, name: str):
        uri = f"table:{name.replace(':', '.')}"
        with self._ddl:
            if uri not in self._tables:
                sess = self.conn.open_session()
                try:
                    sess.create(uri, self._table_config)
                except wiredtiger.WiredTigerError as exc:
                    raise StoreError(f"WiredTiger could not create {uri} with {self._table_config}: {exc}") from exc
                finally:
                    sess.close()
                self._tables.add(uri)
        return uri

    def begin(self, write: bool) -> KVTxn:
        sess = self._session()
        sess.session.begin_transaction("isolation=snapshot")
        return WTTxn(sess)

    def commit(self, txn: WTTxn) -> None:
        try:
            txn.s.session.commit_transaction()
        except wiredtiger.WiredTigerError as exc:
            raise _translated(exc) from None

    def abort(self, txn: WTTxn) -> None:
        try:
            txn.s.session.rollback_transaction()
        except wiredtiger.WiredTigerError:
            pass  # nothing active (a failed commit already rolled back)

    def version(self) -> str:
        return wiredtiger.wiredtiger_version()[0]

    def config(self) -> dict:
        return dict(self._settings)

    # Counters that explain cache behaviour and write amplification, as serverStatus shows them.
    _STATS = ("cache: bytes read into cache", "cache: bytes written from cache",
              "cache: pages read into cache", "cache: pages written from cache",
              "cache: bytes currently in the cache", "cache: maximum bytes configured",
              "cache: pages evicted by application threads", "cache: unmodified pages evicted",
              "cache: modified pages evicted",
              "transaction: transaction checkpoints", "transaction: transaction checkpoint total time (msecs)",
              "transaction: transactions rolled back", "log: log bytes written",
              "block-manager: bytes read", "block-manager: bytes written")

    def stats(self) -> dict:
        sess = self.conn.open_session()
        out = {}
        try:
            cur = sess.open_cursor("statistics:", None, None)
            while cur.next() == 0:
                desc, _, value = cur.get_value()
                if desc in self._STATS:
                    out["wt." + desc] = int(value)
            cur.close()
        finally:
            sess.close()
        return out

    def checkpoint(self) -> None:
        sess = self.conn.open_session()
        try:
            sess.checkpoint()
        finally:
            sess.close()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
