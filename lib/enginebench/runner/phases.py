"""Running one phase: worker groups, interval closing, and the events that report them.

A phase is a set of worker callables fn(store, recorder, stop). It ends when every worker has
returned (load) or when its duration is over (measured phases). The workers run in groups: the
threads of this process (`ThreadGroup`), or, on server targets, the threads of client processes
(runner/clients.py), which report their shares of each interval here. Every `interval_s` the
coordinator closes the interval that just ended, merges every group's histograms exactly and
emits one `interval` event; the parent process pairs it with its OS samples of the same time span.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from .recorder import IntervalShare, PhaseClock, Recorder, encode_share

GRACE_S = 0.02  # let ops finishing on the boundary land before the interval is closed


def process_cpu_ns() -> int:
    """This process's CPU (user + system, every thread) so far."""
    return time.process_time_ns()


def run_phase(name: str, workers: list[Callable], store, emit: Callable[[dict], None], *,
              interval_s: float, duration_s: float | None, abort: threading.Event,
              max_errors: int = 100, engine_stats: Callable[[], dict] | None = None,
              accounting: dict | None = None, slow_us: dict[str, int] | None = None,
              clients=None) -> dict:
    """Run the workers; returns {'seconds', 'ops', 'aborted', 'error'}.

    `accounting` says how the interval tables count throughput (see results.tables);
    `slow_us` maps an op to the latency at or above which a call counts as slow; `clients` (a
    ClientPool with its phase prepared) runs the workers in its processes instead of here."""
    phase = Phase(name, len(workers), emit, interval_s, duration_s, abort, engine_stats, accounting)
    if clients is None:
        groups = [ThreadGroup(workers, store, phase.clock, max_errors, slow_us)]
    else:
        groups = clients.groups(phase.clock, max_errors, slow_us)
    return phase.run(groups)


