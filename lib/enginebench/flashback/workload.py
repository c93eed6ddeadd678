"""The flashback_replay experiment: record the bundled workload on the first system, replay it on
the others, as Parse did with production traffic (seed 003).

Every system first loads the same dataset (the capture's header says which), as each of Parse's
replica sets started from the same imported production data. Then:
- the first system in the params (the recorder) runs the bundled application mix live, at its own
  Poisson pace, through a CapturingStore, and leaves `capture.ops.jsonl` in its results folder;
- every later system replays that file from the run folder, in the configured style.
With `capture_file` set, there is no recorder: every system replays that file.
Per op type, the run phase's HdrHistograms give the latency table; per query and count, a row of
(documents scanned, latency) goes to `scans.csv` in the system's results folder.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ..runner.phases import run_phase
from ..runner.plan import outcome
from ..stores.base import Store
from .appmix import DATABASE, AppMix, AppMixConfig
from .capture_store import CapturingStore
from .execute_mongo import executor_for
from .format import CaptureError, read_capture, summary
from .replay import Replayer

CAPTURE = "capture.ops.jsonl"
SCANS = "scans.csv"
SUMMARY = "replay.json"
LOADERS = 2


@dataclass(frozen=True)
class FlashbackConfig:
    app: AppMixConfig
    style: str = "real"
    speedup: float = 1.0
    workers: int = 10
    op_filter: tuple[str, ...] | None = None
    interval_s: float = 10.0
    capture_file: str | None = None

    @classmethod
    def from_params(cls, params: dict) -> "FlashbackConfig":
        app_keys = AppMixConfig.__dataclass_fields__
        app = AppMixConfig(**{k: v for k, v in params.items() if k in app_keys})
        rest = {k: v for k, v in params.items() if k not in app_keys}
        if rest.get("op_filter") is not None:
            rest["op_filter"] = tuple(rest["op_filter"])
        return cls(app=app, **rest)


def op_label(collections: dict):
    """Inserts into a capped collection are their own op type in the results (the post's capped finding)."""
    capped = {name for name, meta in collections.items() if meta.get("capped_bytes")}

    def label(record: dict) -> str:
        if record["op"] == "insert" and record["ns"].split(".", 1)[1] in capped:
            return "insert.capped"
        return record["op"]
    return label


class FlashbackReplay:
    name = "flashback"
    load_accounting = {"rate": "items", "rate_ops": None, "per_op": None}

    def __init__(self, config: FlashbackConfig):
        self.cfg = config
        self.app = AppMix(config.app)

    def expected_after_load(self) -> dict:
        return self.app.expected_after_load()

    # -- who records, what is replayed ----------------------------------------------------
    def _role(self, phases: dict):
        system_dir, run_dir = Path(phases["system_dir"]), Path(phases["run_dir"])
        if self.cfg.capture_file:
            return "replayer", read_capture(self.cfg.capture_file)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        recorder = manifest["params"]["systems"][0]["label"]
        if system_dir.name == recorder:
            return "recorder", None
        path = run_dir / recorder / CAPTURE
        if not path.is_file():
            raise CaptureError(f"{path}: the recorder ({recorder}) left no capture to replay; see its runner.log")
        return "replayer", read_capture(path)

    def _dataset(self, capture) -> AppMix:
        """The dataset the capture ran on (its header), so a replay starts from the same data."""
        if capture is None:
            return self.app
        dataset = capture.header.get("dataset") or {}
        if dataset.get("generator") != "appmix":
            return None
        return AppMix(AppMixConfig(**dataset["config"]))

    # -- the plan -------------------------------------------------------------------------
    def _load(self, app: AppMix, store: Store, emit, abort, phases: dict):
        batches = list(app.load_batches())
        # The capped log must be filled in order (its oldest events go first): one loader of its own.
        capped = [b for b in batches if b[0] == "events"]
        others = [b for b in batches if b[0] != "events"]

        def loader(share):
            def work(store, rec, stop):
                for collection, docs in share:
                    if stop.is_set():
                        return
                    rec.call(f"LOAD_{collection.upper()}", store.insert_many, collection, docs, items=len(docs))
            return work
        workers = [loader(others[i::LOADERS]) for i in range(LOADERS)] + [loader(capped)]
        return run_phase("load", workers, store, emit,
                         interval_s=phases["load_interval_s"], duration_s=None, abort=abort, max_errors=0,
                         engine_stats=store.stats, accounting=self.load_accounting)

    def run_plan(self, store: Store, phases: dict, emit, abort, reopen=None) -> str:
        role, capture = self._role(phases)
        system_dir = Path(phases["system_dir"])
        app = self._dataset(capture)
        emit({"event": "flashback", "role": role, "capture": str(capture.path) if capture else str(system_dir / CAPTURE),
              "style": "real" if role == "recorder" else self.cfg.style,
              "speedup": 1.0 if role == "recorder" else self.cfg.speedup, "workers": self.cfg.workers,
              "op_filter": None if role == "recorder" else self.cfg.op_filter})
        collections = capture.header["collections"] if capture else self.app.collections()
        if app is not None:
            app.setup(store)
            load = self._load(app, store, emit, abort, phases)
            if outcome(load):
                return outcome(load)
            expected = app.expected_after_load()
            found = {name: store.count(name, None) for name in expected}
            emit({"event": "load_verified", "expected": expected, "found": found, "ok": expected == found})
        else:  # a capture of someone else's data: the collections exist, empty, as the header says
            for name, meta in collections.items():
                store.create_collection(name, meta.get("capped_bytes"))
        started = time.time()
        store.checkpoint()
        time.sleep(phases["quiesce_s"])
        emit({"event": "quiesce", "seconds": time.time() - started, "checkpoint": True})

        if role == "recorder":
            target = CapturingStore(store, system_dir / CAPTURE, database=DATABASE, collections=collections,
                                    dataset=self.app.descriptor(),
                                    origin={"system": system_dir.name, "engine": store.info().engine})
            replayer = Replayer(self.app.operations(), style="real", speedup=1.0, workers=self.cfg.workers,
                                label=op_label(collections))
        else:
            target = store
            replayer = Replayer(capture.ops(), style=self.cfg.style, speedup=self.cfg.speedup,
                                workers=self.cfg.workers, select=self.cfg.op_filter, label=op_label(collections),
                                prepare=executor_for(store))
        result = run_phase("run", replayer.workers(), target, emit, interval_s=self.cfg.interval_s, duration_s=None,
                           abort=abort, max_errors=phases["max_errors"], engine_stats=store.stats)
        captured = target.finish() if role == "recorder" else None
        self._report(replayer, role, capture, captured, system_dir, emit)
        return outcome(result) or "complete"

    def _report(self, replayer: Replayer, role: str, capture, captured: int | None, system_dir: Path, emit) -> None:
        stats = replayer.merged()
        rows = pl.DataFrame(stats.rows, schema={"op": pl.Utf8, "docs_scanned": pl.Int64, "latency_us": pl.Int64,
                                                "due_s": pl.Float64}, orient="row")
        rows.write_csv(system_dir / SCANS)
        in_file = summary(capture, replayer.label) if capture is not None else None
        lag = stats.lag
        event = {"event": "replay_summary", "role": role, "ops_read": stats.read, "ops_run": stats.run,
                 "skipped": stats.skipped, "captured_ops": captured, "capture_ops_per_type": in_file,
                 "lag_ms": ({"p50": lag.get_value_at_percentile(50) / 1000, "p99": lag.get_value_at_percentile(99) / 1000,
                             "max": lag.get_max_value() / 1000, "ops": lag.get_total_count()}
                            if lag.get_total_count() else None)}
        (system_dir / SUMMARY).write_text(json.dumps(event, indent=2))
        emit(event)
