"""Verdicts carry their trust: the steady rule, a drifting host, a smoke run, and the size column."""
import math
from pathlib import Path

import polars as pl
import pytest

from enginebench.families.linkbench import report as lb
from enginebench.report import repeats
from enginebench.report.claims import (FAILS, HOLDS, HOST_DRIFTED, NOT_EVALUATED, NOT_STEADY, SMOKE, size_column,
                                       verdict_counts, verdict_summary)
from enginebench.report.index import verdicts_cell
from enginebench.report.rundata import RunData
from enginebench.metrics.steady import QUIET, STATIONARY, steady_state, swing
from enginebench.report import noise
from enginebench.report.claims import WITHIN_NOISE
from enginebench.report.steady import STEADY_MIN_INTERVALS, steadiness, steady_finding, steady_table, steady_tail
from enginebench.report.trust import withhold

# linkbench_uncached_disk at the old default scale (3 x 60 s after a cold start), from issue 14.9.
RX_WARMING = [394.0, 635.0, 846.0]
WT_HELD = [515.0, 575.0, 548.0]


# -- the steady rule --------------------------------------------------------------------------
def test_a_rate_still_rising_is_not_steady_and_a_held_one_is():
    assert steady_tail(RX_WARMING) == 0
    assert steady_tail(WT_HELD) == 3


def test_the_steady_intervals_are_the_longest_passing_tail():
    assert steady_tail([394, 635, 846, 880, 860, 905, 870]) == 5  # warming, then within +-10%
    assert steady_tail([800, 805] ) == 0  # fewer intervals than the rule asks for
    assert STEADY_MIN_INTERVALS == 3


# RocksDB's query phase as issue 48 saw it at the default scale: 15 intervals of 20 s swinging
# between about 5,500 and 10,500 requests/s as compactions come and go, around a flat mean;
# WiredTiger quiet after its first intervals.
RX_SWINGING = [6100.0, 9800.0, 7400.0, 10500.0, 5600.0, 8900.0, 9900.0, 5500.0, 10200.0, 7900.0,
               6200.0, 10300.0, 8100.0, 5700.0, 9600.0]
WT_QUIET = [4200.0, 5000.0, 5400.0, 5600.0, 5500.0, 5650.0, 5550.0, 5600.0, 5500.0, 5700.0,
            5600.0, 5550.0, 5650.0, 5600.0, 5550.0]


def test_a_rate_swinging_around_a_flat_mean_is_steady_as_stationary():
    state = steady_state(RX_SWINGING)
    assert state.kind == STATIONARY and state.intervals == 10  # the last two thirds, at least 8
    assert state.trend_p is not None and state.trend_p >= 0.05
    assert steady_state(WT_QUIET).kind == QUIET


def test_a_rate_still_trending_over_its_window_stays_not_steady():
    climbing = [2000.0 + 400 * k + (900 if k % 2 else -900) for k in range(15)]  # swings, and climbs
    state = steady_state(climbing)
    assert state.intervals == 0 and state.trend_p < 0.05
    assert steady_state([5600.0, 9800.0, 6000.0, 10000.0, 5800.0, 9900.0, 6100.0]).trend_p is None  # too few to test
    described = steadiness(_run(climbing, WT_QUIET, interval_s=20.0), "rx.op1").describe()
    assert "still trend" in described and "Mann-Kendall" in described


def test_the_swing_is_the_standard_error_of_the_mean_cut_for_neighbours_alike():
    assert swing([100.0, 100.0, 100.0]) == 0.0
    alternating = [90.0, 110.0] * 6  # neighbours unlike: n counts in full
    assert swing(alternating) == pytest.approx(math.sqrt(sum((v - 100) ** 2 for v in alternating) / 11 / 12) / 100)
    runs_of_three = [90.0, 90.0, 90.0, 110.0, 110.0, 110.0] * 2  # neighbours alike: fewer effective samples
    assert swing(runs_of_three) > swing(alternating)
    assert swing([1.0, 2.0]) is None


def test_a_stationary_system_gets_a_verdict_with_its_swing_in_the_noise():
    run = _run(RX_SWINGING, WT_QUIET, interval_s=20.0, speed=SPEED_HELD)
    claim = _query_claim(run)
    assert claim["verdict"] in (HOLDS, FAILS)
    assert "as stationary" in claim["from"] and "swing the ratio" in claim["from"]
    assert 0.05 < claim["swing"] < 0.5
    rx_mean = sum(RX_SWINGING[5:]) / 10
    wt_mean = sum(WT_QUIET[steadiness(run, "wt.op1").passed[0]:]) / len(steadiness(run, "wt.op1").passed)
    assert claim["measured_ratio"] == pytest.approx(rx_mean / wt_mean)
    # A ratio nearer its bound than the swing reads within noise, naming the swing.
    near = {**claim, "measured_ratio": 1.0 + claim["swing"] / 2, "expect": "greater than 1"}
    judged = noise.single_run(run, near)
    assert judged["verdict"] == WITHIN_NOISE and "intervals swing the ratio" in judged["reason"]


