"""The TokuMX posts' headline metrics as MMAPv1 / fractal tree pairs, the post's beside ours (report/normalised.py)."""
from __future__ import annotations

import polars as pl

from ...report.normalised_pairs import Pair, in_gib
from ...report.rundata import RunData
from . import report as tokumx

# -- TokuMX: MongoDB's MMAPv1 (b-tree indexes) / TokuMX's fractal tree; ours: LMDB standing in
# for MMAPv1, and PerconaFT under TokuMX's layout ------------------------------------------------
TOKUMX = {"insert_10m": {"insert rate": ("insert_rate", "insert_rate", "tk.insert.fractal_vs_mmap"),
                         "size, GB": ("storage", "size_gb", "tk.size.mmap_vs_fractal")},
          # The 20M claim is about TokuMX's insert rate going stale; the post's MongoDB run failed.
          "insert_20m": {"insert rate": ("insert_rate", "insert_rate", "")},
          "read_update": {"max updates/s": ("max_update_rate", "max_update_rate", "tk.read_update")},
          "read_only": {"max reads/s": ("max_read_rate", "max_read_rate", "tk.read_only")}}
MMAP_FRACTAL = "MMAPv1 b-tree / fractal tree"


def normalised_pairs(run: RunData) -> tuple[list[Pair], str]:
    config = run.manifest["params"]["reference"]["config"]
    ref = tokumx.post_table(config)
    mmap, fractal = run.complete_of_role("mmap"), run.complete_of_role("fractal")
    note = "ours: LMDB stands in for MMAPv1" if mmap and mmap.get("engine") == "lmdb" else ""
    out = []
    for metric, (post_metric, ours, claim) in TOKUMX[config].items():
        post = [next((float(v) for v in ref.filter((pl.col("system") == s) & (pl.col("metric") == post_metric))["value"]
                      if v != "failed"), None) for s in ("MongoDB", "TokuMX")]
        values = [tokumx._value(run, s["label"], ours) if s else None for s in (mmap, fractal)]
        values = in_gib(values) if ours == "size_gb" else values
        out.append(Pair(metric, MMAP_FRACTAL, *post, ("MongoDB", "TokuMX"), *values,
                        (mmap["label"] if mmap else "no mmap system", fractal["label"] if fractal else "no fractal system"),
                        note if post[0] is not None else "the post's MongoDB run failed: no figure", claim))
    return out, ""
