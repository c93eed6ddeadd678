"""Charts of the TokuMX report (altair specs; the notebook renders them with charts.to_png)."""
from __future__ import annotations

import altair as alt
import polars as pl

from ...report import palette
from ...report.charts import time_unit, with_elapsed
from .report import post_storage


def _in_fitting_unit(series: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """insert_series' `minutes` as `elapsed` in seconds or minutes, whichever fits the run."""
    divisor, unit = time_unit(float(series["minutes"].max() or 0) * 60)
    return series.with_columns((pl.col("minutes") * 60 / divisor).alias("elapsed")), unit


INTERVAL_KINDS = {False: "at or above half the mean", True: "dip: below half the mean"}


def insert_rate_chart(series: pl.DataFrame, interval_s: float) -> alt.FacetChart | None:
    """Insert rate per interval, one panel per system, the dips (below half the mean) marked red
    and half the mean drawn dashed, as the post read its ClusterControl opcounter graphs."""
    if series.is_empty():
        return None
    series, unit = _in_fitting_unit(series)
    base = alt.Chart().encode(x=alt.X("elapsed:Q", title=f"{unit} into the inserts (end of interval)"))
    line = base.mark_line(color="#4c78a8").encode(y=alt.Y("insert_rate:Q", title=f"docs/s per {interval_s:g}-s interval"))
    marks = base.mark_point(filled=True, size=40).encode(
        y="insert_rate:Q",
        color=alt.Color("interval kind:N", title="interval",
                        scale=alt.Scale(domain=list(INTERVAL_KINDS.values()), range=["#4c78a8", "#d62728"])),
        tooltip=["system:N", "interval:Q", alt.Tooltip("insert_rate:Q", format=",.0f"),
                 alt.Tooltip("write_mb_s:Q", format=",.1f", title="MB/s written")])
    half = alt.Chart().mark_rule(strokeDash=[4, 3], color="#888").encode(y="mean(half_mean):Q")
    # The legend names what a point's colour means, not the column's true/false.
    series = series.with_columns(pl.col("dip").replace_strict(INTERVAL_KINDS, return_dtype=pl.Utf8)
                                 .alias("interval kind"))
    data = alt.Data(values=series.select("system", "interval", "elapsed", "insert_rate", "interval kind",
                                         "half_mean", "write_mb_s").to_dicts())
    return (alt.layer(line, marks, half, data=data)
            .properties(width=560, height=130)
            .facet(row=alt.Row("system:N", title=None, sort=series["system"].unique(maintain_order=True).to_list()),
                   title=alt.TitleParams("Insert rate over time (dips marked)",
                                         subtitle=["dashed line: half the system's mean rate"]))
            .resolve_scale(y="independent"))


def writes_chart(series: pl.DataFrame) -> alt.Chart | None:
    """MB/s the engine's process wrote (its /proc io write_bytes), per interval."""
    if series.is_empty() or series["write_mb_s"].null_count() == series.height:
        return None
    series, unit = _in_fitting_unit(series)
    data = alt.Data(values=series.select("system", "elapsed", "write_mb_s").to_dicts())
    return (alt.Chart(data, title="Disk writes over time (bytes the engine's process wrote, MB/s)")
            .mark_line(point=alt.OverlayMarkDef(size=12))
            .encode(x=alt.X("elapsed:Q", title=f"{unit} into the inserts"),
                    y=alt.Y("write_mb_s:Q", title="MB/s written"),
                    color=palette.color("system", series["system"].to_list()))
            .properties(width=560, height=220))


def storage_chart(table: pl.DataFrame) -> alt.Chart | None:
    """Bytes per document at the end (du / documents): ours next to the post's 10M-document runs."""
    if table.is_empty() or table["bytes/doc"].null_count() == table.height:
        return None
    ours = [{"setup": r["setup"], "bytes/doc": r["bytes/doc"], "source": "measured"}
            for r in table.iter_rows(named=True) if r["bytes/doc"] is not None]
    post = [{"setup": f"{r['system']} (2013)", "bytes/doc": r["bytes/doc"], "source": "the post"}
            for r in post_storage().iter_rows(named=True)]
    return (alt.Chart(alt.Data(values=post + ours), title="Storage per document at the end (du / documents)")
            .mark_bar()
            .encode(y=alt.Y("setup:N", title=None, sort=None), x=alt.X("bytes/doc:Q", title="bytes per document"),
                    color=alt.Color("source:N", title=None))
            .properties(width=480, height=alt.Step(22)))


def client_sweep_chart(table: pl.DataFrame) -> alt.Chart | None:
    """Throughput against client count, one line per system."""
    if table.is_empty():
        return None
    unit = table.columns[3]
    data = alt.Data(values=table.select("setup", "clients", pl.col(unit).alias("rate")).to_dicts())
    return (alt.Chart(data, title=f"{unit} against the number of clients")
            .mark_line(point=True)
            .encode(x=alt.X("clients:O", title="clients", axis=alt.Axis(labelAngle=0)),
                    y=alt.Y("rate:Q", title=unit), color=palette.color("setup", table["setup"].to_list()),
                    tooltip=["setup:N", "clients:O", alt.Tooltip("rate:Q", format=",.0f")])
            .properties(width=480, height=260))


def sweep_over_time(intervals: pl.DataFrame, unit: str) -> alt.Chart | None:
    """The counted rate per interval across the whole sweep, as the post's graphs showed clients
    being added over time."""
    rows = intervals.filter(pl.col("phase").str.starts_with("clients=")) if not intervals.is_empty() else intervals
    if rows.is_empty():
        return None
    rows, time = with_elapsed(rows.with_columns((pl.col("ops") / pl.col("seconds")).alias("rate")))
    data = alt.Data(values=rows.select("system", "phase", "elapsed", "rate").to_dicts())
    return (alt.Chart(data, title=f"{unit} per interval through the client sweep")
            .mark_line(point=alt.OverlayMarkDef(size=12))
            .encode(x=alt.X("elapsed:Q", title=f"{time} into the sweep (1, 2, ... clients in turn)"),
                    y=alt.Y("rate:Q", title=unit), color=palette.color("system", rows["system"].to_list()),
                    tooltip=["system:N", "phase:N", alt.Tooltip("rate:Q", format=",.0f")])
            .properties(width=560, height=240))
