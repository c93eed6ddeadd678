"""A drifting host: the probe before each system gives a claim the drift between its own two
systems, and a repeated group alternates its systems' order so a steady drift cancels
(results/calibration.py, report/trust.py, report/repeats.py, experiment.run_repeated)."""
from pathlib import Path

import polars as pl
import pytest

from enginebench import driver, experiment
from enginebench.report import noise
from enginebench.report.claims import FAILS, HOLDS, HOST_DRIFTED, CLAIM_ROW_SCHEMA
from enginebench.report.repeats import combine_claims
from enginebench.report.rundata import RunData
from enginebench.report.trust import host_drift_reason, withhold
from enginebench.results.calibration import own_drift, pair_drift, system_speed

# Issue 48's second default run: the probe read 1.37x at the end what it read at the start.
SPEED = {"start": {"docs_per_s": 100_000}, "end": {"docs_per_s": 137_000},
         "before": {"wt.op1": {"docs_per_s": 100_000}, "rx.op1": {"docs_per_s": 104_000},
                    "lmdb.op1": {"docs_per_s": 136_000}}}
ORDER = ["wt.op1", "rx.op1", "lmdb.op1"]


def _run(order_kind="listed", order=ORDER, speed=SPEED, repeat=None) -> RunData:
    manifest = {"experiment": "linkbench_cached", "scale": "default", "host": {"speed": speed},
                "order": {"kind": order_kind, "systems": order}, "params": {}, "repeat": repeat or {}}
    return RunData(Path("/nonexistent"), manifest, pl.DataFrame(), pl.DataFrame(), pl.DataFrame())


def _row(systems: str, ratio=1.61, verdict=HOLDS, metric="run.ops") -> dict:
    return {"id": "lb.query.cached", "claim": "c", "metric": metric, "published_ratio": 1.34,
            "measured_ratio": ratio, "expect": "greater than 1", "verdict": verdict, "from": "", "reason": "",
            "swing": None, "systems": systems}


def test_a_systems_speed_is_the_mean_of_the_probes_around_it():
    assert system_speed(SPEED, ORDER, "wt.op1") == pytest.approx((100_000 * 104_000) ** 0.5)
    assert system_speed(SPEED, ORDER, "lmdb.op1") == pytest.approx((136_000 * 137_000) ** 0.5)
    assert pair_drift(SPEED, ORDER, "rx.op1", "wt.op1") == pytest.approx(
        ((104_000 * 136_000) ** 0.5) / ((100_000 * 104_000) ** 0.5))
    assert pair_drift({"start": SPEED["start"]}, ORDER, "rx.op1", "wt.op1") is None  # a run made before the probes


def test_a_claim_whose_two_systems_ran_at_one_speed_keeps_its_verdict_when_the_run_drifted():
    run = _run(order=["wt.op1", "rx.op1", "lmdb.op1"],
               speed={**SPEED, "before": {**SPEED["before"], "rx.op1": {"docs_per_s": 101_000},
                                          "lmdb.op1": {"docs_per_s": 102_000}}})
    assert host_drift_reason(run, "rx.op1,wt.op1") is None
    assert "at the end what it read at the start" in host_drift_reason(run)  # the run as a whole drifted
    table = withhold(run, pl.DataFrame([_row("rx.op1,wt.op1"), _row("")], schema=CLAIM_ROW_SCHEMA))
    assert table["verdict"].to_list() == [HOLDS, HOST_DRIFTED]


def test_a_claim_whose_systems_ran_at_different_speeds_is_withheld_naming_them():
    reason = host_drift_reason(_run(), "lmdb.op1,wt.op1")
    assert "while lmdb.op1 ran what it read while wt.op1 ran" in reason


def test_the_noise_of_a_claim_is_the_drift_between_its_systems():
    run = _run()
    floor = noise.host_floor(run, "rx.op1,wt.op1")
    assert floor == pytest.approx(abs(__import__("math").log(pair_drift(SPEED, ORDER, "rx.op1", "wt.op1"))))
    near = noise.single_run(run, _row("rx.op1,wt.op1", ratio=1.0 + floor / 2))
    assert near["verdict"] == "within noise" and "while its two systems ran" in near["reason"]


def test_an_alternating_group_judges_the_runs_the_host_drifted_under():
    drifted = {**_row("rx.op1,wt.op1", ratio=1.45), "verdict": HOST_DRIFTED, "reason": "the host's speed probe ..."}
    tables = [pl.DataFrame([_row("rx.op1,wt.op1", ratio=1.70)], schema=CLAIM_ROW_SCHEMA),
              pl.DataFrame([drifted], schema=CLAIM_ROW_SCHEMA)]
    same_order = combine_claims(tables).row(0, named=True)
    assert same_order["verdict"] == HOST_DRIFTED  # no ordering cancels it: withheld
    alternating = combine_claims(tables, alternating=True).row(0, named=True)
    assert alternating["verdict"] == HOLDS and alternating["measured_ratio"] == pytest.approx(1.575)
    assert "alternated the systems' order (ABBA)" in alternating["reason"]
    failing = {**drifted, "measured_ratio": 0.9}
    split = combine_claims([tables[0], pl.DataFrame([failing], schema=CLAIM_ROW_SCHEMA)], alternating=True)
    assert split.row(0, named=True)["verdict"] == "inconclusive"  # judged, and the runs disagree
    assert FAILS not in split["verdict"].to_list()


def test_a_repeated_group_alternates_its_systems_order(monkeypatch):
    orders = []
    monkeypatch.setattr(driver, "run", lambda *a, order="listed", **k: orders.append(order) or Path("/x"))
    experiment.run_repeated("linkbench_cached", "smoke", "embedded", 4)
    assert orders == ["listed", "reversed", "listed", "reversed"]
    orders.clear()
    experiment.run_repeated("flashback_replay", "smoke", "embedded", 2)  # its later systems replay the first's capture
    assert orders == ["listed", "listed"]


def test_an_unknown_order_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="allowed: listed, reversed"):
        driver.run("linkbench_cached", "smoke", order="shuffled")


def test_a_bound_on_one_system_is_judged_on_the_drift_around_it():
    """fb.writes_fast (RocksDB's slowest replayed write under 10 ms) reads one system: the host's
    speed just before and just after it ran, not the whole run's start against its end."""
    run = _run()
    assert own_drift(SPEED, ORDER, "rx.op1") == pytest.approx(136_000 / 104_000)
    assert host_drift_reason(run, "lmdb.op1") is None  # 136,000 before it, 137,000 at the end
    assert "just after rx.op1 ran what it read just before" in host_drift_reason(run, "rx.op1")
    near = noise.single_run(run, {**_row("lmdb.op1", ratio=1.005), "expect": "greater than 1"})
    assert near["verdict"] == "within noise" and "while its system ran" in near["reason"]
