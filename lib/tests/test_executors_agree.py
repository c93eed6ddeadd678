"""Same seed, same operations on every executor: one experiment of each family runs its first
system on the embedded engine, on the Java stand-in through the Rust driver and through the
legacy pymongo 3 executor, and on FerretDB through the driver, with one worker per phase and the
workloads' clock fixed; the runner records every Store call (calls::recording), and each
worker's calls must be the same on every executor.

A load is compared whole; a timed phase issues as many calls as its executor manages in its
time, so it is compared over the calls every executor made (at least MIN_COMMON of them).
ObjectIds that a worker generates per call are the only values set aside.
"""
import json
import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

from enginebench import driver

# One experiment per family, small enough for FerretDB (which scans a collection for any
# equality but _id), one worker per phase, short timed phases.
RUNS = {
    "linkbench_cached": ["workload.maxid1=201", "workload.max_degree=20", "phases.load.threads=1",
                         "phases.measure.threads=1", "phases.measure.duration_s=2", "phases.rate_sweep=null"],
    # Writers paced (the Java client's one-second window), so the query thread runs on every executor.
    "iibench_500m": ["workload.max_rows=400", "workload.query_begin_docs=100", "workload.max_inserts_per_second=200",
                     "phases.load.threads=1"],
    "sysbench_cgroups": ["workload.collections=2", "workload.docs_per_collection=100", "workload.docs_per_insert=50",
                         "phases.load.threads=1", "phases.measure.threads=1", "phases.measure.duration_s=2"],
    "tokumx_concurrency": ["workload.documents=300", "phases.measure.threads=[1]", "phases.measure.duration_s=1"],
    "flashback_replay": ["workload.users=50", "workload.posts=300", "workload.duration_s=1", "phases.load.threads=1",
                         "phases.measure.threads=1"],
}
MIN_COMMON = 20
OID = re.compile(r'ObjectId\("[0-9a-f]{24}"\)')


def _record(exp: str, target: str, tmp_path: Path, monkeypatch, uri: str | None = None, executor: str | None = None):
    """The first system's recorded calls, by (phase, worker)."""
    from enginebench.params import load_params
    label = load_params(exp, "smoke")["systems"][0]["label"]
    out = tmp_path / f"{target}-{executor}-{(uri or '').rsplit(':', 1)[-1].strip('/')}"
    out.mkdir()
    monkeypatch.setenv("ENGINEBENCH_RESULTS", str(out / "results"))
    monkeypatch.setenv("ENGINEBENCH_DATA", str(out / "data"))
    if uri:
        monkeypatch.setenv("ENGINEBENCH_URI", uri)
    if executor:
        monkeypatch.setenv("ENGINEBENCH_EXECUTOR", executor)
    monkeypatch.setitem(driver.SPEC_EXTRA, "record_calls", str(out / "{label}.calls.jsonl"))
    monkeypatch.setitem(driver.SPEC_EXTRA, "fixed_clock_ms", 1_700_000_000_000)
    run_dir = driver.run(exp, "smoke", target, systems=[label], sets=RUNS[exp])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete", manifest["systems"]
    # On a server the system is labelled by the server's name (uri_target.py).
    ran = next(iter(manifest["systems"]))
    calls = defaultdict(list)
    for line in (out / f"{ran}.calls.jsonl").read_text().splitlines():
        call = json.loads(line)
        calls[(call["phase"], call["worker"])].append(f"{call['call']} {OID.sub('ObjectId', call['args'])}")
    return calls, manifest["params"]["phases"]


def _compare(reference: dict, other: dict, timed: set[str], what: str) -> None:
    assert set(other) == set(reference), f"{what}: workers differ: {sorted(other)} != {sorted(reference)}"
    for key, calls in reference.items():
        theirs = other[key]
        if key[0] in timed:
            n = min(len(calls), len(theirs))
            assert n >= MIN_COMMON, f"{what} {key}: only {n} calls in common"
            calls, theirs = calls[:n], theirs[:n]
        for i, (mine, yours) in enumerate(zip(calls, theirs)):
            assert mine == yours, f"{what} {key} call {i}:\n  embedded: {mine}\n  {what}: {yours}"
        assert len(calls) == len(theirs), f"{what} {key}: {len(theirs)} calls, the embedded engine {len(calls)}"


def _counted_before_listed(calls: dict, what: str) -> None:
    """LinkbenchX's GET_LINKS_LIST (getLinkListImpl): the cursor's size(), a count of the same
    range, right before the find; the server target sends each as its own command (count, then
    find: target/server/commands.rs)."""
    lists = 0
    for key, sequence in calls.items():
        for i, call in enumerate(sequence):
            if call.startswith('scan link Some("id1_type")'):
                lists += 1
                before = sequence[i - 1] if i else None
                assert before == "count" + call[len("scan"):], f"{what} {key} call {i}: {before!r} before {call!r}"
    assert lists > 0, f"{what}: no GET_LINKS_LIST reached the find"


@pytest.mark.parametrize("exp", sorted(RUNS))
def test_every_executor_issues_the_same_operations(exp, tmp_path, monkeypatch, standin_uri, ferretdb_uri):
    reference, _ = _record(exp, "embedded", tmp_path, monkeypatch)
    # Measured phases are timed; so is iibench's load, whose query thread runs while the writers do.
    untimed = {"setup", "verify", "check"} | ({"load"} if exp != "iibench_500m" else set())
    timed = {phase for phase, _ in reference} - untimed
    for uri, executor, what in ((standin_uri, "driver", "the stand-in through the Rust driver"),
                                (standin_uri, "legacy", "the stand-in through the legacy executor"),
                                (ferretdb_uri, "driver", "FerretDB through the Rust driver")):
        with monkeypatch.context() as m:
            calls, _ = _record(exp, "uri", tmp_path, m, uri, executor)
        _compare(reference, calls, timed, what)
        if exp == "linkbench_cached":
            _counted_before_listed(calls, what)
