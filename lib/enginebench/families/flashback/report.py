"""flashback_replay report pieces: latency per op type, latency against documents scanned,
capped inserts, how closely each replay kept the recorded schedule, the fb.* claims, findings."""
from __future__ import annotations

import json
import math
from dataclasses import replace

import altair as alt
import numpy as np
import polars as pl

from ...report import over_time, palette, unfinished
from ...report.charts import symlog_axis
from ...report.claims import Measured, NOT_EVALUATED, caveat, evaluate, load_claims, verdict_summary
from ...report import latency
from ...report.engine_table import engine_name
from ...report.rundata import RunData
from .params import always_runs

PHASE = "run"
WRITES = ("insert", "insert.capped", "update", "findandmodify", "remove")
OP_ORDER = ("query", "count", "insert", "insert.capped", "update", "findandmodify", "remove", "getmore", "command")
MIN_R2 = 0.8          # "grows linearly": the line through the bins' medians explains 80% of their variance
MIN_BIN = 5           # queries a bin of documents scanned needs to count in the fit
CHART_POINTS = 2500   # points drawn per system (the fit uses all of them)


def summary(run: RunData, label: str) -> dict | None:
    """The system's replay.json: its role, ops read / run / skipped per type, schedule lag."""
    path = run.system_dir(label) / "replay.json"
    return json.loads(path.read_text()) if path.is_file() else None


def role_of(run: RunData, label: str) -> str | None:
    s = summary(run, label)
    return s["role"] if s else None


def systems_table(run: RunData) -> pl.DataFrame:
    rows = []
    for s in run.systems:
        info = summary(run, s["label"]) or {}
        lag = info.get("lag_ms") or {}
        rows.append({"setup": s["label"], "role": s["role"], "engine": engine_name(run, s), "version": s.get("version") or "",
                     "flashback": info.get("role") or "", "status": s.get("status"),
                     "ops run": sum((info.get("ops_run") or {}).values()),
                     "lag p99 (ms)": lag.get("p99"), "error": s.get("error") or ""})
    return pl.DataFrame(rows)


def check_lines(run: RunData) -> list[str]:
    """Per replaying system: ops per type in the capture against ops replayed (deterministic)."""
    lines = []
    for s in run.systems:
        info = summary(run, s["label"])
        if info is None:
            lines.append(f"{s['label']}: no replay summary ({s.get('status')})")
            continue
        if info["role"] == "recorder":
            lines.append(f"{s['label']}: recorder, {info['captured_ops']} ops captured")
            continue
        captured, ran = info["capture_ops_per_type"] or {}, info["ops_run"]
        types = sorted(set(captured) | set(ran), key=lambda t: OP_ORDER.index(t) if t in OP_ORDER else 99)
        parts = [f"{t} {captured.get(t, 0)}/{ran.get(t, 0)}" for t in types]
        same = all(captured.get(t, 0) == ran.get(t, 0) for t in types)
        lines.append(f"{s['label']}: captured/replayed " + ", ".join(parts) + (" - all replayed" if same else " - DIFFER"))
    return lines


_LATENCY: dict[tuple, list[dict]] = {}


def latency_rows(run: RunData) -> list[dict]:
    """Per system and op type over the run phase, from the exactly merged HdrHistograms (ms).
    Kept per run: the claims and findings ask for many of its figures, and merging is the slow part."""
    if run.ops.is_empty():
        return []
    key = (str(run.path), tuple(sorted((label, str(where)) for label, where in run.system_paths.items())), run.ops.height)
    if key not in _LATENCY:
        _LATENCY[key] = _latency_rows(run)
    return _LATENCY[key]


def _latency_rows(run: RunData) -> list[dict]:
    rows = latency.latency_rows(run, PHASE)
    return sorted(rows, key=lambda r: (r["setup"], OP_ORDER.index(r["op"]) if r["op"] in OP_ORDER else 99))


def latency_table(run: RunData) -> pl.DataFrame:
    return latency.latency_table(run, PHASE, latency_rows(run))


def _stat(run: RunData, label: str, op: str, key: str) -> float | None:
    return next((r[key] for r in latency_rows(run) if r["setup"] == label and r["op"] == op), None)


