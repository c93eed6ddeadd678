"""Flashback has no b-tree / LSM pairs to set beside the post's (report/normalised.py)."""
from __future__ import annotations

from ...report.normalised_pairs import Pair
from ...report.rundata import RunData


def normalised_pairs(run: RunData) -> tuple[list[Pair], str]:
    return [], ("the post gives its per-engine latencies only as charts, and has no WiredTiger result; "
                "its claims are checked in the claims table")