class ThreadGroup:
    """Workers as threads of this process, one Recorder each (a client process runs one too)."""

    processes = 0  # runs in the runner process

    def __init__(self, workers: list[Callable], store, clock: PhaseClock, max_errors: int,
                 slow_us: dict[str, int] | None, indices: list[int] | None = None):
        """`indices`: the workers' places in the phase's list (a client process runs a share of
        them); a worker thread is named by its place, wherever it runs."""
        self.workers, self.store = workers, store
        indices = list(range(len(workers))) if indices is None else indices
        self.recorders = [Recorder(clock, max_errors, slow_us) for _ in workers]
        self.stop_event = threading.Event()
        self.failures: list[str] = []
        self.threads = [threading.Thread(target=self._body, args=(fn, rec), name=f"worker-{i}", daemon=True)
                        for i, fn, rec in zip(indices, workers, self.recorders)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _body(self, fn, rec) -> None:
        rec.start_thread()
        try:
            fn(self.store, rec, self.stop_event)
        except BaseException as exc:  # one worker failing stops the phase; the error is reported
            self.failures.append(f"{type(exc).__name__}: {exc}")
            self.stop_event.set()
        finally:
            rec.finish_thread()

    def alive(self) -> bool:
        return any(t.is_alive() for t in self.threads)

    def stop(self) -> None:
        self.stop_event.set()

    def join(self) -> list[str]:
        for thread in self.threads:
            thread.join()
        return self.failures

    def take(self, upto: int, clamp_to: int | None = None) -> tuple[dict[int, IntervalShare], int]:
        """The shares of intervals <= upto (later ones counted in `clamp_to`), and the worker
        threads' CPU since the last call."""
        merged: dict[int, IntervalShare] = {}
        for rec in self.recorders:
            for k, share in rec.take(upto).items():
                key = k if clamp_to is None else min(k, clamp_to)
                merged.setdefault(key, IntervalShare()).merge(share)
        return merged, sum(r.thread_cpu_since_last() for r in self.recorders)

    def process_cpu_ns(self) -> int:
        """This group's own processes' CPU (none: it runs in the runner, counted there)."""
        return 0


class Phase:
    def __init__(self, name, n_workers, emit, interval_s, duration_s, abort, engine_stats, accounting):
        self.name, self.n_workers, self.emit, self.abort = name, n_workers, emit, abort
        self.interval_s, self.duration_s = interval_s, duration_s
        self.engine_stats, self.accounting = engine_stats, accounting
        self.start = time.time()
        self.clock = PhaseClock(self.start, interval_s)
        self.last_index = None if duration_s is None else max(0, int(round(duration_s / interval_s)) - 1)
        self.end_time = None if duration_s is None else self.start + duration_s
        self.stopped = False
        self.failures: list[str] = []
        self.total_ops = 0
        self.next_k = 0  # the first interval not yet closed
        self.groups: list = []
        self._cpu_mark = process_cpu_ns()

    def run(self, groups: list) -> dict:
        self.groups = groups
        self.emit({"event": "phase_start", "phase": self.name, "t": self.start, "workers": self.n_workers,
                   "interval_s": self.interval_s, "duration_s": self.duration_s,
                   "client_processes": max(1, sum(group.processes for group in groups))})
        for group in groups:
            group.start()
        self._close_intervals_while()
        for group in groups:
            self.failures += group.join()
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

    def _stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            for group in self.groups:
                group.stop()

    def _close_intervals_while(self) -> None:
        """Closes each interval as it ends, until the phase is over or its workers are done."""
        while True:
            now = time.time()
            if (self.end_time is not None and now >= self.end_time) or self.abort.is_set():
                self._stop()
            alive = [group.alive() for group in self.groups]  # (a client process's failures too)
            if any(group.failures for group in self.groups):
                self._stop()  # one worker failing stops the phase, in every group
            if self.stopped or not any(alive):
                return
            boundary = self.clock.bounds(self.next_k)[1]
            if now >= boundary + GRACE_S and self._more_to_close():
                self._close(self._gather(self.next_k), self.next_k)
                continue
            wake = boundary + GRACE_S if self._more_to_close() else self.end_time
            time.sleep(max(0.001, min(0.1, wake - now)))

    def _more_to_close(self) -> bool:
        return self.last_index is None or self.next_k < self.last_index

    def _gather(self, upto: int, clamp_to: int | None = None) -> tuple[dict[int, IntervalShare], int]:
        merged: dict[int, IntervalShare] = {}
        thread_cpu = 0
        for group in self.groups:
            shares, cpu = group.take(upto, clamp_to)
            thread_cpu += cpu
            for k, share in shares.items():
                merged.setdefault(k, IntervalShare()).merge(share)
        return merged, thread_cpu

    def _client_cpu_ns(self) -> int:
        """CPU of everything on the client side since the last close: this runner process and its
        client processes, every thread (the driver's own threads included)."""
        now = process_cpu_ns()
        spent, self._cpu_mark = now - self._cpu_mark, now
        return spent + sum(group.process_cpu_ns() for group in self.groups)

    def _close(self, gathered: tuple[dict[int, IntervalShare], int], upto: int, final_end: float | None = None) -> None:
        merged, thread_cpu = gathered
        stats = self.engine_stats() if self.engine_stats else {}
        # Worker-thread CPU read now belongs to the last interval being closed.
        merged.setdefault(upto, IntervalShare()).thread_cpu_ns += thread_cpu
        client_cpu = self._client_cpu_ns()
        for k in range(self.next_k, upto + 1):
            payload = encode_share(merged.get(k, IntervalShare()))
            t0, t1 = self.clock.bounds(k)
            if final_end is not None and k == upto:
                t1 = final_end
            self.total_ops += sum(op["count"] for op in payload["ops"].values())
            self.emit({"event": "interval", "phase": self.name, "interval": k, "t_start": t0, "t_end": t1,
                       **payload, "client_process_cpu_ns": client_cpu if k == upto else 0,
                       "engine": stats, "accounting": self.accounting})
        self.next_k = upto + 1
