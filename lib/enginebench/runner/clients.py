"""Client processes for server targets (DESIGN §5: the client must not be the bottleneck).

The runner's worker threads share one interpreter lock, which caps the request rate of a Python
client well below what a server can take. On mongod and uri targets the runner starts
`client_processes` processes (default: one per core) when it opens the store; each builds the
same workload from the spec and opens its own store (its own connections). For every phase each
process builds the phase's full list of workers, exactly as the runner would, and runs those
whose index i has i % processes == its number: worker i keeps its seed whichever process runs it.
State the workers share lives in shared-memory counters (runner/shared.py).

The runner's phase (runner/phases.py) drives them like its own threads: at each interval
boundary it takes every process's shares of the closed intervals (histograms in their lossless
encoding, added exactly) and emits the same events as when the workers are its threads.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time

from .phases import ThreadGroup, process_cpu_ns
from .recorder import PhaseClock, decode_share, encode_share
from .shared import ProcessCounter

# A client process that does not answer within this long is taken for dead (it is stopped).
REPLY_TIMEOUT_S = 120.0


def default_processes() -> int:
    """One client process per core the runner may use."""
    return max(1, len(os.sched_getaffinity(0)))


class ClientError(RuntimeError):
    pass


class ClientPool:
    """The client processes of one runner; a phase's workers are spread over them."""

    def __init__(self, spec: dict, workload, processes: int, opener=None):
        """`opener(spec)` opens a process's store (default: the runner's open_store); it must be
        a module-level function, as the processes are spawned."""
        # spawn, not fork: the runner holds open driver connections and threads, which a forked
        # child must not inherit.
        self.context = multiprocessing.get_context("spawn")
        counters = {name: ProcessCounter(self.context) for name in workload.shared_counters}
        workload.use_counters(counters)
        self.connections, self.processes = [], []
        for number in range(processes):
            parent_end, child_end = self.context.Pipe()
            proc = self.context.Process(target=client_main, name=f"enginebench-client-{number}", daemon=True,
                                        args=(child_end, spec, counters, number, processes, opener))
            proc.start()
            child_end.close()
            self.connections.append(parent_end)
            self.processes.append(proc)
        try:
            for number in range(processes):
                self._reply(number)  # each has started
            for number in range(processes):
                # One at a time: opening a store probes the server's capabilities with scratch
                # collections, which two probes at once would trip over.
                self.ask(number, "open")
        except BaseException:
            self.close()  # none is left behind by a pool that failed to start
            raise

    def __len__(self) -> int:
        return len(self.processes)

    def _reply(self, number: int, timeout_s: float | None = REPLY_TIMEOUT_S):
        conn, proc = self.connections[number], self.processes[number]
        deadline = None if timeout_s is None else time.time() + timeout_s
        while not conn.poll(0.2):
            if not proc.is_alive():
                raise ClientError(f"client process {number} exited with code {proc.exitcode}")
            if deadline is not None and time.time() > deadline:
                raise ClientError(f"client process {number} did not answer within {timeout_s:.0f} s")
        kind, value = conn.recv()
        if kind == "error":
            raise ClientError(f"client process {number}: {value}")
        return value

    def ask(self, number: int, *message, timeout_s: float | None = REPLY_TIMEOUT_S):
        self.connections[number].send(message)
        return self._reply(number, timeout_s)

    def ask_all(self, *message) -> list:
        for conn in self.connections:
            conn.send(message)
        return [self._reply(number) for number in range(len(self.processes))]

    def prepare(self, kind: str, *args) -> None:
        """Every process builds the phase's workers: workload.load(*args) or .measure(*args)."""
        self.ask_all("prepare", kind, args)

    def groups(self, clock: PhaseClock, max_errors: int, slow_us: dict | None) -> list["ProcessGroup"]:
        return [ProcessGroup(self, number, clock, max_errors, slow_us) for number in range(len(self.processes))]

    def close(self) -> None:
        for number, proc in enumerate(self.processes):
            try:
                if proc.is_alive():
                    self.ask(number, "close")
            except (ClientError, OSError, EOFError):
                pass  # it is stopped below either way
            proc.join(5)
            if proc.is_alive():
                proc.terminate()
                proc.join(5)


