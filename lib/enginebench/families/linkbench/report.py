"""LinkBench report pieces: the post's tables next to ours, response times, claims, findings."""
from __future__ import annotations

import dataclasses
import math
import re

import polars as pl

from ...paths import reference_dir
from ...report.claims import (Measured, caveat, claim_line, cpu_comparability, evaluate, load_claims, release_note,
                              switches_counted, verdict_summary)
from ...report.latency import latency_rows, latency_table, stalls_sentence
from ...report.rundata import RunData, load_run, merged_latency, phase_summary
from ...report.runs import partner_run
from ...report.runparams import request_rate
from ...metrics.steady import swing
from ...report.steady import steadiness, steady_finding
from ...report import unfinished
from ...report.numbers import number

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


def steady_run(run: RunData) -> RunData:
    """The run with each system's query-phase rows narrowed to the intervals that passed the
    steady rule (all of them for a system that never did): the one window every query figure of
    the page comes from, claims, findings and tables alike."""
    ops, intervals = run.ops, run.intervals
    for system in run.systems:
        ops = _steady_only(run, ops, system["label"], "run")
        intervals = _steady_only(run, intervals, system["label"], "run")
    return dataclasses.replace(run, ops=ops, intervals=intervals)


def response_times(run: RunData) -> pl.DataFrame:
    """Latency per system and operation over each system's steady query intervals (the claims'
    window), with p99.9, the maximum and stalls flagged."""
    return latency_table(steady_run(run), "run")


def stalls(run: RunData) -> str:
    """The query phase's stalls, in one sentence ('' when none)."""
    return stalls_sentence(latency_rows(steady_run(run), "run"))


# -- claims ---------------------------------------------------------------------------------
def pick_pair(run: RunData, num_role: str, den_role: str, *, same_engine_oplog: bool = False):
    """The systems compared for two roles: the first complete system of each role (params order)
    with the same oplog setting, op1 preferred; for an oplog claim, op1 vs op0 of one role."""
    done = run.complete_systems
    if same_engine_oplog:
        on = next((s for s in done if run.plays(s, num_role) and s["options"].get("oplog")), None)
        off = next((s for s in done if run.plays(s, num_role) and not s["options"].get("oplog")
                    and (on is None or s["engine"] == on["engine"])), None)
        return on, off
    for oplog in (True, False):
        a = next((s for s in done if run.plays(s, num_role) and bool(s["options"].get("oplog")) == oplog), None)
        b = next((s for s in done if run.plays(s, den_role) and bool(s["options"].get("oplog")) == oplog), None)
        if a and b:
            return a, b
    return (next((s for s in done if run.plays(s, num_role)), None),
            next((s for s in done if run.plays(s, den_role)), None))


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
    run for its own experiment and, for the other, the run an explain paired with it or else the
    one the collection chooses at the same scale, target and host (partner_run); names both."""
    exps = claim["experiment"].split("+")
    runs = {}
    for exp in exps:
        if exp == run.manifest["experiment"]:
            runs[exp] = run
        elif exp in run.companions:
            runs[exp] = run.companions[exp]
        else:
            path = partner_run(exp, run.manifest)
            if path is None:
                # A smoke run beside a default one would compare a tiny database with a real one.
                return Measured(None, "", f"needs a complete run of {exp} at the {run.manifest.get('scale')} scale "
                                          f"on this target and host (make experiment EXP={exp})")
            runs[exp] = load_run(path)
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
        detail = f"{a['label']}={_short(va, metric)} / {b['label']}={_short(vb, metric)}" + release_note(claim, a, b)
        unsteady = None
        if phase == "run":
            used, unsteady = _steady_note(run, [a["label"], b["label"]])
            detail += used
        if metric in ("cpu_per_op", "cs_per_op"):
            not_comparable = cpu_comparability([a, b], phase)
            if not_comparable:
                return Measured(None, detail, not_comparable)
        if metric == "cs_per_op":
            void = switches_counted(run.samples, [a["label"], b["label"]])
            if void:
                return Measured(None, detail, void)
        if va is None or vb is None:
            return Measured(None, detail, f"{metric} was not measured for {a['label'] if va is None else b['label']}")
        if vb == 0:
            return Measured(None, detail, f"{metric} of {b['label']} is 0, so the ratio is undefined")
        swing = _ratio_swing(run, [a["label"], b["label"]], phase, metric, op) if phase == "run" else None
        if swing:
            detail += f"; its intervals swing the ratio ±{swing:.1%} (two standard errors)"
        return Measured(va / vb, detail, unsteady=unsteady, swing=swing, systems=(a["label"], b["label"]))
    return resolve


def _ratio_swing(run: RunData, labels: list[str], phase: str, metric: str, op: str | None) -> float | None:
    """Two standard errors of the ratio, relative, from each system's interval-to-interval swing
    of the claim's own metric over its judged intervals (metrics/steady.swing): an LSM swinging
    between compactions is steady but noisy, and that noise belongs in the verdict."""
    errors = []
    for label in labels:
        values = [v for v in (_value(_one_interval(run, label, phase, k), label, phase, metric, op)
                              for k in _judged_intervals(run, label)) if v is not None]
        error = swing(values)
        if error is None:
            return None
        errors.append(error)
    return 2 * math.sqrt(sum(e * e for e in errors))


def _judged_intervals(run: RunData, label: str) -> list[int]:
    state = steadiness(run, label)
    return state.passed or state.intervals


def _one_interval(run: RunData, label: str, phase: str, interval: int) -> RunData:
    """The run with one system's rows of a phase narrowed to one interval."""
    def only(frame: pl.DataFrame) -> pl.DataFrame:
        if frame.is_empty():
            return frame
        return frame.filter((pl.col("phase") != phase) | (pl.col("system") != label) | (pl.col("interval") == interval))
    return dataclasses.replace(run, ops=only(run.ops), intervals=only(run.intervals))


