"""Ending a measured phase once it is steady: a phase whose plan step says `until_steady` runs
interval by interval until the steady-state rule (metrics/steady.py) holds on the intervals so far
and at least its `min_s` have passed, or until its `duration_s`, the most it may take. The driver
applies the rule, as the report will, to the rates the report will compute (results/tables.py),
and tells the runner on its stdin to end the phase with the interval it judged (the runner's
control.rs); the phase's end event then names that interval."""
from __future__ import annotations

from .metrics.steady import steady_tail
from .results.tables import interval_rate


class SteadyWatch:
    """One runner's phases that may end once steady, and their rates so far."""

    def __init__(self, plan: list[dict]):
        self.min_s = {step["name"]: float(step["until_steady"].get("min_s") or 0.0)
                      for step in plan if step.get("step") == "measure" and step.get("until_steady")}
        self.rates: dict[str, list[float]] = {}
        self.started: dict[str, float] = {}
        self.asked: set[str] = set()

    def on_event(self, event: dict) -> str | None:
        """The phase to end now, if this event made it steady."""
        phase = event.get("phase")
        if phase not in self.min_s or phase in self.asked:
            return None
        if event.get("event") == "phase_start":
            self.started[phase], self.rates[phase] = event["t"], []
            return None
        if event.get("event") != "interval" or phase not in self.started:
            return None
        self.rates[phase].append(interval_rate(event))
        if steady_tail(self.rates[phase]) and event["t_end"] - self.started[phase] >= self.min_s[phase]:
            self.asked.add(phase)
            return phase
        return None
