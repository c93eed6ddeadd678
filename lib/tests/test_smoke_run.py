"""linkbench_cached at smoke scale on every embedded engine, end to end, and its report pieces."""
import json
import re

import polars as pl
import psutil
import pytest

from enginebench.report import latency
from enginebench.families.linkbench import report as lb
from enginebench.report.claims import HOLDS, FAILS, NOT_EVALUATED, NOT_STEADY, SMOKE
from enginebench.report import repeats
from enginebench.families.linkbench.report import findings as linkbench_findings
from enginebench.report.rundata import latest_run, load_run

from one_value import check_pairs_show_their_claims


def intervals(params: dict) -> int:
    measure = params["phases"]["measure"]
    return round(measure["duration_s"] / measure["interval_s"])


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    data = tmp_path_factory.mktemp("data")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ENGINEBENCH_RESULTS", str(results))
        patch.setenv("ENGINEBENCH_DATA", str(data))
        import enginebench
        path = enginebench.run("linkbench_cached", "smoke", "auto")
        assert latest_run("linkbench_cached") == path
        yield load_run(path), data


def test_every_engine_completes_and_reports_the_count_drift(smoke_run):
    run, _ = smoke_run
    assert run.manifest["status"] == "complete"
    engines = {s["engine"] + "/" + s["options"].get("table_type", "") for s in run.systems}
    assert engines == {"wiredtiger/btree", "wiredtiger/lsm", "rocksdb/", "lmdb/"}
    for s in run.systems:
        assert s["status"] == "complete", s
        assert s["load_verified"]["ok"], s["load_verified"]
        if s.get("measure_requests") is False:
            continue  # wt307.op1 loads only (the release claims compare loads): no requests to check
        # The smoke scale runs the post's pattern, whose count rows drift: a finding, not a failure.
        assert s["consistency"]["counts"] == run.manifest["params"]["workload"]["counts"] == "linkbenchx"
        assert s["consistency"]["mismatches"] > 0
        assert s["transactions"] is True


def test_tables_hold_every_interval_and_op(smoke_run):
    run, _ = smoke_run
    params = run.manifest["params"]
    runs = run.intervals.filter(pl.col("phase") == "run")
    assert runs.group_by("system").len()["len"].to_list() == [intervals(params)] * 4  # wt307.op1 loads only
    assert (runs["requests"] > 0).all() and (runs["cpu_us_per_op"] > 0).all()
    assert (runs["size_du_bytes"] > 0).all()
    ops = set(run.ops.filter(pl.col("phase") == "run")["op"].unique().to_list())
    assert {"GET_LINKS_LIST", "ADD_LINK", "GET_NODE", "UPDATE_NODE"} <= ops
    loads = run.ops.filter(pl.col("phase") == "load")
    nodes = loads.filter(pl.col("op") == "LOAD_NODE_BULK").group_by("system").agg(pl.col("items").sum())
    assert nodes["items"].to_list() == [params["workload"]["maxid1"] - 1] * 5


def test_each_intervals_mean_is_the_histogram_librarys_own(smoke_run):
    """The runner sends each interval's mean with its histogram (the library walks every bucket to
    find it): the two must agree, on every row."""
    from hdrh.histogram import HdrHistogram
    run, _ = smoke_run
    rows = run.ops.filter(pl.col("hist").is_not_null())
    assert rows.height > 50
    for encoded, mean in zip(rows["hist"], rows["mean_us"]):
        assert mean == pytest.approx(HdrHistogram.decode(encoded).get_mean_value(), rel=1e-12)


