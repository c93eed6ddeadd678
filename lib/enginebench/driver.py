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

import json
import shutil
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from . import settings
from .fidelity import departures
from .metrics.sampler import device_of
from .resources import space
from .resources.profiles import ResourcePlan, SystemResources, own_memory_lines, plan_resources
from .params import load_params
from .results import scratch as scratch_folders
from .results.rundir import RunFolder, settle_all
from . import loads, native, uri_target
from .families import family
from .params.plan import load_threads, plan_steps
from .supervision import RUNNER_ENV, Supervision, SystemRun
from .targets import TARGETS, resolve_target

# Test-only: keys added to every runner spec (hang_at_phase makes a runner hang; see lib/native).
SPEC_EXTRA: dict = {}


class RunAborted(KeyboardInterrupt):
    """The run was interrupted; its folder is kept and marked aborted."""


def _write_spec(folder: RunFolder, params: dict, system: dict, target: dict, sys_dir: Path, data_dir: Path,
                server=None, reuse: "KeptLoad | None" = None):
    """The runner's spec.json (its whole input), the command that runs it and what the progress
    display counts to. `server`: the server a mongod or uri system's runner is the client of;
    `reuse`: its kept load (phases.load.reuse)."""
    name = params["workload"]["name"]
    # Where a workload may keep files of its own (flashback: the recorder's capture, which the
    # systems after it replay from the run folder).
    context = {"run_dir": str(folder.path), "system_dir": str(sys_dir)}
    spec = {"system": {**system, "target": target["kind"]}, "data_dir": str(data_dir),
            "workload": {"name": name, "params": family(name).runner_params(params, system, folder.path, sys_dir)},
            "context": context, "plan": reuse.plan(plan_steps(params, system)) if reuse else plan_steps(params, system),
            "max_errors": params["phases"]["max_errors"],
            **SPEC_EXTRA}
    if server is not None:
        spec["server"] = server.runner_spec(system, keep_data=bool(params.get("keep_data")))
    expected = describe(params)["expected"]
    spec_path = sys_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=2))
    return spec_path, native.command(spec_path), expected


@dataclass
class KeptLoad:
    """A system's kept load (phases.load.reuse, loads.py): restored from `origin`, or kept
    under `key` after its load."""
    key: str
    origin: dict | None
    keeping: dict

    @classmethod
    def prepare(cls, folder: RunFolder, params: dict, system: dict, data_dir: Path, code: dict) -> "KeptLoad":
        key = loads.load_key(params, system, code)
        origin = loads.kept(key)
        if origin is not None:
            loads.restore(key, data_dir)
            print(f"[{system['label']}] load: a copy of {origin['run']}/{origin['system']}'s (phases.load.reuse)",
                  flush=True)
        return cls(key, origin, {"experiment": params["experiment"], "run": folder.run_id,
                                 "system": system["label"], "kept_at": folder.manifest.get("started_at")})

    def plan(self, steps: list[dict]) -> list[dict]:
        return loads.plan_with_reuse(steps, self.key, self.origin, self.keeping)


def describe(params: dict) -> dict:
    """What the experiment's load leaves, per collection, and its documents' sizes (the runner
    samples its own loaders: native.describe)."""
    name = params["workload"]["name"]
    return native.describe(name, family(name).describe_params(params), load_threads(params))


def _run_system(folder: RunFolder, params: dict, system: dict, target: dict, stop_flag: threading.Event,
                plan: ResourcePlan, scratch: scratch_folders.Scratch, data: dict | None, code: dict | None = None) -> dict:
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
    reuse = KeptLoad.prepare(folder, params, system, data_dir, code) if code is not None else None

    with SystemResources(plan, f"enginebench-{folder.run_id}-{label}", device_of(data_dir),
                         undo_dir=scratch.path) as resources:
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
            spec_path, command, expected = _write_spec(folder, params, system, target, sys_dir, data_dir, server, reuse)
            Supervision(SystemRun(folder, params, label, sys_dir, spec_path, data_dir, expected, stop_flag,
                                  resources, result, server, command, scratch)).run()
            _server_findings(result, server)
        finally:
            if server is not None:
                server.stop()
            if not params.get("keep_data"):
                shutil.rmtree(data_dir, ignore_errors=True)
            scratch.stopped()
            result["resources"] = resources.report()
            folder.record_system(result)
            _record_findings(folder, result)
    return result


# What a server system's run leaves beside its status, kept in its manifest entry.
FINDINGS = ("skipped", "unspread")


