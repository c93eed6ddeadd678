"""The ops file (format version 1): one header line, then one operation per line, in time order.

Each line is a JSON object in MongoDB's relaxed Extended JSON (bson.json_util), so ObjectIds,
binary data and dates survive the round trip while numbers stay plain JSON numbers and the file
stays readable and diffable. Flashback's own files were raw BSON; JSON lines keep the types that
matter and can be read, cut and fixed with ordinary tools. (Relaxed mode does not keep the width
of an integer: a 64-bit integer that fits 32 bits comes back as a 32-bit one.)

Header: {"format": "enginebench.flashback", "version": 1, "source": ..., "created_at": ...,
         "collections": {name: {"capped_bytes": int|null, "indexes": [...]}}, "dataset": {...}|null,
         "origin": {...}}
Op:     {"ts": unix seconds (float), "ns": "db.collection", "op": one of OP_TYPES,
         "command": the full MongoDB command document,
         optional "store": {"method", "args"} (the exact Store call, for Store-level captures),
         optional "docs_scanned", "cursor_id", "millis", "ninserted" (what the source reported)}

Op types and the command each carries (as mongod receives it, server-added fields such as $db
and lsid removed):
  insert         {"insert": coll, "documents": [...], "ordered": ...}
  query          {"find": coll, "filter", "sort", "projection", "skip", "limit", "batchSize", "hint"}
  getmore        {"getMore": <the captured cursor id>, "collection": coll, "batchSize"}
  update         {"update": coll, "updates": [{"q", "u", "multi", "upsert"}]}
  remove         {"delete": coll, "deletes": [{"q", "limit": 0 (all) | 1}]}
  count          {"count": coll, "query": {...}, "limit", "hint"}
  findandmodify  {"findAndModify": coll, "query", "sort", "update" | "remove", "new", "upsert", "fields"}
  command        any other command, as captured
A Store-level op's "store" names the Store method and its arguments by parameter name (tuples
become lists; an insert's documents are not repeated: they are the command's).
A reader accepts every version up to VERSION and refuses newer ones, naming the file.
"""
from __future__ import annotations

import math
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from bson import json_util

FORMAT = "enginebench.flashback"
VERSION = 1
# Flashback's op vocabulary, with count and findAndModify as types of their own (it kept them as
# command.count and command.findandmodify) and every other command as `command`.
OP_TYPES = ("insert", "query", "getmore", "update", "remove", "count", "findandmodify", "command")
SOURCES = ("store", "profiler", "generated")
_JSON = json_util.JSONOptions(json_mode=json_util.JSONMode.RELAXED, tz_aware=True)


class CaptureError(ValueError):
    """An ops file that cannot be read; the message names the file and line."""


def header(source: str, collections: dict, *, dataset: dict | None = None, origin: dict | None = None,
           created_at: str | None = None) -> dict:
    if source not in SOURCES:
        raise ValueError(f"unknown capture source {source!r}; allowed: {', '.join(SOURCES)}")
    return {"format": FORMAT, "version": VERSION, "source": source, "created_at": created_at,
            "collections": collections, "dataset": dataset, "origin": origin or {}}


def dumps(record: dict) -> str:
    return json_util.dumps(record, json_options=_JSON)


def loads(line: str) -> dict:
    return json_util.loads(line, json_options=_JSON)


def check_op(record: dict, where: str) -> dict:
    """Validate one op record; raises CaptureError naming `where` (file:line) and the field."""
    if not isinstance(record, dict):
        raise CaptureError(f"{where}: an op must be a JSON object")
    ts = record.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts):
        raise CaptureError(f"{where}: ts must be a number of seconds since the epoch (got {ts!r})")
    ns = record.get("ns")
    if not isinstance(ns, str) or "." not in ns:
        raise CaptureError(f"{where}: ns must be 'database.collection' (got {ns!r})")
    if record.get("op") not in OP_TYPES:
        raise CaptureError(f"{where}: op {record.get('op')!r} is not allowed; allowed: {', '.join(OP_TYPES)}")
    if not isinstance(record.get("command"), dict) or not record["command"]:
        raise CaptureError(f"{where}: command must be the operation's MongoDB command document")
    store = record.get("store")
    if store is not None and not (isinstance(store, dict) and isinstance(store.get("method"), str)
                                  and isinstance(store.get("args"), dict)):
        raise CaptureError(f"{where}: store must be {{'method': name, 'args': {{...}}}}")
    return record


