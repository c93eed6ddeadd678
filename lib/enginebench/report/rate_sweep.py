"""Latency against throughput: the open-loop rate sweep that follows a closed-loop measured phase
(phases.rate_sweep). Each point is one phase at a fixed arrival rate, a fraction of the
throughput the closed loop reached; its latency is measured from each request's intended start
(what a user waits) and as service time (what the engine took)."""
from __future__ import annotations

import altair as alt
import polars as pl

from . import palette
from .rundata import RunData, merge_histograms

COLUMNS = {"system": pl.Utf8, "fraction": pl.Float64, "offered_per_s": pl.Float64, "achieved_per_s": pl.Float64,
           "service_p50_ms": pl.Float64, "service_p99_ms": pl.Float64, "intended_p50_ms": pl.Float64,
           "intended_p99_ms": pl.Float64}


def curve_table(run: RunData) -> pl.DataFrame:
    rows = []
    for system in run.systems:
        for point in system.get("rate_sweep") or []:
            phase = point["phase"]
            intervals = run.intervals.filter((pl.col("system") == system["label"]) & (pl.col("phase") == phase))
            ops = run.ops.filter((pl.col("system") == system["label"]) & (pl.col("phase") == phase))
            if intervals.is_empty() or ops.is_empty():
                continue  # the phase did not run (the run stopped before it)
            service, intended = merge_histograms(ops["hist"]), merge_histograms(ops["intended_hist"])
            if service is None or intended is None:
                continue
            rows.append({"system": system["label"], "fraction": point["fraction"],
                         "offered_per_s": point["offered_per_s"],
                         "achieved_per_s": float(intervals["ops_per_s"].mean()),
                         "service_p50_ms": service.get_value_at_percentile(50.0) / 1000,
                         "service_p99_ms": service.get_value_at_percentile(99.0) / 1000,
                         "intended_p50_ms": intended.get_value_at_percentile(50.0) / 1000,
                         "intended_p99_ms": intended.get_value_at_percentile(99.0) / 1000})
    return pl.DataFrame(rows, schema=COLUMNS)


def curve_chart(table: pl.DataFrame) -> alt.Chart | None:
    if table.is_empty():
        return None
    long = table.unpivot(index=["system", "achieved_per_s", "fraction"],
                         on=["service_p99_ms", "intended_p99_ms"], variable_name="latency", value_name="p99_ms")
    long = long.with_columns(pl.col("latency").replace({"service_p99_ms": "service time",
                                                         "intended_p99_ms": "from intended start"}))
    return (alt.Chart(long).mark_line(point=True)
            .encode(x=alt.X("achieved_per_s:Q", title="achieved requests/s"),
                    y=alt.Y("p99_ms:Q", title="p99 latency (ms, log)", scale=alt.Scale(type="log")),
                    color=palette.color("system", table["system"].to_list()),
                    strokeDash=alt.StrokeDash("latency:N", title="p99 measured"),
                    tooltip=["system", "fraction", "achieved_per_s", "latency", "p99_ms"])
            .properties(width=520, height=280, title="Latency against throughput (open-loop rate sweep)"))


def curve_finding(table: pl.DataFrame) -> str:
    """What the curve says, per system, from the lowest and the highest offered rate."""
    if table.is_empty():
        return ""
    parts = []
    for (label,), points in table.sort("fraction").group_by(["system"], maintain_order=True):
        low, high = points.row(0, named=True), points.row(-1, named=True)
        kept_up = high["achieved_per_s"] >= 0.95 * high["offered_per_s"]
        text = (f"{label}: at {low['fraction']:g}x of its closed-loop throughput the p99 from the intended start was "
                f"{low['intended_p99_ms']:.1f} ms (service {low['service_p99_ms']:.1f} ms); at {high['fraction']:g}x "
                f"({high['offered_per_s']:,.0f} requests/s offered, {high['achieved_per_s']:,.0f} served) it was "
                f"{high['intended_p99_ms']:.1f} ms (service {high['service_p99_ms']:.1f} ms)")
        if not kept_up and high["intended_p99_ms"] > 2 * high["service_p99_ms"]:
            text += ": past its capacity requests queue, so the wait grows while the service time does not"
        parts.append(text + ".")
    return "**Latency against throughput.** " + " ".join(parts)
