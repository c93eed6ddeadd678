"""Replaying ops: the schedule, the workers, and what they record.

`real`: op k is due at start + (ts_k - ts_0) / speedup, Flashback's -style=real. N workers share
one ordered stream: a worker takes the next op, waits until it is due and runs it. When every
worker is busy the next op starts late; how late (the lag behind the schedule) is recorded for
every op, and each op's latency is recorded both from its actual start (service time) and from
its scheduled start (the recorder's intended-start histogram), so a slow system cannot hide
behind the ops it delayed. `stress`: no schedule, every worker takes the next op as soon as it is
free.

`select` keeps only the op types named (Flashback's --op_filter said it did this but excluded
them instead). Ops that cannot run on the target are counted per type with the reason.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from hdrh.histogram import HdrHistogram

from .execute_store import NotReplayable, prepare as prepare_store

STYLES = ("real", "stress")
# Per-op rows (latency against documents scanned) are kept for these op types.
SCAN_OPS = ("query", "count")
LEAD_NS = 20_000_000  # the schedule starts 20 ms after the workers, so the first op is not late by construction


@dataclass
class ReplayStats:
    read: dict[str, int] = field(default_factory=dict)      # ops taken from the stream, per label
    run: dict[str, int] = field(default_factory=dict)       # ops executed, per label
    skipped: dict[str, dict[str, int]] = field(default_factory=dict)  # label -> reason -> count
    lag: HdrHistogram = field(default_factory=lambda: HdrHistogram(1, 3600 * 1_000_000, 3))
    rows: list[tuple] = field(default_factory=list)         # (label, docs, latency_us, due_s)

    def merge(self, other: "ReplayStats") -> None:
        for mine, theirs in ((self.read, other.read), (self.run, other.run)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        for label, reasons in other.skipped.items():
            for reason, n in reasons.items():
                self.skipped.setdefault(label, {})[reason] = self.skipped.setdefault(label, {}).get(reason, 0) + n
        self.lag.add(other.lag)
        self.rows.extend(other.rows)


class Replayer:
    def __init__(self, ops: Iterable[dict], *, style: str = "real", speedup: float = 1.0, workers: int = 10,
                 select: tuple[str, ...] | None = None, label: Callable[[dict], str] = lambda r: r["op"],
                 prepare: Callable[[dict], Callable] = prepare_store, clock=time.perf_counter_ns):
        if style not in STYLES:
            raise ValueError(f"unknown replay style {style!r}; allowed: {', '.join(STYLES)}")
        if speedup <= 0:
            raise ValueError(f"speedup must be positive (got {speedup})")
        self.style, self.speedup, self.n_workers = style, speedup, workers
        self.select = tuple(select) if select else None
        self.label, self.prepare, self.clock = label, prepare, clock
        self._ops = iter(ops)
        self._lock = threading.Lock()
        self._start_ns: int | None = None
        self._first_ts: float | None = None
        self.stats = [ReplayStats() for _ in range(workers)]

    def _take(self):
        """The next selected op and its due time (perf_counter ns; None in stress style)."""
        with self._lock:
            for record in self._ops:
                if self._first_ts is None:
                    # The schedule is anchored on the first op of the stream, selected or not, so a
                    # filtered replay keeps the selected ops at their original offsets.
                    self._first_ts = record["ts"]
                    self._start_ns = self.clock() + LEAD_NS
                if self.select is None or record["op"] in self.select:
                    if self.style == "stress":
                        return record, None
                    return record, self._start_ns + int((record["ts"] - self._first_ts) / self.speedup * 1e9)
            return None, None

    def worker(self, index: int):
        stats = self.stats[index]

        def work(store, rec, stop: threading.Event):
            while not stop.is_set():
                record, due = self._take()
                if record is None:
                    return
                label = self.label(record)
                stats.read[label] = stats.read.get(label, 0) + 1
                try:
                    call = self.prepare(record)
                except NotReplayable as exc:
                    reasons = stats.skipped.setdefault(label, {})
                    reasons[str(exc)] = reasons.get(str(exc), 0) + 1
                    continue
                if due is not None:
                    wait = due - self.clock()
                    if wait > 0 and stop.wait(wait / 1e9):
                        return
                    stats.lag.record_value(max(1, (self.clock() - due) // 1000))
                t0 = time.perf_counter_ns()
                result = rec.call(label, call, store, intended_ns=due)
                latency_us = (time.perf_counter_ns() - t0) // 1000
                stats.run[label] = stats.run.get(label, 0) + 1
                if record["op"] in SCAN_OPS and isinstance(result, int):
                    offset = (due - self._start_ns) / 1e9 if due is not None else None
                    stats.rows.append((label, result, latency_us, offset))
        return work

    def workers(self) -> list:
        return [self.worker(i) for i in range(self.n_workers)]

    def merged(self) -> ReplayStats:
        out = ReplayStats()
        for s in self.stats:
            out.merge(s)
        return out