def _short(value, metric: str = ""):
    if value is None:
        return "n/a"
    if metric in ("rss_gb", "size_du_gb"):  # resolved in bytes; the claims speak in GB
        return f"{value / 2**30:.2f} GiB"
    return number(value)


def claims_table(run: RunData) -> pl.DataFrame:
    return evaluate(load_claims(run.manifest["experiment"]), resolver(run))


# -- findings -------------------------------------------------------------------------------
def _ratio_text(a: float, b: float) -> str:
    if not b:
        return "n/a"
    r = a / b
    return f"{r:.2f}x" if r >= 1 else f"{r:.2f}x (i.e. {1 / r:.2f}x slower)"


def open_loop_finding(run: RunData, systems: list[dict], rate: float) -> str:
    """Open loop: did the engine keep up with the arrival rate, and what did waiting add?"""
    from ...report.rundata import merge_histograms
    parts = []
    for s in systems:
        rows = run.intervals.filter((pl.col("system") == s["label"]) & (pl.col("phase") == "run")).sort("interval")
        ops = run.ops.filter((pl.col("system") == s["label"]) & (pl.col("phase") == "run"))
        achieved = float(rows["ops_per_s"].mean()) if rows.height else 0.0
        first, last = rows["interval"].min(), rows["interval"].max()

        def p99(column, k):
            hist = merge_histograms(ops.filter(pl.col("interval") == k)[column])
            return hist.get_value_at_percentile(99.0) / 1000 if hist else None
        service = (p99("hist", first), p99("hist", last))
        intended = (p99("intended_hist", first), p99("intended_hist", last))
        if None in service or None in intended:
            continue
        behind = achieved < 0.95 * rate
        parts.append(f"{s['label']} served {achieved:,.0f} of the {rate:,.0f} requests/s asked; p99 latency from the "
                     f"intended start went from {intended[0]:.1f} to {intended[1]:.1f} ms while service time went from "
                     f"{service[0]:.1f} to {service[1]:.1f} ms"
                     + (": it could not keep up, so requests queued and the intended-start latency grew while the "
                        "service time did not." if behind and intended[1] > 2 * max(service[1], 0.001)
                        else "."))
    return "**Open loop.** " + " ".join(parts) if parts else "**Open loop.** No interval had both latencies."


COUNTS_MODES = {
    "linkbenchx": ("as LinkbenchX kept them on MongoDB 3.x (`counts: linkbenchx`, the post's pattern): separate "
                   "round trips and no transaction, so count rows drift from the links, as the post warned, and "
                   "the mismatches the check finds are a finding, not a fault"),
    "exact": ("in one transaction with their link, as LinkBench's MySQL store does (`counts: exact`), so any "
              "mismatch the check finds is a fault"),
}


