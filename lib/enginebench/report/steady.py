"""Which measured intervals of a query phase a throughput verdict may use: the steady-state rule
(metrics/steady.py) applied to each system's intervals, and how the report states it. A system
that never gets there (its rate still trends) has no verdict for the claims that read its query
phase: they say "not steady". A stationary one is judged with its swing in the claim's noise. A
phase that ran until steady (`until_steady:` in its params) says when it got there.
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ..metrics.steady import (QUIET, RULE, STATIONARY, STATIONARY_MIN_INTERVALS, STEADY_MIN_INTERVALS,
                              STEADY_SPREAD, TREND_ALPHA, stationary_window, steady_state, steady_tail)
from .rundata import RunData, system_events

__all__ = ["RULE", "STEADY_MIN_INTERVALS", "STEADY_SPREAD", "STATIONARY", "steady_tail", "Steadiness",
           "steadiness", "steady_table", "steady_finding"]


@dataclass
class Steadiness:
    """One system's query intervals and which of them passed the rule."""
    label: str
    intervals: list[int]
    rates: list[float]
    passed: list[int]  # interval numbers (0-based) that passed; empty when not steady
    ended: str = ""    # how a phase measured until steady ended; "" for a phase of fixed length
    kind: str = ""     # QUIET or STATIONARY when steady (metrics/steady.py)
    trend_p: float | None = None  # the Mann-Kendall p-value over the stationary window, when tested

    @property
    def steady(self) -> bool:
        return bool(self.passed)

    def spread_of_tail(self) -> float | None:
        """The largest deviation from the mean over the last STEADY_MIN_INTERVALS intervals."""
        tail = self.rates[-STEADY_MIN_INTERVALS:]
        if len(tail) < STEADY_MIN_INTERVALS or not sum(tail):
            return None
        mean = sum(tail) / len(tail)
        return max(abs(r - mean) for r in tail) / mean

    def describe(self) -> str:
        """'intervals 4-10 passed' or why none did, in the report's 1-based numbering."""
        if self.kind == QUIET:
            return f"intervals {_span(self.passed)} of {len(self.intervals)} passed"
        if self.kind == STATIONARY:
            return (f"intervals {_span(self.passed)} of {len(self.intervals)} passed as stationary (they swing "
                    f"±{self.spread_of_window():.0%} with no trend, Mann-Kendall p = {self.trend_p:.2f}; the swing "
                    "is in the claim's noise)")
        if len(self.intervals) < STEADY_MIN_INTERVALS:
            return f"not steady: {len(self.intervals)} interval(s), fewer than the rule's {STEADY_MIN_INTERVALS}"
        quiet = (f"its last {STEADY_MIN_INTERVALS} intervals spread ±{self.spread_of_tail():.0%} around their mean "
                 f"(the rule allows ±{STEADY_SPREAD:.0%})")
        if self.trend_p is None:
            return (f"not steady: {quiet}, and {len(self.intervals)} intervals are too few for the trend test "
                    f"(it reads at least {STATIONARY_MIN_INTERVALS})")
        return (f"not steady: {quiet}, and its last {stationary_window(len(self.intervals))} still trend "
                f"(Mann-Kendall p = {self.trend_p:.3f} < {TREND_ALPHA:g})")

    def spread_of_window(self) -> float:
        """The largest deviation from the mean over the intervals that passed."""
        rates = self.rates[-len(self.passed):]
        mean = sum(rates) / len(rates)
        return max(abs(r - mean) for r in rates) / mean


def _span(intervals: list[int]) -> str:
    first, last = intervals[0] + 1, intervals[-1] + 1
    return f"{first}" if first == last else f"{first}-{last}"


def steadiness(run: RunData, label: str, phase: str = "run") -> Steadiness:
    """The rule applied to one system's intervals of a phase."""
    rows = pl.DataFrame() if run.intervals.is_empty() else run.intervals.filter(
        (pl.col("system") == label) & (pl.col("phase") == phase)).sort("interval")
    intervals = rows["interval"].to_list() if rows.height else []
    rates = [float(r) for r in rows["ops_per_s"].to_list()] if rows.height else []
    state = steady_state(rates)
    tail = state.intervals
    return Steadiness(label, intervals, rates, intervals[len(intervals) - tail:] if tail else [],
                      how_it_ended(run, label, phase), state.kind, state.trend_p)


def how_it_ended(run: RunData, label: str, phase: str) -> str:
    """For a phase measured until steady (params `until_steady`): when the driver ended it, or
    that it ran the most it could without settling. "" for a phase of fixed length."""
    starts = [e for e in system_events(run, label, "phase_start") if e.get("phase") == phase]
    if not starts or not starts[-1].get("until_steady"):
        return ""
    ends = [e for e in system_events(run, label, "phase_end") if e.get("phase") == phase]
    if not ends:
        return "did not end"
    end, most = ends[-1], starts[-1].get("duration_s")
    if end.get("steady_at_interval") is not None:
        return f"steady after {end['seconds']:,.0f} s (interval {end['steady_at_interval'] + 1}); ended there"
    if end.get("aborted"):
        return "ended early (aborted)"
    # The driver ends a phase early only when quiet (metrics/steady.py); a stationary one runs its most.
    return (f"ran its most, {most:,.0f} s, without becoming quiet" if most
            else "ran to its end without becoming quiet")


def steady_table(run: RunData) -> pl.DataFrame:
    """Per system with query intervals: the rates, and which intervals passed the rule."""
    rows = []
    for system in run.systems:
        state = steadiness(run, system["label"])
        if not state.intervals:
            continue
        rows.append({"setup": state.label, "intervals": len(state.intervals),
                     "ops/s per interval": " → ".join(f"{r:,.0f}" for r in state.rates),
                     "steady": "yes" if state.steady else "no", "judged on": state.describe(),
                     "phase ended": state.ended or "at its fixed length"})
    return pl.DataFrame(rows, schema={"setup": pl.Utf8, "intervals": pl.Int64, "ops/s per interval": pl.Utf8,
                                      "steady": pl.Utf8, "judged on": pl.Utf8, "phase ended": pl.Utf8})


def steady_finding(run: RunData) -> str:
    """The rule and, per system, which intervals passed: for the report's findings."""
    # An unfinished system's few intervals are partial; findings name them in unfinished.paragraphs.
    states = [steadiness(run, s["label"]) for s in run.complete_systems]
    states = [s for s in states if s.intervals]
    if not states:
        return ""
    parts = [f"{s.label} ({', '.join(f'{r:,.0f}' for r in s.rates)} ops/s): {s.describe()}"
             + (f", {s.ended}" if s.ended else "") for s in states]
    return f"**Steady state.** The rule: {RULE}. " + "; ".join(parts) + "."
