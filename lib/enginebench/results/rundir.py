"""A run's folder: data/results/<exp>/<YYYYMMDD-HHMMSS>-<host>/, created once, never reused.

manifest.json carries the provenance (DESIGN §8) and each system's status; intervals.parquet,
ops.parquet, ticks.parquet (the per-second rate) and samples.parquet are the tidy tables; <system>/ keeps the runner's raw events,
samples, spec and log. The manifest is rewritten as systems finish, so an interrupted run still
says what it measured.

A run's status: running, then complete, aborted (interrupted), failed, or died: its driver
ended without a word (killed outright, a crash, a reboot). The manifest names the driver
process (results/owner.py); whoever finds a `running` run whose driver is gone (the next run,
`make reports`, `make compare`) marks it died and builds its tables from what its systems'
folders kept.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import polars as pl
import psutil

from ..paths import results_dir, scratch_dir
from .calibration import calibrate, calibrate_end, probe_settings
from .owner import alive, boot_id, hostname, identity
from .provenance import git_state, host_facts, package_versions
from .tables import interval_row, op_rows, tick_rows


# A run id names the run's cgroups, which are machine-wide, so it must be unique on the machine,
# not only in its results folder: two checkouts (or two test workers, each with its own results
# folder) can start runs in the same second. A reservation only matters within its second (the
# stamp moves on), so reservations older than a minute are swept.
RUN_IDS = Path(tempfile.gettempdir()) / "enginebench-run-ids"


def reserve_run_id(name: str) -> bool:
    RUN_IDS.mkdir(exist_ok=True)
    for old in RUN_IDS.iterdir():
        try:
            if time.time() - old.stat().st_mtime > 60:
                old.unlink()
        except OSError:
            pass  # swept by another driver meanwhile
    try:
        with open(RUN_IDS / name, "x") as reservation:
            reservation.write(str(os.getpid()))
        return True
    except FileExistsError:
        return False


class RunFolder:
    def __init__(self, path: Path, manifest: dict):
        self.path = path
        self.manifest = manifest
        self.systems: dict[str, dict] = {}
        self.interval_rows: list[dict] = []
        self.op_rows: list[dict] = []
        self.tick_rows: list[dict] = []
        self.sample_rows: list[dict] = []

    @property
    def run_id(self) -> str:
        return self.path.name

    @classmethod
    def create(cls, params: dict, target: dict, banner: list[str], resources: dict,
               runner_env: dict | None = None) -> "RunFolder":
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        host = hostname()
        base = results_dir() / params["experiment"]
        base.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            name = f"{stamp}-{host}" + ("" if n == 1 else f"-{n}")
            try:
                (base / name).mkdir()  # atomic: two runs never share a folder
            except FileExistsError:
                continue
            if reserve_run_id(name):
                break
            (base / name).rmdir()
        else:
            raise RuntimeError(f"could not create a new results folder under {base}")
        scratch = scratch_dir()
        scratch.mkdir(parents=True, exist_ok=True)
        manifest = {
            "run_id": name, "experiment": params["experiment"], "scale": params["scale"],
            "status": "running", "started_at": datetime.now(timezone.utc).isoformat(), "finished_at": None,
            "driver": identity(),
            "target": {k: v for k, v in target.items() if k != "banner"}, "banner": banner,
            "params": params, "git": git_state(), "packages": package_versions(),
            "host": {**host_facts(scratch), "speed": {"start": calibrate(probe_settings(params["scale"])["rounds"]),
                                                      "end": None}},
            "resources": resources, "runner_env": runner_env,
            "systems": {},
        }
        folder = cls(base / name, manifest)
        folder.write_manifest()
        return folder

    def system_dir(self, label: str) -> Path:
        path = self.path / label
        path.mkdir(exist_ok=True)
        return path

    @staticmethod
    def write_jsonl(path: Path, rows: list[dict]) -> None:
        with open(path, "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")

    def write_manifest(self) -> None:
        tmp = self.path / "manifest.json.tmp"
        tmp.write_text(json.dumps(self.manifest, indent=2, default=str))
        tmp.replace(self.path / "manifest.json")

    def add_rows(self, label: str, events: list[dict], samples: list[dict]) -> None:
        tick_s = {}
        for event in events:
            if event.get("event") == "phase_start" and event.get("tick_s"):
                tick_s[event["phase"]] = event["tick_s"]
            if event.get("event") == "interval":
                self.interval_rows.append(interval_row(label, event, samples))
                self.op_rows.extend(op_rows(label, event))
                if event["phase"] in tick_s:
                    self.tick_rows.extend(tick_rows(label, event, tick_s[event["phase"]]))
        self.sample_rows.extend({"system": label, **s} for s in samples)

    def record_system(self, result: dict) -> None:
        label, events, samples = result["label"], result["events"], result.get("samples", [])
        self.add_rows(label, events, samples)
        by_kind = {}
        for event in events:
            by_kind.setdefault(event["event"], []).append(event)
        info = (by_kind.get("store_info") or [{}])[0]
        self.systems[label] = {
            "status": result["status"], "error": result["error"],
            **{k: result[k] for k in ("engine_error", "expected_size", "last_events", "exit_note")
               if result.get(k) is not None},
            "engine_reported": info.get("engine"), "version": info.get("version"), "engine_config": info.get("config"),
            "transactions": info.get("atomic"), "executor": info.get("executor"), "device": result.get("device"),
            "sampler_cpu_s": result.get("sampler_cpu_s"), "resources": result.get("resources"),
            "load_verified": (by_kind.get("load_verified") or [None])[0],
            "consistency": (by_kind.get("consistency") or [None])[0],
            "cold_start": (by_kind.get("cold_start") or [None])[0],
            # phases.load.reuse: whose load this system started from, or the copy it kept of its own.
            "load_restored": (by_kind.get("load_restored") or [None])[0],
            "load_kept": (by_kind.get("load_kept") or [None])[0],
            "slow_ops": (by_kind.get("slow_ops") or [None])[0],
            "phases": [{k: v for k, v in e.items() if k != "event"} for e in by_kind.get("phase_end", [])],
            "runner": {k: v for k, v in (by_kind.get("runner") or [{"runner": "python"}])[0].items() if k != "event"},
            "cpu_attribution": result.get("cpu_attribution"),
            "rate_sweep": [{k: v for k, v in e.items() if k != "event"} for e in by_kind.get("sweep", [])],
        }
        self.manifest["systems"] = self.systems
        self.write_manifest()

    def write_tables(self) -> None:
        for name, rows in (("intervals", self.interval_rows), ("ops", self.op_rows), ("ticks", self.tick_rows),
                           ("samples", self.sample_rows)):
            if rows:
                pl.DataFrame(rows, infer_schema_length=None).write_parquet(self.path / f"{name}.parquet")

    def probe_before(self, label: str) -> None:
        """The host's speed just before a system starts (results/calibration.py): the run's start
        and end probes say how far the host moved over the run, these say where it was when each
        system ran, so a claim's noise is the drift between its own two systems."""
        speed = self.manifest["host"].setdefault("speed", {})
        speed.setdefault("before", {})[label] = calibrate(probe_settings(self.manifest["scale"])["rounds"])
        self.write_manifest()

    def finish(self, status: str) -> None:
        self.write_tables()
        self.manifest["status"] = status
        speed = self.manifest["host"].setdefault("speed", {})
        probe = probe_settings(self.manifest["scale"])
        speed["end"] = calibrate_end(speed.get("start"), rounds=probe["rounds"],
                                     retries=probe["end_retries"])  # drift during the run
        self.manifest["finished_at"] = datetime.now(timezone.utc).isoformat()
        self.write_manifest()


