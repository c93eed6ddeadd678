"""The native runner's targets, driven call by call from Python: `enginebench-runner serve`.

The workloads run in the native runner (lib/native); this Store sends each call to a `serve`
process as a JSON line and reads the answer, so the tests exercise the very code the runner
measures: the record store over an embedded engine (the same layout, engine settings and
transactions), or a server through the runner's executors (the same commands). Each Python
thread gets a session of its own in the server, on a thread of its own there, so concurrent
tests are concurrent in the engine. Values travel as canonical Extended JSON, which keeps every
BSON type (int32 / int64 / double / binary / ObjectId).
"""
from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

from bson import json_util

from ..paths import native_runner
from .base import DuplicateKey, IndexSpec, Store, StoreError, StoreInfo, UpdateResult

_JSON = json_util.CANONICAL_JSON_OPTIONS
MAX_CONFLICT_RETRIES = 1000


class WriteConflict(StoreError):
    """Two transactions wrote the same key; the transaction is retried."""


def _encode(value):
    """A Python value as canonical Extended JSON (tuples become lists)."""
    return json.loads(json_util.dumps(_lists(value), json_options=_JSON))


def _lists(value):
    if isinstance(value, tuple):
        return [_lists(v) for v in value]
    if isinstance(value, list):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


def _decode(value):
    return json_util.loads(json.dumps(value), json_options=_JSON)


