"""Supervising one system's runner: start it inside the system's resource profile, relay and keep
its events, sample it, and bound every wait on it (watchdog.py).

A reader thread drains the runner's stdout into a queue the whole time, so the runner can never
block on a full pipe, not even while it is being stopped. Events and samples go to disk as they
come, so a driver killed outright leaves them for its run's folder (results/rundir.py settle).
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from .children import die_with_parent
from .metrics import perfshare
from .metrics.sampler import Sampler
from .progress import Progress, show
from .resources import space
from .until_steady import SteadyWatch
from .watchdog import Watchdog

# glibc gives every thread that allocates its own arena; with the engines' background threads
# that fragments the runner's memory by tens of MB, which counts against a memory profile.
# (mongod links tcmalloc for the same reason.) Recorded in each run's manifest.
RUNNER_ENV = {"MALLOC_ARENA_MAX": "2"}
STOP_GRACE_S = 60
# A hung runner gets this long to act on SIGTERM before SIGKILL: it is not expected to.
HUNG_GRACE_S = 10
# After its last event (done, failed) a runner exits at once; one that does not is killed.
EXIT_GRACE_S = 10
# Events kept in the manifest of a system that hung or failed, to say what it was doing.
LAST_EVENTS = 5


@dataclass
class SystemRun:
    """What the driver hands over for one system."""
    folder: object            # results.rundir.RunFolder
    params: dict
    label: str
    sys_dir: Path
    spec_path: Path
    data_dir: Path
    expected: dict            # what the load leaves, for the progress display
    stop_flag: threading.Event
    resources: object         # resources.profiles.SystemResources
    result: dict              # the system's entry in the manifest, filled in here
    server: object = None     # a mongod/uri server (None: the embedded runner is the server)
    command: list | None = None  # the native runner's argv
    scratch: object = None    # results.scratch.Scratch


class Supervision:
    def __init__(self, system: SystemRun):
        self.s = system
        self.result = system.result
        self.lines: queue.Queue = queue.Queue()
        self.hung: str | None = None
        self.interrupted = False
        self.final_at: float | None = None  # when the runner sent its last event (done, failed)
        self.samples_written = 0
        self.profiler = None

    def engine_env(self) -> dict:
        """The environment the system's engine asks for in an embedded runner (engines.py
        runner_env), recorded in its manifest entry."""
        from .engines import ENGINES
        if self.s.server is not None:
            return {}
        system = next((x for x in self.s.params["systems"] if x["label"] == self.s.label), {})
        env = ENGINES[system["engine"]].runner_env if system.get("engine") in ENGINES else {}
        if env:
            self.result["runner_env"] = env
        return env

    def run(self) -> None:
        self._start()
        try:
            overdue = self._relay()
            self._await_exit(overdue)
        except BaseException:
            # Interrupted: stop the runner (it closes the engine cleanly), keeping what it still sends.
            self.interrupted = True
            self.stop()
            raise
        finally:
            self._close()
            self._conclude()
            if not self.s.params.get("keep_data"):
                shutil.rmtree(self.s.data_dir, ignore_errors=True)

    # -- start ----------------------------------------------------------------------------
    def _start(self) -> None:
        s = self.s

        def preexec():
            die_with_parent()
            if s.server is None:  # an embedded runner is the server; a mongod's client stays outside
                s.resources.preexec()
        self.stderr = open(s.sys_dir / "runner.log", "w")
        # stdin: the driver's replies to the runner's requests and its end of a phase judged
        # steady (the runner's control.rs)
        self.proc = subprocess.Popen(s.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, preexec_fn=preexec, env={**os.environ, **RUNNER_ENV, **self.engine_env()})
        threading.Thread(target=self._read_events, name="runner-events", daemon=True).start()
        self.watched = [self.proc.pid] + (list(s.server.pids) if s.server is not None else [])
        if s.scratch is not None:  # so that a later run can end them if this driver dies
            s.scratch.started(self.watched)
        plan = json.loads(s.spec_path.read_text()).get("plan") or []
        quiesce = max((step.get("seconds", 0) for step in plan if step.get("step") == "quiesce"), default=0.0)
        self.watchdog = Watchdog(s.params["supervision"], quiesce)
        self.steady_watch = SteadyWatch(plan)
        sample_s = s.params["metrics"]["sample_s"]
        if s.server is None:
            self.sampler = Sampler([self.proc.pid], s.data_dir, sample_s, extra=s.resources.io_counters)
        else:  # the server processes, summed and one by one
            self.sampler = Sampler(s.server.pids, s.data_dir, sample_s,
                                   extra=lambda: {**s.resources.io_counters(), **s.server.counters()})
        self.sampler.start()
        self.progress = Progress(s.label)
        self.events_file = open(s.sys_dir / "events.jsonl", "w")
        self.samples_file = open(s.sys_dir / "samples.jsonl", "w")
        # Whose code the native runner's CPU went to, per phase (metrics/perfshare.py): the
        # engine's on the embedded target, the client's own on a server.
        self.profile, reason = perfshare.available()
        self.result["cpu_attribution"] = {} if self.profile else {"unavailable": reason}

    def _read_events(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # end of stream: the runner has closed its stdout

    # -- while it runs --------------------------------------------------------------------
    def _relay(self) -> bool:
        """Relays events until the runner's output ends; True if it sent its last event and
        did not exit."""
        next_check = 0.0
        while True:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                line = ""
            if time.monotonic() >= next_check:  # also while events flow: a livelock reports often
                next_check = time.monotonic() + 0.5
                self._save_samples()
                if self.final_at is not None and time.monotonic() - self.final_at > EXIT_GRACE_S:
                    self.result["exit_note"] = f"the runner did not exit within {EXIT_GRACE_S} s of its last event; killed"
                    return True
                self.hung = self.watchdog.check(*activity(self.watched))
                if self.hung:
                    print(f"[{self.s.label}] {self.hung}; stopping the runner (SIGTERM, then SIGKILL after "
                          f"{HUNG_GRACE_S} s)", file=sys.stderr, flush=True)
                    self.stop(HUNG_GRACE_S)
                    return False
            if line == "":
                continue
            if line is None:
                return False
            self._on_event(self.keep(line))

    def _on_event(self, event: dict) -> None:
        kind = event.get("event")
        self.watchdog.event(event)
        if kind in ("done", "failed"):
            self.final_at = time.monotonic()
        if kind == "clients" and event.get("pids"):
            # The runner's client processes: their work is the runner's sign of life too, and a
            # later run ends them if this driver dies.
            self.watched += event["pids"]
            if self.s.scratch is not None:
                self.s.scratch.started(self.watched)
        if kind == "request":
            self._answer(event)
        steady = self.steady_watch.on_event(event)
        if steady is not None:
            self._tell({"end_phase": steady})
        if kind == "load_verified" and not self.s.resources.plan.storage_during_load:
            self.s.resources.limit_storage()  # the measured phases run on the profile's device
        if kind == "phase_end":
            self.sampler.sample_now()  # the phase's size at its end, before perf's report takes seconds
        if self.profile and kind == "phase_start":
            self.profiler = perfshare.Profiler(self.proc.pid,
                                               self.s.sys_dir / f"perf-{event['phase'].replace(' ', '_')}.data")
            if self.s.scratch is not None:
                self.s.scratch.started(self.watched + [self.profiler.proc.pid])
        elif self.profiler is not None and kind == "phase_end":
            self.result["cpu_attribution"][event["phase"]] = self.profiler.stop(self.s.command[0])
            self.profiler = None
        show(self.progress, event, self.s.expected)

    def _answer(self, request: dict) -> None:
        """The runner asks for what only the driver can do: restart the server it launched for a
        cold start (its caches go with the processes), evicting the data files in between."""
        reply: dict = {"reply": request.get("kind")}
        try:
            if request.get("kind") != "restart_server":
                raise ValueError(f"unknown request {request.get('kind')!r}; allowed: restart_server")
            if self.s.server is None or self.s.server.deployment is None:
                raise ValueError("cold start restarts the server, and a deployment this run did not launch "
                                 "(TARGET=uri) cannot be restarted from here")
            old = list(self.s.server.pids)
            reply["done"] = self.s.server.deployment.restart(self.s.data_dir, request.get("method", "fadvise"))
            self.watched += [pid for pid in self.s.server.pids if pid not in self.watched]
            self.sampler.pids[:] = old + [pid for pid in self.s.server.pids if pid not in old]
            if self.s.scratch is not None:
                self.s.scratch.started(self.watched)
        except Exception as exc:  # the runner fails the phase with this reason
            reply["error"] = f"{type(exc).__name__}: {exc}"
        self._tell(reply)

    def _tell(self, message: dict) -> None:
        """One line to the runner's control channel (its control.rs)."""
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # the runner is gone; its exit is reported as such

    def keep(self, line: str) -> dict:
        self.events_file.write(line)
        self.events_file.flush()
        event = json.loads(line)
        self.result["events"].append(event)
        return event

    def _save_samples(self) -> None:
        taken = self.sampler.samples[self.samples_written:]
        for row in taken:
            self.samples_file.write(json.dumps(row) + "\n")
        self.samples_file.flush()
        self.samples_written += len(taken)

    # -- the end --------------------------------------------------------------------------
    def _await_exit(self, overdue: bool) -> None:
        try:
            self.proc.wait(timeout=0 if overdue or self.hung else EXIT_GRACE_S)  # its output has ended: it is exiting
        except subprocess.TimeoutExpired:
            self.result.setdefault("exit_note", f"the runner closed its output but did not exit within "
                                                f"{EXIT_GRACE_S} s; killed")
            self.stop(0)

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the runner, keep its last events, SIGKILL it after the grace period. Further
        SIGINT/SIGTERM while stopping are held back: abandoning a live runner would leak it."""
        held = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                held[signum] = signal.signal(signum, lambda *_: None)
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
            deadline = time.time() + grace_s
            while self.proc.poll() is None and time.time() < deadline:
                try:
                    self._keep_quietly(self.lines.get(timeout=0.2))
                except queue.Empty:
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            while not self.lines.empty():  # whatever the runner wrote before it ended
                self._keep_quietly(self.lines.get_nowait())
        finally:
            for signum, handler in held.items():
                signal.signal(signum, handler)

    def _keep_quietly(self, line: str | None) -> None:
        if line is not None:
            try:
                self.keep(line)
            except ValueError:
                pass  # a partial last line of a killed runner

    def _close(self) -> None:
        if self.proc.poll() is None:  # never delete files under a live engine
            self.stop()
        if self.profiler is not None:
            self.profiler.stop(self.s.command[0])
        self.progress.close()
        self.sampler.stop()
        if self.s.server is not None:  # never delete a dbpath under a live mongod
            self.s.server.stop()
        self.stderr.close()
        self.events_file.close()
        self._save_samples()
        self.samples_file.close()
        self.result.update(samples=self.sampler.samples, sampler_cpu_s=self.sampler.cpu_s,
                           device=self.sampler.device.name if self.sampler.device else None)

    def _conclude(self) -> None:
        """The system's status and error, from its last event or how it ended."""
        result = self.result
        final = [e for e in result["events"] if e.get("event") in ("done", "failed")]
        last = final[-1] if final else {}
        if self.hung:
            result["status"] = "failed"
            result["error"] = f"{self.hung}; the runner was stopped (SIGTERM, then SIGKILL)"
        elif last.get("event") == "done":
            result["status"], result["error"] = last["status"], last.get("error")
        elif last.get("event") == "failed":
            result["status"], result["error"] = "failed", last["error"]
        else:
            result["status"] = "aborted" if (self.interrupted or self.s.stop_flag.is_set()) else "failed"
            result["error"] = ("interrupted" if result["status"] == "aborted" else
                               exit_cause(self.proc.returncode, result["events"], self.s.sys_dir / "runner.log"))
        if result["status"] == "failed":
            # Named while the data is still there: how much free space is left, how far it got.
            cause = space.no_space_cause(result["error"], self.s.data_dir, self.s.sys_dir / "runner.log")
            if cause:
                result["engine_error"], result["error"] = result["error"], cause
            result["last_events"] = [brief(e) for e in result["events"][-LAST_EVENTS:]]


