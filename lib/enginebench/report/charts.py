"""Static charts: altair specs rendered by vl-convert, so reports read offline.

Shared conventions live here so every chart follows them: systems are coloured by
palette.color (one colour per system in every report), time axes are in seconds or minutes as
fits the run (time_axis), symlog axes tick at powers of ten (symlog_axis), and a chart with
nothing to draw is a panel that says why (empty_panel).
"""
from __future__ import annotations

import math

import altair as alt
import polars as pl

from . import chart_export, palette
from .rundata import RunData

METRICS = (("ops_per_s", "ops/s"), ("r_per_op", "r/o"), ("wkb_per_op", "wKB/o"),
           ("cs_per_op", "cs/o"), ("cpu_us_per_op", "cpu/o (us)"))


def to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    """The chart as PNG, carrying its spec so the HTML export can draw it as SVG (chart_export)."""
    return chart_export.to_png(chart, scale)


# Runs shorter than this read best in seconds; longer ones in minutes.
SECONDS_UP_TO = 180


def time_unit(longest_s: float) -> tuple[float, str]:
    """(divisor, unit name) for a time axis spanning `longest_s` seconds."""
    return (1.0, "seconds") if longest_s <= SECONDS_UP_TO else (60.0, "minutes")


def with_elapsed(rows: pl.DataFrame, start: str = "t_start", end: str = "t_end",
                 by: str = "system") -> tuple[pl.DataFrame, str]:
    """Rows with an `elapsed` column (end of each interval, from each `by` group's first start)
    in the unit that fits the longest span, and that unit's name."""
    starts = rows.group_by(by).agg(pl.col(start).min().alias("_t0"))
    rows = rows.join(starts, on=by).with_columns((pl.col(end) - pl.col("_t0")).alias("elapsed")).drop("_t0")
    divisor, unit = time_unit(float(rows["elapsed"].max() or 0))
    return rows.with_columns(pl.col("elapsed") / divisor), unit


def symlog_axis(values, title: str, field: str = "ms") -> alt.X:
    """A symlog x axis ticked at 0 and at powers of ten only (the default ticks crowd and collide
    where the scale turns logarithmic), linear below the smallest value's decade so sub-millisecond
    figures still show as bars."""
    positive = [float(v) for v in values if v is not None and v > 0]
    low = max(-3, math.floor(math.log10(min(positive)))) if positive else 0
    high = max(low + 1, math.ceil(math.log10(max(positive)))) if positive else 1
    ticks = [0.0] + [10.0 ** k for k in range(low, high + 1)]
    return alt.X(f"{field}:Q", title=title, scale=alt.Scale(type="symlog", constant=10.0 ** low), stack=None,
                 axis=alt.Axis(values=ticks, format="~g", labelOverlap="greedy"))


def empty_panel(title: str, reason: str) -> alt.Chart:
    """What a chart shows when it has nothing to draw: its title and why it is empty."""
    return (alt.Chart(alt.Data(values=[{"text": reason}]), title=title)
            .mark_text(align="left", baseline="middle", fontSize=13, color="#555", x=8)
            .encode(text="text:N")
            .properties(width=560, height=40, description=f"{title}: no chart. {reason}"))


def throughput_over_time(run: RunData, phase: str, title: str) -> alt.Chart:
    rows = run.intervals.filter(pl.col("phase") == phase) if not run.intervals.is_empty() else run.intervals
    if rows.is_empty():
        return empty_panel(title, f"No {phase}-phase intervals were recorded in this run (see the banner for why).")
    rows, unit = with_elapsed(rows)
    data = alt.Data(values=rows.select("system", "elapsed", "interval", "ops_per_s").to_dicts())
    return (alt.Chart(data, title=title)
            .mark_line(point=True)
            .encode(x=alt.X("elapsed:Q", title=f"{unit} into the {phase} phase (end of interval)"),
                    y=alt.Y("ops_per_s:Q", title="operations per second" if phase != "load" else "documents inserted per second"),
                    color=palette.color("system", [s["label"] for s in run.systems]),
                    tooltip=["system:N", "interval:Q", alt.Tooltip("ops_per_s:Q", format=",.0f")])
            .properties(width=560, height=260))


def per_op_bars(table: pl.DataFrame, title: str) -> alt.Chart:
    """One small bar chart per metric, from a summary table with columns system + METRICS keys.
    A metric no system measured gets no panel; the subtitle names it and says why."""
    if table.is_empty():
        return empty_panel(title, "No system has figures for this phase.")
    long = []
    for row in table.iter_rows(named=True):
        for key, name in METRICS:
            if row.get(key) is not None:
                long.append({"system": row["system"], "metric": name, "value": float(row[key])})
    if not long:
        return empty_panel(title, "No per-operation counter was measured in this phase.")
    shown = {r["metric"] for r in long}
    missing = [name for _, name in METRICS if name not in shown]
    heading = alt.TitleParams(title, subtitle=[f"not measured on this host or target: {', '.join(missing)}"]
                              if missing else [])
    data = alt.Data(values=long)
    return (alt.Chart(data, title=heading)
            .mark_bar()
            .encode(x=alt.X("system:N", title=None, axis=alt.Axis(labelAngle=-30), sort=table["system"].to_list()),
                    y=alt.Y("value:Q", title=None),
                    color=palette.color("system", table["system"].to_list(), legend=False),
                    column=alt.Column("metric:N", title=None, sort=[n for _, n in METRICS if n in shown]),
                    tooltip=["system:N", "metric:N", alt.Tooltip("value:Q", format=".3g")])
            .resolve_scale(y="independent")
            .properties(width=110, height=180))


def latency_bars(latency: pl.DataFrame, title: str) -> alt.Chart:
    """p99 as a light bar with p50 as a solid bar drawn over it (p99 rows first, so drawn first),
    per op and system; not stacked: each bar starts at zero."""
    if latency.is_empty() or "p99_ms" not in latency.columns:
        return empty_panel(title, "No latency histograms were recorded (no op completed in the measured phase).")
    long = latency.select("setup", "op", "p50_ms", "p99_ms").unpivot(
        index=["setup", "op"], variable_name="percentile", value_name="ms").with_columns(
        pl.col("percentile").replace({"p50_ms": "p50", "p99_ms": "p99"})).sort("percentile", descending=True)
    return (alt.Chart(alt.Data(values=long.to_dicts()), title=title)
            .mark_bar()
            .encode(y=alt.Y("op:N", title=None), x=symlog_axis(long["ms"], "milliseconds (symlog)"),
                    color=palette.color("setup", latency["setup"].to_list()), yOffset="setup:N",
                    opacity=alt.Opacity("percentile:N", sort=["p99", "p50"], title="percentile",
                                        scale=alt.Scale(domain=["p99", "p50"], range=[0.4, 1.0])),
                    tooltip=["setup:N", "op:N", "percentile:N", alt.Tooltip("ms:Q", format=".3g")])
            .properties(width=520, height=alt.Step(9)))
