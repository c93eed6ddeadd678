"""Kept loads (`phases.load.reuse: true`): a system's measured phases start from a copy of what
an earlier run's load of the same kind left, instead of loading again.

The same kind of load means the same code (commit, uncommitted changes, runner binary), workload
params, engine, engine options and settings, and load phase. The engine cache is left out: it
changes how fast a load runs, not what it leaves. The first run with reuse on and no kept copy
loads, copies the closed engine's directory (the runner's `keep_load` step, plan.rs) and measures;
later runs copy it back and start with the runner's `restored` step, which skips the workload's
setup, then verify the copy and measure. Either way the engine is closed and opened again between
the load and the measured phases, so its cache starts empty (the OS page cache keeps the files).

Only the embedded engines keep loads, and only for families whose measured phases depend on
nothing the load kept in memory (`Family.load_reusable`). `make explain` uses it for factors
that do not change the load (threads, cache size) of claims read from a measured phase.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

from .paths import native_runner, repo_root, scratch_dir
from .results.provenance import git_state

# Kept loads beyond this many (oldest first) are removed when a new one is kept: each is a whole
# database (GBs at the default scale).
KEEP_AT_MOST = 4

# Engine options that change how a load runs but not what it leaves.
NOT_IN_KEY = frozenset({"cache_size_mb"})


def loads_dir() -> Path:
    return scratch_dir().parent / "loads"


def code_identity() -> dict:
    """The commit, a digest of its uncommitted changes (none when clean) and of the runner binary."""
    state = git_state()
    diff = subprocess.run(["git", "diff", "HEAD"], cwd=repo_root(), capture_output=True, timeout=30).stdout
    runner = hashlib.sha256(native_runner().read_bytes()).hexdigest()
    return {"sha": state.get("sha"), "changes": hashlib.sha256(diff).hexdigest() if state.get("dirty") else None,
            "runner": runner}


def load_key(params: dict, system: dict, code: dict) -> str:
    """What identifies a load: a digest of everything that decides what it leaves."""
    load = {k: v for k, v in (params["phases"].get("load") or {}).items() if k != "reuse"}
    options = {k: v for k, v in (system.get("options") or {}).items() if k not in NOT_IN_KEY}
    what = {"code": code, "workload": params["workload"], "engine": system["engine"], "options": options,
            "settings": system.get("settings") or params.get("settings"), "load": load}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:24]


def kept(key: str) -> dict | None:
    """The kept load's origin (run, system, when) when a complete copy exists, else None."""
    folder, origin = loads_dir() / key, loads_dir() / f"{key}.json"
    if folder.is_dir() and origin.is_file():
        return json.loads(origin.read_text())
    return None


def restore(key: str, data_dir: Path) -> None:
    """Copies the kept load into a system's (empty) data folder."""
    shutil.copytree(loads_dir() / key, data_dir, dirs_exist_ok=True)


def keep_step(key: str, origin: dict) -> dict:
    """The runner step that keeps this system's load under `key`; older kept loads go first."""
    loads_dir().mkdir(parents=True, exist_ok=True)
    _prune(KEEP_AT_MOST - 1)
    return {"step": "keep_load", "dir": str(loads_dir() / key), "origin": origin}


def _prune(keep: int) -> None:
    origins = sorted(loads_dir().glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for origin in origins[keep:]:
        shutil.rmtree(origin.with_suffix(""), ignore_errors=True)
        origin.unlink(missing_ok=True)
    for partial in loads_dir().glob("*.partial"):
        shutil.rmtree(partial, ignore_errors=True)


def plan_with_reuse(steps: list[dict], key: str, origin: dict | None, keeping: dict) -> list[dict]:
    """The plan of a system with reuse on: from the kept copy (`origin`: restored, its load
    replaced), or loading and then keeping it (`keeping`: the origin to write beside it)."""
    if origin is not None:
        return [{"step": "restored", "from": {**origin, "key": key}}] + [s for s in steps if s["step"] != "load"]
    at = next((i for i, s in enumerate(steps) if s["step"] == "verify"), None)
    if at is None:
        return steps
    return steps[:at + 1] + [keep_step(key, {**keeping, "key": key})] + steps[at + 1:]
