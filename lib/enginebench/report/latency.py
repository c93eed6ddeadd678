"""Latency per system and operation type over a phase: one table for every family.

Figures come from the exactly merged HdrHistograms (rundata.merged_latency); each row says which of
its percentiles the emulated device's throttle, not the engine, sets (emulation.py).
"""
from __future__ import annotations

import polars as pl

from .emulation import flagged_percentiles
from .rundata import RunData, merged_latency


def latency_rows(run: RunData, phase: str) -> list[dict]:
    """One row per system and op type that recorded a latency, in params order."""
    rows = []
    for system in run.systems:
        for entry in merged_latency(run.ops, system["label"], phase):
            if "mean_ms" not in entry:  # counted, but no latency recorded (all errors)
                continue
            rows.append({"setup": system["label"], "role": system["role"], **entry,
                         "set by emulation": flagged_percentiles(entry, system)})
    return rows


def latency_table(run: RunData, phase: str, rows: list[dict] | None = None) -> pl.DataFrame:
    """The rows as a table, in milliseconds to the microsecond."""
    rows = latency_rows(run, phase) if rows is None else rows
    if not rows:
        return pl.DataFrame()
    table = pl.DataFrame(rows).drop("role")
    return table.with_columns(pl.col(c).round(3) for c, t in zip(table.columns, table.dtypes) if t == pl.Float64)
