"""One experiment, end to end: validate params, run each system in its own process, sample it,
and keep everything in a new, never-overwritten results folder (DESIGN §2, §5, §8).

The notebook calls `run(exp, scale, target)`; `python -m enginebench run EXP` does the same
headless. Interrupting (SIGINT or SIGTERM) stops the current system's runner cleanly, keeps
everything measured so far and marks the run aborted.

Every wait on a runner is bounded (watchdog.py): a runner that reports nothing, or nothing done,
for longer than the params' `supervision:` allows is killed and its system marked failed with
the reason and its last events; a system whose data cannot fit is refused before it starts, and
one that filled the disk says so (resources/space.py). Runs whose driver died without a word are
marked died, and their scratch folders removed, by the next run (results/rundir.py, scratch.py).
"""
from __future__ import annotations

import ctypes
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from .metrics import perfshare
from .metrics.sampler import Sampler, device_of
from .resources import space
from .resources.profiles import ResourcePlan, SystemResources, plan_resources
from .params import load_params
from .results import scratch as scratch_folders
from .results.rundir import RunFolder, settle_all
from .runner import native
from .targets import resolve_target
from .watchdog import Watchdog
from .workloads import build_workload, plan_steps, runner_params

TARGETS = ("auto", "embedded", "mongod", "uri")
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
# Test-only: keys added to every runner spec (hang_at_phase makes a runner hang; see lib/native).
SPEC_EXTRA: dict = {}


class RunAborted(KeyboardInterrupt):
    """The run was interrupted; its folder is kept and marked aborted."""


def _die_with_parent() -> None:
    # The runner must not outlive the parent (e.g. a killed notebook kernel): PR_SET_PDEATHSIG.
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGTERM)


class Progress:
    """tqdm bars on a terminal; one plain line per interval when headless or in a notebook
    kernel (papermill relays those lines to the terminal running `make experiment`)."""

    def __init__(self, label: str):
        self.label = label
        self.bar = None
        self.plain = not sys.stderr.isatty() or "ipykernel" in sys.modules

    def phase(self, name: str, total: float | None, unit: str) -> None:
        self.close()
        if not self.plain:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=f"{self.label} {name}", unit=unit, leave=True)

    def advance(self, amount: float, line: str) -> None:
        if self.bar is not None:
            self.bar.update(amount)
            self.bar.set_postfix_str(line, refresh=False)
        else:
            print(f"[{self.label}] {line}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _run_system(folder: RunFolder, params: dict, system: dict, target: dict, stop_flag: threading.Event,
                plan: ResourcePlan, scratch: scratch_folders.Scratch, data: dict | None) -> dict:
    label = system["label"]
    sys_dir = folder.system_dir(label)
    data_dir = scratch.system_dir(label)
    if data_dir.exists():
        shutil.rmtree(data_dir)
    result = {"label": label, "status": "running", "events": [], "error": None}
    if data is not None:  # data kept on this machine (embedded, mongod): will it fit?
        result["expected_size"] = space.expected_size(data, system)
        refused = space.refusal(data_dir, result["expected_size"])
        if refused:
            result["status"], result["error"] = "failed", refused
            folder.record_system(result)
            return result
    data_dir.mkdir(parents=True)
    phases = dict(params["phases"])
    # Where a workload may keep files of its own (flashback: the recorder's capture, which the
    # systems after it replay from the run folder).
    phases.update(run_dir=str(folder.path), system_dir=str(sys_dir))
    if not system.get("measure_requests", True):
        phases["intervals"] = 0
    spec = {"system": {**system, "target": target["kind"]}, "data_dir": str(data_dir),
            "workload": {"name": params["workload"]["name"],
                         "params": {k: v for k, v in params["workload"].items() if k != "name"}},
            "phases": phases, **SPEC_EXTRA}
    expected = build_workload(spec["workload"]).expected_after_load()  # what the progress bar counts to
    spec_path = sys_dir / "spec.json"
    if native.runs_natively(target["kind"], params["workload"]["name"]):
        spec["workload"]["params"] = runner_params(params, system, folder.path, sys_dir)
        spec.update(plan=plan_steps({**params, "phases": phases}), max_errors=phases["max_errors"])
        command = native.command(spec_path)
    else:
        command = None  # the Python runner, in the server's client environment
    spec_path.write_text(json.dumps(spec, indent=2))

    with SystemResources(plan, f"enginebench-{folder.run_id}-{label}", device_of(data_dir)) as resources:
        server = None
        try:
            # mongod/uri targets: the server runs outside the runner (mongod inside this
            # system's resource profile); the runner is only its client.
            from .mongod.systems import open_server
            try:
                server = open_server(system, target, sys_dir, data_dir, resources.preexec)
            except Exception as exc:  # launch failed: everything it started is stopped; next system
                result["status"], result["error"] = "failed", f"{type(exc).__name__}: {exc}"
                return result
            if server is not None:
                spec.update(uri=server.uri, database=server.database, replsets=server.replsets,
                            drop_database=target["kind"] == "uri",
                            keep_data=bool(params.get("keep_data")))
                spec_path.write_text(json.dumps(spec, indent=2))
            _supervise(folder, params, label, sys_dir, spec_path, data_dir, expected, phases, stop_flag,
                       resources, result, server, command, scratch)
        finally:
            if server is not None:
                server.stop()
            if not params.get("keep_data"):
                shutil.rmtree(data_dir, ignore_errors=True)
            scratch.stopped()
            result["resources"] = resources.report()
            folder.record_system(result)
    return result


