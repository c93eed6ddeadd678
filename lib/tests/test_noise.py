"""A verdict whose effect the measurement's noise could make or unmake reads `within noise`: for a
single run the noise is the host's measured speed change over the run, over repeats the runs'
own spread (report/noise.py)."""
import math
from types import SimpleNamespace

import polars as pl
import pytest

from enginebench.report import noise
from enginebench.report.claims import FAILS, HOLDS, INCONCLUSIVE, WITHIN_NOISE, evaluate
from enginebench.report.claims import Measured
from enginebench.report.repeats import combine_claims

# sb.checkpoint and lb.oplog.wkb as claims.csv states them.
CHECKPOINT = {"id": "sb.checkpoint", "claim": "A longer checkpoint interval raises throughput",
              "metric": "ops_per_s (checkpoint 900 / 60)", "reference_ratio": "1.09", "expect": "greater than 1"}
OPLOG = {"id": "lb.oplog.wkb", "claim": "Using the oplog roughly doubles disk KB written per insert",
         "metric": "load.wkb_per_op (oplog on / off)", "reference_ratio": "1.71", "expect": "greater than 1.3"}


def _run(start_docs_per_s, end_docs_per_s):
    return SimpleNamespace(manifest={"host": {"speed": {"start": {"docs_per_s": start_docs_per_s},
                                                         "end": {"docs_per_s": end_docs_per_s}}}})


def _table(claims: list[dict], ratios: dict[str, float]) -> pl.DataFrame:
    return evaluate(pl.DataFrame(claims), lambda c: Measured(ratios[c["id"]], "measured"))


def _row(table, claim_id):
    return table.filter(pl.col("id") == claim_id).row(0, named=True)


def test_the_bound_is_what_the_expectation_compares_with():
    assert noise.bounds("greater than 1.3") == [1.3]
    assert noise.bounds("between 0.85 and 1.15") == [0.85, 1.15]
    assert noise.bounds("lowest") == [1.0]
    assert noise.margin(1.0 / 1.1, "greater than 1") == pytest.approx(math.log(1.1))
    assert noise.margin(1.1, "between 0.85 and 1.15") == pytest.approx(math.log(1.15 / 1.1))


def test_a_single_runs_small_effect_inside_the_hosts_drift_is_within_noise():
    # The sysbench default's 2.5% checkpoint effect on a host whose probe moved 4% over the run.
    run = _run(250_000, 240_000)
    row = noise.single_run(run, _row(_table([CHECKPOINT], {"sb.checkpoint": 1.025}), "sb.checkpoint"))
    assert row["verdict"] == WITHIN_NOISE
    assert "1.025" in row["reason"] and "4.2%" in row["reason"] and "REPEAT=3" in row["reason"]


def test_an_effect_beyond_the_hosts_drift_keeps_its_verdict():
    run = _run(250_000, 240_000)
    held = noise.single_run(run, _row(_table([CHECKPOINT], {"sb.checkpoint": 1.09}), "sb.checkpoint"))
    failed = noise.single_run(run, _row(_table([CHECKPOINT], {"sb.checkpoint": 0.90}), "sb.checkpoint"))
    assert (held["verdict"], failed["verdict"]) == (HOLDS, FAILS)


def test_bytes_per_operation_do_not_move_with_the_hosts_speed():
    # 1.31 against the bound 1.3: closer than the host's drift, but bytes do not depend on speed.
    run = _run(250_000, 200_000)
    row = noise.single_run(run, _row(_table([OPLOG], {"lb.oplog.wkb": 1.31}), "lb.oplog.wkb"))
    assert row["verdict"] == HOLDS


def test_without_a_probe_at_both_ends_there_is_no_floor():
    row = noise.single_run(SimpleNamespace(manifest={"host": {}}),
                           _row(_table([CHECKPOINT], {"sb.checkpoint": 1.001}), "sb.checkpoint"))
    assert row["verdict"] == HOLDS


def test_repeats_that_agree_are_within_noise_when_their_spread_covers_the_bound():
    close = [_table([CHECKPOINT], {"sb.checkpoint": r}) for r in (1.005, 1.04, 1.01)]
    combined = _row(combine_claims(close), "sb.checkpoint")
    assert combined["verdict"] == WITHIN_NOISE and "two standard errors" in combined["reason"]
    clear = [_table([CHECKPOINT], {"sb.checkpoint": r}) for r in (1.30, 1.32, 1.28)]
    assert _row(combine_claims(clear), "sb.checkpoint")["verdict"] == HOLDS
    split = [_table([CHECKPOINT], {"sb.checkpoint": r}) for r in (1.02, 0.99, 1.01)]
    assert _row(combine_claims(split), "sb.checkpoint")["verdict"] == INCONCLUSIVE
