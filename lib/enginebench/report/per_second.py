"""The per-second rate, where a stall hides, and when RocksDB held writes back.

An interval's rate averages its 20 seconds, so a stall of a second or two, when the engine
stopped answering every thread at once (the LinkBench post's comments discuss exactly these),
barely moves it. The runner also counts each interval per tick (a second when the interval is
whole seconds), by the same rule as the interval's rate (results/tables.py tick_rows). A second
is a dip when its rate fell below DIP of its own interval's median second: measured against its
neighbours, a load that slows as it grows is not taken for a stall.

RocksDB delays writes by itself (its L0, memtable and pending-compaction rules) and, under
`2015`, while MongoRocks' soft_rate_limit held (lib/native/src/engines/rocks_throttle.rs): the
intervals in which either happened are listed with what the engine's counters read.
"""
from __future__ import annotations

import altair as alt
import polars as pl

from . import palette
from .charts import empty_panel, time_unit
from .rundata import RunData

# A second below this fraction of its interval's median second is a dip.
DIP = 0.25
# A tick shorter than this fraction of a whole one (a phase's last, cut by its end) is not judged.
WHOLE = 0.9


def _judged(run: RunData) -> pl.DataFrame:
    """Every whole tick, with its interval's median rate and its time into the phase."""
    ticks = run.ticks
    if ticks.is_empty():
        return ticks
    whole = ticks.filter(pl.col("seconds") >= WHOLE * pl.col("seconds").max().over("system", "phase"))
    return whole.with_columns(
        pl.col("ops_per_s").median().over("system", "phase", "interval").alias("interval_median"),
        (pl.col("t_start") - pl.col("t_start").min().over("system", "phase")).alias("into_phase"))


def dips(run: RunData) -> pl.DataFrame:
    """One row per system and phase with a dip: how many seconds dipped, the lowest and when."""
    judged = _judged(run)
    if judged.is_empty():
        return pl.DataFrame()
    low = judged.filter((pl.col("interval_median") > 0) & (pl.col("ops_per_s") < DIP * pl.col("interval_median")))
    if low.is_empty():
        return pl.DataFrame()
    lowest = low.sort("ops_per_s").group_by("system", "phase", maintain_order=True).first()
    counts = low.group_by("system", "phase").agg(pl.len().alias("seconds below"))
    order = {s["label"]: i for i, s in enumerate(run.systems)}
    return (lowest.join(counts, on=["system", "phase"])
            .select("system", "phase", "seconds below",
                    pl.col("ops_per_s").round(0).alias("lowest second (ops/s)"),
                    pl.col("into_phase").round(0).alias("at (s into the phase)"),
                    pl.col("interval_median").round(0).alias("its interval's median second (ops/s)"))
            .sort(pl.col("system").replace_strict(order, default=len(order)), "phase"))


def sentence(run: RunData, found: pl.DataFrame) -> str:
    if run.ticks.is_empty():
        return ("This run has no per-second rates (its runner predates them); the intervals' rates are above.")
    if found.is_empty():
        return (f"No second's rate fell below {DIP:.0%} of its interval's median second in any phase: the "
                "intervals' rates above hide no stall.")
    return (f"Seconds whose rate fell below {DIP:.0%} of their interval's median second, which the intervals' "
            "rates average away; the chart draws those phases second by second.")


def chart(run: RunData, found: pl.DataFrame) -> alt.Chart:
    """The per-second rate of each system and phase that had a dip, one panel per phase."""
    title = "Rate per second where a second dipped (same counting as the intervals' rates)"
    if found.is_empty():
        return empty_panel(title, "No dip to draw.")
    judged = _judged(run).join(found.select("system", "phase"), on=["system", "phase"])
    divisor, unit = time_unit(float(judged["into_phase"].max() or 0))
    data = alt.Data(values=judged.select(
        "system", "phase", (pl.col("into_phase") / divisor).alias("elapsed"), "ops_per_s").to_dicts())
    return (alt.Chart(data, title=title)
            .mark_line(strokeWidth=1)
            .encode(x=alt.X("elapsed:Q", title=f"{unit} into the phase"),
                    y=alt.Y("ops_per_s:Q", title="per second"),
                    color=palette.color("system", [s["label"] for s in run.systems]),
                    row=alt.Row("phase:N", title=None),
                    tooltip=["system:N", "phase:N", alt.Tooltip("ops_per_s:Q", format=",.0f")])
            .resolve_scale(y="independent")
            .properties(width=560, height=160))


DELAYED_MS = "engine.mongorocks.soft_rate_limit_delayed_ms"
DELAYED_RATE = "engine.rocksdb.actual-delayed-write-rate"
STOPPED = "engine.rocksdb.is-write-stopped"


def throttled(run: RunData) -> pl.DataFrame:
    """The RocksDB intervals in which writes were held back: by MongoRocks' soft_rate_limit (its
    seconds of delay in the interval), by RocksDB's own delay (its delayed write rate at the
    interval's end) or by a stop."""
    rows = run.intervals
    labels = [s["label"] for s in run.systems if s["engine"] == "rocksdb"]
    if rows.is_empty() or not labels or not any(c in rows.columns for c in (DELAYED_MS, DELAYED_RATE, STOPPED)):
        return pl.DataFrame()
    def column(name: str) -> pl.Expr:
        return pl.col(name).cast(pl.Float64) if name in rows.columns else pl.lit(None, dtype=pl.Float64)
    out = (rows.filter(pl.col("system").is_in(labels)).sort("system", "t_end")
           .with_columns((column(DELAYED_MS) - column(DELAYED_MS).shift(1).over("system").fill_null(0)).alias("delayed_ms"),
                         (pl.col("t_end") - pl.col("t_start").min().over("system", "phase")).alias("into_phase"))
           .filter((pl.col("delayed_ms") > 0) | (column(DELAYED_RATE) > 0) | (column(STOPPED) > 0)))
    if out.is_empty():
        return pl.DataFrame()
    return out.select("system", "phase", pl.col("into_phase").round(0).alias("interval ending at (s into the phase)"),
                      (pl.col("delayed_ms") / 1000).round(1).alias("soft_rate_limit delay, s"),
                      (column(DELAYED_RATE) / 1024).round(0).alias("RocksDB's delayed write rate, KB/s"),
                      column(STOPPED).alias("writes stopped"))


def throttle_sentence(run: RunData, found: pl.DataFrame) -> str:
    if not any(s["engine"] == "rocksdb" for s in run.systems):
        return ""
    if found.is_empty():
        return ("RocksDB held no write back in any interval: neither its own delay nor a stop, nor MongoRocks' "
                "soft_rate_limit where it ran.")
    return ("Intervals in which RocksDB held writes back: the seconds MongoRocks' soft_rate_limit delayed them "
            "(under `2015`), RocksDB's own delayed write rate at the interval's end, and whether writes stopped.")
