"""The submitting side of `make all CLUSTER=<address>`: checks the cluster before anything starts,
hands each free host a unit (placement.py), merges what comes back into the results folder,
keeps the ledger, reports every unit that did not complete with the command that re-runs it
alone, and ends with the collection page over every host's runs.

A unit whose host dies is failed, never silently run again elsewhere: the scheduler must be
started with distributed.scheduler.allowed-failures = 0 (checked here), so the loss of the worker
running it errs the unit at once.
"""
from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from ..collection import chosen_experiments, reusable_runs
from ..params import load_params
from ..paths import results_dir
from ..results.provenance import git_state
from . import RESOURCE
from .host import describe, run_unit
from .ledger import Ledger
from .placement import Unit, next_unit
from .transfer import unpack

CONNECT_TIMEOUT_S = 10
POLL_S = 2.0
ADDRESS = re.compile(r"((tcp|tls)://)?[A-Za-z0-9_.\-\[\]:]+:\d+")
ALLOWED_FAILURES = "distributed.scheduler.allowed-failures"


def say(text: str) -> None:
    print(f"[cluster] {text}", file=sys.stderr, flush=True)


def connect(address: str):
    """A client of the scheduler at address; a clear error naming CLUSTER when none answers."""
    from distributed import Client
    if not ADDRESS.fullmatch(address or ""):
        raise ValueError(f"CLUSTER={address!r}: not a scheduler address; give tcp://<host>:<port> "
                         "(`dask scheduler` prints it, port 8786 by default)")
    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
    except OSError as exc:
        raise ValueError(f"CLUSTER={address}: no Dask scheduler answered within {CONNECT_TIMEOUT_S} s ({exc}); "
                         "start one with `dask scheduler` (docs/cluster.md)") from None


def resource_workers(client) -> dict[str, dict]:
    """The workers that declared the resource (`--resources enginebench=1`), by address."""
    workers = client.scheduler_info()["workers"]
    return {address: info for address, info in workers.items()
            if (info.get("resources") or {}).get(RESOURCE, 0) >= 1}


def check_cluster(client, address: str, shared: str | None) -> dict[str, dict]:
    """Every host's facts by worker address, once the cluster is fit to run the collection: a lost
    unit fails (allowed-failures 0), at least one worker holds the resource, every host's
    checkout is at this commit, and no two hosts share a name. Anything else is one error."""
    allowed = client.run_on_scheduler(_scheduler_setting, ALLOWED_FAILURES)
    if allowed != 0:
        raise ValueError(f"CLUSTER={address}: the scheduler runs a task again when its worker dies "
                         f"({ALLOWED_FAILURES} is {allowed}), which would re-run a lost unit on another host "
                         "unseen; start it with DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0 (docs/cluster.md)")
    workers = resource_workers(client)
    if not workers:
        raise ValueError(f"CLUSTER={address}: no worker declares the {RESOURCE} resource; start one on each host "
                         f"with `dask worker {address} --resources {RESOURCE}=1 --nthreads 1` (docs/cluster.md)")
    facts = client.run(describe, shared, workers=list(workers))
    problems, names = [], {}
    for worker, host in facts.items():
        problems += host_problems(worker, host, names, shared)
        names[host["host"]] = worker
    if problems:
        raise ValueError(f"CLUSTER={address}: " + "; ".join(problems))
    return facts


def host_problems(worker: str, host: dict, names: dict[str, str], shared: str | None) -> list[str]:
    """Why a host cannot take units: another commit, a name another worker gives, an unwritable
    shared folder (names: host name -> worker address of the hosts already accepted)."""
    code, problems = git_state(), []
    if host["sha"] != code.get("sha"):
        problems.append(f"{host['host']} ({worker}) has its checkout at {host['sha'] or 'no commit'}, this one is "
                        f"at {code.get('sha')}: check out the same commit there and restart its worker")
    if names.get(host["host"], worker) != worker:
        problems.append(f"two workers name their host {host['host']} ({names[host['host']]}, {worker}): set "
                        "ENGINEBENCH_HOST_NAME on each to tell them apart")
    if shared and not host.get("shared_writable"):
        problems.append(f"{host['host']} cannot write to SHARED={shared}")
    return problems


def _scheduler_setting(key: str):
    """A setting as the scheduler's own process reads it (run there by run_on_scheduler)."""
    import dask
    return dask.config.get(key, None)