def capped_table(run: RunData) -> pl.DataFrame:
    """Inserts into the capped log beside ordinary inserts, per system."""
    rows = []
    for s in run.systems:
        plain, capped = (_stat(run, s["label"], op, "mean_ms") for op in ("insert", "insert.capped"))
        if capped is None:
            continue
        rows.append({"setup": s["label"], "role": s["role"], "capped mean (ms)": round(capped, 3),
                     "capped p99 (ms)": round(_stat(run, s["label"], "insert.capped", "p99_ms"), 3),
                     "capped max (ms)": round(_stat(run, s["label"], "insert.capped", "max_ms"), 3),
                     "insert mean (ms)": None if plain is None else round(plain, 3),
                     "capped / insert": None if not plain else round(capped / plain, 2)})
    return pl.DataFrame(rows)


# -- latency against documents scanned ------------------------------------------------------
def scans(run: RunData) -> pl.DataFrame:
    frames = []
    for s in run.systems:
        path = run.system_dir(s["label"]) / "scans.csv"
        if path.is_file():
            frames.append(pl.read_csv(path, schema={"op": pl.Utf8, "docs_scanned": pl.Int64, "latency_us": pl.Int64,
                                                    "due_s": pl.Float64})
                          .with_columns(pl.lit(s["label"]).alias("system")))
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames).with_columns((pl.col("latency_us") / 1000).alias("latency_ms"))


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """Least squares y = slope * x + intercept: (slope, intercept, R², standard error of the slope)."""
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (slope * x + intercept)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float((residual ** 2).sum()) / ss_tot if ss_tot else 0.0
    se = math.sqrt(float((residual ** 2).sum()) / max(1, len(x) - 2) / float(((x - x.mean()) ** 2).sum()))
    return float(slope), float(intercept), r2, se


def fits(points: pl.DataFrame, op: str = "query") -> pl.DataFrame:
    """Latency (ms) against documents scanned, per system.

    The line is fitted to the median latency of each bin of documents scanned (bins doubling in
    width: 0, 1, 2-3, 4-7, ...; bins of at least MIN_BIN queries), so it follows how a typical
    query's latency grows with its scan rather than the few ops a busy 2-core machine stalled
    (those stay visible in the scatter and in `r2 points`, the fit over every query)."""
    rows = []
    if points.is_empty():
        return pl.DataFrame()
    for (system,), group in points.filter(pl.col("op") == op).group_by(["system"], maintain_order=True):
        x, y = group["docs_scanned"].to_numpy().astype(float), group["latency_ms"].to_numpy()
        if len(x) < 3 or np.ptp(x) == 0:
            continue
        binned = (group.with_columns(pl.col("docs_scanned").map_elements(lambda d: int(d).bit_length(),
                                                                         return_dtype=pl.Int64).alias("bin"))
                  .group_by("bin").agg(pl.len().alias("n"), pl.col("docs_scanned").mean().alias("docs"),
                                       pl.col("latency_ms").median().alias("median_ms"))
                  .filter(pl.col("n") >= MIN_BIN).sort("bin"))
        if binned.height < 3:
            continue
        slope, intercept, r2, se = _line(binned["docs"].to_numpy(), binned["median_ms"].to_numpy())
        _, _, r2_points, _ = _line(x, y)
        rows.append({"system": system, "n": len(x), "max docs": int(x.max()), "bins": binned.height,
                     "ms per 1000 docs": round(slope * 1000, 4), "slope_low": (slope - 1.96 * se) * 1000,
                     "intercept (ms)": round(intercept, 4), "r2": round(r2, 3), "r2 points": round(r2_points, 3)})
    return pl.DataFrame(rows)


def scan_chart(points: pl.DataFrame, fitted: pl.DataFrame, op: str = "query") -> alt.Chart | None:
    """One scatter per system (a sample of its ops) with its fitted line, side by side."""
    if points.is_empty() or fitted.is_empty():
        return None
    panels = []
    for f in fitted.iter_rows(named=True):
        mine = points.filter((pl.col("op") == op) & (pl.col("system") == f["system"]))
        dots = mine.sample(min(CHART_POINTS, mine.height), seed=0).select("docs_scanned", "latency_ms").to_dicts()
        line = [{"docs_scanned": x, "latency_ms": f["intercept (ms)"] + f["ms per 1000 docs"] * x / 1000}
                for x in (0, f["max docs"])]
        title = f"{f['system']}: {f['ms per 1000 docs']:.2f} ms / 1000 docs, R²={f['r2']:.2f}"
        scatter = alt.Chart(alt.Data(values=dots)).mark_circle(size=10, opacity=0.35).encode(
            x=alt.X("docs_scanned:Q", title="documents scanned"), y=alt.Y("latency_ms:Q", title="latency (ms)"))
        fit = alt.Chart(alt.Data(values=line)).mark_line(color="#c60", strokeWidth=2).encode(
            x="docs_scanned:Q", y="latency_ms:Q")
        panels.append(alt.layer(scatter, fit, title=title).properties(width=230, height=200))
    return alt.concat(*panels, columns=4, title=f"Replayed {op} latency against documents scanned, with a least-squares line")


