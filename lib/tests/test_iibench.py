"""iibench at smoke scale on every engine, and its report: where Nslow comes from, the claims, the
load over time. The generator, the query thread and slow-insert counting are checked on the
runner's (lib/native/tests/iibench_generator.rs)."""
import polars as pl
import pytest

from enginebench.families.iibench import report as ib
from enginebench.report.claims import NOT_EVALUATED

from conftest import smoke_run_fixture
from one_value import check_pairs_show_their_claims


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


smoke = smoke_run_fixture("iibench_500m")


def test_smoke_run_on_every_engine(smoke):
    assert smoke.manifest["status"] == "complete"
    total = smoke.manifest["params"]["workload"]["max_rows"]
    for s in smoke.systems:
        assert s["status"] == "complete" and s["load_verified"]["ok"], s
        assert set(s["load_verified"]["found"].values()) == {total}
    table = ib.our_table(smoke)
    assert table.height == len(smoke.systems) == 6 and (table["irate"] > 0).all() and (table["qrate"] > 0).all()
    queries = smoke.ops.filter(pl.col("op").str.starts_with("QUERY"))
    counts = queries.group_by("system", "op").agg(pl.col("count").sum())
    per_system = counts.group_by("system").agg(pl.col("count").max() - pl.col("count").min())
    assert (per_system["count"] <= 1).all(), "the three queries run round-robin"


def test_smoke_nslow_is_the_clients_count_of_slow_insert_calls(smoke):
    """An embedded engine has no server to count slow inserts: the runner reports no slow_ops
    event, Nslow is the insert calls the client timed at or above the threshold, and the report
    says so for every system."""
    assert all(s["slow_ops"] is None for s in smoke.systems)
    inserts = smoke.ops.filter(pl.col("op") == "INSERT")
    assert "slow" in inserts.columns and inserts["slow"].is_not_null().all()
    for s in smoke.systems:
        assert ib.system_figures(smoke, s["label"])["Nslow"] == \
            inserts.filter(pl.col("system") == s["label"])["slow"].sum()
    (nslow, _) = ib.method_lines(smoke)
    labels = ", ".join(s["label"] for s in smoke.systems)
    assert nslow.startswith(f"Nslow ({labels}): insert calls of at least 2 s as the client timed each call "
                            "(an embedded engine has no server)")


def test_smoke_claims_and_findings(smoke):
    claims = ib.claims_table(smoke)
    assert set(claims["id"]) == {"ib.insert.lsm_vs_btree", "ib.query.btree_vs_lsm", "ib.size.btree_vs_lsm",
                                 "ib.slow.btree_vs_lsm", "ib.release.insert", "ib.release.query"}
    # The release claims compare the post's own pair, 2.6.1 for 3.1.5 (wt, the post's release under
    # `2015`) and WiredTiger as mongodb-3.0.4 shipped it (wt304), and say so.
    release = claims.filter(pl.col("id") == "ib.release.insert").row(0, named=True)
    assert release["verdict"] != NOT_EVALUATED, release
    assert release["from"].startswith("wt=") and " / wt304=" in release["from"], release
    assert "the posts' own WiredTiger trees 2.6.1 / mongodb-3.0.4, WiredTiger 2.6.1 / 2.5.3" in release["from"]
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


def test_the_headline_ratios_read_the_same_in_the_claims_and_against_the_post(smoke):
    """"Against the post" gives each pair as b-tree / LSM; the claims name their own direction: the
    same figure either way, the post's and ours."""
    from enginebench.report import context
    view = context.normalised_view(smoke)
    assert check_pairs_show_their_claims(view, ib.claims_table(smoke)) == 3 == view.height
