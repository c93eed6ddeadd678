"""Static charts: altair specs rendered to PNG by vl-convert, so reports read offline."""
from __future__ import annotations

import altair as alt
import polars as pl
import vl_convert as vlc

from .rundata import RunData

METRICS = (("ops_per_s", "ops/s"), ("r_per_op", "r/o"), ("wkb_per_op", "wKB/o"),
           ("cs_per_op", "cs/o"), ("cpu_us_per_op", "cpu/o (us)"))


def to_png(chart: alt.TopLevelMixin, scale: float = 2.0) -> bytes:
    return vlc.vegalite_to_png(chart.to_json(), scale=scale)


def _elapsed(run: RunData, phase: str) -> pl.DataFrame:
    rows = run.intervals.filter(pl.col("phase") == phase)
    if rows.is_empty():
        return rows
    starts = rows.group_by("system").agg(pl.col("t_start").min().alias("t0"))
    return (rows.join(starts, on="system")
            .with_columns(((pl.col("t_end") - pl.col("t0")) / 60).alias("minutes")))


def throughput_over_time(run: RunData, phase: str, title: str) -> alt.Chart | None:
    rows = _elapsed(run, phase)
    if rows.is_empty():
        return None
    data = alt.Data(values=rows.select("system", "minutes", "interval", "ops_per_s").to_dicts())
    return (alt.Chart(data, title=title)
            .mark_line(point=True)
            .encode(x=alt.X("minutes:Q", title=f"minutes into the {phase} phase (end of interval)"),
                    y=alt.Y("ops_per_s:Q", title="operations per second" if phase != "load" else "documents inserted per second"),
                    color=alt.Color("system:N", title="setup"),
                    tooltip=["system:N", "interval:Q", alt.Tooltip("ops_per_s:Q", format=",.0f")])
            .properties(width=560, height=260))


def per_op_bars(table: pl.DataFrame, title: str) -> alt.Chart | None:
    """One small bar chart per metric, from a summary table with columns system + METRICS keys."""
    if table.is_empty():
        return None
    long = []
    for row in table.iter_rows(named=True):
        for key, name in METRICS:
            if row.get(key) is not None:
                long.append({"system": row["system"], "metric": name, "value": float(row[key])})
    if not long:
        return None
    data = alt.Data(values=long)
    return (alt.Chart(data, title=title)
            .mark_bar()
            .encode(x=alt.X("system:N", title=None, axis=alt.Axis(labelAngle=-30)),
                    y=alt.Y("value:Q", title=None),
                    color=alt.Color("system:N", legend=None),
                    column=alt.Column("metric:N", title=None, sort=[n for _, n in METRICS]),
                    tooltip=["system:N", "metric:N", alt.Tooltip("value:Q", format=".3g")])
            .resolve_scale(y="independent")
            .properties(width=110, height=180))


def latency_bars(latency: pl.DataFrame, title: str) -> alt.Chart | None:
    if latency.is_empty() or "p99_ms" not in latency.columns:
        return None
    long = latency.select("setup", "op", "p50_ms", "p99_ms").unpivot(
        index=["setup", "op"], variable_name="percentile", value_name="ms")
    return (alt.Chart(alt.Data(values=long.to_dicts()), title=title)
            .mark_bar()
            .encode(y=alt.Y("op:N", title=None), x=alt.X("ms:Q", title="milliseconds", scale=alt.Scale(type="symlog")),
                    color=alt.Color("setup:N"), yOffset="setup:N",
                    opacity=alt.Opacity("percentile:N", sort=["p99_ms", "p50_ms"], legend=alt.Legend(title="percentile")))
            .properties(width=520, height=alt.Step(9)))
