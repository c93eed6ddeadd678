"""What runs on a cluster host: it describes itself, sets itself up from its checkout once, and
runs one unit (one experiment, as `make experiment` runs it) with its own results and data
folders.

These functions are sent by reference: a host imports them from its own checkout's package, so
its worker must run from that checkout's environment (docs/cluster.md).
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..children import die_with_parent
from ..paths import repo_root, results_dir
from ..results.owner import hostname
from ..results.provenance import git_state
from .transfer import copy_to_shared, pack

# What a host has set up in this worker process, by commit: `make native` is run again only when
# the checkout moved.
_SET_UP: set[tuple[str, str | None]] = set()
LOG_TAIL_LINES = 15
STOP_POLL_S = 1.0


def describe(shared: str | None = None) -> dict:
    """The host as the submitting side checks it before anything starts: its name, checkout and
    commit, and whether it can write to the shared folder."""
    code = git_state()
    facts = {"host": hostname(), "repo": str(repo_root()), "sha": code.get("sha"), "dirty": code.get("dirty"),
             "results": str(results_dir())}
    if shared:
        folder = Path(shared)
        facts["shared_writable"] = folder.is_dir() and os.access(folder, os.W_OK)
    return facts


def set_up(repo: Path) -> None:
    """`make native NEEDS=all` in the checkout, as `make setup` then `make native` would be run by
    hand, with every engine release an experiment can name (a host may be sent any of them): the
    Makefile's stamps make it a no-op once done. A lock file keeps two workers of one machine from
    setting up at the same time."""
    key = (str(repo), git_state().get("sha"))
    if key in _SET_UP:
        return
    lock_path = repo / ".build" / "cluster-setup.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(["make", "--no-print-directory", "native", "NEEDS=all"], cwd=repo, capture_output=True, text=True)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-LOG_TAIL_LINES:])
        raise RuntimeError(f"make native failed in {repo} on {hostname()}:\n{tail}")
    _SET_UP.add(key)


def _new_run(exp: str, driver_pid: int) -> Path | None:
    """The results folder the experiment's process made: the run whose manifest names it as its
    driver."""
    for manifest in sorted((results_dir() / exp).glob("*/manifest.json"), reverse=True):
        try:
            if (json.loads(manifest.read_text()).get("driver") or {}).get("pid") == driver_pid:
                return manifest.parent
        except (OSError, ValueError):
            continue
    return None


def _tail(log: Path) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").strip().splitlines()[-LOG_TAIL_LINES:])
    except OSError:
        return ""


def _wait(process: subprocess.Popen, stop_event: str | None) -> int:
    """The experiment's exit code. Meanwhile, when the submitting side sets the collection's stop
    event (it was interrupted), the experiment gets SIGINT, as Ctrl-C gives it: its driver stops
    the runner and marks the run aborted."""
    stop = None
    if stop_event:
        from distributed import Event
        stop = Event(stop_event)
    interrupted = False
    while process.poll() is None:
        try:
            if stop is not None and not interrupted and stop.is_set():
                process.send_signal(signal.SIGINT)
                interrupted = True
        except (OSError, RuntimeError, TimeoutError):  # the scheduler out of reach: the unit goes on
            pass
        time.sleep(STOP_POLL_S)
    return process.returncode


def run_unit(unit: dict) -> dict:
    """Runs one unit on this host and returns its outcome: the run folder packed (or its path in
    the shared folder), its status, and on failure the log's last lines. unit: id, experiment,
    scale, target, shared (a folder every host and the submitting machine see, or None)."""
    started = time.time()
    outcome = {"unit": unit["id"], "host": hostname(), "status": "failed", "run_id": None, "error": None,
               "archive": None, "shared_path": None}
    try:
        repo = repo_root()
        set_up(repo)
        logs = results_dir() / "cluster"
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{unit['id']}.log"
        # As `make experiment` runs it: a process of its own (Ctrl-C and a kill reach its driver,
        # which marks the run), with this host's results and data folders from the environment.
        command = [sys.executable, "-m", "enginebench", "experiment", unit["experiment"], "--scale", unit["scale"],
                   "--target", unit["target"]]
        with open(log, "w") as out:
            process = subprocess.Popen(command, cwd=repo, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
            code = _wait(process, unit.get("stop"))
        run = _new_run(unit["experiment"], process.pid)
        if run is None:
            outcome["error"] = f"the experiment made no run folder (exit {code}); its log ends:\n{_tail(log)}"
            return outcome
        manifest = json.loads((run / "manifest.json").read_text())
        outcome.update(run_id=run.name, status=manifest.get("status") or "failed")
        if outcome["status"] != "complete":
            outcome["error"] = f"the run's status is {outcome['status']} (exit {code}); its log ends:\n{_tail(log)}"
        if unit.get("shared"):
            outcome["shared_path"] = str(copy_to_shared(run, Path(unit["shared"])))
        else:
            outcome["archive"] = pack(run)
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
        outcome["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        outcome["seconds"] = round(time.time() - started, 1)
    return outcome
