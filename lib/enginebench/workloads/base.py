"""What a workload supplies to the phase plan (runner/plan.py), as the native runner's Workload
trait does (lib/native/src/workloads/mod.rs): the two definitions stay in step, and
lib/tests/test_native_contract.py checks that they issue the same operations.

A worker is a callable fn(store, recorder, stop) that runs until its work is done or `stop` is
set (runner/phases.py runs them).
"""
from __future__ import annotations

from typing import Callable

from ..runner.shared import LocalCounter, Tally

Worker = Callable

COUNT_ALL = {"rate": "count", "rate_ops": None, "per_op": None}


class Workload:
    # How the interval tables count the load's and the measured phases' throughput (results/tables.py).
    load_accounting: dict = COUNT_ALL
    measure_accounting: dict = COUNT_ALL
    # An op whose calls at or above a latency (us) count as slow (iibench's 2 s inserts).
    slow_us: dict[str, int] | None = None
    # Counters the workers of a phase share (a work queue's position, documents inserted): the
    # runner supplies them (runner/shared.py), in shared memory when the workers run in several
    # client processes. A workload that keeps other state across its workers sets
    # `client_processes` False and runs its workers as threads of the runner.
    shared_counters: tuple[str, ...] = ()
    client_processes = True
    _counters: dict | None = None

    def use_counters(self, counters: dict) -> None:
        """Share these counters (by name) with the workers of other processes."""
        self._counters = dict(counters)

    def counter(self, name: str) -> Tally:
        """The named shared counter, seen from the phase being built."""
        if name not in self.shared_counters:
            raise KeyError(f"{type(self).__name__} does not declare the shared counter {name!r}")
        if self._counters is None:
            self._counters = {}
        if name not in self._counters:
            self._counters[name] = LocalCounter()
        return Tally(self._counters[name])

    def setup(self, store) -> None:
        """Collections and indexes, created before the load as the originals did."""

    def load(self, threads: int) -> list[Worker]:
        """The load's workers (`threads` as the plan says; a workload may add its own)."""
        raise NotImplementedError

    def expected_after_load(self, load_threads: int) -> dict:
        """What the load will leave, per collection (the progress display counts to it)."""
        raise NotImplementedError

    # Sizing a run before it starts (resources/space.py): loaders whose first documents are
    # representative, sampled up to a number of documents in all, or in each collection.
    samples_per_collection = False

    def size_sample(self) -> list[Worker]:
        return self.load(1)

    def after_load(self, store, emit) -> None:
        """What the workload reports of the load once it ended (server targets: what the server
        recorded of it)."""

    def verify(self, store) -> tuple[dict, dict]:
        """(expected, found) after the load."""
        raise NotImplementedError

    def measure(self, name: str, threads: int, rate_per_s: float | None) -> list[Worker]:
        """The workers of a measured phase; with a rate, open loop over all threads."""
        raise NotImplementedError(f"{type(self).__name__} has no measured phase of its own")

    def after_measure(self, name: str, emit) -> None:
        """What the workload reports of a measured phase once it ended."""

    def check(self, store) -> dict:
        """The consistency check after the measured phases: the event's fields."""
        raise NotImplementedError(f"{type(self).__name__} has no consistency check")
