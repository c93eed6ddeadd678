"""The four TokuMX experiments at smoke scale on all four embedded engines, end to end, with the
report pieces each one feeds."""
import polars as pl
import pytest

import enginebench
from enginebench.report import over_time
from enginebench.families.tokumx import report as tk
from enginebench.report.claims import NOT_EVALUATED
from enginebench.report.rundata import load_run

from one_value import check_pairs_show_their_claims

ENGINES = {"lmdb/", "wiredtiger/btree", "rocksdb/", "wiredtiger/lsm"}


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
    assert (claims["verdict"] == NOT_EVALUATED).all()
    stand_ins = tk.claims_table(run, tk.stand_in_roles(run))
    if exp == "tokumx_insert_10m":  # the fractal-vs-mmap claims: no verdict, a labelled stand-in
        assert claims["id"].to_list() == ["tk.insert.fractal_vs_mmap", "tk.size.mmap_vs_fractal"]
        assert set(claims["reason"]) == {"no fractal-tree engine ran"}
        assert stand_ins["measured_ratio"].is_not_null().all() and "standing in for fractal" in stand_ins["from"][0]
    else:  # the replicated run's claim: the embedded target has no replica set
        assert claims["id"].to_list() == [tk.STALE_CLAIM] and "no replica set" in claims["reason"][0]
        assert stand_ins.is_empty()
    text = tk.findings(run, claims, stand_ins)
    assert "did not run" in text and "inserted" in text
    _pairs_read_as_the_claims(run, claims, stand_ins, 2 if exp == "tokumx_insert_10m" else 0)


def _pairs_read_as_the_claims(run, claims, stand_ins, count):
    """"Against the post" sets the stand-in beside the post, saying so: the post's ratio is the
    claim's, ours the stand-in's claim table's, and the claim itself withholds it."""
    from enginebench.report import context
    view = context.normalised_view(run)
    assert check_pairs_show_their_claims(view, claims) == count
    assert check_pairs_show_their_claims(view, stand_ins) == count


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
    assert claims.height == 1 and claims["verdict"][0] == NOT_EVALUATED
    assert "peaked at" in tk.findings(run, claims)
    _pairs_read_as_the_claims(run, claims, tk.claims_table(run, tk.stand_in_roles(run)), 1)
    over = over_time.interval_table(run, tk.over_time_view(run))
    sweep = [f"clients={n}" for n in range(1, 7)]
    for label in over["system"].unique(maintain_order=True):
        assert over.filter(pl.col("system") == label)["phase"].to_list() == sweep, "the phases in the order they ran"
    assert over.height == run.intervals.filter(pl.col("phase") != "load").height and over["steady"].is_null().all()