def _server_findings(result: dict, server) -> None:
    """What only the server side knows once the runner has ended: a server that refused the tables
    the system asked for (its LSM runs) skips the system, with the server's words and version,
    instead of failing it (mongod/tabletype.py); a sharded load that left a collection off a shard
    is recorded, and the report then judges none of the system's claims as sharded
    (mongod/sharding.py)."""
    if server is None:
        return
    refused = server.table_type_refusal()
    if refused and result["status"] == "failed":
        result["runner_error"] = result["error"]
        result["status"], result["error"], result["skipped"] = "skipped", refused["reason"], refused
    from .mongod.sharding import unspread, unspread_text
    found = unspread([e for e in result["events"] if e.get("event") == "db_stats"])
    if found:
        result["unspread"] = found
        for item in found:
            print(f"[{result['label']}] {unspread_text(result['label'], item)}: its claims are not judged as sharded",
                  file=sys.stderr, flush=True)


def _record_findings(folder: RunFolder, result: dict) -> None:
    """FINDINGS into the system's manifest entry (RunFolder.record_system keeps the status only)."""
    kept = {key: result[key] for key in FINDINGS + ("runner_error",) if result.get(key)}
    if kept and result["label"] in folder.systems:
        folder.systems[result["label"]].update(kept)
        folder.write_manifest()


ORDERS = ("listed", "reversed")


def run(exp: str, scale: str = "default", target: str = "auto", repeat: dict | None = None,
        systems: list[str] | None = None, sets: list[str] | None = None, order: str = "listed") -> Path:
    """Run an experiment; returns its results folder (status in its manifest.json). `repeat`
    ({group, index, of}) marks the run as one of a REPEAT=n group (report/repeats.py); `systems`
    (SYSTEMS=) runs only those of the params' systems; `order`: the systems as the params list
    them, or reversed (a repeated group alternates them so drift cancels, experiment.py)."""
    if order not in ORDERS:
        raise ValueError(f"order={order!r}; allowed: {', '.join(ORDERS)}")
    prepared = _prepare(exp, scale, target, systems, sets)
    if order == "reversed":
        prepared.systems = list(reversed(prepared.systems))
    params = prepared.params
    folder = RunFolder.create(params, prepared.resolved, prepared.resolved["banner"] + prepared.banner,
                              prepared.describe, RUNNER_ENV)
    scratch = scratch_folders.Scratch(params["experiment"], folder.run_id).create()
    if prepared.selection:
        folder.manifest["selection"] = prepared.selection
    if repeat:
        folder.manifest["repeat"] = repeat
    folder.manifest["order"] = {"kind": order, "systems": [s["label"] for s in prepared.systems]}
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
        status = _run_in_order(folder, prepared, stop_flag, scratch)
    except KeyboardInterrupt:
        stop_flag.set()
        status = "aborted"
        raise RunAborted(f"interrupted; what was measured is kept in {folder.path}") from None
    except Exception as exc:  # e.g. a cgroup could not be created: the run is failed, and says why
        status = "failed"
        folder.manifest["error"] = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        # A second SIGINT or SIGTERM while the run winds down (its data removed, its manifest
        # written) is held: raised here, it would leave the folder marked running.
        held = _hold_signals(stop_flag)
        try:
            status = run_status(status, folder.systems)
            scratch.remove(keep=bool(params.get("keep_data")))
            folder.finish(status)
        finally:
            for signum, handler in held.items():
                signal.signal(signum, handler)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    return folder.path


def run_status(status: str, systems: dict) -> str:
    """The run's status from its own and its systems': failed when a system did not complete, unless
    the run was aborted; a system skipped because its server refused it (LSM tables) leaves the run
    complete, as a system skipped before anything started does."""
    if status != "aborted" and any(r["status"] not in ("complete", "skipped") for r in systems.values()):
        return "failed"
    return status


