"""The client runner of a mongod or uri system: opens the store, runs the phases, reports events.

    python -m enginebench.runner.child SPEC.json

Embedded systems run in the native runner (runner/native.py), which is the database server
itself. This Python runner is the client of a server the parent started (or was given): it
also emits dbStats/collStats after each phase and watches the replica sets for a stale secondary.
Every event is one JSON line on stdout; the parent keeps them, so whatever was measured before a
failure or an interrupt survives it. SIGINT/SIGTERM stop the workers and close the engine cleanly.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
import traceback

from ..workloads import build_workload
from .plan import Execution


def _emitter(keep: list):
    lock = threading.Lock()
    out = sys.stdout

    def emit(event: dict) -> None:
        line = json.dumps(event, default=str)
        if event.get("event") == "phase_end":
            keep.append(event)
        with lock:
            out.write(line + "\n")
            out.flush()
    return emit


def open_store(spec: dict):
    if spec["system"]["target"] == "embedded":
        raise RuntimeError("embedded systems run in the native runner (enginebench-runner run), not here")
    from ..stores.mongo import MongoStore
    return MongoStore(spec["uri"], spec.get("database", "enginebench"))


def _with_phase_stats(emit, holder):
    """After every phase of a server system: its dbStats and collStats."""
    def wrapped(event: dict) -> None:
        emit(event)
        store = holder["store"]
        if event.get("event") == "phase_end" and hasattr(store, "phase_stats"):
            try:
                emit({"event": "db_stats", "phase": event["phase"], "t": time.time(), **store.phase_stats()})
            except Exception as exc:  # sizes are extra; the phase's result stands
                emit({"event": "db_stats", "phase": event["phase"], "error": str(exc)})
    return wrapped


def _watch_replication(spec: dict, store, emit, abort: threading.Event, found: list) -> list:
    """One StaleWatch per multi-member replica set of a launched deployment. A too-stale secondary
    is a finding (the TokuMX post's RS102): it is recorded and stops the phase."""
    launch = spec["system"].get("mongod_launch") or {}
    options = launch.get("spec") or {}
    if options.get("on_stale_secondary", "stop") != "stop" or options.get("members", 1) < 2:
        return []
    import pymongo

    from ..mongod.replication import StaleWatch

    def on_stale(event: dict) -> None:
        found.append(event)
        emit(event)
        abort.set()
    watches = []
    for name, uri in (spec.get("replsets") or {}).items():
        client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
        watches.append(StaleWatch(client, options.get("lag_sample_s", 1.0), on_stale).start())
    store.watches = watches
    return watches


# Worker threads share one interpreter lock. A thread returning from an engine call that
# released the lock waits up to the switch interval (5 ms by default) behind any thread that is
# busy in Python: with a tight loop of fast queries beside them, writers convoy behind it and
# crawl (iibench's writers fell to a few calls a second). A short interval keeps the threads'
# shares fair, as separate client connections to a server would be.
SWITCH_INTERVAL_S = 0.0002


def main(argv: list[str]) -> int:
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    spec = json.loads(open(argv[0]).read())
    emitted: list[dict] = []
    emit = _emitter(emitted)
    abort = threading.Event()

    def on_signal(signum, _frame):
        emit({"event": "signal", "signal": signal.Signals(signum).name, "t": time.time()})
        abort.set()
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    emit({"event": "runner", "runner": "python", "pid": os.getpid(), "t": time.time()})
    holder = {"store": None}  # the open store (the cold start replaces it)
    watches: list = []
    try:
        return _run(spec, emit, emitted, abort, holder, watches)
    except Exception as exc:
        emit({"event": "failed", "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(),
              "t": time.time()})
        return 2
    finally:
        _release(spec, emit, holder, watches)


def _run(spec: dict, emit, emitted: list, abort: threading.Event, holder: dict, watches: list) -> int:
    """Opens the store, runs the plan, reports how it ended; the exit code."""
    stale: list[dict] = []
    store = holder["store"] = open_store(spec)
    if spec["system"]["target"] != "embedded":
        if spec.get("drop_database"):  # an existing deployment: start from an empty database
            store.client.drop_database(store.database)
        emit = _with_phase_stats(emit, holder)
        watches += _watch_replication(spec, store, emit, abort, stale)
    info = store.info()
    emit({"event": "store_info", "engine": info.engine, "version": info.version, "config": info.config,
          "atomic": store.atomic})
    workload = build_workload(spec["workload"]["name"], spec["workload"]["params"], spec.get("context"))
    holder["clients"] = clients = _client_pool(spec, workload, emit)

    def reopen():
        holder["store"] = open_store(spec)
        if watches:
            holder["store"].watches = watches
        return holder["store"]
    status = Execution(workload, store, emit, abort, data_dir=spec["data_dir"], max_errors=spec["max_errors"],
                       reopen=reopen, clients=clients).run(spec["plan"])
    if stale:
        # Stopped on purpose: what was measured up to the stale secondary is the result.
        emit({"event": "done", "status": "complete", "t": time.time(), "error": None, "stopped_by": "stale_secondary"})
        return 0
    errors = [e for e in emitted if e.get("event") == "phase_end" and e.get("error")]
    emit({"event": "done", "status": status, "t": time.time(),
          "error": errors[-1]["error"] if errors and status != "complete" else None})
    return 0 if status == "complete" else 3


def _client_pool(spec: dict, workload, emit):
    """The client processes of a server target's phases (runner/clients.py), or None when the
    workers are this process's threads (one process asked for, or a workload that keeps them)."""
    from .clients import ClientPool, default_processes
    asked = spec.get("client_processes")
    processes = (asked or default_processes()) if workload.client_processes else 1
    pool = ClientPool(spec, workload, processes) if processes > 1 else None
    emit({"event": "clients", "client_processes": processes, "asked": asked, "default": default_processes(),
          "pids": [p.pid for p in pool.processes] if pool else [],
          "why_threads": None if workload.client_processes else
          f"{spec['workload']['name']}: its workers share state the runner keeps; they are threads of the runner"})
    return pool


def _release(spec: dict, emit, holder: dict, watches: list) -> None:
    """Stops the client processes and the replication watches, drops a borrowed deployment's
    database, closes the store."""
    if holder.get("clients") is not None:
        holder["clients"].close()
    for watch in watches:
        watch.stop()
        watch.client.close()
    store = holder["store"]
    if store is None:
        return
    if spec.get("drop_database") and not spec.get("keep_data"):
        try:
            store.client.drop_database(store.database)
        except Exception as exc:
            emit({"event": "drop_failed", "error": str(exc)})
    try:
        store.close()
    except Exception as exc:  # the run's result stands; the close failure is reported
        emit({"event": "close_failed", "error": str(exc)})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
