"""A phase's latency per op type comes from its intervals' HdrHistograms merged exactly; its mean
is read from the intervals' own means (weighted by their histograms' counts), which must be the
merged histogram's mean as the library computes it."""
import random

import polars as pl
import pytest
from hdrh.histogram import HdrHistogram

from enginebench.report.rundata import merge_histograms, merged_latency


def _interval(values_us: list[int], interval: int, op: str = "read") -> dict:
    hist = HdrHistogram(1, 60_000_000, 3)
    for value in values_us:
        hist.record_value(value)
    return {"system": "wt", "phase": "run", "interval": interval, "op": op, "count": len(values_us), "errors": 0,
            "items": len(values_us), "mean_us": hist.get_mean_value(), "hist": hist.encode().decode()}


def test_the_mean_of_merged_intervals_is_the_merged_histograms_own():
    rng = random.Random(7)
    # Intervals of very different sizes and spreads, so an unweighted mean of means would be wrong.
    rows = [_interval([rng.randint(50, 200) for _ in range(5_000)], 1),
            _interval([rng.randint(1_000, 90_000) for _ in range(37)], 2),
            _interval([rng.choice((80, 120, 4_000_000)) for _ in range(900)], 3)]
    ops = pl.DataFrame(rows)
    [entry] = merged_latency(ops, "wt", "run")
    library = merge_histograms(ops["hist"]).get_mean_value()
    assert entry["mean_ms"] == pytest.approx(library / 1000, rel=1e-12)
    assert entry["count"] == 5_937
    unweighted = sum(r["mean_us"] for r in rows) / len(rows) / 1000
    assert abs(entry["mean_ms"] - unweighted) > 1, "the intervals are weighted by their counts"


def test_rows_without_their_own_mean_fall_back_to_the_library_over_the_merged_histogram():
    rows = [_interval([100, 200, 300], 1), _interval([1_000], 2)]
    rows[1]["mean_us"] = None  # a table written before the column was kept
    ops = pl.DataFrame(rows)
    [entry] = merged_latency(ops, "wt", "run")
    assert entry["mean_ms"] == pytest.approx(merge_histograms(ops["hist"]).get_mean_value() / 1000)
    [entry] = merged_latency(ops.drop("mean_us"), "wt", "run")
    assert entry["mean_ms"] == pytest.approx(merge_histograms(ops["hist"]).get_mean_value() / 1000)
