"""LinkBench report pieces: the post's tables next to ours, response times, claims, findings."""
from __future__ import annotations

import math
import re

import polars as pl

from ..paths import reference_dir
from .claims import Measured, cpu_comparability, evaluate, load_claims
from .latency import latency_table
from .rundata import RunData, latest_run, load_run, merged_latency, phase_summary
from .steady import steadiness

MB, GiB = 1 << 20, 1 << 30
GB = 1 << 30


def reference_table(config: str) -> pl.DataFrame:
    ref = pl.read_csv(reference_dir() / "linkbench_2015.csv")
    return ref.filter(pl.col("config") == config)


def post_tables(config: str) -> dict[str, pl.DataFrame]:
    """The post's tables in its own columns: '--- load', '--- run, 2nd hour', ..."""
    ref = reference_table(config)
    out = {}
    for (phase, hour), group in ref.group_by(["phase", "hour"], maintain_order=True):
        title = "load" if phase == "load" else f"run, hour {hour} of 1 h"
        out[title] = group.select(
            pl.col("ops"),
            pl.format("{}/{}", "size_du_gb", "size_apparent_gb").alias("size GiB (du/apparent)"),
            pl.col("r_per_op").alias("r/o"), pl.col("wkb_per_op").alias("wKB/o"),
            pl.col("cs_per_op").alias("cs/o"), pl.col("cpu_per_op").alias("cpu/o (vmstat x1e6)"),
            pl.col("rss_gb").alias("rss GiB"), pl.col("setup"))
    return out


def _fmt(value, digits=1):
    return None if value is None else round(float(value), digits)


def _row(summary: dict, label: str, with_rss: bool) -> dict:
    du = summary.get("size_du_bytes")
    apparent = summary.get("size_apparent_bytes")
    row = {
        "ops": _fmt(summary["ops_per_s"], 0),
        "size GiB (du/apparent)": None if du is None else f"{du / GiB:.3g}/{apparent / GiB:.3g}",
        "r/o": _fmt(summary["r_per_op"], 3), "wKB/o": _fmt(summary["wkb_per_op"], 3),
        "cs/o": _fmt(summary["cs_per_op"], 2), "cpu/o (us)": _fmt(summary["cpu_us_per_op"], 0),
        "client cpu/o (us)": _fmt(summary.get("client_cpu_us_per_op"), 0),
    }
    if with_rss:
        row["rss GiB"] = None if summary.get("rss_bytes") is None else float(f"{summary['rss_bytes'] / GiB:.3g}")
    row["setup"] = label
    return row


def our_tables(run: RunData) -> dict[str, pl.DataFrame]:
    """Ours in the post's columns: the whole load phase, then each measured interval."""
    out: dict[str, list[dict]] = {}
    interval_s = run.manifest["params"]["phases"]["measure"]["interval_s"]
    for system in run.systems:
        label = system["label"]
        load = phase_summary(run.intervals, label, "load")
        if load:
            out.setdefault("load", []).append(_row(load, label, with_rss=False))
        if run.intervals.is_empty():
            continue
        intervals = run.intervals.filter((pl.col("system") == label) & (pl.col("phase") == "run"))
        for k in sorted(intervals["interval"].unique().to_list()):
            summary = phase_summary(run.intervals, label, "run", k)
            out.setdefault(f"run, interval {k + 1} of {interval_s:g} s", []).append(_row(summary, label, with_rss=True))
    return {title: pl.DataFrame(rows) for title, rows in out.items()}


def response_times(run: RunData) -> pl.DataFrame:
    return latency_table(run, "run")


# -- claims ---------------------------------------------------------------------------------
def pick_pair(run: RunData, num_role: str, den_role: str, *, same_engine_oplog: bool = False):
    """The systems compared for two roles: the first complete system of each role (params order)
    with the same oplog setting, op1 preferred; for an oplog claim, op1 vs op0 of one role."""
    done = run.complete_systems
    if same_engine_oplog:
        on = next((s for s in done if s["role"] == num_role and s["options"].get("oplog")), None)
        off = next((s for s in done if s["role"] == num_role and not s["options"].get("oplog")
                    and (on is None or s["engine"] == on["engine"])), None)
        return on, off
    for oplog in (True, False):
        a = next((s for s in done if s["role"] == num_role and bool(s["options"].get("oplog")) == oplog), None)
        b = next((s for s in done if s["role"] == den_role and bool(s["options"].get("oplog")) == oplog), None)
        if a and b:
            return a, b
    return (next((s for s in done if s["role"] == num_role), None),
            next((s for s in done if s["role"] == den_role), None))


def _steady_only(run: RunData, frame: pl.DataFrame, label: str, phase: str) -> pl.DataFrame:
    """The query phase's rows narrowed to the intervals that passed the steady rule
    (report/steady.py); all of them when none did, for a ratio shown beside 'not steady'."""
    if phase != "run" or frame.is_empty():
        return frame
    passed = steadiness(run, label).passed
    if not passed:
        return frame
    return frame.filter((pl.col("phase") != "run") | (pl.col("system") != label) | pl.col("interval").is_in(passed))


