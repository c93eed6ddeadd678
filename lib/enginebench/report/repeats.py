"""Repeated runs (`REPEAT=n`): the spread of every headline number, and claim verdicts that say
when the runs disagree.

The n runs of one `make experiment ... REPEAT=n` share a group id in their manifests
(`repeat: {group, index, of}`); each stays its own, never-overwritten results folder. A report
made from any of them finds the others by that id.
"""
from __future__ import annotations

import json
import math

import polars as pl

from . import noise
from .claims import FAILS, HOLDS, HOST_DRIFTED, INCONCLUSIVE, NOT_EVALUATED, check_expectation
from .headlines import headline_figures, unit_of
from .rundata import RunData, load_run
from .trust import first_withheld, with_size, withhold


def group_runs(run: RunData) -> list[RunData]:
    """The runs of run's repeat group that completed, oldest first ([run] when it is alone)."""
    group = (run.manifest.get("repeat") or {}).get("group")
    if not group:
        return [run]
    members = []
    for manifest_path in sorted(run.path.parent.glob("*/manifest.json")):
        manifest = json.loads(manifest_path.read_text())
        if (manifest.get("repeat") or {}).get("group") == group and manifest.get("status") == "complete":
            members.append(run if manifest_path.parent == run.path else load_run(manifest_path.parent))
    return members or [run]


def _spread(values: list[float]) -> dict:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"n": n, "mean": mean, "min": min(values), "max": max(values),
            "cv_pct": (100 * sd / abs(mean)) if mean else None}


def spread_table(runs: list[RunData]) -> pl.DataFrame:
    """Mean, min, max and coefficient of variation (sample sd / mean) of every headline number,
    per system and phase, over the runs."""
    rows = []
    labels = [s["label"] for s in runs[0].systems]
    for label in labels:
        for phase in ("load", "run"):
            figures = [headline_figures(r, label, phase) for r in runs]
            figures = [f for f in figures if f]
            for name in dict.fromkeys(name for f in figures for name in f):  # headline order
                values = [f[name] for f in figures if name in f]
                rows.append({"system": label, "phase": phase, "metric": name, "unit": unit_of(name),
                             **_spread(values)})
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "phase": pl.Utf8, "metric": pl.Utf8, "unit": pl.Utf8,
                                      "n": pl.Int64, "mean": pl.Float64, "min": pl.Float64, "max": pl.Float64,
                                      "cv_pct": pl.Float64})


def noise_cv(run: RunData) -> dict[tuple[str, str, str], float]:
    """{(system, phase, metric): coefficient of variation in %} over run's repeat group; empty
    when the run has no completed siblings, so its noise is unknown."""
    runs = group_runs(run)
    if len(runs) < 2:
        return {}
    return {(r["system"], r["phase"], r["metric"]): r["cv_pct"]
            for r in spread_table(runs).iter_rows(named=True) if r["n"] > 1 and r["cv_pct"] is not None}


def alternated(runs: list[RunData]) -> bool:
    """Whether the group measured its systems in both orders (experiment.run_repeated)."""
    return {(r.manifest.get("order") or {}).get("kind") for r in runs} >= {"listed", "reversed"}


def _drift_cancelled(row: dict) -> dict:
    """A run's row withheld as `host drifted`, judged on its ratio again: in a group that
    alternated its systems' order the drift is in the runs' spread, which the group's noise reads."""
    if row["verdict"] != HOST_DRIFTED or row["measured_ratio"] is None:
        return row
    outcome = check_expectation(row["expect"], row["measured_ratio"])
    return row if outcome is None else {**row, "verdict": HOLDS if outcome else FAILS}


