"""Replay scheduling (real style keeps inter-arrival times divided by the speed-up, records lag and
latency from the scheduled start; stress does not wait; the filter selects), exact replay of a
Store-level capture on every engine, what a mongod capture can and cannot do on a Store, and the
bundled workload's determinism."""
import threading
import time
from pathlib import Path

import pytest

from enginebench.flashback import format as F
from enginebench.flashback.appmix import AppMix, AppMixConfig, MIX
from enginebench.flashback.execute_store import prepare
from enginebench.flashback.replay import Replayer
from enginebench.runner.phases import run_phase
from enginebench.stores import open_embedded
from conftest import EMBEDDED

DATA = Path(__file__).parent / "data" / "flashback"


def _ops(times, kinds=None):
    kinds = kinds or ["query"] * len(times)
    return [{"ts": 1000.0 + t, "ns": "d.c", "op": k, "command": {"find": "c"}} for t, k in zip(times, kinds)]


def _run(replayer, store=None):
    events = []
    result = run_phase("run", replayer.workers(), store, events.append, interval_s=0.5, duration_s=None,
                       abort=threading.Event())
    assert not result["aborted"], result
    return events


def _clocked(starts, sleep_s=0.0):
    def prep(record):
        def call(_store):
            starts.append((record["ts"], time.perf_counter()))
            time.sleep(sleep_s)
            return 1
        return call
    return prep


def test_real_style_keeps_inter_arrival_times_divided_by_speedup():
    starts = []
    offsets = [0.0, 0.1, 0.15, 0.4, 0.8]
    replayer = Replayer(_ops(offsets), style="real", speedup=2.0, workers=3, prepare=_clocked(starts))
    _run(replayer)
    starts.sort()
    measured = [t - starts[0][1] for _, t in starts]
    for want, got in zip(offsets, measured):
        assert abs(got - want / 2.0) < 0.03, (measured, offsets)
    lag = replayer.merged().lag
    # Under 30 ms late, the tolerance of the offsets above (a shared machine's scheduling noise).
    assert lag.get_total_count() == len(offsets) and lag.get_max_value() < 30_000  # µs


def test_stress_style_does_not_wait_for_the_schedule():
    starts = []
    replayer = Replayer(_ops([0, 5, 10, 20]), style="stress", workers=2, prepare=_clocked(starts))
    began = time.perf_counter()
    _run(replayer)
    assert len(starts) == 4 and time.perf_counter() - began < 1.0
    assert replayer.merged().lag.get_total_count() == 0  # no schedule, so no lag to record


def test_lag_and_scheduled_latency_grow_when_the_target_cannot_keep_up():
    starts = []
    # One worker, an op due every 10 ms, each taking 30 ms: every op starts later than the last.
    replayer = Replayer(_ops([i * 0.01 for i in range(10)]), style="real", workers=1, prepare=_clocked(starts, 0.03))
    events = _run(replayer)
    lag = replayer.merged().lag
    assert lag.get_max_value() > 150_000  # the last op ~180 ms behind
    from enginebench.results.tables import decode_histogram
    intended = [decode_histogram(e["ops"]["query"]["intended_hist"]) for e in events
                if e["event"] == "interval" and "query" in e["ops"]]
    service = [decode_histogram(e["ops"]["query"]["hist"]) for e in events if e["event"] == "interval" and "query" in e["ops"]]
    # Latency from the scheduled start carries the backlog (~180 ms by the last op) on top of the
    # service time, however long a loaded machine makes each 30 ms call.
    assert max(h.get_max_value() for h in intended) - max(h.get_max_value() for h in service) > 100_000


def test_filter_selects_types_and_keeps_their_original_offsets():
    starts = []
    ops = _ops([0.0, 0.1, 0.2, 0.3], ["insert", "count", "query", "count"])
    replayer = Replayer(ops, style="real", workers=2, select=("count",), prepare=_clocked(starts))
    began = time.perf_counter()
    _run(replayer)
    assert sorted(ts for ts, _ in starts) == [1000.1, 1000.3]
    first = min(t for _, t in starts) - began
    assert first > 0.09  # the count due 100 ms after the stream's first op, not at once
    assert replayer.merged().read == {"count": 2}


def _state(store):
    return {c: [store.get(c, None, k) for k in store.iter_index(c, None)] for c in ("posts", "log")}


@pytest.mark.parametrize("engine,options", [(e, o) for _, e, o in EMBEDDED], ids=[i for i, _, _ in EMBEDDED])
def test_store_capture_replays_exactly_on_every_engine(tmp_path, engine, options):
    capture = F.read_capture(DATA / "store_ops.jsonl")
    store = open_embedded(engine, tmp_path / "db", options)
    try:
        results = [prepare(r)(store) for r in capture.ops()]
        # get, get_many, two scans, a reverse scan, count, update, upsert, findAndModify, delete
        assert results[5:] == [1, 3, 3, 3, 5, 4, 1, 0, 1, 1]
        state = _state(store)
        assert [d["_id"] for d in state["posts"]] == [0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 99]
        assert state["posts"][3]["likes"] == 1 and state["posts"][5]["likes"] == 2
        assert state["log"] == [{"_id": 1, "msg": "started"}]
    finally:
        store.close()


def test_mongod_capture_on_a_store_replays_what_translates_and_says_why_not_the_rest(tmp_path):
    store = open_embedded("lmdb", tmp_path / "db", {"map_size_gb": 1})
    try:
        for name in ("posts", "events", "users", "counters", "jobs"):
            store.create_collection(name)
        ran, skipped = [], {}
        for record in F.read_capture(DATA / "profiler_ops.jsonl").ops():
            if record["ns"].startswith("legacy."):
                continue
            try:
                call = prepare(record)
            except Exception as exc:
                skipped.setdefault(record["op"], []).append(str(exc))
                continue
            ran.append((record["op"], call(store)))
        assert ran == [("insert", 1), ("insert", 2), ("update", 0), ("remove", 1)]  # the update upserted
        assert set(skipped) == {"query", "getmore", "update", "remove", "count", "findandmodify", "command"}
        assert any("multi-document" in why for why in skipped["update"] + skipped["remove"])
        assert "replays only against a mongod" in skipped["getmore"][0]
    finally:
        store.close()


def test_bundled_workload_is_deterministic_and_mixed():
    config = AppMixConfig(users=50, posts=2000, rate=400, duration_s=10, capped_mb=0.1)
    first, again = list(AppMix(config).operations()), list(AppMix(config).operations())
    assert first == again and len(first) > 3000
    assert list(AppMix(config).load_batches()) == list(AppMix(config).load_batches())
    assert list(AppMix(AppMixConfig(**{**config.__dict__, "seed": 2})).operations()) != first
    assert all(b["ts"] >= a["ts"] for a, b in zip(first, first[1:]))
    shares = {}
    for r in first:
        shares[r["op"]] = shares.get(r["op"], 0) + 1 / len(first)
    want = {"query": 0.50, "count": 0.08, "insert": 0.20, "update": 0.14, "findandmodify": 0.05, "remove": 0.03}
    assert sum(s for _, s in MIX) == pytest.approx(1.0)
    for op, share in want.items():
        assert shares[op] == pytest.approx(share, abs=0.03), (op, shares)
