"""The headline numbers of a system in a phase, each with its unit: what `make compare` sets
side by side and what the spread over repeated runs (report/repeats.py) is computed for.

`speed` says how a figure moves when the host's CPU runs faster (report/hostspeed.py): +1 for a
rate (more per second), -1 for a time (fewer microseconds), 0 for counts and bytes, which a
faster CPU does not change.
"""
from __future__ import annotations

from dataclasses import dataclass

from .rundata import RunData, merge_histograms, phase_summary


@dataclass(frozen=True)
class Headline:
    key: str     # phase_summary's key, or "p99_ms" (all op types' histograms merged)
    name: str
    unit: str
    speed: int
    scale: float = 1.0  # from phase_summary's unit to `unit`


HEADLINES = (
    Headline("ops_per_s", "ops/s", "ops/s", +1),
    Headline("p99_ms", "p99", "ms", -1),
    Headline("r_per_op", "r/o", "reads/op", 0),
    Headline("rkb_per_op", "rKB/o", "KB/op", 0),
    Headline("wkb_per_op", "wKB/o", "KB/op", 0),
    Headline("cpu_us_per_op", "cpu/o", "us/op", -1),
    Headline("client_cpu_us_per_op", "client cpu/o", "us/op", -1),
    Headline("size_du_bytes", "size (du)", "MiB", 0, 1 / 2**20),
)


def phase_p99_ms(run: RunData, system: str, phase: str) -> float | None:
    """The 99th percentile over every op type of the phase, from the exactly merged histograms."""
    if run.ops.is_empty():
        return None
    rows = run.ops.filter((run.ops["system"] == system) & (run.ops["phase"] == phase))
    merged = merge_histograms(rows["hist"]) if not rows.is_empty() else None
    return merged.get_value_at_percentile(99.0) / 1000 if merged is not None else None


def headline_figures(run: RunData, system: str, phase: str) -> dict[str, float] | None:
    """{headline name: value in its unit} for the figures the phase recorded; None when the
    system did not run the phase."""
    summary = phase_summary(run.intervals, system, phase)
    if not summary:
        return None
    summary = {**summary, "p99_ms": phase_p99_ms(run, system, phase)}
    return {h.name: summary[h.key] * h.scale for h in HEADLINES if summary.get(h.key) is not None}


def unit_of(name: str) -> str:
    return next(h.unit for h in HEADLINES if h.name == name)
