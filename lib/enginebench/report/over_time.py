"""Per-operation metrics interval by interval, as the posts' graphs and monitoring tools show them:
rate, reads, KB read and written and CPU per operation, the server's RSS and the p99 latency,
each system's steady intervals (report/steady.py) drawn filled, the others hollow."""
from __future__ import annotations

import altair as alt
import polars as pl

from . import palette
from .charts import empty_panel, with_elapsed
from .rundata import RunData, merge_histograms, phase_summary
from .steady import steadiness

METRICS = (("ops/s", "ops_per_s"), ("r/o", "r_per_op"), ("rKB/o", "rkb_per_op"), ("wKB/o", "wkb_per_op"),
           ("cpu/o (us)", "cpu_us_per_op"), ("RSS (MiB)", None), ("p99 (ms)", None))
MiB = 1 << 20


def interval_table(run: RunData, phase: str = "run") -> pl.DataFrame:
    """One row per system and interval of `phase`, with every metric and whether it was steady."""
    if run.intervals.is_empty():
        return pl.DataFrame()
    rows = []
    for system in run.systems:
        label = system["label"]
        mine = run.intervals.filter((pl.col("system") == label) & (pl.col("phase") == phase)).sort("interval")
        steady = set(steadiness(run, label, phase).passed) if phase == "run" else set()
        for interval in mine.iter_rows(named=True):
            k = interval["interval"]
            summary = phase_summary(run.intervals, label, phase, k) or {}
            row = {"system": label, "interval": k + 1, "t_start": interval["t_start"], "t_end": interval["t_end"],
                   "steady": k in steady}
            for name, key in METRICS:
                row[name] = summary.get(key) if key else None
            rss = summary.get("rss_bytes")
            row["RSS (MiB)"] = rss / MiB if rss else None
            row["p99 (ms)"] = _p99_ms(run, label, phase, k)
            rows.append(row)
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def _p99_ms(run: RunData, label: str, phase: str, interval: int) -> float | None:
    """The p99 over every op type of one interval, from the merged histograms."""
    if run.ops.is_empty():
        return None
    ops = run.ops.filter((pl.col("system") == label) & (pl.col("phase") == phase) & (pl.col("interval") == interval))
    merged = merge_histograms(ops["hist"]) if ops.height else None
    return merged.get_value_at_percentile(99.0) / 1000 if merged is not None else None


def _system_scale(run: RunData) -> alt.Scale:
    labels = [s["label"] for s in run.systems]
    return alt.Scale(domain=labels, range=[palette.system_color(label) for label in labels])


def chart(run: RunData, phase: str = "run", title: str = "Per-operation metrics per interval") -> alt.Chart:
    table = interval_table(run, phase)
    if table.is_empty():
        return empty_panel(title, f"No {phase}-phase intervals were recorded in this run (see the banner for why).")
    table, unit = with_elapsed(table)
    long = [{"system": r["system"], "elapsed": r["elapsed"], "interval": r["interval"], "metric": name,
             "value": float(r[name]), "steady": "steady" if r["steady"] else "not steady"}
            for r in table.iter_rows(named=True) for name, _ in METRICS if r[name] is not None]
    if not long:
        return empty_panel(title, "No per-operation figure was measured in this phase.")
    shown = [name for name, _ in METRICS if any(p["metric"] == name for p in long)]
    base = alt.Chart(alt.Data(values=long)).encode(
        x=alt.X("elapsed:Q", title=f"{unit} into the {phase} phase"),
        y=alt.Y("value:Q", title=None),
        color=palette.color("system", [s["label"] for s in run.systems]))
    lines = base.mark_line(opacity=0.6)
    points = base.mark_point(size=40).encode(
        fill=alt.condition("datum.steady == 'steady'", alt.Fill("system:N", scale=_system_scale(run), legend=None),
                           alt.value("white")),
        tooltip=["system:N", "interval:Q", "metric:N", alt.Tooltip("value:Q", format=".3g"), "steady:N"])
    return (alt.layer(lines, points)
            .properties(width=230, height=150)
            .facet(facet=alt.Facet("metric:N", title=None, sort=shown), columns=3, title=alt.TitleParams(
                title, subtitle=["filled points: the intervals that passed the steady-state rule; hollow: the others"]))
            .resolve_scale(y="independent"))
