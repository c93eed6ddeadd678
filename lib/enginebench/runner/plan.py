"""The common experiment plan: load, verify, quiesce, warm up, measure, check.

`steps` writes it declaratively, as the list of steps the native runner executes (lib/native
src/plan.rs documents each step); `load_then_measure` executes it in Python for the server
targets. Workloads that follow it provide: setup(store), load_threads(n), expected_after_load(),
requester(i, n) with next() -> (op, fn(store)), and check(store) -> dict.
"""
from __future__ import annotations

import threading
import time

from .coldstart import evict
from .phases import run_phase


def steps(phases: dict) -> list[dict]:
    """The phase plan of a load-then-measure experiment, from its params' `phases` (a system
    with `measure_requests: false` has intervals 0: it loads and stops)."""
    plan = [{"step": "load", "threads": phases["loaders"], "interval_s": phases["load_interval_s"]},
            {"step": "verify"},
            {"step": "quiesce", "seconds": phases["quiesce_s"]}]
    if phases["intervals"] == 0:
        return plan
    if phases.get("cold_start", "none") != "none":
        plan.append({"step": "cold_start", "method": phases["cold_start"]})
    n, rate = phases["requesters"], phases.get("request_rate")
    if phases["warmup_s"] > 0:
        plan.append({"step": "measure", "name": "warmup", "threads": n, "interval_s": phases["warmup_s"],
                     "duration_s": phases["warmup_s"], "rate_per_s": rate})
    plan.append({"step": "measure", "name": "run", "threads": n, "interval_s": phases["interval_s"],
                 "duration_s": phases["interval_s"] * phases["intervals"], "rate_per_s": rate})
    if phases.get("rate_sweep"):
        plan.append({"step": "rate_sweep", "of": "run", "fractions": phases["rate_sweep"],
                     "seconds": phases["rate_sweep_s"], "threads": n})
    plan.append({"step": "check"})
    return plan


def request_loop(requester, rate_per_worker: float | None = None, offset: float = 0.0):
    """A worker callable that issues the requester's operations until the phase stops it.

    Closed loop by default (the next op starts when the last ends). With a rate, open loop on a
    fixed schedule (YCSB's method, LinkbenchX's `requestrate`): op k is due at start + k/rate,
    and its latency is also recorded from that intended start, so time spent waiting behind a
    slow engine is not lost (no coordinated omission)."""
    def closed(store, rec, stop: threading.Event):
        while not stop.is_set():
            op, fn = requester.next()
            rec.call(op, fn, store)

    def open_loop(store, rec, stop: threading.Event):
        gap_ns = int(1e9 / rate_per_worker)
        due = time.perf_counter_ns() + int(offset * gap_ns)
        while not stop.is_set():
            wait = due - time.perf_counter_ns()
            if wait > 0 and stop.wait(wait / 1e9):
                return
            op, fn = requester.next()
            rec.call(op, fn, store, intended_ns=due)
            due += gap_ns
    return open_loop if rate_per_worker else closed


def outcome(phase: dict) -> str | None:
    """None if the phase completed, else the run's status: aborted (interrupted) or failed."""
    if not phase["aborted"]:
        return None
    return "aborted" if phase["error"] == "interrupted" else "failed"


def rate_sweep(requesters: list, store, phases: dict, emit, abort: threading.Event, capacity: float) -> str | None:
    """Open-loop phases at fractions of the closed-loop throughput: each point of the latency
    against throughput curve, with latency from the intended start and service time. Returns
    the run's status if a phase did not complete. The measured phase's requesters go on, so
    their streams continue (new requesters would re-issue the node ids already added)."""
    n = len(requesters)
    for fraction in phases["rate_sweep"]:
        rate = fraction * capacity
        name = f"sweep {fraction:g}x"
        emit({"event": "sweep", "phase": name, "fraction": fraction, "offered_per_s": rate,
              "closed_loop_per_s": capacity})
        workers = [request_loop(requester, rate / n, offset=i / n) for i, requester in enumerate(requesters)]
        point = run_phase(name, workers, store, emit, interval_s=phases["rate_sweep_s"],
                          duration_s=phases["rate_sweep_s"], abort=abort, max_errors=phases["max_errors"],
                          engine_stats=store.stats)
        if outcome(point):
            return outcome(point)
    return None


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
    rate = phases.get("request_rate")
    # Workers' schedules are staggered so the arrivals are spread, not bunched.
    requesters = [workload.requester(i, n) for i in range(n)]
    workers = [request_loop(r, rate / n if rate else None, offset=i / n) for i, r in enumerate(requesters)]
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
    if phases.get("rate_sweep"):
        swept = rate_sweep(requesters, store, phases, emit, abort, capacity=run["ops"] / run["seconds"])
        if swept:
            return swept
    started = time.time()
    result = workload.check(store)
    emit({"event": "consistency", **result, "seconds": time.time() - started, "atomic": store.atomic})
    return "complete"
