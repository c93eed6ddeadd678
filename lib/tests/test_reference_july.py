"""The July 2015 LinkBench tables (data/reference/linkbench_2015_07_*.csv) and how the LinkBench
report sets them beside the November post's claims."""
import csv

import polars as pl
import pytest

from enginebench.paths import reference_dir
from enginebench.families.linkbench import july as july

ROLE = {"wiredtiger": "btree", "rocksdb": "lsm"}


def claims() -> dict[str, dict]:
    with open(reference_dir() / "claims.csv", newline="") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def test_every_series_has_the_twelve_hours_of_each_engine_the_post_ran():
    qps = pl.read_csv(reference_dir() / "linkbench_2015_07_qps.csv", comment_prefix="#")
    engines = {c: set(qps.filter(pl.col("config") == c)["engine"]) for c in qps["config"].unique()}
    # mmapv1 was not run larger than RAM ("I didn't have enough disk space or patience").
    assert engines == {"cached": {"wiredtiger", "rocksdb", "tokumx", "mmapv1"},
                       "larger_than_ram": {"wiredtiger", "rocksdb", "tokumx"}}
    hours = qps.group_by("config", "engine").agg(pl.col("hour").sort())
    assert all(h.to_list() == list(range(1, 13)) for h in hours["hour"])
    summary = pl.read_csv(reference_dir() / "linkbench_2015_07_engines.csv", comment_prefix="#")
    assert {(r["config"], r["engine"]) for r in summary.iter_rows(named=True)} == \
        {(c, e) for c, es in engines.items() for e in es}


def test_each_compared_claim_exists_and_keeps_its_direction():
    published = claims()
    for claim_id, (num, den, _) in july.CLAIMS.items():
        claim = published[claim_id]
        assert (ROLE[num], ROLE[den]) == (claim["numerator_role"], claim["denominator_role"]), claim_id


@pytest.mark.parametrize("experiment, config", [("linkbench_cached", "cached"),
                                                ("linkbench_uncached_disk", "uncached_disk"),
                                                ("linkbench_uncached_ssd", "uncached_ssd")])
def test_the_report_table_names_only_this_experiments_claims(experiment, config):
    table = july.claims_beside(experiment, config)
    published = claims()
    assert not table.is_empty()
    for row in table.iter_rows(named=True):
        assert experiment in published[row["id"]]["experiment"]
        a, b = (float(v) for v in row["values"].split(" / "))
        assert row["July ratio"] == round(a / b, 2)
        assert row["published ratio (Nov 2015)"] == float(published[row["id"]]["reference_ratio"])
    assert july.series(config).height == (4 if config == "cached" else 3)


def test_no_july_table_where_no_configuration_matches():
    assert july.claims_beside("iibench_500m", "none").is_empty()
    assert july.series("none").is_empty()
