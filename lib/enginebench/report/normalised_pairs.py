"""A headline metric's pair, the post's b-tree / write-optimised figures beside ours. Which of the
post's rows (data/reference) and which of our figures make each pair is the family's to say
(families/<name>/pairs.py, `normalised_pairs(run)`, found through the family registry);
report/normalised.py does the rest."""
from __future__ import annotations

from dataclasses import dataclass

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
    # The claim (data/reference/claims.csv id) whose two figures this pair sets side by side, so
    # the page names it and a test can hold both to one value; empty when no claim takes this pair.
    claim: str = ""


def in_gib(values: list[float | None]) -> list[float | None]:
    """Our sizes are bytes; the posts give GB (du's G)."""
    return [None if v is None else v / GIB for v in values]


def labels(a: dict | None, b: dict | None) -> tuple[str, str]:
    return (a["label"] if a else "no b-tree system", b["label"] if b else "no LSM system")


def pairs_of(run: RunData, name: str) -> tuple[list[Pair], str]:
    """Family `name`'s pairs for the run, and a note when it has none to give."""
    from ..families import family
    return family(name).pairs_module().normalised_pairs(run)
