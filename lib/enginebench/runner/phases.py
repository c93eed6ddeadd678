"""Running one phase: worker threads, interval closing, and the events that report them.

A phase is a set of worker callables fn(store, recorder, stop). It ends when every worker has
returned (load) or when its duration is over (measured phases). Every `interval_s` the
coordinator closes the interval that just ended, merges the workers' histograms exactly and emits
one `interval` event; the parent process pairs it with its OS samples of the same time span.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from .recorder import IntervalShare, PhaseClock, Recorder

GRACE_S = 0.02  # let ops finishing on the boundary land before the interval is closed


def encode_share(share: IntervalShare) -> dict:
    ops = {}
    for name, stats in sorted(share.ops.items()):
        ops[name] = {"count": stats.histogram.get_total_count(), "items": stats.items,
                     "errors": stats.errors, "cpu_ns": stats.cpu_ns, "slow": stats.slow,
                     "hist": stats.histogram.encode().decode() if stats.histogram.get_total_count() else None,
                     "intended_hist": (stats.intended.encode().decode()
                                       if stats.intended is not None and stats.intended.get_total_count() else None)}
    return {"ops": ops, "thread_cpu_ns": share.thread_cpu_ns}


def run_phase(name: str, workers: list[Callable], store, emit: Callable[[dict], None], *,
              interval_s: float, duration_s: float | None, abort: threading.Event,
              max_errors: int = 100, engine_stats: Callable[[], dict] | None = None,
              accounting: dict | None = None, slow_us: dict[str, int] | None = None) -> dict:
    """Run the workers; returns {'seconds', 'ops', 'aborted', 'error'}.

    `accounting` says how the interval tables count throughput (see results.tables);
    `slow_us` maps an op to the latency at or above which a call counts as slow."""
    phase = Phase(name, workers, emit, interval_s, duration_s, abort, max_errors, engine_stats, accounting, slow_us)
    return phase.run(store)


class Phase:
    def __init__(self, name, workers, emit, interval_s, duration_s, abort, max_errors, engine_stats, accounting,
                 slow_us):
        self.name, self.workers, self.emit, self.abort = name, workers, emit, abort
        self.interval_s, self.duration_s = interval_s, duration_s
        self.engine_stats, self.accounting = engine_stats, accounting
        self.start = time.time()
        self.clock = PhaseClock(self.start, interval_s)
        self.last_index = None if duration_s is None else max(0, int(round(duration_s / interval_s)) - 1)
        self.end_time = None if duration_s is None else self.start + duration_s
        self.recorders = [Recorder(self.clock, max_errors, slow_us) for _ in workers]
        self.stop = threading.Event()
        self.failures: list[str] = []
        self.total_ops = 0
        self.next_k = 0  # the first interval not yet closed

    def run(self, store) -> dict:
        threads = [threading.Thread(target=self._body, args=(fn, rec, store), name=f"{self.name}-{i}", daemon=True)
                   for i, (fn, rec) in enumerate(zip(self.workers, self.recorders))]
        self.emit({"event": "phase_start", "phase": self.name, "t": self.start, "workers": len(self.workers),
                   "interval_s": self.interval_s, "duration_s": self.duration_s})
        for thread in threads:
            thread.start()
        self._close_intervals_while(threads)
        for thread in threads:
            thread.join()
        finished = time.time()
        timed_out_normally = self.end_time is not None and not self.abort.is_set() and not self.failures
        final_k = self.last_index if timed_out_normally else max(self.clock.index(finished), self.next_k)
        # Ops completing after a timed phase's end are counted in its last interval.
        self._close(self._gather(10**9, clamp_to=final_k), final_k,
                    final_end=self.end_time if timed_out_normally else finished)
        result = {"seconds": finished - self.start, "ops": self.total_ops,
                  "aborted": self.abort.is_set() or bool(self.failures),
                  "error": ("interrupted" if self.abort.is_set() else None) or (self.failures[0] if self.failures else None)}
        self.emit({"event": "phase_end", "phase": self.name, "t": finished, **result})
        return result

    def _body(self, fn, rec, store) -> None:
        rec.start_thread()
        try:
            fn(store, rec, self.stop)
        except BaseException as exc:  # one worker failing stops the phase; the error is reported
            self.failures.append(f"{type(exc).__name__}: {exc}")
            self.stop.set()
        finally:
            rec.finish_thread()

    def _close_intervals_while(self, threads: list[threading.Thread]) -> None:
        """Closes each interval as it ends, until the phase is over or its workers are done."""
        while True:
            now = time.time()
            if (self.end_time is not None and now >= self.end_time) or self.abort.is_set():
                self.stop.set()
            if self.stop.is_set() or not any(t.is_alive() for t in threads):
                return
            boundary = self.clock.bounds(self.next_k)[1]
            if now >= boundary + GRACE_S and self._more_to_close():
                self._close(self._gather(self.next_k), self.next_k)
                continue
            wake = boundary + GRACE_S if self._more_to_close() else self.end_time
            time.sleep(max(0.001, min(0.1, wake - now)))

    def _more_to_close(self) -> bool:
        return self.last_index is None or self.next_k < self.last_index

    def _gather(self, upto: int, clamp_to: int | None = None) -> dict[int, IntervalShare]:
        merged: dict[int, IntervalShare] = {}
        for rec in self.recorders:
            for k, share in rec.take(upto).items():
                key = k if clamp_to is None else min(k, clamp_to)
                merged.setdefault(key, IntervalShare()).merge(share)
        return merged

    def _close(self, merged: dict[int, IntervalShare], upto: int, final_end: float | None = None) -> None:
        stats = self.engine_stats() if self.engine_stats else {}
        # Worker-thread CPU read now belongs to the last interval being closed.
        merged.setdefault(upto, IntervalShare()).thread_cpu_ns += sum(r.thread_cpu_since_last() for r in self.recorders)
        for k in range(self.next_k, upto + 1):
            payload = encode_share(merged.get(k, IntervalShare()))
            t0, t1 = self.clock.bounds(k)
            if final_end is not None and k == upto:
                t1 = final_end
            self.total_ops += sum(op["count"] for op in payload["ops"].values())
            self.emit({"event": "interval", "phase": self.name, "interval": k, "t_start": t0, "t_end": t1,
                       **payload, "engine": stats, "accounting": self.accounting})
        self.next_k = upto + 1