def plan(names: list[str], scale: str, target: str, repeat: int, force: bool) -> tuple[list[Unit], dict[str, set[str]]]:
    """The units to run, and per experiment the hosts whose runs of this code and params are
    already here. A unit already merged from this code and params (collection.reusable_runs'
    rule) is skipped, and said so."""
    from ..targets import resolve_target
    units, ran = [], {}
    for exp in names:
        kind = resolve_target(target, load_params(exp, scale))["kind"]
        done = [] if force else reusable_runs(exp, scale, kind)
        ran[exp] = {_host_of(run) for run in done}
        for index in range(1, repeat + 1):
            if index <= len(done):
                say(f"{exp} #{index}: skipped, {done[index - 1].name} is a complete run of this code and these "
                    "params (FORCE=1 re-runs it)")
            else:
                units.append(Unit(exp, index))
    return units, ran


def _host_of(run: Path) -> str:
    return ((json.loads((run / "manifest.json").read_text()).get("host") or {}).get("hostname") or "").split(".")[0]


def run_on_cluster(address: str, scale: str = "smoke", target: str = "auto", force: bool = False,
                   only: str | None = None, repeat: int = 1, shared: str | None = None) -> tuple[Path, dict]:
    """The collection on the cluster at address; (the collection page, the ledger's data)."""
    from distributed import Event
    from ..report.collection import write_collection
    if repeat < 1:
        raise ValueError(f"REPEAT={repeat}: must be a whole number, 1 or more")
    names = chosen_experiments(only)
    if shared and not Path(shared).is_dir():
        raise ValueError(f"SHARED={shared}: not a folder on this machine; it must be the same folder on every host")
    client = connect(address)
    try:
        hosts = check_cluster(client, address, shared)
        units, ran = plan(names, scale, target, repeat, force)
        ledger = Ledger({"cluster": address, "scale": scale, "target": target, "repeat": repeat,
                         "experiments": names, "shared": shared, "code": git_state().get("sha")})
        stamp = ledger.path.stem
        for unit in units:
            ledger.note(unit.id, experiment=unit.experiment, index=unit.index, status="waiting")
        say(f"{len(units)} unit(s) on {len(hosts)} host(s) ({', '.join(sorted(h['host'] for h in hosts.values()))}); "
            f"ledger {ledger.path}")
        stop = Event(f"enginebench-stop-{stamp}", client=client)
        try:
            _run_units(client, units, hosts, ran, ledger, {"scale": scale, "target": target, "shared": shared,
                                                          "stamp": stamp, "stop": stop.name}, shared)
        except BaseException as exc:  # Ctrl-C, or this side failed: what the hosts run would come back to no one
            try:
                stop.set()  # each running unit stops its experiment, whose driver marks the run aborted
            except (OSError, TimeoutError):  # the scheduler is gone too: its workers' units end with it
                pass
            for unit_id, entry in ledger.data["units"].items():
                if entry["status"] == "running":
                    ledger.note(unit_id, status="interrupted", error=f"the submitting side stopped: {exc!r}")
            say("stopped: running the same command again resumes (units already merged from this code and params "
                "are skipped)")
            raise
        ledger.finish()
    finally:
        client.close()
    report(ledger, address, scale)
    page = write_collection()
    say(f"page: {page}")
    return page, ledger.data


