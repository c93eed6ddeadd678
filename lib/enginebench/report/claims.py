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

from ..engines import WT_TAG_TREES
from ..paths import reference_dir
from .rundata import RunData

HOLDS, FAILS, NOT_EVALUATED = "holds", "does not hold", "not evaluated"
# Over repeated runs (report/repeats.py): some runs hold and some do not.
INCONCLUSIVE = "inconclusive"
# The ratio is closer to the claim's bound than its measured noise (report/noise.py).
WITHIN_NOISE = "within noise"
# Verdicts withheld because the run cannot carry one, whatever its ratio says (report/trust.py).
NOT_STEADY = "not steady"
HOST_DRIFTED = "host drifted"
SMOKE = "smoke: pipeline check, no verdict"
WITHHELD = (SMOKE, HOST_DRIFTED, NOT_STEADY)
VERDICTS = (HOLDS, FAILS, NOT_EVALUATED, INCONCLUSIVE, WITHIN_NOISE, *WITHHELD)
# For the claims table: only real verdicts are coloured.
VERDICT_CLASSES = {HOLDS: "eb-holds", FAILS: "eb-fails", NOT_EVALUATED: "eb-na", INCONCLUSIVE: "eb-na", WITHIN_NOISE: "eb-na",
                   **{v: "eb-na" for v in WITHHELD}}
TABLE_COLUMNS = ("id", "claim", "published_ratio", "measured_ratio", "expect", "verdict", "size", "from", "reason")

# The size agrees when the measured effect (log ratio) is within this factor of the published
# one, either way; a published near-parity (within PARITY of 1) is compared as a ratio instead.
SIZE_FACTOR = 1.5
PARITY = 1.1
SIZE_HOLDS, SIZE_DIRECTION_ONLY = "holds", "direction only"


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
    from ..metrics.perfshare import ENGINE_SHARE_MIN, headline
    for system in systems:
        if (system.get("runner") or {}).get("runner") != "native":
            continue  # a server target: the CPU is the server's own processes'
        attribution = system.get("cpu_attribution") or {}
        share = headline(attribution.get(phase) or {})
        if share is None:
            why = attribution.get("unavailable") or (attribution.get(phase) or {}).get("error") or "no perf samples"
            return f"not comparable: the engine's share of {system['label']}'s CPU was not measured ({why})"
        if share < ENGINE_SHARE_MIN:
            return (f"not comparable: the engine's code (with the calls it makes) took {share:.0%} of "
                    f"{system['label']}'s CPU in the {phase} "
                    f"phase (below {ENGINE_SHARE_MIN:.0%}), so the figure describes the harness as much as the engine")
    return None


def switches_counted(samples: pl.DataFrame, labels: list[str]) -> str | None:
    """Why context switches per operation of these systems are void, if they are: a run sampled
    before the sampler read every thread's switches (no `ctx_switch_threads`) counted each
    process's main thread alone (metrics/sampler.py, thread_ctx_switches)."""
    for label in labels:
        mine = samples.filter(pl.col("system") == label) if "system" in samples.columns else samples
        if "ctx_switch_threads" not in mine.columns or mine["ctx_switch_threads"].drop_nulls().is_empty():
            return (f"void: {label}'s run counted the context switches of its main thread alone (runs sampled "
                    "before the sampler read every thread's); run it again")
    return None


def role_note(system: dict) -> str:
    """What a system of a claim's role really is where it is not the post's engine: LMDB's
    memory-mapped B+tree standing in for MMAPv1 (no MMAPv1 engine runs embedded)."""
    if system.get("role") == "mmap" and system.get("engine") == "lmdb":
        return ": LMDB standing in for MMAPv1"
    return ""