def latency_chart(table: pl.DataFrame) -> alt.Chart | None:
    if table.is_empty():
        return None
    long = table.select("setup", "op", "mean_ms", "p99_ms").unpivot(index=["setup", "op"], variable_name="stat",
                                                                      value_name="ms")
    return (alt.Chart(alt.Data(values=long.to_dicts()), title="Mean and P99 latency per op type (ms, symlog scale)")
            .mark_bar()
            .encode(y=alt.Y("op:N", title=None, sort=list(OP_ORDER)), x=symlog_axis(long["ms"], "ms (symlog)"),
                    color=palette.color("setup", long["setup"].to_list()), yOffset="setup:N",
                    column=alt.Column("stat:N", title=None, sort=["mean_ms", "p99_ms"]))
            .resolve_scale(x="independent")
            .properties(width=300, height=alt.Step(8)))


# -- claims ---------------------------------------------------------------------------------
def _pick(run: RunData, role: str) -> dict | None:
    """The first complete system of a role, a replaying one before the recorder (the post's
    systems all replayed the same capture)."""
    done = [s for s in run.complete_systems if s["role"] == role]
    done.sort(key=lambda s: role_of(run, s["label"]) != "replayer")
    return done[0] if done else None


def claim_reads(params: dict, _claim: dict, systems: list[dict]) -> list[dict]:
    """Of a claim's systems, the ones _pick reads from a run of these params: the first of each
    role, a replayer before the recorder. Of rx and wtlsm, both lsm, "On RocksDB..." reads rx, so
    an explain variant that changed only wtlsm would read the base's rx again."""
    recorders = set(always_runs(params))
    first: dict[str, dict] = {}
    for system in sorted(systems, key=lambda s: s["label"] in recorders):
        first.setdefault(system["role"], system)
    return [s for s in systems if first.get(s["role"]) is s]


def resolver(run: RunData):
    """The claims' metrics on this run, for claims.evaluate: each Flashback claim is its own check
    (a bound in ms, a mean and a P99 ratio at once, a fitted slope), so each returns its outcome."""
    points = scans(run)

    def resolve(claim: dict) -> Measured:
        a = _pick(run, claim["numerator_role"])
        b = _pick(run, claim["denominator_role"]) if claim["denominator_role"] else None
        if a is None or (claim["denominator_role"] and b is None):
            return Measured(None, "", f"needs complete systems of roles {claim['numerator_role']}"
                            + (f" and {claim['denominator_role']}" if claim["denominator_role"] else ""))
        check = CHECKS.get(claim["id"])
        if check is None:
            return Measured(None, "", f"metric {claim['metric']!r} has no resolver")
        measured = check(run, claim, a, b, points)
        if measured.ratio is None or measured.systems:
            return measured
        # The systems it read, so the host's drift is judged while they ran (report/trust.py).
        return replace(measured, systems=tuple(s["label"] for s in (a, b) if s))
    return resolve


def _writes_fast(run, claim, a, _b, _points) -> Measured:
    maxima = {op: _stat(run, a["label"], op, "max_ms") for op in WRITES if _stat(run, a["label"], op, "max_ms") is not None}
    if not maxima:
        return Measured(None, "", "no write was replayed")
    worst = max(maxima, key=maxima.get)
    p99 = max((_stat(run, a["label"], op, "p99_ms") or 0) for op in maxima)
    return Measured(maxima[worst], f"{a['label']}: slowest write {worst} {maxima[worst]:.2f} ms (ms, not a ratio); "
                    f"the highest P99 of a write type {p99:.2f} ms", outcome=maxima[worst] < float(claim["reference_ratio"]))


