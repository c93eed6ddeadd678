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
from pathlib import Path
from typing import ClassVar, Literal

import polars as pl
from pydantic import Field, field_validator

from ..params.phases import PhaseUse, WorkloadParams, uses
from ..stores.base import Store
from ..workloads.base import Workload
from .appmix import DATABASE, EVENTS, AppMix, AppMixConfig
from .capture_store import CapturingStore
from .execute_mongo import executor_for
from .format import CaptureError, read_capture, summary
from .replay import Replayer

CAPTURE = "capture.ops.jsonl"
SCANS = "scans.csv"
SUMMARY = "replay.json"
OpType = Literal["insert", "query", "getmore", "update", "remove", "count", "findandmodify", "command"]


class Params(AppMixConfig, WorkloadParams):
    """Record the bundled application mix on the first system, replay it on the others (seed 003).
    The bundled workload's keys (AppMixConfig) shape what is recorded; these the replay, as
    Flashback's command line did. Its replay workers are `phases.measure.threads` (Flashback's
    default: 10)."""
    name: Literal["flashback"] = "flashback"
    style: Literal["real", "stress"] = "real"
    speedup: float = Field(1.0, gt=0)         # real style: replay at this multiple of the original pace
    op_filter: list[OpType] | None = None     # replay only these op types
    capture_file: str | None = None           # replay this ops file on every system instead of recording

    # Load the dataset (the capped log has a loader of its own), then replay until the stream ends.
    PHASES: ClassVar[PhaseUse] = uses("load.threads", "load.interval_s", "quiesce_s", "measure.threads",
                                      "measure.interval_s", "max_errors", required=("load", "measure"), check=False)

    @field_validator("capture_file")
    @classmethod
    def _capture_exists(cls, path):
        if path is not None:
            from ..paths import repo_root
            resolved = Path(path) if Path(path).is_absolute() else repo_root() / path
            if not resolved.is_file():
                raise ValueError(f"no ops file at {resolved}")
            return str(resolved)
        return path

    def app(self) -> AppMixConfig:
        return AppMixConfig(**{k: getattr(self, k) for k in AppMixConfig.model_fields})


def op_label(collections: dict):
    """Inserts into a capped collection are their own op type in the results (the post's capped finding)."""
    capped = {name for name, meta in collections.items() if meta.get("capped_bytes")}

    def label(record: dict) -> str:
        if record["op"] == "insert" and record["ns"].split(".", 1)[1] in capped:
            return "insert.capped"
        return record["op"]
    return label


