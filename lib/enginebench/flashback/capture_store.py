"""Capture the Store-level operation stream of a run: a Store that records every call it passes on.

Wrap any Store (an embedded engine or MongoStore) and every workload's calls land in an ops file
with the time each call started, its collection, its type, the MongoDB command it stands for and
the exact Store call, so the capture replays exactly on any Store and as commands on a mongod.
Capturing costs the caller one lock and one queue put per call; encoding and writing happen on
the writer's own thread (in the same process, so they share its CPU, as Flashback's profiler
capture added load to the server it recorded).
"""
from __future__ import annotations

import inspect
import threading
import time

from ..stores.base import IndexSpec, Store
from .commands import to_command
from .format import CaptureWriter, header

# Store methods captured, with their parameter names (so args are stored by name).
CAPTURED = ("create_collection", "create_index", "insert_many", "update", "delete", "get", "get_many", "scan", "count")
_PARAMS = {m: [p for p in inspect.signature(getattr(Store, m)).parameters if p != "self"] for m in CAPTURED}


def schema_of(collections: dict) -> dict[str, dict]:
    """The header's `collections` as {name: {"capped_bytes", "indexes": {name: IndexSpec}}}."""
    out = {}
    for name, meta in collections.items():
        specs = {i["name"]: IndexSpec(i["name"], tuple((f, d) for f, d in i["fields"]), bool(i.get("unique")))
                 for i in meta.get("indexes", [])}
        out[name] = {"capped_bytes": meta.get("capped_bytes"), "indexes": specs}
    return out


class CapturingStore(Store):
    def __init__(self, inner: Store, path, *, database: str = "enginebench", collections: dict | None = None,
                 dataset: dict | None = None, origin: dict | None = None):
        self.inner = inner
        self.database = database
        # Indexes created before capture started (the loaded dataset) come from the header.
        self.schema = schema_of(collections or {})
        head = header("store", collections or {}, dataset=dataset, origin=origin,
                      created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        self.writer = CaptureWriter(path, head, encode=self._record)
        self._lock = threading.Lock()
        self.atomic = inner.atomic

    def _record(self, item) -> dict:
        ts, method, args = item
        collection = args["collection"]
        meta = self.schema.setdefault(collection, {"capped_bytes": None, "indexes": {}})
        if method == "create_index":
            meta["indexes"][args["spec"].name] = args["spec"]
        elif method == "create_collection" and args.get("capped_bytes"):
            meta["capped_bytes"] = args["capped_bytes"]
        op, command = to_command(method, collection, args, meta["indexes"])
        # An insert's documents are in its command already; the Store call refers to them.
        store_args = {k: v for k, v in args.items() if k not in ("collection", "docs")}
        if method == "create_index":
            spec = args["spec"]
            store_args["spec"] = {"name": spec.name, "fields": [list(f) for f in spec.fields], "unique": spec.unique}
        return {"ts": ts, "ns": f"{self.database}.{collection}", "op": op, "command": command,
                "store": {"method": method, "args": store_args}}

    def _call(self, method: str, *args, **kwargs):
        bound = dict(zip(_PARAMS[method], args))
        bound.update(kwargs)
        if "name" in bound:  # create_collection names its collection `name`
            bound["collection"] = bound.pop("name")
        with self._lock:  # the timestamp and the queue order agree, so the file is in time order
            self.writer.add((time.time(), method, bound))
        return getattr(self.inner, method)(*args, **kwargs)

    # -- the Store interface, captured ----------------------------------------------------
    def create_collection(self, name, capped_bytes=None):
        return self._call("create_collection", name, capped_bytes=capped_bytes)

    def create_index(self, collection, spec):
        return self._call("create_index", collection, spec)

    def insert_many(self, collection, docs):
        return self._call("insert_many", collection, list(docs))

    def update(self, collection, index, key, **kwargs):
        return self._call("update", collection, index, key, **kwargs)

    def delete(self, collection, index, key, **kwargs):
        return self._call("delete", collection, index, key, **kwargs)

    def get(self, collection, index, key):
        return self._call("get", collection, index, key)

    def get_many(self, collection, index, prefix, last_values):
        return self._call("get_many", collection, index, prefix, list(last_values))

    def scan(self, collection, index, prefix=(), **kwargs):
        return self._call("scan", collection, index, prefix, **kwargs)

    def count(self, collection, index, prefix=(), **kwargs):
        return self._call("count", collection, index, prefix, **kwargs)

    # -- passed through, not captured -----------------------------------------------------
    def iter_index(self, collection, index):
        return self.inner.iter_index(collection, index)

    def run_in_transaction(self, fn, *args, **kwargs):
        return self.inner.run_in_transaction(fn, *args, **kwargs)

    def info(self):
        return self.inner.info()

    def stats(self):
        return self.inner.stats()

    def checkpoint(self):
        self.inner.checkpoint()

    def finish(self) -> int:
        """Stop capturing and flush the file; returns the number of ops written."""
        return self.writer.close()

    def close(self):
        self.inner.close()
