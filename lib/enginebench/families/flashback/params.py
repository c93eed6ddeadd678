"""`workload:` of the flashback_replay params file, and what each system's runner is told.

The first system in the params (the recorder) runs the bundled application mix live, at its own
Poisson pace, and leaves `capture.ops.jsonl` in its results folder; every later system replays
that file from the run folder, in the configured style. With `capture_file` set there is no
recorder: every system replays that file. The mix, the dataset, the replay and the translation
of mongod captures are the runner's (lib/native/src/workloads/flashback/); the ops file format is
flashback/format.py's.
"""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...params.phases import PhaseUse, WorkloadParams, uses

CAPTURE = "capture.ops.jsonl"
SCANS = "scans.csv"
SUMMARY = "replay.json"
OpType = Literal["insert", "query", "getmore", "update", "remove", "count", "findandmodify", "command"]


class AppMixConfig(BaseModel):
    """The bundled workload's shape (lib/native/src/workloads/flashback/appmix.rs); a capture's
    header keeps it, so a replay loads the same data."""
    model_config = ConfigDict(extra="forbid")
    users: int = Field(2_000, ge=1)
    posts: int = Field(100_000, ge=1)        # loaded before the capture starts
    post_bytes: int = Field(400, ge=1)
    capped_mb: float = Field(4.0, gt=0)      # the activity log's size cap
    event_bytes: int = Field(200, ge=1)
    rate: float = Field(200.0, gt=0)         # mean arrivals per second
    duration_s: float = Field(60.0, gt=0)    # length of the generated stream
    skew: float = Field(1.1, gt=0)           # Zipf exponent of posts (and activity) per user
    seed: int = 1


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
    # A replayed count: "collection", as Flashback's replayer ran every count (coll.Count(), the
    # whole collection, whatever the capture's query), or "captured" (the query as recorded).
    count_replay: Literal["collection", "captured"] = "collection"

    # Load the dataset (the capped log has a loader of its own), then replay until the stream ends.
    PHASES: ClassVar[PhaseUse] = uses("load.threads", "load.interval_s", "quiesce_s", "quiesce_checkpoint",
                                      "measure.threads", "measure.interval_s", "max_errors",
                                      required=("load", "measure"), check=False)

    @field_validator("capture_file")
    @classmethod
    def _capture_exists(cls, path):
        if path is not None:
            from ...paths import repo_root
            resolved = Path(path) if Path(path).is_absolute() else repo_root() / path
            if not resolved.is_file():
                raise ValueError(f"no ops file at {resolved}")
            return str(resolved)
        return path


def _app(workload: dict) -> dict:
    return {k: workload[k] for k in AppMixConfig.model_fields if k in workload}


def runner_params(params: dict, system: dict, run_dir: Path, system_dir: Path) -> dict:
    """This system's role and files: the recorder (the params' first system, unless a capture_file
    is replayed) records; every other system replays the recorder's capture."""
    workload = params["workload"]
    recorder = params["systems"][0]["label"]
    out = {"app": _app(workload), "out_dir": str(system_dir), "style": workload.get("style", "real"),
           "speedup": workload.get("speedup", 1.0), "op_filter": workload.get("op_filter"),
           "count_replay": workload.get("count_replay", "collection")}
    if workload.get("capture_file"):
        return {**out, "role": "replayer", "capture_in": workload["capture_file"]}
    if system["label"] == recorder:
        return {**out, "role": "recorder", "capture_out": str(system_dir / CAPTURE), "style": "real", "speedup": 1.0,
                "op_filter": None, "origin": {"system": system["label"], "engine": system["engine"]}}
    capture = Path(run_dir) / recorder / CAPTURE
    if not capture.is_file():
        raise FileNotFoundError(f"{capture}: the recorder ({recorder}) left no capture to replay; see its runner.log")
    return {**out, "role": "replayer", "capture_in": str(capture)}


def always_runs(params: dict) -> list[str]:
    """The recorder, in every run that runs any system: the others replay what it captured in
    the same run, and without it the first system selected would record instead, live, so a
    claim on replays (fb.writes_fast: "On RocksDB all replayed writes...") would read another
    system's replay or a live run. None with a capture_file: every system replays that."""
    return [] if params["workload"].get("capture_file") else [params["systems"][0]["label"]]


def systems_on_one_server(workload: dict) -> int:
    """On one server (TARGET=uri): the recorder and one replay of its capture; with a
    capture_file every system replays that file, so one."""
    return 1 if workload.get("capture_file") else 2


def describe_params(params: dict) -> dict:
    """What sizes a run before it starts: the recorder's dataset, or the capture_file's."""
    workload = params["workload"]
    out = {"app": _app(workload), "out_dir": ".", "style": "real", "speedup": 1.0, "op_filter": None}
    if workload.get("capture_file"):
        return {**out, "role": "replayer", "capture_in": workload["capture_file"]}
    return {**out, "role": "recorder"}
