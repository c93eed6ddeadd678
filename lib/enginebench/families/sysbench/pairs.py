"""sysbench's transactions/s per memory size as b-tree / LSM pairs, the post's beside ours (report/normalised.py)."""
from __future__ import annotations

from itertools import zip_longest

import polars as pl

from ...paths import reference_dir
from ...report.normalised_pairs import BTREE_LSM, Pair
from ...report.rundata import RunData
from . import report as sysbench

# -- sysbench: WiredTiger with its default 60 s checkpoint / RocksDB, per memory size; ours are
# matched to the post's sizes by rank, smallest with smallest ------------------------------------
SYSBENCH_SYSTEMS = ("wiredTiger", "RocksDB")


def normalised_pairs(run: RunData) -> tuple[list[Pair], str]:
    ref = pl.read_csv(reference_dir() / "sysbench_2015.csv")
    post = {size: [group.filter(pl.col("system") == s)["ops_per_s"][0] for s in SYSBENCH_SYSTEMS]
            for (size,), group in ref.sort("cache_gib").group_by(["cache_gib"], maintain_order=True)}
    totals = dict(ref.select("cache_gib", "total_gib").unique().iter_rows())
    btree, lsm = sysbench._rates_by_memory(run, sysbench.BTREE), sysbench._rates_by_memory(run, sysbench.LSM)
    out = []
    for cache, memory in zip_longest(sorted(post), sorted(set(btree) | set(lsm))):
        where = f"{cache}/{totals[cache]} GiB" if cache is not None else "no post size"
        metric = f"transactions/s at the post's {where}" + (f" and our {memory} MB" if memory is not None else "")
        post_a, post_b = post.get(cache, (None, None))
        ours_a, ours_b = btree.get(memory), lsm.get(memory)
        out.append(Pair(metric, BTREE_LSM, post_a, post_b, tuple(f"{s} ({where})" for s in SYSBENCH_SYSTEMS),
                        ours_a, ours_b, ("b-tree, checkpoint 60 s", "LSM"),
                        "" if memory is not None else "this run has fewer memory sizes than the post"))
    return out, ""