def _value(run: RunData, label: str, phase: str, metric: str, op: str | None):
    if metric.startswith("p99_ms"):
        rows = [e for e in merged_latency(_steady_only(run, run.ops, label, phase), label, phase) if e["op"] == op]
        return rows[0]["p99_ms"] if rows and "p99_ms" in rows[0] else None
    # The post's run figures are per hour after an hour of warm-up; ours come from the intervals
    # that passed the steady rule.
    summary = phase_summary(_steady_only(run, run.intervals, label, phase), label, phase)
    if summary is None:
        return None
    key = {"ops": "ops_per_s", "size_du_gb": "size_du_bytes", "wkb_per_op": "wkb_per_op",
           "cpu_per_op": "cpu_us_per_op", "rss_gb": "rss_bytes", "cs_per_op": "cs_per_op",
           "r_per_op": "r_per_op"}.get(metric)
    return None if key is None else summary.get(key)


def _steady_note(run: RunData, labels: list[str]) -> tuple[str, str | None]:
    """Which query intervals each system's figure comes from, and why there is no verdict when a
    system never became steady."""
    states = [steadiness(run, label) for label in labels]
    used = "; ".join(f"{s.label} {s.describe()}" if s.steady else f"{s.label} all {len(s.intervals)} intervals"
                     for s in states)
    unsteady = [f"{s.label} {s.describe()}" for s in states if not s.steady]
    return f" (query {used})", ("; ".join(unsteady) + "; the ratio shown is over all intervals") if unsteady else None


def _cross_experiment(run: RunData, claim: dict) -> Measured:
    """A claim comparing two experiments (e.g. load rate on disk / on SSD, per engine): uses this
    run for its own experiment and the latest complete run of the other, and names both."""
    exps = claim["experiment"].split("+")
    runs = {}
    for exp in exps:
        if exp == run.manifest["experiment"]:
            runs[exp] = run
        else:
            path = latest_run(exp)
            if path is None:
                return Measured(None, "", f"needs a complete run of {exp} (make experiment EXP={exp})")
            runs[exp] = load_run(path)
            if runs[exp].manifest.get("scale") != run.manifest.get("scale"):
                # A smoke run beside a default one would compare a tiny database with a real one.
                return Measured(None, "", f"the latest complete run of {exp} ({path.name}) is at scale "
                                          f"{runs[exp].manifest.get('scale')}, this one at {run.manifest.get('scale')}")
    m = re.fullmatch(r"(load|run)\.(\w+) \((\w+) / (\w+) per engine\)", claim["metric"])
    if not m:
        return Measured(None, "", f"metric {claim['metric']!r} has no cross-experiment resolver")
    phase, metric = m.group(1), m.group(2)
    a_run, b_run = runs[exps[0]], runs[exps[1]]
    ratios, details = [], []
    for role in claim["numerator_role"].split("|"):
        a, _ = pick_pair(a_run, role, role)
        b, _ = pick_pair(b_run, role, role)
        if a is None or b is None:
            continue
        va, vb = _value(a_run, a["label"], phase, metric, None), _value(b_run, b["label"], phase, metric, None)
        if va is not None and vb:
            ratios.append(va / vb)
            details.append(f"{role}: {a['label']} {_short(va)} / {_short(vb)}")
    if not ratios:
        return Measured(None, "", "no engine role was measured in both experiments")
    used = "; ".join(f"{exp} run {r.manifest['run_id']}" for exp, r in runs.items())
    # The claim holds only if it holds for every engine: report the ratio farthest from 1.
    worst = max(ratios, key=lambda r: abs(math.log(r)))
    return Measured(worst, f"{', '.join(details)} (runs: {used})")


def resolver(run: RunData):
    exp = run.manifest["experiment"]

    def resolve(claim: dict) -> Measured:
        if "+" in claim["experiment"]:
            return _cross_experiment(run, claim)
        metric_text = claim["metric"]
        m = re.fullmatch(r"(load|run)\.(\w+)(?: (\S+))?(?: \((.*)\))?", metric_text)
        if not m:
            return Measured(None, "", f"metric {metric_text!r} has no resolver for {exp}")
        phase, metric, op, qualifier = m.groups()
        oplog_claim = qualifier is not None and "oplog" in qualifier
        num_role, den_role = claim["numerator_role"], claim["denominator_role"]
        a, b = pick_pair(run, num_role, den_role, same_engine_oplog=oplog_claim)
        if a is None or b is None or a is b:
            wanted = f"{num_role} with and without oplog" if oplog_claim else f"{num_role} and {den_role}"
            return Measured(None, "", f"needs complete systems of roles {wanted}; this run has "
                                      + ", ".join(f"{s['label']} ({s['role']}, {s.get('status')})" for s in run.systems))
        va, vb = _value(run, a["label"], phase, metric, op), _value(run, b["label"], phase, metric, op)
        detail = f"{a['label']}={_short(va, metric)} / {b['label']}={_short(vb, metric)}"
        unsteady = None
        if phase == "run":
            used, unsteady = _steady_note(run, [a["label"], b["label"]])
            detail += used
        if metric in ("cpu_per_op", "cs_per_op"):
            not_comparable = cpu_comparability([a, b], phase)
            if not_comparable:
                return Measured(None, detail, not_comparable)
        if va is None or vb is None:
            return Measured(None, detail, f"{metric} was not measured for {a['label'] if va is None else b['label']}")
        if vb == 0:
            return Measured(None, detail, f"{metric} of {b['label']} is 0, so the ratio is undefined")
        return Measured(va / vb, detail, unsteady=unsteady)
    return resolve


def _short(value, metric: str = ""):
    if value is None:
        return "n/a"
    if metric in ("rss_gb", "size_du_gb"):  # resolved in bytes; the claims speak in GB
        return f"{value / 2**30:.2f} GiB"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def claims_table(run: RunData) -> pl.DataFrame:
    return evaluate(load_claims(run.manifest["experiment"]), resolver(run))
