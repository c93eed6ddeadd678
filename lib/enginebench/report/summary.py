"""summary.json in each run folder: the run's headline numbers and claim verdicts, machine-readable.

Written when the report is made (experiment.run_experiment): the numbers per system and phase
come from the run's own tables (the same phase_summary and merged histograms the page shows);
the claims are the ones the page showed, which page.show_claims publishes beside its HTML table
under CLAIMS_MIME, so the summary's verdicts are the page's verdicts, computed once.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat

from .rundata import RunData, merged_latency, phase_summary

CLAIMS_MIME = "application/vnd.enginebench.claims+json"
SUMMARY_FILE = "summary.json"
PER_OP = ("ops_per_s", "r_per_op", "rkb_per_op", "wkb_per_op", "cs_per_op", "cpu_us_per_op",
          "client_cpu_us_per_op", "size_du_bytes", "seconds", "ops")
LATENCY = ("count", "errors", "p50_ms", "p99_ms", "p999_ms", "max_ms", "intended_p99_ms")


def json_safe(value):
    """NaN and infinities are not JSON: they become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def _phases(run: RunData, label: str) -> dict:
    if run.intervals.is_empty():
        return {}
    rows = run.intervals.filter(run.intervals["system"] == label)
    out = {}
    for phase in rows["phase"].unique(maintain_order=True).to_list():
        figures = phase_summary(run.intervals, label, phase) or {}
        out[phase] = {key: figures.get(key) for key in PER_OP if key in figures}
        latency = merged_latency(run.ops, label, phase)
        if latency:
            out[phase]["latency_ms"] = {e["op"]: {k: e[k] for k in LATENCY if k in e} for e in latency}
    return out


def headline(run: RunData) -> dict:
    """Per system: its status and, per phase, ops/s, per-operation figures and latency per op."""
    return {s["label"]: {"role": s.get("role"), "engine": s.get("engine"), "status": s.get("status"),
                         "phases": _phases(run, s["label"])}
            for s in run.systems}


def claims_shown(executed: Path) -> list[dict]:
    """The claims rows the executed notebook displayed (empty when it stopped before them)."""
    rows = []
    for cell in nbformat.read(executed, as_version=4).cells:
        for output in cell.get("outputs", []):
            rows += output.get("data", {}).get(CLAIMS_MIME, {}).get("claims", [])
    return rows


def write_summary(run: RunData, executed: Path) -> Path:
    claims = claims_shown(executed)
    verdicts: dict[str, int] = {}
    for claim in claims:
        verdicts[str(claim.get("verdict"))] = verdicts.get(str(claim.get("verdict")), 0) + 1
    m = run.manifest
    summary = {"run_id": m.get("run_id"), "experiment": m.get("experiment"), "scale": m.get("scale"),
               "status": m.get("status"), "started_at": m.get("started_at"), "finished_at": m.get("finished_at"),
               "systems": headline(run), "claims": claims, "verdicts": verdicts}
    if not claims:
        summary["claims_note"] = "the report showed no claims: its notebook stopped before the claims table"
    path = run.path / SUMMARY_FILE
    path.write_text(json.dumps(json_safe(summary), indent=1, default=str) + "\n")
    return path