def test_provenance_is_recorded(smoke_run):
    run, _ = smoke_run
    m = run.manifest
    for key in ("git", "packages", "host", "params", "started_at", "finished_at", "target"):
        assert m[key], key
    assert m["host"]["logical_cpus"] >= 1
    speed = m["host"]["speed"]  # the host's CPU speed at both ends, to tell its drift from the engines'
    assert speed["start"]["docs_per_s"] > 0 and speed["end"]["docs_per_s"] > 0
    assert speed["end"]["at"] > speed["start"]["at"]
    assert isinstance(m["host"]["proactive_reclaim"], list)  # empty where the host evicts nothing on its own
    assert all(info["version"] and info["engine_config"] for info in m["systems"].values())
    rocksdb = [info for info in m["systems"].values() if info["engine_reported"] == "rocksdb"]
    assert rocksdb and all("-DNDEBUG" in info["engine_config"]["build"] for info in rocksdb)  # tools/build_rocksdb.sh
    lmdb = [info for info in m["systems"].values() if info["engine_reported"] == "lmdb"]
    assert lmdb and all("frame pointers" in info["engine_config"]["build"] for info in lmdb)  # tools/build_lmdb.sh


def test_data_is_removed_and_no_runner_is_left(smoke_run):
    run, data = smoke_run
    assert not any(p.is_file() for p in data.rglob("*")), "engine files are deleted after the run"
    children = [p for p in psutil.Process().children(recursive=True) if "enginebench.runner" in " ".join(p.cmdline())]
    assert children == []


def test_report_pieces(smoke_run):
    run, _ = smoke_run
    ours = lb.our_tables(run)
    assert ours["load"].height == 5 and "ops" in ours["load"].columns
    assert len([t for t in ours if t.startswith("run")]) == intervals(run.manifest["params"])
    latency = lb.response_times(run)
    assert {"p50_ms", "p99_ms", "p999_ms", "max_ms"} <= set(latency.columns)
    claims = lb.claims_table(run)
    assert claims.height == 11  # the claims of claims.csv that name linkbench_cached (3 of them releases)
    assert set(claims["verdict"]) <= {HOLDS, FAILS, NOT_EVALUATED, NOT_STEADY}
    # Two query intervals are fewer than the steady rule asks for: no query-phase verdict.
    assert set(claims.filter(pl.col("metric").str.starts_with("run.") & pl.col("measured_ratio").is_not_null())["verdict"]) == {NOT_STEADY}
    # ...and the report, at the smoke scale, gives none at all.
    shown = repeats.claims(run, lb.claims_table)
    assert set(shown["verdict"]) <= {SMOKE, NOT_EVALUATED} and "size" in shown.columns
    evaluated = claims.filter(pl.col("verdict") != NOT_EVALUATED)
    assert evaluated.height >= 5 and evaluated["measured_ratio"].is_not_null().all()
    # CPU and context switches per operation are verdicts only where the engine's code took most
    # of the runner's CPU; a smoke phase may be too short for perf to sample at all.
    for row in claims.filter(pl.col("metric").str.contains("cpu_per_op|cs_per_op")).iter_rows(named=True):
        assert row["verdict"] != NOT_EVALUATED or row["reason"].startswith("not comparable"), row
    # The runner's switches are its threads', not its main thread's alone (its workers do the work).
    assert run.samples["ctx_switch_threads"].max() > 2
    oplog = claims.filter(pl.col("id") == "lb.oplog.wkb").row(0, named=True)
    assert oplog["verdict"] == NOT_EVALUATED and "oplog" in oplog["reason"]
    text = linkbench_findings(run, claims)
    assert "**Load.**" in text and "**Claims.**" in text
    assert "`counts: linkbenchx`" in text and "a finding, not a fault" in text
    assert json.dumps(run.manifest)  # serialisable as stored


def test_context_tables(smoke_run):
    """The post's scale, its ratios beside ours, and the engine settings, from a real run."""
    from enginebench.report import context
    run, _ = smoke_run
    scale = context.scale_mapping(run)
    cache = scale.filter((pl.col("setting") == "engine cache") & pl.col("systems").str.contains("wt.op1")).row(0, named=True)
    assert cache["the post"] == "32 GB" and cache["this run"] == "64 MB" and cache["this run / the post"] == 1 / 512
    sizes = scale.filter(pl.col("setting") == "database size at the end")
    # Every system measured; systems whose sizes are equal share a row.
    assert sum(len(row.split(", ")) for row in sizes["systems"]) == 5 and (sizes["this run / the post"] > 0).all()
    view = context.normalised_view(run)
    queries = view.filter(pl.col("metric") == "queries/s").row(0, named=True)
    # The post's 2nd hour, the one the claims take (data/reference/linkbench_2015.csv rows 8 and 10).
    assert queries["the post's ratio"] == pytest.approx(14483 / 10794) and queries["our ratio"] > 0
    assert queries["same side of 1"] == ("yes" if queries["our ratio"] > 1 else "no")
    assert queries["our figures"].startswith("wt.op1 ") and " / rx.op1 " in queries["our figures"]
    engines = context.engine_configuration(run)
    assert engines["system"].to_list() == ["wt.op1", "rx.op1", "wtlsm.op1", "lmdb.op1", "wt307.op1"]
    assert set(engines["settings from"]) == {"the runner"} and engines["cache_size_mb"][0] == "64"


