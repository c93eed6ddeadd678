"""The engines' own checkpoints inside the measured phases, drawn on the per-second rate.

During a phase the runner reads the engine's checkpoint counters every half second
(lib/native/src/phase.rs, `checkpoint_marks` events): a rise in the milliseconds of finished
checkpoints is one ending, lasting that many milliseconds; a rise in the count begun with no
ending yet is one still running, drawn to the phase's end. WiredTiger reports them; an engine
without such counters (RocksDB, LMDB, PerconaFT here) has no marks.

Where the params keep the post's checkpoints per measured span (`phases.measure.stands_for_s`,
params/checkpoints.py), the page says which interval each system ran with and why.
"""
from __future__ import annotations

import altair as alt
import polars as pl

from ..params.checkpoints import describe
from . import palette
from .charts import empty_panel, time_unit
from .rundata import RunData, system_events


def _phase_starts(run: RunData, label: str) -> dict[str, float]:
    return {e["phase"]: e["t"] for e in system_events(run, label, "phase_start")}


def spans(run: RunData) -> pl.DataFrame:
    """One row per checkpoint seen inside a phase: system, phase, when it began and ended
    (seconds into the phase) and how long it took; `ended` null for one still running at the
    phase's end."""
    rows = []
    for system in run.systems:
        label = system["label"]
        starts = _phase_starts(run, label)
        running: dict[str, float] = {}
        for event in system_events(run, label, "checkpoint_marks"):
            phase = event["phase"]
            into = event["t"] - starts.get(phase, event["t"])
            if event["took_ms"] > 0:
                took = event["took_ms"] / 1000
                rows.append({"system": label, "phase": phase, "began": max(0.0, into - took), "ended": into,
                             "seconds": took})
                # One that was running ended; one begun in the same half second is the next
                # (WiredTiger runs one at a time), else what began was the one that ended.
                was_running = running.pop(phase, None) is not None
                if was_running and event["began"] > 0:
                    running[phase] = into
            elif event["began"] > 0:
                running[phase] = into
        rows += [{"system": label, "phase": phase, "began": began, "ended": None, "seconds": None}
                 for phase, began in running.items()]
    if not rows:
        return pl.DataFrame()
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "phase": pl.Utf8, "began": pl.Float64,
                                      "ended": pl.Float64, "seconds": pl.Float64}).sort("system", "phase", "began")


def _rate_while(run: RunData, found: pl.DataFrame) -> pl.DataFrame:
    """Each whole second of the phases with checkpoints, and whether one was running in it."""
    ticks = run.ticks
    if ticks.is_empty() or found.is_empty():
        return pl.DataFrame()
    ticks = (ticks.join(found.select("system", "phase").unique(), on=["system", "phase"])
             .with_columns((pl.col("t_start") - pl.col("t_start").min().over("system", "phase")).alias("into")))
    ends = ticks.group_by("system", "phase").agg((pl.col("into") + pl.col("seconds")).max().alias("phase_end"))
    marked = found.join(ends, on=["system", "phase"]).with_columns(pl.col("ended").fill_null(pl.col("phase_end")))
    during = (ticks.join(marked.select("system", "phase", "began", "ended"), on=["system", "phase"])
              .filter((pl.col("into") + pl.col("seconds") > pl.col("began")) & (pl.col("into") < pl.col("ended")))
              .select("system", "phase", "into").unique().with_columns(pl.lit(True).alias("checkpointing")))
    return (ticks.join(during, on=["system", "phase", "into"], how="left")
            .with_columns(pl.col("checkpointing").fill_null(False)))


def table(run: RunData, found: pl.DataFrame) -> pl.DataFrame:
    """Per system and phase: the checkpoints, their time, and the rate while one ran against
    the rate outside them (the cost a phase without checkpoints would leave out)."""
    if found.is_empty():
        return pl.DataFrame()
    per = found.group_by("system", "phase", maintain_order=True).agg(
        pl.len().alias("checkpoints"), pl.col("seconds").sum().round(1).alias("seconds checkpointing"),
        pl.col("seconds").max().round(1).alias("longest (s)"))
    seconds = _rate_while(run, found)
    if not seconds.is_empty():
        rates = seconds.group_by("system", "phase").agg(
            pl.col("ops_per_s").filter(pl.col("checkpointing")).mean().round(0).alias("ops/s while checkpointing"),
            pl.col("ops_per_s").filter(~pl.col("checkpointing")).mean().round(0).alias("ops/s outside"))
        per = per.join(rates, on=["system", "phase"], how="left")
    return per


def sentence(run: RunData, found: pl.DataFrame) -> str:
    params = run.manifest["params"]
    measure = (params.get("phases") or {}).get("measure") or {}
    rule = describe(params["systems"], measure)
    quiesce = (params.get("phases") or {}).get("quiesce_checkpoint", True)
    said = []
    if rule:
        said.append(f"Checkpoints in the post's proportion (`phases.measure.stands_for_s`): {rule}.")
    if not quiesce and measure:
        cold = (params.get("phases") or {}).get("cold_start", "none") != "none"
        said.append("No checkpoint or flush between the load and the queries (`phases.quiesce_checkpoint: false`), "
                    "as the post went from one to the other"
                    + ("; the cold start still closes each engine, which checkpoints WiredTiger and flushes "
                       "RocksDB's memtables." if cold else "."))
    if found.is_empty():
        said.append("No engine reported a checkpoint inside a phase.")
    else:
        said.append("The engines' own checkpoints inside each phase, read from their counters every half second; "
                    "the chart shades them on the per-second rate.")
    return " ".join(said)


def chart(run: RunData, found: pl.DataFrame) -> alt.Chart:
    """The per-second rate of each system and phase with a checkpoint, the checkpoints shaded."""
    title = "Rate per second, the engine's checkpoints shaded"
    seconds = _rate_while(run, found)
    if seconds.is_empty():
        return empty_panel(title, "No checkpoint inside a phase to draw.")
    divisor, unit = time_unit(float((seconds["into"] + seconds["seconds"]).max() or 0))
    ends = seconds.group_by("system", "phase").agg((pl.col("into") + pl.col("seconds")).max().alias("phase_end"))
    boxes = (found.join(ends, on=["system", "phase"]).with_columns(pl.col("ended").fill_null(pl.col("phase_end")))
             .select("system", "phase", (pl.col("began") / divisor).alias("x0"), (pl.col("ended") / divisor).alias("x1"),
                     pl.lit("checkpoint").alias("kind")))
    rates = seconds.select("system", "phase", ((pl.col("into") + pl.col("seconds")) / divisor).alias("x0"),
                           "ops_per_s", pl.lit("rate").alias("kind"))
    values = [{**row, "panel": f"{row['system']}, {row['phase']}"}
              for row in pl.concat([rates, boxes], how="diagonal").to_dicts()]
    base = alt.Chart(alt.Data(values=values))
    shade = (base.transform_filter(alt.datum.kind == "checkpoint")
             .mark_rect(color="#999", opacity=0.3)
             .encode(x=alt.X("x0:Q", title=f"{unit} into the phase"), x2="x1:Q"))
    line = (base.transform_filter(alt.datum.kind == "rate")
            .mark_line(strokeWidth=1)
            .encode(x="x0:Q", y=alt.Y("ops_per_s:Q", title="per second"),
                    color=palette.color("system", [s["label"] for s in run.systems]),
                    tooltip=["system:N", "phase:N", alt.Tooltip("ops_per_s:Q", format=",.0f")]))
    return (alt.layer(shade, line).properties(width=560, height=130)
            .facet(row=alt.Row("panel:N", title=None), title=title)
            .resolve_scale(y="independent"))
