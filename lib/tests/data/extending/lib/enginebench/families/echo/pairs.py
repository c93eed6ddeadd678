"""The throwaway family has no post, so no pair to set beside one (report/normalised.py)."""
from __future__ import annotations

from ...report.normalised_pairs import Pair
from ...report.rundata import RunData


def normalised_pairs(run: RunData) -> tuple[list[Pair], str]:
    return [], "a throwaway family: no post"
