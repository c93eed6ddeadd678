"""Latency per system and operation type over a phase: one table for every family, with p99.9,
the maximum and a stall flag where the slowest operation dwarfs the p99.

Figures come from the exactly merged HdrHistograms (rundata.merged_latency); each row says which of
its percentiles the emulated device's throttle, not the engine, sets (emulation.py).
"""
from __future__ import annotations

import polars as pl

from .emulation import flagged_percentiles
from .rundata import RunData, merged_latency


# A stall: an operation that took this many times its type's p99, and at least STALL_MIN_MS.
# Percentiles hide them (a 2 s stall among 100,000 1 ms requests moves no percentile up to
# p99.9), yet they are what the LinkBench post's comments argue about.
STALL_TIMES_P99 = 20
STALL_MIN_MS = 100


def stall(entry: dict) -> str:
    """'max 2,318 ms = 340x p99' when the op type's slowest op was a stall, else ''."""
    top, p99 = entry.get("max_ms"), entry.get("p99_ms")
    if not top or not p99 or top < STALL_MIN_MS or top < STALL_TIMES_P99 * p99:
        return ""
    return f"max {top:,.0f} ms = {top / p99:,.0f}x p99"


def latency_rows(run: RunData, phase: str) -> list[dict]:
    """One row per system and op type that recorded a latency, in params order."""
    rows = []
    for system in run.systems:
        for entry in merged_latency(run.ops, system["label"], phase):
            if "mean_ms" not in entry:  # counted, but no latency recorded (all errors)
                continue
            rows.append({"setup": system["label"], "role": system["role"], **entry,
                         "stall": stall(entry), "set by emulation": flagged_percentiles(entry, system)})
    return rows


def stalls_sentence(rows: list[dict]) -> str:
    """The stalls of a phase in one sentence (empty when there were none)."""
    found = [f"{r['setup']} {r['op']} ({r['stall']})" for r in rows if r.get("stall")]
    if not found:
        return ""
    return (f"Stalls (an operation over {STALL_TIMES_P99}x its type's p99 and {STALL_MIN_MS} ms): "
            + "; ".join(found) + ". Percentiles up to p99.9 do not show them; the max column does.")


def latency_table(run: RunData, phase: str, rows: list[dict] | None = None) -> pl.DataFrame:
    """The rows as a table, in milliseconds to the microsecond."""
    rows = latency_rows(run, phase) if rows is None else rows
    if not rows:
        return pl.DataFrame()
    table = pl.DataFrame(rows).drop("role")
    return table.with_columns(pl.col(c).round(3) for c, t in zip(table.columns, table.dtypes) if t == pl.Float64)