class FlashbackReplay(Workload):
    load_accounting = {"rate": "items", "rate_ops": None, "per_op": None}
    samples_per_collection = True
    # The replay's workers share one schedule, its lag statistics and the recorder's capture file,
    # which after_measure reads in the runner: they stay threads of the runner.
    client_processes = False

    def __init__(self, config: Params, context: dict | None = None):
        """`context`: the run folder and this system's folder (who records, and where)."""
        self.cfg = config
        self.app = AppMix(config.app())
        context = context or {}
        self.run_dir, self.system_dir = Path(context.get("run_dir", ".")), Path(context.get("system_dir", "."))
        self.store = self.role = self.capture = self.dataset = None
        self.target: CapturingStore | None = None
        self.replayer: Replayer | None = None

    # -- who records, what is replayed ----------------------------------------------------
    def _role(self):
        if self.cfg.capture_file:
            return "replayer", read_capture(self.cfg.capture_file)
        manifest = json.loads((self.run_dir / "manifest.json").read_text())
        recorder = manifest["params"]["systems"][0]["label"]
        if self.system_dir.name == recorder:
            return "recorder", None
        path = self.run_dir / recorder / CAPTURE
        if not path.is_file():
            raise CaptureError(f"{path}: the recorder ({recorder}) left no capture to replay; see its runner.log")
        return "replayer", read_capture(path)

    def _dataset(self) -> AppMix | None:
        """The dataset the capture ran on (its header), so a replay starts from the same data."""
        if self.capture is None:
            return self.app
        dataset = self.capture.header.get("dataset") or {}
        if dataset.get("generator") != "appmix":
            return None
        return AppMix(AppMixConfig(**dataset["config"]))

    def _collections(self) -> dict:
        return self.capture.header["collections"] if self.capture else self.app.collections()

    # -- the plan's steps -----------------------------------------------------------------
    def setup(self, store: Store) -> None:
        self.store = store  # the replay runs on it (a replayer prepares each op for it)
        self.role, self.capture = self._role()
        self.dataset = self._dataset()
        if self.dataset is not None:
            self.dataset.setup(store)
        else:  # a capture of someone else's data: the collections exist, empty, as the header says
            for name, meta in self._collections().items():
                store.create_collection(name, meta.get("capped_bytes"))

    def load(self, threads: int):
        """`threads` loaders share the batches; the capped log must be filled in order (its oldest
        events go first), so it has one loader of its own."""
        if self.dataset is None:
            return []
        batches = list(self.dataset.load_batches())
        capped = [b for b in batches if b[0] == EVENTS]
        others = [b for b in batches if b[0] != EVENTS]

        def loader(share):
            def work(store, rec, stop):
                for collection, docs in share:
                    if stop.is_set():
                        return
                    rec.call(f"LOAD_{collection.upper()}", store.insert_many, collection, docs, items=len(docs))
            return work
        return [loader(others[i::threads]) for i in range(threads)] + [loader(capped)]

    def expected_after_load(self, load_threads: int = 1) -> dict:
        return self.app.expected_after_load()

    def size_sample(self):
        """Users, then posts, then the activity log, each collection to its end: the generator
        runs on the same settings with at most SAMPLE_DOCS documents of each (a document's size
        depends on the byte settings, not on how many there are)."""
        from ..resources.space import MB, SAMPLE_DOCS
        cfg = self.app.cfg
        small = AppMix(cfg.model_copy(update={"users": min(cfg.users, SAMPLE_DOCS), "posts": min(cfg.posts, SAMPLE_DOCS),
                                              "capped_mb": min(cfg.capped_mb, SAMPLE_DOCS * cfg.event_bytes / MB)}))

        def dataset(store, rec, stop):
            for collection, docs in small.load_batches():
                store.insert_many(collection, docs)
        return [dataset]

    def verify(self, store: Store) -> tuple[dict, dict]:
        expected = self.dataset.expected_after_load() if self.dataset else {}
        return expected, {name: store.count(name, None) for name in expected}

    def measure(self, name: str, threads: int, rate_per_s: float | None):
        """The recorder runs the bundled mix live, through a store that writes the capture; a
        replayer replays the capture in the configured style."""
        collections = self._collections()
        label = op_label(collections)
        if self.role == "recorder":
            self.target = CapturingStore(self.store, self.system_dir / CAPTURE, database=DATABASE,
                                         collections=collections, dataset=self.app.descriptor(),
                                         origin={"system": self.system_dir.name, "engine": self.store.info().engine})
            self.replayer = Replayer(self.app.operations(), style="real", speedup=1.0, workers=threads, label=label)
            return [lambda _store, rec, stop, w=w: w(self.target, rec, stop) for w in self.replayer.workers()]
        self.replayer = Replayer(self.capture.ops(), style=self.cfg.style, speedup=self.cfg.speedup, workers=threads,
                                 select=self.cfg.op_filter, label=label, prepare=executor_for(self.store))
        return self.replayer.workers()

    def after_measure(self, name: str, emit) -> None:
        """The replay's summary (and the recorder's capture closed): ops read, run and skipped,
        how late they ran, and per query its documents scanned against its latency."""
        captured = self.target.finish() if self.target is not None else None
        stats = self.replayer.merged()
        rows = pl.DataFrame(stats.rows, schema={"op": pl.Utf8, "docs_scanned": pl.Int64, "latency_us": pl.Int64,
                                                "due_s": pl.Float64}, orient="row")
        rows.write_csv(self.system_dir / SCANS)
        in_file = summary(self.capture, self.replayer.label) if self.capture is not None else None
        lag = stats.lag
        event = {"event": "replay_summary", "role": self.role, "ops_read": stats.read, "ops_run": stats.run,
                 "skipped": stats.skipped, "captured_ops": captured, "capture_ops_per_type": in_file,
                 "lag_ms": ({"p50": lag.get_value_at_percentile(50) / 1000, "p99": lag.get_value_at_percentile(99) / 1000,
                             "max": lag.get_max_value() / 1000, "ops": lag.get_total_count()}
                            if lag.get_total_count() else None)}
        (self.system_dir / SUMMARY).write_text(json.dumps(event, indent=2))
        emit(event)


def build(params: Params, context: dict | None = None) -> FlashbackReplay:
    return FlashbackReplay(params, context)
