"""The steady-state rule, in one place: the driver applies it while a measured phase runs (to end
a phase that may run until steady), and the report applies it to say which intervals a throughput
verdict may use.

The posts measured whole hours after an hour of warm-up; a run of a few minutes, or one after a
cold start, may still be warming its caches, and its last interval alone says nothing about the
rate it would settle at. A system is steady when its last STEADY_MIN_INTERVALS or more intervals
all lie within STEADY_SPREAD of their mean rate; those intervals (the longest such run at the end
of the phase) are the ones its claims are judged on.
"""
from __future__ import annotations

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
