"""When a runner counts as hung: the rule the driver applies to every wait on a runner
(docs/faults.md: "When a run goes wrong"; the bounds are the params' `supervision:` keys).

Inside a phase the runner reports an interval every `interval_s`. It is hung when, for
max(hung_intervals x interval_s, hung_floor_s) seconds, no event arrived, or the intervals that
arrived completed no operation: a livelock reports empty intervals for ever (a WiredTiger cache
too small for its LSM chunks did, for minutes).

Between phases (opening the engine, verifying the load, a quiesce, a cold start, the consistency
check, closing) the runner reports only when a step ends, and a step's length grows with the
data. There it is hung when no event arrived for hung_floor_s (plus the plan's longest quiesce
pause, which sleeps by design) while it used no CPU and moved no data, or for step_s whatever it
did.
"""
from __future__ import annotations

import time
from collections import deque

# "Used no CPU and moved no data": below 2% of one core (engines' housekeeping threads wake now
# and then) and below 1 MiB read or written over the whole window.
IDLE_CPU_SHARE = 0.02
IDLE_BYTES = 1 << 20


def completed(event: dict) -> int:
    """Operations an interval event counts as done (timed calls that did not fail)."""
    return sum(max(0, (o.get("count") or 0) - (o.get("errors") or 0)) for o in (event.get("ops") or {}).values())


class Watchdog:
    """Fed every event and, regularly, the runner's cumulative CPU seconds and bytes moved;
    `check` returns why the runner is hung, or None."""

    def __init__(self, rules: dict, pause_s: float = 0.0, clock=time.monotonic):
        self.intervals = float(rules["hung_intervals"])
        self.floor_s = float(rules["hung_floor_s"])
        self.step_s = float(rules["step_s"])
        self.pause_s = pause_s
        self.clock = clock
        now = clock()
        self.last_event = now
        self.last_kind = "the runner's start"
        self.phase: str | None = None
        self.interval_s = 0.0
        self.last_done = now
        self.activity: deque[tuple[float, float, int]] = deque()

    def event(self, event: dict) -> None:
        now = self.clock()
        self.last_event = now
        kind = event.get("event")
        self.last_kind = f"{kind} of {event['phase']}" if event.get("phase") else str(kind)
        if kind == "phase_start":
            self.phase, self.interval_s, self.last_done = event.get("phase"), float(event.get("interval_s") or 0), now
        elif kind == "phase_end":
            self.phase = None
        elif kind == "interval" and completed(event) > 0:
            self.last_done = now

    def bound_in_phase(self) -> float:
        return max(self.intervals * self.interval_s, self.floor_s)

    def check(self, cpu_s: float | None = None, io_bytes: int | None = None) -> str | None:
        now = self.clock()
        if cpu_s is not None and io_bytes is not None:
            self.activity.append((now, cpu_s, io_bytes))
        silent = now - self.last_event
        if self.phase is not None:
            bound = self.bound_in_phase()
            why = (f"bound: max(supervision.hung_intervals {self.intervals:g} x the {self.interval_s:g}-s interval, "
                   f"supervision.hung_floor_s {self.floor_s:g}) = {bound:g} s")
            if silent >= bound:
                return f"hung: no event for {silent:.0f} s in phase {self.phase} (last: {self.last_kind}); {why}"
            if now - self.last_done >= bound:
                return (f"hung: no operation completed for {now - self.last_done:.0f} s in phase {self.phase} "
                        f"although it reported intervals (a livelock); {why}")
            return None
        if silent >= self.step_s:
            return (f"hung: no event for {silent:.0f} s between phases (last: {self.last_kind}); bound: "
                    f"supervision.step_s {self.step_s:g} s")
        idle_bound = self.floor_s + self.pause_s
        if silent >= idle_bound and self._idle_for(idle_bound, now):
            return (f"hung: no event for {silent:.0f} s between phases (last: {self.last_kind}), and no CPU or IO "
                    f"used for {idle_bound:g} s; bound: supervision.hung_floor_s {self.floor_s:g} s"
                    + (f" plus the plan's {self.pause_s:g}-s quiesce" if self.pause_s else ""))
        return None

    def _idle_for(self, window: float, now: float) -> bool:
        """Whether the runner used under IDLE_CPU_SHARE of a core and moved under IDLE_BYTES over
        the last `window` seconds (False until the activity readings cover that long)."""
        while len(self.activity) > 1 and self.activity[1][0] <= now - window:
            self.activity.popleft()
        if not self.activity or self.activity[0][0] > now - window:
            return False
        t0, cpu0, io0 = self.activity[0]
        _, cpu1, io1 = self.activity[-1]
        return cpu1 - cpu0 < IDLE_CPU_SHARE * (now - t0) and io1 - io0 < IDLE_BYTES
