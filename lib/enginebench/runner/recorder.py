"""Per-thread operation recording: HdrHistograms per interval and op type, merged exactly.

Each worker thread owns one Recorder, so recording takes no shared lock. An operation belongs to
the interval in which it completes. The phase's coordinator closes an interval once it has ended
and takes every recorder's share of it; an op that completes in an interval already closed is
counted in the next one, so none is lost.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

LOWEST_US, HIGHEST_US, DIGITS = 1, 3600 * 1_000_000, 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


@dataclass
class OpStats:
    histogram: HdrHistogram = field(default_factory=new_histogram)
    items: int = 0       # documents written or returned, as the op reports them
    errors: int = 0
    cpu_ns: int = 0      # this thread's CPU time inside the op (store + engine work)
    slow: int = 0        # calls at or above the op's slow threshold
    # Open loop only: latency from the op's intended start (its slot in the arrival schedule),
    # which includes the time it waited behind earlier ops; `histogram` is service time.
    intended: HdrHistogram | None = None

    def merge(self, other: "OpStats") -> None:
        self.histogram.add(other.histogram)
        if other.intended is not None:
            if self.intended is None:
                self.intended = new_histogram()
            self.intended.add(other.intended)
        self.items += other.items
        self.errors += other.errors
        self.cpu_ns += other.cpu_ns
        self.slow += other.slow


@dataclass
class IntervalShare:
    ops: dict[str, OpStats] = field(default_factory=dict)
    thread_cpu_ns: int = 0  # all CPU of the worker thread in the interval (client + op)

    def merge(self, other: "IntervalShare") -> None:
        for name, stats in other.ops.items():
            mine = self.ops.get(name)
            if mine is None:
                self.ops[name] = stats
            else:
                mine.merge(stats)
        self.thread_cpu_ns += other.thread_cpu_ns


class PhaseClock:
    """Interval boundaries of one phase: interval k covers [start + k*length, start + (k+1)*length)."""

    def __init__(self, start: float, interval_s: float):
        self.start, self.length = start, interval_s

    def index(self, t: float) -> int:
        return max(0, int((t - self.start) // self.length))

    def bounds(self, k: int) -> tuple[float, float]:
        return self.start + k * self.length, self.start + (k + 1) * self.length


class Recorder:
    def __init__(self, clock: PhaseClock, max_errors: int = 100, slow_us: dict[str, int] | None = None):
        self.clock = clock
        self.lock = threading.Lock()
        self.shares: dict[int, IntervalShare] = {}
        self.closed_upto = -1
        self._cpu_clock = None       # the worker thread's CPU clock, read by the coordinator
        self._cpu_final = None       # the thread's CPU time when it finished
        self._cpu_mark = 0
        self.max_errors = max_errors
        self.total_errors = 0
        self.slow_us = slow_us or {}
        self.last_error: str | None = None

    def _share(self, k: int) -> IntervalShare:
        share = self.shares.get(k)
        if share is None:
            share = self.shares[k] = IntervalShare()
        return share

    def call(self, op: str, fn, *args, items: int | None = None, intended_ns: int | None = None):
        """Run fn(*args) timed; record latency, CPU and items (fn's int result when items is None).
        `intended_ns` (perf_counter_ns) is the scheduled start of an open-loop op."""
        cpu0 = time.thread_time_ns()
        t0 = time.perf_counter_ns()
        error = None
        try:
            result = fn(*args)
        except Exception as exc:  # counted; the caller decides whether to go on
            result, error = None, exc
        t1 = time.perf_counter_ns()
        cpu1 = time.thread_time_ns()
        if items is None:
            items = result if isinstance(result, int) else (len(result) if isinstance(result, list) else 0)
        intended_us = None if intended_ns is None else max(0, t1 - intended_ns) // 1000
        self._record(op, (t1 - t0) // 1000, cpu1 - cpu0, items, error is not None, intended_us)
        if error is not None:
            self.total_errors += 1
            self.last_error = f"{op}: {type(error).__name__}: {error}"
            if self.total_errors > self.max_errors:
                raise RuntimeError(f"more than {self.max_errors} failed operations; last: {self.last_error}") from error
        return result

    def _record(self, op: str, latency_us: int, cpu_ns: int, items: int, failed: bool,
                intended_us: int | None = None) -> None:
        k = self.clock.index(time.time())
        with self.lock:
            if k <= self.closed_upto:
                k = self.closed_upto + 1
            share = self._share(k)
            stats = share.ops.get(op)
            if stats is None:
                stats = share.ops[op] = OpStats()
            stats.histogram.record_value(min(max(latency_us, LOWEST_US), HIGHEST_US))
            stats.items += items
            stats.errors += failed
            stats.cpu_ns += cpu_ns
            threshold = self.slow_us.get(op)
            if threshold is not None and latency_us >= threshold:
                stats.slow += 1
            if intended_us is not None:
                if stats.intended is None:
                    stats.intended = new_histogram()
                stats.intended.record_value(min(max(intended_us, LOWEST_US), HIGHEST_US))

    def start_thread(self) -> None:
        """Called by the worker thread when it starts: remember its CPU clock."""
        self._cpu_clock = time.pthread_getcpuclockid(threading.get_ident())
        self._cpu_mark = time.thread_time_ns()

    def finish_thread(self) -> None:
        """Called by the worker thread when it stops: its clock ends with it."""
        self._cpu_final = time.thread_time_ns()

    def thread_cpu_since_last(self) -> int:
        """The worker thread's CPU since the previous call (read by the coordinator at interval
        boundaries, so a long op spanning a boundary splits its CPU correctly)."""
        now = self._cpu_final
        if now is None and self._cpu_clock is not None:
            try:
                now = time.clock_gettime_ns(self._cpu_clock)
            except OSError:  # the thread ended between the two checks
                now = self._cpu_final
        if now is None:
            return 0
        spent, self._cpu_mark = now - self._cpu_mark, now
        return max(0, spent)

    def take(self, upto: int) -> dict[int, IntervalShare]:
        """Remove and return the shares of intervals <= upto (called by the coordinator)."""
        with self.lock:
            taken = {k: s for k, s in self.shares.items() if k <= upto}
            for k in taken:
                del self.shares[k]
            self.closed_upto = max(self.closed_upto, upto)
            return taken


def encode_share(share: IntervalShare) -> dict:
    """An interval's share as the `interval` event carries it (histograms in the standard
    encoding, which is lossless: decoding and adding them merges exactly)."""
    ops = {}
    for name, stats in sorted(share.ops.items()):
        ops[name] = {"count": stats.histogram.get_total_count(), "items": stats.items,
                     "errors": stats.errors, "cpu_ns": stats.cpu_ns, "slow": stats.slow,
                     "hist": stats.histogram.encode().decode() if stats.histogram.get_total_count() else None,
                     "intended_hist": (stats.intended.encode().decode()
                                       if stats.intended is not None and stats.intended.get_total_count() else None)}
    return {"ops": ops, "thread_cpu_ns": share.thread_cpu_ns}


def _decoded(encoded: str | None) -> HdrHistogram | None:
    if encoded is None:
        return None
    histogram = new_histogram()
    histogram.decode_and_add(encoded)
    return histogram


def decode_share(payload: dict) -> IntervalShare:
    """The share encode_share wrote (a client process's, sent to the runner to merge)."""
    share = IntervalShare(thread_cpu_ns=payload["thread_cpu_ns"])
    for name, op in payload["ops"].items():
        share.ops[name] = OpStats(histogram=_decoded(op["hist"]) or new_histogram(), items=op["items"],
                                  errors=op["errors"], cpu_ns=op["cpu_ns"], slow=op["slow"],
                                  intended=_decoded(op["intended_hist"]))
    return share
