"""What a running experiment shows on the terminal: a bar per phase, or one line per interval.

Every phase gets its own bar: the load counts documents, each measured phase (the run, a warm-up,
a client count, a rate-sweep point) counts its seconds. A bar never passes its total: interval
times are measured, so they add up to a little more than the phase's duration, and tqdm shows a
count above its total as 4.03/4 with a negative time left and a warning.
"""
from __future__ import annotations

import sys


# A timed phase counts seconds: tqdm's rate ("1.02s/s") would say nothing.
_SECONDS_BAR = {True: "{desc}: {percentage:3.0f}%|{bar}| {n:g}/{total:g} s [{elapsed}<{remaining}{postfix}]",
                False: "{desc}: {n:g} s [{elapsed}{postfix}]"}


class Progress:
    """tqdm bars on a terminal; one plain line per interval when headless or in a notebook
    kernel (papermill relays those lines to the terminal running `make experiment`)."""

    def __init__(self, label: str):
        self.label = label
        self.bar = None
        self.plain = not sys.stderr.isatty() or "ipykernel" in sys.modules

    def phase(self, name: str, total: float | None, unit: str) -> None:
        self.close()
        if self.plain:
            planned = f": {plain(total)} {unit}" if total else ""
            print(f"[{self.label}] {name}{planned}", file=sys.stderr, flush=True)
        else:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=f"{self.label} {name}", unit=unit, leave=True,
                            bar_format=_SECONDS_BAR[bool(total)] if unit == "s" else None)

    def advance(self, amount: float, line: str) -> None:
        if self.bar is None:
            print(f"[{self.label}] {line}", file=sys.stderr, flush=True)
            return
        self.bar.set_postfix_str(line, refresh=False)
        self.bar.update(self._within_total(amount))
        self.bar.refresh()  # also when nothing is left to add: the line is new

    def note(self, line: str) -> None:
        """A message between phases (the load's verification, the consistency check)."""
        if self.bar is None:
            print(f"[{self.label}] {line}", file=sys.stderr, flush=True)
        else:
            self.bar.set_postfix_str(line)

    def finish(self) -> None:
        """The phase ended: its bar shows it whole (the last interval may end a moment early)."""
        if self.bar is not None and self.bar.total:
            self.bar.update(self._within_total(self.bar.total))

    def _within_total(self, amount: float) -> float:
        if not self.bar.total:
            return amount
        return max(0, min(amount, self.bar.total - self.bar.n))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def plain(value) -> str:
    """A value as a person reads it: counts with thousands separators, seconds rounded, mappings
    as `key value` pairs; never a Python repr."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, dict):
        return ", ".join(f"{key} {plain(inner)}" for key, inner in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(item) for item in value) or "none"
    return str(value)


def verified_line(event: dict) -> str:
    if event.get("ok"):
        return f"load verified: {plain(event['found'])}"
    expected, found = event.get("expected") or {}, event.get("found") or {}
    short = {k: f"{plain(found.get(k))} of {plain(v)}" for k, v in expected.items() if found.get(k) != v}
    return f"load check: found {plain(short)}" + (f" (stopped by {event['stopped_by']})" if event.get("stopped_by") else "")


MANY = 6  # above this many collections a count map is summarised on the terminal (the report has them all)


def _counts(value):
    """A per-collection count map, summarised when long: sysbench's 80 collections made one line
    of 4,000 characters."""
    if isinstance(value, dict) and len(value) > MANY and all(isinstance(v, int) for v in value.values()):
        counts = sorted(set(value.values()))
        each = f"each {plain(counts[0])}" if len(counts) == 1 else f"{plain(counts[0])} to {plain(counts[-1])}"
        return f"{len(value)} collections, {each}"
    return value


def consistency_line(event: dict) -> str:
    shown = {k: _counts(v) for k, v in event.items() if k not in ("event", "examples", "seconds", "atomic")}
    return f"consistency check: {plain(shown)} ({event.get('seconds', 0):.2f} s)"


def interval_line(event: dict) -> tuple[float, str]:
    """What an interval adds to its bar (documents of a load, else seconds) and its rate line."""
    seconds = max(event["t_end"] - event["t_start"], 1e-9)
    # Count what the workload's tables count (e.g. iibench: documents of INSERT calls only).
    accounting = event.get("accounting") or {}
    counted = {name: o for name, o in event["ops"].items()
               if not accounting.get("rate_ops") or name in accounting["rate_ops"]}
    if accounting.get("rate") == "items":
        amount, unit = sum(o["items"] for o in counted.values()), "docs"
    else:
        amount, unit = sum(o["count"] for o in counted.values()), "ops"
    line = f"{event['phase']} interval {event['interval'] + 1}: {amount / seconds:,.0f} {unit}/s"
    if event["phase"] == "load":
        return sum(o["items"] for o in counted.values()), line
    return seconds, line


def show(progress: Progress, event: dict, expected: dict) -> None:
    kind = event["event"]
    if kind == "phase_start":
        if event["phase"] == "load":
            progress.phase("load", sum(expected.values()) or None, "docs")
        else:  # the run, a warm-up, a client count, a rate-sweep point: seconds, when timed
            progress.phase(event["phase"], event.get("duration_s"), "s")
    elif kind == "phase_end" and not event.get("aborted"):
        progress.finish()
        if event.get("steady_at_interval") is not None:
            progress.note(f"{event['phase']}: steady after {event['seconds']:,.0f} s "
                          f"(interval {event['steady_at_interval'] + 1}); ended there")
    elif kind == "interval":
        progress.advance(*interval_line(event))
    elif kind == "load_verified":
        progress.note(verified_line(event))
    elif kind == "consistency":
        progress.note(consistency_line(event))
    elif kind == "failed":
        progress.note(f"failed: {event.get('error')}")
