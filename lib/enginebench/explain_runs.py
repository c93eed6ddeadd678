"""Which run already measured an explain variant: a run need not be made twice.

A variant is its systems under its `--set`s. Any complete single run of the experiment at the
scale, made by the experiment itself or by another claim's explain, serves it when each of those
systems ran to completion there with exactly the params the sets resolve to, and everything
outside the systems (workload, phases, resources) is the same. The other systems such a run
also ran, and the sets that shaped only them, do not matter: the systems of a run are separate
processes, one after another. So fb.writes_fast (rx) reads the runs fb.query_avg's explain
made of rx and lmdb, and a load claim's variant of wt.op1 runs once for all four
of linkbench_cached's load claims. A load claim's variant, which stops its systems at the end of
their load, is served by a run that loaded them alike and went on to their requests.

Only a run of this sitting serves (SITTING_S, the hours before the explain command started, so
what its plan counted on still serves when a variant's turn comes): an explain compares its
variants with a base measured side by side with them, and this host's speed drifts by a third
within an hour.
"""
from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from .params import load_params
from .paths import results_dir

# How old a run may be and still count as measured in the explain's sitting: about twice what
# one experiment's explain takes at the default scale (60-100 min on 2 cores).
SITTING_S = 3 * 3600


def _comparable(params: dict) -> dict:
    """params as a manifest records them (JSON), without what does not change a measurement: the
    sets that produced them (the resolved params say what they did), where the params file was
    read from (a checkout's path), and a kept load left off (a run made before the key existed is
    the same run)."""
    params = json.loads(json.dumps(params, default=str))
    params.pop("sets", None)
    params.pop("params_file", None)
    load = (params.get("phases") or {}).get("load") or {}
    if not load.get("reuse"):
        load.pop("reuse", None)
    return params


def _started(manifest: dict) -> float | None:
    try:
        return datetime.fromisoformat(manifest["started_at"]).timestamp()
    except (KeyError, TypeError, ValueError):
        return None


def measured_as(exp: str, scale: str, sets: list[str] | None = None) -> tuple[dict, dict[str, dict]]:
    """What a run of exp at scale under sets measures: its params outside the systems, and each
    system's params by label (both as _comparable has them)."""
    params = _comparable(load_params(exp, scale, list(sets or [])))
    return params, {s["label"]: s for s in params.pop("systems", [])}


def _system_serves(ran: dict | None, wanted: dict | None) -> bool:
    """Whether a system run as `ran` measured what one run as `wanted` would. A system wanted up
    to the end of its load (measure_requests false: a load claim's variant) is served by one that
    went on to measure requests after the same load: nothing after the load changes the load."""
    if ran is None or wanted is None:
        return False
    if wanted.get("measure_requests", True) is False:
        def load(system: dict) -> dict:
            return {key: value for key, value in system.items() if key != "measure_requests"}
        return load(ran) == load(wanted)
    return ran == wanted


def serves(ran: tuple[dict, dict[str, dict]], wanted: tuple[dict, dict[str, dict]], labels: list[str]) -> bool:
    """Whether a run measured as `ran` measured every one of labels as `wanted` would."""
    return ran[0] == wanted[0] and all(_system_serves(ran[1].get(label), wanted[1].get(label)) for label in labels)


def existing_run(exp: str, scale: str, labels: list[str], sets: list[str] | None = None,
                 target: str = "embedded", within_s: float | None = SITTING_S,
                 now: float | None = None) -> Path | None:
    """The newest complete single run of exp at scale (not one run of a REPEAT group of several)
    in which every one of labels ran to completion with the params `sets` give it, the rest of
    the params alike; made within `within_s` before `now` (None: at any time). None if no run
    serves."""
    wanted = measured_as(exp, scale, sets)
    missing = [label for label in labels if label not in wanted[1]]
    if missing:
        raise ValueError(f"{exp} at scale {scale} has no system {', '.join(missing)}")
    now = time.time() if now is None else now
    for manifest_path in sorted((results_dir() / exp).glob("*/manifest.json"), reverse=True):
        manifest = json.loads(manifest_path.read_text())
        if (manifest.get("status") != "complete" or manifest.get("scale") != scale
                or (manifest.get("repeat") or {}).get("of", 1) != 1):
            continue
        if target != "auto" and (manifest.get("target") or {}).get("kind", "embedded") != target:
            continue
        started = _started(manifest)
        if within_s is not None and (started is None or now - started > within_s):
            continue
        ran = manifest.get("systems") or {}
        params = _comparable(manifest.get("params") or {})
        systems = {s["label"]: s for s in params.pop("systems", [])}
        if (serves((params, systems), wanted, labels)
                and all((ran.get(label) or {}).get("status") == "complete" for label in labels)):
            return manifest_path.parent
    return None