def release_note(claim: dict, a: dict, b: dict) -> str:
    """For a release comparison (roles `<role>:newer` / `<role>:older`): which releases were
    compared here: the posts' own WiredTiger trees, each opened as its mongod opened it, or
    (a run without them) other releases than the post's."""
    if ":" not in (claim.get("numerator_role") or "") + (claim.get("denominator_role") or ""):
        return ""
    if a.get("version") in WT_TAG_TREES and b.get("version") in WT_TAG_TREES:
        inside = f"WiredTiger {WT_TAG_TREES[a['version']]} / {WT_TAG_TREES[b['version']]}"
        return (f" (the posts' own WiredTiger trees {a['version']} / {b['version']}, {inside}, "
                f"each as its mongod opened it; engines embedded, not the servers)")
    return f" (engine releases {a.get('version')} / {b.get('version')}, not the post's servers)"


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
    unsteady: str | None = None  # why a system it reads never reached steady state (report/steady.py)
    # Two standard errors of the ratio, relative, from its systems' interval-to-interval swing over
    # the intervals judged (metrics/steady.swing); report/noise.py adds it to a single run's noise.
    swing: float | None = None
    # The labels of the two systems the ratio compares, or of the one a bound is on: the host's
    # drift between them, or around it, is the claim's share of the run's drift (report/trust.py,
    # noise.py).
    systems: tuple[str, ...] | None = None
    # For a check the expect column cannot state as a bound on one ratio (a limit in ms, two
    # ratios at once, a fitted line): the resolver's own outcome, which evaluate() then takes.
    outcome: bool | None = None


def evaluate(claims: pl.DataFrame, resolve) -> pl.DataFrame:
    """resolve(claim_row) -> Measured. Returns one row per claim with the verdict."""
    rows = []
    for claim in claims.iter_rows(named=True):
        measured = resolve(claim)
        verdict, why = NOT_EVALUATED, measured.reason
        if measured.ratio is not None:
            outcome = measured.outcome if measured.outcome is not None else check_expectation(claim["expect"], measured.ratio)
            if outcome is None:
                why = f"the expectation {claim['expect']!r} has no automatic check"
            elif measured.unsteady:
                verdict, why = NOT_STEADY, measured.unsteady
            else:
                verdict, why = (HOLDS if outcome else FAILS), None
        rows.append({"id": claim["id"], "claim": claim["claim"], "metric": claim["metric"],
                     "published_ratio": float(claim["reference_ratio"]) if claim["reference_ratio"] else None,
                     "measured_ratio": measured.ratio, "expect": claim["expect"], "verdict": verdict,
                     "from": measured.detail, "reason": why or "", "swing": measured.swing,
                     "systems": ",".join(measured.systems) if measured.systems else ""})
    return pl.DataFrame(rows, schema=CLAIM_ROW_SCHEMA)


CLAIM_ROW_SCHEMA = {"id": pl.Utf8, "claim": pl.Utf8, "metric": pl.Utf8, "published_ratio": pl.Float64,
                    "measured_ratio": pl.Float64, "expect": pl.Utf8, "verdict": pl.Utf8, "from": pl.Utf8,
                    "reason": pl.Utf8, "swing": pl.Float64, "systems": pl.Utf8}


def size_share(published: float | None, measured: float | None) -> float | None:
    """The measured effect as a share of the published one (log ratio over log ratio); 1.0 for a
    near-parity claim whose measured ratio is within PARITY of the published; None if undefined."""
    if not published or not measured or published <= 0 or measured <= 0 or math.isinf(measured):
        return None
    log_published, log_measured = math.log(published), math.log(measured)
    if abs(log_published) < math.log(PARITY):
        # The post claimed near-parity: compare the ratios themselves.
        return 1.0 if abs(log_measured - log_published) <= math.log(PARITY) else 0.0
    return log_measured / log_published


def published_size(published: float | None, expect: str | None) -> float | None:
    """The published figure as a size to match, or None where it is a bound in its own unit
    (fb.writes_fast: every write under 10 ms), which a measurement meets or not: 1.6 ms is not
    "a sixth of the post's size" of a 10-ms bound."""
    return None if "(ms)" in (expect or "") else published


def size_agrees(published: float | None, measured: float | None) -> bool | None:
    share = size_share(published, measured)
    return None if share is None else 1 / SIZE_FACTOR <= share <= SIZE_FACTOR


def size_column(verdict: str, published: float | None, measured: float | None, expect: str | None = None) -> str:
    """The claims table's size agreement: 'holds' when the effect is within SIZE_FACTOR of the
    published one, 'direction only' when only the direction matches."""
    if verdict == FAILS:
        return FAILS
    if verdict != HOLDS:
        return "no verdict"
    agrees = size_agrees(published_size(published, expect), measured)
    if agrees is None:
        return "no published size"
    return SIZE_HOLDS if agrees else SIZE_DIRECTION_ONLY


