"""The steady-state rule: which measured intervals of a query phase a throughput verdict may use.

The posts measured whole hours after an hour of warm-up; a run of a few minutes after a cold
start may still be warming its caches when it ends, and its last interval alone says nothing
about the rate it would settle at. A system is steady when its last STEADY_MIN_INTERVALS or
more intervals all lie within STEADY_SPREAD of their mean rate; those intervals (the longest
such run at the end of the phase) are the ones its claims are judged on. A system that never
gets there has no verdict for the claims that read its query phase: they say "not steady".
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .rundata import RunData

STEADY_MIN_INTERVALS = 3
STEADY_SPREAD = 0.10  # each interval's rate within +-10% of the steady intervals' mean

RULE = (f"a system is steady when its last {STEADY_MIN_INTERVALS} or more query intervals all lie within "
        f"±{STEADY_SPREAD:.0%} of their mean rate; its query-phase claims are judged on those intervals only")


def steady_tail(rates: list[float]) -> int:
    """How many intervals at the end of `rates` pass the rule: the longest such tail, 0 if none."""
    for n in range(len(rates), STEADY_MIN_INTERVALS - 1, -1):
        tail = rates[-n:]
        mean = sum(tail) / n
        if mean > 0 and all(abs(rate - mean) <= STEADY_SPREAD * mean for rate in tail):
            return n
    return 0


@dataclass
class Steadiness:
    """One system's query intervals and which of them passed the rule."""
    label: str
    intervals: list[int]
    rates: list[float]
    passed: list[int]  # interval numbers (0-based) that passed; empty when not steady

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
        if self.steady:
            return f"intervals {_span(self.passed)} of {len(self.intervals)} passed"
        if len(self.intervals) < STEADY_MIN_INTERVALS:
            return f"not steady: {len(self.intervals)} interval(s), fewer than the rule's {STEADY_MIN_INTERVALS}"
        return (f"not steady: its last {STEADY_MIN_INTERVALS} intervals spread ±{self.spread_of_tail():.0%} "
                f"around their mean (the rule allows ±{STEADY_SPREAD:.0%})")


def _span(intervals: list[int]) -> str:
    first, last = intervals[0] + 1, intervals[-1] + 1
    return f"{first}" if first == last else f"{first}-{last}"


def steadiness(run: RunData, label: str, phase: str = "run") -> Steadiness:
    """The rule applied to one system's intervals of a phase."""
    rows = pl.DataFrame() if run.intervals.is_empty() else run.intervals.filter(
        (pl.col("system") == label) & (pl.col("phase") == phase)).sort("interval")
    intervals = rows["interval"].to_list() if rows.height else []
    rates = [float(r) for r in rows["ops_per_s"].to_list()] if rows.height else []
    tail = steady_tail(rates)
    return Steadiness(label, intervals, rates, intervals[len(intervals) - tail:] if tail else [])


def steady_table(run: RunData) -> pl.DataFrame:
    """Per system with query intervals: the rates, and which intervals passed the rule."""
    rows = []
    for system in run.systems:
        state = steadiness(run, system["label"])
        if not state.intervals:
            continue
        rows.append({"setup": state.label, "intervals": len(state.intervals),
                     "ops/s per interval": " → ".join(f"{r:,.0f}" for r in state.rates),
                     "steady": "yes" if state.steady else "no", "judged on": state.describe()})
    return pl.DataFrame(rows, schema={"setup": pl.Utf8, "intervals": pl.Int64, "ops/s per interval": pl.Utf8,
                                      "steady": pl.Utf8, "judged on": pl.Utf8})


def steady_finding(run: RunData) -> str:
    """The rule and, per system, which intervals passed: for the report's findings."""
    # An unfinished system's few intervals are partial; findings name them in unfinished.paragraphs.
    states = [steadiness(run, s["label"]) for s in run.complete_systems]
    states = [s for s in states if s.intervals]
    if not states:
        return ""
    parts = [f"{s.label} ({', '.join(f'{r:,.0f}' for r in s.rates)} ops/s): {s.describe()}" for s in states]
    return f"**Steady state.** The rule: {RULE}. " + "; ".join(parts) + "."
