"""Per family: which of the post's rows (data/reference) and which of our figures (the family's
report module, as its claims use them) make each headline metric's b-tree / write-optimised pair.
Each family is one mapping of metrics and one function; report/normalised.py does the rest."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

import polars as pl

from ..paths import reference_dir
from . import iibench, linkbench, sysbench, tokumx
from .claims import cpu_comparability
from .rundata import RunData

BTREE_LSM = "b-tree / LSM"
GIB = 1 << 30


@dataclass(frozen=True)
class Pair:
    metric: str
    direction: str
    post_btree: float | None
    post_other: float | None
    post_from: tuple[str, str]
    our_btree: float | None
    our_other: float | None
    our_from: tuple[str, str]
    note: str = ""


def _in_gib(values: list[float | None]) -> list[float | None]:
    """Our sizes are bytes; the posts give GB (du's G)."""
    return [None if v is None else v / GIB for v in values]


def _labels(a: dict | None, b: dict | None) -> tuple[str, str]:
    return (a["label"] if a else "no b-tree system", b["label"] if b else "no LSM system")


# -- LinkBench: the post's oplog-on rows of MongoDB 3.2 (docs/results.md, "the oplog-on rows"), its last
# reported hour for the query phase as ours uses our last interval ------------------------------
LINKBENCH = {"inserts/s (load)": ("load", "ops"), "queries/s": ("run", "ops"), "r/o (queries)": ("run", "r_per_op"),
             "wKB/o (load)": ("load", "wkb_per_op"), "wKB/o (queries)": ("run", "wkb_per_op"),
             "cpu/o (load)": ("load", "cpu_per_op"), "cpu/o (queries)": ("run", "cpu_per_op"),
             "size (du) at the end, GB": ("run", "size_du_gb")}
LINKBENCH_SETUPS = ("wt.320.op1", "rx.320.op1")


def _linkbench_post(config: str, phase: str, column: str) -> tuple[list[float | None], str]:
    rows = linkbench.reference_table(config).filter(pl.col("phase") == phase)
    where = "load"
    if phase == "run":
        hour = rows["hour"].max()
        rows, where = rows.filter(pl.col("hour") == hour), f"hour {hour}"
    values = [next(iter(rows.filter(pl.col("setup") == s)[column].to_list()), None) for s in LINKBENCH_SETUPS]
    return values, where


def linkbench_pairs(run: RunData) -> tuple[list[Pair], str]:
    config = run.manifest["params"]["reference"]["config"]
    a, b = linkbench.pick_pair(run, "btree", "lsm")
    out = []
    for metric, (phase, column) in LINKBENCH.items():
        (post_a, post_b), where = _linkbench_post(config, phase, column)
        ours = [linkbench._value(run, s["label"], phase, column, None) if s else None for s in (a, b)]
        ours = _in_gib(ours) if column == "size_du_gb" else ours
        note = cpu_comparability([a, b], phase) if column == "cpu_per_op" and a and b else None
        if note:
            ours = [None, None]
        out.append(Pair(metric, BTREE_LSM, post_a, post_b, tuple(f"{s} ({where})" for s in LINKBENCH_SETUPS),
                        *ours, _labels(a, b), note or ""))
    return out, ""


# -- iibench: WiredTiger 3.1.5 (the newer of the post's two, as derivations.csv) / RocksDB -------
IIBENCH = {"insert rate": ("insert_rate", "irate"), "query rate": ("query_rate", "qrate"),
           "size at the end, GB": ("size_gb", "size_bytes")}
IIBENCH_SERVERS = ("WiredTiger 3.1.5", "RocksDB 3.0.x")


def iibench_pairs(run: RunData) -> tuple[list[Pair], str]:
    ref = pl.read_csv(reference_dir() / "iibench_2015.csv")
    a, b = run.complete_of_role("btree"), run.complete_of_role("lsm")
    figures = [iibench.system_figures(run, s["label"]) or {} if s else {} for s in (a, b)]
    out = []
    for metric, (column, key) in IIBENCH.items():
        post = [ref.filter(pl.col("server") == s)[column][0] for s in IIBENCH_SERVERS]
        ours = [f.get(key) for f in figures]
        ours = _in_gib(ours) if key == "size_bytes" else ours
        out.append(Pair(metric, BTREE_LSM, *post, IIBENCH_SERVERS, *ours, _labels(a, b)))
    return out, ""


# -- sysbench: WiredTiger with its default 60 s checkpoint / RocksDB, per memory size; ours are
# matched to the post's sizes by rank, smallest with smallest ------------------------------------
SYSBENCH_SYSTEMS = ("wiredTiger", "RocksDB")


def sysbench_pairs(run: RunData) -> tuple[list[Pair], str]:
    ref = pl.read_csv(reference_dir() / "sysbench_2015.csv")
    post = {size: [group.filter(pl.col("system") == s)["ops_per_s"][0] for s in SYSBENCH_SYSTEMS]
            for (size,), group in ref.sort("cache_gib").group_by(["cache_gib"], maintain_order=True)}
    totals = dict(ref.select("cache_gib", "total_gib").unique().iter_rows())
    btree, lsm = sysbench._rates_by_memory(run, "btree", checkpoint=60), sysbench._rates_by_memory(run, "lsm")
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


# -- TokuMX: MongoDB's MMAPv1 (b-tree indexes) / TokuMX's fractal tree; with no fractal-tree
# engine, ours uses the stand-in the params name (workload.stand_in), and says so -----------------
TOKUMX = {"insert_10m": {"insert rate": ("insert_rate", "insert_rate"), "size, GB": ("storage", "size_gb")},
          "insert_20m": {"insert rate": ("insert_rate", "insert_rate")},
          "read_update": {"max updates/s": ("max_update_rate", "max_update_rate")},
          "read_only": {"max reads/s": ("max_read_rate", "max_read_rate")}}
MMAP_FRACTAL = "MMAPv1 b-tree / fractal tree"


def tokumx_pairs(run: RunData) -> tuple[list[Pair], str]:
    config = run.manifest["params"]["reference"]["config"]
    ref = tokumx.post_table(config)
    mmap, fractal = run.complete_of_role("mmap"), run.complete_of_role("fractal")
    note = ""
    if fractal is None and "fractal" in tokumx.stand_in_roles(run):
        fractal = run.complete_of_role(tokumx.stand_in_roles(run)["fractal"])
        note = f"ours: {fractal['label']} ({fractal['role']}) stands in for the fractal tree"
    out = []
    for metric, (post_metric, ours) in TOKUMX[config].items():
        post = [next((float(v) for v in ref.filter((pl.col("system") == s) & (pl.col("metric") == post_metric))["value"]
                      if v != "failed"), None) for s in ("MongoDB", "TokuMX")]
        values = [tokumx._value(run, s["label"], ours) if s else None for s in (mmap, fractal)]
        values = _in_gib(values) if ours == "size_gb" else values
        out.append(Pair(metric, MMAP_FRACTAL, *post, ("MongoDB", "TokuMX"), *values,
                        (mmap["label"] if mmap else "no mmap system", fractal["label"] if fractal else "no fractal system"),
                        note if post[0] is not None else "the post's MongoDB run failed: no figure"))
    return out, ""


def flashback_pairs(run: RunData) -> tuple[list[Pair], str]:
    return [], ("the post gives its per-engine latencies only as charts, and has no WiredTiger result; "
                "its claims are checked in the claims table")


PAIRS = {"linkbench": linkbench_pairs, "iibench": iibench_pairs, "sysbench": sysbench_pairs,
         "tokumx": tokumx_pairs, "flashback": flashback_pairs}
