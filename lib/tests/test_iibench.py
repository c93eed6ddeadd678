"""iibench at smoke scale: documents and index entries, the query worker, slow-write counting."""
import os
import random
import time

import polars as pl
import pytest

from enginebench.report import iibench as ib
from enginebench.report.claims import NOT_EVALUATED
from enginebench.runner.recorder import PhaseClock, Recorder
from enginebench.workloads.iibench import IIBench, Params


def test_documents_follow_the_java_client():
    bench = IIBench(Params(max_rows=100))
    rng = random.Random(0)
    doc = bench.document(rng)
    assert list(doc) == ["dateandtime", "cashregisterid", "customerid", "productid", "price", "cf1"]
    assert 0 <= doc["cashregisterid"] < 1000 and 0 <= doc["customerid"] < 100_000 and 0 <= doc["productid"] < 10_000
    assert doc["customerid"] / 100 <= doc["price"] < (doc["customerid"] + 500) / 100
    assert len(doc["cf1"]) == 1000 and doc["cf1"].endswith("a" * 500) and doc["cf1"][:500].isalpha()


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


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    base = tmp_path_factory.mktemp("iibench")
    saved = {k: os.environ.get(k) for k in ("ENGINEBENCH_RESULTS", "ENGINEBENCH_DATA")}
    os.environ["ENGINEBENCH_RESULTS"], os.environ["ENGINEBENCH_DATA"] = str(base / "r"), str(base / "d")
    try:
        import enginebench
        from enginebench.report.rundata import load_run
        yield load_run(enginebench.run("iibench_500m", "smoke"))
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)


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
