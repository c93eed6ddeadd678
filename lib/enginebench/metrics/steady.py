"""The steady-state rule, in one place: the driver applies it while a measured phase runs (to end
a phase that may run until steady), and the report applies it to say which intervals a throughput
verdict may use.

The posts measured whole hours after an hour of warm-up; a run of a few minutes, or one after a
cold start, may still be warming its caches, and its last interval alone says nothing about the
rate it would settle at. A system is steady in one of two ways:

- quiet: its last STEADY_MIN_INTERVALS or more intervals all lie within STEADY_SPREAD of their
  mean rate; those intervals (the longest such run at the end of the phase) are the ones its
  claims are judged on;
- stationary: it swings (an LSM between compactions, a b-tree around its checkpoints) but around
  a flat mean. Steady is not quiet: a swing is noise to measure, not a reason to give no verdict.
  Its window is the last two thirds of the phase (the first third is its warm-up allowance), at
  least STATIONARY_MIN_INTERVALS intervals (with 20-30 s intervals, minutes: several of an
  engine's compaction or checkpoint cycles), and it passes when the Mann-Kendall test (Kendall's
  tau of rate against time, two-sided, exact for these sizes) finds no monotonic trend at
  TREND_ALPHA. The window is no shorter because the test's power is in its length: a rate
  climbing 40% across 8 intervals that swing +-15% reads p = 0.11, across 10 p = 0.02. The swing then widens the claim's noise
  (report/noise.py) instead of withholding its verdict.

A phase still trending over its window passes neither and stays "not steady". A phase measured
until steady (until_steady.py) ends early only when quiet: a swinging one runs its most, so the
trend test sees every interval it can.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

STEADY_MIN_INTERVALS = 3
STEADY_SPREAD = 0.10  # each interval's rate within +-10% of the steady intervals' mean
STATIONARY_MIN_INTERVALS = 8
TREND_ALPHA = 0.05

RULE = (f"a system is steady when its last {STEADY_MIN_INTERVALS} or more query intervals all lie within "
        f"±{STEADY_SPREAD:.0%} of their mean rate (quiet), or when the last two thirds of its query intervals, "
        f"at least {STATIONARY_MIN_INTERVALS}, shows no trend by the Mann-Kendall test (two-sided, "
        f"p ≥ {TREND_ALPHA:g}; stationary: it swings around a flat mean, and the swing is carried into the "
        "claim's noise); its query-phase claims are judged on those intervals only")

QUIET, STATIONARY = "quiet", "stationary"


@dataclass(frozen=True)
class SteadyTail:
    """How many intervals at the end of a phase passed, and by which way of being steady."""
    intervals: int  # 0 when neither
    kind: str = ""  # QUIET or STATIONARY
    trend_p: float | None = None  # the Mann-Kendall p-value over the stationary window, when tested


def steady_tail(rates: list[float]) -> int:
    """How many intervals at the end of `rates` are quiet: the longest tail within STEADY_SPREAD
    of its mean, 0 if none."""
    for n in range(len(rates), STEADY_MIN_INTERVALS - 1, -1):
        tail = rates[-n:]
        mean = sum(tail) / n
        if mean > 0 and all(abs(rate - mean) <= STEADY_SPREAD * mean for rate in tail):
            return n
    return 0


def stationary_window(count: int) -> int:
    """The intervals the trend test reads: the last two thirds of the phase, at least
    STATIONARY_MIN_INTERVALS; 0 when the phase has fewer than that."""
    return 0 if count < STATIONARY_MIN_INTERVALS else max(STATIONARY_MIN_INTERVALS, math.ceil(count * 2 / 3))


def trend_p(rates: list[float]) -> float:
    """The Mann-Kendall test's two-sided p-value for a monotonic trend in `rates`."""
    if len(set(rates)) == 1:
        return 1.0  # a constant series has no trend (tau is undefined)
    # Imported here: scipy.stats takes about two seconds to import, paid by every driver process
    # at its start (the steady-state rule is imported with the supervisor) and wanted only here.
    from scipy.stats import kendalltau
    return float(kendalltau(range(len(rates)), rates).pvalue)


def steady_state(rates: list[float]) -> SteadyTail:
    """The rule: quiet if any tail is, else stationary if the window has no trend, else neither."""
    quiet = steady_tail(rates)
    if quiet:
        return SteadyTail(quiet, QUIET)
    window = stationary_window(len(rates))
    if not window or sum(rates[-window:]) <= 0:
        return SteadyTail(0)
    p = trend_p(rates[-window:])
    return SteadyTail(window, STATIONARY, p) if p >= TREND_ALPHA else SteadyTail(0, "", p)


def swing(values: list[float]) -> float | None:
    """The relative standard error of the mean of `values` (one per interval), with the sample
    size cut for lag-1 autocorrelation (n_eff = n(1-r1)/(1+r1)): a compaction cycle spanning
    several intervals makes neighbours alike, and n alone would understate the noise. None with
    fewer than 3 values or a zero mean."""
    n = len(values)
    if n < 3:
        return None
    mean = sum(values) / n
    if mean <= 0:
        return None
    deviations = [v - mean for v in values]
    variance = sum(d * d for d in deviations) / (n - 1)
    if variance == 0:
        return 0.0
    r1 = sum(a * b for a, b in zip(deviations, deviations[1:])) / sum(d * d for d in deviations)
    r1 = min(max(r1, 0.0), 0.9)  # negative correlation would claim more samples than there are
    effective = max(n * (1 - r1) / (1 + r1), 2.0)
    return math.sqrt(variance / effective) / mean
