"""reports/index.html: per experiment and scale, the latest complete run with its claim verdicts,
and every other run linked with its status (a failed run never stands in for a complete one)."""
from __future__ import annotations

import html
import os
from pathlib import Path

from ..families import FAMILIES
from ..paths import reports_dir, results_dir
from ..results.rundir import settle_all
from .claims import FAILS, HOLDS, INCONCLUSIVE, NOT_EVALUATED, SMOKE, WITHHELD, WITHIN_NOISE, verdict_counts
from .html import STYLE
from . import repeats
from .rundata import load_run
from .runs import manifest_of, newest_complete, runs_by_experiment


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
            + (f", {counts[INCONCLUSIVE]} inconclusive" if counts[INCONCLUSIVE] else "")
            + (f", {counts[WITHIN_NOISE]} {WITHIN_NOISE}" if counts[WITHIN_NOISE] else "") + withheld)


def _link(target: Path, text: str, out_dir: Path) -> str:
    rel = os.path.relpath(target, out_dir)
    return f"<a href='{html.escape(rel)}'>{html.escape(text)}</a>"


def rows_by_scale(runs: list[Path]) -> list[tuple[str, Path | None, list[Path]]]:
    """Per scale, in the order smoke, default, paper: the newest complete run (None if none
    completed) and every run at that scale, newest first."""
    by_scale: dict[str, list[Path]] = {}
    for run in runs:
        by_scale.setdefault(manifest_of(run).get("scale", "?"), []).append(run)
    order = {name: i for i, name in enumerate(("smoke", "default", "paper"))}
    return [(scale, newest_complete(scale_runs), scale_runs)
            for scale, scale_runs in sorted(by_scale.items(), key=lambda item: order.get(item[0], 9))]


def _run_link(run: Path, out_dir: Path) -> str:
    """A run by its id and status, linked to its report, or to its manifest when it has none."""
    status = manifest_of(run).get("status", "?")
    report = run / "report.html"
    if report.exists():
        return f"{_link(report, run.name, out_dir)} ({html.escape(status)})"
    return f"{html.escape(run.name)} ({html.escape(status)}; no report: {_link(run / 'manifest.json', 'manifest', out_dir)})"


def _others(shown: Path | None, scale_runs: list[Path], out_dir: Path) -> str:
    """The runs at this scale other than the one shown, newest first, each with its status; a
    newer run that did not complete is named first, so a failure is never hidden."""
    others = [r for r in scale_runs if r != shown]
    return " ".join(_run_link(r, out_dir) for r in others) or "none"


def _row(exp: str, scale: str, complete: Path | None, scale_runs: list[Path], out_dir: Path) -> str:
    """One experiment at one scale: its newest complete run, or, when none completed, the newest
    run with its status and no verdicts (they would be a run's that did not finish)."""
    shown = complete or scale_runs[0]
    manifest = manifest_of(shown)
    if complete is None:
        verdicts = f"none: no run at this scale completed (the latest is {html.escape(manifest.get('status', '?'))})"
    else:
        try:
            counts = claims_for(load_run(shown))
        except Exception as exc:  # a broken run folder is listed with the reason, not hidden
            counts = None
            manifest.setdefault("banner", []).append(f"claims could not be evaluated: {exc}")
        verdicts = verdicts_cell(counts)
    systems = ", ".join(f"{label} ({info.get('status')})" for label, info in manifest.get("systems", {}).items())
    report = shown / "report.html"
    report_link = _link(report, "report", out_dir) if report.exists() else "no report rendered"
    return (f"<tr><td class='text'><b>{html.escape(exp)}</b></td>"
            f"<td class='text'>{html.escape(complete.name) if complete else 'none complete'}</td>"
            f"<td class='text'>{html.escape(str(manifest.get('started_at', ''))[:19])}</td>"
            f"<td class='text'>{html.escape(manifest.get('host', {}).get('hostname', ''))}</td>"
            f"<td class='text'>{html.escape(scale)}</td>"
            f"<td class='text'>{html.escape(systems)}</td>"
            f"<td class='text'>{html.escape(manifest.get('status', ''))}</td>"
            f"<td class='text'>{verdicts}</td><td class='text'>{report_link}</td>"
            f"<td class='text'>{_others(complete, scale_runs, out_dir)}</td></tr>")


def write_index(out: Path | None = None) -> Path:
    out_dir = reports_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out or out_dir / "index.html"
    rows = []
    settle_all("make reports")  # a `running` run whose driver is gone is shown as died, not as going on
    for exp, runs in runs_by_experiment(results_dir()).items():
        for scale, complete, scale_runs in rows_by_scale(runs):
            rows.append(_row(exp, scale, complete, scale_runs, out_dir))
    head = "".join(f"<th class='text'>{h}</th>" for h in ("experiment", "latest complete run", "started (UTC)", "host",
                                                         "scale", "systems", "status", "claims", "report",
                                                         "other runs at this scale"))
    body = "".join(rows) or "<tr><td class='text' colspan='10'>No runs yet: make experiment EXP=...</td></tr>"
    from .collection import collection_section
    claims = collection_section(out_dir)
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>enginebench: results</title>{STYLE}</head>"
            "<body style='font-family: system-ui, sans-serif; margin: 24px'>"
            "<h1>enginebench: the collection</h1><p>Every claim of the five posts with the verdict of the newest "
            "complete run of its experiment on each target (<code>make all</code> runs them all), then every "
            f"run.</p>{claims}<h2 id='runs'>Every run</h2><p>The latest complete run of every experiment at each "
            "scale, with its claim verdicts; every other run is kept and linked with its status.</p>"
            f"<table class='eb-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></body></html>")
    out.write_text(page)
    return out
