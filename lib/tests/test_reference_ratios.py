"""Every published ratio in claims.csv is recomputed from the reference tables it comes from.

data/reference/derivations.csv names, per claim, the table, the column and the rows (numerator and
denominator; several pairs joined by ` | ` with a rule to combine them), or the numbers of the post's
text when no table holds them. A claim whose ratio cannot be recomputed from these, or a selector that
matches no row or several rows, fails here; so does a derivation without a claim or a claim without one.
"""
from __future__ import annotations

import csv
import math
from decimal import Decimal

import pytest

from enginebench.paths import reference_dir


def read_csv(name: str) -> list[dict[str, str]]:
    with open(reference_dir() / name, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


CLAIMS = {row["id"]: row for row in read_csv("claims.csv")}
DERIVATIONS = read_csv("derivations.csv")
BY_ID = {row["id"]: row for row in DERIVATIONS}


def select(table: list[dict[str, str]], selector: str, column: str) -> float:
    """The column's value in the one row whose fields equal every `key=value` of the selector."""
    wanted = dict(part.split("=", 1) for part in selector.split(";"))
    rows = [row for row in table if all(row[key] == value for key, value in wanted.items())]
    assert len(rows) == 1, f"{selector!r} matches {len(rows)} rows"
    return float(rows[0][column])


def recompute(derivation: dict[str, str]) -> float:
    numerators = [s.strip() for s in derivation["numerator"].split("|")]
    denominators = [s.strip() for s in derivation["denominator"].split("|")]
    if derivation["table"] == "text":  # numbers quoted from the post's prose
        value = float(numerators[0])
        return value / float(denominators[0]) if denominators[0] else value
    table = read_csv(derivation["table"])
    assert len(numerators) == len(denominators), "numerators and denominators pair up"
    ratios = [select(table, a, derivation["column"]) / select(table, b, derivation["column"])
              for a, b in zip(numerators, denominators)]
    combine = derivation["combine"]
    if combine == "single":
        assert len(ratios) == 1
        return ratios[0]
    if combine == "min":
        return min(ratios)
    if combine == "farthest_from_1":
        return max(ratios, key=lambda r: abs(math.log(r)))
    raise AssertionError(f"unknown combine rule {combine!r}")


def matches_published(value: float, published: str) -> bool:
    """Equal to the published figure within half a unit of its last digit (its rounding)."""
    exponent = Decimal(published).as_tuple().exponent
    return abs(value - float(published)) <= 0.5 * 10.0 ** exponent + 1e-9


def test_every_claim_has_exactly_one_derivation():
    ids = [row["id"] for row in DERIVATIONS]
    assert len(ids) == len(set(ids)), "a claim is derived twice"
    assert set(ids) == set(CLAIMS)


@pytest.mark.parametrize("claim_id", sorted(CLAIMS))
def test_published_ratio_is_recomputed_from_the_reference_tables(claim_id):
    published, derivation = CLAIMS[claim_id]["reference_ratio"], BY_ID[claim_id]
    if derivation["combine"] == "none":
        assert published == "", f"{claim_id} has a published ratio but no derivation ({derivation['note']})"
        assert derivation["note"], "a claim without a ratio says why"
        return
    value = recompute(derivation)
    assert matches_published(value, published), f"{claim_id}: tables give {value:.4f}, claims.csv says {published}"


def test_load_claims_use_the_oplog_on_rows():
    """The rule data/reference/README.md states: every LinkBench load claim compares op1 rows."""
    load = [row for row in DERIVATIONS if row["id"].startswith("lb.load.")]
    assert load
    for row in load:
        selectors = [s for side in ("numerator", "denominator") for s in row[side].split("|")]
        setups = [part.strip() for s in selectors for part in s.split(";") if part.strip().startswith("setup=")]
        assert len(setups) == len(selectors) and all(s.endswith(".op1") for s in setups), row["id"]


def test_the_check_rejects_a_ratio_outside_its_rounding():
    # The op0 load rows give 1.929 where claims.csv publishes the op1 ratio 2.43.
    assert not matches_published(51416 / 26654, "2.43")
    assert matches_published(46156 / 19033, "2.43")
    assert not matches_published(1.0066, "1.00") and matches_published(1.0066, "1.01")
