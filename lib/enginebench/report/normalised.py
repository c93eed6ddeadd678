"""The post's ratio between its two engines beside ours, per headline metric, both as the
post's b-tree over the write-optimised engine (LSM; TokuMX's fractal tree), so that where the
scale differs a thousandfold the comparison that survives is the direction: is ours on the same
side of 1 as the post's?

Which rows of the post and which of our figures make each ratio is per family knowledge, kept in
each family's pairs module (families/<name>/pairs.py); this module only divides and compares."""
from __future__ import annotations

import math

import polars as pl

from .normalised_pairs import Pair, pairs_of
from .rundata import RunData
from .numbers import number

COLUMNS = {"metric": pl.Utf8, "direction": pl.Utf8, "the post's ratio": pl.Float64, "our ratio": pl.Float64,
           "same side of 1": pl.Utf8, "the post's rows": pl.Utf8, "our figures": pl.Utf8, "claim": pl.Utf8,
           "note": pl.Utf8}


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def same_side(post: float | None, ours: float | None) -> str:
    """yes / no / n/a: both above 1, both below, or not comparable (a ratio missing or exactly 1)."""
    if post is None or ours is None or post == 1 or ours == 1 or post <= 0 or ours <= 0:
        return "n/a"
    return "yes" if (math.log(post) > 0) == (math.log(ours) > 0) else "no"


def _figure(value: float | None) -> str:
    if value is None:
        return "n/a"
    return number(value)


def _row(pair: Pair) -> dict:
    post, ours = _ratio(pair.post_btree, pair.post_other), _ratio(pair.our_btree, pair.our_other)
    note = pair.note
    if post is None and not note:
        note = "the post's figures give no ratio (one is missing, or 0 in the denominator)"
    elif ours is None and not note:
        note = "not measured for one of the two systems, or 0 in the denominator"
    return {"metric": pair.metric, "direction": pair.direction, "the post's ratio": post, "our ratio": ours,
            "same side of 1": same_side(post, ours),
            "the post's rows": f"{pair.post_from[0]} {_figure(pair.post_btree)} / "
                               f"{pair.post_from[1]} {_figure(pair.post_other)}",
            "our figures": f"{pair.our_from[0]} {_figure(pair.our_btree)} / {pair.our_from[1]} {_figure(pair.our_other)}",
            "claim": pair.claim, "note": note}


def normalised_view(run: RunData) -> pl.DataFrame:
    """One row per headline metric the post reports for an engine pair."""
    name = run.manifest["params"].get("notebook") or run.manifest["params"]["workload"]["name"]
    try:
        pairs, why_none = pairs_of(run, name)
    except ValueError as exc:
        raise ValueError(f"{run.path / 'manifest.json'}: params.notebook: {exc}") from None
    if not pairs:
        return pl.DataFrame([{"metric": "none", "note": why_none}], schema=COLUMNS)
    return pl.DataFrame([_row(p) for p in pairs], schema=COLUMNS)
