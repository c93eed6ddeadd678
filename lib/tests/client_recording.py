"""A store that answers every call with "nothing there" and writes what each worker asked, in
order, to a file per process: the same phase run as threads and in client processes
(runner/clients.py) can then be compared call by call, worker by worker."""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from bson import ObjectId
from bson.binary import Binary

from enginebench.stores.base import UpdateResult

# What a read returns when nothing matches; every other call reports 0 documents touched.
EMPTY = {"get": None, "get_many": [], "scan": [], "iter_index": iter(())}
# Values that depend on the wall clock or are random per call, not on the seed.
CLOCK_FIELDS = frozenset({"time", "dateandtime"})


def plain(value):
    """A call's arguments without clock fields and ObjectIds, as JSON-ready values."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k not in CLOCK_FIELDS and not isinstance(v, ObjectId)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value if not isinstance(v, ObjectId)]
    if isinstance(value, (bytes, Binary)):
        return bytes(value).hex()
    return value


class RecordingStore:
    atomic = False

    def __init__(self, folder: Path):
        self.path = Path(folder) / f"{os.getpid()}.jsonl"
        self.lock = threading.Lock()
        self.out = open(self.path, "a")

    def run_in_transaction(self, fn, *args, **kwargs):
        return fn(*args, **kwargs)

    def stats(self) -> dict:
        return {}

    def close(self) -> None:
        self.out.close()

    def __getattr__(self, name: str):
        def call(*args, **kwargs):
            line = json.dumps({"worker": threading.current_thread().name, "call": name,
                               "args": plain(list(args)), "kwargs": plain(kwargs)}, default=str)
            with self.lock:
                self.out.write(line + "\n")
                self.out.flush()
            if name in EMPTY:
                return EMPTY[name]
            if name == "update":
                return UpdateResult(matched=False, upserted=bool(kwargs.get("upsert")))
            return len(args[1]) if name in ("insert_many", "upsert_many") else 0
        return call


def open_recording_store(spec: dict) -> RecordingStore:
    return RecordingStore(spec["record_dir"])


def recorded(folder: Path) -> dict[str, list[dict]]:
    """Every worker's calls, in the order it made them (across the processes' files)."""
    calls: dict[str, list[dict]] = {}
    for path in sorted(Path(folder).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            calls.setdefault(entry.pop("worker"), []).append(entry)
    return calls
