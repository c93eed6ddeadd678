"""What differs between two runs, as tables for `make compare` (report/compare.py): headline
numbers against the noise of repeats, latency per op type, claim verdicts and provenance.

Differences are ratios B / A, sorted by the size of the effect |ln(B / A)| (a halving counts as
much as a doubling). The noise rule: where either run was repeated (REPEAT=n), a difference is
within noise when |ln(B / A)| <= NOISE_CVS x CV, CV being the larger coefficient of variation
of the two repeat groups for that number; a run alone carries no measure of its own noise.
"""
from __future__ import annotations

import json
import math

import polars as pl

from .headlines import HEADLINES, headline_figures
from .hostspeed import normalised
from .latency import latency_rows
from .rundata import RunData

NOISE_CVS = 2.0
NO_REPEATS = "no repeats: noise unknown"
PHASES = ("load", "run")


def ratio(va: float | None, vb: float | None) -> float | None:
    """B / A; None when either is missing or 0 (a change from or to nothing has no size)."""
    return vb / va if va and vb and va > 0 and vb > 0 else None


def effect(r: float | None) -> float:
    """|ln(B / A)|: the sort key; an undefined ratio sorts last."""
    return abs(math.log(r)) if r else -1.0


def noise_mark(r: float | None, cvs: list[float]) -> str:
    """The noise rule (module docstring) for one ratio, given the CVs (%) its repeat groups had."""
    if not cvs:
        return NO_REPEATS
    cv = max(cvs)
    if r is None:
        return f"ratio undefined (CV {cv:.1f}%)"
    inside = abs(math.log(r)) <= NOISE_CVS * cv / 100
    return f"{'within' if inside else 'beyond'} noise ({NOISE_CVS:g} x CV = {NOISE_CVS * cv:.1f}%)"


def common_labels(a: RunData, b: RunData) -> list[str]:
    labels_b = {s["label"] for s in b.systems}
    return [s["label"] for s in a.systems if s["label"] in labels_b]


def headline_differences(a: RunData, b: RunData, noise: tuple[dict, dict], probes: float | None) -> pl.DataFrame:
    """Per system, phase and headline number: A, B, B / A, B / A corrected by the host probes'
    ratio and the noise mark; the largest effect first. `noise`: repeats.noise_cv of A and of B."""
    speed = {h.name: h.speed for h in HEADLINES}
    units = {h.name: h.unit for h in HEADLINES}
    rows = []
    for label in common_labels(a, b):
        for phase in PHASES:
            fa, fb = headline_figures(a, label, phase) or {}, headline_figures(b, label, phase) or {}
            for name in (n for n in fa if n in fb and (fa[n], fb[n]) != (0, 0)):  # 0 in both: nothing to compare
                r = ratio(fa[name], fb[name])
                cvs = [group[(label, phase, name)] for group in noise if (label, phase, name) in group]
                rows.append({"system": label, "phase": phase, "metric": name, "unit": units[name],
                             "A": fa[name], "B": fb[name], "B / A": r,
                             "B / A at A's host speed": normalised(r, speed[name], probes),
                             "noise": noise_mark(r, cvs)})
    rows.sort(key=lambda row: -effect(row["B / A"]))
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "phase": pl.Utf8, "metric": pl.Utf8, "unit": pl.Utf8,
                                      "A": pl.Float64, "B": pl.Float64, "B / A": pl.Float64,
                                      "B / A at A's host speed": pl.Float64, "noise": pl.Utf8})