def counts_finding(run: RunData, done: list[dict]) -> str:
    """Which count semantics ran, and what the consistency check found under them."""
    mode = run.manifest["params"]["workload"].get("counts", "exact")  # runs from before the choice kept exact counts
    text = f"**Counts.** Count rows were kept {COUNTS_MODES[mode]}."
    consistency = [(s["label"], (s.get("consistency") or {}).get("mismatches")) for s in done if s.get("consistency")]
    if consistency:
        text += (" Consistency check (count rows against visible links): "
                 + ", ".join(f"{k} {v} mismatches" for k, v in consistency) + ".")
    return text


def findings(run: RunData, claims: pl.DataFrame) -> str:
    done = run.complete_systems
    lines = []
    if not done:
        return unfinished.nothing_completed(run)
    load = {s["label"]: phase_summary(run.intervals, s["label"], "load") for s in done}
    load = {k: v for k, v in load.items() if v}
    if load:
        best = max(load, key=lambda k: load[k]["ops_per_s"])
        parts = [f"{k} {v['ops_per_s']:,.0f} docs/s" for k, v in sorted(load.items(), key=lambda kv: -kv[1]["ops_per_s"])]
        lines.append(f"**Load.** Fastest: {best}. Insert rates over all collections: {', '.join(parts)}.")
        wkb = {k: v["wkb_per_op"] for k, v in load.items() if v["wkb_per_op"] is not None}
        if wkb:
            most = max(wkb, key=wkb.get)
            lines.append(f"Bytes written per node inserted were highest for {most} ({wkb[most]:.2f} KB/node); "
                         + ", ".join(f"{k} {v:.2f}" for k, v in wkb.items()) + ".")
    run_rows = run.intervals.filter(pl.col("phase") == "run") if not run.intervals.is_empty() else run.intervals
    measured = [s for s in done if not run_rows.is_empty() and s["label"] in run_rows["system"].to_list()]
    if measured:
        rates = {}
        for s in measured:
            series = run_rows.filter(pl.col("system") == s["label"]).sort("interval")["ops_per_s"].to_list()
            rates[s["label"]] = series
        # The claims' figure: each system's rate over its steady intervals (all, when never steady).
        steady = steady_run(run)
        window = {k: (phase_summary(steady.intervals, k, "run") or {}).get("ops_per_s") or 0.0 for k in rates}
        ranked = sorted(rates, key=lambda k: -window[k])
        text = ", ".join(f"{k} {window[k]:,.0f} ops/s" for k in ranked)
        lines.append(f"**Query phase.** Request rates over each system's steady intervals (the figures the "
                     f"claims use): {text}.")
        if len(ranked) > 1 and window[ranked[1]]:
            lines.append(f"{ranked[0]} answered {_ratio_text(window[ranked[0]], window[ranked[1]])} "
                         f"the requests of {ranked[1]}.")
        lines.append(steady_finding(run))  # the one steadiness rule the claims are judged by
        stalled = stalls_sentence(latency_rows(steady, "run"))
        if stalled:
            lines.append(stalled)
        for s in measured:
            cap = ((s.get("resources") or {}).get("io_caps") or {}).get("read_iops")
            summary = phase_summary(run.intervals, s["label"], "run")
            if cap and summary and summary["r_per_op"] is not None and summary["ops_per_s"]:
                needed = summary["ops_per_s"] * summary["r_per_op"]
                lines.append(f"{s['label']} needed {needed:,.0f} storage reads/s ({summary['r_per_op']:.2f} per request) "
                             f"against the device's {cap:,} IOPS: {needed / cap:.0%} of what the emulated device allows"
                             + (", so the device, not the engine, set its rate." if needed >= 0.9 * cap else "."))
        reads = {s["label"]: phase_summary(run.intervals, s["label"], "run") for s in measured}
        cached = [k for k, v in reads.items() if v and v["r_per_op"] is not None and v["r_per_op"] < 0.01]
        if cached:
            lines.append(f"Storage reads per request stayed near zero for {', '.join(cached)} "
                         "(r/o < 0.01): the database was served from memory, as a cached experiment intends.")
    rate = request_rate(run.manifest)
    if rate and measured:
        lines.append(open_loop_finding(run, measured, rate))
    lines += unfinished.paragraphs(run)
    lines.append(f"**Claims.** {verdict_summary(claims)}.")
    lines += [claim_line(row) for row in claims.iter_rows(named=True)]
    lines.append(counts_finding(run, done))
    if caveat(run):
        lines.append(caveat(run))
    return "\n\n".join(lines)