def _query_avg(run, _claim, a, b, _points) -> Measured:
    means = [_stat(run, s["label"], "query", "mean_ms") for s in (a, b)]
    p99s = [_stat(run, s["label"], "query", "p99_ms") for s in (a, b)]
    if None in means + p99s or not means[1] or not p99s[1]:
        return Measured(None, "", "queries were not replayed on both systems")
    mean_r, p99_r = means[0] / means[1], p99s[0] / p99s[1]
    return Measured(mean_r, f"mean {a['label']}={means[0]:.3f} / {b['label']}={means[1]:.3f} ms; "
                    f"P99 ratio {p99_r:.2f} ({p99s[0]:.3f} / {p99s[1]:.3f} ms)", outcome=mean_r > 1 and p99_r < 1)


def _capped(run, _claim, a, b, _points) -> Measured:
    means = [_stat(run, s["label"], "insert.capped", "mean_ms") for s in (a, b)]
    if None in means or not means[1]:
        return Measured(None, "", "capped inserts were not replayed on both systems")
    ratio = means[0] / means[1]
    return Measured(ratio, f"capped insert mean {a['label']}={means[0]:.3f} / {b['label']}={means[1]:.3f} ms",
                    outcome=ratio > 1)


def _scan_linear(_run, _claim, a, _b, points) -> Measured:
    fitted = fits(points.filter(pl.col("system") == a["label"])) if not points.is_empty() else pl.DataFrame()
    if fitted.is_empty():
        return Measured(None, "", "no query scanned more than one distinct number of documents")
    f = fitted.row(0, named=True)
    return Measured(f["ms per 1000 docs"],
                    f"{a['label']}: {f['ms per 1000 docs']:.3f} ms per 1000 docs (95% low {f['slope_low']:.3f}), "
                    f"R²={f['r2']:.2f} over the medians of {f['bins']} bins of {f['n']} queries (R²={f['r2 points']:.2f} "
                    f"over every query); holds when the slope is above 0 and the medians' R² ≥ {MIN_R2}",
                    outcome=f["slope_low"] > 0 and f["r2"] >= MIN_R2)


def _nearsphere(_run, _claim, _a, _b, _points) -> Measured:
    return Measured(None, "", "it compares MongoDB 3.0 with 2.6 on nearSphere queries over 2d indexes: the bundled "
                              "mix has no geospatial queries and the embedded engines no geospatial index; a capture "
                              "holding them replays only on mongod (TARGET=mongod with both releases' binaries)")


CHECKS = {"fb.writes_fast": _writes_fast, "fb.query_avg": _query_avg, "fb.capped": _capped,
          "fb.scan_linear": _scan_linear, "fb.nearsphere": _nearsphere}


def claims_table(run: RunData) -> pl.DataFrame:
    return evaluate(load_claims(run.manifest["experiment"]), resolver(run))


# A replay runs the capture from its first op to its last (a `real`-style one at the capture's
# pace), and the post judged each replay's latency over all of it: no interval is left out.
OVER_TIME = over_time.View(("run",), None, "each replay runs the capture from start to end and is judged whole, "
                           "as the post judged it; the recorder's run is the live mix it captured")


# -- findings -------------------------------------------------------------------------------
def findings(run: RunData, claims: pl.DataFrame) -> str:
    replayers = [s for s in run.complete_systems if role_of(run, s["label"]) == "replayer"]
    lines = _replay_findings(run, replayers) + _fastest_per_op(run, replayers) + _lsm_against_mmap(run)
    lines += _write_findings(run, replayers) + _scan_and_capped_findings(run) + unfinished.paragraphs(run)
    lines.append(f"**Claims.** {verdict_summary(claims)}.")
    for row in claims.iter_rows(named=True):
        if row["verdict"] == NOT_EVALUATED:
            lines.append(f"- *{row['claim']}*: not evaluated ({row['reason']}).")
        else:
            lines.append(f"- *{row['claim']}*: {row['from']}: **{row['verdict']}**.")
    if caveat(run):
        lines.append(caveat(run))
    return "\n\n".join(lines)


def _replay_findings(run: RunData, replayers: list[dict]) -> list[str]:
    """What was captured, and how close to its recorded times each replay started its ops."""
    lines = []
    recorder = next((s["label"] for s in run.systems if role_of(run, s["label"]) == "recorder"), None)
    if recorder:
        info = summary(run, recorder)
        lines.append(f"**Capture.** {recorder} ran the bundled application mix live and captured "
                     f"{info['captured_ops']:,} operations; {len(replayers)} system(s) replayed them in "
                     f"`{run.manifest['params']['workload']['style']}` style.")
    for s in replayers:
        info = summary(run, s["label"])
        lag, skipped = info.get("lag_ms"), sum(n for r in info["skipped"].values() for n in r.values())
        if lag:
            lines.append(f"{s['label']} started half its ops within {lag['p50']:.2f} ms of their recorded times and "
                         f"99% within {lag['p99']:.1f} ms (worst {lag['max']:.0f} ms)"
                         + (f"; {skipped} ops could not be replayed on it." if skipped else "."))
    return lines


