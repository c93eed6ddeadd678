"""Client processes for server targets (runner/clients.py): a phase whose workers run in several
processes issues, worker by worker, the same operations as when they are threads of the runner,
for the same seed; shared state (work queues, iibench's counters) stays right across processes;
and the per-process histograms merge exactly."""
import json
import random
import threading

import pytest
from hdrh.histogram import HdrHistogram

from client_recording import RecordingStore, open_recording_store, recorded
from enginebench.runner.clients import ClientPool
from enginebench.runner.phases import run_phase
from enginebench.runner.recorder import IntervalShare, PhaseClock, Recorder, decode_share, encode_share, new_histogram
from enginebench.workloads import build_workload

PROCESSES = 2


def run(folder, name: str, params: dict, kind: str, args: tuple, processes: int, duration_s=None):
    """One phase of a workload on recording stores; (each worker's calls, the phase's events)."""
    folder.mkdir()
    spec = {"system": {"target": "uri"}, "workload": {"name": name, "params": params}, "record_dir": str(folder)}
    workload = build_workload(name, params)
    events, pool, store = [], None, None
    if processes > 1:
        pool = ClientPool(spec, workload, processes, opener=open_recording_store)
    try:
        workers = getattr(workload, kind)(*args)
        if pool is not None:
            pool.prepare(kind, *args)
        else:
            store = RecordingStore(folder)
        result = run_phase(kind, workers, store, events.append, interval_s=0.5, duration_s=duration_s,
                           abort=threading.Event(), clients=pool)
    finally:
        if pool is not None:
            pool.close()
        if store is not None:
            store.close()
    assert not result["aborted"], result
    return recorded(folder), events


def interval_counts(events) -> int:
    return sum(op["count"] for e in events if e["event"] == "interval" for op in e["ops"].values())


LINKBENCH = {"maxid1": 5001, "max_degree": 1000}


def test_linkbench_requests_are_the_same_per_worker(tmp_path):
    """A measured phase of 4 requesters: in 2 processes each issues its own seeded stream (a
    timed phase: one side's stream is a prefix of the other's)."""
    threads, _ = run(tmp_path / "threads", "linkbench", LINKBENCH, "measure", ("run", 4, None), 1, duration_s=1.5)
    spread, events = run(tmp_path / "procs", "linkbench", LINKBENCH, "measure", ("run", 4, None), PROCESSES,
                         duration_s=1.5)
    assert sorted(threads) == sorted(spread) == [f"worker-{i}" for i in range(4)]
    for worker in threads:
        a, b = threads[worker], spread[worker]
        n = min(len(a), len(b))
        assert n >= 20, (worker, len(a), len(b))
        assert a[:n] == b[:n], worker
    start = next(e for e in events if e["event"] == "phase_start")
    assert start["client_processes"] == PROCESSES and start["workers"] == 4
    # Every request the processes recorded is in the merged intervals (reads and writes alike
    # make at least one store call each, so the calls bound the requests from above).
    assert 0 < interval_counts(events) <= sum(len(calls) for calls in spread.values())


def _written(calls: dict) -> list[str]:
    """Every document written, whatever batch it went in (batches depend on who took a chunk)."""
    return sorted(json.dumps([c["call"], c["args"][0], doc], sort_keys=True)
                  for worker in calls.values() for c in worker for doc in c["args"][-1])


def test_linkbench_load_writes_each_chunk_once(tmp_path):
    """Two link loaders and the node loader, spread over 2 processes, share the chunk queue: the
    same documents as the threads write, none twice."""
    threads, _ = run(tmp_path / "threads", "linkbench", {**LINKBENCH, "chunk_size": 256}, "load", (2,), 1)
    spread, events = run(tmp_path / "procs", "linkbench", {**LINKBENCH, "chunk_size": 256}, "load", (2,), PROCESSES)
    assert spread["worker-2"] == threads["worker-2"]  # the node loader: one ordered stream
    assert _written(threads) == _written(spread)
    assert spread.get("worker-0") and spread.get("worker-1")  # both loaders took chunks
    expected = build_workload("linkbench", LINKBENCH).expected_after_load()
    documents = sum(e["ops"][op]["items"] for e in events if e["event"] == "interval" for op in e["ops"])
    assert documents == sum(expected.values())