def _interval_rows(label: str, rates: list[float], seconds: float = 60.0) -> list[dict]:
    return [{"system": label, "phase": "run", "interval": k, "seconds": seconds, "ops": rate * seconds,
             "ops_per_s": rate, "per_op_denominator": rate * seconds, "requests": rate * seconds,
             "t_end": (k + 1) * seconds, "client_cpu_s": 1.0} for k, rate in enumerate(rates)]


SPEED_HELD = {"start": {"docs_per_s": 250_000}, "end": {"docs_per_s": 251_000}}


def _run(rx_rates, wt_rates, scale="default", speed=None, interval_s=60.0) -> RunData:
    systems = [{"label": "wt.op1", "role": "btree", "engine": "wiredtiger", "options": {"oplog": True}},
               {"label": "rx.op1", "role": "lsm", "engine": "rocksdb", "options": {"oplog": True}}]
    manifest = {"experiment": "linkbench_uncached_disk", "run_id": "t", "scale": scale,
                "params": {"systems": systems, "notebook": "linkbench"},
                "systems": {s["label"]: {"status": "complete", "runner": {"runner": "native"}} for s in systems},
                "host": {"speed": speed or {}}}
    intervals = pl.DataFrame(_interval_rows("wt.op1", wt_rates, interval_s) + _interval_rows("rx.op1", rx_rates, interval_s))
    return RunData(Path("/nonexistent"), manifest, intervals, pl.DataFrame(), pl.DataFrame())


def _query_claim(run: RunData) -> dict:
    table = lb.claims_table(run)
    return table.filter(pl.col("id") == "lb.query.uncached.lsm_vs_btree").row(0, named=True)


def test_a_system_that_never_got_steady_gives_not_steady_with_the_rule_not_a_verdict():
    claim = _query_claim(_run(RX_WARMING, WT_HELD))
    assert claim["verdict"] == NOT_STEADY
    assert "rx.op1 not steady" in claim["reason"] and "±10%" in claim["reason"]
    # The ratio shown is over every interval (the mean), not the last one's 1.64x.
    assert claim["measured_ratio"] == pytest.approx(sum(RX_WARMING) / sum(WT_HELD))


def test_steady_systems_are_judged_on_the_intervals_that_passed():
    rx = RX_WARMING + [880.0, 860.0, 905.0, 870.0]
    wt = WT_HELD + [560.0, 540.0, 555.0, 545.0]
    claim = _query_claim(_run(rx, wt))
    assert claim["verdict"] == HOLDS
    passed_rx, passed_wt = steadiness(_run(rx, wt), "rx.op1").passed, steadiness(_run(rx, wt), "wt.op1").passed
    assert passed_rx == [2, 3, 4, 5, 6] and passed_wt == list(range(7))
    expected = (sum(rx[2:]) / 5) / (sum(wt) / 7)
    assert claim["measured_ratio"] == pytest.approx(expected)
    assert "rx.op1 intervals 3-7 of 7 passed" in claim["from"]
    finding = steady_finding(_run(rx, wt))
    assert "last 3 or more query intervals" in finding and "rx.op1" in finding and "intervals 3-7 of 7 passed" in finding
    table = {r["setup"]: r for r in steady_table(_run(rx, RX_WARMING)).iter_rows(named=True)}
    assert table["rx.op1"]["steady"] == "yes" and table["wt.op1"]["steady"] == "no"
    assert table["wt.op1"]["ops/s per interval"] == "394 → 635 → 846"
    assert "spread ±37%" in table["wt.op1"]["judged on"]


# -- trust from the run's own warnings ----------------------------------------------------------
def _table(rows):
    base = {"claim": "c", "published_ratio": 1.5, "measured_ratio": 1.4, "expect": "greater than 1", "from": "a / b",
            "reason": ""}
    return pl.DataFrame([{**base, **r} for r in rows])


CLAIMS = _table([{"id": "rate", "metric": "run.ops", "verdict": HOLDS},
                 {"id": "space", "metric": "run.size_du_gb", "verdict": FAILS},
                 {"id": "none", "metric": "run.ops", "verdict": NOT_EVALUATED, "measured_ratio": None,
                  "reason": "no complete system of role fractal ran"}])


