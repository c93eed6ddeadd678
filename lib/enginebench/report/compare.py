"""`make compare A=<run> B=<run>`: what differs between two runs, and the ratios of their
headline numbers (per system and phase: rate, reads, writes and CPU per operation, size)."""
from __future__ import annotations

import html as html_lib
import json
from pathlib import Path

import polars as pl

from ..paths import reports_dir
from ..results.rundir import settle
from .html import STYLE, table
from .rundata import RunData, load_run, phase_summary
from .runs import find_run

HEADLINES = (("ops_per_s", "ops/s"), ("r_per_op", "r/o"), ("wkb_per_op", "wKB/o"), ("cpu_us_per_op", "cpu/o (us)"),
             ("client_cpu_us_per_op", "client cpu/o (us)"), ("size_du_bytes", "size (du)"))


def _flatten(value, prefix="") -> dict:
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: json.dumps(value, default=str) if isinstance(value, list) else value}


def differences(a: RunData, b: RunData) -> pl.DataFrame:
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
    return pl.DataFrame(rows, schema={"what": pl.Utf8, "A": pl.Utf8, "B": pl.Utf8})


def headline_ratios(a: RunData, b: RunData) -> pl.DataFrame:
    rows = []
    labels = [s["label"] for s in a.systems if s["label"] in {t["label"] for t in b.systems}]
    for label in labels:
        for phase in ("load", "run"):
            sa, sb = phase_summary(a.intervals, label, phase), phase_summary(b.intervals, label, phase)
            if not sa or not sb:
                continue
            for key, name in HEADLINES:
                va, vb = sa.get(key), sb.get(key)
                rows.append({"system": label, "phase": phase, "metric": name, "A": va, "B": vb,
                             "B / A": (vb / va) if va and vb is not None else None})
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "phase": pl.Utf8, "metric": pl.Utf8, "A": pl.Float64,
                                      "B": pl.Float64, "B / A": pl.Float64})


def write_comparison(path_a: str | Path, path_b: str | Path) -> Path:
    """A and B: results folders, `<exp>/<run id>` or run ids (report/runs.py find_run)."""
    path_a, path_b = find_run(str(path_a), "A"), find_run(str(path_b), "B")
    for path in (path_a, path_b):  # a `running` run whose driver is gone is compared as died
        settle(path, "make compare")
    a, b = load_run(path_a), load_run(path_b)
    warning = ""
    if a.manifest["experiment"] != b.manifest["experiment"]:
        warning = (f"<div class='eb-banner'>A is {a.manifest['experiment']} and B is {b.manifest['experiment']}: "
                   "different experiments, so only systems with the same label are compared.</div>")
    common = {s["label"] for s in a.systems} & {s["label"] for s in b.systems}
    if not common:
        raise ValueError(f"{path_a} and {path_b} have no system label in common; nothing to compare")
    title = f"{a.manifest['experiment']}: {a.manifest['run_id']} (A) against {b.manifest['run_id']} (B)"
    body = (f"<h1>{html_lib.escape(title)}</h1>{warning}"
            f"<p>A: {html_lib.escape(str(a.path))} (status {a.manifest['status']}, scale {a.manifest['scale']})<br>"
            f"B: {html_lib.escape(str(b.path))} (status {b.manifest['status']}, scale {b.manifest['scale']})</p>"
            + table(headline_ratios(a, b), "Headline numbers and their ratio B / A")
            + table(differences(a, b), "What differs between the runs (params, host, code, versions)"))
    out_dir = reports_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"compare-{a.manifest['run_id']}-vs-{b.manifest['run_id']}.html"
    out.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html_lib.escape(title)}</title>{STYLE}"
                   f"</head><body style='font-family: system-ui, sans-serif; margin: 24px'>{body}</body></html>")
    return out
