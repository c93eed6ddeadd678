"""Which runs exist, which of them completed, and finding one named on the command line.

A run's folder is data/results/<exp>/<run_id>/ with its manifest.json; a run id sorts by its
start time, so the newest run of a list is its greatest name.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..params.origins import did_you_mean
from ..paths import results_dir


def manifest_of(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def runs_by_experiment(base: Path) -> dict[str, list[Path]]:
    """Every experiment's run folders, newest first."""
    out = {}
    if not base.is_dir():
        return out
    for exp_dir in sorted(p for p in base.iterdir() if p.is_dir() and p.name != "bench"):
        runs = sorted((p for p in exp_dir.iterdir() if (p / "manifest.json").exists()), key=lambda p: p.name, reverse=True)
        if runs:
            out[exp_dir.name] = runs
    return out


def _complete_by_kind(runs: list[Path]) -> tuple[list[Path], list[Path], list[Path]]:
    """The complete runs of the list, newest first, in three kinds: of every system as the params
    file says; of a selection of systems (SYSTEMS=, an explain's base) under those params; with
    keys set by hand (--set, an explain's variants)."""
    manifests = {run: manifest_of(run) for run in sorted(runs, key=lambda p: p.name, reverse=True)}
    complete = [run for run, manifest in manifests.items() if manifest.get("status") == "complete"]
    set_by_hand = [run for run in complete if manifests[run].get("params", {}).get("sets")]
    whole = [run for run in complete if not manifests[run].get("selection") and run not in set_by_hand]
    partial = [run for run in complete if run not in whole and run not in set_by_hand]
    return whole, partial, set_by_hand


def newest_complete(runs: list[Path]) -> Path | None:
    """The newest run of the list whose status is complete, preferring one that ran every system
    as its params file says to one that ran a selection (SYSTEMS=) or keys set by hand (--set)."""
    whole, partial, set_by_hand = _complete_by_kind(runs)
    return (whole or sorted(partial + set_by_hand, key=lambda p: p.name, reverse=True) or [None])[0]


def runs_of_the_params(runs: list[Path]) -> list[Path]:
    """The complete runs that measured the experiment's own params, the ones a claim's reading
    may come from: the newest of every system, or when none ran every system, each run of a
    selection, newest first (a claim reads the first that ran its systems). A run with keys set
    by hand measured something else (an explain's variant), so it is never one of them."""
    whole, partial, _set_by_hand = _complete_by_kind(runs)
    return whole[:1] or partial


def host_of(manifest: dict) -> str:
    return ((manifest.get("host") or {}).get("hostname") or "").split(".")[0] or "unknown host"


def partner_run(exp: str, manifest: dict) -> Path | None:
    """The run of exp that a claim comparing it with the run of `manifest` reads (lb.load.disk_vs_ssd):
    the one the collection would choose for exp (the first of runs_of_the_params) among its runs
    at the same scale, on the same target kind and host. Not simply the newest: that may be an
    explain's variant, or a run of another scale or machine."""
    def key(m: dict) -> tuple:
        return m.get("scale"), (m.get("target") or {}).get("kind") or "embedded", host_of(m)
    runs = runs_by_experiment(results_dir()).get(exp, [])
    return next(iter(runs_of_the_params([run for run in runs if key(manifest_of(run)) == key(manifest)])), None)


def find_run(spec: str, role: str) -> Path:
    """A run named on the command line: a results folder's path, `<exp>/<run_id>` or a run id.
    Anything else is one clear error naming the argument and the runs that exist."""
    path = Path(spec)
    if (path / "manifest.json").is_file():
        return path
    base = results_dir()
    runs = [run for exp_runs in runs_by_experiment(base).values() for run in exp_runs]
    matches = [run for run in runs if spec.strip("/") in (run.name, f"{run.parent.name}/{run.name}")]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f"{role}={spec}: {len(matches)} runs have that id; name one as <experiment>/<run id>: "
                         + ", ".join(f"{run.parent.name}/{run.name}" for run in matches))
    names = [f"{run.parent.name}/{run.name}" for run in runs]
    newest = ", ".join(sorted(names, key=lambda n: n.split("/")[1], reverse=True)[:3]) or "none yet"
    close = did_you_mean(spec, names + [name.split("/")[1] for name in names])
    raise ValueError(f"{role}={spec}: not a results folder (no manifest.json there) and no run of that name in "
                     f"{base};{close} newest runs: {newest}")
