"""Counters that the workers of one phase share, whether they are threads of one process or
spread over client processes (runner/clients.py).

A workload names its counters (`Workload.shared_counters`); the runner gives it in-process ones,
or, when the phase runs in client processes, counters in shared memory that every process sees.
Workers only ever add to them, so a counter needs no reset: a phase reads its value when it
builds its workers (`Tally`), and counts from there.
"""
from __future__ import annotations

import multiprocessing
import queue
import threading


class LocalCounter:
    """A counter for the threads of one process."""

    def __init__(self):
        self._lock = threading.Lock()
        self._value = 0

    def add(self, n: int = 1) -> int:
        with self._lock:
            self._value += n
            return self._value

    def value(self) -> int:
        with self._lock:
            return self._value


class ProcessCounter:
    """A counter in shared memory, for workers in several processes (made before they start)."""

    def __init__(self, context=None):
        self._shared = (context or multiprocessing).Value("q", 0)

    def add(self, n: int = 1) -> int:
        with self._shared.get_lock():
            self._shared.value += n
            return self._shared.value

    def value(self) -> int:
        with self._shared.get_lock():
            return self._shared.value


class Tally:
    """A counter seen from one phase: counts from its value when the phase's workers were built
    (every client process builds them before any worker starts, so all see the same origin)."""

    def __init__(self, counter):
        self.counter = counter
        self.origin = counter.value()

    def add(self, n: int = 1) -> int:
        return self.counter.add(n) - self.origin

    def value(self) -> int:
        return self.counter.value() - self.origin

    def take(self) -> int:
        """The next ticket: 0, 1, 2, ... across all workers (a shared work queue's position)."""
        return self.add(1) - 1


class TicketQueue:
    """A fixed list of work items taken in order by workers in any process (a queue.Queue's
    get_nowait, over a shared counter)."""

    def __init__(self, items: list, taken: Tally):
        self.items, self.taken = items, taken

    def get_nowait(self):
        ticket = self.taken.take()
        if ticket >= len(self.items):
            raise queue.Empty
        return self.items[ticket]