def _run_units(client, units: list[Unit], hosts: dict[str, dict], ran: dict[str, set[str]], ledger: Ledger,
               common: dict, shared: str | None) -> None:
    """Hands each free host the unit placement gives it, one at a time per host, until every unit
    has an outcome or no host is left."""
    from distributed import wait
    waiting = list(units)
    running: dict = {}  # future -> (unit, worker address)
    refused: set[str] = set()
    while waiting or running:
        workers = {w: info for w, info in resource_workers(client).items() if w not in refused}
        new = [w for w in workers if w not in hosts]
        if new:  # a host that joined (or a worker restarted) is checked before it gets work
            try:
                joined = client.run(describe, shared, workers=new)
            except (OSError, TimeoutError):  # gone again already: looked at next time, if it is back
                joined = {}
            for worker in new:
                live_names = {hosts[w]["host"]: w for w in workers if w in hosts}
                problems = host_problems(worker, joined[worker], live_names, shared) if worker in joined else ["gone"]
                if worker in joined and problems:
                    refused.add(worker)
                    say(f"{joined[worker]['host']} joined but gets no unit: {'; '.join(problems)}")
                elif worker in joined:
                    hosts[worker] = joined[worker]
                    say(f"{hosts[worker]['host']} joined")
            workers = {w: info for w, info in workers.items() if w in hosts}
        live = {hosts[w]["host"] for w in workers}
        busy = {worker for _, worker in running.values()}
        for worker in workers:
            if worker in busy or not waiting:
                continue
            unit = next_unit(waiting, hosts[worker]["host"], ran, live)
            if unit is None:
                continue
            waiting.remove(unit)
            ran.setdefault(unit.experiment, set()).add(hosts[worker]["host"])
            spec = {"id": f"{common['stamp']}-{unit.id}", "experiment": unit.experiment, **common}
            future = client.submit(run_unit, spec, key=f"enginebench-{spec['id']}", workers=[worker],
                                   allow_other_workers=False, resources={RESOURCE: 1}, pure=False, retries=0)
            running[future] = (unit, worker)
            ledger.note(unit.id, status="running", host=hosts[worker]["host"], worker=worker,
                        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
            say(f"{unit.id}: started on {hosts[worker]['host']}")
        if not running:
            if not workers:
                for unit in waiting:
                    ledger.note(unit.id, status="not run", error="no host with the resource was left in the cluster")
                say(f"no host left in the cluster; {len(waiting)} unit(s) not run")
                return
            time.sleep(POLL_S)
            continue
        try:
            done, _ = wait(list(running), timeout=POLL_S, return_when="FIRST_COMPLETED")
        except TimeoutError:  # none finished in this poll
            done = set()
        for future in list(running):
            unit, worker = running[future]
            gone = worker not in workers and future not in done
            if future in done or gone:
                del running[future]
                _settle(future, unit, hosts[worker]["host"], worker, ledger, gone)


def _settle(future, unit: Unit, host: str, worker: str, ledger: Ledger, gone: bool) -> None:
    """One unit's outcome into the ledger, its run folder into the results."""
    from distributed import KilledWorker
    lost = f"{host} ({worker}) died or left the cluster while running it"
    if gone or future.status == "cancelled":
        future.cancel()
        ledger.note(unit.id, status="lost", error=lost)
        say(f"{unit.id}: lost: {lost}")
        return
    if future.status == "error":
        exc = future.exception()
        died = isinstance(exc, KilledWorker)  # the scheduler's word for a task whose worker was lost
        error = lost if died else f"{type(exc).__name__}: {exc}"
        ledger.note(unit.id, status="lost" if died else "failed", error=error)
        say(f"{unit.id}: {'lost' if died else 'failed'}: {error}")
        future.release()
        return
    outcome = future.result()
    future.release()  # gathered: the host holds nothing more the scheduler could recompute
    fields = {"status": outcome["status"], "run_id": outcome["run_id"], "error": outcome["error"],
              "seconds": outcome.get("seconds")}
    try:
        folder = _merge(outcome, unit)
        fields["merged"] = str(folder) if folder else None
    except (OSError, ValueError) as exc:
        fields.update(status="failed", error=f"its run could not be merged: {exc}")
    ledger.note(unit.id, **fields)
    what = f"run {fields['run_id']}" if fields["run_id"] else "no run"
    say(f"{unit.id} on {host}: {fields['status']} ({what}, {fields['seconds']} s)"
        + (f": {fields['error'].splitlines()[0]}" if fields["status"] != "complete" and fields["error"] else ""))


def _merge(outcome: dict, unit: Unit) -> Path | None:
    """The unit's run folder in the results folder (unpacked, or already in the shared folder);
    the newest complete run's report is published to reports/ as a local run's is."""
    from ..experiment import publish_if_latest_complete
    if outcome.get("archive"):
        folder, _ = unpack(outcome["archive"], results_dir())
    elif outcome.get("shared_path"):
        folder = Path(outcome["shared_path"])
    else:
        return None
    if (folder / "report.html").is_file():
        publish_if_latest_complete(unit.experiment, folder, folder / "report.html")
    return folder


def report(ledger: Ledger, address: str, scale: str) -> None:
    """Every unit's outcome in one line; for each that did not complete, the command that runs it
    alone."""
    units = ledger.data["units"].values()
    complete = [u for u in units if u["status"] == "complete"]
    say(f"{len(complete)} of {len(units)} unit(s) complete; ledger {ledger.path}")
    for entry in units:
        if entry["status"] != "complete":
            error = (entry.get("error") or "").splitlines()[0] if entry.get("error") else ""
            say(f"{entry['unit']} {entry['status']} on {entry.get('host') or 'no host'}: {error}; re-run it alone: "
                f"make all SCALE={scale} CLUSTER={address} EXPERIMENTS={entry['experiment']}")