def exit_cause(returncode: int, events: list[dict], log: Path) -> str:
    """Why a runner ended without a word, as a reader needs it: the signal by name, the phase it
    was in, and what its log says (or that the log is empty, so nobody goes looking there)."""
    if returncode < 0:
        name = signal.Signals(-returncode).name
        how = f"the runner was killed by {name}" + (" (kill -9, or the kernel's OOM killer)" if name == "SIGKILL" else "")
    else:
        how = f"the runner exited with code {returncode}"
    started = [e for e in events if e.get("event") == "phase_start"]
    ended = {e.get("phase") for e in events if e.get("event") == "phase_end"}
    open_phase = next((e["phase"] for e in reversed(started) if e.get("phase") not in ended), None)
    if open_phase:
        how += f" during phase {open_phase}"
    elif started:
        how += f" after phase {started[-1].get('phase')} ended"
    else:
        how += " before its first phase"
    tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
    return how + (f"; its log ({log}) ends: " + " | ".join(tail) if tail else "; its log is empty")


def activity(pids: list[int]) -> tuple[float, int]:
    """CPU seconds and bytes read and written so far by these processes (the watchdog's sign
    of life between phases)."""
    cpu, moved = 0.0, 0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            with process.oneshot():
                times, io = process.cpu_times(), process.io_counters()
            cpu += times.user + times.system
            moved += io.read_bytes + io.write_bytes
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return cpu, moved


def brief(event: dict) -> dict:
    """An event as the manifest keeps it among a system's last ones: without its histograms."""
    out = {k: v for k, v in event.items() if k not in ("engine", "traceback")}
    if isinstance(event.get("ops"), dict):  # an interval's: counts only
        out["ops"] = {name: {k: o.get(k) for k in ("count", "items", "errors")} for name, o in event["ops"].items()}
    return out