def test_a_drifting_host_withholds_the_claims_on_time_only():
    run = _run(WT_HELD, WT_HELD, speed={"start": {"docs_per_s": 10_000}, "end": {"docs_per_s": 15_400}})
    out = {r["id"]: r for r in withhold(run, CLAIMS).iter_rows(named=True)}
    assert out["rate"]["verdict"] == HOST_DRIFTED and "1.54x" in out["rate"]["reason"]
    assert out["space"]["verdict"] == FAILS  # bytes on disk do not depend on the host's speed
    assert out["none"]["verdict"] == NOT_EVALUATED and out["none"]["reason"] == "no complete system of role fractal ran"


def test_a_host_within_the_bound_keeps_its_verdicts():
    run = _run(WT_HELD, WT_HELD, speed={"start": {"docs_per_s": 10_000}, "end": {"docs_per_s": 11_000}})
    assert withhold(run, CLAIMS)["verdict"].to_list() == [HOLDS, FAILS, NOT_EVALUATED]


def test_a_smoke_run_has_no_verdicts_and_says_so_everywhere():
    run = _run(WT_HELD, WT_HELD, scale="smoke")
    out = withhold(run, CLAIMS)
    assert out["verdict"].to_list() == [SMOKE, SMOKE, NOT_EVALUATED]
    assert verdict_summary(out) == f"{SMOKE} (2 claims measured, 1 not evaluated)"
    cell = verdicts_cell(verdict_counts(out))
    assert SMOKE in cell and "hold</span>" not in cell


def test_the_report_funnel_withholds_and_adds_the_size_column():
    run = _run(WT_HELD, WT_HELD, scale="smoke")
    table = repeats.claims(run, lb.claims_table)
    measured = table.filter(pl.col("verdict") != NOT_EVALUATED)
    assert measured.height and (measured["verdict"] == SMOKE).all()
    assert table.columns[table.columns.index("verdict") + 1] == "size"
    assert (measured["size"] == "no verdict").all()


def test_withheld_verdicts_are_counted_by_name():
    table = _table([{"id": "a", "metric": "run.ops", "verdict": HOLDS},
                    {"id": "b", "metric": "run.ops", "verdict": NOT_STEADY},
                    {"id": "c", "metric": "run.ops", "verdict": HOST_DRIFTED}])
    assert verdict_summary(table) == "1 hold, 0 do not hold, 0 not evaluated, 1 host drifted, 1 not steady"
    cell = verdicts_cell(verdict_counts(table))
    assert "1 not steady" in cell and "1 host drifted" in cell


def test_one_unsteady_run_of_a_repeated_group_leaves_it_without_a_verdict():
    a = _table([{"id": "x", "metric": "run.ops", "verdict": HOLDS}])
    b = _table([{"id": "x", "metric": "run.ops", "verdict": NOT_STEADY, "reason": "rx.op1 not steady"}])
    row = repeats.combine_claims([a, b]).row(0, named=True)
    assert row["verdict"] == NOT_STEADY and row["reason"] == "in 1 of 2 runs: rx.op1 not steady"


# -- the size of the effect ------------------------------------------------------------------
@pytest.mark.parametrize("published, measured, size", [
    (2.43, 1.14, "direction only"),   # "more than 2X better", measured 1.14x (issue 15.2)
    (3.06, 44.3, "direction only"),   # "about 3.5X", measured 44.3x (issue 15.2)
    (1.34, 1.30, "holds"),
    (1.59, 1.40, "holds"),
    (1.01, 1.05, "holds"),            # a near-parity claim: the ratios themselves are compared
    (1.01, 1.20, "direction only"),
    (None, 1.30, "no published size"),
])
def test_the_size_column_holds_only_within_the_stated_factor(published, measured, size):
    assert size_column(HOLDS, published, measured) == size


def test_the_size_column_of_a_claim_without_a_verdict():
    assert size_column(FAILS, 2.43, 0.9) == FAILS
    for verdict in (NOT_STEADY, HOST_DRIFTED, SMOKE, NOT_EVALUATED):
        assert size_column(verdict, 2.43, 2.4) == "no verdict"


@pytest.mark.parametrize("exp", ["linkbench_cached", "linkbench_uncached_disk", "linkbench_uncached_ssd"])
def test_default_scales_leave_room_to_reach_steady_state(exp):
    """At least twice the rule's intervals: a system warming for the first few, or disturbed in
    one, still has a passing tail of STEADY_MIN_INTERVALS."""
    from enginebench.params import load_params
    measure = load_params(exp, "default")["phases"]["measure"]
    assert measure["duration_s"] / measure["interval_s"] >= 2 * STEADY_MIN_INTERVALS