def magnitude_note(published: float | None, measured: float | None) -> str:
    """When a claim's direction holds, say whether its size is near the published one.

    Sizes are compared as effects (log ratios), not as raw ratios: 1.04x against a published 1.34x
    is a tenth of the effect, although the two ratios differ by only a quarter."""
    share = size_share(published, measured)
    if share is None or share <= 0:
        return ""
    if size_agrees(published, measured):
        return " (close to the published size)"
    size = "smaller" if share < 1 else "larger"
    return (f" (the direction matches, with a {size} effect: {_effect(measured)} against the published "
            f"{_effect(published)})")


def _effect(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.0f}%"


def verdict_counts(table: pl.DataFrame) -> dict[str, int]:
    counts = dict.fromkeys(VERDICTS, 0)
    for verdict in table["verdict"]:
        counts[verdict] += 1
    return counts


def verdict_summary(table: pl.DataFrame) -> str:
    """'4 hold, 3 do not hold, 1 not evaluated, 2 not steady': every verdict the table has, the
    withheld ones named, so a count never reads as more certain than the run allows; a smoke
    run's says it has none."""
    return counts_summary(verdict_counts(table))


def counts_summary(counts: dict[str, int]) -> str:
    """verdict_summary's sentence from verdict counts already made (the index, the terminal)."""
    if counts[SMOKE]:
        return f"{SMOKE} ({counts[SMOKE]} claims measured, {counts[NOT_EVALUATED]} not evaluated)"
    words = {HOLDS: "hold", FAILS: "do not hold", NOT_EVALUATED: "not evaluated",
             INCONCLUSIVE: "inconclusive over the repeated runs"}
    parts = [f"{counts[HOLDS]} hold", f"{counts[FAILS]} do not hold"]
    parts += [f"{counts[v]} {words.get(v, v)}" for v in VERDICTS[2:] if counts[v] or v == NOT_EVALUATED]
    return ", ".join(parts)


def claim_figure(value: float | None, expect: str | None) -> str | None:
    """A claim's figure in its own unit: a ratio between two systems (1.34x), a bound in
    milliseconds (fb.writes_fast: 'less than (ms)'), or a plain number (a fitted slope)."""
    if value is None:
        return None
    expect = expect or ""
    if "(ms)" in expect:
        return f"{value:.2f} ms"
    if re.match(r"(greater|less) than \d|between ", expect):
        return f"{value:.2f}x"
    return f"{value:.3g}"


def claim_line(row: dict) -> str:
    """One claim for the findings: published and measured ratio, where it came from, the verdict
    (with its size note when it holds, with its reason when it was withheld)."""
    if row["verdict"] == NOT_EVALUATED:
        return f"- *{row['claim']}*: not evaluated ({row['reason']})."
    if row["measured_ratio"] is None:
        return f"- *{row['claim']}*: **{row['verdict']}** ({row['from']})."
    published = claim_figure(row["published_ratio"], row.get("expect")) or "no figure"
    size = published_size(row["published_ratio"], row.get("expect"))
    note = magnitude_note(size, row["measured_ratio"]) if row["verdict"] == HOLDS else ""
    why = f" ({row['reason']})" if row["verdict"] in WITHHELD + (INCONCLUSIVE, WITHIN_NOISE) and row["reason"] else ""
    return (f"- *{row['claim']}*: published {published}, measured {claim_figure(row['measured_ratio'], row.get('expect'))} "
            f"({row['from']}): **{row['verdict']}**{note}{why}.")


EMBEDDED_CAVEAT = ("**How to read these numbers.** The systems here are storage engines linked into one native "
                   "runner process with MongoDB's record-store layout on top, not mongod: there is no network "
                   "round trip, no query planner and no thread per connection, and the workload generator shares "
                   "the process (its own CPU is reported as client cpu/o). Absolute rates, context switches and "
                   "CPU per operation therefore measure a different stack from the posts'; what carries over is "
                   "how the engines compare with each other under the same workload and limits.")


def caveat(run: RunData) -> str:
    return EMBEDDED_CAVEAT if (run.manifest.get("target") or {}).get("kind") == "embedded" else ""
