"""LinkBench's headline metrics as b-tree / LSM pairs, the post's beside ours (report/normalised.py)."""
from __future__ import annotations

import polars as pl

from ...report.claims import cpu_comparability
from ...report.normalised_pairs import BTREE_LSM, Pair, in_gib, labels
from ...report.rundata import RunData
from . import report as linkbench

# -- LinkBench: the post's oplog-on rows of MongoDB 3.2 (docs/results.md, "the oplog-on rows"); for
# the query phase the hour every query-phase claim takes (data/reference/derivations.csv: the 2nd),
# so a ratio reads the same here as in the claims table, and the last hour for the size at the end
# (as lb.space does). Ours are the claims' figures: the steady window of the measured phase. -----
LINKBENCH = {"inserts/s (load)": ("load", "ops"), "queries/s": ("run", "ops"), "r/o (queries)": ("run", "r_per_op"),
             "wKB/o (load)": ("load", "wkb_per_op"), "wKB/o (queries)": ("run", "wkb_per_op"),
             "cpu/o (load)": ("load", "cpu_per_op"), "cpu/o (queries)": ("run", "cpu_per_op"),
             "size (du) at the end, GB": ("run", "size_du_gb")}
LINKBENCH_SETUPS = ("wt.320.op1", "rx.320.op1")
CLAIMS_HOUR = 2
# The claim each pair shows, per configuration: the claims.csv row whose derivation reads the same
# configuration, phase and column (data/reference/derivations.csv).
CLAIMS = {"cached": {"inserts/s (load)": "lb.load.btree_vs_lsm", "queries/s": "lb.query.cached.btree_vs_lsm",
                     "wKB/o (load)": "lb.load.wkb.lsm_vs_btree", "cpu/o (load)": "lb.load.cpu.lsm_vs_btree"},
          "uncached_disk": {"wKB/o (queries)": "lb.run.wkb.btree_vs_lsm", "cpu/o (queries)": "lb.run.cpu.btree_vs_lsm",
                            "size (du) at the end, GB": "lb.space.btree_vs_lsm"},
          "uncached_ssd": {"queries/s": "lb.query.uncached.lsm_vs_btree"}}
# The uncached query claim takes the SSD configuration's rows; on the disk array the post's ratio differs.
NOT_THE_CLAIMS = {("uncached_disk", "queries/s"): "the post's disk-array rows; the claim "
                  "lb.query.uncached.lsm_vs_btree takes its SSD rows (derivations.csv)"}


def _linkbench_post(config: str, phase: str, column: str) -> tuple[list[float | None], str]:
    rows = linkbench.reference_table(config).filter(pl.col("phase") == phase)
    where = "load"
    if phase == "run":
        hours = rows["hour"].unique().to_list()
        hour = max(hours) if column == "size_du_gb" or CLAIMS_HOUR not in hours else CLAIMS_HOUR
        rows, where = rows.filter(pl.col("hour") == hour), f"hour {hour}"
    values = [next(iter(rows.filter(pl.col("setup") == s)[column].to_list()), None) for s in LINKBENCH_SETUPS]
    return values, where


def normalised_pairs(run: RunData) -> tuple[list[Pair], str]:
    config = run.manifest["params"]["reference"]["config"]
    a, b = linkbench.pick_pair(run, "btree", "lsm")
    out = []
    for metric, (phase, column) in LINKBENCH.items():
        (post_a, post_b), where = _linkbench_post(config, phase, column)
        ours = [linkbench._value(run, s["label"], phase, column, None) if s else None for s in (a, b)]
        ours = in_gib(ours) if column == "size_du_gb" else ours
        note = cpu_comparability([a, b], phase) if column == "cpu_per_op" and a and b else None
        if note:
            ours = [None, None]
        note = note or NOT_THE_CLAIMS.get((config, metric), "")
        out.append(Pair(metric, BTREE_LSM, post_a, post_b, tuple(f"{s} ({where})" for s in LINKBENCH_SETUPS),
                        *ours, labels(a, b), note, CLAIMS.get(config, {}).get(metric, "")))
    return out, ""