def combine_claims(tables: list[pl.DataFrame], alternating: bool = False) -> pl.DataFrame:
    """One verdict per claim over the runs' tables: the shared verdict when every run agrees,
    `inconclusive` when some hold and some do not (the spread straddles the expectation).
    The measured ratio is the mean over the runs that measured it; `from` gives its range.
    `alternating`: the runs alternated their systems' order, so a run the host drifted under
    still counts (its drift cancels against its neighbour's and widens the spread)."""
    if len(tables) == 1:
        return tables[0]
    rows = []
    for first in tables[0].iter_rows(named=True):
        per_run = [t.filter(pl.col("id") == first["id"]).row(0, named=True) for t in tables]
        drifted = sum(r["verdict"] == HOST_DRIFTED for r in per_run)
        if alternating and drifted:
            per_run = [_drift_cancelled(r) for r in per_run]
        verdicts = [r["verdict"] for r in per_run]
        ratios = [r["measured_ratio"] for r in per_run if r["measured_ratio"] is not None
                  and math.isfinite(r["measured_ratio"])]
        row = dict(first)
        n = len(tables)
        if ratios:
            s = _spread(ratios)
            row["measured_ratio"] = s["mean"]
            cv = f", CV {s['cv_pct']:.0f}%" if s["cv_pct"] is not None else ""
            spread = f"over {n} runs: ratio {s['min']:.2f} to {s['max']:.2f}{cv}"
        else:
            spread = f"over {n} runs"
        evaluated = [v for v in verdicts if v != NOT_EVALUATED]
        withheld = first_withheld(verdicts)
        if not evaluated:
            row["verdict"] = NOT_EVALUATED
        elif withheld:  # one run that cannot carry a verdict leaves the group without one
            source = next(r for r in per_run if r["verdict"] == withheld)
            row["verdict"] = withheld
            row["reason"] = f"in {verdicts.count(withheld)} of {n} runs: {source['reason']}"
        elif len(set(evaluated)) == 1 and len(evaluated) == n:
            row["verdict"] = evaluated[0]
            row = noise.over_runs(row, ratios)
        elif len(set(evaluated)) == 1:
            row["verdict"] = INCONCLUSIVE
            row["reason"] = f"evaluated in {len(evaluated)} of {n} runs only ({evaluated[0]} there)"
        else:
            row["verdict"] = INCONCLUSIVE
            row["reason"] = (f"the runs disagree: holds in {verdicts.count(HOLDS)}, does not hold in "
                             f"{verdicts.count(FAILS)} of {n}; the spread straddles the expectation")
        if alternating and drifted and row["verdict"] != HOST_DRIFTED:
            note = (f"the host drifted in {drifted} of {n} runs; the runs alternated the systems' order (ABBA), "
                    "so a steady drift cancels in the mean and the rest is in the runs' spread")
            row["reason"] = f"{row['reason']}; {note}" if row["reason"] else note
        row["from"] = f"{spread} (first run: {first['from']})" if first["from"] else spread
        rows.append(row)
    return pl.DataFrame(rows, schema=tables[0].schema)


def claims(run: RunData, claims_table) -> pl.DataFrame:
    """claims_table(run) for a single run, with the verdicts it cannot carry withheld
    (report/trust.py) and those inside the host's noise said so (report/noise.py); combined over
    the group for a repeated one, whose own spread is then the noise; with the size agreement."""
    return claims_over(group_runs(run), claims_table)


def claims_over(runs: list[RunData], claims_table) -> pl.DataFrame:
    """claims() over runs given explicitly (`make explain` builds its own)."""
    tables = [withhold(r, claims_table(r)) for r in runs]
    if len(tables) == 1:
        table = tables[0]
        rows = [noise.single_run(runs[0], row) for row in table.iter_rows(named=True)]
        return with_size(pl.DataFrame(rows, schema=table.schema))
    return with_size(combine_claims(tables, alternating=alternated(runs)))


def section(run: RunData) -> str:
    """Markdown for the report: the spread table's lead-in, or how to get one."""
    runs = group_runs(run)
    repeat = run.manifest.get("repeat") or {}
    if len(runs) == 1:
        if repeat:
            return (f"Run {repeat.get('index')} of a group of {repeat.get('of')} (`REPEAT={repeat.get('of')}`); "
                    "only this one completed, so there is no spread to show.")
        return ("One run: numbers carry no measure of their own variance. `REPEAT=n` runs the experiment n "
                "times and shows the spread of every headline number, and claims whose runs disagree "
                "as inconclusive.")
    ids = ", ".join(r.manifest["run_id"] for r in runs)
    planned = repeat.get("of", len(runs))
    missing = "" if len(runs) == planned else f" ({planned - len(runs)} of the {planned} did not complete and are left out)"
    return (f"{len(runs)} runs of this experiment (`REPEAT={planned}`){missing}: {ids}. Every headline number "
            "below is their mean, min, max and coefficient of variation; claims above are evaluated on each "
            "run and combined.")
