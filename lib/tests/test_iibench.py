"""iibench at smoke scale: documents and index entries, the query worker, slow-write counting."""
import random
import time

import polars as pl

from enginebench.report import iibench as ib
from enginebench.report.claims import NOT_EVALUATED
from enginebench.runner.recorder import PhaseClock, Recorder
from enginebench.workloads.iibench import IIBench, Params

from conftest import smoke_run_fixture


def test_documents_follow_the_java_client():
    bench = IIBench(Params(max_rows=100))
    rng = random.Random(0)
    doc = bench.document(rng)
    assert list(doc) == ["dateandtime", "cashregisterid", "customerid", "productid", "price", "cf1"]
    assert 0 <= doc["cashregisterid"] < 1000 and 0 <= doc["customerid"] < 100_000 and 0 <= doc["productid"] < 10_000
    assert doc["customerid"] / 100 <= doc["price"] < (doc["customerid"] + 500) / 100
    assert len(doc["cf1"]) == 1000 and doc["cf1"].endswith("a" * 500) and doc["cf1"][:500].isalpha()


def test_char_field_letters_are_a_4mib_random_pool():
    """mdcallag/iibench-mongodb@02b4190 src/jmongoiibench.java: 4*1024*1024 random letters, not a
    short repeated pattern (which a compressor would find): no 64 KiB period, and letters drawn
    uniformly from 26 compress no better than log2(26)/8 of their bytes."""
    import zlib
    letters = IIBench(Params(max_rows=100)).random_letters
    assert len(letters) == 4 << 20 and set(letters) == set(b"abcdefghijklmnopqrstuvwxyz")
    assert letters[:1 << 16] != letters[1 << 16:2 << 16]
    assert len(zlib.compress(letters, 9)) / len(letters) > 0.58


def test_nslow_comes_from_the_server_or_says_it_is_per_client_call(embedded_store):
    bench = IIBench(Params(max_rows=100))
    bench.setup(embedded_store)
    events = []
    bench.after_load(embedded_store, events.append)
    assert events == [{"event": "slow_ops", "op": "INSERT", "threshold_ms": 2000, "source": "client",
                       "why": "an embedded engine has no server"}]


def test_report_says_where_nslow_comes_from_and_the_limit_of_4(tmp_path):
    from enginebench.report.rundata import RunData
    systems = [{"label": "wt", "role": "btree", "engine": "wiredtiger"},
               {"label": "rx", "role": "lsm", "engine": "rocksdb"}]
    manifest = {"params": {"workload": {"name": "iibench", "query_limit": 4, "slow_threshold_s": 2.0},
                           "systems": systems},
                "systems": {"wt": {"status": "complete", "slow_ops": {"source": "server", "count": 3,
                                                                      "profile_full": False}},
                            "rx": {"status": "complete", "slow_ops": None}}}
    lines = ib.method_lines(RunData(tmp_path, manifest, pl.DataFrame(), pl.DataFrame(), pl.DataFrame()))
    assert lines[0].startswith("Nslow (wt): the server's count of inserts of at least 2 s")
    assert lines[1].startswith("Nslow (rx): insert calls of at least 2 s as the client timed each call")
    assert lines[2].startswith("Each query reads at most 4 documents, as in the post's command line")


def test_writers_split_the_rows_in_whole_batches():
    cfg = Params(max_rows=1_000_003, docs_per_insert=10)
    assert cfg.per_writer(10) == 100_000 and cfg.total_docs(10) == 1_000_000


def test_slow_calls_are_counted_per_op():
    rec = Recorder(PhaseClock(time.time(), 60), slow_us={"INSERT": 20_000})
    rec.start_thread()
    rec.call("INSERT", time.sleep, 0.03)
    rec.call("INSERT", time.sleep, 0.001)
    rec.call("QUERY_PDC", time.sleep, 0.03)
    share = rec.take(10)[0]
    assert share.ops["INSERT"].slow == 1 and share.ops["QUERY_PDC"].slow == 0


smoke = smoke_run_fixture("iibench_500m")


def test_smoke_run_on_every_engine(smoke):
    assert smoke.manifest["status"] == "complete"
    total = smoke.manifest["params"]["workload"]["max_rows"]
    for s in smoke.systems:
        assert s["status"] == "complete" and s["load_verified"]["ok"], s
        assert set(s["load_verified"]["found"].values()) == {total}
    table = ib.our_table(smoke)
    assert table.height == 4 and (table["irate"] > 0).all() and (table["qrate"] > 0).all()
    queries = smoke.ops.filter(pl.col("op").str.starts_with("QUERY"))
    counts = queries.group_by("system", "op").agg(pl.col("count").sum())
    per_system = counts.group_by("system").agg(pl.col("count").max() - pl.col("count").min())
    assert (per_system["count"] <= 1).all(), "the three queries run round-robin"


def test_smoke_claims_and_findings(smoke):
    claims = ib.claims_table(smoke)
    assert set(claims["id"]) == {"ib.insert.lsm_vs_btree", "ib.query.btree_vs_lsm", "ib.size.btree_vs_lsm",
                                 "ib.slow.btree_vs_lsm"}
    evaluated = claims.filter(pl.col("verdict") != NOT_EVALUATED)
    assert evaluated.height >= 3
    series = ib.rate_series(smoke)
    assert series.height > 0 and series.group_by("system").agg(pl.col("docs_millions").max())["docs_millions"].min() * 1e6 \
        == smoke.manifest["params"]["workload"]["max_rows"]
    assert "inserted at" in ib.findings(smoke, claims)


def test_metrics_over_time_of_the_load_say_no_window_applies(smoke):
    from enginebench.report import over_time
    table = over_time.interval_table(smoke, ib.OVER_TIME)
    loaded = smoke.intervals.filter(pl.col("phase") == "load")
    assert table.height == loaded.height and set(table["phase"]) == {"load"}
    assert (table["ops/s"] > 0).all() and (table["p99 (ms)"] > 0).all()
    assert table["steady"].is_null().all(), "the load has no steady-state window to mark"
    subtitle = over_time.chart(smoke, ib.OVER_TIME).to_dict()["title"]["subtitle"]
    assert any(line.startswith("every point filled: no steady-state rule applies here") for line in subtitle)
