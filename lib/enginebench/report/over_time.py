"""Per-operation metrics interval by interval, as the posts' graphs and monitoring tools show them:
rate, reads, KB read and written and CPU per operation, the server's RSS and the p99 latency.

Each family says what to draw (a View): the phases it measures, in the order they ran, and the
intervals its figures are judged on (its steady-state window), drawn filled, the others hollow.
A family whose figures count every interval says why in the chart's caption instead, so an
unmarked chart never reads as "nothing was steady".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import altair as alt
import polars as pl

from . import palette
from .charts import empty_panel, with_elapsed
from .rundata import RunData, merge_histograms, phase_summary
from .steady import RULE, steadiness

METRICS = (("ops/s", "ops_per_s"), ("r/o", "r_per_op"), ("rKB/o", "rkb_per_op"), ("wKB/o", "wkb_per_op"),
           ("cpu/o (us)", "cpu_us_per_op"), ("RSS (MiB)", None), ("p99 (ms)", None))
MiB = 1 << 20

# (run, system label, phase) -> the interval numbers (0-based) inside the window.
Window = Callable[[RunData, str, str], list[int]]


@dataclass(frozen=True)
class View:
    """What a family's chart draws. `phases`: its measured phases in the order they ran;
    `window`: the intervals its figures are judged on, or None when no steady-state rule
    applies; `rule`: the window's rule, or why none applies (the chart's caption); `per`: what
    one operation is (the rate counts them, the per-operation figures divide by them)."""
    phases: tuple[str, ...]
    window: Window | None
    rule: str
    per: str = "operation"


def _steady_rule(run: RunData, label: str, phase: str) -> list[int]:
    return steadiness(run, label, phase).passed


# The query phase judged by report/steady.py's rule (LinkBench's claims).
QUERY_PHASE = View(("run",), _steady_rule, RULE, per="request")


def interval_table(run: RunData, view: View = QUERY_PHASE) -> pl.DataFrame:
    """One row per system, phase and interval of the view, with every metric and whether the
    interval is in the view's window (None when the view has none)."""
    if run.intervals.is_empty():
        return pl.DataFrame()
    rows = []
    for system in run.systems:
        for phase in view.phases:
            rows += _phase_rows(run, system["label"], phase, view)
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def _phase_rows(run: RunData, label: str, phase: str, view: View) -> list[dict]:
    mine = run.intervals.filter((pl.col("system") == label) & (pl.col("phase") == phase)).sort("interval")
    window = set(view.window(run, label, phase)) if view.window and mine.height else set()
    rows = []
    for interval in mine.iter_rows(named=True):
        k = interval["interval"]
        summary = phase_summary(run.intervals, label, phase, k) or {}
        row = {"system": label, "phase": phase, "interval": k + 1, "t_start": interval["t_start"],
               "t_end": interval["t_end"], "steady": (k in window) if view.window else None}
        for name, key in METRICS:
            row[name] = summary.get(key) if key else None
        rss = summary.get("rss_bytes")
        row["RSS (MiB)"] = rss / MiB if rss else None
        row["p99 (ms)"] = _p99_ms(run, label, phase, k)
        rows.append(row)
    return rows


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


def _phases_named(view: View) -> str:
    if len(view.phases) == 1:
        return f"the {view.phases[0]} phase"
    return f"the phases {view.phases[0]} to {view.phases[-1]}"


def _time_title(view: View, unit: str) -> str:
    if len(view.phases) == 1:
        return f"{unit} into the {view.phases[0]} phase"
    return f"{unit} from the start of {view.phases[0]}"


def _caption(view: View) -> list[str]:
    lines = [f"rate: {view.per}s per second; per-operation figures: per {view.per}; p99: over every operation type"]
    if len(view.phases) > 1:
        lines.append(f"the phases, one after another: {', '.join(view.phases)}")
    if view.window is None:
        return lines + [f"every point filled: no steady-state rule applies here ({view.rule})"]
    return lines + [f"filled points: the intervals in the steady-state window ({view.rule}); hollow: the others"]


STEADY_LABELS = {True: "steady", False: "not steady", None: "no rule applies"}


def _long(table: pl.DataFrame, view: View) -> list[dict]:
    """One row per interval and metric, as the faceted chart reads them."""
    rate = f"{view.per}s/s"
    return [{"system": r["system"], "phase": r["phase"], "elapsed": r["elapsed"], "interval": r["interval"],
             "metric": rate if name == "ops/s" else name, "value": float(r[name]),
             "steady": STEADY_LABELS[r["steady"]]}
            for r in table.iter_rows(named=True) for name, _ in METRICS if r[name] is not None]


def chart(run: RunData, view: View = QUERY_PHASE, title: str = "Per-operation metrics per interval") -> alt.Chart:
    table = interval_table(run, view)
    if table.is_empty():
        return empty_panel(title, f"No intervals of {_phases_named(view)} were recorded in this run "
                                  "(see the banner for why).")
    table, unit = with_elapsed(table)
    long = _long(table, view)
    if not long:
        return empty_panel(title, "No per-operation figure was measured in this phase.")
    shown = list(dict.fromkeys(p["metric"] for p in long))
    base = alt.Chart(alt.Data(values=long)).encode(
        x=alt.X("elapsed:Q", title=_time_title(view, unit)),
        y=alt.Y("value:Q", title=None),
        color=palette.color("system", [s["label"] for s in run.systems]))
    lines = base.mark_line(opacity=0.6)
    points = base.mark_point(size=40).encode(
        fill=alt.condition("datum.steady != 'not steady'", alt.Fill("system:N", scale=_system_scale(run), legend=None),
                           alt.value("white")),
        tooltip=["system:N", "phase:N", "interval:Q", "metric:N", alt.Tooltip("value:Q", format=".3g"), "steady:N"])
    return (alt.layer(lines, points)
            .properties(width=230, height=150)
            .facet(facet=alt.Facet("metric:N", title=None, sort=shown), columns=3,
                   title=alt.TitleParams(title, subtitle=_caption(view)))
            .resolve_scale(y="independent"))