class NativeStore(Store):
    def __init__(self, engine: str, path: str | Path, options: dict, *, server: dict | None = None):
        """An embedded `engine` with its data in `path`; or, with `server` (the runner spec's
        `server` part: uri, database, executor, companion, ...), that server."""
        if server is None:
            Path(path).mkdir(parents=True, exist_ok=True)
            from ..engines import full_options
            argv = ["--engine", engine, "--dir", str(path), "--options", json.dumps(full_options(engine, options))]
        else:
            argv = ["--server", json.dumps(server)]
        self.engine = engine
        self.proc = subprocess.Popen([str(native_runner()), "serve", *argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        ready = json.loads(self.proc.stdout.readline() or '{"error": {"message": "the server exited"}}')
        if "error" in ready:
            self.proc.wait()
            where = server["uri"] if server else path
            raise StoreError(f"{engine} could not be opened at {where}: {ready['error']['message']}")
        self.atomic = True if server is None else None   # a server says, once asked (atomic below)
        self._ids = itertools.count(1)
        self._sessions = itertools.count(1)
        self._local = threading.local()
        self._waiting: dict[int, queue.Queue] = {}
        self._send_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="native-store-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            answer = json.loads(line)
            waiter = self._waiting.pop(answer.get("id"), None)
            if waiter is not None:
                waiter.put(answer)
        for waiter in list(self._waiting.values()):
            waiter.put({"error": {"type": "StoreError", "message": "the native store server exited"}})

    def _session(self) -> int:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = next(self._sessions)
        return session

    # Arguments that carry documents or field values travel as Extended JSON; the rest (names,
    # flags, counts) as plain JSON.
    _DATA = ("docs", "key", "prefix", "low", "high", "last_values", "set", "inc", "set_on_insert", "replace", "where")

    def _call(self, op: str, **args):
        request_id = next(self._ids)
        answer_box: queue.Queue = queue.Queue(maxsize=1)
        self._waiting[request_id] = answer_box
        request = {"id": request_id, "session": self._session(), "op": op,
                   **{k: (_encode(v) if k in self._DATA else v) for k, v in args.items()}}
        with self._send_lock:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        answer = answer_box.get()
        if "error" in answer:
            kind, message = answer["error"]["type"], answer["error"]["message"]
            if kind == "DuplicateKey":
                raise DuplicateKey(message)
            if kind == "WriteConflict":
                raise WriteConflict(message)
            raise StoreError(f"{kind}: {message}")
        return _decode(answer["ok"])

    # -- schema ---------------------------------------------------------------------------
    def create_collection(self, name: str, capped_bytes: int | None = None) -> None:
        self._call("create_collection", name=name, capped_bytes=capped_bytes)

    def create_index(self, collection: str, spec: IndexSpec) -> None:
        self._call("create_index", collection=collection,
                   spec={"name": spec.name, "fields": [list(f) for f in spec.fields], "unique": spec.unique})

    # -- writes ---------------------------------------------------------------------------
    def insert_many(self, collection: str, docs: Sequence[dict]) -> int:
        return self._call("insert_many", collection=collection, docs=list(docs))

    def update(self, collection, index, key, *, set=None, inc=None, set_on_insert=None, where=None,
               upsert=False, return_before=False, replace=None) -> UpdateResult:
        out = self._call("update", collection=collection, index=index, key=list(key), set=set, inc=inc,
                         set_on_insert=set_on_insert, replace=replace, where=where, upsert=upsert,
                         return_before=return_before)
        return UpdateResult(matched=out["matched"] if out.get("acknowledged", True) else None,
                            upserted=out["upserted"], before=out["before"])

    def delete(self, collection, index, key, *, where=None) -> bool:
        return self._call("delete", collection=collection, index=index, key=list(key), where=where)

    # -- reads ----------------------------------------------------------------------------
    def get(self, collection, index, key):
        return self._call("get", collection=collection, index=index, key=list(key))

    def get_many(self, collection, index, prefix, last_values):
        return self._call("get_many", collection=collection, index=index, prefix=list(prefix),
                          last_values=list(last_values))

    @staticmethod
    def _bound(value):
        return None if value is None else (list(value) if isinstance(value, tuple) else [value])

    def scan(self, collection, index, prefix=(), *, low=None, high=None, reverse=False, skip=0, limit=None,
             fields=None):
        return self._call("scan", collection=collection, index=index, prefix=list(prefix), low=self._bound(low),
                          high=self._bound(high), reverse=reverse, skip=skip, limit=limit,
                          fields=list(fields) if fields is not None else None)

    def count(self, collection, index, prefix=(), *, low=None, high=None, limit=None) -> int:
        return self._call("count", collection=collection, index=index, prefix=list(prefix), low=self._bound(low),
                          high=self._bound(high), limit=limit)

    def iter_index(self, collection, index) -> Iterator[tuple]:
        for fields in self._call("iter_index", collection=collection, index=index):
            yield tuple(fields)

    def natural(self, collection: str, limit: int | None = None) -> list[dict]:
        """Documents in insertion order, oldest first (what a capped collection keeps)."""
        return self._call("natural", collection=collection, limit=limit)

    # -- transactions and lifecycle -------------------------------------------------------
    def run_in_transaction(self, fn, *args, **kwargs):
        if self.atomic is None:
            self.atomic = self._call("atomic")
        if getattr(self._local, "in_txn", False) or not self.atomic:
            return fn(*args, **kwargs)
        for attempt in range(MAX_CONFLICT_RETRIES):
            self._call("begin")
            self._local.in_txn = True
            try:
                result = fn(*args, **kwargs)
                self._local.in_txn = False
                self._call("commit")
                return result
            except WriteConflict:
                self._local.in_txn = False
                self._call("abort")
                time.sleep(min(0.0001 * 2 ** min(attempt, 10), 0.05))
            except BaseException:
                if self._local.in_txn:
                    self._local.in_txn = False
                    self._call("abort")
                raise
        raise StoreError(f"gave up after {MAX_CONFLICT_RETRIES} write conflicts")

    def info(self) -> StoreInfo:
        out = self._call("info")
        return StoreInfo(engine=out["engine"], version=out["version"], config=out.get("config") or {})

    def stats(self) -> dict:
        return self._call("stats")

    def checkpoint(self) -> None:
        self._call("checkpoint")

    def close(self) -> None:
        if self.proc.poll() is None:
            with self._send_lock:
                try:
                    self.proc.stdin.write(json.dumps({"op": "close"}) + "\n")
                    self.proc.stdin.close()
                except BrokenPipeError:
                    pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.returncode not in (0, None):
            raise StoreError(f"the native store server exited with {self.proc.returncode}: "
                             f"{self.proc.stderr.read()[-2000:]}")