def _activity(pids: list[int]) -> tuple[float, int]:
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


def _brief(event: dict) -> dict:
    """An event as the manifest keeps it among a system's last ones: without its histograms."""
    out = {k: v for k, v in event.items() if k not in ("engine", "traceback")}
    if isinstance(event.get("ops"), dict):  # an interval's: counts only
        out["ops"] = {name: {k: o.get(k) for k in ("count", "items", "errors")} for name, o in event["ops"].items()}
    return out


def _supervise(folder, params, label, sys_dir, spec_path, data_dir, expected, phases, stop_flag, resources,
               result, server=None, command=None, scratch=None) -> None:
    """Start the runner inside the system's resource profile, relay and keep its events, sample it,
    and bound every wait on it (watchdog.py).

    A reader thread drains the runner's stdout into a queue the whole time, so the runner can
    never block on a full pipe, not even while it is being stopped.
    """
    def preexec():
        _die_with_parent()
        if server is None:  # an embedded runner is the server; a mongod's client stays outside
            resources.preexec()
    stderr = open(sys_dir / "runner.log", "w")
    python = server.python if server is not None else sys.executable  # legacy pymongo for old servers
    proc = subprocess.Popen(command or [python, "-m", "enginebench.runner.child", str(spec_path)],
                            stdout=subprocess.PIPE, stderr=stderr, text=True, preexec_fn=preexec,
                            env={**os.environ, **RUNNER_ENV})
    lines: queue.Queue = queue.Queue()

    def read_events():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # end of stream: the runner has closed its stdout
    threading.Thread(target=read_events, name="runner-events", daemon=True).start()
    watched = [proc.pid] + (list(server.pids) if server is not None else [])
    if scratch is not None:  # so that a later run can end them if this driver dies
        scratch.started(watched)
    plan = json.loads(spec_path.read_text()).get("plan") or []
    watchdog = Watchdog(params["supervision"], max((s.get("seconds", 0) for s in plan if s.get("step") == "quiesce"),
                                                   default=0.0))
    hung = None
    if server is None:
        sampler = Sampler([proc.pid], data_dir, params["metrics"]["sample_s"], extra=resources.io_counters)
    else:  # the server processes, summed and one by one
        sampler = Sampler(server.pids, data_dir, params["metrics"]["sample_s"],
                          extra=lambda: {**resources.io_counters(), **server.counters()})
    sampler.start()
    progress = Progress(label)
    interrupted = False
    events_file = open(sys_dir / "events.jsonl", "w")
    # Samples go to disk as they come, so a driver killed outright leaves them for its run's
    # folder (results/rundir.py settle) as it leaves the events.
    samples_file = open(sys_dir / "samples.jsonl", "w")
    samples_written = 0

    def save_samples():
        nonlocal samples_written
        taken = sampler.samples[samples_written:]
        for row in taken:
            samples_file.write(json.dumps(row) + "\n")
        samples_file.flush()
        samples_written += len(taken)
    # Whose code the native runner's CPU went to, per phase (metrics/perfshare.py).
    profile, reason = (perfshare.available() if command else (False, "a server target: its own processes"))
    result["cpu_attribution"] = {} if profile else {"unavailable": reason}
    profiler = None

    def keep(line: str) -> dict:
        events_file.write(line)
        events_file.flush()
        event = json.loads(line)
        result["events"].append(event)
        return event
    final_at = None  # when the runner sent its last event (done, failed)
    overdue = False  # it sent it, and did not exit
    next_check = 0.0
    try:
        while True:
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                line = ""
            if time.monotonic() >= next_check:  # also while events flow: a livelock reports often
                next_check = time.monotonic() + 0.5
                save_samples()
                if final_at is not None and time.monotonic() - final_at > EXIT_GRACE_S:
                    result["exit_note"] = f"the runner did not exit within {EXIT_GRACE_S} s of its last event; killed"
                    overdue = True
                    break
                hung = watchdog.check(*_activity(watched))
                if hung:
                    print(f"[{label}] {hung}; stopping the runner (SIGTERM, then SIGKILL after {HUNG_GRACE_S} s)",
                          file=sys.stderr, flush=True)
                    _stop(proc, lines, keep, HUNG_GRACE_S)
                    break
            if line == "":
                continue
            if line is None:
                break
            event = keep(line)
            watchdog.event(event)
            if event.get("event") in ("done", "failed"):
                final_at = time.monotonic()
            if event.get("event") == "load_verified" and not resources.plan.storage_during_load:
                resources.limit_storage()  # the measured phases run on the profile's device
            if profile and event.get("event") == "phase_start":
                profiler = perfshare.Profiler(proc.pid, sys_dir / f"perf-{event['phase'].replace(' ', '_')}.data")
                if scratch is not None:
                    scratch.started(watched + [profiler.proc.pid])
            elif profiler is not None and event.get("event") == "phase_end":
                result["cpu_attribution"][event["phase"]] = profiler.stop(command[0])
                profiler = None
            _show(progress, event, expected, phases)
        try:
            proc.wait(timeout=0 if overdue or hung else EXIT_GRACE_S)  # its output has ended: it is exiting
        except subprocess.TimeoutExpired:
            result.setdefault("exit_note", f"the runner closed its output but did not exit within {EXIT_GRACE_S} s; "
                                           "killed")
            _stop(proc, lines, keep, 0)
    except BaseException:
        # Interrupted: stop the runner (it closes the engine cleanly), keeping what it still sends.
        interrupted = True
        _stop(proc, lines, keep)
        raise
    finally:
        if proc.poll() is None:  # never delete files under a live engine
            _stop(proc, lines, keep)
        if profiler is not None:
            profiler.stop(command[0])
        progress.close()
        sampler.stop()
        if server is not None:  # never delete a dbpath under a live mongod
            server.stop()
        stderr.close()
        events_file.close()
        save_samples()
        samples_file.close()
        samples = sampler.samples
        result["samples"] = samples
        result["sampler_cpu_s"] = sampler.cpu_s
        result["device"] = sampler.device.name if sampler.device else None
        final = [e for e in result["events"] if e.get("event") in ("done", "failed")]
        last = final[-1] if final else {}
        if hung:
            result["status"] = "failed"
            result["error"] = f"{hung}; the runner was stopped (SIGTERM, then SIGKILL)"
        elif last.get("event") == "done":
            result["status"], result["error"] = last["status"], last.get("error")
        elif last.get("event") == "failed":
            result["status"], result["error"] = "failed", last["error"]
        else:
            result["status"] = "aborted" if (interrupted or stop_flag.is_set()) else "failed"
            result["error"] = ("interrupted" if result["status"] == "aborted" else
                               f"runner exited with code {proc.returncode}; see {sys_dir / 'runner.log'}")
        if result["status"] == "failed":
            # Named while the data is still there: how much free space is left, how far it got.
            cause = space.no_space_cause(result["error"], data_dir)
            if cause:
                result["engine_error"], result["error"] = result["error"], cause
            result["last_events"] = [_brief(e) for e in result["events"][-LAST_EVENTS:]]
        if not params.get("keep_data"):
            shutil.rmtree(data_dir, ignore_errors=True)