def _fastest_per_op(run: RunData, replayers: list[dict]) -> list[str]:
    """Per op type, which replaying system was fastest on average and at P99."""
    by_op: dict[str, list[dict]] = {}
    for r in latency_rows(run):
        if any(r["setup"] == s["label"] for s in replayers):
            by_op.setdefault(r["op"], []).append(r)
    if not by_op or len(replayers) < 2:
        return []
    parts = []
    for op in sorted(by_op, key=lambda o: OP_ORDER.index(o) if o in OP_ORDER else 99):
        best_mean = min(by_op[op], key=lambda r: r["mean_ms"])
        best_p99 = min(by_op[op], key=lambda r: r["p99_ms"])
        parts.append(f"{op}: {best_mean['setup']} ({best_mean['mean_ms']:.3f} ms mean), "
                     f"{best_p99['setup']} ({best_p99['p99_ms']:.3f} ms P99)")
    return ["**Fastest per op type among the replays** (mean, P99): " + "; ".join(parts) + "."]


def _lsm_against_mmap(run: RunData) -> list[str]:
    """The post's comparison: the LSM against the mmap engine, op type by op type."""
    lsm, mmap = _pick(run, "lsm"), _pick(run, "mmap")
    if not (lsm and mmap):
        return []
    ops = [op for op in OP_ORDER if _stat(run, lsm["label"], op, "mean_ms") and _stat(run, mmap["label"], op, "mean_ms")]
    faster_mean = [op for op in ops if _stat(run, lsm["label"], op, "mean_ms") < _stat(run, mmap["label"], op, "mean_ms")]
    faster_p99 = [op for op in ops if _stat(run, lsm["label"], op, "p99_ms") <= _stat(run, mmap["label"], op, "p99_ms")]
    return [f"**{lsm['label']} (lsm) against {mmap['label']} (mmap).** On average {lsm['label']} was faster for "
            f"{', '.join(faster_mean) or 'no op type'} and slower for "
            f"{', '.join(o for o in ops if o not in faster_mean) or 'no op type'}; at P99 it was as fast or faster "
            f"for {', '.join(faster_p99) or 'no op type'}. (The post: faster on average for every type but "
            "queries, on par or better at P99 for every type but counts.)"]


def _write_findings(run: RunData, replayers: list[dict]) -> list[str]:
    writes = {s["label"]: max((_stat(run, s["label"], op, "max_ms") or 0) for op in WRITES) for s in replayers}
    p99s = {s["label"]: max((_stat(run, s["label"], op, "p99_ms") or 0) for op in WRITES) for s in replayers}
    if not writes:
        return []
    under = [k for k, v in writes.items() if v < 10]
    return ["**Writes.** Slowest replayed write per system: " + ", ".join(f"{k} {v:.1f} ms" for k, v in writes.items())
            + f"; all writes under 10 ms on {', '.join(under) or 'none'}. The highest P99 of a write type: "
            + ", ".join(f"{k} {v:.1f} ms" for k, v in p99s.items()) + "."]


def _scan_and_capped_findings(run: RunData) -> list[str]:
    lines = []
    fitted = fits(scans(run))
    if not fitted.is_empty():
        lines.append("**Latency against documents scanned** (queries): " + "; ".join(
            f"{f['system']} {f['ms per 1000 docs']:.3f} ms per 1000 documents (R²={f['r2']:.2f} over the bins' medians, "
            f"{f['r2 points']:.2f} over every query)"
            for f in fitted.iter_rows(named=True)) + ".")
    capped = capped_table(run)
    if not capped.is_empty():
        lines.append("**Capped collection.** Mean insert into the capped log against an ordinary insert: " + ", ".join(
            f"{r['setup']} {r['capped mean (ms)']:.3f} vs {r['insert mean (ms)']:.3f} ms"
            for r in capped.iter_rows(named=True) if r["insert mean (ms)"] is not None) + ".")
    return lines
