"""The phase plan: `phases:` of a params file turned into steps, and the steps executed.

`plan_steps` writes the plan declaratively, as the list of steps both runners execute: the native
runner (lib/native/src/plan.rs documents each step) for embedded systems, and `execute` here for
the clients of server targets. The plan is the same for every family: load, verify, quiesce,
cold start, the measured phases (one per client count), a rate sweep, the consistency check.
A family leaves out what its `phases:` leaves out (iibench and TokuMX's insert test measure their
load, so their plan ends at verify).

A workload supplies what each step means for it (workloads/base.py: Workload).
"""
from __future__ import annotations

import threading
import time

from ..mongod.coldstart import evict
from .phases import run_phase


def plan_steps(params: dict, system: dict | None = None) -> list[dict]:
    """The steps for an experiment's resolved params; a system with `measure_requests: false`
    loads and stops (the post's load-only setups)."""
    from ..families import family

    phases = params["phases"]
    use = family(params["workload"]["name"]).phase_use(params["workload"])
    steps: list[dict] = []
    if phases.get("load"):
        steps += [{"step": "load", "threads": phases["load"]["threads"], "interval_s": phases["load"]["interval_s"]},
                  {"step": "verify"}]
    measure = phases.get("measure")
    if not measure or (system is not None and not system.get("measure_requests", True)):
        return steps
    steps.append({"step": "quiesce", "seconds": phases["quiesce_s"]})
    if phases.get("cold_start", "none") != "none":
        steps.append({"step": "cold_start", "method": phases["cold_start"]})
    steps += measured_steps(measure)
    if phases.get("rate_sweep"):
        sweep = phases["rate_sweep"]
        steps.append({"step": "rate_sweep", "of": "run", "fractions": sweep["fractions"],
                      "seconds": sweep["seconds"], "threads": measure["threads"]})
    if use.check:
        steps.append({"step": "check"})
    return steps


def load_threads(params: dict) -> int:
    return (params["phases"].get("load") or {}).get("threads", 1)


def measured_steps(measure: dict) -> list[dict]:
    """One measured phase ("run"), after its warm-up; or one per client count ("clients=<n>")."""
    rate, interval, duration = measure.get("request_rate"), measure["interval_s"], measure.get("duration_s")
    if isinstance(measure["threads"], list):
        return [{"step": "measure", "name": f"clients={n}", "threads": n, "interval_s": interval,
                 "duration_s": duration, "rate_per_s": rate} for n in measure["threads"]]
    steps = []
    if measure.get("warmup_s"):
        steps.append({"step": "measure", "name": "warmup", "threads": measure["threads"],
                      "interval_s": measure["warmup_s"], "duration_s": measure["warmup_s"], "rate_per_s": rate})
    steps.append({"step": "measure", "name": "run", "threads": measure["threads"], "interval_s": interval,
                  "duration_s": duration, "rate_per_s": rate})
    return steps


def request_loop(next_request, rate_per_worker: float | None = None, offset: float = 0.0):
    """A worker callable that issues `next_request()` -> (op, fn(store)) until the phase stops it.

    Closed loop by default (the next op starts when the last ends). With a rate, open loop on a
    fixed schedule (YCSB's method, LinkbenchX's `requestrate`): op k is due at start + k/rate,
    and its latency is also recorded from that intended start, so time spent waiting behind a
    slow engine is not lost (no coordinated omission)."""
    def closed(store, rec, stop: threading.Event):
        while not stop.is_set():
            op, fn = next_request()
            rec.call(op, fn, store)

    def open_loop(store, rec, stop: threading.Event):
        gap_ns = int(1e9 / rate_per_worker)
        due = time.perf_counter_ns() + int(offset * gap_ns)
        while not stop.is_set():
            wait = due - time.perf_counter_ns()
            if wait > 0 and stop.wait(wait / 1e9):
                return
            op, fn = next_request()
            rec.call(op, fn, store, intended_ns=due)
            due += gap_ns
    return open_loop if rate_per_worker else closed


def outcome(phase: dict) -> str | None:
    """None if the phase completed, else the run's status: aborted (interrupted) or failed."""
    if not phase["aborted"]:
        return None
    return "aborted" if phase["error"] == "interrupted" else "failed"


