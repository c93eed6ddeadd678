"""The LinkBench report gives each figure one value: the query rates and response times of its
findings and tables come from the window its claims use (each system's steady intervals), and
stalls the percentiles hide are flagged."""
import re

import polars as pl

from conftest import smoke_run_fixture
from enginebench.report import latency
from enginebench.report import linkbench as lb

smoke = smoke_run_fixture("linkbench_cached")


def _claim(claims: pl.DataFrame, claim_id: str) -> dict:
    return claims.filter(pl.col("id") == claim_id).row(0, named=True)


def test_query_rates_and_p99_read_the_same_everywhere(smoke):
    claims = lb.claims_table(smoke)
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