def collection_of(record: dict) -> str:
    """The collection part of the namespace (database names have no dots; collections may)."""
    return record["ns"].split(".", 1)[1]


@dataclass
class Capture:
    path: Path
    header: dict

    def ops(self, select: tuple[str, ...] | None = None) -> Iterator[dict]:
        """The ops in file order, validated; `select` keeps only those op types (a filter that
        selects, where Flashback's --op_filter excluded)."""
        with open(self.path) as fh:
            next(fh)
            for number, line in enumerate(fh, start=2):
                if not line.strip():
                    continue
                where = f"{self.path}:{number}"
                try:
                    record = loads(line)
                except (ValueError, TypeError) as exc:
                    raise CaptureError(f"{where}: not a JSON object: {exc}") from None
                check_op(record, where)
                if select is None or record["op"] in select:
                    yield record


def read_capture(path: str | Path) -> Capture:
    """Open an ops file and check its header; ops are read lazily with Capture.ops()."""
    path = Path(path)
    if not path.is_file():
        raise CaptureError(f"{path}: no such ops file")
    with open(path) as fh:
        first = fh.readline()
    try:
        head = loads(first)
    except (ValueError, TypeError):
        raise CaptureError(f"{path}:1: the first line must be the header object") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise CaptureError(f"{path}:1: not an ops file (format must be {FORMAT!r}, got "
                           f"{head.get('format') if isinstance(head, dict) else head!r})")
    version = head.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise CaptureError(f"{path}:1: format version {version!r} is not supported; this reader knows 1..{VERSION}")
    if head.get("source") not in SOURCES:
        raise CaptureError(f"{path}:1: source {head.get('source')!r} is not allowed; allowed: {', '.join(SOURCES)}")
    if not isinstance(head.get("collections"), dict):
        raise CaptureError(f"{path}:1: collections must map collection names to their schema")
    return Capture(path, head)


def write_capture(path: str | Path, head: dict, records) -> int:
    """Write a whole ops file at once (generated streams, conversions, tests); returns ops written."""
    n = 0
    with open(path, "w") as fh:
        fh.write(dumps(head) + "\n")
        for record in records:
            fh.write(dumps(record) + "\n")
            n += 1
    return n


class CaptureWriter:
    """Appends op records from many threads; a background thread encodes and writes them, so the
    threads being captured only pay for a queue put. Records must be added in time order (the
    capturing code takes the timestamp and adds under one lock)."""

    def __init__(self, path: str | Path, head: dict, encode=None):
        self.path = Path(path)
        self.encode = encode or (lambda item: item)  # turns a queued item into an op record
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._fh = open(self.path, "w")
        self._fh.write(dumps(head) + "\n")
        self.written = 0
        self.error: str | None = None
        self._thread = threading.Thread(target=self._drain, name="capture-writer", daemon=True)
        self._thread.start()

    def add(self, item) -> None:
        self._queue.put(item)

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self.error:
                continue  # keep draining so producers never block; the error is reported at close
            try:
                self._fh.write(dumps(self.encode(item)) + "\n")
                self.written += 1
            except Exception as exc:
                self.error = f"{type(exc).__name__}: {exc}"

    def close(self) -> int:
        self._queue.put(None)
        self._thread.join()
        self._fh.close()
        if self.error:
            raise CaptureError(f"{self.path}: capture failed: {self.error}")
        return self.written


def summary(capture: Capture, label=lambda record: record["op"]) -> dict[str, int]:
    """Ops per type (or per `label(record)`) in a capture, for the captured-versus-replayed check."""
    counts: dict[str, int] = {}
    for record in capture.ops():
        key = label(record)
        counts[key] = counts.get(key, 0) + 1
    return counts


__all__ = ["FORMAT", "VERSION", "OP_TYPES", "SOURCES", "Capture", "CaptureError", "CaptureWriter", "check_op",
           "collection_of", "dumps", "header", "loads", "read_capture", "summary", "write_capture"]
