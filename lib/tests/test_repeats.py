"""REPEAT=n: runs grouped by id, the spread of headline numbers, verdicts combined over runs."""
import polars as pl

from enginebench.driver import run
from enginebench.families.iibench import report as ib
from enginebench.report.compare import write_comparison
from enginebench.report.claims import FAILS, HOLDS, INCONCLUSIVE, NOT_EVALUATED, WITHIN_NOISE
from enginebench.report.repeats import combine_claims, group_runs, section, spread_table
from enginebench.report.rundata import load_run


def _table(rows):
    base = {"claim": "c", "metric": "m", "published_ratio": 1.5, "expect": "greater than 1", "from": "a / b",
            "reason": ""}
    return pl.DataFrame([{**base, **r} for r in rows])


def test_verdicts_agree_or_are_inconclusive():
    a = _table([{"id": "x", "measured_ratio": 1.2, "verdict": HOLDS}, {"id": "y", "measured_ratio": 1.1, "verdict": HOLDS},
                {"id": "z", "measured_ratio": None, "verdict": NOT_EVALUATED}])
    b = _table([{"id": "x", "measured_ratio": 1.4, "verdict": HOLDS}, {"id": "y", "measured_ratio": 0.9, "verdict": FAILS},
                {"id": "z", "measured_ratio": None, "verdict": NOT_EVALUATED}])
    combined = {r["id"]: r for r in combine_claims([a, b]).iter_rows(named=True)}
    assert combined["x"]["verdict"] == HOLDS
    assert abs(combined["x"]["measured_ratio"] - 1.3) < 1e-9
    assert "1.20 to 1.40" in combined["x"]["from"]
    assert combined["y"]["verdict"] == INCONCLUSIVE
    assert "holds in 1, does not hold in 1 of 2" in combined["y"]["reason"]
    assert combined["z"]["verdict"] == NOT_EVALUATED


def test_one_table_is_returned_as_it_is():
    a = _table([{"id": "x", "measured_ratio": 1.2, "verdict": HOLDS}])
    assert combine_claims([a]).equals(a)


def test_two_grouped_runs_give_a_spread(isolated_run, monkeypatch):
    group = {"group": "iibench_500m-test-x2", "of": 2}
    paths = [run("iibench_500m", "smoke", "embedded", repeat={**group, "index": i}) for i in (1, 2)]
    assert paths[0] != paths[1]  # never overwritten: each run its own folder
    last = load_run(paths[1])
    runs = group_runs(last)
    assert [r.manifest["run_id"] for r in runs] == [p.name for p in paths]
    spread = spread_table(runs)
    rates = spread.filter((pl.col("phase") == "load") & (pl.col("metric") == "ops/s"))
    assert rates.height == len(last.systems)
    for row in rates.iter_rows(named=True):
        assert row["n"] == 2 and row["min"] <= row["mean"] <= row["max"] and row["cv_pct"] >= 0
    claims = combine_claims([ib.claims_table(r) for r in runs])
    assert set(claims["verdict"]) <= {HOLDS, FAILS, NOT_EVALUATED, INCONCLUSIVE, WITHIN_NOISE}
    assert "2 runs of this experiment" in section(last)
    assert set(spread["unit"]) >= {"ops/s", "ms", "us/op", "MiB"}
    # make compare of the two: each headline difference is judged against the group's own CV.
    monkeypatch.setenv("ENGINEBENCH_REPORTS", str(isolated_run / "reports"))
    page = write_comparison(paths[0], paths[1]).read_text()
    assert "noise (2 x CV = " in page and "Verdict per claim, A and B" in page
