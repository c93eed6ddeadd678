"""The common experiment plan: load, verify, quiesce, warm up, measure, check.

Workloads that follow it provide: setup(store), load_threads(n), expected_after_load(),
requester(i, n) with next() -> (op, fn(store)), and check(store) -> dict.
"""
from __future__ import annotations

import threading
import time

from .coldstart import evict
from .phases import run_phase


def request_loop(requester):
    """A worker callable that issues the requester's operations until the phase stops it."""
    def work(store, rec, stop: threading.Event):
        while not stop.is_set():
            op, fn = requester.next()
            rec.call(op, fn, store)
    return work


def outcome(phase: dict) -> str | None:
    """None if the phase completed, else the run's status: aborted (interrupted) or failed."""
    if not phase["aborted"]:
        return None
    return "aborted" if phase["error"] == "interrupted" else "failed"


def load_then_measure(workload, store, phases: dict, emit, abort: threading.Event, reopen=None) -> str:
    workload.setup(store)
    load = run_phase("load", workload.load_threads(phases["loaders"]), store, emit,
                     interval_s=phases["load_interval_s"], duration_s=None, abort=abort,
                     max_errors=0, engine_stats=store.stats, accounting=workload.load_accounting)
    if outcome(load):
        return outcome(load)

    expected = workload.expected_after_load()
    found = {name: store.count(name, None) for name in expected}
    emit({"event": "load_verified", "expected": expected, "found": found, "ok": expected == found})

    started = time.time()
    store.checkpoint()
    time.sleep(phases["quiesce_s"])
    emit({"event": "quiesce", "seconds": time.time() - started, "checkpoint": True})
    if phases["intervals"] and phases.get("cold_start", "none") != "none":
        store.close()
        emit({"event": "cold_start", **evict(phases["data_dir"], phases["cold_start"])})
        store = reopen()

    if phases["intervals"] == 0:
        return "complete"  # a load-only system
    n = phases["requesters"]
    workers = [request_loop(workload.requester(i, n)) for i in range(n)]
    if phases["warmup_s"] > 0:
        warm = run_phase("warmup", workers, store, emit, interval_s=phases["warmup_s"],
                         duration_s=phases["warmup_s"], abort=abort, max_errors=phases["max_errors"])
        if outcome(warm):
            return outcome(warm)
    run = run_phase("run", workers, store, emit, interval_s=phases["interval_s"],
                    duration_s=phases["interval_s"] * phases["intervals"], abort=abort,
                    max_errors=phases["max_errors"], engine_stats=store.stats)
    if outcome(run):
        return outcome(run)
    started = time.time()
    result = workload.check(store)
    emit({"event": "consistency", **result, "seconds": time.time() - started, "atomic": store.atomic})
    return "complete"
