"""The host-speed probe of two runs side by side (results/calibration.py), and a measured ratio
corrected by the ratio of the probes.

The probe is one thread of the harness's own Python work (BSON encoding and hashing), taken at
the start and at the end of each run. Where a figure is bound by the CPU, dividing its ratio by
the probes' ratio removes what the host's own drift did to it; a figure bound by the device
(reads, bytes, size) does not move with the CPU and is not corrected.
"""
from __future__ import annotations

import polars as pl

from .rundata import RunData

POINTS = ("start", "end")


def probe_figures(run: RunData) -> dict[str, float]:
    """{"start"/"end"/"mean": docs/s} for the probes the run took (empty when it took none)."""
    speed = (run.manifest.get("host") or {}).get("speed") or {}
    out = {point: float(speed[point]["docs_per_s"]) for point in POINTS
           if (speed.get(point) or {}).get("docs_per_s")}
    if out:
        out["mean"] = sum(out.values()) / len(out)
    return out


def probe_ratio(a: RunData, b: RunData) -> float | None:
    """How much faster B's host ran the probe than A's (mean of each run's start and end)."""
    pa, pb = probe_figures(a).get("mean"), probe_figures(b).get("mean")
    return pb / pa if pa and pb else None


def probe_table(a: RunData, b: RunData) -> pl.DataFrame:
    """The probes side by side: start, end and their mean, in docs/s, with B / A."""
    fa, fb = probe_figures(a), probe_figures(b)
    rows = []
    for point in (*POINTS, "mean"):
        va, vb = fa.get(point), fb.get(point)
        rows.append({"probe": point, "unit": "docs/s", "A": va, "B": vb,
                     "B / A": vb / va if va and vb else None})
    return pl.DataFrame(rows, schema={"probe": pl.Utf8, "unit": pl.Utf8, "A": pl.Float64, "B": pl.Float64,
                                      "B / A": pl.Float64})


def normalised(ratio: float | None, speed: int, probes: float | None) -> float | None:
    """B / A as if B's host had run at A's speed: a rate (speed +1) divided by the probes' ratio,
    a time (speed -1) multiplied by it; None for figures a faster CPU does not change (speed 0)
    or when either run has no probe."""
    if ratio is None or probes is None or speed == 0:
        return None
    return ratio / probes ** speed
