"""The four TokuMX experiments at smoke scale on their four embedded systems (LMDB standing in for
MMAPv1, WiredTiger, RocksDB, and the fractal tree under TokuMX's layout), end to end, with the
report pieces each one feeds."""
import polars as pl
import pytest

import enginebench
from enginebench.report import over_time
from enginebench.families.tokumx import report as tk
from enginebench.report.claims import NOT_EVALUATED
from enginebench.report.rundata import load_run

from one_value import check_pairs_show_their_claims

ENGINES = {"lmdb/", "wiredtiger/btree", "rocksdb/", "fractal/"}


def smoke(exp: str):
    run = load_run(enginebench.run(exp, "smoke", "embedded"))
    assert run.manifest["status"] == "complete"
    assert {s["engine"] + "/" + s["options"].get("table_type", "") for s in run.systems} == ENGINES
    documents = run.manifest["params"]["workload"]["documents"]
    for s in run.systems:
        assert s["status"] == "complete", s
        assert s["load_verified"]["ok"] and s["load_verified"]["found"]["documents"] == documents
    return run


@pytest.mark.parametrize("exp", ["tokumx_insert_10m", "tokumx_insert_20m"])
def test_insert_experiments(isolated_run, exp):
    run = smoke(exp)
    table = tk.insert_table(run)
    assert table.height == 4 and (table["inserts/s"] > 0).all() and (table["size (du, MB)"] > 0).all()
    series = tk.insert_series(run)
    per_system = series.group_by("system").agg(pl.col("docs_millions").max() * 1e6, pl.len())
    assert (per_system["docs_millions"].round(0) == run.manifest["params"]["workload"]["documents"]).all()
    assert (per_system["len"] >= 2).all(), "rates over time need several intervals"
    claims = tk.claims_table(run)
    if exp == "tokumx_insert_10m":  # the fractal tree against LMDB standing in for MMAPv1
        assert claims["id"].to_list() == ["tk.insert.fractal_vs_mmap", "tk.size.mmap_vs_fractal"]
        assert claims["measured_ratio"].is_not_null().all() and (claims["verdict"] != NOT_EVALUATED).all()
        assert all("tokumx (fractal)" in f and "lmdb (mmap: LMDB standing in for MMAPv1)" in f for f in claims["from"])
    else:  # the replicated run's claim: the embedded target has no replica set
        assert claims["id"].to_list() == [tk.STALE_CLAIM] and "no replica set" in claims["reason"][0]
        assert claims["verdict"][0] == NOT_EVALUATED
    text = tk.findings(run, claims)
    assert "did not run" in text and "inserted" in text and "**tokumx** inserted" in text
    _pairs_read_as_the_claims(run, claims, 2 if exp == "tokumx_insert_10m" else 0)


def _pairs_read_as_the_claims(run, claims, count):
    """"Against the post" sets our pair beside the post's: the post's ratio is the claim's, ours
    the claim table's."""
    from enginebench.report import context
    view = context.normalised_view(run)
    assert check_pairs_show_their_claims(view, claims) == count


@pytest.mark.parametrize("exp, unit", [("tokumx_concurrency", "updates/s"), ("tokumx_read", "reads/s")])
def test_client_sweep_experiments(isolated_run, exp, unit):
    run = smoke(exp)
    for s in run.systems:
        assert [p["phase"] for p in s["phases"]] == ["load"] + [f"clients={n}" for n in range(1, 7)]
        assert s["consistency"]["mismatches"] == 0
    table = tk.client_sweep_table(run)
    assert table.columns[3] == unit and table.height == 24 and (table[unit] > 0).all()
    best = tk.client_sweep_max(run)
    assert best.height == 4 and set(best["at clients"]) <= set(range(1, 7))
    claims = tk.claims_table(run)
    assert claims.height == 1 and claims["verdict"][0] != NOT_EVALUATED and claims["measured_ratio"][0] > 0
    assert "peaked at" in tk.findings(run, claims)
    _pairs_read_as_the_claims(run, claims, 1)
    over = over_time.interval_table(run, tk.over_time_view(run))
    sweep = [f"clients={n}" for n in range(1, 7)]
    for label in over["system"].unique(maintain_order=True):
        assert over.filter(pl.col("system") == label)["phase"].to_list() == sweep, "the phases in the order they ran"
    assert over.height == run.intervals.filter(pl.col("phase") != "load").height and over["steady"].is_null().all()
