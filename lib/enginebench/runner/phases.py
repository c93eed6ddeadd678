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
    start = time.time()
    clock = PhaseClock(start, interval_s)
    last_index = None if duration_s is None else max(0, int(round(duration_s / interval_s)) - 1)
    end_time = None if duration_s is None else start + duration_s
    recorders = [Recorder(clock, max_errors, slow_us) for _ in workers]
    stop = threading.Event()
    failures: list[str] = []

    def body(fn, rec):
        rec.start_thread()
        try:
            fn(store, rec, stop)
        except BaseException as exc:  # one worker failing stops the phase; the error is reported
            failures.append(f"{type(exc).__name__}: {exc}")
            stop.set()
        finally:
            rec.finish_thread()

    threads = [threading.Thread(target=body, args=(fn, rec), name=f"{name}-{i}", daemon=True)
               for i, (fn, rec) in enumerate(zip(workers, recorders))]
    emit({"event": "phase_start", "phase": name, "t": start, "workers": len(workers),
          "interval_s": interval_s, "duration_s": duration_s})
    for thread in threads:
        thread.start()

    total_ops = 0
    next_k = 0

    def gather(upto: int, clamp_to: int | None = None) -> dict[int, IntervalShare]:
        merged: dict[int, IntervalShare] = {}
        for rec in recorders:
            for k, share in rec.take(upto).items():
                key = k if clamp_to is None else min(k, clamp_to)
                merged.setdefault(key, IntervalShare()).merge(share)
        return merged

    def close(merged: dict[int, IntervalShare], upto: int, final_end: float | None = None) -> None:
        nonlocal next_k, total_ops
        stats = engine_stats() if engine_stats else {}
        # Worker-thread CPU read now belongs to the last interval being closed.
        merged.setdefault(upto, IntervalShare()).thread_cpu_ns += sum(r.thread_cpu_since_last() for r in recorders)
        for k in range(next_k, upto + 1):
            payload = encode_share(merged.get(k, IntervalShare()))
            t0, t1 = clock.bounds(k)
            if final_end is not None and k == upto:
                t1 = final_end
            total_ops += sum(op["count"] for op in payload["ops"].values())
            emit({"event": "interval", "phase": name, "interval": k, "t_start": t0, "t_end": t1,
                  **payload, "engine": stats, "accounting": accounting})
        next_k = upto + 1

    def more_to_close() -> bool:
        return last_index is None or next_k < last_index

    while True:
        now = time.time()
        if (end_time is not None and now >= end_time) or abort.is_set():
            stop.set()
        if stop.is_set() or not any(t.is_alive() for t in threads):
            break
        boundary = clock.bounds(next_k)[1]
        if now >= boundary + GRACE_S and more_to_close():
            close(gather(next_k), next_k)
            continue
        wake = boundary + GRACE_S if more_to_close() else end_time
        time.sleep(max(0.001, min(0.1, wake - now)))

    for thread in threads:
        thread.join()
    finished = time.time()
    timed_out_normally = end_time is not None and not abort.is_set() and not failures
    final_k = last_index if timed_out_normally else max(clock.index(finished), next_k)
    # Ops completing after a timed phase's end are counted in its last interval.
    close(gather(10**9, clamp_to=final_k), final_k, final_end=end_time if timed_out_normally else finished)
    aborted = abort.is_set() or bool(failures)
    result = {"seconds": finished - start, "ops": total_ops, "aborted": aborted,
              "error": ("interrupted" if abort.is_set() else None) or (failures[0] if failures else None)}
    emit({"event": "phase_end", "phase": name, "t": finished, **result})
    return result