def test_metrics_over_time_cover_every_query_interval(smoke_run):
    from enginebench.report import charts, over_time
    from enginebench.report.steady import steadiness
    run, _ = smoke_run
    table = over_time.interval_table(run)
    measured = run.intervals.filter(pl.col("phase") == "run")
    assert table.height == measured.height
    assert (table["p99 (ms)"] > 0).all() and (table["ops/s"] > 0).all()
    for label in table["system"].unique():
        marked = table.filter((pl.col("system") == label) & pl.col("steady"))["interval"].to_list()
        assert marked == [k + 1 for k in steadiness(run, label).passed]
    assert charts.to_png(over_time.chart(run))[:4] == b"\x89PNG"

def _claim(claims: pl.DataFrame, claim_id: str) -> dict:
    return claims.filter(pl.col("id") == claim_id).row(0, named=True)


def test_query_rates_and_p99_read_the_same_everywhere(smoke_run):
    from enginebench.report import context
    smoke, _ = smoke_run
    claims = lb.claims_table(smoke)
    # The claims table and "Against the post" give each claim's ratios, the post's and ours, as one
    # value: the load and query rates, the load's writes and CPU per operation.
    assert check_pairs_show_their_claims(context.normalised_view(smoke), claims) == 4
    findings = lb.findings(smoke, claims)
    query = _claim(claims, "lb.query.cached.btree_vs_lsm")
    # 'wt.op1=13,650 / rx.op1=10,487 (...)': the claim's figures, as the findings must give them.
    figures = dict(re.findall(r"(\w+\.op1)=([\d,]+)", query["from"]))
    assert len(figures) == 2, query["from"]
    sentence = next(p for p in findings.split("\n\n") if p.startswith("**Query phase.**"))
    for label, value in figures.items():
        assert f"{label} {value} ops/s" in sentence, (sentence, query["from"])
    p99 = _claim(claims, "lb.p99.getlinkslist.cached")
    table = lb.response_times(smoke).filter(pl.col("op") == "GET_LINKS_LIST")
    latencies = re.findall(r"(\w+\.op1)=([\d.,]+)", p99["from"])
    assert len(latencies) == 2, p99["from"]
    for label, value in latencies:
        shown = table.filter(pl.col("setup") == label)["p99_ms"].item()
        assert abs(shown - float(value.replace(",", ""))) <= 0.01 * max(shown, 0.001), (label, shown, value)


def test_a_stall_is_flagged_where_percentiles_hide_it():
    assert latency.stall({"p99_ms": 2.2, "max_ms": 807.4}) == "max 807 ms = 367x p99"
    assert latency.stall({"p99_ms": 2.2, "max_ms": 40.0}) == ""   # under STALL_MIN_MS
    assert latency.stall({"p99_ms": 50.0, "max_ms": 400.0}) == ""  # under STALL_TIMES_P99 x p99
    rows = [{"setup": "wt.op1", "op": "GET_LINKS_LIST", "stall": "max 807 ms = 367x p99"}, {"setup": "rx.op1", "op": "GET_NODE", "stall": ""}]
    assert latency.stalls_sentence(rows).startswith("Stalls (an operation over 20x its type's p99 and 100 ms): "
                                                    "wt.op1 GET_LINKS_LIST (max 807 ms = 367x p99).")