class Execution:
    """Runs the steps on one store, as plan.rs does; a stale secondary (the store's replication
    watches, server targets only) ends the plan as a finding, not a failure. With `clients` (a
    ClientPool, server targets) the phases' workers run in its processes, not in this one."""

    def __init__(self, workload, store, emit, abort: threading.Event, *, data_dir: str, max_errors: int,
                 reopen=None, clients=None):
        self.workload, self.store, self.emit, self.abort = workload, store, emit, abort
        self.data_dir, self.max_errors, self.reopen = data_dir, max_errors, reopen
        self.clients = clients if workload.client_processes else None
        self.throughput: dict[str, float] = {}

    def run(self, steps: list[dict]) -> str:
        self.workload.setup(self.store)
        for step in steps:
            if self.abort.is_set():
                return "aborted"
            status = getattr(self, f"_{step['step']}")(step)
            if status:
                return status
        return "complete"

    def _workers(self, kind: str, *args) -> list:
        """The phase's workers (workload.load or .measure); the client processes build theirs."""
        workers = getattr(self.workload, kind)(*args)
        if self.clients is not None:
            self.clients.prepare(kind, *args)
        return workers

    def _phase(self, name: str, workers: list, *, interval_s: float, duration_s: float | None, max_errors: int,
               accounting: dict) -> str | None:
        result = run_phase(name, workers, self.store, self.emit, interval_s=interval_s, duration_s=duration_s,
                           abort=self.abort, max_errors=max_errors, engine_stats=self.store.stats,
                           accounting=accounting, slow_us=self.workload.slow_us, clients=self.clients)
        if result["aborted"] and stale_finding(self.store) is not None:
            self._verify({}, stopped_by="stale_secondary")  # the count is short by design, and says why
            return "complete"
        if not outcome(result):
            self.throughput[name] = result["ops"] / max(result["seconds"], 1e-9)
        return outcome(result)

    def _load(self, step: dict) -> str | None:
        status = self._phase("load", self._workers("load", step["threads"]), interval_s=step["interval_s"],
                             duration_s=None, max_errors=0, accounting=self.workload.load_accounting)
        self.workload.after_load(self.store, self.emit)
        return status

    def _verify(self, _step: dict, stopped_by: str | None = None) -> None:
        expected, found = self.workload.verify(self.store)
        event = {"event": "load_verified", "expected": expected, "found": found, "ok": expected == found}
        if stopped_by:
            event["stopped_by"] = stopped_by
        self.emit(event)

    def _quiesce(self, step: dict) -> None:
        started = time.time()
        self.store.checkpoint()
        self.abort.wait(step["seconds"])
        self.emit({"event": "quiesce", "seconds": time.time() - started, "checkpoint": True})

    def _cold_start(self, step: dict) -> None:
        self.store.close()
        self.emit({"event": "cold_start", **evict(self.data_dir, step["method"])})
        self.store = self.reopen()

    def _measure(self, step: dict) -> str | None:
        workers = self._workers("measure", step["name"], step["threads"], step.get("rate_per_s"))
        status = self._phase(step["name"], workers, interval_s=step["interval_s"], duration_s=step["duration_s"],
                             max_errors=self.max_errors, accounting=self.workload.measure_accounting)
        self.workload.after_measure(step["name"], self.emit)
        return status

    def _rate_sweep(self, step: dict) -> str | None:
        capacity = self.throughput[step["of"]]
        for fraction in step["fractions"]:
            rate, name = fraction * capacity, f"sweep {fraction:g}x"
            self.emit({"event": "sweep", "phase": name, "fraction": fraction, "offered_per_s": rate,
                       "closed_loop_per_s": capacity})
            workers = self._workers("measure", name, step["threads"], rate)
            status = self._phase(name, workers, interval_s=step["seconds"], duration_s=step["seconds"],
                                 max_errors=self.max_errors, accounting=self.workload.measure_accounting)
            if status:
                return status
        return None

    def _check(self, _step: dict) -> None:
        started = time.time()
        result = self.workload.check(self.store)
        self.emit({"event": "consistency", **result, "seconds": time.time() - started, "atomic": self.store.atomic})


def stale_finding(store) -> dict | None:
    """The stale-secondary finding of the replication watches the runner attached to the store
    (`store.watches`, mongod target only; an embedded store has no replica set), if any."""
    return next((w.found for w in getattr(store, "watches", None) or [] if getattr(w, "found", None)), None)