def latency_differences(a: RunData, b: RunData, probes: float | None) -> pl.DataFrame:
    """p50 and p99 per system, phase and op type, in ms, for the ops both runs timed; the largest
    change of p99 first."""
    rows = []
    for phase in PHASES:
        in_b = {(r["setup"], r["op"]): r for r in latency_rows(b, phase)}
        for ra in latency_rows(a, phase):
            rb = in_b.get((ra["setup"], ra["op"]))
            if rb is None:
                continue
            p99 = ratio(ra["p99_ms"], rb["p99_ms"])
            flags = "; ".join(f"{side}: {row['set by emulation']}" for side, row in (("A", ra), ("B", rb))
                              if row["set by emulation"])
            rows.append({"system": ra["setup"], "phase": phase, "op": ra["op"],
                         "p50 A (ms)": ra["p50_ms"], "p50 B (ms)": rb["p50_ms"],
                         "p50 B / A": ratio(ra["p50_ms"], rb["p50_ms"]),
                         "p99 A (ms)": ra["p99_ms"], "p99 B (ms)": rb["p99_ms"], "p99 B / A": p99,
                         "p99 B / A at A's host speed": normalised(p99, -1, probes), "set by emulation": flags})
    rows.sort(key=lambda row: -effect(row["p99 B / A"]))
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "phase": pl.Utf8, "op": pl.Utf8,
                                      **{c: pl.Float64 for c in ("p50 A (ms)", "p50 B (ms)", "p50 B / A",
                                                                  "p99 A (ms)", "p99 B (ms)", "p99 B / A",
                                                                  "p99 B / A at A's host speed")},
                                      "set by emulation": pl.Utf8})


def verdict_differences(claims_a: pl.DataFrame, claims_b: pl.DataFrame) -> pl.DataFrame:
    """Every claim of either table with both verdicts and measured ratios; changed verdicts first."""
    def by_id(table):
        return {row["id"]: row for row in table.iter_rows(named=True)} if not table.is_empty() else {}
    in_a, in_b = by_id(claims_a), by_id(claims_b)
    rows = []
    for claim_id in dict.fromkeys([*in_a, *in_b]):
        ra, rb = in_a.get(claim_id) or {}, in_b.get(claim_id) or {}
        va, vb = ra.get("verdict", "not in A"), rb.get("verdict", "not in B")
        rows.append({"id": claim_id, "claim": ra.get("claim") or rb.get("claim"),
                     "verdict A": va, "verdict B": vb, "changed": "changed" if va != vb else "same",
                     "measured ratio A": ra.get("measured_ratio"), "measured ratio B": rb.get("measured_ratio")})
    rows.sort(key=lambda row: row["changed"] != "changed")
    return pl.DataFrame(rows, schema={"id": pl.Utf8, "claim": pl.Utf8, "verdict A": pl.Utf8, "verdict B": pl.Utf8,
                                      "changed": pl.Utf8, "measured ratio A": pl.Float64,
                                      "measured ratio B": pl.Float64})


def _flatten(value, prefix="") -> dict:
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: json.dumps(value, default=str) if isinstance(value, list) else value}


def provenance_differences(a: RunData, b: RunData) -> pl.DataFrame:
    """Provenance that differs: params, host, code, packages, engine versions and configs."""
    rows = []
    for section in ("params", "host", "git", "packages", "target", "resources"):
        fa, fb = _flatten(a.manifest.get(section) or {}), _flatten(b.manifest.get(section) or {})
        for key in sorted(set(fa) | set(fb)):
            if fa.get(key) != fb.get(key) and not key.startswith("cgroup") and not key.endswith(".at"):
                rows.append({"what": f"{section}.{key}", "A": str(fa.get(key)), "B": str(fb.get(key))})
    for label in sorted(set(a.manifest.get("systems", {})) & set(b.manifest.get("systems", {}))):
        sa, sb = a.manifest["systems"][label], b.manifest["systems"][label]
        if sa.get("version") != sb.get("version"):
            rows.append({"what": f"{label} version", "A": str(sa.get("version")), "B": str(sb.get("version"))})
        # What the engine reported of its own configuration and build (e.g. RocksDB's build flags).
        ca, cb = _flatten(sa.get("engine_config") or {}), _flatten(sb.get("engine_config") or {})
        for key in sorted(set(ca) | set(cb)):
            if ca.get(key) != cb.get(key):
                rows.append({"what": f"{label} engine_config.{key}", "A": str(ca.get(key)), "B": str(cb.get(key))})
    return pl.DataFrame(rows, schema={"what": pl.Utf8, "A": pl.Utf8, "B": pl.Utf8})
