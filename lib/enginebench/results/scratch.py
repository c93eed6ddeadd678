"""A run's scratch folder, where the engines keep their files: <scratch>/<exp>/<run>/<system>/
(scratch: .build/data, or ENGINEBENCH_DATA), and the clean-up of the folders dead runs left.

Each run's folder holds owner.json: the driver that made it and the processes it started for
the current system (its runner, a mongod). A run removes its folder when it ends, so nothing
is left, not even empty folders. A driver killed outright cannot; the next run finds the folder,
sees that its driver is gone (results/owner.py), ends what that run started, removes its
cgroups, puts back a throttle slice it changed (resources/slice.py), and deletes the folder.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import time
from pathlib import Path

import psutil

from ..paths import results_dir, scratch_dir
from ..resources import cgroups
from ..resources import slice as throttle_slice
from .owner import alive, identity

OWNER = "owner.json"
# A folder without an owner file younger than this may be a run being created right now.
YOUNG_S = 60.0


class Scratch:
    def __init__(self, exp: str, run_id: str, root: Path | None = None):
        self.root = root or scratch_dir()
        self.path = self.root / exp / run_id

    def create(self) -> "Scratch":
        self.path.mkdir(parents=True, exist_ok=True)
        self._write({"driver": identity(), "processes": []})
        return self

    def system_dir(self, label: str) -> Path:
        return self.path / label

    def started(self, pids: list[int]) -> None:
        """Records the processes started for the current system, so a later run can end them."""
        owner = self._read()
        owner["processes"] = [identity(pid) for pid in pids if psutil.pid_exists(pid)]
        self._write(owner)

    def stopped(self) -> None:
        owner = self._read()
        owner["processes"] = []
        self._write(owner)

    def remove(self, keep: bool = False) -> None:
        """The run's folder, and its experiment's folder when no other run uses it; with `keep`
        (the params' keep_data) the folder stays, marked kept so that no later run reclaims it."""
        if keep:
            owner = self._read()
            owner.update(kept=True, processes=[])
            self._write(owner)
            return
        shutil.rmtree(self.path, ignore_errors=True)
        try:
            self.path.parent.rmdir()
        except OSError:
            pass  # another run's folder is in it, or it is gone already

    def _read(self) -> dict:
        return json.loads((self.path / OWNER).read_text())

    def _write(self, owner: dict) -> None:
        text = json.dumps(owner)
        tmp = self.path / f"{OWNER}.tmp"
        try:
            tmp.write_text(text)
            tmp.replace(self.path / OWNER)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
            # The system's data filled the disk this folder is on: overwrite the owner file in
            # place, in the block it already holds (it stays far under one block), so the record
            # of what to clean up survives the very fault it is for.
            tmp.unlink(missing_ok=True)
            with open(self.path / OWNER, "r+") as fh:
                fh.write(text)
                fh.truncate()


def _owner(folder: Path) -> dict | None:
    try:
        return json.loads((folder / OWNER).read_text())
    except (OSError, ValueError):
        return None


def _dead(folder: Path) -> bool:
    """Whether a run's scratch folder belongs to a run that has ended without removing it."""
    owner = _owner(folder)
    if owner is not None:
        return not owner.get("kept") and alive(owner.get("driver")) is False
    # Made before runs recorded their owner here: the run's manifest says whether it ended.
    # Without one (results kept elsewhere) nothing is known, and the folder is left alone,
    # unless it holds no file at all.
    if time.time() - folder.stat().st_mtime < YOUNG_S:
        return False
    manifest = results_dir() / folder.parent.name / folder.name / "manifest.json"
    try:
        recorded = json.loads(manifest.read_text())
        return recorded.get("status") != "running" and not (recorded.get("params") or {}).get("keep_data")
    except (OSError, ValueError):
        return not any(p.is_file() for p in folder.rglob("*"))


def _end(processes: list[dict]) -> list[int]:
    """SIGKILL what a dead run left running (its runner closing its engine, say): its files are
    about to be deleted under it."""
    ended = []
    for who in processes:
        if alive(who):
            try:
                os.kill(who["pid"], signal.SIGKILL)
                psutil.Process(who["pid"]).wait(timeout=10)
                ended.append(who["pid"])
            except (ProcessLookupError, psutil.NoSuchProcess, psutil.TimeoutExpired, ChildProcessError):
                pass
    return ended


def reclaim(root: Path | None = None) -> list[str]:
    """Removes the scratch folders of runs whose driver is gone (after ending their processes
    and removing their cgroups) and empty experiment folders; returns what it did, in words."""
    root = root or scratch_dir()
    done = []
    if not root.is_dir():
        return done
    for exp_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for folder in sorted(p for p in exp_dir.iterdir() if p.is_dir()):
            try:
                if not _dead(folder):
                    continue
            except OSError:
                continue  # removed meanwhile
            owner = _owner(folder) or {}
            ended = _end(owner.get("processes") or [])
            groups = cgroups.remove_run(folder.name)
            restored = throttle_slice.undo_left(folder / throttle_slice.SLICE_UNDO)
            shutil.rmtree(folder, ignore_errors=True)
            done.append(f"removed {folder} (run {folder.name}, whose driver is gone)"
                        + (f"; ended its processes {', '.join(map(str, ended))}" if ended else "")
                        + (f"; removed its cgroups {', '.join(groups)}" if groups else "")
                        + (f"; {restored}" if restored else ""))
        try:
            exp_dir.rmdir()  # only when empty
        except OSError:
            pass
    return done
