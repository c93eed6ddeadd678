"""What the native runner needs to run flashback_replay on an embedded engine.

The application mix and its translation to MongoDB commands are defined once, here in Python
(appmix.py, commands.py); the native runner only executes Store-level op streams. So before a
system runs, this module writes, once per run (in <run>/flashback/):
- dataset.jsonl: the Store calls that create and load the dataset a capture ran on;
- app.ops.jsonl: the bundled mix as an ops file (format.py), each op with its Store call and the
  command it stands for; the first system (the recorder) runs it live and captures what it ran;
- for a `capture_file` recorded from a mongod, a Store-level version of it: each op that names
  one document by `_id` (or a whole collection) as the Store call it translates to
  (execute_store.py), every other op marked with the reason it cannot replay here.
and it gives each system its role and files.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from bson import json_util

from .appmix import DATABASE, AppMix, AppMixConfig
from .commands import to_command
from .capture_store import schema_of
from .execute_store import NotReplayable, store_call_args
from .format import dumps, header, read_capture
from .workload import CAPTURE

_RELAXED = json_util.JSONOptions(json_mode=json_util.JSONMode.RELAXED)


def _dataset_app(capture) -> AppMix | None:
    """The dataset a capture ran on (its header), so a replay starts from the same data."""
    dataset = capture.header.get("dataset") or {}
    if dataset.get("generator") != "appmix":
        return None
    return AppMix(AppMixConfig(**dataset["config"]))


def write_dataset(app: AppMix, path: Path) -> None:
    """The schema, then the load batches, as Store calls (collection, method, args)."""
    with open(path, "w") as fh:
        for name, meta in app.collections().items():
            fh.write(json.dumps({"collection": name, "method": "create_collection",
                                 "args": {"capped_bytes": meta["capped_bytes"]}}) + "\n")
            for index in meta["indexes"]:
                fh.write(json.dumps({"collection": name, "method": "create_index", "args": {"spec": index}}) + "\n")
        for collection, docs in app.load_batches():
            fh.write(json_util.dumps({"collection": collection, "method": "insert_many", "args": {"docs": docs}},
                                     json_options=_RELAXED) + "\n")


def write_app_stream(app: AppMix, path: Path) -> None:
    """The bundled mix as an ops file whose ops carry their command (what a capture records)."""
    schema = schema_of(app.collections())
    with open(path, "w") as fh:
        fh.write(dumps(header("generated", app.collections(), dataset=app.descriptor(),
                              origin={"generator": "appmix"})) + "\n")
        for record in app.operations():
            collection = record["ns"].split(".", 1)[1]
            args = record["store"]["args"]
            record["op"], record["command"] = to_command(record["store"]["method"], collection,
                                                         {"collection": collection, **args},
                                                         schema[collection]["indexes"])
            if record["store"]["method"] == "insert_many":  # the documents are in the command
                record["store"] = {"method": "insert_many", "args": {k: v for k, v in args.items() if k != "docs"}}
            fh.write(dumps(record) + "\n")


def write_store_level(capture, path: Path) -> None:
    """A capture with every op as a Store call, or marked with why it cannot be one."""
    with open(path, "w") as fh:
        fh.write(dumps(capture.header) + "\n")
        for record in capture.ops():
            if record.get("store") is None:
                try:
                    record["store"] = store_call_args(record)
                except NotReplayable as exc:
                    record["skip"] = str(exc)
            fh.write(dumps(record) + "\n")


def prepare(params: dict, system: dict, run_dir: Path, system_dir: Path) -> dict:
    """The runner's workload params for this system: its role, the files it reads and writes."""
    workload = {k: v for k, v in params["workload"].items() if k != "name"}
    shared = run_dir / "flashback"
    shared.mkdir(exist_ok=True)
    recorder = params["systems"][0]["label"]
    if workload.get("capture_file"):
        role, capture = "replayer", read_capture(workload["capture_file"])
        stream = shared / "capture.store.jsonl"
        if not stream.is_file():
            write_store_level(capture, stream)
    elif system["label"] == recorder:
        role = "recorder"
        app = AppMix(AppMixConfig(**{k: v for k, v in workload.items() if k in AppMixConfig.model_fields}))
        stream = shared / "app.ops.jsonl"
        if not stream.is_file():
            write_app_stream(app, stream)
        capture = read_capture(stream)
    else:
        role, stream = "replayer", run_dir / recorder / CAPTURE
        if not stream.is_file():
            raise FileNotFoundError(f"{stream}: the recorder ({recorder}) left no capture to replay; see its runner.log")
        capture = read_capture(stream)
    app = _dataset_app(capture)
    dataset = None
    if app is not None:
        dataset = shared / f"dataset-{app.cfg.seed}-{app.cfg.users}-{app.cfg.posts}.jsonl"
        if not dataset.is_file():
            write_dataset(app, dataset)
    collections = capture.header["collections"]
    out = {
        "role": role, "stream": str(stream), "dataset": str(dataset) if dataset else None,
        "expected": app.expected_after_load() if app else None,
        "collections": collections,
        "capped": sorted(n for n, m in collections.items() if m.get("capped_bytes")),
        "out_dir": str(system_dir),
        "style": "real" if role == "recorder" else workload["style"],
        "speedup": 1.0 if role == "recorder" else workload["speedup"],
        "op_filter": None if role == "recorder" else workload.get("op_filter"),
    }
    if role == "recorder":
        out["capture_out"] = str(system_dir / CAPTURE)
        out["capture_header"] = header("store", collections, dataset=app.descriptor() if app else None,
                                       origin={"system": system["label"], "engine": system["engine"]},
                                       created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return out


__all__ = ["DATABASE", "prepare"]