class ProcessGroup:
    """One client process's share of a phase, as the phase's coordinator sees it."""
    processes = 1

    def __init__(self, pool: ClientPool, number: int, clock: PhaseClock, max_errors: int, slow_us: dict | None):
        self.pool, self.number = pool, number
        self.setup = (clock.start, clock.length, max_errors, slow_us)
        self.failures: list[str] = []
        self._cpu = 0  # the process's CPU reported with its last shares

    def start(self) -> None:
        self.pool.ask(self.number, "start", self.setup)

    def alive(self) -> bool:
        alive, self.failures = self.pool.ask(self.number, "status")
        return alive

    def stop(self) -> None:
        self.pool.ask(self.number, "stop")

    def join(self) -> list[str]:
        # As long as its slowest operation takes (a thread's join has no bound either).
        self.failures = self.pool.ask(self.number, "join", timeout_s=None)
        return self.failures

    def take(self, upto: int, clamp_to: int | None = None):
        shares, thread_cpu, self._cpu = self.pool.ask(self.number, "take", upto, clamp_to)
        return {k: decode_share(payload) for k, payload in shares.items()}, thread_cpu

    def process_cpu_ns(self) -> int:
        cpu, self._cpu = self._cpu, 0
        return cpu


# -- the client process ---------------------------------------------------------------------------

class Client:
    """What a client process does on the runner's requests."""

    def __init__(self, spec: dict, counters: dict, number: int, processes: int, opener=None):
        from ..workloads import build_workload
        from .child import SWITCH_INTERVAL_S, open_store
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.number, self.processes = number, processes
        self.spec, self.opener = spec, opener or open_store
        self.store = None
        self.workload = build_workload(spec["workload"]["name"], spec["workload"]["params"], spec.get("context"))
        self.workload.use_counters(counters)
        self.workers: list = []
        self.indices: list[int] = []
        self.group: ThreadGroup | None = None
        self.cpu_mark = process_cpu_ns()

    def prepare(self, kind: str, args: tuple) -> int:
        if kind not in ("load", "measure"):
            raise ValueError(f"unknown phase kind {kind!r}")
        everyone = getattr(self.workload, kind)(*args)
        self.indices = [i for i in range(len(everyone)) if i % self.processes == self.number]
        self.workers = [everyone[i] for i in self.indices]
        return len(self.workers)

    def start(self, setup: tuple) -> None:
        start, length, max_errors, slow_us = setup
        self.cpu_mark = process_cpu_ns()  # the phase's CPU starts now (not with the last phase's)
        self.group = ThreadGroup(self.workers, self.store, PhaseClock(start, length), max_errors, slow_us,
                                 self.indices)
        self.group.start()

    def status(self) -> tuple[bool, list[str]]:
        return self.group.alive(), list(self.group.failures)

    def take(self, upto: int, clamp_to: int | None):
        shares, thread_cpu = self.group.take(upto, clamp_to)
        now = process_cpu_ns()
        cpu, self.cpu_mark = now - self.cpu_mark, now
        return {k: encode_share(share) for k, share in shares.items()}, thread_cpu, cpu

    def handle(self, message: tuple):
        verb, *args = message
        if verb == "open":
            self.store = self.opener(self.spec)
            return None
        if verb == "prepare":
            return self.prepare(*args)
        if verb == "start":
            return self.start(*args)
        if verb == "status":
            return self.status()
        if verb == "stop":
            return self.group.stop()
        if verb == "join":
            return self.group.join()
        if verb == "take":
            return self.take(*args)
        raise ValueError(f"unknown request {verb!r}")


def client_main(conn, spec: dict, counters: dict, number: int, processes: int, opener=None) -> None:
    """A client process: open the store, then answer the runner until it says close (or goes)."""
    threading.current_thread().name = f"client{number}-main"
    # The runner decides when its clients stop (its phase stops them, its exit closes the pipe):
    # a Ctrl-C sent to the whole process group must not kill them mid-phase.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        client = Client(spec, counters, number, processes, opener)
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    try:
        conn.send(("ok", None))
        while True:
            message = conn.recv()
            if message[0] == "close":
                conn.send(("ok", None))
                return
            try:
                reply = ("ok", client.handle(message))
            except Exception as exc:
                reply = ("error", f"{type(exc).__name__}: {exc}")
            conn.send(reply)
    except (EOFError, BrokenPipeError):  # the runner is gone: nothing to report to
        return
    finally:
        if client.group is not None:
            client.group.stop()
        if client.store is not None:
            client.store.close()