def _read_jsonl(path: Path) -> list[dict]:
    """A file written line by line as things happened; a last line cut short by the kill is left out."""
    rows = []
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def _driver_gone(manifest: dict) -> bool:
    """Whether the driver of a `running` run is gone. Manifests from before drivers were recorded
    are judged by the host's boot: a run of this host started before it booted has died."""
    found = alive(manifest.get("driver"))
    if found is not None:
        return not found
    host = ((manifest.get("host") or {}).get("hostname") or "").split(".")[0]
    if "driver" in manifest or host != hostname():
        return False
    try:
        return datetime.fromisoformat(manifest["started_at"]).timestamp() < psutil.boot_time()
    except (KeyError, ValueError, TypeError):
        return False


def settle(path: Path, found_by: str) -> bool:
    """Marks a `running` run whose driver is gone as died, keeping what it measured: the systems
    that finished as recorded, and the one that was running as far as its events and samples
    reached (its folder keeps them as they came). True when it did."""
    path = Path(path)
    try:
        manifest = json.loads((path / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    if manifest.get("status") != "running" or not _driver_gone(manifest):
        return False
    folder = RunFolder(path, manifest)
    folder.systems = dict(manifest.get("systems") or {})
    driver = manifest.get("driver") or {}
    last_t = None
    for system in manifest["params"]["systems"]:
        label = system["label"]
        events = _read_jsonl(path / label / "events.jsonl")
        samples = _read_jsonl(path / label / "samples.jsonl")
        times = [e["t"] for e in events if isinstance(e.get("t"), (int, float))] + [s["t"] for s in samples]
        if times:
            last_t = max(times + ([last_t] if last_t else []))
        if label in folder.systems:
            folder.add_rows(label, events, samples)
        elif (path / label).is_dir():
            folder.record_system({"label": label, "status": "died", "events": events, "samples": samples,
                                  "error": (f"the run's driver (pid {driver.get('pid', 'unknown')}) ended without a "
                                            "word while this system ran; what its runner reported until then "
                                            "is kept")})
    folder.write_tables()
    manifest["status"] = "died"
    manifest["died"] = {"found_by": found_by, "found_at": datetime.now(timezone.utc).isoformat(),
                        "last_heard": datetime.fromtimestamp(last_t, timezone.utc).isoformat() if last_t else None,
                        "driver": driver or None, "boot_id_now": boot_id()}
    folder.write_manifest()
    return True


def settle_all(found_by: str, base: Path | None = None) -> list[Path]:
    """settle() over every run folder under the results folder; returns the runs marked died."""
    base = base or results_dir()
    marked = []
    if base.is_dir():
        for manifest in sorted(base.glob("*/*/manifest.json")):
            if settle(manifest.parent, found_by):
                marked.append(manifest.parent)
    return marked