def test_iibench_writers_and_query_thread_across_processes(tmp_path):
    """Each writer inserts its seeded documents wherever it runs; the query thread (in another
    process than most writers) starts once query_begin_docs are in and stops when they are done."""
    # Throttled (the Java client's one-second windows) so the writers outlast the query thread's
    # 0.1 s polls: the run takes about two seconds however fast the store answers.
    params = {"max_rows": 3000, "docs_per_insert": 10, "query_begin_docs": 500, "length_char_fields": 50,
              "max_inserts_per_second": 1500}
    threads, _ = run(tmp_path / "threads", "iibench", params, "load", (3,), 1)
    spread, events = run(tmp_path / "procs", "iibench", params, "load", (3,), PROCESSES)
    for writer in ("worker-0", "worker-1", "worker-2"):
        assert spread[writer] == threads[writer]
        assert len(spread[writer]) == 100
    queries = spread.get("worker-3", [])
    assert queries and all(c["call"] == "scan" for c in queries)
    assert sum(e["ops"]["INSERT"]["items"] for e in events if e["event"] == "interval" and "INSERT" in e["ops"]) == 3000


def test_sysbench_load_takes_each_collection_once(tmp_path):
    params = {"collections": 5, "docs_per_collection": 200, "docs_per_insert": 50}
    threads, _ = run(tmp_path / "threads", "sysbench", params, "load", (3,), 1)
    spread, _ = run(tmp_path / "procs", "sysbench", params, "load", (3,), PROCESSES)
    assert _written(threads) == _written(spread)
    names = [c["args"][0] for worker in spread.values() for c in worker]
    assert sorted(set(names)) == [f"sbtest{i}" for i in range(1, 6)] and len(names) == 5 * 4


def test_sysbench_and_tokumx_measured_phases_are_the_same_per_worker(tmp_path):
    cases = [("sysbench", {"collections": 2, "docs_per_collection": 1000}),
             ("tokumx", {"experiment": "read_update", "documents": 1000})]
    for name, params in cases:
        threads, _ = run(tmp_path / f"{name}-threads", name, params, "measure", ("run", 3, None), 1, duration_s=1.0)
        spread, _ = run(tmp_path / f"{name}-procs", name, params, "measure", ("run", 3, None), PROCESSES,
                        duration_s=1.0)
        assert sorted(threads) == sorted(spread)
        for worker in threads:
            n = min(len(threads[worker]), len(spread[worker]))
            assert n >= 5 and threads[worker][:n] == spread[worker][:n], (name, worker)


def test_histograms_merge_exactly_through_the_encoding():
    """Shares of several recorders, sent through encode/decode as client processes send them and
    merged, equal one histogram of every value: every count at every value, errors, CPU, items."""
    rng = random.Random(5)
    clock = PhaseClock(0.0, 1e9)
    everything, intended_all = new_histogram(), new_histogram()
    merged = IntervalShare()
    for _ in range(3):
        rec = Recorder(clock)
        for _ in range(2000):
            latency, intended = int(rng.lognormvariate(6, 2)) + 1, int(rng.lognormvariate(7, 2)) + 1
            rec._record("OP", latency, 10, 2, rng.random() < 0.01, intended)
            everything.record_value(latency)
            intended_all.record_value(intended)
        (share,) = rec.take(10).values()
        merged.merge(decode_share(encode_share(share)))
    stats = merged.ops["OP"]
    assert stats.histogram.get_total_count() == 6000 and stats.items == 12000 and stats.cpu_ns == 60000
    for mine, theirs in ((stats.histogram, everything), (stats.intended, intended_all)):
        assert _counts(mine) == _counts(theirs)
        for p in (50, 90, 99, 99.9, 100):
            assert mine.get_value_at_percentile(p) == theirs.get_value_at_percentile(p)


def _counts(histogram: HdrHistogram) -> list[tuple[int, int]]:
    return [(item.value_iterated_to, item.count_at_value_iterated_to) for item in histogram.get_recorded_iterator()]
