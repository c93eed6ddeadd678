"""The paragraph a run ends with on the terminal: what ran, how it ended, what its claims came to
and how far those verdicts can be trusted, and where the report is."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

# How far one run's verdicts go, by scale (README "Reading results").
SCALE_TRUST = {
    "smoke": "a smoke run checks that everything runs, so its verdicts say nothing about the claims",
    "default": "the default scale is a scaled-down setting sized for this machine, so the verdicts are indicative",
    "paper": "the paper scale is the post's own setting",
}


def trust(manifest: dict) -> str:
    """What limits the verdicts of this run: its scale, its target, and how many runs they rest on."""
    parts = [SCALE_TRUST.get(manifest.get("scale"), f"scale {manifest.get('scale')}")]
    if (manifest.get("target") or {}).get("kind") == "embedded":
        parts.append("the engines ran embedded, not in mongod, so the comparison is between engines, "
                     "not the posts' servers")
    repeat = manifest.get("repeat") or {}
    parts.append(f"they rest on {repeat['of']} runs" if repeat.get("of", 1) > 1 else "they rest on one run")
    return "; ".join(parts)


def verdicts(counts: dict | None, why_not: str = "") -> str:
    from .report.claims import counts_summary
    if counts is None:
        return f"Claims: not evaluated ({why_not or 'no claims for this family'})"
    return f"Claims: {counts_summary(counts)}"


def _took(manifest: dict) -> str:
    try:
        seconds = (datetime.fromisoformat(manifest["finished_at"])
                   - datetime.fromisoformat(manifest["started_at"])).total_seconds()
    except (KeyError, TypeError, ValueError):
        return ""
    return f" after {seconds / 60:.1f} min" if seconds >= 120 else f" after {seconds:.0f} s"


def run_summary(run_dir: Path, report: Path | None) -> str:
    """One paragraph: experiment, scale and target, status, each system's status, the verdict
    counts and their trust, and the report's path (or how to render one)."""
    from .report.runs import manifest_of
    manifest = manifest_of(run_dir)
    counts, why_not = claim_counts(run_dir)
    systems = ", ".join(f"{label} {info.get('status')}" for label, info in (manifest.get("systems") or {}).items())
    target = (manifest.get("target") or {}).get("kind", "?")
    where = (f"Report: {report}." if report is not None else
             f"No report was rendered; make experiment EXP={manifest['experiment']} RUN={run_dir} renders one.")
    return (f"{manifest['experiment']} at {manifest['scale']} scale on the {target} target ended "
            f"{manifest['status']}{_took(manifest)} ({run_dir}). Systems: {systems or 'none ran'}. "
            f"{verdicts(counts, why_not)} ({trust(manifest)}). {where}")


def claim_counts(run_dir: Path) -> tuple[dict | None, str]:
    """The run's verdict counts, or None and why they could not be had."""
    from .report.index import claims_for
    from .report.rundata import load_run
    try:
        return claims_for(load_run(run_dir)), ""
    except Exception as exc:  # a run too broken to evaluate still gets its summary, saying so
        return None, f"{type(exc).__name__}: {exc}"
