"""`make all [SCALE=...]`: every experiment in turn, as `make experiment` runs each, then the
collection page (reports/index.html with every claim, report/collection.py). With CLUSTER= the
experiments go to the hosts of a Dask cluster instead (cluster/submit.py).

It resumes: an experiment whose newest complete run at the scale was made from the same code
(commit, clean tree) with the same params on the same target is skipped, and the command says
so (FORCE=1 re-runs it). An interrupt stops the whole series; running it again re-runs only what
did not complete. One progress line per experiment says where the collection is, with an
estimate of what is left from the runs this host has made before.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from .params import load_params
from .params.loader import experiments
from .paths import results_dir
from .results.provenance import git_state


def _comparable(params: dict) -> str:
    """The params as a run's manifest keeps them, in one canonical text."""
    return json.dumps(params, sort_keys=True, default=str)


def reusable_runs(exp: str, scale: str, target_kind: str) -> list[Path]:
    """The complete runs of exp at scale on this kind of target made from this very code and
    params, newest first. A run from a tree with uncommitted changes is never reused: its code is
    not known."""
    code = git_state()
    if not code.get("sha") or code.get("dirty"):
        return []
    wanted = _comparable(load_params(exp, scale))
    found = []
    for folder in sorted((results_dir() / exp).glob("*/manifest.json"), reverse=True):
        manifest = json.loads(folder.read_text())
        if (manifest.get("status") == "complete" and manifest.get("scale") == scale
                and (manifest.get("target") or {}).get("kind") == target_kind
                and not manifest.get("selection") and not manifest.get("repeat")
                and (manifest.get("git") or {}).get("sha") == code["sha"] and not manifest["git"].get("dirty")
                and _comparable(manifest.get("params")) == wanted):
            found.append(folder.parent)
    return found


def reusable_run(exp: str, scale: str, target_kind: str) -> Path | None:
    """The newest of reusable_runs, or None."""
    return next(iter(reusable_runs(exp, scale, target_kind)), None)


def chosen_experiments(only: str | list[str] | None) -> list[str]:
    """EXPERIMENTS=a,b: those experiments, in the collection's order; every one when none are
    named. A name that is not an experiment is refused with the list, before anything starts."""
    names = experiments()
    wanted = [n.strip() for n in only.split(",")] if isinstance(only, str) else list(only or [])
    wanted = [n for n in wanted if n]
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise ValueError(f"EXPERIMENTS: unknown experiment {', '.join(map(repr, unknown))}; allowed: {', '.join(names)}")
    return [n for n in names if n in wanted] if wanted else names


def wall_seconds(manifest: dict) -> float | None:
    """A run's wall time, start to finish, from its manifest (None while it has no end)."""
    from datetime import datetime
    started, finished = manifest.get("started_at"), manifest.get("finished_at")
    if not (started and finished):
        return None
    return (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()


def past_seconds(exp: str, scale: str) -> float | None:
    """How long the newest complete run of exp at scale took on this host, if there is one."""
    for folder in sorted((results_dir() / exp).glob("*/manifest.json"), reverse=True):
        manifest = json.loads(folder.read_text())
        whole = not manifest.get("selection") and not (manifest.get("params") or {}).get("sets")
        if manifest.get("status") == "complete" and manifest.get("scale") == scale and whole:
            seconds = wall_seconds(manifest)
            if seconds is not None:
                return seconds
    return None


def estimate(left: list[str], scale: str) -> str:
    known = [past_seconds(exp, scale) for exp in left]
    measured = [s for s in known if s is not None]
    if not left:
        return "nothing left"
    if not measured:
        return "no earlier runs on this host to estimate what is left from"
    text = f"about {sum(measured) / 60:.0f} min left"
    unknown = len(known) - len(measured)
    return text + (f" plus {unknown} experiment(s) never run here" if unknown else "") + " (from this host's earlier runs)"


def run_all(scale: str = "smoke", target: str = "auto", force: bool = False, only: str | None = None) -> Path:
    """Every experiment at scale (only those named, EXPERIMENTS=a,b), skipping those already run
    from this code and params; the collection page's path."""
    from .experiment import run_experiment
    from .report.collection import write_collection
    from .targets import resolve_target
    names = chosen_experiments(only)
    started = time.time()
    for i, exp in enumerate(names, 1):
        kind = resolve_target(target, load_params(exp, scale))["kind"]
        done = None if force else reusable_run(exp, scale, kind)
        elapsed = (time.time() - started) / 60
        head = f"[collection] {i} of {len(names)}: {exp} at {scale} ({elapsed:.0f} min elapsed; {estimate(names[i - 1:], scale)})"
        if done is not None:
            print(f"{head}: skipped, {done.name} is a complete run of this code and these params (FORCE=1 re-runs it)",
                  file=sys.stderr, flush=True)
            continue
        print(head, file=sys.stderr, flush=True)
        try:
            run_experiment(exp, scale, target)
        except (RuntimeError, ValueError) as exc:  # one experiment's failure does not stop the collection
            print(f"[collection] {exp}: failed: {exc}", file=sys.stderr, flush=True)
    page = write_collection()
    print(f"[collection] all {len(names)} experiments at {scale} in {(time.time() - started) / 60:.1f} min; page: {page}",
          file=sys.stderr, flush=True)
    return page
