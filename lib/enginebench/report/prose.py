"""Findings written from the measured numbers (never from templates with fixed values)."""
from __future__ import annotations

import statistics

import polars as pl

from .claims import claim_line, verdict_summary
from .runparams import request_rate
from .rundata import RunData, phase_summary
from .steady import steady_finding


def _ratio_text(a: float, b: float) -> str:
    if not b:
        return "n/a"
    r = a / b
    return f"{r:.2f}x" if r >= 1 else f"{r:.2f}x (i.e. {1 / r:.2f}x slower)"


EMBEDDED_CAVEAT = ("**How to read these numbers.** The systems here are storage engines embedded in one Python "
                   "runner process with MongoDB's record-store layout on top, not mongod: there is no network "
                   "round trip, no query planner and no thread per connection, and the workload generator shares "
                   "the process (its own CPU is reported as client cpu/o). Absolute rates, context switches and "
                   "CPU per operation therefore measure a different stack from the posts'; what carries over is "
                   "how the engines compare with each other under the same workload and limits.")


def caveat(run: RunData) -> str:
    return EMBEDDED_CAVEAT if (run.manifest.get("target") or {}).get("kind") == "embedded" else ""


def open_loop_finding(run: RunData, systems: list[dict], rate: float) -> str:
    """Open loop: did the engine keep up with the arrival rate, and what did waiting add?"""
    from .rundata import merge_histograms
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


def linkbench_findings(run: RunData, claims: pl.DataFrame) -> str:
    done = run.complete_systems
    lines = []
    if not done:
        return "No system completed, so there is nothing to compare. The banner above says why."
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
        ranked = sorted(rates, key=lambda k: -statistics.mean(rates[k]))
        text = ", ".join(f"{k} {statistics.mean(rates[k]):,.0f} ops/s" for k in ranked)
        lines.append(f"**Query phase.** Mean request rates over {len(rates[ranked[0]])} interval(s): {text}.")
        if len(ranked) > 1:
            lines.append(f"{ranked[0]} answered {_ratio_text(statistics.mean(rates[ranked[0]]), statistics.mean(rates[ranked[1]]))} "
                         f"the requests of {ranked[1]}.")
        lines.append(steady_finding(run))  # the one steadiness rule the claims are judged by
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
    lines.append(f"**Claims.** {verdict_summary(claims)}.")
    lines += [claim_line(row) for row in claims.iter_rows(named=True)]
    lines.append(counts_finding(run, done))
    if caveat(run):
        lines.append(caveat(run))
    return "\n\n".join(lines)