def _stop(proc: subprocess.Popen, lines: queue.Queue, keep, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM the runner, keep its last events, SIGKILL it after the grace period. Further
    SIGINT/SIGTERM while stopping are held back: abandoning a live runner would leak it."""
    held = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            held[signum] = signal.signal(signum, lambda *_: None)
    def keep_quietly(line):
        if line is not None:
            try:
                keep(line)
            except ValueError:
                pass  # a partial last line of a killed runner

    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        deadline = time.time() + grace_s
        while proc.poll() is None and time.time() < deadline:
            try:
                keep_quietly(lines.get(timeout=0.2))
            except queue.Empty:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        while not lines.empty():  # whatever the runner wrote before it ended
            keep_quietly(lines.get_nowait())
    finally:
        for signum, handler in held.items():
            signal.signal(signum, handler)


def _show(progress: Progress, event: dict, expected: dict, phases: dict) -> None:
    kind = event["event"]
    if kind == "phase_start":
        if event["phase"] == "load":
            progress.phase("load", sum(expected.values()), "docs")
        elif event["phase"] in ("run", "warmup"):
            progress.phase(event["phase"], event["duration_s"], "s")
    elif kind == "interval":
        seconds = max(event["t_end"] - event["t_start"], 1e-9)
        # Count what the workload's tables count (e.g. iibench: documents of INSERT calls only).
        accounting = event.get("accounting") or {}
        counted = {name: o for name, o in event["ops"].items()
                   if not accounting.get("rate_ops") or name in accounting["rate_ops"]}
        if accounting.get("rate") == "items":
            amount, unit = sum(o["items"] for o in counted.values()), "docs"
        else:
            amount, unit = sum(o["count"] for o in counted.values()), "ops"
        line = f"{event['phase']} interval {event['interval'] + 1}: {amount / seconds:,.0f} {unit}/s"
        if event["phase"] == "load":
            progress.advance(sum(o["items"] for name, o in event["ops"].items() if name in counted), line)
        else:
            progress.advance(seconds, line)
    elif kind in ("load_verified", "consistency", "failed"):
        summary = {k: v for k, v in event.items() if k not in ("event", "traceback", "examples")}
        progress.advance(0, f"{kind}: {summary}")


def run(exp: str, scale: str = "default", target: str = "auto", repeat: dict | None = None) -> Path:
    """Run an experiment; returns its results folder (status in its manifest.json). `repeat`
    ({group, index, of}) marks the run as one of a REPEAT=n group (report/repeats.py)."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; allowed: {', '.join(TARGETS)}")
    params = load_params(exp, scale)
    _clear_dead_runs()
    resolved = resolve_target(target, params)
    systems = params["systems"]
    if resolved["kind"] == "mongod":
        # Binaries identified and every system's options checked against its binary now: errors
        # (file, system, key, allowed values) and skipped systems are known before anything starts.
        from .mongod.systems import prepare_systems
        systems, notes = prepare_systems(params)
        resolved["banner"] = resolved["banner"] + notes
    # Raises, starting nothing, when a required limit is impossible (for the run or any system).
    plan = plan_resources(params)
    system_plans = {s["label"]: plan_resources(params, s) for s in params["systems"]}
    banner = list(dict.fromkeys(plan.banner() + [line for p in system_plans.values() for line in p.banner()]))
    # How big each system's data gets (resources/space.py), where it is kept on this machine.
    data = None if resolved["kind"] == "uri" else space.data_estimate(build_workload(
        {"name": params["workload"]["name"], "params": {k: v for k, v in params["workload"].items() if k != "name"}}))
    folder = RunFolder.create(params, resolved, resolved["banner"] + banner, plan.describe(), RUNNER_ENV)
    scratch = scratch_folders.Scratch(params["experiment"], folder.run_id).create()
    if repeat:
        folder.manifest["repeat"] = repeat
        folder.write_manifest()
    stop_flag = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        def on_term(signum, _frame):
            stop_flag.set()
            raise RunAborted(f"received {signal.Signals(signum).name}")
        previous = signal.signal(signal.SIGTERM, on_term)
    status = "complete"
    try:
        for system in systems:
            result = _run_system(folder, params, system, resolved, stop_flag, system_plans[system["label"]],
                                 scratch, data)
            if result["status"] != "complete":
                print(f"[{result['label']}] {result['status']}: {result['error']}", file=sys.stderr, flush=True)
            if result["status"] == "aborted":
                status = "aborted"
                break
            if result["status"] == "failed" and params["supervision"]["on_failure"] == "stop":
                folder.manifest["stopped"] = (f"The run stopped after {result['label']} failed "
                                              "(supervision.on_failure: stop); the systems after it did not run.")
                print(f"enginebench: {folder.manifest['stopped']}", file=sys.stderr, flush=True)
                break
    except KeyboardInterrupt:
        stop_flag.set()
        status = "aborted"
        raise RunAborted(f"interrupted; what was measured is kept in {folder.path}") from None
    except Exception as exc:  # e.g. a cgroup could not be created: the run is failed, and says why
        status = "failed"
        folder.manifest["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if status != "aborted" and any(r["status"] != "complete" for r in folder.systems.values()):
            status = "failed"
        scratch.remove(keep=bool(params.get("keep_data")))
        folder.finish(status)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return folder.path


def _clear_dead_runs() -> None:
    """Runs whose driver ended without a word (killed outright, a crash, a reboot): their
    manifests are marked died, keeping what they measured, and their scratch folders, processes
    and cgroups removed. Said on the terminal, so nothing disappears silently."""
    for path in settle_all("the next run"):
        print(f"enginebench: {path}: its driver is gone; marked died (what it measured is kept)",
              file=sys.stderr, flush=True)
    for line in scratch_folders.reclaim():
        print(f"enginebench: {line}", file=sys.stderr, flush=True)
