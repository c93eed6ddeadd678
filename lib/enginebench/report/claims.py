"""Claims from data/reference/claims.csv, evaluated against measured numbers.

Each claim names a metric and the roles of the two systems compared (numerator / denominator),
the published ratio and the expectation ("greater than 1", "between 0.8 and 1.25", ...). The
verdict is `holds`, `does not hold`, or `not evaluated` with the reason; a claim is never
dropped.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import polars as pl

from ..paths import reference_dir

HOLDS, FAILS, NOT_EVALUATED = "holds", "does not hold", "not evaluated"
# Over repeated runs (report/repeats.py): some runs hold and some do not.
INCONCLUSIVE = "inconclusive"


def load_claims(experiment: str) -> pl.DataFrame:
    """Claims that name this experiment (alone, or among others with | or +)."""
    claims = pl.read_csv(reference_dir() / "claims.csv", infer_schema_length=0)
    return claims.filter(pl.col("experiment").map_elements(
        lambda e: experiment in re.split(r"[|+]", e), return_dtype=pl.Boolean))


def cpu_comparability(systems: list[dict], phase: str) -> str | None:
    """Why CPU or context switches per operation of these systems in this phase are not the
    engines' figures, if they are not: on the embedded target the runner is the server, and a
    figure is the engine's only when the engine's code took most of the runner's CPU
    (metrics/perfshare.py; ENGINE_SHARE_MIN). None when they are comparable."""
    from ..metrics.perfshare import ENGINE_SHARE_MIN
    for system in systems:
        if (system.get("runner") or {}).get("runner") != "native":
            continue  # a server target: the CPU is the server's own processes'
        attribution = system.get("cpu_attribution") or {}
        share = (attribution.get(phase) or {}).get("engine")
        if share is None:
            why = attribution.get("unavailable") or (attribution.get(phase) or {}).get("error") or "no perf samples"
            return f"not comparable: the engine's share of {system['label']}'s CPU was not measured ({why})"
        if share < ENGINE_SHARE_MIN:
            return (f"not comparable: the engine's code took {share:.0%} of {system['label']}'s CPU in the {phase} "
                    f"phase (below {ENGINE_SHARE_MIN:.0%}), so the figure describes the harness as much as the engine")
    return None


def check_expectation(expect: str, ratio: float) -> bool | None:
    """True/False for the expectation forms used in claims.csv; None if the form is unknown."""
    text = expect.strip().lower()
    if m := re.fullmatch(r"greater than ([\d.]+)", text):
        return ratio > float(m.group(1))
    if m := re.fullmatch(r"less than ([\d.]+)", text):
        return ratio < float(m.group(1))
    if m := re.fullmatch(r"between ([\d.]+) and ([\d.]+)", text):
        return float(m.group(1)) <= ratio <= float(m.group(2))
    if text == "lowest":  # the resolver gives (lowest of the others) / (this engine's value)
        return ratio >= 1
    return None


@dataclass
class Measured:
    """What a metric resolver returns: the ratio, and the systems and values it came from."""
    ratio: float | None
    detail: str
    reason: str | None = None  # why it could not be measured


def evaluate(claims: pl.DataFrame, resolve) -> pl.DataFrame:
    """resolve(claim_row) -> Measured. Returns one row per claim with the verdict."""
    rows = []
    for claim in claims.iter_rows(named=True):
        measured = resolve(claim)
        verdict, why = NOT_EVALUATED, measured.reason
        if measured.ratio is not None:
            outcome = check_expectation(claim["expect"], measured.ratio)
            if outcome is None:
                why = f"the expectation {claim['expect']!r} has no automatic check"
            else:
                verdict, why = (HOLDS if outcome else FAILS), None
        rows.append({"id": claim["id"], "claim": claim["claim"], "metric": claim["metric"],
                     "published_ratio": float(claim["reference_ratio"]) if claim["reference_ratio"] else None,
                     "measured_ratio": measured.ratio, "expect": claim["expect"], "verdict": verdict,
                     "from": measured.detail, "reason": why or ""})
    return pl.DataFrame(rows, schema={"id": pl.Utf8, "claim": pl.Utf8, "metric": pl.Utf8,
                                      "published_ratio": pl.Float64, "measured_ratio": pl.Float64,
                                      "expect": pl.Utf8, "verdict": pl.Utf8, "from": pl.Utf8, "reason": pl.Utf8})


def magnitude_note(published: float | None, measured: float | None) -> str:
    """When a claim's direction holds, say whether its size is near the published one.

    Sizes are compared as effects (log ratios), not as raw ratios: 1.04x against a published 1.34x
    is a tenth of the effect, although the two ratios differ by only a quarter."""
    if not published or not measured or published <= 0 or measured <= 0 or math.isinf(measured):
        return ""
    log_published, log_measured = math.log(published), math.log(measured)
    if abs(log_published) < math.log(1.1):
        # The post claimed near-parity: compare the ratios themselves.
        near = abs(log_measured - log_published) <= math.log(1.1)
        return " (close to the published size)" if near else ""
    share = log_measured / log_published
    if share <= 0:
        return ""
    if 0.67 <= share <= 1.5:
        return " (close to the published size)"
    size = "smaller" if share < 1 else "larger"
    return (f" (the direction matches, with a {size} effect: {_effect(measured)} against the published "
            f"{_effect(published)})")


def _effect(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f}%"


def verdict_counts(table: pl.DataFrame) -> dict[str, int]:
    counts = {HOLDS: 0, FAILS: 0, NOT_EVALUATED: 0, INCONCLUSIVE: 0}
    for verdict in table["verdict"]:
        counts[verdict] += 1
    return counts
