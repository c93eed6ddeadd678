"""iibench's headline metrics as b-tree / LSM pairs, the post's beside ours (report/normalised.py)."""
from __future__ import annotations

import polars as pl

from ...paths import reference_dir
from ...report.normalised_pairs import BTREE_LSM, Pair, in_gib, labels
from ...report.rundata import RunData
from . import report as iibench

# -- iibench: WiredTiger 3.1.5 (the newer of the post's two, as derivations.csv) / RocksDB -------
IIBENCH = {"insert rate": ("insert_rate", "irate", "ib.insert.lsm_vs_btree"),
           "query rate": ("query_rate", "qrate", "ib.query.btree_vs_lsm"),
           "size at the end, GB": ("size_gb", "size_bytes", "ib.size.btree_vs_lsm")}
IIBENCH_SERVERS = ("WiredTiger 3.1.5", "RocksDB 3.0.x")


def normalised_pairs(run: RunData) -> tuple[list[Pair], str]:
    ref = pl.read_csv(reference_dir() / "iibench_2015.csv")
    a, b = run.complete_of_role("btree"), run.complete_of_role("lsm")
    figures = [iibench.system_figures(run, s["label"]) or {} if s else {} for s in (a, b)]
    out = []
    for metric, (column, key, claim) in IIBENCH.items():
        post = [ref.filter(pl.col("server") == s)[column][0] for s in IIBENCH_SERVERS]
        ours = [f.get(key) for f in figures]
        ours = in_gib(ours) if key == "size_bytes" else ours
        out.append(Pair(metric, BTREE_LSM, *post, IIBENCH_SERVERS, *ours, labels(a, b), claim=claim))
    return out, ""
