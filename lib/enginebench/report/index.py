"""reports/index.html: every experiment's latest run, its claim verdicts, links to all its runs."""
from __future__ import annotations

import html
import json
import os
from pathlib import Path

from ..families import FAMILIES
from ..paths import reports_dir, results_dir
from ..results.rundir import settle_all
from .claims import FAILS, HOLDS, INCONCLUSIVE, NOT_EVALUATED, SMOKE, WITHHELD, verdict_counts
from .html import STYLE
from . import repeats
from .rundata import load_run



def claims_for(run) -> dict | None:
    family = FAMILIES.get(run.manifest["params"]["notebook"])
    if family is None:
        return None
    return verdict_counts(repeats.claims(run, family.report_module().claims_table))


def verdicts_cell(counts: dict | None) -> str:
    """The claims column: a smoke run's says it has no verdict; otherwise the counts, with the
    verdicts withheld for an unsteady run or a drifting host named beside them."""
    if counts is None:
        return "not evaluated"
    if counts[SMOKE]:
        return (f"<span class='eb-na'>{SMOKE}</span> ({counts[SMOKE]} claims measured, "
                f"{counts[NOT_EVALUATED]} not evaluated)")
    withheld = "".join(f", <span class='eb-na'>{counts[v]} {v}</span>" for v in WITHHELD if counts[v])
    return (f"<span class='eb-holds'>{counts[HOLDS]} hold</span>, <span class='eb-fails'>{counts[FAILS]} do not hold</span>, "
            f"<span class='eb-na'>{counts[NOT_EVALUATED]} not evaluated</span>"
            + (f", {counts[INCONCLUSIVE]} inconclusive" if counts[INCONCLUSIVE] else "") + withheld)


def runs_by_experiment(base: Path) -> dict[str, list[Path]]:
    out = {}
    if not base.is_dir():
        return out
    for exp_dir in sorted(p for p in base.iterdir() if p.is_dir() and p.name != "bench"):
        runs = sorted((p for p in exp_dir.iterdir() if (p / "manifest.json").exists()), key=lambda p: p.name, reverse=True)
        if runs:
            out[exp_dir.name] = runs
    return out


def _link(target: Path, text: str, out_dir: Path) -> str:
    rel = os.path.relpath(target, out_dir)
    return f"<a href='{html.escape(rel)}'>{html.escape(text)}</a>"


def write_index(out: Path | None = None) -> Path:
    out_dir = reports_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out or out_dir / "index.html"
    rows = []
    settle_all("make reports")  # a `running` run whose driver is gone is shown as died, not as going on
    for exp, runs in runs_by_experiment(results_dir()).items():
        latest = runs[0]
        manifest = json.loads((latest / "manifest.json").read_text())
        try:
            counts = claims_for(load_run(latest))
        except Exception as exc:  # a broken run folder is listed with the reason, not hidden
            counts = None
            manifest.setdefault("banner", []).append(f"claims could not be evaluated: {exc}")
        systems = ", ".join(f"{label} ({info.get('status')})" for label, info in manifest.get("systems", {}).items())
        report = latest / "report.html"
        report_link = _link(report, "report", out_dir) if report.exists() else "no report rendered"
        earlier = " ".join(_link(r / "report.html" if (r / "report.html").exists() else r / "manifest.json",
                                 r.name, out_dir) for r in runs[1:]) or "none"
        verdicts = verdicts_cell(counts)
        rows.append(f"<tr><td class='text'><b>{html.escape(exp)}</b></td>"
                    f"<td class='text'>{html.escape(latest.name)}</td>"
                    f"<td class='text'>{html.escape(str(manifest.get('started_at', ''))[:19])}</td>"
                    f"<td class='text'>{html.escape(manifest.get('host', {}).get('hostname', ''))}</td>"
                    f"<td class='text'>{html.escape(manifest.get('scale', ''))}</td>"
                    f"<td class='text'>{html.escape(systems)}</td>"
                    f"<td class='text'>{html.escape(manifest.get('status', ''))}</td>"
                    f"<td class='text'>{verdicts}</td><td class='text'>{report_link}</td>"
                    f"<td class='text'>{earlier}</td></tr>")
    head = "".join(f"<th class='text'>{h}</th>" for h in ("experiment", "latest run", "started (UTC)", "host", "scale",
                                                         "systems", "status", "claims", "report", "earlier runs"))
    body = "".join(rows) or "<tr><td class='text' colspan='10'>No runs yet: make experiment EXP=...</td></tr>"
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>enginebench: results</title>{STYLE}</head>"
            "<body style='font-family: system-ui, sans-serif; margin: 24px'>"
            "<h1>enginebench results</h1><p>The latest run of every experiment, with its claim verdicts; "
            "earlier runs are kept and linked.</p>"
            f"<table class='eb-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>")
    out.write_text(page)
    return out