def _hold_signals(stop_flag: threading.Event) -> dict:
    """Replace SIGINT's and SIGTERM's handlers by one that only sets stop_flag; the previous
    handlers, to restore (none off the main thread, where signals cannot be handled)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {signum: signal.signal(signum, lambda *_: stop_flag.set()) for signum in (signal.SIGINT, signal.SIGTERM)}


@dataclass
class Prepared:
    """Everything decided before anything starts: a bad input has failed by now."""
    params: dict
    resolved: dict          # the target (kind, banner, uri or binary)
    systems: list[dict]     # the systems that will run, in order
    system_plans: dict      # label -> its resource plan
    banner: list[str]
    describe: dict          # the experiment's resource plan, for the manifest
    data: object            # each system's expected data size (resources/space.py); None on uri
    selection: dict | None = None  # SYSTEMS=: {"ran": [...], "not_run": [...]}
    code: dict | None = None       # the code a kept load must match (phases.load.reuse), else None


def select_systems(params: dict, labels: list[str] | None) -> dict | None:
    """Keep only the systems named (SYSTEMS=, in the params' order); None when all run. An
    unknown label is an error naming the params file and the labels it has, before anything starts."""
    if not labels:
        return None
    known = [s["label"] for s in params["systems"]]
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise ValueError(f"{params['params_file']}: SYSTEMS={','.join(labels)}: no system labelled "
                         f"{', '.join(unknown)} at scale {params['scale']}; allowed: {', '.join(known)}")
    # A system the others need in the same run (Flashback's recorder) runs too, and says why.
    added = [label for label in family(params["workload"]["name"]).always_runs(params) if label not in labels]
    labels = [*labels, *added]
    if set(labels) == set(known):
        return None
    params["systems"] = [s for s in params["systems"] if s["label"] in labels]
    return {"ran": [s["label"] for s in params["systems"]],
            "not_run": [label for label in known if label not in labels], "added": added}


def _prepare(exp: str, scale: str, target: str, systems: list[str] | None = None,
             sets: list[str] | None = None) -> Prepared:
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; allowed: {', '.join(TARGETS)}")
    params = load_params(exp, scale, sets)
    selection = select_systems(params, systems)
    _clear_dead_runs()
    resolved = resolve_target(target, params)
    systems = params["systems"]
    if resolved["kind"] == "embedded":
        native.check_releases(params)  # an engine release the runner was not built with, named now
        native.check_host(params)  # an engine this host cannot start (PerconaFT under THP=always)
    if resolved["kind"] == "mongod":
        # Binaries identified and every system's options checked against its binary now: errors
        # (file, system, key, allowed values) and skipped systems are known before anything starts.
        from .mongod.systems import prepare_systems
        systems, notes = prepare_systems(params)
        resolved["banner"] = resolved["banner"] + notes
    if resolved["kind"] == "uri":
        resolved["banner"] = resolved["banner"] + uri_target.prepare(params, resolved.get("server_process"))
        systems = params["systems"]
    # Raises, starting nothing, when a required limit is impossible (for the run or any system).
    plan = plan_resources(params)
    system_plans = {s["label"]: plan_resources(params, s) for s in params["systems"]}
    banner = list(dict.fromkeys(plan.banner() + [line for p in system_plans.values() for line in p.banner()]
                                + own_memory_lines(system_plans)))
    banner += departures(params, resolved["kind"])  # where this run is not the post's setting
    banner.append(settings.banner(params))
    if params.get("sets"):
        banner.append("Set by hand for this run (--set): " + ", ".join(params["sets"]) + ".")
    if selection:
        banner.append(f"Only the systems selected with SYSTEMS= ran ({', '.join(selection['ran'])}); not run: "
                      f"{', '.join(selection['not_run'])}. Claims that need a system that did not run are not "
                      "evaluated.")
        if selection["added"]:
            banner.append(f"{', '.join(selection['added'])} ran too, though not selected: the others replay the "
                          "capture it records in the same run.")
    # How big each system's data gets (resources/space.py), where it is kept on this machine.
    data = None if resolved["kind"] == "uri" else space.data_estimate(describe(params))
    code = None
    if (params["phases"].get("load") or {}).get("reuse"):
        if resolved["kind"] != "embedded":
            raise ValueError(f"{params['params_file']}: phases.load.reuse: a kept load is for the embedded "
                             f"engines only; this run's target is {resolved['kind']}")
        code = loads.code_identity()
        banner.append("phases.load.reuse: each system starts from a copy of an earlier load of the same kind "
                      "when there is one (the engine closed and opened again before the measured phases).")
    return Prepared(params, resolved, systems, system_plans, banner, plan.describe(), data, selection, code)


def _run_in_order(folder: RunFolder, prepared: Prepared, stop_flag: threading.Event, scratch) -> str:
    """Each system in turn; the run's status. A failed system stops the run or not as
    supervision.on_failure says; an aborted one always does; a skipped one (its server refused
    it) never does."""
    params = prepared.params
    for system in prepared.systems:
        folder.probe_before(system["label"])
        result = _run_system(folder, params, system, prepared.resolved, stop_flag,
                             prepared.system_plans[system["label"]], scratch, prepared.data, prepared.code)
        if result["status"] != "complete":
            print(f"[{result['label']}] {result['status']}: {result['error']}", file=sys.stderr, flush=True)
        if result["status"] == "aborted":
            return "aborted"
        if result["status"] == "failed" and params["supervision"]["on_failure"] == "stop":
            folder.manifest["stopped"] = (f"The run stopped after {result['label']} failed "
                                          "(supervision.on_failure: stop); the systems after it did not run.")
            print(f"enginebench: {folder.manifest['stopped']}", file=sys.stderr, flush=True)
            break
    return "complete"


def _clear_dead_runs() -> None:
    """Runs whose driver ended without a word (killed outright, a crash, a reboot): their
    manifests are marked died, keeping what they measured, and their scratch folders, processes
    and cgroups removed. Said on the terminal, so nothing disappears silently."""
    for path in settle_all("the next run"):
        print(f"enginebench: {path}: its driver is gone; marked died (what it measured is kept)",
              file=sys.stderr, flush=True)
    for line in scratch_folders.reclaim():
        print(f"enginebench: {line}", file=sys.stderr, flush=True)
