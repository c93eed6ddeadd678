"""The same author's LinkBench runs of July 2015 beside the November 2015 post's claims.

WiredTiger, RocksDB, TokuMX and mmapv1, 12 one-hour query intervals, a cached database and one larger
than RAM (data/reference/linkbench_2015_07_*.csv). They ran other versions on other hardware than the
November post, so they are a second published reading of some of its claims, shown beside them, never
a verdict. Their "larger than RAM" configuration stands beside both of our not-cached ones.
"""
from __future__ import annotations

import polars as pl

from ...paths import reference_dir
from ...report.claims import load_claims

CONFIG = {"cached": "cached", "uncached_disk": "larger_than_ram", "uncached_ssd": "larger_than_ram"}
NAMES = {"wiredtiger": "WiredTiger", "rocksdb": "RocksDB", "tokumx": "TokuMX", "mmapv1": "mmapv1"}
# claim id -> (numerator engine, denominator engine, column): the claim's own direction.
CLAIMS = {
    "lb.query.cached.btree_vs_lsm": ("wiredtiger", "rocksdb", "queries_per_s"),
    "lb.query.uncached.lsm_vs_btree": ("rocksdb", "wiredtiger", "queries_per_s"),
    "lb.p99.getlinkslist.cached": ("rocksdb", "wiredtiger", "p99_get_links_list_ms"),
    "lb.space.btree_vs_lsm": ("wiredtiger", "rocksdb", "size_gb_hour12"),
}
WHAT = {"p99_get_links_list_ms": "get_links_list p99 (ms)", "size_gb_hour12": "database GB at the end of hour 12"}
# Query rates are compared at the November post's 2nd hour and at the last of the 12.
HOURS = (2, 12)


def _table(name: str, config: str) -> pl.DataFrame:
    table = pl.read_csv(reference_dir() / f"linkbench_2015_07_{name}.csv", comment_prefix="#")
    return table.filter(pl.col("config") == config)


def series(config: str) -> pl.DataFrame:
    """Queries/s per 1-hour interval of the July configuration matching ours, one row per engine as
    the post printed its graph's data; empty where none matches."""
    if config not in CONFIG:
        return pl.DataFrame()
    wide = _table("qps", CONFIG[config]).pivot(on="hour", index="engine", values="queries_per_s",
                                               maintain_order=True)
    return wide.rename({h: f"hour {h}" for h in wide.columns if h != "engine"})


def claims_beside(experiment: str, config: str) -> pl.DataFrame:
    """For this experiment's claims the July runs bear on: the July values and ratio, beside the
    ratio claims.csv publishes from the November post. Empty when none applies."""
    if config not in CONFIG:
        return pl.DataFrame()
    qps, engines = _table("qps", CONFIG[config]), _table("engines", CONFIG[config])
    rows = []
    for claim in load_claims(experiment).iter_rows(named=True):
        if claim["id"] not in CLAIMS:
            continue
        num, den, column = CLAIMS[claim["id"]]
        if column == "queries_per_s":
            picks = [(f"queries/s, hour {h}", qps.filter(pl.col("hour") == h)) for h in HOURS]
        else:
            picks = [(WHAT[column], engines)]
        for what, table in picks:
            a, b = (table.filter(pl.col("engine") == e)[column].item() for e in (num, den))
            rows.append({"id": claim["id"], "July 2015": f"{NAMES[num]} / {NAMES[den]}, {what}",
                         "values": f"{a:g} / {b:g}", "July ratio": round(a / b, 2),
                         "published ratio (Nov 2015)": float(claim["reference_ratio"]) if claim["reference_ratio"] else None})
    return pl.DataFrame(rows)
